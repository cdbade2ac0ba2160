/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include "confab-test-helper.h"
#include "tools/confab-toolbox.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/* The tool servers of agents, against tests/fake-mcp-server: started on
 * use, named for the model, called, timed out, cancelled, restarted after
 * they die, reconfigured, forgotten and shut down. */

#define AGENT	     "ag_1"
#define WAIT_MS	     20000
#define N_FAKE_TOOLS 18

typedef struct {
	gchar *tmpdir;
	gchar *record;
	ConfabToolbox *toolbox;
	GSubprocess *http_server;
} Fixture;

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
fixture_setup(Fixture *f, gconstpointer data)
{
	f->tmpdir = confab_test_make_tmpdir("toolbox");
	f->record = g_build_filename(f->tmpdir, "record.jsonl", NULL);
	f->toolbox = confab_toolbox_new(f->tmpdir, 0);
	confab_toolbox_set_backoff(f->toolbox, 200, 800);
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
	g_assert_true(confab_test_wait_until(wait_done, w, WAIT_MS));
}

static gboolean
is_null(gpointer data)
{
	return *(gpointer *)data == NULL;
}

static gboolean
shutdown(Fixture *f, GError **error)
{
	Wait w = {0};
	gboolean ok;

	confab_toolbox_shutdown_async(f->toolbox, NULL, on_result, &w);
	wait_result(&w);
	ok = confab_toolbox_shutdown_finish(f->toolbox, w.result, error);
	g_object_unref(w.result);
	return ok;
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	gpointer toolbox = f->toolbox;

	g_assert_true(shutdown(f, &error));
	g_assert_no_error(error);
	/* nothing still holds it: every operation ended */
	g_object_add_weak_pointer(toolbox, &toolbox);
	g_clear_object(&f->toolbox);
	g_assert_true(confab_test_wait_until(is_null, &toolbox, WAIT_MS));
	if (f->http_server != NULL) {
		g_subprocess_force_exit(f->http_server);
		g_subprocess_wait(f->http_server, NULL, NULL);
		g_clear_object(&f->http_server);
	}
	confab_test_rm_rf(f->tmpdir);
	g_free(f->tmpdir);
	g_free(f->record);
}

/* "NAME":{"command":FAKE,"args":["--record",RECORD,ARGS...]EXTRA} */
static gchar *
fake_json(Fixture *f, const gchar *name, const gchar *extra, const gchar *const *args)
{
	GString *json = g_string_new(NULL);

	confab_json_append_string(json, name);
	g_string_append(json, ":{\"command\":");
	confab_json_append_string(json, fake_server());
	g_string_append(json, ",\"args\":[\"--record\",");
	confab_json_append_string(json, f->record);
	for (guint i = 0; args != NULL && args[i] != NULL; i++) {
		g_string_append_c(json, ',');
		confab_json_append_string(json, args[i]);
	}
	g_string_append_printf(json, "]%s}", extra != NULL ? extra : "");
	return g_string_free(json, FALSE);
}

static gchar *
config_of(const gchar *servers)
{
	return g_strdup_printf("{\"mcpServers\":{%s}}", servers);
}

/* One fake server named @name. */
static gchar *
fake_config(Fixture *f, const gchar *name, const gchar *extra)
{
	g_autofree gchar *server = fake_json(f, name, extra, NULL);
	return config_of(server);
}

static GPtrArray *
list_tools(Fixture *f, const gchar *agent, const gchar *config, GError **error)
{
	Wait w = {0};
	GPtrArray *tools;

	confab_toolbox_list_tools_async(f->toolbox, agent, config, NULL, on_result, &w);
	wait_result(&w);
	tools = confab_toolbox_list_tools_finish(f->toolbox, w.result, error);
	g_object_unref(w.result);
	return tools;
}

static ConfabToolboxTool *
find_tool(GPtrArray *tools, const gchar *name)
{
	for (guint i = 0; i < tools->len; i++) {
		ConfabToolboxTool *tool = tools->pdata[i];
		if (strcmp(tool->name, name) == 0)
			return tool;
	}
	return NULL;
}

static ConfabToolboxTool *
find_server_entry(GPtrArray *tools, const gchar *server)
{
	for (guint i = 0; i < tools->len; i++) {
		ConfabToolboxTool *tool = tools->pdata[i];
		if (strcmp(tool->server, server) == 0)
			return tool;
	}
	return NULL;
}

typedef struct {
	guint count;
	gdouble last_progress;
	gdouble last_total;
	gchar *last_message;
	guint freed;
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
	((Progress *)user_data)->freed++;
}

