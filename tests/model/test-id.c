/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "model/confab-id.h"
#include "model/confab-token.h"
#include "util/confab-random.h"

/* Ids and token secrets: shape, order, uniqueness, validation. */

static const gchar crockford[] = "0123456789abcdefghjkmnpqrstvwxyz";

static void
assert_body_shape(const gchar *id, const gchar *prefix)
{
	const gchar *body;

	g_assert_true(g_str_has_prefix(id, prefix));
	body = id + strlen(prefix);
	g_assert_cmpuint(strlen(body), ==, CONFAB_ID_BODY_LEN);
	for (const gchar *p = body; *p != '\0'; p++) {
		/* lower-case Crockford base32: URL-safe, no look-alikes */
		if (strchr(crockford, *p) == NULL)
			g_error("id %s has character '%c' outside the alphabet", id, *p);
	}
}

static void
test_prefixes(void)
{
	g_autoptr(ConfabIdGenerator) gen = confab_id_generator_new();
	const gchar *prefixes[] = {CONFAB_PREFIX_AGENT,
				   CONFAB_PREFIX_SESSION,
				   CONFAB_PREFIX_MESSAGE,
				   CONFAB_PREFIX_TOKEN,
				   CONFAB_PREFIX_COMPLETION};

	g_assert_cmpstr(CONFAB_PREFIX_AGENT, ==, "agt_");
	g_assert_cmpstr(CONFAB_PREFIX_SESSION, ==, "cts_");
	g_assert_cmpstr(CONFAB_PREFIX_MESSAGE, ==, "msg_");
	g_assert_cmpstr(CONFAB_PREFIX_TOKEN, ==, "tok_");
	g_assert_cmpstr(CONFAB_PREFIX_SECRET, ==, "nca_");
	g_assert_cmpstr(CONFAB_PREFIX_COMPLETION, ==, "chatcmpl-");

	for (guint i = 0; i < G_N_ELEMENTS(prefixes); i++) {
		g_autofree gchar *id = confab_id_generator_next(gen, prefixes[i]);
		assert_body_shape(id, prefixes[i]);
		g_assert_cmpuint(strlen(id), ==, strlen(prefixes[i]) + CONFAB_ID_BODY_LEN);
		/* URL-safe as is: escaping changes nothing */
		{
			g_autofree gchar *escaped = g_uri_escape_string(id, NULL, FALSE);
			g_assert_cmpstr(escaped, ==, id);
		}
	}
}

static void
test_monotonic_tight_loop(void)
{
	g_autoptr(ConfabIdGenerator) gen = confab_id_generator_new();
	g_autofree gchar *prev = confab_id_generator_next(gen, CONFAB_PREFIX_MESSAGE);
	const guint n = 100000;

	for (guint i = 0; i < n; i++) {
		gchar *id = confab_id_generator_next(gen, CONFAB_PREFIX_MESSAGE);
		if (strcmp(prev, id) >= 0)
			g_error("id %u not increasing: %s then %s", i, prev, id);
		if (strlen(id) != strlen(prev))
			g_error("id length changed: %s then %s", prev, id);
		g_free(prev);
		prev = id;
	}
}

static gint64
fixed_clock(gpointer data)
{
	return *(gint64 *)data;
}

static void
test_monotonic_same_millisecond(void)
{
	g_autoptr(ConfabIdGenerator) gen = confab_id_generator_new();
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	gint64 now = 1700000000123;
	g_autofree gchar *prev = NULL;

	confab_id_generator_set_clock(gen, fixed_clock, &now);
	for (guint i = 0; i < 50000; i++) {
		gchar *id = confab_id_generator_next(gen, CONFAB_PREFIX_SESSION);
		g_assert_cmpint(confab_id_get_timestamp_ms(id), ==, now);
		if (prev != NULL && strcmp(prev, id) >= 0)
			g_error("not increasing in one millisecond: %s then %s", prev, id);
		g_assert_true(g_hash_table_add(seen, g_strdup(id)));
		g_free(prev);
		prev = id;
	}
}

