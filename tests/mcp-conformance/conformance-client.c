/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "tools/mcp/confab-mcp-client.h"
#include "tools/mcp/confab-mcp-elicitation.h"
#include "tools/mcp/confab-mcp-http.h"
#include "tools/mcp/confab-mcp-tool.h"
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
 */

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
call_tool(ConfabMcpClient *client, ConfabMcpTool *tool)
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
run(ConfabMcpClient *client)
{
	g_autoptr(GPtrArray) tools = NULL;
	g_autoptr(GError) error = NULL;
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
		return FALSE;
	}
	g_print("initialized: protocol %s\n", confab_mcp_client_get_protocol_version(client));
	confab_mcp_client_list_tools_async(client, NULL, on_result, &listed);
	wait_for(&listed);
	tools = confab_mcp_client_list_tools_finish(client, listed.result, &error);
	g_object_unref(listed.result);
	if (tools == NULL) {
		g_printerr("tools/list: %s\n", error->message);
		return FALSE;
	}
	g_print("tools/list: %u tools\n", tools->len);
	for (guint i = 0; i < tools->len; i++)
		ok = call_tool(client, tools->pdata[i]) && ok;
	return ok;
}

int
main(int argc, char **argv)
{
	g_autoptr(ConfabMcpHttp) http = NULL;
	g_autoptr(ConfabMcpClient) client = NULL;
	g_autoptr(GError) error = NULL;
	gpointer transport;
	gboolean ok;

	if (argc < 2) {
		g_printerr("usage: %s SERVER_URL\n", argv[0]);
		return 2;
	}
	g_print("scenario %s, server %s\n",
		g_getenv("MCP_CONFORMANCE_SCENARIO") != NULL ? g_getenv("MCP_CONFORMANCE_SCENARIO")
							     : "(none)",
		argv[argc - 1]);
	http = confab_mcp_http_new("conformance", argv[argc - 1], NULL, &error);
	if (http == NULL) {
		g_printerr("%s\n", error->message);
		return 1;
	}
	client = confab_mcp_client_new("conformance", CONFAB_MCP_TRANSPORT(http));
	ok = run(client);
	/* close ends the session (DELETE); the transport goes once it ended */
	confab_mcp_client_close(client);
	g_clear_object(&client);
	transport = http;
	g_object_add_weak_pointer(transport, &transport);
	g_clear_object(&http);
	while (transport != NULL)
		g_main_context_iteration(NULL, TRUE);
	return ok ? 0 : 1;
}
