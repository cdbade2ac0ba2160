/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabChatRequest"

#include "config.h"

#include <math.h>
#include <string.h>

#include "model/confab-session.h"
#include "openai/confab-chat-request.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * Turns the body of POST /api/v1/chat/completions into a ConfabChatRequest,
 * or a 400 that names the offending field in "param". Nothing here trusts
 * the input: every member is type-checked before json-glib is asked for it
 * (json-glib's typed getters complain loudly on the wrong type).
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
node_is_number(JsonNode *node)
{
	if (node_holds(node, G_TYPE_INT64))
		return TRUE;
	return node_holds(node, G_TYPE_DOUBLE) && isfinite(json_node_get_double(node));
}

static gboolean
node_is_integer(JsonNode *node)
{
	gdouble d;
	if (node_holds(node, G_TYPE_INT64))
		return TRUE;
	if (!node_holds(node, G_TYPE_DOUBLE))
		return FALSE;
	d = json_node_get_double(node);
	return isfinite(d) && d == floor(d) && fabs(d) < 9.0e15;
}

static gdouble
node_number(JsonNode *node)
{
	if (node_holds(node, G_TYPE_INT64))
		return (gdouble)json_node_get_int(node);
	return json_node_get_double(node);
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

/**
 * confab_chat_request_base64_check:
 * @data: text
 * @len: its length
 * @decoded_len: (out) (optional): the decoded size
 *
 * Strict standard base64 (RFC 4648 section 4), padded or not, no whitespace.
 *
 * Returns: %TRUE if @data is base64
 */
gboolean
confab_chat_request_base64_check(const gchar *data, gsize len, gsize *decoded_len)
{
	gsize body = len;
	gsize pad = 0;

	while (body > 0 && data[body - 1] == '=' && pad < 2) {
		body--;
		pad++;
	}
	if (pad > 0 && len % 4 != 0)
		return FALSE;
	if (body % 4 == 1)
		return FALSE;
	for (gsize i = 0; i < body; i++) {
		guchar c = (guchar)data[i];
		if (!g_ascii_isalnum(c) && c != '+' && c != '/')
			return FALSE;
	}
	if (decoded_len != NULL)
		*decoded_len = body / 4 * 3 + (body % 4 == 0 ? 0 : body % 4 - 1);
	return TRUE;
}

/* "data:[<media type>];base64,<data>" */
static gboolean
check_data_url(const gchar *url, gsize *decoded_len)
{
	const gchar *comma = strchr(url, ',');
	if (comma == NULL)
		return FALSE;
	if (comma - url < 12 || strncmp(comma - 7, ";base64", 7) != 0)
		return FALSE;
	return confab_chat_request_base64_check(comma + 1, strlen(comma + 1), decoded_len);
}

typedef struct {
	const ConfabChatLimits *limits;
	guint index; /* the message */
	guint files; /* attachments so far in this message */
	GString *text;
	gboolean whole_text; /* the text is kept, not only its title */
	GString *content;    /* OpenAI parts, JSON */
	GString *blocks;     /* content_blocks, JSON, when they are not the parts alone */
} MessageBuilder;

static gboolean
check_attachment_size(MessageBuilder *mb, gsize decoded, const gchar *param, GError **error)
{
	if (decoded > mb->limits->max_file_bytes) {
		confab_error_set_printf(error,
					CONFAB_ERROR_INVALID_FILE,
					param,
					"An attachment is larger than %" G_GSIZE_FORMAT " bytes",
					mb->limits->max_file_bytes);
		return FALSE;
	}
	return TRUE;
}

static gboolean
count_attachment(MessageBuilder *mb, const gchar *param, GError **error)
{
	if (++mb->files > mb->limits->max_files) {
		confab_error_set_printf(error,
					CONFAB_ERROR_INVALID_FILE,
					param,
					"A message may carry at most %u attachments",
					mb->limits->max_files);
		return FALSE;
	}
	return TRUE;
}

static void
append_part(MessageBuilder *mb, const gchar *json)
{
	if (mb->content->len > 1)
		g_string_append_c(mb->content, ',');
	g_string_append(mb->content, json);
}

/* The message's text: whole for a tool's result, which is kept as text;
 * otherwise only what its title can come from (TITLE_TEXT_MAX bytes). */
#define TITLE_TEXT_MAX 65536
static void
append_text(MessageBuilder *mb, const gchar *text)
{
	gsize len = strlen(text);

	if (!mb->whole_text) {
		if (mb->text->len >= TITLE_TEXT_MAX)
			return;
		if (len > TITLE_TEXT_MAX - mb->text->len) {
			const gchar *end = text + (TITLE_TEXT_MAX - mb->text->len);
			/* at a character's start */
			while (end > text && (*end & 0xC0) == 0x80)
				end--;
			len = end - text;
		}
	}
	if (mb->text->len > 0)
		g_string_append_c(mb->text, '\n');
	g_string_append_len(mb->text, text, len);
}

/* written once, into the content: a text may be megabytes */
static void
append_text_part(MessageBuilder *mb, const gchar *text)
{
	if (mb->content->len > 1)
		g_string_append_c(mb->content, ',');
	g_string_append(mb->content, "{\"type\":\"text\",\"text\":");
	confab_json_append_string(mb->content, text);
	g_string_append_c(mb->content, '}');
	append_text(mb, text);
}

static gboolean
parse_image_part(MessageBuilder *mb, JsonObject *part, const gchar *param, GError **error)
{
	g_autofree gchar *p_url = g_strdup_printf("%s.image_url.url", param);
	g_autofree gchar *p_img = g_strdup_printf("%s.image_url", param);
	JsonNode *img = member(part, "image_url");
	JsonObject *obj;
	JsonNode *url, *detail;
	const gchar *url_str;
	g_autoptr(JsonNode) copy = NULL;
	g_autoptr(GString) json = g_string_new("{\"type\":\"image_url\",\"image_url\":");
	g_autofree gchar *img_json = NULL;

	if (img == NULL || !JSON_NODE_HOLDS_OBJECT(img)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 p_img,
				 "An image_url part needs an image_url object");
		return FALSE;
	}
	obj = json_node_get_object(img);
	url = member(obj, "url");
	if (!node_is_string(url)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 p_url,
				 "image_url.url must be a string");
		return FALSE;
	}
	url_str = json_node_get_string(url);
	if (g_str_has_prefix(url_str, "data:")) {
		gsize decoded = 0;
		if (!check_data_url(url_str, &decoded)) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_FILE,
					 p_url,
					 "image_url.url is not a valid base64 data URL");
			return FALSE;
		}
		if (!check_attachment_size(mb, decoded, p_url, error))
			return FALSE;
	} else if (!g_str_has_prefix(url_str, "https://") &&
		   !g_str_has_prefix(url_str, "http://")) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 p_url,
				 "image_url.url must be an http(s) URL or a data URL");
		return FALSE;
	} else if (!g_uri_is_valid(url_str, G_URI_FLAGS_NONE, NULL)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 p_url,
				 "image_url.url is not a valid URL");
		return FALSE;
	}
	detail = member(obj, "detail");
	if (!node_is_null(detail) &&
	    (!node_is_string(detail) ||
	     !g_strv_contains((const gchar *const[]){"auto", "low", "high", NULL},
			      json_node_get_string(detail)))) {
		g_autofree gchar *p_detail = g_strdup_printf("%s.image_url.detail", param);
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 p_detail,
				 "image_url.detail must be auto, low or high");
		return FALSE;
	}
	if (!count_attachment(mb, param, error))
		return FALSE;
	/* stored as given */
	img_json = confab_json_to_string(img);
	g_string_append(json, img_json);
	g_string_append_c(json, '}');
	append_part(mb, json->str);
	return TRUE;
}

