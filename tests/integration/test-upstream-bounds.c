/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * No upstream can exhaust confabd or outlive its timeouts: a real confabd
 * whose agents point at tests/fake-upstream in its hostile modes (an endless
 * stream as fast as the socket goes, SSE lines of 2 and 8 MiB (served whole)
 * and over the event cap (refused), 100,000 tiny chunks, text that is not
 * UTF-8, 1e400, nesting 100,000 deep). For each: the
 * client's status or in-stream error, the time it took, the transcript (the
 * user's message kept, the answer stored as failed with what came before),
 * and for the endless streams the daemon's peak RSS.
 */

#define API_KEY "sk-fake-bounds-0123456789"
#define MiB	(1024 * 1024)

static gboolean
under_wrapper(void)
{
	const gchar *wrapper = g_getenv("CONFABD_WRAPPER");
	return wrapper != NULL && *wrapper != '\0';
}

/* ASan's quarantine keeps freed memory resident: RSS says nothing there */
static gboolean
rss_meaningful(void)
{
	return !under_wrapper() && g_getenv("ASAN_OPTIONS") == NULL;
}

/* An upper bound on a duration, for a loaded machine: what ended a turn is
 * asserted by its error, and the bound only catches a timer that never
 * fires. Three times the expected duration; thirty under a wrapper, six
 * under ASan. */
static guint
bound_ms(guint ms)
{
	if (under_wrapper())
		return ms * 30;
	return g_getenv("ASAN_OPTIONS") != NULL ? ms * 6 : ms * 3;
}

/* ---------- the fixture ---------- */

typedef struct {
	ConfabTestFakeUpstream *up;
	ConfabTestDaemon *daemon;
	gchar *token;
} Fixture;

/* @data: (nullable): the daemon's confab.conf */
static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->up = confab_test_fake_upstream_start();
	f->daemon = confab_test_daemon_start(data, NULL);
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_autofree gchar *output = NULL;

	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	output = confab_test_daemon_get_output(f->daemon);
	g_assert_null(strstr(output, API_KEY));
	confab_test_daemon_free(f->daemon);
	confab_test_fake_upstream_free(f->up);
	g_free(f->token);
}

/* An openai agent for the fake's @model; @total_timeout 0 for the default. */
static gchar *
create_agent(Fixture *f, const gchar *model, guint total_timeout)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", model);
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", f->up->base_url);
	g_variant_dict_insert(&dict, "upstream_model", "s", model);
	g_variant_dict_insert(&dict, "api_key", "s", API_KEY);
	if (total_timeout > 0)
		g_variant_dict_insert(&dict, "total_timeout", "u", total_timeout);
	return confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
}

/* ---------- what the daemon holds ---------- */

/* A "VmRSS:" or "VmHWM:" line of the daemon's /proc/PID/status, in KiB. */
static guint64
daemon_status_kib(Fixture *f, const gchar *field)
{
	const gchar *pid = g_subprocess_get_identifier(f->daemon->process);
	g_autofree gchar *path = g_strdup_printf("/proc/%s/status", pid);
	g_autofree gchar *text = NULL;
	const gchar *line;

	g_assert_nonnull(pid);
	if (!g_file_get_contents(path, &text, NULL, NULL))
		return 0;
	line = strstr(text, field);
	if (line == NULL)
		return 0;
	return g_ascii_strtoull(line + strlen(field), NULL, 10);
}

/* ---------- the transcript ---------- */

typedef struct {
	gchar *session_id;
	gchar *text;  /* the assistant's stored text, "" for none */
	gchar *error; /* its error block's message */
} Failed;

static void
failed_free(Failed *failed)
{
	g_free(failed->session_id);
	g_free(failed->text);
	g_free(failed->error);
	g_free(failed);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Failed, failed_free)

/* The conversation @user_text started (its title): the user's message is
 * stored, the answer is stored as failed with an error block of @code. */
