/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabElicitations"

#include "config.h"

#include "core/confab-approvals.h"
#include "core/confab-elicitations.h"
#include "tools/mcp/confab-mcp-elicitation.h"
#include "util/confab-error.h"
#include "util/confab-json.h"
#include "util/confab-source.h"

/*
 * Elicitations: an MCP server's `elicitation/create` (form mode), asked
 * during a turn's tool call, put to the person whose turn it is, as an
 * approval is (confab-approvals.c, whose rules these follow).
 *
 * The record is the store's (`mcpe_…`), so that any instance sharing the
 * database can answer it; an answer is one conditional write of a pending
 * row (on PostgreSQL, only while the waiting instance's lease runs), so of
 * two answers, or an answer and the timeout, exactly one counts.
 *
 * The turn waits in place: it reads its row every
 * CONFAB_APPROVALS_POLL_MS (an answer made on another instance arrives
 * so), is woken at once by an answer made in this process, and stores
 * "timed_out" itself when the timeout passes (the server is then told
 * `cancel`). Waiters live on the context of the thread that waits; an
 * answer made on another thread wakes them with an idle source there.
 */

struct _ConfabElicitations {
	GObject parent_instance;
	ConfabStore *store;	/* owned */
	ConfabIdGenerator *ids; /* owned */
	guint timeout;		/* seconds */

	GMutex lock;
	GHashTable *waiters; /* owned: id -> Waiter (unowned: its task owns it) */
	gboolean expired;    /* expire_all() was called: later waits end at once */
};

G_DEFINE_FINAL_TYPE(ConfabElicitations, confab_elicitations, G_TYPE_OBJECT)

static void
confab_elicitations_finalize(GObject *object)
{
	ConfabElicitations *self = CONFAB_ELICITATIONS(object);

	g_clear_object(&self->store);
	g_clear_object(&self->ids);
	g_hash_table_unref(self->waiters);
	g_mutex_clear(&self->lock);
	G_OBJECT_CLASS(confab_elicitations_parent_class)->finalize(object);
}

static void
confab_elicitations_class_init(ConfabElicitationsClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = confab_elicitations_finalize;
}

static void
confab_elicitations_init(ConfabElicitations *self)
{
	g_mutex_init(&self->lock);
	self->waiters = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

/**
 * confab_elicitations_new:
 * @store: where requests are kept
 * @ids: the id generator (`mcpe_` ids)
 * @timeout_seconds: how long a turn waits for an answer (`[tools]
 *   approval_timeout`); then the server is answered `cancel`
 *
 * Returns: (transfer full): the elicitations of this daemon
 */
ConfabElicitations *
confab_elicitations_new(ConfabStore *store, ConfabIdGenerator *ids, guint timeout_seconds)
{
	ConfabElicitations *self = g_object_new(CONFAB_TYPE_ELICITATIONS, NULL);

	self->store = g_object_ref(store);
	self->ids = g_object_ref(ids);
	self->timeout = MAX(timeout_seconds, 1);
	return self;
}

/* ---------- create ---------- */

static void
created_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	GError *error = NULL;

	if (!confab_store_save_elicitation_finish(CONFAB_STORE(source), result, &error)) {
		g_task_return_error(task, error);
		return;
	}
	g_task_return_pointer(task,
			      confab_elicitation_request_copy(g_task_get_task_data(task)),
			      (GDestroyNotify)confab_elicitation_request_free);
}

/**
 * confab_elicitations_create_async:
 * @self: a #ConfabElicitations
 * @request: @owner, @agent_id, @session_id, @server, @message and @schema
 *   (the rest is set here)
 * @callback: called once the pending request is stored
 * @user_data: data for @callback
 *
 * Stores a new pending request with an `mcpe_` id.
 */
void
confab_elicitations_create_async(ConfabElicitations *self,
				 const ConfabElicitationRequest *request,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, NULL, callback, user_data);
	ConfabElicitationRequest *stored = confab_elicitation_request_copy(request);

	g_return_if_fail(CONFAB_IS_ELICITATIONS(self));
	g_task_set_source_tag(task, confab_elicitations_create_async);
	g_free(stored->id);
	stored->id = confab_id_generator_next(self->ids, CONFAB_PREFIX_ELICITATION);
	g_free(stored->state);
	stored->state = g_strdup(CONFAB_ELICITATION_PENDING);
	g_clear_pointer(&stored->content, g_free);
	g_clear_pointer(&stored->answered_by, g_free);
	stored->created_at = g_get_real_time() / G_USEC_PER_SEC;
	stored->answered_at = 0;
	g_task_set_task_data(task, stored, (GDestroyNotify)confab_elicitation_request_free);
	confab_store_save_elicitation_async(self->store,
					    stored,
					    NULL,
					    created_cb,
					    g_steal_pointer(&task));
}