static gboolean
parse_file_part(MessageBuilder *mb, JsonObject *part, const gchar *param, GError **error)
{
	g_autofree gchar *p_file = g_strdup_printf("%s.file", param);
	JsonNode *file = member(part, "file");
	JsonObject *obj;
	JsonNode *data, *file_id, *filename;
	g_autoptr(GString) json = g_string_new("{\"type\":\"file\",\"file\":");
	g_autofree gchar *file_json = NULL;

	if (file == NULL || !JSON_NODE_HOLDS_OBJECT(file)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_FILE,
				 p_file,
				 "A file part needs a file object");
		return FALSE;
	}
	obj = json_node_get_object(file);
	data = member(obj, "file_data");
	file_id = member(obj, "file_id");
	filename = member(obj, "filename");
	if (!node_is_null(filename) && !node_is_string(filename)) {
		g_autofree gchar *p = g_strdup_printf("%s.file.filename", param);
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_FILE,
				 p,
				 "file.filename must be a string");
		return FALSE;
	}
	if (!node_is_null(file_id) && !node_is_string(file_id)) {
		g_autofree gchar *p = g_strdup_printf("%s.file.file_id", param);
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_FILE,
				 p,
				 "file.file_id must be a string");
		return FALSE;
	}
	if (node_is_null(data) && node_is_null(file_id)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_FILE,
				 p_file,
				 "A file part needs file_data or file_id");
		return FALSE;
	}
	if (!node_is_null(data)) {
		g_autofree gchar *p = g_strdup_printf("%s.file.file_data", param);
		const gchar *str;
		gsize decoded = 0;
		gboolean ok;
		if (!node_is_string(data)) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_FILE,
					 p,
					 "file.file_data must be a string");
			return FALSE;
		}
		str = json_node_get_string(data);
		if (g_str_has_prefix(str, "data:"))
			ok = check_data_url(str, &decoded);
		else
			ok = confab_chat_request_base64_check(str, strlen(str), &decoded);
		if (!ok) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_FILE,
					 p,
					 "file.file_data is not valid base64");
			return FALSE;
		}
		if (!check_attachment_size(mb, decoded, p, error))
			return FALSE;
	}
	if (!count_attachment(mb, param, error))
		return FALSE;
	file_json = confab_json_to_string(file);
	g_string_append(json, file_json);
	g_string_append_c(json, '}');
	append_part(mb, json->str);
	return TRUE;
}

