/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#include "confab-error.h"
#include "confab-http-connection.h"
#include "confab-http-error.h"
#include "confab-http-private.h"
#include "confab-id-generator.h"
#include "confab-log.h"

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
	ConfabEngine *engine;	 /* owned */
	SoupServer *soup;	 /* owned */
	GSocketService *service; /* owned: our own accept loop */
	GHashTable *conns;	 /* Conn* set */
	gchar *url;		 /* owned */
	guint active;		 /* requests between their head and their end */
	guint64 refused;	 /* connections refused over the cap */
	guint64 timed_out;	 /* connections closed for idling */
};

/*
 * Connections. libsoup's server has no idle timeout, no connection cap and
 * no deadline for a request head, so Confab accepts connections itself and
 * hands each to libsoup with soup_server_accept_iostream(), keeping a Conn
 * beside it: the phase the connection is in and one timer.
 *
 *  IDLE  between requests, or accepted and nothing read yet: closed when
 *        idle_timeout passes with no new request
 *  HEAD  a request head is arriving: the whole head must arrive within
 *        idle_timeout of its first byte, however slowly it trickles
 *  BODY  the body is arriving: each chunk must follow the previous one
 *        within idle_timeout
 *  BUSY  the handler runs or the response is written: the turn has its own
 *        deadlines, and a slow reader is bounded by max_stream_buffer
 *
 * Closing is a shutdown() of the socket: libsoup sees the end of the stream
 * and tears the connection down itself. The Conn goes with the connection.
 */
typedef enum {
	CONN_IDLE,
	CONN_HEAD,
	CONN_BODY,
	CONN_BUSY,
} ConnPhase;

typedef struct {
	ConfabHttpServer *server;     /* unowned; NULL once the server is gone */
	GSocket *socket;	      /* owned */
	GSource *timer;		      /* owned */
	ConfabHttpConnection *stream; /* unowned: the Conn goes with it */
	ConnPhase phase;
	gint64 deadline; /* monotonic; 0 while busy */
} Conn;

#define CONN_KEY       "confab-conn"
#define LISTEN_BACKLOG 4096
#define COUNTED_KEY    "confab-counted"
#define LOG_KEY	       "confab-log"

/* What the access log says of a request: one line each, at info level. */
typedef struct {
	gint64 start;
	gchar *owner;
	gchar *agent;
} RequestLog;

static void
request_log_free(RequestLog *log)
{
	g_free(log->owner);
	g_free(log->agent);
	g_free(log);
}

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

/* ---------- connections ---------- */

static gboolean
conn_timer_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
	return callback(user_data);
}

static GSourceFuncs conn_timer_funcs = {
    .dispatch = conn_timer_dispatch,
};

static gboolean
on_conn_timeout(gpointer user_data)
{
	Conn *conn = user_data;
	gint64 now = g_get_monotonic_time();

	if (conn->deadline == 0 || conn->server == NULL) {
		/* busy since the timer was set */
		g_source_set_ready_time(conn->timer, -1);
		return G_SOURCE_CONTINUE;
	}
	if (now < conn->deadline) {
		/* the connection did something since */
		g_source_set_ready_time(conn->timer, conn->deadline);
		return G_SOURCE_CONTINUE;
	}
	g_source_set_ready_time(conn->timer, -1);
	conn->server->timed_out++;
	g_debug("closing a connection that stayed idle too long");
	g_socket_shutdown(conn->socket, TRUE, TRUE, NULL);
	return G_SOURCE_CONTINUE;
}

