/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "model/confab-agent.h"

/**
 * ConfabAgent:
 *
 * An agent: a model upstream plus instructions.
 */
struct _ConfabAgent {
	GObject parent_instance;
	gchar *id;	       /* owned */
	gchar *name;	       /* owned */
	gchar *instructions;   /* owned */
	gchar *provider;       /* owned */
	gchar *base_url;       /* owned */
	gchar *upstream_model; /* owned */
	gchar *api_key;	       /* owned */
	gchar *api_key_file;   /* owned */
	gchar *params;	       /* owned */
	guint connect_timeout;
	guint first_byte_timeout;
	guint idle_timeout;
	guint total_timeout;
	gchar *mcp_servers; /* owned: the tool servers, as JSON text */
	guint max_steps;    /* model calls that may ask for tools, in one turn */
	gint64 created_at;
	gint64 updated_at;
};

G_DEFINE_FINAL_TYPE(ConfabAgent, confab_agent, G_TYPE_OBJECT)

static void
confab_agent_finalize(GObject *object)
{
	ConfabAgent *self = CONFAB_AGENT(object);

	g_free(self->id);
	g_free(self->name);
	g_free(self->instructions);
	g_free(self->provider);
	g_free(self->base_url);
	g_free(self->upstream_model);
	if (self->api_key != NULL)
		memset(self->api_key, 0, strlen(self->api_key));
	g_free(self->api_key);
	g_free(self->api_key_file);
	g_free(self->params);
	g_free(self->mcp_servers);

	G_OBJECT_CLASS(confab_agent_parent_class)->finalize(object);
}

static void
confab_agent_class_init(ConfabAgentClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->finalize = confab_agent_finalize;
}

static void
confab_agent_init(ConfabAgent *self)
{
	self->max_steps = CONFAB_AGENT_DEFAULT_MAX_STEPS;
}

/**
 * confab_agent_new:
 *
 * Returns: (transfer full): a new, empty #ConfabAgent
 */
ConfabAgent *
confab_agent_new(void)
{
	return g_object_new(CONFAB_TYPE_AGENT, NULL);
}

const gchar *
confab_agent_get_id(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	return self->id;
}

void
confab_agent_set_id(ConfabAgent *self, const gchar *id)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (g_strcmp0(self->id, id) == 0)
		return;
	g_free(self->id);
	self->id = g_strdup(id);
}

const gchar *
confab_agent_get_name(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	return self->name;
}

void
confab_agent_set_name(ConfabAgent *self, const gchar *name)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (g_strcmp0(self->name, name) == 0)
		return;
	g_free(self->name);
	self->name = g_strdup(name);
}

const gchar *
confab_agent_get_instructions(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	return self->instructions;
}

void
confab_agent_set_instructions(ConfabAgent *self, const gchar *instructions)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (g_strcmp0(self->instructions, instructions) == 0)
		return;
	g_free(self->instructions);
	self->instructions = g_strdup(instructions);
}

const gchar *
confab_agent_get_provider(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	return self->provider;
}

void
confab_agent_set_provider(ConfabAgent *self, const gchar *provider)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (g_strcmp0(self->provider, provider) == 0)
		return;
	g_free(self->provider);
	self->provider = g_strdup(provider);
}

const gchar *
confab_agent_get_base_url(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	return self->base_url;
}

void
confab_agent_set_base_url(ConfabAgent *self, const gchar *base_url)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (g_strcmp0(self->base_url, base_url) == 0)
		return;
	g_free(self->base_url);
	self->base_url = g_strdup(base_url);
}

const gchar *
confab_agent_get_upstream_model(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	return self->upstream_model;
}

void
confab_agent_set_upstream_model(ConfabAgent *self, const gchar *upstream_model)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (g_strcmp0(self->upstream_model, upstream_model) == 0)
		return;
	g_free(self->upstream_model);
	self->upstream_model = g_strdup(upstream_model);
}

const gchar *
confab_agent_get_api_key(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	return self->api_key;
}

void
confab_agent_set_api_key(ConfabAgent *self, const gchar *api_key)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (g_strcmp0(self->api_key, api_key) == 0)
		return;
	g_free(self->api_key);
	self->api_key = g_strdup(api_key);
}

const gchar *
confab_agent_get_api_key_file(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	return self->api_key_file;
}

void
confab_agent_set_api_key_file(ConfabAgent *self, const gchar *api_key_file)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (g_strcmp0(self->api_key_file, api_key_file) == 0)
		return;
	g_free(self->api_key_file);
	self->api_key_file = g_strdup(api_key_file);
}

