/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <json-glib/json-glib.h>
#include <string.h>

#include "model/confab-agent-target.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * An agent's upstream targets as JSON: what D-Bus `upstreams` takes and
 * GetAgent shows (keys never: `has_api_key`), and what the store keeps.
 * Parsing checks the shape and each value, and names the field it refuses
 * (`upstreams[1].weight`); whether a key file is inside the credentials
 * directory and a provider's own rules are the provider's to check.
 */

#define TIMEOUT_MAX (24 * 3600)

/**
 * confab_agent_target_new:
 *
 * Returns: (transfer full): an empty target of weight 1
 */
ConfabAgentTarget *
confab_agent_target_new(void)
{
	ConfabAgentTarget *target = g_new0(ConfabAgentTarget, 1);
	target->weight = 1;
	return target;
}

/**
 * confab_agent_target_copy:
 * @target: a target
 *
 * Returns: (transfer full): a copy, its key included
 */
ConfabAgentTarget *
confab_agent_target_copy(const ConfabAgentTarget *target)
{
	ConfabAgentTarget *copy = g_memdup2(target, sizeof(*target));

	copy->label = g_strdup(target->label);
	copy->base_url = g_strdup(target->base_url);
	copy->upstream_model = g_strdup(target->upstream_model);
	copy->api_key = g_strdup(target->api_key);
	copy->api_key_file = g_strdup(target->api_key_file);
	return copy;
}

/**
 * confab_agent_target_free:
 * @target: (nullable): a target
 *
 * Frees @target, its key wiped first.
 */
void
confab_agent_target_free(ConfabAgentTarget *target)
{
	if (target == NULL)
		return;
	if (target->api_key != NULL)
		memset(target->api_key, 0, strlen(target->api_key));
	g_free(target->api_key);
	g_free(target->label);
	g_free(target->base_url);
	g_free(target->upstream_model);
	g_free(target->api_key_file);
	g_free(target);
}

static gboolean
refuse(GError **error, guint index, const gchar *field, const gchar *why)
{
	g_autofree gchar *param = g_strdup_printf("upstreams[%u].%s", index, field);
	g_autofree gchar *message = g_strdup_printf("%s %s", param, why);
	confab_error_set(error, CONFAB_ERROR_INVALID_VALUE, param, message);
	return FALSE;
}

static gboolean
label_is_valid(const gchar *label)
{
	gsize len = strlen(label);

	if (len == 0 || len > CONFAB_AGENT_TARGET_LABEL_MAX)
		return FALSE;
	for (const gchar *p = label; *p != '\0'; p++)
		if (!g_ascii_isalnum(*p) && *p != '-' && *p != '_' && *p != '.')
			return FALSE;
	return TRUE;
}

static gboolean
url_is_valid(const gchar *url)
{
	g_autoptr(GUri) uri = g_uri_parse(url, G_URI_FLAGS_NONE, NULL);

	return uri != NULL &&
	       (g_strcmp0(g_uri_get_scheme(uri), "http") == 0 ||
		g_strcmp0(g_uri_get_scheme(uri), "https") == 0) &&
	       g_uri_get_host(uri) != NULL && *g_uri_get_host(uri) != '\0';
}

/* member @name of @object as a string into @out; absent leaves it */
static gboolean
read_string(JsonObject *object, const gchar *name, gchar **out, guint index, GError **error)
{
	JsonNode *node = json_object_get_member(object, name);

	if (node == NULL || JSON_NODE_HOLDS_NULL(node))
		return TRUE;
	if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING)
		return refuse(error, index, name, "must be a string");
	g_free(*out);
	*out = json_node_get_string(node)[0] != '\0' ? json_node_dup_string(node) : NULL;
	return TRUE;
}

static gboolean
read_uint(JsonObject *object,
	  const gchar *name,
	  guint *out,
	  guint min,
	  guint max,
	  guint index,
	  GError **error)
{
	JsonNode *node = json_object_get_member(object, name);
	gint64 value;
	g_autofree gchar *why = NULL;

	if (node == NULL || JSON_NODE_HOLDS_NULL(node))
		return TRUE;
	why = g_strdup_printf("must be an integer from %u to %u", min, max);
	if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_INT64)
		return refuse(error, index, name, why);
	value = json_node_get_int(node);
	if (value < min || value > max)
		return refuse(error, index, name, why);
	*out = (guint)value;
	return TRUE;
}

