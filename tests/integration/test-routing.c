/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * Upstream routing end to end: a real confabd whose agents have two
 * targets, each its own tests/fake-upstream, the first scripted to fail in
 * one way. What moves on to the second (no connection, 500, 429, 401, no
 * answer in time, a stream ended before any content) answers from it, by
 * both doors, JSON and streams, and D-Bus Chat.Send, and says so
 * (x-confab-upstream, x-confab-attempts, the metrics); what does not (400,
 * a stream cut after some content) never reaches the second. Then health:
 * a target failing 3 times is skipped, a 429's retry time is respected,
 * and when every target is skipped one is tried anyway.
 */

#define FAKE_TEXT "Hello, world! héllo 🌍"
#define CONFIG	  "[upstream]\nmax_retries = 0\n"
/* a port nobody listens on: connections are refused */
#define REFUSING_URL "http://127.0.0.1:1/v1"

typedef ConfabTestRouted Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	confab_test_routed_start(f, data != NULL ? data : CONFIG);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	confab_test_routed_stop(f);
}

/* An agent whose target "a" is @a_url (or fake a) asking for @a_model
 * (@a_extra: more JSON members), then "b", fake b's plain answer. */
static gchar *
make_agent(Fixture *f, const gchar *a_url, const gchar *a_model, const gchar *a_extra)
{
	g_autofree gchar *upstreams =
	    g_strdup_printf("[{\"label\":\"a\",\"base_url\":\"%s\",\"upstream_model\":\"%s\","
			    "\"api_key\":\"sk-target-a\"%s%s},"
			    "{\"label\":\"b\",\"base_url\":\"%s\",\"upstream_model\":\"plain\","
			    "\"api_key\":\"sk-target-b\"}]",
			    a_url != NULL ? a_url : f->a->base_url,
			    a_model,
			    a_extra != NULL ? "," : "",
			    a_extra != NULL ? a_extra : "",
			    f->b->base_url);
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "routed");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "upstreams", "s", upstreams);
	return confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
}

static guint
n_requests(ConfabTestFakeUpstream *up)
{
	g_autoptr(JsonNode) requests = confab_test_fake_upstream_requests(up);
	return json_array_get_length(json_node_get_array(requests));
}

static const gchar *
header(ConfabTestResponse *r, const gchar *name)
{
	return soup_message_headers_get_one(r->headers, name);
}

/* the text of a chat completions stream, its error event if any */
static gchar *
stream_text(ConfabTestResponse *r, gboolean *had_error)
{
	g_autoptr(GPtrArray) events = confab_test_sse_events(r);
	GString *text = g_string_new(NULL);

	*had_error = FALSE;
	for (guint i = 0; i < events->len; i++) {
		const gchar *data = g_ptr_array_index(events, i);
		g_autoptr(JsonNode) node = NULL;
		JsonNode *content;

		if (g_str_equal(data, "[DONE]"))
			continue;
		node = json_from_string(data, NULL);
		g_assert_nonnull(node);
		if (confab_test_json_get(node, "error") != NULL) {
			*had_error = TRUE;
			continue;
		}
		content = confab_test_json_get(node, "choices.0.delta.content");
		if (content != NULL && JSON_NODE_HOLDS_VALUE(content))
			g_string_append(text, json_node_get_string(content));
	}
	return g_string_free(text, FALSE);
}

static ConfabTestResponse *
responses(Fixture *f, const gchar *agent, gboolean stream)
{
	g_autofree gchar *body =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":\"hi\",\"stream\":%s}",
			    agent,
			    stream ? "true" : "false");
	return confab_test_http(f->daemon, "POST", "/api/v1/responses", f->token, body);
}

