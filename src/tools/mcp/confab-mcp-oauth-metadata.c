/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMcpOAuth"

#include "config.h"

#include <gio/gio.h>
#include <string.h>

#include "tools/mcp/confab-mcp-oauth-metadata.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * The parsers of what an OAuth 2.1 authorization server and an MCP server
 * (as a protected resource) say, and the URLs discovery tries. Pure
 * functions: any input gives a value or an error, never a critical (they
 * are fuzzed: tests/fuzz/fuzz-mcp-oauth.c).
 */

#define MAX_DEPTH 16

static void
wipe_free(gchar *secret)
{
	if (secret != NULL) {
		memset(secret, 0, strlen(secret));
		g_free(secret);
	}
}

void
confab_mcp_oauth_metadata_challenge_free(ConfabMcpOAuthChallenge *challenge)
{
	if (challenge == NULL)
		return;
	g_free(challenge->resource_metadata);
	g_free(challenge->scope);
	g_free(challenge->error);
	g_free(challenge);
}

void
confab_mcp_oauth_metadata_resource_free(ConfabMcpOAuthResource *resource)
{
	if (resource == NULL)
		return;
	g_free(resource->resource);
	g_free(resource->authorization_server);
	g_strfreev(resource->scopes_supported);
	g_free(resource);
}

void
confab_mcp_oauth_metadata_server_free(ConfabMcpOAuthServer *server)
{
	if (server == NULL)
		return;
	g_free(server->issuer);
	g_free(server->authorization_endpoint);
	g_free(server->token_endpoint);
	g_free(server->registration_endpoint);
	g_strfreev(server->scopes_supported);
	g_strfreev(server->token_endpoint_auth_methods);
	g_strfreev(server->code_challenge_methods);
	g_free(server);
}

void
confab_mcp_oauth_metadata_tokens_free(ConfabMcpOAuthTokens *tokens)
{
	if (tokens == NULL)
		return;
	wipe_free(tokens->access_token);
	wipe_free(tokens->refresh_token);
	g_free(tokens->scope);
	g_free(tokens);
}

void
confab_mcp_oauth_metadata_registration_free(ConfabMcpOAuthRegistration *registration)
{
	if (registration == NULL)
		return;
	g_free(registration->client_id);
	wipe_free(registration->client_secret);
	g_free(registration->token_endpoint_auth_method);
	g_free(registration);
}

/* ---------- WWW-Authenticate ---------- */

/* Reads a quoted-string or a token at *@p into a new string. */
static gchar *
read_param_value(const gchar **p)
{
	GString *out = g_string_new(NULL);
	const gchar *s = *p;

	if (*s == '"') {
		s++;
		while (*s != '\0' && *s != '"') {
			if (*s == '\\' && s[1] != '\0')
				s++;
			g_string_append_c(out, *s++);
		}
		if (*s == '"')
			s++;
	} else {
		while (*s != '\0' && *s != ',' && !g_ascii_isspace(*s))
			g_string_append_c(out, *s++);
	}
	*p = s;
	return g_string_free(out, FALSE);
}

static void
challenge_take(ConfabMcpOAuthChallenge *challenge, const gchar *name, gchar *value)
{
	gchar **slot = NULL;

	if (g_ascii_strcasecmp(name, "resource_metadata") == 0)
		slot = &challenge->resource_metadata;
	else if (g_ascii_strcasecmp(name, "scope") == 0)
		slot = &challenge->scope;
	else if (g_ascii_strcasecmp(name, "error") == 0)
		slot = &challenge->error;
	if (slot == NULL || *slot != NULL || *value == '\0' || !g_utf8_validate(value, -1, NULL)) {
		g_free(value);
		return;
	}
	*slot = value;
}

/**
 * confab_mcp_oauth_metadata_parse_challenge:
 * @header: (nullable): a `WWW-Authenticate` value
 *
 * Returns: (transfer full): the Bearer challenge's parameters (all %NULL
 *   when there is no Bearer challenge)
 */
