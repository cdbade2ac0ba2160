/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * What the client sends is what the model gets: a stateless client (an SDK
 * without metadata.session_id, a chat front end, a coding agent) resends
 * the whole history on every call, and each assistant message of it, with
 * its text, parts, tool calls and reasoning, must reach the upstream as
 * sent. Checked at the upstream (tests/fake-upstream records every
 * request), through both doors, and in the stored copy; and reasoning goes
 * back with tool calls, as DeepSeek's thinking mode demands (the fake's
 * "thinking" script refuses a request without it, as DeepSeek does).
 */

#define INSTRUCTIONS "Answer briefly."
#define FAKE_TEXT    "Hello, world! héllo 🌍"

typedef struct {
	ConfabTestFakeUpstream *up;
	ConfabTestDaemon *daemon;
	gchar *token;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->up = confab_test_fake_upstream_start();
	f->daemon = confab_test_daemon_start(NULL, NULL);
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	confab_test_fake_upstream_free(f->up);
	g_free(f->token);
}

/* An openai agent on the fake whose script is @model; @servers (nullable)
 * its MCP servers. */
static gchar *
create_agent(Fixture *f, const gchar *model, const gchar *servers)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", model);
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "instructions", "s", INSTRUCTIONS);
	g_variant_dict_insert(&dict, "base_url", "s", f->up->base_url);
	g_variant_dict_insert(&dict, "upstream_model", "s", model);
	g_variant_dict_insert(&dict, "api_key", "s", "sk-fake-history");
	if (servers != NULL)
		g_variant_dict_insert(&dict, "mcp_servers", "s", servers);
	return confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
}

/* POST @path with the agent as its model, @key (messages or input) set to
 * @value (JSON) and @extra members (nullable, each with its leading comma). */
static ConfabTestResponse *
post(Fixture *f,
     const gchar *path,
     const gchar *agent,
     const gchar *key,
     const gchar *value,
     const gchar *extra)
{
	g_autofree gchar *body = g_strdup_printf("{\"model\":\"%s\",\"%s\":%s%s}",
						 agent,
						 key,
						 value,
						 extra != NULL ? extra : "");
	return confab_test_http(f->daemon, "POST", path, f->token, body);
}

static ConfabTestResponse *
chat(Fixture *f, const gchar *agent, const gchar *messages, const gchar *extra)
{
	return post(f, "/api/v1/chat/completions", agent, "messages", messages, extra);
}

static ConfabTestResponse *
respond(Fixture *f, const gchar *agent, const gchar *input, const gchar *extra)
{
	return post(f, "/api/v1/responses", agent, "input", input, extra);
}

/* The messages of the upstream's @index-th request, as JSON text without
 * the agent's instructions (checked here to come first). */
static gchar *
upstream_messages(Fixture *f, guint index)
{
	g_autoptr(JsonNode) all = confab_test_fake_upstream_requests(f->up);
	JsonArray *requests = json_node_get_array(all);
	JsonNode *messages;
	g_autoptr(JsonArray) rest = json_array_new();
	g_autoptr(JsonNode) node = json_node_alloc();
	JsonArray *array;

	g_assert_cmpuint(index, <, json_array_get_length(requests));
	messages = confab_test_json_get(json_array_get_element(requests, index), "body.messages");
	g_assert_nonnull(messages);
	array = json_node_get_array(messages);
	g_assert_cmpuint(json_array_get_length(array), >, 0);
	g_assert_cmpstr(confab_test_json_string(json_array_get_element(array, 0), "role"),
			==,
			"system");
	g_assert_cmpstr(confab_test_json_string(json_array_get_element(array, 0), "content"),
			==,
			INSTRUCTIONS);
	for (guint i = 1; i < json_array_get_length(array); i++)
		json_array_add_element(rest, json_node_copy(json_array_get_element(array, i)));
	json_node_init_array(node, rest);
	return json_to_string(node, FALSE);
}

static guint
upstream_n_requests(Fixture *f)
{
	g_autoptr(JsonNode) all = confab_test_fake_upstream_requests(f->up);
	return json_array_get_length(json_node_get_array(all));
}

