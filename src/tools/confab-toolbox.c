/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabToolbox"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/confab-tool-config.h"
#include "tools/confab-toolbox.h"
#include "tools/mcp/confab-mcp-client.h"
#include "tools/mcp/confab-mcp-http.h"
#include "tools/mcp/confab-mcp-oauth.h"
#include "tools/mcp/confab-mcp-stdio.h"
#include "util/confab-error.h"

/**
 * ConfabToolbox:
 *
 * The tool servers of every agent. A server starts on first use (a listing
 * or a call) for an agent id and its `mcp_servers` text, and is shared by
 * that agent's turns: one #ConfabMcpClient per server.
 *
 * - A server that dies, or cannot start, waits before it is started again:
 *   1 s, doubling up to 60 s, back to 1 s once it ran for the longest
 *   wait. Nothing restarts it on its own: the next use after the wait
 *   does, and a use within the wait fails at once with the last reason
 *   (the model gets it as a failed tool call; a listing shows the server
 *   as "failed: ...").
 * - A call in flight when its server dies fails at once (the client fails
 *   what is pending when its transport closes).
 * - A use with a config text other than the one the agent's servers run
 *   with reconciles them: a server whose own settings changed, or that is
 *   gone, is stopped; the new ones start on use; the others keep running.
 *   confab_toolbox_forget_agent() stops them all.
 * - The per-server `timeout` bounds each `tools/call` (a start has the
 *   client's own bound, 30 s).
 * - Tool names, as the model sees them, are `SERVER__tool` with every
 *   character outside `[A-Za-z0-9_-]` made `_`. A name longer than 64, or
 *   that two tools would share, is cut to 55 characters and given `_` and
 *   8 hex digits of a SHA-256 of the server and tool names: unique and the
 *   same at every listing. Only the tools of a server's `allow` list are
 *   offered; a list is cached per server (by the client) and read again
 *   when the server says `notifications/tools/list_changed`.
 * - Logged: server names and their states, never tool arguments or output.
 *
 * Other threads: the servers, their clients and every table here belong to
 * the context the toolbox was made on (the daemon's main context). A
 * listing or a call from another thread (a serving thread's turn) is
 * marshalled there with plain data (the arguments as JSON text), run as
 * usual, and its result, progress and end are handed back to the caller's
 * context; the caller's cancellable is relayed to the toolbox's context,
 * so that no toolbox code runs on the caller's thread.
 */

#define DEFAULT_BACKOFF_MS     1000
#define DEFAULT_MAX_BACKOFF_MS 60000
#define SHUTDOWN_TIMEOUT_MS    10000
#define MAX_REASON	       200
#define MAX_TOKEN_BYTES	       16384
#define HASH_CHARS	       8

typedef struct _Agent Agent;
typedef struct _Server Server;

typedef enum {
	SERVER_IDLE,
	SERVER_STARTING,
	SERVER_READY,
	SERVER_FAILED,
	SERVER_STOPPED,
} ServerState;

struct _Server {
	gint ref_count;
	ConfabToolbox *toolbox;		    /* unowned: valid while agent is set */
	Agent *agent;			    /* unowned: NULL once stopped */
	gchar *name;			    /* owned */
	gchar *label;			    /* owned: "agent/server", for the log */
	ConfabToolConfig *config;	    /* owned: holds conf */
	const ConfabToolConfigServer *conf; /* unowned: config's */
	ServerState state;
	ConfabMcpClient *client;       /* owned, nullable */
	ConfabMcpTransport *transport; /* owned, nullable: the client's */
	GError *error;		       /* owned, nullable: why it failed */
	gint64 retry_at;	       /* monotonic */
	gint64 ready_since;	       /* monotonic, or 0 */
	guint backoff_ms;	       /* the next wait */
	GQueue waiters;		       /* of Waiter: for the start */
	GPtrArray *tools;	       /* owned, nullable: of ConfabMcpTool, the last list */
	gboolean refreshing;
	gboolean refresh_again;
	GQueue calls;	       /* of Call, unowned: in flight, oldest first (elicitations) */
	ConfabMcpOAuth *oauth; /* owned, nullable: an HTTP server's authorization */
};

struct _Agent {
	gint ref_count;
	gchar *id;		  /* owned */
	gchar *config_json;	  /* owned: what the servers run with */
	ConfabToolConfig *config; /* owned */
	GPtrArray *servers;	  /* owned: of Server, in config order */
	GPtrArray *tools;	  /* owned: of ConfabToolboxTool, named */
	GHashTable *names;	  /* name -> ConfabToolboxTool, unowned: in tools */
	gboolean detached;
};

struct _ConfabToolbox {
	GObject parent_instance;
	gchar *home_dir; /* owned */
	gsize max_output_bytes;
	guint backoff_ms;
	guint max_backoff_ms;
	GHashTable *agents;   /* owned: id -> Agent */
	GHashTable *stopping; /* owned: set of ConfabMcpTransport, weak */
	gboolean shutting_down;
	GQueue shutdowns;	   /* of GTask */
	GSource *shutdown_timeout; /* owned */
	GMainContext *context;	   /* owned: where the servers run */
	/* OAuth of HTTP servers: where its state is kept, where the
	 * authorization server sends the person back */
	ConfabToolboxOAuthLoadFunc oauth_load;
	ConfabToolboxOAuthSaveFunc oauth_save;
	gpointer oauth_data;
	gchar *redirect_uri;
	gchar *client_metadata_url;
};

G_DEFINE_FINAL_TYPE(ConfabToolbox, confab_toolbox, G_TYPE_OBJECT)

/* ---------- ConfabToolboxTool ---------- */

static ConfabToolboxTool *
toolbox_tool_new(const gchar *name,
		 const gchar *server,
		 const gchar *tool,
		 const gchar *description,
		 const gchar *input_schema,
		 const gchar *status)
{
	ConfabToolboxTool *t = g_new0(ConfabToolboxTool, 1);

	t->name = g_strdup(name);
	t->server = g_strdup(server);
	t->tool = g_strdup(tool);
	t->description = g_strdup(description != NULL ? description : "");
	t->input_schema = g_strdup(input_schema);
	t->status = g_strdup(status);
	return t;
}

/**
 * confab_toolbox_tool_copy:
 * @tool: a #ConfabToolboxTool
 *
 * Returns: (transfer full): a copy
 */
ConfabToolboxTool *
confab_toolbox_tool_copy(const ConfabToolboxTool *tool)
{
	g_return_val_if_fail(tool != NULL, NULL);
	return toolbox_tool_new(tool->name,
				tool->server,
				tool->tool,
				tool->description,
				tool->input_schema,
				tool->status);
}

/**
 * confab_toolbox_tool_free:
 * @tool: (transfer full) (nullable): a #ConfabToolboxTool
 */
void
confab_toolbox_tool_free(ConfabToolboxTool *tool)
{
	if (tool == NULL)
		return;
	g_free(tool->name);
	g_free(tool->server);
	g_free(tool->tool);
	g_free(tool->description);
	g_free(tool->input_schema);
	g_free(tool->status);
	g_free(tool);
}

G_DEFINE_BOXED_TYPE(ConfabToolboxTool,
		    confab_toolbox_tool,
		    confab_toolbox_tool_copy,
		    confab_toolbox_tool_free)

/* ---------- small things ---------- */

static GSource *
watch_cancel(GCancellable *cancellable, GSourceFunc func, gpointer data)
{
	GSource *source;

	if (cancellable == NULL)
		return NULL;
	source = g_cancellable_source_new(cancellable);
	g_source_set_callback(source, func, data, NULL);
	g_source_attach(source, g_main_context_get_thread_default());
	return source;
}

static void
unwatch_cancel(GSource **source)
{
	if (*source == NULL)
		return;
	g_source_destroy(*source);
	g_clear_pointer(source, g_source_unref);
}

static gchar *
cut_utf8(const gchar *text, gsize max)
{
	g_autofree gchar *cut = NULL;
	const gchar *end;

	if (strlen(text) <= max)
		return g_strdup(text);
	end = g_utf8_find_prev_char(text, text + max + 1);
	cut = g_strndup(text, end - text);
	return g_strconcat(cut, "…", NULL);
}

/* ---------- tool names ---------- */

/* SERVER__tool with everything outside [A-Za-z0-9_-] made '_' */
static gchar *
name_candidate(const gchar *server, const gchar *tool)
{
	GString *name = g_string_new(server);

	g_string_append(name, "__");
	for (const gchar *c = tool; *c != '\0'; c = g_utf8_next_char(c)) {
		if (g_ascii_isalnum(*c) || *c == '_' || *c == '-')
			g_string_append_c(name, *c);
		else
			g_string_append_c(name, '_');
	}
	return g_string_free(name, FALSE);
}

/* The candidate cut to leave room for "_" and a hash of who it names. */
static gchar *
name_hashed(const gchar *candidate, const gchar *server, const gchar *tool, guint salt)
{
	gsize keep = CONFAB_TOOLBOX_MAX_NAME - 1 - HASH_CHARS;
	g_autofree gchar *key = g_strdup_printf("%s\n%s\n%u", server, tool, salt);
	g_autofree gchar *hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);

	return g_strdup_printf("%.*s_%.*s",
			       (gint)MIN(strlen(candidate), keep),
			       candidate,
			       HASH_CHARS,
			       hash);
}

typedef struct {
	const gchar *server;
	const ConfabMcpTool *tool;
	gchar *candidate; /* owned */
	gchar *name;	  /* owned */
} Naming;

static void
naming_clear(Naming *n)
{
	g_free(n->candidate);
	g_free(n->name);
}

/* The allowed tools of @servers' last lists, named, in server and list
 * order. The same lists always give the same names. */
