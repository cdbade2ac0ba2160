/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <string.h>

#include "confab-error.h"
#include "confab-http-error.h"
#include "confab-http-private.h"
#include "confab-id-generator.h"

/*
 * The HTTP front door: a SoupServer on the main loop. It routes, and
 * refuses what it can from the request head alone — unknown route, wrong
 * method, no or bad token, wrong content type, a Content-Length over the
 * cap — before a single byte of body is read. Everything else is handed to
 * the chat or list handlers with an authenticated principal.
 */

#define PRINCIPAL_KEY "confab-principal"

typedef enum {
	ROUTE_NONE,
	ROUTE_CHAT,
	ROUTE_CONVERSATIONS,
	ROUTE_MESSAGES,
} Route;

struct _ConfabHttpServer {
	GObject parent_instance;
	ConfabEngine *engine; /* owned */
	SoupServer *soup;     /* owned */
	gchar *url;	      /* owned */
	guint active;	      /* requests between started and finished */
};

G_DEFINE_FINAL_TYPE(ConfabHttpServer, confab_http_server, G_TYPE_OBJECT)

#define API_PREFIX "/api/v1/"

static Route
route_match(const gchar *path, gchar **session_id)
{
	const gchar *rest;
	const gchar *slash;

	if (!g_str_has_prefix(path, API_PREFIX))
		return ROUTE_NONE;
	rest = path + strlen(API_PREFIX);
	if (g_str_equal(rest, "chat/completions"))
		return ROUTE_CHAT;
	if (g_str_equal(rest, "conversations"))
		return ROUTE_CONVERSATIONS;
	if (!g_str_has_prefix(rest, "conversations/"))
		return ROUTE_NONE;
	rest += strlen("conversations/");
	slash = strchr(rest, '/');
	if (slash == NULL || slash == rest || !g_str_equal(slash, "/messages"))
		return ROUTE_NONE;
	if (session_id != NULL)
		*session_id = g_strndup(rest, slash - rest);
	return ROUTE_MESSAGES;
}

static const gchar *
route_method(Route route)
{
	return route == ROUTE_CHAT ? "POST" : "GET";
}

/* ---------- responses ---------- */

/**
 * confab_http_respond_json:
 * @msg: the message
 * @status: the HTTP status
 * @body: (transfer full): the JSON body
 */
void
confab_http_respond_json(SoupServerMessage *msg, guint status, gchar *body)
{
	soup_server_message_set_status(msg, status, NULL);
	soup_server_message_set_response(msg,
					 "application/json",
					 SOUP_MEMORY_TAKE,
					 body,
					 strlen(body));
}

/**
 * confab_http_respond_error:
 * @msg: the message
 * @error: what went wrong
 *
 * Sends the OpenAI error shape with the status, type and code the contract
 * gives @error, and the headers that go with them.
 */
void
confab_http_respond_error(SoupServerMessage *msg, const GError *error)
{
	const ConfabHttpErrorInfo *info = confab_http_error_info(error);
	SoupMessageHeaders *headers = soup_server_message_get_response_headers(msg);

	if (info->status >= 500 && info->status != 502 && info->status != 504 &&
	    info->status != 503)
		g_warning("internal error answered 500: %s", error != NULL ? error->message : "?");
	switch (info->status) {
	case 401:
		soup_message_headers_replace(headers, "WWW-Authenticate", "Bearer");
		break;
	case 405:
		break;
	case 429:
		/* the OpenAI SDKs retry every 429 unless told not to */
		soup_message_headers_replace(headers, "x-should-retry", "false");
		break;
	case 503:
		soup_message_headers_replace(headers, "Retry-After", "1");
		break;
	default:
		break;
	}
	confab_http_respond_json(msg, info->status, confab_http_error_body(error));
}

/**
 * confab_http_add_quota_headers:
 * @msg: the message
 * @info: the owner's quota after this request
 *
 * Adds the x-ratelimit-*-requests headers, when a quota applies.
 */
void
confab_http_add_quota_headers(SoupServerMessage *msg, const ConfabQuotaInfo *info)
{
	SoupMessageHeaders *headers = soup_server_message_get_response_headers(msg);
	gchar buf[32];

	if (info->limit == 0)
		return;
	g_snprintf(buf, sizeof(buf), "%" G_GUINT64_FORMAT, info->limit);
	soup_message_headers_replace(headers, "x-ratelimit-limit-requests", buf);
	g_snprintf(buf, sizeof(buf), "%" G_GUINT64_FORMAT, info->remaining);
	soup_message_headers_replace(headers, "x-ratelimit-remaining-requests", buf);
	g_snprintf(buf, sizeof(buf), "%" G_GINT64_FORMAT "s", info->reset_seconds);
	soup_message_headers_replace(headers, "x-ratelimit-reset-requests", buf);
}

