/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabOpenai"

#include "config.h"

#include <gio/gio.h>

#include "openai/confab-openai-error.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/* The one table from CONFAB_ERROR codes to what an OpenAI client expects. */
static const ConfabOpenaiErrorInfo table[] = {
    [CONFAB_ERROR_FAILED] = {500, "server_error", "internal_error"},
    [CONFAB_ERROR_INVALID_JSON] = {400, "invalid_request_error", "invalid_json"},
    [CONFAB_ERROR_MISSING_MODEL] = {400, "invalid_request_error", "missing_model"},
    [CONFAB_ERROR_INVALID_MESSAGES] = {400, "invalid_request_error", "invalid_messages"},
    [CONFAB_ERROR_INVALID_VALUE] = {400, "invalid_request_error", "invalid_value"},
    [CONFAB_ERROR_INVALID_FILE] = {400, "invalid_request_error", "invalid_file"},
    [CONFAB_ERROR_INVALID_LIMIT] = {400, "invalid_request_error", "invalid_limit"},
    [CONFAB_ERROR_INVALID_ORDER] = {400, "invalid_request_error", "invalid_order"},
    [CONFAB_ERROR_INVALID_AFTER] = {400, "invalid_request_error", "invalid_after"},
    [CONFAB_ERROR_MISSING_API_KEY] = {401, "authentication_error", "missing_api_key"},
    [CONFAB_ERROR_INVALID_API_KEY] = {401, "authentication_error", "invalid_api_key"},
    [CONFAB_ERROR_INSUFFICIENT_SCOPE] = {403, "permission_error", "insufficient_scope"},
    [CONFAB_ERROR_PERMISSION_DENIED] = {403, "permission_error", "permission_denied"},
    [CONFAB_ERROR_AGENT_NOT_FOUND] = {404, "not_found_error", "agent_not_found"},
    [CONFAB_ERROR_CONVERSATION_NOT_FOUND] = {404, "not_found_error", "conversation_not_found"},
    [CONFAB_ERROR_NOT_FOUND] = {404, "not_found_error", "route_not_found"},
    [CONFAB_ERROR_METHOD_NOT_ALLOWED] = {405, "invalid_request_error", "method_not_allowed"},
    [CONFAB_ERROR_CONVERSATION_BUSY] = {409, "conflict_error", "conversation_busy"},
    [CONFAB_ERROR_REQUEST_TOO_LARGE] = {413, "invalid_request_error", "request_too_large"},
    [CONFAB_ERROR_UNSUPPORTED_MEDIA_TYPE] = {415,
					     "invalid_request_error",
					     "unsupported_media_type"},
    [CONFAB_ERROR_QUOTA_EXCEEDED] = {429, "insufficient_quota", "insufficient_quota"},
    [CONFAB_ERROR_UPSTREAM] = {502, "upstream_error", "upstream_error"},
    [CONFAB_ERROR_UPSTREAM_TIMEOUT] = {504, "upstream_error", "upstream_timeout"},
    [CONFAB_ERROR_SHUTTING_DOWN] = {503, "service_unavailable", "shutting_down"},
    [CONFAB_ERROR_OVERLOADED] = {503, "service_unavailable", "overloaded"},
    /* only ever reaches a client that is still there mid-stream */
    [CONFAB_ERROR_CANCELLED] = {503, "service_unavailable", "cancelled"},
    [CONFAB_ERROR_MALFORMED_REQUEST] = {400, "invalid_request_error", "malformed_request"},
    [CONFAB_ERROR_REQUEST_TIMEOUT] = {408, "invalid_request_error", "request_timeout"},
    [CONFAB_ERROR_EXPECTATION_FAILED] = {417, "invalid_request_error", "expectation_failed"},
    [CONFAB_ERROR_HEADER_TOO_LARGE] = {431, "invalid_request_error", "request_header_too_large"},
    [CONFAB_ERROR_NOT_IMPLEMENTED] = {501, "invalid_request_error", "not_implemented"},
    [CONFAB_ERROR_VERSION_NOT_SUPPORTED] = {505,
					    "invalid_request_error",
					    "http_version_not_supported"},
    [CONFAB_ERROR_STORE_UNAVAILABLE] = {503, "service_unavailable", "store_unavailable"},
    /* only ever in a stream that has begun: its client took nothing */
    [CONFAB_ERROR_STREAM_CUT] = {408, "timeout_error", "stream_cut"},
    [CONFAB_ERROR_APPROVAL_NOT_FOUND] = {404, "not_found_error", "approval_not_found"},
    [CONFAB_ERROR_APPROVAL_DECIDED] = {409, "conflict_error", "approval_already_decided"},
    [CONFAB_ERROR_RESPONSE_NOT_FOUND] = {404, "not_found_error", "response_not_found"},
    [CONFAB_ERROR_APPROVAL_ASKED_BY_RESPONSE] = {409,
						 "conflict_error",
						 "approval_asked_by_response"},
    [CONFAB_ERROR_RATE_LIMITED] = {429, "rate_limit_error", "rate_limit_exceeded"},
    [CONFAB_ERROR_ITEM_NOT_FOUND] = {404, "not_found_error", "item_not_found"},
    [CONFAB_ERROR_ELICITATION_NOT_FOUND] = {404, "not_found_error", "elicitation_not_found"},
    [CONFAB_ERROR_ELICITATION_ANSWERED] = {409, "conflict_error", "elicitation_already_answered"},
};

G_STATIC_ASSERT(G_N_ELEMENTS(table) == CONFAB_ERROR_LAST);

/**
 * confab_openai_error_info:
 * @error: a #GError
 *
 * Returns: (transfer none): the status, type and code for @error; anything
 * outside CONFAB_ERROR is a 500
 */
const ConfabOpenaiErrorInfo *
confab_openai_error_info(const GError *error)
{
	if (error == NULL || error->domain != CONFAB_ERROR || error->code < 0 ||
	    error->code >= CONFAB_ERROR_LAST)
		return &table[CONFAB_ERROR_FAILED];
	return &table[error->code];
}

/**
 * confab_openai_error_append_object:
 * @out: a #GString
 * @error: a #GError
 *
 * Appends `{"message":…,"type":…,"param":…,"code":…}`. Errors from outside
 * CONFAB_ERROR are internal: their text is logged, never sent.
 */
void
confab_openai_error_append_object(GString *out, const GError *error)
{
	const ConfabOpenaiErrorInfo *info = confab_openai_error_info(error);
	const gchar *message = error != NULL ? error->message : "Internal error";

	if (error == NULL || error->domain != CONFAB_ERROR || error->code == CONFAB_ERROR_FAILED)
		message = "The server had an error while processing your request";
	g_string_append(out, "{\"message\":");
	confab_json_append_string(out, message);
	g_string_append(out, ",\"type\":");
	confab_json_append_string(out, info->type);
	g_string_append(out, ",\"param\":");
	confab_json_append_string(out, confab_error_get_param(error));
	g_string_append(out, ",\"code\":");
	confab_json_append_string(out, info->code);
	g_string_append_c(out, '}');
}

/**
 * confab_openai_error_body:
 * @error: a #GError
 *
 * Returns: (transfer full): `{"error":{…}}`, the OpenAI error shape
 */
gchar *
confab_openai_error_body(const GError *error)
{
	GString *out = g_string_new("{\"error\":");
	confab_openai_error_append_object(out, error);
	g_string_append_c(out, '}');
	return g_string_free(out, FALSE);
}
