/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "http/server/confab-http-request-parser.h"
#include "http/server/confab-http-server.h"
#include "util/confab-flow.h"

G_BEGIN_DECLS

/* A client connection: confab-http-server.c. */
typedef struct _ConfabHttpConnection ConfabHttpConnection;

struct _ConfabHttpExchange {
	grefcount ref;
	ConfabHttpConnection *conn; /* unowned; NULL once the exchange is over */
	ConfabHttpRequestHead head; /* owned */
	GBytes *body;		    /* owned, nullable */
	gchar *peer;		    /* owned: the client's address */
	gboolean loopback;
	gint64 start; /* monotonic, when the head came */

	GString *headers; /* owned: extra response fields, "Name: value\r\n" each */
	guint status;
	gboolean responded; /* a response (or a stream) has begun */
	gboolean streaming;
	gboolean ended;	   /* the whole response is queued */
	gboolean finished; /* the exchange is over, sent or not */
	gboolean gone;	   /* the client left before the end */
	gboolean cut;	   /* the server is cutting the stream: its reader took nothing */
	ConfabFlow *flow;  /* owned, nullable: a stream's, held while its client is behind */

	ConfabHttpExchangeFunc gone_func;
	gpointer gone_data;
	ConfabHttpExchangeFunc drained_func;
	gpointer drained_data;
	ConfabHttpExchangeFunc cut_func;
	gpointer cut_data;
	gpointer data;
	GDestroyNotify data_destroy;
	GPtrArray *notes; /* owned, nullable: static key, owned value, ... */
};

ConfabHttpExchange *
confab_http_exchange_new(ConfabHttpConnection *conn, ConfabHttpRequestParser *parser);

/* what an exchange asks of its connection */
void
confab_http_server_connection_send_response(ConfabHttpConnection *conn,
					    ConfabHttpExchange *exchange,
					    GBytes *body);
void
confab_http_server_connection_send_stream_head(ConfabHttpConnection *conn,
					       ConfabHttpExchange *exchange);
void
confab_http_server_connection_send_piece(ConfabHttpConnection *conn,
					 ConfabHttpExchange *exchange,
					 const gchar *data,
					 gsize len,
					 GBytes *bytes,
					 gboolean flush);
void
confab_http_server_connection_send_end(ConfabHttpConnection *conn, ConfabHttpExchange *exchange);
void
confab_http_server_connection_flush(ConfabHttpConnection *conn);
gsize
confab_http_server_connection_get_unsent(ConfabHttpConnection *conn);
void
confab_http_server_connection_cut(ConfabHttpConnection *conn);
void
confab_http_server_connection_set_data(ConfabHttpConnection *conn,
				       gpointer data,
				       GDestroyNotify destroy);
gpointer
confab_http_server_connection_get_data(ConfabHttpConnection *conn);
const gchar *
confab_http_server_connection_get_peer(ConfabHttpConnection *conn);
gboolean
confab_http_server_connection_is_loopback(ConfabHttpConnection *conn);

G_END_DECLS