/* Which part types each role may send. */
static gboolean
role_allows_part(const gchar *role, const gchar *type)
{
	if (g_str_equal(type, "text"))
		return TRUE;
	if (g_str_equal(role, "user"))
		return g_str_equal(type, "image_url") || g_str_equal(type, "file");
	if (g_str_equal(role, "assistant"))
		return g_str_equal(type, "refusal");
	return FALSE;
}

static gboolean
parse_content(MessageBuilder *mb, const gchar *role, JsonNode *content, GError **error)
{
	g_autofree gchar *param = g_strdup_printf("messages[%u].content", mb->index);
	JsonArray *parts;
	guint n;

	if (node_is_string(content)) {
		append_text_part(mb, json_node_get_string(content));
		return TRUE;
	}
	if (content == NULL || !JSON_NODE_HOLDS_ARRAY(content)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 param,
				 "content must be a string or an array of content parts");
		return FALSE;
	}
	parts = json_node_get_array(content);
	n = json_array_get_length(parts);
	if (n == 0) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 param,
				 "content must not be an empty array");
		return FALSE;
	}
	for (guint i = 0; i < n; i++) {
		JsonNode *pnode = json_array_get_element(parts, i);
		g_autofree gchar *pparam = g_strdup_printf("%s[%u]", param, i);
		JsonObject *part;
		JsonNode *type;
		const gchar *type_str;

		if (!JSON_NODE_HOLDS_OBJECT(pnode)) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_MESSAGES,
					 pparam,
					 "A content part must be an object");
			return FALSE;
		}
		part = json_node_get_object(pnode);
		type = member(part, "type");
		if (!node_is_string(type)) {
			g_autofree gchar *tparam = g_strdup_printf("%s.type", pparam);
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_MESSAGES,
					 tparam,
					 "A content part needs a string type");
			return FALSE;
		}
		type_str = json_node_get_string(type);
		if (!role_allows_part(role, type_str)) {
			g_autofree gchar *tparam = g_strdup_printf("%s.type", pparam);
			confab_error_set_printf(error,
						CONFAB_ERROR_INVALID_MESSAGES,
						tparam,
						"Content parts of type '%s' are not accepted "
						"in %s messages",
						type_str,
						role);
			return FALSE;
		}
		if (g_str_equal(type_str, "text") || g_str_equal(type_str, "refusal")) {
			JsonNode *text = member(part, type_str);
			if (!node_is_string(text)) {
				g_autofree gchar *tparam =
				    g_strdup_printf("%s.%s", pparam, type_str);
				confab_error_set_printf(error,
							CONFAB_ERROR_INVALID_MESSAGES,
							tparam,
							"A %s part needs a string %s",
							type_str,
							type_str);
				return FALSE;
			}
			append_text_part(mb, json_node_get_string(text));
		} else if (g_str_equal(type_str, "image_url")) {
			if (!parse_image_part(mb, part, pparam, error))
				return FALSE;
		} else if (!parse_file_part(mb, part, pparam, error)) {
			return FALSE;
		}
	}
	return TRUE;
}