/* The stored answer of the conversation @session names its target. */
static void
assert_stored_target(Fixture *f, const gchar *session, const gchar *label, gint64 attempts)
{
	g_autofree gchar *path =
	    g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session);
	g_autoptr(ConfabTestResponse) r = confab_test_http(f->daemon, "GET", path, f->token, NULL);

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "data.1.role"), ==, "assistant");
	g_assert_cmpstr(confab_test_json_string(r->json, "data.1.upstream.label"), ==, label);
	g_assert_cmpstr(confab_test_json_string(r->json, "data.1.upstream.upstream_model"),
			==,
			g_str_equal(label, "b") ? "plain" : NULL);
	g_assert_cmpint(confab_test_json_int(r->json, "data.1.upstream.attempts"), ==, attempts);
	/* the user's message came from no upstream */
	g_assert_true(JSON_NODE_HOLDS_NULL(confab_test_json_get(r->json, "data.0.upstream")));
}

/* Every door answers from "b", after trying "a" once per model call. */
static void
assert_fails_over(Fixture *f, const gchar *agent, gboolean dbus)
{
	guint b_before = n_requests(f->b);
	guint calls = 0;

	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.message.content"),
				==,
				FAKE_TEXT);
		g_assert_cmpstr(header(r, "x-confab-upstream"), ==, "b");
		g_assert_cmpstr(header(r, "x-confab-attempts"), ==, "2");
		assert_stored_target(f,
				     confab_test_json_string(r->json, "metadata.session_id"),
				     "b",
				     2);
		calls++;
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", TRUE);
		gboolean had_error = TRUE;
		g_autofree gchar *text = NULL;

		g_assert_cmpuint(r->status, ==, 200);
		text = stream_text(r, &had_error);
		/* one answer, not spliced from two upstreams */
		g_assert_cmpstr(text, ==, FAKE_TEXT);
		g_assert_false(had_error);
		calls++;
	}
	{
		g_autoptr(ConfabTestResponse) r = responses(f, agent, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(r->json, "status"), ==, "completed");
		g_assert_cmpstr(header(r, "x-confab-upstream"), ==, "b");
		calls++;
	}
	{
		g_autoptr(ConfabTestResponse) r = responses(f, agent, TRUE);
		gsize len;
		const gchar *body = g_bytes_get_data(r->body, &len);
		g_autofree gchar *text = g_strndup(body, len);

		g_assert_cmpuint(r->status, ==, 200);
		g_assert_nonnull(strstr(text, "event: response.completed"));
		g_assert_null(strstr(text, "event: response.failed"));
		calls++;
	}
	if (dbus) {
		g_autoptr(GError) error = NULL;
		g_autofree gchar *session = NULL;
		g_autofree gchar *reply = NULL;

		confab_dbus_chat_call_send_sync(f->daemon->chat,
						agent,
						"",
						"hi",
						&session,
						&reply,
						NULL,
						&error);
		g_assert_no_error(error);
		g_assert_cmpstr(reply, ==, FAKE_TEXT);
		calls++;
	}
	g_assert_cmpuint(n_requests(f->b), ==, b_before + calls);
}

static void
test_refused(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = make_agent(f, REFUSING_URL, "plain", NULL);
	assert_fails_over(f, agent, TRUE);
}

static void
test_500(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = make_agent(f, NULL, "500", NULL);
	assert_fails_over(f, agent, TRUE);
	g_assert_cmpuint(n_requests(f->a), >=, 3);
}

static void
test_429(Fixture *f, gconstpointer data)
{
	/* Retry-After: 1 from "a", which is then skipped for that second: a
	 * call made within it goes to "b" at once */
	g_autofree gchar *agent = make_agent(f, NULL, "429:1000", NULL);
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", FALSE);

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(header(r, "x-confab-upstream"), ==, "b");
	g_assert_cmpuint(n_requests(f->a), ==, 1);
}

/* A target's own retries (max_retries = 2 here) come first and honour
 * the upstream's wait: Retry-After: 1 is waited for, twice; a
 * retry-after-ms longer than the time left moves on at once. */
