/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMcpClient"

#include "config.h"

#include <string.h>

#include "tools/mcp/confab-mcp-client.h"
#include "tools/mcp/confab-mcp-elicitation.h"
#include "tools/mcp/confab-mcp-stdio.h"
#include "tools/mcp/confab-mcp-tool.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/**
 * ConfabMcpClient:
 *
 * An MCP client for one tool server, over a #ConfabMcpTransport:
 * confab_mcp_client_start_async() initializes the session (protocol
 * 2025-11-25 asked; 2025-11-25, 2025-06-18, 2025-03-26 and, over stdio,
 * 2024-11-05 accepted and spoken by their rules),
 * confab_mcp_client_list_tools_async() lists the tools (every page, cached
 * until the server says `notifications/tools/list_changed`, which also
 * emits #ConfabMcpClient::tools-changed) and
 * confab_mcp_client_call_tool_async() calls one, with a timeout, progress
 * and cancellation (the server is sent `notifications/cancelled` on both).
 *
 * An HTTP session that expired is renewed once, transparently: the request
 * that met the 404 was not run by the server, so it is sent again in the new
 * session. When the server dies or the transport closes, every call in
 * flight fails at once and #ConfabMcpClient::closed is emitted; a closed
 * client stays closed (its owner makes a new one to restart the server).
 */

#define DEFAULT_START_TIMEOUT_MS 30000
#define MAX_PAGES		 64
#define MAX_TOOLS		 1024
#define MAX_TOOL_NAME		 128
#define MAX_DESCRIPTION		 16384
#define MAX_INSTRUCTIONS	 16384
#define MAX_DEPTH		 64

typedef enum {
	STATE_NEW,
	STATE_STARTING,
	STATE_READY,
	STATE_CLOSED,
} State;

typedef void (*RenewedFunc)(ConfabMcpClient *self, const GError *error, gpointer op);

typedef struct {
	RenewedFunc func;
	gpointer op;
} Renewal;

typedef struct _ListOp ListOp;
typedef struct _Call Call;

struct _ConfabMcpClient {
	GObject parent_instance;
	gchar *name;		       /* owned */
	ConfabMcpJsonrpc *rpc;	       /* owned */
	ConfabMcpTransport *transport; /* unowned: the rpc's */
	GMainContext *context;	       /* owned */
	State state;
	guint start_timeout_ms;
	gchar *protocol_version;	 /* owned */
	gchar *server_name;		 /* owned */
	gchar *server_version;		 /* owned */
	gchar *instructions;		 /* owned */
	gboolean has_tools;		 /* the server declared the tools capability */
	ConfabMcpElicitFunc elicit_func; /* nullable: no elicitation declared */
	gpointer elicit_data;
	GDestroyNotify elicit_notify;
	guint session; /* bumped by every initialize */
	gboolean renewing;
	GQueue renewals;	/* of Renewal */
	GPtrArray *tools;	/* owned, nullable: the cached list */
	guint tools_generation; /* bumped when the list changes */
	ListOp *listing;	/* owned, nullable: in flight */
	GHashTable *calls;	/* progress token -> Call, unowned */
	gint64 next_token;
};

G_DEFINE_FINAL_TYPE(ConfabMcpClient, confab_mcp_client, G_TYPE_OBJECT)

enum {
	SIGNAL_TOOLS_CHANGED,
	SIGNAL_CLOSED,
	N_SIGNALS,
};

static guint signals[N_SIGNALS];

/* ---------- sessions ---------- */

typedef struct {
	GCancellable *cancellable;    /* owned: the whole start */
	GSource *timeout_source;      /* owned */
	GSource *outer_cancel_source; /* owned: the caller's cancellable */
	gboolean timed_out;
	gboolean renew;
} InitData;

static void
init_data_free(InitData *data)
{
	if (data->timeout_source != NULL) {
		g_source_destroy(data->timeout_source);
		g_source_unref(data->timeout_source);
	}
	if (data->outer_cancel_source != NULL) {
		g_source_destroy(data->outer_cancel_source);
		g_source_unref(data->outer_cancel_source);
	}
	g_object_unref(data->cancellable);
	g_free(data);
}

static void
init_fail(GTask *task, GError *error)
{
	InitData *data = g_task_get_task_data(task);
	ConfabMcpClient *self = g_task_get_source_object(task);

	if (data->timed_out && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
		g_clear_error(&error);
		error = g_error_new(G_IO_ERROR,
				    G_IO_ERROR_TIMED_OUT,
				    "The MCP server %s did not initialize within %u ms",
				    self->name,
				    self->start_timeout_ms);
	}
	g_task_return_error(task, error);
}

static gboolean
on_init_timeout(gpointer user_data)
{
	InitData *data = user_data;

	data->timed_out = TRUE;
	g_cancellable_cancel(data->cancellable);
	return G_SOURCE_REMOVE;
}

static gboolean
on_init_outer_cancelled(GCancellable *cancellable, gpointer user_data)
{
	InitData *data = user_data;

	g_cancellable_cancel(data->cancellable);
	return G_SOURCE_REMOVE;
}

static void
on_initialized_sent(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabMcpClient *self = g_task_get_source_object(task);
	GError *error = NULL;

	if (!confab_mcp_jsonrpc_notify_finish(CONFAB_MCP_JSONRPC(source), result, &error)) {
		init_fail(task, error);
		return;
	}
	self->session++;
	if (self->state == STATE_STARTING)
		self->state = STATE_READY;
	g_debug("%s: MCP session ready (%s, %s)",
		self->name,
		self->protocol_version,
		self->server_name != NULL ? self->server_name : "unnamed server");
	g_task_return_boolean(task, TRUE);
}

/* Whether Confab speaks @version, the one the server answered, over its
 * transport: 2025-11-25, 2025-06-18 and 2025-03-26 over either, 2024-11-05
 * over stdio only (over HTTP it meant the HTTP+SSE transport, since
 * replaced by streamable HTTP). */
static gboolean
version_ok(ConfabMcpClient *self, const gchar *version, GError **error)
{
	static const gchar *const spoken[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};
	g_autofree gchar *shown = NULL;

	if (version != NULL && g_strv_contains(spoken, version))
		return TRUE;
	if (g_strcmp0(version, "2024-11-05") == 0) {
		if (CONFAB_IS_MCP_STDIO(self->transport))
			return TRUE;
		g_set_error(error,
			    G_IO_ERROR,
			    G_IO_ERROR_NOT_SUPPORTED,
			    "The MCP server %s speaks protocol version 2024-11-05, whose HTTP "
			    "transport (HTTP+SSE) Confab does not speak; Confab speaks it over "
			    "stdio only",
			    self->name);
		return FALSE;
	}
	shown = g_strndup(version != NULL ? version : "none", 40);
	g_set_error(error,
		    G_IO_ERROR,
		    G_IO_ERROR_NOT_SUPPORTED,
		    "The MCP server %s speaks protocol version %s; Confab speaks 2025-11-25, "
		    "2025-06-18, 2025-03-26 and, over stdio, 2024-11-05",
		    self->name,
		    shown);
	return FALSE;
}

/* Whether an InitializeResult declares `capabilities.tools` (an object;
 * what else it says does not matter here). */
static gboolean
declares_tools(JsonObject *answer)
{
	JsonNode *capabilities = json_object_get_member(answer, "capabilities");
	JsonNode *tools;

	if (capabilities == NULL || !JSON_NODE_HOLDS_OBJECT(capabilities))
		return FALSE;
	tools = json_object_get_member(json_node_get_object(capabilities), "tools");
	return tools != NULL && JSON_NODE_HOLDS_OBJECT(tools);
}

static void
on_initialize_answer(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabMcpClient *self = g_task_get_source_object(task);
	InitData *data = g_task_get_task_data(task);
	GError *error = NULL;
	g_autoptr(JsonNode) answer =
	    confab_mcp_jsonrpc_request_finish(CONFAB_MCP_JSONRPC(source), result, &error);
	JsonObject *object;
	JsonNode *info_node;
	const gchar *version;
	const gchar *instructions;

	if (answer == NULL) {
		init_fail(task, error);
		return;
	}
	if (!JSON_NODE_HOLDS_OBJECT(answer)) {
		init_fail(task,
			  g_error_new(CONFAB_ERROR,
				      CONFAB_ERROR_UPSTREAM,
				      "The MCP server %s answered initialize with a result that is "
				      "not an object",
				      self->name));
		return;
	}
	object = json_node_get_object(answer);
	version = confab_json_get_string(object, "protocolVersion");
	if (!version_ok(self, version, &error)) {
		init_fail(task, error);
		return;
	}
	/* before 2025-06-18 a server may send batches */
	confab_mcp_jsonrpc_set_batches(self->rpc,
				       g_strcmp0(version, "2025-03-26") == 0 ||
					   g_strcmp0(version, "2024-11-05") == 0);
	g_free(self->protocol_version);
	self->protocol_version = g_strdup(version);
	info_node = json_object_get_member(object, "serverInfo");
	if (info_node != NULL && JSON_NODE_HOLDS_OBJECT(info_node)) {
		JsonObject *info = json_node_get_object(info_node);
		g_free(self->server_name);
		self->server_name = g_strndup(confab_json_get_string(info, "name"), 256);
		g_free(self->server_version);
		self->server_version = g_strndup(confab_json_get_string(info, "version"), 64);
	}
	self->has_tools = declares_tools(object);
	instructions = confab_json_get_string(object, "instructions");
	g_free(self->instructions);
	self->instructions = g_strndup(instructions, MAX_INSTRUCTIONS);

	confab_mcp_transport_session_ready(self->transport, version);
	confab_mcp_jsonrpc_notify_async(self->rpc,
					"notifications/initialized",
					NULL,
					data->cancellable,
					on_initialized_sent,
					g_steal_pointer(&task));
}

static JsonNode *
initialize_params(ConfabMcpClient *self)
{
	JsonNode *params = json_node_new(JSON_NODE_OBJECT);
	JsonObject *object = json_object_new();
	JsonObject *info = json_object_new();
	JsonObject *capabilities = json_object_new();

	json_object_set_string_member(object, "protocolVersion", CONFAB_MCP_PROTOCOL_VERSION);
	/* no roots or sampling; elicitation (form mode) when someone answers */
	if (self->elicit_func != NULL) {
		JsonObject *elicitation = json_object_new();
		json_object_set_object_member(elicitation, "form", json_object_new());
		json_object_set_object_member(capabilities, "elicitation", elicitation);
	}
	json_object_set_object_member(object, "capabilities", capabilities);
	json_object_set_string_member(info, "name", "confab");
	json_object_set_string_member(info, "version", PACKAGE_VERSION);
	json_object_set_object_member(object, "clientInfo", info);
	json_node_take_object(params, object);
	return params;
}

/* initialize, then notifications/initialized, within the start timeout */
static void
initialize_async(ConfabMcpClient *self,
		 gboolean renew,
		 GCancellable *cancellable,
		 GAsyncReadyCallback callback,
		 gpointer user_data)
{
	GTask *task = g_task_new(self, NULL, callback, user_data);
	InitData *data = g_new0(InitData, 1);
	g_autoptr(JsonNode) params = initialize_params(self);

	data->renew = renew;
	data->cancellable = g_cancellable_new();
	g_task_set_task_data(task, data, (GDestroyNotify)init_data_free);
	if (self->start_timeout_ms > 0) {
		data->timeout_source = g_timeout_source_new(self->start_timeout_ms);
		g_source_set_callback(data->timeout_source, on_init_timeout, data, NULL);
		g_source_attach(data->timeout_source, self->context);
	}
	if (cancellable != NULL) {
		data->outer_cancel_source = g_cancellable_source_new(cancellable);
		g_source_set_callback(data->outer_cancel_source,
				      G_SOURCE_FUNC(on_init_outer_cancelled),
				      data,
				      NULL);
		g_source_attach(data->outer_cancel_source, self->context);
	}
	confab_mcp_jsonrpc_request_async(self->rpc,
					 "initialize",
					 params,
					 0,
					 data->cancellable,
					 on_initialize_answer,
					 task);
}

static gboolean
initialize_finish(ConfabMcpClient *self, GAsyncResult *result, GError **error)
{
	return g_task_propagate_boolean(G_TASK(result), error);
}

static void
on_started(GObject *source, GAsyncResult *result, gpointer user_data);

static void
on_transport_started(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabMcpClient *self = g_task_get_source_object(task);
	GCancellable *cancellable;
	GError *error = NULL;

	if (!confab_mcp_transport_start_finish(CONFAB_MCP_TRANSPORT(source), result, &error)) {
		confab_mcp_client_close(self);
		g_task_return_error(task, error);
		return;
	}
	if (self->state != STATE_STARTING) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The MCP client %s was closed while starting",
					self->name);
		return;
	}
	cancellable = g_task_get_cancellable(task);
	initialize_async(self, FALSE, cancellable, on_started, g_steal_pointer(&task));
}

