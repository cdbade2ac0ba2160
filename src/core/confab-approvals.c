/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabApprovals"

#include "config.h"

#include "core/confab-approvals.h"
#include "util/confab-error.h"
#include "util/confab-source.h"

/*
 * Approvals: a tool call that a person must allow before it runs.
 *
 * The record is the store's (confab_store_save_approval_async()), so that
 * any instance sharing the database can decide it; a decision is one
 * conditional write that wins only over a pending row, so of two decisions
 * (or a decision and the timeout) exactly one counts.
 *
 * A decision is taken only while a live turn waits for it, so that none is
 * accepted for a call nobody will run: the store knows which instance
 * waits and whether it lives (SQLite: the one process, which times out
 * what a dead one left at start; PostgreSQL: the instance's lease), and a
 * decision past the timeout finds the approval timed out here.
 *
 * Two ways to use it, for two kinds of doors:
 * - wait in place (Chat Completions, D-Bus): create, then wait. The waiter
 *   reads its row every CONFAB_APPROVALS_POLL_MS (a decision made on
 *   another instance arrives so), is woken at once by a decision made in
 *   this process, and decides "timed out" itself when the timeout passes.
 * - end the turn and continue later (the Responses API): create only, with
 *   the response that asks (@response_id); its continuation decides
 *   (confab_approvals_answer_async()) and runs the call or not; or an
 *   mcp_approval_response item added to its conversation decides it the
 *   same way, and the conversation's next response runs the call or not.
 *   Nothing else decides such a request, and it does not time out: nobody
 *   waits.
 *
 * Waiters live on the context of the thread that waits (a serving thread,
 * or the main context); a decision made on another thread wakes them with
 * an idle source on their own context. The table of waiters is under a
 * lock; everything else of a waiter is its own thread's.
 */

struct _ConfabApprovals {
	GObject parent_instance;
	ConfabStore *store;	/* owned */
	ConfabIdGenerator *ids; /* owned */
	ConfabMetrics *metrics; /* owned, nullable */
	guint timeout;		/* seconds */

	GMutex lock;
	GHashTable *waiters; /* owned: id -> Waiter (unowned: its task owns it) */
	gchar *expired;	     /* owned, nullable: expire_all()'s reason; later waits end at once */
};

G_DEFINE_FINAL_TYPE(ConfabApprovals, confab_approvals, G_TYPE_OBJECT)

static void
confab_approvals_finalize(GObject *object)
{
	ConfabApprovals *self = CONFAB_APPROVALS(object);

	g_clear_object(&self->store);
	g_clear_object(&self->ids);
	g_clear_object(&self->metrics);
	g_hash_table_unref(self->waiters);
	g_free(self->expired);
	g_mutex_clear(&self->lock);
	G_OBJECT_CLASS(confab_approvals_parent_class)->finalize(object);
}

static void
confab_approvals_class_init(ConfabApprovalsClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = confab_approvals_finalize;
}

static void
confab_approvals_init(ConfabApprovals *self)
{
	g_mutex_init(&self->lock);
	self->waiters = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

/**
 * confab_approvals_new:
 * @store: where approvals are kept
 * @ids: the id generator (`mcpr_` ids)
 * @metrics: (nullable): where decisions are counted
 *   (`confab_tool_approvals_total{decision}`)
 * @timeout_seconds: how long a waiting turn waits (`[tools]
 *   approval_timeout`)
 *
 * Returns: (transfer full): the approvals of this daemon
 */
ConfabApprovals *
confab_approvals_new(ConfabStore *store,
		     ConfabIdGenerator *ids,
		     ConfabMetrics *metrics,
		     guint timeout_seconds)
{
	ConfabApprovals *self = g_object_new(CONFAB_TYPE_APPROVALS, NULL);

	self->store = g_object_ref(store);
	self->ids = g_object_ref(ids);
	self->metrics = metrics != NULL ? g_object_ref(metrics) : NULL;
	self->timeout = MAX(timeout_seconds, 1);
	return self;
}

guint
confab_approvals_get_timeout(ConfabApprovals *self)
{
	g_return_val_if_fail(CONFAB_IS_APPROVALS(self), 0);
	return self->timeout;
}

/* ---------- create ---------- */

static void
created_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	GError *error = NULL;

	if (!confab_store_save_approval_finish(CONFAB_STORE(source), result, &error)) {
		g_task_return_error(task, error);
		return;
	}
	g_task_return_pointer(task,
			      confab_approval_copy(g_task_get_task_data(task)),
			      (GDestroyNotify)confab_approval_free);
}

