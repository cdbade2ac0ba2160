/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "confab-dbus-generated.h"
#include "confab-engine.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_DBUS_ADMIN_IMPL (confab_dbus_admin_impl_get_type())
G_DECLARE_FINAL_TYPE(ConfabDbusAdminImpl,
		     confab_dbus_admin_impl,
		     CONFAB,
		     DBUS_ADMIN_IMPL,
		     ConfabDbusAdminSkeleton)

ConfabDbusAdminImpl *
confab_dbus_admin_impl_new(ConfabEngine *engine, gboolean check_caller, const gchar *admin_group);

G_END_DECLS
