/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabDaemon"

#include "config.h"

#include <errno.h>
#include <glib-unix.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <gmodule.h>
#include <string.h>

#include "confab-daemon.h"
#include "dbus/confab-dbus-admin-impl.h"
#include "dbus/confab-dbus-chat-impl.h"
#include "dbus/confab-dbus-search-impl.h"
#include "http/confab-http-threads.h"
#include "providers/confab-provider-echo.h"
#include "providers/confab-provider-openai.h"
#include "store/postgres/confab-store-postgres.h" /* its types; the code is a module */
#include "store/sqlite/confab-store-sqlite.h"
#include "util/confab-error.h"
#include "util/confab-sd-listen.h"
#include "util/confab-sd-notify.h"

/*
 * The daemon object: it owns everything that lives as long as the process
 * (config, store, engine, HTTP server, bus name) and the stop sequence:
 * refuse new turns with 503, let running ones end within the grace period
 * (then cancel them: they store what they have as incomplete), let the last
 * responses flush, stop serving, drain the writer, exit 0.
 */

#define CONFAB_BUS_NAME	   "org.confab.Confab1"
#define CONFAB_OBJECT_PATH "/org/confab/Confab1"
#define FLUSH_DEADLINE_US  (2 * G_USEC_PER_SEC)

struct _ConfabDaemon {
	GObject parent_instance;
	ConfabConfig *config; /* owned */
	gboolean dev;
	gboolean user_mode;	      /* confabd --user: the session owner's own daemon */
	GMainLoop *loop;	      /* owned */
	ConfabStore *store;	      /* owned */
	ConfabEngine *engine;	      /* owned */
	ConfabHttpThreads *http;      /* owned */
	GDBusConnection *bus;	      /* owned */
	ConfabDbusAdminImpl *admin;   /* owned */
	ConfabDbusChatImpl *chat;     /* owned */
	ConfabDbusSearchImpl *search; /* owned: GNOME Shell's search provider */
	ConfabDbusNotifier *notifier; /* owned */
	guint name_id;
	gboolean name_acquired;
	gboolean stopping;
	guint grace_id;
	guint flush_id;
	gint64 flush_deadline;
	gint exit_code;
	guint sigint_id;
	guint sigterm_id;
};

G_DEFINE_FINAL_TYPE(ConfabDaemon, confab_daemon, G_TYPE_OBJECT)

static void
confab_daemon_finalize(GObject *object)
{
	ConfabDaemon *self = CONFAB_DAEMON(object);

	g_clear_handle_id(&self->grace_id, g_source_remove);
	g_clear_handle_id(&self->flush_id, g_source_remove);
	g_clear_handle_id(&self->sigint_id, g_source_remove);
	g_clear_handle_id(&self->sigterm_id, g_source_remove);
	if (self->name_id != 0)
		g_bus_unown_name(self->name_id);
	if (self->admin != NULL)
		g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(self->admin));
	if (self->chat != NULL)
		g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(self->chat));
	if (self->search != NULL)
		g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(self->search));
	g_clear_object(&self->admin);
	g_clear_object(&self->chat);
	g_clear_object(&self->search);
	g_clear_object(&self->notifier);
	g_clear_object(&self->bus);
	g_clear_object(&self->http);
	g_clear_object(&self->engine);
	if (self->store != NULL)
		confab_store_close(self->store);
	g_clear_object(&self->store);
	g_clear_pointer(&self->loop, g_main_loop_unref);
	g_clear_pointer(&self->config, confab_config_free);
	G_OBJECT_CLASS(confab_daemon_parent_class)->finalize(object);
}

static void
confab_daemon_class_init(ConfabDaemonClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_daemon_finalize;
}

static void
confab_daemon_init(ConfabDaemon *self)
{
	self->loop = g_main_loop_new(NULL, FALSE);
}

/**
 * confab_daemon_new:
 * @config: (transfer full): the settings
 * @dev: whether this is `confabd --dev`
 *
 * Returns: (transfer full): a daemon, not started
 */
ConfabDaemon *
confab_daemon_new(ConfabConfig *config, gboolean dev)
{
	ConfabDaemon *self = g_object_new(CONFAB_TYPE_DAEMON, NULL);
	self->config = config;
	self->dev = dev;
	return self;
}

