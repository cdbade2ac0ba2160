/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * The Conversations API (issue 32) against a real confabd, on SQLite or
 * (tests/pg/with-cluster) PostgreSQL: each endpoint, the items' pages and
 * cursors, deleting, bad input that leaves the conversation as it was,
 * who sees what, 409 while a turn runs, and a conversation continued by
 * both doors with what was added as items as the model's context.
 */

#define INSTRUCTIONS "You are the conversations test."

typedef struct {
	ConfabTestFakeUpstream *up;
	ConfabTestDaemon *daemon;
	gchar *alice;
	gchar *bob;
	gchar *echo;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->up = confab_test_fake_upstream_start();
	f->daemon = confab_test_daemon_start(NULL, NULL);
	f->alice = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
	f->bob = confab_test_create_token(f->daemon, "bob", "api.full", NULL, NULL);
	f->echo = confab_test_create_agent(f->daemon, "echo", "echo");
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	confab_test_fake_upstream_free(f->up);
	g_free(f->alice);
	g_free(f->bob);
	g_free(f->echo);
}

/* ---------- helpers ---------- */

static ConfabTestResponse *
call(Fixture *f, const gchar *method, const gchar *token, const gchar *body, const gchar *fmt, ...)
    G_GNUC_PRINTF(5, 6);

static ConfabTestResponse *
call(Fixture *f, const gchar *method, const gchar *token, const gchar *body, const gchar *fmt, ...)
{
	g_autofree gchar *path = NULL;
	ConfabTestResponse *r;
	va_list args;

	va_start(args, fmt);
	path = g_strdup_vprintf(fmt, args);
	va_end(args);
	r = confab_test_http(f->daemon, method, path, token, body);
	if (r->status >= 400)
		g_test_message("%s %s: %u %.*s",
			       method,
			       path,
			       r->status,
			       (int)g_bytes_get_size(r->body),
			       (const gchar *)g_bytes_get_data(r->body, NULL));
	return r;
}

/* A new conversation of alice's with @body; its id. */
static gchar *
create(Fixture *f, const gchar *body)
{
	g_autoptr(ConfabTestResponse) r = call(f, "POST", f->alice, body, "/api/v1/conversations");
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "object"), ==, "conversation");
	g_assert_true(g_str_has_prefix(confab_test_json_string(r->json, "id"), "cts_"));
	return g_strdup(confab_test_json_string(r->json, "id"));
}

/* The ids and texts of a page of items, "id=text|…" without the ids. */
static gchar *
page_texts(ConfabTestResponse *r)
{
	JsonArray *data = json_node_get_array(confab_test_json_get(r->json, "data"));
	g_autoptr(GString) out = g_string_new(NULL);

	for (guint i = 0; i < json_array_get_length(data); i++) {
		JsonNode *item = json_array_get_element(data, i);
		const gchar *type = confab_test_json_string(item, "type");
		if (out->len > 0)
			g_string_append_c(out, '|');
		if (g_strcmp0(type, "message") == 0)
			g_string_append(out, confab_test_json_string(item, "content.0.text"));
		else if (g_strcmp0(type, "function_call") == 0)
			g_string_append_printf(out,
					       "call:%s",
					       confab_test_json_string(item, "name"));
		else if (g_strcmp0(type, "function_call_output") == 0)
			g_string_append_printf(out,
					       "out:%s",
					       confab_test_json_string(item, "output"));
		else
			g_string_append(out, type);
	}
	return g_string_free(g_steal_pointer(&out), FALSE);
}

static gchar *
list_texts(Fixture *f, const gchar *id, const gchar *query)
{
	g_autoptr(ConfabTestResponse) r =
	    call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items%s", id, query);
	g_assert_cmpuint(r->status, ==, 200);
	return page_texts(r);
}

/* 400 in the OpenAI shape, naming @param (a prefix of it, if @prefix). */
static void
assert_bad(ConfabTestResponse *r, const gchar *param, gboolean prefix)
{
	const gchar *got;

	g_assert_cmpuint(r->status, ==, 400);
	g_assert_nonnull(r->json);
	g_assert_cmpstr(confab_test_json_string(r->json, "error.type"),
			==,
			"invalid_request_error");
	g_assert_nonnull(confab_test_json_string(r->json, "error.message"));
	got = confab_test_json_string(r->json, "error.param");
	if (prefix)
		g_assert_true(g_str_has_prefix(got, param));
	else
		g_assert_cmpstr(got, ==, param);
}

static const gchar *const FIVE_ITEMS =
    "[{\"role\":\"user\",\"content\":\"one\"},"
    "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
    "\"text\":\"two\"}]},"
    "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
    "\"text\":\"three\"}]},"
    "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"lookup\","
    "\"arguments\":\"{}\"},"
    "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"found\"}]";

/* a question, and an answer of three items (its text and two calls), one
 * call's output */
static const gchar *const ONE_ANSWER =
    "{\"items\":[{\"role\":\"user\",\"content\":\"q\"},"
    "{\"role\":\"assistant\",\"content\":\"a\"},"
    "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{}\"},"
    "{\"type\":\"function_call\",\"call_id\":\"c2\",\"name\":\"g\",\"arguments\":\"{}\"},"
    "{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"r\"}]}";

/* ---------- the conversation ---------- */

