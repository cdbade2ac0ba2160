/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMcpHttp"

#include "config.h"

#include <string.h>

#include "tools/mcp/confab-mcp-http.h"
#include "tools/mcp/confab-mcp-jsonrpc.h"
#include "tools/mcp/confab-mcp-oauth.h"
#include "upstream/confab-sse-parser.h"
#include "util/confab-error.h"
#include "util/confab-http-fields.h"
#include "util/confab-json.h"

/**
 * ConfabMcpHttp:
 *
 * The MCP streamable HTTP transport, over #ConfabUpstreamClient: every
 * message is a POST of its own (`Accept: application/json,
 * text/event-stream`); the answer to a request comes back in the POST's
 * response, as one JSON object or as an event stream of messages ending with
 * the answer; a notification or an answer is taken with 202. The session id
 * the server gives (`Mcp-Session-Id`) goes on every later request, with
 * `MCP-Protocol-Version` once initialize is done; a 404 to a request that
 * carried a session id means the session is gone: that send fails with
 * %G_IO_ERROR_NOT_CONNECTED and the next initialize starts a new one.
 *
 * Once the session is ready, a GET opens the server's own event stream
 * (requests and notifications unrelated to a request of ours, such as
 * `notifications/tools/list_changed`), reopened after a delay when it ends;
 * a server that does not offer one answers 405 and is not asked again.
 * Closing DELETEs the session.
 *
 * A server that cannot be reached at all (no response head) closes the
 * transport: its owner restarts it, as a dead stdio server. Responses and
 * events are capped at the maximum message size.
 */

#define DEFAULT_MAX_CONNECTIONS 16
#define DEFAULT_IDLE_TIMEOUT	60
#define MAX_ERROR_BODY		4096
#define MAX_SESSION_ID		1024
#define LISTEN_RETRY_MIN_MS	1000
#define LISTEN_RETRY_MAX_MS	30000
#define DELETE_TIMEOUT_MS	5000
#define MAX_DEPTH		128

/* a resumed stream that brings no event counts; this many in a row fail */
#define MAX_QUIET_RESUMES 3
/* the delay before resuming when the server gave no retry: */
#define DEFAULT_RESUME_DELAY_MS 1000

typedef enum {
	KIND_SEND,   /* a POST of one message */
	KIND_LISTEN, /* the GET stream */
	KIND_DELETE, /* the end of the session */
	KIND_RESUME, /* a GET with Last-Event-ID: the rest of a send's stream */
} Kind;

typedef struct _Exchange Exchange;

struct _Exchange {
	gint ref_count;
	ConfabMcpHttp *self; /* owned */
	Kind kind;
	GTask *task;			  /* owned: KIND_SEND */
	ConfabUpstreamExchange *exchange; /* owned */
	GSource *cancel_source;		  /* owned */
	GSource *timeout_source;	  /* owned: KIND_DELETE */
	gboolean had_session;
	gboolean got_head;
	gboolean finished;
	guint status;
	gboolean sse;
	gboolean json;
	ConfabSseParser *sse_parser; /* owned */
	GString *body;		     /* owned: a JSON answer or an error body */
	GError *error;		     /* owned: why the body was refused */
	guint n_events;
	/* resumption of a request's event stream (KIND_SEND, KIND_RESUME) */
	gchar *request_id;	   /* owned, nullable: the request's id as JSON */
	gboolean answered;	   /* its answer came */
	gchar *last_event_id;	   /* owned, nullable */
	gint64 retry_ms;	   /* the server's retry:, or -1 */
	guint quiet_resumes;	   /* resumed streams in a row without an event */
	GCancellable *cancellable; /* owned, nullable: the send's */
	GSource *delay_source;	   /* owned: KIND_RESUME before its GET */
	/* OAuth: a 401 or 403 is answered, then the message sent again once */
	GBytes *message;	 /* owned, nullable: KIND_SEND */
	gchar *www_authenticate; /* owned, nullable */
	gboolean auth_retried;
};

struct _ConfabMcpHttp {
	GObject parent_instance;
	gchar *name;		      /* owned */
	gchar *url;		      /* owned */
	ConfabUpstreamClient *client; /* owned */
	GMainContext *context;	      /* owned */
	GString *headers;	      /* owned: configured lines, "\r\n" each; secret */
	gchar *session_id;	      /* owned, nullable */
	gchar *protocol_version;      /* owned, nullable: after initialize */
	gsize max_message_size;
	GPtrArray *exchanges; /* owned: running KIND_SEND and KIND_LISTEN */
	gboolean started;
	gboolean listen;	 /* open the GET stream */
	Exchange *listener;	 /* unowned: in exchanges */
	gboolean listen_refused; /* 405 or another error status */
	GSource *listen_retry;	 /* owned */
	guint listen_delay_ms;
	ConfabMcpOAuth *oauth; /* owned, nullable */
};

