/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabDbus"

#include "config.h"

#include <string.h>

#include "dbus/confab-dbus-admin-impl.h"
#include "dbus/confab-dbus-caller.h"
#include "tools/confab-tool-config.h"
#include "util/confab-error.h"
#include "util/confab-json.h"
#include "util/confab-month.h"

/*
 * org.confab.Confab1.Admin: one handler per method, each a thin translation
 * between a{sv} and the engine or the store. Who may call, or read a
 * property, is decided once, in g-authorize-method. Handlers that wait on the store hand the
 * invocation to the async call and complete it in the callback.
 */

struct _ConfabDbusAdminImpl {
	ConfabDbusAdminSkeleton parent_instance;
	ConfabEngine *engine; /* owned */
	gchar *admin_group;   /* owned */
	gboolean check_caller;
};

static void
confab_dbus_admin_impl_iface_init(ConfabDbusAdminIface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(ConfabDbusAdminImpl,
			      confab_dbus_admin_impl,
			      CONFAB_DBUS_TYPE_ADMIN_SKELETON,
			      G_IMPLEMENT_INTERFACE(CONFAB_DBUS_TYPE_ADMIN,
						    confab_dbus_admin_impl_iface_init))

enum { PROP_0, PROP_ACTIVE_TURNS, PROP_TURNS_SERVED };

#define DBUS_LIST_LIMIT_DEFAULT 100
#define DBUS_LIST_LIMIT_MAX	1000

static GError *
invalid_arg(const gchar *format, const gchar *key) G_GNUC_PRINTF(1, 0);

static GError *
invalid_arg(const gchar *format, const gchar *key)
{
	GError *error = NULL;
	g_autofree gchar *message = NULL;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	message = g_strdup_printf(format, key);
#pragma GCC diagnostic pop
	confab_error_set(&error, CONFAB_ERROR_INVALID_VALUE, key, message);
	return error;
}

/* ---------- a{sv} readers ---------- */

typedef enum {
	FIELD_STRING,
	FIELD_UINT,
	FIELD_ROUTING, /* upstreams, routing: JSON, applied after the others */
} FieldKind;

typedef struct {
	const gchar *key;
	FieldKind kind;
	void (*set_string)(ConfabAgent *agent, const gchar *value);
	void (*set_uint)(ConfabAgent *agent, guint value);
} AgentField;

static const AgentField agent_fields[] = {
    {"name", FIELD_STRING, confab_agent_set_name, NULL},
    {"instructions", FIELD_STRING, confab_agent_set_instructions, NULL},
    {"provider", FIELD_STRING, confab_agent_set_provider, NULL},
    {"base_url", FIELD_STRING, confab_agent_set_base_url, NULL},
    {"upstream_model", FIELD_STRING, confab_agent_set_upstream_model, NULL},
    {"api_key", FIELD_STRING, confab_agent_set_api_key, NULL},
    {"api_key_file", FIELD_STRING, confab_agent_set_api_key_file, NULL},
    {"params", FIELD_STRING, confab_agent_set_params, NULL},
    {"connect_timeout", FIELD_UINT, NULL, confab_agent_set_connect_timeout},
    {"first_byte_timeout", FIELD_UINT, NULL, confab_agent_set_first_byte_timeout},
    {"idle_timeout", FIELD_UINT, NULL, confab_agent_set_idle_timeout},
    {"total_timeout", FIELD_UINT, NULL, confab_agent_set_total_timeout},
    {"mcp_servers", FIELD_STRING, confab_agent_set_mcp_servers, NULL},
    {"max_steps", FIELD_UINT, NULL, confab_agent_set_max_steps},
    {"upstreams", FIELD_ROUTING, NULL, NULL},
    {"routing", FIELD_ROUTING, NULL, NULL},
};

/* `upstreams` (a JSON array of targets) and `routing` (a JSON object):
 * given upstreams, the single-upstream properties describe target 0, so
 * they are applied last. A target given without a key keeps the one it
 * had under the same label and base_url: keys are write-only, and what
 * GetAgent shows can be sent back. */
static gboolean
apply_routing_props(ConfabAgent *agent, GVariant *props, GError **error)
{
	g_autoptr(GVariant) upstreams = g_variant_lookup_value(props, "upstreams", NULL);
	g_autoptr(GVariant) routing = g_variant_lookup_value(props, "routing", NULL);

	if (upstreams != NULL) {
		g_autoptr(GPtrArray) before = confab_agent_dup_targets(agent);
		g_autoptr(GPtrArray) targets = NULL;

		targets =
		    confab_agent_targets_parse(g_variant_get_string(upstreams, NULL), FALSE, error);
		if (targets == NULL)
			return FALSE;
		for (guint i = 0; i < targets->len; i++) {
			ConfabAgentTarget *target = g_ptr_array_index(targets, i);
			for (guint j = 0; j < before->len; j++) {
				ConfabAgentTarget *old = g_ptr_array_index(before, j);
				if (target->api_key != NULL || target->api_key_file != NULL ||
				    g_strcmp0(old->label, target->label) != 0 ||
				    g_strcmp0(old->base_url, target->base_url) != 0)
					continue;
				target->api_key = g_strdup(old->api_key);
				target->api_key_file = g_strdup(old->api_key_file);
			}
		}
		confab_agent_set_targets(agent, targets);
	}
	if (routing != NULL &&
	    !confab_agent_set_routing_json(agent, g_variant_get_string(routing, NULL), error))
		return FALSE;
	return TRUE;
}

/**
 * confab_dbus_admin_impl_apply_agent_props:
 *
 * Checks every key and type of @props and sets them on @agent. Unknown keys
 * are refused rather than ignored, so a typo does not go unnoticed.
 */
gboolean
confab_dbus_admin_impl_apply_agent_props(ConfabAgent *agent, GVariant *props, GError **error)
{
	GVariantIter iter;
	const gchar *key;
	GVariant *value_raw;

	g_variant_iter_init(&iter, props);
	while (g_variant_iter_next(&iter, "{&sv}", &key, &value_raw)) {
		g_autoptr(GVariant) value = value_raw;
		const AgentField *field = NULL;

		for (guint i = 0; i < G_N_ELEMENTS(agent_fields); i++) {
			if (g_str_equal(agent_fields[i].key, key))
				field = &agent_fields[i];
		}
		if (field == NULL) {
			*error = invalid_arg("Unknown agent property '%s'", key);
			return FALSE;
		}
		if (field->kind == FIELD_ROUTING) {
			if (!g_variant_is_of_type(value, G_VARIANT_TYPE_STRING)) {
				*error = invalid_arg("Agent property '%s' must be a string", key);
				return FALSE;
			}
		} else if (field->kind == FIELD_STRING) {
			const gchar *str;
			if (!g_variant_is_of_type(value, G_VARIANT_TYPE_STRING)) {
				*error = invalid_arg("Agent property '%s' must be a string", key);
				return FALSE;
			}
			str = g_variant_get_string(value, NULL);
			if (strlen(str) > 1024 * 1024) {
				*error = invalid_arg("Agent property '%s' is too long", key);
				return FALSE;
			}
			/* an empty optional setting clears it */
			field->set_string(agent,
					  *str == '\0' && !g_str_equal(key, "name") &&
						  !g_str_equal(key, "provider")
					      ? NULL
					      : str);
		} else {
			if (!g_variant_is_of_type(value, G_VARIANT_TYPE_UINT32)) {
				*error =
				    invalid_arg("Agent property '%s' must be a uint32 (u)", key);
				return FALSE;
			}
			field->set_uint(agent, g_variant_get_uint32(value));
		}
	}
	if (!apply_routing_props(agent, props, error))
		return FALSE;
	if (confab_agent_get_params(agent) != NULL) {
		const gchar *params = confab_agent_get_params(agent);
		g_autoptr(JsonNode) node = NULL;
		g_autoptr(GError) error_local = NULL;
		node = confab_json_parse(params, strlen(params), 32, &error_local);
		if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node)) {
			*error = invalid_arg("Agent property '%s' must be a JSON object", "params");
			return FALSE;
		}
	}
	return TRUE;
}

