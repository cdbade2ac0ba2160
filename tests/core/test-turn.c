/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "core/confab-turn.h"
#include "providers/confab-provider-echo.h"
#include "store/sqlite/confab-store-sqlite.h"
#include "util/confab-error.h"

/* One turn, without any door: what it stores and when, what it counts,
 * what it refuses, and how a sink's delivery decides the stored status. */

typedef struct {
	gchar *dir;
	ConfabConfig *config;
	ConfabStore *store;
	ConfabEngine *engine;
	ConfabAgent *agent;
} Fixture;

static gboolean
on_timeout(gpointer data)
{
	g_error("a turn did not complete within 30 s");
	return G_SOURCE_REMOVE;
}

static void
on_result(GObject *source, GAsyncResult *result, gpointer user_data)
{
	GAsyncResult **slot = user_data;
	g_assert_null(*slot);
	*slot = g_object_ref(result);
}

static GAsyncResult *
wait_for(GAsyncResult **slot)
{
	guint timeout = g_timeout_add_seconds(30, on_timeout, NULL);
	while (*slot == NULL)
		g_main_context_iteration(NULL, TRUE);
	g_source_remove(timeout);
	return g_steal_pointer(slot);
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	g_autofree gchar *path = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabProviderEcho) echo = confab_provider_echo_new();
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;

	f->dir = confab_test_make_tmpdir("turn");
	path = g_build_filename(f->dir, "confab.db", NULL);
	f->config = confab_config_new();
	f->store = CONFAB_STORE(confab_store_sqlite_new(path, 1, &error));
	g_assert_no_error(error);
	f->engine = confab_engine_new(f->config, f->store);
	confab_engine_add_provider(f->engine, CONFAB_PROVIDER(echo));
	confab_engine_load_async(f->engine, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_engine_load_finish(f->engine, res, &error));
	g_clear_object(&res);

	f->agent = confab_agent_new();
	confab_agent_set_id(f->agent, "agt_0000000000turn0000000000");
	confab_agent_set_name(f->agent, "echo");
	confab_agent_set_provider(f->agent, "echo");
	confab_engine_save_agent_async(f->engine, f->agent, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_engine_save_agent_finish(f->engine, res, &error));
	g_assert_no_error(error);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_clear_object(&f->agent);
	g_clear_object(&f->engine);
	confab_store_close(f->store);
	g_clear_object(&f->store);
	confab_config_free(f->config);
	confab_test_rm_rf(f->dir);
	g_free(f->dir);
}

static ConfabTurn *
new_turn(Fixture *f,
	 const gchar *owner,
	 const gchar *session_id,
	 const gchar *text,
	 gboolean stream)
{
	ConfabChatRequest *request =
	    confab_chat_request_new_text(confab_agent_get_id(f->agent), session_id, text);
	request->stream = stream;
	return confab_turn_new(f->engine,
			       confab_principal_new(owner, CONFAB_SESSION_SOURCE_API),
			       request);
}

static gboolean
start(ConfabTurn *turn, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_turn_start_async(turn, on_result, &slot);
	res = wait_for(&slot);
	return confab_turn_start_finish(turn, res, error);
}

static gboolean
run(ConfabTurn *turn, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_turn_run_async(turn, on_result, &slot);
	res = wait_for(&slot);
	return confab_turn_run_finish(turn, res, error);
}

static GPtrArray *
history(Fixture *f, const gchar *session_id)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GPtrArray *messages;
	confab_store_get_history_async(f->store, session_id, NULL, on_result, &slot);
	res = wait_for(&slot);
	messages = confab_store_get_history_finish(f->store, res, &error);
	g_assert_no_error(error);
	return messages;
}