static GPtrArray *
assign_names(GPtrArray *servers)
{
	g_autoptr(GArray) namings = g_array_new(FALSE, TRUE, sizeof(Naming));
	g_autoptr(GHashTable) counts = g_hash_table_new(g_str_hash, g_str_equal);
	g_autoptr(GHashTable) taken = g_hash_table_new(g_str_hash, g_str_equal);
	GPtrArray *result =
	    g_ptr_array_new_with_free_func((GDestroyNotify)confab_toolbox_tool_free);

	g_array_set_clear_func(namings, (GDestroyNotify)naming_clear);
	for (guint i = 0; i < servers->len; i++) {
		Server *server = servers->pdata[i];
		for (guint j = 0; server->tools != NULL && j < server->tools->len; j++) {
			const ConfabMcpTool *tool = server->tools->pdata[j];
			Naming n = {server->name, tool, NULL, NULL};
			if (!confab_tool_config_server_allows(server->conf, tool->name))
				continue;
			n.candidate = name_candidate(server->name, tool->name);
			g_array_append_val(namings, n);
		}
	}
	for (guint i = 0; i < namings->len; i++) {
		Naming *n = &g_array_index(namings, Naming, i);
		guint count = GPOINTER_TO_UINT(g_hash_table_lookup(counts, n->candidate));
		g_hash_table_insert(counts, n->candidate, GUINT_TO_POINTER(count + 1));
	}
	/* the names that fit and are nobody else's, then the others */
	for (guint i = 0; i < namings->len; i++) {
		Naming *n = &g_array_index(namings, Naming, i);
		if (strlen(n->candidate) > CONFAB_TOOLBOX_MAX_NAME ||
		    GPOINTER_TO_UINT(g_hash_table_lookup(counts, n->candidate)) > 1)
			continue;
		n->name = g_strdup(n->candidate);
		g_hash_table_add(taken, n->name);
	}
	for (guint i = 0; i < namings->len; i++) {
		Naming *n = &g_array_index(namings, Naming, i);
		for (guint salt = 0; n->name == NULL; salt++) {
			n->name = name_hashed(n->candidate, n->server, n->tool->name, salt);
			if (!g_hash_table_add(taken, n->name))
				g_clear_pointer(&n->name, g_free);
		}
	}
	for (guint i = 0; i < namings->len; i++) {
		Naming *n = &g_array_index(namings, Naming, i);
		g_ptr_array_add(result,
				toolbox_tool_new(n->name,
						 n->server,
						 n->tool->name,
						 n->tool->description,
						 n->tool->input_schema,
						 "ready"));
	}
	return result;
}

/* ---------- servers ---------- */

static Server *
server_ref(Server *server)
{
	server->ref_count++;
	return server;
}

static void
server_unref(Server *server)
{
	if (--server->ref_count > 0)
		return;
	g_assert(server->client == NULL);
	g_assert(g_queue_is_empty(&server->waiters));
	g_queue_clear(&server->calls);
	if (server->oauth != NULL) {
		g_signal_handlers_disconnect_by_data(server->oauth, server);
		g_object_unref(server->oauth);
	}
	g_clear_pointer(&server->tools, g_ptr_array_unref);
	g_clear_error(&server->error);
	g_object_unref(server->config);
	g_free(server->name);
	g_free(server->label);
	g_free(server);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Server, server_unref)

static gpointer
server_copy_ref(gconstpointer server, gpointer user_data)
{
	return server_ref((Server *)server);
}

/* ---------- OAuth ---------- */

/* Where a server's OAuth state is kept: the toolbox's store hooks, by
 * agent and server name (they outlive a Server). */
typedef struct {
	GWeakRef toolbox; /* it owns the servers: not a strong one */
	gchar *agent_id;
	gchar *server;
} OAuthKey;

static void
oauth_key_free(OAuthKey *key)
{
	g_weak_ref_clear(&key->toolbox);
	g_free(key->agent_id);
	g_free(key->server);
	g_free(key);
}

static void
oauth_load(gpointer user_data, ConfabMcpOAuthLoaded done, gpointer data)
{
	OAuthKey *key = user_data;
	g_autoptr(ConfabToolbox) self = g_weak_ref_get(&key->toolbox);

	if (self == NULL || self->oauth_load == NULL) {
		done(NULL, data);
		return;
	}
	self->oauth_load(key->agent_id, key->server, done, data, self->oauth_data);
}

static void
on_oauth_changed(ConfabMcpOAuth *oauth, gpointer user_data)
{
	Server *server = user_data;
	ConfabToolbox *self = server->toolbox;
	g_autofree gchar *state = NULL;

	if (self->oauth_save == NULL || server->agent == NULL)
		return;
	state = confab_mcp_oauth_save_state(oauth);
	self->oauth_save(server->agent->id,
			 server->name,
			 confab_mcp_oauth_get_pending_state(oauth),
			 state,
			 confab_mcp_oauth_get_version(oauth),
			 self->oauth_data);
	memset(state, 0, strlen(state));
}

/* Whether an HTTP server may use OAuth: it has no token of its own. */
static gboolean
server_takes_oauth(const ConfabToolConfigServer *conf)
{
	const gchar *const *names = confab_tool_config_server_get_header_names(conf);

	if (confab_tool_config_server_get_kind(conf) != CONFAB_TOOL_CONFIG_KIND_HTTP ||
	    confab_tool_config_server_get_bearer_token_file(conf) != NULL)
		return FALSE;
	for (guint i = 0; names != NULL && names[i] != NULL; i++) {
		if (g_ascii_strcasecmp(names[i], "Authorization") == 0)
			return FALSE;
	}
	return TRUE;
}

/* The server's authorization, as its `oauth` entry says (an entry without
 * one still answers a 401: discovery, registration, authorization code). */
static void
server_setup_oauth(Server *server, const gchar *agent_id)
{
	ConfabToolbox *self = server->toolbox;
	const ConfabToolConfigServer *conf = server->conf;
	const gchar *client_id, *secret, *key, *scope;
	gint grant = confab_tool_config_server_get_oauth(conf, &client_id, &secret, &key, &scope);
	g_autofree gchar *hint = NULL;
	OAuthKey *okey = g_new0(OAuthKey, 1);

	server->oauth =
	    confab_mcp_oauth_new(server->label, confab_tool_config_server_get_url(conf));
	confab_mcp_oauth_set_grant(server->oauth,
				   grant == 1 ? CONFAB_MCP_OAUTH_GRANT_CLIENT_CREDENTIALS
					      : CONFAB_MCP_OAUTH_GRANT_AUTHORIZATION_CODE);
	confab_mcp_oauth_set_client(server->oauth, client_id, secret, key);
	confab_mcp_oauth_set_scope(server->oauth, scope);
	confab_mcp_oauth_set_redirect_uri(server->oauth, self->redirect_uri);
	confab_mcp_oauth_set_client_metadata_url(server->oauth, self->client_metadata_url);
	hint = g_strdup_printf("run `confabctl agent authorize %s %s`", agent_id, server->name);
	confab_mcp_oauth_set_authorize_hint(server->oauth, hint);
	g_weak_ref_init(&okey->toolbox, self);
	okey->agent_id = g_strdup(agent_id);
	okey->server = g_strdup(server->name);
	confab_mcp_oauth_set_loader(server->oauth,
				    oauth_load,
				    okey,
				    (GDestroyNotify)oauth_key_free);
	g_signal_connect(server->oauth, "changed", G_CALLBACK(on_oauth_changed), server);
}

static Server *
server_new(ConfabToolbox *toolbox,
	   Agent *agent,
	   ConfabToolConfig *config,
	   const ConfabToolConfigServer *conf)
{
	Server *server = g_new0(Server, 1);

	server->ref_count = 1;
	server->toolbox = toolbox;
	server->agent = agent;
	server->config = g_object_ref(config);
	server->conf = conf;
	server->name = g_strdup(confab_tool_config_server_get_name(conf));
	server->label = g_strdup_printf("%s/%s", agent->id, server->name);
	server->backoff_ms = toolbox->backoff_ms;
	g_queue_init(&server->waiters);
	if (server_takes_oauth(conf))
		server_setup_oauth(server, agent->id);
	return server;
}

static void
on_transport_gone(gpointer user_data, GObject *where_the_object_was);

/* The transport of a stopped server is watched until it is gone (stdio:
 * its child exited), so that shutdown can wait for it. */
static void
toolbox_track(ConfabToolbox *self, ConfabMcpTransport *transport)
{
	if (!g_hash_table_add(self->stopping, transport))
		return;
	g_object_weak_ref(G_OBJECT(transport), on_transport_gone, self);
}

static void
server_drop_client(Server *server)
{
	if (server->client == NULL)
		return;
	g_signal_handlers_disconnect_by_data(server->client, server);
	confab_mcp_client_close(server->client);
	toolbox_track(server->toolbox, server->transport);
	g_clear_object(&server->client);
	g_clear_object(&server->transport);
}

typedef struct {
	GTask *task;		/* owned */
	GSource *cancel_source; /* owned */
	Server *server;		/* unowned: it holds us */
} Waiter;

static void
waiter_free(Waiter *waiter)
{
	unwatch_cancel(&waiter->cancel_source);
	g_clear_object(&waiter->task);
	g_free(waiter);
}

/* Every waiter hears @error, or success when it is %NULL. */
static void
server_wake(Server *server, const GError *error)
{
	GQueue waiters = server->waiters;
	Waiter *waiter;

	g_queue_init(&server->waiters);
	while ((waiter = g_queue_pop_head(&waiters)) != NULL) {
		g_autoptr(GTask) task = g_steal_pointer(&waiter->task);
		waiter_free(waiter);
		if (error != NULL)
			g_task_return_error(task, g_error_copy(error));
		else
			g_task_return_boolean(task, TRUE);
	}
}

static gboolean
on_stopped_idle(gpointer user_data)
{
	Server *server = user_data;
	g_autoptr(GError) error = g_error_new(G_IO_ERROR,
					      G_IO_ERROR_CONNECTION_CLOSED,
					      "The MCP server %s was stopped",
					      server->label);

	server_wake(server, error);
	return G_SOURCE_REMOVE;
}

/* Stops it for good. Its waiters hear it from an idle: the callers walk
 * tables that their callbacks could change. */
static void
server_stop(Server *server)
{
	if (server->state == SERVER_STOPPED)
		return;
	if (server->client != NULL)
		g_message("%s: stopping the MCP server", server->label);
	server->state = SERVER_STOPPED;
	server_drop_client(server);
	server->agent = NULL;
	if (!g_queue_is_empty(&server->waiters)) {
		GSource *idle = g_idle_source_new();
		g_source_set_callback(idle,
				      on_stopped_idle,
				      server_ref(server),
				      (GDestroyNotify)server_unref);
		g_source_set_static_name(idle, "[confab] mcp server stopped");
		g_source_attach(idle, g_main_context_get_thread_default());
		g_source_unref(idle);
	}
}

/* It died or could not start: it waits before the next start. */
static void
server_failed(Server *server, GError *error)
{
	ConfabToolbox *self = server->toolbox;
	gint64 now = g_get_monotonic_time();

	if (g_error_matches(error,
			    CONFAB_MCP_OAUTH_ERROR,
			    CONFAB_MCP_OAUTH_ERROR_AUTHORIZATION_NEEDED)) {
		/* nothing to wait for but a person: the next use tries again
		 * (the authorization URL stays the same) */
		g_message("%s: %s", server->label, error->message);
		server->state = SERVER_FAILED;
		server->retry_at = now;
		g_clear_error(&server->error);
		server->error = error;
		server_drop_client(server);
		server_wake(server, error);
		return;
	}
	if (server->ready_since > 0 &&
	    now - server->ready_since >= (gint64)self->max_backoff_ms * 1000)
		server->backoff_ms = self->backoff_ms;
	server->retry_at = now + (gint64)server->backoff_ms * 1000;
	g_message("%s: %s; the next start waits %u ms",
		  server->label,
		  error->message,
		  server->backoff_ms);
	server->backoff_ms = MIN(server->backoff_ms * 2, self->max_backoff_ms);
	server->ready_since = 0;
	server->state = SERVER_FAILED;
	g_clear_error(&server->error);
	server->error = error;
	server_drop_client(server);
	server_wake(server, error);
}

