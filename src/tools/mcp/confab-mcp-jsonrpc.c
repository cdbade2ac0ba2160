/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMcpJsonrpc"

#include "config.h"

#include <string.h>

#include "tools/mcp/confab-mcp-jsonrpc.h"
#include "tools/mcp/confab-mcp-line-reader.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/**
 * ConfabMcpJsonrpc:
 *
 * JSON-RPC 2.0 as MCP uses it, whatever the transport: requests get
 * increasing integer ids and a #GTask each, answers find their request by
 * id in any order, notifications from the server are emitted as
 * #ConfabMcpJsonrpc::notification, and requests from the server are
 * answered here (`ping` with an empty result, anything else with -32601).
 *
 * A request ends in exactly one of: its answer (the result, or the
 * server's error as %CONFAB_ERROR_UPSTREAM), its timeout
 * (%G_IO_ERROR_TIMED_OUT), its cancellable (%G_IO_ERROR_CANCELLED), a
 * failed send (the transport's error; %G_IO_ERROR_NOT_CONNECTED for an
 * expired HTTP session), or the transport closing
 * (%G_IO_ERROR_CONNECTION_CLOSED). After a timeout or a cancel the server
 * is sent `notifications/cancelled` (never for `initialize`) and a late
 * answer is ignored.
 *
 * Incoming messages larger than the maximum size are never held; text that
 * is not a JSON object is counted and ignored. Nothing of a message's
 * content is logged: tool output must stay out of the journal.
 */

/* how deep a message may nest; tool schemas are the deepest part */
#define MAX_DEPTH	    128
#define DEFAULT_MAX_PENDING 256
/* a notification not out by then is dropped (HTTP: its POST is abandoned) */
#define NOTIFY_TIMEOUT_MS 30000
/* server error messages are cut to this in our errors */
#define MAX_ERROR_TEXT 512

/* ---------- JSON-RPC ---------- */

typedef struct {
	ConfabMcpJsonrpc *self; /* unowned: the task holds it */
	gint64 id;
	gchar *method;			/* owned */
	GTask *task;			/* owned */
	GSource *timeout_source;	/* owned */
	GSource *cancel_source;		/* owned */
	GCancellable *send_cancellable; /* owned: aborts the exchange (HTTP) */
	guint timeout_ms;
} Pending;

struct _ConfabMcpJsonrpc {
	GObject parent_instance;
	ConfabMcpTransport *transport; /* owned */
	gchar *name;		       /* owned: for the log */
	GMainContext *context;	       /* owned: where everything runs */
	gsize max_message_size;
	guint max_pending;
	gint64 next_id;
	GHashTable *pending; /* owned: &Pending.id -> Pending */
	gboolean closed;
	guint n_malformed;
	guint n_dropped;
	gboolean batches; /* a JSON array is a batch (before 2025-06-18) */
	ConfabMcpRequestFunc request_func;
	gpointer request_data;
};

G_DEFINE_FINAL_TYPE(ConfabMcpJsonrpc, confab_mcp_jsonrpc, G_TYPE_OBJECT)

enum {
	SIGNAL_NOTIFICATION,
	SIGNAL_CLOSED,
	N_SIGNALS,
};

static guint signals[N_SIGNALS];

static void
pending_free(Pending *p)
{
	if (p->timeout_source != NULL) {
		g_source_destroy(p->timeout_source);
		g_source_unref(p->timeout_source);
	}
	if (p->cancel_source != NULL) {
		g_source_destroy(p->cancel_source);
		g_source_unref(p->cancel_source);
	}
	g_clear_object(&p->send_cancellable);
	g_clear_object(&p->task);
	g_free(p->method);
	g_free(p);
}

/* Takes @p out of the table; the caller completes its task. */
static GTask *
pending_steal(ConfabMcpJsonrpc *self, Pending *p, gboolean abort_send)
{
	GTask *task = g_steal_pointer(&p->task);

	g_hash_table_steal(self->pending, &p->id);
	if (abort_send)
		g_cancellable_cancel(p->send_cancellable);
	pending_free(p);
	return task;
}

static void
pending_fail(ConfabMcpJsonrpc *self, Pending *p, GError *error, gboolean abort_send)
{
	g_autoptr(GTask) task = pending_steal(self, p, abort_send);
	g_task_return_error(task, error);
}

static GBytes *
build_message(gint64 id, const gchar *method, JsonNode *params)
{
	GString *out = g_string_sized_new(128);

	g_string_append(out, "{\"jsonrpc\":\"2.0\"");
	if (id > 0)
		g_string_append_printf(out, ",\"id\":%" G_GINT64_FORMAT, id);
	g_string_append(out, ",\"method\":");
	confab_json_append_string(out, method);
	if (params != NULL) {
		g_string_append(out, ",\"params\":");
		confab_json_append_node(out, params);
	}
	g_string_append_c(out, '}');
	return g_string_free_to_bytes(out);
}

static void
send_cancelled(ConfabMcpJsonrpc *self, gint64 id, const gchar *reason)
{
	g_autoptr(JsonNode) params = json_node_new(JSON_NODE_OBJECT);
	JsonObject *object = json_object_new();

	json_object_set_int_member(object, "requestId", id);
	json_object_set_string_member(object, "reason", reason);
	json_node_take_object(params, object);
	confab_mcp_jsonrpc_notify_async(self, "notifications/cancelled", params, NULL, NULL, NULL);
}

/* A request that ends without its answer: the server hears it. */
static void
pending_abandon(ConfabMcpJsonrpc *self, Pending *p, GError *error, const gchar *reason)
{
	gint64 id = p->id;
	gboolean tell = g_strcmp0(p->method, "initialize") != 0;

	/* the notification first: over HTTP, aborting the exchange must not
	 * be the first thing the server sees */
	if (tell && !self->closed)
		send_cancelled(self, id, reason);
	pending_fail(self, p, error, TRUE);
}

static gboolean
on_pending_timeout(gpointer user_data)
{
	Pending *p = user_data;
	ConfabMcpJsonrpc *self = p->self;
	GError *error = g_error_new(G_IO_ERROR,
				    G_IO_ERROR_TIMED_OUT,
				    "The MCP server did not answer %s within %u ms",
				    p->method,
				    p->timeout_ms);

	g_debug("%s: request %" G_GINT64_FORMAT " (%s) timed out", self->name, p->id, p->method);
	pending_abandon(self, p, error, "timeout");
	return G_SOURCE_REMOVE;
}

static gboolean
on_pending_cancelled(GCancellable *cancellable, gpointer user_data)
{
	Pending *p = user_data;
	ConfabMcpJsonrpc *self = p->self;

	g_debug("%s: request %" G_GINT64_FORMAT " (%s) cancelled", self->name, p->id, p->method);
	pending_abandon(self,
			p,
			g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "Cancelled"),
			"cancelled");
	return G_SOURCE_REMOVE;
}

