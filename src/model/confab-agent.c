/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "model/confab-agent.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

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
	/* target 0 is the single-upstream fields above, plus these two */
	gchar *primary_label; /* owned, nullable: "primary" */
	guint primary_weight;
	GPtrArray *more_targets; /* owned, nullable: ConfabAgentTarget 1… */
	ConfabRoutingStrategy strategy;
	guint max_attempts;   /* 0: one per target */
	guint hedge_after_ms; /* 0: no hedging */
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
	g_free(self->primary_label);
	g_clear_pointer(&self->more_targets, g_ptr_array_unref);

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
	self->primary_weight = 1;
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
	copy->primary_label = g_strdup(self->primary_label);
	copy->primary_weight = self->primary_weight;
	if (self->more_targets != NULL) {
		copy->more_targets =
		    g_ptr_array_new_with_free_func((GDestroyNotify)confab_agent_target_free);
		for (guint i = 0; i < self->more_targets->len; i++)
			g_ptr_array_add(
			    copy->more_targets,
			    confab_agent_target_copy(g_ptr_array_index(self->more_targets, i)));
	}
	copy->strategy = self->strategy;
	copy->max_attempts = self->max_attempts;
	copy->hedge_after_ms = self->hedge_after_ms;
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

/* ---------- targets and routing ---------- */

/**
 * confab_agent_get_n_targets:
 *
 * Returns: how many upstream targets the agent has (1 to 16); target 0 is
 *   the single-upstream settings (base_url, upstream_model, the key…)
 */
guint
confab_agent_get_n_targets(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), 1);
	return 1 + (self->more_targets != NULL ? self->more_targets->len : 0);
}

/**
 * confab_agent_get_target_label:
 * @index: a target, below confab_agent_get_n_targets()
 *
 * Returns: its label (target 0's is "primary" unless named)
 */
const gchar *
confab_agent_get_target_label(ConfabAgent *self, guint index)
{
	const ConfabAgentTarget *target;

	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	g_return_val_if_fail(index < confab_agent_get_n_targets(self), NULL);
	if (index == 0)
		return self->primary_label != NULL ? self->primary_label
						   : CONFAB_AGENT_PRIMARY_LABEL;
	target = g_ptr_array_index(self->more_targets, index - 1);
	return target->label;
}

/**
 * confab_agent_get_target_weight:
 * @index: a target, below confab_agent_get_n_targets()
 *
 * Returns: its weight, 1 to 1000
 */
guint
confab_agent_get_target_weight(ConfabAgent *self, guint index)
{
	const ConfabAgentTarget *target;

	g_return_val_if_fail(CONFAB_IS_AGENT(self), 1);
	g_return_val_if_fail(index < confab_agent_get_n_targets(self), 1);
	if (index == 0)
		return self->primary_weight;
	target = g_ptr_array_index(self->more_targets, index - 1);
	return target->weight;
}

static ConfabAgentTarget *
primary_target(ConfabAgent *self)
{
	ConfabAgentTarget *target = confab_agent_target_new();

	target->label = g_strdup(confab_agent_get_target_label(self, 0));
	target->base_url = g_strdup(self->base_url);
	target->upstream_model = g_strdup(self->upstream_model);
	target->api_key = g_strdup(self->api_key);
	target->api_key_file = g_strdup(self->api_key_file);
	target->weight = self->primary_weight;
	target->connect_timeout = self->connect_timeout;
	target->first_byte_timeout = self->first_byte_timeout;
	target->idle_timeout = self->idle_timeout;
	target->total_timeout = self->total_timeout;
	return target;
}

/**
 * confab_agent_dup_targets:
 *
 * Returns: (transfer full) (element-type ConfabAgentTarget): every target,
 *   keys included, in order
 */
GPtrArray *
confab_agent_dup_targets(ConfabAgent *self)
{
	GPtrArray *targets =
	    g_ptr_array_new_with_free_func((GDestroyNotify)confab_agent_target_free);

	g_return_val_if_fail(CONFAB_IS_AGENT(self), targets);
	g_ptr_array_add(targets, primary_target(self));
	for (guint i = 0; self->more_targets != NULL && i < self->more_targets->len; i++)
		g_ptr_array_add(targets,
				confab_agent_target_copy(g_ptr_array_index(self->more_targets, i)));
	return targets;
}

