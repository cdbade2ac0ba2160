/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "util/confab-secret-scrubber.h"

/* Secrets redacted from whole strings and from streams cut anywhere. */

#define KEY   "sk-proj-Zq8v3LkP0secret"
#define TOKEN "tok_\xc3\xa9t\xc3\xa9-42-\xf0\x9f\x94\x91" /* tok_été-42-🔑 */

static ConfabSecretScrubber *
scrubber_new(const gchar *first, ...) G_GNUC_NULL_TERMINATED;

static ConfabSecretScrubber *
scrubber_new(const gchar *first, ...)
{
	ConfabSecretScrubber *self = confab_secret_scrubber_new();
	va_list args;

	va_start(args, first);
	for (const gchar *s = first; s != NULL; s = va_arg(args, const gchar *))
		g_assert_true(confab_secret_scrubber_add_secret(self, s));
	va_end(args);
	return self;
}

static void
assert_scrub(ConfabSecretScrubber *self, const gchar *text, const gchar *expected)
{
	g_autofree gchar *out = confab_secret_scrubber_scrub(self, text);
	g_assert_cmpstr(out, ==, expected);
}

static void
test_whole(void)
{
	g_autoptr(ConfabSecretScrubber) none = confab_secret_scrubber_new();
	g_autoptr(ConfabSecretScrubber) self = scrubber_new(KEY, TOKEN, NULL);

	/* no secrets: nothing changes */
	assert_scrub(none, "Bearer " KEY, "Bearer " KEY);
	g_assert_null(confab_secret_scrubber_scrub(none, NULL));

	assert_scrub(self, "", "");
	assert_scrub(self, "nothing here", "nothing here");
	assert_scrub(self, KEY, "[REDACTED]");
	assert_scrub(self,
		     "Incorrect API key provided: Bearer " KEY ".",
		     "Incorrect API key provided: Bearer [REDACTED].");
	assert_scrub(self,
		     KEY KEY " and " TOKEN "!" KEY,
		     "[REDACTED][REDACTED] and [REDACTED]![REDACTED]");
	/* a near miss stays */
	assert_scrub(self, "sk-proj-Zq8v3LkP0secreT", "sk-proj-Zq8v3LkP0secreT");
	/* cut off by the end of the text: at least 8 bytes of it go too */
	assert_scrub(self, "key: sk-proj-Zq8", "key: [REDACTED]");
	assert_scrub(self, "key: sk-proj", "key: sk-proj");
	assert_scrub(self, "sk-proj-Zq8 and more", "sk-proj-Zq8 and more");

	/* too short to be told from text */
	g_assert_false(confab_secret_scrubber_add_secret(self, "1234567"));
	g_assert_false(confab_secret_scrubber_add_secret(self, ""));
	g_assert_false(confab_secret_scrubber_add_secret(self, NULL));
	g_assert_true(confab_secret_scrubber_add_secret(self, KEY));
	g_assert_cmpuint(confab_secret_scrubber_get_n_secrets(self), ==, 2);
	assert_scrub(self, "pin 1234567", "pin 1234567");
}

static void
test_error(void)
{
	g_autoptr(ConfabSecretScrubber) self = scrubber_new(KEY, NULL);
	g_autoptr(GError) error =
	    g_error_new(G_IO_ERROR, G_IO_ERROR_FAILED, "The upstream said: bad key " KEY);

	confab_secret_scrubber_scrub_error(self, error);
	g_assert_cmpstr(error->message, ==, "The upstream said: bad key [REDACTED]");
	confab_secret_scrubber_scrub_error(self, NULL);
}

/* Leftmost first, then longest: a secret that is the start of another. */
static void
test_prefix_secrets(void)
{
	g_autoptr(ConfabSecretScrubber) self = scrubber_new("abcdefgh", "abcdefghij", NULL);

	assert_scrub(self, "xabcdefghijy", "x[REDACTED]y");
	assert_scrub(self, "xabcdefghiy", "x[REDACTED]iy");
	assert_scrub(self, "abcdefgh", "[REDACTED]");
	assert_scrub(self, "abcdefghi", "[REDACTED]");
	assert_scrub(self, "abcdefgabcdefghij", "abcdefg[REDACTED]");
	assert_scrub(self, "aabcdefghabcdefghij", "a[REDACTED][REDACTED]");
}

/* Feeds @pieces; checks each release is valid UTF-8 and what is held is
 * bounded; returns everything released, flush included. */
static gchar *
stream(ConfabSecretScrubber *self, const gchar *text, const gsize *cuts, guint n_cuts)
{
	g_autoptr(GString) pending = g_string_new(NULL);
	GString *out = g_string_new(NULL);
	gsize pos = 0;
	gsize len = strlen(text);

	for (guint i = 0; i <= n_cuts; i++) {
		gsize end = i < n_cuts ? cuts[i] : len;
		g_autofree gchar *released =
		    confab_secret_scrubber_feed(self, pending, text + pos, end - pos);
		g_assert_true(g_utf8_validate(released, -1, NULL));
		g_assert_cmpuint(pending->len,
				 <=,
				 MAX(confab_secret_scrubber_get_max_hold(self), 3));
		g_string_append(out, released);
		pos = end;
	}
	{
		g_autofree gchar *rest = confab_secret_scrubber_flush(self, pending);
		g_assert_true(g_utf8_validate(rest, -1, NULL));
		g_assert_cmpuint(pending->len, ==, 0);
		g_string_append(out, rest);
	}
	return g_string_free(out, FALSE);
}

