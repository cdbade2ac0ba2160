/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "FakeMcpServer"

#include <gio/gio.h>
#include <gio/gunixinputstream.h>
#include <gio/gunixoutputstream.h>
#include <glib-unix.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A scripted MCP server for the tests of the MCP client. It speaks MCP
 * over stdio (default: one JSON-RPC message per line) or, with --http PORT,
 * over streamable HTTP on 127.0.0.1 (a minimal HTTP/1.1 server; with port 0
 * it prints "PORT=<n>" on stdout once listening, and exits when its stdin
 * closes so that it never outlives the test that started it).
 *
 * Tools:
 *   echo {text}            a text part holding text
 *   add {a,b}              a text part holding a+b
 *   slow {ms}              answers after ms; notifications/cancelled stops it
 *                          and it never answers that id
 *   fail                   a result with isError true
 *   huge {bytes}           one text part of that many bytes
 *   progress {steps,ms}    notifications/progress with the request's token
 *                          every ms, then the answer (over HTTP as SSE)
 *   image                  an image part (a 1x1 PNG, 67 bytes)
 *   mixed                  text, audio, resource_link, embedded resources
 *   structured {with_text} structuredContent (and the same JSON as text
 *                          unless with_text is false)
 *   die                    exits at once without answering
 *   malformed              a line (HTTP: an SSE event) that is not JSON,
 *                          then the answer
 *   change_tools           adds the tool "extra" and sends
 *                          notifications/tools/list_changed
 *   ask_client             sends the client a ping and an unknown request,
 *                          and answers with what it heard back
 *   forget_session         (HTTP) answers, then forgets the session: the
 *                          next request with its id gets 404
 *   env                    its environment, one VAR=value a line, sorted
 *   drop {times,retry,clean}  (HTTP) cuts its event stream after an event
 *                          with an id and retry: (ms, default 200), cleanly
 *                          (default) or not, times times (default 1); a GET
 *                          with that Last-Event-ID resumes it (400 when it
 *                          comes before the retry delay), recorded as
 *                          {"_http":"RESUME","last_event_id":ID}
 *   elicit {schema}        sends the client elicitation/create (a form of
 *                          name, age, score, status, verified with
 *                          defaults and a required email, or schema) and
 *                          answers with the client's answer as JSON text
 *   batch                  answers in a JSON-RPC batch (an array: a
 *                          notifications/message, then the answer), as
 *                          2025-03-26 allowed
 *
 * Options: --capabilities JSON (what initialize declares; without "tools"
 * in it, tools/list is "Method not found"), --page-size N (tools/list pages with nextCursor),
 * --protocol V (the version it answers initialize with; by default the client's when it is
 * 2025-06-18 or 2025-11-25, else 2025-11-25), --crash-after N (answers N requests and exits when
 * the next one arrives), --stderr-noise (log lines, one of 10000 bytes, on stderr), --record FILE
 * (appends every message it receives, one JSON per line; over HTTP a DELETE is recorded as
 * {"_http":"DELETE"}), --ignore-term (survives SIGTERM and, over stdio,
 * the end of its input), --require-header
 * "Name: value" (HTTP: 401 without it; repeatable), --error-body BODY (HTTP:
 * the body of that 401, JSON or text), --get-stream (HTTP: GET
 * opens a stream that carries list_changed; otherwise GET is 405),
 * --tool-prefix P (every tool is listed and called as P followed by its
 * name, for long and odd names).
 *
 * --oauth MODE (HTTP): the server is also its own OAuth 2.1 authorization
 * server (same origin): /mcp wants a Bearer token it issued, else 401 with
 * WWW-Authenticate naming /.well-known/oauth-protected-resource/mcp; the
 * metadata is at /.well-known/oauth-authorization-server; /register (RFC
 * 7591), /authorize (approves at once: 302 to redirect_uri with code and
 * state), /token (authorization_code with PKCE S256 checked,
 * client_credentials, refresh_token; `resource` required). Every token
 * request is recorded as {"_oauth":"token","grant_type","resource"}.
 * MODE "ok", or one failure: "bad-metadata" (the metadata is not JSON),
 * "issuer-mismatch", "token-400", "token-401", "register-refused",
 * "expiring" (tokens that expire in 1 s, with a refresh token), "step-up"
 * (tools/call wants the scope "write": 403 insufficient_scope asking for
 * "mcp write" with a token granted less).
 */

#define PNG_1X1_BASE64                                                                             \
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5E" \
	"rkJg"                                                                                     \
	"gg=="

typedef struct _Server Server;
typedef struct _HttpConn HttpConn;
typedef struct _Session Session;

/* Where the messages about one request go: stdout, or its HTTP exchange
 * (one JSON body, or an SSE stream once a second message is needed). */
typedef struct {
	Server *server;
	JsonNode *id;	  /* owned */
	gchar *key;	  /* owned: id as JSON text */
	HttpConn *conn;	  /* owned ref; NULL over stdio */
	Session *session; /* unowned */
	gboolean sse;
	JsonNode *progress_token; /* owned, nullable */
	guint source;		  /* a timer, for slow and progress */
	gint steps;
	gint step;
	gint ms;
	gboolean forget_session;
	gboolean batch; /* the answer goes in a JSON-RPC batch (2025-03-26) */
	gint drops;	/* drop: how many times the stream is still cut */
	gboolean drop_clean;
	gint retry_ms;
	gint64 dropped_at;
	JsonNode *ping_answer; /* ask_client */
	JsonNode *unknown_answer;
	gchar *ping_key;   /* the id of our ping: answers may come in any order */
	gchar *elicit_key; /* elicit: the id of our elicitation/create */
} Reply;

struct _Session {
	gchar *id;
	gchar *protocol;
	HttpConn *get_conn; /* owned ref: the GET stream, if open */
};

struct _HttpConn {
	gint ref_count;
	Server *server;
	GSocketConnection *connection; /* owned */
	GDataInputStream *in;	       /* owned */
	GOutputStream *out;	       /* unowned: the connection's */
	GHashTable *headers;	       /* lower-case name -> value */
	gchar *method;
	gchar *path;
	gchar *body;
	gboolean closed;
};

struct _Server {
	GMainLoop *loop;
	gboolean extra_tool;
	guint page_size;
	gchar *protocol;
	gint crash_after;
	gint n_requests;
	gboolean stderr_noise;
	FILE *record;
	gchar **required_headers;
	gboolean get_stream;
	gboolean ignore_term;
	gchar *error_body;
	gchar *capabilities;
	gchar *tool_prefix;
	GHashTable *pending; /* id text -> Reply (slow, progress) */
	GHashTable *asking;  /* id text of our requests -> Reply (ask_client) */
	GHashTable *dropped; /* event id -> Reply whose stream was cut (drop) */
	guint next_event_id;
	guint next_own_id;
	/* stdio */
	GDataInputStream *stdin_data;
	GOutputStream *stdout_stream;
	/* http */
	GSocketService *service;
	GHashTable *sessions; /* id -> Session */
	/* --oauth */
	gchar *oauth;
	GHashTable *oauth_codes;  /* code -> code_challenge */
	GHashTable *oauth_tokens; /* access or refresh token -> "access" or "refresh" */
	GHashTable *oauth_scopes; /* code or access token -> the scope asked or granted */
	guint oauth_next;
};

static void
http_conn_read_request(HttpConn *conn);

/* ---------- output ---------- */

static gchar *
node_to_string(JsonNode *node)
{
	g_autoptr(JsonGenerator) gen = json_generator_new();
	json_generator_set_root(gen, node);
	return json_generator_to_data(gen, NULL);
}

static void
noise(Server *server, const gchar *format, ...) G_GNUC_PRINTF(2, 3);

static void
noise(Server *server, const gchar *format, ...)
{
	va_list args;
	if (!server->stderr_noise)
		return;
	va_start(args, format);
	fputs("fake-mcp-server: ", stderr);
	vfprintf(stderr, format, args);
	fputc('\n', stderr);
	fflush(stderr);
	va_end(args);
}

static void
stdout_line(Server *server, const gchar *line)
{
	g_autoptr(GError) error = NULL;
	if (!g_output_stream_write_all(server->stdout_stream,
				       line,
				       strlen(line),
				       NULL,
				       NULL,
				       &error) ||
	    !g_output_stream_write_all(server->stdout_stream, "\n", 1, NULL, NULL, &error)) {
		/* the client is gone */
		exit(0);
	}
}

static void
http_conn_unref(HttpConn *conn);

static HttpConn *
http_conn_ref(HttpConn *conn)
{
	conn->ref_count++;
	return conn;
}

