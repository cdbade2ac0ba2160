/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * Limits per owner and per token (issue 30), against a real confabd on
 * either store: D-Bus SetLimits and GetLimits and every bad input, a
 * token's rate tighter than its owner's, a token's turns in flight, a
 * restart, and D-Bus Chat.Send under its caller's limits; the usage per
 * owner, token and agent (D-Bus ListUsage, GetUsage).
 */

/* f->other is alice's second token */
typedef ConfabTestTokens Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	confab_test_tokens_start(f, data, "alice");
}

/* ---------- helpers ---------- */

static void
set_limits(ConfabTestDaemon *daemon, const gchar *kind, const gchar *id, GVariant *limits)
{
	g_autoptr(GError) error = NULL;
	confab_dbus_admin_call_set_limits_sync(daemon->admin, kind, id, limits, NULL, &error);
	g_assert_no_error(error);
}

static GVariant *
get_limits(ConfabTestDaemon *daemon, const gchar *kind, const gchar *id)
{
	g_autoptr(GError) error = NULL;
	GVariant *limits = NULL;
	confab_dbus_admin_call_get_limits_sync(daemon->admin, kind, id, &limits, NULL, &error);
	g_assert_no_error(error);
	return limits;
}

static GVariant *
limits_rpm(guint64 rpm)
{
	GVariantDict dict;
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "rpm", "t", rpm);
	return g_variant_dict_end(&dict);
}

static void
assert_limits(GVariant *limits, guint64 rpm, guint64 tpm, guint32 max_parallel, guint64 monthly)
{
	guint64 t = G_MAXUINT64;
	guint32 u = G_MAXUINT32;

	g_assert_true(g_variant_lookup(limits, "rpm", "t", &t));
	g_assert_cmpuint(t, ==, rpm);
	g_assert_true(g_variant_lookup(limits, "tpm", "t", &t));
	g_assert_cmpuint(t, ==, tpm);
	g_assert_true(g_variant_lookup(limits, "max_parallel", "u", &u));
	g_assert_cmpuint(u, ==, max_parallel);
	g_assert_true(g_variant_lookup(limits, "monthly_tokens", "t", &t));
	g_assert_cmpuint(t, ==, monthly);
}

static ConfabTestResponse *
turn(Fixture *f, const gchar *token)
{
	return confab_test_chat(f->daemon, token, f->agent, NULL, "limit me", FALSE);
}

static void
assert_rate_limited(ConfabTestResponse *r, guint64 rpm)
{
	confab_test_assert_error(r, 429, "rate_limit_exceeded");
	g_assert_cmpstr(confab_test_header(r, "x-should-retry"), ==, "true");
	g_assert_nonnull(confab_test_header(r, "retry-after-ms"));
	g_assert_nonnull(confab_test_header(r, "Retry-After"));
	g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, rpm);
	g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-remaining-requests"), ==, 0);
}

/* ---------- tests ---------- */

/* SetLimits, then GetLimits: what was set, 0 where nothing was; a key not
 * given stays; 0 removes one */
static void
test_round_trip(Fixture *f, gconstpointer data)
{
	g_autoptr(GVariant) none = get_limits(f->daemon, "owner", "alice");
	g_autoptr(GVariant) owner = NULL;
	g_autoptr(GVariant) token = NULL;
	g_autoptr(GVariant) kept = NULL;
	g_autoptr(GVariant) removed = NULL;
	GVariantDict dict;

	assert_limits(none, 0, 0, 0, 0);
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "rpm", "t", (guint64)60);
	g_variant_dict_insert(&dict, "tpm", "t", (guint64)100000);
	g_variant_dict_insert(&dict, "max_parallel", "u", (guint32)4);
	g_variant_dict_insert(&dict, "monthly_tokens", "t", (guint64)5000000000);
	set_limits(f->daemon, "owner", "alice", g_variant_dict_end(&dict));
	owner = get_limits(f->daemon, "owner", "alice");
	assert_limits(owner, 60, 100000, 4, 5000000000);

	set_limits(f->daemon, "token", f->alice_id, limits_rpm(6));
	token = get_limits(f->daemon, "token", f->alice_id);
	assert_limits(token, 6, 0, 0, 0);

	/* only rpm given: the others stay */
	set_limits(f->daemon, "owner", "alice", limits_rpm(30));
	kept = get_limits(f->daemon, "owner", "alice");
	assert_limits(kept, 30, 100000, 4, 5000000000);

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "tpm", "t", (guint64)0);
	g_variant_dict_insert(&dict, "max_parallel", "u", (guint32)0);
	set_limits(f->daemon, "owner", "alice", g_variant_dict_end(&dict));
	removed = get_limits(f->daemon, "owner", "alice");
	assert_limits(removed, 30, 0, 0, 5000000000);
}

