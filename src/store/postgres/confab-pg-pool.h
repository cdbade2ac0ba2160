/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "store/postgres/confab-pg-connection.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_PG_POOL (confab_pg_pool_get_type())
G_DECLARE_FINAL_TYPE(ConfabPgPool, confab_pg_pool, CONFAB, PG_POOL, GObject)

ConfabPgPool *
confab_pg_pool_new(const gchar *conninfo, const gchar *password, guint pool_size);
void
confab_pg_pool_set_connect_timeout(ConfabPgPool *self, guint timeout_ms);
void
confab_pg_pool_set_query_timeout(ConfabPgPool *self, guint timeout_ms);
void
confab_pg_pool_set_acquire_timeout(ConfabPgPool *self, guint timeout_ms);
void
confab_pg_pool_start(ConfabPgPool *self);
void
confab_pg_pool_close(ConfabPgPool *self);
gboolean
confab_pg_pool_get_available(ConfabPgPool *self);
guint
confab_pg_pool_get_size(ConfabPgPool *self);
guint
confab_pg_pool_get_n_ready(ConfabPgPool *self);

void
confab_pg_pool_acquire_async(ConfabPgPool *self,
			     GCancellable *cancellable,
			     GAsyncReadyCallback callback,
			     gpointer user_data);
ConfabPgConnection *
confab_pg_pool_acquire_finish(ConfabPgPool *self, GAsyncResult *result, GError **error);
void
confab_pg_pool_release(ConfabPgPool *self, ConfabPgConnection *connection);

void
confab_pg_pool_query_async(ConfabPgPool *self,
			   const gchar *sql,
			   guint n_params,
			   const gchar *const *params,
			   GCancellable *cancellable,
			   GAsyncReadyCallback callback,
			   gpointer user_data);
PGresult *
confab_pg_pool_query_finish(ConfabPgPool *self, GAsyncResult *result, GError **error);

void
confab_pg_pool_listen(ConfabPgPool *self, const gchar *channel);

G_END_DECLS