/* The stored messages of the conversation that @r answered, oldest first. */
static ConfabTestResponse *
stored(Fixture *f, ConfabTestResponse *r)
{
	const gchar *session = confab_test_json_string(r->json, "metadata.session_id");
	g_autofree gchar *path = NULL;
	ConfabTestResponse *list;

	if (session == NULL)
		session = confab_test_json_string(r->json, "conversation.id");
	g_assert_nonnull(session);
	path = g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session);
	list = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(list->status, ==, 200);
	return list;
}

/* message @index's content_blocks, as JSON text */
static gchar *
stored_blocks(ConfabTestResponse *list, guint index)
{
	g_autofree gchar *path = g_strdup_printf("data.%u.content_blocks", index);
	JsonNode *blocks = confab_test_json_get(list->json, path);

	g_assert_nonnull(blocks);
	return json_to_string(blocks, FALSE);
}

/* The text of a response's message item, as the SDKs' output_text. */
static const gchar *
output_text(ConfabTestResponse *r)
{
	JsonNode *output = confab_test_json_get(r->json, "output");
	JsonArray *items;

	g_assert_nonnull(output);
	items = json_node_get_array(output);
	for (guint i = 0; i < json_array_get_length(items); i++) {
		JsonNode *item = json_array_get_element(items, i);
		if (g_strcmp0(confab_test_json_string(item, "type"), "message") == 0)
			return confab_test_json_string(item, "content.0.text");
	}
	return NULL;
}

/* ---------- the assistant's side of a resent history ---------- */

static void
test_resent_text(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "plain", NULL);
	g_autoptr(ConfabTestResponse) r =
	    chat(f,
		 agent,
		 "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":"
		 "\"said-A\"},{\"role\":\"user\",\"content\":\"b\"}]",
		 NULL);
	g_autoptr(ConfabTestResponse) list = NULL;
	g_autofree gchar *sent = NULL;
	g_autofree gchar *blocks = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	sent = upstream_messages(f, 0);
	g_assert_cmpstr(sent,
			==,
			"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\","
			"\"content\":\"said-A\"},{\"role\":\"user\",\"content\":\"b\"}]");
	/* the stored copy is the transcript docs/api.md 3.5 promises */
	list = stored(f, r);
	g_assert_cmpstr(confab_test_json_string(list->json, "data.1.role"), ==, "assistant");
	blocks = stored_blocks(list, 1);
	g_assert_cmpstr(blocks, ==, "[{\"type\":\"text\",\"text\":\"said-A\"}]");
}

static void
test_resent_parts(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "plain", NULL);
	g_autoptr(ConfabTestResponse) r =
	    chat(f,
		 agent,
		 "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":["
		 "{\"type\":\"text\",\"text\":\"said-\"},{\"type\":\"text\",\"text\":\"A\"}]},"
		 "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"one\"}]},"
		 "{\"role\":\"user\",\"content\":\"b\"}]",
		 NULL);
	g_autofree gchar *sent = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	sent = upstream_messages(f, 0);
	/* parts stay parts, one text is a string */
	g_assert_cmpstr(sent,
			==,
			"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\","
			"\"content\":[{\"type\":\"text\",\"text\":\"said-\"},{\"type\":\"text\","
			"\"text\":\"A\"}]},{\"role\":\"assistant\",\"content\":\"one\"},"
			"{\"role\":\"user\",\"content\":\"b\"}]");
}

