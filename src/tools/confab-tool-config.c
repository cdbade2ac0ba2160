/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabToolConfig"

#include "config.h"

#include <math.h>
#include <string.h>

#include "tools/confab-tool-config.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/**
 * ConfabToolConfig:
 *
 * An agent's tool servers: its `mcp_servers` setting, parsed and checked.
 * The text has the shape MCP servers document for their users,
 *
 * |[
 * {"mcpServers": {
 *    "fs":   {"command": "npx", "args": ["-y", "server-filesystem", "/srv"],
 *             "env": {"DEBUG": "1"}, "cwd": "/srv"},
 *    "docs": {"url": "https://host/mcp", "headers": {"X-Api-Key": "..."},
 *             "bearer_token_file": "/etc/confab/docs.token"}}}
 * ]|
 *
 * plus keys of Confab's own per server: `allow` (the tool names offered
 * to the model; absent = all), `timeout` (seconds per call, more than 0
 * and at most 3600, fractions allowed; 60 by default) and
 * `require_approval` (OpenAI's shape: "never", the default, "always", or
 * {"always":{"tool_names":[…]},"never":{"tool_names":[…]}}, each list
 * optional; a tool named in neither list needs approval unless the object
 * has only an `always` list; a tool named in both is refused).
 *
 * The parser is strict, so that a typo is an error and not a server quietly
 * started without its setting:
 * - the text is at most 64 KiB of strict JSON, nested at most 16 deep;
 * - at the top, only `mcpServers` and `$schema` (a string, which editors
 *   add and Confab ignores) are taken; an empty text, `{}` and
 *   `{"mcpServers":{}}` all mean "no tool servers";
 * - at most 32 servers, each named by 1 to 32 of `[a-z0-9_-]`;
 * - a server is either stdio (`command`, with `args`, `env`, `cwd`) or
 *   HTTP (`url`, http:// or https://, with `headers` and
 *   `bearer_token_file`), never both; the optional `type` ("stdio",
 *   "http" or "streamable-http", as VS Code and Claude Code write it) must
 *   agree; "sse", the transport MCP deprecated, is refused;
 * - `cwd` and `bearer_token_file` are absolute paths; `env` names are
 *   `[A-Za-z_][A-Za-z0-9_]*`; header names are HTTP tokens, other than the
 *   ones the transport sets itself (and `Authorization` when
 *   `bearer_token_file` is given), and no value holds a control character;
 * - any other key is refused. When a key appears twice in one object, the
 *   last one counts, as everywhere JSON is read in Confab.
 *
 * Every refusal is %CONFAB_ERROR_INVALID_VALUE with the param
 * `mcp_servers` and a message naming the server and the key.
 *
 * Secrets: `headers` and `env` values are shown as `"********"`
 * (confab_tool_config_mask()); confab_tool_config_merge_masked() puts the
 * stored values back when such a text is sent back.
 */

#define MAX_DEPTH	16
#define MAX_TOOL_NAME	128
#define PARAM		"mcp_servers"
#define VALID_NAME_CHAR "abcdefghijklmnopqrstuvwxyz0123456789_-"

struct _ConfabToolConfigServer {
	gchar *name; /* owned */
	ConfabToolConfigKind kind;
	gchar *type;	      /* owned, nullable: as given */
	gchar **argv;	      /* owned: command and args; stdio */
	gchar **env;	      /* owned: KEY=VALUE; stdio */
	gchar *cwd;	      /* owned, nullable */
	gchar *url;	      /* owned; HTTP */
	gchar **header_names; /* owned; HTTP */
	gchar **header_values;
	gchar *bearer_token_file; /* owned, nullable */
	/* `oauth` (HTTP): the grant, -1 without the key; the rest nullable */
	gint oauth_grant;
	gchar *oauth_client_id;
	gchar *oauth_client_secret;
	gchar *oauth_private_key;
	gchar *oauth_scope;
	gchar **allow; /* owned, nullable: all */
	guint timeout_ms;
	gboolean approval_default; /* require_approval for a tool in neither list */
	gchar **approval_always;   /* owned, nullable: tool names */
	gchar **approval_never;	   /* owned, nullable: tool names */
	gchar *fingerprint;	   /* owned: SHA-256 of its object */
	gboolean has_command;
	gboolean has_args;
};

struct _ConfabToolConfig {
	GObject parent_instance;
	GPtrArray *servers; /* owned: of ConfabToolConfigServer */
};

G_DEFINE_FINAL_TYPE(ConfabToolConfig, confab_tool_config, G_TYPE_OBJECT)

static void
server_free(ConfabToolConfigServer *server)
{
	g_free(server->name);
	g_free(server->type);
	g_strfreev(server->argv);
	g_strfreev(server->env);
	g_free(server->cwd);
	g_free(server->url);
	g_strfreev(server->header_names);
	g_strfreev(server->header_values);
	g_free(server->bearer_token_file);
	g_free(server->oauth_client_id);
	if (server->oauth_client_secret != NULL)
		memset(server->oauth_client_secret, 0, strlen(server->oauth_client_secret));
	g_free(server->oauth_client_secret);
	if (server->oauth_private_key != NULL)
		memset(server->oauth_private_key, 0, strlen(server->oauth_private_key));
	g_free(server->oauth_private_key);
	g_free(server->oauth_scope);
	g_strfreev(server->allow);
	g_strfreev(server->approval_always);
	g_strfreev(server->approval_never);
	g_free(server->fingerprint);
	g_free(server);
}

/* ---------- refusals ---------- */

typedef struct {
	GError **error;
	const gchar *server; /* nullable: the one being read */
} Parse;

static gboolean
refuse(Parse *p, const gchar *key, const gchar *format, ...) G_GNUC_PRINTF(3, 4);

