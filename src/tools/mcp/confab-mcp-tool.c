/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMcp"

#include "config.h"

#include <string.h>

#include "tools/mcp/confab-mcp-tool.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * What an MCP server offers (a tool, as tools/list describes it) and what a
 * call gives back, made into the text a model reads: text parts joined,
 * structuredContent as JSON, other parts named, cut at a size.
 */

/**
 * confab_mcp_tool_copy:
 * @tool: a #ConfabMcpTool
 *
 * Returns: (transfer full): a copy
 */
ConfabMcpTool *
confab_mcp_tool_copy(const ConfabMcpTool *tool)
{
	ConfabMcpTool *copy = g_new0(ConfabMcpTool, 1);

	copy->name = g_strdup(tool->name);
	copy->title = g_strdup(tool->title);
	copy->description = g_strdup(tool->description);
	copy->input_schema = g_strdup(tool->input_schema);
	return copy;
}

/**
 * confab_mcp_tool_free:
 * @tool: (transfer full): a #ConfabMcpTool
 */
void
confab_mcp_tool_free(ConfabMcpTool *tool)
{
	if (tool == NULL)
		return;
	g_free(tool->name);
	g_free(tool->title);
	g_free(tool->description);
	g_free(tool->input_schema);
	g_free(tool);
}

G_DEFINE_BOXED_TYPE(ConfabMcpTool, confab_mcp_tool, confab_mcp_tool_copy, confab_mcp_tool_free)

/**
 * confab_mcp_tool_result_copy:
 * @result: a #ConfabMcpToolResult
 *
 * Returns: (transfer full): a copy
 */
ConfabMcpToolResult *
confab_mcp_tool_result_copy(const ConfabMcpToolResult *result)
{
	ConfabMcpToolResult *copy = g_new0(ConfabMcpToolResult, 1);

	copy->is_error = result->is_error;
	copy->text = g_strdup(result->text);
	copy->truncated = result->truncated;
	return copy;
}

/**
 * confab_mcp_tool_result_free:
 * @result: (transfer full): a #ConfabMcpToolResult
 */
void
confab_mcp_tool_result_free(ConfabMcpToolResult *result)
{
	if (result == NULL)
		return;
	g_free(result->text);
	g_free(result);
}

G_DEFINE_BOXED_TYPE(ConfabMcpToolResult,
		    confab_mcp_tool_result,
		    confab_mcp_tool_result_copy,
		    confab_mcp_tool_result_free)

/* ---------- tool results ---------- */

/* how deep a structuredContent may nest */
#define CONFAB_MCP_TOOL_MAX_DEPTH 64

/* The bytes that base64 text stands for, without decoding it. */
static gsize
base64_size(const gchar *data)
{
	gsize chars = 0, padding = 0, rest;

	for (const gchar *p = data; *p != '\0'; p++) {
		if (*p == '=')
			padding++;
		else if (!g_ascii_isspace(*p))
			chars++;
	}
	/* four characters for three bytes; a last group of two or three
	 * characters, padded or not, for one or two */
	rest = chars % 4;
	return chars / 4 * 3 + (rest > 1 ? rest - 1 : 0);
}

static void
append_line(GString *out, const gchar *text)
{
	if (out->len > 0)
		g_string_append_c(out, '\n');
	g_string_append(out, text);
}

static void
append_part(GString *out, JsonObject *part)
{
	const gchar *type = confab_json_get_string(part, "type");

	if (g_strcmp0(type, "text") == 0) {
		append_line(out,
			    confab_json_get_string(part, "text") != NULL
				? confab_json_get_string(part, "text")
				: "");
	} else if (g_strcmp0(type, "image") == 0 || g_strcmp0(type, "audio") == 0) {
		const gchar *data = confab_json_get_string(part, "data");
		const gchar *mime = confab_json_get_string(part, "mimeType");
		g_autofree gchar *name =
		    g_strdup_printf("[%s: %s, %" G_GSIZE_FORMAT " bytes]",
				    type,
				    mime != NULL ? mime : "application/octet-stream",
				    data != NULL ? base64_size(data) : 0);
		append_line(out, name);
	} else if (g_strcmp0(type, "resource_link") == 0) {
		const gchar *uri = confab_json_get_string(part, "uri");
		g_autofree gchar *name = g_strdup_printf("[resource: %s]", uri != NULL ? uri : "?");
		append_line(out, name);
	} else if (g_strcmp0(type, "resource") == 0) {
		JsonNode *node = json_object_get_member(part, "resource");
		JsonObject *resource = node != NULL && JSON_NODE_HOLDS_OBJECT(node)
					   ? json_node_get_object(node)
					   : NULL;
		const gchar *uri = resource != NULL ? confab_json_get_string(resource, "uri")
						    : NULL;
		const gchar *text = resource != NULL ? confab_json_get_string(resource, "text")
						     : NULL;
		const gchar *blob = resource != NULL ? confab_json_get_string(resource, "blob")
						     : NULL;
		g_autofree gchar *name = NULL;

		if (blob != NULL) {
			const gchar *mime = confab_json_get_string(resource, "mimeType");
			name = g_strdup_printf("[resource: %s, %s, %" G_GSIZE_FORMAT " bytes]",
					       uri != NULL ? uri : "?",
					       mime != NULL ? mime : "application/octet-stream",
					       base64_size(blob));
		} else {
			name = g_strdup_printf("[resource: %s]", uri != NULL ? uri : "?");
		}
		append_line(out, name);
		/* an embedded text resource is text the tool meant to return */
		if (text != NULL)
			append_line(out, text);
	} else {
		g_autofree gchar *name =
		    g_strdup_printf("[%s content]", type != NULL ? type : "unknown");
		append_line(out, name);
	}
}

