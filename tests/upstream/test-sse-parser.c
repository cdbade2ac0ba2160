/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "upstream/confab-sse-parser.h"
#include "util/confab-error.h"

/* The text/event-stream parser: the same events however the bytes are cut. */

static void
on_event(const gchar *event, const gchar *data, gsize data_len, gpointer user_data)
{
	GString *transcript = user_data;

	/* data is NUL-terminated at data_len */
	g_assert_cmpint(data[data_len], ==, '\0');
	g_string_append_printf(transcript,
			       "[%s|%" G_GSIZE_FORMAT "|",
			       event != NULL ? event : "(default)",
			       data_len);
	g_string_append_len(transcript, data, data_len);
	g_string_append(transcript, "]");
}

typedef struct {
	gchar *transcript;
	gsize transcript_len;
	gboolean ok;
	gint error_code;
} Outcome;

static void
outcome_clear(Outcome *o)
{
	g_free(o->transcript);
}

/* Feeds @input cut at the sorted offsets @cuts, then finishes. */
static void
run_cuts(const gchar *input,
	 gsize len,
	 const gsize *cuts,
	 guint n_cuts,
	 gsize max_event,
	 gboolean finish,
	 Outcome *out)
{
	GString *transcript = g_string_new(NULL);
	g_autoptr(ConfabSseParser) parser = confab_sse_parser_new(on_event, transcript);
	g_autoptr(GError) error = NULL;
	gsize pos = 0;
	gboolean ok = TRUE;

	if (max_event > 0)
		confab_sse_parser_set_max_event_size(parser, max_event);
	for (guint i = 0; i <= n_cuts && ok; i++) {
		gsize end = i < n_cuts ? cuts[i] : len;
		ok = confab_sse_parser_feed(parser, input + pos, end - pos, &error);
		pos = end;
	}
	if (ok && finish)
		ok = confab_sse_parser_finish(parser, &error);
	out->ok = ok;
	out->error_code = ok ? -1 : error->code;
	if (!ok)
		g_assert_true(error->domain == CONFAB_ERROR);
	out->transcript_len = transcript->len;
	out->transcript = g_string_free(transcript, FALSE);
}

static void
run_whole(const gchar *input, gsize len, gsize max_event, Outcome *out)
{
	run_cuts(input, len, NULL, 0, max_event, TRUE, out);
}

static void
assert_same(const Outcome *a, const Outcome *b, const gchar *what)
{
	if (a->ok != b->ok || a->error_code != b->error_code ||
	    a->transcript_len != b->transcript_len ||
	    memcmp(a->transcript, b->transcript, a->transcript_len) != 0) {
		g_autofree gchar *ea = g_strescape(a->transcript, NULL);
		g_autofree gchar *eb = g_strescape(b->transcript, NULL);
		g_error("%s: outcomes differ:\n  whole: ok=%d %s\n  split: ok=%d %s",
			what,
			a->ok,
			ea,
			b->ok,
			eb);
	}
}

/* Every way to cut @input in two and three pieces, and byte by byte, gives
 * the outcome of feeding it whole, which must be @expected (if not NULL). */
static void
assert_split_invariant(const gchar *input, gsize len, gsize max_event, const gchar *expected)
{
	Outcome whole = {0};

	run_whole(input, len, max_event, &whole);
	if (expected != NULL) {
		if (!whole.ok)
			g_error("stream refused whole: %s", input);
		if (g_strcmp0(whole.transcript, expected) != 0) {
			g_autofree gchar *e1 = g_strescape(whole.transcript, NULL);
			g_autofree gchar *e2 = g_strescape(expected, NULL);
			g_error("events:\n  got      %s\n  expected %s", e1, e2);
		}
	}
	for (gsize i = 0; i <= len; i++) {
		Outcome split = {0};
		gchar what[64];
		run_cuts(input, len, &i, 1, max_event, TRUE, &split);
		g_snprintf(what, sizeof(what), "cut at %" G_GSIZE_FORMAT, i);
		assert_same(&whole, &split, what);
		outcome_clear(&split);
	}
	if (len <= 200) {
		for (gsize i = 0; i <= len; i++) {
			for (gsize j = i; j <= len; j++) {
				gsize cuts[2] = {i, j};
				Outcome split = {0};
				gchar what[64];
				run_cuts(input, len, cuts, 2, max_event, TRUE, &split);
				g_snprintf(what,
					   sizeof(what),
					   "cuts at %" G_GSIZE_FORMAT " and %" G_GSIZE_FORMAT,
					   i,
					   j);
				assert_same(&whole, &split, what);
				outcome_clear(&split);
			}
		}
	}
	{
		g_autofree gsize *cuts = g_new(gsize, len + 1);
		Outcome split = {0};
		for (gsize i = 0; i < len; i++)
			cuts[i] = i + 1;
		run_cuts(input, len, cuts, len, max_event, TRUE, &split);
		assert_same(&whole, &split, "byte by byte");
		outcome_clear(&split);
	}
	outcome_clear(&whole);
}

