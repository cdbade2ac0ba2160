/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabPg"

#include "config.h"

#include "store/postgres/confab-pg-pool.h"

/*
 * A fixed number of connections (slots), each reconnecting by itself after a
 * loss with a backoff of 100 ms doubling up to 5 s, plus, once someone
 * listens, one more connection that only LISTENs.
 *
 * acquire lends a ready, idle connection, or queues the caller until one is
 * free (within acquire-timeout); when no connection is ready and none is
 * being made for the first time, it fails at once with
 * CONFAB_PG_ERROR_UNAVAILABLE, so that a request can be answered 503 without
 * waiting on a database that is down. `available` says the same ahead of
 * time.
 *
 * The listening connection LISTENs again on every channel after a reconnect
 * and then emits `reconnected`: notifications sent while it was away are
 * lost, so whoever caches what they announce must reload it all.
 */

#define DEFAULT_POOL_SIZE	   8
#define DEFAULT_ACQUIRE_TIMEOUT_MS 5000
#define BACKOFF_FIRST_MS	   100
#define BACKOFF_MAX_MS		   5000

typedef struct {
	ConfabPgPool *pool;	  /* unowned */
	ConfabPgConnection *conn; /* owned; NULL while waiting to reconnect */
	gboolean ready;
	gboolean lent;
	gboolean listener;
	gboolean tried;	     /* has made one attempt */
	gboolean ever_ready; /* the listener: the next ready is a reconnect */
	guint backoff_ms;
	GSource *retry; /* owned */
	guint pending_listens;
} Slot;

typedef struct {
	ConfabPgPool *pool; /* unowned: the pool answers every waiter before it goes */
	GTask *task;	    /* owned */
	GSource *timeout;   /* owned */
	GSource *cancelled; /* owned, nullable */
} Waiter;

struct _ConfabPgPool {
	GObject parent_instance;
	gchar *conninfo; /* owned */
	gchar *password; /* owned, nullable */
	guint pool_size;
	guint connect_timeout_ms;
	guint query_timeout_ms;
	guint acquire_timeout_ms;

	GPtrArray *slots;      /* owned: Slot */
	Slot *listener;	       /* owned, nullable */
	GPtrArray *channels;   /* owned: gchar*, what the listener LISTENs on */
	GQueue waiters;	       /* owned: Waiter */
	GMainContext *context; /* owned */
	gboolean started;
	gboolean closed;
	gboolean available;
};

G_DEFINE_FINAL_TYPE(ConfabPgPool, confab_pg_pool, G_TYPE_OBJECT)

enum { PROP_0, PROP_CONNINFO, PROP_PASSWORD, PROP_POOL_SIZE, PROP_AVAILABLE, N_PROPS };

static GParamSpec *properties[N_PROPS];

enum { SIGNAL_NOTIFICATION, SIGNAL_LISTENING, SIGNAL_RECONNECTED, N_SIGNALS };

static guint signals[N_SIGNALS];

static void
slot_connect(Slot *slot);

/* Callbacks of connects and LISTENs hold the pool weakly: unreffing the
 * pool closes its connections at once, and their callbacks find it gone. */
static GWeakRef *
weak_pool(ConfabPgPool *self)
{
	GWeakRef *ref = g_new0(GWeakRef, 1);
	g_weak_ref_init(ref, self);
	return ref;
}

static ConfabPgPool *
weak_pool_steal(GWeakRef *ref)
{
	ConfabPgPool *self = g_weak_ref_get(ref);
	g_weak_ref_clear(ref);
	g_free(ref);
	return self;
}

/* ---------- waiters ---------- */

/* Attaches @source, calling @func with @data, to the pool's context. */
static GSource *
attach(ConfabPgPool *self, GSource *source, GSourceFunc func, gpointer data)
{
	g_source_set_callback(source, func, data, NULL);
	g_source_attach(source, self->context);
	return source;
}

static void
source_clear(GSource **source)
{
	if (*source != NULL)
		g_source_destroy(*source);
	g_clear_pointer(source, g_source_unref);
}

static void
waiter_free(Waiter *waiter)
{
	source_clear(&waiter->timeout);
	source_clear(&waiter->cancelled);
	g_clear_object(&waiter->task);
	g_free(waiter);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Waiter, waiter_free)

