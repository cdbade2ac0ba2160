/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <gio/gio.h>
#include <string.h>

#include "confab-test-helper.h"
#include "openai/confab-openai-error.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/* CONFAB_ERROR codes over HTTP: the contract's error table, and the OpenAI
 * error body. */

typedef struct {
	ConfabErrorCode code;
	guint status;
	const gchar *type;
	const gchar *err_code;
} Row;

/* transcribed from the contract, "Errors" */
static const Row contract[] = {
    {CONFAB_ERROR_INVALID_JSON, 400, "invalid_request_error", "invalid_json"},
    {CONFAB_ERROR_MISSING_MODEL, 400, "invalid_request_error", "missing_model"},
    {CONFAB_ERROR_INVALID_MESSAGES, 400, "invalid_request_error", "invalid_messages"},
    {CONFAB_ERROR_INVALID_VALUE, 400, "invalid_request_error", "invalid_value"},
    {CONFAB_ERROR_INVALID_LIMIT, 400, "invalid_request_error", "invalid_limit"},
    {CONFAB_ERROR_INVALID_ORDER, 400, "invalid_request_error", "invalid_order"},
    {CONFAB_ERROR_INVALID_AFTER, 400, "invalid_request_error", "invalid_after"},
    {CONFAB_ERROR_INVALID_FILE, 400, "invalid_request_error", "invalid_file"},
    {CONFAB_ERROR_MISSING_API_KEY, 401, "authentication_error", "missing_api_key"},
    {CONFAB_ERROR_INVALID_API_KEY, 401, "authentication_error", "invalid_api_key"},
    {CONFAB_ERROR_INSUFFICIENT_SCOPE, 403, "permission_error", "insufficient_scope"},
    {CONFAB_ERROR_PERMISSION_DENIED, 403, "permission_error", "permission_denied"},
    {CONFAB_ERROR_AGENT_NOT_FOUND, 404, "not_found_error", "agent_not_found"},
    {CONFAB_ERROR_CONVERSATION_NOT_FOUND, 404, "not_found_error", "conversation_not_found"},
    {CONFAB_ERROR_NOT_FOUND, 404, "not_found_error", "route_not_found"},
    {CONFAB_ERROR_METHOD_NOT_ALLOWED, 405, "invalid_request_error", "method_not_allowed"},
    {CONFAB_ERROR_CONVERSATION_BUSY, 409, "conflict_error", "conversation_busy"},
    {CONFAB_ERROR_REQUEST_TOO_LARGE, 413, "invalid_request_error", "request_too_large"},
    {CONFAB_ERROR_UNSUPPORTED_MEDIA_TYPE, 415, "invalid_request_error", "unsupported_media_type"},
    {CONFAB_ERROR_QUOTA_EXCEEDED, 429, "insufficient_quota", "insufficient_quota"},
    {CONFAB_ERROR_UPSTREAM, 502, "upstream_error", "upstream_error"},
    {CONFAB_ERROR_UPSTREAM_TIMEOUT, 504, "upstream_error", "upstream_timeout"},
    {CONFAB_ERROR_SHUTTING_DOWN, 503, "service_unavailable", "shutting_down"},
};

static JsonObject *
parse_body(const gchar *body, JsonNode **root_out)
{
	g_autoptr(GError) error = NULL;
	JsonNode *root = confab_json_parse(body, strlen(body), 8, &error);
	JsonObject *obj;

	g_assert_no_error(error);
	g_assert_true(JSON_NODE_HOLDS_OBJECT(root));
	obj = json_node_get_object(root);
	/* exactly {"error":{...}} */
	g_assert_cmpuint(json_object_get_size(obj), ==, 1);
	g_assert_true(json_object_has_member(obj, "error"));
	*root_out = root;
	return json_object_get_object_member(obj, "error");
}

static void
test_contract_table(void)
{
	for (guint i = 0; i < G_N_ELEMENTS(contract); i++) {
		g_autoptr(GError) error =
		    g_error_new_literal(CONFAB_ERROR, contract[i].code, "message");
		const ConfabOpenaiErrorInfo *info = confab_openai_error_info(error);

		if (info->status != contract[i].status ||
		    g_strcmp0(info->type, contract[i].type) != 0 ||
		    g_strcmp0(info->code, contract[i].err_code) != 0)
			g_error("code %d maps to %u %s %s, the contract says %u %s %s",
				contract[i].code,
				info->status,
				info->type,
				info->code,
				contract[i].status,
				contract[i].type,
				contract[i].err_code);
		/* 4xx exactly for the client's faults */
		g_assert_cmpint(confab_error_is_client_error(error), ==, info->status < 500);
	}
}

static void
test_every_code_mapped(void)
{
	/* no code falls through to an empty row */
	for (gint code = 0; code < CONFAB_ERROR_LAST; code++) {
		g_autoptr(GError) error = g_error_new_literal(CONFAB_ERROR, code, "m");
		const ConfabOpenaiErrorInfo *info = confab_openai_error_info(error);
		g_assert_cmpuint(info->status, >=, 400);
		g_assert_cmpuint(info->status, <, 600);
		g_assert_nonnull(info->type);
		g_assert_nonnull(info->code);
		g_assert_cmpstr(info->code, !=, "");
	}
}