static void
confab_mcp_http_transport_init(ConfabMcpTransportInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(ConfabMcpHttp,
			      confab_mcp_http,
			      G_TYPE_OBJECT,
			      G_IMPLEMENT_INTERFACE(CONFAB_TYPE_MCP_TRANSPORT,
						    confab_mcp_http_transport_init))

static void
listen_schedule(ConfabMcpHttp *self);
static void
http_shutdown(ConfabMcpHttp *self, const GError *why);
static gboolean
should_resume(Exchange *ex, const GError *error);
static void
resume_later(Exchange *ex);

static void
wipe_free(gchar *secret)
{
	if (secret == NULL)
		return;
	memset(secret, 0, strlen(secret));
	g_free(secret);
}

/* ---------- exchanges ---------- */

static Exchange *
exchange_ref(Exchange *ex)
{
	ex->ref_count++;
	return ex;
}

static void
exchange_unref(Exchange *ex)
{
	if (--ex->ref_count > 0)
		return;
	g_assert(ex->task == NULL);
	if (ex->cancel_source != NULL) {
		g_source_destroy(ex->cancel_source);
		g_source_unref(ex->cancel_source);
	}
	if (ex->timeout_source != NULL) {
		g_source_destroy(ex->timeout_source);
		g_source_unref(ex->timeout_source);
	}
	if (ex->delay_source != NULL) {
		g_source_destroy(ex->delay_source);
		g_source_unref(ex->delay_source);
	}
	g_free(ex->request_id);
	g_free(ex->last_event_id);
	g_clear_pointer(&ex->message, g_bytes_unref);
	g_free(ex->www_authenticate);
	g_clear_object(&ex->cancellable);
	g_clear_pointer(&ex->exchange, confab_upstream_client_exchange_unref);
	g_clear_object(&ex->sse_parser);
	if (ex->body != NULL)
		g_string_free(ex->body, TRUE);
	g_clear_error(&ex->error);
	g_object_unref(ex->self);
	g_free(ex);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Exchange, exchange_unref)

static gpointer
exchange_copy_ref(gconstpointer ex, gpointer user_data)
{
	return exchange_ref((Exchange *)ex);
}

/* The end of an exchange, once: its task hears @error (or success), and it
 * leaves the list of running ones. */
static void
exchange_end(Exchange *ex, GError *error)
{
	ConfabMcpHttp *self = ex->self;
	g_autoptr(GTask) task = g_steal_pointer(&ex->task);

	if (ex->finished) {
		g_clear_error(&error);
		return;
	}
	ex->finished = TRUE;
	if (ex->cancel_source != NULL)
		g_source_destroy(ex->cancel_source);
	if (ex->timeout_source != NULL)
		g_source_destroy(ex->timeout_source);
	if (ex->delay_source != NULL)
		g_source_destroy(ex->delay_source);
	if (self->listener == ex)
		self->listener = NULL;
	/* drops the list's reference; the caller holds one */
	if (g_ptr_array_remove_fast(self->exchanges, ex))
		exchange_unref(ex);
	if (task == NULL) {
		if (error != NULL)
			g_debug("%s: %s", self->name, error->message);
		g_clear_error(&error);
		return;
	}
	if (error != NULL)
		g_task_return_error(task, error);
	else
		g_task_return_boolean(task, TRUE);
}

/* Stops it on our side: the connection is closed, no callback follows. */
static void
exchange_abort(Exchange *ex, GError *error)
{
	g_autoptr(Exchange) keep = exchange_ref(ex);

	if (ex->exchange != NULL)
		confab_upstream_client_exchange_abort(ex->exchange);
	exchange_end(ex, error);
}

static gboolean
session_id_valid(const gchar *id)
{
	gsize len = strlen(id);
	if (len == 0 || len > MAX_SESSION_ID)
		return FALSE;
	for (const gchar *p = id; *p != '\0'; p++) {
		if ((guchar)*p < 0x21 || (guchar)*p > 0x7e)
			return FALSE;
	}
	return TRUE;
}

/* Whether @node is an answer (no method) to the request of id @id. */
static gboolean
is_answer_to(JsonNode *node, const gchar *id)
{
	JsonObject *object;
	JsonNode *answer_id;
	g_autofree gchar *text = NULL;

	if (!JSON_NODE_HOLDS_OBJECT(node))
		return FALSE;
	object = json_node_get_object(node);
	answer_id = json_object_get_member(object, "id");
	if (answer_id == NULL || json_object_has_member(object, "method"))
		return FALSE;
	text = confab_json_to_string(answer_id);
	return g_strcmp0(text, id) == 0;
}

/* Whether the message @data (an object, or a batch) answers @id. */
static gboolean
answers(const gchar *id, const gchar *data, gsize len)
{
	g_autoptr(JsonNode) root = confab_json_parse(data, len, MAX_DEPTH, NULL);

	if (root == NULL)
		return FALSE;
	if (JSON_NODE_HOLDS_ARRAY(root)) {
		JsonArray *batch = json_node_get_array(root);
		for (guint i = 0; i < json_array_get_length(batch); i++) {
			if (is_answer_to(json_array_get_element(batch, i), id))
				return TRUE;
		}
		return FALSE;
	}
	return is_answer_to(root, id);
}

/* The id of the request @message is, as JSON text; NULL for a
 * notification or an answer. */
static gchar *
request_id_of(GBytes *message)
{
	gsize len;
	const gchar *data = g_bytes_get_data(message, &len);
	g_autoptr(JsonNode) root = confab_json_parse(data, len, MAX_DEPTH, NULL);
	JsonObject *object;
	JsonNode *id;

	if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
		return NULL;
	object = json_node_get_object(root);
	id = json_object_get_member(object, "id");
	if (id == NULL || !json_object_has_member(object, "method"))
		return NULL;
	return confab_json_to_string(id);
}

static void
on_event(const gchar *event, const gchar *data, gsize data_len, gpointer user_data)
{
	Exchange *ex = user_data;

	/* 2025-11-25 servers prime a stream with an event of empty data */
	if (data_len == 0 || (event != NULL && strcmp(event, "message") != 0))
		return;
	ex->n_events++;
	if (ex->request_id != NULL && !ex->answered && answers(ex->request_id, data, data_len))
		ex->answered = TRUE;
	confab_mcp_transport_emit_message(CONFAB_MCP_TRANSPORT(ex->self),
					  data,
					  data_len,
					  ex->request_id);
}

static void
on_head(guint status, const gchar *reason, const ConfabHttpFields *fields, gpointer user_data)
{
	Exchange *ex = user_data;
	ConfabMcpHttp *self = ex->self;
	const gchar *content_type = confab_http_fields_get(fields, "Content-Type");
	const gchar *session_id = confab_http_fields_get(fields, "Mcp-Session-Id");

	ex->got_head = TRUE;
	ex->status = status;
	if (status < 200 || status >= 300) {
		if (status == 401 || status == 403)
			ex->www_authenticate =
			    g_strdup(confab_http_fields_get(fields, "WWW-Authenticate"));
		ex->body = g_string_new(NULL);
		return;
	}
	if (session_id != NULL && self->session_id == NULL && ex->kind == KIND_SEND) {
		if (session_id_valid(session_id))
			self->session_id = g_strdup(session_id);
		else
			g_message("%s: ignoring an invalid MCP session id", self->name);
	}
	if (confab_http_fields_media_type_is(content_type, "text/event-stream")) {
		ex->sse = TRUE;
		ex->sse_parser = confab_sse_parser_new(on_event, ex);
		confab_sse_parser_set_max_event_size(ex->sse_parser, self->max_message_size);
	} else if (ex->kind == KIND_SEND) {
		/* JSON, or an empty body (202) */
		ex->json = TRUE;
		ex->body = g_string_new(NULL);
	}
}

static void
on_body(const gchar *data, gsize len, gpointer user_data)
{
	Exchange *ex = user_data;
	ConfabMcpHttp *self = ex->self;
	g_autoptr(Exchange) keep = exchange_ref(ex);
	g_autoptr(GError) error = NULL;

	if (ex->finished)
		return;
	if (ex->sse) {
		/* an answer emitted here may close us: @keep */
		if (!confab_sse_parser_feed(ex->sse_parser, data, len, &error)) {
			exchange_abort(ex,
				       g_error_new(G_IO_ERROR,
						   G_IO_ERROR_MESSAGE_TOO_LARGE,
						   "The MCP server %s sent an event larger than "
						   "%" G_GSIZE_FORMAT " bytes",
						   self->name,
						   self->max_message_size));
		}
		return;
	}
	if (ex->body == NULL)
		return;
	if (ex->json) {
		if (ex->body->len + len > self->max_message_size) {
			exchange_abort(ex,
				       g_error_new(G_IO_ERROR,
						   G_IO_ERROR_MESSAGE_TOO_LARGE,
						   "The MCP server %s sent an answer larger than "
						   "%" G_GSIZE_FORMAT " bytes",
						   self->name,
						   self->max_message_size));
			return;
		}
		g_string_append_len(ex->body, data, len);
		return;
	}
	/* an error body: its start is enough */
	if (ex->body->len < MAX_ERROR_BODY)
		g_string_append_len(ex->body, data, MIN(len, MAX_ERROR_BODY - ex->body->len));
}

/* What a JSON-RPC error in an error body says, if it is one. */
/* A short, printable copy of @text (at most @max bytes, whole characters,
 * controls as spaces), or NULL when nothing printable is left. */
static gchar *
printable_excerpt(const gchar *text, gsize max)
{
	g_autoptr(GString) out = g_string_new(NULL);

	if (text == NULL || !g_utf8_validate(text, -1, NULL))
		return NULL;
	for (const gchar *p = text; *p != '\0'; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		gsize before = out->len;
		if (c == '\n' || c == '\r')
			break;
		if (g_unichar_iscntrl(c))
			c = ' ';
		g_string_append_unichar(out, c);
		if (out->len > max) {
			g_string_truncate(out, before);
			break;
		}
	}
	g_strstrip(out->str);
	return *out->str != '\0' ? g_strdup(out->str) : NULL;
}

/* The message in a JSON error body: JSON-RPC's {"error":{"message"}} or
 * OAuth's {"error":"code","error_description"?}; NULL for any other shape. */
static gchar *
json_error_message(JsonNode *root)
{
	JsonObject *object;
	JsonNode *error;

	if (!JSON_NODE_HOLDS_OBJECT(root))
		return NULL;
	object = json_node_get_object(root);
	error = json_object_get_member(object, "error");
	if (error == NULL)
		return NULL;
	if (JSON_NODE_HOLDS_OBJECT(error)) {
		JsonNode *message = json_object_get_member(json_node_get_object(error), "message");
		if (message == NULL || json_node_get_value_type(message) != G_TYPE_STRING)
			return NULL;
		return printable_excerpt(json_node_get_string(message), 200);
	}
	if (json_node_get_value_type(error) == G_TYPE_STRING) {
		JsonNode *description = json_object_get_member(object, "error_description");
		g_autofree gchar *text = NULL;
		if (description != NULL && json_node_get_value_type(description) == G_TYPE_STRING)
			text = g_strdup_printf("%s: %s",
					       json_node_get_string(error),
					       json_node_get_string(description));
		else
			text = g_strdup(json_node_get_string(error));
		return printable_excerpt(text, 200);
	}
	return NULL;
}

/* What an HTTP error body says, for the error message: the message of a
 * JSON error of either shape, the first line of a short plain text, or
 * NULL (an empty body, HTML, JSON of another shape). Any body is safe. */
static gchar *
error_body_message(GString *body)
{
	g_autoptr(JsonNode) root = NULL;
	const gchar *text;

	if (body == NULL || body->len == 0)
		return NULL;
	root = confab_json_parse(body->str, body->len, 16, NULL);
	if (root != NULL)
		return json_error_message(root);
	text = body->str;
	while (g_ascii_isspace(*text))
		text++;
	if (*text == '<' || strlen(text) != body->len - (gsize)(text - body->str))
		return NULL; /* HTML, or a NUL inside */
	return printable_excerpt(text, 200);
}

static GError *
status_error(Exchange *ex)
{
	ConfabMcpHttp *self = ex->self;
	g_autofree gchar *message = error_body_message(ex->body);

	if (ex->status == 404 && ex->had_session) {
		return g_error_new(G_IO_ERROR,
				   G_IO_ERROR_NOT_CONNECTED,
				   "The MCP session with %s expired",
				   self->name);
	}
	return g_error_new(CONFAB_ERROR,
			   CONFAB_ERROR_UPSTREAM,
			   "The MCP server %s answered HTTP %u%s%s",
			   self->name,
			   ex->status,
			   message != NULL ? ": " : "",
			   message != NULL ? message : "");
}

static void
session_lost(ConfabMcpHttp *self)
{
	g_debug("%s: the MCP session expired", self->name);
	g_clear_pointer(&self->session_id, g_free);
	g_clear_pointer(&self->protocol_version, g_free);
	if (self->listen_retry != NULL) {
		g_source_destroy(self->listen_retry);
		g_clear_pointer(&self->listen_retry, g_source_unref);
	}
	if (self->listener != NULL)
		exchange_abort(self->listener, NULL);
}

static gboolean
auth_challenged(Exchange *ex);

static void
on_done(GError *error, gpointer user_data)
{
	Exchange *ex = user_data;
	ConfabMcpHttp *self = ex->self;
	g_autoptr(Exchange) keep = exchange_ref(ex);
	g_autoptr(GError) parse_error = NULL;
	Kind kind = ex->kind;
	gboolean unreachable = error != NULL && !ex->got_head;

	if (ex->finished) {
		g_clear_error(&error);
		return;
	}
	if (error == NULL && ex->sse && !confab_sse_parser_finish(ex->sse_parser, &parse_error)) {
		error = g_error_new(G_IO_ERROR,
				    G_IO_ERROR_MESSAGE_TOO_LARGE,
				    "The MCP server %s sent an event larger than %" G_GSIZE_FORMAT
				    " bytes",
				    self->name,
				    self->max_message_size);
	}
	if (ex->finished) {
		/* the last event closed us */
		g_clear_error(&error);
		return;
	}
	if (error != NULL) {
		g_prefix_error(&error, "The MCP server %s: ", self->name);
	} else if (auth_challenged(ex)) {
		return;
	} else if (ex->status < 200 || ex->status >= 300) {
		error = status_error(ex);
		if (ex->status == 404 && ex->had_session && kind == KIND_SEND)
			session_lost(self);
		if (kind == KIND_LISTEN)
			self->listen_refused = TRUE;
	} else if (ex->json && ex->body->len > 0) {
		/* may close us: @keep */
		confab_mcp_transport_emit_message(CONFAB_MCP_TRANSPORT(self),
						  ex->body->str,
						  ex->body->len,
						  ex->request_id);
	}
	if (kind == KIND_LISTEN && error == NULL) {
		if (!ex->sse)
			self->listen_refused = TRUE;
		else if (ex->n_events > 0)
			self->listen_delay_ms = LISTEN_RETRY_MIN_MS;
	}
	if (should_resume(ex, error)) {
		g_clear_error(&error);
		resume_later(ex);
		return;
	}
	if (unreachable && kind == KIND_SEND) {
		/* nothing answers there: the owner restarts us */
		g_autoptr(GError) why = g_error_copy(error);
		exchange_end(ex, g_steal_pointer(&error));
		http_shutdown(self, why);
		return;
	}
	exchange_end(ex, g_steal_pointer(&error));
	if (kind == KIND_LISTEN)
		listen_schedule(self);
}

static const ConfabUpstreamHandler handler = {NULL, on_head, on_body, on_done};

static gboolean
exchange_begin(Exchange *ex, GBytes *body, GError **error);

/* The challenge was answered: the message goes again, with the new token. */
static void
on_auth_challenge(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Exchange) ex = user_data;
	GError *error = NULL;

	if (!confab_mcp_oauth_challenge_finish(CONFAB_MCP_OAUTH(source), result, &error)) {
		exchange_end(ex, error);
		return;
	}
	if (ex->finished)
		return;
	g_clear_pointer(&ex->exchange, confab_upstream_client_exchange_unref);
	g_clear_object(&ex->sse_parser);
	if (ex->body != NULL)
		g_string_free(g_steal_pointer(&ex->body), TRUE);
	ex->got_head = ex->sse = ex->json = FALSE;
	ex->status = 0;
	if (!exchange_begin(ex, ex->message, &error))
		exchange_end(ex, error);
}