static gboolean
parse_tool_calls(MessageBuilder *mb, JsonNode *node, GError **error)
{
	g_autofree gchar *param = g_strdup_printf("messages[%u].tool_calls", mb->index);
	JsonArray *calls;

	if (!JSON_NODE_HOLDS_ARRAY(node)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 param,
				 "tool_calls must be an array");
		return FALSE;
	}
	calls = json_node_get_array(node);
	for (guint i = 0; i < json_array_get_length(calls); i++) {
		JsonNode *cnode = json_array_get_element(calls, i);
		g_autofree gchar *cparam = g_strdup_printf("%s[%u]", param, i);
		JsonObject *call, *fn;
		JsonNode *id, *type, *fnode, *name, *args;
		g_autoptr(GString) block = g_string_new("{\"type\":\"tool_call\",\"id\":");

		if (!JSON_NODE_HOLDS_OBJECT(cnode)) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_MESSAGES,
					 cparam,
					 "A tool call must be an object");
			return FALSE;
		}
		call = json_node_get_object(cnode);
		id = member(call, "id");
		type = member(call, "type");
		fnode = member(call, "function");
		if (!node_is_string(id) ||
		    (!node_is_null(type) &&
		     (!node_is_string(type) ||
		      !g_str_equal(json_node_get_string(type), "function"))) ||
		    fnode == NULL || !JSON_NODE_HOLDS_OBJECT(fnode)) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_MESSAGES,
					 cparam,
					 "A tool call needs a string id, type \"function\" "
					 "and a function object");
			return FALSE;
		}
		fn = json_node_get_object(fnode);
		name = member(fn, "name");
		args = member(fn, "arguments");
		if (!node_is_string(name) || !node_is_string(args)) {
			g_autofree gchar *fparam = g_strdup_printf("%s.function", cparam);
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_MESSAGES,
					 fparam,
					 "A tool call function needs a string name and "
					 "string arguments");
			return FALSE;
		}
		confab_json_append_string(block, json_node_get_string(id));
		g_string_append(block, ",\"name\":");
		confab_json_append_string(block, json_node_get_string(name));
		g_string_append(block, ",\"arguments\":");
		confab_json_append_string(block, json_node_get_string(args));
		g_string_append_c(block, '}');
		if (mb->blocks->len > 0)
			g_string_append_c(mb->blocks, ',');
		g_string_append(mb->blocks, block->str);
	}
	return TRUE;
}

/* An assistant message's reasoning, as DeepSeek's and vLLM's clients send
 * it back (`reasoning_content`, or OpenRouter's `reasoning`): kept as a
 * `reasoning` block, so that it goes back to the model with the message's
 * tool calls. @reasoning is %NULL for none or an empty one. */
static gboolean
parse_reasoning(MessageBuilder *mb, JsonObject *obj, const gchar **reasoning, GError **error)
{
	JsonNode *node = member(obj, "reasoning_content");

	*reasoning = NULL;
	if (node_is_null(node)) {
		/* OpenRouter's name, read only when it is a string: its other
		 * shapes are not Confab's to check */
		node = member(obj, "reasoning");
		if (!node_is_string(node))
			return TRUE;
	} else if (!node_is_string(node)) {
		g_autofree gchar *param =
		    g_strdup_printf("messages[%u].reasoning_content", mb->index);
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 param,
				 "reasoning_content must be a string");
		return FALSE;
	}
	if (*json_node_get_string(node) != '\0')
		*reasoning = json_node_get_string(node);
	return TRUE;
}

/* An assistant message: its reasoning, its content and its calls, kept in
 * the transcript's order (docs/api.md 3.5); @parts_are_blocks says that its
 * blocks are its content parts alone. */