/* every bad input: a clear InvalidArgument, and nothing changed */
static void
test_bad_input(Fixture *f, gconstpointer data)
{
	g_autofree gchar *revoked_id = NULL;
	g_autofree gchar *revoked = NULL;
	g_autoptr(GVariant) after = NULL;
	g_autoptr(GVariant) token_after = NULL;
	GVariantDict dict;
	struct {
		const gchar *kind;
		const gchar *id;
		const gchar *key;
		GVariant *value;
		const gchar *says;
	} cases[] = {
	    {"group", "alice", "rpm", g_variant_new_uint64(1), "owner' or 'token"},
	    {"owner", "", "rpm", g_variant_new_uint64(1), "owner"},
	    {"owner", "nobody-has-this-name", "rpm", g_variant_new_uint64(1), "No owner"},
	    {"token", "tok_nosuchtoken000000000000", "rpm", g_variant_new_uint64(1), "No token"},
	    {"token", NULL, "rpm", g_variant_new_uint64(1), "revoked"},
	    {"owner", "alice", "rpms", g_variant_new_uint64(1), "Unknown key"},
	    {"owner", "alice", "rpm", g_variant_new_int32(-1), "uint64"},
	    {"owner", "alice", "rpm", g_variant_new_string("10"), "uint64"},
	    {"owner", "alice", "max_parallel", g_variant_new_uint64(2), "uint32"},
	    {"owner", "alice", "tpm", g_variant_new_double(1.5), "uint64"},
	    {"owner", "alice", "rpm", g_variant_new_uint64(G_MAXUINT64), "too large"},
	};

	revoked =
	    confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, &revoked_id);
	{
		g_autoptr(GError) error = NULL;
		confab_dbus_admin_call_revoke_token_sync(f->daemon->admin,
							 revoked_id,
							 NULL,
							 &error);
		g_assert_no_error(error);
	}
	cases[4].id = revoked_id;
	set_limits(f->daemon, "owner", "alice", limits_rpm(7));
	set_limits(f->daemon, "token", f->alice_id, limits_rpm(5));

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;
		g_autofree gchar *remote = NULL;

		g_variant_dict_init(&dict, NULL);
		/* a good key beside the bad one: not applied either */
		g_variant_dict_insert(&dict, "monthly_tokens", "t", (guint64)99);
		g_variant_dict_insert_value(&dict, cases[i].key, cases[i].value);
		confab_dbus_admin_call_set_limits_sync(f->daemon->admin,
						       cases[i].kind,
						       cases[i].id,
						       g_variant_dict_end(&dict),
						       NULL,
						       &error);
		g_test_message("case %u: %s", i, error != NULL ? error->message : "(no error)");
		g_assert_nonnull(error);
		remote = g_dbus_error_get_remote_error(error);
		g_assert_cmpstr(remote, ==, "org.confab.Confab1.Error.InvalidArgument");
		g_assert_nonnull(strstr(error->message, cases[i].says));
	}
	after = get_limits(f->daemon, "owner", "alice");
	assert_limits(after, 7, 0, 0, 0);
	token_after = get_limits(f->daemon, "token", f->alice_id);
	assert_limits(token_after, 5, 0, 0, 0);
	{
		/* GetLimits: an unknown kind, owner or token is an error too */
		g_autoptr(GError) error = NULL;
		g_autoptr(GVariant) limits = NULL;
		g_autofree gchar *remote = NULL;
		confab_dbus_admin_call_get_limits_sync(f->daemon->admin,
						       "token",
						       "tok_nosuchtoken000000000000",
						       &limits,
						       NULL,
						       &error);
		g_assert_nonnull(error);
		remote = g_dbus_error_get_remote_error(error);
		g_assert_cmpstr(remote, ==, "org.confab.Confab1.Error.InvalidArgument");
	}
}