static void
waiter_fail(ConfabPgPool *self, Waiter *waiter, GError *error)
{
	g_autoptr(Waiter) owned = waiter;
	g_autoptr(GTask) task = g_steal_pointer(&waiter->task);
	g_queue_remove(&self->waiters, waiter);
	g_task_return_error(task, error);
}

static gboolean
waiter_timed_out(gpointer data)
{
	Waiter *waiter = data;
	waiter_fail(waiter->pool,
		    waiter,
		    g_error_new(CONFAB_PG_ERROR,
				CONFAB_PG_ERROR_TIMEOUT,
				"no PostgreSQL connection was free within %u ms",
				waiter->pool->acquire_timeout_ms));
	return G_SOURCE_REMOVE;
}

static gboolean
waiter_cancelled(GCancellable *cancellable, gpointer data)
{
	Waiter *waiter = data;
	waiter_fail(waiter->pool,
		    waiter,
		    g_error_new_literal(G_IO_ERROR,
					G_IO_ERROR_CANCELLED,
					"waiting for a connection was cancelled"));
	return G_SOURCE_REMOVE;
}

static void
fail_waiters(ConfabPgPool *self, const GError *error)
{
	Waiter *waiter;
	while ((waiter = g_queue_peek_head(&self->waiters)) != NULL)
		waiter_fail(self, waiter, g_error_copy(error));
}

/* ---------- slots ---------- */

static Slot *
find_slot(ConfabPgPool *self, ConfabPgConnection *conn)
{
	for (guint i = 0; i < self->slots->len; i++) {
		Slot *slot = g_ptr_array_index(self->slots, i);
		if (slot->conn == conn && conn != NULL)
			return slot;
	}
	if (self->listener != NULL && self->listener->conn == conn && conn != NULL)
		return self->listener;
	return NULL;
}

static Slot *
find_idle_slot(ConfabPgPool *self)
{
	for (guint i = 0; i < self->slots->len; i++) {
		Slot *slot = g_ptr_array_index(self->slots, i);
		if (slot->ready && !slot->lent)
			return slot;
	}
	return NULL;
}

/* Whether a slot has yet to make its first attempt: until then callers may
 * wait instead of hearing "unavailable". */
static gboolean
starting(ConfabPgPool *self)
{
	for (guint i = 0; i < self->slots->len; i++) {
		Slot *slot = g_ptr_array_index(self->slots, i);
		if (!slot->tried)
			return TRUE;
	}
	return FALSE;
}

static void
lend(Slot *slot, GTask *task)
{
	slot->lent = TRUE;
	g_task_return_pointer(task, g_object_ref(slot->conn), g_object_unref);
}

static void
hand_out(ConfabPgPool *self)
{
	Waiter *waiter;
	Slot *slot;
	while ((waiter = g_queue_peek_head(&self->waiters)) != NULL &&
	       (slot = find_idle_slot(self)) != NULL) {
		g_autoptr(Waiter) owned = g_queue_pop_head(&self->waiters);
		g_autoptr(GTask) task = g_steal_pointer(&owned->task);
		lend(slot, task);
	}
}

static void
update_available(ConfabPgPool *self)
{
	gboolean available = confab_pg_pool_get_n_ready(self) > 0;

	if (available != self->available) {
		self->available = available;
		g_debug("PostgreSQL %s", available ? "available" : "unavailable");
		g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_AVAILABLE]);
	}
	if (!available && !starting(self) && self->waiters.length > 0) {
		g_autoptr(GError) error = g_error_new_literal(CONFAB_PG_ERROR,
							      CONFAB_PG_ERROR_UNAVAILABLE,
							      "PostgreSQL is unavailable");
		fail_waiters(self, error);
	}
}

static gboolean
slot_retry(gpointer data)
{
	Slot *slot = data;
	g_clear_pointer(&slot->retry, g_source_unref);
	slot_connect(slot);
	return G_SOURCE_REMOVE;
}

static void
slot_drop_conn(Slot *slot)
{
	if (slot->conn == NULL)
		return;
	g_signal_handlers_disconnect_by_data(slot->conn, slot);
	g_clear_object(&slot->conn);
	slot->ready = FALSE;
	slot->lent = FALSE;
	slot->pending_listens = 0;
}