/* POST, GET, POST (metadata), DELETE; the list shows it with no agent. */
static void
test_conversation_lifecycle(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = create(f, "{\"metadata\":{\"topic\":\"demo\"}}");
	g_autoptr(ConfabTestResponse) got = NULL;
	g_autoptr(ConfabTestResponse) updated = NULL;
	g_autoptr(ConfabTestResponse) listed = NULL;
	g_autoptr(ConfabTestResponse) deleted = NULL;
	g_autoptr(ConfabTestResponse) gone = NULL;
	g_autoptr(ConfabTestResponse) empty = NULL;

	got = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s", id);
	g_assert_cmpuint(got->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(got->json, "id"), ==, id);
	g_assert_cmpstr(confab_test_json_string(got->json, "metadata.topic"), ==, "demo");
	g_assert_cmpint(confab_test_json_int(got->json, "created_at"), >, 0);

	updated = call(f,
		       "POST",
		       f->alice,
		       "{\"metadata\":{\"topic\":\"other\",\"k\":\"v\"}}",
		       "/api/v1/conversations/%s",
		       id);
	g_assert_cmpuint(updated->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(updated->json, "metadata.topic"), ==, "other");
	g_clear_pointer(&got, confab_test_response_free);
	got = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s", id);
	g_assert_cmpstr(confab_test_json_string(got->json, "metadata.k"), ==, "v");

	listed = call(f, "GET", f->alice, NULL, "/api/v1/conversations");
	g_assert_cmpuint(listed->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.0.id"), ==, id);
	g_assert_true(JSON_NODE_HOLDS_NULL(confab_test_json_get(listed->json, "data.0.model")));

	empty = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items", id);
	g_assert_cmpuint(empty->status, ==, 200);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(empty->json, "data"))),
	    ==,
	    0);
	g_assert_false(json_node_get_boolean(confab_test_json_get(empty->json, "has_more")));

	deleted = call(f, "DELETE", f->alice, NULL, "/api/v1/conversations/%s", id);
	g_assert_cmpuint(deleted->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(deleted->json, "object"),
			==,
			"conversation.deleted");
	g_assert_true(json_node_get_boolean(confab_test_json_get(deleted->json, "deleted")));
	gone = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s", id);
	confab_test_assert_error(gone, 404, "conversation_not_found");
}

/* ---------- items ---------- */

/* Items given at creation and added later, listed in both orders, a page
 * at a time; one read and one deleted. */
static void
test_items(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = g_strdup_printf("{\"items\":%s}", FIVE_ITEMS);
	g_autofree gchar *id = create(f, body);
	g_autofree gchar *desc = NULL;
	g_autofree gchar *asc = NULL;
	g_autofree gchar *second = NULL;
	g_autofree gchar *after = NULL;
	g_autofree gchar *rest = NULL;
	g_autofree gchar *left = NULL;
	g_autoptr(ConfabTestResponse) added = NULL;
	g_autoptr(ConfabTestResponse) page = NULL;
	g_autoptr(ConfabTestResponse) item = NULL;
	g_autoptr(ConfabTestResponse) deleted = NULL;
	g_autoptr(ConfabTestResponse) missing = NULL;
	const gchar *two_id;

	added = call(f,
		     "POST",
		     f->alice,
		     "{\"items\":[{\"role\":\"user\",\"content\":\"six\"},"
		     "{\"role\":\"assistant\",\"content\":\"seven\"}]}",
		     "/api/v1/conversations/%s/items",
		     id);
	g_assert_cmpuint(added->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(added->json, "object"), ==, "list");
	second = page_texts(added);
	g_assert_cmpstr(second, ==, "six|seven");

	asc = list_texts(f, id, "?order=asc");
	g_assert_cmpstr(asc, ==, "one|two|three|call:lookup|out:found|six|seven");
	desc = list_texts(f, id, "");
	g_assert_cmpstr(desc, ==, "seven|six|out:found|call:lookup|three|two|one");

	/* pages of two, newest first, by the cursor */
	page = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items?limit=2", id);
	g_assert_cmpuint(page->status, ==, 200);
	g_assert_true(json_node_get_boolean(confab_test_json_get(page->json, "has_more")));
	after =
	    g_strdup_printf("?limit=3&after=%s", confab_test_json_string(page->json, "last_id"));
	rest = list_texts(f, id, after);
	g_assert_cmpstr(rest, ==, "out:found|call:lookup|three");

	/* one item, then gone */
	g_clear_pointer(&page, confab_test_response_free);
	page = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items?order=asc", id);
	two_id = confab_test_json_string(page->json, "data.1.id");
	item = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items/%s", id, two_id);
	g_assert_cmpuint(item->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(item->json, "role"), ==, "assistant");
	g_assert_cmpstr(confab_test_json_string(item->json, "content.0.text"), ==, "two");
	deleted =
	    call(f, "DELETE", f->alice, NULL, "/api/v1/conversations/%s/items/%s", id, two_id);
	g_assert_cmpuint(deleted->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(deleted->json, "id"), ==, id);
	missing = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items/%s", id, two_id);
	confab_test_assert_error(missing, 404, "item_not_found");
	left = list_texts(f, id, "?order=asc");
	g_assert_cmpstr(left, ==, "one|three|call:lookup|out:found|six|seven");
}

/* An answer is several items (its text and its calls, one message): a
 * page of one item at a time, by the cursor, both ways, walks them all;
 * the second item of the message reads and deletes as the message. */
