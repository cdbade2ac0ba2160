/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "openai/confab-chat-request.h"
#include "openai/confab-openai-message.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/* Validation of POST /api/v1/chat/completions bodies: every refusal names
 * its field in "param". */

static const ConfabChatLimits default_limits = CONFAB_CHAT_LIMITS_DEFAULT;

static ConfabChatRequest *
parse_ok_limits(const gchar *body, const ConfabChatLimits *limits)
{
	g_autoptr(GError) error = NULL;
	ConfabChatRequest *request = confab_chat_request_parse(body, strlen(body), limits, &error);
	if (request == NULL)
		g_error("refused: %s (param %s)\nbody: %s",
			error->message,
			confab_error_get_param(error),
			body);
	return request;
}

static ConfabChatRequest *
parse_ok(const gchar *body)
{
	return parse_ok_limits(body, &default_limits);
}

static void
assert_refused_limits(const gchar *body,
		      const ConfabChatLimits *limits,
		      gint code,
		      const gchar *param)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabChatRequest) request =
	    confab_chat_request_parse(body, strlen(body), limits, &error);
	if (request != NULL)
		g_error("accepted: %s", body);
	g_assert_nonnull(error);
	if (error->domain != CONFAB_ERROR || error->code != code)
		g_error("body %s: expected code %d, got %s:%d (%s)",
			body,
			code,
			g_quark_to_string(error->domain),
			error->code,
			error->message);
	if (g_strcmp0(confab_error_get_param(error), param) != 0)
		g_error("body %s: expected param %s, got %s (%s)",
			body,
			param,
			confab_error_get_param(error),
			error->message);
	g_assert_cmpstr(error->message, !=, "");
}

static void
assert_refused(const gchar *body, gint code, const gchar *param)
{
	assert_refused_limits(body, &default_limits, code, param);
}

/* Refused with a 400 of one of two codes (the JSON layer or the field's
 * check may catch it first). */
static void
assert_refused_400(const gchar *body)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabChatRequest) request =
	    confab_chat_request_parse(body, strlen(body), &default_limits, &error);
	if (request != NULL) {
		g_autofree gchar *params = NULL;
		if (request->params != NULL) {
			g_autoptr(JsonNode) node = json_node_new(JSON_NODE_OBJECT);
			json_node_set_object(node, request->params);
			params = confab_json_to_string(node);
		}
		g_error("accepted: %s\nparams passed upstream: %s", body, params);
	}
	g_assert_true(error->domain == CONFAB_ERROR);
	g_assert_true(error->code == CONFAB_ERROR_INVALID_VALUE ||
		      error->code == CONFAB_ERROR_INVALID_JSON);
}

/* a body with one message whose JSON is @message */
static gchar *
one_message(const gchar *message)
{
	return g_strdup_printf("{\"model\":\"agt_x\",\"messages\":[%s]}", message);
}

/* a body with one user message whose content is @content */
static gchar *
user_content(const gchar *content)
{
	return g_strdup_printf(
	    "{\"model\":\"agt_x\",\"messages\":[{\"role\":\"user\",\"content\":%s}]}",
	    content);
}

/* a body with one user message and extra top-level members @extra */
static gchar *
with_extra(const gchar *extra)
{
	return g_strdup_printf(
	    "{\"model\":\"agt_x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],%s}",
	    extra);
}

static void
test_minimal(void)
{
	g_autoptr(ConfabChatRequest) r = parse_ok(
	    "{\"model\":\"agt_x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi there\"}]}");
	ConfabMessage *msg;

	g_assert_cmpstr(r->model, ==, "agt_x");
	g_assert_false(r->stream);
	g_assert_false(r->include_usage);
	g_assert_null(r->session_id);
	g_assert_null(r->params);
	g_assert_cmpuint(r->messages->len, ==, 1);
	g_assert_cmpuint(r->titles->len, ==, 1);
	msg = g_ptr_array_index(r->messages, 0);
	g_assert_cmpstr(confab_message_get_role(msg), ==, "user");
	g_assert_cmpstr(confab_message_get_content(msg),
			==,
			"[{\"type\":\"text\",\"text\":\"hi there\"}]");
	g_assert_cmpstr(confab_message_get_content_blocks(msg),
			==,
			"[{\"type\":\"text\",\"text\":\"hi there\"}]");
	g_assert_cmpstr(g_ptr_array_index(r->titles, 0), ==, "hi there");
	/* not stored yet */
	g_assert_null(confab_message_get_id(msg));
}

static void
test_text_kept_exactly(void)
{
	const gchar *body = "{\"model\":\"agt_x\",\"messages\":[{\"role\":\"user\",\"content\":"
			    "\"  a\\tb\\n\\\"q\\\" \\\\ h\xc3\xa9 \\ud83c\\udf0d \"}]}";
	g_autoptr(ConfabChatRequest) r = parse_ok(body);
	ConfabMessage *msg = g_ptr_array_index(r->messages, 0);
	g_autoptr(JsonNode) content = confab_json_from_string(confab_message_get_content(msg));

	/* the title: on one line, whitespace collapsed */
	g_assert_cmpstr(g_ptr_array_index(r->titles, 0),
			==,
			"a b \"q\" \\ h\xc3\xa9 \xf0\x9f\x8c\x8d");
	g_assert_nonnull(content);
	g_assert_cmpstr(json_object_get_string_member(
			    json_array_get_object_element(json_node_get_array(content), 0),
			    "text"),
			==,
			"  a\tb\n\"q\" \\ h\xc3\xa9 \xf0\x9f\x8c\x8d ");
}

static void
test_roles(void)
{
	g_autoptr(ConfabChatRequest) r =
	    parse_ok("{\"model\":\"agt_x\",\"messages\":["
		     "{\"role\":\"system\",\"content\":\"s\"},"
		     "{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"d\"}]},"
		     "{\"role\":\"user\",\"content\":\"u\"},"
		     "{\"role\":\"assistant\",\"content\":\"a\"},"
		     "{\"role\":\"user\",\"content\":\"u2\"}]}");
	const gchar *roles[] = {"system", "developer", "user", "assistant", "user"};
	const gchar *texts[] = {"s", "d", "u", "a", "u2"};

	g_assert_cmpuint(r->messages->len, ==, 5);
	for (guint i = 0; i < 5; i++) {
		g_assert_cmpstr(confab_message_get_role(g_ptr_array_index(r->messages, i)),
				==,
				roles[i]);
		g_assert_cmpstr(g_ptr_array_index(r->titles, i), ==, texts[i]);
	}
}