/**
 * confab_agent_set_targets:
 * @targets: (element-type ConfabAgentTarget): 1 to 16 targets, checked
 *   (confab_agent_targets_parse())
 *
 * Replaces the agent's targets: the first becomes the single-upstream
 * settings (its timeouts included), the others follow it.
 */
void
confab_agent_set_targets(ConfabAgent *self, GPtrArray *targets)
{
	const ConfabAgentTarget *first;

	g_return_if_fail(CONFAB_IS_AGENT(self));
	g_return_if_fail(targets->len >= 1 && targets->len <= CONFAB_AGENT_TARGETS_MAX);
	first = g_ptr_array_index(targets, 0);
	confab_agent_set_base_url(self, first->base_url);
	confab_agent_set_upstream_model(self, first->upstream_model);
	confab_agent_set_api_key(self, first->api_key);
	confab_agent_set_api_key_file(self, first->api_key_file);
	self->connect_timeout = first->connect_timeout;
	self->first_byte_timeout = first->first_byte_timeout;
	self->idle_timeout = first->idle_timeout;
	self->total_timeout = first->total_timeout;
	g_free(self->primary_label);
	self->primary_label = g_strcmp0(first->label, CONFAB_AGENT_PRIMARY_LABEL) != 0
				  ? g_strdup(first->label)
				  : NULL;
	self->primary_weight = first->weight;
	g_clear_pointer(&self->more_targets, g_ptr_array_unref);
	if (targets->len > 1) {
		self->more_targets =
		    g_ptr_array_new_with_free_func((GDestroyNotify)confab_agent_target_free);
		for (guint i = 1; i < targets->len; i++)
			g_ptr_array_add(self->more_targets,
					confab_agent_target_copy(g_ptr_array_index(targets, i)));
	}
}

/**
 * confab_agent_for_target:
 * @index: a target, below confab_agent_get_n_targets()
 *
 * What a provider, which knows one upstream, is given for a model call
 * routed to target @index: the agent itself for target 0, else a copy
 * whose single-upstream settings are that target's (its timeouts where
 * it has them, the agent's where not).
 *
 * Returns: (transfer full): the agent as target @index
 */
ConfabAgent *
confab_agent_for_target(ConfabAgent *self, guint index)
{
	const ConfabAgentTarget *target;
	ConfabAgent *copy;

	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	g_return_val_if_fail(index < confab_agent_get_n_targets(self), NULL);
	if (index == 0)
		return g_object_ref(self);
	target = g_ptr_array_index(self->more_targets, index - 1);
	copy = confab_agent_copy(self);
	confab_agent_set_base_url(copy, target->base_url);
	confab_agent_set_upstream_model(copy, target->upstream_model);
	confab_agent_set_api_key(copy, target->api_key);
	confab_agent_set_api_key_file(copy, target->api_key_file);
	if (target->connect_timeout > 0)
		copy->connect_timeout = target->connect_timeout;
	if (target->first_byte_timeout > 0)
		copy->first_byte_timeout = target->first_byte_timeout;
	if (target->idle_timeout > 0)
		copy->idle_timeout = target->idle_timeout;
	if (target->total_timeout > 0)
		copy->total_timeout = target->total_timeout;
	g_free(copy->primary_label);
	copy->primary_label = g_strdup(target->label);
	copy->primary_weight = target->weight;
	g_clear_pointer(&copy->more_targets, g_ptr_array_unref);
	return copy;
}

/**
 * confab_agent_get_stored_upstreams:
 *
 * What the store keeps beside the single-upstream columns: %NULL for an
 * agent with one target named "primary" of weight 1 (every agent from
 * before targets), else a JSON array of every target where target 0
 * carries only its label and weight (its other settings are the columns).
 *
 * Returns: (transfer full) (nullable): the JSON
 */
