/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "confab-test-helper.h"
#include "confab-test-pg.h"
#include "store/postgres/confab-pg-connection.h"
#include "store/postgres/confab-pg-pool.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

/* ConfabPgConnection and ConfabPgPool against a real throwaway cluster: one
 * for the whole run, killed, paused and restarted by the last tests. */

static ConfabTestPg *pg;
/* deadlines stretch under valgrind; what is measured against the
 * connection's own timers does not */
static guint slow = 1;

/* ---------- waiting ---------- */

static gboolean
tick_nothing(gpointer data)
{
	return G_SOURCE_CONTINUE;
}

/* Runs the default main context until @condition holds or @timeout_ms
 * passes; a 10 ms tick makes sure the deadline is noticed. */
static gboolean
wait_until(gboolean (*condition)(gpointer), gpointer data, guint timeout_ms)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	guint tick = g_timeout_add(10, tick_nothing, NULL);
	while (!condition(data) && g_get_monotonic_time() < deadline)
		g_main_context_iteration(NULL, TRUE);
	g_source_remove(tick);
	return condition(data);
}

static gboolean
is_set(gpointer data)
{
	return *(gpointer *)data != NULL;
}

static gboolean
is_true(gpointer data)
{
	return *(gboolean *)data;
}

static void
store_result(GObject *source, GAsyncResult *result, gpointer data)
{
	GAsyncResult **out = data;
	g_assert_null(*out);
	*out = g_object_ref(result);
}

static gdouble
ms_since(gint64 start)
{
	return (g_get_monotonic_time() - start) / 1000.0;
}

/* Counts the longest gap between 10 ms ticks: the main loop never stalls. */
typedef struct {
	guint id;
	gint64 last;
	gint64 max_gap;
	guint ticks;
} Ticker;

static gboolean
ticker_tick(gpointer data)
{
	Ticker *t = data;
	gint64 now = g_get_monotonic_time();
	t->max_gap = MAX(t->max_gap, now - t->last);
	t->last = now;
	t->ticks++;
	return G_SOURCE_CONTINUE;
}

static void
ticker_start(Ticker *t)
{
	t->last = g_get_monotonic_time();
	t->max_gap = 0;
	t->ticks = 0;
	t->id = g_timeout_add(10, ticker_tick, t);
}

static void
ticker_stop(Ticker *t)
{
	g_source_remove(t->id);
	g_test_message("main loop: %u ticks, longest gap %.1f ms", t->ticks, t->max_gap / 1000.0);
	/* a 10 ms tick; anything near a second would mean a blocking call */
	g_assert_cmpint(t->max_gap, <, 250000 * slow);
}

/* ---------- connections and queries ---------- */

static ConfabPgConnection *
connect_full(const gchar *url,
	     const gchar *password,
	     guint connect_ms,
	     guint query_ms,
	     GError **error)
{
	g_autoptr(ConfabPgConnection) conn = confab_pg_connection_new(url, password);
	g_autoptr(GAsyncResult) res = NULL;

	confab_pg_connection_set_connect_timeout(conn, connect_ms);
	confab_pg_connection_set_query_timeout(conn, query_ms);
	confab_pg_connection_connect_async(conn, NULL, store_result, &res);
	g_assert_true(wait_until(is_set, &res, connect_ms + 10000 * slow));
	if (!confab_pg_connection_connect_finish(conn, res, error))
		return NULL;
	g_assert_cmpint(confab_pg_connection_get_state(conn), ==, CONFAB_PG_CONNECTION_STATE_READY);
	return g_steal_pointer(&conn);
}

static ConfabPgConnection *
connect_socket(void)
{
	g_autoptr(GError) error = NULL;
	ConfabPgConnection *conn =
	    connect_full(confab_test_pg_get_socket_url(pg), NULL, 5000, 5000, &error);
	g_assert_no_error(error);
	return conn;
}

static PGresult *
query(ConfabPgConnection *conn,
      const gchar *sql,
      guint n_params,
      const gchar *const *params,
      GError **error)
{
	g_autoptr(GAsyncResult) res = NULL;
	confab_pg_connection_query_async(conn, sql, n_params, params, NULL, store_result, &res);
	g_assert_true(wait_until(is_set, &res, 30000 * slow));
	return confab_pg_connection_query_finish(conn, res, error);
}

static PGresult *
query_ok(ConfabPgConnection *conn, const gchar *sql, guint n_params, const gchar *const *params)
{
	g_autoptr(GError) error = NULL;
	PGresult *res = query(conn, sql, n_params, params, &error);
	g_assert_no_error(error);
	g_assert_nonnull(res);
	return res;
}

/* The one value of a one-row, one-column result. */
static gchar *
query_value(ConfabPgConnection *conn, const gchar *sql, guint n_params, const gchar *const *params)
{
	g_autoptr(PGresult) res = query_ok(conn, sql, n_params, params);
	g_assert_cmpint(PQresultStatus(res), ==, PGRES_TUPLES_OK);
	g_assert_cmpint(PQntuples(res), ==, 1);
	return g_strdup(PQgetvalue(res, 0, 0));
}

static void
count_closed(ConfabPgConnection *conn, const GError *error, gpointer data)
{
	GError **out = data;
	g_assert_nonnull(error);
	g_assert_null(*out);
	*out = g_error_copy(error);
}

/* ---------- the tests ---------- */

