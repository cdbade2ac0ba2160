/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * The stream's head waits for an answer (issue 29, contract "The stream's
 * head"): by both doors, a streamed turn's 200 goes out once an upstream
 * answered its first model call with a success status, not before and not
 * later (an upstream that answered and says nothing yet: the head is
 * there); a turn that fails before it answers a real HTTP error, as a JSON
 * one does — the upstream's 400/404/413/422 relayed, 429 with
 * Retry-After, 502, 504 — and routing still moves on first. After the head
 * (at the latest [http] stream_head_wait), failures stay in the stream.
 */

#define FAKE_TEXT "Hello, world! héllo 🌍"
#define CONFIG	  "[upstream]\nmax_retries = 0\n"
/* the head can only go out because an upstream answered */
#define CONFIG_NO_WAIT "[upstream]\nmax_retries = 0\n[http]\nstream_head_wait = 3600\n"
#define CONFIG_RETRY   "[upstream]\nmax_retries = 1\n"
#define CONFIG_WAIT_1  "[upstream]\nmax_retries = 0\n[http]\nstream_head_wait = 1\n"

typedef ConfabTestRouted Fixture;

typedef enum {
	DOOR_CHAT,
	DOOR_RESPONSES,
	DOOR_BACKGROUND, /* Responses, background and stream */
} Door;

static const Door doors[] = {DOOR_CHAT, DOOR_RESPONSES, DOOR_BACKGROUND};

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

/* An agent whose one target is fake "a" asking for @model; @first_byte:
 * its first_byte_timeout, 0 for the default. */
static gchar *
single_agent(Fixture *f, const gchar *model, guint first_byte)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "single");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", f->a->base_url);
	g_variant_dict_insert(&dict, "upstream_model", "s", model);
	g_variant_dict_insert(&dict, "api_key", "s", "sk-stream-head");
	if (first_byte > 0)
		g_variant_dict_insert(&dict, "first_byte_timeout", "u", first_byte);
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

static gchar *
request_body(Door door, const gchar *agent, gboolean stream)
{
	if (door == DOOR_CHAT)
		return g_strdup_printf("{\"model\":\"%s\",\"stream\":%s,\"messages\":"
				       "[{\"role\":\"user\",\"content\":\"hi\"}]}",
				       agent,
				       stream ? "true" : "false");
	return g_strdup_printf("{\"model\":\"%s\",\"input\":\"hi\",\"stream\":%s%s}",
			       agent,
			       stream ? "true" : "false",
			       door == DOOR_BACKGROUND ? ",\"background\":true" : "");
}

static const gchar *
door_path(Door door)
{
	return door == DOOR_CHAT ? "/api/v1/chat/completions" : "/api/v1/responses";
}

static ConfabTestResponse *
post(Fixture *f, Door door, const gchar *agent, gboolean stream)
{
	g_autofree gchar *body = request_body(door, agent, stream);
	return confab_test_http(f->daemon, "POST", door_path(door), f->token, body);
}

/* A 200 stream: its text (chat: the content deltas; Responses: the
 * output_text deltas) and whether it ended with an error (chat: an error
 * event and [DONE]; Responses: error and response.failed). */
static gchar *
body_text(ConfabTestResponse *r)
{
	gsize len;
	const gchar *body = g_bytes_get_data(r->body, &len);
	return g_strndup(body, len);
}

/* The data of each event of a stream, whether named (event:) or not. */
static GPtrArray *
sse_data(ConfabTestResponse *r)
{
	g_autofree gchar *text = body_text(r);
	g_auto(GStrv) blocks = g_strsplit(text, "\n\n", -1);
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; blocks[i] != NULL; i++) {
		const gchar *data = strstr(blocks[i], "data: ");
		if (data != NULL)
			g_ptr_array_add(out, g_strdup(data + strlen("data: ")));
	}
	return out;
}

