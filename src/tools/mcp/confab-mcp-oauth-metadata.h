/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* What a `WWW-Authenticate: Bearer …` challenge says. */
typedef struct {
	gchar *resource_metadata; /* nullable */
	gchar *scope;		  /* nullable */
	gchar *error;		  /* nullable: "invalid_token", "insufficient_scope", … */
} ConfabMcpOAuthChallenge;

/* RFC 9728 protected-resource metadata: what Confab uses of it. */
typedef struct {
	gchar *resource;
	gchar *authorization_server; /* the first one */
	gchar **scopes_supported;    /* nullable */
} ConfabMcpOAuthResource;

/* RFC 8414 / OpenID authorization-server metadata: what Confab uses of it. */
typedef struct {
	gchar *issuer;
	gchar *authorization_endpoint; /* nullable: a client-credentials-only server */
	gchar *token_endpoint;
	gchar *registration_endpoint;	     /* nullable */
	gchar **scopes_supported;	     /* nullable */
	gchar **token_endpoint_auth_methods; /* nullable */
	gchar **code_challenge_methods;	     /* nullable */
	gboolean client_id_metadata_document_supported;
} ConfabMcpOAuthServer;

/* A token endpoint's success answer. Wiped when freed. */
typedef struct {
	gchar *access_token;
	gchar *refresh_token; /* nullable */
	gint64 expires_in;    /* seconds, or -1 */
	gchar *scope;	      /* nullable */
} ConfabMcpOAuthTokens;

/* A registration endpoint's answer (RFC 7591). Wiped when freed. */
typedef struct {
	gchar *client_id;
	gchar *client_secret;		   /* nullable */
	gchar *token_endpoint_auth_method; /* nullable */
} ConfabMcpOAuthRegistration;

void
confab_mcp_oauth_metadata_challenge_free(ConfabMcpOAuthChallenge *challenge);
void
confab_mcp_oauth_metadata_resource_free(ConfabMcpOAuthResource *resource);
void
confab_mcp_oauth_metadata_server_free(ConfabMcpOAuthServer *server);
void
confab_mcp_oauth_metadata_tokens_free(ConfabMcpOAuthTokens *tokens);
void
confab_mcp_oauth_metadata_registration_free(ConfabMcpOAuthRegistration *registration);

ConfabMcpOAuthChallenge *
confab_mcp_oauth_metadata_parse_challenge(const gchar *header);
ConfabMcpOAuthResource *
confab_mcp_oauth_metadata_parse_resource(const gchar *data, gsize len, GError **error);
ConfabMcpOAuthServer *
confab_mcp_oauth_metadata_parse_server(const gchar *data, gsize len, GError **error);
ConfabMcpOAuthTokens *
confab_mcp_oauth_metadata_parse_tokens(const gchar *data, gsize len, GError **error);
ConfabMcpOAuthRegistration *
confab_mcp_oauth_metadata_parse_registration(const gchar *data, gsize len, GError **error);
gchar *
confab_mcp_oauth_metadata_parse_error(const gchar *data, gsize len);

gboolean
confab_mcp_oauth_metadata_url_allowed(const gchar *url, GError **error);
gboolean
confab_mcp_oauth_metadata_same_resource(const gchar *a, const gchar *b);
gboolean
confab_mcp_oauth_metadata_resource_covers(const gchar *resource, const gchar *server_url);
gboolean
confab_mcp_oauth_metadata_same_origin(const gchar *a, const gchar *b);
GPtrArray *
confab_mcp_oauth_metadata_resource_metadata_urls(const gchar *server_url, const gchar *from_header);
GPtrArray *
confab_mcp_oauth_metadata_server_metadata_urls(const gchar *issuer);
gchar *
confab_mcp_oauth_metadata_origin(const gchar *url);
gchar *
confab_mcp_oauth_metadata_scope_union(const gchar *a, const gchar *b);
gboolean
confab_mcp_oauth_metadata_scope_has(const gchar *const *scopes, const gchar *scope);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabMcpOAuthChallenge, confab_mcp_oauth_metadata_challenge_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabMcpOAuthResource, confab_mcp_oauth_metadata_resource_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabMcpOAuthServer, confab_mcp_oauth_metadata_server_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabMcpOAuthTokens, confab_mcp_oauth_metadata_tokens_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabMcpOAuthRegistration,
			      confab_mcp_oauth_metadata_registration_free)

G_END_DECLS
