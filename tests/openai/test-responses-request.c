/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "openai/confab-responses-request.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/* POST /api/v1/responses bodies: translated to the Chat Completions
 * request the turn runs, or refused with the field named in "param". */

static const ConfabChatLimits default_limits = CONFAB_CHAT_LIMITS_DEFAULT;

static ConfabResponsesRequest *
parse_ok(const gchar *body)
{
	g_autoptr(GError) error = NULL;
	ConfabResponsesRequest *request =
	    confab_responses_request_parse(body, strlen(body), &default_limits, &error);
	if (request == NULL)
		g_error("refused: %s (param %s)\nbody: %s",
			error->message,
			confab_error_get_param(error),
			body);
	return request;
}

static void
assert_refused(const gchar *body, gint code, const gchar *param)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabResponsesRequest) request =
	    confab_responses_request_parse(body, strlen(body), &default_limits, &error);
	if (request != NULL)
		g_error("accepted: %s", body);
	g_assert_error(error, CONFAB_ERROR, code);
	g_assert_cmpstr(confab_error_get_param(error), ==, param);
}

static const gchar *
message_content(ConfabResponsesRequest *request, guint i)
{
	g_assert_cmpuint(i, <, request->chat->messages->len);
	return confab_message_get_content(g_ptr_array_index(request->chat->messages, i));
}

static const gchar *
message_role(ConfabResponsesRequest *request, guint i)
{
	g_assert_cmpuint(i, <, request->chat->messages->len);
	return confab_message_get_role(g_ptr_array_index(request->chat->messages, i));
}

static void
test_string_input(void)
{
	g_autoptr(ConfabResponsesRequest) r =
	    parse_ok("{\"model\":\"agt_x\",\"input\":\"héllo\",\"instructions\":\"Be kind.\"}");

	g_assert_cmpstr(r->chat->model, ==, "agt_x");
	g_assert_cmpuint(r->chat->messages->len, ==, 1);
	g_assert_cmpstr(message_role(r, 0), ==, "user");
	g_assert_cmpstr(message_content(r, 0), ==, "[{\"type\":\"text\",\"text\":\"héllo\"}]");
	g_assert_cmpstr(r->instructions, ==, "Be kind.");
	g_assert_true(r->store);
	g_assert_false(r->chat->stream);
	g_assert_null(r->chat->session_id);
	g_assert_null(r->previous_response_id);
}

static void
test_items(void)
{
	g_autoptr(ConfabResponsesRequest) r = parse_ok(
	    "{\"model\":\"agt_x\",\"stream\":true,\"store\":false,\"input\":["
	    "{\"role\":\"developer\",\"content\":\"d\"},"
	    "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
	    "\"text\":\"a\"},{\"type\":\"input_image\",\"image_url\":\"https://e.org/i.png\","
	    "\"detail\":\"low\"},{\"type\":\"input_file\",\"filename\":\"f.txt\","
	    "\"file_data\":\"aGk=\"}]},"
	    "{\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"b\"}]},"
	    "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{}\"},"
	    "{\"type\":\"reasoning\",\"summary\":[]},"
	    "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"r\"}]}");

	g_assert_true(r->chat->stream);
	g_assert_false(r->store);
	g_assert_cmpuint(r->chat->messages->len, ==, 4);
	g_assert_cmpstr(message_role(r, 0), ==, "developer");
	g_assert_cmpstr(message_role(r, 1), ==, "user");
	g_assert_nonnull(strstr(message_content(r, 1), "\"type\":\"image_url\""));
	g_assert_nonnull(strstr(message_content(r, 1), "\"type\":\"file\""));
	/* the call joins the assistant's text */
	g_assert_cmpstr(message_role(r, 2), ==, "assistant");
	g_assert_nonnull(
	    strstr(confab_message_get_content_blocks(g_ptr_array_index(r->chat->messages, 2)),
		   "\"type\":\"tool_call\",\"id\":\"c1\""));
	g_assert_cmpstr(message_role(r, 3), ==, "tool");
	g_assert_cmpuint(r->call_ids->len, ==, 1);
	g_assert_cmpstr(g_ptr_array_index(r->call_ids, 0), ==, "c1");
	g_assert_cmpstr(g_ptr_array_index(r->input_calls, 0), ==, "c1");
}

