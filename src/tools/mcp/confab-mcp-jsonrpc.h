/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "tools/mcp/confab-mcp-transport.h"

G_BEGIN_DECLS

/* The largest JSON-RPC message taken in or sent, by default. */
#define CONFAB_MCP_DEFAULT_MAX_MESSAGE_SIZE (4 * 1024 * 1024)

typedef struct _ConfabMcpJsonrpc ConfabMcpJsonrpc;

/**
 * ConfabMcpRequestFunc:
 * @rpc: the connection
 * @method: the server's request
 * @params: (nullable): its params
 * @id: its id, to answer with confab_mcp_jsonrpc_respond()
 * @answering: the id of the request of ours, still waiting, whose answer's
 *   stream brought it (Streamable HTTP ties a server's request to the
 *   client request it serves that way); 0 when nothing says
 * @user_data: data given with the function
 *
 * Offered a request of the server's.
 *
 * Returns: %TRUE if it takes the request (and answers it, now or later)
 */
typedef gboolean (*ConfabMcpRequestFunc)(ConfabMcpJsonrpc *rpc,
					 const gchar *method,
					 JsonObject *params,
					 JsonNode *id,
					 gint64 answering,
					 gpointer user_data);

#define CONFAB_TYPE_MCP_JSONRPC (confab_mcp_jsonrpc_get_type())
G_DECLARE_FINAL_TYPE(ConfabMcpJsonrpc, confab_mcp_jsonrpc, CONFAB, MCP_JSONRPC, GObject)

ConfabMcpJsonrpc *
confab_mcp_jsonrpc_new(ConfabMcpTransport *transport, const gchar *name);
ConfabMcpTransport *
confab_mcp_jsonrpc_get_transport(ConfabMcpJsonrpc *self);
void
confab_mcp_jsonrpc_set_max_message_size(ConfabMcpJsonrpc *self, gsize max_bytes);
gsize
confab_mcp_jsonrpc_get_max_message_size(ConfabMcpJsonrpc *self);
void
confab_mcp_jsonrpc_set_max_pending(ConfabMcpJsonrpc *self, guint max_pending);
void
confab_mcp_jsonrpc_set_batches(ConfabMcpJsonrpc *self, gboolean batches);
void
confab_mcp_jsonrpc_set_request_func(ConfabMcpJsonrpc *self,
				    ConfabMcpRequestFunc func,
				    gpointer user_data);
void
confab_mcp_jsonrpc_respond(ConfabMcpJsonrpc *self,
			   JsonNode *id,
			   JsonNode *result,
			   gint code,
			   const gchar *message);

gint64
confab_mcp_jsonrpc_request_async(ConfabMcpJsonrpc *self,
				 const gchar *method,
				 JsonNode *params,
				 guint timeout_ms,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
JsonNode *
confab_mcp_jsonrpc_request_finish(ConfabMcpJsonrpc *self, GAsyncResult *result, GError **error);
void
confab_mcp_jsonrpc_notify_async(ConfabMcpJsonrpc *self,
				const gchar *method,
				JsonNode *params,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
gboolean
confab_mcp_jsonrpc_notify_finish(ConfabMcpJsonrpc *self, GAsyncResult *result, GError **error);

void
confab_mcp_jsonrpc_close(ConfabMcpJsonrpc *self);
gboolean
confab_mcp_jsonrpc_is_closed(ConfabMcpJsonrpc *self);
guint
confab_mcp_jsonrpc_get_n_pending(ConfabMcpJsonrpc *self);
guint
confab_mcp_jsonrpc_get_n_malformed(ConfabMcpJsonrpc *self);
guint
confab_mcp_jsonrpc_get_n_dropped(ConfabMcpJsonrpc *self);

G_END_DECLS
