/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <string.h>

#include "http/confab-http-lists.h"
#include "http/confab-http-response.h"
#include "model/confab-id.h"
#include "openai/confab-list-params.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * GET /api/v1/conversations and GET /api/v1/conversations/{id}/messages.
 * Read-only and never counted against the quota. Only the caller's own API
 * sessions exist here; a bound token sees only its agent's.
 */

typedef struct {
	ConfabHttpExchange *exchange; /* owned */
	ConfabPrincipal *principal;   /* owned */
	ConfabStoreMessageQuery query;
} ListCtx;

static void
list_ctx_free(ListCtx *ctx)
{
	g_clear_pointer(&ctx->exchange, confab_http_exchange_unref);
	g_clear_pointer(&ctx->principal, confab_principal_free);
	confab_store_message_query_clear(&ctx->query);
	g_free(ctx);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ListCtx, list_ctx_free)

static void
append_envelope_end(GString *out, ConfabStorePage *page, const gchar *(*get_id)(gpointer))
{
	g_string_append(out, "],\"first_id\":");
	confab_json_append_string(out,
				  page->items->len > 0 ? get_id(g_ptr_array_index(page->items, 0))
						       : NULL);
	g_string_append(out, ",\"last_id\":");
	confab_json_append_string(out,
				  page->items->len > 0
				      ? get_id(g_ptr_array_index(page->items, page->items->len - 1))
				      : NULL);
	g_string_append_printf(out, ",\"has_more\":%s}", page->has_more ? "true" : "false");
}

/* ---------- conversations ---------- */

static gchar *
conversations_json(ConfabStorePage *page)
{
	GString *out = g_string_new("{\"object\":\"list\",\"data\":[");
	for (guint i = 0; i < page->items->len; i++) {
		ConfabSession *session = g_ptr_array_index(page->items, i);
		if (i > 0)
			g_string_append_c(out, ',');
		g_string_append(out, "{\"id\":");
		confab_json_append_string(out, confab_session_get_id(session));
		g_string_append(out, ",\"object\":\"conversation\",\"model\":");
		/* created by POST /conversations: no agent until its first response */
		confab_json_append_string(out,
					  g_strcmp0(confab_session_get_agent_id(session), "") != 0
					      ? confab_session_get_agent_id(session)
					      : NULL);
		g_string_append(out, ",\"title\":");
		confab_json_append_string(out, confab_session_get_title(session));
		g_string_append_printf(out,
				       ",\"created_at\":%" G_GINT64_FORMAT
				       ",\"updated_at\":%" G_GINT64_FORMAT "}",
				       confab_session_get_created_at(session),
				       confab_session_get_updated_at(session));
	}
	append_envelope_end(out, page, (const gchar *(*)(gpointer))confab_session_get_id);
	return g_string_free(out, FALSE);
}

static void
list_sessions_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConfabHttpExchange) exchange = user_data;
	g_autoptr(ConfabStorePage) page = NULL;
	g_autoptr(GError) error = NULL;

	page = confab_store_list_sessions_finish(CONFAB_STORE(source), result, &error);
	if (page == NULL) {
		confab_http_response_error(exchange, error);
		return;
	}
	confab_http_response_json(exchange, 200, conversations_json(page));
}

static gchar *
empty_list_json(void)
{
	return g_strdup("{\"object\":\"list\",\"data\":[],\"first_id\":null,\"last_id\":null,\"has_"
			"more\":false}");
}

/**
 * confab_http_lists_conversations:
 * @engine: the engine
 * @exchange: the request
 * @principal: (transfer full): who asks
 * @param: unused
 *
 * Lists the caller's API conversations.
 */
void
confab_http_lists_conversations(ConfabEngine *engine,
				ConfabHttpExchange *exchange,
				ConfabPrincipal *principal,
				const gchar *param)
{
	g_autoptr(ConfabPrincipal) owned = principal;
	g_auto(ConfabStoreSessionQuery) query = {NULL};
	g_auto(ConfabListParams) params = {NULL};
	g_autoptr(GError) error = NULL;

	if (!confab_list_params_parse(confab_http_exchange_get_query(exchange),
				      CONFAB_PREFIX_SESSION,
				      &params,
				      &error)) {
		confab_http_response_error(exchange, error);
		return;
	}
	/* a bound token sees its agent only; asking for another is an empty page */
	if (principal->agent_id != NULL && params.model != NULL &&
	    g_strcmp0(params.model, principal->agent_id) != 0) {
		confab_http_response_json(exchange, 200, empty_list_json());
		return;
	}
	query.owner = g_strdup(principal->owner);
	query.source = CONFAB_SESSION_SOURCE_API;
	query.agent_id = g_strdup(principal->agent_id != NULL ? principal->agent_id : params.model);
	query.after = g_steal_pointer(&params.after);
	query.order = params.order;
	query.limit = params.limit;

	confab_store_list_sessions_async(confab_engine_get_store(engine),
					 &query,
					 NULL,
					 list_sessions_cb,
					 confab_http_exchange_ref(exchange));
}

/* ---------- messages ---------- */

