/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

/**
 * ConfabApprovalState:
 * @CONFAB_APPROVAL_STATE_PENDING: a person has not decided yet
 * @CONFAB_APPROVAL_STATE_APPROVED: the call may run
 * @CONFAB_APPROVAL_STATE_DENIED: the call does not run
 * @CONFAB_APPROVAL_STATE_TIMED_OUT: nobody decided in time; the call does
 *   not run
 *
 * Where an approval stands. Only a pending one can be decided.
 */
typedef enum {
	CONFAB_APPROVAL_STATE_PENDING,
	CONFAB_APPROVAL_STATE_APPROVED,
	CONFAB_APPROVAL_STATE_DENIED,
	CONFAB_APPROVAL_STATE_TIMED_OUT,
} ConfabApprovalState;

const gchar *
confab_approval_state_to_string(ConfabApprovalState state);
gboolean
confab_approval_state_from_string(const gchar *text, ConfabApprovalState *state);

/**
 * ConfabApproval:
 * @id: `mcpr_` and 26 characters
 * @owner: whose turn asked: the one who may decide (or an administrator)
 * @agent_id: the agent whose tool it is
 * @session_id: the conversation of the turn
 * @server: the tool server's configured name
 * @tool: the tool's own name on @server
 * @name: the tool's name as the model sees it (`SERVER__tool`)
 * @arguments: the call's arguments, JSON text as the model gave them
 * @tool_call_id: the model's id of the call
 * @state: where it stands
 * @decided_by: (nullable): "api", "dbus", "desktop" or "timeout"
 * @reason: (nullable): what the person said, or why it timed out
 * @created_at: Unix seconds
 * @decided_at: Unix seconds, 0 while pending
 * @response_id: (nullable): the Responses API response that ended with
 *   this request: only a continuation of it decides it (an
 *   `mcp_approval_response` item), and no timeout does; %NULL for a call
 *   its turn waits for
 *
 * One tool call waiting for (or given) a person's decision. A plain record
 * the store keeps, so that any instance on a shared database can decide it.
 */
typedef struct {
	gchar *id;
	gchar *owner;
	gchar *agent_id;
	gchar *session_id;
	gchar *server;
	gchar *tool;
	gchar *name;
	gchar *arguments;
	gchar *tool_call_id;
	ConfabApprovalState state;
	gchar *decided_by;
	gchar *reason;
	gint64 created_at;
	gint64 decided_at;
	gchar *response_id;
} ConfabApproval;

#define CONFAB_TYPE_APPROVAL (confab_approval_get_type())
GType
confab_approval_get_type(void);
ConfabApproval *
confab_approval_new(void);
ConfabApproval *
confab_approval_copy(const ConfabApproval *approval);
void
confab_approval_free(ConfabApproval *approval);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabApproval, confab_approval_free)

G_END_DECLS
