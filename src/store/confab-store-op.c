/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabStore"

#include "config.h"

#include "store/confab-store-op.h"

/* ---------- rows ---------- */

const gchar *
confab_store_row_text(ConfabStoreRow *row, guint col)
{
	return row->funcs->text(row, col);
}

gint64
confab_store_row_int(ConfabStoreRow *row, guint col)
{
	return row->funcs->integer(row, col);
}

/* @fallback for SQL NULL */
gint64
confab_store_row_int_or(ConfabStoreRow *row, guint col, gint64 fallback)
{
	return row->funcs->is_null(row, col) ? fallback : row->funcs->integer(row, col);
}

/* Returns: (transfer full) */
GBytes *
confab_store_row_bytes(ConfabStoreRow *row, guint col)
{
	return row->funcs->bytes(row, col);
}

/**
 * confab_store_agent_from_row:
 * @row: a row of %CONFAB_STORE_AGENT_COLUMNS
 *
 * Returns: (transfer full): the #ConfabAgent
 */
gpointer
confab_store_agent_from_row(ConfabStoreRow *row)
{
	ConfabAgent *agent = confab_agent_new();

	confab_agent_set_id(agent, confab_store_row_text(row, 0));
	confab_agent_set_name(agent, confab_store_row_text(row, 1));
	confab_agent_set_instructions(agent, confab_store_row_text(row, 2));
	confab_agent_set_provider(agent, confab_store_row_text(row, 3));
	confab_agent_set_base_url(agent, confab_store_row_text(row, 4));
	confab_agent_set_upstream_model(agent, confab_store_row_text(row, 5));
	confab_agent_set_api_key(agent, confab_store_row_text(row, 6));
	confab_agent_set_api_key_file(agent, confab_store_row_text(row, 7));
	confab_agent_set_params(agent, confab_store_row_text(row, 8));
	confab_agent_set_connect_timeout(agent, (guint)confab_store_row_int(row, 9));
	confab_agent_set_first_byte_timeout(agent, (guint)confab_store_row_int(row, 10));
	confab_agent_set_idle_timeout(agent, (guint)confab_store_row_int(row, 11));
	confab_agent_set_total_timeout(agent, (guint)confab_store_row_int(row, 12));
	confab_agent_set_created_at(agent, confab_store_row_int(row, 13));
	confab_agent_set_updated_at(agent, confab_store_row_int(row, 14));
	confab_agent_set_mcp_servers(agent, confab_store_row_text(row, 15));
	confab_agent_set_max_steps(agent, (guint)confab_store_row_int(row, 16));
	return agent;
}

/**
 * confab_store_token_from_row:
 * @row: a row of %CONFAB_STORE_TOKEN_COLUMNS
 *
 * Returns: (transfer full): the #ConfabToken
 */
gpointer
confab_store_token_from_row(ConfabStoreRow *row)
{
	ConfabToken *token = confab_token_new();
	g_autoptr(GBytes) hash = confab_store_row_bytes(row, 1);
	g_auto(GStrv) scopes = g_strsplit(confab_store_row_text(row, 4), " ", -1);

	confab_token_set_id(token, confab_store_row_text(row, 0));
	confab_token_set_hash(token, hash);
	confab_token_set_owner(token, confab_store_row_text(row, 2));
	confab_token_set_name(token, confab_store_row_text(row, 3));
	confab_token_set_scopes(token, (const gchar *const *)scopes);
	confab_token_set_agent_id(token, confab_store_row_text(row, 5));
	confab_token_set_created_at(token, confab_store_row_int(row, 6));
	confab_token_set_expires_at(token, confab_store_row_int(row, 7));
	confab_token_set_revoked_at(token, confab_store_row_int(row, 8));
	return token;
}

/**
 * confab_store_session_from_row:
 * @row: a row of %CONFAB_STORE_SESSION_COLUMNS
 *
 * Returns: (transfer full): the #ConfabSession
 */
gpointer
confab_store_session_from_row(ConfabStoreRow *row)
{
	ConfabSession *session = confab_session_new();

	confab_session_set_id(session, confab_store_row_text(row, 0));
	confab_session_set_owner(session, confab_store_row_text(row, 1));
	confab_session_set_agent_id(session, confab_store_row_text(row, 2));
	confab_session_set_source(session, (ConfabSessionSource)confab_store_row_int(row, 3));
	confab_session_set_title(session, confab_store_row_text(row, 4));
	confab_session_set_created_at(session, confab_store_row_int(row, 5));
	confab_session_set_updated_at(session, confab_store_row_int(row, 6));
	return session;
}

/**
 * confab_store_message_from_row:
 * @row: a row of %CONFAB_STORE_MESSAGE_COLUMNS
 *
 * Returns: (transfer full): the #ConfabMessage
 */
