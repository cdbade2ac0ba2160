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
 * is closed without an answer calls nothing. A question that nobody can
 * answer any more is withdrawn (confab_dbus_notifier_withdraw(): the
 * server's CloseNotification), so that no prompt is shown that no one can
 * act on.
 *
 * The questions still shown are recorded in a file
 * (confab_dbus_notifier_take_over()), each with the bus's GUID and the
 * unique name of the notification server that showed it: a confabd that
 * was killed cannot withdraw its own, so the next one on the same bus
 * does, at start, from that file. The unique name makes sure that only
 * the server that showed them closes them (a notification server started
 * again numbers its notifications from 1 again). A confabd killed between
 * the server's answer to Notify and its record loses that one question:
 * the server's id is known only from that answer.
 */

/* Notification servers show a few lines: a long answer is cut. */
#define BODY_MAX_CHARS 1000

struct _ConfabDbusNotifier {
	GObject parent_instance;
	GDBusConnection *bus; /* owned */
	gboolean warned;
	GHashTable *asking; /* owned: notification id -> Ask, waiting for an answer */
	GHashTable *tags;   /* owned: tag -> Ask (unowned: asking's), shown or on the way */
	guint action_id;    /* ActionInvoked subscription */
	guint closed_id;    /* NotificationClosed subscription */
	gchar *record;	    /* owned, nullable: the file of the questions shown */
};

typedef struct {
	ConfabDbusNotifierActionFunc func;
	gpointer user_data;
	GDestroyNotify destroy;
	gchar *tag;	    /* owned */
	guint32 id;	    /* the server's, once it answered Notify */
	gchar *server;	    /* owned, nullable: the server's unique name, with @id */
	gboolean withdrawn; /* withdrawn before the server answered */
} Ask;

static void
ask_free(Ask *ask)
{
	if (ask->destroy != NULL)
		ask->destroy(ask->user_data);
	g_free(ask->tag);
	g_free(ask->server);
	g_free(ask);
}

static void
close_notification(ConfabDbusNotifier *self, const gchar *server, guint32 id)
{
	/* to the server that showed it, and to no other */
	g_dbus_connection_call(self->bus,
			       server,
			       "/org/freedesktop/Notifications",
			       "org.freedesktop.Notifications",
			       "CloseNotification",
			       g_variant_new("(u)", id),
			       NULL,
			       G_DBUS_CALL_FLAGS_NONE,
			       -1,
			       NULL,
			       NULL,
			       NULL);
}

/* The questions shown now, one a line: the bus's GUID, the server's unique
 * name, the notification's id, its tag. */
static void
record_write(ConfabDbusNotifier *self)
{
	g_autoptr(GString) text = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	GHashTableIter iter;
	gpointer value;

	if (self->record == NULL)
		return;
	g_hash_table_iter_init(&iter, self->asking);
	while (g_hash_table_iter_next(&iter, NULL, &value)) {
		Ask *ask = value;
		g_string_append_printf(text,
				       "%s\t%s\t%u\t%s\n",
				       g_dbus_connection_get_guid(self->bus),
				       ask->server,
				       ask->id,
				       ask->tag);
	}
	if (!g_file_set_contents_full(self->record,
				      text->str,
				      text->len,
				      G_FILE_SET_CONTENTS_CONSISTENT,
				      0600,
				      &error))
		g_message("recording the questions shown: %s", error->message);
}

/* A question is over (answered, closed or withdrawn): it goes from the
 * tables and from the record. */
static void
ask_forget(ConfabDbusNotifier *self, Ask *ask, gboolean free_it)
{
	if (g_hash_table_lookup(self->tags, ask->tag) == ask)
		g_hash_table_remove(self->tags, ask->tag);
	if (ask->id != 0 && g_hash_table_lookup(self->asking, GUINT_TO_POINTER(ask->id)) == ask) {
		if (free_it)
			g_hash_table_remove(self->asking, GUINT_TO_POINTER(ask->id));
		else
			g_hash_table_steal(self->asking, GUINT_TO_POINTER(ask->id));
		record_write(self);
	} else if (free_it) {
		ask_free(ask);
	}
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
	g_hash_table_unref(self->tags);
	g_hash_table_unref(self->asking);
	g_clear_object(&self->bus);
	g_free(self->record);
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
	self->tags = g_hash_table_new(g_str_hash, g_str_equal);
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
		ask = g_hash_table_lookup(self->asking, GUINT_TO_POINTER(id));
		if (ask != NULL && g_strcmp0(ask->server, sender) == 0)
			ask_forget(self, ask, TRUE);
		return;
	} else {
		return;
	}
	ask = g_hash_table_lookup(self->asking, GUINT_TO_POINTER(id));
	if (ask == NULL || g_strcmp0(ask->server, sender) != 0)
		return;
	ask_forget(self, ask, FALSE);
	/* answered: a resident notification would stay shown */
	close_notification(self, ask->server, ask->id);
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
	Ask *ask = asking->ask;
	g_autoptr(GError) error = NULL;
	g_autoptr(GDBusMessage) reply =
	    g_dbus_connection_send_message_with_reply_finish(G_DBUS_CONNECTION(source),
							     result,
							     &error);
	guint32 id = 0;

	if (reply != NULL)
		g_dbus_message_to_gerror(reply, &error);
	if (error != NULL ||
	    !g_variant_is_of_type(g_dbus_message_get_body(reply), G_VARIANT_TYPE("(u)"))) {
		if (!self->warned)
			g_message("no desktop notification could be shown: %s",
				  error != NULL ? error->message : "a bad answer");
		self->warned = TRUE;
		ask_forget(self, ask, TRUE);
	} else if (ask->withdrawn) {
		/* withdrawn while on its way: it goes at once */
		g_variant_get(g_dbus_message_get_body(reply), "(u)", &id);
		close_notification(self, g_dbus_message_get_sender(reply), id);
		ask_free(ask);
	} else {
		g_variant_get(g_dbus_message_get_body(reply), "(u)", &id);
		ask->id = id;
		ask->server = g_strdup(g_dbus_message_get_sender(reply));
		g_hash_table_replace(self->asking, GUINT_TO_POINTER(id), ask);
		record_write(self);
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
 *   answered, closed, withdrawn, or could not be shown
 * @tag: what the question is about (an approval's id), for
 *   confab_dbus_notifier_withdraw()
 *
 * Shows a notification that asks, and stays until answered or withdrawn.
 */
void
confab_dbus_notifier_ask(ConfabDbusNotifier *self,
			 const gchar *tag,
			 const gchar *summary,
			 const gchar *body,
			 const gchar *const *actions,
			 ConfabDbusNotifierActionFunc func,
			 gpointer user_data,
			 GDestroyNotify destroy)
{
	g_autofree gchar *text = body_text(body);
	g_autoptr(GDBusMessage) message = NULL;
	GVariantBuilder hints;
	Asking *asking = g_new0(Asking, 1);

	g_return_if_fail(CONFAB_IS_DBUS_NOTIFIER(self));
	g_return_if_fail(tag != NULL);
	asking->self = g_object_ref(self);
	asking->ask = g_new0(Ask, 1);
	asking->ask->func = func;
	asking->ask->user_data = user_data;
	asking->ask->destroy = destroy;
	asking->ask->tag = g_strdup(tag);
	g_hash_table_replace(self->tags, asking->ask->tag, asking->ask);
	g_variant_builder_init(&hints, G_VARIANT_TYPE_VARDICT);
	g_variant_builder_add(&hints,
			      "{sv}",
			      "desktop-entry",
			      g_variant_new_string(CONFAB_DESKTOP_ID));
	/* a question stays until answered */
	g_variant_builder_add(&hints, "{sv}", "urgency", g_variant_new_byte(2));
	g_variant_builder_add(&hints, "{sv}", "resident", g_variant_new_boolean(TRUE));
	/* a message rather than a call: its reply names the server that
	 * showed it, the one to withdraw it from */
	message = g_dbus_message_new_method_call("org.freedesktop.Notifications",
						 "/org/freedesktop/Notifications",
						 "org.freedesktop.Notifications",
						 "Notify");
	g_dbus_message_set_body(message,
				g_variant_new("(susss^asa{sv}i)",
					      "Confab",
					      (guint32)0,
					      CONFAB_DESKTOP_ID,
					      summary,
					      text,
					      actions,
					      &hints,
					      (gint32)0));
	g_dbus_connection_send_message_with_reply(self->bus,
						  message,
						  G_DBUS_SEND_MESSAGE_FLAGS_NONE,
						  -1,
						  NULL,
						  NULL,
						  asked_cb,
						  asking);
}

/**
 * confab_dbus_notifier_withdraw:
 * @self: a #ConfabDbusNotifier
 * @tag: the tag of a question confab_dbus_notifier_ask() showed
 *
 * Withdraws the question: nobody can answer it any more (its approval was
 * decided elsewhere, or timed out). Its function is not called. Nothing
 * happens for a tag not shown, or answered already.
 */
void
confab_dbus_notifier_withdraw(ConfabDbusNotifier *self, const gchar *tag)
{
	Ask *ask;

	g_return_if_fail(CONFAB_IS_DBUS_NOTIFIER(self));
	ask = g_hash_table_lookup(self->tags, tag);
	if (ask == NULL)
		return;
	g_hash_table_remove(self->tags, tag);
	if (ask->id == 0) {
		/* on its way: asked_cb() closes it */
		ask->withdrawn = TRUE;
		return;
	}
	close_notification(self, ask->server, ask->id);
	ask_forget(self, ask, TRUE);
}

/**
 * confab_dbus_notifier_take_over:
 * @self: a #ConfabDbusNotifier
 * @record: the file in which the questions shown are recorded
 *
 * Withdraws the questions that the confabd before this one recorded in
 * @record on this bus and left shown (it was killed: nobody can answer
 * them), then records this one's there.
 */
void
confab_dbus_notifier_take_over(ConfabDbusNotifier *self, const gchar *record)
{
	g_autofree gchar *contents = NULL;
	g_auto(GStrv) lines = NULL;
	guint withdrawn = 0;

	g_return_if_fail(CONFAB_IS_DBUS_NOTIFIER(self));
	g_return_if_fail(record != NULL);
	if (g_file_get_contents(record, &contents, NULL, NULL))
		lines = g_strsplit(contents, "\n", -1);
	for (guint i = 0; lines != NULL && lines[i] != NULL; i++) {
		g_auto(GStrv) fields = g_strsplit(lines[i], "\t", 4);
		guint64 id = 0;

		if (g_strv_length(fields) != 4 ||
		    !g_str_equal(fields[0], g_dbus_connection_get_guid(self->bus)) ||
		    !g_dbus_is_unique_name(fields[1]) ||
		    !g_ascii_string_to_unsigned(fields[2], 10, 1, G_MAXUINT32, &id, NULL))
			continue;
		close_notification(self, fields[1], (guint32)id);
		withdrawn++;
	}
	if (withdrawn > 0)
		g_message("withdrew %u desktop questions that the confabd before this one left",
			  withdrawn);
	g_free(self->record);
	self->record = g_strdup(record);
	record_write(self);
}
