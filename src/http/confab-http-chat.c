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
#include "confab-json.h"
#include "confab-turn.h"

/*
 * POST /api/v1/chat/completions: the sink side of a turn.
 *
 * The message stays paused while the turn starts. For a stream, the headers
 * and the first chunk go out once the user's messages are committed, then
 * one SSE event per delta, each appended and flushed at once (no batching),
 * then the final chunk, the usage chunk if asked, and [DONE] — after the
 * assistant message is committed. Without streaming, one JSON body at the
 * end. If the client goes away mid-stream the turn is cancelled.
 */

typedef struct {
	ConfabHttpServer *server; /* owned */
	SoupServerMessage *msg;	  /* owned */
	ConfabTurn *turn;	  /* owned */
	gboolean streaming;	  /* headers sent */
	gboolean gone;		  /* the message finished or the client left */
	gboolean done;		  /* the turn ended */
	gulong finished_id;
	gulong disconnected_id;
	gulong wrote_id;
	gchar *chunk_head;     /* owned: {"id":…,"choices":[{"index":0,"delta": */
	gchar *chunk_tail;     /* owned: ,"finish_reason":null}],…}\n\n */
	gchar *metadata;       /* owned: ,"metadata":{…} */
	gsize queued;	       /* bytes appended, not yet written */
	GSource *client_watch; /* owned: hears the client leave while we wait */
} ChatCtx;

static void
stop_client_watch(ChatCtx *ctx)
{
	if (ctx->client_watch != NULL) {
		g_source_destroy(ctx->client_watch);
		g_clear_pointer(&ctx->client_watch, g_source_unref);
	}
}

static void
chat_ctx_free(ChatCtx *ctx)
{
	stop_client_watch(ctx);
	if (ctx->finished_id != 0)
		g_signal_handler_disconnect(ctx->msg, ctx->finished_id);
	if (ctx->disconnected_id != 0)
		g_signal_handler_disconnect(ctx->msg, ctx->disconnected_id);
	if (ctx->wrote_id != 0)
		g_signal_handler_disconnect(ctx->msg, ctx->wrote_id);
	if (ctx->turn != NULL)
		g_signal_handlers_disconnect_by_data(ctx->turn, ctx);
	g_clear_object(&ctx->turn);
	g_clear_object(&ctx->msg);
	g_clear_object(&ctx->server);
	g_free(ctx->chunk_head);
	g_free(ctx->chunk_tail);
	g_free(ctx->metadata);
	g_free(ctx);
}

static void
chat_ctx_maybe_free(ChatCtx *ctx)
{
	/* the context lives until both the turn and the message are over */
	if (ctx->done && ctx->gone)
		chat_ctx_free(ctx);
}

static void
on_msg_gone(SoupServerMessage *msg, gpointer user_data)
{
	ChatCtx *ctx = user_data;
	if (ctx->gone)
		return;
	ctx->gone = TRUE;
	if (!ctx->done)
		confab_turn_cancel(ctx->turn);
	chat_ctx_maybe_free(ctx);
}

/* The client hung up while we waited on the upstream (before a byte was
 * written, or between chunks): stop the turn now, not at the next write. */
static gboolean
on_client_left(gpointer user_data)
{
	ChatCtx *ctx = user_data;
	g_debug("the client left during its turn");
	if (!ctx->done && !ctx->gone)
		confab_turn_cancel(ctx->turn);
	confab_http_server_close_connection(ctx->server, ctx->msg);
	return G_SOURCE_REMOVE;
}

static void
on_wrote_body_data(SoupServerMessage *msg, guint chunk_size, gpointer user_data)
{
	ChatCtx *ctx = user_data;
	ctx->queued = chunk_size > ctx->queued ? 0 : ctx->queued - chunk_size;
}

