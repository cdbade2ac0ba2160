/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-engine.h"
#include "dbus/confab-dbus-generated.h"
#include "dbus/confab-dbus-notifier.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_DBUS_CHAT_IMPL (confab_dbus_chat_impl_get_type())
G_DECLARE_FINAL_TYPE(ConfabDbusChatImpl,
		     confab_dbus_chat_impl,
		     CONFAB,
		     DBUS_CHAT_IMPL,
		     ConfabDbusChatSkeleton)

ConfabDbusChatImpl *
confab_dbus_chat_impl_new(ConfabEngine *engine);
void
confab_dbus_chat_impl_set_notifier(ConfabDbusChatImpl *self,
				   ConfabDbusNotifier *notifier,
				   const gchar *admin_group);

G_END_DECLS