static void
slot_closed(ConfabPgConnection *conn, const GError *error, gpointer data)
{
	Slot *slot = data;
	ConfabPgPool *self = slot->pool;
	g_autoptr(ConfabPgPool) ref = g_object_ref(self);
	guint delay = slot->backoff_ms;

	g_debug("%s connection %s; trying again in %u ms",
		slot->listener ? "listening" : "pool",
		slot->ready ? "lost" : "failed",
		delay);
	slot_drop_conn(slot);
	slot->tried = TRUE;
	slot->backoff_ms = MIN(slot->backoff_ms * 2, BACKOFF_MAX_MS);
	if (!self->closed) {
		slot->retry = attach(self, g_timeout_source_new(delay), slot_retry, slot);
		g_source_set_static_name(slot->retry, "ConfabPgPool retry");
	}
	update_available(self);
}

static void
slot_notification(ConfabPgConnection *conn,
		  const gchar *channel,
		  const gchar *payload,
		  gpointer data)
{
	Slot *slot = data;
	g_signal_emit(slot->pool, signals[SIGNAL_NOTIFICATION], 0, channel, payload);
}

static void
listener_ready(Slot *slot)
{
	g_signal_emit(slot->pool, signals[SIGNAL_LISTENING], 0);
	if (slot->ever_ready)
		g_signal_emit(slot->pool, signals[SIGNAL_RECONNECTED], 0);
	slot->ever_ready = TRUE;
}

static void
slot_listened(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConfabPgPool) self = weak_pool_steal(user_data);
	g_autoptr(GError) error = NULL;
	ConfabPgConnection *conn = CONFAB_PG_CONNECTION(source);
	Slot *slot;

	/* a lost connection comes back through `closed` */
	if (!confab_pg_connection_listen_finish(conn, result, &error))
		g_debug("LISTEN: %s", error->message);
	if (self == NULL)
		return;
	slot = find_slot(self, conn);
	if (slot == NULL || slot->pending_listens == 0)
		return;
	if (--slot->pending_listens == 0)
		listener_ready(slot);
}

static void
slot_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConfabPgPool) self = weak_pool_steal(user_data);
	g_autoptr(GError) error = NULL;
	ConfabPgConnection *conn = CONFAB_PG_CONNECTION(source);
	Slot *slot;

	/* a failure comes through `closed` */
	if (!confab_pg_connection_connect_finish(conn, result, &error) || self == NULL)
		return;
	slot = find_slot(self, conn);
	if (slot == NULL)
		return;
	slot->ready = TRUE;
	slot->tried = TRUE;
	slot->backoff_ms = BACKOFF_FIRST_MS;
	if (slot->listener) {
		slot->pending_listens = self->channels->len;
		for (guint i = 0; i < self->channels->len; i++)
			confab_pg_connection_listen_async(conn,
							  g_ptr_array_index(self->channels, i),
							  NULL,
							  slot_listened,
							  weak_pool(self));
		if (self->channels->len == 0)
			listener_ready(slot);
		return;
	}
	update_available(self);
	hand_out(self);
}

static void
slot_connect(Slot *slot)
{
	ConfabPgPool *self = slot->pool;

	g_assert(slot->conn == NULL);
	slot->conn = confab_pg_connection_new(self->conninfo, self->password);
	confab_pg_connection_set_connect_timeout(slot->conn, self->connect_timeout_ms);
	confab_pg_connection_set_query_timeout(slot->conn, self->query_timeout_ms);
	g_signal_connect(slot->conn, "closed", G_CALLBACK(slot_closed), slot);
	if (slot->listener)
		g_signal_connect(slot->conn, "notification", G_CALLBACK(slot_notification), slot);
	confab_pg_connection_connect_async(slot->conn, NULL, slot_connected, weak_pool(self));
}

static Slot *
slot_new(ConfabPgPool *self, gboolean listener)
{
	Slot *slot = g_new0(Slot, 1);
	slot->pool = self;
	slot->listener = listener;
	slot->backoff_ms = BACKOFF_FIRST_MS;
	return slot;
}

