/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

void
confab_dbus_caller_get_uid_async(GDBusMethodInvocation *invocation,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
gboolean
confab_dbus_caller_get_uid_finish(GAsyncResult *result, guint32 *uid, GError **error);
gboolean
confab_dbus_caller_get_uid_sync(GDBusMethodInvocation *invocation, guint32 *uid, GError **error);
gboolean
confab_dbus_caller_uid_is_admin(guint32 uid, const gchar *admin_group);
gchar *
confab_dbus_caller_user_name_for_uid(guint32 uid);

G_END_DECLS