/* "mcp_servers: server “fs”: “timeout” must be ...", "mcp_servers is ..." */
static gboolean
refuse(Parse *p, const gchar *key, const gchar *format, ...)
{
	g_autoptr(GString) message = g_string_new(PARAM);
	va_list args;

	g_string_append(message, p->server == NULL && key == NULL ? " " : ": ");
	if (p->server != NULL)
		g_string_append_printf(message, "server “%s”: ", p->server);
	if (key != NULL)
		g_string_append_printf(message, "“%s” ", key);
	va_start(args, format);
	g_string_append_vprintf(message, format, args);
	va_end(args);
	confab_error_set(p->error, CONFAB_ERROR_INVALID_VALUE, PARAM, message->str);
	return FALSE;
}

/* ---------- values ---------- */

static const gchar *
string_value(JsonNode *node)
{
	if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) ||
	    json_node_get_value_type(node) != G_TYPE_STRING)
		return NULL;
	return json_node_get_string(node);
}

static gboolean
has_control(const gchar *text)
{
	for (const gchar *c = text; *c != '\0'; c++) {
		if (((guchar)*c < 0x20 && *c != '\t') || *c == 0x7f)
			return TRUE;
	}
	return FALSE;
}

static gboolean
take_string(Parse *p, const gchar *key, JsonNode *node, gboolean absolute, gchar **out)
{
	const gchar *value = string_value(node);

	if (value == NULL || *value == '\0')
		return refuse(p, key, "must be a string that is not empty");
	if (absolute && !g_path_is_absolute(value))
		return refuse(p, key, "must be an absolute path");
	if (absolute && has_control(value))
		return refuse(p, key, "holds a control character");
	g_free(*out);
	*out = g_strdup(value);
	return TRUE;
}

/* An array of strings; with @max_len, each 1 to @max_len bytes and unique. */
static gboolean
take_string_array(Parse *p, const gchar *key, JsonNode *node, gsize max_len, GPtrArray *out)
{
	JsonArray *array;

	if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
		return refuse(p, key, "must be an array of strings");
	array = json_node_get_array(node);
	for (guint i = 0; i < json_array_get_length(array); i++) {
		const gchar *item = string_value(json_array_get_element(array, i));
		if (item == NULL)
			return refuse(p, key, "must be an array of strings");
		if (max_len > 0 && (*item == '\0' || strlen(item) > max_len))
			return refuse(p, key, "must hold names of 1 to %zu bytes", max_len);
		if (max_len > 0 && g_ptr_array_find_with_equal_func(out, item, g_str_equal, NULL))
			return refuse(p, key, "names “%s” twice", item);
		g_ptr_array_add(out, g_strdup(item));
	}
	return TRUE;
}

static gboolean
env_name_ok(const gchar *name)
{
	if (!g_ascii_isalpha(*name) && *name != '_')
		return FALSE;
	for (const gchar *c = name; *c != '\0'; c++) {
		if (!g_ascii_isalnum(*c) && *c != '_')
			return FALSE;
	}
	return TRUE;
}

static gboolean
header_name_ok(const gchar *name)
{
	if (*name == '\0')
		return FALSE;
	for (const gchar *c = name; *c != '\0'; c++) {
		if (!g_ascii_isalnum(*c) && strchr("!#$%&'*+-.^_`|~", *c) == NULL)
			return FALSE;
	}
	return TRUE;
}

static gboolean
header_reserved(const gchar *name)
{
	/* the transport's own: it refuses them too */
	static const gchar *const reserved[] = {"host",
						"content-type",
						"content-length",
						"transfer-encoding",
						"connection",
						"accept",
						"mcp-session-id",
						"mcp-protocol-version",
						NULL};

	for (guint i = 0; reserved[i] != NULL; i++) {
		if (g_ascii_strcasecmp(name, reserved[i]) == 0)
			return TRUE;
	}
	return FALSE;
}

/* An object of strings: env (@env) or headers. */
static gboolean
take_string_map(Parse *p,
		const gchar *key,
		JsonNode *node,
		gboolean env,
		GPtrArray *names,
		GPtrArray *values)
{
	JsonObject *object;
	g_autoptr(GList) members = NULL;

	if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
		return refuse(p, key, "must be an object of strings");
	object = json_node_get_object(node);
	members = json_object_get_members(object);
	for (GList *l = members; l != NULL; l = l->next) {
		const gchar *name = l->data;
		const gchar *value = string_value(json_object_get_member(object, name));

		if (value == NULL)
			return refuse(p, key, "must be an object of strings (see “%s”)", name);
		if (env && !env_name_ok(name))
			return refuse(p, key, "names “%s”, not a variable name", name);
		if (!env && !header_name_ok(name))
			return refuse(p, key, "names “%s”, not a header name", name);
		if (!env && header_reserved(name))
			return refuse(p, key, "cannot set %s: Confab sends it itself", name);
		if (!env && has_control(value))
			return refuse(p, key, "“%s” holds a control character", name);
		g_ptr_array_add(names, g_strdup(name));
		g_ptr_array_add(values, g_strdup(value));
	}
	return TRUE;
}

static gchar **
steal_strv(GPtrArray *array)
{
	g_ptr_array_add(array, NULL);
	return (gchar **)g_ptr_array_free(array, FALSE);
}

/* ---------- one server ---------- */

typedef struct {
	GPtrArray *args;
	GPtrArray *env_names;
	GPtrArray *env_values;
	GPtrArray *header_names;
	GPtrArray *header_values;
	GPtrArray *allow;
	gchar *command;
} ServerParts;

static void
server_parts_clear(ServerParts *parts)
{
	g_clear_pointer(&parts->args, g_ptr_array_unref);
	g_clear_pointer(&parts->env_names, g_ptr_array_unref);
	g_clear_pointer(&parts->env_values, g_ptr_array_unref);
	g_clear_pointer(&parts->header_names, g_ptr_array_unref);
	g_clear_pointer(&parts->header_values, g_ptr_array_unref);
	g_clear_pointer(&parts->allow, g_ptr_array_unref);
	g_free(parts->command);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ServerParts, server_parts_clear)

