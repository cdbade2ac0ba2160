/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-engine.h"
#include "http/server/confab-http-exchange.h"

G_BEGIN_DECLS

void
confab_http_oauth_callback(ConfabEngine *engine,
			   ConfabHttpExchange *exchange,
			   ConfabPrincipal *principal,
			   const gchar *param);
void
confab_http_oauth_client_metadata(ConfabEngine *engine,
				  ConfabHttpExchange *exchange,
				  ConfabPrincipal *principal,
				  const gchar *param);

G_END_DECLS
