/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

#include "model/confab-enums.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_SESSION (confab_session_get_type())
G_DECLARE_FINAL_TYPE(ConfabSession, confab_session, CONFAB, SESSION, GObject)

ConfabSession *
confab_session_new(void);
const gchar *
confab_session_get_id(ConfabSession *self);
void
confab_session_set_id(ConfabSession *self, const gchar *id);
const gchar *
confab_session_get_owner(ConfabSession *self);
void
confab_session_set_owner(ConfabSession *self, const gchar *owner);
const gchar *
confab_session_get_agent_id(ConfabSession *self);
void
confab_session_set_agent_id(ConfabSession *self, const gchar *agent_id);
ConfabSessionSource
confab_session_get_source(ConfabSession *self);
void
confab_session_set_source(ConfabSession *self, ConfabSessionSource source);
const gchar *
confab_session_get_title(ConfabSession *self);
void
confab_session_set_title(ConfabSession *self, const gchar *title);
const gchar *
confab_session_get_metadata(ConfabSession *self);
void
confab_session_set_metadata(ConfabSession *self, const gchar *metadata);
gint64
confab_session_get_created_at(ConfabSession *self);
void
confab_session_set_created_at(ConfabSession *self, gint64 created_at);
gint64
confab_session_get_updated_at(ConfabSession *self);
void
confab_session_set_updated_at(ConfabSession *self, gint64 updated_at);

gchar *
confab_session_title_from_text(const gchar *text);

const gchar *
confab_session_source_to_string(ConfabSessionSource source);
gboolean
confab_session_source_from_string(const gchar *str, ConfabSessionSource *source);

G_END_DECLS
