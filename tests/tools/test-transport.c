/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "test-transport.h"

static void
test_transport_iface_init(ConfabMcpTransportInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(TestTransport,
			      test_transport,
			      G_TYPE_OBJECT,
			      G_IMPLEMENT_INTERFACE(CONFAB_TYPE_MCP_TRANSPORT,
						    test_transport_iface_init))

static void
tt_start_async(ConfabMcpTransport *transport,
	       GCancellable *cancellable,
	       GAsyncReadyCallback callback,
	       gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(transport, cancellable, callback, user_data);
	g_task_return_boolean(task, TRUE);
}

static gboolean
tt_finish(ConfabMcpTransport *transport, GAsyncResult *result, GError **error)
{
	return g_task_propagate_boolean(G_TASK(result), error);
}

static void
tt_send_async(ConfabMcpTransport *transport,
	      GBytes *message,
	      GCancellable *cancellable,
	      GAsyncReadyCallback callback,
	      gpointer user_data)
{
	TestTransport *self = TEST_TRANSPORT(transport);
	g_autoptr(GTask) task = g_task_new(transport, NULL, callback, user_data);
	gsize len;
	const gchar *data = g_bytes_get_data(message, &len);

	g_ptr_array_add(self->sent, g_strndup(data, len));
	if (self->send_error != NULL)
		g_task_return_error(task, g_error_copy(self->send_error));
	else
		g_task_return_boolean(task, TRUE);
}

static void
tt_close(ConfabMcpTransport *transport)
{
	confab_mcp_transport_emit_closed(transport, NULL);
}

static ConfabMcpTransportFlags
tt_get_flags(ConfabMcpTransport *transport)
{
	return TEST_TRANSPORT(transport)->flags;
}

static void
tt_set_max_message_size(ConfabMcpTransport *transport, gsize max_bytes)
{
	TEST_TRANSPORT(transport)->max_message_size = max_bytes;
}

static void
test_transport_iface_init(ConfabMcpTransportInterface *iface)
{
	iface->start_async = tt_start_async;
	iface->start_finish = tt_finish;
	iface->send_async = tt_send_async;
	iface->send_finish = tt_finish;
	iface->close = tt_close;
	iface->get_flags = tt_get_flags;
	iface->set_max_message_size = tt_set_max_message_size;
}

static void
test_transport_finalize(GObject *object)
{
	TestTransport *self = TEST_TRANSPORT(object);
	g_ptr_array_unref(self->sent);
	g_clear_error(&self->send_error);
	G_OBJECT_CLASS(test_transport_parent_class)->finalize(object);
}

static void
test_transport_class_init(TestTransportClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = test_transport_finalize;
}

static void
test_transport_init(TestTransport *self)
{
	self->sent = g_ptr_array_new_with_free_func(g_free);
}
