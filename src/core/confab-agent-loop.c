/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabAgentLoop"

#include "config.h"

#include <string.h>

#include "core/confab-agent-loop.h"
#include "openai/confab-openai-message.h"
#include "tools/confab-tool-config.h"
#include "util/confab-error.h"
#include "util/confab-json.h"
#include "util/confab-source.h"

/*
 * The agent loop, inside a turn: a model call (a step); if the answer calls
 * the agent's own tools, run them (in parallel, at most
 * CONFAB_AGENT_LOOP_MAX_PARALLEL_TOOLS at once), give the model their
 * results and call it again; stop at the first answer without such calls.
 * After max_steps steps that asked for tools, one last call is made with
 * tool_choice "none". An answer that calls the client's tools ends the loop
 * with finish_reason "tool_calls" and only those calls, once the agent's own
 * calls of the same answer have run.
 *
 * A tool that fails — an error result, a JSON-RPC error, a timeout, a server
 * that dies or cannot start, a tool nobody offered — gives the model an
 * is_error result and a short reason; the loop goes on.
 *
 * A call of a tool whose server's `require_approval` asks for a person
 * (confab_agent_loop_set_approvals()) first becomes a pending approval in
 * the store: the sink hears of it (a tool_event `approval_request`, and
 * approval_request() for doors that notify a person), and the call waits
 * while the other calls of the step go on. Approved, it runs; denied or
 * timed out, the model gets an is_error result saying the user declined.
 * A client that leaves while a call waits does not void the decision: the
 * loop waits on (the approval's timeout still applies), runs what was
 * approved, and then ends as cancelled without calling the model again.
 * Waiting for a person does not count against the loop's total timeout.
 *
 * A loop told to defer approvals (the Responses API,
 * confab_agent_loop_defer_approvals()) does not wait: such a call is
 * stored as a pending approval asked by its response, with an
 * approval_request block and event and no result; the step's other calls
 * run, and the loop then ends without calling the model again. The
 * response that continues it hands the person's answers back
 * (confab_agent_loop_resume_call()): the new loop first decides each
 * approval, runs the approved calls and gives the declined ones a result
 * saying so (a client that leaves meanwhile does not void them, as for a
 * wait), and then calls the model. Before its first model call a loop
 * settles its context: each tool result follows the call it answers (a
 * result given by a later turn is moved up), and a call that has none
 * (never approved, or its turn stopped) is given one saying it did not run.
 *
 * The loop keeps the transcript as content blocks, in order: text,
 * tool_call {id, name, arguments, server}, tool_result {tool_call_id,
 * content, is_error, elapsed_ms}, …, text. A step's log probabilities,
 * when the upstream gave them, follow its text as one logprobs block
 * {content, refusal}. The text of every step goes to the sink as it comes;
 * steps' texts are parted by a blank line.
 */

/* the lists of a choice's logprobs object */
static const gchar *const logprobs_lists[] = {"content", "refusal"};

typedef struct {
	gchar *id;
	gchar *type;
	GString *name;
	GString *arguments;
} ToolCall;

static void
tool_call_free(ToolCall *call)
{
	g_free(call->id);
	g_free(call->type);
	g_string_free(call->name, TRUE);
	g_string_free(call->arguments, TRUE);
	g_free(call);
}

/* One call of the agent's own tools, running or done. */
typedef struct {
	ConfabAgentLoop *loop; /* unowned: the loop waits for its calls */
	gchar *id;
	gchar *name;
	gchar *arguments;
	const gchar *server;	  /* unowned: the tool's, nullable */
	const gchar *tool;	  /* unowned: the tool's own name, nullable */
	ConfabApproval *approval; /* owned, nullable: asked of a person */
	gboolean resumed;	  /* a continuation's: @approval is answered here */
	gboolean approve;	  /* resumed: the person's answer */
	gchar *reason;		  /* owned, nullable: resumed: what they said */
	gboolean parked;	  /* deferred: asked, not run; the loop ends */
	gint64 start;
	gboolean done;
	gboolean is_error;
	gchar *content;
	gint64 elapsed_ms;
} ServerCall;

static void
server_call_free(ServerCall *call)
{
	g_free(call->id);
	g_free(call->name);
	g_free(call->arguments);
	g_free(call->content);
	g_free(call->reason);
	confab_approval_free(call->approval);
	g_free(call);
}

struct _ConfabAgentLoop {
	GObject parent_instance;
	const ConfabAgentLoopMeter *meter; /* nullable */
	gpointer meter_data;
	guint calls;		   /* model calls started */
	ConfabAgent *agent;	   /* owned */
	ConfabProvider *provider;  /* owned */
	JsonArray *context;	   /* owned: what the model is sent, step by step */
	JsonObject *client_params; /* owned, nullable */
	gboolean stream;
	ConfabToolbox *toolbox;	  /* owned, nullable */
	GPtrArray *server_tools;  /* owned, nullable: ConfabToolboxTool */
	JsonArray *server_defs;	  /* owned, nullable: the tools as the model is offered them */
	GHashTable *client_names; /* owned: the client's tool names */
	guint total_timeout;	  /* seconds for the whole loop; 0 for none */
	const ConfabAgentLoopSink *sink;
	gpointer sink_data;
	ConfabMetrics *metrics;		  /* owned, nullable */
	ConfabRouter *router;		  /* owned, nullable: the provider called directly */
	gchar *target;			  /* owned, nullable: the last model call's target */
	gchar *target_model;		  /* owned, nullable: its upstream model */
	guint attempts;			  /* targets tried, over every model call */
	ConfabFlow *flow;		  /* owned, nullable: the client's backpressure */
	guint flow_wait;		  /* the next model or tool call waits for the client */
	ConfabApprovals *approvals;	  /* owned, nullable: no approvals asked */
	ConfabElicitations *elicitations; /* owned, nullable: servers' questions refused */
	gchar *approvals_owner;		  /* owned */
	gchar *approvals_session;	  /* owned */
	ConfabToolConfig *tool_config;	  /* owned, nullable: the agent's servers */
	guint waiting;			  /* calls waiting for a person */
	gboolean detached;		  /* the caller left while calls waited */
	gint64 deadline_left_ms;	  /* the total timeout left, while waiting */
	gchar *defer_response;		  /* owned, nullable: calls needing a person end the loop */
	guint parked;			  /* deferred calls of the step */
	GPtrArray *resumed;		  /* owned: ServerCall, answered before the first step */
	gboolean settled;		  /* the context's calls and results are in order */

	GTask *task;		   /* owned, while running */
	GCancellable *cancellable; /* owned: the caller's, or the timeout's */
	GCancellable *parent;	   /* owned, nullable */
	gulong parent_id;
	GSource *deadline; /* owned */
	gboolean timed_out;

	ConfabProviderRequest *request; /* owned: the step's */
	gboolean calling;		/* @request is running */
	gboolean call_failed;		/* @request failed: it ended the loop */
	GString *content;		/* owned: every step's text */
	gsize step_start;		/* where the step's text starts in @content */
	GString *step_reasoning;	/* owned */
	GString *step_refusal;		/* owned */
	GString *reasoning;		/* owned: every step's */
	GString *refusal;		/* owned: every step's */
	JsonObject *logprobs;		/* owned, nullable: every step's, merged */
	guint step_logprobs[2];		/* where the step's entries start in its lists */
	GPtrArray *step_calls;		/* owned: ToolCall by index */
	GString *blocks;		/* owned: the transcript, JSON objects comma-joined */
	gboolean blocks_are_content;	/* @blocks is one text block of all of @content */
	JsonArray *client_calls;	/* owned, nullable: the client's, at the end */
	GPtrArray *server_calls;	/* owned: ServerCall, the step's */
	guint next_call;
	guint running;
	gboolean starting_tools;
	guint steps;
	gboolean final_step;
	gchar *finish_reason; /* owned */
	gint64 prompt_tokens;
	gint64 completion_tokens;
	gint64 reasoning_tokens;
	gboolean usage_known;
};

G_DEFINE_FINAL_TYPE(ConfabAgentLoop, confab_agent_loop, G_TYPE_OBJECT)

static void
confab_agent_loop_finalize(GObject *object)
{
	ConfabAgentLoop *self = CONFAB_AGENT_LOOP(object);

	confab_source_clear(&self->deadline);
	confab_flow_clear_wait(self->flow, &self->flow_wait);
	g_clear_pointer(&self->flow, confab_flow_unref);
	g_clear_object(&self->approvals);
	g_clear_object(&self->elicitations);
	g_free(self->approvals_owner);
	g_free(self->approvals_session);
	g_free(self->defer_response);
	g_ptr_array_unref(self->resumed);
	g_clear_object(&self->tool_config);
	if (self->parent != NULL)
		g_cancellable_disconnect(self->parent, self->parent_id);
	g_clear_object(&self->parent);
	g_clear_object(&self->agent);
	g_clear_object(&self->provider);
	g_clear_object(&self->metrics);
	g_clear_object(&self->router);
	g_free(self->target);
	g_free(self->target_model);
	g_clear_pointer(&self->context, json_array_unref);
	g_clear_pointer(&self->client_params, json_object_unref);
	g_clear_object(&self->toolbox);
	g_clear_pointer(&self->server_tools, g_ptr_array_unref);
	g_clear_pointer(&self->server_defs, json_array_unref);
	g_clear_pointer(&self->client_names, g_hash_table_unref);
	g_clear_object(&self->task);
	g_clear_object(&self->cancellable);
	g_clear_pointer(&self->request, confab_provider_request_free);
	g_string_free(self->content, TRUE);
	g_string_free(self->step_reasoning, TRUE);
	g_string_free(self->step_refusal, TRUE);
	g_string_free(self->reasoning, TRUE);
	g_string_free(self->refusal, TRUE);
	g_clear_pointer(&self->logprobs, json_object_unref);
	g_ptr_array_unref(self->step_calls);
	g_string_free(self->blocks, TRUE);
	g_clear_pointer(&self->client_calls, json_array_unref);
	g_ptr_array_unref(self->server_calls);
	g_free(self->finish_reason);
	G_OBJECT_CLASS(confab_agent_loop_parent_class)->finalize(object);
}

