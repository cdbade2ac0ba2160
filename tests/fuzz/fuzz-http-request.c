/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-fuzz.h"
#include "http/server/confab-http-request-parser.h"

/* What a client sends, fed whole and then cut at a byte the input chooses:
 * both must read the same requests (heads, bodies) and stop at the same
 * byte with the same verdict. */

static void
describe_head(const ConfabHttpRequestHead *head, GString *out)
{
	g_string_append_printf(out,
			       "head %s %s %s %u %d %" G_GUINT64_FORMAT " %d %d\n",
			       head->method,
			       head->path,
			       head->query != NULL ? head->query : "-",
			       head->version_minor,
			       head->framing,
			       head->content_length,
			       head->keep_alive,
			       head->expect_continue);
	for (guint i = 0; i < confab_http_fields_get_size(head->fields); i++)
		g_string_append_printf(out,
				       "  %s: %s\n",
				       confab_http_fields_get_name(head->fields, i),
				       confab_http_fields_get_value(head->fields, i));
}

static void
parse(const guint8 *data, size_t size, size_t cut, GString *out)
{
	ConfabHttpRequestLimits limits = {4096, 32, 65536, 256};
	g_autoptr(ConfabHttpRequestParser) parser = confab_http_request_parser_new(&limits);
	size_t pieces[2] = {cut, size - cut};
	size_t pos = 0;
	gboolean stopped = FALSE;

	for (guint i = 0; i < 2 && !stopped; i++) {
		/* a copy of exactly the piece: reading past it is caught */
		g_autofree gchar *piece = g_malloc(MAX(pieces[i], 1));
		gsize at = 0;

		if (pieces[i] > 0)
			memcpy(piece, data + pos, pieces[i]);
		while (!stopped) {
			g_autoptr(GError) error = NULL;
			gsize used = 0;
			ConfabHttpParseResult result =
			    confab_http_request_parser_feed(parser,
							    piece + at,
							    pieces[i] - at,
							    &used,
							    &error);
			g_assert(used <= pieces[i] - at);
			g_assert((result == CONFAB_HTTP_PARSE_ERROR) == (error != NULL));
			at += used;
			if (result == CONFAB_HTTP_PARSE_ERROR) {
				/* the message is for a client: valid UTF-8, never its bytes */
				g_assert(g_utf8_validate(error->message, -1, NULL));
				g_string_append_printf(out,
						       "error %d at %zu\n",
						       error->code,
						       pos + at);
				stopped = TRUE;
			} else if (result == CONFAB_HTTP_PARSE_HEAD) {
				describe_head(confab_http_request_parser_get_head(parser), out);
			} else if (result == CONFAB_HTTP_PARSE_BODY) {
				g_autoptr(GBytes) body =
				    confab_http_request_parser_steal_body(parser);
				g_assert(g_bytes_get_size(body) <= limits.max_body_bytes);
				g_string_append_printf(out, "body %zu\n", g_bytes_get_size(body));
				g_string_append_len(out,
						    g_bytes_get_data(body, NULL),
						    (gssize)g_bytes_get_size(body));
				confab_http_request_parser_reset(parser);
			} else if (at == pieces[i]) {
				break;
			}
		}
		pos += pieces[i];
	}
	if (!stopped)
		g_string_append_printf(out,
				       "more, started %d\n",
				       confab_http_request_parser_started(parser));
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
	if (!g_string_equal(whole, split))
		g_error("cut at %zu:\n--- whole\n%s\n--- split\n%s", cut, whole->str, split->str);
	return 0;
}
