/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabStore"

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "store/confab-store-call.h"
#include "store/postgres/confab-pg-pool.h"
#include "store/postgres/confab-pg-schema.h"
#include "store/postgres/confab-store-postgres.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * The PostgreSQL store: the store interface for any number of confabd on
 * one database.
 *
 * A thread of its own runs a GMainContext that drives a ConfabPgPool
 * (libpq, never a blocking call: see confab-pg-connection.c). Callers'
 * operations are handed to that thread as Ops; each completes its GTask
 * back in the caller's context (the task is returned and freed there, as
 * the SQLite writer does). Nothing here ever waits on the caller's loop, so
 * a request that needs no database is served while the database hangs.
 *
 * What must be atomic across instances is one statement each:
 * - admit_quota: an upsert of the (owner, month) row of usage that adds
 *   one to `pending` only while requests + pending is under the quota, and
 *   a usage_holds row naming this instance; the row lock orders the
 *   instances, so the quota is exact under any concurrency.
 * - commit_turn: confab_commit_turn() (confab-pg-schema.c), one
 *   transaction; the turn's first commit moves its count from pending to
 *   requests and deletes its hold.
 * - release_quota: deletes the hold by its id and takes one off pending
 *   (a release that is retried does nothing twice).
 * - acquire_session: inserts the session's lease row, or finds it taken
 *   (409 conversation_busy); release_session deletes it by its lease id.
 *
 * An instance proves it is alive by renewing its row of `instances` (its
 * lease: `[store] instance_lease` seconds) every third of the lease; each
 * heartbeat also runs confab_reap(), which ends the instances whose row has
 * expired: their pending counts are given back (a count never leaks from a
 * dead instance: it was never committed, as with SQLite after a crash), the
 * unfinished answers of their streams are stored incomplete, their leases
 * freed, the approvals their turns waited for timed out. A killed instance
 * is reaped within a lease and a third. A clean close reaps its own
 * instance at once.
 *
 * An approval a turn waits for names the instance whose turn waits; it is
 * listed, and can be decided, only while that instance's lease runs: a
 * decision on the approval of an instance whose lease ran out times it out
 * instead, in the same statement, since no turn will run its call.
 *
 * Admin writes NOTIFY CHANNEL with "instance change"; every other
 * instance emits ConfabStore::changed for it, and a full change after the
 * listening connection comes back (it may have missed some).
 *
 * The database down or hanging: the pool fails at once when no connection
 * is ready, and a query gets QUERY_TIMEOUT_MS (the server's own
 * statement_timeout is a second longer); both become
 * CONFAB_ERROR_STORE_UNAVAILABLE (503). The pool reconnects by itself.
 */

#define CONNECT_TIMEOUT_MS 3000
#define QUERY_TIMEOUT_MS   3000
#define ACQUIRE_TIMEOUT_MS 2000
#define MIGRATE_TIMEOUT_MS 120000
#define CLOSE_DEADLINE_MS  10000
#define CHANNEL		   "confab_changes"

typedef struct _Op Op;

struct _ConfabStorePostgres {
	GObject parent_instance;
	gchar *url;	 /* owned */
	gchar *password; /* owned, nullable */
	guint pool_size;
	guint lease;		     /* seconds an instance's row stays live unrenewed */
	gchar *instance_id;	     /* owned */
	GMainContext *owner_context; /* owned: where ::changed is emitted */
	GThread *thread;	     /* owned */
	gint closed;		     /* atomic: no new operation */

	/* the store thread's alone */
	GMainContext *context; /* owned */
	GMainLoop *loop;       /* owned */
	ConfabPgPool *pool;    /* owned */
	guint in_flight;
	gboolean closing;
	GSource *heartbeat;   /* owned */
	GSource *close_timer; /* owned */
	GSource *start_timer; /* owned: waiting for LISTEN */
	gboolean beating;
	GHashTable *holds;		      /* owned: "owner\nmonth" -> GQueue of hold ids */
	GHashTable *leases;		      /* owned: session id -> lease id */
	GPtrArray *releases;		      /* owned: Release, to try again */
	guint releasing;		      /* releases in flight */
	GQueue after_releases;		      /* Op (unowned: in flight) that wait for them */
	ConfabPgConnection *setup_connection; /* owned: migrations, while starting */

	/* start-up */
	GMutex lock;
	GCond cond;
	gboolean started;
	GError *start_error; /* owned */
};

