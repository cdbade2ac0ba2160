/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

GLogWriterOutput
confab_log_writer(GLogLevelFlags log_level,
		  const GLogField *fields,
		  gsize n_fields,
		  gpointer user_data);
gboolean
confab_log_info_enabled(const gchar *log_domain);

G_END_DECLS