static void
call_async(Fixture *f,
	   const gchar *agent,
	   const gchar *config,
	   const gchar *name,
	   const gchar *arguments,
	   Progress *progress,
	   GCancellable *cancellable,
	   Wait *w)
{
	g_autoptr(JsonNode) args = arguments != NULL ? confab_json_from_string(arguments) : NULL;
	confab_toolbox_call_async(f->toolbox,
				  agent,
				  config,
				  name,
				  args != NULL ? json_node_get_object(args) : NULL,
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
	result = confab_toolbox_call_finish(f->toolbox, w->result, error);
	g_clear_object(&w->result);
	return result;
}

static ConfabMcpToolResult *
call(Fixture *f, const gchar *config, const gchar *name, const gchar *arguments, GError **error)
{
	Wait w = {0};
	call_async(f, AGENT, config, name, arguments, NULL, NULL, &w);
	return call_finish(f, &w, error);
}

static void
assert_echo(Fixture *f, const gchar *config, const gchar *name)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) result =
	    call(f, config, name, "{\"text\":\"hello\"}", &error);

	g_assert_no_error(error);
	g_assert_false(result->is_error);
	g_assert_cmpstr(result->text, ==, "hello");
}

static gboolean
pid_gone(gpointer data)
{
	GPid pid = GPOINTER_TO_INT(data);
	return kill(pid, 0) < 0 && errno == ESRCH;
}

static void
assert_pid_gone(GPid pid)
{
	g_assert_cmpint(pid, >, 0);
	g_assert_true(confab_test_wait_until(pid_gone, GINT_TO_POINTER(pid), WAIT_MS));
}

static gboolean
name_ok(const gchar *name)
{
	gsize len = strlen(name);
	return len >= 1 && len <= 64 &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
		   len;
}

/* ---------- listing and calling ---------- */

