/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include "http/confab-http-models.h"
#include "http/confab-http-response.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * GET /api/v1/models and GET /api/v1/models/{id}: the agents a token may
 * talk to, in OpenAI's model shape, so that `client.models.list()` and the
 * model pickers of OpenAI-compatible front ends show them. Answered from
 * the engine's cache: no store access, never counted against a quota. A
 * token bound to one agent sees that agent only; any other id is 404, as
 * if it did not exist.
 */

static void
append_model(GString *out, ConfabAgent *agent)
{
	g_string_append(out, "{\"id\":");
	confab_json_append_string(out, confab_agent_get_id(agent));
	g_string_append_printf(out,
			       ",\"object\":\"model\",\"created\":%" G_GINT64_FORMAT
			       ",\"owned_by\":\"confab\",\"name\":",
			       confab_agent_get_created_at(agent));
	confab_json_append_string(out, confab_agent_get_name(agent));
	g_string_append_c(out, '}');
}

static gboolean
may_use(ConfabPrincipal *principal, ConfabAgent *agent)
{
	return principal->agent_id == NULL ||
	       g_str_equal(principal->agent_id, confab_agent_get_id(agent));
}

/**
 * confab_http_models_list:
 * @engine: the engine
 * @exchange: the request
 * @principal: (transfer full): who asks
 * @param: unused
 *
 * Lists the agents the caller may use, by id.
 */
void
confab_http_models_list(ConfabEngine *engine,
			ConfabHttpExchange *exchange,
			ConfabPrincipal *principal,
			const gchar *param)
{
	g_autoptr(ConfabPrincipal) owned = principal;
	g_autoptr(GPtrArray) agents = confab_engine_list_agents(engine);
	GString *out = g_string_new("{\"object\":\"list\",\"data\":[");
	gboolean first = TRUE;

	for (guint i = 0; i < agents->len; i++) {
		ConfabAgent *agent = g_ptr_array_index(agents, i);
		if (!may_use(principal, agent))
			continue;
		if (!first)
			g_string_append_c(out, ',');
		append_model(out, agent);
		first = FALSE;
	}
	g_string_append(out, "]}");
	confab_http_response_json(exchange, 200, g_string_free(out, FALSE));
}

/**
 * confab_http_models_get:
 * @engine: the engine
 * @exchange: the request
 * @principal: (transfer full): who asks
 * @agent_id: the `{id}` of the path, decoded
 *
 * Answers one agent the caller may use, or 404 `agent_not_found`.
 */
void
confab_http_models_get(ConfabEngine *engine,
		       ConfabHttpExchange *exchange,
		       ConfabPrincipal *principal,
		       const gchar *agent_id)
{
	g_autoptr(ConfabPrincipal) owned = principal;
	g_autoptr(ConfabAgent) agent = confab_engine_lookup_agent(engine, agent_id);
	GString *out;

	if (agent == NULL || !may_use(principal, agent)) {
		g_autoptr(GError) error = NULL;
		confab_error_set_printf(&error,
					CONFAB_ERROR_AGENT_NOT_FOUND,
					"model",
					"The model '%s' does not exist or you do not have "
					"access to it",
					agent_id);
		confab_http_response_error(exchange, error);
		return;
	}
	out = g_string_new(NULL);
	append_model(out, agent);
	confab_http_response_json(exchange, 200, g_string_free(out, FALSE));
}