static void
confab_agent_loop_class_init(ConfabAgentLoopClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = confab_agent_loop_finalize;
}

static void
confab_agent_loop_init(ConfabAgentLoop *self)
{
	self->cancellable = g_cancellable_new();
	self->content = g_string_new(NULL);
	self->step_reasoning = g_string_new(NULL);
	self->step_refusal = g_string_new(NULL);
	self->reasoning = g_string_new(NULL);
	self->refusal = g_string_new(NULL);
	self->step_calls = g_ptr_array_new_with_free_func((GDestroyNotify)tool_call_free);
	self->blocks = g_string_new(NULL);
	self->server_calls = g_ptr_array_new_with_free_func((GDestroyNotify)server_call_free);
	self->resumed = g_ptr_array_new_with_free_func((GDestroyNotify)server_call_free);
	self->client_names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	self->prompt_tokens = -1;
	self->completion_tokens = -1;
}

static void
collect_client_names(ConfabAgentLoop *self)
{
	JsonNode *tools = self->client_params != NULL
			      ? json_object_get_member(self->client_params, "tools")
			      : NULL;

	if (tools == NULL || !JSON_NODE_HOLDS_ARRAY(tools))
		return;
	for (guint i = 0; i < json_array_get_length(json_node_get_array(tools)); i++) {
		JsonObject *tool = json_array_get_object_element(json_node_get_array(tools), i);
		JsonObject *fn = tool != NULL ? confab_json_get_object(tool, "function") : NULL;
		const gchar *name = fn != NULL ? confab_json_get_string(fn, "name") : NULL;
		if (name != NULL)
			g_hash_table_add(self->client_names, g_strdup(name));
	}
}

/**
 * confab_agent_loop_new:
 * @agent: the agent
 * @provider: its provider
 * @context: the messages so far (instructions, history, the new ones);
 *   the loop keeps its own copy and adds each step's to it
 * @client_params: (nullable): the client's request parameters (tools,
 *   tool_choice, temperature…)
 * @stream: whether the client streams
 *
 * Returns: (transfer full): a loop, not running
 */
ConfabAgentLoop *
confab_agent_loop_new(ConfabAgent *agent,
		      ConfabProvider *provider,
		      JsonArray *context,
		      JsonObject *client_params,
		      gboolean stream)
{
	ConfabAgentLoop *self = g_object_new(CONFAB_TYPE_AGENT_LOOP, NULL);
	g_autoptr(JsonNode) copy = json_node_init_array(json_node_alloc(), context);
	g_autoptr(JsonNode) owned = json_node_copy(copy);

	self->agent = g_object_ref(agent);
	self->provider = g_object_ref(provider);
	self->context = json_array_ref(json_node_get_array(owned));
	self->client_params = client_params != NULL ? json_object_ref(client_params) : NULL;
	self->stream = stream;
	collect_client_names(self);
	return self;
}

/* The agent's tools as the model is offered them: function tools. */
static JsonObject *
tool_definition(ConfabToolboxTool *tool)
{
	JsonObject *def = json_object_new();
	JsonObject *fn = json_object_new();
	g_autoptr(JsonNode) schema = confab_json_from_string(tool->input_schema);

	json_object_set_string_member(def, "type", "function");
	json_object_set_string_member(fn, "name", tool->name);
	if (tool->description != NULL)
		json_object_set_string_member(fn, "description", tool->description);
	if (schema != NULL && JSON_NODE_HOLDS_OBJECT(schema))
		json_object_set_member(fn, "parameters", g_steal_pointer(&schema));
	else
		json_object_set_object_member(fn, "parameters", json_object_new());
	json_object_set_object_member(def, "function", fn);
	return def;
}

/**
 * confab_agent_loop_set_tools:
 * @self: a #ConfabAgentLoop
 * @toolbox: the daemon's tool servers
 * @server_tools: (element-type ConfabToolboxTool): the agent's tools
 * @total_timeout: seconds the whole loop may take, 0 for no limit
 *
 * Offers the agent's own tools; without this, the loop is one model call.
 */
void
confab_agent_loop_set_tools(ConfabAgentLoop *self,
			    ConfabToolbox *toolbox,
			    GPtrArray *server_tools,
			    guint total_timeout)
{
	g_return_if_fail(CONFAB_IS_AGENT_LOOP(self));
	g_set_object(&self->toolbox, toolbox);
	g_clear_pointer(&self->server_tools, g_ptr_array_unref);
	g_clear_pointer(&self->server_defs, json_array_unref);
	self->server_defs = json_array_new();
	self->server_tools = g_ptr_array_ref(server_tools);
	for (guint i = 0; i < server_tools->len; i++) {
		ConfabToolboxTool *tool = g_ptr_array_index(server_tools, i);
		if (tool->name != NULL && *tool->name != '\0')
			json_array_add_object_element(self->server_defs, tool_definition(tool));
	}
	self->total_timeout = total_timeout;
}

/**
 * confab_agent_loop_set_metrics:
 * @self: a #ConfabAgentLoop, not running
 * @metrics: where its upstream requests and tool calls are counted
 */
void
confab_agent_loop_set_metrics(ConfabAgentLoop *self, ConfabMetrics *metrics)
{
	g_return_if_fail(CONFAB_IS_AGENT_LOOP(self));
	g_set_object(&self->metrics, metrics);
}

/**
 * confab_agent_loop_set_meter:
 * @self: a #ConfabAgentLoop, not running
 * @meter: (nullable): told of each model call, before and after
 * @user_data: for @meter; must outlive the loop's run
 */
void
confab_agent_loop_set_meter(ConfabAgentLoop *self,
			    const ConfabAgentLoopMeter *meter,
			    gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_AGENT_LOOP(self));
	self->meter = meter;
	self->meter_data = user_data;
}

/**
 * confab_agent_loop_set_router:
 * @self: a #ConfabAgentLoop, not running
 * @router: (nullable): routes each model call across the agent's targets;
 *   %NULL calls the provider with the agent as it is (target 0)
 */
void
confab_agent_loop_set_router(ConfabAgentLoop *self, ConfabRouter *router)
{
	g_return_if_fail(CONFAB_IS_AGENT_LOOP(self));
	g_set_object(&self->router, router);
}

/**
 * confab_agent_loop_get_target:
 * @self: a #ConfabAgentLoop
 * @upstream_model: (out) (optional) (transfer none): its upstream model
 * @attempts: (out) (optional): the targets tried, over every model call
 *
 * Returns: (nullable): the label of the target the last model call went
 *   to; %NULL before any, or without a router
 */
const gchar *
confab_agent_loop_get_target(ConfabAgentLoop *self, const gchar **upstream_model, guint *attempts)
{
	g_return_val_if_fail(CONFAB_IS_AGENT_LOOP(self), NULL);
	/* while a routed call runs: the target it went to so far (the one
	 * that answered, once one has) */
	if (self->calling && self->request->target != NULL) {
		if (upstream_model != NULL)
			*upstream_model = self->request->target_model;
		if (attempts != NULL)
			*attempts = self->attempts + self->request->attempts;
		return self->request->target;
	}
	if (upstream_model != NULL)
		*upstream_model = self->target_model;
	if (attempts != NULL)
		*attempts = self->attempts;
	return self->target;
}

/**
 * confab_agent_loop_get_failed_call:
 * @self: a #ConfabAgentLoop that failed
 *
 * Returns: (nullable): the model call whose failure ended the loop, with
 *   the upstream's last status and what its error said
 *   (ConfabProviderRequest @status, @retry_after_ms, @error_type,
 *   @error_code, @error_param); %NULL when no model call failed
 */
const ConfabProviderRequest *
confab_agent_loop_get_failed_call(ConfabAgentLoop *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT_LOOP(self), NULL);
	return self->call_failed ? self->request : NULL;
}

/**
 * confab_agent_loop_set_sink:
 * @self: a #ConfabAgentLoop
 * @sink: (nullable): a static table
 * @user_data: data for @sink's functions
 */
void
confab_agent_loop_set_sink(ConfabAgentLoop *self,
			   const ConfabAgentLoopSink *sink,
			   gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_AGENT_LOOP(self));
	self->sink = sink;
	self->sink_data = user_data;
}

/**
 * confab_agent_loop_set_flow:
 * @self: a #ConfabAgentLoop
 * @flow: (nullable): the streaming client's backpressure
 *
 * While @flow is held, the loop starts no model call and no tool call, and
 * the provider reads no more of its upstream.
 */
void
confab_agent_loop_set_flow(ConfabAgentLoop *self, ConfabFlow *flow)
{
	g_return_if_fail(CONFAB_IS_AGENT_LOOP(self));
	g_clear_pointer(&self->flow, confab_flow_unref);
	self->flow = flow != NULL ? confab_flow_ref(flow) : NULL;
}

/**
 * confab_agent_loop_set_approvals:
 * @self: a #ConfabAgentLoop, not running
 * @approvals: where calls that need a person's approval wait
 * @owner: the turn's owner, who may decide
 * @session_id: the turn's conversation
 *
 * Asks a person before each call of a tool whose server's
 * `require_approval` says so; without this, every call runs.
 */