typedef struct {
	ConfabMcpJsonrpc *self; /* owned */
	gint64 id;
} SendContext;

static void
on_request_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
	SendContext *ctx = user_data;
	ConfabMcpJsonrpc *self = ctx->self;
	g_autoptr(GError) error = NULL;
	gboolean ok =
	    confab_mcp_transport_send_finish(CONFAB_MCP_TRANSPORT(source), result, &error);
	Pending *p = g_hash_table_lookup(self->pending, &ctx->id);

	if (p != NULL) {
		if (!ok) {
			g_prefix_error(&error, "Sending %s to the MCP server: ", p->method);
			pending_fail(self, p, g_steal_pointer(&error), FALSE);
		} else if (confab_mcp_transport_get_flags(self->transport) &
			   CONFAB_MCP_TRANSPORT_FLAGS_ANSWER_IN_SEND) {
			pending_fail(self,
				     p,
				     g_error_new(CONFAB_ERROR,
						 CONFAB_ERROR_UPSTREAM,
						 "The MCP server ended its answer to %s without a "
						 "response",
						 p->method),
				     FALSE);
		}
	}
	g_object_unref(ctx->self);
	g_free(ctx);
}

/**
 * confab_mcp_jsonrpc_request_async:
 * @self: a #ConfabMcpJsonrpc
 * @method: the method
 * @params: (nullable): its params, an object
 * @timeout_ms: how long to wait for the answer; 0 for ever
 * @cancellable: (nullable): cancels the request (the server is told)
 * @callback: called with the answer
 * @user_data: data for @callback
 *
 * Sends a request and waits for its answer.
 *
 * Returns: the request's id (what #ConfabMcpRequestFunc's @answering
 *   names), 0 when it failed at once
 */
