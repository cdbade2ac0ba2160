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
	gint64 created_at;
	gint64 updated_at;
};

G_DEFINE_FINAL_TYPE(ConfabAgent, confab_agent, G_TYPE_OBJECT)

enum {
	PROP_0,
	PROP_ID,
	PROP_NAME,
	PROP_INSTRUCTIONS,
	PROP_PROVIDER,
	PROP_BASE_URL,
	PROP_UPSTREAM_MODEL,
	PROP_API_KEY,
	PROP_API_KEY_FILE,
	PROP_PARAMS,
	PROP_CONNECT_TIMEOUT,
	PROP_FIRST_BYTE_TIMEOUT,
	PROP_IDLE_TIMEOUT,
	PROP_TOTAL_TIMEOUT,
	PROP_CREATED_AT,
	PROP_UPDATED_AT,
	N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
confab_agent_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
	ConfabAgent *self = CONFAB_AGENT(object);

	switch (prop_id) {
	case PROP_ID:
		g_value_set_string(value, self->id);
		break;
	case PROP_NAME:
		g_value_set_string(value, self->name);
		break;
	case PROP_INSTRUCTIONS:
		g_value_set_string(value, self->instructions);
		break;
	case PROP_PROVIDER:
		g_value_set_string(value, self->provider);
		break;
	case PROP_BASE_URL:
		g_value_set_string(value, self->base_url);
		break;
	case PROP_UPSTREAM_MODEL:
		g_value_set_string(value, self->upstream_model);
		break;
	case PROP_API_KEY:
		g_value_set_string(value, self->api_key);
		break;
	case PROP_API_KEY_FILE:
		g_value_set_string(value, self->api_key_file);
		break;
	case PROP_PARAMS:
		g_value_set_string(value, self->params);
		break;
	case PROP_CONNECT_TIMEOUT:
		g_value_set_uint(value, self->connect_timeout);
		break;
	case PROP_FIRST_BYTE_TIMEOUT:
		g_value_set_uint(value, self->first_byte_timeout);
		break;
	case PROP_IDLE_TIMEOUT:
		g_value_set_uint(value, self->idle_timeout);
		break;
	case PROP_TOTAL_TIMEOUT:
		g_value_set_uint(value, self->total_timeout);
		break;
	case PROP_CREATED_AT:
		g_value_set_int64(value, self->created_at);
		break;
	case PROP_UPDATED_AT:
		g_value_set_int64(value, self->updated_at);
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
	}
}

static void
confab_agent_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
	ConfabAgent *self = CONFAB_AGENT(object);

	switch (prop_id) {
	case PROP_ID:
		confab_agent_set_id(self, g_value_get_string(value));
		break;
	case PROP_NAME:
		confab_agent_set_name(self, g_value_get_string(value));
		break;
	case PROP_INSTRUCTIONS:
		confab_agent_set_instructions(self, g_value_get_string(value));
		break;
	case PROP_PROVIDER:
		confab_agent_set_provider(self, g_value_get_string(value));
		break;
	case PROP_BASE_URL:
		confab_agent_set_base_url(self, g_value_get_string(value));
		break;
	case PROP_UPSTREAM_MODEL:
		confab_agent_set_upstream_model(self, g_value_get_string(value));
		break;
	case PROP_API_KEY:
		confab_agent_set_api_key(self, g_value_get_string(value));
		break;
	case PROP_API_KEY_FILE:
		confab_agent_set_api_key_file(self, g_value_get_string(value));
		break;
	case PROP_PARAMS:
		confab_agent_set_params(self, g_value_get_string(value));
		break;
	case PROP_CONNECT_TIMEOUT:
		confab_agent_set_connect_timeout(self, g_value_get_uint(value));
		break;
	case PROP_FIRST_BYTE_TIMEOUT:
		confab_agent_set_first_byte_timeout(self, g_value_get_uint(value));
		break;
	case PROP_IDLE_TIMEOUT:
		confab_agent_set_idle_timeout(self, g_value_get_uint(value));
		break;
	case PROP_TOTAL_TIMEOUT:
		confab_agent_set_total_timeout(self, g_value_get_uint(value));
		break;
	case PROP_CREATED_AT:
		confab_agent_set_created_at(self, g_value_get_int64(value));
		break;
	case PROP_UPDATED_AT:
		confab_agent_set_updated_at(self, g_value_get_int64(value));
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
	}
}

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

	G_OBJECT_CLASS(confab_agent_parent_class)->finalize(object);
}

