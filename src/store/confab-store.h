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
 * answer at its end.
 */
typedef struct {
	ConfabSession *session;
	gboolean session_is_new;
	GPtrArray *messages;
	gchar *usage_owner;
	gchar *usage_month;
	ConfabMessage *assistant;
	ConfabMessage *unfinished;
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
} ConfabStoreUsage;

void
confab_store_usage_free(ConfabStoreUsage *usage);
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
 *
 * What ConfabStore::changed says.
 */
typedef enum {
	CONFAB_STORE_CHANGE_AGENTS,
	CONFAB_STORE_CHANGE_TOKENS,
	CONFAB_STORE_CHANGE_QUOTAS,
	CONFAB_STORE_CHANGE_ALL,
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

struct _ConfabStoreInterface {
	GTypeInterface parent_iface;

	/* every operation described once (confab-store-call.h): runs @call on
	 * the backend's threads or connections and completes @task
	 * (transfer full) with its result */
	void (*run)(ConfabStore *self, ConfabStoreCall *call, GTask *task);

	/* administration */
	void (*set_quota)(ConfabStore *self,
			  const gchar *owner,
			  guint64 monthly_requests,
			  GCancellable *cancellable,
			  GAsyncReadyCallback callback,
			  gpointer user_data);
	void (*get_usage)(ConfabStore *self,
			  const gchar *owner,
			  const gchar *month,
			  guint64 default_limit,
			  GCancellable *cancellable,
			  GAsyncReadyCallback callback,
			  gpointer user_data);
	void (*list_usage)(ConfabStore *self,
			   const gchar *month,
			   guint64 default_limit,
			   GCancellable *cancellable,
			   GAsyncReadyCallback callback,
			   gpointer user_data);

	/* turns */
	void (*admit_quota)(ConfabStore *self,
			    const gchar *owner,
			    const gchar *month,
			    guint64 default_limit,
			    guint64 rpm,
			    guint64 max_parallel,
			    GCancellable *cancellable,
			    GAsyncReadyCallback callback,
			    gpointer user_data);
	void (*release_quota)(ConfabStore *self, const gchar *owner, const gchar *month);
	void (*release_parallel)(ConfabStore *self, const gchar *owner);
	void (*acquire_session)(ConfabStore *self,
				const gchar *session_id,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
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

	/* approvals: tool calls waiting for a person (any instance decides) */
	void (*decide_approval)(ConfabStore *self,
				const ConfabApproval *decision,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
	/* the Responses API: the messages stored with a response id */
	void (*delete_response)(ConfabStore *self,
				const gchar *response_id,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);

	/* optional, both or neither: admit_quota and acquire_session answered
	 * at once, by a store that keeps their answers in memory (a turn
	 * saves a task and a main-loop round each) */
	ConfabStoreUsage *(*admit_quota_now)(ConfabStore *self,
					     const gchar *owner,
					     const gchar *month,
					     guint64 default_limit,
					     guint64 rpm,
					     guint64 max_parallel);
	gboolean (*acquire_session_now)(ConfabStore *self, const gchar *session_id, GError **error);
};

void
confab_store_load_agents_async(ConfabStore *self,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
GPtrArray *
confab_store_load_agents_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_load_tokens_async(ConfabStore *self,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
GPtrArray *
confab_store_load_tokens_finish(ConfabStore *self, GAsyncResult *result, GError **error);

void
confab_store_save_agent_async(ConfabStore *self,
			      ConfabAgent *agent,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data);
gboolean
confab_store_save_agent_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_delete_agent_async(ConfabStore *self,
				const gchar *agent_id,
				gint64 deleted_at,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
gboolean
confab_store_delete_agent_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_save_token_async(ConfabStore *self,
			      ConfabToken *token,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data);
gboolean
confab_store_save_token_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_set_quota_async(ConfabStore *self,
			     const gchar *owner,
			     guint64 monthly_requests,
			     GCancellable *cancellable,
			     GAsyncReadyCallback callback,
			     gpointer user_data);
gboolean
confab_store_set_quota_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_get_usage_async(ConfabStore *self,
			     const gchar *owner,
			     const gchar *month,
			     guint64 default_limit,
			     GCancellable *cancellable,
			     GAsyncReadyCallback callback,
			     gpointer user_data);
ConfabStoreUsage *
confab_store_get_usage_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_list_usage_async(ConfabStore *self,
			      const gchar *month,
			      guint64 default_limit,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data);
GPtrArray *
confab_store_list_usage_finish(ConfabStore *self, GAsyncResult *result, GError **error);

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
confab_store_admit_quota_async(ConfabStore *self,
			       const gchar *owner,
			       const gchar *month,
			       guint64 default_limit,
			       guint64 rpm,
			       guint64 max_parallel,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
ConfabStoreUsage *
confab_store_admit_quota_finish(ConfabStore *self, GAsyncResult *result, GError **error);
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
void
confab_store_acquire_session_async(ConfabStore *self,
				   const gchar *session_id,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
gboolean
confab_store_acquire_session_finish(ConfabStore *self, GAsyncResult *result, GError **error);
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
void
confab_store_commit_turn_async(ConfabStore *self,
			       const ConfabStoreTurn *turn,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
gboolean
confab_store_commit_turn_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_delete_session_async(ConfabStore *self,
				  const gchar *session_id,
				  GCancellable *cancellable,
				  GAsyncReadyCallback callback,
				  gpointer user_data);
gboolean
confab_store_delete_session_finish(ConfabStore *self, GAsyncResult *result, GError **error);

void
confab_store_create_conversation_async(ConfabStore *self,
				       ConfabSession *session,
				       GCancellable *cancellable,
				       GAsyncReadyCallback callback,
				       gpointer user_data);
gboolean
confab_store_create_conversation_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_set_conversation_metadata_async(ConfabStore *self,
					     const gchar *session_id,
					     const gchar *metadata,
					     gint64 updated_at,
					     GCancellable *cancellable,
					     GAsyncReadyCallback callback,
					     gpointer user_data);
gboolean
confab_store_set_conversation_metadata_finish(ConfabStore *self,
					      GAsyncResult *result,
					      GError **error);
void
confab_store_set_conversation_agent_async(ConfabStore *self,
					  const gchar *session_id,
					  const gchar *agent_id,
					  GCancellable *cancellable,
					  GAsyncReadyCallback callback,
					  gpointer user_data);
gboolean
confab_store_set_conversation_agent_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_append_messages_async(ConfabStore *self,
				   const gchar *session_id,
				   GPtrArray *messages,
				   gint64 created_at,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
gboolean
confab_store_append_messages_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_get_message_async(ConfabStore *self,
			       const gchar *session_id,
			       const gchar *message_id,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
ConfabMessage *
confab_store_get_message_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_delete_message_async(ConfabStore *self,
				  const gchar *session_id,
				  const gchar *message_id,
				  GCancellable *cancellable,
				  GAsyncReadyCallback callback,
				  gpointer user_data);
gboolean
confab_store_delete_message_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_get_session_async(ConfabStore *self,
			       const gchar *session_id,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
ConfabSession *
confab_store_get_session_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_get_history_async(ConfabStore *self,
			       const gchar *session_id,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
GPtrArray *
confab_store_get_history_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_list_sessions_async(ConfabStore *self,
				 const ConfabStoreSessionQuery *query,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
ConfabStorePage *
confab_store_list_sessions_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_list_messages_async(ConfabStore *self,
				 const ConfabStoreMessageQuery *query,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
ConfabStorePage *
confab_store_list_messages_finish(ConfabStore *self, GAsyncResult *result, GError **error);

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

void
confab_store_save_approval_async(ConfabStore *self,
				 const ConfabApproval *approval,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
gboolean
confab_store_save_approval_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_get_approval_async(ConfabStore *self,
				const gchar *approval_id,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
ConfabApproval *
confab_store_get_approval_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_decide_approval_async(ConfabStore *self,
				   const ConfabApproval *decision,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
ConfabApproval *
confab_store_decide_approval_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_list_approvals_async(ConfabStore *self,
				  const gchar *owner,
				  guint limit,
				  GCancellable *cancellable,
				  GAsyncReadyCallback callback,
				  gpointer user_data);
GPtrArray *
confab_store_list_approvals_finish(ConfabStore *self, GAsyncResult *result, GError **error);

void
confab_store_save_elicitation_async(ConfabStore *self,
				    const ConfabElicitationRequest *request,
				    GCancellable *cancellable,
				    GAsyncReadyCallback callback,
				    gpointer user_data);
gboolean
confab_store_save_elicitation_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_get_elicitation_async(ConfabStore *self,
				   const gchar *elicitation_id,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
ConfabElicitationRequest *
confab_store_get_elicitation_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_answer_elicitation_async(ConfabStore *self,
				      const ConfabElicitationRequest *answer,
				      GCancellable *cancellable,
				      GAsyncReadyCallback callback,
				      gpointer user_data);
gboolean
confab_store_answer_elicitation_finish(ConfabStore *self, GAsyncResult *result, GError **error);

void
confab_store_emit_changed(ConfabStore *self, ConfabStoreChange change);
void
confab_store_close(ConfabStore *self);
void
confab_store_ping_async(ConfabStore *self,
			GCancellable *cancellable,
			GAsyncReadyCallback callback,
			gpointer user_data);
gboolean
confab_store_ping_finish(ConfabStore *self, GAsyncResult *result, GError **error);

void
confab_store_get_response_async(ConfabStore *self,
				const gchar *response_id,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
GPtrArray *
confab_store_get_response_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_delete_response_async(ConfabStore *self,
				   const gchar *response_id,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
gboolean
confab_store_delete_response_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_save_response_async(ConfabStore *self,
				 const ConfabResponseRecord *record,
				 guint max_background,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
gboolean
confab_store_save_response_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_get_response_record_async(ConfabStore *self,
				       const gchar *response_id,
				       GCancellable *cancellable,
				       GAsyncReadyCallback callback,
				       gpointer user_data);
ConfabResponseRecord *
confab_store_get_response_record_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_end_response_async(ConfabStore *self,
				const gchar *response_id,
				const gchar *status,
				const gchar *error_json,
				gint64 completed_at,
				const ConfabResponseEvents *events,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
gboolean
confab_store_end_response_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_list_running_responses_async(ConfabStore *self,
					  const gchar *owner,
					  const gchar *session_id,
					  guint limit,
					  GCancellable *cancellable,
					  GAsyncReadyCallback callback,
					  gpointer user_data);
GPtrArray *
confab_store_list_running_responses_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_cancel_response_async(ConfabStore *self,
				   const gchar *response_id,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
gboolean
confab_store_cancel_response_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_append_response_events_async(ConfabStore *self,
					  const gchar *response_id,
					  const ConfabResponseEvents *events,
					  GCancellable *cancellable,
					  GAsyncReadyCallback callback,
					  gpointer user_data);
gboolean
confab_store_append_response_events_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_list_response_events_async(ConfabStore *self,
					const gchar *response_id,
					gint64 after,
					GCancellable *cancellable,
					GAsyncReadyCallback callback,
					gpointer user_data);
GPtrArray *
confab_store_list_response_events_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_fail_orphan_responses_async(ConfabStore *self,
					 const gchar *error_json,
					 gint64 now,
					 GCancellable *cancellable,
					 GAsyncReadyCallback callback,
					 gpointer user_data);
gboolean
confab_store_fail_orphan_responses_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_drop_response_events_async(ConfabStore *self,
					gint64 before,
					GCancellable *cancellable,
					GAsyncReadyCallback callback,
					gpointer user_data);
gboolean
confab_store_drop_response_events_finish(ConfabStore *self, GAsyncResult *result, GError **error);

void
confab_store_save_mcp_oauth_async(ConfabStore *self,
				  const gchar *agent_id,
				  const gchar *server,
				  const gchar *state,
				  const gchar *data,
				  gint64 version,
				  GCancellable *cancellable,
				  GAsyncReadyCallback callback,
				  gpointer user_data);
gboolean
confab_store_save_mcp_oauth_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_get_mcp_oauth_async(ConfabStore *self,
				 const gchar *agent_id,
				 const gchar *server,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
gchar *
confab_store_get_mcp_oauth_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_find_mcp_oauth_state_async(ConfabStore *self,
					const gchar *state,
					GCancellable *cancellable,
					GAsyncReadyCallback callback,
					gpointer user_data);
gchar **
confab_store_find_mcp_oauth_state_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_claim_mcp_oauth_state_async(ConfabStore *self,
					 const gchar *state,
					 GCancellable *cancellable,
					 GAsyncReadyCallback callback,
					 gpointer user_data);
gboolean
confab_store_claim_mcp_oauth_state_finish(ConfabStore *self, GAsyncResult *result, GError **error);

G_END_DECLS
