/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMcpAuth"

#include "config.h"

#include <string.h>

#include "core/confab-config.h"
#include "core/confab-mcp-authorizations.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/**
 * ConfabMcpAuthorizations:
 *
 * OAuth of the agents' remote MCP servers, on confabd's side: the toolbox's
 * servers keep their OAuth state (client, tokens, the authorization
 * waiting for a person) in the store, table mcp_oauth, write-only (nothing
 * reads it out of confabd), so that any instance sharing the store uses
 * it; `AuthorizeMcpServer` makes the URL a person opens; the authorization
 * server sends the person back to `GET /api/v1/oauth/callback`, whose
 * `state` finds the authorization in the store (on any instance), is used
 * up in one conditional write, and whose code is exchanged for tokens.
 *
 * Everything here runs on the context it was made on (the daemon's main
 * one); the callback may be asked from a serving thread and hears back
 * there.
 */

struct _ConfabMcpAuthorizations {
	GObject parent_instance;
	ConfabStore *store;	/* owned */
	ConfabToolbox *toolbox; /* owned */
	GMainContext *context;	/* owned */
	ConfabMcpAuthorizationsLookup lookup;
	gpointer lookup_data;
	gchar *redirect_uri;
	gchar *client_metadata_url; /* nullable: without an https public URL */
};

G_DEFINE_FINAL_TYPE(ConfabMcpAuthorizations, confab_mcp_authorizations, G_TYPE_OBJECT)

/* ---------- the toolbox's hooks ---------- */

typedef struct {
	ConfabMcpOAuthLoaded done;
	gpointer done_data;
} Load;

static void
on_loaded(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Load *load = user_data;
	g_autoptr(GError) error = NULL;
	gchar *data = confab_store_get_mcp_oauth_finish(CONFAB_STORE(source), result, &error);

	if (data == NULL && !g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_NOT_FOUND))
		g_message("reading an MCP server's OAuth state: %s", error->message);
	load->done(data, load->done_data);
	g_free(load);
}

static void
hook_load(const gchar *agent_id,
	  const gchar *server,
	  ConfabMcpOAuthLoaded done,
	  gpointer done_data,
	  gpointer user_data)
{
	ConfabMcpAuthorizations *self = user_data;
	Load *load = g_new0(Load, 1);

	load->done = done;
	load->done_data = done_data;
	confab_store_get_mcp_oauth_async(self->store, agent_id, server, NULL, on_loaded, load);
}

static void
on_saved(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autofree gchar *label = user_data;
	g_autoptr(GError) error = NULL;

	if (!confab_store_save_mcp_oauth_finish(CONFAB_STORE(source), result, &error))
		g_warning("%s: keeping the MCP server's OAuth state: %s", label, error->message);
}

static void
hook_save(const gchar *agent_id,
	  const gchar *server,
	  const gchar *pending_state,
	  const gchar *data,
	  gint64 version,
	  gpointer user_data)
{
	ConfabMcpAuthorizations *self = user_data;

	confab_store_save_mcp_oauth_async(self->store,
					  agent_id,
					  server,
					  pending_state,
					  data,
					  version,
					  NULL,
					  on_saved,
					  g_strdup_printf("%s/%s", agent_id, server));
}

/* ---------- AuthorizeMcpServer ---------- */

/* The URL goes out once its state is stored: the callback may reach any
 * instance, at once. */
static void
on_authorization_kept(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	GError *error = NULL;

	if (!confab_store_save_mcp_oauth_finish(CONFAB_STORE(source), result, &error)) {
		g_task_return_error(task, error);
		return;
	}
	g_task_return_pointer(task, g_strdup(g_task_get_task_data(task)), g_free);
}

static void
on_authorize_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabMcpAuthorizations *self = g_task_get_source_object(task);
	const gchar *const *key = g_object_get_data(G_OBJECT(task), "key");
	GError *error = NULL;
	g_autofree gchar *state = NULL;
	g_autofree gchar *kept = NULL;
	gint64 version = 0;
	gchar *url = confab_toolbox_authorize_finish(CONFAB_TOOLBOX(source),
						     result,
						     &state,
						     &kept,
						     &version,
						     &error);

	if (url == NULL) {
		g_task_return_error(task, error);
		return;
	}
	g_task_set_task_data(task, url, g_free);
	confab_store_save_mcp_oauth_async(self->store,
					  key[0],
					  key[1],
					  state,
					  kept,
					  version,
					  NULL,
					  on_authorization_kept,
					  g_steal_pointer(&task));
	memset(kept, 0, strlen(kept));
}