#define CHECK(input, expected) assert_split_invariant(input, strlen(input), 0, expected)

static void
test_basic(void)
{
	CHECK("data: hello\n\n", "[(default)|5|hello]");
	CHECK("data: a\n\ndata: b\n\n", "[(default)|1|a][(default)|1|b]");
	CHECK("data: {\"a\":1}\n\ndata: [DONE]\n\n", "[(default)|7|{\"a\":1}][(default)|6|[DONE]]");
	/* a colon in the value is data */
	CHECK("data: a:b: c\n\n", "[(default)|6|a:b: c]");
	CHECK("", "");
	CHECK("\n\n\n", "");
}

static void
test_rich_stream_every_split(void)
{
	const gchar *stream = "\xef\xbb\xbf"
			      ": keep-alive\r\n"
			      "event: delta\r\n"
			      "data: one\r\n"
			      "data:two\r"
			      "data:  three\n"
			      "\r\n"
			      "id: 7\n"
			      "retry: 100\n"
			      "data\n"
			      "\n"
			      "event: ping\n"
			      "\r"
			      "data: h\xc3\xa9 \xf0\x9f\x8c\x8d\r"
			      "\r"
			      "data: [DONE]";
	CHECK(stream,
	      "[delta|14|one\ntwo\n three]"
	      "[(default)|0|]"
	      "[(default)|8|h\xc3\xa9 \xf0\x9f\x8c\x8d]"
	      "[(default)|6|[DONE]]");
}

static void
test_line_endings(void)
{
	CHECK("data: a\r\n\r\n", "[(default)|1|a]");
	CHECK("data: a\r\r", "[(default)|1|a]");
	CHECK("data: a\n\n", "[(default)|1|a]");
	/* mixed, and CRLF counts once: "\r\n\r\n" is two line ends, not four */
	CHECK("data: a\r\ndata: b\rdata: c\n\r\n", "[(default)|5|a\nb\nc]");
	/* "\n\r" is two line ends */
	CHECK("data: a\n\rdata: b\n\n", "[(default)|1|a][(default)|1|b]");
	/* "\r\r\n": an empty line after the CR line */
	CHECK("data: a\r\r\ndata: b\r\n\r\n", "[(default)|1|a][(default)|1|b]");
}

static void
test_cr_lf_across_chunks(void)
{
	GString *t = g_string_new(NULL);
	g_autoptr(ConfabSseParser) parser = confab_sse_parser_new(on_event, t);

	g_assert_true(confab_sse_parser_feed(parser, "data: a\r", 8, NULL));
	/* the LF completes the CRLF: it is not an empty line of its own */
	g_assert_true(confab_sse_parser_feed(parser, "\ndata: b\r", 9, NULL));
	g_assert_cmpstr(t->str, ==, "");
	/* an empty read in between changes nothing */
	g_assert_true(confab_sse_parser_feed(parser, "", 0, NULL));
	g_assert_true(confab_sse_parser_feed(parser, "\n", 1, NULL));
	g_assert_cmpstr(t->str, ==, "");
	g_assert_true(confab_sse_parser_feed(parser, "\r", 1, NULL));
	g_assert_cmpstr(t->str, ==, "[(default)|3|a\nb]");
	/* a CR then a non-LF: the next line starts right away */
	g_assert_true(confab_sse_parser_feed(parser, "data: c\r", 8, NULL));
	g_assert_true(confab_sse_parser_feed(parser, "\r", 1, NULL));
	g_assert_cmpstr(t->str, ==, "[(default)|3|a\nb][(default)|1|c]");
	g_assert_true(confab_sse_parser_finish(parser, NULL));
	g_assert_cmpstr(t->str, ==, "[(default)|3|a\nb][(default)|1|c]");
	g_string_free(t, TRUE);
}

