/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "core/confab-agent-loop.h"
#include "util/confab-error.h"

/*
 * ConfabAgentLoop with a scripted model and the fake MCP server: the steps
 * it takes, what each model call is offered and sent, max_steps and the
 * last call without tools, calls nobody offered, bad arguments, the
 * client's calls beside the agent's, the deadline and cancellation.
 */

/* ---------- a scripted provider ---------- */

#define TEST_TYPE_SCRIPT (test_script_get_type())
G_DECLARE_FINAL_TYPE(TestScript, test_script, TEST, SCRIPT, GObject)

/*
 * Each step is either plain text, the answer, or "calls:" and calls parted
 * by '|', each "NAME ARGUMENTS"; the last step repeats once run out. A step
 * led by "lp:" first gives log probabilities: one content entry whose token
 * is the rest of the step.
 */
struct _TestScript {
	GObject parent_instance;
	GStrv steps;
	guint next;
	GPtrArray *requests; /* gchar*: {"messages":…,"params":…} as sent */
	ConfabFlow *hold;    /* unowned, nullable: held after each answer, as a
			      * client that fell behind on it */
};

static void
test_script_iface_init(ConfabProviderInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(TestScript,
			      test_script,
			      G_TYPE_OBJECT,
			      G_IMPLEMENT_INTERFACE(CONFAB_TYPE_PROVIDER, test_script_iface_init))

static void
test_script_finalize(GObject *object)
{
	TestScript *self = TEST_SCRIPT(object);
	g_strfreev(self->steps);
	g_ptr_array_unref(self->requests);
	G_OBJECT_CLASS(test_script_parent_class)->finalize(object);
}

static void
test_script_class_init(TestScriptClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = test_script_finalize;
}

static void
test_script_init(TestScript *self)
{
	self->requests = g_ptr_array_new_with_free_func(g_free);
}

static const gchar *
script_get_name(ConfabProvider *provider)
{
	return "script";
}

static gboolean
script_check_agent(ConfabProvider *provider, ConfabAgent *agent, GError **error)
{
	return TRUE;
}

static JsonArray *
script_calls(const gchar *step, guint step_index)
{
	g_auto(GStrv) calls = g_strsplit(step + strlen("calls:"), "|", -1);
	JsonArray *array = json_array_new();

	for (guint i = 0; calls[i] != NULL; i++) {
		g_auto(GStrv) parts = g_strsplit(calls[i], " ", 2);
		JsonObject *call = json_object_new();
		JsonObject *fn = json_object_new();
		g_autofree gchar *id = g_strdup_printf("call_%u_%u", step_index, i);

		json_object_set_int_member(call, "index", i);
		json_object_set_string_member(call, "id", id);
		json_object_set_string_member(call, "type", "function");
		json_object_set_string_member(fn, "name", parts[0]);
		json_object_set_string_member(fn, "arguments", parts[1] != NULL ? parts[1] : "{}");
		json_object_set_object_member(call, "function", fn);
		json_array_add_object_element(array, call);
	}
	return array;
}

static void
record(TestScript *self, ConfabProviderRequest *request)
{
	g_autoptr(JsonNode) messages = json_node_new(JSON_NODE_ARRAY);
	g_autoptr(JsonNode) params = json_node_new(JSON_NODE_OBJECT);
	g_autofree gchar *m = NULL, *p = NULL;

	json_node_set_array(messages, request->messages);
	json_node_set_object(params, request->params);
	m = json_to_string(messages, FALSE);
	p = json_to_string(params, FALSE);
	g_ptr_array_add(self->requests, g_strdup_printf("{\"messages\":%s,\"params\":%s}", m, p));
}

static void
script_complete_async(ConfabProvider *provider,
		      ConfabProviderRequest *request,
		      ConfabDeltaFunc delta_func,
		      gpointer delta_data,
		      GCancellable *cancellable,
		      GAsyncReadyCallback callback,
		      gpointer user_data)
{
	TestScript *self = TEST_SCRIPT(provider);
	g_autoptr(GTask) task = g_task_new(provider, cancellable, callback, user_data);
	guint n = g_strv_length(self->steps);
	const gchar *step = self->steps[MIN(self->next, n - 1)];
	ConfabProviderResult *result;

	record(self, request);
	if (g_str_has_prefix(step, "lp:")) {
		g_autoptr(JsonObject) logprobs = json_object_new();
		JsonArray *content = json_array_new();
		JsonObject *entry = json_object_new();

		step += strlen("lp:");
		json_object_set_string_member(entry, "token", step);
		json_object_set_double_member(entry, "logprob", -0.5);
		json_array_add_object_element(content, entry);
		json_object_set_array_member(logprobs, "content", content);
		json_object_set_null_member(logprobs, "refusal");
		delta_func(&(ConfabDelta){.logprobs = logprobs}, delta_data);
	}
	if (g_str_has_prefix(step, "calls:")) {
		g_autoptr(JsonArray) calls = script_calls(step, self->next);
		delta_func(&(ConfabDelta){.tool_calls = calls}, delta_data);
		result = confab_provider_result_new("tool_calls");
	} else {
		delta_func(&(ConfabDelta){.content = step}, delta_data);
		result = confab_provider_result_new("stop");
	}
	self->next++;
	if (self->hold != NULL)
		confab_flow_set_held(self->hold, TRUE);
	result->prompt_tokens = 10;
	result->completion_tokens = 1;
	g_task_return_pointer(task, result, (GDestroyNotify)confab_provider_result_free);
}

static ConfabProviderResult *
script_complete_finish(ConfabProvider *provider, GAsyncResult *result, GError **error)
{
	return g_task_propagate_pointer(G_TASK(result), error);
}

static void
test_script_iface_init(ConfabProviderInterface *iface)
{
	iface->get_name = script_get_name;
	iface->check_agent = script_check_agent;
	iface->complete_async = script_complete_async;
	iface->complete_finish = script_complete_finish;
}

static TestScript *
test_script_new(const gchar *const *steps)
{
	TestScript *self = g_object_new(TEST_TYPE_SCRIPT, NULL);
	self->steps = g_strdupv((gchar **)steps);
	return self;
}

/* ---------- the fixture ---------- */

typedef struct {
	gchar *tmpdir;
	ConfabToolbox *toolbox;
	ConfabAgent *agent;
	GPtrArray *tools; /* the agent's, listed */
	GPtrArray *events;
	GString *text;
	JsonArray *client_calls;
} Fixture;

static void
on_listed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Fixture *f = user_data;
	g_autoptr(GError) error = NULL;
	f->tools = confab_toolbox_list_tools_finish(CONFAB_TOOLBOX(source), result, &error);
	g_assert_no_error(error);
}

