/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/mcp/confab-mcp-client.h"
#include "tools/mcp/confab-mcp-elicitation.h"
#include "tools/mcp/confab-mcp-http.h"
#include "tools/mcp/confab-mcp-oauth.h"
#include "tools/mcp/confab-mcp-tool.h"
#include "upstream/confab-upstream-client.h"
#include "util/confab-http-fields.h"
#include "util/confab-json.h"

/*
 * The client under test for the official MCP conformance suite
 * (@modelcontextprotocol/conformance, client mode): it runs this program
 * once per scenario with the scenario's server URL as the last argument.
 * It drives Confab's real MCP client (src/tools/mcp) as the agent loop
 * does: start the session, list the tools, call each one with arguments
 * made from its input schema, close (DELETE the session). An elicitation
 * (form mode) is accepted with no field filled in: what the server gets is
 * the schema's defaults, applied by Confab's client. It prints what
 * it saw and exits 0 when every step worked, 1 otherwise; the suite judges
 * the scenario by what its server saw.
 *
 * OAuth: the server's authorization is Confab's (src/tools/mcp/
 * confab-mcp-oauth.c), configured from the scenario's context
 * (MCP_CONFORMANCE_CONTEXT: client_id, client_secret, private_key_pem) as
 * an `oauth` entry would be; the client-credentials scenarios use that
 * grant. Where a person would open the authorization URL (what
 * `confabctl agent authorize` prints), this program GETs it itself: the
 * scenario's authorization server approves at once and redirects to the
 * redirect URI with the code, which goes to Confab as confabd's callback
 * would give it; then the whole run starts again, at most three times.
 */

#define REDIRECT_URI	    "http://127.0.0.1:1/api/v1/oauth/callback"
#define CLIENT_METADATA_URL "https://conformance-test.local/client-metadata.json"
#define MAX_AUTHORIZATIONS  3

#define CALL_TIMEOUT_MS 20000

typedef struct {
	GAsyncResult *result;
} Wait;

static void
on_result(GObject *source, GAsyncResult *result, gpointer user_data)
{
	((Wait *)user_data)->result = g_object_ref(result);
}

static void
wait_for(Wait *w)
{
	while (w->result == NULL)
		g_main_context_iteration(NULL, TRUE);
}

/* A value of the JSON Schema @property's type, for a required argument. */
static JsonNode *
sample_value(JsonObject *property)
{
	const gchar *type = property != NULL ? confab_json_get_string(property, "type") : NULL;
	JsonNode *node = json_node_new(JSON_NODE_VALUE);

	if (g_strcmp0(type, "number") == 0 || g_strcmp0(type, "integer") == 0) {
		json_node_set_int(node, 1);
	} else if (g_strcmp0(type, "boolean") == 0) {
		json_node_set_boolean(node, TRUE);
	} else if (g_strcmp0(type, "object") == 0) {
		json_node_init_object(node, json_object_new());
	} else if (g_strcmp0(type, "array") == 0) {
		json_node_init_array(node, json_array_new());
	} else {
		json_node_set_string(node, "conformance");
	}
	return node;
}

/* Arguments for a tool: each required property with a value of its type. */
static JsonObject *
sample_arguments(const gchar *input_schema)
{
	g_autoptr(JsonNode) schema = confab_json_from_string(input_schema);
	JsonObject *arguments = json_object_new();
	JsonObject *properties;
	JsonNode *required;

	if (schema == NULL || !JSON_NODE_HOLDS_OBJECT(schema))
		return arguments;
	properties = confab_json_get_object(json_node_get_object(schema), "properties");
	required = json_object_get_member(json_node_get_object(schema), "required");
	if (required == NULL || !JSON_NODE_HOLDS_ARRAY(required))
		return arguments;
	for (guint i = 0; i < json_array_get_length(json_node_get_array(required)); i++) {
		JsonNode *name = json_array_get_element(json_node_get_array(required), i);
		const gchar *key;
		if (json_node_get_value_type(name) != G_TYPE_STRING)
			continue;
		key = json_node_get_string(name);
		json_object_set_member(arguments,
				       key,
				       sample_value(properties != NULL
							? confab_json_get_object(properties, key)
							: NULL));
	}
	return arguments;
}

