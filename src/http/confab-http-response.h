/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-engine.h"
#include "core/confab-turn.h"
#include "http/server/confab-http-exchange.h"

G_BEGIN_DECLS

void
confab_http_response_json(ConfabHttpExchange *exchange, guint status, gchar *body);
void
confab_http_response_error(ConfabHttpExchange *exchange, const GError *error);
void
confab_http_response_turn_error(ConfabHttpExchange *exchange,
				ConfabTurn *turn,
				const GError *error);
void
confab_http_response_add_error_headers(ConfabHttpExchange *exchange, guint status);
gchar *
confab_http_response_format_duration(gint64 ms);
void
confab_http_response_add_quota_headers(ConfabHttpExchange *exchange, const ConfabQuotaInfo *info);
void
confab_http_response_log_set(ConfabHttpExchange *exchange,
			     const gchar *owner,
			     const gchar *agent,
			     const gchar *session);
void
confab_http_response_log_request(ConfabHttpExchange *exchange, gboolean completed);

/**
 * ConfabHttpAppendFunc:
 * @out: the JSON text so far
 * @item: one item of a list
 *
 * Appends @item's JSON object to @out.
 */
typedef void (*ConfabHttpAppendFunc)(GString *out, gconstpointer item);

void
confab_http_response_pending_list(ConfabHttpExchange *exchange,
				  GPtrArray *items,
				  guint max,
				  ConfabHttpAppendFunc append);
void
confab_http_response_add_target_headers(ConfabHttpExchange *exchange, ConfabTurn *turn);

G_END_DECLS
