/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabRouter"

#include "config.h"

#include <string.h>

#include "core/confab-router.h"
#include "util/confab-error.h"

/*
 * Routing: one model call across an agent's targets. The router picks the
 * order (the strategy, then health), runs the provider, which knows one
 * upstream, against each target in turn (confab_agent_for_target()), and
 * after a failure decides whether moving on is still safe: only while no
 * delta has gone to the caller, and only for what another upstream may
 * answer better (no connection, no answer in time, 429, 5xx, 401/403, a
 * stream that ended before any content); 400, 404, 413 and 422 are the
 * request's own fault and end the call. There is no wait between targets:
 * a target's own retries and their backoff are the provider's.
 *
 * The health table is this instance's: per agent and target, failures in a
 * row and how long the target is skipped. It is shared by every serving
 * thread under one mutex, held for a lookup or an update, never across a
 * call.
 */

#define TARGETS_MAX CONFAB_AGENT_TARGETS_MAX

typedef struct {
	guint failures;
	gint64 skip_until; /* monotonic µs; 0: not skipped */
	gint64 skip_until_real;
	guint skip_ms; /* the current skip, doubling while it keeps failing */
	gint64 last_failure;
	gint64 since; /* wall clock, seconds */
	gchar *last_error;
	guint in_flight;
	gboolean probing;
} Health;

static void
health_free(Health *health)
{
	g_free(health->last_error);
	g_free(health);
}

struct _ConfabRouter {
	GObject parent_instance;
	ConfabMetrics *metrics; /* owned, nullable */
	guint skip_ms;
	GMutex lock;
	GHashTable *health; /* owned: "agent\ntarget" -> Health, under @lock */
};

G_DEFINE_FINAL_TYPE(ConfabRouter, confab_router, G_TYPE_OBJECT)

static void
confab_router_finalize(GObject *object)
{
	ConfabRouter *self = CONFAB_ROUTER(object);

	g_clear_object(&self->metrics);
	g_hash_table_unref(self->health);
	g_mutex_clear(&self->lock);
	G_OBJECT_CLASS(confab_router_parent_class)->finalize(object);
}

static void
confab_router_class_init(ConfabRouterClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = confab_router_finalize;
}

static void
confab_router_init(ConfabRouter *self)
{
	g_mutex_init(&self->lock);
	self->health =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)health_free);
}

/**
 * confab_router_new:
 * @metrics: (nullable): where attempts are counted
 * @skip_ms: how long a target that failed 3 times in a row is skipped at
 *   first (30 s by default; it doubles up to 5 min while it keeps failing)
 *
 * Returns: (transfer full): a router with an empty health table
 */
ConfabRouter *
confab_router_new(ConfabMetrics *metrics, guint skip_ms)
{
	ConfabRouter *self = g_object_new(CONFAB_TYPE_ROUTER, NULL);

	self->metrics = metrics != NULL ? g_object_ref(metrics) : NULL;
	self->skip_ms = MAX(skip_ms, 1);
	return self;
}

/* the table's key of @agent's target @index */
static gchar *
health_key(ConfabAgent *agent, guint index)
{
	return g_strconcat(confab_agent_get_id(agent) ?: "",
			   "\n",
			   confab_agent_get_target_label(agent, index),
			   NULL);
}

/* under the lock */
static Health *
health_lookup(ConfabRouter *self, ConfabAgent *agent, guint index, gboolean create)
{
	g_autofree gchar *key = health_key(agent, index);
	Health *health = g_hash_table_lookup(self->health, key);

	if (health == NULL && create) {
		health = g_new0(Health, 1);
		health->since = g_get_real_time() / G_USEC_PER_SEC;
		g_hash_table_insert(self->health, g_steal_pointer(&key), health);
	}
	return health;
}

static gboolean
health_is_skipped(const Health *health, gint64 now)
{
	if (health == NULL || health->skip_until == 0)
		return FALSE;
	/* once the skip is over, one call probes it */
	return now < health->skip_until || health->probing;
}

/* ---------- the order of one call ---------- */

typedef struct {
	guint index;
	guint in_flight;
	gint64 last_failure;
} Candidate;