static void
test_retry_after(Fixture *f, gconstpointer data)
{
	g_autofree gchar *waits = make_agent(f, NULL, "429:1000", NULL);
	g_autofree gchar *too_long = make_agent(f, NULL, "429ms:600000", NULL);
	guint a_before;

	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->token, waits, NULL, "hi", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(header(r, "x-confab-upstream"), ==, "b");
		g_assert_cmpuint(n_requests(f->a), ==, 3);
	}
	a_before = n_requests(f->a);
	{
		/* retry-after-ms wins over its Retry-After: 1 */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->token, too_long, NULL, "hi", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(header(r, "x-confab-upstream"), ==, "b");
		g_assert_cmpuint(n_requests(f->a), ==, a_before + 1);
	}
}

static void
test_401(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = make_agent(f, NULL, "status:401", NULL);
	assert_fails_over(f, agent, FALSE);
}

static void
test_hang(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = make_agent(f, NULL, "hang", "\"first_byte_timeout\":1");
	g_autoptr(ConfabTestResponse) json =
	    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", FALSE);
	g_autoptr(ConfabTestResponse) stream =
	    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", TRUE);
	gboolean had_error = TRUE;
	g_autofree gchar *text = NULL;

	g_assert_cmpuint(json->status, ==, 200);
	g_assert_cmpstr(header(json, "x-confab-upstream"), ==, "b");
	g_assert_cmpstr(header(json, "x-confab-attempts"), ==, "2");
	g_assert_cmpuint(stream->status, ==, 200);
	text = stream_text(stream, &had_error);
	g_assert_cmpstr(text, ==, FAKE_TEXT);
	g_assert_false(had_error);
}

static void
test_close_empty(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = make_agent(f, NULL, "close-empty", NULL);
	assert_fails_over(f, agent, FALSE);
}

/* A stream cut after some content is never finished by another upstream:
 * the client gets what was said and the error, as without routing. */
static void
test_close_after_content(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = make_agent(f, NULL, "close", NULL);
	g_autoptr(ConfabTestResponse) stream =
	    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", TRUE);
	g_autoptr(ConfabTestResponse) json =
	    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", FALSE);
	gboolean had_error = FALSE;
	g_autofree gchar *text = stream_text(stream, &had_error);

	g_assert_cmpstr(text, ==, "Half an answer");
	g_assert_true(had_error);
	g_assert_cmpuint(json->status, >=, 500);
	g_assert_cmpstr(header(json, "x-confab-upstream"), ==, "a");
	g_assert_cmpstr(header(json, "x-confab-attempts"), ==, "1");
	g_assert_cmpuint(n_requests(f->b), ==, 0);
}

/* 400, 404, 413, 422: the request's own fault, never another target's */
static void
test_request_fault(Fixture *f, gconstpointer data)
{
	const gchar *const statuses[] = {"status:400", "status:404", "status:413", "status:422"};

	for (guint i = 0; i < G_N_ELEMENTS(statuses); i++) {
		g_autofree gchar *agent = make_agent(f, NULL, statuses[i], NULL);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", FALSE);

		g_assert_cmpuint(r->status, >=, 400);
		g_assert_cmpstr(header(r, "x-confab-attempts"), ==, "1");
	}
	g_assert_cmpuint(n_requests(f->b), ==, 0);
}

/* every target down: an error after each was tried once */
static void
test_all_down(Fixture *f, gconstpointer data)
{
	g_autofree gchar *upstreams = g_strdup_printf(
	    "[{\"label\":\"a\",\"base_url\":\"%s\",\"upstream_model\":\"500\"},"
	    "{\"label\":\"b\",\"base_url\":\"%s\",\"upstream_model\":\"status:503\"}]",
	    f->a->base_url,
	    f->b->base_url);
	g_autoptr(GVariantDict) dict = g_variant_dict_new(NULL);
	g_autofree gchar *agent = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;

	g_variant_dict_insert(dict, "name", "s", "down");
	g_variant_dict_insert(dict, "provider", "s", "openai");
	g_variant_dict_insert(dict, "upstreams", "s", upstreams);
	agent = confab_test_create_agent_props(f->daemon, g_variant_dict_end(dict));
	r = confab_test_chat(f->daemon, f->token, agent, NULL, "hi", FALSE);
	confab_test_assert_error(r, 502, "upstream_error");
	g_assert_cmpstr(header(r, "x-confab-upstream"), ==, "b");
	g_assert_cmpstr(header(r, "x-confab-attempts"), ==, "2");
	g_assert_cmpuint(n_requests(f->a), ==, 1);
	g_assert_cmpuint(n_requests(f->b), ==, 1);
}

