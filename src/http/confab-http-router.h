/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <libsoup/soup.h>

#include "confab-engine.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_HTTP_SERVER (confab_http_server_get_type())
G_DECLARE_FINAL_TYPE(ConfabHttpServer, confab_http_server, CONFAB, HTTP_SERVER, GObject)

ConfabHttpServer *
confab_http_server_new(ConfabEngine *engine);
gboolean
confab_http_server_listen(ConfabHttpServer *self, const gchar *address, GError **error);
gboolean
confab_http_server_listen_socket(ConfabHttpServer *self, GSocket *socket, GError **error);
gchar *
confab_http_server_get_url(ConfabHttpServer *self);
guint
confab_http_server_get_active_requests(ConfabHttpServer *self);
guint
confab_http_server_get_connections(ConfabHttpServer *self);
GSource *
confab_http_server_watch_client(ConfabHttpServer *self,
				SoupServerMessage *msg,
				GSourceFunc gone,
				gpointer gone_data);
void
confab_http_server_close_connection(ConfabHttpServer *self, SoupServerMessage *msg);
void
confab_http_server_stop_listening(ConfabHttpServer *self);
void
confab_http_server_disconnect(ConfabHttpServer *self);

G_END_DECLS
