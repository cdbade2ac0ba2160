/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <math.h>
#include <string.h>

#include "confab-test-helper.h"
#include "core/confab-router.h"
#include "providers/confab-provider-echo.h"

/*
 * ConfabRouter's strategies with the echo provider (which answers every
 * target alike): the share a weighted agent gives each target over 1,000
 * calls, least-busy with calls in flight, and the order of fallback.
 */

#define N_CALLS 1000

static ConfabAgent *
agent_with_weights(const guint *weights, guint n, const gchar *strategy)
{
	ConfabAgent *agent = confab_agent_new();
	g_autoptr(GPtrArray) targets =
	    g_ptr_array_new_with_free_func((GDestroyNotify)confab_agent_target_free);
	g_autofree gchar *routing = g_strdup_printf("{\"strategy\":\"%s\"}", strategy);
	g_autoptr(GError) error = NULL;

	confab_agent_set_id(agent, "agt_router_test");
	confab_agent_set_name(agent, "router");
	confab_agent_set_provider(agent, "echo");
	for (guint i = 0; i < n; i++) {
		ConfabAgentTarget *target = confab_agent_target_new();
		target->label = g_strdup_printf("t%u", i);
		target->base_url = g_strdup("http://127.0.0.1:9/v1");
		target->upstream_model = g_strdup("m");
		target->weight = weights[i];
		g_ptr_array_add(targets, target);
	}
	confab_agent_set_targets(agent, targets);
	g_assert_true(confab_agent_set_routing_json(agent, routing, &error));
	g_assert_no_error(error);
	return agent;
}

static void
ignore_delta(const ConfabDelta *delta, gpointer user_data)
{
}

static void
on_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	GAsyncResult **slot = user_data;
	*slot = g_object_ref(result);
}

/* One call, run to its end; the label of the target that answered. */
static gchar *
route_once(ConfabRouter *router, ConfabProvider *provider, ConfabAgent *agent)
{
	g_autoptr(ConfabProviderRequest) request = g_new0(ConfabProviderRequest, 1);
	g_autoptr(GAsyncResult) result = NULL;
	g_autoptr(ConfabProviderResult) answer = NULL;
	g_autoptr(GError) error = NULL;
	JsonObject *message = json_object_new();

	request->agent = g_object_ref(agent);
	request->messages = json_array_new();
	json_object_set_string_member(message, "role", "user");
	json_object_set_string_member(message, "content", "hi");
	json_array_add_object_element(request->messages, message);
	confab_router_complete_async(router,
				     provider,
				     request,
				     ignore_delta,
				     NULL,
				     NULL,
				     on_done,
				     &result);
	while (result == NULL)
		g_main_context_iteration(NULL, TRUE);
	answer = confab_router_complete_finish(router, result, &error);
	g_assert_no_error(error);
	g_assert_nonnull(answer);
	g_assert_cmpuint(request->attempts, ==, 1);
	return g_strdup(request->target);
}

/*
 * Weights 1, 3 and 6: over 1,000 calls each target's share is its weight
 * over 10, within 5 points (the binomial standard deviation of a share of
 * 0.6 over 1,000 calls is 1.5 points: 5 points is more than 3 of them, so
 * the test fails by chance about once in 1,000 runs, and fails always for
 * a pick that ignores weights).
 */
static void
test_weighted_share(void)
{
	const guint weights[] = {1, 3, 6};
	g_autoptr(ConfabAgent) agent = agent_with_weights(weights, 3, "weighted");
	g_autoptr(ConfabRouter) router = confab_router_new(NULL, 30000);
	g_autoptr(ConfabProviderEcho) echo = confab_provider_echo_new();
	guint counts[3] = {0};

	for (guint i = 0; i < N_CALLS; i++) {
		g_autofree gchar *label = route_once(router, CONFAB_PROVIDER(echo), agent);
		counts[label[1] - '0']++;
	}
	for (guint i = 0; i < 3; i++) {
		gdouble share = (gdouble)counts[i] / N_CALLS;
		g_test_message("target t%u (weight %u): %u of %u calls",
			       i,
			       weights[i],
			       counts[i],
			       N_CALLS);
		g_assert_cmpfloat(fabs(share - weights[i] / 10.0), <, 0.05);
	}
}

/* fallback: always the first target while it answers */
static void
test_fallback_order(void)
{
	const guint weights[] = {1, 1000};
	g_autoptr(ConfabAgent) agent = agent_with_weights(weights, 2, "fallback");
	g_autoptr(ConfabRouter) router = confab_router_new(NULL, 30000);
	g_autoptr(ConfabProviderEcho) echo = confab_provider_echo_new();

	for (guint i = 0; i < 50; i++) {
		g_autofree gchar *label = route_once(router, CONFAB_PROVIDER(echo), agent);
		g_assert_cmpstr(label, ==, "t0");
	}
}

/* least-busy: calls started together spread over the targets, each going
 * to one with the fewest in flight */
static void
test_least_busy(void)
{
	const guint weights[] = {1, 1, 1};
	g_autoptr(ConfabAgent) agent = agent_with_weights(weights, 3, "least-busy");
	g_autoptr(ConfabRouter) router = confab_router_new(NULL, 30000);
	g_autoptr(ConfabProviderEcho) echo = confab_provider_echo_new();
	ConfabProviderRequest *requests[6];
	GAsyncResult *results[6] = {NULL};
	guint counts[3] = {0};

	for (guint i = 0; i < 6; i++) {
		JsonObject *message = json_object_new();
		requests[i] = g_new0(ConfabProviderRequest, 1);
		requests[i]->agent = g_object_ref(agent);
		requests[i]->messages = json_array_new();
		json_object_set_string_member(message, "role", "user");
		json_object_set_string_member(message, "content", "hi");
		json_array_add_object_element(requests[i]->messages, message);
		/* started before any answers: each sees the others in flight */
		confab_router_complete_async(router,
					     CONFAB_PROVIDER(echo),
					     requests[i],
					     ignore_delta,
					     NULL,
					     NULL,
					     on_done,
					     &results[i]);
		counts[requests[i]->target[1] - '0']++;
	}
	for (guint i = 0; i < 6; i++) {
		g_autoptr(ConfabProviderResult) answer = NULL;
		while (results[i] == NULL)
			g_main_context_iteration(NULL, TRUE);
		answer = confab_router_complete_finish(router, results[i], NULL);
		g_assert_nonnull(answer);
		g_object_unref(results[i]);
		confab_provider_request_free(requests[i]);
	}
	for (guint i = 0; i < 3; i++)
		g_assert_cmpuint(counts[i], ==, 2);
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/router/weighted-share", test_weighted_share);
	g_test_add_func("/confab/router/fallback-order", test_fallback_order);
	g_test_add_func("/confab/router/least-busy", test_least_busy);
	return g_test_run();
}
