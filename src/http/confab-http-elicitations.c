/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include "http/confab-http-elicitations.h"
#include "http/confab-http-response.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * POST /api/v1/elicitations/{id} {"action": "accept"|"decline"|"cancel",
 * "content"?: {…}}: a person answers an MCP server's question that a turn
 * waits for (on this instance or another), as approvals are decided
 * (confab-http-approvals.c). The turn's owner answers; another owner's
 * request is 404. Accepted content is checked against the requested
 * schema (400 invalid_value, param `content.FIELD`; the request stays
 * pending) and its defaults applied. One answered or timed out already is
 * 409 elicitation_already_answered.
 */

static void
append_elicitation(GString *out, const ConfabElicitationRequest *e)
{
	g_string_append(out, "{\"id\":");
	confab_json_append_string(out, e->id);
	g_string_append(out, ",\"object\":\"elicitation\",\"state\":");
	confab_json_append_string(out, e->state);
	g_string_append(out, ",\"server\":");
	confab_json_append_string(out, e->server);
	g_string_append(out, ",\"message\":");
	confab_json_append_string(out, e->message);
	g_string_append(out, ",\"requested_schema\":");
	g_string_append(out, e->schema != NULL ? e->schema : "null");
	g_string_append(out, ",\"content\":");
	g_string_append(out, e->content != NULL ? e->content : "null");
	g_string_append(out, ",\"answered_by\":");
	confab_json_append_string(out, e->answered_by);
	g_string_append(out, ",\"model\":");
	confab_json_append_string(out, e->agent_id);
	g_string_append(out, ",\"session_id\":");
	confab_json_append_string(out, e->session_id);
	g_string_append_printf(out,
			       ",\"created_at\":%" G_GINT64_FORMAT
			       ",\"answered_at\":%" G_GINT64_FORMAT "}",
			       e->created_at,
			       e->answered_at);
}

static void
answered_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConfabHttpExchange *exchange = user_data;
	g_autoptr(ConfabElicitationRequest) answered = NULL;
	g_autoptr(GError) error = NULL;
	GString *out;

	answered = confab_elicitations_answer_finish(CONFAB_ELICITATIONS(source), result, &error);
	if (answered == NULL) {
		confab_http_response_error(exchange, error);
		confab_http_exchange_unref(exchange);
		return;
	}
	out = g_string_new(NULL);
	append_elicitation(out, answered);
	confab_http_response_json(exchange, 200, g_string_free(out, FALSE));
	confab_http_exchange_unref(exchange);
}

/* {"action": string, "content"?: object|null}; other members ignored. */
static gboolean
parse_body(ConfabEngine *engine,
	   ConfabHttpExchange *exchange,
	   gchar **action,
	   JsonObject **content,
	   GError **error)
{
	const ConfabConfig *config = confab_engine_get_config(engine);
	g_autoptr(GBytes) bytes = confab_http_exchange_steal_body(exchange);
	g_autoptr(JsonNode) root = NULL;
	JsonObject *object;
	JsonNode *node;

	root = confab_json_parse(bytes != NULL ? g_bytes_get_data(bytes, NULL) : "",
				 bytes != NULL ? g_bytes_get_size(bytes) : 0,
				 config->max_json_depth,
				 error);
	if (root == NULL)
		return FALSE;
	if (!JSON_NODE_HOLDS_OBJECT(root)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 NULL,
				 "The body must be a JSON object: {\"action\": \"accept\", "
				 "\"content\": {…}}");
		return FALSE;
	}
	object = json_node_get_object(root);
	node = json_object_get_member(object, "action");
	if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) ||
	    json_node_get_value_type(node) != G_TYPE_STRING ||
	    !confab_elicitation_request_is_action(json_node_get_string(node))) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "action",
				 "'action' must be one of \"accept\", \"decline\", \"cancel\"");
		return FALSE;
	}
	*action = g_strdup(json_node_get_string(node));
	node = json_object_get_member(object, "content");
	if (node == NULL || JSON_NODE_HOLDS_NULL(node))
		return TRUE;
	if (!JSON_NODE_HOLDS_OBJECT(node)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "content",
				 "'content' must be a JSON object");
		return FALSE;
	}
	*content = json_object_ref(json_node_get_object(node));
	return TRUE;
}

/**
 * confab_http_elicitations_answer:
 * @engine: the engine
 * @exchange: a POST /api/v1/elicitations/{id} whose head was checked
 * @principal: (transfer full): who answers
 * @param: the elicitation id
 *
 * Answers a pending elicitation: the waiting turn hands the answer to its
 * MCP server.
 */
void
confab_http_elicitations_answer(ConfabEngine *engine,
				ConfabHttpExchange *exchange,
				ConfabPrincipal *principal,
				const gchar *param)
{
	g_autoptr(ConfabPrincipal) owned = principal;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *action = NULL;
	g_autoptr(JsonObject) content = NULL;

	if (!parse_body(engine, exchange, &action, &content, &error)) {
		confab_http_response_error(exchange, error);
		return;
	}
	confab_elicitations_answer_async(confab_engine_get_elicitations(engine),
					 param,
					 principal->owner,
					 principal->agent_id,
					 action,
					 content,
					 "api",
					 answered_cb,
					 confab_http_exchange_ref(exchange));
}

/* ---------- GET /api/v1/elicitations ---------- */

/* at most this many in one list; has_more says there are others */
#define LIST_MAX 100

static void
listed_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConfabHttpExchange *exchange = user_data;
	g_autoptr(GPtrArray) elicitations = NULL;
	g_autoptr(GError) error = NULL;

	elicitations = confab_store_list_elicitations_finish(CONFAB_STORE(source), result, &error);
	if (elicitations == NULL)
		confab_http_response_error(exchange, error);
	else
		confab_http_response_pending_list(exchange,
						  elicitations,
						  LIST_MAX,
						  (ConfabHttpAppendFunc)append_elicitation);
	confab_http_exchange_unref(exchange);
}

/**
 * confab_http_elicitations_list:
 * @engine: the engine
 * @exchange: a GET /api/v1/elicitations whose head was checked
 * @principal: (transfer full): who asks
 * @param: unused
 *
 * Lists the caller's pending elicitations, oldest first (a bound token's,
 * its agent's only): what a client that does not read the stream's tool
 * events answers with POST.
 */
void
confab_http_elicitations_list(ConfabEngine *engine,
			      ConfabHttpExchange *exchange,
			      ConfabPrincipal *principal,
			      const gchar *param)
{
	g_autoptr(ConfabPrincipal) owned = principal;

	/* one more than a page: has_more */
	confab_store_list_elicitations_async(confab_engine_get_store(engine),
					     principal->owner,
					     principal->agent_id,
					     LIST_MAX + 1,
					     NULL,
					     listed_cb,
					     confab_http_exchange_ref(exchange));
}