static void
test_items_of_one_message(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = create(f, ONE_ANSWER);
	const gchar *const orders[] = {"asc", "desc"};
	const gchar *const expected[] = {"q|a|call:f|call:g|out:r", "out:r|call:g|call:f|a|q"};
	g_autofree gchar *second = NULL;

	for (guint o = 0; o < G_N_ELEMENTS(orders); o++) {
		g_autoptr(GString) walked = g_string_new(NULL);
		g_autofree gchar *after = NULL;

		for (guint n = 0; n < 10; n++) {
			g_autoptr(ConfabTestResponse) r =
			    call(f,
				 "GET",
				 f->alice,
				 NULL,
				 "/api/v1/conversations/%s/items?limit=1&order=%s%s%s",
				 id,
				 orders[o],
				 after != NULL ? "&after=" : "",
				 after != NULL ? after : "");
			g_autofree gchar *text = NULL;
			g_assert_cmpuint(r->status, ==, 200);
			text = page_texts(r);
			g_string_append_printf(walked, "%s%s", walked->len > 0 ? "|" : "", text);
			if (o == 0 && n == 2)
				second = g_strdup(confab_test_json_string(r->json, "first_id"));
			if (!json_node_get_boolean(confab_test_json_get(r->json, "has_more")))
				break;
			g_free(after);
			after = g_strdup(confab_test_json_string(r->json, "last_id"));
		}
		g_assert_cmpstr(walked->str, ==, expected[o]);
	}
	/* the answer's second item: its first call */
	g_assert_true(g_str_has_suffix(second, "_1"));
	{
		g_autoptr(ConfabTestResponse) item =
		    call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items/%s", id, second);
		g_assert_cmpuint(item->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(item->json, "type"), ==, "function_call");
		g_assert_cmpstr(confab_test_json_string(item->json, "call_id"), ==, "c1");
	}
}

/* The ids of a conversation's items, in order, "|"-separated. */
static gchar *
list_ids(Fixture *f, const gchar *id)
{
	g_autoptr(ConfabTestResponse) r =
	    call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items?order=asc", id);
	JsonArray *data = json_node_get_array(confab_test_json_get(r->json, "data"));
	g_autoptr(GString) out = g_string_new(NULL);

	g_assert_cmpuint(r->status, ==, 200);
	for (guint i = 0; i < json_array_get_length(data); i++)
		g_string_append_printf(
		    out,
		    "%s%s",
		    i > 0 ? "|" : "",
		    confab_test_json_string(json_array_get_element(data, i), "id"));
	return g_string_free(g_steal_pointer(&out), FALSE);
}

static gchar *
create_upstream_agent(Fixture *f, const gchar *model);
static gchar *
last_upstream_messages(Fixture *f);

/* The messages of the upstream's last request (@all holds them). */
static JsonArray *
last_upstream_request(Fixture *f, JsonNode **all)
{
	JsonArray *requests;
	JsonNode *last;

	*all = confab_test_fake_upstream_requests(f->up);
	requests = json_node_get_array(*all);
	last = json_array_get_element(requests, json_array_get_length(requests) - 1);
	return json_node_get_array(confab_test_json_get(last, "body.messages"));
}

/* The calls of the upstream's last request: "id,id|…" per assistant
 * message with calls. */