static gboolean
http_write(HttpConn *conn, const gchar *data, gsize len)
{
	if (conn->closed)
		return FALSE;
	if (!g_output_stream_write_all(conn->out, data, len, NULL, NULL, NULL)) {
		conn->closed = TRUE;
		g_io_stream_close(G_IO_STREAM(conn->connection), NULL, NULL);
		return FALSE;
	}
	return TRUE;
}

static void
http_chunk(HttpConn *conn, const gchar *data, gsize len)
{
	g_autofree gchar *size = g_strdup_printf("%zx\r\n", len);
	if (len == 0)
		return;
	if (http_write(conn, size, strlen(size)) && http_write(conn, data, len))
		http_write(conn, "\r\n", 2);
}

static void
http_respond(HttpConn *conn,
	     guint status,
	     const gchar *reason,
	     const gchar *extra_headers,
	     const gchar *content_type,
	     const gchar *body)
{
	gsize len = body != NULL ? strlen(body) : 0;
	g_autofree gchar *head =
	    g_strdup_printf("HTTP/1.1 %u %s\r\n%s%s%s%sContent-Length: %zu\r\n\r\n",
			    status,
			    reason,
			    extra_headers != NULL ? extra_headers : "",
			    content_type != NULL ? "Content-Type: " : "",
			    content_type != NULL ? content_type : "",
			    content_type != NULL ? "\r\n" : "",
			    len);
	if (http_write(conn, head, strlen(head)) && len > 0)
		http_write(conn, body, len);
}

static void
http_sse_start(HttpConn *conn)
{
	static const gchar head[] = "HTTP/1.1 200 OK\r\n"
				    "Content-Type: text/event-stream\r\n"
				    "Cache-Control: no-cache\r\n"
				    "Transfer-Encoding: chunked\r\n\r\n";
	static const gchar prime[] = "id: prime\ndata: \n\n";
	if (http_write(conn, head, strlen(head)))
		http_chunk(conn, prime, strlen(prime));
}

static void
http_sse_event(HttpConn *conn, const gchar *json)
{
	g_autofree gchar *event = g_strdup_printf("event: message\ndata: %s\n\n", json);
	http_chunk(conn, event, strlen(event));
}

/* The answer went out: the connection takes the next request. */
static void
http_conn_next(HttpConn *conn)
{
	if (conn->closed)
		return;
	http_conn_read_request(conn);
}

/* A message about the request, before its answer. */
static void
reply_message(Reply *reply, const gchar *json)
{
	if (reply->conn == NULL) {
		stdout_line(reply->server, json);
		return;
	}
	if (!reply->sse) {
		reply->sse = TRUE;
		http_sse_start(reply->conn);
	}
	http_sse_event(reply->conn, json);
}

static void
reply_free(Reply *reply)
{
	g_clear_handle_id(&reply->source, g_source_remove);
	if (reply->id != NULL)
		json_node_unref(reply->id);
	if (reply->progress_token != NULL)
		json_node_unref(reply->progress_token);
	if (reply->ping_answer != NULL)
		json_node_unref(reply->ping_answer);
	if (reply->unknown_answer != NULL)
		json_node_unref(reply->unknown_answer);
	g_free(reply->key);
	g_free(reply->ping_key);
	g_free(reply->elicit_key);
	if (reply->conn != NULL)
		http_conn_unref(reply->conn);
	g_free(reply);
}

static void
session_free(Session *session)
{
	if (session->get_conn != NULL) {
		g_io_stream_close(G_IO_STREAM(session->get_conn->connection), NULL, NULL);
		session->get_conn->closed = TRUE;
		http_conn_unref(session->get_conn);
	}
	g_free(session->id);
	g_free(session->protocol);
	g_free(session);
}

/* The last message: the answer. Frees @reply. */
static void
reply_send(Reply *reply, JsonNode *result, gint error_code, const gchar *error_message)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonNode) root = NULL;
	g_autofree gchar *text = NULL;

	json_builder_begin_object(b);
	json_builder_set_member_name(b, "jsonrpc");
	json_builder_add_string_value(b, "2.0");
	json_builder_set_member_name(b, "id");
	json_builder_add_value(b, json_node_copy(reply->id));
	if (result != NULL) {
		json_builder_set_member_name(b, "result");
		json_builder_add_value(b, json_node_copy(result));
	} else {
		json_builder_set_member_name(b, "error");
		json_builder_begin_object(b);
		json_builder_set_member_name(b, "code");
		json_builder_add_int_value(b, error_code);
		json_builder_set_member_name(b, "message");
		json_builder_add_string_value(b, error_message);
		json_builder_end_object(b);
	}
	json_builder_end_object(b);
	root = json_builder_get_root(b);
	text = node_to_string(root);
	if (reply->batch) {
		gchar *batch = g_strdup_printf(
		    "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":"
		    "{\"level\":\"info\",\"data\":\"in a batch\"}},%s]",
		    text);
		g_free(text);
		text = batch;
	}

	if (reply->conn == NULL) {
		stdout_line(reply->server, text);
	} else if (reply->sse) {
		http_sse_event(reply->conn, text);
		http_write(reply->conn, "0\r\n\r\n", 5);
		http_conn_next(reply->conn);
	} else {
		g_autofree gchar *session_header = NULL;
		if (reply->session != NULL)
			session_header =
			    g_strdup_printf("Mcp-Session-Id: %s\r\n", reply->session->id);
		http_respond(reply->conn, 200, "OK", session_header, "application/json", text);
		http_conn_next(reply->conn);
	}
	if (reply->forget_session && reply->session != NULL)
		g_hash_table_remove(reply->server->sessions, reply->session->id);
	reply_free(reply);
}

static JsonNode *
text_result(const gchar *text, gboolean is_error)
{
	g_autoptr(JsonBuilder) b = json_builder_new();
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "content");
	json_builder_begin_array(b);
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "type");
	json_builder_add_string_value(b, "text");
	json_builder_set_member_name(b, "text");
	json_builder_add_string_value(b, text);
	json_builder_end_object(b);
	json_builder_end_array(b);
	if (is_error) {
		json_builder_set_member_name(b, "isError");
		json_builder_add_boolean_value(b, TRUE);
	}
	json_builder_end_object(b);
	return json_builder_get_root(b);
}

static void
reply_text(Reply *reply, const gchar *text, gboolean is_error)
{
	g_autoptr(JsonNode) result = text_result(text, is_error);
	reply_send(reply, result, 0, NULL);
}

static void
send_notification(Reply *reply, const gchar *json)
{
	Session *session = reply->session;

	/* over HTTP, a GET stream if there is one, else the request's own */
	if (session != NULL && session->get_conn != NULL && !session->get_conn->closed) {
		http_sse_event(session->get_conn, json);
		return;
	}
	reply_message(reply, json);
}

/* ---------- tools ---------- */

typedef struct {
	const gchar *name;
	const gchar *description;
	const gchar *schema;
} Tool;

static const Tool tools[] = {
    {"echo",
     "Echoes its text",
     "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]"
     "}"},
    {"add",
     "Adds two numbers",
     "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},\"b\":{\"type\":\"number\"}}"
     ","
     "\"required\":[\"a\",\"b\"]}"},
    {"slow",
     "Answers after ms milliseconds",
     "{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\"}}}"},
    {"fail", "Always fails", "{\"type\":\"object\",\"additionalProperties\":false}"},
    {"huge",
     "A text of the given size",
     "{\"type\":\"object\",\"properties\":{\"bytes\":{\"type\":\"integer\"}}}"},
    {"progress",
     "Reports progress steps times, every ms milliseconds",
     "{\"type\":\"object\",\"properties\":{\"steps\":{\"type\":\"integer\"},\"ms\":{\"type\":"
     "\"integer\"}}}"},
    {"image", "A tiny PNG", "{\"type\":\"object\"}"},
    {"mixed", "Every kind of content part", "{\"type\":\"object\"}"},
    {"structured",
     "Structured content",
     "{\"type\":\"object\",\"properties\":{\"with_text\":{\"type\":\"boolean\"}}}"},
    {"die", "Exits without answering", "{\"type\":\"object\"}"},
    {"malformed", "Writes a line that is not JSON, then answers", "{\"type\":\"object\"}"},
    {"change_tools", "Adds the tool extra", "{\"type\":\"object\"}"},
    {"ask_client", "Pings the client and asks it something it cannot do", "{\"type\":\"object\"}"},
    {"forget_session", "Forgets the HTTP session after answering", "{\"type\":\"object\"}"},
    {"env", "Its environment", "{\"type\":\"object\"}"},
    {"batch", "Answers in a JSON-RPC batch, after a notification", "{\"type\":\"object\"}"},
    {"elicit",
     "Asks the client for a form (elicitation/create) and answers with its answer",
     "{\"type\":\"object\",\"properties\":{\"schema\":{\"type\":\"object\"}}}"},
    {"drop",
     "Cuts its SSE stream before answering; the answer comes on a GET with Last-Event-ID",
     "{\"type\":\"object\",\"properties\":{\"times\":{\"type\":\"integer\"},\"retry\":{"
     "\"type\":\"integer\"},\"clean\":{\"type\":\"boolean\"}}}"},
    {"extra", "Appears after change_tools", "{\"type\":\"object\"}"},
};