static void
test_connect(void)
{
	gint64 start;
	gdouble total = 0;
	const guint n = 10;

	for (guint i = 0; i < n; i++) {
		g_autoptr(ConfabPgConnection) conn = NULL;
		start = g_get_monotonic_time();
		conn = connect_socket();
		total += ms_since(start);
		g_assert_cmpint(confab_pg_connection_get_backend_pid(conn), >, 0);
		g_assert_cmpuint(confab_pg_connection_get_n_queued(conn), ==, 0);
		g_assert_cmpint(confab_pg_connection_get_transaction_status(conn),
				==,
				PQTRANS_IDLE);
	}
	g_test_message("connect over the Unix socket, SET included: %.2f ms on average", total / n);
	total = 0;
	for (guint i = 0; i < n; i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabPgConnection) conn = NULL;
		start = g_get_monotonic_time();
		conn = connect_full(confab_test_pg_get_url(pg),
				    confab_test_pg_get_password(pg),
				    5000,
				    5000,
				    &error);
		total += ms_since(start);
		g_assert_no_error(error);
	}
	g_test_message("connect over TCP with scram-sha-256: %.2f ms on average", total / n);
}

static void
test_statement_timeout_set(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabPgConnection) conn =
	    connect_full(confab_test_pg_get_socket_url(pg), NULL, 5000, 1234, &error);
	g_autofree gchar *value = NULL;

	g_assert_no_error(error);
	value = query_value(conn, "SHOW statement_timeout", 0, NULL);
	/* a second over the client's own timeout */
	g_assert_cmpstr(value, ==, "2234ms");
}

/* A statement that carries megabytes has a second per MiB more, from
 * the server too (1234 ms, a second per MiB, the margin), for itself alone */
static void
test_statement_timeout_large(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabPgConnection) conn =
	    connect_full(confab_test_pg_get_socket_url(pg), NULL, 5000, 1234, &error);
	g_autofree gchar *big = g_strnfill(3 * 1024 * 1024, 'x');
	const gchar *params[] = {big};
	g_autofree gchar *during = NULL;
	g_autofree gchar *after = NULL;

	g_assert_no_error(error);
	during = query_value(conn,
			     "SELECT current_setting('statement_timeout') || ':' || "
			     "length($1::text)",
			     1,
			     params);
	g_assert_cmpstr(during, ==, "5234ms:3145728");
	after = query_value(conn, "SHOW statement_timeout", 0, NULL);
	g_assert_cmpstr(after, ==, "2234ms");
}

static void
test_params_and_nulls(void)
{
	g_autoptr(ConfabPgConnection) conn = connect_socket();
	const gchar *params[] = {"41", NULL, "h\303\251llo 'quoted' \"x\"; DROP TABLE y"};
	g_autoptr(PGresult) res =
	    query_ok(conn,
		     "SELECT $1::int + 1, $2::text IS NULL, $3::text, $2::text, length($3)",
		     3,
		     params);

	g_assert_cmpint(PQresultStatus(res), ==, PGRES_TUPLES_OK);
	g_assert_cmpint(PQntuples(res), ==, 1);
	g_assert_cmpstr(PQgetvalue(res, 0, 0), ==, "42");
	g_assert_cmpstr(PQgetvalue(res, 0, 1), ==, "t");
	g_assert_cmpstr(PQgetvalue(res, 0, 2), ==, params[2]);
	g_assert_true(PQgetisnull(res, 0, 3));
	g_assert_false(PQgetisnull(res, 0, 2));
	g_assert_cmpstr(PQgetvalue(res, 0, 4), ==, "32");
	g_assert_null(confab_pg_error_result_sqlstate(res));
}

static void
test_prepared_reuse(void)
{
	g_autoptr(ConfabPgConnection) conn = connect_socket();
	const gchar *sql = "SELECT $1::int * 2";
	const gchar *check = "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1";
	const gchar *check_params[] = {sql};
	g_autofree gchar *count = NULL;
	g_autofree gchar *all = NULL;
	g_autoptr(PGresult) set = NULL;
	gint64 start;
	const guint n = 2000;

	for (guint i = 0; i < 3; i++) {
		g_autofree gchar *arg = g_strdup_printf("%u", i);
		const gchar *params[] = {arg};
		g_autofree gchar *value = query_value(conn, sql, 1, params);
		g_assert_cmpint(atoi(value), ==, (gint)i * 2);
	}
	/* prepared once, under one name, and reused */
	count = query_value(conn, check, 1, check_params);
	g_assert_cmpstr(count, ==, "1");
	/* that one and the check itself; utility statements are not prepared */
	set = query_ok(conn, "SET application_name = 'prepared-test'", 0, NULL);
	all = query_value(conn, "SELECT count(*) FROM pg_prepared_statements", 0, NULL);
	g_assert_cmpstr(all, ==, "3");

	/* the round trip of a trivial prepared query, one after the other */
	start = g_get_monotonic_time();
	for (guint i = 0; i < n; i++) {
		g_autoptr(PGresult) res = query_ok(conn, "SELECT 1", 0, NULL);
		g_assert_cmpint(PQntuples(res), ==, 1);
	}
	g_test_message("SELECT 1 over the Unix socket: %.1f us a round trip",
		       ms_since(start) * 1000 / n);
}

static void
test_round_trip_tcp(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabPgConnection) conn = connect_full(confab_test_pg_get_url(pg),
							  confab_test_pg_get_password(pg),
							  5000,
							  5000,
							  &error);
	const guint n = 2000;
	gint64 start;

	g_assert_no_error(error);
	start = g_get_monotonic_time();
	for (guint i = 0; i < n; i++) {
		g_autoptr(PGresult) res = query_ok(conn, "SELECT 1", 0, NULL);
		g_assert_cmpint(PQntuples(res), ==, 1);
	}
	g_test_message("SELECT 1 over TCP loopback: %.1f us a round trip",
		       ms_since(start) * 1000 / n);
}