static gboolean
tools_listed(gpointer data)
{
	return ((Fixture *)data)->tools != NULL;
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	g_autofree gchar *servers =
	    g_strdup_printf("{\"mcpServers\":{\"fake\":{\"command\":\"%s\"}}}",
			    g_getenv("CONFAB_FAKE_MCP"));

	f->tmpdir = confab_test_make_tmpdir("agent-loop");
	f->toolbox = confab_toolbox_new(f->tmpdir, 0);
	f->agent = confab_agent_new();
	confab_agent_set_id(f->agent, "agt_loop");
	confab_agent_set_mcp_servers(f->agent, servers);
	confab_agent_set_max_steps(f->agent, 10);
	confab_toolbox_list_tools_async(f->toolbox, "agt_loop", servers, NULL, on_listed, f);
	g_assert_true(confab_test_wait_until(tools_listed, f, 30000));
	f->events = g_ptr_array_new_with_free_func(g_free);
	f->text = g_string_new(NULL);
}

static void
on_stopped(GObject *source, GAsyncResult *result, gpointer user_data)
{
	gboolean *done = user_data;
	g_assert_true(confab_toolbox_shutdown_finish(CONFAB_TOOLBOX(source), result, NULL));
	*done = TRUE;
}

static gboolean
is_true(gpointer data)
{
	return *(gboolean *)data;
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	gboolean done = FALSE;

	confab_toolbox_shutdown_async(f->toolbox, NULL, on_stopped, &done);
	g_assert_true(confab_test_wait_until(is_true, &done, 30000));
	g_clear_object(&f->toolbox);
	g_clear_object(&f->agent);
	g_clear_pointer(&f->tools, g_ptr_array_unref);
	g_clear_pointer(&f->events, g_ptr_array_unref);
	g_string_free(f->text, TRUE);
	g_clear_pointer(&f->client_calls, json_array_unref);
	confab_test_rm_rf(f->tmpdir);
	g_free(f->tmpdir);
}

static void
on_text(const gchar *content, gpointer user_data)
{
	g_string_append(((Fixture *)user_data)->text, content);
}