/* A 401 or 403 of a send, with OAuth: the challenge is taken (once per
 * send), and the send goes on when it is answered. */
static gboolean
auth_challenged(Exchange *ex)
{
	ConfabMcpHttp *self = ex->self;

	if (self->oauth == NULL || ex->kind != KIND_SEND || ex->auth_retried ||
	    ex->message == NULL || (ex->status != 401 && ex->status != 403))
		return FALSE;
	ex->auth_retried = TRUE;
	g_debug("%s: HTTP %u: the OAuth challenge", self->name, ex->status);
	confab_mcp_oauth_challenge_async(self->oauth,
					 ex->status,
					 ex->www_authenticate,
					 ex->cancellable,
					 on_auth_challenge,
					 exchange_ref(ex));
	return TRUE;
}

static gboolean
on_exchange_cancelled(GCancellable *cancellable, gpointer user_data)
{
	Exchange *ex = user_data;
	exchange_abort(ex, g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "Cancelled"));
	return G_SOURCE_REMOVE;
}

static gboolean
on_exchange_timeout(gpointer user_data)
{
	Exchange *ex = user_data;
	exchange_abort(ex, g_error_new_literal(G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "Timed out"));
	return G_SOURCE_REMOVE;
}

/* The headers of @ex's request; they may hold a secret. */
static gchar *
request_headers(ConfabMcpHttp *self, Exchange *ex)
{
	GString *out = g_string_sized_new(256);

	if (ex->kind == KIND_LISTEN || ex->kind == KIND_RESUME)
		g_string_append(out, "Accept: text/event-stream\r\n");
	else if (ex->kind == KIND_SEND)
		g_string_append(out, "Accept: application/json, text/event-stream\r\n");
	g_string_append_len(out, self->headers->str, self->headers->len);
	if (self->oauth != NULL) {
		g_autofree gchar *authorization =
		    confab_mcp_oauth_dup_authorization(self->oauth, self->url);
		if (authorization != NULL) {
			g_string_append_printf(out, "Authorization: %s\r\n", authorization);
			memset(authorization, 0, strlen(authorization));
		}
	}
	ex->had_session = self->session_id != NULL;
	if (self->session_id != NULL)
		g_string_append_printf(out, "Mcp-Session-Id: %s\r\n", self->session_id);
	/* the header came with 2025-06-18; a 2025-03-26 server is not sent it */
	if (self->protocol_version != NULL && strcmp(self->protocol_version, "2025-03-26") != 0)
		g_string_append_printf(out, "MCP-Protocol-Version: %s\r\n", self->protocol_version);
	if (ex->kind == KIND_RESUME)
		g_string_append_printf(out, "Last-Event-ID: %s\r\n", ex->last_event_id);
	return g_string_free(out, FALSE);
}

