/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/**
 * ConfabHttpFields:
 *
 * The header fields of one HTTP/1.1 message, in the order received: what
 * the server's request parser and the upstream client's response parser
 * both produce. Names compare case-insensitively. Names and values live in
 * one buffer, so a message's fields cost two allocations, not two each.
 */
typedef struct _ConfabHttpFields ConfabHttpFields;

ConfabHttpFields *
confab_http_fields_new(void);
void
confab_http_fields_free(ConfabHttpFields *fields);
void
confab_http_fields_clear(ConfabHttpFields *fields);
void
confab_http_fields_append(ConfabHttpFields *fields,
			  const gchar *name,
			  gsize name_len,
			  const gchar *value,
			  gsize value_len);
guint
confab_http_fields_get_size(const ConfabHttpFields *fields);
const gchar *
confab_http_fields_get_name(const ConfabHttpFields *fields, guint index);
const gchar *
confab_http_fields_get_value(const ConfabHttpFields *fields, guint index);
const gchar *
confab_http_fields_get(const ConfabHttpFields *fields, const gchar *name);
guint
confab_http_fields_count(const ConfabHttpFields *fields, const gchar *name);
gboolean
confab_http_fields_has_token(const ConfabHttpFields *fields, const gchar *name, const gchar *token);

void
confab_http_fields_append_uint(GString *head, guint64 value);

gboolean
confab_http_fields_list_has_token(const gchar *list, const gchar *token);
gboolean
confab_http_fields_is_token(const gchar *str, gsize len);
gboolean
confab_http_fields_is_field_value(const gchar *value, gsize len);
gboolean
confab_http_fields_parse_field_line(const gchar *line,
				    gsize len,
				    gsize *name_len,
				    const gchar **value,
				    gsize *value_len);
gchar *
confab_http_fields_media_type(const gchar *value);
gboolean
confab_http_fields_media_type_is(const gchar *value, const gchar *type);
GDateTime *
confab_http_fields_parse_date(const gchar *value);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabHttpFields, confab_http_fields_free)

G_END_DECLS