static guint
n_tools(Server *server)
{
	return G_N_ELEMENTS(tools) - (server->extra_tool ? 0 : 1);
}

static void
tools_list(Reply *reply, JsonObject *params)
{
	Server *server = reply->server;
	const gchar *cursor = NULL;
	guint start = 0, end, total = n_tools(server);
	g_autoptr(JsonBuilder) b = json_builder_new();
	g_autoptr(JsonNode) result = NULL;

	if (params != NULL && json_object_has_member(params, "cursor"))
		cursor = json_object_get_string_member(params, "cursor");
	if (cursor != NULL) {
		if (!g_str_has_prefix(cursor, "c") ||
		    (start = (guint)g_ascii_strtoull(cursor + 1, NULL, 10)) >= total) {
			reply_send(reply, NULL, -32602, "Invalid cursor");
			return;
		}
	}
	end = server->page_size > 0 ? MIN(total, start + server->page_size) : total;
	json_builder_begin_object(b);
	json_builder_set_member_name(b, "tools");
	json_builder_begin_array(b);
	for (guint i = start; i < end; i++) {
		g_autofree gchar *tool_name =
		    g_strconcat(server->tool_prefix != NULL ? server->tool_prefix : "",
				tools[i].name,
				NULL);
		json_builder_begin_object(b);
		json_builder_set_member_name(b, "name");
		json_builder_add_string_value(b, tool_name);
		json_builder_set_member_name(b, "description");
		json_builder_add_string_value(b, tools[i].description);
		json_builder_set_member_name(b, "inputSchema");
		json_builder_add_value(b, json_from_string(tools[i].schema, NULL));
		json_builder_end_object(b);
	}
	json_builder_end_array(b);
	if (end < total) {
		g_autofree gchar *next = g_strdup_printf("c%u", end);
		json_builder_set_member_name(b, "nextCursor");
		json_builder_add_string_value(b, next);
	}
	json_builder_end_object(b);
	result = json_builder_get_root(b);
	reply_send(reply, result, 0, NULL);
}

static gboolean
on_slow_done(gpointer user_data)
{
	Reply *reply = user_data;
	g_autofree gchar *text = g_strdup_printf("slept %d ms", reply->ms);

	reply->source = 0;
	g_hash_table_steal(reply->server->pending, reply->key);
	reply_text(reply, text, FALSE);
	return G_SOURCE_REMOVE;
}

static gboolean
on_progress_step(gpointer user_data)
{
	Reply *reply = user_data;

	reply->step++;
	if (reply->progress_token != NULL) {
		g_autoptr(JsonBuilder) b = json_builder_new();
		g_autoptr(JsonNode) root = NULL;
		g_autofree gchar *text = NULL;
		g_autofree gchar *message = g_strdup_printf("step %d", reply->step);

		json_builder_begin_object(b);
		json_builder_set_member_name(b, "jsonrpc");
		json_builder_add_string_value(b, "2.0");
		json_builder_set_member_name(b, "method");
		json_builder_add_string_value(b, "notifications/progress");
		json_builder_set_member_name(b, "params");
		json_builder_begin_object(b);
		json_builder_set_member_name(b, "progressToken");
		json_builder_add_value(b, json_node_copy(reply->progress_token));
		json_builder_set_member_name(b, "progress");
		json_builder_add_int_value(b, reply->step);
		json_builder_set_member_name(b, "total");
		json_builder_add_int_value(b, reply->steps);
		json_builder_set_member_name(b, "message");
		json_builder_add_string_value(b, message);
		json_builder_end_object(b);
		json_builder_end_object(b);
		root = json_builder_get_root(b);
		text = node_to_string(root);
		reply_message(reply, text);
	}
	if (reply->step < reply->steps)
		return G_SOURCE_CONTINUE;
	reply->source = 0;
	g_hash_table_steal(reply->server->pending, reply->key);
	reply_text(reply, "done", FALSE);
	return G_SOURCE_REMOVE;
}

static gint64
int_arg(JsonObject *args, const gchar *name, gint64 fallback)
{
	JsonNode *node = args != NULL ? json_object_get_member(args, name) : NULL;
	if (node == NULL || !JSON_NODE_HOLDS_VALUE(node))
		return fallback;
	return json_node_get_int(node);
}

static void
tool_image(Reply *reply)
{
	g_autoptr(JsonNode) result = json_from_string(
	    "{\"content\":[{\"type\":\"image\",\"data\":\"" PNG_1X1_BASE64 "\",\"mimeType\":"
	    "\"image/png\"}]}",
	    NULL);
	reply_send(reply, result, 0, NULL);
}

static void
tool_mixed(Reply *reply)
{
	g_autoptr(JsonNode) result = json_from_string(
	    "{\"content\":["
	    "{\"type\":\"text\",\"text\":\"first\"},"
	    "{\"type\":\"audio\",\"data\":\"AAAAAA==\",\"mimeType\":\"audio/wav\"},"
	    "{\"type\":\"resource_link\",\"uri\":\"file:///tmp/a.txt\",\"name\":\"a.txt\"},"
	    "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///tmp/b.txt\",\"mimeType\":"
	    "\"text/plain\",\"text\":\"inside b\"}},"
	    "{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///tmp/c.bin\",\"mimeType\":"
	    "\"application/octet-stream\",\"blob\":\"AAEC\"}},"
	    "{\"type\":\"text\",\"text\":\"last\",\"annotations\":{\"audience\":[\"user\"]}}"
	    "]}",
	    NULL);
	reply_send(reply, result, 0, NULL);
}

static void
tool_structured(Reply *reply, JsonObject *args)
{
	gboolean with_text = TRUE;
	const gchar *data = "{\"temperature\":22.5,\"conditions\":\"cloudy\"}";
	g_autofree gchar *text = NULL;
	g_autoptr(JsonNode) result = NULL;

	if (args != NULL && json_object_has_member(args, "with_text"))
		with_text = json_object_get_boolean_member(args, "with_text");
	if (with_text) {
		/* the same object, spelled differently */
		text = g_strdup_printf(
		    "{\"content\":[{\"type\":\"text\",\"text\":\"{\\\"conditions\\\":"
		    " \\\"cloudy\\\", \\\"temperature\\\": 22.5}\"}],"
		    "\"structuredContent\":%s}",
		    data);
	} else {
		text = g_strdup_printf("{\"content\":[],\"structuredContent\":%s}", data);
	}
	result = json_from_string(text, NULL);
	reply_send(reply, result, 0, NULL);
}

static gchar *
own_request(Server *server, const gchar *method, gchar **key)
{
	guint id = ++server->next_own_id;
	*key = g_strdup_printf("\"srv-%u\"", id);
	return g_strdup_printf("{\"jsonrpc\":\"2.0\",\"id\":\"srv-%u\",\"method\":\"%s\"}",
			       id,
			       method);
}

static void
tool_ask_client(Reply *reply)
{
	Server *server = reply->server;
	g_autofree gchar *ping_key = NULL;
	g_autofree gchar *other_key = NULL;
	g_autofree gchar *ping = own_request(server, "ping", &ping_key);
	g_autofree gchar *other = own_request(server, "sampling/createMessage", &other_key);

	g_free(reply->ping_key);
	reply->ping_key = g_strdup(ping_key);
	g_hash_table_insert(server->asking, g_steal_pointer(&ping_key), reply);
	g_hash_table_insert(server->asking, g_steal_pointer(&other_key), reply);
	reply_message(reply, ping);
	reply_message(reply, other);
}