static gboolean
parse_assistant(MessageBuilder *mb, JsonObject *obj, gboolean *parts_are_blocks, GError **error)
{
	JsonNode *content = member(obj, "content");
	JsonNode *tool_calls = member(obj, "tool_calls");
	gboolean has_calls = !node_is_null(tool_calls);
	const gchar *reasoning = NULL;

	if (!parse_reasoning(mb, obj, &reasoning, error))
		return FALSE;
	if (!node_is_null(content) && !parse_content(mb, "assistant", content, error))
		return FALSE;
	if (node_is_null(content) && !has_calls) {
		g_autofree gchar *param = g_strdup_printf("messages[%u].content", mb->index);
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 param,
				 "An assistant message needs content or tool_calls");
		return FALSE;
	}
	/* text only: the blocks are the content, as for a user */
	*parts_are_blocks = !has_calls && reasoning == NULL;
	if (*parts_are_blocks)
		return TRUE;
	if (reasoning != NULL) {
		g_string_append(mb->blocks, "{\"type\":\"reasoning\",\"text\":");
		confab_json_append_string(mb->blocks, reasoning);
		g_string_append_c(mb->blocks, '}');
	}
	if (mb->content->len > 1) {
		if (mb->blocks->len > 0)
			g_string_append_c(mb->blocks, ',');
		g_string_append_len(mb->blocks, mb->content->str + 1, mb->content->len - 1);
	}
	return !has_calls || parse_tool_calls(mb, tool_calls, error);
}

static ConfabMessage *
parse_message(ConfabChatRequest *request,
	      const ConfabChatLimits *limits,
	      guint index,
	      JsonNode *node,
	      GError **error)
{
	static const gchar *const roles[] =
	    {"system", "developer", "user", "assistant", "tool", NULL};
	g_autofree gchar *param = g_strdup_printf("messages[%u]", index);
	g_autoptr(GString) text = g_string_new(NULL);
	g_autoptr(GString) content_json = g_string_new("[");
	g_autoptr(GString) blocks_json = g_string_new(NULL);
	MessageBuilder mb = {limits, index, 0, text, FALSE, content_json, blocks_json};
	g_autoptr(ConfabMessage) msg = NULL;
	JsonObject *obj;
	JsonNode *role, *content;
	const gchar *role_str;
	gboolean parts_are_blocks = FALSE;

	if (!JSON_NODE_HOLDS_OBJECT(node)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 param,
				 "Each message must be an object");
		return NULL;
	}
	obj = json_node_get_object(node);
	role = member(obj, "role");
	if (!node_is_string(role) || !g_strv_contains(roles, json_node_get_string(role))) {
		g_autofree gchar *rparam = g_strdup_printf("%s.role", param);
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 rparam,
				 "role must be one of system, developer, user, assistant, "
				 "tool");
		return NULL;
	}
	role_str = json_node_get_string(role);
	content = member(obj, "content");

	if (g_str_equal(role_str, "assistant")) {
		if (!parse_assistant(&mb, obj, &parts_are_blocks, error))
			return NULL;
	} else if (g_str_equal(role_str, "tool")) {
		JsonNode *call_id = member(obj, "tool_call_id");
		g_autoptr(GString) block =
		    g_string_new("{\"type\":\"tool_result\",\"tool_call_id\":");

		mb.whole_text = TRUE;
		if (!node_is_string(call_id)) {
			g_autofree gchar *cparam = g_strdup_printf("%s.tool_call_id", param);
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_MESSAGES,
					 cparam,
					 "A tool message needs a string tool_call_id");
			return NULL;
		}
		if (!parse_content(&mb, role_str, content, error))
			return NULL;
		/* the transcript keeps it as one tool_result block */
		confab_json_append_string(block, json_node_get_string(call_id));
		g_string_append(block, ",\"content\":");
		confab_json_append_string(block, text->str);
		g_string_append(block, ",\"is_error\":false}");
		g_string_assign(blocks_json, block->str);
	} else {
		if (!parse_content(&mb, role_str, content, error))
			return NULL;
		/* nothing but the parts (no tool calls here): the blocks are
		 * the content, one string for both, a text may be megabytes */
		parts_are_blocks = TRUE;
	}
	g_string_append_c(content_json, ']');
	msg = confab_message_new();
	confab_message_set_role(msg, role_str);
	confab_message_take_content(msg, g_steal_pointer(&content_json));
	if (parts_are_blocks) {
		confab_message_share_content_blocks(msg);
	} else {
		g_string_prepend_c(blocks_json, '[');
		g_string_append_c(blocks_json, ']');
		confab_message_take_content_blocks(msg, g_steal_pointer(&blocks_json));
	}
	/* the title only: a text may be megabytes */
	g_ptr_array_add(request->titles, confab_session_title_from_text(text->str));
	return g_steal_pointer(&msg);
}

