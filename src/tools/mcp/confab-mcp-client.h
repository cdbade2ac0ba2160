/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "tools/mcp/confab-mcp-elicitation.h"
#include "tools/mcp/confab-mcp-jsonrpc.h"
#include "tools/mcp/confab-mcp-tool.h"
#include "tools/mcp/confab-mcp-transport.h"

G_BEGIN_DECLS

/* The protocol version Confab asks for; 2025-06-18 is accepted too. */
#define CONFAB_MCP_PROTOCOL_VERSION "2025-11-25"

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

/**
 * ConfabMcpElicitFunc:
 * @client: the client the request came to
 * @elicitation: the request; ref it to answer later
 * @call_data: (nullable): the progress data of the tool call the request
 *   serves, where the transport says (Streamable HTTP: it came on that
 *   call's answer stream); %NULL when nothing ties it to a call (stdio,
 *   the standalone stream)
 * @user_data: data given with the function
 *
 * An `elicitation/create` (form mode) of the server's, to put to a person.
 */
typedef void (*ConfabMcpElicitFunc)(ConfabMcpClient *client,
				    ConfabMcpElicitation *elicitation,
				    gpointer call_data,
				    gpointer user_data);

void
confab_mcp_client_set_elicitation_handler(ConfabMcpClient *self,
					  ConfabMcpElicitFunc func,
					  gpointer user_data,
					  GDestroyNotify notify);

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