typedef struct {
	GArray *order;
	guint done;
} Fifo;

typedef struct {
	Fifo *fifo;
	guint index;
} FifoItem;

static void
fifo_done(GObject *source, GAsyncResult *result, gpointer data)
{
	g_autofree FifoItem *item = data;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res =
	    confab_pg_connection_query_finish(CONFAB_PG_CONNECTION(source), result, &error);
	g_assert_no_error(error);
	g_assert_cmpint(atoi(PQgetvalue(res, 0, 0)), ==, (gint)item->index);
	g_array_append_val(item->fifo->order, item->index);
	item->fifo->done++;
}

static gboolean
fifo_all_done(gpointer data)
{
	return ((Fifo *)data)->done == 100;
}

static void
test_fifo(void)
{
	g_autoptr(ConfabPgConnection) conn = connect_socket();
	Fifo fifo = {g_array_new(FALSE, FALSE, sizeof(guint)), 0};
	gint64 start = g_get_monotonic_time();

	/* two texts in turn: prepared ones and a first use interleave */
	for (guint i = 0; i < 100; i++) {
		g_autofree gchar *arg = g_strdup_printf("%u", i);
		const gchar *params[] = {arg};
		FifoItem *item = g_new0(FifoItem, 1);
		item->fifo = &fifo;
		item->index = i;
		confab_pg_connection_query_async(conn,
						 i % 2 ? "SELECT $1::int" : "SELECT $1::int + 0",
						 1,
						 params,
						 NULL,
						 fifo_done,
						 item);
	}
	g_assert_cmpuint(confab_pg_connection_get_n_queued(conn), ==, 100);
	g_assert_true(wait_until(fifo_all_done, &fifo, 10000 * slow));
	g_test_message("100 queued queries: %.1f ms", ms_since(start));
	for (guint i = 0; i < 100; i++)
		g_assert_cmpuint(g_array_index(fifo.order, guint, i), ==, i);
	g_assert_cmpuint(confab_pg_connection_get_n_queued(conn), ==, 0);
	g_array_unref(fifo.order);
}

static void
assert_sqlstate(GError *error, const gchar *sqlstate)
{
	g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_SQL);
	g_assert_cmpstr(confab_pg_error_get_sqlstate(error), ==, sqlstate);
	g_assert_nonnull(strstr(error->message, sqlstate));
	g_assert_false(confab_pg_error_is_unavailable(error));
}

static void
test_sql_errors(void)
{
	g_autoptr(ConfabPgConnection) conn = connect_socket();
	const gchar *one[] = {"1"};
	g_autoptr(PGresult) made = NULL;
	g_autoptr(PGresult) first = NULL;
	g_autofree gchar *value = NULL;

	{
		g_autoptr(GError) error = NULL;
		g_autoptr(PGresult) res =
		    query(conn, "SELECT 1 / $1::int", 1, (const gchar *[]){"0"}, &error);
		g_assert_null(res);
		assert_sqlstate(error, "22012");
		g_test_message("%s", error->message);
	}
	/* a syntax error fails the prepare; it is not cached, and fails again */
	for (guint i = 0; i < 2; i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(PGresult) res = query(conn, "SELEC $1", 1, one, &error);
		g_assert_null(res);
		assert_sqlstate(error, "42601");
	}
	made = query_ok(conn, "CREATE TEMP TABLE t (id int PRIMARY KEY)", 0, NULL);
	first = query_ok(conn, "INSERT INTO t VALUES ($1::int)", 1, one);
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(PGresult) res =
		    query(conn, "INSERT INTO t VALUES ($1::int)", 1, one, &error);
		g_assert_null(res);
		assert_sqlstate(error, "23505");
	}
	/* and the connection goes on */
	value = query_value(conn, "SELECT count(*) FROM t", 0, NULL);
	g_assert_cmpstr(value, ==, "1");
	g_assert_cmpint(confab_pg_connection_get_transaction_status(conn), ==, PQTRANS_IDLE);
}

static GPtrArray *
transaction(ConfabPgConnection *conn, ConfabPgBatch *batch, GError **error)
{
	g_autoptr(GAsyncResult) res = NULL;
	confab_pg_connection_transaction_async(conn, batch, NULL, store_result, &res);
	g_assert_true(wait_until(is_set, &res, 10000 * slow));
	return confab_pg_connection_transaction_finish(conn, res, error);
}

static PGresult *
script(ConfabPgConnection *conn, const gchar *sql, GError **error)
{
	g_autoptr(GAsyncResult) res = NULL;
	confab_pg_connection_exec_script_async(conn, sql, NULL, store_result, &res);
	g_assert_true(wait_until(is_set, &res, 10000 * slow));
	return confab_pg_connection_exec_script_finish(conn, res, error);
}