static gboolean
check_keys(JsonObject *object, guint index, GError **error)
{
	static const gchar *const known[] = {"label",
					     "base_url",
					     "upstream_model",
					     "api_key",
					     "api_key_file",
					     "has_api_key",
					     "weight",
					     "connect_timeout",
					     "first_byte_timeout",
					     "idle_timeout",
					     "total_timeout",
					     NULL};
	g_autoptr(GList) members = json_object_get_members(object);

	for (GList *l = members; l != NULL; l = l->next)
		if (!g_strv_contains(known, l->data))
			return refuse(error, index, l->data, "is not a target's member");
	return TRUE;
}

static ConfabAgentTarget *
parse_target(JsonNode *node, guint index, gboolean lenient, GError **error)
{
	g_autoptr(ConfabAgentTarget) target = confab_agent_target_new();
	JsonObject *object;

	if (!JSON_NODE_HOLDS_OBJECT(node)) {
		g_autofree gchar *param = g_strdup_printf("upstreams[%u]", index);
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 param,
				 "each of upstreams must be a JSON object");
		return NULL;
	}
	object = json_node_get_object(node);
	if (!check_keys(object, index, error) ||
	    !read_string(object, "label", &target->label, index, error) ||
	    !read_string(object, "base_url", &target->base_url, index, error) ||
	    !read_string(object, "upstream_model", &target->upstream_model, index, error) ||
	    !read_string(object, "api_key", &target->api_key, index, error) ||
	    !read_string(object, "api_key_file", &target->api_key_file, index, error) ||
	    !read_uint(object,
		       "weight",
		       &target->weight,
		       1,
		       CONFAB_AGENT_TARGET_WEIGHT_MAX,
		       index,
		       error) ||
	    !read_uint(object,
		       "connect_timeout",
		       &target->connect_timeout,
		       0,
		       TIMEOUT_MAX,
		       index,
		       error) ||
	    !read_uint(object,
		       "first_byte_timeout",
		       &target->first_byte_timeout,
		       0,
		       TIMEOUT_MAX,
		       index,
		       error) ||
	    !read_uint(object,
		       "idle_timeout",
		       &target->idle_timeout,
		       0,
		       TIMEOUT_MAX,
		       index,
		       error) ||
	    !read_uint(object,
		       "total_timeout",
		       &target->total_timeout,
		       0,
		       TIMEOUT_MAX,
		       index,
		       error))
		return NULL;
	if (target->label == NULL || !label_is_valid(target->label)) {
		refuse(error, index, "label", "must be 1 to 64 letters, digits, '-', '_' or '.'");
		return NULL;
	}
	if (lenient)
		return g_steal_pointer(&target);
	if (target->base_url == NULL || !url_is_valid(target->base_url)) {
		refuse(error, index, "base_url", "must be an http:// or https:// URL");
		return NULL;
	}
	if (target->upstream_model == NULL) {
		refuse(error, index, "upstream_model", "is required");
		return NULL;
	}
	if (target->api_key != NULL && target->api_key_file != NULL) {
		refuse(error, index, "api_key", "and api_key_file may not both be given");
		return NULL;
	}
	return g_steal_pointer(&target);
}

/**
 * confab_agent_targets_parse:
 * @json: a JSON array of targets
 * @lenient: %TRUE for what the store wrote (where target 0 carries only
 *   its label and weight): only the shape is checked
 * @error: the first value refused, its field named
 *
 * Returns: (transfer full) (element-type ConfabAgentTarget): 1 to 16
 *   targets with unique labels, or %NULL
 */