static Exchange *
exchange_new(ConfabMcpHttp *self, Kind kind, GTask *task)
{
	Exchange *ex = g_new0(Exchange, 1);

	ex->ref_count = 1;
	ex->self = g_object_ref(self);
	ex->kind = kind;
	ex->task = task != NULL ? g_object_ref(task) : NULL;
	ex->retry_ms = -1;
	return ex;
}

/* Sends @ex's request; on failure @ex is left as it was. */
static gboolean
exchange_begin(Exchange *ex, GBytes *body, GError **error)
{
	ConfabMcpHttp *self = ex->self;
	const gchar *method = ex->kind == KIND_SEND	? "POST"
			      : ex->kind == KIND_DELETE ? "DELETE"
							: "GET";
	gchar *headers = request_headers(self, ex);

	ex->exchange = confab_upstream_client_request(self->client,
						      method,
						      self->url,
						      headers,
						      body != NULL ? "application/json" : NULL,
						      body,
						      &handler,
						      ex,
						      error);
	wipe_free(headers);
	return ex->exchange != NULL;
}

static Exchange *
exchange_start(ConfabMcpHttp *self, Kind kind, GBytes *body, GTask *task, GError **error)
{
	Exchange *ex = exchange_new(self, kind, task);

	if (!exchange_begin(ex, body, error)) {
		g_clear_object(&ex->task);
		exchange_unref(ex);
		return NULL;
	}
	g_ptr_array_add(self->exchanges, exchange_ref(ex));
	return ex;
}