static void
conn_set_phase(Conn *conn, ConnPhase phase)
{
	guint timeout;
	gint64 ready;

	conn->phase = phase;
	confab_http_connection_set_between_requests(conn->stream, phase == CONN_IDLE);
	confab_http_connection_set_reading_head(conn->stream,
						phase == CONN_IDLE || phase == CONN_HEAD);
	/* The timer only ever moves earlier; firing early, it sets itself to
	 * the deadline then. With GLib 2.74 every move of a ready time wakes
	 * the main loop through its eventfd, and a connection changes phase
	 * four times a request. */
	if (phase == CONN_BUSY || conn->server == NULL) {
		conn->deadline = 0;
		return;
	}
	timeout = confab_engine_get_config(conn->server->engine)->idle_timeout;
	conn->deadline = g_get_monotonic_time() + (gint64)timeout * G_USEC_PER_SEC;
	ready = g_source_get_ready_time(conn->timer);
	if (ready == -1 || ready > conn->deadline)
		g_source_set_ready_time(conn->timer, conn->deadline);
}

static void
on_connection_gone(gpointer user_data, GObject *where_the_object_was)
{
	Conn *conn = user_data;
	if (conn->server != NULL)
		g_hash_table_remove(conn->server->conns, conn);
	g_source_destroy(conn->timer);
	g_source_unref(conn->timer);
	g_object_unref(conn->socket);
	g_free(conn);
}

static Conn *
conn_for_message(SoupServerMessage *msg)
{
	GSocketAddress *remote = soup_server_message_get_remote_address(msg);
	return remote != NULL ? g_object_get_data(G_OBJECT(remote), CONN_KEY) : NULL;
}

static void
message_set_phase(SoupServerMessage *msg, ConnPhase phase)
{
	Conn *conn = conn_for_message(msg);
	if (conn != NULL)
		conn_set_phase(conn, phase);
}

/* Over the connection cap: a best-effort 503 on the raw socket, then close. */
static void
refuse_connection(GSocket *socket)
{
	g_autoptr(GError) error = g_error_new_literal(CONFAB_ERROR,
						      CONFAB_ERROR_OVERLOADED,
						      "Too many connections; retry shortly");
	g_autofree gchar *body = confab_http_error_body(error);
	g_autofree gchar *raw = g_strdup_printf("HTTP/1.1 503 Service Unavailable\r\n"
						"Content-Type: application/json\r\n"
						"Retry-After: 1\r\n"
						"Connection: close\r\n"
						"Content-Length: %zu\r\n\r\n%s",
						strlen(body),
						body);

	g_socket_set_blocking(socket, FALSE);
	(void)g_socket_send(socket, raw, strlen(raw), NULL, NULL);
	(void)g_socket_shutdown(socket, FALSE, TRUE, NULL);
}

static gboolean
on_incoming(GSocketService *service,
	    GSocketConnection *connection,
	    GObject *source_object,
	    gpointer user_data)
{
	ConfabHttpServer *self = user_data;
	const ConfabConfig *config = confab_engine_get_config(self->engine);
	GSocket *socket = g_socket_connection_get_socket(connection);
	g_autoptr(GSocketAddress) local = NULL;
	g_autoptr(GSocketAddress) remote = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabHttpConnection) stream = NULL;
	Conn *conn;

	if (g_hash_table_size(self->conns) >= config->max_connections) {
		self->refused++;
		refuse_connection(socket);
		return TRUE;
	}
	local = g_socket_connection_get_local_address(connection, NULL);
	remote = g_socket_connection_get_remote_address(connection, NULL);
	if (local == NULL || remote == NULL)
		return TRUE; /* the peer is already gone */
	if (g_socket_get_family(socket) != G_SOCKET_FAMILY_UNIX)
		(void)g_socket_set_option(socket, IPPROTO_TCP, TCP_NODELAY, TRUE, NULL);

	conn = g_new0(Conn, 1);
	conn->server = self;
	conn->socket = g_object_ref(socket);
	conn->timer = g_source_new(&conn_timer_funcs, sizeof(GSource));
	g_source_set_callback(conn->timer, on_conn_timeout, conn, NULL);
	g_source_set_static_name(conn->timer, "[confab] connection deadline");
	g_source_attach(conn->timer, g_main_context_get_thread_default());
	stream = confab_http_connection_new(connection, config->max_header_bytes);
	conn->stream = stream;
	g_hash_table_add(self->conns, conn);
	g_object_weak_ref(G_OBJECT(stream), on_connection_gone, conn);
	g_object_set_data(G_OBJECT(remote), CONN_KEY, conn);
	conn_set_phase(conn, CONN_HEAD);

	if (!soup_server_accept_iostream(self->soup, G_IO_STREAM(stream), local, remote, &error))
		g_debug("accepting a connection: %s", error->message);
	return TRUE;
}

