/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "http/server/confab-http-request-parser.h"
#include "util/confab-error.h"

/*
 * An HTTP/1.1 request parser that accepts only what RFC 9112 allows, so
 * that no proxy in front of Confab can read the same bytes as a different
 * sequence of requests (request smuggling). It is the only code that
 * decides where a request ends: there is no second parser behind it that
 * could disagree.
 *
 * Refused, each with the status the RFC asks for and the connection closed
 * after the answer: bare LF or CR line endings; whitespace before a colon;
 * obs-fold; control characters in a field value; a malformed request line
 * or target; a missing or repeated Host; a repeated Authorization;
 * Content-Length that is not plain digits, or repeated; Content-Length
 * together with Transfer-Encoding; Transfer-Encoding in HTTP/1.0, repeated,
 * or not ending in chunked (400), or with codings other than chunked (501);
 * chunk sizes that are not plain hex, too long, or with junk after them;
 * chunk lines over the cap; chunk data not followed by CRLF; an Expect
 * other than 100-continue (417); versions other than 1.x (505). Messages
 * never quote the request's bytes, so an error body is always valid UTF-8.
 */

#define MAX_LEADING_EMPTY_LINES	  8
#define MAX_CHUNK_SIZE_DIGITS	  16 /* leading zeros included */
#define MAX_CONTENT_LENGTH_DIGITS 18

typedef enum {
	STATE_START,	 /* empty lines before the request line */
	STATE_HEAD,	 /* the head is arriving */
	STATE_HEAD_DONE, /* the head is checked; the body comes next */
	STATE_LENGTH,	 /* a body of known length */
	STATE_CHUNK_LINE,
	STATE_CHUNK_DATA,
	STATE_CHUNK_END, /* the CRLF after chunk data */
	STATE_TRAILER,
	STATE_DONE,
	STATE_ERROR,
} State;

struct _ConfabHttpRequestParser {
	ConfabHttpRequestLimits limits;
	State state;
	gboolean saw_cr;    /* the last byte of a line being read was CR */
	guint empty_lines;  /* before the request line */
	GString *head_text; /* owned: the head, until it is parsed */
	GString *line;	    /* owned: a chunk-size or trailer line */
	gsize trailer_bytes;
	gsize chunk_end_seen; /* bytes of the CRLF after chunk data seen */
	guint64 remaining;    /* of the body or the chunk */
	guint8 *body;	      /* owned, nullable: body_len bytes of body_size */
	gsize body_len;
	gsize body_size;
	ConfabHttpRequestHead head;
};

/**
 * confab_http_request_parser_new:
 * @limits: the limits; copied
 *
 * Returns: (transfer full): a parser waiting for a request
 */
ConfabHttpRequestParser *
confab_http_request_parser_new(const ConfabHttpRequestLimits *limits)
{
	ConfabHttpRequestParser *self = g_new0(ConfabHttpRequestParser, 1);
	self->limits = *limits;
	self->head_text = g_string_sized_new(512);
	self->line = g_string_sized_new(32);
	self->head.fields = confab_http_fields_new();
	return self;
}

static void
head_clear(ConfabHttpRequestHead *head)
{
	g_clear_pointer(&head->method, g_free);
	g_clear_pointer(&head->target, g_free);
	g_clear_pointer(&head->path, g_free);
	g_clear_pointer(&head->query, g_free);
	confab_http_fields_clear(head->fields);
	head->version_minor = 1;
	head->framing = CONFAB_HTTP_FRAMING_NONE;
	head->content_length = 0;
	head->keep_alive = FALSE;
	head->expect_continue = FALSE;
}

void
confab_http_request_parser_free(ConfabHttpRequestParser *self)
{
	if (self == NULL)
		return;
	head_clear(&self->head);
	confab_http_fields_free(self->head.fields);
	g_string_free(self->head_text, TRUE);
	g_string_free(self->line, TRUE);
	g_free(self->body);
	g_free(self);
}