static void
test_multiline_data(void)
{
	CHECK("data: a\ndata: b\ndata: c\n\n", "[(default)|5|a\nb\nc]");
	/* empty data lines are lines of data */
	CHECK("data:\ndata:\n\n", "[(default)|1|\n]");
	CHECK("data: a\ndata:\ndata: b\n\n", "[(default)|4|a\n\nb]");
	CHECK("data\ndata\n\n", "[(default)|1|\n]");
	/* one empty data line: an event with empty data, still dispatched */
	CHECK("data:\n\n", "[(default)|0|]");
	CHECK("data: \n\n", "[(default)|0|]");
}

static void
test_comments(void)
{
	CHECK(": keep-alive\n\n", "");
	CHECK(":\n:\n:\n\n", "");
	CHECK(": comment\ndata: a\n: another\ndata: b\n\n", "[(default)|3|a\nb]");
	/* a comment line does not dispatch nor reset the event */
	CHECK("event: e\n: c\ndata: x\n\n", "[e|1|x]");
}

static void
test_event_field(void)
{
	CHECK("event: delta\ndata: x\n\n", "[delta|1|x]");
	/* the type is per event: the next one is back to the default */
	CHECK("event: delta\ndata: x\n\ndata: y\n\n", "[delta|1|x][(default)|1|y]");
	/* the last event: line wins */
	CHECK("event: a\nevent: b\ndata: x\n\n", "[b|1|x]");
	CHECK("data: x\nevent: late\n\n", "[late|1|x]");
	/* an event without data is dropped, and its type does not leak */
	CHECK("event: ping\n\n", "");
	CHECK("event: ping\n\ndata: y\n\n", "[(default)|1|y]");
	CHECK("event:error\ndata:x\n\n", "[error|1|x]");
}

static void
test_space_after_colon(void)
{
	/* one leading space is removed, only one */
	CHECK("data:x\n\n", "[(default)|1|x]");
	CHECK("data: x\n\n", "[(default)|1|x]");
	CHECK("data:  x\n\n", "[(default)|2| x]");
	CHECK("data:\tx\n\n", "[(default)|2|\tx]");
	CHECK("data: x \n\n", "[(default)|2|x ]");
	CHECK("event:  e\ndata: x\n\n", "[ e|1|x]");
}

static void
test_field_names(void)
{
	/* field names are exact */
	CHECK("Data: x\n\n", "");
	CHECK(" data: x\n\n", "");
	CHECK("data : x\n\n", "");
	CHECK("datax: x\n\n", "");
	CHECK("dat: x\n\n", "");
	CHECK("id: 1\nretry: 5\nfoo: bar\n\n", "");
	CHECK("events: e\ndata: x\n\n", "[(default)|1|x]");
}

static void
test_bom(void)
{
	CHECK("\xef\xbb\xbf"
	      "data: a\n\n",
	      "[(default)|1|a]");
	CHECK("\xef\xbb\xbf\n"
	      "data: a\n\n",
	      "[(default)|1|a]");
	/* only at the start of the stream */
	CHECK("data: a\n\n\xef\xbb\xbf"
	      "data: b\n\n",
	      "[(default)|1|a]");
	/* only a whole one */
	CHECK("\xef\xbb"
	      "data: a\n\n",
	      "");
	CHECK("\xef"
	      "data: a\n\n",
	      "");
	/* two BOMs: the second is part of the first line */
	CHECK("\xef\xbb\xbf\xef\xbb\xbf"
	      "data: a\n\n",
	      "");
	/* a stream that is only a BOM */
	CHECK("\xef\xbb\xbf", "");
}

