/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "http/confab-http-response.h"

/* The x-ratelimit-reset-* durations, in OpenAI's (Go's) notation. */
static void
test_format_duration(void)
{
	static const struct {
		gint64 ms;
		const gchar *text;
	} cases[] = {
	    {-5, "0ms"},
	    {0, "0ms"},
	    {20, "20ms"},
	    {999, "999ms"},
	    {1000, "1s"},
	    {1001, "1.001s"},
	    {1230, "1.23s"},
	    {1500, "1.5s"},
	    {59999, "59.999s"},
	    {60000, "1m0s"},
	    {61010, "1m1.01s"},
	    {360000, "6m0s"},
	    {3600000, "1h0m0s"},
	    {3723400, "1h2m3.4s"},
	    {G_GINT64_CONSTANT(86400000) * 400, "9600h0m0s"},
	    {G_MAXINT64, "2562047788015h12m55.807s"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *text = confab_http_response_format_duration(cases[i].ms);
		g_assert_cmpstr(text, ==, cases[i].text);
	}
}

int
main(int argc, char *argv[])
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/http/response/format-duration", test_format_duration);
	return g_test_run();
}
