/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "openai/confab-openai-message.h"
#include "util/confab-json.h"

/*
 * Stored messages as the OpenAI-shaped messages a provider is sent: the
 * content blocks Confab keeps become `content` (text or parts) and
 * `tool_calls`; a tool result becomes a `tool` message.
 */

static JsonNode *
json_node_from_text(const gchar *json)
{
	g_autoptr(JsonNode) node = confab_json_from_string(json);
	return node != NULL ? g_steal_pointer(&node) : NULL;
}

static JsonObject *
tool_message_from_block(JsonObject *block)
{
	JsonObject *msg = json_object_new();

	json_object_set_string_member(msg, "role", "tool");
	json_object_set_string_member(
	    msg,
	    "tool_call_id",
	    json_object_get_string_member_with_default(block, "tool_call_id", ""));
	json_object_set_string_member(
	    msg,
	    "content",
	    json_object_get_string_member_with_default(block, "content", ""));
	return msg;
}

/* OpenAI content parts from text, image and file blocks. */
static JsonArray *
parts_of(GPtrArray *kept)
{
	JsonArray *parts = json_array_new();

	for (guint i = 0; i < kept->len; i++) {
		JsonObject *block = g_ptr_array_index(kept, i);
		JsonObject *part;
		if (g_strcmp0(json_object_get_string_member_with_default(block, "type", ""),
			      "text") != 0) {
			json_array_add_object_element(parts, json_object_ref(block));
			continue;
		}
		part = json_object_new();
		json_object_set_string_member(part, "type", "text");
		json_object_set_string_member(
		    part,
		    "text",
		    json_object_get_string_member_with_default(block, "text", ""));
		json_array_add_object_element(parts, part);
	}
	return parts;
}

#define ONE_TEXT_HEAD "[{\"type\":\"text\",\"text\":"

/**
 * confab_openai_message_one_text:
 * @blocks: (nullable): a message's content blocks, or its content
 *
 * The text of blocks that are one text block as Confab writes it (most
 * messages), read without building a tree.
 *
 * Returns: (transfer full) (nullable): the text; %NULL for any other
 *   blocks, which are to be parsed whole
 */
gchar *
confab_openai_message_one_text(const gchar *blocks)
{
	gsize head = strlen(ONE_TEXT_HEAD);
	gsize len;
	gsize used = 0;
	g_autofree gchar *text = NULL;

	if (blocks == NULL || strncmp(blocks, ONE_TEXT_HEAD, head) != 0)
		return NULL;
	len = strlen(blocks);
	text = confab_json_read_string(blocks + head, len - head, &used);
	if (text == NULL || len - head - used != 2 || strcmp(blocks + head + used, "}]") != 0)
		return NULL;
	return g_steal_pointer(&text);
}

/* @role's message whose content is @text (transfer full) */
static JsonObject *
text_message(const gchar *role, gchar *text)
{
	JsonObject *out = json_object_new();

	json_object_set_string_member(out, "role", role);
	json_object_set_string_member(out, "content", text);
	g_free(text);
	return out;
}

/* One stored message (not an answer) as one OpenAI message, rebuilt from
 * its content blocks. */
static JsonObject *
message_from_stored(ConfabMessage *message)
{
	g_autoptr(JsonNode) blocks_node =
	    json_node_from_text(confab_message_get_content_blocks(message));
	g_autoptr(JsonObject) out = json_object_new();
	g_autoptr(GPtrArray) kept = g_ptr_array_new(); /* the blocks that become parts */
	gboolean only_text = TRUE;
	JsonArray *blocks;

	if (blocks_node == NULL || !JSON_NODE_HOLDS_ARRAY(blocks_node))
		return NULL;
	blocks = json_node_get_array(blocks_node);
	json_object_set_string_member(out, "role", confab_message_get_role(message));
	for (guint i = 0; i < json_array_get_length(blocks); i++) {
		JsonObject *block = json_array_get_object_element(blocks, i);
		const gchar *type =
		    block != NULL ? json_object_get_string_member_with_default(block, "type", "")
				  : "";

		if (g_str_equal(type, "text")) {
			g_ptr_array_add(kept, block);
		} else if (g_str_equal(type, "image_url") || g_str_equal(type, "file")) {
			only_text = FALSE;
			g_ptr_array_add(kept, block);
		} else if (g_str_equal(type, "tool_result")) {
			/* a client's tool message: its result is its content */
			return tool_message_from_block(block);
		}
	}
	/* one text is a string (copied once: a text may be megabytes);
	 * several parts stay parts, as the client sent them (not joined) */
	if (only_text && kept->len <= 1)
		json_object_set_string_member(
		    out,
		    "content",
		    kept->len == 1
			? json_object_get_string_member_with_default(g_ptr_array_index(kept, 0),
								     "text",
								     "")
			: "");
	else
		json_object_set_array_member(out, "content", parts_of(kept));
	return g_steal_pointer(&out);
}

