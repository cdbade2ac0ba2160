/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define CONFAB_ERROR (confab_error_quark())

/**
 * ConfabError:
 *
 * The one error domain of the service. Each front door maps these codes once:
 * the HTTP layer to a status, type and code (confab-http-error.c), the D-Bus
 * layer to an `org.confab.Confab1.Error.*` name (registered here).
 */
typedef enum {
	CONFAB_ERROR_FAILED,			 /* 500 */
	CONFAB_ERROR_INVALID_JSON,		 /* 400 */
	CONFAB_ERROR_MISSING_MODEL,		 /* 400 */
	CONFAB_ERROR_INVALID_MESSAGES,		 /* 400 */
	CONFAB_ERROR_INVALID_VALUE,		 /* 400 */
	CONFAB_ERROR_INVALID_FILE,		 /* 400 */
	CONFAB_ERROR_INVALID_LIMIT,		 /* 400 */
	CONFAB_ERROR_INVALID_ORDER,		 /* 400 */
	CONFAB_ERROR_INVALID_AFTER,		 /* 400 */
	CONFAB_ERROR_MISSING_API_KEY,		 /* 401 */
	CONFAB_ERROR_INVALID_API_KEY,		 /* 401 */
	CONFAB_ERROR_INSUFFICIENT_SCOPE,	 /* 403 */
	CONFAB_ERROR_PERMISSION_DENIED,		 /* 403 */
	CONFAB_ERROR_AGENT_NOT_FOUND,		 /* 404 */
	CONFAB_ERROR_CONVERSATION_NOT_FOUND,	 /* 404 */
	CONFAB_ERROR_NOT_FOUND,			 /* 404: routes, tokens, other objects */
	CONFAB_ERROR_METHOD_NOT_ALLOWED,	 /* 405 */
	CONFAB_ERROR_CONVERSATION_BUSY,		 /* 409 */
	CONFAB_ERROR_REQUEST_TOO_LARGE,		 /* 413 */
	CONFAB_ERROR_UNSUPPORTED_MEDIA_TYPE,	 /* 415 */
	CONFAB_ERROR_QUOTA_EXCEEDED,		 /* 429 */
	CONFAB_ERROR_UPSTREAM,			 /* 502 */
	CONFAB_ERROR_UPSTREAM_TIMEOUT,		 /* 504 */
	CONFAB_ERROR_SHUTTING_DOWN,		 /* 503 */
	CONFAB_ERROR_OVERLOADED,		 /* 503 */
	CONFAB_ERROR_CANCELLED,			 /* the client went away */
	CONFAB_ERROR_MALFORMED_REQUEST,		 /* 400: HTTP framing or syntax */
	CONFAB_ERROR_REQUEST_TIMEOUT,		 /* 408 */
	CONFAB_ERROR_EXPECTATION_FAILED,	 /* 417 */
	CONFAB_ERROR_HEADER_TOO_LARGE,		 /* 431 */
	CONFAB_ERROR_NOT_IMPLEMENTED,		 /* 501 */
	CONFAB_ERROR_VERSION_NOT_SUPPORTED,	 /* 505 */
	CONFAB_ERROR_STORE_UNAVAILABLE,		 /* 503 */
	CONFAB_ERROR_STREAM_CUT,		 /* a stream whose reader took nothing */
	CONFAB_ERROR_APPROVAL_NOT_FOUND,	 /* 404 */
	CONFAB_ERROR_APPROVAL_DECIDED,		 /* 409: decided or timed out already */
	CONFAB_ERROR_RESPONSE_NOT_FOUND,	 /* 404 */
	CONFAB_ERROR_APPROVAL_ASKED_BY_RESPONSE, /* 409: only its response's continuation decides */
	CONFAB_ERROR_RATE_LIMITED,		 /* 429: too much at once; retry later */
	CONFAB_ERROR_ITEM_NOT_FOUND,		 /* 404: a conversation's item */
	CONFAB_ERROR_ELICITATION_NOT_FOUND,	 /* 404 */
	CONFAB_ERROR_ELICITATION_ANSWERED,	 /* 409: answered or timed out already */
	CONFAB_ERROR_LAST
} ConfabErrorCode;

GQuark
confab_error_quark(void);
void
confab_error_register_dbus(void);
void
confab_error_return_dbus(GDBusMethodInvocation *invocation, GError *error);
const gchar *
confab_error_get_param(const GError *error);
void
confab_error_set_param(GError *error, const gchar *param);
void
confab_error_set(GError **error, ConfabErrorCode code, const gchar *param, const gchar *message);
void
confab_error_set_printf(GError **error,
			ConfabErrorCode code,
			const gchar *param,
			const gchar *format,
			...) G_GNUC_PRINTF(4, 5);
const gchar *
confab_error_to_dbus_name(ConfabErrorCode code);
gboolean
confab_error_is_client_error(const GError *error);

G_END_DECLS