/**
 * confab_elicitations_create_finish:
 *
 * Returns: (transfer full): the request as stored, pending
 */
ConfabElicitationRequest *
confab_elicitations_create_finish(ConfabElicitations *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* ---------- wait ---------- */

typedef struct {
	ConfabElicitations *self;	   /* unowned: the task holds it */
	GTask *task;			   /* unowned: owns this */
	ConfabElicitationRequest *request; /* owned */
	GSource *poll;			   /* owned */
	GSource *timeout;		   /* owned */
	GMainContext *context;		   /* owned */
	gboolean reading;
	gboolean expiring;
	gboolean done;
} Waiter;

static void
waiter_free(Waiter *waiter)
{
	confab_source_clear(&waiter->poll);
	confab_source_clear(&waiter->timeout);
	confab_elicitation_request_free(waiter->request);
	g_main_context_unref(waiter->context);
	g_free(waiter);
}

/* The waiter's thread: the answer is known; the wait ends. */
static void
waiter_resolve(Waiter *waiter, const ConfabElicitationRequest *answered)
{
	ConfabElicitations *self = waiter->self;

	if (waiter->done)
		return;
	waiter->done = TRUE;
	confab_source_clear(&waiter->poll);
	confab_source_clear(&waiter->timeout);
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
		if (g_hash_table_lookup(self->waiters, waiter->request->id) == waiter)
			g_hash_table_remove(self->waiters, waiter->request->id);
	}
	g_task_return_pointer(waiter->task,
			      confab_elicitation_request_copy(answered),
			      (GDestroyNotify)confab_elicitation_request_free);
	g_object_unref(waiter->task); /* the wait's own reference */
}

static void
expire_read_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Waiter *waiter = user_data;
	GTask *task = waiter->task; /* the expiry's reference */
	g_autoptr(ConfabElicitationRequest) now = NULL;

	now = confab_store_get_elicitation_finish(CONFAB_STORE(source), result, NULL);
	waiter->expiring = FALSE;
	if (now == NULL || g_strcmp0(now->state, CONFAB_ELICITATION_PENDING) == 0) {
		/* the store cannot say: the server is told cancel */
		g_clear_pointer(&now, confab_elicitation_request_free);
		now = confab_elicitation_request_copy(waiter->request);
		g_free(now->state);
		now->state = g_strdup(CONFAB_ELICITATION_TIMED_OUT);
	}
	waiter_resolve(waiter, now);
	g_object_unref(task);
}

static void
expire_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Waiter *waiter = user_data;
	g_autoptr(GError) error = NULL;

	if (!confab_store_answer_elicitation_finish(CONFAB_STORE(source), result, &error))
		g_debug("timing out %s: %s", waiter->request->id, error->message);
	/* what stands counts: the timeout, or an answer that came first */
	confab_store_get_elicitation_async(waiter->self->store,
					   waiter->request->id,
					   NULL,
					   expire_read_cb,
					   waiter);
}

static void
waiter_expire(Waiter *waiter)
{
	g_autoptr(ConfabElicitationRequest) answer = confab_elicitation_request_new();

	if (waiter->done || waiter->expiring)
		return;
	waiter->expiring = TRUE;
	g_object_ref(waiter->task); /* until the expiry is over */
	confab_source_clear(&waiter->timeout);
	answer->id = g_strdup(waiter->request->id);
	answer->state = g_strdup(CONFAB_ELICITATION_TIMED_OUT);
	answer->answered_by = g_strdup("timeout");
	answer->answered_at = g_get_real_time() / G_USEC_PER_SEC;
	confab_store_answer_elicitation_async(waiter->self->store, answer, NULL, expire_cb, waiter);
}

static gboolean
on_wait_timeout(gpointer user_data)
{
	Waiter *waiter = user_data;

	g_clear_pointer(&waiter->timeout, g_source_unref);
	waiter_expire(waiter);
	return G_SOURCE_REMOVE;
}

static void
poll_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Waiter *waiter = user_data;
	GTask *task = waiter->task; /* this read's reference */
	g_autoptr(ConfabElicitationRequest) now = NULL;
	g_autoptr(GError) error = NULL;

	now = confab_store_get_elicitation_finish(CONFAB_STORE(source), result, &error);
	waiter->reading = FALSE;
	if (now != NULL && g_strcmp0(now->state, CONFAB_ELICITATION_PENDING) != 0 &&
	    !waiter->expiring)
		waiter_resolve(waiter, now);
	else if (now == NULL)
		g_debug("reading %s: %s", waiter->request->id, error->message);
	g_object_unref(task); /* last: the waiter may go with it */
}

