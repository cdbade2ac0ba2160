/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "openai/confab-openai-message.h"
#include "providers/confab-provider-echo.h"
#include "util/confab-json.h"

/* The offline echo provider: the last user text back, exactly, in
 * word-sized deltas, with usage in words. */

typedef struct {
	GPtrArray *deltas;
	GCancellable *cancel_after_cancellable;
	guint cancel_after; /* cancel once this many deltas arrived; 0: never */
	gboolean done;
	ConfabProviderResult *result;
	GError *error;
} Run;

static void
on_delta(const ConfabDelta *delta, gpointer user_data)
{
	Run *run = user_data;
	const gchar *content = delta->content;
	JsonArray *tool_calls = delta->tool_calls;

	g_assert_false(run->done);
	g_assert_null(tool_calls);
	g_assert_nonnull(content);
	g_ptr_array_add(run->deltas, g_strdup(content));
	if (run->cancel_after > 0 && run->deltas->len == run->cancel_after)
		g_cancellable_cancel(run->cancel_after_cancellable);
}

static void
on_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Run *run = user_data;

	run->result = confab_provider_complete_finish(CONFAB_PROVIDER(source), result, &run->error);
	run->done = TRUE;
}

static ConfabProviderRequest *
make_request(const gchar *messages_json)
{
	ConfabProviderRequest *request = g_new0(ConfabProviderRequest, 1);
	g_autoptr(GError) error = NULL;
	JsonNode *node = confab_json_parse(messages_json, strlen(messages_json), 16, &error);

	g_assert_no_error(error);
	g_assert_true(JSON_NODE_HOLDS_ARRAY(node));
	request->agent = confab_agent_new();
	confab_agent_set_provider(request->agent, "echo");
	request->messages = json_array_ref(json_node_get_array(node));
	json_node_unref(node);
	request->stream = TRUE;
	return request;
}

/* Runs a completion to its end, iterating the main context with a deadline. */
static void
run_completion(ConfabProviderRequest *request, GCancellable *cancellable, Run *run)
{
	g_autoptr(ConfabProviderEcho) echo = confab_provider_echo_new();
	gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

	run->deltas = g_ptr_array_new_with_free_func(g_free);
	confab_provider_complete_async(CONFAB_PROVIDER(echo),
				       request,
				       on_delta,
				       run,
				       cancellable,
				       on_done,
				       run);
	/* nothing is delivered from inside the call itself */
	g_assert_false(run->done);
	g_assert_cmpuint(run->deltas->len, ==, 0);
	while (!run->done) {
		g_main_context_iteration(NULL, FALSE);
		if (g_get_monotonic_time() > deadline)
			g_error("the echo completion did not finish within 10 s");
	}
}

static void
run_clear(Run *run)
{
	g_clear_pointer(&run->deltas, g_ptr_array_unref);
	g_clear_pointer(&run->result, confab_provider_result_free);
	g_clear_error(&run->error);
}

static gchar *
joined(GPtrArray *deltas)
{
	GString *s = g_string_new(NULL);
	for (guint i = 0; i < deltas->len; i++)
		g_string_append(s, g_ptr_array_index(deltas, i));
	return g_string_free(s, FALSE);
}

/* A user message with @text, as JSON. */
static gchar *
user_message(const gchar *role, const gchar *text)
{
	g_autoptr(GString) s = g_string_new("{\"role\":");
	confab_json_append_string(s, role);
	g_string_append(s, ",\"content\":");
	confab_json_append_string(s, text);
	g_string_append_c(s, '}');
	return g_string_free(g_steal_pointer(&s), FALSE);
}

static void
assert_echoes(const gchar *text, guint words)
{
	g_autofree gchar *msg = user_message("user", text);
	g_autofree gchar *messages = g_strdup_printf("[%s]", msg);
	g_autoptr(ConfabProviderRequest) request = make_request(messages);
	Run run = {0};
	g_autofree gchar *all = NULL;

	run_completion(request, NULL, &run);
	g_assert_no_error(run.error);
	g_assert_nonnull(run.result);
	all = joined(run.deltas);
	/* byte for byte */
	g_assert_cmpstr(all, ==, text);
	g_assert_cmpstr(run.result->finish_reason, ==, "stop");
	g_assert_cmpint(run.result->completion_tokens, ==, words);
	g_assert_cmpint(run.result->prompt_tokens, ==, words);
	/* word-sized: one delta per word (the first also carries leading
	 * whitespace), none empty, each valid UTF-8 */
	if (words > 0)
		g_assert_cmpuint(run.deltas->len, ==, words);
	for (guint i = 0; i < run.deltas->len; i++) {
		const gchar *d = g_ptr_array_index(run.deltas, i);
		g_assert_cmpuint(strlen(d), >, 0);
		g_assert_true(g_utf8_validate(d, -1, NULL));
	}
	run_clear(&run);
}

