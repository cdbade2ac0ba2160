/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-engine.h"
#include "http/server/confab-http-exchange.h"

G_BEGIN_DECLS

void
confab_http_replay_start(ConfabEngine *engine,
			 ConfabHttpExchange *exchange,
			 const gchar *response_id,
			 gint64 after);

G_END_DECLS