static void
server_refresh(Server *server);

static void
on_tools_changed(ConfabMcpClient *client, gpointer user_data)
{
	Server *server = user_data;

	g_message("%s: the MCP server's tools changed", server->label);
	server_refresh(server);
}

static void
on_client_closed(ConfabMcpClient *client, const GError *error, gpointer user_data)
{
	Server *server = user_data;

	if (server->state != SERVER_READY)
		return; /* a start that fails says so itself */
	server_failed(server,
		      error != NULL ? g_error_copy(error)
				    : g_error_new(G_IO_ERROR,
						  G_IO_ERROR_CONNECTION_CLOSED,
						  "The MCP server %s stopped",
						  server->label));
}

/* The bearer token: the first line of a regular file (one trailing
 * newline, LF or CRLF, is not part of it). */
static gchar *
read_token(const gchar *path, GError **error)
{
	g_autofree gchar *buffer = g_malloc0(MAX_TOKEN_BYTES + 2);
	struct stat st;
	gssize n = 0;
	gsize len = 0;
	gint fd = g_open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);

	const gchar *why = NULL;

	if (fd < 0 || fstat(fd, &st) < 0)
		why = g_strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	if (why != NULL) {
		g_set_error(error,
			    G_IO_ERROR,
			    G_IO_ERROR_INVALID_ARGUMENT,
			    "Reading the bearer token file %s: %s",
			    path,
			    why);
		if (fd >= 0)
			g_close(fd, NULL);
		return NULL;
	}
	while (len <= MAX_TOKEN_BYTES &&
	       (n = read(fd, buffer + len, MAX_TOKEN_BYTES + 1 - len)) > 0)
		len += (gsize)n;
	g_close(fd, NULL);
	if (len > 0 && buffer[len - 1] == '\n')
		buffer[--len] = '\0';
	if (len > 0 && buffer[len - 1] == '\r')
		buffer[--len] = '\0';
	if (n < 0 || len == 0 || len > MAX_TOKEN_BYTES) {
		memset(buffer, 0, MAX_TOKEN_BYTES + 2);
		g_set_error(error,
			    G_IO_ERROR,
			    G_IO_ERROR_INVALID_ARGUMENT,
			    "Reading the bearer token file %s: %s",
			    path,
			    n < 0      ? g_strerror(errno)
			    : len == 0 ? "it is empty"
				       : "it is too large");
		return NULL;
	}
	return g_steal_pointer(&buffer);
}

static ConfabMcpTransport *
http_transport(Server *server, GError **error)
{
	const ConfabToolConfigServer *conf = server->conf;
	const gchar *const *names = confab_tool_config_server_get_header_names(conf);
	const gchar *const *values = confab_tool_config_server_get_header_values(conf);
	const gchar *token_file = confab_tool_config_server_get_bearer_token_file(conf);
	g_autoptr(ConfabMcpHttp) http = NULL;

	http = confab_mcp_http_new(server->label,
				   confab_tool_config_server_get_url(conf),
				   NULL,
				   error);
	if (http == NULL)
		return NULL;
	for (guint i = 0; names != NULL && names[i] != NULL; i++) {
		if (!confab_mcp_http_add_header(http, names[i], values[i], error))
			return NULL;
	}
	if (server->oauth != NULL)
		confab_mcp_http_set_oauth(http, server->oauth);
	if (token_file != NULL) {
		gchar *token = read_token(token_file, error);
		gboolean ok;
		if (token == NULL)
			return NULL;
		ok = confab_mcp_http_set_bearer_token(http, token, error);
		memset(token, 0, strlen(token));
		g_free(token);
		if (!ok)
			return NULL;
	}
	return CONFAB_MCP_TRANSPORT(g_steal_pointer(&http));
}

static ConfabMcpTransport *
server_transport(Server *server, GError **error)
{
	const ConfabToolConfigServer *conf = server->conf;

	if (confab_tool_config_server_get_kind(conf) == CONFAB_TOOL_CONFIG_KIND_HTTP)
		return http_transport(server, error);
	return CONFAB_MCP_TRANSPORT(confab_mcp_stdio_new(server->label,
							 confab_tool_config_server_get_argv(conf),
							 confab_tool_config_server_get_env(conf),
							 confab_tool_config_server_get_cwd(conf),
							 server->toolbox->home_dir,
							 error));
}

static void
on_server_started(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Server) server = user_data;
	GError *error = NULL;
	gboolean ok = confab_mcp_client_start_finish(CONFAB_MCP_CLIENT(source), result, &error);

	if (server->client != CONFAB_MCP_CLIENT(source)) {
		/* stopped meanwhile: its waiters heard it */
		g_clear_error(&error);
		return;
	}
	if (!ok) {
		server_failed(server, error);
		return;
	}
	g_message("%s: the MCP server is ready (%s %s, protocol %s)",
		  server->label,
		  confab_mcp_client_get_server_name(server->client) != NULL
		      ? confab_mcp_client_get_server_name(server->client)
		      : "unnamed",
		  confab_mcp_client_get_server_version(server->client) != NULL
		      ? confab_mcp_client_get_server_version(server->client)
		      : "",
		  confab_mcp_client_get_protocol_version(server->client));
	server->state = SERVER_READY;
	server->ready_since = g_get_monotonic_time();
	server_wake(server, NULL);
}

static void
on_server_elicit(ConfabMcpClient *client,
		 ConfabMcpElicitation *elicitation,
		 gpointer call_data,
		 gpointer user_data);

static void
server_start(Server *server)
{
	GError *error = NULL;
	ConfabMcpTransport *transport = server_transport(server, &error);

	if (transport == NULL) {
		g_prefix_error(&error, "The MCP server %s cannot start: ", server->label);
		server_failed(server, error);
		return;
	}
	server->state = SERVER_STARTING;
	server->transport = transport;
	server->client = confab_mcp_client_new(server->label, transport);
	g_signal_connect(server->client, "closed", G_CALLBACK(on_client_closed), server);
	g_signal_connect(server->client, "tools-changed", G_CALLBACK(on_tools_changed), server);
	/* the client holds the server until it goes */
	confab_mcp_client_set_elicitation_handler(server->client,
						  on_server_elicit,
						  server_ref(server),
						  (GDestroyNotify)server_unref);
	g_message("%s: starting the MCP server", server->label);
	confab_mcp_client_start_async(server->client, NULL, on_server_started, server_ref(server));
}

static gboolean
on_waiter_cancelled(GCancellable *cancellable, gpointer user_data)
{
	Waiter *waiter = user_data;
	g_autoptr(GTask) task = g_steal_pointer(&waiter->task);

	/* the start goes on, for the others */
	g_queue_remove(&waiter->server->waiters, waiter);
	waiter_free(waiter);
	g_task_return_new_error(task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "Cancelled");
	return G_SOURCE_REMOVE;
}

/* A task of @self that ends once @server is ready. */
static void
server_ensure_async(Server *server,
		    ConfabToolbox *self,
		    GCancellable *cancellable,
		    GAsyncReadyCallback callback,
		    gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	gint64 now = g_get_monotonic_time();
	Waiter *waiter;

	if (server->state == SERVER_READY) {
		g_task_return_boolean(task, TRUE);
		return;
	}
	if (server->state == SERVER_STOPPED) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The MCP server %s was stopped",
					server->label);
		return;
	}
	if (server->state == SERVER_FAILED && now < server->retry_at) {
		g_task_return_new_error(task,
					server->error->domain,
					server->error->code,
					"%s (it is started again in %" G_GINT64_FORMAT " s)",
					server->error->message,
					(server->retry_at - now + G_USEC_PER_SEC - 1) /
					    G_USEC_PER_SEC);
		return;
	}
	waiter = g_new0(Waiter, 1);
	waiter->task = g_steal_pointer(&task);
	waiter->server = server;
	waiter->cancel_source =
	    watch_cancel(cancellable, G_SOURCE_FUNC(on_waiter_cancelled), waiter);
	g_queue_push_tail(&server->waiters, waiter);
	if (server->state != SERVER_STARTING)
		server_start(server);
}

static gboolean
server_ensure_finish(GAsyncResult *result, GError **error)
{
	return g_task_propagate_boolean(G_TASK(result), error);
}

/* ---------- agents ---------- */

static Agent *
agent_ref(Agent *agent)
{
	agent->ref_count++;
	return agent;
}

static void
agent_detach(Agent *agent)
{
	if (agent->detached)
		return;
	agent->detached = TRUE;
	for (guint i = 0; i < agent->servers->len; i++)
		server_stop(agent->servers->pdata[i]);
}

static void
agent_unref(Agent *agent)
{
	if (--agent->ref_count > 0)
		return;
	agent_detach(agent);
	g_ptr_array_unref(agent->servers);
	g_hash_table_unref(agent->names);
	g_ptr_array_unref(agent->tools);
	g_clear_object(&agent->config);
	g_free(agent->config_json);
	g_free(agent->id);
	g_free(agent);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Agent, agent_unref)

static Agent *
agent_new(const gchar *id)
{
	Agent *agent = g_new0(Agent, 1);

	agent->ref_count = 1;
	agent->id = g_strdup(id);
	agent->servers = g_ptr_array_new_with_free_func((GDestroyNotify)server_unref);
	agent->tools = g_ptr_array_new_with_free_func((GDestroyNotify)confab_toolbox_tool_free);
	agent->names = g_hash_table_new(g_str_hash, g_str_equal);
	return agent;
}

/* The names the model sees, from the servers' last lists. */
static void
agent_rename(Agent *agent)
{
	if (agent->detached)
		return;
	g_hash_table_remove_all(agent->names);
	g_ptr_array_unref(agent->tools);
	agent->tools = assign_names(agent->servers);
	for (guint i = 0; i < agent->tools->len; i++) {
		ConfabToolboxTool *tool = agent->tools->pdata[i];
		g_hash_table_insert(agent->names, tool->name, tool);
	}
}

static Server *
agent_find_server(Agent *agent, const gchar *name)
{
	for (guint i = 0; i < agent->servers->len; i++) {
		Server *server = agent->servers->pdata[i];
		if (strcmp(server->name, name) == 0)
			return server;
	}
	return NULL;
}

/* Runs @config from now on: the servers whose settings did not change go
 * on, the others stop. */
