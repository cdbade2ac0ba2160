/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMcpTransport"

#include "config.h"

#include "tools/mcp/confab-mcp-transport.h"

/**
 * ConfabMcpTransport:
 *
 * The seam between the JSON-RPC layer of the MCP client and the way its
 * messages travel: a child's stdin/stdout (#ConfabMcpStdio) or streamable
 * HTTP (#ConfabMcpHttp). Everything happens in the thread-default main
 * context of the transport's creator.
 */

G_DEFINE_INTERFACE(ConfabMcpTransport, confab_mcp_transport, G_TYPE_OBJECT)

enum {
	SIGNAL_MESSAGE,
	SIGNAL_DROPPED,
	SIGNAL_CLOSED,
	N_SIGNALS,
};

static guint signals[N_SIGNALS];

static void
confab_mcp_transport_default_init(ConfabMcpTransportInterface *iface)
{
	/**
	 * ConfabMcpTransport::message:
	 * @self: the transport
	 * @message: one message as it arrived (not checked yet)
	 * @answering: (nullable): the id (as JSON text) of the request whose
	 *   answer's stream brought it (Streamable HTTP); %NULL when nothing
	 *   ties it to one (stdio, the standalone stream)
	 */
	signals[SIGNAL_MESSAGE] = g_signal_new("message",
					       G_TYPE_FROM_INTERFACE(iface),
					       G_SIGNAL_RUN_LAST,
					       0,
					       NULL,
					       NULL,
					       NULL,
					       G_TYPE_NONE,
					       2,
					       G_TYPE_BYTES,
					       G_TYPE_STRING);
	/**
	 * ConfabMcpTransport::dropped:
	 * @self: the transport
	 * @head: the first bytes of a message too large to take
	 * @tail: its last bytes
	 * @size: its size
	 *
	 * A message was larger than the maximum and was thrown away as it
	 * came, without being held; its ends may tell whose answer it was.
	 */
	signals[SIGNAL_DROPPED] = g_signal_new("dropped",
					       G_TYPE_FROM_INTERFACE(iface),
					       G_SIGNAL_RUN_LAST,
					       0,
					       NULL,
					       NULL,
					       NULL,
					       G_TYPE_NONE,
					       3,
					       G_TYPE_BYTES,
					       G_TYPE_BYTES,
					       G_TYPE_UINT64);
	/**
	 * ConfabMcpTransport::closed:
	 * @self: the transport
	 * @error: (nullable): why, or %NULL after confab_mcp_transport_close()
	 *
	 * Emitted once: nothing arrives any more and nothing can be sent.
	 */
	signals[SIGNAL_CLOSED] = g_signal_new("closed",
					      G_TYPE_FROM_INTERFACE(iface),
					      G_SIGNAL_RUN_LAST,
					      0,
					      NULL,
					      NULL,
					      NULL,
					      G_TYPE_NONE,
					      1,
					      G_TYPE_ERROR);
}

static GQuark
closed_quark(void)
{
	return g_quark_from_static_string("confab-mcp-transport-closed");
}

/**
 * confab_mcp_transport_start_async:
 * @self: a #ConfabMcpTransport
 * @cancellable: (nullable): a #GCancellable
 * @callback: called when it is up
 * @user_data: data for @callback
 */
void
confab_mcp_transport_start_async(ConfabMcpTransport *self,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_MCP_TRANSPORT(self));
	CONFAB_MCP_TRANSPORT_GET_IFACE(self)->start_async(self, cancellable, callback, user_data);
}

/**
 * confab_mcp_transport_start_finish:
 * @self: a #ConfabMcpTransport
 * @result: the result
 * @error: return location for a #GError
 *
 * Returns: %TRUE if it is up
 */
gboolean
confab_mcp_transport_start_finish(ConfabMcpTransport *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(CONFAB_IS_MCP_TRANSPORT(self), FALSE);
	return CONFAB_MCP_TRANSPORT_GET_IFACE(self)->start_finish(self, result, error);
}

/**
 * confab_mcp_transport_send_async:
 * @self: a #ConfabMcpTransport
 * @message: one JSON-RPC message, compact, without a newline
 * @cancellable: (nullable): abandons the exchange (HTTP)
 * @callback: called when it is sent (see #ConfabMcpTransportInterface)
 * @user_data: data for @callback
 */
void
confab_mcp_transport_send_async(ConfabMcpTransport *self,
				GBytes *message,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_MCP_TRANSPORT(self));
	g_return_if_fail(message != NULL);
	CONFAB_MCP_TRANSPORT_GET_IFACE(self)->send_async(self,
							 message,
							 cancellable,
							 callback,
							 user_data);
}

/**
 * confab_mcp_transport_send_finish:
 * @self: a #ConfabMcpTransport
 * @result: the result
 * @error: return location for a #GError
 *
 * Returns: %TRUE if the message went out
 */
gboolean
confab_mcp_transport_send_finish(ConfabMcpTransport *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(CONFAB_IS_MCP_TRANSPORT(self), FALSE);
	return CONFAB_MCP_TRANSPORT_GET_IFACE(self)->send_finish(self, result, error);
}

/**
 * confab_mcp_transport_session_ready:
 * @self: a #ConfabMcpTransport
 * @protocol_version: the version negotiated by initialize
 */
