/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <sqlite3.h>
#include <string.h>

#include "confab-test-helper.h"

/*
 * Crash safety: concurrent turns, SIGKILL, restart on the same state
 * directory. Every turn that was answered 200 (JSON), or whose stream
 * reached [DONE], must be complete in the store; every stream that had
 * started must have its user message stored; the database passes
 * PRAGMA integrity_check.
 */

#define WORKERS 4

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *agent;
	gboolean stream;
	gint stop; /* atomic */
	GMutex lock;
	GPtrArray *answered; /* Turn*: complete answers */
	GPtrArray *started;  /* Turn*: streams whose first event arrived */
} Run;

typedef struct {
	gchar *session_id;
	gchar *assistant_id; /* NULL for a stream cut short */
	gchar *text;
} Turn;

static void
turn_free(Turn *turn)
{
	g_free(turn->session_id);
	g_free(turn->assistant_id);
	g_free(turn->text);
	g_free(turn);
}

static const gchar *
json_str(JsonNode *root, const gchar *path)
{
	JsonNode *node = confab_test_json_get(root, path);
	return node != NULL && JSON_NODE_HOLDS_VALUE(node) ? json_node_get_string(node) : NULL;
}

/* One turn; tolerates the daemon dying under it. */
static void
one_turn(Run *run, SoupSession *session, guint worker, guint n)
{
	g_autofree gchar *text =
	    g_strdup_printf("worker %u turn %u: the quick brown fox", worker, n);
	g_autofree gchar *body = g_strdup_printf("{\"model\":\"%s\",\"stream\":%s,\"messages\":[{"
						 "\"role\":\"user\",\"content\":\"%s\"}]}",
						 run->agent,
						 run->stream ? "true" : "false",
						 text);
	g_autofree gchar *uri = g_strconcat(run->daemon->url, "/api/v1/chat/completions", NULL);
	g_autoptr(SoupMessage) msg = soup_message_new("POST", uri);
	g_autofree gchar *auth = g_strdup_printf("Bearer %s", run->token);
	g_autoptr(GInputStream) stream = NULL;
	g_autoptr(GBytes) req = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) got = g_string_new(NULL);
	gboolean first = TRUE;
	Turn *turn;

	soup_message_headers_replace(soup_message_get_request_headers(msg), "Authorization", auth);
	req = g_bytes_new(body, strlen(body));
	soup_message_set_request_body_from_bytes(msg, "application/json", req);
	stream = soup_session_send(session, msg, NULL, &error);
	if (stream == NULL || soup_message_get_status(msg) != 200)
		return;
	for (;;) {
		gchar buf[4096];
		gssize nread = g_input_stream_read(stream, buf, sizeof(buf), NULL, &error);
		if (nread <= 0)
			break;
		g_string_append_len(got, buf, nread);
		if (run->stream && first) {
			/* the first event: the user message is committed */
			const gchar *sid =
			    soup_message_headers_get_one(soup_message_get_response_headers(msg),
							 "x-session-id");
			first = FALSE;
			turn = g_new0(Turn, 1);
			turn->session_id = g_strdup(sid);
			turn->text = g_strdup(text);
			g_mutex_lock(&run->lock);
			g_ptr_array_add(run->started, turn);
			g_mutex_unlock(&run->lock);
		}
	}
	if (error != NULL)
		return; /* cut short */
	if (run->stream) {
		const gchar *done = strstr(got->str, "data: [DONE]\n\n");
		const gchar *meta = strstr(got->str, "\"assistant_message_id\":\"");
		if (done == NULL || meta == NULL)
			return;
		meta += strlen("\"assistant_message_id\":\"");
		turn = g_new0(Turn, 1);
		turn->session_id =
		    g_strdup(soup_message_headers_get_one(soup_message_get_response_headers(msg),
							  "x-session-id"));
		turn->assistant_id = g_strndup(meta, strcspn(meta, "\""));
		turn->text = g_strdup(text);
	} else {
		g_autoptr(JsonNode) root = json_from_string(got->str, NULL);
		if (root == NULL)
			return;
		turn = g_new0(Turn, 1);
		turn->session_id = g_strdup(json_str(root, "metadata.session_id"));
		turn->assistant_id = g_strdup(json_str(root, "metadata.assistant_message_id"));
		turn->text = g_strdup(text);
	}
	g_mutex_lock(&run->lock);
	g_ptr_array_add(run->answered, turn);
	g_mutex_unlock(&run->lock);
}

static gpointer
worker_thread(gpointer data)
{
	Run *run = data;
	static gint next_worker = 0;
	guint worker = g_atomic_int_add(&next_worker, 1);
	g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 10, NULL);

	for (guint n = 0; !g_atomic_int_get(&run->stop); n++)
		one_turn(run, session, worker, n);
	return NULL;
}

