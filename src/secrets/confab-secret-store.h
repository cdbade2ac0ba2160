/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* The contract's schema and attributes */
#define CONFAB_SECRET_SCHEMA	   "org.confab.Confab1.Secret"
#define CONFAB_SECRET_ATTR_AGENT   "agent_id"
#define CONFAB_SECRET_ATTR_KIND	   "kind"
#define CONFAB_SECRET_KIND_API_KEY "api_key"
#define CONFAB_SECRET_KIND_MCP	   "mcp_servers"

#define CONFAB_TYPE_SECRET_STORE (confab_secret_store_get_type())
G_DECLARE_FINAL_TYPE(ConfabSecretStore, confab_secret_store, CONFAB, SECRET_STORE, GObject)

ConfabSecretStore *
confab_secret_store_new(void);
void
confab_secret_store_probe_async(ConfabSecretStore *self,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
gboolean
confab_secret_store_probe_finish(ConfabSecretStore *self, GAsyncResult *result, GError **error);
gboolean
confab_secret_store_is_available(ConfabSecretStore *self);
void
confab_secret_store_save_async(ConfabSecretStore *self,
			       const gchar *agent_id,
			       const gchar *kind,
			       const gchar *label,
			       const gchar *secret,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
gboolean
confab_secret_store_save_finish(ConfabSecretStore *self, GAsyncResult *result, GError **error);
void
confab_secret_store_lookup_async(ConfabSecretStore *self,
				 const gchar *agent_id,
				 const gchar *kind,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
gchar *
confab_secret_store_lookup_finish(ConfabSecretStore *self, GAsyncResult *result, GError **error);
void
confab_secret_store_clear_async(ConfabSecretStore *self,
				const gchar *agent_id,
				const gchar *kind,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
gboolean
confab_secret_store_clear_finish(ConfabSecretStore *self, GAsyncResult *result, GError **error);

G_END_DECLS
