/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabDbus"

#include "config.h"

#include <grp.h>
#include <pwd.h>
#include <sys/types.h>
#include <unistd.h>

#include "dbus/confab-dbus-caller.h"
#include "util/confab-error.h"

/*
 * Who is calling, from the bus's own records of the sender (never from an
 * argument): org.freedesktop.DBus.GetConnectionUnixUser.
 */

static GVariant *
uid_call_args(GDBusMethodInvocation *invocation)
{
	return g_variant_new("(s)", g_dbus_method_invocation_get_sender(invocation));
}

static gboolean
uid_from_reply(GVariant *reply, guint32 *uid, GError **error)
{
	if (reply == NULL)
		return FALSE;
	g_variant_get(reply, "(u)", uid);
	return TRUE;
}

static void
get_uid_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	g_autoptr(GVariant) reply = NULL;
	GError *error = NULL;
	guint32 uid = 0;

	reply = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &error);
	if (!uid_from_reply(reply, &uid, &error)) {
		g_task_return_error(task, error);
		return;
	}
	g_task_return_int(task, uid);
}

/**
 * confab_dbus_caller_get_uid_async:
 * @invocation: a method call
 * @cancellable: (nullable): a #GCancellable
 * @callback: called with the caller's uid
 * @user_data: data for @callback
 *
 * Asks the bus for the Unix user of the sender of @invocation.
 */
void
confab_dbus_caller_get_uid_async(GDBusMethodInvocation *invocation,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	GTask *task = g_task_new(NULL, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_dbus_caller_get_uid_async);
	g_dbus_connection_call(g_dbus_method_invocation_get_connection(invocation),
			       "org.freedesktop.DBus",
			       "/org/freedesktop/DBus",
			       "org.freedesktop.DBus",
			       "GetConnectionUnixUser",
			       uid_call_args(invocation),
			       G_VARIANT_TYPE("(u)"),
			       G_DBUS_CALL_FLAGS_NONE,
			       -1,
			       cancellable,
			       get_uid_cb,
			       task);
}

gboolean
confab_dbus_caller_get_uid_finish(GAsyncResult *result, guint32 *uid, GError **error)
{
	gssize value = g_task_propagate_int(G_TASK(result), error);
	if (value < 0)
		return FALSE;
	*uid = (guint32)value;
	return TRUE;
}

/**
 * confab_dbus_caller_get_uid_sync:
 * @invocation: a method call
 * @uid: (out): the caller's Unix user id
 * @error: return location for a #GError
 *
 * Blocking; for the g-authorize-method handler, which runs in its own
 * thread.
 */
gboolean
confab_dbus_caller_get_uid_sync(GDBusMethodInvocation *invocation, guint32 *uid, GError **error)
{
	g_autoptr(GVariant) reply = NULL;
	reply = g_dbus_connection_call_sync(g_dbus_method_invocation_get_connection(invocation),
					    "org.freedesktop.DBus",
					    "/org/freedesktop/DBus",
					    "org.freedesktop.DBus",
					    "GetConnectionUnixUser",
					    uid_call_args(invocation),
					    G_VARIANT_TYPE("(u)"),
					    G_DBUS_CALL_FLAGS_NONE,
					    -1,
					    NULL,
					    error);
	return uid_from_reply(reply, uid, error);
}

/**
 * confab_dbus_caller_user_name_for_uid:
 * @uid: a Unix user id
 *
 * Returns: (transfer full): the user's name, or `uid:N` if it has none
 */
gchar *
confab_dbus_caller_user_name_for_uid(guint32 uid)
{
	struct passwd pw, *result = NULL;
	gchar buf[4096];
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &result) == 0 && result != NULL)
		return g_strdup(result->pw_name);
	return g_strdup_printf("uid:%u", uid);
}

/**
 * confab_dbus_caller_uid_is_admin:
 * @uid: the caller
 * @admin_group: (nullable): the group whose members administer Confab
 *
 * Returns: %TRUE for root, for the user the daemon runs as, and for
 * members of @admin_group
 */
gboolean
confab_dbus_caller_uid_is_admin(guint32 uid, const gchar *admin_group)
{
	struct passwd pw, *pw_result = NULL;
	struct group gr, *gr_result = NULL;
	gchar pw_buf[4096];
	gchar gr_buf[16384];
	gid_t groups[256];
	gint n_groups = G_N_ELEMENTS(groups);

	if (uid == 0 || uid == getuid())
		return TRUE;
	if (admin_group == NULL || *admin_group == '\0')
		return FALSE;
	if (getgrnam_r(admin_group, &gr, gr_buf, sizeof(gr_buf), &gr_result) != 0 ||
	    gr_result == NULL)
		return FALSE;
	if (getpwuid_r(uid, &pw, pw_buf, sizeof(pw_buf), &pw_result) != 0 || pw_result == NULL)
		return FALSE;
	if (pw.pw_gid == gr.gr_gid)
		return TRUE;
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &n_groups) < 0)
		return FALSE;
	for (gint i = 0; i < n_groups; i++) {
		if (groups[i] == gr.gr_gid)
			return TRUE;
	}
	return FALSE;
}
