/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "confab-fake-notifications.h"

/*
 * A notification server for the tests: owns org.freedesktop.Notifications
 * on the test's private session bus, as GNOME Shell does on a desktop, and
 * records every Notify call (its parameters, as sent) for the test to read,
 * and every CloseNotification (answered with NotificationClosed, reason 3,
 * as the specification says).
 * Method calls arrive in the main context of the thread that created it:
 * confab_fake_notifications_wait() iterates it.
 */

#define NOTIFICATIONS_XML                                                                          \
	"<node><interface name='org.freedesktop.Notifications'>"                                   \
	"<method name='Notify'><arg type='s' direction='in'/><arg type='u' direction='in'/>"       \
	"<arg type='s' direction='in'/><arg type='s' direction='in'/>"                             \
	"<arg type='s' direction='in'/><arg type='as' direction='in'/>"                            \
	"<arg type='a{sv}' direction='in'/><arg type='i' direction='in'/>"                         \
	"<arg type='u' direction='out'/></method>"                                                 \
	"<method name='CloseNotification'><arg type='u' direction='in'/></method>"                 \
	"<method name='GetCapabilities'><arg type='as' direction='out'/></method>"                 \
	"<method name='GetServerInformation'><arg type='s' direction='out'/>"                      \
	"<arg type='s' direction='out'/><arg type='s' direction='out'/>"                           \
	"<arg type='s' direction='out'/></method>"                                                 \
	"</interface></node>"

struct _ConfabFakeNotifications {
	GDBusConnection *bus; /* owned */
	GDBusNodeInfo *info;  /* owned */
	GPtrArray *calls;     /* owned: GVariant, the parameters of each Notify */
	GArray *closed;	      /* owned: guint32, the ids CloseNotification closed */
	guint registration_id;
	guint name_id;
	gboolean name_acquired;
};

static void
method_call(GDBusConnection *connection,
	    const gchar *sender,
	    const gchar *object_path,
	    const gchar *interface_name,
	    const gchar *method_name,
	    GVariant *parameters,
	    GDBusMethodInvocation *invocation,
	    gpointer user_data)
{
	ConfabFakeNotifications *self = user_data;

	if (g_str_equal(method_name, "Notify")) {
		g_ptr_array_add(self->calls, g_variant_ref(parameters));
		g_dbus_method_invocation_return_value(invocation,
						      g_variant_new("(u)", self->calls->len));
	} else if (g_str_equal(method_name, "CloseNotification")) {
		guint32 id = 0;
		g_variant_get(parameters, "(u)", &id);
		g_array_append_val(self->closed, id);
		g_dbus_method_invocation_return_value(invocation, NULL);
		g_dbus_connection_emit_signal(connection,
					      NULL,
					      "/org/freedesktop/Notifications",
					      "org.freedesktop.Notifications",
					      "NotificationClosed",
					      g_variant_new("(uu)", id, 3),
					      NULL);
	} else if (g_str_equal(method_name, "GetCapabilities")) {
		const gchar *const caps[] = {"body", "actions", NULL};
		g_dbus_method_invocation_return_value(invocation, g_variant_new("(^as)", caps));
	} else {
		g_dbus_method_invocation_return_value(
		    invocation,
		    g_variant_new("(ssss)", "confab-test", "Confab", "1", "1.2"));
	}
}

static const GDBusInterfaceVTable vtable = {method_call, NULL, NULL, {0}};

static void
name_acquired(GDBusConnection *connection, const gchar *name, gpointer user_data)
{
	ConfabFakeNotifications *self = user_data;
	self->name_acquired = TRUE;
}

static gboolean
acquired(gpointer data)
{
	ConfabFakeNotifications *self = data;
	return self->name_acquired;
}

static gboolean
wait_for(gboolean (*condition)(gpointer), gpointer data, guint timeout_ms)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	while (!condition(data)) {
		if (g_get_monotonic_time() > deadline)
			return FALSE;
		while (g_main_context_iteration(NULL, FALSE))
			;
		g_usleep(2000);
	}
	return TRUE;
}

/**
 * confab_fake_notifications_new:
 *
 * Returns: (transfer full): a notification server that owns its name on
 *   the session bus
 */