gchar *
confab_agent_get_stored_upstreams(ConfabAgent *self)
{
	g_autoptr(GPtrArray) targets = NULL;
	ConfabAgentTarget *first;

	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	if (self->more_targets == NULL && self->primary_label == NULL && self->primary_weight == 1)
		return NULL;
	targets = confab_agent_dup_targets(self);
	first = g_ptr_array_index(targets, 0);
	g_clear_pointer(&first->base_url, g_free);
	g_clear_pointer(&first->upstream_model, g_free);
	g_clear_pointer(&first->api_key, g_free);
	g_clear_pointer(&first->api_key_file, g_free);
	first->connect_timeout = first->first_byte_timeout = 0;
	first->idle_timeout = first->total_timeout = 0;
	return confab_agent_targets_to_json(targets, TRUE);
}

/**
 * confab_agent_set_stored_upstreams:
 * @json: (nullable): what confab_agent_get_stored_upstreams() made
 *
 * Reads the targets back from the store, after the single-upstream
 * settings. What cannot be read leaves the agent with target 0 alone.
 */
void
confab_agent_set_stored_upstreams(ConfabAgent *self, const gchar *json)
{
	g_autoptr(GPtrArray) targets = NULL;
	g_autoptr(GError) error = NULL;
	ConfabAgentTarget *first;

	g_return_if_fail(CONFAB_IS_AGENT(self));
	if (json == NULL)
		return;
	targets = confab_agent_targets_parse(json, TRUE, &error);
	if (targets == NULL) {
		g_warning("agent %s: its stored upstreams cannot be read (%s): it keeps its first",
			  self->id,
			  error->message);
		return;
	}
	first = g_ptr_array_index(targets, 0);
	g_free(self->primary_label);
	self->primary_label = g_strcmp0(first->label, CONFAB_AGENT_PRIMARY_LABEL) != 0
				  ? g_strdup(first->label)
				  : NULL;
	self->primary_weight = first->weight;
	g_ptr_array_remove_index(targets, 0);
	g_clear_pointer(&self->more_targets, g_ptr_array_unref);
	if (targets->len > 0)
		self->more_targets = g_steal_pointer(&targets);
}

/**
 * confab_agent_get_upstreams_json:
 *
 * Returns: (transfer full): every target as a JSON array, with
 *   `has_api_key` and never a key: what GetAgent shows
 */
gchar *
confab_agent_get_upstreams_json(ConfabAgent *self)
{
	g_autoptr(GPtrArray) targets = confab_agent_dup_targets(self);
	return confab_agent_targets_to_json(targets, FALSE);
}

/**
 * confab_agent_get_routing_strategy:
 *
 * Returns: how a model call picks its first target
 */
ConfabRoutingStrategy
confab_agent_get_routing_strategy(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), CONFAB_ROUTING_FALLBACK);
	return self->strategy;
}

/**
 * confab_agent_get_max_attempts:
 *
 * Returns: how many targets one model call tries at most: the agent's
 *   `max_attempts`, or one per target
 */
guint
confab_agent_get_max_attempts(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), 1);
	return self->max_attempts > 0 ? self->max_attempts : confab_agent_get_n_targets(self);
}

/**
 * confab_agent_get_hedge_after_ms:
 *
 * Returns: after how long without a byte the next target is started beside
 *   the one tried; 0 for never
 */
guint
confab_agent_get_hedge_after_ms(ConfabAgent *self)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), 0);
	return self->hedge_after_ms;
}

static gboolean
routing_member_uint(JsonObject *object, const gchar *name, guint max, guint *out, GError **error)
{
	JsonNode *node = json_object_get_member(object, name);

	if (node == NULL || JSON_NODE_HOLDS_NULL(node))
		return TRUE;
	if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_INT64 ||
	    json_node_get_int(node) < 0 || json_node_get_int(node) > max) {
		g_autofree gchar *param = g_strdup_printf("routing.%s", name);
		confab_error_set_printf(error,
					CONFAB_ERROR_INVALID_VALUE,
					param,
					"routing.%s must be an integer from 0 to %u",
					name,
					max);
		return FALSE;
	}
	*out = (guint)json_node_get_int(node);
	return TRUE;
}