static void
on_tool_calls(JsonArray *calls, gpointer user_data)
{
	Fixture *f = user_data;
	g_assert_null(f->client_calls);
	f->client_calls = json_array_ref(calls);
}

static void
on_tool_event(const gchar *event_json, gpointer user_data)
{
	g_ptr_array_add(((Fixture *)user_data)->events, g_strdup(event_json));
}

static const ConfabAgentLoopSink sink = {on_text, on_tool_calls, on_tool_event};

typedef struct {
	gboolean done;
	gboolean ok;
	GError *error;
} Run;

static void
on_run(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Run *run = user_data;
	run->ok = confab_agent_loop_run_finish(CONFAB_AGENT_LOOP(source), result, &run->error);
	run->done = TRUE;
}

static ConfabAgentLoop *
loop_new(Fixture *f, TestScript *script, const gchar *client_params, guint total_timeout)
{
	g_autoptr(JsonArray) context = json_array_new();
	g_autoptr(JsonNode) params = client_params != NULL ? json_from_string(client_params, NULL)
							   : NULL;
	JsonObject *user = json_object_new();
	ConfabAgentLoop *loop;

	json_object_set_string_member(user, "role", "user");
	json_object_set_string_member(user, "content", "go");
	json_array_add_object_element(context, user);
	loop = confab_agent_loop_new(f->agent,
				     CONFAB_PROVIDER(script),
				     context,
				     params != NULL ? json_node_get_object(params) : NULL,
				     FALSE);
	confab_agent_loop_set_tools(loop, f->toolbox, f->tools, total_timeout);
	confab_agent_loop_set_sink(loop, &sink, f);
	return loop;
}

static void
run_loop(ConfabAgentLoop *loop, GCancellable *cancellable, Run *run)
{
	confab_agent_loop_run_async(loop, cancellable, on_run, run);
	g_assert_true(confab_test_wait_until(is_true, &run->done, 60000));
}

static JsonNode *
parse(const gchar *json)
{
	JsonNode *node = json_from_string(json, NULL);
	g_assert_nonnull(node);
	return node;
}

/* the transcript's blocks; "[…]" around the loop's comma-joined objects */
static JsonArray *
blocks_of(ConfabAgentLoop *loop)
{
	g_autofree gchar *text = g_strdup_printf("[%s]", confab_agent_loop_get_blocks(loop));
	g_autoptr(JsonNode) node = parse(text);
	return json_array_ref(json_node_get_array(node));
}

static const gchar *
block_string(JsonArray *blocks, guint i, const gchar *member)
{
	return json_object_get_string_member(json_array_get_object_element(blocks, i), member);
}

static JsonObject *
request_of(TestScript *script, guint i, JsonNode **keep)
{
	g_assert_cmpuint(i, <, script->requests->len);
	*keep = parse(g_ptr_array_index(script->requests, i));
	return json_node_get_object(*keep);
}

/* ---------- tests ---------- */

static void
test_steps(Fixture *f, gconstpointer data)
{
	const gchar *steps[] = {"calls:fake__echo {\"text\":\"from the tool\"}", "done", NULL};
	g_autoptr(TestScript) script = test_script_new(steps);
	g_autoptr(ConfabAgentLoop) loop = loop_new(f, script, NULL, 0);
	g_autoptr(JsonArray) blocks = NULL;
	g_autoptr(JsonNode) second = NULL;
	JsonArray *messages;
	JsonObject *tool_msg;
	Run run = {0};
	gint64 prompt, completion;

	run_loop(loop, NULL, &run);
	g_assert_no_error(run.error);
	g_assert_cmpstr(confab_agent_loop_get_content(loop), ==, "done");
	g_assert_cmpstr(confab_agent_loop_get_finish_reason(loop), ==, "stop");
	g_assert_true(confab_agent_loop_get_usage(loop, &prompt, &completion));
	g_assert_cmpint(prompt, ==, 20);
	g_assert_cmpint(completion, ==, 2);
	/* the second call is sent the answer that called, then the result */
	messages = json_object_get_array_member(request_of(script, 1, &second), "messages");
	g_assert_cmpuint(json_array_get_length(messages), ==, 3);
	g_assert_cmpstr(
	    json_object_get_string_member(json_array_get_object_element(messages, 1), "role"),
	    ==,
	    "assistant");
	tool_msg = json_array_get_object_element(messages, 2);
	g_assert_cmpstr(json_object_get_string_member(tool_msg, "role"), ==, "tool");
	g_assert_cmpstr(json_object_get_string_member(tool_msg, "tool_call_id"), ==, "call_0_0");
	g_assert_cmpstr(json_object_get_string_member(tool_msg, "content"), ==, "from the tool");
	/* offered: the agent's tools, with tool_choice left to the model */
	g_assert_nonnull(strstr(g_ptr_array_index(script->requests, 0), "\"fake__echo\""));
	g_assert_null(strstr(g_ptr_array_index(script->requests, 0), "tool_choice"));

	blocks = blocks_of(loop);
	g_assert_cmpuint(json_array_get_length(blocks), ==, 3);
	g_assert_cmpstr(block_string(blocks, 0, "type"), ==, "tool_call");
	g_assert_cmpstr(block_string(blocks, 0, "server"), ==, "fake");
	g_assert_cmpstr(block_string(blocks, 1, "type"), ==, "tool_result");
	g_assert_cmpstr(block_string(blocks, 2, "text"), ==, "done");
	g_assert_cmpuint(f->events->len, ==, 2);
	g_assert_true(g_str_has_prefix(g_ptr_array_index(f->events, 0), "{\"type\":\"call\""));
	g_assert_true(g_str_has_prefix(g_ptr_array_index(f->events, 1), "{\"type\":\"result\""));
}

