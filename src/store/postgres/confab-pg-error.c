/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabPg"

#include "config.h"

#include <string.h>

#include "store/postgres/confab-pg-error.h"

typedef struct {
	gchar sqlstate[6];
} ConfabPgErrorPrivate;

static void
confab_pg_error_private_init(ConfabPgErrorPrivate *priv)
{
	priv->sqlstate[0] = '\0';
}

static void
confab_pg_error_private_copy(const ConfabPgErrorPrivate *src, ConfabPgErrorPrivate *dest)
{
	memcpy(dest->sqlstate, src->sqlstate, sizeof(dest->sqlstate));
}

static void
confab_pg_error_private_clear(ConfabPgErrorPrivate *priv)
{
}

/* defines confab_pg_error_quark() and confab_pg_error_get_private() */
G_DEFINE_EXTENDED_ERROR(ConfabPgError, confab_pg_error)

/**
 * confab_pg_error_new_sql:
 * @sqlstate: (nullable): the server's SQLSTATE
 * @message: what the server said
 *
 * Returns: (transfer full): a %CONFAB_PG_ERROR_SQL error that keeps
 *   @sqlstate, or %CONFAB_PG_ERROR_FAILED without a valid one
 */
GError *
confab_pg_error_new_sql(const gchar *sqlstate, const gchar *message)
{
	GError *error;
	if (sqlstate == NULL || strlen(sqlstate) != 5)
		return g_error_new_literal(CONFAB_PG_ERROR, CONFAB_PG_ERROR_FAILED, message);
	error = g_error_new(CONFAB_PG_ERROR,
			    CONFAB_PG_ERROR_SQL,
			    "%s (SQLSTATE %s)",
			    message,
			    sqlstate);
	g_strlcpy(confab_pg_error_get_private(error)->sqlstate, sqlstate, 6);
	return error;
}

/**
 * confab_pg_error_get_sqlstate:
 * @error: (nullable): an error
 *
 * Returns: (nullable): the five-character SQLSTATE of a
 *   %CONFAB_PG_ERROR_SQL error, e.g. `23505`
 */
const gchar *
confab_pg_error_get_sqlstate(const GError *error)
{
	ConfabPgErrorPrivate *priv;
	if (error == NULL || error->domain != CONFAB_PG_ERROR)
		return NULL;
	priv = confab_pg_error_get_private(error);
	return priv != NULL && priv->sqlstate[0] != '\0' ? priv->sqlstate : NULL;
}

/**
 * confab_pg_error_is_unavailable:
 * @error: (nullable): an error from this layer
 *
 * Returns: whether @error means the database is unreachable, hangs or is
 *   going away, rather than that the statement was wrong
 */
gboolean
confab_pg_error_is_unavailable(const GError *error)
{
	const gchar *sqlstate;
	if (error == NULL || error->domain != CONFAB_PG_ERROR)
		return FALSE;
	switch (error->code) {
	case CONFAB_PG_ERROR_CONNECT:
	case CONFAB_PG_ERROR_TIMEOUT:
	case CONFAB_PG_ERROR_CLOSED:
	case CONFAB_PG_ERROR_UNAVAILABLE:
		return TRUE;
	case CONFAB_PG_ERROR_SQL:
		sqlstate = confab_pg_error_get_sqlstate(error);
		/* 08: connection exception; 57014: statement_timeout; 57P0x:
		 * shutting down, cannot connect now; 53300: too many connections */
		return sqlstate != NULL &&
		       (g_str_has_prefix(sqlstate, "08") || g_str_equal(sqlstate, "57014") ||
			g_str_has_prefix(sqlstate, "57P0") || g_str_equal(sqlstate, "53300"));
	default:
		return FALSE;
	}
}

/**
 * confab_pg_error_result_sqlstate:
 * @result: (nullable): a result
 *
 * Returns: (nullable): the SQLSTATE of an error result, %NULL for a success
 */
const gchar *
confab_pg_error_result_sqlstate(const PGresult *result)
{
	if (result == NULL)
		return NULL;
	return PQresultErrorField(result, PG_DIAG_SQLSTATE);
}
