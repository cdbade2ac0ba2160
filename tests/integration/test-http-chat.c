/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/* POST /api/v1/chat/completions end to end, against a real confabd. */

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

static void
test_json_reply(Fixture *f, gconstpointer data)
{
	const gchar *text = "  Hello,\tworld!  héllo 🌍 \n";
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(f->daemon, f->token, f->agent, NULL, text, FALSE);
	const gchar *session_id;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_nonnull(r->json);
	g_assert_cmpstr(confab_test_json_string(r->json, "object"), ==, "chat.completion");
	g_assert_cmpstr(confab_test_json_string(r->json, "model"), ==, f->agent);
	g_assert_true(g_str_has_prefix(confab_test_json_string(r->json, "id"), "chatcmpl-"));
	g_assert_cmpint(confab_test_json_int(r->json, "choices.0.index"), ==, 0);
	g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.message.role"),
			==,
			"assistant");
	/* echo answers with the exact text */
	g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.message.content"), ==, text);
	g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.finish_reason"), ==, "stop");
	session_id = confab_test_json_string(r->json, "metadata.session_id");
	g_assert_true(g_str_has_prefix(session_id, "cts_"));
	g_assert_cmpstr(soup_message_headers_get_one(r->headers, "x-session-id"), ==, session_id);
	g_assert_true(
	    g_str_has_prefix(confab_test_json_string(r->json, "metadata.assistant_message_id"),
			     "msg_"));
	g_assert_cmpint(confab_test_json_int(r->json, "usage.completion_tokens"), ==, 4);
	g_assert_cmpint(confab_test_json_int(r->json, "usage.total_tokens"),
			==,
			confab_test_json_int(r->json, "usage.prompt_tokens") + 4);
	/* no quota configured: no rate-limit headers */
	g_assert_null(soup_message_headers_get_one(r->headers, "x-ratelimit-limit-requests"));
}

static void
test_stream(Fixture *f, gconstpointer data)
{
	const gchar *text = "one two  three";
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\":\"%s\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
	    "\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}",
	    f->agent,
	    text);
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->token, body);
	g_autoptr(GPtrArray) events = NULL;
	g_autoptr(GString) joined = g_string_new(NULL);
	const gchar *session_id = soup_message_headers_get_one(r->headers, "x-session-id");
	g_autofree gchar *message_id = NULL;
	guint n_content = 0;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(soup_message_headers_get_content_type(r->headers, NULL),
			==,
			"text/event-stream");
	g_assert_cmpstr(soup_message_headers_get_one(r->headers, "x-accel-buffering"), ==, "no");
	g_assert_true(g_str_has_prefix(session_id, "cts_"));

	events = confab_test_sse_events(r);
	g_assert_cmpuint(events->len, >=, 4);
	g_assert_cmpstr(g_ptr_array_index(events, events->len - 1), ==, "[DONE]");
	for (guint i = 0; i + 1 < events->len; i++) {
		g_autoptr(JsonNode) node = json_from_string(g_ptr_array_index(events, i), NULL);
		JsonNode *choices;
		g_assert_nonnull(node);
		g_assert_cmpstr(confab_test_json_string(node, "object"),
				==,
				"chat.completion.chunk");
		g_assert_cmpstr(confab_test_json_string(node, "model"), ==, f->agent);
		g_assert_cmpstr(confab_test_json_string(node, "metadata.session_id"),
				==,
				session_id);
		if (message_id == NULL)
			message_id = g_strdup(
			    confab_test_json_string(node, "metadata.assistant_message_id"));
		g_assert_cmpstr(confab_test_json_string(node, "metadata.assistant_message_id"),
				==,
				message_id);
		choices = confab_test_json_get(node, "choices");
		if (i == 0)
			g_assert_cmpstr(confab_test_json_string(node, "choices.0.delta.role"),
					==,
					"assistant");
		if (i == events->len - 2) {
			/* the usage chunk closes the stream */
			g_assert_cmpuint(json_array_get_length(json_node_get_array(choices)),
					 ==,
					 0);
			g_assert_cmpint(confab_test_json_int(node, "usage.completion_tokens"),
					==,
					3);
			continue;
		}
		if (i == events->len - 3) {
			g_assert_cmpstr(confab_test_json_string(node, "choices.0.finish_reason"),
					==,
					"stop");
			continue;
		}
		if (confab_test_json_string(node, "choices.0.delta.content") != NULL) {
			g_string_append(joined,
					confab_test_json_string(node, "choices.0.delta.content"));
			n_content++;
		}
	}
	/* word-sized deltas that join back to the exact text */
	g_assert_cmpstr(joined->str, ==, text);
	g_assert_cmpuint(n_content, >=, 3);
}