static gboolean
routing_check_members(JsonObject *object, GError **error)
{
	static const gchar *const known[] = {"strategy", "max_attempts", "hedge_after_ms", NULL};
	g_autoptr(GList) members = json_object_get_members(object);

	for (GList *l = members; l != NULL; l = l->next) {
		if (!g_strv_contains(known, l->data)) {
			g_autofree gchar *param = g_strdup_printf("routing.%s", (gchar *)l->data);
			confab_error_set_printf(error,
						CONFAB_ERROR_INVALID_VALUE,
						param,
						"routing.%s is not a routing setting",
						(gchar *)l->data);
			return FALSE;
		}
	}
	return TRUE;
}

/**
 * confab_agent_set_routing_json:
 * @json: (nullable): `{"strategy","max_attempts","hedge_after_ms"}`, each
 *   optional (a member not given keeps its value); %NULL or empty for the
 *   defaults
 * @error: what is refused, its field named (`routing.strategy`)
 *
 * Returns: whether @json was taken; the agent is unchanged when not
 */
gboolean
confab_agent_set_routing_json(ConfabAgent *self, const gchar *json, GError **error)
{
	g_autoptr(JsonNode) root = NULL;
	JsonObject *object;
	ConfabRoutingStrategy strategy = CONFAB_ROUTING_FALLBACK;
	guint max_attempts = 0;
	guint hedge = 0;
	const gchar *name;

	g_return_val_if_fail(CONFAB_IS_AGENT(self), FALSE);
	if (json != NULL && *json != '\0') {
		strategy = self->strategy;
		max_attempts = self->max_attempts;
		hedge = self->hedge_after_ms;
		root = confab_json_parse(json, strlen(json), 4, NULL);
		if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_VALUE,
					 "routing",
					 "routing must be a JSON object");
			return FALSE;
		}
		object = json_node_get_object(root);
		name = confab_json_get_string(object, "strategy");
		if (!routing_check_members(object, error))
			return FALSE;
		if ((json_object_has_member(object, "strategy") &&
		     !json_node_is_null(json_object_get_member(object, "strategy"))) &&
		    !confab_agent_target_strategy_from_string(name, &strategy)) {
			confab_error_set(
			    error,
			    CONFAB_ERROR_INVALID_VALUE,
			    "routing.strategy",
			    "routing.strategy must be fallback, weighted or least-busy");
			return FALSE;
		}
		if (!routing_member_uint(object,
					 "max_attempts",
					 CONFAB_AGENT_TARGETS_MAX * 4,
					 &max_attempts,
					 error) ||
		    !routing_member_uint(object,
					 "hedge_after_ms",
					 CONFAB_AGENT_HEDGE_AFTER_MS_MAX,
					 &hedge,
					 error))
			return FALSE;
	}
	self->strategy = strategy;
	self->max_attempts = max_attempts;
	self->hedge_after_ms = hedge;
	return TRUE;
}

/**
 * confab_agent_get_routing_json:
 * @with_defaults: whether an agent with the default routing gets its JSON
 *   too (for GetAgent), rather than %NULL (for the store)
 *
 * Returns: (transfer full) (nullable): the routing settings as JSON
 */
gchar *
confab_agent_get_routing_json(ConfabAgent *self, gboolean with_defaults)
{
	g_return_val_if_fail(CONFAB_IS_AGENT(self), NULL);
	if (!with_defaults && self->strategy == CONFAB_ROUTING_FALLBACK &&
	    self->max_attempts == 0 && self->hedge_after_ms == 0)
		return NULL;
	return g_strdup_printf("{\"strategy\":\"%s\",\"max_attempts\":%u,\"hedge_after_ms\":%u}",
			       confab_agent_target_strategy_to_string(self->strategy),
			       self->max_attempts,
			       self->hedge_after_ms);
}