static gboolean
on_poll(gpointer user_data)
{
	Waiter *waiter = user_data;

	if (waiter->reading || waiter->expiring || waiter->done)
		return G_SOURCE_CONTINUE;
	waiter->reading = TRUE;
	g_object_ref(waiter->task); /* until poll_cb */
	confab_store_get_elicitation_async(waiter->self->store,
					   waiter->request->id,
					   NULL,
					   poll_cb,
					   waiter);
	return G_SOURCE_CONTINUE;
}

static void
wake_waiter(ConfabElicitations *self, const gchar *id, gboolean expire);

/**
 * confab_elicitations_wait_async:
 * @self: a #ConfabElicitations
 * @request: a pending request, as created
 * @callback: called once it is answered, or has timed out
 * @user_data: data for @callback
 *
 * Waits, in the thread-default context, for the person's answer (made on
 * any instance), or stores "timed_out" after the timeout. Not cancellable:
 * confab_elicitations_expire_all() ends every wait at shutdown.
 */
void
confab_elicitations_wait_async(ConfabElicitations *self,
			       const ConfabElicitationRequest *request,
			       GAsyncReadyCallback callback,
			       gpointer user_data)
{
	GTask *task = g_task_new(self, NULL, callback, user_data);
	Waiter *waiter = g_new0(Waiter, 1);
	gboolean expired;

	g_return_if_fail(CONFAB_IS_ELICITATIONS(self));
	g_task_set_source_tag(task, confab_elicitations_wait_async);
	waiter->self = self;
	waiter->task = task; /* this reference is the wait's, until resolved */
	waiter->request = confab_elicitation_request_copy(request);
	waiter->context = g_main_context_ref_thread_default();
	g_task_set_task_data(task, waiter, (GDestroyNotify)waiter_free);
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
		g_hash_table_insert(self->waiters, g_strdup(request->id), waiter);
		expired = self->expired;
	}
	waiter->poll = confab_source_add_timeout(CONFAB_APPROVALS_POLL_MS, on_poll, waiter);
	waiter->timeout = confab_source_add_timeout(self->timeout * 1000, on_wait_timeout, waiter);
	if (expired)
		wake_waiter(self, request->id, TRUE);
}

/**
 * confab_elicitations_wait_finish:
 *
 * Returns: (transfer full): the request as answered (accepted, declined,
 *   cancelled) or timed out
 */
ConfabElicitationRequest *
confab_elicitations_wait_finish(ConfabElicitations *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

typedef struct {
	ConfabElicitations *self; /* owned */
	gchar *id;		  /* owned */
	gboolean expire;
} Wake;

static void
wake_free(Wake *wake)
{
	g_object_unref(wake->self);
	g_free(wake->id);
	g_free(wake);
}

/* On the waiter's context: read the row now rather than at the next poll,
 * or time it out (shutdown). */
static gboolean
on_wake(gpointer user_data)
{
	Wake *wake = user_data;
	Waiter *waiter;

	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&wake->self->lock);
		waiter = g_hash_table_lookup(wake->self->waiters, wake->id);
	}
	if (waiter == NULL)
		return G_SOURCE_REMOVE;
	if (wake->expire)
		waiter_expire(waiter);
	else
		on_poll(waiter);
	return G_SOURCE_REMOVE;
}

static void
wake_waiter(ConfabElicitations *self, const gchar *id, gboolean expire)
{
	g_autoptr(GMainContext) context = NULL;
	g_autoptr(GSource) source = NULL;
	Wake *wake;

	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
		Waiter *waiter = g_hash_table_lookup(self->waiters, id);
		if (waiter == NULL)
			return;
		context = g_main_context_ref(waiter->context);
	}
	wake = g_new0(Wake, 1);
	wake->self = g_object_ref(self);
	wake->id = g_strdup(id);
	wake->expire = expire;
	source = g_idle_source_new();
	g_source_set_priority(source, G_PRIORITY_DEFAULT);
	g_source_set_callback(source, on_wake, wake, (GDestroyNotify)wake_free);
	g_source_set_static_name(source, "[confab] elicitation answered");
	g_source_attach(source, context);
}

/* ---------- answer ---------- */

