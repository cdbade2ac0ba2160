/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * The monthly request quota, against a real confabd: the x-ratelimit-*
 * headers, the 429 that does not count, what never counts, the quota under
 * concurrency, unlimited owners, the configured default, and a restart.
 */

/* f->other is bob's token */
typedef ConfabTestTokens Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	confab_test_tokens_start(f, data, "bob");
}

/* ---------- helpers ---------- */

static GVariant *
get_usage(Fixture *f, const gchar *owner)
{
	g_autoptr(GError) error = NULL;
	GVariant *usage = NULL;
	confab_dbus_admin_call_get_usage_sync(f->daemon->admin, owner, &usage, NULL, &error);
	g_assert_no_error(error);
	return usage;
}

static guint64
usage_u64(Fixture *f, const gchar *owner, const gchar *key)
{
	g_autoptr(GVariant) usage = get_usage(f, owner);
	guint64 value = 0;
	g_assert_true(g_variant_lookup(usage, key, "t", &value));
	return value;
}

static guint64
used(Fixture *f, const gchar *owner)
{
	return usage_u64(f, owner, "requests");
}

/* "123s": whole seconds until the month rolls over */
static gint64
reset_seconds(ConfabTestResponse *r)
{
	const gchar *value = confab_test_header(r, "x-ratelimit-reset-requests");
	g_autofree gchar *digits = NULL;
	guint64 n = 0;
	g_assert_nonnull(value);
	g_assert_true(g_str_has_suffix(value, "s"));
	digits = g_strndup(value, strlen(value) - 1);
	g_assert_true(g_ascii_string_to_unsigned(digits, 10, 1, 31 * 86400, &n, NULL));
	return (gint64)n;
}

static void
assert_quota_headers(ConfabTestResponse *r, guint64 limit, guint64 remaining)
{
	g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, limit);
	g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-remaining-requests"),
			 ==,
			 remaining);
	(void)reset_seconds(r);
}

static void
assert_no_quota_headers(ConfabTestResponse *r)
{
	g_assert_null(confab_test_header(r, "x-ratelimit-limit-requests"));
	g_assert_null(confab_test_header(r, "x-ratelimit-remaining-requests"));
	g_assert_null(confab_test_header(r, "x-ratelimit-reset-requests"));
}

static void
assert_over_quota(ConfabTestResponse *r)
{
	confab_test_assert_error(r, 429, "insufficient_quota");
	g_assert_cmpstr(confab_test_json_string(r->json, "error.type"), ==, "insufficient_quota");
	g_assert_cmpstr(confab_test_header(r, "x-should-retry"), ==, "false");
	g_assert_cmpstr(soup_message_headers_get_content_type(r->headers, NULL),
			==,
			"application/json");
}

static ConfabTestResponse *
turn(Fixture *f, const gchar *token, gboolean stream)
{
	return confab_test_chat(f->daemon, token, f->agent, NULL, "count me", stream);
}

/* ---------- tests ---------- */