/**
 * confab_approvals_create_async:
 * @self: a #ConfabApprovals
 * @request: the call: @owner, @agent_id, @session_id, @server, @tool,
 *   @name, @arguments, @tool_call_id (the rest is set here)
 * @callback: called once the pending approval is stored
 * @user_data: data for @callback
 *
 * Stores a new pending approval with an `mcpr_` id.
 */
void
confab_approvals_create_async(ConfabApprovals *self,
			      const ConfabApproval *request,
			      GAsyncReadyCallback callback,
			      gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, NULL, callback, user_data);
	ConfabApproval *approval = confab_approval_copy(request);

	g_return_if_fail(CONFAB_IS_APPROVALS(self));
	g_task_set_source_tag(task, confab_approvals_create_async);
	g_free(approval->id);
	approval->id = confab_id_generator_next(self->ids, CONFAB_PREFIX_APPROVAL);
	approval->state = CONFAB_APPROVAL_STATE_PENDING;
	g_clear_pointer(&approval->decided_by, g_free);
	g_clear_pointer(&approval->reason, g_free);
	approval->created_at = g_get_real_time() / G_USEC_PER_SEC;
	approval->decided_at = 0;
	g_task_set_task_data(task, approval, (GDestroyNotify)confab_approval_free);
	confab_store_save_approval_async(self->store,
					 approval,
					 NULL,
					 created_cb,
					 g_steal_pointer(&task));
}

/**
 * confab_approvals_create_finish:
 *
 * Returns: (transfer full): the approval as stored, pending
 */
ConfabApproval *
confab_approvals_create_finish(ConfabApprovals *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* ---------- wait ---------- */

typedef struct {
	ConfabApprovals *self;	  /* unowned: the task holds it */
	GTask *task;		  /* unowned: owns this */
	ConfabApproval *approval; /* owned */
	GSource *poll;		  /* owned */
	GSource *timeout;	  /* owned */
	GMainContext *context;	  /* owned */
	gboolean reading;	  /* a poll's read is in flight */
	gboolean expiring;	  /* the timeout's decision is in flight */
	gboolean done;
} Waiter;

static void
waiter_free(Waiter *waiter)
{
	confab_source_clear(&waiter->poll);
	confab_source_clear(&waiter->timeout);
	confab_approval_free(waiter->approval);
	g_main_context_unref(waiter->context);
	g_free(waiter);
}

static const gchar *
decision_label(ConfabApprovalState state)
{
	return state == CONFAB_APPROVAL_STATE_APPROVED ? "approved"
	       : state == CONFAB_APPROVAL_STATE_DENIED ? "denied"
						       : "timed_out";
}

/* The waiter's thread: the decision is known; the wait ends. */
static void
waiter_resolve(Waiter *waiter, const ConfabApproval *decided)
{
	ConfabApprovals *self = waiter->self;
	GTask *task = waiter->task;

	if (waiter->done)
		return;
	waiter->done = TRUE;
	confab_source_clear(&waiter->poll);
	confab_source_clear(&waiter->timeout);
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
		if (g_hash_table_lookup(self->waiters, waiter->approval->id) == waiter)
			g_hash_table_remove(self->waiters, waiter->approval->id);
	}
	confab_metrics_add(self->metrics,
			   CONFAB_METRIC_TOOL_APPROVALS,
			   1,
			   decision_label(decided->state));
	g_task_return_pointer(task,
			      confab_approval_copy(decided),
			      (GDestroyNotify)confab_approval_free);
	g_object_unref(task); /* the wait's own reference */
}