gint64
confab_mcp_jsonrpc_request_async(ConfabMcpJsonrpc *self,
				 const gchar *method,
				 JsonNode *params,
				 guint timeout_ms,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	g_autoptr(GTask) task = NULL;
	g_autoptr(GBytes) message = NULL;
	Pending *p;
	SendContext *ctx;
	gint64 id;

	g_return_val_if_fail(CONFAB_IS_MCP_JSONRPC(self), 0);
	g_return_val_if_fail(method != NULL, 0);
	g_return_val_if_fail(params == NULL || JSON_NODE_HOLDS_OBJECT(params), 0);

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_mcp_jsonrpc_request_async);
	if (self->closed) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The connection to the MCP server is closed");
		return 0;
	}
	if (g_cancellable_is_cancelled(cancellable)) {
		g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "Cancelled");
		return 0;
	}
	if (g_hash_table_size(self->pending) >= self->max_pending) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_BUSY,
					"Too many requests to the MCP server at once (%u)",
					self->max_pending);
		return 0;
	}
	id = ++self->next_id;
	message = build_message(id, method, params);
	if (g_bytes_get_size(message) > self->max_message_size) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_MESSAGE_TOO_LARGE,
					"The %s request is larger than %" G_GSIZE_FORMAT " bytes",
					method,
					self->max_message_size);
		return 0;
	}

	p = g_new0(Pending, 1);
	p->self = self;
	p->id = id;
	p->method = g_strdup(method);
	p->task = g_steal_pointer(&task);
	p->send_cancellable = g_cancellable_new();
	p->timeout_ms = timeout_ms;
	if (timeout_ms > 0) {
		p->timeout_source = g_timeout_source_new(timeout_ms);
		g_source_set_callback(p->timeout_source, on_pending_timeout, p, NULL);
		g_source_set_static_name(p->timeout_source, "[confab] mcp request timeout");
		g_source_attach(p->timeout_source, self->context);
	}
	if (cancellable != NULL) {
		p->cancel_source = g_cancellable_source_new(cancellable);
		g_source_set_callback(p->cancel_source,
				      G_SOURCE_FUNC(on_pending_cancelled),
				      p,
				      NULL);
		g_source_attach(p->cancel_source, self->context);
	}
	g_hash_table_insert(self->pending, &p->id, p);

	ctx = g_new0(SendContext, 1);
	ctx->self = g_object_ref(self);
	ctx->id = id;
	confab_mcp_transport_send_async(self->transport,
					message,
					p->send_cancellable,
					on_request_sent,
					ctx);
	return id;
}

/**
 * confab_mcp_jsonrpc_request_finish:
 * @self: a #ConfabMcpJsonrpc
 * @result: the result
 * @error: return location for a #GError
 *
 * Returns: (transfer full): the `result` member of the answer
 */
JsonNode *
confab_mcp_jsonrpc_request_finish(ConfabMcpJsonrpc *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

typedef struct {
	GCancellable *cancellable;    /* owned: the send's */
	GSource *timeout_source;      /* owned */
	GSource *outer_cancel_source; /* owned: the caller's cancellable */
} NotifyData;

static void
notify_data_free(NotifyData *data)
{
	g_source_destroy(data->timeout_source);
	g_source_unref(data->timeout_source);
	if (data->outer_cancel_source != NULL) {
		g_source_destroy(data->outer_cancel_source);
		g_source_unref(data->outer_cancel_source);
	}
	g_object_unref(data->cancellable);
	g_free(data);
}

static gboolean
on_notify_timeout(gpointer user_data)
{
	NotifyData *data = user_data;
	g_cancellable_cancel(data->cancellable);
	return G_SOURCE_REMOVE;
}

static gboolean
on_notify_outer_cancelled(GCancellable *cancellable, gpointer user_data)
{
	NotifyData *data = user_data;
	g_cancellable_cancel(data->cancellable);
	return G_SOURCE_REMOVE;
}

static void
on_notification_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	GError *error = NULL;

	if (!confab_mcp_transport_send_finish(CONFAB_MCP_TRANSPORT(source), result, &error)) {
		ConfabMcpJsonrpc *self = g_task_get_source_object(task);
		g_debug("%s: a notification was not sent: %s", self->name, error->message);
		g_task_return_error(task, error);
		return;
	}
	g_task_return_boolean(task, TRUE);
}

/**
 * confab_mcp_jsonrpc_notify_async:
 * @self: a #ConfabMcpJsonrpc
 * @method: the method
 * @params: (nullable): its params, an object
 * @cancellable: (nullable): a #GCancellable
 * @callback: (nullable): called once it is sent
 * @user_data: data for @callback
 *
 * Sends a notification.
 */
void
confab_mcp_jsonrpc_notify_async(ConfabMcpJsonrpc *self,
				const gchar *method,
				JsonNode *params,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	g_autoptr(GTask) task = NULL;
	g_autoptr(GBytes) message = NULL;
	NotifyData *data;

	g_return_if_fail(CONFAB_IS_MCP_JSONRPC(self));
	g_return_if_fail(method != NULL);
	g_return_if_fail(params == NULL || JSON_NODE_HOLDS_OBJECT(params));

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_mcp_jsonrpc_notify_async);
	if (self->closed) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The connection to the MCP server is closed");
		return;
	}
	message = build_message(0, method, params);
	if (g_bytes_get_size(message) > self->max_message_size) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_MESSAGE_TOO_LARGE,
					"The %s notification is larger than %" G_GSIZE_FORMAT
					" bytes",
					method,
					self->max_message_size);
		return;
	}
	/* a server that takes no notification must not hold a connection
	 * (and a slot of the HTTP client) for ever */
	data = g_new0(NotifyData, 1);
	data->cancellable = g_cancellable_new();
	data->timeout_source = g_timeout_source_new(NOTIFY_TIMEOUT_MS);
	g_source_set_callback(data->timeout_source, on_notify_timeout, data, NULL);
	g_source_set_static_name(data->timeout_source, "[confab] mcp notification timeout");
	g_source_attach(data->timeout_source, self->context);
	if (cancellable != NULL) {
		data->outer_cancel_source = g_cancellable_source_new(cancellable);
		g_source_set_callback(data->outer_cancel_source,
				      G_SOURCE_FUNC(on_notify_outer_cancelled),
				      data,
				      NULL);
		g_source_attach(data->outer_cancel_source, self->context);
	}
	g_task_set_task_data(task, data, (GDestroyNotify)notify_data_free);
	confab_mcp_transport_send_async(self->transport,
					message,
					data->cancellable,
					on_notification_sent,
					g_steal_pointer(&task));
}

