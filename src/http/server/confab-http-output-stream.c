/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttpOutputStream"

#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "confab-http-output-stream.h"

/*
 * The output side of a client connection, as libsoup's server sees it.
 * libsoup writes a response's head and its body in two writes; on loopback
 * and on any real network each send is a segment pushed, delivered and a
 * reader woken. A head that announces a body of known length is sent with
 * MSG_MORE, so that the kernel sends it with the body that libsoup writes
 * right after, in the same call of its I/O loop: one segment, one wake-up.
 * Heads of streamed (chunked) answers, and of answers without a body, go
 * out at once: nothing is held back waiting for data that may come later.
 *
 * A streamed answer's chunks are written by libsoup in three writes each
 * (the size line, the data, the CRLF), one right after the other: the
 * first two go with MSG_MORE, so each chunk is sent as one segment the
 * moment its CRLF is written. Chunks are not batched: every chunk still
 * leaves in the same call that wrote it.
 */

typedef enum {
	CHUNKS_NONE, /* not in a chunked body, or lost track: plain writes */
	CHUNKS_SIZE, /* a size line is next */
	CHUNKS_DATA, /* chunk data is next */
	CHUNKS_END,  /* the CRLF after the data */
	CHUNKS_LAST, /* the CRLF after the last chunk (no trailers) */
} ChunkState;

struct _ConfabHttpOutputStream {
	GFilterOutputStream parent_instance;
	GSocket *socket;       /* owned */
	gboolean head_request; /* the response being written has no body */
	ChunkState chunks;
	guint64 chunk_left; /* of the data of the current chunk */
};

