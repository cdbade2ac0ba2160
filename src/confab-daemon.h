/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-config.h"
#include "core/confab-engine.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_DAEMON (confab_daemon_get_type())
G_DECLARE_FINAL_TYPE(ConfabDaemon, confab_daemon, CONFAB, DAEMON, GObject)

ConfabDaemon *
confab_daemon_new(ConfabConfig *config, gboolean dev);
void
confab_daemon_set_user_mode(ConfabDaemon *self, gboolean user_mode);
gboolean
confab_daemon_start(ConfabDaemon *self, GError **error);
gint
confab_daemon_run(ConfabDaemon *self);
void
confab_daemon_stop(ConfabDaemon *self);
ConfabEngine *
confab_daemon_get_engine(ConfabDaemon *self);
gchar *
confab_daemon_get_url(ConfabDaemon *self);
gboolean
confab_daemon_has_bus(ConfabDaemon *self);
gboolean
confab_daemon_provision_dev(ConfabDaemon *self, gchar **agent_id, gchar **secret, GError **error);

G_END_DECLS
