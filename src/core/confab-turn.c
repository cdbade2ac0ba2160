/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabTurn"

#include "config.h"

#include <string.h>

#include "core/confab-agent-loop.h"
#include "core/confab-turn.h"
#include "openai/confab-openai-message.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * One chat turn, the same for every door (HTTP, D-Bus Chat).
 *
 * start: resolve the agent and the session, take the session (one turn at a
 *        time, store.acquire_session), count the request against the quota
 *        (store.admit_quota), and — for a stream — commit the user's
 *        messages (store.commit_turn). Only when that completes may the door
 *        send its first byte.
 * run:   ask the provider, pass each delta to the door's sink, let a
 *        streaming sink hand everything to its client, then commit the
 *        answer — completed, incomplete (cancelled, or not all delivered) or
 *        failed (with an error block). A JSON turn commits its user's
 *        messages and its answer in that one transaction.
 *
 * The door owns the sink: it writes SSE chunks, or nothing until the end.
 * Every step that the store shares between daemons is a store operation;
 * the engine only counts the turns in flight here.
 */

struct _ConfabTurn {
	GObject parent_instance;
	ConfabEngine *engine;	    /* owned */
	ConfabStore *store;	    /* owned */
	ConfabPrincipal *principal; /* owned */
	ConfabChatRequest *request; /* owned */
	GCancellable *cancellable;  /* owned */
	ConfabAgent *agent;	    /* owned */
	ConfabProvider *provider;   /* owned */
	ConfabSession *session;	    /* owned */
	gboolean session_is_new;
	GPtrArray *history;	     /* owned: ConfabMessage, stored before this turn */
	GPtrArray *new_messages;     /* owned: ConfabMessage, stored by this turn */
	gchar *assistant_message_id; /* owned */
	gchar *completion_id;	     /* owned */
	gint64 created;
	gchar *month; /* owned: the month the request counted in */
	ConfabQuotaInfo quota;
	gboolean registered;	       /* counted in the engine's turns in flight */
	gboolean busy_held;	       /* holds the session */
	gboolean quota_taken;	       /* counted, the count not yet committed */
	gboolean parallel_taken;       /* one of the owner's turns in flight */
	gboolean token_parallel_taken; /* one of the token's turns in flight */
	gboolean admitted;	       /* the user's messages are committed: a turn served */
	gboolean commit_first;	       /* commit them before the answer, even without a stream */
	gchar *new_session_id;	       /* owned, nullable: the id a new session takes */
	/* token budgets (issue 30): the budgets, the open reservation */
	ConfabStoreTokens tokens; /* its month: token_month */
	gchar *token_month;	  /* owned */
	gboolean tokens_apply;
	gint64 reserved;	 /* the open reservation of the current model call */
	gint64 output_guess;	 /* the tokens reserved for a call's answer */
	gint64 last_total;	 /* the last call's usage, for the next one's estimate */
	gint64 tokens_used;	 /* every settled call's, committed with the answer */
	ConfabStoreTurn *record; /* owned: what is still to commit */

	const ConfabTurnSink *sink;
	gpointer sink_data;
	ConfabFlow *flow;  /* owned, nullable: the streaming client's backpressure */
	GTask *drain_task; /* owned: waiting for the sink to deliver everything */

	GPtrArray *server_tools; /* owned, nullable: the agent's own tools */
	ConfabAgentLoop *loop;	 /* owned: the answer, once running */
	ConfabMessageStatus status;
	GError *run_error; /* owned */

	/* metrics: monotonic microseconds, and the agent's series */
	gint64 started;
	gint64 last_text;
	gint64 commit_started;
	ConfabMetricsSeries *time_to_first_token;
	ConfabMetricsSeries *inter_token_latency;

	gchar *instructions; /* owned, nullable: the door's, for this turn only */
	gchar *response_id;  /* owned, nullable: stored with the turn's messages */
	GPtrArray *fork;     /* owned, nullable: ConfabMessage, a new session's history */
	gchar *fork_title;   /* owned, nullable */
	GPtrArray *answers;  /* owned: Answer, approvals an earlier response asked */
};

typedef struct {
	ConfabApproval *approval; /* owned */
	gboolean approve;
	gchar *reason; /* owned, nullable */
} Answer;

static void
answer_free(Answer *answer)
{
	confab_approval_free(answer->approval);
	g_free(answer->reason);
	g_free(answer);
}

G_DEFINE_FINAL_TYPE(ConfabTurn, confab_turn, G_TYPE_OBJECT)

static void
take_tokens(ConfabTurn *self, gint64 tokens);

/* Gives back what a turn holds in the store and the engine. */
static void
confab_turn_release(ConfabTurn *self)
{
	if (self->reserved != 0) {
		/* a reservation no call settled: the turn ended before it */
		take_tokens(self, -self->reserved);
		self->reserved = 0;
	}
	if (self->quota_taken) {
		confab_store_release_quota(self->store, self->principal->owner, self->month);
		self->quota_taken = FALSE;
	}
	if (self->parallel_taken) {
		confab_engine_release_parallel(self->engine, self->principal->owner);
		self->parallel_taken = FALSE;
	}
	if (self->token_parallel_taken) {
		confab_engine_release_parallel(self->engine, self->principal->token_id);
		self->token_parallel_taken = FALSE;
	}
	if (self->busy_held) {
		confab_store_release_session(self->store, confab_session_get_id(self->session));
		self->busy_held = FALSE;
	}
	if (self->registered) {
		confab_engine_turn_end(self->engine, self->cancellable, self->admitted);
		self->registered = FALSE;
	}
}

static void
confab_turn_dispose(GObject *object)
{
	ConfabTurn *self = CONFAB_TURN(object);
	if (self->engine != NULL)
		confab_turn_release(self);
	G_OBJECT_CLASS(confab_turn_parent_class)->dispose(object);
}

static void
confab_turn_finalize(GObject *object)
{
	ConfabTurn *self = CONFAB_TURN(object);

	g_clear_object(&self->engine);
	g_clear_object(&self->store);
	g_clear_pointer(&self->principal, confab_principal_free);
	g_clear_pointer(&self->request, confab_chat_request_free);
	g_clear_object(&self->cancellable);
	g_clear_pointer(&self->flow, confab_flow_unref);
	g_clear_object(&self->agent);
	g_clear_pointer(&self->record, confab_store_turn_free);
	g_clear_object(&self->drain_task);
	g_clear_object(&self->provider);
	g_clear_object(&self->session);
	g_clear_pointer(&self->history, g_ptr_array_unref);
	g_clear_pointer(&self->new_messages, g_ptr_array_unref);
	g_free(self->assistant_message_id);
	g_free(self->completion_id);
	g_free(self->month);
	g_free(self->token_month);
	g_clear_pointer(&self->server_tools, g_ptr_array_unref);
	g_clear_object(&self->loop);
	g_clear_error(&self->run_error);
	g_free(self->instructions);
	g_free(self->response_id);
	g_free(self->new_session_id);
	g_clear_pointer(&self->fork, g_ptr_array_unref);
	g_free(self->fork_title);
	g_ptr_array_unref(self->answers);
	G_OBJECT_CLASS(confab_turn_parent_class)->finalize(object);
}

static void
confab_turn_class_init(ConfabTurnClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->dispose = confab_turn_dispose;
	object_class->finalize = confab_turn_finalize;
}