static void
confab_store_postgres_iface_init(ConfabStoreInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(ConfabStorePostgres,
			      confab_store_postgres,
			      G_TYPE_OBJECT,
			      G_IMPLEMENT_INTERFACE(CONFAB_TYPE_STORE,
						    confab_store_postgres_iface_init))

/* ---------- operations: from the caller to the store thread and back ---------- */

typedef void (*OpFunc)(ConfabStorePostgres *self, Op *op);

struct _Op {
	ConfabStorePostgres *self; /* unowned: the thread outlives every op */
	GTask *task;		   /* owned; NULL when nobody waits */
	GCancellable *cancellable; /* owned, nullable: reads only */
	OpFunc run;
	gpointer data; /* owned */
	GDestroyNotify data_free;
	gpointer extra; /* owned: what the op keeps between steps */
	GDestroyNotify extra_free;
	/* the outcome */
	gboolean is_pointer;
	gpointer result;
	GDestroyNotify result_free;
	GError *error;
};

static void
op_free(Op *op)
{
	if (op->data_free != NULL && op->data != NULL)
		op->data_free(op->data);
	if (op->extra_free != NULL && op->extra != NULL)
		op->extra_free(op->extra);
	if (op->result_free != NULL && op->result != NULL)
		op->result_free(op->result);
	g_clear_error(&op->error);
	g_clear_object(&op->cancellable);
	g_clear_object(&op->task);
	g_free(op);
}

/* In the caller's context. */
static gboolean
op_complete(gpointer data)
{
	Op *op = data;

	if (op->error != NULL)
		g_task_return_error(op->task, g_steal_pointer(&op->error));
	else if (op->is_pointer)
		g_task_return_pointer(op->task,
				      g_steal_pointer(&op->result),
				      g_steal_pointer(&op->result_free));
	else
		g_task_return_boolean(op->task, TRUE);
	op_free(op);
	return G_SOURCE_REMOVE;
}

static void
close_continue(ConfabStorePostgres *self);

/* In the store thread: the op is over; its caller hears of it in its own
 * context. */
static void
op_done(Op *op)
{
	ConfabStorePostgres *self = op->self;

	if (op->task == NULL) {
		op_free(op);
	} else {
		g_autoptr(GSource) source = g_idle_source_new();
		g_source_set_priority(source, G_PRIORITY_DEFAULT);
		g_source_set_callback(source, op_complete, op, NULL);
		g_source_set_static_name(source, "[confab] postgres op done");
		g_source_attach(source, g_task_get_context(op->task));
	}
	g_assert(self->in_flight > 0);
	self->in_flight--;
	if (self->closing)
		close_continue(self);
}

static void
op_return_error(Op *op, GError *error)
{
	op->error = error;
	op_done(op);
}

static void
op_return_pointer(Op *op, gpointer result, GDestroyNotify result_free)
{
	op->is_pointer = TRUE;
	op->result = result;
	op->result_free = result_free;
	op_done(op);
}

static void
op_return_boolean(Op *op)
{
	op_done(op);
}

static gboolean
op_start(gpointer data)
{
	Op *op = data;
	op->self->in_flight++;
	op->run(op->self, op);
	return G_SOURCE_REMOVE;
}

/* Hands @run and @data (transfer full) to the store thread; @callback
 * hears back in the thread-default context. Without @callback nobody
 * waits. A write ignores @cancellable: once handed over it is seen through. */
static void
op_queue_task(ConfabStorePostgres *self,
	      OpFunc run,
	      gpointer data,
	      GDestroyNotify data_free,
	      gboolean is_read,
	      GTask *task);

static void
op_queue(ConfabStorePostgres *self,
	 OpFunc run,
	 gpointer data,
	 GDestroyNotify data_free,
	 gboolean is_read,
	 gpointer source_tag,
	 GCancellable *cancellable,
	 GAsyncReadyCallback callback,
	 gpointer user_data)
{
	GTask *task = NULL;

	if (callback != NULL) {
		task = g_task_new(self, cancellable, callback, user_data);
		g_task_set_source_tag(task, source_tag);
	}
	op_queue_task(self, run, data, data_free, is_read, task);
}

/* op_queue() for @task (transfer full, nullable: nobody waits). */
static void
op_queue_task(ConfabStorePostgres *self,
	      OpFunc run,
	      gpointer data,
	      GDestroyNotify data_free,
	      gboolean is_read,
	      GTask *task)
{
	Op *op = g_new0(Op, 1);
	GCancellable *cancellable = task != NULL ? g_task_get_cancellable(task) : NULL;
	g_autoptr(GSource) source = NULL;

	op->self = self;
	op->run = run;
	op->data = data;
	op->data_free = data_free;
	op->task = task;
	if (task != NULL)
		g_task_set_check_cancellable(task, is_read);
	if (is_read && cancellable != NULL)
		op->cancellable = g_object_ref(cancellable);
	if (g_atomic_int_get(&self->closed)) {
		if (op->task != NULL)
			g_task_return_new_error(op->task,
						CONFAB_ERROR,
						CONFAB_ERROR_SHUTTING_DOWN,
						"the store is closed");
		op_free(op);
		return;
	}
	if (is_read && op->task != NULL && g_task_return_error_if_cancelled(op->task)) {
		op_free(op);
		return;
	}
	source = g_idle_source_new();
	g_source_set_priority(source, G_PRIORITY_DEFAULT);
	g_source_set_callback(source, op_start, op, NULL);
	g_source_set_static_name(source, "[confab] postgres op");
	g_source_attach(source, self->context);
}

/* In a vfunc: op_queue() of run_@name for its caller, tagged with the vfunc. */
#define QUEUE(name, data, data_free, is_read)                                                      \
	op_queue(CONFAB_STORE_POSTGRES(store),                                                     \
		 run_##name,                                                                       \
		 (data),                                                                           \
		 (GDestroyNotify)(data_free),                                                      \
		 (is_read),                                                                        \
		 confab_store_postgres_##name,                                                     \
		 cancellable,                                                                      \
		 callback,                                                                         \
		 user_data)

/* ---------- errors and values ---------- */

/* A PostgreSQL layer error, as the store's callers know errors. */
static GError *
store_error(GError *pg_error, const gchar *what)
{
	g_autoptr(GError) error = pg_error;
	const gchar *sqlstate = confab_pg_error_get_sqlstate(error);
	ConfabErrorCode code = CONFAB_ERROR_FAILED;

	if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
		return g_steal_pointer(&error);
	if (confab_pg_error_is_unavailable(error))
		return g_error_new(CONFAB_ERROR,
				   CONFAB_ERROR_STORE_UNAVAILABLE,
				   "%s: the database is unavailable: %s",
				   what,
				   error->message);
	/* CF404: raised by confab_commit_turn(); 23503: a message whose
	 * session is gone */
	if (g_strcmp0(sqlstate, "CF404") == 0 || g_strcmp0(sqlstate, "23503") == 0)
		code = CONFAB_ERROR_CONVERSATION_NOT_FOUND;
	return g_error_new(CONFAB_ERROR, code, "%s: %s", what, error->message);
}

/* Text parameters, each nullable. */
typedef GPtrArray Params;

static Params *
params_new(void)
{
	return g_ptr_array_new_with_free_func(g_free);
}

static void
params_add(Params *params, const gchar *value)
{
	g_ptr_array_add(params, g_strdup(value));
}

static void
params_add_int(Params *params, gint64 value)
{
	g_ptr_array_add(params, g_strdup_printf("%" G_GINT64_FORMAT, value));
}

static const gchar *
column_text(PGresult *res, gint row, gint col)
{
	return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

static gint64
column_int(PGresult *res, gint row, gint col)
{
	return PQgetisnull(res, row, col) ? 0
					  : g_ascii_strtoll(PQgetvalue(res, row, col), NULL, 10);
}

static gboolean
column_bool(PGresult *res, gint row, gint col)
{
	return !PQgetisnull(res, row, col) && PQgetvalue(res, row, col)[0] == 't';
}

/* Runs one statement on a pooled connection; @callback gets the op. */
static void
op_query(Op *op, const gchar *sql, Params *params, GAsyncReadyCallback callback)
{
	confab_pg_pool_query_async(op->self->pool,
				   sql,
				   params != NULL ? params->len : 0,
				   params != NULL ? (const gchar *const *)params->pdata : NULL,
				   op->cancellable,
				   callback,
				   op);
}

/* The result of op_query(), or NULL once the op has failed with it. */
static PGresult *
op_query_finish(Op *op, GAsyncResult *result, const gchar *what)
{
	GError *error = NULL;
	PGresult *res = confab_pg_pool_query_finish(op->self->pool, result, &error);

	if (res == NULL)
		op_return_error(op, store_error(error, what));
	return res;
}

static gchar *
notify_payload(ConfabStorePostgres *self, ConfabStoreChange change)
{
	return g_strdup_printf("%s %d", self->instance_id, (gint)change);
}

/* ---------- rows, as the store's mappers read them ---------- */

static GBytes *
bytes_from_hex(const gchar *hex)
{
	gsize len = hex != NULL ? strlen(hex) / 2 : 0;
	guint8 *data = g_malloc(MAX(len, 1));

	for (gsize i = 0; i < len; i++)
		data[i] = (guint8)((g_ascii_xdigit_value(hex[2 * i]) << 4) |
				   g_ascii_xdigit_value(hex[2 * i + 1]));
	return g_bytes_new_take(data, len);
}

static gchar *
hex_from_bytes(GBytes *bytes)
{
	gsize len = 0;
	const guint8 *data = bytes != NULL ? g_bytes_get_data(bytes, &len) : NULL;
	GString *hex = g_string_sized_new(len * 2 + 1);

	for (gsize i = 0; i < len; i++)
		g_string_append_printf(hex, "%02x", data[i]);
	return g_string_free(hex, FALSE);
}

static const gchar *
row_text(ConfabStoreRow *row, guint col)
{
	return column_text(row->result, row->index, (gint)col);
}

static gint64
row_int(ConfabStoreRow *row, guint col)
{
	return column_int(row->result, row->index, (gint)col);
}

static gboolean
row_is_null(ConfabStoreRow *row, guint col)
{
	return PQgetisnull(row->result, row->index, (gint)col);
}

/* bytea's text output: "\x" and hex (bytea_output = hex, the default) */
static GBytes *
row_bytes(ConfabStoreRow *row, guint col)
{
	const gchar *text = row_text(row, col);

	return bytes_from_hex(text != NULL && g_str_has_prefix(text, "\\x") ? text + 2 : text);
}

static const ConfabStoreRowFuncs row_funcs = {row_text, row_int, row_is_null, row_bytes};

/* ---------- administration: each write NOTIFYs in its own statement ---------- */

static void
admin_written(GObject *source, GAsyncResult *result, gpointer data)
{
	Op *op = data;
	g_autoptr(PGresult) res = op_query_finish(op, result, "storing");

	if (res != NULL)
		op_return_boolean(op);
}

typedef struct {
	gchar *id;
	gint64 value;
} IdAndValue;

static IdAndValue *
id_and_value_new(const gchar *id, gint64 value)
{
	IdAndValue *data = g_new0(IdAndValue, 1);
	data->id = g_strdup(id);
	data->value = value;
	return data;
}

static void
id_and_value_free(IdAndValue *data)
{
	g_free(data->id);
	g_free(data);
}

static void
run_set_quota(ConfabStorePostgres *self, Op *op)
{
	IdAndValue *quota = op->data; /* owner, monthly requests (0: unlimited) */
	g_autoptr(GPtrArray) p = params_new();
	g_autofree gchar *payload = notify_payload(self, CONFAB_STORE_CHANGE_QUOTAS);

	/* 0 is kept too: unlimited, whatever the default */
	params_add(p, quota->id);
	params_add(p, payload);
	params_add_int(p, quota->value);
	op_query(op,
		 "WITH q AS (INSERT INTO quotas (owner, monthly_requests) VALUES ($1, $3) "
		 "ON CONFLICT (owner) DO UPDATE SET monthly_requests = $3) "
		 "SELECT pg_notify('" CHANNEL "', $2)",
		 p,
		 admin_written);
}

static void
confab_store_postgres_set_quota(ConfabStore *store,
				const gchar *owner,
				guint64 monthly_requests,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	gint64 limit = (gint64)MIN(monthly_requests, (guint64)G_MAXINT64);

	QUEUE(set_quota, id_and_value_new(owner, limit), id_and_value_free, FALSE);
}

/* ---------- quotas and their counts ---------- */

typedef struct {
	gchar *owner;
	gchar *month;
	guint64 default_limit;
	guint64 rpm;	      /* admit_quota's */
	guint64 max_parallel; /* admit_quota's */
	gchar *hold_id;	      /* admit_quota's */
	gchar *slot_id;	      /* admit_quota's: its parallel_holds row */
	gboolean count;	      /* admit_quota's: the month is counted */
	gchar *token_id;      /* admit_quota's: the token's row of rates */
	guint64 token_rpm;
	guint64 token_max_parallel;
	gchar *token_slot_id; /* the token's parallel_holds row */
} UsageQuery;

static UsageQuery *
usage_query_new(const gchar *owner, const gchar *month, guint64 default_limit)
{
	UsageQuery *query = g_new0(UsageQuery, 1);
	query->owner = g_strdup(owner);
	query->month = g_strdup(month);
	query->default_limit = MIN(default_limit, (guint64)G_MAXINT64);
	return query;
}

static void
usage_query_free(UsageQuery *query)
{
	g_free(query->owner);
	g_free(query->month);
	g_free(query->hold_id);
	g_free(query->slot_id);
	g_free(query->token_id);
	g_free(query->token_slot_id);
	g_free(query);
}

static ConfabStoreUsage *
usage_new(const gchar *owner, const gchar *month)
{
	ConfabStoreUsage *usage = g_new0(ConfabStoreUsage, 1);
	usage->owner = g_strdup(owner);
	usage->month = g_strdup(month);
	return usage;
}

static void
usage_read(GObject *source, GAsyncResult *result, gpointer data)
{
	Op *op = data;
	UsageQuery *query = op->data;
	g_autoptr(PGresult) res = op_query_finish(op, result, "reading the usage");
	ConfabStoreUsage *usage;

	if (res == NULL)
		return;
	usage = usage_new(query->owner, query->month);
	usage->is_override = !PQgetisnull(res, 0, 0);
	usage->limit = usage->is_override ? (guint64)column_int(res, 0, 0) : query->default_limit;
	usage->requests = (guint64)column_int(res, 0, 1);
	op_return_pointer(op, usage, (GDestroyNotify)confab_store_usage_free);
}

static void
run_get_usage(ConfabStorePostgres *self, Op *op)
{
	UsageQuery *query = op->data;
	g_autoptr(GPtrArray) p = params_new();

	params_add(p, query->owner);
	params_add(p, query->month);
	op_query(op,
		 "SELECT (SELECT monthly_requests FROM quotas WHERE owner = $1), "
		 "(SELECT requests + pending FROM usage WHERE owner = $1 AND month = $2)",
		 p,
		 usage_read);
}

static void
confab_store_postgres_get_usage(ConfabStore *store,
				const gchar *owner,
				const gchar *month,
				guint64 default_limit,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	QUEUE(get_usage, usage_query_new(owner, month, default_limit), usage_query_free, TRUE);
}

static void
usage_listed(GObject *source, GAsyncResult *result, gpointer data)
{
	Op *op = data;
	UsageQuery *query = op->data;
	g_autoptr(PGresult) res = op_query_finish(op, result, "listing the usage");
	GPtrArray *list;

	if (res == NULL)
		return;
	list = g_ptr_array_new_with_free_func((GDestroyNotify)confab_store_usage_free);
	for (gint i = 0; i < PQntuples(res); i++) {
		ConfabStoreUsage *usage = usage_new(column_text(res, i, 0), query->month);
		usage->is_override = !PQgetisnull(res, i, 1);
		usage->limit = usage->is_override ? (guint64)column_int(res, i, 1)
						  : query->default_limit;
		usage->requests = (guint64)column_int(res, i, 2);
		g_ptr_array_add(list, usage);
	}
	op_return_pointer(op, list, (GDestroyNotify)g_ptr_array_unref);
}

static void
run_list_usage(ConfabStorePostgres *self, Op *op)
{
	UsageQuery *query = op->data;
	g_autoptr(GPtrArray) p = params_new();

	params_add(p, query->month);
	params_add_int(p, (gint64)query->default_limit);
	/* the owners with a quota of their own, and with a default, those who
	 * used some of it this month */
	op_query(op,
		 "SELECT o.owner, q.monthly_requests, COALESCE(u.requests + u.pending, 0) "
		 "FROM (SELECT owner FROM quotas UNION "
		 "      SELECT owner FROM usage WHERE month = $1 AND $2::bigint > 0) AS o "
		 "LEFT JOIN quotas AS q ON q.owner = o.owner "
		 "LEFT JOIN usage AS u ON u.owner = o.owner AND u.month = $1 "
		 "WHERE COALESCE(q.monthly_requests, $2::bigint) > 0 "
		 "ORDER BY o.owner",
		 p,
		 usage_listed);
}

static void
confab_store_postgres_list_usage(ConfabStore *store,
				 const gchar *month,
				 guint64 default_limit,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	QUEUE(list_usage, usage_query_new(NULL, month, default_limit), usage_query_free, TRUE);
}

/* The holds this instance has in usage_holds, by owner and month: they are
 * all alike, any of them may be committed or given back. */
static gchar *
hold_key(const gchar *owner, const gchar *month)
{
	return g_strconcat(owner, "\n", month, NULL);
}

static void
holds_push(ConfabStorePostgres *self, const gchar *owner, const gchar *month, gchar *hold_id)
{
	g_autofree gchar *key = hold_key(owner, month);
	GQueue *queue = g_hash_table_lookup(self->holds, key);

	if (queue == NULL) {
		queue = g_queue_new();
		g_hash_table_insert(self->holds, g_steal_pointer(&key), queue);
	}
	g_queue_push_tail(queue, hold_id);
}

static gchar *
holds_pop(ConfabStorePostgres *self, const gchar *owner, const gchar *month)
{
	g_autofree gchar *key = hold_key(owner, month);
	GQueue *queue = g_hash_table_lookup(self->holds, key);
	gchar *hold_id;

	if (queue == NULL)
		return NULL;
	hold_id = g_queue_pop_head(queue);
	if (g_queue_is_empty(queue))
		g_hash_table_remove(self->holds, key);
	return hold_id;
}

static void
release_later(ConfabStorePostgres *self, gboolean is_hold, const gchar *id, const gchar *lease);
static gboolean
wait_for_releases(ConfabStorePostgres *self, Op *op);
static void
releases_over(ConfabStorePostgres *self);

/* the "month" under which holds_push() keeps an owner's parallel_holds
 * (a month is YYYY-MM: never this) */
#define PARALLEL_KEY "parallel"

/* Whether a row of rates (the owner's, or the token's) refused for its
 * turns in flight rather than its rate, as far as the statement's snapshot
 * tells (the row's newest version decided; either answer is a 429
 * rate_limit_exceeded). */
static gboolean
row_was_full(guint64 rpm, guint64 max_parallel, gint64 tat, gint64 now, gint64 in_flight)
{
	gboolean rate_refuses =
	    rpm > 0 && MAX(tat, now) - now > (gint64)(rpm - 1) * confab_store_rate_interval(rpm);

	return max_parallel > 0 && ((guint64)in_flight >= max_parallel || !rate_refuses);
}

static void
parallel_refused(ConfabStoreUsage *usage, guint64 max_parallel)
{
	usage->max_parallel = max_parallel;
	usage->parallel_limited = TRUE;
	usage->rate_limited = TRUE;
	usage->retry_after_ms = 1000;
}

/* Where a row of rates stands in ADMIT_SQL's answer (column 6 is the
 * database's clock), and which usage members its rate fills. */
typedef struct {
	gint taken;	/* not NULL when the row admitted the turn */
	gint tat;	/* its arrival time after the turn, when it admitted */
	gint old_tat;	/* its arrival time as the statement saw it */
	gint in_flight; /* its turns in flight as the statement saw them */
	void (*set_rate)(ConfabStoreUsage *usage,
			 guint64 rpm,
			 gint64 tat,
			 gint64 now,
			 gboolean admitted);
} RateRow;

/* A row of rates' verdict on @usage: whether it took a parallel slot, then
 * kept (@slot_id, stolen) among @holder's holds. */
static gboolean
row_verdict(ConfabStorePostgres *self,
	    const RateRow *row,
	    guint64 rpm,
	    guint64 max_parallel,
	    const gchar *holder,
	    gchar **slot_id,
	    ConfabStoreUsage *usage,
	    PGresult *res)
{
	gboolean row_ok = !PQgetisnull(res, 0, row->taken);
	gboolean spent = usage->limit > 0 && usage->requests >= usage->limit;
	gboolean full = !row_ok && !spent &&
			row_was_full(rpm,
				     max_parallel,
				     column_int(res, 0, row->old_tat),
				     column_int(res, 0, 6),
				     column_int(res, 0, row->in_flight));

	if (rpm > 0)
		row->set_rate(usage,
			      rpm,
			      column_int(res, 0, row_ok ? row->tat : row->old_tat),
			      column_int(res, 0, 6),
			      row_ok || spent || full);
	if (full)
		parallel_refused(usage, max_parallel);
	if (!row_ok || max_parallel == 0)
		return FALSE;
	holds_push(self, holder, PARALLEL_KEY, g_steal_pointer(slot_id));
	return TRUE;
}

/* The owner's row of rates (columns 4 to 8), and the token's (9 to 12). */
static const RateRow owner_row = {
    .taken = 4,
    .tat = 4,
    .old_tat = 5,
    .in_flight = 8,
    .set_rate = confab_store_usage_set_rate,
};
static const RateRow token_row = {
    .taken = 12,
    .tat = 9,
    .old_tat = 10,
    .in_flight = 11,
    .set_rate = confab_store_usage_set_token_rate,
};

static void
quota_admitted(GObject *source, GAsyncResult *result, gpointer data)
{
	Op *op = data;
	UsageQuery *query = op->data;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res = confab_pg_pool_query_finish(op->self->pool, result, &error);
	gboolean owner_limits = query->rpm > 0 || query->max_parallel > 0;
	gboolean token_limits = query->token_rpm > 0 || query->token_max_parallel > 0;
	gboolean token_ok = TRUE;
	ConfabStoreUsage *usage;

	if (res == NULL) {
		/* it may have been counted all the same: the holds go */
		release_later(op->self, TRUE, query->hold_id, NULL);
		if (query->max_parallel > 0)
			release_later(op->self, TRUE, query->slot_id, PARALLEL_KEY);
		if (query->token_max_parallel > 0)
			release_later(op->self, TRUE, query->token_slot_id, PARALLEL_KEY);
		op_return_error(op, store_error(g_steal_pointer(&error), "counting a request"));
		return;
	}
	usage = usage_new(query->owner, query->count ? query->month : NULL);
	usage->requests = (guint64)column_int(res, 0, PQgetisnull(res, 0, 0) ? 1 : 0);
	usage->limit = (guint64)column_int(res, 0, 2);
	usage->is_override = column_bool(res, 0, 3);
	usage->max_parallel = query->max_parallel;
	/* the token's row went first: the owner's was tried only when it
	 * admitted; the owner's verdict is read first, so that the token's
	 * rate replaces the owner's in the headers when it is tighter */
	token_ok = !token_limits || !PQgetisnull(res, 0, 12);
	if (owner_limits && token_ok)
		usage->parallel_taken = row_verdict(op->self,
						    &owner_row,
						    query->rpm,
						    query->max_parallel,
						    query->owner,
						    &query->slot_id,
						    usage,
						    res);
	if (token_limits)
		usage->token_parallel_taken = row_verdict(op->self,
							  &token_row,
							  query->token_rpm,
							  query->token_max_parallel,
							  query->token_id,
							  &query->token_slot_id,
							  usage,
							  res);
	if (query->count)
		usage->admitted = !PQgetisnull(res, 0, 0);
	else
		usage->admitted = token_ok && (!owner_limits || !PQgetisnull(res, 0, 4));
	if (usage->admitted && query->count)
		holds_push(op->self, query->owner, query->month, g_steal_pointer(&query->hold_id));
	op_return_pointer(op, usage, (GDestroyNotify)confab_store_usage_free);
}

/*
 * One statement: the quota (the owner's own, else the default; 0 is
 * unlimited), then the token's row of rates, then the owner's, then
 * one more pending request on the (owner, month) row unless requests
 * + pending has reached the quota.
 *
 * A row of rates holds a rate ($6 requests a minute, one every $7
 * microseconds: GCRA on the database's clock; the token's: $11, $12)
 * and turns in flight (at most $8; the token's: $13). The upsert moves
 * the arrival time on and adds a turn only while at most rpm - 1
 * intervals are owed and fewer than max_parallel turns fly. ON
 * CONFLICT DO UPDATE locks the row and checks its WHERE against the
 * newest version, so concurrent admissions from every instance queue
 * on that row: both are exact. The token's row (keyed by its id, tok_…)
 * is tried first, the owner's only when the token's admitted (or has
 * no limits), the month only when both did. Each is skipped when the
 * month is already spent as far as this statement sees (a request
 * refused for the month costs no rate, bar a race with the month's
 * last request; a request the owner's row refuses costs one of the
 * token's rate; a slot taken then is given back by the caller).
 *
 * The count: the usage upsert is proposed only when the rows of rates
 * admitted (or there are no such limits), and $15 says the month is
 * counted (D-Bus Chat.Send's is not); ON CONFLICT DO UPDATE queues it
 * on the (owner, month) row likewise. A new row is always admitted: no
 * quota is below 1. The holds name this instance, should it die
 * before the count is committed or the turn ends. Rows are locked in
 * one order (the token's, the owner's, then usage) by every
 * admission; confab_reap() locks rates before usage.
 */
#define ADMIT_SQL                                                                                  \
	"WITH lim AS (SELECT CASE WHEN $15::bigint = 0 THEN 0 "                                    \
	"                    ELSE COALESCE(q.monthly_requests, $3::bigint) END AS l, "             \
	"                    q.owner IS NOT NULL AS own "                                          \
	"             FROM (SELECT 1) AS one "                                                     \
	"             LEFT JOIN quotas AS q ON q.owner = $1), "                                    \
	"clk AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS now), "       \
	"room AS (SELECT (SELECT l FROM lim) = 0 "                                                 \
	"             OR COALESCE((SELECT requests + pending FROM usage "                          \
	"                          WHERE owner = $1 AND month = $2), 0) "                          \
	"                < (SELECT l FROM lim) AS ok), "                                           \
	"t AS (INSERT INTO rates AS t (owner, tat, in_flight) "                                    \
	"      SELECT $10, CASE WHEN $11::bigint > 0 THEN clk.now + $12::bigint ELSE 0 END, "      \
	"             CASE WHEN $13::bigint > 0 THEN 1 ELSE 0 END FROM clk "                       \
	"      WHERE ($11::bigint > 0 OR $13::bigint > 0) AND (SELECT ok FROM room) "              \
	"      ON CONFLICT (owner) DO UPDATE "                                                     \
	"      SET tat = CASE WHEN $11::bigint > 0 "                                               \
	"                THEN GREATEST(t.tat, (SELECT now FROM clk)) + $12::bigint "               \
	"                ELSE t.tat END, "                                                         \
	"          in_flight = t.in_flight + CASE WHEN $13::bigint > 0 THEN 1 ELSE 0 END "         \
	"      WHERE ($11::bigint = 0 "                                                            \
	"             OR GREATEST(t.tat, (SELECT now FROM clk)) - (SELECT now FROM clk) "          \
	"                <= ($11::bigint - 1) * $12::bigint) "                                     \
	"        AND ($13::bigint = 0 OR t.in_flight < $13::bigint) "                              \
	"      RETURNING t.tat), "                                                                 \
	"tok AS (SELECT ($11::bigint = 0 AND $13::bigint = 0) OR EXISTS (SELECT 1 FROM t) "        \
	"        AS ok), "                                                                         \
	"ts AS (INSERT INTO parallel_holds (id, instance_id, owner) "                              \
	"       SELECT $14, $5, $10 FROM t WHERE $13::bigint > 0), "                               \
	"r AS (INSERT INTO rates AS r (owner, tat, in_flight) "                                    \
	"      SELECT $1, CASE WHEN $6::bigint > 0 THEN clk.now + $7::bigint ELSE 0 END, "         \
	"             CASE WHEN $8::bigint > 0 THEN 1 ELSE 0 END FROM clk "                        \
	"      WHERE ($6::bigint > 0 OR $8::bigint > 0) "                                          \
	"        AND (SELECT ok FROM room) AND (SELECT ok FROM tok) "                              \
	"      ON CONFLICT (owner) DO UPDATE "                                                     \
	"      SET tat = CASE WHEN $6::bigint > 0 "                                                \
	"                THEN GREATEST(r.tat, (SELECT now FROM clk)) + $7::bigint "                \
	"                ELSE r.tat END, "                                                         \
	"          in_flight = r.in_flight + CASE WHEN $8::bigint > 0 THEN 1 ELSE 0 END "          \
	"      WHERE ($6::bigint = 0 "                                                             \
	"             OR GREATEST(r.tat, (SELECT now FROM clk)) - (SELECT now FROM clk) "          \
	"                <= ($6::bigint - 1) * $7::bigint) "                                       \
	"        AND ($8::bigint = 0 OR r.in_flight < $8::bigint) "                                \
	"      RETURNING r.tat), "                                                                 \
	"s AS (INSERT INTO parallel_holds (id, instance_id, owner) "                               \
	"      SELECT $9, $5, $1 FROM r WHERE $8::bigint > 0), "                                   \
	"u AS (INSERT INTO usage AS u (owner, month, requests, pending) "                          \
	"      SELECT $1, $2, 0, 1 "                                                               \
	"      WHERE $15::bigint = 1 AND (SELECT ok FROM tok) "                                    \
	"        AND (($6::bigint = 0 AND $8::bigint = 0) OR EXISTS (SELECT 1 FROM r)) "           \
	"      ON CONFLICT (owner, month) DO UPDATE SET pending = u.pending + 1 "                  \
	"      WHERE (SELECT l FROM lim) = 0 "                                                     \
	"         OR u.requests + u.pending < (SELECT l FROM lim) "                                \
	"      RETURNING u.requests + u.pending AS used), "                                        \
	"h AS (INSERT INTO usage_holds (id, instance_id, owner, month) "                           \
	"      SELECT $4, $5, $1, $2 FROM u) "                                                     \
	"SELECT (SELECT used FROM u), "                                                            \
	"       (SELECT requests + pending FROM usage WHERE owner = $1 AND month = $2), "          \
	"       lim.l, lim.own, (SELECT tat FROM r), "                                             \
	"       (SELECT tat FROM rates WHERE owner = $1), clk.now, "                               \
	"       (SELECT 1 FROM r), "                                                               \
	"       (SELECT in_flight FROM rates WHERE owner = $1), "                                  \
	"       (SELECT tat FROM t), (SELECT tat FROM rates WHERE owner = $10), "                  \
	"       (SELECT in_flight FROM rates WHERE owner = $10), (SELECT 1 FROM t) "               \
	"FROM lim, clk"

static void
run_admit_quota(ConfabStorePostgres *self, Op *op)
{
	UsageQuery *query = op->data;
	g_autoptr(GPtrArray) p = NULL;

	if (wait_for_releases(self, op))
		return;
	p = params_new();
	query->hold_id = g_uuid_string_random();
	params_add(p, query->owner);
	params_add(p, query->month);
	params_add_int(p, (gint64)query->default_limit);
	params_add(p, query->hold_id);
	params_add(p, self->instance_id);
	params_add_int(p, (gint64)MIN(query->rpm, (guint64)G_MAXINT32));
	params_add_int(p, query->rpm > 0 ? confab_store_rate_interval(query->rpm) : 0);
	params_add_int(p, (gint64)MIN(query->max_parallel, (guint64)G_MAXINT32));
	query->slot_id = g_uuid_string_random();
	params_add(p, query->slot_id);
	params_add(p, query->token_id != NULL ? query->token_id : "");
	params_add_int(p, (gint64)MIN(query->token_rpm, (guint64)G_MAXINT32));
	params_add_int(p, query->token_rpm > 0 ? confab_store_rate_interval(query->token_rpm) : 0);
	params_add_int(p, (gint64)MIN(query->token_max_parallel, (guint64)G_MAXINT32));
	query->token_slot_id = g_uuid_string_random();
	params_add(p, query->token_slot_id);
	params_add_int(p, query->count ? 1 : 0);
	op_query(op, ADMIT_SQL, p, quota_admitted);
}

static void
confab_store_postgres_admit_quota(ConfabStore *store,
				  const ConfabStoreAdmission *admission,
				  GCancellable *cancellable,
				  GAsyncReadyCallback callback,
				  gpointer user_data)
{
	UsageQuery *query = usage_query_new(admission->owner,
					    admission->month != NULL ? admission->month : "",
					    admission->default_limit);

	query->count = admission->month != NULL;
	query->rpm = admission->rpm;
	query->max_parallel = admission->max_parallel;
	if (admission->token_id != NULL) {
		query->token_id = g_strdup(admission->token_id);
		query->token_rpm = admission->token_rpm;
		query->token_max_parallel = admission->token_max_parallel;
	}
	QUEUE(admit_quota, query, usage_query_free, FALSE);
}

/* ---------- tokens: reservations and settlements ---------- */

typedef struct {
	gchar *owner;
	gchar *token_id;
	gchar *month;
	ConfabStoreTokens tokens; /* its strings: the ones above */
} TokensQuery;

static void
tokens_query_free(TokensQuery *query)
{
	g_free(query->owner);
	g_free(query->token_id);
	g_free(query->month);
	g_free(query);
}

static void
tokens_taken(GObject *source, GAsyncResult *result, gpointer data)
{
	Op *op = data;
	TokensQuery *query = op->data;
	const ConfabStoreTokens *t = &query->tokens;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res = confab_pg_pool_query_finish(op->self->pool, result, &error);
	ConfabStoreTokenVerdict *verdict;
	guint64 tpm[2] = {t->token_id != NULL ? t->token_tpm : 0, t->tpm};
	gint64 now;

	if (t->force)
		releases_over(op->self);
	if (res == NULL) {
		op_return_error(op, store_error(g_steal_pointer(&error), "counting tokens"));
		return;
	}
	verdict = g_new0(ConfabStoreTokenVerdict, 1);
	verdict->admitted = column_bool(res, 0, 0);
	verdict->monthly_spent = column_bool(res, 0, 1);
	now = column_int(res, 0, 6);
	/* the owner's rate first, the token's then, as SQLite's verdicts */
	for (gint i = 1; i >= 0; i--) {
		gint64 tat = column_int(res, 0, 2 + 2 * i);
		gint64 next = tat;
		gboolean ok;

		if (tpm[i] == 0)
			continue;
		ok = verdict->admitted ||
		     confab_store_token_rate_take(&next, now, tpm[i], t->tokens, t->force);
		confab_store_token_verdict_set_rate(verdict, tpm[i], tat, now, t->tokens, ok);
	}
	op_return_pointer(op, verdict, g_free);
}

static void
run_take_tokens(ConfabStorePostgres *self, Op *op)
{
	TokensQuery *query = op->data;
	const ConfabStoreTokens *t = &query->tokens;
	g_autoptr(GPtrArray) p = NULL;
	guint64 token_tpm = t->token_id != NULL ? t->token_tpm : 0;

	/* a reservation sees the settlements given before it, as in a store
	 * that keeps them in memory */
	if (!t->force && wait_for_releases(self, op))
		return;
	p = params_new();
	params_add(p, t->token_id != NULL ? t->token_id : "");
	params_add_int(p, (gint64)MIN(token_tpm, (guint64)G_MAXINT32));
	params_add_int(p, token_tpm > 0 ? confab_store_token_cost(t->tokens, token_tpm) : 0);
	params_add_int(p,
		       t->token_id != NULL ? (gint64)MIN(t->token_monthly, (guint64)G_MAXINT64)
					   : 0);
	params_add(p, t->owner);
	params_add_int(p, (gint64)MIN(t->tpm, (guint64)G_MAXINT32));
	params_add_int(p, t->tpm > 0 ? confab_store_token_cost(t->tokens, t->tpm) : 0);
	params_add_int(p, (gint64)MIN(t->monthly, (guint64)G_MAXINT64));
	params_add(p, t->month);
	params_add_int(p, t->tokens);
	params_add(p, t->force ? "true" : "false");
	op_query(op,
		 "SELECT ok, spent, t1, u1, t2, u2, now FROM confab_take_tokens($1, $2, $3, $4, "
		 "$5, $6, $7, $8, $9, $10, $11)",
		 p,
		 tokens_taken);
}

static void
confab_store_postgres_take_tokens(ConfabStore *store,
				  const ConfabStoreTokens *tokens,
				  GCancellable *cancellable,
				  GAsyncReadyCallback callback,
				  gpointer user_data)
{
	TokensQuery *query = g_new0(TokensQuery, 1);

	query->owner = g_strdup(tokens->owner);
	query->token_id = g_strdup(tokens->token_id);
	query->month = g_strdup(tokens->month);
	query->tokens = *tokens;
	query->tokens.owner = query->owner;
	query->tokens.token_id = query->token_id;
	query->tokens.month = query->month;
	/* a settlement is waited for by the reservations after it (and by
	 * admissions, which wait the same way for releases) */
	if (tokens->force && !g_atomic_int_get(&CONFAB_STORE_POSTGRES(store)->closed))
		CONFAB_STORE_POSTGRES(store)->releasing++;
	QUEUE(take_tokens, query, tokens_query_free, FALSE);
}

/* ---------- releases: holds and leases given back, tried again until done ---------- */

typedef struct {
	gboolean is_hold;
	gchar *id;    /* the hold's id, or the session's */
	gchar *lease; /* the lease's id */
} Release;

static void
release_free(Release *release)
{
	g_free(release->id);
	g_free(release->lease);
	g_free(release);
}

/* @id and @lease: (transfer full) */
static Release *
release_new(gboolean is_hold, gchar *id, gchar *lease)
{
	Release *release = g_new0(Release, 1);

	release->is_hold = is_hold;
	release->id = id;
	release->lease = lease;
	return release;
}

static void
release_later(ConfabStorePostgres *self, gboolean is_hold, const gchar *id, const gchar *lease)
{
	if (id != NULL)
		g_ptr_array_add(self->releases,
				release_new(is_hold, g_strdup(id), g_strdup(lease)));
}

/* A release given before an admission or an acquisition is seen by it, as
 * in a store that keeps them in memory: those wait for releases in flight. */
static gboolean
wait_for_releases(ConfabStorePostgres *self, Op *op)
{
	if (self->releasing == 0)
		return FALSE;
	g_queue_push_tail(&self->after_releases, op);
	return TRUE;
}

static void
releases_over(ConfabStorePostgres *self)
{
	Op *op;

	g_assert(self->releasing > 0);
	if (--self->releasing > 0)
		return;
	while (self->releasing == 0 && (op = g_queue_pop_head(&self->after_releases)) != NULL)
		op->run(self, op);
}

static void
released(GObject *source, GAsyncResult *result, gpointer data)
{
	Op *op = data;
	Release *release = op->data;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res = confab_pg_pool_query_finish(op->self->pool, result, &error);

	if (res == NULL) {
		g_debug("giving back %s %s: %s; trying again later",
			release->is_hold ? "the hold" : "the lease of",
			release->id,
			error->message);
		release_later(op->self, release->is_hold, release->id, release->lease);
	}
	releases_over(op->self);
	op_return_boolean(op);
}

static void
run_release(ConfabStorePostgres *self, Op *op)
{
	Release *release = op->data;
	g_autoptr(GPtrArray) p = params_new();

	params_add(p, release->id);
	/* a turn's slot (a hold whose lease says so) */
	if (release->is_hold && g_strcmp0(release->lease, PARALLEL_KEY) == 0) {
		op_query(op,
			 "WITH s AS (DELETE FROM parallel_holds WHERE id = $1 RETURNING owner) "
			 "UPDATE rates AS r SET in_flight = GREATEST(r.in_flight - 1, 0) FROM s "
			 "WHERE r.owner = s.owner",
			 p,
			 released);
		return;
	}
	if (release->is_hold) {
		op_query(op,
			 "WITH h AS (DELETE FROM usage_holds WHERE id = $1 RETURNING owner, month) "
			 "UPDATE usage AS u SET pending = GREATEST(u.pending - 1, 0) FROM h "
			 "WHERE u.owner = h.owner AND u.month = h.month",
			 p,
			 released);
		return;
	}
	params_add(p, release->lease);
	op_query(op,
		 "DELETE FROM session_leases WHERE session_id = $1 AND lease_id = $2",
		 p,
		 released);
}

/* In the store thread: starts giving @release (transfer full) back. */
static void
release_start(ConfabStorePostgres *self, Release *release)
{
	Op *op = g_new0(Op, 1);

	self->releasing++;

	op->self = self;
	op->run = run_release;
	op->data = release;
	op->data_free = (GDestroyNotify)release_free;
	op_start(op);
}

/* An admission's hold given back, or with @month PARALLEL_KEY, a turn's
 * slot (a hold whose lease says so). */
static void
run_release_quota(ConfabStorePostgres *self, Op *op)
{
	UsageQuery *query = op->data;
	gchar *hold_id = holds_pop(self, query->owner, query->month);
	gboolean slot = g_strcmp0(query->month, PARALLEL_KEY) == 0;

	if (hold_id != NULL)
		release_start(self,
			      release_new(TRUE, hold_id, slot ? g_strdup(PARALLEL_KEY) : NULL));
	op_return_boolean(op);
}

static void
confab_store_postgres_release_quota(ConfabStore *store, const gchar *owner, const gchar *month)
{
	/* nobody waits */
	op_queue_task(CONFAB_STORE_POSTGRES(store),
		      run_release_quota,
		      usage_query_new(owner, month, 0),
		      (GDestroyNotify)usage_query_free,
		      FALSE,
		      NULL);
}

static void
confab_store_postgres_release_parallel(ConfabStore *store, const gchar *owner)
{
	confab_store_postgres_release_quota(store, owner, PARALLEL_KEY);
}

/* ---------- sessions with a turn running: leases ---------- */

typedef struct {
	gchar *session_id;
	gchar *lease_id;
} Lease;

static void
lease_free(Lease *lease)
{
	g_free(lease->session_id);
	g_free(lease->lease_id);
	g_free(lease);
}

static void
session_acquired(GObject *source, GAsyncResult *result, gpointer data)
{
	Op *op = data;
	Lease *lease = op->data;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res = confab_pg_pool_query_finish(op->self->pool, result, &error);
	GError *busy = NULL;

	if (res == NULL) {
		/* it may have been taken all the same: give it back */
		release_later(op->self, FALSE, lease->session_id, lease->lease_id);
		op_return_error(op, store_error(g_steal_pointer(&error), "taking a session"));
		return;
	}
	if (PQntuples(res) == 0) {
		confab_error_set(&busy,
				 CONFAB_ERROR_CONVERSATION_BUSY,
				 "metadata.session_id",
				 "Another turn is running in this conversation; retry when "
				 "it has finished");
		op_return_error(op, busy);
		return;
	}
	g_hash_table_replace(op->self->leases,
			     g_strdup(lease->session_id),
			     g_strdup(lease->lease_id));
	op_return_boolean(op);
}

static void
run_acquire_session(ConfabStorePostgres *self, Op *op)
{
	Lease *lease = op->data;
	g_autoptr(GPtrArray) p = NULL;

	if (wait_for_releases(self, op))
		return;
	p = params_new();
	lease->lease_id = g_uuid_string_random();
	params_add(p, lease->session_id);
	params_add(p, self->instance_id);
	params_add(p, lease->lease_id);
	op_query(op,
		 "INSERT INTO session_leases (session_id, instance_id, lease_id) "
		 "VALUES ($1, $2, $3) ON CONFLICT (session_id) DO NOTHING RETURNING 1",
		 p,
		 session_acquired);
}

static void
confab_store_postgres_acquire_session(ConfabStore *store,
				      const gchar *session_id,
				      GCancellable *cancellable,
				      GAsyncReadyCallback callback,
				      gpointer user_data)
{
	Lease *lease = g_new0(Lease, 1);

	lease->session_id = g_strdup(session_id);
	QUEUE(acquire_session, lease, lease_free, FALSE);
}

static void
run_release_session(ConfabStorePostgres *self, Op *op)
{
	const gchar *session_id = op->data;
	gpointer key = NULL;
	gpointer lease_id = NULL;

	if (g_hash_table_steal_extended(self->leases, session_id, &key, &lease_id))
		release_start(self, release_new(FALSE, key, lease_id));
	op_return_boolean(op);
}

static void
confab_store_postgres_release_session(ConfabStore *store, const gchar *session_id)
{
	/* nobody waits */
	op_queue_task(CONFAB_STORE_POSTGRES(store),
		      run_release_session,
		      g_strdup(session_id),
		      g_free,
		      FALSE,
		      NULL);
}

/* ---------- turns ---------- */

static void
append_int_member(GString *json, const gchar *name, gint64 value)
{
	g_string_append_printf(json, ",\"%s\":%" G_GINT64_FORMAT, name, value);
}

static void
append_string_member(GString *json, const gchar *name, const gchar *value)
{
	g_string_append_printf(json, ",\"%s\":", name);
	confab_json_append_string(json, value);
}

static void
append_message(GString *json, ConfabMessage *msg)
{
	g_string_append(json, "{\"id\":");
	confab_json_append_string(json, confab_message_get_id(msg));
	append_string_member(json, "session_id", confab_message_get_session_id(msg));
	append_string_member(json, "role", confab_message_get_role(msg));
	append_string_member(json, "model", confab_message_get_model(msg));
	append_string_member(json, "content", confab_message_get_content(msg) ?: "[]");
	append_string_member(json,
			     "content_blocks",
			     confab_message_get_content_blocks(msg) ?: "[]");
	append_int_member(json, "status", confab_message_get_status(msg));
	append_string_member(json, "finish_reason", confab_message_get_finish_reason(msg));
	if (confab_message_get_prompt_tokens(msg) >= 0)
		append_int_member(json, "prompt_tokens", confab_message_get_prompt_tokens(msg));
	if (confab_message_get_completion_tokens(msg) >= 0)
		append_int_member(json,
				  "completion_tokens",
				  confab_message_get_completion_tokens(msg));
	append_int_member(json, "created_at", confab_message_get_created_at(msg));
	append_string_member(json, "response_id", confab_message_get_response_id(msg));
	append_string_member(json, "upstream", confab_message_get_upstream(msg));
	g_string_append_c(json, '}');
}

static void
append_session(GString *json, ConfabSession *session)
{
	g_string_append(json, "\"session\":{\"id\":");
	confab_json_append_string(json, confab_session_get_id(session));
	append_string_member(json, "owner", confab_session_get_owner(session));
	append_string_member(json, "agent_id", confab_session_get_agent_id(session));
	append_int_member(json, "source", confab_session_get_source(session));
	append_string_member(json, "title", confab_session_get_title(session));
	append_int_member(json, "created_at", confab_session_get_created_at(session));
	g_string_append_c(json, '}');
}

/* What a commit takes from this instance's books, and gives back should it
 * fail: the hold of the count it makes durable, the lease its answer ends. */
typedef struct {
	gchar *hold_id;
	gchar *lease_id;
} Taken;

static void
taken_free(Taken *taken)
{
	g_free(taken->hold_id);
	g_free(taken->lease_id);
	g_free(taken);
}

/* The argument of confab_commit_turn(). */
static gchar *
turn_to_json(ConfabStorePostgres *self, const ConfabStoreTurn *turn, const Taken *taken)
{
	GString *json = g_string_new("{");
	gint64 updated_at = confab_session_get_updated_at(turn->session);

	if (turn->assistant != NULL)
		updated_at = MAX(updated_at, confab_message_get_created_at(turn->assistant));
	append_session(json, turn->session);
	g_string_append_printf(json,
			       ",\"session_is_new\":%s",
			       turn->session_is_new ? "true" : "false");
	append_int_member(json, "updated_at", updated_at);
	append_string_member(json, "instance", self->instance_id);
	g_string_append(json, ",\"messages\":[");
	for (guint i = 0; i < turn->messages->len; i++) {
		if (i > 0)
			g_string_append_c(json, ',');
		append_message(json, g_ptr_array_index(turn->messages, i));
	}
	g_string_append_c(json, ']');
	if (turn->usage_owner != NULL) {
		append_string_member(json, "usage_owner", turn->usage_owner);
		append_string_member(json, "usage_month", turn->usage_month);
		append_string_member(json, "hold", taken->hold_id);
	}
	if (turn->use != NULL) {
		g_string_append(json, ",\"use\":{\"month\":");
		confab_json_append_string(json, turn->use->month);
		append_string_member(json, "owner", turn->use->owner);
		append_string_member(json, "token_id", turn->use->token_id ?: "");
		append_string_member(json, "agent_id", turn->use->agent_id);
		append_int_member(json, "requests", (gint64)turn->use->requests);
		append_int_member(json, "input_tokens", (gint64)turn->use->input_tokens);
		append_int_member(json, "output_tokens", (gint64)turn->use->output_tokens);
		append_int_member(json, "reasoning_tokens", (gint64)turn->use->reasoning_tokens);
		g_string_append_c(json, '}');
	}
	if (turn->assistant != NULL) {
		g_string_append(json, ",\"assistant\":");
		append_message(json, turn->assistant);
		append_string_member(json, "lease", taken->lease_id);
	} else if (turn->unfinished != NULL) {
		g_string_append(json, ",\"unfinished\":");
		append_message(json, turn->unfinished);
	}
	g_string_append_c(json, '}');
	return g_string_free(json, FALSE);
}

static void
turn_committed(GObject *source, GAsyncResult *result, gpointer data)
{
	Op *op = data;
	ConfabStoreTurn *turn = op->data;
	Taken *taken = op->extra;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res = confab_pg_pool_query_finish(op->self->pool, result, &error);

	if (res == NULL) {
		/* not committed (or not known to be): the hold and the lease
		 * stay this instance's, for the releases of a failed turn */
		if (taken->hold_id != NULL)
			holds_push(op->self,
				   turn->usage_owner,
				   turn->usage_month,
				   g_steal_pointer(&taken->hold_id));
		if (taken->lease_id != NULL)
			g_hash_table_replace(op->self->leases,
					     g_strdup(confab_session_get_id(turn->session)),
					     g_steal_pointer(&taken->lease_id));
		op_return_error(op, store_error(g_steal_pointer(&error), "storing a turn"));
		return;
	}
	op_return_boolean(op);
}

/*
 * The answer's commit ends the session's lease in the same transaction:
 * whoever hears of the answer may send the next message to any instance at
 * once (the release_session() that follows finds nothing left to do).
 */
static void
run_commit_turn(ConfabStorePostgres *self, Op *op)
{
	ConfabStoreTurn *turn = op->data;
	g_autoptr(GPtrArray) p = params_new();
	Taken *taken = g_new0(Taken, 1);
	g_autofree gchar *key = NULL;
	gpointer lease_id = NULL;

	op->extra = taken;
	op->extra_free = (GDestroyNotify)taken_free;
	if (turn->usage_owner != NULL)
		taken->hold_id = holds_pop(self, turn->usage_owner, turn->usage_month);
	if (turn->assistant != NULL &&
	    g_hash_table_steal_extended(self->leases,
					confab_session_get_id(turn->session),
					(gpointer *)&key,
					&lease_id))
		taken->lease_id = lease_id;
	g_ptr_array_add(p, turn_to_json(self, turn, taken));
	op_query(op, "SELECT confab_commit_turn($1::jsonb)", p, turn_committed);
}

static void
confab_store_postgres_commit_turn(ConfabStore *store,
				  const ConfabStoreTurn *turn,
				  GCancellable *cancellable,
				  GAsyncReadyCallback callback,
				  gpointer user_data)
{
	QUEUE(commit_turn, confab_store_turn_copy(turn), confab_store_turn_free, FALSE);
}

/* The lease row is the truth across instances: a turn of any instance
 * holds it, from acquire_session until its answer's commit deletes it (or
 * the reaping of its dead instance). */
static void
session_running_read(GObject *source, GAsyncResult *result, gpointer data)
{
	Op *op = data;
	g_autoptr(PGresult) res = op_query_finish(op, result, "reading a session's lease");

	if (res == NULL)
		return;
	op_return_pointer(op, PQntuples(res) > 0 ? GINT_TO_POINTER(TRUE) : NULL, NULL);
}

static void
run_session_is_running(ConfabStorePostgres *self, Op *op)
{
	g_autoptr(GPtrArray) p = NULL;

	/* a session released before is seen free, as acquire_session sees it */
	if (wait_for_releases(self, op))
		return;
	p = params_new();
	params_add(p, op->data);
	op_query(op, "SELECT 1 FROM session_leases WHERE session_id = $1", p, session_running_read);
}

static void
confab_store_postgres_session_is_running(ConfabStore *store,
					 const gchar *session_id,
					 GCancellable *cancellable,
					 GAsyncReadyCallback callback,
					 gpointer user_data)
{
	QUEUE(session_is_running, g_strdup(session_id), g_free, TRUE);
}

/* ---------- reads ---------- */

/* ---------- full-text search ---------- */

/* Case and the common Latin accents aside, the same in SQL and here. */
#define FOLD_FROM "àáâãäåçèéêëìíîïñòóôõöøùúûüýÿÀÁÂÃÄÅÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜÝ"
#define FOLD_TO	  "aaaaaaceeeeiiiinoooooouuuuyyaaaaaaceeeeiiiinoooooouuuuy"
#define FOLD(x)	  "translate(lower(" x "), '" FOLD_FROM "', '" FOLD_TO "')"
/* the text parts of a message's content, joined */
#define MESSAGE_TEXT(m)                                                                            \
	"(SELECT string_agg(e->>'text', ' ') FROM jsonb_array_elements(" m ".content::jsonb) e "   \
	"WHERE e->>'type' = 'text')"
#define SNIPPET_SEPARATOR "\x1e"

typedef struct {
	gchar *owner;
	GStrv terms;
	guint limit;
} PgSearchQuery;

static void
pg_search_query_free(PgSearchQuery *query)
{
	g_free(query->owner);
	g_strfreev(query->terms);
	g_free(query);
}

/* A term as a regular expression matching the start of a word: folded as
 * the text is, its special characters escaped; NULL for a term of no
 * letter or digit. */
static gchar *
term_pattern(const gchar *term)
{
	g_autofree gchar *lower = g_utf8_strdown(term, -1);
	g_autoptr(GString) pattern = g_string_new("\\m");
	gboolean word = FALSE;

	for (const gchar *p = lower; *p != '\0'; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		g_autofree gchar *one = g_ucs4_to_utf8(&c, 1, NULL, NULL, NULL);
		const gchar *at = one != NULL ? strstr(FOLD_FROM, one) : NULL;

		word |= g_unichar_isalnum(c);
		if (at != NULL) {
			g_string_append_c(pattern,
					  FOLD_TO[g_utf8_pointer_to_offset(FOLD_FROM, at)]);
			continue;
		}
		if (c < 128 && strchr("\\.^$*+?()[]{}|-", (gchar)c) != NULL)
			g_string_append_c(pattern, '\\');
		g_string_append_unichar(pattern, c);
	}
	return word ? g_string_free(g_steal_pointer(&pattern), FALSE) : NULL;
}

static void
search_read(GObject *source, GAsyncResult *result, gpointer data)
{
	Op *op = data;
	PgSearchQuery *query = op->data;
	g_autoptr(PGresult) res = op_query_finish(op, result, "searching");
	GPtrArray *hits;

	if (res == NULL)
		return;
	hits = g_ptr_array_new_with_free_func((GDestroyNotify)confab_store_search_hit_free);
	for (gint i = 0; i < PQntuples(res); i++) {
		ConfabStoreSearchHit *hit = g_new0(ConfabStoreSearchHit, 1);
		g_auto(GStrv) texts =
		    g_strsplit(PQgetisnull(res, i, 7) ? "" : PQgetvalue(res, i, 7),
			       SNIPPET_SEPARATOR,
			       -1);
		guint best = 0;

		hit->session = CONFAB_SESSION(
		    confab_store_row_to_session(&(ConfabStoreRow){&row_funcs, res, i}));
		/* the title first, then the messages, oldest first; the later of
		 * two as good wins, as on SQLite */
		for (guint t = 0; texts[t] != NULL; t++) {
			guint matched = 0;
			g_autofree gchar *snippet =
			    confab_store_search_snippet(texts[t],
							(const gchar *const *)query->terms,
							&matched);
			guint score = matched * 2 + (t > 0);
			if (snippet != NULL && score >= best) {
				g_free(hit->snippet);
				hit->snippet = g_steal_pointer(&snippet);
				best = score;
			}
		}
		g_ptr_array_add(hits, hit);
	}
	op_return_pointer(op, hits, (GDestroyNotify)g_ptr_array_unref);
}

/*
 * Every term must start a word of the title or of a user or assistant
 * message's text (not necessarily the same one); the owner's own, newest
 * first. Without an index: a table scan of the owner's conversations.
 */
static void
run_search_sessions(ConfabStorePostgres *self, Op *op)
{
	PgSearchQuery *query = op->data;
	g_autoptr(GString) sql =
	    g_string_new("SELECT s.id, s.owner, s.agent_id, s.source, s.title, "
			 "s.created_at, s.updated_at, COALESCE(s.title, '') || '");
	g_autoptr(GPtrArray) p = params_new();
	guint n = 0;

	g_string_append(
	    sql,
	    SNIPPET_SEPARATOR "' || COALESCE((SELECT string_agg(" MESSAGE_TEXT(
		"m") ", '" SNIPPET_SEPARATOR "' ORDER BY m.id) FROM messages m "
		     "WHERE m.session_id = s.id AND m.role IN ('user', 'assistant')), '') "
		     "FROM sessions s WHERE s.owner = $1");
	params_add(p, query->owner);
	for (guint i = 0; query->terms[i] != NULL && n < CONFAB_STORE_SEARCH_MAX_TERMS; i++) {
		g_autofree gchar *pattern = term_pattern(query->terms[i]);
		if (pattern == NULL)
			continue;
		params_add(p, pattern);
		g_string_append_printf(
		    sql,
		    " AND (" FOLD(
			"COALESCE(s.title, '')") " ~ $%u OR EXISTS "
						 "(SELECT 1 FROM messages m WHERE m.session_id = "
						 "s.id AND "
						 "m.role IN ('user', 'assistant') AND " FOLD(
						     "COALESCE(" MESSAGE_TEXT(
							 "m") ", '')") " ~ $%u))",
		    p->len,
		    p->len);
		n++;
	}
	if (n == 0 || query->limit == 0) {
		op_return_pointer(
		    op,
		    g_ptr_array_new_with_free_func((GDestroyNotify)confab_store_search_hit_free),
		    (GDestroyNotify)g_ptr_array_unref);
		return;
	}
	params_add_int(p, query->limit);
	g_string_append_printf(sql, " ORDER BY s.id DESC LIMIT $%u", p->len);
	op_query(op, sql->str, p, search_read);
}

static void
confab_store_postgres_search_sessions(ConfabStore *store,
				      const gchar *owner,
				      const gchar *const *terms,
				      guint limit,
				      GCancellable *cancellable,
				      GAsyncReadyCallback callback,
				      gpointer user_data)
{
	PgSearchQuery *query = g_new0(PgSearchQuery, 1);

	query->owner = g_strdup(owner);
	query->terms = g_strdupv((gchar **)terms);
	query->limit = limit;
	QUEUE(search_sessions, query, pg_search_query_free, TRUE);
}

/* ---------- changes made by other instances ---------- */

typedef struct {
	GWeakRef store;
	ConfabStoreChange change;
} Changed;

static void
changed_free(Changed *changed)
{
	g_weak_ref_clear(&changed->store);
	g_free(changed);
}

/* In the context the store was made in. */
static gboolean
changed_emit(gpointer data)
{
	Changed *changed = data;
	g_autoptr(GObject) store = g_weak_ref_get(&changed->store);

	if (store != NULL)
		confab_store_emit_changed(CONFAB_STORE(store), changed->change);
	return G_SOURCE_REMOVE;
}

static void
emit_changed(ConfabStorePostgres *self, ConfabStoreChange change)
{
	g_autoptr(GSource) source = g_idle_source_new();
	Changed *changed = g_new0(Changed, 1);

	g_weak_ref_init(&changed->store, self);
	changed->change = change;
	g_source_set_priority(source, G_PRIORITY_DEFAULT);
	g_source_set_callback(source, changed_emit, changed, (GDestroyNotify)changed_free);
	g_source_set_static_name(source, "[confab] store changed");
	g_source_attach(source, self->owner_context);
}

/* "INSTANCE CHANGE": what another instance changed; this one's own writes
 * reached its caches already. */
static void
on_notification(ConfabPgPool *pool, const gchar *channel, const gchar *payload, gpointer data)
{
	ConfabStorePostgres *self = data;
	const gchar *space = payload != NULL ? strrchr(payload, ' ') : NULL;
	gint64 change;

	if (space == NULL || !g_str_equal(channel, CHANNEL))
		return;
	if ((gsize)(space - payload) == strlen(self->instance_id) &&
	    strncmp(payload, self->instance_id, space - payload) == 0)
		return;
	change = g_ascii_strtoll(space + 1, NULL, 10);
	if (change < CONFAB_STORE_CHANGE_AGENTS || change > CONFAB_STORE_CHANGE_LIMITS)
		change = CONFAB_STORE_CHANGE_ALL;
	emit_changed(self, (ConfabStoreChange)change);
}

/* Back after a loss: whatever was announced meanwhile went unheard. */
static void
on_reconnected(ConfabPgPool *pool, gpointer data)
{
	ConfabStorePostgres *self = data;
	g_message("the listening connection to PostgreSQL is back: reloading");
	emit_changed(self, CONFAB_STORE_CHANGE_ALL);
}

/* ---------- heartbeat: this instance lives, dead ones are reaped ---------- */

static void
reaped(GObject *source, GAsyncResult *result, gpointer data)
{
	ConfabStorePostgres *self = data;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res =
	    confab_pg_pool_query_finish(CONFAB_PG_POOL(source), result, &error);

	self->beating = FALSE;
	if (res == NULL) {
		g_debug("reaping dead instances: %s", error->message);
		return;
	}
	if (column_int(res, 0, 0) > 0)
		g_message("took over from %" G_GINT64_FORMAT
			  " confabd instances that stopped renewing their lease",
			  column_int(res, 0, 0));
}

static void
renewed(GObject *source, GAsyncResult *result, gpointer data)
{
	ConfabStorePostgres *self = data;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res =
	    confab_pg_pool_query_finish(CONFAB_PG_POOL(source), result, &error);

	if (res == NULL) {
		g_debug("renewing this instance's lease: %s", error->message);
		self->beating = FALSE;
		return;
	}
	if (column_bool(res, 0, 0))
		g_warning("this instance was cut off from PostgreSQL for longer than its lease "
			  "(%u s): other instances took its sessions, counts and approvals over",
			  self->lease);
	confab_pg_pool_query_async(self->pool,
				   "SELECT confab_reap(NULL)",
				   0,
				   NULL,
				   NULL,
				   reaped,
				   self);
}

static gboolean
heartbeat(gpointer data)
{
	ConfabStorePostgres *self = data;
	g_autoptr(GPtrArray) releases = NULL;
	g_autofree gchar *lease = g_strdup_printf("%u", self->lease);
	const gchar *params[] = {self->instance_id, lease};

	if (self->beating || self->closing)
		return G_SOURCE_CONTINUE;
	self->beating = TRUE;
	/* what could not be given back before: again */
	releases = g_steal_pointer(&self->releases);
	self->releases = g_ptr_array_new_with_free_func((GDestroyNotify)release_free);
	for (guint i = 0; i < releases->len; i++)
		release_start(self, g_ptr_array_steal_index_fast(releases, i--));
	confab_pg_pool_query_async(
	    self->pool,
	    "INSERT INTO instances (id, expires_at) "
	    "VALUES ($1, now() + make_interval(secs => $2::integer)) "
	    "ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at "
	    "RETURNING xmax = 0",
	    2,
	    params,
	    NULL,
	    renewed,
	    self);
	return G_SOURCE_CONTINUE;
}

/* ---------- closing ---------- */

static void
farewell_done(GObject *source, GAsyncResult *result, gpointer data)
{
	ConfabStorePostgres *self = data;
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res =
	    confab_pg_pool_query_finish(CONFAB_PG_POOL(source), result, &error);

	if (res == NULL)
		g_debug("leaving: %s; other instances will reap this one", error->message);
	g_main_loop_quit(self->loop);
}

/* Once every op queued before close() is over, this instance ends itself:
 * what it still held goes back at once rather than when its lease expires. */
static void
close_continue(ConfabStorePostgres *self)
{
	const gchar *params[] = {self->instance_id};

	if (self->in_flight > 0 || self->close_timer == NULL ||
	    g_source_is_destroyed(self->close_timer))
		return;
	g_source_destroy(self->close_timer);
	confab_pg_pool_query_async(self->pool,
				   "SELECT confab_reap($1)",
				   1,
				   params,
				   NULL,
				   farewell_done,
				   self);
}

static gboolean
close_deadline(gpointer data)
{
	ConfabStorePostgres *self = data;
	g_warning("closing the store: %u operations still waiting on PostgreSQL after %u ms",
		  self->in_flight,
		  (guint)CLOSE_DEADLINE_MS);
	g_main_loop_quit(self->loop);
	return G_SOURCE_REMOVE;
}

static gboolean
close_start(gpointer data)
{
	ConfabStorePostgres *self = data;

	self->closing = TRUE;
	if (self->heartbeat != NULL)
		g_source_destroy(self->heartbeat);
	self->close_timer = g_timeout_source_new(CLOSE_DEADLINE_MS);
	g_source_set_callback(self->close_timer, close_deadline, self, NULL);
	g_source_attach(self->close_timer, self->context);
	close_continue(self);
	return G_SOURCE_REMOVE;
}

static void
confab_store_postgres_close(ConfabStore *store)
{
	ConfabStorePostgres *self = CONFAB_STORE_POSTGRES(store);
	g_autoptr(GSource) source = NULL;

	g_atomic_int_set(&self->closed, 1);
	if (self->thread == NULL)
		return;
	/* after every op queued so far */
	source = g_idle_source_new();
	g_source_set_priority(source, G_PRIORITY_DEFAULT);
	g_source_set_callback(source, close_start, self, NULL);
	g_source_attach(source, self->context);
	g_thread_join(g_steal_pointer(&self->thread));
}

/* ---------- starting ---------- */

static void
start_done(ConfabStorePostgres *self, GError *error)
{
	g_mutex_lock(&self->lock);
	self->start_error = error;
	self->started = TRUE;
	g_cond_signal(&self->cond);
	g_mutex_unlock(&self->lock);
	if (error != NULL)
		g_main_loop_quit(self->loop);
}

/* The store is ready once its LISTEN is: a change made after that is heard
 * of, one made before is in what its caller loads next. */
static void
on_listening(ConfabPgPool *pool, gpointer data)
{
	ConfabStorePostgres *self = data;

	if (self->start_timer == NULL)
		return;
	g_source_destroy(self->start_timer);
	g_clear_pointer(&self->start_timer, g_source_unref);
	start_done(self, NULL);
}

static gboolean
listen_timed_out(gpointer data)
{
	ConfabStorePostgres *self = data;

	g_clear_pointer(&self->start_timer, g_source_unref);
	start_done(self,
		   g_error_new(CONFAB_ERROR,
			       CONFAB_ERROR_STORE_UNAVAILABLE,
			       "no LISTEN on PostgreSQL within %u ms",
			       (guint)CONNECT_TIMEOUT_MS * 2));
	return G_SOURCE_REMOVE;
}

static void
start_pool(ConfabStorePostgres *self)
{
	self->pool = confab_pg_pool_new(self->url, self->password, self->pool_size);
	confab_pg_pool_set_connect_timeout(self->pool, CONNECT_TIMEOUT_MS);
	confab_pg_pool_set_query_timeout(self->pool, QUERY_TIMEOUT_MS);
	confab_pg_pool_set_acquire_timeout(self->pool, ACQUIRE_TIMEOUT_MS);
	g_signal_connect(self->pool, "notification", G_CALLBACK(on_notification), self);
	g_signal_connect(self->pool, "reconnected", G_CALLBACK(on_reconnected), self);
	g_signal_connect(self->pool, "listening", G_CALLBACK(on_listening), self);
	self->start_timer = g_timeout_source_new(CONNECT_TIMEOUT_MS * 2);
	g_source_set_callback(self->start_timer, listen_timed_out, self, NULL);
	g_source_attach(self->start_timer, self->context);
	confab_pg_pool_listen(self->pool, CHANNEL);
	confab_pg_pool_start(self->pool);
	/* a third of the lease: two heartbeats may fail before it runs out */
	self->heartbeat = g_timeout_source_new(MAX(self->lease * 1000 / 3, 500));
	g_source_set_callback(self->heartbeat, heartbeat, self, NULL);
	g_source_set_static_name(self->heartbeat, "[confab] postgres heartbeat");
	g_source_attach(self->heartbeat, self->context);
}

/* the start-up connection goes once the instance is registered */
static void
setup_connection_done(ConfabStorePostgres *self)
{
	g_autoptr(ConfabPgConnection) connection = g_steal_pointer(&self->setup_connection);
	confab_pg_connection_close(connection);
}

static void
registered(GObject *source, GAsyncResult *result, gpointer data)
{
	ConfabStorePostgres *self = data;
	GError *error = NULL;
	g_autoptr(PGresult) res =
	    confab_pg_connection_query_finish(CONFAB_PG_CONNECTION(source), result, &error);

	setup_connection_done(self);
	if (res == NULL) {
		g_prefix_error_literal(&error, "registering this instance: ");
		start_done(self, error);
		return;
	}
	start_pool(self);
}

static void
migrated(GObject *source, GAsyncResult *result, gpointer data)
{
	ConfabStorePostgres *self = data;
	GError *error = NULL;
	gint from = 0;
	g_autofree gchar *lease = g_strdup_printf("%u", self->lease);
	const gchar *params[] = {self->instance_id, lease};

	if (!confab_pg_schema_migrate_finish(result, &from, &error)) {
		setup_connection_done(self);
		start_done(self, error);
		return;
	}
	if (from != 0 && from != CONFAB_PG_SCHEMA_VERSION)
		g_message("migrated the PostgreSQL schema from version %d to %d",
			  from,
			  CONFAB_PG_SCHEMA_VERSION);
	confab_pg_connection_query_async(self->setup_connection,
					 "INSERT INTO instances (id, expires_at) "
					 "VALUES ($1, now() + make_interval(secs => $2::integer))",
					 2,
					 params,
					 NULL,
					 registered,
					 self);
}

static void
connected(GObject *source, GAsyncResult *result, gpointer data)
{
	ConfabStorePostgres *self = data;
	GError *error = NULL;

	if (!confab_pg_connection_connect_finish(CONFAB_PG_CONNECTION(source), result, &error)) {
		setup_connection_done(self);
		start_done(self, error);
		return;
	}
	confab_pg_schema_migrate_async(self->setup_connection, NULL, migrated, self);
}

static gpointer
store_thread(gpointer data)
{
	ConfabStorePostgres *self = data;

	g_main_context_push_thread_default(self->context);
	/* the schema first, on a connection of its own: migrations may take
	 * longer than a query may */
	self->setup_connection = confab_pg_connection_new(self->url, self->password);
	confab_pg_connection_set_connect_timeout(self->setup_connection, CONNECT_TIMEOUT_MS);
	confab_pg_connection_set_query_timeout(self->setup_connection, MIGRATE_TIMEOUT_MS);
	confab_pg_connection_connect_async(self->setup_connection, NULL, connected, self);
	g_main_loop_run(self->loop);

	if (self->heartbeat != NULL)
		g_source_destroy(self->heartbeat);
	if (self->close_timer != NULL)
		g_source_destroy(self->close_timer);
	if (self->start_timer != NULL)
		g_source_destroy(self->start_timer);
	g_clear_pointer(&self->start_timer, g_source_unref);
	if (self->pool != NULL)
		confab_pg_pool_close(self->pool);
	/* the last answers, failures mostly, reach their callers */
	while (g_main_context_iteration(self->context, FALSE))
		;
	g_clear_object(&self->pool);
	while (g_main_context_iteration(self->context, FALSE))
		;
	g_main_context_pop_thread_default(self->context);
	return NULL;
}

/* ---------- the object ---------- */

/* ---------- every operation described once (confab-store-call.h) ---------- */

static void
call_done(GObject *source, GAsyncResult *result, gpointer data)
{
	Op *op = data;
	ConfabStoreCall *call = op->data;
	g_autoptr(PGresult) res = op_query_finish(op, result, call->op->what);
	ConfabStoreRow row = {&row_funcs, res, 0};
	GError *error = NULL;
	gpointer rows;

	if (res == NULL)
		return;
	if (call->op->rows == CONFAB_STORE_ROWS_NONE) {
		/* a notifying write returns a row per row it changed */
		gint64 changed = PQresultStatus(res) == PGRES_TUPLES_OK
				     ? PQntuples(res)
				     : g_ascii_strtoll(PQcmdTuples(res), NULL, 10);
		if (confab_store_call_check_changed(call, changed, &error))
			op_return_boolean(op);
		else
			op_return_error(op, error);
		return;
	}
	for (row.index = 0; row.index < PQntuples(res); row.index++)
		if (!confab_store_call_add_row(call, &row))
			break;
	rows = confab_store_call_steal_result(call, &error);
	if (rows == NULL)
		op_return_error(op, error);
	else
		op_return_pointer(op, rows, confab_store_call_get_result_free(call));
}

static void
run_call(ConfabStorePostgres *self, Op *op)
{
	ConfabStoreCall *call = op->data;
	const gchar *sql = confab_store_call_get_sql(call, FALSE);
	g_autofree gchar *notifying = NULL;
	g_autoptr(GPtrArray) p = params_new();

	for (guint i = 0; i < confab_store_call_get_n_args(call); i++) {
		const ConfabStoreArg *arg = confab_store_call_get_arg(call, i);
		g_autofree gchar *hex = NULL;

		switch (arg->type) {
		case CONFAB_STORE_ARG_TEXT:
			params_add(p, arg->text);
			break;
		case CONFAB_STORE_ARG_INT:
			params_add_int(p, arg->integer);
			break;
		case CONFAB_STORE_ARG_BYTES:
			/* bytea's text input */
			hex = hex_from_bytes(arg->bytes);
			g_ptr_array_add(p, g_strconcat("\\x", hex, NULL));
			break;
		case CONFAB_STORE_ARG_INSTANCE:
			params_add(p, self->instance_id);
			break;
		}
	}
	/* other instances hear of the change in the same statement; a write
	 * that must change a row (an op with a missing error) notifies only
	 * when it did, and returns a row per row changed */
	if (call->op->rows == CONFAB_STORE_ROWS_NONE && call->op->changed >= 0) {
		g_ptr_array_add(p, notify_payload(self, call->op->changed));
		notifying = g_strdup_printf(
		    call->op->missing != 0 ? "WITH w AS (%s RETURNING 1) "
					     "SELECT pg_notify('" CHANNEL "', $%u) FROM w"
					   : "WITH w AS (%s) SELECT pg_notify('" CHANNEL "', $%u)",
		    sql,
		    p->len);
		sql = notifying;
	}
	op_query(op, sql, p, call_done);
}

static void
confab_store_postgres_run(ConfabStore *store, ConfabStoreCall *call, GTask *task)
{
	/* the call is the task's: it lives as long as the op */
	op_queue_task(CONFAB_STORE_POSTGRES(store),
		      run_call,
		      call,
		      NULL,
		      !confab_store_call_writes(call),
		      task);
}

static void
confab_store_postgres_iface_init(ConfabStoreInterface *iface)
{
	iface->run = confab_store_postgres_run;
	iface->set_quota = confab_store_postgres_set_quota;
	iface->take_tokens = confab_store_postgres_take_tokens;
	iface->search_sessions = confab_store_postgres_search_sessions;
	iface->get_usage = confab_store_postgres_get_usage;
	iface->list_usage = confab_store_postgres_list_usage;
	iface->admit_quota = confab_store_postgres_admit_quota;
	iface->release_quota = confab_store_postgres_release_quota;
	iface->release_parallel = confab_store_postgres_release_parallel;
	iface->acquire_session = confab_store_postgres_acquire_session;
	iface->release_session = confab_store_postgres_release_session;
	iface->session_is_running = confab_store_postgres_session_is_running;
	iface->commit_turn = confab_store_postgres_commit_turn;
	iface->close = confab_store_postgres_close;
}

static void
confab_store_postgres_finalize(GObject *object)
{
	ConfabStorePostgres *self = CONFAB_STORE_POSTGRES(object);

	if (self->thread != NULL)
		confab_store_postgres_close(CONFAB_STORE(self));
	g_clear_pointer(&self->heartbeat, g_source_unref);
	g_clear_pointer(&self->close_timer, g_source_unref);
	g_clear_pointer(&self->holds, g_hash_table_unref);
	g_clear_pointer(&self->leases, g_hash_table_unref);
	g_clear_pointer(&self->releases, g_ptr_array_unref);
	g_clear_pointer(&self->loop, g_main_loop_unref);
	g_clear_pointer(&self->context, g_main_context_unref);
	g_clear_pointer(&self->owner_context, g_main_context_unref);
	g_clear_error(&self->start_error);
	g_mutex_clear(&self->lock);
	g_cond_clear(&self->cond);
	g_free(self->url);
	if (self->password != NULL)
		memset(self->password, 0, strlen(self->password));
	g_free(self->password);
	g_free(self->instance_id);
	G_OBJECT_CLASS(confab_store_postgres_parent_class)->finalize(object);
}

static void
confab_store_postgres_class_init(ConfabStorePostgresClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_store_postgres_finalize;
}

static void
holds_queue_free(GQueue *queue)
{
	g_queue_free_full(queue, g_free);
}

static void
confab_store_postgres_init(ConfabStorePostgres *self)
{
	g_autofree gchar *uuid = g_uuid_string_random();

	self->instance_id = g_strconcat("ins_", uuid, NULL);
	self->context = g_main_context_new();
	self->loop = g_main_loop_new(self->context, FALSE);
	self->holds = g_hash_table_new_full(g_str_hash,
					    g_str_equal,
					    g_free,
					    (GDestroyNotify)holds_queue_free);
	self->leases = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	self->releases = g_ptr_array_new_with_free_func((GDestroyNotify)release_free);
	g_queue_init(&self->after_releases);
	g_mutex_init(&self->lock);
	g_cond_init(&self->cond);
}

/**
 * confab_store_postgres_new:
 * @url: a libpq connection URI or `key=value` string
 * @password: (nullable): the password, winning over libpq's own sources
 *   (the URI, `PGPASSWORD`, `PGPASSFILE`, `~/.pgpass`)
 * @pool_size: connections for queries (one more listens)
 * @lease_seconds: how long this instance counts as live without renewing
 *   its row (`[store] instance_lease`): a killed instance's sessions,
 *   counts and approvals are taken over within it and a third
 * @error: return location for a #GError
 *
 * Connects, migrates the schema to %CONFAB_PG_SCHEMA_VERSION (under an
 * advisory lock: instances may start together), registers this instance
 * and starts the pool. Returns once all that is done, or has failed.
 *
 * Returns: (transfer full): a new store
 */
ConfabStorePostgres *
confab_store_postgres_new(const gchar *url,
			  const gchar *password,
			  guint pool_size,
			  guint lease_seconds,
			  GError **error)
{
	g_autoptr(ConfabStorePostgres) self = NULL;

	g_return_val_if_fail(url != NULL, NULL);

	self = g_object_new(CONFAB_TYPE_STORE_POSTGRES, NULL);
	self->url = g_strdup(url);
	self->password = g_strdup(password);
	self->pool_size = MAX(pool_size, 1);
	self->lease = MAX(lease_seconds, 1);
	self->owner_context = g_main_context_ref_thread_default();
	self->thread = g_thread_try_new("confab-postgres", store_thread, self, error);
	if (self->thread == NULL)
		return NULL;
	g_mutex_lock(&self->lock);
	while (!self->started)
		g_cond_wait(&self->cond, &self->lock);
	g_mutex_unlock(&self->lock);
	if (self->start_error != NULL) {
		g_atomic_int_set(&self->closed, 1);
		g_thread_join(g_steal_pointer(&self->thread));
		g_propagate_prefixed_error(error,
					   g_steal_pointer(&self->start_error),
					   "opening the PostgreSQL store: ");
		return NULL;
	}
	return g_steal_pointer(&self);
}

/**
 * confab_store_postgres_get_instance_id:
 *
 * Returns: this instance's id in the database's table of instances
 */
const gchar *
confab_store_postgres_get_instance_id(ConfabStorePostgres *self)
{
	g_return_val_if_fail(CONFAB_IS_STORE_POSTGRES(self), NULL);
	return self->instance_id;
}

/**
 * confab_store_postgres_read_password_file:
 * @path: a file whose first line is the password
 * @error: return location for a #GError
 *
 * Returns: (transfer full): the first line, without its line end
 */
gchar *
confab_store_postgres_read_password_file(const gchar *path, GError **error)
{
	g_autofree gchar *contents = NULL;
	gsize len = 0;

	g_return_val_if_fail(path != NULL, NULL);
	if (!g_file_get_contents(path, &contents, &len, error)) {
		g_prefix_error(error, "reading the database password: ");
		return NULL;
	}
	len = strcspn(contents, "\r\n");
	{
		gchar *password = g_strndup(contents, len);
		memset(contents, 0, strlen(contents));
		return password;
	}
}
