/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "http/confab-http-approvals.h"
#include "http/confab-http-chat.h"
#include "http/confab-http-conversations.h"
#include "http/confab-http-elicitations.h"
#include "http/confab-http-health.h"
#include "http/confab-http-lists.h"
#include "http/confab-http-metrics.h"
#include "http/confab-http-models.h"
#include "http/confab-http-oauth.h"
#include "http/confab-http-response.h"
#include "http/confab-http-responses.h"
#include "http/confab-http-router.h"
#include "http/server/confab-http-server.h"
#include "util/confab-error.h"
#include "util/confab-source.h"

/*
 * The HTTP front door: one table of routes, and what can be decided from a
 * request head alone — unknown route, wrong method, no or bad token, wrong
 * content type — before a byte of body is read (the server then refuses a
 * body over the size cap). Everything else goes to the route's handler with
 * an authenticated principal. Adding an endpoint is adding a row.
 */

typedef enum {
	ROUTE_API_TOKEN = 1 << 0,     /* a bearer token with a v1 API scope */
	ROUTE_JSON_BODY = 1 << 1,     /* the body must be application/json */
	ROUTE_METRICS_TOKEN = 1 << 2, /* metrics.read, or the loopback rule */
} RouteFlags;

/**
 * ConfabHttpRouteFunc:
 * @engine: the engine
 * @exchange: the request, whole
 * @principal: (transfer full) (nullable): who asks; %NULL only where the
 *   route lets in requests without a token
 * @param: (nullable): the `{}` segment of the route's path, decoded
 */
typedef void (*ConfabHttpRouteFunc)(ConfabEngine *engine,
				    ConfabHttpExchange *exchange,
				    ConfabPrincipal *principal,
				    const gchar *param);

typedef struct {
	const gchar *method;
	const gchar *path; /* "{}" stands for one segment */
	RouteFlags flags;
	ConfabHttpRouteFunc handle;
	const gchar *label; /* the route in metrics */
} Route;

static const Route routes[] = {
    {"POST",
     "/api/v1/chat/completions",
     ROUTE_API_TOKEN | ROUTE_JSON_BODY,
     confab_http_chat_handle,
     "/api/v1/chat/completions"},
    {"POST",
     "/api/v1/responses",
     ROUTE_API_TOKEN | ROUTE_JSON_BODY,
     confab_http_responses_create,
     "/api/v1/responses"},
    {"GET",
     "/api/v1/responses/{}",
     ROUTE_API_TOKEN,
     confab_http_responses_get,
     "/api/v1/responses/{id}"},
    {"DELETE",
     "/api/v1/responses/{}",
     ROUTE_API_TOKEN,
     confab_http_responses_delete,
     "/api/v1/responses/{id}"},
    {"POST",
     "/api/v1/responses/{}/cancel",
     ROUTE_API_TOKEN,
     confab_http_responses_cancel,
     "/api/v1/responses/{id}/cancel"},
    {"GET",
     "/api/v1/responses/{}/input_items",
     ROUTE_API_TOKEN,
     confab_http_responses_input_items,
     "/api/v1/responses/{id}/input_items"},
    {"GET",
     "/api/v1/conversations",
     ROUTE_API_TOKEN,
     confab_http_lists_conversations,
     "/api/v1/conversations"},
    {"POST",
     "/api/v1/conversations",
     ROUTE_API_TOKEN | ROUTE_JSON_BODY,
     confab_http_conversations_create,
     "/api/v1/conversations"},
    {"GET",
     "/api/v1/conversations/{}",
     ROUTE_API_TOKEN,
     confab_http_conversations_get,
     "/api/v1/conversations/{id}"},
    {"POST",
     "/api/v1/conversations/{}",
     ROUTE_API_TOKEN | ROUTE_JSON_BODY,
     confab_http_conversations_update,
     "/api/v1/conversations/{id}"},
    {"DELETE",
     "/api/v1/conversations/{}",
     ROUTE_API_TOKEN,
     confab_http_conversations_delete,
     "/api/v1/conversations/{id}"},
    {"GET",
     "/api/v1/conversations/{}/items",
     ROUTE_API_TOKEN,
     confab_http_conversations_list_items,
     "/api/v1/conversations/{id}/items"},
    {"POST",
     "/api/v1/conversations/{}/items",
     ROUTE_API_TOKEN | ROUTE_JSON_BODY,
     confab_http_conversations_add_items,
     "/api/v1/conversations/{id}/items"},
    {"GET",
     "/api/v1/conversations/{}/items/{}",
     ROUTE_API_TOKEN,
     confab_http_conversations_get_item,
     "/api/v1/conversations/{id}/items/{item_id}"},
    {"DELETE",
     "/api/v1/conversations/{}/items/{}",
     ROUTE_API_TOKEN,
     confab_http_conversations_delete_item,
     "/api/v1/conversations/{id}/items/{item_id}"},
    {"GET",
     "/api/v1/conversations/{}/messages",
     ROUTE_API_TOKEN,
     confab_http_lists_messages,
     "/api/v1/conversations/{id}/messages"},
    {"GET", "/api/v1/models", ROUTE_API_TOKEN, confab_http_models_list, "/api/v1/models"},
    {"GET", "/api/v1/models/{}", ROUTE_API_TOKEN, confab_http_models_get, "/api/v1/models/{id}"},
    {"GET", "/metrics", ROUTE_METRICS_TOKEN, confab_http_metrics_handle, "/metrics"},
    {"GET", "/healthz", 0, confab_http_health_alive, "/healthz"},
    {"GET", "/readyz", 0, confab_http_health_ready, "/readyz"},
    /* the state authenticates it: no token */
    {"GET", "/api/v1/oauth/callback", 0, confab_http_oauth_callback, "/api/v1/oauth/callback"},
    {"GET",
     "/api/v1/oauth/client-metadata.json",
     0,
     confab_http_oauth_client_metadata,
     "/api/v1/oauth/client-metadata.json"},
    {"GET", "/api/v1/approvals", ROUTE_API_TOKEN, confab_http_approvals_list, "/api/v1/approvals"},
    {"POST",
     "/api/v1/approvals/{}",
     ROUTE_API_TOKEN | ROUTE_JSON_BODY,
     confab_http_approvals_decide,
     "/api/v1/approvals/{id}"},
    {"GET",
     "/api/v1/elicitations",
     ROUTE_API_TOKEN,
     confab_http_elicitations_list,
     "/api/v1/elicitations"},
    {"POST",
     "/api/v1/elicitations/{}",
     ROUTE_API_TOKEN | ROUTE_JSON_BODY,
     confab_http_elicitations_answer,
     "/api/v1/elicitations/{id}"},
};