static void
test_list(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = fake_config(f, "fake", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tools = NULL;
	ConfabToolboxTool *echo;
	g_autofree gchar *server = NULL;
	g_autofree gchar *tool = NULL;

	/* nothing runs before the first use */
	g_assert_false(confab_toolbox_is_tool(f->toolbox, AGENT, config, "fake__echo"));
	g_assert_cmpint(confab_toolbox_get_server_pid(f->toolbox, AGENT, "fake"), ==, 0);

	tools = list_tools(f, AGENT, config, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(tools->len, ==, N_FAKE_TOOLS);
	for (guint i = 0; i < tools->len; i++) {
		ConfabToolboxTool *t = tools->pdata[i];
		g_autofree gchar *expected = g_strconcat("fake__", t->tool, NULL);
		g_assert_cmpstr(t->name, ==, expected);
		g_assert_cmpstr(t->server, ==, "fake");
		g_assert_cmpstr(t->status, ==, "ready");
	}
	echo = find_tool(tools, "fake__echo");
	g_assert_nonnull(echo);
	g_assert_cmpstr(echo->tool, ==, "echo");
	g_assert_cmpstr(echo->description, ==, "Echoes its text");
	g_assert_nonnull(strstr(echo->input_schema, "\"required\":[\"text\"]"));
	g_assert_cmpint(confab_toolbox_get_server_pid(f->toolbox, AGENT, "fake"), >, 0);

	g_assert_true(confab_toolbox_is_tool(f->toolbox, AGENT, config, "fake__echo"));
	g_assert_false(confab_toolbox_is_tool(f->toolbox, AGENT, config, "echo"));
	g_assert_false(confab_toolbox_is_tool(f->toolbox, AGENT, config, "fake__nope"));
	g_assert_false(confab_toolbox_is_tool(f->toolbox, "other", config, "fake__echo"));
	g_assert_true(confab_toolbox_lookup_tool(f->toolbox, AGENT, "fake__add", &server, &tool));
	g_assert_cmpstr(server, ==, "fake");
	g_assert_cmpstr(tool, ==, "add");

	/* an agent without servers has no tools */
	g_clear_pointer(&tools, g_ptr_array_unref);
	tools = list_tools(f, "ag_none", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(tools->len, ==, 0);
}

static void
test_call(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = fake_config(f, "fake", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) failed = NULL;
	g_autoptr(ConfabMcpToolResult) unknown = NULL;
	g_autoptr(ConfabMcpToolResult) image = NULL;

	/* a call before any listing lists first */
	assert_echo(f, config, "fake__echo");
	failed = call(f, config, "fake__fail", NULL, &error);
	g_assert_no_error(error);
	g_assert_true(failed->is_error);
	g_assert_cmpstr(failed->text, ==, "this tool failed");
	image = call(f, config, "fake__image", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(image->text, ==, "[image: image/png, 70 bytes]");

	unknown = call(f, config, "fake__nope", NULL, &error);
	g_assert_null(unknown);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_NOT_FOUND);
	g_clear_error(&error);
	unknown = call(f, config, "echo", NULL, &error);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_NOT_FOUND);
}

static void
test_max_output(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = fake_config(f, "fake", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;

	g_clear_object(&f->toolbox);
	f->toolbox = confab_toolbox_new(f->tmpdir, 1000);
	result = call(f, config, "fake__huge", "{\"bytes\":5000}", &error);
	g_assert_no_error(error);
	g_assert_true(result->truncated);
	g_assert_cmpuint(strlen(result->text), <, 1200);
}

static void
test_env(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = fake_config(f, "fake", ",\"env\":{\"FOO\":\"bar\"}");
	g_autofree gchar *home = g_strconcat("HOME=", f->tmpdir, "\n", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) result = call(f, config, "fake__env", NULL, &error);

	g_assert_no_error(error);
	g_assert_nonnull(strstr(result->text, "FOO=bar"));
	g_assert_nonnull(strstr(result->text, home));
}

static void
test_allow(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config =
	    fake_config(f, "fake", ",\"allow\":[\"echo\",\"add\",\"absent\"]");
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tools = list_tools(f, AGENT, config, &error);
	g_autoptr(ConfabMcpToolResult) result = NULL;

	g_assert_no_error(error);
	g_assert_cmpuint(tools->len, ==, 2);
	g_assert_cmpstr(((ConfabToolboxTool *)tools->pdata[0])->name, ==, "fake__echo");
	g_assert_cmpstr(((ConfabToolboxTool *)tools->pdata[1])->name, ==, "fake__add");
	g_assert_false(confab_toolbox_is_tool(f->toolbox, AGENT, config, "fake__slow"));
	result = call(f, config, "fake__slow", "{\"ms\":1}", &error);
	g_assert_null(result);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_NOT_FOUND);
	assert_echo(f, config, "fake__echo");
}

/* ---------- names ---------- */

static void
test_long_names(Fixture *f, gconstpointer data)
{
	const gchar *prefix = "a.very.long.prefix.that.makes.every.name.much.too.long.";
	const gchar *args[] = {"--tool-prefix", prefix, NULL};
	g_autofree gchar *server = fake_json(f, "abcdefghijklmnopqrstuvwxyz012345", NULL, args);
	g_autofree gchar *config = config_of(server);
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tools = list_tools(f, AGENT, config, &error);
	g_autoptr(GPtrArray) again = NULL;
	const gchar *echo_name = NULL;

	g_assert_no_error(error);
	g_assert_cmpuint(tools->len, ==, N_FAKE_TOOLS);
	for (guint i = 0; i < tools->len; i++) {
		ConfabToolboxTool *t = tools->pdata[i];
		g_assert_true(name_ok(t->name));
		g_assert_cmpuint(strlen(t->name), ==, 64);
		g_assert_true(
		    g_str_has_prefix(t->name, "abcdefghijklmnopqrstuvwxyz012345__a_very_"));
		g_assert_true(g_hash_table_add(seen, t->name));
		g_assert_true(g_str_has_prefix(t->tool, prefix));
		if (g_str_has_suffix(t->tool, ".echo"))
			echo_name = t->name;
	}
	g_assert_nonnull(echo_name);
	assert_echo(f, config, echo_name);
	/* the same names at every listing */
	again = list_tools(f, AGENT, config, &error);
	g_assert_no_error(error);
	for (guint i = 0; i < tools->len; i++)
		g_assert_cmpstr(((ConfabToolboxTool *)again->pdata[i])->name,
				==,
				((ConfabToolboxTool *)tools->pdata[i])->name);
}

static void
test_odd_names(Fixture *f, gconstpointer data)
{
	/* "a" + "b..env" and "a__b" + "env" would both be a__b__env */
	const gchar *dotted[] = {"--tool-prefix", "b..", NULL};
	const gchar *dot[] = {"--tool-prefix", "x.", NULL};
	g_autofree gchar *one = fake_json(f, "a", ",\"env\":{\"WHO\":\"one\"}", dotted);
	g_autofree gchar *two = fake_json(f, "a__b", ",\"env\":{\"WHO\":\"two\"}", NULL);
	g_autofree gchar *three = fake_json(f, "c", NULL, dot);
	g_autofree gchar *servers = g_strconcat(one, ",", two, ",", three, NULL);
	g_autofree gchar *config = config_of(servers);
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tools = list_tools(f, AGENT, config, &error);
	const gchar *env_one = NULL;
	const gchar *env_two = NULL;
	g_autoptr(ConfabMcpToolResult) result_one = NULL;
	g_autoptr(ConfabMcpToolResult) result_two = NULL;

	g_assert_no_error(error);
	g_assert_cmpuint(tools->len, ==, 3 * N_FAKE_TOOLS);
	for (guint i = 0; i < tools->len; i++) {
		ConfabToolboxTool *t = tools->pdata[i];
		g_assert_true(name_ok(t->name));
		if (strcmp(t->tool, "b..env") == 0)
			env_one = t->name;
		if (strcmp(t->server, "a__b") == 0 && strcmp(t->tool, "env") == 0)
			env_two = t->name;
	}
	/* both would be a__b__env: neither gets it, each gets its own */
	g_assert_nonnull(env_one);
	g_assert_nonnull(env_two);
	g_assert_true(g_str_has_prefix(env_one, "a__b__env_"));
	g_assert_true(g_str_has_prefix(env_two, "a__b__env_"));
	g_assert_cmpuint(strlen(env_one), ==, strlen("a__b__env_") + 8);
	g_assert_cmpstr(env_one, !=, env_two);
	g_assert_null(find_tool(tools, "a__b__env"));
	result_one = call(f, config, env_one, NULL, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(result_one->text, "WHO=one"));
	result_two = call(f, config, env_two, NULL, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(result_two->text, "WHO=two"));
	/* a name that only needed its '.' made '_' is kept */
	g_assert_nonnull(find_tool(tools, "c__x_echo"));
	assert_echo(f, config, "c__x_echo");
}

/* ---------- timeouts, progress, cancel ---------- */

static void
test_timeout(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = fake_config(f, "fake", ",\"timeout\":0.3");
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;
	gint64 start;

	assert_echo(f, config, "fake__echo");
	start = g_get_monotonic_time();
	result = call(f, config, "fake__slow", "{\"ms\":20000}", &error);
	g_assert_null(result);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
	g_assert_cmpint(g_get_monotonic_time() - start, >=, 250000);
	g_assert_cmpint(g_get_monotonic_time() - start, <, 10000000);
	/* the server is still there */
	assert_echo(f, config, "fake__echo");
}

static void
test_progress(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = fake_config(f, "fake", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;
	Progress p = {0};
	Wait w = {0};

	call_async(f, AGENT, config, "fake__progress", "{\"steps\":3,\"ms\":20}", &p, NULL, &w);
	result = call_finish(f, &w, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(result->text, ==, "done");
	g_assert_cmpuint(p.count, ==, 3);
	g_assert_cmpfloat(p.last_progress, ==, 3);
	g_assert_cmpfloat(p.last_total, ==, 3);
	g_assert_cmpstr(p.last_message, ==, "step 3");
	g_assert_cmpuint(p.freed, ==, 1);
	g_free(p.last_message);

	/* freed once on a failure too */
	p = (Progress){0};
	call_async(f, AGENT, config, "fake__nope", NULL, &p, NULL, &w);
	g_clear_pointer(&result, confab_mcp_tool_result_free);
	result = call_finish(f, &w, &error);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_NOT_FOUND);
	g_assert_cmpuint(p.freed, ==, 1);
}

typedef struct {
	Fixture *f;
	const gchar *method;
	const gchar *tool;
} Recorded;

/* The fake server recorded a message of that method (and tool). */
static gboolean
recorded(gpointer data)
{
	Recorded *r = data;
	g_autofree gchar *text = NULL;
	g_auto(GStrv) lines = NULL;

	if (!g_file_get_contents(r->f->record, &text, NULL, NULL))
		return FALSE;
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i] != NULL; i++) {
		g_autoptr(JsonNode) node = confab_json_from_string(lines[i]);
		JsonObject *m = node != NULL ? json_node_get_object(node) : NULL;
		JsonObject *params = m != NULL ? confab_json_get_object(m, "params") : NULL;
		if (m == NULL || g_strcmp0(confab_json_get_string(m, "method"), r->method) != 0)
			continue;
		if (r->tool == NULL ||
		    (params != NULL &&
		     g_strcmp0(confab_json_get_string(params, "name"), r->tool) == 0))
			return TRUE;
	}
	return FALSE;
}

static void
test_cancel(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = fake_config(f, "fake", NULL);
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;
	Recorded sent = {f, "tools/call", "slow"};
	Recorded cancelled = {f, "notifications/cancelled", NULL};
	Wait w = {0};
	gint64 start;

	call_async(f, AGENT, config, "fake__slow", "{\"ms\":20000}", NULL, cancellable, &w);
	g_assert_true(confab_test_wait_until(recorded, &sent, WAIT_MS));
	start = g_get_monotonic_time();
	g_cancellable_cancel(cancellable);
	result = call_finish(f, &w, &error);
	g_assert_null(result);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_assert_cmpint(g_get_monotonic_time() - start, <, 5000000);
	g_assert_true(confab_test_wait_until(recorded, &cancelled, WAIT_MS));
	assert_echo(f, config, "fake__echo");
}

/* ---------- servers that die or cannot start ---------- */

typedef struct {
	Fixture *f;
	const gchar *config;
	Wait w;
	gboolean calling;
	gboolean ok;
	guint tries;
	gchar *last_error;
} Retry;

/* Calls fake__echo until one works. */
static gboolean
echo_works(gpointer data)
{
	Retry *r = data;
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;

	if (!r->calling) {
		r->calling = TRUE;
		r->tries++;
		call_async(r->f,
			   AGENT,
			   r->config,
			   "fake__echo",
			   "{\"text\":\"x\"}",
			   NULL,
			   NULL,
			   &r->w);
		return FALSE;
	}
	if (r->w.result == NULL)
		return FALSE;
	result = confab_toolbox_call_finish(r->f->toolbox, r->w.result, &error);
	g_clear_object(&r->w.result);
	r->calling = FALSE;
	r->ok = result != NULL;
	g_clear_pointer(&r->last_error, g_free);
	if (error != NULL)
		r->last_error = g_strdup(error->message);
	return r->ok;
}

static void
test_died(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = fake_config(f, "fake", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GPtrArray) tools = NULL;
	Retry retry = {f, config, {0}, FALSE, FALSE, 0, NULL};
	GPid pid, new_pid;
	gint64 start;

	assert_echo(f, config, "fake__echo");
	pid = confab_toolbox_get_server_pid(f->toolbox, AGENT, "fake");
	g_assert_cmpint(pid, >, 0);

	/* the call in flight fails at once */
	start = g_get_monotonic_time();
	result = call(f, config, "fake__die", NULL, &error);
	g_assert_null(result);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED);
	g_assert_cmpint(g_get_monotonic_time() - start, <, 5000000);
	g_clear_error(&error);
	assert_pid_gone(pid);
	g_assert_cmpint(confab_toolbox_get_server_pid(f->toolbox, AGENT, "fake"), ==, 0);

	/* within the wait, a use fails at once with the reason */
	result = call(f, config, "fake__echo", "{\"text\":\"x\"}", &error);
	g_assert_null(result);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED);
	g_assert_nonnull(strstr(error->message, "The MCP server ag_1/fake"));
	g_assert_nonnull(strstr(error->message, "started again in"));
	g_clear_error(&error);
	/* the names stay: the loop still sends its calls here */
	g_assert_true(confab_toolbox_is_tool(f->toolbox, AGENT, config, "fake__echo"));
	tools = list_tools(f, AGENT, config, &error);
	g_assert_no_error(error);
	if (tools->len == 1) {
		/* still waiting to start again */
		g_assert_cmpstr(((ConfabToolboxTool *)tools->pdata[0])->name, ==, "");
		g_assert_true(
		    g_str_has_prefix(((ConfabToolboxTool *)tools->pdata[0])->status, "failed: "));
	}

	/* after the wait, the next use starts it again */
	g_assert_true(confab_test_wait_until(echo_works, &retry, WAIT_MS));
	g_free(retry.last_error);
	new_pid = confab_toolbox_get_server_pid(f->toolbox, AGENT, "fake");
	g_assert_cmpint(new_pid, >, 0);
	g_assert_cmpint(new_pid, !=, pid);
}

