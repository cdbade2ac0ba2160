/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabFlow"

#include "config.h"

#include "util/confab-flow.h"

/*
 * A flow is open or held. Whoever produces a stream asks before each piece
 * of work that would make more of it (reading the upstream, calling the
 * model or a tool): held, it waits with confab_flow_wait() and goes on when
 * its function is called. Waiters are never called from inside
 * confab_flow_set_held() — the door opens the flow while it writes to its
 * socket, and the producer would write again from there — but from an idle
 * source on the flow's context.
 *
 * A closed flow (the stream is over, or its client gone) is open for good.
 */

typedef struct {
	ConfabFlow *flow; /* unowned: the flow owns its waiters */
	guint id;
	ConfabFlowFunc func;
	gpointer user_data;
	GCancellable *cancellable; /* owned, nullable */
	gulong cancelled_id;
	gboolean cancelled;
} Waiter;

struct _ConfabFlow {
	gatomicrefcount ref;
	GMainContext *context; /* owned */
	gboolean held;
	gboolean closed;
	guint holds;
	gint64 held_since;
	gint64 held_us;
	GQueue waiters; /* Waiter */
	guint next_id;
	GSource *dispatch; /* owned */
};

static void
waiter_free(Waiter *waiter)
{
	if (waiter->cancelled_id != 0)
		g_signal_handler_disconnect(waiter->cancellable, waiter->cancelled_id);
	g_clear_object(&waiter->cancellable);
	g_free(waiter);
}

/**
 * confab_flow_new:
 *
 * Returns: (transfer full): an open flow whose waiters are called on the
 *   caller's thread-default main context
 */
ConfabFlow *
confab_flow_new(void)
{
	ConfabFlow *self = g_new0(ConfabFlow, 1);

	g_atomic_ref_count_init(&self->ref);
	self->context = g_main_context_ref_thread_default();
	self->next_id = 1;
	return self;
}

/**
 * confab_flow_ref:
 *
 * Returns: (transfer full): @self
 */
ConfabFlow *
confab_flow_ref(ConfabFlow *self)
{
	g_atomic_ref_count_inc(&self->ref);
	return self;
}

void
confab_flow_unref(ConfabFlow *self)
{
	if (self == NULL || !g_atomic_ref_count_dec(&self->ref))
		return;
	/* every waiter holds no reference: a flow dropped with waiters means
	 * that their owners are gone too */
	g_queue_clear_full(&self->waiters, (GDestroyNotify)waiter_free);
	if (self->dispatch != NULL) {
		g_source_destroy(self->dispatch);
		g_source_unref(self->dispatch);
	}
	g_main_context_unref(self->context);
	g_free(self);
}

static gboolean
waiter_ready(ConfabFlow *self, Waiter *waiter)
{
	return !self->held || waiter->cancelled;
}

static gboolean
on_dispatch(gpointer user_data)
{
	ConfabFlow *self = user_data;
	g_autoptr(GPtrArray) ready = g_ptr_array_new_with_free_func((GDestroyNotify)waiter_free);

	g_clear_pointer(&self->dispatch, g_source_unref);
	for (GList *l = self->waiters.head; l != NULL;) {
		GList *next = l->next;
		if (waiter_ready(self, l->data)) {
			g_ptr_array_add(ready, l->data);
			g_queue_delete_link(&self->waiters, l);
		}
		l = next;
	}
	/* a function may free the flow's last other owner: keep it while
	 * they run */
	confab_flow_ref(self);
	for (guint i = 0; i < ready->len; i++) {
		Waiter *waiter = g_ptr_array_index(ready, i);
		waiter->func(waiter->user_data);
	}
	confab_flow_unref(self);
	return G_SOURCE_REMOVE;
}

static void
schedule_dispatch(ConfabFlow *self)
{
	if (self->dispatch != NULL || self->waiters.length == 0)
		return;
	self->dispatch = g_idle_source_new();
	g_source_set_priority(self->dispatch, G_PRIORITY_DEFAULT);
	g_source_set_callback(self->dispatch, on_dispatch, self, NULL);
	g_source_set_static_name(self->dispatch, "[confab] flow opens");
	g_source_attach(self->dispatch, self->context);
}

/**
 * confab_flow_set_held:
 * @self: a #ConfabFlow
 * @held: whether the reader is behind
 *
 * For the door: holds the flow while its client is behind, opens it once
 * the client has caught up. A closed flow stays open.
 */
