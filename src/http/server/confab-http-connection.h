/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define CONFAB_TYPE_HTTP_CONNECTION (confab_http_connection_get_type())
G_DECLARE_FINAL_TYPE(ConfabHttpConnection,
		     confab_http_connection,
		     CONFAB,
		     HTTP_CONNECTION,
		     GIOStream)

ConfabHttpConnection *
confab_http_connection_new(GSocketConnection *base, gsize max_head_bytes);
GSocket *
confab_http_connection_get_socket(ConfabHttpConnection *self);
void
confab_http_connection_set_reading_head(ConfabHttpConnection *self, gboolean reading_head);
void
confab_http_connection_set_head_request(ConfabHttpConnection *self, gboolean head_request);
void
confab_http_connection_set_between_requests(ConfabHttpConnection *self, gboolean between_requests);

G_END_DECLS