/**
 * confab_daemon_set_user_mode:
 * @self: a #ConfabDaemon, not started
 * @user_mode: whether this is `confabd --user`
 *
 * The per-user daemon keeps upstream keys in the Secret Service.
 */
void
confab_daemon_set_user_mode(ConfabDaemon *self, gboolean user_mode)
{
	g_return_if_fail(CONFAB_IS_DAEMON(self));
	self->user_mode = user_mode;
}

/**
 * confab_daemon_get_engine:
 *
 * Returns: (transfer none): the engine, once started
 */
ConfabEngine *
confab_daemon_get_engine(ConfabDaemon *self)
{
	return self->engine;
}

/**
 * confab_daemon_get_url:
 *
 * Returns: (transfer full): where the v1 API listens
 */
gchar *
confab_daemon_get_url(ConfabDaemon *self)
{
	return confab_http_threads_get_url(self->http);
}

gboolean
confab_daemon_has_bus(ConfabDaemon *self)
{
	return self->name_acquired;
}

/* ---------- D-Bus ---------- */

static void
on_name_acquired(GDBusConnection *connection, const gchar *name, gpointer user_data)
{
	ConfabDaemon *self = user_data;
	self->name_acquired = TRUE;
	g_debug("acquired %s", name);
	/* the confabd before this one on the bus may have been killed with
	 * questions shown: nobody can answer them any more */
	if (self->notifier != NULL && g_strcmp0(self->config->bus, "session") == 0) {
		g_autofree gchar *record =
		    g_build_filename(self->config->state_dir, "desktop-questions", NULL);
		confab_dbus_notifier_take_over(self->notifier, record);
	}
}

static void
on_name_lost(GDBusConnection *connection, const gchar *name, gpointer user_data)
{
	ConfabDaemon *self = user_data;
	if (self->dev) {
		/* a second dev daemon: it still serves HTTP */
		if (!self->name_acquired)
			g_printerr(_("confabd: %s is taken on the session bus; D-Bus "
				     "administration is off\n"),
				   name);
		self->name_acquired = FALSE;
		return;
	}
	g_critical("lost the bus name %s; is another confabd running?", name);
	self->exit_code = 1;
	confab_daemon_stop(self);
}

/* GNOME Shell's search, in both modes; the session owner's on the
 * session bus, where the desktop's notifications are too. */
static gboolean
export_search_provider(ConfabDaemon *self, GError **error)
{
	self->notifier = confab_dbus_notifier_new(self->bus);
	self->search = confab_dbus_search_impl_new(self->engine, self->notifier);
	return g_dbus_interface_skeleton_export(G_DBUS_INTERFACE_SKELETON(self->search),
						self->bus,
						CONFAB_SEARCH_PROVIDER_PATH,
						error);
}

static gboolean
export_dbus(ConfabDaemon *self, GError **error)
{
	GBusType bus_type;
	gboolean system_bus;
	g_autofree gchar *url = confab_http_threads_get_url(self->http);

	if (g_strcmp0(self->config->bus, "none") == 0)
		return TRUE;
	system_bus = g_strcmp0(self->config->bus, "system") == 0;
	if (!system_bus && g_strcmp0(self->config->bus, "session") != 0) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_INVALID_VALUE,
			    "bus must be system, session or none, not '%s'",
			    self->config->bus);
		return FALSE;
	}
	bus_type = system_bus ? G_BUS_TYPE_SYSTEM : G_BUS_TYPE_SESSION;
	self->bus = g_bus_get_sync(bus_type, NULL, error);
	if (self->bus == NULL) {
		g_prefix_error(error, "connecting to the %s bus: ", self->config->bus);
		return FALSE;
	}
	g_dbus_connection_set_exit_on_close(self->bus, FALSE);

	self->admin = confab_dbus_admin_impl_new(self->engine, system_bus, CONFAB_ADMIN_GROUP);
	confab_dbus_admin_set_listen_address(CONFAB_DBUS_ADMIN(self->admin), url);
	if (!g_dbus_interface_skeleton_export(G_DBUS_INTERFACE_SKELETON(self->admin),
					      self->bus,
					      CONFAB_OBJECT_PATH,
					      error))
		return FALSE;
	self->chat = confab_dbus_chat_impl_new(self->engine);
	if (!g_dbus_interface_skeleton_export(G_DBUS_INTERFACE_SKELETON(self->chat),
					      self->bus,
					      CONFAB_OBJECT_PATH,
					      error))
		return FALSE;
	if (!export_search_provider(self, error))
		return FALSE;
	/* Send turns ask for approvals on the desktop: the session bus's */
	confab_dbus_chat_impl_set_notifier(self->chat,
					   system_bus ? NULL : self->notifier,
					   CONFAB_ADMIN_GROUP);
	self->name_id = g_bus_own_name_on_connection(self->bus,
						     CONFAB_BUS_NAME,
						     G_BUS_NAME_OWNER_FLAGS_DO_NOT_QUEUE,
						     on_name_acquired,
						     on_name_lost,
						     self,
						     NULL);
	return TRUE;
}