void
confab_flow_set_held(ConfabFlow *self, gboolean held)
{
	gint64 now;

	if (self->closed || held == self->held)
		return;
	now = g_get_monotonic_time();
	self->held = held;
	if (held) {
		self->holds++;
		self->held_since = now;
		return;
	}
	self->held_us += now - self->held_since;
	schedule_dispatch(self);
}

/**
 * confab_flow_is_held:
 * @self: (nullable): a #ConfabFlow
 *
 * Returns: whether a producer should wait before it makes more; %FALSE for
 *   no flow at all (nothing to hold back: a JSON answer, a D-Bus reply)
 */
gboolean
confab_flow_is_held(ConfabFlow *self)
{
	return self != NULL && self->held;
}

/**
 * confab_flow_close:
 * @self: a #ConfabFlow
 *
 * The stream is over or its reader gone: the flow opens for good, and every
 * waiter is called.
 */
void
confab_flow_close(ConfabFlow *self)
{
	confab_flow_set_held(self, FALSE);
	self->closed = TRUE;
	schedule_dispatch(self);
}

/**
 * confab_flow_get_holds:
 * @self: a #ConfabFlow
 *
 * Returns: how many times the flow was held
 */
guint
confab_flow_get_holds(ConfabFlow *self)
{
	return self->holds;
}

/**
 * confab_flow_get_held_us:
 * @self: a #ConfabFlow
 *
 * Returns: how long the flow has been held, in all, in microseconds
 */
gint64
confab_flow_get_held_us(ConfabFlow *self)
{
	return self->held_us + (self->held ? g_get_monotonic_time() - self->held_since : 0);
}

static void
on_cancelled(GCancellable *cancellable, gpointer user_data)
{
	Waiter *waiter = user_data;

	/* no disconnecting inside the signal: the dispatch does it */
	waiter->cancelled = TRUE;
	schedule_dispatch(waiter->flow);
}

/**
 * confab_flow_wait:
 * @self: a #ConfabFlow
 * @cancellable: (nullable): ends the wait early
 * @func: called once the flow is open, or @cancellable cancelled
 * @user_data: data for @func
 *
 * Waits for the flow to open; @func is always called from an idle source of
 * the flow's context, never from here, unless the wait is cancelled first
 * with confab_flow_cancel_wait(). @cancellable must be cancelled on the
 * flow's thread.
 *
 * Returns: the wait's id, for confab_flow_cancel_wait()
 */
guint
confab_flow_wait(ConfabFlow *self,
		 GCancellable *cancellable,
		 ConfabFlowFunc func,
		 gpointer user_data)
{
	Waiter *waiter = g_new0(Waiter, 1);

	waiter->flow = self;
	waiter->id = self->next_id++;
	if (self->next_id == 0)
		self->next_id = 1;
	waiter->func = func;
	waiter->user_data = user_data;
	if (cancellable != NULL) {
		waiter->cancellable = g_object_ref(cancellable);
		waiter->cancelled = g_cancellable_is_cancelled(cancellable);
		if (!waiter->cancelled)
			waiter->cancelled_id = g_signal_connect(cancellable,
								"cancelled",
								G_CALLBACK(on_cancelled),
								waiter);
	}
	g_queue_push_tail(&self->waiters, waiter);
	if (waiter_ready(self, waiter))
		schedule_dispatch(self);
	return waiter->id;
}

/**
 * confab_flow_cancel_wait:
 * @self: a #ConfabFlow
 * @id: a wait's id, or 0
 *
 * Forgets a wait whose function has not run: it never will.
 */
void
confab_flow_cancel_wait(ConfabFlow *self, guint id)
{
	if (id == 0)
		return;
	for (GList *l = self->waiters.head; l != NULL; l = l->next) {
		Waiter *waiter = l->data;
		if (waiter->id == id) {
			g_queue_delete_link(&self->waiters, l);
			waiter_free(waiter);
			return;
		}
	}
}

/**
 * confab_flow_clear_wait:
 * @self: (nullable): a #ConfabFlow
 * @id: where a wait's id is kept; set to 0
 *
 * confab_flow_cancel_wait() for an id kept in a variable.
 */
void
confab_flow_clear_wait(ConfabFlow *self, guint *id)
{
	if (self != NULL)
		confab_flow_cancel_wait(self, *id);
	*id = 0;
}
