/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabResponsesRequest"

#include "config.h"

#include <string.h>

#include "model/confab-id.h"
#include "openai/confab-responses-request.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * Turns the body of POST /api/v1/responses into the Chat Completions
 * request the turn runs (the upstream is still asked with Chat
 * Completions), plus what belongs to the Responses API alone: the response
 * it continues, the conversation, `store`, the instructions for this
 * response, and what the response object repeats.
 *
 * The translation writes a Chat Completions body and hands it to
 * confab_chat_request_parse(), so that both doors check messages, parts,
 * attachments and parameters with the same code. Everything here is
 * type-checked before json-glib is asked for it.
 */

static gboolean
node_holds(JsonNode *node, GType type)
{
	return node != NULL && JSON_NODE_HOLDS_VALUE(node) &&
	       json_node_get_value_type(node) == type;
}

static gboolean
node_is_string(JsonNode *node)
{
	return node_holds(node, G_TYPE_STRING);
}

static gboolean
node_is_null(JsonNode *node)
{
	return node == NULL || JSON_NODE_HOLDS_NULL(node);
}

static JsonNode *
member(JsonObject *obj, const gchar *name)
{
	return json_object_get_member(obj, name);
}

static const gchar *
member_string(JsonObject *obj, const gchar *name)
{
	JsonNode *node = member(obj, name);
	return node_is_string(node) ? json_node_get_string(node) : NULL;
}

static gboolean
fail(GError **error, const gchar *param, const gchar *message)
{
	confab_error_set(error, CONFAB_ERROR_INVALID_VALUE, param, message);
	return FALSE;
}

/* ---------- input items ---------- */

/* A conversation's record of an agent's tools and of a person's decisions
 * (confab_responses_request_parse_items()): a message of its own each. */
static const gchar *const mcp_item_types[] = {"mcp_call",
					      "mcp_approval_request",
					      "mcp_approval_response",
					      NULL};

typedef struct {
	ConfabResponsesRequest *request;
	JsonArray *messages;  /* unowned: the Chat Completions messages */
	JsonObject *calls;    /* unowned: the assistant message taking function calls */
	GArray *origin;	      /* owned: guint, the input item of each message */
	guint item;	      /* the input item being translated; G_MAXUINT: a string */
	GHashTable *resolved; /* unowned, nullable: item_reference id -> JsonObject item */
	GString *reasoning;   /* owned: a reasoning item's text, for the message after it */
	const gchar *name;    /* the items' member: input, or a conversation's items */
	gboolean items;	      /* a conversation's items, not a response's input */
} Input;

/* The reasoning before an assistant's message or calls goes back with them
 * (as `reasoning_content`, which the Chat Completions parser keeps); any
 * other item after it drops it. */
static void
take_reasoning(Input *in, JsonObject *msg)
{
	if (msg != NULL && in->reasoning->len > 0 &&
	    !json_object_has_member(msg, "reasoning_content"))
		json_object_set_string_member(msg, "reasoning_content", in->reasoning->str);
	g_string_truncate(in->reasoning, 0);
}

/* A client's copy of an earlier answer's reasoning item: its summary's or
 * its content's text (Confab writes the whole reasoning as its summary).
 * Parts of other shapes are a client's own business, not an error. */
static void
translate_reasoning_item(Input *in, JsonObject *item)
{
	static const gchar *const lists[] = {"content", "summary", NULL};

	g_string_truncate(in->reasoning, 0);
	for (guint l = 0; lists[l] != NULL && in->reasoning->len == 0; l++) {
		JsonNode *node = member(item, lists[l]);
		JsonArray *parts;

		if (node == NULL || !JSON_NODE_HOLDS_ARRAY(node))
			continue;
		parts = json_node_get_array(node);
		for (guint i = 0; i < json_array_get_length(parts); i++) {
			JsonNode *pnode = json_array_get_element(parts, i);
			const gchar *text = JSON_NODE_HOLDS_OBJECT(pnode)
						? member_string(json_node_get_object(pnode), "text")
						: NULL;
			if (text == NULL || *text == '\0')
				continue;
			if (in->reasoning->len > 0)
				g_string_append_c(in->reasoning, '\n');
			g_string_append(in->reasoning, text);
		}
	}
}

static void
add_message(Input *in, JsonObject *msg)
{
	json_array_add_object_element(in->messages, msg);
	g_array_append_val(in->origin, in->item);
}

/* A content part of a message item, as a Chat Completions part. */
static JsonObject *
translate_part(const gchar *role, JsonObject *part, const gchar *param, GError **error)
{
	g_autofree gchar *tparam = g_strdup_printf("%s.type", param);
	const gchar *type = member_string(part, "type");
	JsonObject *out;

	if (type == NULL) {
		fail(error, tparam, "A content part needs a string type");
		return NULL;
	}
	if (g_str_equal(type, "input_text") || g_str_equal(type, "output_text")) {
		JsonNode *text = member(part, "text");
		if (!node_is_string(text)) {
			g_autofree gchar *p = g_strdup_printf("%s.text", param);
			fail(error, p, "A text part needs a string text");
			return NULL;
		}
		out = json_object_new();
		json_object_set_string_member(out, "type", "text");
		json_object_set_member(out, "text", json_node_copy(text));
		return out;
	}
	if (g_str_equal(type, "refusal") && g_str_equal(role, "assistant")) {
		JsonNode *text = member(part, "refusal");
		if (!node_is_string(text)) {
			g_autofree gchar *p = g_strdup_printf("%s.refusal", param);
			fail(error, p, "A refusal part needs a string refusal");
			return NULL;
		}
		out = json_object_new();
		json_object_set_string_member(out, "type", "refusal");
		json_object_set_member(out, "refusal", json_node_copy(text));
		return out;
	}
	if (g_str_equal(type, "input_image")) {
		JsonNode *url = member(part, "image_url");
		JsonNode *detail = member(part, "detail");
		JsonObject *image;
		if (!node_is_string(url)) {
			g_autofree gchar *p = g_strdup_printf("%s.image_url", param);
			fail(error,
			     p,
			     "An input_image part needs an image_url (an http(s) or data URL); "
			     "file_id is not supported");
			return NULL;
		}
		image = json_object_new();
		json_object_set_member(image, "url", json_node_copy(url));
		if (!node_is_null(detail))
			json_object_set_member(image, "detail", json_node_copy(detail));
		out = json_object_new();
		json_object_set_string_member(out, "type", "image_url");
		json_object_set_object_member(out, "image_url", image);
		return out;
	}
	if (g_str_equal(type, "input_file")) {
		JsonObject *file = json_object_new();
		static const gchar *const keys[] = {"file_data", "file_id", "filename", NULL};
		if (!node_is_null(member(part, "file_url"))) {
			g_autofree gchar *p = g_strdup_printf("%s.file_url", param);
			json_object_unref(file);
			fail(error, p, "file_url is not supported; send the file as file_data");
			return NULL;
		}
		for (guint i = 0; keys[i] != NULL; i++) {
			JsonNode *node = member(part, keys[i]);
			if (!node_is_null(node))
				json_object_set_member(file, keys[i], json_node_copy(node));
		}
		out = json_object_new();
		json_object_set_string_member(out, "type", "file");
		json_object_set_object_member(out, "file", file);
		return out;
	}
	confab_error_set_printf(error,
				CONFAB_ERROR_INVALID_VALUE,
				tparam,
				"Content parts of type '%s' are not supported in %s messages",
				type,
				role);
	return NULL;
}