static void
agent_reconfigure(ConfabToolbox *self, Agent *agent, const gchar *json, ConfabToolConfig *config)
{
	GPtrArray *servers = g_ptr_array_new_with_free_func((GDestroyNotify)server_unref);

	for (guint i = 0; i < confab_tool_config_get_n_servers(config); i++) {
		const ConfabToolConfigServer *conf = confab_tool_config_get_server(config, i);
		Server *old = agent_find_server(agent, confab_tool_config_server_get_name(conf));
		if (old != NULL && strcmp(confab_tool_config_server_get_fingerprint(old->conf),
					  confab_tool_config_server_get_fingerprint(conf)) == 0)
			g_ptr_array_add(servers, server_ref(old));
		else
			g_ptr_array_add(servers, server_new(self, agent, config, conf));
	}
	for (guint i = 0; i < agent->servers->len; i++) {
		Server *old = agent->servers->pdata[i];
		if (!g_ptr_array_find(servers, old, NULL))
			server_stop(old);
	}
	if (agent->config != NULL)
		g_message("%s: the agent's tool servers changed", agent->id);
	g_ptr_array_unref(agent->servers);
	agent->servers = servers;
	g_set_object(&agent->config, config);
	g_free(agent->config_json);
	agent->config_json = g_strdup(json);
	agent_rename(agent);
}

/* The agent @id running @json, made so if needed. */
static Agent *
agent_get(ConfabToolbox *self, const gchar *id, const gchar *json, GError **error)
{
	Agent *agent;
	g_autoptr(ConfabToolConfig) config = NULL;

	if (self->shutting_down) {
		confab_error_set(error,
				 CONFAB_ERROR_SHUTTING_DOWN,
				 NULL,
				 "The tool servers are shutting down");
		return NULL;
	}
	json = json != NULL ? json : "";
	agent = g_hash_table_lookup(self->agents, id);
	if (agent != NULL && strcmp(agent->config_json, json) == 0)
		return agent_ref(agent);
	config = confab_tool_config_parse(json, error);
	if (config == NULL)
		return NULL;
	if (agent == NULL) {
		agent = agent_new(id);
		g_hash_table_insert(self->agents, agent->id, agent);
	}
	agent_reconfigure(self, agent, json, config);
	return agent_ref(agent);
}

/* ---------- listing ---------- */

/* One server's tools: started if needed, listed by its client. */
typedef struct {
	Server *server;		   /* owned */
	GCancellable *cancellable; /* owned, nullable */
} ServerList;

static void
server_list_free(ServerList *sl)
{
	server_unref(sl->server);
	g_clear_object(&sl->cancellable);
	g_free(sl);
}

static void
on_server_list_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ServerList *sl = g_task_get_task_data(task);
	Server *server = sl->server;
	GError *error = NULL;
	GPtrArray *tools =
	    confab_mcp_client_list_tools_finish(CONFAB_MCP_CLIENT(source), result, &error);

	if (tools == NULL) {
		g_task_return_error(task, error);
		return;
	}
	if (server->state != SERVER_STOPPED) {
		g_clear_pointer(&server->tools, g_ptr_array_unref);
		server->tools = g_ptr_array_ref(tools);
		if (server->agent != NULL)
			agent_rename(server->agent);
	}
	g_task_return_pointer(task, tools, (GDestroyNotify)g_ptr_array_unref);
}

static void
on_server_list_ready(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ServerList *sl = g_task_get_task_data(task);
	GError *error = NULL;

	if (!server_ensure_finish(result, &error)) {
		g_task_return_error(task, error);
		return;
	}
	if (sl->server->state != SERVER_READY) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The MCP server %s stopped",
					sl->server->label);
		return;
	}
	confab_mcp_client_list_tools_async(sl->server->client,
					   sl->cancellable,
					   on_server_list_done,
					   g_steal_pointer(&task));
}

static void
server_list_async(Server *server,
		  ConfabToolbox *self,
		  GCancellable *cancellable,
		  GAsyncReadyCallback callback,
		  gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);
	ServerList *sl = g_new0(ServerList, 1);

	sl->server = server_ref(server);
	sl->cancellable = cancellable != NULL ? g_object_ref(cancellable) : NULL;
	g_task_set_task_data(task, sl, (GDestroyNotify)server_list_free);
	server_ensure_async(server, self, cancellable, on_server_list_ready, task);
}

static void
on_refreshed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Server) server = user_data;
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tools = g_task_propagate_pointer(G_TASK(result), &error);

	server->refreshing = FALSE;
	if (tools == NULL)
		g_debug("%s: listing the changed tools: %s", server->label, error->message);
	if (server->refresh_again) {
		server->refresh_again = FALSE;
		server_refresh(server);
	}
}

/* The server said its tools changed: read them again now, so that the
 * names are right before the next listing. */
static void
server_refresh(Server *server)
{
	if (server->state != SERVER_READY)
		return;
	if (server->refreshing) {
		server->refresh_again = TRUE;
		return;
	}
	server->refreshing = TRUE;
	server_list_async(server, server->toolbox, NULL, on_refreshed, server_ref(server));
}

/* Every server of an agent listed, each failure kept with its server. */
typedef struct {
	Agent *agent;	    /* owned */
	GPtrArray *servers; /* owned: of Server */
	GPtrArray *errors;  /* owned: of GError, NULL where it worked */
	guint pending;
} AgentList;

static void
agent_list_free(AgentList *al)
{
	agent_unref(al->agent);
	g_ptr_array_unref(al->servers);
	g_ptr_array_unref(al->errors);
	g_free(al);
}

typedef struct {
	GTask *task; /* owned */
	guint index;
} AgentListItem;

static void
error_free0(GError *error)
{
	if (error != NULL)
		g_error_free(error);
}

static gchar *
failed_status(const GError *error)
{
	g_autofree gchar *reason = cut_utf8(error->message, MAX_REASON);

	if (g_error_matches(error,
			    CONFAB_MCP_OAUTH_ERROR,
			    CONFAB_MCP_OAUTH_ERROR_AUTHORIZATION_NEEDED)) {
		/* without what the transport put before it */
		const gchar *at = strstr(error->message, "authorization needed");
		return cut_utf8(at != NULL ? at : error->message, MAX_REASON);
	}
	return g_strconcat("failed: ", reason, NULL);
}

/* What the listing gives: the named tools of the servers that answered,
 * one entry for each server that failed, in config order. */
static GPtrArray *
agent_list_result(AgentList *al)
{
	g_autoptr(GPtrArray) named = assign_names(al->servers);
	GPtrArray *result =
	    g_ptr_array_new_with_free_func((GDestroyNotify)confab_toolbox_tool_free);

	for (guint i = 0; i < al->servers->len; i++) {
		Server *server = al->servers->pdata[i];
		const GError *error = al->errors->pdata[i];
		if (error != NULL) {
			g_autofree gchar *status = failed_status(error);
			g_ptr_array_add(result,
					toolbox_tool_new("", server->name, "", "", "", status));
			continue;
		}
		for (guint j = 0; j < named->len; j++) {
			ConfabToolboxTool *tool = named->pdata[j];
			if (strcmp(tool->server, server->name) == 0)
				g_ptr_array_add(result, confab_toolbox_tool_copy(tool));
		}
	}
	return result;
}

static void
on_agent_server_listed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	AgentListItem *item = user_data;
	g_autoptr(GTask) task = item->task;
	AgentList *al = g_task_get_task_data(task);
	GError *error = NULL;
	g_autoptr(GPtrArray) tools = g_task_propagate_pointer(G_TASK(result), &error);

	al->errors->pdata[item->index] = error;
	g_free(item);
	if (--al->pending > 0)
		return;
	if (g_task_return_error_if_cancelled(task))
		return;
	g_task_return_pointer(task, agent_list_result(al), (GDestroyNotify)g_ptr_array_unref);
}

static void
agent_list_async(ConfabToolbox *self,
		 Agent *agent,
		 GCancellable *cancellable,
		 GAsyncReadyCallback callback,
		 gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	AgentList *al = g_new0(AgentList, 1);

	al->agent = agent_ref(agent);
	al->servers = g_ptr_array_copy(agent->servers, server_copy_ref, NULL);
	g_ptr_array_set_free_func(al->servers, (GDestroyNotify)server_unref);
	al->errors = g_ptr_array_new_full(al->servers->len, (GDestroyNotify)error_free0);
	g_ptr_array_set_size(al->errors, al->servers->len);
	al->pending = al->servers->len;
	g_task_set_task_data(task, al, (GDestroyNotify)agent_list_free);
	if (al->pending == 0) {
		g_task_return_pointer(task,
				      agent_list_result(al),
				      (GDestroyNotify)g_ptr_array_unref);
		return;
	}
	for (guint i = 0; i < al->servers->len; i++) {
		AgentListItem *item = g_new0(AgentListItem, 1);
		item->task = g_object_ref(task);
		item->index = i;
		server_list_async(al->servers->pdata[i],
				  self,
				  cancellable,
				  on_agent_server_listed,
				  item);
	}
}

/* ---------- other threads ---------- */

static gboolean
on_own_context(ConfabToolbox *self)
{
	g_autoptr(GMainContext) context = g_main_context_ref_thread_default();
	return context == self->context;
}

static void
attach_idle(GMainContext *context, GSourceFunc func, gpointer data, GDestroyNotify notify)
{
	g_autoptr(GSource) source = g_idle_source_new();

	g_source_set_priority(source, G_PRIORITY_DEFAULT);
	g_source_set_callback(source, func, data, notify);
	g_source_set_static_name(source, "[confab] toolbox hand-over");
	g_source_attach(source, context);
}

/* A listing or a call made from another context than the toolbox's. */
typedef struct {
	gint ref_count;
	ConfabToolbox *toolbox; /* owned */
	GTask *task;		/* owned: made on the caller's context */
	GMainContext *caller;	/* owned */
	GCancellable *outer;	/* owned, nullable: the caller's */
	gulong outer_id;
	GCancellable *inner; /* owned: the toolbox side's */
	gchar *agent_id;
	gchar *config_json;
	gchar *name;	  /* nullable: a listing */
	gchar *arguments; /* nullable: JSON text */
	ConfabToolboxProgressFunc progress;
	ConfabToolboxElicitFunc elicit;
	gpointer progress_data;
	GDestroyNotify progress_notify;
	gpointer result;   /* owned: until handed back */
	GError *error;	   /* owned: until handed back */
	gboolean finished; /* on the caller's context */
} Remote;

static Remote *
remote_ref(Remote *remote)
{
	g_atomic_int_inc(&remote->ref_count);
	return remote;
}