/* In the agent loop each model call is routed on its own: "a" asks for a
 * tool, the tool runs once, "a" then fails and "b" answers; the tool never
 * runs again. */
static void
test_tools_in_loop(Fixture *f, gconstpointer data)
{
	g_autofree gchar *dir = confab_test_make_tmpdir("routing-tools");
	g_autofree gchar *record = g_build_filename(dir, "mcp.jsonl", NULL);
	g_autofree gchar *servers = g_strdup_printf(
	    "{\"mcpServers\":{\"fake\":{\"command\":\"%s\",\"args\":[\"--record\",\"%s\"]}}}",
	    g_getenv("CONFAB_FAKE_MCP"),
	    record);
	g_autofree gchar *upstreams = g_strdup_printf(
	    "[{\"label\":\"a\",\"base_url\":\"%s\",\"upstream_model\":\"call-once:fake__echo\"},"
	    "{\"label\":\"b\",\"base_url\":\"%s\",\"upstream_model\":\"tools\"}]",
	    f->a->base_url,
	    f->b->base_url);
	g_autoptr(GVariantDict) dict = g_variant_dict_new(NULL);
	g_autofree gchar *agent = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autofree gchar *recorded = NULL;
	g_auto(GStrv) lines = NULL;
	guint tool_calls = 0;

	g_variant_dict_insert(dict, "name", "s", "hands");
	g_variant_dict_insert(dict, "provider", "s", "openai");
	g_variant_dict_insert(dict, "upstreams", "s", upstreams);
	g_variant_dict_insert(dict, "mcp_servers", "s", servers);
	agent = confab_test_create_agent_props(f->daemon, g_variant_dict_end(dict));
	r = confab_test_chat(f->daemon, f->token, agent, NULL, "hi", FALSE);
	g_assert_cmpuint(r->status, ==, 200);
	/* what "tools" says after a tool result */
	g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.message.content"),
			==,
			"It is sunny in Paris.");
	/* two model calls: "a" (1), then "a" and "b" (2) */
	g_assert_cmpstr(header(r, "x-confab-upstream"), ==, "b");
	g_assert_cmpstr(header(r, "x-confab-attempts"), ==, "3");
	g_assert_cmpuint(n_requests(f->a), ==, 2);
	g_assert_cmpuint(n_requests(f->b), ==, 1);
	g_assert_true(g_file_get_contents(record, &recorded, NULL, NULL));
	lines = g_strsplit(recorded, "\n", -1);
	for (guint i = 0; lines[i] != NULL; i++)
		if (strstr(lines[i], "\"tools/call\"") != NULL)
			tool_calls++;
	g_assert_cmpuint(tool_calls, ==, 1);
	confab_test_rm_rf(dir);
}

/* ---------- hedging ---------- */

static gint64
aborted_streams(ConfabTestFakeUpstream *up)
{
	g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 30, NULL);
	g_autofree gchar *uri = g_strconcat(up->url, "/_stats", NULL);
	g_autoptr(SoupMessage) msg = soup_message_new("GET", uri);
	g_autoptr(GBytes) body = soup_session_send_and_read(session, msg, NULL, NULL);
	g_autofree gchar *text = NULL;
	g_autoptr(JsonNode) stats = NULL;

	g_assert_nonnull(body);
	text = g_strndup(g_bytes_get_data(body, NULL), g_bytes_get_size(body));
	stats = json_from_string(text, NULL);
	return confab_test_json_int(stats, "aborted");
}

static gboolean
a_was_cancelled(gpointer data)
{
	Fixture *f = data;
	return aborted_streams(f->a) >= 1;
}

