/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabStore"

#include "config.h"

#include "store/confab-store-row.h"

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
 * confab_store_row_to_agent:
 * @row: a row of %CONFAB_STORE_AGENT_COLUMNS
 *
 * Returns: (transfer full): the #ConfabAgent
 */
gpointer
confab_store_row_to_agent(ConfabStoreRow *row)
{
	ConfabAgent *agent = confab_agent_new();
	g_autoptr(GError) error = NULL;

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
	confab_agent_set_stored_upstreams(agent, confab_store_row_text(row, 17));
	if (!confab_agent_set_routing_json(agent, confab_store_row_text(row, 18), &error))
		g_warning(
		    "agent %s: its stored routing cannot be read (%s): it falls back in order",
		    confab_agent_get_id(agent),
		    error->message);
	return agent;
}

/**
 * confab_store_row_to_token:
 * @row: a row of %CONFAB_STORE_TOKEN_COLUMNS
 *
 * Returns: (transfer full): the #ConfabToken
 */
gpointer
confab_store_row_to_token(ConfabStoreRow *row)
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
 * confab_store_row_to_session:
 * @row: a row of %CONFAB_STORE_SESSION_COLUMNS
 *
 * Returns: (transfer full): the #ConfabSession
 */
gpointer
confab_store_row_to_session(ConfabStoreRow *row)
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
 * confab_store_row_to_conversation:
 * @row: a row of %CONFAB_STORE_CONVERSATION_COLUMNS
 *
 * Returns: (transfer full): the #ConfabSession, with its metadata
 */
gpointer
confab_store_row_to_conversation(ConfabStoreRow *row)
{
	ConfabSession *session = confab_store_row_to_session(row);

	confab_session_set_metadata(session, confab_store_row_text(row, 7));
	return session;
}

/**
 * confab_store_row_to_message:
 * @row: a row of %CONFAB_STORE_MESSAGE_COLUMNS
 *
 * Returns: (transfer full): the #ConfabMessage
 */
gpointer
confab_store_row_to_message(ConfabStoreRow *row)
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
	confab_message_set_upstream(msg, confab_store_row_text(row, 12));
	return msg;
}

/**
 * confab_store_row_to_approval:
 * @row: a row of %CONFAB_STORE_APPROVAL_COLUMNS
 *
 * Returns: (transfer full): the #ConfabApproval; a state the build does not
 *   know reads as timed out
 */
gpointer
confab_store_row_to_approval(ConfabStoreRow *row)
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

/**
 * confab_store_row_to_response_record:
 * @row: a row of %CONFAB_STORE_RESPONSE_COLUMNS
 *
 * Returns: (transfer full): the #ConfabResponseRecord
 */
gpointer
confab_store_row_to_response_record(ConfabStoreRow *row)
{
	ConfabResponseRecord *record = confab_response_record_new();

	record->id = g_strdup(confab_store_row_text(row, 0));
	record->owner = g_strdup(confab_store_row_text(row, 1));
	record->agent_id = g_strdup(confab_store_row_text(row, 2));
	record->session_id = g_strdup(confab_store_row_text(row, 3));
	record->background = confab_store_row_int(row, 4) != 0;
	record->stream = confab_store_row_int(row, 5) != 0;
	record->status = g_strdup(confab_store_row_text(row, 6));
	record->params = g_strdup(confab_store_row_text(row, 7));
	record->error = g_strdup(confab_store_row_text(row, 8));
	record->cancel_requested = confab_store_row_int(row, 9) != 0;
	record->created_at = confab_store_row_int(row, 10);
	record->completed_at = confab_store_row_int(row, 11);
	return record;
}

/**
 * confab_store_row_to_response_events:
 * @row: a row of `first_seq, last_seq, data`
 *
 * Returns: (transfer full): the #ConfabResponseEvents
 */
gpointer
confab_store_row_to_response_events(ConfabStoreRow *row)
{
	ConfabResponseEvents *events = g_new0(ConfabResponseEvents, 1);

	events->first = confab_store_row_int(row, 0);
	events->last = confab_store_row_int(row, 1);
	events->data = g_strdup(confab_store_row_text(row, 2));
	return events;
}
