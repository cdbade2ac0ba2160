/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "upstream/confab-upstream-response-parser.h"

/* The upstream client's response parser: framing, limits, splits. */

typedef struct {
	guint heads;
	guint status;
	gchar *reason;
	gchar *content_type;
	gchar *fields; /* "name: value\n" each, as received */
	GString *body;
	gboolean stop_in_body;
	ConfabUpstreamResponseParser *parser;
} Seen;

static void
on_head(guint status, const gchar *reason, const ConfabHttpFields *fields, gpointer user_data)
{
	Seen *seen = user_data;
	GString *all = g_string_new(NULL);

	seen->heads++;
	seen->status = status;
	g_free(seen->reason);
	seen->reason = g_strdup(reason);
	g_free(seen->content_type);
	seen->content_type =
	    confab_http_fields_media_type(confab_http_fields_get(fields, "Content-Type"));
	for (guint i = 0; i < confab_http_fields_get_size(fields); i++)
		g_string_append_printf(all,
				       "%s: %s\n",
				       confab_http_fields_get_name(fields, i),
				       confab_http_fields_get_value(fields, i));
	g_free(seen->fields);
	seen->fields = g_string_free(all, FALSE);
}

static void
on_body(const gchar *data, gsize len, gpointer user_data)
{
	Seen *seen = user_data;
	g_assert_cmpuint(len, >, 0);
	g_string_append_len(seen->body, data, len);
	if (seen->stop_in_body)
		confab_upstream_response_parser_stop(seen->parser);
}

static Seen *
seen_new(void)
{
	Seen *seen = g_new0(Seen, 1);
	seen->body = g_string_new(NULL);
	seen->parser = confab_upstream_response_parser_new(on_head, on_body, seen);
	confab_upstream_response_parser_reset(seen->parser, FALSE);
	return seen;
}

static void
seen_free(Seen *seen)
{
	g_object_unref(seen->parser);
	g_string_free(seen->body, TRUE);
	g_free(seen->reason);
	g_free(seen->content_type);
	g_free(seen->fields);
	g_free(seen);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Seen, seen_free)

/* Feeds @text in pieces of @step bytes (0: whole); returns the last status
 * and how many bytes were consumed in all. */
static ConfabUpstreamParseStatus
feed(Seen *seen, const gchar *text, gsize len, gsize step, gsize *used, GError **error)
{
	ConfabUpstreamParseStatus status = CONFAB_UPSTREAM_PARSE_MORE;
	gsize pos = 0;

	*used = 0;
	if (step == 0)
		step = len;
	while (pos < len) {
		gsize n = MIN(step, len - pos);
		gsize consumed = 0;
		/* no NUL after the piece: the parser must not look for one */
		g_autofree gchar *piece = g_memdup2(text + pos, n);
		status =
		    confab_upstream_response_parser_feed(seen->parser, piece, n, &consumed, error);
		*used += consumed;
		if (status != CONFAB_UPSTREAM_PARSE_MORE)
			break;
		g_assert_cmpuint(consumed, ==, n);
		pos += n;
	}
	return status;
}

static const gchar chunked[] = "HTTP/1.1 200 OK\r\n"
			       "Content-Type: text/event-stream\r\n"
			       "Transfer-Encoding: chunked\r\n"
			       "\r\n"
			       "6\r\ndata: \r\n"
			       "1A;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n"
			       "2\r\n\n\n\r\n"
			       "0\r\nX-Trailer: yes\r\n\r\n";

static void
test_chunked_any_split(void)
{
	for (gsize step = 0; step <= 9; step++) {
		g_autoptr(Seen) seen = seen_new();
		g_autoptr(GError) error = NULL;
		gsize used;

		g_assert_cmpint(feed(seen, chunked, strlen(chunked), step, &used, &error),
				==,
				CONFAB_UPSTREAM_PARSE_DONE);
		g_assert_no_error(error);
		g_assert_cmpuint(used, ==, strlen(chunked));
		g_assert_cmpuint(seen->heads, ==, 1);
		g_assert_cmpuint(seen->status, ==, 200);
		g_assert_cmpstr(seen->reason, ==, "OK");
		g_assert_cmpstr(seen->content_type, ==, "text/event-stream");
		g_assert_cmpstr(seen->body->str, ==, "data: abcdefghijklmnopqrstuvwxyz\n\n");
		g_assert_true(confab_upstream_response_parser_keep_alive(seen->parser));
	}
}

