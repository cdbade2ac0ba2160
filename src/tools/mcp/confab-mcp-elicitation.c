/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMcpElicitation"

#include "config.h"

#include <string.h>

#include "tools/mcp/confab-mcp-elicitation.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/**
 * ConfabMcpElicitation:
 *
 * One `elicitation/create` request (form mode) from an MCP server: its
 * message and requested schema, and the way to answer it. The schema is
 * MCP's restricted one: a flat object whose properties are strings (with
 * `minLength`, `maxLength`, `format` email, uri, date or date-time, `enum`
 * or `oneOf` of `const`), numbers and integers (`minimum`, `maximum`),
 * booleans, and arrays of enumerated strings (`items.enum` or
 * `items.anyOf`, `minItems`, `maxItems`), each with an optional `default`.
 *
 * confab_mcp_elicitation_respond() answers it once: `accept` with content
 * that is checked against the schema, the defaults of the fields left out
 * filled in (confab_mcp_elicitation_apply_schema()); `decline` or `cancel`
 * without content. An elicitation dropped unanswered is answered `cancel`,
 * so that no server waits for ever.
 */

struct _ConfabMcpElicitation {
	gint ref_count;
	ConfabMcpJsonrpc *rpc; /* owned */
	JsonNode *id;	       /* owned: the request's */
	gchar *server;	       /* owned */
	gchar *message;	       /* owned */
	JsonObject *schema;    /* owned */
	gboolean answered;
};

G_DEFINE_BOXED_TYPE(ConfabMcpElicitation,
		    confab_mcp_elicitation,
		    confab_mcp_elicitation_ref,
		    confab_mcp_elicitation_unref)

#define MAX_PROPERTIES 64
#define MAX_MESSAGE    16384

static gboolean
fail(GError **error, const gchar *field, const gchar *what)
{
	g_set_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE, "content.%s: %s", field, what);
	return FALSE;
}

static gboolean
is_type(JsonNode *node, GType type)
{
	return node != NULL && JSON_NODE_HOLDS_VALUE(node) &&
	       json_node_get_value_type(node) == type;
}

static gboolean
is_number(JsonNode *node)
{
	return is_type(node, G_TYPE_INT64) || is_type(node, G_TYPE_DOUBLE);
}

/* The strings a string or array property may take (enum, oneOf or anyOf
 * of const), or NULL when any string goes. */
static GPtrArray *
allowed_values(JsonObject *schema)
{
	JsonNode *list = json_object_get_member(schema, "enum");
	GPtrArray *values;
	gboolean consts = FALSE;

	if (list == NULL) {
		list = json_object_get_member(schema, "oneOf");
		if (list == NULL)
			list = json_object_get_member(schema, "anyOf");
		consts = TRUE;
	}
	if (list == NULL || !JSON_NODE_HOLDS_ARRAY(list))
		return NULL;
	values = g_ptr_array_new();
	for (guint i = 0; i < json_array_get_length(json_node_get_array(list)); i++) {
		JsonNode *item = json_array_get_element(json_node_get_array(list), i);
		if (consts && JSON_NODE_HOLDS_OBJECT(item))
			item = json_object_get_member(json_node_get_object(item), "const");
		if (is_type(item, G_TYPE_STRING))
			g_ptr_array_add(values, (gpointer)json_node_get_string(item));
	}
	return values;
}

static gboolean
value_allowed(JsonObject *schema, const gchar *value)
{
	g_autoptr(GPtrArray) values = allowed_values(schema);

	if (values == NULL)
		return TRUE;
	for (guint i = 0; i < values->len; i++) {
		if (strcmp(values->pdata[i], value) == 0)
			return TRUE;
	}
	return FALSE;
}

static gboolean
format_ok(const gchar *format, const gchar *value)
{
	if (g_strcmp0(format, "email") == 0) {
		const gchar *at = strchr(value, '@');
		return at != NULL && at != value && at[1] != '\0' && strchr(at + 1, '@') == NULL;
	}
	if (g_strcmp0(format, "uri") == 0) {
		g_autofree gchar *scheme = g_uri_parse_scheme(value);
		return scheme != NULL;
	}
	if (g_strcmp0(format, "date") == 0) {
		g_autofree gchar *text = g_strconcat(value, "T00:00:00Z", NULL);
		g_autoptr(GDateTime) date = g_date_time_new_from_iso8601(text, NULL);
		return strlen(value) == 10 && date != NULL;
	}
	if (g_strcmp0(format, "date-time") == 0) {
		g_autoptr(GDateTime) time = g_date_time_new_from_iso8601(value, NULL);
		return time != NULL;
	}
	return TRUE;
}

