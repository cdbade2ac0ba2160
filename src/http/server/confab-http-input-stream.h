/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define CONFAB_TYPE_HTTP_INPUT_STREAM (confab_http_input_stream_get_type())
G_DECLARE_FINAL_TYPE(ConfabHttpInputStream,
		     confab_http_input_stream,
		     CONFAB,
		     HTTP_INPUT_STREAM,
		     GFilterInputStream)

GInputStream *
confab_http_input_stream_new(GInputStream *base);
void
confab_http_input_stream_set_head_limit(ConfabHttpInputStream *self,
					gsize limit,
					GOutputStream *refusal_out);
void
confab_http_input_stream_set_reading_head(ConfabHttpInputStream *self, gboolean reading_head);
void
confab_http_input_stream_set_between_requests(ConfabHttpInputStream *self,
					      gboolean between_requests);

G_END_DECLS