static void
test_cannot_start(Fixture *f, gconstpointer data)
{
	g_autofree gchar *good = fake_json(f, "good", NULL, NULL);
	g_autofree gchar *servers =
	    g_strconcat("\"bad\":{\"command\":\"/nonexistent/mcp-server\"},", good, NULL);
	g_autofree gchar *config = config_of(servers);
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tools = list_tools(f, AGENT, config, &error);
	ConfabToolboxTool *bad;

	g_assert_no_error(error);
	g_assert_cmpuint(tools->len, ==, 1 + N_FAKE_TOOLS);
	bad = tools->pdata[0];
	g_assert_cmpstr(bad->name, ==, "");
	g_assert_cmpstr(bad->server, ==, "bad");
	g_assert_cmpstr(bad->tool, ==, "");
	g_assert_true(g_str_has_prefix(bad->status, "failed: "));
	g_assert_nonnull(strstr(bad->status, "/nonexistent/mcp-server"));
	g_assert_cmpstr(((ConfabToolboxTool *)tools->pdata[1])->status, ==, "ready");
	/* the others work */
	assert_echo(f, config, "good__echo");
}

/* A server that ran, died and then cannot start: its calls fail with why. */
static void
test_cannot_restart(Fixture *f, gconstpointer data)
{
	g_autofree gchar *flag = g_build_filename(f->tmpdir, "broken", NULL);
	g_autofree gchar *script =
	    g_strdup_printf("test -e '%s' && exit 3; exec '%s' \"$@\"", flag, fake_server());
	g_autoptr(GString) servers =
	    g_string_new("\"fake\":{\"command\":\"/bin/sh\",\"args\":[\"-c\",");
	g_autofree gchar *config = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GPtrArray) tools = NULL;
	Retry retry = {f, NULL, {0}, FALSE, FALSE, 0, NULL};

	confab_json_append_string(servers, script);
	g_string_append(servers, ",\"sh\"]}");
	config = config_of(servers->str);
	retry.config = config;
	assert_echo(f, config, "fake__echo");
	g_assert_true(g_file_set_contents(flag, "", 0, NULL));
	result = call(f, config, "fake__die", NULL, &error);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED);
	g_clear_error(&error);

	/* tried until the wait is over: then the start itself fails */
	g_assert_false(confab_test_wait_until(echo_works, &retry, 1500));
	g_assert_cmpuint(retry.tries, >, 1);
	if (retry.calling) {
		g_assert_true(confab_test_wait_until(wait_done, &retry.w, WAIT_MS));
		g_clear_object(&retry.w.result);
	}
	g_assert_nonnull(retry.last_error);
	/* "The MCP server ag_1/fake exited...", or "The MCP client ag_1/fake was
	 * closed while starting" when it died before initialize */
	if (strstr(retry.last_error, "ag_1/fake") == NULL)
		g_error("last error: %s", retry.last_error);
	g_free(retry.last_error);
	tools = list_tools(f, AGENT, config, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(tools->len, ==, 1);
	g_assert_true(g_str_has_prefix(((ConfabToolboxTool *)tools->pdata[0])->status, "failed: "));
}