static gint
by_in_flight(gconstpointer a, gconstpointer b)
{
	const Candidate *x = a, *y = b;
	if (x->in_flight != y->in_flight)
		return x->in_flight < y->in_flight ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static gint
by_last_failure(gconstpointer a, gconstpointer b)
{
	const Candidate *x = a, *y = b;
	if (x->last_failure != y->last_failure)
		return x->last_failure < y->last_failure ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* The weighted pick among @c first, the rest in order. */
static void
weighted_first(ConfabAgent *agent, Candidate *c, guint n)
{
	guint total = 0;
	guint pick;

	for (guint i = 0; i < n; i++)
		total += confab_agent_get_target_weight(agent, c[i].index);
	if (n < 2 || total == 0)
		return;
	pick = (guint)g_random_int_range(0, (gint32)total);
	for (guint i = 0; i < n; i++) {
		guint weight = confab_agent_get_target_weight(agent, c[i].index);
		if (pick < weight) {
			Candidate chosen = c[i];
			memmove(c + 1, c, i * sizeof(*c));
			c[0] = chosen;
			return;
		}
		pick -= weight;
	}
}

/* The targets one call tries, in order: those not skipped, by strategy;
 * when every one is skipped, all of them, the one that failed longest
 * ago first (an agent never fails without trying). */
static guint
call_order(ConfabRouter *self, ConfabAgent *agent, guint *order)
{
	guint n = confab_agent_get_n_targets(agent);
	Candidate live[TARGETS_MAX];
	Candidate all[TARGETS_MAX];
	guint n_live = 0;
	gint64 now = g_get_monotonic_time();

	g_mutex_lock(&self->lock);
	for (guint i = 0; i < n; i++) {
		Health *health = health_lookup(self, agent, i, FALSE);
		Candidate c = {i,
			       health != NULL ? health->in_flight : 0,
			       health != NULL ? health->last_failure : 0};
		all[i] = c;
		if (!health_is_skipped(health, now))
			live[n_live++] = c;
	}
	g_mutex_unlock(&self->lock);

	if (n_live == 0) {
		qsort(all, n, sizeof(*all), by_last_failure);
		for (guint i = 0; i < n; i++)
			order[i] = all[i].index;
		return n;
	}
	switch (confab_agent_get_routing_strategy(agent)) {
	case CONFAB_ROUTING_WEIGHTED:
		weighted_first(agent, live, n_live);
		break;
	case CONFAB_ROUTING_LEAST_BUSY:
		qsort(live, n_live, sizeof(*live), by_in_flight);
		break;
	case CONFAB_ROUTING_FALLBACK:
	default:
		break;
	}
	for (guint i = 0; i < n_live; i++)
		order[i] = live[i].index;
	return n_live;
}

/* ---------- health ---------- */

static void
health_begin(ConfabRouter *self, ConfabAgent *agent, guint index)
{
	Health *health;

	g_mutex_lock(&self->lock);
	health = health_lookup(self, agent, index, TRUE);
	health->in_flight++;
	if (health->skip_until != 0 && g_get_monotonic_time() >= health->skip_until)
		health->probing = TRUE;
	g_mutex_unlock(&self->lock);
}

static void
set_skip(Health *health, gint64 now, guint ms)
{
	gint64 until = now + (gint64)ms * 1000;

	if (until <= health->skip_until && now < health->skip_until)
		return;
	health->skip_until = until;
	health->skip_until_real = g_get_real_time() / G_USEC_PER_SEC + (ms + 999) / 1000;
	health->since = g_get_real_time() / G_USEC_PER_SEC;
}

/* @failed: NULL for a success (or an answer that was the request's own
 * fault: the target works), else what went wrong; @retry_after_ms: what a
 * 429 asked for, -1 for nothing */
static void
health_end(ConfabRouter *self,
	   ConfabAgent *agent,
	   guint index,
	   const GError *failed,
	   gint64 retry_after_ms)
{
	Health *health;
	gint64 now = g_get_monotonic_time();

	g_mutex_lock(&self->lock);
	health = health_lookup(self, agent, index, TRUE);
	health->in_flight--;
	if (failed == NULL) {
		if (health->failures > 0 || health->skip_until != 0)
			health->since = g_get_real_time() / G_USEC_PER_SEC;
		health->failures = 0;
		health->skip_until = 0;
		health->skip_until_real = 0;
		health->skip_ms = 0;
		health->probing = FALSE;
		g_mutex_unlock(&self->lock);
		return;
	}
	health->failures++;
	health->last_failure = now;
	g_free(health->last_error);
	health->last_error = g_strdup(failed->message);
	if (health->failures == 1)
		health->since = g_get_real_time() / G_USEC_PER_SEC;
	if (health->probing) {
		health->probing = FALSE;
		health->skip_ms = MIN(health->skip_ms * 2, CONFAB_ROUTER_SKIP_MAX_MS);
		set_skip(health, now, health->skip_ms);
	} else if (health->failures >= CONFAB_ROUTER_FAILURES_TO_SKIP && health->skip_until == 0) {
		health->skip_ms = self->skip_ms;
		set_skip(health, now, health->skip_ms);
	}
	if (retry_after_ms > 0)
		set_skip(health, now, (guint)MIN(retry_after_ms, G_MAXUINT32));
	g_mutex_unlock(&self->lock);
}

/* ---------- one routed call ---------- */

typedef struct _Call Call;

/* One target tried: its own request and cancellable, so that a hedge can
 * run beside it and either can be cancelled alone. */
typedef struct {
	Call *call; /* unowned: the call outlives its attempts */
	guint index;
	ConfabProviderRequest *request; /* owned */
	GCancellable *cancellable;	/* owned */
	gboolean running;
	gboolean lost; /* cancelled: the other attempt answered first */
} Attempt;

struct _Call {
	ConfabRouter *router;		/* owned */
	ConfabProvider *provider;	/* owned */
	ConfabProviderRequest *request; /* unowned: the caller keeps it until returned */
	ConfabAgent *agent;		/* owned: a hedge that lost outlives the request */
	ConfabDeltaFunc delta_func;
	gpointer delta_data;
	GTask *task;		   /* owned until returned */
	GCancellable *cancellable; /* owned, nullable: the caller's */
	gulong cancelled_id;
	guint order[TARGETS_MAX];
	guint n_order;
	guint next;
	guint max_attempts;
	GPtrArray *attempts; /* owned: Attempt, every one started */
	Attempt *winner;     /* unowned: the one whose deltas pass */
	guint running;
	GSource *hedge;	   /* owned: starts the next target beside a silent one */
	gboolean answered; /* a target took the call (a success status) */
	gboolean returned;
	GError *error; /* owned: the last target's failure */
};

static void
attempt_free(Attempt *attempt)
{
	confab_provider_request_free(attempt->request);
	g_object_unref(attempt->cancellable);
	g_free(attempt);
}

static void
call_free(Call *call)
{
	if (call->cancellable != NULL)
		g_cancellable_disconnect(call->cancellable, call->cancelled_id);
	if (call->hedge != NULL) {
		g_source_destroy(call->hedge);
		g_source_unref(call->hedge);
	}
	g_clear_object(&call->router);
	g_clear_object(&call->provider);
	g_clear_object(&call->agent);
	g_clear_object(&call->cancellable);
	g_ptr_array_unref(call->attempts);
	g_clear_error(&call->error);
	g_free(call);
}

/* The caller's cancellable stops every attempt. */
static void
on_call_cancelled(GCancellable *cancellable, gpointer user_data)
{
	Call *call = user_data;

	for (guint i = 0; i < call->attempts->len; i++)
		g_cancellable_cancel(
		    ((Attempt *)g_ptr_array_index(call->attempts, i))->cancellable);
}

static void
stop_hedge(Call *call)
{
	if (call->hedge == NULL)
		return;
	g_source_destroy(call->hedge);
	g_clear_pointer(&call->hedge, g_source_unref);
}

static void
call_name_target(Call *call, Attempt *attempt);

static void
on_delta(const ConfabDelta *delta, gpointer user_data)
{
	Attempt *attempt = user_data;
	Call *call = attempt->call;

	if (call->winner == NULL) {
		/* the first to answer wins; a hedge beside it is cancelled */
		call->winner = attempt;
		stop_hedge(call);
		for (guint i = 0; i < call->attempts->len; i++) {
			Attempt *other = g_ptr_array_index(call->attempts, i);
			if (other != attempt && other->running) {
				other->lost = TRUE;
				g_cancellable_cancel(other->cancellable);
			}
		}
	}
	if (call->winner != attempt)
		return;
	call->delta_func(delta, call->delta_data);
}

/* A target took the call: the caller hears it from the first one only
 * (of a hedge, whichever answers first), named as the call's target. */
static void
on_answered(ConfabProviderRequest *request, gpointer user_data)
{
	Attempt *attempt = user_data;
	Call *call = attempt->call;

	if (call->answered || call->returned || attempt->lost)
		return;
	call->answered = TRUE;
	call_name_target(call, attempt);
	confab_provider_request_answered(call->request);
}

/* What an attempt's failure says: its outcome for the metrics, and
 * whether the next target may be tried. */
static const gchar *
classify(Attempt *attempt, const GError *error, gboolean *move_on, gboolean *target_failed)
{
	Call *call = attempt->call;
	guint status = attempt->request->status;

	*move_on = FALSE;
	*target_failed = TRUE;
	if (attempt->lost) {
		*target_failed = FALSE;
		return "hedge_lost";
	}
	if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED) ||
	    g_cancellable_is_cancelled(call->cancellable)) {
		*target_failed = FALSE;
		return "cancelled";
	}
	if (status == 400 || status == 404 || status == 413 || status == 422) {
		/* the request's own fault: another upstream would say the same */
		*target_failed = FALSE;
		return "client_error";
	}
	/* never mid-answer: a text is not spliced from two upstreams */
	*move_on = call->winner == NULL;
	if (status == 429)
		return "rate_limited";
	if (status == 401 || status == 403)
		return "unauthorized";
	if (g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM_TIMEOUT))
		return "timeout";
	if (status >= 400 && status < 500) {
		/* another 4xx: the request's, not worth another target */
		*move_on = FALSE;
		*target_failed = FALSE;
		return "client_error";
	}
	return "error";
}

