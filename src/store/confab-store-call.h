/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "store/confab-store-row.h"
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

/**
 * ConfabStoreRows:
 * @CONFAB_STORE_ROWS_LIST: every row, mapped: a #GPtrArray of objects
 * @CONFAB_STORE_ROWS_ONE: the first row, mapped; no row is the op's
 *   @missing error
 * @CONFAB_STORE_ROWS_PAGE: a #ConfabStorePage of the call's limit rows at
 *   most (the SQL asks for one more, which says whether more follow)
 * @CONFAB_STORE_ROWS_NONE: a write: %TRUE once committed; when the op has a
 *   @missing error, no row changed is that error
 * @CONFAB_STORE_ROWS_WRITTEN: a write that returns the row as it left it,
 *   mapped, as %CONFAB_STORE_ROWS_ONE does, once committed; the op's
 *   @verdict may make an error of that row (what was written stands)
 *
 * What an operation returns.
 */
typedef enum {
	CONFAB_STORE_ROWS_LIST,
	CONFAB_STORE_ROWS_ONE,
	CONFAB_STORE_ROWS_PAGE,
	CONFAB_STORE_ROWS_NONE,
	CONFAB_STORE_ROWS_WRITTEN,
} ConfabStoreRows;

/* The answer a written row makes (%CONFAB_STORE_ROWS_WRITTEN): %TRUE, or
 * %FALSE with @error, from @row and @mapped, what the op's map made of it. */
typedef gboolean (*ConfabStoreVerdict)(ConfabStoreCall *call,
				       ConfabStoreRow *row,
				       gpointer mapped,
				       GError **error);

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
 *   foreign keys); for %CONFAB_STORE_ROWS_WRITTEN, the read of the row the
 *   first left (PostgreSQL's one statement writes and returns it)
 * @map: (nullable): what a row becomes, for reads
 * @free: (nullable): frees what @map made; %NULL for a #GObject
 * @missing: with @missing_format, the error when no row is found (reads,
 *   and the read back of %CONFAB_STORE_ROWS_WRITTEN) or changed (writes); 0
 *   for none
 * @missing_format: the error's message, a printf format taking the call's
 *   first argument as a string
 * @changed: for a write, the #ConfabStoreChange other instances sharing
 *   the database hear of (PostgreSQL notifies them in the same
 *   statement, when a row changed); -1 for none
 * @verdict: (nullable): for %CONFAB_STORE_ROWS_WRITTEN, the answer its row
 *   makes
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
	ConfabStoreVerdict verdict;
} ConfabStoreOp;

/**
 * ConfabStoreArgType:
 * @CONFAB_STORE_ARG_TEXT: a string, or SQL NULL for %NULL
 * @CONFAB_STORE_ARG_INT: a 64-bit integer
 * @CONFAB_STORE_ARG_BYTES: a blob (bytea)
 * @CONFAB_STORE_ARG_INSTANCE: the id of the instance running the call, in a
 *   store shared by several (PostgreSQL's leases); SQL NULL elsewhere
 */
typedef enum {
	CONFAB_STORE_ARG_TEXT,
	CONFAB_STORE_ARG_INT,
	CONFAB_STORE_ARG_BYTES,
	CONFAB_STORE_ARG_INSTANCE,
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
 * @error: (nullable): the error @op's verdict made of its row
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
	GError *error;
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
confab_store_call_add_instance(ConfabStoreCall *call);
void
confab_store_call_set_sql(ConfabStoreCall *call, gchar *sql);
const gchar *
confab_store_call_get_sql(ConfabStoreCall *call, gboolean sqlite);
guint
confab_store_call_get_n_args(ConfabStoreCall *call);
const ConfabStoreArg *
confab_store_call_get_arg(ConfabStoreCall *call, guint index);

gboolean
confab_store_call_writes(ConfabStoreCall *call);
gboolean
confab_store_call_add_row(ConfabStoreCall *call, ConfabStoreRow *row);
gpointer
confab_store_call_steal_result(ConfabStoreCall *call, GError **error);
GDestroyNotify
confab_store_call_get_result_free(ConfabStoreCall *call);
gboolean
confab_store_call_check_changed(ConfabStoreCall *call, gint64 changed_rows, GError **error);

G_END_DECLS
