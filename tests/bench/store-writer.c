/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The SQLite store's writer alone, without HTTP: what one JSON turn commits
 * (a new conversation, the user's message, the answer, the month's usage),
 * fed to confab_store_commit_turn_async() with IN_FLIGHT turns always
 * waiting, as many serving threads would feed it, for SECONDS. Prints the
 * turns committed per second, the transactions they took, and the CPU the
 * writer thread and the whole process spent per turn (from
 * /proc/self/task/ * /stat): the writer's ceiling.
 *
 *   store-writer [SECONDS [IN_FLIGHT [DIR]]]
 */

#include "config.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/confab-id.h"
#include "store/sqlite/confab-store-sqlite.h"

typedef struct {
	ConfabStore *store;
	ConfabIdGenerator *ids;
	gchar *month;
	guint64 done;
	guint64 failed;
	guint in_flight;
	guint max_in_flight;
	guint64 started;
	guint64 limit; /* CONFAB_BENCH_TURNS: this many turns, then stop */
	gboolean stopping;
} Bench;

/* utime + stime ticks of this process's threads called @name, or of all
 * of them for NULL */
static guint64
thread_ticks(const gchar *name)
{
	g_autoptr(GDir) dir = g_dir_open("/proc/self/task", 0, NULL);
	const gchar *tid;
	guint64 ticks = 0;

	while (dir != NULL && (tid = g_dir_read_name(dir)) != NULL) {
		g_autofree gchar *path = g_strdup_printf("/proc/self/task/%s/stat", tid);
		g_autofree gchar *stat = NULL;
		g_auto(GStrv) fields = NULL;
		const gchar *open, *close;

		if (!g_file_get_contents(path, &stat, NULL, NULL))
			continue;
		open = strchr(stat, '(');
		close = strrchr(stat, ')');
		if (open == NULL || close == NULL)
			continue;
		if (name != NULL && (strlen(name) != (gsize)(close - open - 1) ||
				     strncmp(open + 1, name, close - open - 1) != 0))
			continue;
		fields = g_strsplit(close + 2, " ", -1);
		if (g_strv_length(fields) > 12)
			ticks += g_ascii_strtoull(fields[11], NULL, 10) +
				 g_ascii_strtoull(fields[12], NULL, 10);
	}
	return ticks;
}

static ConfabMessage *
message(Bench *b, const gchar *session_id, const gchar *role, const gchar *text)
{
	ConfabMessage *msg = confab_message_new();
	g_autofree gchar *id = confab_id_generator_next(b->ids, CONFAB_PREFIX_MESSAGE);
	g_autofree gchar *content = g_strdup_printf("[{\"type\":\"text\",\"text\":\"%s\"}]", text);

	confab_message_set_id(msg, id);
	confab_message_set_session_id(msg, session_id);
	confab_message_set_role(msg, role);
	confab_message_set_model(msg, "agt_bench");
	confab_message_set_content(msg, content);
	confab_message_set_content_blocks(msg, content);
	confab_message_set_created_at(msg, g_get_real_time() / G_USEC_PER_SEC);
	return msg;
}

static void
feed(Bench *b);

static void
on_committed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Bench *b = user_data;
	g_autoptr(GError) error = NULL;

	if (!confab_store_commit_turn_finish(CONFAB_STORE(source), result, &error)) {
		if (b->failed++ == 0)
			g_printerr("store-writer: %s\n", error->message);
	}
	b->done++;
	b->in_flight--;
	feed(b);
}

/* One JSON turn's commit, as ConfabTurn makes it. */
static void
commit_one(Bench *b)
{
	g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
	g_autofree gchar *sid = confab_id_generator_next(b->ids, CONFAB_PREFIX_SESSION);
	ConfabMessage *assistant;

	record->session = confab_session_new();
	confab_session_set_id(record->session, sid);
	confab_session_set_owner(record->session, "bench");
	confab_session_set_agent_id(record->session, "agt_bench");
	confab_session_set_title(record->session, "Say hello in a short sentence.");
	record->session_is_new = TRUE;
	record->usage_owner = g_strdup("bench");
	record->usage_month = g_strdup(b->month);
	g_ptr_array_add(record->messages,
			message(b, sid, "user", "Say hello in a short sentence."));
	assistant = message(b, sid, "assistant", "Hello! How can I help you today?");
	confab_message_set_status(assistant, CONFAB_MESSAGE_STATUS_COMPLETED);
	confab_message_set_finish_reason(assistant, "stop");
	record->assistant = assistant;
	b->in_flight++;
	confab_store_commit_turn_async(b->store, record, NULL, on_committed, b);
}