static gchar *
last_upstream_calls(Fixture *f)
{
	g_autoptr(JsonNode) all = NULL;
	JsonArray *messages = last_upstream_request(f, &all);
	g_autoptr(GString) out = g_string_new(NULL);

	for (guint i = 0; i < json_array_get_length(messages); i++) {
		JsonNode *calls =
		    confab_test_json_get(json_array_get_element(messages, i), "tool_calls");
		if (calls == NULL || !JSON_NODE_HOLDS_ARRAY(calls))
			continue;
		if (out->len > 0)
			g_string_append_c(out, '|');
		for (guint c = 0; c < json_array_get_length(json_node_get_array(calls)); c++)
			g_string_append_printf(
			    out,
			    "%s%s",
			    c > 0 ? "," : "",
			    confab_test_json_string(
				json_array_get_element(json_node_get_array(calls), c),
				"id"));
	}
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* DELETE the item @item of alice's conversation @id. */
static ConfabTestResponse *
delete_item(Fixture *f, const gchar *id, const gchar *item)
{
	return call(f, "DELETE", f->alice, NULL, "/api/v1/conversations/%s/items/%s", id, item);
}

/* The /messages replay of alice's conversation @id, oldest first. */
static ConfabTestResponse *
replay_all(Fixture *f, const gchar *id)
{
	return call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/messages?order=asc", id);
}

/* Deleting one item of a message of several (an answer's text and two
 * calls) deletes that item only: the others stay listed with their ids,
 * and are the next response's context, which lacks only that one; the
 * /messages replay shows the message without it. Its last item left
 * deletes the message. */
static void
test_delete_one_item(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_upstream_agent(f, "plain");
	g_autofree gchar *id = create(f, ONE_ANSWER);
	g_autofree gchar *ids = list_ids(f, id);
	g_auto(GStrv) before = g_strsplit(ids, "|", -1);
	g_autofree gchar *body = NULL;
	g_autofree gchar *context = NULL;
	g_autofree gchar *calls = NULL;
	g_autofree gchar *texts = NULL;
	g_autofree gchar *ids_after = NULL;
	g_autofree gchar *expected_ids = NULL;

	g_assert_cmpuint(g_strv_length(before), ==, 5);
	g_assert_true(g_str_has_suffix(before[3], "_2"));
	body = g_strdup_printf("{\"model\":\"%s\",\"input\":\"next\",\"conversation\":\"%s\"}",
			       agent,
			       id);
	{
		/* before: both calls are the model's context */
		g_autoptr(ConfabTestResponse) r =
		    call(f, "POST", f->alice, body, "/api/v1/responses");
		g_assert_cmpuint(r->status, ==, 200);
		calls = last_upstream_calls(f);
		g_assert_cmpstr(calls, ==, "c1,c2");
		g_clear_pointer(&calls, g_free);
	}
	{
		/* the answer's third item, its second call (c2) */
		g_autoptr(ConfabTestResponse) gone = delete_item(f, id, before[3]);
		g_autoptr(ConfabTestResponse) again = delete_item(f, id, before[3]);
		g_autoptr(ConfabTestResponse) get = call(f,
							 "GET",
							 f->alice,
							 NULL,
							 "/api/v1/conversations/%s/items/%s",
							 id,
							 before[3]);
		g_assert_cmpuint(gone->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(gone->json, "object"), ==, "conversation");
		confab_test_assert_error(again, 404, "item_not_found");
		confab_test_assert_error(get, 404, "item_not_found");
	}
	texts = list_texts(f, id, "?order=asc");
	g_assert_true(g_str_has_prefix(texts, "q|a|call:f|out:r|next|"));
	ids_after = list_ids(f, id);
	expected_ids = g_strdup_printf("%s|%s|%s|%s|", before[0], before[1], before[2], before[4]);
	g_assert_true(g_str_has_prefix(ids_after, expected_ids));
	{
		/* the walk a page at a time, both ways, skips it too */
		g_autofree gchar *one = list_texts(f, id, "?order=desc&limit=2");
		g_autofree gchar *after = g_strdup_printf("?order=desc&after=%s", before[4]);
		g_autofree gchar *rest = list_texts(f, id, after);
		g_assert_cmpstr(rest, ==, "call:f|a|q");
		g_assert_true(g_str_has_suffix(one, "|next"));
	}
	{
		/* the next response's context lacks c2 only */
		g_autoptr(ConfabTestResponse) r =
		    call(f, "POST", f->alice, body, "/api/v1/responses");
		g_assert_cmpuint(r->status, ==, 200);
		calls = last_upstream_calls(f);
		g_assert_cmpstr(calls, ==, "c1");
		context = last_upstream_messages(f);
		g_assert_true(g_str_has_prefix(context, "user:q|assistant:a|tool:r|user:next|"));
	}
	{
		/* the replay shows the message without it */
		g_autoptr(ConfabTestResponse) replay = replay_all(f, id);
		g_autofree gchar *raw =
		    g_strndup(g_bytes_get_data(replay->body, NULL), g_bytes_get_size(replay->body));
		g_assert_cmpuint(replay->status, ==, 200);
		g_assert_null(strstr(raw, "\"c2\""));
		g_assert_nonnull(strstr(raw, "\"c1\""));
		g_assert_nonnull(strstr(raw, "\"deleted\""));
	}
	{
		/* the answer's other items, one by one: the last takes the
		 * message */
		const gchar *rest[] = {before[1], before[2]};
		for (guint i = 0; i < G_N_ELEMENTS(rest); i++) {
			g_autoptr(ConfabTestResponse) gone = delete_item(f, id, rest[i]);
			g_assert_cmpuint(gone->status, ==, 200);
		}
		g_clear_pointer(&texts, g_free);
		texts = list_texts(f, id, "?order=asc&limit=3");
		g_assert_cmpstr(texts, ==, "q|out:r|next");
	}
	{
		g_autoptr(ConfabTestResponse) replay = replay_all(f, id);
		g_assert_cmpstr(confab_test_json_string(replay->json, "data.1.role"), ==, "tool");
	}
}

/* Each bad request is an OpenAI error naming the field, and the
 * conversation is as it was. */
static void
test_bad_input(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = create(f, "{\"items\":[{\"role\":\"user\",\"content\":\"kept\"}]}");
	g_autofree gchar *other = create(f, "{\"items\":[{\"role\":\"user\",\"content\":\"x\"}]}");
	g_autoptr(GString) many = g_string_new("{\"items\":[");
	g_autoptr(GString) pairs = g_string_new("{\"metadata\":{");
	g_autofree gchar *key65 = g_strnfill(65, 'k');
	g_autofree gchar *value513 = g_strnfill(513, 'v');
	g_autofree gchar *long_key = NULL;
	g_autofree gchar *long_value = NULL;
	g_autofree gchar *after = NULL;
	g_autoptr(ConfabTestResponse) other_items = NULL;
	const struct {
		const gchar *body;
		const gchar *param;
	} bad[] = {
	    {"{\"items\":[{\"type\":\"web_search_call\"}]}", "items[0].type"},
	    {"{\"items\":[{\"type\":\"item_reference\",\"id\":\"msg_x\"}]}", "items[0].type"},
	    {"{\"items\":[{\"type\":\"mcp_approval_response\",\"approve\":\"yes\",\"approval_"
	     "request_id\":\"mcpr_x\"}]}",
	     "items[0].approve"},
	    {"{\"items\":[{\"role\":\"user\",\"content\":\"ok\"},{\"role\":\"user\"}]}",
	     "items[1].content"},
	    {"{\"items\":[{\"role\":\"wizard\",\"content\":\"x\"}]}", "items[0].role"},
	    {"{\"items\":[{\"type\":\"function_call\",\"name\":\"f\"}]}", "items[0]"},
	    {"{\"items\":\"hello\"}", "items"},
	    {"{\"items\":[]}", "items"},
	    {"{}", "items"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(ConfabTestResponse) r =
		    call(f, "POST", f->alice, bad[i].body, "/api/v1/conversations/%s/items", id);
		assert_bad(r, bad[i].param, FALSE);
	}
	for (guint i = 0; i <= 1000; i++)
		g_string_append_printf(many,
				       "%s{\"role\":\"user\",\"content\":\"n%u\"}",
				       i > 0 ? "," : "",
				       i);
	g_string_append(many, "]}");
	{
		g_autoptr(ConfabTestResponse) r =
		    call(f, "POST", f->alice, many->str, "/api/v1/conversations/%s/items", id);
		assert_bad(r, "items", FALSE);
	}
	for (guint i = 0; i < 17; i++)
		g_string_append_printf(pairs, "%s\"k%u\":\"v\"", i > 0 ? "," : "", i);
	g_string_append(pairs, "}}");
	long_key = g_strdup_printf("{\"metadata\":{\"%s\":\"v\"}}", key65);
	long_value = g_strdup_printf("{\"metadata\":{\"k\":\"%s\"}}", value513);
	{
		const gchar *bodies[] = {pairs->str, long_key, long_value};
		for (guint i = 0; i < G_N_ELEMENTS(bodies); i++) {
			g_autoptr(ConfabTestResponse) r =
			    call(f, "POST", f->alice, bodies[i], "/api/v1/conversations/%s", id);
			g_autoptr(ConfabTestResponse) c =
			    call(f, "POST", f->alice, bodies[i], "/api/v1/conversations");
			assert_bad(r, "metadata", TRUE);
			assert_bad(c, "metadata", TRUE);
		}
	}
	/* another conversation's item is not this one's */
	other_items = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items", other);
	{
		const gchar *foreign = confab_test_json_string(other_items->json, "data.0.id");
		g_autoptr(ConfabTestResponse) g = call(f,
						       "GET",
						       f->alice,
						       NULL,
						       "/api/v1/conversations/%s/items/%s",
						       id,
						       foreign);
		g_autoptr(ConfabTestResponse) d = call(f,
						       "DELETE",
						       f->alice,
						       NULL,
						       "/api/v1/conversations/%s/items/%s",
						       id,
						       foreign);
		g_autoptr(ConfabTestResponse) l = NULL;
		confab_test_assert_error(g, 404, "item_not_found");
		confab_test_assert_error(d, 404, "item_not_found");
		after = g_strdup_printf("?after=%s", foreign);
		l = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items%s", id, after);
		assert_bad(l, "after", FALSE);
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items/nope", id);
		confab_test_assert_error(r, 404, "item_not_found");
	}
	{
		g_autofree gchar *texts = list_texts(f, id, "");
		g_autoptr(ConfabTestResponse) got =
		    call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s", id);
		g_assert_cmpstr(texts, ==, "kept");
		g_assert_cmpstr(confab_test_json_string(got->json, "metadata"), ==, NULL);
	}
}

/* Another owner's conversation is 404 at every endpoint; a bound token
 * creates its agent's conversations and sees no other. */
static void
test_ownership(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = create(f, "{\"items\":[{\"role\":\"user\",\"content\":\"mine\"}]}");
	g_autofree gchar *bound = NULL;
	g_autofree gchar *other_agent = confab_test_create_agent(f->daemon, "other", "echo");
	g_autofree gchar *other_bound = NULL;
	g_autofree gchar *bound_id = NULL;
	const gchar *const paths[][2] = {
	    {"GET", ""},
	    {"POST", ""},
	    {"DELETE", ""},
	    {"GET", "/items"},
	    {"POST", "/items"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
		g_autoptr(ConfabTestResponse) r =
		    call(f,
			 paths[i][0],
			 f->bob,
			 g_str_equal(paths[i][0], "POST")
			     ? "{\"metadata\":{},\"items\":[{\"role\":\"user\",\"content\":\"x\"}]}"
			     : NULL,
			 "/api/v1/conversations/%s%s",
			 id,
			 paths[i][1]);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	{
		g_autofree gchar *texts = list_texts(f, id, "");
		g_assert_cmpstr(texts, ==, "mine");
	}

	bound = confab_test_create_token(f->daemon, "alice", "chat.completions", f->echo, NULL);
	other_bound =
	    confab_test_create_token(f->daemon, "alice", "chat.completions", other_agent, NULL);
	{
		g_autoptr(ConfabTestResponse) r =
		    call(f, "POST", bound, "{}", "/api/v1/conversations");
		g_autoptr(ConfabTestResponse) listed = NULL;
		g_autoptr(ConfabTestResponse) hidden = NULL;
		g_autoptr(ConfabTestResponse) unbound_hidden = NULL;
		g_assert_cmpuint(r->status, ==, 200);
		bound_id = g_strdup(confab_test_json_string(r->json, "id"));
		listed = call(f, "GET", bound, NULL, "/api/v1/conversations");
		g_assert_cmpstr(confab_test_json_string(listed->json, "data.0.id"), ==, bound_id);
		g_assert_cmpstr(confab_test_json_string(listed->json, "data.0.model"), ==, f->echo);
		hidden = call(f, "GET", other_bound, NULL, "/api/v1/conversations/%s", bound_id);
		confab_test_assert_error(hidden, 404, "conversation_not_found");
		/* alice's conversation without an agent is not the bound token's */
		unbound_hidden = call(f, "GET", bound, NULL, "/api/v1/conversations/%s", id);
		confab_test_assert_error(unbound_hidden, 404, "conversation_not_found");
	}
}

/* ---------- both doors ---------- */

static gchar *
create_upstream_agent(Fixture *f, const gchar *model)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", model);
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "instructions", "s", INSTRUCTIONS);
	g_variant_dict_insert(&dict, "base_url", "s", f->up->base_url);
	g_variant_dict_insert(&dict, "upstream_model", "s", model);
	g_variant_dict_insert(&dict, "api_key", "s", "sk-fake-conversations");
	return confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
}

/* The roles and texts of the upstream's last request, past its
 * instructions: "role:text|…". */
static gchar *
last_upstream_messages(Fixture *f)
{
	g_autoptr(JsonNode) all = NULL;
	JsonArray *messages = last_upstream_request(f, &all);
	g_autoptr(GString) out = g_string_new(NULL);

	g_assert_cmpstr(confab_test_json_string(json_array_get_element(messages, 0), "content"),
			==,
			INSTRUCTIONS);
	for (guint i = 1; i < json_array_get_length(messages); i++) {
		JsonNode *m = json_array_get_element(messages, i);
		JsonNode *content = confab_test_json_get(m, "content");
		if (out->len > 0)
			g_string_append_c(out, '|');
		g_string_append_printf(out, "%s:", confab_test_json_string(m, "role"));
		if (content != NULL && JSON_NODE_HOLDS_VALUE(content))
			g_string_append(out, json_node_get_string(content));
		else if (content != NULL && JSON_NODE_HOLDS_ARRAY(content))
			g_string_append(out, confab_test_json_string(m, "content.0.text"));
	}
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* A conversation made of items, continued by the Responses API with
 * `conversation` (the items are the model's context, and the conversation
 * takes the agent), then by Chat Completions with its session: every
 * turn's messages are listed as items. */
static void
test_both_doors(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_upstream_agent(f, "plain");
	g_autofree gchar *id =
	    create(f,
		   "{\"items\":[{\"role\":\"user\",\"content\":\"remember the number 7\"},"
		   "{\"role\":\"assistant\",\"content\":\"noted\"}]}");
	g_autofree gchar *body = NULL;
	g_autofree gchar *context = NULL;
	g_autofree gchar *texts = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(ConfabTestResponse) listed = NULL;
	g_autoptr(ConfabTestResponse) c = NULL;
	g_autoptr(ConfabTestResponse) both = NULL;

	body = g_strdup_printf("{\"model\":\"%s\",\"input\":\"which number?\","
			       "\"conversation\":\"%s\"}",
			       agent,
			       id);
	r = call(f, "POST", f->alice, body, "/api/v1/responses");
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "conversation.id"), ==, id);
	context = last_upstream_messages(f);
	g_assert_cmpstr(context,
			==,
			"user:remember the number 7|assistant:noted|user:which number?");
	listed = call(f, "GET", f->alice, NULL, "/api/v1/conversations");
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.0.model"), ==, agent);

	/* added between the turns: the next one's context */
	{
		g_autoptr(ConfabTestResponse) a =
		    call(f,
			 "POST",
			 f->alice,
			 "{\"items\":[{\"role\":\"user\",\"content\":\"also 8\"},"
			 "{\"role\":\"assistant\",\"content\":\"ok\"}]}",
			 "/api/v1/conversations/%s/items",
			 id);
		g_assert_cmpuint(a->status, ==, 200);
	}
	c = confab_test_chat(f->daemon, f->alice, agent, id, "and now?", FALSE);
	g_assert_cmpuint(c->status, ==, 200);
	g_clear_pointer(&context, g_free);
	context = last_upstream_messages(f);
	g_assert_true(g_str_has_prefix(context,
				       "user:remember the number 7|assistant:noted|"
				       "user:which number?|assistant:"));
	g_assert_true(g_str_has_suffix(context, "|user:also 8|assistant:ok|user:and now?"));

	both = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items?order=asc", id);
	g_assert_cmpuint(both->status, ==, 200);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(both->json, "data"))),
	    ==,
	    8);
	texts = page_texts(both);
	g_assert_true(g_str_has_prefix(texts, "remember the number 7|noted|which number?|"));
	g_assert_true(g_str_has_suffix(texts, "|also 8|ok|and now?|") ||
		      strstr(texts, "|also 8|ok|and now?|") != NULL);
	{
		/* a conversation without an agent continued first by chat
		 * completions takes its agent too */
		g_autofree gchar *chat_first =
		    create(f, "{\"items\":[{\"role\":\"user\",\"content\":\"from items\"}]}");
		g_autoptr(ConfabTestResponse) c2 =
		    confab_test_chat(f->daemon, f->alice, agent, chat_first, "hello", FALSE);
		g_autoptr(ConfabTestResponse) l2 = NULL;
		g_autofree gchar *ctx2 = NULL;
		g_assert_cmpuint(c2->status, ==, 200);
		ctx2 = last_upstream_messages(f);
		g_assert_cmpstr(ctx2, ==, "user:from items|user:hello");
		l2 = call(f, "GET", f->alice, NULL, "/api/v1/conversations?limit=1");
		g_assert_cmpstr(confab_test_json_string(l2->json, "data.0.id"), ==, chat_first);
		g_assert_cmpstr(confab_test_json_string(l2->json, "data.0.model"), ==, agent);
	}
	{
		/* conversation and previous_response_id together: refused */
		g_autofree gchar *both_body =
		    g_strdup_printf("{\"model\":\"%s\",\"input\":\"x\",\"conversation\":\"%s\","
				    "\"previous_response_id\":\"%s\"}",
				    agent,
				    id,
				    confab_test_json_string(r->json, "id"));
		g_autoptr(ConfabTestResponse) refused =
		    call(f, "POST", f->alice, both_body, "/api/v1/responses");
		assert_bad(refused, "conversation", FALSE);
	}
}