/**
 * confab_mcp_jsonrpc_notify_finish:
 * @self: a #ConfabMcpJsonrpc
 * @result: the result
 * @error: return location for a #GError
 *
 * Returns: %TRUE if the notification went out
 */
gboolean
confab_mcp_jsonrpc_notify_finish(ConfabMcpJsonrpc *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/* ---------- what arrives ---------- */

static void
answer_server(ConfabMcpJsonrpc *self,
	      JsonNode *id,
	      JsonNode *result,
	      gint code,
	      const gchar *message)
{
	GString *out = g_string_sized_new(96);
	g_autoptr(GBytes) bytes = NULL;

	g_string_append(out, "{\"jsonrpc\":\"2.0\",\"id\":");
	confab_json_append_node(out, id);
	if (message == NULL) {
		g_string_append(out, ",\"result\":");
		if (result != NULL)
			confab_json_append_node(out, result);
		else
			g_string_append(out, "{}");
		g_string_append_c(out, '}');
	} else {
		g_string_append_printf(out, ",\"error\":{\"code\":%d,\"message\":", code);
		confab_json_append_string(out, message);
		g_string_append(out, "}}");
	}
	bytes = g_string_free_to_bytes(out);
	confab_mcp_transport_send_async(self->transport, bytes, NULL, NULL, NULL);
}

/**
 * confab_mcp_jsonrpc_respond:
 * @self: a #ConfabMcpJsonrpc
 * @id: the id of the server's request
 * @result: (nullable): the result (with @message %NULL; %NULL for `{}`)
 * @code: the error code, with @message
 * @message: (nullable): an error message: the answer is an error
 *
 * Answers a request of the server's, one the request function took
 * (confab_mcp_jsonrpc_set_request_func()). Nothing is sent once closed.
 */
void
confab_mcp_jsonrpc_respond(ConfabMcpJsonrpc *self,
			   JsonNode *id,
			   JsonNode *result,
			   gint code,
			   const gchar *message)
{
	g_return_if_fail(CONFAB_IS_MCP_JSONRPC(self));
	g_return_if_fail(id != NULL);
	if (self->closed)
		return;
	answer_server(self, id, result, code, message);
}

/**
 * confab_mcp_jsonrpc_set_request_func:
 * @self: a #ConfabMcpJsonrpc
 * @func: (nullable): offered every server request but `ping`
 * @user_data: data for @func, which must outlive @self or be unset first
 *
 * Requests @func returns %FALSE for (and all of them without one) are
 * answered -32601 "Method not found"; one it takes it answers later with
 * confab_mcp_jsonrpc_respond().
 */
void
confab_mcp_jsonrpc_set_request_func(ConfabMcpJsonrpc *self,
				    ConfabMcpRequestFunc func,
				    gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_MCP_JSONRPC(self));
	self->request_func = func;
	self->request_data = user_data;
}

static gchar *
cut_text(const gchar *text)
{
	const gchar *end;

	if (text == NULL)
		return g_strdup("(no message)");
	if (strlen(text) <= MAX_ERROR_TEXT)
		return g_strdup(text);
	end = g_utf8_find_prev_char(text, text + MAX_ERROR_TEXT + 1);
	return g_strdup_printf("%.*s…", (gint)(end - text), text);
}

