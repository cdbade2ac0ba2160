/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "confab-http-connection.h"
#include "confab-http-input-stream.h"
#include "confab-http-output-stream.h"

/**
 * ConfabHttpConnection:
 *
 * A client's connection as Confab hands it to libsoup: the accepted socket
 * connection, read through a #ConfabHttpInputStream so that a client that
 * leaves between two requests is noticed.
 */

struct _ConfabHttpConnection {
	GIOStream parent_instance;
	GSocketConnection *base; /* owned */
	GInputStream *input;	 /* owned */
	GOutputStream *output;	 /* owned */
};

G_DEFINE_FINAL_TYPE(ConfabHttpConnection, confab_http_connection, G_TYPE_IO_STREAM)

static GInputStream *
confab_http_connection_get_input_stream(GIOStream *stream)
{
	return CONFAB_HTTP_CONNECTION(stream)->input;
}

static GOutputStream *
confab_http_connection_get_output_stream(GIOStream *stream)
{
	return CONFAB_HTTP_CONNECTION(stream)->output;
}

static gboolean
confab_http_connection_close(GIOStream *stream, GCancellable *cancellable, GError **error)
{
	ConfabHttpConnection *self = CONFAB_HTTP_CONNECTION(stream);
	return g_io_stream_close(G_IO_STREAM(self->base), cancellable, error);
}

static void
confab_http_connection_dispose(GObject *object)
{
	ConfabHttpConnection *self = CONFAB_HTTP_CONNECTION(object);
	/* GIOStream closes itself on dispose, through the base */
	G_OBJECT_CLASS(confab_http_connection_parent_class)->dispose(object);
	g_clear_object(&self->input);
	g_clear_object(&self->output);
	g_clear_object(&self->base);
}

static void
confab_http_connection_class_init(ConfabHttpConnectionClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	GIOStreamClass *stream_class = G_IO_STREAM_CLASS(klass);

	object_class->dispose = confab_http_connection_dispose;
	stream_class->get_input_stream = confab_http_connection_get_input_stream;
	stream_class->get_output_stream = confab_http_connection_get_output_stream;
	stream_class->close_fn = confab_http_connection_close;
}

static void
confab_http_connection_init(ConfabHttpConnection *self)
{
}

/**
 * confab_http_connection_new:
 * @base: an accepted connection
 * @max_head_bytes: the largest request head accepted (431 beyond)
 *
 * Returns: (transfer full): the stream to hand libsoup
 */
ConfabHttpConnection *
confab_http_connection_new(GSocketConnection *base, gsize max_head_bytes)
{
	ConfabHttpConnection *self = g_object_new(CONFAB_TYPE_HTTP_CONNECTION, NULL);
	self->base = g_object_ref(base);
	self->input = confab_http_input_stream_new(g_io_stream_get_input_stream(G_IO_STREAM(base)));
	confab_http_input_stream_set_head_limit(CONFAB_HTTP_INPUT_STREAM(self->input),
						max_head_bytes,
						g_io_stream_get_output_stream(G_IO_STREAM(base)));
	confab_http_input_stream_set_reading_head(CONFAB_HTTP_INPUT_STREAM(self->input), TRUE);
	self->output =
	    confab_http_output_stream_new(g_io_stream_get_output_stream(G_IO_STREAM(base)),
					  g_socket_connection_get_socket(base));
	return self;
}

/**
 * confab_http_connection_get_socket:
 *
 * Returns: (transfer none): the socket
 */
GSocket *
confab_http_connection_get_socket(ConfabHttpConnection *self)
{
	return g_socket_connection_get_socket(self->base);
}

/**
 * confab_http_connection_set_reading_head:
 * @self: a #ConfabHttpConnection
 * @reading_head: whether the next request's head is not in yet
 */
void
confab_http_connection_set_reading_head(ConfabHttpConnection *self, gboolean reading_head)
{
	confab_http_input_stream_set_reading_head(CONFAB_HTTP_INPUT_STREAM(self->input),
						  reading_head);
}

/**
 * confab_http_connection_set_between_requests:
 * @self: a #ConfabHttpConnection
 * @between_requests: whether a response is done and the next request has
 *   not begun
 */
void
confab_http_connection_set_head_request(ConfabHttpConnection *self, gboolean head_request)
{
	confab_http_output_stream_set_head_request(CONFAB_HTTP_OUTPUT_STREAM(self->output),
						   head_request);
}

void
confab_http_connection_set_between_requests(ConfabHttpConnection *self, gboolean between_requests)
{
	confab_http_input_stream_set_between_requests(CONFAB_HTTP_INPUT_STREAM(self->input),
						      between_requests);
}