/* ---------- start ---------- */

static gboolean
ensure_state_dir(const gchar *dir, GError **error)
{
	if (g_mkdir_with_parents(dir, 0700) < 0) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_FAILED,
			    "creating %s: %s",
			    dir,
			    g_strerror(errno));
		return FALSE;
	}
	/* conversations and token hashes live here: nobody else reads it */
	if (g_chmod(dir, 0700) < 0)
		g_warning("making %s private: %s", dir, g_strerror(errno));
	return TRUE;
}

/* [store] backend: SQLite in the state directory, or a PostgreSQL database
 * (migrated and joined before anything is served). */
/* The PostgreSQL store, from its module (src/meson.build says why):
 * $CONFAB_MODULE_DIR (the build tree's, for the tests) or CONFAB_MODULEDIR.
 * Loaded once and never unloaded: its types stay registered. */
typedef struct {
	ConfabStorePostgres *(*new_store)(const gchar *url,
					  const gchar *password,
					  guint pool_size,
					  guint lease_seconds,
					  GError **error);
	gchar *(*read_password_file)(const gchar *path, GError **error);
} PostgresModule;

static gboolean
load_postgres(PostgresModule *pg, GError **error)
{
	const gchar *dir = g_getenv("CONFAB_MODULE_DIR");
	g_autofree gchar *path =
	    g_build_filename(dir != NULL && *dir != '\0' ? dir : CONFAB_MODULEDIR,
			     "confab-store-postgres.so",
			     NULL);
	GModule *module = g_module_open(path, G_MODULE_BIND_LOCAL);

	if (module == NULL ||
	    !g_module_symbol(module, "confab_store_postgres_new", (gpointer *)&pg->new_store) ||
	    !g_module_symbol(module,
			     "confab_store_postgres_read_password_file",
			     (gpointer *)&pg->read_password_file)) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_FAILED,
			    "cannot load the PostgreSQL store: %s",
			    g_module_error());
		if (module != NULL)
			g_module_close(module);
		return FALSE;
	}
	g_module_make_resident(module);
	return TRUE;
}

/* [desktop] search_index: the full-text index serves GNOME Shell's search,
 * which asks on the session bus only; "auto" keeps it there (confabd
 * --user, --dev) and spares a system service its cost per turn. */
static gboolean
resolve_search_index(ConfabConfig *config, gboolean *search_index, GError **error)
{
	const gchar *value = config->desktop_search_index;

	if (g_strcmp0(value, "auto") == 0) {
		*search_index = g_strcmp0(config->bus, "session") == 0;
		return TRUE;
	}
	if (g_strcmp0(value, "true") == 0 || g_strcmp0(value, "false") == 0) {
		*search_index = g_str_equal(value, "true");
		return TRUE;
	}
	g_set_error(error,
		    CONFAB_ERROR,
		    CONFAB_ERROR_INVALID_VALUE,
		    "[desktop] search_index must be auto, true or false, not '%s'",
		    value);
	return FALSE;
}

