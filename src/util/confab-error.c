/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabError"

#include "config.h"

#include <gio/gio.h>

#include "util/confab-error.h"

/* Extended GError private data: the request field that caused the error,
 * reported as "param" in the OpenAI error shape. */
typedef struct {
	gchar *param;
} ConfabErrorPrivate;

static void
confab_error_private_init(ConfabErrorPrivate *priv)
{
	priv->param = NULL;
}

static void
confab_error_private_copy(const ConfabErrorPrivate *src, ConfabErrorPrivate *dest)
{
	/* never NULL for an error of this domain; -fanalyzer cannot know */
	if (src != NULL && dest != NULL)
		dest->param = g_strdup(src->param);
}

static void
confab_error_private_clear(ConfabErrorPrivate *priv)
{
	/* never NULL for an error of this domain; -fanalyzer cannot know */
	if (priv != NULL)
		g_clear_pointer(&priv->param, g_free);
}

/* G_DEFINE_EXTENDED_ERROR defines confab_error_quark() and
 * confab_error_get_private(); it needs the struct name "ConfabErrorPrivate". */
G_DEFINE_EXTENDED_ERROR(ConfabError, confab_error)

static const GDBusErrorEntry dbus_error_entries[] = {
    {CONFAB_ERROR_FAILED, "org.confab.Confab1.Error.Failed"},
    {CONFAB_ERROR_INVALID_JSON, "org.confab.Confab1.Error.InvalidJson"},
    {CONFAB_ERROR_MISSING_MODEL, "org.confab.Confab1.Error.MissingModel"},
    {CONFAB_ERROR_INVALID_MESSAGES, "org.confab.Confab1.Error.InvalidMessages"},
    {CONFAB_ERROR_INVALID_VALUE, "org.confab.Confab1.Error.InvalidArgument"},
    {CONFAB_ERROR_INVALID_FILE, "org.confab.Confab1.Error.InvalidFile"},
    {CONFAB_ERROR_INVALID_LIMIT, "org.confab.Confab1.Error.InvalidLimit"},
    {CONFAB_ERROR_INVALID_ORDER, "org.confab.Confab1.Error.InvalidOrder"},
    {CONFAB_ERROR_INVALID_AFTER, "org.confab.Confab1.Error.InvalidAfter"},
    {CONFAB_ERROR_MISSING_API_KEY, "org.confab.Confab1.Error.MissingApiKey"},
    {CONFAB_ERROR_INVALID_API_KEY, "org.confab.Confab1.Error.InvalidApiKey"},
    {CONFAB_ERROR_INSUFFICIENT_SCOPE, "org.confab.Confab1.Error.InsufficientScope"},
    {CONFAB_ERROR_PERMISSION_DENIED, "org.confab.Confab1.Error.PermissionDenied"},
    {CONFAB_ERROR_AGENT_NOT_FOUND, "org.confab.Confab1.Error.AgentNotFound"},
    {CONFAB_ERROR_CONVERSATION_NOT_FOUND, "org.confab.Confab1.Error.SessionNotFound"},
    {CONFAB_ERROR_NOT_FOUND, "org.confab.Confab1.Error.NotFound"},
    {CONFAB_ERROR_RESPONSE_NOT_FOUND, "org.confab.Confab1.Error.ResponseNotFound"},
    {CONFAB_ERROR_METHOD_NOT_ALLOWED, "org.confab.Confab1.Error.MethodNotAllowed"},
    {CONFAB_ERROR_CONVERSATION_BUSY, "org.confab.Confab1.Error.Busy"},
    {CONFAB_ERROR_REQUEST_TOO_LARGE, "org.confab.Confab1.Error.TooLarge"},
    {CONFAB_ERROR_UNSUPPORTED_MEDIA_TYPE, "org.confab.Confab1.Error.UnsupportedMediaType"},
    {CONFAB_ERROR_QUOTA_EXCEEDED, "org.confab.Confab1.Error.QuotaExceeded"},
    {CONFAB_ERROR_UPSTREAM, "org.confab.Confab1.Error.Upstream"},
    {CONFAB_ERROR_UPSTREAM_TIMEOUT, "org.confab.Confab1.Error.UpstreamTimeout"},
    {CONFAB_ERROR_SHUTTING_DOWN, "org.confab.Confab1.Error.ShuttingDown"},
    {CONFAB_ERROR_OVERLOADED, "org.confab.Confab1.Error.Overloaded"},
    {CONFAB_ERROR_CANCELLED, "org.confab.Confab1.Error.Cancelled"},
    {CONFAB_ERROR_MALFORMED_REQUEST, "org.confab.Confab1.Error.MalformedRequest"},
    {CONFAB_ERROR_REQUEST_TIMEOUT, "org.confab.Confab1.Error.Timeout"},
    {CONFAB_ERROR_EXPECTATION_FAILED, "org.confab.Confab1.Error.ExpectationFailed"},
    {CONFAB_ERROR_HEADER_TOO_LARGE, "org.confab.Confab1.Error.HeaderTooLarge"},
    {CONFAB_ERROR_NOT_IMPLEMENTED, "org.confab.Confab1.Error.NotImplemented"},
    {CONFAB_ERROR_VERSION_NOT_SUPPORTED, "org.confab.Confab1.Error.VersionNotSupported"},
    {CONFAB_ERROR_STORE_UNAVAILABLE, "org.confab.Confab1.Error.StoreUnavailable"},
    {CONFAB_ERROR_STREAM_CUT, "org.confab.Confab1.Error.StreamCut"},
    {CONFAB_ERROR_APPROVAL_NOT_FOUND, "org.confab.Confab1.Error.ApprovalNotFound"},
    {CONFAB_ERROR_APPROVAL_DECIDED, "org.confab.Confab1.Error.AlreadyDecided"},
    {CONFAB_ERROR_APPROVAL_ASKED_BY_RESPONSE, "org.confab.Confab1.Error.AskedByResponse"},
    {CONFAB_ERROR_RATE_LIMITED, "org.confab.Confab1.Error.RateLimited"},
    {CONFAB_ERROR_ITEM_NOT_FOUND, "org.confab.Confab1.Error.ItemNotFound"},
    {CONFAB_ERROR_ELICITATION_NOT_FOUND, "org.confab.Confab1.Error.ElicitationNotFound"},
    {CONFAB_ERROR_ELICITATION_ANSWERED, "org.confab.Confab1.Error.AlreadyAnswered"},
};