static Failed *
assert_failed_turn(Fixture *f, const gchar *user_text, const gchar *code)
{
	g_autoptr(ConfabTestResponse) convs =
	    confab_test_http(f->daemon, "GET", "/api/v1/conversations?limit=100", f->token, NULL);
	g_autoptr(ConfabTestResponse) list = NULL;
	g_autofree gchar *path = NULL;
	Failed *failed = g_new0(Failed, 1);
	JsonArray *data;
	JsonNode *blocks;

	g_assert_cmpuint(convs->status, ==, 200);
	data = json_node_get_array(confab_test_json_get(convs->json, "data"));
	for (guint i = 0; i < json_array_get_length(data); i++) {
		JsonNode *conv = json_array_get_element(data, i);
		if (g_strcmp0(confab_test_json_string(conv, "title"), user_text) == 0)
			failed->session_id = g_strdup(confab_test_json_string(conv, "id"));
	}
	g_assert_nonnull(failed->session_id);
	path = g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", failed->session_id);
	list = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(list->status, ==, 200);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(list->json, "data"))),
	    ==,
	    2);
	g_assert_cmpstr(confab_test_json_string(list->json, "data.0.role"), ==, "user");
	g_assert_cmpstr(confab_test_json_string(list->json, "data.0.content.0.text"),
			==,
			user_text);
	g_assert_cmpstr(confab_test_json_string(list->json, "data.1.role"), ==, "assistant");
	g_assert_cmpstr(confab_test_json_string(list->json, "data.1.status"), ==, "failed");
	blocks = confab_test_json_get(list->json, "data.1.content_blocks");
	g_assert_nonnull(blocks);
	for (guint i = 0; i < json_array_get_length(json_node_get_array(blocks)); i++) {
		JsonNode *block = json_array_get_element(json_node_get_array(blocks), i);
		const gchar *type = confab_test_json_string(block, "type");
		if (g_strcmp0(type, "text") == 0) {
			g_assert_null(failed->text);
			failed->text = g_strdup(confab_test_json_string(block, "text"));
		} else if (g_strcmp0(type, "error") == 0) {
			g_assert_cmpstr(confab_test_json_string(block, "code"), ==, code);
			failed->error = g_strdup(confab_test_json_string(block, "message"));
		}
	}
	g_assert_nonnull(failed->error);
	if (failed->text == NULL)
		failed->text = g_strdup("");
	return failed;
}

/* A streamed answer: its text, its in-stream error, and whether [DONE]
 * ended it. */
typedef struct {
	GString *text;
	gchar *error_code;
	gchar *error_message;
	gboolean done;
} Stream;

static void
stream_free(Stream *s)
{
	g_string_free(s->text, TRUE);
	g_free(s->error_code);
	g_free(s->error_message);
	g_free(s);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Stream, stream_free)

/* The data of each event, as confab_test_sse_events() gives them, but in
 * one pass: g_strsplit() on 100,000 events is quadratic under ASan, whose
 * strstr() measures the whole rest of the text at every call. */
static GPtrArray *
sse_events(ConfabTestResponse *r)
{
	GPtrArray *events = g_ptr_array_new_with_free_func(g_free);
	gsize len = 0;
	const gchar *p = g_bytes_get_data(r->body, &len);
	const gchar *end = p + len;

	while (p < end) {
		const gchar *sep = memmem(p, (gsize)(end - p), "\n\n", 2);
		const gchar *stop = sep != NULL ? sep : end;
		if (stop > p) {
			g_assert_true(stop - p >= 6 && memcmp(p, "data: ", 6) == 0);
			g_ptr_array_add(events, g_strndup(p + 6, (gsize)(stop - p - 6)));
		}
		p = sep != NULL ? sep + 2 : end;
	}
	return events;
}

static Stream *
parse_stream(ConfabTestResponse *r)
{
	g_autoptr(GPtrArray) events = sse_events(r);
	Stream *s = g_new0(Stream, 1);

	g_assert_cmpuint(r->status, ==, 200);
	s->text = g_string_new(NULL);
	for (guint i = 0; i < events->len; i++) {
		const gchar *data = g_ptr_array_index(events, i);
		g_autoptr(JsonNode) node = NULL;
		const gchar *content;

		if (g_str_equal(data, "[DONE]")) {
			g_assert_cmpuint(i, ==, events->len - 1);
			s->done = TRUE;
			break;
		}
		/* nothing but [DONE] after an error */
		g_assert_null(s->error_code);
		node = json_from_string(data, NULL);
		g_assert_nonnull(node);
		if (confab_test_json_get(node, "error") != NULL) {
			s->error_code = g_strdup(confab_test_json_string(node, "error.code"));
			s->error_message = g_strdup(confab_test_json_string(node, "error.message"));
			continue;
		}
		content = confab_test_json_string(node, "choices.0.delta.content");
		if (content != NULL)
			g_string_append(s->text, content);
	}
	return s;
}