void
confab_agent_loop_set_approvals(ConfabAgentLoop *self,
				ConfabApprovals *approvals,
				const gchar *owner,
				const gchar *session_id)
{
	g_autoptr(GError) error = NULL;

	g_return_if_fail(CONFAB_IS_AGENT_LOOP(self));
	g_set_object(&self->approvals, approvals);
	g_free(self->approvals_owner);
	self->approvals_owner = g_strdup(owner);
	g_free(self->approvals_session);
	self->approvals_session = g_strdup(session_id);
	g_clear_object(&self->tool_config);
	if (confab_agent_get_mcp_servers(self->agent) != NULL)
		self->tool_config =
		    confab_tool_config_parse(confab_agent_get_mcp_servers(self->agent), &error);
	if (error != NULL)
		g_warning("the tool servers of %s: %s",
			  confab_agent_get_id(self->agent),
			  error->message);
}

/**
 * confab_agent_loop_set_elicitations:
 * @self: a #ConfabAgentLoop, not running, with its approvals set (their
 *   owner and session are the elicitations' too)
 * @elicitations: where the servers' questions wait for the person
 *
 * Puts an `elicitation/create` that a server sends during one of the
 * loop's tool calls to the person, as a pending `mcpe_…` request and a
 * tool_event `elicitation_request`; the call waits for the answer (or the
 * timeout, answered `cancel`). Without this, elicitations are answered
 * `cancel`.
 */
void
confab_agent_loop_set_elicitations(ConfabAgentLoop *self, ConfabElicitations *elicitations)
{
	g_return_if_fail(CONFAB_IS_AGENT_LOOP(self));
	g_set_object(&self->elicitations, elicitations);
}

/**
 * confab_agent_loop_defer_approvals:
 * @self: a #ConfabAgentLoop, not yet running, with its approvals set
 * @response_id: the response the loop's answer is
 *
 * A call that needs a person's approval does not wait: it is asked as
 * @response_id's request and the loop ends after the step's other calls
 * (the Responses API's `mcp_approval_request`).
 */
void
confab_agent_loop_defer_approvals(ConfabAgentLoop *self, const gchar *response_id)
{
	g_return_if_fail(CONFAB_IS_AGENT_LOOP(self));
	g_free(self->defer_response);
	self->defer_response = g_strdup(response_id);
}

/**
 * confab_agent_loop_resume_call:
 * @self: a #ConfabAgentLoop, not yet running, with its tools and approvals set
 * @approval: a pending approval an earlier response asked
 * @approve: the person's answer
 * @reason: (nullable): what they said
 *
 * Before its first model call, the loop decides @approval (by "api") and
 * runs its call, or gives the model a result saying the user declined.
 */
void
confab_agent_loop_resume_call(ConfabAgentLoop *self,
			      const ConfabApproval *approval,
			      gboolean approve,
			      const gchar *reason)
{
	ServerCall *call;

	g_return_if_fail(CONFAB_IS_AGENT_LOOP(self));
	g_return_if_fail(self->task == NULL && approval != NULL);
	call = g_new0(ServerCall, 1);
	call->loop = self;
	call->id = g_strdup(approval->tool_call_id);
	call->name = g_strdup(approval->name);
	call->arguments = g_strdup(approval->arguments);
	call->approval = confab_approval_copy(approval);
	call->resumed = TRUE;
	call->approve = approve;
	call->reason = g_strdup(reason);
	g_ptr_array_add(self->resumed, call);
}

static gboolean
has_server_tools(ConfabAgentLoop *self)
{
	return self->server_defs != NULL && json_array_get_length(self->server_defs) > 0;
}

static ConfabToolboxTool *
find_server_tool(ConfabAgentLoop *self, const gchar *name)
{
	for (guint i = 0; self->server_tools != NULL && i < self->server_tools->len; i++) {
		ConfabToolboxTool *tool = g_ptr_array_index(self->server_tools, i);
		if (g_strcmp0(tool->name, name) == 0)
			return tool;
	}
	return NULL;
}

/* ---------- the transcript ---------- */

static void
block_begin(ConfabAgentLoop *self, const gchar *type)
{
	if (self->blocks->len > 0)
		g_string_append_c(self->blocks, ',');
	self->blocks_are_content = FALSE;
	g_string_append(self->blocks, "{\"type\":");
	confab_json_append_string(self->blocks, type);
}

static void
block_string(ConfabAgentLoop *self, const gchar *key, const gchar *value)
{
	g_string_append_printf(self->blocks, ",\"%s\":", key);
	confab_json_append_string(self->blocks, value);
}

/* A step's reasoning and refusal, each one block, before its text. */
static void
add_step_blocks(ConfabAgentLoop *self)
{
	if (self->step_reasoning->len > 0) {
		block_begin(self, "reasoning");
		block_string(self, "text", self->step_reasoning->str);
		g_string_append_c(self->blocks, '}');
		/* the step's stays until the next step: it goes back to the
		 * model with the step's calls */
		g_string_append(self->reasoning, self->step_reasoning->str);
	}
	if (self->step_refusal->len > 0) {
		block_begin(self, "refusal");
		block_string(self, "text", self->step_refusal->str);
		g_string_append_c(self->blocks, '}');
		g_string_append(self->refusal, self->step_refusal->str);
		g_string_truncate(self->step_refusal, 0);
	}
}

static void
add_text_block(ConfabAgentLoop *self, const gchar *text)
{
	gboolean whole = self->blocks->len == 0 && text == self->content->str;

	block_begin(self, "text");
	block_string(self, "text", text);
	g_string_append_c(self->blocks, '}');
	self->blocks_are_content = whole;
}

static guint
logprobs_length(ConfabAgentLoop *self, guint list)
{
	JsonNode *node = self->logprobs != NULL
			     ? json_object_get_member(self->logprobs, logprobs_lists[list])
			     : NULL;

	return node != NULL && JSON_NODE_HOLDS_ARRAY(node)
		   ? json_array_get_length(json_node_get_array(node))
		   : 0;
}

/* The step's log probabilities, as its choice.logprobs would be whole:
 * {"type":"logprobs","content":[…]|null,"refusal":[…]|null}. None given,
 * no block. */
static void
add_logprobs_block(ConfabAgentLoop *self)
{
	guint ends[G_N_ELEMENTS(logprobs_lists)];
	gboolean any = FALSE;

	for (guint i = 0; i < G_N_ELEMENTS(logprobs_lists); i++) {
		ends[i] = logprobs_length(self, i);
		any = any || ends[i] > self->step_logprobs[i];
	}
	if (!any)
		return;
	block_begin(self, "logprobs");
	for (guint i = 0; i < G_N_ELEMENTS(logprobs_lists); i++) {
		JsonArray *entries;

		g_string_append_printf(self->blocks, ",\"%s\":", logprobs_lists[i]);
		if (ends[i] == self->step_logprobs[i]) {
			g_string_append(self->blocks, "null");
			continue;
		}
		entries = json_object_get_array_member(self->logprobs, logprobs_lists[i]);
		g_string_append_c(self->blocks, '[');
		for (guint j = self->step_logprobs[i]; j < ends[i]; j++) {
			g_autofree gchar *entry =
			    json_to_string(json_array_get_element(entries, j), FALSE);
			if (j > self->step_logprobs[i])
				g_string_append_c(self->blocks, ',');
			g_string_append(self->blocks, entry);
		}
		g_string_append_c(self->blocks, ']');
		self->step_logprobs[i] = ends[i];
	}
	g_string_append_c(self->blocks, '}');
}

static void
add_call_block(ConfabAgentLoop *self, ToolCall *call, const gchar *server)
{
	block_begin(self, "tool_call");
	block_string(self, "id", call->id != NULL ? call->id : "");
	block_string(self, "name", call->name->str);
	block_string(self, "arguments", call->arguments->str);
	if (server != NULL)
		block_string(self, "server", server);
	g_string_append_c(self->blocks, '}');
}

static void
add_result_block(ConfabAgentLoop *self, ServerCall *call)
{
	block_begin(self, "tool_result");
	block_string(self, "tool_call_id", call->id);
	block_string(self, "content", call->content);
	g_string_append_printf(self->blocks,
			       ",\"is_error\":%s,\"elapsed_ms\":%" G_GINT64_FORMAT "}",
			       call->is_error ? "true" : "false",
			       call->elapsed_ms);
}

/* ---------- the end ---------- */

static void
finish(ConfabAgentLoop *self, GError *error)
{
	g_autoptr(GTask) task = g_steal_pointer(&self->task);

	confab_source_clear(&self->deadline);
	/* no step comes after: the model's context (a user's text may be
	 * megabytes) is let go before the answer is stored and sent */
	while (json_array_get_length(self->context) > 0)
		json_array_remove_element(self->context, json_array_get_length(self->context) - 1);
	if (task == NULL) {
		g_clear_error(&error);
		return;
	}
	if (error != NULL && self->timed_out) {
		g_clear_error(&error);
		error = g_error_new(CONFAB_ERROR,
				    CONFAB_ERROR_UPSTREAM_TIMEOUT,
				    "The agent did not finish within %u s",
				    self->total_timeout);
	}
	if (error != NULL)
		g_task_return_error(task, error);
	else
		g_task_return_boolean(task, TRUE);
}

static void
run_step(ConfabAgentLoop *self);

/* ---------- a step's answer ---------- */

