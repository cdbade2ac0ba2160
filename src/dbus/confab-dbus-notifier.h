/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* The desktop entry and the icon the notifications name */
#define CONFAB_DESKTOP_ID "org.confab.Confab1"

#define CONFAB_TYPE_DBUS_NOTIFIER (confab_dbus_notifier_get_type())
G_DECLARE_FINAL_TYPE(ConfabDbusNotifier, confab_dbus_notifier, CONFAB, DBUS_NOTIFIER, GObject)

ConfabDbusNotifier *
confab_dbus_notifier_new(GDBusConnection *bus);
void
confab_dbus_notifier_notify(ConfabDbusNotifier *self, const gchar *summary, const gchar *body);

/**
 * ConfabDbusNotifierActionFunc:
 * @action: the key of the action the person chose
 * @user_data: data given with the function
 *
 * A person chose an action of a notification (`ActionInvoked`).
 */
typedef void (*ConfabDbusNotifierActionFunc)(const gchar *action, gpointer user_data);

void
confab_dbus_notifier_ask(ConfabDbusNotifier *self,
			 const gchar *tag,
			 const gchar *summary,
			 const gchar *body,
			 const gchar *const *actions,
			 ConfabDbusNotifierActionFunc func,
			 gpointer user_data,
			 GDestroyNotify destroy);
void
confab_dbus_notifier_withdraw(ConfabDbusNotifier *self, const gchar *tag);
void
confab_dbus_notifier_take_over(ConfabDbusNotifier *self, const gchar *record);

G_END_DECLS