static const gchar *
fn_name(JsonArray *tools, guint i)
{
	return confab_json_get_string(
	    confab_json_get_object(json_array_get_object_element(tools, i), "function"),
	    "name");
}

/* the name of the first tool call of message @i sent upstream */
static gchar *
call_name(ConfabResponsesRequest *r, guint i)
{
	g_autoptr(JsonNode) node = NULL;
	JsonArray *blocks;

	g_assert_cmpuint(i, <, r->chat->messages->len);
	node = json_from_string(
	    confab_message_get_content_blocks(g_ptr_array_index(r->chat->messages, i)),
	    NULL);
	g_assert_nonnull(node);
	blocks = json_node_get_array(node);
	for (guint b = 0; b < json_array_get_length(blocks); b++) {
		JsonObject *block = json_array_get_object_element(blocks, b);
		if (g_strcmp0(confab_json_get_string(block, "type"), "tool_call") == 0)
			return g_strdup(confab_json_get_string(block, "name"));
	}
	return NULL;
}

static void
test_params(void)
{
	g_autoptr(ConfabResponsesRequest) r = parse_ok(
	    "{\"model\":\"agt_x\",\"input\":\"x\",\"max_output_tokens\":7,\"temperature\":1,"
	    "\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":{}}],"
	    "\"tool_choice\":\"required\",\"parallel_tool_calls\":false,"
	    "\"text\":{\"format\":{\"type\":\"json_object\"}},\"reasoning\":{\"effort\":\"high\"},"
	    "\"include\":[],\"truncation\":\"auto\",\"service_tier\":\"auto\","
	    "\"metadata\":{\"k\":\"v\",\"session_id\":\"cts_01m8debrft0gjd0c4akcrp6ry0\"}}");
	JsonObject *p = r->chat->params;

	g_assert_nonnull(p);
	g_assert_cmpint(json_object_get_int_member(p, "max_tokens"), ==, 7);
	g_assert_cmpstr(
	    confab_json_get_string(
		confab_json_get_object(
		    json_array_get_object_element(json_object_get_array_member(p, "tools"), 0),
		    "function"),
		"name"),
	    ==,
	    "f");
	g_assert_cmpstr(confab_json_get_string(p, "tool_choice"), ==, "required");
	g_assert_cmpstr(
	    confab_json_get_string(confab_json_get_object(p, "response_format"), "type"),
	    ==,
	    "json_object");
	g_assert_cmpstr(confab_json_get_string(p, "reasoning_effort"), ==, "high");
	g_assert_cmpstr(confab_json_get_string(p, "service_tier"), ==, "auto");
	g_assert_false(json_object_has_member(p, "include"));
	g_assert_false(json_object_has_member(p, "truncation"));
	g_assert_false(json_object_has_member(p, "input"));
	g_assert_false(json_object_has_member(p, "max_output_tokens"));
	g_assert_cmpstr(r->chat->session_id, ==, "cts_01m8debrft0gjd0c4akcrp6ry0");
	g_assert_true(json_object_has_member(r->echo, "tools"));
	g_assert_true(json_object_has_member(r->echo, "metadata"));
}

/* Only what means something to Chat Completions goes upstream: a strict
 * upstream refuses the rest, and the client's ids (Codex's client_metadata)
 * stay here. */