static gboolean
translate_message(Input *in, JsonObject *item, const gchar *param, GError **error)
{
	static const gchar *const roles[] = {"user", "system", "developer", "assistant", NULL};
	const gchar *role = member_string(item, "role");
	JsonNode *content = member(item, "content");
	JsonObject *msg;

	if (role == NULL || !g_strv_contains(roles, role)) {
		g_autofree gchar *p = g_strdup_printf("%s.role", param);
		return fail(error, p, "role must be one of user, system, developer, assistant");
	}
	msg = json_object_new();
	json_object_set_string_member(msg, "role", role);
	if (node_is_string(content)) {
		json_object_set_member(msg, "content", json_node_copy(content));
	} else if (content != NULL && JSON_NODE_HOLDS_ARRAY(content)) {
		JsonArray *parts = json_node_get_array(content);
		JsonArray *out = json_array_new();
		json_object_set_array_member(msg, "content", out);
		for (guint i = 0; i < json_array_get_length(parts); i++) {
			JsonNode *pnode = json_array_get_element(parts, i);
			g_autofree gchar *pparam = g_strdup_printf("%s.content[%u]", param, i);
			JsonObject *part;
			if (!JSON_NODE_HOLDS_OBJECT(pnode)) {
				json_object_unref(msg);
				return fail(error, pparam, "A content part must be an object");
			}
			part = translate_part(role, json_node_get_object(pnode), pparam, error);
			if (part == NULL) {
				json_object_unref(msg);
				return FALSE;
			}
			json_array_add_object_element(out, part);
		}
	} else {
		g_autofree gchar *p = g_strdup_printf("%s.content", param);
		json_object_unref(msg);
		return fail(error, p, "content must be a string or an array of content parts");
	}
	add_message(in, msg);
	/* function calls right after an assistant's text join its message */
	in->calls = g_str_equal(role, "assistant") ? msg : NULL;
	take_reasoning(in, in->calls);
	return TRUE;
}

/* The name a namespace's tool has upstream: the one this request's tools
 * gave it, else NAMESPACE__NAME. */
static gchar *
namespaced_name(ConfabResponsesRequest *request, const gchar *ns, const gchar *name)
{
	g_autoptr(GList) flats = json_object_get_members(request->namespaced);

	for (GList *l = flats; l != NULL; l = l->next) {
		JsonObject *origin = json_object_get_object_member(request->namespaced, l->data);
		if (g_strcmp0(member_string(origin, "namespace"), ns) == 0 &&
		    g_strcmp0(member_string(origin, "name"), name) == 0)
			return g_strdup(l->data);
	}
	return g_strdup_printf("%s__%s", ns, name);
}

static gboolean
translate_function_call(Input *in, JsonObject *item, const gchar *param, GError **error)
{
	const gchar *call_id = member_string(item, "call_id");
	const gchar *name = member_string(item, "name");
	const gchar *arguments = member_string(item, "arguments");
	JsonNode *ns = member(item, "namespace");
	g_autofree gchar *flat = NULL;
	JsonObject *call, *fn;
	JsonNode *calls;

	if (call_id == NULL || name == NULL || arguments == NULL)
		return fail(error,
			    param,
			    "A function_call item needs string call_id, name and arguments");
	if (!node_is_null(ns)) {
		if (!node_is_string(ns)) {
			g_autofree gchar *p = g_strdup_printf("%s.namespace", param);
			return fail(error, p, "namespace must be a string");
		}
		flat = namespaced_name(in->request, json_node_get_string(ns), name);
		name = flat;
	}
	if (in->calls == NULL) {
		in->calls = json_object_new();
		json_object_set_string_member(in->calls, "role", "assistant");
		json_object_set_null_member(in->calls, "content");
		add_message(in, in->calls);
	}
	take_reasoning(in, in->calls);
	calls = member(in->calls, "tool_calls");
	if (calls == NULL) {
		json_object_set_array_member(in->calls, "tool_calls", json_array_new());
		calls = member(in->calls, "tool_calls");
	}
	fn = json_object_new();
	json_object_set_string_member(fn, "name", name);
	json_object_set_string_member(fn, "arguments", arguments);
	call = json_object_new();
	json_object_set_string_member(call, "id", call_id);
	json_object_set_string_member(call, "type", "function");
	json_object_set_object_member(call, "function", fn);
	json_array_add_object_element(json_node_get_array(calls), call);
	g_ptr_array_add(in->request->input_calls, g_strdup(call_id));
	return TRUE;
}

static gboolean
translate_function_call_output(Input *in, JsonObject *item, const gchar *param, GError **error)
{
	const gchar *call_id = member_string(item, "call_id");
	JsonNode *output = member(item, "output");
	g_autoptr(GString) text = g_string_new(NULL);
	JsonObject *msg;

	if (call_id == NULL) {
		g_autofree gchar *p = g_strdup_printf("%s.call_id", param);
		return fail(error, p, "A function_call_output item needs a string call_id");
	}
	if (node_is_string(output)) {
		g_string_append(text, json_node_get_string(output));
	} else if (output != NULL && JSON_NODE_HOLDS_ARRAY(output)) {
		/* the text parts of an output given as content */
		JsonArray *parts = json_node_get_array(output);
		for (guint i = 0; i < json_array_get_length(parts); i++) {
			JsonNode *pnode = json_array_get_element(parts, i);
			const gchar *t = JSON_NODE_HOLDS_OBJECT(pnode)
					     ? member_string(json_node_get_object(pnode), "text")
					     : NULL;
			if (t == NULL) {
				g_autofree gchar *p = g_strdup_printf("%s.output[%u]", param, i);
				return fail(error, p, "Only text parts are supported in output");
			}
			g_string_append(text, t);
		}
	} else {
		g_autofree gchar *p = g_strdup_printf("%s.output", param);
		return fail(error, p, "output must be a string");
	}
	msg = json_object_new();
	json_object_set_string_member(msg, "role", "tool");
	json_object_set_string_member(msg, "tool_call_id", call_id);
	json_object_set_string_member(msg, "content", text->str);
	add_message(in, msg);
	g_ptr_array_add(in->request->call_ids, g_strdup(call_id));
	in->calls = NULL;
	take_reasoning(in, NULL);
	return TRUE;
}