static gchar *
scrape(Fixture *f);
static gdouble
sample(const gchar *text, const gchar *series);

/* "a" sends nothing: after hedge_after_ms "b" starts beside it, answers
 * first and wins; "a" is cancelled; both show in the metrics */
static void
test_hedge(Fixture *f, gconstpointer data)
{
	g_autofree gchar *upstreams =
	    g_strdup_printf("[{\"label\":\"a\",\"base_url\":\"%s\",\"upstream_model\":\"hang\"},"
			    "{\"label\":\"b\",\"base_url\":\"%s\",\"upstream_model\":\"plain\"}]",
			    f->a->base_url,
			    f->b->base_url);
	g_autoptr(GVariantDict) dict = g_variant_dict_new(NULL);
	g_autofree gchar *agent = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *series = NULL;
	gboolean had_error = TRUE;

	g_variant_dict_insert(dict, "name", "s", "hedged");
	g_variant_dict_insert(dict, "provider", "s", "openai");
	g_variant_dict_insert(dict, "upstreams", "s", upstreams);
	g_variant_dict_insert(dict, "routing", "s", "{\"hedge_after_ms\":200}");
	agent = confab_test_create_agent_props(f->daemon, g_variant_dict_end(dict));
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.message.content"),
				==,
				FAKE_TEXT);
		g_assert_cmpstr(header(r, "x-confab-upstream"), ==, "b");
		g_assert_cmpstr(header(r, "x-confab-attempts"), ==, "2");
		assert_stored_target(f,
				     confab_test_json_string(r->json, "metadata.session_id"),
				     "b",
				     2);
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", TRUE);
		g_autofree gchar *streamed = stream_text(r, &had_error);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(streamed, ==, FAKE_TEXT);
		g_assert_false(had_error);
	}
	/* the loser's request was cancelled, not left to run */
	g_assert_true(confab_test_wait_until(a_was_cancelled, f, 30000));
	g_assert_cmpuint(n_requests(f->a), ==, 2);
	text = scrape(f);
	series = g_strdup_printf(
	    "confab_upstream_attempts_total{agent=\"%s\",target=\"a\",outcome=\"hedge_lost\"}",
	    agent);
	g_assert_cmpfloat(sample(text, series), ==, 2);
	g_free(series);
	series = g_strdup_printf(
	    "confab_upstream_attempts_total{agent=\"%s\",target=\"b\",outcome=\"ok\"}",
	    agent);
	g_assert_cmpfloat(sample(text, series), ==, 2);
}

/* ---------- visible: metrics, health ---------- */

static gchar *
scrape(Fixture *f)
{
	g_autofree gchar *token =
	    confab_test_create_token(f->daemon, "prometheus", "metrics.read", NULL, NULL);
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(f->daemon, "GET", "/metrics", token, NULL);
	gsize len;
	const gchar *body = g_bytes_get_data(r->body, &len);

	g_assert_cmpuint(r->status, ==, 200);
	return g_strndup(body, len);
}

/* the value of the sample "name{labels}", or -1 */
static gdouble
sample(const gchar *text, const gchar *series)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	gsize len = strlen(series);

	for (guint i = 0; lines[i] != NULL; i++)
		if (strncmp(lines[i], series, len) == 0 && lines[i][len] == ' ')
			return g_ascii_strtod(lines[i] + len + 1, NULL);
	return -1;
}

static GVariant *
health_of(Fixture *f, const gchar *agent, guint index)
{
	g_autoptr(GVariant) targets = NULL;
	g_autoptr(GError) error = NULL;

	confab_dbus_admin_call_get_agent_health_sync(f->daemon->admin,
						     agent,
						     &targets,
						     NULL,
						     &error);
	g_assert_no_error(error);
	g_assert_cmpuint(g_variant_n_children(targets), ==, 2);
	return g_variant_get_child_value(targets, index);
}

static gchar *
state_of(Fixture *f, const gchar *agent, guint index)
{
	g_autoptr(GVariant) health = health_of(f, agent, index);
	return g_strdup(confab_test_variant_string(health, "state"));
}