typedef enum {
	PARAM_NUMBER,
	PARAM_INTEGER,
	PARAM_POSITIVE_INTEGER,
	PARAM_BOOLEAN,
	PARAM_STRING,
	PARAM_OBJECT,
	PARAM_ARRAY,
	PARAM_STOP,
	PARAM_TOOLS,
	PARAM_TOOL_CHOICE,
} ParamKind;

typedef struct {
	const gchar *name;
	ParamKind kind;
	gdouble min;
	gdouble max;
} ParamSpec;

/* The OpenAI parameters passed upstream as given, once their type is right. */
static const ParamSpec passthrough_params[] = {
    {"temperature", PARAM_NUMBER, 0, 2},
    {"top_p", PARAM_NUMBER, 0, 1},
    {"max_tokens", PARAM_POSITIVE_INTEGER, 1, 0},
    {"max_completion_tokens", PARAM_POSITIVE_INTEGER, 1, 0},
    {"stop", PARAM_STOP, 0, 0},
    {"seed", PARAM_INTEGER, 0, 0},
    {"response_format", PARAM_OBJECT, 0, 0},
    {"user", PARAM_STRING, 0, 0},
    {"presence_penalty", PARAM_NUMBER, -2, 2},
    {"frequency_penalty", PARAM_NUMBER, -2, 2},
    {"logit_bias", PARAM_OBJECT, 0, 0},
    {"logprobs", PARAM_BOOLEAN, 0, 0},
    {"top_logprobs", PARAM_INTEGER, 0, 20},
    {"tools", PARAM_TOOLS, 0, 0},
    {"tool_choice", PARAM_TOOL_CHOICE, 0, 0},
    {"parallel_tool_calls", PARAM_BOOLEAN, 0, 0},
    {"reasoning_effort", PARAM_STRING, 0, 0},
};

static gboolean
check_param(const ParamSpec *spec, JsonNode *node, GError **error)
{
	gboolean ok = FALSE;
	const gchar *what = "";

	switch (spec->kind) {
	case PARAM_NUMBER:
		ok = node_is_number(node) && node_number(node) >= spec->min &&
		     node_number(node) <= spec->max;
		what = "a number in range";
		break;
	case PARAM_INTEGER:
		ok = node_is_integer(node);
		if (ok && spec->max > spec->min)
			ok = node_number(node) >= spec->min && node_number(node) <= spec->max;
		what = "an integer in range";
		break;
	case PARAM_POSITIVE_INTEGER:
		ok = node_is_integer(node) && node_number(node) >= 1;
		what = "a positive integer";
		break;
	case PARAM_BOOLEAN:
		ok = node_holds(node, G_TYPE_BOOLEAN);
		what = "a boolean";
		break;
	case PARAM_STRING:
		ok = node_is_string(node);
		what = "a string";
		break;
	case PARAM_OBJECT:
		ok = JSON_NODE_HOLDS_OBJECT(node);
		what = "an object";
		break;
	case PARAM_ARRAY:
		ok = JSON_NODE_HOLDS_ARRAY(node);
		what = "an array";
		break;
	case PARAM_STOP:
		if (node_is_string(node)) {
			ok = TRUE;
		} else if (JSON_NODE_HOLDS_ARRAY(node)) {
			JsonArray *arr = json_node_get_array(node);
			ok = json_array_get_length(arr) <= 4;
			for (guint i = 0; ok && i < json_array_get_length(arr); i++)
				ok = node_is_string(json_array_get_element(arr, i));
		}
		what = "a string or an array of up to 4 strings";
		break;
	case PARAM_TOOLS:
		/* [{"type":"function","function":{"name":…}}…] */
		ok = JSON_NODE_HOLDS_ARRAY(node);
		for (guint i = 0; ok && i < json_array_get_length(json_node_get_array(node)); i++) {
			JsonNode *tool = json_array_get_element(json_node_get_array(node), i);
			JsonNode *function;
			ok = JSON_NODE_HOLDS_OBJECT(tool) &&
			     node_is_string(member(json_node_get_object(tool), "type"));
			if (!ok)
				break;
			function = member(json_node_get_object(tool), "function");
			if (function != NULL) {
				ok = JSON_NODE_HOLDS_OBJECT(function) &&
				     node_is_string(member(json_node_get_object(function), "name"));
			}
		}
		what = "an array of tools, each an object with a 'type' and, for a function, "
		       "its 'function' with a 'name'";
		break;
	case PARAM_TOOL_CHOICE:
		ok = node_is_string(node) || JSON_NODE_HOLDS_OBJECT(node);
		what = "a string or an object";
		break;
	default:
		g_assert_not_reached();
	}
	if (!ok) {
		confab_error_set_printf(error,
					CONFAB_ERROR_INVALID_VALUE,
					spec->name,
					"'%s' must be %s",
					spec->name,
					what);
	}
	return ok;
}