/* ---------- resuming a request's stream ---------- */

static gboolean
on_resume_delay(gpointer user_data)
{
	Exchange *ex = user_data;
	g_autoptr(Exchange) keep = exchange_ref(ex);
	GError *error = NULL;

	g_clear_pointer(&ex->delay_source, g_source_unref);
	g_debug("%s: resuming an event stream after %s", ex->self->name, ex->last_event_id);
	if (!exchange_begin(ex, NULL, &error))
		exchange_end(ex, error);
	return G_SOURCE_REMOVE;
}

/* Whether the stream of @ex, which ended (@error: how, or %NULL), is to be
 * resumed: it was a request's event stream, its answer did not come, the
 * server gave an event id to resume after, and resumed streams still
 * bring events. */
static gboolean
should_resume(Exchange *ex, const GError *error)
{
	const gchar *last;

	if ((ex->kind != KIND_SEND && ex->kind != KIND_RESUME) || ex->task == NULL || !ex->sse ||
	    !ex->got_head || ex->answered || ex->request_id == NULL || ex->status < 200 ||
	    ex->status >= 300 || confab_mcp_transport_is_closed(CONFAB_MCP_TRANSPORT(ex->self)))
		return FALSE;
	if (error != NULL && (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE) ||
			      g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)))
		return FALSE;
	last = confab_sse_parser_get_last_event_id(ex->sse_parser);
	if (last == NULL)
		last = ex->last_event_id;
	if (last == NULL)
		return FALSE;
	/* a resumed stream that moved no further counts against it */
	if (ex->kind == KIND_RESUME && g_strcmp0(last, ex->last_event_id) == 0 &&
	    ex->quiet_resumes + 1 >= MAX_QUIET_RESUMES)
		return FALSE;
	return TRUE;
}

/* Takes @ex's task to a GET with Last-Event-ID, sent after the server's
 * retry: delay (no backoff of our own); @ex ends. */
static void
resume_later(Exchange *ex)
{
	ConfabMcpHttp *self = ex->self;
	Exchange *next = exchange_new(self, KIND_RESUME, NULL);
	const gchar *last = confab_sse_parser_get_last_event_id(ex->sse_parser);
	gint64 retry = confab_sse_parser_get_retry(ex->sse_parser);

	next->task = g_steal_pointer(&ex->task);
	next->request_id = g_strdup(ex->request_id);
	next->last_event_id = g_strdup(last != NULL ? last : ex->last_event_id);
	next->retry_ms = retry >= 0 ? retry : ex->retry_ms;
	next->quiet_resumes =
	    ex->kind == KIND_RESUME && g_strcmp0(next->last_event_id, ex->last_event_id) == 0
		? ex->quiet_resumes + 1
		: 0;
	if (ex->cancellable != NULL) {
		next->cancellable = g_object_ref(ex->cancellable);
		next->cancel_source = g_cancellable_source_new(next->cancellable);
		g_source_set_callback(next->cancel_source,
				      G_SOURCE_FUNC(on_exchange_cancelled),
				      next,
				      NULL);
		g_source_attach(next->cancel_source, self->context);
	}
	next->delay_source = g_timeout_source_new(
	    (guint)(next->retry_ms >= 0 ? next->retry_ms : DEFAULT_RESUME_DELAY_MS));
	g_source_set_callback(next->delay_source, on_resume_delay, next, NULL);
	g_source_set_static_name(next->delay_source, "[confab] mcp stream resumption");
	g_source_attach(next->delay_source, self->context);
	g_ptr_array_add(self->exchanges, next);
	exchange_end(ex, NULL);
}