static void
accumulate_tool_calls(ConfabAgentLoop *self, JsonArray *fragments)
{
	for (guint i = 0; i < json_array_get_length(fragments); i++) {
		JsonObject *frag = json_array_get_object_element(fragments, i);
		JsonObject *fn = frag != NULL ? confab_json_get_object(frag, "function") : NULL;
		gint64 index;
		ToolCall *call;

		if (frag == NULL)
			continue;
		index = json_object_get_int_member_with_default(frag, "index", i);
		if (index < 0 || index > 1024)
			continue;
		while (self->step_calls->len <= (guint)index) {
			call = g_new0(ToolCall, 1);
			call->name = g_string_new(NULL);
			call->arguments = g_string_new(NULL);
			g_ptr_array_add(self->step_calls, call);
		}
		call = g_ptr_array_index(self->step_calls, index);
		if (confab_json_get_string(frag, "id") != NULL) {
			g_free(call->id);
			call->id = g_strdup(confab_json_get_string(frag, "id"));
		}
		if (confab_json_get_string(frag, "type") != NULL) {
			g_free(call->type);
			call->type = g_strdup(confab_json_get_string(frag, "type"));
		}
		if (fn != NULL) {
			g_string_append(call->name, confab_json_get_string(fn, "name") ?: "");
			g_string_append(call->arguments,
					confab_json_get_string(fn, "arguments") ?: "");
		}
	}
}

/**
 * confab_agent_loop_merge_logprobs:
 * @into: (inout) (nullable): the log probabilities so far
 * @more: a piece's `logprobs` object
 *
 * Appends the entries of @more's `content` and `refusal` lists to those of
 * @into, as a whole answer's `logprobs` holds every piece's.
 */
void
confab_agent_loop_merge_logprobs(JsonObject **into, JsonObject *more)
{
	const gchar *const *lists = logprobs_lists;

	if (*into == NULL)
		*into = json_object_new();
	for (guint i = 0; i < G_N_ELEMENTS(logprobs_lists); i++) {
		JsonNode *add = json_object_get_member(more, lists[i]);
		JsonArray *target;
		if (add == NULL || !JSON_NODE_HOLDS_ARRAY(add))
			continue;
		if (!json_object_has_member(*into, lists[i]))
			json_object_set_array_member(*into, lists[i], json_array_new());
		target = json_object_get_array_member(*into, lists[i]);
		for (guint j = 0; j < json_array_get_length(json_node_get_array(add)); j++)
			json_array_add_element(
			    target,
			    json_node_copy(json_array_get_element(json_node_get_array(add), j)));
	}
}

/* A refusal, reasoning, log probabilities: kept for the answer and the
 * transcript, and told to the turn as they come. */
static void
take_extras(ConfabAgentLoop *self, const ConfabDelta *delta)
{
	if (delta->refusal != NULL)
		g_string_append(self->step_refusal, delta->refusal);
	if (delta->reasoning != NULL)
		g_string_append(self->step_reasoning, delta->reasoning);
	if (delta->logprobs != NULL)
		confab_agent_loop_merge_logprobs(&self->logprobs, delta->logprobs);
	if (self->sink != NULL && self->sink->extra != NULL)
		self->sink->extra(&(ConfabDelta){.refusal = delta->refusal,
						 .reasoning = delta->reasoning,
						 .logprobs = delta->logprobs},
				  self->sink_data);
}

static void
on_delta(const ConfabDelta *delta, gpointer user_data)
{
	ConfabAgentLoop *self = user_data;
	const gchar *content = delta->content;
	JsonArray *tool_calls = delta->tool_calls;

	if (delta->refusal != NULL || delta->reasoning != NULL || delta->logprobs != NULL)
		take_extras(self, delta);
	if (content != NULL && *content != '\0') {
		/* a new step's first words, after an earlier step's: a blank line */
		if (self->step_start == self->content->len && self->content->len > 0) {
			g_string_append(self->content, "\n\n");
			self->step_start = self->content->len;
			if (self->sink != NULL && self->sink->text != NULL)
				self->sink->text("\n\n", self->sink_data);
		}
		g_string_append(self->content, content);
		if (self->sink != NULL && self->sink->text != NULL)
			self->sink->text(content, self->sink_data);
	}
	if (tool_calls != NULL) {
		accumulate_tool_calls(self, tool_calls);
		/* no tools of the agent's own: every call is the client's, relayed
		 * as it comes */
		if (!has_server_tools(self) && self->sink != NULL && self->sink->tool_calls != NULL)
			self->sink->tool_calls(tool_calls, self->sink_data);
	}
}

static JsonObject *
openai_call(ToolCall *call, guint index)
{
	JsonObject *out = json_object_new();
	JsonObject *fn = json_object_new();

	json_object_set_int_member(out, "index", index);
	json_object_set_string_member(out, "id", call->id != NULL ? call->id : "");
	json_object_set_string_member(out, "type", call->type != NULL ? call->type : "function");
	json_object_set_string_member(fn, "name", call->name->str);
	json_object_set_string_member(fn, "arguments", call->arguments->str);
	json_object_set_object_member(out, "function", fn);
	return out;
}

/* The step's answer goes into the context, as the model gave it. */
static void
add_assistant_to_context(ConfabAgentLoop *self)
{
	JsonObject *msg = json_object_new();
	JsonArray *calls = json_array_new();

	json_object_set_string_member(msg, "role", "assistant");
	if (self->content->len > self->step_start)
		json_object_set_string_member(msg,
					      "content",
					      self->content->str + self->step_start);
	else
		json_object_set_null_member(msg, "content");
	/* DeepSeek's thinking mode refuses the next step without it */
	if (self->step_reasoning->len > 0)
		json_object_set_string_member(msg, "reasoning_content", self->step_reasoning->str);
	for (guint i = 0; i < self->step_calls->len; i++) {
		JsonObject *call = openai_call(g_ptr_array_index(self->step_calls, i), i);
		json_object_remove_member(call, "index");
		json_array_add_object_element(calls, call);
	}
	json_object_set_array_member(msg, "tool_calls", calls);
	json_array_add_object_element(self->context, msg);
}

static ServerCall *
server_call_new(ConfabAgentLoop *self, ToolCall *call, ConfabToolboxTool *tool)
{
	ServerCall *sc = g_new0(ServerCall, 1);

	sc->loop = self;
	sc->id = g_strdup(call->id != NULL ? call->id : "");
	sc->name = g_strdup(call->name->str);
	sc->arguments = g_strdup(call->arguments->str);
	sc->server = tool != NULL ? tool->server : NULL;
	sc->tool = tool != NULL ? tool->tool : NULL;
	return sc;
}

/* Sorts the step's calls: the agent's own run here; the client's go back to
 * it; a call of a tool nobody offered gets an error result. */
static void
sort_calls(ConfabAgentLoop *self)
{
	for (guint i = 0; i < self->step_calls->len; i++) {
		ToolCall *call = g_ptr_array_index(self->step_calls, i);
		ConfabToolboxTool *tool = find_server_tool(self, call->name->str);
		gboolean client =
		    tool == NULL && g_hash_table_contains(self->client_names, call->name->str);

		add_call_block(self, call, tool != NULL ? tool->server : NULL);
		if (client) {
			if (self->client_calls == NULL)
				self->client_calls = json_array_new();
			json_array_add_object_element(
			    self->client_calls,
			    openai_call(call, json_array_get_length(self->client_calls)));
			continue;
		}
		g_ptr_array_add(self->server_calls, server_call_new(self, call, tool));
	}
}

static void
start_tools(ConfabAgentLoop *self);

static void
end_with_client_calls(ConfabAgentLoop *self)
{
	if (self->sink != NULL && self->sink->tool_calls != NULL)
		self->sink->tool_calls(self->client_calls, self->sink_data);
	g_free(self->finish_reason);
	self->finish_reason = g_strdup("tool_calls");
	finish(self, NULL);
}

/* The last call was told not to call tools, and did: the calls are kept
 * in the transcript, each with an error result, and none runs. */
static void
refuse_calls(ConfabAgentLoop *self, const gchar *reason)
{
	for (guint i = 0; i < self->server_calls->len; i++) {
		ServerCall *call = g_ptr_array_index(self->server_calls, i);
		call->is_error = TRUE;
		call->content = g_strdup(reason);
		add_result_block(self, call);
	}
	g_ptr_array_set_size(self->server_calls, 0);
}

static void
add_usage(ConfabAgentLoop *self, ConfabProviderResult *result)
{
	if (result->prompt_tokens < 0 || result->completion_tokens < 0)
		return;
	self->prompt_tokens = MAX(self->prompt_tokens, 0) + result->prompt_tokens;
	self->completion_tokens = MAX(self->completion_tokens, 0) + result->completion_tokens;
	self->reasoning_tokens += MAX(result->reasoning_tokens, 0);
	self->usage_known = TRUE;
}

static const gchar *
upstream_outcome(const GError *error)
{
	if (error == NULL)
		return "ok";
	if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
		return "cancelled";
	if (g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM_TIMEOUT))
		return "timeout";
	return "error";
}

