/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

#include "util/confab-http-fields.h"

G_BEGIN_DECLS

/**
 * ConfabUpstreamResponseHeadFunc:
 * @status: the status code of the final (non-1xx) response
 * @reason: its reason phrase, possibly empty
 * @fields: its header fields, obs-folds joined; valid during the call only
 * @user_data: data given with the parser
 *
 * Receives the head of an HTTP response.
 */
typedef void (*ConfabUpstreamResponseHeadFunc)(guint status,
					       const gchar *reason,
					       const ConfabHttpFields *fields,
					       gpointer user_data);

/**
 * ConfabUpstreamResponseBodyFunc:
 * @data: a piece of the decoded body (chunked framing removed)
 * @len: its length, never 0
 * @user_data: data given with the parser
 */
typedef void (*ConfabUpstreamResponseBodyFunc)(const gchar *data, gsize len, gpointer user_data);

/**
 * ConfabUpstreamParseStatus:
 * @CONFAB_UPSTREAM_PARSE_MORE: all input consumed; the response goes on
 * @CONFAB_UPSTREAM_PARSE_DONE: the response is complete
 * @CONFAB_UPSTREAM_PARSE_ERROR: the input is not a valid HTTP/1.x response
 * @CONFAB_UPSTREAM_PARSE_STOPPED: confab_upstream_response_parser_stop() was
 *   called from a callback
 */
typedef enum {
	CONFAB_UPSTREAM_PARSE_MORE,
	CONFAB_UPSTREAM_PARSE_DONE,
	CONFAB_UPSTREAM_PARSE_ERROR,
	CONFAB_UPSTREAM_PARSE_STOPPED,
} ConfabUpstreamParseStatus;

#define CONFAB_TYPE_UPSTREAM_RESPONSE_PARSER (confab_upstream_response_parser_get_type())
G_DECLARE_FINAL_TYPE(ConfabUpstreamResponseParser,
		     confab_upstream_response_parser,
		     CONFAB,
		     UPSTREAM_RESPONSE_PARSER,
		     GObject)

ConfabUpstreamResponseParser *
confab_upstream_response_parser_new(ConfabUpstreamResponseHeadFunc head_func,
				    ConfabUpstreamResponseBodyFunc body_func,
				    gpointer user_data);
void
confab_upstream_response_parser_reset(ConfabUpstreamResponseParser *self, gboolean head_request);
ConfabUpstreamParseStatus
confab_upstream_response_parser_feed(ConfabUpstreamResponseParser *self,
				     const gchar *data,
				     gsize len,
				     gsize *consumed,
				     GError **error);
ConfabUpstreamParseStatus
confab_upstream_response_parser_eof(ConfabUpstreamResponseParser *self, GError **error);
void
confab_upstream_response_parser_stop(ConfabUpstreamResponseParser *self);
gboolean
confab_upstream_response_parser_started(ConfabUpstreamResponseParser *self);
gboolean
confab_upstream_response_parser_keep_alive(ConfabUpstreamResponseParser *self);

G_END_DECLS