static void
test_not_json(void)
{
	assert_refused("", CONFAB_ERROR_INVALID_JSON, NULL);
	assert_refused("{", CONFAB_ERROR_INVALID_JSON, NULL);
	assert_refused("{'model':'x'}", CONFAB_ERROR_INVALID_JSON, NULL);
	assert_refused("model=x", CONFAB_ERROR_INVALID_JSON, NULL);
	/* valid JSON, but not an object */
	assert_refused("[]", CONFAB_ERROR_INVALID_JSON, NULL);
	assert_refused("\"x\"", CONFAB_ERROR_INVALID_JSON, NULL);
	assert_refused("null", CONFAB_ERROR_INVALID_JSON, NULL);
	assert_refused("42", CONFAB_ERROR_INVALID_JSON, NULL);
	/* invalid UTF-8, named by its field */
	assert_refused(
	    "{\"model\":\"agt_x\",\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
	    CONFAB_ERROR_INVALID_JSON,
	    "messages[0].content");
	/* U+0000 is refused, not truncated */
	assert_refused("{\"model\":\"agt_x\",\"messages\":[{\"role\":\"user\",\"content\":"
		       "\"a\\u0000b\"}]}",
		       CONFAB_ERROR_INVALID_VALUE,
		       "messages[0].content");
}

static void
test_depth_limit(void)
{
	ConfabChatLimits limits = default_limits;
	GString *deep = g_string_new(NULL);
	g_autofree gchar *body = NULL;
	g_autofree gchar *body_ok = NULL;

	/* metadata nested 70 levels: over the default 64 */
	for (guint i = 0; i < 70; i++)
		g_string_append(deep, "[");
	for (guint i = 0; i < 70; i++)
		g_string_append(deep, "]");
	g_string_prepend(deep, "\"x\":");
	body = with_extra(deep->str);
	assert_refused(body, CONFAB_ERROR_INVALID_JSON, NULL);
	limits.max_depth = 100;
	{
		g_autoptr(ConfabChatRequest) r = parse_ok_limits(body, &limits);
		g_assert_nonnull(r);
	}
	limits.max_depth = 3; /* root, messages, message: the minimum */
	body_ok = user_content("\"hi\"");
	{
		g_autoptr(ConfabChatRequest) r = parse_ok_limits(body_ok, &limits);
		g_assert_nonnull(r);
	}
	limits.max_depth = 2;
	assert_refused_limits(body_ok, &limits, CONFAB_ERROR_INVALID_JSON, NULL);
	g_string_free(deep, TRUE);
}

static void
test_model(void)
{
	assert_refused("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		       CONFAB_ERROR_MISSING_MODEL,
		       "model");
	assert_refused("{\"model\":null,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		       CONFAB_ERROR_MISSING_MODEL,
		       "model");
	assert_refused("{}", CONFAB_ERROR_MISSING_MODEL, "model");
	assert_refused("{\"model\":42,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		       CONFAB_ERROR_INVALID_VALUE,
		       "model");
	assert_refused("{\"model\":\"\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		       CONFAB_ERROR_INVALID_VALUE,
		       "model");
	assert_refused("{\"model\":[\"a\"],\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		       CONFAB_ERROR_INVALID_VALUE,
		       "model");
	assert_refused("{\"model\":{},\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		       CONFAB_ERROR_INVALID_VALUE,
		       "model");
}

static void
test_messages_shape(void)
{
	assert_refused("{\"model\":\"agt_x\"}", CONFAB_ERROR_INVALID_MESSAGES, "messages");
	assert_refused("{\"model\":\"agt_x\",\"messages\":null}",
		       CONFAB_ERROR_INVALID_MESSAGES,
		       "messages");
	assert_refused("{\"model\":\"agt_x\",\"messages\":[]}",
		       CONFAB_ERROR_INVALID_MESSAGES,
		       "messages");
	assert_refused("{\"model\":\"agt_x\",\"messages\":{}}",
		       CONFAB_ERROR_INVALID_MESSAGES,
		       "messages");
	assert_refused("{\"model\":\"agt_x\",\"messages\":\"hi\"}",
		       CONFAB_ERROR_INVALID_MESSAGES,
		       "messages");
	assert_refused("{\"model\":\"agt_x\",\"messages\":[\"hi\"]}",
		       CONFAB_ERROR_INVALID_MESSAGES,
		       "messages[0]");
	assert_refused("{\"model\":\"agt_x\",\"messages\":[null]}",
		       CONFAB_ERROR_INVALID_MESSAGES,
		       "messages[0]");
	assert_refused(
	    "{\"model\":\"agt_x\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"},[]]}",
	    CONFAB_ERROR_INVALID_MESSAGES,
	    "messages[1]");
}

static void
test_roles_refused(void)
{
	const gchar *bad[] = {
	    "{\"content\":\"hi\"}",
	    "{\"role\":null,\"content\":\"hi\"}",
	    "{\"role\":\"robot\",\"content\":\"hi\"}",
	    "{\"role\":\"User\",\"content\":\"hi\"}",
	    "{\"role\":\"\",\"content\":\"hi\"}",
	    "{\"role\":1,\"content\":\"hi\"}",
	    "{\"role\":[\"user\"],\"content\":\"hi\"}",
	    "{\"role\":\"function\",\"content\":\"hi\"}",
	};
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree gchar *body = one_message(bad[i]);
		assert_refused(body, CONFAB_ERROR_INVALID_MESSAGES, "messages[0].role");
	}
	/* the index of the message is named */
	assert_refused("{\"model\":\"agt_x\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"},"
		       "{\"role\":\"user\",\"content\":\"b\"},{\"role\":\"x\",\"content\":\"c\"}]}",
		       CONFAB_ERROR_INVALID_MESSAGES,
		       "messages[2].role");
}

static void
test_content_shapes(void)
{
	const gchar *bad[] = {
	    "null",
	    "42",
	    "true",
	    "{}",
	    "[]",
	    "{\"type\":\"text\",\"text\":\"hi\"}",
	};
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree gchar *body = user_content(bad[i]);
		assert_refused(body, CONFAB_ERROR_INVALID_MESSAGES, "messages[0].content");
	}
	{
		g_autofree gchar *body = one_message("{\"role\":\"user\"}");
		assert_refused(body, CONFAB_ERROR_INVALID_MESSAGES, "messages[0].content");
	}
	{
		g_autofree gchar *body = one_message("{\"role\":\"system\"}");
		assert_refused(body, CONFAB_ERROR_INVALID_MESSAGES, "messages[0].content");
	}
	/* an empty string is text */
	{
		g_autofree gchar *body = user_content("\"\"");
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		g_assert_null(g_ptr_array_index(r->titles, 0));
	}
}