static void
remote_unref(Remote *remote)
{
	if (!g_atomic_int_dec_and_test(&remote->ref_count))
		return;
	g_clear_object(&remote->toolbox);
	g_clear_object(&remote->task);
	g_clear_pointer(&remote->caller, g_main_context_unref);
	g_clear_object(&remote->outer);
	g_clear_object(&remote->inner);
	g_free(remote->agent_id);
	g_free(remote->config_json);
	g_free(remote->name);
	g_free(remote->arguments);
	if (remote->result != NULL && remote->name != NULL)
		confab_mcp_tool_result_free(remote->result);
	else if (remote->result != NULL)
		g_ptr_array_unref(remote->result);
	g_clear_error(&remote->error);
	g_free(remote);
}

/* the caller's cancellable, on the caller's thread: cancel the toolbox
 * side's from the toolbox's context */
static gboolean
remote_cancel_inner(gpointer user_data)
{
	Remote *remote = user_data;
	g_cancellable_cancel(remote->inner);
	return G_SOURCE_REMOVE;
}

static void
on_remote_outer_cancelled(GCancellable *cancellable, gpointer user_data)
{
	Remote *remote = user_data;
	attach_idle(remote->toolbox->context,
		    remote_cancel_inner,
		    remote_ref(remote),
		    (GDestroyNotify)remote_unref);
}

/* on the caller's context: the end */
static gboolean
remote_finish(gpointer user_data)
{
	Remote *remote = user_data;
	GDestroyNotify notify = g_steal_pointer(&remote->progress_notify);

	remote->finished = TRUE;
	if (remote->outer != NULL && remote->outer_id != 0)
		g_cancellable_disconnect(remote->outer, remote->outer_id);
	remote->outer_id = 0;
	if (notify != NULL)
		notify(remote->progress_data);
	if (remote->error != NULL)
		g_task_return_error(remote->task, g_steal_pointer(&remote->error));
	else if (remote->name != NULL)
		g_task_return_pointer(remote->task,
				      g_steal_pointer(&remote->result),
				      (GDestroyNotify)confab_mcp_tool_result_free);
	else
		g_task_return_pointer(remote->task,
				      g_steal_pointer(&remote->result),
				      (GDestroyNotify)g_ptr_array_unref);
	return G_SOURCE_REMOVE;
}

/* on the toolbox's context: a listing or a call ended */
static void
on_remote_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Remote *remote = user_data;
	ConfabToolbox *self = CONFAB_TOOLBOX(source);

	if (remote->name != NULL)
		remote->result = confab_toolbox_call_finish(self, result, &remote->error);
	else
		remote->result = confab_toolbox_list_tools_finish(self, result, &remote->error);
	attach_idle(remote->caller, remote_finish, remote, (GDestroyNotify)remote_unref);
}

typedef struct {
	Remote *remote; /* owned */
	gdouble progress;
	gdouble total;
	gchar *message;
} RemoteProgress;

static void
remote_progress_free(RemoteProgress *rp)
{
	remote_unref(rp->remote);
	g_free(rp->message);
	g_free(rp);
}

/* on the caller's context */
static gboolean
remote_progress_deliver(gpointer user_data)
{
	RemoteProgress *rp = user_data;

	if (!rp->remote->finished)
		rp->remote->progress(rp->progress,
				     rp->total,
				     rp->message,
				     rp->remote->progress_data);
	return G_SOURCE_REMOVE;
}

/* on the toolbox's context */
static void
on_remote_progress(gdouble progress, gdouble total, const gchar *message, gpointer user_data)
{
	Remote *remote = user_data;
	RemoteProgress *rp = g_new0(RemoteProgress, 1);

	rp->remote = remote_ref(remote);
	rp->progress = progress;
	rp->total = total;
	rp->message = g_strdup(message);
	attach_idle(remote->caller,
		    remote_progress_deliver,
		    rp,
		    (GDestroyNotify)remote_progress_free);
}

typedef struct {
	Remote *remote;			   /* owned */
	ConfabMcpElicitation *elicitation; /* owned */
} RemoteElicit;

static void
remote_elicit_free(RemoteElicit *re)
{
	/* a turn that took it holds its own reference; the last one is
	 * dropped on the toolbox's context */
	confab_toolbox_answer_elicitation(re->remote->toolbox, re->elicitation, NULL, NULL);
	remote_unref(re->remote);
	g_free(re);
}

/* on the caller's context */
static gboolean
remote_elicit_deliver(gpointer user_data)
{
	RemoteElicit *re = user_data;

	if (!re->remote->finished && re->remote->elicit != NULL)
		re->remote->elicit(re->elicitation, re->remote->progress_data);
	return G_SOURCE_REMOVE;
}

/* on the toolbox's context */
static void
on_remote_elicit(ConfabMcpElicitation *elicitation, gpointer user_data)
{
	Remote *remote = user_data;
	RemoteElicit *re = g_new0(RemoteElicit, 1);

	re->remote = remote_ref(remote);
	re->elicitation = confab_mcp_elicitation_ref(elicitation);
	attach_idle(remote->caller, remote_elicit_deliver, re, (GDestroyNotify)remote_elicit_free);
}

/* on the toolbox's context: the listing or call itself */
static gboolean
remote_start(gpointer user_data)
{
	Remote *remote = user_data;
	g_autoptr(JsonNode) args = NULL;

	if (remote->name == NULL) {
		confab_toolbox_list_tools_async(remote->toolbox,
						remote->agent_id,
						remote->config_json,
						remote->inner,
						on_remote_done,
						remote_ref(remote));
		return G_SOURCE_REMOVE;
	}
	if (remote->arguments != NULL)
		args = json_from_string(remote->arguments, NULL);
	confab_toolbox_call_elicit_async(
	    remote->toolbox,
	    remote->agent_id,
	    remote->config_json,
	    remote->name,
	    args != NULL && JSON_NODE_HOLDS_OBJECT(args) ? json_node_get_object(args) : NULL,
	    remote->progress != NULL ? on_remote_progress : NULL,
	    remote->elicit != NULL ? on_remote_elicit : NULL,
	    remote,
	    NULL,
	    remote->inner,
	    on_remote_done,
	    remote_ref(remote));
	return G_SOURCE_REMOVE;
}

/* From another thread: a task on the caller's context, the work on the
 * toolbox's. @remote is the caller's (transfer full). */
static void
remote_run(ConfabToolbox *self,
	   Remote *remote,
	   gpointer source_tag,
	   GCancellable *cancellable,
	   GAsyncReadyCallback callback,
	   gpointer user_data)
{
	remote->ref_count = 1;
	remote->toolbox = g_object_ref(self);
	remote->task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(remote->task, source_tag);
	remote->caller = g_main_context_ref_thread_default();
	remote->inner = g_cancellable_new();
	if (cancellable != NULL) {
		remote->outer = g_object_ref(cancellable);
		remote->outer_id = g_cancellable_connect(cancellable,
							 G_CALLBACK(on_remote_outer_cancelled),
							 remote_ref(remote),
							 (GDestroyNotify)remote_unref);
	}
	attach_idle(self->context, remote_start, remote, (GDestroyNotify)remote_unref);
}

/**
 * confab_toolbox_list_tools_async:
 * @self: a #ConfabToolbox
 * @agent_id: the agent
 * @config_json: (nullable): its `mcp_servers`
 * @cancellable: (nullable): a #GCancellable
 * @callback: called with the tools
 * @user_data: data for @callback
 *
 * Lists the tools of an agent's servers, starting the ones that are not
 * running (or reconciling them with @config_json, see #ConfabToolbox). A
 * server that could not start, or is waiting to start again, is one entry
 * with an empty name and the status "failed: " and why.
 */
void
confab_toolbox_list_tools_async(ConfabToolbox *self,
				const gchar *agent_id,
				const gchar *config_json,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	g_autoptr(Agent) agent = NULL;
	GError *error = NULL;

	g_return_if_fail(CONFAB_IS_TOOLBOX(self));
	g_return_if_fail(agent_id != NULL);

	if (!on_own_context(self)) {
		Remote *remote = g_new0(Remote, 1);
		remote->agent_id = g_strdup(agent_id);
		remote->config_json = g_strdup(config_json);
		remote_run(self,
			   remote,
			   confab_toolbox_list_tools_async,
			   cancellable,
			   callback,
			   user_data);
		return;
	}
	agent = agent_get(self, agent_id, config_json, &error);
	if (agent == NULL) {
		g_task_report_error(self,
				    callback,
				    user_data,
				    confab_toolbox_list_tools_async,
				    error);
		return;
	}
	agent_list_async(self, agent, cancellable, callback, user_data);
}

/**
 * confab_toolbox_list_tools_finish:
 * @self: a #ConfabToolbox
 * @result: the result
 * @error: return location for a #GError
 *
 * Returns: (transfer full) (element-type ConfabToolboxTool): the tools
 */
GPtrArray *
confab_toolbox_list_tools_finish(ConfabToolbox *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* ---------- calls ---------- */

typedef struct {
	Agent *agent;	       /* owned */
	gchar *name;	       /* owned: as the model sees it */
	Server *server;	       /* owned, nullable: once found */
	gchar *tool;	       /* owned, nullable: its name on the server */
	JsonObject *arguments; /* owned, nullable */
	ConfabToolboxProgressFunc progress;
	ConfabToolboxElicitFunc elicit;
	gpointer progress_data;
	GDestroyNotify progress_notify;
	gboolean listed;
} Call;

/* An `elicitation/create` of the server's: the call whose answer stream
 * brought it has it (Streamable HTTP); where nothing ties it to a call
 * (stdio, the standalone stream), the oldest call in flight on the server
 * that takes elicitations. With none, dropping it answers `cancel`. */
static void
on_server_elicit(ConfabMcpClient *client,
		 ConfabMcpElicitation *elicitation,
		 gpointer call_data,
		 gpointer user_data)
{
	Server *server = user_data;
	GList *related = call_data != NULL ? g_queue_find(&server->calls, call_data) : NULL;

	if (related != NULL) {
		Call *call = related->data;
		if (call->elicit != NULL)
			call->elicit(elicitation, call->progress_data);
		else
			g_message("%s: the call asking takes no elicitation: cancel",
				  server->label);
		return;
	}
	for (GList *l = server->calls.head; l != NULL; l = l->next) {
		Call *call = l->data;
		if (call->elicit != NULL) {
			call->elicit(elicitation, call->progress_data);
			return;
		}
	}
	g_message("%s: no call in flight takes an elicitation: cancel", server->label);
}

/* The progress function is done with once the call ends. */
static void
call_end_progress(Call *call)
{
	GDestroyNotify notify = g_steal_pointer(&call->progress_notify);

	call->progress = NULL;
	call->elicit = NULL;
	if (call->server != NULL)
		g_queue_remove(&call->server->calls, call);
	if (notify != NULL)
		notify(g_steal_pointer(&call->progress_data));
}

static void
call_free(Call *call)
{
	call_end_progress(call);
	g_clear_pointer(&call->agent, agent_unref);
	g_clear_pointer(&call->server, server_unref);
	g_clear_pointer(&call->arguments, json_object_unref);
	g_free(call->name);
	g_free(call->tool);
	g_free(call);
}

static void
call_fail(GTask *task, GError *error)
{
	call_end_progress(g_task_get_task_data(task));
	g_task_return_error(task, error);
}

static void
on_call_progress(gdouble progress, gdouble total, const gchar *message, gpointer user_data)
{
	Call *call = user_data;

	if (call->progress != NULL)
		call->progress(progress, total, message, call->progress_data);
}

static void
on_call_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	GError *error = NULL;
	ConfabMcpToolResult *tool_result =
	    confab_mcp_client_call_tool_finish(CONFAB_MCP_CLIENT(source), result, &error);

	if (tool_result == NULL) {
		call_fail(task, error);
		return;
	}
	call_end_progress(g_task_get_task_data(task));
	g_task_return_pointer(task, tool_result, (GDestroyNotify)confab_mcp_tool_result_free);
}