static void
step_done_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConfabAgentLoop) self = user_data;
	g_autoptr(ConfabProviderResult) presult = NULL;
	GError *error = NULL;

	self->calling = FALSE;
	if (CONFAB_IS_ROUTER(source)) {
		presult = confab_router_complete_finish(CONFAB_ROUTER(source), result, &error);
		g_free(self->target);
		self->target = g_strdup(self->request->target);
		g_free(self->target_model);
		self->target_model = g_strdup(self->request->target_model);
		self->attempts += self->request->attempts;
	} else {
		presult = confab_provider_complete_finish(CONFAB_PROVIDER(source), result, &error);
	}
	confab_metrics_add(self->metrics,
			   CONFAB_METRIC_UPSTREAM_REQUESTS,
			   1,
			   confab_agent_get_id(self->agent),
			   self->timed_out ? "timeout" : upstream_outcome(error));
	if (self->request->retries > 0)
		confab_metrics_add(self->metrics,
				   CONFAB_METRIC_UPSTREAM_RETRIES,
				   self->request->retries,
				   confab_agent_get_id(self->agent));
	if (self->meter != NULL)
		self->meter->call_end(self->meter_data,
				      presult != NULL ? presult->prompt_tokens : -1,
				      presult != NULL ? presult->completion_tokens : -1);
	add_step_blocks(self);
	if (self->content->len > self->step_start)
		add_text_block(self, self->content->str + self->step_start);
	add_logprobs_block(self);
	if (presult == NULL) {
		self->call_failed = TRUE;
		finish(self, error);
		return;
	}
	add_usage(self, presult);
	g_free(self->finish_reason);
	self->finish_reason =
	    g_strdup(presult->finish_reason != NULL ? presult->finish_reason : "stop");
	if (self->step_calls->len == 0) {
		finish(self, NULL);
		return;
	}
	if (!has_server_tools(self)) {
		/* the client's calls, relayed already */
		for (guint i = 0; i < self->step_calls->len; i++)
			add_call_block(self, g_ptr_array_index(self->step_calls, i), NULL);
		finish(self, NULL);
		return;
	}
	add_assistant_to_context(self);
	sort_calls(self);
	g_ptr_array_set_size(self->step_calls, 0);
	if (self->final_step && self->server_calls->len > 0)
		refuse_calls(self, "Not run: the agent has used up its max_steps");
	if (self->server_calls->len == 0) {
		if (self->client_calls != NULL) {
			end_with_client_calls(self);
			return;
		}
		/* only refused calls: the client has no call to answer */
		g_free(self->finish_reason);
		self->finish_reason = g_strdup("stop");
		finish(self, NULL);
		return;
	}
	self->steps++;
	start_tools(self);
}

/* What the model is offered in this step: the client's parameters, the
 * agent's tools beside the client's, and in the last step tool_choice none. */
static JsonObject *
step_params(ConfabAgentLoop *self)
{
	JsonObject *params = json_object_new();
	JsonArray *tools = json_array_new();
	JsonNode *client_tools = NULL;

	if (self->client_params != NULL) {
		g_autoptr(GList) names = json_object_get_members(self->client_params);
		for (GList *l = names; l != NULL; l = l->next)
			json_object_set_member(
			    params,
			    l->data,
			    json_node_copy(json_object_get_member(self->client_params, l->data)));
		client_tools = json_object_get_member(self->client_params, "tools");
	}
	if (!has_server_tools(self)) {
		json_array_unref(tools);
		return params;
	}
	if (client_tools != NULL && JSON_NODE_HOLDS_ARRAY(client_tools)) {
		for (guint i = 0; i < json_array_get_length(json_node_get_array(client_tools)); i++)
			json_array_add_element(
			    tools,
			    json_node_copy(
				json_array_get_element(json_node_get_array(client_tools), i)));
	}
	for (guint i = 0; i < json_array_get_length(self->server_defs); i++)
		json_array_add_element(
		    tools,
		    json_node_copy(json_array_get_element(self->server_defs, i)));
	json_object_set_array_member(params, "tools", tools);
	if (self->final_step)
		json_object_set_string_member(params, "tool_choice", "none");
	return params;
}

static void
on_flow_open_step(gpointer user_data)
{
	ConfabAgentLoop *self = user_data;

	self->flow_wait = 0;
	if (g_cancellable_is_cancelled(self->cancellable)) {
		finish(self, g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "Cancelled"));
		return;
	}
	run_step(self);
}

/* An upstream took the model call: the door may send its head. */
static void
on_answered(ConfabProviderRequest *request, gpointer user_data)
{
	ConfabAgentLoop *self = user_data;

	if (self->sink != NULL && self->sink->answered != NULL)
		self->sink->answered(self->sink_data);
}

/* The next model call: once the client has caught up (or the loop is
 * cancelled, which the provider then says at once). */
static void
run_step(ConfabAgentLoop *self)
{
	ConfabProviderRequest *request;

	if (confab_flow_is_held(self->flow) && !g_cancellable_is_cancelled(self->cancellable)) {
		self->flow_wait =
		    confab_flow_wait(self->flow, self->cancellable, on_flow_open_step, self);
		return;
	}
	if (!self->settled) {
		confab_openai_message_settle_calls(
		    self->context,
		    "Not run: this call got no result (it was not approved, or its turn "
		    "stopped first)");
		self->settled = TRUE;
	}
	request = g_new0(ConfabProviderRequest, 1);

	g_clear_pointer(&self->request, confab_provider_request_free);
	self->step_start = self->content->len;
	g_string_truncate(self->step_reasoning, 0);
	request->agent = g_object_ref(self->agent);
	request->messages = json_array_ref(self->context);
	request->params = step_params(self);
	request->stream = self->stream;
	request->flow = self->flow != NULL ? confab_flow_ref(self->flow) : NULL;
	request->retry_after_ms = -1;
	if (self->sink != NULL && self->sink->answered != NULL) {
		request->answered = on_answered;
		request->answered_data = self;
	}
	self->request = request;
	self->calling = TRUE;
	if (self->meter != NULL)
		self->meter->call_start(self->meter_data, self->calls);
	self->calls++;
	if (self->router != NULL) {
		confab_router_complete_async(self->router,
					     self->provider,
					     request,
					     on_delta,
					     self,
					     self->cancellable,
					     step_done_cb,
					     g_object_ref(self));
		return;
	}
	confab_provider_complete_async(self->provider,
				       request,
				       on_delta,
				       self,
				       self->cancellable,
				       step_done_cb,
				       g_object_ref(self));
}

/* ---------- the agent's own tools ---------- */

static void
emit_event(ConfabAgentLoop *self, GString *event)
{
	if (self->sink != NULL && self->sink->tool_event != NULL)
		self->sink->tool_event(event->str, self->sink_data);
}

static void
emit_call_event(ConfabAgentLoop *self, ServerCall *call)
{
	g_autoptr(GString) event = g_string_new("{\"type\":\"call\",\"id\":");

	confab_json_append_string(event, call->id);
	g_string_append(event, ",\"name\":");
	confab_json_append_string(event, call->name);
	g_string_append(event, ",\"arguments\":");
	confab_json_append_string(event, call->arguments);
	g_string_append_c(event, '}');
	emit_event(self, event);
}

static void
on_progress(gdouble progress, gdouble total, const gchar *message, gpointer user_data)
{
	ServerCall *call = user_data;
	g_autoptr(GString) event = g_string_new("{\"type\":\"progress\",\"id\":");
	gchar number[G_ASCII_DTOSTR_BUF_SIZE];

	confab_json_append_string(event, call->id);
	g_string_append_printf(event,
			       ",\"progress\":%s",
			       g_ascii_dtostr(number, sizeof(number), progress));
	if (total >= 0)
		g_string_append_printf(event,
				       ",\"total\":%s",
				       g_ascii_dtostr(number, sizeof(number), total));
	else
		g_string_append(event, ",\"total\":null");
	g_string_append(event, ",\"message\":");
	confab_json_append_string(event, message);
	g_string_append_c(event, '}');
	emit_event(call->loop, event);
}

static void
after_tools(ConfabAgentLoop *self)
{
	/* the results, in the order of the calls, for the transcript and the
	 * model */
	for (guint i = 0; i < self->server_calls->len; i++) {
		ServerCall *call = g_ptr_array_index(self->server_calls, i);
		JsonObject *msg;

		/* asked, not run: its result comes with the continuation */
		if (call->parked)
			continue;
		msg = json_object_new();
		add_result_block(self, call);
		json_object_set_string_member(msg, "role", "tool");
		json_object_set_string_member(msg, "tool_call_id", call->id);
		json_object_set_string_member(msg, "content", call->content);
		json_array_add_object_element(self->context, msg);
	}
	g_ptr_array_set_size(self->server_calls, 0);
	self->next_call = 0;
	if (g_cancellable_is_cancelled(self->cancellable) || self->detached) {
		finish(self, g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "Cancelled"));
		return;
	}
	if (self->client_calls != NULL) {
		end_with_client_calls(self);
		return;
	}
	/* a person decides before the model is called again */
	if (self->parked > 0) {
		finish(self, NULL);
		return;
	}
	self->final_step = self->steps >= confab_agent_get_max_steps(self->agent);
	run_step(self);
}

/* outcome: ok, tool_error (the tool said so), failed (it could not be
 * run or did not answer), unknown (no such tool) */
static void
count_call(ConfabAgentLoop *self, ServerCall *call, const gchar *outcome, gint64 elapsed_us)
{
	confab_metrics_add(self->metrics,
			   CONFAB_METRIC_TOOL_CALLS,
			   1,
			   confab_agent_get_id(self->agent),
			   call->server != NULL ? call->server : "",
			   outcome);
	if (call->server != NULL)
		confab_metrics_series_observe(
		    confab_metrics_series(self->metrics, CONFAB_METRIC_TOOL_DURATION, call->server),
		    elapsed_us / 1e6);
}

static void
call_done(ConfabAgentLoop *self,
	  ServerCall *call,
	  const gchar *outcome,
	  gboolean is_error,
	  const gchar *content)
{
	g_autoptr(GString) event = g_string_new("{\"type\":\"result\",\"id\":");
	gint64 elapsed_us = g_get_monotonic_time() - call->start;

	call->done = TRUE;
	call->is_error = is_error;
	call->content = g_strdup(content);
	call->elapsed_ms = elapsed_us / 1000;
	count_call(self, call, outcome, elapsed_us);
	confab_json_append_string(event, call->id);
	g_string_append_printf(event,
			       ",\"is_error\":%s,\"elapsed_ms\":%" G_GINT64_FORMAT,
			       is_error ? "true" : "false",
			       call->elapsed_ms);
	/* why Confab could not run it (the server's own output is not
	 * streamed): "authorization needed …", a timeout, a dead server */
	if (strcmp(outcome, "failed") == 0 && content != NULL) {
		g_string_append(event, ",\"error\":");
		confab_json_append_string(event, content);
	}
	g_string_append_c(event, '}');
	emit_event(self, event);
	self->running--;
	start_tools(self);
}