static gchar *
chat_target(Fixture *f, const gchar *agent, gchar **attempts)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", FALSE);

	g_assert_cmpuint(r->status, ==, 200);
	if (attempts != NULL)
		*attempts = g_strdup(header(r, "x-confab-attempts"));
	return g_strdup(header(r, "x-confab-upstream"));
}

/* 3 failures in a row: the target is skipped (no more requests reach it),
 * D-Bus and the metrics say so */
static void
test_health_skip(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = make_agent(f, NULL, "500", NULL);
	g_autofree gchar *state = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *series = NULL;
	g_autoptr(GVariant) a = NULL;

	for (guint i = 0; i < 3; i++) {
		g_autofree gchar *attempts = NULL;
		g_autofree gchar *target = chat_target(f, agent, &attempts);
		g_assert_cmpstr(target, ==, "b");
		g_assert_cmpstr(attempts, ==, "2");
	}
	state = state_of(f, agent, 0);
	g_assert_cmpstr(state, ==, "skipped");
	a = health_of(f, agent, 0);
	g_assert_nonnull(strstr(confab_test_variant_string(a, "last_error"), "500"));
	g_assert_null(strstr(confab_test_variant_string(a, "last_error"), "sk-target-a"));
	for (guint i = 0; i < 3; i++) {
		g_autofree gchar *attempts = NULL;
		g_autofree gchar *target = chat_target(f, agent, &attempts);
		g_assert_cmpstr(target, ==, "b");
		g_assert_cmpstr(attempts, ==, "1");
	}
	g_assert_cmpuint(n_requests(f->a), ==, 3);
	text = scrape(f);
	series = g_strdup_printf("confab_upstream_target_up{agent=\"%s\",target=\"a\"}", agent);
	g_assert_cmpfloat(sample(text, series), ==, 0);
	g_free(series);
	series = g_strdup_printf("confab_upstream_target_up{agent=\"%s\",target=\"b\"}", agent);
	g_assert_cmpfloat(sample(text, series), ==, 1);
	g_free(series);
	series = g_strdup_printf(
	    "confab_upstream_attempts_total{agent=\"%s\",target=\"a\",outcome=\"error\"}",
	    agent);
	g_assert_cmpfloat(sample(text, series), ==, 3);
	g_free(series);
	series = g_strdup_printf(
	    "confab_upstream_attempts_total{agent=\"%s\",target=\"b\",outcome=\"ok\"}",
	    agent);
	g_assert_cmpfloat(sample(text, series), ==, 6);
}

typedef struct {
	Fixture *f;
	const gchar *agent;
	guint a_before;
} Probe;

static gboolean
probed(gpointer data)
{
	Probe *p = data;
	g_autofree gchar *target = chat_target(p->f, p->agent, NULL);

	return n_requests(p->f->a) > p->a_before;
}

/* once the skip is over, one call probes the target; failing again, it
 * is skipped again (longer) */
static void
test_health_probe(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = make_agent(f, NULL, "500", NULL);
	Probe p = {f, agent, 0};
	g_autofree gchar *state = NULL;

	for (guint i = 0; i < 3; i++)
		g_free(chat_target(f, agent, NULL));
	state = state_of(f, agent, 0);
	g_assert_cmpstr(state, ==, "skipped");
	p.a_before = n_requests(f->a);
	g_assert_cmpuint(p.a_before, ==, 3);
	/* health_skip_ms is 300 here: the probe comes within the bound */
	g_assert_true(confab_test_wait_until(probed, &p, 30000));
	g_free(state);
	state = state_of(f, agent, 0);
	g_assert_cmpstr(state, ==, "skipped");
	g_assert_cmpuint(n_requests(f->a), ==, 4);
}

