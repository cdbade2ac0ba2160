/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

#include "util/confab-http-fields.h"

G_BEGIN_DECLS

/**
 * ConfabHttpRequestLimits:
 * @max_head_bytes: the largest request head (request line and fields); 431
 *   beyond
 * @max_fields: the most field lines in a head; 431 beyond
 * @max_body_bytes: the largest (decoded) body; 413 beyond
 * @max_chunk_line: the longest chunk-size line, extensions included; 400
 *   beyond
 */
typedef struct {
	gsize max_head_bytes;
	guint max_fields;
	gsize max_body_bytes;
	gsize max_chunk_line;
} ConfabHttpRequestLimits;

/**
 * ConfabHttpFraming:
 * @CONFAB_HTTP_FRAMING_NONE: no body
 * @CONFAB_HTTP_FRAMING_LENGTH: a body of Content-Length bytes
 * @CONFAB_HTTP_FRAMING_CHUNKED: a chunked body
 */
typedef enum {
	CONFAB_HTTP_FRAMING_NONE,
	CONFAB_HTTP_FRAMING_LENGTH,
	CONFAB_HTTP_FRAMING_CHUNKED,
} ConfabHttpFraming;

/**
 * ConfabHttpRequestHead:
 * @method: the method, a token
 * @target: the request-target as sent
 * @path: the path of @target, still percent-encoded
 * @query: (nullable): the query of @target, still percent-encoded
 * @version_minor: 0 for HTTP/1.0, 1 for HTTP/1.1 (and later 1.x)
 * @fields: the header fields
 * @framing: how the body is delimited
 * @content_length: the body's length, with %CONFAB_HTTP_FRAMING_LENGTH
 * @keep_alive: whether the client allows another request on the connection
 * @expect_continue: whether the client waits for `100 Continue`
 *
 * A request head that passed every check of RFC 9112.
 */
typedef struct {
	gchar *method;
	gchar *target;
	gchar *path;
	gchar *query;
	guint version_minor;
	ConfabHttpFields *fields;
	ConfabHttpFraming framing;
	guint64 content_length;
	gboolean keep_alive;
	gboolean expect_continue;
} ConfabHttpRequestHead;

/**
 * ConfabHttpParseResult:
 * @CONFAB_HTTP_PARSE_MORE: everything given was used; more bytes are needed
 * @CONFAB_HTTP_PARSE_HEAD: the head is complete and checked
 * @CONFAB_HTTP_PARSE_BODY: the body is complete: the request is whole
 * @CONFAB_HTTP_PARSE_ERROR: the bytes are not a valid request; the
 *   connection cannot be trusted any further and must be closed
 */
typedef enum {
	CONFAB_HTTP_PARSE_MORE,
	CONFAB_HTTP_PARSE_HEAD,
	CONFAB_HTTP_PARSE_BODY,
	CONFAB_HTTP_PARSE_ERROR,
} ConfabHttpParseResult;

typedef struct _ConfabHttpRequestParser ConfabHttpRequestParser;

ConfabHttpRequestParser *
confab_http_request_parser_new(const ConfabHttpRequestLimits *limits);
void
confab_http_request_parser_free(ConfabHttpRequestParser *self);
void
confab_http_request_parser_reset(ConfabHttpRequestParser *self);
ConfabHttpParseResult
confab_http_request_parser_feed(ConfabHttpRequestParser *self,
				const gchar *data,
				gsize len,
				gsize *consumed,
				GError **error);
const ConfabHttpRequestHead *
confab_http_request_parser_get_head(ConfabHttpRequestParser *self);
gboolean
confab_http_request_parser_in_body(ConfabHttpRequestParser *self);
gboolean
confab_http_request_parser_started(ConfabHttpRequestParser *self);
gsize
confab_http_request_parser_get_body_length(ConfabHttpRequestParser *self);
GBytes *
confab_http_request_parser_steal_body(ConfabHttpRequestParser *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabHttpRequestParser, confab_http_request_parser_free)

G_END_DECLS