static void
confab_turn_init(ConfabTurn *self)
{
	self->cancellable = g_cancellable_new();
	self->new_messages = g_ptr_array_new_with_free_func(g_object_unref);
	self->answers = g_ptr_array_new_with_free_func((GDestroyNotify)answer_free);
	self->status = CONFAB_MESSAGE_STATUS_COMPLETED;
}

/**
 * confab_turn_new:
 * @engine: the engine
 * @principal: (transfer full): who asks
 * @request: (transfer full): the validated request
 *
 * Returns: (transfer full): a turn, not started
 */
ConfabTurn *
confab_turn_new(ConfabEngine *engine, ConfabPrincipal *principal, ConfabChatRequest *request)
{
	ConfabTurn *self = g_object_new(CONFAB_TYPE_TURN, NULL);
	self->engine = g_object_ref(engine);
	self->store = g_object_ref(confab_engine_get_store(engine));
	self->principal = principal;
	self->request = request;
	self->started = g_get_monotonic_time();
	return self;
}

/**
 * confab_turn_set_sink:
 * @self: a #ConfabTurn
 * @sink: (nullable): what the door does with the answer as it comes; must
 *   outlive the turn (a static table)
 * @user_data: data for @sink's functions
 */
void
confab_turn_set_sink(ConfabTurn *self, const ConfabTurnSink *sink, gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_TURN(self));
	self->sink = sink;
	self->sink_data = user_data;
}

static gint64
now_seconds(void)
{
	return g_get_real_time() / G_USEC_PER_SEC;
}

/* ---------- start ---------- */

/* ---------- metrics ---------- */

static void
commit(ConfabTurn *self, ConfabStoreTurn *record, GAsyncReadyCallback callback, GTask *task)
{
	self->commit_started = g_get_monotonic_time();
	confab_store_commit_turn_async(self->store, record, NULL, callback, task);
}

static void
observe_commit(ConfabTurn *self)
{
	ConfabMetrics *metrics = confab_engine_get_metrics(self->engine);

	confab_metrics_series_observe(confab_metrics_series(metrics, CONFAB_METRIC_STORE_COMMIT),
				      (g_get_monotonic_time() - self->commit_started) / 1e6);
}

/* A turn that ran is counted once its answer is stored, or failed to be. */
static void
count_turn(ConfabTurn *self, const gchar *status)
{
	ConfabMetrics *metrics = confab_engine_get_metrics(self->engine);
	const gchar *agent_id = confab_agent_get_id(self->agent);
	gint64 prompt_tokens = -1;
	gint64 completion_tokens = -1;

	confab_metrics_add(metrics, CONFAB_METRIC_TURNS, 1, agent_id, status);
	confab_metrics_series_observe(
	    confab_metrics_series(metrics, CONFAB_METRIC_TURN_DURATION, agent_id),
	    (g_get_monotonic_time() - self->started) / 1e6);
	confab_agent_loop_get_usage(self->loop, &prompt_tokens, &completion_tokens);
	if (prompt_tokens > 0)
		confab_metrics_add(metrics, CONFAB_METRIC_TOKENS, prompt_tokens, agent_id, "input");
	if (completion_tokens > 0)
		confab_metrics_add(metrics,
				   CONFAB_METRIC_TOKENS,
				   completion_tokens,
				   agent_id,
				   "output");
	if (confab_agent_loop_get_reasoning_tokens(self->loop) > 0)
		confab_metrics_add(metrics,
				   CONFAB_METRIC_TOKENS,
				   confab_agent_loop_get_reasoning_tokens(self->loop),
				   agent_id,
				   "reasoning");
}

/* ---------- start ---------- */

static void
start_fail(ConfabTurn *self, GTask *task, GError *error)
{
	confab_turn_release(self);
	g_task_return_error(task, error);
}

static void
user_side_committed_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabTurn *self = g_task_get_source_object(task);
	GError *error = NULL;

	observe_commit(self);
	if (!confab_store_commit_turn_finish(CONFAB_STORE(source), result, &error)) {
		start_fail(self, task, error);
		return;
	}
	/* durable now: the request has counted */
	g_clear_pointer(&self->record, confab_store_turn_free);
	self->quota_taken = FALSE;
	self->admitted = TRUE;
	g_task_return_boolean(task, TRUE);
}

/* Which target answered the turn's last model call, and how many targets
 * its model calls tried: stored with the answer. */
static void
set_upstream(ConfabTurn *self, ConfabMessage *msg)
{
	const gchar *model = NULL;
	guint attempts = 0;
	const gchar *target = confab_turn_get_target(self, &model, &attempts);
	g_autoptr(GString) json = NULL;

	if (target == NULL)
		return;
	json = g_string_new("{\"label\":");
	confab_json_append_string(json, target);
	g_string_append(json, ",\"upstream_model\":");
	confab_json_append_string(json, model);
	g_string_append_printf(json, ",\"attempts\":%u}", attempts);
	confab_message_set_upstream(msg, json->str);
}

/* What a stream's answer is stored as if the daemon dies before it ends:
 * a shared store keeps it with the session's lease (ConfabStoreTurn). */
static ConfabMessage *
build_unfinished_message(ConfabTurn *self)
{
	ConfabMessage *msg = confab_message_new();

	confab_message_set_id(msg, self->assistant_message_id);
	confab_message_set_session_id(msg, confab_session_get_id(self->session));
	confab_message_set_role(msg, "assistant");
	confab_message_set_model(msg, confab_agent_get_id(self->agent));
	confab_message_set_content(msg, "[]");
	confab_message_set_content_blocks(msg, "[]");
	confab_message_set_status(msg, CONFAB_MESSAGE_STATUS_INCOMPLETE);
	confab_message_set_created_at(msg, self->created);
	confab_message_set_response_id(msg, self->response_id);
	return msg;
}

/* A fork: the history it holds, copied into the new session, before the
 * user's new messages. */
static void
add_fork(ConfabTurn *self, ConfabStoreTurn *record)
{
	ConfabIdGenerator *ids = confab_engine_get_id_generator(self->engine);

	for (guint i = 0; i < self->fork->len; i++) {
		ConfabMessage *old = g_ptr_array_index(self->fork, i);
		g_autoptr(ConfabMessage) msg = confab_message_new();
		g_autofree gchar *id = confab_id_generator_next(ids, CONFAB_PREFIX_MESSAGE);

		confab_message_set_id(msg, id);
		confab_message_set_session_id(msg, confab_session_get_id(self->session));
		confab_message_set_role(msg, confab_message_get_role(old));
		confab_message_set_model(msg, confab_message_get_model(old));
		confab_message_set_content(msg, confab_message_get_content(old));
		confab_message_set_content_blocks(msg, confab_message_get_content_blocks(old));
		confab_message_set_status(msg, confab_message_get_status(old));
		confab_message_set_finish_reason(msg, confab_message_get_finish_reason(old));
		confab_message_set_prompt_tokens(msg, confab_message_get_prompt_tokens(old));
		confab_message_set_completion_tokens(msg,
						     confab_message_get_completion_tokens(old));
		confab_message_set_created_at(msg, confab_message_get_created_at(old));
		confab_message_set_upstream(msg, confab_message_get_upstream(old));
		g_ptr_array_add(record->messages, g_steal_pointer(&msg));
	}
}

/* The user's side, ready to commit: with a stream, now; without, with the
 * answer. */