/* Whether a text part already holds @structured, as servers are asked to do. */
static gboolean
structured_in_text(JsonArray *content, JsonNode *structured)
{
	for (guint i = 0; content != NULL && i < json_array_get_length(content); i++) {
		JsonNode *node = json_array_get_element(content, i);
		JsonObject *part;
		const gchar *text;
		g_autoptr(JsonNode) parsed = NULL;

		if (!JSON_NODE_HOLDS_OBJECT(node))
			continue;
		part = json_node_get_object(node);
		if (g_strcmp0(confab_json_get_string(part, "type"), "text") != 0)
			continue;
		text = confab_json_get_string(part, "text");
		if (text == NULL)
			continue;
		parsed = confab_json_parse(text, strlen(text), CONFAB_MCP_TOOL_MAX_DEPTH, NULL);
		if (parsed != NULL && json_node_equal(parsed, structured))
			return TRUE;
	}
	return FALSE;
}

/**
 * confab_mcp_tool_result_new_from_json:
 * @result: the `result` of a `tools/call` answer
 * @max_output_bytes: the most bytes of text kept; 0 for
 *   %CONFAB_MCP_DEFAULT_MAX_OUTPUT_BYTES
 * @error: return location for a #GError
 *
 * Turns a CallToolResult into what the model reads: text parts joined by
 * "\n", other parts named in their place, `structuredContent` appended as
 * JSON text unless a text part already holds the same JSON, and everything
 * past @max_output_bytes replaced by `\n[output truncated at N bytes]`.
 *
 * Returns: (transfer full): the result, or %NULL if @result is not an
 *   object
 */
ConfabMcpToolResult *
confab_mcp_tool_result_new_from_json(JsonNode *result, gsize max_output_bytes, GError **error)
{
	g_autoptr(ConfabMcpToolResult) out = NULL;
	g_autoptr(GString) text = g_string_new(NULL);
	JsonObject *object;
	JsonNode *content_node, *structured, *is_error;
	JsonArray *content = NULL;

	if (max_output_bytes == 0)
		max_output_bytes = CONFAB_MCP_DEFAULT_MAX_OUTPUT_BYTES;
	if (result == NULL || !JSON_NODE_HOLDS_OBJECT(result)) {
		g_set_error_literal(
		    error,
		    CONFAB_ERROR,
		    CONFAB_ERROR_UPSTREAM,
		    "The MCP server answered tools/call with a result that is not an "
		    "object");
		return NULL;
	}
	object = json_node_get_object(result);
	out = g_new0(ConfabMcpToolResult, 1);
	is_error = json_object_get_member(object, "isError");
	out->is_error = is_error != NULL && JSON_NODE_HOLDS_VALUE(is_error) &&
			json_node_get_value_type(is_error) == G_TYPE_BOOLEAN &&
			json_node_get_boolean(is_error);

	content_node = json_object_get_member(object, "content");
	if (content_node != NULL && JSON_NODE_HOLDS_ARRAY(content_node))
		content = json_node_get_array(content_node);
	for (guint i = 0; content != NULL && i < json_array_get_length(content); i++) {
		JsonNode *part = json_array_get_element(content, i);
		if (JSON_NODE_HOLDS_OBJECT(part))
			append_part(text, json_node_get_object(part));
		/* the rest is cut anyway */
		if (text->len > max_output_bytes)
			break;
	}
	structured = json_object_get_member(object, "structuredContent");
	if (structured != NULL && !JSON_NODE_HOLDS_NULL(structured) &&
	    text->len <= max_output_bytes && !structured_in_text(content, structured)) {
		if (text->len > 0)
			g_string_append_c(text, '\n');
		confab_json_append_node(text, structured);
	}
	if (text->len > max_output_bytes) {
		/* on a character boundary */
		const gchar *cut = text->str + max_output_bytes;
		if ((*cut & 0xC0) == 0x80)
			cut = g_utf8_find_prev_char(text->str, cut);
		g_string_truncate(text, cut != NULL ? (gsize)(cut - text->str) : 0);
		g_string_append_printf(text,
				       "\n[output truncated at %" G_GSIZE_FORMAT " bytes]",
				       max_output_bytes);
		out->truncated = TRUE;
	}
	out->text = g_string_free(g_steal_pointer(&text), FALSE);
	return g_steal_pointer(&out);
}