static ConfabStore *
open_store(ConfabConfig *config, GError **error)
{
	const gchar *password_file = config->store_password_file;
	g_autofree gchar *password = NULL;
	g_autofree gchar *db_path = NULL;
	ConfabStorePostgres *store;
	PostgresModule pg;

	if (g_strcmp0(config->store_backend, "sqlite") == 0) {
		gboolean search_index;
		ConfabStoreSqlite *sqlite;
		if (!resolve_search_index(config, &search_index, error))
			return NULL;
		db_path = g_build_filename(config->state_dir, "confab.db", NULL);
		sqlite = confab_store_sqlite_new(db_path, config->read_connections, error);
		if (sqlite != NULL)
			confab_store_sqlite_set_search_index(sqlite, search_index);
		return CONFAB_STORE(sqlite);
	}
	if (g_strcmp0(config->store_backend, "postgresql") != 0) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_INVALID_VALUE,
			    "[store] backend must be sqlite or postgresql, not '%s'",
			    config->store_backend);
		return NULL;
	}
	if (config->store_url == NULL || *config->store_url == '\0') {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_INVALID_VALUE,
				    "[store] backend postgresql needs a url");
		return NULL;
	}
	if (!load_postgres(&pg, error))
		return NULL;
	if (password_file != NULL && *password_file != '\0') {
		password = pg.read_password_file(password_file, error);
		if (password == NULL)
			return NULL;
	}
	store = pg.new_store(config->store_url,
			     password,
			     config->store_pool_size,
			     config->store_instance_lease,
			     error);
	if (password != NULL)
		memset(password, 0, strlen(password));
	return CONFAB_STORE(store);
}

static gboolean
on_signal(gpointer user_data)
{
	ConfabDaemon *self = user_data;
	if (self->stopping) {
		/* a second signal: do not wait for the grace period */
		confab_engine_cancel_turns(self->engine);
		return G_SOURCE_CONTINUE;
	}
	confab_daemon_stop(self);
	return G_SOURCE_CONTINUE;
}

static void
engine_loaded_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	GAsyncResult **out = user_data;
	*out = g_object_ref(result);
}

/* Fills the engine's caches before anything is served: the main loop does
 * not run yet, so its context is iterated here. */
static gboolean
load_engine(ConfabDaemon *self, GError **error)
{
	g_autoptr(GAsyncResult) result = NULL;

	confab_engine_load_async(self->engine, NULL, engine_loaded_cb, &result);
	while (result == NULL)
		g_main_context_iteration(NULL, TRUE);
	return confab_engine_load_finish(self->engine, result, error);
}

/* confabd --user: agents' secrets in the Secret Service, when one answers
 * (asked before the agents are loaded, the loop iterated meanwhile). */
static void
use_keyring(ConfabDaemon *self)
{
	g_autoptr(ConfabSecretStore) secrets = confab_secret_store_new();
	g_autoptr(GAsyncResult) result = NULL;

	confab_secret_store_probe_async(secrets, NULL, engine_loaded_cb, &result);
	while (result == NULL)
		g_main_context_iteration(NULL, TRUE);
	/* without one it has said so, once; keys stay in the database */
	confab_secret_store_probe_finish(secrets, result, NULL);
	confab_engine_set_secret_store(self->engine, secrets);
}

static ConfabProviderOpenai *
new_openai_provider(ConfabDaemon *self)
{
	return confab_provider_openai_new(&(ConfabProviderOpenaiOptions){
	    .connect_timeout = self->config->upstream_connect_timeout,
	    .first_byte_timeout = self->config->upstream_first_byte_timeout,
	    .idle_timeout = self->config->upstream_idle_timeout,
	    .total_timeout = self->config->upstream_total_timeout,
	    .max_retries = self->config->upstream_max_retries,
	    .max_connections = self->config->upstream_max_connections,
	    .max_answer_bytes = self->config->max_answer_bytes,
	    .credentials_dir = self->config->credentials_dir,
	});
}

/* A serving thread's own providers: its upstream connections stay on its
 * context. */