static void
test_json_turn(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTurn) turn =
	    new_turn(f, "alice", NULL, "Hello,  \xc3\xa9t\xc3\xa9!", FALSE);
	g_autoptr(GPtrArray) before = NULL;
	g_autoptr(GPtrArray) after = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_true(start(turn, &error));
	g_assert_no_error(error);
	g_assert_nonnull(confab_turn_get_session_id(turn));
	g_assert_true(g_str_has_prefix(confab_turn_get_assistant_message_id(turn), "msg_"));
	/* without a stream nothing is stored before the answer: both sides go
	 * in one transaction */
	before = history(f, confab_turn_get_session_id(turn));
	g_assert_cmpuint(before->len, ==, 0);
	g_assert_true(run(turn, &error));
	g_assert_no_error(error);
	g_assert_cmpstr(confab_turn_get_content(turn), ==, "Hello,  \xc3\xa9t\xc3\xa9!");
	g_assert_cmpstr(confab_turn_get_finish_reason(turn), ==, "stop");
	after = history(f, confab_turn_get_session_id(turn));
	g_assert_cmpuint(after->len, ==, 2);
	g_assert_cmpstr(confab_message_get_role(g_ptr_array_index(after, 1)), ==, "assistant");
	g_assert_cmpstr(confab_message_get_id(g_ptr_array_index(after, 1)),
			==,
			confab_turn_get_assistant_message_id(turn));
	g_assert_cmpint(confab_message_get_status(g_ptr_array_index(after, 1)),
			==,
			CONFAB_MESSAGE_STATUS_COMPLETED);
}

typedef struct {
	GString *text;
	guint deltas;
	gboolean deliver; /* what the drain reports */
	gboolean drained;
} Sink;

static void
sink_delta(ConfabTurn *turn, const ConfabDelta *delta, gpointer user_data)
{
	Sink *sink = user_data;
	if (delta->content != NULL)
		g_string_append(sink->text, delta->content);
	sink->deltas++;
}

static void
sink_drain(ConfabTurn *turn, gpointer user_data)
{
	Sink *sink = user_data;
	sink->drained = TRUE;
	confab_turn_sink_drained(turn, sink->deliver);
}

static const ConfabTurnSink sink_funcs = {sink_delta, sink_drain};

static void
test_stream_turn(Fixture *f, gconstpointer data)
{
	const gchar *text = "one two  three\nfour";
	g_autoptr(ConfabTurn) turn = new_turn(f, "alice", NULL, text, TRUE);
	Sink sink = {g_string_new(NULL), 0, TRUE, FALSE};
	g_autoptr(GPtrArray) before = NULL;
	g_autoptr(GPtrArray) after = NULL;
	g_autoptr(GError) error = NULL;

	confab_turn_set_sink(turn, &sink_funcs, &sink);
	g_assert_true(start(turn, &error));
	/* a stream's first byte comes after the user's side is committed */
	before = history(f, confab_turn_get_session_id(turn));
	g_assert_cmpuint(before->len, ==, 1);
	g_assert_true(run(turn, &error));
	g_assert_no_error(error);
	/* word-sized deltas that join back to the exact text */
	g_assert_cmpstr(sink.text->str, ==, text);
	g_assert_cmpuint(sink.deltas, >, 1);
	g_assert_true(sink.drained);
	after = history(f, confab_turn_get_session_id(turn));
	g_assert_cmpuint(after->len, ==, 2);
	g_assert_cmpint(confab_message_get_status(g_ptr_array_index(after, 1)),
			==,
			CONFAB_MESSAGE_STATUS_COMPLETED);
	g_string_free(sink.text, TRUE);
}

/* a stream whose client did not get everything is stored incomplete */
static void
test_undelivered_is_incomplete(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTurn) turn = new_turn(f, "alice", NULL, "lost in transit", TRUE);
	Sink sink = {g_string_new(NULL), 0, FALSE, FALSE};
	g_autoptr(GPtrArray) after = NULL;
	g_autoptr(GError) error = NULL;

	confab_turn_set_sink(turn, &sink_funcs, &sink);
	g_assert_true(start(turn, &error));
	g_assert_false(run(turn, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CANCELLED);
	after = history(f, confab_turn_get_session_id(turn));
	g_assert_cmpuint(after->len, ==, 2);
	g_assert_cmpint(confab_message_get_status(g_ptr_array_index(after, 1)),
			==,
			CONFAB_MESSAGE_STATUS_INCOMPLETE);
	g_string_free(sink.text, TRUE);
}