static void
on_call_ready(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabToolbox *self = g_task_get_source_object(task);
	Call *call = g_task_get_task_data(task);
	Server *server = call->server;
	GCancellable *cancellable = g_task_get_cancellable(task);
	GError *error = NULL;

	if (!server_ensure_finish(result, &error)) {
		call_fail(task, error);
		return;
	}
	if (server->state != SERVER_READY) {
		call_fail(task,
			  g_error_new(G_IO_ERROR,
				      G_IO_ERROR_CONNECTION_CLOSED,
				      "The MCP server %s stopped",
				      server->label));
		return;
	}
	g_queue_push_tail(&server->calls, call);
	confab_mcp_client_call_tool_async(server->client,
					  call->tool,
					  call->arguments,
					  confab_tool_config_server_get_timeout_ms(server->conf),
					  self->max_output_bytes,
					  call->progress != NULL ? on_call_progress : NULL,
					  call,
					  NULL,
					  cancellable,
					  on_call_done,
					  g_steal_pointer(&task));
}

static void
call_resolve(GTask *task);

static void
on_call_listed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	g_autoptr(GPtrArray) tools = NULL;
	GError *error = NULL;

	/* a listing that failed leaves the name unknown: that is the error */
	tools = g_task_propagate_pointer(G_TASK(result), &error);
	if (tools == NULL && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
		call_fail(task, error);
		return;
	}
	g_clear_error(&error);
	call_resolve(g_steal_pointer(&task));
}

/* From the name the model used to a server and a tool; a name not known
 * yet makes one listing first (a call before any listing). */
static void
call_resolve(GTask *task)
{
	ConfabToolbox *self = g_task_get_source_object(task);
	Call *call = g_task_get_task_data(task);
	ConfabToolboxTool *tool = NULL;
	Server *server = NULL;

	if (call->agent->detached) {
		call_fail(task,
			  g_error_new(G_IO_ERROR,
				      G_IO_ERROR_CONNECTION_CLOSED,
				      "The tool servers of the agent %s were stopped",
				      call->agent->id));
		g_object_unref(task);
		return;
	}
	tool = g_hash_table_lookup(call->agent->names, call->name);
	if (tool == NULL && !call->listed) {
		call->listed = TRUE;
		agent_list_async(self,
				 call->agent,
				 g_task_get_cancellable(task),
				 on_call_listed,
				 task);
		return;
	}
	if (tool != NULL)
		server = agent_find_server(call->agent, tool->server);
	if (server == NULL) {
		GError *error = NULL;
		confab_error_set_printf(&error,
					CONFAB_ERROR_NOT_FOUND,
					NULL,
					"No tool server of the agent %s has a tool named %s",
					call->agent->id,
					call->name);
		call_fail(task, error);
		g_object_unref(task);
		return;
	}
	call->server = server_ref(server);
	call->tool = g_strdup(tool->tool);
	server_ensure_async(call->server, self, g_task_get_cancellable(task), on_call_ready, task);
}

static void
call_async_remote(ConfabToolbox *self,
		  const gchar *agent_id,
		  const gchar *config_json,
		  const gchar *name,
		  JsonObject *arguments,
		  ConfabToolboxProgressFunc progress,
		  ConfabToolboxElicitFunc elicit,
		  gpointer progress_data,
		  GDestroyNotify progress_notify,
		  GCancellable *cancellable,
		  GAsyncReadyCallback callback,
		  gpointer user_data)
{
	Remote *remote = g_new0(Remote, 1);

	remote->agent_id = g_strdup(agent_id);
	remote->config_json = g_strdup(config_json);
	remote->name = g_strdup(name);
	if (arguments != NULL) {
		g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), arguments);
		remote->arguments = json_to_string(node, FALSE);
	}
	remote->progress = progress;
	remote->elicit = elicit;
	remote->progress_data = progress_data;
	remote->progress_notify = progress_notify;
	remote_run(self, remote, confab_toolbox_call_async, cancellable, callback, user_data);
}

/**
 * confab_toolbox_call_async:
 * @self: a #ConfabToolbox
 * @agent_id: the agent
 * @config_json: (nullable): its `mcp_servers`
 * @name: the tool's name as the model saw it (`SERVER__tool`)
 * @arguments: (nullable): its arguments; %NULL for none
 * @progress: (nullable) (scope notified): called for each
 *   `notifications/progress` about the call
 * @progress_data: data for @progress
 * @progress_notify: (nullable): frees @progress_data when the call ends
 * @cancellable: (nullable): cancels the call; the server is sent
 *   `notifications/cancelled`
 * @callback: called with the result
 * @user_data: data for @callback
 *
 * Calls a tool of an agent's servers, starting its server if needed. The
 * server's `timeout` bounds the call. Fails with %CONFAB_ERROR_NOT_FOUND
 * for a name no server of the agent offers, %G_IO_ERROR_TIMED_OUT,
 * %G_IO_ERROR_CANCELLED, %G_IO_ERROR_CONNECTION_CLOSED when the server
 * died (or was stopped), the server's start error when it cannot start or
 * waits to start again, and %CONFAB_ERROR_UPSTREAM for a JSON-RPC error.
 * A tool that failed by its own account is a result with @is_error set.
 * The server's elicitations are refused (answered `cancel`).
 */
void
confab_toolbox_call_async(ConfabToolbox *self,
			  const gchar *agent_id,
			  const gchar *config_json,
			  const gchar *name,
			  JsonObject *arguments,
			  ConfabToolboxProgressFunc progress,
			  gpointer progress_data,
			  GDestroyNotify progress_notify,
			  GCancellable *cancellable,
			  GAsyncReadyCallback callback,
			  gpointer user_data)
{
	confab_toolbox_call_elicit_async(self,
					 agent_id,
					 config_json,
					 name,
					 arguments,
					 progress,
					 NULL,
					 progress_data,
					 progress_notify,
					 cancellable,
					 callback,
					 user_data);
}

/**
 * confab_toolbox_call_elicit_async:
 * @self: a #ConfabToolbox
 * @agent_id: the agent
 * @config_json: (nullable): its `mcp_servers`
 * @name: the tool's name as the model saw it (`SERVER__tool`)
 * @arguments: (nullable): its arguments; %NULL for none
 * @progress: (nullable) (scope notified): called for each
 *   `notifications/progress` about the call
 * @elicit: (nullable) (scope notified): called, on the caller's context,
 *   with each `elicitation/create` the server sends while the call is in
 *   flight (see #ConfabToolboxElicitFunc)
 * @progress_data: data for @progress and @elicit
 * @progress_notify: (nullable): frees @progress_data when the call ends
 * @cancellable: (nullable): cancels the call
 * @callback: called with the result
 * @user_data: data for @callback
 *
 * As confab_toolbox_call_async(), with the server's elicitations handed
 * to @elicit.
 */
void
confab_toolbox_call_elicit_async(ConfabToolbox *self,
				 const gchar *agent_id,
				 const gchar *config_json,
				 const gchar *name,
				 JsonObject *arguments,
				 ConfabToolboxProgressFunc progress,
				 ConfabToolboxElicitFunc elicit,
				 gpointer progress_data,
				 GDestroyNotify progress_notify,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	g_autoptr(GTask) task = NULL;
	GError *error = NULL;
	Call *call;

	g_return_if_fail(CONFAB_IS_TOOLBOX(self));
	g_return_if_fail(agent_id != NULL);
	g_return_if_fail(name != NULL);

	if (!on_own_context(self)) {
		call_async_remote(self,
				  agent_id,
				  config_json,
				  name,
				  arguments,
				  progress,
				  elicit,
				  progress_data,
				  progress_notify,
				  cancellable,
				  callback,
				  user_data);
		return;
	}
	call = g_new0(Call, 1);
	call->name = g_strdup(name);
	call->arguments = arguments != NULL ? json_object_ref(arguments) : NULL;
	call->progress = progress;
	call->elicit = elicit;
	call->progress_data = progress_data;
	call->progress_notify = progress_notify;
	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_toolbox_call_async);
	g_task_set_task_data(task, call, (GDestroyNotify)call_free);
	call->agent = agent_get(self, agent_id, config_json, &error);
	if (call->agent == NULL) {
		call_fail(task, error);
		return;
	}
	if (g_task_return_error_if_cancelled(task))
		return;
	call_resolve(g_steal_pointer(&task));
}

typedef struct {
	ConfabMcpElicitation *elicitation; /* owned */
	gchar *action;			   /* owned, nullable: only drop it */
	JsonObject *content;		   /* owned, nullable */
} Answer;

static void
answer_free(Answer *answer)
{
	confab_mcp_elicitation_unref(answer->elicitation);
	g_free(answer->action);
	g_clear_pointer(&answer->content, json_object_unref);
	g_free(answer);
}

/* on the toolbox's context */
static gboolean
answer_deliver(gpointer user_data)
{
	Answer *answer = user_data;
	g_autoptr(GError) error = NULL;

	if (answer->action != NULL && !confab_mcp_elicitation_is_answered(answer->elicitation) &&
	    !confab_mcp_elicitation_respond(answer->elicitation,
					    answer->action,
					    answer->content,
					    &error))
		g_message("answering an elicitation of %s: %s",
			  confab_mcp_elicitation_get_server(answer->elicitation),
			  error->message);
	return G_SOURCE_REMOVE;
}

