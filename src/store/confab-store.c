/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabStore"

#include "config.h"

#include <math.h>

#include "store/confab-store-call.h"
#include "store/confab-store.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

G_DEFINE_INTERFACE(ConfabStore, confab_store, G_TYPE_OBJECT)

enum { SIGNAL_CHANGED, N_SIGNALS };

static guint signals[N_SIGNALS];

static void
confab_store_default_init(ConfabStoreInterface *iface)
{
	/**
	 * ConfabStore::changed:
	 * @store: the store
	 * @change: a #ConfabStoreChange
	 *
	 * What is cached from the store may be stale: it changed elsewhere.
	 */
	signals[SIGNAL_CHANGED] = g_signal_new("changed",
					       G_TYPE_FROM_INTERFACE(iface),
					       G_SIGNAL_RUN_LAST,
					       0,
					       NULL,
					       NULL,
					       NULL,
					       G_TYPE_NONE,
					       1,
					       G_TYPE_INT);
}

/**
 * confab_store_page_new:
 *
 * Returns: (transfer full): an empty page
 */
ConfabStorePage *
confab_store_page_new(void)
{
	ConfabStorePage *page = g_new0(ConfabStorePage, 1);
	page->items = g_ptr_array_new_with_free_func(g_object_unref);
	return page;
}

/**
 * confab_store_page_free:
 * @page: (nullable): a page
 *
 * Frees @page and its items.
 */
void
confab_store_page_free(ConfabStorePage *page)
{
	if (page == NULL)
		return;
	g_ptr_array_unref(page->items);
	g_free(page);
}

/**
 * confab_store_session_query_clear:
 * @query: a query on the stack
 *
 * Frees what @query holds, not @query itself.
 */
void
confab_store_session_query_clear(ConfabStoreSessionQuery *query)
{
	g_clear_pointer(&query->owner, g_free);
	g_clear_pointer(&query->agent_id, g_free);
	g_clear_pointer(&query->after, g_free);
}

/**
 * confab_store_message_query_clear:
 * @query: a query on the stack
 *
 * Frees what @query holds, not @query itself.
 */
void
confab_store_message_query_clear(ConfabStoreMessageQuery *query)
{
	g_clear_pointer(&query->session_id, g_free);
	g_clear_pointer(&query->after, g_free);
}

/**
 * confab_store_turn_new:
 *
 * Returns: (transfer full): an empty turn record
 */
ConfabStoreTurn *
confab_store_turn_new(void)
{
	ConfabStoreTurn *turn = g_new0(ConfabStoreTurn, 1);
	turn->messages = g_ptr_array_new_with_free_func(g_object_unref);
	return turn;
}

/**
 * confab_store_turn_copy:
 *
 * Returns: (transfer full): a copy, sharing the (unchanging) objects
 */
ConfabStoreTurn *
confab_store_turn_copy(const ConfabStoreTurn *turn)
{
	ConfabStoreTurn *copy = confab_store_turn_new();

	copy->session = turn->session != NULL ? g_object_ref(turn->session) : NULL;
	copy->session_is_new = turn->session_is_new;
	for (guint i = 0; i < turn->messages->len; i++)
		g_ptr_array_add(copy->messages, g_object_ref(g_ptr_array_index(turn->messages, i)));
	copy->usage_owner = g_strdup(turn->usage_owner);
	copy->usage_month = g_strdup(turn->usage_month);
	copy->tokens_owner = g_strdup(turn->tokens_owner);
	copy->tokens_token_id = g_strdup(turn->tokens_token_id);
	copy->tokens_month = g_strdup(turn->tokens_month);
	copy->tokens = turn->tokens;
	copy->use = turn->use != NULL ? confab_store_usage_row_copy(turn->use) : NULL;
	copy->assistant = turn->assistant != NULL ? g_object_ref(turn->assistant) : NULL;
	copy->unfinished = turn->unfinished != NULL ? g_object_ref(turn->unfinished) : NULL;
	return copy;
}

/**
 * confab_store_turn_free:
 * @turn: (nullable): a turn record
 *
 * Frees @turn and drops its references.
 */
void
confab_store_turn_free(ConfabStoreTurn *turn)
{
	if (turn == NULL)
		return;
	g_clear_object(&turn->session);
	g_ptr_array_unref(turn->messages);
	g_free(turn->usage_owner);
	g_free(turn->usage_month);
	g_free(turn->tokens_owner);
	g_free(turn->tokens_token_id);
	g_free(turn->tokens_month);
	g_clear_pointer(&turn->use, confab_store_usage_row_free);
	g_clear_object(&turn->assistant);
	g_clear_object(&turn->unfinished);
	g_free(turn);
}

/**
 * confab_store_usage_free:
 * @usage: (nullable): a usage record
 */
void
confab_store_usage_free(ConfabStoreUsage *usage)
{
	if (usage == NULL)
		return;
	g_free(usage->owner);
	g_free(usage->month);
	g_free(usage);
}

/**
 * confab_store_limits_free:
 *
 * Frees @limits.
 */
void
confab_store_limits_free(ConfabStoreLimits *limits)
{
	if (limits == NULL)
		return;
	g_free(limits->kind);
	g_free(limits->id);
	g_free(limits);
}

#define STORE_IFACE(self) CONFAB_STORE_GET_IFACE(self)

/*
 * store_run:
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
static void
store_run(ConfabStore *self,
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

/* ---------- the operations, each described once ---------- */

static const ConfabStoreOp op_load_agents = {
    .what = "loading agents",
    .rows = CONFAB_STORE_ROWS_LIST,
    .sql = "SELECT " CONFAB_STORE_AGENT_COLUMNS " FROM agents WHERE deleted_at = 0 ORDER BY id",
    .map = confab_store_row_to_agent,
    .changed = -1,
};

static const ConfabStoreOp op_load_tokens = {
    .what = "loading tokens",
    .rows = CONFAB_STORE_ROWS_LIST,
    .sql = "SELECT " CONFAB_STORE_TOKEN_COLUMNS " FROM tokens ORDER BY id",
    .map = confab_store_row_to_token,
    .changed = -1,
};

static const ConfabStoreOp op_save_agent = {
    .what = "storing an agent",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql =
	"INSERT INTO agents (" CONFAB_STORE_AGENT_COLUMNS ") "
	"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, "
	"$19) "
	"ON CONFLICT (id) DO UPDATE SET name = $2, instructions = $3, provider = $4, "
	"base_url = $5, upstream_model = $6, api_key = $7, api_key_file = $8, params = $9, "
	"connect_timeout = $10, first_byte_timeout = $11, idle_timeout = $12, "
	"total_timeout = $13, updated_at = $15, mcp_servers = $16, max_steps = $17, "
	"upstreams = $18, routing = $19 "
	"WHERE agents.deleted_at = 0",
    .changed = CONFAB_STORE_CHANGE_AGENTS,
};

static const ConfabStoreOp op_delete_agent = {
    .what = "deleting an agent",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "UPDATE agents SET deleted_at = $2, api_key = NULL, mcp_servers = NULL "
	   "WHERE id = $1 AND deleted_at = 0",
    .missing = CONFAB_ERROR_AGENT_NOT_FOUND,
    .missing_format = "no agent %s",
    .changed = CONFAB_STORE_CHANGE_AGENTS,
};

#define LIMITS_COLUMNS "kind, id, rpm, tpm, max_parallel, monthly_tokens"

static gpointer
row_to_limits(ConfabStoreRow *row)
{
	ConfabStoreLimits *limits = g_new0(ConfabStoreLimits, 1);

	limits->kind = g_strdup(confab_store_row_text(row, 0));
	limits->id = g_strdup(confab_store_row_text(row, 1));
	limits->rpm = (guint64)MAX(confab_store_row_int(row, 2), 0);
	limits->tpm = (guint64)MAX(confab_store_row_int(row, 3), 0);
	limits->max_parallel = (guint64)MAX(confab_store_row_int(row, 4), 0);
	limits->monthly_tokens = (guint64)MAX(confab_store_row_int(row, 5), 0);
	return limits;
}

static const ConfabStoreOp op_load_limits = {
    .what = "loading limits",
    .rows = CONFAB_STORE_ROWS_LIST,
    .sql = "SELECT " LIMITS_COLUMNS " FROM limits ORDER BY kind, id",
    .map = row_to_limits,
    .free = (GDestroyNotify)confab_store_limits_free,
    .changed = -1,
};

/* $3…$6: a value below 0 leaves the one stored as it is */
static const ConfabStoreOp op_set_limits = {
    .what = "storing limits",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "INSERT INTO limits (" LIMITS_COLUMNS ", updated_at) "
	   "VALUES ($1, $2, "
	   "CASE WHEN CAST($3 AS bigint) < 0 THEN 0 ELSE $3 END, "
	   "CASE WHEN CAST($4 AS bigint) < 0 THEN 0 ELSE $4 END, "
	   "CASE WHEN CAST($5 AS bigint) < 0 THEN 0 ELSE $5 END, "
	   "CASE WHEN CAST($6 AS bigint) < 0 THEN 0 ELSE $6 END, $7) "
	   "ON CONFLICT (kind, id) DO UPDATE SET "
	   "rpm = CASE WHEN CAST($3 AS bigint) < 0 THEN limits.rpm ELSE $3 END, "
	   "tpm = CASE WHEN CAST($4 AS bigint) < 0 THEN limits.tpm ELSE $4 END, "
	   "max_parallel = CASE WHEN CAST($5 AS bigint) < 0 THEN limits.max_parallel "
	   "ELSE $5 END, "
	   "monthly_tokens = CASE WHEN CAST($6 AS bigint) < 0 THEN limits.monthly_tokens "
	   "ELSE $6 END, "
	   "updated_at = $7",
    .changed = CONFAB_STORE_CHANGE_LIMITS,
};

static const ConfabStoreOp op_save_token = {
    .what = "storing a token",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "INSERT INTO tokens (" CONFAB_STORE_TOKEN_COLUMNS ") "
	   "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) "
	   "ON CONFLICT (id) DO UPDATE SET name = $4, scopes = $5, agent_id = $6, "
	   "expires_at = $8, revoked_at = $9",
    .changed = CONFAB_STORE_CHANGE_TOKENS,
};

static const ConfabStoreOp op_get_session = {
    .what = "reading a session",
    .rows = CONFAB_STORE_ROWS_ONE,
    .sql = "SELECT " CONFAB_STORE_CONVERSATION_COLUMNS " FROM sessions WHERE id = $1",
    .map = confab_store_row_to_conversation,
    .missing = CONFAB_ERROR_CONVERSATION_NOT_FOUND,
    .missing_format = "no session %s",
    .changed = -1,
};

/* the Conversations API's: a conversation before its first turn, with no
 * agent ('') unless its token is bound to one, and its first items ($9,
 * the messages as op_append_messages takes them, created when it is): one
 * statement on PostgreSQL, one savepoint on SQLite, so all or nothing */
