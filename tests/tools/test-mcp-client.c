/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include "confab-test-helper.h"
#include "tools/mcp/confab-mcp-client.h"
#include "tools/mcp/confab-mcp-http.h"
#include "tools/mcp/confab-mcp-stdio.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/* The MCP client against tests/fake-mcp-server, each case once over stdio
 * and once over streamable HTTP, and against the reference server of the
 * MCP project (@modelcontextprotocol/server-everything) when
 * tests/mcp/node_modules has it. */

#define PNG_1X1_BASE64                                                                             \
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5E" \
	"rkJg"                                                                                     \
	"gg=="
#define N_FAKE_TOOLS 18 /* before change_tools adds "extra" */

typedef enum {
	KIND_STDIO,
	KIND_HTTP,
} Kind;

typedef struct {
	Kind kind;
	gchar *tmpdir;
	gchar *record;
	GSubprocess *server; /* HTTP: the fake server */
	gchar *url;
	ConfabMcpTransport *transport;
	ConfabMcpClient *client;
	guint closed;
	GError *closed_error;
	guint tools_changed;
	ConfabMcpElicitation *elicitation; /* the last one the handler got */
	gpointer elicitation_call;	   /* the call data it came with */
	gboolean drop_elicitation;	   /* the handler drops it unanswered */
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->kind = GPOINTER_TO_INT(data);
	f->tmpdir = confab_test_make_tmpdir("mcp-client");
	f->record = g_build_filename(f->tmpdir, "record.jsonl", NULL);
}

static gboolean
is_null(gpointer data)
{
	return *(gpointer *)data == NULL;
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	gpointer client = f->client;
	gpointer transport = f->transport;

	if (f->client != NULL) {
		confab_mcp_client_close(f->client);
		g_object_add_weak_pointer(client, &client);
		g_clear_object(&f->client);
		g_assert_null(client);
	}
	/* the transport goes once its child exited (stdio) or its last
	 * exchange, the DELETE, ended (HTTP): nothing is left behind */
	if (f->transport != NULL) {
		g_object_add_weak_pointer(transport, &transport);
		g_clear_object(&f->transport);
		g_assert_true(confab_test_wait_until(is_null, &transport, 10000));
	}
	if (f->server != NULL) {
		g_subprocess_force_exit(f->server);
		g_subprocess_wait(f->server, NULL, NULL);
		g_clear_object(&f->server);
	}
	g_clear_error(&f->closed_error);
	g_clear_pointer(&f->elicitation, confab_mcp_elicitation_unref);
	confab_test_rm_rf(f->tmpdir);
	g_free(f->tmpdir);
	g_free(f->record);
	g_free(f->url);
}

static const gchar *
fake_server(void)
{
	const gchar *path = g_getenv("CONFAB_FAKE_MCP");
	if (path == NULL) {
		g_printerr("SKIP: CONFAB_FAKE_MCP is not set; run the tests with meson test\n");
		exit(CONFAB_TEST_SKIP);
	}
	return path;
}

static void
on_closed(ConfabMcpClient *client, const GError *error, gpointer user_data)
{
	Fixture *f = user_data;
	f->closed++;
	g_clear_error(&f->closed_error);
	f->closed_error = error != NULL ? g_error_copy(error) : NULL;
}

static void
on_tools_changed(ConfabMcpClient *client, gpointer user_data)
{
	((Fixture *)user_data)->tools_changed++;
}

/* Reads "PORT=n" from a freshly started fake HTTP server. */
static guint16
read_port(GSubprocess *server)
{
	g_autoptr(GDataInputStream) out =
	    g_data_input_stream_new(g_subprocess_get_stdout_pipe(server));
	g_autofree gchar *line = g_data_input_stream_read_line(out, NULL, NULL, NULL);

	g_assert_nonnull(line);
	g_assert_true(g_str_has_prefix(line, "PORT="));
	return (guint16)g_ascii_strtoull(line + 5, NULL, 10);
}

/* The transport to the fake server run with @args (NULL-terminated). */
static void
make_transport(Fixture *f, const gchar *first_arg, ...)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autoptr(GError) error = NULL;
	const gchar *arg;
	va_list args;

	g_ptr_array_add(argv, (gpointer)fake_server());
	g_ptr_array_add(argv, (gpointer) "--record");
	g_ptr_array_add(argv, f->record);
	if (f->kind == KIND_HTTP) {
		g_ptr_array_add(argv, (gpointer) "--http");
		g_ptr_array_add(argv, (gpointer) "0");
	}
	va_start(args, first_arg);
	for (arg = first_arg; arg != NULL; arg = va_arg(args, const gchar *))
		g_ptr_array_add(argv, (gpointer)arg);
	va_end(args);
	g_ptr_array_add(argv, NULL);

	if (f->kind == KIND_STDIO) {
		const gchar *env[] = {"FOO=bar", NULL};
		ConfabMcpStdio *stdio = confab_mcp_stdio_new("fake",
							     (const gchar *const *)argv->pdata,
							     env,
							     f->tmpdir,
							     f->tmpdir,
							     &error);
		g_assert_no_error(error);
		f->transport = CONFAB_MCP_TRANSPORT(stdio);
	} else {
		guint16 port;
		/* stdin a pipe: the server exits when the test does */
		f->server = g_subprocess_newv((const gchar *const *)argv->pdata,
					      G_SUBPROCESS_FLAGS_STDIN_PIPE |
						  G_SUBPROCESS_FLAGS_STDOUT_PIPE,
					      &error);
		g_assert_no_error(error);
		port = read_port(f->server);
		f->url = g_strdup_printf("http://127.0.0.1:%u/mcp", port);
		f->transport =
		    CONFAB_MCP_TRANSPORT(confab_mcp_http_new("fake", f->url, NULL, &error));
		g_assert_no_error(error);
	}
}

typedef struct {
	GAsyncResult *result;
} Wait;

static void
on_result(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Wait *w = user_data;
	g_assert_null(w->result);
	w->result = g_object_ref(result);
}

static gboolean
wait_done(gpointer data)
{
	return ((Wait *)data)->result != NULL;
}

static void
wait_result(Wait *w)
{
	g_assert_true(confab_test_wait_until(wait_done, w, 20000));
}

static gboolean
start_named(Fixture *f, const gchar *name, GError **error)
{
	Wait w = {0};
	gboolean ok;

	f->client = confab_mcp_client_new(name, f->transport);
	g_signal_connect(f->client, "closed", G_CALLBACK(on_closed), f);
	g_signal_connect(f->client, "tools-changed", G_CALLBACK(on_tools_changed), f);
	confab_mcp_client_start_async(f->client, NULL, on_result, &w);
	wait_result(&w);
	ok = confab_mcp_client_start_finish(f->client, w.result, error);
	g_object_unref(w.result);
	return ok;
}

static gboolean
start(Fixture *f, GError **error)
{
	return start_named(f, "fake", error);
}

static void
start_fake(Fixture *f, const gchar *first_arg, ...)
{
	g_autoptr(GPtrArray) extra = g_ptr_array_new();
	g_autoptr(GError) error = NULL;
	const gchar *arg;
	va_list args;

	va_start(args, first_arg);
	for (arg = first_arg; arg != NULL; arg = va_arg(args, const gchar *))
		g_ptr_array_add(extra, (gpointer)arg);
	va_end(args);
	g_ptr_array_add(extra, NULL);
	switch (extra->len) {
	case 1:
		make_transport(f, NULL);
		break;
	case 2:
		make_transport(f, extra->pdata[0], NULL);
		break;
	case 3:
		make_transport(f, extra->pdata[0], extra->pdata[1], NULL);
		break;
	case 5:
		make_transport(f,
			       extra->pdata[0],
			       extra->pdata[1],
			       extra->pdata[2],
			       extra->pdata[3],
			       NULL);
		break;
	default:
		g_assert_not_reached();
	}
	g_assert_true(start(f, &error));
	g_assert_no_error(error);
}

