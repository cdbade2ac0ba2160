/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabBackground"

#include "config.h"

#include "core/confab-background.h"
#include "core/confab-turn.h"

/*
 * The background responses of this instance (POST /api/v1/responses with
 * `background: true`): turns with no client attached, which the store's
 * records say where they stand (#ConfabResponseRecord).
 *
 * - A cancel asked here stops the turn at once; one asked on another
 *   instance sharing the store is a flag in the record, which this
 *   instance reads for each of its turns every CANCEL_POLL_MS.
 * - At start, the responses that a confabd left queued or running (it was
 *   killed, or stopped mid-turn) end as failed with server_error: on
 *   SQLite all of them, before this instance runs any; on PostgreSQL those
 *   of instances whose lease has ended, then again every MAINTENANCE_S (or
 *   [store] instance_lease, if shorter), never those of a live instance.
 * - Every MAINTENANCE_S the events of background streams that ended more
 *   than [responses] event_retention ago are dropped, in one write job.
 */

#define CANCEL_POLL_MS 500
#define MAINTENANCE_S  60

struct _ConfabBackground {
	GObject parent_instance;
	ConfabStore *store; /* owned */
	gboolean shared;    /* PostgreSQL: other instances share the store */
	guint retention;    /* seconds */
	/* @running and @poll_source are under @lock: turns start and end on
	 * the serving threads, the poll runs on the main context */
	GMutex lock;
	GHashTable *running;	  /* owned: response id -> ConfabTurn */
	guint poll_source;	  /* while @running is not empty */
	guint maintenance_source; /* always */
	gboolean polling;	  /* a poll's reads are out */
	guint reads_out;
};

G_DEFINE_FINAL_TYPE(ConfabBackground, confab_background, G_TYPE_OBJECT)

/**
 * confab_background_orphan_error:
 *
 * Returns: (transfer full): the error a response nobody runs any more ends
 *   with, `{"code","message"}` JSON
 */
gchar *
confab_background_orphan_error(void)
{
	return g_strdup("{\"code\":\"server_error\",\"message\":\"The server stopped while "
			"this response ran; it did not finish\"}");
}

static void
maintained_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	gboolean ok =
	    user_data != NULL
		? confab_store_fail_orphan_responses_finish(CONFAB_STORE(source), result, &error)
		: confab_store_drop_response_events_finish(CONFAB_STORE(source), result, &error);
	if (!ok && !g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
		g_warning("background responses' upkeep: %s", error->message);
}

static void
fail_orphans(ConfabBackground *self)
{
	g_autofree gchar *error = confab_background_orphan_error();

	confab_store_fail_orphan_responses_async(self->store,
						 error,
						 g_get_real_time() / G_USEC_PER_SEC,
						 NULL,
						 maintained_cb,
						 GINT_TO_POINTER(1));
}

static gboolean
maintain(gpointer user_data)
{
	ConfabBackground *self = user_data;

	if (self->shared)
		fail_orphans(self);
	confab_store_drop_response_events_async(self->store,
						g_get_real_time() / G_USEC_PER_SEC -
						    self->retention,
						NULL,
						maintained_cb,
						NULL);
	return G_SOURCE_CONTINUE;
}

static void
polled_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConfabBackground *self = user_data;
	g_autoptr(ConfabResponseRecord) record = NULL;
	g_autoptr(GError) error = NULL;

	record = confab_store_get_response_record_finish(CONFAB_STORE(source), result, &error);
	if (record != NULL && record->cancel_requested)
		confab_background_cancel(self, record->id);
	if (--self->reads_out == 0)
		self->polling = FALSE;
	g_object_unref(self);
}

/* Asked elsewhere to stop? One read per turn; the next poll waits for
 * them all. */
static gboolean
poll_cancels(gpointer user_data)
{
	ConfabBackground *self = user_data;
	g_autoptr(GPtrArray) ids = NULL;

	if (self->polling)
		return G_SOURCE_CONTINUE;
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
		GHashTableIter iter;
		gpointer id;

		ids = g_ptr_array_new_with_free_func(g_free);
		g_hash_table_iter_init(&iter, self->running);
		while (g_hash_table_iter_next(&iter, &id, NULL))
			g_ptr_array_add(ids, g_strdup(id));
	}
	for (guint i = 0; i < ids->len; i++) {
		self->polling = TRUE;
		self->reads_out++;
		confab_store_get_response_record_async(self->store,
						       g_ptr_array_index(ids, i),
						       NULL,
						       polled_cb,
						       g_object_ref(self));
	}
	return G_SOURCE_CONTINUE;
}

