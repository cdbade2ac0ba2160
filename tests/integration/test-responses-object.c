/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * The Responses API as strict clients see it: the response object with
 * every member the Open Responses specification's response schema
 * (OpenAI's Response object) requires, of the type it requires, in the
 * JSON answer, in every streamed event's `response` and on GET; and what a
 * coding agent such as Codex sends: `client_metadata` and the other
 * Responses-only members kept from the upstream, `namespace` tools offered
 * upstream as function tools and their calls mapped back.
 */

typedef struct {
	ConfabTestFakeUpstream *up;
	ConfabTestDaemon *daemon;
	gchar *echo_agent;
	gchar *token;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->up = confab_test_fake_upstream_start();
	f->daemon = confab_test_daemon_start(NULL, NULL);
	f->echo_agent = confab_test_create_agent(f->daemon, "echo", "echo");
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	confab_test_fake_upstream_free(f->up);
	g_free(f->echo_agent);
	g_free(f->token);
}

static gchar *
create_upstream_agent(Fixture *f, const gchar *script)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", script);
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", f->up->base_url);
	g_variant_dict_insert(&dict, "upstream_model", "s", script);
	g_variant_dict_insert(&dict, "api_key", "s", "sk-fake-object");
	return confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
}

static ConfabTestResponse *
post(Fixture *f, const gchar *body)
{
	return confab_test_http(f->daemon, "POST", "/api/v1/responses", f->token, body);
}

/* The data of each event of a Responses stream ("event: NAME" then
 * "data: JSON"). */
static GPtrArray *
stream_data(ConfabTestResponse *r)
{
	GPtrArray *events = g_ptr_array_new_with_free_func(g_free);
	g_autofree gchar *text =
	    g_strndup(g_bytes_get_data(r->body, NULL), g_bytes_get_size(r->body));
	g_auto(GStrv) blocks = g_strsplit(text, "\n\n", -1);

	for (guint i = 0; blocks[i] != NULL; i++) {
		const gchar *data = strstr(blocks[i], "data: ");
		if (data != NULL)
			g_ptr_array_add(events, g_strdup(data + strlen("data: ")));
	}
	g_assert_cmpuint(events->len, >=, 3);
	return events;
}

/* ---------- the schema ---------- */

enum {
	T_STRING = 1 << 0,
	T_INTEGER = 1 << 1,
	T_NUMBER = 1 << 2, /* an integer is a number too */
	T_BOOLEAN = 1 << 3,
	T_OBJECT = 1 << 4,
	T_ARRAY = 1 << 5,
	T_NULL = 1 << 6,
};

/* The members the schema's "required" lists, each with the types it
 * allows (ResponseResource in the Open Responses specification). */
static const struct {
	const gchar *name;
	guint types;
} required[] = {
    {"id", T_STRING},
    {"object", T_STRING},
    {"created_at", T_INTEGER},
    {"completed_at", T_INTEGER | T_NULL},
    {"status", T_STRING},
    {"incomplete_details", T_OBJECT | T_NULL},
    {"model", T_STRING},
    {"previous_response_id", T_STRING | T_NULL},
    {"instructions", T_STRING | T_ARRAY | T_NULL},
    {"output", T_ARRAY},
    {"error", T_OBJECT | T_NULL},
    {"tools", T_ARRAY},
    {"tool_choice", T_STRING | T_OBJECT},
    {"truncation", T_STRING},
    {"parallel_tool_calls", T_BOOLEAN},
    {"text", T_OBJECT},
    {"top_p", T_NUMBER},
    {"presence_penalty", T_NUMBER},
    {"frequency_penalty", T_NUMBER},
    {"top_logprobs", T_INTEGER},
    {"temperature", T_NUMBER},
    {"reasoning", T_OBJECT | T_NULL},
    {"user", T_STRING | T_NULL},
    {"usage", T_OBJECT | T_NULL},
    {"max_output_tokens", T_INTEGER | T_NULL},
    {"max_tool_calls", T_INTEGER | T_NULL},
    {"store", T_BOOLEAN},
    {"background", T_BOOLEAN},
    {"service_tier", T_STRING},
    {"metadata", T_OBJECT},
    {"safety_identifier", T_STRING | T_NULL},
    {"prompt_cache_key", T_STRING | T_NULL},
};

static guint
type_of(JsonNode *node)
{
	GType type;

	switch (JSON_NODE_TYPE(node)) {
	case JSON_NODE_OBJECT:
		return T_OBJECT;
	case JSON_NODE_ARRAY:
		return T_ARRAY;
	case JSON_NODE_NULL:
		return T_NULL;
	case JSON_NODE_VALUE:
	default:
		type = json_node_get_value_type(node);
		if (type == G_TYPE_STRING)
			return T_STRING;
		if (type == G_TYPE_BOOLEAN)
			return T_BOOLEAN;
		if (type == G_TYPE_INT64)
			return T_INTEGER | T_NUMBER;
		return T_NUMBER;
	}
}

