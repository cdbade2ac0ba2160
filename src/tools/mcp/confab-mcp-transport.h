/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define CONFAB_TYPE_MCP_TRANSPORT (confab_mcp_transport_get_type())
G_DECLARE_INTERFACE(ConfabMcpTransport, confab_mcp_transport, CONFAB, MCP_TRANSPORT, GObject)

/**
 * ConfabMcpTransportFlags:
 * @CONFAB_MCP_TRANSPORT_FLAGS_NONE: no flags
 * @CONFAB_MCP_TRANSPORT_FLAGS_ANSWER_IN_SEND: the answer to a request arrives
 *   before its send completes (streamable HTTP: in the POST's response), so a
 *   request still unanswered when its send completed will never be answered
 */
typedef enum {
	CONFAB_MCP_TRANSPORT_FLAGS_NONE = 0,
	CONFAB_MCP_TRANSPORT_FLAGS_ANSWER_IN_SEND = 1 << 0,
} ConfabMcpTransportFlags;

/**
 * ConfabMcpTransportInterface:
 * @start_async: connects (stdio: spawns the server)
 * @start_finish: its result
 * @send_async: sends one JSON-RPC message (one line of compact JSON, without
 *   its newline); completes once it is out (stdio) or its exchange ended
 *   (HTTP). @cancellable may abandon the exchange.
 * @send_finish: its result; G_IO_ERROR_NOT_CONNECTED means the session
 *   expired and a new initialize is needed
 * @session_ready: initialize succeeded with this protocol version (HTTP:
 *   the MCP-Protocol-Version header from now on)
 * @close: stops (stdio: SIGTERM, SIGKILL later); emits #ConfabMcpTransport::closed
 * @get_flags: what the transport guarantees
 * @set_max_message_size: the largest message it takes in
 *
 * How MCP messages travel. Implementations emit
 * #ConfabMcpTransport::message for every message that arrives,
 * #ConfabMcpTransport::dropped for one too large to take, and
 * #ConfabMcpTransport::closed once, through the helpers below.
 */
struct _ConfabMcpTransportInterface {
	GTypeInterface parent_iface;

	void (*start_async)(ConfabMcpTransport *self,
			    GCancellable *cancellable,
			    GAsyncReadyCallback callback,
			    gpointer user_data);
	gboolean (*start_finish)(ConfabMcpTransport *self, GAsyncResult *result, GError **error);
	void (*send_async)(ConfabMcpTransport *self,
			   GBytes *message,
			   GCancellable *cancellable,
			   GAsyncReadyCallback callback,
			   gpointer user_data);
	gboolean (*send_finish)(ConfabMcpTransport *self, GAsyncResult *result, GError **error);
	void (*session_ready)(ConfabMcpTransport *self, const gchar *protocol_version);
	void (*close)(ConfabMcpTransport *self);
	ConfabMcpTransportFlags (*get_flags)(ConfabMcpTransport *self);
	void (*set_max_message_size)(ConfabMcpTransport *self, gsize max_bytes);
};

void
confab_mcp_transport_start_async(ConfabMcpTransport *self,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
gboolean
confab_mcp_transport_start_finish(ConfabMcpTransport *self, GAsyncResult *result, GError **error);
void
confab_mcp_transport_send_async(ConfabMcpTransport *self,
				GBytes *message,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
gboolean
confab_mcp_transport_send_finish(ConfabMcpTransport *self, GAsyncResult *result, GError **error);
void
confab_mcp_transport_session_ready(ConfabMcpTransport *self, const gchar *protocol_version);
void
confab_mcp_transport_close(ConfabMcpTransport *self);
ConfabMcpTransportFlags
confab_mcp_transport_get_flags(ConfabMcpTransport *self);
void
confab_mcp_transport_set_max_message_size(ConfabMcpTransport *self, gsize max_bytes);
gboolean
confab_mcp_transport_is_closed(ConfabMcpTransport *self);

/* for implementations */
void
confab_mcp_transport_emit_message(ConfabMcpTransport *self,
				  const gchar *data,
				  gsize len,
				  const gchar *answering);
void
confab_mcp_transport_emit_dropped(ConfabMcpTransport *self,
				  const gchar *head,
				  gsize head_len,
				  const gchar *tail,
				  gsize tail_len,
				  guint64 size);
void
confab_mcp_transport_emit_closed(ConfabMcpTransport *self, const GError *error);

G_END_DECLS