#define ELICIT_SCHEMA                                                                              \
	"{\"type\":\"object\",\"properties\":{"                                                    \
	"\"name\":{\"type\":\"string\",\"default\":\"John Doe\"},"                                 \
	"\"age\":{\"type\":\"integer\",\"minimum\":0,\"default\":30},"                             \
	"\"score\":{\"type\":\"number\",\"default\":95.5},"                                        \
	"\"status\":{\"type\":\"string\",\"enum\":[\"active\",\"inactive\"],\"default\":"          \
	"\"active\"},"                                                                             \
	"\"verified\":{\"type\":\"boolean\",\"default\":true},"                                    \
	"\"email\":{\"type\":\"string\",\"format\":\"email\"}},"                                   \
	"\"required\":[\"email\"]}"

/* elicitation/create to the client; the answer is the tool's text. */
static void
tool_elicit(Reply *reply, JsonObject *args)
{
	Server *server = reply->server;
	JsonNode *schema = args != NULL ? json_object_get_member(args, "schema") : NULL;
	g_autofree gchar *schema_text = schema != NULL ? node_to_string(schema) : NULL;
	guint id = ++server->next_own_id;
	g_autofree gchar *request = g_strdup_printf(
	    "{\"jsonrpc\":\"2.0\",\"id\":\"srv-%u\",\"method\":\"elicitation/create\","
	    "\"params\":{\"message\":\"Who are you?\",\"requestedSchema\":%s}}",
	    id,
	    schema_text != NULL ? schema_text : ELICIT_SCHEMA);

	g_free(reply->elicit_key);
	reply->elicit_key = g_strdup_printf("\"srv-%u\"", id);
	g_hash_table_insert(server->asking, g_strdup(reply->elicit_key), reply);
	reply_message(reply, request);
}

/* An answer from the client to one of our requests. */
static void
client_answered(Server *server, const gchar *key, JsonObject *message)
{
	Reply *reply = g_hash_table_lookup(server->asking, key);
	g_autofree gchar *ping = NULL;
	g_autofree gchar *other = NULL;
	g_autofree gchar *text = NULL;

	if (reply == NULL)
		return;
	if (g_strcmp0(key, reply->elicit_key) == 0) {
		JsonNode *answer = json_object_get_member(message, "result") != NULL
				       ? json_object_get_member(message, "result")
				       : json_object_get_member(message, "error");
		g_autofree gchar *answer_text = answer != NULL ? node_to_string(answer) : NULL;
		g_hash_table_remove(server->asking, key);
		reply_text(reply, answer_text != NULL ? answer_text : "no answer", FALSE);
		return;
	}
	/* over HTTP each answer is a POST of its own: they may come in either
	 * order */
	if (g_strcmp0(key, reply->ping_key) == 0)
		reply->ping_answer =
		    json_node_copy(json_object_get_member(message, "result") != NULL
				       ? json_object_get_member(message, "result")
				       : json_object_get_member(message, "error"));
	else
		reply->unknown_answer =
		    json_node_copy(json_object_get_member(message, "error") != NULL
				       ? json_object_get_member(message, "error")
				       : json_object_get_member(message, "result"));
	g_hash_table_remove(server->asking, key);
	if (reply->ping_answer == NULL || reply->unknown_answer == NULL)
		return;
	ping = node_to_string(reply->ping_answer);
	other = node_to_string(reply->unknown_answer);
	text = g_strdup_printf("ping: %s; other: %s", ping, other);
	reply_text(reply, text, FALSE);
}

static gint
compare_strings(const void *a, const void *b)
{
	return strcmp(*(const gchar *const *)a, *(const gchar *const *)b);
}

/* Cuts the SSE stream of @reply after an event with an id and retry:, and
 * keeps the reply for a GET with that Last-Event-ID. */
static void
drop_stream(Reply *reply)
{
	Server *server = reply->server;
	HttpConn *conn = reply->conn;
	gchar *event_id = g_strdup_printf("drop-%u", ++server->next_event_id);
	g_autofree gchar *event =
	    g_strdup_printf("id: %s\nretry: %d\ndata: \n\n", event_id, reply->retry_ms);

	if (!reply->sse) {
		reply->sse = TRUE;
		http_sse_start(conn);
	}
	http_chunk(conn, event, strlen(event));
	reply->drops--;
	reply->conn = NULL;
	reply->dropped_at = g_get_monotonic_time();
	g_hash_table_insert(server->dropped, event_id, reply);
	if (reply->drop_clean) {
		/* the stream ends as streams do, the connection is reused */
		http_write(conn, "0\r\n\r\n", 5);
		http_conn_next(conn);
	} else {
		conn->closed = TRUE;
		g_io_stream_close(G_IO_STREAM(conn->connection), NULL, NULL);
	}
	http_conn_unref(conn);
}

static void
tools_call(Reply *reply, JsonObject *params)
{
	Server *server = reply->server;
	const gchar *name = NULL;
	JsonObject *args = NULL;
	JsonObject *meta = NULL;

	if (params != NULL && json_object_has_member(params, "name"))
		name = json_object_get_string_member(params, "name");
	if (params != NULL && json_object_has_member(params, "arguments"))
		args = json_object_get_object_member(params, "arguments");
	if (params != NULL && json_object_has_member(params, "_meta"))
		meta = json_object_get_object_member(params, "_meta");
	if (meta != NULL && json_object_has_member(meta, "progressToken"))
		reply->progress_token =
		    json_node_copy(json_object_get_member(meta, "progressToken"));
	if (name == NULL) {
		reply_send(reply, NULL, -32602, "Missing tool name");
		return;
	}
	if (server->tool_prefix != NULL) {
		if (!g_str_has_prefix(name, server->tool_prefix)) {
			reply_send(reply, NULL, -32602, "Unknown tool");
			return;
		}
		name += strlen(server->tool_prefix);
	}
	noise(server, "calling %s", name);

	if (strcmp(name, "echo") == 0) {
		const gchar *text = args != NULL && json_object_has_member(args, "text")
					? json_object_get_string_member(args, "text")
					: "";
		reply_text(reply, text, FALSE);
	} else if (strcmp(name, "add") == 0) {
		gdouble a = args != NULL ? json_object_get_double_member(args, "a") : 0;
		gdouble b = args != NULL ? json_object_get_double_member(args, "b") : 0;
		gchar buf[G_ASCII_DTOSTR_BUF_SIZE];
		reply_text(reply, g_ascii_formatd(buf, sizeof buf, "%g", a + b), FALSE);
	} else if (strcmp(name, "slow") == 0) {
		reply->ms = (gint)int_arg(args, "ms", 1000);
		g_hash_table_insert(server->pending, g_strdup(reply->key), reply);
		reply->source = g_timeout_add(reply->ms, on_slow_done, reply);
	} else if (strcmp(name, "fail") == 0) {
		reply_text(reply, "this tool failed", TRUE);
	} else if (strcmp(name, "huge") == 0) {
		gsize bytes = (gsize)int_arg(args, "bytes", 100000);
		g_autofree gchar *text = g_malloc(bytes + 1);
		memset(text, 'x', bytes);
		text[bytes] = '\0';
		reply_text(reply, text, FALSE);
	} else if (strcmp(name, "progress") == 0) {
		reply->steps = (gint)int_arg(args, "steps", 3);
		reply->ms = (gint)int_arg(args, "ms", 50);
		if (reply->steps <= 0) {
			reply_text(reply, "done", FALSE);
			return;
		}
		/* over HTTP this one answers as an event stream */
		if (reply->conn != NULL) {
			reply->sse = TRUE;
			http_sse_start(reply->conn);
		}
		g_hash_table_insert(server->pending, g_strdup(reply->key), reply);
		reply->source = g_timeout_add(reply->ms, on_progress_step, reply);
	} else if (strcmp(name, "image") == 0) {
		tool_image(reply);
	} else if (strcmp(name, "mixed") == 0) {
		tool_mixed(reply);
	} else if (strcmp(name, "structured") == 0) {
		tool_structured(reply, args);
	} else if (strcmp(name, "die") == 0) {
		exit(1);
	} else if (strcmp(name, "malformed") == 0) {
		reply_message(reply, "this is not JSON {");
		reply_text(reply, "answered anyway", FALSE);
	} else if (strcmp(name, "change_tools") == 0) {
		server->extra_tool = TRUE;
		send_notification(
		    reply,
		    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}");
		reply_text(reply, "changed", FALSE);
	} else if (strcmp(name, "ask_client") == 0) {
		tool_ask_client(reply);
	} else if (strcmp(name, "drop") == 0) {
		if (reply->conn == NULL) {
			reply_text(reply, "nothing to drop over stdio", FALSE);
			return;
		}
		reply->drops = (gint)int_arg(args, "times", 1);
		reply->retry_ms = (gint)int_arg(args, "retry", 200);
		reply->drop_clean = args == NULL || !json_object_has_member(args, "clean") ||
				    json_object_get_boolean_member(args, "clean");
		drop_stream(reply);
	} else if (strcmp(name, "elicit") == 0) {
		tool_elicit(reply, args);
	} else if (strcmp(name, "batch") == 0) {
		reply->batch = TRUE;
		reply_text(reply, "batched", FALSE);
	} else if (strcmp(name, "forget_session") == 0) {
		reply->forget_session = TRUE;
		reply_text(reply, "forgotten", FALSE);
	} else if (strcmp(name, "env") == 0) {
		g_auto(GStrv) env = g_get_environ();
		g_autofree gchar *text = NULL;
		qsort(env, g_strv_length(env), sizeof(gchar *), compare_strings);
		text = g_strjoinv("\n", env);
		reply_text(reply, text, FALSE);
	} else if (strcmp(name, "extra") == 0 && server->extra_tool) {
		reply_text(reply, "extra", FALSE);
	} else {
		g_autofree gchar *message = g_strdup_printf("Unknown tool: %s", name);
		reply_send(reply, NULL, -32602, message);
	}
}