static void
test_content_parts(void)
{
	g_autofree gchar *body = user_content("[{\"type\":\"text\",\"text\":\"one\"},"
					      "{\"type\":\"text\",\"text\":\"two\"}]");
	g_autoptr(ConfabChatRequest) r = parse_ok(body);
	ConfabMessage *msg = g_ptr_array_index(r->messages, 0);

	g_assert_cmpstr(g_ptr_array_index(r->titles, 0), ==, "one two");
	g_assert_cmpstr(
	    confab_message_get_content(msg),
	    ==,
	    "[{\"type\":\"text\",\"text\":\"one\"},{\"type\":\"text\",\"text\":\"two\"}]");
}

static void
test_content_parts_refused(void)
{
	struct {
		const gchar *content;
		const gchar *param;
	} cases[] = {
	    {"[\"hi\"]", "messages[0].content[0]"},
	    {"[null]", "messages[0].content[0]"},
	    {"[{\"type\":\"text\",\"text\":\"a\"},[]]", "messages[0].content[1]"},
	    {"[{\"text\":\"hi\"}]", "messages[0].content[0].type"},
	    {"[{\"type\":1,\"text\":\"hi\"}]", "messages[0].content[0].type"},
	    {"[{\"type\":\"video\",\"video\":{}}]", "messages[0].content[0].type"},
	    {"[{\"type\":\"refusal\",\"refusal\":\"no\"}]", "messages[0].content[0].type"},
	    {"[{\"type\":\"text\"}]", "messages[0].content[0].text"},
	    {"[{\"type\":\"text\",\"text\":null}]", "messages[0].content[0].text"},
	    {"[{\"type\":\"text\",\"text\":[\"a\"]}]", "messages[0].content[0].text"},
	    {"[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":5}]",
	     "messages[0].content[1].text"},
	};
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *body = user_content(cases[i].content);
		assert_refused(body, CONFAB_ERROR_INVALID_MESSAGES, cases[i].param);
	}
}

static void
test_parts_by_role(void)
{
	/* only user messages carry attachments */
	const gchar *roles[] = {"system", "developer", "assistant"};
	for (guint i = 0; i < G_N_ELEMENTS(roles); i++) {
		g_autofree gchar *msg =
		    g_strdup_printf("{\"role\":\"%s\",\"content\":[{\"type\":\"image_url\","
				    "\"image_url\":{\"url\":\"https://example.com/a.png\"}}]}",
				    roles[i]);
		g_autofree gchar *body = one_message(msg);
		assert_refused(body, CONFAB_ERROR_INVALID_MESSAGES, "messages[0].content[0].type");
	}
	/* an assistant may refuse */
	{
		g_autofree gchar *body = one_message("{\"role\":\"assistant\",\"content\":[{"
						     "\"type\":\"refusal\",\"refusal\":\"no\"}]}");
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		g_assert_cmpstr(g_ptr_array_index(r->titles, 0), ==, "no");
	}
	{
		g_autofree gchar *body =
		    one_message("{\"role\":\"assistant\",\"content\":[{\"type\":\"refusal\"}]}");
		assert_refused(body,
			       CONFAB_ERROR_INVALID_MESSAGES,
			       "messages[0].content[0].refusal");
	}
}

static void
test_image_url(void)
{
	g_autofree gchar *body = user_content(
	    "[{\"type\":\"text\",\"text\":\"what is this?\"},"
	    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://example.com/cat.png\","
	    "\"detail\":\"low\"}},"
	    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/"
	    "png;base64,iVBORw0KGgo=\"}}]");
	g_autoptr(ConfabChatRequest) r = parse_ok(body);
	ConfabMessage *msg = g_ptr_array_index(r->messages, 0);
	g_autoptr(JsonNode) content = confab_json_from_string(confab_message_get_content(msg));
	g_autoptr(JsonNode) blocks =
	    confab_json_from_string(confab_message_get_content_blocks(msg));
	JsonArray *parts;
	JsonObject *img;

	g_assert_nonnull(content);
	parts = json_node_get_array(content);
	g_assert_cmpuint(json_array_get_length(parts), ==, 3);
	img = json_array_get_object_element(parts, 1);
	g_assert_cmpstr(json_object_get_string_member(img, "type"), ==, "image_url");
	g_assert_cmpstr(
	    json_object_get_string_member(json_object_get_object_member(img, "image_url"), "url"),
	    ==,
	    "https://example.com/cat.png");
	g_assert_cmpstr(
	    json_object_get_string_member(json_object_get_object_member(img, "image_url"),
					  "detail"),
	    ==,
	    "low");
	g_assert_cmpuint(json_array_get_length(json_node_get_array(blocks)), ==, 3);
	/* the text is the text parts only */
	g_assert_cmpstr(g_ptr_array_index(r->titles, 0), ==, "what is this?");
}

static void
test_image_url_refused(void)
{
	struct {
		const gchar *part;
		gint code;
		const gchar *param;
	} cases[] = {
	    {"{\"type\":\"image_url\"}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "messages[0].content[0].image_url"},
	    {"{\"type\":\"image_url\",\"image_url\":\"https://example.com/a.png\"}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "messages[0].content[0].image_url"},
	    {"{\"type\":\"image_url\",\"image_url\":{}}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "messages[0].content[0].image_url.url"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":5}}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "messages[0].content[0].image_url.url"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"ftp://example.com/a.png\"}}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "messages[0].content[0].image_url.url"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"file:///etc/passwd\"}}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "messages[0].content[0].image_url.url"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"a.png\"}}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "messages[0].content[0].image_url.url"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://example.com:port/a.png\"}}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "messages[0].content[0].image_url.url"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://example.com/a.png\","
	     "\"detail\":\"medium\"}}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "messages[0].content[0].image_url.detail"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://example.com/a.png\","
	     "\"detail\":1}}",
	     CONFAB_ERROR_INVALID_MESSAGES,
	     "messages[0].content[0].image_url.detail"},
	    /* data URLs: bad base64, not base64, no comma */
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,!!!!\"}}",
	     CONFAB_ERROR_INVALID_FILE,
	     "messages[0].content[0].image_url.url"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,A\"}}",
	     CONFAB_ERROR_INVALID_FILE,
	     "messages[0].content[0].image_url.url"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png,AAAA\"}}",
	     CONFAB_ERROR_INVALID_FILE,
	     "messages[0].content[0].image_url.url"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64\"}}",
	     CONFAB_ERROR_INVALID_FILE,
	     "messages[0].content[0].image_url.url"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AA AA\"}}",
	     CONFAB_ERROR_INVALID_FILE,
	     "messages[0].content[0].image_url.url"},
	};
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *content = g_strdup_printf("[%s]", cases[i].part);
		g_autofree gchar *body = user_content(content);
		assert_refused(body, cases[i].code, cases[i].param);
	}
}