/* ---------- the GET stream ---------- */

static void
listen_open(ConfabMcpHttp *self)
{
	g_autoptr(GError) error = NULL;
	Exchange *ex;

	if (!self->listen || self->listen_refused || self->listener != NULL ||
	    self->protocol_version == NULL ||
	    confab_mcp_transport_is_closed(CONFAB_MCP_TRANSPORT(self)))
		return;
	ex = exchange_start(self, KIND_LISTEN, NULL, NULL, &error);
	if (ex == NULL) {
		g_debug("%s: no event stream: %s", self->name, error->message);
		return;
	}
	self->listener = ex;
	exchange_unref(ex);
}

static gboolean
on_listen_retry(gpointer user_data)
{
	ConfabMcpHttp *self = user_data;

	g_clear_pointer(&self->listen_retry, g_source_unref);
	listen_open(self);
	return G_SOURCE_REMOVE;
}

/* The stream ended: open it again later, unless it was refused. */
static void
listen_schedule(ConfabMcpHttp *self)
{
	if (!self->listen || self->listen_refused || self->listen_retry != NULL ||
	    self->protocol_version == NULL ||
	    confab_mcp_transport_is_closed(CONFAB_MCP_TRANSPORT(self)))
		return;
	self->listen_retry = g_timeout_source_new(self->listen_delay_ms);
	g_source_set_callback(self->listen_retry, on_listen_retry, self, NULL);
	g_source_set_static_name(self->listen_retry, "[confab] mcp event stream retry");
	g_source_attach(self->listen_retry, self->context);
	self->listen_delay_ms = MIN(self->listen_delay_ms * 2, LISTEN_RETRY_MAX_MS);
}

/* ---------- the transport ---------- */

static void
http_start_async(ConfabMcpTransport *transport,
		 GCancellable *cancellable,
		 GAsyncReadyCallback callback,
		 gpointer user_data)
{
	ConfabMcpHttp *self = CONFAB_MCP_HTTP(transport);
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);

	/* nothing to do before the first POST */
	g_task_set_source_tag(task, http_start_async);
	if (confab_mcp_transport_is_closed(transport)) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The MCP transport to %s is closed",
					self->name);
		return;
	}
	self->started = TRUE;
	g_task_return_boolean(task, TRUE);
}

static gboolean
http_start_finish(ConfabMcpTransport *transport, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, transport), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/* Sends @message for @task, now. */
static void
send_now(ConfabMcpHttp *self, GBytes *message, GCancellable *cancellable, GTask *task)
{
	g_autoptr(GError) error = NULL;
	Exchange *ex;

	if (confab_mcp_transport_is_closed(CONFAB_MCP_TRANSPORT(self))) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The MCP transport to %s is closed",
					self->name);
		return;
	}
	if (g_cancellable_is_cancelled(cancellable)) {
		g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "Cancelled");
		return;
	}
	ex = exchange_start(self, KIND_SEND, message, task, &error);
	if (ex == NULL) {
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	/* its answer may come on a resumed stream */
	ex->request_id = request_id_of(message);
	if (self->oauth != NULL)
		ex->message = g_bytes_ref(message);
	if (cancellable != NULL) {
		ex->cancellable = g_object_ref(cancellable);
		ex->cancel_source = g_cancellable_source_new(cancellable);
		g_source_set_callback(ex->cancel_source,
				      G_SOURCE_FUNC(on_exchange_cancelled),
				      ex,
				      NULL);
		g_source_attach(ex->cancel_source, self->context);
	}
	exchange_unref(ex);
}

typedef struct {
	GBytes *message;
	GCancellable *cancellable;
} SendLater;

static void
send_later_free(SendLater *later)
{
	g_bytes_unref(later->message);
	g_clear_object(&later->cancellable);
	g_free(later);
}

/* The token was refreshed before it expired (or that failed: the send
 * goes with the old one, and its 401 starts over). */
static void
on_refreshed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	SendLater *later = g_task_get_task_data(task);
	g_autoptr(GError) error = NULL;

	if (!confab_mcp_oauth_refresh_finish(CONFAB_MCP_OAUTH(source), result, &error))
		g_message("%s", error->message);
	send_now(g_task_get_source_object(task), later->message, later->cancellable, task);
}

static void
http_send_async(ConfabMcpTransport *transport,
		GBytes *message,
		GCancellable *cancellable,
		GAsyncReadyCallback callback,
		gpointer user_data)
{
	ConfabMcpHttp *self = CONFAB_MCP_HTTP(transport);
	g_autoptr(GTask) task = g_task_new(self, NULL, callback, user_data);

	g_task_set_source_tag(task, http_send_async);
	if (!self->started) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The MCP transport to %s is closed",
					self->name);
		return;
	}
	if (self->oauth != NULL && confab_mcp_oauth_needs_refresh(self->oauth)) {
		SendLater *later = g_new0(SendLater, 1);
		later->message = g_bytes_ref(message);
		later->cancellable = cancellable != NULL ? g_object_ref(cancellable) : NULL;
		g_task_set_task_data(task, later, (GDestroyNotify)send_later_free);
		confab_mcp_oauth_refresh_async(self->oauth,
					       cancellable,
					       on_refreshed,
					       g_steal_pointer(&task));
		return;
	}
	send_now(self, message, cancellable, task);
}