/* One assistant message of an answer: its text and calls, and with calls
 * the reasoning that led to them (DeepSeek's thinking mode refuses a
 * tool-call turn whose reasoning is not passed back). */
typedef struct {
	GPtrArray *texts; /* unowned JsonObject text blocks, in order */
	GString *reasoning;
	JsonArray *calls;
} AssistantParts;

/* One assistant message of an answer: its text (one string, or the parts
 * a client sent) and calls, and with calls the reasoning that led to them
 * (DeepSeek's thinking mode refuses a tool-call turn whose reasoning is
 * not passed back). */
static void
flush_assistant(JsonArray *context, AssistantParts *parts)
{
	gboolean has_calls = json_array_get_length(parts->calls) > 0;
	JsonObject *msg;

	if (parts->texts->len == 0 && !has_calls) {
		g_string_truncate(parts->reasoning, 0);
		return;
	}
	msg = json_object_new();
	json_object_set_string_member(msg, "role", "assistant");
	if (parts->texts->len == 1)
		json_object_set_string_member(
		    msg,
		    "content",
		    json_object_get_string_member_with_default(g_ptr_array_index(parts->texts, 0),
							       "text",
							       ""));
	else if (parts->texts->len > 1)
		json_object_set_array_member(msg, "content", parts_of(parts->texts));
	else
		json_object_set_null_member(msg, "content");
	if (has_calls) {
		if (parts->reasoning->len > 0)
			json_object_set_string_member(msg,
						      "reasoning_content",
						      parts->reasoning->str);
		json_object_set_array_member(msg, "tool_calls", parts->calls);
		parts->calls = json_array_new();
	}
	json_array_add_object_element(context, msg);
	g_ptr_array_set_size(parts->texts, 0);
	g_string_truncate(parts->reasoning, 0);
}

static JsonObject *
tool_call_from_block(JsonObject *block)
{
	JsonObject *call = json_object_new();
	JsonObject *fn = json_object_new();

	json_object_set_string_member(call,
				      "id",
				      json_object_get_string_member_with_default(block, "id", ""));
	json_object_set_string_member(call, "type", "function");
	json_object_set_string_member(
	    fn,
	    "name",
	    json_object_get_string_member_with_default(block, "name", ""));
	json_object_set_string_member(
	    fn,
	    "arguments",
	    json_object_get_string_member_with_default(block, "arguments", ""));
	json_object_set_object_member(call, "function", fn);
	return call;
}

/* An answer whose agent ran tools is, for the model, a sequence: the
 * assistant's calls, each tool's result, then what it said next. Text
 * blocks in a row are a client's parts (a step of Confab's own writes one). */
static void
append_assistant(JsonArray *context, JsonArray *blocks)
{
	g_autoptr(GPtrArray) texts = g_ptr_array_new();
	g_autoptr(GString) reasoning = g_string_new(NULL);
	AssistantParts parts = {texts, reasoning, json_array_new()};

	for (guint i = 0; i < json_array_get_length(blocks); i++) {
		JsonObject *block = json_array_get_object_element(blocks, i);
		const gchar *type =
		    block != NULL ? json_object_get_string_member_with_default(block, "type", "")
				  : "";

		if (g_str_equal(type, "text")) {
			/* an empty text is none, as in confab_openai_message_one_text()'s case */
			if (*json_object_get_string_member_with_default(block, "text", "") != '\0')
				g_ptr_array_add(texts, block);
		} else if (g_str_equal(type, "reasoning")) {
			g_string_append(
			    reasoning,
			    json_object_get_string_member_with_default(block, "text", ""));
		} else if (g_str_equal(type, "tool_call")) {
			json_array_add_object_element(parts.calls, tool_call_from_block(block));
		} else if (g_str_equal(type, "tool_result")) {
			flush_assistant(context, &parts);
			json_array_add_object_element(context, tool_message_from_block(block));
		}
		/* errors and refusals stay in the transcript only */
	}
	flush_assistant(context, &parts);
	json_array_unref(parts.calls);
}

