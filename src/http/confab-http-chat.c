/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <string.h>

#include "core/confab-turn.h"
#include "http/confab-http-chat.h"
#include "http/confab-http-response.h"
#include "openai/confab-openai-error.h"
#include "util/confab-error.h"
#include "util/confab-json.h"
#include "util/confab-source.h"

/*
 * POST /api/v1/chat/completions: the sink side of a turn.
 *
 * For a stream, the head and the first chunk go out once an upstream has
 * answered the turn's first model call with a success status (the user's
 * messages are committed by then), or after [http] stream_head_wait at the
 * latest; then one SSE event per delta, each sent at once (no batching),
 * then the final chunk, the usage chunk if asked, and [DONE] — after the
 * assistant message is committed. A turn that fails before its head answers
 * an HTTP error, as a JSON one does (confab_http_response_turn_error());
 * after it, the error travels in the stream. Without streaming, one JSON
 * body at the end. If the client goes away the turn is cancelled.
 *
 * A stream is as fast as its reader: the exchange's flow, held while more
 * than max_stream_buffer bytes wait unsent, goes to the turn, which makes
 * no more of the answer until the client catches up. A client that takes
 * nothing for idle_timeout is cut: the turn is cancelled (stored
 * incomplete) and the stream ends with a `stream_cut` error event and
 * [DONE], for a client that can still read them.
 */

typedef struct {
	ConfabEngine *engine;	      /* owned */
	ConfabHttpExchange *exchange; /* owned */
	ConfabTurn *turn;	      /* owned */
	gboolean streaming;	      /* the head is sent */
	GSource *head_wait;	      /* owned: sends the head if no upstream answered */
	gboolean cut;		      /* the server is cutting the stream */
	gchar *chunk_head;	      /* owned: {"id":…,"choices":[{"index":0,"delta": */
	gchar *chunk_tail;	      /* owned: ,"finish_reason":null}],…}\n\n */
	gchar *metadata;	      /* owned: ,"metadata":{…} */
} ChatCtx;

static void
chat_ctx_free(ChatCtx *ctx)
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
	g_free(ctx->chunk_head);
	g_free(ctx->chunk_tail);
	g_free(ctx->metadata);
	g_free(ctx);
}

/* The client hung up: stop the turn now; what was said is stored as
 * incomplete. */
static void
on_client_gone(ConfabHttpExchange *exchange, gpointer user_data)
{
	ChatCtx *ctx = user_data;
	g_debug("the client left during its turn");
	confab_turn_cancel(ctx->turn);
}

/* The client took nothing for idle_timeout: stop the turn (stored as
 * incomplete); the stream ends with a stream_cut error event. */
static void
on_stream_cut(ConfabHttpExchange *exchange, gpointer user_data)
{
	ChatCtx *ctx = user_data;
	g_debug("the client took nothing of its stream: cut");
	ctx->cut = TRUE;
	confab_turn_cancel(ctx->turn);
}

static void
append_event(ChatCtx *ctx, GString *event)
{
	confab_http_exchange_write(ctx->exchange, event->str, event->len);
	g_string_free(event, TRUE);
}

static void
build_chunk_templates(ChatCtx *ctx)
{
	ConfabTurn *turn = ctx->turn;
	ConfabChatRequest *request = confab_turn_get_request(turn);
	GString *head = g_string_new("data: {\"id\":");
	GString *meta = g_string_new(",\"metadata\":{\"session_id\":");
	GString *tail = g_string_new(NULL);

	confab_json_append_string(head, confab_turn_get_completion_id(turn));
	g_string_append_printf(head,
			       ",\"object\":\"chat.completion.chunk\",\"created\":%" G_GINT64_FORMAT
			       ",\"model\":",
			       confab_turn_get_created(turn));
	confab_json_append_string(head, confab_turn_get_model(turn));
	g_string_append(head, ",\"choices\":[{\"index\":0,\"delta\":");

	confab_json_append_string(meta, confab_turn_get_session_id(turn));
	g_string_append(meta, ",\"assistant_message_id\":");
	confab_json_append_string(meta, confab_turn_get_assistant_message_id(turn));
	g_string_append_c(meta, '}');

	g_string_append(tail, ",\"finish_reason\":null}]");
	if (request->include_usage)
		g_string_append(tail, ",\"usage\":null");
	g_string_append(tail, meta->str);
	g_string_append(tail, "}\n\n");

	ctx->chunk_head = g_string_free(head, FALSE);
	ctx->metadata = g_string_free(meta, FALSE);
	ctx->chunk_tail = g_string_free(tail, FALSE);
}

