/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* The tool output handed to the model, by default ([tools] max_output_bytes). */
#define CONFAB_MCP_DEFAULT_MAX_OUTPUT_BYTES 65536

/**
 * ConfabMcpTool:
 * @name: the tool's name on its server
 * @title: (nullable): a name for people
 * @description: (nullable): what it does, for the model
 * @input_schema: the JSON Schema of its arguments, as compact JSON text (an
 *   object; `{"type":"object"}` when the server gave none)
 *
 * One tool of a server, as `tools/list` described it.
 */
typedef struct {
	gchar *name;
	gchar *title;
	gchar *description;
	gchar *input_schema;
} ConfabMcpTool;

#define CONFAB_TYPE_MCP_TOOL (confab_mcp_tool_get_type())
GType
confab_mcp_tool_get_type(void);
ConfabMcpTool *
confab_mcp_tool_copy(const ConfabMcpTool *tool);
void
confab_mcp_tool_free(ConfabMcpTool *tool);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabMcpTool, confab_mcp_tool_free)

/**
 * ConfabMcpToolResult:
 * @is_error: the tool said it failed (`isError`)
 * @text: the result as the model sees it: text parts joined by "\n",
 *   other parts named (`[image: image/png, 1234 bytes]`, `[resource: URI]`),
 *   `structuredContent` as JSON text, cut with a marker past the maximum
 * @truncated: whether @text was cut
 */
typedef struct {
	gboolean is_error;
	gchar *text;
	gboolean truncated;
} ConfabMcpToolResult;

#define CONFAB_TYPE_MCP_TOOL_RESULT (confab_mcp_tool_result_get_type())
GType
confab_mcp_tool_result_get_type(void);
ConfabMcpToolResult *
confab_mcp_tool_result_new_from_json(JsonNode *result, gsize max_output_bytes, GError **error);
ConfabMcpToolResult *
confab_mcp_tool_result_copy(const ConfabMcpToolResult *result);
void
confab_mcp_tool_result_free(ConfabMcpToolResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabMcpToolResult, confab_mcp_tool_result_free)

G_END_DECLS
