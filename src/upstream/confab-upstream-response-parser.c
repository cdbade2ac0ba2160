/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabUpstreamResponseParser"

#include "config.h"

#include <gio/gio.h>
#include <string.h>

#include "confab-upstream-response-parser.h"

/*
 * An incremental HTTP/1.x response parser for the upstream client: fed
 * whatever the socket gave, split anywhere, it hands out the head once and
 * the decoded body piece by piece, without copying the body. The head's
 * lines are parsed by libsoup's soup_headers_parse_response(); the framing
 * (Content-Length, chunked, until the connection closes, no body for
 * 1xx/204/304) and every size limit are this file's.
 */

#define HEAD_MAX       (64 * 1024) /* status line and headers */
#define CHUNK_LINE_MAX 4096	   /* a chunk-size line */
#define TRAILER_MAX    (64 * 1024)

typedef enum {
	STATE_HEAD,
	STATE_BODY_LENGTH,
	STATE_BODY_EOF,
	STATE_CHUNK_SIZE,
	STATE_CHUNK_DATA,
	STATE_CHUNK_END,
	STATE_TRAILER,
	STATE_DONE,
} State;

struct _ConfabUpstreamResponseParser {
	GObject parent_instance;
	ConfabUpstreamResponseHeadFunc head_func;
	ConfabUpstreamResponseBodyFunc body_func;
	gpointer user_data;
	State state;
	GString *head;	  /* the head so far */
	gsize line_start; /* in head: where the current line starts */
	GString *line;	  /* a chunk-size, chunk-end or trailer line so far */
	gsize trailer_len;
	guint64 remaining; /* of the body or of the chunk */
	gboolean head_request;
	gboolean keep_alive;
	gboolean started; /* a byte of the response arrived */
	gboolean stopped;
};

G_DEFINE_FINAL_TYPE(ConfabUpstreamResponseParser, confab_upstream_response_parser, G_TYPE_OBJECT)

static void
confab_upstream_response_parser_finalize(GObject *object)
{
	ConfabUpstreamResponseParser *self = CONFAB_UPSTREAM_RESPONSE_PARSER(object);
	g_string_free(self->head, TRUE);
	g_string_free(self->line, TRUE);
	G_OBJECT_CLASS(confab_upstream_response_parser_parent_class)->finalize(object);
}

static void
confab_upstream_response_parser_class_init(ConfabUpstreamResponseParserClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_upstream_response_parser_finalize;
}

static void
confab_upstream_response_parser_init(ConfabUpstreamResponseParser *self)
{
	self->head = g_string_sized_new(512);
	self->line = g_string_new(NULL);
}

/**
 * confab_upstream_response_parser_new:
 * @head_func: receives the head of the final response
 * @body_func: receives the decoded body, piece by piece
 * @user_data: data for both
 *
 * Returns: (transfer full): a parser waiting for a response
 */
ConfabUpstreamResponseParser *
confab_upstream_response_parser_new(ConfabUpstreamResponseHeadFunc head_func,
				    ConfabUpstreamResponseBodyFunc body_func,
				    gpointer user_data)
{
	ConfabUpstreamResponseParser *self =
	    g_object_new(CONFAB_TYPE_UPSTREAM_RESPONSE_PARSER, NULL);
	self->head_func = head_func;
	self->body_func = body_func;
	self->user_data = user_data;
	return self;
}

/**
 * confab_upstream_response_parser_reset:
 * @self: a #ConfabUpstreamResponseParser
 * @head_request: the request was HEAD: the response has no body
 *
 * Makes the parser wait for the next response on the connection.
 */
void
confab_upstream_response_parser_reset(ConfabUpstreamResponseParser *self, gboolean head_request)
{
	g_return_if_fail(CONFAB_IS_UPSTREAM_RESPONSE_PARSER(self));
	self->state = STATE_HEAD;
	g_string_truncate(self->head, 0);
	g_string_truncate(self->line, 0);
	self->line_start = 0;
	self->trailer_len = 0;
	self->remaining = 0;
	self->head_request = head_request;
	self->keep_alive = FALSE;
	self->started = FALSE;
	self->stopped = FALSE;
}

