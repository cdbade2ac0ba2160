/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "store/confab-store.h"
#include "util/confab-error.h"

G_BEGIN_DECLS

/*
 * A store operation written once (docs/architecture.md, "The store"): what
 * it takes (a #ConfabStoreCall's arguments), its SQL (one text for both
 * dialects, `$1`… placeholders; one per dialect where they differ), and
 * what its rows become (a #ConfabStoreRowMap over a #ConfabStoreRow that
 * each backend reads its own results through). A backend runs any such
 * operation through its one ConfabStoreInterface.run vfunc, on its own
 * threads or connections: it has no code of its own per operation.
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
	"updated_at, mcp_servers, max_steps"
#define CONFAB_STORE_TOKEN_COLUMNS                                                                 \
	"id, hash, owner, name, scopes, agent_id, created_at, expires_at, revoked_at"
#define CONFAB_STORE_SESSION_COLUMNS "id, owner, agent_id, source, title, created_at, updated_at"
#define CONFAB_STORE_MESSAGE_COLUMNS                                                               \
	"id, session_id, role, model, content, content_blocks, status, finish_reason, "            \
	"prompt_tokens, completion_tokens, created_at, response_id"
#define CONFAB_STORE_APPROVAL_COLUMNS                                                              \
	"id, owner, agent_id, session_id, server, tool, name, arguments, tool_call_id, state, "    \
	"decided_by, reason, created_at, decided_at, response_id"

gpointer
confab_store_agent_from_row(ConfabStoreRow *row);
gpointer
confab_store_token_from_row(ConfabStoreRow *row);
gpointer
confab_store_session_from_row(ConfabStoreRow *row);
gpointer
confab_store_message_from_row(ConfabStoreRow *row);
gpointer
confab_store_approval_from_row(ConfabStoreRow *row);

/**
 * ConfabStoreRows:
 * @CONFAB_STORE_ROWS_LIST: every row, mapped: a #GPtrArray of objects
 * @CONFAB_STORE_ROWS_ONE: the first row, mapped; no row is the op's
 *   @missing error
 * @CONFAB_STORE_ROWS_PAGE: a #ConfabStorePage of the call's limit rows at
 *   most (the SQL asks for one more, which says whether more follow)
 * @CONFAB_STORE_ROWS_NONE: a write: %TRUE once committed; when the op has a
 *   @missing error, no row changed is that error
 *
 * What an operation returns.
 */
typedef enum {
	CONFAB_STORE_ROWS_LIST,
	CONFAB_STORE_ROWS_ONE,
	CONFAB_STORE_ROWS_PAGE,
	CONFAB_STORE_ROWS_NONE,
} ConfabStoreRows;

/**
 * ConfabStoreOp:
 * @what: what it does, for errors ("reading a session")
 * @rows: what it returns
 * @sql: its statement, `$1`… placeholders; %NULL when each call builds its
 *   own (confab_store_call_set_sql())
 * @sql_sqlite: (nullable): SQLite's statement where the dialects differ
 * @sql_sqlite_then: (nullable): a write's second statement on SQLite, in
 *   the same transaction and with the same arguments: what a foreign key's
 *   ON DELETE CASCADE does on PostgreSQL (SQLite's writer does not enforce
 *   foreign keys)
 * @map: (nullable): what a row becomes, for reads
 * @free: (nullable): frees what @map made; %NULL for a #GObject
 * @missing: with @missing_format, the error when no row is found (reads) or
 *   changed (writes); 0 for none
 * @missing_format: the error's message, a printf format taking the call's
 *   first argument as a string
 * @changed: for a write, the #ConfabStoreChange other instances sharing
 *   the database hear of (PostgreSQL notifies them in the same
 *   statement, when a row changed); -1 for none
 *
 * One store operation, described once for both backends.
 */
typedef struct {
	const gchar *what;
	ConfabStoreRows rows;
	const gchar *sql;
	const gchar *sql_sqlite;
	const gchar *sql_sqlite_then;
	ConfabStoreRowMap map;
	GDestroyNotify free;
	ConfabErrorCode missing;
	const gchar *missing_format;
	gint changed;
} ConfabStoreOp;

/**
 * ConfabStoreArgType:
 * @CONFAB_STORE_ARG_TEXT: a string, or SQL NULL for %NULL
 * @CONFAB_STORE_ARG_INT: a 64-bit integer
 * @CONFAB_STORE_ARG_BYTES: a blob (bytea)
 */
typedef enum {
	CONFAB_STORE_ARG_TEXT,
	CONFAB_STORE_ARG_INT,
	CONFAB_STORE_ARG_BYTES,
} ConfabStoreArgType;

typedef struct {
	ConfabStoreArgType type;
	gchar *text;	/* owned */
	gint64 integer; /* CONFAB_STORE_ARG_INT */
	GBytes *bytes;	/* owned */
} ConfabStoreArg;

/**
 * ConfabStoreCall:
 * @op: the operation
 * @sql: (nullable): this call's own statement, for an op whose @sql is %NULL
 * @args: (element-type ConfabStoreArg): `$1`… in order, copied
 * @limit: for %CONFAB_STORE_ROWS_PAGE, the page size
 * @result: what the rows read so far make, as @op returns it
 * @n_rows: the rows read so far
 *
 * One run of an operation: its arguments, copied when the call is made (the
 * caller's may be gone when a backend's thread runs it), and its result as
 * the backend's rows fill it in (confab_store_call_add_row()).
 */
struct _ConfabStoreCall {
	const ConfabStoreOp *op;
	gchar *sql;
	GArray *args;
	guint limit;
	gpointer result;
	guint n_rows;
};

ConfabStoreCall *
confab_store_call_new(const ConfabStoreOp *op);
void
confab_store_call_free(ConfabStoreCall *call);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabStoreCall, confab_store_call_free)

void
confab_store_call_add_text(ConfabStoreCall *call, const gchar *text);
void
confab_store_call_add_int(ConfabStoreCall *call, gint64 value);
void
confab_store_call_add_bytes(ConfabStoreCall *call, GBytes *bytes);
void
confab_store_call_set_sql(ConfabStoreCall *call, gchar *sql);
const gchar *
confab_store_call_get_sql(ConfabStoreCall *call, gboolean sqlite);
guint
confab_store_call_get_n_args(ConfabStoreCall *call);
const ConfabStoreArg *
confab_store_call_get_arg(ConfabStoreCall *call, guint index);

gboolean
confab_store_call_add_row(ConfabStoreCall *call, ConfabStoreRow *row);
gpointer
confab_store_call_steal_result(ConfabStoreCall *call, GError **error);
GDestroyNotify
confab_store_call_get_result_free(ConfabStoreCall *call);
gboolean
confab_store_call_check_changed(ConfabStoreCall *call, gint64 changed_rows, GError **error);

void
confab_store_run(ConfabStore *self,
		 ConfabStoreCall *call,
		 gpointer source_tag,
		 GCancellable *cancellable,
		 GAsyncReadyCallback callback,
		 gpointer user_data);

G_END_DECLS
