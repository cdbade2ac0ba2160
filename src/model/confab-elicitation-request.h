/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

/* An answered request's states, as stored. */
#define CONFAB_ELICITATION_PENDING   "pending"
#define CONFAB_ELICITATION_ACCEPTED  "accepted"
#define CONFAB_ELICITATION_DECLINED  "declined"
#define CONFAB_ELICITATION_CANCELLED "cancelled"
#define CONFAB_ELICITATION_TIMED_OUT "timed_out"

/**
 * ConfabElicitationRequest:
 * @id: `mcpe_…`
 * @owner: the turn's owner
 * @agent_id: the agent whose server asks
 * @session_id: the turn's session
 * @server: the server's configured name
 * @message: what the server asks the person
 * @schema: the requested schema, JSON text
 * @state: one of the CONFAB_ELICITATION_ states
 * @content: (nullable): an accepted answer's content, JSON text, defaults
 *   applied
 * @answered_by: (nullable): "api", "dbus" or "timeout"
 * @created_at: Unix seconds
 * @answered_at: Unix seconds, 0 while pending
 *
 * An MCP server's `elicitation/create`, put to the person whose turn
 * called the server (confab-elicitations.c).
 */
typedef struct {
	gchar *id;
	gchar *owner;
	gchar *agent_id;
	gchar *session_id;
	gchar *server;
	gchar *message;
	gchar *schema;
	gchar *state;
	gchar *content;
	gchar *answered_by;
	gint64 created_at;
	gint64 answered_at;
} ConfabElicitationRequest;

#define CONFAB_TYPE_ELICITATION_REQUEST (confab_elicitation_request_get_type())
GType
confab_elicitation_request_get_type(void);
ConfabElicitationRequest *
confab_elicitation_request_new(void);
ConfabElicitationRequest *
confab_elicitation_request_copy(const ConfabElicitationRequest *request);
void
confab_elicitation_request_free(ConfabElicitationRequest *request);
gboolean
confab_elicitation_request_is_action(const gchar *action);
const gchar *
confab_elicitation_request_state_for_action(const gchar *action);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabElicitationRequest, confab_elicitation_request_free)

G_END_DECLS
