/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/**
 * ConfabPgStatement:
 * @sql: one statement, `$1`… for the parameters
 * @params: (array length=n_params): text parameters, each nullable for SQL NULL
 * @n_params: how many
 * @simple: sent as it is (the simple query protocol): no parameters, never
 *   prepared
 *
 * A statement with its own copy of its parameters: one of a batch, a step of
 * a connection's job, a query waiting for a pool's connection.
 */
typedef struct {
	gchar *sql;
	gchar **params;
	guint n_params;
	gboolean simple;
} ConfabPgStatement;

ConfabPgStatement *
confab_pg_batch_statement_new(const gchar *sql,
			      guint n_params,
			      const gchar *const *params,
			      gboolean simple);
void
confab_pg_batch_statement_free(ConfabPgStatement *statement);

/**
 * ConfabPgBatch:
 *
 * Statements to run in one transaction with
 * confab_pg_connection_transaction_async().
 */
typedef struct _ConfabPgBatch ConfabPgBatch;

ConfabPgBatch *
confab_pg_batch_new(void);
void
confab_pg_batch_add(ConfabPgBatch *batch,
		    const gchar *sql,
		    guint n_params,
		    const gchar *const *params);
guint
confab_pg_batch_get_length(ConfabPgBatch *batch);
const ConfabPgStatement *
confab_pg_batch_get_statement(ConfabPgBatch *batch, guint index);
void
confab_pg_batch_free(ConfabPgBatch *batch);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabPgBatch, confab_pg_batch_free)

G_END_DECLS