/**
 * confab_http_request_parser_reset:
 *
 * Gets ready for the next request on the connection.
 */
void
confab_http_request_parser_reset(ConfabHttpRequestParser *self)
{
	head_clear(&self->head);
	self->state = STATE_START;
	self->saw_cr = FALSE;
	self->empty_lines = 0;
	self->trailer_bytes = 0;
	self->chunk_end_seen = 0;
	self->remaining = 0;
	g_string_truncate(self->head_text, 0);
	g_string_truncate(self->line, 0);
	g_clear_pointer(&self->body, g_free);
	self->body_len = self->body_size = 0;
}

static ConfabHttpParseResult
fail(ConfabHttpRequestParser *self, GError **error, ConfabErrorCode code, const gchar *message)
{
	self->state = STATE_ERROR;
	g_set_error_literal(error, CONFAB_ERROR, code, message);
	return CONFAB_HTTP_PARSE_ERROR;
}

/* ---------- the head ---------- */

static gboolean
parse_version(const gchar *v, gsize len, guint *minor, GError **error)
{
	if (len != 8 || memcmp(v, "HTTP/", 5) != 0 || !g_ascii_isdigit(v[5]) || v[6] != '.' ||
	    !g_ascii_isdigit(v[7])) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_MALFORMED_REQUEST,
				    "Malformed HTTP version in the request line");
		return FALSE;
	}
	if (v[5] != '1') {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_VERSION_NOT_SUPPORTED,
				    "Only HTTP/1.1 (and 1.0) are served here");
		return FALSE;
	}
	*minor = v[7] == '0' ? 0 : 1;
	return TRUE;
}

static gboolean
target_is_valid(const gchar *target, gsize len)
{
	for (gsize i = 0; i < len; i++) {
		guchar c = (guchar)target[i];
		if (c < 0x21 || c > 0x7e || c == '#')
			return FALSE;
	}
	return len > 0;
}

/* origin-form, absolute-form or asterisk-form (RFC 9112 section 3.2) */
static gboolean
split_target(ConfabHttpRequestHead *head, const gchar *target, gsize len)
{
	const gchar *start = target;
	const gchar *end = target + len;
	const gchar *question;

	if (len == 1 && target[0] == '*') {
		head->path = g_strdup("*");
		return TRUE;
	}
	if (g_ascii_strncasecmp(target, "http://", 7) == 0 ||
	    g_ascii_strncasecmp(target, "https://", 8) == 0) {
		start = target + (target[4] == ':' ? 7 : 8);
		while (start < end && *start != '/' && *start != '?')
			start++;
		if (start == end || *start == '?') {
			head->path = g_strdup("/");
			head->query = start < end ? g_strndup(start + 1, end - start - 1) : NULL;
			return TRUE;
		}
	} else if (target[0] != '/') {
		return FALSE;
	}
	question = memchr(start, '?', end - start);
	if (question == NULL) {
		head->path = g_strndup(start, end - start);
	} else {
		head->path = g_strndup(start, question - start);
		head->query = g_strndup(question + 1, end - question - 1);
	}
	return TRUE;
}

static gboolean
parse_request_line(ConfabHttpRequestHead *head, const gchar *line, gsize len, GError **error)
{
	const gchar *end = line + len;
	const gchar *sp1 = memchr(line, ' ', len);
	const gchar *sp2 = sp1 != NULL ? memchr(sp1 + 1, ' ', end - sp1 - 1) : NULL;

	if (sp1 == NULL || sp2 == NULL || memchr(sp2 + 1, ' ', end - sp2 - 1) != NULL ||
	    !confab_http_fields_is_token(line, sp1 - line)) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_MALFORMED_REQUEST,
				    "Malformed request line");
		return FALSE;
	}
	if (!parse_version(sp2 + 1, end - sp2 - 1, &head->version_minor, error))
		return FALSE;
	/* the asterisk-form is for OPTIONS only (RFC 9112 section 3.2.4) */
	if (!target_is_valid(sp1 + 1, sp2 - sp1 - 1) ||
	    (sp2 - sp1 == 2 && sp1[1] == '*' &&
	     (sp1 - line != 7 || memcmp(line, "OPTIONS", 7) != 0)) ||
	    !split_target(head, sp1 + 1, sp2 - sp1 - 1)) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_MALFORMED_REQUEST,
				    "Malformed request target");
		return FALSE;
	}
	head->method = g_strndup(line, sp1 - line);
	head->target = g_strndup(sp1 + 1, sp2 - sp1 - 1);
	return TRUE;
}