static gboolean
call_tool(ConfabMcpClient *client, ConfabMcpTool *tool, GError **out)
{
	g_autoptr(JsonObject) arguments = sample_arguments(tool->input_schema);
	g_autoptr(ConfabMcpToolResult) result = NULL;
	g_autoptr(GError) error = NULL;
	Wait w = {0};

	confab_mcp_client_call_tool_async(client,
					  tool->name,
					  arguments,
					  CALL_TIMEOUT_MS,
					  0,
					  NULL,
					  NULL,
					  NULL,
					  NULL,
					  on_result,
					  &w);
	wait_for(&w);
	result = confab_mcp_client_call_tool_finish(client, w.result, &error);
	g_object_unref(w.result);
	if (result == NULL) {
		g_printerr("tools/call %s: %s\n", tool->name, error->message);
		if (out != NULL && *out == NULL)
			g_propagate_error(out, g_steal_pointer(&error));
		return FALSE;
	}
	g_print("tools/call %s:%s %s\n",
		tool->name,
		result->is_error ? " (error)" : "",
		result->text);
	return TRUE;
}

static void
on_elicit(ConfabMcpClient *client,
	  ConfabMcpElicitation *elicitation,
	  gpointer call_data,
	  gpointer user_data)
{
	g_autoptr(GError) error = NULL;

	g_print("elicitation: %s\n", confab_mcp_elicitation_get_message(elicitation));
	if (!confab_mcp_elicitation_respond(elicitation, "accept", NULL, &error)) {
		g_printerr("elicitation: %s\n", error->message);
		confab_mcp_elicitation_respond(elicitation, "decline", NULL, NULL);
	}
}

static gboolean
run(ConfabMcpClient *client, GError **out)
{
	g_autoptr(GPtrArray) tools = NULL;
	GError *error = NULL;
	gboolean ok = TRUE;
	Wait started = {0};
	Wait listed = {0};

	confab_mcp_client_set_elicitation_handler(client, on_elicit, NULL, NULL);
	confab_mcp_client_start_async(client, NULL, on_result, &started);
	wait_for(&started);
	ok = confab_mcp_client_start_finish(client, started.result, &error);
	g_object_unref(started.result);
	if (!ok) {
		g_printerr("initialize: %s\n", error->message);
		g_propagate_error(out, error);
		return FALSE;
	}
	g_print("initialized: protocol %s\n", confab_mcp_client_get_protocol_version(client));
	confab_mcp_client_list_tools_async(client, NULL, on_result, &listed);
	wait_for(&listed);
	tools = confab_mcp_client_list_tools_finish(client, listed.result, &error);
	g_object_unref(listed.result);
	if (tools == NULL) {
		g_printerr("tools/list: %s\n", error->message);
		g_propagate_error(out, error);
		return FALSE;
	}
	g_print("tools/list: %u tools\n", tools->len);
	for (guint i = 0; i < tools->len; i++)
		ok = call_tool(client, tools->pdata[i], out) && ok;
	return ok;
}

typedef struct {
	guint status;
	gchar *location;
	gboolean done;
	GError *error;
} Follow;

static void
follow_head(guint status, const gchar *reason, const ConfabHttpFields *fields, gpointer data)
{
	Follow *f = data;
	f->status = status;
	f->location = g_strdup(confab_http_fields_get(fields, "Location"));
}

static void
follow_body(const gchar *data, gsize len, gpointer user_data)
{
}

static void
follow_done(GError *error, gpointer user_data)
{
	Follow *f = user_data;
	f->error = error;
	f->done = TRUE;
}

static const ConfabUpstreamHandler follow_handler = {NULL, follow_head, follow_body, follow_done};

/* What a person does: opens the authorization URL; the scenario's server
 * approves and redirects to the callback, whose code and state go to
 * Confab. */
