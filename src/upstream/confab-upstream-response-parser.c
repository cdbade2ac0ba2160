/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabUpstreamResponseParser"

#include "config.h"

#include <gio/gio.h>
#include <string.h>

#include "upstream/confab-upstream-response-parser.h"

/*
 * An incremental HTTP/1.x response parser for the upstream client: fed
 * whatever the socket gave, split anywhere, it hands out the head once and
 * the decoded body piece by piece, without copying the body. The framing
 * (Content-Length, chunked, until the connection closes, no body for
 * 1xx/204/304) and every size limit are this file's.
 *
 * How strict: an upstream is not a security boundary as the server's
 * clients are, but a response is never read past its framing, and nothing
 * it sends makes the parser hold more than HEAD_MAX bytes of head,
 * CHUNK_LINE_MAX of a chunk line or TRAILER_MAX of trailer. Within that it
 * takes what real servers send and RFC 9112 lets a client take:
 *  - a bare LF ends a line as CRLF does (section 2.2);
 *  - a status line without a reason phrase ("HTTP/1.1 200"), and any minor
 *    version of HTTP/1;
 *  - obs-fold: a field line that starts with whitespace continues the one
 *    before, joined by one space, as section 5.2 asks of user agents;
 *  - Content-Length as a list of the same number ("42, 42", section 6.3).
 * Everything else that could change where the response ends is an error:
 * a field line that is not `token ":" value` (whitespace before the colon,
 * a control character in a value), Content-Length values that differ or
 * are not numbers, a transfer coding other than chunked. A response with
 * both Transfer-Encoding and Content-Length is read as chunked and its
 * connection is not reused.
 */

#define HEAD_MAX       (64 * 1024) /* status line and headers */
#define FIELDS_MAX     256	   /* header field lines */
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
	GString *head;		  /* the head so far */
	gsize line_start;	  /* in head: where the current line starts */
	ConfabHttpFields *fields; /* owned: the head's, once parsed */
	GString *line;		  /* a chunk-size, chunk-end or trailer line so far */
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
	confab_http_fields_free(self->fields);
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
	self->fields = confab_http_fields_new();
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
	confab_http_fields_clear(self->fields);
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