/* 1*DIGIT, without leading zeros, small enough */
static gboolean
parse_content_length(const gchar *value, guint64 *length)
{
	gsize len = strlen(value);
	guint64 n = 0;

	if (len == 0 || len > MAX_CONTENT_LENGTH_DIGITS || (len > 1 && value[0] == '0'))
		return FALSE;
	for (gsize i = 0; i < len; i++) {
		if (!g_ascii_isdigit(value[i]))
			return FALSE;
		n = n * 10 + (guint64)(value[i] - '0');
	}
	*length = n;
	return TRUE;
}

/* RFC 9112 section 6: only "chunked", and it must be last */
static gboolean
check_transfer_encoding(const gchar *value, GError **error)
{
	g_auto(GStrv) codings = g_strsplit(value, ",", -1);
	guint n = g_strv_length(codings);

	for (guint i = 0; i < n; i++)
		g_strstrip(codings[i]);
	/* chunked must be last, and applied once */
	for (guint i = 0; i + 1 < n; i++) {
		if (g_ascii_strcasecmp(codings[i], "chunked") == 0)
			n = 0;
	}
	if (n == 0 || g_ascii_strcasecmp(codings[n - 1], "chunked") != 0) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_MALFORMED_REQUEST,
				    "Transfer-Encoding must end with chunked");
		return FALSE;
	}
	if (n > 1) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_NOT_IMPLEMENTED,
				    "No transfer coding other than chunked is supported");
		return FALSE;
	}
	return TRUE;
}

static gboolean
check_framing(ConfabHttpRequestHead *head, GError **error)
{
	const ConfabHttpFields *fields = head->fields;
	guint n_te = confab_http_fields_count(fields, "Transfer-Encoding");
	guint n_cl = confab_http_fields_count(fields, "Content-Length");

	if (n_te > 0) {
		if (n_cl > 0) {
			g_set_error_literal(error,
					    CONFAB_ERROR,
					    CONFAB_ERROR_MALFORMED_REQUEST,
					    "Content-Length and Transfer-Encoding together");
			return FALSE;
		}
		if (head->version_minor == 0 || n_te > 1) {
			g_set_error_literal(error,
					    CONFAB_ERROR,
					    CONFAB_ERROR_MALFORMED_REQUEST,
					    head->version_minor == 0
						? "Transfer-Encoding in an HTTP/1.0 request"
						: "Transfer-Encoding given more than once");
			return FALSE;
		}
		if (!check_transfer_encoding(confab_http_fields_get(fields, "Transfer-Encoding"),
					     error))
			return FALSE;
		head->framing = CONFAB_HTTP_FRAMING_CHUNKED;
		return TRUE;
	}
	if (n_cl > 1 ||
	    (n_cl == 1 && !parse_content_length(confab_http_fields_get(fields, "Content-Length"),
						&head->content_length))) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_MALFORMED_REQUEST,
				    n_cl > 1 ? "Content-Length given more than once"
					     : "Content-Length is not a plain number");
		return FALSE;
	}
	head->framing = n_cl == 1 && head->content_length > 0 ? CONFAB_HTTP_FRAMING_LENGTH
							      : CONFAB_HTTP_FRAMING_NONE;
	return TRUE;
}

/* uri-host [ ":" port ] (RFC 9110 section 7.2), loosely: the characters
 * a reg-name, an IP literal and a port may hold */