/* a token's rate tighter than its owner's: the token's holds, with its
 * headers; the owner's other token keeps the owner's rate */
static void
test_token_rpm(Fixture *f, gconstpointer data)
{
	set_limits(f->daemon, "owner", "alice", limits_rpm(100));
	set_limits(f->daemon, "token", f->alice_id, limits_rpm(2));
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, 2);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-remaining-requests"),
				 ==,
				 1);
	}
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-remaining-requests"),
				 ==,
				 0);
	}
	for (guint i = 0; i < 2; i++) {
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice);
		assert_rate_limited(r, 2);
		g_assert_cmpuint(confab_test_header_u64(r, "retry-after-ms"), <=, 30000);
	}
	/* the other token: the owner's 100, of which 2 are spent */
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->other);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, 100);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-remaining-requests"),
				 ==,
				 97);
	}
	/* the other door, the same token: refused */
	{
		g_autofree gchar *body =
		    g_strdup_printf("{\"model\":\"%s\",\"input\":\"limit me\",\"stream\":true}",
				    f->agent);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "POST", "/api/v1/responses", f->alice, body);
		assert_rate_limited(r, 2);
	}
	/* an owner's rate tighter than its token's holds too */
	set_limits(f->daemon, "owner", "alice", limits_rpm(1));
	set_limits(f->daemon, "token", f->other_id, limits_rpm(50));
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->other);
		assert_rate_limited(r, 1);
	}
}

/* a stored owner's rate replaces `[quota] default_rpm`; 0 gives the default
 * back */
static void
test_owner_over_default(Fixture *f, gconstpointer data)
{
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, 1000);
	}
	set_limits(f->daemon, "owner", "alice", limits_rpm(3));
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, 3);
	}
	set_limits(f->daemon, "owner", "alice", limits_rpm(0));
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, 1000);
	}
}

/* a token's turns in flight: one at a time for it, while its owner's other
 * token still runs */
typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *agent;
	guint status;
} Flight;

static gpointer
flight_thread(gpointer data)
{
	Flight *flight = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(flight->daemon, flight->token, flight->agent, NULL, "fly", TRUE);
	flight->status = r->status;
	return NULL;
}

static void
test_token_parallel(void)
{
	ConfabTestUpstream *up = confab_test_upstream_start(TRUE);
	ConfabTestDaemon *daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *agent = NULL;
	g_autofree gchar *one_id = NULL;
	g_autofree gchar *one =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, &one_id);
	g_autofree gchar *other =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	Flight first = {daemon, one}, second = {daemon, other};
	GThread *t1, *t2;
	GVariantDict dict;

	agent = confab_test_create_held_agent(daemon, up);
	first.agent = second.agent = agent;
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "max_parallel", "u", (guint32)1);
	set_limits(daemon, "token", one_id, g_variant_dict_end(&dict));

	t1 = g_thread_new("first", flight_thread, &first);
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));
	{
		/* the token's one slot is taken: refused at once */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, one, agent, NULL, "second", TRUE);
		confab_test_assert_error(r, 429, "rate_limit_exceeded");
		g_assert_cmpstr(confab_test_header(r, "Retry-After"), ==, "1");
	}
	/* the owner's other token has no such limit */
	t2 = g_thread_new("second", flight_thread, &second);
	g_assert_true(confab_test_upstream_wait_waiting(up, 2, 30000));
	confab_test_upstream_set_hold(up, FALSE);
	g_thread_join(t1);
	g_thread_join(t2);
	g_assert_cmpuint(first.status, ==, 200);
	g_assert_cmpuint(second.status, ==, 200);
	{
		/* the slot came back when the turn ended */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, one, agent, NULL, "again", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	confab_test_daemon_free(daemon);
	confab_test_upstream_stop(up);
}