/* the route label of requests that matched none: no path from a client
 * ever becomes a label */
#define UNMATCHED_LABEL "unmatched"

/* What the head check leaves for the handler. */
typedef struct {
	const Route *route;
	ConfabPrincipal *principal; /* owned */
	gchar *param;		    /* owned */
	gsize body_size;
} Match;

/* A request body this large leaves the heap large: glibc keeps what a big
 * turn freed unless asked to give it back. */
#define TRIM_AFTER_BODY_BYTES (1024 * 1024)
#define TRIM_DELAY_MS	      200

static void
match_free(Match *match)
{
	g_clear_pointer(&match->principal, confab_principal_free);
	g_free(match->param);
	g_free(match);
}

struct _ConfabHttpRouter {
	GObject parent_instance;
	ConfabEngine *engine;	  /* owned */
	ConfabHttpServer *server; /* owned */
	GSource *trim;		  /* owned */
	GHashTable *series;	  /* owned: route and status -> ConfabMetricsSeries */
};

G_DEFINE_FINAL_TYPE(ConfabHttpRouter, confab_http_router, G_TYPE_OBJECT)

/* ---------- matching ---------- */

static gint
hex_value(gchar c)
{
	return g_ascii_isxdigit(c) ? g_ascii_xdigit_value(c) : -1;
}