const gchar *
confab_agent_get_params(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	return self->params;
}

void
confab_agent_set_params(ConfabAgent *self, const gchar *params)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (g_strcmp0(self->params, params) == 0)
		return;
	g_free(self->params);
	self->params = g_strdup(params);
}

guint
confab_agent_get_connect_timeout(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), 0);
	return self->connect_timeout;
}

void
confab_agent_set_connect_timeout(ConfabAgent *self, guint connect_timeout)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (self->connect_timeout == connect_timeout)
		return;
	self->connect_timeout = connect_timeout;
}

guint
confab_agent_get_first_byte_timeout(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), 0);
	return self->first_byte_timeout;
}

void
confab_agent_set_first_byte_timeout(ConfabAgent *self, guint first_byte_timeout)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (self->first_byte_timeout == first_byte_timeout)
		return;
	self->first_byte_timeout = first_byte_timeout;
}

guint
confab_agent_get_idle_timeout(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), 0);
	return self->idle_timeout;
}

void
confab_agent_set_idle_timeout(ConfabAgent *self, guint idle_timeout)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (self->idle_timeout == idle_timeout)
		return;
	self->idle_timeout = idle_timeout;
}

guint
confab_agent_get_total_timeout(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), 0);
	return self->total_timeout;
}

void
confab_agent_set_total_timeout(ConfabAgent *self, guint total_timeout)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (self->total_timeout == total_timeout)
		return;
	self->total_timeout = total_timeout;
}

gint64
confab_agent_get_created_at(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), 0);
	return self->created_at;
}

void
confab_agent_set_created_at(ConfabAgent *self, gint64 created_at)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (self->created_at == created_at)
		return;
	self->created_at = created_at;
}

gint64
confab_agent_get_updated_at(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), 0);
	return self->updated_at;
}

void
confab_agent_set_updated_at(ConfabAgent *self, gint64 updated_at)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (self->updated_at == updated_at)
		return;
	self->updated_at = updated_at;
}

/**
 * confab_agent_copy:
 * @self: a #ConfabAgent
 *
 * Agents that are served are never changed in place (turns may hold
 * them): a change is made to a copy, which replaces the original.
 *
 * Returns: (transfer full): a copy of @self
 */
ConfabAgent *
confab_agent_copy(ConfabAgent *self)
{
	ConfabAgent *copy = confab_agent_new();

	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	copy->id = g_strdup(self->id);
	copy->name = g_strdup(self->name);
	copy->instructions = g_strdup(self->instructions);
	copy->provider = g_strdup(self->provider);
	copy->base_url = g_strdup(self->base_url);
	copy->upstream_model = g_strdup(self->upstream_model);
	copy->api_key = g_strdup(self->api_key);
	copy->api_key_file = g_strdup(self->api_key_file);
	copy->params = g_strdup(self->params);
	copy->connect_timeout = self->connect_timeout;
	copy->first_byte_timeout = self->first_byte_timeout;
	copy->idle_timeout = self->idle_timeout;
	copy->total_timeout = self->total_timeout;
	copy->mcp_servers = g_strdup(self->mcp_servers);
	copy->max_steps = self->max_steps;
	copy->created_at = self->created_at;
	copy->updated_at = self->updated_at;
	return copy;
}

/**
 * confab_agent_get_mcp_servers:
 *
 * Returns: (nullable): the agent's tool servers, in the `mcpServers` JSON
 *   shape, secrets included
 */
const gchar *
confab_agent_get_mcp_servers(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	return self->mcp_servers;
}

void
confab_agent_set_mcp_servers(ConfabAgent *self, const gchar *mcp_servers)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	g_free(self->mcp_servers);
	self->mcp_servers = mcp_servers != NULL && *mcp_servers != '\0' ? g_strdup(mcp_servers)
									: NULL;
}

/**
 * confab_agent_get_max_steps:
 *
 * Returns: how many model calls of one turn may ask for tools (1 to 100);
 *   after them one last call is made with tool_choice none
 */
guint
confab_agent_get_max_steps(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), CONFAB_AGENT_DEFAULT_MAX_STEPS);
	return self->max_steps;
}

void
confab_agent_set_max_steps(ConfabAgent *self, guint max_steps)
{
	g_return_if_fail(CONFAB_IS_AGENT(self));
	self->max_steps = max_steps;
}
