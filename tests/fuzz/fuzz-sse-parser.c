/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-fuzz.h"
#include "upstream/confab-sse-parser.h"

/* An upstream's event stream, fed whole and then cut at a byte the input
 * chooses: both must give the same events. */

static void
collect(const gchar *event, const gchar *data, gsize data_len, gpointer user_data)
{
	GString *out = user_data;
	g_assert(strlen(data) <= data_len);
	g_string_append_printf(out,
			       "%s|%" G_GSIZE_FORMAT "|",
			       event != NULL ? event : "",
			       data_len);
	g_string_append_len(out, data, data_len);
	g_string_append_c(out, '\n');
}

static gboolean
parse(const guint8 *data, size_t size, size_t cut, GString *out)
{
	g_autoptr(ConfabSseParser) parser = confab_sse_parser_new(collect, out);
	g_autoptr(GError) error = NULL;

	confab_sse_parser_set_max_event_size(parser, 4096);
	if (!confab_sse_parser_feed(parser, (const gchar *)data, cut, &error) ||
	    !confab_sse_parser_feed(parser, (const gchar *)data + cut, size - cut, &error) ||
	    !confab_sse_parser_finish(parser, &error)) {
		g_assert(error != NULL);
		return FALSE;
	}
	return TRUE;
}

int
LLVMFuzzerTestOneInput(const guint8 *data, size_t size)
{
	g_autoptr(GString) whole = g_string_new(NULL);
	g_autoptr(GString) split = g_string_new(NULL);
	size_t cut;
	gboolean ok_whole;
	gboolean ok_split;

	if (size == 0)
		return 0;
	cut = data[0] % size;
	ok_whole = parse(data + 1, size - 1, 0, whole);
	ok_split = parse(data + 1, size - 1, MIN(cut, size - 1), split);
	g_assert(ok_whole == ok_split);
	if (ok_whole)
		g_assert(g_string_equal(whole, split));
	return 0;
}