static void
test_headers_and_limit(Fixture *f, gconstpointer data)
{
	g_autoptr(GVariant) usage = NULL;
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	g_autofree gchar *month = g_date_time_format(now, "%Y-%m");
	const gchar *s = NULL;
	guint64 u = 0;
	gint64 reset = 0;
	gboolean b = FALSE;

	confab_test_set_quota(f->daemon, "alice", 3);
	for (guint i = 0; i < 3; i++) {
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, i == 1);
		g_assert_cmpuint(r->status, ==, 200);
		/* remaining is after this request; streams carry them too */
		assert_quota_headers(r, 3, 2 - i);
		g_assert_cmpuint(used(f, "alice"), ==, i + 1);
		if (i == 0) {
			g_autoptr(GVariant) v = get_usage(f, "alice");
			g_autoptr(GDateTime) first = g_date_time_new_utc(g_date_time_get_year(now),
									 g_date_time_get_month(now),
									 1,
									 0,
									 0,
									 0);
			g_autoptr(GDateTime) next = g_date_time_add_months(first, 1);
			gint64 expected = g_date_time_difference(next, now) / G_TIME_SPAN_SECOND;
			gint64 dbus_reset = 0;
			/* until 00:00 UTC on the first of next month */
			g_assert_cmpint(ABS(expected - reset_seconds(r)), <=, 10);
			g_assert_true(g_variant_lookup(v, "reset_seconds", "x", &dbus_reset));
			g_assert_cmpint(ABS(dbus_reset - reset_seconds(r)), <=, 5);
		}
	}
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		assert_over_quota(r);
		/* a 429 carries the quota too: nothing remains */
		assert_quota_headers(r, 3, 0);
	}
	{
		/* a stream is refused before it starts, as JSON */
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, TRUE);
		assert_over_quota(r);
	}
	/* refused requests do not count */
	g_assert_cmpuint(used(f, "alice"), ==, 3);

	usage = get_usage(f, "alice");
	g_assert_true(g_variant_lookup(usage, "owner", "&s", &s));
	g_assert_cmpstr(s, ==, "alice");
	g_assert_true(g_variant_lookup(usage, "month", "&s", &s));
	g_assert_cmpstr(s, ==, month);
	g_assert_true(g_variant_lookup(usage, "quota", "t", &u));
	g_assert_cmpuint(u, ==, 3);
	g_assert_true(g_variant_lookup(usage, "remaining", "t", &u));
	g_assert_cmpuint(u, ==, 0);
	g_assert_true(g_variant_lookup(usage, "quota_is_default", "b", &b));
	g_assert_false(b);
	g_assert_true(g_variant_lookup(usage, "reset_seconds", "x", &reset));
	g_assert_cmpint(reset, >, 0);
	g_assert_cmpint(reset, <=, 31 * 86400);

	/* another owner is not affected */
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->other, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		assert_no_quota_headers(r);
	}
	/* nor is another token of the same owner spared */
	{
		g_autofree gchar *other =
		    confab_test_create_token(f->daemon, "alice", "api.full", NULL, NULL);
		g_autoptr(ConfabTestResponse) r = turn(f, other, FALSE);
		assert_over_quota(r);
	}
	/* raising the quota lets the owner on at once */
	confab_test_set_quota(f->daemon, "alice", 5);
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		assert_quota_headers(r, 5, 1);
	}
	/* continuing a conversation counts like starting one */
	{
		g_autoptr(ConfabTestResponse) first = NULL;
		g_autoptr(ConfabTestResponse) over = NULL;
		first = turn(f, f->alice, FALSE);
		g_assert_cmpuint(first->status, ==, 200);
		assert_quota_headers(first, 5, 0);
		over = confab_test_chat(f->daemon,
					f->alice,
					f->agent,
					confab_test_json_string(first->json, "metadata.session_id"),
					"again",
					FALSE);
		assert_over_quota(over);
	}
	g_assert_cmpuint(used(f, "alice"), ==, 5);
	/* lowering it below the usage refuses at once */
	confab_test_set_quota(f->daemon, "alice", 1);
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		assert_over_quota(r);
	}
	g_assert_cmpuint(used(f, "alice"), ==, 5);
}