/* ---------- refusing before the body is read ---------- */

/*
 * libsoup reads a request's whole body once its head is in, whatever status
 * a got-headers handler sets. To refuse a body unread (413 from the
 * Content-Length, or any refusal of a request that has a body) the
 * connection is taken from libsoup, the response written by hand, the
 * sending side shut, and what the client still sends is drained for a short
 * while so that it reads the response rather than a reset.
 */

#define DRAIN_DEADLINE_S 2
#define DRAIN_BUFFER	 16384

typedef struct {
	GIOStream *stream;	   /* owned */
	GSocket *socket;	   /* owned, nullable */
	GCancellable *cancellable; /* owned */
	GBytes *response;	   /* owned */
	guint deadline_id;
} Drain;

static void
drain_free(Drain *drain)
{
	g_clear_handle_id(&drain->deadline_id, g_source_remove);
	g_io_stream_close(drain->stream, NULL, NULL);
	g_object_unref(drain->stream);
	g_clear_object(&drain->socket);
	g_object_unref(drain->cancellable);
	g_bytes_unref(drain->response);
	g_free(drain);
}

static gboolean
on_drain_deadline(gpointer user_data)
{
	Drain *drain = user_data;
	drain->deadline_id = 0;
	g_cancellable_cancel(drain->cancellable);
	return G_SOURCE_REMOVE;
}

static void
on_drained(GObject *source, GAsyncResult *result, gpointer user_data);

static void
drain_next(Drain *drain)
{
	g_input_stream_read_bytes_async(g_io_stream_get_input_stream(drain->stream),
					DRAIN_BUFFER,
					G_PRIORITY_LOW,
					drain->cancellable,
					on_drained,
					drain);
}

static void
on_drained(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Drain *drain = user_data;
	g_autoptr(GBytes) bytes =
	    g_input_stream_read_bytes_finish(G_INPUT_STREAM(source), result, NULL);

	if (bytes == NULL || g_bytes_get_size(bytes) == 0) {
		drain_free(drain);
		return;
	}
	drain_next(drain);
}

static void
on_refusal_written(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Drain *drain = user_data;

	if (!g_output_stream_write_all_finish(G_OUTPUT_STREAM(source), result, NULL, NULL)) {
		drain_free(drain);
		return;
	}
	if (drain->socket != NULL)
		(void)g_socket_shutdown(drain->socket, FALSE, TRUE, NULL);
	drain_next(drain);
}

static void
append_header(const gchar *name, const gchar *value, gpointer user_data)
{
	GString *raw = user_data;
	if (g_ascii_strcasecmp(name, "Content-Length") == 0 ||
	    g_ascii_strcasecmp(name, "Connection") == 0)
		return;
	g_string_append_printf(raw, "%s: %s\r\n", name, value);
}