static void
approval_response_free(ConfabApprovalResponse *response)
{
	g_free(response->approval_request_id);
	g_free(response->reason);
	g_free(response);
}

/* A person's answer to an approval request of the response this one
 * continues: kept for the door, which checks it against that response. */
static gboolean
translate_approval_response(Input *in, JsonObject *item, const gchar *param, GError **error)
{
	const gchar *id = member_string(item, "approval_request_id");
	JsonNode *approve = member(item, "approve");
	JsonNode *reason = member(item, "reason");
	ConfabApprovalResponse *response;

	if (id == NULL) {
		g_autofree gchar *p = g_strdup_printf("%s.approval_request_id", param);
		return fail(error,
			    p,
			    "An mcp_approval_response item needs a string approval_request_id");
	}
	if (!node_holds(approve, G_TYPE_BOOLEAN)) {
		g_autofree gchar *p = g_strdup_printf("%s.approve", param);
		return fail(error, p, "An mcp_approval_response item needs a boolean approve");
	}
	if (!node_is_null(reason) && !node_is_string(reason)) {
		g_autofree gchar *p = g_strdup_printf("%s.reason", param);
		return fail(error, p, "reason must be a string");
	}
	for (guint i = 0; i < in->request->approval_responses->len; i++) {
		ConfabApprovalResponse *other =
		    g_ptr_array_index(in->request->approval_responses, i);
		if (g_str_equal(other->approval_request_id, id)) {
			g_autofree gchar *p = g_strdup_printf("%s.approval_request_id", param);
			confab_error_set_printf(error,
						CONFAB_ERROR_INVALID_VALUE,
						p,
						"The approval request '%s' is answered twice",
						id);
			return FALSE;
		}
	}
	response = g_new0(ConfabApprovalResponse, 1);
	response->approval_request_id = g_strdup(id);
	response->approve = json_node_get_boolean(approve);
	response->reason = node_is_string(reason) ? g_strdup(json_node_get_string(reason)) : NULL;
	g_ptr_array_add(in->request->approval_responses, response);
	return TRUE;
}

static gboolean
translate_input(Input *in, JsonNode *input, GError **error)
{
	JsonArray *items;

	if (node_is_string(input)) {
		JsonObject *msg = json_object_new();
		json_object_set_string_member(msg, "role", "user");
		json_object_set_member(msg, "content", json_node_copy(input));
		add_message(in, msg);
		return TRUE;
	}
	if (input == NULL || !JSON_NODE_HOLDS_ARRAY(input))
		return fail(error, "input", "input must be a string or an array of input items");
	items = json_node_get_array(input);
	for (guint i = 0; i < json_array_get_length(items); i++) {
		JsonNode *node = json_array_get_element(items, i);
		g_autofree gchar *param = g_strdup_printf("%s[%u]", in->name, i);
		JsonObject *item;
		const gchar *type;

		if (!JSON_NODE_HOLDS_OBJECT(node))
			return fail(error, param, "Each input item must be an object");
		in->item = i;
		item = json_node_get_object(node);
		type = member_string(item, "type");
		if (type == NULL && !node_is_null(member(item, "type"))) {
			g_autofree gchar *p = g_strdup_printf("%s.type", param);
			return fail(error, p, "type must be a string");
		}
		/* a conversation's mcp item is a message of its own, made apart:
		 * calls on either side of it do not join */
		if (in->items && type != NULL && g_strv_contains(mcp_item_types, type)) {
			in->calls = NULL;
			g_string_truncate(in->reasoning, 0);
			continue;
		}
		/* an earlier output item, by its id: translated as that item */
		if (g_strcmp0(type, "item_reference") == 0) {
			const gchar *id = member_string(item, "id");
			JsonObject *target;
			if (id == NULL) {
				g_autofree gchar *p = g_strdup_printf("%s.id", param);
				return fail(error, p, "An item_reference needs a string id");
			}
			if (in->resolved == NULL) {
				if (!g_ptr_array_find_with_equal_func(in->request->references,
								      id,
								      g_str_equal,
								      NULL))
					g_ptr_array_add(in->request->references, g_strdup(id));
				continue;
			}
			target = g_hash_table_lookup(in->resolved, id);
			if (target == NULL) {
				g_autofree gchar *p = g_strdup_printf("%s.id", param);
				confab_error_set_printf(
				    error,
				    CONFAB_ERROR_INVALID_VALUE,
				    p,
				    "No item '%s' in a stored response of yours",
				    id);
				return FALSE;
			}
			item = target;
			type = member_string(item, "type");
			/* an agent's tool call ran inside its response: the model
			 * is not given it again */
			if (g_strcmp0(type, "mcp_call") == 0)
				continue;
		}
		/* an item with a role and no type is a message */
		if (type == NULL || g_str_equal(type, "message")) {
			if (!translate_message(in, item, param, error))
				return FALSE;
		} else if (g_str_equal(type, "function_call")) {
			if (!translate_function_call(in, item, param, error))
				return FALSE;
		} else if (g_str_equal(type, "function_call_output")) {
			if (!translate_function_call_output(in, item, param, error))
				return FALSE;
		} else if (g_str_equal(type, "mcp_approval_response")) {
			if (!translate_approval_response(in, item, param, error))
				return FALSE;
		} else if (g_str_equal(type, "reasoning")) {
			translate_reasoning_item(in, item);
		} else {
			g_autofree gchar *p = g_strdup_printf("%s.type", param);
			confab_error_set_printf(error,
						CONFAB_ERROR_INVALID_VALUE,
						p,
						"Input items of type '%s' are not supported",
						type);
			return FALSE;
		}
	}
	return TRUE;
}

/* ---------- parameters ---------- */

/* One client function tool as a Chat Completions tool named @name; its echo
 * (@echo, the client's object) gets the members the response object
 * requires. */
static gboolean
add_function_tool(JsonArray *out,
		  JsonObject *tool,
		  const gchar *name,
		  JsonObject *echo,
		  const gchar *param,
		  GError **error)
{
	static const gchar *const keys[] = {"description", "parameters", "strict", NULL};
	JsonObject *fn, *wrapper;

	if (member_string(tool, "name") == NULL) {
		g_autofree gchar *p = g_strdup_printf("%s.name", param);
		return fail(error, p, "A function tool needs a string name");
	}
	fn = json_object_new();
	json_object_set_string_member(fn, "name", name);
	for (guint k = 0; keys[k] != NULL; k++) {
		JsonNode *v = member(tool, keys[k]);
		if (!node_is_null(v))
			json_object_set_member(fn, keys[k], json_node_copy(v));
	}
	wrapper = json_object_new();
	json_object_set_string_member(wrapper, "type", "function");
	json_object_set_object_member(wrapper, "function", fn);
	json_array_add_object_element(out, wrapper);
	/* what was used: the upstream's default when the client said nothing */
	if (node_is_null(member(echo, "description")))
		json_object_set_null_member(echo, "description");
	if (node_is_null(member(echo, "parameters")))
		json_object_set_null_member(echo, "parameters");
	if (!node_holds(member(echo, "strict"), G_TYPE_BOOLEAN))
		json_object_set_boolean_member(echo, "strict", FALSE);
	return TRUE;
}

