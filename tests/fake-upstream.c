/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "FakeUpstream"

#include "config.h"

#include <glib-unix.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/*
 * A fake OpenAI-compatible upstream for the integration tests: a libsoup
 * server on 127.0.0.1, port chosen by the kernel, that serves
 * POST /v1/chat/completions with a behaviour scripted by the request's
 * "model" ("name" or "name:argument"):
 *
 *   plain          a short answer, as SSE when "stream" is true, else JSON
 *   slow[:ms[:n]]  n (100) word chunks, one every ms (100) milliseconds
 *   split          SSE cut into odd-sized pieces (1, 3, 7, 2, 5, 11... bytes),
 *                  CRLF line endings, keep-alive comments, multi-line data
 *   tools          two tool calls in fragments, finish_reason "tool_calls";
 *                  a plain answer when the last message is a tool result
 *   length         finish_reason "length"
 *   filter         finish_reason "content_filter"
 *   json           a whole chat.completion even when asked to stream
 *   429[:n]        429 with Retry-After: 1 the first n (2) times, then plain
 *   500            500 with an OpenAI error body, always
 *   malformed      an SSE event whose data is not JSON
 *   hang           never answers
 *   held           the head (200, text/event-stream) at once, then nothing
 *                  until GET /_release, then the plain answer: an upstream
 *                  that took the call and is slow to say anything
 *   close          two chunks, then the connection is closed mid-stream
 *   close-empty    the role chunk only, then the connection is closed: a
 *                  stream that ends before any content
 *   status:N       status N with an OpenAI error body (type fake_error,
 *                  code fake_refusal, param messages), always
 *   call-once:NAME calls the tool NAME until a tool result is in the
 *                  messages, then 500
 *   429ms:MS       429 with retry-after-ms: MS (and Retry-After), always
 *   error-event    a chunk, then an in-stream {"error": ...} event
 *   reasoning      reasoning_content deltas (vLLM, DeepSeek), then the text
 *   reasoning-or   the same as OpenRouter names it: "reasoning"
 *   refusal        refusal deltas and no content
 *   logprobs       text whose chunks carry choice.logprobs
 *   thinking[:NAME] DeepSeek's thinking mode with tools: reasoning_content
 *                  before each answer; a call of NAME (get_weather) until the
 *                  last message is a tool result, then text; and, as DeepSeek
 *                  does, 400 for a request with an assistant message that
 *                  has tool calls and no reasoning_content
 *   call:NAME      calls the tool NAME ({"text":"step N"}) every time, until
 *                  told tool_choice "none": then "done after N tool results"
 *   strict:NAME    as strict as OpenAI's API: 400 for a member Chat
 *                  Completions does not know and for a tool that is not a
 *                  function with a valid name; else calls NAME with
 *                  {"cmd":"echo confab-strict-ok"}, then, once the last
 *                  message is a tool result, answers "done: RESULT"
 *
 * and, to check that no upstream can exhaust Confab or outlive its timeouts
 * (written on the raw connection, as fast as the socket takes them):
 *
 *   endless[:text] SSE without end: chunks with empty deltas and keep-alive
 *                  comments, or with ":text", 1 KiB of content each
 *   big-line[:n]   one SSE data line of n bytes (2 MiB) of content, then [DONE]
 *   tiny[:n]       n (100000) one-byte content deltas, each in its own HTTP
 *                  chunk, then the finish and [DONE]
 *   bad-utf8       a chunk, then one whose content is not UTF-8
 *   huge-number    a chunk, then one with "created": 1e400
 *   deep[:n]       a chunk, then one with arrays nested n (100000) deep
 *   error-flood    500 with an error body that never ends
 *
 * and, for secrets (the request's "Authorization: Bearer KEY"):
 *
 *   echo-auth[:s]  status s (401) with an error whose message quotes the
 *                  Authorization header; ":stream" instead streams the key in
 *                  odd-sized content deltas and in a tool call's arguments
 *
 * Every completion request is recorded (method, path, headers, body) and
 * listed by GET /_requests; GET /_release lets the "held" streams go on
 * (it answers {"released": N}, N of them waiting); GET /_stats counts the TCP connections that
 * carried completions, the streams in progress, those finished, and those
 * the client abandoned before their end (the server saw the connection go
 * while it still had pieces to write), and says whether the last stream to
 * end was abandoned.
 *
 * Every answer reports usage (a stream's when asked for it): 42 prompt
 * tokens and 17 completion tokens, 5 of them reasoning tokens.
 *
 * It prints "fake-upstream: listening on http://127.0.0.1:PORT" first on
 * stdout. With --stdin-watch it exits when its stdin closes, so that it
 * never outlives a test that dies.
 */

#define USAGE_PROMPT_TOKENS	42
#define USAGE_COMPLETION_TOKENS 17
/* of the completion tokens, reported as OpenAI's reasoning models do */
#define USAGE_REASONING_TOKENS 5

typedef struct {
	SoupServer *server;  /* owned */
	GMainLoop *loop;     /* owned */
	JsonArray *requests; /* owned: every completion request, in order */
	GHashTable *counts;  /* owned: model -> requests seen, for "429" */
	GPtrArray *held;     /* owned: Stream (unowned), "held" ones waiting */
	guint connections;
	guint completed;
	guint aborted;
	guint active;
	gboolean last_aborted; /* how the last stream to end ended */
} FakeUpstream;

static GQuark seen_quark;

/* ---------- building answers ---------- */

typedef struct {
	gchar *model; /* owned */
	gboolean include_usage;
	GPtrArray *deltas;    /* owned: JsonNode, each a "delta" object */
	gchar *finish_reason; /* owned */
} Answer;

static void
answer_free(Answer *answer)
{
	g_free(answer->model);
	g_ptr_array_unref(answer->deltas);
	g_free(answer->finish_reason);
	g_free(answer);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Answer, answer_free)

static Answer *
answer_new(const gchar *model, gboolean include_usage, const gchar *finish_reason)
{
	Answer *answer = g_new0(Answer, 1);
	answer->model = g_strdup(model);
	answer->include_usage = include_usage;
	answer->deltas = g_ptr_array_new_with_free_func((GDestroyNotify)json_node_unref);
	answer->finish_reason = g_strdup(finish_reason);
	return answer;
}

/* A delta with one string member @name; "_logprobs" goes to the choice. */
static void
answer_add_member(Answer *answer, const gchar *name, const gchar *text, JsonObject *logprobs)
{
	JsonObject *delta = json_object_new();
	json_object_set_string_member(delta, name, text);
	if (logprobs != NULL)
		json_object_set_object_member(delta, "_logprobs", logprobs);
	g_ptr_array_add(answer->deltas, json_node_init_object(json_node_alloc(), delta));
	json_object_unref(delta);
}

static void
answer_add_text(Answer *answer, const gchar *text)
{
	JsonObject *delta = json_object_new();
	json_object_set_string_member(delta, "content", text);
	g_ptr_array_add(answer->deltas, json_node_init_object(json_node_alloc(), delta));
	json_object_unref(delta);
}

/* One fragment of a tool call; @id and @name only in the first of a call. */
static void
answer_add_tool_call(Answer *answer,
		     guint index,
		     const gchar *id,
		     const gchar *name,
		     const gchar *arguments)
{
	JsonObject *delta = json_object_new();
	JsonArray *calls = json_array_new();
	JsonObject *call = json_object_new();
	JsonObject *function = json_object_new();

	json_object_set_int_member(call, "index", index);
	if (id != NULL) {
		json_object_set_string_member(call, "id", id);
		json_object_set_string_member(call, "type", "function");
	}
	if (name != NULL)
		json_object_set_string_member(function, "name", name);
	json_object_set_string_member(function, "arguments", arguments);
	json_object_set_object_member(call, "function", function);
	json_array_add_object_element(calls, call);
	json_object_set_array_member(delta, "tool_calls", calls);
	g_ptr_array_add(answer->deltas, json_node_init_object(json_node_alloc(), delta));
	json_object_unref(delta);
}

static JsonObject *
usage_new(void)
{
	JsonObject *usage = json_object_new();
	JsonObject *details = json_object_new();

	json_object_set_int_member(usage, "prompt_tokens", USAGE_PROMPT_TOKENS);
	json_object_set_int_member(usage, "completion_tokens", USAGE_COMPLETION_TOKENS);
	json_object_set_int_member(usage,
				   "total_tokens",
				   USAGE_PROMPT_TOKENS + USAGE_COMPLETION_TOKENS);
	json_object_set_int_member(details, "reasoning_tokens", USAGE_REASONING_TOKENS);
	json_object_set_object_member(usage, "completion_tokens_details", details);
	return usage;
}

static JsonObject *
completion_head_new(const gchar *object, const gchar *model)
{
	JsonObject *root = json_object_new();
	json_object_set_string_member(root, "id", "chatcmpl-fake");
	json_object_set_string_member(root, "object", object);
	json_object_set_int_member(root, "created", g_get_real_time() / G_USEC_PER_SEC);
	json_object_set_string_member(root, "model", model);
	return root;
}

static gchar *
object_to_string(JsonObject *object)
{
	g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), object);
	return json_to_string(node, FALSE);
}