static gboolean
check_string(JsonObject *schema, const gchar *field, JsonNode *value, GError **error)
{
	const gchar *text;
	glong chars;

	if (!is_type(value, G_TYPE_STRING))
		return fail(error, field, "must be a string");
	text = json_node_get_string(value);
	chars = g_utf8_strlen(text, -1);
	if (json_object_has_member(schema, "minLength") &&
	    chars < json_object_get_int_member_with_default(schema, "minLength", 0))
		return fail(error, field, "is shorter than its minLength");
	if (json_object_has_member(schema, "maxLength") &&
	    chars > json_object_get_int_member_with_default(schema, "maxLength", G_MAXINT))
		return fail(error, field, "is longer than its maxLength");
	if (!value_allowed(schema, text))
		return fail(error, field, "is not one of the values offered");
	if (!format_ok(confab_json_get_string(schema, "format"), text))
		return fail(error, field, "does not have the format asked for");
	return TRUE;
}

static gboolean
check_number(JsonObject *schema,
	     const gchar *field,
	     JsonNode *value,
	     gboolean integer,
	     GError **error)
{
	gdouble number;
	JsonNode *bound;

	if (!is_number(value))
		return fail(error, field, integer ? "must be an integer" : "must be a number");
	number = json_node_get_double(value);
	if (integer && (is_type(value, G_TYPE_DOUBLE) && number != (gdouble)(gint64)number))
		return fail(error, field, "must be an integer");
	bound = json_object_get_member(schema, "minimum");
	if (is_number(bound) && number < json_node_get_double(bound))
		return fail(error, field, "is below its minimum");
	bound = json_object_get_member(schema, "maximum");
	if (is_number(bound) && number > json_node_get_double(bound))
		return fail(error, field, "is above its maximum");
	return TRUE;
}

static gboolean
check_array(JsonObject *schema, const gchar *field, JsonNode *value, GError **error)
{
	JsonObject *items = confab_json_get_object(schema, "items");
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	JsonArray *array;
	guint len;

	if (value == NULL || !JSON_NODE_HOLDS_ARRAY(value))
		return fail(error, field, "must be an array");
	array = json_node_get_array(value);
	len = json_array_get_length(array);
	if (json_object_has_member(schema, "minItems") &&
	    len < json_object_get_int_member_with_default(schema, "minItems", 0))
		return fail(error, field, "has fewer items than its minItems");
	if (json_object_has_member(schema, "maxItems") &&
	    len > json_object_get_int_member_with_default(schema, "maxItems", G_MAXINT))
		return fail(error, field, "has more items than its maxItems");
	for (guint i = 0; i < len; i++) {
		JsonNode *item = json_array_get_element(array, i);
		if (!is_type(item, G_TYPE_STRING))
			return fail(error, field, "must hold strings");
		if (items != NULL && !value_allowed(items, json_node_get_string(item)))
			return fail(error, field, "holds a value not offered");
		if (!g_hash_table_add(seen, (gpointer)json_node_get_string(item)))
			return fail(error, field, "holds a value twice");
	}
	return TRUE;
}

/* @value against the property @schema of @field. */
static gboolean
check_value(JsonObject *schema, const gchar *field, JsonNode *value, GError **error)
{
	const gchar *type = confab_json_get_string(schema, "type");

	if (g_strcmp0(type, "string") == 0)
		return check_string(schema, field, value, error);
	if (g_strcmp0(type, "number") == 0 || g_strcmp0(type, "integer") == 0)
		return check_number(schema, field, value, strcmp(type, "integer") == 0, error);
	if (g_strcmp0(type, "boolean") == 0) {
		if (!is_type(value, G_TYPE_BOOLEAN))
			return fail(error, field, "must be true or false");
		return TRUE;
	}
	if (g_strcmp0(type, "array") == 0)
		return check_array(schema, field, value, error);
	return fail(error, field, "has a type the schema does not allow");
}

/**
 * confab_mcp_elicitation_check_schema:
 * @schema: a requested schema
 * @error: return location for a #GError
 *
 * Checks that @schema is one MCP allows for a form: an object of at most
 * 64 properties of the primitive types, `required` naming some of them.
 *
 * Returns: %TRUE if it is
 */