static gboolean
tool_name_taken(JsonArray *out, const gchar *name)
{
	for (guint i = 0; i < json_array_get_length(out); i++) {
		JsonObject *fn =
		    confab_json_get_object(json_array_get_object_element(out, i), "function");
		if (g_strcmp0(member_string(fn, "name"), name) == 0)
			return TRUE;
	}
	return FALSE;
}

/* A namespace: a group of the client's function tools, offered upstream as
 * function tools named NAMESPACE__NAME (made unique), mapped back by
 * @request->namespaced. */
static gboolean
add_namespace(ConfabResponsesRequest *request,
	      JsonArray *out,
	      JsonObject *ns,
	      GHashTable *own_names,
	      const gchar *param,
	      GError **error)
{
	const gchar *ns_name = member_string(ns, "name");
	JsonNode *tools = member(ns, "tools");
	JsonArray *arr;

	if (ns_name == NULL || *ns_name == '\0') {
		g_autofree gchar *p = g_strdup_printf("%s.name", param);
		return fail(error, p, "A namespace tool needs a string name");
	}
	if (tools == NULL || !JSON_NODE_HOLDS_ARRAY(tools)) {
		g_autofree gchar *p = g_strdup_printf("%s.tools", param);
		return fail(error, p, "A namespace tool needs an array of function tools");
	}
	arr = json_node_get_array(tools);
	for (guint i = 0; i < json_array_get_length(arr); i++) {
		JsonNode *node = json_array_get_element(arr, i);
		g_autofree gchar *p = g_strdup_printf("%s.tools[%u]", param, i);
		g_autofree gchar *flat = NULL;
		JsonObject *tool, *origin;
		const gchar *name;

		if (!JSON_NODE_HOLDS_OBJECT(node) ||
		    g_strcmp0(member_string(json_node_get_object(node), "type"), "function") != 0)
			return fail(error, p, "A namespace holds function tools only");
		tool = json_node_get_object(node);
		name = member_string(tool, "name");
		if (name == NULL) {
			g_autofree gchar *pn = g_strdup_printf("%s.name", p);
			return fail(error, pn, "A function tool needs a string name");
		}
		flat = g_strdup_printf("%s__%s", ns_name, name);
		for (guint n = 2;
		     tool_name_taken(out, flat) || g_hash_table_contains(own_names, flat);
		     n++) {
			g_free(flat);
			flat = g_strdup_printf("%s__%s_%u", ns_name, name, n);
		}
		if (!add_function_tool(out, tool, flat, tool, p, error))
			return FALSE;
		origin = json_object_new();
		json_object_set_string_member(origin, "namespace", ns_name);
		json_object_set_string_member(origin, "name", name);
		json_object_set_object_member(request->namespaced, flat, origin);
	}
	return TRUE;
}

/* Client function tools (and namespaces of them), as Chat Completions
 * tools; hosted tools are not Confab's to run. @echo_tools: the echo's copy
 * of the array. */
static gboolean
translate_tools(ConfabResponsesRequest *request,
		JsonObject *chat,
		JsonNode *tools,
		JsonArray *echo_tools,
		GError **error)
{
	g_autoptr(GHashTable) own_names = g_hash_table_new(g_str_hash, g_str_equal);
	JsonArray *arr, *out;

	if (node_is_null(tools))
		return TRUE;
	if (!JSON_NODE_HOLDS_ARRAY(tools))
		return fail(error, "tools", "tools must be an array of tools");
	arr = json_node_get_array(tools);
	out = json_array_new();
	json_object_set_array_member(chat, "tools", out);
	/* the client's own names first: a flattened name never takes one */
	for (guint i = 0; i < json_array_get_length(arr); i++) {
		JsonNode *node = json_array_get_element(arr, i);
		JsonObject *tool = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
		if (tool != NULL && g_strcmp0(member_string(tool, "type"), "function") == 0 &&
		    member_string(tool, "name") != NULL)
			g_hash_table_add(own_names, (gpointer)member_string(tool, "name"));
	}
	for (guint i = 0; i < json_array_get_length(arr); i++) {
		JsonNode *node = json_array_get_element(arr, i);
		g_autofree gchar *param = g_strdup_printf("tools[%u]", i);
		JsonObject *tool, *echo;
		const gchar *type;

		if (!JSON_NODE_HOLDS_OBJECT(node))
			return fail(error, param, "A tool must be an object");
		tool = json_node_get_object(node);
		/* the echo holds the same tools, as the client sent them */
		echo = json_array_get_object_element(echo_tools, i);
		type = member_string(tool, "type");
		if (g_strcmp0(type, "namespace") == 0) {
			if (!add_namespace(request, out, echo, own_names, param, error))
				return FALSE;
			continue;
		}
		if (type == NULL || !g_str_equal(type, "function")) {
			g_autofree gchar *p = g_strdup_printf("%s.type", param);
			confab_error_set_printf(
			    error,
			    CONFAB_ERROR_INVALID_VALUE,
			    p,
			    "Tools of type '%s' are not supported: '%s' is a "
			    "hosted tool. Confab runs the agent's own tools (MCP) "
			    "and passes on the client's function tools (and "
			    "namespaces of them), no hosted tools",
			    type != NULL ? type : "(none)",
			    type != NULL ? type : "(none)");
			return FALSE;
		}
		if (!add_function_tool(out, tool, member_string(tool, "name"), echo, param, error))
			return FALSE;
	}
	return TRUE;
}

static gboolean
translate_tool_choice(JsonObject *chat, JsonNode *choice, GError **error)
{
	JsonObject *obj, *out, *fn;
	const gchar *type, *name;

	if (node_is_null(choice))
		return TRUE;
	if (node_is_string(choice)) {
		const gchar *s = json_node_get_string(choice);
		if (!g_strv_contains((const gchar *const[]){"auto", "none", "required", NULL}, s))
			return fail(error,
				    "tool_choice",
				    "tool_choice must be auto, none or required");
		json_object_set_string_member(chat, "tool_choice", s);
		return TRUE;
	}
	if (!JSON_NODE_HOLDS_OBJECT(choice))
		return fail(error, "tool_choice", "tool_choice must be a string or an object");
	obj = json_node_get_object(choice);
	type = member_string(obj, "type");
	name = member_string(obj, "name");
	if (g_strcmp0(type, "function") != 0 || name == NULL)
		return fail(error,
			    "tool_choice",
			    "tool_choice must name a function tool: {\"type\":\"function\","
			    "\"name\":…}");
	fn = json_object_new();
	json_object_set_string_member(fn, "name", name);
	out = json_object_new();
	json_object_set_string_member(out, "type", "function");
	json_object_set_object_member(out, "function", fn);
	json_object_set_object_member(chat, "tool_choice", out);
	return TRUE;
}