static void
tool_call_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ServerCall *call = user_data;
	g_autoptr(ConfabAgentLoop) self = g_object_ref(call->loop);
	g_autoptr(ConfabMcpToolResult) tool_result = NULL;
	g_autoptr(GError) error = NULL;

	tool_result = confab_toolbox_call_finish(CONFAB_TOOLBOX(source), result, &error);
	g_object_unref(self); /* the call's own reference */
	if (tool_result == NULL) {
		g_autofree gchar *reason = g_strdup_printf("The tool failed: %s", error->message);
		call_done(self, call, "failed", TRUE, reason);
		return;
	}
	call_done(self,
		  call,
		  tool_result->is_error ? "tool_error" : "ok",
		  tool_result->is_error,
		  tool_result->text);
}

/* ---------- elicitations ---------- */

static void
waiting_begins(ConfabAgentLoop *self);
static void
waiting_ends(ConfabAgentLoop *self);

/* A server's question during a call, while the person answers: it holds
 * the loop, not the call (the call may end first, by its own timeout). */
typedef struct {
	ConfabAgentLoop *loop;		   /* owned */
	ConfabMcpElicitation *elicitation; /* owned */
	gchar *tool_call_id;		   /* owned */
} Ask;

/* The wait is over. A call may end before its server's question is
 * answered (the call's own timeout), and the loop with it: a loop that has
 * finished hears nothing more and keeps no deadline. */
static gboolean
ask_waiting_ends(ConfabAgentLoop *self)
{
	if (self->task == NULL)
		self->deadline_left_ms = 0;
	waiting_ends(self);
	return self->task != NULL;
}

static void
ask_free(Ask *ask)
{
	g_object_unref(ask->loop);
	g_free(ask->tool_call_id);
	g_free(ask);
}

/* Answers the server (from the toolbox's context), with what is stored. */
static void
ask_answer(Ask *ask, const ConfabElicitationRequest *answered)
{
	g_autoptr(JsonNode) content = NULL;
	const gchar *action = "cancel";

	if (answered != NULL && g_strcmp0(answered->state, CONFAB_ELICITATION_ACCEPTED) == 0) {
		action = "accept";
		content =
		    confab_json_from_string(answered->content != NULL ? answered->content : "{}");
	} else if (answered != NULL &&
		   g_strcmp0(answered->state, CONFAB_ELICITATION_DECLINED) == 0) {
		action = "decline";
	}
	confab_toolbox_answer_elicitation(ask->loop->toolbox,
					  g_steal_pointer(&ask->elicitation),
					  action,
					  content != NULL && JSON_NODE_HOLDS_OBJECT(content)
					      ? json_node_get_object(content)
					      : NULL);
	ask_free(ask);
}

static void
elicitation_answered_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Ask *ask = user_data;
	ConfabAgentLoop *self = ask->loop;
	g_autoptr(ConfabElicitationRequest) answered = NULL;
	g_autoptr(GString) event = g_string_new("{\"type\":\"elicitation\",\"id\":");

	answered = confab_elicitations_wait_finish(CONFAB_ELICITATIONS(source), result, NULL);
	if (ask_waiting_ends(self)) {
		confab_json_append_string(event, answered->id);
		g_string_append(event, ",\"state\":");
		confab_json_append_string(event, answered->state);
		g_string_append_c(event, '}');
		emit_event(self, event);
	}
	ask_answer(ask, answered);
}

static void
elicitation_created_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Ask *ask = user_data;
	ConfabAgentLoop *self = ask->loop;
	g_autoptr(ConfabElicitationRequest) request = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) event = g_string_new("{\"type\":\"elicitation_request\",\"id\":");

	request = confab_elicitations_create_finish(CONFAB_ELICITATIONS(source), result, &error);
	if (request == NULL) {
		g_message("an elicitation of %s could not be asked: %s",
			  confab_mcp_elicitation_get_server(ask->elicitation),
			  error->message);
		ask_waiting_ends(self);
		ask_answer(ask, NULL);
		return;
	}
	/* waiting first: whoever hears of the request can answer it at once */
	confab_elicitations_wait_async(CONFAB_ELICITATIONS(source),
				       request,
				       elicitation_answered_cb,
				       ask);
	if (self->task == NULL)
		return;
	confab_json_append_string(event, request->id);
	g_string_append(event, ",\"tool_call_id\":");
	confab_json_append_string(event, ask->tool_call_id);
	g_string_append(event, ",\"server\":");
	confab_json_append_string(event, request->server);
	g_string_append(event, ",\"message\":");
	confab_json_append_string(event, request->message);
	g_string_append_printf(event, ",\"requested_schema\":%s}", request->schema);
	emit_event(self, event);
}

/* From the toolbox: the server of @user_data's call asks the person. */
static void
on_elicit(ConfabMcpElicitation *elicitation, gpointer user_data)
{
	ServerCall *call = user_data;
	ConfabAgentLoop *self = call->loop;
	g_autoptr(ConfabElicitationRequest) request = NULL;
	g_autoptr(JsonNode) schema = NULL;
	Ask *ask = g_new0(Ask, 1);

	ask->loop = g_object_ref(self);
	ask->elicitation = confab_mcp_elicitation_ref(elicitation);
	ask->tool_call_id = g_strdup(call->id);
	if (self->elicitations == NULL || self->task == NULL || self->approvals_owner == NULL ||
	    self->approvals_session == NULL || call->server == NULL) {
		ask_answer(ask, NULL);
		return;
	}
	schema = json_node_init_object(json_node_alloc(),
				       confab_mcp_elicitation_get_schema(elicitation));
	request = confab_elicitation_request_new();
	request->owner = g_strdup(self->approvals_owner);
	request->agent_id = g_strdup(confab_agent_get_id(self->agent));
	request->session_id = g_strdup(self->approvals_session);
	request->server = g_strdup(call->server);
	request->message = g_strdup(confab_mcp_elicitation_get_message(elicitation));
	request->schema = json_to_string(schema, FALSE);
	/* the total timeout stops while the person answers */
	waiting_begins(self);
	confab_elicitations_create_async(self->elicitations, request, elicitation_created_cb, ask);
}

/* Runs a call on its server (approved, or needing no approval). */
static void
run_call(ConfabAgentLoop *self, ServerCall *call)
{
	g_autoptr(JsonNode) args = NULL;

	args = confab_json_from_string(*call->arguments != '\0' ? call->arguments : "{}");
	if (args == NULL || !JSON_NODE_HOLDS_OBJECT(args)) {
		call_done(self, call, "failed", TRUE, "The arguments are not a JSON object");
		return;
	}
	confab_toolbox_call_elicit_async(self->toolbox,
					 confab_agent_get_id(self->agent),
					 confab_agent_get_mcp_servers(self->agent),
					 call->name,
					 json_node_get_object(args),
					 on_progress,
					 on_elicit,
					 call,
					 NULL,
					 self->cancellable,
					 tool_call_cb,
					 call);
	g_object_ref(self); /* until tool_call_cb */
}

/* ---------- approvals ---------- */

static gboolean
call_needs_approval(ConfabAgentLoop *self, ServerCall *call)
{
	const ConfabToolConfigServer *server;

	if (self->approvals == NULL || self->tool_config == NULL || call->server == NULL ||
	    call->tool == NULL)
		return FALSE;
	server = confab_tool_config_lookup_server(self->tool_config, call->server);
	return server != NULL && confab_tool_config_server_requires_approval(server, call->tool);
}

/* The total timeout stops while a person decides, and goes on after. */
static void
waiting_begins(ConfabAgentLoop *self)
{
	if (self->waiting++ > 0 || self->deadline == NULL)
		return;
	self->deadline_left_ms =
	    MAX((g_source_get_ready_time(self->deadline) - g_get_monotonic_time()) / 1000, 1);
	confab_source_clear(&self->deadline);
}

static gboolean
on_deadline(gpointer user_data);

static void
waiting_ends(ConfabAgentLoop *self)
{
	g_assert(self->waiting > 0);
	if (--self->waiting > 0 || self->deadline_left_ms == 0)
		return;
	self->deadline = confab_source_add_timeout(self->deadline_left_ms, on_deadline, self);
	self->deadline_left_ms = 0;
}

static void
add_approval_request_block(ConfabAgentLoop *self, const ConfabApproval *approval)
{
	block_begin(self, "approval_request");
	block_string(self, "id", approval->id);
	block_string(self, "tool_call_id", approval->tool_call_id);
	block_string(self, "name", approval->name);
	block_string(self, "arguments", approval->arguments);
	block_string(self, "server", approval->server);
	g_string_append_c(self->blocks, '}');
}

static void
add_approval_block(ConfabAgentLoop *self, const ConfabApproval *approval)
{
	block_begin(self, "approval");
	block_string(self, "id", approval->id);
	g_string_append_printf(self->blocks,
			       ",\"approve\":%s",
			       approval->state == CONFAB_APPROVAL_STATE_APPROVED ? "true"
										 : "false");
	g_string_append(self->blocks, ",\"reason\":");
	confab_json_append_string(self->blocks, approval->reason);
	block_string(self, "by", approval->decided_by != NULL ? approval->decided_by : "timeout");
	/* answering an earlier response's request: the call is not in this
	 * answer's transcript, so the block says which it was */
	if (approval->response_id != NULL) {
		block_string(self, "tool_call_id", approval->tool_call_id);
		block_string(self, "server", approval->server);
		block_string(self, "name", approval->name);
		block_string(self, "arguments", approval->arguments);
	}
	g_string_append_c(self->blocks, '}');
}

