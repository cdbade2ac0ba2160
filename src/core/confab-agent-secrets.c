/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabEngine"

#include "config.h"

#include <string.h>

#include "core/confab-agent-secrets.h"
#include "tools/confab-tool-config.h"
#include "util/confab-error.h"

/*
 * An agent's secrets in the keyring (confabd --user): its upstream API key
 * (kind "api_key") and its tool servers' `env` and `headers` values (kind
 * "mcp_servers": the whole `mcp_servers` JSON, whose secrets are the point).
 * The database keeps CONFAB_AGENT_SECRETS_MARKER for the key and the masked
 * JSON (confab_tool_config_mask()) for the tools; the engine's cache keeps
 * the agent whole, in memory.
 *
 * The engine calls these when it saves an agent (keep, then store the
 * stripped copy), deletes one (forget) and loads them (hydrate: look the
 * secrets up, and move any still in the database to the keyring).
 */

/* ---------- what an agent holds ---------- */

static gboolean
key_is_plain(ConfabAgent *agent)
{
	const gchar *key = confab_agent_get_api_key(agent);
	return key != NULL && g_strcmp0(key, CONFAB_AGENT_SECRETS_MARKER) != 0;
}

/* Whether its tool servers have secrets in the clear: any env or headers
 * value that is not the mask. */
static gboolean
tools_are_plain(ConfabAgent *agent)
{
	const gchar *json = confab_agent_get_mcp_servers(agent);
	g_autoptr(ConfabToolConfig) config = NULL;

	if (json == NULL || strstr(json, CONFAB_TOOL_CONFIG_MASK) != NULL)
		return FALSE;
	config = confab_tool_config_parse(json, NULL);
	for (guint i = 0; config != NULL && i < confab_tool_config_get_n_servers(config); i++) {
		const ConfabToolConfigServer *server = confab_tool_config_get_server(config, i);
		const gchar *const *env = confab_tool_config_server_get_env(server);
		const gchar *const *headers = confab_tool_config_server_get_header_values(server);
		if ((env != NULL && env[0] != NULL) || (headers != NULL && headers[0] != NULL))
			return TRUE;
	}
	return FALSE;
}

/**
 * confab_agent_secrets_has_plain:
 * @agent: an agent
 *
 * Returns: whether @agent holds a secret in the clear (an API key, a tool
 *   secret) that the keyring should keep instead of the database
 */
gboolean
confab_agent_secrets_has_plain(ConfabAgent *agent)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(agent), FALSE);
	return key_is_plain(agent) || tools_are_plain(agent);
}

/**
 * confab_agent_secrets_strip:
 * @agent: an agent whose secrets are in the keyring
 *
 * Returns: (transfer full): the copy of @agent that the database keeps:
 *   the marker for its key, its tool secrets masked
 */
ConfabAgent *
confab_agent_secrets_strip(ConfabAgent *agent)
{
	ConfabAgent *copy = confab_agent_copy(agent);

	if (key_is_plain(agent))
		confab_agent_set_api_key(copy, CONFAB_AGENT_SECRETS_MARKER);
	if (tools_are_plain(agent)) {
		g_autofree gchar *masked =
		    confab_tool_config_mask(confab_agent_get_mcp_servers(agent));
		confab_agent_set_mcp_servers(copy, masked);
	}
	return copy;
}

/* ---------- keep, forget ---------- */

typedef struct {
	guint pending;
	GError *error; /* the first one */
} Keep;

static void
keep_free(Keep *keep)
{
	g_clear_error(&keep->error);
	g_free(keep);
}

static void
keep_step(GTask *task, GError *error)
{
	Keep *keep = g_task_get_task_data(task);

	if (error != NULL && keep->error == NULL)
		keep->error = error;
	else if (error != NULL)
		g_error_free(error);
	if (--keep->pending > 0)
		return;
	if (keep->error != NULL)
		g_task_return_error(task, g_steal_pointer(&keep->error));
	else
		g_task_return_boolean(task, TRUE);
}

static void
saved_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	GError *error = NULL;
	confab_secret_store_save_finish(CONFAB_SECRET_STORE(source), result, &error);
	keep_step(task, error);
}

static void
cleared_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	g_autoptr(GError) error = NULL;
	/* a secret that could not be removed is not a reason to keep the
	 * others in the database */
	if (!confab_secret_store_clear_finish(CONFAB_SECRET_STORE(source), result, &error))
		g_debug("removing a secret from the keyring: %s", error->message);
	keep_step(task, NULL);
}