static void
expire_read_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Waiter *waiter = user_data;
	g_autoptr(ConfabApproval) now = NULL;
	g_autoptr(GError) error = NULL;

	GTask *task = waiter->task; /* the expiry's reference */

	now = confab_store_get_approval_finish(CONFAB_STORE(source), result, &error);
	waiter->expiring = FALSE;
	if (now != NULL && now->state != CONFAB_APPROVAL_STATE_PENDING) {
		waiter_resolve(waiter, now);
	} else {
		/* the store cannot say: the call does not run */
		g_autoptr(ConfabApproval) declined = confab_approval_copy(waiter->approval);
		declined->state = CONFAB_APPROVAL_STATE_TIMED_OUT;
		declined->decided_by = g_strdup("timeout");
		declined->reason = g_strdup(error != NULL ? error->message : "not decided");
		waiter_resolve(waiter, declined);
	}
	g_object_unref(task);
}

static void
expire_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Waiter *waiter = user_data;
	g_autoptr(ConfabApproval) decided = NULL;
	g_autoptr(GError) error = NULL;

	decided = confab_store_decide_approval_finish(CONFAB_STORE(source), result, &error);
	if (decided != NULL) {
		GTask *task = waiter->task; /* the expiry's reference */
		waiter->expiring = FALSE;
		waiter_resolve(waiter, decided);
		g_object_unref(task);
		return;
	}
	/* somebody decided first (or the store failed): what stands counts */
	g_debug("timing out %s: %s", waiter->approval->id, error->message);
	confab_store_get_approval_async(waiter->self->store,
					waiter->approval->id,
					NULL,
					expire_read_cb,
					waiter);
}

static void
waiter_expire(Waiter *waiter, const gchar *reason)
{
	g_autoptr(ConfabApproval) decision = NULL;

	if (waiter->done || waiter->expiring)
		return;
	waiter->expiring = TRUE;
	g_object_ref(waiter->task); /* until the expiry is over */
	confab_source_clear(&waiter->timeout);
	decision = confab_approval_new();
	decision->id = g_strdup(waiter->approval->id);
	decision->state = CONFAB_APPROVAL_STATE_TIMED_OUT;
	decision->decided_by = g_strdup("timeout");
	decision->reason = g_strdup(reason);
	decision->decided_at = g_get_real_time() / G_USEC_PER_SEC;
	confab_store_decide_approval_async(waiter->self->store, decision, NULL, expire_cb, waiter);
}

static gboolean
on_wait_timeout(gpointer user_data)
{
	Waiter *waiter = user_data;
	g_autofree gchar *reason =
	    g_strdup_printf("Nobody decided within %u s", waiter->self->timeout);

	g_clear_pointer(&waiter->timeout, g_source_unref);
	waiter_expire(waiter, reason);
	return G_SOURCE_REMOVE;
}

static void
poll_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Waiter *waiter = user_data;
	g_autoptr(ConfabApproval) now = NULL;
	g_autoptr(GError) error = NULL;

	GTask *task = waiter->task; /* this read's reference */

	now = confab_store_get_approval_finish(CONFAB_STORE(source), result, &error);
	waiter->reading = FALSE;
	if (now != NULL && now->state != CONFAB_APPROVAL_STATE_PENDING && !waiter->expiring)
		waiter_resolve(waiter, now);
	else if (now == NULL)
		g_debug("reading %s: %s", waiter->approval->id, error->message);
	/* last: the waiter may go with it */
	g_object_unref(task);
}