typedef struct {
	gchar *id;
	gchar *owner;	 /* nullable: an administrator */
	gchar *agent_id; /* nullable: a token bound to an agent */
	gchar *action;
	JsonObject *content; /* owned, nullable */
	gchar *by;
	ConfabElicitationRequest *answer; /* owned, once made */
} Answer;

static void
answer_free(Answer *a)
{
	g_free(a->id);
	g_free(a->owner);
	g_free(a->agent_id);
	g_free(a->action);
	g_clear_pointer(&a->content, json_object_unref);
	g_free(a->by);
	confab_elicitation_request_free(a->answer);
	g_free(a);
}

static GError *
not_found(const gchar *id)
{
	return g_error_new(CONFAB_ERROR,
			   CONFAB_ERROR_ELICITATION_NOT_FOUND,
			   "No elicitation '%s'",
			   id);
}

static void
answered_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	Answer *a = g_task_get_task_data(task);
	GError *error = NULL;

	if (!confab_store_answer_elicitation_finish(CONFAB_STORE(source), result, &error)) {
		g_task_return_error(task, error);
		return;
	}
	wake_waiter(g_task_get_source_object(task), a->id, FALSE);
	g_task_return_pointer(task,
			      g_steal_pointer(&a->answer),
			      (GDestroyNotify)confab_elicitation_request_free);
}

static void
stale_expired_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	Answer *a = g_task_get_task_data(task);

	confab_store_answer_elicitation_finish(CONFAB_STORE(source), result, NULL);
	g_task_return_new_error(task,
				CONFAB_ERROR,
				CONFAB_ERROR_ELICITATION_ANSWERED,
				"The elicitation '%s' is no longer pending: it timed out",
				a->id);
}

/* The content checked against the stored schema, its defaults applied; a
 * mismatch is CONFAB_ERROR_INVALID_VALUE with the field as its param. */
static gchar *
checked_content(const gchar *schema_text, JsonObject *content, GError **error)
{
	g_autoptr(JsonNode) schema = confab_json_from_string(schema_text);
	g_autoptr(JsonObject) applied = NULL;
	g_autoptr(JsonNode) node = NULL;
	GError *local = NULL;

	if (schema == NULL || !JSON_NODE_HOLDS_OBJECT(schema)) {
		g_set_error_literal(error, CONFAB_ERROR, CONFAB_ERROR_FAILED, "The schema is lost");
		return NULL;
	}
	applied =
	    confab_mcp_elicitation_apply_schema(json_node_get_object(schema), content, &local);
	if (applied == NULL) {
		const gchar *colon = strchr(local->message, ':');
		if (g_str_has_prefix(local->message, "content") && colon != NULL) {
			g_autofree gchar *param = g_strndup(local->message, colon - local->message);
			confab_error_set_param(local, param);
		} else {
			confab_error_set_param(local, "content");
		}
		g_propagate_error(error, local);
		return NULL;
	}
	node = json_node_init_object(json_node_alloc(), applied);
	return json_to_string(node, FALSE);
}

static void
answer_read_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	Answer *a = g_task_get_task_data(task);
	g_autoptr(ConfabElicitationRequest) now = NULL;
	GError *error = NULL;

	now = confab_store_get_elicitation_finish(CONFAB_STORE(source), result, &error);
	if (now == NULL) {
		g_task_return_error(task, error);
		return;
	}
	/* another owner's request does not exist, as far as this caller can tell */
	if ((a->owner != NULL && g_strcmp0(a->owner, now->owner) != 0) ||
	    (a->agent_id != NULL && g_strcmp0(a->agent_id, now->agent_id) != 0)) {
		g_task_return_error(task, not_found(a->id));
		return;
	}
	if (g_strcmp0(now->state, CONFAB_ELICITATION_PENDING) != 0) {
		g_task_return_new_error(task,
					CONFAB_ERROR,
					CONFAB_ERROR_ELICITATION_ANSWERED,
					"The elicitation '%s' is no longer pending: it was %s",
					a->id,
					now->state);
		return;
	}
	/* past its timeout no turn waits for it (its own has timed it out,
	 * or is about to, or is gone with its confabd): it times out here */
	if (g_get_real_time() / G_USEC_PER_SEC >
	    now->created_at +
		(gint64)CONFAB_ELICITATIONS(g_task_get_source_object(task))->timeout) {
		g_autoptr(ConfabElicitationRequest) expired = confab_elicitation_request_new();
		expired->id = g_strdup(a->id);
		expired->state = g_strdup(CONFAB_ELICITATION_TIMED_OUT);
		expired->answered_by = g_strdup("timeout");
		expired->answered_at = g_get_real_time() / G_USEC_PER_SEC;
		confab_store_answer_elicitation_async(CONFAB_STORE(source),
						      expired,
						      NULL,
						      stale_expired_cb,
						      g_steal_pointer(&task));
		return;
	}
	a->answer = confab_elicitation_request_copy(now);
	if (g_strcmp0(a->action, "accept") == 0) {
		a->answer->content = checked_content(now->schema, a->content, &error);
		if (a->answer->content == NULL) {
			g_task_return_error(task, error);
			return;
		}
	}
	g_free(a->answer->state);
	a->answer->state = g_strdup(confab_elicitation_request_state_for_action(a->action));
	a->answer->answered_by = g_strdup(a->by);
	a->answer->answered_at = g_get_real_time() / G_USEC_PER_SEC;
	confab_store_answer_elicitation_async(CONFAB_STORE(source),
					      a->answer,
					      NULL,
					      answered_cb,
					      g_steal_pointer(&task));
}