static void
append_object(GString *out, JsonObject *object)
{
	g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), object);
	confab_json_append_node(out, node);
}

/* A refusal, reasoning (as DeepSeek's and vLLM's `reasoning_content`) and
 * log probabilities, in a chunk of their own. */
static void
send_extra_event(ChatCtx *ctx, const ConfabDelta *delta)
{
	GString *event = g_string_new(ctx->chunk_head);

	g_string_append_c(event, '{');
	if (delta->reasoning != NULL) {
		g_string_append(event, "\"reasoning_content\":");
		confab_json_append_string(event, delta->reasoning);
		g_string_append_c(event, ',');
	}
	if (delta->refusal != NULL) {
		g_string_append(event, "\"refusal\":");
		confab_json_append_string(event, delta->refusal);
		g_string_append_c(event, ',');
	}
	if (event->str[event->len - 1] == ',')
		g_string_truncate(event, event->len - 1);
	g_string_append_c(event, '}');
	if (delta->logprobs != NULL) {
		g_string_append(event, ",\"logprobs\":");
		append_object(event, delta->logprobs);
	}
	g_string_append(event, ctx->chunk_tail);
	append_event(ctx, event);
}

static void
send_delta_event(ChatCtx *ctx, const gchar *content, JsonArray *tool_calls, gboolean role)
{
	GString *event = g_string_new(ctx->chunk_head);

	g_string_append_c(event, '{');
	if (role)
		g_string_append(event, "\"role\":\"assistant\",");
	if (content != NULL) {
		g_string_append(event, "\"content\":");
		confab_json_append_string(event, content);
	} else if (tool_calls != NULL) {
		g_autoptr(JsonNode) node = json_node_init_array(json_node_alloc(), tool_calls);
		g_string_append(event, "\"tool_calls\":");
		confab_json_append_node(event, node);
	} else if (role) {
		g_string_append(event, "\"content\":\"\"");
	} else if (event->str[event->len - 1] == ',') {
		g_string_truncate(event, event->len - 1);
	}
	g_string_append_c(event, '}');
	g_string_append(event, ctx->chunk_tail);
	append_event(ctx, event);
}

static void
begin_stream(ChatCtx *ctx, gboolean answered);

static void
on_turn_delta(ConfabTurn *turn, const ConfabDelta *delta, gpointer user_data)
{
	ChatCtx *ctx = user_data;

	begin_stream(ctx, TRUE);
	if (delta->refusal != NULL || delta->reasoning != NULL || delta->logprobs != NULL)
		send_extra_event(ctx, delta);
	if (delta->content != NULL || delta->tool_calls != NULL)
		send_delta_event(ctx, delta->content, delta->tool_calls, FALSE);
}

static void
on_exchange_drained(ConfabHttpExchange *exchange, gpointer user_data)
{
	ChatCtx *ctx = user_data;
	confab_turn_sink_drained(ctx->turn, TRUE);
}

/* The answer is over: once the client has read it all, it is committed as
 * completed; a client that leaves (or is cut for reading too slowly)
 * before that gets it stored as incomplete. */