static void
test_file_part(void)
{
	g_autofree gchar *body = user_content(
	    "[{\"type\":\"file\",\"file\":{\"filename\":\"a.txt\",\"file_data\":\"aGVsbG8=\"}},"
	    "{\"type\":\"file\",\"file\":{\"file_data\":\"data:application/pdf;base64,JVBERi0=\"}},"
	    "{\"type\":\"file\",\"file\":{\"file_id\":\"file-abc\"}}]");
	g_autoptr(ConfabChatRequest) r = parse_ok(body);
	ConfabMessage *msg = g_ptr_array_index(r->messages, 0);
	g_autoptr(JsonNode) content = confab_json_from_string(confab_message_get_content(msg));
	JsonObject *file;

	g_assert_cmpuint(json_array_get_length(json_node_get_array(content)), ==, 3);
	file = json_array_get_object_element(json_node_get_array(content), 0);
	g_assert_cmpstr(json_object_get_string_member(file, "type"), ==, "file");
	g_assert_cmpstr(
	    json_object_get_string_member(json_object_get_object_member(file, "file"), "file_data"),
	    ==,
	    "aGVsbG8=");
	g_assert_cmpstr(
	    json_object_get_string_member(json_object_get_object_member(file, "file"), "filename"),
	    ==,
	    "a.txt");
}

static void
test_file_part_refused(void)
{
	struct {
		const gchar *part;
		const gchar *param;
	} cases[] = {
	    {"{\"type\":\"file\"}", "messages[0].content[0].file"},
	    {"{\"type\":\"file\",\"file\":\"aGVsbG8=\"}", "messages[0].content[0].file"},
	    {"{\"type\":\"file\",\"file\":{}}", "messages[0].content[0].file"},
	    {"{\"type\":\"file\",\"file\":{\"filename\":\"a.txt\"}}",
	     "messages[0].content[0].file"},
	    {"{\"type\":\"file\",\"file\":{\"file_data\":\"aGVsbG8=\",\"filename\":1}}",
	     "messages[0].content[0].file.filename"},
	    {"{\"type\":\"file\",\"file\":{\"file_id\":1}}", "messages[0].content[0].file.file_id"},
	    {"{\"type\":\"file\",\"file\":{\"file_data\":1}}",
	     "messages[0].content[0].file.file_data"},
	    {"{\"type\":\"file\",\"file\":{\"file_data\":\"not base64!\"}}",
	     "messages[0].content[0].file.file_data"},
	    {"{\"type\":\"file\",\"file\":{\"file_data\":\"aGVsbG8h=\"}}",
	     "messages[0].content[0].file.file_data"},
	    {"{\"type\":\"file\",\"file\":{\"file_data\":\"aGVsbG8==\"}}",
	     "messages[0].content[0].file.file_data"},
	    {"{\"type\":\"file\",\"file\":{\"file_data\":\"aGVs\\nbG8=\"}}",
	     "messages[0].content[0].file.file_data"},
	    {"{\"type\":\"file\",\"file\":{\"file_data\":\"aGV-bG8_\"}}",
	     "messages[0].content[0].file.file_data"},
	    {"{\"type\":\"file\",\"file\":{\"file_data\":\"a===\"}}",
	     "messages[0].content[0].file.file_data"},
	    {"{\"type\":\"file\",\"file\":{\"file_data\":\"data:application/pdf;base64,@@@@\"}}",
	     "messages[0].content[0].file.file_data"},
	};
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *content = g_strdup_printf("[%s]", cases[i].part);
		g_autofree gchar *body = user_content(content);
		assert_refused(body, CONFAB_ERROR_INVALID_FILE, cases[i].param);
	}
	/* the index of the part is named */
	{
		g_autofree gchar *body =
		    user_content("[{\"type\":\"text\",\"text\":\"x\"},"
				 "{\"type\":\"file\",\"file\":{\"file_data\":\"%%%%\"}}]");
		assert_refused(body,
			       CONFAB_ERROR_INVALID_FILE,
			       "messages[0].content[1].file.file_data");
	}
}

static gchar *
n_images(guint n)
{
	GString *content = g_string_new("[");
	for (guint i = 0; i < n; i++) {
		if (i > 0)
			g_string_append_c(content, ',');
		g_string_append(content,
				"{\"type\":\"image_url\",\"image_url\":{\"url\":"
				"\"https://example.com/a.png\"}}");
	}
	g_string_append_c(content, ']');
	return g_string_free(content, FALSE);
}

static void
test_too_many_files(void)
{
	g_autofree gchar *ten = n_images(10);
	g_autofree gchar *eleven = n_images(11);
	g_autofree gchar *body_ten = user_content(ten);
	g_autofree gchar *body_eleven = user_content(eleven);
	g_autofree gchar *two_messages = NULL;
	ConfabChatLimits limits = default_limits;

	{
		g_autoptr(ConfabChatRequest) r = parse_ok(body_ten);
		g_assert_nonnull(r);
	}
	assert_refused(body_eleven, CONFAB_ERROR_INVALID_FILE, "messages[0].content[10]");

	/* the limit is per message */
	two_messages = g_strdup_printf("{\"model\":\"agt_x\",\"messages\":["
				       "{\"role\":\"user\",\"content\":%s},"
				       "{\"role\":\"user\",\"content\":%s}]}",
				       ten,
				       ten);
	{
		g_autoptr(ConfabChatRequest) r = parse_ok(two_messages);
		g_assert_cmpuint(r->messages->len, ==, 2);
	}

	/* files and images count together, against the configured limit */
	limits.max_files = 2;
	{
		g_autofree gchar *body = user_content(
		    "[{\"type\":\"file\",\"file\":{\"file_data\":\"aGVsbG8=\"}},"
		    "{\"type\":\"text\",\"text\":\"x\"},"
		    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://a.example/\"}},"
		    "{\"type\":\"file\",\"file\":{\"file_id\":\"f\"}}]");
		assert_refused_limits(body,
				      &limits,
				      CONFAB_ERROR_INVALID_FILE,
				      "messages[0].content[3]");
	}
	limits.max_files = 0;
	{
		g_autofree gchar *body = user_content("[{\"type\":\"text\",\"text\":\"x\"}]");
		g_autoptr(ConfabChatRequest) r = parse_ok_limits(body, &limits);
		g_assert_nonnull(r);
	}
}