static void
assert_member(JsonObject *obj, const gchar *where, const gchar *name, guint types)
{
	JsonNode *node = json_object_get_member(obj, name);

	if (node == NULL)
		g_error("%s: the required member %s is missing", where, name);
	if ((type_of(node) & types) == 0) {
		g_autofree gchar *json = json_to_string(node, FALSE);
		g_error("%s: %s is %s, of a type the schema does not allow", where, name, json);
	}
}

/* @response against the schema: every required member, of its type; a
 * function tool with its own required members; completed_at once
 * completed. */
static void
assert_schema(JsonNode *response, const gchar *where)
{
	JsonObject *obj;
	JsonArray *tools;

	g_assert_nonnull(response);
	g_assert_true(JSON_NODE_HOLDS_OBJECT(response));
	obj = json_node_get_object(response);
	for (guint i = 0; i < G_N_ELEMENTS(required); i++)
		assert_member(obj, where, required[i].name, required[i].types);
	g_assert_cmpstr(json_object_get_string_member(obj, "object"), ==, "response");
	if (g_str_equal(json_object_get_string_member(obj, "status"), "completed"))
		assert_member(obj, where, "completed_at", T_INTEGER);
	tools = json_object_get_array_member(obj, "tools");
	for (guint i = 0; i < json_array_get_length(tools); i++) {
		JsonObject *tool = json_array_get_object_element(tools, i);
		JsonArray *inner;

		if (g_str_equal(json_object_get_string_member(tool, "type"), "function")) {
			assert_member(tool, where, "name", T_STRING);
			assert_member(tool, where, "description", T_STRING | T_NULL);
			assert_member(tool, where, "parameters", T_OBJECT | T_NULL);
			assert_member(tool, where, "strict", T_BOOLEAN | T_NULL);
			continue;
		}
		inner = json_object_get_array_member(tool, "tools");
		for (guint k = 0; inner != NULL && k < json_array_get_length(inner); k++) {
			JsonObject *fn = json_array_get_object_element(inner, k);
			assert_member(fn, where, "strict", T_BOOLEAN | T_NULL);
			assert_member(fn, where, "parameters", T_OBJECT | T_NULL);
		}
	}
}

#define TOOLS                                                                                      \
	"\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\",\"parameters\":"               \
	"{\"type\":\"object\"}},{\"type\":\"namespace\",\"name\":\"multi\",\"description\":"       \
	"\"Agents\",\"tools\":[{\"type\":\"function\",\"name\":\"wait\",\"description\":\"Wait\"}" \
	"]}]"

static void
test_schema(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":\"Hello\",%s}", f->echo_agent, TOOLS);
	g_autofree gchar *stream_body = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":\"Hello\",\"stream\":true,\"temperature\":0.5,%s}",
	    f->echo_agent,
	    TOOLS);
	g_autoptr(ConfabTestResponse) r = post(f, body);
	g_autoptr(ConfabTestResponse) s = post(f, stream_body);
	g_autoptr(ConfabTestResponse) got = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autofree gchar *path = NULL;
	guint with_response = 0;

	/* JSON, with OpenAI's defaults where the request said nothing */
	g_assert_cmpuint(r->status, ==, 200);
	assert_schema(r->json, "JSON answer");
	g_assert_cmpint(confab_test_json_int(r->json, "top_logprobs"), ==, 0);
	g_assert_cmpstr(confab_test_json_string(r->json, "service_tier"), ==, "default");
	g_assert_cmpstr(confab_test_json_string(r->json, "tools.0.name"), ==, "get_weather");
	g_assert_cmpstr(confab_test_json_string(r->json, "tools.1.type"), ==, "namespace");
	g_assert_false(json_node_get_boolean(confab_test_json_get(r->json, "tools.0.strict")));
	g_assert_cmpfloat(json_node_get_double(confab_test_json_get(r->json, "temperature")),
			  ==,
			  1);
	g_assert_cmpfloat(json_node_get_double(confab_test_json_get(r->json, "top_p")), ==, 1);
	g_assert_cmpfloat(json_node_get_double(confab_test_json_get(r->json, "presence_penalty")),
			  ==,
			  0);

	/* streamed: the response of every event that carries one */
	g_assert_cmpuint(s->status, ==, 200);
	events = stream_data(s);
	for (guint i = 0; i < events->len; i++) {
		g_autoptr(JsonNode) event = json_from_string(g_ptr_array_index(events, i), NULL);
		JsonNode *response = event != NULL ? confab_test_json_get(event, "response") : NULL;
		g_autofree gchar *where = NULL;

		if (response == NULL)
			continue;
		where = g_strdup_printf("event %s", confab_test_json_string(event, "type"));
		assert_schema(response, where);
		g_assert_cmpfloat(
		    json_node_get_double(confab_test_json_get(response, "temperature")),
		    ==,
		    0.5);
		with_response++;
	}
	/* created, in_progress, completed */
	g_assert_cmpuint(with_response, ==, 3);

	/* stored */
	path = g_strdup_printf("/api/v1/responses/%s", confab_test_json_string(r->json, "id"));
	got = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(got->status, ==, 200);
	assert_schema(got->json, "GET");
	g_assert_cmpstr(confab_test_json_string(got->json, "status"), ==, "completed");
}

