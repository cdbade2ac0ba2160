/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-fuzz.h"
#include "tools/mcp/confab-mcp-oauth-metadata.h"

/* What an MCP server and its authorization server say to Confab's OAuth:
 * the input's first byte picks the parser (WWW-Authenticate, protected-
 * resource metadata, authorization-server metadata, a token response, a
 * registration response, an error body), the rest is its text. Any input
 * gives a value or an error, never a critical; what parses holds what the
 * parser promises. */

static void
check_challenge(const gchar *text)
{
	g_autoptr(ConfabMcpOAuthChallenge) challenge =
	    confab_mcp_oauth_metadata_parse_challenge(text);
	g_autofree gchar *scope = NULL;

	g_assert_nonnull(challenge);
	if (challenge->resource_metadata != NULL) {
		g_autoptr(GPtrArray) urls =
		    confab_mcp_oauth_metadata_resource_metadata_urls("https://mcp.example/mcp",
								     challenge->resource_metadata);
		g_assert_cmpstr(urls->pdata[0], ==, challenge->resource_metadata);
	}
	scope = confab_mcp_oauth_metadata_scope_union(challenge->scope, "a b");
	g_assert_nonnull(scope);
}

static void
check_documents(guint8 kind, const gchar *text, gsize len)
{
	g_autoptr(GError) error = NULL;

	if (kind == 1) {
		g_autoptr(ConfabMcpOAuthResource) r =
		    confab_mcp_oauth_metadata_parse_resource(text, len, &error);
		g_assert_true((r != NULL) != (error != NULL));
		if (r != NULL) {
			g_autoptr(GPtrArray) urls =
			    confab_mcp_oauth_metadata_server_metadata_urls(r->authorization_server);
			g_assert_nonnull(r->resource);
			confab_mcp_oauth_metadata_resource_covers(r->resource,
								  "https://a.example/mcp");
			confab_mcp_oauth_metadata_url_allowed(r->authorization_server, NULL);
			g_assert_nonnull(urls);
		}
	} else if (kind == 2) {
		g_autoptr(ConfabMcpOAuthServer) s =
		    confab_mcp_oauth_metadata_parse_server(text, len, &error);
		g_assert_true((s != NULL) != (error != NULL));
		if (s != NULL)
			g_assert_true(s->issuer != NULL && s->token_endpoint != NULL);
	} else if (kind == 3) {
		g_autoptr(ConfabMcpOAuthTokens) t =
		    confab_mcp_oauth_metadata_parse_tokens(text, len, &error);
		g_assert_true((t != NULL) != (error != NULL));
		if (t != NULL)
			g_assert_true(*t->access_token != '\0' && t->expires_in >= -1);
	} else if (kind == 4) {
		g_autoptr(ConfabMcpOAuthRegistration) r =
		    confab_mcp_oauth_metadata_parse_registration(text, len, &error);
		g_assert_true((r != NULL) != (error != NULL));
	} else {
		g_autofree gchar *message = confab_mcp_oauth_metadata_parse_error(text, len);
		g_assert_true(message == NULL || g_utf8_validate(message, -1, NULL));
	}
}

int
LLVMFuzzerTestOneInput(const guint8 *data, size_t size)
{
	g_autofree gchar *text = NULL;

	if (size == 0)
		return 0;
	text = g_strndup((const gchar *)data + 1, size - 1);
	if (data[0] % 6 == 0)
		check_challenge(text);
	else
		check_documents(data[0] % 6, (const gchar *)data + 1, size - 1);
	return 0;
}
