/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>
#include <libpq-fe.h>

#include "store/postgres/confab-pg-batch.h"
#include "store/postgres/confab-pg-error.h"

G_BEGIN_DECLS

G_DEFINE_AUTOPTR_CLEANUP_FUNC(PGresult, PQclear)

/**
 * ConfabPgConnectionState:
 * @CONFAB_PG_CONNECTION_STATE_NEW: not yet asked to connect
 * @CONFAB_PG_CONNECTION_STATE_CONNECTING: connecting, authenticating, setting up
 * @CONFAB_PG_CONNECTION_STATE_READY: running queries
 * @CONFAB_PG_CONNECTION_STATE_CLOSED: lost, failed or closed; for good
 */
typedef enum {
	CONFAB_PG_CONNECTION_STATE_NEW,
	CONFAB_PG_CONNECTION_STATE_CONNECTING,
	CONFAB_PG_CONNECTION_STATE_READY,
	CONFAB_PG_CONNECTION_STATE_CLOSED,
} ConfabPgConnectionState;

#define CONFAB_TYPE_PG_CONNECTION (confab_pg_connection_get_type())
G_DECLARE_FINAL_TYPE(ConfabPgConnection, confab_pg_connection, CONFAB, PG_CONNECTION, GObject)

ConfabPgConnection *
confab_pg_connection_new(const gchar *conninfo, const gchar *password);
void
confab_pg_connection_set_connect_timeout(ConfabPgConnection *self, guint timeout_ms);
guint
confab_pg_connection_get_connect_timeout(ConfabPgConnection *self);
void
confab_pg_connection_set_query_timeout(ConfabPgConnection *self, guint timeout_ms);
guint
confab_pg_connection_get_query_timeout(ConfabPgConnection *self);
ConfabPgConnectionState
confab_pg_connection_get_state(ConfabPgConnection *self);
PGTransactionStatusType
confab_pg_connection_get_transaction_status(ConfabPgConnection *self);
guint
confab_pg_connection_get_n_queued(ConfabPgConnection *self);
gint
confab_pg_connection_get_backend_pid(ConfabPgConnection *self);

void
confab_pg_connection_connect_async(ConfabPgConnection *self,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
gboolean
confab_pg_connection_connect_finish(ConfabPgConnection *self, GAsyncResult *result, GError **error);

void
confab_pg_connection_query_async(ConfabPgConnection *self,
				 const gchar *sql,
				 guint n_params,
				 const gchar *const *params,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
PGresult *
confab_pg_connection_query_finish(ConfabPgConnection *self, GAsyncResult *result, GError **error);

void
confab_pg_connection_exec_script_async(ConfabPgConnection *self,
				       const gchar *script,
				       GCancellable *cancellable,
				       GAsyncReadyCallback callback,
				       gpointer user_data);
PGresult *
confab_pg_connection_exec_script_finish(ConfabPgConnection *self,
					GAsyncResult *result,
					GError **error);

void
confab_pg_connection_transaction_async(ConfabPgConnection *self,
				       ConfabPgBatch *batch,
				       GCancellable *cancellable,
				       GAsyncReadyCallback callback,
				       gpointer user_data);
GPtrArray *
confab_pg_connection_transaction_finish(ConfabPgConnection *self,
					GAsyncResult *result,
					GError **error);

void
confab_pg_connection_listen_async(ConfabPgConnection *self,
				  const gchar *channel,
				  GCancellable *cancellable,
				  GAsyncReadyCallback callback,
				  gpointer user_data);
gboolean
confab_pg_connection_listen_finish(ConfabPgConnection *self, GAsyncResult *result, GError **error);
void
confab_pg_connection_listen(ConfabPgConnection *self, const gchar *channel);

void
confab_pg_connection_close(ConfabPgConnection *self);

/* what a #ConfabPgPool shares with its connections */
void
confab_pg_connection_new_conninfo_pspecs(GParamSpec **conninfo, GParamSpec **password);
guint
confab_pg_connection_class_new_notification(GObjectClass *klass);

G_END_DECLS