/**
 * confab_elicitations_answer_async:
 * @self: a #ConfabElicitations
 * @elicitation_id: the request (`mcpe_…`)
 * @owner: (nullable): the caller's owner name; %NULL for an administrator
 * @agent_id: (nullable): the agent the caller's token is bound to, if any
 * @action: `accept`, `decline` or `cancel`
 * @content: (nullable): with `accept`, the person's answer
 * @by: "api" or "dbus"
 * @callback: called once the answer is stored, or refused
 * @user_data: data for @callback
 *
 * Answers a pending request; the turn that waits for it (on this instance
 * or another) hands the answer to its MCP server. With `accept`, @content
 * is checked against the requested schema and its defaults applied first:
 * a mismatch is %CONFAB_ERROR_INVALID_VALUE whose param names the field
 * (`content.age`), and the request stays pending. Refused with
 * %CONFAB_ERROR_INVALID_VALUE (param `action`) for another action,
 * %CONFAB_ERROR_ELICITATION_NOT_FOUND for an id that does not exist or is
 * another owner's, and %CONFAB_ERROR_ELICITATION_ANSWERED for one answered
 * or timed out already.
 */
void
confab_elicitations_answer_async(ConfabElicitations *self,
				 const gchar *elicitation_id,
				 const gchar *owner,
				 const gchar *agent_id,
				 const gchar *action,
				 JsonObject *content,
				 const gchar *by,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, NULL, callback, user_data);
	Answer *a = g_new0(Answer, 1);

	g_return_if_fail(CONFAB_IS_ELICITATIONS(self));
	g_task_set_source_tag(task, confab_elicitations_answer_async);
	a->id = g_strdup(elicitation_id != NULL ? elicitation_id : "");
	a->owner = g_strdup(owner);
	a->agent_id = g_strdup(agent_id);
	a->action = g_strdup(action);
	a->content = content != NULL ? json_object_ref(content) : NULL;
	a->by = g_strdup(by);
	g_task_set_task_data(task, a, (GDestroyNotify)answer_free);
	if (!confab_elicitation_request_is_action(action)) {
		GError *error = NULL;
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "action",
				 "action must be one of accept, decline, cancel");
		g_task_return_error(task, error);
		return;
	}
	if (!confab_id_is_valid(a->id, CONFAB_PREFIX_ELICITATION)) {
		g_task_return_error(task, not_found(a->id));
		return;
	}
	confab_store_get_elicitation_async(self->store,
					   a->id,
					   NULL,
					   answer_read_cb,
					   g_steal_pointer(&task));
}

/**
 * confab_elicitations_answer_finish:
 *
 * Returns: (transfer full): the request as answered
 */
ConfabElicitationRequest *
confab_elicitations_answer_finish(ConfabElicitations *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * confab_elicitations_expire_all:
 * @self: a #ConfabElicitations
 *
 * Times out every wait of this process now (the daemon stops): their
 * servers are answered `cancel`. Waits that begin later end at once too.
 */
void
confab_elicitations_expire_all(ConfabElicitations *self)
{
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);

	g_return_if_fail(CONFAB_IS_ELICITATIONS(self));
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
		GHashTableIter iter;
		gpointer key;

		self->expired = TRUE;
		g_hash_table_iter_init(&iter, self->waiters);
		while (g_hash_table_iter_next(&iter, &key, NULL))
			g_ptr_array_add(ids, g_strdup(key));
	}
	for (guint i = 0; i < ids->len; i++)
		wake_waiter(self, g_ptr_array_index(ids, i), TRUE);
}