static void
test_echo_exact(void)
{
	assert_echoes("hello", 1);
	assert_echoes("one two  three", 3);
	assert_echoes("  Hello,\tworld!  h\xc3\xa9llo \xf0\x9f\x8c\x8d \n", 4);
	assert_echoes("line one\nline two\r\n\r\nend", 5);
	assert_echoes("\xe4\xbd\xa0\xe5\xa5\xbd \xd0\xbc\xd0\xb8\xd1\x80", 2);
	/* emoji with ZWJ and skin tone, a combining accent */
	assert_echoes("\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x92\xbb "
		      "\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd e\xcc\x81",
		      3);
	/* no-break space and ideographic space are whitespace */
	assert_echoes("a\xc2\xa0"
		      "b\xe3\x80\x80"
		      "c",
		      3);
	assert_echoes("\"quotes\" and \\backslashes\\ {json}", 4);
	assert_echoes("   ", 0);
	assert_echoes("", 0);
}

static void
test_long_text(void)
{
	g_autoptr(GString) text = g_string_new(NULL);
	for (guint i = 0; i < 5000; i++)
		g_string_append_printf(text, "w%u%s", i, i % 7 == 0 ? "\n\n" : " ");
	assert_echoes(text->str, 5000);
}

static void
test_last_user_message(void)
{
	g_autoptr(ConfabProviderRequest) request = make_request(
	    "[{\"role\":\"system\",\"content\":\"be brief please\"},"
	    "{\"role\":\"user\",\"content\":\"first question\"},"
	    "{\"role\":\"assistant\",\"content\":\"first answer\"},"
	    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"second\"},"
	    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://a.example/x.png\"}},"
	    "{\"type\":\"text\",\"text\":\"part two\"}]},"
	    "{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"tool says\"}]");
	Run run = {0};
	g_autofree gchar *all = NULL;

	run_completion(request, NULL, &run);
	g_assert_no_error(run.error);
	all = joined(run.deltas);
	/* text parts joined by a newline; not the tool's nor the system's text */
	g_assert_cmpstr(all, ==, "second\npart two");
	g_assert_cmpint(run.result->completion_tokens, ==, 3);
	/* prompt: every message's words: 3 + 2 + 2 + 3 + 2 */
	g_assert_cmpint(run.result->prompt_tokens, ==, 12);
	run_clear(&run);
}

static void
test_no_user_message(void)
{
	g_autoptr(ConfabProviderRequest) request =
	    make_request("[{\"role\":\"system\",\"content\":\"only instructions\"}]");
	Run run = {0};

	run_completion(request, NULL, &run);
	g_assert_no_error(run.error);
	g_assert_cmpuint(run.deltas->len, ==, 0);
	g_assert_cmpstr(run.result->finish_reason, ==, "stop");
	g_assert_cmpint(run.result->completion_tokens, ==, 0);
	g_assert_cmpint(run.result->prompt_tokens, ==, 2);
	run_clear(&run);
}

static void
test_deterministic(void)
{
	const gchar *messages = "[{\"role\":\"user\",\"content\":\"same words every time  \"}]";
	g_autoptr(ConfabProviderRequest) r1 = make_request(messages);
	g_autoptr(ConfabProviderRequest) r2 = make_request(messages);
	Run a = {0};
	Run b = {0};

	run_completion(r1, NULL, &a);
	run_completion(r2, NULL, &b);
	g_assert_cmpuint(a.deltas->len, ==, b.deltas->len);
	for (guint i = 0; i < a.deltas->len; i++)
		g_assert_cmpstr(g_ptr_array_index(a.deltas, i), ==, g_ptr_array_index(b.deltas, i));
	g_assert_cmpstr(g_ptr_array_index(a.deltas, 0), ==, "same ");
	g_assert_cmpstr(g_ptr_array_index(a.deltas, 3), ==, "time  ");
	run_clear(&a);
	run_clear(&b);
}

