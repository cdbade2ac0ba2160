/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <string.h>

#include "core/confab-turn.h"
#include "http/confab-http-replay.h"
#include "http/confab-http-response.h"
#include "http/confab-http-responses.h"
#include "model/confab-id.h"
#include "openai/confab-list-params.h"
#include "openai/confab-openai-error.h"
#include "openai/confab-openai-message.h"
#include "openai/confab-responses-request.h"
#include "util/confab-error.h"
#include "util/confab-json.h"
#include "util/confab-source.h"

/*
 * POST /api/v1/responses: the Responses API's door on a turn.
 *
 * The turn is the chat completions one (the request is translated to Chat
 * Completions by ConfabResponsesRequest); this door turns what the turn
 * says into output items. The same sink serves both modes: for a stream
 * each item is also told as named Server-Sent Events, numbered from 0,
 * as OpenAI sends them; the terminal event (response.completed,
 * .incomplete or .failed) goes out once the answer is committed, and no
 * [DONE] follows. Without streaming, the items make one JSON object.
 *
 * A stream's head (and response.created, response.in_progress) waits for an
 * upstream to answer the turn's first model call with a success status, or
 * for [http] stream_head_wait; a turn that fails before that answers an
 * HTTP error, as a JSON one does. In the background the same holds: the
 * response's record (created first) then says `failed`, and a client that
 * leaves before the head gets the stream begun for it, its events kept.
 */

typedef struct {
	gint index;	  /* output_index */
	gchar *item_id;	  /* owned */
	gchar *call_id;	  /* owned: the tool call's id */
	gchar *server;	  /* owned */
	gchar *name;	  /* owned: the tool's own name */
	gchar *arguments; /* owned */
	gboolean is_error;
} McpItem;

static void
mcp_item_free(McpItem *item)
{
	g_free(item->item_id);
	g_free(item->call_id);
	g_free(item->server);
	g_free(item->name);
	g_free(item->arguments);
	g_free(item);
}

typedef struct {
	ConfabEngine *engine;		 /* owned */
	ConfabHttpExchange *exchange;	 /* owned */
	ConfabTurn *turn;		 /* owned */
	ConfabResponsesRequest *request; /* owned (its chat request is the turn's) */
	gchar *response_id;		 /* owned */
	gchar *stored_id;		 /* owned: what its messages carry (store: false) */
	gboolean streaming;		 /* the head is sent */
	GSource *head_wait;		 /* owned: sends the head if no upstream answered */
	gboolean closed;		 /* the items are all done */
	guint64 sequence;		 /* the next sequence_number */
	GPtrArray *items;		 /* owned: gchar*, the done items' JSON; NULL while open */
	gint text_index;		 /* the open message item, or -1 */
	gchar *text_id;			 /* owned */
	GString *text;			 /* owned */
	gint reasoning_index;		 /* the open reasoning item, or -1 */
	gchar *reasoning_id;		 /* owned */
	GString *reasoning;		 /* owned */
	GPtrArray *mcp_open;		 /* owned: McpItem, called, not yet done */
	GPtrArray *mcp_pending;		 /* unowned: McpItem of mcp_open with a result */
	guint n_messages;		 /* message items so far */
	guint n_reasoning;		 /* reasoning items so far */
	guint n_mcp;			 /* mcp_call items so far */
	guint n_fc;			 /* function_call items so far */
	ConfabPrincipal *principal;	 /* owned, until the turn takes it */
	gboolean session_is_new;	 /* the turn starts a conversation (or a fork) */
	GError *run_error; /* owned: how the turn ended, while store: false cleans up */
	gboolean run_ok;
	GPtrArray *answers; /* owned: ConfabApproval, pending, that the input answers (in order) */
	gboolean gone;	    /* the client left before the turn began */
	gboolean cut;	    /* the server is cutting the stream: its client took nothing */
	GPtrArray *fork;    /* owned, nullable: a fork's history, while the record is saved */
	gchar *fork_title;  /* owned */
	gchar *new_session; /* owned, nullable: a new conversation's id, chosen for its record */
	/* background: the turn runs with no client attached; a stream's
	 * events are kept, in batches, for clients to replay */
	gboolean detached;  /* the POST is answered, or its client gone */
	GString *kept;	    /* owned, nullable: events not yet kept */
	gint64 kept_first;  /* the sequence number of @kept's first event */
	guint flush_source; /* keeps @kept every FLUSH_MS */
	gboolean flushing;  /* a batch is being written */
	gboolean ending;    /* the turn is over: the last batch, then the status */
} RespCtx;

/* how often a background stream's events are kept */
#define FLUSH_MS 200
/* how many of a conversation's newest messages a response continuing it
 * reads for the decisions added as items since its last answer */
#define CONVERSATION_TAIL 64

static void
resp_ctx_free(RespCtx *ctx)
{
	confab_http_exchange_set_gone_func(ctx->exchange, NULL, NULL);
	confab_http_exchange_set_drained_func(ctx->exchange, NULL, NULL);
	confab_http_exchange_set_cut_func(ctx->exchange, NULL, NULL);
	if (ctx->turn != NULL)
		confab_turn_set_sink(ctx->turn, NULL, NULL);
	confab_source_clear(&ctx->head_wait);
	g_clear_object(&ctx->turn);
	g_clear_pointer(&ctx->exchange, confab_http_exchange_unref);
	g_clear_object(&ctx->engine);
	g_clear_pointer(&ctx->request, confab_responses_request_free);
	g_free(ctx->response_id);
	g_free(ctx->stored_id);
	g_ptr_array_unref(ctx->items);
	g_free(ctx->text_id);
	g_string_free(ctx->text, TRUE);
	g_free(ctx->reasoning_id);
	g_string_free(ctx->reasoning, TRUE);
	g_ptr_array_unref(ctx->mcp_pending);
	g_ptr_array_unref(ctx->mcp_open);
	g_clear_pointer(&ctx->principal, confab_principal_free);
	g_clear_error(&ctx->run_error);
	g_ptr_array_unref(ctx->answers);
	g_clear_pointer(&ctx->fork, g_ptr_array_unref);
	g_free(ctx->fork_title);
	g_free(ctx->new_session);
	g_clear_handle_id(&ctx->flush_source, g_source_remove);
	if (ctx->kept != NULL)
		g_string_free(ctx->kept, TRUE);
	g_free(ctx);
}

static void
begin_stream(RespCtx *ctx, gboolean answered);

static void
on_client_gone(ConfabHttpExchange *exchange, gpointer user_data)
{
	RespCtx *ctx = user_data;
	g_debug("the client left during its response");
	if (ctx->request->background && ctx->turn != NULL) {
		/* it runs on without its client; its events are kept, from
		 * the first (a head that waited is not waited for) */
		ctx->detached = TRUE;
		if (ctx->kept != NULL)
			begin_stream(ctx, FALSE);
		return;
	}
	if (ctx->turn != NULL)
		confab_turn_cancel(ctx->turn);
	else
		ctx->gone = TRUE;
}

/* The client took nothing of its stream for idle_timeout: the turn stops
 * (stored as incomplete) and the stream ends with a stream_cut error. */
static void
on_stream_cut(ConfabHttpExchange *exchange, gpointer user_data)
{
	RespCtx *ctx = user_data;
	g_debug("the client took nothing of its response stream: cut");
	ctx->cut = TRUE;
	confab_turn_cancel(ctx->turn);
}

/*
 * An output item's id is its type's prefix, the response id's 26
 * characters and its rank among the response's items of that type
 * (msg_…_0, rs_…_0, mcp_…_1, fc_…_0): the stored response (GET) names its
 * items as the live one did, and an `item_reference` names its response.
 */
static gchar *
item_id(const gchar *prefix, const gchar *response_id, guint n)
{
	return g_strdup_printf("%s%s_%u", prefix, response_id + strlen(CONFAB_PREFIX_RESPONSE), n);
}

/* ---------- events ---------- */

/* `event: TYPE` and `data: {"type":TYPE,"sequence_number":N,FIELDS}`;
 * @fields is consumed. Nothing is written without a stream. */
static void
emit(RespCtx *ctx, const gchar *type, GString *fields)
{
	GString *event;

	if (!ctx->streaming || (ctx->kept == NULL && confab_http_exchange_is_gone(ctx->exchange))) {
		g_string_free(fields, TRUE);
		return;
	}
	event = g_string_new("event: ");
	g_string_append(event, type);
	g_string_append(event, "\ndata: {\"type\":");
	confab_json_append_string(event, type);
	g_string_append_printf(event, ",\"sequence_number\":%" G_GUINT64_FORMAT, ctx->sequence++);
	if (fields->len > 0) {
		g_string_append_c(event, ',');
		g_string_append_len(event, fields->str, fields->len);
	}
	g_string_append(event, "}\n\n");
	if (ctx->kept != NULL) {
		if (ctx->kept->len == 0)
			ctx->kept_first = (gint64)ctx->sequence - 1;
		g_string_append_len(ctx->kept, event->str, event->len);
	}
	if (!confab_http_exchange_is_gone(ctx->exchange))
		confab_http_exchange_write(ctx->exchange, event->str, event->len);
	g_string_free(event, TRUE);
	g_string_free(fields, TRUE);
}

/* `"item_id":…,"output_index":N` */
static GString *
item_fields(const gchar *item_id, gint index)
{
	GString *f = g_string_new("\"item_id\":");
	confab_json_append_string(f, item_id);
	g_string_append_printf(f, ",\"output_index\":%d", index);
	return f;
}

static gint
reserve_item(RespCtx *ctx)
{
	g_ptr_array_add(ctx->items, NULL);
	return (gint)ctx->items->len - 1;
}

static void
item_added(RespCtx *ctx, gint index, const gchar *item_json)
{
	GString *f = g_string_new(NULL);
	g_string_append_printf(f, "\"output_index\":%d,\"item\":%s", index, item_json);
	emit(ctx, "response.output_item.added", f);
}

static void
item_done(RespCtx *ctx, gint index, gchar *item_json)
{
	GString *f = g_string_new(NULL);
	g_string_append_printf(f, "\"output_index\":%d,\"item\":%s", index, item_json);
	emit(ctx, "response.output_item.done", f);
	g_free(g_ptr_array_index(ctx->items, index));
	g_ptr_array_index(ctx->items, index) = item_json;
}

/* ---------- reasoning ---------- */

static gchar *
reasoning_item(const gchar *id, const gchar *text)
{
	GString *out = g_string_new("{\"id\":");
	confab_json_append_string(out, id);
	g_string_append(out, ",\"type\":\"reasoning\",\"summary\":[");
	if (text != NULL) {
		g_string_append(out, "{\"type\":\"summary_text\",\"text\":");
		confab_json_append_string(out, text);
		g_string_append_c(out, '}');
	}
	g_string_append(out, "]}");
	return g_string_free(out, FALSE);
}

static void
close_reasoning(RespCtx *ctx)
{
	GString *f;

	if (ctx->reasoning_index < 0)
		return;
	f = item_fields(ctx->reasoning_id, ctx->reasoning_index);
	g_string_append(f, ",\"summary_index\":0,\"text\":");
	confab_json_append_string(f, ctx->reasoning->str);
	emit(ctx, "response.reasoning_summary_text.done", f);
	f = item_fields(ctx->reasoning_id, ctx->reasoning_index);
	g_string_append(f, ",\"summary_index\":0,\"part\":{\"type\":\"summary_text\",\"text\":");
	confab_json_append_string(f, ctx->reasoning->str);
	g_string_append_c(f, '}');
	emit(ctx, "response.reasoning_summary_part.done", f);
	item_done(ctx,
		  ctx->reasoning_index,
		  reasoning_item(ctx->reasoning_id, ctx->reasoning->str));
	ctx->reasoning_index = -1;
	g_clear_pointer(&ctx->reasoning_id, g_free);
	g_string_truncate(ctx->reasoning, 0);
}

static void
add_reasoning(RespCtx *ctx, const gchar *delta)
{
	GString *f;

	if (ctx->reasoning_index < 0) {
		g_autofree gchar *item = NULL;
		ctx->reasoning_index = reserve_item(ctx);
		ctx->reasoning_id = item_id("rs_", ctx->response_id, ctx->n_reasoning++);
		item = reasoning_item(ctx->reasoning_id, NULL);
		item_added(ctx, ctx->reasoning_index, item);
		f = item_fields(ctx->reasoning_id, ctx->reasoning_index);
		g_string_append(f,
				",\"summary_index\":0,\"part\":{\"type\":\"summary_text\","
				"\"text\":\"\"}");
		emit(ctx, "response.reasoning_summary_part.added", f);
	}
	g_string_append(ctx->reasoning, delta);
	f = item_fields(ctx->reasoning_id, ctx->reasoning_index);
	g_string_append(f, ",\"summary_index\":0,\"delta\":");
	confab_json_append_string(f, delta);
	emit(ctx, "response.reasoning_summary_text.delta", f);
}

/* ---------- text ---------- */

static gchar *
message_item(const gchar *id, const gchar *status, const gchar *text)
{
	GString *out = g_string_new("{\"id\":");
	confab_json_append_string(out, id);
	g_string_append(out, ",\"type\":\"message\",\"status\":");
	confab_json_append_string(out, status);
	g_string_append(out, ",\"role\":\"assistant\",\"content\":[");
	if (text != NULL) {
		g_string_append(out,
				"{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],"
				"\"text\":");
		confab_json_append_string(out, text);
		g_string_append_c(out, '}');
	}
	g_string_append(out, "]}");
	return g_string_free(out, FALSE);
}

static void
close_text(RespCtx *ctx)
{
	GString *f;

	if (ctx->text_index < 0)
		return;
	f = item_fields(ctx->text_id, ctx->text_index);
	g_string_append(f, ",\"content_index\":0,\"logprobs\":[],\"text\":");
	confab_json_append_string(f, ctx->text->str);
	emit(ctx, "response.output_text.done", f);
	f = item_fields(ctx->text_id, ctx->text_index);
	g_string_append(f,
			",\"content_index\":0,\"part\":{\"type\":\"output_text\","
			"\"annotations\":[],\"logprobs\":[],\"text\":");
	confab_json_append_string(f, ctx->text->str);
	g_string_append_c(f, '}');
	emit(ctx, "response.content_part.done", f);
	item_done(ctx, ctx->text_index, message_item(ctx->text_id, "completed", ctx->text->str));
	ctx->text_index = -1;
	g_clear_pointer(&ctx->text_id, g_free);
	g_string_truncate(ctx->text, 0);
}

static void
flush_mcp(RespCtx *ctx, gboolean force);

static void
add_text(RespCtx *ctx, const gchar *delta)
{
	GString *f;

	if (ctx->text_index < 0) {
		g_autofree gchar *item = NULL;
		/* the loop's blank line between two steps' words: the items
		 * already part them */
		if (g_str_equal(delta, "\n\n"))
			return;
		close_reasoning(ctx);
		ctx->text_index = reserve_item(ctx);
		ctx->text_id = item_id(CONFAB_PREFIX_MESSAGE, ctx->response_id, ctx->n_messages++);
		item = message_item(ctx->text_id, "in_progress", NULL);
		item_added(ctx, ctx->text_index, item);
		f = item_fields(ctx->text_id, ctx->text_index);
		g_string_append(f,
				",\"content_index\":0,\"part\":{\"type\":\"output_text\","
				"\"annotations\":[],\"logprobs\":[],\"text\":\"\"}");
		emit(ctx, "response.content_part.added", f);
	}
	g_string_append(ctx->text, delta);
	f = item_fields(ctx->text_id, ctx->text_index);
	g_string_append(f, ",\"content_index\":0,\"logprobs\":[],\"delta\":");
	confab_json_append_string(f, delta);
	emit(ctx, "response.output_text.delta", f);
}