static gboolean
host_is_valid(const gchar *host)
{
	for (const gchar *p = host; *p != '\0'; p++) {
		if (!g_ascii_isalnum(*p) && strchr("-._~%!$&'()*+,;=:[]", *p) == NULL)
			return FALSE;
	}
	return TRUE;
}

static gboolean
check_semantics(ConfabHttpRequestHead *head, GError **error)
{
	const ConfabHttpFields *fields = head->fields;
	guint n_host = confab_http_fields_count(fields, "Host");
	const gchar *expect = confab_http_fields_get(fields, "Expect");

	if (n_host > 1 || (n_host == 0 && head->version_minor == 1) ||
	    (n_host == 1 && !host_is_valid(confab_http_fields_get(fields, "Host")))) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_MALFORMED_REQUEST,
				    n_host > 1	  ? "More than one Host header"
				    : n_host == 0 ? "An HTTP/1.1 request needs a Host header"
						  : "The Host header is not a host name");
		return FALSE;
	}
	/* Authorization is a singleton field (RFC 9110 section 11.6.2): with two,
	 * the router would authenticate one while a proxy in front may have
	 * checked the other */
	if (confab_http_fields_count(fields, "Authorization") > 1) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_MALFORMED_REQUEST,
				    "More than one Authorization header");
		return FALSE;
	}
	if (!check_framing(head, error))
		return FALSE;
	if (expect != NULL && head->version_minor == 1) {
		if (confab_http_fields_count(fields, "Expect") > 1 ||
		    g_ascii_strcasecmp(expect, "100-continue") != 0) {
			g_set_error_literal(error,
					    CONFAB_ERROR,
					    CONFAB_ERROR_EXPECTATION_FAILED,
					    "The only expectation supported is 100-continue");
			return FALSE;
		}
		head->expect_continue = head->framing != CONFAB_HTTP_FRAMING_NONE;
	}
	if (head->version_minor == 1)
		head->keep_alive = !confab_http_fields_has_token(fields, "Connection", "close");
	else
		head->keep_alive = confab_http_fields_has_token(fields, "Connection", "keep-alive");
	return TRUE;
}

/* The head in head_text ends with CRLF CRLF, and has no bare CR or LF. */
static gboolean
parse_head(ConfabHttpRequestParser *self, GError **error)
{
	ConfabHttpRequestHead *head = &self->head;
	const gchar *p = self->head_text->str;
	const gchar *end = p + self->head_text->len - 2; /* the last, empty line */
	const gchar *eol = memmem(p, end - p + 2, "\r\n", 2);

	if (!parse_request_line(head, p, eol - p, error))
		return FALSE;
	for (p = eol + 2; p < end; p = eol + 2) {
		gsize name_len, value_len;
		const gchar *value;

		eol = memmem(p, end - p + 2, "\r\n", 2);
		if (confab_http_fields_get_size(head->fields) >= self->limits.max_fields) {
			g_set_error_literal(error,
					    CONFAB_ERROR,
					    CONFAB_ERROR_HEADER_TOO_LARGE,
					    "The request has too many header fields");
			return FALSE;
		}
		if (!confab_http_fields_parse_field_line(p,
							 eol - p,
							 &name_len,
							 &value,
							 &value_len)) {
			g_set_error_literal(error,
					    CONFAB_ERROR,
					    CONFAB_ERROR_MALFORMED_REQUEST,
					    *p == ' ' || *p == '\t'
						? "Folded header lines (obs-fold) are not accepted"
						: "Malformed header field");
			return FALSE;
		}
		confab_http_fields_append(head->fields, p, name_len, value, value_len);
	}
	return check_semantics(head, error);
}

typedef enum {
	STEP_NEXT,     /* the byte is taken */
	STEP_BAD_LINE, /* a bare CR or LF, or too many empty lines */
	STEP_BAD_BYTE, /* a control character */
	STEP_TOO_LARGE,
	STEP_END, /* the byte ended the head */
} HeadStep;

