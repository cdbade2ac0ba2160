/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "model/confab-enums.h"

G_DEFINE_ENUM_TYPE(ConfabSessionSource,
		   confab_session_source,
		   G_DEFINE_ENUM_VALUE(CONFAB_SESSION_SOURCE_API, "api"),
		   G_DEFINE_ENUM_VALUE(CONFAB_SESSION_SOURCE_CHANNEL, "channel"))

G_DEFINE_ENUM_TYPE(ConfabMessageStatus,
		   confab_message_status,
		   G_DEFINE_ENUM_VALUE(CONFAB_MESSAGE_STATUS_COMPLETED, "completed"),
		   G_DEFINE_ENUM_VALUE(CONFAB_MESSAGE_STATUS_INCOMPLETE, "incomplete"),
		   G_DEFINE_ENUM_VALUE(CONFAB_MESSAGE_STATUS_FAILED, "failed"))

const gchar *
confab_session_source_to_string(ConfabSessionSource source)
{
	return source == CONFAB_SESSION_SOURCE_CHANNEL ? "channel" : "api";
}

gboolean
confab_session_source_from_string(const gchar *str, ConfabSessionSource *source)
{
	if (g_strcmp0(str, "api") == 0) {
		*source = CONFAB_SESSION_SOURCE_API;
		return TRUE;
	}
	if (g_strcmp0(str, "channel") == 0) {
		*source = CONFAB_SESSION_SOURCE_CHANNEL;
		return TRUE;
	}
	return FALSE;
}

const gchar *
confab_message_status_to_string(ConfabMessageStatus status)
{
	switch (status) {
	case CONFAB_MESSAGE_STATUS_INCOMPLETE:
		return "incomplete";
	case CONFAB_MESSAGE_STATUS_FAILED:
		return "failed";
	case CONFAB_MESSAGE_STATUS_COMPLETED:
	default:
		return "completed";
	}
}

gboolean
confab_message_status_from_string(const gchar *str, ConfabMessageStatus *status)
{
	if (g_strcmp0(str, "completed") == 0)
		*status = CONFAB_MESSAGE_STATUS_COMPLETED;
	else if (g_strcmp0(str, "incomplete") == 0)
		*status = CONFAB_MESSAGE_STATUS_INCOMPLETE;
	else if (g_strcmp0(str, "failed") == 0)
		*status = CONFAB_MESSAGE_STATUS_FAILED;
	else
		return FALSE;
	return TRUE;
}
