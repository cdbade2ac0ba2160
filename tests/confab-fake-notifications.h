/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct _ConfabFakeNotifications ConfabFakeNotifications;

ConfabFakeNotifications *
confab_fake_notifications_new(void);
guint
confab_fake_notifications_count(ConfabFakeNotifications *self);
GVariant *
confab_fake_notifications_get(ConfabFakeNotifications *self, guint index);
gboolean
confab_fake_notifications_wait(ConfabFakeNotifications *self, guint n, guint timeout_ms);
void
confab_fake_notifications_invoke_action(ConfabFakeNotifications *self,
					guint index,
					const gchar *action);
gboolean
confab_fake_notifications_wait_closed(ConfabFakeNotifications *self, guint index, guint timeout_ms);
void
confab_fake_notifications_free(ConfabFakeNotifications *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabFakeNotifications, confab_fake_notifications_free)

G_END_DECLS
