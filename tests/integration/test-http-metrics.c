/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * GET /metrics against a real confabd: who may scrape, that the text is
 * valid Prometheus exposition (promtool check metrics, when installed),
 * that the counters move by exactly what was done, and that nothing a
 * user sent ever shows up in a label.
 */

#define USER_TEXT "Zebra-Quokka-4711 secret words"

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent;
	gchar *chat_token;
	gchar *metrics_token;
} Fixture;

static void
fixture_setup_with(Fixture *f, const gchar *config)
{
	f->daemon = confab_test_daemon_start(config, NULL);
	f->agent = confab_test_create_agent(f->daemon, "echo", "echo");
	f->chat_token =
	    confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
	f->metrics_token =
	    confab_test_create_token(f->daemon, "prometheus", "metrics.read", NULL, NULL);
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	fixture_setup_with(f, data);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	g_free(f->agent);
	g_free(f->chat_token);
	g_free(f->metrics_token);
}

/* ---------- scraping ---------- */

static gchar *
scrape(Fixture *f)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(f->daemon, "GET", "/metrics", f->metrics_token, NULL);
	gsize len;
	const gchar *body;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(soup_message_headers_get_one(r->headers, "Content-Type"),
			==,
			"text/plain; version=0.0.4; charset=utf-8");
	body = g_bytes_get_data(r->body, &len);
	g_assert_true(g_utf8_validate(body, len, NULL));
	return g_strndup(body, len);
}

/* The value of the sample written exactly @sample ("name{labels}"), or -1. */
static gdouble
sample(const gchar *text, const gchar *name_and_labels)
{
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	gsize len = strlen(name_and_labels);

	for (guint i = 0; lines[i] != NULL; i++)
		if (strncmp(lines[i], name_and_labels, len) == 0 && lines[i][len] == ' ')
			return g_ascii_strtod(lines[i] + len + 1, NULL);
	return -1;
}

static gdouble
sample_printf(const gchar *text, const gchar *format, ...) G_GNUC_PRINTF(2, 3);

static gdouble
sample_printf(const gchar *text, const gchar *format, ...)
{
	g_autofree gchar *name = NULL;
	va_list args;

	va_start(args, format);
	name = g_strdup_vprintf(format, args);
	va_end(args);
	return sample(text, name);
}

/* promtool check metrics, when Debian's prometheus package is installed */
static void
assert_promtool_accepts(const gchar *text)
{
	g_autofree gchar *promtool = g_find_program_in_path("promtool");
	g_autoptr(GSubprocessLauncher) launcher = NULL;
	g_autoptr(GSubprocess) proc = NULL;
	g_autofree gchar *out = NULL;
	g_autoptr(GError) error = NULL;

	if (promtool == NULL) {
		g_test_message("promtool is not installed: the format is not checked by it");
		return;
	}
	launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDIN_PIPE |
					     G_SUBPROCESS_FLAGS_STDOUT_PIPE |
					     G_SUBPROCESS_FLAGS_STDERR_MERGE);
	proc = g_subprocess_launcher_spawn(launcher, &error, promtool, "check", "metrics", NULL);
	g_assert_no_error(error);
	g_subprocess_communicate_utf8(proc, text, NULL, &out, NULL, &error);
	g_assert_no_error(error);
	if (g_subprocess_get_exit_status(proc) != 0)
		g_error("promtool check metrics: %s\n%s", out, text);
}

static void
chat_ok(Fixture *f, const gchar *token, gboolean stream)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(f->daemon, token, f->agent, NULL, USER_TEXT, stream);
	g_assert_cmpuint(r->status, ==, 200);
}

/* ---------- tests ---------- */

