/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "tools/mcp/confab-mcp-transport.h"

G_BEGIN_DECLS

/* The largest JSON-RPC message taken in or sent, by default. */
#define CONFAB_MCP_DEFAULT_MAX_MESSAGE_SIZE (4 * 1024 * 1024)

/**
 * ConfabMcpLineFunc:
 * @line: one line, without its "\n" (or "\r\n"), not NUL-terminated
 * @len: its length, never 0
 * @user_data: data given with the function
 */
typedef void (*ConfabMcpLineFunc)(const gchar *line, gsize len, gpointer user_data);

/**
 * ConfabMcpLineTooLongFunc:
 * @head: the first bytes of a line longer than the maximum
 * @head_len: their length (at most 256)
 * @tail: its last bytes
 * @tail_len: their length (at most 256)
 * @size: the length of the whole line
 * @user_data: data given with the function
 */
typedef void (*ConfabMcpLineTooLongFunc)(const gchar *head,
					 gsize head_len,
					 const gchar *tail,
					 gsize tail_len,
					 guint64 size,
					 gpointer user_data);

typedef struct _ConfabMcpLineReader ConfabMcpLineReader;

ConfabMcpLineReader *
confab_mcp_line_reader_new(gsize max_line,
			   ConfabMcpLineFunc line_func,
			   ConfabMcpLineTooLongFunc too_long_func,
			   gpointer user_data);
void
confab_mcp_line_reader_set_max_line(ConfabMcpLineReader *reader, gsize max_line);
void
confab_mcp_line_reader_feed(ConfabMcpLineReader *reader, const gchar *data, gsize len);
void
confab_mcp_line_reader_finish(ConfabMcpLineReader *reader);
gsize
confab_mcp_line_reader_get_buffered(ConfabMcpLineReader *reader);
void
confab_mcp_line_reader_free(ConfabMcpLineReader *reader);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabMcpLineReader, confab_mcp_line_reader_free)

#define CONFAB_TYPE_MCP_JSONRPC (confab_mcp_jsonrpc_get_type())
G_DECLARE_FINAL_TYPE(ConfabMcpJsonrpc, confab_mcp_jsonrpc, CONFAB, MCP_JSONRPC, GObject)

ConfabMcpJsonrpc *
confab_mcp_jsonrpc_new(ConfabMcpTransport *transport, const gchar *name);
ConfabMcpTransport *
confab_mcp_jsonrpc_get_transport(ConfabMcpJsonrpc *self);
void
confab_mcp_jsonrpc_set_max_message_size(ConfabMcpJsonrpc *self, gsize max_bytes);
gsize
confab_mcp_jsonrpc_get_max_message_size(ConfabMcpJsonrpc *self);
void
confab_mcp_jsonrpc_set_max_pending(ConfabMcpJsonrpc *self, guint max_pending);

void
confab_mcp_jsonrpc_request_async(ConfabMcpJsonrpc *self,
				 const gchar *method,
				 JsonNode *params,
				 guint timeout_ms,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
JsonNode *
confab_mcp_jsonrpc_request_finish(ConfabMcpJsonrpc *self, GAsyncResult *result, GError **error);
void
confab_mcp_jsonrpc_notify_async(ConfabMcpJsonrpc *self,
				const gchar *method,
				JsonNode *params,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
gboolean
confab_mcp_jsonrpc_notify_finish(ConfabMcpJsonrpc *self, GAsyncResult *result, GError **error);

void
confab_mcp_jsonrpc_close(ConfabMcpJsonrpc *self);
gboolean
confab_mcp_jsonrpc_is_closed(ConfabMcpJsonrpc *self);
guint
confab_mcp_jsonrpc_get_n_pending(ConfabMcpJsonrpc *self);
guint
confab_mcp_jsonrpc_get_n_malformed(ConfabMcpJsonrpc *self);
guint
confab_mcp_jsonrpc_get_n_dropped(ConfabMcpJsonrpc *self);

G_END_DECLS
