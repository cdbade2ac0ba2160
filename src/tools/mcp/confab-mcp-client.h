/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "tools/mcp/confab-mcp-jsonrpc.h"
#include "tools/mcp/confab-mcp-transport.h"

G_BEGIN_DECLS

/* The protocol version Confab asks for; 2025-06-18 is accepted too. */
#define CONFAB_MCP_PROTOCOL_VERSION "2025-11-25"
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

/**
 * ConfabMcpProgressFunc:
 * @progress: the progress so far
 * @total: the total, or a negative number when unknown
 * @message: (nullable): what the server said about it
 * @user_data: data given with the function
 *
 * A `notifications/progress` about a running tool call.
 */
typedef void (*ConfabMcpProgressFunc)(gdouble progress,
				      gdouble total,
				      const gchar *message,
				      gpointer user_data);

#define CONFAB_TYPE_MCP_CLIENT (confab_mcp_client_get_type())
G_DECLARE_FINAL_TYPE(ConfabMcpClient, confab_mcp_client, CONFAB, MCP_CLIENT, GObject)

ConfabMcpClient *
confab_mcp_client_new(const gchar *name, ConfabMcpTransport *transport);
void
confab_mcp_client_set_max_message_size(ConfabMcpClient *self, gsize max_bytes);
void
confab_mcp_client_set_start_timeout(ConfabMcpClient *self, guint timeout_ms);

void
confab_mcp_client_start_async(ConfabMcpClient *self,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data);
gboolean
confab_mcp_client_start_finish(ConfabMcpClient *self, GAsyncResult *result, GError **error);

void
confab_mcp_client_list_tools_async(ConfabMcpClient *self,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
GPtrArray *
confab_mcp_client_list_tools_finish(ConfabMcpClient *self, GAsyncResult *result, GError **error);

void
confab_mcp_client_call_tool_async(ConfabMcpClient *self,
				  const gchar *tool,
				  JsonObject *arguments,
				  guint timeout_ms,
				  gsize max_output_bytes,
				  ConfabMcpProgressFunc progress_func,
				  gpointer progress_data,
				  GDestroyNotify progress_notify,
				  GCancellable *cancellable,
				  GAsyncReadyCallback callback,
				  gpointer user_data);
ConfabMcpToolResult *
confab_mcp_client_call_tool_finish(ConfabMcpClient *self, GAsyncResult *result, GError **error);

void
confab_mcp_client_close(ConfabMcpClient *self);
gboolean
confab_mcp_client_is_closed(ConfabMcpClient *self);
gboolean
confab_mcp_client_is_ready(ConfabMcpClient *self);
const gchar *
confab_mcp_client_get_name(ConfabMcpClient *self);
const gchar *
confab_mcp_client_get_protocol_version(ConfabMcpClient *self);
const gchar *
confab_mcp_client_get_server_name(ConfabMcpClient *self);
const gchar *
confab_mcp_client_get_server_version(ConfabMcpClient *self);
const gchar *
confab_mcp_client_get_instructions(ConfabMcpClient *self);
ConfabMcpJsonrpc *
confab_mcp_client_get_jsonrpc(ConfabMcpClient *self);

G_END_DECLS