static void
test_not_counted(Fixture *f, gconstpointer data)
{
	g_autofree gchar *bound =
	    confab_test_create_token(f->daemon, "alice", "chat.completions", f->agent, NULL);
	g_autofree gchar *other_agent = confab_test_create_agent(f->daemon, "other", "echo");
	g_autofree gchar *session = NULL;
	g_autofree gchar *bob_session = NULL;
	g_autofree gchar *messages = NULL;

	confab_test_set_quota(f->daemon, "alice", 2);
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->other, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		bob_session = g_strdup(confab_test_json_string(r->json, "metadata.session_id"));
	}
	/* 400s */
	{
		g_autoptr(ConfabTestResponse) r = confab_test_http(f->daemon,
								   "POST",
								   "/api/v1/chat/completions",
								   f->alice,
								   "{not json");
		confab_test_assert_error(r, 400, "invalid_json");
	}
	{
		g_autofree gchar *body =
		    g_strdup_printf("{\"model\":\"%s\",\"messages\":[]}", f->agent);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->alice, body);
		confab_test_assert_error(r, 400, "invalid_messages");
	}
	/* 404s */
	{
		g_autoptr(ConfabTestResponse) r = confab_test_chat(f->daemon,
								   f->alice,
								   "agt_00000000000000000000000000",
								   NULL,
								   "x",
								   FALSE);
		confab_test_assert_error(r, 404, "agent_not_found");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->alice, f->agent, bob_session, "x", FALSE);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	/* 403 */
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, bound, other_agent, NULL, "x", FALSE);
		confab_test_assert_error(r, 403, "permission_denied");
	}
	/* 405, 415 */
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", "/api/v1/chat/completions", f->alice, NULL);
		confab_test_assert_error(r, 405, "method_not_allowed");
	}
	{
		g_autofree gchar *auth = g_strdup_printf("Authorization: Bearer %s", f->alice);
		const gchar *headers[] = {"Content-Type: text/plain", auth, NULL};
		g_autofree gchar *body = g_strdup_printf(
		    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		    f->agent);
		g_autoptr(GBytes) bytes = g_bytes_new(body, strlen(body));
		g_autoptr(ConfabTestResponse) r = confab_test_http_full(f->daemon,
									"POST",
									"/api/v1/chat/completions",
									headers,
									bytes);
		confab_test_assert_error(r, 415, "unsupported_media_type");
	}
	g_assert_cmpuint(used(f, "alice"), ==, 0);

	/* the whole quota is still there */
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		assert_quota_headers(r, 2, 1);
		session = g_strdup(confab_test_json_string(r->json, "metadata.session_id"));
	}
	/* lists never count, even past the quota */
	messages = g_strdup_printf("/api/v1/conversations/%s/messages", session);
	for (guint i = 0; i < 10; i++) {
		g_autoptr(ConfabTestResponse) a =
		    confab_test_http(f->daemon, "GET", "/api/v1/conversations", f->alice, NULL);
		g_autoptr(ConfabTestResponse) b =
		    confab_test_http(f->daemon, "GET", messages, f->alice, NULL);
		g_assert_cmpuint(a->status, ==, 200);
		g_assert_cmpuint(b->status, ==, 200);
		/* they are not chat responses: no quota headers */
		assert_no_quota_headers(a);
	}
	g_assert_cmpuint(used(f, "alice"), ==, 1);
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		assert_quota_headers(r, 2, 0);
	}
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		assert_over_quota(r);
	}
	for (guint i = 0; i < 3; i++) {
		g_autoptr(ConfabTestResponse) a =
		    confab_test_http(f->daemon, "GET", "/api/v1/conversations", f->alice, NULL);
		g_autoptr(ConfabTestResponse) b =
		    confab_test_http(f->daemon, "GET", messages, f->alice, NULL);
		g_assert_cmpuint(a->status, ==, 200);
		g_assert_cmpuint(b->status, ==, 200);
	}
	g_assert_cmpuint(used(f, "alice"), ==, 2);
}

typedef struct {
	Fixture *f;
	GMutex lock;
	GCond cond;
	gboolean go;
	guint ok;
	guint over;
	guint other;
} Race;

static gpointer
race_thread(gpointer data)
{
	Race *race = data;
	g_autoptr(ConfabTestResponse) r = NULL;

	g_mutex_lock(&race->lock);
	while (!race->go)
		g_cond_wait(&race->cond, &race->lock);
	g_mutex_unlock(&race->lock);
	r = confab_test_chat(race->f->daemon,
			     race->f->alice,
			     race->f->agent,
			     NULL,
			     "race",
			     g_random_boolean());
	g_mutex_lock(&race->lock);
	if (r->status == 200)
		race->ok++;
	else if (r->status == 429 &&
		 g_strcmp0(confab_test_header(r, "x-should-retry"), "false") == 0)
		race->over++;
	else
		race->other++;
	g_mutex_unlock(&race->lock);
	return NULL;
}

