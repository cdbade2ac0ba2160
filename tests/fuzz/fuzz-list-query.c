/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "confab-fuzz.h"
#include "openai/confab-list-params.h"

/* A list endpoint's query string: limit, order, after (a cursor), model. */
int
LLVMFuzzerTestOneInput(const guint8 *data, size_t size)
{
	g_autofree gchar *query = g_strndup((const gchar *)data, size);
	const gchar *prefixes[] = {"cts_", "msg_"};

	for (guint i = 0; i < G_N_ELEMENTS(prefixes); i++) {
		g_auto(ConfabListParams) params = {0};
		g_autoptr(GError) error = NULL;
		gboolean ok = confab_list_params_parse(query, prefixes[i], &params, &error);
		g_assert(ok == (error == NULL));
	}
	return 0;
}