static const ConfabStoreOp op_create_conversation = {
    .what = "creating a conversation",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "WITH s AS (INSERT INTO sessions (" CONFAB_STORE_CONVERSATION_COLUMNS ") "
	   "VALUES ($1, $2, $3, $4, $5, $6::bigint, $7, $8) RETURNING id) "
	   "INSERT INTO messages (id, session_id, role, model, content, content_blocks, status, "
	   "created_at) "
	   "SELECT m.id, s.id, m.role, m.model, m.content, m.content_blocks, m.status, $6::bigint "
	   "FROM s, jsonb_to_recordset($9::jsonb) AS m (id text, role text, model text, "
	   "content text, content_blocks text, status integer)",
    .sql_sqlite = "INSERT INTO sessions (" CONFAB_STORE_CONVERSATION_COLUMNS ") "
		  "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    .sql_sqlite_then = "INSERT INTO messages (id, session_id, role, model, content, "
		       "content_blocks, status, created_at) "
		       "SELECT json_extract(m.value, '$.id'), $1, json_extract(m.value, '$.role'), "
		       "json_extract(m.value, '$.model'), json_extract(m.value, '$.content'), "
		       "json_extract(m.value, '$.content_blocks'), "
		       "json_extract(m.value, '$.status'), $6 FROM json_each($9) AS m",
    .changed = -1,
};

static const ConfabStoreOp op_set_conversation_metadata = {
    .what = "storing a conversation's metadata",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "UPDATE sessions SET metadata = $2, updated_at = $3 WHERE id = $1",
    .missing = CONFAB_ERROR_CONVERSATION_NOT_FOUND,
    .missing_format = "no session %s",
    .changed = -1,
};

/* only while it has none: the first response's agent is the conversation's */
static const ConfabStoreOp op_set_conversation_agent = {
    .what = "giving a conversation its agent",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "UPDATE sessions SET agent_id = $2 WHERE id = $1 AND agent_id = ''",
    .missing = CONFAB_ERROR_CONVERSATION_NOT_FOUND,
    .missing_format = "no session %s without an agent",
    .changed = -1,
};

/* $2: the messages, a JSON array of objects: one statement, so one
 * writer job and one commit however many (the conversation touched
 * first, on PostgreSQL in the same statement); none when the session is
 * gone */
static const ConfabStoreOp op_append_messages = {
    .what = "adding messages",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "WITH s AS (UPDATE sessions SET updated_at = GREATEST(updated_at, $3::bigint) "
	   "WHERE id = $1::text RETURNING id) "
	   "INSERT INTO messages (id, session_id, role, model, content, content_blocks, status, "
	   "created_at) "
	   "SELECT m.id, s.id, m.role, m.model, m.content, m.content_blocks, m.status, $3::bigint "
	   "FROM s, jsonb_to_recordset($2::jsonb) AS m (id text, role text, model text, "
	   "content text, content_blocks text, status integer)",
    .sql_sqlite = "INSERT INTO messages (id, session_id, role, model, content, content_blocks, "
		  "status, created_at) "
		  "SELECT json_extract(m.value, '$.id'), $1, json_extract(m.value, '$.role'), "
		  "json_extract(m.value, '$.model'), json_extract(m.value, '$.content'), "
		  "json_extract(m.value, '$.content_blocks'), json_extract(m.value, '$.status'), "
		  "$3 FROM json_each($2) AS m WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1)",
    .sql_sqlite_then = "UPDATE sessions SET updated_at = MAX(updated_at, $3) WHERE id = $1",
    .missing = CONFAB_ERROR_CONVERSATION_NOT_FOUND,
    .missing_format = "no session %s",
    .changed = -1,
};

static const ConfabStoreOp op_get_message = {
    .what = "reading a message",
    .rows = CONFAB_STORE_ROWS_ONE,
    .sql = "SELECT " CONFAB_STORE_MESSAGE_COLUMNS " FROM messages "
	   "WHERE session_id = $1 AND id = $2",
    .map = confab_store_row_to_message,
    .missing = CONFAB_ERROR_ITEM_NOT_FOUND,
    .missing_format = "no such message in session %s",
    .changed = -1,
};

/* what is left of a message once one of its items is deleted; SQLite's
 * search index still finds the text until the conversation is indexed
 * anew */
static const ConfabStoreOp op_set_message_content = {
    .what = "storing a message's content",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "UPDATE messages SET content = $3, content_blocks = $4 "
	   "WHERE session_id = $1 AND id = $2",
    .missing = CONFAB_ERROR_ITEM_NOT_FOUND,
    .missing_format = "no such message in session %s",
    .changed = -1,
};

/* SQLite indexes its conversation anew for search (the schema's
 * search_message_gone trigger) */
static const ConfabStoreOp op_delete_message = {
    .what = "deleting a message",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "DELETE FROM messages WHERE session_id = $1 AND id = $2",
    .missing = CONFAB_ERROR_ITEM_NOT_FOUND,
    .missing_format = "no such message in session %s",
    .changed = -1,
};

/* The answer confab_reap() stored for a stream whose PostgreSQL instance
 * died does not carry the response id (a lease knows its answer's id, not
 * its response's), but it is the message right after the response's
 * input: an assistant's, empty and incomplete, of no response. It goes
 * with the input, or it would stay a lone answer, half a turn. SQLite's
 * one instance stores no such answer; its search index takes the
 * conversation anew (search_message_gone). */
static const ConfabStoreOp op_delete_response = {
    .what = "deleting a response",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "WITH r AS (SELECT session_id, max(id) AS last FROM messages "
	   "    WHERE response_id = $1 GROUP BY session_id), "
	   "  reaped AS (DELETE FROM messages AS m USING r "
	   "    WHERE m.session_id = r.session_id AND m.response_id IS NULL "
	   "      AND m.role = 'assistant' AND m.status = 1 AND m.content_blocks = '[]' "
	   "      AND m.id = (SELECT min(n.id) FROM messages AS n "
	   "                  WHERE n.session_id = r.session_id AND n.id > r.last)) "
	   "DELETE FROM messages WHERE response_id = $1",
    .sql_sqlite = "DELETE FROM messages WHERE response_id = $1",
    .missing = CONFAB_ERROR_RESPONSE_NOT_FOUND,
    .missing_format = "no response %s",
    .changed = -1,
};

static const ConfabStoreOp op_get_history = {
    .what = "reading the history",
    .rows = CONFAB_STORE_ROWS_LIST,
    .sql = "SELECT " CONFAB_STORE_MESSAGE_COLUMNS " FROM messages WHERE session_id = $1 "
	   "ORDER BY id",
    .map = confab_store_row_to_message,
    .changed = -1,
};

static const ConfabStoreOp op_get_response = {
    .what = "reading a response",
    .rows = CONFAB_STORE_ROWS_LIST,
    .sql = "SELECT " CONFAB_STORE_MESSAGE_COLUMNS " FROM messages WHERE response_id = $1 "
	   "ORDER BY id",
    .map = confab_store_row_to_message,
    .changed = -1,
};

/* ---------- responses: their records and kept events ---------- */

/* a background one only while fewer than $11 of its owner's run ($11 <= 0:
 * no cap) */
static const ConfabStoreOp op_save_response = {
    .what = "storing a response",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "INSERT INTO responses (" CONFAB_STORE_RESPONSE_COLUMNS ", instance_id) "
	   "SELECT $1, $2, $3, $4, CAST($5 AS integer), CAST($6 AS integer), $7, $8, NULL, 0, "
	   "CAST($9 AS bigint), 0, CAST($10 AS text) WHERE CAST($5 AS integer) = 0 OR "
	   "CAST($11 AS bigint) <= 0 OR (SELECT count(*) FROM responses WHERE owner = $2 AND "
	   "background = 1 AND status IN ('queued', 'in_progress')) < CAST($11 AS bigint)",
    .missing = CONFAB_ERROR_RATE_LIMITED,
    .missing_format = "Too many background responses run at once for this owner: "
		      "response %s was not started ([responses] max_background)",
    .changed = -1,
};

static const ConfabStoreOp op_get_response_record = {
    .what = "reading a response",
    .rows = CONFAB_STORE_ROWS_ONE,
    .sql = "SELECT " CONFAB_STORE_RESPONSE_COLUMNS " FROM responses WHERE id = $1",
    .map = confab_store_row_to_response_record,
    .free = (GDestroyNotify)confab_response_record_free,
    .missing = CONFAB_ERROR_RESPONSE_NOT_FOUND,
    .missing_format = "No response '%s'",
    .changed = -1,
};

/* only a running one ends; one asked to stop ends cancelled, unless it
 * completed first; with its last batch of events, in the same transaction
 * (a follower that sees it ended has every event) */
static const ConfabStoreOp op_end_response = {
    .what = "storing how a response ended",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "WITH kept AS (INSERT INTO response_events (response_id, first_seq, last_seq, data) "
	   "SELECT $1, $5::bigint, $6::bigint, $7 WHERE $7::text IS NOT NULL) "
	   "UPDATE responses SET status = CASE WHEN cancel_requested = 1 AND "
	   "$2::text <> 'completed' THEN 'cancelled' ELSE $2::text END, "
	   "error = $3, completed_at = $4::bigint "
	   "WHERE id = $1 AND status IN ('queued', 'in_progress')",
    .sql_sqlite = "INSERT INTO response_events (response_id, first_seq, last_seq, data) "
		  "SELECT $1, $5, $6, $7 WHERE $7 IS NOT NULL",
    .sql_sqlite_then = "UPDATE responses SET status = CASE WHEN cancel_requested = 1 AND "
		       "$2 <> 'completed' THEN 'cancelled' ELSE $2 END, "
		       "error = $3, completed_at = $4 "
		       "WHERE id = $1 AND status IN ('queued', 'in_progress')",
    .changed = -1,
};

/* what runs in the background now, on every instance */
static const ConfabStoreOp op_list_running_responses = {
    .what = "listing background responses",
    .rows = CONFAB_STORE_ROWS_LIST,
    .sql = "SELECT " CONFAB_STORE_RESPONSE_COLUMNS " FROM responses WHERE background = 1 "
	   "AND status IN ('queued', 'in_progress') AND (CAST($1 AS text) IS NULL OR owner = $1) "
	   "AND (CAST($3 AS text) IS NULL OR session_id = $3) ORDER BY id LIMIT CAST($2 AS bigint)",
    .map = confab_store_row_to_response_record,
    .free = (GDestroyNotify)confab_response_record_free,
    .changed = -1,
};

static const ConfabStoreOp op_cancel_response = {
    .what = "cancelling a response",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "UPDATE responses SET cancel_requested = 1 "
	   "WHERE id = $1 AND status IN ('queued', 'in_progress')",
    .changed = -1,
};

static const ConfabStoreOp op_append_response_events = {
    .what = "keeping a response's events",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "INSERT INTO response_events (response_id, first_seq, last_seq, data) "
	   "VALUES ($1, CAST($2 AS bigint), CAST($3 AS bigint), $4)",
    .changed = -1,
};

static const ConfabStoreOp op_list_response_events = {
    .what = "reading a response's events",
    .rows = CONFAB_STORE_ROWS_LIST,
    .sql = "SELECT first_seq, last_seq, data FROM response_events "
	   "WHERE response_id = $1 AND last_seq > CAST($2 AS bigint) ORDER BY first_seq",
    .map = confab_store_row_to_response_events,
    .free = (GDestroyNotify)confab_response_record_events_free,
    .changed = -1,
};

/* on PostgreSQL, those of instances whose lease is gone; SQLite's one
 * instance calls it before it runs any */
static const ConfabStoreOp op_fail_orphan_responses = {
    .what = "failing the responses nobody runs",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "UPDATE responses SET status = 'failed', error = $1, completed_at = $2::bigint "
	   "WHERE status IN ('queued', 'in_progress') AND NOT EXISTS (SELECT 1 FROM "
	   "instances AS i WHERE i.id = responses.instance_id AND i.expires_at > now())",
    .sql_sqlite = "UPDATE responses SET status = 'failed', error = $1, completed_at = $2 "
		  "WHERE status IN ('queued', 'in_progress')",
    .changed = -1,
};

static const ConfabStoreOp op_drop_response_events = {
    .what = "dropping old response events",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "DELETE FROM response_events WHERE response_id IN (SELECT id FROM responses "
	   "WHERE completed_at > 0 AND completed_at < CAST($1 AS bigint))",
    .changed = -1,
};

/* the statement is put together per call from constant fragments
 * (confab_store_list_sessions_async()) */
static const ConfabStoreOp op_list_sessions = {
    .what = "listing sessions",
    .rows = CONFAB_STORE_ROWS_PAGE,
    .map = confab_store_row_to_session,
    .changed = -1,
};

/* [order][after]: each walks the index in id order, LIMIT the page + 1;
 * after 2: from the cursor on, itself included */
#define LIST_MESSAGES(where_order)                                                                 \
	{                                                                                          \
		.what = "listing messages", .rows = CONFAB_STORE_ROWS_PAGE,                        \
		.sql = "SELECT " CONFAB_STORE_MESSAGE_COLUMNS                                      \
		       " FROM messages WHERE session_id = $1 " where_order " LIMIT $2",            \
		.map = confab_store_row_to_message, .changed = -1,                                 \
	}
static const ConfabStoreOp op_list_messages[2][3] = {
    {LIST_MESSAGES("ORDER BY id DESC"),
     LIST_MESSAGES("AND id < $3 ORDER BY id DESC"),
     LIST_MESSAGES("AND id <= $3 ORDER BY id DESC")},
    {LIST_MESSAGES("ORDER BY id ASC"),
     LIST_MESSAGES("AND id > $3 ORDER BY id ASC"),
     LIST_MESSAGES("AND id >= $3 ORDER BY id ASC")},
};
#undef LIST_MESSAGES

static const ConfabStoreOp op_delete_session = {
    .what = "deleting a session",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "DELETE FROM sessions WHERE id = $1",
    .sql_sqlite_then = "DELETE FROM messages WHERE session_id = $1",
    .missing = CONFAB_ERROR_CONVERSATION_NOT_FOUND,
    .missing_format = "no session %s",
    .changed = -1,
};

static const ConfabStoreOp op_get_approval = {
    .what = "reading an approval",
    .rows = CONFAB_STORE_ROWS_ONE,
    .sql = "SELECT " CONFAB_STORE_APPROVAL_COLUMNS " FROM approvals WHERE id = $1",
    .map = confab_store_row_to_approval,
    .free = (GDestroyNotify)confab_approval_free,
    .missing = CONFAB_ERROR_APPROVAL_NOT_FOUND,
    .missing_format = "No approval '%s'",
    .changed = -1,
};

/* A decision's answer, from the approval as the write left it and, in its
 * last column, whether the decision was written. */
static gboolean
approval_decided(ConfabStoreCall *call, ConfabStoreRow *row, gpointer mapped, GError **error)
{
	ConfabApproval *now = mapped;
	const gchar *id = confab_store_call_get_arg(call, 0)->text;
	const gchar *asked = confab_store_call_get_arg(call, 1)->text;
	gboolean written = confab_store_row_int(row, 15) != 0;

	if (written && g_strcmp0(confab_approval_state_to_string(now->state), asked) != 0) {
		/* the turn that waited is gone: the statement timed it out */
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_APPROVAL_DECIDED,
			    "The approval '%s' is no longer pending: it timed out "
			    "(nobody waits for it any more)",
			    id);
		return FALSE;
	}
	if (!written) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_APPROVAL_DECIDED,
			    "The approval '%s' is no longer pending: it was %s",
			    id,
			    now->state == CONFAB_APPROVAL_STATE_TIMED_OUT  ? "timed out"
			    : now->state == CONFAB_APPROVAL_STATE_APPROVED ? "approved"
									   : "denied");
		return FALSE;
	}
	return TRUE;
}

/* A decision wins only over a pending row. On PostgreSQL a person's
 * decision counts only while a live turn waits: a response's request
 * (nobody waits: its continuation decides), or an approval whose
 * instance's lease runs; otherwise the statement times it out. A timeout
 * is always taken. SQLite's one instance timed out its predecessors' at
 * open; its second statement reads the row back, changes() saying whether
 * the first wrote it. */