static void
test_forwarded(void)
{
	g_autoptr(ConfabResponsesRequest) r = parse_ok(
	    "{\"model\":\"agt_x\",\"input\":\"x\",\"client_metadata\":{\"session_id\":\"s\"},"
	    "\"prompt_cache_key\":\"k\",\"seed\":3,\"presence_penalty\":0.5,\"unknown_member\":1,"
	    "\"include\":[\"reasoning.encrypted_content\"],\"top_logprobs\":2,\"max_tool_calls\":3,"
	    "\"stream_options\":{\"include_obfuscation\":false},\"user\":\"u\"}");
	JsonObject *p = r->chat->params;

	g_assert_false(json_object_has_member(p, "client_metadata"));
	g_assert_false(json_object_has_member(p, "unknown_member"));
	g_assert_false(json_object_has_member(p, "include"));
	g_assert_false(json_object_has_member(p, "top_logprobs"));
	g_assert_false(json_object_has_member(p, "max_tool_calls"));
	g_assert_false(json_object_has_member(p, "stream_options"));
	g_assert_cmpstr(confab_json_get_string(p, "prompt_cache_key"), ==, "k");
	g_assert_cmpstr(confab_json_get_string(p, "user"), ==, "u");
	g_assert_cmpint(json_object_get_int_member(p, "seed"), ==, 3);
	g_assert_cmpfloat(json_object_get_double_member(p, "presence_penalty"), ==, 0.5);
	/* the response object still repeats them */
	g_assert_cmpint(json_object_get_int_member(r->echo, "top_logprobs"), ==, 2);
	g_assert_cmpint(json_object_get_int_member(r->echo, "max_tool_calls"), ==, 3);
	g_assert_cmpstr(confab_json_get_string(r->echo, "prompt_cache_key"), ==, "k");
}

/* A namespace's function tools go upstream flattened, with unique names,
 * and the input's namespaced calls with the same names. */
static void
test_namespace(void)
{
	g_autoptr(ConfabResponsesRequest) r = parse_ok(
	    "{\"model\":\"agt_x\",\"input\":[{\"role\":\"user\",\"content\":\"go\"},"
	    "{\"type\":\"function_call\",\"call_id\":\"c1\",\"namespace\":\"multi\","
	    "\"name\":\"spawn\",\"arguments\":\"{}\"},"
	    "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"ok\"},"
	    "{\"type\":\"function_call\",\"call_id\":\"c2\",\"namespace\":\"other\","
	    "\"name\":\"x\",\"arguments\":\"{}\"},"
	    "{\"type\":\"function_call_output\",\"call_id\":\"c2\",\"output\":\"ok\"}],"
	    "\"tools\":[{\"type\":\"function\",\"name\":\"multi__spawn\",\"parameters\":{}},"
	    "{\"type\":\"namespace\",\"name\":\"multi\",\"description\":\"Agents\",\"tools\":["
	    "{\"type\":\"function\",\"name\":\"spawn\",\"description\":\"Spawn\","
	    "\"parameters\":{\"type\":\"object\"},\"strict\":true},"
	    "{\"type\":\"function\",\"name\":\"wait\"}]}]}");
	JsonArray *tools = json_object_get_array_member(r->chat->params, "tools");
	g_autofree gchar *first = NULL;
	g_autofree gchar *second = NULL;
	JsonObject *origin;
	JsonArray *echo;

	g_assert_cmpuint(json_array_get_length(tools), ==, 3);
	g_assert_cmpstr(fn_name(tools, 0), ==, "multi__spawn");
	/* the client's own multi__spawn keeps its name */
	g_assert_cmpstr(fn_name(tools, 1), ==, "multi__spawn_2");
	g_assert_cmpstr(fn_name(tools, 2), ==, "multi__wait");
	g_assert_true(json_object_get_boolean_member(
	    confab_json_get_object(json_array_get_object_element(tools, 1), "function"),
	    "strict"));
	origin = confab_json_get_object(r->namespaced, "multi__spawn_2");
	g_assert_cmpstr(confab_json_get_string(origin, "namespace"), ==, "multi");
	g_assert_cmpstr(confab_json_get_string(origin, "name"), ==, "spawn");
	g_assert_null(confab_json_get_object(r->namespaced, "multi__spawn"));
	/* the calls of the input, by the names the model knows */
	first = call_name(r, 1);
	second = call_name(r, 3);
	g_assert_cmpstr(first, ==, "multi__spawn_2");
	g_assert_cmpstr(second, ==, "other__x");
	/* the echo: as sent, with what the response object requires */
	echo = json_object_get_array_member(r->echo, "tools");
	g_assert_false(
	    json_object_get_boolean_member(json_array_get_object_element(echo, 0), "strict"));
	g_assert_true(json_object_get_null_member(
	    json_array_get_object_element(
		json_object_get_array_member(json_array_get_object_element(echo, 1), "tools"),
		1),
	    "parameters"));
}