static void
start_commit(ConfabTurn *self, GTask *task)
{
	ConfabIdGenerator *ids = confab_engine_get_id_generator(self->engine);
	ConfabStoreTurn *record = confab_store_turn_new();
	gint64 now = now_seconds();

	record->session = g_object_ref(self->session);
	record->session_is_new = self->session_is_new;
	confab_session_set_updated_at(self->session, now);
	if (self->fork != NULL)
		add_fork(self, record);
	for (guint i = 0; i < self->new_messages->len; i++) {
		ConfabMessage *msg = g_ptr_array_index(self->new_messages, i);
		g_autofree gchar *id = confab_id_generator_next(ids, CONFAB_PREFIX_MESSAGE);
		confab_message_set_id(msg, id);
		confab_message_set_session_id(msg, confab_session_get_id(self->session));
		confab_message_set_model(msg, confab_agent_get_id(self->agent));
		confab_message_set_created_at(msg, now);
		confab_message_set_response_id(msg, self->response_id);
		g_ptr_array_add(record->messages, g_object_ref(msg));
	}
	if (self->quota_taken) {
		record->usage_owner = g_strdup(self->principal->owner);
		record->usage_month = g_strdup(self->month);
	}
	self->record = record;

	/* allocated now so the stream can name the answer before it exists */
	self->assistant_message_id = confab_id_generator_next(ids, CONFAB_PREFIX_MESSAGE);
	self->completion_id = confab_id_generator_next(ids, CONFAB_PREFIX_COMPLETION);
	self->created = now;

	/*
	 * Without a stream, the first byte the client gets is the whole
	 * answer: the user's messages need only be committed before it. They
	 * go with the answer, in one transaction, and the upstream is asked at
	 * once rather than after a commit.
	 */
	if (!self->request->stream && !self->commit_first) {
		g_task_return_boolean(task, TRUE);
		return;
	}
	record->unfinished = build_unfinished_message(self);
	commit(self, self->record, user_side_committed_cb, g_object_ref(task));
}

/* ---------- token budgets ---------- */

/* A rough count of the tokens of messages: a quarter of their content's
 * bytes as stored (OpenAI's rule of thumb, four bytes a token), plus four
 * a message; the settlement corrects it. */
static gint64
estimate_messages(GPtrArray *messages)
{
	gint64 bytes = 0;

	for (guint i = 0; messages != NULL && i < messages->len; i++) {
		const gchar *content = confab_message_get_content(g_ptr_array_index(messages, i));
		bytes += (content != NULL ? (gint64)strlen(content) : 0) + 16;
	}
	return (bytes + 3) / 4;
}

/* what a call reserves for its answer: max_tokens, else [quota]'s */
static gint64
output_guess(ConfabTurn *self)
{
	static const gchar *const names[] = {"max_completion_tokens",
					     "max_tokens",
					     "max_output_tokens",
					     NULL};
	JsonObject *params = self->request->params;

	for (guint i = 0; params != NULL && names[i] != NULL; i++) {
		JsonNode *node = json_object_get_member(params, names[i]);
		if (node != NULL && JSON_NODE_HOLDS_VALUE(node) &&
		    json_node_get_value_type(node) == G_TYPE_INT64 && json_node_get_int(node) > 0)
			return json_node_get_int(node);
	}
	return (gint64)confab_engine_get_config(self->engine)->token_reservation;
}

static void
tokens_taken_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConfabStoreTokenVerdict verdict;
	g_autoptr(GError) error = NULL;

	/* forced: never refused; a store that fails has lost a count, which
	 * the next one does not repeat */
	if (!confab_store_take_tokens_finish(CONFAB_STORE(source), result, &verdict, &error))
		g_warning("counting tokens: %s", error->message);
}

/* Forced: a settlement, or a later call of an admitted turn. */
static void
take_tokens(ConfabTurn *self, gint64 tokens)
{
	ConfabStoreTokens forced = self->tokens;

	if (!self->tokens_apply || tokens == 0)
		return;
	forced.tokens = tokens;
	forced.force = TRUE;
	if (confab_engine_answers_now(self->engine)) {
		confab_store_take_tokens_now(self->store, &forced);
		return;
	}
	confab_store_take_tokens_async(self->store, &forced, NULL, tokens_taken_cb, NULL);
}

/* the agent loop's calls: the first was reserved with the turn's admission;
 * the others reserve, never refused (an admitted turn is never cut) */
static void
meter_call_start(gpointer user_data, guint call)
{
	ConfabTurn *self = user_data;

	if (!self->tokens_apply || call == 0)
		return;
	self->reserved = self->last_total + self->output_guess;
	take_tokens(self, self->reserved);
}

/* settled to what the upstream reported; with no report, the reservation
 * stands */
static void
meter_call_end(gpointer user_data, gint64 prompt_tokens, gint64 completion_tokens)
{
	ConfabTurn *self = user_data;
	gint64 used;

	if (!self->tokens_apply)
		return;
	used = prompt_tokens >= 0 && completion_tokens >= 0 ? prompt_tokens + completion_tokens
							    : self->reserved;
	take_tokens(self, used - self->reserved);
	self->last_total = used;
	self->tokens_used += used;
	self->reserved = 0;
}

static const ConfabAgentLoopMeter turn_meter = {
    .call_start = meter_call_start,
    .call_end = meter_call_end,
};

static void
reserved_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabTurn *self = g_task_get_source_object(task);
	ConfabStoreTokenVerdict verdict;
	GError *error = NULL;

	if (!confab_store_take_tokens_finish(CONFAB_STORE(source), result, &verdict, &error) ||
	    !confab_engine_tokens_verdict(&verdict, &self->quota, &error)) {
		self->reserved = 0;
		start_fail(self, task, error);
		return;
	}
	start_commit(self, task);
}

/* Admitted: the first model call's tokens are reserved now, refused with
 * the turn when they do not fit. */
static void
start_reserve(ConfabTurn *self, GTask *task)
{
	ConfabStoreTokenVerdict verdict;
	GError *error = NULL;

	self->token_month = confab_engine_current_month(self->engine);
	self->tokens_apply = confab_engine_tokens_init(self->engine,
						       &self->tokens,
						       self->principal->owner,
						       self->principal->token_id,
						       self->token_month);
	if (!self->tokens_apply) {
		start_commit(self, task);
		return;
	}
	self->output_guess = output_guess(self);
	self->tokens.tokens = self->reserved = estimate_messages(self->history) +
					       estimate_messages(self->request->messages) +
					       self->output_guess;
	if (!confab_engine_answers_now(self->engine)) {
		confab_store_take_tokens_async(self->store,
					       &self->tokens,
					       NULL,
					       reserved_cb,
					       g_object_ref(task));
		return;
	}
	verdict = confab_store_take_tokens_now(self->store, &self->tokens);
	if (!confab_engine_tokens_verdict(&verdict, &self->quota, &error)) {
		self->reserved = 0;
		start_fail(self, task, error);
		return;
	}
	start_commit(self, task);
}

/* What an admission holds, once admitted: the month's count (the v1 API
 * only) and the turns in flight of the owner and the token. */
static void
admitted(ConfabTurn *self)
{
	self->quota_taken = self->month != NULL;
	self->parallel_taken = self->quota.parallel_taken;
	self->token_parallel_taken = self->quota.token_parallel_taken;
}

static void
admit_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabTurn *self = g_task_get_source_object(task);
	GError *error = NULL;

	if (!confab_engine_admit_quota_finish(CONFAB_ENGINE(source),
					      result,
					      &self->quota,
					      &error)) {
		start_fail(self, task, error);
		return;
	}
	admitted(self);
	start_reserve(self, task);
}