static void
on_turn_drain(ConfabTurn *turn, gpointer user_data)
{
	ChatCtx *ctx = user_data;

	/* no head yet: nothing was given to the client, which hears the end
	 * from run_cb */
	if (!ctx->streaming) {
		confab_turn_sink_drained(turn, TRUE);
		return;
	}
	if (confab_http_exchange_is_gone(ctx->exchange)) {
		confab_turn_sink_drained(turn, FALSE);
		return;
	}
	if (confab_http_exchange_get_unsent(ctx->exchange) == 0) {
		confab_turn_sink_drained(turn, TRUE);
		return;
	}
	confab_http_exchange_set_drained_func(ctx->exchange, on_exchange_drained, ctx);
}

/* The agent's own tool activity, as a chunk without choices: clients that
 * know `tool_event` show it, the others skip a chunk with no choice. */
static void
on_turn_tool_event(ConfabTurn *turn, const gchar *event_json, gpointer user_data)
{
	ChatCtx *ctx = user_data;
	GString *event;

	begin_stream(ctx, FALSE);
	event = g_string_new("data: {\"id\":");
	confab_json_append_string(event, confab_turn_get_completion_id(turn));
	g_string_append_printf(event,
			       ",\"object\":\"chat.completion.chunk\",\"created\":%" G_GINT64_FORMAT
			       ",\"model\":",
			       confab_turn_get_created(turn));
	confab_json_append_string(event, confab_turn_get_model(turn));
	g_string_append(event, ",\"choices\":[],\"tool_event\":");
	g_string_append(event, event_json);
	if (confab_turn_get_request(turn)->include_usage)
		g_string_append(event, ",\"usage\":null");
	g_string_append(event, ctx->metadata);
	g_string_append(event, "}\n\n");
	append_event(ctx, event);
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

static void
append_usage_object(GString *out, ConfabTurn *turn)
{
	gint64 prompt = 0, completion = 0;
	confab_turn_get_usage(turn, &prompt, &completion);
	g_string_append_printf(
	    out,
	    "{\"prompt_tokens\":%" G_GINT64_FORMAT ",\"completion_tokens\":%" G_GINT64_FORMAT
	    ",\"total_tokens\":%" G_GINT64_FORMAT
	    ",\"completion_tokens_details\":{\"reasoning_tokens\":%" G_GINT64_FORMAT "}}",
	    prompt,
	    completion,
	    prompt + completion,
	    confab_turn_get_reasoning_tokens(turn));
}

static void
finish_stream(ChatCtx *ctx, const GError *error)
{
	ConfabTurn *turn = ctx->turn;
	ConfabChatRequest *request = confab_turn_get_request(turn);
	GString *event;
	gint64 prompt, completion;

	if (error != NULL) {
		g_autoptr(GError) cut = NULL;
		if (ctx->cut) {
			const ConfabConfig *config = confab_engine_get_config(ctx->engine);
			cut = g_error_new(CONFAB_ERROR,
					  CONFAB_ERROR_STREAM_CUT,
					  "The client took nothing of the stream for %u s; the "
					  "answer was stopped and stored as incomplete",
					  config->idle_timeout);
			error = cut;
		}
		/* the stream has begun: the error travels in it */
		event = g_string_new("data: {\"error\":");
		confab_openai_error_append_object(event, error);
		g_string_append(event, "}\n\n");
		append_event(ctx, event);
	} else {
		event = g_string_new(ctx->chunk_head);
		g_string_append(event, "{},\"finish_reason\":");
		confab_json_append_string(event, confab_turn_get_finish_reason(turn));
		g_string_append(event, "}]");
		if (request->include_usage)
			g_string_append(event, ",\"usage\":null");
		g_string_append(event, ctx->metadata);
		g_string_append(event, "}\n\n");
		append_event(ctx, event);
		if (request->include_usage && confab_turn_get_usage(turn, &prompt, &completion)) {
			event = g_string_new("data: {\"id\":");
			confab_json_append_string(event, confab_turn_get_completion_id(turn));
			g_string_append_printf(
			    event,
			    ",\"object\":\"chat.completion.chunk\",\"created\":%" G_GINT64_FORMAT
			    ",\"model\":",
			    confab_turn_get_created(turn));
			confab_json_append_string(event, confab_turn_get_model(turn));
			g_string_append(event, ",\"choices\":[],\"usage\":");
			append_usage_object(event, turn);
			g_string_append(event, ctx->metadata);
			g_string_append(event, "}\n\n");
			append_event(ctx, event);
		}
	}
	event = g_string_new("data: [DONE]\n\n");
	append_event(ctx, event);
	confab_http_exchange_end_stream(ctx->exchange);
}

static gchar *
build_completion_json(ConfabTurn *turn)
{
	GString *out = g_string_new("{\"id\":");
	g_autofree gchar *tool_calls = confab_turn_get_tool_calls_json(turn);
	const gchar *content = confab_turn_get_content(turn);

	confab_json_append_string(out, confab_turn_get_completion_id(turn));
	g_string_append_printf(out,
			       ",\"object\":\"chat.completion\",\"created\":%" G_GINT64_FORMAT
			       ",\"model\":",
			       confab_turn_get_created(turn));
	confab_json_append_string(out, confab_turn_get_model(turn));
	g_string_append(out,
			",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
			"\"content\":");
	if (*content == '\0' && (tool_calls != NULL || confab_turn_get_refusal(turn) != NULL))
		g_string_append(out, "null");
	else
		confab_json_append_string(out, content);
	g_string_append(out, ",\"refusal\":");
	confab_json_append_string(out, confab_turn_get_refusal(turn));
	if (confab_turn_get_reasoning(turn) != NULL) {
		g_string_append(out, ",\"reasoning_content\":");
		confab_json_append_string(out, confab_turn_get_reasoning(turn));
	}
	if (tool_calls != NULL) {
		g_string_append(out, ",\"tool_calls\":");
		g_string_append(out, tool_calls);
	}
	g_string_append(out, "},\"logprobs\":");
	if (confab_turn_get_logprobs(turn) != NULL)
		append_object(out, confab_turn_get_logprobs(turn));
	else
		g_string_append(out, "null");
	g_string_append(out, ",\"finish_reason\":");
	confab_json_append_string(out, confab_turn_get_finish_reason(turn));
	g_string_append(out, "}],\"usage\":");
	append_usage_object(out, turn);
	g_string_append(out, ",\"metadata\":{\"session_id\":");
	confab_json_append_string(out, confab_turn_get_session_id(turn));
	g_string_append(out, ",\"assistant_message_id\":");
	confab_json_append_string(out, confab_turn_get_assistant_message_id(turn));
	g_string_append(out, "}}");
	return g_string_free(out, FALSE);
}

static void
run_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ChatCtx *ctx = user_data;
	g_autoptr(GError) error = NULL;
	gboolean ok = confab_turn_run_finish(CONFAB_TURN(source), result, &error);

	/* a stream whose head still waited: a success is streamed whole, a
	 * failure is an HTTP error */
	if (ok && confab_turn_get_request(ctx->turn)->stream)
		begin_stream(ctx, TRUE);
	if (!ctx->streaming)
		confab_http_response_add_target_headers(ctx->exchange, ctx->turn);
	if (ctx->streaming)
		finish_stream(ctx, ok ? NULL : error);
	else if (ok)
		confab_http_response_json(ctx->exchange, 200, build_completion_json(ctx->turn));
	else
		confab_http_response_turn_error(ctx->exchange, ctx->turn, error);
	chat_ctx_free(ctx);
}