/* ---------- the request head ---------- */

static gboolean
check_content_type(SoupServerMessage *msg, GError **error)
{
	SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
	g_autoptr(GHashTable) params = NULL;
	const gchar *type = soup_message_headers_get_content_type(headers, &params);

	if (type != NULL && g_ascii_strcasecmp(type, "application/json") == 0)
		return TRUE;
	confab_set_error_param(error,
			       CONFAB_ERROR_UNSUPPORTED_MEDIA_TYPE,
			       NULL,
			       "The request body must be JSON, sent with "
			       "'Content-Type: application/json'");
	return FALSE;
}

static gboolean
check_content_length(ConfabHttpServer *self, SoupServerMessage *msg, GError **error)
{
	SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
	const ConfabConfig *config = confab_engine_get_config(self->engine);

	if (soup_message_headers_get_encoding(headers) == SOUP_ENCODING_CONTENT_LENGTH &&
	    (gsize)soup_message_headers_get_content_length(headers) > config->max_body_bytes) {
		confab_set_error_param_printf(error,
					      CONFAB_ERROR_REQUEST_TOO_LARGE,
					      NULL,
					      "The request body is larger than %" G_GSIZE_FORMAT
					      " bytes",
					      config->max_body_bytes);
		return FALSE;
	}
	return TRUE;
}

/* Everything that can be decided before reading the body. On success the
 * principal rides on the message until the handler takes it. */
static gboolean
check_request_head(ConfabHttpServer *self, SoupServerMessage *msg, GError **error)
{
	const gchar *path = g_uri_get_path(soup_server_message_get_uri(msg));
	const gchar *method = soup_server_message_get_method(msg);
	SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
	ConfabPrincipal *principal;
	Route route = route_match(path, NULL);

	if (route == ROUTE_NONE) {
		confab_set_error_param_printf(error,
					      CONFAB_ERROR_NOT_FOUND,
					      NULL,
					      "No route %s %s",
					      method,
					      path);
		return FALSE;
	}
	if (g_strcmp0(method, route_method(route)) != 0) {
		soup_message_headers_replace(soup_server_message_get_response_headers(msg),
					     "Allow",
					     route_method(route));
		confab_set_error_param_printf(error,
					      CONFAB_ERROR_METHOD_NOT_ALLOWED,
					      NULL,
					      "%s is not allowed on %s; use %s",
					      method,
					      path,
					      route_method(route));
		return FALSE;
	}
	principal =
	    confab_engine_authenticate(self->engine,
				       soup_message_headers_get_one(headers, "Authorization"),
				       error);
	if (principal == NULL)
		return FALSE;
	g_object_set_data_full(G_OBJECT(msg),
			       PRINCIPAL_KEY,
			       principal,
			       (GDestroyNotify)confab_principal_free);
	if (route == ROUTE_CHAT) {
		if (!check_content_length(self, msg, error))
			return FALSE;
		if (!check_content_type(msg, error))
			return FALSE;
	}
	return TRUE;
}

static void
on_got_headers(SoupServerMessage *msg, gpointer user_data)
{
	ConfabHttpServer *self = user_data;
	g_autoptr(GError) error = NULL;

	if (!check_request_head(self, msg, &error))
		confab_http_respond_error(msg, error);
}

static void
on_request_started(SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
	ConfabHttpServer *self = user_data;
	self->active++;
	g_signal_connect_object(msg, "got-headers", G_CALLBACK(on_got_headers), user_data, 0);
}

static void
on_request_done(SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
	ConfabHttpServer *self = user_data;
	if (self->active > 0)
		self->active--;
}

/* ---------- dispatch ---------- */

static void
handle_request(SoupServer *server,
	       SoupServerMessage *msg,
	       const gchar *path,
	       GHashTable *query,
	       gpointer user_data)
{
	ConfabHttpServer *self = user_data;
	g_autoptr(ConfabPrincipal) principal = NULL;
	g_autofree gchar *session_id = NULL;
	g_autoptr(GError) error = NULL;
	Route route;

	/* refused from its head already */
	if (soup_server_message_get_status(msg) != 0)
		return;
	principal = g_object_steal_data(G_OBJECT(msg), PRINCIPAL_KEY);
	if (principal == NULL) {
		/* the head was not checked (it always is): check it now */
		if (!check_request_head(self, msg, &error)) {
			confab_http_respond_error(msg, error);
			return;
		}
		principal = g_object_steal_data(G_OBJECT(msg), PRINCIPAL_KEY);
	}

	route = route_match(path, &session_id);
	switch (route) {
	case ROUTE_CHAT:
		confab_http_chat_handle(self, msg, g_steal_pointer(&principal));
		break;
	case ROUTE_CONVERSATIONS:
		confab_http_list_conversations(self, msg, g_steal_pointer(&principal));
		break;
	case ROUTE_MESSAGES:
		confab_http_list_messages(self, msg, g_steal_pointer(&principal), session_id);
		break;
	case ROUTE_NONE:
	default:
		g_assert_not_reached();
	}
}