static void
test_finish(void)
{
	/* the last event without its empty line */
	CHECK("data: a\n", "[(default)|1|a]");
	/* the last line without its line end */
	CHECK("data: [DONE]", "[(default)|6|[DONE]]");
	CHECK("data: a\ndata: b", "[(default)|3|a\nb]");
	CHECK("event: x", "");
	CHECK(": comment", "");

	/* without finish(), nothing pending is dispatched */
	{
		const gchar *input = "data: a\n\ndata: b\n";
		Outcome o = {0};
		run_cuts(input, strlen(input), NULL, 0, 0, FALSE, &o);
		g_assert_true(o.ok);
		g_assert_cmpstr(o.transcript, ==, "[(default)|1|a]");
		outcome_clear(&o);
	}
	/* finish() twice dispatches once */
	{
		GString *t = g_string_new(NULL);
		g_autoptr(ConfabSseParser) parser = confab_sse_parser_new(on_event, t);
		g_assert_true(confab_sse_parser_feed(parser, "data: z", 7, NULL));
		g_assert_true(confab_sse_parser_finish(parser, NULL));
		g_assert_true(confab_sse_parser_finish(parser, NULL));
		g_assert_cmpstr(t->str, ==, "[(default)|1|z]");
		g_string_free(t, TRUE);
	}
}

static void
test_nul_in_data(void)
{
	const gchar input[] = "data: a\0b\n\n";
	Outcome o = {0};

	assert_split_invariant(input, sizeof(input) - 1, 0, NULL);
	run_whole(input, sizeof(input) - 1, 0, &o);
	g_assert_true(o.ok);
	g_assert_cmpuint(o.transcript_len, ==, strlen("[(default)|3|a") + 1 + strlen("b]"));
	g_assert_cmpint(memcmp(o.transcript, "[(default)|3|a\0b]", o.transcript_len), ==, 0);
	outcome_clear(&o);
}

static void
test_max_event_size(void)
{
	g_autoptr(GString) big = g_string_new(NULL);
	g_autoptr(GString) many = g_string_new(NULL);
	g_autoptr(GString) comment = g_string_new(":");

	/* one line of 200 bytes, over a limit of 100 */
	g_string_append(big, "data: ");
	for (guint i = 0; i < 200; i++)
		g_string_append_c(big, 'x');
	g_string_append(big, "\n\n");
	{
		Outcome o = {0};
		run_whole(big->str, big->len, 100, &o);
		g_assert_false(o.ok);
		g_assert_cmpint(o.error_code, ==, CONFAB_ERROR_UPSTREAM);
		g_assert_cmpstr(o.transcript, ==, "");
		outcome_clear(&o);
	}
	/* and refused however it arrives */
	assert_split_invariant(big->str, big->len, 100, NULL);

	/* many small lines that add up */
	for (guint i = 0; i < 40; i++)
		g_string_append(many, "data: xxxxx\n");
	g_string_append(many, "\n");
	{
		Outcome o = {0};
		run_whole(many->str, many->len, 100, &o);
		g_assert_false(o.ok);
		g_assert_cmpint(o.error_code, ==, CONFAB_ERROR_UPSTREAM);
		outcome_clear(&o);
	}
	/* the limit is per event: many small events are fine */
	{
		g_autoptr(GString) events = g_string_new(NULL);
		Outcome o = {0};
		for (guint i = 0; i < 100; i++)
			g_string_append(events, "data: xxxxxxxxxx\n\n");
		run_whole(events->str, events->len, 100, &o);
		g_assert_true(o.ok);
		outcome_clear(&o);
	}
	/* an unterminated line cannot grow without bound either */
	for (guint i = 0; i < 1000; i++)
		g_string_append_c(comment, 'c');
	{
		GString *t = g_string_new(NULL);
		g_autoptr(ConfabSseParser) parser = confab_sse_parser_new(on_event, t);
		g_autoptr(GError) error = NULL;
		gboolean ok = TRUE;
		confab_sse_parser_set_max_event_size(parser, 100);
		for (gsize i = 0; i < comment->len && ok; i += 10)
			ok = confab_sse_parser_feed(parser,
						    comment->str + i,
						    MIN(10, comment->len - i),
						    &error);
		g_assert_false(ok);
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM);
		g_string_free(t, TRUE);
	}
}