/* Stops the slot: its connection closes, failing what a borrower queued. */
static void
slot_stop(Slot *slot)
{
	g_autoptr(ConfabPgConnection) conn = NULL;
	source_clear(&slot->retry);
	if (slot->conn == NULL)
		return;
	conn = g_object_ref(slot->conn);
	slot_drop_conn(slot);
	confab_pg_connection_close(conn);
}

static void
slot_free(Slot *slot)
{
	slot_stop(slot);
	g_free(slot);
}

/* ---------- public ---------- */

/**
 * confab_pg_pool_start:
 *
 * Starts connecting every connection, on the thread-default main context.
 */
void
confab_pg_pool_start(ConfabPgPool *self)
{
	g_return_if_fail(CONFAB_IS_PG_POOL(self));
	if (self->started || self->closed)
		return;
	self->started = TRUE;
	self->context = g_main_context_ref_thread_default();
	for (guint i = 0; i < self->pool_size; i++)
		g_ptr_array_add(self->slots, slot_new(self, FALSE));
	for (guint i = 0; i < self->slots->len; i++)
		slot_connect(g_ptr_array_index(self->slots, i));
	if (self->channels->len > 0 && self->listener == NULL) {
		self->listener = slot_new(self, TRUE);
		slot_connect(self->listener);
	}
}

/**
 * confab_pg_pool_close:
 *
 * Closes every connection; waiting callers and queries in flight fail.
 * Disposing of the pool does the same.
 */
void
confab_pg_pool_close(ConfabPgPool *self)
{
	g_autoptr(GError) error = NULL;

	g_return_if_fail(CONFAB_IS_PG_POOL(self));
	if (self->closed)
		return;
	self->closed = TRUE;
	error = g_error_new_literal(CONFAB_PG_ERROR, CONFAB_PG_ERROR_CLOSED, "the pool was closed");
	fail_waiters(self, error);
	for (guint i = 0; i < self->slots->len; i++)
		slot_stop(g_ptr_array_index(self->slots, i));
	if (self->listener != NULL)
		slot_stop(self->listener);
	update_available(self);
}

/**
 * confab_pg_pool_get_available:
 *
 * Returns: whether at least one connection is ready; when not, acquiring
 *   fails at once (after the first attempts)
 */
gboolean
confab_pg_pool_get_available(ConfabPgPool *self)
{
	g_return_val_if_fail(CONFAB_IS_PG_POOL(self), FALSE);
	return self->available;
}

guint
confab_pg_pool_get_size(ConfabPgPool *self)
{
	g_return_val_if_fail(CONFAB_IS_PG_POOL(self), 0);
	return self->pool_size;
}

/**
 * confab_pg_pool_get_n_ready:
 *
 * Returns: how many pool connections (not the listener) are ready
 */
guint
confab_pg_pool_get_n_ready(ConfabPgPool *self)
{
	guint n = 0;
	g_return_val_if_fail(CONFAB_IS_PG_POOL(self), 0);
	for (guint i = 0; i < self->slots->len; i++)
		n += ((Slot *)g_ptr_array_index(self->slots, i))->ready ? 1 : 0;
	return n;
}

/**
 * confab_pg_pool_acquire_async:
 * @cancellable: (nullable): stops waiting
 *
 * Lends a ready connection for a while: one caller's statements, a
 * transaction made of several queries. Give it back with
 * confab_pg_pool_release() once its last query has completed.
 */