static void
test_transactions(void)
{
	g_autoptr(ConfabPgConnection) conn = connect_socket();
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) made = NULL;
	g_autoptr(GPtrArray) results = NULL;
	g_autoptr(ConfabPgBatch) ok = confab_pg_batch_new();
	g_autoptr(ConfabPgBatch) bad = confab_pg_batch_new();
	g_autofree gchar *count = NULL;

	made = query_ok(conn, "CREATE TEMP TABLE t (id int PRIMARY KEY, note text)", 0, NULL);

	/* all of it */
	confab_pg_batch_add(ok,
			    "INSERT INTO t VALUES ($1::int, $2)",
			    2,
			    (const gchar *[]){"1", NULL});
	confab_pg_batch_add(ok,
			    "INSERT INTO t VALUES ($1::int, $2)",
			    2,
			    (const gchar *[]){"2", "b"});
	confab_pg_batch_add(ok, "SELECT count(*) FROM t", 0, NULL);
	results = transaction(conn, ok, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(results->len, ==, 3);
	g_assert_cmpstr(PQcmdStatus(g_ptr_array_index(results, 0)), ==, "INSERT 0 1");
	g_assert_cmpstr(PQgetvalue(g_ptr_array_index(results, 2), 0, 0), ==, "2");
	g_assert_cmpint(confab_pg_connection_get_transaction_status(conn), ==, PQTRANS_IDLE);

	/* or nothing: the second statement fails, the first is rolled back */
	confab_pg_batch_add(bad,
			    "INSERT INTO t VALUES ($1::int, $2)",
			    2,
			    (const gchar *[]){"3", "c"});
	confab_pg_batch_add(bad,
			    "INSERT INTO t VALUES ($1::int, $2)",
			    2,
			    (const gchar *[]){"1", "dup"});
	confab_pg_batch_add(bad,
			    "INSERT INTO t VALUES ($1::int, $2)",
			    2,
			    (const gchar *[]){"4", "d"});
	g_clear_pointer(&results, g_ptr_array_unref);
	results = transaction(conn, bad, &error);
	g_assert_null(results);
	assert_sqlstate(error, "23505");
	g_assert_true(g_str_has_prefix(error->message, "statement 2 of the transaction: "));
	g_clear_error(&error);
	g_assert_cmpint(confab_pg_connection_get_transaction_status(conn), ==, PQTRANS_IDLE);
	count = query_value(conn, "SELECT count(*) FROM t", 0, NULL);
	g_assert_cmpstr(count, ==, "2");

	/* by hand: BEGIN, a failed statement, COMMIT reports the rollback */
	{
		g_autoptr(PGresult) begin = query_ok(conn, "BEGIN", 0, NULL);
		g_autoptr(PGresult) insert = query(conn,
						   "INSERT INTO t VALUES ($1::int, $2)",
						   2,
						   (const gchar *[]){"5", "e"},
						   NULL);
		g_autoptr(PGresult) dup = query(conn,
						"INSERT INTO t VALUES ($1::int, $2)",
						2,
						(const gchar *[]){"1", "x"},
						&error);
		g_autoptr(PGresult) commit = NULL;
		g_assert_nonnull(insert);
		assert_sqlstate(error, "23505");
		g_clear_error(&error);
		g_assert_cmpint(confab_pg_connection_get_transaction_status(conn),
				==,
				PQTRANS_INERROR);
		commit = query(conn, "COMMIT", 0, NULL, &error);
		g_assert_null(commit);
		assert_sqlstate(error, "25P02");
		g_clear_error(&error);
		g_assert_cmpint(confab_pg_connection_get_transaction_status(conn),
				==,
				PQTRANS_IDLE);
	}
	g_free(count);
	count = query_value(conn, "SELECT count(*) FROM t", 0, NULL);
	g_assert_cmpstr(count, ==, "2");

	/* a script: one round trip, the last result */
	{
		g_autoptr(PGresult) res = script(conn,
						 "CREATE TEMP TABLE s (x int); "
						 "INSERT INTO s VALUES (1), (2); "
						 "SELECT sum(x) FROM s",
						 &error);
		g_assert_no_error(error);
		g_assert_cmpstr(PQgetvalue(res, 0, 0), ==, "3");
	}
	/* a script failing inside its own BEGIN is rolled back */
	{
		g_autoptr(PGresult) res = script(conn,
						 "BEGIN; INSERT INTO s VALUES (5); "
						 "SELECT 1 / 0; COMMIT",
						 &error);
		g_assert_null(res);
		assert_sqlstate(error, "22012");
		g_clear_error(&error);
		g_assert_cmpint(confab_pg_connection_get_transaction_status(conn),
				==,
				PQTRANS_IDLE);
	}
	g_free(count);
	count = query_value(conn, "SELECT sum(x) FROM s", 0, NULL);
	g_assert_cmpstr(count, ==, "3");
}

typedef struct {
	gchar *channel;
	gchar *payload;
	gint64 at;
} Notification;

static void
on_notification(GObject *source, const gchar *channel, const gchar *payload, gpointer data)
{
	Notification *n = data;
	if (n->channel != NULL)
		return;
	n->channel = g_strdup(channel);
	n->payload = g_strdup(payload);
	n->at = g_get_monotonic_time();
}

static void
notification_clear(Notification *n)
{
	g_clear_pointer(&n->channel, g_free);
	g_clear_pointer(&n->payload, g_free);
}

static void
test_listen_notify(void)
{
	g_autoptr(ConfabPgConnection) listener = connect_socket();
	g_autoptr(ConfabPgConnection) sender = connect_socket();
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) sent = NULL;
	Notification n = {NULL};
	/* a space and a quote: the name is quoted */
	const gchar *channel = "confab \"test\"";
	gint64 start;

	g_signal_connect(listener, "notification", G_CALLBACK(on_notification), &n);
	confab_pg_connection_listen_async(listener, channel, NULL, store_result, &res);
	g_assert_true(wait_until(is_set, &res, 5000 * slow));
	g_assert_true(confab_pg_connection_listen_finish(listener, res, &error));
	g_assert_no_error(error);

	start = g_get_monotonic_time();
	sent = query_ok(sender,
			"SELECT pg_notify($1, $2)",
			2,
			(const gchar *[]){channel, "payload \303\274"});
	/* the listener is idle: its socket watch alone delivers it */
	g_assert_true(wait_until(is_set, &n.channel, 1000 * slow));
	g_assert_cmpstr(n.channel, ==, channel);
	g_assert_cmpstr(n.payload, ==, "payload \303\274");
	g_test_message("NOTIFY delivered in %.2f ms", (n.at - start) / 1000.0);
	notification_clear(&n);

	/* a listener busy with its own query gets it too */
	g_clear_pointer(&sent, PQclear);
	sent = query_ok(sender, "SELECT pg_notify($1, '')", 1, (const gchar *[]){channel});
	{
		g_autoptr(PGresult) busy = query_ok(listener, "SELECT 1", 0, NULL);
	}
	g_assert_true(wait_until(is_set, &n.channel, 1000 * slow));
	g_assert_cmpstr(n.payload, ==, "");
	notification_clear(&n);
}