static gboolean
take_timeout(Parse *p, JsonNode *node, ConfabToolConfigServer *server)
{
	gdouble seconds;

	if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) ||
	    (json_node_get_value_type(node) != G_TYPE_INT64 &&
	     json_node_get_value_type(node) != G_TYPE_DOUBLE))
		return refuse(p, "timeout", "must be a number of seconds");
	seconds = json_node_get_value_type(node) == G_TYPE_INT64 ? (gdouble)json_node_get_int(node)
								 : json_node_get_double(node);
	if (!(seconds > 0) || seconds > CONFAB_TOOL_CONFIG_MAX_TIMEOUT)
		return refuse(p,
			      "timeout",
			      "must be more than 0 and at most %d seconds",
			      CONFAB_TOOL_CONFIG_MAX_TIMEOUT);
	server->timeout_ms = (guint)MAX(llround(seconds * 1000), 1);
	return TRUE;
}

#define APPROVAL_SHAPE                                                                               \
	"must be “never”, “always” or {\"always\":{\"tool_names\":[…]},\"never\":{\"tool_" \
	"names\":[…]}}"

/* One list of require_approval's object form: {"tool_names":[…]}. */
static gboolean
take_approval_list(Parse *p, JsonNode *node, gchar ***out)
{
	g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
	JsonObject *object;
	g_autoptr(GList) members = NULL;

	if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
		return refuse(p, "require_approval", APPROVAL_SHAPE);
	object = json_node_get_object(node);
	members = json_object_get_members(object);
	for (GList *l = members; l != NULL; l = l->next) {
		if (strcmp(l->data, "tool_names") != 0)
			return refuse(p,
				      "require_approval",
				      "has “%s”; a list holds only “tool_names”",
				      (const gchar *)l->data);
	}
	if (!json_object_has_member(object, "tool_names"))
		return refuse(p, "require_approval", "has a list without “tool_names”");
	if (!take_string_array(p,
			       "require_approval",
			       json_object_get_member(object, "tool_names"),
			       MAX_TOOL_NAME,
			       names))
		return FALSE;
	g_strfreev(*out);
	*out = steal_strv(g_steal_pointer(&names));
	return TRUE;
}

static gboolean
take_require_approval(Parse *p, JsonNode *node, ConfabToolConfigServer *server)
{
	const gchar *mode = string_value(node);
	JsonObject *object;
	g_autoptr(GList) members = NULL;

	g_clear_pointer(&server->approval_always, g_strfreev);
	g_clear_pointer(&server->approval_never, g_strfreev);
	if (mode != NULL) {
		if (strcmp(mode, "never") != 0 && strcmp(mode, "always") != 0)
			return refuse(p, "require_approval", APPROVAL_SHAPE);
		server->approval_default = strcmp(mode, "always") == 0;
		return TRUE;
	}
	if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
		return refuse(p, "require_approval", APPROVAL_SHAPE);
	object = json_node_get_object(node);
	members = json_object_get_members(object);
	if (members == NULL)
		return refuse(p, "require_approval", APPROVAL_SHAPE);
	for (GList *l = members; l != NULL; l = l->next) {
		const gchar *key = l->data;
		JsonNode *list = json_object_get_member(object, key);
		if (strcmp(key, "always") == 0) {
			if (!take_approval_list(p, list, &server->approval_always))
				return FALSE;
		} else if (strcmp(key, "never") == 0) {
			if (!take_approval_list(p, list, &server->approval_never))
				return FALSE;
		} else {
			return refuse(p,
				      "require_approval",
				      "has “%s”; it holds only “always” and “never”",
				      key);
		}
	}
	for (guint i = 0; server->approval_always != NULL && server->approval_always[i] != NULL;
	     i++) {
		if (server->approval_never != NULL &&
		    g_strv_contains((const gchar *const *)server->approval_never,
				    server->approval_always[i]))
			return refuse(p,
				      "require_approval",
				      "names “%s” in both “always” and “never”",
				      server->approval_always[i]);
	}
	/* the lists are the exceptions: only "always" named means the rest
	 * need none; otherwise a tool named nowhere needs approval */
	server->approval_default = server->approval_never != NULL;
	return TRUE;
}

static gboolean
take_type(Parse *p, JsonNode *node, ConfabToolConfigServer *server)
{
	const gchar *type = string_value(node);

	if (g_strcmp0(type, "sse") == 0)
		return refuse(p,
			      "type",
			      "is “sse”, the HTTP+SSE transport MCP deprecated; Confab speaks "
			      "streamable HTTP (“http”)");
	if (g_strcmp0(type, "stdio") != 0 && g_strcmp0(type, "http") != 0 &&
	    g_strcmp0(type, "streamable-http") != 0)
		return refuse(p, "type", "must be “stdio”, “http” or “streamable-http”");
	server->type = g_strdup(type);
	return TRUE;
}

static gboolean
take_url(Parse *p, JsonNode *node, ConfabToolConfigServer *server)
{
	g_autoptr(GUri) uri = NULL;
	const gchar *scheme;

	if (!take_string(p, "url", node, FALSE, &server->url))
		return FALSE;
	uri = g_uri_parse(server->url, G_URI_FLAGS_ENCODED, NULL);
	if (uri == NULL)
		return refuse(p, "url", "is not a URL");
	scheme = g_uri_get_scheme(uri);
	if ((g_ascii_strcasecmp(scheme, "http") != 0 && g_ascii_strcasecmp(scheme, "https") != 0) ||
	    g_uri_get_host(uri) == NULL || *g_uri_get_host(uri) == '\0')
		return refuse(p, "url", "must be http:// or https:// with a host");
	return TRUE;
}

/* `oauth`: {"grant"?, "client_id"?, "client_secret"?,
 * "client_private_key"? (PEM), "scope"?}. */