static void
test_cancel_before(void)
{
	g_autoptr(ConfabProviderRequest) request =
	    make_request("[{\"role\":\"user\",\"content\":\"never said\"}]");
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	Run run = {0};

	g_cancellable_cancel(cancellable);
	run_completion(request, cancellable, &run);
	g_assert_error(run.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_assert_null(run.result);
	g_assert_cmpuint(run.deltas->len, ==, 0);
	run_clear(&run);
}

static void
test_cancel_midway(void)
{
	g_autoptr(GString) text = g_string_new(NULL);
	g_autoptr(GString) messages = g_string_new("[");
	g_autoptr(ConfabProviderRequest) request = NULL;
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	g_autofree gchar *msg = NULL;
	Run run = {0};

	for (guint i = 0; i < 1000; i++)
		g_string_append(text, "word ");
	msg = user_message("user", text->str);
	g_string_append(messages, msg);
	g_string_append_c(messages, ']');
	request = make_request(messages->str);

	run.cancel_after = 10;
	run.cancel_after_cancellable = cancellable;
	run_completion(request, cancellable, &run);
	g_assert_error(run.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_assert_null(run.result);
	/* stops promptly: no delta after the cancellation */
	g_assert_cmpuint(run.deltas->len, ==, 10);
	run_clear(&run);
}

static void
test_streams_over_iterations(void)
{
	/* the deltas of a long answer do not all arrive in one main loop
	 * iteration: other sources get to run in between */
	g_autoptr(GString) text = g_string_new(NULL);
	g_autoptr(GString) messages = g_string_new("[");
	g_autoptr(ConfabProviderRequest) request = NULL;
	g_autoptr(ConfabProviderEcho) echo = confab_provider_echo_new();
	g_autofree gchar *msg = NULL;
	Run run = {0};
	guint iterations = 0;

	for (guint i = 0; i < 1000; i++)
		g_string_append(text, "x ");
	msg = user_message("user", text->str);
	g_string_append(messages, msg);
	g_string_append_c(messages, ']');
	request = make_request(messages->str);
	run.deltas = g_ptr_array_new_with_free_func(g_free);
	confab_provider_complete_async(CONFAB_PROVIDER(echo),
				       request,
				       on_delta,
				       &run,
				       NULL,
				       on_done,
				       &run);
	while (!run.done && iterations < 100000) {
		g_main_context_iteration(NULL, TRUE);
		iterations++;
	}
	g_assert_true(run.done);
	g_assert_cmpuint(run.deltas->len, ==, 1000);
	g_assert_cmpuint(iterations, >, 1);
	run_clear(&run);
}

static void
test_split_and_count(void)
{
	struct {
		const gchar *text;
		guint parts;
		guint words;
	} cases[] = {
	    {"", 0, 0},
	    {" ", 1, 0},
	    {"a", 1, 1},
	    {" a", 1, 1},
	    {"a ", 1, 1},
	    {"a b", 2, 2},
	    {"  a  b  ", 2, 2},
	    {"\ta\nb\r\nc", 3, 3},
	    {"h\xc3\xa9 \xf0\x9f\x8c\x8d", 2, 2},
	};
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GPtrArray) parts = confab_provider_echo_split(cases[i].text);
		g_autofree gchar *all = joined(parts);
		g_assert_cmpstr(all, ==, cases[i].text);
		g_assert_cmpuint(parts->len, ==, cases[i].parts);
		g_assert_cmpuint(confab_provider_echo_count_words(cases[i].text),
				 ==,
				 cases[i].words);
	}
}

static void
test_message_get_text(void)
{
	g_autoptr(JsonNode) a =
	    confab_json_from_string("{\"role\":\"user\",\"content\":\"plain\"}");
	g_autoptr(JsonNode) b = confab_json_from_string(
	    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"x\"},1,"
	    "{\"type\":\"refusal\",\"refusal\":\"r\"},{\"type\":\"text\",\"text\":\"y\"}]}");
	g_autoptr(JsonNode) c =
	    confab_json_from_string("{\"role\":\"assistant\",\"content\":null}");
	g_autoptr(JsonNode) d = confab_json_from_string("{\"role\":\"assistant\"}");
	g_autofree gchar *ta = confab_openai_message_get_text(json_node_get_object(a));
	g_autofree gchar *tb = confab_openai_message_get_text(json_node_get_object(b));
	g_autofree gchar *tc = confab_openai_message_get_text(json_node_get_object(c));
	g_autofree gchar *td = confab_openai_message_get_text(json_node_get_object(d));

	g_assert_cmpstr(ta, ==, "plain");
	g_assert_cmpstr(tb, ==, "x\ny");
	g_assert_cmpstr(tc, ==, "");
	g_assert_cmpstr(td, ==, "");
}

static void
test_name(void)
{
	g_autoptr(ConfabProviderEcho) echo = confab_provider_echo_new();
	g_autoptr(ConfabAgent) agent = confab_agent_new();

	g_assert_cmpstr(confab_provider_get_name(CONFAB_PROVIDER(echo)), ==, "echo");
	/* the echo provider needs no settings */
	g_assert_true(confab_provider_check_agent(CONFAB_PROVIDER(echo), agent, NULL));
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/provider-echo/echo-exact", test_echo_exact);
	g_test_add_func("/confab/provider-echo/long-text", test_long_text);
	g_test_add_func("/confab/provider-echo/last-user-message", test_last_user_message);
	g_test_add_func("/confab/provider-echo/no-user-message", test_no_user_message);
	g_test_add_func("/confab/provider-echo/deterministic", test_deterministic);
	g_test_add_func("/confab/provider-echo/cancel-before", test_cancel_before);
	g_test_add_func("/confab/provider-echo/cancel-midway", test_cancel_midway);
	g_test_add_func("/confab/provider-echo/streams-over-iterations",
			test_streams_over_iterations);
	g_test_add_func("/confab/provider-echo/split-and-count", test_split_and_count);
	g_test_add_func("/confab/provider-echo/message-get-text", test_message_get_text);
	g_test_add_func("/confab/provider-echo/name", test_name);
	return g_test_run();
}