/* ---------- an upstream that never stops ---------- */

typedef struct {
	guint64 rss_kib; /* before */
	guint64 hwm_kib; /* the peak, after */
	gint64 elapsed_ms;
} Run;

static ConfabTestResponse *
timed_chat(Fixture *f, const gchar *agent, const gchar *text, gboolean stream, Run *run)
{
	gint64 start;
	ConfabTestResponse *r;

	run->rss_kib = daemon_status_kib(f, "VmRSS:");
	start = g_get_monotonic_time();
	r = confab_test_chat(f->daemon, f->token, agent, NULL, text, stream);
	run->elapsed_ms = (g_get_monotonic_time() - start) / 1000;
	run->hwm_kib = daemon_status_kib(f, "VmHWM:");
	return r;
}

static void
assert_rss_bounded(Run *run, const gchar *what, guint64 max_kib)
{
	guint64 growth_kib = run->hwm_kib > run->rss_kib ? run->hwm_kib - run->rss_kib : 0;

	g_test_message("%s: %" G_GINT64_FORMAT " ms; RSS %" G_GUINT64_FORMAT
		       " KiB before, peak %" G_GUINT64_FORMAT " KiB: %" G_GUINT64_FORMAT
		       " KiB more",
		       what,
		       run->elapsed_ms,
		       run->rss_kib,
		       run->hwm_kib,
		       growth_kib);
	if (rss_meaningful())
		g_assert_cmpuint(growth_kib, <, max_kib);
}

/* Chunks without an answer as fast as the socket goes: the total timeout
 * (2 s) ends the turn with 504 within a second of it, and the daemon's RSS
 * grows by less than 64 MiB. */
static void
test_endless(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "endless", 2);
	Run run = {0};
	g_autoptr(ConfabTestResponse) json = timed_chat(f, agent, "forever?", FALSE, &run);
	g_autoptr(Failed) failed = NULL;
	g_autoptr(ConfabTestResponse) sse = NULL;
	g_autoptr(Stream) s = NULL;

	confab_test_assert_error(json, 504, "upstream_timeout");
	g_assert_cmpint(run.elapsed_ms, >=, 1900);
	g_assert_cmpint(run.elapsed_ms, <, bound_ms(3000));
	assert_rss_bounded(&run, "endless stream, JSON client", 64 * 1024);
	failed = assert_failed_turn(f, "forever?", "upstream_timeout");
	g_assert_cmpstr(failed->text, ==, "");

	sse = timed_chat(f, agent, "forever, streamed?", TRUE, &run);
	s = parse_stream(sse);
	g_assert_true(s->done);
	g_assert_cmpstr(s->error_code, ==, "upstream_timeout");
	g_assert_cmpint(run.elapsed_ms, <, bound_ms(3000));
	assert_rss_bounded(&run, "endless stream, streaming client", 64 * 1024);
	g_clear_pointer(&failed, failed_free);
	failed = assert_failed_turn(f, "forever, streamed?", "upstream_timeout");
}

/* An answer of max_answer_bytes costs several times its size on its way to
 * the store (the turn's buffer, the message's content and content_blocks,
 * their JSON, SQLite's pages): about 60 MiB for 8 MiB today. Bounded, not
 * small: 20 copies at most. */
#define ANSWER_COPIES_KIB (20 * 8 * 1024)

/* Text without end: the answer stops at [limits] max_answer_bytes (8 MiB):
 * 502, the answer stored as failed with what came within the cap. */
