/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

/**
 * ConfabSseEventFunc:
 * @event: (nullable): the event type (the `event:` field), or %NULL for the
 *   default "message"
 * @data: the event data: its `data:` lines joined by "\n", NUL-terminated
 * @data_len: the length of @data
 * @user_data: data given with the function
 *
 * Receives one dispatched Server-Sent Event.
 */
typedef void (*ConfabSseEventFunc)(const gchar *event,
				   const gchar *data,
				   gsize data_len,
				   gpointer user_data);

#define CONFAB_TYPE_SSE_PARSER (confab_sse_parser_get_type())
G_DECLARE_FINAL_TYPE(ConfabSseParser, confab_sse_parser, CONFAB, SSE_PARSER, GObject)

ConfabSseParser *
confab_sse_parser_new(ConfabSseEventFunc func, gpointer user_data);
void
confab_sse_parser_set_max_event_size(ConfabSseParser *self, gsize max_bytes);
gboolean
confab_sse_parser_feed(ConfabSseParser *self, const gchar *data, gsize len, GError **error);
const gchar *
confab_sse_parser_get_last_event_id(ConfabSseParser *self);
gint64
confab_sse_parser_get_retry(ConfabSseParser *self);
gboolean
confab_sse_parser_finish(ConfabSseParser *self, GError **error);

G_END_DECLS