static gboolean
on_poll(gpointer user_data)
{
	Waiter *waiter = user_data;

	if (waiter->reading || waiter->expiring || waiter->done)
		return G_SOURCE_CONTINUE;
	waiter->reading = TRUE;
	g_object_ref(waiter->task); /* until poll_cb */
	confab_store_get_approval_async(waiter->self->store,
					waiter->approval->id,
					NULL,
					poll_cb,
					waiter);
	return G_SOURCE_CONTINUE;
}

static void
wake_waiter(ConfabApprovals *self, const ConfabApproval *decided, const gchar *expire_reason);

/**
 * confab_approvals_wait_async:
 * @self: a #ConfabApprovals
 * @approval: a pending approval, as created
 * @callback: called once it is decided, or has timed out
 * @user_data: data for @callback
 *
 * Waits, in the thread-default context, for a person's decision (made on
 * any instance), or decides "timed out" after the timeout. Not
 * cancellable: a turn whose client left still applies the decision;
 * confab_approvals_expire_all() ends every wait at shutdown.
 */
void
confab_approvals_wait_async(ConfabApprovals *self,
			    const ConfabApproval *approval,
			    GAsyncReadyCallback callback,
			    gpointer user_data)
{
	GTask *task = g_task_new(self, NULL, callback, user_data);
	Waiter *waiter = g_new0(Waiter, 1);
	g_autofree gchar *expired = NULL;

	g_return_if_fail(CONFAB_IS_APPROVALS(self));
	g_task_set_source_tag(task, confab_approvals_wait_async);
	waiter->self = self;
	waiter->task = task; /* this reference is the wait's, until resolved */
	waiter->approval = confab_approval_copy(approval);
	waiter->context = g_main_context_ref_thread_default();
	g_task_set_task_data(task, waiter, (GDestroyNotify)waiter_free);
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
		g_hash_table_insert(self->waiters, g_strdup(approval->id), waiter);
		expired = g_strdup(self->expired);
	}
	waiter->poll = confab_source_add_timeout(CONFAB_APPROVALS_POLL_MS, on_poll, waiter);
	waiter->timeout = confab_source_add_timeout(self->timeout * 1000, on_wait_timeout, waiter);
	/* asked while the daemon stops: it ends at once, as the others did */
	if (expired != NULL)
		wake_waiter(self, approval, expired);
}

/**
 * confab_approvals_wait_finish:
 *
 * Returns: (transfer full): the approval as decided: approved, denied or
 *   timed out
 */
ConfabApproval *
confab_approvals_wait_finish(ConfabApprovals *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* A decision made in this process: the waiter (if it waits here) hears it
 * now, on its own context, rather than at its next read. */
typedef struct {
	ConfabApprovals *self;	 /* owned */
	ConfabApproval *decided; /* owned */
	gchar *expire_reason;	 /* owned, nullable: expire rather than resolve */
} Wake;

static void
wake_free(Wake *wake)
{
	g_object_unref(wake->self);
	confab_approval_free(wake->decided);
	g_free(wake->expire_reason);
	g_free(wake);
}

static gboolean
on_wake(gpointer user_data)
{
	Wake *wake = user_data;
	Waiter *waiter;

	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&wake->self->lock);
		waiter = g_hash_table_lookup(wake->self->waiters, wake->decided->id);
	}
	/* a waiter leaves the table only on its own context: this one */
	if (waiter == NULL)
		return G_SOURCE_REMOVE;
	if (wake->expire_reason != NULL)
		waiter_expire(waiter, wake->expire_reason);
	else if (!waiter->expiring)
		waiter_resolve(waiter, wake->decided);
	return G_SOURCE_REMOVE;
}

static void
wake_waiter(ConfabApprovals *self, const ConfabApproval *decided, const gchar *expire_reason)
{
	g_autoptr(GMainContext) context = NULL;
	g_autoptr(GSource) source = NULL;
	Wake *wake;

	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
		Waiter *waiter = g_hash_table_lookup(self->waiters, decided->id);
		if (waiter == NULL)
			return;
		context = g_main_context_ref(waiter->context);
	}
	wake = g_new0(Wake, 1);
	wake->self = g_object_ref(self);
	wake->decided = confab_approval_copy(decided);
	wake->expire_reason = g_strdup(expire_reason);
	source = g_idle_source_new();
	g_source_set_priority(source, G_PRIORITY_DEFAULT);
	g_source_set_callback(source, on_wake, wake, (GDestroyNotify)wake_free);
	g_source_set_static_name(source, "[confab] approval decided");
	g_source_attach(source, context);
}