/* a 429's retry time: skipped until then, after one failure */
static void
test_health_retry_after(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = make_agent(f, NULL, "429ms:600000", NULL);
	g_autoptr(GVariant) a = NULL;
	gint64 until = 0;

	for (guint i = 0; i < 3; i++) {
		g_autofree gchar *target = chat_target(f, agent, NULL);
		g_assert_cmpstr(target, ==, "b");
	}
	g_assert_cmpuint(n_requests(f->a), ==, 1);
	a = health_of(f, agent, 0);
	g_assert_cmpstr(confab_test_variant_string(a, "state"), ==, "skipped");
	g_assert_true(g_variant_lookup(a, "skip_until", "x", &until));
	g_assert_cmpint(until, >=, g_get_real_time() / G_USEC_PER_SEC + 500);
}

/* every target skipped: one is tried anyway, and a call still answers
 * when one has come back */
static void
test_health_all_skipped(Fixture *f, gconstpointer data)
{
	g_autofree gchar *upstreams = g_strdup_printf(
	    "[{\"label\":\"a\",\"base_url\":\"%s\",\"upstream_model\":\"500\"},"
	    "{\"label\":\"b\",\"base_url\":\"%s\",\"upstream_model\":\"429ms:600000\"}]",
	    f->a->base_url,
	    f->b->base_url);
	g_autoptr(GVariantDict) dict = g_variant_dict_new(NULL);
	g_autofree gchar *agent = NULL;
	g_autofree gchar *a_state = NULL;
	g_autofree gchar *b_state = NULL;

	g_variant_dict_insert(dict, "name", "s", "down");
	g_variant_dict_insert(dict, "provider", "s", "openai");
	g_variant_dict_insert(dict, "upstreams", "s", upstreams);
	agent = confab_test_create_agent_props(f->daemon, g_variant_dict_end(dict));
	/* the last target's error: a 500's 502, or its 429 relayed */
	for (guint i = 0; i < 3; i++) {
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", FALSE);
		g_assert_true(r->status == 429 || r->status >= 500);
	}
	a_state = state_of(f, agent, 0);
	b_state = state_of(f, agent, 1);
	g_assert_cmpstr(a_state, ==, "skipped");
	g_assert_cmpstr(b_state, ==, "skipped");
	{
		guint before = n_requests(f->a) + n_requests(f->b);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->token, agent, NULL, "hi", FALSE);
		g_assert_true(r->status == 429 || r->status >= 500);
		/* tried anyway: an agent never fails without trying */
		g_assert_cmpuint(n_requests(f->a) + n_requests(f->b), >, before);
	}
}

int
main(int argc, char **argv)
{
	gint ret;

	confab_test_init(&argc, &argv, TRUE);
	if (g_getenv("CONFAB_FAKE_UPSTREAM") == NULL) {
		g_printerr(
		    "SKIP: CONFAB_FAKE_UPSTREAM is not set; run the tests with meson test\n");
		return CONFAB_TEST_SKIP;
	}
#define ADD(name, func)                                                                            \
	g_test_add("/confab/routing/" name, Fixture, NULL, fixture_setup, func, fixture_teardown)
	ADD("refused", test_refused);
	ADD("500", test_500);
	ADD("429", test_429);
	ADD("401", test_401);
	g_test_add("/confab/routing/retry-after",
		   Fixture,
		   "[upstream]\nmax_retries = 2\n",
		   fixture_setup,
		   test_retry_after,
		   fixture_teardown);
	ADD("hang", test_hang);
	ADD("close-empty", test_close_empty);
	ADD("close-after-content", test_close_after_content);
	ADD("request-fault", test_request_fault);
	ADD("all-down", test_all_down);
	if (g_getenv("CONFAB_FAKE_MCP") != NULL)
		ADD("tools-in-loop", test_tools_in_loop);
	ADD("hedge", test_hedge);
	ADD("health-skip", test_health_skip);
	ADD("health-retry-after", test_health_retry_after);
	ADD("health-all-skipped", test_health_all_skipped);
	g_test_add("/confab/routing/health-probe",
		   Fixture,
		   CONFIG "health_skip_ms = 300\n",
		   fixture_setup,
		   test_health_probe,
		   fixture_teardown);
#undef ADD
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