void
confab_pg_pool_acquire_async(ConfabPgPool *self,
			     GCancellable *cancellable,
			     GAsyncReadyCallback callback,
			     gpointer user_data)
{
	g_autoptr(GTask) task = NULL;
	Waiter *waiter;
	Slot *slot;

	g_return_if_fail(CONFAB_IS_PG_POOL(self));
	g_return_if_fail(cancellable == NULL || G_IS_CANCELLABLE(cancellable));

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_pg_pool_acquire_async);
	if (g_task_return_error_if_cancelled(task))
		return;
	if (self->closed || !self->started) {
		g_task_return_new_error(task,
					CONFAB_PG_ERROR,
					CONFAB_PG_ERROR_CLOSED,
					self->closed ? "the pool was closed"
						     : "the pool was not started");
		return;
	}
	if (self->waiters.length == 0 && (slot = find_idle_slot(self)) != NULL) {
		lend(slot, task);
		return;
	}
	if (!self->available && !starting(self)) {
		g_task_return_new_error(task,
					CONFAB_PG_ERROR,
					CONFAB_PG_ERROR_UNAVAILABLE,
					"PostgreSQL is unavailable");
		return;
	}
	waiter = g_new0(Waiter, 1);
	waiter->pool = self;
	waiter->task = g_steal_pointer(&task);
	waiter->timeout =
	    attach(self, g_timeout_source_new(self->acquire_timeout_ms), waiter_timed_out, waiter);
	if (cancellable != NULL)
		waiter->cancelled = attach(self,
					   g_cancellable_source_new(cancellable),
					   G_SOURCE_FUNC(waiter_cancelled),
					   waiter);
	g_queue_push_tail(&self->waiters, waiter);
}

/**
 * confab_pg_pool_acquire_finish:
 *
 * Returns: (transfer full): a ready connection, or %NULL with @error:
 *   %CONFAB_PG_ERROR_UNAVAILABLE at once when the database is down,
 *   %CONFAB_PG_ERROR_TIMEOUT when none was free in time
 */
ConfabPgConnection *
confab_pg_pool_acquire_finish(ConfabPgPool *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

static void
rollback_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res =
	    confab_pg_connection_query_finish(CONFAB_PG_CONNECTION(source), result, &error);
	if (res == NULL)
		g_debug("ROLLBACK on release: %s", error->message);
}

/**
 * confab_pg_pool_release:
 * @connection: (transfer none): what confab_pg_pool_acquire_finish() lent
 *
 * Gives a connection back. One left inside a transaction, or with a
 * statement still running, gets a ROLLBACK queued ahead of the next
 * borrower's statements.
 */
void
confab_pg_pool_release(ConfabPgPool *self, ConfabPgConnection *connection)
{
	Slot *slot;
	PGTransactionStatusType status;

	g_return_if_fail(CONFAB_IS_PG_POOL(self));
	g_return_if_fail(CONFAB_IS_PG_CONNECTION(connection));

	slot = find_slot(self, connection);
	/* lost meanwhile: its slot has moved on */
	if (slot == NULL || !slot->lent)
		return;
	slot->lent = FALSE;
	/* ACTIVE: a statement still runs, maybe one whose caller timed out
	 * in the middle of a transaction; outside one, ROLLBACK only warns */
	status = confab_pg_connection_get_transaction_status(connection);
	if (status != PQTRANS_IDLE) {
		g_debug("connection released inside a transaction: rolling back");
		confab_pg_connection_query_async(connection,
						 "ROLLBACK",
						 0,
						 NULL,
						 NULL,
						 rollback_done,
						 NULL);
	}
	hand_out(self);
}

typedef struct {
	ConfabPgConnection *conn;     /* owned, once acquired */
	ConfabPgStatement *statement; /* owned */
} PoolQuery;

static void
pool_query_free(PoolQuery *query)
{
	g_clear_object(&query->conn);
	confab_pg_batch_statement_free(query->statement);
	g_free(query);
}

static void
pool_query_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabPgPool *self = g_task_get_source_object(task);
	PoolQuery *query = g_task_get_task_data(task);
	g_autoptr(GError) error = NULL;
	PGresult *res = confab_pg_connection_query_finish(query->conn, result, &error);

	confab_pg_pool_release(self, query->conn);
	if (res == NULL)
		g_task_return_error(task, g_steal_pointer(&error));
	else
		g_task_return_pointer(task, res, (GDestroyNotify)PQclear);
}

static void
pool_query_acquired(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabPgPool *self = CONFAB_PG_POOL(source);
	PoolQuery *query = g_task_get_task_data(task);
	GError *error = NULL;

	query->conn = confab_pg_pool_acquire_finish(self, result, &error);
	if (query->conn == NULL) {
		g_task_return_error(task, error);
		return;
	}
	confab_pg_connection_query_async(query->conn,
					 query->statement->sql,
					 query->statement->n_params,
					 (const gchar *const *)query->statement->params,
					 g_task_get_cancellable(task),
					 pool_query_done,
					 g_object_ref(task));
}