static void
test_concurrency(Fixture *f, gconstpointer data)
{
	const guint n_threads = 40;
	g_autoptr(GPtrArray) threads = g_ptr_array_new();
	Race race = {f};

	g_mutex_init(&race.lock);
	g_cond_init(&race.cond);
	confab_test_set_quota(f->daemon, "alice", 10);
	for (guint i = 0; i < n_threads; i++)
		g_ptr_array_add(threads, g_thread_new("race", race_thread, &race));
	g_mutex_lock(&race.lock);
	race.go = TRUE;
	g_cond_broadcast(&race.cond);
	g_mutex_unlock(&race.lock);
	for (guint i = 0; i < threads->len; i++)
		g_thread_join(g_ptr_array_index(threads, i));

	g_test_message("200: %u, 429: %u, other: %u", race.ok, race.over, race.other);
	g_assert_cmpuint(race.other, ==, 0);
	g_assert_cmpuint(race.ok, ==, 10);
	g_assert_cmpuint(race.over, ==, n_threads - 10);
	g_assert_cmpuint(used(f, "alice"), ==, 10);
	{
		/* exactly ten conversations exist */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon,
				     "GET",
				     "/api/v1/conversations?limit=100",
				     f->alice,
				     NULL);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(json_array_get_length(
				     json_node_get_array(confab_test_json_get(r->json, "data"))),
				 ==,
				 10);
	}
	g_mutex_clear(&race.lock);
	g_cond_clear(&race.cond);
}

static void
test_unlimited(Fixture *f, gconstpointer data)
{
	g_autoptr(GVariant) usage = NULL;
	guint64 quota = 99;
	gboolean is_default = FALSE;
	guint64 remaining = 0;

	/* nothing configured: unlimited, no headers, still counted */
	for (guint i = 0; i < 3; i++) {
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, i == 2);
		g_assert_cmpuint(r->status, ==, 200);
		assert_no_quota_headers(r);
	}
	g_assert_cmpuint(used(f, "alice"), ==, 3);
	usage = get_usage(f, "alice");
	g_assert_true(g_variant_lookup(usage, "quota", "t", &quota));
	g_assert_cmpuint(quota, ==, 0);
	g_assert_true(g_variant_lookup(usage, "quota_is_default", "b", &is_default));
	g_assert_true(is_default);
	g_assert_false(g_variant_lookup(usage, "remaining", "t", &remaining));

	/* a quota, then 0: the override is gone, unlimited again */
	confab_test_set_quota(f->daemon, "alice", 4);
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		assert_quota_headers(r, 4, 0);
	}
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		assert_over_quota(r);
	}
	confab_test_set_quota(f->daemon, "alice", 0);
	for (guint i = 0; i < 2; i++) {
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		assert_no_quota_headers(r);
	}
	g_assert_cmpuint(used(f, "alice"), ==, 6);
	g_assert_cmpuint(usage_u64(f, "alice", "quota"), ==, 0);
	{
		/* an owner never seen has nothing used */
		g_autoptr(GVariant) v = get_usage(f, "nobody");
		guint64 n = 99;
		g_assert_true(g_variant_lookup(v, "requests", "t", &n));
		g_assert_cmpuint(n, ==, 0);
	}
}

#define DEFAULT_QUOTA_CONFIG "[quota]\ndefault_monthly_requests=2\n"