/* A chat.completion.chunk; @delta (transfer none) may be NULL for usage. */
static gchar *
chunk_to_string(Answer *answer, JsonNode *delta, const gchar *finish_reason, gboolean usage)
{
	g_autoptr(JsonObject) root = completion_head_new("chat.completion.chunk", answer->model);
	JsonArray *choices = json_array_new();

	if (delta != NULL) {
		JsonObject *choice = json_object_new();
		JsonNode *copy = json_node_copy(delta);
		JsonObject *d = json_node_get_object(copy);
		json_object_set_int_member(choice, "index", 0);
		if (json_object_has_member(d, "_logprobs")) {
			json_object_set_member(
			    choice,
			    "logprobs",
			    json_node_copy(json_object_get_member(d, "_logprobs")));
			json_object_remove_member(d, "_logprobs");
		}
		json_object_set_member(choice, "delta", copy);
		if (finish_reason != NULL)
			json_object_set_string_member(choice, "finish_reason", finish_reason);
		else
			json_object_set_null_member(choice, "finish_reason");
		json_array_add_object_element(choices, choice);
	}
	json_object_set_array_member(root, "choices", choices);
	if (usage)
		json_object_set_object_member(root, "usage", usage_new());
	return object_to_string(root);
}

/* The data of every event of @answer as a stream, without "[DONE]". */
static GPtrArray *
answer_to_events(Answer *answer)
{
	GPtrArray *events = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(JsonObject) first = json_object_new();
	g_autoptr(JsonObject) last = json_object_new();
	g_autoptr(JsonNode) first_node = NULL;
	g_autoptr(JsonNode) last_node = NULL;

	json_object_set_string_member(first, "role", "assistant");
	json_object_set_string_member(first, "content", "");
	first_node = json_node_init_object(json_node_alloc(), first);
	last_node = json_node_init_object(json_node_alloc(), last);
	g_ptr_array_add(events, chunk_to_string(answer, first_node, NULL, FALSE));
	for (guint i = 0; i < answer->deltas->len; i++)
		g_ptr_array_add(
		    events,
		    chunk_to_string(answer, g_ptr_array_index(answer->deltas, i), NULL, FALSE));
	g_ptr_array_add(events, chunk_to_string(answer, last_node, answer->finish_reason, FALSE));
	if (answer->include_usage)
		g_ptr_array_add(events, chunk_to_string(answer, NULL, NULL, TRUE));
	return events;
}

/* reasoning_content, reasoning and refusal, joined into the message */
static gboolean
answer_json_extra(JsonObject *message, JsonObject *delta)
{
	static const gchar *const names[] = {"reasoning_content", "reasoning", "refusal"};

	for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
		g_autofree gchar *joined = NULL;
		if (!json_object_has_member(delta, names[i]))
			continue;
		joined =
		    g_strconcat(json_object_get_string_member_with_default(message, names[i], ""),
				json_object_get_string_member(delta, names[i]),
				NULL);
		json_object_set_string_member(message, names[i], joined);
		return TRUE;
	}
	return FALSE;
}

/* the entries of a chunk's logprobs.content, added to the choice's */
static void
answer_json_logprobs(JsonObject *choice, JsonObject *logprobs)
{
	JsonArray *add = json_object_get_array_member(logprobs, "content");
	JsonObject *all;

	if (!json_object_has_member(choice, "logprobs")) {
		all = json_object_new();
		json_object_set_array_member(all, "content", json_array_new());
		json_object_set_object_member(choice, "logprobs", all);
	}
	all = json_object_get_object_member(choice, "logprobs");
	for (guint i = 0; i < json_array_get_length(add); i++)
		json_array_add_element(json_object_get_array_member(all, "content"),
				       json_node_copy(json_array_get_element(add, i)));
}

/* The whole chat.completion: the deltas joined. */
static gchar *
answer_to_json(Answer *answer)
{
	g_autoptr(JsonObject) root = completion_head_new("chat.completion", answer->model);
	g_autoptr(GString) content = g_string_new(NULL);
	g_autoptr(GPtrArray) calls = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	JsonArray *choices = json_array_new();
	JsonObject *choice = json_object_new();
	JsonObject *message = json_object_new();
	JsonArray *tool_calls = json_array_new();

	/* calls: [id, name, arguments] by index */
	for (guint i = 0; i < answer->deltas->len; i++) {
		JsonObject *delta = json_node_get_object(g_ptr_array_index(answer->deltas, i));
		JsonArray *frags;
		if (json_object_has_member(delta, "_logprobs"))
			answer_json_logprobs(choice,
					     json_object_get_object_member(delta, "_logprobs"));
		if (answer_json_extra(message, delta))
			continue;
		if (json_object_has_member(delta, "content")) {
			g_string_append(content, json_object_get_string_member(delta, "content"));
			continue;
		}
		frags = json_object_get_array_member(delta, "tool_calls");
		for (guint j = 0; j < json_array_get_length(frags); j++) {
			JsonObject *frag = json_array_get_object_element(frags, j);
			JsonObject *fn = json_object_get_object_member(frag, "function");
			guint index = json_object_get_int_member(frag, "index");
			gchar **call;
			while (calls->len <= index)
				g_ptr_array_add(calls, g_new0(gchar *, 4));
			call = g_ptr_array_index(calls, index);
			if (json_object_has_member(frag, "id"))
				call[0] = g_strdup(json_object_get_string_member(frag, "id"));
			if (json_object_has_member(fn, "name"))
				call[1] = g_strdup(json_object_get_string_member(fn, "name"));
			{
				g_autofree gchar *old = call[2];
				call[2] =
				    g_strconcat(old != NULL ? old : "",
						json_object_get_string_member(fn, "arguments"),
						NULL);
			}
		}
	}
	for (guint i = 0; i < calls->len; i++) {
		gchar **call = g_ptr_array_index(calls, i);
		JsonObject *tc = json_object_new();
		JsonObject *fn = json_object_new();
		json_object_set_string_member(tc, "id", call[0]);
		json_object_set_string_member(tc, "type", "function");
		json_object_set_string_member(fn, "name", call[1]);
		json_object_set_string_member(fn, "arguments", call[2]);
		json_object_set_object_member(tc, "function", fn);
		json_array_add_object_element(tool_calls, tc);
	}

	json_object_set_string_member(message, "role", "assistant");
	if (content->len > 0 || (calls->len == 0 && !json_object_has_member(message, "refusal")))
		json_object_set_string_member(message, "content", content->str);
	else
		json_object_set_null_member(message, "content");
	if (calls->len > 0)
		json_object_set_array_member(message, "tool_calls", tool_calls);
	else
		json_array_unref(tool_calls);
	json_object_set_int_member(choice, "index", 0);
	json_object_set_object_member(choice, "message", message);
	json_object_set_string_member(choice, "finish_reason", answer->finish_reason);
	json_array_add_object_element(choices, choice);
	json_object_set_array_member(root, "choices", choices);
	json_object_set_object_member(root, "usage", usage_new());
	return object_to_string(root);
}

/* ---------- writing a stream, piece by piece ---------- */

typedef struct {
	gchar *data; /* owned */
	gsize len;
	guint delay_ms; /* before this piece */
} Piece;

static void
piece_free(Piece *piece)
{
	g_free(piece->data);
	g_free(piece);
}