static void
on_started(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabMcpClient *self = CONFAB_MCP_CLIENT(source);
	GError *error = NULL;

	if (!initialize_finish(self, result, &error)) {
		/* a server half started is of no use */
		confab_mcp_client_close(self);
		g_task_return_error(task, error);
		return;
	}
	g_task_return_boolean(task, TRUE);
}

/**
 * confab_mcp_client_start_async:
 * @self: a #ConfabMcpClient
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once the session is ready, or failed
 * @user_data: data for @callback
 *
 * Starts the transport (a stdio server is spawned), sends `initialize`
 * and `notifications/initialized`. Fails with %G_IO_ERROR_NOT_SUPPORTED
 * when the server answers a protocol version Confab does not speak (it
 * speaks 2025-11-25, 2025-06-18, 2025-03-26 and, over stdio, 2024-11-05), and with
 * %G_IO_ERROR_TIMED_OUT after the start timeout (30 s). On failure the client is closed.
 */
void
confab_mcp_client_start_async(ConfabMcpClient *self,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data)
{
	g_autoptr(GTask) task = NULL;

	g_return_if_fail(CONFAB_IS_MCP_CLIENT(self));

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_mcp_client_start_async);
	if (self->state != STATE_NEW) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_FAILED,
					"The MCP client %s was started already",
					self->name);
		return;
	}
	self->state = STATE_STARTING;
	confab_mcp_transport_start_async(self->transport,
					 cancellable,
					 on_transport_started,
					 g_steal_pointer(&task));
}

