/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "core/confab-engine.h"
#include "openai/confab-chat-request.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_TURN (confab_turn_get_type())
G_DECLARE_FINAL_TYPE(ConfabTurn, confab_turn, CONFAB, TURN, GObject)

/**
 * ConfabTurnSink:
 * @delta: (nullable): a piece of the answer, as soon as the provider
 *   delivers it: new text, OpenAI `delta.tool_calls` fragments, a refusal,
 *   reasoning or log probabilities
 * @drain: (nullable): the answer is over: call confab_turn_sink_drained()
 *   once the client has everything given so far (or has gone); the answer
 *   is committed only then, so that its stored status tells what the
 *   client got. Not called for a turn that was cancelled.
 * @tool_event: (nullable): the agent's own tool activity, as the JSON object
 *   of a `tool_event` (a call, its progress, its result, an approval asked
 *   and decided)
 * @approval_request: (nullable): a call waits for a person's approval
 *   (stored, pending): a door that can ask a person does so
 * @answered: (nullable): an upstream has answered one of the turn's model
 *   calls with a success status, before any content: a streaming door
 *   sends its head now (told once per model call; the first is the one
 *   that matters)
 *
 * What a door does with an answer as it comes.
 */
typedef struct {
	void (*delta)(ConfabTurn *turn, const ConfabDelta *delta, gpointer user_data);
	void (*drain)(ConfabTurn *turn, gpointer user_data);
	void (*tool_event)(ConfabTurn *turn, const gchar *event_json, gpointer user_data);
	void (*approval_request)(ConfabTurn *turn,
				 const ConfabApproval *approval,
				 gpointer user_data);
	void (*answered)(ConfabTurn *turn, gpointer user_data);
} ConfabTurnSink;

ConfabTurn *
confab_turn_new(ConfabEngine *engine, ConfabPrincipal *principal, ConfabChatRequest *request);
void
confab_turn_set_sink(ConfabTurn *self, const ConfabTurnSink *sink, gpointer user_data);
void
confab_turn_set_flow(ConfabTurn *self, ConfabFlow *flow);
void
confab_turn_sink_drained(ConfabTurn *self, gboolean delivered);
void
confab_turn_start_async(ConfabTurn *self, GAsyncReadyCallback callback, gpointer user_data);
gboolean
confab_turn_start_finish(ConfabTurn *self, GAsyncResult *result, GError **error);
void
confab_turn_run_async(ConfabTurn *self, GAsyncReadyCallback callback, gpointer user_data);
gboolean
confab_turn_run_finish(ConfabTurn *self, GAsyncResult *result, GError **error);
void
confab_turn_cancel(ConfabTurn *self);

ConfabChatRequest *
confab_turn_get_request(ConfabTurn *self);
const gchar *
confab_turn_get_session_id(ConfabTurn *self);
const gchar *
confab_turn_get_assistant_message_id(ConfabTurn *self);
const gchar *
confab_turn_get_completion_id(ConfabTurn *self);
const gchar *
confab_turn_get_model(ConfabTurn *self);
gint64
confab_turn_get_created(ConfabTurn *self);
const gchar *
confab_turn_get_content(ConfabTurn *self);
const gchar *
confab_turn_get_refusal(ConfabTurn *self);
const gchar *
confab_turn_get_reasoning(ConfabTurn *self);
JsonObject *
confab_turn_get_logprobs(ConfabTurn *self);
gchar *
confab_turn_get_tool_calls_json(ConfabTurn *self);
const gchar *
confab_turn_get_target(ConfabTurn *self, const gchar **upstream_model, guint *attempts);
const ConfabProviderRequest *
confab_turn_get_failed_call(ConfabTurn *self);
const gchar *
confab_turn_get_finish_reason(ConfabTurn *self);
gboolean
confab_turn_get_usage(ConfabTurn *self, gint64 *prompt_tokens, gint64 *completion_tokens);
gint64
confab_turn_get_reasoning_tokens(ConfabTurn *self);
const ConfabQuotaInfo *
confab_turn_get_quota_info(ConfabTurn *self);
ConfabAgent *
confab_turn_get_agent(ConfabTurn *self);

/* for the Responses API door */
void
confab_turn_set_instructions(ConfabTurn *self, const gchar *instructions);
const gchar *
confab_turn_get_transcript(ConfabTurn *self);
void
confab_turn_set_commit_first(ConfabTurn *self);
void
confab_turn_set_new_session_id(ConfabTurn *self, const gchar *session_id);
void
confab_turn_set_response_id(ConfabTurn *self, const gchar *response_id);
void
confab_turn_set_fork(ConfabTurn *self, GPtrArray *history, const gchar *title);

void
confab_turn_add_approval_answer(ConfabTurn *self,
				const ConfabApproval *approval,
				gboolean approve,
				const gchar *reason);

G_END_DECLS
