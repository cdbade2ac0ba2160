/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "model/confab-agent.h"
#include "model/confab-approval.h"
#include "model/confab-message.h"
#include "model/confab-response-record.h"
#include "model/confab-session.h"
#include "model/confab-token.h"

G_BEGIN_DECLS

/*
 * A row of a store's result as both backends let it be read, and the model
 * objects made from rows: one mapper per object for SQLite and PostgreSQL
 * (confab-store-call.h says how an operation uses them).
 */

typedef struct _ConfabStoreRow ConfabStoreRow;

/**
 * ConfabStoreRowFuncs:
 * @text: column @col as text; %NULL for SQL NULL
 * @integer: column @col as an integer; 0 for SQL NULL
 * @is_null: whether column @col is SQL NULL
 * @bytes: column @col, a blob (bytea)
 *
 * How a backend reads a column of its current row.
 */
typedef struct {
	const gchar *(*text)(ConfabStoreRow *row, guint col);
	gint64 (*integer)(ConfabStoreRow *row, guint col);
	gboolean (*is_null)(ConfabStoreRow *row, guint col);
	GBytes *(*bytes)(ConfabStoreRow *row, guint col);
} ConfabStoreRowFuncs;

/**
 * ConfabStoreRow:
 * @funcs: the backend's readers
 * @result: the backend's result (a `sqlite3_stmt`, a `PGresult`)
 * @index: the row in @result, for a backend whose results hold every row
 *
 * One row of a result, as the mappers read it.
 */
struct _ConfabStoreRow {
	const ConfabStoreRowFuncs *funcs;
	gpointer result;
	gint index;
};

const gchar *
confab_store_row_text(ConfabStoreRow *row, guint col);
gint64
confab_store_row_int(ConfabStoreRow *row, guint col);
gint64
confab_store_row_int_or(ConfabStoreRow *row, guint col, gint64 fallback);
GBytes *
confab_store_row_bytes(ConfabStoreRow *row, guint col);

/* A row as a model object or struct (transfer full). */
typedef gpointer (*ConfabStoreRowMap)(ConfabStoreRow *row);

/* The columns each mapper reads, in its order: every SELECT of the
 * object names them so. */
#define CONFAB_STORE_AGENT_COLUMNS                                                                 \
	"id, name, instructions, provider, base_url, upstream_model, api_key, api_key_file, "      \
	"params, connect_timeout, first_byte_timeout, idle_timeout, total_timeout, created_at, "   \
	"updated_at, mcp_servers, max_steps, upstreams, routing"
#define CONFAB_STORE_TOKEN_COLUMNS                                                                 \
	"id, hash, owner, name, scopes, agent_id, created_at, expires_at, revoked_at"
#define CONFAB_STORE_SESSION_COLUMNS "id, owner, agent_id, source, title, created_at, updated_at"
/* a session with what the Conversations API keeps of it */
#define CONFAB_STORE_CONVERSATION_COLUMNS CONFAB_STORE_SESSION_COLUMNS ", metadata"
#define CONFAB_STORE_MESSAGE_COLUMNS                                                               \
	"id, session_id, role, model, content, content_blocks, status, finish_reason, "            \
	"prompt_tokens, completion_tokens, created_at, response_id, upstream"
#define CONFAB_STORE_APPROVAL_COLUMNS                                                              \
	"id, owner, agent_id, session_id, server, tool, name, arguments, tool_call_id, state, "    \
	"decided_by, reason, created_at, decided_at, response_id"
#define CONFAB_STORE_RESPONSE_COLUMNS                                                              \
	"id, owner, agent_id, session_id, background, stream, status, params, error, "             \
	"cancel_requested, created_at, completed_at"

gpointer
confab_store_row_to_agent(ConfabStoreRow *row);
gpointer
confab_store_row_to_token(ConfabStoreRow *row);
gpointer
confab_store_row_to_session(ConfabStoreRow *row);
gpointer
confab_store_row_to_conversation(ConfabStoreRow *row);
gpointer
confab_store_row_to_message(ConfabStoreRow *row);
gpointer
confab_store_row_to_approval(ConfabStoreRow *row);
gpointer
confab_store_row_to_response_record(ConfabStoreRow *row);
gpointer
confab_store_row_to_response_events(ConfabStoreRow *row);

G_END_DECLS