static GPtrArray *
list_tools(Fixture *f, GError **error)
{
	Wait w = {0};
	GPtrArray *tools;

	confab_mcp_client_list_tools_async(f->client, NULL, on_result, &w);
	wait_result(&w);
	tools = confab_mcp_client_list_tools_finish(f->client, w.result, error);
	g_object_unref(w.result);
	return tools;
}

typedef struct {
	guint count;
	gdouble last_progress;
	gdouble last_total;
	gchar *last_message;
	gboolean freed;
} Progress;

static void
on_progress(gdouble progress, gdouble total, const gchar *message, gpointer user_data)
{
	Progress *p = user_data;
	g_assert_cmpfloat(progress, >, p->last_progress);
	p->count++;
	p->last_progress = progress;
	p->last_total = total;
	g_free(p->last_message);
	p->last_message = g_strdup(message);
}

static void
progress_freed(gpointer user_data)
{
	((Progress *)user_data)->freed = TRUE;
}

static void
call_async(Fixture *f,
	   const gchar *tool,
	   const gchar *arguments,
	   guint timeout_ms,
	   gsize max_output,
	   Progress *progress,
	   GCancellable *cancellable,
	   Wait *w)
{
	g_autoptr(JsonNode) args = arguments != NULL ? confab_json_from_string(arguments) : NULL;
	confab_mcp_client_call_tool_async(f->client,
					  tool,
					  args != NULL ? json_node_get_object(args) : NULL,
					  timeout_ms,
					  max_output,
					  progress != NULL ? on_progress : NULL,
					  progress,
					  progress != NULL ? progress_freed : NULL,
					  cancellable,
					  on_result,
					  w);
}

static ConfabMcpToolResult *
call_finish(Fixture *f, Wait *w, GError **error)
{
	ConfabMcpToolResult *result;
	wait_result(w);
	result = confab_mcp_client_call_tool_finish(f->client, w->result, error);
	g_clear_object(&w->result);
	return result;
}

static ConfabMcpToolResult *
call(Fixture *f, const gchar *tool, const gchar *arguments, GError **error)
{
	Wait w = {0};
	call_async(f, tool, arguments, 10000, 0, NULL, NULL, &w);
	return call_finish(f, &w, error);
}

/* Every message the fake server received, parsed. */
static GPtrArray *
recorded(Fixture *f)
{
	g_autofree gchar *text = NULL;
	g_auto(GStrv) lines = NULL;
	GPtrArray *messages = g_ptr_array_new_with_free_func((GDestroyNotify)json_object_unref);

	if (!g_file_get_contents(f->record, &text, NULL, NULL))
		return messages;
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i] != NULL; i++) {
		g_autoptr(JsonNode) node = NULL;
		if (*lines[i] == '\0')
			continue;
		node = confab_json_from_string(lines[i]);
		if (node != NULL && JSON_NODE_HOLDS_OBJECT(node))
			g_ptr_array_add(messages, json_object_ref(json_node_get_object(node)));
	}
	return messages;
}

static guint
count_recorded(Fixture *f, const gchar *method)
{
	g_autoptr(GPtrArray) messages = recorded(f);
	guint n = 0;
	for (guint i = 0; i < messages->len; i++) {
		JsonObject *m = messages->pdata[i];
		if (g_strcmp0(json_object_get_string_member_with_default(m, "method", ""),
			      method) == 0 ||
		    g_strcmp0(json_object_get_string_member_with_default(m, "_http", ""), method) ==
			0)
			n++;
	}
	return n;
}

/* notifications/initialized is sent once the initialize answer is in,
 * and nothing answers it: the server may record it after the client is
 * ready (seen under the asan setup on a loaded machine) */
typedef struct {
	Fixture *f;
	guint n;
} InitializedWait;

static gboolean
initialized_recorded(gpointer data)
{
	InitializedWait *w = data;
	return count_recorded(w->f, "notifications/initialized") >= w->n;
}

static void
wait_initialized(Fixture *f, guint n)
{
	InitializedWait w = {f, n};
	g_assert_true(confab_test_wait_until(initialized_recorded, &w, 10000));
	g_assert_cmpuint(count_recorded(f, "notifications/initialized"), ==, n);
}

/* The id of the recorded tools/call of @tool. */
static gint64
recorded_call_id(Fixture *f, const gchar *tool)
{
	g_autoptr(GPtrArray) messages = recorded(f);
	for (guint i = 0; i < messages->len; i++) {
		JsonObject *m = messages->pdata[i];
		JsonObject *params;
		if (g_strcmp0(json_object_get_string_member_with_default(m, "method", ""),
			      "tools/call") != 0)
			continue;
		params = json_object_get_object_member(m, "params");
		if (g_strcmp0(json_object_get_string_member(params, "name"), tool) == 0)
			return json_object_get_int_member(m, "id");
	}
	return -1;
}

typedef struct {
	Fixture *f;
	gint64 id;
	const gchar *reason;
} CancelledCheck;

static gboolean
cancelled_recorded(gpointer data)
{
	CancelledCheck *c = data;
	g_autoptr(GPtrArray) messages = recorded(c->f);
	for (guint i = 0; i < messages->len; i++) {
		JsonObject *m = messages->pdata[i];
		JsonObject *params;
		if (g_strcmp0(json_object_get_string_member_with_default(m, "method", ""),
			      "notifications/cancelled") != 0)
			continue;
		params = json_object_get_object_member(m, "params");
		if (json_object_get_int_member(params, "requestId") == c->id &&
		    g_strcmp0(json_object_get_string_member(params, "reason"), c->reason) == 0)
			return TRUE;
	}
	return FALSE;
}

typedef struct {
	Fixture *f;
	const gchar *tool;
} CallCheck;

static gboolean
call_recorded(gpointer data)
{
	CallCheck *c = data;
	return recorded_call_id(c->f, c->tool) >= 0;
}

static gboolean
malformed_counted(gpointer data)
{
	Fixture *f = data;
	return confab_mcp_jsonrpc_get_n_malformed(confab_mcp_client_get_jsonrpc(f->client)) > 0;
}

static void
on_elicit(ConfabMcpClient *client,
	  ConfabMcpElicitation *elicitation,
	  gpointer call_data,
	  gpointer user_data)
{
	Fixture *f = user_data;

	g_clear_pointer(&f->elicitation, confab_mcp_elicitation_unref);
	f->elicitation_call = call_data;
	if (!f->drop_elicitation)
		f->elicitation = confab_mcp_elicitation_ref(elicitation);
}

static gboolean
elicitation_arrived(gpointer data)
{
	return ((Fixture *)data)->elicitation != NULL;
}

/* The fake started and a client that answers elicitations (the handler
 * keeps each one in the fixture). */
static void
start_eliciting(Fixture *f)
{
	Wait w = {0};
	g_autoptr(GError) error = NULL;

	make_transport(f, NULL);
	f->client = confab_mcp_client_new("fake", f->transport);
	g_signal_connect(f->client, "closed", G_CALLBACK(on_closed), f);
	confab_mcp_client_set_elicitation_handler(f->client, on_elicit, f, NULL);
	confab_mcp_client_start_async(f->client, NULL, on_result, &w);
	wait_result(&w);
	g_assert_true(confab_mcp_client_start_finish(f->client, w.result, &error));
	g_assert_no_error(error);
	g_object_unref(w.result);
}

/* The capabilities the client declared in its recorded initialize. */
static gchar *
declared_capabilities(Fixture *f)
{
	g_autoptr(GPtrArray) messages = recorded(f);
	for (guint i = 0; i < messages->len; i++) {
		JsonObject *m = messages->pdata[i];
		if (g_strcmp0(json_object_get_string_member_with_default(m, "method", ""),
			      "initialize") == 0)
			return confab_json_to_string(
			    json_object_get_member(json_object_get_object_member(m, "params"),
						   "capabilities"));
	}
	return NULL;
}