/**
 * confab_openai_message_append_stored:
 * @context: the OpenAI-shaped messages a provider is sent
 * @message: a stored message
 *
 * Appends what @message was to the model, rebuilt from its content blocks:
 * one message, or, for an answer whose agent ran tools, the assistant's
 * tool calls, each tool's result and what it said next. A failed answer
 * without text adds nothing.
 */
void
confab_openai_message_append_stored(JsonArray *context, ConfabMessage *message)
{
	g_autoptr(JsonNode) blocks = NULL;
	JsonObject *msg;
	gchar *text = confab_openai_message_one_text(confab_message_get_content_blocks(message));

	/* one text needs no tree: the same message as the one built below */
	if (text != NULL) {
		if (*text != '\0' || !g_str_equal(confab_message_get_role(message), "assistant"))
			json_array_add_object_element(
			    context,
			    text_message(confab_message_get_role(message), text));
		else
			g_free(text);
		return;
	}
	if (g_str_equal(confab_message_get_role(message), "assistant")) {
		blocks = json_node_from_text(confab_message_get_content_blocks(message));
		if (blocks != NULL && JSON_NODE_HOLDS_ARRAY(blocks))
			append_assistant(context, json_node_get_array(blocks));
		return;
	}
	msg = message_from_stored(message);
	if (msg != NULL)
		json_array_add_object_element(context, msg);
}

static const gchar *
role_of(JsonNode *node)
{
	return JSON_NODE_HOLDS_OBJECT(node)
		   ? json_object_get_string_member_with_default(json_node_get_object(node),
								"role",
								"")
		   : "";
}

static const gchar *
answered_call(JsonNode *node)
{
	if (g_strcmp0(role_of(node), "tool") != 0)
		return NULL;
	return json_object_get_string_member_with_default(json_node_get_object(node),
							  "tool_call_id",
							  NULL);
}

/* The ids of an assistant message's tool calls, or NULL for none. */
static GPtrArray *
call_ids(JsonNode *node)
{
	JsonNode *calls;
	GPtrArray *ids;

	if (g_strcmp0(role_of(node), "assistant") != 0)
		return NULL;
	calls = json_object_get_member(json_node_get_object(node), "tool_calls");
	if (calls == NULL || !JSON_NODE_HOLDS_ARRAY(calls) ||
	    json_array_get_length(json_node_get_array(calls)) == 0)
		return NULL;
	ids = g_ptr_array_new();
	for (guint i = 0; i < json_array_get_length(json_node_get_array(calls)); i++) {
		JsonObject *call = json_array_get_object_element(json_node_get_array(calls), i);
		const gchar *id = call != NULL
				      ? json_object_get_string_member_with_default(call, "id", NULL)
				      : NULL;
		if (id != NULL)
			g_ptr_array_add(ids, (gpointer)id);
	}
	return ids;
}

/* Whether each call of @context is answered by the tool messages right
 * after its assistant message. */
static gboolean
calls_settled(JsonArray *context)
{
	guint n = json_array_get_length(context);

	for (guint i = 0; i < n; i++) {
		g_autoptr(GPtrArray) ids = call_ids(json_array_get_element(context, i));
		guint end = i + 1;

		if (ids == NULL)
			continue;
		while (end < n && answered_call(json_array_get_element(context, end)) != NULL)
			end++;
		for (guint c = 0; c < ids->len; c++) {
			gboolean found = FALSE;
			for (guint j = i + 1; j < end && !found; j++)
				found = g_strcmp0(answered_call(json_array_get_element(context, j)),
						  g_ptr_array_index(ids, c)) == 0;
			if (!found)
				return FALSE;
		}
		i = end - 1;
	}
	return TRUE;
}