static gboolean
cancel_later(gpointer data)
{
	g_cancellable_cancel(data);
	return G_SOURCE_REMOVE;
}

static void
test_cancellable(void)
{
	g_autoptr(ConfabPgConnection) conn = connect_socket();
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	g_autoptr(GCancellable) queued_cancellable = g_cancellable_new();
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GAsyncResult) queued_res = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) result = NULL;
	g_autofree gchar *value = NULL;
	gint64 start = g_get_monotonic_time();

	confab_pg_connection_query_async(conn,
					 "SELECT pg_sleep(10)",
					 0,
					 NULL,
					 cancellable,
					 store_result,
					 &res);
	confab_pg_connection_query_async(conn,
					 "SELECT 2",
					 0,
					 NULL,
					 queued_cancellable,
					 store_result,
					 &queued_res);
	g_timeout_add(100, cancel_later, cancellable);
	g_cancellable_cancel(queued_cancellable);
	g_assert_true(wait_until(is_set, &queued_res, 1000 * slow));
	result = confab_pg_connection_query_finish(conn, queued_res, &error);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_clear_error(&error);

	g_assert_true(wait_until(is_set, &res, 1000 * slow));
	result = confab_pg_connection_query_finish(conn, res, &error);
	g_assert_null(result);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	g_assert_cmpfloat(ms_since(start), <, 1000 * slow);

	/* the server was told to stop: the next query does not wait 10 s */
	start = g_get_monotonic_time();
	value = query_value(conn, "SELECT 3", 0, NULL);
	g_assert_cmpstr(value, ==, "3");
	g_assert_cmpfloat(ms_since(start), <, 2000 * slow);
	g_assert_cmpint(confab_pg_connection_get_state(conn), ==, CONFAB_PG_CONNECTION_STATE_READY);
}

static void
test_query_timeout(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabPgConnection) conn =
	    connect_full(confab_test_pg_get_socket_url(pg), NULL, 5000, 500, &error);
	g_autoptr(PGresult) res = NULL;
	g_autofree gchar *value = NULL;
	gint64 start;
	gdouble took;

	g_assert_no_error(error);
	/* the client's timer fires (the server's statement_timeout would too) */
	start = g_get_monotonic_time();
	res = query(conn, "SELECT pg_sleep(5)", 0, NULL, &error);
	took = ms_since(start);
	g_assert_null(res);
	g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_TIMEOUT);
	g_assert_true(confab_pg_error_is_unavailable(error));
	g_test_message("query timeout of 500 ms fired after %.1f ms", took);
	g_assert_cmpfloat(took, >=, 490);
	g_assert_cmpfloat(took, <, 1000 * slow);
	g_clear_error(&error);

	/* the server stopped it; the connection goes on */
	value = query_value(conn, "SELECT 4", 0, NULL);
	g_assert_cmpstr(value, ==, "4");
	g_assert_cmpint(confab_pg_connection_get_state(conn), ==, CONFAB_PG_CONNECTION_STATE_READY);

	/* a transaction that times out is rolled back, after the cancel
	 * request is done with (it could hit the ROLLBACK otherwise) */
	{
		g_autoptr(ConfabPgBatch) batch = confab_pg_batch_new();
		g_autoptr(GPtrArray) results = NULL;
		g_autoptr(PGresult) made = query_ok(conn, "CREATE TEMP TABLE t (id int)", 0, NULL);
		g_autofree gchar *count = NULL;

		confab_pg_batch_add(batch, "INSERT INTO t VALUES (1)", 0, NULL);
		confab_pg_batch_add(batch, "SELECT pg_sleep(5)", 0, NULL);
		confab_pg_batch_add(batch, "INSERT INTO t VALUES (2)", 0, NULL);
		results = transaction(conn, batch, &error);
		g_assert_null(results);
		g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_TIMEOUT);
		g_clear_error(&error);
		count = query_value(conn, "SELECT count(*) FROM t", 0, NULL);
		g_assert_cmpstr(count, ==, "0");
		g_assert_cmpint(confab_pg_connection_get_transaction_status(conn),
				==,
				PQTRANS_IDLE);
	}
}

static void
test_password(void)
{
	const gchar *url = confab_test_pg_get_url(pg);
	const gchar *password = confab_test_pg_get_password(pg);
	g_autofree gchar *with_password = NULL;
	g_autofree gchar *user = NULL;

	/* no password: refused */
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabPgConnection) conn = connect_full(url, NULL, 5000, 5000, &error);
		g_assert_null(conn);
		g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_CONNECT);
		g_assert_nonnull(strstr(error->message, "password"));
		g_test_message("%s", error->message);
	}
	/* a wrong one */
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabPgConnection) conn = connect_full(url, "wrong", 5000, 5000, &error);
		g_assert_null(conn);
		g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_CONNECT);
		g_assert_nonnull(strstr(error->message, "password authentication failed"));
	}
	/* in the conninfo */
	with_password = g_strdup_printf("postgresql://confab:%s@%s",
					password,
					url + strlen("postgresql://confab@"));
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabPgConnection) conn =
		    connect_full(with_password, NULL, 5000, 5000, &error);
		g_assert_no_error(error);
		user = query_value(conn, "SELECT current_user", 0, NULL);
		g_assert_cmpstr(user, ==, "confab");
	}
	/* given apart (a password file's): it wins over the conninfo's */
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabPgConnection) conn =
		    connect_full(url, password, 5000, 5000, &error);
		g_assert_no_error(error);
	}
}

