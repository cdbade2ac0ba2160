/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "model/confab-agent.h"
#include "model/confab-approval.h"
#include "model/confab-elicitation-request.h"
#include "model/confab-enums.h"
#include "model/confab-message.h"
#include "model/confab-response-record.h"
#include "model/confab-session.h"
#include "model/confab-token.h"

G_BEGIN_DECLS

/**
 * ConfabStorePage:
 * @items: (element-type GObject): the items of the page, in the order asked
 * @has_more: whether more items follow the last one
 *
 * One page of a cursor-paginated list.
 */
typedef struct {
	GPtrArray *items;
	gboolean has_more;
} ConfabStorePage;

ConfabStorePage *
confab_store_page_new(void);
void
confab_store_page_free(ConfabStorePage *page);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabStorePage, confab_store_page_free)

/**
 * ConfabStoreSessionQuery:
 * @owner: (nullable): only this owner's sessions; %NULL for everyone's
 * @agent_id: (nullable): only this agent's sessions
 * @source: a #ConfabSessionSource, or -1 for every source
 * @after: (nullable): a session id cursor; the page starts after it
 * @order: newest or oldest first
 * @limit: the page size
 */
typedef struct {
	gchar *owner;
	gchar *agent_id;
	gint source;
	gchar *after;
	ConfabOrder order;
	guint limit;
} ConfabStoreSessionQuery;

/**
 * ConfabStoreMessageQuery:
 * @session_id: the session
 * @after: (nullable): a message id cursor
 * @order: newest or oldest first
 * @limit: the page size
 * @from: the page starts at @after itself, not after it (a cursor whose
 *   message has more to give: the Conversations API's items)
 */
typedef struct {
	gchar *session_id;
	gchar *after;
	ConfabOrder order;
	guint limit;
	gboolean from;
} ConfabStoreMessageQuery;

void
confab_store_session_query_clear(ConfabStoreSessionQuery *query);
void
confab_store_message_query_clear(ConfabStoreMessageQuery *query);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ConfabStoreSessionQuery, confab_store_session_query_clear)
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ConfabStoreMessageQuery, confab_store_message_query_clear)

/**
 * ConfabStoreUsageRow:
 * @month: the month, `YYYY-MM` (UTC)
 * @owner: whose turns; "" in a row grouped by token or agent
 * @token_id: the token they came with; "" for none (D-Bus Chat.Send) and in
 *   a row grouped by owner or agent
 * @agent_id: the agent that answered; "" in a row grouped by owner or token
 * @requests: turns whose answer was stored
 * @input_tokens: input (prompt) tokens, as the upstream reported them
 * @output_tokens: output (completion) tokens, reasoning included
 * @reasoning_tokens: of @output_tokens, those the model reasoned with
 *
 * A month's usage (issue 30), kept per owner, token and agent: added to
 * with each turn's answer, in its commit (ConfabStoreTurn.use); read by
 * confab_store_list_usage_by_async(), summed by one of the three.
 */
typedef struct {
	gchar *month;
	gchar *owner;
	gchar *token_id;
	gchar *agent_id;
	guint64 requests;
	guint64 input_tokens;
	guint64 output_tokens;
	guint64 reasoning_tokens;
	/* the tokens the month's budgets counted (settled reservations), which
	 * the SQLite store keeps in the row to restore its counts; 0 when read */
	gint64 tokens;
} ConfabStoreUsageRow;

ConfabStoreUsageRow *
confab_store_usage_row_copy(const ConfabStoreUsageRow *row);
void
confab_store_usage_row_free(ConfabStoreUsageRow *row);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabStoreUsageRow, confab_store_usage_row_free)

/**
 * ConfabStoreUsageBy:
 * @CONFAB_STORE_USAGE_BY_OWNER: a row per owner
 * @CONFAB_STORE_USAGE_BY_TOKEN: a row per token (and "" for none)
 * @CONFAB_STORE_USAGE_BY_AGENT: a row per agent
 *
 * How confab_store_list_usage_by_async() sums a month's usage.
 */
