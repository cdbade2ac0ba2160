/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/* The Responses API (POST /api/v1/responses and its stored responses) end
 * to end, against a real confabd, an echo agent, an agent with the fake MCP
 * server and an agent on the fake upstream. */

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent;
	gchar *token;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->daemon = confab_test_daemon_start(NULL, NULL);
	f->agent = confab_test_create_agent(f->daemon, "echo", "echo");
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	g_free(f->agent);
	g_free(f->token);
}

/* ---------- helpers ---------- */

static ConfabTestResponse *
post(Fixture *f, const gchar *token, const gchar *body)
{
	return confab_test_http(f->daemon, "POST", "/api/v1/responses", token, body);
}

static gchar *
quote(const gchar *text)
{
	g_autoptr(JsonNode) node = json_node_new(JSON_NODE_VALUE);
	json_node_set_string(node, text);
	return json_to_string(node, FALSE);
}

/* {"model":AGENT,"input":TEXT EXTRA} */
static gchar *
text_body(const gchar *agent, const gchar *text, const gchar *extra)
{
	g_autofree gchar *quoted = quote(text);
	return g_strdup_printf("{\"model\":\"%s\",\"input\":%s%s}",
			       agent,
			       quoted,
			       extra != NULL ? extra : "");
}

typedef struct {
	gchar *name;
	JsonNode *data;
} Event;

static void
event_free(Event *event)
{
	g_free(event->name);
	json_node_unref(event->data);
	g_free(event);
}

/* The named events of a stream, each checked: `event:` is the data's
 * `type`, sequence numbers run from 0 without gaps, one terminal event
 * closes it, and no [DONE]. */
static GPtrArray *
stream_events(ConfabTestResponse *r)
{
	GPtrArray *events = g_ptr_array_new_with_free_func((GDestroyNotify)event_free);
	gsize len = 0;
	const gchar *data = g_bytes_get_data(r->body, &len);
	g_autofree gchar *text = g_strndup(data, len);
	g_auto(GStrv) blocks = g_strsplit(text, "\n\n", -1);
	guint terminal = 0;

	g_assert_cmpstr(soup_message_headers_get_content_type(r->headers, NULL),
			==,
			"text/event-stream");
	for (guint i = 0; blocks[i] != NULL; i++) {
		Event *event;
		gchar *nl;
		if (blocks[i][0] == '\0')
			continue;
		g_assert_true(g_str_has_prefix(blocks[i], "event: "));
		nl = strchr(blocks[i], '\n');
		g_assert_nonnull(nl);
		g_assert_true(g_str_has_prefix(nl + 1, "data: "));
		event = g_new0(Event, 1);
		event->name = g_strndup(blocks[i] + 7, nl - blocks[i] - 7);
		event->data = json_from_string(nl + 1 + 6, NULL);
		g_assert_nonnull(event->data);
		g_assert_cmpstr(confab_test_json_string(event->data, "type"), ==, event->name);
		g_assert_cmpint(confab_test_json_int(event->data, "sequence_number"),
				==,
				events->len);
		if (g_str_equal(event->name, "response.completed") ||
		    g_str_equal(event->name, "response.incomplete") ||
		    g_str_equal(event->name, "response.failed"))
			terminal++;
		g_ptr_array_add(events, event);
	}
	g_assert_cmpuint(events->len, >=, 3);
	g_assert_cmpuint(terminal, ==, 1);
	g_assert_cmpstr(((Event *)g_ptr_array_index(events, 0))->name, ==, "response.created");
	g_assert_cmpstr(((Event *)g_ptr_array_index(events, 1))->name, ==, "response.in_progress");
	g_assert_null(strstr(text, "[DONE]"));
	return events;
}

static Event *
last_event(GPtrArray *events)
{
	return g_ptr_array_index(events, events->len - 1);
}

static guint
count_events(GPtrArray *events, const gchar *name)
{
	guint n = 0;
	for (guint i = 0; i < events->len; i++)
		n += g_str_equal(((Event *)g_ptr_array_index(events, i))->name, name);
	return n;
}

/* the output item of @type, the @nth of that type */
static JsonObject *
output_item(JsonNode *response, const gchar *type, guint nth)
{
	JsonNode *output = confab_test_json_get(response, "output");
	JsonArray *items;

	g_assert_nonnull(output);
	items = json_node_get_array(output);
	for (guint i = 0; i < json_array_get_length(items); i++) {
		JsonObject *item = json_array_get_object_element(items, i);
		if (g_strcmp0(json_object_get_string_member(item, "type"), type) == 0 && nth-- == 0)
			return item;
	}
	return NULL;
}

static const gchar *
output_text(JsonNode *response)
{
	JsonObject *message = output_item(response, "message", 0);
	JsonArray *content;

	if (message == NULL)
		return NULL;
	content = json_object_get_array_member(message, "content");
	return json_object_get_string_member(json_array_get_object_element(content, 0), "text");
}

static void
assert_response_id(const gchar *id)
{
	g_assert_nonnull(id);
	g_assert_true(g_str_has_prefix(id, "resp_"));
	g_assert_cmpuint(strlen(id), ==, strlen("resp_") + 26);
}

/* ---------- POST, JSON and stream ---------- */

static void
test_json(Fixture *f, gconstpointer data)
{
	const gchar *text = "  Hello,\tworld!  héllo 🌍 \n";
	g_autofree gchar *body = text_body(f->agent,
					   text,
					   ",\"instructions\":\"Answer kindly.\","
					   "\"metadata\":{\"tag\":\"t1\"},\"temperature\":0.5");
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	const gchar *session_id;

	g_assert_cmpuint(r->status, ==, 200);
	assert_response_id(confab_test_json_string(r->json, "id"));
	g_assert_cmpstr(confab_test_json_string(r->json, "object"), ==, "response");
	g_assert_cmpstr(confab_test_json_string(r->json, "status"), ==, "completed");
	g_assert_cmpstr(confab_test_json_string(r->json, "model"), ==, f->agent);
	g_assert_cmpstr(confab_test_json_string(r->json, "instructions"), ==, "Answer kindly.");
	g_assert_cmpint(confab_test_json_int(r->json, "created_at"), >, 1700000000);
	g_assert_cmpstr(output_text(r->json), ==, text);
	g_assert_cmpstr(confab_test_json_string(r->json, "output.0.role"), ==, "assistant");
	g_assert_cmpstr(confab_test_json_string(r->json, "output.0.status"), ==, "completed");
	g_assert_cmpstr(confab_test_json_string(r->json, "output.0.content.0.type"),
			==,
			"output_text");
	g_assert_true(g_str_has_prefix(confab_test_json_string(r->json, "output.0.id"), "msg_"));
	session_id = confab_test_json_string(r->json, "metadata.session_id");
	g_assert_true(g_str_has_prefix(session_id, "cts_"));
	g_assert_cmpstr(confab_test_json_string(r->json, "metadata.tag"), ==, "t1");
	g_assert_cmpstr(confab_test_json_string(r->json, "conversation.id"), ==, session_id);
	g_assert_cmpstr(soup_message_headers_get_one(r->headers, "x-session-id"), ==, session_id);
	/* usage in the Responses shape */
	g_assert_cmpint(confab_test_json_int(r->json, "usage.output_tokens"), ==, 4);
	g_assert_cmpint(confab_test_json_int(r->json, "usage.total_tokens"),
			==,
			confab_test_json_int(r->json, "usage.input_tokens") + 4);
	g_assert_nonnull(confab_test_json_get(r->json, "usage.input_tokens_details.cached_tokens"));
	g_assert_nonnull(
	    confab_test_json_get(r->json, "usage.output_tokens_details.reasoning_tokens"));
	g_assert_true(JSON_NODE_HOLDS_NULL(confab_test_json_get(r->json, "previous_response_id")));
	g_assert_true(confab_test_json_get(r->json, "store") != NULL);
}

static void
test_stream(Fixture *f, gconstpointer data)
{
	const gchar *text = "one two  three";
	g_autofree gchar *body = text_body(f->agent, text, ",\"stream\":true");
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	g_autoptr(GPtrArray) events = NULL;
	g_autoptr(GString) joined = g_string_new(NULL);
	JsonNode *response;
	const gchar *item_id = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(soup_message_headers_get_one(r->headers, "x-accel-buffering"), ==, "no");
	events = stream_events(r);
	for (guint i = 0; i < events->len; i++) {
		Event *event = g_ptr_array_index(events, i);
		if (g_str_equal(event->name, "response.output_item.added")) {
			item_id = confab_test_json_string(event->data, "item.id");
			g_assert_cmpstr(confab_test_json_string(event->data, "item.type"),
					==,
					"message");
		}
		if (g_str_equal(event->name, "response.output_text.delta")) {
			g_assert_cmpstr(confab_test_json_string(event->data, "item_id"),
					==,
					item_id);
			g_assert_cmpint(confab_test_json_int(event->data, "output_index"), ==, 0);
			g_string_append(joined, confab_test_json_string(event->data, "delta"));
		}
	}
	g_assert_cmpstr(joined->str, ==, text);
	/* OpenAI's order around the text */
	g_assert_cmpstr(((Event *)g_ptr_array_index(events, 2))->name,
			==,
			"response.output_item.added");
	g_assert_cmpstr(((Event *)g_ptr_array_index(events, 3))->name,
			==,
			"response.content_part.added");
	g_assert_cmpstr(((Event *)g_ptr_array_index(events, events->len - 4))->name,
			==,
			"response.output_text.done");
	g_assert_cmpstr(((Event *)g_ptr_array_index(events, events->len - 3))->name,
			==,
			"response.content_part.done");
	g_assert_cmpstr(((Event *)g_ptr_array_index(events, events->len - 2))->name,
			==,
			"response.output_item.done");
	g_assert_cmpstr(last_event(events)->name, ==, "response.completed");
	response = confab_test_json_get(last_event(events)->data, "response");
	assert_response_id(confab_test_json_string(response, "id"));
	g_assert_cmpstr(confab_test_json_string(response, "status"), ==, "completed");
	g_assert_cmpstr(output_text(response), ==, text);
	g_assert_cmpint(confab_test_json_int(response, "usage.output_tokens"), ==, 3);
	g_assert_cmpstr(confab_test_json_string(response, "metadata.session_id"),
			==,
			soup_message_headers_get_one(r->headers, "x-session-id"));
	/* the same response from the first event to the last */
	g_assert_cmpstr(
	    confab_test_json_string(((Event *)g_ptr_array_index(events, 0))->data, "response.id"),
	    ==,
	    confab_test_json_string(response, "id"));
}