/**
 * confab_toolbox_answer_elicitation:
 * @self: a #ConfabToolbox
 * @elicitation: (transfer full): an elicitation a #ConfabToolboxElicitFunc
 *   was given (and referenced)
 * @action: (nullable): `accept`, `decline` or `cancel`; %NULL to answer
 *   nothing but drop the reference (an elicitation nobody answers is
 *   answered `cancel` when its last reference goes)
 * @content: (nullable): with `accept`, the content (checked again against
 *   the schema; content that does not match answers nothing)
 *
 * Answers the server from any thread: the answer, and the last reference,
 * are handed to the toolbox's context, where the server's client runs.
 */
void
confab_toolbox_answer_elicitation(ConfabToolbox *self,
				  ConfabMcpElicitation *elicitation,
				  const gchar *action,
				  JsonObject *content)
{
	Answer *answer = g_new0(Answer, 1);

	g_return_if_fail(CONFAB_IS_TOOLBOX(self));
	answer->elicitation = elicitation;
	answer->action = g_strdup(action);
	answer->content = content != NULL ? json_object_ref(content) : NULL;
	attach_idle(self->context, answer_deliver, answer, (GDestroyNotify)answer_free);
}

/**
 * confab_toolbox_call_finish:
 * @self: a #ConfabToolbox
 * @result: the result
 * @error: return location for a #GError
 *
 * Returns: (transfer full): what the tool returned, as the model reads it
 */
ConfabMcpToolResult *
confab_toolbox_call_finish(ConfabToolbox *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * confab_toolbox_is_tool:
 * @self: a #ConfabToolbox
 * @agent_id: the agent
 * @config_json: (nullable): its `mcp_servers`
 * @name: a tool name the model used
 *
 * Whether @name is one of the agent's server tools, as last listed: the
 * loop runs those and hands the others to the client. Starts nothing.
 *
 * Returns: %TRUE for a server tool
 */
gboolean
confab_toolbox_is_tool(ConfabToolbox *self,
		       const gchar *agent_id,
		       const gchar *config_json,
		       const gchar *name)
{
	g_autoptr(Agent) agent = NULL;

	g_return_val_if_fail(CONFAB_IS_TOOLBOX(self), FALSE);
	g_return_val_if_fail(agent_id != NULL, FALSE);
	g_return_val_if_fail(name != NULL, FALSE);

	agent = agent_get(self, agent_id, config_json, NULL);
	return agent != NULL && g_hash_table_contains(agent->names, name);
}

/**
 * confab_toolbox_lookup_tool:
 * @self: a #ConfabToolbox
 * @agent_id: the agent
 * @name: a tool name the model used
 * @server: (out) (optional) (transfer full): its server's name
 * @tool: (out) (optional) (transfer full): its name on that server
 *
 * Where a server tool of the agent, as last listed, comes from (for the
 * transcript's `tool_call`).
 *
 * Returns: %TRUE if @name is one
 */
gboolean
confab_toolbox_lookup_tool(ConfabToolbox *self,
			   const gchar *agent_id,
			   const gchar *name,
			   gchar **server,
			   gchar **tool)
{
	Agent *agent;
	ConfabToolboxTool *found;

	g_return_val_if_fail(CONFAB_IS_TOOLBOX(self), FALSE);
	g_return_val_if_fail(agent_id != NULL, FALSE);
	g_return_val_if_fail(name != NULL, FALSE);

	agent = g_hash_table_lookup(self->agents, agent_id);
	found = agent != NULL ? g_hash_table_lookup(agent->names, name) : NULL;
	if (found == NULL)
		return FALSE;
	if (server != NULL)
		*server = g_strdup(found->server);
	if (tool != NULL)
		*tool = g_strdup(found->tool);
	return TRUE;
}

typedef struct {
	ConfabToolbox *toolbox; /* owned */
	gchar *agent_id;	/* owned */
} ForgetAgent;

static ForgetAgent *
forget_agent_data_new(ConfabToolbox *self, const gchar *agent_id)
{
	ForgetAgent *data = g_new0(ForgetAgent, 1);
	data->toolbox = g_object_ref(self);
	data->agent_id = g_strdup(agent_id);
	return data;
}

static void
forget_agent_data_free(ForgetAgent *data)
{
	g_object_unref(data->toolbox);
	g_free(data->agent_id);
	g_free(data);
}

static gboolean
forget_agent_idle(gpointer user_data)
{
	ForgetAgent *data = user_data;
	confab_toolbox_forget_agent(data->toolbox, data->agent_id);
	return G_SOURCE_REMOVE;
}

/**
 * confab_toolbox_forget_agent:
 * @self: a #ConfabToolbox
 * @agent_id: the agent
 *
 * The agent changed or was deleted: its servers stop (their calls in
 * flight fail); they start again, with the config of the next use.
 */
void
confab_toolbox_forget_agent(ConfabToolbox *self, const gchar *agent_id)
{
	g_return_if_fail(CONFAB_IS_TOOLBOX(self));
	g_return_if_fail(agent_id != NULL);
	if (!on_own_context(self)) {
		attach_idle(self->context,
			    forget_agent_idle,
			    forget_agent_data_new(self, agent_id),
			    (GDestroyNotify)forget_agent_data_free);
		return;
	}
	g_hash_table_remove(self->agents, agent_id);
}

/**
 * confab_toolbox_get_server_pid:
 * @self: a #ConfabToolbox
 * @agent_id: the agent
 * @server: the name of one of its stdio servers
 *
 * Returns: the process id of the server, or 0 when it is not running
 */
GPid
confab_toolbox_get_server_pid(ConfabToolbox *self, const gchar *agent_id, const gchar *server)
{
	Agent *agent;
	Server *found;
	const gchar *identifier;

	g_return_val_if_fail(CONFAB_IS_TOOLBOX(self), 0);
	g_return_val_if_fail(agent_id != NULL, 0);
	g_return_val_if_fail(server != NULL, 0);

	agent = g_hash_table_lookup(self->agents, agent_id);
	found = agent != NULL ? agent_find_server(agent, server) : NULL;
	if (found == NULL || found->transport == NULL || !CONFAB_IS_MCP_STDIO(found->transport))
		return 0;
	identifier = confab_mcp_stdio_get_identifier(CONFAB_MCP_STDIO(found->transport));
	return identifier != NULL ? (GPid)g_ascii_strtoll(identifier, NULL, 10) : 0;
}

/* ---------- shutdown ---------- */

static void
shutdown_done(ConfabToolbox *self, const GError *error)
{
	GTask *task;

	unwatch_cancel(&self->shutdown_timeout);
	while ((task = g_queue_pop_head(&self->shutdowns)) != NULL) {
		if (error != NULL)
			g_task_return_error(task, g_error_copy(error));
		else
			g_task_return_boolean(task, TRUE);
		g_object_unref(task);
	}
}

static gboolean
on_shutdown_idle(gpointer user_data)
{
	ConfabToolbox *self = user_data;

	if (g_hash_table_size(self->stopping) == 0)
		shutdown_done(self, NULL);
	return G_SOURCE_REMOVE;
}

static void
on_transport_gone(gpointer user_data, GObject *where_the_object_was)
{
	ConfabToolbox *self = user_data;
	GSource *idle;

	g_hash_table_remove(self->stopping, where_the_object_was);
	if (g_hash_table_size(self->stopping) > 0 || g_queue_is_empty(&self->shutdowns))
		return;
	/* not from here: this runs inside whatever dropped the transport */
	idle = g_idle_source_new();
	g_source_set_callback(idle, on_shutdown_idle, g_object_ref(self), g_object_unref);
	g_source_attach(idle, g_main_context_get_thread_default());
	g_source_unref(idle);
}

static gboolean
on_shutdown_timeout(gpointer user_data)
{
	ConfabToolbox *self = user_data;
	g_autoptr(GError) error = g_error_new(G_IO_ERROR,
					      G_IO_ERROR_TIMED_OUT,
					      "%u MCP servers had not stopped after %u ms",
					      g_hash_table_size(self->stopping),
					      SHUTDOWN_TIMEOUT_MS);

	g_message("%s", error->message);
	shutdown_done(self, error);
	return G_SOURCE_REMOVE;
}

/**
 * confab_toolbox_shutdown_async:
 * @self: a #ConfabToolbox
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once every server stopped
 * @user_data: data for @callback
 *
 * Stops every server (stdio: SIGTERM, SIGKILL 5 s later; HTTP: the
 * session is deleted) and waits for them, at most 10 s, after which it
 * fails with %G_IO_ERROR_TIMED_OUT. From now on every use fails with
 * %CONFAB_ERROR_SHUTTING_DOWN.
 */
void
confab_toolbox_shutdown_async(ConfabToolbox *self,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data)
{
	g_autoptr(GTask) task = NULL;

	g_return_if_fail(CONFAB_IS_TOOLBOX(self));

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_toolbox_shutdown_async);
	self->shutting_down = TRUE;
	g_hash_table_remove_all(self->agents);
	if (g_hash_table_size(self->stopping) == 0) {
		g_task_return_boolean(task, TRUE);
		return;
	}
	g_message("Stopping %u MCP servers", g_hash_table_size(self->stopping));
	g_queue_push_tail(&self->shutdowns, g_steal_pointer(&task));
	if (self->shutdown_timeout == NULL) {
		self->shutdown_timeout = g_timeout_source_new(SHUTDOWN_TIMEOUT_MS);
		g_source_set_callback(self->shutdown_timeout, on_shutdown_timeout, self, NULL);
		g_source_attach(self->shutdown_timeout, g_main_context_get_thread_default());
	}
}

/**
 * confab_toolbox_shutdown_finish:
 * @self: a #ConfabToolbox
 * @result: the result
 * @error: return location for a #GError
 *
 * Returns: %TRUE if every server stopped in time
 */
