/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "test-transport.h"
#include "tools/mcp/confab-mcp-jsonrpc.h"
#include "tools/mcp/confab-mcp-line-reader.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/* The JSON-RPC layer of the MCP client over a transport of the test's own:
 * ids, answers in any order, notifications, the server's requests, bad and
 * oversized input, timeouts, cancels, and a transport that closes. And the
 * line reader under it. */

static void
inject(TestTransport *transport, const gchar *text)
{
	confab_mcp_transport_emit_message(CONFAB_MCP_TRANSPORT(transport),
					  text,
					  strlen(text),
					  NULL);
}

/* ---------- helpers ---------- */

typedef struct {
	TestTransport *transport;
	ConfabMcpJsonrpc *rpc;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->transport = g_object_new(TEST_TYPE_TRANSPORT, NULL);
	f->rpc = confab_mcp_jsonrpc_new(CONFAB_MCP_TRANSPORT(f->transport), "test");
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_clear_object(&f->rpc);
	g_clear_object(&f->transport);
}

typedef struct {
	gboolean done;
	JsonNode *result;
	GError *error;
} Outcome;

static void
outcome_clear(Outcome *o)
{
	g_clear_pointer(&o->result, json_node_unref);
	g_clear_error(&o->error);
	o->done = FALSE;
}

static void
on_request(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Outcome *o = user_data;
	g_assert_false(o->done);
	o->result =
	    confab_mcp_jsonrpc_request_finish(CONFAB_MCP_JSONRPC(source), result, &o->error);
	o->done = TRUE;
}

static gboolean
outcome_done(gpointer data)
{
	return ((Outcome *)data)->done;
}

static void
wait_outcome(Outcome *o)
{
	g_assert_true(confab_test_wait_until(outcome_done, o, 10000));
}

static void
request(Fixture *f,
	const gchar *method,
	const gchar *params,
	guint timeout_ms,
	GCancellable *c,
	Outcome *o)
{
	g_autoptr(JsonNode) node = params != NULL ? confab_json_from_string(params) : NULL;
	confab_mcp_jsonrpc_request_async(f->rpc, method, node, timeout_ms, c, on_request, o);
}

/* The sent message @index, parsed. */
static JsonObject *
sent(Fixture *f, guint index)
{
	g_autoptr(JsonNode) node = NULL;
	g_assert_cmpuint(index, <, f->transport->sent->len);
	node = confab_json_from_string(f->transport->sent->pdata[index]);
	g_assert_nonnull(node);
	g_assert_true(JSON_NODE_HOLDS_OBJECT(node));
	return json_object_ref(json_node_get_object(node));
}

static gboolean
n_sent_reached(gpointer data)
{
	Fixture *f = ((gpointer *)data)[0];
	guint n = GPOINTER_TO_UINT(((gpointer *)data)[1]);
	return f->transport->sent->len >= n;
}

static void
wait_sent(Fixture *f, guint n)
{
	gpointer data[2] = {f, GUINT_TO_POINTER(n)};
	g_assert_true(confab_test_wait_until(n_sent_reached, data, 10000));
}

/* ---------- the line reader ---------- */

typedef struct {
	GPtrArray *lines;
	guint too_long;
	guint64 too_long_size;
	gchar *head;
	gchar *tail;
} Lines;

static void
on_line(const gchar *line, gsize len, gpointer user_data)
{
	Lines *l = user_data;
	g_ptr_array_add(l->lines, g_strndup(line, len));
}

static void
on_too_long(const gchar *head,
	    gsize head_len,
	    const gchar *tail,
	    gsize tail_len,
	    guint64 size,
	    gpointer user_data)
{
	Lines *l = user_data;
	l->too_long++;
	l->too_long_size = size;
	g_free(l->head);
	g_free(l->tail);
	l->head = g_strndup(head, head_len);
	l->tail = g_strndup(tail, tail_len);
}

