/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "confab-chat-request.h"
#include "confab-engine.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_TURN (confab_turn_get_type())
G_DECLARE_FINAL_TYPE(ConfabTurn, confab_turn, CONFAB, TURN, GObject)

ConfabTurn *
confab_turn_new(ConfabEngine *engine, ConfabPrincipal *principal, ConfabChatRequest *request);
void
confab_turn_start_async(ConfabTurn *self, GAsyncReadyCallback callback, gpointer user_data);
gboolean
confab_turn_start_finish(ConfabTurn *self, GAsyncResult *result, GError **error);
void
confab_turn_run_async(ConfabTurn *self, GAsyncReadyCallback callback, gpointer user_data);
gboolean
confab_turn_run_finish(ConfabTurn *self, GAsyncResult *result, GError **error);
void
confab_turn_cancel(ConfabTurn *self);

ConfabChatRequest *
confab_turn_get_request(ConfabTurn *self);
const gchar *
confab_turn_get_session_id(ConfabTurn *self);
const gchar *
confab_turn_get_assistant_message_id(ConfabTurn *self);
const gchar *
confab_turn_get_completion_id(ConfabTurn *self);
const gchar *
confab_turn_get_model(ConfabTurn *self);
gint64
confab_turn_get_created(ConfabTurn *self);
const gchar *
confab_turn_get_content(ConfabTurn *self);
gchar *
confab_turn_get_tool_calls_json(ConfabTurn *self);
const gchar *
confab_turn_get_finish_reason(ConfabTurn *self);
gboolean
confab_turn_get_usage(ConfabTurn *self, gint64 *prompt_tokens, gint64 *completion_tokens);
const ConfabQuotaInfo *
confab_turn_get_quota_info(ConfabTurn *self);
ConfabMessageStatus
confab_turn_get_status(ConfabTurn *self);

gchar *
confab_title_from_text(const gchar *text);
JsonObject *
confab_message_to_openai(ConfabMessage *message);

G_END_DECLS