gboolean
confab_toolbox_shutdown_finish(ConfabToolbox *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/* ---------- the object ---------- */

static void
agent_forget(Agent *agent)
{
	agent_detach(agent);
	agent_unref(agent);
}

static void
confab_toolbox_dispose(GObject *object)
{
	ConfabToolbox *self = CONFAB_TOOLBOX(object);
	GHashTableIter iter;
	gpointer transport;

	self->shutting_down = TRUE;
	g_hash_table_remove_all(self->agents);
	/* what still stops does so without us */
	g_hash_table_iter_init(&iter, self->stopping);
	while (g_hash_table_iter_next(&iter, &transport, NULL))
		g_object_weak_unref(transport, on_transport_gone, self);
	g_hash_table_remove_all(self->stopping);
	unwatch_cancel(&self->shutdown_timeout);
	G_OBJECT_CLASS(confab_toolbox_parent_class)->dispose(object);
}

static void
confab_toolbox_finalize(GObject *object)
{
	ConfabToolbox *self = CONFAB_TOOLBOX(object);

	g_assert(g_queue_is_empty(&self->shutdowns));
	g_hash_table_unref(self->agents);
	g_hash_table_unref(self->stopping);
	g_free(self->home_dir);
	g_free(self->redirect_uri);
	g_free(self->client_metadata_url);
	g_main_context_unref(self->context);
	G_OBJECT_CLASS(confab_toolbox_parent_class)->finalize(object);
}

static void
confab_toolbox_class_init(ConfabToolboxClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	struct sigaction action;

	object_class->dispose = confab_toolbox_dispose;
	object_class->finalize = confab_toolbox_finalize;
	/* a write to the stdin of a server that just died must fail with
	 * EPIPE, not kill the daemon: SIGPIPE is ignored, as GSocket does for
	 * sockets (a handler someone else installed is left alone) */
	if (sigaction(SIGPIPE, NULL, &action) == 0 && action.sa_handler == SIG_DFL)
		signal(SIGPIPE, SIG_IGN);
}

static void
confab_toolbox_init(ConfabToolbox *self)
{
	self->backoff_ms = DEFAULT_BACKOFF_MS;
	self->max_backoff_ms = DEFAULT_MAX_BACKOFF_MS;
	self->agents =
	    g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)agent_forget);
	self->stopping = g_hash_table_new(g_direct_hash, g_direct_equal);
	g_queue_init(&self->shutdowns);
	self->context = g_main_context_ref_thread_default();
}

/**
 * confab_toolbox_new:
 * @home_dir: HOME for stdio servers (the daemon's state directory)
 * @max_output_bytes: the most text of a tool result given to the model
 *   (`[tools] max_output_bytes`); 0 for 65536
 *
 * Its servers run on the thread-default main context; listings and calls
 * may come from any thread (see "Other threads" above).
 *
 * Returns: (transfer full): a toolbox for the thread-default main context
 */
ConfabToolbox *
confab_toolbox_new(const gchar *home_dir, gsize max_output_bytes)
{
	ConfabToolbox *self;

	g_return_val_if_fail(home_dir != NULL, NULL);

	self = g_object_new(CONFAB_TYPE_TOOLBOX, NULL);
	self->home_dir = g_strdup(home_dir);
	self->max_output_bytes = max_output_bytes > 0 ? max_output_bytes
						      : CONFAB_MCP_DEFAULT_MAX_OUTPUT_BYTES;
	return self;
}

/**
 * confab_toolbox_set_backoff:
 * @self: a #ConfabToolbox
 * @initial_ms: the wait before a server that died starts again (1000)
 * @max_ms: the longest wait, doubling from @initial_ms (60000); a server
 *   that ran this long before it died waits @initial_ms again
 */
void
confab_toolbox_set_backoff(ConfabToolbox *self, guint initial_ms, guint max_ms)
{
	g_return_if_fail(CONFAB_IS_TOOLBOX(self));
	g_return_if_fail(initial_ms > 0 && max_ms >= initial_ms);
	self->backoff_ms = initial_ms;
	self->max_backoff_ms = max_ms;
}

/* ---------- OAuth: hooks, authorizing ---------- */

/**
 * confab_toolbox_set_oauth:
 * @self: a #ConfabToolbox
 * @load: (nullable): reads a server's kept OAuth state
 * @save: (nullable): keeps it (write-only: it holds tokens)
 * @user_data: for both
 * @redirect_uri: (nullable): where authorization servers send the person
 *   back: confabd's `GET /api/v1/oauth/callback`
 * @client_metadata_url: (nullable): an https URL serving Confab's client
 *   ID metadata document, used as the client id where a server supports it
 *
 * Set before the first use: servers made before keep what they had.
 */
void
confab_toolbox_set_oauth(ConfabToolbox *self,
			 ConfabToolboxOAuthLoadFunc load,
			 ConfabToolboxOAuthSaveFunc save,
			 gpointer user_data,
			 const gchar *redirect_uri,
			 const gchar *client_metadata_url)
{
	g_return_if_fail(CONFAB_IS_TOOLBOX(self));
	self->oauth_load = load;
	self->oauth_save = save;
	self->oauth_data = user_data;
	g_free(self->redirect_uri);
	self->redirect_uri = g_strdup(redirect_uri);
	g_free(self->client_metadata_url);
	self->client_metadata_url = g_strdup(client_metadata_url);
}

/* The OAuth of @agent_id's server @name, or NULL with @error set. */
static Server *
oauth_server(ConfabToolbox *self,
	     const gchar *agent_id,
	     const gchar *config_json,
	     const gchar *name,
	     GError **error)
{
	Agent *agent = agent_get(self, agent_id, config_json, error);
	Server *server;

	if (agent == NULL)
		return NULL;
	server = agent_find_server(agent, name);
	if (server != NULL)
		server_ref(server);
	agent_unref(agent);
	if (server == NULL) {
		confab_error_set_printf(error,
					CONFAB_ERROR_NOT_FOUND,
					"server",
					"The agent '%s' has no MCP server '%s'",
					agent_id,
					name);
		return NULL;
	}
	if (server->oauth == NULL) {
		confab_error_set_printf(
		    error,
		    CONFAB_ERROR_INVALID_VALUE,
		    "server",
		    "The MCP server '%s' of the agent '%s' does not use OAuth (a stdio "
		    "server, or one with its own Authorization)",
		    name,
		    agent_id);
		server_unref(server);
		return NULL;
	}
	return server;
}

static void
authorized_free(gchar **authorized)
{
	if (authorized[2] != NULL)
		memset(authorized[2], 0, strlen(authorized[2]));
	g_strfreev(authorized);
}

static void
on_authorized(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabMcpOAuth *oauth = CONFAB_MCP_OAUTH(source);
	GError *error = NULL;
	gchar *url = confab_mcp_oauth_authorize_finish(oauth, result, &error);
	gchar **authorized;

	if (url == NULL) {
		g_task_return_error(task, error);
		return;
	}
	authorized = g_new0(gchar *, 5);
	authorized[0] = url;
	authorized[1] = g_strdup(confab_mcp_oauth_get_pending_state(oauth));
	authorized[2] = confab_mcp_oauth_save_state(oauth);
	authorized[3] = g_strdup_printf("%" G_GINT64_FORMAT, confab_mcp_oauth_get_version(oauth));
	g_task_return_pointer(task, authorized, (GDestroyNotify)authorized_free);
}

/**
 * confab_toolbox_authorize_async:
 * @self: a #ConfabToolbox
 * @agent_id: the agent
 * @config_json: its `mcp_servers`
 * @server: the name of one of its HTTP servers
 *
 * Makes a new authorization URL (authorization code, PKCE) for a person
 * to open; its state is kept, so that the callback may reach any instance.
 * On the toolbox's own context only.
 */
void
confab_toolbox_authorize_async(ConfabToolbox *self,
			       const gchar *agent_id,
			       const gchar *config_json,
			       const gchar *server,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	GError *error = NULL;
	Server *found;

	g_return_if_fail(CONFAB_IS_TOOLBOX(self));
	g_return_if_fail(on_own_context(self));
	found = oauth_server(self, agent_id, config_json, server, &error);
	if (found == NULL) {
		g_task_return_error(task, error);
		return;
	}
	confab_mcp_oauth_authorize_async(found->oauth,
					 cancellable,
					 on_authorized,
					 g_steal_pointer(&task));
	server_unref(found);
}

/**
 * confab_toolbox_authorize_finish:
 * @pending_state: (out): the authorization's state
 * @kept: (out): the server's OAuth state to keep (secrets: wipe it),
 *   which the callback needs: the caller stores it before giving out the
 *   URL
 * @version: (out): its version
 *
 * Returns: (transfer full): the URL to open
 */
gchar *
confab_toolbox_authorize_finish(ConfabToolbox *self,
				GAsyncResult *result,
				gchar **pending_state,
				gchar **kept,
				gint64 *version,
				GError **error)
{
	gchar **authorized;
	gchar *url;

	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	authorized = g_task_propagate_pointer(G_TASK(result), error);
	if (authorized == NULL)
		return NULL;
	url = g_steal_pointer(&authorized[0]);
	*pending_state = g_steal_pointer(&authorized[1]);
	*kept = g_steal_pointer(&authorized[2]);
	*version = g_ascii_strtoll(authorized[3], NULL, 10);
	g_free(authorized[3]);
	g_free(authorized);
	return url;
}

static void
wipe_string(gchar *secret)
{
	if (secret != NULL)
		memset(secret, 0, strlen(secret));
	g_free(secret);
}

static void
on_oauth_completed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	Server *server = g_task_get_task_data(task);
	GError *error = NULL;

	if (!confab_mcp_oauth_complete_finish(CONFAB_MCP_OAUTH(source), result, &error)) {
		g_task_return_error(task, error);
		return;
	}
	/* a server that waited for this starts at its next use */
	if (server->state == SERVER_FAILED)
		server->retry_at = 0;
	g_message("%s: authorized", server->label);
	g_task_return_pointer(task,
			      confab_mcp_oauth_save_state(CONFAB_MCP_OAUTH(source)),
			      (GDestroyNotify)wipe_string);
}

/**
 * confab_toolbox_complete_oauth_async:
 * @self: a #ConfabToolbox
 * @agent_id: the agent
 * @config_json: its `mcp_servers`
 * @server: the server the authorization is for
 * @kept: the server's kept OAuth state, as the store has it
 * @state: the callback's `state`
 * @code: (nullable): the callback's `code`
 *
 * Exchanges the code (with the PKCE verifier kept) for tokens; they are
 * kept through the save hook. On the toolbox's own context only.
 */
void
confab_toolbox_complete_oauth_async(ConfabToolbox *self,
				    const gchar *agent_id,
				    const gchar *config_json,
				    const gchar *server,
				    const gchar *kept,
				    const gchar *state,
				    const gchar *code,
				    GCancellable *cancellable,
				    GAsyncReadyCallback callback,
				    gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	GError *error = NULL;
	Server *found;

	g_return_if_fail(CONFAB_IS_TOOLBOX(self));
	g_return_if_fail(on_own_context(self));
	found = oauth_server(self, agent_id, config_json, server, &error);
	if (found == NULL) {
		g_task_return_error(task, error);
		return;
	}
	g_task_set_task_data(task, found, (GDestroyNotify)server_unref);
	if (kept != NULL && !confab_mcp_oauth_load_state(found->oauth, kept, &error)) {
		g_task_return_error(task, error);
		return;
	}
	confab_mcp_oauth_complete_async(found->oauth,
					state,
					code,
					cancellable,
					on_oauth_completed,
					g_steal_pointer(&task));
}

/**
 * confab_toolbox_complete_oauth_finish:
 *
 * Returns: (transfer full): the server's OAuth state, with its tokens, to
 *   keep before the person hears it worked (secrets: wipe it)
 */
gchar *
confab_toolbox_complete_oauth_finish(ConfabToolbox *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}
