/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define CONFAB_AGENT_TARGETS_MAX	16
#define CONFAB_AGENT_TARGET_WEIGHT_MAX	1000
#define CONFAB_AGENT_TARGET_LABEL_MAX	64
#define CONFAB_AGENT_PRIMARY_LABEL	"primary"
#define CONFAB_AGENT_HEDGE_AFTER_MS_MAX 600000

/**
 * ConfabRoutingStrategy:
 * @CONFAB_ROUTING_FALLBACK: the targets in order
 * @CONFAB_ROUTING_WEIGHTED: one picked by weight among the healthy, then
 *   the rest in order
 * @CONFAB_ROUTING_LEAST_BUSY: the one with the fewest calls in flight on
 *   this instance first
 *
 * How a model call picks its first target.
 */
typedef enum {
	CONFAB_ROUTING_FALLBACK,
	CONFAB_ROUTING_WEIGHTED,
	CONFAB_ROUTING_LEAST_BUSY,
} ConfabRoutingStrategy;

/**
 * ConfabAgentTarget:
 * @label: its name in errors, metrics, stored answers and headers
 * @base_url: the upstream's base URL
 * @upstream_model: the model asked for there
 * @api_key: (nullable): its key
 * @api_key_file: (nullable): or a file holding its key
 * @weight: 1 to 1000, for the weighted strategy
 * @connect_timeout: seconds, 0 for the agent's (or the configuration's)
 * @first_byte_timeout: seconds, 0 likewise
 * @idle_timeout: seconds, 0 likewise
 * @total_timeout: seconds, 0 likewise
 *
 * One upstream an agent's model calls may go to. The provider stays the
 * agent's.
 */
typedef struct {
	gchar *label;
	gchar *base_url;
	gchar *upstream_model;
	gchar *api_key;
	gchar *api_key_file;
	guint weight;
	guint connect_timeout;
	guint first_byte_timeout;
	guint idle_timeout;
	guint total_timeout;
} ConfabAgentTarget;

ConfabAgentTarget *
confab_agent_target_new(void);
ConfabAgentTarget *
confab_agent_target_copy(const ConfabAgentTarget *target);
void
confab_agent_target_free(ConfabAgentTarget *target);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabAgentTarget, confab_agent_target_free)

GPtrArray *
confab_agent_targets_parse(const gchar *json, gboolean lenient, GError **error);
gchar *
confab_agent_targets_to_json(GPtrArray *targets, gboolean with_keys);

const gchar *
confab_agent_target_strategy_to_string(ConfabRoutingStrategy strategy);
gboolean
confab_agent_target_strategy_from_string(const gchar *name, ConfabRoutingStrategy *strategy);

G_END_DECLS
