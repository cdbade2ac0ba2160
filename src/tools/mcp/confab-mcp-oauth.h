/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define CONFAB_MCP_OAUTH_ERROR (confab_mcp_oauth_error_quark())

/**
 * ConfabMcpOAuthError:
 * @CONFAB_MCP_OAUTH_ERROR_AUTHORIZATION_NEEDED: a person must authorize
 *   Confab at the authorization URL first
 * @CONFAB_MCP_OAUTH_ERROR_FAILED: a step of the authorization failed (the
 *   message names the server and the step)
 * @CONFAB_MCP_OAUTH_ERROR_BAD_STATE: a callback's state is unknown or used
 */
typedef enum {
	CONFAB_MCP_OAUTH_ERROR_AUTHORIZATION_NEEDED,
	CONFAB_MCP_OAUTH_ERROR_FAILED,
	CONFAB_MCP_OAUTH_ERROR_BAD_STATE,
} ConfabMcpOAuthError;

typedef enum {
	CONFAB_MCP_OAUTH_GRANT_AUTHORIZATION_CODE,
	CONFAB_MCP_OAUTH_GRANT_CLIENT_CREDENTIALS,
} ConfabMcpOAuthGrant;

/**
 * ConfabMcpOAuthLoaded:
 * @state: (transfer full) (nullable): what the owner keeps (see
 *   confab_mcp_oauth_save_state()), or %NULL for nothing
 * @data: what the loader was given
 */
typedef void (*ConfabMcpOAuthLoaded)(gchar *state, gpointer data);

/**
 * ConfabMcpOAuthLoadFunc:
 *
 * Reads the kept state (another instance may have changed it) and calls
 * @done with it, later or at once.
 */
typedef void (*ConfabMcpOAuthLoadFunc)(gpointer user_data,
				       ConfabMcpOAuthLoaded done,
				       gpointer data);

#define CONFAB_TYPE_MCP_OAUTH (confab_mcp_oauth_get_type())
G_DECLARE_FINAL_TYPE(ConfabMcpOAuth, confab_mcp_oauth, CONFAB, MCP_OAUTH, GObject)

GQuark
confab_mcp_oauth_error_quark(void);

ConfabMcpOAuth *
confab_mcp_oauth_new(const gchar *name, const gchar *server_url);
void
confab_mcp_oauth_set_grant(ConfabMcpOAuth *self, ConfabMcpOAuthGrant grant);
ConfabMcpOAuthGrant
confab_mcp_oauth_get_grant(ConfabMcpOAuth *self);
void
confab_mcp_oauth_set_client(ConfabMcpOAuth *self,
			    const gchar *client_id,
			    const gchar *client_secret,
			    const gchar *private_key_pem);
void
confab_mcp_oauth_set_scope(ConfabMcpOAuth *self, const gchar *scope);
void
confab_mcp_oauth_set_redirect_uri(ConfabMcpOAuth *self, const gchar *redirect_uri);
void
confab_mcp_oauth_set_client_metadata_url(ConfabMcpOAuth *self, const gchar *url);
void
confab_mcp_oauth_set_authorize_hint(ConfabMcpOAuth *self, const gchar *hint);

void
confab_mcp_oauth_set_loader(ConfabMcpOAuth *self,
			    ConfabMcpOAuthLoadFunc load,
			    gpointer user_data,
			    GDestroyNotify notify);
gchar *
confab_mcp_oauth_dup_authorization(ConfabMcpOAuth *self, const gchar *url);
gboolean
confab_mcp_oauth_has_token(ConfabMcpOAuth *self);
gint64
confab_mcp_oauth_get_version(ConfabMcpOAuth *self);
gboolean
confab_mcp_oauth_needs_refresh(ConfabMcpOAuth *self);
const gchar *
confab_mcp_oauth_get_authorization_url(ConfabMcpOAuth *self);
const gchar *
confab_mcp_oauth_get_pending_state(ConfabMcpOAuth *self);

void
confab_mcp_oauth_challenge_async(ConfabMcpOAuth *self,
				 guint status,
				 const gchar *www_authenticate,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
gboolean
confab_mcp_oauth_challenge_finish(ConfabMcpOAuth *self, GAsyncResult *result, GError **error);
void
confab_mcp_oauth_authorize_async(ConfabMcpOAuth *self,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
gchar *
confab_mcp_oauth_authorize_finish(ConfabMcpOAuth *self, GAsyncResult *result, GError **error);
void
confab_mcp_oauth_refresh_async(ConfabMcpOAuth *self,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
gboolean
confab_mcp_oauth_refresh_finish(ConfabMcpOAuth *self, GAsyncResult *result, GError **error);
void
confab_mcp_oauth_complete_async(ConfabMcpOAuth *self,
				const gchar *state,
				const gchar *code,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
gboolean
confab_mcp_oauth_complete_finish(ConfabMcpOAuth *self, GAsyncResult *result, GError **error);

gchar *
confab_mcp_oauth_save_state(ConfabMcpOAuth *self);
gboolean
confab_mcp_oauth_load_state(ConfabMcpOAuth *self, const gchar *state, GError **error);

G_END_DECLS