/* A failed response and an incomplete one keep to the schema too: no
 * completed_at, and still every member. */
static void
test_schema_failed(Fixture *f, gconstpointer data)
{
	g_autofree gchar *failing = create_upstream_agent(f, "500");
	g_autofree gchar *cut = create_upstream_agent(f, "length");
	g_autofree gchar *a =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":\"Hi\",\"stream\":true}", failing);
	g_autofree gchar *b = g_strdup_printf("{\"model\":\"%s\",\"input\":\"Hi\"}", cut);
	g_autoptr(ConfabTestResponse) r = post(f, a);
	g_autoptr(ConfabTestResponse) r2 = post(f, b);
	g_autoptr(GPtrArray) events = NULL;
	gboolean failed = FALSE;

	if (r->status == 200) {
		events = stream_data(r);
		for (guint i = 0; i < events->len; i++) {
			g_autoptr(JsonNode) event =
			    json_from_string(g_ptr_array_index(events, i), NULL);
			JsonNode *response = event != NULL ? confab_test_json_get(event, "response")
							   : NULL;
			if (response == NULL)
				continue;
			assert_schema(response, "failed stream");
			if (g_strcmp0(confab_test_json_string(response, "status"), "failed") == 0) {
				failed = TRUE;
				g_assert_true(JSON_NODE_HOLDS_NULL(
				    confab_test_json_get(response, "completed_at")));
			}
		}
		g_assert_true(failed);
	} else {
		/* the stream's head waited for the upstream, and the refusal is
		 * an HTTP error */
		g_assert_cmpuint(r->status, >=, 500);
	}
	g_assert_cmpuint(r2->status, ==, 200);
	assert_schema(r2->json, "incomplete");
	g_assert_cmpstr(confab_test_json_string(r2->json, "status"), ==, "incomplete");
	g_assert_true(JSON_NODE_HOLDS_NULL(confab_test_json_get(r2->json, "completed_at")));
}

/* ---------- what Codex sends ---------- */

static JsonNode *
last_upstream_body(Fixture *f)
{
	g_autoptr(JsonNode) all = confab_test_fake_upstream_requests(f->up);
	JsonArray *requests = json_node_get_array(all);

	g_assert_cmpuint(json_array_get_length(requests), >, 0);
	return json_node_copy(confab_test_json_get(
	    json_array_get_element(requests, json_array_get_length(requests) - 1),
	    "body"));
}

/* client_metadata, include and the other Responses-only members stay here;
 * what Chat Completions knows goes on. */
static void
test_kept_here(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_upstream_agent(f, "plain");
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":\"Hi\",\"store\":false,\"stream\":true,"
	    "\"client_metadata\":{\"x-codex-installation-id\":\"inst-1\",\"session_id\":\"s-1\"},"
	    "\"include\":[\"reasoning.encrypted_content\"],\"prompt_cache_key\":\"pck-1\","
	    "\"reasoning\":{\"summary\":\"auto\"},\"parallel_tool_calls\":true,"
	    "\"something_new\":{\"a\":1}}",
	    agent);
	g_autoptr(ConfabTestResponse) r = post(f, body);
	g_autoptr(JsonNode) sent = NULL;
	g_autofree gchar *text = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	sent = last_upstream_body(f);
	text = json_to_string(sent, FALSE);
	g_assert_null(strstr(text, "inst-1"));
	g_assert_null(confab_test_json_get(sent, "client_metadata"));
	g_assert_null(confab_test_json_get(sent, "include"));
	g_assert_null(confab_test_json_get(sent, "something_new"));
	g_assert_null(confab_test_json_get(sent, "store"));
	g_assert_cmpstr(confab_test_json_string(sent, "prompt_cache_key"), ==, "pck-1");
	g_assert_true(json_node_get_boolean(confab_test_json_get(sent, "parallel_tool_calls")));
}

/* A namespace's tools: flattened upstream, called back by their own name
 * in their namespace, and a later input's namespaced call sent upstream by
 * the flattened name. */
