/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

#include "model/confab-enums.h"

G_BEGIN_DECLS

#define CONFAB_LIST_LIMIT_DEFAULT 20
#define CONFAB_LIST_LIMIT_MAX	  100

/**
 * ConfabListParams:
 * @model: (nullable): the agent filter
 * @after: (nullable): a cursor: an id with the list's prefix
 * @order: desc (default) or asc
 * @limit: 1 to 100, default 20
 *
 * The query parameters of the v1 list endpoints.
 */
typedef struct {
	gchar *model;
	gchar *after;
	ConfabOrder order;
	guint limit;
} ConfabListParams;

gboolean
confab_list_params_parse(const gchar *query,
			 const gchar *id_prefix,
			 ConfabListParams *params,
			 GError **error);
void
confab_list_params_clear(ConfabListParams *params);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ConfabListParams, confab_list_params_clear)

G_END_DECLS
