/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/**
 * ConfabOpenaiErrorInfo:
 * @status: the HTTP status
 * @type: the OpenAI error type
 * @code: the error code
 *
 * How one CONFAB_ERROR code looks over HTTP.
 */
typedef struct {
	guint status;
	const gchar *type;
	const gchar *code;
} ConfabOpenaiErrorInfo;

const ConfabOpenaiErrorInfo *
confab_openai_error_info(const GError *error);
gchar *
confab_openai_error_body(const GError *error);
void
confab_openai_error_append_object(GString *out, const GError *error);

G_END_DECLS