/**
 * confab_mcp_client_start_finish:
 * @self: a #ConfabMcpClient
 * @result: the result
 * @error: return location for a #GError
 *
 * Returns: %TRUE if the session is ready
 */
gboolean
confab_mcp_client_start_finish(ConfabMcpClient *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

static void
on_renewed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConfabMcpClient *self = CONFAB_MCP_CLIENT(source);
	g_autoptr(GError) error = NULL;
	GQueue renewals = G_QUEUE_INIT;
	Renewal *renewal;

	self->renewing = FALSE;
	if (!initialize_finish(self, result, &error))
		g_message("%s: renewing the MCP session: %s", self->name, error->message);
	/* the tools of the new session are listed anew */
	g_clear_pointer(&self->tools, g_ptr_array_unref);
	self->tools_generation++;
	/* they may start another renewal: take them all first */
	renewals = self->renewals;
	g_queue_init(&self->renewals);
	while ((renewal = g_queue_pop_head(&renewals)) != NULL) {
		renewal->func(self, error, renewal->op);
		g_free(renewal);
	}
}

/* The session @failed_session expired (HTTP 404): a new one, then @func. */
static void
renew_session(ConfabMcpClient *self, guint failed_session, RenewedFunc func, gpointer op)
{
	Renewal *renewal;

	if (self->state != STATE_READY) {
		g_autoptr(GError) error = g_error_new(G_IO_ERROR,
						      G_IO_ERROR_CONNECTION_CLOSED,
						      "The MCP client %s is closed",
						      self->name);
		func(self, error, op);
		return;
	}
	if (self->session != failed_session && !self->renewing) {
		/* another call renewed it meanwhile */
		func(self, NULL, op);
		return;
	}
	renewal = g_new0(Renewal, 1);
	renewal->func = func;
	renewal->op = op;
	g_queue_push_tail(&self->renewals, renewal);
	if (!self->renewing) {
		g_message("%s: the MCP session expired; starting a new one", self->name);
		self->renewing = TRUE;
		initialize_async(self, TRUE, NULL, on_renewed, NULL);
	}
}

static gboolean
check_ready(ConfabMcpClient *self, GTask *task)
{
	if (self->state == STATE_READY)
		return TRUE;
	if (self->state == STATE_CLOSED)
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The MCP client %s is closed",
					self->name);
	else
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_NOT_INITIALIZED,
					"The MCP client %s is not started",
					self->name);
	return FALSE;
}

/* ---------- requests of the server's ---------- */

static gpointer
call_data_by_request(ConfabMcpClient *self, gint64 request_id);

static gboolean
on_server_request(ConfabMcpJsonrpc *rpc,
		  const gchar *method,
		  JsonObject *params,
		  JsonNode *id,
		  gint64 answering,
		  gpointer user_data)
{
	ConfabMcpClient *self = user_data;
	g_autoptr(ConfabMcpElicitation) elicitation = NULL;
	g_autoptr(GError) error = NULL;

	if (strcmp(method, "elicitation/create") != 0 || self->elicit_func == NULL)
		return FALSE;
	elicitation = confab_mcp_elicitation_new(rpc, id, self->name, params, &error);
	if (elicitation == NULL) {
		g_message("%s: refusing an elicitation: %s", self->name, error->message);
		confab_mcp_jsonrpc_respond(rpc, id, NULL, -32602, error->message);
		return TRUE;
	}
	/* the handler keeps a reference until it answers; dropped unanswered,
	 * the server is answered cancel */
	self->elicit_func(self,
			  elicitation,
			  call_data_by_request(self, answering),
			  self->elicit_data);
	return TRUE;
}