/* text.format → response_format; text.verbosity as it is */
static gboolean
translate_text(JsonObject *chat, JsonNode *text, GError **error)
{
	JsonObject *obj, *format;
	JsonNode *fnode, *verbosity;
	const gchar *type;

	if (node_is_null(text))
		return TRUE;
	if (!JSON_NODE_HOLDS_OBJECT(text))
		return fail(error, "text", "text must be an object");
	obj = json_node_get_object(text);
	verbosity = member(obj, "verbosity");
	if (!node_is_null(verbosity))
		json_object_set_member(chat, "verbosity", json_node_copy(verbosity));
	fnode = member(obj, "format");
	if (node_is_null(fnode))
		return TRUE;
	if (!JSON_NODE_HOLDS_OBJECT(fnode))
		return fail(error, "text.format", "text.format must be an object");
	format = json_node_get_object(fnode);
	type = member_string(format, "type");
	if (g_strcmp0(type, "text") == 0)
		return TRUE;
	if (g_strcmp0(type, "json_object") == 0) {
		JsonObject *rf = json_object_new();
		json_object_set_string_member(rf, "type", "json_object");
		json_object_set_object_member(chat, "response_format", rf);
		return TRUE;
	}
	if (g_strcmp0(type, "json_schema") == 0) {
		static const gchar *const keys[] = {"name",
						    "schema",
						    "strict",
						    "description",
						    NULL};
		JsonObject *rf = json_object_new();
		JsonObject *schema = json_object_new();
		for (guint k = 0; keys[k] != NULL; k++) {
			JsonNode *v = member(format, keys[k]);
			if (!node_is_null(v))
				json_object_set_member(schema, keys[k], json_node_copy(v));
		}
		json_object_set_string_member(rf, "type", "json_schema");
		json_object_set_object_member(rf, "json_schema", schema);
		json_object_set_object_member(chat, "response_format", rf);
		return TRUE;
	}
	return fail(error,
		    "text.format.type",
		    "text.format.type must be text, json_object or json_schema");
}

static gboolean
translate_reasoning(JsonObject *chat, JsonNode *reasoning, GError **error)
{
	JsonNode *effort;

	if (node_is_null(reasoning))
		return TRUE;
	if (!JSON_NODE_HOLDS_OBJECT(reasoning))
		return fail(error, "reasoning", "reasoning must be an object");
	effort = member(json_node_get_object(reasoning), "effort");
	if (!node_is_null(effort))
		json_object_set_member(chat, "reasoning_effort", json_node_copy(effort));
	return TRUE;
}

/* The members of a Responses body that mean the same to Chat Completions:
 * forwarded upstream as they are. Everything else is either translated
 * (input, instructions, tools, tool_choice, text, reasoning,
 * max_output_tokens, metadata, stream) or Confab's own (client_metadata,
 * include, conversation, previous_response_id, store, background,
 * truncation, max_tool_calls, top_logprobs, stream_options, prompt, and any
 * member Chat Completions does not know): never forwarded, so that a
 * strict upstream does not refuse the call and the client's ids stay here. */
static const gchar *const forwarded_members[] = {
    "temperature",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "parallel_tool_calls",
    "user",
    "seed",
    "prompt_cache_key",
    "prompt_cache_retention",
    "safety_identifier",
    "service_tier",
    "logit_bias",
    NULL,
};

/* What the response object repeats of the request. */
static const gchar *const echo_members[] = {
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "text",
    "reasoning",
    "temperature",
    "top_p",
    "max_output_tokens",
    "user",
    "metadata",
    "presence_penalty",
    "frequency_penalty",
    "top_logprobs",
    "max_tool_calls",
    "service_tier",
    "safety_identifier",
    "prompt_cache_key",
    NULL,
};

static gboolean
parse_conversation(ConfabResponsesRequest *request, JsonObject *root, GError **error)
{
	JsonNode *conversation = member(root, "conversation");
	JsonNode *previous = member(root, "previous_response_id");
	const gchar *id = NULL;

	if (!node_is_null(previous)) {
		if (!node_is_string(previous) ||
		    !g_str_has_prefix(json_node_get_string(previous), "resp_"))
			return fail(error,
				    "previous_response_id",
				    "previous_response_id must be a response id (resp_…)");
		request->previous_response_id = g_strdup(json_node_get_string(previous));
	}
	if (node_is_null(conversation))
		return TRUE;
	if (node_is_string(conversation))
		id = json_node_get_string(conversation);
	else if (JSON_NODE_HOLDS_OBJECT(conversation))
		id = member_string(json_node_get_object(conversation), "id");
	if (id == NULL)
		return fail(error,
			    "conversation",
			    "conversation must be a conversation id (cts_…) or {\"id\":…}");
	if (request->previous_response_id != NULL)
		return fail(error,
			    "conversation",
			    "previous_response_id and conversation cannot be used together");
	request->conversation = g_strdup(id);
	return TRUE;
}

static JsonArray *
echo_array(JsonObject *echo, const gchar *name)
{
	JsonNode *node = member(echo, name);
	return node != NULL && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
}

static gboolean
parse_own(ConfabResponsesRequest *request, JsonObject *root, JsonObject *chat, GError **error)
{
	JsonNode *node;

	if (!node_is_null(member(root, "prompt")))
		return fail(error, "prompt", "Prompt templates are not supported");

	node = member(root, "store");
	if (!node_is_null(node)) {
		if (!node_holds(node, G_TYPE_BOOLEAN))
			return fail(error, "store", "store must be a boolean");
		request->store = json_node_get_boolean(node);
	}
	node = member(root, "background");
	if (!node_is_null(node) && !node_holds(node, G_TYPE_BOOLEAN))
		return fail(error, "background", "background must be a boolean");
	request->background = !node_is_null(node) && json_node_get_boolean(node);
	if (request->background && !request->store)
		return fail(error,
			    "background",
			    "A background response must be stored: it cannot be used with "
			    "store: false");
	node = member(root, "instructions");
	if (!node_is_null(node)) {
		if (!node_is_string(node))
			return fail(error, "instructions", "instructions must be a string");
		if (*json_node_get_string(node) != '\0')
			request->instructions = g_strdup(json_node_get_string(node));
	}
	node = member(root, "max_output_tokens");
	if (!node_is_null(node))
		json_object_set_member(chat, "max_tokens", json_node_copy(node));
	node = member(root, "stream");
	if (!node_is_null(node))
		json_object_set_member(chat, "stream", json_node_copy(node));
	node = member(root, "metadata");
	if (!node_is_null(node)) {
		if (!JSON_NODE_HOLDS_OBJECT(node))
			return fail(error, "metadata", "metadata must be an object");
		json_object_set_member(chat, "metadata", json_node_copy(node));
	}
	/* conversation: the Chat Completions request continues it */
	if (request->conversation != NULL) {
		JsonObject *metadata = confab_json_get_object(chat, "metadata");
		const gchar *session = NULL;
		if (metadata == NULL) {
			metadata = json_object_new();
			json_object_set_object_member(chat, "metadata", metadata);
		}
		session = confab_json_get_string(metadata, "session_id");
		if (session != NULL && !g_str_equal(session, request->conversation))
			return fail(error,
				    "conversation",
				    "conversation and metadata.session_id name different "
				    "conversations");
		json_object_set_string_member(metadata, "session_id", request->conversation);
	}
	if (!translate_tools(request,
			     chat,
			     member(root, "tools"),
			     echo_array(request->echo, "tools"),
			     error) ||
	    !translate_tool_choice(chat, member(root, "tool_choice"), error) ||
	    !translate_text(chat, member(root, "text"), error) ||
	    !translate_reasoning(chat, member(root, "reasoning"), error))
		return FALSE;
	return TRUE;
}