static void
count_attempt(Attempt *attempt, const gchar *outcome)
{
	Call *call = attempt->call;
	ConfabAgent *agent = call->agent;

	if (call->router->metrics == NULL)
		return;
	confab_metrics_add(call->router->metrics,
			   CONFAB_METRIC_UPSTREAM_ATTEMPTS,
			   1,
			   confab_agent_get_id(agent),
			   confab_agent_get_target_label(agent, attempt->index),
			   outcome);
}

/* What the caller reads of the call: the target that answered (or was
 * tried last), and how many were tried. */
static void
call_name_target(Call *call, Attempt *attempt)
{
	ConfabAgent *agent = call->agent;

	g_free(call->request->target);
	call->request->target = g_strdup(confab_agent_get_target_label(agent, attempt->index));
	g_free(call->request->target_model);
	call->request->target_model =
	    g_strdup(confab_agent_get_upstream_model(attempt->request->agent));
}

static void
call_return(Call *call, ConfabProviderResult *result)
{
	GTask *task = call->task;

	call->returned = TRUE;
	stop_hedge(call);
	if (result != NULL)
		g_task_return_pointer(task, result, (GDestroyNotify)confab_provider_result_free);
	else
		g_task_return_error(task, g_steal_pointer(&call->error));
}

static gboolean
try_next(Call *call);

