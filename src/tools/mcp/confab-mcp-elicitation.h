/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <json-glib/json-glib.h>

#include "tools/mcp/confab-mcp-jsonrpc.h"

G_BEGIN_DECLS

typedef struct _ConfabMcpElicitation ConfabMcpElicitation;

#define CONFAB_TYPE_MCP_ELICITATION (confab_mcp_elicitation_get_type())
GType
confab_mcp_elicitation_get_type(void);

ConfabMcpElicitation *
confab_mcp_elicitation_new(ConfabMcpJsonrpc *rpc,
			   JsonNode *request_id,
			   const gchar *server,
			   JsonObject *params,
			   GError **error);
ConfabMcpElicitation *
confab_mcp_elicitation_ref(ConfabMcpElicitation *self);
void
confab_mcp_elicitation_unref(ConfabMcpElicitation *self);
const gchar *
confab_mcp_elicitation_get_server(ConfabMcpElicitation *self);
const gchar *
confab_mcp_elicitation_get_message(ConfabMcpElicitation *self);
JsonObject *
confab_mcp_elicitation_get_schema(ConfabMcpElicitation *self);
gboolean
confab_mcp_elicitation_is_answered(ConfabMcpElicitation *self);
gboolean
confab_mcp_elicitation_respond(ConfabMcpElicitation *self,
			       const gchar *action,
			       JsonObject *content,
			       GError **error);

gboolean
confab_mcp_elicitation_check_schema(JsonObject *schema, GError **error);
JsonObject *
confab_mcp_elicitation_apply_schema(JsonObject *schema, JsonObject *content, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabMcpElicitation, confab_mcp_elicitation_unref)

G_END_DECLS