/**
 * confab_mcp_client_set_elicitation_handler:
 * @self: a #ConfabMcpClient, not started yet
 * @func: (nullable): called with each `elicitation/create` of the server
 * @user_data: data for @func
 * @notify: (nullable): frees @user_data
 *
 * With a handler, the client declares the `elicitation` capability (form
 * mode) in `initialize`, and the server's `elicitation/create` requests go
 * to @func, which answers with confab_mcp_elicitation_respond() (taking a
 * reference to answer later). Requests that are not forms or whose schema
 * MCP does not allow are answered -32602 without it. Without one (the
 * default), the capability is not declared and such requests are refused.
 */
void
confab_mcp_client_set_elicitation_handler(ConfabMcpClient *self,
					  ConfabMcpElicitFunc func,
					  gpointer user_data,
					  GDestroyNotify notify)
{
	g_return_if_fail(CONFAB_IS_MCP_CLIENT(self));
	g_return_if_fail(self->state == STATE_NEW);
	if (self->elicit_notify != NULL)
		self->elicit_notify(self->elicit_data);
	self->elicit_func = func;
	self->elicit_data = user_data;
	self->elicit_notify = notify;
}

/* ---------- tools/list ---------- */

typedef struct {
	GTask *task;		/* owned */
	GSource *cancel_source; /* owned */
	ListOp *op;		/* unowned */
} ListWaiter;

struct _ListOp {
	ConfabMcpClient *self; /* unowned: it owns us */
	GPtrArray *tools;      /* owned */
	GHashTable *names;     /* owned: set */
	gchar *cursor;	       /* owned */
	guint pages;
	guint generation;
	guint session;
	gboolean retried;
	GQueue waiters; /* of ListWaiter */
};

static void
list_waiter_free(ListWaiter *waiter)
{
	if (waiter->cancel_source != NULL) {
		g_source_destroy(waiter->cancel_source);
		g_source_unref(waiter->cancel_source);
	}
	g_clear_object(&waiter->task);
	g_free(waiter);
}

static void
list_op_free(ListOp *op)
{
	g_assert(g_queue_is_empty(&op->waiters));
	g_ptr_array_unref(op->tools);
	g_hash_table_unref(op->names);
	g_free(op->cursor);
	g_free(op);
}

/* The listing ended: every waiter hears @tools or @error. */
static void
list_op_finish(ConfabMcpClient *self, GPtrArray *tools, const GError *error)
{
	ListOp *op = g_steal_pointer(&self->listing);
	ListWaiter *waiter;

	while ((waiter = g_queue_pop_head(&op->waiters)) != NULL) {
		g_autoptr(GTask) task = g_steal_pointer(&waiter->task);
		list_waiter_free(waiter);
		if (tools != NULL)
			g_task_return_pointer(task,
					      g_ptr_array_ref(tools),
					      (GDestroyNotify)g_ptr_array_unref);
		else
			g_task_return_error(task, g_error_copy(error));
	}
	list_op_free(op);
}

static gchar *
cut_string(const gchar *text, gsize max)
{
	const gchar *end;

	if (text == NULL)
		return NULL;
	if (strlen(text) <= max)
		return g_strdup(text);
	end = g_utf8_find_prev_char(text, text + max + 1);
	return g_strndup(text, end - text);
}

static gboolean
tool_name_ok(const gchar *name)
{
	gsize len = name != NULL ? strlen(name) : 0;

	if (len == 0 || len > MAX_TOOL_NAME || !g_utf8_validate(name, len, NULL))
		return FALSE;
	for (const gchar *p = name; *p != '\0'; p++) {
		if ((guchar)*p < 0x20 || *p == 0x7f)
			return FALSE;
	}
	return TRUE;
}

/* One page of tools into @op; FALSE if the page was not a tool list. */
static gboolean
list_take_page(ListOp *op, JsonObject *page)
{
	ConfabMcpClient *self = op->self;
	JsonNode *tools_node = json_object_get_member(page, "tools");
	JsonArray *tools;

	if (tools_node == NULL || !JSON_NODE_HOLDS_ARRAY(tools_node))
		return FALSE;
	tools = json_node_get_array(tools_node);
	for (guint i = 0; i < json_array_get_length(tools); i++) {
		JsonNode *node = json_array_get_element(tools, i);
		JsonObject *object;
		JsonNode *schema;
		const gchar *name;
		ConfabMcpTool *tool;

		if (op->tools->len >= MAX_TOOLS) {
			g_message(
			    "%s: the MCP server lists more than %u tools; the rest are ignored",
			    self->name,
			    MAX_TOOLS);
			return TRUE;
		}
		if (!JSON_NODE_HOLDS_OBJECT(node))
			continue;
		object = json_node_get_object(node);
		name = confab_json_get_string(object, "name");
		if (!tool_name_ok(name)) {
			g_message("%s: ignoring a tool without a usable name", self->name);
			continue;
		}
		if (g_hash_table_contains(op->names, name)) {
			g_message("%s: ignoring a second tool named %s", self->name, name);
			continue;
		}
		tool = g_new0(ConfabMcpTool, 1);
		tool->name = g_strdup(name);
		tool->title = cut_string(confab_json_get_string(object, "title"), 256);
		tool->description =
		    cut_string(confab_json_get_string(object, "description"), MAX_DESCRIPTION);
		schema = json_object_get_member(object, "inputSchema");
		tool->input_schema = schema != NULL && JSON_NODE_HOLDS_OBJECT(schema)
					 ? confab_json_to_string(schema)
					 : g_strdup("{\"type\":\"object\"}");
		g_hash_table_add(op->names, tool->name);
		g_ptr_array_add(op->tools, tool);
	}
	return TRUE;
}