static void
attempt_done_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Attempt *attempt = user_data;
	Call *call = attempt->call;
	GTask *task = call->task;
	ConfabAgent *agent = call->agent;
	ConfabProviderResult *presult = NULL;
	GError *error = NULL;
	gboolean move_on = FALSE;
	gboolean target_failed = FALSE;
	const gchar *outcome;

	presult = confab_provider_complete_finish(call->provider, result, &error);
	attempt->running = FALSE;
	call->running--;
	if (!call->returned)
		call->request->retries += attempt->request->retries;
	if (presult != NULL && (call->winner == NULL || call->winner == attempt) &&
	    !call->returned) {
		health_end(call->router, agent, attempt->index, NULL, -1);
		count_attempt(attempt, "ok");
		call->winner = attempt;
		for (guint i = 0; i < call->attempts->len; i++) {
			Attempt *other = g_ptr_array_index(call->attempts, i);
			if (other != attempt && other->running) {
				other->lost = TRUE;
				g_cancellable_cancel(other->cancellable);
			}
		}
		call_name_target(call, attempt);
		call_return(call, presult);
		if (call->running == 0)
			g_object_unref(task);
		return;
	}
	if (presult != NULL) {
		/* answered, but the other had already won */
		confab_provider_result_free(presult);
		attempt->lost = TRUE;
		error = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "Lost to a hedge");
	}
	outcome = classify(attempt, error, &move_on, &target_failed);
	count_attempt(attempt, outcome);
	health_end(call->router,
		   agent,
		   attempt->index,
		   target_failed ? error : NULL,
		   attempt->request->status == 429 ? attempt->request->retry_after_ms : -1);
	if (call->returned || attempt->lost) {
		g_error_free(error);
		if (call->running == 0 && call->returned)
			g_object_unref(task);
		return;
	}
	call->request->status = attempt->request->status;
	call->request->retry_after_ms = attempt->request->retry_after_ms;
	confab_provider_request_set_error_fields(call->request,
						 attempt->request->error_type,
						 attempt->request->error_code,
						 attempt->request->error_param);
	call_name_target(call, attempt);
	g_clear_error(&call->error);
	call->error = error;
	if (call->running > 0)
		return; /* the hedge beside it may still answer */
	if (move_on && call->next < call->n_order && call->request->attempts < call->max_attempts) {
		g_info("agent %s: target %s failed (%s): trying %s",
		       confab_agent_get_id(agent),
		       confab_agent_get_target_label(agent, attempt->index),
		       error->message,
		       confab_agent_get_target_label(agent, call->order[call->next]));
		if (try_next(call))
			return;
	}
	call_return(call, NULL);
	g_object_unref(task);
}

