/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

#include "util/confab-flow.h"

G_BEGIN_DECLS

/**
 * ConfabHttpExchange:
 *
 * One request and its response, as a handler sees them: the request head
 * and body, and a way to answer — one whole response, or a stream of pieces
 * (chunked). Handlers never see a socket; the server behind (http/server)
 * owns the wire. An exchange lives as long as someone holds a reference;
 * once the client is gone (or the server cut the connection) every write
 * is a no-op and confab_http_exchange_is_gone() says so.
 */
typedef struct _ConfabHttpExchange ConfabHttpExchange;

/**
 * ConfabHttpExchangeFunc:
 * @exchange: the exchange
 * @user_data: data given with the function
 */
typedef void (*ConfabHttpExchangeFunc)(ConfabHttpExchange *exchange, gpointer user_data);

ConfabHttpExchange *
confab_http_exchange_ref(ConfabHttpExchange *self);
void
confab_http_exchange_unref(ConfabHttpExchange *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabHttpExchange, confab_http_exchange_unref)

/* the request */
const gchar *
confab_http_exchange_get_method(ConfabHttpExchange *self);
const gchar *
confab_http_exchange_get_path(ConfabHttpExchange *self);
const gchar *
confab_http_exchange_get_query(ConfabHttpExchange *self);
const gchar *
confab_http_exchange_get_header(ConfabHttpExchange *self, const gchar *name);
gboolean
confab_http_exchange_has_body(ConfabHttpExchange *self);
gint64
confab_http_exchange_get_content_length(ConfabHttpExchange *self);
gsize
confab_http_exchange_get_body_size(ConfabHttpExchange *self);
GBytes *
confab_http_exchange_steal_body(ConfabHttpExchange *self);
const gchar *
confab_http_exchange_get_peer(ConfabHttpExchange *self);
gboolean
confab_http_exchange_is_loopback(ConfabHttpExchange *self);
gint64
confab_http_exchange_get_start_time(ConfabHttpExchange *self);

/* what the handler keeps with it */
void
confab_http_exchange_set_data(ConfabHttpExchange *self, gpointer data, GDestroyNotify destroy);
gpointer
confab_http_exchange_get_data(ConfabHttpExchange *self);
void
confab_http_exchange_set_connection_data(ConfabHttpExchange *self,
					 gpointer data,
					 GDestroyNotify destroy);
gpointer
confab_http_exchange_get_connection_data(ConfabHttpExchange *self);

/* notes for the access log */
void
confab_http_exchange_annotate(ConfabHttpExchange *self, const gchar *key, const gchar *value);
const gchar *
confab_http_exchange_get_annotation(ConfabHttpExchange *self, const gchar *key);

/* the response */
void
confab_http_exchange_add_header(ConfabHttpExchange *self, const gchar *name, const gchar *value);
void
confab_http_exchange_respond(ConfabHttpExchange *self,
			     guint status,
			     const gchar *content_type,
			     GBytes *body);
void
confab_http_exchange_respond_take(ConfabHttpExchange *self,
				  guint status,
				  const gchar *content_type,
				  gchar *body);
void
confab_http_exchange_begin_stream(ConfabHttpExchange *self,
				  guint status,
				  const gchar *content_type);
void
confab_http_exchange_write(ConfabHttpExchange *self, const gchar *data, gsize len);
void
confab_http_exchange_write_bytes(ConfabHttpExchange *self, GBytes *bytes);
void
confab_http_exchange_flush(ConfabHttpExchange *self);
void
confab_http_exchange_end_stream(ConfabHttpExchange *self);
guint
confab_http_exchange_get_status(ConfabHttpExchange *self);
gboolean
confab_http_exchange_has_responded(ConfabHttpExchange *self);
gsize
confab_http_exchange_get_unsent(ConfabHttpExchange *self);
ConfabFlow *
confab_http_exchange_get_flow(ConfabHttpExchange *self);

/* the client */
gboolean
confab_http_exchange_is_gone(ConfabHttpExchange *self);
void
confab_http_exchange_set_gone_func(ConfabHttpExchange *self,
				   ConfabHttpExchangeFunc func,
				   gpointer user_data);
void
confab_http_exchange_set_drained_func(ConfabHttpExchange *self,
				      ConfabHttpExchangeFunc func,
				      gpointer user_data);
void
confab_http_exchange_set_cut_func(ConfabHttpExchange *self,
				  ConfabHttpExchangeFunc func,
				  gpointer user_data);
gboolean
confab_http_exchange_is_cut(ConfabHttpExchange *self);
void
confab_http_exchange_close(ConfabHttpExchange *self);

G_END_DECLS