static void
test_file_too_large(void)
{
	ConfabChatLimits limits = default_limits;

	limits.max_file_bytes = 3;
	{
		/* "AAAA" decodes to exactly 3 bytes */
		g_autofree gchar *body =
		    user_content("[{\"type\":\"file\",\"file\":{\"file_data\":\"AAAA\"}}]");
		g_autoptr(ConfabChatRequest) r = parse_ok_limits(body, &limits);
		g_assert_nonnull(r);
	}
	{
		g_autofree gchar *body =
		    user_content("[{\"type\":\"file\",\"file\":{\"file_data\":\"AAAAAA==\"}}]");
		assert_refused_limits(body,
				      &limits,
				      CONFAB_ERROR_INVALID_FILE,
				      "messages[0].content[0].file.file_data");
	}
	{
		g_autofree gchar *body =
		    user_content("[{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/"
				 "png;base64,AAAAAA\"}}]");
		assert_refused_limits(body,
				      &limits,
				      CONFAB_ERROR_INVALID_FILE,
				      "messages[0].content[0].image_url.url");
	}
	{
		g_autofree gchar *body = user_content("[{\"type\":\"image_url\",\"image_url\":{"
						      "\"url\":\"data:image/png;base64,AAA=\"}}]");
		g_autoptr(ConfabChatRequest) r = parse_ok_limits(body, &limits);
		g_assert_nonnull(r);
	}
}

static void
test_base64_check(void)
{
	struct {
		const gchar *text;
		gboolean ok;
		gsize decoded;
	} cases[] = {
	    {"", TRUE, 0},	   {"AA==", TRUE, 1},
	    {"AAA=", TRUE, 2},	   {"AAAA", TRUE, 3},
	    {"AA", TRUE, 1},	   {"AAA", TRUE, 2},
	    {"aGVsbG8=", TRUE, 5}, {"aGVsbG8", TRUE, 5},
	    {"+/+/", TRUE, 3},	   {"A", FALSE, 0},
	    {"AAAAA", FALSE, 0},   {"A===", FALSE, 0},
	    {"====", FALSE, 0},	   {"AA=", FALSE, 0},
	    {"AA===", FALSE, 0},   {"AAAA=", FALSE, 0},
	    {"AAAA==", FALSE, 0},  {"AA=A", FALSE, 0},
	    {"-_-_", FALSE, 0},	   {"AA AA", FALSE, 0},
	    {"AAAA\n", FALSE, 0},  {"AA\xc3\xa9", FALSE, 0},
	};
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		gsize decoded = 999;
		gboolean ok = confab_chat_request_base64_check(cases[i].text,
							       strlen(cases[i].text),
							       &decoded);
		if (ok != cases[i].ok)
			g_error("base64 '%s': expected %d", cases[i].text, cases[i].ok);
		if (ok) {
			g_assert_cmpuint(decoded, ==, cases[i].decoded);
			/* agrees with GLib's decoder */
			if (cases[i].text[0] != '\0' && strlen(cases[i].text) % 4 == 0) {
				gsize glen = 0;
				g_autofree guchar *raw = g_base64_decode(cases[i].text, &glen);
				g_assert_cmpuint(glen, ==, decoded);
			}
		}
	}
	g_assert_true(confab_chat_request_base64_check("AAAA", 4, NULL));
	/* the length is obeyed: "AAAA!" cut to 4 */
	g_assert_true(confab_chat_request_base64_check("AAAA!", 4, NULL));
}

static void
test_tool_messages(void)
{
	g_autoptr(ConfabChatRequest) r =
	    parse_ok("{\"model\":\"agt_x\",\"messages\":["
		     "{\"role\":\"user\",\"content\":\"weather?\"},"
		     "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\","
		     "\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
		     "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},"
		     "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"sunny\"}]}");
	ConfabMessage *assistant = g_ptr_array_index(r->messages, 1);
	ConfabMessage *tool = g_ptr_array_index(r->messages, 2);
	g_autoptr(JsonNode) blocks =
	    confab_json_from_string(confab_message_get_content_blocks(assistant));
	JsonObject *call;

	g_assert_cmpuint(r->messages->len, ==, 3);
	g_assert_nonnull(blocks);
	g_assert_cmpuint(json_array_get_length(json_node_get_array(blocks)), ==, 1);
	call = json_array_get_object_element(json_node_get_array(blocks), 0);
	g_assert_cmpstr(json_object_get_string_member(call, "type"), ==, "tool_call");
	g_assert_cmpstr(json_object_get_string_member(call, "id"), ==, "call_1");
	g_assert_cmpstr(json_object_get_string_member(call, "name"), ==, "get_weather");
	g_assert_cmpstr(json_object_get_string_member(call, "arguments"),
			==,
			"{\"city\":\"Paris\"}");
	g_assert_cmpstr(confab_message_get_content(assistant), ==, "[]");

	g_assert_cmpstr(confab_message_get_role(tool), ==, "tool");
	g_assert_cmpstr(confab_message_get_content_blocks(tool),
			==,
			"[{\"type\":\"tool_result\",\"tool_call_id\":\"call_1\",\"content\":"
			"\"sunny\",\"is_error\":false}]");
	g_assert_cmpstr(g_ptr_array_index(r->titles, 2), ==, "sunny");
}

/* An assistant message's blocks: its reasoning, its text, its calls, in
 * the transcript's order (docs/api.md 3.5); text alone is its parts. */