static void
list_next_page(ConfabMcpClient *self);

static void
list_renewed(ConfabMcpClient *self, const GError *error, gpointer user_data)
{
	ListOp *op = self->listing;

	g_assert(op == user_data);
	if (error != NULL) {
		list_op_finish(self, NULL, error);
		return;
	}
	/* from the start, in the new session */
	g_ptr_array_set_size(op->tools, 0);
	g_hash_table_remove_all(op->names);
	g_clear_pointer(&op->cursor, g_free);
	op->pages = 0;
	op->session = self->session;
	op->generation = self->tools_generation;
	list_next_page(self);
}

static void
on_list_page(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConfabMcpClient) self = user_data;
	ListOp *op = self->listing;
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) page =
	    confab_mcp_jsonrpc_request_finish(CONFAB_MCP_JSONRPC(source), result, &error);
	const gchar *next;

	g_assert(op != NULL);
	if (page == NULL) {
		if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED) && !op->retried) {
			op->retried = TRUE;
			renew_session(self, op->session, list_renewed, op);
			return;
		}
		list_op_finish(self, NULL, error);
		return;
	}
	if (!JSON_NODE_HOLDS_OBJECT(page) || !list_take_page(op, json_node_get_object(page))) {
		g_autoptr(GError) bad = g_error_new(CONFAB_ERROR,
						    CONFAB_ERROR_UPSTREAM,
						    "The MCP server %s answered tools/list without "
						    "a list of tools",
						    self->name);
		list_op_finish(self, NULL, bad);
		return;
	}
	op->pages++;
	next = confab_json_get_string(json_node_get_object(page), "nextCursor");
	if (next != NULL && op->tools->len < MAX_TOOLS) {
		if (op->pages >= MAX_PAGES) {
			g_message("%s: the MCP server's tool list has more than %u pages; the rest "
				  "are ignored",
				  self->name,
				  MAX_PAGES);
		} else if (g_strcmp0(next, op->cursor) == 0) {
			g_message("%s: the MCP server gave the same cursor twice", self->name);
		} else {
			g_free(op->cursor);
			op->cursor = g_strdup(next);
			list_next_page(self);
			return;
		}
	}
	/* a list that changed while it was read is not kept */
	if (op->generation == self->tools_generation) {
		g_clear_pointer(&self->tools, g_ptr_array_unref);
		self->tools = g_ptr_array_ref(op->tools);
	}
	{
		g_autoptr(GPtrArray) tools = g_ptr_array_ref(op->tools);
		list_op_finish(self, tools, NULL);
	}
}

static void
list_next_page(ConfabMcpClient *self)
{
	ListOp *op = self->listing;
	g_autoptr(JsonNode) params = NULL;

	if (op->cursor != NULL) {
		JsonObject *object = json_object_new();
		json_object_set_string_member(object, "cursor", op->cursor);
		params = json_node_new(JSON_NODE_OBJECT);
		json_node_take_object(params, object);
	}
	confab_mcp_jsonrpc_request_async(self->rpc,
					 "tools/list",
					 params,
					 self->start_timeout_ms,
					 NULL,
					 on_list_page,
					 g_object_ref(self));
}

static gboolean
on_list_waiter_cancelled(GCancellable *cancellable, gpointer user_data)
{
	ListWaiter *waiter = user_data;
	g_autoptr(GTask) task = g_steal_pointer(&waiter->task);

	/* the listing goes on for the others, and the cache */
	g_queue_remove(&waiter->op->waiters, waiter);
	list_waiter_free(waiter);
	g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "Cancelled");
	return G_SOURCE_REMOVE;
}

/**
 * confab_mcp_client_list_tools_async:
 * @self: a #ConfabMcpClient
 * @cancellable: (nullable): a #GCancellable
 * @callback: called with the tools
 * @user_data: data for @callback
 *
 * Lists the server's tools, following `nextCursor` to the end (at most 64
 * pages and 1024 tools). The list is cached until the server says it
 * changed; calls while a listing runs share it. A server that declared no
 * `tools` capability is not asked: its list is empty.
 */
void
confab_mcp_client_list_tools_async(ConfabMcpClient *self,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data)
{
	g_autoptr(GTask) task = NULL;
	ListWaiter *waiter;
	gboolean start;

	g_return_if_fail(CONFAB_IS_MCP_CLIENT(self));

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_mcp_client_list_tools_async);
	if (!check_ready(self, task))
		return;
	if (g_task_return_error_if_cancelled(task))
		return;
	if (self->tools == NULL && !self->has_tools) {
		/* it declared no tools: it has none, and is not asked */
		self->tools = g_ptr_array_new_with_free_func((GDestroyNotify)confab_mcp_tool_free);
	}
	if (self->tools != NULL) {
		g_task_return_pointer(task,
				      g_ptr_array_ref(self->tools),
				      (GDestroyNotify)g_ptr_array_unref);
		return;
	}
	start = self->listing == NULL;
	if (start) {
		ListOp *op = g_new0(ListOp, 1);
		op->self = self;
		op->tools = g_ptr_array_new_with_free_func((GDestroyNotify)confab_mcp_tool_free);
		op->names = g_hash_table_new(g_str_hash, g_str_equal);
		op->generation = self->tools_generation;
		op->session = self->session;
		g_queue_init(&op->waiters);
		self->listing = op;
	}
	waiter = g_new0(ListWaiter, 1);
	waiter->task = g_steal_pointer(&task);
	waiter->op = self->listing;
	if (cancellable != NULL) {
		waiter->cancel_source = g_cancellable_source_new(cancellable);
		g_source_set_callback(waiter->cancel_source,
				      G_SOURCE_FUNC(on_list_waiter_cancelled),
				      waiter,
				      NULL);
		g_source_attach(waiter->cancel_source, self->context);
	}
	g_queue_push_tail(&self->listing->waiters, waiter);
	if (start)
		list_next_page(self);
}