typedef struct {
	FakeUpstream *fake;	/* unowned */
	SoupServerMessage *msg; /* owned */
	GPtrArray *pieces;	/* owned: Piece */
	guint next;
	guint timer_id;
	gboolean close_at_end; /* shut the connection instead of ending the body */
	gboolean ended;	       /* the body was completed or the connection shut */
	gboolean gone;	       /* "finished" or "disconnected" seen */
	GSource *watch;	       /* owned: hears the client leave between pieces */
} Stream;

static void
stream_add(Stream *stream, const gchar *data, gsize len, guint delay_ms)
{
	Piece *piece = g_new0(Piece, 1);
	piece->data = g_memdup2(data, len);
	piece->len = len;
	piece->delay_ms = delay_ms;
	g_ptr_array_add(stream->pieces, piece);
}

static void
stream_add_event(Stream *stream, const gchar *data, guint delay_ms)
{
	g_autofree gchar *event = g_strdup_printf("data: %s\n\n", data);
	stream_add(stream, event, strlen(event), delay_ms);
}

static void
stream_free(Stream *stream)
{
	g_ptr_array_remove(stream->fake->held, stream);
	if (stream->watch != NULL) {
		g_source_destroy(stream->watch);
		g_clear_pointer(&stream->watch, g_source_unref);
	}
	g_clear_handle_id(&stream->timer_id, g_source_remove);
	g_signal_handlers_disconnect_by_data(stream->msg, stream);
	g_object_unref(stream->msg);
	g_ptr_array_unref(stream->pieces);
	g_free(stream);
}

static void
on_stream_gone(SoupServerMessage *msg, gpointer user_data)
{
	Stream *stream = user_data;
	if (stream->gone)
		return;
	stream->gone = TRUE;
	stream->fake->active--;
	stream->fake->last_aborted = !stream->ended;
	if (stream->ended) {
		stream->fake->completed++;
	} else {
		/* the client went away before the end: an abort */
		stream->fake->aborted++;
		g_debug("a stream was aborted by the client after %u pieces", stream->next);
	}
	stream_free(stream);
}

static void
stream_schedule(Stream *stream);