static gboolean
take_oauth(Parse *p, JsonNode *node, ConfabToolConfigServer *server)
{
	JsonObject *object;
	g_autoptr(GList) keys = NULL;
	const gchar *grant;

	if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
		return refuse(p, "oauth", "must be an object");
	object = json_node_get_object(node);
	server->oauth_grant = 0;
	keys = json_object_get_members(object);
	for (GList *l = keys; l != NULL; l = l->next) {
		const gchar *key = l->data;
		JsonNode *value = json_object_get_member(object, key);
		gboolean ok;
		if (strcmp(key, "grant") == 0) {
			grant = string_value(value);
			if (g_strcmp0(grant, "authorization_code") != 0 &&
			    g_strcmp0(grant, "client_credentials") != 0)
				return refuse(p,
					      "oauth",
					      "“grant” must be “authorization_code” or "
					      "“client_credentials”");
			server->oauth_grant = g_strcmp0(grant, "client_credentials") == 0 ? 1 : 0;
			continue;
		}
		if (strcmp(key, "client_id") == 0)
			ok = take_string(p,
					 "oauth.client_id",
					 value,
					 FALSE,
					 &server->oauth_client_id);
		else if (strcmp(key, "client_secret") == 0)
			ok = take_string(p,
					 "oauth.client_secret",
					 value,
					 FALSE,
					 &server->oauth_client_secret);
		else if (strcmp(key, "client_private_key") == 0)
			ok = take_string(p,
					 "oauth.client_private_key",
					 value,
					 FALSE,
					 &server->oauth_private_key);
		else if (strcmp(key, "scope") == 0)
			ok = take_string(p, "oauth.scope", value, FALSE, &server->oauth_scope);
		else
			return refuse(p, "oauth", "“%s” is not a key Confab knows", key);
		if (!ok)
			return FALSE;
	}
	if (server->oauth_grant == 1 && server->oauth_client_id == NULL)
		return refuse(p, "oauth", "the client_credentials grant needs “client_id”");
	if ((server->oauth_client_secret != NULL || server->oauth_private_key != NULL) &&
	    server->oauth_client_id == NULL)
		return refuse(p, "oauth", "a client secret or key needs “client_id”");
	return TRUE;
}

/* One member of a server object. */
static gboolean
take_member(Parse *p,
	    const gchar *key,
	    JsonNode *node,
	    ConfabToolConfigServer *server,
	    ServerParts *parts)
{
	if (strcmp(key, "command") == 0)
		return take_string(p, key, node, FALSE, &parts->command);
	if (strcmp(key, "args") == 0) {
		server->has_args = TRUE;
		return take_string_array(p, key, node, 0, parts->args);
	}
	if (strcmp(key, "env") == 0)
		return take_string_map(p, key, node, TRUE, parts->env_names, parts->env_values);
	if (strcmp(key, "cwd") == 0)
		return take_string(p, key, node, TRUE, &server->cwd);
	if (strcmp(key, "url") == 0)
		return take_url(p, node, server);
	if (strcmp(key, "headers") == 0)
		return take_string_map(p,
				       key,
				       node,
				       FALSE,
				       parts->header_names,
				       parts->header_values);
	if (strcmp(key, "bearer_token_file") == 0)
		return take_string(p, key, node, TRUE, &server->bearer_token_file);
	if (strcmp(key, "oauth") == 0)
		return take_oauth(p, node, server);
	if (strcmp(key, "allow") == 0) {
		parts->allow = g_ptr_array_new_with_free_func(g_free);
		return take_string_array(p, key, node, MAX_TOOL_NAME, parts->allow);
	}
	if (strcmp(key, "timeout") == 0)
		return take_timeout(p, node, server);
	if (strcmp(key, "require_approval") == 0)
		return take_require_approval(p, node, server);
	if (strcmp(key, "type") == 0)
		return take_type(p, node, server);
	return refuse(p, key, "is not a key Confab knows");
}

/* stdio or HTTP, and only the keys of that kind. */
static gboolean
check_kind(Parse *p, JsonObject *object, ConfabToolConfigServer *server, ServerParts *parts)
{
	static const gchar *const stdio_keys[] = {"command", "args", "env", "cwd", NULL};
	static const gchar *const http_keys[] = {"url",
						 "headers",
						 "bearer_token_file",
						 "oauth",
						 NULL};
	const gchar *const *other;
	const gchar *type = server->type;

	if (parts->command != NULL && server->url != NULL)
		return refuse(p, NULL, "has both “command” (stdio) and “url” (HTTP)");
	if (parts->command == NULL && server->url == NULL)
		return refuse(p, NULL, "needs “command” (stdio) or “url” (HTTP)");
	server->kind = parts->command != NULL ? CONFAB_TOOL_CONFIG_KIND_STDIO
					      : CONFAB_TOOL_CONFIG_KIND_HTTP;
	if (type != NULL &&
	    (strcmp(type, "stdio") == 0) != (server->kind == CONFAB_TOOL_CONFIG_KIND_STDIO))
		return refuse(p,
			      "type",
			      "is “%s”, but the server has “%s”",
			      type,
			      parts->command != NULL ? "command" : "url");
	other = server->kind == CONFAB_TOOL_CONFIG_KIND_STDIO ? http_keys : stdio_keys;
	for (guint i = 0; other[i] != NULL; i++) {
		if (json_object_has_member(object, other[i]))
			return refuse(p,
				      other[i],
				      "is for %s servers; this one has “%s”",
				      server->kind == CONFAB_TOOL_CONFIG_KIND_STDIO ? "HTTP"
										    : "stdio",
				      parts->command != NULL ? "command" : "url");
	}
	if (server->oauth_grant >= 0 && server->bearer_token_file != NULL)
		return refuse(p, "oauth", "cannot be given with “bearer_token_file”");
	if (server->bearer_token_file != NULL && parts->header_names != NULL) {
		for (guint i = 0; i < parts->header_names->len; i++) {
			if (g_ascii_strcasecmp(parts->header_names->pdata[i], "authorization") == 0)
				return refuse(p,
					      "headers",
					      "cannot set Authorization with “bearer_token_file”");
		}
	}
	return TRUE;
}