static void
feed(Bench *b)
{
	while (!b->stopping && b->in_flight < b->max_in_flight) {
		if (b->limit > 0 && b->started >= b->limit) {
			b->stopping = TRUE;
			break;
		}
		b->started++;
		commit_one(b);
	}
}

static gboolean
on_stop(gpointer user_data)
{
	((Bench *)user_data)->stopping = TRUE;
	return G_SOURCE_REMOVE;
}

int
main(int argc, char **argv)
{
	guint seconds = argc > 1 ? (guint)atoi(argv[1]) : 8;
	guint warmup = 1;
	g_autofree gchar *dir = argc > 3 ? g_strdup(argv[3])
					 : g_dir_make_tmp("confab-writer-XXXXXX", NULL);
	g_autofree gchar *path = g_build_filename(dir, "confab.db", NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	Bench b = {0};
	guint64 done0, writer0, all0, commits0 = 0, jobs0 = 0, commits1 = 0, jobs1 = 0;
	gint64 start, elapsed;
	gdouble tick_us = 1e6 / sysconf(_SC_CLK_TCK);

	b.store = CONFAB_STORE(confab_store_sqlite_new(path, 1, &error));
	if (b.store == NULL) {
		g_printerr("store-writer: %s\n", error->message);
		return 1;
	}
	/* as a system service runs it ([desktop] search_index = auto, on the
	 * system bus); CONFAB_BENCH_SEARCH_INDEX=1 for the desktop's */
	confab_store_sqlite_set_search_index(
	    CONFAB_STORE_SQLITE(b.store),
	    g_strcmp0(g_getenv("CONFAB_BENCH_SEARCH_INDEX"), "1") == 0);
	b.ids = confab_id_generator_new();
	b.max_in_flight = argc > 2 ? (guint)MAX(atoi(argv[2]), 1) : 64;
	/* a fixed count instead of a time, for valgrind --tool=callgrind */
	if (g_getenv("CONFAB_BENCH_TURNS") != NULL) {
		b.limit = g_ascii_strtoull(g_getenv("CONFAB_BENCH_TURNS"), NULL, 10);
		warmup = 0;
	}
	b.month = g_date_time_format(now, "%Y-%m");

	/* warm up, then measure */
	if (warmup > 0) {
		g_timeout_add_seconds(warmup, on_stop, &b);
		feed(&b);
		while (b.in_flight > 0 || !b.stopping)
			g_main_context_iteration(NULL, TRUE);
		b.stopping = FALSE;
	}
	done0 = b.done;
	writer0 = thread_ticks("confab-writer");
	all0 = thread_ticks(NULL);
	confab_store_sqlite_get_stats(CONFAB_STORE_SQLITE(b.store), &commits0, &jobs0);
	start = g_get_monotonic_time();
	if (b.limit == 0)
		g_timeout_add_seconds(seconds, on_stop, &b);
	feed(&b);
	while (b.in_flight > 0 || !b.stopping)
		g_main_context_iteration(NULL, TRUE);
	elapsed = g_get_monotonic_time() - start;
	confab_store_sqlite_get_stats(CONFAB_STORE_SQLITE(b.store), &commits1, &jobs1);
	{
		guint64 turns = b.done - done0;
		gdouble writer_us =
		    (thread_ticks("confab-writer") - writer0) * tick_us / MAX(turns, 1);
		gdouble all_us = (thread_ticks(NULL) - all0) * tick_us / MAX(turns, 1);
		printf("store writer alone, %u in flight: %.0f turns/s (%" G_GUINT64_FORMAT
		       " in %.1f s, %" G_GUINT64_FORMAT " failed), %" G_GUINT64_FORMAT
		       " transactions (%.1f turns each) | writer thread %.1f us CPU/turn "
		       "(ceiling %.0f turns/s), process %.1f us CPU/turn\n",
		       b.max_in_flight,
		       turns / (elapsed / 1e6),
		       turns,
		       elapsed / 1e6,
		       b.failed,
		       commits1 - commits0,
		       (gdouble)(jobs1 - jobs0) / MAX(commits1 - commits0, 1),
		       writer_us,
		       writer_us > 0 ? 1e6 / writer_us : 0.0,
		       all_us);
	}
	g_object_unref(b.store);
	g_object_unref(b.ids);
	g_free(b.month);
	if (argc <= 3) {
		g_autofree gchar *wal = g_strconcat(path, "-wal", NULL);
		g_autofree gchar *shm = g_strconcat(path, "-shm", NULL);
		g_unlink(path);
		g_unlink(wal);
		g_unlink(shm);
		g_rmdir(dir);
	}
	return b.failed > 0;
}