/* ---------- decide ---------- */

typedef struct {
	gchar *id;
	gchar *owner;	    /* nullable: an administrator */
	gchar *agent_id;    /* nullable: a token bound to an agent */
	gchar *response_id; /* nullable: the response a continuation continues */
	gboolean approve;
	gchar *reason;
	gchar *by;
} Decision;

static void
decision_free(Decision *d)
{
	g_free(d->id);
	g_free(d->owner);
	g_free(d->agent_id);
	g_free(d->response_id);
	g_free(d->reason);
	g_free(d->by);
	g_free(d);
}

static GError *
not_found(const gchar *id)
{
	return g_error_new(CONFAB_ERROR, CONFAB_ERROR_APPROVAL_NOT_FOUND, "No approval '%s'", id);
}

static void
decided_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabApprovals *self = g_task_get_source_object(task);
	g_autoptr(ConfabApproval) decided = NULL;
	GError *error = NULL;

	decided = confab_store_decide_approval_finish(CONFAB_STORE(source), result, &error);
	if (decided == NULL) {
		g_task_return_error(task, error);
		return;
	}
	/* a waiting turn counts its decision when it hears it; nobody waits
	 * for a response's request */
	if (decided->response_id != NULL)
		confab_metrics_add(self->metrics,
				   CONFAB_METRIC_TOOL_APPROVALS,
				   1,
				   decision_label(decided->state));
	else
		wake_waiter(self, decided, NULL);
	g_task_return_pointer(task,
			      g_steal_pointer(&decided),
			      (GDestroyNotify)confab_approval_free);
}

static void
stale_expired_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	Decision *d = g_task_get_task_data(task);
	g_autoptr(ConfabApproval) expired = NULL;
	g_autoptr(GError) error = NULL;

	expired = confab_store_decide_approval_finish(CONFAB_STORE(source), result, &error);
	if (expired == NULL &&
	    !g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_APPROVAL_DECIDED)) {
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	g_task_return_new_error(task,
				CONFAB_ERROR,
				CONFAB_ERROR_APPROVAL_DECIDED,
				"The approval '%s' is no longer pending: it timed out",
				d->id);
}