/* The members Confab answers for itself: never sent upstream as given. */
static const gchar *const own_members[] = {
    "model",	      /* the agent; the upstream gets the agent's upstream_model */
    "messages",	      /* the conversation is Confab's to assemble */
    "stream",	      /* Confab always streams from the upstream */
    "stream_options", /* and always asks it for usage */
    "metadata",	      /* Confab's: metadata.session_id */
    "n",	      /* one choice only */
    NULL,
};

static gboolean
is_passthrough(const gchar *name)
{
	for (guint i = 0; i < G_N_ELEMENTS(passthrough_params); i++)
		if (g_str_equal(passthrough_params[i].name, name))
			return TRUE;
	return FALSE;
}

/*
 * What Confab does not use itself goes to an openai upstream as the client
 * sent it (service_tier, store, prompt_cache_key, safety_identifier,
 * verbosity, prediction, modalities, web_search_options, and whatever the
 * API grows next): the upstream judges it. The body's size and depth are
 * already bounded.
 */
static void
forward_unknown_params(ConfabChatRequest *request, JsonObject *root)
{
	g_autoptr(GList) names = json_object_get_members(root);

	for (GList *l = names; l != NULL; l = l->next) {
		const gchar *name = l->data;
		if (g_strv_contains(own_members, name) || is_passthrough(name))
			continue;
		if (request->params == NULL)
			request->params = json_object_new();
		json_object_set_member(request->params,
				       name,
				       json_node_copy(json_object_get_member(root, name)));
	}
}

static gboolean
parse_params(ConfabChatRequest *request, JsonObject *root, GError **error)
{
	JsonNode *n = member(root, "n");

	if (!node_is_null(n) && (!node_is_integer(n) || node_number(n) != 1)) {
		confab_error_set(error, CONFAB_ERROR_INVALID_VALUE, "n", "Only n=1 is supported");
		return FALSE;
	}
	for (guint i = 0; i < G_N_ELEMENTS(passthrough_params); i++) {
		const ParamSpec *spec = &passthrough_params[i];
		JsonNode *node = member(root, spec->name);
		if (node_is_null(node))
			continue;
		if (!check_param(spec, node, error))
			return FALSE;
		if (request->params == NULL)
			request->params = json_object_new();
		json_object_set_member(request->params, spec->name, json_node_copy(node));
	}
	forward_unknown_params(request, root);
	return TRUE;
}

static gboolean
parse_metadata(ConfabChatRequest *request, JsonObject *root, GError **error)
{
	JsonNode *metadata = member(root, "metadata");
	JsonNode *session;

	if (node_is_null(metadata))
		return TRUE;
	if (!JSON_NODE_HOLDS_OBJECT(metadata)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "metadata",
				 "metadata must be an object");
		return FALSE;
	}
	session = member(json_node_get_object(metadata), "session_id");
	if (node_is_null(session))
		return TRUE;
	if (!node_is_string(session)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "metadata.session_id",
				 "metadata.session_id must be a string");
		return FALSE;
	}
	request->session_id = g_strdup(json_node_get_string(session));
	return TRUE;
}

static gboolean
parse_stream(ConfabChatRequest *request, JsonObject *root, GError **error)
{
	JsonNode *stream = member(root, "stream");
	JsonNode *options = member(root, "stream_options");

	if (!node_is_null(stream)) {
		if (!node_holds(stream, G_TYPE_BOOLEAN)) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_VALUE,
					 "stream",
					 "stream must be a boolean");
			return FALSE;
		}
		request->stream = json_node_get_boolean(stream);
	}
	if (!node_is_null(options)) {
		JsonNode *usage;
		if (!JSON_NODE_HOLDS_OBJECT(options)) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_VALUE,
					 "stream_options",
					 "stream_options must be an object");
			return FALSE;
		}
		usage = member(json_node_get_object(options), "include_usage");
		if (!node_is_null(usage)) {
			if (!node_holds(usage, G_TYPE_BOOLEAN)) {
				confab_error_set(error,
						 CONFAB_ERROR_INVALID_VALUE,
						 "stream_options.include_usage",
						 "include_usage must be a boolean");
				return FALSE;
			}
			request->include_usage = json_node_get_boolean(usage);
		}
	}
	return TRUE;
}