/* hedge_after_ms without a delta: the next target beside the silent one */
static gboolean
on_hedge(gpointer user_data)
{
	Call *call = user_data;

	g_clear_pointer(&call->hedge, g_source_unref);
	if (call->winner == NULL && !call->returned)
		try_next(call);
	return G_SOURCE_REMOVE;
}

/* Starts the next target in the call's order; FALSE when none is left. */
static gboolean
try_next(Call *call)
{
	ConfabAgent *agent = call->agent;
	ConfabProviderRequest *request;
	Attempt *attempt;
	guint hedge_ms = confab_agent_get_hedge_after_ms(agent);

	if (call->next >= call->n_order || call->request->attempts >= call->max_attempts)
		return FALSE;
	attempt = g_new0(Attempt, 1);
	attempt->call = call;
	attempt->index = call->order[call->next++];
	attempt->cancellable = g_cancellable_new();
	attempt->running = TRUE;
	request = g_new0(ConfabProviderRequest, 1);
	request->agent = confab_agent_for_target(agent, attempt->index);
	request->messages = json_array_ref(call->request->messages);
	request->params = call->request->params != NULL ? json_object_ref(call->request->params)
							: NULL;
	request->stream = call->request->stream;
	request->flow = call->request->flow != NULL ? confab_flow_ref(call->request->flow) : NULL;
	request->retry_after_ms = -1;
	if (call->request->answered != NULL) {
		request->answered = on_answered;
		request->answered_data = attempt;
	}
	attempt->request = request;
	g_ptr_array_add(call->attempts, attempt);
	call->request->attempts++;
	call->running++;
	call_name_target(call, attempt);
	health_begin(call->router, agent, attempt->index);
	if (hedge_ms > 0 && call->next < call->n_order &&
	    call->request->attempts < call->max_attempts) {
		stop_hedge(call);
		call->hedge = g_timeout_source_new(hedge_ms);
		g_source_set_callback(call->hedge, on_hedge, call, NULL);
		g_source_attach(call->hedge, g_main_context_get_thread_default());
	}
	confab_provider_complete_async(call->provider,
				       request,
				       on_delta,
				       attempt,
				       attempt->cancellable,
				       attempt_done_cb,
				       attempt);
	return TRUE;
}

/**
 * confab_router_complete_async:
 * @self: a #ConfabRouter
 * @provider: the agent's provider
 * @request: the call, for the agent (all its targets); the router sets its
 *   @retries, @status, @target, @target_model and @attempts; the caller
 *   keeps it until the call completes
 * @delta_func: receives the answer, from one target only
 * @delta_data: for @delta_func
 * @cancellable: (nullable): stops the call and every target's
 * @callback: called once one target answered, or routing gave up
 * @user_data: for @callback
 *
 * Runs one model call across the agent's targets. With the agent's
 * `hedge_after_ms`, a target that sent nothing for that long gets the next
 * one started beside it: the first to send content wins, the other is
 * cancelled.
 */