static const gchar *
negotiate(Server *server, JsonObject *params)
{
	const gchar *asked = NULL;
	if (server->protocol != NULL)
		return server->protocol;
	if (params != NULL && json_object_has_member(params, "protocolVersion"))
		asked = json_object_get_string_member(params, "protocolVersion");
	if (g_strcmp0(asked, "2025-06-18") == 0 || g_strcmp0(asked, "2025-11-25") == 0)
		return asked;
	return "2025-11-25";
}

static void
initialize(Reply *reply, JsonObject *params)
{
	const gchar *version = negotiate(reply->server, params);
	g_autofree gchar *text = g_strdup_printf(
	    "{\"protocolVersion\":\"%s\",\"capabilities\":%s,"
	    "\"serverInfo\":{\"name\":\"fake-mcp-server\",\"version\":\"1.0\"},"
	    "\"instructions\":\"A scripted server for tests.\"}",
	    version,
	    reply->server->capabilities != NULL ? reply->server->capabilities
						: "{\"tools\":{\"listChanged\":true}}");
	g_autoptr(JsonNode) result = json_from_string(text, NULL);

	if (reply->session != NULL) {
		g_free(reply->session->protocol);
		reply->session->protocol = g_strdup(version);
	}
	reply_send(reply, result, 0, NULL);
}

static void
cancelled(Server *server, JsonObject *params)
{
	JsonNode *id = params != NULL ? json_object_get_member(params, "requestId") : NULL;
	g_autofree gchar *key = NULL;
	Reply *reply;

	if (id == NULL)
		return;
	key = node_to_string(id);
	reply = g_hash_table_lookup(server->pending, key);
	if (reply == NULL)
		return;
	noise(server, "cancelled %s", key);
	g_hash_table_steal(server->pending, key);
	/* never answered; over HTTP the exchange is dropped */
	if (reply->conn != NULL) {
		reply->conn->closed = TRUE;
		g_io_stream_close(G_IO_STREAM(reply->conn->connection), NULL, NULL);
	}
	reply_free(reply);
}

/* One message from the client. Over HTTP, @conn is the exchange it came on
 * and @session its session; returns TRUE if a Reply took the exchange. */
static gboolean
handle_message(Server *server, const gchar *text, HttpConn *conn, Session *session)
{
	g_autoptr(JsonParser) parser = json_parser_new();
	JsonObject *message;
	JsonObject *params = NULL;
	const gchar *method = NULL;
	JsonNode *id;
	Reply *reply;

	if (server->record != NULL) {
		g_autofree gchar *line = g_strdup(text);
		g_strdelimit(line, "\r\n", ' ');
		fprintf(server->record, "%s\n", line);
		fflush(server->record);
	}
	if (!json_parser_load_from_data(parser, text, -1, NULL) ||
	    !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
		noise(server, "not JSON: %.40s", text);
		return FALSE;
	}
	message = json_node_get_object(json_parser_get_root(parser));
	id = json_object_get_member(message, "id");
	if (json_object_has_member(message, "method"))
		method = json_object_get_string_member(message, "method");
	if (json_object_has_member(message, "params") &&
	    JSON_NODE_HOLDS_OBJECT(json_object_get_member(message, "params")))
		params = json_object_get_object_member(message, "params");

	if (method == NULL) {
		/* an answer to one of our requests */
		if (id != NULL) {
			g_autofree gchar *key = node_to_string(id);
			client_answered(server, key, message);
		}
		return FALSE;
	}
	if (id == NULL) {
		noise(server, "notification %s", method);
		if (strcmp(method, "notifications/cancelled") == 0)
			cancelled(server, params);
		return FALSE;
	}

	server->n_requests++;
	if (server->crash_after >= 0 && server->n_requests > server->crash_after) {
		noise(server, "crashing as told");
		exit(2);
	}
	noise(server, "request %s", method);
	reply = g_new0(Reply, 1);
	reply->server = server;
	reply->id = json_node_copy(id);
	reply->key = node_to_string(id);
	reply->conn = conn != NULL ? http_conn_ref(conn) : NULL;
	reply->session = session;
	if (strcmp(method, "initialize") == 0)
		initialize(reply, params);
	else if (strcmp(method, "tools/list") == 0 && server->capabilities != NULL &&
		 strstr(server->capabilities, "\"tools\"") == NULL)
		reply_send(reply, NULL, -32601, "Method not found");
	else if (strcmp(method, "tools/list") == 0)
		tools_list(reply, params);
	else if (strcmp(method, "tools/call") == 0)
		tools_call(reply, params);
	else if (strcmp(method, "ping") == 0)
		reply_send(reply, json_from_string("{}", NULL), 0, NULL);
	else
		reply_send(reply, NULL, -32601, "Method not found");
	return TRUE;
}

/* ---------- stdio ---------- */

static void
on_stdin_line(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Server *server = user_data;
	gsize len;
	g_autofree gchar *line =
	    g_data_input_stream_read_line_finish(G_DATA_INPUT_STREAM(source), result, &len, NULL);

	if (line == NULL) {
		/* a stubborn server outlives its input too */
		if (!server->ignore_term)
			g_main_loop_quit(server->loop);
		return;
	}
	if (len > 0)
		handle_message(server, line, NULL, NULL);
	g_data_input_stream_read_line_async(server->stdin_data,
					    G_PRIORITY_DEFAULT,
					    NULL,
					    on_stdin_line,
					    server);
}

/* ---------- HTTP ---------- */

static void
http_conn_unref(HttpConn *conn)
{
	if (--conn->ref_count > 0)
		return;
	if (!conn->closed)
		g_io_stream_close(G_IO_STREAM(conn->connection), NULL, NULL);
	g_object_unref(conn->in);
	g_object_unref(conn->connection);
	g_hash_table_unref(conn->headers);
	g_free(conn->method);
	g_free(conn->path);
	g_free(conn->body);
	g_free(conn);
}

static gboolean
header_matches(HttpConn *conn, const gchar *required)
{
	g_auto(GStrv) parts = g_strsplit(required, ":", 2);
	g_autofree gchar *name = NULL;
	const gchar *value;

	if (parts[0] == NULL || parts[1] == NULL)
		return FALSE;
	name = g_ascii_strdown(g_strstrip(parts[0]), -1);
	value = g_hash_table_lookup(conn->headers, name);
	return value != NULL && strcmp(value, g_strstrip(parts[1])) == 0;
}

/* A GET with Last-Event-ID: the rest of a stream drop cut. */
static void
http_resume(HttpConn *conn)
{
	Server *server = conn->server;
	const gchar *last = g_hash_table_lookup(conn->headers, "last-event-id");
	Reply *reply = g_hash_table_lookup(server->dropped, last);

	if (server->record != NULL) {
		fprintf(server->record, "{\"_http\":\"RESUME\",\"last_event_id\":\"%s\"}\n", last);
		fflush(server->record);
	}
	if (reply == NULL) {
		http_respond(conn, 404, "Not Found", NULL, "text/plain", "no such event");
		http_conn_next(conn);
		return;
	}
	if (g_get_monotonic_time() - reply->dropped_at < (gint64)reply->retry_ms * 1000) {
		http_respond(conn, 400, "Bad Request", NULL, "text/plain", "resumed before retry");
		http_conn_next(conn);
		return;
	}
	g_hash_table_remove(server->dropped, last);
	reply->conn = http_conn_ref(conn);
	reply->sse = FALSE;
	if (reply->drops > 0) {
		drop_stream(reply);
		return;
	}
	reply->sse = TRUE;
	http_sse_start(conn);
	reply_text(reply, "resumed", FALSE);
}