gboolean
confab_mcp_elicitation_check_schema(JsonObject *schema, GError **error)
{
	const gchar *type = confab_json_get_string(schema, "type");
	JsonObject *properties = confab_json_get_object(schema, "properties");
	JsonNode *required = json_object_get_member(schema, "required");
	static const gchar *const types[] =
	    {"string", "number", "integer", "boolean", "array", NULL};
	g_autoptr(GList) names = NULL;

	if ((type != NULL && strcmp(type, "object") != 0) || properties == NULL ||
	    json_object_get_size(properties) > MAX_PROPERTIES) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_INVALID_VALUE,
				    "requestedSchema must be an object schema with properties");
		return FALSE;
	}
	names = json_object_get_members(properties);
	for (GList *l = names; l != NULL; l = l->next) {
		JsonObject *property = confab_json_get_object(properties, l->data);
		const gchar *ptype = property != NULL ? confab_json_get_string(property, "type")
						      : NULL;
		if (ptype == NULL || !g_strv_contains(types, ptype)) {
			g_set_error(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_INVALID_VALUE,
				    "requestedSchema.properties.%s: not a primitive type",
				    (const gchar *)l->data);
			return FALSE;
		}
	}
	if (required != NULL && !JSON_NODE_HOLDS_ARRAY(required)) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_INVALID_VALUE,
				    "requestedSchema.required must be an array");
		return FALSE;
	}
	return TRUE;
}

static gboolean
is_required(JsonObject *schema, const gchar *name)
{
	JsonNode *required = json_object_get_member(schema, "required");

	if (required == NULL || !JSON_NODE_HOLDS_ARRAY(required))
		return FALSE;
	for (guint i = 0; i < json_array_get_length(json_node_get_array(required)); i++) {
		JsonNode *item = json_array_get_element(json_node_get_array(required), i);
		if (is_type(item, G_TYPE_STRING) && strcmp(json_node_get_string(item), name) == 0)
			return TRUE;
	}
	return FALSE;
}

/**
 * confab_mcp_elicitation_apply_schema:
 * @schema: a requested schema (confab_mcp_elicitation_check_schema())
 * @content: (nullable): the person's answer
 * @error: return location for a #GError
 *
 * Checks @content against @schema: no field the schema does not have,
 * every required field present, each of its property's type and bounds.
 * A field left out takes its property's `default` (which must itself be
 * valid). Errors are %CONFAB_ERROR_INVALID_VALUE naming the field
 * (`content.age: must be an integer`).
 *
 * Returns: (transfer full): the content to send, defaults applied
 */
JsonObject *
confab_mcp_elicitation_apply_schema(JsonObject *schema, JsonObject *content, GError **error)
{
	JsonObject *properties = confab_json_get_object(schema, "properties");
	g_autoptr(JsonObject) out = json_object_new();
	g_autoptr(GList) names = NULL;

	g_return_val_if_fail(properties != NULL, NULL);
	if (content != NULL) {
		g_autoptr(GList) given = json_object_get_members(content);
		for (GList *l = given; l != NULL; l = l->next) {
			if (!json_object_has_member(properties, l->data)) {
				fail(error, l->data, "is not in the requested schema");
				return NULL;
			}
		}
	}
	names = json_object_get_members(properties);
	for (GList *l = names; l != NULL; l = l->next) {
		const gchar *name = l->data;
		JsonObject *property = confab_json_get_object(properties, name);
		JsonNode *value = content != NULL ? json_object_get_member(content, name) : NULL;

		if (value == NULL)
			value = json_object_get_member(property, "default");
		if (value == NULL) {
			if (is_required(schema, name)) {
				fail(error, name, "is required");
				return NULL;
			}
			continue;
		}
		if (!check_value(property, name, value, error))
			return NULL;
		json_object_set_member(out, name, json_node_copy(value));
	}
	return g_steal_pointer(&out);
}

/**
 * confab_mcp_elicitation_new:
 * @rpc: the connection the request came on
 * @request_id: its id
 * @server: the server's name, for messages
 * @params: its params
 * @error: return location for a #GError
 *
 * Takes an `elicitation/create` request. Fails (the caller answers the
 * server with an error) for a request that is not a form (`mode` other
 * than `form`), has no message, or whose schema MCP does not allow.
 *
 * Returns: (transfer full) (nullable): the elicitation, unanswered
 */
ConfabMcpElicitation *
confab_mcp_elicitation_new(ConfabMcpJsonrpc *rpc,
			   JsonNode *request_id,
			   const gchar *server,
			   JsonObject *params,
			   GError **error)
{
	const gchar *mode = params != NULL ? confab_json_get_string(params, "mode") : NULL;
	const gchar *message = params != NULL ? confab_json_get_string(params, "message") : NULL;
	JsonObject *schema = params != NULL ? confab_json_get_object(params, "requestedSchema")
					    : NULL;
	ConfabMcpElicitation *self;

	if (mode != NULL && strcmp(mode, "form") != 0) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_INVALID_VALUE,
			    "Elicitation mode %s is not supported",
			    mode);
		return NULL;
	}
	if (message == NULL || schema == NULL) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_INVALID_VALUE,
				    "An elicitation needs a message and a requestedSchema");
		return NULL;
	}
	if (!confab_mcp_elicitation_check_schema(schema, error))
		return NULL;
	self = g_new0(ConfabMcpElicitation, 1);
	self->ref_count = 1;
	self->rpc = g_object_ref(rpc);
	self->id = json_node_copy(request_id);
	self->server = g_strdup(server);
	self->message = g_utf8_make_valid(message, MIN(strlen(message), MAX_MESSAGE));
	self->schema = json_object_ref(schema);
	return self;
}