/* ---------- the agent's own tools: mcp_call ---------- */

static gchar *
mcp_item_json(McpItem *item, const gchar *status, const gchar *output)
{
	GString *out = g_string_new("{\"id\":");
	confab_json_append_string(out, item->item_id);
	g_string_append(out, ",\"type\":\"mcp_call\",\"server_label\":");
	confab_json_append_string(out, item->server);
	g_string_append(out, ",\"name\":");
	confab_json_append_string(out, item->name);
	g_string_append(out, ",\"arguments\":");
	confab_json_append_string(out, output != NULL || status[0] != 'i' ? item->arguments : "");
	g_string_append(out, ",\"output\":");
	if (output != NULL && !item->is_error)
		confab_json_append_string(out, output);
	else
		g_string_append(out, "null");
	g_string_append(out, ",\"error\":");
	if (output != NULL && item->is_error)
		confab_json_append_string(out, output);
	else
		g_string_append(out, "null");
	g_string_append(out, ",\"status\":");
	confab_json_append_string(out, status);
	g_string_append_c(out, '}');
	return g_string_free(out, FALSE);
}

/* The transcript's blocks, read once for every call a flush looks for;
 * %NULL when there are none. */
static JsonArray *
transcript_blocks(RespCtx *ctx)
{
	const gchar *transcript = confab_turn_get_transcript(ctx->turn);
	g_autofree gchar *json = NULL;
	g_autoptr(JsonNode) node = NULL;

	if (transcript == NULL)
		return NULL;
	json = g_strconcat("[", transcript, "]", NULL);
	node = confab_json_from_string(json);
	if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
		return NULL;
	return json_array_ref(json_node_get_array(node));
}

/* The result of @call_id in @blocks (its tool_result block). */
static gchar *
find_tool_result(JsonArray *blocks, const gchar *call_id)
{
	if (blocks == NULL)
		return NULL;
	for (guint i = json_array_get_length(blocks); i > 0; i--) {
		JsonObject *block = json_array_get_object_element(blocks, i - 1);
		if (block == NULL ||
		    g_strcmp0(confab_json_get_string(block, "type"), "tool_result") != 0 ||
		    g_strcmp0(confab_json_get_string(block, "tool_call_id"), call_id) != 0)
			continue;
		return g_strdup(confab_json_get_string(block, "content"));
	}
	return NULL;
}

/* Calls whose result came: their item is done once the transcript holds
 * the result, which is after the step's last call returns; @force: at the
 * end, whatever the transcript holds. */
static void
flush_mcp(RespCtx *ctx, gboolean force)
{
	g_autoptr(JsonArray) blocks = NULL;

	if (ctx->mcp_pending->len == 0)
		return;
	blocks = transcript_blocks(ctx);
	for (guint i = 0; i < ctx->mcp_pending->len;) {
		McpItem *item = g_ptr_array_index(ctx->mcp_pending, i);
		g_autofree gchar *output = find_tool_result(blocks, item->call_id);

		if (output == NULL && !force) {
			i++;
			continue;
		}
		if (output == NULL)
			output = g_strdup("");
		item_done(ctx,
			  item->index,
			  mcp_item_json(item, item->is_error ? "failed" : "completed", output));
		g_ptr_array_remove_index(ctx->mcp_pending, i);
		g_ptr_array_remove(ctx->mcp_open, item);
	}
}

static McpItem *
find_mcp(RespCtx *ctx, const gchar *call_id)
{
	for (guint i = 0; call_id != NULL && i < ctx->mcp_open->len; i++) {
		McpItem *item = g_ptr_array_index(ctx->mcp_open, i);
		if (g_str_equal(item->call_id, call_id))
			return item;
	}
	return NULL;
}

static void
mcp_called(RespCtx *ctx, JsonObject *event)
{
	const gchar *name = confab_json_get_string(event, "name");
	const gchar *sep = name != NULL ? strstr(name, "__") : NULL;
	McpItem *item = g_new0(McpItem, 1);
	g_autofree gchar *json = NULL;
	GString *f;

	close_reasoning(ctx);
	close_text(ctx);
	item->index = reserve_item(ctx);
	item->call_id = g_strdup(confab_json_get_string(event, "id"));
	if (item->call_id == NULL)
		item->call_id = g_strdup("");
	item->item_id = item_id("mcp_", ctx->response_id, ctx->n_mcp++);
	/* the model sees SERVER__tool */
	item->server = sep != NULL ? g_strndup(name, sep - name) : g_strdup("");
	item->name = g_strdup(sep != NULL ? sep + 2 : (name != NULL ? name : ""));
	item->arguments = g_strdup(confab_json_get_string(event, "arguments"));
	if (item->arguments == NULL)
		item->arguments = g_strdup("");
	g_ptr_array_add(ctx->mcp_open, item);

	json = mcp_item_json(item, "in_progress", NULL);
	item_added(ctx, item->index, json);
	emit(ctx, "response.mcp_call.in_progress", item_fields(item->item_id, item->index));
	f = item_fields(item->item_id, item->index);
	g_string_append(f, ",\"delta\":");
	confab_json_append_string(f, item->arguments);
	emit(ctx, "response.mcp_call_arguments.delta", f);
	f = item_fields(item->item_id, item->index);
	g_string_append(f, ",\"arguments\":");
	confab_json_append_string(f, item->arguments);
	emit(ctx, "response.mcp_call_arguments.done", f);
}

static void
mcp_result(RespCtx *ctx, JsonObject *event)
{
	McpItem *item = find_mcp(ctx, confab_json_get_string(event, "id"));
	JsonNode *is_error = json_object_get_member(event, "is_error");

	if (item == NULL)
		return;
	item->is_error = is_error != NULL && JSON_NODE_HOLDS_VALUE(is_error) &&
			 json_node_get_value_type(is_error) == G_TYPE_BOOLEAN &&
			 json_node_get_boolean(is_error);
	emit(ctx,
	     item->is_error ? "response.mcp_call.failed" : "response.mcp_call.completed",
	     item_fields(item->item_id, item->index));
	g_ptr_array_add(ctx->mcp_pending, item);
}

/* ---------- approvals: mcp_approval_request ---------- */

/* The model sees SERVER__tool; an item names the tool's own name. */
static const gchar *
own_tool_name(const gchar *name, const gchar *server)
{
	if (name != NULL && server != NULL && g_str_has_prefix(name, server) &&
	    g_str_has_prefix(name + strlen(server), "__"))
		return name + strlen(server) + 2;
	return name != NULL ? name : "";
}

static gchar *
approval_request_item(const gchar *id,
		      const gchar *server,
		      const gchar *name,
		      const gchar *arguments)
{
	GString *out = g_string_new("{\"id\":");
	confab_json_append_string(out, id);
	g_string_append(out, ",\"type\":\"mcp_approval_request\",\"server_label\":");
	confab_json_append_string(out, server != NULL ? server : "");
	g_string_append(out, ",\"name\":");
	confab_json_append_string(out, own_tool_name(name, server));
	g_string_append(out, ",\"arguments\":");
	confab_json_append_string(out, arguments != NULL ? arguments : "");
	g_string_append_c(out, '}');
	return g_string_free(out, FALSE);
}

/* A call waits for a person: the response ends with its request, which
 * the continuation answers (an mcp_approval_response item). */
static void
approval_asked(RespCtx *ctx, JsonObject *event)
{
	gchar *item = approval_request_item(confab_json_get_string(event, "id"),
					    confab_json_get_string(event, "server"),
					    confab_json_get_string(event, "name"),
					    confab_json_get_string(event, "arguments"));
	gint index;

	close_reasoning(ctx);
	close_text(ctx);
	index = reserve_item(ctx);
	item_added(ctx, index, item);
	item_done(ctx, index, item);
}

/* An MCP server asks the person (elicitation/create) during the call of
 * an mcp_call item: Confab's own event, beside the item's (OpenAI's API
 * has none); POST /api/v1/elicitations/{id} answers it. */
static void
elicitation_asked(RespCtx *ctx, JsonObject *event)
{
	McpItem *item = find_mcp(ctx, confab_json_get_string(event, "tool_call_id"));
	JsonNode *schema = json_object_get_member(event, "requested_schema");
	g_autofree gchar *schema_text = schema != NULL ? json_to_string(schema, FALSE) : NULL;
	GString *f;

	if (item == NULL)
		return;
	f = item_fields(item->item_id, item->index);
	g_string_append(f, ",\"elicitation_id\":");
	confab_json_append_string(f, confab_json_get_string(event, "id"));
	g_string_append(f, ",\"server_label\":");
	confab_json_append_string(f, confab_json_get_string(event, "server"));
	g_string_append(f, ",\"message\":");
	confab_json_append_string(f, confab_json_get_string(event, "message"));
	g_string_append_printf(f,
			       ",\"requested_schema\":%s",
			       schema_text != NULL ? schema_text : "{}");
	emit(ctx, "response.mcp_call.elicitation_request", f);
}

/* ---------- the sink ---------- */

static void
on_turn_delta(ConfabTurn *turn, const ConfabDelta *delta, gpointer user_data)
{
	RespCtx *ctx = user_data;

	begin_stream(ctx, TRUE);
	flush_mcp(ctx, FALSE);
	if (delta->reasoning != NULL && *delta->reasoning != '\0')
		add_reasoning(ctx, delta->reasoning);
	if (delta->content != NULL && *delta->content != '\0')
		add_text(ctx, delta->content);
	/* function calls are told whole at the end, from the turn */
}

static void
on_turn_tool_event(ConfabTurn *turn, const gchar *event_json, gpointer user_data)
{
	RespCtx *ctx = user_data;
	g_autoptr(JsonNode) node = confab_json_from_string(event_json);
	JsonObject *event;
	const gchar *type;

	begin_stream(ctx, FALSE);
	flush_mcp(ctx, FALSE);
	if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
		return;
	event = json_node_get_object(node);
	type = confab_json_get_string(event, "type");
	if (g_strcmp0(type, "call") == 0)
		mcp_called(ctx, event);
	else if (g_strcmp0(type, "result") == 0)
		mcp_result(ctx, event);
	else if (g_strcmp0(type, "approval_request") == 0)
		approval_asked(ctx, event);
	else if (g_strcmp0(type, "elicitation_request") == 0)
		elicitation_asked(ctx, event);
	/* progress has no Responses event */
}

/* @ns: (nullable): the namespace of the client's tool called @name */
static gchar *
function_call_item(const gchar *id,
		   const gchar *call_id,
		   const gchar *ns,
		   const gchar *name,
		   const gchar *arguments,
		   const gchar *status)
{
	GString *out = g_string_new("{\"id\":");
	confab_json_append_string(out, id);
	g_string_append(out, ",\"type\":\"function_call\",\"status\":");
	confab_json_append_string(out, status);
	g_string_append(out, ",\"call_id\":");
	confab_json_append_string(out, call_id);
	if (ns != NULL) {
		g_string_append(out, ",\"namespace\":");
		confab_json_append_string(out, ns);
	}
	g_string_append(out, ",\"name\":");
	confab_json_append_string(out, name);
	g_string_append(out, ",\"arguments\":");
	confab_json_append_string(out, arguments);
	g_string_append_c(out, '}');
	return g_string_free(out, FALSE);
}

/* The client's function calls, each an item told whole. */
static void
add_function_calls(RespCtx *ctx)
{
	g_autofree gchar *json = confab_turn_get_tool_calls_json(ctx->turn);
	g_autoptr(JsonNode) node = json != NULL ? confab_json_from_string(json) : NULL;
	JsonArray *calls;

	if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
		return;
	calls = json_node_get_array(node);
	for (guint i = 0; i < json_array_get_length(calls); i++) {
		JsonObject *call = json_array_get_object_element(calls, i);
		JsonObject *fn = call != NULL ? confab_json_get_object(call, "function") : NULL;
		const gchar *call_id = call != NULL ? confab_json_get_string(call, "id") : NULL;
		const gchar *name = fn != NULL ? confab_json_get_string(fn, "name") : NULL;
		const gchar *args = fn != NULL ? confab_json_get_string(fn, "arguments") : NULL;
		JsonObject *origin = NULL;
		const gchar *ns = NULL;
		g_autofree gchar *id = NULL;
		g_autofree gchar *added = NULL;
		gint index;
		GString *f;

		if (call_id == NULL || name == NULL)
			continue;
		/* a namespace's tool: called by its own name in its namespace */
		origin = confab_json_get_object(ctx->request->namespaced, name);
		if (origin != NULL) {
			ns = confab_json_get_string(origin, "namespace");
			name = confab_json_get_string(origin, "name");
		}
		id = item_id("fc_", ctx->response_id, ctx->n_fc++);
		if (args == NULL)
			args = "";
		index = reserve_item(ctx);
		added = function_call_item(id, call_id, ns, name, "", "in_progress");
		item_added(ctx, index, added);
		f = item_fields(id, index);
		g_string_append(f, ",\"delta\":");
		confab_json_append_string(f, args);
		emit(ctx, "response.function_call_arguments.delta", f);
		f = item_fields(id, index);
		g_string_append(f, ",\"name\":");
		confab_json_append_string(f, name);
		g_string_append(f, ",\"arguments\":");
		confab_json_append_string(f, args);
		emit(ctx, "response.function_call_arguments.done", f);
		item_done(ctx, index, function_call_item(id, call_id, ns, name, args, "completed"));
	}
}

/* Every item done: at the end of an answer, however it ended. */
static void
close_items(RespCtx *ctx, gboolean with_calls)
{
	if (ctx->closed)
		return;
	ctx->closed = TRUE;
	flush_mcp(ctx, TRUE);
	close_reasoning(ctx);
	close_text(ctx);
	/* calls without a result (a cancelled or failed turn) */
	while (ctx->mcp_open->len > 0) {
		McpItem *item = g_ptr_array_index(ctx->mcp_open, 0);
		item->is_error = TRUE;
		item_done(ctx,
			  item->index,
			  mcp_item_json(item, "failed", "The call did not finish"));
		g_ptr_array_remove_index(ctx->mcp_open, 0);
	}
	if (with_calls)
		add_function_calls(ctx);
}

static void
on_exchange_drained(ConfabHttpExchange *exchange, gpointer user_data)
{
	RespCtx *ctx = user_data;
	confab_turn_sink_drained(ctx->turn, TRUE);
}

static void
on_turn_drain(ConfabTurn *turn, gpointer user_data)
{
	RespCtx *ctx = user_data;

	/* no head yet: nothing was given to the client, which hears the end
	 * from answer() */
	if (!ctx->streaming) {
		confab_turn_sink_drained(turn, TRUE);
		return;
	}
	close_items(ctx, TRUE);
	if (confab_http_exchange_is_gone(ctx->exchange)) {
		/* a background answer is whole without its client: kept */
		confab_turn_sink_drained(turn, ctx->request->background);
		return;
	}
	if (confab_http_exchange_get_unsent(ctx->exchange) == 0) {
		confab_turn_sink_drained(turn, TRUE);
		return;
	}
	confab_http_exchange_set_drained_func(ctx->exchange, on_exchange_drained, ctx);
}

/* An upstream took the first model call: the head goes out. */
static void
on_turn_answered(ConfabTurn *turn, gpointer user_data)
{
	begin_stream(user_data, TRUE);
}

static const ConfabTurnSink stream_sink = {
    .answered = on_turn_answered,
    .delta = on_turn_delta,
    .drain = on_turn_drain,
    .tool_event = on_turn_tool_event,
};

/* Without a stream the items are closed before the answer is committed
 * too: a call's result is read from the transcript, which the commit
 * takes (an answer may end on a result, when a person's approval ends
 * it). */