static gboolean
on_client_readable(GSocket *socket, GIOCondition condition, gpointer user_data)
{
	Stream *stream = user_data;
	gchar byte;
	GInputVector vector = {&byte, 1};
	gint flags = G_SOCKET_MSG_PEEK;
	gssize n = 1;

	if (!(condition & (G_IO_HUP | G_IO_ERR))) {
		g_autoptr(GError) error = NULL;
		n = g_socket_receive_message(socket,
					     NULL,
					     &vector,
					     1,
					     NULL,
					     NULL,
					     &flags,
					     NULL,
					     &error);
		if (n < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
			return G_SOURCE_CONTINUE;
	} else {
		n = 0;
	}
	g_clear_pointer(&stream->watch, g_source_unref);
	if (n <= 0) {
		/* gone: end the message so that libsoup finishes it (as aborted) */
		g_clear_handle_id(&stream->timer_id, g_source_remove);
		g_socket_shutdown(socket, TRUE, TRUE, NULL);
		soup_message_body_complete(soup_server_message_get_response_body(stream->msg));
		soup_server_message_unpause(stream->msg);
	}
	return G_SOURCE_REMOVE;
}

static gboolean
on_stream_timer(gpointer user_data)
{
	Stream *stream = user_data;
	SoupServerMessage *msg = stream->msg;
	SoupMessageBody *body = soup_server_message_get_response_body(msg);

	/* nothing touches the stream after unpausing: the message may end */
	stream->timer_id = 0;
	if (stream->next < stream->pieces->len) {
		Piece *piece = g_ptr_array_index(stream->pieces, stream->next++);
		soup_message_body_append(body, SOUP_MEMORY_COPY, piece->data, piece->len);
		stream_schedule(stream);
		soup_server_message_unpause(msg);
		return G_SOURCE_REMOVE;
	}
	stream->ended = TRUE;
	if (stream->close_at_end) {
		/* the peer sees the body end before its last chunk */
		GSocket *socket = soup_server_message_get_socket(stream->msg);
		g_socket_shutdown(socket, TRUE, TRUE, NULL);
		return G_SOURCE_REMOVE;
	}
	soup_message_body_complete(body);
	soup_server_message_unpause(msg);
	return G_SOURCE_REMOVE;
}

static void
stream_schedule(Stream *stream)
{
	guint delay = 0;
	if (stream->next < stream->pieces->len)
		delay = ((Piece *)g_ptr_array_index(stream->pieces, stream->next))->delay_ms;
	else if (stream->close_at_end)
		delay = 100; /* let what was written reach the peer first */
	stream->timer_id = g_timeout_add(delay, on_stream_timer, stream);
}

/* Starts a streamed answer; the stream frees itself when the message ends. */
static Stream *
stream_new(FakeUpstream *fake, SoupServerMessage *msg, const gchar *content_type)
{
	Stream *stream = g_new0(Stream, 1);
	SoupMessageHeaders *headers = soup_server_message_get_response_headers(msg);

	stream->fake = fake;
	stream->msg = g_object_ref(msg);
	stream->pieces = g_ptr_array_new_with_free_func((GDestroyNotify)piece_free);
	fake->active++;
	soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
	if (content_type != NULL) {
		soup_message_headers_set_encoding(headers, SOUP_ENCODING_CHUNKED);
		soup_message_headers_set_content_type(headers, content_type, NULL);
		soup_message_headers_replace(headers, "Cache-Control", "no-cache");
		soup_message_body_set_accumulate(soup_server_message_get_response_body(msg), FALSE);
	}
	g_signal_connect(msg, "finished", G_CALLBACK(on_stream_gone), stream);
	g_signal_connect(msg, "disconnected", G_CALLBACK(on_stream_gone), stream);
	soup_server_message_pause(msg);
	/* a paused message reads nothing: watch for the client leaving, so a
	 * "hang" (or a long pause) still counts the abort */
	if (soup_server_message_get_socket(msg) != NULL) {
		stream->watch = g_socket_create_source(soup_server_message_get_socket(msg),
						       G_IO_IN | G_IO_HUP | G_IO_ERR,
						       NULL);
		g_source_set_callback(stream->watch,
				      G_SOURCE_FUNC(on_client_readable),
				      stream,
				      NULL);
		g_source_attach(stream->watch, NULL);
	}
	return stream;
}

static void
stream_start(Stream *stream)
{
	stream_schedule(stream);
}

/* ---------- writing on the raw connection ---------- */

/* For the scripts that must send faster or odder than libsoup's server
 * would: the connection is taken from libsoup and written directly, one
 * block after another, as fast as the socket takes them. */
typedef struct {
	FakeUpstream *fake; /* unowned */
	GIOStream *stream;  /* owned: the stolen connection */
	GBytes *head;	    /* owned: written once first */
	GBytes *block;	    /* owned: the body, or what repeats */
	gboolean endless;   /* write block again and again */
	gboolean head_sent;
	guint64 written;
} Raw;

static void
raw_free(Raw *raw)
{
	g_io_stream_close(raw->stream, NULL, NULL);
	g_object_unref(raw->stream);
	g_bytes_unref(raw->head);
	g_bytes_unref(raw->block);
	g_free(raw);
}

static void
raw_write(Raw *raw);

static void
on_raw_written(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Raw *raw = user_data;
	g_autoptr(GError) error = NULL;
	gsize n = 0;

	if (!g_output_stream_write_all_finish(G_OUTPUT_STREAM(source), result, &n, &error)) {
		/* the client went away: from an endless stream, always */
		raw->fake->active--;
		raw->fake->aborted++;
		raw->fake->last_aborted = TRUE;
		g_debug("a raw stream ended after %" G_GUINT64_FORMAT " bytes: %s",
			raw->written,
			error->message);
		raw_free(raw);
		return;
	}
	raw->written += n;
	if (!raw->head_sent || raw->endless) {
		raw->head_sent = TRUE;
		raw_write(raw);
		return;
	}
	raw->fake->active--;
	raw->fake->completed++;
	raw->fake->last_aborted = FALSE;
	raw_free(raw);
}

static void
raw_write(Raw *raw)
{
	GBytes *bytes = raw->head_sent ? raw->block : raw->head;
	gsize len = 0;
	gconstpointer data = g_bytes_get_data(bytes, &len);

	g_output_stream_write_all_async(g_io_stream_get_output_stream(raw->stream),
					data,
					len,
					G_PRIORITY_DEFAULT,
					NULL,
					on_raw_written,
					raw);
}

/* Answers @msg with @head then @body (taken), once or forever, on the
 * connection libsoup hands over. */
static void
raw_respond(FakeUpstream *fake,
	    SoupServerMessage *msg,
	    const gchar *head,
	    GBytes *body,
	    gboolean endless)
{
	Raw *raw = g_new0(Raw, 1);

	raw->fake = fake;
	raw->stream = soup_server_message_steal_connection(msg);
	raw->head = g_bytes_new(head, strlen(head));
	raw->block = body;
	raw->endless = endless;
	fake->active++;
	raw_write(raw);
}

static const gchar raw_sse_head[] = "HTTP/1.1 200 OK\r\n"
				    "Content-Type: text/event-stream\r\n"
				    "Connection: close\r\n\r\n";

static const gchar raw_chunked_head[] = "HTTP/1.1 200 OK\r\n"
					"Content-Type: text/event-stream\r\n"
					"Transfer-Encoding: chunked\r\n"
					"Connection: close\r\n\r\n";

/* ---------- the scripts ---------- */

static void
respond_json(SoupServerMessage *msg, guint status, const gchar *json)
{
	/* libsoup knows no reason phrase for some, such as 429 */
	soup_server_message_set_status(msg, status, status == 429 ? "Too Many Requests" : NULL);
	soup_server_message_set_response(msg,
					 "application/json",
					 SOUP_MEMORY_COPY,
					 json,
					 strlen(json));
}

/* An OpenAI error body; @code and @param may be NULL (null). */
static void
respond_error_full(SoupServerMessage *msg,
		   guint status,
		   const gchar *type,
		   const gchar *code,
		   const gchar *param,
		   const gchar *message)
{
	g_autoptr(JsonObject) root = json_object_new();
	JsonObject *error = json_object_new();
	g_autofree gchar *json = NULL;

	json_object_set_string_member(error, "message", message);
	json_object_set_string_member(error, "type", type);
	if (param != NULL)
		json_object_set_string_member(error, "param", param);
	else
		json_object_set_null_member(error, "param");
	if (code != NULL)
		json_object_set_string_member(error, "code", code);
	else
		json_object_set_null_member(error, "code");
	json_object_set_object_member(root, "error", error);
	json = object_to_string(root);
	respond_json(msg, status, json);
}

static void
respond_error(SoupServerMessage *msg, guint status, const gchar *type, const gchar *message)
{
	respond_error_full(msg, status, type, NULL, NULL, message);
}

/* Writes @answer as SSE, one event every @interval_ms, or as JSON. */
static void
respond_answer(FakeUpstream *fake,
	       SoupServerMessage *msg,
	       Answer *answer,
	       gboolean stream,
	       guint interval_ms)
{
	g_autoptr(GPtrArray) events = NULL;
	Stream *s;

	if (!stream) {
		g_autofree gchar *json = answer_to_json(answer);
		respond_json(msg, SOUP_STATUS_OK, json);
		return;
	}
	events = answer_to_events(answer);
	s = stream_new(fake, msg, "text/event-stream");
	for (guint i = 0; i < events->len; i++)
		stream_add_event(s, g_ptr_array_index(events, i), i == 0 ? 0 : interval_ms);
	stream_add_event(s, "[DONE]", 0);
	stream_start(s);
}

/* {"content":[{"token","logprob","bytes","top_logprobs":[]}]} */
static JsonObject *
logprobs_for(const gchar *token, gdouble logprob)
{
	JsonObject *logprobs = json_object_new();
	JsonArray *content = json_array_new();
	JsonObject *entry = json_object_new();
	JsonArray *bytes = json_array_new();

	for (const guchar *p = (const guchar *)token; *p != '\0'; p++)
		json_array_add_int_element(bytes, *p);
	json_object_set_string_member(entry, "token", token);
	json_object_set_double_member(entry, "logprob", logprob);
	json_object_set_array_member(entry, "bytes", bytes);
	json_object_set_array_member(entry, "top_logprobs", json_array_new());
	json_array_add_object_element(content, entry);
	json_object_set_array_member(logprobs, "content", content);
	return logprobs;
}

static Answer *
plain_answer(const gchar *model, gboolean include_usage, const gchar *finish_reason)
{
	const gchar *const words[] = {"Hello", ",", " world", "!", " héllo", " 🌍", NULL};
	Answer *answer = answer_new(model, include_usage, finish_reason);
	for (guint i = 0; words[i] != NULL; i++)
		answer_add_text(answer, words[i]);
	return answer;
}

static gboolean
last_message_is_tool(JsonObject *body)
{
	JsonNode *node = json_object_get_member(body, "messages");
	JsonArray *messages =
	    node != NULL && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
	guint n = messages != NULL ? json_array_get_length(messages) : 0;
	JsonObject *last;
	if (n == 0)
		return FALSE;
	last = json_array_get_object_element(messages, n - 1);
	return last != NULL &&
	       g_strcmp0(json_object_get_string_member_with_default(last, "role", ""), "tool") == 0;
}

/* The SSE text of "split": CRLF, keep-alive connections, an event on two data lines. */
static GString *
split_text(Answer *answer)
{
	g_autoptr(GPtrArray) events = answer_to_events(answer);
	GString *text = g_string_new(": keep-alive\r\n\r\n");

	for (guint i = 0; i < events->len; i++) {
		const gchar *data = g_ptr_array_index(events, i);
		const gchar *comma = strchr(data, ',');
		if (i == 2 && comma != NULL) {
			/* multi-line data: joined by "\n", still one JSON object */
			g_string_append(text, "data: ");
			g_string_append_len(text, data, comma - data + 1);
			g_string_append(text, "\r\ndata: ");
			g_string_append(text, comma + 1);
			g_string_append(text, "\r\n\r\n");
		} else {
			g_string_append_printf(text, "data: %s\r\n\r\n", data);
		}
		if (i % 2 == 1)
			g_string_append(text, ": keep-alive\r\n\r\n");
	}
	g_string_append(text, "data: [DONE]\r\n\r\n");
	return text;
}

static void
script_split(FakeUpstream *fake, SoupServerMessage *msg, const gchar *model, gboolean usage)
{
	const gchar *const words[] = {"Sp",
				      "lit",
				      " 🌍 ",
				      "héllo",
				      " — ",
				      "wörld,",
				      " exactly.\n",
				      "Line",
				      " two\t",
				      "ends",
				      "\r\n",
				      NULL};
	static const guint sizes[] = {1, 3, 7, 2, 5, 11, 13, 1, 1, 17};
	g_autoptr(Answer) answer = answer_new(model, usage, "stop");
	g_autoptr(GString) text = NULL;
	Stream *s;
	gsize pos = 0;

	for (guint i = 0; words[i] != NULL; i++)
		answer_add_text(answer, words[i]);
	text = split_text(answer);
	s = stream_new(fake, msg, "text/event-stream");
	for (guint i = 0; pos < text->len; i++) {
		gsize len = MIN(sizes[i % G_N_ELEMENTS(sizes)], text->len - pos);
		stream_add(s, text->str + pos, len, 1);
		pos += len;
	}
	stream_start(s);
}

static void
script_tools(FakeUpstream *fake,
	     SoupServerMessage *msg,
	     JsonObject *body,
	     const gchar *model,
	     gboolean stream,
	     gboolean usage)
{
	g_autoptr(Answer) answer = NULL;

	if (last_message_is_tool(body)) {
		answer = answer_new(model, usage, "stop");
		answer_add_text(answer, "It is sunny");
		answer_add_text(answer, " in Paris.");
		respond_answer(fake, msg, answer, stream, 0);
		return;
	}
	answer = answer_new(model, usage, "tool_calls");
	answer_add_tool_call(answer, 0, "call_weather_1", "get_weather", "");
	answer_add_tool_call(answer, 0, NULL, NULL, "{\"city\":");
	answer_add_tool_call(answer, 0, NULL, NULL, "\"Paris\"}");
	answer_add_tool_call(answer, 1, "call_time_2", "get_time", "{\"tz\":");
	answer_add_tool_call(answer, 1, NULL, NULL, "\"Europe/Paris\"}");
	respond_answer(fake, msg, answer, stream, 0);
}

static guint
count_tool_messages(JsonObject *body)
{
	JsonNode *node = json_object_get_member(body, "messages");
	JsonArray *messages =
	    node != NULL && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
	guint n = 0;

	for (guint i = 0; messages != NULL && i < json_array_get_length(messages); i++) {
		JsonObject *msg = json_array_get_object_element(messages, i);
		n += msg != NULL &&
		     g_strcmp0(json_object_get_string_member_with_default(msg, "role", ""),
			       "tool") == 0;
	}
	return n;
}

/* Whether each assistant message with tool calls carries its reasoning. */
static gboolean
reasoning_passed_back(JsonObject *body)
{
	JsonNode *node = json_object_get_member(body, "messages");
	JsonArray *messages =
	    node != NULL && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;

	for (guint i = 0; messages != NULL && i < json_array_get_length(messages); i++) {
		JsonObject *msg = json_array_get_object_element(messages, i);
		if (msg == NULL || !json_object_has_member(msg, "tool_calls"))
			continue;
		if (*json_object_get_string_member_with_default(msg, "reasoning_content", "") ==
		    '\0')
			return FALSE;
	}
	return TRUE;
}

static void
script_thinking(FakeUpstream *fake,
		SoupServerMessage *msg,
		JsonObject *body,
		const gchar *model,
		const gchar *tool,
		gboolean stream,
		gboolean usage)
{
	g_autoptr(Answer) answer = NULL;

	if (!reasoning_passed_back(body)) {
		respond_error(msg,
			      400,
			      "invalid_request_error",
			      "The reasoning_content in the thinking mode must be passed back "
			      "to the API.");
		return;
	}
	if (last_message_is_tool(body)) {
		answer = answer_new(model, usage, "stop");
		answer_add_member(answer, "reasoning_content", "The tool has answered.", NULL);
		answer_add_text(answer, "Thought it through.");
	} else {
		answer = answer_new(model, usage, "tool_calls");
		answer_add_member(answer, "reasoning_content", "I need", NULL);
		answer_add_member(answer, "reasoning_content", " the tool.", NULL);
		answer_add_tool_call(answer,
				     0,
				     "call_think_1",
				     tool != NULL ? tool : "get_weather",
				     "{\"text\":\"think\"}");
	}
	respond_answer(fake, msg, answer, stream, 0);
}

/* The request members OpenAI's Chat Completions knows. */
static const gchar *const chat_members[] = {
    "model",
    "messages",
    "stream",
    "stream_options",
    "temperature",
    "top_p",
    "n",
    "stop",
    "max_tokens",
    "max_completion_tokens",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "user",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "seed",
    "service_tier",
    "store",
    "metadata",
    "reasoning_effort",
    "verbosity",
    "prediction",
    "modalities",
    "audio",
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
    "web_search_options",
    NULL,
};

/* What OpenAI refuses in @body, as its error message says it; NULL when
 * nothing. */
static gchar *
strict_refusal(JsonObject *body)
{
	g_autoptr(GList) names = json_object_get_members(body);
	g_autoptr(GRegex) valid = g_regex_new("^[a-zA-Z0-9_-]{1,64}$", 0, 0, NULL);
	JsonNode *tools = json_object_get_member(body, "tools");

	for (GList *l = names; l != NULL; l = l->next)
		if (!g_strv_contains(chat_members, l->data))
			return g_strdup_printf("Unrecognized request argument supplied: %s",
					       (const gchar *)l->data);
	for (guint i = 0; tools != NULL && JSON_NODE_HOLDS_ARRAY(tools) &&
			  i < json_array_get_length(json_node_get_array(tools));
	     i++) {
		JsonObject *tool = json_array_get_object_element(json_node_get_array(tools), i);
		JsonObject *fn = tool != NULL && json_object_has_member(tool, "function")
				     ? json_object_get_object_member(tool, "function")
				     : NULL;
		const gchar *name =
		    fn != NULL ? json_object_get_string_member_with_default(fn, "name", "") : "";
		if (g_strcmp0(json_object_get_string_member_with_default(tool, "type", ""),
			      "function") != 0 ||
		    !g_regex_match(valid, name, 0, NULL))
			return g_strdup_printf("Invalid value for 'tools[%u]': expected a function "
					       "tool with a name matching ^[a-zA-Z0-9_-]{1,64}$",
					       i);
	}
	return NULL;
}

static void
script_strict(FakeUpstream *fake,
	      SoupServerMessage *msg,
	      JsonObject *body,
	      const gchar *model,
	      const gchar *tool,
	      gboolean stream,
	      gboolean usage)
{
	g_autofree gchar *refusal = strict_refusal(body);
	g_autoptr(Answer) answer = NULL;

	if (refusal != NULL) {
		respond_error(msg, 400, "invalid_request_error", refusal);
		return;
	}
	if (last_message_is_tool(body)) {
		JsonArray *messages = json_object_get_array_member(body, "messages");
		JsonObject *last =
		    json_array_get_object_element(messages, json_array_get_length(messages) - 1);
		JsonNode *content = json_object_get_member(last, "content");
		g_autofree gchar *result = content != NULL && JSON_NODE_HOLDS_VALUE(content)
					       ? g_strndup(json_node_get_string(content) ?: "", 200)
					       : json_to_string(content, FALSE);
		g_autofree gchar *text = g_strdup_printf("done: %s", result);
		answer = answer_new(model, usage, "stop");
		answer_add_text(answer, text);
	} else {
		answer = answer_new(model, usage, "tool_calls");
		answer_add_tool_call(answer,
				     0,
				     "call_strict_1",
				     tool != NULL ? tool : "exec_command",
				     "{\"cmd\":\"echo confab-strict-ok\"}");
	}
	respond_answer(fake, msg, answer, stream, 0);
}

/* An agent that never stops calling, until it may not. */
static void
script_call(FakeUpstream *fake,
	    SoupServerMessage *msg,
	    JsonObject *body,
	    const gchar *model,
	    const gchar *tool,
	    gboolean stream,
	    gboolean usage)
{
	const gchar *choice = json_object_get_string_member_with_default(body, "tool_choice", "");
	guint done = count_tool_messages(body);
	g_autoptr(Answer) answer = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *id = g_strdup_printf("call_step_%u", done + 1);
	g_autofree gchar *args = g_strdup_printf("{\"text\":\"step %u\"}", done + 1);

	if (g_str_equal(choice, "none")) {
		answer = answer_new(model, usage, "stop");
		text = g_strdup_printf("done after %u tool results", done);
		answer_add_text(answer, text);
	} else {
		answer = answer_new(model, usage, "tool_calls");
		answer_add_tool_call(answer, 0, id, tool != NULL ? tool : "", args);
	}
	respond_answer(fake, msg, answer, stream, 0);
}

static void
script_slow(FakeUpstream *fake,
	    SoupServerMessage *msg,
	    const gchar *model,
	    const gchar *arg,
	    gboolean stream,
	    gboolean usage)
{
	g_auto(GStrv) args = g_strsplit(arg != NULL ? arg : "", ":", 2);
	guint64 interval = 100;
	guint64 n = 100;
	g_autoptr(Answer) answer = answer_new(model, usage, "stop");

	if (args[0] != NULL && *args[0] != '\0')
		g_ascii_string_to_unsigned(args[0], 10, 0, 10000, &interval, NULL);
	if (args[0] != NULL && args[1] != NULL)
		g_ascii_string_to_unsigned(args[1], 10, 1, 100000, &n, NULL);
	for (guint i = 0; i < n; i++) {
		g_autofree gchar *word = g_strdup_printf("tick%u ", i);
		answer_add_text(answer, word);
	}
	respond_answer(fake, msg, answer, stream, (guint)interval);
}

static void
script_close(FakeUpstream *fake, SoupServerMessage *msg, const gchar *model, gboolean usage)
{
	g_autoptr(Answer) answer = answer_new(model, usage, "stop");
	g_autoptr(GPtrArray) events = NULL;
	Stream *s;

	answer_add_text(answer, "Half");
	answer_add_text(answer, " an answer");
	events = answer_to_events(answer);
	s = stream_new(fake, msg, "text/event-stream");
	/* the role chunk and both words, never the finish */
	for (guint i = 0; i < 3; i++)
		stream_add_event(s, g_ptr_array_index(events, i), 10);
	s->close_at_end = TRUE;
	stream_start(s);
}

static void
script_close_empty(FakeUpstream *fake, SoupServerMessage *msg, const gchar *model, gboolean usage)
{
	g_autoptr(Answer) answer = answer_new(model, usage, "stop");
	g_autoptr(GPtrArray) events = NULL;
	Stream *s;

	answer_add_text(answer, "never sent");
	events = answer_to_events(answer);
	s = stream_new(fake, msg, "text/event-stream");
	/* the role chunk, then nothing */
	stream_add_event(s, g_ptr_array_index(events, 0), 10);
	s->close_at_end = TRUE;
	stream_start(s);
}

/* The head now (libsoup writes it, then waits for a chunk), the answer
 * once the test asks for it (GET /_release). */
static void
script_held(FakeUpstream *fake, SoupServerMessage *msg, const gchar *model, gboolean usage)
{
	g_autoptr(Answer) answer = plain_answer(model, usage, "stop");
	g_autoptr(GPtrArray) events = answer_to_events(answer);
	Stream *s = stream_new(fake, msg, "text/event-stream");

	for (guint i = 0; i < events->len; i++)
		stream_add_event(s, g_ptr_array_index(events, i), 0);
	stream_add_event(s, "[DONE]", 0);
	g_ptr_array_add(fake->held, s);
	soup_server_message_unpause(msg);
}

static void
script_error_event(FakeUpstream *fake, SoupServerMessage *msg, const gchar *model)
{
	g_autoptr(Answer) answer = answer_new(model, FALSE, "stop");
	g_autoptr(GPtrArray) events = NULL;
	Stream *s;

	answer_add_text(answer, "Before the error");
	events = answer_to_events(answer);
	s = stream_new(fake, msg, "text/event-stream");
	stream_add_event(s, g_ptr_array_index(events, 0), 0);
	stream_add_event(s, g_ptr_array_index(events, 1), 10);
	stream_add_event(s,
			 "{\"error\":{\"message\":\"The fake model is overloaded\","
			 "\"type\":\"server_error\",\"param\":null,\"code\":null}}",
			 10);
	stream_start(s);
}

static void
script_malformed(FakeUpstream *fake, SoupServerMessage *msg, const gchar *model)
{
	g_autoptr(Answer) answer = answer_new(model, FALSE, "stop");
	g_autoptr(GPtrArray) events = answer_to_events(answer);
	Stream *s = stream_new(fake, msg, "text/event-stream");

	stream_add_event(s, g_ptr_array_index(events, 0), 0);
	stream_add_event(s, "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"oops", 0);
	stream_add_event(s, "[DONE]", 0);
	stream_start(s);
}

static void
script_endless(FakeUpstream *fake, SoupServerMessage *msg, const gchar *arg)
{
	gboolean text = g_strcmp0(arg, "text") == 0;
	GString *block = g_string_new(NULL);

	/* a block of 64 KiB or so, sent again and again */
	while (block->len < 64 * 1024) {
		if (text) {
			g_string_append(block,
					"data: {\"object\":\"chat.completion.chunk\",\"choices\":"
					"[{\"index\":0,\"delta\":{\"content\":\"");
			for (guint i = 0; i < 1024; i++)
				g_string_append_c(block, 'a' + i % 26);
			g_string_append(block, "\"},\"finish_reason\":null}]}\n\n");
		} else {
			g_string_append(block,
					"data: {\"object\":\"chat.completion.chunk\",\"choices\":"
					"[{\"index\":0,\"delta\":{\"content\":\"\"},"
					"\"finish_reason\":null}]}\n\n: keep-alive\n\n");
		}
	}
	raw_respond(fake, msg, raw_sse_head, g_string_free_to_bytes(block), TRUE);
}

static void
script_error_flood(FakeUpstream *fake, SoupServerMessage *msg)
{
	static const gchar head[] = "HTTP/1.1 500 Internal Server Error\r\n"
				    "Content-Type: application/json\r\n"
				    "Connection: close\r\n\r\n";
	GString *block = g_string_new(NULL);

	while (block->len < 64 * 1024)
		g_string_append(block, "{\"error\":{\"message\":\"again and again\"}} ");
	raw_respond(fake, msg, head, g_string_free_to_bytes(block), TRUE);
}

static void
script_big_line(FakeUpstream *fake, SoupServerMessage *msg, const gchar *arg)
{
	guint64 n = 2 * 1024 * 1024;
	GString *body = g_string_new(NULL);

	if (arg != NULL)
		g_ascii_string_to_unsigned(arg, 10, 1, 256 * 1024 * 1024, &n, NULL);
	g_string_append(body,
			"data: {\"object\":\"chat.completion.chunk\",\"choices\":"
			"[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"");
	for (guint64 i = 0; i < n; i++)
		g_string_append_c(body, 'a' + i % 26);
	g_string_append(body, "\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
	raw_respond(fake, msg, raw_sse_head, g_string_free_to_bytes(body), FALSE);
}

/* one SSE event as its own HTTP chunk */
static void
append_chunk_event(GString *body, const gchar *data)
{
	gsize len = strlen(data) + strlen("data: \n\n");
	g_string_append_printf(body, "%zx\r\ndata: %s\n\n\r\n", len, data);
}

static void
script_tiny(FakeUpstream *fake, SoupServerMessage *msg, const gchar *model, const gchar *arg)
{
	guint64 n = 100000;
	GString *body = g_string_new(NULL);

	if (arg != NULL)
		g_ascii_string_to_unsigned(arg, 10, 1, 10000000, &n, NULL);
	append_chunk_event(body,
			   "{\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
			   "\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}");
	for (guint64 i = 0; i < n; i++) {
		gchar event[128];
		g_snprintf(event,
			   sizeof event,
			   "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%c\"}}]}",
			   'a' + (gint)(i % 26));
		append_chunk_event(body, event);
	}
	append_chunk_event(body,
			   "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}");
	append_chunk_event(body, "[DONE]");
	g_string_append(body, "0\r\n\r\n");
	raw_respond(fake, msg, raw_chunked_head, g_string_free_to_bytes(body), FALSE);
}

/* A good first chunk, then @bad, then [DONE]. */
static void
script_bad_event(FakeUpstream *fake, SoupServerMessage *msg, const gchar *bad)
{
	GString *body = g_string_new(NULL);

	g_string_append(body,
			"data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
			"\"delta\":{\"role\":\"assistant\",\"content\":\"Before\"}}]}\n\n");
	g_string_append_printf(body, "data: %s\n\ndata: [DONE]\n\n", bad);
	raw_respond(fake, msg, raw_sse_head, g_string_free_to_bytes(body), FALSE);
}

static void
script_deep(FakeUpstream *fake, SoupServerMessage *msg, const gchar *arg)
{
	guint64 n = 100000;
	g_autoptr(GString) bad = g_string_new("{\"choices\":[{\"index\":0,\"delta\":{\"content\":"
					      "\"x\"}}],\"extra\":");

	if (arg != NULL)
		g_ascii_string_to_unsigned(arg, 10, 1, 10000000, &n, NULL);
	for (guint64 i = 0; i < n; i++)
		g_string_append_c(bad, '[');
	for (guint64 i = 0; i < n; i++)
		g_string_append_c(bad, ']');
	g_string_append_c(bad, '}');
	script_bad_event(fake, msg, bad->str);
}

/* The bearer token of the request, as the upstream received it. */
static const gchar *
request_authorization(SoupServerMessage *msg)
{
	const gchar *auth =
	    soup_message_headers_get_one(soup_server_message_get_request_headers(msg),
					 "Authorization");
	return auth != NULL ? auth : "";
}

static void
script_echo_auth(FakeUpstream *fake,
		 SoupServerMessage *msg,
		 const gchar *model,
		 const gchar *arg,
		 gboolean usage)
{
	const gchar *auth = request_authorization(msg);
	guint64 status = 401;

	if (g_strcmp0(arg, "stream") == 0) {
		const gchar *key = g_str_has_prefix(auth, "Bearer ") ? auth + 7 : auth;
		gsize len = strlen(key);
		g_autoptr(Answer) answer = answer_new(model, usage, "tool_calls");
		g_autofree gchar *args = NULL;
		gsize cut1 = MIN(len, 3);
		gsize cut2 = MIN(len, len / 2 + 1);

		/* the key cut at odd places across deltas, and whole */
		answer_add_text(answer, "Your key: ");
		{
			g_autofree gchar *a = g_strndup(key, cut1);
			g_autofree gchar *b = g_strndup(key + cut1, cut2 - cut1);
			g_autofree gchar *c = g_strconcat(key + cut2, " and again ", NULL);
			answer_add_text(answer, a);
			answer_add_text(answer, b);
			answer_add_text(answer, c);
			answer_add_text(answer, auth);
		}
		args = g_strdup_printf("{\"token\":\"%s\"}", key);
		answer_add_tool_call(answer, 0, "call_leak_1", "send", "");
		{
			g_autofree gchar *a = g_strndup(args, 14);
			answer_add_tool_call(answer, 0, NULL, NULL, a);
			answer_add_tool_call(answer, 0, NULL, NULL, args + MIN(strlen(args), 14));
		}
		respond_answer(fake, msg, answer, TRUE, 0);
		return;
	}
	if (arg != NULL)
		g_ascii_string_to_unsigned(arg, 10, 400, 599, &status, NULL);
	{
		g_autofree gchar *message = g_strdup_printf(
		    "Incorrect API key provided: the header was \"Authorization: %s\"",
		    auth);
		respond_error(msg, (guint)status, "invalid_request_error", message);
	}
}

static gboolean
check_first_requests(FakeUpstream *fake, const gchar *model, guint64 n)
{
	guint seen = GPOINTER_TO_UINT(g_hash_table_lookup(fake->counts, model));
	g_hash_table_replace(fake->counts, g_strdup(model), GUINT_TO_POINTER(seen + 1));
	return seen < n;
}

static void
run_script(FakeUpstream *fake, SoupServerMessage *msg, JsonObject *body)
{
	const gchar *model = json_object_get_string_member_with_default(body, "model", "");
	gboolean stream = json_object_get_boolean_member_with_default(body, "stream", FALSE);
	JsonNode *options_node = json_object_get_member(body, "stream_options");
	JsonObject *options = options_node != NULL && JSON_NODE_HOLDS_OBJECT(options_node)
				  ? json_node_get_object(options_node)
				  : NULL;
	gboolean usage =
	    options != NULL &&
	    json_object_get_boolean_member_with_default(options, "include_usage", FALSE);
	g_auto(GStrv) parts = g_strsplit(model, ":", 2);
	const gchar *name = parts[0] != NULL ? parts[0] : "";
	const gchar *arg = parts[0] != NULL ? parts[1] : NULL;

	if (g_str_equal(name, "plain")) {
		g_autoptr(Answer) answer = plain_answer(model, usage, "stop");
		respond_answer(fake, msg, answer, stream, 0);
	} else if (g_str_equal(name, "slow")) {
		script_slow(fake, msg, model, arg, stream, usage);
	} else if (g_str_equal(name, "split")) {
		if (stream) {
			script_split(fake, msg, model, usage);
		} else {
			g_autoptr(Answer) answer = plain_answer(model, usage, "stop");
			respond_answer(fake, msg, answer, FALSE, 0);
		}
	} else if (g_str_equal(name, "call")) {
		script_call(fake, msg, body, model, arg, stream, usage);
	} else if (g_str_equal(name, "tools")) {
		script_tools(fake, msg, body, model, stream, usage);
	} else if (g_str_equal(name, "thinking")) {
		script_thinking(fake, msg, body, model, arg, stream, usage);
	} else if (g_str_equal(name, "strict")) {
		script_strict(fake, msg, body, model, arg, stream, usage);
	} else if (g_str_equal(name, "length")) {
		g_autoptr(Answer) answer = answer_new(model, usage, "length");
		answer_add_text(answer, "Once");
		answer_add_text(answer, " upon a");
		respond_answer(fake, msg, answer, stream, 0);
	} else if (g_str_equal(name, "filter")) {
		g_autoptr(Answer) answer = answer_new(model, usage, "content_filter");
		answer_add_text(answer, "I cannot");
		respond_answer(fake, msg, answer, stream, 0);
	} else if (g_str_equal(name, "reasoning") || g_str_equal(name, "reasoning-or")) {
		g_autoptr(Answer) answer = answer_new(model, usage, "stop");
		const gchar *member = g_str_equal(name, "reasoning") ? "reasoning_content"
								     : "reasoning";
		answer_add_member(answer, member, "The user greets me.", NULL);
		answer_add_member(answer, member, " I greet back.", NULL);
		answer_add_text(answer, "Hello!");
		respond_answer(fake, msg, answer, stream, 0);
	} else if (g_str_equal(name, "refusal")) {
		g_autoptr(Answer) answer = answer_new(model, usage, "stop");
		answer_add_member(answer, "refusal", "I can't", NULL);
		answer_add_member(answer, "refusal", " help with that.", NULL);
		respond_answer(fake, msg, answer, stream, 0);
	} else if (g_str_equal(name, "logprobs")) {
		g_autoptr(Answer) answer = answer_new(model, usage, "stop");
		answer_add_member(answer, "content", "Hi", logprobs_for("Hi", -0.25));
		answer_add_member(answer, "content", " there", logprobs_for(" there", -1.5));
		respond_answer(fake, msg, answer, stream, 0);
	} else if (g_str_equal(name, "json")) {
		g_autoptr(Answer) answer = plain_answer(model, usage, "stop");
		respond_answer(fake, msg, answer, FALSE, 0);
	} else if (g_str_equal(name, "429")) {
		guint64 n = 2;
		if (arg != NULL)
			g_ascii_string_to_unsigned(arg, 10, 0, 1000, &n, NULL);
		if (check_first_requests(fake, model, n)) {
			soup_message_headers_replace(soup_server_message_get_response_headers(msg),
						     "Retry-After",
						     "1");
			respond_error(msg,
				      429,
				      "rate_limit_error",
				      "Rate limit reached for the fake model");
		} else {
			g_autoptr(Answer) answer = plain_answer(model, usage, "stop");
			respond_answer(fake, msg, answer, stream, 0);
		}
	} else if (g_str_equal(name, "500")) {
		respond_error(msg, 500, "server_error", "The fake upstream had an internal error");
	} else if (g_str_equal(name, "malformed")) {
		script_malformed(fake, msg, model);
	} else if (g_str_equal(name, "held") && stream) {
		script_held(fake, msg, model, usage);
	} else if (g_str_equal(name, "hang")) {
		/* never answers; only counted when the client gives up */
		stream_new(fake, msg, NULL);
	} else if (g_str_equal(name, "close")) {
		script_close(fake, msg, model, usage);
	} else if (g_str_equal(name, "close-empty")) {
		script_close_empty(fake, msg, model, usage);
	} else if (g_str_equal(name, "call-once")) {
		if (count_tool_messages(body) > 0)
			respond_error(msg,
				      500,
				      "server_error",
				      "The fake upstream failed after a call");
		else
			script_call(fake, msg, body, model, arg, stream, usage);
	} else if (g_str_equal(name, "status")) {
		guint64 status = 500;
		if (arg != NULL)
			g_ascii_string_to_unsigned(arg, 10, 100, 599, &status, NULL);
		respond_error_full(msg,
				   (guint)status,
				   "fake_error",
				   "fake_refusal",
				   "messages",
				   "The fake upstream was told to fail");
	} else if (g_str_equal(name, "429ms")) {
		SoupMessageHeaders *headers = soup_server_message_get_response_headers(msg);
		soup_message_headers_replace(headers, "retry-after-ms", arg != NULL ? arg : "1000");
		soup_message_headers_replace(headers, "Retry-After", "1");
		respond_error(msg,
			      429,
			      "rate_limit_error",
			      "Rate limit reached for the fake model");
	} else if (g_str_equal(name, "error-event")) {
		script_error_event(fake, msg, model);
	} else if (g_str_equal(name, "endless")) {
		script_endless(fake, msg, arg);
	} else if (g_str_equal(name, "error-flood")) {
		script_error_flood(fake, msg);
	} else if (g_str_equal(name, "big-line")) {
		script_big_line(fake, msg, arg);
	} else if (g_str_equal(name, "tiny")) {
		script_tiny(fake, msg, model, arg);
	} else if (g_str_equal(name, "bad-utf8")) {
		script_bad_event(fake,
				 msg,
				 "{\"choices\":[{\"index\":0,\"delta\":{\"content\":"
				 "\"caf\xe9 \xff\xfe\xc3\"}}]}");
	} else if (g_str_equal(name, "huge-number")) {
		script_bad_event(fake,
				 msg,
				 "{\"created\":1e400,\"choices\":[{\"index\":0,\"delta\":"
				 "{\"content\":\"x\"}}]}");
	} else if (g_str_equal(name, "deep")) {
		script_deep(fake, msg, arg);
	} else if (g_str_equal(name, "echo-auth")) {
		script_echo_auth(fake, msg, model, arg, usage);
	} else {
		respond_error(msg,
			      404,
			      "invalid_request_error",
			      "The model does not exist on the fake upstream");
	}
}

/* ---------- handlers ---------- */

static void
record_request(FakeUpstream *fake, SoupServerMessage *msg, JsonNode *body, GBytes *raw)
{
	JsonObject *record = json_object_new();
	JsonObject *headers = json_object_new();
	SoupMessageHeadersIter iter;
	const gchar *name;
	const gchar *value;

	soup_message_headers_iter_init(&iter, soup_server_message_get_request_headers(msg));
	while (soup_message_headers_iter_next(&iter, &name, &value)) {
		g_autofree gchar *lower = g_ascii_strdown(name, -1);
		json_object_set_string_member(headers, lower, value);
	}
	json_object_set_string_member(record, "method", soup_server_message_get_method(msg));
	json_object_set_string_member(record,
				      "path",
				      g_uri_get_path(soup_server_message_get_uri(msg)));
	json_object_set_object_member(record, "headers", headers);
	if (body != NULL) {
		json_object_set_member(record, "body", json_node_copy(body));
	} else {
		g_autofree gchar *text =
		    g_utf8_make_valid(g_bytes_get_data(raw, NULL), g_bytes_get_size(raw));
		json_object_set_string_member(record, "body", text);
	}
	json_array_add_object_element(fake->requests, record);
}

static void
count_connection(FakeUpstream *fake, SoupServerMessage *msg)
{
	GSocket *socket = soup_server_message_get_socket(msg);
	if (socket == NULL || g_object_get_qdata(G_OBJECT(socket), seen_quark) != NULL)
		return;
	g_object_set_qdata(G_OBJECT(socket), seen_quark, GINT_TO_POINTER(1));
	fake->connections++;
}

static void
completions_cb(SoupServer *server,
	       SoupServerMessage *msg,
	       const gchar *path,
	       GHashTable *query,
	       gpointer user_data)
{
	FakeUpstream *fake = user_data;
	SoupMessageBody *request_body = soup_server_message_get_request_body(msg);
	g_autoptr(GBytes) raw = soup_message_body_flatten(request_body);
	g_autoptr(JsonParser) parser = json_parser_new();
	JsonNode *root = NULL;

	count_connection(fake, msg);
	if (json_parser_load_from_data(parser,
				       g_bytes_get_data(raw, NULL),
				       g_bytes_get_size(raw),
				       NULL))
		root = json_parser_get_root(parser);
	record_request(fake, msg, root, raw);

	if (g_strcmp0(soup_server_message_get_method(msg), "POST") != 0) {
		respond_error(msg, 405, "invalid_request_error", "Only POST is served here");
		return;
	}
	if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
		respond_error(msg, 400, "invalid_request_error", "The body is not a JSON object");
		return;
	}
	run_script(fake, msg, json_node_get_object(root));
}

static void
requests_cb(SoupServer *server,
	    SoupServerMessage *msg,
	    const gchar *path,
	    GHashTable *query,
	    gpointer user_data)
{
	FakeUpstream *fake = user_data;
	g_autoptr(JsonNode) node = json_node_init_array(json_node_alloc(), fake->requests);
	g_autofree gchar *json = json_to_string(node, FALSE);
	respond_json(msg, SOUP_STATUS_OK, json);
}

static void
release_cb(SoupServer *server,
	   SoupServerMessage *msg,
	   const gchar *path,
	   GHashTable *query,
	   gpointer user_data)
{
	FakeUpstream *fake = user_data;
	g_autoptr(GPtrArray) held = g_steal_pointer(&fake->held);
	g_autofree gchar *json = g_strdup_printf("{\"released\":%u}", held->len);

	fake->held = g_ptr_array_new();
	for (guint i = 0; i < held->len; i++)
		stream_start(g_ptr_array_index(held, i));
	respond_json(msg, SOUP_STATUS_OK, json);
}

static void
stats_cb(SoupServer *server,
	 SoupServerMessage *msg,
	 const gchar *path,
	 GHashTable *query,
	 gpointer user_data)
{
	FakeUpstream *fake = user_data;
	g_autoptr(JsonObject) stats = json_object_new();
	g_autofree gchar *json = NULL;

	json_object_set_int_member(stats, "requests", json_array_get_length(fake->requests));
	json_object_set_int_member(stats, "connections", fake->connections);
	json_object_set_int_member(stats, "active", fake->active);
	json_object_set_int_member(stats, "completed", fake->completed);
	json_object_set_int_member(stats, "aborted", fake->aborted);
	json_object_set_boolean_member(stats, "last_aborted", fake->last_aborted);
	json = object_to_string(stats);
	respond_json(msg, SOUP_STATUS_OK, json);
}

/* ---------- main ---------- */

static gboolean
on_quit_signal(gpointer user_data)
{
	FakeUpstream *fake = user_data;
	g_main_loop_quit(fake->loop);
	return G_SOURCE_CONTINUE;
}

static gboolean
on_stdin(gint fd, GIOCondition condition, gpointer user_data)
{
	FakeUpstream *fake = user_data;
	gchar buf[256];
	gssize n = read(fd, buf, sizeof(buf));
	if (n > 0)
		return G_SOURCE_CONTINUE;
	g_main_loop_quit(fake->loop);
	return G_SOURCE_REMOVE;
}

int
main(int argc, char **argv)
{
	gboolean stdin_watch = FALSE;
	const GOptionEntry entries[] = {
	    {"stdin-watch", 0, 0, G_OPTION_ARG_NONE, &stdin_watch, "Exit when stdin closes", NULL},
	    {NULL},
	};
	g_autoptr(GOptionContext) context = g_option_context_new(NULL);
	g_autoptr(GError) error = NULL;
	g_autoslist(GUri) uris = NULL;
	FakeUpstream fake = {0};
	g_autofree gchar *url = NULL;

	g_option_context_add_main_entries(context, entries, NULL);
	if (!g_option_context_parse(context, &argc, &argv, &error)) {
		g_printerr("fake-upstream: %s\n", error->message);
		return 1;
	}
	seen_quark = g_quark_from_static_string("fake-upstream-seen");
	fake.loop = g_main_loop_new(NULL, FALSE);
	fake.requests = json_array_new();
	fake.counts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	fake.held = g_ptr_array_new();
	fake.server = soup_server_new("server-header", "fake-upstream", NULL);
	soup_server_add_handler(fake.server, "/v1/chat/completions", completions_cb, &fake, NULL);
	soup_server_add_handler(fake.server, "/_requests", requests_cb, &fake, NULL);
	soup_server_add_handler(fake.server, "/_stats", stats_cb, &fake, NULL);
	soup_server_add_handler(fake.server, "/_release", release_cb, &fake, NULL);
	if (!soup_server_listen_local(fake.server, 0, SOUP_SERVER_LISTEN_IPV4_ONLY, &error)) {
		g_printerr("fake-upstream: cannot listen: %s\n", error->message);
		return 1;
	}
	uris = soup_server_get_uris(fake.server);
	url = g_strdup_printf("http://127.0.0.1:%d", g_uri_get_port(uris->data));
	g_print("fake-upstream: listening on %s\n", url);
	fflush(stdout);

	g_unix_signal_add(SIGTERM, on_quit_signal, &fake);
	g_unix_signal_add(SIGINT, on_quit_signal, &fake);
	if (stdin_watch)
		g_unix_fd_add(STDIN_FILENO, G_IO_IN | G_IO_HUP | G_IO_ERR, on_stdin, &fake);
	g_main_loop_run(fake.loop);

	soup_server_disconnect(fake.server);
	g_clear_object(&fake.server);
	g_hash_table_unref(fake.counts);
	g_ptr_array_unref(fake.held);
	json_array_unref(fake.requests);
	g_main_loop_unref(fake.loop);
	return 0;
}