/* A plain answer's transcript is one text block of the whole content, and
 * says so: the turn stores it as the content, once. Handed over, it is not
 * the loop's any more. */
static void
test_blocks_are_content(Fixture *f, gconstpointer data)
{
	const gchar *plain[] = {"Hello \"there\"\n", NULL};
	const gchar *steps[] = {"calls:fake__echo {\"text\":\"x\"}", "done", NULL};
	g_autoptr(TestScript) script = test_script_new(plain);
	g_autoptr(TestScript) script2 = test_script_new(steps);
	g_autoptr(ConfabAgentLoop) loop = loop_new(f, script, NULL, 0);
	g_autoptr(ConfabAgentLoop) loop2 = loop_new(f, script2, NULL, 0);
	g_autoptr(GString) blocks = NULL;
	g_autoptr(GString) blocks2 = NULL;
	gboolean is_content = FALSE;
	Run run = {0}, run2 = {0};

	run_loop(loop, NULL, &run);
	g_assert_no_error(run.error);
	blocks = confab_agent_loop_steal_blocks(loop, &is_content);
	g_assert_true(is_content);
	g_assert_cmpstr(blocks->str, ==, "{\"type\":\"text\",\"text\":\"Hello \\\"there\\\"\\n\"}");
	g_assert_cmpstr(confab_agent_loop_get_blocks(loop), ==, "");
	g_assert_cmpstr(confab_agent_loop_get_content(loop), ==, "Hello \"there\"\n");

	run_loop(loop2, NULL, &run2);
	g_assert_no_error(run2.error);
	blocks2 = confab_agent_loop_steal_blocks(loop2, &is_content);
	g_assert_false(is_content);
	g_assert_true(g_str_has_prefix(blocks2->str, "{\"type\":\"tool_call\""));
}

/* Each step's log probabilities are one logprobs block after its text (or
 * before its calls), as its choice.logprobs; the answer's hold them all. */