static void
emit_approval_events(ConfabAgentLoop *self, const ConfabApproval *approval, gboolean decided)
{
	g_autoptr(GString) event = g_string_new(NULL);

	if (!decided) {
		g_string_append(event, "{\"type\":\"approval_request\",\"id\":");
		confab_json_append_string(event, approval->id);
		g_string_append(event, ",\"tool_call_id\":");
		confab_json_append_string(event, approval->tool_call_id);
		g_string_append(event, ",\"server\":");
		confab_json_append_string(event, approval->server);
		g_string_append(event, ",\"name\":");
		confab_json_append_string(event, approval->name);
		g_string_append(event, ",\"arguments\":");
		confab_json_append_string(event, approval->arguments);
	} else {
		g_string_append(event, "{\"type\":\"approval\",\"id\":");
		confab_json_append_string(event, approval->id);
		g_string_append_printf(event,
				       ",\"approve\":%s,\"by\":",
				       approval->state == CONFAB_APPROVAL_STATE_APPROVED ? "true"
											 : "false");
		confab_json_append_string(event,
					  approval->decided_by != NULL ? approval->decided_by
								       : "timeout");
	}
	g_string_append_c(event, '}');
	emit_event(self, event);
}

static gchar *
declined_text(const ConfabApproval *approval)
{
	if (approval->state == CONFAB_APPROVAL_STATE_TIMED_OUT)
		return g_strdup_printf(
		    "The user did not approve this tool call in time (%s), so it "
		    "was not run.",
		    approval->reason != NULL ? approval->reason : "no decision");
	if (approval->reason != NULL && *approval->reason != '\0')
		return g_strdup_printf("The user declined to run this tool call. Their reason: %s",
				       approval->reason);
	return g_strdup("The user declined to run this tool call.");
}

/* @call's approval is decided: the call runs, or gets a result saying it
 * did not. A resumed call (a Responses continuation) was not in this
 * answer's events yet: it is told now, when it runs. */
static void
apply_decision(ConfabAgentLoop *self, ServerCall *call)
{
	g_autofree gchar *declined = NULL;

	add_approval_block(self, call->approval);
	emit_approval_events(self, call->approval, TRUE);
	if (call->approval->state == CONFAB_APPROVAL_STATE_APPROVED &&
	    !g_cancellable_is_cancelled(self->cancellable)) {
		/* the wait was not the call's: it starts now */
		call->start = g_get_monotonic_time();
		if (!call->resumed) {
			run_call(self, call);
			return;
		}
		emit_call_event(self, call);
		/* the agent's tools changed since it was asked */
		if (self->toolbox == NULL || find_server_tool(self, call->name) == NULL) {
			g_autofree gchar *reason =
			    g_strdup_printf("No tool is called '%s' any more", call->name);
			call_done(self, call, "unknown", TRUE, reason);
			return;
		}
		run_call(self, call);
		return;
	}
	if (call->approval->state == CONFAB_APPROVAL_STATE_APPROVED) {
		call_done(self, call, "failed", TRUE, "Not run: the turn was stopped");
		return;
	}
	declined = declined_text(call->approval);
	call_done(self, call, "declined", TRUE, declined);
}

static void
approval_decided_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ServerCall *call = user_data;
	g_autoptr(ConfabAgentLoop) self = call->loop; /* the wait's reference */
	g_autoptr(GError) error = NULL;

	call->approval = confab_approvals_wait_finish(CONFAB_APPROVALS(source), result, &error);
	waiting_ends(self);
	g_assert(call->approval != NULL);
	apply_decision(self, call);
}

static void
approval_created_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ServerCall *call = user_data;
	ConfabAgentLoop *self = call->loop;
	g_autoptr(ConfabApproval) approval = NULL;
	g_autoptr(GError) error = NULL;

	approval = confab_approvals_create_finish(CONFAB_APPROVALS(source), result, &error);
	if (approval == NULL) {
		g_autofree gchar *reason =
		    g_strdup_printf("Not run: its approval could not be asked: %s", error->message);
		g_autoptr(ConfabAgentLoop) owned = self; /* the wait's reference */
		waiting_ends(self);
		call_done(self, call, "failed", TRUE, reason);
		return;
	}
	/* waiting first: whoever hears of the request can decide it at once */
	confab_approvals_wait_async(CONFAB_APPROVALS(source), approval, approval_decided_cb, call);
	add_approval_request_block(self, approval);
	emit_approval_events(self, approval, FALSE);
	if (self->sink != NULL && self->sink->approval_request != NULL)
		self->sink->approval_request(approval, self->sink_data);
}

/* What a person is asked about @call: the approval to store. */
static ConfabApproval *
approval_request_new(ConfabAgentLoop *self, ServerCall *call)
{
	ConfabApproval *request = confab_approval_new();

	request->owner = g_strdup(self->approvals_owner);
	request->agent_id = g_strdup(confab_agent_get_id(self->agent));
	request->session_id = g_strdup(self->approvals_session);
	request->server = g_strdup(call->server);
	request->tool = g_strdup(call->tool);
	request->name = g_strdup(call->name);
	request->arguments = g_strdup(call->arguments);
	request->tool_call_id = g_strdup(call->id);
	request->response_id = g_strdup(self->defer_response);
	return request;
}

/* The call waits for a person; the step's other calls go on. */
static void
ask_approval(ConfabAgentLoop *self, ServerCall *call)
{
	g_autoptr(ConfabApproval) request = approval_request_new(self, call);

	waiting_begins(self);
	g_object_ref(self); /* until approval_decided_cb */
	confab_approvals_create_async(self->approvals, request, approval_created_cb, call);
}

/* A deferred call is asked; it is done without a result, and the loop
 * ends once the step's other calls are. */
static void
parked_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ServerCall *call = user_data;
	g_autoptr(ConfabAgentLoop) self = call->loop; /* the request's reference */
	g_autoptr(GError) error = NULL;

	call->approval = confab_approvals_create_finish(CONFAB_APPROVALS(source), result, &error);
	if (call->approval == NULL) {
		g_autofree gchar *reason =
		    g_strdup_printf("Not run: its approval could not be asked: %s", error->message);
		call_done(self, call, "failed", TRUE, reason);
		return;
	}
	add_approval_request_block(self, call->approval);
	emit_approval_events(self, call->approval, FALSE);
	call->parked = TRUE;
	call->done = TRUE;
	self->parked++;
	self->running--;
	start_tools(self);
}

static void
park_call(ConfabAgentLoop *self, ServerCall *call)
{
	g_autoptr(ConfabApproval) request = approval_request_new(self, call);

	g_object_ref(self); /* until parked_cb */
	confab_approvals_create_async(self->approvals, request, parked_cb, call);
}

/* A continuation's answer is decided; the call runs, or is declined. */
static void
answered_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ServerCall *call = user_data;
	g_autoptr(ConfabAgentLoop) self = call->loop; /* the answer's reference */
	g_autoptr(ConfabApproval) decided = NULL;
	g_autoptr(GError) error = NULL;

	decided = confab_approvals_decide_finish(CONFAB_APPROVALS(source), result, &error);
	waiting_ends(self);
	if (decided == NULL) {
		/* answered meanwhile by another continuation: that one runs it */
		g_autofree gchar *reason = g_strdup_printf("Not run: %s", error->message);
		call_done(self, call, "failed", TRUE, reason);
		return;
	}
	confab_approval_free(call->approval);
	call->approval = g_steal_pointer(&decided);
	call->server = call->approval->server;
	call->tool = call->approval->tool;
	apply_decision(self, call);
}

static void
answer_call(ConfabAgentLoop *self, ServerCall *call)
{
	ConfabApproval *approval = call->approval;

	/* decided already, by an item added to its conversation (the
	 * Conversations API's): it runs, or not, as decided */
	if (approval->state != CONFAB_APPROVAL_STATE_PENDING) {
		call->server = approval->server;
		call->tool = approval->tool;
		apply_decision(self, call);
		return;
	}

	/* a person's answer outlives a client that leaves now, as a wait does */
	waiting_begins(self);
	g_object_ref(self); /* until answered_cb */
	confab_approvals_answer_async(self->approvals,
				      approval->id,
				      approval->owner,
				      approval->response_id,
				      call->approve,
				      call->reason,
				      answered_cb,
				      call);
}

static void
start_call(ConfabAgentLoop *self, ServerCall *call)
{
	call->start = g_get_monotonic_time();
	self->running++;
	if (call->resumed) {
		if (self->approvals == NULL || g_cancellable_is_cancelled(self->cancellable)) {
			call_done(self, call, "failed", TRUE, "Not run: the turn was stopped");
			return;
		}
		answer_call(self, call);
		return;
	}
	/* a call asked of a person in a later response does not start here */
	if (self->defer_response != NULL && !g_cancellable_is_cancelled(self->cancellable) &&
	    call_needs_approval(self, call)) {
		park_call(self, call);
		return;
	}
	emit_call_event(self, call);
	if (call->server == NULL) {
		g_autofree gchar *reason = g_strdup_printf("No tool is called '%s'", call->name);
		call_done(self, call, "unknown", TRUE, reason);
		return;
	}
	/* the client left while other calls waited for a person: what did
	 * not start does not start */
	if (self->detached) {
		call_done(self, call, "failed", TRUE, "Not run: the turn was stopped");
		return;
	}
	if (call_needs_approval(self, call)) {
		if (g_cancellable_is_cancelled(self->cancellable)) {
			call_done(self, call, "failed", TRUE, "Not run: the turn was stopped");
			return;
		}
		ask_approval(self, call);
		return;
	}
	run_call(self, call);
}