/*
 * The session is this turn's: admit it. On the v1 API the request counts
 * against the owner's month, and the limits of the owner and of its token
 * hold; a channel's turn (D-Bus Chat.Send: the caller's user is the owner)
 * counts no month, but the owner's limits hold all the same.
 */
static void
start_admit(ConfabTurn *self, GTask *task)
{
	const gchar *token_id = self->principal->token_id;

	if (self->principal->source == CONFAB_SESSION_SOURCE_API)
		self->month = confab_engine_current_month(self->engine);
	if (confab_engine_answers_now(self->engine)) {
		GError *error = NULL;
		if (!confab_engine_admit_now(self->engine,
					     self->principal->owner,
					     token_id,
					     self->month,
					     &self->quota,
					     &error)) {
			start_fail(self, task, error);
			return;
		}
		admitted(self);
		start_reserve(self, task);
		return;
	}
	confab_engine_admit_async(self->engine,
				  self->principal->owner,
				  token_id,
				  self->month,
				  NULL,
				  admit_cb,
				  g_object_ref(task));
}

static void
get_history_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabTurn *self = g_task_get_source_object(task);
	GError *error = NULL;

	self->history = confab_store_get_history_finish(CONFAB_STORE(source), result, &error);
	if (self->history == NULL) {
		start_fail(self, task, error);
		return;
	}
	start_admit(self, task);
}

/* @task: (transfer none) */
static void
session_acquired(ConfabTurn *self, GTask *task, GError *error)
{
	if (error != NULL) {
		start_fail(self, task, error);
		return;
	}
	self->busy_held = TRUE;
	if (self->session_is_new) {
		start_admit(self, task);
		return;
	}
	/* read after taking the session, so no turn can slip in between */
	confab_store_get_history_async(self->store,
				       confab_session_get_id(self->session),
				       NULL,
				       get_history_cb,
				       g_object_ref(task));
}

static void
session_acquired_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabTurn *self = g_task_get_source_object(task);
	GError *error = NULL;

	confab_store_acquire_session_finish(CONFAB_STORE(source), result, &error);
	session_acquired(self, task, error);
}

static void
acquire_session(ConfabTurn *self, GTask *task)
{
	/* SQLite's answer is in memory: no task, no main-loop round */
	if (confab_store_answers_now(self->store)) {
		GError *error = NULL;
		confab_store_acquire_session_now(self->store,
						 confab_session_get_id(self->session),
						 &error);
		session_acquired(self, task, error);
		return;
	}
	confab_store_acquire_session_async(self->store,
					   confab_session_get_id(self->session),
					   NULL,
					   session_acquired_cb,
					   g_object_ref(task));
}

static void
agent_given_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabTurn *self = g_task_get_source_object(task);
	GError *error = NULL;

	if (!confab_store_set_conversation_agent_finish(CONFAB_STORE(source), result, &error)) {
		start_fail(self, task, error);
		return;
	}
	confab_session_set_agent_id(self->session, confab_agent_get_id(self->agent));
	acquire_session(self, task);
}

static void
get_session_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabTurn *self = g_task_get_source_object(task);
	g_autoptr(ConfabSession) session = NULL;
	GError *error = NULL;
	gboolean no_agent;

	session = confab_store_get_session_finish(CONFAB_STORE(source), result, &error);
	if (session == NULL) {
		start_fail(self, task, error);
		return;
	}
	/* created by the Conversations API without an agent: its first turn's
	 * agent becomes its own */
	no_agent = g_strcmp0(confab_session_get_agent_id(session), "") == 0;
	/* another owner's, another door's or another agent's session does not
	 * exist, as far as this caller can tell */
	if (g_strcmp0(confab_session_get_owner(session), self->principal->owner) != 0 ||
	    confab_session_get_source(session) != self->principal->source ||
	    (!no_agent && g_strcmp0(confab_session_get_agent_id(session),
				    confab_agent_get_id(self->agent)) != 0)) {
		start_fail(self,
			   task,
			   g_error_new(CONFAB_ERROR,
				       CONFAB_ERROR_CONVERSATION_NOT_FOUND,
				       "No conversation '%s' with agent '%s'",
				       self->request->session_id,
				       confab_agent_get_id(self->agent)));
		return;
	}
	self->session = g_steal_pointer(&session);
	if (no_agent) {
		confab_store_set_conversation_agent_async(self->store,
							  confab_session_get_id(self->session),
							  confab_agent_get_id(self->agent),
							  NULL,
							  agent_given_cb,
							  g_steal_pointer(&task));
		return;
	}
	acquire_session(self, task);
}

static gboolean
select_new_messages(ConfabTurn *self, GError **error)
{
	GPtrArray *messages = self->request->messages;
	guint first = 0;

	if (self->request->session_id != NULL) {
		/* a client may resend the whole history: what follows its last
		 * assistant message is new, the rest is already stored */
		for (guint i = messages->len; i > 0; i--) {
			ConfabMessage *msg = g_ptr_array_index(messages, i - 1);
			if (g_strcmp0(confab_message_get_role(msg), "assistant") == 0) {
				first = i;
				break;
			}
		}
		/* answering an earlier response's approval requests is new
		 * enough */
		if (first == messages->len && self->answers->len == 0) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_MESSAGES,
					 "messages",
					 "There is no new message after the last assistant "
					 "message");
			return FALSE;
		}
	}
	for (guint i = first; i < messages->len; i++)
		g_ptr_array_add(self->new_messages, g_object_ref(g_ptr_array_index(messages, i)));
	return TRUE;
}

static void
start_new_session(ConfabTurn *self, GTask *task)
{
	g_autofree gchar *id =
	    self->new_session_id != NULL
		? g_strdup(self->new_session_id)
		: confab_id_generator_next(confab_engine_get_id_generator(self->engine),
					   CONFAB_PREFIX_SESSION);
	g_autofree gchar *title = NULL;
	gint64 now = now_seconds();

	for (guint i = 0; i < self->request->messages->len && title == NULL; i++) {
		ConfabMessage *msg = g_ptr_array_index(self->request->messages, i);
		if (g_strcmp0(confab_message_get_role(msg), "user") == 0)
			title = g_strdup(g_ptr_array_index(self->request->titles, i));
	}
	self->session = confab_session_new();
	confab_session_set_id(self->session, id);
	confab_session_set_owner(self->session, self->principal->owner);
	confab_session_set_agent_id(self->session, confab_agent_get_id(self->agent));
	confab_session_set_source(self->session, self->principal->source);
	if (self->fork != NULL) {
		g_free(title);
		title = g_strdup(self->fork_title);
	}
	confab_session_set_title(self->session, title);
	confab_session_set_created_at(self->session, now);
	confab_session_set_updated_at(self->session, now);
	self->session_is_new = TRUE;
	self->history = self->fork != NULL ? g_ptr_array_ref(self->fork)
					   : g_ptr_array_new_with_free_func(g_object_unref);
	acquire_session(self, task);
}

static gboolean
resolve_agent(ConfabTurn *self, GError **error)
{
	const gchar *model = self->request->model;

	if (self->principal->agent_id != NULL && g_strcmp0(self->principal->agent_id, model) != 0) {
		confab_error_set(error,
				 CONFAB_ERROR_PERMISSION_DENIED,
				 "model",
				 "This API token is bound to another agent");
		return FALSE;
	}
	self->agent = confab_engine_lookup_agent(self->engine, model);
	if (self->agent == NULL) {
		confab_error_set_printf(error,
					CONFAB_ERROR_AGENT_NOT_FOUND,
					"model",
					"The agent '%s' does not exist",
					model);
		return FALSE;
	}
	self->provider =
	    confab_engine_get_provider(self->engine, confab_agent_get_provider(self->agent));
	if (self->provider == NULL) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_FAILED,
			    "The agent's provider '%s' is not available",
			    confab_agent_get_provider(self->agent));
		return FALSE;
	}
	g_object_ref(self->provider);
	return TRUE;
}

