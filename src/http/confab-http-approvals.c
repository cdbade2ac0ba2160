/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <string.h>

#include "http/confab-http-approvals.h"
#include "http/confab-http-response.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * POST /api/v1/approvals/{id} {"approve": bool, "reason"?: string}: a
 * person decides a tool call that a turn waits for (on this instance or
 * another). The turn's owner decides, with either v1 scope; another
 * owner's approval, or one of another agent for a bound token, is 404 as
 * for any object. One decided or timed out already is 409
 * approval_already_decided: the first decision stands.
 */

#define REASON_MAX_BYTES 4096

static void
append_approval(GString *out, const ConfabApproval *a)
{
	g_string_append(out, "{\"id\":");
	confab_json_append_string(out, a->id);
	g_string_append(out, ",\"object\":\"approval\",\"state\":");
	confab_json_append_string(out, confab_approval_state_to_string(a->state));
	g_string_append_printf(out,
			       ",\"approve\":%s,\"reason\":",
			       a->state == CONFAB_APPROVAL_STATE_APPROVED ? "true" : "false");
	confab_json_append_string(out, a->reason);
	g_string_append(out, ",\"decided_by\":");
	confab_json_append_string(out, a->decided_by);
	g_string_append(out, ",\"server\":");
	confab_json_append_string(out, a->server);
	g_string_append(out, ",\"name\":");
	confab_json_append_string(out, a->name);
	g_string_append(out, ",\"arguments\":");
	confab_json_append_string(out, a->arguments);
	g_string_append(out, ",\"tool_call_id\":");
	confab_json_append_string(out, a->tool_call_id);
	g_string_append(out, ",\"model\":");
	confab_json_append_string(out, a->agent_id);
	g_string_append(out, ",\"session_id\":");
	confab_json_append_string(out, a->session_id);
	g_string_append_printf(out,
			       ",\"created_at\":%" G_GINT64_FORMAT
			       ",\"decided_at\":%" G_GINT64_FORMAT "}",
			       a->created_at,
			       a->decided_at);
}

static void
decided_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConfabHttpExchange *exchange = user_data;
	g_autoptr(ConfabApproval) approval = NULL;
	g_autoptr(GError) error = NULL;
	GString *out;

	approval = confab_approvals_decide_finish(CONFAB_APPROVALS(source), result, &error);
	if (approval == NULL) {
		confab_http_response_error(exchange, error);
		confab_http_exchange_unref(exchange);
		return;
	}
	out = g_string_new(NULL);
	append_approval(out, approval);
	confab_http_response_json(exchange, 200, g_string_free(out, FALSE));
	confab_http_exchange_unref(exchange);
}

/* {"approve": bool, "reason"?: string|null}; other members are ignored,
 * as OpenAI's API ignores what it does not know in a decision. */
static gboolean
parse_body(ConfabEngine *engine,
	   ConfabHttpExchange *exchange,
	   gboolean *approve,
	   gchar **reason,
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
				 "The body must be a JSON object: {\"approve\": true|false, "
				 "\"reason\": \"…\"}");
		return FALSE;
	}
	object = json_node_get_object(root);
	node = json_object_get_member(object, "approve");
	if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) ||
	    json_node_get_value_type(node) != G_TYPE_BOOLEAN) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "approve",
				 "'approve' must be true or false");
		return FALSE;
	}
	*approve = json_node_get_boolean(node);
	node = json_object_get_member(object, "reason");
	if (node == NULL || JSON_NODE_HOLDS_NULL(node))
		return TRUE;
	if (!JSON_NODE_HOLDS_VALUE(node) || json_node_get_value_type(node) != G_TYPE_STRING) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "reason",
				 "'reason' must be a string");
		return FALSE;
	}
	if (strlen(json_node_get_string(node)) > REASON_MAX_BYTES) {
		confab_error_set_printf(error,
					CONFAB_ERROR_INVALID_VALUE,
					"reason",
					"'reason' must be at most %d bytes",
					REASON_MAX_BYTES);
		return FALSE;
	}
	*reason = g_strdup(json_node_get_string(node));
	return TRUE;
}

/**
 * confab_http_approvals_decide:
 * @engine: the engine
 * @exchange: a POST /api/v1/approvals/{id} whose head was checked
 * @principal: (transfer full): who decides
 * @param: the approval id
 *
 * Decides a pending approval: the waiting turn runs the call or tells its
 * model the user declined.
 */
void
confab_http_approvals_decide(ConfabEngine *engine,
			     ConfabHttpExchange *exchange,
			     ConfabPrincipal *principal,
			     const gchar *param)
{
	g_autoptr(ConfabPrincipal) owned = principal;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *reason = NULL;
	gboolean approve = FALSE;

	if (!parse_body(engine, exchange, &approve, &reason, &error)) {
		confab_http_response_error(exchange, error);
		return;
	}
	confab_approvals_decide_async(confab_engine_get_approvals(engine),
				      param,
				      principal->owner,
				      principal->agent_id,
				      approve,
				      reason,
				      "api",
				      decided_cb,
				      confab_http_exchange_ref(exchange));
}

/* ---------- GET /api/v1/approvals ---------- */

/* at most this many in one list; has_more says there are others */
#define LIST_MAX 100

static void
listed_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConfabHttpExchange *exchange = user_data;
	g_autoptr(GPtrArray) approvals = NULL;
	g_autoptr(GError) error = NULL;

	approvals = confab_store_list_approvals_finish(CONFAB_STORE(source), result, &error);
	if (approvals == NULL)
		confab_http_response_error(exchange, error);
	else
		confab_http_response_pending_list(exchange,
						  approvals,
						  LIST_MAX,
						  (ConfabHttpAppendFunc)append_approval);
	confab_http_exchange_unref(exchange);
}

/**
 * confab_http_approvals_list:
 * @engine: the engine
 * @exchange: a GET /api/v1/approvals whose head was checked
 * @principal: (transfer full): who asks
 * @param: unused
 *
 * Lists the caller's pending approvals, oldest first (a bound token's,
 * its agent's only): what a client that does not read the stream's
 * tool events (a JSON chat completion, a script) decides with POST.
 */
void
confab_http_approvals_list(ConfabEngine *engine,
			   ConfabHttpExchange *exchange,
			   ConfabPrincipal *principal,
			   const gchar *param)
{
	g_autoptr(ConfabPrincipal) owned = principal;

	/* one more than a page: has_more */
	confab_store_list_approvals_async(confab_engine_get_store(engine),
					  principal->owner,
					  principal->agent_id,
					  LIST_MAX + 1,
					  NULL,
					  listed_cb,
					  confab_http_exchange_ref(exchange));
}