static void
refuse_unread(SoupServerMessage *msg, const GError *error)
{
	Conn *conn = conn_for_message(msg);
	SoupMessageHeaders *headers;
	g_autoptr(GBytes) body = NULL;
	GString *raw = g_string_new(NULL);
	guint status;
	Drain *drain;

	confab_http_respond_error(msg, error);
	status = soup_server_message_get_status(msg);
	headers = soup_server_message_get_response_headers(msg);
	body = soup_message_body_flatten(soup_server_message_get_response_body(msg));
	g_string_append_printf(raw, "HTTP/1.1 %u %s\r\n", status, soup_status_get_phrase(status));
	soup_message_headers_foreach(headers, append_header, raw);
	g_string_append_printf(raw,
			       "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			       g_bytes_get_size(body));
	g_string_append_len(raw, g_bytes_get_data(body, NULL), g_bytes_get_size(body));

	drain = g_new0(Drain, 1);
	drain->response = g_string_free_to_bytes(raw);
	drain->cancellable = g_cancellable_new();
	if (conn != NULL) {
		conn_set_phase(conn, CONN_BUSY);
		drain->socket = g_object_ref(conn->socket);
	}
	drain->stream = soup_server_message_steal_connection(msg);
	if (drain->stream == NULL) {
		g_bytes_unref(drain->response);
		g_object_unref(drain->cancellable);
		g_clear_object(&drain->socket);
		g_free(drain);
		return;
	}
	drain->deadline_id = g_timeout_add_seconds(DRAIN_DEADLINE_S, on_drain_deadline, drain);
	g_output_stream_write_all_async(g_io_stream_get_output_stream(drain->stream),
					g_bytes_get_data(drain->response, NULL),
					g_bytes_get_size(drain->response),
					G_PRIORITY_DEFAULT,
					drain->cancellable,
					on_refusal_written,
					drain);
}

static gboolean
has_body(SoupServerMessage *msg)
{
	SoupMessageHeaders *headers = soup_server_message_get_request_headers(msg);
	switch (soup_message_headers_get_encoding(headers)) {
	case SOUP_ENCODING_CHUNKED:
		return TRUE;
	case SOUP_ENCODING_CONTENT_LENGTH:
		return soup_message_headers_get_content_length(headers) != 0;
	default:
		return FALSE;
	}
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

	message_set_phase(msg, CONN_BODY);
	{
		Conn *conn = conn_for_message(msg);
		/* a HEAD response has a head only: nothing to send it with */
		if (conn != NULL && conn->stream != NULL)
			confab_http_connection_set_head_request(
			    conn->stream,
			    soup_server_message_get_method(msg) == SOUP_METHOD_HEAD);
	}
	if (confab_log_info_enabled(G_LOG_DOMAIN)) {
		RequestLog *log = g_new0(RequestLog, 1);
		log->start = g_get_monotonic_time();
		g_object_set_data_full(G_OBJECT(msg),
				       LOG_KEY,
				       log,
				       (GDestroyNotify)request_log_free);
	}
	if (!check_request_head(self, msg, &error)) {
		if (has_body(msg))
			refuse_unread(msg, error);
		else
			confab_http_respond_error(msg, error);
		return;
	}
	self->active++;
	g_object_set_data(G_OBJECT(msg), COUNTED_KEY, GINT_TO_POINTER(1));
}

static void
on_got_chunk(SoupServerMessage *msg, GBytes *chunk, gpointer user_data)
{
	ConfabHttpServer *self = user_data;
	const ConfabConfig *config = confab_engine_get_config(self->engine);
	SoupMessageBody *body = soup_server_message_get_request_body(msg);

	message_set_phase(msg, CONN_BODY);
	/* a chunked body has no Content-Length to refuse it by */
	if (body != NULL && (gsize)body->length > config->max_body_bytes &&
	    soup_server_message_get_status(msg) == 0) {
		g_autoptr(GError) error = NULL;
		confab_set_error_param_printf(&error,
					      CONFAB_ERROR_REQUEST_TOO_LARGE,
					      NULL,
					      "The request body is larger than %" G_GSIZE_FORMAT
					      " bytes",
					      config->max_body_bytes);
		if (g_object_steal_data(G_OBJECT(msg), COUNTED_KEY) != NULL && self->active > 0)
			self->active--;
		refuse_unread(msg, error);
	}
}

static void
on_got_body(SoupServerMessage *msg, gpointer user_data)
{
	message_set_phase(msg, CONN_BUSY);
}

static void
on_request_started(SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
	message_set_phase(msg, CONN_HEAD);
	g_signal_connect_object(msg, "got-headers", G_CALLBACK(on_got_headers), user_data, 0);
	g_signal_connect_object(msg, "got-chunk", G_CALLBACK(on_got_chunk), user_data, 0);
	g_signal_connect_object(msg, "got-body", G_CALLBACK(on_got_body), user_data, 0);
}

/**
 * confab_http_log_set:
 * @msg: a message being served
 * @owner: (nullable): the owner it acts for
 * @agent: (nullable): the agent it talks to
 *
 * Adds to what the access log says of @msg.
 */
void
confab_http_log_set(SoupServerMessage *msg, const gchar *owner, const gchar *agent)
{
	RequestLog *log = g_object_get_data(G_OBJECT(msg), LOG_KEY);
	if (log == NULL)
		return;
	if (owner != NULL) {
		g_free(log->owner);
		log->owner = g_strdup(owner);
	}
	if (agent != NULL) {
		g_free(log->agent);
		log->agent = g_strdup(agent);
	}
}

static void
log_request(SoupServerMessage *msg, gboolean aborted)
{
	RequestLog *log = g_object_get_data(G_OBJECT(msg), LOG_KEY);
	GUri *uri = soup_server_message_get_uri(msg);
	const gchar *session;
	const gchar *method = soup_server_message_get_method(msg);
	const gchar *path = uri != NULL ? g_uri_get_path(uri) : NULL;
	guint status = soup_server_message_get_status(msg);
	gdouble ms;

	if (log == NULL || method == NULL || path == NULL)
		return;
	ms = (g_get_monotonic_time() - log->start) / 1000.0;
	session = soup_message_headers_get_one(soup_server_message_get_response_headers(msg),
					       "x-session-id");
	g_log_structured(G_LOG_DOMAIN,
			 G_LOG_LEVEL_INFO,
			 "MESSAGE",
			 "%s %s %u %.1f ms%s%s%s%s%s%s%s",
			 method,
			 path,
			 status,
			 ms,
			 log->owner != NULL ? " owner=" : "",
			 log->owner != NULL ? log->owner : "",
			 log->agent != NULL ? " agent=" : "",
			 log->agent != NULL ? log->agent : "",
			 session != NULL ? " session=" : "",
			 session != NULL ? session : "",
			 aborted ? " (client gone)" : "",
			 "CONFAB_METHOD",
			 "%s",
			 method,
			 "CONFAB_PATH",
			 "%s",
			 path,
			 "CONFAB_STATUS",
			 "%u",
			 status,
			 "CONFAB_DURATION_MS",
			 "%.3f",
			 ms,
			 "CONFAB_OWNER",
			 "%s",
			 log->owner != NULL ? log->owner : "",
			 "CONFAB_AGENT",
			 "%s",
			 log->agent != NULL ? log->agent : "",
			 "CONFAB_SESSION",
			 "%s",
			 session != NULL ? session : "");
}

static void
on_request_finished(SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
	log_request(msg, FALSE);
}

static void
on_request_aborted(SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
	log_request(msg, TRUE);
}

static void
on_request_done(SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
	ConfabHttpServer *self = user_data;
	message_set_phase(msg, CONN_IDLE);
	if (g_object_steal_data(G_OBJECT(msg), COUNTED_KEY) != NULL && self->active > 0)
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
	confab_http_log_set(msg, principal->owner, principal->agent_id);
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
	GHashTableIter iter;
	gpointer key;

	confab_http_server_stop_listening(self);
	if (self->soup != NULL)
		soup_server_disconnect(self->soup);
	g_clear_object(&self->soup);
	/* connections still closing outlive us */
	if (self->conns != NULL) {
		g_hash_table_iter_init(&iter, self->conns);
		while (g_hash_table_iter_next(&iter, &key, NULL)) {
			Conn *conn = key;
			conn->server = NULL;
			g_source_set_ready_time(conn->timer, -1);
		}
		g_hash_table_remove_all(self->conns);
	}
	G_OBJECT_CLASS(confab_http_server_parent_class)->dispose(object);
}

static void
confab_http_server_finalize(GObject *object)
{
	ConfabHttpServer *self = CONFAB_HTTP_SERVER(object);
	g_clear_object(&self->engine);
	g_clear_pointer(&self->conns, g_hash_table_unref);
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
	self->conns = g_hash_table_new(NULL, NULL);
	self->service = g_socket_service_new();
	g_socket_listener_set_backlog(G_SOCKET_LISTENER(self->service), LISTEN_BACKLOG);
	g_signal_connect_object(self->service, "incoming", G_CALLBACK(on_incoming), self, 0);
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
	g_signal_connect_object(self->soup,
				"request-finished",
				G_CALLBACK(on_request_finished),
				self,
				0);
	g_signal_connect_object(self->soup,
				"request-aborted",
				G_CALLBACK(on_request_aborted),
				self,
				0);
	return self;
}

ConfabEngine *
confab_http_server_get_engine(ConfabHttpServer *self)
{
	return self->engine;
}

/*
 * libsoup keeps a connection alive after a response only while the server
 * has a listener of its own. Ours accepts elsewhere, so libsoup gets one
 * that nobody can ever reach: a Unix socket whose name is unlinked as soon
 * as it listens, in a private directory.
 */
static gboolean
give_soup_a_listener(ConfabHttpServer *self, GError **error)
{
	g_autofree gchar *dir = NULL;
	g_autofree gchar *path = NULL;
	g_autoptr(GSocket) socket = NULL;
	g_autoptr(GSocketAddress) address = NULL;
	gboolean ok;

	if (soup_server_get_listeners(self->soup) != NULL)
		return TRUE;
	dir = g_dir_make_tmp("confabd-XXXXXX", error);
	if (dir == NULL)
		return FALSE;
	path = g_build_filename(dir, "s", NULL);
	socket = g_socket_new(G_SOCKET_FAMILY_UNIX,
			      G_SOCKET_TYPE_STREAM,
			      G_SOCKET_PROTOCOL_DEFAULT,
			      error);
	address = g_unix_socket_address_new(path);
	ok = socket != NULL && g_socket_bind(socket, address, FALSE, error) &&
	     g_socket_listen(socket, error);
	(void)g_unlink(path);
	(void)g_rmdir(dir);
	if (!ok)
		return FALSE;
	return soup_server_listen_socket(self->soup, socket, 0, error);
}

static void
update_url(ConfabHttpServer *self, GSocketAddress *address)
{
	GInetAddress *inet;
	g_autofree gchar *host = NULL;

	g_clear_pointer(&self->url, g_free);
	if (!G_IS_INET_SOCKET_ADDRESS(address))
		return;
	inet = g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(address));
	host = g_inet_address_to_string(inet);
	self->url =
	    g_strdup_printf("http://%s%s%s:%u",
			    g_inet_address_get_family(inet) == G_SOCKET_FAMILY_IPV6 ? "[" : "",
			    host,
			    g_inet_address_get_family(inet) == G_SOCKET_FAMILY_IPV6 ? "]" : "",
			    g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(address)));
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
	g_autoptr(GSocketAddress) address = NULL;

	if (!give_soup_a_listener(self, error))
		return FALSE;
	if (!g_socket_listener_add_socket(G_SOCKET_LISTENER(self->service), socket, NULL, error))
		return FALSE;
	address = g_socket_get_local_address(socket, NULL);
	if (address != NULL)
		update_url(self, address);
	g_socket_service_start(self->service);
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
	g_autoptr(GSocketAddress) effective = NULL;
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
	if (!give_soup_a_listener(self, error))
		return FALSE;
	if (!g_socket_listener_add_address(G_SOCKET_LISTENER(self->service),
					   sockaddr,
					   G_SOCKET_TYPE_STREAM,
					   G_SOCKET_PROTOCOL_TCP,
					   NULL,
					   &effective,
					   error)) {
		g_prefix_error(error, "listening on %s: ", address);
		return FALSE;
	}
	update_url(self, effective);
	g_socket_service_start(self->service);
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
 * confab_http_server_stop_listening:
 *
 * Accepts no new connection; those open are served on.
 */
