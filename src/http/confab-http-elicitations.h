/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-engine.h"
#include "http/server/confab-http-exchange.h"

G_BEGIN_DECLS

void
confab_http_elicitations_answer(ConfabEngine *engine,
				ConfabHttpExchange *exchange,
				ConfabPrincipal *principal,
				const gchar *param);
void
confab_http_elicitations_list(ConfabEngine *engine,
			      ConfabHttpExchange *exchange,
			      ConfabPrincipal *principal,
			      const gchar *param);

G_END_DECLS
