/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "http/server/confab-http-request-parser.h"
#include "util/confab-error.h"

/* The strict request parser on its own: heads, bodies cut at every byte,
 * limits, and the verdict on what RFC 9112 forbids. The whole corpus of
 * framing cases runs against a real daemon in tests/integration. */

static const ConfabHttpRequestLimits limits = {1024, 16, 4096, 64};

typedef struct {
	ConfabHttpParseResult last;
	GError *error;
	GString *body;
	guint heads;
	guint bodies;
	gsize used;
} Run;

static void
run_clear(Run *run)
{
	g_clear_error(&run->error);
	if (run->body != NULL)
		g_string_free(run->body, TRUE);
}

/* Feeds @text in pieces of @step bytes (0: whole) until one request is
 * whole or refused. */
static void
feed(ConfabHttpRequestParser *parser, const gchar *text, gsize len, gsize step, Run *run)
{
	gsize pos = 0;

	run->body = g_string_new(NULL);
	while (TRUE) {
		gsize piece = step == 0 ? len - pos : MIN(step, len - pos);
		gsize used = 0;
		run->last =
		    confab_http_request_parser_feed(parser, text + pos, piece, &used, &run->error);
		pos += used;
		if (run->last == CONFAB_HTTP_PARSE_ERROR)
			break;
		if (run->last == CONFAB_HTTP_PARSE_HEAD) {
			run->heads++;
			continue;
		}
		if (run->last == CONFAB_HTTP_PARSE_BODY) {
			g_autoptr(GBytes) body = confab_http_request_parser_steal_body(parser);
			g_string_append_len(run->body,
					    g_bytes_get_data(body, NULL),
					    (gssize)g_bytes_get_size(body));
			run->bodies++;
			break;
		}
		if (pos == len)
			break;
	}
	run->used = pos;
}

static void
test_head_fields(void)
{
	static const gchar text[] = "GET /api/v1/conversations?limit=5&order=asc HTTP/1.1\r\n"
				    "Host: example.com:8080\r\n"
				    "Authorization:  Bearer nca_x \t\r\n"
				    "X-Empty:\r\n"
				    "\r\n";
	g_autoptr(ConfabHttpRequestParser) parser = confab_http_request_parser_new(&limits);
	const ConfabHttpRequestHead *head;
	Run run = {0};

	feed(parser, text, strlen(text), 0, &run);
	g_assert_no_error(run.error);
	/* without a body, the request is whole with its head */
	g_assert_cmpint(run.last, ==, CONFAB_HTTP_PARSE_BODY);
	g_assert_cmpuint(run.heads, ==, 1);
	g_assert_cmpuint(run.used, ==, strlen(text));
	head = confab_http_request_parser_get_head(parser);
	g_assert_cmpstr(head->method, ==, "GET");
	g_assert_cmpstr(head->path, ==, "/api/v1/conversations");
	g_assert_cmpstr(head->query, ==, "limit=5&order=asc");
	g_assert_cmpuint(head->version_minor, ==, 1);
	g_assert_true(head->keep_alive);
	g_assert_cmpint(head->framing, ==, CONFAB_HTTP_FRAMING_NONE);
	/* surrounding whitespace trimmed, inner kept; names any case */
	g_assert_cmpstr(confab_http_fields_get(head->fields, "authorization"), ==, "Bearer nca_x");
	g_assert_cmpstr(confab_http_fields_get(head->fields, "x-empty"), ==, "");
	run_clear(&run);
}