static void
keep_one(ConfabSecretStore *secrets,
	 GTask *task,
	 ConfabAgent *agent,
	 const gchar *kind,
	 const gchar *what,
	 const gchar *secret)
{
	Keep *keep = g_task_get_task_data(task);

	keep->pending++;
	if (secret == NULL) {
		confab_secret_store_clear_async(secrets,
						confab_agent_get_id(agent),
						kind,
						NULL,
						cleared_cb,
						g_object_ref(task));
		return;
	}
	{
		g_autofree gchar *label = g_strdup_printf("Confab: %s of the agent %s",
							  what,
							  confab_agent_get_name(agent));
		confab_secret_store_save_async(secrets,
					       confab_agent_get_id(agent),
					       kind,
					       label,
					       secret,
					       NULL,
					       saved_cb,
					       g_object_ref(task));
	}
}

/**
 * confab_agent_secrets_keep_async:
 * @secrets: the keyring
 * @agent: an agent, its secrets in the clear
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once the keyring holds them
 * @user_data: data for @callback
 *
 * Stores the agent's API key and tool secrets in the keyring, and removes
 * from it those the agent no longer has. On failure the caller keeps the
 * agent in the database as it is.
 */
void
confab_agent_secrets_keep_async(ConfabSecretStore *secrets,
				ConfabAgent *agent,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(NULL, cancellable, callback, user_data);
	Keep *keep = g_new0(Keep, 1);

	g_task_set_source_tag(task, confab_agent_secrets_keep_async);
	g_task_set_task_data(task, keep, (GDestroyNotify)keep_free);
	/* held until every step has answered */
	keep->pending = 1;
	keep_one(secrets,
		 task,
		 agent,
		 CONFAB_SECRET_KIND_API_KEY,
		 "upstream API key",
		 key_is_plain(agent) ? confab_agent_get_api_key(agent) : NULL);
	keep_one(secrets,
		 task,
		 agent,
		 CONFAB_SECRET_KIND_MCP,
		 "tool servers",
		 tools_are_plain(agent) ? confab_agent_get_mcp_servers(agent) : NULL);
	keep_step(task, NULL);
}

gboolean
confab_agent_secrets_keep_finish(GAsyncResult *result, GError **error)
{
	return g_task_propagate_boolean(G_TASK(result), error);
}

static void
forgotten_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	if (!confab_secret_store_clear_finish(CONFAB_SECRET_STORE(source), result, &error))
		g_debug("removing a deleted agent's secrets: %s", error->message);
}

/**
 * confab_agent_secrets_forget:
 * @secrets: (nullable): the keyring
 * @agent_id: a deleted agent
 *
 * Removes every secret of @agent_id from the keyring, in the background.
 */
void
confab_agent_secrets_forget(ConfabSecretStore *secrets, const gchar *agent_id)
{
	if (secrets == NULL || !confab_secret_store_is_available(secrets))
		return;
	confab_secret_store_clear_async(secrets, agent_id, NULL, NULL, forgotten_cb, NULL);
}

/* ---------- hydrate ---------- */

typedef struct {
	ConfabSecretStore *secrets; /* owned, nullable */
	ConfabStore *store;	    /* owned */
	GPtrArray *agents;	    /* owned */
	guint pending;
} Hydrate;

static void
hydrate_free(Hydrate *h)
{
	g_clear_object(&h->secrets);
	g_clear_object(&h->store);
	g_ptr_array_unref(h->agents);
	g_free(h);
}

/* One step of one agent, with what it needs. */
typedef struct {
	GTask *task;	    /* owned */
	ConfabAgent *agent; /* owned */
} Step;

static Step *
step_new(GTask *task, ConfabAgent *agent)
{
	Step *step = g_new0(Step, 1);
	Hydrate *h = g_task_get_task_data(task);
	step->task = g_object_ref(task);
	step->agent = agent != NULL ? g_object_ref(agent) : NULL;
	h->pending++;
	return step;
}

/* A step is over; the last one returns the agents. */
static void
step_done(Step *step)
{
	Hydrate *h = g_task_get_task_data(step->task);
	if (--h->pending == 0)
		g_task_return_pointer(step->task,
				      g_ptr_array_ref(h->agents),
				      (GDestroyNotify)g_ptr_array_unref);
	g_object_unref(step->task);
	g_clear_object(&step->agent);
	g_free(step);
}

static void
key_found_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Step *step = user_data;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *key =
	    confab_secret_store_lookup_finish(CONFAB_SECRET_STORE(source), result, &error);

	if (key == NULL)
		g_warning("the upstream key of the agent %s is not in the keyring%s%s",
			  confab_agent_get_id(step->agent),
			  error != NULL ? ": " : "",
			  error != NULL ? error->message : "");
	confab_agent_set_api_key(step->agent, key);
	if (key != NULL)
		memset(key, 0, strlen(key));
	step_done(step);
}