static void
continue_start(ConfabTurn *self, GTask *task)
{
	GError *error = NULL;

	if (self->request->session_id == NULL) {
		start_new_session(self, task);
		return;
	}
	if (!confab_id_is_valid(self->request->session_id, CONFAB_PREFIX_SESSION)) {
		confab_error_set_printf(&error,
					CONFAB_ERROR_CONVERSATION_NOT_FOUND,
					"metadata.session_id",
					"No conversation '%s'",
					self->request->session_id);
		start_fail(self, task, error);
		return;
	}
	confab_store_get_session_async(self->store,
				       self->request->session_id,
				       NULL,
				       get_session_cb,
				       g_object_ref(task));
}

/* A client tool named like one of the agent's own would be ambiguous. */
static gboolean
check_client_tools(ConfabTurn *self, GError **error)
{
	JsonNode *tools = self->request->params != NULL
			      ? json_object_get_member(self->request->params, "tools")
			      : NULL;

	for (guint i = 0; tools != NULL && JSON_NODE_HOLDS_ARRAY(tools) &&
			  i < json_array_get_length(json_node_get_array(tools));
	     i++) {
		JsonObject *tool = json_array_get_object_element(json_node_get_array(tools), i);
		JsonObject *fn = tool != NULL ? confab_json_get_object(tool, "function") : NULL;
		const gchar *name = fn != NULL ? confab_json_get_string(fn, "name") : NULL;

		for (guint j = 0; name != NULL && j < self->server_tools->len; j++) {
			ConfabToolboxTool *own = g_ptr_array_index(self->server_tools, j);
			if (g_strcmp0(own->name, name) != 0)
				continue;
			confab_error_set_printf(
			    error,
			    CONFAB_ERROR_INVALID_VALUE,
			    "tools",
			    "The tool '%s' is one of the agent's own; give yours "
			    "another name",
			    name);
			return FALSE;
		}
	}
	return TRUE;
}

static void
tools_listed_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabTurn *self = g_task_get_source_object(task);
	GError *error = NULL;

	/* a server that cannot start is listed as failed: its tools are not
	 * offered, and the turn goes on */
	self->server_tools =
	    confab_toolbox_list_tools_finish(CONFAB_TOOLBOX(source), result, &error);
	if (self->server_tools == NULL) {
		g_warning("listing the tools of agent %s: %s",
			  confab_agent_get_id(self->agent),
			  error->message);
		g_clear_error(&error);
		self->server_tools = g_ptr_array_new();
	}
	if (!check_client_tools(self, &error)) {
		start_fail(self, task, error);
		return;
	}
	continue_start(self, task);
}

/**
 * confab_turn_start_async:
 * @self: a #ConfabTurn
 * @callback: called once the turn is admitted (and, for a stream, the
 *   user's messages are committed), or refused
 * @user_data: data for @callback
 *
 * Admits the turn. The errors are the caller's to report: the agent or the
 * session does not exist or is not the caller's, the session is busy, the
 * quota is spent, the daemon is stopping, a client tool has the name of one
 * of the agent's own.
 */
void
confab_turn_start_async(ConfabTurn *self, GAsyncReadyCallback callback, gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, NULL, callback, user_data);
	GError *error = NULL;

	g_task_set_source_tag(task, confab_turn_start_async);
	if (!confab_engine_turn_begin(self->engine, self->cancellable, &error)) {
		g_task_return_error(task, error);
		return;
	}
	self->registered = TRUE;
	if (!resolve_agent(self, &error) || !select_new_messages(self, &error)) {
		start_fail(self, task, error);
		return;
	}
	/* the agent's own tools: its servers start on its first turn */
	if (confab_agent_get_mcp_servers(self->agent) != NULL) {
		confab_toolbox_list_tools_async(confab_engine_get_toolbox(self->engine),
						confab_agent_get_id(self->agent),
						confab_agent_get_mcp_servers(self->agent),
						self->cancellable,
						tools_listed_cb,
						g_object_ref(task));
		return;
	}
	continue_start(self, task);
}

