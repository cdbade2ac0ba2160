/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "cli/confabctl-common.h"

G_BEGIN_DECLS

gint
confabctl_limits_set(ConfabctlContext *ctx, gint argc, gchar **argv);
gint
confabctl_limits_show(ConfabctlContext *ctx, gint argc, gchar **argv);

G_END_DECLS