/**
 * confab_mcp_elicitation_ref:
 * @self: a #ConfabMcpElicitation
 *
 * Returns: (transfer full): @self
 */
ConfabMcpElicitation *
confab_mcp_elicitation_ref(ConfabMcpElicitation *self)
{
	g_return_val_if_fail(self != NULL, NULL);
	g_atomic_int_inc(&self->ref_count);
	return self;
}

/**
 * confab_mcp_elicitation_unref:
 * @self: a #ConfabMcpElicitation
 *
 * Drops a reference; the last one answers `cancel` if nobody answered.
 */
void
confab_mcp_elicitation_unref(ConfabMcpElicitation *self)
{
	g_return_if_fail(self != NULL);
	if (!g_atomic_int_dec_and_test(&self->ref_count))
		return;
	if (!self->answered)
		confab_mcp_elicitation_respond(self, "cancel", NULL, NULL);
	g_object_unref(self->rpc);
	json_node_unref(self->id);
	json_object_unref(self->schema);
	g_free(self->server);
	g_free(self->message);
	g_free(self);
}

/**
 * confab_mcp_elicitation_get_server:
 * @self: a #ConfabMcpElicitation
 *
 * Returns: the name of the server that asks
 */
const gchar *
confab_mcp_elicitation_get_server(ConfabMcpElicitation *self)
{
	return self->server;
}

/**
 * confab_mcp_elicitation_get_message:
 * @self: a #ConfabMcpElicitation
 *
 * Returns: what the server asks the person (valid UTF-8, at most 16 KiB)
 */
const gchar *
confab_mcp_elicitation_get_message(ConfabMcpElicitation *self)
{
	return self->message;
}

/**
 * confab_mcp_elicitation_get_schema:
 * @self: a #ConfabMcpElicitation
 *
 * Returns: (transfer none): the requested schema
 */
JsonObject *
confab_mcp_elicitation_get_schema(ConfabMcpElicitation *self)
{
	return self->schema;
}

/**
 * confab_mcp_elicitation_is_answered:
 * @self: a #ConfabMcpElicitation
 *
 * Returns: whether the server was answered
 */
gboolean
confab_mcp_elicitation_is_answered(ConfabMcpElicitation *self)
{
	return self->answered;
}

/**
 * confab_mcp_elicitation_respond:
 * @self: a #ConfabMcpElicitation
 * @action: `accept`, `decline` or `cancel`
 * @content: (nullable): with `accept`, the person's answer
 * @error: return location for a #GError
 *
 * Answers the server, once. With `accept`, @content is checked against the
 * schema and its defaults applied (confab_mcp_elicitation_apply_schema());
 * content that does not match fails with %CONFAB_ERROR_INVALID_VALUE
 * naming the field, and nothing is sent (the person may answer again).
 *
 * Returns: %TRUE if the answer was sent
 */
gboolean
confab_mcp_elicitation_respond(ConfabMcpElicitation *self,
			       const gchar *action,
			       JsonObject *content,
			       GError **error)
{
	g_autoptr(JsonObject) checked = NULL;
	g_autoptr(JsonNode) result = NULL;
	JsonObject *object;

	if (self->answered) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_INVALID_VALUE,
				    "The elicitation was answered already");
		return FALSE;
	}
	if (g_strcmp0(action, "accept") != 0 && g_strcmp0(action, "decline") != 0 &&
	    g_strcmp0(action, "cancel") != 0) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_INVALID_VALUE,
				    "action must be accept, decline or cancel");
		return FALSE;
	}
	if (strcmp(action, "accept") == 0) {
		checked = confab_mcp_elicitation_apply_schema(self->schema, content, error);
		if (checked == NULL)
			return FALSE;
	}
	object = json_object_new();
	json_object_set_string_member(object, "action", action);
	if (checked != NULL)
		json_object_set_object_member(object, "content", g_steal_pointer(&checked));
	result = json_node_init_object(json_node_alloc(), object);
	json_object_unref(object);
	self->answered = TRUE;
	confab_mcp_jsonrpc_respond(self->rpc, self->id, result, 0, NULL);
	return TRUE;
}