static void
test_conversation(void)
{
	g_autoptr(ConfabResponsesRequest) a =
	    parse_ok("{\"model\":\"agt_x\",\"input\":\"x\",\"conversation\":\"cts_"
		     "01m8debrft0gjd0c4akcrp6ry0\"}");
	g_autoptr(ConfabResponsesRequest) b =
	    parse_ok("{\"model\":\"agt_x\",\"input\":\"x\",\"conversation\":{\"id\":"
		     "\"cts_01m8debrft0gjd0c4akcrp6ry0\"}}");
	g_autoptr(ConfabResponsesRequest) c =
	    parse_ok("{\"model\":\"agt_x\",\"input\":\"x\",\"previous_response_id\":"
		     "\"resp_01m8debrft0gjd0c4akcrp6rxz\"}");

	g_assert_cmpstr(a->chat->session_id, ==, "cts_01m8debrft0gjd0c4akcrp6ry0");
	g_assert_cmpstr(b->conversation, ==, "cts_01m8debrft0gjd0c4akcrp6ry0");
	g_assert_cmpstr(c->previous_response_id, ==, "resp_01m8debrft0gjd0c4akcrp6rxz");
	g_assert_null(c->chat->session_id);
}

static void
test_refused(void)
{
	static const struct {
		const gchar *body;
		gint code;
		const gchar *param;
	} cases[] = {
	    {"[]", CONFAB_ERROR_INVALID_JSON, NULL},
	    {"{\"input\":\"x\"}", CONFAB_ERROR_MISSING_MODEL, "model"},
	    {"{\"model\":\"a\"}", CONFAB_ERROR_INVALID_VALUE, "input"},
	    {"{\"model\":\"a\",\"input\":[]}", CONFAB_ERROR_INVALID_VALUE, "input"},
	    {"{\"model\":\"a\",\"input\":[1]}", CONFAB_ERROR_INVALID_VALUE, "input[0]"},
	    {"{\"model\":\"a\",\"input\":[{\"type\":\"web_search_call\",\"id\":\"x\"}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0].type"},
	    {"{\"model\":\"a\",\"input\":[{\"type\":\"item_reference\"}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0].id"},
	    {"{\"model\":\"a\",\"input\":[{\"role\":\"tool\",\"content\":\"x\"}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0].role"},
	    {"{\"model\":\"a\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_"
	     "image\","
	     "\"file_id\":\"file_1\"}]}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0].content[0].image_url"},
	    {"{\"model\":\"a\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\","
	     "\"file_url\":\"https://e.org/f\"}]}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0].content[0].file_url"},
	    {"{\"model\":\"a\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
	     "\"text\":\"a\\u0000b\"}]}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0].content[0].text"},
	    {"{\"model\":\"a\",\"input\":[{\"type\":\"function_call\",\"name\":\"f\"}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0]"},
	    {"{\"model\":\"a\",\"input\":[{\"type\":\"function_call_output\",\"output\":\"x\"}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0].call_id"},
	    {"{\"model\":\"a\",\"input\":[{\"type\":\"mcp_approval_response\"}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0].approval_request_id"},
	    {"{\"model\":\"a\",\"input\":[{\"type\":\"mcp_approval_response\","
	     "\"approval_request_id\":\"mcpr_1\",\"approve\":1}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0].approve"},
	    {"{\"model\":\"a\",\"input\":[{\"type\":\"mcp_approval_response\","
	     "\"approval_request_id\":\"mcpr_1\",\"approve\":true,\"reason\":[]}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0].reason"},
	    {"{\"model\":\"a\",\"input\":[{\"type\":\"mcp_approval_response\","
	     "\"approval_request_id\":\"mcpr_1\",\"approve\":true},{\"type\":"
	     "\"mcp_approval_response\",\"approval_request_id\":\"mcpr_1\",\"approve\":false}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[1].approval_request_id"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"tools\":[{\"type\":\"file_search\"}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "tools[0].type"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"tools\":[{\"type\":\"function\"}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "tools[0].name"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"tools\":[{\"type\":\"namespace\",\"tools\":[]}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "tools[0].name"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"tools\":[{\"type\":\"namespace\",\"name\":\"n\"}]"
	     "}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "tools[0].tools"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"tools\":[{\"type\":\"namespace\",\"name\":\"n\","
	     "\"tools\":[{\"type\":\"web_search\"}]}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "tools[0].tools[0]"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"tools\":[{\"type\":\"namespace\",\"name\":\"n\","
	     "\"tools\":[{\"type\":\"function\"}]}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "tools[0].tools[0].name"},
	    {"{\"model\":\"a\",\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\","
	     "\"name\":\"f\",\"arguments\":\"{}\",\"namespace\":1}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "input[0].namespace"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"tool_choice\":{\"type\":\"web_search\"}}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "tool_choice"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"text\":{\"format\":{\"type\":\"xml\"}}}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "text.format.type"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"background\":true,\"store\":false}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "background"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"background\":1}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "background"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"prompt\":{\"id\":\"p\"}}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "prompt"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"store\":1}", CONFAB_ERROR_INVALID_VALUE, "store"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"instructions\":3}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "instructions"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"previous_response_id\":\"msg_1\"}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "previous_response_id"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"previous_response_id\":\"resp_1\","
	     "\"conversation\":\"cts_1\"}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "conversation"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"conversation\":\"cts_1\","
	     "\"metadata\":{\"session_id\":\"cts_2\"}}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "conversation"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"conversation\":7}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "conversation"},
	    {"{\"model\":\"a\",\"input\":\"x\",\"top_p\":3}", CONFAB_ERROR_INVALID_VALUE, "top_p"},
	    {"{\"model\":\"a\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_"
	     "image\","
	     "\"image_url\":\"ftp://x\"}]}]}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "input[0].content[0].image_url.url"},
	    /* params name the input item, not the message it became */
	    {"{\"model\":\"a\",\"input\":[{\"type\":\"reasoning\"},{\"role\":\"user\",\"content\":"
	     "[{\"type\":\"input_image\",\"image_url\":\"ftp://x\"}]}]}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "input[1].content[0].image_url.url"},
	    {"{\"model\":\"a\",\"input\":\"a\\u0000b\"}", CONFAB_ERROR_INVALID_VALUE, "input"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_test_message("case %u: %s", i, cases[i].body);
		assert_refused(cases[i].body, cases[i].code, cases[i].param);
	}
}

/* Answers to approval requests are a whole input; the door checks them
 * against the response continued. */
static void
test_approval_responses(void)
{
	static const gchar body[] =
	    "{\"model\":\"a\",\"previous_response_id\":\"resp_1\",\"input\":["
	    "{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"mcpr_1\","
	    "\"approve\":true},{\"type\":\"mcp_approval_response\",\"approval_request_id\":"
	    "\"mcpr_2\",\"approve\":false,\"reason\":\"no\"}]}";
	ConfabChatLimits limits = CONFAB_CHAT_LIMITS_DEFAULT;
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabResponsesRequest) request =
	    confab_responses_request_parse(body, strlen(body), &limits, &error);
	ConfabApprovalResponse *a, *b;

	g_assert_no_error(error);
	g_assert_nonnull(request->chat);
	g_assert_cmpuint(request->chat->messages->len, ==, 0);
	g_assert_cmpuint(request->approval_responses->len, ==, 2);
	a = g_ptr_array_index(request->approval_responses, 0);
	b = g_ptr_array_index(request->approval_responses, 1);
	g_assert_cmpstr(a->approval_request_id, ==, "mcpr_1");
	g_assert_true(a->approve);
	g_assert_null(a->reason);
	g_assert_cmpstr(b->approval_request_id, ==, "mcpr_2");
	g_assert_false(b->approve);
	g_assert_cmpstr(b->reason, ==, "no");
}

static void
test_depth(void)
{
	g_autoptr(GString) body =
	    g_string_new("{\"model\":\"a\",\"input\":\"x\",\"metadata\":{\"k\":");
	for (guint i = 0; i < 100; i++)
		g_string_append_c(body, '[');
	for (guint i = 0; i < 100; i++)
		g_string_append_c(body, ']');
	g_string_append(body, "}}");
	assert_refused(body->str, CONFAB_ERROR_INVALID_JSON, NULL);
}

/* item_reference: the door finds the items, then the input is translated */
static void
test_references(void)
{
	const gchar *body =
	    "{\"model\":\"agt_x\",\"input\":[{\"role\":\"user\",\"content\":\"/tool f {}\"},"
	    "{\"type\":\"item_reference\",\"id\":\"fc_1\"},"
	    "{\"type\":\"item_reference\",\"id\":\"fc_1\"},"
	    "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"ok\"}]}";
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabResponsesRequest) r = parse_ok(body);
	g_autoptr(ConfabResponsesRequest) r2 = parse_ok(body);
	g_autoptr(GHashTable) items =
	    g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)json_object_unref);
	g_autoptr(GHashTable) none = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(JsonNode) call = json_from_string("{\"type\":\"function_call\",\"id\":\"fc_1\","
						    "\"call_id\":\"call_1\",\"name\":\"f\","
						    "\"arguments\":\"{}\"}",
						    NULL);

	g_assert_null(r->chat);
	g_assert_cmpuint(r->references->len, ==, 1);
	g_assert_cmpstr(g_ptr_array_index(r->references, 0), ==, "fc_1");
	g_hash_table_insert(items, (gpointer) "fc_1", json_object_ref(json_node_get_object(call)));
	g_assert_true(confab_responses_request_resolve(r, items, &error));
	g_assert_no_error(error);
	g_assert_nonnull(r->chat);
	g_assert_cmpuint(r->chat->messages->len, ==, 3);
	g_assert_cmpstr(message_role(r, 1), ==, "assistant");
	g_assert_cmpstr(message_role(r, 2), ==, "tool");
	g_assert_cmpstr(g_ptr_array_index(r->input_calls, 0), ==, "call_1");

	g_assert_false(confab_responses_request_resolve(r2, none, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	g_assert_cmpstr(confab_error_get_param(error), ==, "input[1].id");
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/confab/responses-request/string-input", test_string_input);
	g_test_add_func("/confab/responses-request/items", test_items);
	g_test_add_func("/confab/responses-request/params", test_params);
	g_test_add_func("/confab/responses-request/forwarded", test_forwarded);
	g_test_add_func("/confab/responses-request/namespace", test_namespace);
	g_test_add_func("/confab/responses-request/conversation", test_conversation);
	g_test_add_func("/confab/responses-request/refused", test_refused);
	g_test_add_func("/confab/responses-request/approval-responses", test_approval_responses);
	g_test_add_func("/confab/responses-request/depth", test_depth);
	g_test_add_func("/confab/responses-request/references", test_references);
	return g_test_run();
}