static void
test_line_reader_split(void)
{
	Lines l = {g_ptr_array_new_with_free_func(g_free)};
	g_autoptr(ConfabMcpLineReader) reader =
	    confab_mcp_line_reader_new(64, on_line, on_too_long, &l);
	const gchar *stream = "one\ntwo\r\n\n\nthree\nlast";

	/* cut at every byte */
	for (const gchar *p = stream; *p != '\0'; p++)
		confab_mcp_line_reader_feed(reader, p, 1);
	g_assert_cmpuint(l.lines->len, ==, 3);
	g_assert_cmpuint(confab_mcp_line_reader_get_buffered(reader), ==, 4);
	confab_mcp_line_reader_finish(reader);
	g_assert_cmpuint(l.lines->len, ==, 4);
	g_assert_cmpstr(l.lines->pdata[0], ==, "one");
	g_assert_cmpstr(l.lines->pdata[1], ==, "two");
	g_assert_cmpstr(l.lines->pdata[2], ==, "three");
	g_assert_cmpstr(l.lines->pdata[3], ==, "last");
	g_assert_cmpuint(l.too_long, ==, 0);
	g_ptr_array_unref(l.lines);
}

static void
test_line_reader_too_long(void)
{
	Lines l = {g_ptr_array_new_with_free_func(g_free)};
	g_autoptr(ConfabMcpLineReader) reader =
	    confab_mcp_line_reader_new(1000, on_line, on_too_long, &l);
	g_autofree gchar *chunk = g_strnfill(4096, 'x');
	const gchar *start = "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"";

	/* exactly the maximum is fine, with or without a "\r" */
	g_autofree gchar *max = g_strnfill(1000, 'm');
	confab_mcp_line_reader_feed(reader, max, 1000);
	confab_mcp_line_reader_feed(reader, "\r\n", 2);
	confab_mcp_line_reader_feed(reader, max, 1000);
	confab_mcp_line_reader_feed(reader, "\n", 1);
	g_assert_cmpuint(l.lines->len, ==, 2);
	g_assert_cmpuint(strlen(l.lines->pdata[0]), ==, 1000);

	/* 4 MB of one line: never held */
	confab_mcp_line_reader_feed(reader, start, strlen(start));
	for (guint i = 0; i < 1000; i++) {
		confab_mcp_line_reader_feed(reader, chunk, 4096);
		g_assert_cmpuint(confab_mcp_line_reader_get_buffered(reader), <=, 1001);
	}
	confab_mcp_line_reader_feed(reader, "\"}\nafter\n", 9);
	g_assert_cmpuint(l.too_long, ==, 1);
	g_assert_cmpuint(l.too_long_size, ==, strlen(start) + 4096 * 1000 + 2);
	g_assert_true(g_str_has_prefix(l.head, start));
	g_assert_cmpuint(strlen(l.head), ==, 256);
	g_assert_true(g_str_has_suffix(l.tail, "xx\"}"));
	g_assert_cmpuint(strlen(l.tail), ==, 256);
	/* the next line is whole */
	g_assert_cmpuint(l.lines->len, ==, 3);
	g_assert_cmpstr(l.lines->pdata[2], ==, "after");

	/* one byte too many, in one piece */
	confab_mcp_line_reader_feed(reader, max, 1000);
	confab_mcp_line_reader_feed(reader, "yz\n", 3);
	g_assert_cmpuint(l.too_long, ==, 2);
	g_assert_cmpuint(l.too_long_size, ==, 1002);
	g_assert_cmpuint(l.lines->len, ==, 3);

	g_ptr_array_unref(l.lines);
	g_free(l.head);
	g_free(l.tail);
}

/* ---------- JSON-RPC ---------- */