static void
test_resent_text_and_calls(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "plain", NULL);
	g_autoptr(ConfabTestResponse) r =
	    chat(f,
		 agent,
		 "[{\"role\":\"user\",\"content\":\"weather?\"},"
		 "{\"role\":\"assistant\",\"content\":\"Let me look.\",\"tool_calls\":[{\"id\":"
		 "\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
		 "\"arguments\":\"{}\"}}]},"
		 "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"sunny\"},"
		 "{\"role\":\"user\",\"content\":\"thanks\"}]",
		 NULL);
	g_autoptr(ConfabTestResponse) list = NULL;
	g_autofree gchar *sent = NULL;
	g_autofree gchar *blocks = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	sent = upstream_messages(f, 0);
	g_assert_cmpstr(
	    sent,
	    ==,
	    "[{\"role\":\"user\",\"content\":\"weather?\"},{\"role\":\"assistant\","
	    "\"content\":\"Let me look.\",\"tool_calls\":[{\"id\":\"call_1\",\"type\":"
	    "\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{}\"}}]},"
	    "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"sunny\"},"
	    "{\"role\":\"user\",\"content\":\"thanks\"}]");
	list = stored(f, r);
	blocks = stored_blocks(list, 1);
	g_assert_cmpstr(blocks,
			==,
			"[{\"type\":\"text\",\"text\":\"Let me look.\"},{\"type\":\"tool_call\","
			"\"id\":\"call_1\",\"name\":\"get_weather\",\"arguments\":\"{}\"}]");
	g_assert_cmpstr(confab_test_json_string(list->json, "data.1.content.0.text"),
			==,
			"Let me look.");
}

/* Several turns resent, then the conversation continued by its id: the
 * stored history goes back as it was sent. */
static void
test_resent_turns(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "plain", NULL);
	const gchar *history = "{\"role\":\"user\",\"content\":\"u1\"},"
			       "{\"role\":\"assistant\",\"content\":\"a1\"},"
			       "{\"role\":\"user\",\"content\":\"u2\"},"
			       "{\"role\":\"assistant\",\"content\":\"a2\"},"
			       "{\"role\":\"user\",\"content\":\"u3\"}";
	g_autofree gchar *messages = g_strdup_printf("[%s]", history);
	g_autoptr(ConfabTestResponse) r = chat(f, agent, messages, NULL);
	g_autoptr(ConfabTestResponse) again = NULL;
	g_autofree gchar *sent = NULL;
	g_autofree gchar *sent_again = NULL;
	g_autofree gchar *more = NULL;
	g_autofree gchar *extra = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	sent = upstream_messages(f, 0);
	g_assert_cmpstr(sent, ==, messages);

	more = g_strdup_printf("[%s,{\"role\":\"assistant\",\"content\":\"%s\"},"
			       "{\"role\":\"user\",\"content\":\"u4\"}]",
			       history,
			       FAKE_TEXT);
	extra = g_strdup_printf(",\"metadata\":{\"session_id\":\"%s\"}",
				confab_test_json_string(r->json, "metadata.session_id"));
	again = chat(f, agent, more, extra);
	g_assert_cmpuint(again->status, ==, 200);
	sent_again = upstream_messages(f, 1);
	g_assert_cmpstr(sent_again, ==, more);
}

/* The Responses door: an assistant input message, with its calls. */
static void
test_responses_input(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "plain", NULL);
	g_autoptr(ConfabTestResponse) r = respond(
	    f,
	    agent,
	    "[{\"role\":\"user\",\"content\":\"a\"},"
	    "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
	    "\"text\":\"said-A\"}]},"
	    "{\"role\":\"user\",\"content\":\"b\"},"
	    "{\"role\":\"assistant\",\"content\":\"Let me look.\"},"
	    "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"get_weather\","
	    "\"arguments\":\"{}\"},"
	    "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"sunny\"}]",
	    NULL);
	g_autofree gchar *sent = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "status"), ==, "completed");
	sent = upstream_messages(f, 0);
	g_assert_cmpstr(sent,
			==,
			"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\","
			"\"content\":\"said-A\"},{\"role\":\"user\",\"content\":\"b\"},"
			"{\"role\":\"assistant\",\"content\":\"Let me look.\",\"tool_calls\":[{"
			"\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":"
			"\"get_weather\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\","
			"\"tool_call_id\":\"call_1\",\"content\":\"sunny\"}]");
}

/* ---------- reasoning goes back with tool calls ---------- */

static const gchar *weather_tool =
    ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
    "\"parameters\":{\"type\":\"object\"}}}]";