/* message items with parts, a system message, and a conversation that chat
 * completions continues */
static void
test_items(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":["
	    "{\"type\":\"message\",\"role\":\"developer\",\"content\":\"Be brief.\"},"
	    "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"look at\"},"
	    "{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64,iVBORw0KGgo=\","
	    "\"detail\":\"low\"},"
	    "{\"type\":\"input_file\",\"filename\":\"a.txt\",\"file_data\":"
	    "\"data:text/plain;base64,aGVsbG8=\"},"
	    "{\"type\":\"input_text\",\"text\":\"this\"}]}]}",
	    f->agent);
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	g_autofree gchar *path = NULL;
	g_autoptr(ConfabTestResponse) list = NULL;
	g_autoptr(ConfabTestResponse) chat = NULL;
	g_autoptr(ConfabTestResponse) list2 = NULL;
	const gchar *session_id;

	g_assert_cmpuint(r->status, ==, 200);
	/* echo answers with the last user message's text */
	g_assert_cmpstr(output_text(r->json), ==, "look at\nthis");
	session_id = confab_test_json_string(r->json, "conversation.id");
	path = g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session_id);
	list = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(list->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(list->json, "data.0.role"), ==, "developer");
	g_assert_cmpstr(confab_test_json_string(list->json, "data.1.role"), ==, "user");
	g_assert_cmpstr(confab_test_json_string(list->json, "data.1.content.1.type"),
			==,
			"image_url");
	g_assert_cmpstr(confab_test_json_string(list->json, "data.1.content.2.type"), ==, "file");
	g_assert_cmpstr(confab_test_json_string(list->json, "data.2.role"), ==, "assistant");

	/* chat completions continues the conversation a response started */
	chat = confab_test_chat(f->daemon, f->token, f->agent, session_id, "and then", FALSE);
	g_assert_cmpuint(chat->status, ==, 200);
	list2 = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpstr(confab_test_json_string(list2->json, "data.4.role"), ==, "assistant");
	g_assert_cmpstr(confab_test_json_string(list2->json, "data.4.content.0.text"),
			==,
			"and then");
}

/* the client's function tools: a function_call item, continued with a
 * function_call_output */
static void
test_function_call(Fixture *f, gconstpointer data)
{
	const gchar *tools = ",\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\","
			     "\"description\":\"The weather\",\"parameters\":{\"type\":\"object\","
			     "\"properties\":{\"city\":{\"type\":\"string\"}}}}]";
	g_autofree gchar *body =
	    text_body(f->agent, "/tool get_weather {\"city\":\"Paris\"}", tools);
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	g_autoptr(ConfabTestResponse) s = NULL;
	g_autoptr(ConfabTestResponse) r2 = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autofree gchar *stream_body = NULL;
	g_autofree gchar *body2 = NULL;
	JsonObject *call;
	const gchar *call_id;

	g_assert_cmpuint(r->status, ==, 200);
	call = output_item(r->json, "function_call", 0);
	g_assert_nonnull(call);
	g_assert_cmpstr(json_object_get_string_member(call, "name"), ==, "get_weather");
	g_assert_cmpstr(json_object_get_string_member(call, "arguments"),
			==,
			"{\"city\":\"Paris\"}");
	g_assert_cmpstr(json_object_get_string_member(call, "status"), ==, "completed");
	g_assert_true(g_str_has_prefix(json_object_get_string_member(call, "id"), "fc_"));
	call_id = json_object_get_string_member(call, "call_id");
	g_assert_nonnull(call_id);
	g_assert_cmpstr(confab_test_json_string(r->json, "tools.0.name"), ==, "get_weather");

	/* the answer to the call, in the same conversation */
	body2 = g_strdup_printf("{\"model\":\"%s\",\"conversation\":{\"id\":\"%s\"},\"input\":["
				"{\"type\":\"function_call_output\",\"call_id\":\"%s\","
				"\"output\":\"sunny\"}]%s}",
				f->agent,
				confab_test_json_string(r->json, "conversation.id"),
				call_id,
				tools);
	r2 = post(f, f->token, body2);
	g_assert_cmpuint(r2->status, ==, 200);
	g_assert_cmpstr(output_text(r2->json), ==, "sunny");

	/* streamed: the call told as its events */
	stream_body = text_body(f->agent,
				"/tool get_weather {\"city\":\"Oslo\"}",
				",\"stream\":true,\"tools\":[{\"type\":\"function\",\"name\":"
				"\"get_weather\",\"parameters\":{}}]");
	s = post(f, f->token, stream_body);
	g_assert_cmpuint(s->status, ==, 200);
	events = stream_events(s);
	g_assert_cmpuint(count_events(events, "response.function_call_arguments.delta"), ==, 1);
	g_assert_cmpuint(count_events(events, "response.function_call_arguments.done"), ==, 1);
	g_assert_cmpstr(last_event(events)->name, ==, "response.completed");
	call = output_item(confab_test_json_get(last_event(events)->data, "response"),
			   "function_call",
			   0);
	g_assert_nonnull(call);
	g_assert_cmpstr(json_object_get_string_member(call, "arguments"),
			==,
			"{\"city\":\"Oslo\"}");
}

/* ---------- bad input ---------- */

static void
test_errors(Fixture *f, gconstpointer data)
{
	struct {
		const gchar *extra;
		const gchar *input;
		guint status;
		const gchar *code;
		const gchar *param;
	} cases[] = {
	    {",\"tools\":[{\"type\":\"web_search\"}]",
	     "\"hi\"",
	     400,
	     "invalid_value",
	     "tools[0].type"},
	    {",\"background\":true,\"store\":false", "\"hi\"", 400, "invalid_value", "background"},
	    {"", "[{\"type\":\"computer_call\"}]", 400, "invalid_value", "input[0].type"},
	    {"",
	     "[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\"}]}]",
	     400,
	     "invalid_value",
	     "input[0].content[0].type"},
	    {",\"previous_response_id\":\"resp_01m8debrft0gjd0c4akcrp6rxz\","
	     "\"conversation\":\"cts_01m8debrft0gjd0c4akcrp6ry0\"",
	     "\"hi\"",
	     400,
	     "invalid_value",
	     "conversation"},
	    {"",
	     "[{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"mcpr_x\","
	     "\"approve\":true}]",
	     400,
	     "invalid_value",
	     "input"},
	    {"", "42", 400, "invalid_value", "input"},
	    {"", "[]", 400, "invalid_value", "input"},
	    {",\"stream\":\"yes\"", "\"hi\"", 400, "invalid_value", "stream"},
	    {",\"temperature\":9", "\"hi\"", 400, "invalid_value", "temperature"},
	    {"",
	     "[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\","
	     "\"image_url\":\"data:image/png;base64,!!!\"}]}]",
	     400,
	     "invalid_file",
	     "input[0].content[0].image_url.url"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *body = g_strdup_printf("{\"model\":\"%s\",\"input\":%s%s}",
							 f->agent,
							 cases[i].input,
							 cases[i].extra);
		g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
		g_test_message("case %u: %s", i, body);
		confab_test_assert_error(r, cases[i].status, cases[i].code);
		g_assert_cmpstr(confab_test_json_string(r->json, "error.param"),
				==,
				cases[i].param);
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    post(f, f->token, "{\"model\":\"agt_nope\",\"input\":\"hi\"}");
		confab_test_assert_error(r, 404, "agent_not_found");
	}
	{
		g_autoptr(ConfabTestResponse) r = post(f, f->token, "{\"input\":\"hi\"}");
		confab_test_assert_error(r, 400, "missing_model");
	}
	{
		g_autoptr(ConfabTestResponse) r = post(f, f->token, "{\"model\":");
		confab_test_assert_error(r, 400, "invalid_json");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    post(f, NULL, "{\"model\":\"x\",\"input\":\"hi\"}");
		confab_test_assert_error(r, 401, "missing_api_key");
	}
	{
		/* a token bound to another agent */
		g_autofree gchar *other = confab_test_create_agent(f->daemon, "other", "echo");
		g_autofree gchar *bound =
		    confab_test_create_token(f->daemon, "alice", "chat.completions", other, NULL);
		g_autofree gchar *body = text_body(f->agent, "hi", NULL);
		g_autoptr(ConfabTestResponse) r = post(f, bound, body);
		confab_test_assert_error(r, 403, "permission_denied");
	}
	{
		g_autofree gchar *metrics_token =
		    confab_test_create_token(f->daemon, "alice", "metrics.read", NULL, NULL);
		g_autofree gchar *body = text_body(f->agent, "hi", NULL);
		g_autoptr(ConfabTestResponse) r = post(f, metrics_token, body);
		confab_test_assert_error(r, 403, "insufficient_scope");
	}
}

static void
test_quota(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = text_body(f->agent, "hi", NULL);
	g_autofree gchar *bad = text_body(f->agent, "hi", ",\"background\":true,\"store\":false");

	confab_test_set_quota(f->daemon, "alice", 2);
	{
		/* refused input does not count */
		g_autoptr(ConfabTestResponse) r = post(f, f->token, bad);
		confab_test_assert_error(r, 400, "invalid_value");
	}
	for (guint i = 0; i < 2; i++) {
		g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(
		    soup_message_headers_get_one(r->headers, "x-ratelimit-limit-requests"),
		    ==,
		    "2");
	}
	{
		g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
		confab_test_assert_error(r, 429, "insufficient_quota");
	}
}

/* ---------- conversations: previous_response_id, conversation, store ---------- */

static gchar *
create_response(Fixture *f, const gchar *text, const gchar *extra, gchar **conversation)
{
	g_autofree gchar *body = text_body(f->agent, text, extra);
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);

	g_assert_cmpuint(r->status, ==, 200);
	if (conversation != NULL)
		*conversation = g_strdup(confab_test_json_string(r->json, "conversation.id"));
	return g_strdup(confab_test_json_string(r->json, "id"));
}