static void
test_ids(Fixture *f, gconstpointer data)
{
	Outcome a = {0}, b = {0};
	g_autoptr(JsonObject) first = NULL;
	g_autoptr(JsonObject) second = NULL;

	request(f, "tools/list", NULL, 0, NULL, &a);
	request(f, "tools/call", "{\"name\":\"x\",\"arguments\":{\"s\":\"a\\nb\"}}", 0, NULL, &b);
	wait_sent(f, 2);
	first = sent(f, 0);
	second = sent(f, 1);
	g_assert_cmpstr(json_object_get_string_member(first, "jsonrpc"), ==, "2.0");
	g_assert_cmpint(json_object_get_int_member(first, "id"), ==, 1);
	g_assert_cmpstr(json_object_get_string_member(first, "method"), ==, "tools/list");
	g_assert_false(json_object_has_member(first, "params"));
	g_assert_cmpint(json_object_get_int_member(second, "id"), ==, 2);
	g_assert_true(json_object_has_member(second, "params"));
	/* one line whatever the content */
	g_assert_null(strchr(f->transport->sent->pdata[1], '\n'));
	g_assert_cmpuint(confab_mcp_jsonrpc_get_n_pending(f->rpc), ==, 2);
	confab_mcp_jsonrpc_close(f->rpc);
	wait_outcome(&a);
	wait_outcome(&b);
	outcome_clear(&a);
	outcome_clear(&b);
}

static void
test_out_of_order(Fixture *f, gconstpointer data)
{
	Outcome a = {0}, b = {0}, c = {0};

	request(f, "one", NULL, 0, NULL, &a);
	request(f, "two", NULL, 0, NULL, &b);
	request(f, "three", NULL, 0, NULL, &c);
	wait_sent(f, 3);
	inject(f->transport, "{\"result\":{\"n\":3},\"jsonrpc\":\"2.0\",\"id\":3}");
	inject(f->transport, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":1}}");
	wait_outcome(&c);
	wait_outcome(&a);
	g_assert_false(b.done);
	g_assert_cmpint(json_object_get_int_member(json_node_get_object(a.result), "n"), ==, 1);
	g_assert_cmpint(json_object_get_int_member(json_node_get_object(c.result), "n"), ==, 3);
	/* an error answer */
	inject(f->transport,
	       "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32602,\"message\":\"Unknown "
	       "tool: nope\"}}");
	wait_outcome(&b);
	g_assert_error(b.error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM);
	g_assert_nonnull(strstr(b.error->message, "Unknown tool: nope"));
	g_assert_nonnull(strstr(b.error->message, "-32602"));
	/* a second answer to the same id changes nothing */
	inject(f->transport, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	g_assert_cmpuint(confab_mcp_jsonrpc_get_n_pending(f->rpc), ==, 0);
	g_assert_cmpuint(confab_mcp_jsonrpc_get_n_malformed(f->rpc), ==, 0);
	outcome_clear(&a);
	outcome_clear(&b);
	outcome_clear(&c);
}

typedef struct {
	guint count;
	gchar *method;
	gchar *params;
} Heard;

static void
on_notification(ConfabMcpJsonrpc *rpc, const gchar *method, JsonNode *params, gpointer user_data)
{
	Heard *h = user_data;
	h->count++;
	g_free(h->method);
	g_free(h->params);
	h->method = g_strdup(method);
	h->params = params != NULL ? confab_json_to_string(params) : NULL;
}

static void
test_notifications(Fixture *f, gconstpointer data)
{
	Heard h = {0};

	g_signal_connect(f->rpc, "notification", G_CALLBACK(on_notification), &h);
	inject(f->transport,
	       "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
	       "\"progressToken\":1,\"progress\":0.5}}");
	g_assert_cmpuint(h.count, ==, 1);
	g_assert_cmpstr(h.method, ==, "notifications/progress");
	g_assert_cmpstr(h.params, ==, "{\"progressToken\":1,\"progress\":0.5}");
	/* without params; an explicit null id is a notification too */
	inject(f->transport,
	       "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}");
	g_assert_cmpuint(h.count, ==, 2);
	g_assert_null(h.params);
	inject(f->transport, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}");
	g_assert_cmpuint(h.count, ==, 3);
	/* nothing was answered */
	g_assert_cmpuint(f->transport->sent->len, ==, 0);
	g_free(h.method);
	g_free(h.params);
}

static void
test_server_requests(Fixture *f, gconstpointer data)
{
	g_autoptr(JsonObject) pong = NULL;
	g_autoptr(JsonObject) refusal = NULL;
	JsonObject *error;

	inject(f->transport, "{\"jsonrpc\":\"2.0\",\"id\":\"p-1\",\"method\":\"ping\"}");
	inject(
	    f->transport,
	    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"sampling/createMessage\",\"params\":{}}");
	wait_sent(f, 2);
	pong = sent(f, 0);
	g_assert_cmpstr(json_object_get_string_member(pong, "id"), ==, "p-1");
	g_assert_cmpuint(json_object_get_size(json_object_get_object_member(pong, "result")),
			 ==,
			 0);
	refusal = sent(f, 1);
	g_assert_cmpint(json_object_get_int_member(refusal, "id"), ==, 7);
	g_assert_false(json_object_has_member(refusal, "result"));
	error = json_object_get_object_member(refusal, "error");
	g_assert_cmpint(json_object_get_int_member(error, "code"), ==, -32601);
}

static void
test_malformed(Fixture *f, gconstpointer data)
{
	Outcome a = {0};

	request(f, "tools/list", NULL, 0, NULL, &a);
	inject(f->transport, "this is not JSON {");
	inject(f->transport, "[1,2,3]");
	inject(f->transport, "{\"jsonrpc\":\"2.0\",\"foo\":1}");
	inject(f->transport, "{'single':'quotes'}");
	inject(f->transport, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}");
	inject(f->transport, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700}}");
	g_assert_cmpuint(confab_mcp_jsonrpc_get_n_malformed(f->rpc), ==, 6);
	g_assert_false(a.done);
	/* and the next good message is taken */
	inject(f->transport, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}");
	wait_outcome(&a);
	g_assert_no_error(a.error);
	outcome_clear(&a);
}