gboolean
confab_turn_start_finish(ConfabTurn *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/* ---------- run ---------- */

static void
on_loop_text(const gchar *content, gpointer user_data)
{
	ConfabTurn *self = user_data;
	gint64 now = g_get_monotonic_time();

	if (self->last_text == 0)
		confab_metrics_series_observe(self->time_to_first_token,
					      (now - self->started) / 1e6);
	else
		confab_metrics_series_observe(self->inter_token_latency,
					      (now - self->last_text) / 1e6);
	self->last_text = now;
	if (self->sink != NULL && self->sink->delta != NULL)
		self->sink->delta(self, &(ConfabDelta){.content = content}, self->sink_data);
}

static void
on_loop_tool_calls(JsonArray *tool_calls, gpointer user_data)
{
	ConfabTurn *self = user_data;
	if (self->sink != NULL && self->sink->delta != NULL)
		self->sink->delta(self, &(ConfabDelta){.tool_calls = tool_calls}, self->sink_data);
}

static void
on_loop_extra(const ConfabDelta *delta, gpointer user_data)
{
	ConfabTurn *self = user_data;
	if (self->sink != NULL && self->sink->delta != NULL)
		self->sink->delta(self, delta, self->sink_data);
}

static void
on_loop_tool_event(const gchar *event_json, gpointer user_data)
{
	ConfabTurn *self = user_data;
	if (self->sink != NULL && self->sink->tool_event != NULL)
		self->sink->tool_event(self, event_json, self->sink_data);
}

static void
on_loop_approval_request(const ConfabApproval *approval, gpointer user_data)
{
	ConfabTurn *self = user_data;
	if (self->sink != NULL && self->sink->approval_request != NULL)
		self->sink->approval_request(self, approval, self->sink_data);
}

static void
on_loop_answered(gpointer user_data)
{
	ConfabTurn *self = user_data;
	if (self->sink != NULL && self->sink->answered != NULL)
		self->sink->answered(self, self->sink_data);
}

static const ConfabAgentLoopSink loop_sink = {
    .answered = on_loop_answered,
    .text = on_loop_text,
    .tool_calls = on_loop_tool_calls,
    .tool_event = on_loop_tool_event,
    .extra = on_loop_extra,
    .approval_request = on_loop_approval_request,
};

static JsonArray *
build_context(ConfabTurn *self)
{
	JsonArray *context = json_array_new();
	const gchar *instructions = confab_agent_get_instructions(self->agent);

	if (instructions != NULL && *instructions != '\0') {
		JsonObject *system = json_object_new();
		json_object_set_string_member(system, "role", "system");
		json_object_set_string_member(system, "content", instructions);
		json_array_add_object_element(context, system);
	}
	if (self->instructions != NULL) {
		JsonObject *system = json_object_new();
		json_object_set_string_member(system, "role", "system");
		json_object_set_string_member(system, "content", self->instructions);
		json_array_add_object_element(context, system);
	}
	for (guint i = 0; i < self->history->len; i++)
		confab_openai_message_append_stored(context, g_ptr_array_index(self->history, i));
	for (guint i = 0; i < self->new_messages->len; i++)
		confab_openai_message_append_stored(context,
						    g_ptr_array_index(self->new_messages, i));
	return context;
}

static ConfabMessage *
build_assistant_message(ConfabTurn *self)
{
	ConfabMessage *msg = confab_message_new();
	const gchar *text = confab_agent_loop_get_content(self->loop);
	gboolean is_content = FALSE;
	g_autoptr(GString) blocks = confab_agent_loop_steal_blocks(self->loop, &is_content);
	g_autoptr(GString) content = NULL;
	gboolean failed = self->run_error != NULL && self->status == CONFAB_MESSAGE_STATUS_FAILED;
	gint64 prompt_tokens, completion_tokens;

	if (is_content && !failed) {
		/* one text block, the whole answer: it is the content part, and
		 * the blocks are the content, held and stored once (an answer
		 * may be megabytes) */
		content = g_steal_pointer(&blocks);
		g_string_prepend_c(content, '[');
		g_string_append_c(content, ']');
	} else {
		content = g_string_new("[");
		if (*text != '\0') {
			g_string_append(content, "{\"type\":\"text\",\"text\":");
			confab_json_append_string(content, text);
			g_string_append_c(content, '}');
		}
		g_string_append_c(content, ']');
		g_string_prepend_c(blocks, '[');
	}
	if (failed) {
		const gchar *code = self->run_error->domain == CONFAB_ERROR &&
					    self->run_error->code == CONFAB_ERROR_UPSTREAM_TIMEOUT
					? "upstream_timeout"
					: "upstream_error";
		if (blocks->len > 1)
			g_string_append_c(blocks, ',');
		g_string_append(blocks, "{\"type\":\"error\",\"code\":");
		confab_json_append_string(blocks, code);
		g_string_append(blocks, ",\"message\":");
		confab_json_append_string(blocks, self->run_error->message);
		g_string_append_c(blocks, '}');
	}
	if (blocks != NULL)
		g_string_append_c(blocks, ']');
	confab_agent_loop_get_usage(self->loop, &prompt_tokens, &completion_tokens);

	confab_message_set_id(msg, self->assistant_message_id);
	confab_message_set_session_id(msg, confab_session_get_id(self->session));
	confab_message_set_role(msg, "assistant");
	confab_message_set_model(msg, confab_agent_get_id(self->agent));
	confab_message_take_content(msg, g_steal_pointer(&content));
	if (blocks != NULL)
		confab_message_take_content_blocks(msg, g_steal_pointer(&blocks));
	else
		confab_message_share_content_blocks(msg);
	confab_message_set_status(msg, self->status);
	confab_message_set_finish_reason(msg, confab_agent_loop_get_finish_reason(self->loop));
	confab_message_set_prompt_tokens(msg, prompt_tokens);
	confab_message_set_completion_tokens(msg, completion_tokens);
	confab_message_set_created_at(msg, now_seconds());
	confab_message_set_response_id(msg, self->response_id);
	set_upstream(self, msg);
	return msg;
}

static void
answer_committed_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabTurn *self = g_task_get_source_object(task);
	g_autoptr(GError) error = NULL;

	observe_commit(self);
	if (!confab_store_commit_turn_finish(CONFAB_STORE(source), result, &error)) {
		count_turn(self, "not_stored");
		confab_turn_release(self);
		/* deleted while the turn ran: gone, as for any later request */
		if (g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND)) {
			g_task_return_error(task, g_steal_pointer(&error));
			return;
		}
		g_warning("storing the turn in %s: %s",
			  confab_session_get_id(self->session),
			  error->message);
		/* a full or failing disk: 503 store_unavailable, try again later */
		if (g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_STORE_UNAVAILABLE)) {
			g_task_return_new_error(task,
						CONFAB_ERROR,
						CONFAB_ERROR_STORE_UNAVAILABLE,
						"The conversation could not be stored; try again "
						"later");
			return;
		}
		g_task_return_new_error(task,
					CONFAB_ERROR,
					CONFAB_ERROR_FAILED,
					"The answer could not be stored");
		return;
	}
	count_turn(self, confab_message_status_to_string(self->status));
	if (self->record != NULL) {
		/* the user's side went with it: the request has counted */
		g_clear_pointer(&self->record, confab_store_turn_free);
		self->quota_taken = FALSE;
		self->admitted = TRUE;
	}
	confab_turn_release(self);
	if (self->run_error != NULL) {
		g_task_return_error(task, g_error_copy(self->run_error));
		return;
	}
	g_task_return_boolean(task, TRUE);
}

/* What the answer adds to the month's usage of its owner, token and agent
 * (issue 30): committed with it, no write of its own. The month is the
 * one the request counted in (else this one). */
static ConfabStoreUsageRow *
build_use(ConfabTurn *self)
{
	ConfabStoreUsageRow *use = g_new0(ConfabStoreUsageRow, 1);
	gint64 prompt_tokens = -1;
	gint64 completion_tokens = -1;

	use->month = self->month != NULL ? g_strdup(self->month)
					 : confab_engine_current_month(self->engine);
	use->owner = g_strdup(self->principal->owner);
	use->token_id =
	    g_strdup(self->principal->token_id != NULL ? self->principal->token_id : "");
	use->agent_id = g_strdup(confab_agent_get_id(self->agent));
	use->requests = 1;
	confab_agent_loop_get_usage(self->loop, &prompt_tokens, &completion_tokens);
	use->input_tokens = (guint64)MAX(prompt_tokens, 0);
	use->output_tokens = (guint64)MAX(completion_tokens, 0);
	use->reasoning_tokens = (guint64)MAX(confab_agent_loop_get_reasoning_tokens(self->loop), 0);
	return use;
}

/* Whatever happened, the transcript says so before anyone hears back. */
static void
commit_answer(ConfabTurn *self, GTask *task)
{
	g_autoptr(ConfabStoreTurn) record =
	    self->record != NULL ? confab_store_turn_copy(self->record) : confab_store_turn_new();

	if (record->session == NULL)
		record->session = g_object_ref(self->session);
	record->assistant = build_assistant_message(self);
	record->use = build_use(self);
	if (self->tokens_apply && self->tokens_used != 0) {
		record->tokens_owner = g_strdup(self->principal->owner);
		record->tokens_token_id = g_strdup(self->principal->token_id);
		record->tokens_month = g_strdup(self->token_month);
		record->tokens = self->tokens_used;
	}
	commit(self, record, answer_committed_cb, task);
}

static void
mark_cancelled(ConfabTurn *self)
{
	self->status = CONFAB_MESSAGE_STATUS_INCOMPLETE;
	g_clear_error(&self->run_error);
	self->run_error = g_error_new_literal(CONFAB_ERROR,
					      CONFAB_ERROR_CANCELLED,
					      "The turn was cancelled before it finished");
}

/**
 * confab_turn_set_flow:
 * @self: a #ConfabTurn, not yet running
 * @flow: (nullable): the door's backpressure: while it is held, the turn
 *   makes no more of its answer (the provider stops reading its upstream,
 *   the agent loop starts no model or tool call)
 */
void
confab_turn_set_flow(ConfabTurn *self, ConfabFlow *flow)
{
	g_return_if_fail(CONFAB_IS_TURN(self));
	g_clear_pointer(&self->flow, confab_flow_unref);
	self->flow = flow != NULL ? confab_flow_ref(flow) : NULL;
}

/**
 * confab_turn_sink_drained:
 * @self: a #ConfabTurn waiting on its sink's drain
 * @delivered: whether the client took everything the sink was given
 *
 * For sinks: answers ConfabTurnSink.drain. An answer its client did not
 * fully receive is stored as incomplete.
 */
