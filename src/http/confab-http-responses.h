/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-engine.h"
#include "http/server/confab-http-exchange.h"

G_BEGIN_DECLS

void
confab_http_responses_create(ConfabEngine *engine,
			     ConfabHttpExchange *exchange,
			     ConfabPrincipal *principal,
			     const gchar *param);
void
confab_http_responses_get(ConfabEngine *engine,
			  ConfabHttpExchange *exchange,
			  ConfabPrincipal *principal,
			  const gchar *response_id);
void
confab_http_responses_cancel(ConfabEngine *engine,
			     ConfabHttpExchange *exchange,
			     ConfabPrincipal *principal,
			     const gchar *response_id);
void
confab_http_responses_delete(ConfabEngine *engine,
			     ConfabHttpExchange *exchange,
			     ConfabPrincipal *principal,
			     const gchar *response_id);
void
confab_http_responses_input_items(ConfabEngine *engine,
				  ConfabHttpExchange *exchange,
				  ConfabPrincipal *principal,
				  const gchar *response_id);
GPtrArray *
confab_http_responses_message_items(ConfabMessage *message, const gchar *first_id);
JsonObject *
confab_http_responses_message_decision(ConfabMessage *msg);
gboolean
confab_http_responses_message_drop_item(ConfabMessage *message, guint index, gboolean *emptied);

G_END_DECLS
