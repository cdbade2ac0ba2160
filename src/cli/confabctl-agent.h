/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "cli/confabctl-common.h"

G_BEGIN_DECLS

gint
confabctl_agent_create(ConfabctlContext *ctx, gint argc, gchar **argv);
gint
confabctl_agent_update(ConfabctlContext *ctx, gint argc, gchar **argv);
gint
confabctl_agent_list(ConfabctlContext *ctx, gint argc, gchar **argv);
gint
confabctl_agent_show(ConfabctlContext *ctx, gint argc, gchar **argv);
gint
confabctl_agent_delete(ConfabctlContext *ctx, gint argc, gchar **argv);

gint
confabctl_agent_tools(ConfabctlContext *ctx, gint argc, gchar **argv);
gint
confabctl_agent_authorize(ConfabctlContext *ctx, gint argc, gchar **argv);
gint
confabctl_agent_health(ConfabctlContext *ctx, gint argc, gchar **argv);

G_END_DECLS