/* Every cut, and every pair of cuts, of texts holding two secrets, UTF-8
 * around them: the stream gives what the whole string gives. */
static void
test_every_split(void)
{
	g_autoptr(ConfabSecretScrubber) self = scrubber_new(KEY, TOKEN, NULL);
	struct {
		const gchar *text;
		const gchar *expected;
	} cases[] = {
	    {"héllo " KEY " wörld 🌍" TOKEN "🌍 end", "héllo [REDACTED] wörld 🌍[REDACTED]🌍 end"},
	    {"é" KEY TOKEN "é", "é[REDACTED][REDACTED]é"},
	    {"sk-sk-proj-" KEY "sk-proj", "sk-sk-proj-[REDACTED]sk-proj"},
	    {"tok_été tok_été-42-🔑 tok_été-42-🔒", "tok_été [REDACTED] tok_été-42-🔒"},
	    {"ends with a cut secret: " KEY "sk-proj-Zq8v",
	     "ends with a cut secret: [REDACTED][REDACTED]"},
	};

	for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
		const gchar *text = cases[c].text;
		gsize len = strlen(text);
		g_autofree gchar *whole = confab_secret_scrubber_scrub(self, text);

		g_assert_cmpstr(whole, ==, cases[c].expected);
		for (gsize a = 0; a <= len; a++) {
			g_autofree gchar *one = stream(self, text, &a, 1);
			g_assert_cmpstr(one, ==, whole);
			for (gsize b = a; b <= len; b++) {
				gsize cuts[2] = {a, b};
				g_autofree gchar *two = stream(self, text, cuts, 2);
				g_assert_cmpstr(two, ==, whole);
			}
		}
		/* byte by byte */
		{
			g_autofree gsize *cuts = g_new(gsize, len);
			g_autofree gchar *bytes = NULL;
			for (gsize i = 0; i < len; i++)
				cuts[i] = i + 1;
			bytes = stream(self, text, cuts, (guint)len);
			g_assert_cmpstr(bytes, ==, whole);
		}
	}
}

/* A secret that starts another, cut everywhere. */
static void
test_prefix_secrets_split(void)
{
	g_autoptr(ConfabSecretScrubber) self = scrubber_new("abcdefgh", "abcdefghij", NULL);
	const gchar *texts[] = {"xabcdefghijy",
				"xabcdefghiy",
				"abcdefgh",
				"zzabcdefghi",
				"abcdefgh!"};

	for (guint t = 0; t < G_N_ELEMENTS(texts); t++) {
		g_autofree gchar *whole = confab_secret_scrubber_scrub(self, texts[t]);
		for (gsize a = 0; a <= strlen(texts[t]); a++) {
			g_autofree gchar *one = stream(self, texts[t], &a, 1);
			g_assert_cmpstr(one, ==, whole);
		}
	}
}

/* What is released goes out at once; only what may start a secret waits. */
static void
test_release_early(void)
{
	g_autoptr(ConfabSecretScrubber) self = scrubber_new(KEY, NULL);
	g_autoptr(GString) pending = g_string_new(NULL);
	g_autofree gchar *a = confab_secret_scrubber_feed(self, pending, "Your key: sk-", 13);
	g_autofree gchar *b = NULL;
	g_autofree gchar *c = NULL;
	g_autofree gchar *d = NULL;
	g_autofree gchar *e = NULL;

	g_assert_cmpstr(a, ==, "Your key: ");
	g_assert_cmpstr(pending->str, ==, "sk-");
	b = confab_secret_scrubber_feed(self, pending, "proj-Zq8v3LkP0secret", 20);
	g_assert_cmpstr(b, ==, "[REDACTED]");
	g_assert_cmpuint(pending->len, ==, 0);
	c = confab_secret_scrubber_feed(self, pending, " sk-pro", 7);
	g_assert_cmpstr(c, ==, " ");
	d = confab_secret_scrubber_feed(self, pending, "bably not", 9);
	g_assert_cmpstr(d, ==, "sk-probably not");
	/* an incomplete character waits for its end */
	e = confab_secret_scrubber_feed(self, pending, "\xf0\x9f", 2);
	g_assert_cmpstr(e, ==, "");
	g_assert_cmpuint(pending->len, ==, 2);
	{
		g_autofree gchar *f = confab_secret_scrubber_feed(self, pending, "\x94\x91", 2);
		g_assert_cmpstr(f, ==, "🔑");
	}
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/secret-scrubber/whole", test_whole);
	g_test_add_func("/confab/secret-scrubber/error", test_error);
	g_test_add_func("/confab/secret-scrubber/prefix-secrets", test_prefix_secrets);
	g_test_add_func("/confab/secret-scrubber/every-split", test_every_split);
	g_test_add_func("/confab/secret-scrubber/prefix-secrets-split", test_prefix_secrets_split);
	g_test_add_func("/confab/secret-scrubber/release-early", test_release_early);
	return g_test_run();
}
