/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <json-glib/json-glib.h>

#include "model/confab-message.h"

G_BEGIN_DECLS

void
confab_openai_message_append_stored(JsonArray *context, ConfabMessage *message);

gchar *
confab_openai_message_get_text(JsonObject *message);

gchar *
confab_openai_message_one_text(const gchar *blocks);

void
confab_openai_message_settle_calls(JsonArray *context, const gchar *unanswered);

G_END_DECLS