static void
test_config_default(Fixture *f, gconstpointer data)
{
	gboolean is_default = FALSE;

	for (guint i = 0; i < 2; i++) {
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		assert_quota_headers(r, 2, 1 - i);
	}
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		assert_over_quota(r);
	}
	{
		g_autoptr(GVariant) usage = get_usage(f, "alice");
		g_assert_true(g_variant_lookup(usage, "quota_is_default", "b", &is_default));
		g_assert_true(is_default);
		g_assert_cmpuint(usage_u64(f, "alice", "quota"), ==, 2);
		g_assert_cmpuint(usage_u64(f, "alice", "remaining"), ==, 0);
	}
	/* every owner gets the default */
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->other, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		assert_quota_headers(r, 2, 1);
	}
	/* an override beats it */
	confab_test_set_quota(f->daemon, "alice", 5);
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		g_autoptr(GVariant) usage = get_usage(f, "alice");
		g_assert_cmpuint(r->status, ==, 200);
		assert_quota_headers(r, 5, 2);
		g_assert_true(g_variant_lookup(usage, "quota_is_default", "b", &is_default));
		g_assert_false(is_default);
	}
	/* 0 is an override too: unlimited, whatever the default */
	confab_test_set_quota(f->daemon, "alice", 0);
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		g_autoptr(GVariant) usage = get_usage(f, "alice");
		g_assert_cmpuint(r->status, ==, 200);
		assert_no_quota_headers(r);
		g_assert_cmpuint(usage_u64(f, "alice", "quota"), ==, 0);
		g_assert_true(g_variant_lookup(usage, "quota_is_default", "b", &is_default));
		g_assert_false(is_default);
	}
	g_assert_cmpuint(used(f, "alice"), ==, 4);
}

static void
test_restart(void)
{
	g_autofree gchar *state = confab_test_make_tmpdir("quota-state");
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start_full(state, NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);

	confab_test_set_quota(daemon, "alice", 2);
	for (guint i = 0; i < 2; i++) {
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, token, agent, NULL, "before", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	g_clear_pointer(&daemon, confab_test_daemon_free);

	/* the usage and the override outlive the daemon */
	daemon = confab_test_daemon_start_full(state, NULL, NULL);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, token, agent, NULL, "after", FALSE);
		assert_over_quota(r);
		assert_quota_headers(r, 2, 0);
	}
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(GVariant) usage = NULL;
		guint64 n = 0;
		confab_dbus_admin_call_get_usage_sync(daemon->admin, "alice", &usage, NULL, &error);
		g_assert_no_error(error);
		g_assert_true(g_variant_lookup(usage, "requests", "t", &n));
		g_assert_cmpuint(n, ==, 2);
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	g_clear_pointer(&daemon, confab_test_daemon_free);
	confab_test_rm_rf(state);
}

/* ---------- requests per minute ([quota] default_rpm) ---------- */

#define RPM_1_CONFIG   "[quota]\ndefault_rpm=1\n"
#define RPM_10_CONFIG  "[quota]\ndefault_rpm=10\n[limits]\nmax_connections_per_peer=200\n"
#define RPM_100_CONFIG "[quota]\ndefault_rpm=100\n"

static ConfabTestResponse *
responses_turn(Fixture *f, const gchar *token, gboolean stream)
{
	g_autofree gchar *body =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":\"count me\",\"stream\":%s}",
			    f->agent,
			    stream ? "true" : "false");
	return confab_test_http(f->daemon, "POST", "/api/v1/responses", token, body);
}

/* "1m0s", "59.998s", "20ms": OpenAI's (Go's) durations, as milliseconds */
static gint64
parse_duration(const gchar *value)
{
	g_autoptr(GRegex) regex =
	    g_regex_new("^(?:(\\d+)m)?(\\d+)(?:\\.(\\d{1,3}))?s$|^(\\d+)ms$", 0, 0, NULL);
	g_autoptr(GMatchInfo) match = NULL;
	g_autofree gchar *m = NULL, *sec = NULL, *frac = NULL, *ms = NULL;
	gint64 total;

	g_assert_nonnull(value);
	if (!g_regex_match(regex, value, 0, &match))
		g_error("not an OpenAI duration: %s", value);
	ms = g_match_info_fetch(match, 4);
	if (ms != NULL && *ms != '\0')
		return g_ascii_strtoll(ms, NULL, 10);
	m = g_match_info_fetch(match, 1);
	sec = g_match_info_fetch(match, 2);
	frac = g_match_info_fetch(match, 3);
	total = (g_ascii_strtoll(m, NULL, 10) * 60 + g_ascii_strtoll(sec, NULL, 10)) * 1000;
	if (frac != NULL && *frac != '\0') {
		gint64 f = g_ascii_strtoll(frac, NULL, 10);
		for (gsize i = strlen(frac); i < 3; i++)
			f *= 10;
		total += f;
	}
	return total;
}