static void
test_assistant_blocks(void)
{
	const struct {
		const gchar *message;
		const gchar *blocks;
	} cases[] = {
	    {"{\"role\":\"assistant\",\"content\":\"a\"}", "[{\"type\":\"text\",\"text\":\"a\"}]"},
	    {"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":"
	     "\"refusal\",\"refusal\":\"no\"}]}",
	     "[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"no\"}]"},
	    {"{\"role\":\"assistant\",\"content\":\"a\",\"reasoning_content\":\"r\",\"tool_calls\":"
	     "[{\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}",
	     "[{\"type\":\"reasoning\",\"text\":\"r\"},{\"type\":\"text\",\"text\":\"a\"},{"
	     "\"type\":\"tool_call\",\"id\":\"c\",\"name\":\"f\",\"arguments\":\"{}\"}]"},
	    /* OpenRouter's name; an empty reasoning is none */
	    {"{\"role\":\"assistant\",\"content\":\"a\",\"reasoning\":\"r\"}",
	     "[{\"type\":\"reasoning\",\"text\":\"r\"},{\"type\":\"text\",\"text\":\"a\"}]"},
	    {"{\"role\":\"assistant\",\"content\":\"a\",\"reasoning_content\":\"\"}",
	     "[{\"type\":\"text\",\"text\":\"a\"}]"},
	    {"{\"role\":\"assistant\",\"content\":\"a\",\"reasoning\":{\"x\":1}}",
	     "[{\"type\":\"text\",\"text\":\"a\"}]"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *body = one_message(cases[i].message);
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		ConfabMessage *msg = g_ptr_array_index(r->messages, 0);

		g_test_message("case %u", i);
		g_assert_cmpstr(confab_message_get_content_blocks(msg), ==, cases[i].blocks);
	}
}

static void
test_tool_messages_refused(void)
{
	struct {
		const gchar *message;
		const gchar *param;
	} cases[] = {
	    {"{\"role\":\"tool\",\"content\":\"x\"}", "messages[0].tool_call_id"},
	    {"{\"role\":\"tool\",\"tool_call_id\":1,\"content\":\"x\"}",
	     "messages[0].tool_call_id"},
	    {"{\"role\":\"tool\",\"tool_call_id\":null,\"content\":\"x\"}",
	     "messages[0].tool_call_id"},
	    {"{\"role\":\"tool\",\"tool_call_id\":\"c\"}", "messages[0].content"},
	    {"{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":[{\"type\":\"image_url\","
	     "\"image_url\":{\"url\":\"https://a.example/\"}}]}",
	     "messages[0].content[0].type"},
	    {"{\"role\":\"assistant\"}", "messages[0].content"},
	    {"{\"role\":\"assistant\",\"content\":null}", "messages[0].content"},
	    {"{\"role\":\"assistant\",\"tool_calls\":{}}", "messages[0].tool_calls"},
	    {"{\"role\":\"assistant\",\"tool_calls\":[1]}", "messages[0].tool_calls[0]"},
	    {"{\"role\":\"assistant\",\"tool_calls\":[{\"type\":\"function\",\"function\":"
	     "{\"name\":\"f\",\"arguments\":\"{}\"}}]}",
	     "messages[0].tool_calls[0]"},
	    {"{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":\"other\","
	     "\"function\":"
	     "{\"name\":\"f\",\"arguments\":\"{}\"}}]}",
	     "messages[0].tool_calls[0]"},
	    {"{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\"}]}",
	     "messages[0].tool_calls[0]"},
	    {"{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":"
	     "{\"arguments\":\"{}\"}}]}",
	     "messages[0].tool_calls[0].function"},
	    {"{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":"
	     "{\"name\":\"f\",\"arguments\":{}}}]}",
	     "messages[0].tool_calls[0].function"},
	    {"{\"role\":\"assistant\",\"content\":\"a\",\"reasoning_content\":7}",
	     "messages[0].reasoning_content"},
	    {"{\"role\":\"assistant\",\"content\":\"a\",\"reasoning_content\":[\"r\"]}",
	     "messages[0].reasoning_content"},
	    /* reasoning alone is no message */
	    {"{\"role\":\"assistant\",\"reasoning_content\":\"r\"}", "messages[0].content"},
	};
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *body = one_message(cases[i].message);
		assert_refused(body, CONFAB_ERROR_INVALID_MESSAGES, cases[i].param);
	}
	/* type may be left out */
	{
		g_autofree gchar *body = one_message(
		    "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"function\":"
		    "{\"name\":\"f\",\"arguments\":\"{}\"}}]}");
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		g_assert_nonnull(r);
	}
}

static void
test_stream(void)
{
	struct {
		const gchar *extra;
		const gchar *param;
	} cases[] = {
	    {"\"stream\":\"true\"", "stream"},
	    {"\"stream\":1", "stream"},
	    {"\"stream\":{}", "stream"},
	    {"\"stream_options\":true", "stream_options"},
	    {"\"stream_options\":[]", "stream_options"},
	    {"\"stream_options\":{\"include_usage\":\"yes\"}", "stream_options.include_usage"},
	    {"\"stream_options\":{\"include_usage\":1}", "stream_options.include_usage"},
	};
	{
		g_autofree gchar *body = with_extra("\"stream\":true");
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		g_assert_true(r->stream);
		g_assert_false(r->include_usage);
	}
	{
		g_autofree gchar *body =
		    with_extra("\"stream\":true,\"stream_options\":{\"include_usage\":true}");
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		g_assert_true(r->stream);
		g_assert_true(r->include_usage);
	}
	{
		g_autofree gchar *body = with_extra("\"stream\":false,\"stream_options\":null");
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		g_assert_false(r->stream);
	}
	{
		g_autofree gchar *body = with_extra("\"stream\":null");
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		g_assert_false(r->stream);
	}
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *body = with_extra(cases[i].extra);
		assert_refused(body, CONFAB_ERROR_INVALID_VALUE, cases[i].param);
	}
}

static void
test_metadata(void)
{
	struct {
		const gchar *extra;
		const gchar *param;
	} cases[] = {
	    {"\"metadata\":\"cts_abc\"", "metadata"},
	    {"\"metadata\":[]", "metadata"},
	    {"\"metadata\":{\"session_id\":1}", "metadata.session_id"},
	    {"\"metadata\":{\"session_id\":{}}", "metadata.session_id"},
	    {"\"metadata\":{\"session_id\":[\"cts_abc\"]}", "metadata.session_id"},
	};
	{
		g_autofree gchar *body = with_extra("\"metadata\":{\"session_id\":\"cts_abc\"}");
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		g_assert_cmpstr(r->session_id, ==, "cts_abc");
	}
	{
		g_autofree gchar *body = with_extra("\"metadata\":{\"other\":\"x\"}");
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		g_assert_null(r->session_id);
	}
	{
		g_autofree gchar *body = with_extra("\"metadata\":{\"session_id\":null}");
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		g_assert_null(r->session_id);
	}
	{
		g_autofree gchar *body = with_extra("\"metadata\":null");
		g_autoptr(ConfabChatRequest) r = parse_ok(body);
		g_assert_null(r->session_id);
	}
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *body = with_extra(cases[i].extra);
		assert_refused(body, CONFAB_ERROR_INVALID_VALUE, cases[i].param);
	}
}