static void
check_integrity(const gchar *state_dir)
{
	g_autofree gchar *path = g_build_filename(state_dir, "confab.db", NULL);
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;

	/* SQLite's own check; PostgreSQL's WAL is the server's business */
	if (confab_test_store_is_postgres())
		return;
	g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
	g_assert_cmpint(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, NULL),
			==,
			SQLITE_OK);
	g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
	g_assert_cmpstr((const gchar *)sqlite3_column_text(stmt, 0), ==, "ok");
	sqlite3_finalize(stmt);
	sqlite3_close(db);
}

/* The messages of a session, as the API replays them. */
static JsonArray *
replay(ConfabTestDaemon *daemon, const gchar *token, const gchar *session_id, JsonNode **keep)
{
	g_autofree gchar *path =
	    g_strdup_printf("/api/v1/conversations/%s/messages?order=asc&limit=100", session_id);
	g_autoptr(ConfabTestResponse) r = confab_test_http(daemon, "GET", path, token, NULL);
	g_assert_cmpuint(r->status, ==, 200);
	*keep = json_node_copy(r->json);
	return json_object_get_array_member(json_node_get_object(*keep), "data");
}

static void
run_crash(gboolean stream)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *state_dir = g_strdup(daemon->state_dir);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autoptr(ConfabTestDaemon) again = NULL;
	GThread *threads[WORKERS];
	Run run = {0};
	guint checked = 0;

	run.daemon = daemon;
	run.token = token;
	run.agent = agent;
	run.stream = stream;
	g_mutex_init(&run.lock);
	run.answered = g_ptr_array_new_with_free_func((GDestroyNotify)turn_free);
	run.started = g_ptr_array_new_with_free_func((GDestroyNotify)turn_free);

	for (guint i = 0; i < WORKERS; i++)
		threads[i] = g_thread_new("turns", worker_thread, &run);
	g_usleep(1500 * 1000);
	confab_test_daemon_kill(daemon);
	g_atomic_int_set(&run.stop, 1);
	for (guint i = 0; i < WORKERS; i++)
		g_thread_join(threads[i]);
	g_test_message("%u turns answered before the kill", run.answered->len);
	g_assert_cmpuint(run.answered->len, >, 10);

	/* keep the state directory: the helper removes its own on free */
	daemon->own_state_dir = FALSE;
	check_integrity(state_dir);
	again = confab_test_daemon_start_full(state_dir, NULL, NULL);
	again->own_state_dir = TRUE;

	for (guint i = 0; i < run.answered->len; i++) {
		Turn *turn = g_ptr_array_index(run.answered, i);
		g_autoptr(JsonNode) keep = NULL;
		JsonArray *messages = replay(again, token, turn->session_id, &keep);
		JsonObject *last;

		g_assert_cmpuint(json_array_get_length(messages), ==, 2);
		last = json_array_get_object_element(messages, 1);
		g_assert_cmpstr(json_object_get_string_member(last, "id"), ==, turn->assistant_id);
		g_assert_cmpstr(json_object_get_string_member(last, "status"), ==, "completed");
		g_assert_cmpstr(
		    json_object_get_string_member(
			json_array_get_object_element(json_object_get_array_member(last, "content"),
						      0),
			"text"),
		    ==,
		    turn->text);
		checked++;
	}
	for (guint i = 0; i < run.started->len; i++) {
		Turn *turn = g_ptr_array_index(run.started, i);
		g_autoptr(JsonNode) keep = NULL;
		JsonArray *messages = replay(again, token, turn->session_id, &keep);
		JsonObject *first;

		/* the user message was committed before the first byte */
		g_assert_cmpuint(json_array_get_length(messages), >=, 1);
		first = json_array_get_object_element(messages, 0);
		g_assert_cmpstr(json_object_get_string_member(first, "role"), ==, "user");
	}
	g_test_message("%u answered turns verified, %u started streams", checked, run.started->len);
	g_assert_cmpint(confab_test_daemon_stop(again), ==, 0);
	check_integrity(state_dir);

	g_ptr_array_unref(run.answered);
	g_ptr_array_unref(run.started);
	g_mutex_clear(&run.lock);
}

static void
test_kill_json(void)
{
	run_crash(FALSE);
}

static void
test_kill_streams(void)
{
	run_crash(TRUE);
}

gint
main(gint argc, gchar **argv)
{
	confab_test_init(&argc, &argv, TRUE);
	g_test_add_func("/confab/crash/kill-during-turns", test_kill_json);
	g_test_add_func("/confab/crash/kill-during-streams", test_kill_streams);
	return g_test_run();
}