static void
on_json_drain(ConfabTurn *turn, gpointer user_data)
{
	RespCtx *ctx = user_data;

	close_items(ctx, TRUE);
	confab_turn_sink_drained(turn, TRUE);
}

static const ConfabTurnSink json_sink = {
    .delta = on_turn_delta,
    .drain = on_json_drain,
    .tool_event = on_turn_tool_event,
};

/* ---------- the response object ---------- */

/* The request's parameters as the response object repeats them, each
 * with OpenAI's default when the request did not say: every member the
 * Open Responses schema requires. @echo: what the request said. */
static const struct {
	const gchar *name;
	const gchar *fallback;
} echoed[] = {
    {"max_output_tokens", "null"},
    {"max_tool_calls", "null"},
    {"parallel_tool_calls", "true"},
    {"reasoning", "{\"effort\":null,\"summary\":null}"},
    {"temperature", "1"},
    {"top_p", "1"},
    {"presence_penalty", "0"},
    {"frequency_penalty", "0"},
    {"top_logprobs", "0"},
    {"text", "{\"format\":{\"type\":\"text\"}}"},
    {"tool_choice", "\"auto\""},
    {"tools", "[]"},
    {"user", "null"},
    {"service_tier", "\"default\""},
    {"safety_identifier", "null"},
    {"prompt_cache_key", "null"},
};

static void
append_params(GString *out, JsonObject *echo, const gchar *instructions, gboolean background)
{
	g_string_append_printf(out,
			       ",\"background\":%s,\"truncation\":\"disabled\",\"instructions\":",
			       background ? "true" : "false");
	confab_json_append_string(out, instructions);
	for (guint i = 0; i < G_N_ELEMENTS(echoed); i++) {
		JsonNode *node = echo != NULL ? json_object_get_member(echo, echoed[i].name) : NULL;

		g_string_append_printf(out, ",\"%s\":", echoed[i].name);
		if (node != NULL && !JSON_NODE_HOLDS_NULL(node))
			confab_json_append_node(out, node);
		else
			g_string_append(out, echoed[i].fallback);
	}
}

static void
append_usage(GString *out, ConfabTurn *turn)
{
	gint64 input = 0, output = 0;

	if (turn == NULL || !confab_turn_get_usage(turn, &input, &output)) {
		g_string_append(out, "null");
		return;
	}
	g_string_append_printf(
	    out,
	    "{\"input_tokens\":%" G_GINT64_FORMAT ",\"input_tokens_details\":{\"cached_tokens\":0}"
	    ",\"output_tokens\":%" G_GINT64_FORMAT
	    ",\"output_tokens_details\":{\"reasoning_tokens\":%" G_GINT64_FORMAT "}"
	    ",\"total_tokens\":%" G_GINT64_FORMAT "}",
	    input,
	    output,
	    confab_turn_get_reasoning_tokens(turn),
	    input + output);
}

static void
append_metadata(GString *out, JsonObject *echo, const gchar *session_id)
{
	JsonNode *client = echo != NULL ? json_object_get_member(echo, "metadata") : NULL;
	g_autoptr(JsonObject) metadata = json_object_new();
	g_autoptr(JsonNode) node = NULL;

	if (client != NULL && JSON_NODE_HOLDS_OBJECT(client)) {
		JsonObject *obj = json_node_get_object(client);
		g_autoptr(GList) names = json_object_get_members(obj);
		for (GList *l = names; l != NULL; l = l->next)
			json_object_set_member(
			    metadata,
			    l->data,
			    json_node_copy(json_object_get_member(obj, l->data)));
	}
	if (session_id != NULL)
		json_object_set_string_member(metadata, "session_id", session_id);
	node = json_node_init_object(json_node_alloc(), metadata);
	confab_json_append_node(out, node);
}

/*
 * The response object. @status: in_progress, completed, incomplete,
 * failed; @output: whether the items are listed (the closing events carry
 * them, the opening ones not yet).
 */
static gchar *
build_response(RespCtx *ctx, const gchar *status, gboolean output, const GError *error)
{
	ConfabTurn *turn = ctx->turn;
	const gchar *session_id = ctx->request->store ? confab_turn_get_session_id(turn) : NULL;
	const gchar *finish =
	    g_str_equal(status, "incomplete") ? confab_turn_get_finish_reason(turn) : NULL;
	GString *out = g_string_new("{\"id\":");

	confab_json_append_string(out, ctx->response_id);
	g_string_append_printf(out,
			       ",\"object\":\"response\",\"created_at\":%" G_GINT64_FORMAT
			       ",\"status\":",
			       confab_turn_get_created(turn));
	confab_json_append_string(out, status);
	g_string_append(out, ",\"completed_at\":");
	if (g_str_equal(status, "completed"))
		g_string_append_printf(out,
				       "%" G_GINT64_FORMAT,
				       g_get_real_time() / G_USEC_PER_SEC);
	else
		g_string_append(out, "null");
	g_string_append(out, ",\"error\":");
	if (error != NULL) {
		const ConfabOpenaiErrorInfo *info = confab_openai_error_info(error);
		g_string_append(out, "{\"code\":");
		confab_json_append_string(out, info->code);
		g_string_append(out, ",\"message\":");
		confab_json_append_string(out, error->message);
		g_string_append_c(out, '}');
	} else {
		g_string_append(out, "null");
	}
	g_string_append(out, ",\"incomplete_details\":");
	if (finish != NULL || g_str_equal(status, "incomplete")) {
		g_string_append(out, "{\"reason\":");
		confab_json_append_string(
		    out,
		    g_strcmp0(finish, "content_filter") == 0
			? "content_filter"
			: (g_strcmp0(finish, "length") == 0 ? "max_output_tokens" : "interrupted"));
		g_string_append_c(out, '}');
	} else {
		g_string_append(out, "null");
	}
	append_params(out,
		      ctx->request->echo,
		      ctx->request->instructions,
		      ctx->request->background);
	g_string_append(out, ",\"model\":");
	confab_json_append_string(out, confab_turn_get_model(turn));
	g_string_append(out, ",\"output\":[");
	for (guint i = 0; output && i < ctx->items->len; i++) {
		const gchar *item = g_ptr_array_index(ctx->items, i);
		if (item == NULL)
			continue;
		if (out->str[out->len - 1] != '[')
			g_string_append_c(out, ',');
		g_string_append(out, item);
	}
	g_string_append_c(out, ']');
	g_string_append(out, ",\"previous_response_id\":");
	confab_json_append_string(out, ctx->request->previous_response_id);
	g_string_append(out, ",\"conversation\":");
	if (session_id != NULL) {
		g_string_append(out, "{\"id\":");
		confab_json_append_string(out, session_id);
		g_string_append_c(out, '}');
	} else {
		g_string_append(out, "null");
	}
	g_string_append_printf(out, ",\"store\":%s", ctx->request->store ? "true" : "false");
	g_string_append(out, ",\"usage\":");
	if (output)
		append_usage(out, turn);
	else
		g_string_append(out, "null");
	g_string_append(out, ",\"metadata\":");
	append_metadata(out, ctx->request->echo, session_id);
	g_string_append_c(out, '}');
	return g_string_free(out, FALSE);
}

static const gchar *
final_status(RespCtx *ctx)
{
	const gchar *finish = confab_turn_get_finish_reason(ctx->turn);
	if (g_strcmp0(finish, "length") == 0 || g_strcmp0(finish, "content_filter") == 0)
		return "incomplete";
	return "completed";
}

static void
finish_stream(RespCtx *ctx, const GError *error)
{
	g_autofree gchar *response = NULL;
	GString *f;

	close_items(ctx, error == NULL);
	if (ctx->request->background &&
	    g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_CANCELLED)) {
		/* stopped (POST …/cancel): what was said, as it stands */
		response = build_response(ctx, "cancelled", TRUE, NULL);
		f = g_string_new("\"response\":");
		g_string_append(f, response);
		emit(ctx, "response.incomplete", f);
	} else if (error != NULL) {
		/* the stream has begun: the error travels in it, then the
		 * response that failed */
		const ConfabOpenaiErrorInfo *info = confab_openai_error_info(error);
		f = g_string_new("\"code\":");
		confab_json_append_string(f, info->code);
		g_string_append(f, ",\"message\":");
		confab_json_append_string(f, error->message);
		g_string_append(f, ",\"param\":null");
		emit(ctx, "error", f);
		response = build_response(ctx, "failed", TRUE, error);
		f = g_string_new("\"response\":");
		g_string_append(f, response);
		emit(ctx, "response.failed", f);
	} else {
		const gchar *status = final_status(ctx);
		response = build_response(ctx, status, TRUE, NULL);
		f = g_string_new("\"response\":");
		g_string_append(f, response);
		emit(ctx,
		     g_str_equal(status, "completed") ? "response.completed"
						      : "response.incomplete",
		     f);
	}
	confab_http_exchange_end_stream(ctx->exchange);
}

/* ---------- background: the turn without its client ---------- */

static void
flush_kept(RespCtx *ctx);
static void
wait_for_head(RespCtx *ctx);

static void
status_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	RespCtx *ctx = user_data;
	g_autoptr(GError) error = NULL;

	if (!confab_store_end_response_finish(CONFAB_STORE(source), result, &error))
		g_warning("storing how response %s ended: %s", ctx->response_id, error->message);
	confab_background_remove(confab_engine_get_background(ctx->engine), ctx->response_id);
	resp_ctx_free(ctx);
}

/* Where it stands now that its turn is over: after its last events, so
 * that a client who sees it ended has seen them all. A cancel asked
 * meanwhile makes the store say cancelled (unless it completed). */
static void
store_end(RespCtx *ctx)
{
	g_autofree gchar *error_json = NULL;
	ConfabResponseEvents events = {0};
	ConfabResponseEvents *last = NULL;
	const gchar *status;

	if (ctx->run_ok) {
		status = final_status(ctx);
	} else if (g_error_matches(ctx->run_error, CONFAB_ERROR, CONFAB_ERROR_CANCELLED)) {
		status = "incomplete";
	} else {
		const ConfabOpenaiErrorInfo *info = confab_openai_error_info(ctx->run_error);
		GString *e = g_string_new("{\"code\":");
		confab_json_append_string(e, info->code);
		g_string_append(e, ",\"message\":");
		confab_json_append_string(e, ctx->run_error->message);
		g_string_append_c(e, '}');
		error_json = g_string_free(e, FALSE);
		status = "failed";
	}
	/* with the events told since the last batch: one transaction */
	if (ctx->kept != NULL && ctx->kept->len > 0) {
		events.first = ctx->kept_first;
		events.last = (gint64)ctx->sequence - 1;
		events.data = ctx->kept->str;
		last = &events;
	}
	confab_store_end_response_async(confab_engine_get_store(ctx->engine),
					ctx->response_id,
					status,
					error_json,
					g_get_real_time() / G_USEC_PER_SEC,
					last,
					NULL,
					status_cb,
					ctx);
}

static void
kept_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	RespCtx *ctx = user_data;
	g_autoptr(GError) error = NULL;

	if (!confab_store_append_response_events_finish(CONFAB_STORE(source), result, &error))
		g_warning("keeping the events of response %s: %s",
			  ctx->response_id,
			  error->message);
	ctx->flushing = FALSE;
	if (ctx->ending)
		store_end(ctx);
}

/* The events told since the last batch, kept as the next one. */
static void
flush_kept(RespCtx *ctx)
{
	ConfabResponseEvents events;

	if (ctx->flushing || ctx->kept->len == 0)
		return;
	events.first = ctx->kept_first;
	events.last = (gint64)ctx->sequence - 1;
	events.data = ctx->kept->str;
	ctx->flushing = TRUE;
	confab_store_append_response_events_async(confab_engine_get_store(ctx->engine),
						  ctx->response_id,
						  &events,
						  NULL,
						  kept_cb,
						  ctx);
	g_string_truncate(ctx->kept, 0);
}

static gboolean
flush_tick(gpointer user_data)
{
	flush_kept(user_data);
	return G_SOURCE_CONTINUE;
}

static void
background_end(RespCtx *ctx)
{
	ctx->ending = TRUE;
	g_clear_handle_id(&ctx->flush_source, g_source_remove);
	if (ctx->flushing)
		return; /* kept_cb goes on */
	store_end(ctx);
}

/* The turn has begun: the POST is answered `queued` at once (JSON), or
 * the stream goes on as any, its events kept as they are told. */
static void
background_begin(RespCtx *ctx)
{
	ConfabTurn *turn = ctx->turn;

	confab_background_add(confab_engine_get_background(ctx->engine), ctx->response_id, turn);
	if (confab_turn_get_request(turn)->stream) {
		ctx->kept = g_string_new(NULL);
		ctx->flush_source = g_timeout_add(FLUSH_MS, flush_tick, ctx);
		wait_for_head(ctx);
		return;
	}
	confab_http_response_json(ctx->exchange, 200, build_response(ctx, "queued", FALSE, NULL));
	confab_http_exchange_set_gone_func(ctx->exchange, NULL, NULL);
	ctx->detached = TRUE;
	confab_turn_set_sink(turn, &json_sink, ctx);
}

/* ---------- the end ---------- */

static void
answer(RespCtx *ctx)
{
	if (ctx->streaming && ctx->cut && !ctx->run_ok) {
		const ConfabConfig *config = confab_engine_get_config(ctx->engine);
		g_clear_error(&ctx->run_error);
		ctx->run_error = g_error_new(CONFAB_ERROR,
					     CONFAB_ERROR_STREAM_CUT,
					     "The client took nothing of the stream for %u s; the "
					     "response was stopped and stored as incomplete",
					     config->idle_timeout);
	}
	/* a stream whose head still waited: a success (or a background one
	 * stopped by its cancel) is streamed whole, a failure is an HTTP
	 * error */
	if (!ctx->streaming && confab_turn_get_request(ctx->turn)->stream &&
	    (ctx->run_ok ||
	     (ctx->request->background &&
	      g_error_matches(ctx->run_error, CONFAB_ERROR, CONFAB_ERROR_CANCELLED))))
		begin_stream(ctx, TRUE);
	if (ctx->streaming) {
		finish_stream(ctx, ctx->run_ok ? NULL : ctx->run_error);
	} else if (ctx->detached) {
		/* a background response: its POST has its answer */
		close_items(ctx, TRUE);
	} else if (ctx->run_ok) {
		close_items(ctx, TRUE);
		confab_http_response_json(ctx->exchange,
					  200,
					  build_response(ctx, final_status(ctx), TRUE, NULL));
	} else {
		confab_http_response_turn_error(ctx->exchange, ctx->turn, ctx->run_error);
	}
	if (ctx->request->background) {
		background_end(ctx);
		return;
	}
	resp_ctx_free(ctx);
}

static void
forgotten_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	RespCtx *ctx = user_data;
	g_autoptr(GError) error = NULL;
	gboolean ok =
	    ctx->session_is_new
		? confab_store_delete_session_finish(CONFAB_STORE(source), result, &error)
		: confab_store_delete_response_finish(CONFAB_STORE(source), result, &error);

	if (!ok)
		g_warning("forgetting response %s (store: false): %s",
			  ctx->response_id,
			  error->message);
	answer(ctx);
}

/* store: false: the turn's conversation (or, continuing one, its messages)
 * is deleted before the client hears the end; the request has counted */
static void
forget(RespCtx *ctx)
{
	ConfabStore *store = confab_engine_get_store(ctx->engine);

	if (ctx->session_is_new)
		confab_store_delete_session_async(store,
						  confab_turn_get_session_id(ctx->turn),
						  NULL,
						  forgotten_cb,
						  ctx);
	else
		confab_store_delete_response_async(store, ctx->stored_id, NULL, forgotten_cb, ctx);
}

