/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "confab-http-input-stream.h"

/**
 * ConfabHttpInputStream:
 *
 * The reading side of a client connection, as libsoup's server reads it.
 *
 * libsoup 3.2 does not notice a client that closes a kept-alive connection
 * between two requests: the end of the stream before the first byte of a
 * request head fails a message that nobody completes, and the connection
 * stays open forever (CLOSE-WAIT), with its file descriptor; the same for a
 * connection reset there. This stream turns that end of stream, or that
 * reset, into one empty line: libsoup then starts a
 * request, finds its head malformed, and closes the connection the way it
 * closes any other. Only between requests — never inside a head or a body.
 */

struct _ConfabHttpInputStream {
	GFilterInputStream parent_instance;
	gboolean between_requests;
	gboolean said_goodbye;
	gboolean reading_head;
	gsize head_bytes;	    /* read since the last request ended */
	gsize head_limit;	    /* 0: none */
	GOutputStream *refusal_out; /* unowned: where 431 goes */
};

static void
confab_http_input_stream_pollable_init(GPollableInputStreamInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(ConfabHttpInputStream,
			      confab_http_input_stream,
			      G_TYPE_FILTER_INPUT_STREAM,
			      G_IMPLEMENT_INTERFACE(G_TYPE_POLLABLE_INPUT_STREAM,
						    confab_http_input_stream_pollable_init))

static GPollableInputStream *
base_of(ConfabHttpInputStream *self)
{
	return G_POLLABLE_INPUT_STREAM(
	    g_filter_input_stream_get_base_stream(G_FILTER_INPUT_STREAM(self)));
}

/* What a read of the base stream gave, seen by this stream's reader: the
 * end of the stream, or a reset, between requests reads as one line. */
/* A request head past the limit: a best-effort 431, then an error that
 * makes libsoup drop the connection. */
static gssize
refuse_head(ConfabHttpInputStream *self, GError **error)
{
	static const gchar body[] =
	    "{\"error\":{\"message\":\"The request head is too large\",\"type\":"
	    "\"invalid_request_error\",\"param\":null,\"code\":\"request_header_too_large\"}}";
	g_autofree gchar *raw = g_strdup_printf("HTTP/1.1 431 Request Header Fields Too Large\r\n"
						"Content-Type: application/json\r\n"
						"Connection: close\r\n"
						"Content-Length: %zu\r\n\r\n%s",
						strlen(body),
						body);

	if (self->refusal_out != NULL && G_IS_POLLABLE_OUTPUT_STREAM(self->refusal_out))
		(void)g_pollable_output_stream_write_nonblocking(
		    G_POLLABLE_OUTPUT_STREAM(self->refusal_out),
		    raw,
		    strlen(raw),
		    NULL,
		    NULL);
	g_set_error(error,
		    G_IO_ERROR,
		    G_IO_ERROR_MESSAGE_TOO_LARGE,
		    "request head larger than %" G_GSIZE_FORMAT " bytes",
		    self->head_limit);
	return -1;
}

static gssize
filter(ConfabHttpInputStream *self, void *buffer, gsize count, gssize nread, GError **error)
{
	if (nread > 0 && self->reading_head && self->head_limit > 0) {
		self->head_bytes += nread;
		if (self->head_bytes > self->head_limit)
			return refuse_head(self, error);
	}
	if (nread > 0 || count == 0 || !self->between_requests || self->said_goodbye)
		return nread;
	if (nread < 0 && g_error_matches(*error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
		return nread;
	g_clear_error(error);
	self->said_goodbye = TRUE;
	((gchar *)buffer)[0] = '\n';
	return 1;
}

/* filter(), taking the read's own error, and passing on what remains */
static gssize
filter_read(ConfabHttpInputStream *self,
	    void *buffer,
	    gsize count,
	    gssize nread,
	    GError *read_error,
	    GError **error)
{
	g_autoptr(GError) local_error = read_error;
	nread = filter(self, buffer, count, nread, &local_error);
	if (local_error != NULL)
		g_propagate_error(error, g_steal_pointer(&local_error));
	return nread;
}

static gssize
confab_http_input_stream_read(GInputStream *stream,
			      void *buffer,
			      gsize count,
			      GCancellable *cancellable,
			      GError **error)
{
	ConfabHttpInputStream *self = CONFAB_HTTP_INPUT_STREAM(stream);
	GError *read_error = NULL;
	gssize nread = g_input_stream_read(G_INPUT_STREAM(base_of(self)),
					   buffer,
					   count,
					   cancellable,
					   &read_error);
	return filter_read(self, buffer, count, nread, read_error, error);
}

static gboolean
confab_http_input_stream_is_readable(GPollableInputStream *stream)
{
	return g_pollable_input_stream_is_readable(base_of(CONFAB_HTTP_INPUT_STREAM(stream)));
}

static GSource *
confab_http_input_stream_create_source(GPollableInputStream *stream, GCancellable *cancellable)
{
	ConfabHttpInputStream *self = CONFAB_HTTP_INPUT_STREAM(stream);
	g_autoptr(GSource) base_source =
	    g_pollable_input_stream_create_source(base_of(self), cancellable);
	GSource *source = g_pollable_source_new(G_OBJECT(stream));

	g_source_set_dummy_callback(base_source);
	g_source_add_child_source(source, base_source);
	return source;
}

static gssize
confab_http_input_stream_read_nonblocking(GPollableInputStream *stream,
					  void *buffer,
					  gsize count,
					  GError **error)
{
	ConfabHttpInputStream *self = CONFAB_HTTP_INPUT_STREAM(stream);
	GError *read_error = NULL;
	gssize nread = g_pollable_input_stream_read_nonblocking(base_of(self),
								buffer,
								count,
								NULL,
								&read_error);
	return filter_read(self, buffer, count, nread, read_error, error);
}

static gboolean
confab_http_input_stream_can_poll(GPollableInputStream *stream)
{
	return g_pollable_input_stream_can_poll(base_of(CONFAB_HTTP_INPUT_STREAM(stream)));
}

static void
confab_http_input_stream_pollable_init(GPollableInputStreamInterface *iface)
{
	iface->can_poll = confab_http_input_stream_can_poll;
	iface->is_readable = confab_http_input_stream_is_readable;
	iface->create_source = confab_http_input_stream_create_source;
	iface->read_nonblocking = confab_http_input_stream_read_nonblocking;
}

static void
confab_http_input_stream_class_init(ConfabHttpInputStreamClass *klass)
{
	GInputStreamClass *stream_class = G_INPUT_STREAM_CLASS(klass);
	stream_class->read_fn = confab_http_input_stream_read;
}

static void
confab_http_input_stream_init(ConfabHttpInputStream *self)
{
}

/**
 * confab_http_input_stream_new:
 * @base: a pollable input stream: a connection's
 *
 * Returns: (transfer full): the stream to give libsoup
 */
GInputStream *
confab_http_input_stream_new(GInputStream *base)
{
	g_return_val_if_fail(G_IS_POLLABLE_INPUT_STREAM(base), NULL);
	return g_object_new(CONFAB_TYPE_HTTP_INPUT_STREAM,
			    "base-stream",
			    base,
			    "close-base-stream",
			    FALSE,
			    NULL);
}

/**
 * confab_http_input_stream_set_head_limit:
 * @self: a #ConfabHttpInputStream
 * @limit: the most bytes a request head may take, 0 for no limit
 * @refusal_out: (nullable): where to write the 431 that refuses a longer one
 */
void
confab_http_input_stream_set_head_limit(ConfabHttpInputStream *self,
					gsize limit,
					GOutputStream *refusal_out)
{
	g_return_if_fail(CONFAB_IS_HTTP_INPUT_STREAM(self));
	self->head_limit = limit;
	self->refusal_out = refusal_out;
}

/**
 * confab_http_input_stream_set_reading_head:
 * @self: a #ConfabHttpInputStream
 * @reading_head: %TRUE from the end of a request (or the connection's
 *   start) until the next request's head is in
 *
 * What is read meanwhile counts against the head limit; the count starts
 * again at each request.
 */
void
confab_http_input_stream_set_reading_head(ConfabHttpInputStream *self, gboolean reading_head)
{
	g_return_if_fail(CONFAB_IS_HTTP_INPUT_STREAM(self));
	if (reading_head && !self->reading_head)
		self->head_bytes = 0;
	self->reading_head = reading_head;
}

/**
 * confab_http_input_stream_set_between_requests:
 * @self: a #ConfabHttpInputStream
 * @between_requests: %TRUE once a response is done and no byte of the next
 *   request has come
 */
void
confab_http_input_stream_set_between_requests(ConfabHttpInputStream *self,
					      gboolean between_requests)
{
	g_return_if_fail(CONFAB_IS_HTTP_INPUT_STREAM(self));
	self->between_requests = between_requests;
}