static void
handle_answer(ConfabMcpJsonrpc *self, JsonObject *message, JsonNode *id_node)
{
	JsonNode *error_node = json_object_get_member(message, "error");
	JsonNode *result_node = json_object_get_member(message, "result");
	g_autoptr(GTask) task = NULL;
	Pending *p = NULL;
	gint64 id;

	if (JSON_NODE_HOLDS_VALUE(id_node) && json_node_get_value_type(id_node) == G_TYPE_INT64) {
		id = json_node_get_int(id_node);
		p = g_hash_table_lookup(self->pending, &id);
	}
	if (p == NULL) {
		/* a late answer to a request given up, or nonsense */
		g_debug("%s: an answer to no pending request", self->name);
		return;
	}
	if (error_node != NULL && JSON_NODE_HOLDS_OBJECT(error_node)) {
		JsonObject *error = json_node_get_object(error_node);
		JsonNode *code_node = json_object_get_member(error, "code");
		JsonNode *text_node = json_object_get_member(error, "message");
		g_autofree gchar *text =
		    cut_text(text_node != NULL && JSON_NODE_HOLDS_VALUE(text_node) &&
				     json_node_get_value_type(text_node) == G_TYPE_STRING
				 ? json_node_get_string(text_node)
				 : NULL);
		gint64 code = code_node != NULL && JSON_NODE_HOLDS_VALUE(code_node) &&
				      json_node_get_value_type(code_node) == G_TYPE_INT64
				  ? json_node_get_int(code_node)
				  : 0;
		GError *gerror = g_error_new(
		    CONFAB_ERROR,
		    CONFAB_ERROR_UPSTREAM,
		    "The MCP server answered %s with an error: %s (%" G_GINT64_FORMAT ")",
		    p->method,
		    text,
		    code);
		pending_fail(self, p, gerror, FALSE);
		return;
	}
	if (result_node == NULL) {
		pending_fail(self,
			     p,
			     g_error_new(CONFAB_ERROR,
					 CONFAB_ERROR_UPSTREAM,
					 "The MCP server answered %s with neither result nor error",
					 p->method),
			     FALSE);
		return;
	}
	task = pending_steal(self, p, FALSE);
	g_task_return_pointer(task, json_node_ref(result_node), (GDestroyNotify)json_node_unref);
}

/* Which request of ours a message came in answer to (0: none), from the
 * transport's word: only a request still waiting for its answer counts. */
static gint64
pending_answered(ConfabMcpJsonrpc *self, const gchar *answering)
{
	gint64 id;

	if (answering == NULL ||
	    !g_ascii_string_to_signed(answering, 10, 1, G_MAXINT64, &id, NULL) ||
	    !g_hash_table_contains(self->pending, &id))
		return 0;
	return id;
}

static void
handle_server_request(ConfabMcpJsonrpc *self,
		      const gchar *method,
		      JsonNode *params,
		      JsonNode *id,
		      gint64 answering)
{
	if (strcmp(method, "ping") == 0) {
		answer_server(self, id, NULL, 0, NULL);
		return;
	}
	if (self->request_func != NULL &&
	    self->request_func(self,
			       method,
			       params != NULL ? json_node_get_object(params) : NULL,
			       id,
			       answering,
			       self->request_data))
		return;
	g_debug("%s: the server asked for %s, which this client does not offer",
		self->name,
		method);
	answer_server(self, id, NULL, -32601, "Method not found");
}

static void
malformed(ConfabMcpJsonrpc *self, const gchar *why)
{
	self->n_malformed++;
	g_message("%s: ignoring a message from the MCP server: %s", self->name, why);
}

/* One message (an object, else malformed) from the server, on the stream
 * of our request @answering's answer where that is known. */
static void
handle_message(ConfabMcpJsonrpc *self, JsonNode *root, const gchar *answering)
{
	JsonObject *message;
	JsonNode *id;
	JsonNode *method_node;

	if (!JSON_NODE_HOLDS_OBJECT(root)) {
		malformed(self, "it is not a JSON object");
		return;
	}
	message = json_node_get_object(root);
	id = json_object_get_member(message, "id");
	method_node = json_object_get_member(message, "method");
	if (method_node != NULL) {
		const gchar *method;
		JsonNode *params = json_object_get_member(message, "params");

		if (!JSON_NODE_HOLDS_VALUE(method_node) ||
		    json_node_get_value_type(method_node) != G_TYPE_STRING) {
			malformed(self, "its method is not a string");
			return;
		}
		method = json_node_get_string(method_node);
		if (params != NULL && !JSON_NODE_HOLDS_OBJECT(params))
			params = NULL;
		if (id != NULL && !JSON_NODE_HOLDS_NULL(id)) {
			if (!JSON_NODE_HOLDS_VALUE(id) ||
			    (json_node_get_value_type(id) != G_TYPE_INT64 &&
			     json_node_get_value_type(id) != G_TYPE_STRING)) {
				malformed(self, "its id is neither a string nor an integer");
				return;
			}
			handle_server_request(self,
					      method,
					      params,
					      id,
					      pending_answered(self, answering));
			return;
		}
		g_signal_emit(self, signals[SIGNAL_NOTIFICATION], 0, method, params);
		return;
	}
	if (id == NULL || JSON_NODE_HOLDS_NULL(id)) {
		JsonNode *error_node = json_object_get_member(message, "error");
		if (error_node != NULL && JSON_NODE_HOLDS_OBJECT(error_node)) {
			JsonNode *text =
			    json_object_get_member(json_node_get_object(error_node), "message");
			g_autofree gchar *cut =
			    cut_text(text != NULL && JSON_NODE_HOLDS_VALUE(text) &&
					     json_node_get_value_type(text) == G_TYPE_STRING
					 ? json_node_get_string(text)
					 : NULL);
			g_autofree gchar *why = g_strdup_printf("an error without an id: %s", cut);
			malformed(self, why);
			return;
		}
		malformed(self, "it is neither a request, a notification nor an answer");
		return;
	}
	handle_answer(self, message, id);
}