static void
test_close(void)
{
	g_autoptr(ConfabPgConnection) conn = connect_socket();
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) closed = NULL;
	g_autoptr(PGresult) result = NULL;

	g_signal_connect(conn, "closed", G_CALLBACK(count_closed), &closed);
	confab_pg_connection_query_async(conn,
					 "SELECT pg_sleep(10)",
					 0,
					 NULL,
					 NULL,
					 store_result,
					 &res);
	confab_pg_connection_close(conn);
	g_assert_nonnull(closed);
	g_assert_error(closed, CONFAB_PG_ERROR, CONFAB_PG_ERROR_CLOSED);
	g_assert_true(wait_until(is_set, &res, 1000 * slow));
	result = confab_pg_connection_query_finish(conn, res, &error);
	g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_CLOSED);
	g_clear_error(&error);

	/* and later queries fail at once */
	g_clear_object(&res);
	result = query(conn, "SELECT 1", 0, NULL, &error);
	g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_CLOSED);
}

/* ---------- the pool ---------- */

static ConfabPgPool *
pool_new(guint size)
{
	ConfabPgPool *pool =
	    confab_pg_pool_new(confab_test_pg_get_url(pg), confab_test_pg_get_password(pg), size);
	confab_pg_pool_set_connect_timeout(pool, 2000);
	confab_pg_pool_set_query_timeout(pool, 5000);
	return pool;
}

static gboolean
pool_available(gpointer data)
{
	return confab_pg_pool_get_available(data);
}

static gboolean
pool_unavailable(gpointer data)
{
	return !confab_pg_pool_get_available(data);
}

static gboolean
pool_all_ready(gpointer data)
{
	return confab_pg_pool_get_n_ready(data) == confab_pg_pool_get_size(data);
}

static ConfabPgConnection *
acquire(ConfabPgPool *pool, GError **error)
{
	g_autoptr(GAsyncResult) res = NULL;
	confab_pg_pool_acquire_async(pool, NULL, store_result, &res);
	g_assert_true(wait_until(is_set, &res, 10000 * slow));
	return confab_pg_pool_acquire_finish(pool, res, error);
}

static PGresult *
pool_query(ConfabPgPool *pool, const gchar *sql, GError **error)
{
	g_autoptr(GAsyncResult) res = NULL;
	confab_pg_pool_query_async(pool, sql, 0, NULL, NULL, store_result, &res);
	g_assert_true(wait_until(is_set, &res, 10000 * slow));
	return confab_pg_pool_query_finish(pool, res, error);
}

static void
test_pool(void)
{
	g_autoptr(ConfabPgPool) pool = pool_new(2);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabPgConnection) a = NULL;
	g_autoptr(ConfabPgConnection) b = NULL;
	g_autoptr(ConfabPgConnection) c = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(PGresult) begin = NULL;
	g_autoptr(PGresult) r = NULL;

	confab_pg_pool_start(pool);
	/* while it starts, an acquire waits rather than failing */
	a = acquire(pool, &error);
	g_assert_no_error(error);
	g_assert_true(confab_pg_pool_get_available(pool));
	g_assert_true(wait_until(pool_all_ready, pool, 5000 * slow));
	b = acquire(pool, &error);
	g_assert_no_error(error);
	g_assert_true(a != b);

	/* both lent: the third waits until one comes back */
	confab_pg_pool_acquire_async(pool, NULL, store_result, &res);
	for (guint i = 0; i < 20; i++)
		g_main_context_iteration(NULL, FALSE);
	g_assert_null(res);
	/* left inside a transaction: rolled back before the next borrower */
	begin = query_ok(a, "BEGIN", 0, NULL);
	g_assert_cmpint(confab_pg_connection_get_transaction_status(a), ==, PQTRANS_INTRANS);
	confab_pg_pool_release(pool, a);
	g_assert_true(wait_until(is_set, &res, 1000 * slow));
	c = confab_pg_pool_acquire_finish(pool, res, &error);
	g_assert_no_error(error);
	g_assert_true(c == a);
	r = query_ok(c, "SELECT 1", 0, NULL);
	g_assert_cmpint(confab_pg_connection_get_transaction_status(c), ==, PQTRANS_IDLE);
	confab_pg_pool_release(pool, c);
	confab_pg_pool_release(pool, b);

	/* pool queries */
	g_clear_pointer(&r, PQclear);
	r = pool_query(pool, "SELECT 42", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(PQgetvalue(r, 0, 0), ==, "42");
}

/* ---------- the server goes away ---------- */

typedef struct {
	guint failed;
	guint closed_errors;
	gint64 last_at;
} Failures;

static void
expect_closed(GObject *source, GAsyncResult *result, gpointer data)
{
	Failures *f = data;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res =
	    confab_pg_connection_query_finish(CONFAB_PG_CONNECTION(source), result, &error);
	g_assert_null(res);
	g_assert_nonnull(error);
	if (g_error_matches(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_CLOSED))
		f->closed_errors++;
	g_assert_true(confab_pg_error_is_unavailable(error));
	f->failed++;
	f->last_at = g_get_monotonic_time();
}

static gboolean
six_failed(gpointer data)
{
	return ((Failures *)data)->failed == 6;
}