/**
 * confab_mcp_authorizations_authorize_async:
 * @agent_id: an agent
 * @server: the name of one of its HTTP MCP servers
 *
 * Makes the URL a person opens to authorize Confab (authorization code
 * with PKCE); a URL made before for that server no longer counts. On the
 * context @self was made on.
 */
void
confab_mcp_authorizations_authorize_async(ConfabMcpAuthorizations *self,
					  const gchar *agent_id,
					  const gchar *server,
					  GCancellable *cancellable,
					  GAsyncReadyCallback callback,
					  gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	g_autoptr(ConfabAgent) agent = self->lookup(agent_id, self->lookup_data);
	gchar **key = g_new0(gchar *, 3);

	key[0] = g_strdup(agent_id);
	key[1] = g_strdup(server);
	g_object_set_data_full(G_OBJECT(task), "key", key, (GDestroyNotify)g_strfreev);
	if (agent == NULL) {
		g_task_return_new_error(task,
					CONFAB_ERROR,
					CONFAB_ERROR_AGENT_NOT_FOUND,
					"No agent '%s'",
					agent_id);
		return;
	}
	confab_toolbox_authorize_async(self->toolbox,
				       agent_id,
				       confab_agent_get_mcp_servers(agent),
				       server,
				       cancellable,
				       on_authorize_done,
				       g_steal_pointer(&task));
}

/**
 * confab_mcp_authorizations_authorize_finish:
 *
 * Returns: (transfer full): the URL to open
 */
gchar *
confab_mcp_authorizations_authorize_finish(ConfabMcpAuthorizations *self,
					   GAsyncResult *result,
					   GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* ---------- the callback ---------- */

typedef struct {
	gchar *state;
	gchar *code;	   /* secret */
	gchar *error_code; /* the authorization server's refusal */
	gchar **found;	   /* agent id, server, kept state */
} Callback;

static void
callback_free(Callback *cb)
{
	g_free(cb->state);
	if (cb->code != NULL)
		memset(cb->code, 0, strlen(cb->code));
	g_free(cb->code);
	g_free(cb->error_code);
	if (cb->found != NULL && cb->found[2] != NULL)
		memset(cb->found[2], 0, strlen(cb->found[2]));
	g_strfreev(cb->found);
	g_free(cb);
}

static void
callback_fail(GTask *task, const gchar *message)
{
	g_task_return_new_error(task,
				CONFAB_MCP_OAUTH_ERROR,
				CONFAB_MCP_OAUTH_ERROR_BAD_STATE,
				"%s",
				message);
	g_object_unref(task);
}

/* The tokens are stored before the person hears it worked: the next use,
 * on any instance, has them. */
static void
on_tokens_kept(GObject *source, GAsyncResult *result, gpointer user_data)
{
	GTask *task = user_data;
	Callback *cb = g_task_get_task_data(task);
	GError *error = NULL;

	if (!confab_store_save_mcp_oauth_finish(CONFAB_STORE(source), result, &error))
		g_task_return_error(task, error);
	else
		g_task_return_pointer(task,
				      g_strdup_printf("%s/%s", cb->found[0], cb->found[1]),
				      g_free);
	g_object_unref(task);
}

static void
on_completed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	GTask *task = user_data;
	ConfabMcpAuthorizations *self = g_task_get_source_object(task);
	Callback *cb = g_task_get_task_data(task);
	GError *error = NULL;
	gchar *kept = confab_toolbox_complete_oauth_finish(CONFAB_TOOLBOX(source), result, &error);
	g_autoptr(JsonNode) root = NULL;
	const gchar *version;

	if (kept == NULL) {
		g_task_return_error(task, error);
		g_object_unref(task);
		return;
	}
	root = confab_json_from_string(kept);
	version = root != NULL && JSON_NODE_HOLDS_OBJECT(root)
		      ? confab_json_get_string(json_node_get_object(root), "version")
		      : NULL;
	confab_store_save_mcp_oauth_async(self->store,
					  cb->found[0],
					  cb->found[1],
					  NULL,
					  kept,
					  version != NULL ? g_ascii_strtoll(version, NULL, 10) : 0,
					  NULL,
					  on_tokens_kept,
					  task);
	memset(kept, 0, strlen(kept));
	g_free(kept);
}