/* "HTTP/1.x SP 3DIGIT [SP reason]", without its line end */
static gboolean
parse_status_line(const gchar *line,
		  gsize len,
		  guint *minor,
		  guint *status,
		  gchar **reason,
		  GError **error)
{
	const gchar *reason_start;
	gsize reason_len;

	if (len < 12 || memcmp(line, "HTTP/1.", 7) != 0 || !g_ascii_isdigit(line[7]) ||
	    line[8] != ' ' || !g_ascii_isdigit(line[9]) || !g_ascii_isdigit(line[10]) ||
	    !g_ascii_isdigit(line[11]) || (len > 12 && line[12] != ' ')) {
		set_invalid(error, "malformed status line");
		return FALSE;
	}
	*minor = (guint)(line[7] - '0');
	*status = (guint)((line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0'));
	reason_start = len > 12 ? line + 13 : line + len;
	reason_len = (gsize)(line + len - reason_start);
	if (!confab_http_fields_is_field_value(reason_start, reason_len)) {
		set_invalid(error, "a control character in the reason phrase");
		return FALSE;
	}
	*reason = g_strndup(reason_start, reason_len);
	return TRUE;
}

/* One field line, obs-folds already joined, into self->fields. */
static gboolean
add_field(ConfabUpstreamResponseParser *self, const gchar *line, gsize len, GError **error)
{
	gsize name_len;
	const gchar *value;
	gsize value_len;

	if (confab_http_fields_get_size(self->fields) >= FIELDS_MAX) {
		set_invalid(error, "too many header fields");
		return FALSE;
	}
	if (!confab_http_fields_parse_field_line(line, len, &name_len, &value, &value_len)) {
		set_invalid(error, "malformed header field line");
		return FALSE;
	}
	confab_http_fields_append(self->fields, line, name_len, value, value_len);
	return TRUE;
}

/* The field lines of the head (after the status line) into self->fields;
 * a line that starts with whitespace continues the one before (obs-fold). */
static gboolean
parse_fields(ConfabUpstreamResponseParser *self, const gchar *p, const gchar *end, GError **error)
{
	g_autoptr(GString) logical = g_string_new(NULL);

	while (p < end) {
		const gchar *nl = memchr(p, '\n', (gsize)(end - p));
		const gchar *eol = nl != NULL ? nl : end;
		const gchar *next = nl != NULL ? nl + 1 : end;

		if (eol > p && eol[-1] == '\r')
			eol--;
		if (*p == ' ' || *p == '\t') {
			if (logical->len == 0) {
				set_invalid(error, "whitespace before the first header field");
				return FALSE;
			}
			while (p < eol && (*p == ' ' || *p == '\t'))
				p++;
			g_string_append_c(logical, ' ');
			g_string_append_len(logical, p, eol - p);
		} else {
			if (logical->len > 0 && !add_field(self, logical->str, logical->len, error))
				return FALSE;
			g_string_truncate(logical, 0);
			g_string_append_len(logical, p, eol - p);
			if (logical->len == 0) {
				set_invalid(error, "malformed header field line");
				return FALSE;
			}
		}
		p = next;
	}
	return logical->len == 0 || add_field(self, logical->str, logical->len, error);
}

/* "42" or "42, 42": RFC 9112 section 6.3 lets a recipient take a list of
 * one number repeated */
static gboolean
parse_content_length(const ConfabHttpFields *fields, guint64 *length)
{
	guint n = confab_http_fields_get_size(fields);
	gboolean seen = FALSE;

	for (guint i = 0; i < n; i++) {
		g_auto(GStrv) items = NULL;

		if (g_ascii_strcasecmp(confab_http_fields_get_name(fields, i), "Content-Length") !=
		    0)
			continue;
		items = g_strsplit(confab_http_fields_get_value(fields, i), ",", -1);
		for (guint j = 0; items[j] != NULL; j++) {
			guint64 value = 0;
			g_strstrip(items[j]);
			if (*items[j] == '\0' || strlen(items[j]) > 19 ||
			    !g_ascii_string_to_unsigned(items[j],
							10,
							0,
							G_MAXINT64,
							&value,
							NULL) ||
			    !g_ascii_isdigit(*items[j]) || (seen && value != *length))
				return FALSE;
			*length = value;
			seen = TRUE;
		}
	}
	return seen;
}

/* The codings of every Transfer-Encoding line: only "chunked" is known. */
static gboolean
transfer_encoding_is_chunked(const ConfabHttpFields *fields)
{
	guint n = confab_http_fields_get_size(fields);
	guint codings = 0;

	for (guint i = 0; i < n; i++) {
		g_auto(GStrv) items = NULL;

		if (g_ascii_strcasecmp(confab_http_fields_get_name(fields, i),
				       "Transfer-Encoding") != 0)
			continue;
		items = g_strsplit(confab_http_fields_get_value(fields, i), ",", -1);
		for (guint j = 0; items[j] != NULL; j++) {
			g_strstrip(items[j]);
			if (*items[j] == '\0')
				continue;
			if (g_ascii_strcasecmp(items[j], "chunked") != 0)
				return FALSE;
			codings++;
		}
	}
	return codings == 1;
}

/* The head is complete (its blank line excluded from head->str). */
static gboolean
head_done(ConfabUpstreamResponseParser *self, GError **error)
{
	const gchar *head = self->head->str;
	const gchar *end = head + self->head->len;
	const gchar *nl = memchr(head, '\n', self->head->len);
	const gchar *eol = nl != NULL ? nl : end;
	g_autofree gchar *reason = NULL;
	guint minor = 0;
	guint status = 0;

	if (eol > head && eol[-1] == '\r')
		eol--;
	if (!parse_status_line(head, (gsize)(eol - head), &minor, &status, &reason, error))
		return FALSE;
	if (status < 100) {
		set_invalid(error, "status code out of range");
		return FALSE;
	}
	confab_http_fields_clear(self->fields);
	if (!parse_fields(self, nl != NULL ? nl + 1 : end, end, error))
		return FALSE;
	if (status < 200) {
		if (status == 101) {
			set_invalid(error, "unexpected protocol switch");
			return FALSE;
		}
		/* an interim response: the final one follows */
		g_string_truncate(self->head, 0);
		self->line_start = 0;
		return TRUE;
	}

	if (minor >= 1)
		self->keep_alive =
		    !confab_http_fields_has_token(self->fields, "Connection", "close");
	else
		self->keep_alive =
		    confab_http_fields_has_token(self->fields, "Connection", "keep-alive");

	if (self->head_request || status == 204 || status == 304) {
		self->state = STATE_DONE;
	} else if (confab_http_fields_count(self->fields, "Transfer-Encoding") > 0) {
		if (!transfer_encoding_is_chunked(self->fields)) {
			set_invalid(error, "a transfer coding other than chunked");
			return FALSE;
		}
		/* with a Content-Length too, chunked wins; such a response may
		 * be a smuggling attempt: its connection is not reused */
		if (confab_http_fields_count(self->fields, "Content-Length") > 0)
			self->keep_alive = FALSE;
		self->state = STATE_CHUNK_SIZE;
	} else if (confab_http_fields_count(self->fields, "Content-Length") > 0) {
		if (!parse_content_length(self->fields, &self->remaining)) {
			set_invalid(error, "malformed Content-Length");
			return FALSE;
		}
		self->state = self->remaining > 0 ? STATE_BODY_LENGTH : STATE_DONE;
	} else {
		/* the body runs until the connection closes */
		self->state = STATE_BODY_EOF;
		self->keep_alive = FALSE;
	}
	self->head_func(status, reason, self->fields, self->user_data);
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