typedef enum {
	CONFAB_STORE_USAGE_BY_OWNER,
	CONFAB_STORE_USAGE_BY_TOKEN,
	CONFAB_STORE_USAGE_BY_AGENT,
} ConfabStoreUsageBy;

/**
 * ConfabStoreTurn:
 * @session: the session; inserted when @session_is_new, else its
 *   updated-at is refreshed and it must still exist
 * @session_is_new: whether to create @session
 * @messages: (element-type ConfabMessage): the user's side: messages to
 *   append (may be empty)
 * @usage_owner: (nullable): the owner whose request this turn counted;
 *   backends that count in memory make the count durable here
 * @usage_month: (nullable): the month of that count, as `YYYY-MM`
 * @assistant: (nullable): the answer
 * @unfinished: (nullable): with a stream's user side, its answer as it is
 *   to be stored (incomplete, empty) should the daemon running the turn die
 *   before it commits @assistant; a store shared by several daemons keeps it
 *   with the session's lease and stores it when it reclaims the lease of a
 *   daemon that died
 *
 * What a turn writes, in one transaction: a JSON turn writes both sides at
 * once; a stream writes the user's side before its first byte and the
 * answer at its end. With the answer, where a token budget applies,
 * @tokens (what the turn's model calls used) is added to the month's count
 * of @tokens_owner and @tokens_token_id (a store that counts its tokens in
 * memory keeps them so over a restart; PostgreSQL counts them as they are
 * taken, and ignores these). @use (nullable), with the answer: what the
 * turn adds to the month's usage of its owner, token and agent, added to
 * their row in the same transaction (no write of its own).
 */
typedef struct {
	ConfabSession *session;
	gboolean session_is_new;
	GPtrArray *messages;
	gchar *usage_owner;
	gchar *usage_month;
	ConfabMessage *assistant;
	ConfabMessage *unfinished;
	gchar *tokens_owner;
	gchar *tokens_token_id;
	gchar *tokens_month;
	gint64 tokens;
	ConfabStoreUsageRow *use;
} ConfabStoreTurn;

ConfabStoreTurn *
confab_store_turn_new(void);
ConfabStoreTurn *
confab_store_turn_copy(const ConfabStoreTurn *turn);
void
confab_store_turn_free(ConfabStoreTurn *turn);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabStoreTurn, confab_store_turn_free)

/**
 * ConfabStoreUsage:
 * @owner: whose
 * @month: the month counted, `YYYY-MM`
 * @requests: requests counted for the owner in @month
 * @limit: the owner's monthly quota; 0 when unlimited
 * @is_override: whether @limit is the owner's own rather than the default
 * @admitted: from confab_store_admit_quota_async(): whether the request was
 *   counted (%FALSE: the quota is spent, or @rate_limited)
 * @rpm: from confab_store_admit_quota_async(): the owner's requests per
 *   minute; 0 when unlimited
 * @rate_limited: from confab_store_admit_quota_async(): refused because
 *   the rate is spent (the monthly quota was not counted)
 * @rate_remaining: requests the rate admits at once after this one
 * @rate_reset_ms: milliseconds until the rate is whole again
 * @retry_after_ms: when @rate_limited: milliseconds until a request would be
 *   admitted
 * @max_parallel: the owner's turns in flight at most; 0 when unlimited
 * @parallel_limited: refused because @max_parallel turns are in flight
 *   (also sets @rate_limited)
 * @parallel_taken: a turn's slot was taken, to be given back with
 *   confab_store_release_parallel() (also when the month refused it)
 * @token_parallel_taken: a turn's slot of the token's was taken, to be
 *   given back with confab_store_release_parallel() on the token's id
 *
 * The rate members (@rpm, @rate_remaining, @rate_reset_ms,
 * @retry_after_ms) describe the tighter of the owner's and the token's
 * rates: the one that refused, else the one with fewer requests left.
 *
 * An owner's quota and use, as the store sees them.
 */