static void
confab_http_output_stream_pollable_init(GPollableOutputStreamInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(ConfabHttpOutputStream,
			      confab_http_output_stream,
			      G_TYPE_FILTER_OUTPUT_STREAM,
			      G_IMPLEMENT_INTERFACE(G_TYPE_POLLABLE_OUTPUT_STREAM,
						    confab_http_output_stream_pollable_init))

static GPollableOutputStream *
base_of(ConfabHttpOutputStream *self)
{
	return G_POLLABLE_OUTPUT_STREAM(
	    g_filter_output_stream_get_base_stream(G_FILTER_OUTPUT_STREAM(self)));
}

/* A whole response head, as libsoup writes it: in one write. */
static gboolean
is_whole_head(const gchar *data, gsize len)
{
	return len >= 16 && memcmp(data, "HTTP/1.", 7) == 0 &&
	       memcmp(data + len - 4, "\r\n\r\n", 4) == 0;
}

/**
 * confab_http_output_stream_is_head_with_body:
 * @data: what libsoup writes
 * @len: its length
 *
 * Returns: whether @data is a whole response head announcing a body of a
 *   known, non-zero length
 */
gboolean
confab_http_output_stream_is_head_with_body(const gchar *data, gsize len)
{
	static const gchar field[] = "\r\nContent-Length: ";
	const gchar *at;
	const gchar *end = data + len;

	if (!is_whole_head(data, len))
		return FALSE;
	/* 1xx, 204 and 304 have no body whatever they say */
	if (data[9] == '1' || memcmp(data + 9, "204", 3) == 0 || memcmp(data + 9, "304", 3) == 0)
		return FALSE;
	at = g_strstr_len(data, (gssize)len, field);
	if (at == NULL)
		return FALSE;
	at += sizeof field - 1;
	return at < end && *at >= '1' && *at <= '9';
}

static gboolean
is_chunked_head(const gchar *data, gsize len)
{
	return is_whole_head(data, len) &&
	       g_strstr_len(data, (gssize)len, "\r\nTransfer-Encoding: chunked\r\n") != NULL;
}

/* "1a2b\r\n": a chunk-size line as libsoup writes them */
static gboolean
parse_size_line(const gchar *data, gsize len, guint64 *size)
{
	guint64 value = 0;

	if (len < 3 || len > 18 || data[len - 2] != '\r' || data[len - 1] != '\n')
		return FALSE;
	for (gsize i = 0; i < len - 2; i++) {
		if (!g_ascii_isxdigit(data[i]))
			return FALSE;
		value = (value << 4) | (guint64)g_ascii_xdigit_value(data[i]);
	}
	*size = value;
	return TRUE;
}

/* Whether this write is followed at once by another that completes it;
 * follows the chunks of a streamed body. */
static gboolean
write_has_more(ConfabHttpOutputStream *self, const gchar *data, gsize count, ChunkState *kind)
{
	guint64 size = 0;

	*kind = self->chunks;
	if (is_whole_head(data, count)) {
		self->chunks = CHUNKS_NONE;
		if (self->head_request)
			return FALSE;
		if (is_chunked_head(data, count)) {
			self->chunks = CHUNKS_SIZE;
			return FALSE; /* the first chunk may be a while */
		}
		return confab_http_output_stream_is_head_with_body(data, count);
	}
	switch (self->chunks) {
	case CHUNKS_SIZE:
		if (!parse_size_line(data, count, &size)) {
			self->chunks = CHUNKS_NONE;
			return FALSE;
		}
		self->chunk_left = size;
		self->chunks = size > 0 ? CHUNKS_DATA : CHUNKS_LAST;
		return TRUE;
	case CHUNKS_DATA:
		if (count > self->chunk_left) {
			self->chunks = CHUNKS_NONE;
			return FALSE;
		}
		return TRUE;
	case CHUNKS_END:
	case CHUNKS_LAST:
	case CHUNKS_NONE:
	default:
		return FALSE;
	}
}

/* After @sent bytes of a write of @kind went out. */
static void
wrote(ConfabHttpOutputStream *self, ChunkState kind, const gchar *data, gsize count, gsize sent)
{
	if (self->chunks == CHUNKS_NONE)
		return;
	switch (kind) {
	case CHUNKS_SIZE:
		if (sent < count)
			self->chunks = CHUNKS_NONE; /* a partial line: stop guessing */
		break;
	case CHUNKS_DATA:
		self->chunk_left -= MIN(sent, self->chunk_left);
		if (self->chunk_left == 0)
			self->chunks = CHUNKS_END;
		break;
	case CHUNKS_END:
	case CHUNKS_LAST:
		if (sent == count && count == 2 && data[0] == '\r' && data[1] == '\n')
			self->chunks = self->chunks == CHUNKS_END ? CHUNKS_SIZE : CHUNKS_NONE;
		else
			self->chunks = CHUNKS_NONE;
		break;
	case CHUNKS_NONE:
	default:
		/* the head of a chunked answer */
		if (sent < count)
			self->chunks = CHUNKS_NONE;
		break;
	}
}

static gssize
confab_http_output_stream_write_nonblocking(GPollableOutputStream *stream,
					    const void *buffer,
					    gsize count,
					    GError **error)
{
	ConfabHttpOutputStream *self = CONFAB_HTTP_OUTPUT_STREAM(stream);
	GOutputVector vector = {buffer, count};
	gsize sent = 0;
	GPollableReturn ret;
	ChunkState kind;

	if (!write_has_more(self, buffer, count, &kind)) {
		gssize n = g_pollable_output_stream_write_nonblocking(base_of(self),
								      buffer,
								      count,
								      NULL,
								      error);
		if (n >= 0)
			wrote(self, kind, buffer, count, (gsize)n);
		return n;
	}
	ret = g_socket_send_message_with_timeout(self->socket,
						 NULL,
						 &vector,
						 1,
						 NULL,
						 0,
						 MSG_MORE,
						 0,
						 &sent,
						 NULL,
						 error);
	if (ret == G_POLLABLE_RETURN_OK) {
		wrote(self, kind, buffer, count, sent);
		return (gssize)sent;
	}
	if (ret == G_POLLABLE_RETURN_WOULD_BLOCK)
		g_set_error_literal(error,
				    G_IO_ERROR,
				    G_IO_ERROR_WOULD_BLOCK,
				    "Operation would block");
	return -1;
}

/**
 * confab_http_output_stream_set_head_request:
 * @self: a #ConfabHttpOutputStream
 * @head_request: the request being answered is HEAD
 *
 * A HEAD response announces the length of a body that never follows.
 */
void
confab_http_output_stream_set_head_request(ConfabHttpOutputStream *self, gboolean head_request)
{
	g_return_if_fail(CONFAB_IS_HTTP_OUTPUT_STREAM(self));
	self->head_request = head_request;
}

static gboolean
confab_http_output_stream_is_writable(GPollableOutputStream *stream)
{
	return g_pollable_output_stream_is_writable(base_of(CONFAB_HTTP_OUTPUT_STREAM(stream)));
}

static gboolean
confab_http_output_stream_can_poll(GPollableOutputStream *stream)
{
	return g_pollable_output_stream_can_poll(base_of(CONFAB_HTTP_OUTPUT_STREAM(stream)));
}

static GSource *
confab_http_output_stream_create_source(GPollableOutputStream *stream, GCancellable *cancellable)
{
	ConfabHttpOutputStream *self = CONFAB_HTTP_OUTPUT_STREAM(stream);
	g_autoptr(GSource) base_source =
	    g_pollable_output_stream_create_source(base_of(self), cancellable);
	GSource *source = g_pollable_source_new(G_OBJECT(stream));

	g_source_set_dummy_callback(base_source);
	g_source_add_child_source(source, base_source);
	return source;
}

static void
confab_http_output_stream_pollable_init(GPollableOutputStreamInterface *iface)
{
	iface->can_poll = confab_http_output_stream_can_poll;
	iface->is_writable = confab_http_output_stream_is_writable;
	iface->create_source = confab_http_output_stream_create_source;
	iface->write_nonblocking = confab_http_output_stream_write_nonblocking;
}

static void
confab_http_output_stream_finalize(GObject *object)
{
	ConfabHttpOutputStream *self = CONFAB_HTTP_OUTPUT_STREAM(object);
	g_clear_object(&self->socket);
	G_OBJECT_CLASS(confab_http_output_stream_parent_class)->finalize(object);
}

static void
confab_http_output_stream_class_init(ConfabHttpOutputStreamClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_http_output_stream_finalize;
}

static void
confab_http_output_stream_init(ConfabHttpOutputStream *self)
{
}

/**
 * confab_http_output_stream_new:
 * @base: a pollable output stream: a connection's
 * @socket: the connection's socket
 *
 * Returns: (transfer full): the stream to give libsoup; closing it leaves
 *   @base open (the connection closes both)
 */
GOutputStream *
confab_http_output_stream_new(GOutputStream *base, GSocket *socket)
{
	ConfabHttpOutputStream *self = g_object_new(CONFAB_TYPE_HTTP_OUTPUT_STREAM,
						    "base-stream",
						    base,
						    "close-base-stream",
						    FALSE,
						    NULL);
	self->socket = g_object_ref(socket);
	return G_OUTPUT_STREAM(self);
}