static void
test_max_event_size_split_invariant(void)
{
	/* An event well under the limit must be accepted however the read
	 * boundaries fall: a data line held across two reads is counted once,
	 * not twice. */
	g_autoptr(GString) event = g_string_new("data: ");
	g_autofree gchar *expected = NULL;

	for (guint i = 0; i < 60; i++)
		g_string_append_c(event, 'x');
	g_string_append(event, "\n\n");
	expected = g_strdup_printf("[(default)|60|%.*s]", 60, event->str + 6);
	assert_split_invariant(event->str, event->len, 100, expected);

	/* whether an event is too big does not depend on the reads either */
	{
		GRand *rand = g_rand_new_with_seed(7);
		for (guint round = 0; round < 200; round++) {
			g_autoptr(GString) stream = g_string_new(NULL);
			gsize max = g_rand_int_range(rand, 8, 64);
			guint n = g_rand_int_range(rand, 1, 8);
			for (guint i = 0; i < n; i++) {
				guint len = g_rand_int_range(rand, 0, 40);
				g_string_append(stream, g_rand_boolean(rand) ? "data: " : ": ");
				for (guint k = 0; k < len; k++)
					g_string_append_c(stream, 'a' + k % 26);
				g_string_append(stream, g_rand_boolean(rand) ? "\n" : "\n\n");
			}
			assert_split_invariant(stream->str, stream->len, max, NULL);
		}
		g_rand_free(rand);
	}

	/* the same with the default limit and a 3 MiB event (an upstream
	 * relaying a big tool call): arrives in 64 KiB reads */
	{
		const gsize n = 3 * 1024 * 1024;
		GString *t = g_string_new(NULL);
		g_autoptr(ConfabSseParser) parser = confab_sse_parser_new(on_event, t);
		g_autoptr(GString) big = g_string_new("data: ");
		g_autoptr(GError) error = NULL;
		gboolean ok = TRUE;

		for (gsize i = 0; i < n; i++)
			g_string_append_c(big, 'y');
		g_string_append(big, "\n\n");
		for (gsize i = 0; i < big->len && ok; i += 65536)
			ok = confab_sse_parser_feed(parser,
						    big->str + i,
						    MIN(65536, big->len - i),
						    &error);
		g_assert_no_error(error);
		g_assert_true(ok);
		g_assert_cmpuint(t->len, ==, strlen("[(default)|3145728|]") + n);
		g_string_free(t, TRUE);
	}
}

static void
test_random_splits(void)
{
	const gchar *pieces[] = {"data: ",
				 "data:",
				 "data",
				 "event: e",
				 ": c",
				 "id: 1",
				 "x",
				 "y z",
				 "\xc3\xa9",
				 "\n",
				 "\r",
				 "\r\n",
				 "\n\n",
				 "\r\r",
				 ":"};
	GRand *rand = g_rand_new_with_seed(42);

	for (guint round = 0; round < 300; round++) {
		g_autoptr(GString) stream = g_string_new(NULL);
		guint n = g_rand_int_range(rand, 1, 60);
		Outcome whole = {0};

		if (g_rand_boolean(rand))
			g_string_append(stream, "\xef\xbb\xbf");
		for (guint i = 0; i < n; i++)
			g_string_append(stream,
					pieces[g_rand_int_range(rand, 0, G_N_ELEMENTS(pieces))]);
		run_whole(stream->str, stream->len, 0, &whole);
		for (guint k = 0; k < 20; k++) {
			g_autofree gsize *cuts = g_new(gsize, 8);
			guint n_cuts = g_rand_int_range(rand, 1, 8);
			Outcome split = {0};
			for (guint c = 0; c < n_cuts; c++)
				cuts[c] = g_rand_int_range(rand, 0, stream->len + 1);
			/* sort the cuts */
			for (guint a = 0; a < n_cuts; a++)
				for (guint b = a + 1; b < n_cuts; b++)
					if (cuts[b] < cuts[a]) {
						gsize tmp = cuts[a];
						cuts[a] = cuts[b];
						cuts[b] = tmp;
					}
			run_cuts(stream->str, stream->len, cuts, n_cuts, 0, TRUE, &split);
			assert_same(&whole, &split, stream->str);
			outcome_clear(&split);
		}
		outcome_clear(&whole);
	}
	g_rand_free(rand);
}

static void
record_id(const gchar *event, const gchar *data, gsize data_len, gpointer user_data)
{
	GString *ids = user_data;
	g_string_append_printf(ids, "<%.*s>", (gint)data_len, data);
}