/* 429 rate_limit_exceeded, to be retried: Retry-After, retry-after-ms */
static void
assert_rate_limited(ConfabTestResponse *r, guint64 rpm)
{
	guint64 retry_ms = confab_test_header_u64(r, "retry-after-ms");
	guint64 retry_s = confab_test_header_u64(r, "Retry-After");

	confab_test_assert_error(r, 429, "rate_limit_exceeded");
	g_assert_cmpstr(confab_test_json_string(r->json, "error.type"), ==, "rate_limit_error");
	g_assert_cmpstr(confab_test_header(r, "x-should-retry"), ==, "true");
	g_assert_cmpuint(retry_ms, >=, 1);
	g_assert_cmpuint(retry_ms, <=, 60000 / rpm);
	/* whole seconds, rounded up */
	g_assert_cmpuint(retry_s, ==, (retry_ms + 999) / 1000);
	g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, rpm);
	g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-remaining-requests"), ==, 0);
	g_assert_cmpint(parse_duration(confab_test_header(r, "x-ratelimit-reset-requests")),
			<=,
			60000);
}

static void
test_rate_headers(Fixture *f, gconstpointer data)
{
	/* rpm 1: the first request of each owner is the burst; the window
	 * is whole again a minute after it, whatever the machine's speed */
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, 1);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-remaining-requests"),
				 ==,
				 0);
		g_assert_cmpstr(confab_test_header(r, "x-ratelimit-reset-requests"), ==, "1m0s");
		g_assert_null(confab_test_header(r, "Retry-After"));
	}
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, TRUE);
		assert_rate_limited(r, 1);
	}
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		assert_rate_limited(r, 1);
	}
	/* the other door, streamed: the same headers; another owner's rate */
	{
		g_autoptr(ConfabTestResponse) r = responses_turn(f, f->other, TRUE);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, 1);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-remaining-requests"),
				 ==,
				 0);
		g_assert_cmpstr(confab_test_header(r, "x-ratelimit-reset-requests"), ==, "1m0s");
	}
	{
		g_autoptr(ConfabTestResponse) r = responses_turn(f, f->other, FALSE);
		assert_rate_limited(r, 1);
	}
	/* a request the rate refuses does not count against the month */
	g_assert_cmpuint(used(f, "alice"), ==, 1);
	g_assert_cmpuint(used(f, "bob"), ==, 1);
}

typedef struct {
	Fixture *f;
	GMutex lock;
	GCond cond;
	gboolean go;
	guint ok;
	guint limited;
	guint other;
} RateRace;

static gpointer
rate_race_thread(gpointer data)
{
	RateRace *race = data;
	g_autoptr(ConfabTestResponse) r = NULL;

	g_mutex_lock(&race->lock);
	while (!race->go)
		g_cond_wait(&race->cond, &race->lock);
	g_mutex_unlock(&race->lock);
	r = confab_test_chat(race->f->daemon,
			     race->f->alice,
			     race->f->agent,
			     NULL,
			     "race",
			     g_random_boolean());
	g_mutex_lock(&race->lock);
	if (r->status == 200)
		race->ok++;
	else if (r->status == 429 &&
		 g_strcmp0(confab_test_header(r, "x-should-retry"), "true") == 0 &&
		 confab_test_header(r, "retry-after-ms") != NULL)
		race->limited++;
	else {
		g_autofree gchar *body =
		    g_strndup(g_bytes_get_data(r->body, NULL), g_bytes_get_size(r->body));
		g_test_message("unexpected: %u %s", r->status, body);
		race->other++;
	}
	g_mutex_unlock(&race->lock);
	return NULL;
}