static gchar *
fingerprint(JsonNode *node)
{
	g_autofree gchar *text = confab_json_to_string(node);
	return g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);
}

static void
server_assemble(ConfabToolConfigServer *server, ServerParts *parts)
{
	if (server->kind == CONFAB_TOOL_CONFIG_KIND_STDIO) {
		GPtrArray *argv = g_ptr_array_new();
		GPtrArray *env = g_ptr_array_new();

		g_ptr_array_add(argv, g_strdup(parts->command));
		for (guint i = 0; i < parts->args->len; i++)
			g_ptr_array_add(argv, g_strdup(parts->args->pdata[i]));
		for (guint i = 0; i < parts->env_names->len; i++)
			g_ptr_array_add(env,
					g_strconcat(parts->env_names->pdata[i],
						    "=",
						    parts->env_values->pdata[i],
						    NULL));
		server->argv = steal_strv(argv);
		server->env = steal_strv(env);
	} else {
		g_ptr_array_set_free_func(parts->header_names, NULL);
		g_ptr_array_set_free_func(parts->header_values, NULL);
		server->header_names = steal_strv(g_steal_pointer(&parts->header_names));
		server->header_values = steal_strv(g_steal_pointer(&parts->header_values));
	}
	if (parts->allow != NULL) {
		g_ptr_array_set_free_func(parts->allow, NULL);
		server->allow = steal_strv(g_steal_pointer(&parts->allow));
	}
}

static gboolean
name_ok(const gchar *name)
{
	gsize len = strlen(name);
	return len >= 1 && len <= CONFAB_TOOL_CONFIG_MAX_NAME &&
	       strspn(name, VALID_NAME_CHAR) == len;
}

static ConfabToolConfigServer *
server_parse(Parse *p, const gchar *name, JsonNode *node)
{
	g_autoptr(GList) members = NULL;
	g_auto(ServerParts) parts = {0};
	ConfabToolConfigServer *server;
	JsonObject *object;

	if (!name_ok(name)) {
		confab_error_set_printf(p->error,
					CONFAB_ERROR_INVALID_VALUE,
					PARAM,
					PARAM
					": the server name “%s” must be 1 to 32 of a-z, 0-9, _ "
					"and -",
					name);
		return NULL;
	}
	p->server = name;
	if (!JSON_NODE_HOLDS_OBJECT(node)) {
		refuse(p, NULL, "must be an object");
		return NULL;
	}
	object = json_node_get_object(node);
	server = g_new0(ConfabToolConfigServer, 1);
	server->oauth_grant = -1;
	server->name = g_strdup(name);
	server->timeout_ms = CONFAB_TOOL_CONFIG_DEFAULT_TIMEOUT * 1000;
	parts.args = g_ptr_array_new_with_free_func(g_free);
	parts.env_names = g_ptr_array_new_with_free_func(g_free);
	parts.env_values = g_ptr_array_new_with_free_func(g_free);
	parts.header_names = g_ptr_array_new_with_free_func(g_free);
	parts.header_values = g_ptr_array_new_with_free_func(g_free);
	members = json_object_get_members(object);
	for (GList *l = members; l != NULL; l = l->next) {
		if (!take_member(p,
				 l->data,
				 json_object_get_member(object, l->data),
				 server,
				 &parts)) {
			server_free(server);
			return NULL;
		}
	}
	if (!check_kind(p, object, server, &parts)) {
		server_free(server);
		return NULL;
	}
	server_assemble(server, &parts);
	server->fingerprint = fingerprint(node);
	p->server = NULL;
	return server;
}

/* ---------- the whole text ---------- */

static gboolean
is_blank(const gchar *json)
{
	if (json == NULL)
		return TRUE;
	for (const gchar *c = json; *c != '\0'; c++) {
		if (!g_ascii_isspace(*c))
			return FALSE;
	}
	return TRUE;
}

/* The text as JSON, within the limits. */
static JsonNode *
parse_text(Parse *p, const gchar *json)
{
	gsize len = strlen(json);
	g_autoptr(GError) local = NULL;
	JsonNode *root;
	const gchar *why;

	if (len > CONFAB_TOOL_CONFIG_MAX_BYTES) {
		refuse(p, NULL, "is larger than %d KiB", CONFAB_TOOL_CONFIG_MAX_BYTES / 1024);
		return NULL;
	}
	root = confab_json_parse(json, len, MAX_DEPTH, &local);
	if (root == NULL) {
		/* the checker speaks of a request body */
		why = strstr(local->message, "JSON: ");
		refuse(p, NULL, "is not valid JSON: %s", why != NULL ? why + 6 : local->message);
		return NULL;
	}
	if (!JSON_NODE_HOLDS_OBJECT(root)) {
		json_node_unref(root);
		refuse(p, NULL, "must be a JSON object");
		return NULL;
	}
	return root;
}

/* The mcpServers object of @root; NULL with @error set if it is wrong, NULL
 * without if there is none. */
static JsonObject *
servers_object(Parse *p, JsonObject *root, gboolean *ok)
{
	g_autoptr(GList) members = json_object_get_members(root);
	JsonNode *servers = NULL;

	*ok = FALSE;
	for (GList *l = members; l != NULL; l = l->next) {
		const gchar *key = l->data;
		JsonNode *node = json_object_get_member(root, key);

		if (strcmp(key, "mcpServers") == 0)
			servers = node;
		else if (strcmp(key, "$schema") != 0) {
			refuse(p, key, "is not a key Confab knows (expected “mcpServers”)");
			return NULL;
		} else if (string_value(node) == NULL) {
			refuse(p, key, "must be a string");
			return NULL;
		}
	}
	if (servers != NULL && !JSON_NODE_HOLDS_OBJECT(servers)) {
		refuse(p, "mcpServers", "must be an object");
		return NULL;
	}
	*ok = TRUE;
	return servers != NULL ? json_node_get_object(servers) : NULL;
}