ConfabFakeNotifications *
confab_fake_notifications_new(void)
{
	ConfabFakeNotifications *self = g_new0(ConfabFakeNotifications, 1);
	g_autoptr(GError) error = NULL;

	self->calls = g_ptr_array_new_with_free_func((GDestroyNotify)g_variant_unref);
	self->closed = g_array_new(FALSE, FALSE, sizeof(guint32));
	self->bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
	g_assert_no_error(error);
	self->info = g_dbus_node_info_new_for_xml(NOTIFICATIONS_XML, &error);
	g_assert_no_error(error);
	self->registration_id = g_dbus_connection_register_object(self->bus,
								  "/org/freedesktop/Notifications",
								  self->info->interfaces[0],
								  &vtable,
								  self,
								  NULL,
								  &error);
	g_assert_no_error(error);
	self->name_id = g_bus_own_name_on_connection(self->bus,
						     "org.freedesktop.Notifications",
						     G_BUS_NAME_OWNER_FLAGS_NONE,
						     name_acquired,
						     NULL,
						     self,
						     NULL);
	if (!wait_for(acquired, self, 20000))
		g_error("the fake notification server did not get its name within 20 s");
	return self;
}

guint
confab_fake_notifications_count(ConfabFakeNotifications *self)
{
	return self->calls->len;
}

/**
 * confab_fake_notifications_invoke_action:
 * @index: which Notify, from 0 (its id is @index + 1)
 * @action: the action's key
 *
 * Emits ActionInvoked for that notification, as a notification server
 * does when the person clicks one of its buttons.
 */
void
confab_fake_notifications_invoke_action(ConfabFakeNotifications *self,
					guint index,
					const gchar *action)
{
	g_autoptr(GError) error = NULL;

	g_assert_cmpuint(index, <, self->calls->len);
	g_dbus_connection_emit_signal(self->bus,
				      NULL,
				      "/org/freedesktop/Notifications",
				      "org.freedesktop.Notifications",
				      "ActionInvoked",
				      g_variant_new("(us)", index + 1, action),
				      &error);
	g_assert_no_error(error);
	g_dbus_connection_flush_sync(self->bus, NULL, &error);
	g_assert_no_error(error);
}

/**
 * confab_fake_notifications_get:
 * @index: which Notify, from 0
 *
 * Returns: (transfer none): its parameters, `(susssasa{sv}i)`
 */
GVariant *
confab_fake_notifications_get(ConfabFakeNotifications *self, guint index)
{
	g_assert_cmpuint(index, <, self->calls->len);
	return g_ptr_array_index(self->calls, index);
}

typedef struct {
	ConfabFakeNotifications *self;
	guint n;
} Enough;

static gboolean
enough(gpointer data)
{
	Enough *e = data;
	return e->self->calls->len >= e->n;
}

/**
 * confab_fake_notifications_wait:
 * @n: how many Notify calls in all
 * @timeout_ms: the deadline
 *
 * Returns: %TRUE once @n calls were recorded, %FALSE at the deadline
 */
gboolean
confab_fake_notifications_wait(ConfabFakeNotifications *self, guint n, guint timeout_ms)
{
	Enough e = {self, n};
	return wait_for(enough, &e, timeout_ms);
}

typedef struct {
	ConfabFakeNotifications *self;
	guint32 id;
} Closed;

static gboolean
is_closed(gpointer data)
{
	Closed *c = data;
	for (guint i = 0; i < c->self->closed->len; i++)
		if (g_array_index(c->self->closed, guint32, i) == c->id)
			return TRUE;
	return FALSE;
}

/**
 * confab_fake_notifications_wait_closed:
 * @index: which Notify, from 0 (its id is @index + 1)
 * @timeout_ms: the deadline
 *
 * Returns: %TRUE once CloseNotification closed it, %FALSE at the deadline
 */
gboolean
confab_fake_notifications_wait_closed(ConfabFakeNotifications *self, guint index, guint timeout_ms)
{
	Closed c = {self, index + 1};
	return wait_for(is_closed, &c, timeout_ms);
}

void
confab_fake_notifications_free(ConfabFakeNotifications *self)
{
	if (self == NULL)
		return;
	g_bus_unown_name(self->name_id);
	g_dbus_connection_unregister_object(self->bus, self->registration_id);
	g_dbus_node_info_unref(self->info);
	g_ptr_array_unref(self->calls);
	g_array_unref(self->closed);
	g_object_unref(self->bus);
	g_free(self);
}