static gboolean
authorize(ConfabMcpOAuth *oauth)
{
	const gchar *url = confab_mcp_oauth_get_authorization_url(oauth);
	g_autoptr(ConfabUpstreamClient) http =
	    confab_upstream_client_new("confab-conformance", 2, 5, NULL);
	g_autoptr(ConfabUpstreamExchange) exchange = NULL;
	g_autoptr(GUri) location = NULL;
	g_autoptr(GHashTable) params = NULL;
	g_autoptr(GError) error = NULL;
	Follow f = {0};
	Wait w = {0};
	gboolean ok;

	g_print("authorizing at %s\n", url);
	exchange = confab_upstream_client_request(http,
						  "GET",
						  url,
						  "",
						  NULL,
						  NULL,
						  &follow_handler,
						  &f,
						  &error);
	while (exchange != NULL && !f.done)
		g_main_context_iteration(NULL, TRUE);
	if (exchange == NULL || f.error != NULL || f.location == NULL) {
		g_printerr("authorization: no redirect (HTTP %u)\n", f.status);
		g_clear_error(&f.error);
		g_free(f.location);
		return FALSE;
	}
	location = g_uri_parse(f.location, G_URI_FLAGS_ENCODED, NULL);
	g_free(f.location);
	params =
	    location != NULL && g_uri_get_query(location) != NULL
		? g_uri_parse_params(g_uri_get_query(location), -1, "&", G_URI_PARAMS_NONE, NULL)
		: NULL;
	if (params == NULL) {
		g_printerr("authorization: the redirect carries no code\n");
		return FALSE;
	}
	confab_mcp_oauth_complete_async(oauth,
					g_hash_table_lookup(params, "state"),
					g_hash_table_lookup(params, "code"),
					NULL,
					on_result,
					&w);
	wait_for(&w);
	ok = confab_mcp_oauth_complete_finish(oauth, w.result, &error);
	g_object_unref(w.result);
	if (!ok)
		g_printerr("authorization: %s\n", error->message);
	return ok;
}

/* The server's authorization, as an `oauth` entry would configure it. */
static ConfabMcpOAuth *
oauth_new(const gchar *url)
{
	ConfabMcpOAuth *oauth = confab_mcp_oauth_new("conformance", url);
	const gchar *scenario = g_getenv("MCP_CONFORMANCE_SCENARIO");
	const gchar *context = g_getenv("MCP_CONFORMANCE_CONTEXT");
	g_autoptr(JsonNode) root = context != NULL ? confab_json_from_string(context) : NULL;

	confab_mcp_oauth_set_redirect_uri(oauth, REDIRECT_URI);
	confab_mcp_oauth_set_client_metadata_url(oauth, CLIENT_METADATA_URL);
	if (scenario != NULL && strstr(scenario, "client-credentials") != NULL)
		confab_mcp_oauth_set_grant(oauth, CONFAB_MCP_OAUTH_GRANT_CLIENT_CREDENTIALS);
	if (root != NULL && JSON_NODE_HOLDS_OBJECT(root)) {
		JsonObject *object = json_node_get_object(root);
		confab_mcp_oauth_set_client(oauth,
					    confab_json_get_string(object, "client_id"),
					    confab_json_get_string(object, "client_secret"),
					    confab_json_get_string(object, "private_key_pem"));
	}
	return oauth;
}

/* One run on a new transport and client; the transport is gone after. */
static gboolean
run_once(const gchar *url, ConfabMcpOAuth *oauth, GError **error)
{
	g_autoptr(ConfabMcpHttp) http = NULL;
	g_autoptr(ConfabMcpClient) client = NULL;
	gpointer transport;
	gboolean ok;

	http = confab_mcp_http_new("conformance", url, NULL, error);
	if (http == NULL)
		return FALSE;
	confab_mcp_http_set_oauth(http, oauth);
	client = confab_mcp_client_new("conformance", CONFAB_MCP_TRANSPORT(http));
	ok = run(client, error);
	/* close ends the session (DELETE); the transport goes once it ended */
	confab_mcp_client_close(client);
	g_clear_object(&client);
	transport = http;
	g_object_add_weak_pointer(transport, &transport);
	g_clear_object(&http);
	while (transport != NULL)
		g_main_context_iteration(NULL, TRUE);
	return ok;
}

int
main(int argc, char **argv)
{
	g_autoptr(ConfabMcpOAuth) oauth = NULL;
	const gchar *url;
	gboolean ok = FALSE;

	if (argc < 2) {
		g_printerr("usage: %s SERVER_URL\n", argv[0]);
		return 2;
	}
	url = argv[argc - 1];
	g_print("scenario %s, server %s\n",
		g_getenv("MCP_CONFORMANCE_SCENARIO") != NULL ? g_getenv("MCP_CONFORMANCE_SCENARIO")
							     : "(none)",
		url);
	oauth = oauth_new(url);
	for (guint i = 0; i <= MAX_AUTHORIZATIONS; i++) {
		g_autoptr(GError) error = NULL;
		ok = run_once(url, oauth, &error);
		if (ok || !g_error_matches(error,
					   CONFAB_MCP_OAUTH_ERROR,
					   CONFAB_MCP_OAUTH_ERROR_AUTHORIZATION_NEEDED))
			break;
		if (i == MAX_AUTHORIZATIONS || !authorize(oauth))
			break;
	}
	return ok ? 0 : 1;
}