static void
test_access(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) none =
	    confab_test_http(f->daemon, "GET", "/metrics", NULL, NULL);
	g_autoptr(ConfabTestResponse) chat =
	    confab_test_http(f->daemon, "GET", "/metrics", f->chat_token, NULL);
	g_autoptr(ConfabTestResponse) bad = confab_test_http(f->daemon,
							     "GET",
							     "/metrics",
							     "nca_000000000000000000000000000000",
							     NULL);
	g_autoptr(ConfabTestResponse) post =
	    confab_test_http(f->daemon, "POST", "/metrics", f->metrics_token, "{}");
	g_autoptr(ConfabTestResponse) talk =
	    confab_test_chat(f->daemon, f->metrics_token, f->agent, NULL, "hi", FALSE);
	g_autofree gchar *text = scrape(f);

	confab_test_assert_error(none, 401, "missing_api_key");
	confab_test_assert_error(chat, 403, "insufficient_scope");
	confab_test_assert_error(bad, 401, "invalid_api_key");
	confab_test_assert_error(post, 405, "method_not_allowed");
	/* a metrics token is not a chat token */
	confab_test_assert_error(talk, 403, "insufficient_scope");
	g_assert_nonnull(strstr(text, "# TYPE confab_turns_total counter\n"));
}

/* /healthz and /readyz take no token, and say nothing but the status */
static void
test_health(Fixture *f, gconstpointer data)
{
	const gchar *paths[] = {"/healthz", "/readyz"};

	for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
		g_autoptr(ConfabTestResponse) none =
		    confab_test_http(f->daemon, "GET", paths[i], NULL, NULL);
		g_autoptr(ConfabTestResponse) bad =
		    confab_test_http(f->daemon,
				     "GET",
				     paths[i],
				     "nca_000000000000000000000000000000",
				     NULL);
		g_autoptr(ConfabTestResponse) post =
		    confab_test_http(f->daemon, "POST", paths[i], NULL, "{}");
		gsize len;
		const gchar *body;

		g_assert_cmpuint(none->status, ==, 200);
		body = g_bytes_get_data(none->body, &len);
		g_assert_cmpmem(body, len, "ok\n", 3);
		g_assert_cmpuint(bad->status, ==, 200);
		confab_test_assert_error(post, 405, "method_not_allowed");
	}
}

static void
test_format(Fixture *f, gconstpointer data)
{
	g_autofree gchar *text = NULL;

	chat_ok(f, f->chat_token, TRUE);
	chat_ok(f, f->chat_token, FALSE);
	confab_test_set_quota(f->daemon, "alice", 10);
	text = scrape(f);
	assert_promtool_accepts(text);
	/* the families of the contract, each typed */
	{
		const gchar *families[] = {
		    "confab_http_requests_total counter",
		    "confab_turns_total counter",
		    "confab_turn_duration_seconds histogram",
		    "confab_time_to_first_token_seconds histogram",
		    "confab_inter_token_latency_seconds histogram",
		    "confab_tokens_total counter",
		    "confab_upstream_requests_total counter",
		    "confab_upstream_retries_total counter",
		    "confab_tool_calls_total counter",
		    "confab_tool_duration_seconds histogram",
		    "confab_active_turns gauge",
		    "confab_open_connections gauge",
		    "confab_store_commit_seconds histogram",
		    "confab_quota_remaining_requests gauge",
		    "process_resident_memory_bytes gauge",
		    "process_open_fds gauge",
		    "process_cpu_seconds_total counter",
		    "process_start_time_seconds gauge",
		};
		for (guint i = 0; i < G_N_ELEMENTS(families); i++) {
			g_autofree gchar *line = g_strdup_printf("# TYPE %s\n", families[i]);
			if (strstr(text, line) == NULL)
				g_error("no '%s' in\n%s", line, text);
		}
	}
	/* buckets from 1 ms to 5 min, then +Inf */
	g_assert_cmpfloat(
	    sample_printf(text,
			  "confab_turn_duration_seconds_bucket{agent=\"%s\",le=\"0.001\"}",
			  f->agent),
	    >=,
	    0);
	g_assert_cmpfloat(
	    sample_printf(text,
			  "confab_turn_duration_seconds_bucket{agent=\"%s\",le=\"0.1\"}",
			  f->agent),
	    >=,
	    0);
	g_assert_cmpfloat(
	    sample_printf(text,
			  "confab_turn_duration_seconds_bucket{agent=\"%s\",le=\"300\"}",
			  f->agent),
	    ==,
	    2);
	g_assert_cmpfloat(
	    sample_printf(text,
			  "confab_turn_duration_seconds_bucket{agent=\"%s\",le=\"+Inf\"}",
			  f->agent),
	    ==,
	    2);
	g_assert_cmpfloat(sample(text, "process_resident_memory_bytes"), >, 1024 * 1024);
	g_assert_cmpfloat(sample(text, "process_open_fds"), >=, 3);
	g_assert_cmpfloat(sample(text, "process_start_time_seconds"),
			  >,
			  g_get_real_time() / G_USEC_PER_SEC - 3600);
	g_assert_cmpfloat(sample(text, "process_start_time_seconds"),
			  <=,
			  g_get_real_time() / G_USEC_PER_SEC + 1);
	/* the scrape's own connection */
	g_assert_cmpfloat(sample(text, "confab_open_connections"), >=, 1);
	g_assert_cmpfloat(sample(text, "confab_active_turns"), ==, 0);
}

