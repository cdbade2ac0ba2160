/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "model/confab-agent.h"
#include "util/confab-flow.h"

G_BEGIN_DECLS

typedef struct _ConfabProviderRequest ConfabProviderRequest;

/**
 * ConfabAnsweredFunc:
 * @request: the request an upstream answered with a success status
 * @user_data: data given with the function
 *
 * An upstream took the call: what it says next is the answer.
 */
typedef void (*ConfabAnsweredFunc)(ConfabProviderRequest *request, gpointer user_data);

/**
 * ConfabProviderRequest:
 * @agent: the agent, with its provider settings
 * @messages: the OpenAI-shaped context: the agent's instructions as the first
 *   system message, then the stored history, then the turn's new messages
 * @params: (nullable): OpenAI request parameters from the client
 *   (temperature, tools...)
 * @stream: whether the client streams; a provider may stream upstream anyway
 * @retries: set by the provider: how many times it sent the request again
 *   after a failure, whatever the outcome
 * @flow: (nullable): the client's backpressure: while it is held the
 *   provider makes no more deltas (it stops reading its upstream), and
 *   its idle timer does not run
 * @status: set by the provider when it fails: the HTTP status the upstream
 *   last answered, 0 for none (no connection, no head in time)
 * @retry_after_ms: set with @status: the upstream's `retry-after-ms` or
 *   `Retry-After`, in milliseconds; -1 for none
 * @target: set by the router: the label of the target that answered (or
 *   was tried last); %NULL when no router ran the call
 * @target_model: set with @target: that target's upstream model
 * @attempts: set with @target: the targets tried, the last included
 * @error_type: (nullable): set with @status: the `type` of the upstream's
 *   OpenAI-shaped error, scrubbed; %NULL when it said none
 * @error_code: (nullable): set with @status: its `code`, scrubbed
 * @error_param: (nullable): set with @status: its `param`, scrubbed
 * @answered: (nullable): called once, by the provider, when the upstream has
 *   answered with a success status: its head, before any content (for a
 *   door that holds its own head until then); see
 *   confab_provider_request_answered()
 * @answered_data: data for @answered
 */
struct _ConfabProviderRequest {
	ConfabAgent *agent;
	JsonArray *messages;
	JsonObject *params;
	gboolean stream;
	guint retries;
	ConfabFlow *flow;
	guint status;
	gint64 retry_after_ms;
	gchar *target;
	gchar *target_model;
	guint attempts;
	gchar *error_type;
	gchar *error_code;
	gchar *error_param;
	ConfabAnsweredFunc answered;
	gpointer answered_data;
};

void
confab_provider_request_free(ConfabProviderRequest *request);
void
confab_provider_request_answered(ConfabProviderRequest *request);
void
confab_provider_request_set_error_fields(ConfabProviderRequest *request,
					 const gchar *type,
					 const gchar *code,
					 const gchar *param);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabProviderRequest, confab_provider_request_free)

/**
 * ConfabProviderResult:
 * @finish_reason: stop, length, tool_calls or content_filter
 * @prompt_tokens: usage, or -1 when the provider did not say
 * @completion_tokens: usage, or -1 when the provider did not say
 * @reasoning_tokens: of @completion_tokens, those the model reasoned with
 *   (`completion_tokens_details.reasoning_tokens`); 0 when not said
 *
 * How a completion ended; the text came through the delta function.
 */
typedef struct {
	gchar *finish_reason;
	gint64 prompt_tokens;
	gint64 completion_tokens;
	gint64 reasoning_tokens;
} ConfabProviderResult;

ConfabProviderResult *
confab_provider_result_new(const gchar *finish_reason);
void
confab_provider_result_free(ConfabProviderResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabProviderResult, confab_provider_result_free)

/**
 * ConfabDelta:
 * @content: (nullable): new assistant text
 * @tool_calls: (nullable): OpenAI `delta.tool_calls` fragments
 * @refusal: (nullable): new refusal text (`delta.refusal`)
 * @reasoning: (nullable): new reasoning text (`delta.reasoning_content`,
 *   or `delta.reasoning` as OpenRouter names it)
 * @logprobs: (nullable): the choice's `logprobs` for this piece
 *   (`{"content":[…],"refusal":[…]}`)
 *
 * One piece of an answer; any member may be %NULL.
 */
typedef struct {
	const gchar *content;
	JsonArray *tool_calls;
	const gchar *refusal;
	const gchar *reasoning;
	JsonObject *logprobs;
} ConfabDelta;

/**
 * ConfabDeltaFunc:
 * @delta: a piece of the answer
 * @user_data: data given with the function
 *
 * Receives the answer piece by piece, as soon as each piece arrives.
 */
typedef void (*ConfabDeltaFunc)(const ConfabDelta *delta, gpointer user_data);

#define CONFAB_TYPE_PROVIDER (confab_provider_get_type())
G_DECLARE_INTERFACE(ConfabProvider, confab_provider, CONFAB, PROVIDER, GObject)

/**
 * ConfabProviderInterface:
 * @get_name: the name agents use to pick this provider
 * @check_agent: validates an agent's provider settings
 * @complete_async: runs one completion; deltas go to @delta_func until the
 *   operation completes; @cancellable aborts it promptly
 * @complete_finish: finishes @complete_async; a CONFAB_ERROR_UPSTREAM or
 *   CONFAB_ERROR_UPSTREAM_TIMEOUT, or G_IO_ERROR_CANCELLED
 */
struct _ConfabProviderInterface {
	GTypeInterface parent_iface;

	const gchar *(*get_name)(ConfabProvider *self);
	gboolean (*check_agent)(ConfabProvider *self, ConfabAgent *agent, GError **error);
	void (*complete_async)(ConfabProvider *self,
			       ConfabProviderRequest *request,
			       ConfabDeltaFunc delta_func,
			       gpointer delta_data,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
	ConfabProviderResult *(*complete_finish)(ConfabProvider *self,
						 GAsyncResult *result,
						 GError **error);
};

const gchar *
confab_provider_get_name(ConfabProvider *self);
gboolean
confab_provider_check_agent(ConfabProvider *self, ConfabAgent *agent, GError **error);
void
confab_provider_complete_async(ConfabProvider *self,
			       ConfabProviderRequest *request,
			       ConfabDeltaFunc delta_func,
			       gpointer delta_data,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
ConfabProviderResult *
confab_provider_complete_finish(ConfabProvider *self, GAsyncResult *result, GError **error);

G_END_DECLS