static void
copy_members(JsonObject *root, JsonObject *chat, JsonObject *echo)
{
	g_autoptr(GList) names = json_object_get_members(root);

	for (GList *l = names; l != NULL; l = l->next) {
		const gchar *name = l->data;
		JsonNode *node = member(root, name);
		if (g_strv_contains(echo_members, name) && !node_is_null(node))
			json_object_set_member(echo, name, json_node_copy(node));
		if (g_strv_contains(forwarded_members, name))
			json_object_set_member(chat, name, json_node_copy(node));
	}
}

static ConfabResponsesRequest *
confab_responses_request_new(void)
{
	ConfabResponsesRequest *request = g_new0(ConfabResponsesRequest, 1);
	request->store = TRUE;
	request->echo = json_object_new();
	request->namespaced = json_object_new();
	request->call_ids = g_ptr_array_new_with_free_func(g_free);
	request->input_calls = g_ptr_array_new_with_free_func(g_free);
	request->approval_responses =
	    g_ptr_array_new_with_free_func((GDestroyNotify)approval_response_free);
	request->references = g_ptr_array_new_with_free_func(g_free);
	return request;
}

/* The chat parser's params name messages[N]: the client sent input items,
 * and item N is not always message N. */
static void
rename_param(GError *error, GArray *origin, const gchar *name)
{
	const gchar *param = confab_error_get_param(error);
	g_autofree gchar *renamed = NULL;
	const gchar *rest;
	gchar *end = NULL;
	guint64 n;

	if (param == NULL || !g_str_has_prefix(param, "messages"))
		return;
	rest = param + strlen("messages");
	if (rest[0] == '[') {
		n = g_ascii_strtoull(rest + 1, &end, 10);
		if (end != NULL && *end == ']' && n < origin->len) {
			guint item = g_array_index(origin, guint, n);
			rest = end + 1;
			/* a string input: its one message is the input */
			if (item == G_MAXUINT) {
				if (g_str_has_prefix(rest, ".content"))
					rest += strlen(".content");
				renamed = g_strconcat(name, rest, NULL);
			} else {
				renamed = g_strdup_printf("%s[%u]%s", name, item, rest);
			}
		}
	}
	if (renamed == NULL)
		renamed = g_strconcat(name, rest, NULL);
	confab_error_set_param(error, renamed);
}

/* Translates the input (with @resolved references, if any) and checks the
 * Chat Completions request it makes. */
static gboolean
build_chat(ConfabResponsesRequest *request, GHashTable *resolved, GError **error)
{
	g_autoptr(JsonObject) chat = json_object_ref(request->chat_params);
	g_autoptr(JsonNode) chat_node = NULL;
	g_autofree gchar *chat_json = NULL;
	g_autoptr(GError) chat_error = NULL;
	JsonArray *messages = json_array_new();
	g_autoptr(GArray) origin = g_array_new(FALSE, FALSE, sizeof(guint));
	g_autoptr(GString) reasoning = g_string_new(NULL);
	Input in =
	    {request, messages, NULL, origin, G_MAXUINT, resolved, reasoning, "input", FALSE};
	ConfabChatLimits chat_limits = request->limits;

	json_object_set_array_member(chat, "messages", messages);
	g_ptr_array_set_size(request->call_ids, 0);
	g_ptr_array_set_size(request->input_calls, 0);
	g_ptr_array_set_size(request->approval_responses, 0);
	if (!translate_input(&in, member(json_node_get_object(request->root), "input"), error))
		return FALSE;
	if (resolved == NULL && request->references->len > 0)
		return TRUE; /* the caller resolves them, then comes back */
	if (json_array_get_length(messages) == 0 && request->approval_responses->len == 0)
		return fail(error, "input", "input must not be empty");
	/* answering approvals alone is a whole input: the answers are the
	 * door's to check against the response continued */
	chat_limits.no_messages_ok = request->approval_responses->len > 0;

	chat_node = json_node_init_object(json_node_alloc(), chat);
	chat_json = confab_json_to_string(chat_node);
	/* the translation adds two levels at most (input → messages) */
	chat_limits.max_depth += 2;
	request->chat =
	    confab_chat_request_parse(chat_json, strlen(chat_json), &chat_limits, &chat_error);
	if (request->chat == NULL) {
		rename_param(chat_error, origin, "input");
		g_propagate_error(error, g_steal_pointer(&chat_error));
		return FALSE;
	}
	g_clear_pointer(&request->root, json_node_unref);
	g_clear_pointer(&request->chat_params, json_object_unref);
	return TRUE;
}

/**
 * confab_responses_request_parse:
 * @data: the request body
 * @len: its length
 * @limits: the limits to enforce, the same as for chat completions
 * @error: return location for a #GError; a CONFAB_ERROR with a param
 *
 * Returns: (transfer full): the validated request; when its input has
 *   `item_reference` items (@references not empty), its @chat is %NULL
 *   until confab_responses_request_resolve() gives the items they name
 */
ConfabResponsesRequest *
confab_responses_request_parse(const gchar *data,
			       gsize len,
			       const ConfabChatLimits *limits,
			       GError **error)
{
	g_autoptr(ConfabResponsesRequest) request = confab_responses_request_new();
	JsonObject *root;
	JsonNode *model;

	request->limits = *limits;
	request->root = confab_json_parse(data, len, limits->max_depth, error);
	if (request->root == NULL)
		return NULL;
	if (!JSON_NODE_HOLDS_OBJECT(request->root)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_JSON,
				 NULL,
				 "The request body must be a JSON object");
		return NULL;
	}
	root = json_node_get_object(request->root);
	model = member(root, "model");
	if (node_is_null(model)) {
		confab_error_set(error,
				 CONFAB_ERROR_MISSING_MODEL,
				 "model",
				 "You must provide a model parameter: the agent id");
		return NULL;
	}
	request->chat_params = json_object_new();
	json_object_set_member(request->chat_params, "model", json_node_copy(model));
	copy_members(root, request->chat_params, request->echo);
	if (!parse_conversation(request, root, error) ||
	    !parse_own(request, root, request->chat_params, error))
		return NULL;
	if (!build_chat(request, NULL, error))
		return NULL;
	return g_steal_pointer(&request);
}