static void
test_rate_race(Fixture *f, gconstpointer data)
{
	const guint n_threads = 100, rpm = 10;
	g_autoptr(GPtrArray) threads = g_ptr_array_new();
	RateRace race = {f};
	gint64 start, took;

	g_mutex_init(&race.lock);
	g_cond_init(&race.cond);
	for (guint i = 0; i < n_threads; i++)
		g_ptr_array_add(threads, g_thread_new("race", rate_race_thread, &race));
	start = g_get_monotonic_time();
	g_mutex_lock(&race.lock);
	race.go = TRUE;
	g_cond_broadcast(&race.cond);
	g_mutex_unlock(&race.lock);
	for (guint i = 0; i < threads->len; i++)
		g_thread_join(g_ptr_array_index(threads, i));
	took = g_get_monotonic_time() - start;

	g_test_message("rpm %u, %u at once: 200: %u, 429: %u, other: %u, in %.2f s",
		       rpm,
		       n_threads,
		       race.ok,
		       race.limited,
		       race.other,
		       took / 1e6);
	g_assert_cmpuint(race.other, ==, 0);
	g_assert_cmpuint(race.ok + race.limited, ==, n_threads);
	/* the burst is exactly rpm; a request more only for each interval
	 * (6 s) the race itself lasted, on a machine that slow */
	g_assert_cmpuint(race.ok, >=, rpm);
	g_assert_cmpuint(race.ok, <=, rpm + took / (60 * G_USEC_PER_SEC / rpm));
	if (took < 60 * G_USEC_PER_SEC / rpm)
		g_assert_cmpuint(race.ok, ==, rpm);
	g_assert_cmpuint(used(f, "alice"), ==, race.ok);
	g_mutex_clear(&race.lock);
	g_cond_clear(&race.cond);
}

static void
test_rate_and_month(Fixture *f, gconstpointer data)
{
	confab_test_set_quota(f->daemon, "alice", 2);
	{
		/* the month has fewer left than the rate: its headers */
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		assert_quota_headers(r, 2, 1);
	}
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, TRUE);
		g_assert_cmpuint(r->status, ==, 200);
		assert_quota_headers(r, 2, 0);
	}
	{
		/* a spent month stays insufficient_quota, not to be retried */
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice, FALSE);
		assert_over_quota(r);
		g_assert_null(confab_test_header(r, "retry-after-ms"));
	}
	{
		/* an owner without a quota of their own: the rate's headers */
		g_autoptr(ConfabTestResponse) r = turn(f, f->other, FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, 100);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-remaining-requests"),
				 ==,
				 99);
		g_assert_cmpstr(confab_test_header(r, "x-ratelimit-reset-requests"), ==, "600ms");
	}
	g_assert_cmpuint(used(f, "alice"), ==, 2);
}

/* ---------- turns in flight ([quota] default_max_parallel) ---------- */

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *agent;
	GMutex lock;
	GCond cond;
	guint ok;
	guint limited;
	guint other;
} Flight;

static gpointer
flight_thread(gpointer data)
{
	Flight *flight = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(flight->daemon, flight->token, flight->agent, NULL, "fly", TRUE);

	g_mutex_lock(&flight->lock);
	if (r->status == 200)
		flight->ok++;
	else if (r->status == 429 &&
		 g_strcmp0(confab_test_json_string(r->json, "error.code"), "rate_limit_exceeded") ==
		     0 &&
		 g_strcmp0(confab_test_header(r, "Retry-After"), "1") == 0)
		flight->limited++;
	else
		flight->other++;
	g_cond_broadcast(&flight->cond);
	g_mutex_unlock(&flight->lock);
	return NULL;
}

static gboolean
turn_admitted(gpointer data)
{
	Flight *flight = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(flight->daemon, flight->token, flight->agent, NULL, "after", FALSE);
	return r->status == 200;
}

