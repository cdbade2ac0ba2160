/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "confab-fuzz.h"
#include "http/confab-http-responses.h"
#include "openai/confab-responses-request.h"
#include "util/confab-json.h"

/* A body of POST /api/v1/conversations/{id}/items, as its handler takes
 * it: JSON, its `items` made messages by the Responses door's parser, and
 * each message shown as items again. */
int
LLVMFuzzerTestOneInput(const guint8 *data, size_t size)
{
	const ConfabChatLimits limits = {64, 10, 1024 * 1024};
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) root = confab_json_parse((const gchar *)data, size, 64, &error);
	g_autoptr(ConfabChatRequest) request = NULL;
	JsonNode *items;

	if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
		return 0;
	g_clear_error(&error);
	items = json_object_get_member(json_node_get_object(root), "items");
	request = confab_responses_request_parse_items(items, &limits, &error);
	/* exactly one of the messages and an error naming the field */
	g_assert((request == NULL) != (error == NULL));
	if (request == NULL)
		return 0;
	g_assert_cmpuint(request->messages->len, >, 0);
	g_assert_cmpuint(request->messages->len, <=, CONFAB_CONVERSATION_MAX_ITEMS);
	for (guint i = 0; i < request->messages->len; i++) {
		ConfabMessage *msg = g_ptr_array_index(request->messages, i);
		g_autoptr(GPtrArray) shown = NULL;

		g_autoptr(GPtrArray) left = NULL;
		gboolean emptied = FALSE;

		confab_message_set_id(msg, "msg_01jfuzz0000000000000000001");
		shown = confab_http_responses_message_items(msg, confab_message_get_id(msg));
		for (guint j = 0; j < shown->len; j++) {
			g_autoptr(JsonNode) node =
			    confab_json_from_string(g_ptr_array_index(shown, j));
			g_assert_nonnull(node);
			g_assert_true(JSON_NODE_HOLDS_OBJECT(node));
		}
		/* its first item deleted: the others keep their places and ids */
		g_assert_true(shown->len == 0 ||
			      confab_http_responses_message_drop_item(msg, 0, &emptied));
		if (shown->len == 0 || emptied)
			continue;
		left = confab_http_responses_message_items(msg, confab_message_get_id(msg));
		g_assert_cmpuint(left->len, ==, shown->len);
		g_assert_null(g_ptr_array_index(left, 0));
		for (guint j = 1; j < left->len; j++)
			g_assert_cmpstr(g_ptr_array_index(left, j),
					==,
					g_ptr_array_index(shown, j));
	}
	return 0;
}