static ConfabTestResponse *
get_messages(Fixture *f, const gchar *conversation)
{
	g_autofree gchar *path =
	    g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", conversation);
	return confab_test_http(f->daemon, "GET", path, f->token, NULL);
}

static void
test_previous(Fixture *f, gconstpointer data)
{
	g_autofree gchar *c1 = NULL;
	g_autofree gchar *c2 = NULL;
	g_autofree gchar *c3 = NULL;
	g_autofree gchar *r1 = create_response(f, "first", NULL, &c1);
	g_autofree gchar *extra2 = g_strdup_printf(",\"previous_response_id\":\"%s\"", r1);
	g_autofree gchar *r2 = create_response(f, "second", extra2, &c2);
	/* continuing r1 again: r1 is no longer the latest, a fork */
	g_autofree gchar *r3 = create_response(f, "fork", extra2, &c3);
	g_autoptr(ConfabTestResponse) m1 = NULL;
	g_autoptr(ConfabTestResponse) m3 = NULL;
	g_autoptr(ConfabTestResponse) bad = NULL;
	g_autofree gchar *bad_body = NULL;

	assert_response_id(r2);
	g_assert_cmpstr(c1, ==, c2);
	g_assert_cmpstr(c3, !=, c1);
	m1 = get_messages(f, c1);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(m1->json, "data"))),
	    ==,
	    4);
	g_assert_cmpstr(confab_test_json_string(m1->json, "data.0.response_id"), ==, r1);
	g_assert_cmpstr(confab_test_json_string(m1->json, "data.1.response_id"), ==, r1);
	g_assert_cmpstr(confab_test_json_string(m1->json, "data.2.response_id"), ==, r2);
	g_assert_cmpstr(confab_test_json_string(m1->json, "data.3.content.0.text"), ==, "second");
	/* the fork holds the history up to r1, then its own turn */
	m3 = get_messages(f, c3);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(m3->json, "data"))),
	    ==,
	    4);
	g_assert_cmpstr(confab_test_json_string(m3->json, "data.0.content.0.text"), ==, "first");
	g_assert_cmpstr(confab_test_json_string(m3->json, "data.1.role"), ==, "assistant");
	g_assert_cmpstr(confab_test_json_string(m3->json, "data.2.content.0.text"), ==, "fork");
	g_assert_cmpstr(confab_test_json_string(m3->json, "data.3.response_id"), ==, r3);

	/* unknown, malformed */
	bad_body = text_body(f->agent,
			     "x",
			     ",\"previous_response_id\":\"resp_01m8df43pa6bfhmrzdfp9dkfzd\"");
	bad = post(f, f->token, bad_body);
	confab_test_assert_error(bad, 404, "response_not_found");
	{
		g_autofree gchar *b =
		    text_body(f->agent, "x", ",\"previous_response_id\":\"resp_nope\"");
		g_autoptr(ConfabTestResponse) r = post(f, f->token, b);
		confab_test_assert_error(r, 404, "response_not_found");
	}
	{
		/* another owner's response does not exist */
		g_autofree gchar *bob =
		    confab_test_create_token(f->daemon, "bob", "chat.completions", NULL, NULL);
		g_autofree gchar *b = text_body(f->agent, "x", extra2);
		g_autofree gchar *path = g_strdup_printf("/api/v1/responses/%s", r2);
		g_autoptr(ConfabTestResponse) r4 = post(f, bob, b);
		g_autoptr(ConfabTestResponse) g =
		    confab_test_http(f->daemon, "GET", path, bob, NULL);
		g_autoptr(ConfabTestResponse) d =
		    confab_test_http(f->daemon, "DELETE", path, bob, NULL);
		confab_test_assert_error(r4, 404, "response_not_found");
		confab_test_assert_error(g, 404, "response_not_found");
		confab_test_assert_error(d, 404, "response_not_found");
	}
}

static void
test_conversation(Fixture *f, gconstpointer data)
{
	g_autofree gchar *c1 = NULL;
	g_autofree gchar *r1 = create_response(f, "first", NULL, &c1);
	g_autofree gchar *extra = g_strdup_printf(",\"conversation\":\"%s\"", c1);
	g_autofree gchar *extra_obj = g_strdup_printf(",\"conversation\":{\"id\":\"%s\"}", c1);
	g_autofree gchar *c2 = NULL;
	g_autofree gchar *c3 = NULL;
	g_autofree gchar *r2 = create_response(f, "second", extra, &c2);
	g_autofree gchar *r3 = create_response(f, "third", extra_obj, &c3);
	g_autoptr(ConfabTestResponse) m = get_messages(f, c1);

	g_assert_cmpstr(c2, ==, c1);
	g_assert_cmpstr(c3, ==, c1);
	g_assert_cmpstr(confab_test_json_string(m->json, "data.5.content.0.text"), ==, "third");
	g_assert_cmpstr(confab_test_json_string(m->json, "data.5.response_id"), ==, r3);
	{
		/* another owner's conversation */
		g_autofree gchar *bob =
		    confab_test_create_token(f->daemon, "bob", "chat.completions", NULL, NULL);
		g_autofree gchar *b = text_body(f->agent, "x", extra);
		g_autoptr(ConfabTestResponse) r = post(f, bob, b);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	(void)r1;
	(void)r2;
}

static void
test_retrieve_delete(Fixture *f, gconstpointer data)
{
	const gchar *text = "look at this";
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":[{\"role\":\"developer\",\"content\":\"Be brief.\"},"
	    "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"%s\"},"
	    "{\"type\":\"input_image\",\"image_url\":\"https://example.com/a.png\"}]}]}",
	    f->agent,
	    text);
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	const gchar *id = confab_test_json_string(r->json, "id");
	g_autofree gchar *path = g_strdup_printf("/api/v1/responses/%s", id);
	g_autofree gchar *items_path = g_strdup_printf("%s/input_items", path);
	g_autofree gchar *asc_path = g_strdup_printf("%s/input_items?order=asc&limit=1", path);
	g_autoptr(ConfabTestResponse) g = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_autoptr(ConfabTestResponse) items = NULL;
	g_autoptr(ConfabTestResponse) page = NULL;
	g_autoptr(ConfabTestResponse) page2 = NULL;
	g_autoptr(ConfabTestResponse) bad = NULL;
	g_autoptr(ConfabTestResponse) d = NULL;
	g_autoptr(ConfabTestResponse) g2 = NULL;
	g_autoptr(ConfabTestResponse) d2 = NULL;
	g_autoptr(ConfabTestResponse) m = NULL;
	g_autofree gchar *after = NULL;

	g_assert_cmpuint(g->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(g->json, "id"), ==, id);
	g_assert_cmpstr(confab_test_json_string(g->json, "object"), ==, "response");
	g_assert_cmpstr(confab_test_json_string(g->json, "status"), ==, "completed");
	g_assert_cmpstr(output_text(g->json), ==, text);
	/* the items keep their ids */
	g_assert_cmpstr(confab_test_json_string(g->json, "output.0.id"),
			==,
			confab_test_json_string(r->json, "output.0.id"));
	g_assert_cmpint(confab_test_json_int(g->json, "usage.output_tokens"),
			==,
			confab_test_json_int(r->json, "usage.output_tokens"));
	g_assert_cmpstr(confab_test_json_string(g->json, "conversation.id"),
			==,
			confab_test_json_string(r->json, "conversation.id"));

	/* input items: newest first by default */
	items = confab_test_http(f->daemon, "GET", items_path, f->token, NULL);
	g_assert_cmpuint(items->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(items->json, "object"), ==, "list");
	g_assert_cmpstr(confab_test_json_string(items->json, "data.0.type"), ==, "message");
	g_assert_cmpstr(confab_test_json_string(items->json, "data.0.role"), ==, "user");
	g_assert_cmpstr(confab_test_json_string(items->json, "data.0.content.0.type"),
			==,
			"input_text");
	g_assert_cmpstr(confab_test_json_string(items->json, "data.0.content.1.type"),
			==,
			"input_image");
	g_assert_cmpstr(confab_test_json_string(items->json, "data.0.content.1.image_url"),
			==,
			"https://example.com/a.png");
	g_assert_cmpstr(confab_test_json_string(items->json, "data.1.role"), ==, "developer");
	g_assert_false(json_node_get_boolean(confab_test_json_get(items->json, "has_more")));
	page = confab_test_http(f->daemon, "GET", asc_path, f->token, NULL);
	g_assert_cmpstr(confab_test_json_string(page->json, "data.0.role"), ==, "developer");
	g_assert_true(json_node_get_boolean(confab_test_json_get(page->json, "has_more")));
	after = g_strdup_printf("%s/input_items?order=asc&after=%s",
				path,
				confab_test_json_string(page->json, "last_id"));
	page2 = confab_test_http(f->daemon, "GET", after, f->token, NULL);
	g_assert_cmpstr(confab_test_json_string(page2->json, "data.0.role"), ==, "user");
	g_assert_false(json_node_get_boolean(confab_test_json_get(page2->json, "has_more")));
	{
		g_autofree gchar *p = g_strdup_printf("%s/input_items?limit=0", path);
		bad = confab_test_http(f->daemon, "GET", p, f->token, NULL);
		confab_test_assert_error(bad, 400, "invalid_limit");
	}

	/* delete: its messages leave the conversation */
	d = confab_test_http(f->daemon, "DELETE", path, f->token, NULL);
	g_assert_cmpuint(d->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(d->json, "id"), ==, id);
	g_assert_cmpstr(confab_test_json_string(d->json, "object"), ==, "response");
	g_assert_true(json_node_get_boolean(confab_test_json_get(d->json, "deleted")));
	g2 = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	confab_test_assert_error(g2, 404, "response_not_found");
	d2 = confab_test_http(f->daemon, "DELETE", path, f->token, NULL);
	confab_test_assert_error(d2, 404, "response_not_found");
	m = get_messages(f, confab_test_json_string(r->json, "conversation.id"));
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(m->json, "data"))),
	    ==,
	    0);
}