static HeadStep
head_step(ConfabHttpRequestParser *self, gchar c)
{
	if (self->state == STATE_START) {
		/* RFC 9112 section 2.2: empty lines before a request */
		if (self->saw_cr) {
			self->saw_cr = FALSE;
			return c == '\n' && ++self->empty_lines <= MAX_LEADING_EMPTY_LINES
				   ? STEP_NEXT
				   : STEP_BAD_LINE;
		}
		if (c == '\r') {
			self->saw_cr = TRUE;
			return STEP_NEXT;
		}
		if (c == '\n')
			return STEP_BAD_LINE;
		self->state = STATE_HEAD;
	}
	if (self->saw_cr != (c == '\n'))
		return STEP_BAD_LINE;
	/* no control character belongs in a head (RFC 9112 sections 3 and 5) */
	if (((guchar)c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c == 0x7f)
		return STEP_BAD_BYTE;
	self->saw_cr = c == '\r';
	if (self->head_text->len >= self->limits.max_head_bytes)
		return STEP_TOO_LARGE;
	g_string_append_c(self->head_text, c);
	if (c == '\n' && self->head_text->len >= 4 &&
	    memcmp(self->head_text->str + self->head_text->len - 4, "\r\n\r\n", 4) == 0)
		return STEP_END;
	return STEP_NEXT;
}

static ConfabHttpParseResult
feed_head(ConfabHttpRequestParser *self,
	  const gchar *data,
	  gsize len,
	  gsize *consumed,
	  GError **error)
{
	for (gsize i = 0; i < len; i++) {
		switch (head_step(self, data[i])) {
		case STEP_NEXT:
			break;
		case STEP_BAD_LINE:
			*consumed = i;
			return fail(self,
				    error,
				    CONFAB_ERROR_MALFORMED_REQUEST,
				    "Lines must end with CRLF");
		case STEP_BAD_BYTE:
			*consumed = i;
			return fail(self,
				    error,
				    CONFAB_ERROR_MALFORMED_REQUEST,
				    "Control characters are not allowed in a request head");
		case STEP_TOO_LARGE:
			*consumed = i;
			return fail(self,
				    error,
				    CONFAB_ERROR_HEADER_TOO_LARGE,
				    "The request head is too large");
		case STEP_END:
		default:
			*consumed = i + 1;
			if (!parse_head(self, error)) {
				self->state = STATE_ERROR;
				return CONFAB_HTTP_PARSE_ERROR;
			}
			self->state = STATE_HEAD_DONE;
			return CONFAB_HTTP_PARSE_HEAD;
		}
	}
	*consumed = len;
	return CONFAB_HTTP_PARSE_MORE;
}

/* ---------- the body ---------- */

static gboolean
body_reserve(ConfabHttpRequestParser *self, guint64 more, GError **error)
{
	guint64 have = self->body_len;
	if (more > self->limits.max_body_bytes || have + more > self->limits.max_body_bytes) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_REQUEST_TOO_LARGE,
			    "The request body is larger than %" G_GSIZE_FORMAT " bytes",
			    self->limits.max_body_bytes);
		self->state = STATE_ERROR;
		return FALSE;
	}
	/* exactly what Content-Length says (a GByteArray would round a
	 * 10 MiB body up to 16); chunks grow it by half at least */
	if (have + more > self->body_size) {
		self->body_size = MAX(have + more, self->body_size + self->body_size / 2);
		self->body_size = MIN(self->body_size, self->limits.max_body_bytes);
		self->body = g_realloc(self->body, MAX(self->body_size, 1));
	}
	return TRUE;
}

static void
body_append(ConfabHttpRequestParser *self, const gchar *data, gsize len)
{
	g_assert(self->body_len + len <= self->body_size);
	memcpy(self->body + self->body_len, data, len);
	self->body_len += len;
}

