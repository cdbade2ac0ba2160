/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include "http/confab-http-oauth.h"
#include "http/confab-http-response.h"
#include "util/confab-error.h"

/*
 * Where an MCP server's authorization server sends the person back
 * (`GET /api/v1/oauth/callback?code=…&state=…`): no token, the `state` is
 * what authenticates it (strict: unknown, replayed or missing is refused).
 * The answer is a plain page: the person reads it, nothing parses it.
 */

#define HTML "text/html; charset=utf-8"

static gchar *
page(const gchar *title, const gchar *text)
{
	g_autofree gchar *t = g_markup_escape_text(title, -1);
	g_autofree gchar *x = g_markup_escape_text(text, -1);

	return g_strdup_printf(
	    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
	    "<title>%s</title></head>\n<body><h1>%s</h1>\n<p>%s</p></body></html>\n",
	    t,
	    t,
	    x);
}

static void
callback_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConfabHttpExchange *exchange = user_data;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *server =
	    confab_mcp_authorizations_callback_finish(CONFAB_MCP_AUTHORIZATIONS(source),
						      result,
						      &error);

	if (server == NULL) {
		g_message("OAuth callback refused: %s", error->message);
		confab_http_exchange_respond_take(
		    exchange,
		    400,
		    HTML,
		    page("Confab: authorization failed", error->message));
	} else {
		g_autofree gchar *text = g_strdup_printf(
		    "Confab may now use the MCP server %s. You may close this page.",
		    server);
		confab_http_exchange_respond_take(exchange,
						  200,
						  HTML,
						  page("Confab: authorized", text));
	}
	confab_http_exchange_unref(exchange);
}

/**
 * confab_http_oauth_callback:
 *
 * `GET /api/v1/oauth/callback`: completes an MCP server's authorization.
 */
void
confab_http_oauth_callback(ConfabEngine *engine,
			   ConfabHttpExchange *exchange,
			   ConfabPrincipal *principal,
			   const gchar *param)
{
	const gchar *query = confab_http_exchange_get_query(exchange);
	g_autoptr(GHashTable) params = NULL;

	if (query != NULL)
		params = g_uri_parse_params(query, -1, "&", G_URI_PARAMS_NONE, NULL);
	confab_mcp_authorizations_callback_async(
	    confab_engine_get_mcp_authorizations(engine),
	    params != NULL ? g_hash_table_lookup(params, "state") : NULL,
	    params != NULL ? g_hash_table_lookup(params, "code") : NULL,
	    params != NULL ? g_hash_table_lookup(params, "error") : NULL,
	    NULL,
	    callback_cb,
	    confab_http_exchange_ref(exchange));
}

/**
 * confab_http_oauth_client_metadata:
 *
 * `GET /api/v1/oauth/client-metadata.json`: Confab's client ID metadata
 * document, with an https `[http] public_url` (404 without).
 */
void
confab_http_oauth_client_metadata(ConfabEngine *engine,
				  ConfabHttpExchange *exchange,
				  ConfabPrincipal *principal,
				  const gchar *param)
{
	gchar *document = confab_mcp_authorizations_dup_client_metadata(
	    confab_engine_get_mcp_authorizations(engine));

	if (document == NULL) {
		g_autoptr(GError) error =
		    g_error_new(CONFAB_ERROR,
				CONFAB_ERROR_NOT_FOUND,
				"Confab serves a client metadata document only "
				"with an https [http] public_url");
		confab_http_response_error(exchange, error);
		return;
	}
	confab_http_response_json(exchange, 200, document);
}