static gchar *
messages_json(ConfabStorePage *page)
{
	GString *out = g_string_new("{\"object\":\"list\",\"data\":[");
	for (guint i = 0; i < page->items->len; i++) {
		ConfabMessage *message = g_ptr_array_index(page->items, i);
		if (i > 0)
			g_string_append_c(out, ',');
		g_string_append(out, "{\"id\":");
		confab_json_append_string(out, confab_message_get_id(message));
		g_string_append(out, ",\"object\":\"message\",\"session_id\":");
		confab_json_append_string(out, confab_message_get_session_id(message));
		g_string_append(out, ",\"role\":");
		confab_json_append_string(out, confab_message_get_role(message));
		g_string_append(out, ",\"model\":");
		confab_json_append_string(out, confab_message_get_model(message));
		g_string_append_printf(out,
				       ",\"created_at\":%" G_GINT64_FORMAT ",\"status\":",
				       confab_message_get_created_at(message));
		confab_json_append_string(
		    out,
		    confab_message_status_to_string(confab_message_get_status(message)));
		/* the Responses API response it belongs to, if any */
		g_string_append(out, ",\"response_id\":");
		confab_json_append_string(out, confab_message_get_response_id(message));
		/* the upstream target that answered, as JSON this program wrote */
		g_string_append(out, ",\"upstream\":");
		g_string_append(out,
				confab_message_get_upstream(message) != NULL
				    ? confab_message_get_upstream(message)
				    : "null");
		/* stored as JSON this program wrote: spliced in as it is */
		g_string_append(out, ",\"content\":");
		g_string_append(out, confab_message_get_content(message));
		g_string_append(out, ",\"content_blocks\":");
		g_string_append(out, confab_message_get_content_blocks(message));
		g_string_append_c(out, '}');
	}
	append_envelope_end(out, page, (const gchar *(*)(gpointer))confab_message_get_id);
	return g_string_free(out, FALSE);
}

static void
list_messages_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ListCtx) ctx = user_data;
	g_autoptr(ConfabStorePage) page = NULL;
	g_autoptr(GError) error = NULL;

	page = confab_store_list_messages_finish(CONFAB_STORE(source), result, &error);
	if (page == NULL) {
		confab_http_response_error(ctx->exchange, error);
		return;
	}
	confab_http_response_json(ctx->exchange, 200, messages_json(page));
}

static void
get_session_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ListCtx) ctx = user_data;
	ConfabPrincipal *principal = ctx->principal;
	const ConfabStoreMessageQuery *query;
	g_autoptr(ConfabSession) session = NULL;
	g_autoptr(GError) error = NULL;

	session = confab_store_get_session_finish(CONFAB_STORE(source), result, &error);
	if (session == NULL) {
		confab_http_response_error(ctx->exchange, error);
		return;
	}
	/* someone else's, a channel's, or another agent's: it does not exist */
	if (g_strcmp0(confab_session_get_owner(session), principal->owner) != 0 ||
	    confab_session_get_source(session) != CONFAB_SESSION_SOURCE_API ||
	    (principal->agent_id != NULL &&
	     g_strcmp0(confab_session_get_agent_id(session), principal->agent_id) != 0)) {
		g_set_error(&error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_CONVERSATION_NOT_FOUND,
			    "No conversation '%s'",
			    ctx->query.session_id);
		confab_http_response_error(ctx->exchange, error);
		return;
	}
	query = &ctx->query;
	confab_store_list_messages_async(CONFAB_STORE(source),
					 query,
					 NULL,
					 list_messages_cb,
					 g_steal_pointer(&ctx));
}

/**
 * confab_http_lists_messages:
 * @engine: the engine
 * @exchange: the request
 * @principal: (transfer full): who asks
 * @session_id: the session id from the path, decoded
 *
 * Replays the messages of one of the caller's API conversations.
 */
void
confab_http_lists_messages(ConfabEngine *engine,
			   ConfabHttpExchange *exchange,
			   ConfabPrincipal *principal,
			   const gchar *session_id)
{
	g_autoptr(ConfabPrincipal) owned = principal;
	g_auto(ConfabListParams) params = {NULL};
	g_autoptr(GError) error = NULL;
	ListCtx *ctx;

	if (!confab_list_params_parse(confab_http_exchange_get_query(exchange),
				      CONFAB_PREFIX_MESSAGE,
				      &params,
				      &error)) {
		confab_http_response_error(exchange, error);
		return;
	}
	if (!confab_id_is_valid(session_id, CONFAB_PREFIX_SESSION)) {
		g_set_error(&error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_CONVERSATION_NOT_FOUND,
			    "No conversation '%s'",
			    session_id);
		confab_http_response_error(exchange, error);
		return;
	}
	ctx = g_new0(ListCtx, 1);
	ctx->exchange = confab_http_exchange_ref(exchange);
	ctx->principal = g_steal_pointer(&owned);
	ctx->query.session_id = g_strdup(session_id);
	ctx->query.after = g_steal_pointer(&params.after);
	ctx->query.order = params.order;
	ctx->query.limit = params.limit;

	confab_store_get_session_async(confab_engine_get_store(engine),
				       session_id,
				       NULL,
				       get_session_cb,
				       ctx);
}
