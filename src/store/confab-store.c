/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabStore"

#include "config.h"

#include "confab-store.h"

G_DEFINE_INTERFACE(ConfabStore, confab_store, G_TYPE_OBJECT)

static void
confab_store_default_init(ConfabStoreInterface *iface)
{
}

/**
 * confab_page_new:
 *
 * Returns: (transfer full): an empty page
 */
ConfabPage *
confab_page_new(void)
{
	ConfabPage *page = g_new0(ConfabPage, 1);
	page->items = g_ptr_array_new_with_free_func(g_object_unref);
	return page;
}

void
confab_page_free(ConfabPage *page)
{
	if (page == NULL)
		return;
	g_ptr_array_unref(page->items);
	g_free(page);
}

void
confab_session_query_clear(ConfabSessionQuery *query)
{
	g_clear_pointer(&query->owner, g_free);
	g_clear_pointer(&query->agent_id, g_free);
	g_clear_pointer(&query->after, g_free);
}

void
confab_message_query_clear(ConfabMessageQuery *query)
{
	g_clear_pointer(&query->session_id, g_free);
	g_clear_pointer(&query->after, g_free);
}

/**
 * confab_turn_record_new:
 *
 * Returns: (transfer full): an empty turn record
 */
ConfabTurnRecord *
confab_turn_record_new(void)
{
	ConfabTurnRecord *record = g_new0(ConfabTurnRecord, 1);
	record->messages = g_ptr_array_new_with_free_func(g_object_unref);
	return record;
}

void
confab_turn_record_free(ConfabTurnRecord *record)
{
	if (record == NULL)
		return;
	g_clear_object(&record->session);
	g_ptr_array_unref(record->messages);
	g_free(record->usage_owner);
	g_free(record->usage_month);
	g_free(record);
}

#define STORE_IFACE(self) CONFAB_STORE_GET_IFACE(self)

GPtrArray *
confab_store_load_agents(ConfabStore *self, GError **error)
{
	g_return_val_if_fail(CONFAB_IS_STORE(self), NULL);
	return STORE_IFACE(self)->load_agents(self, error);
}

GPtrArray *
confab_store_load_tokens(ConfabStore *self, GError **error)
{
	g_return_val_if_fail(CONFAB_IS_STORE(self), NULL);
	return STORE_IFACE(self)->load_tokens(self, error);
}

/**
 * confab_store_load_quotas:
 *
 * Returns: (transfer full) (element-type utf8 guint64): owner to monthly limit
 */
GHashTable *
confab_store_load_quotas(ConfabStore *self, GError **error)
{
	g_return_val_if_fail(CONFAB_IS_STORE(self), NULL);
	return STORE_IFACE(self)->load_quotas(self, error);
}

/**
 * confab_store_load_usage:
 *
 * Returns: (transfer full) (element-type utf8 guint64): owner to requests in @month
 */
GHashTable *
confab_store_load_usage(ConfabStore *self, const gchar *month, GError **error)
{
	g_return_val_if_fail(CONFAB_IS_STORE(self), NULL);
	return STORE_IFACE(self)->load_usage(self, month, error);
}

void
confab_store_close(ConfabStore *self)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->close(self);
}

void
confab_store_save_agent(ConfabStore *self,
			ConfabAgent *agent,
			GCancellable *cancellable,
			GAsyncReadyCallback callback,
			gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->save_agent(self, agent, cancellable, callback, user_data);
}

gboolean
confab_store_save_agent_finish(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

void
confab_store_delete_agent(ConfabStore *self,
			  const gchar *agent_id,
			  gint64 deleted_at,
			  GCancellable *cancellable,
			  GAsyncReadyCallback callback,
			  gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)
	    ->delete_agent(self, agent_id, deleted_at, cancellable, callback, user_data);
}

gboolean
confab_store_delete_agent_finish(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

void
confab_store_save_token(ConfabStore *self,
			ConfabToken *token,
			GCancellable *cancellable,
			GAsyncReadyCallback callback,
			gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->save_token(self, token, cancellable, callback, user_data);
}

gboolean
confab_store_save_token_finish(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

void
confab_store_set_quota(ConfabStore *self,
		       const gchar *owner,
		       guint64 monthly_requests,
		       GCancellable *cancellable,
		       GAsyncReadyCallback callback,
		       gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)
	    ->set_quota(self, owner, monthly_requests, cancellable, callback, user_data);
}

gboolean
confab_store_set_quota_finish(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

void
confab_store_begin_turn(ConfabStore *self,
			ConfabTurnRecord *record,
			GCancellable *cancellable,
			GAsyncReadyCallback callback,
			gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->begin_turn(self, record, cancellable, callback, user_data);
}

gboolean
confab_store_begin_turn_finish(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

void
confab_store_finish_turn(ConfabStore *self,
			 ConfabMessage *assistant,
			 GCancellable *cancellable,
			 GAsyncReadyCallback callback,
			 gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->finish_turn(self, assistant, cancellable, callback, user_data);
}

gboolean
confab_store_finish_turn_finish(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

void
confab_store_delete_session(ConfabStore *self,
			    const gchar *session_id,
			    GCancellable *cancellable,
			    GAsyncReadyCallback callback,
			    gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->delete_session(self, session_id, cancellable, callback, user_data);
}

gboolean
confab_store_delete_session_finish(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

void
confab_store_get_session(ConfabStore *self,
			 const gchar *session_id,
			 GCancellable *cancellable,
			 GAsyncReadyCallback callback,
			 gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->get_session(self, session_id, cancellable, callback, user_data);
}

ConfabSession *
confab_store_get_session_finish(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

void
confab_store_get_history(ConfabStore *self,
			 const gchar *session_id,
			 GCancellable *cancellable,
			 GAsyncReadyCallback callback,
			 gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->get_history(self, session_id, cancellable, callback, user_data);
}

GPtrArray *
confab_store_get_history_finish(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

void
confab_store_list_sessions(ConfabStore *self,
			   const ConfabSessionQuery *query,
			   GCancellable *cancellable,
			   GAsyncReadyCallback callback,
			   gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->list_sessions(self, query, cancellable, callback, user_data);
}

ConfabPage *
confab_store_list_sessions_finish(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

void
confab_store_list_messages(ConfabStore *self,
			   const ConfabMessageQuery *query,
			   GCancellable *cancellable,
			   GAsyncReadyCallback callback,
			   gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->list_messages(self, query, cancellable, callback, user_data);
}

ConfabPage *
confab_store_list_messages_finish(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}