static void
on_claimed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	GTask *task = user_data;
	ConfabMcpAuthorizations *self = g_task_get_source_object(task);
	Callback *cb = g_task_get_task_data(task);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabAgent) agent = NULL;
	g_autofree gchar *why = NULL;

	if (!confab_store_claim_mcp_oauth_state_finish(CONFAB_STORE(source), result, &error)) {
		callback_fail(task, "The OAuth callback's state was used already");
		return;
	}
	agent = self->lookup(cb->found[0], self->lookup_data);
	if (agent == NULL) {
		callback_fail(task, "The agent of this authorization is gone");
		return;
	}
	if (cb->error_code != NULL) {
		why =
		    g_strdup_printf("The MCP server %s/%s: OAuth authorization: the authorization "
				    "server answered “%s”",
				    cb->found[0],
				    cb->found[1],
				    cb->error_code);
		callback_fail(task, why);
		return;
	}
	confab_toolbox_complete_oauth_async(self->toolbox,
					    cb->found[0],
					    confab_agent_get_mcp_servers(agent),
					    cb->found[1],
					    cb->found[2],
					    cb->state,
					    cb->code,
					    NULL,
					    on_completed,
					    task);
}

static void
on_found(GObject *source, GAsyncResult *result, gpointer user_data)
{
	GTask *task = user_data;
	Callback *cb = g_task_get_task_data(task);
	g_autoptr(GError) error = NULL;

	cb->found = confab_store_find_mcp_oauth_state_finish(CONFAB_STORE(source), result, &error);
	if (cb->found == NULL) {
		if (!g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_NOT_FOUND))
			g_message("OAuth callback: %s", error->message);
		callback_fail(task,
			      "The OAuth callback's state is unknown or was used already: start "
			      "again with `confabctl agent authorize`");
		return;
	}
	confab_store_claim_mcp_oauth_state_async(CONFAB_STORE(source),
						 cb->state,
						 NULL,
						 on_claimed,
						 task);
}

static gboolean
callback_begin(gpointer user_data)
{
	GTask *task = user_data;
	ConfabMcpAuthorizations *self = g_task_get_source_object(task);
	Callback *cb = g_task_get_task_data(task);

	confab_store_find_mcp_oauth_state_async(self->store, cb->state, NULL, on_found, task);
	return G_SOURCE_REMOVE;
}

/**
 * confab_mcp_authorizations_callback_async:
 * @state: (nullable): the callback's `state`
 * @code: (nullable): its `code`
 * @error_code: (nullable): its `error` (the person or the server refused)
 *
 * Completes the authorization @state names: strictly once (an unknown or
 * replayed state is refused, and so is a callback without a code, after
 * using the state up). Any thread.
 */
void
confab_mcp_authorizations_callback_async(ConfabMcpAuthorizations *self,
					 const gchar *state,
					 const gchar *code,
					 const gchar *error_code,
					 GCancellable *cancellable,
					 GAsyncReadyCallback callback,
					 gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);
	Callback *cb;

	g_task_set_source_tag(task, confab_mcp_authorizations_callback_async);
	if (state == NULL || *state == '\0' || strlen(state) > 512) {
		callback_fail(task, "The OAuth callback carries no state");
		return;
	}
	cb = g_new0(Callback, 1);
	cb->state = g_strdup(state);
	cb->code = g_strdup(code);
	cb->error_code =
	    error_code != NULL ? g_utf8_make_valid(error_code, MIN(strlen(error_code), 64)) : NULL;
	g_task_set_task_data(task, cb, (GDestroyNotify)callback_free);
	g_main_context_invoke(self->context, callback_begin, task);
}

/**
 * confab_mcp_authorizations_callback_finish:
 *
 * Returns: (transfer full): the "agent/server" now authorized
 */