void
confab_turn_sink_drained(ConfabTurn *self, gboolean delivered)
{
	GTask *task = g_steal_pointer(&self->drain_task);

	g_return_if_fail(CONFAB_IS_TURN(self));
	if (task == NULL)
		return;
	if (!delivered && self->status == CONFAB_MESSAGE_STATUS_COMPLETED)
		mark_cancelled(self);
	commit_answer(self, task);
}

static void
loop_done_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabTurn *self = g_task_get_source_object(task);
	GError *error = NULL;

	if (confab_agent_loop_run_finish(CONFAB_AGENT_LOOP(source), result, &error)) {
		self->status = CONFAB_MESSAGE_STATUS_COMPLETED;
	} else if ((g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED) ||
		    g_cancellable_is_cancelled(self->cancellable)) &&
		   !g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM_TIMEOUT)) {
		g_clear_error(&error);
		mark_cancelled(self);
	} else {
		self->status = CONFAB_MESSAGE_STATUS_FAILED;
		if (error->domain != CONFAB_ERROR ||
		    (error->code != CONFAB_ERROR_UPSTREAM &&
		     error->code != CONFAB_ERROR_UPSTREAM_TIMEOUT)) {
			GError *wrapped = g_error_new(CONFAB_ERROR,
						      CONFAB_ERROR_UPSTREAM,
						      "The upstream failed: %s",
						      error->message);
			g_clear_error(&error);
			error = wrapped;
		}
		self->run_error = error;
	}

	/* a streaming door first hands everything to its client: the stored
	 * status then tells what the client got */
	if (self->sink != NULL && self->sink->drain != NULL &&
	    !g_cancellable_is_cancelled(self->cancellable)) {
		self->drain_task = g_steal_pointer(&task);
		self->sink->drain(self, self->sink_data);
		return;
	}
	commit_answer(self, g_steal_pointer(&task));
}

/**
 * confab_turn_run_async:
 * @self: a started #ConfabTurn
 * @callback: called once the assistant message is committed
 * @user_data: data for @callback
 *
 * Runs the agent: the model, and the agent's own tools between its calls,
 * passing each piece of the answer to the sink. Fails with the upstream's
 * error (the answer is stored as failed) or CONFAB_ERROR_CANCELLED (stored
 * as incomplete).
 */
void
confab_turn_run_async(ConfabTurn *self, GAsyncReadyCallback callback, gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, NULL, callback, user_data);
	g_autoptr(JsonArray) context = build_context(self);
	const ConfabConfig *config = confab_engine_get_config(self->engine);
	ConfabMetrics *metrics = confab_engine_get_metrics(self->engine);

	g_task_set_source_tag(task, confab_turn_run_async);
	self->loop = confab_agent_loop_new(self->agent,
					   self->provider,
					   context,
					   self->request->params,
					   self->request->stream);
	confab_agent_loop_set_sink(self->loop, &loop_sink, self);
	confab_agent_loop_set_meter(self->loop, &turn_meter, self);
	confab_agent_loop_set_flow(self->loop, self->flow);
	confab_agent_loop_set_metrics(self->loop, metrics);
	confab_agent_loop_set_router(self->loop, confab_engine_get_router(self->engine));
	self->time_to_first_token = confab_metrics_series(metrics,
							  CONFAB_METRIC_TIME_TO_FIRST_TOKEN,
							  confab_agent_get_id(self->agent));
	self->inter_token_latency = confab_metrics_series(metrics,
							  CONFAB_METRIC_INTER_TOKEN_LATENCY,
							  confab_agent_get_id(self->agent));
	/* calls that need a person wait in place (the door's client may
	 * leave: the decision still applies) */
	confab_agent_loop_set_approvals(self->loop,
					confab_engine_get_approvals(self->engine),
					self->principal->owner,
					confab_session_get_id(self->session));
	confab_agent_loop_set_elicitations(self->loop,
					   confab_engine_get_elicitations(self->engine));
	/* a response does not wait: its calls that need a person end it, and
	 * its continuation answers them */
	if (self->response_id != NULL)
		confab_agent_loop_defer_approvals(self->loop, self->response_id);
	for (guint i = 0; i < self->answers->len; i++) {
		Answer *answer = g_ptr_array_index(self->answers, i);
		confab_agent_loop_resume_call(self->loop,
					      answer->approval,
					      answer->approve,
					      answer->reason);
	}
	if (self->server_tools != NULL)
		confab_agent_loop_set_tools(self->loop,
					    confab_engine_get_toolbox(self->engine),
					    self->server_tools,
					    confab_agent_get_total_timeout(self->agent) != 0
						? confab_agent_get_total_timeout(self->agent)
						: config->upstream_total_timeout);
	confab_agent_loop_run_async(self->loop,
				    self->cancellable,
				    loop_done_cb,
				    g_steal_pointer(&task));
}

