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
 *
 * A notification can also ask (confab_dbus_notifier_ask()): it carries
 * actions, stays until the person answers (critical urgency, no expiry),
 * and the server's ActionInvoked signal for it calls back once. One that
 * is closed without an answer calls nothing.
 */

/* Notification servers show a few lines: a long answer is cut. */
#define BODY_MAX_CHARS 1000

struct _ConfabDbusNotifier {
	GObject parent_instance;
	GDBusConnection *bus; /* owned */
	gboolean warned;
	GHashTable *asking; /* owned: notification id -> Ask, waiting for an answer */
	guint action_id;    /* ActionInvoked subscription */
	guint closed_id;    /* NotificationClosed subscription */
};

typedef struct {
	ConfabDbusNotifierActionFunc func;
	gpointer user_data;
	GDestroyNotify destroy;
} Ask;

static void
ask_free(Ask *ask)
{
	if (ask->destroy != NULL)
		ask->destroy(ask->user_data);
	g_free(ask);
}

G_DEFINE_FINAL_TYPE(ConfabDbusNotifier, confab_dbus_notifier, G_TYPE_OBJECT)

static void
confab_dbus_notifier_finalize(GObject *object)
{
	ConfabDbusNotifier *self = CONFAB_DBUS_NOTIFIER(object);
	if (self->action_id != 0)
		g_dbus_connection_signal_unsubscribe(self->bus, self->action_id);
	if (self->closed_id != 0)
		g_dbus_connection_signal_unsubscribe(self->bus, self->closed_id);
	g_hash_table_unref(self->asking);
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
	self->asking = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)ask_free);
}

static void
on_notification_signal(GDBusConnection *connection,
		       const gchar *sender,
		       const gchar *path,
		       const gchar *interface,
		       const gchar *signal,
		       GVariant *parameters,
		       gpointer user_data)
{
	ConfabDbusNotifier *self = user_data;
	guint32 id = 0;
	const gchar *action = NULL;
	Ask *ask;

	if (g_str_equal(signal, "ActionInvoked") &&
	    g_variant_is_of_type(parameters, G_VARIANT_TYPE("(us)"))) {
		g_variant_get(parameters, "(u&s)", &id, &action);
	} else if (g_str_equal(signal, "NotificationClosed") &&
		   g_variant_is_of_type(parameters, G_VARIANT_TYPE("(uu)"))) {
		g_variant_get(parameters, "(uu)", &id, NULL);
		g_hash_table_remove(self->asking, GUINT_TO_POINTER(id));
		return;
	} else {
		return;
	}
	ask = g_hash_table_lookup(self->asking, GUINT_TO_POINTER(id));
	if (ask == NULL)
		return;
	g_hash_table_steal(self->asking, GUINT_TO_POINTER(id));
	ask->func(action, ask->user_data);
	ask_free(ask);
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
	self->action_id = g_dbus_connection_signal_subscribe(bus,
							     "org.freedesktop.Notifications",
							     "org.freedesktop.Notifications",
							     "ActionInvoked",
							     "/org/freedesktop/Notifications",
							     NULL,
							     G_DBUS_SIGNAL_FLAGS_NONE,
							     on_notification_signal,
							     self,
							     NULL);
	self->closed_id = g_dbus_connection_signal_subscribe(bus,
							     "org.freedesktop.Notifications",
							     "org.freedesktop.Notifications",
							     "NotificationClosed",
							     "/org/freedesktop/Notifications",
							     NULL,
							     G_DBUS_SIGNAL_FLAGS_NONE,
							     on_notification_signal,
							     self,
							     NULL);
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

typedef struct {
	ConfabDbusNotifier *self; /* owned */
	Ask *ask;		  /* owned */
} Asking;

static void
asked_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Asking *asking = user_data;
	ConfabDbusNotifier *self = asking->self;
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) reply =
	    g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &error);
	guint32 id = 0;

	if (reply == NULL) {
		if (!self->warned)
			g_message("no desktop notification could be shown: %s", error->message);
		self->warned = TRUE;
		ask_free(asking->ask);
	} else {
		g_variant_get(reply, "(u)", &id);
		g_hash_table_replace(self->asking, GUINT_TO_POINTER(id), asking->ask);
	}
	g_object_unref(self);
	g_free(asking);
}

/**
 * confab_dbus_notifier_ask:
 * @self: a #ConfabDbusNotifier
 * @summary: the first line
 * @body: (nullable): plain text, cut if long
 * @actions: pairs of an action key and its label, %NULL-terminated
 * @func: called with the key the person chooses, at most once
 * @user_data: data for @func
 * @destroy: (nullable): frees @user_data once the notification is
 *   answered, closed, or could not be shown
 *
 * Shows a notification that asks, and stays until answered.
 */
void
confab_dbus_notifier_ask(ConfabDbusNotifier *self,
			 const gchar *summary,
			 const gchar *body,
			 const gchar *const *actions,
			 ConfabDbusNotifierActionFunc func,
			 gpointer user_data,
			 GDestroyNotify destroy)
{
	g_autofree gchar *text = body_text(body);
	GVariantBuilder hints;
	Asking *asking = g_new0(Asking, 1);

	g_return_if_fail(CONFAB_IS_DBUS_NOTIFIER(self));
	asking->self = g_object_ref(self);
	asking->ask = g_new0(Ask, 1);
	asking->ask->func = func;
	asking->ask->user_data = user_data;
	asking->ask->destroy = destroy;
	g_variant_builder_init(&hints, G_VARIANT_TYPE_VARDICT);
	g_variant_builder_add(&hints,
			      "{sv}",
			      "desktop-entry",
			      g_variant_new_string(CONFAB_DESKTOP_ID));
	/* a question stays until answered */
	g_variant_builder_add(&hints, "{sv}", "urgency", g_variant_new_byte(2));
	g_variant_builder_add(&hints, "{sv}", "resident", g_variant_new_boolean(TRUE));
	g_dbus_connection_call(self->bus,
			       "org.freedesktop.Notifications",
			       "/org/freedesktop/Notifications",
			       "org.freedesktop.Notifications",
			       "Notify",
			       g_variant_new("(susss^asa{sv}i)",
					     "Confab",
					     (guint32)0,
					     CONFAB_DESKTOP_ID,
					     summary,
					     text,
					     actions,
					     &hints,
					     (gint32)0),
			       G_VARIANT_TYPE("(u)"),
			       G_DBUS_CALL_FLAGS_NONE,
			       -1,
			       NULL,
			       asked_cb,
			       asking);
}