/**
 * confab_upstream_response_parser_stop:
 * @self: a #ConfabUpstreamResponseParser
 *
 * Called from a callback: confab_upstream_response_parser_feed() returns
 * %CONFAB_UPSTREAM_PARSE_STOPPED as soon as the callback returns.
 */
void
confab_upstream_response_parser_stop(ConfabUpstreamResponseParser *self)
{
	g_return_if_fail(CONFAB_IS_UPSTREAM_RESPONSE_PARSER(self));
	self->stopped = TRUE;
}

/**
 * confab_upstream_response_parser_started:
 * @self: a #ConfabUpstreamResponseParser
 *
 * Returns: whether any byte of the response has arrived
 */
gboolean
confab_upstream_response_parser_started(ConfabUpstreamResponseParser *self)
{
	g_return_val_if_fail(CONFAB_IS_UPSTREAM_RESPONSE_PARSER(self), FALSE);
	return self->started;
}

/**
 * confab_upstream_response_parser_keep_alive:
 * @self: a #ConfabUpstreamResponseParser
 *
 * Returns: whether the connection may carry another request once this
 *   response is complete
 */
gboolean
confab_upstream_response_parser_keep_alive(ConfabUpstreamResponseParser *self)
{
	g_return_val_if_fail(CONFAB_IS_UPSTREAM_RESPONSE_PARSER(self), FALSE);
	return self->keep_alive && self->state == STATE_DONE;
}

static void
set_invalid(GError **error, const gchar *what)
{
	g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "Invalid HTTP response: %s", what);
}

/* The head is complete (its blank line excluded from head->str). */
static gboolean
head_done(ConfabUpstreamResponseParser *self, GError **error)
{
	g_autoptr(SoupMessageHeaders) headers =
	    soup_message_headers_new(SOUP_MESSAGE_HEADERS_RESPONSE);
	g_autofree gchar *reason = NULL;
	SoupHTTPVersion version;
	guint status;

	if (!soup_headers_parse_response(self->head->str,
					 (gint)self->head->len,
					 headers,
					 &version,
					 &status,
					 &reason)) {
		set_invalid(error, "malformed status line or headers");
		return FALSE;
	}
	if (status >= 100 && status < 200) {
		if (status == 101) {
			set_invalid(error, "unexpected protocol switch");
			return FALSE;
		}
		/* an interim response: the final one follows */
		g_string_truncate(self->head, 0);
		self->line_start = 0;
		return TRUE;
	}
	if (status < 200 || status > 999) {
		set_invalid(error, "status code out of range");
		return FALSE;
	}

	if (version >= SOUP_HTTP_1_1)
		self->keep_alive =
		    !soup_message_headers_header_contains(headers, "Connection", "close");
	else
		self->keep_alive =
		    soup_message_headers_header_contains(headers, "Connection", "keep-alive");

	if (self->head_request || status == 204 || status == 304) {
		self->state = STATE_DONE;
	} else {
		switch (soup_message_headers_get_encoding(headers)) {
		case SOUP_ENCODING_CHUNKED:
			self->state = STATE_CHUNK_SIZE;
			break;
		case SOUP_ENCODING_CONTENT_LENGTH:
			self->remaining = (guint64)soup_message_headers_get_content_length(headers);
			self->state = self->remaining > 0 ? STATE_BODY_LENGTH : STATE_DONE;
			break;
		case SOUP_ENCODING_NONE:
			self->state = STATE_DONE;
			break;
		case SOUP_ENCODING_EOF:
		case SOUP_ENCODING_UNRECOGNIZED:
		case SOUP_ENCODING_BYTERANGES:
		default:
			/* the body runs until the connection closes */
			self->state = STATE_BODY_EOF;
			self->keep_alive = FALSE;
			break;
		}
	}
	self->head_func(status, reason != NULL ? reason : "", headers, self->user_data);
	return TRUE;
}

