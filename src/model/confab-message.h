/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

#include "model/confab-enums.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_MESSAGE (confab_message_get_type())
G_DECLARE_FINAL_TYPE(ConfabMessage, confab_message, CONFAB, MESSAGE, GObject)

ConfabMessage *
confab_message_new(void);
const gchar *
confab_message_get_id(ConfabMessage *self);
void
confab_message_set_id(ConfabMessage *self, const gchar *id);
const gchar *
confab_message_get_session_id(ConfabMessage *self);
void
confab_message_set_session_id(ConfabMessage *self, const gchar *session_id);
const gchar *
confab_message_get_role(ConfabMessage *self);
void
confab_message_set_role(ConfabMessage *self, const gchar *role);
const gchar *
confab_message_get_model(ConfabMessage *self);
void
confab_message_set_model(ConfabMessage *self, const gchar *model);
const gchar *
confab_message_get_content(ConfabMessage *self);
void
confab_message_set_content(ConfabMessage *self, const gchar *content);
void
confab_message_take_content(ConfabMessage *self, GString *content);
void
confab_message_take_content_blocks(ConfabMessage *self, GString *content_blocks);
void
confab_message_share_content_blocks(ConfabMessage *self);
const gchar *
confab_message_get_content_blocks(ConfabMessage *self);
void
confab_message_set_content_blocks(ConfabMessage *self, const gchar *content_blocks);
ConfabMessageStatus
confab_message_get_status(ConfabMessage *self);
void
confab_message_set_status(ConfabMessage *self, ConfabMessageStatus status);
const gchar *
confab_message_get_finish_reason(ConfabMessage *self);
void
confab_message_set_finish_reason(ConfabMessage *self, const gchar *finish_reason);
gint64
confab_message_get_prompt_tokens(ConfabMessage *self);
void
confab_message_set_prompt_tokens(ConfabMessage *self, gint64 prompt_tokens);
gint64
confab_message_get_completion_tokens(ConfabMessage *self);
void
confab_message_set_completion_tokens(ConfabMessage *self, gint64 completion_tokens);
gint64
confab_message_get_created_at(ConfabMessage *self);
void
confab_message_set_created_at(ConfabMessage *self, gint64 created_at);

const gchar *
confab_message_get_response_id(ConfabMessage *self);
void
confab_message_set_response_id(ConfabMessage *self, const gchar *response_id);
const gchar *
confab_message_get_upstream(ConfabMessage *self);
void
confab_message_set_upstream(ConfabMessage *self, const gchar *upstream);

const gchar *
confab_message_status_to_string(ConfabMessageStatus status);

G_END_DECLS