/* A client's reasoning_content on its assistant message with calls. */
static void
test_reasoning_resent(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "thinking", NULL);
	g_autoptr(ConfabTestResponse) r =
	    chat(f,
		 agent,
		 "[{\"role\":\"user\",\"content\":\"weather?\"},"
		 "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"I need the "
		 "tool.\",\"tool_calls\":[{\"id\":\"call_think_1\",\"type\":\"function\","
		 "\"function\":{\"name\":\"get_weather\",\"arguments\":\"{}\"}}]},"
		 "{\"role\":\"tool\",\"tool_call_id\":\"call_think_1\",\"content\":\"sunny\"}]",
		 weather_tool);
	g_autoptr(ConfabTestResponse) list = NULL;
	g_autofree gchar *sent = NULL;
	g_autofree gchar *blocks = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.message.content"),
			==,
			"Thought it through.");
	sent = upstream_messages(f, 0);
	g_assert_nonnull(strstr(sent, "\"reasoning_content\":\"I need the tool.\""));
	list = stored(f, r);
	blocks = stored_blocks(list, 1);
	g_assert_cmpstr(blocks,
			==,
			"[{\"type\":\"reasoning\",\"text\":\"I need the tool.\"},{\"type\":"
			"\"tool_call\",\"id\":\"call_think_1\",\"name\":\"get_weather\","
			"\"arguments\":\"{}\"}]");
}

/* The client's tools: the turn ends with the model's call, and the
 * conversation continued by its id sends the stored reasoning back. */
static void
test_reasoning_continued(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "thinking", NULL);
	g_autoptr(ConfabTestResponse) first =
	    chat(f, agent, "[{\"role\":\"user\",\"content\":\"weather?\"}]", weather_tool);
	g_autoptr(ConfabTestResponse) second = NULL;
	g_autofree gchar *extra = NULL;
	g_autofree gchar *sent = NULL;

	g_assert_cmpuint(first->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(first->json, "choices.0.finish_reason"),
			==,
			"tool_calls");
	g_assert_cmpstr(confab_test_json_string(first->json, "choices.0.message.reasoning_content"),
			==,
			"I need the tool.");
	/* a client that keeps no reasoning: Confab's stored copy has it */
	extra = g_strdup_printf(",\"metadata\":{\"session_id\":\"%s\"}%s",
				confab_test_json_string(first->json, "metadata.session_id"),
				weather_tool);
	second =
	    chat(f,
		 agent,
		 "[{\"role\":\"user\",\"content\":\"weather?\"},"
		 "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":"
		 "\"call_think_1\",\"type\":\"function\",\"function\":{\"name\":"
		 "\"get_weather\",\"arguments\":\"{\\\"text\\\":\\\"think\\\"}\"}}]},"
		 "{\"role\":\"tool\",\"tool_call_id\":\"call_think_1\",\"content\":\"sunny\"}]",
		 extra);
	g_assert_cmpuint(second->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(second->json, "choices.0.message.content"),
			==,
			"Thought it through.");
	sent = upstream_messages(f, 1);
	g_assert_cmpstr(sent,
			==,
			"[{\"role\":\"user\",\"content\":\"weather?\"},{\"role\":\"assistant\","
			"\"content\":null,\"reasoning_content\":\"I need the tool.\","
			"\"tool_calls\":[{\"id\":\"call_think_1\",\"type\":\"function\","
			"\"function\":{\"name\":\"get_weather\",\"arguments\":"
			"\"{\\\"text\\\":\\\"think\\\"}\"}}]},{\"role\":\"tool\",\"tool_call_id\":"
			"\"call_think_1\",\"content\":\"sunny\"}]");
}

/* Confab's own agent loop: the step after the agent's MCP call carries the
 * reasoning that led to it. */
static void
test_reasoning_agent_loop(Fixture *f, gconstpointer data)
{
	g_autofree gchar *servers = NULL;
	g_autofree gchar *agent = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autofree gchar *sent = NULL;

	if (g_getenv("CONFAB_FAKE_MCP") == NULL) {
		g_test_skip("CONFAB_FAKE_MCP is not set");
		return;
	}
	servers = g_strdup_printf("{\"mcpServers\":{\"fake\":{\"command\":\"%s\"}}}",
				  g_getenv("CONFAB_FAKE_MCP"));
	agent = create_agent(f, "thinking:fake__echo", servers);
	r = chat(f, agent, "[{\"role\":\"user\",\"content\":\"think\"}]", NULL);
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.message.content"),
			==,
			"Thought it through.");
	g_assert_cmpuint(upstream_n_requests(f), ==, 2);
	sent = upstream_messages(f, 1);
	g_assert_nonnull(strstr(sent,
				"{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":"
				"\"I need the tool.\",\"tool_calls\":[{\"id\":\"call_think_1\""));
	/* only with calls: the final answer's reasoning stays in the transcript */
	g_assert_null(strstr(sent, "The tool has answered."));
}