typedef struct {
	gchar *owner;
	gchar *month;
	guint64 requests;
	guint64 limit;
	gboolean is_override;
	gboolean admitted;
	guint64 rpm;
	gboolean rate_limited;
	guint64 rate_remaining;
	gint64 rate_reset_ms;
	gint64 retry_after_ms;
	guint64 max_parallel;
	gboolean parallel_limited;
	gboolean parallel_taken;
	gboolean token_parallel_taken;
} ConfabStoreUsage;

void
confab_store_usage_free(ConfabStoreUsage *usage);

/**
 * ConfabStoreAdmission:
 * @owner: whose request
 * @month: the month to count it in, `YYYY-MM`; %NULL: the month is not
 *   counted (D-Bus Chat.Send: the monthly quota is the v1 API's), only
 *   the rates and turns in flight hold
 * @default_limit: the quota of owners without one of their own; 0 for none
 * @rpm: the owner's requests per minute (its own, else `[quota]`'s); 0 for none
 * @max_parallel: the owner's turns in flight at most; 0 for none
 * @token_id: (nullable): the token the request came with
 * @token_rpm: the token's own requests per minute; 0 for none
 * @token_max_parallel: the token's own turns in flight at most; 0 for none
 *
 * What one admission checks: the owner's limits and the token's, each
 * kept on its own (a token's rate is its own bucket), so that the tighter
 * holds.
 */
typedef struct {
	const gchar *owner;
	const gchar *month;
	guint64 default_limit;
	guint64 rpm;
	guint64 max_parallel;
	const gchar *token_id;
	guint64 token_rpm;
	guint64 token_max_parallel;
} ConfabStoreAdmission;

/**
 * ConfabStoreTokens:
 * @owner: whose model call
 * @token_id: (nullable): the token its turn came with
 * @month: the month its tokens count in, `YYYY-MM`
 * @tpm: the owner's tokens per minute (its own, else `[quota]`'s); 0 for none
 * @monthly: the owner's tokens per month; 0 for none
 * @token_tpm: the token's own tokens per minute; 0 for none
 * @token_monthly: the token's own tokens per month; 0 for none
 * @tokens: tokens taken: a reservation (above 0), or a settlement's
 *   difference (the reported usage less the reservation; below 0 gives
 *   back)
 * @force: never refuse: a later call of an admitted turn, or a settlement
 *
 * One reservation or settlement of tokens against the budgets of an owner
 * and of its token (issue 30): a continuous tokens-per-minute bucket
 * (GCRA weighted by the tokens) and a month's count, each kept per owner
 * and per token.
 */
typedef struct {
	const gchar *owner;
	const gchar *token_id;
	const gchar *month;
	guint64 tpm;
	guint64 monthly;
	guint64 token_tpm;
	guint64 token_monthly;
	gint64 tokens;
	gboolean force;
} ConfabStoreTokens;

/**
 * ConfabStoreTokenVerdict:
 * @admitted: whether the tokens were taken (always, with @force)
 * @monthly_spent: refused because a month's budget cannot hold them
 * @tpm: the tokens per minute the headers describe (the tighter of the
 *   owner's and the token's, or the one that refused); 0 for none
 * @tpm_remaining: tokens the rate would take at once now
 * @tpm_reset_ms: milliseconds until the rate is whole again
 * @retry_after_ms: when refused for the rate: milliseconds until the tokens
 *   would fit
 *
 * What confab_store_take_tokens_async() decided.
 */
typedef struct {
	gboolean admitted;
	gboolean monthly_spent;
	guint64 tpm;
	guint64 tpm_remaining;
	gint64 tpm_reset_ms;
	gint64 retry_after_ms;
} ConfabStoreTokenVerdict;

