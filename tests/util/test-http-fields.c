/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "util/confab-http-fields.h"

/* The header-field helpers both HTTP sides share: the list, media types and
 * HTTP-dates. */

static void
test_fields(void)
{
	g_autoptr(ConfabHttpFields) fields = confab_http_fields_new();

	confab_http_fields_append(fields, "Content-Type", 12, "text/plain", 10);
	confab_http_fields_append(fields, "connection", 10, "keep-alive, Upgrade", 19);
	confab_http_fields_append(fields, "Connection", 10, "close", 5);
	g_assert_cmpuint(confab_http_fields_get_size(fields), ==, 3);
	g_assert_cmpstr(confab_http_fields_get(fields, "CONTENT-TYPE"), ==, "text/plain");
	g_assert_cmpstr(confab_http_fields_get(fields, "Connection"), ==, "keep-alive, Upgrade");
	g_assert_cmpuint(confab_http_fields_count(fields, "connection"), ==, 2);
	g_assert_true(confab_http_fields_has_token(fields, "Connection", "upgrade"));
	g_assert_true(confab_http_fields_has_token(fields, "Connection", "CLOSE"));
	g_assert_false(confab_http_fields_has_token(fields, "Connection", "keep"));
	g_assert_null(confab_http_fields_get(fields, "Content-Length"));
	confab_http_fields_clear(fields);
	g_assert_cmpuint(confab_http_fields_get_size(fields), ==, 0);
}

static void
test_media_type(void)
{
	struct {
		const gchar *value;
		const gchar *type;
	} cases[] = {
	    {"text/event-stream", "text/event-stream"},
	    {"Text/Event-Stream; charset=utf-8", "text/event-stream"},
	    {"  application/json ;charset=UTF-8", "application/json"},
	    {"application/vnd.api+json", "application/vnd.api+json"},
	    {"application/json\t", "application/json"},
	    {"", NULL},
	    {"text", NULL},
	    {"text/", NULL},
	    {"/plain", NULL},
	    {"text/plain garbage", NULL},
	    {"text /plain", NULL},
	    {"text/pl\"ain", NULL},
	    {"text/event-streamx", "text/event-streamx"},
	};

	g_assert_null(confab_http_fields_media_type(NULL));
	g_assert_false(confab_http_fields_media_type_is(NULL, "text/plain"));
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *type = confab_http_fields_media_type(cases[i].value);
		g_assert_cmpstr(type, ==, cases[i].type);
		if (cases[i].type != NULL)
			g_assert_true(
			    confab_http_fields_media_type_is(cases[i].value, cases[i].type));
	}
	g_assert_false(confab_http_fields_media_type_is("text/event-streamx", "text/event-stream"));
	g_assert_false(confab_http_fields_media_type_is("text/event", "text/event-stream"));
	g_assert_true(confab_http_fields_media_type_is("TEXT/EVENT-STREAM", "text/event-stream"));
}

static void
assert_date(const gchar *value, const gchar *iso)
{
	g_autoptr(GDateTime) when = confab_http_fields_parse_date(value);
	g_autofree gchar *text = NULL;

	if (iso == NULL) {
		if (when != NULL)
			g_error("'%s' parsed as a date", value);
		return;
	}
	if (when == NULL)
		g_error("'%s' not parsed", value);
	text = g_date_time_format(when, "%Y-%m-%dT%H:%M:%SZ");
	g_assert_cmpstr(text, ==, iso);
	g_assert_cmpint(g_date_time_get_utc_offset(when), ==, 0);
}

static void
test_dates(void)
{
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	gint year = g_date_time_get_year(now);
	g_autofree gchar *near = NULL;
	g_autofree gchar *near_iso = NULL;
	g_autofree gchar *far = NULL;
	g_autofree gchar *far_iso = NULL;

	/* the three forms of RFC 9110 section 5.6.7, the same instant */
	assert_date("Sun, 06 Nov 1994 08:49:37 GMT", "1994-11-06T08:49:37Z");
	assert_date("Sunday, 06-Nov-94 08:49:37 GMT", "1994-11-06T08:49:37Z");
	assert_date("Sun Nov  6 08:49:37 1994", "1994-11-06T08:49:37Z");
	assert_date("Sun Nov 16 08:49:37 1994", "1994-11-16T08:49:37Z");
	assert_date("  Thu, 01 Jan 2037 00:00:00 GMT ", "2037-01-01T00:00:00Z");
	assert_date("sun, 06 nov 1994 08:49:37 GMT", "1994-11-06T08:49:37Z");
	assert_date("Sat, 31 Dec 2016 23:59:60 GMT", "2016-12-31T23:59:59Z");

	/* a two-digit year more than 50 years ahead is in the past century */
	near = g_strdup_printf("Monday, 01-Jan-%02d 00:00:00 GMT", (year + 10) % 100);
	near_iso = g_strdup_printf("%04d-01-01T00:00:00Z", year + 10);
	assert_date(near, near_iso);
	far = g_strdup_printf("Monday, 01-Jan-%02d 00:00:00 GMT", (year + 60) % 100);
	far_iso = g_strdup_printf("%04d-01-01T00:00:00Z", year + 60 - 100);
	assert_date(far, far_iso);

	/* not dates */
	assert_date("", NULL);
	assert_date("120", NULL);
	assert_date("Sun, 06 Nov 1994 08:49:37 UTC", NULL);
	assert_date("Sun, 06 Nov 1994 08:49:37 GMT trailing", NULL);
	assert_date("Sun, 6 Nov 1994 08:49:37 GMT", NULL);
	assert_date("Sun, 31 Feb 1994 08:49:37 GMT", NULL);
	assert_date("Sun, 06 Foo 1994 08:49:37 GMT", NULL);
	assert_date("Sun, 06 Nov 1994 24:00:00 GMT", NULL);
	assert_date("Sun, 06 Nov 1994 08:61:00 GMT", NULL);
	assert_date("Sun, 06 Nov 0000 08:49:37 GMT", NULL);
	assert_date("Sunday, 06-Nov-1994 08:49:37 GMT", NULL);
	assert_date("Sun Nov 6 08:49:37 1994", NULL);
	assert_date("Sun, 06 Nov 1994 08:49", NULL);
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/http-fields/fields", test_fields);
	g_test_add_func("/confab/http-fields/media-type", test_media_type);
	g_test_add_func("/confab/http-fields/dates", test_dates);
	return g_test_run();
}
