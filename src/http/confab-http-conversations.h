/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-engine.h"
#include "http/server/confab-http-exchange.h"

G_BEGIN_DECLS

void
confab_http_conversations_create(ConfabEngine *engine,
				 ConfabHttpExchange *exchange,
				 ConfabPrincipal *principal,
				 const gchar *param);
void
confab_http_conversations_get(ConfabEngine *engine,
			      ConfabHttpExchange *exchange,
			      ConfabPrincipal *principal,
			      const gchar *session_id);
void
confab_http_conversations_update(ConfabEngine *engine,
				 ConfabHttpExchange *exchange,
				 ConfabPrincipal *principal,
				 const gchar *session_id);
void
confab_http_conversations_delete(ConfabEngine *engine,
				 ConfabHttpExchange *exchange,
				 ConfabPrincipal *principal,
				 const gchar *session_id);
void
confab_http_conversations_list_items(ConfabEngine *engine,
				     ConfabHttpExchange *exchange,
				     ConfabPrincipal *principal,
				     const gchar *session_id);
void
confab_http_conversations_add_items(ConfabEngine *engine,
				    ConfabHttpExchange *exchange,
				    ConfabPrincipal *principal,
				    const gchar *session_id);
void
confab_http_conversations_get_item(ConfabEngine *engine,
				   ConfabHttpExchange *exchange,
				   ConfabPrincipal *principal,
				   const gchar *ids);
void
confab_http_conversations_delete_item(ConfabEngine *engine,
				      ConfabHttpExchange *exchange,
				      ConfabPrincipal *principal,
				      const gchar *ids);

G_END_DECLS
