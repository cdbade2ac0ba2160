/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-fuzz.h"
#include "test-transport.h"
#include "tools/mcp/confab-mcp-elicitation.h"
#include "tools/mcp/confab-mcp-jsonrpc.h"
#include "tools/mcp/confab-mcp-line-reader.h"

/*
 * What an MCP server says, as the stdio transport reads it: bytes cut into
 * lines (at most 4 KiB each), each line a message for the JSON-RPC layer,
 * which has three requests waiting (ids 1 to 3) for answers. An input whose
 * first byte is odd is spoken as 2025-03-26, which takes JSON-RPC batches.
 * An `elicitation/create` goes through the elicitation form checks: its
 * params' `_content` is the answer offered (accepted if it matches the
 * schema, else declined). Whatever the bytes, nothing crashes, no request
 * is answered twice, and closing fails what is left, so that nothing stays
 * pending.
 */

typedef struct {
	guint answered;
	guint failed;
} Outcome;

static void
on_answer(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Outcome *outcome = user_data;
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) node =
	    confab_mcp_jsonrpc_request_finish(CONFAB_MCP_JSONRPC(source), result, &error);

	if (node != NULL)
		outcome->answered++;
	else
		outcome->failed++;
}

static gboolean
on_request(ConfabMcpJsonrpc *rpc,
	   const gchar *method,
	   JsonObject *params,
	   JsonNode *id,
	   gint64 answering,
	   gpointer user_data)
{
	g_autoptr(ConfabMcpElicitation) elicitation = NULL;
	g_autoptr(GError) error = NULL;
	JsonNode *content;

	if (strcmp(method, "elicitation/create") != 0)
		return FALSE;
	elicitation = confab_mcp_elicitation_new(rpc, id, "fuzz", params, &error);
	if (elicitation == NULL) {
		confab_mcp_jsonrpc_respond(rpc, id, NULL, -32602, error->message);
		return TRUE;
	}
	content = json_object_get_member(params, "_content");
	if (!confab_mcp_elicitation_respond(elicitation,
					    "accept",
					    content != NULL && JSON_NODE_HOLDS_OBJECT(content)
						? json_node_get_object(content)
						: NULL,
					    NULL))
		confab_mcp_elicitation_respond(elicitation, "decline", NULL, NULL);
	return TRUE;
}

static void
on_line(const gchar *line, gsize len, gpointer user_data)
{
	confab_mcp_transport_emit_message(user_data, line, len, NULL);
}

static void
on_too_long(const gchar *head,
	    gsize head_len,
	    const gchar *tail,
	    gsize tail_len,
	    guint64 size,
	    gpointer user_data)
{
	confab_mcp_transport_emit_dropped(user_data, head, head_len, tail, tail_len, size);
}

int
LLVMFuzzerTestOneInput(const guint8 *data, size_t size)
{
	g_autoptr(TestTransport) transport = g_object_new(TEST_TYPE_TRANSPORT, NULL);
	g_autoptr(ConfabMcpJsonrpc) rpc =
	    confab_mcp_jsonrpc_new(CONFAB_MCP_TRANSPORT(transport), "fuzz");
	g_autoptr(ConfabMcpLineReader) reader =
	    confab_mcp_line_reader_new(4096, on_line, on_too_long, transport);
	Outcome outcome = {0};

	confab_mcp_jsonrpc_set_batches(rpc, size > 0 && (data[0] & 1) != 0);
	confab_mcp_jsonrpc_set_request_func(rpc, on_request, NULL);
	for (guint i = 0; i < 3; i++)
		confab_mcp_jsonrpc_request_async(rpc,
						 "tools/call",
						 NULL,
						 0,
						 NULL,
						 on_answer,
						 &outcome);
	confab_mcp_line_reader_feed(reader, (const gchar *)data, size);
	confab_mcp_line_reader_finish(reader);
	while (g_main_context_iteration(NULL, FALSE))
		;
	confab_mcp_jsonrpc_close(rpc);
	while (g_main_context_iteration(NULL, FALSE))
		;
	g_assert(outcome.answered + outcome.failed == 3);
	g_assert(confab_mcp_jsonrpc_get_n_pending(rpc) == 0);
	return 0;
}