/* ---------- --oauth: an authorization server of its own ---------- */

static gchar *
oauth_origin(HttpConn *conn)
{
	const gchar *host = g_hash_table_lookup(conn->headers, "host");
	return g_strdup_printf("http://%s", host != NULL ? host : "127.0.0.1");
}

static void
oauth_json(HttpConn *conn, guint status, const gchar *body)
{
	http_respond(conn,
		     status,
		     status == 200   ? "OK"
		     : status == 201 ? "Created"
				     : "Error",
		     NULL,
		     "application/json",
		     body);
	http_conn_next(conn);
}

static void
oauth_metadata(HttpConn *conn)
{
	Server *server = conn->server;
	g_autofree gchar *origin = oauth_origin(conn);
	g_autofree gchar *body = NULL;

	if (g_strcmp0(server->oauth, "bad-metadata") == 0) {
		oauth_json(conn, 200, "{\"issuer\": not json");
		return;
	}
	body = g_strdup_printf(
	    "{\"issuer\":\"%s\",\"authorization_endpoint\":\"%s/authorize\","
	    "\"token_endpoint\":\"%s/token\",\"registration_endpoint\":\"%s/register\","
	    "\"code_challenge_methods_supported\":[\"S256\"],"
	    "\"token_endpoint_auth_methods_supported\":[\"client_secret_post\",\"none\"],"
	    "\"scopes_supported\":[\"mcp\"]}",
	    g_strcmp0(server->oauth, "issuer-mismatch") == 0 ? "http://127.0.0.1:1/other" : origin,
	    origin,
	    origin,
	    origin);
	oauth_json(conn, 200, body);
}

static void
oauth_authorize(HttpConn *conn, const gchar *query)
{
	Server *server = conn->server;
	g_autoptr(GHashTable) params =
	    g_uri_parse_params(query != NULL ? query : "", -1, "&", G_URI_PARAMS_NONE, NULL);
	const gchar *redirect = params != NULL ? g_hash_table_lookup(params, "redirect_uri") : NULL;
	const gchar *challenge = params != NULL ? g_hash_table_lookup(params, "code_challenge")
						: NULL;
	g_autofree gchar *code = g_strdup_printf("code-%u", ++server->oauth_next);
	g_autofree gchar *state = NULL;
	g_autofree gchar *location = NULL;

	if (redirect == NULL || challenge == NULL ||
	    g_strcmp0(g_hash_table_lookup(params, "code_challenge_method"), "S256") != 0 ||
	    g_hash_table_lookup(params, "resource") == NULL) {
		http_respond(conn,
			     400,
			     "Bad Request",
			     NULL,
			     "text/plain",
			     "bad authorization request");
		http_conn_next(conn);
		return;
	}
	g_hash_table_insert(server->oauth_codes, g_strdup(code), g_strdup(challenge));
	if (g_hash_table_lookup(params, "scope") != NULL)
		g_hash_table_insert(server->oauth_scopes,
				    g_strdup(code),
				    g_strdup(g_hash_table_lookup(params, "scope")));
	state = g_uri_escape_string(g_hash_table_lookup(params, "state"), NULL, FALSE);
	location = g_strdup_printf("Location: %s%scode=%s&state=%s\r\n",
				   redirect,
				   strchr(redirect, '?') != NULL ? "&" : "?",
				   code,
				   state);
	http_respond(conn, 302, "Found", location, NULL, NULL);
	http_conn_next(conn);
}

static gchar *
oauth_issue(Server *server, gboolean with_refresh, const gchar *scope)
{
	g_autofree gchar *access = g_strdup_printf("tok-%u", ++server->oauth_next);
	g_autofree gchar *refresh = g_strdup_printf("ref-%u", ++server->oauth_next);
	gboolean expiring = g_strcmp0(server->oauth, "expiring") == 0;

	g_hash_table_insert(server->oauth_tokens, g_strdup(access), g_strdup("access"));
	if (scope != NULL)
		g_hash_table_insert(server->oauth_scopes, g_strdup(access), g_strdup(scope));
	if (with_refresh)
		g_hash_table_insert(server->oauth_tokens, g_strdup(refresh), g_strdup("refresh"));
	return g_strdup_printf("{\"access_token\":\"%s\",\"token_type\":\"Bearer\","
			       "\"expires_in\":%d%s%s%s}",
			       access,
			       expiring ? 1 : 3600,
			       with_refresh ? ",\"refresh_token\":\"" : "",
			       with_refresh ? refresh : "",
			       with_refresh ? "\"" : "");
}

static gboolean
oauth_code_ok(Server *server, GHashTable *form)
{
	const gchar *code = g_hash_table_lookup(form, "code");
	const gchar *verifier = g_hash_table_lookup(form, "code_verifier");
	const gchar *challenge = code != NULL ? g_hash_table_lookup(server->oauth_codes, code)
					      : NULL;
	g_autoptr(GChecksum) sha = g_checksum_new(G_CHECKSUM_SHA256);
	guint8 digest[32];
	gsize len = sizeof digest;
	g_autofree gchar *computed = NULL;

	if (challenge == NULL || verifier == NULL)
		return FALSE;
	g_checksum_update(sha, (const guchar *)verifier, strlen(verifier));
	g_checksum_get_digest(sha, digest, &len);
	computed = g_base64_encode(digest, len);
	g_strdelimit(computed, "+", '-');
	g_strdelimit(computed, "/", '_');
	g_strdelimit(computed, "=", '\0');
	if (strcmp(computed, challenge) != 0)
		return FALSE;
	g_hash_table_remove(server->oauth_codes, code);
	return TRUE;
}

static void
oauth_token(HttpConn *conn)
{
	Server *server = conn->server;
	g_autoptr(GHashTable) form = g_uri_parse_params(conn->body != NULL ? conn->body : "",
							-1,
							"&",
							G_URI_PARAMS_NONE,
							NULL);
	const gchar *grant = form != NULL ? g_hash_table_lookup(form, "grant_type") : NULL;
	const gchar *refresh = form != NULL ? g_hash_table_lookup(form, "refresh_token") : NULL;
	g_autofree gchar *body = NULL;

	if (server->record != NULL) {
		fprintf(server->record,
			"{\"_oauth\":\"token\",\"grant_type\":\"%s\",\"resource\":\"%s\"}\n",
			grant != NULL ? grant : "",
			form != NULL && g_hash_table_lookup(form, "resource") != NULL
			    ? (const gchar *)g_hash_table_lookup(form, "resource")
			    : "");
		fflush(server->record);
	}
	if (g_strcmp0(server->oauth, "token-400") == 0 || form == NULL ||
	    g_hash_table_lookup(form, "resource") == NULL) {
		oauth_json(conn, 400, "{\"error\":\"invalid_grant\",\"error_description\":\"no\"}");
		return;
	}
	if (g_strcmp0(server->oauth, "token-401") == 0) {
		oauth_json(conn, 401, "{\"error\":\"invalid_client\"}");
		return;
	}
	if (g_strcmp0(grant, "authorization_code") == 0 && oauth_code_ok(server, form))
		body = oauth_issue(
		    server,
		    TRUE,
		    g_hash_table_lookup(server->oauth_scopes,
					(const gchar *)g_hash_table_lookup(form, "code")));
	else if (g_strcmp0(grant, "client_credentials") == 0)
		body = oauth_issue(server, FALSE, g_hash_table_lookup(form, "scope"));
	else if (g_strcmp0(grant, "refresh_token") == 0 && refresh != NULL &&
		 g_strcmp0(g_hash_table_lookup(server->oauth_tokens, refresh), "refresh") == 0)
		body = oauth_issue(server, TRUE, NULL);
	if (body == NULL) {
		oauth_json(conn, 400, "{\"error\":\"invalid_grant\"}");
		return;
	}
	oauth_json(conn, 200, body);
}