gboolean
confab_turn_run_finish(ConfabTurn *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/**
 * confab_turn_cancel:
 * @self: a #ConfabTurn
 *
 * The client left: stop the provider; what was said is stored as
 * incomplete.
 */
void
confab_turn_cancel(ConfabTurn *self)
{
	g_return_if_fail(CONFAB_IS_TURN(self));
	g_cancellable_cancel(self->cancellable);
	if (self->drain_task != NULL)
		confab_turn_sink_drained(self, FALSE);
}

/* ---------- getters ---------- */

ConfabChatRequest *
confab_turn_get_request(ConfabTurn *self)
{
	return self->request;
}

const gchar *
confab_turn_get_session_id(ConfabTurn *self)
{
	return self->session != NULL ? confab_session_get_id(self->session) : NULL;
}

const gchar *
confab_turn_get_assistant_message_id(ConfabTurn *self)
{
	return self->assistant_message_id;
}

const gchar *
confab_turn_get_completion_id(ConfabTurn *self)
{
	return self->completion_id;
}

const gchar *
confab_turn_get_model(ConfabTurn *self)
{
	return self->agent != NULL ? confab_agent_get_id(self->agent) : self->request->model;
}

gint64
confab_turn_get_created(ConfabTurn *self)
{
	return self->created;
}

const gchar *
confab_turn_get_content(ConfabTurn *self)
{
	return self->loop != NULL ? confab_agent_loop_get_content(self->loop) : "";
}

/**
 * confab_turn_get_refusal:
 *
 * Returns: (nullable): the model's refusal, if it refused
 */
const gchar *
confab_turn_get_refusal(ConfabTurn *self)
{
	return self->loop != NULL ? confab_agent_loop_get_refusal(self->loop) : NULL;
}

/**
 * confab_turn_get_reasoning:
 *
 * Returns: (nullable): the model's reasoning, when the upstream gave it
 */
const gchar *
confab_turn_get_reasoning(ConfabTurn *self)
{
	return self->loop != NULL ? confab_agent_loop_get_reasoning(self->loop) : NULL;
}

/**
 * confab_turn_get_logprobs:
 *
 * Returns: (transfer none) (nullable): the answer's log probabilities
 */
JsonObject *
confab_turn_get_logprobs(ConfabTurn *self)
{
	return self->loop != NULL ? confab_agent_loop_get_logprobs(self->loop) : NULL;
}

/**
 * confab_turn_get_target:
 * @self: a #ConfabTurn
 * @upstream_model: (out) (optional) (transfer none): its upstream model
 * @attempts: (out) (optional): the targets tried, over the turn's model calls
 *
 * Returns: (nullable): the label of the target that answered the turn's
 *   last model call (or was tried last); %NULL before any
 */
const gchar *
confab_turn_get_target(ConfabTurn *self, const gchar **upstream_model, guint *attempts)
{
	g_return_val_if_fail(CONFAB_IS_TURN(self), NULL);
	if (self->loop == NULL) {
		if (upstream_model != NULL)
			*upstream_model = NULL;
		if (attempts != NULL)
			*attempts = 0;
		return NULL;
	}
	return confab_agent_loop_get_target(self->loop, upstream_model, attempts);
}

/**
 * confab_turn_get_failed_call:
 * @self: a #ConfabTurn that ran and failed
 *
 * Returns: (nullable): the model call whose failure ended the turn: the
 *   upstream's last status and what its error said, for a door that
 *   relays a refusal; %NULL when no model call failed
 */
const ConfabProviderRequest *
confab_turn_get_failed_call(ConfabTurn *self)
{
	g_return_val_if_fail(CONFAB_IS_TURN(self), NULL);
	return self->loop != NULL ? confab_agent_loop_get_failed_call(self->loop) : NULL;
}

/**
 * confab_turn_get_tool_calls_json:
 *
 * Returns: (transfer full) (nullable): the tool calls the answer leaves to
 *   the client, as an OpenAI `tool_calls` JSON array, or %NULL if none
 */
gchar *
confab_turn_get_tool_calls_json(ConfabTurn *self)
{
	return self->loop != NULL ? confab_agent_loop_get_tool_calls_json(self->loop) : NULL;
}

const gchar *
confab_turn_get_finish_reason(ConfabTurn *self)
{
	return self->loop != NULL ? confab_agent_loop_get_finish_reason(self->loop) : "stop";
}

/**
 * confab_turn_get_usage:
 * @self: a #ConfabTurn
 * @prompt_tokens: (out): prompt tokens over every model call, or 0
 * @completion_tokens: (out): completion tokens over every model call, or 0
 *
 * Returns: %TRUE if the provider reported usage
 */
gboolean
confab_turn_get_usage(ConfabTurn *self, gint64 *prompt_tokens, gint64 *completion_tokens)
{
	gboolean known = FALSE;

	*prompt_tokens = 0;
	*completion_tokens = 0;
	if (self->loop != NULL)
		known = confab_agent_loop_get_usage(self->loop, prompt_tokens, completion_tokens);
	*prompt_tokens = MAX(*prompt_tokens, 0);
	*completion_tokens = MAX(*completion_tokens, 0);
	return known;
}

/**
 * confab_turn_get_reasoning_tokens:
 * @self: a #ConfabTurn
 *
 * Returns: the reasoning tokens the provider reported over every model
 *   call of the turn (a part of its completion tokens), or 0
 */
gint64
confab_turn_get_reasoning_tokens(ConfabTurn *self)
{
	if (self->loop == NULL)
		return 0;
	return MAX(confab_agent_loop_get_reasoning_tokens(self->loop), 0);
}

const ConfabQuotaInfo *
confab_turn_get_quota_info(ConfabTurn *self)
{
	return &self->quota;
}

/**
 * confab_turn_set_instructions:
 * @self: a #ConfabTurn, not yet running
 * @instructions: (nullable): a system message after the agent's
 *   instructions, for this turn only: neither stored nor given to later
 *   turns (the Responses API's `instructions`)
 */
void
confab_turn_set_instructions(ConfabTurn *self, const gchar *instructions)
{
	g_return_if_fail(CONFAB_IS_TURN(self));
	g_free(self->instructions);
	self->instructions = g_strdup(instructions);
}

/**
 * confab_turn_get_transcript:
 * @self: a running #ConfabTurn
 *
 * Returns: (nullable): the answer's content blocks so far, JSON objects
 *   joined by commas (no brackets); %NULL before the turn runs
 */
const gchar *
confab_turn_get_transcript(ConfabTurn *self)
{
	g_return_val_if_fail(CONFAB_IS_TURN(self), NULL);
	return self->loop != NULL ? confab_agent_loop_get_blocks(self->loop) : NULL;
}

/**
 * confab_turn_set_response_id:
 * @self: a #ConfabTurn, not yet started
 * @response_id: (nullable): the Responses API response this turn is: its
 *   messages (the user's and the answer) are stored with it
 */
/**
 * confab_turn_set_commit_first:
 * @self: a #ConfabTurn, not yet started
 *
 * Commits the user's messages before the turn runs, as a stream does,
 * whatever the request: for a turn that runs with no client waiting (a
 * background response), which others may read while it runs.
 */
void
confab_turn_set_commit_first(ConfabTurn *self)
{
	g_return_if_fail(CONFAB_IS_TURN(self));
	self->commit_first = TRUE;
}

/**
 * confab_turn_set_new_session_id:
 * @self: a #ConfabTurn, not yet started, that starts a conversation (or a
 *   fork)
 * @session_id: the id the new conversation takes, chosen before the turn
 *   starts (a background response's record names it)
 */
void
confab_turn_set_new_session_id(ConfabTurn *self, const gchar *session_id)
{
	g_return_if_fail(CONFAB_IS_TURN(self));
	g_free(self->new_session_id);
	self->new_session_id = g_strdup(session_id);
}

void
confab_turn_set_response_id(ConfabTurn *self, const gchar *response_id)
{
	g_return_if_fail(CONFAB_IS_TURN(self));
	g_free(self->response_id);
	self->response_id = g_strdup(response_id);
}

/**
 * confab_turn_set_fork:
 * @self: a #ConfabTurn, not yet started, of a request without a session
 * @history: (element-type ConfabMessage): the messages the new session
 *   starts with (copied into it, with new ids), and the model's context
 * @title: (nullable): the new session's title
 *
 * Starts the turn in a new session that holds @history: the Responses
 * API's continuation from a response that is not its conversation's latest.
 */
void
confab_turn_set_fork(ConfabTurn *self, GPtrArray *history, const gchar *title)
{
	g_return_if_fail(CONFAB_IS_TURN(self));
	g_clear_pointer(&self->fork, g_ptr_array_unref);
	self->fork = g_ptr_array_ref(history);
	g_free(self->fork_title);
	self->fork_title = g_strdup(title);
}

/**
 * confab_turn_add_approval_answer:
 * @self: a #ConfabTurn of a response, not yet started
 * @approval: a pending approval that the response it continues asked
 * @approve: the person's answer
 * @reason: (nullable): what they said
 *
 * The turn decides @approval as it begins to run, then runs the call or
 * tells the model the user declined, before the model is called. A turn
 * with answers needs no new message.
 */
void
confab_turn_add_approval_answer(ConfabTurn *self,
				const ConfabApproval *approval,
				gboolean approve,
				const gchar *reason)
{
	Answer *answer;

	g_return_if_fail(CONFAB_IS_TURN(self));
	g_return_if_fail(approval != NULL && approval->response_id != NULL);
	answer = g_new0(Answer, 1);
	answer->approval = confab_approval_copy(approval);
	answer->approve = approve;
	answer->reason = g_strdup(reason);
	g_ptr_array_add(self->answers, answer);
}

/**
 * confab_turn_get_agent:
 *
 * Returns: (transfer none) (nullable): the turn's agent, once started
 */
ConfabAgent *
confab_turn_get_agent(ConfabTurn *self)
{
	g_return_val_if_fail(CONFAB_IS_TURN(self), NULL);
	return self->agent;
}