static void
test_oversized(Fixture *f, gconstpointer data)
{
	Outcome a = {0}, b = {0}, c = {0};
	const gchar *head = "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[";
	const gchar *tail = "xxxx\"}]},\"jsonrpc\":\"2.0\",\"id\":1}";
	g_autofree gchar *big = g_strnfill(2000, ' ');

	confab_mcp_jsonrpc_set_max_message_size(f->rpc, 1024);
	g_assert_cmpuint(f->transport->max_message_size, ==, 1024);
	request(f, "one", NULL, 0, NULL, &a);
	request(f, "two", NULL, 0, NULL, &b);
	request(f, "three", NULL, 0, NULL, &c);
	/* the id at the end, as the TypeScript SDK writes it */
	confab_mcp_transport_emit_dropped(CONFAB_MCP_TRANSPORT(f->transport),
					  "{\"result\":{\"content\":[",
					  strlen("{\"result\":{\"content\":["),
					  tail,
					  strlen(tail),
					  5000000);
	wait_outcome(&a);
	g_assert_error(a.error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE);
	/* the id at the start */
	confab_mcp_transport_emit_dropped(CONFAB_MCP_TRANSPORT(f->transport),
					  head,
					  strlen(head),
					  "]}}",
					  3,
					  5000000);
	wait_outcome(&b);
	g_assert_error(b.error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE);
	/* an id nested deeper is no one's */
	confab_mcp_transport_emit_dropped(CONFAB_MCP_TRANSPORT(f->transport),
					  "{\"result\":{\"id\":3,",
					  strlen("{\"result\":{\"id\":3,"),
					  "{\"id\":3}}}",
					  10,
					  5000000);
	/* a message too large given whole is dropped too */
	inject(f->transport, big);
	g_assert_cmpuint(confab_mcp_jsonrpc_get_n_dropped(f->rpc), ==, 4);
	g_assert_false(c.done);
	/* a request too large is not sent */
	{
		Outcome d = {0};
		g_autofree gchar *params = g_strdup_printf("{\"text\":\"%s\"}", big);
		guint before = f->transport->sent->len;
		request(f, "four", params, 0, NULL, &d);
		wait_outcome(&d);
		g_assert_error(d.error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE);
		g_assert_cmpuint(f->transport->sent->len, ==, before);
		outcome_clear(&d);
	}
	confab_mcp_jsonrpc_close(f->rpc);
	wait_outcome(&c);
	outcome_clear(&a);
	outcome_clear(&b);
	outcome_clear(&c);
}

