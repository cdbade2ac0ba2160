/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "tools/mcp/confab-mcp-transport.h"

G_BEGIN_DECLS

/* An MCP transport a test drives: what the client sends is recorded, what
 * the "server" says is injected with confab_mcp_transport_emit_message().
 * Shared by the JSON-RPC unit test and its fuzz harness. */

#define TEST_TYPE_TRANSPORT (test_transport_get_type())
G_DECLARE_FINAL_TYPE(TestTransport, test_transport, TEST, TRANSPORT, GObject)

struct _TestTransport {
	GObject parent_instance;
	GPtrArray *sent; /* of gchar*: every message sent */
	ConfabMcpTransportFlags flags;
	GError *send_error; /* every send fails with it */
	gsize max_message_size;
};

G_END_DECLS