static void
test_endless_text(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "endless:text", 30);
	Run run = {0};
	g_autoptr(ConfabTestResponse) json = timed_chat(f, agent, "talk", FALSE, &run);
	g_autoptr(Failed) failed = NULL;
	g_autoptr(ConfabTestResponse) sse = NULL;
	g_autoptr(Stream) s = NULL;

	confab_test_assert_error(json, 502, "upstream_error");
	g_assert_nonnull(strstr(confab_test_json_string(json->json, "error.message"),
				"larger than 8388608 bytes"));
	g_assert_cmpint(run.elapsed_ms, <, bound_ms(10000));
	assert_rss_bounded(&run, "endless text, JSON client", ANSWER_COPIES_KIB);
	failed = assert_failed_turn(f, "talk", "upstream_error");
	g_assert_cmpuint(strlen(failed->text), >, 7 * MiB);
	g_assert_cmpuint(strlen(failed->text), <=, 8 * MiB);
	g_assert_true(g_str_has_prefix(failed->text, "abcdefghijklmnopqrstuvwxyzabcdef"));

	sse = timed_chat(f, agent, "talk, streamed", TRUE, &run);
	s = parse_stream(sse);
	g_assert_true(s->done);
	g_assert_cmpstr(s->error_code, ==, "upstream_error");
	g_assert_nonnull(strstr(s->error_message, "larger than 8388608 bytes"));
	g_assert_cmpuint(s->text->len, >, 7 * MiB);
	g_assert_cmpuint(s->text->len, <=, 8 * MiB);
	assert_rss_bounded(&run, "endless text, streaming client", ANSWER_COPIES_KIB);
	g_clear_pointer(&failed, failed_free);
	failed = assert_failed_turn(f, "talk, streamed", "upstream_error");
	g_assert_cmpuint(strlen(failed->text), ==, s->text->len);
}

/* ---------- one bad thing each ---------- */

typedef struct {
	const gchar *model;
	const gchar *message; /* a part of the error's message */
	const gchar *text;    /* what the answer holds before it */
} Bad;

static void
check_bad(Fixture *f, const Bad *bad)
{
	g_autofree gchar *agent = create_agent(f, bad->model, 0);
	Run run = {0};
	g_autoptr(ConfabTestResponse) json = timed_chat(f, agent, bad->model, FALSE, &run);
	g_autoptr(Failed) failed = NULL;
	g_autoptr(ConfabTestResponse) sse = NULL;
	g_autoptr(Stream) s = NULL;
	g_autofree gchar *streamed = g_strconcat(bad->model, ", streamed", NULL);
	const gchar *message;

	confab_test_assert_error(json, 502, "upstream_error");
	message = confab_test_json_string(json->json, "error.message");
	if (strstr(message, bad->message) == NULL)
		g_error("%s: '%s' does not say '%s'", bad->model, message, bad->message);
	g_assert_cmpint(run.elapsed_ms, <, bound_ms(5000));
	g_test_message("%s: 502 after %" G_GINT64_FORMAT " ms: %s",
		       bad->model,
		       run.elapsed_ms,
		       message);
	failed = assert_failed_turn(f, bad->model, "upstream_error");
	g_assert_cmpstr(failed->text, ==, bad->text);
	g_assert_cmpstr(failed->error, ==, message);

	sse = timed_chat(f, agent, streamed, TRUE, &run);
	s = parse_stream(sse);
	g_assert_true(s->done);
	g_assert_cmpstr(s->error_code, ==, "upstream_error");
	g_assert_cmpstr(s->error_message, ==, message);
	g_assert_cmpstr(s->text->str, ==, bad->text);
	g_clear_pointer(&failed, failed_free);
	failed = assert_failed_turn(f, streamed, "upstream_error");
	g_assert_cmpstr(failed->text, ==, bad->text);
}

/* ---------- one large delta ---------- */

/* The fake's big-line text of @n bytes: a, b, c... */
static gchar *
big_line_text(gsize n)
{
	gchar *text = g_malloc(n + 1);

	for (gsize i = 0; i < n; i++)
		text[i] = (gchar)('a' + i % 26);
	text[n] = '\0';
	return text;
}

