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