static void
add_thread_providers(GMainContext *context, gpointer user_data)
{
	ConfabDaemon *self = user_data;
	g_autoptr(ConfabProviderEcho) echo = confab_provider_echo_new();
	g_autoptr(ConfabProviderOpenai) openai = new_openai_provider(self);

	confab_engine_add_context_provider(self->engine, context, CONFAB_PROVIDER(echo));
	confab_engine_add_context_provider(self->engine, context, CONFAB_PROVIDER(openai));
}

/**
 * confab_daemon_start:
 * @self: a #ConfabDaemon
 * @error: return location for a #GError
 *
 * Opens the store, loads the engine, starts serving HTTP and, unless the
 * bus is "none", exports the D-Bus interfaces and takes the bus name.
 */
/* Socket activation (confabd.socket, or systemd-socket-activate): the HTTP
 * listener is the socket systemd passed, and the listen address is unused. */
static gboolean
use_inherited_socket(ConfabDaemon *self, GError **error)
{
	gint n = confab_sd_listen_fds(error);

	if (n < 0)
		return FALSE;
	if (n == 0)
		return TRUE;
	if (n > 1) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_INVALID_VALUE,
			    "socket activation passed %d sockets; confabd listens on one",
			    n);
		return FALSE;
	}
	g_debug("serving HTTP on the socket systemd passed, not on %s", self->config->listen);
	confab_http_threads_set_listen_fd(self->http, CONFAB_SD_LISTEN_FDS_START);
	return TRUE;
}

gboolean
confab_daemon_start(ConfabDaemon *self, GError **error)
{
	g_autoptr(ConfabProviderEcho) echo = NULL;
	g_autoptr(ConfabProviderOpenai) openai = NULL;
	g_autoptr(GError) bus_error = NULL;

	confab_error_register_dbus();
	if (!ensure_state_dir(self->config->state_dir, error))
		return FALSE;
	self->store = open_store(self->config, error);
	if (self->store == NULL)
		return FALSE;
	self->engine = confab_engine_new(self->config, self->store);
	if (self->user_mode)
		use_keyring(self);
	if (!load_engine(self, error))
		return FALSE;
	echo = confab_provider_echo_new();
	confab_engine_add_provider(self->engine, CONFAB_PROVIDER(echo));
	openai = new_openai_provider(self);
	confab_engine_add_provider(self->engine, CONFAB_PROVIDER(openai));

	self->http = confab_http_threads_new(self->engine, self->config->serving_threads);
	if (!use_inherited_socket(self, error))
		return FALSE;
	if (!confab_http_threads_start(self->http,
				       self->config->listen,
				       add_thread_providers,
				       self,
				       error))
		return FALSE;
	if (self->config->http_public_url == NULL || *self->config->http_public_url == '\0') {
		/* [http] public_url defaults to where confabd listens */
		g_autofree gchar *url = confab_http_threads_get_url(self->http);
		g_autofree gchar *public_url = confab_mcp_authorizations_public_url(
		    NULL,
		    g_str_has_prefix(url, "http://") ? url + strlen("http://") : url);
		confab_mcp_authorizations_set_public_url(
		    confab_engine_get_mcp_authorizations(self->engine),
		    public_url);
	}

	if (!export_dbus(self, &bus_error)) {
		if (!self->dev) {
			g_propagate_error(error, g_steal_pointer(&bus_error));
			return FALSE;
		}
		g_printerr(_("confabd: no session bus (%s); D-Bus administration is off\n"),
			   bus_error->message);
		g_clear_object(&self->admin);
		g_clear_object(&self->chat);
		g_clear_object(&self->search);
		g_clear_object(&self->notifier);
		g_clear_object(&self->bus);
	}

	self->sigint_id = g_unix_signal_add(SIGINT, on_signal, self);
	self->sigterm_id = g_unix_signal_add(SIGTERM, on_signal, self);
	return TRUE;
}

/* ---------- stop ---------- */

static gboolean
flush_check(gpointer user_data)
{
	ConfabDaemon *self = user_data;
	/* the last chunks and [DONE]s are on their way: let them go */
	if (confab_http_threads_get_active_requests(self->http) > 0 &&
	    g_get_monotonic_time() < self->flush_deadline)
		return G_SOURCE_CONTINUE;
	self->flush_id = 0;
	g_main_loop_quit(self->loop);
	return G_SOURCE_REMOVE;
}

