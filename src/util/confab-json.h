/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

gboolean
confab_json_check(const gchar *data, gsize len, guint max_depth, GError **error);
JsonNode *
confab_json_parse(const gchar *data, gsize len, guint max_depth, GError **error);

/**
 * ConfabJsonKeep:
 * @names: %NULL-terminated: the members built, at any depth; the
 *   objects among them have theirs sifted the same way
 * @whole: (nullable): %NULL-terminated: members built with all they hold
 *
 * What confab_json_parse_kept() builds of a document.
 */
typedef struct {
	const gchar *const *names;
	const gchar *const *whole;
} ConfabJsonKeep;

JsonNode *
confab_json_parse_kept(const gchar *data,
		       gsize len,
		       guint max_depth,
		       const ConfabJsonKeep *keep,
		       GError **error);
void
confab_json_append_string(GString *out, const gchar *str);
void
confab_json_append_string_len(GString *out, const gchar *str, gsize len);
void
confab_json_append_node(GString *out, JsonNode *node);
gchar *
confab_json_to_string(JsonNode *node);
JsonNode *
confab_json_from_string(const gchar *str);

const gchar *
confab_json_get_string(JsonObject *object, const gchar *name);
JsonObject *
confab_json_get_object(JsonObject *object, const gchar *name);

gchar *
confab_json_read_string(const gchar *data, gsize len, gsize *consumed);

G_END_DECLS