/* The Responses door: a reasoning item before the calls it led to. */
static void
test_responses_reasoning(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "thinking", NULL);
	g_autoptr(ConfabTestResponse) first =
	    respond(f,
		    agent,
		    "\"weather?\"",
		    ",\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\","
		    "\"parameters\":{\"type\":\"object\"}}]");
	g_autoptr(ConfabTestResponse) second = NULL;
	g_autoptr(ConfabTestResponse) resent = NULL;
	g_autofree gchar *input = NULL;
	g_autofree gchar *extra = NULL;
	g_autofree gchar *reasoning_item = NULL;
	g_autofree gchar *call_item = NULL;
	JsonArray *output;

	g_assert_cmpuint(first->status, ==, 200);
	output = json_node_get_array(confab_test_json_get(first->json, "output"));
	g_assert_cmpuint(json_array_get_length(output), ==, 2);
	g_assert_cmpstr(confab_test_json_string(first->json, "output.0.type"), ==, "reasoning");
	g_assert_cmpstr(confab_test_json_string(first->json, "output.1.type"), ==, "function_call");

	/* continued by previous_response_id: the stored reasoning goes back */
	extra = g_strdup_printf(",\"previous_response_id\":\"%s\"",
				confab_test_json_string(first->json, "id"));
	second = respond(f,
			 agent,
			 "[{\"type\":\"function_call_output\",\"call_id\":\"call_think_1\","
			 "\"output\":\"sunny\"}]",
			 extra);
	g_assert_cmpuint(second->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(second->json, "status"), ==, "completed");
	g_assert_cmpstr(output_text(second), ==, "Thought it through.");

	/* resent whole by a stateless client, as the SDK's items */
	reasoning_item = json_to_string(json_array_get_element(output, 0), FALSE);
	call_item = json_to_string(json_array_get_element(output, 1), FALSE);
	input = g_strdup_printf("[{\"role\":\"user\",\"content\":\"weather?\"},%s,%s,"
				"{\"type\":\"function_call_output\",\"call_id\":\"call_think_1\","
				"\"output\":\"sunny\"}]",
				reasoning_item,
				call_item);
	resent = respond(f, agent, input, NULL);
	g_assert_cmpuint(resent->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(resent->json, "status"), ==, "completed");
	g_assert_cmpstr(output_text(resent), ==, "Thought it through.");
	g_assert_cmpuint(upstream_n_requests(f), ==, 3);
}

int
main(int argc, char **argv)
{
	gint ret;
	const struct {
		const gchar *path;
		void (*func)(Fixture *, gconstpointer);
	} tests[] = {
	    {"/confab/history/resent-text", test_resent_text},
	    {"/confab/history/resent-parts", test_resent_parts},
	    {"/confab/history/resent-text-and-calls", test_resent_text_and_calls},
	    {"/confab/history/resent-turns", test_resent_turns},
	    {"/confab/history/responses-input", test_responses_input},
	    {"/confab/history/reasoning-resent", test_reasoning_resent},
	    {"/confab/history/reasoning-continued", test_reasoning_continued},
	    {"/confab/history/reasoning-agent-loop", test_reasoning_agent_loop},
	    {"/confab/history/responses-reasoning", test_responses_reasoning},
	};

	confab_test_init(&argc, &argv, TRUE);
	if (g_getenv("CONFAB_FAKE_UPSTREAM") == NULL) {
		g_printerr(
		    "SKIP: CONFAB_FAKE_UPSTREAM is not set; run the tests with meson test\n");
		confab_test_finish();
		return CONFAB_TEST_SKIP;
	}
	for (guint i = 0; i < G_N_ELEMENTS(tests); i++)
		g_test_add(tests[i].path,
			   Fixture,
			   NULL,
			   fixture_setup,
			   tests[i].func,
			   fixture_teardown);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