/* ---------- GObject ---------- */

static void
confab_http_server_dispose(GObject *object)
{
	ConfabHttpServer *self = CONFAB_HTTP_SERVER(object);
	if (self->soup != NULL)
		soup_server_disconnect(self->soup);
	g_clear_object(&self->soup);
	G_OBJECT_CLASS(confab_http_server_parent_class)->dispose(object);
}

static void
confab_http_server_finalize(GObject *object)
{
	ConfabHttpServer *self = CONFAB_HTTP_SERVER(object);
	g_clear_object(&self->engine);
	g_free(self->url);
	G_OBJECT_CLASS(confab_http_server_parent_class)->finalize(object);
}

static void
confab_http_server_class_init(ConfabHttpServerClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->dispose = confab_http_server_dispose;
	object_class->finalize = confab_http_server_finalize;
}

static void
confab_http_server_init(ConfabHttpServer *self)
{
}

/**
 * confab_http_server_new:
 * @engine: the engine
 *
 * Returns: (transfer full): a server, not listening yet
 */
ConfabHttpServer *
confab_http_server_new(ConfabEngine *engine)
{
	ConfabHttpServer *self = g_object_new(CONFAB_TYPE_HTTP_SERVER, NULL);
	self->engine = g_object_ref(engine);
	self->soup = soup_server_new("server-header", "confab/" PACKAGE_VERSION " ", NULL);
	soup_server_add_handler(self->soup, NULL, handle_request, self, NULL);
	g_signal_connect_object(self->soup,
				"request-started",
				G_CALLBACK(on_request_started),
				self,
				0);
	g_signal_connect_object(self->soup,
				"request-finished",
				G_CALLBACK(on_request_done),
				self,
				0);
	g_signal_connect_object(self->soup,
				"request-aborted",
				G_CALLBACK(on_request_done),
				self,
				0);
	return self;
}

ConfabEngine *
confab_http_server_get_engine(ConfabHttpServer *self)
{
	return self->engine;
}

static void
update_url(ConfabHttpServer *self)
{
	GSList *uris = soup_server_get_uris(self->soup);
	g_free(self->url);
	self->url = NULL;
	if (uris != NULL) {
		GUri *uri = uris->data;
		const gchar *host = g_uri_get_host(uri);
		gboolean v6 = strchr(host, ':') != NULL;
		self->url = g_strdup_printf("http://%s%s%s:%d",
					    v6 ? "[" : "",
					    host,
					    v6 ? "]" : "",
					    g_uri_get_port(uri));
	}
	g_slist_free_full(uris, (GDestroyNotify)g_uri_unref);
}

/**
 * confab_http_server_listen_socket:
 * @self: a #ConfabHttpServer
 * @socket: a bound, listening socket
 * @error: return location for a #GError
 *
 * Serves on @socket (a systemd-activated socket, or one shared by several
 * serving threads).
 */
gboolean
confab_http_server_listen_socket(ConfabHttpServer *self, GSocket *socket, GError **error)
{
	if (!soup_server_listen_socket(self->soup, socket, 0, error))
		return FALSE;
	update_url(self);
	return TRUE;
}

/**
 * confab_http_server_listen:
 * @self: a #ConfabHttpServer
 * @address: `HOST:PORT`; port 0 picks a free one
 * @error: return location for a #GError
 */
gboolean
confab_http_server_listen(ConfabHttpServer *self, const gchar *address, GError **error)
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
	if (!soup_server_listen(self->soup, sockaddr, 0, error)) {
		g_prefix_error(error, "listening on %s: ", address);
		return FALSE;
	}
	update_url(self);
	return TRUE;
}

/**
 * confab_http_server_get_url:
 *
 * Returns: (transfer full) (nullable): `http://HOST:PORT`, once listening
 */
gchar *
confab_http_server_get_url(ConfabHttpServer *self)
{
	return g_strdup(self->url);
}

/**
 * confab_http_server_disconnect:
 *
 * Stops listening and closes every connection.
 */
void
confab_http_server_disconnect(ConfabHttpServer *self)
{
	if (self->soup != NULL)
		soup_server_disconnect(self->soup);
}

/**
 * confab_http_server_get_active_requests:
 *
 * Returns: the requests being read, served or written
 */
guint
confab_http_server_get_active_requests(ConfabHttpServer *self)
{
	return self->active;
}