static gboolean
http_send_finish(ConfabMcpTransport *transport, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, transport), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

static void
http_session_ready(ConfabMcpTransport *transport, const gchar *protocol_version)
{
	ConfabMcpHttp *self = CONFAB_MCP_HTTP(transport);

	g_free(self->protocol_version);
	self->protocol_version = g_strdup(protocol_version);
	self->listen_refused = FALSE;
	self->listen_delay_ms = LISTEN_RETRY_MIN_MS;
	listen_open(self);
}

static void
http_shutdown(ConfabMcpHttp *self, const GError *why)
{
	g_autoptr(ConfabMcpHttp) keep = g_object_ref(self);
	g_autoptr(GPtrArray) running = NULL;

	if (confab_mcp_transport_is_closed(CONFAB_MCP_TRANSPORT(self)))
		return;
	if (self->listen_retry != NULL) {
		g_source_destroy(self->listen_retry);
		g_clear_pointer(&self->listen_retry, g_source_unref);
	}
	/* aborting one takes it out of the list */
	running = g_ptr_array_copy(self->exchanges, exchange_copy_ref, NULL);
	g_ptr_array_set_free_func(running, (GDestroyNotify)exchange_unref);
	for (guint i = 0; i < running->len; i++)
		exchange_abort(running->pdata[i],
			       g_error_new(G_IO_ERROR,
					   G_IO_ERROR_CONNECTION_CLOSED,
					   "The MCP transport to %s is closed",
					   self->name));
	if (self->session_id != NULL && why == NULL) {
		g_autoptr(GError) error = NULL;
		Exchange *ex = exchange_start(self, KIND_DELETE, NULL, NULL, &error);
		if (ex != NULL) {
			/* it ends by itself; a server that does not answer
			 * must not hold us for long */
			ex->timeout_source = g_timeout_source_new(DELETE_TIMEOUT_MS);
			g_source_set_callback(ex->timeout_source, on_exchange_timeout, ex, NULL);
			g_source_attach(ex->timeout_source, self->context);
			exchange_unref(ex);
		}
	}
	g_clear_pointer(&self->session_id, g_free);
	g_clear_pointer(&self->protocol_version, g_free);
	confab_mcp_transport_emit_closed(CONFAB_MCP_TRANSPORT(self), why);
}

static void
http_close(ConfabMcpTransport *transport)
{
	http_shutdown(CONFAB_MCP_HTTP(transport), NULL);
}

static ConfabMcpTransportFlags
http_get_flags(ConfabMcpTransport *transport)
{
	return CONFAB_MCP_TRANSPORT_FLAGS_ANSWER_IN_SEND;
}

static void
http_set_max_message_size(ConfabMcpTransport *transport, gsize max_bytes)
{
	ConfabMcpHttp *self = CONFAB_MCP_HTTP(transport);
	self->max_message_size = max_bytes;
}

static void
confab_mcp_http_transport_init(ConfabMcpTransportInterface *iface)
{
	iface->start_async = http_start_async;
	iface->start_finish = http_start_finish;
	iface->send_async = http_send_async;
	iface->send_finish = http_send_finish;
	iface->session_ready = http_session_ready;
	iface->close = http_close;
	iface->get_flags = http_get_flags;
	iface->set_max_message_size = http_set_max_message_size;
}

/* ---------- the object ---------- */

static void
confab_mcp_http_finalize(GObject *object)
{
	ConfabMcpHttp *self = CONFAB_MCP_HTTP(object);

	/* running exchanges hold us: none is left */
	g_assert(self->exchanges->len == 0);
	if (self->listen_retry != NULL) {
		g_source_destroy(self->listen_retry);
		g_source_unref(self->listen_retry);
	}
	g_ptr_array_unref(self->exchanges);
	g_clear_object(&self->client);
	g_main_context_unref(self->context);
	memset(self->headers->str, 0, self->headers->len);
	g_string_free(self->headers, TRUE);
	g_clear_object(&self->oauth);
	g_free(self->session_id);
	g_free(self->protocol_version);
	g_free(self->url);
	g_free(self->name);
	G_OBJECT_CLASS(confab_mcp_http_parent_class)->finalize(object);
}

static void
confab_mcp_http_class_init(ConfabMcpHttpClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_mcp_http_finalize;
}

static void
confab_mcp_http_init(ConfabMcpHttp *self)
{
	self->context = g_main_context_ref_thread_default();
	self->headers = g_string_new(NULL);
	self->exchanges = g_ptr_array_new();
	self->max_message_size = CONFAB_MCP_DEFAULT_MAX_MESSAGE_SIZE;
	self->listen = TRUE;
	self->listen_delay_ms = LISTEN_RETRY_MIN_MS;
}

/**
 * confab_mcp_http_new:
 * @name: the server's name, for the log and errors
 * @url: the MCP endpoint, http:// or https://
 * @client: (nullable): the HTTP client to use; %NULL for one of its own
 * @error: return location for a #GError
 *
 * Returns: (transfer full): a transport to @url, or %NULL for a URL that
 *   is not http(s) with a host
 */