/**
 * confab_pg_pool_query_async:
 *
 * confab_pg_connection_query_async() on a connection acquired for it and
 * released after it.
 */
void
confab_pg_pool_query_async(ConfabPgPool *self,
			   const gchar *sql,
			   guint n_params,
			   const gchar *const *params,
			   GCancellable *cancellable,
			   GAsyncReadyCallback callback,
			   gpointer user_data)
{
	g_autoptr(GTask) task = NULL;
	PoolQuery *query;

	g_return_if_fail(CONFAB_IS_PG_POOL(self));
	g_return_if_fail(sql != NULL);
	g_return_if_fail(n_params == 0 || params != NULL);

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_pg_pool_query_async);
	query = g_new0(PoolQuery, 1);
	query->statement = confab_pg_batch_statement_new(sql, n_params, params, FALSE);
	g_task_set_task_data(task, query, (GDestroyNotify)pool_query_free);
	confab_pg_pool_acquire_async(self, cancellable, pool_query_acquired, g_object_ref(task));
}

PGresult *
confab_pg_pool_query_finish(ConfabPgPool *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * confab_pg_pool_listen:
 * @channel: a channel name
 *
 * LISTENs on @channel on the pool's listening connection (made on first
 * use), now and after every reconnect; NOTIFYs arrive as
 * #ConfabPgPool::notification.
 */
void
confab_pg_pool_listen(ConfabPgPool *self, const gchar *channel)
{
	g_return_if_fail(CONFAB_IS_PG_POOL(self));
	g_return_if_fail(channel != NULL);

	for (guint i = 0; i < self->channels->len; i++) {
		if (g_str_equal(g_ptr_array_index(self->channels, i), channel))
			return;
	}
	g_ptr_array_add(self->channels, g_strdup(channel));
	if (!self->started || self->closed)
		return;
	if (self->listener == NULL) {
		self->listener = slot_new(self, TRUE);
		slot_connect(self->listener);
	} else if (self->listener->ready) {
		self->listener->pending_listens++;
		confab_pg_connection_listen_async(self->listener->conn,
						  channel,
						  NULL,
						  slot_listened,
						  weak_pool(self));
	}
}

void
confab_pg_pool_set_connect_timeout(ConfabPgPool *self, guint timeout_ms)
{
	g_return_if_fail(CONFAB_IS_PG_POOL(self));
	self->connect_timeout_ms = timeout_ms;
}

/**
 * confab_pg_pool_set_query_timeout:
 *
 * For connections made from now on; see
 * confab_pg_connection_set_query_timeout().
 */
void
confab_pg_pool_set_query_timeout(ConfabPgPool *self, guint timeout_ms)
{
	g_return_if_fail(CONFAB_IS_PG_POOL(self));
	self->query_timeout_ms = timeout_ms;
}

void
confab_pg_pool_set_acquire_timeout(ConfabPgPool *self, guint timeout_ms)
{
	g_return_if_fail(CONFAB_IS_PG_POOL(self));
	self->acquire_timeout_ms = timeout_ms;
}

/* ---------- GObject ---------- */

static void
confab_pg_pool_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
	ConfabPgPool *self = CONFAB_PG_POOL(object);
	switch (prop_id) {
	case PROP_CONNINFO:
		g_value_set_string(value, self->conninfo);
		break;
	case PROP_POOL_SIZE:
		g_value_set_uint(value, self->pool_size);
		break;
	case PROP_AVAILABLE:
		g_value_set_boolean(value, self->available);
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
	}
}

static void
confab_pg_pool_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
	ConfabPgPool *self = CONFAB_PG_POOL(object);
	switch (prop_id) {
	case PROP_CONNINFO:
		self->conninfo = g_value_dup_string(value);
		break;
	case PROP_PASSWORD:
		self->password = g_value_dup_string(value);
		break;
	case PROP_POOL_SIZE:
		self->pool_size = g_value_get_uint(value);
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
	}
}

static void
confab_pg_pool_dispose(GObject *object)
{
	ConfabPgPool *self = CONFAB_PG_POOL(object);
	if (self->started)
		confab_pg_pool_close(self);
	G_OBJECT_CLASS(confab_pg_pool_parent_class)->dispose(object);
}