static void
run_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	RespCtx *ctx = user_data;

	ctx->run_ok = confab_turn_run_finish(CONFAB_TURN(source), result, &ctx->run_error);
	if (!ctx->streaming)
		confab_http_response_add_target_headers(ctx->exchange, ctx->turn);
	if (!ctx->request->store) {
		forget(ctx);
		return;
	}
	answer(ctx);
}

/* The head, response.created and response.in_progress. @answered: an
 * upstream took the call, and the head names it (x-confab-upstream,
 * x-confab-attempts); not when it goes out because none answered in time.
 * Once. */
static void
begin_stream(RespCtx *ctx, gboolean answered)
{
	g_autofree gchar *response = NULL;
	GString *f;

	/* the sink's functions serve JSON answers too */
	if (ctx->streaming || !confab_turn_get_request(ctx->turn)->stream)
		return;
	ctx->streaming = TRUE;
	confab_source_clear(&ctx->head_wait);
	response = build_response(ctx, "in_progress", FALSE, NULL);
	confab_http_exchange_add_header(ctx->exchange, "Cache-Control", "no-cache");
	confab_http_exchange_add_header(ctx->exchange, "x-accel-buffering", "no");
	if (answered)
		confab_http_response_add_target_headers(ctx->exchange, ctx->turn);
	confab_http_exchange_begin_stream(ctx->exchange, 200, "text/event-stream");
	/* as fast as its reader: the turn waits while the client is behind */
	confab_http_exchange_set_cut_func(ctx->exchange, on_stream_cut, ctx);
	f = g_string_new("\"response\":");
	g_string_append(f, response);
	emit(ctx, "response.created", f);
	f = g_string_new("\"response\":");
	g_string_append(f, response);
	emit(ctx, "response.in_progress", f);
}

/* [http] stream_head_wait and no upstream has answered: the head goes out
 * anyway, so that a proxy in front does not give up on a silent stream. */
static gboolean
on_head_wait(gpointer user_data)
{
	RespCtx *ctx = user_data;

	g_clear_pointer(&ctx->head_wait, g_source_unref);
	g_debug("no upstream answered within stream_head_wait: the head goes out");
	begin_stream(ctx, FALSE);
	return G_SOURCE_REMOVE;
}

/* A stream: the turn tells its sink from the start (its backpressure
 * included), but the head waits for an upstream's answer. */
static void
wait_for_head(RespCtx *ctx)
{
	guint wait = confab_engine_get_config(ctx->engine)->stream_head_wait;

	confab_turn_set_flow(ctx->turn, confab_http_exchange_get_flow(ctx->exchange));
	confab_turn_set_sink(ctx->turn, &stream_sink, ctx);
	if (wait == 0)
		begin_stream(ctx, FALSE);
	else
		ctx->head_wait = confab_source_add_timeout(wait * 1000, on_head_wait, ctx);
}

/* The turn names the conversation as a chat completions client gives it,
 * `metadata.session_id`; a Responses client may have named it otherwise,
 * and an error's param names what the client sent. */
static void
name_client_param(RespCtx *ctx, GError *error)
{
	if (g_strcmp0(confab_error_get_param(error), "metadata.session_id") != 0)
		return;
	if (ctx->request->previous_response_id != NULL)
		confab_error_set_param(error, "previous_response_id");
	else if (ctx->request->conversation != NULL)
		confab_error_set_param(error, "conversation");
}

static void
start_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	RespCtx *ctx = user_data;
	g_autoptr(GError) error = NULL;
	ConfabTurn *turn = CONFAB_TURN(source);
	gboolean ok = confab_turn_start_finish(turn, result, &error);

	confab_http_response_add_quota_headers(ctx->exchange, confab_turn_get_quota_info(turn));
	if (!ok) {
		/* a background one does not stay queued, nor count as running */
		if (ctx->request->background)
			confab_store_end_response_async(confab_engine_get_store(ctx->engine),
							ctx->response_id,
							"failed",
							NULL,
							g_get_real_time() / G_USEC_PER_SEC,
							NULL,
							NULL,
							NULL,
							NULL);
		name_client_param(ctx, error);
		confab_http_response_error(ctx->exchange, error);
		resp_ctx_free(ctx);
		return;
	}
	confab_http_response_log_set(ctx->exchange,
				     NULL,
				     confab_turn_get_model(turn),
				     confab_turn_get_session_id(turn));
	/* store: false keeps no conversation to name */
	if (ctx->request->store)
		confab_http_exchange_add_header(ctx->exchange,
						"x-session-id",
						confab_turn_get_session_id(turn));
	if (ctx->request->background)
		background_begin(ctx);
	else if (confab_turn_get_request(turn)->stream)
		wait_for_head(ctx);
	else
		confab_turn_set_sink(ctx->turn, &json_sink, ctx);
	confab_turn_run_async(turn, run_cb, ctx);
}

static void
refuse(RespCtx *ctx, GError *error);

/* @fork: (nullable): the history of a new conversation forked from an
 * earlier response's */
static void
create_turn(RespCtx *ctx, GPtrArray *fork, const gchar *fork_title)
{
	ctx->session_is_new = fork != NULL || ctx->request->chat->session_id == NULL;
	ctx->turn = confab_turn_new(ctx->engine,
				    g_steal_pointer(&ctx->principal),
				    g_steal_pointer(&ctx->request->chat));
	if (fork != NULL)
		confab_turn_set_fork(ctx->turn, fork, fork_title);
	for (guint i = 0; i < ctx->answers->len; i++) {
		ConfabApprovalResponse *response =
		    g_ptr_array_index(ctx->request->approval_responses, i);
		confab_turn_add_approval_answer(ctx->turn,
						g_ptr_array_index(ctx->answers, i),
						response->approve,
						response->reason);
	}
	confab_turn_set_instructions(ctx->turn, ctx->request->instructions);
	/* store: false: the turn is the store's only while it runs (forget()),
	 * and its messages carry an id that no GET, DELETE or continuation
	 * finds meanwhile */
	ctx->stored_id = ctx->request->store ? g_strdup(ctx->response_id)
					     : g_strconcat(ctx->response_id, ".unstored", NULL);
	confab_turn_set_response_id(ctx->turn, ctx->stored_id);
	/* no client waits for it: GET reads it while it runs */
	if (ctx->request->background)
		confab_turn_set_commit_first(ctx->turn);
	if (ctx->new_session != NULL)
		confab_turn_set_new_session_id(ctx->turn, ctx->new_session);
	confab_turn_start_async(ctx->turn, start_cb, ctx);
}

static void
record_saved_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	RespCtx *ctx = user_data;
	GError *error = NULL;

	if (!confab_store_save_response_finish(CONFAB_STORE(source), result, &error)) {
		refuse(ctx, error);
		return;
	}
	create_turn(ctx, ctx->fork, ctx->fork_title);
}

/* What the response object repeats of the request, as the record keeps
 * it. */
static gchar *
record_params(RespCtx *ctx)
{
	g_autoptr(JsonObject) kept = json_object_new();
	g_autoptr(JsonNode) node = NULL;
	g_autoptr(GList) names = json_object_get_members(ctx->request->echo);

	for (GList *l = names; l != NULL; l = l->next)
		json_object_set_member(
		    kept,
		    l->data,
		    json_node_copy(json_object_get_member(ctx->request->echo, l->data)));
	if (ctx->request->instructions != NULL)
		json_object_set_string_member(kept, "instructions", ctx->request->instructions);
	if (ctx->request->previous_response_id != NULL)
		json_object_set_string_member(kept,
					      "previous_response_id",
					      ctx->request->previous_response_id);
	node = json_node_init_object(json_node_alloc(), kept);
	return confab_json_to_string(node);
}

/* A stored response's record first (its parameters; a background one's
 * status, within [responses] max_background), then its turn. */
static void
start_turn(RespCtx *ctx, GPtrArray *fork, const gchar *fork_title)
{
	const ConfabConfig *config = confab_engine_get_config(ctx->engine);
	g_autoptr(ConfabResponseRecord) record = NULL;

	/* nobody to answer: no turn, nothing counted */
	if (ctx->gone) {
		refuse(ctx,
		       g_error_new_literal(CONFAB_ERROR,
					   CONFAB_ERROR_CANCELLED,
					   "The client left before its response began"));
		return;
	}
	if (!ctx->request->store) {
		create_turn(ctx, fork, fork_title);
		return;
	}
	ctx->fork = fork != NULL ? g_ptr_array_ref(fork) : NULL;
	ctx->fork_title = g_strdup(fork_title);
	record = confab_response_record_new();
	record->id = g_strdup(ctx->response_id);
	record->owner = g_strdup(ctx->principal->owner);
	record->agent_id = g_strdup(ctx->request->chat->model);
	/* a new conversation's id, chosen now: the record names it while
	 * the response runs (confabctl session show) */
	if (fork != NULL || ctx->request->chat->session_id == NULL)
		ctx->new_session =
		    confab_id_generator_next(confab_engine_get_id_generator(ctx->engine),
					     CONFAB_PREFIX_SESSION);
	record->session_id =
	    g_strdup(ctx->new_session != NULL ? ctx->new_session : ctx->request->chat->session_id);
	record->background = ctx->request->background;
	record->stream = ctx->request->chat->stream;
	/* it runs as soon as its turn starts, which is now */
	record->status = g_strdup(ctx->request->background ? "in_progress" : "foreground");
	record->params = record_params(ctx);
	record->created_at = g_get_real_time() / G_USEC_PER_SEC;
	confab_store_save_response_async(confab_engine_get_store(ctx->engine),
					 record,
					 config->responses_max_background,
					 NULL,
					 record_saved_cb,
					 ctx);
}

static void
refuse(RespCtx *ctx, GError *error)
{
	confab_http_response_error(ctx->exchange, error);
	g_error_free(error);
	resp_ctx_free(ctx);
}

/* ---------- continuing: previous_response_id, conversation ---------- */

/* Whether @message holds a block of @type whose @key is @value (and, for
 * @no_server, that has no server: a client's call). */
static gboolean
message_has_block(ConfabMessage *message,
		  const gchar *type,
		  const gchar *key,
		  const gchar *value,
		  gboolean no_server)
{
	g_autoptr(JsonNode) node = NULL;
	JsonArray *blocks;

	if (message == NULL || confab_message_get_content_blocks(message) == NULL)
		return FALSE;
	node = confab_json_from_string(confab_message_get_content_blocks(message));
	if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
		return FALSE;
	blocks = json_node_get_array(node);
	for (guint i = 0; i < json_array_get_length(blocks); i++) {
		JsonObject *block = json_array_get_object_element(blocks, i);
		if (block != NULL && g_strcmp0(confab_json_get_string(block, "type"), type) == 0 &&
		    (!no_server || confab_json_get_string(block, "server") == NULL) &&
		    g_strcmp0(confab_json_get_string(block, key), value) == 0)
			return TRUE;
	}
	return FALSE;
}

/* Whether @message (an answer) called the function @call_id. */
static gboolean
message_has_call(ConfabMessage *message, const gchar *call_id)
{
	return message_has_block(message, "tool_call", "id", call_id, TRUE);
}

/* Every function_call_output answers a call: of the input, or of @answer
 * (the answer the response continues). */
static gboolean
check_call_outputs(RespCtx *ctx, ConfabMessage *answer, GError **error)
{
	GPtrArray *outputs = ctx->request->call_ids;

	for (guint i = 0; i < outputs->len; i++) {
		const gchar *call_id = g_ptr_array_index(outputs, i);
		gboolean found = message_has_call(answer, call_id);

		for (guint j = 0; !found && j < ctx->request->input_calls->len; j++)
			found =
			    g_str_equal(g_ptr_array_index(ctx->request->input_calls, j), call_id);
		if (!found) {
			confab_error_set_printf(error,
						CONFAB_ERROR_INVALID_VALUE,
						"input",
						"No function call '%s' to answer: a "
						"function_call_output answers a call of the "
						"response it continues",
						call_id);
			return FALSE;
		}
	}
	return TRUE;
}

/* ---------- answering approval requests: mcp_approval_response ---------- */

/* Whether @answer ended with the approval request @id. */
static gboolean
message_asked(ConfabMessage *answer, const gchar *id)
{
	return message_has_block(answer, "approval_request", "id", id, FALSE);
}

static GError *
unknown_request(const gchar *id)
{
	GError *error = NULL;
	confab_error_set_printf(&error,
				CONFAB_ERROR_INVALID_VALUE,
				"input",
				"Unknown approval request '%s': an mcp_approval_response answers "
				"a request of the response it continues",
				id);
	return error;
}

typedef struct {
	RespCtx *ctx;	    /* owned until handed on */
	GPtrArray *fork;    /* owned, nullable */
	gchar *fork_title;  /* owned, nullable */
	gchar *response_id; /* owned: the response whose requests are answered */
} Answering;

static void
answering_free(Answering *a)
{
	if (a->ctx != NULL)
		resp_ctx_free(a->ctx);
	g_clear_pointer(&a->fork, g_ptr_array_unref);
	g_free(a->fork_title);
	g_free(a->response_id);
	g_free(a);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Answering, answering_free)

static void
read_next_answer(Answering *a);

static void
answer_read_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Answering) a = user_data;
	RespCtx *ctx = a->ctx;
	ConfabApprovalResponse *response =
	    g_ptr_array_index(ctx->request->approval_responses, ctx->answers->len);
	g_autoptr(ConfabApproval) approval = NULL;
	g_autoptr(GError) error = NULL;

	approval = confab_store_get_approval_finish(CONFAB_STORE(source), result, &error);
	if (approval == NULL &&
	    !g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_APPROVAL_NOT_FOUND)) {
		refuse(g_steal_pointer(&a->ctx), g_steal_pointer(&error));
		return;
	}
	/* not the caller's, or not that response's: unknown to this caller */
	if (approval == NULL || g_strcmp0(approval->owner, ctx->principal->owner) != 0 ||
	    g_strcmp0(approval->response_id, a->response_id) != 0) {
		refuse(g_steal_pointer(&a->ctx), unknown_request(response->approval_request_id));
		return;
	}
	/* one an item of the conversation decided is run, or not, as decided */
	if (approval->state != CONFAB_APPROVAL_STATE_PENDING &&
	    !(response->adopted && approval->state != CONFAB_APPROVAL_STATE_TIMED_OUT)) {
		refuse(g_steal_pointer(&a->ctx),
		       g_error_new(CONFAB_ERROR,
				   CONFAB_ERROR_APPROVAL_DECIDED,
				   "The approval request '%s' is no longer pending: it was %s",
				   approval->id,
				   approval->state == CONFAB_APPROVAL_STATE_APPROVED ? "approved"
				   : approval->state == CONFAB_APPROVAL_STATE_DENIED
				       ? "denied"
				       : "timed out"));
		return;
	}
	g_ptr_array_add(ctx->answers, g_steal_pointer(&approval));
	read_next_answer(g_steal_pointer(&a));
}

/* Each answered request is read from the store, one after another; once
 * all are the caller's and pending, the turn starts (and decides them). */
static void
read_next_answer(Answering *a)
{
	RespCtx *ctx = a->ctx;
	ConfabApprovalResponse *response;

	if (ctx->answers->len == ctx->request->approval_responses->len) {
		start_turn(g_steal_pointer(&a->ctx), a->fork, a->fork_title);
		answering_free(a);
		return;
	}
	response = g_ptr_array_index(ctx->request->approval_responses, ctx->answers->len);
	confab_store_get_approval_async(confab_engine_get_store(ctx->engine),
					response->approval_request_id,
					NULL,
					answer_read_cb,
					a);
}