/* chunk-size [ BWS ";" chunk-ext ] — the extension's text is ignored */
static gboolean
parse_chunk_line(const gchar *line, gsize len, guint64 *size)
{
	gsize i = 0;
	guint64 n = 0;

	for (; i < len && g_ascii_isxdigit(line[i]); i++) {
		if (i >= MAX_CHUNK_SIZE_DIGITS)
			return FALSE;
		n = (n << 4) | (guint64)g_ascii_xdigit_value(line[i]);
	}
	if (i == 0 || n > G_MAXINT64)
		return FALSE;
	if (i < len) {
		while (i < len && (line[i] == ' ' || line[i] == '\t'))
			i++;
		if (i == len || line[i] != ';' ||
		    !confab_http_fields_is_field_value(line + i, len - i))
			return FALSE;
	}
	*size = n;
	return TRUE;
}

/* Reads one CRLF-terminated line into self->line; TRUE once it is whole. */
static gboolean
read_line(ConfabHttpRequestParser *self,
	  const gchar *data,
	  gsize len,
	  gsize *used,
	  gsize max,
	  GError **error,
	  gboolean *bad)
{
	for (gsize i = 0; i < len; i++) {
		gchar c = data[i];
		if (self->saw_cr != (c == '\n')) {
			*bad = TRUE;
			*used = i;
			g_set_error_literal(error,
					    CONFAB_ERROR,
					    CONFAB_ERROR_MALFORMED_REQUEST,
					    "Chunk lines must end with CRLF");
			return FALSE;
		}
		self->saw_cr = c == '\r';
		if (c == '\n') {
			g_string_truncate(self->line, self->line->len - 1);
			*used = i + 1;
			return TRUE;
		}
		if (self->line->len >= max) {
			*bad = TRUE;
			*used = i;
			g_set_error_literal(error,
					    CONFAB_ERROR,
					    CONFAB_ERROR_MALFORMED_REQUEST,
					    "A chunk line is too long");
			return FALSE;
		}
		g_string_append_c(self->line, c);
	}
	*used = len;
	return FALSE;
}

/* What one step of a chunked body did. */
typedef enum {
	STEP_OK,     /* went on; call again with what is left */
	STEP_WAIT,   /* needs more bytes */
	STEP_FAILED, /* the body is malformed: *error is set */
} ChunkStep;

static ChunkStep
chunk_fail(ConfabHttpRequestParser *self, GError **error, ConfabErrorCode code, const gchar *msg)
{
	fail(self, error, code, msg);
	return STEP_FAILED;
}

/* One line of the chunked body (a size line or a trailer field), read whole. */
static ChunkStep
chunk_read_line(ConfabHttpRequestParser *self,
		const gchar *data,
		gsize len,
		gsize *used,
		gsize max,
		GError **error)
{
	gboolean bad = FALSE;

	if (read_line(self, data, len, used, max, error, &bad))
		return STEP_OK;
	if (bad) {
		self->state = STATE_ERROR;
		return STEP_FAILED;
	}
	return STEP_WAIT;
}

static ChunkStep
chunk_size_step(ConfabHttpRequestParser *self,
		const gchar *data,
		gsize len,
		gsize *used,
		GError **error)
{
	ChunkStep step = chunk_read_line(self, data, len, used, self->limits.max_chunk_line, error);

	if (step != STEP_OK)
		return step;
	if (!parse_chunk_line(self->line->str, self->line->len, &self->remaining))
		return chunk_fail(self,
				  error,
				  CONFAB_ERROR_MALFORMED_REQUEST,
				  "Malformed chunk size");
	g_string_truncate(self->line, 0);
	if (self->remaining == 0) {
		self->state = STATE_TRAILER;
		return STEP_OK;
	}
	if (!body_reserve(self, self->remaining, error))
		return STEP_FAILED;
	self->state = STATE_CHUNK_DATA;
	return STEP_OK;
}