static gchar *
stream_text(ConfabTestResponse *r, Door door, gboolean *had_error)
{
	g_autoptr(GPtrArray) events = sse_data(r);
	GString *text = g_string_new(NULL);
	gboolean done = FALSE;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(header(r, "Content-Type"), ==, "text/event-stream");
	*had_error = FALSE;
	for (guint i = 0; i < events->len; i++) {
		const gchar *data = g_ptr_array_index(events, i);
		g_autoptr(JsonNode) node = NULL;
		const gchar *type;

		if (g_str_equal(data, "[DONE]")) {
			done = TRUE;
			continue;
		}
		node = json_from_string(data, NULL);
		g_assert_nonnull(node);
		if (door == DOOR_CHAT) {
			JsonNode *content = confab_test_json_get(node, "choices.0.delta.content");
			if (confab_test_json_get(node, "error") != NULL)
				*had_error = TRUE;
			else if (content != NULL && JSON_NODE_HOLDS_VALUE(content))
				g_string_append(text, json_node_get_string(content));
			continue;
		}
		type = confab_test_json_string(node, "type");
		if (g_strcmp0(type, "response.output_text.delta") == 0)
			g_string_append(text, confab_test_json_string(node, "delta"));
		else if (g_strcmp0(type, "error") == 0)
			*had_error = TRUE;
		else if (g_strcmp0(type, "response.failed") == 0)
			done = *had_error;
		else if (g_strcmp0(type, "response.completed") == 0)
			done = TRUE;
	}
	g_assert_true(done);
	return g_string_free(text, FALSE);
}

/* The owner has no background response queued or running. */
static gboolean
none_running(gpointer data)
{
	Fixture *f = data;
	g_autoptr(GVariant) list = NULL;
	g_autoptr(GError) error = NULL;
	GVariantDict filter;

	g_variant_dict_init(&filter, NULL);
	g_variant_dict_insert(&filter, "owner", "s", "alice");
	if (!confab_dbus_admin_call_list_background_responses_sync(f->daemon->admin,
								   g_variant_dict_end(&filter),
								   &list,
								   NULL,
								   &error))
		return FALSE;
	return g_variant_n_children(list) == 0;
}

/* The answer of the conversation @r names (x-session-id) is stored
 * @status; a background response's record is over too. */
static void
assert_stored(Fixture *f, ConfabTestResponse *r, Door door, const gchar *status)
{
	const gchar *session = header(r, "x-session-id");
	g_autofree gchar *path = NULL;
	g_autoptr(ConfabTestResponse) messages = NULL;

	g_assert_nonnull(session);
	path = g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session);
	messages = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(messages->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(messages->json, "data.0.role"), ==, "user");
	g_assert_cmpstr(confab_test_json_string(messages->json, "data.1.role"), ==, "assistant");
	g_assert_cmpstr(confab_test_json_string(messages->json, "data.1.status"), ==, status);
	if (door == DOOR_BACKGROUND)
		g_assert_true(confab_test_wait_until(none_running, f, 30000));
}

/* Before the head: a refusal the request caused is that refusal, relayed
 * (status, type, code, param), by every door, streamed or not, and no
 * other target is asked. */
static void
test_refusal(Fixture *f, gconstpointer data)
{
	const guint statuses[] = {400, 404, 413, 422};

	for (guint i = 0; i < G_N_ELEMENTS(statuses); i++) {
		g_autofree gchar *model = g_strdup_printf("status:%u", statuses[i]);
		g_autofree gchar *agent = single_agent(f, model, 0);

		for (guint d = 0; d < G_N_ELEMENTS(doors); d++) {
			for (guint stream = doors[d] == DOOR_BACKGROUND; stream < 2; stream++) {
				g_autoptr(ConfabTestResponse) r = post(f, doors[d], agent, stream);

				g_test_message("%s, door %u, stream %u", model, doors[d], stream);
				g_assert_cmpuint(r->status, ==, statuses[i]);
				g_assert_cmpstr(header(r, "Content-Type"), ==, "application/json");
				g_assert_nonnull(r->json);
				g_assert_cmpstr(confab_test_json_string(r->json, "error.type"),
						==,
						"fake_error");
				g_assert_cmpstr(confab_test_json_string(r->json, "error.code"),
						==,
						"fake_refusal");
				g_assert_cmpstr(confab_test_json_string(r->json, "error.param"),
						==,
						"messages");
				g_assert_nonnull(
				    strstr(confab_test_json_string(r->json, "error.message"),
					   "The fake upstream was told to fail"));
				g_assert_cmpstr(header(r, "x-confab-upstream"), ==, "primary");
				g_assert_cmpstr(header(r, "x-confab-attempts"), ==, "1");
				g_assert_null(header(r, "x-should-retry"));
				assert_stored(f, r, doors[d], "failed");
			}
		}
	}
}

/* 429 after Confab's own tries: relayed with when to come back, for the
 * SDKs to retry. */