static void
on_drained(ConfabEngine *engine, gpointer user_data)
{
	ConfabDaemon *self = user_data;
	g_clear_handle_id(&self->grace_id, g_source_remove);
	if (self->flush_id != 0)
		return;
	self->flush_deadline = g_get_monotonic_time() + FLUSH_DEADLINE_US;
	self->flush_id = g_timeout_add(20, flush_check, self);
}

static gboolean
on_grace_over(gpointer user_data)
{
	ConfabDaemon *self = user_data;
	self->grace_id = 0;
	g_message("grace period over: cancelling %u running turns",
		  confab_engine_get_active_turns(self->engine));
	confab_engine_cancel_turns(self->engine);
	return G_SOURCE_REMOVE;
}

/**
 * confab_daemon_stop:
 * @self: a #ConfabDaemon
 *
 * Begins the graceful stop; confab_daemon_run() returns when it is over.
 */
void
confab_daemon_stop(ConfabDaemon *self)
{
	if (self->stopping)
		return;
	self->stopping = TRUE;
	confab_sd_notify("STOPPING=1");
	g_message("stopping: %u turns running", confab_engine_get_active_turns(self->engine));
	g_signal_connect(self->engine, "drained", G_CALLBACK(on_drained), self);
	self->grace_id =
	    g_timeout_add_seconds(MAX(self->config->shutdown_grace, 1), on_grace_over, self);
	confab_engine_begin_shutdown(self->engine);
}

static void
tools_stopped_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	gboolean *done = user_data;
	g_autoptr(GError) error = NULL;

	if (!confab_toolbox_shutdown_finish(CONFAB_TOOLBOX(source), result, &error))
		g_warning("stopping the agents' tool servers: %s", error->message);
	*done = TRUE;
}

/* The agents' tool servers: SIGTERM, SIGKILL 5 s later; at most 10 s. */
static void
stop_tool_servers(ConfabDaemon *self)
{
	gboolean done = FALSE;

	confab_toolbox_shutdown_async(confab_engine_get_toolbox(self->engine),
				      NULL,
				      tools_stopped_cb,
				      &done);
	while (!done)
		g_main_context_iteration(NULL, TRUE);
}

/**
 * confab_daemon_run:
 * @self: a started #ConfabDaemon
 *
 * Serves until stopped, then stops serving and drains the store.
 *
 * Returns: the exit code
 */
gint
confab_daemon_run(ConfabDaemon *self)
{
	confab_sd_notify("READY=1");
	g_main_loop_run(self->loop);

	confab_http_threads_stop(self->http);
	stop_tool_servers(self);
	if (self->name_id != 0) {
		g_bus_unown_name(self->name_id);
		self->name_id = 0;
	}
	if (self->admin != NULL)
		g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(self->admin));
	if (self->chat != NULL)
		g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(self->chat));
	if (self->search != NULL)
		g_dbus_interface_skeleton_unexport(G_DBUS_INTERFACE_SKELETON(self->search));
	g_clear_object(&self->admin);
	g_clear_object(&self->chat);
	g_clear_object(&self->search);
	/* every acknowledged write is committed before we exit */
	confab_store_close(self->store);
	if (self->bus != NULL)
		g_dbus_connection_flush_sync(self->bus, NULL, NULL);
	return self->exit_code;
}

/* ---------- --dev ---------- */

typedef struct {
	GMainLoop *loop;
	GAsyncResult *result;
} SyncWait;

static void
sync_wait_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	SyncWait *wait = user_data;
	wait->result = g_object_ref(result);
	g_main_loop_quit(wait->loop);
}

static GAsyncResult *
sync_wait_run(SyncWait *wait)
{
	g_main_loop_run(wait->loop);
	return wait->result;
}

/**
 * confab_daemon_provision_dev:
 * @self: a started #ConfabDaemon
 * @agent_id: (out) (transfer full): the demo agent
 * @secret: (out) (transfer full): a fresh dev token
 * @error: return location for a #GError
 *
 * For `confabd --dev`: makes sure there is a demo agent (the echo provider,
 * or the openai one when CONFAB_OPENAI_BASE_URL is set), revokes the dev
 * tokens of earlier runs and mints a new one, so that a secret is never
 * kept anywhere but in the terminal that shows it.
 */