/* The notifications/cancelled sent, if any, for @id. */
static JsonObject *
find_cancelled(Fixture *f, gint64 id)
{
	for (guint i = 0; i < f->transport->sent->len; i++) {
		g_autoptr(JsonObject) message = sent(f, i);
		JsonObject *params;
		if (g_strcmp0(json_object_get_string_member_with_default(message, "method", ""),
			      "notifications/cancelled") != 0)
			continue;
		g_assert_false(json_object_has_member(message, "id"));
		params = json_object_get_object_member(message, "params");
		if (json_object_get_int_member(params, "requestId") == id)
			return json_object_ref(params);
	}
	return NULL;
}

static void
test_timeout(Fixture *f, gconstpointer data)
{
	Outcome a = {0};
	g_autoptr(JsonObject) cancelled = NULL;
	gint64 start = g_get_monotonic_time();

	request(f, "tools/call", "{\"name\":\"slow\"}", 50, NULL, &a);
	wait_outcome(&a);
	g_assert_error(a.error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
	g_assert_cmpint(g_get_monotonic_time() - start, >=, 50000);
	wait_sent(f, 2);
	cancelled = find_cancelled(f, 1);
	g_assert_nonnull(cancelled);
	g_assert_cmpstr(json_object_get_string_member(cancelled, "reason"), ==, "timeout");
	/* the late answer is ignored */
	inject(f->transport, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	g_assert_cmpuint(confab_mcp_jsonrpc_get_n_malformed(f->rpc), ==, 0);
	outcome_clear(&a);
}

static void
test_cancel(Fixture *f, gconstpointer data)
{
	Outcome a = {0}, b = {0}, c = {0};
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	g_autoptr(GCancellable) cancelled_before = g_cancellable_new();
	g_autoptr(JsonObject) note = NULL;

	request(f, "initialize", "{}", 0, cancellable, &a);
	request(f, "tools/call", "{\"name\":\"slow\"}", 0, cancellable, &b);
	wait_sent(f, 2);
	g_cancellable_cancel(cancellable);
	wait_outcome(&a);
	wait_outcome(&b);
	g_assert_error(a.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_assert_error(b.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	wait_sent(f, 3);
	/* initialize is never cancelled on the wire */
	g_assert_null(find_cancelled(f, 1));
	note = find_cancelled(f, 2);
	g_assert_nonnull(note);
	g_assert_cmpstr(json_object_get_string_member(note, "reason"), ==, "cancelled");
	g_assert_cmpuint(f->transport->sent->len, ==, 3);
	g_assert_cmpuint(confab_mcp_jsonrpc_get_n_pending(f->rpc), ==, 0);
	/* cancelled before it starts: nothing goes out */
	g_cancellable_cancel(cancelled_before);
	request(f, "tools/call", "{}", 0, cancelled_before, &c);
	wait_outcome(&c);
	g_assert_error(c.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_assert_cmpuint(f->transport->sent->len, ==, 3);
	outcome_clear(&a);
	outcome_clear(&b);
	outcome_clear(&c);
}

typedef struct {
	guint count;
	GError *error;
} Closed;

static void
on_closed(ConfabMcpJsonrpc *rpc, const GError *error, gpointer user_data)
{
	Closed *c = user_data;
	c->count++;
	g_clear_error(&c->error);
	c->error = error != NULL ? g_error_copy(error) : NULL;
}

static void
test_transport_closed(Fixture *f, gconstpointer data)
{
	Outcome a = {0}, b = {0}, c = {0};
	Closed closed = {0};
	g_autoptr(GError) why = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE, "it died");

	g_signal_connect(f->rpc, "closed", G_CALLBACK(on_closed), &closed);
	request(f, "one", NULL, 0, NULL, &a);
	request(f, "two", NULL, 60000, NULL, &b);
	wait_sent(f, 2);
	confab_mcp_transport_emit_closed(CONFAB_MCP_TRANSPORT(f->transport), why);
	wait_outcome(&a);
	wait_outcome(&b);
	g_assert_error(a.error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED);
	g_assert_nonnull(strstr(a.error->message, "it died"));
	g_assert_error(b.error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED);
	g_assert_cmpuint(closed.count, ==, 1);
	g_assert_error(closed.error, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE);
	g_assert_true(confab_mcp_jsonrpc_is_closed(f->rpc));
	/* and later requests fail at once, unsent */
	request(f, "three", NULL, 0, NULL, &c);
	wait_outcome(&c);
	g_assert_error(c.error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED);
	g_assert_cmpuint(f->transport->sent->len, ==, 2);
	/* no notifications/cancelled to a closed transport either */
	confab_mcp_jsonrpc_close(f->rpc);
	g_assert_cmpuint(closed.count, ==, 1);
	g_clear_error(&closed.error);
	outcome_clear(&a);
	outcome_clear(&b);
	outcome_clear(&c);
}

static void
test_send_failures(Fixture *f, gconstpointer data)
{
	Outcome a = {0}, b = {0};

	/* an HTTP POST whose response held no answer */
	f->transport->flags = CONFAB_MCP_TRANSPORT_FLAGS_ANSWER_IN_SEND;
	request(f, "tools/list", NULL, 0, NULL, &a);
	wait_outcome(&a);
	g_assert_error(a.error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM);
	g_assert_nonnull(strstr(a.error->message, "without a response"));
	/* an expired session: the caller sees it as such */
	f->transport->send_error =
	    g_error_new_literal(G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED, "session expired");
	request(f, "tools/list", NULL, 0, NULL, &b);
	wait_outcome(&b);
	g_assert_error(b.error, G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED);
	g_assert_cmpuint(confab_mcp_jsonrpc_get_n_pending(f->rpc), ==, 0);
	outcome_clear(&a);
	outcome_clear(&b);
}

static void
test_max_pending(Fixture *f, gconstpointer data)
{
	Outcome o[3] = {{0}};

	confab_mcp_jsonrpc_set_max_pending(f->rpc, 2);
	for (guint i = 0; i < 3; i++)
		request(f, "x", NULL, 0, NULL, &o[i]);
	wait_outcome(&o[2]);
	g_assert_error(o[2].error, G_IO_ERROR, G_IO_ERROR_BUSY);
	confab_mcp_jsonrpc_close(f->rpc);
	for (guint i = 0; i < 3; i++) {
		wait_outcome(&o[i]);
		outcome_clear(&o[i]);
	}
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);

	g_test_add_func("/confab/mcp-jsonrpc/line-reader/split", test_line_reader_split);
	g_test_add_func("/confab/mcp-jsonrpc/line-reader/too-long", test_line_reader_too_long);
#define ADD(path, func)                                                                            \
	g_test_add("/confab/mcp-jsonrpc/" path,                                                    \
		   Fixture,                                                                        \
		   NULL,                                                                           \
		   fixture_setup,                                                                  \
		   func,                                                                           \
		   fixture_teardown)
	ADD("ids", test_ids);
	ADD("out-of-order", test_out_of_order);
	ADD("notifications", test_notifications);
	ADD("server-requests", test_server_requests);
	ADD("malformed", test_malformed);
	ADD("oversized", test_oversized);
	ADD("timeout", test_timeout);
	ADD("cancel", test_cancel);
	ADD("transport-closed", test_transport_closed);
	ADD("send-failures", test_send_failures);
	ADD("max-pending", test_max_pending);
#undef ADD
	return g_test_run();
}
