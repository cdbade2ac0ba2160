/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "tools/mcp/confab-mcp-transport.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_MCP_STDIO (confab_mcp_stdio_get_type())
G_DECLARE_FINAL_TYPE(ConfabMcpStdio, confab_mcp_stdio, CONFAB, MCP_STDIO, GObject)

ConfabMcpStdio *
confab_mcp_stdio_new(const gchar *name,
		     const gchar *const *argv,
		     const gchar *const *env,
		     const gchar *cwd,
		     const gchar *home,
		     GError **error);
void
confab_mcp_stdio_set_kill_timeout(ConfabMcpStdio *self, guint timeout_ms);
void
confab_mcp_stdio_set_max_stderr_line(ConfabMcpStdio *self, gsize max_bytes);
const gchar *
confab_mcp_stdio_get_identifier(ConfabMcpStdio *self);
gboolean
confab_mcp_stdio_has_exited(ConfabMcpStdio *self);

G_END_DECLS