/* --oauth step-up: tools/call wants "write"; TRUE when answered 403. */
static gboolean
oauth_step_up(HttpConn *conn, const gchar *token)
{
	Server *server = conn->server;
	const gchar *scope = g_hash_table_lookup(server->oauth_scopes, token);
	g_auto(GStrv) scopes = g_strsplit(scope != NULL ? scope : "", " ", -1);
	g_autofree gchar *origin = NULL;
	g_autofree gchar *challenge = NULL;

	if (g_strcmp0(server->oauth, "step-up") != 0 || conn->body == NULL ||
	    strstr(conn->body, "\"tools/call\"") == NULL ||
	    g_strv_contains((const gchar *const *)scopes, "write"))
		return FALSE;
	origin = oauth_origin(conn);
	challenge = g_strdup_printf("WWW-Authenticate: Bearer error=\"insufficient_scope\", "
				    "scope=\"mcp write\", resource_metadata=\"%s/.well-known/"
				    "oauth-protected-resource/mcp\"\r\n",
				    origin);
	http_respond(conn,
		     403,
		     "Forbidden",
		     challenge,
		     "application/json",
		     "{\"error\":\"insufficient_scope\"}");
	http_conn_next(conn);
	return TRUE;
}

/* The OAuth side of --oauth; FALSE for /mcp with a good token. */
static gboolean
oauth_handle(HttpConn *conn)
{
	Server *server = conn->server;
	g_auto(GStrv) split = g_strsplit(conn->path, "?", 2);
	const gchar *path = split[0];
	const gchar *authorization = g_hash_table_lookup(conn->headers, "authorization");
	g_autofree gchar *origin = oauth_origin(conn);
	g_autofree gchar *challenge = NULL;

	if (strcmp(path, "/.well-known/oauth-protected-resource/mcp") == 0) {
		g_autofree gchar *body =
		    g_strdup_printf("{\"resource\":\"%s/mcp\",\"authorization_servers\":[\"%s\"]}",
				    origin,
				    origin);
		oauth_json(conn, 200, body);
	} else if (strcmp(path, "/.well-known/oauth-authorization-server") == 0) {
		oauth_metadata(conn);
	} else if (strcmp(path, "/register") == 0) {
		if (g_strcmp0(server->oauth, "register-refused") == 0)
			oauth_json(conn, 400, "{\"error\":\"invalid_client_metadata\"}");
		else
			oauth_json(conn, 201, "{\"client_id\":\"dcr-client\"}");
	} else if (strcmp(path, "/authorize") == 0) {
		oauth_authorize(conn, split[1]);
	} else if (strcmp(path, "/token") == 0) {
		oauth_token(conn);
	} else if (authorization != NULL && g_str_has_prefix(authorization, "Bearer ") &&
		   g_strcmp0(g_hash_table_lookup(server->oauth_tokens, authorization + 7),
			     "access") == 0) {
		return oauth_step_up(conn, authorization + 7);
	} else {
		challenge = g_strdup_printf("WWW-Authenticate: Bearer resource_metadata=\"%s/.well-"
					    "known/oauth-protected-resource/mcp\"\r\n",
					    origin);
		http_respond(conn,
			     401,
			     "Unauthorized",
			     challenge,
			     "application/json",
			     "{\"error\":\"invalid_token\"}");
		http_conn_next(conn);
	}
	return TRUE;
}

static void
http_handle(HttpConn *conn)
{
	Server *server = conn->server;
	const gchar *accept = g_hash_table_lookup(conn->headers, "accept");
	const gchar *session_id = g_hash_table_lookup(conn->headers, "mcp-session-id");
	const gchar *version = g_hash_table_lookup(conn->headers, "mcp-protocol-version");
	Session *session = NULL;
	gboolean is_initialize = FALSE;

	if (server->oauth != NULL && oauth_handle(conn))
		return;
	for (guint i = 0; server->required_headers != NULL && server->required_headers[i]; i++) {
		if (!header_matches(conn, server->required_headers[i])) {
			g_autoptr(JsonNode) parsed =
			    server->error_body != NULL ? json_from_string(server->error_body, NULL)
						       : NULL;
			http_respond(conn,
				     401,
				     "Unauthorized",
				     NULL,
				     server->error_body == NULL ? NULL
				     : parsed != NULL		? "application/json"
								: "text/plain",
				     server->error_body);
			http_conn_next(conn);
			return;
		}
	}
	if (strcmp(conn->path, "/mcp") != 0) {
		http_respond(conn, 404, "Not Found", NULL, NULL, NULL);
		http_conn_next(conn);
		return;
	}
	if (strcmp(conn->method, "POST") == 0 && conn->body != NULL) {
		g_autoptr(JsonNode) node = json_from_string(conn->body, NULL);
		if (node != NULL && JSON_NODE_HOLDS_OBJECT(node)) {
			JsonObject *object = json_node_get_object(node);
			is_initialize = json_object_has_member(object, "method") &&
					g_strcmp0(json_object_get_string_member(object, "method"),
						  "initialize") == 0;
		}
	}
	if (session_id != NULL) {
		session = g_hash_table_lookup(server->sessions, session_id);
		if (session == NULL) {
			if (server->record != NULL) {
				fprintf(server->record, "{\"_http\":\"404\"}\n");
				fflush(server->record);
			}
			http_respond(conn, 404, "Not Found", NULL, NULL, NULL);
			http_conn_next(conn);
			return;
		}
	} else if (!is_initialize) {
		http_respond(conn, 400, "Bad Request", NULL, NULL, NULL);
		http_conn_next(conn);
		return;
	}
	if (session != NULL && !is_initialize && g_strcmp0(session->protocol, "2025-03-26") == 0 &&
	    version != NULL) {
		/* that version has no such header: a strict server of it refuses */
		http_respond(conn,
			     400,
			     "Bad Request",
			     NULL,
			     "text/plain",
			     "MCP-Protocol-Version is not a 2025-03-26 header");
		http_conn_next(conn);
		return;
	}
	if (session != NULL && !is_initialize && g_strcmp0(session->protocol, "2025-03-26") != 0 &&
	    g_strcmp0(version, session->protocol) != 0) {
		http_respond(conn,
			     400,
			     "Bad Request",
			     NULL,
			     "text/plain",
			     "missing or wrong MCP-Protocol-Version");
		http_conn_next(conn);
		return;
	}

	if (strcmp(conn->method, "DELETE") == 0) {
		if (server->record != NULL) {
			fprintf(server->record, "{\"_http\":\"DELETE\"}\n");
			fflush(server->record);
		}
		g_hash_table_remove(server->sessions, session_id);
		http_respond(conn, 200, "OK", NULL, NULL, NULL);
		http_conn_next(conn);
		return;
	}
	if (strcmp(conn->method, "GET") == 0 && session != NULL &&
	    g_hash_table_lookup(conn->headers, "last-event-id") != NULL) {
		http_resume(conn);
		return;
	}
	if (strcmp(conn->method, "GET") == 0) {
		if (!server->get_stream || session == NULL) {
			http_respond(conn, 405, "Method Not Allowed", NULL, NULL, NULL);
			http_conn_next(conn);
			return;
		}
		if (session->get_conn != NULL)
			http_conn_unref(session->get_conn);
		session->get_conn = http_conn_ref(conn);
		http_sse_start(conn);
		/* held until the session ends; reads nothing more */
		return;
	}
	if (strcmp(conn->method, "POST") != 0) {
		http_respond(conn, 405, "Method Not Allowed", NULL, NULL, NULL);
		http_conn_next(conn);
		return;
	}
	if (accept == NULL || strstr(accept, "application/json") == NULL ||
	    strstr(accept, "text/event-stream") == NULL) {
		http_respond(conn, 406, "Not Acceptable", NULL, NULL, NULL);
		http_conn_next(conn);
		return;
	}
	if (is_initialize) {
		session = g_new0(Session, 1);
		session->id = g_uuid_string_random();
		g_hash_table_insert(server->sessions, session->id, session);
	}
	if (!handle_message(server, conn->body != NULL ? conn->body : "", conn, session)) {
		/* a notification or an answer */
		http_respond(conn, 202, "Accepted", NULL, NULL, NULL);
		http_conn_next(conn);
	}
}

static void
on_body_read(GObject *source, GAsyncResult *result, gpointer user_data)
{
	HttpConn *conn = user_data;
	gsize read = 0;

	if (!g_input_stream_read_all_finish(G_INPUT_STREAM(source), result, &read, NULL)) {
		conn->closed = TRUE;
		http_conn_unref(conn);
		return;
	}
	http_handle(conn);
	http_conn_unref(conn);
}