static void
test_server_killed(void)
{
	g_autoptr(ConfabPgConnection) busy = connect_socket();
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabPgConnection) idle = connect_full(confab_test_pg_get_url(pg),
							  confab_test_pg_get_password(pg),
							  5000,
							  30000,
							  &error);
	g_autoptr(GError) busy_closed = NULL;
	g_autoptr(GError) idle_closed = NULL;
	Failures f = {0};
	gint64 start;

	g_assert_no_error(error);
	confab_pg_connection_set_query_timeout(busy, 30000);
	g_signal_connect(busy, "closed", G_CALLBACK(count_closed), &busy_closed);
	g_signal_connect(idle, "closed", G_CALLBACK(count_closed), &idle_closed);
	confab_pg_connection_query_async(busy,
					 "SELECT pg_sleep(30)",
					 0,
					 NULL,
					 NULL,
					 expect_closed,
					 &f);
	for (guint i = 0; i < 5; i++)
		confab_pg_connection_query_async(busy,
						 "SELECT 1",
						 0,
						 NULL,
						 NULL,
						 expect_closed,
						 &f);
	g_assert_cmpuint(confab_pg_connection_get_n_queued(busy), ==, 6);

	start = g_get_monotonic_time();
	confab_test_pg_kill(pg);
	g_assert_true(wait_until(six_failed, &f, 2000 * slow));
	g_test_message("server killed: 6 queued queries failed within %.1f ms (kill included)",
		       (f.last_at - start) / 1000.0);
	g_assert_cmpuint(f.closed_errors, ==, 6);
	g_assert_nonnull(busy_closed);
	g_assert_error(busy_closed, CONFAB_PG_ERROR, CONFAB_PG_ERROR_CLOSED);
	/* an idle connection notices too, from its socket watch */
	g_assert_true(wait_until(is_set, &idle_closed, 2000 * slow));
	g_assert_cmpint(confab_pg_connection_get_state(idle),
			==,
			CONFAB_PG_CONNECTION_STATE_CLOSED);

	/* refused, now: connecting fails at once */
	{
		g_autoptr(GError) refused = NULL;
		g_autoptr(ConfabPgConnection) conn = NULL;
		start = g_get_monotonic_time();
		conn = connect_full(confab_test_pg_get_socket_url(pg), NULL, 5000, 5000, &refused);
		g_assert_null(conn);
		g_assert_error(refused, CONFAB_PG_ERROR, CONFAB_PG_ERROR_CONNECT);
		g_assert_cmpfloat(ms_since(start), <, 1000 * slow);
	}
	confab_test_pg_restart(pg);
}

static void
on_reconnected(ConfabPgPool *pool, gpointer data)
{
	(*(guint *)data)++;
}

static gboolean
counter_positive(gpointer data)
{
	return *(guint *)data > 0;
}

/* Sends NOTIFYs through the pool until the listener hears one. */
static void
assert_listening(ConfabPgPool *pool, Notification *n)
{
	for (guint i = 0; i < 50 && n->channel == NULL; i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(PGresult) r = pool_query(pool, "NOTIFY confab_cache, 'agent'", &error);
		g_assert_no_error(error);
		wait_until(is_set, &n->channel, 100);
	}
	g_assert_cmpstr(n->channel, ==, "confab_cache");
	g_assert_cmpstr(n->payload, ==, "agent");
	notification_clear(n);
}

static void
test_pool_reconnects(void)
{
	g_autoptr(ConfabPgPool) pool = pool_new(3);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabPgConnection) none = NULL;
	g_autoptr(PGresult) r = NULL;
	Notification n = {NULL};
	guint reconnected = 0;
	gint64 start;
	gdouble took;

	g_signal_connect(pool, "notification", G_CALLBACK(on_notification), &n);
	g_signal_connect(pool, "reconnected", G_CALLBACK(on_reconnected), &reconnected);
	confab_pg_pool_listen(pool, "confab_cache");
	confab_pg_pool_start(pool);
	g_assert_true(wait_until(pool_all_ready, pool, 5000 * slow));
	assert_listening(pool, &n);
	g_assert_cmpuint(reconnected, ==, 0);

	confab_test_pg_kill(pg);
	start = g_get_monotonic_time();
	g_assert_true(wait_until(pool_unavailable, pool, 2000 * slow));
	/* down: callers hear it at once instead of waiting */
	start = g_get_monotonic_time();
	none = acquire(pool, &error);
	took = ms_since(start);
	g_assert_null(none);
	g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_UNAVAILABLE);
	g_assert_true(confab_pg_error_is_unavailable(error));
	g_assert_cmpfloat(took, <, 50 * slow);
	g_clear_error(&error);
	r = pool_query(pool, "SELECT 1", &error);
	g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_UNAVAILABLE);
	g_clear_error(&error);

	/* let the backoff grow a little, then bring the server back */
	wait_until(is_true, &(gboolean){FALSE}, 1500);
	confab_test_pg_restart(pg);
	start = g_get_monotonic_time();
	g_assert_true(wait_until(pool_available, pool, 8000 * slow));
	g_test_message("pool available again %.0f ms after the server came back", ms_since(start));
	g_assert_true(wait_until(pool_all_ready, pool, 8000 * slow));
	g_assert_true(wait_until(counter_positive, &reconnected, 8000 * slow));
	g_test_message("listener reconnected and listening %.0f ms after the server came back",
		       ms_since(start));
	g_assert_cmpuint(reconnected, ==, 1);
	assert_listening(pool, &n);
	r = pool_query(pool, "SELECT 1", &error);
	g_assert_no_error(error);
}