static ChunkStep
chunk_data_step(ConfabHttpRequestParser *self, const gchar *data, gsize len, gsize *used)
{
	*used = (gsize)MIN((guint64)len, self->remaining);
	body_append(self, data, *used);
	self->remaining -= *used;
	if (self->remaining == 0) {
		self->state = STATE_CHUNK_END;
		self->chunk_end_seen = 0;
	}
	return STEP_OK;
}

static ChunkStep
chunk_end_step(ConfabHttpRequestParser *self, const gchar *data, gsize *used, GError **error)
{
	if (data[0] != "\r\n"[self->chunk_end_seen])
		return chunk_fail(self,
				  error,
				  CONFAB_ERROR_MALFORMED_REQUEST,
				  "Chunk data must be followed by CRLF");
	*used = 1;
	if (++self->chunk_end_seen == 2)
		self->state = STATE_CHUNK_LINE;
	return STEP_OK;
}

/* Trailer fields are checked like header fields, then dropped. */
static ChunkStep
chunk_trailer_step(ConfabHttpRequestParser *self,
		   const gchar *data,
		   gsize len,
		   gsize *used,
		   GError **error)
{
	ChunkStep step = chunk_read_line(self, data, len, used, self->limits.max_head_bytes, error);
	gsize name_len, value_len;
	const gchar *value;

	self->trailer_bytes += *used;
	if (step == STEP_FAILED)
		return step;
	if (self->trailer_bytes > self->limits.max_head_bytes)
		return chunk_fail(self,
				  error,
				  CONFAB_ERROR_HEADER_TOO_LARGE,
				  "The trailer section is too large");
	if (step == STEP_WAIT)
		return step;
	if (self->line->len == 0) {
		self->state = STATE_DONE;
		return STEP_OK;
	}
	if (!confab_http_fields_parse_field_line(self->line->str,
						 self->line->len,
						 &name_len,
						 &value,
						 &value_len))
		return chunk_fail(self,
				  error,
				  CONFAB_ERROR_MALFORMED_REQUEST,
				  "Malformed trailer field");
	g_string_truncate(self->line, 0);
	return STEP_OK;
}

static ConfabHttpParseResult
feed_chunked(ConfabHttpRequestParser *self,
	     const gchar *data,
	     gsize len,
	     gsize *consumed,
	     GError **error)
{
	gsize at = 0;

	while (self->state != STATE_DONE && at < len) {
		gsize used = 0;
		ChunkStep step;

		switch (self->state) {
		case STATE_CHUNK_LINE:
			step = chunk_size_step(self, data + at, len - at, &used, error);
			break;
		case STATE_CHUNK_DATA:
			step = chunk_data_step(self, data + at, len - at, &used);
			break;
		case STATE_CHUNK_END:
			step = chunk_end_step(self, data + at, &used, error);
			break;
		case STATE_TRAILER:
		default:
			step = chunk_trailer_step(self, data + at, len - at, &used, error);
			break;
		}
		at += used;
		if (step == STEP_FAILED) {
			*consumed = at;
			return CONFAB_HTTP_PARSE_ERROR;
		}
	}
	*consumed = at;
	return self->state == STATE_DONE ? CONFAB_HTTP_PARSE_BODY : CONFAB_HTTP_PARSE_MORE;
}

static ConfabHttpParseResult
start_body(ConfabHttpRequestParser *self, GError **error)
{
	switch (self->head.framing) {
	case CONFAB_HTTP_FRAMING_NONE:
		self->state = STATE_DONE;
		return CONFAB_HTTP_PARSE_BODY;
	case CONFAB_HTTP_FRAMING_LENGTH:
		if (!body_reserve(self, self->head.content_length, error))
			return CONFAB_HTTP_PARSE_ERROR;
		self->remaining = self->head.content_length;
		self->state = STATE_LENGTH;
		return CONFAB_HTTP_PARSE_MORE;
	case CONFAB_HTTP_FRAMING_CHUNKED:
	default:
		self->saw_cr = FALSE;
		self->state = STATE_CHUNK_LINE;
		return CONFAB_HTTP_PARSE_MORE;
	}
}