static ConfabChatRequest *
confab_chat_request_new(void)
{
	ConfabChatRequest *request = g_new0(ConfabChatRequest, 1);
	request->messages = g_ptr_array_new_with_free_func(g_object_unref);
	request->titles = g_ptr_array_new_with_free_func(g_free);
	return request;
}

/**
 * confab_chat_request_parse:
 * @data: the request body
 * @len: its length
 * @limits: the limits to enforce
 * @error: return location for a #GError; a CONFAB_ERROR with a param
 *
 * Returns: (transfer full): the validated request
 */
ConfabChatRequest *
confab_chat_request_parse(const gchar *data,
			  gsize len,
			  const ConfabChatLimits *limits,
			  GError **error)
{
	g_autoptr(ConfabChatRequest) request = confab_chat_request_new();
	g_autoptr(JsonNode) root_node = NULL;
	JsonObject *root;
	JsonNode *model, *messages;
	JsonArray *arr;

	root_node = confab_json_parse(data, len, limits->max_depth, error);
	if (root_node == NULL)
		return NULL;
	if (!JSON_NODE_HOLDS_OBJECT(root_node)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_JSON,
				 NULL,
				 "The request body must be a JSON object");
		return NULL;
	}
	root = json_node_get_object(root_node);

	model = member(root, "model");
	if (node_is_null(model)) {
		confab_error_set(error,
				 CONFAB_ERROR_MISSING_MODEL,
				 "model",
				 "You must provide a model parameter: the agent id");
		return NULL;
	}
	if (!node_is_string(model) || json_node_get_string(model)[0] == '\0') {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "model",
				 "model must be a non-empty string: the agent id");
		return NULL;
	}
	request->model = g_strdup(json_node_get_string(model));

	messages = member(root, "messages");
	if (messages == NULL || !JSON_NODE_HOLDS_ARRAY(messages)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 "messages",
				 "messages must be an array of messages");
		return NULL;
	}
	arr = json_node_get_array(messages);
	if (json_array_get_length(arr) == 0 && !limits->no_messages_ok) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_MESSAGES,
				 "messages",
				 "messages must not be empty");
		return NULL;
	}
	for (guint i = 0; i < json_array_get_length(arr); i++) {
		ConfabMessage *msg =
		    parse_message(request, limits, i, json_array_get_element(arr, i), error);
		if (msg == NULL)
			return NULL;
		g_ptr_array_add(request->messages, msg);
	}
	if (!parse_stream(request, root, error))
		return NULL;
	if (!parse_metadata(request, root, error))
		return NULL;
	if (!parse_params(request, root, error))
		return NULL;
	return g_steal_pointer(&request);
}

/**
 * confab_chat_request_new_text:
 * @model: the agent id
 * @session_id: (nullable): a session to continue
 * @text: the user's text
 *
 * A request with one user message, as a channel sends it.
 *
 * Returns: (transfer full): the request
 */
ConfabChatRequest *
confab_chat_request_new_text(const gchar *model, const gchar *session_id, const gchar *text)
{
	ConfabChatRequest *request = confab_chat_request_new();
	g_autoptr(GString) content = g_string_new("[{\"type\":\"text\",\"text\":");
	ConfabMessage *msg = confab_message_new();

	confab_json_append_string(content, text);
	g_string_append(content, "}]");
	confab_message_set_role(msg, "user");
	confab_message_set_content(msg, content->str);
	confab_message_set_content_blocks(msg, content->str);
	g_ptr_array_add(request->messages, msg);
	g_ptr_array_add(request->titles, confab_session_title_from_text(text));
	request->model = g_strdup(model);
	request->session_id = g_strdup(session_id);
	return request;
}

void
confab_chat_request_free(ConfabChatRequest *request)
{
	if (request == NULL)
		return;
	g_free(request->model);
	g_free(request->session_id);
	g_ptr_array_unref(request->messages);
	g_ptr_array_unref(request->titles);
	g_clear_pointer(&request->params, json_object_unref);
	g_free(request);
}