gboolean
confab_daemon_provision_dev(ConfabDaemon *self, gchar **agent_id, gchar **secret, GError **error)
{
	const gchar *base_url = g_getenv("CONFAB_OPENAI_BASE_URL");
	const gchar *provider = base_url != NULL && *base_url != '\0' ? "openai" : "echo";
	const gchar *const scopes[] = {"chat.completions", NULL};
	g_autoptr(GPtrArray) agents = confab_engine_list_agents(self->engine);
	g_autoptr(GPtrArray) tokens = NULL;
	g_autoptr(ConfabAgent) agent = NULL;
	g_autoptr(ConfabToken) token = NULL;
	g_autoptr(GMainContext) context = g_main_context_new();
	SyncWait wait = {NULL, NULL};

	for (guint i = 0; i < agents->len; i++) {
		ConfabAgent *candidate = g_ptr_array_index(agents, i);
		if (g_strcmp0(confab_agent_get_name(candidate), "demo") == 0 &&
		    g_strcmp0(confab_agent_get_provider(candidate), provider) == 0 &&
		    g_strcmp0(confab_agent_get_base_url(candidate),
			      g_str_equal(provider, "openai") ? base_url : NULL) == 0)
			agent = g_object_ref(candidate);
	}

	g_main_context_push_thread_default(context);
	wait.loop = g_main_loop_new(context, FALSE);
	if (agent == NULL) {
		g_autofree gchar *id =
		    confab_id_generator_next(confab_engine_get_id_generator(self->engine),
					     CONFAB_PREFIX_AGENT);
		gint64 now = g_get_real_time() / G_USEC_PER_SEC;
		agent = confab_agent_new();
		confab_agent_set_id(agent, id);
		confab_agent_set_name(agent, "demo");
		confab_agent_set_provider(agent, provider);
		confab_agent_set_instructions(agent, "You are a helpful assistant.");
		if (g_str_equal(provider, "openai")) {
			confab_agent_set_base_url(agent, base_url);
			confab_agent_set_upstream_model(agent,
							g_getenv("CONFAB_OPENAI_MODEL")
							    ?: "gpt-4o-mini");
			confab_agent_set_api_key(agent, g_getenv("CONFAB_OPENAI_API_KEY"));
		}
		confab_agent_set_created_at(agent, now);
		confab_agent_set_updated_at(agent, now);
		confab_engine_save_agent_async(self->engine, agent, NULL, sync_wait_cb, &wait);
		if (!confab_engine_save_agent_finish(self->engine, sync_wait_run(&wait), error)) {
			g_clear_object(&wait.result);
			g_main_loop_unref(wait.loop);
			g_main_context_pop_thread_default(context);
			return FALSE;
		}
		g_clear_object(&wait.result);
	}

	tokens = confab_engine_list_tokens(self->engine, "dev");
	for (guint i = 0; i < tokens->len; i++) {
		ConfabToken *old = g_ptr_array_index(tokens, i);
		if (g_strcmp0(confab_token_get_name(old), "confabd --dev") != 0 ||
		    confab_token_get_revoked_at(old) != 0)
			continue;
		confab_engine_revoke_token_async(self->engine,
						 confab_token_get_id(old),
						 NULL,
						 sync_wait_cb,
						 &wait);
		confab_engine_revoke_token_finish(self->engine, sync_wait_run(&wait), NULL);
		g_clear_object(&wait.result);
	}
	confab_engine_create_token_async(self->engine,
					 "dev",
					 "confabd --dev",
					 scopes,
					 NULL,
					 0,
					 NULL,
					 sync_wait_cb,
					 &wait);
	token =
	    confab_engine_create_token_finish(self->engine, sync_wait_run(&wait), secret, error);
	g_clear_object(&wait.result);
	g_main_loop_unref(wait.loop);
	g_main_context_pop_thread_default(context);
	if (token == NULL)
		return FALSE;
	*agent_id = g_strdup(confab_agent_get_id(agent));
	return TRUE;
}
