/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabSecrets"

#include "config.h"

#ifdef HAVE_LIBSECRET
#include <libsecret/secret.h>
#endif
#include <string.h>

#include "secrets/confab-secret-store.h"
#include "util/confab-error.h"

/*
 * The Secret Service (GNOME Keyring, KeePassXC...) through libsecret, for
 * confabd --user: one secret per agent and kind, in the schema
 * org.confab.Confab1.Secret with the attributes agent_id and kind, in the
 * default collection (the login keyring). Every call is asynchronous: the
 * main loop never waits on the keyring.
 *
 * Whether there is a Secret Service is asked once (probe); without one, or
 * once one fails, it is unavailable, says so once, and callers keep the
 * secrets in the database.
 */

#define PROBE_TIMEOUT_SECONDS 10

struct _ConfabSecretStore {
	GObject parent_instance;
	gboolean available;
	gboolean warned;
};

G_DEFINE_FINAL_TYPE(ConfabSecretStore, confab_secret_store, G_TYPE_OBJECT)

static void
confab_secret_store_class_init(ConfabSecretStoreClass *klass)
{
}

static void
confab_secret_store_init(ConfabSecretStore *self)
{
}

/**
 * confab_secret_store_new:
 *
 * Returns: (transfer full): a secret store, unavailable until a probe
 *   succeeds
 */
ConfabSecretStore *
confab_secret_store_new(void)
{
	return g_object_new(CONFAB_TYPE_SECRET_STORE, NULL);
}

/**
 * confab_secret_store_is_available:
 *
 * Returns: whether secrets go to the keyring
 */
gboolean
confab_secret_store_is_available(ConfabSecretStore *self)
{
	g_return_val_if_fail(CONFAB_IS_SECRET_STORE(self), FALSE);
	return self->available;
}

/* Once the keyring is found missing or failing: say so once, and stop
 * using it. */
static void
give_up(ConfabSecretStore *self, const GError *error)
{
	self->available = FALSE;
	if (self->warned)
		return;
	self->warned = TRUE;
	g_message("no Secret Service (%s): upstream keys and tool secrets stay in the database",
		  error != NULL ? error->message : "libsecret is not built in");
}

#ifdef HAVE_LIBSECRET

static const SecretSchema *
schema(void)
{
	static const SecretSchema confab_schema = {
	    CONFAB_SECRET_SCHEMA,
	    SECRET_SCHEMA_NONE,
	    {
		{CONFAB_SECRET_ATTR_AGENT, SECRET_SCHEMA_ATTRIBUTE_STRING},
		{CONFAB_SECRET_ATTR_KIND, SECRET_SCHEMA_ATTRIBUTE_STRING},
		{NULL, 0},
	    },
	    0,
	    NULL,
	    NULL,
	    NULL,
	    NULL,
	    NULL,
	    NULL,
	    NULL,
	};
	return &confab_schema;
}

/* libsecret keeps the table until the call is over: its values are its own */
static GHashTable *
attributes(const gchar *agent_id, const gchar *kind)
{
	GHashTable *attrs = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
	g_hash_table_insert(attrs, (gpointer)CONFAB_SECRET_ATTR_AGENT, g_strdup(agent_id));
	if (kind != NULL)
		g_hash_table_insert(attrs, (gpointer)CONFAB_SECRET_ATTR_KIND, g_strdup(kind));
	return attrs;
}

static void
probe_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabSecretStore *self = g_task_get_source_object(task);
	g_autoptr(GError) error = NULL;
	gchar *none = secret_password_lookup_finish(result, &error);

	secret_password_free(none);
	if (error != NULL) {
		give_up(self, error);
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	self->available = TRUE;
	g_task_return_boolean(task, TRUE);
}

static void
timer_free(GSource *timer)
{
	g_source_destroy(timer);
	g_source_unref(timer);
}

static gboolean
probe_timeout(gpointer data)
{
	g_cancellable_cancel(data);
	return G_SOURCE_REMOVE;
}

/**
 * confab_secret_store_probe_async:
 * @self: a #ConfabSecretStore
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once it is known
 * @user_data: data for @callback
 *
 * Asks the Secret Service for nothing, at most 10 seconds: whether it
 * answers. Without one, says so once.
 */
void
confab_secret_store_probe_async(ConfabSecretStore *self,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);
	g_autoptr(GCancellable) deadline = g_cancellable_new();
	g_autoptr(GHashTable) attrs = attributes("", "probe");
	g_autoptr(GSource) timer = g_timeout_source_new_seconds(PROBE_TIMEOUT_SECONDS);

	g_task_set_source_tag(task, confab_secret_store_probe_async);
	g_source_set_callback(timer, probe_timeout, g_object_ref(deadline), g_object_unref);
	g_source_attach(timer, g_main_context_get_thread_default());
	g_task_set_task_data(task, g_source_ref(timer), (GDestroyNotify)timer_free);
	secret_password_lookupv(schema(), attrs, deadline, probe_cb, task);
}

