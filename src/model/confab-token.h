/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

#include "model/confab-enums.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_TOKEN (confab_token_get_type())
G_DECLARE_FINAL_TYPE(ConfabToken, confab_token, CONFAB, TOKEN, GObject)

ConfabToken *
confab_token_new(void);
const gchar *
confab_token_get_id(ConfabToken *self);
void
confab_token_set_id(ConfabToken *self, const gchar *id);
const gchar *
confab_token_get_owner(ConfabToken *self);
void
confab_token_set_owner(ConfabToken *self, const gchar *owner);
const gchar *
confab_token_get_name(ConfabToken *self);
void
confab_token_set_name(ConfabToken *self, const gchar *name);
const gchar *const *
confab_token_get_scopes(ConfabToken *self);
void
confab_token_set_scopes(ConfabToken *self, const gchar *const *scopes);
const gchar *
confab_token_get_agent_id(ConfabToken *self);
void
confab_token_set_agent_id(ConfabToken *self, const gchar *agent_id);
GBytes *
confab_token_get_hash(ConfabToken *self);
void
confab_token_set_hash(ConfabToken *self, GBytes *hash);
gint64
confab_token_get_created_at(ConfabToken *self);
void
confab_token_set_created_at(ConfabToken *self, gint64 created_at);
gint64
confab_token_get_expires_at(ConfabToken *self);
void
confab_token_set_expires_at(ConfabToken *self, gint64 expires_at);
gint64
confab_token_get_revoked_at(ConfabToken *self);
void
confab_token_set_revoked_at(ConfabToken *self, gint64 revoked_at);

gchar *
confab_token_secret_new(GError **error);

G_END_DECLS
