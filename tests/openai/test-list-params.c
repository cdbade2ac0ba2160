/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "model/confab-id.h"
#include "openai/confab-list-params.h"
#include "util/confab-error.h"

/* The query string of the v1 list endpoints: limit, order, after, model. */

static void
assert_refused(const gchar *query, const gchar *prefix, gint code, const gchar *param)
{
	g_auto(ConfabListParams) params = {0};
	g_autoptr(GError) error = NULL;

	if (confab_list_params_parse(query, prefix, &params, &error))
		g_error("'%s' accepted", query);
	if (error->domain != CONFAB_ERROR || error->code != code)
		g_error("'%s': expected code %d, got %d (%s)",
			query,
			code,
			error->code,
			error->message);
	g_assert_cmpstr(confab_error_get_param(error), ==, param);
}

static void
test_defaults(void)
{
	const gchar *queries[] = {NULL, "", "foo=bar", "limit_x=5"};
	for (guint i = 0; i < G_N_ELEMENTS(queries); i++) {
		g_auto(ConfabListParams) params = {0};
		g_autoptr(GError) error = NULL;
		g_assert_true(
		    confab_list_params_parse(queries[i], CONFAB_PREFIX_SESSION, &params, &error));
		g_assert_no_error(error);
		g_assert_cmpuint(params.limit, ==, 20);
		g_assert_cmpint(params.order, ==, CONFAB_ORDER_DESC);
		g_assert_null(params.after);
		g_assert_null(params.model);
	}
	g_assert_cmpint(CONFAB_LIST_LIMIT_DEFAULT, ==, 20);
	g_assert_cmpint(CONFAB_LIST_LIMIT_MAX, ==, 100);
}

static void
test_limit(void)
{
	struct {
		const gchar *query;
		guint limit;
	} good[] = {
	    {"limit=1", 1},
	    {"limit=20", 20},
	    {"limit=100", 100},
	    {"limit=55&order=asc", 55},
	    {"order=asc&limit=7", 7},
	};
	const gchar *bad[] = {
	    "limit=0",
	    "limit=101",
	    "limit=-1",
	    "limit=+5",
	    "limit=",
	    "limit=abc",
	    "limit=1.5",
	    "limit=1e1",
	    "limit=0x10",
	    "limit=%205",
	    "limit=5%20",
	    "limit=99999999999999999999999",
	    "limit=4294967297",
	};
	for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
		g_auto(ConfabListParams) params = {0};
		g_autoptr(GError) error = NULL;
		g_assert_true(confab_list_params_parse(good[i].query,
						       CONFAB_PREFIX_SESSION,
						       &params,
						       &error));
		g_assert_no_error(error);
		g_assert_cmpuint(params.limit, ==, good[i].limit);
	}
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++)
		assert_refused(bad[i], CONFAB_PREFIX_SESSION, CONFAB_ERROR_INVALID_LIMIT, "limit");
}

static void
test_order(void)
{
	const gchar *bad[] =
	    {"order=ASC", "order=up", "order=", "order=asc%20", "order=descending"};
	{
		g_auto(ConfabListParams) params = {0};
		g_assert_true(
		    confab_list_params_parse("order=asc", CONFAB_PREFIX_SESSION, &params, NULL));
		g_assert_cmpint(params.order, ==, CONFAB_ORDER_ASC);
	}
	{
		g_auto(ConfabListParams) params = {0};
		g_assert_true(
		    confab_list_params_parse("order=desc", CONFAB_PREFIX_SESSION, &params, NULL));
		g_assert_cmpint(params.order, ==, CONFAB_ORDER_DESC);
	}
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++)
		assert_refused(bad[i], CONFAB_PREFIX_SESSION, CONFAB_ERROR_INVALID_ORDER, "order");
}