static void
decide_read_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	Decision *d = g_task_get_task_data(task);
	g_autoptr(ConfabApproval) now = NULL;
	g_autoptr(ConfabApproval) decision = NULL;
	GError *error = NULL;

	now = confab_store_get_approval_finish(CONFAB_STORE(source), result, &error);
	if (now == NULL) {
		g_task_return_error(task, error);
		return;
	}
	/* another owner's approval does not exist, as far as this caller
	 * can tell */
	if ((d->owner != NULL && g_strcmp0(d->owner, now->owner) != 0) ||
	    (d->agent_id != NULL && g_strcmp0(d->agent_id, now->agent_id) != 0)) {
		g_task_return_error(task, not_found(d->id));
		return;
	}
	/* a response's request is answered by continuing that response; a
	 * continuation answers only its own response's requests */
	if (d->response_id != NULL && g_strcmp0(d->response_id, now->response_id) != 0) {
		g_task_return_error(task, not_found(d->id));
		return;
	}
	if (d->response_id == NULL && now->response_id != NULL) {
		g_task_return_new_error(task,
					CONFAB_ERROR,
					CONFAB_ERROR_APPROVAL_ASKED_BY_RESPONSE,
					"The approval '%s' was asked by the response '%s': it is "
					"answered by an mcp_approval_response item in a response "
					"that continues it (previous_response_id)",
					d->id,
					now->response_id);
		return;
	}
	if (now->state != CONFAB_APPROVAL_STATE_PENDING) {
		g_task_return_new_error(task,
					CONFAB_ERROR,
					CONFAB_ERROR_APPROVAL_DECIDED,
					"The approval '%s' is no longer pending: it was %s",
					d->id,
					now->state == CONFAB_APPROVAL_STATE_TIMED_OUT  ? "timed out"
					: now->state == CONFAB_APPROVAL_STATE_APPROVED ? "approved"
										       : "denied");
		return;
	}
	decision = confab_approval_new();
	decision->id = g_strdup(d->id);
	/* Past its timeout, no turn waits for it: its own turn has timed it
	 * out, or is about to, or is gone with its confabd (whose lease may
	 * not have run out yet: the store cannot tell). Nobody waits for a
	 * response's request: it has no timeout. */
	if (now->response_id == NULL &&
	    g_get_real_time() / G_USEC_PER_SEC >
		now->created_at +
		    (gint64)CONFAB_APPROVALS(g_task_get_source_object(task))->timeout) {
		decision->state = CONFAB_APPROVAL_STATE_TIMED_OUT;
		decision->decided_by = g_strdup("timeout");
		decision->reason = g_strdup("Nobody waited for it any more");
		decision->decided_at = g_get_real_time() / G_USEC_PER_SEC;
		confab_store_decide_approval_async(CONFAB_STORE(source),
						   decision,
						   NULL,
						   stale_expired_cb,
						   g_steal_pointer(&task));
		return;
	}
	decision->state = d->approve ? CONFAB_APPROVAL_STATE_APPROVED
				     : CONFAB_APPROVAL_STATE_DENIED;
	decision->decided_by = g_strdup(d->by);
	decision->reason = g_strdup(d->reason);
	decision->decided_at = g_get_real_time() / G_USEC_PER_SEC;
	confab_store_decide_approval_async(CONFAB_STORE(source),
					   decision,
					   NULL,
					   decided_cb,
					   g_steal_pointer(&task));
}

static void
decide_start(ConfabApprovals *self, Decision *d, GAsyncReadyCallback callback, gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, NULL, callback, user_data);

	g_task_set_source_tag(task, confab_approvals_decide_async);
	g_task_set_task_data(task, d, (GDestroyNotify)decision_free);
	if (!confab_id_is_valid(d->id, CONFAB_PREFIX_APPROVAL)) {
		g_task_return_error(task, not_found(d->id));
		return;
	}
	confab_store_get_approval_async(self->store,
					d->id,
					NULL,
					decide_read_cb,
					g_steal_pointer(&task));
}

/**
 * confab_approvals_decide_async:
 * @self: a #ConfabApprovals
 * @approval_id: the approval
 * @owner: (nullable): the caller's owner name; %NULL for an administrator,
 *   who may decide anyone's
 * @agent_id: (nullable): the agent the caller's token is bound to, if any
 * @approve: whether the call may run
 * @reason: (nullable): what the person says
 * @by: "api", "dbus" or "desktop"
 * @callback: called once the decision is stored, or refused
 * @user_data: data for @callback
 *
 * Decides a pending approval; the turn that waits for it (on this
 * instance or another) goes on. A decision counts only while a live turn
 * waits: within the timeout, and (the store sees to it) while the instance
 * whose turn waits lives; otherwise the approval times out, and the
 * decision is refused as one made too late. Refused with
 * CONFAB_ERROR_APPROVAL_NOT_FOUND
 * for an id that does not exist or is another owner's,
 * CONFAB_ERROR_APPROVAL_DECIDED for one decided (or timed out) already, and
 * CONFAB_ERROR_APPROVAL_ASKED_BY_RESPONSE for one a response asked
 * (confab_approvals_answer_async() decides those).
 */