void
confab_http_server_stop_listening(ConfabHttpServer *self)
{
	if (self->service == NULL)
		return;
	g_socket_service_stop(self->service);
	g_socket_listener_close(G_SOCKET_LISTENER(self->service));
	g_signal_handlers_disconnect_by_data(self->service, self);
	g_clear_object(&self->service);
}

/**
 * confab_http_server_disconnect:
 *
 * Stops listening and closes every connection.
 */
void
confab_http_server_disconnect(ConfabHttpServer *self)
{
	confab_http_server_stop_listening(self);
	if (self->soup != NULL)
		soup_server_disconnect(self->soup);
}

/**
 * confab_http_server_get_active_requests:
 *
 * Returns: the requests whose head is in and whose response is not done
 */
guint
confab_http_server_get_active_requests(ConfabHttpServer *self)
{
	return self->active;
}

/**
 * confab_http_server_get_connections:
 *
 * Returns: the connections open now
 */
guint
confab_http_server_get_connections(ConfabHttpServer *self)
{
	return self->conns != NULL ? g_hash_table_size(self->conns) : 0;
}

typedef struct {
	GSocket *socket; /* owned */
	GSourceFunc gone;
	gpointer gone_data;
} ClientWatch;

static void
client_watch_free(gpointer data)
{
	ClientWatch *watch = data;
	g_object_unref(watch->socket);
	g_free(watch);
}

