/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "store/confab-store.h"
#include "tools/confab-toolbox.h"

G_BEGIN_DECLS

/* What `[http] public_url` gets appended for the callback. */
#define CONFAB_MCP_AUTHORIZATIONS_CALLBACK_PATH "/api/v1/oauth/callback"
/* Where Confab's client ID metadata document is served. */
#define CONFAB_MCP_AUTHORIZATIONS_METADATA_PATH "/api/v1/oauth/client-metadata.json"

typedef ConfabAgent *(*ConfabMcpAuthorizationsLookup)(const gchar *agent_id, gpointer user_data);

#define CONFAB_TYPE_MCP_AUTHORIZATIONS (confab_mcp_authorizations_get_type())
G_DECLARE_FINAL_TYPE(ConfabMcpAuthorizations,
		     confab_mcp_authorizations,
		     CONFAB,
		     MCP_AUTHORIZATIONS,
		     GObject)

gchar *
confab_mcp_authorizations_public_url(const gchar *configured, const gchar *listen);
ConfabMcpAuthorizations *
confab_mcp_authorizations_new(ConfabStore *store,
			      ConfabToolbox *toolbox,
			      const gchar *public_url,
			      ConfabMcpAuthorizationsLookup lookup,
			      gpointer lookup_data);
void
confab_mcp_authorizations_set_public_url(ConfabMcpAuthorizations *self, const gchar *public_url);
gchar *
confab_mcp_authorizations_dup_client_metadata(ConfabMcpAuthorizations *self);
void
confab_mcp_authorizations_authorize_async(ConfabMcpAuthorizations *self,
					  const gchar *agent_id,
					  const gchar *server,
					  GCancellable *cancellable,
					  GAsyncReadyCallback callback,
					  gpointer user_data);
gchar *
confab_mcp_authorizations_authorize_finish(ConfabMcpAuthorizations *self,
					   GAsyncResult *result,
					   GError **error);
void
confab_mcp_authorizations_callback_async(ConfabMcpAuthorizations *self,
					 const gchar *state,
					 const gchar *code,
					 const gchar *error_code,
					 GCancellable *cancellable,
					 GAsyncReadyCallback callback,
					 gpointer user_data);
gchar *
confab_mcp_authorizations_callback_finish(ConfabMcpAuthorizations *self,
					  GAsyncResult *result,
					  GError **error);

G_END_DECLS