static void
test_continue(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) first =
	    confab_test_chat(f->daemon, f->token, f->agent, NULL, "first", FALSE);
	const gchar *session_id = confab_test_json_string(first->json, "metadata.session_id");
	g_autoptr(ConfabTestResponse) second =
	    confab_test_chat(f->daemon, f->token, f->agent, session_id, "second", FALSE);
	g_autofree gchar *path = NULL;
	g_autoptr(ConfabTestResponse) list = NULL;
	g_autofree gchar *full = NULL;
	g_autoptr(ConfabTestResponse) resent = NULL;
	g_autoptr(ConfabTestResponse) list2 = NULL;

	g_assert_cmpuint(second->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(second->json, "metadata.session_id"),
			==,
			session_id);
	g_assert_cmpstr(confab_test_json_string(second->json, "choices.0.message.content"),
			==,
			"second");

	path = g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session_id);
	list = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(list->status, ==, 200);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(list->json, "data"))),
	    ==,
	    4);
	g_assert_cmpstr(confab_test_json_string(list->json, "data.0.role"), ==, "user");
	g_assert_cmpstr(confab_test_json_string(list->json, "data.0.content.0.text"), ==, "first");
	g_assert_cmpstr(confab_test_json_string(list->json, "data.3.role"), ==, "assistant");
	g_assert_cmpstr(confab_test_json_string(list->json, "data.3.content.0.text"), ==, "second");

	/* a client that resends the whole history stores only what is new */
	full =
	    g_strdup_printf("{\"model\":\"%s\",\"metadata\":{\"session_id\":\"%s\"},\"messages\":["
			    "{\"role\":\"user\",\"content\":\"first\"},"
			    "{\"role\":\"assistant\",\"content\":\"first\"},"
			    "{\"role\":\"user\",\"content\":\"second\"},"
			    "{\"role\":\"assistant\",\"content\":\"second\"},"
			    "{\"role\":\"user\",\"content\":\"third\"}]}",
			    f->agent,
			    session_id);
	resent = confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->token, full);
	g_assert_cmpuint(resent->status, ==, 200);
	list2 = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(list2->json, "data"))),
	    ==,
	    6);
	g_assert_cmpstr(confab_test_json_string(list2->json, "data.4.content.0.text"), ==, "third");
}

/* A few hundred turns of every kind, then a clean stop: under the valgrind
 * setup this is the daemon's leak check. */
static void
test_many_turns(Fixture *f, gconstpointer data)
{
	g_autofree gchar *session_id = NULL;

	for (guint i = 0; i < 300; i++) {
		g_autofree gchar *text = g_strdup_printf("turn %u: héllo wörld 🌍", i);
		gboolean stream = i % 2 == 1;
		g_autoptr(ConfabTestResponse) r = confab_test_chat(f->daemon,
								   f->token,
								   f->agent,
								   i % 3 == 2 ? session_id : NULL,
								   text,
								   stream);
		g_assert_cmpuint(r->status, ==, 200);
		if (session_id == NULL)
			session_id =
			    g_strdup(soup_message_headers_get_one(r->headers, "x-session-id"));
		if (i % 10 == 0) {
			g_autofree gchar *path =
			    g_strdup_printf("/api/v1/conversations/%s/messages?limit=5",
					    session_id);
			g_autoptr(ConfabTestResponse) l1 = confab_test_http(f->daemon,
									    "GET",
									    "/api/v1/conversations",
									    f->token,
									    NULL);
			g_autoptr(ConfabTestResponse) l2 =
			    confab_test_http(f->daemon, "GET", path, f->token, NULL);
			g_assert_cmpuint(l1->status, ==, 200);
			g_assert_cmpuint(l2->status, ==, 200);
		}
	}
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
	g_test_add("/confab/http-chat/json",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_json_reply,
		   fixture_teardown);
	g_test_add("/confab/http-chat/stream",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_stream,
		   fixture_teardown);
	g_test_add("/confab/http-chat/continue",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_continue,
		   fixture_teardown);
	g_test_add("/confab/http-chat/many-turns",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_many_turns,
		   fixture_teardown);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