static void
test_keep_alive(void)
{
	const struct {
		const gchar *text;
		gboolean keep_alive;
	} cases[] = {
	    {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", TRUE},
	    {"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", FALSE},
	    {"GET / HTTP/1.1\r\nHost: h\r\nConnection: Keep-Alive, Close\r\n\r\n", FALSE},
	    {"GET / HTTP/1.0\r\n\r\n", FALSE},
	    {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", TRUE},
	    /* a later 1.x is served as 1.1 */
	    {"GET / HTTP/1.7\r\nHost: h\r\n\r\n", TRUE},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(ConfabHttpRequestParser) parser = confab_http_request_parser_new(&limits);
		Run run = {0};
		feed(parser, cases[i].text, strlen(cases[i].text), 0, &run);
		g_assert_no_error(run.error);
		g_assert_cmpint(confab_http_request_parser_get_head(parser)->keep_alive,
				==,
				cases[i].keep_alive);
		run_clear(&run);
	}
}

/* the same request, cut every possible way, reads the same */
static void
test_chunked_every_split(void)
{
	static const gchar text[] =
	    "POST /x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5;name=value\r\nhello\r\n"
	    "1\r\n,\r\n"
	    "6\r\n world\r\n"
	    "0\r\nTrailer: yes\r\n\r\n"
	    "GET /next HTTP/1.1\r\n";
	gsize request_len = strlen(text) - strlen("GET /next HTTP/1.1\r\n");

	for (gsize step = 1; step <= strlen(text); step++) {
		g_autoptr(ConfabHttpRequestParser) parser = confab_http_request_parser_new(&limits);
		Run run = {0};
		feed(parser, text, strlen(text), step, &run);
		g_assert_no_error(run.error);
		g_assert_cmpuint(run.heads, ==, 1);
		g_assert_cmpuint(run.bodies, ==, 1);
		g_assert_cmpstr(run.body->str, ==, "hello, world");
		/* it stops where the next request starts */
		g_assert_cmpuint(run.used, ==, request_len);
		run_clear(&run);
	}
}

static void
test_length_body_and_next(void)
{
	static const gchar text[] =
	    "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET";
	g_autoptr(ConfabHttpRequestParser) parser = confab_http_request_parser_new(&limits);
	Run run = {0};

	feed(parser, text, strlen(text), 0, &run);
	g_assert_no_error(run.error);
	g_assert_cmpstr(run.body->str, ==, "abc");
	g_assert_cmpuint(run.used, ==, strlen(text) - 3);
	run_clear(&run);

	/* ready for the next one after a reset */
	confab_http_request_parser_reset(parser);
	g_assert_false(confab_http_request_parser_started(parser));
	feed(parser, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", 27, 0, &run);
	g_assert_no_error(run.error);
	g_assert_cmpstr(confab_http_request_parser_get_head(parser)->method, ==, "GET");
	run_clear(&run);
}

static void
test_refusals(void)
{
	const struct {
		const gchar *text;
		ConfabErrorCode code;
	} cases[] = {
	    {"GET / HTTP/1.1\nHost: h\r\n\r\n", CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET / HTTP/1.1\r\nHost: h\rX\r\n\r\n", CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET / HTTP/1.1\r\nHost : h\r\n\r\n", CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET / HTTP/1.1\r\n\r\n", CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer a\r\n"
	     "authorization: Bearer b\r\n\r\n",
	     CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer a\r\n"
	     "Authorization: Bearer a\r\n\r\n",
	     CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01b\r\n\r\n", CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET / http/1.1\r\nHost: h\r\n\r\n", CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET / HTTP/2.0\r\nHost: h\r\n\r\n", CONFAB_ERROR_VERSION_NOT_SUPPORTED},
	    {"GET * HTTP/1.1\r\nHost: h\r\n\r\n", CONFAB_ERROR_MALFORMED_REQUEST},
	    {"GET x HTTP/1.1\r\nHost: h\r\n\r\n", CONFAB_ERROR_MALFORMED_REQUEST},
	    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
	     CONFAB_ERROR_MALFORMED_REQUEST},
	    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\nx",
	     CONFAB_ERROR_MALFORMED_REQUEST},
	    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: "
	     "chunked\r\n\r\n",
	     CONFAB_ERROR_MALFORMED_REQUEST},
	    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
	     CONFAB_ERROR_MALFORMED_REQUEST},
	    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	     CONFAB_ERROR_NOT_IMPLEMENTED},
	    {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
	     CONFAB_ERROR_MALFORMED_REQUEST},
	    {"POST / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n",
	     CONFAB_ERROR_EXPECTATION_FAILED},
	    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0x1\r\n",
	     CONFAB_ERROR_MALFORMED_REQUEST},
	    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1 \r\n",
	     CONFAB_ERROR_MALFORMED_REQUEST},
	    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy",
	     CONFAB_ERROR_MALFORMED_REQUEST},
	    /* a chunk line over the cap (64) */
	    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1;"
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
	     CONFAB_ERROR_MALFORMED_REQUEST},
	    /* bodies over the cap (4096), announced or chunked */
	    {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4097\r\n\r\n",
	     CONFAB_ERROR_REQUEST_TOO_LARGE},
	    {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1001\r\n",
	     CONFAB_ERROR_REQUEST_TOO_LARGE},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(ConfabHttpRequestParser) parser = confab_http_request_parser_new(&limits);
		Run run = {0};
		feed(parser, cases[i].text, strlen(cases[i].text), 0, &run);
		if (run.last != CONFAB_HTTP_PARSE_ERROR)
			g_error("case %u was not refused", i);
		g_assert_error(run.error, CONFAB_ERROR, (gint)cases[i].code);
		g_assert_true(g_utf8_validate(run.error->message, -1, NULL));
		run_clear(&run);
	}
}