/* Compares without printing megabytes when it fails. */
static void
assert_big_text(const gchar *what, const gchar *got, const gchar *expected)
{
	gsize got_len = got != NULL ? strlen(got) : 0;

	if (got == NULL || !g_str_equal(got, expected))
		g_error("%s: %" G_GSIZE_FORMAT " bytes, not the %" G_GSIZE_FORMAT
			" bytes of the upstream's delta",
			what,
			got_len,
			strlen(expected));
}

/* The stored answer of the conversation @user_text started: completed,
 * with exactly @expected as its text. */
static void
assert_stored_answer(Fixture *f, const gchar *user_text, const gchar *expected)
{
	g_autoptr(ConfabTestResponse) convs =
	    confab_test_http(f->daemon, "GET", "/api/v1/conversations?limit=100", f->token, NULL);
	g_autoptr(ConfabTestResponse) list = NULL;
	g_autofree gchar *path = NULL;
	const gchar *session_id = NULL;
	JsonArray *data;

	g_assert_cmpuint(convs->status, ==, 200);
	data = json_node_get_array(confab_test_json_get(convs->json, "data"));
	for (guint i = 0; i < json_array_get_length(data); i++) {
		JsonNode *conv = json_array_get_element(data, i);
		if (g_strcmp0(confab_test_json_string(conv, "title"), user_text) == 0)
			session_id = confab_test_json_string(conv, "id");
	}
	g_assert_nonnull(session_id);
	path = g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session_id);
	list = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(list->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(list->json, "data.1.role"), ==, "assistant");
	g_assert_cmpstr(confab_test_json_string(list->json, "data.1.status"), ==, "completed");
	assert_big_text("stored",
			confab_test_json_string(list->json, "data.1.content.0.text"),
			expected);
}

/* One SSE event of @n bytes of content, within [limits] max_answer_bytes:
 * a JSON client and a streaming client that reads as fast as it can get it
 * whole, and it is stored whole. */
static void
check_big_line(Fixture *f, gsize n)
{
	g_autofree gchar *model = g_strdup_printf("big-line:%" G_GSIZE_FORMAT, n);
	g_autofree gchar *agent = create_agent(f, model, 0);
	g_autofree gchar *expected = big_line_text(n);
	g_autofree gchar *streamed = g_strconcat(model, ", streamed", NULL);
	Run run = {0};
	g_autoptr(ConfabTestResponse) json = timed_chat(f, agent, model, FALSE, &run);
	g_autoptr(ConfabTestResponse) sse = NULL;
	g_autoptr(Stream) s = NULL;

	g_assert_cmpuint(json->status, ==, 200);
	assert_big_text("JSON client",
			confab_test_json_string(json->json, "choices.0.message.content"),
			expected);
	g_assert_cmpstr(confab_test_json_string(json->json, "choices.0.finish_reason"), ==, "stop");
	assert_rss_bounded(&run, "one large delta, JSON client", ANSWER_COPIES_KIB);
	assert_stored_answer(f, model, expected);

	sse = timed_chat(f, agent, streamed, TRUE, &run);
	s = parse_stream(sse);
	g_assert_true(s->done);
	g_assert_null(s->error_code);
	assert_big_text("streaming client", s->text->str, expected);
	assert_rss_bounded(&run, "one large delta, streaming client", ANSWER_COPIES_KIB);
	assert_stored_answer(f, streamed, expected);
}

/* 2 MiB in one delta, refused by the old 1 MiB event cap */
static void
test_big_line(Fixture *f, gconstpointer data)
{
	check_big_line(f, 2 * MiB);
}

/* Just under the default max_answer_bytes (8 MiB) in one delta: a base64
 * image, a long tool call's arguments. */
static void
test_big_line_8mib(Fixture *f, gconstpointer data)
{
	check_big_line(f, 8 * MiB - 4096);
}

/* With max_answer_bytes = 64 KiB, an event may hold twice that and 64 KiB
 * of envelope (196,608 bytes): a line longer than that is refused while it
 * arrives, never buffered whole. */
static void
test_big_line_over_event_cap(Fixture *f, gconstpointer data)
{
	const Bad bad = {"big-line:300000", "server-sent event larger than 196608 bytes", ""};
	check_bad(f, &bad);
}