static void
test_429(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = single_agent(f, "429ms:2500", 0);

	for (guint d = 0; d < G_N_ELEMENTS(doors); d++) {
		g_autoptr(ConfabTestResponse) r = post(f, doors[d], agent, TRUE);

		confab_test_assert_error(r, 429, "rate_limit_exceeded");
		g_assert_cmpstr(confab_test_json_string(r->json, "error.type"),
				==,
				"rate_limit_error");
		g_assert_cmpstr(header(r, "Retry-After"), ==, "3");
		g_assert_cmpstr(header(r, "retry-after-ms"), ==, "2500");
		g_assert_cmpstr(header(r, "x-should-retry"), ==, "true");
	}
	g_assert_cmpuint(n_requests(f->a), ==, G_N_ELEMENTS(doors));
}

/* 500 after Confab's own retry (max_retries = 1): 502 upstream_error, which
 * the SDKs are told not to retry. */
static void
test_500(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = single_agent(f, "500", 0);

	for (guint d = 0; d < G_N_ELEMENTS(doors); d++) {
		g_autoptr(ConfabTestResponse) r = post(f, doors[d], agent, TRUE);

		confab_test_assert_error(r, 502, "upstream_error");
		g_assert_cmpstr(header(r, "x-should-retry"), ==, "false");
		g_assert_nonnull(header(r, "x-session-id"));
		g_assert_cmpuint(n_requests(f->a), ==, 2 * (d + 1));
		assert_stored(f, r, doors[d], "failed");
	}
}

/* No head from the upstream within first_byte_timeout: 504. */
static void
test_timeout(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = single_agent(f, "hang", 1);

	for (guint d = 0; d < G_N_ELEMENTS(doors); d++) {
		g_autoptr(ConfabTestResponse) r = post(f, doors[d], agent, TRUE);
		confab_test_assert_error(r, 504, "upstream_timeout");
	}
}

/* The first target fails, the second answers: a 200 stream of the
 * second's answer only, whose head names it. */
static void
test_fallback(Fixture *f, gconstpointer data)
{
	g_autofree gchar *upstreams = g_strdup_printf(
	    "[{\"label\":\"a\",\"base_url\":\"%s\",\"upstream_model\":\"status:503\"},"
	    "{\"label\":\"b\",\"base_url\":\"%s\",\"upstream_model\":\"plain\"}]",
	    f->a->base_url,
	    f->b->base_url);
	GVariantDict dict;
	g_autofree gchar *agent = NULL;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "routed");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "upstreams", "s", upstreams);
	agent = confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
	for (guint d = 0; d < G_N_ELEMENTS(doors); d++) {
		g_autoptr(ConfabTestResponse) r = post(f, doors[d], agent, TRUE);
		gboolean had_error = TRUE;
		g_autofree gchar *text = stream_text(r, doors[d], &had_error);

		g_assert_cmpstr(text, ==, FAKE_TEXT);
		g_assert_false(had_error);
		g_assert_cmpstr(header(r, "x-confab-upstream"), ==, "b");
		g_assert_cmpstr(header(r, "x-confab-attempts"), ==, "2");
	}
	g_assert_cmpuint(n_requests(f->b), ==, G_N_ELEMENTS(doors));
}

/* The raw request of a stream by @door. */
static gchar *
raw_request(Fixture *f, Door door, const gchar *agent)
{
	g_autofree gchar *body = request_body(door, agent, TRUE);
	return g_strdup_printf("POST %s HTTP/1.1\r\nHost: confab\r\nAuthorization: Bearer %s\r\n"
			       "Content-Type: application/json\r\nContent-Length: %zu\r\n"
			       "Connection: close\r\n\r\n%s",
			       door_path(door),
			       f->token,
			       strlen(body),
			       body);
}

/* An upstream that answered 200 and says nothing until the test lets it:
 * the head (with the target that answered) is there before any content,
 * and the stream goes on once the upstream does. stream_head_wait is an
 * hour here: only the upstream's answer can have sent the head. */
static void
test_head_on_answer(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = single_agent(f, "held", 0);

	for (guint d = 0; d < G_N_ELEMENTS(doors); d++) {
		g_autofree gchar *request = raw_request(f, doors[d], agent);
		g_autoptr(GString) received = g_string_new(NULL);
		g_autoptr(GSocketConnection) conn = NULL;
		g_autofree gchar *lower = NULL;

		conn = confab_test_raw_open(f->daemon, request, received, "\r\n\r\n");
		lower = g_ascii_strdown(received->str, -1);
		g_assert_true(g_str_has_prefix(received->str, "HTTP/1.1 200 "));
		g_assert_nonnull(strstr(lower, "content-type: text/event-stream"));
		g_assert_nonnull(strstr(lower, "x-confab-upstream: primary\r\n"));
		g_assert_nonnull(strstr(lower, "x-confab-attempts: 1\r\n"));
		/* nothing of the answer yet: the upstream has said none */
		g_assert_null(strstr(received->str, "Hello"));
		g_assert_cmpuint(confab_test_fake_upstream_release(f->a), ==, 1);
		confab_test_raw_read_until(conn,
					   received,
					   doors[d] == DOOR_CHAT ? "data: [DONE]"
								 : "event: response.completed");
		g_assert_nonnull(strstr(received->str, "\"Hello\""));
		if (doors[d] == DOOR_BACKGROUND)
			g_assert_true(confab_test_wait_until(none_running, f, 30000));
	}
}