ConfabMcpOAuthChallenge *
confab_mcp_oauth_metadata_parse_challenge(const gchar *header)
{
	ConfabMcpOAuthChallenge *challenge = g_new0(ConfabMcpOAuthChallenge, 1);
	const gchar *p;

	if (header == NULL)
		return challenge;
	p = header;
	while (g_ascii_isspace(*p))
		p++;
	if (g_ascii_strncasecmp(p, "Bearer", 6) != 0 || (p[6] != '\0' && !g_ascii_isspace(p[6])))
		return challenge;
	p += 6;
	while (*p != '\0') {
		const gchar *name;
		gsize name_len;
		g_autofree gchar *key = NULL;
		while (g_ascii_isspace(*p) || *p == ',')
			p++;
		name = p;
		while (*p != '\0' && *p != '=' && *p != ',' && !g_ascii_isspace(*p))
			p++;
		name_len = p - name;
		while (g_ascii_isspace(*p))
			p++;
		if (*p != '=') {
			/* another scheme, or junk: Bearer's parameters end */
			break;
		}
		p++;
		while (g_ascii_isspace(*p))
			p++;
		key = g_strndup(name, name_len);
		challenge_take(challenge, key, read_param_value(&p));
	}
	return challenge;
}

/* ---------- JSON documents ---------- */

static JsonObject *
parse_object(const gchar *data, gsize len, JsonNode **root, const gchar *what, GError **error)
{
	*root = data != NULL ? confab_json_parse(data, len, MAX_DEPTH, NULL) : NULL;
	if (*root == NULL || !JSON_NODE_HOLDS_OBJECT(*root)) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_UPSTREAM,
			    "the %s is not a JSON object",
			    what);
		g_clear_pointer(root, json_node_unref);
		return NULL;
	}
	return json_node_get_object(*root);
}

/* A string member, or NULL for any other type. */
static const gchar *
get_string(JsonObject *object, const gchar *name)
{
	JsonNode *node = json_object_get_member(object, name);

	if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) ||
	    json_node_get_value_type(node) != G_TYPE_STRING)
		return NULL;
	return json_node_get_string(node);
}

/* A non-empty string member, or an error naming it. */
static const gchar *
require_string(JsonObject *object, const gchar *name, const gchar *what, GError **error)
{
	const gchar *value = get_string(object, name);

	if (value == NULL || *value == '\0') {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_UPSTREAM,
			    "the %s has no “%s”",
			    what,
			    name);
		return NULL;
	}
	return value;
}

/* The strings of an array member (others skipped), or NULL. */
static gchar **
get_strv(JsonObject *object, const gchar *name)
{
	JsonNode *node = json_object_get_member(object, name);
	GPtrArray *out;
	JsonArray *array;

	if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
		return NULL;
	array = json_node_get_array(node);
	out = g_ptr_array_new();
	for (guint i = 0; i < json_array_get_length(array); i++) {
		JsonNode *element = json_array_get_element(array, i);
		if (JSON_NODE_HOLDS_VALUE(element) &&
		    json_node_get_value_type(element) == G_TYPE_STRING)
			g_ptr_array_add(out, g_strdup(json_node_get_string(element)));
	}
	g_ptr_array_add(out, NULL);
	return (gchar **)g_ptr_array_free(out, FALSE);
}

/**
 * confab_mcp_oauth_metadata_parse_resource:
 *
 * Parses RFC 9728 protected-resource metadata.
 *
 * Returns: (transfer full): the metadata, or %NULL with @error set
 */
ConfabMcpOAuthResource *
confab_mcp_oauth_metadata_parse_resource(const gchar *data, gsize len, GError **error)
{
	g_autoptr(JsonNode) root = NULL;
	ConfabMcpOAuthResource *resource;
	JsonObject *object = parse_object(data, len, &root, "protected-resource metadata", error);
	const gchar *name;
	g_auto(GStrv) servers = NULL;

	if (object == NULL)
		return NULL;
	name = require_string(object, "resource", "protected-resource metadata", error);
	if (name == NULL)
		return NULL;
	servers = get_strv(object, "authorization_servers");
	if (servers == NULL || servers[0] == NULL || *servers[0] == '\0') {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_UPSTREAM,
			    "the protected-resource metadata names no authorization server");
		return NULL;
	}
	resource = g_new0(ConfabMcpOAuthResource, 1);
	resource->resource = g_strdup(name);
	resource->authorization_server = g_strdup(servers[0]);
	resource->scopes_supported = get_strv(object, "scopes_supported");
	return resource;
}