static void
append_event(ChatCtx *ctx, GString *event)
{
	SoupMessageBody *body;
	if (ctx->gone)
		return;
	body = soup_server_message_get_response_body(ctx->msg);
	ctx->queued += event->len;
	soup_message_body_append(body, SOUP_MEMORY_TAKE, event->str, event->len);
	g_string_free(event, FALSE);
	soup_server_message_unpause(ctx->msg);
	/* a client that does not read cannot make us buffer without bound */
	if (ctx->queued > confab_engine_get_config(confab_http_server_get_engine(ctx->server))
			      ->max_stream_buffer) {
		g_debug("closing a stream whose client reads too slowly (%" G_GSIZE_FORMAT
			" bytes queued)",
			ctx->queued);
		confab_http_server_close_connection(ctx->server, ctx->msg);
	}
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
on_turn_delta(ConfabTurn *turn, const gchar *content, JsonArray *tool_calls, gpointer user_data)
{
	ChatCtx *ctx = user_data;
	send_delta_event(ctx, content, tool_calls, FALSE);
}

static void
append_usage_object(GString *out, ConfabTurn *turn)
{
	gint64 prompt = 0, completion = 0;
	confab_turn_get_usage(turn, &prompt, &completion);
	g_string_append_printf(out,
			       "{\"prompt_tokens\":%" G_GINT64_FORMAT
			       ",\"completion_tokens\":%" G_GINT64_FORMAT
			       ",\"total_tokens\":%" G_GINT64_FORMAT "}",
			       prompt,
			       completion,
			       prompt + completion);
}

static void
finish_stream(ChatCtx *ctx, const GError *error)
{
	ConfabTurn *turn = ctx->turn;
	ConfabChatRequest *request = confab_turn_get_request(turn);
	GString *event;
	gint64 prompt, completion;

	if (ctx->gone)
		return;
	if (error != NULL) {
		/* the stream has begun: the error travels in it */
		event = g_string_new("data: {\"error\":");
		confab_http_error_append_object(event, error);
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
	soup_message_body_complete(soup_server_message_get_response_body(ctx->msg));
	soup_server_message_unpause(ctx->msg);
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
	if (*content == '\0' && tool_calls != NULL)
		g_string_append(out, "null");
	else
		confab_json_append_string(out, content);
	g_string_append(out, ",\"refusal\":null");
	if (tool_calls != NULL) {
		g_string_append(out, ",\"tool_calls\":");
		g_string_append(out, tool_calls);
	}
	g_string_append(out, "},\"logprobs\":null,\"finish_reason\":");
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

	ctx->done = TRUE;
	stop_client_watch(ctx);
	if (ctx->streaming) {
		finish_stream(ctx, ok ? NULL : error);
	} else if (!ctx->gone) {
		if (ok)
			confab_http_respond_json(ctx->msg,
						 SOUP_STATUS_OK,
						 build_completion_json(ctx->turn));
		else
			confab_http_respond_error(ctx->msg, error);
		soup_server_message_unpause(ctx->msg);
	}
	chat_ctx_maybe_free(ctx);
}

static void
begin_stream(ChatCtx *ctx)
{
	SoupMessageHeaders *headers = soup_server_message_get_response_headers(ctx->msg);
	SoupMessageBody *body = soup_server_message_get_response_body(ctx->msg);

	ctx->streaming = TRUE;
	build_chunk_templates(ctx);
	soup_server_message_set_status(ctx->msg, SOUP_STATUS_OK, NULL);
	soup_message_headers_set_encoding(headers, SOUP_ENCODING_CHUNKED);
	soup_message_headers_set_content_type(headers, "text/event-stream", NULL);
	soup_message_headers_replace(headers, "Cache-Control", "no-cache");
	soup_message_headers_replace(headers, "x-accel-buffering", "no");
	soup_message_body_set_accumulate(body, FALSE);
	ctx->wrote_id =
	    g_signal_connect(ctx->msg, "wrote-body-data", G_CALLBACK(on_wrote_body_data), ctx);
	g_signal_connect(ctx->turn, "delta", G_CALLBACK(on_turn_delta), ctx);
	/* the first byte: the user's messages are committed */
	send_delta_event(ctx, NULL, NULL, TRUE);
}

static void
start_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ChatCtx *ctx = user_data;
	g_autoptr(GError) error = NULL;
	ConfabTurn *turn = CONFAB_TURN(source);
	gboolean ok = confab_turn_start_finish(turn, result, &error);

	if (!ctx->gone)
		confab_http_add_quota_headers(ctx->msg, confab_turn_get_quota_info(turn));
	if (!ok) {
		ctx->done = TRUE;
		if (!ctx->gone) {
			confab_http_respond_error(ctx->msg, error);
			soup_server_message_unpause(ctx->msg);
		}
		chat_ctx_maybe_free(ctx);
		return;
	}
	if (!ctx->gone) {
		confab_http_log_set(ctx->msg, NULL, confab_turn_get_model(turn));
		soup_message_headers_replace(soup_server_message_get_response_headers(ctx->msg),
					     "x-session-id",
					     confab_turn_get_session_id(turn));
		if (confab_turn_get_request(turn)->stream)
			begin_stream(ctx);
	}
	confab_turn_run_async(turn, run_cb, ctx);
}

/**
 * confab_http_chat_handle:
 * @server: the server
 * @msg: a POST /api/v1/chat/completions whose head was checked
 * @principal: (transfer full): who asks
 *
 * Serves one chat completion.
 */
void
confab_http_chat_handle(ConfabHttpServer *server,
			SoupServerMessage *msg,
			ConfabPrincipal *principal)
{
	g_autoptr(ConfabPrincipal) owned_principal = principal;
	ConfabEngine *engine = confab_http_server_get_engine(server);
	const ConfabConfig *config = confab_engine_get_config(engine);
	SoupMessageBody *body = soup_server_message_get_request_body(msg);
	ConfabChatLimits limits = {config->max_json_depth,
				   config->max_files_per_message,
				   config->max_file_bytes};
	g_autoptr(ConfabChatRequest) request = NULL;
	g_autoptr(GBytes) bytes = NULL;
	g_autoptr(GError) error = NULL;
	ChatCtx *ctx;

	if (body->length > (goffset)config->max_body_bytes) {
		confab_set_error_param_printf(&error,
					      CONFAB_ERROR_REQUEST_TOO_LARGE,
					      NULL,
					      "The request body is larger than %" G_GSIZE_FORMAT
					      " bytes",
					      config->max_body_bytes);
		confab_http_respond_error(msg, error);
		return;
	}
	bytes = soup_message_body_flatten(body);
	request = confab_chat_request_parse(g_bytes_get_data(bytes, NULL),
					    g_bytes_get_size(bytes),
					    &limits,
					    &error);
	if (request == NULL) {
		confab_http_respond_error(msg, error);
		return;
	}

	ctx = g_new0(ChatCtx, 1);
	ctx->server = g_object_ref(server);
	ctx->msg = g_object_ref(msg);
	ctx->turn =
	    confab_turn_new(engine, g_steal_pointer(&owned_principal), g_steal_pointer(&request));
	ctx->finished_id = g_signal_connect(msg, "finished", G_CALLBACK(on_msg_gone), ctx);
	ctx->disconnected_id = g_signal_connect(msg, "disconnected", G_CALLBACK(on_msg_gone), ctx);
	soup_server_message_pause(msg);
	ctx->client_watch = confab_http_server_watch_client(server, msg, on_client_left, ctx);
	confab_turn_start_async(ctx->turn, start_cb, ctx);
}