static void
test_store_false(Fixture *f, gconstpointer data)
{
	g_autofree gchar *c1 = NULL;
	g_autofree gchar *r1 = create_response(f, "kept", NULL, &c1);
	g_autofree gchar *body = text_body(f->agent, "forgotten", ",\"store\":false");
	g_autofree gchar *stream =
	    text_body(f->agent, "forgotten", ",\"store\":false,\"stream\":true");
	g_autofree gchar *cont =
	    g_strdup_printf(",\"store\":false,\"previous_response_id\":\"%s\"", r1);
	g_autofree gchar *cont_body = text_body(f->agent, "not kept either", cont);
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(ConfabTestResponse) s = NULL;
	g_autoptr(ConfabTestResponse) rc = NULL;
	g_autoptr(ConfabTestResponse) g = NULL;
	g_autoptr(ConfabTestResponse) later = NULL;
	g_autoptr(ConfabTestResponse) convs = NULL;
	g_autoptr(ConfabTestResponse) m = NULL;
	g_autoptr(ConfabTestResponse) over = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autofree gchar *path = NULL;
	g_autofree gchar *later_extra = NULL;
	g_autofree gchar *later_body = NULL;

	confab_test_set_quota(f->daemon, "alice", 4);
	r = post(f, f->token, body);
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(output_text(r->json), ==, "forgotten");
	g_assert_false(json_node_get_boolean(confab_test_json_get(r->json, "store")));
	g_assert_null(soup_message_headers_get_one(r->headers, "x-session-id"));
	s = post(f, f->token, stream);
	g_assert_cmpuint(s->status, ==, 200);
	events = stream_events(s);
	g_assert_cmpstr(last_event(events)->name, ==, "response.completed");
	rc = post(f, f->token, cont_body);
	g_assert_cmpuint(rc->status, ==, 200);

	/* nothing of them is kept: not the response, not a conversation */
	path = g_strdup_printf("/api/v1/responses/%s", confab_test_json_string(r->json, "id"));
	g = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	confab_test_assert_error(g, 404, "response_not_found");
	convs = confab_test_http(f->daemon, "GET", "/api/v1/conversations", f->token, NULL);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(convs->json, "data"))),
	    ==,
	    1);
	m = get_messages(f, c1);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(m->json, "data"))),
	    ==,
	    2);
	later_extra = g_strdup_printf(",\"previous_response_id\":\"%s\"",
				      confab_test_json_string(r->json, "id"));
	later_body = text_body(f->agent, "x", later_extra);
	later = post(f, f->token, later_body);
	confab_test_assert_error(later, 404, "response_not_found");
	/* but they counted: 4 of 4 */
	over = post(f, f->token, body);
	confab_test_assert_error(over, 429, "insufficient_quota");
}

static void
test_call_output_unmatched(Fixture *f, gconstpointer data)
{
	g_autofree gchar *r1 = create_response(f, "no calls here", NULL, NULL);
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\":\"%s\",\"previous_response_id\":\"%s\",\"input\":[{\"type\":"
	    "\"function_call_output\",\"call_id\":\"call_nope\",\"output\":\"x\"}]}",
	    f->agent,
	    r1);
	g_autofree gchar *alone = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":[{\"type\":\"function_call_output\",\"call_id\":"
	    "\"call_nope\",\"output\":\"x\"}]}",
	    f->agent);
	g_autofree gchar *paired = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":[{\"role\":\"user\",\"content\":\"/tool w {}\"},"
	    "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"w\",\"arguments\":\"{}"
	    "\"},"
	    "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"rain\"}],"
	    "\"tools\":[{\"type\":\"function\",\"name\":\"w\",\"parameters\":{}}]}",
	    f->agent);
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	g_autoptr(ConfabTestResponse) a = post(f, f->token, alone);
	g_autoptr(ConfabTestResponse) p = post(f, f->token, paired);

	confab_test_assert_error(r, 400, "invalid_value");
	confab_test_assert_error(a, 400, "invalid_value");
	/* a client that sends the whole history (the AI SDK): the call is in it */
	g_assert_cmpuint(p->status, ==, 200);
	g_assert_cmpstr(output_text(p->json), ==, "rain");
}

static void
test_function_call_previous(Fixture *f, gconstpointer data)
{
	const gchar *tools = ",\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\","
			     "\"parameters\":{\"type\":\"object\"}}]";
	g_autofree gchar *body =
	    text_body(f->agent, "/tool get_weather {\"city\":\"Paris\"}", tools);
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	JsonObject *call = output_item(r->json, "function_call", 0);
	g_autofree gchar *body2 = NULL;
	g_autoptr(ConfabTestResponse) r2 = NULL;
	g_autoptr(ConfabTestResponse) g = NULL;
	g_autofree gchar *path = NULL;

	g_assert_nonnull(call);
	body2 = g_strdup_printf("{\"model\":\"%s\",\"previous_response_id\":\"%s\",\"input\":["
				"{\"type\":\"function_call_output\",\"call_id\":\"%s\","
				"\"output\":\"cloudy\"}]%s}",
				f->agent,
				confab_test_json_string(r->json, "id"),
				json_object_get_string_member(call, "call_id"),
				tools);
	r2 = post(f, f->token, body2);
	g_assert_cmpuint(r2->status, ==, 200);
	g_assert_cmpstr(output_text(r2->json), ==, "cloudy");
	g_assert_cmpstr(confab_test_json_string(r2->json, "previous_response_id"),
			==,
			confab_test_json_string(r->json, "id"));
	/* the stored first response has its function_call, with the same ids */
	path = g_strdup_printf("/api/v1/responses/%s", confab_test_json_string(r->json, "id"));
	g = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	call = output_item(g->json, "function_call", 0);
	g_assert_nonnull(call);
	g_assert_cmpstr(
	    json_object_get_string_member(call, "id"),
	    ==,
	    json_object_get_string_member(output_item(r->json, "function_call", 0), "id"));
	{
		/* its input items: the output of the call */
		g_autofree gchar *ip = g_strdup_printf("/api/v1/responses/%s/input_items",
						       confab_test_json_string(r2->json, "id"));
		g_autoptr(ConfabTestResponse) items =
		    confab_test_http(f->daemon, "GET", ip, f->token, NULL);
		g_assert_cmpstr(confab_test_json_string(items->json, "data.0.type"),
				==,
				"function_call_output");
		g_assert_cmpstr(confab_test_json_string(items->json, "data.0.output"),
				==,
				"cloudy");
	}
}

/* item_reference: earlier output items by their ids, as the AI SDK sends
 * them (store: true) instead of the items themselves */
static void
test_item_reference(Fixture *f, gconstpointer data)
{
	const gchar *tools = ",\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\","
			     "\"parameters\":{\"type\":\"object\"}}]";
	g_autofree gchar *body =
	    text_body(f->agent, "/tool get_weather {\"city\":\"Paris\"}", tools);
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	JsonObject *call = output_item(r->json, "function_call", 0);
	g_autofree gchar *body2 = NULL;
	g_autofree gchar *body3 = NULL;
	g_autofree gchar *body4 = NULL;
	g_autoptr(ConfabTestResponse) r2 = NULL;
	g_autoptr(ConfabTestResponse) r3 = NULL;
	g_autoptr(ConfabTestResponse) r4 = NULL;
	g_autoptr(ConfabTestResponse) bob_r = NULL;
	g_autofree gchar *bob = NULL;

	g_assert_nonnull(call);
	body2 = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":[{\"role\":\"user\",\"content\":\"/tool get_weather "
	    "{\\\"city\\\":\\\"Paris\\\"}\"},{\"type\":\"item_reference\",\"id\":\"%s\"},"
	    "{\"type\":\"function_call_output\",\"call_id\":\"%s\",\"output\":\"misty\"}]%s}",
	    f->agent,
	    json_object_get_string_member(call, "id"),
	    json_object_get_string_member(call, "call_id"),
	    tools);
	r2 = post(f, f->token, body2);
	g_assert_cmpuint(r2->status, ==, 200);
	g_assert_cmpstr(output_text(r2->json), ==, "misty");

	/* a message item: the assistant's earlier words */
	body3 =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":[{\"role\":\"user\",\"content\":\"hi\"},"
			    "{\"type\":\"item_reference\",\"id\":\"%s\"},"
			    "{\"role\":\"user\",\"content\":\"again\"}]}",
			    f->agent,
			    confab_test_json_string(r2->json, "output.0.id"));
	r3 = post(f, f->token, body3);
	g_assert_cmpuint(r3->status, ==, 200);
	g_assert_cmpstr(output_text(r3->json), ==, "again");
	{
		g_autoptr(ConfabTestResponse) m =
		    get_messages(f, confab_test_json_string(r3->json, "conversation.id"));
		g_assert_cmpstr(confab_test_json_string(m->json, "data.1.role"), ==, "assistant");
		g_assert_cmpstr(confab_test_json_string(m->json, "data.1.content.0.text"),
				==,
				"misty");
	}

	/* unknown, malformed, or another owner's: 400 naming the item */
	body4 =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":[{\"role\":\"user\",\"content\":\"x\"},"
			    "{\"type\":\"item_reference\",\"id\":\"msg_nope\"}]}",
			    f->agent);
	r4 = post(f, f->token, body4);
	confab_test_assert_error(r4, 400, "invalid_value");
	g_assert_cmpstr(confab_test_json_string(r4->json, "error.param"), ==, "input[1].id");
	bob = confab_test_create_token(f->daemon, "bob", "chat.completions", NULL, NULL);
	bob_r = post(f, bob, body3);
	confab_test_assert_error(bob_r, 400, "invalid_value");
}

