/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabPg"

#include "config.h"

#include "store/postgres/confab-pg-batch.h"

/**
 * confab_pg_batch_statement_new:
 * @params: (array length=n_params) (nullable): copied
 *
 * Returns: (transfer full): a statement with copies of @sql and @params
 */
ConfabPgStatement *
confab_pg_batch_statement_new(const gchar *sql,
			      guint n_params,
			      const gchar *const *params,
			      gboolean simple)
{
	ConfabPgStatement *statement = g_new0(ConfabPgStatement, 1);

	statement->sql = g_strdup(sql);
	statement->n_params = n_params;
	statement->params = g_new0(gchar *, n_params + 1);
	for (guint i = 0; i < n_params; i++)
		statement->params[i] = g_strdup(params[i]);
	statement->simple = simple;
	return statement;
}

void
confab_pg_batch_statement_free(ConfabPgStatement *statement)
{
	/* not g_strfreev(): a NULL parameter (SQL NULL) may come before others */
	for (guint i = 0; i < statement->n_params; i++)
		g_free(statement->params[i]);
	g_free(statement->params);
	g_free(statement->sql);
	g_free(statement);
}

struct _ConfabPgBatch {
	GPtrArray *statements; /* owned: ConfabPgStatement */
};

/**
 * confab_pg_batch_new:
 *
 * Returns: (transfer full): an empty batch of statements
 */
ConfabPgBatch *
confab_pg_batch_new(void)
{
	ConfabPgBatch *batch = g_new0(ConfabPgBatch, 1);
	batch->statements =
	    g_ptr_array_new_with_free_func((GDestroyNotify)confab_pg_batch_statement_free);
	return batch;
}

/**
 * confab_pg_batch_add:
 * @sql: one statement, `$1`… for the parameters
 * @params: (array length=n_params) (nullable): text parameters, each
 *   nullable for SQL NULL; copied
 */
void
confab_pg_batch_add(ConfabPgBatch *batch,
		    const gchar *sql,
		    guint n_params,
		    const gchar *const *params)
{
	g_return_if_fail(batch != NULL);
	g_return_if_fail(sql != NULL);
	g_return_if_fail(n_params == 0 || params != NULL);
	g_ptr_array_add(batch->statements,
			confab_pg_batch_statement_new(sql, n_params, params, FALSE));
}

guint
confab_pg_batch_get_length(ConfabPgBatch *batch)
{
	g_return_val_if_fail(batch != NULL, 0);
	return batch->statements->len;
}

/**
 * confab_pg_batch_get_statement:
 *
 * Returns: (transfer none): the statement at @index
 */
const ConfabPgStatement *
confab_pg_batch_get_statement(ConfabPgBatch *batch, guint index)
{
	g_return_val_if_fail(batch != NULL && index < batch->statements->len, NULL);
	return g_ptr_array_index(batch->statements, index);
}

void
confab_pg_batch_free(ConfabPgBatch *batch)
{
	if (batch == NULL)
		return;
	g_ptr_array_unref(batch->statements);
	g_free(batch);
}