/* What a response's output has of an agent's tools: mcp_call,
 * mcp_approval_request and mcp_approval_response items are kept as they
 * were given, and an mcp_call (the call and its result) is the next
 * response's context as the agent's own call would be. */
static void
test_mcp_items(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_upstream_agent(f, "plain");
	g_autofree gchar *id = create(
	    f,
	    "{\"items\":[{\"role\":\"user\",\"content\":\"list the files\"},"
	    "{\"type\":\"mcp_call\",\"id\":\"mcp_1\",\"server_label\":\"files\","
	    "\"name\":\"list\",\"arguments\":\"{}\",\"output\":\"a.txt b.txt\",\"error\":null},"
	    "{\"type\":\"mcp_approval_request\",\"id\":\"mcpr_1\",\"server_label\":\"files\","
	    "\"name\":\"delete\",\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"},"
	    "{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"mcpr_1\","
	    "\"approve\":false,\"reason\":\"keep it\"}]}");
	g_autoptr(ConfabTestResponse) listed = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autofree gchar *body = NULL;
	g_autofree gchar *context = NULL;
	JsonNode *data_node;

	listed = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items?order=asc", id);
	g_assert_cmpuint(listed->status, ==, 200);
	data_node = confab_test_json_get(listed->json, "data");
	g_assert_cmpuint(json_array_get_length(json_node_get_array(data_node)), ==, 4);
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.1.type"), ==, "mcp_call");
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.1.server_label"), ==, "files");
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.1.name"), ==, "list");
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.1.output"), ==, "a.txt b.txt");
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.2.type"),
			==,
			"mcp_approval_request");
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.2.name"), ==, "delete");
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.2.arguments"),
			==,
			"{\"path\":\"a.txt\"}");
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.3.type"),
			==,
			"mcp_approval_response");
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.3.approval_request_id"),
			==,
			"mcpr_1");
	g_assert_false(json_node_get_boolean(confab_test_json_get(listed->json, "data.3.approve")));
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.3.reason"), ==, "keep it");

	body = g_strdup_printf("{\"model\":\"%s\",\"input\":\"and then?\",\"conversation\":\"%s\"}",
			       agent,
			       id);
	r = call(f, "POST", f->alice, body, "/api/v1/responses");
	g_assert_cmpuint(r->status, ==, 200);
	context = last_upstream_messages(f);
	g_assert_cmpstr(context,
			==,
			"user:list the files|assistant:|tool:a.txt b.txt|user:and then?");

	{
		/* an mcp item that does not parse names its field */
		g_autoptr(ConfabTestResponse) bad = call(
		    f,
		    "POST",
		    f->alice,
		    "{\"items\":[{\"role\":\"user\",\"content\":\"x\"},"
		    "{\"type\":\"mcp_call\",\"server_label\":\"files\",\"arguments\":\"{}\"}]}",
		    "/api/v1/conversations/%s/items",
		    id);
		assert_bad(bad, "items[1].name", FALSE);
	}
}

