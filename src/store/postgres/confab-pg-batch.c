/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabPg"

#include "config.h"

#include "store/postgres/confab-pg-batch.h"

typedef struct {
	gchar *sql;	/* owned */
	gchar **params; /* owned: n_params strings, each nullable */
	guint n_params;
} Statement;

static void
statement_free(Statement *statement)
{
	for (guint i = 0; i < statement->n_params; i++)
		g_free(statement->params[i]);
	g_free(statement->params);
	g_free(statement->sql);
	g_free(statement);
}

struct _ConfabPgBatch {
	GPtrArray *statements; /* owned: Statement */
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
	batch->statements = g_ptr_array_new_with_free_func((GDestroyNotify)statement_free);
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
	Statement *statement;

	g_return_if_fail(batch != NULL);
	g_return_if_fail(sql != NULL);
	g_return_if_fail(n_params == 0 || params != NULL);
	statement = g_new0(Statement, 1);
	statement->sql = g_strdup(sql);
	statement->n_params = n_params;
	statement->params = g_new0(gchar *, n_params + 1);
	for (guint i = 0; i < n_params; i++)
		statement->params[i] = g_strdup(params[i]);
	g_ptr_array_add(batch->statements, statement);
}

guint
confab_pg_batch_get_length(ConfabPgBatch *batch)
{
	g_return_val_if_fail(batch != NULL, 0);
	return batch->statements->len;
}

const gchar *
confab_pg_batch_get_sql(ConfabPgBatch *batch, guint index)
{
	g_return_val_if_fail(batch != NULL && index < batch->statements->len, NULL);
	return ((Statement *)g_ptr_array_index(batch->statements, index))->sql;
}

/**
 * confab_pg_batch_get_params:
 * @n_params: (out): how many
 *
 * Returns: (transfer none) (array length=n_params): the statement's parameters
 */
const gchar *const *
confab_pg_batch_get_params(ConfabPgBatch *batch, guint index, guint *n_params)
{
	Statement *statement;

	g_return_val_if_fail(batch != NULL && index < batch->statements->len, NULL);
	statement = g_ptr_array_index(batch->statements, index);
	*n_params = statement->n_params;
	return (const gchar *const *)statement->params;
}

void
confab_pg_batch_free(ConfabPgBatch *batch)
{
	if (batch == NULL)
		return;
	g_ptr_array_unref(batch->statements);
	g_free(batch);
}