/* Starts calls until CONFAB_AGENT_LOOP_MAX_PARALLEL_TOOLS run; once all are
 * done, the model is called again. */
static void
on_flow_open_tools(gpointer user_data)
{
	ConfabAgentLoop *self = user_data;

	self->flow_wait = 0;
	if (g_cancellable_is_cancelled(self->cancellable)) {
		/* the calls not started never will be */
		for (; self->next_call < self->server_calls->len; self->next_call++) {
			ServerCall *call = g_ptr_array_index(self->server_calls, self->next_call);
			call->done = TRUE;
			call->is_error = TRUE;
			call->content = g_strdup("Not run: the turn was cancelled");
		}
	}
	start_tools(self);
}

static void
start_tools(ConfabAgentLoop *self)
{
	/* a call that fails at once ends inside start_call(): the loop below
	 * goes on, and looks at what is left once, after it */
	if (self->starting_tools || self->flow_wait != 0)
		return;
	self->starting_tools = TRUE;
	while (self->running < CONFAB_AGENT_LOOP_MAX_PARALLEL_TOOLS &&
	       self->next_call < self->server_calls->len) {
		/* no new call while the client is behind: its events would
		 * only wait in the queue */
		if (confab_flow_is_held(self->flow) &&
		    !g_cancellable_is_cancelled(self->cancellable)) {
			self->flow_wait = confab_flow_wait(self->flow,
							   self->cancellable,
							   on_flow_open_tools,
							   self);
			break;
		}
		start_call(self, g_ptr_array_index(self->server_calls, self->next_call++));
	}
	self->starting_tools = FALSE;
	if (self->running == 0 && self->next_call == self->server_calls->len)
		after_tools(self);
}

/* ---------- running ---------- */

static void
on_parent_cancelled(GCancellable *parent, gpointer user_data)
{
	ConfabAgentLoop *self = user_data;

	/* a person's decision outlives its client: see the top of the file */
	if (self->waiting > 0) {
		self->detached = TRUE;
		/* no client to wait for any more: the calls not started yet are
		 * refused now rather than held by its flow */
		confab_flow_clear_wait(self->flow, &self->flow_wait);
		g_clear_pointer(&self->flow, confab_flow_unref);
		start_tools(self);
		return;
	}
	g_cancellable_cancel(self->cancellable);
}

static gboolean
on_deadline(gpointer user_data)
{
	ConfabAgentLoop *self = user_data;

	g_clear_pointer(&self->deadline, g_source_unref);
	self->timed_out = TRUE;
	g_cancellable_cancel(self->cancellable);
	return G_SOURCE_REMOVE;
}

/* A server waiting for a person's authorization (OAuth) offers no tools:
 * the stream says so, with the command that authorizes it. */
static void
announce_authorization_needed(ConfabAgentLoop *self)
{
	for (guint i = 0; self->server_tools != NULL && i < self->server_tools->len; i++) {
		ConfabToolboxTool *tool = g_ptr_array_index(self->server_tools, i);
		g_autoptr(GString) event = NULL;
		if ((tool->name != NULL && *tool->name != '\0') ||
		    !g_str_has_prefix(tool->status != NULL ? tool->status : "",
				      "authorization needed"))
			continue;
		event = g_string_new("{\"type\":\"authorization_needed\",\"server\":");
		confab_json_append_string(event, tool->server);
		g_string_append(event, ",\"error\":");
		confab_json_append_string(event, tool->status);
		g_string_append_c(event, '}');
		emit_event(self, event);
	}
}

/**
 * confab_agent_loop_run_async:
 * @self: a #ConfabAgentLoop
 * @cancellable: (nullable): stops the loop: the model call or the tools
 *   running (the tool servers are told)
 * @callback: called when the loop ends
 * @user_data: data for @callback
 *
 * Runs the loop. It fails with the upstream's error, with
 * CONFAB_ERROR_UPSTREAM_TIMEOUT when the whole loop outlives its timeout, or
 * G_IO_ERROR_CANCELLED; the text and the transcript up to there stay
 * readable.
 */
void
confab_agent_loop_run_async(ConfabAgentLoop *self,
			    GCancellable *cancellable,
			    GAsyncReadyCallback callback,
			    gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_AGENT_LOOP(self));
	g_return_if_fail(self->task == NULL);

	self->task = g_task_new(self, NULL, callback, user_data);
	g_task_set_source_tag(self->task, confab_agent_loop_run_async);
	if (cancellable != NULL) {
		self->parent = g_object_ref(cancellable);
		self->parent_id =
		    g_cancellable_connect(cancellable, G_CALLBACK(on_parent_cancelled), self, NULL);
	}
	if (has_server_tools(self) && self->total_timeout > 0)
		self->deadline =
		    confab_source_add_timeout_seconds(self->total_timeout, on_deadline, self);
	announce_authorization_needed(self);
	/* an earlier response's calls, answered now, before the model */
	if (self->resumed->len > 0) {
		while (self->resumed->len > 0)
			g_ptr_array_add(self->server_calls,
					g_ptr_array_steal_index(self->resumed, 0));
		start_tools(self);
		return;
	}
	run_step(self);
}

gboolean
confab_agent_loop_run_finish(ConfabAgentLoop *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/**
 * confab_agent_loop_get_content:
 *
 * Returns: the answer's text: every step's, parted by blank lines
 */
const gchar *
confab_agent_loop_get_content(ConfabAgentLoop *self)
{
	return self->content->str;
}

/**
 * confab_agent_loop_get_blocks:
 *
 * Returns: the transcript: content-block JSON objects, comma-separated,
 *   without the enclosing brackets (empty when there is nothing)
 */
const gchar *
confab_agent_loop_get_blocks(ConfabAgentLoop *self)
{
	return self->blocks->str;
}

/**
 * confab_agent_loop_steal_blocks:
 * @is_content: (out): set to whether the transcript is one text block
 *   holding the whole content, the answer's content part as it is stored
 *
 * The transcript as confab_agent_loop_get_blocks() gives it, handed over
 * rather than copied (it holds the whole answer); the loop's is then empty.
 *
 * Returns: (transfer full): the transcript
 */
GString *
confab_agent_loop_steal_blocks(ConfabAgentLoop *self, gboolean *is_content)
{
	GString *blocks = g_steal_pointer(&self->blocks);

	*is_content = self->blocks_are_content;
	self->blocks_are_content = FALSE;
	self->blocks = g_string_new(NULL);
	return blocks;
}

/**
 * confab_agent_loop_get_tool_calls_json:
 *
 * Returns: (transfer full) (nullable): the tool calls the answer leaves to
 *   the client, as an OpenAI `tool_calls` array, or %NULL
 */
gchar *
confab_agent_loop_get_tool_calls_json(ConfabAgentLoop *self)
{
	g_autoptr(JsonArray) calls = NULL;
	g_autoptr(JsonNode) node = NULL;

	if (self->client_calls != NULL) {
		calls = json_array_ref(self->client_calls);
	} else if (!has_server_tools(self) && self->step_calls->len > 0) {
		calls = json_array_new();
		for (guint i = 0; i < self->step_calls->len; i++)
			json_array_add_object_element(
			    calls,
			    openai_call(g_ptr_array_index(self->step_calls, i), i));
	} else {
		return NULL;
	}
	for (guint i = 0; i < json_array_get_length(calls); i++)
		json_object_remove_member(json_array_get_object_element(calls, i), "index");
	node = json_node_init_array(json_node_alloc(), calls);
	return confab_json_to_string(node);
}

const gchar *
confab_agent_loop_get_finish_reason(ConfabAgentLoop *self)
{
	return self->finish_reason != NULL ? self->finish_reason : "stop";
}

/**
 * confab_agent_loop_get_usage:
 * @self: a #ConfabAgentLoop
 * @prompt_tokens: (out): summed over every model call, or -1
 * @completion_tokens: (out): summed over every model call, or -1
 *
 * Returns: whether any model call reported usage
 */
gboolean
confab_agent_loop_get_usage(ConfabAgentLoop *self, gint64 *prompt_tokens, gint64 *completion_tokens)
{
	*prompt_tokens = self->prompt_tokens;
	*completion_tokens = self->completion_tokens;
	return self->usage_known;
}

/**
 * confab_agent_loop_get_reasoning_tokens:
 * @self: a #ConfabAgentLoop
 *
 * Returns: of the completion tokens, those the model reasoned with, summed
 *   over every model call that reported usage (0 when none said)
 */
gint64
confab_agent_loop_get_reasoning_tokens(ConfabAgentLoop *self)
{
	return self->reasoning_tokens;
}

/**
 * confab_agent_loop_get_refusal:
 *
 * Returns: (nullable): what the model refused with, every step's; %NULL
 *   for none
 */
const gchar *
confab_agent_loop_get_refusal(ConfabAgentLoop *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT_LOOP(self), NULL);
	return self->refusal->len > 0 ? self->refusal->str : NULL;
}

/**
 * confab_agent_loop_get_reasoning:
 *
 * Returns: (nullable): the model's reasoning, every step's; %NULL for none
 */
const gchar *
confab_agent_loop_get_reasoning(ConfabAgentLoop *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT_LOOP(self), NULL);
	return self->reasoning->len > 0 ? self->reasoning->str : NULL;
}

/**
 * confab_agent_loop_get_logprobs:
 *
 * Returns: (transfer none) (nullable): the log probabilities of the
 *   answer, when the upstream gave them
 */
JsonObject *
confab_agent_loop_get_logprobs(ConfabAgentLoop *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT_LOOP(self), NULL);
	return self->logprobs;
}