/**
 * confab_mcp_oauth_metadata_parse_server:
 *
 * Parses RFC 8414 (or OpenID) authorization-server metadata.
 *
 * Returns: (transfer full): the metadata, or %NULL with @error set
 */
ConfabMcpOAuthServer *
confab_mcp_oauth_metadata_parse_server(const gchar *data, gsize len, GError **error)
{
	static const gchar what[] = "authorization-server metadata";
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(ConfabMcpOAuthServer) server = g_new0(ConfabMcpOAuthServer, 1);
	JsonObject *object = parse_object(data, len, &root, what, error);
	const gchar *issuer, *token;
	JsonNode *cimd;

	if (object == NULL)
		return NULL;
	issuer = require_string(object, "issuer", what, error);
	token = issuer != NULL ? require_string(object, "token_endpoint", what, error) : NULL;
	if (token == NULL)
		return NULL;
	server->issuer = g_strdup(issuer);
	server->token_endpoint = g_strdup(token);
	server->authorization_endpoint = g_strdup(get_string(object, "authorization_endpoint"));
	server->registration_endpoint = g_strdup(get_string(object, "registration_endpoint"));
	server->scopes_supported = get_strv(object, "scopes_supported");
	server->token_endpoint_auth_methods =
	    get_strv(object, "token_endpoint_auth_methods_supported");
	server->code_challenge_methods = get_strv(object, "code_challenge_methods_supported");
	cimd = json_object_get_member(object, "client_id_metadata_document_supported");
	server->client_id_metadata_document_supported =
	    cimd != NULL && JSON_NODE_HOLDS_VALUE(cimd) &&
	    json_node_get_value_type(cimd) == G_TYPE_BOOLEAN && json_node_get_boolean(cimd);
	return g_steal_pointer(&server);
}

/**
 * confab_mcp_oauth_metadata_parse_tokens:
 *
 * Parses a token endpoint's success answer: a Bearer `access_token`, with
 * `refresh_token`, `expires_in` and `scope` where given.
 *
 * Returns: (transfer full): the tokens, or %NULL with @error set
 */
ConfabMcpOAuthTokens *
confab_mcp_oauth_metadata_parse_tokens(const gchar *data, gsize len, GError **error)
{
	static const gchar what[] = "token response";
	g_autoptr(JsonNode) root = NULL;
	JsonObject *object = parse_object(data, len, &root, what, error);
	ConfabMcpOAuthTokens *tokens;
	const gchar *access, *type;
	JsonNode *expires;

	if (object == NULL)
		return NULL;
	access = require_string(object, "access_token", what, error);
	if (access == NULL)
		return NULL;
	type = get_string(object, "token_type");
	if (type != NULL && g_ascii_strcasecmp(type, "Bearer") != 0) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_UPSTREAM,
			    "the token response gives a token of type “%s”, not Bearer",
			    type);
		return NULL;
	}
	tokens = g_new0(ConfabMcpOAuthTokens, 1);
	tokens->access_token = g_strdup(access);
	tokens->refresh_token = g_strdup(get_string(object, "refresh_token"));
	tokens->scope = g_strdup(get_string(object, "scope"));
	tokens->expires_in = -1;
	expires = json_object_get_member(object, "expires_in");
	if (expires != NULL && JSON_NODE_HOLDS_VALUE(expires) &&
	    (json_node_get_value_type(expires) == G_TYPE_INT64 ||
	     json_node_get_value_type(expires) == G_TYPE_DOUBLE)) {
		gdouble value = json_node_get_value_type(expires) == G_TYPE_INT64
				    ? (gdouble)json_node_get_int(expires)
				    : json_node_get_double(expires);
		if (value >= 0 && value < 10.0 * 365 * 86400)
			tokens->expires_in = (gint64)value;
	}
	return tokens;
}

