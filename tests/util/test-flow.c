/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "confab-test-helper.h"
#include "util/confab-flow.h"

static void
count(gpointer data)
{
	(*(guint *)data)++;
}

static gboolean
at_least_one(gpointer data)
{
	return *(guint *)data > 0;
}

/* Lets the main loop run what is ready, without blocking. */
static void
run_pending(void)
{
	while (g_main_context_iteration(NULL, FALSE))
		;
}

/* A waiter is called once the flow opens, from the main loop, never from
 * inside confab_flow_set_held(). */
static void
test_open(void)
{
	g_autoptr(ConfabFlow) flow = confab_flow_new();
	guint called = 0;

	g_assert_false(confab_flow_is_held(NULL));
	g_assert_false(confab_flow_is_held(flow));
	confab_flow_set_held(flow, TRUE);
	g_assert_true(confab_flow_is_held(flow));
	confab_flow_wait(flow, NULL, count, &called);
	run_pending();
	g_assert_cmpuint(called, ==, 0);
	confab_flow_set_held(flow, FALSE);
	g_assert_cmpuint(called, ==, 0);
	g_assert_true(confab_test_wait_until(at_least_one, &called, 5000));
	run_pending();
	g_assert_cmpuint(called, ==, 1);
	g_assert_cmpuint(confab_flow_get_holds(flow), ==, 1);
}

/* Held again before the dispatch: the waiter keeps waiting. */
static void
test_held_again(void)
{
	g_autoptr(ConfabFlow) flow = confab_flow_new();
	guint called = 0;

	confab_flow_set_held(flow, TRUE);
	confab_flow_wait(flow, NULL, count, &called);
	confab_flow_set_held(flow, FALSE);
	confab_flow_set_held(flow, TRUE);
	run_pending();
	g_assert_cmpuint(called, ==, 0);
	confab_flow_set_held(flow, FALSE);
	g_assert_true(confab_test_wait_until(at_least_one, &called, 5000));
	g_assert_cmpuint(confab_flow_get_holds(flow), ==, 2);
}

/* A cancelled wait is called although the flow stays held; a forgotten
 * one never is. */
static void
test_cancel(void)
{
	g_autoptr(ConfabFlow) flow = confab_flow_new();
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	guint cancelled = 0, forgotten = 0;
	guint id;

	confab_flow_set_held(flow, TRUE);
	confab_flow_wait(flow, cancellable, count, &cancelled);
	id = confab_flow_wait(flow, NULL, count, &forgotten);
	g_cancellable_cancel(cancellable);
	g_assert_cmpuint(cancelled, ==, 0);
	g_assert_true(confab_test_wait_until(at_least_one, &cancelled, 5000));
	confab_flow_clear_wait(flow, &id);
	g_assert_cmpuint(id, ==, 0);
	confab_flow_set_held(flow, FALSE);
	run_pending();
	g_assert_cmpuint(forgotten, ==, 0);
	g_assert_true(confab_flow_is_held(flow) == FALSE);
}

/* A closed flow is open for good. */
static void
test_close(void)
{
	g_autoptr(ConfabFlow) flow = confab_flow_new();
	guint called = 0;

	confab_flow_set_held(flow, TRUE);
	confab_flow_wait(flow, NULL, count, &called);
	confab_flow_close(flow);
	g_assert_false(confab_flow_is_held(flow));
	confab_flow_set_held(flow, TRUE);
	g_assert_false(confab_flow_is_held(flow));
	g_assert_true(confab_test_wait_until(at_least_one, &called, 5000));
}

int
main(int argc, char **argv)
{
	gint ret;

	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/flow/open", test_open);
	g_test_add_func("/confab/flow/held-again", test_held_again);
	g_test_add_func("/confab/flow/cancel", test_cancel);
	g_test_add_func("/confab/flow/close", test_close);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