static void
dict_add_string(GVariantDict *dict, const gchar *key, const gchar *value)
{
	if (value != NULL)
		g_variant_dict_insert(dict, key, "s", value);
}

static GVariant *
agent_to_variant(ConfabAgent *agent)
{
	GVariantDict dict;
	g_variant_dict_init(&dict, NULL);
	dict_add_string(&dict, "id", confab_agent_get_id(agent));
	dict_add_string(&dict, "name", confab_agent_get_name(agent));
	dict_add_string(&dict, "instructions", confab_agent_get_instructions(agent) ?: "");
	dict_add_string(&dict, "provider", confab_agent_get_provider(agent));
	dict_add_string(&dict, "base_url", confab_agent_get_base_url(agent));
	dict_add_string(&dict, "upstream_model", confab_agent_get_upstream_model(agent));
	dict_add_string(&dict, "api_key_file", confab_agent_get_api_key_file(agent));
	dict_add_string(&dict, "params", confab_agent_get_params(agent));
	/* the key itself never leaves the daemon */
	g_variant_dict_insert(&dict, "has_api_key", "b", confab_agent_get_api_key(agent) != NULL);
	g_variant_dict_insert(&dict,
			      "connect_timeout",
			      "u",
			      confab_agent_get_connect_timeout(agent));
	g_variant_dict_insert(&dict,
			      "first_byte_timeout",
			      "u",
			      confab_agent_get_first_byte_timeout(agent));
	g_variant_dict_insert(&dict, "idle_timeout", "u", confab_agent_get_idle_timeout(agent));
	g_variant_dict_insert(&dict, "total_timeout", "u", confab_agent_get_total_timeout(agent));
	if (confab_agent_get_mcp_servers(agent) != NULL) {
		/* header and environment values are secrets: masked */
		g_autofree gchar *masked =
		    confab_tool_config_mask(confab_agent_get_mcp_servers(agent));
		dict_add_string(&dict, "mcp_servers", masked);
	}
	g_variant_dict_insert(&dict, "max_steps", "u", confab_agent_get_max_steps(agent));
	g_variant_dict_insert_value(
	    &dict,
	    "upstreams",
	    g_variant_new_take_string(confab_agent_get_upstreams_json(agent)));
	g_variant_dict_insert_value(
	    &dict,
	    "routing",
	    g_variant_new_take_string(confab_agent_get_routing_json(agent, TRUE)));
	g_variant_dict_insert(&dict, "created_at", "x", confab_agent_get_created_at(agent));
	g_variant_dict_insert(&dict, "updated_at", "x", confab_agent_get_updated_at(agent));
	return g_variant_dict_end(&dict);
}

static GVariant *
token_to_variant(ConfabToken *token)
{
	GVariantDict dict;
	const gchar *const empty[] = {NULL};
	const gchar *const *scopes = confab_token_get_scopes(token);

	g_variant_dict_init(&dict, NULL);
	dict_add_string(&dict, "id", confab_token_get_id(token));
	dict_add_string(&dict, "owner", confab_token_get_owner(token));
	dict_add_string(&dict, "name", confab_token_get_name(token) ?: "");
	g_variant_dict_insert_value(&dict, "scopes", g_variant_new_strv(scopes ?: empty, -1));
	dict_add_string(&dict, "agent_id", confab_token_get_agent_id(token));
	g_variant_dict_insert(&dict, "created_at", "x", confab_token_get_created_at(token));
	g_variant_dict_insert(&dict, "expires_at", "x", confab_token_get_expires_at(token));
	g_variant_dict_insert(&dict, "revoked_at", "x", confab_token_get_revoked_at(token));
	g_variant_dict_insert(&dict, "revoked", "b", confab_token_get_revoked_at(token) != 0);
	return g_variant_dict_end(&dict);
}

static GVariant *
session_to_variant(ConfabSession *session)
{
	GVariantDict dict;
	g_variant_dict_init(&dict, NULL);
	dict_add_string(&dict, "id", confab_session_get_id(session));
	dict_add_string(&dict, "owner", confab_session_get_owner(session));
	dict_add_string(&dict, "agent_id", confab_session_get_agent_id(session));
	dict_add_string(&dict,
			"source",
			confab_session_source_to_string(confab_session_get_source(session)));
	dict_add_string(&dict, "title", confab_session_get_title(session) ?: "");
	g_variant_dict_insert(&dict, "created_at", "x", confab_session_get_created_at(session));
	g_variant_dict_insert(&dict, "updated_at", "x", confab_session_get_updated_at(session));
	return g_variant_dict_end(&dict);
}

static GVariant *
message_to_variant(ConfabMessage *message)
{
	GVariantDict dict;
	g_variant_dict_init(&dict, NULL);
	dict_add_string(&dict, "id", confab_message_get_id(message));
	dict_add_string(&dict, "session_id", confab_message_get_session_id(message));
	dict_add_string(&dict, "role", confab_message_get_role(message));
	dict_add_string(&dict, "model", confab_message_get_model(message));
	dict_add_string(&dict,
			"status",
			confab_message_status_to_string(confab_message_get_status(message)));
	g_variant_dict_insert(&dict, "created_at", "x", confab_message_get_created_at(message));
	dict_add_string(&dict, "content", confab_message_get_content(message));
	dict_add_string(&dict, "content_blocks", confab_message_get_content_blocks(message));
	dict_add_string(&dict, "finish_reason", confab_message_get_finish_reason(message));
	dict_add_string(&dict, "response_id", confab_message_get_response_id(message));
	dict_add_string(&dict, "upstream", confab_message_get_upstream(message));
	return g_variant_dict_end(&dict);
}

static GVariant *
array_to_variant(GPtrArray *items, GVariant *(*to_variant)(gpointer))
{
	GVariantBuilder builder;
	g_variant_builder_init(&builder, G_VARIANT_TYPE("aa{sv}"));
	for (guint i = 0; i < items->len; i++)
		g_variant_builder_add_value(&builder, to_variant(g_ptr_array_index(items, i)));
	return g_variant_builder_end(&builder);
}

/* reads an optional string from @dict; refuses any other type */
static gboolean
lookup_string(GVariant *dict, const gchar *key, gchar **out, GError **error)
{
	g_autoptr(GVariant) value = g_variant_lookup_value(dict, key, NULL);
	if (value == NULL)
		return TRUE;
	if (!g_variant_is_of_type(value, G_VARIANT_TYPE_STRING)) {
		*error = invalid_arg("'%s' must be a string", key);
		return FALSE;
	}
	*out = g_variant_dup_string(value, NULL);
	return TRUE;
}

static gboolean
check_known_keys(GVariant *dict, const gchar *const *known, GError **error)
{
	GVariantIter iter;
	const gchar *key;
	g_variant_iter_init(&iter, dict);
	while (g_variant_iter_next(&iter, "{&sv}", &key, NULL)) {
		if (!g_strv_contains(known, key)) {
			*error = invalid_arg("Unknown key '%s'", key);
			return FALSE;
		}
	}
	return TRUE;
}