/**
 * confab_http_request_parser_feed:
 * @self: a #ConfabHttpRequestParser
 * @data: bytes read from the connection
 * @len: their number
 * @consumed: (out): how many of them belong to this request
 * @error: return location for a #GError in CONFAB_ERROR
 *
 * Feeds the parser. After %CONFAB_HTTP_PARSE_HEAD the head can be read with
 * confab_http_request_parser_get_head(); feed again (with zero bytes if
 * none are left) to read the body. %CONFAB_HTTP_PARSE_BODY means the request
 * is whole; bytes after @consumed belong to the next one.
 *
 * Returns: what the bytes completed
 */
ConfabHttpParseResult
confab_http_request_parser_feed(ConfabHttpRequestParser *self,
				const gchar *data,
				gsize len,
				gsize *consumed,
				GError **error)
{
	ConfabHttpParseResult result;
	gsize used = 0;

	*consumed = 0;
	switch (self->state) {
	case STATE_START:
	case STATE_HEAD:
		return feed_head(self, data, len, consumed, error);
	case STATE_HEAD_DONE:
		result = start_body(self, error);
		if (result != CONFAB_HTTP_PARSE_MORE)
			return result;
		if (self->state == STATE_LENGTH)
			break;
		result = feed_chunked(self, data, len, &used, error);
		*consumed = used;
		return result;
	case STATE_LENGTH:
		break;
	case STATE_CHUNK_LINE:
	case STATE_CHUNK_DATA:
	case STATE_CHUNK_END:
	case STATE_TRAILER:
		result = feed_chunked(self, data, len, &used, error);
		*consumed = used;
		return result;
	case STATE_DONE:
		return CONFAB_HTTP_PARSE_BODY;
	case STATE_ERROR:
	default:
		return fail(self, error, CONFAB_ERROR_MALFORMED_REQUEST, "Malformed request");
	}

	used = (gsize)MIN((guint64)len, self->remaining);
	body_append(self, data, used);
	self->remaining -= used;
	*consumed = used;
	if (self->remaining > 0)
		return CONFAB_HTTP_PARSE_MORE;
	self->state = STATE_DONE;
	return CONFAB_HTTP_PARSE_BODY;
}

/**
 * confab_http_request_parser_get_head:
 *
 * Returns: (transfer none): the head, once %CONFAB_HTTP_PARSE_HEAD was
 *   returned and until the parser is reset
 */
const ConfabHttpRequestHead *
confab_http_request_parser_get_head(ConfabHttpRequestParser *self)
{
	return &self->head;
}

/**
 * confab_http_request_parser_started:
 *
 * Returns: whether a byte of a request (beyond empty lines) has come
 */
gboolean
confab_http_request_parser_started(ConfabHttpRequestParser *self)
{
	return self->state != STATE_START || self->empty_lines > 0 || self->saw_cr;
}

/**
 * confab_http_request_parser_in_body:
 *
 * Returns: whether the head is in and the body is still arriving
 */
gboolean
confab_http_request_parser_in_body(ConfabHttpRequestParser *self)
{
	return self->state >= STATE_HEAD_DONE && self->state < STATE_DONE;
}

gsize
confab_http_request_parser_get_body_length(ConfabHttpRequestParser *self)
{
	return self->body_len;
}

/**
 * confab_http_request_parser_steal_body:
 *
 * Returns: (transfer full): the decoded body (empty when there was none)
 */
GBytes *
confab_http_request_parser_steal_body(ConfabHttpRequestParser *self)
{
	gsize len = self->body_len;

	if (self->body == NULL)
		return g_bytes_new(NULL, 0);
	if (len < self->body_size)
		self->body = g_realloc(self->body, MAX(len, 1));
	self->body_len = self->body_size = 0;
	return g_bytes_new_take(g_steal_pointer(&self->body), len);
}
