/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-engine.h"
#include "dbus/confab-dbus-notifier.h"

G_BEGIN_DECLS

/* Arguments are cut to this many characters in a notification. */
#define CONFAB_DBUS_APPROVAL_PROMPT_MAX_ARGS 200

gchar *
confab_dbus_approval_prompt_body(const gchar *agent_name, const ConfabApproval *approval);
void
confab_dbus_approval_prompt_show(ConfabDbusNotifier *notifier,
				 ConfabEngine *engine,
				 const ConfabApproval *approval);
void
confab_dbus_approval_prompt_tool_event(ConfabDbusNotifier *notifier, const gchar *event_json);

G_END_DECLS
