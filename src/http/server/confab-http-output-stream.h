/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define CONFAB_TYPE_HTTP_OUTPUT_STREAM (confab_http_output_stream_get_type())
G_DECLARE_FINAL_TYPE(ConfabHttpOutputStream,
		     confab_http_output_stream,
		     CONFAB,
		     HTTP_OUTPUT_STREAM,
		     GFilterOutputStream)

GOutputStream *
confab_http_output_stream_new(GOutputStream *base, GSocket *socket);
void
confab_http_output_stream_set_head_request(ConfabHttpOutputStream *self, gboolean head_request);
gboolean
confab_http_output_stream_is_head_with_body(const gchar *data, gsize len);

G_END_DECLS
