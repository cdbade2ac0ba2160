/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

GSource *
confab_source_add_timeout(guint interval_ms, GSourceFunc func, gpointer user_data);
GSource *
confab_source_add_timeout_seconds(guint interval, GSourceFunc func, gpointer user_data);
GSource *
confab_source_add_idle(GSourceFunc func, gpointer user_data);
void
confab_source_clear(GSource **source);

G_END_DECLS