gchar *
confab_mcp_authorizations_callback_finish(ConfabMcpAuthorizations *self,
					  GAsyncResult *result,
					  GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* ---------- the object ---------- */

/**
 * confab_mcp_authorizations_public_url:
 * @configured: (nullable): `[http] public_url`
 * @listen: `[daemon] listen`
 *
 * Returns: (transfer full): where people reach confabd: @configured, else
 *   http:// and the listen address (a wildcard host as 127.0.0.1)
 */
gchar *
confab_mcp_authorizations_public_url(const gchar *configured, const gchar *listen)
{
	g_autofree gchar *host = NULL;
	guint16 port = 0;
	gchar *url;
	gsize len;

	if (configured != NULL && *configured != '\0') {
		url = g_strdup(configured);
		len = strlen(url);
		while (len > 0 && url[len - 1] == '/')
			url[--len] = '\0';
		return url;
	}
	if (!confab_config_parse_listen(listen, &host, &port, NULL))
		return g_strdup("http://127.0.0.1:8080");
	if (host == NULL || *host == '\0' || strcmp(host, "0.0.0.0") == 0 ||
	    strcmp(host, "::") == 0)
		return g_strdup_printf("http://127.0.0.1:%u", port);
	if (strchr(host, ':') != NULL)
		return g_strdup_printf("http://[%s]:%u", host, port);
	return g_strdup_printf("http://%s:%u", host, port);
}

static void
confab_mcp_authorizations_finalize(GObject *object)
{
	ConfabMcpAuthorizations *self = CONFAB_MCP_AUTHORIZATIONS(object);

	confab_toolbox_set_oauth(self->toolbox, NULL, NULL, NULL, NULL, NULL);
	g_object_unref(self->store);
	g_object_unref(self->toolbox);
	g_free(self->redirect_uri);
	g_free(self->client_metadata_url);
	g_main_context_unref(self->context);
	G_OBJECT_CLASS(confab_mcp_authorizations_parent_class)->finalize(object);
}

static void
confab_mcp_authorizations_class_init(ConfabMcpAuthorizationsClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = confab_mcp_authorizations_finalize;
}

static void
confab_mcp_authorizations_init(ConfabMcpAuthorizations *self)
{
	self->context = g_main_context_ref_thread_default();
}

/**
 * confab_mcp_authorizations_new:
 * @store: where the OAuth state is kept
 * @toolbox: the agents' tool servers: its hooks are set here
 * @public_url: where people reach confabd (see
 *   confab_mcp_authorizations_public_url())
 * @lookup: finds an agent by id (transfer full), thread-safe
 * @lookup_data: for @lookup
 *
 * Returns: (transfer full): a new #ConfabMcpAuthorizations
 */
ConfabMcpAuthorizations *
confab_mcp_authorizations_new(ConfabStore *store,
			      ConfabToolbox *toolbox,
			      const gchar *public_url,
			      ConfabMcpAuthorizationsLookup lookup,
			      gpointer lookup_data)
{
	ConfabMcpAuthorizations *self = g_object_new(CONFAB_TYPE_MCP_AUTHORIZATIONS, NULL);

	self->store = g_object_ref(store);
	self->toolbox = g_object_ref(toolbox);
	self->lookup = lookup;
	self->lookup_data = lookup_data;
	confab_mcp_authorizations_set_public_url(self, public_url);
	return self;
}

/**
 * confab_mcp_authorizations_set_public_url:
 * @public_url: where people reach confabd
 *
 * Once confabd knows the address it listens on (a port 0 is chosen when
 * it binds), for servers that start from then on.
 */
void
confab_mcp_authorizations_set_public_url(ConfabMcpAuthorizations *self, const gchar *public_url)
{
	g_return_if_fail(CONFAB_IS_MCP_AUTHORIZATIONS(self));
	g_clear_pointer(&self->redirect_uri, g_free);
	g_clear_pointer(&self->client_metadata_url, g_free);
	self->redirect_uri = g_strconcat(public_url, CONFAB_MCP_AUTHORIZATIONS_CALLBACK_PATH, NULL);
	/* a client ID metadata document must be at an https URL */
	if (g_str_has_prefix(public_url, "https://"))
		self->client_metadata_url =
		    g_strconcat(public_url, CONFAB_MCP_AUTHORIZATIONS_METADATA_PATH, NULL);
	confab_toolbox_set_oauth(self->toolbox,
				 hook_load,
				 hook_save,
				 self,
				 self->redirect_uri,
				 self->client_metadata_url);
}

/**
 * confab_mcp_authorizations_dup_client_metadata:
 *
 * Returns: (transfer full) (nullable): Confab's client ID metadata
 *   document (what `GET /api/v1/oauth/client-metadata.json` serves), or
 *   %NULL without an https public URL
 */
gchar *
confab_mcp_authorizations_dup_client_metadata(ConfabMcpAuthorizations *self)
{
	GString *out;

	g_return_val_if_fail(CONFAB_IS_MCP_AUTHORIZATIONS(self), NULL);
	if (self->client_metadata_url == NULL)
		return NULL;
	out = g_string_new("{\"client_id\":");
	confab_json_append_string(out, self->client_metadata_url);
	g_string_append(out, ",\"client_name\":\"Confab\",\"redirect_uris\":[");
	confab_json_append_string(out, self->redirect_uri);
	g_string_append(out,
			"],\"grant_types\":[\"authorization_code\",\"refresh_token\"],"
			"\"response_types\":[\"code\"],\"token_endpoint_auth_method\":\"none\"}");
	return g_string_free(out, FALSE);
}
