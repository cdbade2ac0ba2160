/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-fuzz.h"
#include "upstream/confab-upstream-response-parser.h"

/* What an upstream answers, fed whole and then cut at a byte the input
 * chooses: both must give the same head, body, end and keep-alive. */

static void
on_head(guint status, const gchar *reason, const ConfabHttpFields *fields, gpointer user_data)
{
	GString *out = user_data;
	g_autofree gchar *type =
	    confab_http_fields_media_type(confab_http_fields_get(fields, "Content-Type"));

	g_string_append_printf(out, "head %u %s %s\n", status, reason, type != NULL ? type : "-");
	for (guint i = 0; i < confab_http_fields_get_size(fields); i++)
		g_string_append_printf(out,
				       "%s: %s\n",
				       confab_http_fields_get_name(fields, i),
				       confab_http_fields_get_value(fields, i));
}

static void
on_body(const gchar *data, gsize len, gpointer user_data)
{
	GString *out = user_data;
	g_assert(len > 0);
	g_string_append_len(out, data, len);
}

static void
parse(const guint8 *data, size_t size, size_t cut, GString *out)
{
	g_autoptr(ConfabUpstreamResponseParser) parser =
	    confab_upstream_response_parser_new(on_head, on_body, out);
	ConfabUpstreamParseStatus status = CONFAB_UPSTREAM_PARSE_MORE;
	size_t pieces[2] = {cut, size - cut};
	size_t pos = 0, used = 0;

	confab_upstream_response_parser_reset(parser, FALSE);
	for (guint i = 0; i < 2 && status == CONFAB_UPSTREAM_PARSE_MORE; i++) {
		g_autoptr(GError) error = NULL;
		/* a copy of exactly the piece: reading past it is caught */
		g_autofree gchar *piece = g_memdup2(data + pos, pieces[i]);
		gsize consumed = 0;
		status = confab_upstream_response_parser_feed(parser,
							      piece,
							      pieces[i],
							      &consumed,
							      &error);
		g_assert(consumed <= pieces[i]);
		g_assert((status == CONFAB_UPSTREAM_PARSE_ERROR) == (error != NULL));
		used += consumed;
		pos += pieces[i];
	}
	if (status == CONFAB_UPSTREAM_PARSE_MORE) {
		g_autoptr(GError) error = NULL;
		status = confab_upstream_response_parser_eof(parser, &error);
		g_assert((status == CONFAB_UPSTREAM_PARSE_ERROR) == (error != NULL));
	}
	/* an error may be found at a different byte; the rest may not */
	if (status == CONFAB_UPSTREAM_PARSE_ERROR) {
		g_string_append(out, "\nerror\n");
		return;
	}
	g_string_append_printf(out,
			       "\nend %d used %zu keep %d\n",
			       status,
			       used,
			       confab_upstream_response_parser_keep_alive(parser));
}

int
LLVMFuzzerTestOneInput(const guint8 *data, size_t size)
{
	g_autoptr(GString) whole = g_string_new(NULL);
	g_autoptr(GString) split = g_string_new(NULL);
	size_t cut;

	if (size == 0)
		return 0;
	cut = data[0] % size;
	parse(data + 1, size - 1, 0, whole);
	parse(data + 1, size - 1, MIN(cut, size - 1), split);
	if (!g_str_has_suffix(whole->str, "error\n") && !g_str_has_suffix(split->str, "error\n"))
		g_assert(g_string_equal(whole, split));
	return 0;
}