static void
test_clock_steps_back(void)
{
	g_autoptr(ConfabIdGenerator) gen = confab_id_generator_new();
	gint64 now = 1700000005000;
	g_autofree gchar *a = NULL;
	g_autofree gchar *b = NULL;
	g_autofree gchar *c = NULL;

	confab_id_generator_set_clock(gen, fixed_clock, &now);
	a = confab_id_generator_next(gen, CONFAB_PREFIX_SESSION);
	now -= 60000; /* NTP steps the clock back a minute */
	b = confab_id_generator_next(gen, CONFAB_PREFIX_SESSION);
	g_assert_cmpstr(a, <, b);
	/* the time part does not go backwards */
	g_assert_cmpint(confab_id_get_timestamp_ms(b), ==, 1700000005000);
	now += 120000;
	c = confab_id_generator_next(gen, CONFAB_PREFIX_SESSION);
	g_assert_cmpstr(b, <, c);
	g_assert_cmpint(confab_id_get_timestamp_ms(c), ==, 1700000065000);
}

static void
test_sorts_by_time(void)
{
	g_autoptr(ConfabIdGenerator) gen = confab_id_generator_new();
	gint64 now = 1000;
	g_autofree gchar *prev = NULL;

	confab_id_generator_set_clock(gen, fixed_clock, &now);
	/* times of very different magnitude still sort as strings */
	for (gint64 t = 1000; t < ((gint64)1 << 47); t = t * 3 + 7) {
		gchar *id;
		now = t;
		id = confab_id_generator_next(gen, CONFAB_PREFIX_AGENT);
		g_assert_cmpint(confab_id_get_timestamp_ms(id), ==, t);
		g_assert_cmpint(confab_id_get_timestamp(id), ==, t / 1000);
		g_assert_true(confab_id_is_valid(id, CONFAB_PREFIX_AGENT));
		if (prev != NULL)
			g_assert_cmpstr(prev, <, id);
		g_free(prev);
		prev = id;
	}
}

static void
test_real_clock_timestamp(void)
{
	g_autoptr(ConfabIdGenerator) gen = confab_id_generator_new();
	gint64 before = g_get_real_time() / 1000;
	g_autofree gchar *id = confab_id_generator_next(gen, CONFAB_PREFIX_COMPLETION);
	gint64 after = g_get_real_time() / 1000;
	gint64 ms = confab_id_get_timestamp_ms(id);

	g_assert_cmpint(ms, >=, before);
	g_assert_cmpint(ms, <=, after);
	g_assert_cmpint(confab_id_get_timestamp(id), ==, ms / 1000);
}

static void
test_unique_across_generators(void)
{
	/* two daemons (two generators) in the same millisecond do not collide:
	 * the random part differs */
	g_autoptr(ConfabIdGenerator) g1 = confab_id_generator_new();
	g_autoptr(ConfabIdGenerator) g2 = confab_id_generator_new();
	gint64 now = 1700000000000;
	g_autofree gchar *a = NULL;
	g_autofree gchar *b = NULL;

	confab_id_generator_set_clock(g1, fixed_clock, &now);
	confab_id_generator_set_clock(g2, fixed_clock, &now);
	a = confab_id_generator_next(g1, CONFAB_PREFIX_SESSION);
	b = confab_id_generator_next(g2, CONFAB_PREFIX_SESSION);
	g_assert_cmpstr(a, !=, b);
	/* same time part, different randomness */
	g_assert_cmpint(strncmp(a, b, 4 + 10), ==, 0);
	g_assert_cmpint(strcmp(a + 14, b + 14), !=, 0);
}

typedef struct {
	ConfabIdGenerator *gen;
	GPtrArray *ids;
} ThreadData;

static gpointer
thread_func(gpointer data)
{
	ThreadData *td = data;
	for (guint i = 0; i < 10000; i++)
		g_ptr_array_add(td->ids, confab_id_generator_next(td->gen, CONFAB_PREFIX_MESSAGE));
	return NULL;
}

static void
test_threads(void)
{
	g_autoptr(ConfabIdGenerator) gen = confab_id_generator_new();
	g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
	ThreadData td[4];
	GThread *threads[4];

	for (guint t = 0; t < 4; t++) {
		td[t].gen = gen;
		td[t].ids = g_ptr_array_new_with_free_func(g_free);
		threads[t] = g_thread_new("ids", thread_func, &td[t]);
	}
	for (guint t = 0; t < 4; t++)
		g_thread_join(threads[t]);
	for (guint t = 0; t < 4; t++) {
		for (guint i = 0; i < td[t].ids->len; i++) {
			const gchar *id = g_ptr_array_index(td[t].ids, i);
			/* each thread sees increasing ids */
			if (i > 0)
				g_assert_cmpstr(g_ptr_array_index(td[t].ids, i - 1), <, id);
			if (!g_hash_table_add(seen, (gpointer)id))
				g_error("duplicate id %s", id);
		}
	}
	g_assert_cmpuint(g_hash_table_size(seen), ==, 40000);
	for (guint t = 0; t < 4; t++)
		g_ptr_array_unref(td[t].ids);
}