/* D-Bus Chat.Send: the caller's user is the owner; its limits hold */
static void
test_chat_send(Fixture *f, gconstpointer data)
{
	const gchar *me = g_get_user_name();
	g_autofree gchar *session = NULL;
	g_autofree gchar *reply = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *remote = NULL;

	set_limits(f->daemon, "owner", me, limits_rpm(1));
	confab_dbus_chat_call_send_sync(f->daemon->chat,
					f->agent,
					"",
					"first",
					&session,
					&reply,
					NULL,
					&error);
	g_assert_no_error(error);
	g_clear_pointer(&session, g_free);
	g_clear_pointer(&reply, g_free);
	confab_dbus_chat_call_send_sync(f->daemon->chat,
					f->agent,
					"",
					"second",
					&session,
					&reply,
					NULL,
					&error);
	g_assert_nonnull(error);
	remote = g_dbus_error_get_remote_error(error);
	g_assert_cmpstr(remote, ==, "org.confab.Confab1.Error.RateLimited");
	g_assert_nonnull(strstr(error->message, "1 requests per minute"));
	/* another owner is not limited by it */
	{
		g_autoptr(ConfabTestResponse) r = turn(f, f->alice);
		g_assert_cmpuint(r->status, ==, 200);
	}
}

/* a restart keeps the limits, and they still hold */
static void
test_restart(void)
{
	g_autofree gchar *state = confab_test_make_tmpdir("limits-state");
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start_full(state, NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *token_id = NULL;
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, &token_id);
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "rpm", "t", (guint64)1);
	g_variant_dict_insert(&dict, "max_parallel", "u", (guint32)3);
	set_limits(daemon, "token", token_id, g_variant_dict_end(&dict));
	set_limits(daemon, "owner", "alice", limits_rpm(500));
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	g_clear_pointer(&daemon, confab_test_daemon_free);

	daemon = confab_test_daemon_start_full(state, NULL, NULL);
	{
		g_autoptr(GVariant) limits = get_limits(daemon, "token", token_id);
		g_autoptr(GVariant) owner = get_limits(daemon, "owner", "alice");
		assert_limits(limits, 1, 0, 3, 0);
		assert_limits(owner, 500, 0, 0, 0);
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, token, agent, NULL, "after", FALSE);
		g_autoptr(ConfabTestResponse) over =
		    confab_test_chat(daemon, token, agent, NULL, "after", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-requests"), ==, 1);
		assert_rate_limited(over, 1);
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	g_clear_pointer(&daemon, confab_test_daemon_free);
	confab_test_rm_rf(state);
}

/* ---------- tokens ---------- */

static GVariant *
limits_tokens(guint64 tpm, guint64 monthly)
{
	GVariantDict dict;
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "tpm", "t", tpm);
	g_variant_dict_insert(&dict, "monthly_tokens", "t", monthly);
	return g_variant_dict_end(&dict);
}

/* a new conversation saying "hi" with max_tokens @max: it reserves
 * HI_INPUT tokens for its input (a quarter of the bytes of its content as
 * stored, [{"type":"text","text":"hi"}], plus four) and @max */
static ConfabTestResponse *
hi(ConfabTestDaemon *daemon, const gchar *token, const gchar *agent, gint64 max)
{
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	    "\"max_tokens\":%" G_GINT64_FORMAT "}",
	    agent,
	    max);
	return confab_test_http(daemon, "POST", "/api/v1/chat/completions", token, body);
}

#define HI_INPUT ((29 + 16 + 3) / 4)

/* "1m0s", "59.998s", "20ms": OpenAI's (Go's) durations */
static gboolean
is_duration(const gchar *value)
{
	return value != NULL &&
	       g_regex_match_simple("^(\\d+h)?(\\d+m)?\\d+(\\.\\d{1,3})?s$|^\\d+ms$", value, 0, 0);
}

/* tokens per minute: a call that cannot fit is refused; one that fits has
 * the x-ratelimit-*-tokens headers */