/* %-decodes one path segment; NULL unless it decodes to UTF-8 without NUL */
static gchar *
decode_segment(const gchar *segment, gsize len)
{
	g_autoptr(GString) out = g_string_sized_new(len);

	for (gsize i = 0; i < len; i++) {
		if (segment[i] != '%') {
			g_string_append_c(out, segment[i]);
			continue;
		}
		if (i + 2 >= len)
			return NULL;
		if (hex_value(segment[i + 1]) < 0 || hex_value(segment[i + 2]) < 0)
			return NULL;
		g_string_append_c(
		    out,
		    (gchar)(hex_value(segment[i + 1]) << 4 | hex_value(segment[i + 2])));
		i += 2;
	}
	if (memchr(out->str, '\0', out->len) != NULL || !g_utf8_validate(out->str, out->len, NULL))
		return NULL;
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* Whether @path fits @pattern; each "{}" stands for one segment, not
 * empty, and goes to @param decoded (with a second one: "first/second",
 * and the first has no '/', or it is no id). */
static gboolean
path_matches(const gchar *pattern, const gchar *path, gchar **param)
{
	g_autoptr(GString) holes = NULL;
	const gchar *p = pattern;
	const gchar *q = path;
	guint n_holes = 0;

	if (strstr(pattern, "{}") == NULL)
		return g_str_equal(pattern, path);
	if (param != NULL)
		holes = g_string_new(NULL);
	while (*p != '\0') {
		const gchar *end;
		g_autofree gchar *decoded = NULL;

		if (!g_str_has_prefix(p, "{}")) {
			if (*p != *q)
				return FALSE;
			p++;
			q++;
			continue;
		}
		end = strchrnul(q, '/');
		if (end == q)
			return FALSE;
		if (holes != NULL) {
			decoded = decode_segment(q, end - q);
			if (n_holes++ > 0)
				g_string_append_c(holes, '/');
			g_string_append(holes, decoded != NULL ? decoded : "");
		}
		p += 2;
		q = end;
	}
	if (*q != '\0')
		return FALSE;
	if (param != NULL)
		*param = g_string_free(g_steal_pointer(&holes), FALSE);
	return TRUE;
}

/* The route for @method and @path; or NULL, with the methods the path
 * allows in @allowed (empty when no route has the path). */
static const Route *
find_route(const gchar *method, const gchar *path, GString *allowed, gchar **param)
{
	for (guint i = 0; i < G_N_ELEMENTS(routes); i++) {
		if (!path_matches(routes[i].path, path, NULL))
			continue;
		if (g_str_equal(routes[i].method, method)) {
			path_matches(routes[i].path, path, param);
			return &routes[i];
		}
		g_string_append_printf(allowed,
				       "%s%s",
				       allowed->len > 0 ? ", " : "",
				       routes[i].method);
	}
	return NULL;
}

static gboolean
is_json(const gchar *content_type)
{
	const gchar *end;
	if (content_type == NULL)
		return FALSE;
	end = strchr(content_type, ';');
	if (end == NULL)
		end = content_type + strlen(content_type);
	while (end > content_type && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	return end - content_type == 16 &&
	       g_ascii_strncasecmp(content_type, "application/json", 16) == 0;
}

/* ---------- the server's callbacks ---------- */

/* [metrics] local_unauthenticated: a loopback peer that sends no token */
static gboolean
metrics_without_token(ConfabHttpRouter *self, ConfabHttpExchange *exchange, const Route *route)
{
	const ConfabConfig *config = confab_engine_get_config(self->engine);

	return (route->flags & ROUTE_METRICS_TOKEN) && config->metrics_local_unauthenticated &&
	       confab_http_exchange_get_header(exchange, "Authorization") == NULL &&
	       confab_http_exchange_is_loopback(exchange);
}

static gboolean
check_head(ConfabHttpRouter *self, ConfabHttpExchange *exchange, Match *match, GError **error)
{
	const gchar *method = confab_http_exchange_get_method(exchange);
	const gchar *path = confab_http_exchange_get_path(exchange);
	g_autoptr(GString) allowed = g_string_new(NULL);

	match->route = find_route(method, path, allowed, &match->param);
	if (match->route == NULL && allowed->len == 0) {
		/* the path is still percent-encoded ASCII: safe to quote */
		confab_error_set_printf(error,
					CONFAB_ERROR_NOT_FOUND,
					NULL,
					"No route %s %s",
					method,
					path);
		return FALSE;
	}
	if (match->route == NULL) {
		confab_http_exchange_add_header(exchange, "Allow", allowed->str);
		confab_error_set_printf(error,
					CONFAB_ERROR_METHOD_NOT_ALLOWED,
					NULL,
					"%s is not allowed on %s; use %s",
					method,
					path,
					allowed->str);
		return FALSE;
	}
	if (match->route->flags & (ROUTE_API_TOKEN | ROUTE_METRICS_TOKEN) &&
	    !metrics_without_token(self, exchange, match->route)) {
		ConfabEngineAuthCache *cache = confab_http_exchange_get_connection_data(exchange);
		g_autoptr(ConfabEngineAuthCache) fresh = NULL;

		if (cache == NULL)
			cache = fresh = confab_engine_auth_cache_new();
		/* the connection's last token, while nothing changed in the
		 * token cache: no SHA-256 or lookup for each request */
		match->principal = confab_engine_authenticate_cached(
		    self->engine,
		    cache,
		    confab_http_exchange_get_header(exchange, "Authorization"),
		    (match->route->flags & ROUTE_METRICS_TOKEN) ? CONFAB_SCOPES_METRICS
								: CONFAB_SCOPES_API,
		    error);
		if (fresh != NULL)
			confab_http_exchange_set_connection_data(
			    exchange,
			    g_steal_pointer(&fresh),
			    (GDestroyNotify)confab_engine_auth_cache_free);
		if (match->principal == NULL)
			return FALSE;
	}
	if ((match->route->flags & ROUTE_JSON_BODY) &&
	    !is_json(confab_http_exchange_get_header(exchange, "Content-Type"))) {
		confab_error_set(error,
				 CONFAB_ERROR_UNSUPPORTED_MEDIA_TYPE,
				 NULL,
				 "The request body must be JSON, sent with "
				 "'Content-Type: application/json'");
		return FALSE;
	}
	return TRUE;
}

static void
on_head(ConfabHttpExchange *exchange, gpointer user_data)
{
	ConfabHttpRouter *self = user_data;
	Match *match = g_new0(Match, 1);
	g_autoptr(GError) error = NULL;

	confab_http_exchange_set_data(exchange, match, (GDestroyNotify)match_free);
	if (!check_head(self, exchange, match, &error)) {
		confab_http_response_error(exchange, error);
		return;
	}
	if (match->principal != NULL)
		confab_http_response_log_set(exchange,
					     match->principal->owner,
					     match->principal->agent_id,
					     NULL);
}

static void
on_request(ConfabHttpExchange *exchange, gpointer user_data)
{
	ConfabHttpRouter *self = user_data;
	Match *match = confab_http_exchange_get_data(exchange);

	match->body_size = confab_http_exchange_get_body_size(exchange);
	match->route->handle(self->engine,
			     exchange,
			     g_steal_pointer(&match->principal),
			     match->param);
}

static gboolean
trim_memory(gpointer user_data)
{
	ConfabHttpRouter *self = user_data;

	g_clear_pointer(&self->trim, g_source_unref);
#ifdef __GLIBC__
	malloc_trim(0);
#endif
	return G_SOURCE_REMOVE;
}

/* The series of a route and status, found once per router (that is, per
 * serving thread): counting a request takes no lock. */
static ConfabMetricsSeries *
request_series(ConfabHttpRouter *self, const Route *route, guint status)
{
	guint key = (route != NULL ? (guint)(route - routes) + 1 : 0) * 1000 + MIN(status, 999);
	ConfabMetricsSeries *series = g_hash_table_lookup(self->series, GUINT_TO_POINTER(key));
	gchar code[16];

	if (series != NULL)
		return series;
	g_snprintf(code, sizeof(code), "%u", status);
	series = confab_metrics_series(confab_engine_get_metrics(self->engine),
				       CONFAB_METRIC_HTTP_REQUESTS,
				       route != NULL ? route->label : UNMATCHED_LABEL,
				       code);
	g_hash_table_insert(self->series, GUINT_TO_POINTER(key), series);
	return series;
}

static void
on_finished(ConfabHttpExchange *exchange, gboolean completed, gpointer user_data)
{
	ConfabHttpRouter *self = user_data;
	Match *match = confab_http_exchange_get_data(exchange);

	confab_metrics_series_add(request_series(self,
						 match != NULL ? match->route : NULL,
						 confab_http_exchange_get_status(exchange)),
				  1);
	confab_http_response_log_request(exchange, completed);
	if (match != NULL && match->body_size >= TRIM_AFTER_BODY_BYTES && self->trim == NULL)
		self->trim = confab_source_add_timeout(TRIM_DELAY_MS, trim_memory, self);
}

static gdouble
open_connections_gauge(gpointer user_data)
{
	ConfabHttpRouter *self = user_data;
	return self->server != NULL ? confab_http_server_get_connections(self->server) : 0;
}

static const ConfabHttpServerHandler handler = {
    .head = on_head,
    .request = on_request,
    .finished = on_finished,
};

/* ---------- GObject ---------- */

static void
confab_http_router_dispose(GObject *object)
{
	ConfabHttpRouter *self = CONFAB_HTTP_ROUTER(object);
	confab_source_clear(&self->trim);
	if (self->engine != NULL)
		confab_metrics_remove_gauges(confab_engine_get_metrics(self->engine), self);
	if (self->server != NULL)
		confab_http_server_disconnect(self->server);
	g_clear_object(&self->server);
	G_OBJECT_CLASS(confab_http_router_parent_class)->dispose(object);
}

static void
confab_http_router_finalize(GObject *object)
{
	ConfabHttpRouter *self = CONFAB_HTTP_ROUTER(object);
	g_clear_pointer(&self->series, g_hash_table_unref);
	g_clear_object(&self->engine);
	G_OBJECT_CLASS(confab_http_router_parent_class)->finalize(object);
}

static void
confab_http_router_class_init(ConfabHttpRouterClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->dispose = confab_http_router_dispose;
	object_class->finalize = confab_http_router_finalize;
}

static void
confab_http_router_init(ConfabHttpRouter *self)
{
	self->series = g_hash_table_new(g_direct_hash, g_direct_equal);
}

/**
 * confab_http_router_new:
 * @engine: the engine
 *
 * Returns: (transfer full): the front door, not listening yet
 */
ConfabHttpRouter *
confab_http_router_new(ConfabEngine *engine)
{
	ConfabHttpRouter *self = g_object_new(CONFAB_TYPE_HTTP_ROUTER, NULL);
	const ConfabConfig *config = confab_engine_get_config(engine);
	ConfabHttpServerLimits limits = {
	    .max_connections = config->max_connections,
	    .max_connections_per_peer = config->max_connections_per_peer,
	    .idle_timeout = config->idle_timeout,
	    .body_timeout = config->body_timeout,
	    .max_header_bytes = config->max_header_bytes,
	    .max_body_bytes = config->max_body_bytes,
	    .max_inflight_body_bytes = config->max_inflight_body_bytes,
	    .max_stream_buffer = config->max_stream_buffer,
	};

	self->engine = g_object_ref(engine);
	self->server = confab_http_server_new(&limits, &handler, self);
	confab_metrics_add_gauge(confab_engine_get_metrics(engine),
				 "confab_open_connections",
				 "HTTP connections open now",
				 open_connections_gauge,
				 self);
	return self;
}

/**
 * confab_http_router_share:
 * @self: a #ConfabHttpRouter, not listening yet
 * @group: the connection and body counts shared with other threads' routers
 * @reuse_port: listen with `SO_REUSEPORT` beside them
 */
void
confab_http_router_share(ConfabHttpRouter *self, ConfabHttpServerGroup *group, gboolean reuse_port)
{
	confab_http_server_share(self->server, group, reuse_port);
}

/**
 * confab_http_router_listen:
 * @self: a #ConfabHttpRouter
 * @address: `HOST:PORT`; port 0 picks a free one
 * @error: return location for a #GError
 */
gboolean
confab_http_router_listen(ConfabHttpRouter *self, const gchar *address, GError **error)
{
	g_autofree gchar *host = NULL;
	g_autoptr(GInetAddress) inet = NULL;
	g_autoptr(GSocketAddress) sockaddr = NULL;
	guint16 port = 0;

	if (!confab_config_parse_listen(address, &host, &port, error))
		return FALSE;
	inet = g_inet_address_new_from_string(g_str_equal(host, "localhost") ? "127.0.0.1" : host);
	if (inet == NULL) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_INVALID_VALUE,
			    "'%s' is not an IP address",
			    host);
		return FALSE;
	}
	sockaddr = g_inet_socket_address_new(inet, port);
	if (!confab_http_server_listen(self->server, sockaddr, error)) {
		g_prefix_error(error, "listening on %s: ", address);
		return FALSE;
	}
	return TRUE;
}

