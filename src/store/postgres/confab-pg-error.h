/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>
#include <libpq-fe.h>

G_BEGIN_DECLS

#define CONFAB_PG_ERROR (confab_pg_error_quark())

/**
 * ConfabPgError:
 * @CONFAB_PG_ERROR_FAILED: anything else
 * @CONFAB_PG_ERROR_CONNECT: the server refused, or could not be reached, or
 *   authentication failed
 * @CONFAB_PG_ERROR_TIMEOUT: a connect, a query or a cancel took too long
 * @CONFAB_PG_ERROR_CLOSED: the connection was lost or closed; a query in
 *   flight may or may not have been committed
 * @CONFAB_PG_ERROR_SQL: the server answered with an error; its SQLSTATE is in
 *   the message and confab_pg_error_get_sqlstate()
 * @CONFAB_PG_ERROR_UNAVAILABLE: the pool has no connection to the database
 *
 * Errors of the PostgreSQL layer. The store backend maps them to
 * #CONFAB_ERROR codes; confab_pg_error_is_unavailable() tells which mean
 * "the database is down or hangs" (503 `store_unavailable`).
 */
typedef enum {
	CONFAB_PG_ERROR_FAILED,
	CONFAB_PG_ERROR_CONNECT,
	CONFAB_PG_ERROR_TIMEOUT,
	CONFAB_PG_ERROR_CLOSED,
	CONFAB_PG_ERROR_SQL,
	CONFAB_PG_ERROR_UNAVAILABLE,
} ConfabPgErrorCode;

GQuark
confab_pg_error_quark(void);
GError *
confab_pg_error_new_sql(const gchar *sqlstate, const gchar *message);
const gchar *
confab_pg_error_get_sqlstate(const GError *error);
gboolean
confab_pg_error_is_unavailable(const GError *error);
const gchar *
confab_pg_error_result_sqlstate(const PGresult *result);

G_END_DECLS