/* The head, and the first chunk (the role). @answered: an upstream took
 * the call, and the head names it (x-confab-upstream, x-confab-attempts);
 * not when it goes out because no upstream answered in time. Once. */
static void
begin_stream(ChatCtx *ctx, gboolean answered)
{
	if (ctx->streaming)
		return;
	ctx->streaming = TRUE;
	confab_source_clear(&ctx->head_wait);
	build_chunk_templates(ctx);
	confab_http_exchange_add_header(ctx->exchange, "Cache-Control", "no-cache");
	confab_http_exchange_add_header(ctx->exchange, "x-accel-buffering", "no");
	if (answered)
		confab_http_response_add_target_headers(ctx->exchange, ctx->turn);
	confab_http_exchange_begin_stream(ctx->exchange, 200, "text/event-stream");
	confab_http_exchange_set_cut_func(ctx->exchange, on_stream_cut, ctx);
	send_delta_event(ctx, NULL, NULL, TRUE);
}

/* [http] stream_head_wait and no upstream has answered: the head goes out
 * anyway, so that a proxy in front does not give up on a silent stream. */
static gboolean
on_head_wait(gpointer user_data)
{
	ChatCtx *ctx = user_data;

	g_clear_pointer(&ctx->head_wait, g_source_unref);
	g_debug("no upstream answered within stream_head_wait: the head goes out");
	begin_stream(ctx, FALSE);
	return G_SOURCE_REMOVE;
}