void
confab_approvals_decide_async(ConfabApprovals *self,
			      const gchar *approval_id,
			      const gchar *owner,
			      const gchar *agent_id,
			      gboolean approve,
			      const gchar *reason,
			      const gchar *by,
			      GAsyncReadyCallback callback,
			      gpointer user_data)
{
	Decision *d = g_new0(Decision, 1);

	g_return_if_fail(CONFAB_IS_APPROVALS(self));
	d->id = g_strdup(approval_id != NULL ? approval_id : "");
	d->owner = g_strdup(owner);
	d->agent_id = g_strdup(agent_id);
	d->approve = approve;
	d->reason = g_strdup(reason);
	d->by = g_strdup(by);
	decide_start(self, d, callback, user_data);
}

/**
 * confab_approvals_answer_async:
 * @self: a #ConfabApprovals
 * @approval_id: an approval a response asked (`mcpr_…`)
 * @owner: the caller's owner name
 * @response_id: the response the caller continues: the one that asked
 * @approve: whether the call may run
 * @reason: (nullable): what the person says
 * @callback: called once the decision is stored, or refused
 * @user_data: data for @callback
 *
 * Decides an approval that the Responses API's @response_id ended with, as
 * its continuation's `mcp_approval_response` item says (by "api"). Refused
 * as confab_approvals_decide_async() refuses, and with
 * CONFAB_ERROR_APPROVAL_NOT_FOUND for an approval @response_id did not ask.
 * Finished with confab_approvals_decide_finish().
 */
void
confab_approvals_answer_async(ConfabApprovals *self,
			      const gchar *approval_id,
			      const gchar *owner,
			      const gchar *response_id,
			      gboolean approve,
			      const gchar *reason,
			      GAsyncReadyCallback callback,
			      gpointer user_data)
{
	Decision *d = g_new0(Decision, 1);

	g_return_if_fail(CONFAB_IS_APPROVALS(self));
	g_return_if_fail(owner != NULL && response_id != NULL);
	d->id = g_strdup(approval_id != NULL ? approval_id : "");
	d->owner = g_strdup(owner);
	d->response_id = g_strdup(response_id);
	d->approve = approve;
	d->reason = g_strdup(reason);
	d->by = g_strdup("api");
	decide_start(self, d, callback, user_data);
}

/**
 * confab_approvals_decide_finish:
 *
 * Returns: (transfer full): the approval as decided
 */
ConfabApproval *
confab_approvals_decide_finish(ConfabApprovals *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * confab_approvals_expire_all:
 * @self: a #ConfabApprovals
 * @reason: why, for the record
 *
 * Times out every wait of this process now (the daemon stops): their calls
 * do not run, and their turns end. Waits that begin later (their approval
 * was being stored meanwhile) end at once too.
 */
void
confab_approvals_expire_all(ConfabApprovals *self, const gchar *reason)
{
	g_autoptr(GPtrArray) pending =
	    g_ptr_array_new_with_free_func((GDestroyNotify)confab_approval_free);

	g_return_if_fail(CONFAB_IS_APPROVALS(self));
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
		GHashTableIter iter;
		gpointer value;

		if (self->expired == NULL)
			self->expired = g_strdup(reason);
		g_hash_table_iter_init(&iter, self->waiters);
		while (g_hash_table_iter_next(&iter, NULL, &value))
			g_ptr_array_add(pending, confab_approval_copy(((Waiter *)value)->approval));
	}
	for (guint i = 0; i < pending->len; i++)
		wake_waiter(self, g_ptr_array_index(pending, i), reason);
}

/**
 * confab_approvals_get_n_waiting:
 *
 * Returns: how many turns of this process wait for a decision
 */
guint
confab_approvals_get_n_waiting(ConfabApprovals *self)
{
	g_autoptr(GMutexLocker) locker = NULL;

	g_return_val_if_fail(CONFAB_IS_APPROVALS(self), 0);
	locker = g_mutex_locker_new(&self->lock);
	return g_hash_table_size(self->waiters);
}