static void
on_head_line(GObject *source, GAsyncResult *result, gpointer user_data)
{
	HttpConn *conn = user_data;
	gsize len;
	g_autofree gchar *line =
	    g_data_input_stream_read_line_finish(G_DATA_INPUT_STREAM(source), result, &len, NULL);

	if (line == NULL || conn->closed) {
		conn->closed = TRUE;
		http_conn_unref(conn);
		return;
	}
	g_strchomp(line);
	if (conn->method == NULL) {
		g_auto(GStrv) parts = g_strsplit(line, " ", 3);
		if (g_strv_length(parts) != 3) {
			conn->closed = TRUE;
			http_conn_unref(conn);
			return;
		}
		conn->method = g_strdup(parts[0]);
		conn->path = g_strdup(parts[1]);
	} else if (*line != '\0') {
		gchar *colon = strchr(line, ':');
		if (colon != NULL) {
			*colon = '\0';
			g_hash_table_insert(conn->headers,
					    g_ascii_strdown(line, -1),
					    g_strdup(g_strstrip(colon + 1)));
		}
	} else {
		const gchar *length = g_hash_table_lookup(conn->headers, "content-length");
		gsize body_len = length != NULL ? (gsize)g_ascii_strtoull(length, NULL, 10) : 0;
		if (body_len > 64 * 1024 * 1024) {
			conn->closed = TRUE;
			http_conn_unref(conn);
			return;
		}
		if (body_len > 0) {
			conn->body = g_malloc0(body_len + 1);
			g_input_stream_read_all_async(G_INPUT_STREAM(conn->in),
						      conn->body,
						      body_len,
						      G_PRIORITY_DEFAULT,
						      NULL,
						      on_body_read,
						      conn);
			return;
		}
		http_handle(conn);
		http_conn_unref(conn);
		return;
	}
	g_data_input_stream_read_line_async(conn->in, G_PRIORITY_DEFAULT, NULL, on_head_line, conn);
}

static void
http_conn_read_request(HttpConn *conn)
{
	g_clear_pointer(&conn->method, g_free);
	g_clear_pointer(&conn->path, g_free);
	g_clear_pointer(&conn->body, g_free);
	g_hash_table_remove_all(conn->headers);
	g_data_input_stream_read_line_async(conn->in,
					    G_PRIORITY_DEFAULT,
					    NULL,
					    on_head_line,
					    http_conn_ref(conn));
}

static gboolean
on_incoming(GSocketService *service,
	    GSocketConnection *connection,
	    GObject *source,
	    gpointer user_data)
{
	Server *server = user_data;
	HttpConn *conn = g_new0(HttpConn, 1);

	conn->ref_count = 1;
	conn->server = server;
	conn->connection = g_object_ref(connection);
	conn->in = g_data_input_stream_new(g_io_stream_get_input_stream(G_IO_STREAM(connection)));
	g_data_input_stream_set_newline_type(conn->in, G_DATA_STREAM_NEWLINE_TYPE_CR_LF);
	conn->out = g_io_stream_get_output_stream(G_IO_STREAM(connection));
	conn->headers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	http_conn_read_request(conn);
	http_conn_unref(conn);
	return TRUE;
}

static void
on_stdin_closed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Server *server = user_data;
	g_autoptr(GBytes) bytes =
	    g_input_stream_read_bytes_finish(G_INPUT_STREAM(source), result, NULL);

	if (bytes == NULL || g_bytes_get_size(bytes) == 0) {
		g_main_loop_quit(server->loop);
		return;
	}
	g_input_stream_read_bytes_async(G_INPUT_STREAM(source),
					4096,
					G_PRIORITY_DEFAULT,
					NULL,
					on_stdin_closed,
					server);
}

static gboolean
on_sigterm(gpointer user_data)
{
	Server *server = user_data;
	noise(server, "ignoring SIGTERM");
	return G_SOURCE_CONTINUE;
}

int
main(int argc, char **argv)
{
	Server server = {0};
	gint http_port = -1;
	gint page_size = 0;
	gint crash_after = -1;
	g_autofree gchar *record = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GInputStream) stdin_stream = NULL;
	GOptionEntry entries[] = {
	    {"http", 0, 0, G_OPTION_ARG_INT, &http_port, "Serve streamable HTTP on PORT", "PORT"},
	    {"page-size", 0, 0, G_OPTION_ARG_INT, &page_size, "Tools per tools/list page", "N"},
	    {"protocol", 0, 0, G_OPTION_ARG_STRING, &server.protocol, "Answer with VERSION", "V"},
	    {"crash-after", 0, 0, G_OPTION_ARG_INT, &crash_after, "Exit after N requests", "N"},
	    {"stderr-noise", 0, 0, G_OPTION_ARG_NONE, &server.stderr_noise, "Log to stderr", NULL},
	    {"record", 0, 0, G_OPTION_ARG_FILENAME, &record, "Append messages to FILE", "FILE"},
	    {"ignore-term", 0, 0, G_OPTION_ARG_NONE, &server.ignore_term, "Survive SIGTERM", NULL},
	    {"require-header",
	     0,
	     0,
	     G_OPTION_ARG_STRING_ARRAY,
	     &server.required_headers,
	     "HTTP: 401 without this header",
	     "'NAME: VALUE'"},
	    {"get-stream", 0, 0, G_OPTION_ARG_NONE, &server.get_stream, "HTTP: serve GET", NULL},
	    {"oauth", 0, 0, G_OPTION_ARG_STRING, &server.oauth, "HTTP: be an OAuth server", "MODE"},
	    {"capabilities",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &server.capabilities,
	     "The capabilities initialize declares (JSON)",
	     "JSON"},
	    {"error-body",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &server.error_body,
	     "HTTP: the body of a 401",
	     "BODY"},
	    {"tool-prefix",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &server.tool_prefix,
	     "Put P before every tool name",
	     "P"},
	    {NULL}};
	g_autoptr(GOptionContext) context = g_option_context_new("- a scripted MCP server");

	g_option_context_add_main_entries(context, entries, NULL);
	if (!g_option_context_parse(context, &argc, &argv, &error)) {
		g_printerr("fake-mcp-server: %s\n", error->message);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	server.page_size = page_size > 0 ? (guint)page_size : 0;
	server.crash_after = crash_after;
	server.loop = g_main_loop_new(NULL, FALSE);
	server.pending = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	server.asking = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	server.dropped = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	server.sessions =
	    g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)session_free);
	if (record != NULL) {
		server.record = fopen(record, "a");
		if (server.record == NULL) {
			g_printerr("fake-mcp-server: cannot open %s\n", record);
			return 1;
		}
	}
	if (server.ignore_term)
		g_unix_signal_add(SIGTERM, on_sigterm, &server);
	if (server.stderr_noise) {
		gchar *long_line = g_strnfill(10000, 'n');
		noise(&server, "starting");
		fprintf(stderr, "%s\n", long_line);
		g_free(long_line);
	}

	stdin_stream = g_unix_input_stream_new(0, FALSE);
	if (http_port >= 0) {
		g_autoptr(GInetAddress) loopback =
		    g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
		g_autoptr(GSocketAddress) address = g_inet_socket_address_new(loopback, http_port);
		g_autoptr(GSocketAddress) effective = NULL;

		server.oauth_codes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
		server.oauth_tokens =
		    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
		server.oauth_scopes =
		    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
		server.service = g_socket_service_new();
		if (!g_socket_listener_add_address(G_SOCKET_LISTENER(server.service),
						   address,
						   G_SOCKET_TYPE_STREAM,
						   G_SOCKET_PROTOCOL_TCP,
						   NULL,
						   &effective,
						   &error)) {
			g_printerr("fake-mcp-server: %s\n", error->message);
			return 1;
		}
		g_signal_connect(server.service, "incoming", G_CALLBACK(on_incoming), &server);
		g_socket_service_start(server.service);
		printf("PORT=%u\n",
		       g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(effective)));
		fflush(stdout);
		g_input_stream_read_bytes_async(stdin_stream,
						4096,
						G_PRIORITY_DEFAULT,
						NULL,
						on_stdin_closed,
						&server);
	} else {
		server.stdin_data = g_data_input_stream_new(stdin_stream);
		g_data_input_stream_set_newline_type(server.stdin_data,
						     G_DATA_STREAM_NEWLINE_TYPE_LF);
		server.stdout_stream = g_unix_output_stream_new(1, FALSE);
		g_data_input_stream_read_line_async(server.stdin_data,
						    G_PRIORITY_DEFAULT,
						    NULL,
						    on_stdin_line,
						    &server);
	}
	g_main_loop_run(server.loop);
	noise(&server, "exiting");
	g_main_loop_unref(server.loop);
	g_free(server.oauth);
	g_clear_pointer(&server.oauth_codes, g_hash_table_unref);
	g_clear_pointer(&server.oauth_tokens, g_hash_table_unref);
	g_clear_pointer(&server.oauth_scopes, g_hash_table_unref);
	return 0;
}