static const ConfabStoreOp op_decide_approval = {
    .what = "deciding an approval",
    .rows = CONFAB_STORE_ROWS_WRITTEN,
    .sql = "WITH l AS (SELECT $2 = 'timed_out' OR a.response_id IS NOT NULL OR "
	   "EXISTS (SELECT 1 FROM instances AS i WHERE i.id = a.instance_id "
	   "AND i.expires_at > now()) AS live FROM approvals AS a WHERE a.id = $1), "
	   "u AS (UPDATE approvals SET "
	   "state = CASE WHEN l.live THEN $2 ELSE 'timed_out' END, "
	   "decided_by = CASE WHEN l.live THEN $3 ELSE 'timeout' END, "
	   "reason = CASE WHEN l.live THEN $4 "
	   "ELSE 'Its confabd stopped: nobody waits for it any more' END, "
	   "decided_at = $5::bigint FROM l WHERE id = $1 AND state = 'pending' "
	   "RETURNING " CONFAB_STORE_APPROVAL_COLUMNS "), "
	   /* a row this statement did not decide is read locked: another
	    * transaction's decision (confab_reap() timing it out) that the
	    * UPDATE waited for is then seen, not the statement's snapshot */
	   "r AS (SELECT " CONFAB_STORE_APPROVAL_COLUMNS " FROM approvals WHERE id = $1 "
	   "AND NOT EXISTS (SELECT 1 FROM u) FOR SHARE) "
	   "SELECT " CONFAB_STORE_APPROVAL_COLUMNS
	   ", 1 FROM u UNION ALL SELECT " CONFAB_STORE_APPROVAL_COLUMNS ", 0 FROM r",
    .sql_sqlite = "UPDATE approvals SET state = $2, decided_by = $3, reason = $4, "
		  "decided_at = $5 WHERE id = $1 AND state = 'pending'",
    .sql_sqlite_then = "SELECT " CONFAB_STORE_APPROVAL_COLUMNS
		       ", changes() > 0 FROM approvals WHERE id = $1",
    .map = confab_store_row_to_approval,
    .free = (GDestroyNotify)confab_approval_free,
    .missing = CONFAB_ERROR_APPROVAL_NOT_FOUND,
    .missing_format = "No approval '%s'",
    .changed = -1,
    .verdict = approval_decided,
};

/* what a live turn waits for: on PostgreSQL, of an instance whose lease
 * runs; SQLite's one instance timed out its predecessors' at open */
static const ConfabStoreOp op_list_approvals = {
    .what = "listing approvals",
    .rows = CONFAB_STORE_ROWS_LIST,
    .sql = "SELECT " CONFAB_STORE_APPROVAL_COLUMNS " FROM approvals WHERE state = 'pending' "
	   "AND response_id IS NULL AND ($1::text IS NULL OR owner = $1) "
	   "AND ($3::text IS NULL OR agent_id = $3) "
	   "AND EXISTS (SELECT 1 FROM instances AS i WHERE i.id = approvals.instance_id "
	   "AND i.expires_at > now()) "
	   "ORDER BY id LIMIT $2::bigint",
    .sql_sqlite = "SELECT " CONFAB_STORE_APPROVAL_COLUMNS " FROM approvals "
		  "WHERE state = 'pending' AND response_id IS NULL "
		  "AND ($1 IS NULL OR owner = $1) AND ($3 IS NULL OR agent_id = $3) "
		  "ORDER BY id LIMIT $2",
    .map = confab_store_row_to_approval,
    .free = (GDestroyNotify)confab_approval_free,
    .changed = -1,
};

/* a turn's (no response id) is the instance's whose turn waits: it lives
 * as long as that instance's lease (PostgreSQL) */
static const ConfabStoreOp op_save_approval = {
    .what = "storing an approval",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "INSERT INTO approvals (" CONFAB_STORE_APPROVAL_COLUMNS ", instance_id) VALUES "
	   "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, "
	   "CASE WHEN $15::text IS NULL THEN $16::text END)",
    .sql_sqlite = "INSERT INTO approvals (" CONFAB_STORE_APPROVAL_COLUMNS ") VALUES "
		  "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    .changed = -1,
};

static const ConfabStoreOp op_get_elicitation = {
    .what = "reading an elicitation",
    .rows = CONFAB_STORE_ROWS_ONE,
    .sql = "SELECT " CONFAB_STORE_ELICITATION_COLUMNS " FROM elicitations WHERE id = $1",
    .map = (ConfabStoreRowMap)confab_store_row_to_elicitation,
    .free = (GDestroyNotify)confab_elicitation_request_free,
    .missing = CONFAB_ERROR_ELICITATION_NOT_FOUND,
    .missing_format = "No elicitation '%s'",
    .changed = -1,
};

/* the instance whose turn waits is kept (PostgreSQL): an answer counts
 * only while its lease runs */
static const ConfabStoreOp op_save_elicitation = {
    .what = "storing an elicitation",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "INSERT INTO elicitations (" CONFAB_STORE_ELICITATION_COLUMNS ", instance_id) VALUES "
	   "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    .changed = -1,
};

/* one conditional write: only a pending row, of a live waiting instance */
static const ConfabStoreOp op_answer_elicitation = {
    .what = "answering an elicitation",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "UPDATE elicitations SET state = $2, content = $3, answered_by = $4, "
	   "answered_at = $5 WHERE id = $1 AND state = 'pending' "
	   "AND (instance_id IS NULL OR EXISTS (SELECT 1 FROM instances AS i "
	   "WHERE i.id = elicitations.instance_id AND i.expires_at > now()))",
    .sql_sqlite = "UPDATE elicitations SET state = $2, content = $3, answered_by = $4, "
		  "answered_at = $5 WHERE id = $1 AND state = 'pending'",
    .missing = CONFAB_ERROR_ELICITATION_ANSWERED,
    .missing_format = "The elicitation '%s' is no longer pending",
    .changed = -1,
};

/* MCP servers' OAuth state (issue 34): written by confabd, read only by
 * confabd, never returned over its APIs */
static gpointer
map_text(ConfabStoreRow *row)
{
	return g_strdup(confab_store_row_text(row, 0));
}

static gpointer
map_mcp_oauth_state(ConfabStoreRow *row)
{
	gchar **out = g_new0(gchar *, 4);

	out[0] = g_strdup(confab_store_row_text(row, 0));
	out[1] = g_strdup(confab_store_row_text(row, 1));
	out[2] = g_strdup(confab_store_row_text(row, 2));
	return out;
}

/* an older state never replaces a newer one */
#define MCP_OAUTH_UPSERT                                                                           \
	"ON CONFLICT (agent_id, server) DO UPDATE SET "                                            \
	"state = excluded.state, data = excluded.data, version = excluded.version, "               \
	"updated_at = excluded.updated_at WHERE mcp_oauth.version < excluded.version"

static const ConfabStoreOp op_save_mcp_oauth = {
    .what = "storing an MCP server's OAuth state",
    .rows = CONFAB_STORE_ROWS_NONE,
    /* saves may commit out of order (a pool's connections): an older
     * state never replaces a newer one. On PostgreSQL two saves of one
     * server at once take turns (a lock on the pair for the transaction):
     * the second must see the first's row, or it inserts too and its
     * pending state, the same, breaks mcp_oauth_by_state, which is no
     * arbiter of the ON CONFLICT (seen on a loaded machine) */
    .sql = "WITH l AS (SELECT pg_advisory_xact_lock(hashtext($1::text || chr(10) || "
	   "$2::text))) "
	   "INSERT INTO mcp_oauth (agent_id, server, state, data, version, updated_at) "
	   "SELECT $1::text, $2::text, $3::text, $4::text, $5::bigint, $6::bigint FROM "
	   "l " MCP_OAUTH_UPSERT,
    .sql_sqlite = "INSERT INTO mcp_oauth (agent_id, server, state, data, version, updated_at) "
		  "VALUES ($1, $2, $3, $4, $5, $6) " MCP_OAUTH_UPSERT,
    .changed = -1,
};

static const ConfabStoreOp op_get_mcp_oauth = {
    .what = "reading an MCP server's OAuth state",
    .rows = CONFAB_STORE_ROWS_ONE,
    .sql = "SELECT data FROM mcp_oauth WHERE agent_id = $1 AND server = $2",
    .map = map_text,
    .free = g_free,
    .missing = CONFAB_ERROR_NOT_FOUND,
    .missing_format = "No OAuth state for the agent '%s'",
    .changed = -1,
};

static const ConfabStoreOp op_find_mcp_oauth_state = {
    .what = "finding an OAuth authorization",
    .rows = CONFAB_STORE_ROWS_ONE,
    .sql = "SELECT agent_id, server, data FROM mcp_oauth WHERE state = $1",
    .map = map_mcp_oauth_state,
    .free = (GDestroyNotify)g_strfreev,
    .missing = CONFAB_ERROR_NOT_FOUND,
    .missing_format = "No OAuth authorization waits for the state '%s'",
    .changed = -1,
};

/* one conditional write: of two callbacks with the same state, one counts */
static const ConfabStoreOp op_claim_mcp_oauth_state = {
    .what = "claiming an OAuth authorization",
    .rows = CONFAB_STORE_ROWS_NONE,
    .sql = "UPDATE mcp_oauth SET state = NULL WHERE state = $1",
    .missing = CONFAB_ERROR_NOT_FOUND,
    .missing_format = "The OAuth authorization of the state '%s' was used already",
    .changed = -1,
};

/* what a live turn waits for, as op_list_approvals */
static const ConfabStoreOp op_list_elicitations = {
    .what = "listing elicitations",
    .rows = CONFAB_STORE_ROWS_LIST,
    .sql = "SELECT " CONFAB_STORE_ELICITATION_COLUMNS " FROM elicitations "
	   "WHERE state = 'pending' AND ($1::text IS NULL OR owner = $1) "
	   "AND ($3::text IS NULL OR agent_id = $3) "
	   "AND EXISTS (SELECT 1 FROM instances AS i WHERE i.id = elicitations.instance_id "
	   "AND i.expires_at > now()) "
	   "ORDER BY created_at, id LIMIT $2::bigint",
    .sql_sqlite = "SELECT " CONFAB_STORE_ELICITATION_COLUMNS " FROM elicitations "
		  "WHERE state = 'pending' AND ($1 IS NULL OR owner = $1) "
		  "AND ($3 IS NULL OR agent_id = $3) ORDER BY created_at, id LIMIT $2",
    .map = (ConfabStoreRowMap)confab_store_row_to_elicitation,
    .free = (GDestroyNotify)confab_elicitation_request_free,
    .changed = -1,
};

/* Whether the store answers at all: the cheapest read a reader runs. */
static const ConfabStoreOp op_ping = {
    .what = "asking the store whether it answers",
    .rows = CONFAB_STORE_ROWS_ONE,
    .sql = "SELECT 'ok'",
    .map = map_text,
    .free = g_free,
    .missing = CONFAB_ERROR_STORE_UNAVAILABLE,
    .missing_format = "the store gave no row%s",
    .changed = -1,
};

/* A call of @op with its one text argument. */
static ConfabStoreCall *
call_with_text(const ConfabStoreOp *op, const gchar *text)
{
	ConfabStoreCall *call = confab_store_call_new(op);
	confab_store_call_add_text(call, text);
	return call;
}

