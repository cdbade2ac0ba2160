/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <json-glib/json-glib.h>

#include "openai/confab-chat-request.h"

G_BEGIN_DECLS

/**
 * ConfabResponsesRequest:
 * @chat: the turn's request, translated to Chat Completions: the model,
 *   the input items as messages, the parameters for the upstream
 * @previous_response_id: (nullable): the response this one continues
 * @conversation: (nullable): the conversation (`cts_…`) this one continues
 * @instructions: (nullable): added to the agent's, for this response only
 * @store: whether the turn is kept (default %TRUE)
 * @background: it runs with no client attached (`background: true`)
 * @echo: what the response object repeats of the request: `tools`,
 *   `tool_choice`, `parallel_tool_calls`, `text`, `reasoning`,
 *   `temperature`, `top_p`, `max_output_tokens`, `user`, `metadata` (the
 *   client's)
 * @namespaced: the function tools of the client's `namespace` tools, by
 *   the name they have upstream: `{"namespace", "name"}` (their own)
 * @call_ids: (element-type utf8): the `call_id` of each
 *   `function_call_output` item, which must answer a call of the response
 *   it continues
 * @input_calls: (element-type utf8): the `call_id` of each `function_call`
 *   item of the input
 * @approval_responses: (element-type ConfabApprovalResponse): the input's
 *   `mcp_approval_response` items, in order (each request once)
 * @references: (element-type utf8): the ids `item_reference` items name,
 *   each once; while not resolved, @chat is %NULL
 * @root: (nullable): the body, until @chat is made
 * @chat_params: (nullable): the Chat Completions request but its messages,
 *   until @chat is made
 * @limits: the limits the body was parsed with
 *
 * A POST /api/v1/responses body, checked whole before anything is stored.
 */
/**
 * ConfabApprovalResponse:
 * @approval_request_id: the `mcpr_…` id of the request it answers
 * @approve: whether the call may run
 * @reason: (nullable): what the person said
 * @adopted: not the input's: an `mcp_approval_response` item added to the
 *   conversation since the answer that asked, which decided it then
 *
 * An `mcp_approval_response` input item.
 */
typedef struct {
	gchar *approval_request_id;
	gboolean approve;
	gchar *reason;
	gboolean adopted;
} ConfabApprovalResponse;

typedef struct {
	ConfabChatRequest *chat;
	gchar *previous_response_id;
	gchar *conversation;
	gchar *instructions;
	gboolean store;
	gboolean background;
	JsonObject *echo;
	JsonObject *namespaced;
	GPtrArray *call_ids;
	GPtrArray *input_calls;
	GPtrArray *approval_responses;
	GPtrArray *references;
	JsonNode *root;
	JsonObject *chat_params;
	ConfabChatLimits limits;
} ConfabResponsesRequest;

ConfabResponsesRequest *
confab_responses_request_parse(const gchar *data,
			       gsize len,
			       const ConfabChatLimits *limits,
			       GError **error);
gboolean
confab_responses_request_resolve(ConfabResponsesRequest *request,
				 GHashTable *items,
				 GError **error);
/* the most items one Conversations API request may add */
#define CONFAB_CONVERSATION_MAX_ITEMS 1000

ConfabChatRequest *
confab_responses_request_parse_items(JsonNode *items,
				     const ConfabChatLimits *limits,
				     GError **error);
void
confab_responses_request_free(ConfabResponsesRequest *request);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabResponsesRequest, confab_responses_request_free)

G_END_DECLS