static void
test_is_valid(void)
{
	g_autoptr(ConfabIdGenerator) gen = confab_id_generator_new();
	g_autofree gchar *cts = confab_id_generator_next(gen, CONFAB_PREFIX_SESSION);
	g_autofree gchar *msg = confab_id_generator_next(gen, CONFAB_PREFIX_MESSAGE);
	g_autofree gchar *cmpl = confab_id_generator_next(gen, CONFAB_PREFIX_COMPLETION);
	g_autofree gchar *longer = g_strconcat(cts, "0", NULL);
	g_autofree gchar *shorter = g_strndup(cts, strlen(cts) - 1);
	g_autofree gchar *upper = g_ascii_strup(cts, -1);
	g_autofree gchar *bad_first = g_strdup(cts);
	g_autofree gchar *with_i = g_strdup(cts);
	g_autofree gchar *with_u = g_strdup(cts);
	g_autofree gchar *zeros = g_strnfill(CONFAB_ID_BODY_LEN, '0');
	g_autofree gchar *any3 = g_strconcat("abc_", zeros, NULL);
	g_autofree gchar *any2 = g_strconcat("ab_", zeros, NULL);
	g_autofree gchar *any4 = g_strconcat("abcd_", zeros, NULL);
	g_autofree gchar *all_z = g_strconcat("cts_7", zeros + 1, NULL);

	g_assert_true(confab_id_is_valid(cts, CONFAB_PREFIX_SESSION));
	g_assert_true(confab_id_is_valid(cts, NULL));
	g_assert_true(confab_id_is_valid(msg, CONFAB_PREFIX_MESSAGE));
	g_assert_true(confab_id_is_valid(cmpl, CONFAB_PREFIX_COMPLETION));

	/* wrong prefix */
	g_assert_false(confab_id_is_valid(cts, CONFAB_PREFIX_MESSAGE));
	g_assert_false(confab_id_is_valid(msg, CONFAB_PREFIX_SESSION));
	/* chatcmpl- is not a xxx_ id */
	g_assert_false(confab_id_is_valid(cmpl, NULL));
	/* wrong length */
	g_assert_false(confab_id_is_valid(longer, CONFAB_PREFIX_SESSION));
	g_assert_false(confab_id_is_valid(shorter, CONFAB_PREFIX_SESSION));
	g_assert_false(confab_id_is_valid("cts_", CONFAB_PREFIX_SESSION));
	g_assert_false(confab_id_is_valid("", CONFAB_PREFIX_SESSION));
	g_assert_false(confab_id_is_valid("", NULL));
	g_assert_false(confab_id_is_valid(NULL, CONFAB_PREFIX_SESSION));
	g_assert_false(confab_id_is_valid(NULL, NULL));
	/* upper case is not our alphabet */
	g_assert_false(confab_id_is_valid(upper, CONFAB_PREFIX_SESSION));
	g_assert_false(confab_id_is_valid(upper, NULL));
	/* the first time character carries 3 bits only: '8' and above overflow */
	bad_first[4] = '8';
	g_assert_false(confab_id_is_valid(bad_first, CONFAB_PREFIX_SESSION));
	bad_first[4] = 'z';
	g_assert_false(confab_id_is_valid(bad_first, CONFAB_PREFIX_SESSION));
	bad_first[4] = '7';
	g_assert_true(confab_id_is_valid(bad_first, CONFAB_PREFIX_SESSION));
	/* Crockford leaves out i, l, o, u */
	with_i[10] = 'i';
	g_assert_false(confab_id_is_valid(with_i, CONFAB_PREFIX_SESSION));
	with_u[29] = 'u';
	g_assert_false(confab_id_is_valid(with_u, CONFAB_PREFIX_SESSION));
	/* characters a URL or SQL would care about */
	{
		const gchar *bad_chars = "%/?#&'\" _-.";
		for (const gchar *c = bad_chars; *c != '\0'; c++) {
			g_autofree gchar *bad = g_strdup(cts);
			bad[20] = *c;
			if (confab_id_is_valid(bad, CONFAB_PREFIX_SESSION))
				g_error("'%s' accepted as an id", bad);
		}
	}
	/* a prefix with the wrong shape, when any prefix is allowed */
	g_assert_false(confab_id_is_valid(any2, NULL));
	g_assert_false(confab_id_is_valid(any4, NULL));
	g_assert_true(confab_id_is_valid(any3, NULL));
	g_assert_true(confab_id_is_valid(all_z, CONFAB_PREFIX_SESSION));
}