static void
test_tpm(Fixture *f, gconstpointer data)
{
	set_limits(f->daemon, "token", f->alice_id, limits_tokens(100, 0));
	{
		/* 12 + 200 tokens never fit a bucket of 100 */
		g_autoptr(ConfabTestResponse) r = hi(f->daemon, f->alice, f->agent, 200);
		confab_test_assert_error(r, 429, "rate_limit_exceeded");
		g_assert_cmpstr(confab_test_header(r, "x-should-retry"), ==, "true");
		g_assert_cmpuint(confab_test_header_u64(r, "retry-after-ms"), >=, 1);
		g_assert_nonnull(confab_test_header(r, "Retry-After"));
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-tokens"), ==, 100);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-remaining-tokens"), ==, 0);
		g_assert_true(is_duration(confab_test_header(r, "x-ratelimit-reset-tokens")));
	}
	{
		/* the Responses door: max_output_tokens */
		g_autofree gchar *body =
		    g_strdup_printf("{\"model\":\"%s\",\"input\":\"hi\",\"max_output_tokens\":500}",
				    f->agent);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "POST", "/api/v1/responses", f->alice, body);
		confab_test_assert_error(r, 429, "rate_limit_exceeded");
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-tokens"), ==, 100);
	}
	{
		/* 12 + 20 fit: 68 of 100 left, or more (the bucket refills) */
		g_autoptr(ConfabTestResponse) r = hi(f->daemon, f->alice, f->agent, 20);
		guint64 remaining;
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(confab_test_header_u64(r, "x-ratelimit-limit-tokens"), ==, 100);
		remaining = confab_test_header_u64(r, "x-ratelimit-remaining-tokens");
		g_assert_cmpuint(remaining, >=, 100 - HI_INPUT - 20);
		g_assert_cmpuint(remaining, <=, 100);
		g_assert_true(is_duration(confab_test_header(r, "x-ratelimit-reset-tokens")));
	}
	/* the owner's other token has no such rate: no tokens headers */
	{
		g_autoptr(ConfabTestResponse) r = hi(f->daemon, f->other, f->agent, 200);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_null(confab_test_header(r, "x-ratelimit-limit-tokens"));
	}
}

static gint64
total_tokens(ConfabTestResponse *r)
{
	JsonNode *node = confab_test_json_get(r->json, "usage.total_tokens");
	g_assert_nonnull(node);
	return json_node_get_int(node);
}

/* a month's budget: what is left after @used tokens of @budget is exactly
 * what a new "hi" may reserve: one token more is refused. Returns the
 * tokens the one admitted used (settled: the rest was given back). */
static gint64
assert_budget_left(ConfabTestDaemon *daemon,
		   const gchar *token,
		   const gchar *agent,
		   gint64 budget,
		   gint64 used)
{
	gint64 fits = budget - used - HI_INPUT;
	g_autoptr(ConfabTestResponse) over = NULL;
	g_autoptr(ConfabTestResponse) ok = NULL;

	g_assert_cmpint(fits, >, 0);
	over = hi(daemon, token, agent, fits + 1);
	confab_test_assert_error(over, 429, "insufficient_quota");
	g_assert_cmpstr(confab_test_header(over, "x-should-retry"), ==, "false");
	ok = hi(daemon, token, agent, fits);
	g_assert_cmpuint(ok->status, ==, 200);
	return total_tokens(ok);
}

static gchar *
tool_agent(ConfabTestDaemon *daemon)
{
	g_autofree gchar *servers =
	    g_strdup_printf("{\"mcpServers\":{\"fake\":{\"command\":\"%s\"}}}",
			    g_getenv("CONFAB_FAKE_MCP"));
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "hands");
	g_variant_dict_insert(&dict, "provider", "s", "echo");
	g_variant_dict_insert(&dict, "mcp_servers", "s", servers);
	return confab_test_create_agent_props(daemon, g_variant_dict_end(&dict));
}

/* a month's tokens: a turn of the agent loop (two model calls) reserves
 * each call and settles it to what was used; a restart keeps the count;
 * the budget spent refuses with insufficient_quota; a token's own budget */