/* ---------- forget, reconfigure, shutdown ---------- */

static void
test_forget(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = fake_config(f, "fake", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tools = list_tools(f, AGENT, config, &error);
	g_autoptr(ConfabMcpToolResult) result = NULL;
	GPid pid = confab_toolbox_get_server_pid(f->toolbox, AGENT, "fake");
	Recorded sent = {f, "tools/call", "slow"};
	Wait w = {0};
	gint64 start;

	g_assert_no_error(error);
	g_assert_cmpint(pid, >, 0);
	call_async(f, AGENT, config, "fake__slow", "{\"ms\":20000}", NULL, NULL, &w);
	g_assert_true(confab_test_wait_until(recorded, &sent, WAIT_MS));
	start = g_get_monotonic_time();
	confab_toolbox_forget_agent(f->toolbox, AGENT);
	/* its call fails at once, its process goes */
	result = call_finish(f, &w, &error);
	g_assert_null(result);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED);
	g_assert_cmpint(g_get_monotonic_time() - start, <, 5000000);
	assert_pid_gone(pid);
	g_assert_false(confab_toolbox_lookup_tool(f->toolbox, AGENT, "fake__echo", NULL, NULL));
	g_assert_cmpint(confab_toolbox_get_server_pid(f->toolbox, AGENT, "fake"), ==, 0);

	/* the next use starts it again */
	assert_echo(f, config, "fake__echo");
	g_assert_cmpint(confab_toolbox_get_server_pid(f->toolbox, AGENT, "fake"), !=, pid);
	confab_toolbox_forget_agent(f->toolbox, "never-seen");
}

