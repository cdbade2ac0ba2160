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