/**
 * confab_mcp_oauth_metadata_parse_registration:
 *
 * Parses a registration endpoint's answer (RFC 7591).
 *
 * Returns: (transfer full): the client, or %NULL with @error set
 */
ConfabMcpOAuthRegistration *
confab_mcp_oauth_metadata_parse_registration(const gchar *data, gsize len, GError **error)
{
	static const gchar what[] = "registration response";
	g_autoptr(JsonNode) root = NULL;
	JsonObject *object = parse_object(data, len, &root, what, error);
	ConfabMcpOAuthRegistration *registration;
	const gchar *client_id;

	if (object == NULL)
		return NULL;
	client_id = require_string(object, "client_id", what, error);
	if (client_id == NULL)
		return NULL;
	registration = g_new0(ConfabMcpOAuthRegistration, 1);
	registration->client_id = g_strdup(client_id);
	registration->client_secret = g_strdup(get_string(object, "client_secret"));
	registration->token_endpoint_auth_method =
	    g_strdup(get_string(object, "token_endpoint_auth_method"));
	return registration;
}

/**
 * confab_mcp_oauth_metadata_parse_error:
 *
 * Returns: (transfer full) (nullable): an OAuth error body's
 *   "error: error_description", printable and short, or %NULL
 */
gchar *
confab_mcp_oauth_metadata_parse_error(const gchar *data, gsize len)
{
	g_autoptr(JsonNode) root = NULL;
	g_autofree gchar *text = NULL;
	JsonObject *object = parse_object(data, len, &root, "error", NULL);
	const gchar *code, *description;
	gchar *p;

	if (object == NULL)
		return NULL;
	code = get_string(object, "error");
	if (code == NULL)
		return NULL;
	description = get_string(object, "error_description");
	text = description != NULL ? g_strdup_printf("%s: %s", code, description) : g_strdup(code);
	if (!g_utf8_validate(text, -1, NULL))
		return NULL;
	for (p = text; *p != '\0'; p++) {
		if (g_ascii_iscntrl(*p))
			*p = ' ';
	}
	if (g_utf8_strlen(text, -1) > 200)
		*g_utf8_offset_to_pointer(text, 200) = '\0';
	return g_steal_pointer(&text);
}

/* ---------- URLs ---------- */

static gboolean
host_is_loopback(const gchar *host)
{
	g_autoptr(GInetAddress) address = NULL;

	if (g_ascii_strcasecmp(host, "localhost") == 0)
		return TRUE;
	address = g_inet_address_new_from_string(host);
	return address != NULL && g_inet_address_get_is_loopback(address);
}

/**
 * confab_mcp_oauth_metadata_url_allowed:
 *
 * Whether OAuth may use @url: https, or http to a loopback host.
 */
gboolean
confab_mcp_oauth_metadata_url_allowed(const gchar *url, GError **error)
{
	g_autoptr(GUri) uri = url != NULL ? g_uri_parse(url, G_URI_FLAGS_ENCODED, NULL) : NULL;
	const gchar *scheme, *host;

	if (uri == NULL || g_uri_get_host(uri) == NULL || *g_uri_get_host(uri) == '\0') {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_UPSTREAM,
			    "“%s” is not an absolute URL",
			    url != NULL ? url : "");
		return FALSE;
	}
	scheme = g_uri_get_scheme(uri);
	host = g_uri_get_host(uri);
	if (g_ascii_strcasecmp(scheme, "https") == 0 ||
	    (g_ascii_strcasecmp(scheme, "http") == 0 && host_is_loopback(host)))
		return TRUE;
	g_set_error(error,
		    CONFAB_ERROR,
		    CONFAB_ERROR_UPSTREAM,
		    "%s is not https (http is only for loopback hosts)",
		    url);
	return FALSE;
}