static void
test_continue_session(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTurn) first = new_turn(f, "alice", NULL, "first", FALSE);
	g_autoptr(ConfabTurn) second = NULL;
	g_autoptr(ConfabTurn) stranger = NULL;
	g_autoptr(GPtrArray) messages = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_true(start(first, &error));
	g_assert_true(run(first, &error));
	second = new_turn(f, "alice", confab_turn_get_session_id(first), "second", FALSE);
	g_assert_true(start(second, &error));
	g_assert_true(run(second, &error));
	g_assert_cmpstr(confab_turn_get_session_id(second), ==, confab_turn_get_session_id(first));
	messages = history(f, confab_turn_get_session_id(first));
	g_assert_cmpuint(messages->len, ==, 4);

	/* another owner's session does not exist for them */
	stranger = new_turn(f, "mallory", confab_turn_get_session_id(first), "hi", FALSE);
	g_assert_false(start(stranger, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
}

static void
test_one_turn_per_session(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTurn) first = new_turn(f, "alice", NULL, "first", FALSE);
	g_autoptr(ConfabTurn) busy = NULL;
	g_autoptr(ConfabTurn) later = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_true(start(first, &error));
	g_assert_true(run(first, &error));
	/* the session is taken by a turn that started and has not finished */
	later = new_turn(f, "alice", confab_turn_get_session_id(first), "a", FALSE);
	g_assert_true(start(later, &error));
	busy = new_turn(f, "alice", confab_turn_get_session_id(first), "b", FALSE);
	g_assert_false(start(busy, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_BUSY);
	g_clear_error(&error);
	/* once it has, the next one may */
	g_assert_true(run(later, &error));
	g_clear_object(&busy);
	busy = new_turn(f, "alice", confab_turn_get_session_id(first), "b", FALSE);
	g_assert_true(start(busy, &error));
	g_assert_true(run(busy, &error));
}

static void
test_quota(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTurn) first = new_turn(f, "dave", NULL, "one", FALSE);
	g_autoptr(ConfabTurn) second = new_turn(f, "dave", NULL, "two", FALSE);
	const ConfabQuotaInfo *info;
	g_autoptr(GError) error = NULL;

	f->config->default_monthly_requests = 1;
	g_assert_true(start(first, &error));
	info = confab_turn_get_quota_info(first);
	g_assert_cmpuint(info->limit, ==, 1);
	g_assert_cmpuint(info->remaining, ==, 0);
	g_assert_true(run(first, &error));
	g_assert_false(start(second, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_QUOTA_EXCEEDED);
	info = confab_turn_get_quota_info(second);
	g_assert_cmpuint(info->limit, ==, 1);
	g_assert_cmpuint(info->remaining, ==, 0);
}

/* a refused turn gives its count back: the quota is not spent on it */
static void
test_refused_turn_not_counted(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTurn) refused = NULL;
	g_autoptr(ConfabTurn) fine = new_turn(f, "erin", NULL, "fine", FALSE);
	g_autoptr(GError) error = NULL;

	f->config->default_monthly_requests = 1;
	/* bound to another agent: permission denied before anything counts */
	refused = new_turn(f, "erin", NULL, "no", FALSE);
	{
		ConfabChatRequest *request = confab_turn_get_request(refused);
		g_free(request->model);
		request->model = g_strdup("agt_0000000000none0000000000");
	}
	g_assert_false(start(refused, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_AGENT_NOT_FOUND);
	g_clear_error(&error);
	g_assert_true(start(fine, &error));
	g_assert_no_error(error);
	g_assert_true(run(fine, &error));
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
#define ADD(name, func) g_test_add(name, Fixture, NULL, fixture_setup, func, fixture_teardown)
	ADD("/confab/turn/json", test_json_turn);
	ADD("/confab/turn/stream", test_stream_turn);
	ADD("/confab/turn/undelivered-is-incomplete", test_undelivered_is_incomplete);
	ADD("/confab/turn/continue-session", test_continue_session);
	ADD("/confab/turn/one-turn-per-session", test_one_turn_per_session);
	ADD("/confab/turn/quota", test_quota);
	ADD("/confab/turn/refused-turn-not-counted", test_refused_turn_not_counted);
#undef ADD
	return g_test_run();
}