static void
test_logprobs(Fixture *f, gconstpointer data)
{
	const gchar *steps[] = {"lp:calls:fake__echo {\"text\":\"x\"}", "lp:done", NULL};
	g_autoptr(TestScript) script = test_script_new(steps);
	g_autoptr(ConfabAgentLoop) loop = loop_new(f, script, NULL, 0);
	g_autoptr(JsonArray) blocks = NULL;
	JsonObject *block;
	JsonArray *all;
	Run run = {0};

	run_loop(loop, NULL, &run);
	g_assert_no_error(run.error);
	blocks = blocks_of(loop);
	g_assert_cmpuint(json_array_get_length(blocks), ==, 5);
	g_assert_cmpstr(block_string(blocks, 0, "type"), ==, "logprobs");
	g_assert_cmpstr(block_string(blocks, 1, "type"), ==, "tool_call");
	g_assert_cmpstr(block_string(blocks, 2, "type"), ==, "tool_result");
	g_assert_cmpstr(block_string(blocks, 3, "type"), ==, "text");
	g_assert_cmpstr(block_string(blocks, 4, "type"), ==, "logprobs");
	block = json_array_get_object_element(blocks, 0);
	g_assert_cmpuint(json_array_get_length(json_object_get_array_member(block, "content")),
			 ==,
			 1);
	g_assert_cmpstr(
	    json_object_get_string_member(
		json_array_get_object_element(json_object_get_array_member(block, "content"), 0),
		"token"),
	    ==,
	    "calls:fake__echo {\"text\":\"x\"}");
	g_assert_true(json_object_get_null_member(block, "refusal"));
	block = json_array_get_object_element(blocks, 4);
	g_assert_cmpuint(json_array_get_length(json_object_get_array_member(block, "content")),
			 ==,
			 1);
	g_assert_cmpstr(
	    json_object_get_string_member(
		json_array_get_object_element(json_object_get_array_member(block, "content"), 0),
		"token"),
	    ==,
	    "done");
	g_assert_cmpfloat(
	    json_object_get_double_member(
		json_array_get_object_element(json_object_get_array_member(block, "content"), 0),
		"logprob"),
	    ==,
	    -0.5);
	/* the answer's, for a JSON client: both steps' entries */
	all = json_object_get_array_member(confab_agent_loop_get_logprobs(loop), "content");
	g_assert_cmpuint(json_array_get_length(all), ==, 2);
}

static void
test_max_steps(Fixture *f, gconstpointer data)
{
	const gchar *steps[] = {"calls:fake__echo {\"text\":\"again\"}", NULL};
	g_autoptr(TestScript) script = test_script_new(steps);
	g_autoptr(ConfabAgentLoop) loop = NULL;
	g_autoptr(JsonArray) blocks = NULL;
	g_autoptr(JsonNode) last = NULL;
	Run run = {0};
	guint results = 0;

	confab_agent_set_max_steps(f->agent, 2);
	loop = loop_new(f, script, NULL, 0);
	run_loop(loop, NULL, &run);
	g_assert_no_error(run.error);
	/* two steps whose tools ran, then one told to answer without */
	g_assert_cmpuint(script->requests->len, ==, 3);
	g_assert_cmpstr(json_object_get_string_member_with_default(
			    json_object_get_object_member(request_of(script, 2, &last), "params"),
			    "tool_choice",
			    ""),
			==,
			"none");
	/* it called anyway: kept, refused, and the client is not told of calls */
	g_assert_cmpstr(confab_agent_loop_get_finish_reason(loop), ==, "stop");
	g_assert_null(f->client_calls);
	blocks = blocks_of(loop);
	for (guint i = 0; i < json_array_get_length(blocks); i++)
		results += g_str_equal(block_string(blocks, i, "type"), "tool_result");
	g_assert_cmpuint(results, ==, 3);
	g_assert_cmpstr(block_string(blocks, json_array_get_length(blocks) - 1, "content"),
			==,
			"Not run: the agent has used up its max_steps");
}

static void
test_unknown_and_bad_arguments(Fixture *f, gconstpointer data)
{
	const gchar *steps[] = {"calls:nope {}|fake__echo not-json|fake__echo [1]", "ok", NULL};
	g_autoptr(TestScript) script = test_script_new(steps);
	g_autoptr(ConfabAgentLoop) loop = loop_new(f, script, NULL, 0);
	g_autoptr(JsonArray) blocks = NULL;
	Run run = {0};

	run_loop(loop, NULL, &run);
	g_assert_no_error(run.error);
	g_assert_cmpstr(confab_agent_loop_get_content(loop), ==, "ok");
	blocks = blocks_of(loop);
	/* three calls, then their three results in the order called */
	g_assert_cmpuint(json_array_get_length(blocks), ==, 7);
	g_assert_cmpstr(block_string(blocks, 3, "content"), ==, "No tool is called 'nope'");
	g_assert_cmpstr(block_string(blocks, 4, "content"),
			==,
			"The arguments are not a JSON object");
	g_assert_cmpstr(block_string(blocks, 5, "content"),
			==,
			"The arguments are not a JSON object");
	for (guint i = 3; i < 6; i++)
		g_assert_true(
		    json_object_get_boolean_member(json_array_get_object_element(blocks, i),
						   "is_error"));
}