/* ---------- the agent's own tools: mcp_call ---------- */

static gchar *
create_mcp_agent(Fixture *f)
{
	const gchar *fake = g_getenv("CONFAB_FAKE_MCP");
	g_autofree gchar *servers = NULL;
	GVariantDict dict;

	g_assert_nonnull(fake);
	servers = g_strdup_printf("{\"mcpServers\":{\"fake\":{\"command\":\"%s\"}}}", fake);
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "hands");
	g_variant_dict_insert(&dict, "provider", "s", "echo");
	g_variant_dict_insert(&dict, "mcp_servers", "s", servers);
	return confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
}

static void
assert_mcp_item(JsonObject *item)
{
	g_assert_nonnull(item);
	g_assert_true(g_str_has_prefix(json_object_get_string_member(item, "id"), "mcp_"));
	g_assert_cmpstr(json_object_get_string_member(item, "server_label"), ==, "fake");
	g_assert_cmpstr(json_object_get_string_member(item, "name"), ==, "echo");
	g_assert_cmpstr(json_object_get_string_member(item, "arguments"),
			==,
			"{\"text\":\"hello from a tool\"}");
	g_assert_cmpstr(json_object_get_string_member(item, "output"), ==, "hello from a tool");
	g_assert_true(json_object_get_null_member(item, "error"));
	g_assert_cmpstr(json_object_get_string_member(item, "status"), ==, "completed");
}

static void
test_mcp_call(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_mcp_agent(f);
	g_autofree gchar *body =
	    text_body(agent, "/tool fake__echo {\"text\":\"hello from a tool\"}", NULL);
	g_autofree gchar *stream_body =
	    text_body(agent,
		      "/tool fake__echo {\"text\":\"hello from a tool\"}",
		      ",\"stream\":true");
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	g_autoptr(ConfabTestResponse) s = NULL;
	g_autoptr(ConfabTestResponse) g = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autofree gchar *path = NULL;
	JsonNode *response;
	guint in_progress = 0, completed = 0, item_done = 0;

	g_assert_cmpuint(r->status, ==, 200);
	/* the call, whole, then the answer */
	g_assert_cmpstr(confab_test_json_string(r->json, "output.0.type"), ==, "mcp_call");
	assert_mcp_item(output_item(r->json, "mcp_call", 0));
	g_assert_cmpstr(confab_test_json_string(r->json, "output.1.type"), ==, "message");
	g_assert_cmpstr(output_text(r->json), ==, "hello from a tool");

	/* stored: the same items */
	path = g_strdup_printf("/api/v1/responses/%s", confab_test_json_string(r->json, "id"));
	g = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(g->status, ==, 200);
	assert_mcp_item(output_item(g->json, "mcp_call", 0));
	g_assert_cmpstr(confab_test_json_string(g->json, "output.0.id"),
			==,
			confab_test_json_string(r->json, "output.0.id"));
	g_assert_cmpstr(output_text(g->json), ==, "hello from a tool");

	/* streamed: its progress as OpenAI's mcp_call events */
	s = post(f, f->token, stream_body);
	g_assert_cmpuint(s->status, ==, 200);
	events = stream_events(s);
	for (guint i = 0; i < events->len; i++) {
		Event *event = g_ptr_array_index(events, i);
		if (g_str_equal(event->name, "response.mcp_call.in_progress"))
			in_progress++;
		if (g_str_equal(event->name, "response.mcp_call.completed")) {
			g_assert_cmpuint(in_progress, ==, 1);
			completed++;
		}
		if (g_str_equal(event->name, "response.output_item.done") &&
		    g_strcmp0(confab_test_json_string(event->data, "item.type"), "mcp_call") == 0) {
			g_assert_cmpuint(completed, ==, 1);
			assert_mcp_item(
			    json_node_get_object(confab_test_json_get(event->data, "item")));
			item_done++;
		}
	}
	g_assert_cmpuint(in_progress, ==, 1);
	g_assert_cmpuint(completed, ==, 1);
	g_assert_cmpuint(item_done, ==, 1);
	g_assert_cmpuint(count_events(events, "response.mcp_call_arguments.delta"), ==, 1);
	g_assert_cmpuint(count_events(events, "response.mcp_call_arguments.done"), ==, 1);
	response = confab_test_json_get(last_event(events)->data, "response");
	assert_mcp_item(output_item(response, "mcp_call", 0));
	g_assert_cmpstr(output_text(response), ==, "hello from a tool");
}

/* two calls in one step: each item done with its own output */
static void
test_mcp_parallel(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_mcp_agent(f);
	const gchar *prompt =
	    "/tool fake__echo {\"text\":\"one\"}\n/tool fake__echo {\"text\":\"two\"}";
	g_autofree gchar *body = text_body(agent, prompt, NULL);
	g_autofree gchar *stream_body = text_body(agent, prompt, ",\"stream\":true");
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	g_autoptr(ConfabTestResponse) s = post(f, f->token, stream_body);
	g_autoptr(GPtrArray) events = stream_events(s);
	JsonNode *response = confab_test_json_get(last_event(events)->data, "response");
	JsonNode *both[] = {r->json, response};

	for (guint i = 0; i < G_N_ELEMENTS(both); i++) {
		JsonObject *a = output_item(both[i], "mcp_call", 0);
		JsonObject *b = output_item(both[i], "mcp_call", 1);
		g_assert_nonnull(a);
		g_assert_nonnull(b);
		g_assert_cmpstr(json_object_get_string_member(a, "output"), ==, "one");
		g_assert_cmpstr(json_object_get_string_member(b, "output"), ==, "two");
	}
	g_assert_cmpuint(count_events(events, "response.mcp_call.completed"), ==, 2);
}

/* ---------- an upstream: reasoning, length, failures ---------- */

typedef struct {
	GSubprocess *process;
	gchar *base_url;
} Upstream;

static Upstream *
upstream_start(void)
{
	const gchar *path = g_getenv("CONFAB_FAKE_UPSTREAM");
	Upstream *up = g_new0(Upstream, 1);
	g_autoptr(GError) error = NULL;
	g_autoptr(GDataInputStream) out = NULL;
	g_autofree gchar *line = NULL;
	const gchar *prefix = "fake-upstream: listening on ";

	g_assert_nonnull(path);
	/* stdin is a pipe the fake watches: it dies with the test */
	up->process =
	    g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE,
			     &error,
			     path,
			     "--stdin-watch",
			     NULL);
	g_assert_no_error(error);
	out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(up->process));
	line = g_data_input_stream_read_line_utf8(out, NULL, NULL, &error);
	g_assert_no_error(error);
	g_assert_true(g_str_has_prefix(line, prefix));
	up->base_url = g_strconcat(line + strlen(prefix), "/v1", NULL);
	return up;
}

static void
upstream_free(Upstream *up)
{
	g_subprocess_force_exit(up->process);
	g_subprocess_wait(up->process, NULL, NULL);
	g_object_unref(up->process);
	g_free(up->base_url);
	g_free(up);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Upstream, upstream_free)

static gchar *
create_upstream_agent(Fixture *f, Upstream *up, const gchar *mode)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", mode);
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", up->base_url);
	g_variant_dict_insert(&dict, "upstream_model", "s", mode);
	g_variant_dict_insert(&dict, "api_key", "s", "sk-fake-Zq8v3LkP0secret");
	return confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
}

static void
test_reasoning(Fixture *f, gconstpointer data)
{
	g_autoptr(Upstream) up = upstream_start();
	g_autofree gchar *agent = create_upstream_agent(f, up, "reasoning");
	g_autofree gchar *body = text_body(agent, "Hi", NULL);
	g_autofree gchar *stream_body = text_body(agent, "Hi", ",\"stream\":true");
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	g_autoptr(ConfabTestResponse) s = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autoptr(GString) joined = g_string_new(NULL);
	JsonObject *item;
	JsonNode *response;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "output.0.type"), ==, "reasoning");
	g_assert_cmpstr(confab_test_json_string(r->json, "output.0.summary.0.type"),
			==,
			"summary_text");
	g_assert_cmpstr(confab_test_json_string(r->json, "output.0.summary.0.text"),
			==,
			"The user greets me. I greet back.");
	g_assert_true(g_str_has_prefix(confab_test_json_string(r->json, "output.0.id"), "rs_"));
	g_assert_cmpstr(output_text(r->json), ==, "Hello!");

	s = post(f, f->token, stream_body);
	events = stream_events(s);
	for (guint i = 0; i < events->len; i++) {
		Event *event = g_ptr_array_index(events, i);
		if (g_str_equal(event->name, "response.reasoning_summary_text.delta"))
			g_string_append(joined, confab_test_json_string(event->data, "delta"));
	}
	g_assert_cmpstr(joined->str, ==, "The user greets me. I greet back.");
	g_assert_cmpuint(count_events(events, "response.reasoning_summary_text.done"), ==, 1);
	g_assert_cmpuint(count_events(events, "response.reasoning_summary_part.added"), ==, 1);
	response = confab_test_json_get(last_event(events)->data, "response");
	item = output_item(response, "reasoning", 0);
	g_assert_nonnull(item);
	g_assert_cmpstr(output_text(response), ==, "Hello!");
}