static gboolean
on_client_readable(GSocket *socket, GIOCondition condition, gpointer user_data)
{
	ClientWatch *watch = user_data;
	gchar byte;
	GInputVector vector = {&byte, 1};
	gint flags = G_SOCKET_MSG_PEEK;
	g_autoptr(GError) error = NULL;
	gssize n;

	if (condition & (G_IO_HUP | G_IO_ERR)) {
		watch->gone(watch->gone_data);
		return G_SOURCE_REMOVE;
	}
	n = g_socket_receive_message(socket, NULL, &vector, 1, NULL, NULL, &flags, NULL, &error);
	if (n < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
		return G_SOURCE_CONTINUE;
	if (n <= 0)
		watch->gone(watch->gone_data);
	/* a pipelined request: it is libsoup's to read, not ours to watch */
	return G_SOURCE_REMOVE;
}

/**
 * confab_http_server_watch_client:
 * @self: a #ConfabHttpServer
 * @msg: a message being served
 * @gone: called once if the client closes or resets its connection
 * @gone_data: data for @gone
 *
 * While a handler holds @msg paused, libsoup reads nothing from the
 * client and would hear of its departure only at the next write. This
 * watches the connection meanwhile, without reading from it.
 *
 * Returns: (transfer full) (nullable): the watch, to destroy when the
 *   response is done
 */
GSource *
confab_http_server_watch_client(ConfabHttpServer *self,
				SoupServerMessage *msg,
				GSourceFunc gone,
				gpointer gone_data)
{
	Conn *conn = conn_for_message(msg);
	ClientWatch *watch;
	GSource *source;

	if (conn == NULL)
		return NULL;
	watch = g_new0(ClientWatch, 1);
	watch->socket = g_object_ref(conn->socket);
	watch->gone = gone;
	watch->gone_data = gone_data;
	source = g_socket_create_source(conn->socket, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
	g_source_set_callback(source, G_SOURCE_FUNC(on_client_readable), watch, client_watch_free);
	g_source_set_static_name(source, "[confab] client watch");
	g_source_attach(source, g_main_context_get_thread_default());
	return source;
}

/**
 * confab_http_server_close_connection:
 * @self: a #ConfabHttpServer
 * @msg: a message being served
 *
 * Closes the connection @msg came on, as if the client had gone: used for
 * a client that reads a stream too slowly.
 */
void
confab_http_server_close_connection(ConfabHttpServer *self, SoupServerMessage *msg)
{
	Conn *conn = conn_for_message(msg);
	if (conn != NULL)
		(void)g_socket_shutdown(conn->socket, TRUE, TRUE, NULL);
}