static void
test_many_calls_in_order(Fixture *f, gconstpointer data)
{
	g_autoptr(GString) calls = g_string_new("calls:");
	const gchar *steps[] = {NULL, "ok", NULL};
	g_autoptr(TestScript) script = NULL;
	g_autoptr(ConfabAgentLoop) loop = NULL;
	g_autoptr(JsonNode) second = NULL;
	JsonArray *messages;
	Run run = {0};

	/* more than run at once */
	for (guint i = 0; i < CONFAB_AGENT_LOOP_MAX_PARALLEL_TOOLS + 4; i++)
		g_string_append_printf(calls,
				       "%sfake__slow {\"ms\":%u}",
				       i > 0 ? "|" : "",
				       (CONFAB_AGENT_LOOP_MAX_PARALLEL_TOOLS + 4 - i) * 10);
	steps[0] = calls->str;
	script = test_script_new(steps);
	loop = loop_new(f, script, NULL, 0);
	run_loop(loop, NULL, &run);
	g_assert_no_error(run.error);
	messages = json_object_get_array_member(request_of(script, 1, &second), "messages");
	g_assert_cmpuint(json_array_get_length(messages),
			 ==,
			 2 + CONFAB_AGENT_LOOP_MAX_PARALLEL_TOOLS + 4);
	/* results in the order of the calls, whatever order they finished in */
	for (guint i = 0; i < CONFAB_AGENT_LOOP_MAX_PARALLEL_TOOLS + 4; i++) {
		g_autofree gchar *id = g_strdup_printf("call_0_%u", i);
		JsonObject *msg = json_array_get_object_element(messages, 2 + i);
		g_assert_cmpstr(json_object_get_string_member(msg, "tool_call_id"), ==, id);
	}
}

static void
test_client_calls(Fixture *f, gconstpointer data)
{
	const gchar *steps[] = {"calls:fake__echo {\"text\":\"x\"}|get_weather {\"city\":\"Oslo\"}",
				NULL};
	const gchar *params = "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
			      "\"get_weather\",\"parameters\":{\"type\":\"object\"}}}]}";
	g_autoptr(TestScript) script = test_script_new(steps);
	g_autoptr(ConfabAgentLoop) loop = loop_new(f, script, params, 0);
	g_autoptr(JsonArray) blocks = NULL;
	Run run = {0};

	run_loop(loop, NULL, &run);
	g_assert_no_error(run.error);
	/* both offered, side by side */
	g_assert_nonnull(strstr(g_ptr_array_index(script->requests, 0), "\"get_weather\""));
	g_assert_nonnull(strstr(g_ptr_array_index(script->requests, 0), "\"fake__echo\""));
	/* the agent's ran; the turn ends with the client's, renumbered */
	g_assert_cmpuint(script->requests->len, ==, 1);
	g_assert_cmpstr(confab_agent_loop_get_finish_reason(loop), ==, "tool_calls");
	g_assert_nonnull(f->client_calls);
	g_assert_cmpuint(json_array_get_length(f->client_calls), ==, 1);
	g_assert_cmpint(
	    json_object_get_int_member(json_array_get_object_element(f->client_calls, 0), "index"),
	    ==,
	    0);
	blocks = blocks_of(loop);
	g_assert_cmpuint(json_array_get_length(blocks), ==, 3);
	g_assert_cmpstr(block_string(blocks, 1, "name"), ==, "get_weather");
	g_assert_cmpstr(block_string(blocks, 2, "type"), ==, "tool_result");
}

static void
test_deadline(Fixture *f, gconstpointer data)
{
	const gchar *steps[] = {"calls:fake__slow {\"ms\":20000}", "late", NULL};
	g_autoptr(TestScript) script = test_script_new(steps);
	g_autoptr(ConfabAgentLoop) loop = loop_new(f, script, NULL, 1);
	Run run = {0};

	run_loop(loop, NULL, &run);
	g_assert_false(run.ok);
	g_assert_error(run.error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM_TIMEOUT);
	g_clear_error(&run.error);
	g_assert_cmpuint(script->requests->len, ==, 1);
}

static gboolean
cancel_soon(gpointer data)
{
	g_cancellable_cancel(data);
	return G_SOURCE_REMOVE;
}