static void
test_unknown_errors_are_500(void)
{
	g_autoptr(GError) io = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_FAILED, "disk on fire");
	g_autoptr(GError) out_of_range = g_error_new_literal(CONFAB_ERROR, CONFAB_ERROR_LAST, "x");
	g_autoptr(GError) negative = g_error_new_literal(CONFAB_ERROR, -1, "x");

	g_assert_cmpuint(confab_openai_error_info(io)->status, ==, 500);
	g_assert_cmpuint(confab_openai_error_info(NULL)->status, ==, 500);
	g_assert_cmpuint(confab_openai_error_info(out_of_range)->status, ==, 500);
	g_assert_cmpuint(confab_openai_error_info(negative)->status, ==, 500);
	g_assert_cmpstr(confab_openai_error_info(io)->type, ==, "server_error");
}

static void
test_body_shape(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *body = NULL;
	g_autoptr(JsonNode) root = NULL;
	JsonObject *obj;

	confab_error_set(&error,
			 CONFAB_ERROR_INVALID_MESSAGES,
			 "messages[2].role",
			 "role must be \"user\"\n or <b>other</b> \\ \xc3\xa9");
	body = confab_openai_error_body(error);
	obj = parse_body(body, &root);
	g_assert_cmpuint(json_object_get_size(obj), ==, 4);
	g_assert_cmpstr(json_object_get_string_member(obj, "message"),
			==,
			"role must be \"user\"\n or <b>other</b> \\ \xc3\xa9");
	g_assert_cmpstr(json_object_get_string_member(obj, "type"), ==, "invalid_request_error");
	g_assert_cmpstr(json_object_get_string_member(obj, "param"), ==, "messages[2].role");
	g_assert_cmpstr(json_object_get_string_member(obj, "code"), ==, "invalid_messages");
}

static void
test_body_null_param(void)
{
	g_autoptr(GError) error =
	    g_error_new_literal(CONFAB_ERROR, CONFAB_ERROR_INVALID_JSON, "bad");
	g_autofree gchar *body = confab_openai_error_body(error);
	g_autoptr(JsonNode) root = NULL;
	JsonObject *obj = parse_body(body, &root);

	/* param is present, and null */
	g_assert_true(json_object_has_member(obj, "param"));
	g_assert_true(json_object_get_null_member(obj, "param"));
	g_assert_cmpstr(json_object_get_string_member(obj, "code"), ==, "invalid_json");
}

static void
test_internal_errors_hidden(void)
{
	/* the text of an internal error is logged, never sent */
	g_autoptr(GError) io =
	    g_error_new_literal(G_IO_ERROR, G_IO_ERROR_FAILED, "/var/lib/confab/confab.db: secret");
	g_autoptr(GError) failed =
	    g_error_new_literal(CONFAB_ERROR, CONFAB_ERROR_FAILED, "sqlite3_step: SELECT api_key");
	GError *errors[] = {io, failed};

	for (guint i = 0; i < G_N_ELEMENTS(errors); i++) {
		g_autofree gchar *body = confab_openai_error_body(errors[i]);
		g_autoptr(JsonNode) root = NULL;
		JsonObject *obj = parse_body(body, &root);

		g_assert_null(strstr(body, "secret"));
		g_assert_null(strstr(body, "sqlite3"));
		g_assert_null(strstr(body, "api_key"));
		g_assert_cmpstr(json_object_get_string_member(obj, "type"), ==, "server_error");
		g_assert_true(json_object_get_null_member(obj, "param"));
		g_assert_cmpstr(json_object_get_string_member(obj, "message"), !=, "");
	}
}

static void
test_append_object(void)
{
	g_autoptr(GString) out = g_string_new("data: {\"error\":");
	g_autoptr(GError) error =
	    g_error_new_literal(CONFAB_ERROR, CONFAB_ERROR_UPSTREAM, "The upstream said no");

	/* for an in-stream error event */
	confab_openai_error_append_object(out, error);
	g_string_append_c(out, '}');
	g_assert_cmpstr(out->str,
			==,
			"data: {\"error\":{\"message\":\"The upstream said no\",\"type\":"
			"\"upstream_error\",\"param\":null,\"code\":\"upstream_error\"}}");
}

static void
test_param_helpers(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) copy = NULL;
	g_autoptr(GError) other = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_FAILED, "x");

	confab_error_set_printf(&error, CONFAB_ERROR_INVALID_VALUE, "temperature", "%d", 3);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	g_assert_cmpstr(error->message, ==, "3");
	g_assert_cmpstr(confab_error_get_param(error), ==, "temperature");
	/* the param survives a copy */
	copy = g_error_copy(error);
	g_assert_cmpstr(confab_error_get_param(copy), ==, "temperature");
	confab_error_set_param(copy, "top_p");
	g_assert_cmpstr(confab_error_get_param(copy), ==, "top_p");
	g_assert_cmpstr(confab_error_get_param(error), ==, "temperature");
	g_assert_null(confab_error_get_param(other));
	g_assert_null(confab_error_get_param(NULL));
	/* NULL error location: nothing happens */
	confab_error_set(NULL, CONFAB_ERROR_INVALID_VALUE, "x", "y");
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/openai-error/contract-table", test_contract_table);
	g_test_add_func("/confab/openai-error/every-code-mapped", test_every_code_mapped);
	g_test_add_func("/confab/openai-error/unknown-errors-are-500", test_unknown_errors_are_500);
	g_test_add_func("/confab/openai-error/body-shape", test_body_shape);
	g_test_add_func("/confab/openai-error/body-null-param", test_body_null_param);
	g_test_add_func("/confab/openai-error/internal-errors-hidden", test_internal_errors_hidden);
	g_test_add_func("/confab/openai-error/append-object", test_append_object);
	g_test_add_func("/confab/openai-error/param-helpers", test_param_helpers);
	return g_test_run();
}