static gboolean
finish_boolean(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

static gpointer
finish_pointer(ConfabStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/*
 * The public pairs, GIO-style. Each confab_store_*_async() takes, after its
 * own arguments, @cancellable (nullable; a write, once queued, is seen
 * through), @callback (called in the caller's thread-default main context
 * once the call completed: a write once committed) and @user_data; its
 * _finish takes the callback's #GAsyncResult and returns what its comment
 * says, or %FALSE or %NULL with @error set. Where an operation's pair has
 * a shape shared with others, one line makes each function from its
 * op_<name> above (a pair's two doc comments come first, then its lines):
 * - DEFINE_ASYNC_NONE(name): an op without arguments;
 * - DEFINE_ASYNC_TEXT(name, a): an op whose one argument is the text @a;
 * - DEFINE_ASYNC_TEXT2(name, a, b): one whose two are the texts @a and @b;
 * - DEFINE_ASYNC_TEXT_INT(name, a, n): the text @a and the integer @n;
 * - DEFINE_ASYNC_LIST(name, filter): a list by (nullable) owner, one
 *   (nullable) @filter and a limit, bound as `$1` owner, `$2` limit, `$3`
 *   @filter;
 * - DEFINE_ASYNC_VFUNC(name, vfunc, Type, a): no op, but the backend's
 *   own vfunc, given the one argument @a;
 * - DEFINE_FINISH_POINTER(name, Type): the result, (transfer full);
 * - DEFINE_FINISH_BOOLEAN(name): %TRUE, for a write.
 * The others are declared with the header's CONFAB_STORE_ASYNC(), build
 * their call by hand and end with RUN(name, call), which hands it to
 * store_run() with their own @self, @cancellable, @callback and @user_data.
 */
#define RUN(name, call)                                                                            \
	store_run(self, (call), confab_store_##name##_async, cancellable, callback, user_data)

#define DEFINE_ASYNC_NONE(name)                                                                    \
	CONFAB_STORE_ASYNC(name)                                                                   \
	{                                                                                          \
		g_return_if_fail(CONFAB_IS_STORE(self));                                           \
		RUN(name, confab_store_call_new(&op_##name));                                      \
	}

#define DEFINE_ASYNC_TEXT(name, a)                                                                 \
	CONFAB_STORE_ASYNC(name, const gchar *a)                                                   \
	{                                                                                          \
		g_return_if_fail(CONFAB_IS_STORE(self));                                           \
		RUN(name, call_with_text(&op_##name, a));                                          \
	}

#define DEFINE_ASYNC_TEXT2(name, a, b)                                                             \
	CONFAB_STORE_ASYNC(name, const gchar *a, const gchar *b)                                   \
	{                                                                                          \
		ConfabStoreCall *call = NULL;                                                      \
                                                                                                   \
		g_return_if_fail(CONFAB_IS_STORE(self));                                           \
		call = call_with_text(&op_##name, a);                                              \
		confab_store_call_add_text(call, b);                                               \
		RUN(name, call);                                                                   \
	}

#define DEFINE_ASYNC_TEXT_INT(name, a, n)                                                          \
	CONFAB_STORE_ASYNC(name, const gchar *a, gint64 n)                                         \
	{                                                                                          \
		ConfabStoreCall *call = NULL;                                                      \
                                                                                                   \
		g_return_if_fail(CONFAB_IS_STORE(self));                                           \
		call = call_with_text(&op_##name, a);                                              \
		confab_store_call_add_int(call, n);                                                \
		RUN(name, call);                                                                   \
	}

#define DEFINE_ASYNC_LIST(name, filter)                                                            \
	CONFAB_STORE_ASYNC(name, const gchar *owner, const gchar *filter, guint limit)             \
	{                                                                                          \
		ConfabStoreCall *call = NULL;                                                      \
                                                                                                   \
		g_return_if_fail(CONFAB_IS_STORE(self));                                           \
		call = call_with_text(&op_##name, owner);                                          \
		confab_store_call_add_int(call, limit);                                            \
		confab_store_call_add_text(call, filter);                                          \
		RUN(name, call);                                                                   \
	}

#define DEFINE_ASYNC_VFUNC(name, vfunc, Type, a)                                                   \
	CONFAB_STORE_ASYNC(name, Type a)                                                           \
	{                                                                                          \
		g_return_if_fail(CONFAB_IS_STORE(self));                                           \
		STORE_IFACE(self)->vfunc(self, a, cancellable, callback, user_data);               \
	}

#define DEFINE_FINISH_POINTER(name, Type)                                                          \
	CONFAB_STORE_FINISH(Type, name)                                                            \
	{                                                                                          \
		return finish_pointer(self, result, error);                                        \
	}

#define DEFINE_FINISH_BOOLEAN(name)                                                                \
	CONFAB_STORE_FINISH(gboolean, name)                                                        \
	{                                                                                          \
		return finish_boolean(self, result, error);                                        \
	}

/**
 * confab_store_load_agents_async:
 *
 * Reads every agent that is not deleted.
 */
/**
 * confab_store_load_agents_finish:
 *
 * Returns: (transfer full) (element-type ConfabAgent): the agents, by id
 */
DEFINE_ASYNC_NONE(load_agents)
DEFINE_FINISH_POINTER(load_agents, GPtrArray *)

/**
 * confab_store_load_tokens_async:
 *
 * Reads every token, revoked ones included.
 */
/**
 * confab_store_load_tokens_finish:
 *
 * Returns: (transfer full) (element-type ConfabToken): the tokens, by id
 */
DEFINE_ASYNC_NONE(load_tokens)
DEFINE_FINISH_POINTER(load_tokens, GPtrArray *)

/**
 * confab_store_load_limits_async:
 *
 * Reads every owner's and token's own limits, set with
 * confab_store_set_limits_async().
 */
/**
 * confab_store_load_limits_finish:
 *
 * Returns: (transfer full) (element-type ConfabStoreLimits): the limits,
 *   by kind and id
 */
DEFINE_ASYNC_NONE(load_limits)
DEFINE_FINISH_POINTER(load_limits, GPtrArray *)

/**
 * confab_store_set_limits_async:
 * @kind: `owner` or `token`
 * @id: the owner's name or the token's id
 * @values: rpm, tpm, max_parallel and monthly_tokens, in this order: 0
 *   removes one, a value below 0 leaves it as it is
 *
 * Stores an owner's or a token's own limits, in one statement.
 */
CONFAB_STORE_ASYNC(set_limits, const gchar *kind, const gchar *id, const gint64 values[4])
{
	ConfabStoreCall *call = confab_store_call_new(&op_set_limits);

	g_return_if_fail(CONFAB_IS_STORE(self));
	confab_store_call_add_text(call, kind);
	confab_store_call_add_text(call, id);
	for (guint i = 0; i < 4; i++)
		confab_store_call_add_int(call, values[i]);
	confab_store_call_add_int(call, g_get_real_time() / G_USEC_PER_SEC);
	RUN(set_limits, call);
}

/**
 * confab_store_set_limits_finish:
 *
 * Returns: %TRUE once committed
 */
DEFINE_FINISH_BOOLEAN(set_limits)

/**
 * confab_store_save_agent_async:
 * @agent: the agent, new or changed
 * @cancellable: (nullable): ignored once the write is queued: it is seen through
 *
 * Inserts @agent, or updates it by id unless it was deleted; other
 * instances sharing the database hear of it (::changed).
 */
CONFAB_STORE_ASYNC(save_agent, ConfabAgent *agent)
{
	ConfabStoreCall *call = NULL;
	g_autofree gchar *upstreams = NULL;
	g_autofree gchar *routing = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(CONFAB_IS_AGENT(agent));
	upstreams = confab_agent_get_stored_upstreams(agent);
	routing = confab_agent_get_routing_json(agent, FALSE);
	call = confab_store_call_new(&op_save_agent);
	confab_store_call_add_text(call, confab_agent_get_id(agent));
	confab_store_call_add_text(call, confab_agent_get_name(agent));
	confab_store_call_add_text(call, confab_agent_get_instructions(agent) ?: "");
	confab_store_call_add_text(call, confab_agent_get_provider(agent));
	confab_store_call_add_text(call, confab_agent_get_base_url(agent));
	confab_store_call_add_text(call, confab_agent_get_upstream_model(agent));
	confab_store_call_add_text(call, confab_agent_get_api_key(agent));
	confab_store_call_add_text(call, confab_agent_get_api_key_file(agent));
	confab_store_call_add_text(call, confab_agent_get_params(agent));
	confab_store_call_add_int(call, confab_agent_get_connect_timeout(agent));
	confab_store_call_add_int(call, confab_agent_get_first_byte_timeout(agent));
	confab_store_call_add_int(call, confab_agent_get_idle_timeout(agent));
	confab_store_call_add_int(call, confab_agent_get_total_timeout(agent));
	confab_store_call_add_int(call, confab_agent_get_created_at(agent));
	confab_store_call_add_int(call, confab_agent_get_updated_at(agent));
	confab_store_call_add_text(call, confab_agent_get_mcp_servers(agent));
	confab_store_call_add_int(call, confab_agent_get_max_steps(agent));
	confab_store_call_add_text(call, upstreams);
	confab_store_call_add_text(call, routing);
	RUN(save_agent, call);
}

/**
 * confab_store_save_agent_finish:
 *
 * Returns: %TRUE once committed
 */
DEFINE_FINISH_BOOLEAN(save_agent)

/**
 * confab_store_delete_agent_async:
 * @agent_id: the agent
 * @deleted_at: when, in Unix seconds
 *
 * Marks the agent deleted (its conversations keep its id) and forgets its
 * key and MCP servers.
 */
/**
 * confab_store_delete_agent_finish:
 *
 * Returns: %TRUE once committed; %CONFAB_ERROR_AGENT_NOT_FOUND when there
 *   was no such agent, or it was deleted already
 */
DEFINE_ASYNC_TEXT_INT(delete_agent, agent_id, deleted_at)
DEFINE_FINISH_BOOLEAN(delete_agent)

/**
 * confab_store_save_token_async:
 * @token: the token (its secret only as its SHA-256 hash)
 *
 * Inserts @token, or updates its name, scopes, agent, expiry and
 * revocation by id.
 */
CONFAB_STORE_ASYNC(save_token, ConfabToken *token)
{
	g_autofree gchar *scopes = NULL;
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(CONFAB_IS_TOKEN(token));
	scopes = g_strjoinv(" ", (gchar **)confab_token_get_scopes(token));
	call = call_with_text(&op_save_token, confab_token_get_id(token));
	confab_store_call_add_bytes(call, confab_token_get_hash(token));
	confab_store_call_add_text(call, confab_token_get_owner(token));
	confab_store_call_add_text(call, confab_token_get_name(token) ?: "");
	confab_store_call_add_text(call, scopes);
	confab_store_call_add_text(call, confab_token_get_agent_id(token));
	confab_store_call_add_int(call, confab_token_get_created_at(token));
	confab_store_call_add_int(call, confab_token_get_expires_at(token));
	confab_store_call_add_int(call, confab_token_get_revoked_at(token));
	RUN(save_token, call);
}

/**
 * confab_store_save_token_finish:
 *
 * Returns: %TRUE once committed; an error for a hash that another token has
 */
DEFINE_FINISH_BOOLEAN(save_token)

/**
 * confab_store_set_quota_async:
 * @owner: the owner
 * @monthly_requests: the owner's own quota; 0 for unlimited, whatever the
 *   default
 */
CONFAB_STORE_ASYNC(set_quota, const gchar *owner, guint64 monthly_requests)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)
	    ->set_quota(self, owner, monthly_requests, cancellable, callback, user_data);
}

/**
 * confab_store_set_quota_finish:
 *
 * Returns: %TRUE once committed
 */
DEFINE_FINISH_BOOLEAN(set_quota)

/**
 * confab_store_get_usage_async:
 * @owner: the owner
 * @month: the month, `YYYY-MM` (UTC)
 * @default_limit: the quota of owners without one of their own; 0 for none
 */
CONFAB_STORE_ASYNC(get_usage, const gchar *owner, const gchar *month, guint64 default_limit)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)
	    ->get_usage(self, owner, month, default_limit, cancellable, callback, user_data);
}

/**
 * confab_store_get_usage_finish:
 *
 * Returns: (transfer full): the owner's use of @month
 */
DEFINE_FINISH_POINTER(get_usage, ConfabStoreUsage *)

/**
 * confab_store_list_usage_async:
 * @month: the month, `YYYY-MM` (UTC)
 * @default_limit: the quota of owners without one of their own; 0 for none
 *
 * The use of every owner who has a quota: their own, or, when
 * @default_limit is not 0, the default for those who have used some of it
 * in @month.
 */
CONFAB_STORE_ASYNC(list_usage, const gchar *month, guint64 default_limit)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->list_usage(self, month, default_limit, cancellable, callback, user_data);
}

/**
 * confab_store_list_usage_finish:
 *
 * Returns: (transfer full) (element-type ConfabStoreUsage): by owner
 */
DEFINE_FINISH_POINTER(list_usage, GPtrArray *)

/**
 * confab_store_rate_interval:
 * @rpm: requests per minute, above 0
 *
 * Returns: the GCRA emission interval of @rpm, in microseconds: one request
 *   comes back every so often
 */
gint64
confab_store_rate_interval(guint64 rpm)
{
	return MAX((gint64)(G_USEC_PER_SEC * 60 / MAX(rpm, 1)), 1);
}

/**
 * confab_store_rate_admit:
 * @tat: (inout): the rate's theoretical arrival time, microseconds on the
 *   store's clock; 0 for a rate never used
 * @now: the store's clock, microseconds
 * @rpm: requests per minute, above 0
 *
 * GCRA: admits a request when at most @rpm - 1 intervals are still owed,
 * and then owes one more. A full burst is @rpm requests at once; after it,
 * one request per interval: never twice @rpm at a minute's edge.
 *
 * Returns: whether the request is admitted (@tat moved on)
 */
gboolean
confab_store_rate_admit(gint64 *tat, gint64 now, guint64 rpm)
{
	gint64 interval = confab_store_rate_interval(rpm);
	gint64 from = MAX(*tat, now);

	if (from - now > (gint64)(rpm - 1) * interval)
		return FALSE;
	*tat = from + interval;
	return TRUE;
}

/**
 * confab_store_usage_set_rate:
 * @usage: the usage of an admission
 * @rpm: requests per minute; 0 for none
 * @tat: the rate's theoretical arrival time after the admission
 * @now: the store's clock when it was decided
 * @admitted: whether the rate admitted it
 *
 * Fills @usage's rate members from GCRA's state (confab_store_rate_admit()).
 */
void
confab_store_usage_set_rate(ConfabStoreUsage *usage,
			    guint64 rpm,
			    gint64 tat,
			    gint64 now,
			    gboolean admitted)
{
	gint64 interval, ahead;

	usage->rpm = rpm;
	if (rpm == 0)
		return;
	interval = confab_store_rate_interval(rpm);
	ahead = MAX(tat - now, 0);
	usage->rate_limited = !admitted;
	usage->rate_reset_ms = (ahead + 999) / 1000;
	usage->rate_remaining =
	    ahead >= (gint64)rpm * interval ? 0 : ((gint64)rpm * interval - ahead) / interval;
	if (!admitted) {
		usage->rate_remaining = 0;
		usage->retry_after_ms = MAX((ahead - (gint64)(rpm - 1) * interval + 999) / 1000, 1);
	}
}

/* tokens per minute: a bucket of @tpm tokens, whole again in a minute */
#define TOKEN_WINDOW (60 * G_USEC_PER_SEC)

/**
 * confab_store_token_cost:
 * @tokens: tokens; below 0 for tokens given back
 * @tpm: tokens per minute, above 0
 *
 * Returns: what @tokens cost of a GCRA arrival time, in microseconds: a
 *   whole minute for @tpm tokens (rounded up, or down for tokens given
 *   back, so that rounding never lets more through)
 */
gint64
confab_store_token_cost(gint64 tokens, guint64 tpm)
{
	gdouble cost = (gdouble)tokens * (gdouble)TOKEN_WINDOW / (gdouble)MAX(tpm, 1);

	return tokens >= 0 ? (gint64)ceil(cost) : (gint64)floor(cost);
}

/**
 * confab_store_token_rate_take:
 * @tat: (inout): the rate's theoretical arrival time, microseconds; 0 when
 *   never used
 * @now: the store's clock, microseconds
 * @tpm: tokens per minute, above 0
 * @tokens: tokens to take (below 0: to give back)
 * @force: take them even when they do not fit (a settlement, a later call
 *   of an admitted turn)
 *
 * GCRA weighted by tokens: the bucket holds @tpm tokens and refills
 * continuously; tokens are taken when, once taken, at most a minute of
 * arrival time is owed. Given back, they move the arrival time back, never
 * before @now (a full bucket stays full).
 *
 * Returns: whether they were taken (@tat moved)
 */
gboolean
confab_store_token_rate_take(gint64 *tat, gint64 now, guint64 tpm, gint64 tokens, gboolean force)
{
	gint64 from = MAX(*tat, now);
	gint64 next = from + confab_store_token_cost(tokens, tpm);

	if (!force && tokens > 0 && next - now > TOKEN_WINDOW)
		return FALSE;
	*tat = MAX(next, now);
	return TRUE;
}

/**
 * confab_store_token_verdict_set_rate:
 * @verdict: a verdict
 * @tpm: tokens per minute; 0 for none
 * @tat: the arrival time after the decision
 * @now: the store's clock
 * @tokens: the tokens asked for
 * @admitted: whether this rate took them
 *
 * Keeps in @verdict the tighter rate: the one that refused, else the one
 * with fewer tokens left.
 */
void
confab_store_token_verdict_set_rate(ConfabStoreTokenVerdict *verdict,
				    guint64 tpm,
				    gint64 tat,
				    gint64 now,
				    gint64 tokens,
				    gboolean admitted)
{
	gint64 ahead = MAX(tat - now, 0);
	gint64 left = MAX(TOKEN_WINDOW - ahead, 0);
	guint64 remaining = (guint64)((gdouble)left * (gdouble)tpm / TOKEN_WINDOW);

	if (tpm == 0 || (verdict->tpm > 0 && verdict->retry_after_ms > 0))
		return;
	if (verdict->tpm > 0 && admitted && remaining >= verdict->tpm_remaining)
		return;
	verdict->tpm = tpm;
	verdict->tpm_remaining = admitted ? remaining : 0;
	verdict->tpm_reset_ms = (ahead + 999) / 1000;
	if (!admitted)
		verdict->retry_after_ms =
		    MAX((ahead + confab_store_token_cost(tokens, tpm) - TOKEN_WINDOW + 999) / 1000,
			1);
}

/**
 * confab_store_usage_set_token_rate:
 * @usage: the usage of an admission, its owner's rate already set
 * @rpm: the token's requests per minute; 0 for none
 * @tat: the token's rate's theoretical arrival time after the admission
 * @now: the store's clock when it was decided
 * @admitted: whether the token's rate admitted it
 *
 * Keeps in @usage's rate members the tighter of the owner's rate and the
 * token's: the one that refused, else the one with fewer requests left.
 */
void
confab_store_usage_set_token_rate(ConfabStoreUsage *usage,
				  guint64 rpm,
				  gint64 tat,
				  gint64 now,
				  gboolean admitted)
{
	ConfabStoreUsage token = {0};

	if (rpm == 0)
		return;
	confab_store_usage_set_rate(&token, rpm, tat, now, admitted);
	/* the owner's refusal (of its rate or its turns in flight) stands */
	if (usage->rate_limited)
		return;
	if (usage->rpm == 0 || token.rate_limited || token.rate_remaining < usage->rate_remaining) {
		usage->rpm = token.rpm;
		usage->rate_limited = token.rate_limited;
		usage->rate_remaining = token.rate_remaining;
		usage->rate_reset_ms = token.rate_reset_ms;
		usage->retry_after_ms = token.retry_after_ms;
	}
}

/**
 * confab_store_admit_quota_async:
 * @owner: the owner
 * @month: the month, `YYYY-MM` (UTC)
 * @default_limit: the quota of owners without one of their own; 0 for none
 * @rpm: the owner's requests per minute; 0 for none
 * @max_parallel: the owner's turns in flight at most; 0 for none
 *
 * Counts one request against the owner's monthly quota and rate, unless
 * either is spent (then the result says not admitted, and which). Check
 * and count are one atomic step, however many requests (and daemons) race:
 * the count admitted never exceeds the quota, and the requests admitted
 * never exceed the rate. The rate is GCRA (a continuous token bucket of
 * @rpm requests refilled one every 60/@rpm seconds), its clock the store's
 * (the database's on PostgreSQL), so every instance agrees. With
 * @max_parallel, the admitted turn also takes one of the owner's slots
 * (usage->parallel_taken), given back by confab_store_release_parallel()
 * when the turn ends. The count stands once the turn's first
 * commit carries it (see #ConfabStoreTurn); a turn that is refused before that gives it back with
 * confab_store_release_quota().
 */
CONFAB_STORE_ASYNC(admit_quota,
		   const gchar *owner,
		   const gchar *month,
		   guint64 default_limit,
		   guint64 rpm,
		   guint64 max_parallel)
{
	ConfabStoreAdmission admission = {
	    .owner = owner,
	    .month = month,
	    .default_limit = default_limit,
	    .rpm = rpm,
	    .max_parallel = max_parallel,
	};

	confab_store_admit_async(self, &admission, cancellable, callback, user_data);
}

/**
 * confab_store_take_tokens_async:
 * @tokens: the tokens and the budgets they count against (copied)
 *
 * Reserves tokens before a model call, or settles a reservation against
 * the usage the upstream reported, against the tokens per minute and the
 * month's tokens of the owner and of its token, in one atomic step. Unless
 * forced, the tokens are taken only if every budget holds them; refused,
 * nothing is taken of the owner's, and at most the token's rate was moved.
 */
DEFINE_ASYNC_VFUNC(take_tokens, take_tokens, const ConfabStoreTokens *, tokens)

/**
 * confab_store_take_tokens_finish:
 * @verdict: (out): what was decided
 *
 * Returns: %FALSE with @error when the store failed
 */
gboolean
confab_store_take_tokens_finish(ConfabStore *self,
				GAsyncResult *result,
				ConfabStoreTokenVerdict *verdict,
				GError **error)
{
	g_autofree ConfabStoreTokenVerdict *answer = NULL;

	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	answer = g_task_propagate_pointer(G_TASK(result), error);
	if (answer == NULL)
		return FALSE;
	*verdict = *answer;
	return TRUE;
}

/**
 * confab_store_take_tokens_now:
 *
 * confab_store_take_tokens_async(), answered at once; only where
 * confab_store_answers_now().
 *
 * Returns: the verdict
 */
ConfabStoreTokenVerdict
confab_store_take_tokens_now(ConfabStore *self, const ConfabStoreTokens *tokens)
{
	return STORE_IFACE(self)->take_tokens_now(self, tokens);
}

/**
 * confab_store_admit_async:
 * @admission: what to check: the owner's limits, and the token's (copied)
 *
 * confab_store_admit_quota_async() with a token's limits beside the
 * owner's, each checked and moved in the same atomic step; finish with
 * confab_store_admit_quota_finish(). A token's turn in flight
 * (usage->token_parallel_taken) is given back with
 * confab_store_release_parallel() on the token's id.
 */
DEFINE_ASYNC_VFUNC(admit, admit_quota, const ConfabStoreAdmission *, admission)

/**
 * confab_store_admit_quota_finish:
 *
 * Returns: (transfer full): the owner's use of the month, this request
 *   counted if it was admitted
 */
DEFINE_FINISH_POINTER(admit_quota, ConfabStoreUsage *)

/**
 * confab_store_release_quota:
 *
 * Gives back a request counted by confab_store_admit_quota_async() whose
 * turn was never stored.
 */
void
confab_store_release_quota(ConfabStore *self, const gchar *owner, const gchar *month)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->release_quota(self, owner, month);
}

/**
 * confab_store_release_parallel:
 * @owner: the owner
 *
 * Gives back the turn slot an admission took (usage->parallel_taken), when
 * the turn ends.
 */
void
confab_store_release_parallel(ConfabStore *self, const gchar *owner)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->release_parallel(self, owner);
}

/**
 * confab_store_answers_now:
 *
 * Returns: whether confab_store_admit_quota_now() and
 *   confab_store_acquire_session_now() may be called: the store keeps
 *   their answers in memory (SQLite: one daemon per database)
 */
gboolean
confab_store_answers_now(ConfabStore *self)
{
	g_return_val_if_fail(CONFAB_IS_STORE(self), FALSE);
	return STORE_IFACE(self)->admit_quota_now != NULL &&
	       STORE_IFACE(self)->acquire_session_now != NULL;
}

/**
 * confab_store_admit_quota_now:
 *
 * confab_store_admit_quota_async(), answered at once; only where
 * confab_store_answers_now().
 *
 * Returns: (transfer full): the usage, with whether it was admitted
 */
ConfabStoreUsage *
confab_store_admit_quota_now(ConfabStore *self,
			     const gchar *owner,
			     const gchar *month,
			     guint64 default_limit,
			     guint64 rpm,
			     guint64 max_parallel)
{
	ConfabStoreAdmission admission = {
	    .owner = owner,
	    .month = month,
	    .default_limit = default_limit,
	    .rpm = rpm,
	    .max_parallel = max_parallel,
	};

	return confab_store_admit_now(self, &admission);
}

/**
 * confab_store_admit_now:
 *
 * confab_store_admit_async(), answered at once; only where
 * confab_store_answers_now().
 *
 * Returns: (transfer full): the usage, with whether it was admitted
 */
ConfabStoreUsage *
confab_store_admit_now(ConfabStore *self, const ConfabStoreAdmission *admission)
{
	g_return_val_if_fail(confab_store_answers_now(self), NULL);
	return STORE_IFACE(self)->admit_quota_now(self, admission);
}

/**
 * confab_store_acquire_session_now:
 *
 * confab_store_acquire_session_async(), answered at once; only where
 * confab_store_answers_now().
 */
gboolean
confab_store_acquire_session_now(ConfabStore *self, const gchar *session_id, GError **error)
{
	g_return_val_if_fail(confab_store_answers_now(self), FALSE);
	return STORE_IFACE(self)->acquire_session_now(self, session_id, error);
}

/**
 * confab_store_acquire_session_async:
 *
 * Marks a turn running in @session_id, or fails with
 * CONFAB_ERROR_CONVERSATION_BUSY if one already is: one turn at a time per
 * session, across every daemon that shares the store.
 */
/**
 * confab_store_acquire_session_finish:
 *
 * Returns: %TRUE when the session is now this caller's until
 *   confab_store_release_session(); %CONFAB_ERROR_CONVERSATION_BUSY when a
 *   turn of it runs already (on any instance)
 */
DEFINE_ASYNC_VFUNC(acquire_session, acquire_session, const gchar *, session_id)
DEFINE_FINISH_BOOLEAN(acquire_session)

/**
 * confab_store_release_session:
 * @session_id: a session acquired with confab_store_acquire_session_async()
 *
 * Lets the next turn of the session in; nobody waits for it.
 */
void
confab_store_release_session(ConfabStore *self, const gchar *session_id)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->release_session(self, session_id);
}

/**
 * confab_store_session_is_running_async:
 * @self: a #ConfabStore
 * @session_id: a session id
 * @cancellable: (nullable): a #GCancellable
 * @callback: called with the answer
 * @user_data: data for @callback
 *
 * Asks whether a turn runs in @session_id now, on any daemon that shares
 * the store: whether confab_store_acquire_session_async() would find it
 * busy. A turn holds its session from its start until its answer is
 * committed; in a store shared by several daemons, the turn of a daemon
 * that died holds it until that daemon is reaped.
 */
void
confab_store_session_is_running_async(ConfabStore *self,
				      const gchar *session_id,
				      GCancellable *cancellable,
				      GAsyncReadyCallback callback,
				      gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(session_id != NULL);
	STORE_IFACE(self)->session_is_running(self, session_id, cancellable, callback, user_data);
}

/**
 * confab_store_session_is_running_finish:
 * @self: a #ConfabStore
 * @result: the #GAsyncResult
 * @running: (out): whether a turn runs in the session
 * @error: a #GError
 *
 * Returns: %TRUE when @running was set, %FALSE with @error if the store
 *   could not tell
 */
gboolean
confab_store_session_is_running_finish(ConfabStore *self,
				       GAsyncResult *result,
				       gboolean *running,
				       GError **error)
{
	GError *local = NULL;
	gpointer answer;

	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	g_return_val_if_fail(running != NULL, FALSE);
	/* the backends answer with a pointer, NULL when not running, as their
	 * reads do */
	answer = g_task_propagate_pointer(G_TASK(result), &local);
	if (local != NULL) {
		g_propagate_error(error, local);
		return FALSE;
	}
	*running = answer != NULL;
	return TRUE;
}

/**
 * confab_store_commit_turn_async:
 * @turn: what to write; copied
 * @cancellable: (nullable): ignored once the write is queued: a write that
 *   was started is seen through
 * @callback: called once committed, or failed (nothing of @turn is then
 *   stored); CONFAB_ERROR_CONVERSATION_NOT_FOUND if the session is gone
 */
/**
 * confab_store_commit_turn_finish:
 *
 * Returns: %TRUE once the turn's writes are committed together;
 *   %CONFAB_ERROR_CONVERSATION_NOT_FOUND when the session it continues is
 *   gone, and then nothing of it was written
 */
DEFINE_ASYNC_VFUNC(commit_turn, commit_turn, const ConfabStoreTurn *, turn)
DEFINE_FINISH_BOOLEAN(commit_turn)

/**
 * confab_store_delete_session_async:
 * @session_id: the session
 *
 * Deletes the session and every message of it.
 */
/**
 * confab_store_delete_session_finish:
 *
 * Returns: %TRUE once committed; %CONFAB_ERROR_CONVERSATION_NOT_FOUND when
 *   there was no such session
 */
DEFINE_ASYNC_TEXT(delete_session, session_id)
DEFINE_FINISH_BOOLEAN(delete_session)

/* The messages as op_append_messages and op_create_conversation read
 * them; none is `[]`. */
static gchar *
messages_json(GPtrArray *messages)
{
	g_autoptr(GString) out = g_string_new("[");

	for (guint i = 0; messages != NULL && i < messages->len; i++) {
		ConfabMessage *msg = g_ptr_array_index(messages, i);
		g_string_append(out, i > 0 ? ",{\"id\":" : "{\"id\":");
		confab_json_append_string(out, confab_message_get_id(msg));
		g_string_append(out, ",\"role\":");
		confab_json_append_string(out, confab_message_get_role(msg));
		g_string_append(out, ",\"model\":");
		confab_json_append_string(out, confab_message_get_model(msg) ?: "");
		g_string_append(out, ",\"content\":");
		confab_json_append_string(out, confab_message_get_content(msg));
		g_string_append(out, ",\"content_blocks\":");
		confab_json_append_string(out, confab_message_get_content_blocks(msg));
		g_string_append_printf(out,
				       ",\"status\":%d}",
				       (gint)confab_message_get_status(msg));
	}
	g_string_append_c(out, ']');
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/**
 * confab_store_create_conversation_async:
 * @session: the new conversation: its id, owner, agent (`""` for none
 *   yet), source, title, times and metadata
 * @messages: (nullable) (element-type ConfabMessage): its first messages,
 *   each with its id, role, model, content, content blocks and status,
 *   created when the conversation is
 *
 * Stores a conversation before its first turn (the Conversations API's
 * `POST /conversations`), with its first messages if any: one writer job
 * and one commit, the conversation and all its messages or nothing. A
 * turn's conversation is stored with its turn.
 */
CONFAB_STORE_ASYNC(create_conversation, ConfabSession *session, GPtrArray *messages)
{
	g_autofree gchar *json = NULL;
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(CONFAB_IS_SESSION(session));
	call = call_with_text(&op_create_conversation, confab_session_get_id(session));
	confab_store_call_add_text(call, confab_session_get_owner(session));
	confab_store_call_add_text(call, confab_session_get_agent_id(session) ?: "");
	confab_store_call_add_int(call, confab_session_get_source(session));
	confab_store_call_add_text(call, confab_session_get_title(session));
	confab_store_call_add_int(call, confab_session_get_created_at(session));
	confab_store_call_add_int(call, confab_session_get_updated_at(session));
	confab_store_call_add_text(call, confab_session_get_metadata(session));
	json = messages_json(messages);
	confab_store_call_add_text(call, json);
	RUN(create_conversation, call);
}

/**
 * confab_store_create_conversation_finish:
 *
 * Returns: %TRUE once committed
 */
DEFINE_FINISH_BOOLEAN(create_conversation)

/**
 * confab_store_set_conversation_metadata_async:
 * @session_id: the conversation
 * @metadata: (nullable): its metadata, a JSON object of strings, checked
 * @updated_at: when, in Unix seconds
 *
 * Replaces a conversation's metadata.
 */
CONFAB_STORE_ASYNC(set_conversation_metadata,
		   const gchar *session_id,
		   const gchar *metadata,
		   gint64 updated_at)
{
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	call = call_with_text(&op_set_conversation_metadata, session_id);
	confab_store_call_add_text(call, metadata);
	confab_store_call_add_int(call, updated_at);
	RUN(set_conversation_metadata, call);
}

/**
 * confab_store_set_conversation_metadata_finish:
 *
 * Returns: %TRUE once committed; %CONFAB_ERROR_CONVERSATION_NOT_FOUND when
 *   there is no such conversation
 */
DEFINE_FINISH_BOOLEAN(set_conversation_metadata)

/**
 * confab_store_set_conversation_agent_async:
 * @session_id: a conversation created without an agent
 * @agent_id: the agent of its first turn
 *
 * Gives a conversation without an agent (`""`) its agent, once.
 */
CONFAB_STORE_ASYNC(set_conversation_agent, const gchar *session_id, const gchar *agent_id)
{
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(agent_id != NULL && *agent_id != '\0');
	call = call_with_text(&op_set_conversation_agent, session_id);
	confab_store_call_add_text(call, agent_id);
	RUN(set_conversation_agent, call);
}

/**
 * confab_store_set_conversation_agent_finish:
 *
 * Returns: %TRUE once committed; %CONFAB_ERROR_CONVERSATION_NOT_FOUND when
 *   the conversation is gone or has an agent already
 */
DEFINE_FINISH_BOOLEAN(set_conversation_agent)

/**
 * confab_store_append_messages_async:
 * @session_id: the conversation
 * @messages: (element-type ConfabMessage): at least one; each with its id
 *   (after every id the conversation has), role, model, content, content
 *   blocks and status
 * @created_at: when, in Unix seconds: every message's, and the
 *   conversation's update
 *
 * Adds messages to a conversation outside a turn (the Conversations API's
 * items): all of them in one statement, so one writer job and one commit,
 * or none. The caller holds the session (confab_store_acquire_session_async())
 * so that no turn's messages interleave.
 */
CONFAB_STORE_ASYNC(append_messages, const gchar *session_id, GPtrArray *messages, gint64 created_at)
{
	g_autofree gchar *json = NULL;
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(messages != NULL && messages->len > 0);
	json = messages_json(messages);
	call = call_with_text(&op_append_messages, session_id);
	confab_store_call_add_text(call, json);
	confab_store_call_add_int(call, created_at);
	RUN(append_messages, call);
}

/**
 * confab_store_append_messages_finish:
 *
 * Returns: %TRUE once committed; %CONFAB_ERROR_CONVERSATION_NOT_FOUND when
 *   the conversation is gone, and then nothing was written
 */
DEFINE_FINISH_BOOLEAN(append_messages)

/**
 * confab_store_get_message_async:
 * @session_id: the conversation
 * @message_id: one of its messages
 */
/**
 * confab_store_get_message_finish:
 *
 * Returns: (transfer full): the message; %CONFAB_ERROR_ITEM_NOT_FOUND when the
 *   conversation has no such message
 */
DEFINE_ASYNC_TEXT2(get_message, session_id, message_id)
DEFINE_FINISH_POINTER(get_message, ConfabMessage *)

/**
 * confab_store_delete_message_async:
 * @session_id: the conversation
 * @message_id: one of its messages
 *
 * Deletes one message of a conversation.
 */
/**
 * confab_store_delete_message_finish:
 *
 * Returns: %TRUE once committed; %CONFAB_ERROR_ITEM_NOT_FOUND when the
 *   conversation has no such message
 */
DEFINE_ASYNC_TEXT2(delete_message, session_id, message_id)
DEFINE_FINISH_BOOLEAN(delete_message)

/**
 * confab_store_set_message_content_async:
 * @session_id: the conversation
 * @message_id: one of its messages
 * @content: its new content
 * @content_blocks: its new content blocks
 *
 * Replaces what a message holds: what is left of it once one of its items
 * is deleted (the Conversations API's). The caller holds the session.
 */
CONFAB_STORE_ASYNC(set_message_content,
		   const gchar *session_id,
		   const gchar *message_id,
		   const gchar *content,
		   const gchar *content_blocks)
{
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(content != NULL && content_blocks != NULL);
	call = call_with_text(&op_set_message_content, session_id);
	confab_store_call_add_text(call, message_id);
	confab_store_call_add_text(call, content);
	confab_store_call_add_text(call, content_blocks);
	RUN(set_message_content, call);
}

/**
 * confab_store_set_message_content_finish:
 *
 * Returns: %TRUE once committed; %CONFAB_ERROR_ITEM_NOT_FOUND when the
 *   conversation has no such message
 */
DEFINE_FINISH_BOOLEAN(set_message_content)

/**
 * confab_store_get_session_async:
 * @session_id: the session
 *
 * Reads one session, whoever owns it (the caller checks).
 */
/**
 * confab_store_get_session_finish:
 *
 * Returns: (transfer full): the session; CONFAB_ERROR_CONVERSATION_NOT_FOUND
 *   if there is none
 */
DEFINE_ASYNC_TEXT(get_session, session_id)
DEFINE_FINISH_POINTER(get_session, ConfabSession *)

/**
 * confab_store_get_history_async:
 * @session_id: the session
 *
 * Reads every message of a session, the context of its next turn.
 */
/**
 * confab_store_get_history_finish:
 *
 * Returns: (transfer full) (element-type ConfabMessage): the session's
 *   messages, oldest first
 */
DEFINE_ASYNC_TEXT(get_history, session_id)
DEFINE_FINISH_POINTER(get_history, GPtrArray *)

/**
 * confab_store_list_sessions_async:
 * @query: the filters, cursor, order and page size
 *
 * Lists sessions a page at a time, in id order.
 */
CONFAB_STORE_ASYNC(list_sessions, const ConfabStoreSessionQuery *query)
{
	gboolean asc = query->order == CONFAB_ORDER_ASC;
	g_autoptr(GString) sql = NULL;
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	/* from constant fragments only (values are bound), so that each
	 * combination of filters walks an index in id order: LIMIT n + 1 costs
	 * the same at a thousand rows or a million */
	sql = g_string_new("SELECT " CONFAB_STORE_SESSION_COLUMNS " FROM sessions WHERE TRUE");
	call = confab_store_call_new(&op_list_sessions);
	call->limit = query->limit;
	if (query->owner != NULL) {
		confab_store_call_add_text(call, query->owner);
		g_string_append_printf(sql, " AND owner = $%u", call->args->len);
	}
	if (query->source >= 0) {
		confab_store_call_add_int(call, query->source);
		g_string_append_printf(sql, " AND source = $%u", call->args->len);
	}
	if (query->agent_id != NULL) {
		confab_store_call_add_text(call, query->agent_id);
		g_string_append_printf(sql, " AND agent_id = $%u", call->args->len);
	}
	if (query->after != NULL) {
		confab_store_call_add_text(call, query->after);
		g_string_append_printf(sql,
				       asc ? " AND id > $%u" : " AND id < $%u",
				       call->args->len);
	}
	confab_store_call_add_int(call, (gint64)query->limit + 1);
	g_string_append_printf(sql,
			       asc ? " ORDER BY id ASC LIMIT $%u" : " ORDER BY id DESC LIMIT $%u",
			       call->args->len);
	confab_store_call_set_sql(call, g_string_free(g_steal_pointer(&sql), FALSE));
	RUN(list_sessions, call);
}

/**
 * confab_store_list_sessions_finish:
 *
 * Returns: (transfer full): a page of #ConfabSession
 */
DEFINE_FINISH_POINTER(list_sessions, ConfabStorePage *)

/**
 * confab_store_list_messages_async:
 * @query: the session, cursor, order and page size
 *
 * Lists a session's messages a page at a time, in id order.
 */
CONFAB_STORE_ASYNC(list_messages, const ConfabStoreMessageQuery *query)
{
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	call = call_with_text(
	    &op_list_messages[query->order == CONFAB_ORDER_ASC][query->after == NULL ? 0
								: query->from	     ? 2
										     : 1],
	    query->session_id);
	call->limit = query->limit;
	confab_store_call_add_int(call, (gint64)query->limit + 1);
	if (query->after != NULL)
		confab_store_call_add_text(call, query->after);
	RUN(list_messages, call);
}

/**
 * confab_store_list_messages_finish:
 *
 * Returns: (transfer full): a page of #ConfabMessage
 */
DEFINE_FINISH_POINTER(list_messages, ConfabStorePage *)

/**
 * confab_store_search_hit_free:
 * @hit: (nullable): a search result
 */
void
confab_store_search_hit_free(ConfabStoreSearchHit *hit)
{
	if (hit == NULL)
		return;
	g_clear_object(&hit->session);
	g_free(hit->snippet);
	g_free(hit);
}

/**
 * confab_store_search_sessions_async:
 * @owner: whose conversations
 * @terms: (array zero-terminated=1): words, each matched as the start of a
 *   word of the title or of a message (case and accents aside); a
 *   conversation matches when every term does, in its title or in any of
 *   its messages
 * @limit: at most this many results (at most
 *   %CONFAB_STORE_SEARCH_MAX_RESULTS)
 *
 * Finds @owner's conversations, of every source, newest first. A backend
 * without full-text search fails with %CONFAB_ERROR_NOT_IMPLEMENTED.
 */
void
confab_store_search_sessions_async(ConfabStore *self,
				   const gchar *owner,
				   const gchar *const *terms,
				   guint limit,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(owner != NULL && terms != NULL);
	if (STORE_IFACE(self)->search_sessions == NULL) {
		g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
		g_task_set_source_tag(task, confab_store_search_sessions_async);
		g_task_return_new_error(task,
					CONFAB_ERROR,
					CONFAB_ERROR_NOT_IMPLEMENTED,
					"this store has no full-text search");
		return;
	}
	STORE_IFACE(self)->search_sessions(self,
					   owner,
					   terms,
					   MIN(limit, CONFAB_STORE_SEARCH_MAX_RESULTS),
					   cancellable,
					   callback,
					   user_data);
}

/**
 * confab_store_search_sessions_finish:
 *
 * Returns: (transfer full) (element-type ConfabStoreSearchHit): the
 *   conversations found, newest first
 */
DEFINE_FINISH_POINTER(search_sessions, GPtrArray *)

/* ---------- snippets ---------- */

#define SNIPPET_BEFORE 40  /* characters of context before the first match */
#define SNIPPET_LENGTH 160 /* characters at most */

static gboolean
is_word_char(gunichar c)
{
	return g_unichar_isalnum(c) || g_unichar_ismark(c);
}

/* @word without accents, case folded: how words are compared */
static gchar *
fold_word(const gchar *word, gssize len)
{
	g_autofree gchar *nfd = g_utf8_normalize(word, len, G_NORMALIZE_NFD);
	g_autoptr(GString) bare = g_string_new(NULL);

	if (nfd == NULL)
		return g_strdup("");
	for (const gchar *p = nfd; *p != '\0'; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		if (!g_unichar_ismark(c))
			g_string_append_unichar(bare, c);
	}
	return g_utf8_casefold(bare->str, (gssize)bare->len);
}

/* the terms as words are compared: the first word of each, folded */
static GPtrArray *
fold_terms(const gchar *const *terms)
{
	GPtrArray *folded = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; terms[i] != NULL && i < CONFAB_STORE_SEARCH_MAX_TERMS; i++) {
		const gchar *start = terms[i];
		const gchar *end;
		while (*start != '\0' && !is_word_char(g_utf8_get_char(start)))
			start = g_utf8_next_char(start);
		end = start;
		while (*end != '\0' && is_word_char(g_utf8_get_char(end)))
			end = g_utf8_next_char(end);
		if (end > start)
			g_ptr_array_add(folded, fold_word(start, end - start));
	}
	return folded;
}

/* Where the first word matching a term starts in @text, or NULL; the
 * number of terms some word matches in *@n_matched. */
static const gchar *
first_match(const gchar *text, GPtrArray *folded, guint *n_matched)
{
	const gchar *first = NULL;
	guint32 seen = 0;
	const gchar *p = text;

	*n_matched = 0;
	while (*p != '\0') {
		const gchar *end;
		g_autofree gchar *word = NULL;

		if (!is_word_char(g_utf8_get_char(p))) {
			p = g_utf8_next_char(p);
			continue;
		}
		for (end = p; *end != '\0' && is_word_char(g_utf8_get_char(end));)
			end = g_utf8_next_char(end);
		word = fold_word(p, end - p);
		for (guint i = 0; i < folded->len; i++) {
			if (!g_str_has_prefix(word, g_ptr_array_index(folded, i)))
				continue;
			if (first == NULL)
				first = p;
			if ((seen & (1u << i)) == 0)
				(*n_matched)++;
			seen |= 1u << i;
		}
		p = end;
	}
	return first;
}

/* Up to SNIPPET_LENGTH characters of @text from @start, whitespace runs as
 * one space. */
static gchar *
cut_snippet(const gchar *text, const gchar *start)
{
	g_autoptr(GString) out = g_string_new(start > text ? "…" : "");
	const gchar *p = start;
	guint n = 0;
	gboolean space = FALSE;

	for (; *p != '\0' && n < SNIPPET_LENGTH; p = g_utf8_next_char(p), n++) {
		gunichar c = g_utf8_get_char(p);
		if (g_unichar_isspace(c) || g_unichar_iscntrl(c)) {
			space = out->len > 0;
			continue;
		}
		if (space)
			g_string_append_c(out, ' ');
		space = FALSE;
		g_string_append_unichar(out, c);
	}
	if (*p != '\0')
		g_string_append(out, "…");
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/**
 * confab_store_search_snippet:
 * @text: a title or a message's text, valid UTF-8
 * @terms: (array zero-terminated=1): the search terms
 * @n_matched: (out) (optional): how many of the terms @text matches
 *
 * For backends: a line of @text around its first word that starts with a
 * term (case and accents aside), for the description of a search result.
 *
 * Returns: (transfer full) (nullable): the snippet, or %NULL if no word
 *   matches
 */
gchar *
confab_store_search_snippet(const gchar *text, const gchar *const *terms, guint *n_matched)
{
	g_autoptr(GPtrArray) folded = NULL;
	const gchar *match;
	const gchar *start;
	guint matched = 0;

	g_return_val_if_fail(terms != NULL, NULL);
	if (n_matched != NULL)
		*n_matched = 0;
	if (text == NULL || !g_utf8_validate(text, -1, NULL))
		return NULL;
	folded = fold_terms(terms);
	match = first_match(text, folded, &matched);
	if (n_matched != NULL)
		*n_matched = matched;
	if (match == NULL)
		return NULL;
	/* some words of context before it, from the start of a word */
	start = match;
	for (guint n = 0; start > text && n < SNIPPET_BEFORE; n++)
		start = g_utf8_prev_char(start);
	while (start > text && start < match && is_word_char(g_utf8_get_char(start)) &&
	       is_word_char(g_utf8_get_char(g_utf8_prev_char(start))))
		start = g_utf8_next_char(start);
	return cut_snippet(text, start);
}

/**
 * confab_store_emit_changed:
 *
 * For backends: tells cache holders that @change happened elsewhere.
 */
void
confab_store_emit_changed(ConfabStore *self, ConfabStoreChange change)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	g_signal_emit(self, signals[SIGNAL_CHANGED], 0, (gint)change);
}

/**
 * confab_store_ping_async:
 * @callback: called once the store answered, or failed to
 *
 * Runs the cheapest read the store has, for `GET /readyz`.
 */
DEFINE_ASYNC_NONE(ping)

/**
 * confab_store_ping_finish:
 *
 * Returns: whether the store answered
 */
CONFAB_STORE_FINISH(gboolean, ping)
{
	g_autofree gchar *answer = finish_pointer(self, result, error);
	return answer != NULL;
}

/**
 * confab_store_close:
 *
 * Waits for every queued write to commit, and stops the store.
 */
void
confab_store_close(ConfabStore *self)
{
	g_return_if_fail(CONFAB_IS_STORE(self));
	STORE_IFACE(self)->close(self);
}

/**
 * confab_store_get_response_async:
 * @response_id: a response id (`resp_…`)
 *
 * Reads the messages stored with @response_id: the response's input and
 * its answer.
 */
/**
 * confab_store_get_response_finish:
 *
 * Returns: (transfer full) (element-type ConfabMessage): the messages of
 *   the response, oldest first; empty when there is no such response
 */
DEFINE_ASYNC_TEXT(get_response, response_id)
DEFINE_FINISH_POINTER(get_response, GPtrArray *)

/**
 * confab_store_delete_response_async:
 * @response_id: a response id (`resp_…`)
 * @callback: called once the messages are deleted
 *
 * Deletes the messages stored with @response_id from their conversation;
 * CONFAB_ERROR_RESPONSE_NOT_FOUND if there were none.
 */
/**
 * confab_store_delete_response_finish:
 *
 * Returns: %TRUE once committed; %CONFAB_ERROR_RESPONSE_NOT_FOUND when no
 *   message has that response id
 */
DEFINE_ASYNC_TEXT(delete_response, response_id)
DEFINE_FINISH_BOOLEAN(delete_response)

/* ---------- responses: their records and kept events ---------- */

/**
 * confab_store_save_response_async:
 * @record: a new response's record (its @status `queued` or `in_progress`)
 * @max_background: for a background response, how many of its owner's may
 *   run at once (0: no cap)
 * @callback: called once it is committed, or refused
 *
 * Keeps a response's record beside its messages. A background one is this
 * instance's to run (PostgreSQL: while its lease lives).
 */
CONFAB_STORE_ASYNC(save_response, const ConfabResponseRecord *record, guint max_background)
{
	ConfabStoreCall *call;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(record != NULL && record->id != NULL && record->params != NULL);
	call = call_with_text(&op_save_response, record->id);
	confab_store_call_add_text(call, record->owner);
	confab_store_call_add_text(call, record->agent_id);
	confab_store_call_add_text(call, record->session_id);
	confab_store_call_add_int(call, record->background ? 1 : 0);
	confab_store_call_add_int(call, record->stream ? 1 : 0);
	confab_store_call_add_text(call, record->status);
	confab_store_call_add_text(call, record->params);
	confab_store_call_add_int(call, record->created_at);
	confab_store_call_add_instance(call);
	confab_store_call_add_int(call, max_background);
	RUN(save_response, call);
}

/**
 * confab_store_save_response_finish:
 *
 * Returns: %TRUE once committed; %CONFAB_ERROR_RATE_LIMITED when
 *   @max_background of the owner's background responses run already
 */
DEFINE_FINISH_BOOLEAN(save_response)

/**
 * confab_store_get_response_record_async:
 * @response_id: a response's id
 */
/**
 * confab_store_get_response_record_finish:
 *
 * Returns: (transfer full): the record; %CONFAB_ERROR_RESPONSE_NOT_FOUND
 *   when there is none (a response from before records were kept has none)
 */
DEFINE_ASYNC_TEXT(get_response_record, response_id)
DEFINE_FINISH_POINTER(get_response_record, ConfabResponseRecord *)

/**
 * confab_store_end_response_async:
 * @response_id: a running background response's id
 * @status: how it ended: `completed`, `incomplete` or `failed`
 * @error_json: (nullable): how it failed, `{"code","message"}`
 * @completed_at: when it ended (Unix seconds)
 * @events: (nullable): a background stream's last batch of events
 *
 * Ends a queued or running response, with its last events, in one
 * transaction; one that has ended stays as it ended. One asked to stop
 * ends `cancelled`, unless it completed.
 */
CONFAB_STORE_ASYNC(end_response,
		   const gchar *response_id,
		   const gchar *status,
		   const gchar *error_json,
		   gint64 completed_at,
		   const ConfabResponseEvents *events)
{
	ConfabStoreCall *call;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(status != NULL);
	call = call_with_text(&op_end_response, response_id);
	confab_store_call_add_text(call, status);
	confab_store_call_add_text(call, error_json);
	confab_store_call_add_int(call, completed_at);
	confab_store_call_add_int(call, events != NULL ? events->first : 0);
	confab_store_call_add_int(call, events != NULL ? events->last : 0);
	confab_store_call_add_text(call, events != NULL ? events->data : NULL);
	RUN(end_response, call);
}

/**
 * confab_store_end_response_finish:
 *
 * Returns: %TRUE once committed (also when the response had ended)
 */
DEFINE_FINISH_BOOLEAN(end_response)

/**
 * confab_store_list_running_responses_async:
 * @owner: (nullable): only this owner's; %NULL for everyone's
 * @session_id: (nullable): only this conversation's
 * @limit: at most this many
 * @callback: called with the records, oldest first
 *
 * The background responses queued or running now, on any instance.
 */
/**
 * confab_store_list_running_responses_finish:
 *
 * Returns: (transfer full) (element-type ConfabResponseRecord): the records
 */
DEFINE_ASYNC_LIST(list_running_responses, session_id)
DEFINE_FINISH_POINTER(list_running_responses, GPtrArray *)

/**
 * confab_store_cancel_response_async:
 * @response_id: a response's id
 *
 * Asks a queued or running response to stop: the instance that runs it
 * sees it (confab_store_get_response_record_async()) and stops it.
 */
/**
 * confab_store_cancel_response_finish:
 *
 * Returns: %TRUE once committed (also when it had ended: nothing changes)
 */
DEFINE_ASYNC_TEXT(cancel_response, response_id)
DEFINE_FINISH_BOOLEAN(cancel_response)

/**
 * confab_store_append_response_events_async:
 * @events: a batch of a background stream's events, the next in order
 * @response_id: whose
 */
CONFAB_STORE_ASYNC(append_response_events,
		   const gchar *response_id,
		   const ConfabResponseEvents *events)
{
	ConfabStoreCall *call;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(events != NULL && events->data != NULL);
	call = call_with_text(&op_append_response_events, response_id);
	confab_store_call_add_int(call, events->first);
	confab_store_call_add_int(call, events->last);
	confab_store_call_add_text(call, events->data);
	RUN(append_response_events, call);
}

/**
 * confab_store_append_response_events_finish:
 *
 * Returns: %TRUE once committed
 */
DEFINE_FINISH_BOOLEAN(append_response_events)

/**
 * confab_store_list_response_events_async:
 * @response_id: a background stream's response
 * @after: the batches with an event numbered above this (-1: all)
 * @callback: called with the batches, in order
 */
/**
 * confab_store_list_response_events_finish:
 *
 * Returns: (transfer full) (element-type ConfabResponseEvents): the batches
 */
DEFINE_ASYNC_TEXT_INT(list_response_events, response_id, after)
DEFINE_FINISH_POINTER(list_response_events, GPtrArray *)

/**
 * confab_store_fail_orphan_responses_async:
 * @error_json: the error they end with, `{"code","message"}`
 * @now: Unix seconds
 *
 * Ends as failed the queued and running responses that nobody runs any
 * more: on PostgreSQL those of instances whose lease has ended, never
 * another live instance's; on SQLite every one, so it is called at start,
 * before this instance runs any.
 */
/**
 * confab_store_fail_orphan_responses_finish:
 *
 * Returns: %TRUE once committed
 */
DEFINE_ASYNC_TEXT_INT(fail_orphan_responses, error_json, now)
DEFINE_FINISH_BOOLEAN(fail_orphan_responses)

/**
 * confab_store_drop_response_events_async:
 * @before: Unix seconds: the events of responses that ended before then go
 */
CONFAB_STORE_ASYNC(drop_response_events, gint64 before)
{
	ConfabStoreCall *call;

	g_return_if_fail(CONFAB_IS_STORE(self));
	call = confab_store_call_new(&op_drop_response_events);
	confab_store_call_add_int(call, before);
	RUN(drop_response_events, call);
}

/**
 * confab_store_drop_response_events_finish:
 *
 * Returns: %TRUE once committed
 */
DEFINE_FINISH_BOOLEAN(drop_response_events)

/* ---------- approvals ---------- */

/**
 * confab_store_save_approval_async:
 * @approval: a new pending approval
 *
 * Stores a tool call that waits for a person's decision. One that a turn
 * waits for (no @response_id) is this instance's: it lives as long as this
 * instance does (see confab_store_decide_approval_async()).
 */
CONFAB_STORE_ASYNC(save_approval, const ConfabApproval *approval)
{
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(approval != NULL && approval->id != NULL);
	call = call_with_text(&op_save_approval, approval->id);
	confab_store_call_add_text(call, approval->owner);
	confab_store_call_add_text(call, approval->agent_id);
	confab_store_call_add_text(call, approval->session_id);
	confab_store_call_add_text(call, approval->server);
	confab_store_call_add_text(call, approval->tool);
	confab_store_call_add_text(call, approval->name);
	confab_store_call_add_text(call, approval->arguments);
	confab_store_call_add_text(call, approval->tool_call_id);
	confab_store_call_add_text(call, confab_approval_state_to_string(approval->state));
	confab_store_call_add_text(call, approval->decided_by);
	confab_store_call_add_text(call, approval->reason);
	confab_store_call_add_int(call, approval->created_at);
	confab_store_call_add_int(call, approval->decided_at);
	confab_store_call_add_text(call, approval->response_id);
	confab_store_call_add_instance(call);
	RUN(save_approval, call);
}

/**
 * confab_store_save_approval_finish:
 *
 * Returns: %TRUE once committed
 */
DEFINE_FINISH_BOOLEAN(save_approval)

/**
 * confab_store_get_approval_async:
 * @approval_id: an approval's id
 */
/**
 * confab_store_get_approval_finish:
 *
 * Returns: (transfer full): the approval; CONFAB_ERROR_APPROVAL_NOT_FOUND
 *   if there is none
 */
DEFINE_ASYNC_TEXT(get_approval, approval_id)
DEFINE_FINISH_POINTER(get_approval, ConfabApproval *)

/**
 * confab_store_decide_approval_async:
 * @decision: the approval's @id, and its new @state (not pending),
 *   @decided_by, @reason and @decided_at; the other fields are ignored
 * @callback: called once the decision is committed, or refused
 *
 * Decides a pending approval, atomically: of two decisions of one
 * approval (on any instances sharing the store), exactly one wins.
 *
 * A person's decision (approved, denied) of an approval that a turn
 * waited for counts only while the instance whose turn waits lives; if it
 * is gone, the approval times out instead, and the decision is refused
 * with CONFAB_ERROR_APPROVAL_DECIDED. SQLite: one process owns the
 * database and times out at start what a dead one left pending.
 * PostgreSQL: the instance's lease (`[store] instance_lease`) must run.
 */
void
confab_store_decide_approval_async(ConfabStore *self,
				   const ConfabApproval *decision,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data)
{
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(decision != NULL && decision->id != NULL);
	g_return_if_fail(decision->state != CONFAB_APPROVAL_STATE_PENDING);
	call = call_with_text(&op_decide_approval, decision->id);
	confab_store_call_add_text(call, confab_approval_state_to_string(decision->state));
	confab_store_call_add_text(call, decision->decided_by);
	confab_store_call_add_text(call, decision->reason);
	confab_store_call_add_int(call, decision->decided_at);
	RUN(decide_approval, call);
}

/**
 * confab_store_decide_approval_finish:
 *
 * Returns: (transfer full): the approval as decided;
 *   CONFAB_ERROR_APPROVAL_NOT_FOUND if there is none,
 *   CONFAB_ERROR_APPROVAL_DECIDED if it was no longer pending
 */
DEFINE_FINISH_POINTER(decide_approval, ConfabApproval *)

/**
 * confab_store_list_approvals_async:
 * @owner: (nullable): only this owner's; %NULL for everyone's
 * @agent_id: (nullable): only this agent's; %NULL for any
 * @limit: at most this many
 *
 * Lists the pending approvals that a person can decide (the turn that
 * asked waits for them, on an instance that lives: not a Responses API
 * request), oldest first.
 */
/**
 * confab_store_list_approvals_finish:
 *
 * Returns: (transfer full) (element-type ConfabApproval): the approvals
 */
DEFINE_ASYNC_LIST(list_approvals, agent_id)
DEFINE_FINISH_POINTER(list_approvals, GPtrArray *)

/* ---------- elicitations ---------- */

/**
 * confab_store_save_elicitation_async:
 * @request: a new pending elicitation request
 * @callback: called once it is stored
 *
 * Stores @request; on a shared store, with this instance as the one
 * whose turn waits for it.
 */
CONFAB_STORE_ASYNC(save_elicitation, const ConfabElicitationRequest *request)
{
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(request != NULL && request->id != NULL);
	call = call_with_text(&op_save_elicitation, request->id);
	confab_store_call_add_text(call, request->owner);
	confab_store_call_add_text(call, request->agent_id);
	confab_store_call_add_text(call, request->session_id);
	confab_store_call_add_text(call, request->server);
	confab_store_call_add_text(call, request->message);
	confab_store_call_add_text(call, request->schema);
	confab_store_call_add_text(call, request->state);
	confab_store_call_add_text(call, request->content);
	confab_store_call_add_text(call, request->answered_by);
	confab_store_call_add_int(call, request->created_at);
	confab_store_call_add_int(call, request->answered_at);
	confab_store_call_add_instance(call);
	RUN(save_elicitation, call);
}

/**
 * confab_store_save_elicitation_finish:
 *
 * Returns: %TRUE once committed
 */
DEFINE_FINISH_BOOLEAN(save_elicitation)

/**
 * confab_store_get_elicitation_async:
 * @elicitation_id: an elicitation's id
 */
/**
 * confab_store_get_elicitation_finish:
 *
 * Returns: (transfer full): the request; CONFAB_ERROR_ELICITATION_NOT_FOUND
 *   if there is none
 */
DEFINE_ASYNC_TEXT(get_elicitation, elicitation_id)
DEFINE_FINISH_POINTER(get_elicitation, ConfabElicitationRequest *)

/**
 * confab_store_answer_elicitation_async:
 * @answer: @id, @state, @content, @answered_by and @answered_at
 * @callback: called once the answer is stored, or refused
 *
 * Answers a pending request, in one conditional write: of two answers
 * (or an answer and the timeout) exactly one counts. Refused with
 * CONFAB_ERROR_ELICITATION_ANSWERED when the row is no longer pending, or
 * (shared store) the instance whose turn waits is gone.
 */
CONFAB_STORE_ASYNC(answer_elicitation, const ConfabElicitationRequest *answer)
{
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(answer != NULL && answer->id != NULL && answer->state != NULL);
	call = call_with_text(&op_answer_elicitation, answer->id);
	confab_store_call_add_text(call, answer->state);
	confab_store_call_add_text(call, answer->content);
	confab_store_call_add_text(call, answer->answered_by);
	confab_store_call_add_int(call, answer->answered_at);
	RUN(answer_elicitation, call);
}

/**
 * confab_store_answer_elicitation_finish:
 *
 * Returns: %TRUE once the answer counts
 */
DEFINE_FINISH_BOOLEAN(answer_elicitation)

/**
 * confab_store_list_elicitations_async:
 * @owner: (nullable): only this owner's; %NULL for everyone's
 * @agent_id: (nullable): only this agent's; %NULL for any
 * @limit: at most this many
 *
 * Lists the pending elicitations a person can answer (the turn that asked
 * waits for them, on an instance that lives), oldest first.
 */
/**
 * confab_store_list_elicitations_finish:
 *
 * Returns: (transfer full) (element-type ConfabElicitationRequest): the
 *   requests
 */
DEFINE_ASYNC_LIST(list_elicitations, agent_id)
DEFINE_FINISH_POINTER(list_elicitations, GPtrArray *)

/* ---------- MCP servers' OAuth state ---------- */

/**
 * confab_store_save_mcp_oauth_async:
 * @agent_id: the agent
 * @server: its MCP server's name
 * @state: (nullable): the `state` of the authorization waiting for a person
 * @data: the OAuth state (secrets: the client's, the tokens), JSON
 * @version: when it changed (microseconds): a row of a later version is
 *   kept, one of the same version too (the same state saved twice)
 *
 * Stores (replaces) what Confab keeps of an MCP server's authorization.
 * Write-only: nothing returns it outside confabd.
 */
CONFAB_STORE_ASYNC(save_mcp_oauth,
		   const gchar *agent_id,
		   const gchar *server,
		   const gchar *state,
		   const gchar *data,
		   gint64 version)
{
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(agent_id != NULL && server != NULL && data != NULL);
	call = call_with_text(&op_save_mcp_oauth, agent_id);
	confab_store_call_add_text(call, server);
	confab_store_call_add_text(call, state);
	confab_store_call_add_text(call, data);
	confab_store_call_add_int(call, version);
	confab_store_call_add_int(call, g_get_real_time() / G_USEC_PER_SEC);
	RUN(save_mcp_oauth, call);
}

/**
 * confab_store_save_mcp_oauth_finish:
 *
 * Returns: %TRUE once committed
 */
DEFINE_FINISH_BOOLEAN(save_mcp_oauth)

/**
 * confab_store_get_mcp_oauth_async:
 *
 * Reads an MCP server's OAuth state (for confabd's own use).
 */
/**
 * confab_store_get_mcp_oauth_finish:
 *
 * Returns: (transfer full): the state's JSON; CONFAB_ERROR_NOT_FOUND when
 *   there is none
 */
DEFINE_ASYNC_TEXT2(get_mcp_oauth, agent_id, server)
DEFINE_FINISH_POINTER(get_mcp_oauth, gchar *)

/**
 * confab_store_find_mcp_oauth_state_async:
 * @state: a callback's `state`
 *
 * Finds the authorization waiting with @state.
 */
/**
 * confab_store_find_mcp_oauth_state_finish:
 *
 * Returns: (transfer full): the agent id, the server and the state's JSON;
 *   CONFAB_ERROR_NOT_FOUND for an unknown state
 */
DEFINE_ASYNC_TEXT(find_mcp_oauth_state, state)
DEFINE_FINISH_POINTER(find_mcp_oauth_state, gchar **)

/**
 * confab_store_claim_mcp_oauth_state_async:
 * @state: a callback's `state`
 *
 * Uses @state up, in one conditional write: of two callbacks with it,
 * exactly one succeeds; the other fails with CONFAB_ERROR_NOT_FOUND.
 */
/**
 * confab_store_claim_mcp_oauth_state_finish:
 *
 * Returns: %TRUE once @state is used up; %CONFAB_ERROR_NOT_FOUND when it
 *   was unknown, or used already
 */
DEFINE_ASYNC_TEXT(claim_mcp_oauth_state, state)
DEFINE_FINISH_BOOLEAN(claim_mcp_oauth_state)

/* ---------- usage per owner, token and agent (issue 30) ---------- */

/**
 * confab_store_usage_row_copy:
 *
 * Returns: (transfer full): a copy of @row
 */
ConfabStoreUsageRow *
confab_store_usage_row_copy(const ConfabStoreUsageRow *row)
{
	ConfabStoreUsageRow *copy = g_memdup2(row, sizeof *row);

	copy->month = g_strdup(row->month);
	copy->owner = g_strdup(row->owner);
	copy->token_id = g_strdup(row->token_id);
	copy->agent_id = g_strdup(row->agent_id);
	return copy;
}

/**
 * confab_store_usage_row_free:
 * @row: (nullable): a usage row
 */
void
confab_store_usage_row_free(ConfabStoreUsageRow *row)
{
	if (row == NULL)
		return;
	g_free(row->month);
	g_free(row->owner);
	g_free(row->token_id);
	g_free(row->agent_id);
	g_free(row);
}

static gpointer
row_to_usage_row(ConfabStoreRow *row)
{
	ConfabStoreUsageRow *use = g_new0(ConfabStoreUsageRow, 1);

	use->month = g_strdup(confab_store_row_text(row, 0));
	use->owner = g_strdup(confab_store_row_text(row, 1) ?: "");
	use->token_id = g_strdup(confab_store_row_text(row, 2) ?: "");
	use->agent_id = g_strdup(confab_store_row_text(row, 3) ?: "");
	use->requests = (guint64)MAX(confab_store_row_int(row, 4), 0);
	use->input_tokens = (guint64)MAX(confab_store_row_int(row, 5), 0);
	use->output_tokens = (guint64)MAX(confab_store_row_int(row, 6), 0);
	use->reasoning_tokens = (guint64)MAX(confab_store_row_int(row, 7), 0);
	return use;
}

/* $1 the month, $2 an owner or NULL for everyone's; KEYS the three key
 * columns of the row, GROUP what it is summed by. The rows are written by
 * each backend's turn commit (ConfabStoreTurn.use). */
#define USAGE_BY_SQL(KEYS, GROUP)                                                                  \
	"SELECT month, " KEYS ", CAST(sum(requests) AS bigint), "                                  \
	"CAST(sum(input_tokens) AS bigint), CAST(sum(output_tokens) AS bigint), "                  \
	"CAST(sum(reasoning_tokens) AS bigint) FROM usage_monthly "                                \
	"WHERE month = $1 AND (CAST($2 AS text) IS NULL OR owner = $2) "                           \
	"GROUP BY month, " GROUP " ORDER BY " GROUP

#define USAGE_BY_OP(KEYS, GROUP)                                                                   \
	{                                                                                          \
		.what = "reading usage", .rows = CONFAB_STORE_ROWS_LIST,                           \
		.sql = USAGE_BY_SQL(KEYS, GROUP), .map = row_to_usage_row,                         \
		.free = (GDestroyNotify)confab_store_usage_row_free, .changed = -1,                \
	}

/* by ConfabStoreUsageBy */
static const ConfabStoreOp op_list_usage_by[] = {
    USAGE_BY_OP("owner, '', ''", "owner"),
    USAGE_BY_OP("'', token_id, ''", "token_id"),
    USAGE_BY_OP("'', '', agent_id", "agent_id"),
};

/**
 * confab_store_list_usage_by_async:
 * @month: the month, `YYYY-MM` (UTC)
 * @by: what the rows are summed by
 * @owner: (nullable): only this owner's usage; %NULL for everyone's
 *
 * Reads a month's usage (turns, input, output and reasoning tokens) summed
 * per owner, per token or per agent, in the order of their names or ids.
 */
CONFAB_STORE_ASYNC(list_usage_by, const gchar *month, ConfabStoreUsageBy by, const gchar *owner)
{
	ConfabStoreCall *call = NULL;

	g_return_if_fail(CONFAB_IS_STORE(self));
	g_return_if_fail(month != NULL);
	g_return_if_fail((guint)by < G_N_ELEMENTS(op_list_usage_by));
	call = call_with_text(&op_list_usage_by[by], month);
	confab_store_call_add_text(call, owner);
	RUN(list_usage_by, call);
}

/**
 * confab_store_list_usage_by_finish:
 *
 * Returns: (transfer full) (element-type ConfabStoreUsageRow): the rows
 */
DEFINE_FINISH_POINTER(list_usage_by, GPtrArray *)
