/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "confab-agent.h"
#include "confab-enums.h"
#include "confab-message.h"
#include "confab-session.h"
#include "confab-token.h"

G_BEGIN_DECLS

/**
 * ConfabPage:
 * @items: (element-type GObject): the items of the page, in the order asked
 * @has_more: whether more items follow the last one
 *
 * One page of a cursor-paginated list.
 */
typedef struct {
	GPtrArray *items;
	gboolean has_more;
} ConfabPage;

ConfabPage *
confab_page_new(void);
void
confab_page_free(ConfabPage *page);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabPage, confab_page_free)

/**
 * ConfabSessionQuery:
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
} ConfabSessionQuery;

/**
 * ConfabMessageQuery:
 * @session_id: the session
 * @after: (nullable): a message id cursor
 * @order: newest or oldest first
 * @limit: the page size
 */
typedef struct {
	gchar *session_id;
	gchar *after;
	ConfabOrder order;
	guint limit;
} ConfabMessageQuery;

void
confab_session_query_clear(ConfabSessionQuery *query);
void
confab_message_query_clear(ConfabMessageQuery *query);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ConfabSessionQuery, confab_session_query_clear)
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ConfabMessageQuery, confab_message_query_clear)

/**
 * ConfabTurnRecord:
 * @session: the session; inserted when @session_is_new, else its
 *   updated-at is refreshed and it must still exist
 * @session_is_new: whether to create @session
 * @messages: (element-type ConfabMessage): messages to append
 * @usage_owner: (nullable): the owner whose monthly request count grows by one
 * @usage_month: (nullable): the month, as `YYYY-MM`
 *
 * What the start of a turn writes, in one transaction.
 */
typedef struct {
	ConfabSession *session;
	gboolean session_is_new;
	GPtrArray *messages;
	gchar *usage_owner;
	gchar *usage_month;
} ConfabTurnRecord;

ConfabTurnRecord *
confab_turn_record_new(void);
void
confab_turn_record_free(ConfabTurnRecord *record);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabTurnRecord, confab_turn_record_free)

#define CONFAB_TYPE_STORE (confab_store_get_type())
G_DECLARE_INTERFACE(ConfabStore, confab_store, CONFAB, STORE, GObject)

/**
 * ConfabStoreInterface:
 *
 * The storage backend. Every write goes through one asynchronous call that
 * completes only once it is durably committed; reads never run on the
 * caller's main context. SQLite implements it (#ConfabStoreSqlite); a
 * PostgreSQL backend would implement the same vfuncs. Every `_async` vfunc
 * must complete its callback through a #GTask whose result the matching
 * confab_store_*_finish() reads.
 */
struct _ConfabStoreInterface {
	GTypeInterface parent_iface;

	/* synchronous, for start-up only */
	GPtrArray *(*load_agents)(ConfabStore *self, GError **error);
	GPtrArray *(*load_tokens)(ConfabStore *self, GError **error);
	GHashTable *(*load_quotas)(ConfabStore *self, GError **error);
	GHashTable *(*load_usage)(ConfabStore *self, const gchar *month, GError **error);

	/* writes */
	void (*save_agent)(ConfabStore *self,
			   ConfabAgent *agent,
			   GCancellable *cancellable,
			   GAsyncReadyCallback callback,
			   gpointer user_data);
	void (*delete_agent)(ConfabStore *self,
			     const gchar *agent_id,
			     gint64 deleted_at,
			     GCancellable *cancellable,
			     GAsyncReadyCallback callback,
			     gpointer user_data);
	void (*save_token)(ConfabStore *self,
			   ConfabToken *token,
			   GCancellable *cancellable,
			   GAsyncReadyCallback callback,
			   gpointer user_data);
	void (*set_quota)(ConfabStore *self,
			  const gchar *owner,
			  guint64 monthly_requests,
			  GCancellable *cancellable,
			  GAsyncReadyCallback callback,
			  gpointer user_data);
	void (*begin_turn)(ConfabStore *self,
			   ConfabTurnRecord *record,
			   GCancellable *cancellable,
			   GAsyncReadyCallback callback,
			   gpointer user_data);
	void (*finish_turn)(ConfabStore *self,
			    ConfabMessage *assistant,
			    GCancellable *cancellable,
			    GAsyncReadyCallback callback,
			    gpointer user_data);
	void (*delete_session)(ConfabStore *self,
			       const gchar *session_id,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);