static void
on_transport_message(ConfabMcpTransport *transport,
		     GBytes *bytes,
		     const gchar *answering,
		     gpointer user_data)
{
	ConfabMcpJsonrpc *self = user_data;
	gsize len;
	const gchar *data = g_bytes_get_data(bytes, &len);
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(ConfabMcpJsonrpc) keep = NULL;
	JsonArray *batch;

	if (self->closed)
		return;
	if (len > self->max_message_size) {
		self->n_dropped++;
		g_message("%s: dropping a message of %" G_GSIZE_FORMAT " bytes from the MCP server",
			  self->name,
			  len);
		return;
	}
	root = confab_json_parse(data, len, MAX_DEPTH, &error);
	if (root == NULL) {
		malformed(self, "it is not JSON");
		return;
	}
	/* a handler may drop the last reference to us */
	keep = g_object_ref(self);
	if (!JSON_NODE_HOLDS_ARRAY(root) || !self->batches) {
		handle_message(self, root, answering);
		return;
	}
	/* a batch (2025-03-26 and 2024-11-05): its members one by one, each
	 * answered on its own; a batch inside a batch is not a message */
	batch = json_node_get_array(root);
	if (json_array_get_length(batch) == 0) {
		malformed(self, "it is an empty batch");
		return;
	}
	for (guint i = 0; i < json_array_get_length(batch) && !self->closed; i++)
		handle_message(self, json_array_get_element(batch, i), answering);
}

/* An id at the very start or the very end of a top-level object. */
static gboolean
find_id(const gchar *text, gsize len, gboolean at_end, gint64 *id)
{
	g_autofree gchar *copy = g_strndup(text, len);
	g_autoptr(GMatchInfo) match = NULL;
	g_autoptr(GRegex) regex = NULL;
	g_autofree gchar *digits = NULL;

	if (at_end)
		regex = g_regex_new("[,{]\\s*\"id\"\\s*:\\s*([0-9]{1,18})\\s*}\\s*$",
				    G_REGEX_RAW,
				    0,
				    NULL);
	else
		regex =
		    g_regex_new("^\\s*{\\s*(?:\"jsonrpc\"\\s*:\\s*\"2\\.0\"\\s*,\\s*)?\"id\"\\s*:"
				"\\s*([0-9]{1,18})\\s*,",
				G_REGEX_RAW,
				0,
				NULL);
	if (!g_regex_match(regex, copy, 0, &match))
		return FALSE;
	digits = g_match_info_fetch(match, 1);
	*id = g_ascii_strtoll(digits, NULL, 10);
	return TRUE;
}

static void
on_transport_dropped(ConfabMcpTransport *transport,
		     GBytes *head,
		     GBytes *tail,
		     guint64 size,
		     gpointer user_data)
{
	ConfabMcpJsonrpc *self = user_data;
	gsize head_len, tail_len;
	const gchar *head_data = g_bytes_get_data(head, &head_len);
	const gchar *tail_data = g_bytes_get_data(tail, &tail_len);
	Pending *p = NULL;
	gint64 id;

	self->n_dropped++;
	g_message("%s: dropped a message of %" G_GUINT64_FORMAT
		  " bytes from the MCP server (the limit is %" G_GSIZE_FORMAT ")",
		  self->name,
		  size,
		  self->max_message_size);
	/* servers write "id" first or last: the answer can still fail its
	 * request now rather than at its timeout */
	if (find_id(tail_data, tail_len, TRUE, &id) || find_id(head_data, head_len, FALSE, &id))
		p = g_hash_table_lookup(self->pending, &id);
	if (p != NULL) {
		pending_fail(
		    self,
		    p,
		    g_error_new(G_IO_ERROR,
				G_IO_ERROR_MESSAGE_TOO_LARGE,
				"The MCP server's answer to %s is larger than %" G_GSIZE_FORMAT
				" bytes",
				p->method,
				self->max_message_size),
		    FALSE);
	}
}