/* ---------- the cases, for both transports ---------- */

static void
test_list_paginated(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) tools = NULL;
	g_autoptr(GPtrArray) again = NULL;
	g_autoptr(GError) error = NULL;
	ConfabMcpTool *echo = NULL;

	start_fake(f, "--page-size", "4", NULL);
	g_assert_cmpstr(confab_mcp_client_get_protocol_version(f->client), ==, "2025-11-25");
	g_assert_cmpstr(confab_mcp_client_get_server_name(f->client), ==, "fake-mcp-server");
	g_assert_cmpstr(confab_mcp_client_get_instructions(f->client),
			==,
			"A scripted server for tests.");
	g_assert_cmpuint(count_recorded(f, "initialize"), ==, 1);
	wait_initialized(f, 1);

	tools = list_tools(f, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(tools->len, ==, N_FAKE_TOOLS);
	for (guint i = 0; i < tools->len; i++) {
		ConfabMcpTool *tool = tools->pdata[i];
		if (g_strcmp0(tool->name, "echo") == 0)
			echo = tool;
	}
	g_assert_nonnull(echo);
	g_assert_cmpstr(echo->description, ==, "Echoes its text");
	g_assert_cmpstr(echo->input_schema,
			==,
			"{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},"
			"\"required\":[\"text\"]}");
	/* 4 tools a page */
	g_assert_cmpuint(count_recorded(f, "tools/list"), ==, (N_FAKE_TOOLS + 3) / 4);
	/* cached */
	again = list_tools(f, &error);
	g_assert_no_error(error);
	g_assert_true(again == tools);
	g_assert_cmpuint(count_recorded(f, "tools/list"), ==, (N_FAKE_TOOLS + 3) / 4);
}

static void
test_echo(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(ConfabMcpToolResult) sum = NULL;
	g_autoptr(GError) error = NULL;

	/* stdio: the server's stderr goes to the log, cut and rate-limited */
	if (f->kind == KIND_STDIO)
		start_fake(f, "--stderr-noise", NULL);
	else
		start_fake(f, NULL);
	result = call(f, "echo", "{\"text\":\"héllo\\nworld\"}", &error);
	g_assert_no_error(error);
	g_assert_false(result->is_error);
	g_assert_false(result->truncated);
	g_assert_cmpstr(result->text, ==, "héllo\nworld");
	sum = call(f, "add", "{\"a\":1,\"b\":2.5}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(sum->text, ==, "3.5");
}

static void
test_unknown_tool(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;

	start_fake(f, NULL);
	result = call(f, "nope", NULL, &error);
	g_assert_null(result);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM);
	g_assert_nonnull(strstr(error->message, "Unknown tool: nope"));
}

static void
test_parallel(Fixture *f, gconstpointer data)
{
	Wait w[5] = {{0}};
	/* far apart, so that a loaded machine keeps the order */
	const gchar *args[5] = {"{\"ms\":1500}", "{\"ms\":1000}", "{\"ms\":500}", NULL, NULL};

	start_fake(f, NULL);
	for (guint i = 0; i < 3; i++)
		call_async(f, "slow", args[i], 10000, 0, NULL, NULL, &w[i]);
	call_async(f, "echo", "{\"text\":\"first\"}", 10000, 0, NULL, NULL, &w[3]);
	call_async(f, "add", "{\"a\":2,\"b\":2}", 10000, 0, NULL, NULL, &w[4]);
	/* the quick ones come back before the slow ones */
	wait_result(&w[3]);
	g_assert_null(w[0].result);
	for (guint i = 0; i < 5; i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabMcpToolResult) result = call_finish(f, &w[i], &error);
		g_assert_no_error(error);
		if (i < 3) {
			g_autofree gchar *expected =
			    g_strdup_printf("slept %d ms", (gint)(1500 - 500 * i));
			g_assert_cmpstr(result->text, ==, expected);
		}
	}
}