/**
 * confab_mcp_client_list_tools_finish:
 * @self: a #ConfabMcpClient
 * @result: the result
 * @error: return location for a #GError
 *
 * Returns: (transfer full) (element-type ConfabMcpTool): the tools; the
 *   array is shared, do not change it
 */
GPtrArray *
confab_mcp_client_list_tools_finish(ConfabMcpClient *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* ---------- tools/call ---------- */

struct _Call {
	ConfabMcpClient *self; /* unowned: the task holds it */
	GTask *task;	       /* owned */
	gchar *tool;	       /* owned */
	JsonObject *arguments; /* owned */
	gint64 deadline;       /* monotonic, or 0 */
	guint timeout_ms;
	gsize max_output_bytes;
	ConfabMcpProgressFunc progress_func;
	gpointer progress_data;
	GDestroyNotify progress_notify;
	gint64 token;
	gint64 request_id; /* the tools/call's JSON-RPC id, as last sent */
	guint session;
	gboolean retried;
};

/* The progress data of the call in flight whose tools/call @request_id
 * is, or NULL. */
static gpointer
call_data_by_request(ConfabMcpClient *self, gint64 request_id)
{
	GHashTableIter iter;
	Call *call;

	if (request_id == 0)
		return NULL;
	g_hash_table_iter_init(&iter, self->calls);
	while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&call))
		if (call->request_id == request_id)
			return call->progress_data;
	return NULL;
}

static void
call_free(Call *call)
{
	if (call->token != 0)
		g_hash_table_remove(call->self->calls, &call->token);
	if (call->progress_notify != NULL)
		call->progress_notify(call->progress_data);
	if (call->arguments != NULL)
		json_object_unref(call->arguments);
	g_clear_object(&call->task);
	g_free(call->tool);
	g_free(call);
}

static void
call_send(Call *call);

static void
call_renewed(ConfabMcpClient *self, const GError *error, gpointer user_data)
{
	Call *call = user_data;

	if (error != NULL) {
		GTask *task = g_steal_pointer(&call->task);
		call_free(call);
		g_task_return_error(task, g_error_copy(error));
		g_object_unref(task);
		return;
	}
	call_send(call);
}

static void
on_call_answer(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Call *call = user_data;
	ConfabMcpClient *self = call->self;
	g_autoptr(GTask) task = NULL;
	GError *error = NULL;
	g_autoptr(JsonNode) answer =
	    confab_mcp_jsonrpc_request_finish(CONFAB_MCP_JSONRPC(source), result, &error);
	ConfabMcpToolResult *tool_result;

	if (answer == NULL && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED) &&
	    !call->retried && !g_cancellable_is_cancelled(g_task_get_cancellable(call->task))) {
		/* a 404: the server never ran it */
		g_clear_error(&error);
		call->retried = TRUE;
		renew_session(self, call->session, call_renewed, call);
		return;
	}
	task = g_steal_pointer(&call->task);
	if (answer == NULL) {
		call_free(call);
		g_task_return_error(task, error);
		return;
	}
	tool_result = confab_mcp_tool_result_new_from_json(answer, call->max_output_bytes, &error);
	call_free(call);
	if (tool_result == NULL) {
		g_task_return_error(task, error);
		return;
	}
	g_task_return_pointer(task, tool_result, (GDestroyNotify)confab_mcp_tool_result_free);
}

static void
call_send(Call *call)
{
	ConfabMcpClient *self = call->self;
	g_autoptr(JsonNode) params = json_node_new(JSON_NODE_OBJECT);
	JsonObject *object = json_object_new();
	JsonObject *meta = json_object_new();
	guint timeout_ms = 0;

	if (call->deadline > 0) {
		gint64 left = call->deadline - g_get_monotonic_time();
		timeout_ms = (guint)MAX(left / 1000, 1);
	}
	call->session = self->session;
	json_object_set_string_member(object, "name", call->tool);
	json_object_set_object_member(object, "arguments", json_object_ref(call->arguments));
	json_object_set_int_member(meta, "progressToken", call->token);
	json_object_set_object_member(object, "_meta", meta);
	json_node_take_object(params, object);
	call->request_id = confab_mcp_jsonrpc_request_async(self->rpc,
							    "tools/call",
							    params,
							    timeout_ms,
							    g_task_get_cancellable(call->task),
							    on_call_answer,
							    call);
}

/**
 * confab_mcp_client_call_tool_async:
 * @self: a #ConfabMcpClient
 * @tool: the tool's name on the server
 * @arguments: (nullable): its arguments; %NULL for none
 * @timeout_ms: how long it may take; 0 for ever
 * @max_output_bytes: the most text of its result kept; 0 for 65536
 * @progress_func: (nullable) (scope notified): called for each
 *   `notifications/progress` about the call
 * @progress_data: data for @progress_func
 * @progress_notify: (nullable): frees @progress_data when the call ends
 * @cancellable: (nullable): cancels the call
 * @callback: called with the result
 * @user_data: data for @callback
 *
 * Calls a tool. A cancelled call ends at once with %G_IO_ERROR_CANCELLED
 * and one that times out with %G_IO_ERROR_TIMED_OUT; in both cases the
 * server is sent `notifications/cancelled`. A JSON-RPC error from the
 * server is %CONFAB_ERROR_UPSTREAM; a tool that failed by its own account
 * is a result with @is_error set.
 */