void
confab_router_complete_async(ConfabRouter *self,
			     ConfabProvider *provider,
			     ConfabProviderRequest *request,
			     ConfabDeltaFunc delta_func,
			     gpointer delta_data,
			     GCancellable *cancellable,
			     GAsyncReadyCallback callback,
			     gpointer user_data)
{
	Call *call = g_new0(Call, 1);

	g_return_if_fail(CONFAB_IS_ROUTER(self));
	call->task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(call->task, confab_router_complete_async);
	g_task_set_task_data(call->task, call, (GDestroyNotify)call_free);
	call->router = g_object_ref(self);
	call->provider = g_object_ref(provider);
	call->request = request;
	call->agent = g_object_ref(request->agent);
	call->delta_func = delta_func;
	call->delta_data = delta_data;
	call->attempts = g_ptr_array_new_with_free_func((GDestroyNotify)attempt_free);
	call->n_order = call_order(self, request->agent, call->order);
	call->max_attempts = confab_agent_get_max_attempts(request->agent);
	request->attempts = 0;
	request->status = 0;
	request->retry_after_ms = -1;
	try_next(call);
	if (cancellable != NULL) {
		call->cancellable = g_object_ref(cancellable);
		call->cancelled_id =
		    g_cancellable_connect(cancellable, G_CALLBACK(on_call_cancelled), call, NULL);
	}
}

/**
 * confab_router_complete_finish:
 *
 * Returns: (transfer full): how the answer ended, or %NULL: the last
 *   target's error
 */
ConfabProviderResult *
confab_router_complete_finish(ConfabRouter *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* ---------- what the doors show ---------- */

/**
 * confab_router_target_health_free:
 * @health: (nullable): one target's health
 *
 * Frees @health.
 */
void
confab_router_target_health_free(ConfabRouterTargetHealth *health)
{
	if (health == NULL)
		return;
	g_free(health->label);
	g_free(health->last_error);
	g_free(health);
}

/**
 * confab_router_get_health:
 * @self: a #ConfabRouter
 * @agent: an agent
 *
 * Returns: (transfer full) (element-type ConfabRouterTargetHealth): each of
 *   @agent's targets, in order, as this instance sees it
 */
GPtrArray *
confab_router_get_health(ConfabRouter *self, ConfabAgent *agent)
{
	GPtrArray *out =
	    g_ptr_array_new_with_free_func((GDestroyNotify)confab_router_target_health_free);
	gint64 now = g_get_monotonic_time();

	g_return_val_if_fail(CONFAB_IS_ROUTER(self), out);
	g_mutex_lock(&self->lock);
	for (guint i = 0; i < confab_agent_get_n_targets(agent); i++) {
		Health *health = health_lookup(self, agent, i, FALSE);
		ConfabRouterTargetHealth *h = g_new0(ConfabRouterTargetHealth, 1);

		h->label = g_strdup(confab_agent_get_target_label(agent, i));
		h->state = "up";
		if (health != NULL) {
			h->failures = health->failures;
			h->last_error = g_strdup(health->last_error);
			h->since = health->since;
			h->in_flight = health->in_flight;
			if (health->probing)
				h->state = "probing";
			else if (health->skip_until != 0 && now < health->skip_until)
				h->state = "skipped";
			else if (health->failures > 0)
				h->state = "failing";
			if (health->skip_until != 0)
				h->skip_until = health->skip_until_real;
		}
		g_ptr_array_add(out, h);
	}
	g_mutex_unlock(&self->lock);
	return out;
}

/**
 * confab_router_write_metrics:
 * @self: a #ConfabRouter
 * @out: Prometheus text, appended to
 *
 * Writes `confab_upstream_target_up{agent,target}`: 1 unless the target is
 * being skipped, for every target this instance has called.
 */
void
confab_router_write_metrics(ConfabRouter *self, GString *out)
{
	GHashTableIter iter;
	gpointer key, value;
	gint64 now = g_get_monotonic_time();

	g_return_if_fail(CONFAB_IS_ROUTER(self));
	confab_metrics_write_header(
	    out,
	    "confab_upstream_target_up",
	    "gauge",
	    "Whether an agent's upstream target is tried (0: being skipped)");
	g_mutex_lock(&self->lock);
	g_hash_table_iter_init(&iter, self->health);
	while (g_hash_table_iter_next(&iter, &key, &value)) {
		g_auto(GStrv) parts = g_strsplit(key, "\n", 2);
		const gchar *labels[] = {"agent", parts[0], "target", parts[1], NULL};
		Health *health = value;
		confab_metrics_write_sample(
		    out,
		    "confab_upstream_target_up",
		    labels,
		    health->skip_until != 0 && now < health->skip_until ? 0 : 1);
	}
	g_mutex_unlock(&self->lock);
}