/* ---------- a turn running ---------- */

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *agent;
	const gchar *session;
	guint status;
} HeldTurn;

static gpointer
held_turn_thread(gpointer data)
{
	HeldTurn *t = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(t->daemon, t->token, t->agent, t->session, "held", FALSE);
	t->status = r->status;
	return NULL;
}

/* Adding or deleting items, or deleting the conversation, while a turn
 * of it runs is 409 conversation_busy, and changes nothing. */
static void
test_busy(Fixture *f, gconstpointer data)
{
	ConfabTestUpstream *up = confab_test_upstream_start(FALSE);
	g_autofree gchar *agent = NULL;
	g_autofree gchar *id = create(f, "{\"items\":[{\"role\":\"user\",\"content\":\"a\"}]}");
	g_autofree gchar *first = NULL;
	HeldTurn held = {f->daemon, f->alice, NULL, id, 0};
	GThread *thread;
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "slow");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", confab_test_upstream_get_base_url(up));
	g_variant_dict_insert(&dict, "upstream_model", "s", "slow-model");
	agent = confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
	{
		g_autoptr(ConfabTestResponse) l =
		    call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s/items", id);
		first = g_strdup(confab_test_json_string(l->json, "first_id"));
	}
	held.agent = agent;
	confab_test_upstream_set_hold(up, TRUE);
	thread = g_thread_new("held-turn", held_turn_thread, &held);
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));
	{
		g_autoptr(ConfabTestResponse) add =
		    call(f,
			 "POST",
			 f->alice,
			 "{\"items\":[{\"role\":\"user\",\"content\":\"b\"}]}",
			 "/api/v1/conversations/%s/items",
			 id);
		g_autoptr(ConfabTestResponse) del = call(f,
							 "DELETE",
							 f->alice,
							 NULL,
							 "/api/v1/conversations/%s/items/%s",
							 id,
							 first);
		g_autoptr(ConfabTestResponse) drop =
		    call(f, "DELETE", f->alice, NULL, "/api/v1/conversations/%s", id);
		confab_test_assert_error(add, 409, "conversation_busy");
		confab_test_assert_error(del, 409, "conversation_busy");
		confab_test_assert_error(drop, 409, "conversation_busy");
	}
	confab_test_upstream_set_hold(up, FALSE);
	g_thread_join(thread);
	g_assert_cmpuint(held.status, ==, 200);
	{
		g_autofree gchar *texts = list_texts(f, id, "?order=asc");
		g_autoptr(ConfabTestResponse) add =
		    call(f,
			 "POST",
			 f->alice,
			 "{\"items\":[{\"role\":\"user\",\"content\":\"b\"}]}",
			 "/api/v1/conversations/%s/items",
			 id);
		g_assert_true(g_str_has_prefix(texts, "a|held|"));
		g_assert_cmpuint(add->status, ==, 200);
	}
	confab_test_upstream_stop(up);
}

