/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

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
const gchar *
confab_pg_batch_get_sql(ConfabPgBatch *batch, guint index);
const gchar *const *
confab_pg_batch_get_params(ConfabPgBatch *batch, guint index, guint *n_params);
void
confab_pg_batch_free(ConfabPgBatch *batch);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabPgBatch, confab_pg_batch_free)

G_END_DECLS
