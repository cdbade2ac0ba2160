/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define CONFAB_TYPE_HTTP_SERVER_GROUP (confab_http_server_group_get_type())
G_DECLARE_FINAL_TYPE(ConfabHttpServerGroup,
		     confab_http_server_group,
		     CONFAB,
		     HTTP_SERVER_GROUP,
		     GObject)

ConfabHttpServerGroup *
confab_http_server_group_new(guint max_connections,
			     guint max_connections_per_peer,
			     gsize max_inflight_body_bytes);
const gchar *
confab_http_server_group_add_connection(ConfabHttpServerGroup *self, const gchar *peer);
void
confab_http_server_group_remove_connection(ConfabHttpServerGroup *self, const gchar *peer);
gboolean
confab_http_server_group_hold_body(ConfabHttpServerGroup *self, gsize more);
void
confab_http_server_group_release_body(ConfabHttpServerGroup *self, gsize bytes);
guint
confab_http_server_group_get_connections(ConfabHttpServerGroup *self);

G_END_DECLS
