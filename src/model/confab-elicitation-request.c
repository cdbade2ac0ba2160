/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "model/confab-elicitation-request.h"

G_DEFINE_BOXED_TYPE(ConfabElicitationRequest,
		    confab_elicitation_request,
		    confab_elicitation_request_copy,
		    confab_elicitation_request_free)

/**
 * confab_elicitation_request_new:
 *
 * Returns: (transfer full): an empty request
 */
ConfabElicitationRequest *
confab_elicitation_request_new(void)
{
	return g_new0(ConfabElicitationRequest, 1);
}

/**
 * confab_elicitation_request_copy:
 * @request: a request
 *
 * Returns: (transfer full): a deep copy of @request
 */
ConfabElicitationRequest *
confab_elicitation_request_copy(const ConfabElicitationRequest *request)
{
	ConfabElicitationRequest *copy = g_new0(ConfabElicitationRequest, 1);

	copy->id = g_strdup(request->id);
	copy->owner = g_strdup(request->owner);
	copy->agent_id = g_strdup(request->agent_id);
	copy->session_id = g_strdup(request->session_id);
	copy->server = g_strdup(request->server);
	copy->message = g_strdup(request->message);
	copy->schema = g_strdup(request->schema);
	copy->state = g_strdup(request->state);
	copy->content = g_strdup(request->content);
	copy->answered_by = g_strdup(request->answered_by);
	copy->created_at = request->created_at;
	copy->answered_at = request->answered_at;
	return copy;
}

/**
 * confab_elicitation_request_free:
 * @request: (nullable): a request
 *
 * Frees @request.
 */
void
confab_elicitation_request_free(ConfabElicitationRequest *request)
{
	if (request == NULL)
		return;
	g_free(request->id);
	g_free(request->owner);
	g_free(request->agent_id);
	g_free(request->session_id);
	g_free(request->server);
	g_free(request->message);
	g_free(request->schema);
	g_free(request->state);
	g_free(request->content);
	g_free(request->answered_by);
	g_free(request);
}

/**
 * confab_elicitation_request_is_action:
 * @action: (nullable): what a person answered
 *
 * Returns: whether @action is MCP's `accept`, `decline` or `cancel`
 */
gboolean
confab_elicitation_request_is_action(const gchar *action)
{
	return confab_elicitation_request_state_for_action(action) != NULL;
}

/**
 * confab_elicitation_request_state_for_action:
 * @action: (nullable): `accept`, `decline` or `cancel`
 *
 * Returns: (nullable): the state an answer with @action leaves, %NULL for
 *   another action
 */
const gchar *
confab_elicitation_request_state_for_action(const gchar *action)
{
	if (g_strcmp0(action, "accept") == 0)
		return CONFAB_ELICITATION_ACCEPTED;
	if (g_strcmp0(action, "decline") == 0)
		return CONFAB_ELICITATION_DECLINED;
	if (g_strcmp0(action, "cancel") == 0)
		return CONFAB_ELICITATION_CANCELLED;
	return NULL;
}
