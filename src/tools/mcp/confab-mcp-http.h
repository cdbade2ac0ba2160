/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "tools/mcp/confab-mcp-oauth.h"
#include "tools/mcp/confab-mcp-transport.h"
#include "upstream/confab-upstream-client.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_MCP_HTTP (confab_mcp_http_get_type())
G_DECLARE_FINAL_TYPE(ConfabMcpHttp, confab_mcp_http, CONFAB, MCP_HTTP, GObject)

ConfabMcpHttp *
confab_mcp_http_new(const gchar *name,
		    const gchar *url,
		    ConfabUpstreamClient *client,
		    GError **error);
gboolean
confab_mcp_http_add_header(ConfabMcpHttp *self,
			   const gchar *name,
			   const gchar *value,
			   GError **error);
gboolean
confab_mcp_http_set_bearer_token(ConfabMcpHttp *self, const gchar *token, GError **error);
void
confab_mcp_http_set_oauth(ConfabMcpHttp *self, ConfabMcpOAuth *oauth);
void
confab_mcp_http_set_listen(ConfabMcpHttp *self, gboolean listen);
const gchar *
confab_mcp_http_get_session_id(ConfabMcpHttp *self);
gboolean
confab_mcp_http_is_listening(ConfabMcpHttp *self);

G_END_DECLS