/* The input's mcp_approval_response items answer requests of @answer (the
 * answer of the response continued, nullable): checked, then the turn. */
static void
check_answers(RespCtx *ctx, ConfabMessage *answer, GPtrArray *fork, const gchar *fork_title)
{
	GPtrArray *responses = ctx->request->approval_responses;
	Answering *a;

	for (guint i = 0; i < responses->len; i++) {
		ConfabApprovalResponse *response = g_ptr_array_index(responses, i);
		if (answer == NULL || confab_message_get_response_id(answer) == NULL ||
		    !message_asked(answer, response->approval_request_id)) {
			refuse(ctx, unknown_request(response->approval_request_id));
			return;
		}
	}
	if (responses->len == 0) {
		start_turn(ctx, fork, fork_title);
		return;
	}
	a = g_new0(Answering, 1);
	a->ctx = ctx;
	a->fork = fork != NULL ? g_ptr_array_ref(fork) : NULL;
	a->fork_title = g_strdup(fork_title);
	a->response_id = g_strdup(confab_message_get_response_id(answer));
	read_next_answer(a);
}

/* The last answer of @messages, or NULL. */
static ConfabMessage *
last_answer(GPtrArray *messages)
{
	for (guint i = messages->len; i > 0; i--) {
		ConfabMessage *msg = g_ptr_array_index(messages, i - 1);
		if (g_strcmp0(confab_message_get_role(msg), "assistant") == 0)
			return msg;
	}
	return NULL;
}

/* Whether @session is one @principal may continue or read. */
static gboolean
session_is_callers(ConfabSession *session, ConfabPrincipal *principal)
{
	return g_strcmp0(confab_session_get_owner(session), principal->owner) == 0 &&
	       confab_session_get_source(session) == CONFAB_SESSION_SOURCE_API &&
	       (principal->agent_id == NULL ||
		g_strcmp0(confab_session_get_agent_id(session), principal->agent_id) == 0);
}

static GError *
response_not_found(const gchar *response_id)
{
	GError *error = NULL;
	confab_error_set_printf(&error,
				CONFAB_ERROR_RESPONSE_NOT_FOUND,
				NULL,
				"No response '%s'",
				response_id);
	return error;
}

typedef struct {
	RespCtx *ctx;		/* owned until handed on */
	GPtrArray *messages;	/* owned: the previous response's */
	ConfabSession *session; /* owned */
	ConfabMessage *answer;	/* unowned: in messages */
} Continue;

static void
continue_free(Continue *c)
{
	if (c->ctx != NULL)
		resp_ctx_free(c->ctx);
	g_clear_pointer(&c->messages, g_ptr_array_unref);
	g_clear_object(&c->session);
	g_free(c);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Continue, continue_free)

static void
previous_history_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Continue) c = user_data;
	RespCtx *ctx = c->ctx;
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(GPtrArray) until_then = NULL;
	GError *error = NULL;
	ConfabMessage *last = g_ptr_array_index(c->messages, c->messages->len - 1);
	const gchar *last_id = confab_message_get_id(last);
	gboolean latest = TRUE;

	history = confab_store_get_history_finish(CONFAB_STORE(source), result, &error);
	if (history == NULL) {
		refuse(g_steal_pointer(&c->ctx), error);
		return;
	}
	if (!check_call_outputs(ctx, c->answer, &error)) {
		refuse(g_steal_pointer(&c->ctx), error);
		return;
	}
	until_then = g_ptr_array_new_with_free_func(g_object_unref);
	for (guint i = 0; i < history->len; i++) {
		ConfabMessage *msg = g_ptr_array_index(history, i);
		if (g_strcmp0(confab_message_get_id(msg), last_id) > 0) {
			latest = FALSE;
			continue;
		}
		g_ptr_array_add(until_then, g_object_ref(msg));
	}
	g_free(ctx->request->chat->session_id);
	if (latest) {
		/* the conversation goes on */
		ctx->request->chat->session_id = g_strdup(confab_session_get_id(c->session));
		check_answers(g_steal_pointer(&c->ctx), c->answer, NULL, NULL);
		return;
	}
	/* a fork: a new conversation holding the history up to that response;
	 * the old one stays as it was */
	ctx->request->chat->session_id = NULL;
	check_answers(g_steal_pointer(&c->ctx),
		      c->answer,
		      until_then,
		      confab_session_get_title(c->session));
}

static void
previous_session_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Continue) c = user_data;
	RespCtx *ctx = c->ctx;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *session_id = NULL;

	c->session = confab_store_get_session_finish(CONFAB_STORE(source), result, &error);
	/* someone else's, or another agent's than the one asked: not there */
	if (c->session == NULL || !session_is_callers(c->session, ctx->principal) ||
	    g_strcmp0(confab_session_get_agent_id(c->session), ctx->request->chat->model) != 0) {
		if (error != NULL &&
		    !g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND)) {
			refuse(g_steal_pointer(&c->ctx), g_steal_pointer(&error));
			return;
		}
		refuse(g_steal_pointer(&c->ctx),
		       response_not_found(ctx->request->previous_response_id));
		return;
	}
	session_id = g_strdup(confab_session_get_id(c->session));
	confab_store_get_history_async(CONFAB_STORE(source),
				       session_id,
				       NULL,
				       previous_history_cb,
				       g_steal_pointer(&c));
}

static void
previous_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Continue) c = g_new0(Continue, 1);
	g_autofree gchar *session_id = NULL;
	GError *error = NULL;

	c->ctx = user_data;
	c->messages = confab_store_get_response_finish(CONFAB_STORE(source), result, &error);
	if (c->messages == NULL) {
		refuse(g_steal_pointer(&c->ctx), error);
		return;
	}
	if (c->messages->len == 0) {
		refuse(g_steal_pointer(&c->ctx),
		       response_not_found(c->ctx->request->previous_response_id));
		return;
	}
	c->answer = last_answer(c->messages);
	session_id = g_strdup(confab_message_get_session_id(g_ptr_array_index(c->messages, 0)));
	confab_store_get_session_async(CONFAB_STORE(source),
				       session_id,
				       NULL,
				       previous_session_cb,
				       g_steal_pointer(&c));
}

/**
 * confab_http_responses_message_decision:
 * @msg: a message
 *
 * The decision an `mcp_approval_response` item was stored as: an assistant
 * message of the one block `{"type":"approval","id":…,"approve":…,
 * "reason":…}`.
 *
 * Returns: (transfer full) (nullable): that block, or %NULL for any other
 *   message
 */
JsonObject *
confab_http_responses_message_decision(ConfabMessage *msg)
{
	g_autoptr(JsonNode) node = NULL;
	JsonArray *blocks;

	if (g_strcmp0(confab_message_get_role(msg), "assistant") != 0 ||
	    !g_str_has_prefix(confab_message_get_content_blocks(msg),
			      "[{\"type\":\"approval\",\"id\":"))
		return NULL;
	node = confab_json_from_string(confab_message_get_content_blocks(msg));
	if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
		return NULL;
	blocks = json_node_get_array(node);
	if (json_array_get_length(blocks) != 1 || json_array_get_object_element(blocks, 0) == NULL)
		return NULL;
	return json_object_ref(json_array_get_object_element(blocks, 0));
}

/* The last answer of @messages that is not an item's decision, or NULL;
 * its index in *@at. */
static ConfabMessage *
last_asking_answer(GPtrArray *messages, guint *at)
{
	for (guint i = messages->len; i > 0; i--) {
		ConfabMessage *msg = g_ptr_array_index(messages, i - 1);
		g_autoptr(JsonObject) decision = confab_http_responses_message_decision(msg);
		if (decision == NULL && g_strcmp0(confab_message_get_role(msg), "assistant") == 0) {
			*at = i - 1;
			return msg;
		}
	}
	return NULL;
}

/* The mcp_approval_response items added to the conversation after
 * @answer (at @at of @messages) that answer its requests, and that the
 * input does not answer itself: answered by this response as its input's
 * are (the items decided them when they were added). */
static void
adopt_decisions(RespCtx *ctx, GPtrArray *messages, ConfabMessage *answer, guint at)
{
	GPtrArray *responses = ctx->request->approval_responses;

	for (guint i = at + 1; answer != NULL && i < messages->len; i++) {
		g_autoptr(JsonObject) decision =
		    confab_http_responses_message_decision(g_ptr_array_index(messages, i));
		const gchar *id = decision != NULL ? confab_json_get_string(decision, "id") : NULL;
		ConfabApprovalResponse *response;
		gboolean answered = FALSE;

		if (id == NULL || confab_message_get_response_id(answer) == NULL ||
		    !message_asked(answer, id))
			continue;
		for (guint j = 0; j < responses->len && !answered; j++)
			answered =
			    g_str_equal(((ConfabApprovalResponse *)g_ptr_array_index(responses, j))
					    ->approval_request_id,
					id);
		if (answered)
			continue;
		response = g_new0(ConfabApprovalResponse, 1);
		response->approval_request_id = g_strdup(id);
		response->approve =
		    json_object_get_boolean_member_with_default(decision, "approve", FALSE);
		response->reason = g_strdup(confab_json_get_string(decision, "reason"));
		response->adopted = TRUE;
		g_ptr_array_add(responses, response);
	}
}

/* The end of a conversation's history (@messages, oldest first): the
 * input's outputs and answers, and the decisions added as items since
 * its last answer, answer that answer. */
static void
continue_conversation(RespCtx *ctx, GPtrArray *messages)
{
	guint at = 0;
	ConfabMessage *answer = last_asking_answer(messages, &at);
	GError *error = NULL;

	if (!check_call_outputs(ctx, answer, &error)) {
		refuse(ctx, error);
		return;
	}
	adopt_decisions(ctx, messages, answer, at);
	check_answers(ctx, answer, NULL, NULL);
}

static void
conversation_history_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	RespCtx *ctx = user_data;
	g_autoptr(GPtrArray) history = NULL;
	GError *error = NULL;

	history = confab_store_get_history_finish(CONFAB_STORE(source), result, &error);
	if (history == NULL) {
		refuse(ctx, error);
		return;
	}
	continue_conversation(ctx, history);
}

/* The newest messages of a conversation, newest first: the end of its
 * history, for what continues it. */
static void
conversation_tail_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	RespCtx *ctx = user_data;
	g_autoptr(ConfabStorePage) page = NULL;
	g_autoptr(GPtrArray) tail = NULL;
	GError *error = NULL;

	page = confab_store_list_messages_finish(CONFAB_STORE(source), result, &error);
	if (page == NULL) {
		refuse(ctx, error);
		return;
	}
	tail = g_ptr_array_new_with_free_func(g_object_unref);
	for (guint i = page->items->len; i > 0; i--)
		g_ptr_array_add(tail, g_object_ref(g_ptr_array_index(page->items, i - 1)));
	continue_conversation(ctx, tail);
}

static void
conversation_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	RespCtx *ctx = user_data;
	g_autoptr(ConfabSession) session = NULL;
	g_autoptr(GError) error = NULL;
	g_auto(ConfabStoreMessageQuery) query = {NULL};

	session = confab_store_get_session_finish(CONFAB_STORE(source), result, &error);
	/* not the caller's: the turn says 404, as for chat completions */
	if (session == NULL || !session_is_callers(session, ctx->principal)) {
		start_turn(ctx, NULL, NULL);
		return;
	}
	/* answers and outputs in the input: they must answer the last answer,
	 * wherever it is; else the items added since it, if any */
	if (ctx->request->call_ids->len > 0 || ctx->request->approval_responses->len > 0) {
		confab_store_get_history_async(CONFAB_STORE(source),
					       confab_session_get_id(session),
					       NULL,
					       conversation_history_cb,
					       ctx);
		return;
	}
	query.session_id = g_strdup(confab_session_get_id(session));
	query.order = CONFAB_ORDER_DESC;
	query.limit = CONVERSATION_TAIL;
	confab_store_list_messages_async(CONFAB_STORE(source),
					 &query,
					 NULL,
					 conversation_tail_cb,
					 ctx);
}

/* The request is whole: on to the conversation it continues, or a new one. */
static void
route(RespCtx *ctx)
{
	ConfabStore *store = confab_engine_get_store(ctx->engine);
	const gchar *conversation;
	GError *error = NULL;

	if (ctx->request->previous_response_id != NULL) {
		if (!confab_id_is_valid(ctx->request->previous_response_id,
					CONFAB_PREFIX_RESPONSE)) {
			refuse(ctx, response_not_found(ctx->request->previous_response_id));
			return;
		}
		confab_store_get_response_async(store,
						ctx->request->previous_response_id,
						NULL,
						previous_cb,
						ctx);
		return;
	}
	/* conversation (or metadata.session_id): the turn checks the session;
	 * function call outputs must answer its last answer's calls */
	conversation = ctx->request->chat->session_id;
	if (conversation != NULL && confab_id_is_valid(conversation, CONFAB_PREFIX_SESSION)) {
		confab_store_get_session_async(store, conversation, NULL, conversation_cb, ctx);
		return;
	}
	if (conversation == NULL && !check_call_outputs(ctx, NULL, &error)) {
		refuse(ctx, error);
		return;
	}
	/* nothing continued: no request to answer */
	check_answers(ctx, NULL, NULL, NULL);
}

static void
resolve_references(RespCtx *ctx);

/**
 * confab_http_responses_create:
 * @engine: the engine
 * @exchange: a POST /api/v1/responses whose head was checked
 * @principal: (transfer full): who asks
 * @param: unused
 *
 * Serves one response: a turn, told in the Responses API's shape.
 */
void
confab_http_responses_create(ConfabEngine *engine,
			     ConfabHttpExchange *exchange,
			     ConfabPrincipal *principal,
			     const gchar *param)
{
	g_autoptr(ConfabPrincipal) owned_principal = principal;
	const ConfabConfig *config = confab_engine_get_config(engine);
	ConfabChatLimits limits = {config->max_json_depth,
				   config->max_files_per_message,
				   config->max_file_bytes};
	g_autoptr(ConfabResponsesRequest) request = NULL;
	g_autoptr(GBytes) bytes = confab_http_exchange_steal_body(exchange);
	g_autoptr(GError) error = NULL;
	RespCtx *ctx;

	request = confab_responses_request_parse(g_bytes_get_data(bytes, NULL),
						 g_bytes_get_size(bytes),
						 &limits,
						 &error);
	g_clear_pointer(&bytes, g_bytes_unref);
	if (request == NULL) {
		confab_http_response_error(exchange, error);
		return;
	}

	ctx = g_new0(RespCtx, 1);
	ctx->engine = g_object_ref(engine);
	ctx->exchange = confab_http_exchange_ref(exchange);
	ctx->items = g_ptr_array_new_with_free_func(g_free);
	ctx->text = g_string_new(NULL);
	ctx->reasoning = g_string_new(NULL);
	ctx->text_index = -1;
	ctx->reasoning_index = -1;
	ctx->mcp_open = g_ptr_array_new_with_free_func((GDestroyNotify)mcp_item_free);
	ctx->mcp_pending = g_ptr_array_new();
	ctx->answers = g_ptr_array_new_with_free_func((GDestroyNotify)confab_approval_free);
	ctx->response_id = confab_id_generator_next(confab_engine_get_id_generator(engine),
						    CONFAB_PREFIX_RESPONSE);
	ctx->principal = g_steal_pointer(&owned_principal);
	ctx->request = g_steal_pointer(&request);
	confab_http_exchange_set_gone_func(exchange, on_client_gone, ctx);
	if (ctx->request->references->len > 0) {
		resolve_references(ctx);
		return;
	}
	route(ctx);
}

/* ---------- stored responses: GET, DELETE, input_items ---------- */