static void
test_head_limits(void)
{
	g_autoptr(GString) text = g_string_new("GET / HTTP/1.1\r\nHost: h\r\n");
	g_autoptr(ConfabHttpRequestParser) parser = confab_http_request_parser_new(&limits);
	g_autoptr(ConfabHttpRequestParser) parser2 = confab_http_request_parser_new(&limits);
	Run run = {0};

	/* too many fields: 431 */
	for (guint i = 0; i < 20; i++)
		g_string_append_printf(text, "X-%u: y\r\n", i);
	g_string_append(text, "\r\n");
	feed(parser, text->str, text->len, 0, &run);
	g_assert_error(run.error, CONFAB_ERROR, CONFAB_ERROR_HEADER_TOO_LARGE);
	run_clear(&run);

	/* too many bytes: 431, before the head is whole */
	g_string_assign(text, "GET / HTTP/1.1\r\nHost: h\r\nX-Long: ");
	for (guint i = 0; i < 2000; i++)
		g_string_append_c(text, 'a');
	feed(parser2, text->str, text->len, 0, &run);
	g_assert_error(run.error, CONFAB_ERROR, CONFAB_ERROR_HEADER_TOO_LARGE);
	g_assert_cmpuint(run.used, <=, limits.max_head_bytes);
	run_clear(&run);
}

/* empty lines before a request are skipped, and do not count as its head */
static void
test_leading_empty_lines(void)
{
	static const gchar text[] = "\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n";
	g_autoptr(ConfabHttpRequestParser) parser = confab_http_request_parser_new(&limits);
	Run run = {0};

	feed(parser, text, 2, 0, &run);
	g_assert_cmpint(run.last, ==, CONFAB_HTTP_PARSE_MORE);
	g_assert_true(confab_http_request_parser_started(parser));
	run_clear(&run);
	confab_http_request_parser_reset(parser);
	feed(parser, text, strlen(text), 0, &run);
	g_assert_no_error(run.error);
	g_assert_cmpstr(confab_http_request_parser_get_head(parser)->method, ==, "GET");
	run_clear(&run);
}

int
main(int argc, char *argv[])
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/confab/http-request-parser/head-fields", test_head_fields);
	g_test_add_func("/confab/http-request-parser/keep-alive", test_keep_alive);
	g_test_add_func("/confab/http-request-parser/chunked-every-split",
			test_chunked_every_split);
	g_test_add_func("/confab/http-request-parser/length-body-and-next",
			test_length_body_and_next);
	g_test_add_func("/confab/http-request-parser/refusals", test_refusals);
	g_test_add_func("/confab/http-request-parser/head-limits", test_head_limits);
	g_test_add_func("/confab/http-request-parser/leading-empty-lines",
			test_leading_empty_lines);
	return g_test_run();
}