G_STATIC_ASSERT(G_N_ELEMENTS(dbus_error_entries) == CONFAB_ERROR_LAST);

/**
 * confab_error_register_dbus:
 *
 * Registering the D-Bus names makes g_dbus_method_invocation_return_gerror()
 * send org.confab.Confab1.Error.* and lets clients get CONFAB_ERROR back.
 * Idempotent and thread-safe.
 */
void
confab_error_register_dbus(void)
{
	static gsize registered = 0;
	if (g_once_init_enter(&registered)) {
		for (guint i = 0; i < G_N_ELEMENTS(dbus_error_entries); i++) {
			g_dbus_error_register_error(confab_error_quark(),
						    dbus_error_entries[i].error_code,
						    dbus_error_entries[i].dbus_error_name);
		}
		g_once_init_leave(&registered, 1);
	}
}

/**
 * confab_error_return_dbus:
 * @invocation: a method call being answered
 * @error: (transfer full): why it fails
 *
 * Answers @invocation with @error, under its org.confab.Confab1.Error name.
 */
void
confab_error_return_dbus(GDBusMethodInvocation *invocation, GError *error)
{
	confab_error_register_dbus();
	g_dbus_method_invocation_return_gerror(invocation, error);
	g_error_free(error);
}

/**
 * confab_error_to_dbus_name:
 * @code: a #ConfabErrorCode
 *
 * Returns: (transfer none): the D-Bus error name for @code
 */
const gchar *
confab_error_to_dbus_name(ConfabErrorCode code)
{
	confab_error_register_dbus();
	if ((guint)code >= G_N_ELEMENTS(dbus_error_entries))
		return "org.confab.Confab1.Error.Failed";
	return dbus_error_entries[code].dbus_error_name;
}

/**
 * confab_error_get_param:
 * @error: a #GError
 *
 * Returns: (nullable): the request field @error is about, if it is a
 * CONFAB_ERROR that names one
 */
const gchar *
confab_error_get_param(const GError *error)
{
	ConfabErrorPrivate *priv;
	if (error == NULL || error->domain != CONFAB_ERROR)
		return NULL;
	priv = confab_error_get_private(error);
	return priv != NULL ? priv->param : NULL;
}

void
confab_error_set_param(GError *error, const gchar *param)
{
	ConfabErrorPrivate *priv;
	g_return_if_fail(error != NULL && error->domain == CONFAB_ERROR);
	priv = confab_error_get_private(error);
	if (priv == NULL)
		return;
	g_free(priv->param);
	priv->param = g_strdup(param);
}

/**
 * confab_error_set:
 * @error: (out) (optional): return location for a #GError
 * @code: a #ConfabErrorCode
 * @param: (nullable): the offending request field, e.g. `messages[2].role`
 * @message: a readable message
 *
 * Sets a CONFAB_ERROR carrying @param.
 */
void
confab_error_set(GError **error, ConfabErrorCode code, const gchar *param, const gchar *message)
{
	if (error == NULL)
		return;
	confab_error_register_dbus();
	g_set_error_literal(error, CONFAB_ERROR, code, message);
	if (param != NULL)
		confab_error_set_param(*error, param);
}

void
confab_error_set_printf(GError **error,
			ConfabErrorCode code,
			const gchar *param,
			const gchar *format,
			...)
{
	va_list args;
	g_autofree gchar *message = NULL;

	if (error == NULL)
		return;
	va_start(args, format);
	message = g_strdup_vprintf(format, args);
	va_end(args);
	confab_error_set(error, code, param, message);
}

/**
 * confab_error_is_client_error:
 * @error: a #GError
 *
 * Returns: %TRUE if @error is the caller's fault (a 4xx in HTTP terms)
 */
gboolean
confab_error_is_client_error(const GError *error)
{
	if (error == NULL || error->domain != CONFAB_ERROR)
		return FALSE;
	switch (error->code) {
	case CONFAB_ERROR_FAILED:
	case CONFAB_ERROR_UPSTREAM:
	case CONFAB_ERROR_UPSTREAM_TIMEOUT:
	case CONFAB_ERROR_SHUTTING_DOWN:
	case CONFAB_ERROR_OVERLOADED:
		return FALSE;
	default:
		return TRUE;
	}
}