typedef struct {
	ConfabEngine *engine;	      /* owned */
	ConfabHttpExchange *exchange; /* owned */
	ConfabPrincipal *principal;   /* owned */
	gchar *response_id;	      /* owned */
	GPtrArray *messages;	      /* owned */
	ConfabListParams params;
	enum {
		STORED_GET,
		STORED_DELETE,
		STORED_INPUT_ITEMS,
		STORED_STREAM, /* GET ?stream=true: a background stream's events */
		STORED_CANCEL, /* POST …/cancel */
	} what;
	gint64 after;		      /* STORED_STREAM: starting_after, -1 for all */
	gint64 deadline;	      /* STORED_CANCEL: until when to wait for the turn to stop */
	gboolean running;	      /* its turn runs: no answer yet, and none missing */
	ConfabResponseRecord *record; /* owned, nullable: none before v9 (GET only) */
} Stored;

static void
stored_free(Stored *st)
{
	g_clear_object(&st->engine);
	g_clear_pointer(&st->exchange, confab_http_exchange_unref);
	g_clear_pointer(&st->principal, confab_principal_free);
	g_free(st->response_id);
	g_clear_pointer(&st->messages, g_ptr_array_unref);
	g_clear_pointer(&st->record, confab_response_record_free);
	confab_list_params_clear(&st->params);
	g_free(st);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Stored, stored_free)

static void
stored_error(Stored *st, GError *error)
{
	confab_http_response_error(st->exchange, error);
	g_error_free(error);
}

/* The mcp_call item of @call (a tool_call block, or its like) at @at,
 * with the result a later block of @blocks gives it. */
static gchar *
stored_mcp_item(JsonArray *blocks, guint at, JsonObject *call, const gchar *iid)
{
	McpItem mcp = {0};
	const gchar *server = confab_json_get_string(call, "server");
	const gchar *output = NULL;

	mcp.call_id = (gchar *)confab_json_get_string(call, "id");
	mcp.item_id = (gchar *)iid;
	mcp.server = (gchar *)server;
	mcp.name = (gchar *)own_tool_name(confab_json_get_string(call, "name"), server);
	mcp.arguments = (gchar *)confab_json_get_string(call, "arguments");
	for (guint j = at + 1; j < json_array_get_length(blocks); j++) {
		JsonObject *r = json_array_get_object_element(blocks, j);
		JsonNode *is_error;
		if (r == NULL || g_strcmp0(confab_json_get_string(r, "type"), "tool_result") != 0 ||
		    g_strcmp0(confab_json_get_string(r, "tool_call_id"), mcp.call_id) != 0)
			continue;
		output = confab_json_get_string(r, "content");
		is_error = json_object_get_member(r, "is_error");
		mcp.is_error = is_error != NULL && JSON_NODE_HOLDS_VALUE(is_error) &&
			       json_node_get_boolean(is_error);
		break;
	}
	return mcp_item_json(&mcp,
			     output == NULL || mcp.is_error ? "failed" : "completed",
			     output != NULL ? output : "The call did not finish");
}

/* Whether the call @call_id of @blocks asked a person and ended its
 * response there (an approval_request and no result): its item is the
 * mcp_approval_request, as it was served, and not an mcp_call. */
static gboolean
call_was_deferred(JsonArray *blocks, const gchar *call_id)
{
	gboolean asked = FALSE;

	for (guint i = 0; call_id != NULL && i < json_array_get_length(blocks); i++) {
		JsonObject *b = json_array_get_object_element(blocks, i);
		const gchar *type = b != NULL ? confab_json_get_string(b, "type") : NULL;
		if (g_strcmp0(confab_json_get_string(b, "tool_call_id"), call_id) != 0)
			continue;
		if (g_strcmp0(type, "tool_result") == 0)
			return FALSE;
		if (g_strcmp0(type, "approval_request") == 0)
			asked = TRUE;
	}
	return asked;
}

/* A person's decision of an approval request, as the
 * mcp_approval_response item that answered it. */
static gchar *
decision_item(JsonObject *block)
{
	GString *out = g_string_new("{\"id\":");

	confab_json_append_string(out, confab_json_get_string(block, "id"));
	g_string_append(out, ",\"type\":\"mcp_approval_response\",\"approval_request_id\":");
	confab_json_append_string(out, confab_json_get_string(block, "id"));
	g_string_append_printf(out,
			       ",\"approve\":%s,\"reason\":",
			       json_object_get_boolean_member_with_default(block, "approve", FALSE)
				   ? "true"
				   : "false");
	confab_json_append_string(out, confab_json_get_string(block, "reason"));
	g_string_append_c(out, '}');
	return g_string_free(out, FALSE);
}

/* The output items of a stored answer, from its content blocks, each
 * added to @items as JSON; an item deleted from a conversation (its block
 * a `{"type":"deleted"}`) as NULL, so that the others keep their places.
 * With @origins, the index of the block each item comes from. */
static void
stored_output_items(GPtrArray *items, GArray *origins, ConfabMessage *answer, const gchar *id)
{
	g_autoptr(JsonNode) node = NULL;
	JsonArray *blocks;
	guint n_messages = 0, n_reasoning = 0, n_mcp = 0, n_fc = 0;

	node = confab_json_from_string(confab_message_get_content_blocks(answer));
	if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
		return;
	blocks = json_node_get_array(node);
	for (guint i = 0; i < json_array_get_length(blocks); i++) {
		JsonObject *block = json_array_get_object_element(blocks, i);
		const gchar *type = block != NULL ? confab_json_get_string(block, "type") : NULL;
		g_autofree gchar *item = NULL;

		if (g_strcmp0(type, "deleted") == 0) {
			g_ptr_array_add(items, NULL);
			if (origins != NULL)
				g_array_append_val(origins, i);
			continue;
		}
		if (g_strcmp0(type, "text") == 0) {
			g_autofree gchar *iid = item_id(CONFAB_PREFIX_MESSAGE, id, n_messages++);
			item =
			    message_item(iid, "completed", confab_json_get_string(block, "text"));
		} else if (g_strcmp0(type, "reasoning") == 0) {
			g_autofree gchar *iid = item_id("rs_", id, n_reasoning++);
			item = reasoning_item(iid, confab_json_get_string(block, "text"));
		} else if (g_strcmp0(type, "tool_call") == 0 &&
			   confab_json_get_string(block, "server") == NULL) {
			const gchar *call_id = confab_json_get_string(block, "id");
			g_autofree gchar *iid = item_id("fc_", id, n_fc++);
			item = function_call_item(iid,
						  call_id,
						  NULL,
						  confab_json_get_string(block, "name"),
						  confab_json_get_string(block, "arguments"),
						  "completed");
		} else if (g_strcmp0(type, "tool_call") == 0 &&
			   !call_was_deferred(blocks, confab_json_get_string(block, "id"))) {
			g_autofree gchar *iid = item_id("mcp_", id, n_mcp++);
			item = stored_mcp_item(blocks, i, block, iid);
		} else if (g_strcmp0(type, "approval_request") == 0) {
			item = approval_request_item(confab_json_get_string(block, "id"),
						     confab_json_get_string(block, "server"),
						     confab_json_get_string(block, "name"),
						     confab_json_get_string(block, "arguments"));
		} else if (g_strcmp0(type, "approval") == 0 &&
			   confab_json_get_string(block, "tool_call_id") == NULL) {
			item = decision_item(block);
		} else if (g_strcmp0(type, "approval") == 0 &&
			   confab_json_get_string(block, "tool_call_id") != NULL &&
			   json_object_get_boolean_member_with_default(block, "approve", FALSE)) {
			/* an earlier response's request, approved: its call ran
			 * in this response */
			g_autoptr(JsonObject) call = json_object_new();
			g_autofree gchar *iid = item_id("mcp_", id, n_mcp++);
			json_object_set_string_member(
			    call,
			    "id",
			    confab_json_get_string(block, "tool_call_id"));
			json_object_set_string_member(call,
						      "server",
						      confab_json_get_string(block, "server")
							  ?: "");
			json_object_set_string_member(call,
						      "name",
						      confab_json_get_string(block, "name") ?: "");
			json_object_set_string_member(call,
						      "arguments",
						      confab_json_get_string(block, "arguments")
							  ?: "");
			item = stored_mcp_item(blocks, i, call, iid);
		}
		if (item == NULL)
			continue;
		g_ptr_array_add(items, g_steal_pointer(&item));
		if (origins != NULL)
			g_array_append_val(origins, i);
	}
}

/* The output items of a stored answer, comma-separated. */
static void
append_stored_output(GString *out, ConfabMessage *answer, const gchar *id)
{
	g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func(g_free);

	stored_output_items(items, NULL, answer, id);
	for (guint i = 0, n = 0; i < items->len; i++) {
		if (g_ptr_array_index(items, i) == NULL)
			continue;
		if (n++ > 0)
			g_string_append_c(out, ',');
		g_string_append(out, g_ptr_array_index(items, i));
	}
}

static void
append_stored_usage(GString *out, ConfabMessage *answer)
{
	gint64 input = -1, output = -1;

	if (answer != NULL) {
		input = confab_message_get_prompt_tokens(answer);
		output = confab_message_get_completion_tokens(answer);
	}
	if (input >= 0 || output >= 0) {
		input = MAX(input, 0);
		output = MAX(output, 0);
		g_string_append_printf(out,
				       "{\"input_tokens\":%" G_GINT64_FORMAT
				       ",\"input_tokens_details\":{\"cached_tokens\":0}"
				       ",\"output_tokens\":%" G_GINT64_FORMAT
				       ",\"output_tokens_details\":{\"reasoning_tokens\":0}"
				       ",\"total_tokens\":%" G_GINT64_FORMAT "}",
				       input,
				       output,
				       input + output);
	} else {
		g_string_append(out, "null");
	}
}

/* Where a stored response stands, from its messages: @reason (out) its
 * incomplete_details.reason, @error_json (out) its error. */
static const gchar *
stored_status(Stored *st, ConfabMessage *answer, const gchar **reason, gchar **error_json)
{
	const gchar *status = "completed";

	if (st->running) {
		/* as OpenAI says of a response that runs; its output is stored
		 * with its answer, at the end */
		status = "in_progress";
	} else if (answer == NULL ||
		   confab_message_get_status(answer) == CONFAB_MESSAGE_STATUS_INCOMPLETE) {
		status = "incomplete";
		*reason = "interrupted";
	} else if (confab_message_get_status(answer) == CONFAB_MESSAGE_STATUS_FAILED) {
		g_autoptr(JsonNode) node =
		    confab_json_from_string(confab_message_get_content_blocks(answer));
		JsonArray *blocks =
		    node != NULL && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
		status = "failed";
		for (guint i = 0; blocks != NULL && i < json_array_get_length(blocks); i++) {
			JsonObject *b = json_array_get_object_element(blocks, i);
			if (b != NULL &&
			    g_strcmp0(confab_json_get_string(b, "type"), "error") == 0) {
				GString *e = g_string_new("{\"code\":");
				confab_json_append_string(e, confab_json_get_string(b, "code"));
				g_string_append(e, ",\"message\":");
				confab_json_append_string(e, confab_json_get_string(b, "message"));
				g_string_append_c(e, '}');
				g_free(*error_json);
				*error_json = g_string_free(e, FALSE);
			}
		}
	} else if (g_strcmp0(confab_message_get_finish_reason(answer), "length") == 0) {
		status = "incomplete";
		*reason = "max_output_tokens";
	} else if (g_strcmp0(confab_message_get_finish_reason(answer), "content_filter") == 0) {
		status = "incomplete";
		*reason = "content_filter";
	}
	return status;
}

static gchar *
stored_response_json(Stored *st)
{
	ConfabMessage *answer = last_answer(st->messages);
	ConfabMessage *first = g_ptr_array_index(st->messages, 0);
	const gchar *session_id = confab_message_get_session_id(first);
	const gchar *reason = NULL;
	g_autofree gchar *error_json = NULL;
	const gchar *status = stored_status(st, answer, &reason, &error_json);
	g_autoptr(JsonNode) params =
	    st->record != NULL ? confab_json_from_string(st->record->params) : NULL;
	JsonObject *echo =
	    params != NULL && JSON_NODE_HOLDS_OBJECT(params) ? json_node_get_object(params) : NULL;
	gint64 completed_at = answer != NULL ? confab_message_get_created_at(answer) : 0;
	GString *out = g_string_new("{\"id\":");

	/* a background response: where it stands is the record's */
	if (st->record != NULL && st->record->background) {
		status = st->record->status;
		if (!g_str_equal(status, "incomplete"))
			reason = NULL;
		if (st->record->error != NULL) {
			g_free(error_json);
			error_json = g_strdup(st->record->error);
		}
		completed_at = st->record->completed_at;
	}
	confab_json_append_string(out, st->response_id);
	g_string_append_printf(out,
			       ",\"object\":\"response\",\"created_at\":%" G_GINT64_FORMAT
			       ",\"status\":",
			       confab_message_get_created_at(first));
	confab_json_append_string(out, status);
	g_string_append(out, ",\"completed_at\":");
	/* the answer is stored when its turn ends */
	if (g_str_equal(status, "completed") && completed_at > 0)
		g_string_append_printf(out, "%" G_GINT64_FORMAT, completed_at);
	else
		g_string_append(out, "null");
	g_string_append(out, ",\"error\":");
	g_string_append(out, error_json != NULL ? error_json : "null");
	g_string_append(out, ",\"incomplete_details\":");
	if (reason != NULL) {
		g_string_append(out, "{\"reason\":");
		confab_json_append_string(out, reason);
		g_string_append_c(out, '}');
	} else {
		g_string_append(out, "null");
	}
	append_params(out,
		      echo,
		      echo != NULL ? confab_json_get_string(echo, "instructions") : NULL,
		      st->record != NULL && st->record->background);
	g_string_append(out, ",\"model\":");
	confab_json_append_string(out, confab_message_get_model(first));
	g_string_append(out, ",\"output\":[");
	if (answer != NULL)
		append_stored_output(out, answer, st->response_id);
	g_string_append(out, "],\"previous_response_id\":");
	confab_json_append_string(
	    out,
	    echo != NULL ? confab_json_get_string(echo, "previous_response_id") : NULL);
	g_string_append(out, ",\"conversation\":{\"id\":");
	confab_json_append_string(out, session_id);
	g_string_append(out, "},\"store\":true,\"usage\":");
	append_stored_usage(out, answer);
	g_string_append(out, ",\"metadata\":");
	append_metadata(out, echo, session_id);
	g_string_append_c(out, '}');
	return g_string_free(out, FALSE);
}