/* A delta that fits in an event but not in the answer: the answer's cap. */
static void
test_big_line_over_answer_cap(Fixture *f, gconstpointer data)
{
	const Bad bad = {"big-line:100000", "answer is larger than 65536 bytes", ""};
	check_bad(f, &bad);
}

static void
test_bad_utf8(Fixture *f, gconstpointer data)
{
	const Bad bad = {"bad-utf8", "not valid UTF-8 in choices[0].delta.content", "Before"};
	check_bad(f, &bad);
}

static void
test_huge_number(Fixture *f, gconstpointer data)
{
	const Bad bad = {"huge-number", "number out of range", "Before"};
	check_bad(f, &bad);
}

/* 100,000 levels: refused at 128 by the iterative checker, no recursion */
static void
test_deep(Fixture *f, gconstpointer data)
{
	const Bad bad = {"deep", "nested deeper than 128 levels", "Before"};
	check_bad(f, &bad);
}

/* A 500 whose body never ends: Confab reads 64 KiB of it, no more, and
 * fails (after its retries) long before the total timeout. */
static void
test_error_flood(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "error-flood", 0);
	Run run = {0};
	g_autoptr(ConfabTestResponse) json = timed_chat(f, agent, "error flood", FALSE, &run);
	g_autoptr(Failed) failed = NULL;

	confab_test_assert_error(json, 502, "upstream_error");
	g_assert_nonnull(strstr(confab_test_json_string(json->json, "error.message"), "HTTP 500"));
	/* three attempts with backoff, not the 900 s total timeout */
	g_assert_cmpint(run.elapsed_ms, <, bound_ms(10000));
	assert_rss_bounded(&run, "an endless 500 body", 64 * 1024);
	failed = assert_failed_turn(f, "error flood", "upstream_error");
}

/* ---------- a large turn ---------- */

/* A 10 MiB JSON turn to the echo agent, whose answer is as large: the
 * daemon's peak RSS grows by less than five times the body (it grew by 9 to
 * 11 times: the loop's transcript, the answer's blocks, the model's context
 * and the echo's reply were copies of the text, and glibc's dynamic mmap
 * threshold kept freed buffers resident). */
static void
test_large_echo_turn(Fixture *f, gconstpointer data)
{
	const gsize size = 10 * MiB;
	g_autofree gchar *agent = confab_test_create_agent(f->daemon, "large", "echo");
	g_autofree gchar *text = g_malloc(size + 1);
	Run run = {0};
	g_autoptr(ConfabTestResponse) json = NULL;

	for (gsize i = 0; i < size; i++)
		text[i] = "lorem ipsum dolor sit amet "[i % 27];
	text[size] = '\0';
	json = timed_chat(f, agent, text, FALSE, &run);
	g_assert_cmpuint(json->status, ==, 200);
	assert_big_text("the echo",
			confab_test_json_string(json->json, "choices.0.message.content"),
			text);
	/* as a system service runs (the full-text index off: with it, the
	 * writer reads the text back to index it while the answer is sent) */
	/* the figure is SQLite's, whose writer lets the turn's data go before
	 * the answer is built; the PostgreSQL store (libpq's copies of the
	 * parameters) does not yet: printed, not bounded there */
	if (confab_test_store_is_postgres())
		assert_rss_bounded(&run,
				   "a 10 MiB turn to the echo agent (PostgreSQL)",
				   G_MAXUINT64);
	else
		assert_rss_bounded(&run, "a 10 MiB turn to the echo agent", 5 * size / 1024);
}

/* ---------- many small pieces ---------- */

/* 100,000 one-byte deltas, each its own HTTP chunk: under the cap, the
 * whole answer, in order, streamed and not. */
/* Under ASan or valgrind, which relay each delta a hundred times slower
 * (100,000 took 55 s under ASan, near the test client's 60 s), a fifth. */
static guint
tiny_deltas(void)
{
	return under_wrapper() || g_getenv("ASAN_OPTIONS") != NULL ? 20000 : 100000;
}