/* limit, order and after of the listing methods */
static gboolean
read_paging(GVariant *options,
	    const gchar *cursor_prefix,
	    ConfabOrder default_order,
	    gchar **after,
	    ConfabOrder *order,
	    guint *limit,
	    GError **error)
{
	g_autoptr(GVariant) limit_v = g_variant_lookup_value(options, "limit", NULL);
	g_autofree gchar *order_s = NULL;

	*order = default_order;
	*limit = DBUS_LIST_LIMIT_DEFAULT;
	if (limit_v != NULL) {
		if (!g_variant_is_of_type(limit_v, G_VARIANT_TYPE_UINT32) ||
		    g_variant_get_uint32(limit_v) < 1 ||
		    g_variant_get_uint32(limit_v) > DBUS_LIST_LIMIT_MAX) {
			*error = invalid_arg("'%s' must be a uint32 (u) from 1 to 1000", "limit");
			return FALSE;
		}
		*limit = g_variant_get_uint32(limit_v);
	}
	if (!lookup_string(options, "order", &order_s, error))
		return FALSE;
	if (order_s != NULL) {
		if (g_str_equal(order_s, "asc")) {
			*order = CONFAB_ORDER_ASC;
		} else if (g_str_equal(order_s, "desc")) {
			*order = CONFAB_ORDER_DESC;
		} else {
			*error = invalid_arg("'%s' must be asc or desc", "order");
			return FALSE;
		}
	}
	if (!lookup_string(options, "after", after, error))
		return FALSE;
	if (*after != NULL && !confab_id_is_valid(*after, cursor_prefix)) {
		*error = invalid_arg("'%s' must be an id from an earlier page", "after");
		return FALSE;
	}
	return TRUE;
}

/* ---------- agents ---------- */

typedef struct {
	ConfabDbusAdminImpl *self;	   /* owned */
	GDBusMethodInvocation *invocation; /* owned */
	gchar *id;			   /* owned */
} Call;

static Call *
call_new(ConfabDbusAdminImpl *self, GDBusMethodInvocation *invocation, const gchar *id)
{
	Call *call = g_new0(Call, 1);
	call->self = g_object_ref(self);
	call->invocation = g_object_ref(invocation);
	call->id = g_strdup(id);
	return call;
}

static void
call_free(Call *call)
{
	g_clear_object(&call->self);
	g_clear_object(&call->invocation);
	g_free(call->id);
	g_free(call);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Call, call_free)