static void
test_after(void)
{
	g_autoptr(ConfabIdGenerator) gen = confab_id_generator_new();
	g_autofree gchar *cts = confab_id_generator_next(gen, CONFAB_PREFIX_SESSION);
	g_autofree gchar *msg = confab_id_generator_next(gen, CONFAB_PREFIX_MESSAGE);
	g_autofree gchar *agt = confab_id_generator_next(gen, CONFAB_PREFIX_AGENT);
	g_autofree gchar *q_cts = g_strdup_printf("after=%s", cts);
	g_autofree gchar *q_msg = g_strdup_printf("after=%s&limit=3", msg);
	g_autofree gchar *q_agt = g_strdup_printf("after=%s", agt);
	g_autofree gchar *q_short = g_strndup(q_cts, strlen(q_cts) - 1);
	g_autofree gchar *q_long = g_strdup_printf("after=%s0", cts);
	g_autofree gchar *q_upper = g_ascii_strup(q_cts, -1);
	g_autofree gchar *q_quote = g_strdup_printf("after=%s%%27", cts);

	{
		g_auto(ConfabListParams) params = {0};
		g_autoptr(GError) error = NULL;
		g_assert_true(
		    confab_list_params_parse(q_cts, CONFAB_PREFIX_SESSION, &params, &error));
		g_assert_no_error(error);
		g_assert_cmpstr(params.after, ==, cts);
	}
	{
		g_auto(ConfabListParams) params = {0};
		g_assert_true(
		    confab_list_params_parse(q_msg, CONFAB_PREFIX_MESSAGE, &params, NULL));
		g_assert_cmpstr(params.after, ==, msg);
		g_assert_cmpuint(params.limit, ==, 3);
	}
	/* a cursor of another kind */
	assert_refused(q_msg, CONFAB_PREFIX_SESSION, CONFAB_ERROR_INVALID_AFTER, "after");
	assert_refused(q_cts, CONFAB_PREFIX_MESSAGE, CONFAB_ERROR_INVALID_AFTER, "after");
	assert_refused(q_agt, CONFAB_PREFIX_SESSION, CONFAB_ERROR_INVALID_AFTER, "after");
	/* the wrong shape */
	assert_refused(q_short, CONFAB_PREFIX_SESSION, CONFAB_ERROR_INVALID_AFTER, "after");
	assert_refused(q_long, CONFAB_PREFIX_SESSION, CONFAB_ERROR_INVALID_AFTER, "after");
	assert_refused(q_quote, CONFAB_PREFIX_SESSION, CONFAB_ERROR_INVALID_AFTER, "after");
	assert_refused("after=", CONFAB_PREFIX_SESSION, CONFAB_ERROR_INVALID_AFTER, "after");
	assert_refused("after=cts_", CONFAB_PREFIX_SESSION, CONFAB_ERROR_INVALID_AFTER, "after");
	assert_refused("after=123", CONFAB_PREFIX_SESSION, CONFAB_ERROR_INVALID_AFTER, "after");
	assert_refused("after=cts_'%20OR%201=1--",
		       CONFAB_PREFIX_SESSION,
		       CONFAB_ERROR_INVALID_AFTER,
		       "after");
	/* upper-case "AFTER=" is another parameter: ignored; the id itself in
	 * upper case is not ours */
	{
		g_autofree gchar *up = g_ascii_strup(cts + 4, -1);
		g_autofree gchar *q = g_strdup_printf("after=cts_%s", up);
		assert_refused(q, CONFAB_PREFIX_SESSION, CONFAB_ERROR_INVALID_AFTER, "after");
	}
	{
		g_auto(ConfabListParams) params = {0};
		g_assert_true(
		    confab_list_params_parse(q_upper, CONFAB_PREFIX_SESSION, &params, NULL));
		g_assert_null(params.after);
	}
	/* an id that no longer exists has the right shape, so it is fine here */
	{
		g_auto(ConfabListParams) params = {0};
		g_autofree gchar *zeros = g_strnfill(CONFAB_ID_BODY_LEN, '0');
		g_autofree gchar *q = g_strdup_printf("after=cts_%s", zeros);
		g_assert_true(confab_list_params_parse(q, CONFAB_PREFIX_SESSION, &params, NULL));
	}
}

static void
test_model(void)
{
	{
		g_auto(ConfabListParams) params = {0};
		g_assert_true(confab_list_params_parse("model=agt_123&limit=5",
						       CONFAB_PREFIX_SESSION,
						       &params,
						       NULL));
		g_assert_cmpstr(params.model, ==, "agt_123");
	}
	{
		/* URL-decoded */
		g_auto(ConfabListParams) params = {0};
		g_assert_true(confab_list_params_parse("model=my%20agent%2Fx",
						       CONFAB_PREFIX_SESSION,
						       &params,
						       NULL));
		g_assert_cmpstr(params.model, ==, "my agent/x");
	}
	{
		/* empty means no filter */
		g_auto(ConfabListParams) params = {0};
		g_assert_true(
		    confab_list_params_parse("model=", CONFAB_PREFIX_SESSION, &params, NULL));
		g_assert_null(params.model);
	}
}

static void
test_everything(void)
{
	g_autoptr(ConfabIdGenerator) gen = confab_id_generator_new();
	g_autofree gchar *cts = confab_id_generator_next(gen, CONFAB_PREFIX_SESSION);
	g_autofree gchar *q =
	    g_strdup_printf("limit=100&order=asc&after=%s&model=agt_a&extra=1", cts);
	g_auto(ConfabListParams) params = {0};
	g_autoptr(GError) error = NULL;

	g_assert_true(confab_list_params_parse(q, CONFAB_PREFIX_SESSION, &params, &error));
	g_assert_no_error(error);
	g_assert_cmpuint(params.limit, ==, 100);
	g_assert_cmpint(params.order, ==, CONFAB_ORDER_ASC);
	g_assert_cmpstr(params.after, ==, cts);
	g_assert_cmpstr(params.model, ==, "agt_a");
}

static void
test_bad_encoding(void)
{
	g_auto(ConfabListParams) params = {0};
	g_autoptr(GError) error = NULL;

	/* a broken %-escape is a 400, not a crash nor a silent default */
	g_assert_false(
	    confab_list_params_parse("limit=%zz", CONFAB_PREFIX_SESSION, &params, &error));
	g_assert_nonnull(error);
	g_assert_true(error->domain == CONFAB_ERROR);
	g_assert_true(confab_error_is_client_error(error));
}

static void
test_first_error_wins_cleanly(void)
{
	/* a refusal leaves nothing allocated in the params */
	g_auto(ConfabListParams) params = {0};
	g_autoptr(GError) error = NULL;

	g_assert_false(
	    confab_list_params_parse("model=x&limit=0", CONFAB_PREFIX_SESSION, &params, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_LIMIT);
	g_assert_null(params.model);
	g_assert_null(params.after);
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/list-query/defaults", test_defaults);
	g_test_add_func("/confab/list-query/limit", test_limit);
	g_test_add_func("/confab/list-query/order", test_order);
	g_test_add_func("/confab/list-query/after", test_after);
	g_test_add_func("/confab/list-query/model", test_model);
	g_test_add_func("/confab/list-query/everything", test_everything);
	g_test_add_func("/confab/list-query/bad-encoding", test_bad_encoding);
	g_test_add_func("/confab/list-query/first-error-wins-cleanly",
			test_first_error_wins_cleanly);
	return g_test_run();
}