static void
test_content_length_and_leftover(void)
{
	static const gchar text[] = "HTTP/1.1 429 Too Many Requests\r\n"
				    "Retry-After: 1\r\nContent-Length: 5\r\n\r\n"
				    "helloHTTP/1.1 200 OK\r\n";
	g_autoptr(Seen) seen = seen_new();
	g_autoptr(GError) error = NULL;
	gsize used;

	g_assert_cmpint(feed(seen, text, strlen(text), 0, &used, &error),
			==,
			CONFAB_UPSTREAM_PARSE_DONE);
	g_assert_no_error(error);
	/* what follows the body is not this response's */
	g_assert_cmpuint(used, ==, strlen(text) - strlen("HTTP/1.1 200 OK\r\n"));
	g_assert_cmpuint(seen->status, ==, 429);
	g_assert_cmpstr(seen->body->str, ==, "hello");

	/* the next response on the same connection */
	confab_upstream_response_parser_reset(seen->parser, FALSE);
	g_string_truncate(seen->body, 0);
	g_assert_cmpint(feed(seen,
			     "HTTP/1.1 204 No Content\r\n\r\n",
			     strlen("HTTP/1.1 204 No Content\r\n\r\n"),
			     3,
			     &used,
			     &error),
			==,
			CONFAB_UPSTREAM_PARSE_DONE);
	g_assert_cmpuint(seen->status, ==, 204);
	g_assert_cmpuint(seen->body->len, ==, 0);
	g_assert_cmpuint(seen->heads, ==, 2);
}

static void
test_interim_then_final(void)
{
	static const gchar text[] = "HTTP/1.1 100 Continue\r\n\r\n"
				    "HTTP/1.1 200 OK\nContent-Length: 2\n\nok";
	g_autoptr(Seen) seen = seen_new();
	g_autoptr(GError) error = NULL;
	gsize used;

	g_assert_cmpint(feed(seen, text, strlen(text), 1, &used, &error),
			==,
			CONFAB_UPSTREAM_PARSE_DONE);
	g_assert_no_error(error);
	g_assert_cmpuint(seen->heads, ==, 1);
	g_assert_cmpuint(seen->status, ==, 200);
	g_assert_cmpstr(seen->body->str, ==, "ok");
}

static void
test_until_close(void)
{
	static const gchar text[] = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{}";
	g_autoptr(Seen) seen = seen_new();
	g_autoptr(GError) error = NULL;
	gsize used;

	g_assert_cmpint(feed(seen, text, strlen(text), 0, &used, &error),
			==,
			CONFAB_UPSTREAM_PARSE_MORE);
	g_assert_cmpint(confab_upstream_response_parser_eof(seen->parser, &error),
			==,
			CONFAB_UPSTREAM_PARSE_DONE);
	g_assert_no_error(error);
	g_assert_cmpstr(seen->body->str, ==, "{}");
	g_assert_false(confab_upstream_response_parser_keep_alive(seen->parser));
}

static void
test_connection_close(void)
{
	static const gchar text[] =
	    "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
	g_autoptr(Seen) seen = seen_new();
	gsize used;

	g_assert_cmpint(feed(seen, text, strlen(text), 0, &used, NULL),
			==,
			CONFAB_UPSTREAM_PARSE_DONE);
	g_assert_false(confab_upstream_response_parser_keep_alive(seen->parser));
}

static void
test_cut_short(void)
{
	g_autoptr(Seen) seen = seen_new();
	g_autoptr(Seen) empty = seen_new();
	g_autoptr(GError) error = NULL;
	gsize used;

	g_assert_cmpint(confab_upstream_response_parser_eof(empty->parser, &error),
			==,
			CONFAB_UPSTREAM_PARSE_ERROR);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED);
	g_assert_false(confab_upstream_response_parser_started(empty->parser));
	g_clear_error(&error);

	g_assert_cmpint(feed(seen, chunked, 80, 0, &used, &error), ==, CONFAB_UPSTREAM_PARSE_MORE);
	g_assert_true(confab_upstream_response_parser_started(seen->parser));
	g_assert_cmpint(confab_upstream_response_parser_eof(seen->parser, &error),
			==,
			CONFAB_UPSTREAM_PARSE_ERROR);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT);
}