static void
test_timestamp_of_garbage(void)
{
	g_assert_cmpint(confab_id_get_timestamp_ms("cts_short"), ==, -1);
	g_assert_cmpint(confab_id_get_timestamp_ms("nothing"), ==, -1);
	g_assert_cmpint(confab_id_get_timestamp_ms("cts_!!!!!!!!!!0000000000000000"), ==, -1);
	g_assert_cmpint(confab_id_get_timestamp("cts_short"), ==, -1);
	g_assert_cmpint(confab_id_get_timestamp_ms("cts_0000000001aaaaaaaaaaaaaaaa"), ==, 1);
	g_assert_cmpint(confab_id_get_timestamp_ms("chatcmpl-000000000z0000000000000000"), ==, 31);
}

static void
test_token_secret(void)
{
	static const gchar base62[] =
	    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	guint counts[256] = {0};

	for (guint i = 0; i < 2000; i++) {
		g_autoptr(GError) error = NULL;
		gchar *secret = confab_token_secret_new(&error);
		const gchar *body;

		g_assert_no_error(error);
		g_assert_nonnull(secret);
		g_assert_true(g_str_has_prefix(secret, "nca_"));
		body = secret + 4;
		g_assert_cmpuint(strlen(body), >=, 32);
		for (const gchar *p = body; *p != '\0'; p++) {
			if (strchr(base62, *p) == NULL)
				g_error("secret %s has a non-base62 character", secret);
			counts[(guchar)*p]++;
		}
		if (!g_hash_table_add(seen, secret))
			g_error("duplicate secret %s", secret);
	}
	/* every base62 character shows up: the whole alphabet is used (with
	 * ~86000 characters drawn, a missing one means a broken mapping) */
	for (const gchar *c = base62; *c != '\0'; c++) {
		if (counts[(guchar)*c] == 0)
			g_error("base62 character '%c' never used", *c);
	}
	/* and roughly uniformly: each within 30% of the mean */
	{
		guint total = 0;
		gdouble mean;
		for (const gchar *c = base62; *c != '\0'; c++)
			total += counts[(guchar)*c];
		mean = (gdouble)total / 62;
		for (const gchar *c = base62; *c != '\0'; c++) {
			if (counts[(guchar)*c] < mean * 0.7 || counts[(guchar)*c] > mean * 1.3)
				g_error("base62 character '%c' drawn %u times, mean %.0f",
					*c,
					counts[(guchar)*c],
					mean);
		}
	}
}

static void
test_random_bytes(void)
{
	guint8 a[64] = {0};
	guint8 b[64] = {0};
	guint8 zero[64] = {0};
	g_autoptr(GError) error = NULL;

	g_assert_true(confab_random_bytes(a, sizeof(a), &error));
	g_assert_no_error(error);
	g_assert_true(confab_random_bytes(b, sizeof(b), &error));
	g_assert_true(memcmp(a, b, sizeof(a)) != 0);
	g_assert_true(memcmp(a, zero, sizeof(a)) != 0);
	g_assert_true(confab_random_bytes(a, 0, &error));
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/id/prefixes", test_prefixes);
	g_test_add_func("/confab/id/monotonic-tight-loop", test_monotonic_tight_loop);
	g_test_add_func("/confab/id/monotonic-same-millisecond", test_monotonic_same_millisecond);
	g_test_add_func("/confab/id/clock-steps-back", test_clock_steps_back);
	g_test_add_func("/confab/id/sorts-by-time", test_sorts_by_time);
	g_test_add_func("/confab/id/real-clock-timestamp", test_real_clock_timestamp);
	g_test_add_func("/confab/id/unique-across-generators", test_unique_across_generators);
	g_test_add_func("/confab/id/threads", test_threads);
	g_test_add_func("/confab/id/is-valid", test_is_valid);
	g_test_add_func("/confab/id/timestamp-of-garbage", test_timestamp_of_garbage);
	g_test_add_func("/confab/id/token-secret", test_token_secret);
	g_test_add_func("/confab/id/random-bytes", test_random_bytes);
	return g_test_run();
}
