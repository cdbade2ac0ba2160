/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>
#include <libsoup/soup.h>

G_BEGIN_DECLS

/**
 * ConfabHttpResponseHeadFunc:
 * @status: the status code of the final (non-1xx) response
 * @reason: its reason phrase, possibly empty
 * @headers: its headers
 * @user_data: data given with the parser
 *
 * Receives the head of an HTTP response.
 */
typedef void (*ConfabHttpResponseHeadFunc)(guint status,
					   const gchar *reason,
					   SoupMessageHeaders *headers,
					   gpointer user_data);

/**
 * ConfabHttpResponseBodyFunc:
 * @data: a piece of the decoded body (chunked framing removed)
 * @len: its length, never 0
 * @user_data: data given with the parser
 */
typedef void (*ConfabHttpResponseBodyFunc)(const gchar *data, gsize len, gpointer user_data);

/**
 * ConfabHttpParseStatus:
 * @CONFAB_HTTP_PARSE_MORE: all input consumed; the response goes on
 * @CONFAB_HTTP_PARSE_DONE: the response is complete
 * @CONFAB_HTTP_PARSE_ERROR: the input is not a valid HTTP/1.x response
 * @CONFAB_HTTP_PARSE_STOPPED: confab_http_response_parser_stop() was
 *   called from a callback
 */
typedef enum {
	CONFAB_HTTP_PARSE_MORE,
	CONFAB_HTTP_PARSE_DONE,
	CONFAB_HTTP_PARSE_ERROR,
	CONFAB_HTTP_PARSE_STOPPED,
} ConfabHttpParseStatus;

#define CONFAB_TYPE_HTTP_RESPONSE_PARSER (confab_http_response_parser_get_type())
G_DECLARE_FINAL_TYPE(ConfabHttpResponseParser,
		     confab_http_response_parser,
		     CONFAB,
		     HTTP_RESPONSE_PARSER,
		     GObject)

ConfabHttpResponseParser *
confab_http_response_parser_new(ConfabHttpResponseHeadFunc head_func,
				ConfabHttpResponseBodyFunc body_func,
				gpointer user_data);
void
confab_http_response_parser_reset(ConfabHttpResponseParser *self, gboolean head_request);
ConfabHttpParseStatus
confab_http_response_parser_feed(ConfabHttpResponseParser *self,
				 const gchar *data,
				 gsize len,
				 gsize *consumed,
				 GError **error);
ConfabHttpParseStatus
confab_http_response_parser_eof(ConfabHttpResponseParser *self, GError **error);
void
confab_http_response_parser_stop(ConfabHttpResponseParser *self);
gboolean
confab_http_response_parser_started(ConfabHttpResponseParser *self);
gboolean
confab_http_response_parser_keep_alive(ConfabHttpResponseParser *self);

G_END_DECLS
