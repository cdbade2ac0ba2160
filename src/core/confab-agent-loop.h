/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "core/confab-approvals.h"
#include "core/confab-elicitations.h"
#include "core/confab-router.h"
#include "metrics/confab-metrics.h"
#include "model/confab-agent.h"
#include "providers/confab-provider.h"
#include "tools/confab-toolbox.h"

G_BEGIN_DECLS

/**
 * ConfabAgentLoopSink:
 * @text: (nullable): new answer text, as it comes, from any step
 * @tool_calls: (nullable): tool calls for the client: OpenAI
 *   `delta.tool_calls` fragments relayed as they come when the agent has no
 *   tools of its own, else the client's calls whole, once, at the end
 * @tool_event: (nullable): the agent's own tool activity: the JSON object
 *   of a `tool_event` (`call`, `progress` or `result`)
 * @extra: (nullable): a refusal, reasoning or log probabilities, as they
 *   come (the delta's other members are %NULL)
 * @approval_request: (nullable): a call of the agent's own tools waits for
 *   a person's decision (the approval is stored, pending): a door that can
 *   ask a person (a desktop notification) does so
 * @answered: (nullable): an upstream has answered a model call with a
 *   success status (its head, before any content); told for each model
 *   call, once
 *
 * What a loop tells its turn as it runs.
 */
typedef struct {
	void (*text)(const gchar *content, gpointer user_data);
	void (*tool_calls)(JsonArray *tool_calls, gpointer user_data);
	void (*tool_event)(const gchar *event_json, gpointer user_data);
	void (*extra)(const ConfabDelta *delta, gpointer user_data);
	void (*approval_request)(const ConfabApproval *approval, gpointer user_data);
	void (*answered)(gpointer user_data);
} ConfabAgentLoopSink;

#define CONFAB_AGENT_LOOP_MAX_PARALLEL_TOOLS 8

#define CONFAB_TYPE_AGENT_LOOP (confab_agent_loop_get_type())
G_DECLARE_FINAL_TYPE(ConfabAgentLoop, confab_agent_loop, CONFAB, AGENT_LOOP, GObject)

ConfabAgentLoop *
confab_agent_loop_new(ConfabAgent *agent,
		      ConfabProvider *provider,
		      JsonArray *context,
		      JsonObject *client_params,
		      gboolean stream);
void
confab_agent_loop_set_tools(ConfabAgentLoop *self,
			    ConfabToolbox *toolbox,
			    GPtrArray *server_tools,
			    guint total_timeout);
void
confab_agent_loop_set_metrics(ConfabAgentLoop *self, ConfabMetrics *metrics);

/**
 * ConfabAgentLoopMeter:
 * @call_start: before each model call; @call counts from 0
 * @call_end: after it, with the usage the upstream reported (-1 when it
 *   reported none, or the call failed)
 *
 * What a loop tells of its model calls, for the token budgets (issue 30).
 */
typedef struct {
	void (*call_start)(gpointer user_data, guint call);
	void (*call_end)(gpointer user_data, gint64 prompt_tokens, gint64 completion_tokens);
} ConfabAgentLoopMeter;

void
confab_agent_loop_set_meter(ConfabAgentLoop *self,
			    const ConfabAgentLoopMeter *meter,
			    gpointer user_data);
void
confab_agent_loop_set_router(ConfabAgentLoop *self, ConfabRouter *router);
const gchar *
confab_agent_loop_get_target(ConfabAgentLoop *self, const gchar **upstream_model, guint *attempts);
const ConfabProviderRequest *
confab_agent_loop_get_failed_call(ConfabAgentLoop *self);
void
confab_agent_loop_set_flow(ConfabAgentLoop *self, ConfabFlow *flow);
void
confab_agent_loop_set_approvals(ConfabAgentLoop *self,
				ConfabApprovals *approvals,
				const gchar *owner,
				const gchar *session_id);
void
confab_agent_loop_set_elicitations(ConfabAgentLoop *self, ConfabElicitations *elicitations);
void
confab_agent_loop_defer_approvals(ConfabAgentLoop *self, const gchar *response_id);
void
confab_agent_loop_resume_call(ConfabAgentLoop *self,
			      const ConfabApproval *approval,
			      gboolean approve,
			      const gchar *reason);
void
confab_agent_loop_set_sink(ConfabAgentLoop *self,
			   const ConfabAgentLoopSink *sink,
			   gpointer user_data);
void
confab_agent_loop_run_async(ConfabAgentLoop *self,
			    GCancellable *cancellable,
			    GAsyncReadyCallback callback,
			    gpointer user_data);
gboolean
confab_agent_loop_run_finish(ConfabAgentLoop *self, GAsyncResult *result, GError **error);

const gchar *
confab_agent_loop_get_content(ConfabAgentLoop *self);
const gchar *
confab_agent_loop_get_blocks(ConfabAgentLoop *self);
GString *
confab_agent_loop_steal_blocks(ConfabAgentLoop *self, gboolean *is_content);
gchar *
confab_agent_loop_get_tool_calls_json(ConfabAgentLoop *self);
const gchar *
confab_agent_loop_get_finish_reason(ConfabAgentLoop *self);
gint64
confab_agent_loop_get_reasoning_tokens(ConfabAgentLoop *self);
gboolean
confab_agent_loop_get_usage(ConfabAgentLoop *self,
			    gint64 *prompt_tokens,
			    gint64 *completion_tokens);
const gchar *
confab_agent_loop_get_refusal(ConfabAgentLoop *self);
const gchar *
confab_agent_loop_get_reasoning(ConfabAgentLoop *self);
JsonObject *
confab_agent_loop_get_logprobs(ConfabAgentLoop *self);
void
confab_agent_loop_merge_logprobs(JsonObject **into, JsonObject *more);

G_END_DECLS