/* @url without a trailing slash, fragment or query, scheme and host in
 * lower case: what RFC 8707 and RFC 9728 compare. */
static gchar *
canonical(const gchar *url)
{
	g_autoptr(GUri) uri = url != NULL ? g_uri_parse(url, G_URI_FLAGS_ENCODED, NULL) : NULL;
	g_autofree gchar *scheme = NULL;
	g_autofree gchar *host = NULL;
	g_autofree gchar *path = NULL;
	gsize len;

	if (uri == NULL || g_uri_get_host(uri) == NULL)
		return NULL;
	scheme = g_ascii_strdown(g_uri_get_scheme(uri), -1);
	host = g_ascii_strdown(g_uri_get_host(uri), -1);
	path = g_strdup(g_uri_get_path(uri));
	len = strlen(path);
	while (len > 0 && path[len - 1] == '/')
		path[--len] = '\0';
	return g_uri_join(G_URI_FLAGS_ENCODED,
			  scheme,
			  NULL,
			  host,
			  g_uri_get_port(uri),
			  path,
			  NULL,
			  NULL);
}

/**
 * confab_mcp_oauth_metadata_same_resource:
 *
 * Whether two resource (or issuer) URLs name the same thing, up to case of
 * scheme and host and a trailing slash.
 */
gboolean
confab_mcp_oauth_metadata_same_resource(const gchar *a, const gchar *b)
{
	g_autofree gchar *ca = canonical(a);
	g_autofree gchar *cb = canonical(b);

	return ca != NULL && cb != NULL && strcmp(ca, cb) == 0;
}

/**
 * confab_mcp_oauth_metadata_resource_covers:
 * @resource: a protected-resource metadata's `resource`
 * @server_url: the MCP server's URL
 *
 * Whether @resource names @server_url: the same URL, or the same origin
 * with a path that is a whole-segment prefix of its path (as a resource
 * at the root covers /mcp).
 */
gboolean
confab_mcp_oauth_metadata_resource_covers(const gchar *resource, const gchar *server_url)
{
	g_autofree gchar *cr = canonical(resource);
	g_autofree gchar *cs = canonical(server_url);
	gsize len;

	if (cr == NULL || cs == NULL)
		return FALSE;
	len = strlen(cr);
	return strcmp(cr, cs) == 0 || (g_str_has_prefix(cs, cr) && cs[len] == '/' &&
				       confab_mcp_oauth_metadata_same_origin(resource, server_url));
}

/**
 * confab_mcp_oauth_metadata_origin:
 *
 * Returns: (transfer full) (nullable): scheme://host[:port] of @url
 */
gchar *
confab_mcp_oauth_metadata_origin(const gchar *url)
{
	g_autoptr(GUri) uri = url != NULL ? g_uri_parse(url, G_URI_FLAGS_ENCODED, NULL) : NULL;
	g_autofree gchar *scheme = NULL;
	g_autofree gchar *host = NULL;

	if (uri == NULL || g_uri_get_host(uri) == NULL)
		return NULL;
	scheme = g_ascii_strdown(g_uri_get_scheme(uri), -1);
	host = g_ascii_strdown(g_uri_get_host(uri), -1);
	return g_uri_join(G_URI_FLAGS_ENCODED,
			  scheme,
			  NULL,
			  host,
			  g_uri_get_port(uri),
			  "",
			  NULL,
			  NULL);
}

/**
 * confab_mcp_oauth_metadata_same_origin:
 *
 * Whether @a and @b have the same scheme, host and port: where a token for
 * one may go.
 */
gboolean
confab_mcp_oauth_metadata_same_origin(const gchar *a, const gchar *b)
{
	g_autofree gchar *oa = confab_mcp_oauth_metadata_origin(a);
	g_autofree gchar *ob = confab_mcp_oauth_metadata_origin(b);

	return oa != NULL && ob != NULL && strcmp(oa, ob) == 0;
}