static void
test_monthly_tokens(void)
{
	const gint64 budget = 5000;
	g_autofree gchar *state = confab_test_make_tmpdir("limits-tokens");
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start_full(state, NULL, NULL);
	g_autofree gchar *agent = tool_agent(daemon);
	g_autofree gchar *token_id = NULL;
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, &token_id);
	g_autofree gchar *body = NULL;
	g_autoptr(ConfabTestResponse) loop = NULL;
	gint64 used;

	set_limits(daemon, "owner", "alice", limits_tokens(0, budget));
	/* two calls: the tool call, then the answer after its result; each
	 * reserved 1024 for its answer, far more than it used */
	body = g_strdup_printf("{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":"
			       "\"/tool fake__echo {\\\"text\\\":\\\"hello from a tool\\\"}\"}]}",
			       agent);
	loop = confab_test_http(daemon, "POST", "/api/v1/chat/completions", token, body);
	g_assert_cmpuint(loop->status, ==, 200);
	used = total_tokens(loop);
	g_assert_cmpint(used, >, 0);
	g_assert_cmpint(used, <, 200);
	/* settled: the reservations' rest came back, exactly */
	used += assert_budget_left(daemon, token, agent, budget, used);

	/* a restart keeps the count */
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	g_clear_pointer(&daemon, confab_test_daemon_free);
	daemon = confab_test_daemon_start_full(state, NULL, NULL);
	used += assert_budget_left(daemon, token, agent, budget, used);
	/* spent: insufficient_quota, not to be retried */
	set_limits(daemon, "owner", "alice", limits_tokens(0, (guint64)used));
	{
		g_autoptr(ConfabTestResponse) r = hi(daemon, token, agent, 1);
		confab_test_assert_error(r, 429, "insufficient_quota");
		g_assert_cmpstr(confab_test_header(r, "x-should-retry"), ==, "false");
		g_assert_null(confab_test_header(r, "Retry-After"));
	}
	/* the token's own budget holds too, the tighter; it counts the
	 * month's tokens from before it was set (every turn here was the
	 * token's) */
	set_limits(daemon, "owner", "alice", limits_tokens(0, 0));
	set_limits(daemon, "token", token_id, limits_tokens(0, (guint64)used + 30));
	{
		g_autoptr(ConfabTestResponse) r = hi(daemon, token, agent, 30);
		confab_test_assert_error(r, 429, "insufficient_quota");
	}
	assert_budget_left(daemon, token, agent, used + 30, used);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	g_clear_pointer(&daemon, confab_test_daemon_free);
	confab_test_rm_rf(state);
}

/* ---------- usage per owner, token and agent ---------- */

/* an openai agent on the fake upstream, answering "plain" with its usage:
 * 42 input tokens, 17 output tokens of which 5 reasoning */
static gchar *
fake_agent(ConfabTestDaemon *daemon, ConfabTestFakeUpstream *up, const gchar *name)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", name);
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", up->base_url);
	g_variant_dict_insert(&dict, "upstream_model", "s", "plain");
	g_variant_dict_insert(&dict, "api_key", "s", "sk-fake-usage");
	return confab_test_create_agent_props(daemon, g_variant_dict_end(&dict));
}

static GVariant *
list_usage(ConfabTestDaemon *daemon, const gchar *by, const gchar *month, const gchar *owner)
{
	g_autoptr(GError) error = NULL;
	GVariant *rows = NULL;
	GVariantDict filter;

	g_variant_dict_init(&filter, NULL);
	if (by != NULL)
		g_variant_dict_insert(&filter, "by", "s", by);
	if (month != NULL)
		g_variant_dict_insert(&filter, "month", "s", month);
	if (owner != NULL)
		g_variant_dict_insert(&filter, "owner", "s", owner);
	confab_dbus_admin_call_list_usage_sync(daemon->admin,
					       g_variant_dict_end(&filter),
					       &rows,
					       NULL,
					       &error);
	g_assert_no_error(error);
	return rows;
}

/* the row of @rows whose @key is @id has @turns turns of the fake's usage */
static void
assert_use(GVariant *rows, const gchar *key, const gchar *id, guint64 turns)
{
	for (gsize i = 0; i < g_variant_n_children(rows); i++) {
		g_autoptr(GVariant) row = g_variant_get_child_value(rows, i);
		guint64 n = G_MAXUINT64;

		if (g_strcmp0(confab_test_variant_string(row, key), id) != 0)
			continue;
		g_assert_true(g_variant_lookup(row, "requests", "t", &n));
		g_assert_cmpuint(n, ==, turns);
		g_assert_true(g_variant_lookup(row, "input_tokens", "t", &n));
		g_assert_cmpuint(n, ==, 42 * turns);
		g_assert_true(g_variant_lookup(row, "output_tokens", "t", &n));
		g_assert_cmpuint(n, ==, 17 * turns);
		g_assert_true(g_variant_lookup(row, "reasoning_tokens", "t", &n));
		g_assert_cmpuint(n, ==, 5 * turns);
		g_assert_cmpuint(strlen(confab_test_variant_string(row, "month")), ==, 7);
		return;
	}
	g_error("no usage row with %s %s", key, id);
}