static void
confab_pg_pool_finalize(GObject *object)
{
	ConfabPgPool *self = CONFAB_PG_POOL(object);
	g_ptr_array_unref(self->slots);
	g_clear_pointer(&self->listener, slot_free);
	g_ptr_array_unref(self->channels);
	g_clear_pointer(&self->context, g_main_context_unref);
	g_free(self->conninfo);
	g_free(self->password);
	G_OBJECT_CLASS(confab_pg_pool_parent_class)->finalize(object);
}

static void
confab_pg_pool_class_init(ConfabPgPoolClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->get_property = confab_pg_pool_get_property;
	object_class->set_property = confab_pg_pool_set_property;
	object_class->dispose = confab_pg_pool_dispose;
	object_class->finalize = confab_pg_pool_finalize;

	confab_pg_connection_new_conninfo_pspecs(&properties[PROP_CONNINFO],
						 &properties[PROP_PASSWORD]);
	properties[PROP_POOL_SIZE] =
	    g_param_spec_uint("pool-size",
			      NULL,
			      NULL,
			      1,
			      1000,
			      DEFAULT_POOL_SIZE,
			      G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
	/**
	 * ConfabPgPool:available:
	 *
	 * Whether at least one connection is ready.
	 */
	properties[PROP_AVAILABLE] = g_param_spec_boolean(
	    "available",
	    NULL,
	    NULL,
	    FALSE,
	    G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	g_object_class_install_properties(object_class, N_PROPS, properties);

	/**
	 * ConfabPgPool::notification:
	 * @channel: the channel
	 * @payload: the payload, maybe empty
	 *
	 * A NOTIFY on a channel given to confab_pg_pool_listen().
	 */
	signals[SIGNAL_NOTIFICATION] = confab_pg_connection_class_new_notification(object_class);
	/**
	 * ConfabPgPool::listening:
	 *
	 * The listening connection LISTENs on every channel: the first time,
	 * and again after each reconnect (then followed by
	 * #ConfabPgPool::reconnected).
	 */
	signals[SIGNAL_LISTENING] = g_signal_new("listening",
						 G_TYPE_FROM_CLASS(klass),
						 G_SIGNAL_RUN_LAST,
						 0,
						 NULL,
						 NULL,
						 NULL,
						 G_TYPE_NONE,
						 0);
	/**
	 * ConfabPgPool::reconnected:
	 *
	 * The listening connection is back after a loss and LISTENs again;
	 * notifications may have been missed meanwhile: reload what they
	 * would have announced.
	 */
	signals[SIGNAL_RECONNECTED] = g_signal_new("reconnected",
						   G_TYPE_FROM_CLASS(klass),
						   G_SIGNAL_RUN_LAST,
						   0,
						   NULL,
						   NULL,
						   NULL,
						   G_TYPE_NONE,
						   0);
}

static void
confab_pg_pool_init(ConfabPgPool *self)
{
	self->pool_size = DEFAULT_POOL_SIZE;
	self->connect_timeout_ms = 5000;
	self->query_timeout_ms = 5000;
	self->acquire_timeout_ms = DEFAULT_ACQUIRE_TIMEOUT_MS;
	self->slots = g_ptr_array_new_with_free_func((GDestroyNotify)slot_free);
	self->channels = g_ptr_array_new_with_free_func(g_free);
	g_queue_init(&self->waiters);
}

/**
 * confab_pg_pool_new:
 * @conninfo: a libpq URI or `key=value` string
 * @password: (nullable): wins over any in @conninfo
 * @pool_size: how many connections, at least 1
 *
 * Returns: (transfer full): a pool, not yet started
 */
ConfabPgPool *
confab_pg_pool_new(const gchar *conninfo, const gchar *password, guint pool_size)
{
	g_return_val_if_fail(conninfo != NULL, NULL);
	g_return_val_if_fail(pool_size > 0, NULL);
	return g_object_new(CONFAB_TYPE_PG_POOL,
			    "conninfo",
			    conninfo,
			    "password",
			    password,
			    "pool-size",
			    pool_size,
			    NULL);
}