static void
test_counts(Fixture *f, gconstpointer data)
{
	g_autofree gchar *before = scrape(f);
	g_autofree gchar *after = NULL;
	const gchar *chat_200 = "confab_http_requests_total{route=\"/api/v1/chat/completions\","
				"code=\"200\"}";
	const gchar *metrics_200 = "confab_http_requests_total{route=\"/metrics\",code=\"200\"}";

	g_assert_cmpfloat(sample(before, chat_200), ==, -1);
	g_assert_cmpfloat(sample(before, metrics_200), ==, -1);
	chat_ok(f, f->chat_token, TRUE);
	chat_ok(f, f->chat_token, FALSE);
	chat_ok(f, f->chat_token, FALSE);
	{
		g_autoptr(ConfabTestResponse) lists = confab_test_http(f->daemon,
								       "GET",
								       "/api/v1/conversations",
								       f->chat_token,
								       NULL);
		g_autoptr(ConfabTestResponse) missing =
		    confab_test_http(f->daemon, "GET", "/api/v1/nothing", f->chat_token, NULL);
		g_assert_cmpuint(lists->status, ==, 200);
		g_assert_cmpuint(missing->status, ==, 404);
	}
	after = scrape(f);

	g_assert_cmpfloat(sample(after, chat_200), ==, 3);
	/* the scrape before counts; this one is counted once it is answered */
	g_assert_cmpfloat(sample(after, metrics_200), ==, 1);
	g_assert_cmpfloat(
	    sample(after,
		   "confab_http_requests_total{route=\"/api/v1/conversations\",code=\"200\"}"),
	    ==,
	    1);
	g_assert_cmpfloat(
	    sample(after, "confab_http_requests_total{route=\"unmatched\",code=\"404\"}"),
	    ==,
	    1);
	g_assert_cmpfloat(
	    sample_printf(after, "confab_turns_total{agent=\"%s\",status=\"completed\"}", f->agent),
	    ==,
	    3);
	g_assert_cmpfloat(
	    sample_printf(after, "confab_turn_duration_seconds_count{agent=\"%s\"}", f->agent),
	    ==,
	    3);
	g_assert_cmpfloat(sample_printf(after,
					"confab_time_to_first_token_seconds_count{agent=\"%s\"}",
					f->agent),
			  ==,
			  3);
	g_assert_cmpfloat(
	    sample_printf(after,
			  "confab_upstream_requests_total{agent=\"%s\",outcome=\"ok\"}",
			  f->agent),
	    ==,
	    3);
	/* the echo agent counts words: three in, three out, three times */
	g_assert_cmpfloat(
	    sample_printf(after, "confab_tokens_total{agent=\"%s\",direction=\"input\"}", f->agent),
	    ==,
	    9);
	g_assert_cmpfloat(sample_printf(after,
					"confab_tokens_total{agent=\"%s\",direction=\"output\"}",
					f->agent),
			  ==,
			  9);
	/* a stream commits the user's side, then the answer; a JSON turn both at once */
	g_assert_cmpfloat(sample(after, "confab_store_commit_seconds_count"), ==, 4);
	g_assert_cmpfloat(sample(after, "confab_store_commit_seconds_sum"), >, 0);
}

