/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

/**
 * ConfabSessionSource:
 * @CONFAB_SESSION_SOURCE_API: created through the v1 HTTP API
 * @CONFAB_SESSION_SOURCE_CHANNEL: created through a channel (D-Bus Chat); never
 *   listed nor replayed by the v1 API
 */
typedef enum {
	CONFAB_SESSION_SOURCE_API,
	CONFAB_SESSION_SOURCE_CHANNEL,
} ConfabSessionSource;

/**
 * ConfabMessageStatus:
 * @CONFAB_MESSAGE_STATUS_COMPLETED: whole
 * @CONFAB_MESSAGE_STATUS_INCOMPLETE: cut short (the client left, the daemon stopped)
 * @CONFAB_MESSAGE_STATUS_FAILED: the upstream failed; the error is in content_blocks
 */
typedef enum {
	CONFAB_MESSAGE_STATUS_COMPLETED,
	CONFAB_MESSAGE_STATUS_INCOMPLETE,
	CONFAB_MESSAGE_STATUS_FAILED,
} ConfabMessageStatus;

/**
 * ConfabOrder:
 * @CONFAB_ORDER_DESC: newest first
 * @CONFAB_ORDER_ASC: oldest first
 */
typedef enum {
	CONFAB_ORDER_DESC,
	CONFAB_ORDER_ASC,
} ConfabOrder;

#define CONFAB_TYPE_SESSION_SOURCE (confab_session_source_get_type())
GType
confab_session_source_get_type(void);
#define CONFAB_TYPE_MESSAGE_STATUS (confab_message_status_get_type())
GType
confab_message_status_get_type(void);

G_END_DECLS
