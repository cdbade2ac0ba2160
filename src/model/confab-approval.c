/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabModel"

#include "config.h"

#include <string.h>

#include "model/confab-approval.h"

static const gchar *const state_names[] = {
    [CONFAB_APPROVAL_STATE_PENDING] = "pending",
    [CONFAB_APPROVAL_STATE_APPROVED] = "approved",
    [CONFAB_APPROVAL_STATE_DENIED] = "denied",
    [CONFAB_APPROVAL_STATE_TIMED_OUT] = "timed_out",
};

/**
 * confab_approval_state_to_string:
 *
 * Returns: "pending", "approved", "denied" or "timed_out", as stored
 */
const gchar *
confab_approval_state_to_string(ConfabApprovalState state)
{
	g_return_val_if_fail((guint)state < G_N_ELEMENTS(state_names), "pending");
	return state_names[state];
}

/**
 * confab_approval_state_from_string:
 * @text: (nullable): a stored state
 * @state: (out): the state
 *
 * Returns: whether @text names a state
 */
gboolean
confab_approval_state_from_string(const gchar *text, ConfabApprovalState *state)
{
	for (guint i = 0; text != NULL && i < G_N_ELEMENTS(state_names); i++) {
		if (strcmp(text, state_names[i]) == 0) {
			*state = i;
			return TRUE;
		}
	}
	return FALSE;
}

G_DEFINE_BOXED_TYPE(ConfabApproval, confab_approval, confab_approval_copy, confab_approval_free)

/**
 * confab_approval_new:
 *
 * Returns: (transfer full): an empty pending approval
 */
ConfabApproval *
confab_approval_new(void)
{
	return g_new0(ConfabApproval, 1);
}

/**
 * confab_approval_copy:
 * @approval: an approval
 *
 * Returns: (transfer full): a deep copy
 */
ConfabApproval *
confab_approval_copy(const ConfabApproval *approval)
{
	ConfabApproval *copy = g_new0(ConfabApproval, 1);

	g_return_val_if_fail(approval != NULL, copy);
	*copy = *approval;
	copy->id = g_strdup(approval->id);
	copy->owner = g_strdup(approval->owner);
	copy->agent_id = g_strdup(approval->agent_id);
	copy->session_id = g_strdup(approval->session_id);
	copy->server = g_strdup(approval->server);
	copy->tool = g_strdup(approval->tool);
	copy->name = g_strdup(approval->name);
	copy->arguments = g_strdup(approval->arguments);
	copy->tool_call_id = g_strdup(approval->tool_call_id);
	copy->decided_by = g_strdup(approval->decided_by);
	copy->reason = g_strdup(approval->reason);
	copy->response_id = g_strdup(approval->response_id);
	return copy;
}

void
confab_approval_free(ConfabApproval *approval)
{
	if (approval == NULL)
		return;
	g_free(approval->id);
	g_free(approval->owner);
	g_free(approval->agent_id);
	g_free(approval->session_id);
	g_free(approval->server);
	g_free(approval->tool);
	g_free(approval->name);
	g_free(approval->arguments);
	g_free(approval->tool_call_id);
	g_free(approval->decided_by);
	g_free(approval->reason);
	g_free(approval->response_id);
	g_free(approval);
}