static void
test_cancel(Fixture *f, gconstpointer data)
{
	const gchar *steps[] = {"calls:fake__slow {\"ms\":20000}", "late", NULL};
	g_autoptr(TestScript) script = test_script_new(steps);
	g_autoptr(ConfabAgentLoop) loop = loop_new(f, script, NULL, 0);
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	Run run = {0};

	g_timeout_add(200, cancel_soon, cancellable);
	run_loop(loop, cancellable, &run);
	g_assert_false(run.ok);
	g_assert_error(run.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_clear_error(&run.error);
}

typedef struct {
	TestScript *script;
	guint n;
} RequestsWait;

static gboolean
has_requests(gpointer data)
{
	RequestsWait *w = data;
	return w->script->requests->len >= w->n;
}

static gboolean
set_true(gpointer data)
{
	*(gboolean *)data = TRUE;
	return G_SOURCE_REMOVE;
}

/* Lets the main loop run for @ms. */
static void
spin(guint ms)
{
	gboolean over = FALSE;
	g_timeout_add(ms, set_true, &over);
	while (!over)
		g_main_context_iteration(NULL, TRUE);
}

/* While the client's flow is held, the loop starts no model call and no
 * tool call; each goes on once it opens. */
static void
test_flow_held(Fixture *f, gconstpointer data)
{
	const gchar *steps[] = {"calls:fake__echo {\"text\":\"held\"}", "done", NULL};
	g_autoptr(TestScript) script = test_script_new(steps);
	g_autoptr(ConfabAgentLoop) loop = loop_new(f, script, NULL, 0);
	g_autoptr(ConfabFlow) flow = confab_flow_new();
	RequestsWait w = {script, 1};
	Run run = {0};

	confab_agent_loop_set_flow(loop, flow);
	/* held from the start: no model call */
	confab_flow_set_held(flow, TRUE);
	confab_agent_loop_run_async(loop, NULL, on_run, &run);
	spin(300);
	g_assert_cmpuint(script->requests->len, ==, 0);
	/* open: the model is called, and its answer leaves the client behind */
	script->hold = flow;
	confab_flow_set_held(flow, FALSE);
	g_assert_true(confab_test_wait_until(has_requests, &w, 10000));
	spin(300);
	/* no tool call while held */
	g_assert_cmpuint(f->events->len, ==, 0);
	g_assert_true(confab_flow_is_held(flow));
	confab_flow_set_held(flow, FALSE);
	/* the tool runs; the second model call is made once the flow is open,
	 * and its answer ends the loop */
	g_assert_true(confab_test_wait_until(is_true, &run.done, 30000));
	g_assert_no_error(run.error);
	g_assert_true(run.ok);
	g_assert_cmpuint(f->events->len, ==, 2);
	g_assert_cmpuint(script->requests->len, ==, 2);
	g_assert_cmpstr(confab_agent_loop_get_content(loop), ==, "done");
	g_assert_cmpuint(confab_flow_get_holds(flow), ==, 3);
}

/* Cancelled while waiting for the flow: the loop ends, cancelled. */
static void
test_flow_held_cancel(Fixture *f, gconstpointer data)
{
	const gchar *steps[] = {"never", NULL};
	g_autoptr(TestScript) script = test_script_new(steps);
	g_autoptr(ConfabAgentLoop) loop = loop_new(f, script, NULL, 0);
	g_autoptr(ConfabFlow) flow = confab_flow_new();
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	Run run = {0};

	confab_agent_loop_set_flow(loop, flow);
	confab_flow_set_held(flow, TRUE);
	g_timeout_add(200, cancel_soon, cancellable);
	run_loop(loop, cancellable, &run);
	g_assert_false(run.ok);
	g_assert_error(run.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_clear_error(&run.error);
	g_assert_cmpuint(script->requests->len, ==, 0);
}

int
main(int argc, char **argv)
{
	gint ret;

	confab_test_init(&argc, &argv, FALSE);
	if (g_getenv("CONFAB_FAKE_MCP") == NULL) {
		g_printerr("SKIP: CONFAB_FAKE_MCP is not set; run the tests with meson test\n");
		return 77;
	}
#define ADD(name, func)                                                                            \
	g_test_add("/confab/agent-loop/" name, Fixture, NULL, fixture_setup, func, fixture_teardown)
	ADD("steps", test_steps);
	ADD("logprobs", test_logprobs);
	ADD("blocks-are-content", test_blocks_are_content);
	ADD("max-steps", test_max_steps);
	ADD("unknown-and-bad-arguments", test_unknown_and_bad_arguments);
	ADD("many-calls-in-order", test_many_calls_in_order);
	ADD("client-calls", test_client_calls);
	ADD("deadline", test_deadline);
	ADD("cancel", test_cancel);
	ADD("flow-held", test_flow_held);
	ADD("flow-held-cancel", test_flow_held_cancel);
#undef ADD
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