static void
connection_gone(gpointer data, GObject *where)
{
	*(gboolean *)data = TRUE;
}

static void
test_server_paused(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) closed = NULL;
	ConfabPgConnection *conn = NULL;
	g_autoptr(PGresult) res = NULL;
	Ticker ticker;
	gboolean gone = FALSE;
	gint64 start;
	gdouble took;

	conn = connect_full(confab_test_pg_get_url(pg),
			    confab_test_pg_get_password(pg),
			    1000,
			    1000,
			    &error);
	g_assert_no_error(error);
	g_signal_connect(conn, "closed", G_CALLBACK(count_closed), &closed);
	g_object_weak_ref(G_OBJECT(conn), connection_gone, &gone);

	confab_test_pg_pause(pg);
	ticker_start(&ticker);

	/* a query on a connection made before: the query timeout fires, the
	 * cancel request gets no answer, the connection is dropped */
	start = g_get_monotonic_time();
	res = query(conn, "SELECT 1", 0, NULL, &error);
	took = ms_since(start);
	g_assert_null(res);
	g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_TIMEOUT);
	g_test_message("paused server: query timeout of 1000 ms fired after %.1f ms", took);
	g_assert_cmpfloat(took, >=, 990);
	g_assert_cmpfloat(took, <, 1500 * slow);
	g_clear_error(&error);
	g_assert_true(wait_until(is_set, &closed, 4000 * slow));
	g_test_message("paused server: connection dropped %.1f ms after the query",
		       ms_since(start));
	g_assert_error(closed, CONFAB_PG_ERROR, CONFAB_PG_ERROR_TIMEOUT);

	/* a new connection: the connect timeout fires */
	{
		g_autoptr(ConfabPgConnection) late = NULL;
		start = g_get_monotonic_time();
		late = connect_full(confab_test_pg_get_url(pg),
				    confab_test_pg_get_password(pg),
				    1000,
				    1000,
				    &error);
		took = ms_since(start);
		g_assert_null(late);
		g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_TIMEOUT);
		g_assert_true(confab_pg_error_is_unavailable(error));
		g_test_message("paused server: connect timeout of 1000 ms fired after %.1f ms",
			       took);
		g_assert_cmpfloat(took, >=, 990);
		g_assert_cmpfloat(took, <, 1500 * slow);
		g_clear_error(&error);
	}

	/* a pool started now: acquire fails once the first attempts time out */
	{
		g_autoptr(ConfabPgPool) pool = pool_new(2);
		g_autoptr(ConfabPgConnection) none = NULL;
		confab_pg_pool_set_connect_timeout(pool, 500);
		confab_pg_pool_start(pool);
		start = g_get_monotonic_time();
		none = acquire(pool, &error);
		took = ms_since(start);
		g_assert_null(none);
		g_assert_error(error, CONFAB_PG_ERROR, CONFAB_PG_ERROR_UNAVAILABLE);
		g_test_message("paused server: pool acquire failed after %.1f ms", took);
		g_assert_cmpfloat(took, <, 1000 * slow);
		g_clear_error(&error);
	}
	ticker_stop(&ticker);

	confab_test_pg_resume(pg);
	/* the cancel request in its thread ends once the server runs again,
	 * and with it the last reference */
	g_object_unref(conn);
	g_assert_true(wait_until(is_true, &gone, 5000 * slow));
	{
		g_autoptr(ConfabPgConnection) again = connect_socket();
		g_autofree gchar *value = query_value(again, "SELECT 5", 0, NULL);
		g_assert_cmpstr(value, ==, "5");
	}
}

int
main(int argc, char **argv)
{
	int ret;

	/* no password from the environment or ~/.pgpass (before any thread) */
	g_unsetenv("PGPASSWORD");
	g_setenv("PGPASSFILE", "/nonexistent", TRUE);
	confab_test_init(&argc, &argv, FALSE);
	confab_test_pg_skip_unless_available();
	if (RUNNING_ON_VALGRIND)
		slow = 10;

	g_test_add_func("/confab/pg-connection/connect", test_connect);
	g_test_add_func("/confab/pg-connection/statement-timeout-set", test_statement_timeout_set);
	g_test_add_func("/confab/pg-connection/statement-timeout-large",
			test_statement_timeout_large);
	g_test_add_func("/confab/pg-connection/params-and-nulls", test_params_and_nulls);
	g_test_add_func("/confab/pg-connection/prepared-reuse", test_prepared_reuse);
	g_test_add_func("/confab/pg-connection/round-trip-tcp", test_round_trip_tcp);
	g_test_add_func("/confab/pg-connection/fifo", test_fifo);
	g_test_add_func("/confab/pg-connection/sql-errors", test_sql_errors);
	g_test_add_func("/confab/pg-connection/transactions", test_transactions);
	g_test_add_func("/confab/pg-connection/listen-notify", test_listen_notify);
	g_test_add_func("/confab/pg-connection/cancellable", test_cancellable);
	g_test_add_func("/confab/pg-connection/query-timeout", test_query_timeout);
	g_test_add_func("/confab/pg-connection/password", test_password);
	g_test_add_func("/confab/pg-connection/close", test_close);
	g_test_add_func("/confab/pg-pool/acquire-release", test_pool);
	/* these stop the server in some way, and bring it back */
	g_test_add_func("/confab/pg-connection/server-killed", test_server_killed);
	g_test_add_func("/confab/pg-pool/reconnects", test_pool_reconnects);
	g_test_add_func("/confab/pg-connection/server-paused", test_server_paused);

	pg = confab_test_pg_start();
	ret = g_test_run();
	confab_test_pg_stop(pg);
	return ret;
}