static void
test_max_parallel(void)
{
	const guint n = 10;
	ConfabTestUpstream *up = confab_test_upstream_start(TRUE);
	ConfabTestDaemon *daemon = confab_test_daemon_start(
	    "[quota]\ndefault_max_parallel=2\n[limits]\nmax_connections_per_peer=200\n",
	    NULL);
	g_autofree gchar *agent = NULL;
	g_autofree gchar *token = NULL;
	g_autoptr(GPtrArray) threads = g_ptr_array_new();
	Flight flight = {daemon};
	gint64 deadline;

	agent = confab_test_create_held_agent(daemon, up);
	token = confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	flight.token = token;
	flight.agent = agent;
	g_mutex_init(&flight.lock);
	g_cond_init(&flight.cond);

	/* ten streams at once: two are admitted and wait at the upstream,
	 * which holds them; the eight others are refused at once */
	for (guint i = 0; i < n; i++)
		g_ptr_array_add(threads, g_thread_new("flight", flight_thread, &flight));
	g_assert_true(confab_test_upstream_wait_waiting(up, 2, 30000));
	deadline = g_get_monotonic_time() + 60 * G_TIME_SPAN_SECOND;
	g_mutex_lock(&flight.lock);
	while (flight.ok + flight.limited + flight.other < n - 2)
		if (!g_cond_wait_until(&flight.cond, &flight.lock, deadline))
			break;
	g_assert_cmpuint(flight.ok, ==, 0);
	g_assert_cmpuint(flight.other, ==, 0);
	g_assert_cmpuint(flight.limited, ==, n - 2);
	g_mutex_unlock(&flight.lock);

	/* the two end; their slots come back */
	confab_test_upstream_set_hold(up, FALSE);
	for (guint i = 0; i < threads->len; i++)
		g_thread_join(g_ptr_array_index(threads, i));
	g_assert_cmpuint(flight.ok, ==, 2);
	g_assert_cmpuint(flight.limited, ==, n - 2);
	g_assert_true(confab_test_wait_until(turn_admitted, &flight, 10000));
	{
		/* refused turns did not count against the month */
		g_autoptr(GError) error = NULL;
		g_autoptr(GVariant) usage = NULL;
		guint64 requests = 0;
		confab_dbus_admin_call_get_usage_sync(daemon->admin, "alice", &usage, NULL, &error);
		g_assert_no_error(error);
		g_assert_true(g_variant_lookup(usage, "requests", "t", &requests));
		g_assert_cmpuint(requests, ==, 3);
	}
	g_mutex_clear(&flight.lock);
	g_cond_clear(&flight.cond);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	confab_test_daemon_free(daemon);
	confab_test_upstream_stop(up);
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
	g_test_add("/confab/quota/headers-and-limit",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_headers_and_limit,
		   confab_test_tokens_teardown);
	g_test_add("/confab/quota/not-counted",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_not_counted,
		   confab_test_tokens_teardown);
	g_test_add("/confab/quota/concurrency",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_concurrency,
		   confab_test_tokens_teardown);
	g_test_add("/confab/quota/unlimited",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_unlimited,
		   confab_test_tokens_teardown);
	g_test_add("/confab/quota/config-default",
		   Fixture,
		   DEFAULT_QUOTA_CONFIG,
		   fixture_setup,
		   test_config_default,
		   confab_test_tokens_teardown);
	g_test_add_func("/confab/quota/restart", test_restart);
	g_test_add("/confab/quota/rate-headers",
		   Fixture,
		   RPM_1_CONFIG,
		   fixture_setup,
		   test_rate_headers,
		   confab_test_tokens_teardown);
	g_test_add("/confab/quota/rate-race",
		   Fixture,
		   RPM_10_CONFIG,
		   fixture_setup,
		   test_rate_race,
		   confab_test_tokens_teardown);
	g_test_add_func("/confab/quota/max-parallel", test_max_parallel);
	g_test_add("/confab/quota/rate-and-month",
		   Fixture,
		   RPM_100_CONFIG,
		   fixture_setup,
		   test_rate_and_month,
		   confab_test_tokens_teardown);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