static gchar *
two_servers(Fixture *f, const gchar *who_two)
{
	g_autofree gchar *one = fake_json(f, "one", NULL, NULL);
	g_autofree gchar *extra = g_strdup_printf(",\"env\":{\"WHO\":\"%s\"}", who_two);
	g_autofree gchar *two = fake_json(f, "two", extra, NULL);
	g_autofree gchar *servers = g_strconcat(one, ",", two, NULL);
	return config_of(servers);
}

static void
test_reconfigure(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config_a = two_servers(f, "first");
	g_autofree gchar *config_b = two_servers(f, "second");
	g_autofree gchar *config_c = fake_config(f, "two", ",\"env\":{\"WHO\":\"second\"}");
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tools = list_tools(f, AGENT, config_a, &error);
	g_autoptr(ConfabMcpToolResult) result = NULL;
	GPid one = confab_toolbox_get_server_pid(f->toolbox, AGENT, "one");
	GPid two = confab_toolbox_get_server_pid(f->toolbox, AGENT, "two");

	g_assert_no_error(error);
	g_assert_cmpint(one, >, 0);
	g_assert_cmpint(two, >, 0);

	/* a use with a changed server restarts that one only */
	result = call(f, config_b, "two__env", NULL, &error);
	g_assert_no_error(error);
	g_assert_nonnull(strstr(result->text, "WHO=second"));
	assert_pid_gone(two);
	g_assert_cmpint(confab_toolbox_get_server_pid(f->toolbox, AGENT, "one"), ==, one);
	g_assert_cmpint(confab_toolbox_get_server_pid(f->toolbox, AGENT, "two"), !=, two);
	g_assert_true(confab_toolbox_is_tool(f->toolbox, AGENT, config_b, "one__echo"));

	/* a server gone from the config stops */
	g_assert_false(confab_toolbox_is_tool(f->toolbox, AGENT, config_c, "one__echo"));
	assert_pid_gone(one);
	g_assert_true(confab_toolbox_is_tool(f->toolbox, AGENT, config_c, "two__echo"));

	/* a config that does not parse is refused, and changes nothing */
	g_clear_pointer(&tools, g_ptr_array_unref);
	tools = list_tools(f, AGENT, "{\"mcpServers\":[]}", &error);
	g_assert_null(tools);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	g_assert_false(confab_toolbox_is_tool(f->toolbox, AGENT, "{", "two__echo"));
	g_assert_true(confab_toolbox_is_tool(f->toolbox, AGENT, config_c, "two__echo"));
}

static void
test_shutdown(Fixture *f, gconstpointer data)
{
	const gchar *stubborn_args[] = {"--ignore-term", NULL};
	g_autofree gchar *stubborn = fake_json(f, "stubborn", NULL, stubborn_args);
	g_autofree gchar *config_a = config_of(stubborn);
	g_autofree gchar *config_b = fake_config(f, "fake", NULL);
	g_autoptr(GPtrArray) tools_a = NULL;
	g_autoptr(GPtrArray) tools_b = NULL;
	g_autoptr(GPtrArray) after = NULL;
	g_autoptr(GError) error = NULL;
	GPid a, b;

	tools_a = list_tools(f, "ag_a", config_a, &error);
	g_assert_no_error(error);
	tools_b = list_tools(f, "ag_b", config_b, &error);
	g_assert_no_error(error);
	a = confab_toolbox_get_server_pid(f->toolbox, "ag_a", "stubborn");
	b = confab_toolbox_get_server_pid(f->toolbox, "ag_b", "fake");

	/* SIGTERM, SIGKILL 5 s later for the one that ignores it */
	g_assert_true(shutdown(f, &error));
	g_assert_no_error(error);
	g_assert_true(pid_gone(GINT_TO_POINTER(a)));
	g_assert_true(pid_gone(GINT_TO_POINTER(b)));
	after = list_tools(f, "ag_b", config_b, &error);
	g_assert_null(after);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_SHUTTING_DOWN);
}

