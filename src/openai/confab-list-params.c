/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <string.h>

#include "model/confab-id.h"
#include "openai/confab-list-params.h"
#include "util/confab-error.h"

void
confab_list_params_clear(ConfabListParams *params)
{
	g_clear_pointer(&params->model, g_free);
	g_clear_pointer(&params->after, g_free);
}

/**
 * confab_list_params_parse:
 * @query: (nullable): the raw query string, without '?'
 * @id_prefix: (nullable): the prefix a cursor must have (cts_ or msg_);
 *   %NULL: the caller checks it
 * @params: (out caller-allocates): the parameters
 * @error: return location for a #GError
 *
 * Parses and checks `limit`, `order`, `after` and `model`; other parameters
 * are ignored, as OpenAI does.
 */
gboolean
confab_list_params_parse(const gchar *query,
			 const gchar *id_prefix,
			 ConfabListParams *params,
			 GError **error)
{
	g_autoptr(GHashTable) table = NULL;
	g_autoptr(GError) error_local = NULL;
	const gchar *value;

	params->model = NULL;
	params->after = NULL;
	params->order = CONFAB_ORDER_DESC;
	params->limit = CONFAB_LIST_LIMIT_DEFAULT;
	if (query == NULL || *query == '\0')
		return TRUE;

	table = g_uri_parse_params(query, -1, "&", G_URI_PARAMS_WWW_FORM, &error_local);
	if (table == NULL) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 NULL,
				 "The query string is not valid URL encoding");
		return FALSE;
	}

	value = g_hash_table_lookup(table, "limit");
	if (value != NULL) {
		guint64 limit = 0;
		if (!g_ascii_string_to_unsigned(value,
						10,
						1,
						CONFAB_LIST_LIMIT_MAX,
						&limit,
						NULL) ||
		    value[0] == '+' || value[0] == '-') {
			confab_error_set_printf(error,
						CONFAB_ERROR_INVALID_LIMIT,
						"limit",
						"limit must be an integer from 1 to %d",
						CONFAB_LIST_LIMIT_MAX);
			return FALSE;
		}
		params->limit = (guint)limit;
	}

	value = g_hash_table_lookup(table, "order");
	if (value != NULL) {
		if (g_str_equal(value, "asc")) {
			params->order = CONFAB_ORDER_ASC;
		} else if (g_str_equal(value, "desc")) {
			params->order = CONFAB_ORDER_DESC;
		} else {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_ORDER,
					 "order",
					 "order must be asc or desc");
			return FALSE;
		}
	}

	value = g_hash_table_lookup(table, "after");
	if (value != NULL) {
		if (id_prefix != NULL && !confab_id_is_valid(value, id_prefix)) {
			confab_error_set_printf(error,
						CONFAB_ERROR_INVALID_AFTER,
						"after",
						"after must be an id starting with '%s', taken "
						"from first_id or last_id",
						id_prefix);
			return FALSE;
		}
		params->after = g_strdup(value);
	}

	value = g_hash_table_lookup(table, "model");
	if (value != NULL && *value != '\0')
		params->model = g_strdup(value);
	return TRUE;
}