static void
fail_all(ConfabMcpJsonrpc *self, const GError *why)
{
	GHashTableIter iter;
	Pending *p;
	g_autoptr(GPtrArray) all = g_ptr_array_new();

	/* a callback may call back into us: take them all out first */
	g_hash_table_iter_init(&iter, self->pending);
	while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&p))
		g_ptr_array_add(all, p);
	for (guint i = 0; i < all->len; i++) {
		p = all->pdata[i];
		pending_fail(self,
			     p,
			     g_error_new(G_IO_ERROR,
					 G_IO_ERROR_CONNECTION_CLOSED,
					 "The MCP server went away before answering %s%s%s",
					 p->method,
					 why != NULL ? ": " : "",
					 why != NULL ? why->message : ""),
			     TRUE);
	}
}

static void
on_transport_closed(ConfabMcpTransport *transport, const GError *error, gpointer user_data)
{
	ConfabMcpJsonrpc *self = user_data;
	g_autoptr(ConfabMcpJsonrpc) keep = g_object_ref(self);

	if (self->closed)
		return;
	self->closed = TRUE;
	if (error != NULL)
		g_message("%s: the MCP server connection closed: %s", self->name, error->message);
	else
		g_debug("%s: the MCP server connection closed", self->name);
	fail_all(self, error);
	g_signal_emit(self, signals[SIGNAL_CLOSED], 0, error);
}

/**
 * confab_mcp_jsonrpc_close:
 * @self: a #ConfabMcpJsonrpc
 *
 * Closes the transport: every pending request fails and
 * #ConfabMcpJsonrpc::closed is emitted.
 */
void
confab_mcp_jsonrpc_close(ConfabMcpJsonrpc *self)
{
	g_return_if_fail(CONFAB_IS_MCP_JSONRPC(self));
	confab_mcp_transport_close(self->transport);
	/* a transport closed already emits nothing more */
	on_transport_closed(self->transport, NULL, self);
}

/**
 * confab_mcp_jsonrpc_is_closed:
 * @self: a #ConfabMcpJsonrpc
 *
 * Returns: whether the transport closed
 */
gboolean
confab_mcp_jsonrpc_is_closed(ConfabMcpJsonrpc *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_JSONRPC(self), TRUE);
	return self->closed;
}

/**
 * confab_mcp_jsonrpc_get_n_pending:
 * @self: a #ConfabMcpJsonrpc
 *
 * Returns: the requests waiting for their answer
 */
guint
confab_mcp_jsonrpc_get_n_pending(ConfabMcpJsonrpc *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_JSONRPC(self), 0);
	return g_hash_table_size(self->pending);
}

/**
 * confab_mcp_jsonrpc_set_batches:
 * @self: a #ConfabMcpJsonrpc
 * @batches: whether a JSON array from the server is a batch
 *
 * Protocol versions before 2025-06-18 (2025-03-26, 2024-11-05) let a
 * server send JSON-RPC batches, which a client must take: each member is
 * handled as a message of its own. Later versions have no batches: an
 * array is malformed (the default).
 */
void
confab_mcp_jsonrpc_set_batches(ConfabMcpJsonrpc *self, gboolean batches)
{
	g_return_if_fail(CONFAB_IS_MCP_JSONRPC(self));
	self->batches = batches;
}

/**
 * confab_mcp_jsonrpc_get_n_malformed:
 * @self: a #ConfabMcpJsonrpc
 *
 * Returns: the messages ignored because they were not JSON-RPC
 */
guint
confab_mcp_jsonrpc_get_n_malformed(ConfabMcpJsonrpc *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_JSONRPC(self), 0);
	return self->n_malformed;
}

/**
 * confab_mcp_jsonrpc_get_n_dropped:
 * @self: a #ConfabMcpJsonrpc
 *
 * Returns: the messages dropped because they were too large
 */
guint
confab_mcp_jsonrpc_get_n_dropped(ConfabMcpJsonrpc *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_JSONRPC(self), 0);
	return self->n_dropped;
}

/**
 * confab_mcp_jsonrpc_get_transport:
 * @self: a #ConfabMcpJsonrpc
 *
 * Returns: (transfer none): its transport
 */
ConfabMcpTransport *
confab_mcp_jsonrpc_get_transport(ConfabMcpJsonrpc *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_JSONRPC(self), NULL);
	return self->transport;
}

/**
 * confab_mcp_jsonrpc_set_max_message_size:
 * @self: a #ConfabMcpJsonrpc
 * @max_bytes: the largest message sent or taken in, here and in the
 *   transport
 */
void
confab_mcp_jsonrpc_set_max_message_size(ConfabMcpJsonrpc *self, gsize max_bytes)
{
	g_return_if_fail(CONFAB_IS_MCP_JSONRPC(self));
	g_return_if_fail(max_bytes > 0);
	self->max_message_size = max_bytes;
	confab_mcp_transport_set_max_message_size(self->transport, max_bytes);
}