/**
 * confab_tool_config_parse:
 * @json: (nullable): an agent's `mcp_servers`; %NULL or blank for none
 * @error: return location for a #GError
 *
 * Parses and checks an agent's tool servers (see #ConfabToolConfig for
 * what is taken). Refusals are %CONFAB_ERROR_INVALID_VALUE with the param
 * `mcp_servers`.
 *
 * Returns: (transfer full): the servers, in the order of the text
 */
ConfabToolConfig *
confab_tool_config_parse(const gchar *json, GError **error)
{
	g_autoptr(ConfabToolConfig) self = g_object_new(CONFAB_TYPE_TOOL_CONFIG, NULL);
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(GList) names = NULL;
	Parse p = {error, NULL};
	JsonObject *servers;
	gboolean ok;

	if (is_blank(json))
		return g_steal_pointer(&self);
	root = parse_text(&p, json);
	if (root == NULL)
		return NULL;
	servers = servers_object(&p, json_node_get_object(root), &ok);
	if (!ok)
		return NULL;
	if (servers == NULL)
		return g_steal_pointer(&self);
	if (json_object_get_size(servers) > CONFAB_TOOL_CONFIG_MAX_SERVERS) {
		refuse(&p,
		       "mcpServers",
		       "has more than %d servers",
		       CONFAB_TOOL_CONFIG_MAX_SERVERS);
		return NULL;
	}
	names = json_object_get_members(servers);
	for (GList *l = names; l != NULL; l = l->next) {
		ConfabToolConfigServer *server =
		    server_parse(&p, l->data, json_object_get_member(servers, l->data));
		if (server == NULL)
			return NULL;
		g_ptr_array_add(self->servers, server);
	}
	return g_steal_pointer(&self);
}

/**
 * confab_tool_config_get_n_servers:
 * @self: a #ConfabToolConfig
 *
 * Returns: how many tool servers there are
 */
guint
confab_tool_config_get_n_servers(ConfabToolConfig *self)
{
	g_return_val_if_fail(CONFAB_IS_TOOL_CONFIG(self), 0);
	return self->servers->len;
}

/**
 * confab_tool_config_get_server:
 * @self: a #ConfabToolConfig
 * @index: from 0 to confab_tool_config_get_n_servers() - 1
 *
 * Returns: (transfer none): the server at @index, in the text's order
 */
const ConfabToolConfigServer *
confab_tool_config_get_server(ConfabToolConfig *self, guint index)
{
	g_return_val_if_fail(CONFAB_IS_TOOL_CONFIG(self), NULL);
	g_return_val_if_fail(index < self->servers->len, NULL);
	return self->servers->pdata[index];
}

/**
 * confab_tool_config_lookup_server:
 * @self: a #ConfabToolConfig
 * @name: a server name
 *
 * Returns: (transfer none) (nullable): the server called @name
 */
const ConfabToolConfigServer *
confab_tool_config_lookup_server(ConfabToolConfig *self, const gchar *name)
{
	g_return_val_if_fail(CONFAB_IS_TOOL_CONFIG(self), NULL);
	g_return_val_if_fail(name != NULL, NULL);
	for (guint i = 0; i < self->servers->len; i++) {
		ConfabToolConfigServer *server = self->servers->pdata[i];
		if (strcmp(server->name, name) == 0)
			return server;
	}
	return NULL;
}

/* ---------- secrets ---------- */

static const gchar *const secret_sections[] = {"headers", "env", "oauth", NULL};
/* the members of `oauth` that are secrets; its others are shown */
static const gchar *const oauth_secrets[] = {"client_secret", "client_private_key", NULL};

/* Every value of @server's headers and env masked (the whole member when it
 * is not an object). */
static void
mask_server(JsonObject *server)
{
	for (guint s = 0; secret_sections[s] != NULL; s++) {
		JsonNode *section = json_object_get_member(server, secret_sections[s]);
		g_autoptr(GList) keys = NULL;

		if (section == NULL)
			continue;
		if (!JSON_NODE_HOLDS_OBJECT(section)) {
			json_object_set_string_member(server,
						      secret_sections[s],
						      CONFAB_TOOL_CONFIG_MASK);
			continue;
		}
		keys = json_object_get_members(json_node_get_object(section));
		for (GList *l = keys; l != NULL; l = l->next) {
			if (strcmp(secret_sections[s], "oauth") == 0 &&
			    !g_strv_contains(oauth_secrets, l->data))
				continue;
			json_object_set_string_member(json_node_get_object(section),
						      l->data,
						      CONFAB_TOOL_CONFIG_MASK);
		}
	}
}

/**
 * confab_tool_config_mask:
 * @json: (nullable): an agent's `mcp_servers`
 *
 * What GetAgent and ListAgents show of it: the same JSON, compact, its
 * keys in their order, with every `headers` value and every `env` value
 * replaced by `"********"`. Secrets are never returned: text that does not
 * parse as JSON gives %NULL, not the text.
 *
 * Returns: (transfer full) (nullable): the masked text; "" for blank @json
 */
gchar *
confab_tool_config_mask(const gchar *json)
{
	g_autoptr(JsonNode) root = NULL;
	JsonObject *servers;
	g_autoptr(GList) names = NULL;

	if (is_blank(json))
		return g_strdup("");
	root = confab_json_parse(json, strlen(json), MAX_DEPTH, NULL);
	if (root == NULL)
		return NULL;
	if (!JSON_NODE_HOLDS_OBJECT(root))
		return confab_json_to_string(root);
	servers = confab_json_get_object(json_node_get_object(root), "mcpServers");
	if (servers != NULL)
		names = json_object_get_members(servers);
	for (GList *l = names; l != NULL; l = l->next) {
		JsonObject *server = confab_json_get_object(servers, l->data);
		if (server != NULL)
			mask_server(server);
		else
			json_object_set_string_member(servers, l->data, CONFAB_TOOL_CONFIG_MASK);
	}
	return confab_json_to_string(root);
}