/* ---------- the server's own changes ---------- */

typedef struct {
	Fixture *f;
	const gchar *config;
	const gchar *name;
} IsTool;

static gboolean
is_tool_now(gpointer data)
{
	IsTool *t = data;
	return confab_toolbox_is_tool(t->f->toolbox, AGENT, t->config, t->name);
}

static void
test_list_changed(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = fake_config(f, "fake", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tools = list_tools(f, AGENT, config, &error);
	g_autoptr(GPtrArray) changed = NULL;
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(ConfabMcpToolResult) extra = NULL;
	IsTool t = {f, config, "fake__extra"};

	g_assert_no_error(error);
	g_assert_null(find_tool(tools, "fake__extra"));
	result = call(f, config, "fake__change_tools", NULL, &error);
	g_assert_no_error(error);
	/* read again on notifications/tools/list_changed, not at the next listing */
	g_assert_true(confab_test_wait_until(is_tool_now, &t, WAIT_MS));
	changed = list_tools(f, AGENT, config, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(changed->len, ==, N_FAKE_TOOLS + 1);
	g_assert_nonnull(find_tool(changed, "fake__extra"));
	extra = call(f, config, "fake__extra", NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(extra->text, ==, "extra");
}

/* ---------- HTTP ---------- */

static gchar *
start_http_server(Fixture *f, const gchar *const *extra)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autoptr(GError) error = NULL;
	g_autoptr(GDataInputStream) out = NULL;
	g_autofree gchar *line = NULL;

	g_ptr_array_add(argv, (gpointer)fake_server());
	g_ptr_array_add(argv, (gpointer) "--http");
	g_ptr_array_add(argv, (gpointer) "0");
	for (guint i = 0; extra[i] != NULL; i++)
		g_ptr_array_add(argv, (gpointer)extra[i]);
	g_ptr_array_add(argv, NULL);
	/* stdin a pipe: the server exits with the test */
	f->http_server =
	    g_subprocess_newv((const gchar *const *)argv->pdata,
			      G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE,
			      &error);
	g_assert_no_error(error);
	out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(f->http_server));
	line = g_data_input_stream_read_line(out, NULL, NULL, NULL);
	g_assert_nonnull(line);
	g_assert_true(g_str_has_prefix(line, "PORT="));
	return g_strdup_printf("http://127.0.0.1:%s/mcp", line + 5);
}

static gchar *
http_config(const gchar *name, const gchar *url, const gchar *token_file)
{
	GString *json = g_string_new(NULL);

	g_string_append_printf(json, "{\"mcpServers\":{\"%s\":{\"url\":", name);
	confab_json_append_string(json, url);
	g_string_append(json, ",\"headers\":{\"X-Api-Key\":\"k1\"},\"bearer_token_file\":");
	confab_json_append_string(json, token_file);
	g_string_append(json, "}}}");
	return g_string_free(json, FALSE);
}

static void
test_http(Fixture *f, gconstpointer data)
{
	const gchar *extra[] = {"--require-header",
				"X-Api-Key: k1",
				"--require-header",
				"Authorization: Bearer tok-123",
				NULL};
	g_autofree gchar *url = start_http_server(f, extra);
	g_autofree gchar *token = g_build_filename(f->tmpdir, "token", NULL);
	g_autofree gchar *wrong = g_build_filename(f->tmpdir, "wrong", NULL);
	g_autofree gchar *fifo = g_build_filename(f->tmpdir, "fifo", NULL);
	g_autofree gchar *config = http_config("web", url, token);
	g_autofree gchar *config_wrong = http_config("web", url, wrong);
	g_autofree gchar *config_dir = http_config("web", url, f->tmpdir);
	g_autofree gchar *config_fifo = http_config("web", url, fifo);
	g_autofree gchar *config_missing = http_config("web", url, "/nonexistent/token");
	const struct {
		const gchar *agent;
		const gchar *config;
		const gchar *why;
	} failures[] = {
	    {"ag_wrong", config_wrong, "401"},
	    {"ag_dir", config_dir, "not a regular file"},
	    {"ag_fifo", config_fifo, "not a regular file"},
	    {"ag_missing", config_missing, "No such file"},
	};
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tools = NULL;

	/* one trailing newline is not part of the token */
	g_assert_true(g_file_set_contents(token, "tok-123\n", -1, NULL));
	g_assert_true(g_file_set_contents(wrong, "tok-456\n", -1, NULL));
	g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
	tools = list_tools(f, AGENT, config, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(tools->len, ==, N_FAKE_TOOLS);
	assert_echo(f, config, "web__echo");

	for (guint i = 0; i < G_N_ELEMENTS(failures); i++) {
		g_autoptr(GPtrArray) failed =
		    list_tools(f, failures[i].agent, failures[i].config, &error);
		ConfabToolboxTool *entry;
		g_assert_no_error(error);
		g_assert_cmpuint(failed->len, ==, 1);
		entry = find_server_entry(failed, "web");
		g_assert_true(g_str_has_prefix(entry->status, "failed: "));
		if (strstr(entry->status, failures[i].why) == NULL)
			g_error("%s: expected %s in “%s”",
				failures[i].agent,
				failures[i].why,
				entry->status);
		/* the token never shows */
		g_assert_null(strstr(entry->status, "tok-"));
	}
}

/* ---------- from another thread ---------- */

typedef struct {
	Fixture *f;
	const gchar *config;
	GThread *thread;
	guint progress;
	gboolean elsewhere; /* a callback ran on another thread than the caller's */
	gchar *text;
	guint listed;
	GError *error;
	gint done; /* atomic */
} Caller;

static void
caller_progress(gdouble progress, gdouble total, const gchar *message, gpointer user_data)
{
	Caller *c = user_data;
	c->elsewhere |= g_thread_self() != c->thread;
	c->progress++;
}

static void
caller_result(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Wait *w = user_data;
	w->result = g_object_ref(result);
}

static GAsyncResult *
caller_wait(Caller *c, Wait *w, GMainContext *context)
{
	while (w->result == NULL)
		g_main_context_iteration(context, TRUE);
	c->elsewhere |= !g_main_context_is_owner(context);
	return w->result;
}

/* A serving thread's turn, as the toolbox sees it: its own context pushed. */
static gpointer
caller_thread(gpointer data)
{
	Caller *c = data;
	g_autoptr(GMainContext) context = g_main_context_new();
	g_autoptr(JsonNode) args = confab_json_from_string("{\"steps\":3,\"ms\":20}");
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GPtrArray) tools = NULL;
	Wait w = {0};

	g_main_context_push_thread_default(context);
	confab_toolbox_call_async(c->f->toolbox,
				  AGENT,
				  c->config,
				  "fake__progress",
				  json_node_get_object(args),
				  caller_progress,
				  c,
				  NULL,
				  NULL,
				  caller_result,
				  &w);
	result = confab_toolbox_call_finish(c->f->toolbox, caller_wait(c, &w, context), &c->error);
	g_clear_object(&w.result);
	if (result != NULL)
		c->text = g_strdup(result->text);
	confab_toolbox_list_tools_async(c->f->toolbox, AGENT, c->config, NULL, caller_result, &w);
	tools = confab_toolbox_list_tools_finish(c->f->toolbox, caller_wait(c, &w, context), NULL);
	g_clear_object(&w.result);
	c->listed = tools != NULL ? tools->len : 0;
	g_main_context_pop_thread_default(context);
	g_atomic_int_set(&c->done, 1);
	return NULL;
}

static gboolean
caller_done(gpointer data)
{
	return g_atomic_int_get(&((Caller *)data)->done);
}

/* Calls and listings from another thread run on the toolbox's context
 * (here the main one, iterated by the wait) and end on the caller's. */
static void
test_other_thread(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = fake_config(f, "fake", NULL);
	Caller c = {f, config};

	c.thread = g_thread_new("caller", caller_thread, &c);
	/* nothing moves while the toolbox's context is not iterated: the
	 * work is not done on the caller's thread */
	g_usleep(300 * 1000);
	g_assert_false(caller_done(&c));
	g_assert_true(confab_test_wait_until(caller_done, &c, WAIT_MS));
	g_thread_join(c.thread);
	g_assert_no_error(c.error);
	g_assert_cmpstr(c.text, ==, "done");
	g_assert_cmpuint(c.progress, ==, 3);
	g_assert_false(c.elsewhere);
	g_assert_cmpuint(c.listed, ==, N_FAKE_TOOLS);
	g_free(c.text);
}

static void
add(const gchar *name, void (*func)(Fixture *, gconstpointer))
{
	g_autofree gchar *path = g_strconcat("/confab/toolbox/", name, NULL);
	g_test_add(path, Fixture, NULL, fixture_setup, func, fixture_teardown);
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	add("list", test_list);
	add("call", test_call);
	add("max-output", test_max_output);
	add("env", test_env);
	add("allow", test_allow);
	add("long-names", test_long_names);
	add("odd-names", test_odd_names);
	add("timeout", test_timeout);
	add("progress", test_progress);
	add("other-thread", test_other_thread);
	add("cancel", test_cancel);
	add("died", test_died);
	add("cannot-start", test_cannot_start);
	add("cannot-restart", test_cannot_restart);
	add("forget", test_forget);
	add("reconfigure", test_reconfigure);
	add("shutdown", test_shutdown);
	add("list-changed", test_list_changed);
	add("http", test_http);
	return g_test_run();
}