static void
test_malformed(void)
{
	const gchar *cases[] = {
	    "NOT HTTP\r\n\r\n",
	    "HTTP/1.1 abc OK\r\n\r\n",
	    "HTTP/1.1 101 Switching Protocols\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n",
	    /* the status line */
	    "HTTP/2 200 OK\r\n\r\n",
	    "HTTP/1.1  200 OK\r\n\r\n",
	    "HTTP/1.1 20 OK\r\n\r\n",
	    "HTTP/1.1 2000 OK\r\n\r\n",
	    "HTTP/1.1 099 Low\r\n\r\n",
	    "http/1.1 200 OK\r\n\r\n",
	    "HTTP/1.1 200 O\x01K\r\n\r\n",
	    /* field lines */
	    "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok",
	    "HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
	    "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nX-Bad: a\x7f\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nX-Bad: a\rb\r\n\r\n",
	    "HTTP/1.1 200 OK\r\n folded: before any field\r\n\r\n",
	    /* framing */
	    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokk",
	    "HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nokk",
	    "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok",
	    "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
	    "HTTP/1.1 200 OK\r\nContent-Length: 0x2\r\n\r\nok",
	    "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nok",
	    "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\nok",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\n",
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(Seen) seen = seen_new();
		g_autoptr(GError) error = NULL;
		gsize used;
		g_assert_cmpint(feed(seen, cases[i], strlen(cases[i]), 0, &used, &error),
				==,
				CONFAB_UPSTREAM_PARSE_ERROR);
		g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
	}
}

/* What real upstreams send and RFC 9112 lets a client take. */
static void
test_lenient(void)
{
	struct {
		const gchar *text;
		guint status;
		const gchar *reason;
		const gchar *fields;
		const gchar *body;
		gboolean keep_alive;
	} cases[] = {
	    /* bare LF line ends, no reason phrase */
	    {"HTTP/1.1 200\nContent-Length: 2\n\nok", 200, "", "Content-Length: 2\n", "ok", TRUE},
	    {"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n",
	     200,
	     "",
	     "Content-Length: 0\n",
	     "",
	     TRUE},
	    /* obs-fold: joined by one space */
	    {"HTTP/1.1 503 Busy\r\nX-Note: one\r\n \t two\r\n\tthree\r\n"
	     "Content-Length: 1\r\n\r\nx",
	     503,
	     "Busy",
	     "X-Note: one two three\nContent-Length: 1\n",
	     "x",
	     TRUE},
	    /* a repeated Content-Length of the same number */
	    {"HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nok",
	     200,
	     "OK",
	     "Content-Length: 2, 2\nContent-Length: 2\n",
	     "ok",
	     TRUE},
	    /* chunked wins over Content-Length; the connection is not reused */
	    {"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: Chunked\r\n\r\n"
	     "2\r\nok\r\n0\r\n\r\n",
	     200,
	     "OK",
	     "Content-Length: 100\nTransfer-Encoding: Chunked\n",
	     "ok",
	     FALSE},
	    /* HTTP/1.0 keeps the connection only when asked */
	    {"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok",
	     200,
	     "OK",
	     "Connection: Keep-Alive\nContent-Length: 2\n",
	     "ok",
	     TRUE},
	    {"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
	     200,
	     "OK",
	     "Content-Length: 2\n",
	     "ok",
	     FALSE},
	    /* obs-text in a value and a reason; an empty value; leading blank lines */
	    {"\r\n\r\nHTTP/1.1 404 Nicht gefunden \xc3\xa4\r\nX-Empty:\r\n"
	     "X-Text: caf\xc3\xa9\r\nContent-Length: 0\r\n\r\n",
	     404,
	     "Nicht gefunden \xc3\xa4",
	     "X-Empty: \nX-Text: caf\xc3\xa9\nContent-Length: 0\n",
	     "",
	     TRUE},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		for (gsize step = 0; step <= 3; step++) {
			g_autoptr(Seen) seen = seen_new();
			g_autoptr(GError) error = NULL;
			gsize used;

			g_assert_cmpint(
			    feed(seen, cases[i].text, strlen(cases[i].text), step, &used, &error),
			    ==,
			    CONFAB_UPSTREAM_PARSE_DONE);
			g_assert_no_error(error);
			g_assert_cmpuint(used, ==, strlen(cases[i].text));
			g_assert_cmpuint(seen->status, ==, cases[i].status);
			g_assert_cmpstr(seen->reason, ==, cases[i].reason);
			g_assert_cmpstr(seen->fields, ==, cases[i].fields);
			g_assert_cmpstr(seen->body->str, ==, cases[i].body);
			g_assert_cmpint(confab_upstream_response_parser_keep_alive(seen->parser),
					==,
					cases[i].keep_alive);
		}
	}
}