static gboolean
same_member(JsonObject *a, JsonObject *b, const gchar *key)
{
	JsonNode *na = json_object_get_member(a, key);
	JsonNode *nb = json_object_get_member(b, key);
	g_autofree gchar *ta = NULL;
	g_autofree gchar *tb = NULL;

	if (na == NULL || nb == NULL)
		return na == nb;
	ta = confab_json_to_string(na);
	tb = confab_json_to_string(nb);
	return strcmp(ta, tb) == 0;
}

/* Whether a secret of @section may go from @old to @new: only where it went
 * before, so that a masked config cannot send it elsewhere. */
static const gchar *
secret_destination_changed(JsonObject *old, JsonObject *new, const gchar *section)
{
	static const gchar *const stdio[] = {"command", "args", "cwd", NULL};
	static const gchar *const http[] = {"url", NULL};
	const gchar *const *keys = strcmp(section, "env") == 0 ? stdio : http;

	for (guint i = 0; keys[i] != NULL; i++) {
		if (!same_member(old, new, keys[i]))
			return keys[i];
	}
	return NULL;
}

/* The masked values of @new's @section from @old; FALSE with @error set if
 * one has nothing to come from. */
static gboolean
unmask_section(Parse *p, JsonObject *old, JsonObject *new, const gchar *section, guint *n)
{
	JsonObject *values = confab_json_get_object(new, section);
	JsonObject *old_values = old != NULL ? confab_json_get_object(old, section) : NULL;
	g_autoptr(GList) keys = NULL;

	if (values == NULL)
		return TRUE;
	keys = json_object_get_members(values);
	for (GList *l = keys; l != NULL; l = l->next) {
		const gchar *was = NULL;
		const gchar *moved;

		if (g_strcmp0(confab_json_get_string(values, l->data), CONFAB_TOOL_CONFIG_MASK) !=
		    0)
			continue;
		if (old_values != NULL)
			was = confab_json_get_string(old_values, l->data);
		if (was == NULL)
			return refuse(p,
				      section,
				      "“%s” is masked (" CONFAB_TOOL_CONFIG_MASK
				      ") but there is no stored value to keep; give the value",
				      (const gchar *)l->data);
		moved = secret_destination_changed(old, new, section);
		if (moved != NULL)
			return refuse(p,
				      section,
				      "“%s” is masked (" CONFAB_TOOL_CONFIG_MASK
				      ") but “%s” changed; give the value again",
				      (const gchar *)l->data,
				      moved);
		json_object_set_string_member(values, l->data, was);
		(*n)++;
	}
	return TRUE;
}

/**
 * confab_tool_config_merge_masked:
 * @old_json: (nullable): the stored `mcp_servers`
 * @new_json: (nullable): the one sent by an administrator
 * @merged: (out) (transfer full): what to store
 * @error: return location for a #GError
 *
 * An administrator who read an agent (secrets masked, see
 * confab_tool_config_mask()) and sends its config back does not wipe the
 * secrets: a `headers` or `env` value that is exactly `"********"` keeps
 * the stored value of that server and key. So that a masked secret cannot
 * be sent somewhere new, this holds only while the server's `url` (for
 * headers) or `command`, `args` and `cwd` (for env) are unchanged; a masked
 * value without a stored one to keep, or whose destination changed, is
 * refused. @new_json is checked as confab_tool_config_parse() does; when
 * nothing was masked, @merged is @new_json as sent, else it is compact JSON
 * with the keys in their order.
 *
 * Returns: %TRUE if @merged was set
 */
gboolean
confab_tool_config_merge_masked(const gchar *old_json,
				const gchar *new_json,
				gchar **merged,
				GError **error)
{
	g_autoptr(ConfabToolConfig) checked = NULL;
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(JsonNode) old_root = NULL;
	g_autoptr(GList) names = NULL;
	JsonObject *servers;
	JsonObject *old_servers = NULL;
	Parse p = {error, NULL};
	guint n = 0;

	g_return_val_if_fail(merged != NULL, FALSE);
	checked = confab_tool_config_parse(new_json, error);
	if (checked == NULL)
		return FALSE;
	if (confab_tool_config_get_n_servers(checked) == 0) {
		*merged = g_strdup(new_json != NULL ? new_json : "");
		return TRUE;
	}
	root = confab_json_parse(new_json, strlen(new_json), MAX_DEPTH, NULL);
	servers = confab_json_get_object(json_node_get_object(root), "mcpServers");
	if (!is_blank(old_json))
		old_root = confab_json_parse(old_json, strlen(old_json), MAX_DEPTH, NULL);
	if (old_root != NULL && JSON_NODE_HOLDS_OBJECT(old_root))
		old_servers = confab_json_get_object(json_node_get_object(old_root), "mcpServers");
	names = json_object_get_members(servers);
	for (GList *l = names; l != NULL; l = l->next) {
		JsonObject *server = confab_json_get_object(servers, l->data);
		JsonObject *old = old_servers != NULL ? confab_json_get_object(old_servers, l->data)
						      : NULL;
		p.server = l->data;
		for (guint s = 0; secret_sections[s] != NULL; s++) {
			if (!unmask_section(&p, old, server, secret_sections[s], &n))
				return FALSE;
		}
	}
	*merged = n > 0 ? confab_json_to_string(root) : g_strdup(new_json);
	return TRUE;
}

/* ---------- a server ---------- */

/**
 * confab_tool_config_server_get_name:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: its name, `[a-z0-9_-]{1,32}`
 */
const gchar *
confab_tool_config_server_get_name(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, NULL);
	return server->name;
}

/**
 * confab_tool_config_server_get_kind:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: stdio or HTTP
 */