GPtrArray *
confab_agent_targets_parse(const gchar *json, gboolean lenient, GError **error)
{
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(GPtrArray) targets = NULL;
	g_autoptr(GHashTable) labels = g_hash_table_new(g_str_hash, g_str_equal);
	JsonArray *array;

	root = confab_json_parse(json, strlen(json), 8, NULL);
	if (root == NULL || !JSON_NODE_HOLDS_ARRAY(root)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "upstreams",
				 "upstreams must be a JSON array of targets");
		return NULL;
	}
	array = json_node_get_array(root);
	if (json_array_get_length(array) < 1 ||
	    json_array_get_length(array) > CONFAB_AGENT_TARGETS_MAX) {
		confab_error_set_printf(error,
					CONFAB_ERROR_INVALID_VALUE,
					"upstreams",
					"upstreams must hold 1 to %d targets, not %u",
					CONFAB_AGENT_TARGETS_MAX,
					json_array_get_length(array));
		return NULL;
	}
	targets = g_ptr_array_new_with_free_func((GDestroyNotify)confab_agent_target_free);
	for (guint i = 0; i < json_array_get_length(array); i++) {
		ConfabAgentTarget *target =
		    parse_target(json_array_get_element(array, i), i, lenient, error);
		if (target == NULL)
			return NULL;
		g_ptr_array_add(targets, target);
		if (!g_hash_table_add(labels, target->label)) {
			refuse(error, i, "label", "is the label of an earlier target");
			return NULL;
		}
	}
	return g_steal_pointer(&targets);
}

static void
add_uint_unless_zero(JsonBuilder *builder, const gchar *name, guint value)
{
	if (value == 0)
		return;
	json_builder_set_member_name(builder, name);
	json_builder_add_int_value(builder, value);
}

static void
add_string(JsonBuilder *builder, const gchar *name, const gchar *value)
{
	if (value == NULL)
		return;
	json_builder_set_member_name(builder, name);
	json_builder_add_string_value(builder, value);
}

/**
 * confab_agent_targets_to_json:
 * @targets: (element-type ConfabAgentTarget): the targets
 * @with_keys: whether keys are written (for the store) or only
 *   `has_api_key` (for anyone else)
 *
 * Returns: (transfer full): @targets as a JSON array
 */
gchar *
confab_agent_targets_to_json(GPtrArray *targets, gboolean with_keys)
{
	g_autoptr(JsonBuilder) builder = json_builder_new();
	g_autoptr(JsonNode) root = NULL;

	json_builder_begin_array(builder);
	for (guint i = 0; i < targets->len; i++) {
		const ConfabAgentTarget *target = g_ptr_array_index(targets, i);
		json_builder_begin_object(builder);
		add_string(builder, "label", target->label);
		add_string(builder, "base_url", target->base_url);
		add_string(builder, "upstream_model", target->upstream_model);
		if (with_keys) {
			add_string(builder, "api_key", target->api_key);
		} else {
			json_builder_set_member_name(builder, "has_api_key");
			json_builder_add_boolean_value(builder, target->api_key != NULL);
		}
		add_string(builder, "api_key_file", target->api_key_file);
		json_builder_set_member_name(builder, "weight");
		json_builder_add_int_value(builder, target->weight);
		add_uint_unless_zero(builder, "connect_timeout", target->connect_timeout);
		add_uint_unless_zero(builder, "first_byte_timeout", target->first_byte_timeout);
		add_uint_unless_zero(builder, "idle_timeout", target->idle_timeout);
		add_uint_unless_zero(builder, "total_timeout", target->total_timeout);
		json_builder_end_object(builder);
	}
	json_builder_end_array(builder);
	root = json_builder_get_root(builder);
	return confab_json_to_string(root);
}

static const gchar *const strategy_names[] = {"fallback", "weighted", "least-busy"};

/**
 * confab_agent_target_strategy_to_string:
 * @strategy: a strategy
 *
 * Returns: its name in JSON and on the command line
 */
const gchar *
confab_agent_target_strategy_to_string(ConfabRoutingStrategy strategy)
{
	g_return_val_if_fail(strategy <= CONFAB_ROUTING_LEAST_BUSY, NULL);
	return strategy_names[strategy];
}

/**
 * confab_agent_target_strategy_from_string:
 * @name: a strategy's name
 * @strategy: (out): the strategy
 *
 * Returns: whether @name is one
 */
gboolean
confab_agent_target_strategy_from_string(const gchar *name, ConfabRoutingStrategy *strategy)
{
	for (guint i = 0; i < G_N_ELEMENTS(strategy_names); i++) {
		if (g_strcmp0(name, strategy_names[i]) == 0) {
			*strategy = (ConfabRoutingStrategy)i;
			return TRUE;
		}
	}
	return FALSE;
}
