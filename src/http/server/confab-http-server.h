/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "http/server/confab-http-exchange.h"
#include "http/server/confab-http-server-group.h"

G_BEGIN_DECLS

/**
 * ConfabHttpServerLimits:
 * @max_connections: connections open at once; 503 beyond
 * @max_connections_per_peer: connections from one address; 503 beyond
 * @idle_timeout: seconds a connection may stay without a request, a head
 *   may take to arrive, a body may pause, or a response may go unread
 * @body_timeout: seconds a whole body may take to arrive
 * @max_header_bytes: the largest request head; 431 beyond
 * @max_body_bytes: the largest request body; 413 beyond
 * @max_inflight_body_bytes: request bodies held at once, all connections
 *   together; 503 beyond
 * @max_stream_buffer: bytes of a streamed response that may wait unsent
 *   before its flow is held (confab_http_exchange_get_flow()); it opens
 *   again at half of that. A client is never cut for being slow, only for
 *   taking nothing for idle_timeout
 */
typedef struct {
	guint max_connections;
	guint max_connections_per_peer;
	guint idle_timeout;
	guint body_timeout;
	gsize max_header_bytes;
	gsize max_body_bytes;
	gsize max_inflight_body_bytes;
	gsize max_stream_buffer;
} ConfabHttpServerLimits;

/**
 * ConfabHttpServerHandler:
 * @head: the request head is in: answer now (a refusal), and the body is
 *   not read; or leave the exchange unanswered to have the body read
 * @request: the request is whole; answer now or later
 * @finished: the exchange is over: its response was sent (@completed) or
 *   the connection went first
 *
 * What the server calls for every request, on the server's main context.
 */
typedef struct {
	void (*head)(ConfabHttpExchange *exchange, gpointer user_data);
	void (*request)(ConfabHttpExchange *exchange, gpointer user_data);
	void (*finished)(ConfabHttpExchange *exchange, gboolean completed, gpointer user_data);
} ConfabHttpServerHandler;

#define CONFAB_TYPE_HTTP_SERVER (confab_http_server_get_type())
G_DECLARE_FINAL_TYPE(ConfabHttpServer, confab_http_server, CONFAB, HTTP_SERVER, GObject)

ConfabHttpServer *
confab_http_server_new(const ConfabHttpServerLimits *limits,
		       const ConfabHttpServerHandler *handler,
		       gpointer user_data);
void
confab_http_server_share(ConfabHttpServer *self, ConfabHttpServerGroup *group, gboolean reuse_port);
gboolean
confab_http_server_listen(ConfabHttpServer *self, GSocketAddress *address, GError **error);
gboolean
confab_http_server_listen_fd(ConfabHttpServer *self, gint fd, GError **error);
gchar *
confab_http_server_get_url(ConfabHttpServer *self);
guint
confab_http_server_get_active_requests(ConfabHttpServer *self);
guint
confab_http_server_get_connections(ConfabHttpServer *self);
void
confab_http_server_stop_listening(ConfabHttpServer *self);
void
confab_http_server_disconnect(ConfabHttpServer *self);

G_END_DECLS