/**
 * confab_responses_request_resolve:
 * @request: a request whose @references are not resolved yet
 * @items: (element-type utf8 JsonObject): the output items of the caller's
 *   stored responses, by id, that @references name (those not found are
 *   missing)
 * @error: return location for a #GError
 *
 * Translates the input with each `item_reference` replaced by the item it
 * names (an unknown one is 400 `invalid_value`).
 *
 * Returns: %TRUE when @request->chat is ready
 */
gboolean
confab_responses_request_resolve(ConfabResponsesRequest *request, GHashTable *items, GError **error)
{
	g_return_val_if_fail(request != NULL && request->chat == NULL, FALSE);
	g_return_val_if_fail(items != NULL, FALSE);
	return build_chat(request, items, error);
}

/* ---------- a conversation's items ---------- */

/* What a conversation takes as items: what a response's input takes but
 * references to other responses' items, and what a response's output has:
 * mcp calls and approval requests, and the answers to them. */
static gboolean
check_item_types(JsonArray *items, GError **error)
{
	static const gchar *const ok[] = {"message",
					  "function_call",
					  "function_call_output",
					  "reasoning",
					  "mcp_call",
					  "mcp_approval_request",
					  "mcp_approval_response",
					  NULL};

	for (guint i = 0; i < json_array_get_length(items); i++) {
		JsonNode *node = json_array_get_element(items, i);
		JsonNode *type_node;
		g_autofree gchar *param = g_strdup_printf("items[%u].type", i);
		const gchar *type;

		if (!JSON_NODE_HOLDS_OBJECT(node)) {
			g_autofree gchar *p = g_strdup_printf("items[%u]", i);
			return fail(error, p, "Each item must be an object");
		}
		type_node = member(json_node_get_object(node), "type");
		if (node_is_null(type_node))
			continue; /* a message: an item with a role and no type */
		if (!node_is_string(type_node))
			return fail(error, param, "type must be a string");
		type = json_node_get_string(type_node);
		if (g_strv_contains(ok, type))
			continue;
		confab_error_set_printf(
		    error,
		    CONFAB_ERROR_INVALID_VALUE,
		    param,
		    "Items of type '%s' cannot be added to a conversation; it takes "
		    "message, function_call, function_call_output, reasoning, mcp_call, "
		    "mcp_approval_request and mcp_approval_response items",
		    type);
		return FALSE;
	}
	return TRUE;
}

static const gchar *
required_string(JsonObject *item, const gchar *name, const gchar *param, GError **error)
{
	const gchar *value = member_string(item, name);

	if (value == NULL) {
		g_autofree gchar *p = g_strdup_printf("%s.%s", param, name);
		confab_error_set_printf(error,
					CONFAB_ERROR_INVALID_VALUE,
					p,
					"%s must be a string",
					name);
	}
	return value;
}

/* `{"type":"tool_call"…` with the tool's name as the model knows it */
static void
append_call_block(GString *out,
		  const gchar *type,
		  const gchar *id,
		  const gchar *server,
		  const gchar *name,
		  const gchar *arguments)
{
	g_autofree gchar *full = g_strdup_printf("%s__%s", server, name);

	g_string_append_printf(out, "{\"type\":\"%s\",\"id\":", type);
	confab_json_append_string(out, id);
	if (g_str_equal(type, "approval_request")) {
		g_string_append(out, ",\"tool_call_id\":");
		confab_json_append_string(out, id);
	}
	g_string_append(out, ",\"name\":");
	confab_json_append_string(out, full);
	g_string_append(out, ",\"arguments\":");
	confab_json_append_string(out, arguments);
	g_string_append(out, ",\"server\":");
	confab_json_append_string(out, server);
	g_string_append_c(out, '}');
}