static void
test_params(void)
{
	g_autofree gchar *body =
	    with_extra("\"temperature\":0.5,\"top_p\":1,\"max_tokens\":100,\"seed\":-3,"
		       "\"stop\":[\"a\",\"b\"],\"user\":\"u\",\"presence_penalty\":-2,"
		       "\"frequency_penalty\":2,\"logprobs\":true,\"top_logprobs\":20,"
		       "\"tools\":[],\"tool_choice\":\"auto\",\"parallel_tool_calls\":false,"
		       "\"response_format\":{\"type\":\"json_object\"},\"n\":1,"
		       "\"max_completion_tokens\":5,\"logit_bias\":{\"50256\":-100},"
		       "\"reasoning_effort\":\"low\",\"unknown_param\":42,\"frequency\":\"x\"");
	g_autoptr(ConfabChatRequest) r = parse_ok(body);

	g_assert_nonnull(r->params);
	g_assert_cmpfloat(json_object_get_double_member(r->params, "temperature"), ==, 0.5);
	g_assert_cmpint(json_object_get_int_member(r->params, "max_tokens"), ==, 100);
	g_assert_cmpint(json_object_get_int_member(r->params, "seed"), ==, -3);
	g_assert_cmpstr(json_object_get_string_member(r->params, "user"), ==, "u");
	g_assert_true(json_object_has_member(r->params, "stop"));
	g_assert_true(json_object_has_member(r->params, "tools"));
	g_assert_true(json_object_has_member(r->params, "tool_choice"));
	g_assert_true(json_object_has_member(r->params, "response_format"));
	g_assert_true(json_object_has_member(r->params, "logit_bias"));
	g_assert_true(json_object_has_member(r->params, "reasoning_effort"));
	/* unknown parameters go upstream as given: the upstream judges them */
	g_assert_cmpint(json_object_get_int_member(r->params, "unknown_param"), ==, 42);
	g_assert_cmpstr(json_object_get_string_member(r->params, "frequency"), ==, "x");
	/* n is checked, not passed */
	g_assert_false(json_object_has_member(r->params, "n"));
	/* nor are the members Confab handles itself */
	g_assert_false(json_object_has_member(r->params, "model"));
	g_assert_false(json_object_has_member(r->params, "messages"));
	g_assert_false(json_object_has_member(r->params, "metadata"));

	/* null means absent */
	{
		g_autofree gchar *nulls = with_extra("\"temperature\":null,\"max_tokens\":null");
		g_autoptr(ConfabChatRequest) r2 = parse_ok(nulls);
		g_assert_null(r2->params);
	}
	/* the range ends are included */
	{
		g_autofree gchar *ends = with_extra("\"temperature\":0,\"top_p\":0");
		g_autoptr(ConfabChatRequest) r3 = parse_ok(ends);
		g_assert_nonnull(r3->params);
	}
	{
		g_autofree gchar *ends = with_extra("\"temperature\":2.0,\"top_logprobs\":0");
		g_autoptr(ConfabChatRequest) r4 = parse_ok(ends);
		g_assert_nonnull(r4->params);
	}
}

static void
test_params_refused(void)
{
	struct {
		const gchar *extra;
		const gchar *param;
	} cases[] = {
	    {"\"temperature\":2.5", "temperature"},
	    {"\"temperature\":2.0001", "temperature"},
	    {"\"temperature\":-0.1", "temperature"},
	    {"\"temperature\":\"1\"", "temperature"},
	    {"\"temperature\":true", "temperature"},
	    {"\"temperature\":[1]", "temperature"},
	    {"\"top_p\":1.5", "top_p"},
	    {"\"top_p\":-1", "top_p"},
	    {"\"max_tokens\":0", "max_tokens"},
	    {"\"max_tokens\":-1", "max_tokens"},
	    {"\"max_tokens\":1.5", "max_tokens"},
	    {"\"max_tokens\":\"10\"", "max_tokens"},
	    {"\"max_completion_tokens\":0", "max_completion_tokens"},
	    {"\"seed\":1.5", "seed"},
	    {"\"seed\":\"1\"", "seed"},
	    {"\"stop\":1", "stop"},
	    {"\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]", "stop"},
	    {"\"stop\":[\"a\",1]", "stop"},
	    {"\"stop\":{}", "stop"},
	    {"\"user\":1", "user"},
	    {"\"presence_penalty\":-2.5", "presence_penalty"},
	    {"\"frequency_penalty\":3", "frequency_penalty"},
	    {"\"logit_bias\":[]", "logit_bias"},
	    {"\"logprobs\":\"yes\"", "logprobs"},
	    {"\"logprobs\":1", "logprobs"},
	    {"\"top_logprobs\":21", "top_logprobs"},
	    {"\"top_logprobs\":-1", "top_logprobs"},
	    {"\"tools\":{}", "tools"},
	    {"\"tools\":\"x\"", "tools"},
	    {"\"tool_choice\":1", "tool_choice"},
	    {"\"tool_choice\":[]", "tool_choice"},
	    {"\"parallel_tool_calls\":\"no\"", "parallel_tool_calls"},
	    {"\"response_format\":\"json\"", "response_format"},
	    {"\"reasoning_effort\":1", "reasoning_effort"},
	    {"\"n\":2", "n"},
	    {"\"n\":0", "n"},
	    {"\"n\":\"1\"", "n"},
	    {"\"n\":1.5", "n"},
	};
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *body = with_extra(cases[i].extra);
		assert_refused(body, CONFAB_ERROR_INVALID_VALUE, cases[i].param);
	}
}

static void
test_numbers_out_of_range(void)
{
	/* json-glib wraps integers outside int64: -2^63-1 would become
	 * 2^63-1, a valid max_tokens; 2^63 a negative seed */
	const gchar *extras[] = {
	    "\"max_tokens\":-9223372036854775809",
	    "\"max_tokens\":9223372036854775808",
	    "\"max_completion_tokens\":-9223372036854775809",
	    "\"seed\":9223372036854775808",
	    "\"seed\":-9223372036854775809",
	    "\"top_logprobs\":18446744073709551620",
	    "\"temperature\":1e400",
	    "\"temperature\":-1e400",
	    "\"n\":18446744073709551617",
	};
	for (guint i = 0; i < G_N_ELEMENTS(extras); i++) {
		g_autofree gchar *body = with_extra(extras[i]);
		assert_refused_400(body);
	}
}