static void
confab_agent_class_init(ConfabAgentClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->get_property = confab_agent_get_property;
	object_class->set_property = confab_agent_set_property;
	object_class->finalize = confab_agent_finalize;

	properties[PROP_ID] = g_param_spec_string("id",
						  NULL,
						  "The agent id (agt_…)",
						  NULL,
						  G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
						      G_PARAM_STATIC_STRINGS);
	properties[PROP_NAME] = g_param_spec_string("name",
						    NULL,
						    "A human-readable name",
						    NULL,
						    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
							G_PARAM_STATIC_STRINGS);
	properties[PROP_INSTRUCTIONS] = g_param_spec_string(
	    "instructions",
	    NULL,
	    "Prepended to every turn as the system message",
	    NULL,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_PROVIDER] = g_param_spec_string(
	    "provider",
	    NULL,
	    "The provider name: echo or openai",
	    NULL,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_BASE_URL] = g_param_spec_string(
	    "base-url",
	    NULL,
	    "The upstream base URL, as the OpenAI SDKs take it",
	    NULL,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_UPSTREAM_MODEL] = g_param_spec_string(
	    "upstream-model",
	    NULL,
	    "The model name sent upstream",
	    NULL,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_API_KEY] = g_param_spec_string("api-key",
						       NULL,
						       "The upstream API key; never shown",
						       NULL,
						       G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
							   G_PARAM_STATIC_STRINGS);
	properties[PROP_API_KEY_FILE] = g_param_spec_string(
	    "api-key-file",
	    NULL,
	    "A file to read the upstream API key from",
	    NULL,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_PARAMS] = g_param_spec_string("params",
						      NULL,
						      "Default request parameters, a JSON object",
						      NULL,
						      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
							  G_PARAM_STATIC_STRINGS);
	properties[PROP_CONNECT_TIMEOUT] =
	    g_param_spec_uint("connect-timeout",
			      NULL,
			      "Seconds to connect upstream, 0 for the default",
			      0,
			      G_MAXUINT,
			      0,
			      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_FIRST_BYTE_TIMEOUT] =
	    g_param_spec_uint("first-byte-timeout",
			      NULL,
			      "Seconds to the first upstream byte, 0 for the default",
			      0,
			      G_MAXUINT,
			      0,
			      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_IDLE_TIMEOUT] =
	    g_param_spec_uint("idle-timeout",
			      NULL,
			      "Seconds allowed between upstream chunks, 0 for the default",
			      0,
			      G_MAXUINT,
			      0,
			      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_TOTAL_TIMEOUT] =
	    g_param_spec_uint("total-timeout",
			      NULL,
			      "Seconds for the whole upstream call, 0 for the default",
			      0,
			      G_MAXUINT,
			      0,
			      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_CREATED_AT] = g_param_spec_int64(
	    "created-at",
	    NULL,
	    "Creation time, Unix seconds",
	    G_MININT64,
	    G_MAXINT64,
	    0,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_UPDATED_AT] = g_param_spec_int64(
	    "updated-at",
	    NULL,
	    "Last change, Unix seconds",
	    G_MININT64,
	    G_MAXINT64,
	    0,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);

	g_object_class_install_properties(object_class, N_PROPS, properties);
}

static void
confab_agent_init(ConfabAgent *self)
{
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_ID]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_NAME]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_INSTRUCTIONS]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_PROVIDER]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_BASE_URL]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_UPSTREAM_MODEL]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_API_KEY]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_API_KEY_FILE]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_PARAMS]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_CONNECT_TIMEOUT]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_FIRST_BYTE_TIMEOUT]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_IDLE_TIMEOUT]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_TOTAL_TIMEOUT]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_CREATED_AT]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_UPDATED_AT]);
}
