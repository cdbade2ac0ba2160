/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "core/confab-engine.h"
#include "http/server/confab-http-server-group.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_HTTP_ROUTER (confab_http_router_get_type())
G_DECLARE_FINAL_TYPE(ConfabHttpRouter, confab_http_router, CONFAB, HTTP_ROUTER, GObject)

ConfabHttpRouter *
confab_http_router_new(ConfabEngine *engine);
void
confab_http_router_share(ConfabHttpRouter *self, ConfabHttpServerGroup *group, gboolean reuse_port);
gboolean
confab_http_router_listen(ConfabHttpRouter *self, const gchar *address, GError **error);
gboolean
confab_http_router_listen_fd(ConfabHttpRouter *self, gint fd, GError **error);
gchar *
confab_http_router_get_url(ConfabHttpRouter *self);
guint
confab_http_router_get_active_requests(ConfabHttpRouter *self);
guint
confab_http_router_get_connections(ConfabHttpRouter *self);
void
confab_http_router_disconnect(ConfabHttpRouter *self);

G_END_DECLS