static void
test_tiny(Fixture *f, gconstpointer data)
{
	g_autofree gchar *model = g_strdup_printf("tiny:%u", tiny_deltas());
	g_autofree gchar *agent = create_agent(f, model, 0);
	Run run = {0};
	g_autoptr(ConfabTestResponse) json = timed_chat(f, agent, "tiny", FALSE, &run);
	g_autoptr(ConfabTestResponse) sse = NULL;
	g_autoptr(Stream) s = NULL;
	const gchar *content;

	g_assert_cmpuint(json->status, ==, 200);
	content = confab_test_json_string(json->json, "choices.0.message.content");
	g_assert_cmpuint(strlen(content), ==, tiny_deltas());
	g_assert_true(g_str_has_prefix(content, "abcdefghijklmnopqrstuvwxyzabc"));
	assert_rss_bounded(&run, "tiny chunks, JSON client", 64 * 1024);

	sse = timed_chat(f, agent, "tiny, streamed", TRUE, &run);
	s = parse_stream(sse);
	g_assert_true(s->done);
	g_assert_null(s->error_code);
	g_assert_cmpstr(s->text->str, ==, content);
	assert_rss_bounded(&run, "tiny chunks, streaming client", 64 * 1024);
}

/* The same past a 16 KiB max_answer_bytes: the answer stops at exactly the
 * cap, 502, stored as failed with those 16,384 bytes. */
static void
test_tiny_over_cap(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "tiny:20000", 0);
	Run run = {0};
	g_autoptr(ConfabTestResponse) json = timed_chat(f, agent, "tiny", FALSE, &run);
	g_autoptr(Failed) failed = NULL;
	g_autoptr(ConfabTestResponse) sse = NULL;
	g_autoptr(Stream) s = NULL;

	confab_test_assert_error(json, 502, "upstream_error");
	g_assert_cmpstr(confab_test_json_string(json->json, "error.message"),
			==,
			"The upstream's answer is larger than 16384 bytes");
	g_test_message("20,000 tiny chunks over a 16 KiB cap: 502 after %" G_GINT64_FORMAT " ms",
		       run.elapsed_ms);
	failed = assert_failed_turn(f, "tiny", "upstream_error");
	g_assert_cmpuint(strlen(failed->text), ==, 16384);

	sse = timed_chat(f, agent, "tiny, streamed", TRUE, &run);
	s = parse_stream(sse);
	g_assert_true(s->done);
	g_assert_cmpstr(s->error_code, ==, "upstream_error");
	g_assert_cmpuint(s->text->len, ==, 16384);
}

int
main(int argc, char **argv)
{
	gint ret;
	const struct {
		const gchar *path;
		void (*func)(Fixture *, gconstpointer);
		const gchar *config;
	} tests[] = {
	    {"/confab/upstream-bounds/endless", test_endless, NULL},
	    {"/confab/upstream-bounds/endless-text", test_endless_text, NULL},
	    {"/confab/upstream-bounds/big-line", test_big_line, NULL},
	    {"/confab/upstream-bounds/big-line-8mib", test_big_line_8mib, NULL},
	    {"/confab/upstream-bounds/big-line-over-event-cap",
	     test_big_line_over_event_cap,
	     "[limits]\nmax_answer_bytes=65536\n"},
	    {"/confab/upstream-bounds/big-line-over-answer-cap",
	     test_big_line_over_answer_cap,
	     "[limits]\nmax_answer_bytes=65536\n"},
	    {"/confab/upstream-bounds/bad-utf8", test_bad_utf8, NULL},
	    {"/confab/upstream-bounds/huge-number", test_huge_number, NULL},
	    {"/confab/upstream-bounds/deep", test_deep, NULL},
	    {"/confab/upstream-bounds/error-flood", test_error_flood, NULL},
	    {"/confab/upstream-bounds/tiny", test_tiny, NULL},
	    {"/confab/upstream-bounds/large-echo-turn",
	     test_large_echo_turn,
	     "[limits]\nmax_body_bytes=67108864\n[desktop]\nsearch_index=false\n"},
	    {"/confab/upstream-bounds/tiny-over-cap",
	     test_tiny_over_cap,
	     "[limits]\nmax_answer_bytes=16384\n"},
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
			   tests[i].config,
			   fixture_setup,
			   tests[i].func,
			   fixture_teardown);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
