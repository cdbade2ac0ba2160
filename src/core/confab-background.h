/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "core/confab-config.h"
#include "store/confab-store.h"

G_BEGIN_DECLS

/* confab-turn.h includes the engine, which includes this */
typedef struct _ConfabTurn ConfabTurn;

#define CONFAB_TYPE_BACKGROUND (confab_background_get_type())
G_DECLARE_FINAL_TYPE(ConfabBackground, confab_background, CONFAB, BACKGROUND, GObject)

ConfabBackground *
confab_background_new(ConfabStore *store, const ConfabConfig *config);
void
confab_background_add(ConfabBackground *self, const gchar *response_id, ConfabTurn *turn);
void
confab_background_remove(ConfabBackground *self, const gchar *response_id);
gboolean
confab_background_cancel(ConfabBackground *self, const gchar *response_id);
guint
confab_background_get_running(ConfabBackground *self);
gchar *
confab_background_orphan_error(void);

G_END_DECLS