static void
test_timeout(Fixture *f, gconstpointer data)
{
	Wait w = {0};
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(ConfabMcpToolResult) after = NULL;
	CancelledCheck check = {f, 0, "timeout"};
	gint64 start_time;

	start_fake(f, NULL);
	start_time = g_get_monotonic_time();
	call_async(f, "slow", "{\"ms\":5000}", 200, 0, NULL, NULL, &w);
	result = call_finish(f, &w, &error);
	g_assert_null(result);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
	g_assert_cmpint(g_get_monotonic_time() - start_time, <, 4000000);
	check.id = recorded_call_id(f, "slow");
	g_assert_cmpint(check.id, >, 0);
	g_assert_true(confab_test_wait_until(cancelled_recorded, &check, 10000));
	/* the server is still fine */
	g_clear_error(&error);
	after = call(f, "echo", "{\"text\":\"still here\"}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(after->text, ==, "still here");
}

static void
test_cancel(Fixture *f, gconstpointer data)
{
	Wait w = {0};
	g_autoptr(GError) error = NULL;
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	g_autoptr(ConfabMcpToolResult) result = NULL;
	CancelledCheck check = {f, 0, "cancelled"};
	CallCheck arrived = {f, "slow"};
	Progress progress = {0};

	start_fake(f, NULL);
	call_async(f, "slow", "{\"ms\":5000}", 0, 0, &progress, cancellable, &w);
	g_assert_true(confab_test_wait_until(call_recorded, &arrived, 10000));
	g_cancellable_cancel(cancellable);
	result = call_finish(f, &w, &error);
	g_assert_null(result);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_assert_true(progress.freed);
	check.id = recorded_call_id(f, "slow");
	g_assert_true(confab_test_wait_until(cancelled_recorded, &check, 10000));
	g_assert_cmpuint(f->closed, ==, 0);
}

static void
test_progress(Fixture *f, gconstpointer data)
{
	Wait w = {0};
	Progress progress = {0};
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;

	start_fake(f, NULL);
	call_async(f, "progress", "{\"steps\":3,\"ms\":20}", 10000, 0, &progress, NULL, &w);
	result = call_finish(f, &w, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(result->text, ==, "done");
	g_assert_cmpuint(progress.count, ==, 3);
	g_assert_cmpfloat(progress.last_progress, ==, 3);
	g_assert_cmpfloat(progress.last_total, ==, 3);
	g_assert_cmpstr(progress.last_message, ==, "step 3");
	g_assert_true(progress.freed);
	g_free(progress.last_message);
}

static void
test_is_error(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;

	start_fake(f, NULL);
	result = call(f, "fail", NULL, &error);
	g_assert_no_error(error);
	g_assert_true(result->is_error);
	g_assert_cmpstr(result->text, ==, "this tool failed");
}

static void
test_huge(Fixture *f, gconstpointer data)
{
	Wait w = {0};
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(ConfabMcpToolResult) too_large = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) after = NULL;

	start_fake(f, NULL);
	call_async(f, "huge", "{\"bytes\":300000}", 10000, 1000, NULL, NULL, &w);
	result = call_finish(f, &w, &error);
	g_assert_no_error(error);
	g_assert_true(result->truncated);
	g_assert_true(g_str_has_suffix(result->text, "x\n[output truncated at 1000 bytes]"));
	g_assert_cmpuint(strlen(result->text),
			 ==,
			 1000 + strlen("\n[output truncated at 1000 bytes]"));

	/* past the message size: the call fails at once, not at its timeout */
	confab_mcp_client_set_max_message_size(f->client, 100000);
	call_async(f, "huge", "{\"bytes\":200000}", 60000, 0, NULL, NULL, &w);
	too_large = call_finish(f, &w, &error);
	g_assert_null(too_large);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE);
	g_clear_error(&error);
	after = call(f, "echo", "{\"text\":\"next\"}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(after->text, ==, "next");
}

static void
test_parts(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) image = NULL;
	g_autoptr(ConfabMcpToolResult) mixed = NULL;
	g_autoptr(ConfabMcpToolResult) structured = NULL;
	g_autoptr(ConfabMcpToolResult) structured_only = NULL;
	g_autoptr(GError) error = NULL;
	gsize png_len = 0;
	g_autofree guchar *png = g_base64_decode(PNG_1X1_BASE64, &png_len);
	g_autofree gchar *expected = g_strdup_printf("[image: image/png, %zu bytes]", png_len);

	start_fake(f, NULL);
	image = call(f, "image", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(image->text, ==, expected);
	mixed = call(f, "mixed", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(mixed->text,
			==,
			"first\n"
			"[audio: audio/wav, 4 bytes]\n"
			"[resource: file:///tmp/a.txt]\n"
			"[resource: file:///tmp/b.txt]\n"
			"inside b\n"
			"[resource: file:///tmp/c.bin, application/octet-stream, 3 bytes]\n"
			"last");
	/* the text part holds the same JSON: not twice */
	structured = call(f, "structured", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(structured->text,
			==,
			"{\"conditions\": \"cloudy\", \"temperature\": 22.5}");
	structured_only = call(f, "structured", "{\"with_text\":false}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(structured_only->text,
			==,
			"{\"temperature\":22.5,\"conditions\":\"cloudy\"}");
}

static gboolean
closed_fired(gpointer data)
{
	return ((Fixture *)data)->closed > 0;
}

static void
test_die(Fixture *f, gconstpointer data)
{
	Wait w = {0}, w_slow = {0};
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) slow_error = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(ConfabMcpToolResult) slow = NULL;
	g_autoptr(ConfabMcpToolResult) after = NULL;
	gint64 start_time;

	start_fake(f, NULL);
	start_time = g_get_monotonic_time();
	/* a call in flight on the side fails too */
	call_async(f, "slow", "{\"ms\":30000}", 60000, 0, NULL, NULL, &w_slow);
	call_async(f, "die", NULL, 60000, 0, NULL, NULL, &w);
	result = call_finish(f, &w, &error);
	g_assert_null(result);
	g_assert_nonnull(error);
	slow = call_finish(f, &w_slow, &slow_error);
	g_assert_null(slow);
	g_assert_nonnull(slow_error);
	g_assert_cmpint(g_get_monotonic_time() - start_time, <, 5000000);
	g_assert_true(confab_test_wait_until(closed_fired, f, 10000));
	g_assert_cmpuint(f->closed, ==, 1);
	g_assert_nonnull(f->closed_error);
	g_assert_true(confab_mcp_client_is_closed(f->client));
	/* and it stays closed */
	g_clear_error(&error);
	after = call(f, "echo", "{\"text\":\"x\"}", &error);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED);
}

static gboolean
tools_changed_fired(gpointer data)
{
	return ((Fixture *)data)->tools_changed > 0;
}

static void
test_list_changed(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) before = NULL;
	g_autoptr(GPtrArray) after = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(ConfabMcpToolResult) extra = NULL;
	g_autoptr(GError) error = NULL;
	gboolean found = FALSE;

	start_fake(f, NULL);
	f->tools_changed = 0;
	before = list_tools(f, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(before->len, ==, N_FAKE_TOOLS);
	result = call(f, "change_tools", NULL, &error);
	g_assert_no_error(error);
	g_assert_true(confab_test_wait_until(tools_changed_fired, f, 10000));
	after = list_tools(f, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(after->len, ==, N_FAKE_TOOLS + 1);
	for (guint i = 0; i < after->len; i++)
		found |= g_strcmp0(((ConfabMcpTool *)after->pdata[i])->name, "extra") == 0;
	g_assert_true(found);
	extra = call(f, "extra", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(extra->text, ==, "extra");
}

static void
test_version_refused(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;

	make_transport(f, "--protocol", "2023-01-01", NULL);
	g_assert_false(start(f, &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED);
	g_assert_nonnull(strstr(error->message, "2023-01-01"));
	g_assert_true(confab_mcp_client_is_closed(f->client));
	g_assert_cmpuint(f->closed, ==, 1);
	/* no notifications/initialized after a refusal */
	g_assert_cmpuint(count_recorded(f, "notifications/initialized"), ==, 0);
}

/* 2025-03-26, over both transports: no MCP-Protocol-Version header (the
 * fake refuses one in such a session) and JSON-RPC batches received. */
static void
test_version_2025_03_26(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(ConfabMcpToolResult) batched = NULL;
	g_autoptr(GPtrArray) tools = NULL;
	g_autoptr(GError) error = NULL;

	start_fake(f, "--protocol", "2025-03-26", NULL);
	g_assert_cmpstr(confab_mcp_client_get_protocol_version(f->client), ==, "2025-03-26");
	tools = list_tools(f, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(tools->len, ==, N_FAKE_TOOLS);
	result = call(f, "echo", "{\"text\":\"march\"}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(result->text, ==, "march");
	batched = call(f, "batch", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(batched->text, ==, "batched");
	g_assert_cmpuint(
	    confab_mcp_jsonrpc_get_n_malformed(confab_mcp_client_get_jsonrpc(f->client)),
	    ==,
	    0);
}

/* 2024-11-05 is spoken over stdio; over HTTP it meant the old HTTP+SSE
 * transport, which Confab does not speak. */
static void
test_version_2024_11_05(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(ConfabMcpToolResult) batched = NULL;
	g_autoptr(GError) error = NULL;

	if (f->kind == KIND_HTTP) {
		make_transport(f, "--protocol", "2024-11-05", NULL);
		g_assert_false(start(f, &error));
		g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED);
		g_assert_nonnull(strstr(error->message, "2024-11-05"));
		g_assert_nonnull(strstr(error->message, "stdio"));
		return;
	}
	start_fake(f, "--protocol", "2024-11-05", NULL);
	g_assert_cmpstr(confab_mcp_client_get_protocol_version(f->client), ==, "2024-11-05");
	result = call(f, "echo", "{\"text\":\"november\"}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(result->text, ==, "november");
	batched = call(f, "batch", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(batched->text, ==, "batched");
}

/* Since 2025-06-18 a batch is not a message: it is counted malformed. */
static void
test_batch_refused(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;
	Wait w = {0};

	start_fake(f, "--protocol", "2025-06-18", NULL);
	call_async(f, "batch", NULL, 300000, 0, NULL, NULL, &w);
	g_assert_true(confab_test_wait_until(malformed_counted, f, 20000));
	/* over HTTP the exchange ended without an answer; over stdio the call
	 * waits for one that never comes */
	if (w.result == NULL)
		confab_mcp_client_close(f->client);
	result = call_finish(f, &w, &error);
	g_assert_null(result);
	g_assert_nonnull(error);
}

static void
test_version_older(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;

	/* over HTTP the fake refuses a wrong MCP-Protocol-Version */
	start_fake(f, "--protocol", "2025-06-18", NULL);
	g_assert_cmpstr(confab_mcp_client_get_protocol_version(f->client), ==, "2025-06-18");
	result = call(f, "echo", "{\"text\":\"old\"}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(result->text, ==, "old");
}

/* A server that declares no tools capability is not asked for its tools:
 * it has none. */
static void
test_no_tools_capability(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) tools = NULL;
	g_autoptr(GError) error = NULL;

	start_fake(f, "--capabilities", "{}", NULL);
	tools = list_tools(f, &error);
	g_assert_no_error(error);
	g_assert_nonnull(tools);
	g_assert_cmpuint(tools->len, ==, 0);
	g_assert_cmpuint(count_recorded(f, "tools/list"), ==, 0);
}

/* elicitation/create (form mode) reaches the handler; the answer is
 * checked against the schema, its defaults filled in. */
static void
test_elicitation(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(ConfabMcpToolResult) dropped = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) bad = confab_json_from_string("{\"email\":\"nobody\"}");
	g_autoptr(JsonNode) good = confab_json_from_string("{\"email\":\"ada@example.org\","
							   "\"age\":41}");
	g_autofree gchar *capabilities = NULL;
	Wait w = {0};

	start_eliciting(f);
	capabilities = declared_capabilities(f);
	g_assert_cmpstr(capabilities, ==, "{\"elicitation\":{\"form\":{}}}");
	call_async(f, "elicit", NULL, 30000, 0, NULL, NULL, &w);
	g_assert_true(confab_test_wait_until(elicitation_arrived, f, 20000));
	g_assert_cmpstr(confab_mcp_elicitation_get_message(f->elicitation), ==, "Who are you?");
	g_assert_cmpstr(confab_mcp_elicitation_get_server(f->elicitation), ==, "fake");
	/* content that does not match: refused, nothing sent, asked again */
	g_assert_false(confab_mcp_elicitation_respond(f->elicitation,
						      "accept",
						      json_node_get_object(bad),
						      &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	g_assert_cmpstr(error->message, ==, "content.email: does not have the format asked for");
	g_clear_error(&error);
	g_assert_false(confab_mcp_elicitation_is_answered(f->elicitation));
	g_assert_true(confab_mcp_elicitation_respond(f->elicitation,
						     "accept",
						     json_node_get_object(good),
						     &error));
	g_assert_no_error(error);
	result = call_finish(f, &w, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(result->text,
			==,
			"{\"action\":\"accept\",\"content\":{\"name\":\"John Doe\",\"age\":41,"
			"\"score\":95.5,\"status\":\"active\",\"verified\":true,"
			"\"email\":\"ada@example.org\"}}");
	g_assert_false(confab_mcp_elicitation_respond(f->elicitation, "decline", NULL, &error));
	g_clear_error(&error);

	/* one dropped unanswered is answered cancel */
	f->drop_elicitation = TRUE;
	dropped = call(f, "elicit", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(dropped->text, ==, "{\"action\":\"cancel\"}");
}

/* With two calls in flight, an elicitation names the call it serves:
 * over Streamable HTTP the one whose answer stream brought it, not the
 * oldest; over stdio nothing says, and it names none. */
static void
test_elicitation_routed(Fixture *f, gconstpointer data)
{
	Kind kind = GPOINTER_TO_INT(data);
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	g_autoptr(ConfabMcpToolResult) asked = NULL;
	g_autoptr(ConfabMcpToolResult) slow = NULL;
	g_autoptr(GError) error = NULL;
	CallCheck arrived = {f, "slow"};
	Progress slow_progress = {0};
	Progress elicit_progress = {0};
	Wait slow_wait = {0};
	Wait elicit_wait = {0};

	start_eliciting(f);
	call_async(f, "slow", "{\"ms\":60000}", 0, 0, &slow_progress, cancellable, &slow_wait);
	g_assert_true(confab_test_wait_until(call_recorded, &arrived, 10000));
	call_async(f, "elicit", NULL, 30000, 0, &elicit_progress, NULL, &elicit_wait);
	g_assert_true(confab_test_wait_until(elicitation_arrived, f, 20000));
	if (kind == KIND_HTTP)
		g_assert_true(f->elicitation_call == &elicit_progress);
	else
		g_assert_null(f->elicitation_call);
	g_assert_true(confab_mcp_elicitation_respond(f->elicitation, "decline", NULL, &error));
	g_assert_no_error(error);
	asked = call_finish(f, &elicit_wait, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(asked->text, ==, "{\"action\":\"decline\"}");
	/* an elicitation holds its connection */
	g_clear_pointer(&f->elicitation, confab_mcp_elicitation_unref);
	g_cancellable_cancel(cancellable);
	slow = call_finish(f, &slow_wait, &error);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
}

/* A form MCP does not allow is refused without asking anyone; a client
 * without a handler declares nothing and refuses elicitation. */
static void
test_elicitation_refused(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) nested = NULL;
	g_autoptr(ConfabMcpToolResult) unasked = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *capabilities = NULL;

	start_eliciting(f);
	nested = call(f,
		      "elicit",
		      "{\"schema\":{\"type\":\"object\",\"properties\":{\"address\":{\"type\":"
		      "\"object\"}}}}",
		      &error);
	g_assert_no_error(error);
	g_assert_null(f->elicitation);
	g_assert_nonnull(strstr(nested->text, "-32602"));
	g_assert_nonnull(strstr(nested->text, "address"));
	confab_mcp_client_close(f->client);
	fixture_teardown(f, data);
	memset(f, 0, sizeof *f);
	fixture_setup(f, data);

	start_fake(f, NULL);
	capabilities = declared_capabilities(f);
	g_assert_cmpstr(capabilities, ==, "{}");
	unasked = call(f, "elicit", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(unasked->text, ==, "{\"code\":-32601,\"message\":\"Method not found\"}");
}

static void
test_malformed(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;

	start_fake(f, NULL);
	result = call(f, "malformed", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(result->text, ==, "answered anyway");
	g_assert_cmpuint(
	    confab_mcp_jsonrpc_get_n_malformed(confab_mcp_client_get_jsonrpc(f->client)),
	    ==,
	    1);
}

static void
test_server_requests(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;

	start_fake(f, NULL);
	result = call(f, "ask_client", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(result->text,
			==,
			"ping: {}; other: {\"code\":-32601,\"message\":\"Method not found\"}");
}

static void
test_crash_after(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) first = NULL;
	g_autoptr(ConfabMcpToolResult) second = NULL;
	g_autoptr(GError) error = NULL;

	/* initialize and one call */
	start_fake(f, "--crash-after", "2", NULL);
	first = call(f, "echo", "{\"text\":\"one\"}", &error);
	g_assert_no_error(error);
	second = call(f, "echo", "{\"text\":\"two\"}", &error);
	g_assert_null(second);
	g_assert_nonnull(error);
	g_assert_true(confab_test_wait_until(closed_fired, f, 10000));
}

/* ---------- stdio only ---------- */

static void
test_stdio_environment(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) lines = NULL;
	g_autofree gchar *home = NULL;
	g_autofree gchar *path = g_strdup_printf("PATH=%s", g_getenv("PATH"));

	start_fake(f, NULL);
	result = call(f, "env", NULL, &error);
	g_assert_no_error(error);
	lines = g_strsplit(result->text, "\n", -1);
	home = g_strdup_printf("HOME=%s", f->tmpdir);
	/* only these, whatever the test's own environment holds */
	g_assert_cmpuint(g_strv_length(lines), ==, 4);
	g_assert_cmpstr(lines[0], ==, "FOO=bar");
	g_assert_cmpstr(lines[1], ==, home);
	g_assert_true(g_str_has_prefix(lines[2], "LANG="));
	g_assert_cmpstr(lines[3], ==, path);
}

static gboolean
stdio_exited(gpointer data)
{
	return confab_mcp_stdio_has_exited(CONFAB_MCP_STDIO(data));
}

static void
test_stdio_kill(Fixture *f, gconstpointer data)
{
	pid_t pid;
	gint64 start_time;

	start_fake(f, "--ignore-term", NULL);
	confab_mcp_stdio_set_kill_timeout(CONFAB_MCP_STDIO(f->transport), 300);
	pid =
	    (pid_t)g_ascii_strtoll(confab_mcp_stdio_get_identifier(CONFAB_MCP_STDIO(f->transport)),
				   NULL,
				   10);
	g_assert_cmpint(kill(pid, 0), ==, 0);
	start_time = g_get_monotonic_time();
	confab_mcp_client_close(f->client);
	g_assert_cmpuint(f->closed, ==, 1);
	g_assert_null(f->closed_error);
	/* it survives SIGTERM, not SIGKILL */
	g_assert_true(confab_test_wait_until(stdio_exited, f->transport, 10000));
	g_assert_cmpint(g_get_monotonic_time() - start_time, >=, 300000);
	g_assert_cmpint(kill(pid, 0), ==, -1);
	g_assert_cmpint(errno, ==, ESRCH);
}

static void
test_stdio_terminate(Fixture *f, gconstpointer data)
{
	gint64 start_time;

	start_fake(f, NULL);
	start_time = g_get_monotonic_time();
	confab_mcp_client_close(f->client);
	g_assert_true(confab_test_wait_until(stdio_exited, f->transport, 10000));
	/* SIGTERM was enough: long before the 5 s */
	g_assert_cmpint(g_get_monotonic_time() - start_time, <, 4000000);
}

static void
test_stdio_bad_command(Fixture *f, gconstpointer data)
{
	const gchar *argv[] = {"/nonexistent/mcp-server", NULL};
	g_autoptr(GError) error = NULL;

	f->transport =
	    CONFAB_MCP_TRANSPORT(confab_mcp_stdio_new("fake", argv, NULL, NULL, f->tmpdir, &error));
	g_assert_no_error(error);
	g_assert_false(start(f, &error));
	g_assert_nonnull(error);
	g_assert_true(confab_mcp_client_is_closed(f->client));
	g_assert_cmpuint(f->closed, ==, 1);
}

/* ---------- HTTP only ---------- */

static void
test_http_session_expired(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) forgotten = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *first_session = NULL;

	start_fake(f, NULL);
	first_session = g_strdup(confab_mcp_http_get_session_id(CONFAB_MCP_HTTP(f->transport)));
	g_assert_nonnull(first_session);
	forgotten = call(f, "forget_session", NULL, &error);
	g_assert_no_error(error);
	/* the 404 starts a new session, and the call goes through in it */
	result = call(f, "echo", "{\"text\":\"again\"}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(result->text, ==, "again");
	g_assert_cmpuint(count_recorded(f, "404"), ==, 1);
	g_assert_cmpuint(count_recorded(f, "initialize"), ==, 2);
	wait_initialized(f, 2);
	g_assert_cmpstr(confab_mcp_http_get_session_id(CONFAB_MCP_HTTP(f->transport)),
			!=,
			first_session);
	g_assert_cmpuint(f->closed, ==, 0);
}

static gboolean
deleted(gpointer data)
{
	return count_recorded(data, "DELETE") == 1;
}

static void
test_http_delete(Fixture *f, gconstpointer data)
{
	start_fake(f, NULL);
	confab_mcp_client_close(f->client);
	g_assert_true(confab_test_wait_until(deleted, f, 10000));
}

static void
test_http_headers(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;

	make_transport(f,
		       "--require-header",
		       "Authorization: Bearer s3cret",
		       "--require-header",
		       "X-Api-Key: k1",
		       NULL);
	g_assert_true(
	    confab_mcp_http_set_bearer_token(CONFAB_MCP_HTTP(f->transport), "s3cret", &error));
	g_assert_true(
	    confab_mcp_http_add_header(CONFAB_MCP_HTTP(f->transport), "X-Api-Key", "k1", &error));
	/* no header smuggling, no framing headers */
	g_assert_false(
	    confab_mcp_http_add_header(CONFAB_MCP_HTTP(f->transport), "X", "a\r\nB: c", &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
	g_clear_error(&error);
	g_assert_false(confab_mcp_http_add_header(CONFAB_MCP_HTTP(f->transport),
						  "Content-Length",
						  "1",
						  &error));
	g_clear_error(&error);
	g_assert_false(
	    confab_mcp_http_add_header(CONFAB_MCP_HTTP(f->transport), "Bad Name", "1", &error));
	g_clear_error(&error);
	g_assert_true(start(f, &error));
	g_assert_no_error(error);
	result = call(f, "echo", "{\"text\":\"authorized\"}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(result->text, ==, "authorized");
}

static void
test_http_unauthorized(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;

	make_transport(f, "--require-header", "Authorization: Bearer s3cret", NULL);
	g_assert_false(start(f, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM);
	g_assert_nonnull(strstr(error->message, "401"));
}

/* An HTTP error body of any shape gives an error naming the server, never
 * a critical (the tests run with fatal criticals). */
static void
test_http_error_bodies(Fixture *f, gconstpointer data)
{
	static const struct {
		const gchar *body;
		const gchar *expect; /* in the message, or NULL */
	} bodies[] = {
	    {"{\"error\":\"invalid_token\",\"error_description\":\"The token expired\"}",
	     "invalid_token: The token expired"},
	    {"{\"error\":\"invalid_token\"}", "invalid_token"},
	    {"{\"error\":{\"code\":-32001,\"message\":\"Session gone\"}}", "Session gone"},
	    {"{\"error\":{\"message\":42}}", NULL},
	    {"{\"error\":[1,2]}", NULL},
	    {"{\"error\":null}", NULL},
	    {"[\"error\",\"message\"]", NULL},
	    {"\"just a string\"", NULL},
	    {"Unauthorized: no token given", "Unauthorized: no token given"},
	    {"<html><body>401</body></html>", NULL},
	};

	for (guint i = 0; i < G_N_ELEMENTS(bodies); i++) {
		g_autoptr(GError) error = NULL;

		make_transport(f,
			       "--require-header",
			       "Authorization: Bearer s3cret",
			       "--error-body",
			       bodies[i].body,
			       NULL);
		g_assert_false(start(f, &error));
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM);
		g_assert_nonnull(strstr(error->message, "fake"));
		g_assert_nonnull(strstr(error->message, "401"));
		if (bodies[i].expect != NULL)
			g_assert_nonnull(strstr(error->message, bodies[i].expect));
		g_assert_null(strstr(error->message, "<html>"));
		fixture_teardown(f, data);
		memset(f, 0, sizeof *f);
		fixture_setup(f, data);
	}
}

/* A stream cut before its answer, cleanly or not, is resumed with GET and
 * Last-Event-ID after the server's retry: delay (the fake refuses a GET
 * that comes sooner), again if it is cut again. */
static void
test_http_resume(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) once = NULL;
	g_autoptr(ConfabMcpToolResult) twice = NULL;
	g_autoptr(ConfabMcpToolResult) after = NULL;
	g_autoptr(GPtrArray) messages = NULL;
	g_autoptr(GError) error = NULL;
	guint n = 0;

	start_fake(f, NULL);
	once = call(f, "drop", "{\"retry\":150}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(once->text, ==, "resumed");
	g_assert_cmpuint(count_recorded(f, "RESUME"), ==, 1);
	twice = call(f, "drop", "{\"times\":2,\"clean\":false,\"retry\":100}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(twice->text, ==, "resumed");
	messages = recorded(f);
	for (guint i = 0; i < messages->len; i++) {
		JsonObject *m = messages->pdata[i];
		g_autofree gchar *expected = NULL;
		if (g_strcmp0(json_object_get_string_member_with_default(m, "_http", ""),
			      "RESUME") != 0)
			continue;
		/* each GET names the last event of the stream it resumes */
		expected = g_strdup_printf("drop-%u", ++n);
		g_assert_cmpstr(json_object_get_string_member(m, "last_event_id"), ==, expected);
	}
	g_assert_cmpuint(n, ==, 3);
	/* the session goes on */
	after = call(f, "echo", "{\"text\":\"still here\"}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(after->text, ==, "still here");
}

/* A server that cuts every resumed stream too, each time after a new
 * event id: the call's timeout still ends the call. */
static void
test_http_resume_timeout(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;
	Wait w = {0};

	start_fake(f, NULL);
	call_async(f, "drop", "{\"times\":1000000,\"retry\":20}", 1000, 0, NULL, NULL, &w);
	result = call_finish(f, &w, &error);
	g_assert_null(result);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
}

static gboolean
listening(gpointer data)
{
	return confab_mcp_http_is_listening(data);
}

static void
test_http_get_stream(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;

	start_fake(f, "--get-stream", NULL);
	g_assert_true(confab_test_wait_until(listening, f->transport, 10000));
	f->tools_changed = 0;
	/* the fake sends list_changed on the GET stream when there is one */
	result = call(f, "change_tools", NULL, &error);
	g_assert_no_error(error);
	g_assert_true(confab_test_wait_until(tools_changed_fired, f, 10000));
}

static void
test_http_unreachable(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GSocket) socket = NULL;
	g_autoptr(GSocketAddress) address = NULL;
	g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
	g_autoptr(GSocketAddress) any = g_inet_socket_address_new(loopback, 0);

	/* a port nobody listens on: bound, never listening */
	socket =
	    g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &error);
	g_assert_no_error(error);
	g_assert_true(g_socket_bind(socket, any, FALSE, &error));
	address = g_socket_get_local_address(socket, &error);
	f->url = g_strdup_printf("http://127.0.0.1:%u/mcp",
				 g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(address)));
	f->transport = CONFAB_MCP_TRANSPORT(confab_mcp_http_new("fake", f->url, NULL, &error));
	g_assert_false(start(f, &error));
	g_assert_nonnull(error);
	g_assert_true(confab_mcp_client_is_closed(f->client));
}

/* ---------- elicitation forms, without a server ---------- */

static void
test_elicitation_schema(void)
{
	static const gchar schema_text[] =
	    "{\"type\":\"object\",\"properties\":{"
	    "\"name\":{\"type\":\"string\",\"minLength\":2,\"maxLength\":5},"
	    "\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":3,\"default\":2},"
	    "\"x\":{\"type\":\"number\"},"
	    "\"ok\":{\"type\":\"boolean\"},"
	    "\"site\":{\"type\":\"string\",\"format\":\"uri\"},"
	    "\"day\":{\"type\":\"string\",\"format\":\"date\"},"
	    "\"at\":{\"type\":\"string\",\"format\":\"date-time\"},"
	    "\"size\":{\"type\":\"string\",\"oneOf\":[{\"const\":\"s\",\"title\":\"Small\"},"
	    "{\"const\":\"l\",\"title\":\"Large\"}]},"
	    "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\",\"c\"]},"
	    "\"maxItems\":2}},"
	    "\"required\":[\"name\"]}";
	static const struct {
		const gchar *content;
		const gchar *expect; /* the content sent, or the error */
	} cases[] = {
	    {"{\"name\":\"Ada\"}", "{\"name\":\"Ada\",\"n\":2}"},
	    {"{\"name\":\"Ada\",\"n\":3,\"x\":1.5,\"ok\":false,\"size\":\"l\","
	     "\"tags\":[\"a\",\"c\"],\"site\":\"https://example.org/\",\"day\":\"2026-11-28\","
	     "\"at\":\"2026-11-28T10:00:00Z\"}",
	     "{\"name\":\"Ada\",\"n\":3,\"x\":1.5,\"ok\":false,\"site\":\"https://example.org/\","
	     "\"day\":\"2026-11-28\",\"at\":\"2026-11-28T10:00:00Z\",\"size\":\"l\","
	     "\"tags\":[\"a\",\"c\"]}"},
	    {"{}", "content.name: is required"},
	    {"{\"name\":\"A\"}", "content.name: is shorter than its minLength"},
	    {"{\"name\":\"Adalbert\"}", "content.name: is longer than its maxLength"},
	    {"{\"name\":7}", "content.name: must be a string"},
	    {"{\"name\":\"Ada\",\"n\":2.5}", "content.n: must be an integer"},
	    {"{\"name\":\"Ada\",\"n\":9}", "content.n: is above its maximum"},
	    {"{\"name\":\"Ada\",\"n\":0}", "content.n: is below its minimum"},
	    {"{\"name\":\"Ada\",\"x\":\"1\"}", "content.x: must be a number"},
	    {"{\"name\":\"Ada\",\"ok\":\"yes\"}", "content.ok: must be true or false"},
	    {"{\"name\":\"Ada\",\"size\":\"m\"}", "content.size: is not one of the values offered"},
	    {"{\"name\":\"Ada\",\"tags\":[\"a\",\"z\"]}",
	     "content.tags: holds a value not offered"},
	    {"{\"name\":\"Ada\",\"tags\":[\"a\",\"a\"]}", "content.tags: holds a value twice"},
	    {"{\"name\":\"Ada\",\"tags\":[\"a\",\"b\",\"c\"]}",
	     "content.tags: has more items than its maxItems"},
	    {"{\"name\":\"Ada\",\"site\":\"not a uri\"}",
	     "content.site: does not have the format asked for"},
	    {"{\"name\":\"Ada\",\"day\":\"28.11.2026\"}",
	     "content.day: does not have the format asked for"},
	    {"{\"name\":\"Ada\",\"at\":\"yesterday\"}",
	     "content.at: does not have the format asked for"},
	    {"{\"name\":\"Ada\",\"extra\":1}", "content.extra: is not in the requested schema"},
	};
	g_autoptr(JsonNode) schema = confab_json_from_string(schema_text);
	g_autoptr(JsonNode) nested = confab_json_from_string(
	    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\"}}}");
	g_autoptr(GError) error = NULL;

	g_assert_true(confab_mcp_elicitation_check_schema(json_node_get_object(schema), &error));
	g_assert_no_error(error);
	g_assert_false(confab_mcp_elicitation_check_schema(json_node_get_object(nested), &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	g_clear_error(&error);
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(JsonNode) content = confab_json_from_string(cases[i].content);
		g_autoptr(JsonObject) out =
		    confab_mcp_elicitation_apply_schema(json_node_get_object(schema),
							json_node_get_object(content),
							&error);
		if (out != NULL) {
			g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), out);
			g_autofree gchar *text = confab_json_to_string(node);
			g_assert_no_error(error);
			g_assert_cmpstr(text, ==, cases[i].expect);
		} else {
			g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
			g_assert_cmpstr(error->message, ==, cases[i].expect);
			g_clear_error(&error);
		}
	}
}

/* ---------- tool results, without a server ---------- */

static void
test_result_format(void)
{
	g_autoptr(JsonNode) node = confab_json_from_string(
	    "{\"content\":[{\"type\":\"text\",\"text\":\"ééééé\"},{\"type\":\"image\",\"data\":"
	    "\"AAAA\",\"mimeType\":\"image/jpeg\"},{\"type\":\"future\"}],\"isError\":true}");
	g_autoptr(ConfabMcpToolResult) whole = NULL;
	g_autoptr(ConfabMcpToolResult) cut = NULL;
	g_autoptr(ConfabMcpToolResult) empty = NULL;
	g_autoptr(JsonNode) nothing = confab_json_from_string("{}");
	g_autoptr(JsonNode) array = confab_json_from_string("[]");
	g_autoptr(GError) error = NULL;

	whole = confab_mcp_tool_result_new_from_json(node, 0, &error);
	g_assert_no_error(error);
	g_assert_true(whole->is_error);
	g_assert_cmpstr(whole->text, ==, "ééééé\n[image: image/jpeg, 3 bytes]\n[future content]");
	/* never half a character */
	cut = confab_mcp_tool_result_new_from_json(node, 5, &error);
	g_assert_cmpstr(cut->text, ==, "éé\n[output truncated at 5 bytes]");
	g_assert_true(cut->truncated);
	empty = confab_mcp_tool_result_new_from_json(nothing, 0, &error);
	g_assert_cmpstr(empty->text, ==, "");
	g_assert_false(empty->is_error);
	g_assert_null(confab_mcp_tool_result_new_from_json(array, 0, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM);
}

/* ---------- the reference server ---------- */

typedef struct {
	gchar *node;
	gchar *script;
} Everything;

static gboolean
everything_find(Everything *e)
{
	const gchar *root = g_getenv("MESON_SOURCE_ROOT");

	e->node = g_find_program_in_path("node");
	e->script = g_build_filename(root != NULL ? root : ".",
				     "tests",
				     "mcp",
				     "node_modules",
				     "@modelcontextprotocol",
				     "server-everything",
				     "dist",
				     "index.js",
				     NULL);
	if (e->node == NULL) {
		g_test_skip("node is not installed");
		return FALSE;
	}
	if (!g_file_test(e->script, G_FILE_TEST_EXISTS)) {
		g_test_skip("@modelcontextprotocol/server-everything is not installed "
			    "(cd tests/mcp && npm ci)");
		return FALSE;
	}
	return TRUE;
}

static void
everything_clear(Everything *e)
{
	g_free(e->node);
	g_free(e->script);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Everything, everything_clear)

static guint16
free_port(void)
{
	g_autoptr(GSocket) socket =
	    g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
	g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
	g_autoptr(GSocketAddress) any = g_inet_socket_address_new(loopback, 0);
	g_autoptr(GSocketAddress) address = NULL;

	g_assert_true(g_socket_bind(socket, any, FALSE, NULL));
	address = g_socket_get_local_address(socket, NULL);
	return g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(address));
}

static gboolean
port_open(gpointer data)
{
	g_autoptr(GSocketClient) client = g_socket_client_new();
	g_autoptr(GSocketConnection) connection =
	    g_socket_client_connect_to_host(client,
					    "127.0.0.1",
					    GPOINTER_TO_UINT(data),
					    NULL,
					    NULL);
	return connection != NULL;
}

static void
test_everything(Fixture *f, gconstpointer data)
{
	g_auto(Everything) e = {0};
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tools = NULL;
	g_autoptr(ConfabMcpToolResult) echo = NULL;
	g_autoptr(ConfabMcpToolResult) sum = NULL;
	g_autoptr(ConfabMcpToolResult) image = NULL;
	g_autoptr(ConfabMcpToolResult) structured = NULL;
	g_autoptr(ConfabMcpToolResult) longer = NULL;
	Progress progress = {0};
	Wait w = {0};
	gboolean has_echo = FALSE;

	if (!everything_find(&e))
		return;
	if (f->kind == KIND_STDIO) {
		const gchar *argv[] = {e.node, e.script, "stdio", NULL};
		f->transport = CONFAB_MCP_TRANSPORT(
		    confab_mcp_stdio_new("everything", argv, NULL, NULL, f->tmpdir, &error));
	} else {
		const gchar *argv[] = {e.node, e.script, "streamableHttp", NULL};
		guint16 port = free_port();
		g_autofree gchar *port_text = g_strdup_printf("%u", port);
		g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
		    G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);
		g_subprocess_launcher_setenv(launcher, "PORT", port_text, TRUE);
		f->server = g_subprocess_launcher_spawnv(launcher, argv, &error);
		g_assert_no_error(error);
		g_assert_true(confab_test_wait_until(port_open, GUINT_TO_POINTER(port), 30000));
		f->url = g_strdup_printf("http://127.0.0.1:%u/mcp", port);
		f->transport =
		    CONFAB_MCP_TRANSPORT(confab_mcp_http_new("everything", f->url, NULL, &error));
	}
	g_assert_no_error(error);
	g_assert_true(start_named(f, "everything", &error));
	g_assert_no_error(error);
	g_assert_cmpstr(confab_mcp_client_get_protocol_version(f->client), ==, "2025-11-25");

	tools = list_tools(f, &error);
	g_assert_no_error(error);
	for (guint i = 0; i < tools->len; i++)
		has_echo |= g_strcmp0(((ConfabMcpTool *)tools->pdata[i])->name, "echo") == 0;
	g_assert_true(has_echo);

	echo = call(f, "echo", "{\"message\":\"hi\"}", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(echo->text, ==, "Echo: hi");
	sum = call(f, "get-sum", "{\"a\":2,\"b\":3}", &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(sum->text, "5"));
	image = call(f, "get-tiny-image", NULL, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(image->text, "[image: image/png, "));
	structured = call(f, "get-structured-content", "{\"location\":\"New York\"}", &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(structured->text, "temperature"));

	call_async(f,
		   "trigger-long-running-operation",
		   "{\"duration\":0.3,\"steps\":3}",
		   20000,
		   0,
		   &progress,
		   NULL,
		   &w);
	longer = call_finish(f, &w, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(longer->text, "completed"));
	g_assert_cmpuint(progress.count, ==, 3);
	g_assert_cmpfloat(progress.last_total, ==, 3);
	g_free(progress.last_message);

	if (f->kind == KIND_HTTP)
		g_assert_true(confab_test_wait_until(listening, f->transport, 10000));
	confab_mcp_client_close(f->client);
}

static void
add_tests(Kind kind)
{
	const gchar *name = kind == KIND_STDIO ? "stdio" : "http";
	struct {
		const gchar *path;
		void (*func)(Fixture *, gconstpointer);
		gint only; /* -1: both */
	} cases[] = {
	    {"list-paginated", test_list_paginated, -1},
	    {"echo", test_echo, -1},
	    {"unknown-tool", test_unknown_tool, -1},
	    {"parallel", test_parallel, -1},
	    {"timeout", test_timeout, -1},
	    {"cancel", test_cancel, -1},
	    {"progress", test_progress, -1},
	    {"is-error", test_is_error, -1},
	    {"huge", test_huge, -1},
	    {"parts", test_parts, -1},
	    {"die", test_die, -1},
	    {"crash-after", test_crash_after, -1},
	    {"list-changed", test_list_changed, -1},
	    {"version-refused", test_version_refused, -1},
	    {"version-older", test_version_older, -1},
	    {"version-2025-03-26", test_version_2025_03_26, -1},
	    {"version-2024-11-05", test_version_2024_11_05, -1},
	    {"batch-refused", test_batch_refused, -1},
	    {"no-tools-capability", test_no_tools_capability, -1},
	    {"elicitation", test_elicitation, -1},
	    {"elicitation-refused", test_elicitation_refused, -1},
	    {"elicitation-routed", test_elicitation_routed, -1},
	    {"malformed", test_malformed, -1},
	    {"server-requests", test_server_requests, -1},
	    {"environment", test_stdio_environment, KIND_STDIO},
	    {"kill", test_stdio_kill, KIND_STDIO},
	    {"terminate", test_stdio_terminate, KIND_STDIO},
	    {"bad-command", test_stdio_bad_command, KIND_STDIO},
	    {"session-expired", test_http_session_expired, KIND_HTTP},
	    {"delete", test_http_delete, KIND_HTTP},
	    {"headers", test_http_headers, KIND_HTTP},
	    {"unauthorized", test_http_unauthorized, KIND_HTTP},
	    {"error-bodies", test_http_error_bodies, KIND_HTTP},
	    {"resume", test_http_resume, KIND_HTTP},
	    {"resume-timeout", test_http_resume_timeout, KIND_HTTP},
	    {"get-stream", test_http_get_stream, KIND_HTTP},
	    {"unreachable", test_http_unreachable, KIND_HTTP},
	    {"everything", test_everything, -1},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *path = NULL;
		if (cases[i].only >= 0 && cases[i].only != (gint)kind)
			continue;
		path = g_strdup_printf("/confab/mcp-client/%s/%s", name, cases[i].path);
		g_test_add(path,
			   Fixture,
			   GINT_TO_POINTER(kind),
			   fixture_setup,
			   cases[i].func,
			   fixture_teardown);
	}
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/mcp-client/result-format", test_result_format);
	g_test_add_func("/confab/mcp-client/elicitation-schema", test_elicitation_schema);
	add_tests(KIND_STDIO);
	add_tests(KIND_HTTP);
	return g_test_run();
}
