/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* the first descriptor systemd passes (SD_LISTEN_FDS_START) */
#define CONFAB_SD_LISTEN_FDS_START 3

gint
confab_sd_listen_fds(GError **error);

G_END_DECLS