void
confab_mcp_transport_session_ready(ConfabMcpTransport *self, const gchar *protocol_version)
{
	ConfabMcpTransportInterface *iface;

	g_return_if_fail(CONFAB_IS_MCP_TRANSPORT(self));
	g_return_if_fail(protocol_version != NULL);
	iface = CONFAB_MCP_TRANSPORT_GET_IFACE(self);
	if (iface->session_ready != NULL)
		iface->session_ready(self, protocol_version);
}

/**
 * confab_mcp_transport_close:
 * @self: a #ConfabMcpTransport
 *
 * Stops the transport; #ConfabMcpTransport::closed is emitted if it was
 * not already. Safe to call more than once.
 */
void
confab_mcp_transport_close(ConfabMcpTransport *self)
{
	g_return_if_fail(CONFAB_IS_MCP_TRANSPORT(self));
	CONFAB_MCP_TRANSPORT_GET_IFACE(self)->close(self);
}

/**
 * confab_mcp_transport_get_flags:
 * @self: a #ConfabMcpTransport
 *
 * Returns: the transport's #ConfabMcpTransportFlags
 */
ConfabMcpTransportFlags
confab_mcp_transport_get_flags(ConfabMcpTransport *self)
{
	ConfabMcpTransportInterface *iface;

	g_return_val_if_fail(CONFAB_IS_MCP_TRANSPORT(self), CONFAB_MCP_TRANSPORT_FLAGS_NONE);
	iface = CONFAB_MCP_TRANSPORT_GET_IFACE(self);
	return iface->get_flags != NULL ? iface->get_flags(self) : CONFAB_MCP_TRANSPORT_FLAGS_NONE;
}

/**
 * confab_mcp_transport_set_max_message_size:
 * @self: a #ConfabMcpTransport
 * @max_bytes: the largest message taken in; larger ones are dropped
 */
void
confab_mcp_transport_set_max_message_size(ConfabMcpTransport *self, gsize max_bytes)
{
	ConfabMcpTransportInterface *iface;

	g_return_if_fail(CONFAB_IS_MCP_TRANSPORT(self));
	g_return_if_fail(max_bytes > 0);
	iface = CONFAB_MCP_TRANSPORT_GET_IFACE(self);
	if (iface->set_max_message_size != NULL)
		iface->set_max_message_size(self, max_bytes);
}

/**
 * confab_mcp_transport_is_closed:
 * @self: a #ConfabMcpTransport
 *
 * Returns: whether #ConfabMcpTransport::closed was emitted
 */
gboolean
confab_mcp_transport_is_closed(ConfabMcpTransport *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_TRANSPORT(self), TRUE);
	return g_object_get_qdata(G_OBJECT(self), closed_quark()) != NULL;
}

/**
 * confab_mcp_transport_emit_message:
 * @self: a #ConfabMcpTransport
 * @data: (array length=len): the message
 * @len: its length
 * @answering: (nullable): the id (JSON text) of the request whose answer's
 *   stream brought it, where the transport knows it
 *
 * For implementations: hands one arrived message on. Nothing is emitted
 * once the transport is closed.
 */
void
confab_mcp_transport_emit_message(ConfabMcpTransport *self,
				  const gchar *data,
				  gsize len,
				  const gchar *answering)
{
	g_autoptr(GBytes) bytes = NULL;

	g_return_if_fail(CONFAB_IS_MCP_TRANSPORT(self));
	if (confab_mcp_transport_is_closed(self))
		return;
	bytes = g_bytes_new(data, len);
	g_signal_emit(self, signals[SIGNAL_MESSAGE], 0, bytes, answering);
}

/**
 * confab_mcp_transport_emit_dropped:
 * @self: a #ConfabMcpTransport
 * @head: (array length=head_len): the first bytes of the dropped message
 * @head_len: their length
 * @tail: (array length=tail_len): its last bytes
 * @tail_len: their length
 * @size: the size of the whole message
 *
 * For implementations: a message too large was thrown away.
 */
void
confab_mcp_transport_emit_dropped(ConfabMcpTransport *self,
				  const gchar *head,
				  gsize head_len,
				  const gchar *tail,
				  gsize tail_len,
				  guint64 size)
{
	g_autoptr(GBytes) head_bytes = NULL;
	g_autoptr(GBytes) tail_bytes = NULL;

	g_return_if_fail(CONFAB_IS_MCP_TRANSPORT(self));
	if (confab_mcp_transport_is_closed(self))
		return;
	head_bytes = g_bytes_new(head, head_len);
	tail_bytes = g_bytes_new(tail, tail_len);
	g_signal_emit(self, signals[SIGNAL_DROPPED], 0, head_bytes, tail_bytes, size);
}

/**
 * confab_mcp_transport_emit_closed:
 * @self: a #ConfabMcpTransport
 * @error: (nullable): why
 *
 * For implementations: emits #ConfabMcpTransport::closed, the first time
 * only.
 */
void
confab_mcp_transport_emit_closed(ConfabMcpTransport *self, const GError *error)
{
	g_return_if_fail(CONFAB_IS_MCP_TRANSPORT(self));
	if (confab_mcp_transport_is_closed(self))
		return;
	g_object_set_qdata(G_OBJECT(self), closed_quark(), GINT_TO_POINTER(1));
	g_signal_emit(self, signals[SIGNAL_CLOSED], 0, error);
}