static void
saved_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	g_autoptr(GError) error = NULL;

	if (!secret_password_store_finish(result, &error)) {
		give_up(g_task_get_source_object(task), error);
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	g_task_return_boolean(task, TRUE);
}

static void
looked_up_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	g_autoptr(GError) error = NULL;
	gchar *secret = secret_password_lookup_finish(result, &error);

	if (error != NULL) {
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	g_task_return_pointer(task, g_strdup(secret), g_free);
	secret_password_free(secret);
}

static void
cleared_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	g_autoptr(GError) error = NULL;

	secret_password_clear_finish(result, &error);
	if (error != NULL) {
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	g_task_return_boolean(task, TRUE);
}

#endif /* HAVE_LIBSECRET */

static gboolean
unavailable(GTask *task)
{
	ConfabSecretStore *self = g_task_get_source_object(task);
	if (self->available)
		return FALSE;
	g_task_return_new_error(task,
				CONFAB_ERROR,
				CONFAB_ERROR_NOT_IMPLEMENTED,
				"no Secret Service");
	return TRUE;
}

#ifndef HAVE_LIBSECRET
void
confab_secret_store_probe_async(ConfabSecretStore *self,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	give_up(self, NULL);
	unavailable(task);
}
#endif

gboolean
confab_secret_store_probe_finish(ConfabSecretStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/**
 * confab_secret_store_save_async:
 * @self: a #ConfabSecretStore
 * @agent_id: whose
 * @kind: which of its secrets (%CONFAB_SECRET_KIND_API_KEY...)
 * @label: what the keyring shows
 * @secret: the secret
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once it is stored
 * @user_data: data for @callback
 *
 * Stores (or replaces) a secret in the default collection. A failure makes
 * the store unavailable, and says so once.
 */
void
confab_secret_store_save_async(ConfabSecretStore *self,
			       const gchar *agent_id,
			       const gchar *kind,
			       const gchar *label,
			       const gchar *secret,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);

	g_task_set_source_tag(task, confab_secret_store_save_async);
	if (unavailable(task)) {
		g_object_unref(task);
		return;
	}
#ifdef HAVE_LIBSECRET
	{
		g_autoptr(GHashTable) attrs = attributes(agent_id, kind);
		secret_password_storev(schema(),
				       attrs,
				       SECRET_COLLECTION_DEFAULT,
				       label,
				       secret,
				       cancellable,
				       saved_cb,
				       task);
	}
#endif
}

gboolean
confab_secret_store_save_finish(ConfabSecretStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/**
 * confab_secret_store_lookup_async:
 * @self: a #ConfabSecretStore
 * @agent_id: whose
 * @kind: which of its secrets
 * @cancellable: (nullable): a #GCancellable
 * @callback: called with the secret
 * @user_data: data for @callback
 */
void
confab_secret_store_lookup_async(ConfabSecretStore *self,
				 const gchar *agent_id,
				 const gchar *kind,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);

	g_task_set_source_tag(task, confab_secret_store_lookup_async);
	if (unavailable(task)) {
		g_object_unref(task);
		return;
	}
#ifdef HAVE_LIBSECRET
	{
		g_autoptr(GHashTable) attrs = attributes(agent_id, kind);
		secret_password_lookupv(schema(), attrs, cancellable, looked_up_cb, task);
	}
#endif
}

/**
 * confab_secret_store_lookup_finish:
 *
 * Returns: (transfer full) (nullable): the secret; %NULL without an error
 *   when the keyring has none
 */
gchar *
confab_secret_store_lookup_finish(ConfabSecretStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * confab_secret_store_clear_async:
 * @self: a #ConfabSecretStore
 * @agent_id: whose
 * @kind: (nullable): which of its secrets; %NULL for all of them
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once they are gone
 * @user_data: data for @callback
 */
void
confab_secret_store_clear_async(ConfabSecretStore *self,
				const gchar *agent_id,
				const gchar *kind,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);

	g_task_set_source_tag(task, confab_secret_store_clear_async);
	if (unavailable(task)) {
		g_object_unref(task);
		return;
	}
#ifdef HAVE_LIBSECRET
	{
		g_autoptr(GHashTable) attrs = attributes(agent_id, kind);
		secret_password_clearv(schema(), attrs, cancellable, cleared_cb, task);
	}
#endif
}

gboolean
confab_secret_store_clear_finish(ConfabSecretStore *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}