/* Consumes head bytes up to the end of the head. */
static gboolean
feed_head(ConfabUpstreamResponseParser *self,
	  const gchar *data,
	  gsize len,
	  gsize *used,
	  GError **error)
{
	gsize pos = 0;

	while (pos < len && self->state == STATE_HEAD) {
		const gchar *nl = memchr(data + pos, '\n', len - pos);
		gsize take = nl != NULL ? (gsize)(nl - (data + pos)) + 1 : len - pos;
		gsize line_len;

		if (self->head->len + take > HEAD_MAX) {
			set_invalid(error, "the head is too large");
			return FALSE;
		}
		g_string_append_len(self->head, data + pos, take);
		pos += take;
		if (nl == NULL)
			break;
		line_len = self->head->len - self->line_start;
		if (line_len == 1 || (line_len == 2 && self->head->str[self->line_start] == '\r')) {
			/* a blank line */
			if (self->line_start == 0) {
				/* before the status line: tolerated */
				g_string_truncate(self->head, 0);
				continue;
			}
			g_string_truncate(self->head, self->line_start);
			self->line_start = 0;
			if (!head_done(self, error))
				return FALSE;
			if (self->stopped)
				break;
			continue;
		}
		self->line_start = self->head->len;
	}
	*used = pos;
	return TRUE;
}

/* Collects a CRLF-terminated line into self->line; TRUE once it is whole. */
static gboolean
collect_line(ConfabUpstreamResponseParser *self,
	     const gchar *data,
	     gsize len,
	     gsize *used,
	     gsize max,
	     gboolean *whole,
	     GError **error)
{
	const gchar *nl = memchr(data, '\n', len);
	gsize take = nl != NULL ? (gsize)(nl - data) + 1 : len;

	if (self->line->len + take > max) {
		set_invalid(error, "a chunk line is too long");
		return FALSE;
	}
	g_string_append_len(self->line, data, take);
	*used = take;
	*whole = nl != NULL;
	if (*whole) {
		/* drop the line end */
		g_string_truncate(self->line, self->line->len - 1);
		if (self->line->len > 0 && self->line->str[self->line->len - 1] == '\r')
			g_string_truncate(self->line, self->line->len - 1);
	}
	return TRUE;
}

static gboolean
parse_chunk_size(const gchar *line, guint64 *size)
{
	guint64 value = 0;
	guint digits = 0;
	const gchar *p = line;

	for (; g_ascii_isxdigit(*p); p++, digits++) {
		if (value > (G_MAXUINT64 >> 4) || digits >= 16)
			return FALSE;
		value = (value << 4) | (guint64)g_ascii_xdigit_value(*p);
	}
	if (digits == 0)
		return FALSE;
	/* chunk extensions (";name=value") are ignored */
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '\0' && *p != ';')
		return FALSE;
	*size = value;
	return TRUE;
}

static void
emit_body(ConfabUpstreamResponseParser *self, const gchar *data, gsize len)
{
	if (len > 0)
		self->body_func(data, len, self->user_data);
}

/**
 * confab_upstream_response_parser_feed:
 * @self: a #ConfabUpstreamResponseParser
 * @data: bytes read from the connection
 * @len: their length
 * @consumed: (out): how many were part of this response
 * @error: return location for an error
 *
 * Parses @data, calling the head and body functions as parts complete.
 * Bytes after the end of the response are not consumed.
 *
 * Returns: what became of the response
 */