static void
tools_found_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Step *step = user_data;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *full =
	    confab_secret_store_lookup_finish(CONFAB_SECRET_STORE(source), result, &error);
	g_autofree gchar *merged = NULL;

	/* the database's JSON says which servers and keys there are; the
	 * keyring's, what their secrets are */
	if (full == NULL ||
	    !confab_tool_config_merge_masked(full,
					     confab_agent_get_mcp_servers(step->agent),
					     &merged,
					     error == NULL ? &error : NULL)) {
		g_warning("the tool secrets of the agent %s are not in the keyring%s%s",
			  confab_agent_get_id(step->agent),
			  error != NULL ? ": " : "",
			  error != NULL ? error->message : "");
	} else {
		confab_agent_set_mcp_servers(step->agent, merged);
	}
	step_done(step);
}

static void
moved_stored_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Step *step = user_data;
	g_autoptr(GError) error = NULL;

	if (!confab_store_save_agent_finish(CONFAB_STORE(source), result, &error))
		g_warning("moving the secrets of the agent %s to the keyring: %s",
			  confab_agent_get_id(step->agent),
			  error->message);
	else
		g_message("moved the secrets of the agent %s to the keyring",
			  confab_agent_get_id(step->agent));
	step_done(step);
}

static void
moved_kept_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Step *step = user_data;
	Hydrate *h = g_task_get_task_data(step->task);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabAgent) stripped = NULL;

	/* not in the keyring: they stay in the database, as they were */
	if (!confab_agent_secrets_keep_finish(result, &error)) {
		step_done(step);
		return;
	}
	stripped = confab_agent_secrets_strip(step->agent);
	confab_store_save_agent_async(h->store, stripped, NULL, moved_stored_cb, step);
}

static void
hydrate_agent(GTask *task, ConfabAgent *agent)
{
	Hydrate *h = g_task_get_task_data(task);
	gboolean keyring = h->secrets != NULL && confab_secret_store_is_available(h->secrets);
	const gchar *tools = confab_agent_get_mcp_servers(agent);

	if (g_strcmp0(confab_agent_get_api_key(agent), CONFAB_AGENT_SECRETS_MARKER) == 0) {
		if (keyring)
			confab_secret_store_lookup_async(h->secrets,
							 confab_agent_get_id(agent),
							 CONFAB_SECRET_KIND_API_KEY,
							 NULL,
							 key_found_cb,
							 step_new(task, agent));
		else /* never sent upstream as a key */
			confab_agent_set_api_key(agent, NULL);
	}
	if (keyring && tools != NULL && strstr(tools, CONFAB_TOOL_CONFIG_MASK) != NULL)
		confab_secret_store_lookup_async(h->secrets,
						 confab_agent_get_id(agent),
						 CONFAB_SECRET_KIND_MCP,
						 NULL,
						 tools_found_cb,
						 step_new(task, agent));
	/* what an earlier start (or one without a keyring) left in the
	 * database moves to the keyring */
	if (keyring && confab_agent_secrets_has_plain(agent))
		confab_agent_secrets_keep_async(h->secrets,
						agent,
						NULL,
						moved_kept_cb,
						step_new(task, agent));
}

/**
 * confab_agent_secrets_hydrate_async:
 * @secrets: (nullable): the keyring; %NULL outside confabd --user
 * @store: where the agents come from
 * @agents: (element-type ConfabAgent): agents just loaded from @store;
 *   they are completed in place
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once they are whole
 * @user_data: data for @callback
 *
 * Fills in the secrets the keyring keeps for @agents, and moves to it
 * those still in the database. Without a keyring, a key that is in one is
 * left out (never sent upstream as the marker).
 */
void
confab_agent_secrets_hydrate_async(ConfabSecretStore *secrets,
				   ConfabStore *store,
				   GPtrArray *agents,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(NULL, cancellable, callback, user_data);
	Hydrate *h = g_new0(Hydrate, 1);
	Step *held;

	g_task_set_source_tag(task, confab_agent_secrets_hydrate_async);
	h->secrets = secrets != NULL ? g_object_ref(secrets) : NULL;
	h->store = g_object_ref(store);
	h->agents = g_ptr_array_ref(agents);
	g_task_set_task_data(task, h, (GDestroyNotify)hydrate_free);
	/* a step of its own, so that nothing returns before every agent is seen */
	held = step_new(task, NULL);
	for (guint i = 0; i < agents->len; i++)
		hydrate_agent(task, g_ptr_array_index(agents, i));
	step_done(held);
}

/**
 * confab_agent_secrets_hydrate_finish:
 *
 * Returns: (transfer full) (element-type ConfabAgent): the agents, whole
 */
GPtrArray *
confab_agent_secrets_hydrate_finish(GAsyncResult *result, GError **error)
{
	return g_task_propagate_pointer(G_TASK(result), error);
}