/**
 * confab_openai_message_settle_calls:
 * @context: the OpenAI-shaped messages a provider is sent
 * @unanswered: the content given to a call that has no result
 *
 * Puts every tool call's result right after the assistant message that
 * made it, as the Chat Completions API requires: a result that comes later
 * (a Responses continuation ran the call after the person approved it,
 * and the client's new messages came first) is moved up, and a call with
 * no result anywhere (it was never approved, or its turn stopped) is given
 * one saying so. A context in order is left as it is.
 */
void
confab_openai_message_settle_calls(JsonArray *context, const gchar *unanswered)
{
	g_autoptr(GPtrArray) nodes = NULL;
	gboolean changed = FALSE;

	/* the common case, every turn: nothing to move, nothing copied */
	if (calls_settled(context))
		return;
	nodes = g_ptr_array_new_with_free_func((GDestroyNotify)json_node_unref);
	for (guint i = 0; i < json_array_get_length(context); i++)
		g_ptr_array_add(nodes, json_node_ref(json_array_get_element(context, i)));
	for (guint i = 0; i < nodes->len; i++) {
		g_autoptr(GPtrArray) ids = call_ids(g_ptr_array_index(nodes, i));
		guint end = i + 1;

		if (ids == NULL)
			continue;
		/* the results that follow at once */
		while (end < nodes->len && answered_call(g_ptr_array_index(nodes, end)) != NULL)
			end++;
		for (guint c = 0; c < ids->len; c++) {
			const gchar *id = g_ptr_array_index(ids, c);
			gboolean found = FALSE;
			JsonObject *result;

			for (guint j = i + 1; j < end && !found; j++)
				found =
				    g_strcmp0(answered_call(g_ptr_array_index(nodes, j)), id) == 0;
			if (found)
				continue;
			changed = TRUE;
			for (guint j = end; j < nodes->len && !found; j++) {
				if (g_strcmp0(answered_call(g_ptr_array_index(nodes, j)), id) != 0)
					continue;
				/* a later result: up to its call */
				g_ptr_array_insert(nodes, end, g_ptr_array_steal_index(nodes, j));
				found = TRUE;
			}
			if (!found) {
				result = json_object_new();
				json_object_set_string_member(result, "role", "tool");
				json_object_set_string_member(result, "tool_call_id", id);
				json_object_set_string_member(result, "content", unanswered);
				g_ptr_array_insert(
				    nodes,
				    end,
				    json_node_init_object(json_node_alloc(), result));
				json_object_unref(result);
			}
			end++;
		}
		i = end - 1;
	}
	if (!changed)
		return;
	while (json_array_get_length(context) > 0)
		json_array_remove_element(context, json_array_get_length(context) - 1);
	for (guint i = 0; i < nodes->len; i++)
		json_array_add_element(context, json_node_ref(g_ptr_array_index(nodes, i)));
}

/**
 * confab_openai_message_get_text:
 * @message: an OpenAI-shaped message
 *
 * Returns: (transfer full): the message's text: its string content, or its
 * text parts joined by newlines
 */
gchar *
confab_openai_message_get_text(JsonObject *message)
{
	JsonNode *content = json_object_get_member(message, "content");
	GString *text = g_string_new(NULL);

	if (content == NULL)
		return g_string_free(text, FALSE);
	if (JSON_NODE_HOLDS_VALUE(content) && json_node_get_value_type(content) == G_TYPE_STRING) {
		g_string_append(text, json_node_get_string(content));
	} else if (JSON_NODE_HOLDS_ARRAY(content)) {
		JsonArray *parts = json_node_get_array(content);
		gboolean first = TRUE;
		for (guint i = 0; i < json_array_get_length(parts); i++) {
			JsonNode *pnode = json_array_get_element(parts, i);
			JsonObject *part;
			if (!JSON_NODE_HOLDS_OBJECT(pnode))
				continue;
			part = json_node_get_object(pnode);
			if (g_strcmp0(json_object_get_string_member_with_default(part, "type", ""),
				      "text") != 0)
				continue;
			if (!first)
				g_string_append_c(text, '\n');
			g_string_append(
			    text,
			    json_object_get_string_member_with_default(part, "text", ""));
			first = FALSE;
		}
	}
	return g_string_free(text, FALSE);
}