	/* reads */
	void (*get_session)(ConfabStore *self,
			    const gchar *session_id,
			    GCancellable *cancellable,
			    GAsyncReadyCallback callback,
			    gpointer user_data);
	void (*get_history)(ConfabStore *self,
			    const gchar *session_id,
			    GCancellable *cancellable,
			    GAsyncReadyCallback callback,
			    gpointer user_data);
	void (*list_sessions)(ConfabStore *self,
			      const ConfabSessionQuery *query,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data);
	void (*list_messages)(ConfabStore *self,
			      const ConfabMessageQuery *query,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data);

	/* lifecycle */
	void (*close)(ConfabStore *self);
};

GPtrArray *
confab_store_load_agents(ConfabStore *self, GError **error);
GPtrArray *
confab_store_load_tokens(ConfabStore *self, GError **error);
GHashTable *
confab_store_load_quotas(ConfabStore *self, GError **error);
GHashTable *
confab_store_load_usage(ConfabStore *self, const gchar *month, GError **error);

void
confab_store_save_agent(ConfabStore *self,
			ConfabAgent *agent,
			GCancellable *cancellable,
			GAsyncReadyCallback callback,
			gpointer user_data);
gboolean
confab_store_save_agent_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_delete_agent(ConfabStore *self,
			  const gchar *agent_id,
			  gint64 deleted_at,
			  GCancellable *cancellable,
			  GAsyncReadyCallback callback,
			  gpointer user_data);
gboolean
confab_store_delete_agent_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_save_token(ConfabStore *self,
			ConfabToken *token,
			GCancellable *cancellable,
			GAsyncReadyCallback callback,
			gpointer user_data);
gboolean
confab_store_save_token_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_set_quota(ConfabStore *self,
		       const gchar *owner,
		       guint64 monthly_requests,
		       GCancellable *cancellable,
		       GAsyncReadyCallback callback,
		       gpointer user_data);
gboolean
confab_store_set_quota_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_begin_turn(ConfabStore *self,
			ConfabTurnRecord *record,
			GCancellable *cancellable,
			GAsyncReadyCallback callback,
			gpointer user_data);
gboolean
confab_store_begin_turn_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_finish_turn(ConfabStore *self,
			 ConfabMessage *assistant,
			 GCancellable *cancellable,
			 GAsyncReadyCallback callback,
			 gpointer user_data);
gboolean
confab_store_finish_turn_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_delete_session(ConfabStore *self,
			    const gchar *session_id,
			    GCancellable *cancellable,
			    GAsyncReadyCallback callback,
			    gpointer user_data);
gboolean
confab_store_delete_session_finish(ConfabStore *self, GAsyncResult *result, GError **error);

void
confab_store_get_session(ConfabStore *self,
			 const gchar *session_id,
			 GCancellable *cancellable,
			 GAsyncReadyCallback callback,
			 gpointer user_data);
ConfabSession *
confab_store_get_session_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_get_history(ConfabStore *self,
			 const gchar *session_id,
			 GCancellable *cancellable,
			 GAsyncReadyCallback callback,
			 gpointer user_data);
GPtrArray *
confab_store_get_history_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_list_sessions(ConfabStore *self,
			   const ConfabSessionQuery *query,
			   GCancellable *cancellable,
			   GAsyncReadyCallback callback,
			   gpointer user_data);
ConfabPage *
confab_store_list_sessions_finish(ConfabStore *self, GAsyncResult *result, GError **error);
void
confab_store_list_messages(ConfabStore *self,
			   const ConfabMessageQuery *query,
			   GCancellable *cancellable,
			   GAsyncReadyCallback callback,
			   gpointer user_data);
ConfabPage *
confab_store_list_messages_finish(ConfabStore *self, GAsyncResult *result, GError **error);

void
confab_store_close(ConfabStore *self);

G_END_DECLS