ConfabUpstreamParseStatus
confab_upstream_response_parser_feed(ConfabUpstreamResponseParser *self,
				     const gchar *data,
				     gsize len,
				     gsize *consumed,
				     GError **error)
{
	gsize pos = 0;

	g_return_val_if_fail(CONFAB_IS_UPSTREAM_RESPONSE_PARSER(self), CONFAB_UPSTREAM_PARSE_ERROR);

	if (len > 0 && self->state != STATE_DONE)
		self->started = TRUE;
	while (pos < len && self->state != STATE_DONE && !self->stopped) {
		const gchar *p = data + pos;
		gsize left = len - pos;
		gsize used = 0;
		gboolean whole = FALSE;

		switch (self->state) {
		case STATE_HEAD:
			if (!feed_head(self, p, left, &used, error))
				goto fail;
			break;
		case STATE_BODY_LENGTH:
			used = (gsize)MIN((guint64)left, self->remaining);
			self->remaining -= used;
			if (self->remaining == 0)
				self->state = STATE_DONE;
			emit_body(self, p, used);
			break;
		case STATE_BODY_EOF:
			used = left;
			emit_body(self, p, used);
			break;
		case STATE_CHUNK_SIZE:
			if (!collect_line(self, p, left, &used, CHUNK_LINE_MAX, &whole, error))
				goto fail;
			if (whole) {
				if (!parse_chunk_size(self->line->str, &self->remaining)) {
					set_invalid(error, "malformed chunk size");
					goto fail;
				}
				g_string_truncate(self->line, 0);
				self->state = self->remaining > 0 ? STATE_CHUNK_DATA
								  : STATE_TRAILER;
			}
			break;
		case STATE_CHUNK_DATA:
			used = (gsize)MIN((guint64)left, self->remaining);
			self->remaining -= used;
			if (self->remaining == 0)
				self->state = STATE_CHUNK_END;
			emit_body(self, p, used);
			break;
		case STATE_CHUNK_END:
			if (!collect_line(self, p, left, &used, CHUNK_LINE_MAX, &whole, error))
				goto fail;
			if (whole) {
				if (self->line->len != 0) {
					set_invalid(error, "a chunk is longer than its size");
					goto fail;
				}
				self->state = STATE_CHUNK_SIZE;
			}
			break;
		case STATE_TRAILER:
			if (!collect_line(self, p, left, &used, TRAILER_MAX, &whole, error))
				goto fail;
			self->trailer_len += used;
			if (self->trailer_len > TRAILER_MAX) {
				set_invalid(error, "the trailer is too large");
				goto fail;
			}
			if (whole) {
				if (self->line->len == 0)
					self->state = STATE_DONE;
				g_string_truncate(self->line, 0);
			}
			break;
		case STATE_DONE:
		default:
			g_assert_not_reached();
		}
		pos += used;
	}
	*consumed = pos;
	if (self->stopped)
		return CONFAB_UPSTREAM_PARSE_STOPPED;
	return self->state == STATE_DONE ? CONFAB_UPSTREAM_PARSE_DONE : CONFAB_UPSTREAM_PARSE_MORE;

fail:
	*consumed = pos;
	return CONFAB_UPSTREAM_PARSE_ERROR;
}

/**
 * confab_upstream_response_parser_eof:
 * @self: a #ConfabUpstreamResponseParser
 * @error: return location for an error
 *
 * The connection closed. A body framed by the close ends here; anything
 * else was cut short (%G_IO_ERROR_CONNECTION_CLOSED, or
 * %G_IO_ERROR_PARTIAL_INPUT once part of the response had arrived).
 *
 * Returns: %CONFAB_UPSTREAM_PARSE_DONE or %CONFAB_UPSTREAM_PARSE_ERROR
 */
ConfabUpstreamParseStatus
confab_upstream_response_parser_eof(ConfabUpstreamResponseParser *self, GError **error)
{
	g_return_val_if_fail(CONFAB_IS_UPSTREAM_RESPONSE_PARSER(self), CONFAB_UPSTREAM_PARSE_ERROR);

	if (self->state == STATE_BODY_EOF || self->state == STATE_DONE) {
		self->state = STATE_DONE;
		self->keep_alive = FALSE;
		return CONFAB_UPSTREAM_PARSE_DONE;
	}
	if (!self->started)
		g_set_error_literal(error,
				    G_IO_ERROR,
				    G_IO_ERROR_CONNECTION_CLOSED,
				    "The connection closed before the response");
	else
		g_set_error_literal(error,
				    G_IO_ERROR,
				    G_IO_ERROR_PARTIAL_INPUT,
				    "The connection closed in the middle of the response");
	return CONFAB_UPSTREAM_PARSE_ERROR;
}