/* A NUL anywhere in the head is refused, never read as an end. */
static void
test_nul_in_head(void)
{
	static const gchar text[] = "HTTP/1.1 200 OK\r\nX-A: a\0b\r\nContent-Length: 0\r\n\r\n";
	g_autoptr(Seen) seen = seen_new();
	g_autoptr(GError) error = NULL;
	gsize used;

	g_assert_cmpint(feed(seen, text, sizeof(text) - 1, 0, &used, &error),
			==,
			CONFAB_UPSTREAM_PARSE_ERROR);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
	g_assert_cmpuint(seen->heads, ==, 0);
}

static void
test_too_many_fields(void)
{
	g_autoptr(Seen) seen = seen_new();
	g_autoptr(GString) text = g_string_new("HTTP/1.1 200 OK\r\n");
	g_autoptr(GError) error = NULL;
	gsize used;

	/* small, but too many */
	for (guint i = 0; i < 300; i++)
		g_string_append_printf(text, "X-%u: v\r\n", i);
	g_string_append(text, "Content-Length: 0\r\n\r\n");
	g_assert_cmpuint(text->len, <, 64 * 1024);
	g_assert_cmpint(feed(seen, text->str, text->len, 0, &used, &error),
			==,
			CONFAB_UPSTREAM_PARSE_ERROR);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
}

static void
test_limits(void)
{
	g_autoptr(Seen) seen = seen_new();
	g_autoptr(Seen) trailer = seen_new();
	g_autoptr(GString) text = g_string_new("HTTP/1.1 200 OK\r\n");
	g_autoptr(GError) error = NULL;
	gsize used;

	/* a head that never ends is refused at 64 KiB, not buffered on */
	while (text->len < 80 * 1024)
		g_string_append(text, "X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
	g_assert_cmpint(feed(seen, text->str, text->len, 4096, &used, &error),
			==,
			CONFAB_UPSTREAM_PARSE_ERROR);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
	g_assert_cmpuint(used, <=, 64 * 1024);
	g_clear_error(&error);

	g_string_assign(text, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
	while (text->len < 80 * 1024)
		g_string_append(text, "X-Trailer: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
	g_assert_cmpint(feed(trailer, text->str, text->len, 0, &used, &error),
			==,
			CONFAB_UPSTREAM_PARSE_ERROR);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
}

static void
test_stop_from_callback(void)
{
	g_autoptr(Seen) seen = seen_new();
	gsize used;

	seen->stop_in_body = TRUE;
	g_assert_cmpint(feed(seen, chunked, strlen(chunked), 0, &used, NULL),
			==,
			CONFAB_UPSTREAM_PARSE_STOPPED);
	g_assert_cmpstr(seen->body->str, ==, "data: ");
	g_assert_cmpuint(used, <, strlen(chunked));
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/upstream-response-parser/chunked-any-split",
			test_chunked_any_split);
	g_test_add_func("/confab/upstream-response-parser/content-length-and-leftover",
			test_content_length_and_leftover);
	g_test_add_func("/confab/upstream-response-parser/interim-then-final",
			test_interim_then_final);
	g_test_add_func("/confab/upstream-response-parser/until-close", test_until_close);
	g_test_add_func("/confab/upstream-response-parser/connection-close", test_connection_close);
	g_test_add_func("/confab/upstream-response-parser/cut-short", test_cut_short);
	g_test_add_func("/confab/upstream-response-parser/malformed", test_malformed);
	g_test_add_func("/confab/upstream-response-parser/limits", test_limits);
	g_test_add_func("/confab/upstream-response-parser/lenient", test_lenient);
	g_test_add_func("/confab/upstream-response-parser/nul-in-head", test_nul_in_head);
	g_test_add_func("/confab/upstream-response-parser/too-many-fields", test_too_many_fields);
	g_test_add_func("/confab/upstream-response-parser/stop-from-callback",
			test_stop_from_callback);
	return g_test_run();
}