gpointer
confab_store_message_from_row(ConfabStoreRow *row)
{
	ConfabMessage *msg = confab_message_new();
	const gchar *blocks = confab_store_row_text(row, 5);

	confab_message_set_id(msg, confab_store_row_text(row, 0));
	confab_message_set_session_id(msg, confab_store_row_text(row, 1));
	confab_message_set_role(msg, confab_store_row_text(row, 2));
	confab_message_set_model(msg, confab_store_row_text(row, 3));
	confab_message_set_content(msg, confab_store_row_text(row, 4));
	/* '' (SQLite's schema v5): the blocks are the content */
	if (g_strcmp0(blocks, "") == 0)
		confab_message_share_content_blocks(msg);
	else
		confab_message_set_content_blocks(msg, blocks);
	confab_message_set_status(msg, (ConfabMessageStatus)confab_store_row_int(row, 6));
	confab_message_set_finish_reason(msg, confab_store_row_text(row, 7));
	confab_message_set_prompt_tokens(msg, confab_store_row_int_or(row, 8, -1));
	confab_message_set_completion_tokens(msg, confab_store_row_int_or(row, 9, -1));
	confab_message_set_created_at(msg, confab_store_row_int(row, 10));
	confab_message_set_response_id(msg, confab_store_row_text(row, 11));
	return msg;
}

/**
 * confab_store_approval_from_row:
 * @row: a row of %CONFAB_STORE_APPROVAL_COLUMNS
 *
 * Returns: (transfer full): the #ConfabApproval; a state the build does not
 *   know reads as timed out
 */
gpointer
confab_store_approval_from_row(ConfabStoreRow *row)
{
	ConfabApproval *approval = confab_approval_new();

	approval->id = g_strdup(confab_store_row_text(row, 0));
	approval->owner = g_strdup(confab_store_row_text(row, 1));
	approval->agent_id = g_strdup(confab_store_row_text(row, 2));
	approval->session_id = g_strdup(confab_store_row_text(row, 3));
	approval->server = g_strdup(confab_store_row_text(row, 4));
	approval->tool = g_strdup(confab_store_row_text(row, 5));
	approval->name = g_strdup(confab_store_row_text(row, 6));
	approval->arguments = g_strdup(confab_store_row_text(row, 7));
	approval->tool_call_id = g_strdup(confab_store_row_text(row, 8));
	if (!confab_approval_state_from_string(confab_store_row_text(row, 9), &approval->state))
		approval->state = CONFAB_APPROVAL_STATE_TIMED_OUT;
	approval->decided_by = g_strdup(confab_store_row_text(row, 10));
	approval->reason = g_strdup(confab_store_row_text(row, 11));
	approval->created_at = confab_store_row_int(row, 12);
	approval->decided_at = confab_store_row_int(row, 13);
	approval->response_id = g_strdup(confab_store_row_text(row, 14));
	return approval;
}

/* ---------- calls ---------- */

static GDestroyNotify
item_free(ConfabStoreCall *call)
{
	return call->op->free != NULL ? call->op->free : g_object_unref;
}

static void
arg_clear(ConfabStoreArg *arg)
{
	g_clear_pointer(&arg->text, g_free);
	g_clear_pointer(&arg->bytes, g_bytes_unref);
}

/**
 * confab_store_call_new:
 * @op: the operation, a static description
 *
 * Returns: (transfer full): a call of @op without arguments yet
 */
ConfabStoreCall *
confab_store_call_new(const ConfabStoreOp *op)
{
	ConfabStoreCall *call = g_new0(ConfabStoreCall, 1);

	call->op = op;
	call->args = g_array_new(FALSE, TRUE, sizeof(ConfabStoreArg));
	g_array_set_clear_func(call->args, (GDestroyNotify)arg_clear);
	return call;
}

static void
call_clear_result(ConfabStoreCall *call)
{
	if (call->result == NULL)
		return;
	switch (call->op->rows) {
	case CONFAB_STORE_ROWS_LIST:
		g_ptr_array_unref(call->result);
		break;
	case CONFAB_STORE_ROWS_ONE:
		item_free(call)(call->result);
		break;
	case CONFAB_STORE_ROWS_PAGE:
		confab_store_page_free(call->result);
		break;
	case CONFAB_STORE_ROWS_NONE:
		break;
	}
	call->result = NULL;
}

void
confab_store_call_free(ConfabStoreCall *call)
{
	if (call == NULL)
		return;
	call_clear_result(call);
	g_array_unref(call->args);
	g_free(call->sql);
	g_free(call);
}

/* Adds `$n`, the next argument: @text copied, %NULL for SQL NULL. */
void
confab_store_call_add_text(ConfabStoreCall *call, const gchar *text)
{
	ConfabStoreArg arg = {CONFAB_STORE_ARG_TEXT, g_strdup(text), 0, NULL};
	g_array_append_val(call->args, arg);
}

void
confab_store_call_add_int(ConfabStoreCall *call, gint64 value)
{
	ConfabStoreArg arg = {CONFAB_STORE_ARG_INT, NULL, value, NULL};
	g_array_append_val(call->args, arg);
}

void
confab_store_call_add_bytes(ConfabStoreCall *call, GBytes *bytes)
{
	ConfabStoreArg arg = {CONFAB_STORE_ARG_BYTES, NULL, 0, g_bytes_ref(bytes)};
	g_array_append_val(call->args, arg);
}

