/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "confab-http-server.h"

G_BEGIN_DECLS

ConfabEngine *
confab_http_server_get_engine(ConfabHttpServer *self);
void
confab_http_respond_json(SoupServerMessage *msg, guint status, gchar *body);
void
confab_http_respond_error(SoupServerMessage *msg, const GError *error);
void
confab_http_log_set(SoupServerMessage *msg, const gchar *owner, const gchar *agent);
void
confab_http_add_quota_headers(SoupServerMessage *msg, const ConfabQuotaInfo *info);

void
confab_http_chat_handle(ConfabHttpServer *server,
			SoupServerMessage *msg,
			ConfabPrincipal *principal);
void
confab_http_list_conversations(ConfabHttpServer *server,
			       SoupServerMessage *msg,
			       ConfabPrincipal *principal);
void
confab_http_list_messages(ConfabHttpServer *server,
			  SoupServerMessage *msg,
			  ConfabPrincipal *principal,
			  const gchar *session_id);

G_END_DECLS