/**
 * confab_mcp_jsonrpc_get_max_message_size:
 * @self: a #ConfabMcpJsonrpc
 *
 * Returns: the largest message sent or taken in
 */
gsize
confab_mcp_jsonrpc_get_max_message_size(ConfabMcpJsonrpc *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_JSONRPC(self), 0);
	return self->max_message_size;
}

/**
 * confab_mcp_jsonrpc_set_max_pending:
 * @self: a #ConfabMcpJsonrpc
 * @max_pending: the most requests waiting at once; more fail at once
 */
void
confab_mcp_jsonrpc_set_max_pending(ConfabMcpJsonrpc *self, guint max_pending)
{
	g_return_if_fail(CONFAB_IS_MCP_JSONRPC(self));
	g_return_if_fail(max_pending > 0);
	self->max_pending = max_pending;
}

static void
confab_mcp_jsonrpc_dispose(GObject *object)
{
	ConfabMcpJsonrpc *self = CONFAB_MCP_JSONRPC(object);

	if (self->transport != NULL) {
		g_signal_handlers_disconnect_by_data(self->transport, self);
		/* pending requests hold us: none is left */
		confab_mcp_transport_close(self->transport);
		g_clear_object(&self->transport);
	}
	self->closed = TRUE;
	G_OBJECT_CLASS(confab_mcp_jsonrpc_parent_class)->dispose(object);
}

static void
confab_mcp_jsonrpc_finalize(GObject *object)
{
	ConfabMcpJsonrpc *self = CONFAB_MCP_JSONRPC(object);

	g_assert(g_hash_table_size(self->pending) == 0);
	g_hash_table_unref(self->pending);
	g_main_context_unref(self->context);
	g_free(self->name);
	G_OBJECT_CLASS(confab_mcp_jsonrpc_parent_class)->finalize(object);
}

static void
confab_mcp_jsonrpc_class_init(ConfabMcpJsonrpcClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->dispose = confab_mcp_jsonrpc_dispose;
	object_class->finalize = confab_mcp_jsonrpc_finalize;

	/**
	 * ConfabMcpJsonrpc::notification:
	 * @self: the #ConfabMcpJsonrpc
	 * @method: the notification's method
	 * @params: (nullable): its params, when they are an object
	 */
	signals[SIGNAL_NOTIFICATION] = g_signal_new("notification",
						    G_TYPE_FROM_CLASS(klass),
						    G_SIGNAL_RUN_LAST,
						    0,
						    NULL,
						    NULL,
						    NULL,
						    G_TYPE_NONE,
						    2,
						    G_TYPE_STRING,
						    JSON_TYPE_NODE);
	/**
	 * ConfabMcpJsonrpc::closed:
	 * @self: the #ConfabMcpJsonrpc
	 * @error: (nullable): why, or %NULL after confab_mcp_jsonrpc_close()
	 *
	 * The transport closed; every pending request has failed.
	 */
	signals[SIGNAL_CLOSED] = g_signal_new("closed",
					      G_TYPE_FROM_CLASS(klass),
					      G_SIGNAL_RUN_LAST,
					      0,
					      NULL,
					      NULL,
					      NULL,
					      G_TYPE_NONE,
					      1,
					      G_TYPE_ERROR);
}

static void
confab_mcp_jsonrpc_init(ConfabMcpJsonrpc *self)
{
	self->pending = g_hash_table_new(g_int64_hash, g_int64_equal);
	self->max_message_size = CONFAB_MCP_DEFAULT_MAX_MESSAGE_SIZE;
	self->max_pending = DEFAULT_MAX_PENDING;
	self->context = g_main_context_ref_thread_default();
}

/**
 * confab_mcp_jsonrpc_new:
 * @transport: (transfer none): how the messages travel; the new object
 *   owns it from now on and closes it when it goes
 * @name: the server's name, for the log
 *
 * Returns: (transfer full): a JSON-RPC peer in the thread-default main
 *   context
 */
ConfabMcpJsonrpc *
confab_mcp_jsonrpc_new(ConfabMcpTransport *transport, const gchar *name)
{
	ConfabMcpJsonrpc *self;

	g_return_val_if_fail(CONFAB_IS_MCP_TRANSPORT(transport), NULL);
	g_return_val_if_fail(name != NULL, NULL);

	self = g_object_new(CONFAB_TYPE_MCP_JSONRPC, NULL);
	self->transport = g_object_ref(transport);
	self->name = g_strdup(name);
	self->closed = confab_mcp_transport_is_closed(transport);
	g_signal_connect(transport, "message", G_CALLBACK(on_transport_message), self);
	g_signal_connect(transport, "dropped", G_CALLBACK(on_transport_dropped), self);
	g_signal_connect(transport, "closed", G_CALLBACK(on_transport_closed), self);
	confab_mcp_transport_set_max_message_size(transport, self->max_message_size);
	return self;
}