static void
test_namespace(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":\"/tool multi__wait {\\\"ms\\\":5}\",%s}",
			    f->echo_agent,
			    TOOLS);
	g_autofree gchar *stream_body = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":\"/tool multi__wait {}\",\"stream\":true,%s}",
	    f->echo_agent,
	    TOOLS);
	g_autofree gchar *agent = create_upstream_agent(f, "plain");
	g_autofree gchar *history = g_strdup_printf(
	    "{\"model\":\"%s\",\"store\":false,\"input\":[{\"role\":\"user\",\"content\":\"go\"},"
	    "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"namespace\":\"multi\","
	    "\"name\":\"wait\",\"arguments\":\"{}\"},{\"type\":\"function_call_output\","
	    "\"call_id\":\"call_1\",\"output\":\"done\"}],%s}",
	    agent,
	    TOOLS);
	g_autoptr(ConfabTestResponse) r = post(f, body);
	g_autoptr(ConfabTestResponse) s = post(f, stream_body);
	g_autoptr(ConfabTestResponse) h = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autoptr(JsonNode) sent = NULL;
	JsonNode *call = NULL;
	guint done = 0;

	g_assert_cmpuint(r->status, ==, 200);
	for (guint i = 0; i < 4 && call == NULL; i++) {
		g_autofree gchar *p = g_strdup_printf("output.%u.type", i);
		if (g_strcmp0(confab_test_json_string(r->json, p), "function_call") == 0) {
			g_autofree gchar *item = g_strdup_printf("output.%u", i);
			call = confab_test_json_get(r->json, item);
		}
	}
	g_assert_nonnull(call);
	g_assert_cmpstr(confab_test_json_string(call, "namespace"), ==, "multi");
	g_assert_cmpstr(confab_test_json_string(call, "name"), ==, "wait");
	g_assert_cmpstr(confab_test_json_string(call, "arguments"), ==, "{\"ms\":5}");

	/* streamed: the items and the arguments' done event say the same */
	g_assert_cmpuint(s->status, ==, 200);
	events = stream_data(s);
	for (guint i = 0; i < events->len; i++) {
		g_autoptr(JsonNode) event = json_from_string(g_ptr_array_index(events, i), NULL);
		const gchar *type = confab_test_json_string(event, "type");
		if (g_strcmp0(type, "response.function_call_arguments.done") == 0) {
			g_assert_cmpstr(confab_test_json_string(event, "name"), ==, "wait");
			done++;
		} else if (g_strcmp0(type, "response.output_item.done") == 0 &&
			   g_strcmp0(confab_test_json_string(event, "item.type"),
				     "function_call") == 0) {
			g_assert_cmpstr(confab_test_json_string(event, "item.namespace"),
					==,
					"multi");
			g_assert_cmpstr(confab_test_json_string(event, "item.name"), ==, "wait");
		}
	}
	g_assert_cmpuint(done, ==, 1);

	/* the history sent back: the model sees the names it was offered */
	h = post(f, history);
	g_assert_cmpuint(h->status, ==, 200);
	sent = last_upstream_body(f);
	g_assert_cmpstr(confab_test_json_string(sent, "tools.0.function.name"), ==, "get_weather");
	g_assert_cmpstr(confab_test_json_string(sent, "tools.1.function.name"), ==, "multi__wait");
	g_assert_cmpstr(confab_test_json_string(sent, "tools.1.function.description"), ==, "Wait");
	g_assert_cmpstr(confab_test_json_string(sent, "messages.1.tool_calls.0.function.name"),
			==,
			"multi__wait");
	g_assert_cmpstr(confab_test_json_string(sent, "messages.2.role"), ==, "tool");
}

/* A hosted tool is refused, named as hosted. */
static void
test_hosted(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":\"Hi\",\"tools\":[{\"type\":\"web_search\","
	    "\"external_web_access\":false}]}",
	    f->echo_agent);
	g_autoptr(ConfabTestResponse) r = post(f, body);

	confab_test_assert_error(r, 400, "invalid_value");
	g_assert_cmpstr(confab_test_json_string(r->json, "error.param"), ==, "tools[0].type");
	g_assert_nonnull(strstr(confab_test_json_string(r->json, "error.message"), "hosted"));
	g_assert_nonnull(strstr(confab_test_json_string(r->json, "error.message"), "web_search"));
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, TRUE);

	g_test_add("/confab/responses-object/schema",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_schema,
		   fixture_teardown);
	g_test_add("/confab/responses-object/schema-failed",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_schema_failed,
		   fixture_teardown);
	g_test_add("/confab/responses-object/kept-here",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_kept_here,
		   fixture_teardown);
	g_test_add("/confab/responses-object/namespace",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_namespace,
		   fixture_teardown);
	g_test_add("/confab/responses-object/hosted",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_hosted,
		   fixture_teardown);
	return g_test_run();
}