ConfabToolConfigKind
confab_tool_config_server_get_kind(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, CONFAB_TOOL_CONFIG_KIND_STDIO);
	return server->kind;
}

/**
 * confab_tool_config_server_get_argv:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: (transfer none) (nullable): `command` then `args`; %NULL for an
 *   HTTP server
 */
const gchar *const *
confab_tool_config_server_get_argv(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, NULL);
	return (const gchar *const *)server->argv;
}

/**
 * confab_tool_config_server_get_env:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: (transfer none) (nullable): `env` as `KEY=VALUE` entries (they
 *   are secrets); %NULL for an HTTP server
 */
const gchar *const *
confab_tool_config_server_get_env(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, NULL);
	return (const gchar *const *)server->env;
}

/**
 * confab_tool_config_server_get_cwd:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: (nullable): `cwd`, an absolute path
 */
const gchar *
confab_tool_config_server_get_cwd(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, NULL);
	return server->cwd;
}

/**
 * confab_tool_config_server_get_url:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: (nullable): `url`; %NULL for a stdio server
 */
const gchar *
confab_tool_config_server_get_url(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, NULL);
	return server->url;
}

/**
 * confab_tool_config_server_get_header_names:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: (transfer none) (nullable): the names of `headers`, in order;
 *   %NULL for a stdio server
 */
const gchar *const *
confab_tool_config_server_get_header_names(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, NULL);
	return (const gchar *const *)server->header_names;
}

/**
 * confab_tool_config_server_get_header_values:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: (transfer none) (nullable): the values of `headers` (secrets),
 *   in the order of confab_tool_config_server_get_header_names()
 */
const gchar *const *
confab_tool_config_server_get_header_values(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, NULL);
	return (const gchar *const *)server->header_values;
}

/**
 * confab_tool_config_server_get_bearer_token_file:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: (nullable): `bearer_token_file`, an absolute path
 */
const gchar *
confab_tool_config_server_get_bearer_token_file(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, NULL);
	return server->bearer_token_file;
}

/**
 * confab_tool_config_server_get_allow:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: (transfer none) (nullable): `allow`; %NULL when every tool is
 *   allowed (an empty list allows none)
 */
const gchar *const *
confab_tool_config_server_get_allow(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, NULL);
	return (const gchar *const *)server->allow;
}

/**
 * confab_tool_config_server_allows:
 * @server: a #ConfabToolConfigServer
 * @tool: a tool name on that server
 *
 * Returns: whether @tool may be offered to the model
 */
gboolean
confab_tool_config_server_allows(const ConfabToolConfigServer *server, const gchar *tool)
{
	g_return_val_if_fail(server != NULL, FALSE);
	g_return_val_if_fail(tool != NULL, FALSE);
	return server->allow == NULL || g_strv_contains((const gchar *const *)server->allow, tool);
}

/**
 * confab_tool_config_server_requires_approval:
 * @server: a server
 * @tool: a tool's own name on @server
 *
 * Returns: whether a person must approve each call of @tool first
 *   (`require_approval`)
 */
gboolean
confab_tool_config_server_requires_approval(const ConfabToolConfigServer *server, const gchar *tool)
{
	g_return_val_if_fail(server != NULL, TRUE);
	g_return_val_if_fail(tool != NULL, TRUE);
	if (server->approval_always != NULL &&
	    g_strv_contains((const gchar *const *)server->approval_always, tool))
		return TRUE;
	if (server->approval_never != NULL &&
	    g_strv_contains((const gchar *const *)server->approval_never, tool))
		return FALSE;
	return server->approval_default;
}

/**
 * confab_tool_config_server_get_timeout_ms:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: how long one call may take, in milliseconds
 */
guint
confab_tool_config_server_get_timeout_ms(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, 0);
	return server->timeout_ms;
}

/**
 * confab_tool_config_server_get_fingerprint:
 * @server: a #ConfabToolConfigServer
 *
 * Returns: a SHA-256 (hex) of the server's configuration: two servers of
 *   the same name with the same fingerprint are the same server
 */
const gchar *
confab_tool_config_server_get_fingerprint(const ConfabToolConfigServer *server)
{
	g_return_val_if_fail(server != NULL, NULL);
	return server->fingerprint;
}

static void
confab_tool_config_finalize(GObject *object)
{
	ConfabToolConfig *self = CONFAB_TOOL_CONFIG(object);

	g_ptr_array_unref(self->servers);
	G_OBJECT_CLASS(confab_tool_config_parent_class)->finalize(object);
}

static void
confab_tool_config_class_init(ConfabToolConfigClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_tool_config_finalize;
}

static void
confab_tool_config_init(ConfabToolConfig *self)
{
	self->servers = g_ptr_array_new_with_free_func((GDestroyNotify)server_free);
}

/**
 * confab_tool_config_server_get_oauth:
 * @server: a #ConfabToolConfigServer
 * @client_id: (out) (optional) (nullable): `oauth.client_id`
 * @client_secret: (out) (optional) (nullable): `oauth.client_secret`
 * @private_key: (out) (optional) (nullable): `oauth.client_private_key`
 * @scope: (out) (optional) (nullable): `oauth.scope`
 *
 * Returns: the `oauth` entry's grant: 0 for authorization_code (also the
 *   default), 1 for client_credentials; -1 when the server has no `oauth`
 */
gint
confab_tool_config_server_get_oauth(const ConfabToolConfigServer *server,
				    const gchar **client_id,
				    const gchar **client_secret,
				    const gchar **private_key,
				    const gchar **scope)
{
	g_return_val_if_fail(server != NULL, -1);
	if (client_id != NULL)
		*client_id = server->oauth_client_id;
	if (client_secret != NULL)
		*client_secret = server->oauth_client_secret;
	if (private_key != NULL)
		*private_key = server->oauth_private_key;
	if (scope != NULL)
		*scope = server->oauth_scope;
	return server->oauth_grant;
}