/**
 * confab_http_router_listen_fd:
 * @self: a #ConfabHttpRouter
 * @fd: a listening TCP socket, which the router owns from now on
 * @error: return location for a #GError
 */
gboolean
confab_http_router_listen_fd(ConfabHttpRouter *self, gint fd, GError **error)
{
	if (!confab_http_server_listen_fd(self->server, fd, error)) {
		g_prefix_error_literal(error, "listening on an inherited socket: ");
		return FALSE;
	}
	return TRUE;
}

/**
 * confab_http_router_get_url:
 *
 * Returns: (transfer full) (nullable): `http://HOST:PORT`, once listening
 */
gchar *
confab_http_router_get_url(ConfabHttpRouter *self)
{
	return confab_http_server_get_url(self->server);
}

/**
 * confab_http_router_get_active_requests:
 *
 * Returns: the requests whose head is in and whose response is not over
 */
guint
confab_http_router_get_active_requests(ConfabHttpRouter *self)
{
	return confab_http_server_get_active_requests(self->server);
}

/**
 * confab_http_router_get_connections:
 *
 * Returns: the client connections open now
 */
guint
confab_http_router_get_connections(ConfabHttpRouter *self)
{
	return confab_http_server_get_connections(self->server);
}

/**
 * confab_http_router_disconnect:
 *
 * Stops listening and closes every connection.
 */
void
confab_http_router_disconnect(ConfabHttpRouter *self)
{
	confab_http_server_disconnect(self->server);
}