/* id and retry, as a client that resumes the stream needs them. */
static void
test_id_and_retry(void)
{
	g_autoptr(GString) seen = g_string_new(NULL);
	g_autoptr(ConfabSseParser) parser = confab_sse_parser_new(record_id, seen);
	g_autoptr(GError) error = NULL;

	g_assert_null(confab_sse_parser_get_last_event_id(parser));
	g_assert_cmpint(confab_sse_parser_get_retry(parser), ==, -1);
	/* an id is taken at dispatch, also for an event of empty data */
	g_assert_true(confab_sse_parser_feed(parser,
					     "id: e1\ndata: \n",
					     sizeof "id: e1\ndata: \n" - 1,
					     &error));
	g_assert_null(confab_sse_parser_get_last_event_id(parser));
	g_assert_true(confab_sse_parser_feed(parser, "\n", sizeof "\n" - 1, &error));
	g_assert_cmpstr(confab_sse_parser_get_last_event_id(parser), ==, "e1");
	/* it holds for events that give none; retry takes digits only */
	g_assert_true(confab_sse_parser_feed(parser,
					     "retry: 250\ndata: x\n\n",
					     sizeof "retry: 250\ndata: x\n\n" - 1,
					     &error));
	g_assert_cmpstr(confab_sse_parser_get_last_event_id(parser), ==, "e1");
	g_assert_cmpint(confab_sse_parser_get_retry(parser), ==, 250);
	g_assert_true(confab_sse_parser_feed(parser,
					     "retry: 1s\nretry: -5\nretry:\n\n",
					     sizeof "retry: 1s\nretry: -5\nretry:\n\n" - 1,
					     &error));
	g_assert_cmpint(confab_sse_parser_get_retry(parser), ==, 250);
	g_assert_true(confab_sse_parser_feed(parser,
					     "retry: 99999999999999\n\n",
					     sizeof "retry: 99999999999999\n\n" - 1,
					     &error));
	g_assert_cmpint(confab_sse_parser_get_retry(parser), ==, G_MAXINT32);
	/* a new id, an id with a NUL ignored, an empty id clearing it */
	g_assert_true(
	    confab_sse_parser_feed(parser, "id: e2\n\n", sizeof "id: e2\n\n" - 1, &error));
	g_assert_cmpstr(confab_sse_parser_get_last_event_id(parser), ==, "e2");
	g_assert_true(
	    confab_sse_parser_feed(parser, "id: a\0b\n\n", sizeof "id: a\0b\n\n" - 1, &error));
	g_assert_cmpstr(confab_sse_parser_get_last_event_id(parser), ==, "e2");
	g_assert_true(confab_sse_parser_feed(parser, "id\n\n", sizeof "id\n\n" - 1, &error));
	g_assert_null(confab_sse_parser_get_last_event_id(parser));
	g_assert_no_error(error);
	g_assert_cmpstr(seen->str, ==, "<><x>");
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/sse-parser/basic", test_basic);
	g_test_add_func("/confab/sse-parser/rich-stream-every-split", test_rich_stream_every_split);
	g_test_add_func("/confab/sse-parser/line-endings", test_line_endings);
	g_test_add_func("/confab/sse-parser/cr-lf-across-chunks", test_cr_lf_across_chunks);
	g_test_add_func("/confab/sse-parser/multiline-data", test_multiline_data);
	g_test_add_func("/confab/sse-parser/comments", test_comments);
	g_test_add_func("/confab/sse-parser/event-field", test_event_field);
	g_test_add_func("/confab/sse-parser/space-after-colon", test_space_after_colon);
	g_test_add_func("/confab/sse-parser/field-names", test_field_names);
	g_test_add_func("/confab/sse-parser/bom", test_bom);
	g_test_add_func("/confab/sse-parser/finish", test_finish);
	g_test_add_func("/confab/sse-parser/nul-in-data", test_nul_in_data);
	g_test_add_func("/confab/sse-parser/max-event-size", test_max_event_size);
	g_test_add_func("/confab/sse-parser/max-event-size-split-invariant",
			test_max_event_size_split_invariant);
	g_test_add_func("/confab/sse-parser/random-splits", test_random_splits);
	g_test_add_func("/confab/sse-parser/id-and-retry", test_id_and_retry);
	return g_test_run();
}