/* A stored user, system or developer message as an input item. */
static gchar *
input_item_json(ConfabMessage *msg)
{
	const gchar *role = confab_message_get_role(msg);
	g_autoptr(JsonNode) node = NULL;
	JsonArray *parts;
	GString *out = g_string_new("{\"id\":");
	gboolean first = TRUE;

	confab_json_append_string(out, confab_message_get_id(msg));
	if (g_strcmp0(role, "tool") == 0) {
		g_autoptr(JsonNode) blocks =
		    confab_json_from_string(confab_message_get_content_blocks(msg));
		JsonObject *result =
		    blocks != NULL && JSON_NODE_HOLDS_ARRAY(blocks) &&
			    json_array_get_length(json_node_get_array(blocks)) > 0
			? json_array_get_object_element(json_node_get_array(blocks), 0)
			: NULL;
		g_string_append(out, ",\"type\":\"function_call_output\",\"call_id\":");
		confab_json_append_string(
		    out,
		    result != NULL ? confab_json_get_string(result, "tool_call_id") : NULL);
		g_string_append(out, ",\"output\":");
		confab_json_append_string(out,
					  result != NULL ? confab_json_get_string(result, "content")
							 : "");
		g_string_append(out, ",\"status\":\"completed\"}");
		return g_string_free(out, FALSE);
	}
	g_string_append(out, ",\"type\":\"message\",\"role\":");
	confab_json_append_string(out, role);
	g_string_append(out, ",\"status\":\"completed\",\"content\":[");
	node = confab_json_from_string(confab_message_get_content(msg));
	parts = node != NULL && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
	for (guint i = 0; parts != NULL && i < json_array_get_length(parts); i++) {
		JsonObject *part = json_array_get_object_element(parts, i);
		const gchar *type = part != NULL ? confab_json_get_string(part, "type") : NULL;
		gboolean assistant = g_strcmp0(role, "assistant") == 0;

		if (type == NULL)
			continue;
		if (!first)
			g_string_append_c(out, ',');
		first = FALSE;
		if (g_str_equal(type, "text")) {
			g_string_append(out,
					assistant ? "{\"type\":\"output_text\",\"annotations\":[],"
						    "\"text\":"
						  : "{\"type\":\"input_text\",\"text\":");
			confab_json_append_string(out, confab_json_get_string(part, "text"));
			g_string_append_c(out, '}');
		} else if (g_str_equal(type, "image_url")) {
			JsonObject *img = confab_json_get_object(part, "image_url");
			g_string_append(out, "{\"type\":\"input_image\",\"image_url\":");
			confab_json_append_string(out,
						  img != NULL ? confab_json_get_string(img, "url")
							      : NULL);
			g_string_append(out, ",\"detail\":");
			confab_json_append_string(
			    out,
			    img != NULL && confab_json_get_string(img, "detail") != NULL
				? confab_json_get_string(img, "detail")
				: "auto");
			g_string_append_c(out, '}');
		} else if (g_str_equal(type, "file")) {
			JsonObject *file = confab_json_get_object(part, "file");
			g_string_append(out, "{\"type\":\"input_file\"");
			if (file != NULL) {
				static const gchar *const keys[] = {"filename",
								    "file_data",
								    "file_id",
								    NULL};
				for (guint k = 0; keys[k] != NULL; k++) {
					if (confab_json_get_string(file, keys[k]) == NULL)
						continue;
					g_string_append_printf(out, ",\"%s\":", keys[k]);
					confab_json_append_string(
					    out,
					    confab_json_get_string(file, keys[k]));
				}
			}
			g_string_append_c(out, '}');
		} else {
			/* a refusal, as it was */
			g_string_append(out, "{\"type\":\"refusal\",\"refusal\":");
			confab_json_append_string(out, confab_json_get_string(part, type));
			g_string_append_c(out, '}');
		}
	}
	g_string_append(out, "]}");
	return g_string_free(out, FALSE);
}

/* The one item of a message that is one text (most are), read without a
 * tree: what input_item_json() or stored_output_items() would make of it;
 * NULL for any other message. */
static gchar *
one_text_item(ConfabMessage *message, const gchar *id)
{
	const gchar *role = confab_message_get_role(message);
	gboolean assistant = g_strcmp0(role, "assistant") == 0;
	g_autofree gchar *text = NULL;
	g_autofree gchar *iid = NULL;
	GString *out;

	if (g_strcmp0(role, "tool") == 0)
		return NULL;
	text = confab_openai_message_one_text(assistant ? confab_message_get_content_blocks(message)
							: confab_message_get_content(message));
	if (text == NULL)
		return NULL;
	if (assistant) {
		if (id == NULL)
			id = iid = item_id(CONFAB_PREFIX_MESSAGE,
					   confab_message_get_response_id(message) != NULL
					       ? confab_message_get_response_id(message)
					       : confab_message_get_id(message),
					   0);
		return message_item(id, "completed", text);
	}
	out = g_string_new("{\"id\":");
	confab_json_append_string(out, id != NULL ? id : confab_message_get_id(message));
	g_string_append(out, ",\"type\":\"message\",\"role\":");
	confab_json_append_string(out, role);
	g_string_append(
	    out,
	    ",\"status\":\"completed\",\"content\":[{\"type\":\"input_text\",\"text\":");
	confab_json_append_string(out, text);
	g_string_append(out, "}]}");
	return g_string_free(out, FALSE);
}

#define ITEM_ID_HEAD "{\"id\":"

/* @item (consumed) with @id in place of the id it starts with, as every
 * rendered item does. */
static gchar *
renamed_item(gchar *item, const gchar *id)
{
	gsize head = strlen(ITEM_ID_HEAD);
	gsize used = 0;
	g_autofree gchar *old = NULL;
	GString *out;

	g_assert(g_str_has_prefix(item, ITEM_ID_HEAD));
	old = confab_json_read_string(item + head, strlen(item + head), &used);
	g_assert(old != NULL);
	out = g_string_sized_new(strlen(item) + strlen(id));
	g_string_append(out, ITEM_ID_HEAD);
	confab_json_append_string(out, id);
	g_string_append(out, item + head + used);
	g_free(item);
	return g_string_free(out, FALSE);
}

/**
 * confab_http_responses_message_items:
 * @message: a stored message
 * @first_id: (nullable): the ids to give the items: this for the first,
 *   and this and `_1`, `_2`… for the next ones (the Conversations API's);
 *   %NULL for the ids the response shows
 *
 * The items of a stored message as the Responses API shows them: a user,
 * system or developer message, or a tool's answer, is one input item (its
 * id the message's); an answer is its output items (a message, reasoning,
 * function calls, MCP calls and approval requests), with the ids the
 * response shows (the message's response id, or the message's). An item
 * deleted from the message (confab_http_responses_message_drop_item()) is
 * NULL in its place. A message that is one text, most are, is read
 * without building a tree.
 *
 * Returns: (transfer full) (element-type utf8): each item, as JSON, or NULL
 */
GPtrArray *
confab_http_responses_message_items(ConfabMessage *message, const gchar *first_id)
{
	GPtrArray *items = g_ptr_array_new_with_free_func(g_free);
	gchar *one;

	g_return_val_if_fail(CONFAB_IS_MESSAGE(message), items);
	one = one_text_item(message, first_id);
	if (one != NULL) {
		g_ptr_array_add(items, one);
		return items;
	}
	if (g_strcmp0(confab_message_get_role(message), "assistant") == 0)
		stored_output_items(items,
				    NULL,
				    message,
				    confab_message_get_response_id(message) != NULL
					? confab_message_get_response_id(message)
					: confab_message_get_id(message));
	else
		g_ptr_array_add(items, input_item_json(message));
	for (guint i = 0; first_id != NULL && i < items->len; i++) {
		g_autofree gchar *id = NULL;
		if (g_ptr_array_index(items, i) == NULL)
			continue;
		id = i == 0 ? g_strdup(first_id) : g_strdup_printf("%s_%u", first_id, i);
		g_ptr_array_index(items, i) = renamed_item(g_ptr_array_index(items, i), id);
	}
	return items;
}

/* Whether block @at of an answer is an item's (@origins). */
static gboolean
block_is_item(GArray *origins, guint at)
{
	for (guint i = 0; i < origins->len; i++)
		if (g_array_index(origins, guint, i) == at)
			return TRUE;
	return FALSE;
}

/* Whether @block goes with the item of @item_block, which is deleted: a
 * call's result, and a call that asked a person first and has no item of
 * its own (its item was the request). */
static gboolean
block_goes_with(JsonObject *block, JsonObject *item_block, gboolean is_item)
{
	const gchar *item_type = confab_json_get_string(item_block, "type");
	const gchar *type = confab_json_get_string(block, "type");
	const gchar *call_id = g_strcmp0(item_type, "tool_call") == 0
				   ? confab_json_get_string(item_block, "id")
				   : confab_json_get_string(item_block, "tool_call_id");

	if (call_id == NULL || type == NULL)
		return FALSE;
	if (g_str_equal(type, "tool_result"))
		return g_strcmp0(confab_json_get_string(block, "tool_call_id"), call_id) == 0;
	return g_str_equal(type, "tool_call") && !is_item &&
	       g_strcmp0(item_type, "approval_request") == 0 &&
	       g_strcmp0(confab_json_get_string(block, "id"), call_id) == 0;
}

/* @message without the item whose block is @at: that block becomes
 * `{"type":"deleted"}`, what goes with it goes, and the content is the
 * text blocks left. */
static void
drop_block(ConfabMessage *message, JsonArray *blocks, guint at, GArray *origins)
{
	JsonObject *item_block = json_array_get_object_element(blocks, at);
	g_autoptr(GString) out = g_string_new("[");
	g_autoptr(GString) content = g_string_new("[");

	for (guint i = 0; i < json_array_get_length(blocks); i++) {
		JsonObject *block = json_array_get_object_element(blocks, i);
		g_autoptr(JsonNode) node = NULL;
		g_autofree gchar *json = NULL;

		if (block == NULL ||
		    (i != at && block_goes_with(block, item_block, block_is_item(origins, i))))
			continue;
		if (out->len > 1)
			g_string_append_c(out, ',');
		if (i == at) {
			g_string_append(out, "{\"type\":\"deleted\"}");
			continue;
		}
		node = json_node_init_object(json_node_alloc(), block);
		json = confab_json_to_string(node);
		g_string_append(out, json);
		if (g_strcmp0(confab_json_get_string(block, "type"), "text") != 0)
			continue;
		g_string_append(content,
				content->len > 1 ? ",{\"type\":\"text\",\"text\":"
						 : "{\"type\":\"text\",\"text\":");
		confab_json_append_string(content, confab_json_get_string(block, "text"));
		g_string_append_c(content, '}');
	}
	g_string_append_c(out, ']');
	g_string_append_c(content, ']');
	confab_message_set_content_blocks(message, out->str);
	confab_message_set_content(message, content->str);
}

/**
 * confab_http_responses_message_drop_item:
 * @message: a stored message
 * @index: one of its items, as confab_http_responses_message_items() has
 *   them
 * @emptied: (out): whether that was the message's last item: the whole
 *   message goes
 *
 * Deletes one item of a message, in @message itself (its content and
 * content blocks, to be stored): an answer's item is marked deleted in its
 * content blocks (`{"type":"deleted"}`, so that the other items keep their
 * place and ids), with what belongs to it (a call's result); what is left
 * is what the next turn's model is sent. The only item of a message, or
 * its last one left, is the whole message (*@emptied).
 *
 * Returns: %FALSE when @message has no such item (or it is deleted already)
 */
gboolean
confab_http_responses_message_drop_item(ConfabMessage *message, guint index, gboolean *emptied)
{
	g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GArray) origins = g_array_new(FALSE, FALSE, sizeof(guint));
	g_autoptr(JsonNode) node = NULL;
	gboolean others = FALSE;

	g_return_val_if_fail(CONFAB_IS_MESSAGE(message), FALSE);
	*emptied = TRUE;
	if (g_strcmp0(confab_message_get_role(message), "assistant") != 0)
		return index == 0;
	stored_output_items(items, origins, message, confab_message_get_id(message));
	if (index >= items->len || g_ptr_array_index(items, index) == NULL)
		return FALSE;
	for (guint i = 0; i < items->len && !others; i++)
		others = i != index && g_ptr_array_index(items, i) != NULL;
	if (!others)
		return TRUE;
	*emptied = FALSE;
	node = confab_json_from_string(confab_message_get_content_blocks(message));
	drop_block(message,
		   json_node_get_array(node),
		   g_array_index(origins, guint, index),
		   origins);
	return TRUE;
}

static gchar *
input_items_json(Stored *st)
{
	ConfabMessage *answer = last_answer(st->messages);
	g_autoptr(GPtrArray) items = g_ptr_array_new();
	GString *out = g_string_new("{\"object\":\"list\",\"data\":[");
	gboolean desc = st->params.order == CONFAB_ORDER_DESC;
	gboolean has_more = FALSE;
	guint n = st->messages->len;

	for (guint k = 0; k < n; k++) {
		ConfabMessage *msg = g_ptr_array_index(st->messages, desc ? n - 1 - k : k);
		const gchar *id = confab_message_get_id(msg);
		if (msg == answer)
			continue;
		if (st->params.after != NULL && (desc ? g_strcmp0(id, st->params.after) >= 0
						      : g_strcmp0(id, st->params.after) <= 0))
			continue;
		if (items->len == st->params.limit) {
			has_more = TRUE;
			break;
		}
		g_ptr_array_add(items, msg);
	}
	for (guint i = 0; i < items->len; i++) {
		g_autofree gchar *item = input_item_json(g_ptr_array_index(items, i));
		if (i > 0)
			g_string_append_c(out, ',');
		g_string_append(out, item);
	}
	g_string_append(out, "],\"first_id\":");
	confab_json_append_string(
	    out,
	    items->len > 0 ? confab_message_get_id(g_ptr_array_index(items, 0)) : NULL);
	g_string_append(out, ",\"last_id\":");
	confab_json_append_string(
	    out,
	    items->len > 0 ? confab_message_get_id(g_ptr_array_index(items, items->len - 1))
			   : NULL);
	g_string_append_printf(out, ",\"has_more\":%s}", has_more ? "true" : "false");
	return g_string_free(out, FALSE);
}

static void
deleted_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Stored) st = user_data;
	GError *error = NULL;
	GString *out;

	if (!confab_store_delete_response_finish(CONFAB_STORE(source), result, &error)) {
		stored_error(st, error);
		return;
	}
	out = g_string_new("{\"id\":");
	confab_json_append_string(out, st->response_id);
	g_string_append(out, ",\"object\":\"response\",\"deleted\":true}");
	confab_http_response_json(st->exchange, 200, g_string_free(out, FALSE));
}

static GError *
response_running(const gchar *response_id)
{
	GError *error = NULL;
	confab_error_set_printf(&error,
				CONFAB_ERROR_CONVERSATION_BUSY,
				NULL,
				"A turn is running in the conversation of response '%s'; "
				"retry when it has finished",
				response_id);
	return error;
}

/* The conversation's latest message: whether it is the response's last
 * one, so that the turn running is the response's own and not a later one
 * after it died unanswered (a crash). */
static void
stored_latest_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Stored) st = user_data;
	g_autoptr(ConfabStorePage) page = NULL;
	GError *error = NULL;
	ConfabMessage *last = g_ptr_array_index(st->messages, st->messages->len - 1);

	page = confab_store_list_messages_finish(CONFAB_STORE(source), result, &error);
	if (page == NULL) {
		stored_error(st, error);
		return;
	}
	st->running = page->items->len > 0 &&
		      g_strcmp0(confab_message_get_id(g_ptr_array_index(page->items, 0)),
				confab_message_get_id(last)) == 0;
	confab_http_response_json(st->exchange, 200, stored_response_json(st));
}

static void
stored_running_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Stored) st = user_data;
	g_auto(ConfabStoreMessageQuery) query = {0};
	g_autofree gchar *response_id = NULL;
	GError *error = NULL;
	gboolean running = FALSE;

	if (!confab_store_session_is_running_finish(CONFAB_STORE(source),
						    result,
						    &running,
						    &error)) {
		stored_error(st, error);
		return;
	}
	if (st->what == STORED_DELETE) {
		/* the turn would commit its answer after the delete: half a
		 * turn, which no conversation holds */
		if (running) {
			stored_error(st, response_running(st->response_id));
			return;
		}
		response_id = g_strdup(st->response_id);
		confab_store_delete_response_async(CONFAB_STORE(source),
						   response_id,
						   NULL,
						   deleted_cb,
						   g_steal_pointer(&st));
		return;
	}
	if (!running) {
		confab_http_response_json(st->exchange, 200, stored_response_json(st));
		return;
	}
	query.session_id =
	    g_strdup(confab_message_get_session_id(g_ptr_array_index(st->messages, 0)));
	query.order = CONFAB_ORDER_DESC;
	query.limit = 1;
	confab_store_list_messages_async(CONFAB_STORE(source),
					 &query,
					 NULL,
					 stored_latest_cb,
					 g_steal_pointer(&st));
}