void
confab_mcp_client_call_tool_async(ConfabMcpClient *self,
				  const gchar *tool,
				  JsonObject *arguments,
				  guint timeout_ms,
				  gsize max_output_bytes,
				  ConfabMcpProgressFunc progress_func,
				  gpointer progress_data,
				  GDestroyNotify progress_notify,
				  GCancellable *cancellable,
				  GAsyncReadyCallback callback,
				  gpointer user_data)
{
	g_autoptr(GTask) task = NULL;
	Call *call;

	g_return_if_fail(CONFAB_IS_MCP_CLIENT(self));
	g_return_if_fail(tool != NULL);

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_mcp_client_call_tool_async);
	if (!check_ready(self, task) || g_task_return_error_if_cancelled(task)) {
		if (progress_notify != NULL)
			progress_notify(progress_data);
		return;
	}
	call = g_new0(Call, 1);
	call->self = self;
	call->task = g_steal_pointer(&task);
	call->tool = g_strdup(tool);
	call->arguments = arguments != NULL ? json_object_ref(arguments) : json_object_new();
	call->timeout_ms = timeout_ms;
	if (timeout_ms > 0)
		call->deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	call->max_output_bytes = max_output_bytes;
	call->progress_func = progress_func;
	call->progress_data = progress_data;
	call->progress_notify = progress_notify;
	call->token = ++self->next_token;
	g_hash_table_insert(self->calls, &call->token, call);
	call_send(call);
}

/**
 * confab_mcp_client_call_tool_finish:
 * @self: a #ConfabMcpClient
 * @result: the result
 * @error: return location for a #GError
 *
 * Returns: (transfer full): what the tool returned
 */
ConfabMcpToolResult *
confab_mcp_client_call_tool_finish(ConfabMcpClient *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* ---------- what the server says ---------- */

static gdouble
member_number(JsonObject *object, const gchar *name, gdouble fallback)
{
	JsonNode *node = json_object_get_member(object, name);

	if (node == NULL || !JSON_NODE_HOLDS_VALUE(node))
		return fallback;
	switch (json_node_get_value_type(node)) {
	case G_TYPE_INT64:
		return (gdouble)json_node_get_int(node);
	case G_TYPE_DOUBLE:
		return json_node_get_double(node);
	default:
		return fallback;
	}
}

static void
on_progress(ConfabMcpClient *self, JsonNode *params)
{
	JsonObject *object;
	JsonNode *token_node;
	gint64 token;
	Call *call;
	const gchar *message;

	if (params == NULL)
		return;
	object = json_node_get_object(params);
	token_node = json_object_get_member(object, "progressToken");
	if (token_node == NULL || !JSON_NODE_HOLDS_VALUE(token_node))
		return;
	if (json_node_get_value_type(token_node) == G_TYPE_INT64)
		token = json_node_get_int(token_node);
	else if (json_node_get_value_type(token_node) == G_TYPE_STRING)
		token = g_ascii_strtoll(json_node_get_string(token_node), NULL, 10);
	else
		return;
	call = g_hash_table_lookup(self->calls, &token);
	if (call == NULL || call->progress_func == NULL)
		return;
	message = confab_json_get_string(object, "message");
	{
		g_autofree gchar *cut = cut_string(message, 1024);
		call->progress_func(member_number(object, "progress", 0),
				    member_number(object, "total", -1),
				    cut,
				    call->progress_data);
	}
}

static void
on_notification(ConfabMcpJsonrpc *rpc, const gchar *method, JsonNode *params, gpointer user_data)
{
	ConfabMcpClient *self = user_data;

	if (strcmp(method, "notifications/progress") == 0) {
		on_progress(self, params);
	} else if (strcmp(method, "notifications/tools/list_changed") == 0) {
		g_debug("%s: the MCP server's tools changed", self->name);
		g_clear_pointer(&self->tools, g_ptr_array_unref);
		self->tools_generation++;
		g_signal_emit(self, signals[SIGNAL_TOOLS_CHANGED], 0);
	} else {
		g_debug("%s: ignoring %s from the MCP server", self->name, method);
	}
}

static void
on_rpc_closed(ConfabMcpJsonrpc *rpc, const GError *error, gpointer user_data)
{
	ConfabMcpClient *self = user_data;
	g_autoptr(ConfabMcpClient) keep = g_object_ref(self);

	if (self->state == STATE_CLOSED)
		return;
	self->state = STATE_CLOSED;
	g_clear_pointer(&self->tools, g_ptr_array_unref);
	g_signal_emit(self, signals[SIGNAL_CLOSED], 0, error);
}

/**
 * confab_mcp_client_close:
 * @self: a #ConfabMcpClient
 *
 * Stops the server (stdio: SIGTERM, SIGKILL 5 s later; HTTP: DELETE of the
 * session). Every call in flight fails; #ConfabMcpClient::closed is emitted.
 */
void
confab_mcp_client_close(ConfabMcpClient *self)
{
	g_return_if_fail(CONFAB_IS_MCP_CLIENT(self));
	confab_mcp_jsonrpc_close(self->rpc);
}

/**
 * confab_mcp_client_is_closed:
 * @self: a #ConfabMcpClient
 *
 * Returns: whether the client is closed (the server died or was stopped)
 */
gboolean
confab_mcp_client_is_closed(ConfabMcpClient *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_CLIENT(self), TRUE);
	return self->state == STATE_CLOSED;
}

/**
 * confab_mcp_client_is_ready:
 * @self: a #ConfabMcpClient
 *
 * Returns: whether the client is started and not closed
 */
gboolean
confab_mcp_client_is_ready(ConfabMcpClient *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_CLIENT(self), FALSE);
	return self->state == STATE_READY;
}

/**
 * confab_mcp_client_get_name:
 * @self: a #ConfabMcpClient
 *
 * Returns: the server's configured name
 */
const gchar *
confab_mcp_client_get_name(ConfabMcpClient *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_CLIENT(self), NULL);
	return self->name;
}

/**
 * confab_mcp_client_get_protocol_version:
 * @self: a #ConfabMcpClient
 *
 * Returns: (nullable): the negotiated protocol version, once started
 */
const gchar *
confab_mcp_client_get_protocol_version(ConfabMcpClient *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_CLIENT(self), NULL);
	return self->protocol_version;
}