static void
test_upstream_ends(Fixture *f, gconstpointer data)
{
	g_autoptr(Upstream) up = upstream_start();
	g_autofree gchar *length = create_upstream_agent(f, up, "length");
	g_autofree gchar *failing = create_upstream_agent(f, up, "500");
	g_autofree gchar *cut = create_upstream_agent(f, up, "error-event");
	g_autofree gchar *length_body = text_body(length, "Hi", ",\"max_output_tokens\":5");
	g_autofree gchar *length_stream = text_body(length, "Hi", ",\"stream\":true");
	g_autofree gchar *failing_body = text_body(failing, "Hi", NULL);
	g_autofree gchar *cut_stream = text_body(cut, "Hi", ",\"stream\":true");
	g_autoptr(ConfabTestResponse) l = post(f, f->token, length_body);
	g_autoptr(ConfabTestResponse) ls = post(f, f->token, length_stream);
	g_autoptr(ConfabTestResponse) e = post(f, f->token, failing_body);
	g_autoptr(ConfabTestResponse) c = post(f, f->token, cut_stream);
	g_autoptr(GPtrArray) levents = NULL;
	g_autoptr(GPtrArray) cevents = NULL;
	g_autoptr(ConfabTestResponse) g = NULL;
	g_autofree gchar *path = NULL;
	JsonNode *response;

	/* finish_reason length: incomplete, max_output_tokens */
	g_assert_cmpuint(l->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(l->json, "status"), ==, "incomplete");
	g_assert_cmpstr(confab_test_json_string(l->json, "incomplete_details.reason"),
			==,
			"max_output_tokens");
	g_assert_cmpint(confab_test_json_int(l->json, "max_output_tokens"), ==, 5);
	levents = stream_events(ls);
	g_assert_cmpstr(last_event(levents)->name, ==, "response.incomplete");
	path = g_strdup_printf("/api/v1/responses/%s", confab_test_json_string(l->json, "id"));
	g = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpstr(confab_test_json_string(g->json, "status"), ==, "incomplete");

	/* an upstream failure before the first byte: the error, as for chat */
	confab_test_assert_error(e, 502, "upstream_error");

	/* after the first byte: an error event, then response.failed */
	g_assert_cmpuint(c->status, ==, 200);
	cevents = stream_events(c);
	g_assert_cmpstr(last_event(cevents)->name, ==, "response.failed");
	g_assert_cmpstr(((Event *)g_ptr_array_index(cevents, cevents->len - 2))->name, ==, "error");
	response = confab_test_json_get(last_event(cevents)->data, "response");
	g_assert_cmpstr(confab_test_json_string(response, "status"), ==, "failed");
	g_assert_cmpstr(confab_test_json_string(response, "error.code"), ==, "upstream_error");
}

/* what the upstream is asked: Chat Completions, translated */
static void
test_translation(Fixture *f, gconstpointer data)
{
	g_autoptr(Upstream) up = upstream_start();
	g_autofree gchar *agent = create_upstream_agent(f, up, "plain");
	g_autofree gchar *body = text_body(
	    agent,
	    "Hi",
	    ",\"instructions\":\"Be terse.\",\"max_output_tokens\":50,\"temperature\":0.2,"
	    "\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}"
	    "],"
	    "\"tool_choice\":{\"type\":\"function\",\"name\":\"f\"},"
	    "\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"s\",\"schema\":{\"type\":"
	    "\"object\"},\"strict\":true}},\"reasoning\":{\"effort\":\"low\"},"
	    "\"store\":true,\"include\":[\"reasoning.encrypted_content\"],\"truncation\":\"auto\","
	    "\"service_tier\":\"flex\"");
	g_autoptr(ConfabTestResponse) r = post(f, f->token, body);
	g_autofree gchar *url = g_strndup(up->base_url, strlen(up->base_url) - 3);
	g_autofree gchar *requests_url = g_strconcat(url, "/_requests", NULL);
	g_autoptr(SoupSession) session = soup_session_new();
	g_autoptr(SoupMessage) msg = soup_message_new("GET", requests_url);
	g_autoptr(GBytes) bytes = soup_session_send_and_read(session, msg, NULL, NULL);
	g_autoptr(JsonNode) all = NULL;
	g_autoptr(JsonNode) sent = NULL;
	g_autofree gchar *text = NULL;
	JsonNode *request;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "tools.0.name"), ==, "f");
	g_assert_cmpstr(confab_test_json_string(r->json, "text.format.type"), ==, "json_schema");
	text = g_strndup(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes));
	all = json_from_string(text, NULL);
	g_assert_nonnull(all);
	request = json_array_get_element(json_node_get_array(all), 0);
	g_assert_cmpstr(confab_test_json_string(request, "path"), ==, "/v1/chat/completions");
	sent = json_node_copy(confab_test_json_get(request, "body"));
	g_assert_nonnull(sent);
	g_assert_cmpint(confab_test_json_int(sent, "max_tokens"), ==, 50);
	g_assert_cmpstr(confab_test_json_string(sent, "tools.0.type"), ==, "function");
	g_assert_cmpstr(confab_test_json_string(sent, "tools.0.function.name"), ==, "f");
	g_assert_cmpstr(confab_test_json_string(sent, "tool_choice.function.name"), ==, "f");
	g_assert_cmpstr(confab_test_json_string(sent, "response_format.type"), ==, "json_schema");
	g_assert_cmpstr(confab_test_json_string(sent, "response_format.json_schema.name"), ==, "s");
	g_assert_cmpstr(confab_test_json_string(sent, "reasoning_effort"), ==, "low");
	g_assert_cmpstr(confab_test_json_string(sent, "service_tier"), ==, "flex");
	/* the instructions: a system message for this response only */
	g_assert_cmpstr(confab_test_json_string(sent, "messages.0.role"), ==, "system");
	g_assert_cmpstr(confab_test_json_string(sent, "messages.0.content"), ==, "Be terse.");
	g_assert_cmpstr(confab_test_json_string(sent, "messages.1.role"), ==, "user");
	/* the Responses API's own members stay here */
	g_assert_null(confab_test_json_get(sent, "input"));
	g_assert_null(confab_test_json_get(sent, "instructions"));
	g_assert_null(confab_test_json_get(sent, "include"));
	g_assert_null(confab_test_json_get(sent, "truncation"));
	g_assert_null(confab_test_json_get(sent, "text"));
	g_assert_null(confab_test_json_get(sent, "max_output_tokens"));
	{
		/* a continuation: the instructions are not carried over */
		g_autofree gchar *extra = g_strdup_printf(",\"previous_response_id\":\"%s\"",
							  confab_test_json_string(r->json, "id"));
		g_autofree gchar *next = text_body(agent, "Again", extra);
		g_autoptr(ConfabTestResponse) r2 = post(f, f->token, next);
		g_autoptr(SoupMessage) msg2 = soup_message_new("GET", requests_url);
		g_autoptr(GBytes) bytes2 = soup_session_send_and_read(session, msg2, NULL, NULL);
		g_autofree gchar *text2 =
		    g_strndup(g_bytes_get_data(bytes2, NULL), g_bytes_get_size(bytes2));
		g_autoptr(JsonNode) all2 = json_from_string(text2, NULL);
		g_autoptr(JsonNode) sent2 = json_node_copy(
		    confab_test_json_get(json_array_get_element(json_node_get_array(all2), 1),
					 "body"));
		g_assert_cmpuint(r2->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(sent2, "messages.0.role"), ==, "user");
		g_assert_cmpstr(confab_test_json_string(sent2, "messages.1.role"), ==, "assistant");
		g_assert_cmpstr(confab_test_json_string(sent2, "messages.2.content"), ==, "Again");
	}
}

typedef struct {
	Fixture *f;
	const gchar *path;
} StatusWait;

static gboolean
response_incomplete(gpointer data)
{
	StatusWait *w = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(w->f->daemon, "GET", w->path, w->f->token, NULL);
	/* with what was said: on PostgreSQL a stream's answer is first stored
	 * incomplete and empty, for a daemon that would die during it, and
	 * the cancelled turn's own answer replaces it */
	return r->status == 200 &&
	       g_strcmp0(confab_test_json_string(r->json, "status"), "incomplete") == 0 &&
	       output_text(r->json) != NULL;
}

/* The client leaves mid-stream: the turn is cancelled and the response is
 * stored incomplete, with what was said, as for chat completions. */
static void
test_disconnect(Fixture *f, gconstpointer data)
{
	g_autoptr(Upstream) up = upstream_start();
	g_autofree gchar *agent = create_upstream_agent(f, up, "slow:100:100");
	g_autofree gchar *body = text_body(agent, "take your time", ",\"stream\":true");
	g_autoptr(GUri) uri = g_uri_parse(f->daemon->url, G_URI_FLAGS_NONE, NULL);
	g_autoptr(GSocketClient) client = g_socket_client_new();
	g_autoptr(GSocketConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) request = g_string_new(NULL);
	g_autoptr(GString) received = g_string_new(NULL);
	g_autoptr(ConfabTestResponse) g = NULL;
	g_autofree gchar *response_id = NULL;
	g_autofree gchar *path = NULL;
	const gchar *id;
	StatusWait w = {f, NULL};

	conn = g_socket_client_connect_to_host(client,
					       g_uri_get_host(uri),
					       (guint16)g_uri_get_port(uri),
					       NULL,
					       &error);
	g_assert_no_error(error);
	g_string_append_printf(request,
			       "POST /api/v1/responses HTTP/1.1\r\nHost: x\r\n"
			       "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
			       "Content-Length: %zu\r\n\r\n%s",
			       f->token,
			       strlen(body),
			       body);
	g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)),
				  request->str,
				  request->len,
				  NULL,
				  NULL,
				  &error);
	g_assert_no_error(error);
	while (strstr(received->str, "tick0") == NULL) {
		gchar buf[4096];
		gssize n = g_input_stream_read(g_io_stream_get_input_stream(G_IO_STREAM(conn)),
					       buf,
					       sizeof(buf),
					       NULL,
					       &error);
		g_assert_no_error(error);
		g_assert_cmpint(n, >, 0);
		g_string_append_len(received, buf, n);
	}
	id = strstr(received->str, "\"id\":\"resp_");
	g_assert_nonnull(id);
	response_id = g_strndup(id + 6, strlen("resp_") + 26);
	g_io_stream_close(G_IO_STREAM(conn), NULL, &error);
	g_assert_no_error(error);

	path = g_strdup_printf("/api/v1/responses/%s", response_id);
	w.path = path;
	g_assert_true(confab_test_wait_until(response_incomplete, &w, 10000));
	g = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpstr(confab_test_json_string(g->json, "incomplete_details.reason"),
			==,
			"interrupted");
	g_assert_true(g_str_has_prefix(output_text(g->json), "tick0 "));
}