gint64
confab_store_token_cost(gint64 tokens, guint64 tpm);
gboolean
confab_store_token_rate_take(gint64 *tat, gint64 now, guint64 tpm, gint64 tokens, gboolean force);
void
confab_store_token_verdict_set_rate(ConfabStoreTokenVerdict *verdict,
				    guint64 tpm,
				    gint64 tat,
				    gint64 now,
				    gint64 tokens,
				    gboolean admitted);

/**
 * ConfabStoreLimits:
 * @kind: `owner` or `token`
 * @id: the owner's name, or the token's id (`tok_…`)
 * @rpm: requests per minute; 0 for none
 * @tpm: tokens per minute; 0 for none
 * @max_parallel: turns in flight at most; 0 for none
 * @monthly_tokens: tokens a month; 0 for none
 *
 * An owner's or a token's own limits, as stored (issue 30).
 */
typedef struct {
	gchar *kind;
	gchar *id;
	guint64 rpm;
	guint64 tpm;
	guint64 max_parallel;
	guint64 monthly_tokens;
} ConfabStoreLimits;

void
confab_store_limits_free(ConfabStoreLimits *limits);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabStoreLimits, confab_store_limits_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabStoreUsage, confab_store_usage_free)

/**
 * ConfabStoreSearchHit:
 * @session: a conversation whose title or messages match every term
 * @snippet: (nullable): a short piece of its text around a match, on one
 *   line, for people
 *
 * One result of confab_store_search_sessions_async().
 */
typedef struct {
	ConfabSession *session;
	gchar *snippet;
} ConfabStoreSearchHit;

void
confab_store_search_hit_free(ConfabStoreSearchHit *hit);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabStoreSearchHit, confab_store_search_hit_free)

/* What confab_store_search_sessions_async() takes at most. */
#define CONFAB_STORE_SEARCH_MAX_TERMS	 16
#define CONFAB_STORE_SEARCH_MAX_TERM_LEN 64
#define CONFAB_STORE_SEARCH_MAX_RESULTS	 100

/**
 * ConfabStoreChange:
 * @CONFAB_STORE_CHANGE_AGENTS: agents were created, changed or deleted
 * @CONFAB_STORE_CHANGE_TOKENS: tokens were created or revoked
 * @CONFAB_STORE_CHANGE_QUOTAS: a quota was set
 * @CONFAB_STORE_CHANGE_ALL: anything may have changed (after a reconnect)
 * @CONFAB_STORE_CHANGE_LIMITS: an owner's or a token's limits were set
 *
 * What ConfabStore::changed says.
 */
typedef enum {
	CONFAB_STORE_CHANGE_AGENTS,
	CONFAB_STORE_CHANGE_TOKENS,
	CONFAB_STORE_CHANGE_QUOTAS,
	CONFAB_STORE_CHANGE_ALL,
	CONFAB_STORE_CHANGE_LIMITS,
} ConfabStoreChange;

#define CONFAB_TYPE_STORE (confab_store_get_type())
G_DECLARE_INTERFACE(ConfabStore, confab_store, CONFAB, STORE, GObject)

/**
 * ConfabStoreInterface:
 *
 * The storage backend, and the one place where what several daemons share
 * lives: agents, tokens, quotas and their counts, sessions and which of
 * them has a turn running. SQLite implements it (#ConfabStoreSqlite); a
 * PostgreSQL backend implements the same vfuncs, making each operation
 * atomic across instances.
 *
 * Every operation is asynchronous and completes through a #GTask in the
 * caller's thread-default main context. A write completes once committed
 * (with SQLite in WAL mode and synchronous=NORMAL, committed means safe from
 * a crash of confabd, though a power loss may take the last transactions
 * back). Reads never run on the caller's thread.
 *
 * ::changed is emitted, in the main context the store was created in, when
 * agents, tokens or quotas change other than through this store object
 * (another instance sharing the database): holders of caches reload.
 */