/**
 * confab_mcp_client_get_server_name:
 * @self: a #ConfabMcpClient
 *
 * Returns: (nullable): the name in the server's `serverInfo`
 */
const gchar *
confab_mcp_client_get_server_name(ConfabMcpClient *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_CLIENT(self), NULL);
	return self->server_name;
}

/**
 * confab_mcp_client_get_server_version:
 * @self: a #ConfabMcpClient
 *
 * Returns: (nullable): the version in the server's `serverInfo`
 */
const gchar *
confab_mcp_client_get_server_version(ConfabMcpClient *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_CLIENT(self), NULL);
	return self->server_version;
}

/**
 * confab_mcp_client_get_instructions:
 * @self: a #ConfabMcpClient
 *
 * Returns: (nullable): the server's `instructions` (a hint for the model)
 */
const gchar *
confab_mcp_client_get_instructions(ConfabMcpClient *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_CLIENT(self), NULL);
	return self->instructions;
}

/**
 * confab_mcp_client_get_jsonrpc:
 * @self: a #ConfabMcpClient
 *
 * Returns: (transfer none): its JSON-RPC layer (for its counters)
 */
ConfabMcpJsonrpc *
confab_mcp_client_get_jsonrpc(ConfabMcpClient *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_CLIENT(self), NULL);
	return self->rpc;
}

/**
 * confab_mcp_client_set_max_message_size:
 * @self: a #ConfabMcpClient
 * @max_bytes: the largest JSON-RPC message sent or taken in (4 MiB)
 */
void
confab_mcp_client_set_max_message_size(ConfabMcpClient *self, gsize max_bytes)
{
	g_return_if_fail(CONFAB_IS_MCP_CLIENT(self));
	confab_mcp_jsonrpc_set_max_message_size(self->rpc, max_bytes);
}

/**
 * confab_mcp_client_set_start_timeout:
 * @self: a #ConfabMcpClient
 * @timeout_ms: how long initialize, and each page of tools/list, may take
 */
void
confab_mcp_client_set_start_timeout(ConfabMcpClient *self, guint timeout_ms)
{
	g_return_if_fail(CONFAB_IS_MCP_CLIENT(self));
	self->start_timeout_ms = timeout_ms;
}

static void
confab_mcp_client_dispose(GObject *object)
{
	ConfabMcpClient *self = CONFAB_MCP_CLIENT(object);

	/* calls in flight hold us: none is left */
	if (self->rpc != NULL) {
		g_signal_handlers_disconnect_by_data(self->rpc, self);
		confab_mcp_jsonrpc_set_request_func(self->rpc, NULL, NULL);
		confab_mcp_jsonrpc_close(self->rpc);
		g_clear_object(&self->rpc);
	}
	self->state = STATE_CLOSED;
	G_OBJECT_CLASS(confab_mcp_client_parent_class)->dispose(object);
}

static void
confab_mcp_client_finalize(GObject *object)
{
	ConfabMcpClient *self = CONFAB_MCP_CLIENT(object);

	g_assert(self->listing == NULL);
	g_assert(g_queue_is_empty(&self->renewals));
	g_clear_pointer(&self->tools, g_ptr_array_unref);
	g_hash_table_unref(self->calls);
	g_main_context_unref(self->context);
	g_free(self->protocol_version);
	g_free(self->server_name);
	g_free(self->server_version);
	g_free(self->instructions);
	g_free(self->name);
	if (self->elicit_notify != NULL)
		self->elicit_notify(self->elicit_data);
	G_OBJECT_CLASS(confab_mcp_client_parent_class)->finalize(object);
}

static void
confab_mcp_client_class_init(ConfabMcpClientClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->dispose = confab_mcp_client_dispose;
	object_class->finalize = confab_mcp_client_finalize;

	/**
	 * ConfabMcpClient::tools-changed:
	 * @self: the #ConfabMcpClient
	 *
	 * The server said its tools changed; the next listing asks it again.
	 */
	signals[SIGNAL_TOOLS_CHANGED] = g_signal_new("tools-changed",
						     G_TYPE_FROM_CLASS(klass),
						     G_SIGNAL_RUN_LAST,
						     0,
						     NULL,
						     NULL,
						     NULL,
						     G_TYPE_NONE,
						     0);
	/**
	 * ConfabMcpClient::closed:
	 * @self: the #ConfabMcpClient
	 * @error: (nullable): why (the server died, could not be reached...),
	 *   or %NULL after confab_mcp_client_close()
	 *
	 * The client is closed for good; every call in flight has failed.
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
confab_mcp_client_init(ConfabMcpClient *self)
{
	self->context = g_main_context_ref_thread_default();
	self->start_timeout_ms = DEFAULT_START_TIMEOUT_MS;
	self->calls = g_hash_table_new(g_int64_hash, g_int64_equal);
	g_queue_init(&self->renewals);
}

/**
 * confab_mcp_client_new:
 * @name: the server's configured name, for the log and errors
 * @transport: (transfer none): how to reach it; the client owns it from
 *   now on
 *
 * Returns: (transfer full): a client for the thread-default main context;
 *   confab_mcp_client_start_async() starts it
 */
ConfabMcpClient *
confab_mcp_client_new(const gchar *name, ConfabMcpTransport *transport)
{
	ConfabMcpClient *self;

	g_return_val_if_fail(name != NULL, NULL);
	g_return_val_if_fail(CONFAB_IS_MCP_TRANSPORT(transport), NULL);

	self = g_object_new(CONFAB_TYPE_MCP_CLIENT, NULL);
	self->name = g_strdup(name);
	self->rpc = confab_mcp_jsonrpc_new(transport, name);
	self->transport = transport;
	g_signal_connect(self->rpc, "notification", G_CALLBACK(on_notification), self);
	confab_mcp_jsonrpc_set_request_func(self->rpc, on_server_request, self);
	g_signal_connect(self->rpc, "closed", G_CALLBACK(on_rpc_closed), self);
	return self;
}