/* ---------- a response that is still running ---------- */

/* A stream read by hand, so that the test acts while it runs. */
typedef struct {
	GSocketConnection *conn;
	GString *received;
} RawStream;

static void
raw_stream_free(RawStream *rs)
{
	g_clear_object(&rs->conn);
	g_string_free(rs->received, TRUE);
	g_free(rs);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(RawStream, raw_stream_free)

static RawStream *
raw_stream_open(ConfabTestDaemon *daemon, const gchar *token, const gchar *body)
{
	g_autoptr(GUri) uri = g_uri_parse(daemon->url, G_URI_FLAGS_NONE, NULL);
	g_autoptr(GSocketClient) client = g_socket_client_new();
	g_autoptr(GString) request = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	RawStream *rs = g_new0(RawStream, 1);

	rs->received = g_string_new(NULL);
	rs->conn = g_socket_client_connect_to_host(client,
						   g_uri_get_host(uri),
						   (guint16)g_uri_get_port(uri),
						   NULL,
						   &error);
	g_assert_no_error(error);
	/* a read that never ends fails the test instead of hanging it */
	g_socket_set_timeout(g_socket_connection_get_socket(rs->conn), 60);
	g_string_append_printf(request,
			       "POST /api/v1/responses HTTP/1.1\r\nHost: x\r\n"
			       "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
			       "Content-Length: %zu\r\n\r\n%s",
			       token,
			       strlen(body),
			       body);
	g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(rs->conn)),
				  request->str,
				  request->len,
				  NULL,
				  NULL,
				  &error);
	g_assert_no_error(error);
	return rs;
}

/* Reads until @needle has come. */
static void
raw_stream_read_until(RawStream *rs, const gchar *needle)
{
	while (strstr(rs->received->str, needle) == NULL) {
		g_autoptr(GError) error = NULL;
		gchar buf[4096];
		gssize n = g_input_stream_read(g_io_stream_get_input_stream(G_IO_STREAM(rs->conn)),
					       buf,
					       sizeof(buf),
					       NULL,
					       &error);
		g_assert_no_error(error);
		g_assert_cmpint(n, >, 0);
		g_string_append_len(rs->received, buf, n);
	}
}

/* The response of the stream's response.created event. */
static JsonNode *
raw_stream_created(RawStream *rs)
{
	const gchar *needle = "event: response.created\ndata: ";
	const gchar *data;
	const gchar *end;
	g_autofree gchar *json = NULL;
	g_autoptr(JsonNode) event = NULL;

	raw_stream_read_until(rs, "event: response.in_progress\n");
	data = strstr(rs->received->str, needle);
	g_assert_nonnull(data);
	data += strlen(needle);
	end = strstr(data, "\n\n");
	g_assert_nonnull(end);
	json = g_strndup(data, end - data);
	event = json_from_string(json, NULL);
	g_assert_nonnull(event);
	return json_node_copy(confab_test_json_get(event, "response"));
}

/* A streamed response whose upstream holds its answer: it runs until
 * running_end(). */
typedef struct {
	ConfabTestUpstream *up;
	gchar *agent;
	RawStream *rs;
	gchar *id;
	gchar *sid;  /* its conversation */
	gchar *path; /* /api/v1/responses/{id} */
} Running;

/* @extra: the request's members beyond model, input and stream */
static Running *
running_start_with(Fixture *f, const gchar *extra)
{
	Running *run = g_new0(Running, 1);
	g_autofree gchar *body = NULL;
	g_autofree gchar *members = g_strconcat(",\"stream\":true", extra, NULL);
	g_autoptr(JsonNode) created = NULL;

	run->up = confab_test_upstream_start(TRUE);
	run->agent = confab_test_create_held_agent(f->daemon, run->up);
	body = text_body(run->agent, "wait for it", members);
	run->rs = raw_stream_open(f->daemon, f->token, body);
	created = raw_stream_created(run->rs);
	run->id = g_strdup(confab_test_json_string(created, "id"));
	run->sid = g_strdup(confab_test_json_string(created, "conversation.id"));
	run->path = g_strdup_printf("/api/v1/responses/%s", run->id);
	assert_response_id(run->id);
	/* the turn waits on its upstream */
	g_assert_true(confab_test_upstream_wait_waiting(run->up, 1, 30000));
	return run;
}

static Running *
running_start(Fixture *f)
{
	Running *run = running_start_with(f, "");

	g_assert_nonnull(run->sid);
	return run;
}

/* The upstream answers; the stream ends. */
static void
running_end(Running *run)
{
	confab_test_upstream_set_hold(run->up, FALSE);
	raw_stream_read_until(run->rs, "event: response.completed\n");
}

static void
running_free(Running *run)
{
	confab_test_upstream_stop(run->up);
	raw_stream_free(run->rs);
	g_free(run->agent);
	g_free(run->id);
	g_free(run->sid);
	g_free(run->path);
	g_free(run);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Running, running_free)

/* While a streamed response runs, GET reads it in_progress (as OpenAI
 * does), not incomplete: a client that polls takes that as final (issue
 * 35, bug 6). It reads completed once the turn has ended. */
static void
test_running_get(Fixture *f, gconstpointer data)
{
	g_autoptr(Running) run = running_start(f);
	g_autofree gchar *items_path = g_strdup_printf("%s/input_items", run->path);

	{
		g_autoptr(ConfabTestResponse) g =
		    confab_test_http(f->daemon, "GET", run->path, f->token, NULL);
		g_autoptr(ConfabTestResponse) items =
		    confab_test_http(f->daemon, "GET", items_path, f->token, NULL);
		g_assert_cmpuint(g->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(g->json, "id"), ==, run->id);
		g_assert_cmpstr(confab_test_json_string(g->json, "status"), ==, "in_progress");
		g_assert_true(
		    JSON_NODE_HOLDS_NULL(confab_test_json_get(g->json, "incomplete_details")));
		g_assert_cmpstr(confab_test_json_string(g->json, "conversation.id"), ==, run->sid);
		g_assert_cmpuint(items->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(items->json, "data.0.role"), ==, "user");
	}
	running_end(run);
	{
		g_autoptr(ConfabTestResponse) g =
		    confab_test_http(f->daemon, "GET", run->path, f->token, NULL);
		g_assert_cmpuint(g->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(g->json, "status"), ==, "completed");
		g_assert_true(
		    JSON_NODE_HOLDS_NULL(confab_test_json_get(g->json, "incomplete_details")));
		g_assert_cmpstr(output_text(g->json), ==, "slow answer");
	}
}

/* A response with store: false cannot be fetched, deleted or continued,
 * while it runs as after: its turn is the store's only meanwhile, under an
 * id nobody asks for (it was readable while it ran). */
static void
test_running_unstored(Fixture *f, gconstpointer data)
{
	g_autoptr(Running) run = running_start_with(f, ",\"store\":false");
	g_autofree gchar *extra = g_strdup_printf(",\"previous_response_id\":\"%s\"", run->id);
	g_autofree gchar *body = text_body(run->agent, "and then?", extra);

	g_assert_null(run->sid);
	{
		g_autoptr(ConfabTestResponse) g =
		    confab_test_http(f->daemon, "GET", run->path, f->token, NULL);
		g_autoptr(ConfabTestResponse) d =
		    confab_test_http(f->daemon, "DELETE", run->path, f->token, NULL);
		g_autoptr(ConfabTestResponse) c =
		    confab_test_http(f->daemon, "POST", "/api/v1/responses", f->token, body);
		confab_test_assert_error(g, 404, "response_not_found");
		confab_test_assert_error(d, 404, "response_not_found");
		confab_test_assert_error(c, 404, "response_not_found");
	}
	running_end(run);
	{
		g_autoptr(ConfabTestResponse) g =
		    confab_test_http(f->daemon, "GET", run->path, f->token, NULL);
		confab_test_assert_error(g, 404, "response_not_found");
	}
}

/*
 * DELETE of a response whose turn still runs is refused with 409
 * conversation_busy (issue 35, bug 3): a delete that answered 200 was
 * undone when the turn committed its answer, and left the conversation a
 * lone answer without its question. Once the turn has ended the response
 * is whole, and deletes whole.
 */
