/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-engine.h"
#include "dbus/confab-dbus-generated.h"
#include "model/confab-agent.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_DBUS_ADMIN_IMPL (confab_dbus_admin_impl_get_type())
G_DECLARE_FINAL_TYPE(ConfabDbusAdminImpl,
		     confab_dbus_admin_impl,
		     CONFAB,
		     DBUS_ADMIN_IMPL,
		     ConfabDbusAdminSkeleton)

ConfabDbusAdminImpl *
confab_dbus_admin_impl_new(ConfabEngine *engine, gboolean check_caller, const gchar *admin_group);

/* the a{sv} reader behind CreateAgent and UpdateAgent, for the fuzzer */
gboolean
confab_dbus_admin_impl_apply_agent_props(ConfabAgent *agent, GVariant *props, GError **error);

G_END_DECLS