typedef struct _ConfabStoreCall ConfabStoreCall;

/*
 * The asynchronous calls, GIO-style, each public one documented in
 * confab-store.c: CONFAB_STORE_ASYNC(name, own arguments…) declares
 * `void confab_store_<name>_async(ConfabStore *self, own arguments…,
 * GCancellable *cancellable, GAsyncReadyCallback callback, gpointer
 * user_data)`, CONFAB_STORE_FINISH(Type, name) declares
 * `Type confab_store_<name>_finish(ConfabStore *self, GAsyncResult *result,
 * GError **error)`, and CONFAB_STORE_VFUNC(name, own arguments…) the
 * interface's member `name` of the _async's signature.
 */
#define CONFAB_STORE_ASYNC(name, ...)                                                              \
	void confab_store_##name##_async(ConfabStore *self,                                        \
					 ##__VA_ARGS__,                                            \
					 GCancellable *cancellable,                                \
					 GAsyncReadyCallback callback,                             \
					 gpointer user_data)
#define CONFAB_STORE_FINISH(Type, name)                                                            \
	Type confab_store_##name##_finish(ConfabStore *self, GAsyncResult *result, GError **error)
#define CONFAB_STORE_VFUNC(name, ...)                                                              \
	void (*name)(ConfabStore * self,                                                           \
		     ##__VA_ARGS__,                                                                \
		     GCancellable * cancellable,                                                   \
		     GAsyncReadyCallback callback,                                                 \
		     gpointer user_data)

struct _ConfabStoreInterface {
	GTypeInterface parent_iface;

	/* every operation described once (confab-store-call.h): runs @call on
	 * the backend's threads or connections and completes @task
	 * (transfer full) with its result */
	void (*run)(ConfabStore *self, ConfabStoreCall *call, GTask *task);

	/* administration */
	CONFAB_STORE_VFUNC(set_quota, const gchar *owner, guint64 monthly_requests);
	CONFAB_STORE_VFUNC(get_usage,
			   const gchar *owner,
			   const gchar *month,
			   guint64 default_limit);
	CONFAB_STORE_VFUNC(list_usage, const gchar *month, guint64 default_limit);

