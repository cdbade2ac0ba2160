/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "util/confab-http-fields.h"

G_BEGIN_DECLS

/**
 * ConfabUpstreamHandler:
 * @sent: the request is written (the connection is up): the upstream has
 *   it. May run before confab_upstream_client_post() returns.
 * @head: the head of the response arrived; its fields are valid during the
 *   call only
 * @body: a piece of the decoded body arrived
 * @done: the exchange ended: @error (transfer full) is %NULL once the whole
 *   body arrived, or says what went wrong. Last callback.
 *
 * What a caller of confab_upstream_client_post() hears. None is called
 * after confab_upstream_client_exchange_abort(), which any of them may call.
 */
typedef struct {
	void (*sent)(gpointer user_data);
	void (*head)(guint status,
		     const gchar *reason,
		     const ConfabHttpFields *fields,
		     gpointer user_data);
	void (*body)(const gchar *data, gsize len, gpointer user_data);
	void (*done)(GError *error, gpointer user_data);
} ConfabUpstreamHandler;

typedef struct _ConfabUpstreamExchange ConfabUpstreamExchange;

#define CONFAB_TYPE_UPSTREAM_CLIENT (confab_upstream_client_get_type())
G_DECLARE_FINAL_TYPE(ConfabUpstreamClient, confab_upstream_client, CONFAB, UPSTREAM_CLIENT, GObject)

ConfabUpstreamClient *
confab_upstream_client_new(const gchar *user_agent,
			   guint max_connections,
			   guint idle_timeout,
			   GProxyResolver *proxy_resolver);
ConfabUpstreamExchange *
confab_upstream_client_request(ConfabUpstreamClient *self,
			       const gchar *method,
			       const gchar *url,
			       const gchar *extra_headers,
			       const gchar *content_type,
			       GBytes *body,
			       const ConfabUpstreamHandler *handler,
			       gpointer user_data,
			       GError **error);
ConfabUpstreamExchange *
confab_upstream_client_post(ConfabUpstreamClient *self,
			    const gchar *url,
			    const gchar *extra_headers,
			    const gchar *content_type,
			    GBytes *body,
			    const ConfabUpstreamHandler *handler,
			    gpointer user_data,
			    GError **error);
guint
confab_upstream_client_get_n_connections(ConfabUpstreamClient *self);

void
confab_upstream_client_exchange_abort(ConfabUpstreamExchange *exchange);
void
confab_upstream_client_exchange_pause(ConfabUpstreamExchange *exchange);
void
confab_upstream_client_exchange_resume(ConfabUpstreamExchange *exchange);
void
confab_upstream_client_exchange_unref(ConfabUpstreamExchange *exchange);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabUpstreamExchange, confab_upstream_client_exchange_unref)

G_END_DECLS