/* ---------- administration sees them as any conversation ---------- */

/* the a{sv} of session @id in ListSessions(owner alice), or NULL */
static GVariant *
listed_session(Fixture *f, const gchar *id)
{
	GVariantDict filter;
	g_autoptr(GVariant) sessions = NULL;
	g_autoptr(GError) error = NULL;
	GVariantIter iter;
	GVariant *session;

	g_variant_dict_init(&filter, NULL);
	g_variant_dict_insert(&filter, "owner", "s", "alice");
	confab_dbus_admin_call_list_sessions_sync(f->daemon->admin,
						  g_variant_dict_end(&filter),
						  &sessions,
						  NULL,
						  &error);
	g_assert_no_error(error);
	g_variant_iter_init(&iter, sessions);
	while ((session = g_variant_iter_next_value(&iter)) != NULL) {
		if (g_strcmp0(confab_test_variant_string(session, "id"), id) == 0)
			return session;
		g_variant_unref(session);
	}
	return NULL;
}

static void
test_administration(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = create(
	    f,
	    "{\"items\":[{\"type\":\"message\",\"role\":\"user\",\"content\":\"remember 7\"}]}");
	g_autofree gchar *body =
	    g_strdup_printf("{\"model\":\"%s\",\"conversation\":\"%s\",\"input\":\"and?\"}",
			    f->echo,
			    id);
	g_autoptr(GVariant) before = listed_session(f, id);
	g_autoptr(GVariant) after = NULL;
	g_autoptr(GVariant) messages = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(ConfabTestResponse) gone = NULL;
	g_autoptr(GError) error = NULL;
	GVariantDict options;

	/* listed before its first turn, with no agent yet */
	g_assert_nonnull(before);
	g_assert_cmpstr(confab_test_variant_string(before, "agent_id"), ==, "");
	g_variant_dict_init(&options, NULL);
	confab_dbus_admin_call_get_messages_sync(f->daemon->admin,
						 id,
						 g_variant_dict_end(&options),
						 &messages,
						 NULL,
						 &error);
	g_assert_no_error(error);
	g_assert_cmpuint(g_variant_n_children(messages), ==, 1);
	/* its first response gives it its agent */
	r = call(f, "POST", f->alice, body, "/api/v1/responses");
	g_assert_cmpuint(r->status, ==, 200);
	after = listed_session(f, id);
	g_assert_cmpstr(confab_test_variant_string(after, "agent_id"), ==, f->echo);
	/* deleted by an administrator: gone for its owner too */
	confab_dbus_admin_call_delete_session_sync(f->daemon->admin, id, NULL, &error);
	g_assert_no_error(error);
	gone = call(f, "GET", f->alice, NULL, "/api/v1/conversations/%s", id);
	confab_test_assert_error(gone, 404, "conversation_not_found");
}

int
main(int argc, char **argv)
{
	gint ret;

	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, func) g_test_add(name, Fixture, NULL, fixture_setup, func, fixture_teardown)
	ADD("/confab/conversations/lifecycle", test_conversation_lifecycle);
	ADD("/confab/conversations/items", test_items);
	ADD("/confab/conversations/items-of-one-message", test_items_of_one_message);
	ADD("/confab/conversations/delete-one-item", test_delete_one_item);
	ADD("/confab/conversations/bad-input", test_bad_input);
	ADD("/confab/conversations/ownership", test_ownership);
	ADD("/confab/conversations/both-doors", test_both_doors);
	ADD("/confab/conversations/mcp-items", test_mcp_items);
	ADD("/confab/conversations/busy", test_busy);
	ADD("/confab/conversations/administration", test_administration);
#undef ADD
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