/* GET with its record read, and DELETE: an answer stored is the end;
 * without one, the turn may still run, here or on another daemon sharing
 * the store (a background response's record says so itself). */
static void
stored_replay(Stored *st);
static void
stored_cancel(Stored *st);

static void
stored_answer(Stored *st)
{
	ConfabStore *store = confab_engine_get_store(st->engine);
	const gchar *session_id = confab_message_get_session_id(g_ptr_array_index(st->messages, 0));

	if (st->what == STORED_STREAM) {
		stored_replay(st);
		return;
	}
	if (st->what == STORED_CANCEL) {
		stored_cancel(st);
		return;
	}

	if (st->what == STORED_GET &&
	    (last_answer(st->messages) != NULL || (st->record != NULL && st->record->background))) {
		confab_http_response_json(st->exchange, 200, stored_response_json(st));
		stored_free(st);
		return;
	}
	confab_store_session_is_running_async(store, session_id, NULL, stored_running_cb, st);
}

static void
stored_read_messages(Stored *st);

static void
stored_record_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Stored *st = user_data;
	g_autoptr(GError) error = NULL;

	/* none: a response from before records were kept */
	st->record = confab_store_get_response_record_finish(CONFAB_STORE(source), result, &error);
	if (st->record == NULL &&
	    !g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_RESPONSE_NOT_FOUND)) {
		stored_error(st, g_steal_pointer(&error));
		stored_free(st);
		return;
	}
	stored_read_messages(st);
}

static void
stored_session_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Stored) st = user_data;
	g_autoptr(ConfabSession) session = NULL;
	g_autoptr(GError) error = NULL;

	session = confab_store_get_session_finish(CONFAB_STORE(source), result, &error);
	if (session == NULL || !session_is_callers(session, st->principal)) {
		if (error != NULL &&
		    !g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND)) {
			stored_error(st, g_steal_pointer(&error));
			return;
		}
		stored_error(st, response_not_found(st->response_id));
		return;
	}
	if (st->what == STORED_INPUT_ITEMS) {
		confab_http_response_json(st->exchange, 200, input_items_json(st));
		return;
	}
	stored_answer(g_steal_pointer(&st));
}

static void
stored_messages_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Stored) st = user_data;
	g_autofree gchar *session_id = NULL;
	GError *error = NULL;

	st->messages = confab_store_get_response_finish(CONFAB_STORE(source), result, &error);
	if (st->messages == NULL) {
		stored_error(st, error);
		return;
	}
	if (st->messages->len == 0) {
		stored_error(st, response_not_found(st->response_id));
		return;
	}
	session_id = g_strdup(confab_message_get_session_id(g_ptr_array_index(st->messages, 0)));
	confab_store_get_session_async(CONFAB_STORE(source),
				       session_id,
				       NULL,
				       stored_session_cb,
				       g_steal_pointer(&st));
}

static void
stored_read_messages(Stored *st)
{
	g_autofree gchar *id = g_strdup(st->response_id);
	confab_store_get_response_async(confab_engine_get_store(st->engine),
					id,
					NULL,
					stored_messages_cb,
					st);
}

/* Its record first, then its messages: a background response's record
 * says it ended only once its answer is stored, so that what is read
 * after it has the answer. */
static void
stored_read(Stored *st)
{
	g_autofree gchar *id = g_strdup(st->response_id);

	if (st->what == STORED_DELETE || st->what == STORED_INPUT_ITEMS) {
		stored_read_messages(st);
		return;
	}
	confab_store_get_response_record_async(confab_engine_get_store(st->engine),
					       id,
					       NULL,
					       stored_record_cb,
					       st);
}

static void
stored_begin(ConfabEngine *engine,
	     ConfabHttpExchange *exchange,
	     ConfabPrincipal *principal,
	     const gchar *response_id,
	     gint what,
	     gint64 after)
{
	g_autoptr(Stored) st = g_new0(Stored, 1);
	GError *error = NULL;

	st->engine = g_object_ref(engine);
	st->exchange = confab_http_exchange_ref(exchange);
	st->principal = principal;
	st->response_id = g_strdup(response_id);
	st->what = what;
	st->after = after;
	if (what == STORED_INPUT_ITEMS &&
	    !confab_list_params_parse(confab_http_exchange_get_query(exchange),
				      CONFAB_PREFIX_MESSAGE,
				      &st->params,
				      &error)) {
		stored_error(st, error);
		return;
	}
	if (!confab_id_is_valid(response_id, CONFAB_PREFIX_RESPONSE)) {
		stored_error(st, response_not_found(response_id));
		return;
	}
	stored_read(g_steal_pointer(&st));
}

/**
 * confab_http_responses_get:
 * @engine: the engine
 * @exchange: a GET /api/v1/responses/{id}
 * @principal: (transfer full): who asks
 * @response_id: the id from the path
 *
 * The stored response, rebuilt from its messages.
 */
void
confab_http_responses_get(ConfabEngine *engine,
			  ConfabHttpExchange *exchange,
			  ConfabPrincipal *principal,
			  const gchar *response_id)
{
	const gchar *query = confab_http_exchange_get_query(exchange);
	g_autoptr(GHashTable) table =
	    query != NULL ? g_uri_parse_params(query, -1, "&", G_URI_PARAMS_WWW_FORM, NULL) : NULL;
	const gchar *stream = table != NULL ? g_hash_table_lookup(table, "stream") : NULL;
	const gchar *after = table != NULL ? g_hash_table_lookup(table, "starting_after") : NULL;
	gint64 n = -1;
	GError *error = NULL;

	if (stream == NULL || g_str_equal(stream, "false")) {
		stored_begin(engine, exchange, principal, response_id, STORED_GET, -1);
		return;
	}
	if (!g_str_equal(stream, "true"))
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "stream",
				 "stream must be true or false");
	else if (after != NULL && !g_ascii_string_to_signed(after, 10, -1, G_MAXINT64, &n, NULL))
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "starting_after",
				 "starting_after must be a sequence number");
	if (error != NULL) {
		confab_principal_free(principal);
		confab_http_response_error(exchange, error);
		g_error_free(error);
		return;
	}
	stored_begin(engine, exchange, principal, response_id, STORED_STREAM, n);
}

/**
 * confab_http_responses_cancel:
 * @engine: the engine
 * @exchange: a POST /api/v1/responses/{id}/cancel
 * @principal: (transfer full): who asks
 * @response_id: the id from the path
 *
 * Stops a background response that is queued or running, on whichever
 * instance runs it, and answers with it as it stands then.
 */
void
confab_http_responses_cancel(ConfabEngine *engine,
			     ConfabHttpExchange *exchange,
			     ConfabPrincipal *principal,
			     const gchar *response_id)
{
	stored_begin(engine, exchange, principal, response_id, STORED_CANCEL, -1);
}

/**
 * confab_http_responses_delete:
 * @engine: the engine
 * @exchange: a DELETE /api/v1/responses/{id}
 * @principal: (transfer full): who asks
 * @response_id: the id from the path
 *
 * Deletes the response's messages from their conversation.
 */
void
confab_http_responses_delete(ConfabEngine *engine,
			     ConfabHttpExchange *exchange,
			     ConfabPrincipal *principal,
			     const gchar *response_id)
{
	stored_begin(engine, exchange, principal, response_id, STORED_DELETE, -1);
}

/**
 * confab_http_responses_input_items:
 * @engine: the engine
 * @exchange: a GET /api/v1/responses/{id}/input_items
 * @principal: (transfer full): who asks
 * @response_id: the id from the path
 *
 * The response's input, as a list of items (`after`, `limit`, `order`).
 */
void
confab_http_responses_input_items(ConfabEngine *engine,
				  ConfabHttpExchange *exchange,
				  ConfabPrincipal *principal,
				  const gchar *response_id)
{
	stored_begin(engine, exchange, principal, response_id, STORED_INPUT_ITEMS, -1);
}

/* ---------- background responses: replayed, cancelled ---------- */

static GError *
invalid(const gchar *param, const gchar *message)
{
	GError *error = NULL;
	confab_error_set(&error, CONFAB_ERROR_INVALID_VALUE, param, message);
	return error;
}

static void
stored_replay(Stored *st)
{
	if (st->record == NULL || !st->record->background || !st->record->stream) {
		stored_error(st,
			     invalid("stream",
				     "Only a response created with background and stream true "
				     "can be streamed again"));
		stored_free(st);
		return;
	}
	confab_http_replay_start(st->engine, st->exchange, st->response_id, st->after);
	stored_free(st);
}

static void
cancel_check(Stored *st);

static gboolean
cancel_tick(gpointer user_data)
{
	cancel_check(user_data);
	return G_SOURCE_REMOVE;
}

static void
cancel_record_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Stored *st = user_data;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *id = NULL;

	g_clear_pointer(&st->record, confab_response_record_free);
	st->record = confab_store_get_response_record_finish(CONFAB_STORE(source), result, &error);
	if (st->record == NULL) {
		stored_error(st, g_steal_pointer(&error));
		stored_free(st);
		return;
	}
	if (confab_response_record_is_running(st->record) &&
	    g_get_monotonic_time() < st->deadline) {
		g_timeout_add(100, cancel_tick, st);
		return;
	}
	/* stopped (or still stopping): the response as it stands, its text
	 * so far with it */
	st->what = STORED_GET;
	g_clear_pointer(&st->messages, g_ptr_array_unref);
	g_clear_pointer(&st->record, confab_response_record_free);
	stored_read(st);
}

/* The instance that runs it (this one, or another sharing the store)
 * stops it: wait for that, a while. */
static void
cancel_check(Stored *st)
{
	g_autofree gchar *id = g_strdup(st->response_id);

	confab_background_cancel(confab_engine_get_background(st->engine), id);
	confab_store_get_response_record_async(confab_engine_get_store(st->engine),
					       id,
					       NULL,
					       cancel_record_cb,
					       st);
}

static void
cancel_asked_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Stored *st = user_data;
	GError *error = NULL;

	if (!confab_store_cancel_response_finish(CONFAB_STORE(source), result, &error)) {
		stored_error(st, error);
		stored_free(st);
		return;
	}
	st->deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
	cancel_check(st);
}

static void
stored_cancel(Stored *st)
{
	g_autofree gchar *id = g_strdup(st->response_id);

	if (st->record == NULL || !st->record->background) {
		stored_error(st,
			     invalid(NULL,
				     "Only a response created with background true can be "
				     "cancelled"));
		stored_free(st);
		return;
	}
	/* ended: as it ended (cancelling is idempotent) */
	if (!confab_response_record_is_running(st->record)) {
		confab_http_response_json(st->exchange, 200, stored_response_json(st));
		stored_free(st);
		return;
	}
	confab_store_cancel_response_async(confab_engine_get_store(st->engine),
					   id,
					   NULL,
					   cancel_asked_cb,
					   st);
}

/* ---------- item_reference: the items of earlier responses ---------- */

typedef struct {
	RespCtx *ctx;	      /* owned until handed on */
	GPtrArray *responses; /* owned: the response ids the references name */
	guint next;	      /* the response being read */
	GPtrArray *messages;  /* owned: its messages */
	GHashTable *items;    /* owned: item id -> JsonObject */
} Resolve;

static void
resolve_free(Resolve *r)
{
	if (r->ctx != NULL)
		resp_ctx_free(r->ctx);
	g_ptr_array_unref(r->responses);
	g_clear_pointer(&r->messages, g_ptr_array_unref);
	g_hash_table_unref(r->items);
	g_free(r);
}

static void
resolve_next(Resolve *r);

/* The caller's response: its output items, by id. */
static void
resolve_session_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Resolve *r = user_data;
	g_autoptr(ConfabSession) session = NULL;
	g_autoptr(GError) error = NULL;
	const gchar *response_id = g_ptr_array_index(r->responses, r->next);

	session = confab_store_get_session_finish(CONFAB_STORE(source), result, &error);
	if (session != NULL && session_is_callers(session, r->ctx->principal)) {
		ConfabMessage *answer = last_answer(r->messages);
		g_autoptr(GString) json = g_string_new("[");
		g_autoptr(JsonNode) node = NULL;

		if (answer != NULL)
			append_stored_output(json, answer, response_id);
		g_string_append_c(json, ']');
		node = confab_json_from_string(json->str);
		for (guint i = 0;
		     node != NULL && i < json_array_get_length(json_node_get_array(node));
		     i++) {
			JsonObject *item =
			    json_array_get_object_element(json_node_get_array(node), i);
			g_hash_table_insert(r->items,
					    g_strdup(confab_json_get_string(item, "id")),
					    json_object_ref(item));
		}
	} else if (error != NULL &&
		   !g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND)) {
		RespCtx *ctx = g_steal_pointer(&r->ctx);
		resolve_free(r);
		refuse(ctx, g_steal_pointer(&error));
		return;
	}
	r->next++;
	resolve_next(r);
}

static void
resolve_messages_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Resolve *r = user_data;
	GError *error = NULL;
	g_autofree gchar *session_id = NULL;

	g_clear_pointer(&r->messages, g_ptr_array_unref);
	r->messages = confab_store_get_response_finish(CONFAB_STORE(source), result, &error);
	if (r->messages == NULL) {
		RespCtx *ctx = g_steal_pointer(&r->ctx);
		resolve_free(r);
		refuse(ctx, error);
		return;
	}
	if (r->messages->len == 0) {
		r->next++;
		resolve_next(r);
		return;
	}
	session_id = g_strdup(confab_message_get_session_id(g_ptr_array_index(r->messages, 0)));
	confab_store_get_session_async(CONFAB_STORE(source),
				       session_id,
				       NULL,
				       resolve_session_cb,
				       r);
}

static void
resolve_next(Resolve *r)
{
	RespCtx *ctx;
	GError *error = NULL;

	if (r->next < r->responses->len) {
		confab_store_get_response_async(confab_engine_get_store(r->ctx->engine),
						g_ptr_array_index(r->responses, r->next),
						NULL,
						resolve_messages_cb,
						r);
		return;
	}
	ctx = g_steal_pointer(&r->ctx);
	if (!confab_responses_request_resolve(ctx->request, r->items, &error)) {
		resolve_free(r);
		refuse(ctx, error);
		return;
	}
	resolve_free(r);
	route(ctx);
}

/* `item_reference` items name output items of the caller's stored
 * responses, whose ids hold their response's (item_id()). */
static void
resolve_references(RespCtx *ctx)
{
	Resolve *r = g_new0(Resolve, 1);

	r->ctx = ctx;
	r->responses = g_ptr_array_new_with_free_func(g_free);
	r->items = g_hash_table_new_full(g_str_hash,
					 g_str_equal,
					 g_free,
					 (GDestroyNotify)json_object_unref);
	for (guint i = 0; i < ctx->request->references->len; i++) {
		const gchar *ref = g_ptr_array_index(ctx->request->references, i);
		const gchar *body = strchr(ref, '_');
		g_autofree gchar *response_id = NULL;

		if (body == NULL || strlen(body + 1) < 26)
			continue;
		response_id = g_strdup_printf("%s%.26s", CONFAB_PREFIX_RESPONSE, body + 1);
		if (!confab_id_is_valid(response_id, CONFAB_PREFIX_RESPONSE) ||
		    g_ptr_array_find_with_equal_func(r->responses, response_id, g_str_equal, NULL))
			continue;
		g_ptr_array_add(r->responses, g_steal_pointer(&response_id));
	}
	resolve_next(r);
}