static void
confab_background_dispose(GObject *object)
{
	ConfabBackground *self = CONFAB_BACKGROUND(object);

	g_mutex_lock(&self->lock);
	g_clear_handle_id(&self->poll_source, g_source_remove);
	g_mutex_unlock(&self->lock);
	g_clear_handle_id(&self->maintenance_source, g_source_remove);
	G_OBJECT_CLASS(confab_background_parent_class)->dispose(object);
}

static void
confab_background_finalize(GObject *object)
{
	ConfabBackground *self = CONFAB_BACKGROUND(object);

	g_clear_pointer(&self->running, g_hash_table_unref);
	g_mutex_clear(&self->lock);
	g_clear_object(&self->store);
	G_OBJECT_CLASS(confab_background_parent_class)->finalize(object);
}

static void
confab_background_class_init(ConfabBackgroundClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->dispose = confab_background_dispose;
	object_class->finalize = confab_background_finalize;
}

static void
confab_background_init(ConfabBackground *self)
{
	g_mutex_init(&self->lock);
	self->running = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_object_unref);
}

/**
 * confab_background_new:
 * @store: the store
 * @config: the daemon's settings (`[store] backend`, `[responses]`)
 *
 * Fails the responses a previous confabd left running (see the top of
 * this file), then keeps the store tidy.
 *
 * Returns: (transfer full): the background responses of this instance
 */
ConfabBackground *
confab_background_new(ConfabStore *store, const ConfabConfig *config)
{
	ConfabBackground *self = g_object_new(CONFAB_TYPE_BACKGROUND, NULL);

	self->store = g_object_ref(store);
	self->shared = g_strcmp0(config->store_backend, "postgresql") == 0;
	self->retention = config->responses_event_retention;
	fail_orphans(self);
	self->maintenance_source = g_timeout_add_seconds(
	    self->shared ? MIN(MAINTENANCE_S, config->store_instance_lease) : MAINTENANCE_S,
	    maintain,
	    self);
	return self;
}

/**
 * confab_background_add:
 * @self: a #ConfabBackground
 * @response_id: a background response
 * @turn: its turn, running here
 */
void
confab_background_add(ConfabBackground *self, const gchar *response_id, ConfabTurn *turn)
{
	g_autoptr(GMutexLocker) locker = NULL;

	g_return_if_fail(CONFAB_IS_BACKGROUND(self));
	locker = g_mutex_locker_new(&self->lock);
	g_hash_table_replace(self->running, g_strdup(response_id), g_object_ref(turn));
	/* on the main context (the default), whichever thread adds */
	if (self->poll_source == 0)
		self->poll_source = g_timeout_add(CANCEL_POLL_MS, poll_cancels, self);
}

/**
 * confab_background_remove:
 * @self: a #ConfabBackground
 * @response_id: a background response whose turn has ended
 */
void
confab_background_remove(ConfabBackground *self, const gchar *response_id)
{
	g_autoptr(ConfabTurn) turn = NULL;
	g_autofree gchar *key = NULL;
	g_autoptr(GMutexLocker) locker = NULL;

	g_return_if_fail(CONFAB_IS_BACKGROUND(self));
	locker = g_mutex_locker_new(&self->lock);
	/* the turn's last reference is dropped after the lock */
	if (!g_hash_table_steal_extended(self->running,
					 response_id,
					 (gpointer *)&key,
					 (gpointer *)&turn))
		return;
	if (g_hash_table_size(self->running) == 0)
		g_clear_handle_id(&self->poll_source, g_source_remove);
}

/**
 * confab_background_cancel:
 * @self: a #ConfabBackground
 * @response_id: a background response
 *
 * Stops its turn, if it runs here: the upstream call and the tools are
 * cancelled and the text so far is stored.
 *
 * Returns: whether it ran here
 */
gboolean
confab_background_cancel(ConfabBackground *self, const gchar *response_id)
{
	g_autoptr(ConfabTurn) turn = NULL;

	g_return_val_if_fail(CONFAB_IS_BACKGROUND(self), FALSE);
	g_mutex_lock(&self->lock);
	turn = g_hash_table_lookup(self->running, response_id);
	if (turn != NULL)
		g_object_ref(turn);
	g_mutex_unlock(&self->lock);
	if (turn == NULL)
		return FALSE;
	confab_turn_cancel(turn);
	return TRUE;
}

/**
 * confab_background_get_running:
 * @self: a #ConfabBackground
 *
 * Returns: how many background responses run here now
 */
guint
confab_background_get_running(ConfabBackground *self)
{
	g_autoptr(GMutexLocker) locker = NULL;

	g_return_val_if_fail(CONFAB_IS_BACKGROUND(self), 0);
	locker = g_mutex_locker_new(&self->lock);
	return g_hash_table_size(self->running);
}