/* This call's own statement (transfer full), for an op built per call
 * from constant fragments: values are still bound, never written in. */
void
confab_store_call_set_sql(ConfabStoreCall *call, gchar *sql)
{
	g_free(call->sql);
	call->sql = sql;
}

/* The statement to run in the dialect @sqlite or PostgreSQL's. */
const gchar *
confab_store_call_get_sql(ConfabStoreCall *call, gboolean sqlite)
{
	if (call->sql != NULL)
		return call->sql;
	if (sqlite && call->op->sql_sqlite != NULL)
		return call->op->sql_sqlite;
	return call->op->sql;
}

guint
confab_store_call_get_n_args(ConfabStoreCall *call)
{
	return call->args->len;
}

const ConfabStoreArg *
confab_store_call_get_arg(ConfabStoreCall *call, guint index)
{
	return &g_array_index(call->args, ConfabStoreArg, index);
}

/**
 * confab_store_call_add_row:
 * @call: a read's call
 * @row: its next row
 *
 * Maps @row into the call's result.
 *
 * Returns: whether the call wants another row
 */
gboolean
confab_store_call_add_row(ConfabStoreCall *call, ConfabStoreRow *row)
{
	ConfabStorePage *page;

	call->n_rows++;
	switch (call->op->rows) {
	case CONFAB_STORE_ROWS_LIST:
		if (call->result == NULL)
			call->result = g_ptr_array_new_with_free_func(item_free(call));
		g_ptr_array_add(call->result, call->op->map(row));
		return TRUE;
	case CONFAB_STORE_ROWS_ONE:
		call->result = call->op->map(row);
		return FALSE;
	case CONFAB_STORE_ROWS_PAGE:
		if (call->result == NULL)
			call->result = confab_store_page_new();
		page = call->result;
		if (page->items->len == call->limit) {
			page->has_more = TRUE;
			return FALSE;
		}
		g_ptr_array_add(page->items, call->op->map(row));
		return TRUE;
	case CONFAB_STORE_ROWS_NONE:
		break;
	}
	return FALSE;
}

static GError *
missing_error(ConfabStoreCall *call)
{
	const gchar *first = call->args->len > 0 ? confab_store_call_get_arg(call, 0)->text : NULL;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	return g_error_new(CONFAB_ERROR,
			   call->op->missing,
			   call->op->missing_format,
			   first != NULL ? first : "");
#pragma GCC diagnostic pop
}

/**
 * confab_store_call_steal_result:
 * @call: a read whose rows were all added
 * @error: the op's missing error, for %CONFAB_STORE_ROWS_ONE without a row
 *
 * Returns: (transfer full): what the rows made, as the op returns it (an
 *   empty list or page for no rows), freed with
 *   confab_store_call_get_result_free()
 */
gpointer
confab_store_call_steal_result(ConfabStoreCall *call, GError **error)
{
	gpointer result = g_steal_pointer(&call->result);

	if (result != NULL)
		return result;
	switch (call->op->rows) {
	case CONFAB_STORE_ROWS_LIST:
		return g_ptr_array_new_with_free_func(item_free(call));
	case CONFAB_STORE_ROWS_PAGE:
		return confab_store_page_new();
	case CONFAB_STORE_ROWS_ONE:
	case CONFAB_STORE_ROWS_NONE:
		break;
	}
	g_propagate_error(error, missing_error(call));
	return NULL;
}

GDestroyNotify
confab_store_call_get_result_free(ConfabStoreCall *call)
{
	switch (call->op->rows) {
	case CONFAB_STORE_ROWS_LIST:
		return (GDestroyNotify)g_ptr_array_unref;
	case CONFAB_STORE_ROWS_PAGE:
		return (GDestroyNotify)confab_store_page_free;
	case CONFAB_STORE_ROWS_ONE:
		return item_free(call);
	case CONFAB_STORE_ROWS_NONE:
		break;
	}
	return NULL;
}

/**
 * confab_store_call_check_changed:
 * @call: a write whose statement ran
 * @changed_rows: the rows it changed
 * @error: the op's missing error, when it has one and no row changed
 *
 * Returns: whether the write did what it was for
 */
gboolean
confab_store_call_check_changed(ConfabStoreCall *call, gint64 changed_rows, GError **error)
{
	if (call->op->missing != 0 && changed_rows == 0) {
		g_propagate_error(error, missing_error(call));
		return FALSE;
	}
	return TRUE;
}

/**
 * confab_store_run:
 * @self: a store
 * @call: (transfer full): the call
 * @source_tag: the public function's, for its _finish
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once the call completed, in the caller's context
 * @user_data: for @callback
 *
 * Hands @call to the backend, which runs it on its own threads or
 * connections and completes the task.
 */
void
confab_store_run(ConfabStore *self,
		 ConfabStoreCall *call,
		 gpointer source_tag,
		 GCancellable *cancellable,
		 GAsyncReadyCallback callback,
		 gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);

	g_task_set_source_tag(task, source_tag);
	g_task_set_task_data(task, call, (GDestroyNotify)confab_store_call_free);
	CONFAB_STORE_GET_IFACE(self)->run(self, call, task);
}