static void
test_stored_parts_are_json(void)
{
	/* image_url and file objects are stored as given: what is stored must
	 * be JSON that reads back, whatever numbers the client put in them */
	const gchar *contents[] = {
	    "[{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://a.example/x.png\","
	    "\"w\":1e20,\"h\":0.1,\"z\":-0.0}}]",
	    "[{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://a.example/x.png\","
	    "\"w\":1e400}}]",
	    "[{\"type\":\"file\",\"file\":{\"file_id\":\"f\",\"size\":1.5e300,"
	    "\"n\":9223372036854775807}}]",
	    "[{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://a.example/x.png\","
	    "\"tag\":\"\\u00e9\\n\\\"\"}}]",
	};
	for (guint i = 0; i < G_N_ELEMENTS(contents); i++) {
		g_autofree gchar *body = user_content(contents[i]);
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabChatRequest) r =
		    confab_chat_request_parse(body, strlen(body), &default_limits, &error);
		ConfabMessage *msg;
		const gchar *stored[2];

		if (r == NULL) {
			/* refusing is fine, as a 400 */
			g_assert_true(confab_error_is_client_error(error));
			continue;
		}
		msg = g_ptr_array_index(r->messages, 0);
		stored[0] = confab_message_get_content(msg);
		stored[1] = confab_message_get_content_blocks(msg);
		for (guint k = 0; k < 2; k++) {
			g_autoptr(GError) error2 = NULL;
			if (!confab_json_check(stored[k], strlen(stored[k]), 64, &error2))
				g_error("stored %s is not JSON: %s", stored[k], error2->message);
		}
	}
}

static void
test_new_text(void)
{
	g_autoptr(ConfabChatRequest) r =
	    confab_chat_request_new_text("agt_x", "cts_y", "say \"hi\"\n\xc3\xa9");
	ConfabMessage *msg = g_ptr_array_index(r->messages, 0);
	g_autoptr(JsonNode) content = confab_json_from_string(confab_message_get_content(msg));

	g_assert_cmpstr(r->model, ==, "agt_x");
	g_assert_cmpstr(r->session_id, ==, "cts_y");
	g_assert_cmpstr(confab_message_get_role(msg), ==, "user");
	g_assert_cmpstr(g_ptr_array_index(r->titles, 0), ==, "say \"hi\" \xc3\xa9");
	g_assert_nonnull(content);
	g_assert_cmpstr(json_object_get_string_member(
			    json_array_get_object_element(json_node_get_array(content), 0),
			    "text"),
			==,
			"say \"hi\"\n\xc3\xa9");
	{
		g_autoptr(ConfabChatRequest) r2 = confab_chat_request_new_text("agt_x", NULL, "");
		g_assert_null(r2->session_id);
	}
}

/* what a provider is sent for a stored message is the same whether its
 * blocks are one text (read without a tree) or not */
static void
test_stored_one_text(void)
{
	const struct {
		const gchar *role;
		const gchar *blocks;
		const gchar *expected; /* the context, as JSON */
	} cases[] = {
	    {"user",
	     "[{\"type\":\"text\",\"text\":\"Say \\\"hi\\\"\\n\\u00e9\"}]",
	     "[{\"role\":\"user\",\"content\":\"Say \\\"hi\\\"\\n\u00e9\"}]"},
	    {"user",
	     "[{\"type\":\"text\",\"text\":\"\"}]",
	     "[{\"role\":\"user\",\"content\":\"\"}]"},
	    {"assistant",
	     "[{\"type\":\"text\",\"text\":\"Hello\"}]",
	     "[{\"role\":\"assistant\",\"content\":\"Hello\"}]"},
	    {"assistant", "[{\"type\":\"text\",\"text\":\"\"}]", "[]"},
	    /* not one text: the tree, as before */
	    {"user",
	     "[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]",
	     "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},"
	     "{\"type\":\"text\",\"text\":\"b\"}]}]"},
	    {"user",
	     "[{\"type\":\"text\",\"text\":\"a\",\"x\":1}]",
	     "[{\"role\":\"user\",\"content\":\"a\"}]"},
	    {"system",
	     "[{\"type\":\"text\",\"text\":\"a\"}] ",
	     "[{\"role\":\"system\",\"content\":\"a\"}]"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(ConfabMessage) msg = confab_message_new();
		g_autoptr(JsonArray) context = json_array_new();
		g_autoptr(JsonNode) node = json_node_alloc();
		g_autofree gchar *got = NULL;

		confab_message_set_role(msg, cases[i].role);
		confab_message_set_content_blocks(msg, cases[i].blocks);
		confab_openai_message_append_stored(context, msg);
		json_node_init_array(node, context);
		got = confab_json_to_string(node);
		g_assert_cmpstr(got, ==, cases[i].expected);
	}
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/chat-request/minimal", test_minimal);
	g_test_add_func("/confab/chat-request/text-kept-exactly", test_text_kept_exactly);
	g_test_add_func("/confab/chat-request/roles", test_roles);
	g_test_add_func("/confab/chat-request/not-json", test_not_json);
	g_test_add_func("/confab/chat-request/depth-limit", test_depth_limit);
	g_test_add_func("/confab/chat-request/model", test_model);
	g_test_add_func("/confab/chat-request/messages-shape", test_messages_shape);
	g_test_add_func("/confab/chat-request/roles-refused", test_roles_refused);
	g_test_add_func("/confab/chat-request/content-shapes", test_content_shapes);
	g_test_add_func("/confab/chat-request/content-parts", test_content_parts);
	g_test_add_func("/confab/chat-request/content-parts-refused", test_content_parts_refused);
	g_test_add_func("/confab/chat-request/parts-by-role", test_parts_by_role);
	g_test_add_func("/confab/chat-request/image-url", test_image_url);
	g_test_add_func("/confab/chat-request/image-url-refused", test_image_url_refused);
	g_test_add_func("/confab/chat-request/file-part", test_file_part);
	g_test_add_func("/confab/chat-request/file-part-refused", test_file_part_refused);
	g_test_add_func("/confab/chat-request/too-many-files", test_too_many_files);
	g_test_add_func("/confab/chat-request/file-too-large", test_file_too_large);
	g_test_add_func("/confab/chat-request/base64-check", test_base64_check);
	g_test_add_func("/confab/chat-request/tool-messages", test_tool_messages);
	g_test_add_func("/confab/chat-request/assistant-blocks", test_assistant_blocks);
	g_test_add_func("/confab/chat-request/tool-messages-refused", test_tool_messages_refused);
	g_test_add_func("/confab/chat-request/stream", test_stream);
	g_test_add_func("/confab/chat-request/metadata", test_metadata);
	g_test_add_func("/confab/chat-request/params", test_params);
	g_test_add_func("/confab/chat-request/params-refused", test_params_refused);
	g_test_add_func("/confab/chat-request/numbers-out-of-range", test_numbers_out_of_range);
	g_test_add_func("/confab/chat-request/stored-parts-are-json", test_stored_parts_are_json);
	g_test_add_func("/confab/chat-request/new-text", test_new_text);
	g_test_add_func("/confab/chat-request/stored-one-text", test_stored_one_text);
	return g_test_run();
}
