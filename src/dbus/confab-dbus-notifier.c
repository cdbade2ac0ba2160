/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabDbus"

#include "config.h"

#include "dbus/confab-dbus-notifier.h"

/*
 * Desktop notifications: org.freedesktop.Notifications.Notify on the bus
 * the daemon serves, so that on the session bus they reach the user's
 * notification server (GNOME Shell). Fire and forget: a desktop without a
 * notification server loses nothing but the bubble, and says so once.
 */

/* Notification servers show a few lines: a long answer is cut. */
#define BODY_MAX_CHARS 1000

struct _ConfabDbusNotifier {
	GObject parent_instance;
	GDBusConnection *bus; /* owned */
	gboolean warned;
};

G_DEFINE_FINAL_TYPE(ConfabDbusNotifier, confab_dbus_notifier, G_TYPE_OBJECT)

static void
confab_dbus_notifier_finalize(GObject *object)
{
	ConfabDbusNotifier *self = CONFAB_DBUS_NOTIFIER(object);
	g_clear_object(&self->bus);
	G_OBJECT_CLASS(confab_dbus_notifier_parent_class)->finalize(object);
}

static void
confab_dbus_notifier_class_init(ConfabDbusNotifierClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = confab_dbus_notifier_finalize;
}

static void
confab_dbus_notifier_init(ConfabDbusNotifier *self)
{
}

/**
 * confab_dbus_notifier_new:
 * @bus: the connection to send notifications on
 *
 * Returns: (transfer full): a notifier
 */
ConfabDbusNotifier *
confab_dbus_notifier_new(GDBusConnection *bus)
{
	ConfabDbusNotifier *self = g_object_new(CONFAB_TYPE_DBUS_NOTIFIER, NULL);
	g_return_val_if_fail(G_IS_DBUS_CONNECTION(bus), NULL);
	self->bus = g_object_ref(bus);
	return self;
}

static void
notified_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConfabDbusNotifier) self = user_data;
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) reply =
	    g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &error);

	if (reply != NULL || self->warned)
		return;
	self->warned = TRUE;
	g_message("no desktop notification could be shown: %s", error->message);
}

/* Notification servers read the body as a little markup: text stays text. */
static gchar *
body_text(const gchar *body)
{
	g_autofree gchar *cut = NULL;

	if (body == NULL)
		return g_strdup("");
	if (g_utf8_strlen(body, -1) <= BODY_MAX_CHARS)
		return g_markup_escape_text(body, -1);
	cut = g_utf8_substring(body, 0, BODY_MAX_CHARS);
	{
		g_autofree gchar *escaped = g_markup_escape_text(cut, -1);
		return g_strconcat(escaped, "…", NULL);
	}
}

/**
 * confab_dbus_notifier_notify:
 * @self: a #ConfabDbusNotifier
 * @summary: the first line
 * @body: (nullable): plain text, cut if long
 *
 * Shows a desktop notification from Confab.
 */
void
confab_dbus_notifier_notify(ConfabDbusNotifier *self, const gchar *summary, const gchar *body)
{
	g_autofree gchar *text = body_text(body);
	GVariantBuilder hints;

	g_return_if_fail(CONFAB_IS_DBUS_NOTIFIER(self));
	g_variant_builder_init(&hints, G_VARIANT_TYPE_VARDICT);
	g_variant_builder_add(&hints,
			      "{sv}",
			      "desktop-entry",
			      g_variant_new_string(CONFAB_DESKTOP_ID));
	g_dbus_connection_call(self->bus,
			       "org.freedesktop.Notifications",
			       "/org/freedesktop/Notifications",
			       "org.freedesktop.Notifications",
			       "Notify",
			       g_variant_new("(susss@asa{sv}i)",
					     "Confab",
					     (guint32)0,
					     CONFAB_DESKTOP_ID,
					     summary,
					     text,
					     g_variant_new_strv(NULL, 0),
					     &hints,
					     (gint32)-1),
			       G_VARIANT_TYPE("(u)"),
			       G_DBUS_CALL_FLAGS_NONE,
			       -1,
			       NULL,
			       notified_cb,
			       g_object_ref(self));
}
