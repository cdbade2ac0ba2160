/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

#include "model/confab-agent-target.h"
#include "model/confab-enums.h"

G_BEGIN_DECLS

#define CONFAB_AGENT_DEFAULT_MAX_STEPS 10
#define CONFAB_AGENT_MAX_STEPS_LIMIT   100

#define CONFAB_TYPE_AGENT (confab_agent_get_type())
G_DECLARE_FINAL_TYPE(ConfabAgent, confab_agent, CONFAB, AGENT, GObject)

ConfabAgent *
confab_agent_new(void);
ConfabAgent *
confab_agent_copy(ConfabAgent *self);
const gchar *
confab_agent_get_id(ConfabAgent *self);
void
confab_agent_set_id(ConfabAgent *self, const gchar *id);
const gchar *
confab_agent_get_name(ConfabAgent *self);
void
confab_agent_set_name(ConfabAgent *self, const gchar *name);
const gchar *
confab_agent_get_instructions(ConfabAgent *self);
void
confab_agent_set_instructions(ConfabAgent *self, const gchar *instructions);
const gchar *
confab_agent_get_provider(ConfabAgent *self);
void
confab_agent_set_provider(ConfabAgent *self, const gchar *provider);
const gchar *
confab_agent_get_base_url(ConfabAgent *self);
void
confab_agent_set_base_url(ConfabAgent *self, const gchar *base_url);
const gchar *
confab_agent_get_upstream_model(ConfabAgent *self);
void
confab_agent_set_upstream_model(ConfabAgent *self, const gchar *upstream_model);
const gchar *
confab_agent_get_api_key(ConfabAgent *self);
void
confab_agent_set_api_key(ConfabAgent *self, const gchar *api_key);
const gchar *
confab_agent_get_api_key_file(ConfabAgent *self);
void
confab_agent_set_api_key_file(ConfabAgent *self, const gchar *api_key_file);
const gchar *
confab_agent_get_params(ConfabAgent *self);
void
confab_agent_set_params(ConfabAgent *self, const gchar *params);
guint
confab_agent_get_connect_timeout(ConfabAgent *self);
void
confab_agent_set_connect_timeout(ConfabAgent *self, guint connect_timeout);
guint
confab_agent_get_first_byte_timeout(ConfabAgent *self);
void
confab_agent_set_first_byte_timeout(ConfabAgent *self, guint first_byte_timeout);
guint
confab_agent_get_idle_timeout(ConfabAgent *self);
void
confab_agent_set_idle_timeout(ConfabAgent *self, guint idle_timeout);
guint
confab_agent_get_total_timeout(ConfabAgent *self);
void
confab_agent_set_total_timeout(ConfabAgent *self, guint total_timeout);
gint64
confab_agent_get_created_at(ConfabAgent *self);
void
confab_agent_set_created_at(ConfabAgent *self, gint64 created_at);
gint64
confab_agent_get_updated_at(ConfabAgent *self);
void
confab_agent_set_updated_at(ConfabAgent *self, gint64 updated_at);

const gchar *
confab_agent_get_mcp_servers(ConfabAgent *self);
void
confab_agent_set_mcp_servers(ConfabAgent *self, const gchar *mcp_servers);
guint
confab_agent_get_max_steps(ConfabAgent *self);
void
confab_agent_set_max_steps(ConfabAgent *self, guint max_steps);

guint
confab_agent_get_n_targets(ConfabAgent *self);
const gchar *
confab_agent_get_target_label(ConfabAgent *self, guint index);
guint
confab_agent_get_target_weight(ConfabAgent *self, guint index);
GPtrArray *
confab_agent_dup_targets(ConfabAgent *self);
void
confab_agent_set_targets(ConfabAgent *self, GPtrArray *targets);
ConfabAgent *
confab_agent_for_target(ConfabAgent *self, guint index);
gchar *
confab_agent_get_stored_upstreams(ConfabAgent *self);
void
confab_agent_set_stored_upstreams(ConfabAgent *self, const gchar *json);
gchar *
confab_agent_get_upstreams_json(ConfabAgent *self);
ConfabRoutingStrategy
confab_agent_get_routing_strategy(ConfabAgent *self);
guint
confab_agent_get_max_attempts(ConfabAgent *self);
guint
confab_agent_get_hedge_after_ms(ConfabAgent *self);
gboolean
confab_agent_set_routing_json(ConfabAgent *self, const gchar *json, GError **error);
gchar *
confab_agent_get_routing_json(ConfabAgent *self, gboolean with_defaults);

G_END_DECLS