/* A stream: the turn writes to it from the start (its backpressure
 * included), but its head waits for an upstream's answer. */
static void
wait_for_head(ChatCtx *ctx)
{
	guint wait = confab_engine_get_config(ctx->engine)->stream_head_wait;

	confab_turn_set_flow(ctx->turn, confab_http_exchange_get_flow(ctx->exchange));
	confab_turn_set_sink(ctx->turn, &stream_sink, ctx);
	if (wait == 0)
		begin_stream(ctx, FALSE);
	else
		ctx->head_wait = confab_source_add_timeout(wait * 1000, on_head_wait, ctx);
}

static void
start_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ChatCtx *ctx = user_data;
	g_autoptr(GError) error = NULL;
	ConfabTurn *turn = CONFAB_TURN(source);
	gboolean ok = confab_turn_start_finish(turn, result, &error);

	confab_http_response_add_quota_headers(ctx->exchange, confab_turn_get_quota_info(turn));
	if (!ok) {
		confab_http_response_error(ctx->exchange, error);
		chat_ctx_free(ctx);
		return;
	}
	confab_http_response_log_set(ctx->exchange,
				     NULL,
				     confab_turn_get_model(turn),
				     confab_turn_get_session_id(turn));
	confab_http_exchange_add_header(ctx->exchange,
					"x-session-id",
					confab_turn_get_session_id(turn));
	if (confab_turn_get_request(turn)->stream)
		wait_for_head(ctx);
	confab_turn_run_async(turn, run_cb, ctx);
}

/**
 * confab_http_chat_handle:
 * @engine: the engine
 * @exchange: a POST /api/v1/chat/completions whose head was checked
 * @principal: (transfer full): who asks
 * @param: unused
 *
 * Serves one chat completion.
 */
void
confab_http_chat_handle(ConfabEngine *engine,
			ConfabHttpExchange *exchange,
			ConfabPrincipal *principal,
			const gchar *param)
{
	g_autoptr(ConfabPrincipal) owned_principal = principal;
	const ConfabConfig *config = confab_engine_get_config(engine);
	ConfabChatLimits limits = {config->max_json_depth,
				   config->max_files_per_message,
				   config->max_file_bytes};
	g_autoptr(ConfabChatRequest) request = NULL;
	g_autoptr(GBytes) bytes = confab_http_exchange_steal_body(exchange);
	g_autoptr(GError) error = NULL;
	ChatCtx *ctx;

	request = confab_chat_request_parse(g_bytes_get_data(bytes, NULL),
					    g_bytes_get_size(bytes),
					    &limits,
					    &error);
	g_clear_pointer(&bytes, g_bytes_unref);
	if (request == NULL) {
		confab_http_response_error(exchange, error);
		return;
	}

	ctx = g_new0(ChatCtx, 1);
	ctx->engine = g_object_ref(engine);
	ctx->exchange = confab_http_exchange_ref(exchange);
	ctx->turn =
	    confab_turn_new(engine, g_steal_pointer(&owned_principal), g_steal_pointer(&request));
	confab_http_exchange_set_gone_func(exchange, on_client_gone, ctx);
	confab_turn_start_async(ctx->turn, start_cb, ctx);
}