ConfabMcpHttp *
confab_mcp_http_new(const gchar *name,
		    const gchar *url,
		    ConfabUpstreamClient *client,
		    GError **error)
{
	ConfabMcpHttp *self;
	g_autoptr(GUri) uri = NULL;
	const gchar *scheme;

	g_return_val_if_fail(name != NULL, NULL);
	g_return_val_if_fail(url != NULL, NULL);

	uri = g_uri_parse(url, G_URI_FLAGS_ENCODED, error);
	if (uri == NULL)
		return NULL;
	scheme = g_uri_get_scheme(uri);
	if ((g_ascii_strcasecmp(scheme, "http") != 0 && g_ascii_strcasecmp(scheme, "https") != 0) ||
	    g_uri_get_host(uri) == NULL || *g_uri_get_host(uri) == '\0') {
		g_set_error(error,
			    G_IO_ERROR,
			    G_IO_ERROR_INVALID_ARGUMENT,
			    "An MCP server URL must be http:// or https:// with a host, not “%s”",
			    url);
		return NULL;
	}
	self = g_object_new(CONFAB_TYPE_MCP_HTTP, NULL);
	self->name = g_strdup(name);
	self->url = g_strdup(url);
	self->client = client != NULL ? g_object_ref(client)
				      : confab_upstream_client_new("confab/" PACKAGE_VERSION,
								   DEFAULT_MAX_CONNECTIONS,
								   DEFAULT_IDLE_TIMEOUT,
								   NULL);
	return self;
}

static gboolean
token_char(gchar c)
{
	return g_ascii_isalnum(c) || strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/**
 * confab_mcp_http_add_header:
 * @self: a #ConfabMcpHttp
 * @name: a header name
 * @value: its value; it may be a secret and is never logged
 * @error: return location for a #GError
 *
 * Adds a header to every request. The headers that frame the exchange
 * (Host, Content-Type, Content-Length, Transfer-Encoding, Connection,
 * Accept) and the session's own are refused.
 *
 * Returns: %TRUE if it was taken
 */
gboolean
confab_mcp_http_add_header(ConfabMcpHttp *self,
			   const gchar *name,
			   const gchar *value,
			   GError **error)
{
	static const gchar *const reserved[] = {"host",
						"content-type",
						"content-length",
						"transfer-encoding",
						"connection",
						"accept",
						"mcp-session-id",
						"mcp-protocol-version",
						NULL};

	g_return_val_if_fail(CONFAB_IS_MCP_HTTP(self), FALSE);
	g_return_val_if_fail(name != NULL && value != NULL, FALSE);

	if (*name == '\0') {
		g_set_error_literal(error,
				    G_IO_ERROR,
				    G_IO_ERROR_INVALID_ARGUMENT,
				    "An empty header name");
		return FALSE;
	}
	for (const gchar *p = name; *p != '\0'; p++) {
		if (!token_char(*p)) {
			g_set_error(error,
				    G_IO_ERROR,
				    G_IO_ERROR_INVALID_ARGUMENT,
				    "Not a header name: “%s”",
				    name);
			return FALSE;
		}
	}
	for (guint i = 0; reserved[i] != NULL; i++) {
		if (g_ascii_strcasecmp(name, reserved[i]) == 0) {
			g_set_error(error,
				    G_IO_ERROR,
				    G_IO_ERROR_INVALID_ARGUMENT,
				    "The header %s cannot be configured",
				    name);
			return FALSE;
		}
	}
	for (const gchar *p = value; *p != '\0'; p++) {
		if (*p == '\r' || *p == '\n' || ((guchar)*p < 0x20 && *p != '\t') || *p == 0x7f) {
			g_set_error(error,
				    G_IO_ERROR,
				    G_IO_ERROR_INVALID_ARGUMENT,
				    "The value of the header %s holds a control character",
				    name);
			return FALSE;
		}
	}
	g_string_append_printf(self->headers, "%s: %s\r\n", name, value);
	return TRUE;
}

/**
 * confab_mcp_http_set_bearer_token:
 * @self: a #ConfabMcpHttp
 * @token: the token, sent as `Authorization: Bearer TOKEN`
 * @error: return location for a #GError
 *
 * Returns: %TRUE if it was taken
 */
gboolean
confab_mcp_http_set_bearer_token(ConfabMcpHttp *self, const gchar *token, GError **error)
{
	g_autofree gchar *value = NULL;
	gboolean ok;

	g_return_val_if_fail(CONFAB_IS_MCP_HTTP(self), FALSE);
	g_return_val_if_fail(token != NULL, FALSE);
	value = g_strconcat("Bearer ", token, NULL);
	ok = confab_mcp_http_add_header(self, "Authorization", value, error);
	memset(value, 0, strlen(value));
	return ok;
}

/**
 * confab_mcp_http_set_oauth:
 * @self: a #ConfabMcpHttp
 * @oauth: (nullable): the server's OAuth authorization
 *
 * With @oauth, requests carry its token (to this server only), and a 401
 * or a 403 `insufficient_scope` goes to it: the request is sent again once
 * it has a new token, or fails with its error ("authorization needed").
 */
void
confab_mcp_http_set_oauth(ConfabMcpHttp *self, ConfabMcpOAuth *oauth)
{
	g_return_if_fail(CONFAB_IS_MCP_HTTP(self));
	g_set_object(&self->oauth, oauth);
}

/**
 * confab_mcp_http_set_listen:
 * @self: a #ConfabMcpHttp
 * @listen: whether to open the server's GET event stream (default %TRUE)
 */
void
confab_mcp_http_set_listen(ConfabMcpHttp *self, gboolean listen)
{
	g_return_if_fail(CONFAB_IS_MCP_HTTP(self));
	self->listen = listen;
}

/**
 * confab_mcp_http_get_session_id:
 * @self: a #ConfabMcpHttp
 *
 * Returns: (nullable): the session id the server gave
 */
const gchar *
confab_mcp_http_get_session_id(ConfabMcpHttp *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_HTTP(self), NULL);
	return self->session_id;
}

/**
 * confab_mcp_http_is_listening:
 * @self: a #ConfabMcpHttp
 *
 * Returns: whether the server's GET event stream is open (or opening)
 */
gboolean
confab_mcp_http_is_listening(ConfabMcpHttp *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_HTTP(self), FALSE);
	return self->listener != NULL && self->listener->got_head &&
	       self->listener->status >= 200 && self->listener->status < 300;
}