static ConfabTestResponse *
respond(ConfabTestDaemon *daemon, const gchar *token, const gchar *agent, gboolean stream)
{
	g_autofree gchar *body =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":\"hi\",\"stream\":%s}",
			    agent,
			    stream ? "true" : "false");
	return confab_test_http(daemon, "POST", "/api/v1/responses", token, body);
}

/* what the usage of an owner, a token and an agent is after JSON and
 * streamed turns of both doors and D-Bus Chat.Send, each of the fake's
 * usage: summed by owner, token and agent, of one owner, of a month; the
 * same after a restart */
static void
test_usage(void)
{
	g_autoptr(ConfabTestFakeUpstream) up = confab_test_fake_upstream_start();
	g_autofree gchar *state = confab_test_make_tmpdir("limits-usage");
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start_full(state, NULL, NULL);
	g_autofree gchar *a = fake_agent(daemon, up, "a");
	g_autofree gchar *b = fake_agent(daemon, up, "b");
	g_autofree gchar *t1_id = NULL;
	g_autofree gchar *t2_id = NULL;
	g_autofree gchar *t3_id = NULL;
	g_autofree gchar *t1 =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, &t1_id);
	g_autofree gchar *t2 =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, &t2_id);
	g_autofree gchar *t3 =
	    confab_test_create_token(daemon, "bob", "chat.completions", NULL, &t3_id);
	const gchar *me = g_get_user_name();

	{
		g_autoptr(ConfabTestResponse) json =
		    confab_test_chat(daemon, t1, a, NULL, "hi", FALSE);
		g_autoptr(ConfabTestResponse) sse =
		    confab_test_chat(daemon, t1, a, NULL, "hi", TRUE);
		g_autoptr(ConfabTestResponse) rjson = respond(daemon, t2, b, FALSE);
		g_autoptr(ConfabTestResponse) rsse = respond(daemon, t3, b, TRUE);
		g_autofree gchar *session = NULL;
		g_autofree gchar *reply = NULL;
		g_autoptr(GError) error = NULL;

		g_assert_cmpuint(json->status, ==, 200);
		g_assert_cmpint(confab_test_json_int(json->json, "usage.prompt_tokens"), ==, 42);
		/* the answers say the reasoning tokens the upstream reported */
		g_assert_cmpint(
		    confab_test_json_int(json->json,
					 "usage.completion_tokens_details.reasoning_tokens"),
		    ==,
		    5);
		g_assert_cmpuint(sse->status, ==, 200);
		g_assert_cmpuint(rjson->status, ==, 200);
		g_assert_cmpint(
		    confab_test_json_int(rjson->json,
					 "usage.output_tokens_details.reasoning_tokens"),
		    ==,
		    5);
		g_assert_cmpuint(rsse->status, ==, 200);
		confab_dbus_chat_call_send_sync(daemon->chat,
						a,
						"",
						"hi",
						&session,
						&reply,
						NULL,
						&error);
		g_assert_no_error(error);
	}
	for (guint round = 0; round < 2; round++) {
		g_autoptr(GVariant) owners = list_usage(daemon, NULL, NULL, NULL);
		g_autoptr(GVariant) tokens = list_usage(daemon, "token", NULL, NULL);
		g_autoptr(GVariant) agents = list_usage(daemon, "agent", NULL, NULL);
		g_autoptr(GVariant) alice = list_usage(daemon, "agent", NULL, "alice");
		g_autoptr(GVariant) old = list_usage(daemon, "owner", "2001-01", NULL);
		g_autoptr(GVariant) usage = NULL;
		g_autoptr(GError) error = NULL;
		guint64 n = 0;

		g_assert_cmpuint(g_variant_n_children(owners), ==, 3);
		assert_use(owners, "owner", "alice", 3);
		assert_use(owners, "owner", "bob", 1);
		assert_use(owners, "owner", me, 1);
		g_assert_cmpuint(g_variant_n_children(tokens), ==, 4);
		assert_use(tokens, "token_id", t1_id, 2);
		assert_use(tokens, "token_id", t2_id, 1);
		assert_use(tokens, "token_id", t3_id, 1);
		assert_use(tokens, "token_id", "", 1); /* Chat.Send: no token */
		g_assert_cmpuint(g_variant_n_children(agents), ==, 2);
		assert_use(agents, "agent_id", a, 3);
		assert_use(agents, "agent_id", b, 2);
		g_assert_cmpuint(g_variant_n_children(alice), ==, 2);
		assert_use(alice, "agent_id", a, 2);
		assert_use(alice, "agent_id", b, 1);
		g_assert_cmpuint(g_variant_n_children(old), ==, 0);

		/* GetUsage: the month's tokens beside its requests */
		confab_dbus_admin_call_get_usage_sync(daemon->admin, "alice", &usage, NULL, &error);
		g_assert_no_error(error);
		g_assert_true(g_variant_lookup(usage, "requests", "t", &n));
		g_assert_cmpuint(n, ==, 3);
		g_assert_true(g_variant_lookup(usage, "input_tokens", "t", &n));
		g_assert_cmpuint(n, ==, 3 * 42);
		g_assert_true(g_variant_lookup(usage, "output_tokens", "t", &n));
		g_assert_cmpuint(n, ==, 3 * 17);
		g_assert_true(g_variant_lookup(usage, "reasoning_tokens", "t", &n));
		g_assert_cmpuint(n, ==, 3 * 5);

		/* a restart keeps it all */
		g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
		g_clear_pointer(&daemon, confab_test_daemon_free);
		daemon = confab_test_daemon_start_full(state, NULL, NULL);
	}
	{
		/* bad filters change nothing and say why */
		const gchar *bad[][2] = {{"by", "model"}, {"month", "2026-13"}, {"month", "May"}};
		for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
			g_autoptr(GError) error = NULL;
			g_autoptr(GVariant) rows = NULL;
			GVariantDict filter;

			g_variant_dict_init(&filter, NULL);
			g_variant_dict_insert(&filter, bad[i][0], "s", bad[i][1]);
			confab_dbus_admin_call_list_usage_sync(daemon->admin,
							       g_variant_dict_end(&filter),
							       &rows,
							       NULL,
							       &error);
			g_assert_nonnull(error);
			g_assert_nonnull(strstr(error->message, bad[i][0]));
		}
	}
	{
		/* the reasoning tokens are in the metrics too */
		g_autofree gchar *scraper =
		    confab_test_create_token(daemon, "prometheus", "metrics.read", NULL, NULL);
		g_autoptr(ConfabTestResponse) r = NULL;
		g_autofree gchar *text = NULL;

		{
			g_autoptr(ConfabTestResponse) turn =
			    confab_test_chat(daemon, t1, a, NULL, "hi", FALSE);
			g_assert_cmpuint(turn->status, ==, 200);
		}
		r = confab_test_http(daemon, "GET", "/metrics", scraper, NULL);
		g_assert_cmpuint(r->status, ==, 200);
		text = g_strndup(g_bytes_get_data(r->body, NULL), g_bytes_get_size(r->body));
		g_assert_nonnull(strstr(text, "direction=\"reasoning\"} 5"));
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	g_clear_pointer(&daemon, confab_test_daemon_free);
	confab_test_rm_rf(state);
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
	g_test_add("/confab/limits/round-trip",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_round_trip,
		   confab_test_tokens_teardown);
	g_test_add("/confab/limits/bad-input",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_bad_input,
		   confab_test_tokens_teardown);
	g_test_add("/confab/limits/token-rpm",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_token_rpm,
		   confab_test_tokens_teardown);
	g_test_add("/confab/limits/owner-over-default",
		   Fixture,
		   "[quota]\ndefault_rpm=1000\n",
		   fixture_setup,
		   test_owner_over_default,
		   confab_test_tokens_teardown);
	g_test_add_func("/confab/limits/token-parallel", test_token_parallel);
	g_test_add("/confab/limits/chat-send",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_chat_send,
		   confab_test_tokens_teardown);
	g_test_add_func("/confab/limits/restart", test_restart);
	g_test_add("/confab/limits/tpm",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_tpm,
		   confab_test_tokens_teardown);
	g_test_add_func("/confab/limits/monthly-tokens", test_monthly_tokens);
	g_test_add_func("/confab/limits/usage", test_usage);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