/* The path of @url without its trailing slashes ("" for the root). */
static gchar *
path_of(const gchar *url)
{
	g_autoptr(GUri) uri = g_uri_parse(url, G_URI_FLAGS_ENCODED, NULL);
	gchar *path;
	gsize len;

	if (uri == NULL)
		return g_strdup("");
	path = g_strdup(g_uri_get_path(uri));
	len = strlen(path);
	while (len > 0 && path[len - 1] == '/')
		path[--len] = '\0';
	return path;
}

/**
 * confab_mcp_oauth_metadata_resource_metadata_urls:
 * @server_url: the MCP server's URL
 * @from_header: (nullable): the challenge's `resource_metadata`
 *
 * Returns: (transfer full) (element-type utf8): where to look for the
 *   protected-resource metadata, in order (RFC 9728 and the MCP spec)
 */
GPtrArray *
confab_mcp_oauth_metadata_resource_metadata_urls(const gchar *server_url, const gchar *from_header)
{
	GPtrArray *urls = g_ptr_array_new_with_free_func(g_free);
	g_autofree gchar *origin = confab_mcp_oauth_metadata_origin(server_url);
	g_autofree gchar *path = path_of(server_url);

	if (from_header != NULL && *from_header != '\0')
		g_ptr_array_add(urls, g_strdup(from_header));
	if (origin == NULL)
		return urls;
	if (*path != '\0')
		g_ptr_array_add(
		    urls,
		    g_strconcat(origin, "/.well-known/oauth-protected-resource", path, NULL));
	g_ptr_array_add(urls, g_strconcat(origin, "/.well-known/oauth-protected-resource", NULL));
	return urls;
}

/**
 * confab_mcp_oauth_metadata_server_metadata_urls:
 * @issuer: the authorization server's issuer URL
 *
 * Returns: (transfer full) (element-type utf8): where to look for its
 *   metadata, in order: RFC 8414 path insertion, OpenID path insertion,
 *   OpenID path appended (only the first two for an issuer without a path)
 */
GPtrArray *
confab_mcp_oauth_metadata_server_metadata_urls(const gchar *issuer)
{
	GPtrArray *urls = g_ptr_array_new_with_free_func(g_free);
	g_autofree gchar *origin = confab_mcp_oauth_metadata_origin(issuer);
	g_autofree gchar *path = path_of(issuer);

	if (origin == NULL)
		return urls;
	g_ptr_array_add(urls,
			g_strconcat(origin, "/.well-known/oauth-authorization-server", path, NULL));
	g_ptr_array_add(urls, g_strconcat(origin, "/.well-known/openid-configuration", path, NULL));
	if (*path != '\0')
		g_ptr_array_add(
		    urls,
		    g_strconcat(origin, path, "/.well-known/openid-configuration", NULL));
	return urls;
}

/**
 * confab_mcp_oauth_metadata_scope_union:
 *
 * Returns: (transfer full) (nullable): the scopes of @a and of @b, each
 *   once, in order; %NULL when both are empty
 */
static void
scope_add_each(GPtrArray *out, const gchar *scopes)
{
	g_auto(GStrv) split = g_strsplit(scopes != NULL ? scopes : "", " ", -1);

	for (guint i = 0; split[i] != NULL; i++) {
		gboolean seen = *split[i] == '\0';
		for (guint j = 0; j < out->len && !seen; j++)
			seen = strcmp(out->pdata[j], split[i]) == 0;
		if (!seen)
			g_ptr_array_add(out, g_strdup(split[i]));
	}
}

gchar *
confab_mcp_oauth_metadata_scope_union(const gchar *a, const gchar *b)
{
	g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(g_free);

	scope_add_each(out, a);
	scope_add_each(out, b);
	if (out->len == 0)
		return NULL;
	g_ptr_array_add(out, NULL);
	return g_strjoinv(" ", (gchar **)out->pdata);
}

/**
 * confab_mcp_oauth_metadata_scope_has:
 *
 * Whether @scopes (nullable) lists @scope.
 */
gboolean
confab_mcp_oauth_metadata_scope_has(const gchar *const *scopes, const gchar *scope)
{
	return scopes != NULL && g_strv_contains(scopes, scope);
}