/* An mcp_approval_response item's block: the person's decision. */
static gchar *
decision_blocks(JsonObject *item, const gchar *param, GError **error)
{
	g_autoptr(GString) out = g_string_new("[{\"type\":\"approval\",\"id\":");
	const gchar *request = required_string(item, "approval_request_id", param, error);
	JsonNode *approve = member(item, "approve");
	JsonNode *reason = member(item, "reason");

	if (request == NULL)
		return NULL;
	if (!node_holds(approve, G_TYPE_BOOLEAN) ||
	    (!node_is_null(reason) && !node_is_string(reason))) {
		g_autofree gchar *p = g_strdup_printf("%s.approve", param);
		fail(error, p, "approve must be a boolean, and reason a string");
		return NULL;
	}
	confab_json_append_string(out, request);
	g_string_append_printf(out,
			       ",\"approve\":%s,\"reason\":",
			       json_node_get_boolean(approve) ? "true" : "false");
	confab_json_append_string(out,
				  node_is_string(reason) ? json_node_get_string(reason) : NULL);
	g_string_append(out, ",\"by\":\"api\"}]");
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* An mcp item's content blocks, as an answer whose agent used its tools
 * keeps them: an mcp_call is the call and its result, an
 * mcp_approval_request the request, an mcp_approval_response the decision. */
static gchar *
mcp_blocks(JsonObject *item, const gchar *type, const gchar *param, GError **error)
{
	g_autoptr(GString) out = g_string_new("[");
	const gchar *id = member_string(item, "id");
	const gchar *server, *name, *arguments;

	if (g_str_equal(type, "mcp_approval_response"))
		return decision_blocks(item, param, error);
	if ((server = required_string(item, "server_label", param, error)) == NULL ||
	    (name = required_string(item, "name", param, error)) == NULL ||
	    (arguments = required_string(item, "arguments", param, error)) == NULL)
		return NULL;
	if (id == NULL && g_str_equal(type, "mcp_approval_request")) {
		required_string(item, "id", param, error);
		return NULL;
	}
	if (id == NULL)
		id = param; /* unique within the request, which is enough */
	if (g_str_equal(type, "mcp_approval_request")) {
		append_call_block(out, "approval_request", id, server, name, arguments);
	} else {
		const gchar *output = member_string(item, "output");
		const gchar *failure = member_string(item, "error");
		append_call_block(out, "tool_call", id, server, name, arguments);
		g_string_append(out, ",{\"type\":\"tool_result\",\"tool_call_id\":");
		confab_json_append_string(out, id);
		g_string_append(out, ",\"content\":");
		confab_json_append_string(out,
					  output != NULL    ? output
					  : failure != NULL ? failure
							    : "");
		g_string_append_printf(out, ",\"is_error\":%s}", output == NULL ? "true" : "false");
	}
	g_string_append_c(out, ']');
	return g_string_free(g_steal_pointer(&out), FALSE);
}

/* The mcp items of @items as assistant messages, by item index (NULL for
 * the others). */
static void
unref_nullable(gpointer object)
{
	if (object != NULL)
		g_object_unref(object);
}

static GPtrArray *
mcp_messages(JsonArray *items, GError **error)
{
	g_autoptr(GPtrArray) messages = g_ptr_array_new_with_free_func(unref_nullable);

	for (guint i = 0; i < json_array_get_length(items); i++) {
		JsonObject *item = json_array_get_object_element(items, i);
		const gchar *type = member_string(item, "type");
		g_autofree gchar *param = g_strdup_printf("items[%u]", i);
		g_autofree gchar *blocks = NULL;
		ConfabMessage *msg;

		g_ptr_array_add(messages, NULL);
		if (type == NULL || !g_strv_contains(mcp_item_types, type))
			continue;
		blocks = mcp_blocks(item, type, param, error);
		if (blocks == NULL)
			return NULL;
		msg = confab_message_new();
		confab_message_set_role(msg, "assistant");
		confab_message_set_content(msg, "[]");
		confab_message_set_content_blocks(msg, blocks);
		g_ptr_array_index(messages, i) = msg;
	}
	return g_steal_pointer(&messages);
}

static gboolean
not_null(gconstpointer a, gconstpointer b)
{
	return a != NULL;
}

/* @chat's messages (made from the items @origin names) with the mcp
 * messages, in the items' order. */
static void
merge_mcp(ConfabChatRequest *chat, GArray *origin, GPtrArray *mcp)
{
	GPtrArray *messages = g_ptr_array_new_with_free_func(g_object_unref);
	GPtrArray *titles = g_ptr_array_new_with_free_func(g_free);
	guint k = 0;

	for (guint i = 0; i <= mcp->len; i++) {
		for (; k < chat->messages->len &&
		       (i == mcp->len || g_array_index(origin, guint, k) < i);
		     k++) {
			g_ptr_array_add(messages,
					g_object_ref(g_ptr_array_index(chat->messages, k)));
			g_ptr_array_add(titles, g_strdup(g_ptr_array_index(chat->titles, k)));
		}
		if (i < mcp->len && g_ptr_array_index(mcp, i) != NULL) {
			g_ptr_array_add(messages, g_object_ref(g_ptr_array_index(mcp, i)));
			g_ptr_array_add(titles, NULL);
		}
	}
	g_ptr_array_unref(chat->messages);
	g_ptr_array_unref(chat->titles);
	chat->messages = messages;
	chat->titles = titles;
}

/**
 * confab_responses_request_parse_items:
 * @items: (nullable): the `items` member of a Conversations API body
 * @limits: the limits to enforce, as for a response's input
 * @error: return location for a #GError; a CONFAB_ERROR whose param names
 *   the item (`items[3].content[0].text`)
 *
 * Checks a conversation's new items with the code that checks a
 * response's input items, and makes them the messages they are stored as
 * (consecutive function calls, and the reasoning before them, join one
 * assistant message, as in a response's input).
 *
 * Returns: (transfer full): the messages (and the titles their text would
 *   give) in a #ConfabChatRequest whose model is unset
 */
ConfabChatRequest *
confab_responses_request_parse_items(JsonNode *items,
				     const ConfabChatLimits *limits,
				     GError **error)
{
	g_autoptr(ConfabResponsesRequest) request = confab_responses_request_new();
	g_autoptr(JsonObject) chat = json_object_new();
	g_autoptr(JsonNode) chat_node = NULL;
	g_autofree gchar *chat_json = NULL;
	g_autoptr(GError) chat_error = NULL;
	JsonArray *messages = json_array_new();
	g_autoptr(GArray) origin = g_array_new(FALSE, FALSE, sizeof(guint));
	g_autoptr(GString) reasoning = g_string_new(NULL);
	Input in = {request, messages, NULL, origin, G_MAXUINT, NULL, reasoning, "items", TRUE};
	ConfabChatLimits chat_limits = *limits;
	g_autoptr(GPtrArray) mcp = NULL;
	ConfabChatRequest *parsed;

	json_object_set_string_member(chat, "model", "conversation");
	json_object_set_array_member(chat, "messages", messages);
	if (items == NULL || !JSON_NODE_HOLDS_ARRAY(items)) {
		fail(error, "items", "items must be an array of items");
		return NULL;
	}
	if (json_array_get_length(json_node_get_array(items)) > CONFAB_CONVERSATION_MAX_ITEMS) {
		confab_error_set_printf(error,
					CONFAB_ERROR_INVALID_VALUE,
					"items",
					"items may hold %d items at most",
					CONFAB_CONVERSATION_MAX_ITEMS);
		return NULL;
	}
	if (!check_item_types(json_node_get_array(items), error) ||
	    !translate_input(&in, items, error))
		return NULL;
	mcp = mcp_messages(json_node_get_array(items), error);
	if (mcp == NULL)
		return NULL;
	if (json_array_get_length(messages) == 0) {
		if (!g_ptr_array_find_with_equal_func(mcp, NULL, not_null, NULL)) {
			fail(error,
			     "items",
			     "items must hold a message, a call or a decision (a reasoning item is "
			     "kept with the assistant message or function call after it)");
			return NULL;
		}
		parsed = g_new0(ConfabChatRequest, 1);
		parsed->messages = g_ptr_array_new_with_free_func(g_object_unref);
		parsed->titles = g_ptr_array_new_with_free_func(g_free);
		merge_mcp(parsed, origin, mcp);
		return parsed;
	}
	chat_node = json_node_init_object(json_node_alloc(), chat);
	chat_json = confab_json_to_string(chat_node);
	chat_limits.max_depth += 2;
	chat_limits.no_messages_ok = FALSE;
	parsed = confab_chat_request_parse(chat_json, strlen(chat_json), &chat_limits, &chat_error);
	if (parsed == NULL) {
		rename_param(chat_error, origin, "items");
		g_propagate_error(error, g_steal_pointer(&chat_error));
		return NULL;
	}
	g_clear_pointer(&parsed->model, g_free);
	merge_mcp(parsed, origin, mcp);
	return parsed;
}

void
confab_responses_request_free(ConfabResponsesRequest *request)
{
	if (request == NULL)
		return;
	g_clear_pointer(&request->chat, confab_chat_request_free);
	g_free(request->previous_response_id);
	g_free(request->conversation);
	g_free(request->instructions);
	g_clear_pointer(&request->echo, json_object_unref);
	g_clear_pointer(&request->namespaced, json_object_unref);
	g_ptr_array_unref(request->call_ids);
	g_ptr_array_unref(request->input_calls);
	g_ptr_array_unref(request->approval_responses);
	g_ptr_array_unref(request->references);
	g_clear_pointer(&request->root, json_node_unref);
	g_clear_pointer(&request->chat_params, json_object_unref);
	g_free(request);
}
