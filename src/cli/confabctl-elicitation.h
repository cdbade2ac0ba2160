/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "cli/confabctl-common.h"

G_BEGIN_DECLS

gint
confabctl_elicitation_list(ConfabctlContext *ctx, gint argc, gchar **argv);
gint
confabctl_elicitation_accept(ConfabctlContext *ctx, gint argc, gchar **argv);
gint
confabctl_elicitation_decline(ConfabctlContext *ctx, gint argc, gchar **argv);
gint
confabctl_elicitation_cancel(ConfabctlContext *ctx, gint argc, gchar **argv);

G_END_DECLS