static void
test_running_delete(Fixture *f, gconstpointer data)
{
	g_autoptr(Running) run = running_start(f);

	{
		g_autoptr(ConfabTestResponse) d =
		    confab_test_http(f->daemon, "DELETE", run->path, f->token, NULL);
		confab_test_assert_error(d, 409, "conversation_busy");
		g_assert_true(JSON_NODE_HOLDS_NULL(confab_test_json_get(d->json, "error.param")));
	}
	running_end(run);
	{
		g_autofree gchar *items_path = g_strdup_printf("%s/input_items", run->path);
		g_autoptr(ConfabTestResponse) g =
		    confab_test_http(f->daemon, "GET", run->path, f->token, NULL);
		g_autoptr(ConfabTestResponse) items =
		    confab_test_http(f->daemon, "GET", items_path, f->token, NULL);
		g_autoptr(ConfabTestResponse) m = get_messages(f, run->sid);
		g_assert_cmpstr(confab_test_json_string(g->json, "status"), ==, "completed");
		g_assert_cmpstr(confab_test_json_string(items->json, "data.0.role"), ==, "user");
		g_assert_cmpstr(confab_test_json_string(m->json, "data.0.role"), ==, "user");
		g_assert_cmpstr(confab_test_json_string(m->json, "data.1.role"), ==, "assistant");
	}
	{
		g_autoptr(ConfabTestResponse) d =
		    confab_test_http(f->daemon, "DELETE", run->path, f->token, NULL);
		g_autoptr(ConfabTestResponse) g = NULL;
		g_autoptr(ConfabTestResponse) m = NULL;
		g_assert_cmpuint(d->status, ==, 200);
		g_assert_true(json_node_get_boolean(confab_test_json_get(d->json, "deleted")));
		g = confab_test_http(f->daemon, "GET", run->path, f->token, NULL);
		confab_test_assert_error(g, 404, "response_not_found");
		/* nothing of the turn is left */
		m = get_messages(f, run->sid);
		g_assert_cmpuint(m->status, ==, 200);
		g_assert_cmpuint(json_array_get_length(
				     json_node_get_array(confab_test_json_get(m->json, "data"))),
				 ==,
				 0);
	}
}

/* A continuation of a running response is 409 conversation_busy, its
 * param naming what the client sent: `previous_response_id` or
 * `conversation`, never `metadata.session_id` that it did not send. */
static void
test_running_continue(Fixture *f, gconstpointer data)
{
	g_autoptr(Running) run = running_start(f);
	g_autofree gchar *previous = g_strdup_printf("{\"model\":\"%s\",\"input\":\"and then?\","
						     "\"previous_response_id\":\"%s\"}",
						     run->agent,
						     run->id);
	g_autofree gchar *conversation =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":\"and then?\",\"conversation\":\"%s\"}",
			    run->agent,
			    run->sid);
	g_autofree gchar *session = g_strdup_printf("{\"model\":\"%s\",\"input\":\"and then?\","
						    "\"metadata\":{\"session_id\":\"%s\"}}",
						    run->agent,
						    run->sid);

	{
		g_autoptr(ConfabTestResponse) r = post(f, f->token, previous);
		confab_test_assert_error(r, 409, "conversation_busy");
		g_assert_cmpstr(confab_test_json_string(r->json, "error.param"),
				==,
				"previous_response_id");
	}
	{
		g_autoptr(ConfabTestResponse) r = post(f, f->token, conversation);
		confab_test_assert_error(r, 409, "conversation_busy");
		g_assert_cmpstr(confab_test_json_string(r->json, "error.param"),
				==,
				"conversation");
	}
	{
		g_autoptr(ConfabTestResponse) r = post(f, f->token, session);
		confab_test_assert_error(r, 409, "conversation_busy");
		g_assert_cmpstr(confab_test_json_string(r->json, "error.param"),
				==,
				"metadata.session_id");
	}
	running_end(run);
	{
		g_autoptr(ConfabTestResponse) r = post(f, f->token, previous);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(r->json, "conversation.id"), ==, run->sid);
	}
}

/* the same metrics as chat completions: requests by route, turns by agent */
static void
test_metrics(Fixture *f, gconstpointer data)
{
	g_autofree gchar *metrics_token =
	    confab_test_create_token(f->daemon, "prometheus", "metrics.read", NULL, NULL);
	g_autofree gchar *body = text_body(f->agent, "counted", NULL);
	g_autofree gchar *stream = text_body(f->agent, "counted", ",\"stream\":true");
	g_autoptr(ConfabTestResponse) r1 = post(f, f->token, body);
	g_autoptr(ConfabTestResponse) r2 = post(f, f->token, stream);
	g_autofree gchar *path =
	    g_strdup_printf("/api/v1/responses/%s", confab_test_json_string(r1->json, "id"));
	g_autoptr(ConfabTestResponse) g = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_autoptr(ConfabTestResponse) m =
	    confab_test_http(f->daemon, "GET", "/metrics", metrics_token, NULL);
	g_autofree gchar *text = NULL;
	g_autofree gchar *turns = NULL;

	g_assert_cmpuint(r1->status, ==, 200);
	g_assert_cmpuint(r2->status, ==, 200);
	g_assert_cmpuint(g->status, ==, 200);
	g_assert_cmpuint(m->status, ==, 200);
	text = g_strndup(g_bytes_get_data(m->body, NULL), g_bytes_get_size(m->body));
	g_assert_nonnull(
	    strstr(text,
		   "confab_http_requests_total{route=\"/api/v1/responses\",code=\"200\"} 2\n"));
	g_assert_nonnull(strstr(
	    text,
	    "confab_http_requests_total{route=\"/api/v1/responses/{id}\",code=\"200\"} 1\n"));
	turns =
	    g_strdup_printf("confab_turns_total{agent=\"%s\",status=\"completed\"} 2\n", f->agent);
	g_assert_nonnull(strstr(text, turns));
}

/* the chat completions limits: the body size from Content-Length before a
 * byte is read, files per message and their size; nothing stored, nothing
 * counted */
static void
test_limits(void)
{
	ConfabTestDaemon *daemon = confab_test_daemon_start("[limits]\n"
							    "max_body_bytes=65536\n"
							    "max_file_bytes=16\n"
							    "max_files_per_message=2\n",
							    NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autoptr(GString) big = g_string_new(NULL);
	g_autofree gchar *big_body = NULL;
	g_autofree gchar *file_body = NULL;
	g_autofree gchar *files_body = NULL;
	g_autoptr(ConfabTestResponse) r1 = NULL;
	g_autoptr(ConfabTestResponse) r2 = NULL;
	g_autoptr(ConfabTestResponse) r3 = NULL;
	g_autoptr(ConfabTestResponse) convs = NULL;

	for (guint i = 0; i < 70000; i++)
		g_string_append_c(big, 'a');
	big_body = g_strdup_printf("{\"model\":\"%s\",\"input\":\"%s\"}", agent, big->str);
	r1 = confab_test_http(daemon, "POST", "/api/v1/responses", token, big_body);
	confab_test_assert_error(r1, 413, "request_too_large");
	file_body = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":"
	    "\"input_file\",\"filename\":\"a\",\"file_data\":\"%s\"}]}]}",
	    agent,
	    "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFh");
	r2 = confab_test_http(daemon, "POST", "/api/v1/responses", token, file_body);
	confab_test_assert_error(r2, 400, "invalid_file");
	g_assert_cmpstr(confab_test_json_string(r2->json, "error.param"),
			==,
			"input[0].content[0].file.file_data");
	files_body =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":[{\"role\":\"user\",\"content\":["
			    "{\"type\":\"input_image\",\"image_url\":\"https://e.org/1.png\"},"
			    "{\"type\":\"input_image\",\"image_url\":\"https://e.org/2.png\"},"
			    "{\"type\":\"input_image\",\"image_url\":\"https://e.org/3.png\"}]}]}",
			    agent);
	r3 = confab_test_http(daemon, "POST", "/api/v1/responses", token, files_body);
	confab_test_assert_error(r3, 400, "invalid_file");
	convs = confab_test_http(daemon, "GET", "/api/v1/conversations", token, NULL);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(convs->json, "data"))),
	    ==,
	    0);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	confab_test_daemon_free(daemon);
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);

	g_test_add("/confab/http-responses/json",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_json,
		   fixture_teardown);
	g_test_add("/confab/http-responses/stream",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_stream,
		   fixture_teardown);
	g_test_add("/confab/http-responses/items",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_items,
		   fixture_teardown);
	g_test_add("/confab/http-responses/function-call",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_function_call,
		   fixture_teardown);
	g_test_add("/confab/http-responses/errors",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_errors,
		   fixture_teardown);
	g_test_add("/confab/http-responses/quota",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_quota,
		   fixture_teardown);
	g_test_add("/confab/http-responses/previous",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_previous,
		   fixture_teardown);
	g_test_add("/confab/http-responses/conversation",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_conversation,
		   fixture_teardown);
	g_test_add("/confab/http-responses/retrieve-delete",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_retrieve_delete,
		   fixture_teardown);
	g_test_add("/confab/http-responses/store-false",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_store_false,
		   fixture_teardown);
	g_test_add("/confab/http-responses/call-output-unmatched",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_call_output_unmatched,
		   fixture_teardown);
	g_test_add("/confab/http-responses/function-call-previous",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_function_call_previous,
		   fixture_teardown);
	g_test_add("/confab/http-responses/mcp-call",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_mcp_call,
		   fixture_teardown);
	g_test_add("/confab/http-responses/reasoning",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_reasoning,
		   fixture_teardown);
	g_test_add("/confab/http-responses/upstream-ends",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_upstream_ends,
		   fixture_teardown);
	g_test_add("/confab/http-responses/translation",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_translation,
		   fixture_teardown);
	g_test_add("/confab/http-responses/disconnect",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_disconnect,
		   fixture_teardown);
	g_test_add("/confab/http-responses/mcp-parallel",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_mcp_parallel,
		   fixture_teardown);
	g_test_add("/confab/http-responses/item-reference",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_item_reference,
		   fixture_teardown);
	g_test_add("/confab/http-responses/metrics",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_metrics,
		   fixture_teardown);
	g_test_add("/confab/http-responses/running-get",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_running_get,
		   fixture_teardown);
	g_test_add("/confab/http-responses/running-unstored",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_running_unstored,
		   fixture_teardown);
	g_test_add("/confab/http-responses/running-delete",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_running_delete,
		   fixture_teardown);
	g_test_add("/confab/http-responses/running-continue",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_running_continue,
		   fixture_teardown);
	g_test_add_func("/confab/http-responses/limits", test_limits);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