static void
test_no_user_text(Fixture *f, gconstpointer data)
{
	g_autofree gchar *text = NULL;
	g_autofree gchar *session = NULL;

	chat_ok(f, f->chat_token, TRUE);
	{
		/* a path, a model and a session id made of user text */
		g_autoptr(ConfabTestResponse) path =
		    confab_test_http(f->daemon, "GET", "/Zebra-Quokka-4711", f->chat_token, NULL);
		g_autoptr(ConfabTestResponse) model = confab_test_chat(f->daemon,
								       f->chat_token,
								       "Zebra-Quokka-4711",
								       NULL,
								       USER_TEXT,
								       FALSE);
		g_autoptr(ConfabTestResponse) list =
		    confab_test_http(f->daemon,
				     "GET",
				     "/api/v1/conversations/Zebra-Quokka-4711/messages",
				     f->chat_token,
				     NULL);
		g_assert_cmpuint(path->status, ==, 404);
		g_assert_cmpuint(model->status, ==, 404);
		g_assert_cmpuint(list->status, ==, 404);
	}
	text = scrape(f);
	g_assert_null(strstr(text, "Zebra"));
	g_assert_null(strstr(text, "Quokka"));
	g_assert_null(strstr(text, "secret"));
	g_assert_nonnull(strstr(text,
				"confab_http_requests_total{route=\"/api/v1/conversations/{id}/"
				"messages\",code=\"404\"} 1\n"));
}

static void
test_quota_gauge(Fixture *f, gconstpointer data)
{
	g_autofree gchar *text = NULL;

	confab_test_set_quota(f->daemon, "alice", 5);
	chat_ok(f, f->chat_token, FALSE);
	chat_ok(f, f->chat_token, TRUE);
	text = scrape(f);
	g_assert_cmpfloat(sample(text, "confab_quota_remaining_requests{owner=\"alice\"}"), ==, 3);
	/* scraping is never counted */
	g_assert_cmpfloat(sample(text, "confab_quota_remaining_requests{owner=\"prometheus\"}"),
			  ==,
			  -1);
	confab_test_set_quota(f->daemon, "prometheus", 1);
	g_free(g_steal_pointer(&text));
	text = scrape(f);
	g_free(g_steal_pointer(&text));
	text = scrape(f);
	g_assert_cmpfloat(sample(text, "confab_quota_remaining_requests{owner=\"prometheus\"}"),
			  ==,
			  1);
}

static void
test_local_unauthenticated(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) none =
	    confab_test_http(f->daemon, "GET", "/metrics", NULL, NULL);
	g_autoptr(ConfabTestResponse) chat =
	    confab_test_http(f->daemon, "GET", "/metrics", f->chat_token, NULL);
	g_autoptr(ConfabTestResponse) api =
	    confab_test_http(f->daemon, "GET", "/api/v1/models", NULL, NULL);

	/* the test client is on 127.0.0.1 */
	g_assert_cmpuint(none->status, ==, 200);
	/* a token sent is checked all the same */
	confab_test_assert_error(chat, 403, "insufficient_scope");
	/* the rule is for /metrics only */
	confab_test_assert_error(api, 401, "missing_api_key");
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, config, func)                                                                    \
	g_test_add("/confab/http-metrics/" name,                                                   \
		   Fixture,                                                                        \
		   config,                                                                         \
		   fixture_setup,                                                                  \
		   func,                                                                           \
		   fixture_teardown)
	ADD("access", NULL, test_access);
	ADD("format", NULL, test_format);
	ADD("health", NULL, test_health);
	ADD("counts", NULL, test_counts);
	ADD("no-user-text", NULL, test_no_user_text);
	ADD("quota-gauge", NULL, test_quota_gauge);
	ADD("local-unauthenticated",
	    "[metrics]\nlocal_unauthenticated = true\n",
	    test_local_unauthenticated);
#undef ADD
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