static void
create_agent_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	GError *error = NULL;
	if (!confab_engine_save_agent_finish(CONFAB_ENGINE(source), result, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	g_info("created agent %s", call->id);
	confab_dbus_admin_complete_create_agent(CONFAB_DBUS_ADMIN(call->self),
						call->invocation,
						call->id);
}

static gboolean
handle_create_agent(ConfabDbusAdmin *object, GDBusMethodInvocation *invocation, GVariant *props)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_autoptr(ConfabAgent) agent = confab_agent_new();
	g_autofree gchar *id = NULL;
	GError *error = NULL;
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;

	if (!confab_dbus_admin_impl_apply_agent_props(agent, props, &error)) {
		confab_error_return_dbus(invocation, error);
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	if (confab_agent_get_provider(agent) == NULL) {
		confab_error_return_dbus(invocation, invalid_arg("'%s' is required", "provider"));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	id = confab_id_generator_next(confab_engine_get_id_generator(self->engine),
				      CONFAB_PREFIX_AGENT);
	confab_agent_set_id(agent, id);
	confab_agent_set_created_at(agent, now);
	confab_agent_set_updated_at(agent, now);
	confab_engine_save_agent_async(self->engine,
				       agent,
				       NULL,
				       create_agent_cb,
				       call_new(self, invocation, id));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* scheme://host:port of @url, the port made explicit, or NULL */
static gchar *
url_origin(const gchar *url)
{
	g_autoptr(GUri) uri = url != NULL ? g_uri_parse(url, G_URI_FLAGS_NONE, NULL) : NULL;
	g_autofree gchar *scheme = NULL;
	g_autofree gchar *host = NULL;
	gint port;

	if (uri == NULL || g_uri_get_host(uri) == NULL)
		return NULL;
	scheme = g_ascii_strdown(g_uri_get_scheme(uri), -1);
	host = g_ascii_strdown(g_uri_get_host(uri), -1);
	port = g_uri_get_port(uri);
	if (port < 0)
		port = g_str_equal(scheme, "https") ? 443 : g_str_equal(scheme, "http") ? 80 : 0;
	return g_strdup_printf("%s://%s:%d", scheme, host, port);
}

/* A key was given for one upstream: moving the agent to another (scheme,
 * host or port) drops it, and its key file, unless the same call gives
 * them anew. */
static void
drop_credentials_on_move(ConfabAgent *current, ConfabAgent *agent, GVariant *props)
{
	g_autofree gchar *before = url_origin(confab_agent_get_base_url(current));
	g_autofree gchar *after = url_origin(confab_agent_get_base_url(agent));
	g_autoptr(GVariant) api_key = g_variant_lookup_value(props, "api_key", NULL);
	g_autoptr(GVariant) api_key_file = g_variant_lookup_value(props, "api_key_file", NULL);

	if (g_strcmp0(confab_agent_get_base_url(current), confab_agent_get_base_url(agent)) == 0 ||
	    (before != NULL && g_strcmp0(before, after) == 0))
		return;
	if (api_key == NULL && confab_agent_get_api_key(agent) != NULL) {
		g_info("agent %s moved to another upstream: its API key is dropped",
		       confab_agent_get_id(agent));
		confab_agent_set_api_key(agent, NULL);
	}
	if (api_key_file == NULL && confab_agent_get_api_key_file(agent) != NULL) {
		g_info("agent %s moved to another upstream: its API key file is dropped",
		       confab_agent_get_id(agent));
		confab_agent_set_api_key_file(agent, NULL);
	}
}

static void
update_agent_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	GError *error = NULL;
	if (!confab_engine_save_agent_finish(CONFAB_ENGINE(source), result, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	confab_dbus_admin_complete_update_agent(CONFAB_DBUS_ADMIN(call->self), call->invocation);
}

/* A tool configuration read back (secrets masked) and sent again keeps the
 * secrets it had. */
static gboolean
keep_masked_secrets(ConfabAgent *agent, ConfabAgent *current, GError **error)
{
	const gchar *old = confab_agent_get_mcp_servers(current);
	const gchar *now = confab_agent_get_mcp_servers(agent);
	g_autofree gchar *merged = NULL;

	if (old == NULL || now == NULL || g_strcmp0(old, now) == 0)
		return TRUE;
	if (!confab_tool_config_merge_masked(old, now, &merged, error))
		return FALSE;
	confab_agent_set_mcp_servers(agent, merged);
	return TRUE;
}

static gboolean
handle_update_agent(ConfabDbusAdmin *object,
		    GDBusMethodInvocation *invocation,
		    const gchar *agent_id,
		    GVariant *props)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_autoptr(ConfabAgent) current = confab_engine_lookup_agent(self->engine, agent_id);
	g_autoptr(ConfabAgent) agent = NULL;
	GError *error = NULL;

	if (current == NULL) {
		confab_error_return_dbus(invocation,
					 g_error_new(CONFAB_ERROR,
						     CONFAB_ERROR_AGENT_NOT_FOUND,
						     "No agent '%s'",
						     agent_id));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	/* cached agents are never changed in place: turns may hold them */
	agent = confab_agent_copy(current);
	if (!confab_dbus_admin_impl_apply_agent_props(agent, props, &error) ||
	    !keep_masked_secrets(agent, current, &error)) {
		confab_error_return_dbus(invocation, error);
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	drop_credentials_on_move(current, agent, props);
	confab_agent_set_updated_at(agent, g_get_real_time() / G_USEC_PER_SEC);
	confab_engine_save_agent_async(self->engine,
				       agent,
				       NULL,
				       update_agent_cb,
				       call_new(self, invocation, agent_id));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static void
delete_agent_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	GError *error = NULL;
	if (!confab_engine_delete_agent_finish(CONFAB_ENGINE(source), result, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	g_info("deleted agent %s", call->id);
	confab_dbus_admin_complete_delete_agent(CONFAB_DBUS_ADMIN(call->self), call->invocation);
}

static gboolean
handle_delete_agent(ConfabDbusAdmin *object,
		    GDBusMethodInvocation *invocation,
		    const gchar *agent_id)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	confab_engine_delete_agent_async(self->engine,
					 agent_id,
					 NULL,
					 delete_agent_cb,
					 call_new(self, invocation, agent_id));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_get_agent(ConfabDbusAdmin *object, GDBusMethodInvocation *invocation, const gchar *agent_id)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_autoptr(ConfabAgent) agent = confab_engine_lookup_agent(self->engine, agent_id);

	if (agent == NULL) {
		confab_error_return_dbus(invocation,
					 g_error_new(CONFAB_ERROR,
						     CONFAB_ERROR_AGENT_NOT_FOUND,
						     "No agent '%s'",
						     agent_id));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	confab_dbus_admin_complete_get_agent(object, invocation, agent_to_variant(agent));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static GVariant *
target_health_to_variant(ConfabRouterTargetHealth *health)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "label", "s", health->label);
	g_variant_dict_insert(&dict, "state", "s", health->state);
	g_variant_dict_insert(&dict, "failures", "u", health->failures);
	dict_add_string(&dict, "last_error", health->last_error);
	g_variant_dict_insert(&dict, "since", "x", health->since);
	g_variant_dict_insert(&dict, "skip_until", "x", health->skip_until);
	g_variant_dict_insert(&dict, "in_flight", "u", health->in_flight);
	return g_variant_dict_end(&dict);
}

static gboolean
handle_get_agent_health(ConfabDbusAdmin *object,
			GDBusMethodInvocation *invocation,
			const gchar *agent_id)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_autoptr(ConfabAgent) agent = confab_engine_lookup_agent(self->engine, agent_id);
	g_autoptr(GPtrArray) health = NULL;

	if (agent == NULL) {
		confab_error_return_dbus(invocation,
					 g_error_new(CONFAB_ERROR,
						     CONFAB_ERROR_AGENT_NOT_FOUND,
						     "No agent '%s'",
						     agent_id));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	health = confab_router_get_health(confab_engine_get_router(self->engine), agent);
	confab_dbus_admin_complete_get_agent_health(
	    object,
	    invocation,
	    array_to_variant(health, (GVariant * (*)(gpointer)) target_health_to_variant));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_list_agents(ConfabDbusAdmin *object, GDBusMethodInvocation *invocation)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_autoptr(GPtrArray) agents = confab_engine_list_agents(self->engine);
	confab_dbus_admin_complete_list_agents(
	    object,
	    invocation,
	    array_to_variant(agents, (GVariant * (*)(gpointer)) agent_to_variant));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* ---------- tokens ---------- */

static void
create_token_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(ConfabToken) token = NULL;
	g_autofree gchar *secret = NULL;
	GError *error = NULL;

	token = confab_engine_create_token_finish(CONFAB_ENGINE(source), result, &secret, &error);
	if (token == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	g_info("created token %s for %s",
	       confab_token_get_id(token),
	       confab_token_get_owner(token));
	confab_dbus_admin_complete_create_token(CONFAB_DBUS_ADMIN(call->self),
						call->invocation,
						confab_token_get_id(token),
						secret);
	memset(secret, 0, strlen(secret));
}

static gboolean
handle_create_token(ConfabDbusAdmin *object, GDBusMethodInvocation *invocation, GVariant *props)
{
	static const gchar *const known[] =
	    {"owner", "name", "scopes", "agent_id", "expires_at", NULL};
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_autofree gchar *owner = NULL;
	g_autofree gchar *name = NULL;
	g_autofree gchar *agent_id = NULL;
	g_autofree const gchar **scopes = NULL;
	g_autoptr(GVariant) scopes_v = NULL;
	g_autoptr(GVariant) expires_v = NULL;
	gint64 expires_at = 0;
	GError *error = NULL;

	if (!check_known_keys(props, known, &error) ||
	    !lookup_string(props, "owner", &owner, &error) ||
	    !lookup_string(props, "name", &name, &error) ||
	    !lookup_string(props, "agent_id", &agent_id, &error)) {
		confab_error_return_dbus(invocation, error);
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	scopes_v = g_variant_lookup_value(props, "scopes", NULL);
	if (scopes_v == NULL || !g_variant_is_of_type(scopes_v, G_VARIANT_TYPE_STRING_ARRAY)) {
		confab_error_return_dbus(
		    invocation,
		    invalid_arg("'%s' is required, as a string array (as)", "scopes"));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	scopes = g_variant_get_strv(scopes_v, NULL);
	expires_v = g_variant_lookup_value(props, "expires_at", NULL);
	if (expires_v != NULL) {
		if (!g_variant_is_of_type(expires_v, G_VARIANT_TYPE_INT64)) {
			confab_error_return_dbus(
			    invocation,
			    invalid_arg("'%s' must be an int64 (x): Unix seconds", "expires_at"));
			return G_DBUS_METHOD_INVOCATION_HANDLED;
		}
		expires_at = g_variant_get_int64(expires_v);
	}
	confab_engine_create_token_async(self->engine,
					 owner,
					 name,
					 (const gchar *const *)scopes,
					 agent_id,
					 expires_at,
					 NULL,
					 create_token_cb,
					 call_new(self, invocation, NULL));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_list_tokens(ConfabDbusAdmin *object, GDBusMethodInvocation *invocation, GVariant *filter)
{
	static const gchar *const known[] = {"owner", NULL};
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_autofree gchar *owner = NULL;
	g_autoptr(GPtrArray) tokens = NULL;
	GError *error = NULL;

	if (!check_known_keys(filter, known, &error) ||
	    !lookup_string(filter, "owner", &owner, &error)) {
		confab_error_return_dbus(invocation, error);
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	tokens = confab_engine_list_tokens(self->engine, owner);
	confab_dbus_admin_complete_list_tokens(
	    object,
	    invocation,
	    array_to_variant(tokens, (GVariant * (*)(gpointer)) token_to_variant));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static void
revoke_token_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	GError *error = NULL;
	if (!confab_engine_revoke_token_finish(CONFAB_ENGINE(source), result, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	g_info("revoked token %s", call->id);
	confab_dbus_admin_complete_revoke_token(CONFAB_DBUS_ADMIN(call->self), call->invocation);
}

static gboolean
handle_revoke_token(ConfabDbusAdmin *object,
		    GDBusMethodInvocation *invocation,
		    const gchar *token_id)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	confab_engine_revoke_token_async(self->engine,
					 token_id,
					 NULL,
					 revoke_token_cb,
					 call_new(self, invocation, token_id));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* ---------- quota ---------- */

static void
set_quota_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	GError *error = NULL;
	if (!confab_engine_set_quota_finish(CONFAB_ENGINE(source), result, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	confab_dbus_admin_complete_set_quota(CONFAB_DBUS_ADMIN(call->self), call->invocation);
}

static gboolean
handle_set_quota(ConfabDbusAdmin *object,
		 GDBusMethodInvocation *invocation,
		 const gchar *owner,
		 guint64 monthly_requests)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	if (monthly_requests > G_MAXINT64) {
		confab_error_return_dbus(invocation,
					 invalid_arg("'%s' is too large", "monthly_requests"));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	confab_engine_set_quota_async(self->engine,
				      owner,
				      monthly_requests,
				      NULL,
				      set_quota_cb,
				      call_new(self, invocation, owner));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* GetUsage, waiting for the month's tokens: the dict so far */
typedef struct {
	Call *call;	    /* owned */
	GVariantDict *dict; /* owned */
} UsageCall;

static void
usage_call_free(UsageCall *uc)
{
	call_free(uc->call);
	g_variant_dict_unref(uc->dict);
	g_free(uc);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(UsageCall, usage_call_free)

/* GetUsage's tokens: the owner's month summed over its tokens and agents */
static void
get_usage_tokens_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(UsageCall) uc = user_data;
	g_autoptr(GPtrArray) rows = NULL;
	GError *error = NULL;
	guint64 sums[3] = {0, 0, 0};

	rows = confab_store_list_usage_by_finish(CONFAB_STORE(source), result, &error);
	if (rows == NULL) {
		confab_error_return_dbus(uc->call->invocation, error);
		return;
	}
	for (guint i = 0; i < rows->len; i++) {
		ConfabStoreUsageRow *row = g_ptr_array_index(rows, i);
		sums[0] += row->input_tokens;
		sums[1] += row->output_tokens;
		sums[2] += row->reasoning_tokens;
	}
	g_variant_dict_insert(uc->dict, "input_tokens", "t", sums[0]);
	g_variant_dict_insert(uc->dict, "output_tokens", "t", sums[1]);
	g_variant_dict_insert(uc->dict, "reasoning_tokens", "t", sums[2]);
	confab_dbus_admin_complete_get_usage(CONFAB_DBUS_ADMIN(uc->call->self),
					     uc->call->invocation,
					     g_variant_dict_end(uc->dict));
}

static void
get_usage_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(ConfabStoreUsage) usage = NULL;
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	g_autoptr(GDateTime) first = NULL;
	g_autoptr(GDateTime) next = NULL;
	GError *error = NULL;
	UsageCall *uc = NULL;
	ConfabStore *store = NULL;
	gchar *owner = NULL;

	usage = confab_engine_get_usage_finish(CONFAB_ENGINE(source), result, &error);
	if (usage == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	first =
	    g_date_time_new_utc(g_date_time_get_year(now), g_date_time_get_month(now), 1, 0, 0, 0);
	next = g_date_time_add_months(first, 1);
	uc = g_new0(UsageCall, 1);
	uc->dict = g_variant_dict_new(NULL);
	g_variant_dict_insert(uc->dict, "owner", "s", call->id);
	g_variant_dict_insert(uc->dict, "month", "s", usage->month);
	g_variant_dict_insert(uc->dict, "requests", "t", usage->requests);
	g_variant_dict_insert(uc->dict, "quota", "t", usage->limit);
	g_variant_dict_insert(uc->dict, "quota_is_default", "b", !usage->is_override);
	if (usage->limit > 0)
		g_variant_dict_insert(
		    uc->dict,
		    "remaining",
		    "t",
		    usage->requests >= usage->limit ? 0 : usage->limit - usage->requests);
	g_variant_dict_insert(uc->dict,
			      "reset_seconds",
			      "x",
			      g_date_time_difference(next, now) / G_TIME_SPAN_SECOND);
	/* then the month's tokens, from the usage kept with the turns */
	store = confab_engine_get_store(call->self->engine);
	owner = call->id;
	uc->call = g_steal_pointer(&call);
	confab_store_list_usage_by_async(store,
					 usage->month,
					 CONFAB_STORE_USAGE_BY_OWNER,
					 owner,
					 NULL,
					 get_usage_tokens_cb,
					 uc);
}

static gboolean
handle_get_usage(ConfabDbusAdmin *object, GDBusMethodInvocation *invocation, const gchar *owner)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	Call *call = call_new(self, invocation, owner);

	confab_engine_get_usage_async(self->engine, owner, NULL, get_usage_cb, call);
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* ListUsage(a{sv} filter): a month's usage per owner, token or agent */
static void
list_usage_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(GPtrArray) rows = NULL;
	GError *error = NULL;
	GVariantBuilder builder;

	rows = confab_store_list_usage_by_finish(CONFAB_STORE(source), result, &error);
	if (rows == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	g_variant_builder_init(&builder, G_VARIANT_TYPE("aa{sv}"));
	for (guint i = 0; i < rows->len; i++) {
		ConfabStoreUsageRow *row = g_ptr_array_index(rows, i);
		GVariantDict dict;

		g_variant_dict_init(&dict, NULL);
		g_variant_dict_insert(&dict, "month", "s", row->month);
		/* call->id: what the rows are summed by, the member naming it */
		if (g_str_equal(call->id, "owner"))
			g_variant_dict_insert(&dict, "owner", "s", row->owner);
		else if (g_str_equal(call->id, "token"))
			g_variant_dict_insert(&dict, "token_id", "s", row->token_id);
		else
			g_variant_dict_insert(&dict, "agent_id", "s", row->agent_id);
		g_variant_dict_insert(&dict, "requests", "t", row->requests);
		g_variant_dict_insert(&dict, "input_tokens", "t", row->input_tokens);
		g_variant_dict_insert(&dict, "output_tokens", "t", row->output_tokens);
		g_variant_dict_insert(&dict, "reasoning_tokens", "t", row->reasoning_tokens);
		g_variant_builder_add_value(&builder, g_variant_dict_end(&dict));
	}
	confab_dbus_admin_complete_list_usage(CONFAB_DBUS_ADMIN(call->self),
					      call->invocation,
					      g_variant_builder_end(&builder));
}

static gboolean
handle_list_usage(ConfabDbusAdmin *object, GDBusMethodInvocation *invocation, GVariant *filter)
{
	static const gchar *const known[] = {"month", "by", "owner", NULL};
	static const gchar *const bys[] = {"owner", "token", "agent"};
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_autofree gchar *month = NULL;
	g_autofree gchar *by = NULL;
	g_autofree gchar *owner = NULL;
	GError *error = NULL;
	guint index = G_N_ELEMENTS(bys);

	if (!check_known_keys(filter, known, &error) ||
	    !lookup_string(filter, "month", &month, &error) ||
	    !lookup_string(filter, "by", &by, &error) ||
	    !lookup_string(filter, "owner", &owner, &error)) {
		confab_error_return_dbus(invocation, error);
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	if (by == NULL)
		by = g_strdup("owner");
	for (guint i = 0; i < G_N_ELEMENTS(bys); i++) {
		if (g_str_equal(by, bys[i]))
			index = i;
	}
	if (index == G_N_ELEMENTS(bys)) {
		confab_error_return_dbus(invocation,
					 invalid_arg("'%s' is owner, token or agent", "by"));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	if (month == NULL) {
		month = confab_engine_current_month(self->engine);
	} else if (!confab_month_is_valid(month)) {
		confab_error_return_dbus(invocation,
					 invalid_arg("'%s' is a month as YYYY-MM", "month"));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	confab_store_list_usage_by_async(confab_engine_get_store(self->engine),
					 month,
					 (ConfabStoreUsageBy)index,
					 owner,
					 NULL,
					 list_usage_cb,
					 call_new(self, invocation, by));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* ---------- limits ---------- */

static const struct {
	const gchar *key;
	const gchar *type;
} limit_keys[] = {
    {"rpm", "t"},
    {"tpm", "t"},
    {"max_parallel", "u"},
    {"monthly_tokens", "t"},
};

/* @limits as rpm, tpm, max_parallel and monthly_tokens: -1 for a key not
 * given */
static gboolean
limits_from_variant(GVariant *limits, gint64 values[4], GError **error)
{
	static const gchar *const known[] = {"rpm", "tpm", "max_parallel", "monthly_tokens", NULL};

	if (!check_known_keys(limits, known, error))
		return FALSE;
	for (guint i = 0; i < G_N_ELEMENTS(limit_keys); i++) {
		g_autoptr(GVariant) value = g_variant_lookup_value(limits, limit_keys[i].key, NULL);
		guint64 number;

		values[i] = -1;
		if (value == NULL)
			continue;
		if (!g_variant_is_of_type(value, G_VARIANT_TYPE(limit_keys[i].type))) {
			g_autofree gchar *format = g_strdup_printf(
			    "'%%s' must be a%s (%s), not %s",
			    g_str_equal(limit_keys[i].type, "u") ? " uint32" : " uint64",
			    limit_keys[i].type,
			    g_variant_get_type_string(value));
			*error = invalid_arg(format, limit_keys[i].key);
			return FALSE;
		}
		number = g_str_equal(limit_keys[i].type, "u") ? g_variant_get_uint32(value)
							      : g_variant_get_uint64(value);
		/* rates and turns in flight fit 32 bits, as `[quota]`'s do */
		if (number > (guint64)(i % 2 == 0 ? G_MAXINT32 : G_MAXINT64)) {
			*error = invalid_arg("'%s' is too large", limit_keys[i].key);
			return FALSE;
		}
		values[i] = (gint64)number;
	}
	return TRUE;
}

static void
set_limits_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	GError *error = NULL;

	if (!confab_engine_set_limits_finish(CONFAB_ENGINE(source), result, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	confab_dbus_admin_complete_set_limits(CONFAB_DBUS_ADMIN(call->self), call->invocation);
}

static gboolean
handle_set_limits(ConfabDbusAdmin *object,
		  GDBusMethodInvocation *invocation,
		  const gchar *kind,
		  const gchar *id,
		  GVariant *limits)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	gint64 values[4];
	GError *error = NULL;

	if (!limits_from_variant(limits, values, &error)) {
		confab_error_return_dbus(invocation, error);
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	confab_engine_set_limits_async(self->engine,
				       kind,
				       id,
				       values,
				       NULL,
				       set_limits_cb,
				       call_new(self, invocation, id));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_get_limits(ConfabDbusAdmin *object,
		  GDBusMethodInvocation *invocation,
		  const gchar *kind,
		  const gchar *id)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_autoptr(ConfabStoreLimits) limits = NULL;
	GError *error = NULL;
	GVariantDict dict;

	limits = confab_engine_get_limits(self->engine, kind, id, &error);
	if (limits == NULL) {
		confab_error_return_dbus(invocation, error);
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "rpm", "t", limits->rpm);
	g_variant_dict_insert(&dict, "tpm", "t", limits->tpm);
	g_variant_dict_insert(&dict,
			      "max_parallel",
			      "u",
			      (guint32)MIN(limits->max_parallel, G_MAXUINT32));
	g_variant_dict_insert(&dict, "monthly_tokens", "t", limits->monthly_tokens);
	confab_dbus_admin_complete_get_limits(object, invocation, g_variant_dict_end(&dict));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* ---------- sessions ---------- */

static void
list_sessions_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(ConfabStorePage) page = NULL;
	GError *error = NULL;

	page = confab_store_list_sessions_finish(CONFAB_STORE(source), result, &error);
	if (page == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	confab_dbus_admin_complete_list_sessions(
	    CONFAB_DBUS_ADMIN(call->self),
	    call->invocation,
	    array_to_variant(page->items, (GVariant * (*)(gpointer)) session_to_variant));
}

static gboolean
handle_list_sessions(ConfabDbusAdmin *object, GDBusMethodInvocation *invocation, GVariant *filter)
{
	static const gchar *const known[] =
	    {"owner", "agent_id", "source", "after", "limit", "order", NULL};
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_auto(ConfabStoreSessionQuery) query = {NULL};
	g_autofree gchar *source = NULL;
	GError *error = NULL;

	query.source = -1;
	if (!check_known_keys(filter, known, &error) ||
	    !lookup_string(filter, "owner", &query.owner, &error) ||
	    !lookup_string(filter, "agent_id", &query.agent_id, &error) ||
	    !lookup_string(filter, "source", &source, &error) ||
	    !read_paging(filter,
			 CONFAB_PREFIX_SESSION,
			 CONFAB_ORDER_DESC,
			 &query.after,
			 &query.order,
			 &query.limit,
			 &error)) {
		confab_error_return_dbus(invocation, error);
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	if (source != NULL) {
		ConfabSessionSource src;
		if (!confab_session_source_from_string(source, &src)) {
			confab_error_return_dbus(
			    invocation,
			    invalid_arg("'%s' must be api or channel", "source"));
			return G_DBUS_METHOD_INVOCATION_HANDLED;
		}
		query.source = src;
	}
	confab_store_list_sessions_async(confab_engine_get_store(self->engine),
					 &query,
					 NULL,
					 list_sessions_cb,
					 call_new(self, invocation, NULL));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static void
get_messages_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(ConfabStorePage) page = NULL;
	GError *error = NULL;

	page = confab_store_list_messages_finish(CONFAB_STORE(source), result, &error);
	if (page == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	confab_dbus_admin_complete_get_messages(
	    CONFAB_DBUS_ADMIN(call->self),
	    call->invocation,
	    array_to_variant(page->items, (GVariant * (*)(gpointer)) message_to_variant));
}

typedef struct {
	Call *call;
	ConfabStoreMessageQuery query;
} GetMessagesCall;

static void
get_messages_session_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	GetMessagesCall *gm = user_data;
	g_autoptr(ConfabSession) session = NULL;
	GError *error = NULL;

	session = confab_store_get_session_finish(CONFAB_STORE(source), result, &error);
	if (session == NULL) {
		confab_error_return_dbus(gm->call->invocation, error);
		call_free(gm->call);
	} else {
		confab_store_list_messages_async(CONFAB_STORE(source),
						 &gm->query,
						 NULL,
						 get_messages_cb,
						 gm->call);
	}
	confab_store_message_query_clear(&gm->query);
	g_free(gm);
}

static gboolean
handle_get_messages(ConfabDbusAdmin *object,
		    GDBusMethodInvocation *invocation,
		    const gchar *session_id,
		    GVariant *options)
{
	static const gchar *const known[] = {"after", "limit", "order", NULL};
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	GetMessagesCall *gm;
	g_auto(ConfabStoreMessageQuery) query = {NULL};
	GError *error = NULL;

	if (!check_known_keys(options, known, &error) || !read_paging(options,
								      CONFAB_PREFIX_MESSAGE,
								      CONFAB_ORDER_ASC,
								      &query.after,
								      &query.order,
								      &query.limit,
								      &error)) {
		confab_error_return_dbus(invocation, error);
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	if (!confab_id_is_valid(session_id, CONFAB_PREFIX_SESSION)) {
		confab_error_return_dbus(invocation,
					 g_error_new(CONFAB_ERROR,
						     CONFAB_ERROR_CONVERSATION_NOT_FOUND,
						     "No session '%s'",
						     session_id));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	query.session_id = g_strdup(session_id);
	gm = g_new0(GetMessagesCall, 1);
	gm->call = call_new(self, invocation, session_id);
	gm->query = query;
	memset(&query, 0, sizeof(query));
	confab_store_get_session_async(confab_engine_get_store(self->engine),
				       session_id,
				       NULL,
				       get_messages_session_cb,
				       gm);
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static void
delete_session_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	GError *error = NULL;
	if (!confab_store_delete_session_finish(CONFAB_STORE(source), result, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	g_info("deleted session %s", call->id);
	confab_dbus_admin_complete_delete_session(CONFAB_DBUS_ADMIN(call->self), call->invocation);
}

static gboolean
handle_delete_session(ConfabDbusAdmin *object,
		      GDBusMethodInvocation *invocation,
		      const gchar *session_id)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	if (!confab_id_is_valid(session_id, CONFAB_PREFIX_SESSION)) {
		confab_error_return_dbus(invocation,
					 g_error_new(CONFAB_ERROR,
						     CONFAB_ERROR_CONVERSATION_NOT_FOUND,
						     "No session '%s'",
						     session_id));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	confab_store_delete_session_async(confab_engine_get_store(self->engine),
					  session_id,
					  NULL,
					  delete_session_cb,
					  call_new(self, invocation, session_id));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* ---------- background responses ---------- */

#define LIST_BACKGROUND_MAX 1000

static GVariant *
record_to_variant(ConfabResponseRecord *r)
{
	GVariantBuilder b;

	g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
	g_variant_builder_add(&b, "{sv}", "id", g_variant_new_string(r->id));
	g_variant_builder_add(&b, "{sv}", "owner", g_variant_new_string(r->owner));
	g_variant_builder_add(&b, "{sv}", "agent_id", g_variant_new_string(r->agent_id));
	g_variant_builder_add(&b,
			      "{sv}",
			      "session_id",
			      g_variant_new_string(r->session_id != NULL ? r->session_id : ""));
	g_variant_builder_add(&b, "{sv}", "status", g_variant_new_string(r->status));
	g_variant_builder_add(&b, "{sv}", "stream", g_variant_new_boolean(r->stream));
	g_variant_builder_add(&b, "{sv}", "created_at", g_variant_new_int64(r->created_at));
	return g_variant_builder_end(&b);
}

static void
list_background_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(GPtrArray) records = NULL;
	GError *error = NULL;

	records = confab_store_list_running_responses_finish(CONFAB_STORE(source), result, &error);
	if (records == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	confab_dbus_admin_complete_list_background_responses(
	    CONFAB_DBUS_ADMIN(call->self),
	    call->invocation,
	    array_to_variant(records, (GVariant * (*)(gpointer)) record_to_variant));
}

static gboolean
handle_list_background_responses(ConfabDbusAdmin *object,
				 GDBusMethodInvocation *invocation,
				 GVariant *filter)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	const gchar *owner = NULL;
	const gchar *session_id = NULL;

	g_variant_lookup(filter, "owner", "&s", &owner);
	g_variant_lookup(filter, "session_id", "&s", &session_id);
	confab_store_list_running_responses_async(confab_engine_get_store(self->engine),
						  owner,
						  session_id,
						  LIST_BACKGROUND_MAX,
						  NULL,
						  list_background_cb,
						  call_new(self, invocation, NULL));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static void
cancel_asked_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	GError *error = NULL;

	if (!confab_store_cancel_response_finish(CONFAB_STORE(source), result, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	/* here at once; another instance within its poll */
	confab_background_cancel(confab_engine_get_background(call->self->engine), call->id);
	g_info("asked background response %s to stop", call->id);
	confab_dbus_admin_complete_cancel_response(CONFAB_DBUS_ADMIN(call->self), call->invocation);
}

static void
cancel_record_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(ConfabResponseRecord) record = NULL;
	GError *error = NULL;

	record = confab_store_get_response_record_finish(CONFAB_STORE(source), result, &error);
	if (record == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	if (!record->background) {
		confab_error_return_dbus(
		    call->invocation,
		    g_error_new(CONFAB_ERROR,
				CONFAB_ERROR_INVALID_VALUE,
				"Response '%s' was not created in the background",
				call->id));
		return;
	}
	if (!confab_response_record_is_running(record)) {
		confab_dbus_admin_complete_cancel_response(CONFAB_DBUS_ADMIN(call->self),
							   call->invocation);
		return;
	}
	/* the call goes to the callback: read it before it is handed over */
	{
		Call *pending = g_steal_pointer(&call);
		confab_store_cancel_response_async(CONFAB_STORE(source),
						   pending->id,
						   NULL,
						   cancel_asked_cb,
						   pending);
	}
}

static gboolean
handle_cancel_response(ConfabDbusAdmin *object,
		       GDBusMethodInvocation *invocation,
		       const gchar *response_id)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);

	if (!confab_id_is_valid(response_id, CONFAB_PREFIX_RESPONSE)) {
		confab_error_return_dbus(invocation,
					 g_error_new(CONFAB_ERROR,
						     CONFAB_ERROR_RESPONSE_NOT_FOUND,
						     "No response '%s'",
						     response_id));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	confab_store_get_response_record_async(confab_engine_get_store(self->engine),
					       response_id,
					       NULL,
					       cancel_record_cb,
					       call_new(self, invocation, response_id));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* ---------- who may call ---------- */

static gboolean
confab_dbus_admin_impl_authorize_method(GDBusInterfaceSkeleton *skeleton,
					GDBusMethodInvocation *invocation)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(skeleton);
	g_autoptr(GError) error = NULL;
	guint32 uid = 0;

	if (!self->check_caller)
		return TRUE;
	/* runs in a thread of its own: blocking is allowed here */
	if (!confab_dbus_caller_get_uid_sync(invocation, &uid, &error)) {
		g_dbus_method_invocation_return_error(invocation,
						      G_DBUS_ERROR,
						      G_DBUS_ERROR_ACCESS_DENIED,
						      "Cannot identify the caller");
		return FALSE;
	}
	if (!confab_dbus_caller_uid_is_admin(uid, self->admin_group)) {
		g_dbus_method_invocation_return_error(invocation,
						      G_DBUS_ERROR,
						      G_DBUS_ERROR_ACCESS_DENIED,
						      "Only root and members of the '%s' group may "
						      "administer Confab",
						      self->admin_group);
		return FALSE;
	}
	return TRUE;
}

/* ---------- property reads ---------- */

/*
 * GDBusInterfaceSkeleton runs g-authorize-method for method calls only:
 * with the generated vtable, org.freedesktop.DBus.Properties.Get and
 * GetAll go from GDBusConnection straight to its get_property(), and any
 * caller could read the Admin properties. Without a get_property(),
 * GDBusConnection hands Get and GetAll to method_call() instead (GLib
 * 2.38), and the skeleton authorizes them as any method before they come
 * here. Set never does: every Admin property is read-only.
 */
static const GDBusInterfaceVTable *parent_vtable;

static void
admin_method_call(GDBusConnection *connection,
		  const gchar *sender,
		  const gchar *object_path,
		  const gchar *interface_name,
		  const gchar *method_name,
		  GVariant *parameters,
		  GDBusMethodInvocation *invocation,
		  gpointer user_data)
{
	GDBusInterfaceSkeleton *skeleton = G_DBUS_INTERFACE_SKELETON(user_data);
	g_autoptr(GVariant) value = NULL;

	if (g_strcmp0(interface_name, "org.freedesktop.DBus.Properties") != 0) {
		parent_vtable->method_call(connection,
					   sender,
					   object_path,
					   interface_name,
					   method_name,
					   parameters,
					   invocation,
					   user_data);
		return;
	}
	if (g_strcmp0(method_name, "Get") == 0) {
		const GDBusPropertyInfo *info =
		    g_dbus_method_invocation_get_property_info(invocation);
		GError *error = NULL;

		value =
		    parent_vtable->get_property(connection,
						sender,
						object_path,
						g_dbus_interface_skeleton_get_info(skeleton)->name,
						info->name,
						&error,
						user_data);
		if (value == NULL) {
			g_dbus_method_invocation_take_error(invocation, error);
			return;
		}
		g_variant_take_ref(value);
		g_dbus_method_invocation_return_value(invocation, g_variant_new("(v)", value));
		return;
	}
	if (g_strcmp0(method_name, "GetAll") == 0) {
		value = g_variant_take_ref(g_dbus_interface_skeleton_get_properties(skeleton));
		g_dbus_method_invocation_return_value(invocation, g_variant_new("(@a{sv})", value));
		return;
	}
	g_dbus_method_invocation_return_error(invocation,
					      G_DBUS_ERROR,
					      G_DBUS_ERROR_PROPERTY_READ_ONLY,
					      "The Admin properties are read-only");
}

static GDBusInterfaceVTable *
confab_dbus_admin_impl_get_vtable(GDBusInterfaceSkeleton *skeleton)
{
	static GDBusInterfaceVTable vtable;
	static gsize initialized = 0;

	if (g_once_init_enter(&initialized)) {
		parent_vtable = G_DBUS_INTERFACE_SKELETON_CLASS(confab_dbus_admin_impl_parent_class)
				    ->get_vtable(skeleton);
		vtable = *parent_vtable;
		vtable.method_call = admin_method_call;
		vtable.get_property = NULL;
		g_once_init_leave(&initialized, 1);
	}
	return &vtable;
}

/* ---------- live properties ---------- */

static void
confab_dbus_admin_impl_get_property(GObject *object,
				    guint prop_id,
				    GValue *value,
				    GParamSpec *pspec)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);

	/* statistics are read live rather than pushed on every turn */
	if (self->engine != NULL && g_str_equal(pspec->name, "active-turns")) {
		g_value_set_uint(value, confab_engine_get_active_turns(self->engine));
		return;
	}
	if (self->engine != NULL && g_str_equal(pspec->name, "turns-served")) {
		g_value_set_uint64(value, confab_engine_get_turns_served(self->engine));
		return;
	}
	G_OBJECT_CLASS(confab_dbus_admin_impl_parent_class)
	    ->get_property(object, prop_id, value, pspec);
}

static void
confab_dbus_admin_impl_set_property(GObject *object,
				    guint prop_id,
				    const GValue *value,
				    GParamSpec *pspec)
{
	/* read live from the engine: nothing to store */
}

static void
confab_dbus_admin_impl_finalize(GObject *object)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_clear_object(&self->engine);
	g_free(self->admin_group);
	G_OBJECT_CLASS(confab_dbus_admin_impl_parent_class)->finalize(object);
}

static void
confab_dbus_admin_impl_class_init(ConfabDbusAdminImplClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	GDBusInterfaceSkeletonClass *skeleton_class = G_DBUS_INTERFACE_SKELETON_CLASS(klass);
	object_class->finalize = confab_dbus_admin_impl_finalize;
	object_class->get_property = confab_dbus_admin_impl_get_property;
	object_class->set_property = confab_dbus_admin_impl_set_property;
	/* GObject asks the class that installed a property for its value: the
	 * skeleton's, unless overridden here */
	g_object_class_override_property(object_class, PROP_ACTIVE_TURNS, "active-turns");
	g_object_class_override_property(object_class, PROP_TURNS_SERVED, "turns-served");
	/* the one place that decides who may call, property reads included;
	 * GDBus runs it in a thread */
	skeleton_class->g_authorize_method = confab_dbus_admin_impl_authorize_method;
	skeleton_class->get_vtable = confab_dbus_admin_impl_get_vtable;
}

static void
list_tools_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(GPtrArray) tools = NULL;
	GVariantBuilder builder;
	GError *error = NULL;

	tools = confab_toolbox_list_tools_finish(CONFAB_TOOLBOX(source), result, &error);
	if (tools == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	g_variant_builder_init(&builder, G_VARIANT_TYPE("aa{sv}"));
	for (guint i = 0; i < tools->len; i++) {
		ConfabToolboxTool *tool = g_ptr_array_index(tools, i);
		GVariantDict dict;
		g_variant_dict_init(&dict, NULL);
		g_variant_dict_insert(&dict, "name", "s", tool->name != NULL ? tool->name : "");
		g_variant_dict_insert(&dict,
				      "server",
				      "s",
				      tool->server != NULL ? tool->server : "");
		g_variant_dict_insert(&dict,
				      "description",
				      "s",
				      tool->description != NULL ? tool->description : "");
		g_variant_dict_insert(&dict,
				      "input_schema",
				      "s",
				      tool->input_schema != NULL ? tool->input_schema : "{}");
		g_variant_dict_insert(&dict,
				      "status",
				      "s",
				      tool->status != NULL ? tool->status : "");
		g_variant_builder_add_value(&builder, g_variant_dict_end(&dict));
	}
	confab_dbus_admin_complete_list_agent_tools(CONFAB_DBUS_ADMIN(call->self),
						    call->invocation,
						    g_variant_builder_end(&builder));
}

static gboolean
handle_list_agent_tools(ConfabDbusAdmin *object,
			GDBusMethodInvocation *invocation,
			const gchar *agent_id)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);
	g_autoptr(ConfabAgent) agent = confab_engine_lookup_agent(self->engine, agent_id);

	if (agent == NULL) {
		confab_error_return_dbus(invocation,
					 g_error_new(CONFAB_ERROR,
						     CONFAB_ERROR_AGENT_NOT_FOUND,
						     "No agent '%s'",
						     agent_id));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	if (confab_agent_get_mcp_servers(agent) == NULL) {
		confab_dbus_admin_complete_list_agent_tools(
		    object,
		    invocation,
		    g_variant_new_array(G_VARIANT_TYPE_VARDICT, NULL, 0));
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	confab_toolbox_list_tools_async(confab_engine_get_toolbox(self->engine),
					agent_id,
					confab_agent_get_mcp_servers(agent),
					NULL,
					list_tools_cb,
					call_new(self, invocation, agent_id));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static void
authorize_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	GError *error = NULL;
	g_autofree gchar *url =
	    confab_mcp_authorizations_authorize_finish(CONFAB_MCP_AUTHORIZATIONS(source),
						       result,
						       &error);

	if (url == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	confab_dbus_admin_complete_authorize_mcp_server(CONFAB_DBUS_ADMIN(call->self),
							call->invocation,
							url);
}

static gboolean
handle_authorize_mcp_server(ConfabDbusAdmin *object,
			    GDBusMethodInvocation *invocation,
			    const gchar *agent_id,
			    const gchar *server)
{
	ConfabDbusAdminImpl *self = CONFAB_DBUS_ADMIN_IMPL(object);

	confab_mcp_authorizations_authorize_async(
	    confab_engine_get_mcp_authorizations(self->engine),
	    agent_id,
	    server,
	    NULL,
	    authorize_cb,
	    call_new(self, invocation, agent_id));
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static void
confab_dbus_admin_impl_iface_init(ConfabDbusAdminIface *iface)
{
	iface->handle_authorize_mcp_server = handle_authorize_mcp_server;
	iface->handle_create_agent = handle_create_agent;
	iface->handle_update_agent = handle_update_agent;
	iface->handle_delete_agent = handle_delete_agent;
	iface->handle_get_agent = handle_get_agent;
	iface->handle_get_agent_health = handle_get_agent_health;
	iface->handle_list_agents = handle_list_agents;
	iface->handle_list_agent_tools = handle_list_agent_tools;
	iface->handle_create_token = handle_create_token;
	iface->handle_list_tokens = handle_list_tokens;
	iface->handle_revoke_token = handle_revoke_token;
	iface->handle_set_quota = handle_set_quota;
	iface->handle_get_usage = handle_get_usage;
	iface->handle_list_usage = handle_list_usage;
	iface->handle_set_limits = handle_set_limits;
	iface->handle_get_limits = handle_get_limits;
	iface->handle_list_sessions = handle_list_sessions;
	iface->handle_get_messages = handle_get_messages;
	iface->handle_delete_session = handle_delete_session;
	iface->handle_list_background_responses = handle_list_background_responses;
	iface->handle_cancel_response = handle_cancel_response;
}

static void
confab_dbus_admin_impl_init(ConfabDbusAdminImpl *self)
{
}

/**
 * confab_dbus_admin_impl_new:
 * @engine: the engine
 * @check_caller: whether to allow only root, the daemon's own user and
 *   members of @admin_group (the system bus); a session bus is one user's
 * @admin_group: (nullable): the admin group
 *
 * Returns: (transfer full): the Admin interface, to export
 */
ConfabDbusAdminImpl *
confab_dbus_admin_impl_new(ConfabEngine *engine, gboolean check_caller, const gchar *admin_group)
{
	ConfabDbusAdminImpl *self =
	    g_object_new(CONFAB_TYPE_DBUS_ADMIN_IMPL, "version", PACKAGE_VERSION, NULL);
	self->engine = g_object_ref(engine);
	self->check_caller = check_caller;
	self->admin_group = g_strdup(admin_group);
	return self;
}