	/* turns */
	CONFAB_STORE_VFUNC(admit_quota, const ConfabStoreAdmission *admission);
	void (*release_quota)(ConfabStore *self, const gchar *owner, const gchar *month);
	void (*release_parallel)(ConfabStore *self, const gchar *owner);
	CONFAB_STORE_VFUNC(acquire_session, const gchar *session_id);
	void (*release_session)(ConfabStore *self, const gchar *session_id);
	/* answers a non-NULL pointer when a turn holds the session */
	void (*session_is_running)(ConfabStore *self,
				   const gchar *session_id,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
	void (*commit_turn)(ConfabStore *self,
			    const ConfabStoreTurn *turn,
			    GCancellable *cancellable,
			    GAsyncReadyCallback callback,
			    gpointer user_data);

	/* full-text search (a backend without it leaves it NULL) */
	void (*search_sessions)(ConfabStore *self,
				const gchar *owner,
				const gchar *const *terms,
				guint limit,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);

	/* lifecycle */
	void (*close)(ConfabStore *self);

	/* optional, both or neither: admit_quota and acquire_session answered
	 * at once, by a store that keeps their answers in memory (a turn
	 * saves a task and a main-loop round each) */
	ConfabStoreUsage *(*admit_quota_now)(ConfabStore *self,
					     const ConfabStoreAdmission *admission);
	gboolean (*acquire_session_now)(ConfabStore *self, const gchar *session_id, GError **error);

	/* tokens: reservations and settlements (issue 30); take_tokens_now
	 * with the *_now pair above */
	CONFAB_STORE_VFUNC(take_tokens, const ConfabStoreTokens *tokens);
	ConfabStoreTokenVerdict (*take_tokens_now)(ConfabStore *self,
						   const ConfabStoreTokens *tokens);
};

CONFAB_STORE_ASYNC(load_agents);
CONFAB_STORE_FINISH(GPtrArray *, load_agents);
CONFAB_STORE_ASYNC(load_tokens);
CONFAB_STORE_FINISH(GPtrArray *, load_tokens);

CONFAB_STORE_ASYNC(save_agent, ConfabAgent *agent);
CONFAB_STORE_FINISH(gboolean, save_agent);
CONFAB_STORE_ASYNC(delete_agent, const gchar *agent_id, gint64 deleted_at);
CONFAB_STORE_FINISH(gboolean, delete_agent);
CONFAB_STORE_ASYNC(save_token, ConfabToken *token);
CONFAB_STORE_FINISH(gboolean, save_token);
CONFAB_STORE_ASYNC(set_quota, const gchar *owner, guint64 monthly_requests);
CONFAB_STORE_FINISH(gboolean, set_quota);
CONFAB_STORE_ASYNC(get_usage, const gchar *owner, const gchar *month, guint64 default_limit);
CONFAB_STORE_FINISH(ConfabStoreUsage *, get_usage);
CONFAB_STORE_ASYNC(list_usage, const gchar *month, guint64 default_limit);
CONFAB_STORE_FINISH(GPtrArray *, list_usage);
CONFAB_STORE_ASYNC(list_usage_by, const gchar *month, ConfabStoreUsageBy by, const gchar *owner);
CONFAB_STORE_FINISH(GPtrArray *, list_usage_by);

gint64
confab_store_rate_interval(guint64 rpm);
gboolean
confab_store_rate_admit(gint64 *tat, gint64 now, guint64 rpm);
void
confab_store_usage_set_rate(ConfabStoreUsage *usage,
			    guint64 rpm,
			    gint64 tat,
			    gint64 now,
			    gboolean admitted);
void
confab_store_usage_set_token_rate(ConfabStoreUsage *usage,
				  guint64 rpm,
				  gint64 tat,
				  gint64 now,
				  gboolean admitted);
CONFAB_STORE_ASYNC(take_tokens, const ConfabStoreTokens *tokens);
gboolean
confab_store_take_tokens_finish(ConfabStore *self,
				GAsyncResult *result,
				ConfabStoreTokenVerdict *verdict,
				GError **error);
ConfabStoreTokenVerdict
confab_store_take_tokens_now(ConfabStore *self, const ConfabStoreTokens *tokens);
CONFAB_STORE_ASYNC(admit, const ConfabStoreAdmission *admission);
ConfabStoreUsage *
confab_store_admit_now(ConfabStore *self, const ConfabStoreAdmission *admission);
CONFAB_STORE_ASYNC(load_limits);
CONFAB_STORE_FINISH(GPtrArray *, load_limits);
CONFAB_STORE_ASYNC(set_limits, const gchar *kind, const gchar *id, const gint64 values[4]);
CONFAB_STORE_FINISH(gboolean, set_limits);
CONFAB_STORE_ASYNC(admit_quota,
		   const gchar *owner,
		   const gchar *month,
		   guint64 default_limit,
		   guint64 rpm,
		   guint64 max_parallel);
CONFAB_STORE_FINISH(ConfabStoreUsage *, admit_quota);
void
confab_store_release_quota(ConfabStore *self, const gchar *owner, const gchar *month);
void
confab_store_release_parallel(ConfabStore *self, const gchar *owner);
gboolean
confab_store_answers_now(ConfabStore *self);
ConfabStoreUsage *
confab_store_admit_quota_now(ConfabStore *self,
			     const gchar *owner,
			     const gchar *month,
			     guint64 default_limit,
			     guint64 rpm,
			     guint64 max_parallel);
gboolean
confab_store_acquire_session_now(ConfabStore *self, const gchar *session_id, GError **error);
CONFAB_STORE_ASYNC(acquire_session, const gchar *session_id);
CONFAB_STORE_FINISH(gboolean, acquire_session);
void
confab_store_release_session(ConfabStore *self, const gchar *session_id);
void
confab_store_session_is_running_async(ConfabStore *self,
				      const gchar *session_id,
				      GCancellable *cancellable,
				      GAsyncReadyCallback callback,
				      gpointer user_data);
gboolean
confab_store_session_is_running_finish(ConfabStore *self,
				       GAsyncResult *result,
				       gboolean *running,
				       GError **error);
CONFAB_STORE_ASYNC(commit_turn, const ConfabStoreTurn *turn);
CONFAB_STORE_FINISH(gboolean, commit_turn);
CONFAB_STORE_ASYNC(delete_session, const gchar *session_id);
CONFAB_STORE_FINISH(gboolean, delete_session);

CONFAB_STORE_ASYNC(create_conversation, ConfabSession *session, GPtrArray *messages);
CONFAB_STORE_FINISH(gboolean, create_conversation);
CONFAB_STORE_ASYNC(set_conversation_metadata,
		   const gchar *session_id,
		   const gchar *metadata,
		   gint64 updated_at);
CONFAB_STORE_FINISH(gboolean, set_conversation_metadata);
CONFAB_STORE_ASYNC(set_conversation_agent, const gchar *session_id, const gchar *agent_id);
CONFAB_STORE_FINISH(gboolean, set_conversation_agent);
CONFAB_STORE_ASYNC(append_messages,
		   const gchar *session_id,
		   GPtrArray *messages,
		   gint64 created_at);
CONFAB_STORE_FINISH(gboolean, append_messages);
CONFAB_STORE_ASYNC(get_message, const gchar *session_id, const gchar *message_id);
CONFAB_STORE_FINISH(ConfabMessage *, get_message);
CONFAB_STORE_ASYNC(delete_message, const gchar *session_id, const gchar *message_id);
CONFAB_STORE_FINISH(gboolean, delete_message);
CONFAB_STORE_ASYNC(set_message_content,
		   const gchar *session_id,
		   const gchar *message_id,
		   const gchar *content,
		   const gchar *content_blocks);
CONFAB_STORE_FINISH(gboolean, set_message_content);
CONFAB_STORE_ASYNC(get_session, const gchar *session_id);
CONFAB_STORE_FINISH(ConfabSession *, get_session);
CONFAB_STORE_ASYNC(get_history, const gchar *session_id);
CONFAB_STORE_FINISH(GPtrArray *, get_history);
CONFAB_STORE_ASYNC(list_sessions, const ConfabStoreSessionQuery *query);
CONFAB_STORE_FINISH(ConfabStorePage *, list_sessions);
CONFAB_STORE_ASYNC(list_messages, const ConfabStoreMessageQuery *query);
CONFAB_STORE_FINISH(ConfabStorePage *, list_messages);

void
confab_store_search_sessions_async(ConfabStore *self,
				   const gchar *owner,
				   const gchar *const *terms,
				   guint limit,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
GPtrArray *
confab_store_search_sessions_finish(ConfabStore *self, GAsyncResult *result, GError **error);
gchar *
confab_store_search_snippet(const gchar *text, const gchar *const *terms, guint *n_matched);

CONFAB_STORE_ASYNC(save_approval, const ConfabApproval *approval);
CONFAB_STORE_FINISH(gboolean, save_approval);
CONFAB_STORE_ASYNC(get_approval, const gchar *approval_id);
CONFAB_STORE_FINISH(ConfabApproval *, get_approval);
void
confab_store_decide_approval_async(ConfabStore *self,
				   const ConfabApproval *decision,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
ConfabApproval *
confab_store_decide_approval_finish(ConfabStore *self, GAsyncResult *result, GError **error);
CONFAB_STORE_ASYNC(list_approvals, const gchar *owner, const gchar *agent_id, guint limit);
CONFAB_STORE_FINISH(GPtrArray *, list_approvals);

CONFAB_STORE_ASYNC(save_elicitation, const ConfabElicitationRequest *request);
CONFAB_STORE_FINISH(gboolean, save_elicitation);
CONFAB_STORE_ASYNC(get_elicitation, const gchar *elicitation_id);
CONFAB_STORE_FINISH(ConfabElicitationRequest *, get_elicitation);
CONFAB_STORE_ASYNC(answer_elicitation, const ConfabElicitationRequest *answer);
CONFAB_STORE_FINISH(gboolean, answer_elicitation);
CONFAB_STORE_ASYNC(list_elicitations, const gchar *owner, const gchar *agent_id, guint limit);
CONFAB_STORE_FINISH(GPtrArray *, list_elicitations);

void
confab_store_emit_changed(ConfabStore *self, ConfabStoreChange change);
void
confab_store_close(ConfabStore *self);
CONFAB_STORE_ASYNC(ping);
CONFAB_STORE_FINISH(gboolean, ping);

CONFAB_STORE_ASYNC(get_response, const gchar *response_id);
CONFAB_STORE_FINISH(GPtrArray *, get_response);
void
confab_store_delete_response_async(ConfabStore *self,
				   const gchar *response_id,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
gboolean
confab_store_delete_response_finish(ConfabStore *self, GAsyncResult *result, GError **error);
CONFAB_STORE_ASYNC(save_response, const ConfabResponseRecord *record, guint max_background);
CONFAB_STORE_FINISH(gboolean, save_response);
CONFAB_STORE_ASYNC(get_response_record, const gchar *response_id);
CONFAB_STORE_FINISH(ConfabResponseRecord *, get_response_record);
CONFAB_STORE_ASYNC(end_response,
		   const gchar *response_id,
		   const gchar *status,
		   const gchar *error_json,
		   gint64 completed_at,
		   const ConfabResponseEvents *events);
CONFAB_STORE_FINISH(gboolean, end_response);
CONFAB_STORE_ASYNC(list_running_responses,
		   const gchar *owner,
		   const gchar *session_id,
		   guint limit);
CONFAB_STORE_FINISH(GPtrArray *, list_running_responses);
CONFAB_STORE_ASYNC(cancel_response, const gchar *response_id);
CONFAB_STORE_FINISH(gboolean, cancel_response);
CONFAB_STORE_ASYNC(append_response_events,
		   const gchar *response_id,
		   const ConfabResponseEvents *events);
CONFAB_STORE_FINISH(gboolean, append_response_events);
CONFAB_STORE_ASYNC(list_response_events, const gchar *response_id, gint64 after);
CONFAB_STORE_FINISH(GPtrArray *, list_response_events);
CONFAB_STORE_ASYNC(fail_orphan_responses, const gchar *error_json, gint64 now);
CONFAB_STORE_FINISH(gboolean, fail_orphan_responses);
CONFAB_STORE_ASYNC(drop_response_events, gint64 before);
CONFAB_STORE_FINISH(gboolean, drop_response_events);

CONFAB_STORE_ASYNC(save_mcp_oauth,
		   const gchar *agent_id,
		   const gchar *server,
		   const gchar *state,
		   const gchar *data,
		   gint64 version);
CONFAB_STORE_FINISH(gboolean, save_mcp_oauth);
CONFAB_STORE_ASYNC(get_mcp_oauth, const gchar *agent_id, const gchar *server);
CONFAB_STORE_FINISH(gchar *, get_mcp_oauth);
CONFAB_STORE_ASYNC(find_mcp_oauth_state, const gchar *state);
CONFAB_STORE_FINISH(gchar **, find_mcp_oauth_state);
CONFAB_STORE_ASYNC(claim_mcp_oauth_state, const gchar *state);
CONFAB_STORE_FINISH(gboolean, claim_mcp_oauth_state);

G_END_DECLS