/* No upstream answer within stream_head_wait (1 s here): the head goes out
 * anyway, naming no target, and the upstream's timeout (5 s) then ends the
 * stream in the stream. */
static void
test_head_wait(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = single_agent(f, "hang", 5);

	for (guint d = 0; d < G_N_ELEMENTS(doors); d++) {
		g_autoptr(ConfabTestResponse) r = post(f, doors[d], agent, TRUE);
		gboolean had_error = FALSE;
		g_autofree gchar *text = stream_text(r, doors[d], &had_error);
		g_autofree gchar *body = body_text(r);

		g_assert_true(had_error);
		g_assert_cmpstr(text, ==, "");
		g_assert_nonnull(strstr(body, "upstream_timeout"));
		g_assert_null(header(r, "x-confab-upstream"));
		assert_stored(f, r, doors[d], "failed");
	}
}

typedef struct {
	ConfabTestFakeUpstream *up;
	gint64 aborted;
	guint before;
} StatsProbe;

static gboolean
upstream_called(gpointer data)
{
	StatsProbe *probe = data;
	return n_requests(probe->up) > probe->before;
}

static gboolean
upstream_aborted(gpointer data)
{
	StatsProbe *probe = data;
	g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 30, NULL);
	g_autofree gchar *uri = g_strconcat(probe->up->url, "/_stats", NULL);
	g_autoptr(SoupMessage) msg = soup_message_new("GET", uri);
	g_autoptr(GBytes) body = soup_session_send_and_read(session, msg, NULL, NULL);
	g_autofree gchar *text = NULL;
	g_autoptr(JsonNode) node = NULL;

	if (body == NULL)
		return FALSE;
	text = g_strndup(g_bytes_get_data(body, NULL), g_bytes_get_size(body));
	node = json_from_string(text, NULL);
	return node != NULL && confab_test_json_int(node, "aborted") >= probe->aborted &&
	       confab_test_json_int(node, "active") == 0;
}

/* A client that leaves while its head waits: the turn is cancelled (the
 * upstream call with it), by both doors. */
static void
test_client_leaves(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = single_agent(f, "hang", 0);
	const Door foreground[] = {DOOR_CHAT, DOOR_RESPONSES};

	for (guint d = 0; d < G_N_ELEMENTS(foreground); d++) {
		g_autofree gchar *request = raw_request(f, foreground[d], agent);
		g_autoptr(GString) received = g_string_new(NULL);
		g_autoptr(GSocketConnection) conn = NULL;
		StatsProbe probe = {f->a, d + 1, 0};
		guint before = n_requests(f->a);

		/* sent, and read up to nothing: the head is not there */
		conn = confab_test_raw_open(f->daemon, request, received, "");
		/* the upstream has the call before the client leaves */
		probe.before = before;
		g_assert_true(confab_test_wait_until(upstream_called, &probe, 30000));
		g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
		g_assert_cmpuint(received->len, ==, 0);
		g_assert_true(confab_test_wait_until(upstream_aborted, &probe, 30000));
	}
}

int
main(int argc, char **argv)
{
	gint status;

	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, config, func)                                                                    \
	g_test_add("/confab/stream-head/" name,                                                    \
		   Fixture,                                                                        \
		   config,                                                                         \
		   fixture_setup,                                                                  \
		   func,                                                                           \
		   fixture_teardown)
	ADD("refusal", CONFIG, test_refusal);
	ADD("429", CONFIG, test_429);
	ADD("500", CONFIG_RETRY, test_500);
	ADD("timeout", CONFIG, test_timeout);
	ADD("fallback", CONFIG, test_fallback);
	ADD("head-on-answer", CONFIG_NO_WAIT, test_head_on_answer);
	ADD("head-wait", CONFIG_WAIT_1, test_head_wait);
	ADD("client-leaves", CONFIG, test_client_leaves);
#undef ADD
	status = g_test_run();
	confab_test_finish();
	return status;
}
