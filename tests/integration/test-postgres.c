/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <libsoup/soup.h>
#include <string.h>

#include "confab-test-helper.h"
#include "confab-test-pg.h"

/*
 * Several confabd on one PostgreSQL database are one service: the quota is
 * exact across them, an admin change on one holds on the others within a
 * second, a conversation moves between them, one turn at a time per
 * conversation holds across them, a killed instance's turn ends up stored
 * incomplete and its conversation free within 30 s, and the database going
 * away gives 503s within 5 s (a 401 stays immediate) and service again
 * within 10 s of its return, nothing acknowledged lost.
 *
 * One throwaway cluster for the file, a database per test; each confabd on
 * a dbus-daemon of its own, so that each has its Admin interface.
 */

#define N_INSTANCES	     3
#define CLIENTS_PER_INSTANCE 20

static ConfabTestPg *cluster;

typedef struct {
	gchar *url;	     /* the test's database */
	const gchar *config; /* nullable: every instance's config file */
	ConfabTestDaemon *d[N_INSTANCES];
	gchar *agent; /* echo */
	gchar *token; /* alice, chat.completions */
} Fixture;

static gdouble
wait_status(ConfabTestDaemon *daemon,
	    const gchar *path,
	    const gchar *token,
	    guint status,
	    guint timeout_ms);
static gchar *
held_agent(Fixture *f, ConfabTestUpstream *up);

static ConfabTestDaemon *
start_instance(Fixture *f)
{
	g_autofree gchar *arg = g_strdup_printf("--store-url=%s", f->url);
	const gchar *args[] = {arg, NULL};
	return confab_test_daemon_start_private_bus(f->config, args);
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->url = confab_test_pg_new_database(cluster);
	f->config = data;
	for (guint i = 0; i < N_INSTANCES; i++)
		f->d[i] = start_instance(f);
	f->agent = confab_test_create_agent(f->d[0], "echo", "echo");
	f->token = confab_test_create_token(f->d[0], "alice", "chat.completions", NULL, NULL);
	/* every instance knows them (within a second, as test_admin_propagates
	 * shows) before a test starts */
	for (guint i = 1; i < N_INSTANCES; i++) {
		g_autofree gchar *path = g_strdup_printf("/api/v1/models/%s", f->agent);
		wait_status(f->d[i], path, f->token, 200, 1000);
	}
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	for (guint i = 0; i < N_INSTANCES; i++) {
		if (f->d[i] == NULL)
			continue;
		if (g_subprocess_get_identifier(f->d[i]->process) != NULL)
			g_assert_cmpint(confab_test_daemon_stop(f->d[i]), ==, 0);
		g_clear_pointer(&f->d[i], confab_test_daemon_free);
	}
	g_free(f->url);
	g_free(f->agent);
	g_free(f->token);
}

static gdouble
seconds_since(gint64 start)
{
	return (g_get_monotonic_time() - start) / 1e6;
}

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *path;
	const gchar *token;
	guint status;
} Probe;

static gboolean
probe_status(gpointer data)
{
	Probe *probe = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(probe->daemon, "GET", probe->path, probe->token, NULL);
	return r->status == probe->status;
}

/* Waits until GET @path answers @status on @daemon; returns how long it took. */
static gdouble
wait_status(ConfabTestDaemon *daemon,
	    const gchar *path,
	    const gchar *token,
	    guint status,
	    guint timeout_ms)
{
	Probe probe = {daemon, path, token, status};
	gint64 start = g_get_monotonic_time();

	if (!confab_test_wait_until(probe_status, &probe, timeout_ms))
		g_error("GET %s did not answer %u within %u ms", path, status, timeout_ms);
	return seconds_since(start);
}

/* ---------- the quota, exact across instances ---------- */

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *agent;
	guint admitted;
	guint refused;
	guint other;
} Client;

static gpointer
client_thread(gpointer data)
{
	Client *c = data;

	for (guint i = 0; i < 2; i++) {
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(c->daemon, c->token, c->agent, NULL, "count me", FALSE);
		if (r->status == 200)
			c->admitted++;
		else if (r->status == 429 &&
			 g_strcmp0(confab_test_json_string(r->json, "error.code"),
				   "insufficient_quota") == 0)
			c->refused++;
		else {
			g_autofree gchar *body =
			    g_strndup(g_bytes_get_data(r->body, NULL), g_bytes_get_size(r->body));
			g_test_message("unexpected: %u %s", r->status, body);
			c->other++;
		}
	}
	return NULL;
}

static void
test_quota_exact(Fixture *f, gconstpointer data)
{
	const guint quota = 50;
	const guint n = N_INSTANCES * CLIENTS_PER_INSTANCE;
	g_autofree gchar *token = NULL;
	g_autofree Client *clients = g_new0(Client, n);
	GThread *threads[N_INSTANCES * CLIENTS_PER_INSTANCE];
	guint admitted = 0, refused = 0, other = 0;
	g_autoptr(GVariant) usage = NULL;
	g_autoptr(GError) error = NULL;
	guint64 requests = 0;
	gint64 start;

	/* the admin calls go to other instances than the first */
	confab_test_set_quota(f->d[1], "quota-owner", quota);
	token = confab_test_create_token(f->d[2], "quota-owner", "chat.completions", NULL, NULL);
	for (guint i = 0; i < N_INSTANCES; i++)
		wait_status(f->d[i], "/api/v1/models", token, 200, 1000);

	start = g_get_monotonic_time();
	for (guint i = 0; i < n; i++) {
		clients[i] = (Client){f->d[i % N_INSTANCES], token, f->agent, 0, 0, 0};
		threads[i] = g_thread_new("client", client_thread, &clients[i]);
	}
	for (guint i = 0; i < n; i++) {
		g_thread_join(threads[i]);
		admitted += clients[i].admitted;
		refused += clients[i].refused;
		other += clients[i].other;
	}
	g_test_message("%u instances x %u clients, 2 requests each, quota %u: %u admitted, "
		       "%u refused (429), %u other, in %.2f s",
		       N_INSTANCES,
		       CLIENTS_PER_INSTANCE,
		       quota,
		       admitted,
		       refused,
		       other,
		       seconds_since(start));
	g_assert_cmpuint(other, ==, 0);
	g_assert_cmpuint(admitted, ==, quota);
	g_assert_cmpuint(refused, ==, 2 * n - quota);

	confab_dbus_admin_call_get_usage_sync(f->d[0]->admin, "quota-owner", &usage, NULL, &error);
	g_assert_no_error(error);
	g_assert_true(g_variant_lookup(usage, "requests", "t", &requests));
	g_assert_cmpuint(requests, ==, quota);
}

/* ---------- requests per minute, exact across instances ---------- */

static gpointer
rate_client_thread(gpointer data)
{
	Client *c = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(c->daemon, c->token, c->agent, NULL, "race", FALSE);

	if (r->status == 200)
		c->admitted++;
	else if (r->status == 429 &&
		 g_strcmp0(confab_test_json_string(r->json, "error.code"), "rate_limit_exceeded") ==
		     0 &&
		 soup_message_headers_get_one(r->headers, "retry-after-ms") != NULL)
		c->refused++;
	else
		c->other++;
	return NULL;
}

static void
test_rate_exact(Fixture *f, gconstpointer data)
{
	const guint rpm = 10, n = 100;
	g_autofree Client *clients = g_new0(Client, n);
	GThread *threads[100];
	guint admitted = 0, refused = 0, other = 0;
	g_autoptr(GVariant) usage = NULL;
	g_autoptr(GError) error = NULL;
	guint64 requests = 0;
	gint64 start, took;

	/* an owner of its own, its token made on another instance */
	g_autofree gchar *token =
	    confab_test_create_token(f->d[1], "rate-owner", "chat.completions", NULL, NULL);
	/* known everywhere, without spending the rate (GET /models) */
	for (guint i = 0; i < N_INSTANCES; i++)
		wait_status(f->d[i], "/api/v1/models", token, 200, 1000);
	start = g_get_monotonic_time();
	for (guint i = 0; i < n; i++) {
		clients[i] = (Client){f->d[i % N_INSTANCES], token, f->agent, 0, 0, 0};
		threads[i] = g_thread_new("client", rate_client_thread, &clients[i]);
	}
	for (guint i = 0; i < n; i++) {
		g_thread_join(threads[i]);
		admitted += clients[i].admitted;
		refused += clients[i].refused;
		other += clients[i].other;
	}
	took = g_get_monotonic_time() - start;
	g_test_message("%u instances, %u requests at once, rpm %u: %u admitted, %u refused "
		       "(429 rate_limit_exceeded), %u other, in %.2f s",
		       N_INSTANCES,
		       n,
		       rpm,
		       admitted,
		       refused,
		       other,
		       took / 1e6);
	g_assert_cmpuint(other, ==, 0);
	g_assert_cmpuint(admitted + refused, ==, n);
	/* exactly the burst; one more per interval (6 s) the race lasted */
	g_assert_cmpuint(admitted, >=, rpm);
	g_assert_cmpuint(admitted, <=, rpm + took / (60 * G_USEC_PER_SEC / rpm));
	if (took < 60 * G_USEC_PER_SEC / rpm)
		g_assert_cmpuint(admitted, ==, rpm);

	/* what the rate refused did not count against the month */
	confab_dbus_admin_call_get_usage_sync(f->d[0]->admin, "rate-owner", &usage, NULL, &error);
	g_assert_no_error(error);
	g_assert_true(g_variant_lookup(usage, "requests", "t", &requests));
	g_assert_cmpuint(requests, ==, admitted);
}

/* ---------- turns in flight, exact across instances ---------- */

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *agent;
	guint *counts; /* ok, limited, other; under lock */
	GMutex *lock;
	GCond *cond;
	const gchar *refusal; /* the code of a 429 that counts as limited */
} Flyer;

static gpointer
flyer_thread(gpointer data)
{
	Flyer *flyer = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(flyer->daemon, flyer->token, flyer->agent, NULL, "fly", TRUE);
	guint which = 2;

	if (r->status == 200)
		which = 0;
	else if (r->status == 429 &&
		 g_strcmp0(confab_test_json_string(r->json, "error.code"),
			   flyer->refusal != NULL ? flyer->refusal : "rate_limit_exceeded") == 0)
		which = 1;
	else {
		g_autofree gchar *body =
		    g_strndup(g_bytes_get_data(r->body, NULL), g_bytes_get_size(r->body));
		g_test_message("unexpected: %u %s", r->status, body);
	}
	g_mutex_lock(flyer->lock);
	flyer->counts[which]++;
	g_cond_broadcast(flyer->cond);
	g_mutex_unlock(flyer->lock);
	return NULL;
}

static gboolean
admitted_again(gpointer data)
{
	Flyer *flyer = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(flyer->daemon, flyer->token, flyer->agent, NULL, "again", FALSE);
	return r->status == 200;
}

static void
test_parallel_across(Fixture *f, gconstpointer data)
{
	const guint n = 10;
	ConfabTestUpstream *up = confab_test_upstream_start(TRUE);
	g_autofree gchar *agent = held_agent(f, up);
	guint counts[3] = {0, 0, 0};
	GMutex lock;
	GCond cond;
	Flyer flyers[10];
	GThread *threads[10];
	gint64 deadline;

	g_mutex_init(&lock);
	g_cond_init(&cond);
	for (guint i = 1; i < N_INSTANCES; i++) {
		g_autofree gchar *path = g_strdup_printf("/api/v1/models/%s", agent);
		wait_status(f->d[i], path, f->token, 200, 1000);
	}
	/* ten streams at once over three instances: two are admitted and
	 * held by the upstream, eight are refused */
	for (guint i = 0; i < n; i++) {
		flyers[i] = (Flyer){f->d[i % N_INSTANCES], f->token, agent, counts, &lock, &cond};
		threads[i] = g_thread_new("flyer", flyer_thread, &flyers[i]);
	}
	g_assert_true(confab_test_upstream_wait_waiting(up, 2, 30000));
	deadline = g_get_monotonic_time() + 60 * G_TIME_SPAN_SECOND;
	g_mutex_lock(&lock);
	while (counts[0] + counts[1] + counts[2] < n - 2)
		if (!g_cond_wait_until(&cond, &lock, deadline))
			break;
	g_test_message("max_parallel 2, %u streams over %u instances: %u refused while two run",
		       n,
		       N_INSTANCES,
		       counts[1]);
	g_assert_cmpuint(counts[0], ==, 0);
	g_assert_cmpuint(counts[2], ==, 0);
	g_assert_cmpuint(counts[1], ==, n - 2);
	g_mutex_unlock(&lock);

	confab_test_upstream_set_hold(up, FALSE);
	for (guint i = 0; i < n; i++)
		g_thread_join(threads[i]);
	g_assert_cmpuint(counts[0], ==, 2);
	g_assert_cmpuint(counts[1], ==, n - 2);
	/* their slots came back: any instance admits a turn again */
	g_assert_true(confab_test_wait_until(admitted_again, &flyers[2], 10000));
	g_mutex_clear(&lock);
	g_cond_clear(&cond);
	confab_test_upstream_stop(up);
}

/* ---------- a month's tokens, exact across instances ---------- */

/* thirty streams at once over three instances, against a month of tokens
 * that holds ten reservations ("fly": 12 tokens of input, 1024 for the
 * answer): exactly ten are admitted, and held by the upstream before they
 * can settle; the twenty others are refused with insufficient_quota */
static void
test_tokens_across(Fixture *f, gconstpointer data)
{
	const guint n = 30, fit = 10;
	ConfabTestUpstream *up = confab_test_upstream_start(TRUE);
	g_autofree gchar *agent = held_agent(f, up);
	guint counts[3] = {0, 0, 0};
	GMutex lock;
	GCond cond;
	Flyer flyers[30];
	GThread *threads[30];
	gint64 deadline;

	g_mutex_init(&lock);
	g_cond_init(&cond);
	for (guint i = 1; i < N_INSTANCES; i++) {
		g_autofree gchar *path = g_strdup_printf("/api/v1/models/%s", agent);
		wait_status(f->d[i], path, f->token, 200, 1000);
	}
	for (guint i = 0; i < n; i++) {
		flyers[i] = (Flyer){f->d[i % N_INSTANCES],
				    f->token,
				    agent,
				    counts,
				    &lock,
				    &cond,
				    "insufficient_quota"};
		threads[i] = g_thread_new("flyer", flyer_thread, &flyers[i]);
	}
	g_assert_true(confab_test_upstream_wait_waiting(up, fit, 60000));
	deadline = g_get_monotonic_time() + 60 * G_TIME_SPAN_SECOND;
	g_mutex_lock(&lock);
	while (counts[0] + counts[1] + counts[2] < n - fit)
		if (!g_cond_wait_until(&cond, &lock, deadline))
			break;
	g_test_message("monthly_tokens for %u reservations, %u streams over %u instances: %u "
		       "refused while %u run",
		       fit,
		       n,
		       N_INSTANCES,
		       counts[1],
		       fit);
	g_assert_cmpuint(counts[0], ==, 0);
	g_assert_cmpuint(counts[2], ==, 0);
	g_assert_cmpuint(counts[1], ==, n - fit);
	g_mutex_unlock(&lock);

	confab_test_upstream_set_hold(up, FALSE);
	for (guint i = 0; i < n; i++)
		g_thread_join(threads[i]);
	g_assert_cmpuint(counts[0], ==, fit);
	g_assert_cmpuint(counts[1], ==, n - fit);
	/* settled to the upstream's usage (59 tokens each): the rest came back */
	g_assert_true(confab_test_wait_until(admitted_again, &flyers[1], 10000));
	g_mutex_clear(&lock);
	g_cond_clear(&cond);
	confab_test_upstream_stop(up);
}

/* ---------- tokens per minute, exact across instances ---------- */

/* a hundred streams at once over three instances, against tokens per minute
 * that hold ten reservations ("fly": 12 tokens of input, 1024 for the
 * answer): held by the upstream, the admitted ones cannot settle, so the
 * rate admits exactly its burst (and one more per six seconds, should the
 * race last that long); the others are refused with rate_limit_exceeded */
static void
test_tpm_exact(Fixture *f, gconstpointer data)
{
	const guint n = 100, fit = 10;
	const gint64 interval = 60 * G_USEC_PER_SEC / fit;
	ConfabTestUpstream *up = confab_test_upstream_start(TRUE);
	g_autofree gchar *agent = held_agent(f, up);
	guint counts[3] = {0, 0, 0};
	GMutex lock;
	GCond cond;
	g_autofree Flyer *flyers = g_new0(Flyer, n);
	g_autofree GThread **threads = g_new0(GThread *, n);
	gint64 start, deadline, took;
	guint answered = 0, admitted;

	g_mutex_init(&lock);
	g_cond_init(&cond);
	start = g_get_monotonic_time();
	for (guint i = 0; i < n; i++) {
		flyers[i] = (Flyer){f->d[i % N_INSTANCES], f->token, agent, counts, &lock, &cond};
		threads[i] = g_thread_new("flyer", flyer_thread, &flyers[i]);
	}
	/* until every request is answered (refused) or held upstream (admitted) */
	deadline = start + 120 * G_TIME_SPAN_SECOND;
	while (g_get_monotonic_time() < deadline) {
		g_mutex_lock(&lock);
		answered = counts[0] + counts[1] + counts[2];
		g_mutex_unlock(&lock);
		if (confab_test_upstream_wait_waiting(up, n - answered, 100))
			break;
		g_mutex_lock(&lock);
		if (counts[0] + counts[1] + counts[2] == answered)
			g_cond_wait_until(&cond, &lock, g_get_monotonic_time() + 100 * 1000);
		g_mutex_unlock(&lock);
	}
	took = g_get_monotonic_time() - start;
	admitted = n - answered;
	g_test_message("%u instances, %u streams at once, tpm for %u reservations: %u admitted, "
		       "%u refused (429 rate_limit_exceeded), %u other, in %.2f s",
		       N_INSTANCES,
		       n,
		       fit,
		       admitted,
		       counts[1],
		       counts[0] + counts[2],
		       took / 1e6);
	g_assert_cmpuint(counts[0], ==, 0);
	g_assert_cmpuint(counts[2], ==, 0);
	g_assert_cmpuint(counts[1], ==, answered);
	/* exactly the burst; one more per interval the race lasted */
	g_assert_cmpuint(admitted, >=, fit);
	g_assert_cmpuint(admitted, <=, fit + took / interval);
	if (took < interval)
		g_assert_cmpuint(admitted, ==, fit);

	confab_test_upstream_set_hold(up, FALSE);
	for (guint i = 0; i < n; i++)
		g_thread_join(threads[i]);
	g_assert_cmpuint(counts[0], ==, admitted);
	g_assert_cmpuint(counts[1], ==, n - admitted);
	{
		/* the usage the instances added to one row, each with its
		 * turns' commits: every admitted turn, once */
		g_autoptr(GVariant) rows = NULL;
		g_autoptr(GVariant) row = NULL;
		g_autoptr(GError) error = NULL;
		GVariantDict filter;
		guint64 requests = 0;

		g_variant_dict_init(&filter, NULL);
		g_variant_dict_insert(&filter, "by", "s", "agent");
		confab_dbus_admin_call_list_usage_sync(f->d[2]->admin,
						       g_variant_dict_end(&filter),
						       &rows,
						       NULL,
						       &error);
		g_assert_no_error(error);
		g_assert_cmpuint(g_variant_n_children(rows), ==, 1);
		row = g_variant_get_child_value(rows, 0);
		g_assert_cmpstr(confab_test_variant_string(row, "agent_id"), ==, agent);
		g_assert_true(g_variant_lookup(row, "requests", "t", &requests));
		g_assert_cmpuint(requests, ==, admitted);
	}
	g_mutex_clear(&lock);
	g_cond_clear(&cond);
	confab_test_upstream_stop(up);
}

/* ---------- admin changes, on every instance within a second ---------- */

static void
test_admin_propagates(Fixture *f, gconstpointer data)
{
	g_autofree gchar *token_id = NULL;
	g_autofree gchar *token = NULL;
	g_autofree gchar *agent = NULL;
	g_autofree gchar *path = NULL;
	g_autoptr(GError) error = NULL;
	gdouble took;

	token = confab_test_create_token(f->d[0], "bob", "chat.completions", NULL, &token_id);
	for (guint i = 1; i < N_INSTANCES; i++) {
		took = wait_status(f->d[i], "/api/v1/models", token, 200, 1000);
		g_test_message("a new token known to instance %u after %.3f s", i, took);
	}
	confab_dbus_admin_call_revoke_token_sync(f->d[0]->admin, token_id, NULL, &error);
	g_assert_no_error(error);
	for (guint i = 1; i < N_INSTANCES; i++) {
		took = wait_status(f->d[i], "/api/v1/models", token, 401, 1000);
		g_test_message("a revocation held on instance %u after %.3f s", i, took);
	}

	agent = confab_test_create_agent(f->d[1], "late", "echo");
	path = g_strdup_printf("/api/v1/models/%s", agent);
	took = wait_status(f->d[2], path, f->token, 200, 1000);
	g_test_message("a new agent known to another instance after %.3f s", took);
	confab_dbus_admin_call_delete_agent_sync(f->d[2]->admin, agent, NULL, &error);
	g_assert_no_error(error);
	took = wait_status(f->d[0], path, f->token, 404, 1000);
	g_test_message("a deleted agent gone from another instance after %.3f s", took);
}

/* ---------- an MCP server's OAuth, three instances ---------- */

static gchar *
tools_status(ConfabTestDaemon *daemon, const gchar *agent)
{
	g_autoptr(GVariant) tools = NULL;
	g_autoptr(GVariant) first = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_true(confab_dbus_admin_call_list_agent_tools_sync(daemon->admin,
								   agent,
								   &tools,
								   NULL,
								   &error));
	g_assert_no_error(error);
	first = g_variant_get_child_value(tools, 0);
	return g_strdup(confab_test_variant_string(first, "status"));
}

static guint
get_no_redirect(const gchar *url, gchar **location)
{
	g_autoptr(SoupSession) session = soup_session_new();
	g_autoptr(SoupMessage) msg = soup_message_new("GET", url);
	g_autoptr(GBytes) body = NULL;
	g_autoptr(GError) error = NULL;

	soup_message_add_flags(msg, SOUP_MESSAGE_NO_REDIRECT);
	body = soup_session_send_and_read(session, msg, NULL, &error);
	g_assert_no_error(error);
	g_test_message("%s: %u %.*s",
		       url,
		       soup_message_get_status(msg),
		       (int)g_bytes_get_size(body),
		       (const gchar *)g_bytes_get_data(body, NULL));
	if (location != NULL)
		*location =
		    g_strdup(soup_message_headers_get_one(soup_message_get_response_headers(msg),
							  "Location"));
	return soup_message_get_status(msg);
}

/* Authorized from one instance, the callback answered by another, the
 * tokens used by a third (and by the first): they are the store's. */
static void
test_mcp_oauth_across(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GSubprocess) server = NULL;
	g_autoptr(GDataInputStream) out = NULL;
	g_autofree gchar *line = NULL, *servers = NULL, *agent = NULL, *path = NULL;
	g_autofree gchar *url = NULL, *location = NULL, *other = NULL, *status = NULL;
	GVariantDict dict;

	server = g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE,
				  &error,
				  g_getenv("CONFAB_FAKE_MCP"),
				  "--http",
				  "0",
				  "--oauth",
				  "ok",
				  NULL);
	g_assert_no_error(error);
	out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(server));
	line = g_data_input_stream_read_line(out, NULL, NULL, NULL);
	g_assert_true(line != NULL && g_str_has_prefix(line, "PORT="));
	servers = g_strdup_printf("{\"mcpServers\":{\"remote\":{\"url\":"
				  "\"http://127.0.0.1:%s/mcp\"}}}",
				  line + 5);
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "remote");
	g_variant_dict_insert(&dict, "provider", "s", "echo");
	g_variant_dict_insert(&dict, "mcp_servers", "s", servers);
	agent = confab_test_create_agent_props(f->d[0], g_variant_dict_end(&dict));
	path = g_strdup_printf("/api/v1/models/%s", agent);
	for (guint i = 1; i < N_INSTANCES; i++)
		wait_status(f->d[i], path, f->token, 200, 1000);

	status = tools_status(f->d[0], agent);
	g_assert_true(g_str_has_prefix(status, "authorization needed"));
	confab_dbus_admin_call_authorize_mcp_server_sync(f->d[0]->admin,
							 agent,
							 "remote",
							 &url,
							 NULL,
							 &error);
	g_assert_no_error(error);
	g_assert_cmpuint(get_no_redirect(url, &location), ==, 302);
	/* the browser comes back to another instance (a load balancer) */
	g_assert_true(g_str_has_prefix(location, f->d[0]->url));
	other = g_strconcat(f->d[1]->url, location + strlen(f->d[0]->url), NULL);
	g_assert_cmpuint(get_no_redirect(other, NULL), ==, 200);
	g_assert_cmpuint(get_no_redirect(location, NULL), ==, 400);

	g_free(status);
	status = tools_status(f->d[2], agent);
	g_assert_cmpstr(status, ==, "ready");
	g_free(status);
	status = tools_status(f->d[0], agent);
	g_assert_cmpstr(status, ==, "ready");
	g_subprocess_force_exit(server);
	g_subprocess_wait(server, NULL, NULL);
}

/* ---------- one conversation, three instances ---------- */

static void
test_conversation_across(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) first =
	    confab_test_chat(f->d[0], f->token, f->agent, NULL, "one", FALSE);
	g_autofree gchar *sid = NULL;
	g_autofree gchar *path = NULL;

	g_assert_cmpuint(first->status, ==, 200);
	sid = g_strdup(confab_test_json_string(first->json, "metadata.session_id"));
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->d[1], f->token, f->agent, sid, "two", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(r->json, "metadata.session_id"), ==, sid);
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->d[2], f->token, f->agent, sid, "three", TRUE);
		g_autoptr(GPtrArray) events = NULL;
		g_assert_cmpuint(r->status, ==, 200);
		events = confab_test_sse_events(r);
		g_assert_cmpstr(g_ptr_array_index(events, events->len - 1), ==, "[DONE]");
	}
	path = g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", sid);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->d[0], "GET", path, f->token, NULL);
		const gchar *texts[] = {"one", NULL, "two", NULL, "three", NULL};
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(json_array_get_length(
				     json_node_get_array(confab_test_json_get(r->json, "data"))),
				 ==,
				 6);
		for (guint i = 0; i < 6; i += 2) {
			g_autofree gchar *at = g_strdup_printf("data.%u.content.0.text", i);
			g_assert_cmpstr(confab_test_json_string(r->json, at), ==, texts[i]);
		}
	}
}

/* ---------- busy across instances ---------- */

static gchar *
held_agent(Fixture *f, ConfabTestUpstream *up)
{
	g_autofree gchar *agent = NULL;
	g_autofree gchar *path = NULL;
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "slow");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", confab_test_upstream_get_base_url(up));
	g_variant_dict_insert(&dict, "upstream_model", "s", "slow-model");
	agent = confab_test_create_agent_props(f->d[0], g_variant_dict_end(&dict));
	path = g_strdup_printf("/api/v1/models/%s", agent);
	for (guint i = 1; i < N_INSTANCES; i++)
		wait_status(f->d[i], path, f->token, 200, 1000);
	return g_steal_pointer(&agent);
}

static gchar *
new_conversation(ConfabTestDaemon *daemon, const gchar *token, const gchar *agent)
{
	g_autoptr(ConfabTestResponse) r = confab_test_chat(daemon, token, agent, NULL, "hi", FALSE);
	g_assert_cmpuint(r->status, ==, 200);
	return g_strdup(confab_test_json_string(r->json, "metadata.session_id"));
}

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *agent;
	const gchar *session;
	gboolean stream;
	guint status; /* 0: no answer (the daemon died) */
} HeldTurn;

/* A turn whose daemon may die under it: plain libsoup, errors tolerated. */
static gpointer
held_turn_thread(gpointer data)
{
	HeldTurn *t = data;
	g_autofree gchar *body =
	    g_strdup_printf("{\"model\":\"%s\",\"stream\":%s,\"metadata\":{\"session_id\":\"%s\"},"
			    "\"messages\":[{\"role\":\"user\",\"content\":\"held\"}]}",
			    t->agent,
			    t->stream ? "true" : "false",
			    t->session);
	g_autofree gchar *uri = g_strconcat(t->daemon->url, "/api/v1/chat/completions", NULL);
	g_autofree gchar *auth = g_strdup_printf("Bearer %s", t->token);
	g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 120, NULL);
	g_autoptr(SoupMessage) msg = soup_message_new("POST", uri);
	g_autoptr(GBytes) req = g_bytes_new(body, strlen(body));
	g_autoptr(GBytes) answer = NULL;

	soup_message_headers_replace(soup_message_get_request_headers(msg), "Authorization", auth);
	soup_message_set_request_body_from_bytes(msg, "application/json", req);
	answer = soup_session_send_and_read(session, msg, NULL, NULL);
	if (answer != NULL)
		t->status = soup_message_get_status(msg);
	return NULL;
}

static void
test_busy_across(Fixture *f, gconstpointer data)
{
	ConfabTestUpstream *up = confab_test_upstream_start(FALSE);
	g_autofree gchar *agent = held_agent(f, up);
	g_autofree gchar *sid = NULL;
	HeldTurn held = {f->d[0], f->token, agent, NULL, FALSE, 0};
	GThread *thread;

	sid = new_conversation(f->d[0], f->token, agent);
	held.session = sid;
	confab_test_upstream_set_hold(up, TRUE);
	thread = g_thread_new("held-turn", held_turn_thread, &held);
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));
	for (guint i = 1; i < N_INSTANCES; i++) {
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->d[i], f->token, agent, sid, "meanwhile", FALSE);
		confab_test_assert_error(r, 409, "conversation_busy");
	}
	confab_test_upstream_set_hold(up, FALSE);
	g_thread_join(thread);
	g_assert_cmpuint(held.status, ==, 200);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->d[1], f->token, agent, sid, "after", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	confab_test_upstream_stop(up);
}

/* ---------- a response running on another instance ---------- */

/* Reads @conn into @received until @needle has come. */
static void
read_stream_until(GSocketConnection *conn, GString *received, const gchar *needle)
{
	while (strstr(received->str, needle) == NULL) {
		g_autoptr(GError) error = NULL;
		gchar buf[4096];
		gssize n = g_input_stream_read(g_io_stream_get_input_stream(G_IO_STREAM(conn)),
					       buf,
					       sizeof(buf),
					       NULL,
					       &error);
		g_assert_no_error(error);
		g_assert_cmpint(n, >, 0);
		g_string_append_len(received, buf, n);
	}
}

/* A streamed response on @daemon, read by hand up to its
 * response.in_progress event; returns the connection, still open, and the
 * response's id. */
static GSocketConnection *
open_response_stream(ConfabTestDaemon *daemon,
		     const gchar *token,
		     const gchar *agent,
		     GString *received,
		     gchar **response_id)
{
	g_autoptr(GUri) uri = g_uri_parse(daemon->url, G_URI_FLAGS_NONE, NULL);
	g_autoptr(GSocketClient) client = g_socket_client_new();
	g_autoptr(GSocketConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *body =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":\"wait for it\",\"stream\":true}", agent);
	g_autofree gchar *request =
	    g_strdup_printf("POST /api/v1/responses HTTP/1.1\r\nHost: x\r\n"
			    "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
			    "Content-Length: %zu\r\n\r\n%s",
			    token,
			    strlen(body),
			    body);
	const gchar *id;

	conn = g_socket_client_connect_to_host(client,
					       g_uri_get_host(uri),
					       (guint16)g_uri_get_port(uri),
					       NULL,
					       &error);
	g_assert_no_error(error);
	g_socket_set_timeout(g_socket_connection_get_socket(conn), 60);
	g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)),
				  request,
				  strlen(request),
				  NULL,
				  NULL,
				  &error);
	g_assert_no_error(error);
	read_stream_until(conn, received, "event: response.in_progress\n");
	id = strstr(received->str, "\"id\":\"resp_");
	g_assert_nonnull(id);
	*response_id = g_strndup(id + strlen("\"id\":\""), strlen("resp_") + 26);
	return g_steal_pointer(&conn);
}

/*
 * A streamed response runs on one instance; another instance that shares
 * the database reads it in_progress (issue 35, bug 6), refuses its DELETE
 * with 409 conversation_busy (bug 3) and its continuation with a param
 * naming previous_response_id: the store's session lease tells them.
 */
static void
test_response_running_across(Fixture *f, gconstpointer data)
{
	ConfabTestUpstream *up = confab_test_upstream_start(TRUE);
	g_autofree gchar *agent = held_agent(f, up);
	g_autoptr(GString) received = g_string_new(NULL);
	g_autoptr(GSocketConnection) conn = NULL;
	g_autofree gchar *id = NULL;
	g_autofree gchar *path = NULL;
	g_autofree gchar *previous = NULL;

	conn = open_response_stream(f->d[0], f->token, agent, received, &id);
	path = g_strdup_printf("/api/v1/responses/%s", id);
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));
	{
		g_autoptr(ConfabTestResponse) g =
		    confab_test_http(f->d[1], "GET", path, f->token, NULL);
		g_assert_cmpuint(g->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(g->json, "status"), ==, "in_progress");
	}
	{
		g_autoptr(ConfabTestResponse) d =
		    confab_test_http(f->d[1], "DELETE", path, f->token, NULL);
		confab_test_assert_error(d, 409, "conversation_busy");
	}
	previous = g_strdup_printf("{\"model\":\"%s\",\"input\":\"and then?\","
				   "\"previous_response_id\":\"%s\"}",
				   agent,
				   id);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->d[2], "POST", "/api/v1/responses", f->token, previous);
		confab_test_assert_error(r, 409, "conversation_busy");
		g_assert_cmpstr(confab_test_json_string(r->json, "error.param"),
				==,
				"previous_response_id");
	}
	confab_test_upstream_set_hold(up, FALSE);
	read_stream_until(conn, received, "event: response.completed\n");
	{
		g_autoptr(ConfabTestResponse) g =
		    confab_test_http(f->d[1], "GET", path, f->token, NULL);
		g_autoptr(ConfabTestResponse) d =
		    confab_test_http(f->d[1], "DELETE", path, f->token, NULL);
		g_autoptr(ConfabTestResponse) gone =
		    confab_test_http(f->d[2], "GET", path, f->token, NULL);
		g_assert_cmpstr(confab_test_json_string(g->json, "status"), ==, "completed");
		g_assert_cmpuint(d->status, ==, 200);
		confab_test_assert_error(gone, 404, "response_not_found");
	}
	confab_test_upstream_stop(up);
}

/* ---------- kill -9 of an instance mid-stream ---------- */

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	gchar *path;
} Incomplete;

/* the conversation's last message is an assistant's, stored incomplete */
static gboolean
ends_incomplete(gpointer data)
{
	Incomplete *wait = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(wait->daemon, "GET", wait->path, wait->token, NULL);
	return r->status == 200 &&
	       g_strcmp0(confab_test_json_string(r->json, "data.0.role"), "assistant") == 0 &&
	       g_strcmp0(confab_test_json_string(r->json, "data.0.status"), "incomplete") == 0;
}

static void
test_kill_instance(Fixture *f, gconstpointer data)
{
	ConfabTestUpstream *up = confab_test_upstream_start(FALSE);
	g_autofree gchar *agent = held_agent(f, up);
	g_autofree gchar *sid = NULL;
	HeldTurn held = {f->d[0], f->token, agent, NULL, TRUE, 0};
	Incomplete wait = {f->d[1], f->token, NULL};
	GThread *thread;
	gint64 killed;
	gdouble took;

	sid = new_conversation(f->d[0], f->token, agent);
	held.session = sid;
	confab_test_upstream_set_hold(up, TRUE);
	thread = g_thread_new("held-stream", held_turn_thread, &held);
	/* the user's message is committed before the upstream is asked */
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));
	confab_test_daemon_kill(f->d[0]);
	killed = g_get_monotonic_time();
	g_thread_join(thread);
	confab_test_upstream_set_hold(up, FALSE);

	wait.path = g_strdup_printf("/api/v1/conversations/%s/messages?order=desc&limit=1", sid);
	if (!confab_test_wait_until(ends_incomplete, &wait, 30000))
		g_error("the killed instance's answer was not stored incomplete within 30 s");
	took = seconds_since(killed);
	g_test_message("kill -9 mid-stream: answer stored incomplete after %.1f s", took);
	{
		/* and the conversation is free again */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->d[1], f->token, agent, sid, "after", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	g_assert_cmpfloat(seconds_since(killed), <, 30.0);
	g_free(wait.path);
	confab_test_upstream_stop(up);
}

/*
 * A response's instance is killed mid-stream: once reaped, its answer is
 * stored incomplete (by the reaper, which does not know its response id),
 * the response reads incomplete on the other instances, and deleting it
 * removes that answer with its input: no lone assistant message is left
 * (issue 35, bug 3: a conversation never holds half a turn).
 */
static void
test_response_killed_delete(Fixture *f, gconstpointer data)
{
	ConfabTestUpstream *up = confab_test_upstream_start(TRUE);
	g_autofree gchar *agent = held_agent(f, up);
	g_autoptr(GString) received = g_string_new(NULL);
	g_autoptr(GSocketConnection) conn = NULL;
	g_autofree gchar *id = NULL;
	g_autofree gchar *path = NULL;
	g_autofree gchar *sid = NULL;
	const gchar *at;
	Incomplete wait = {f->d[1], f->token, NULL};

	conn = open_response_stream(f->d[0], f->token, agent, received, &id);
	path = g_strdup_printf("/api/v1/responses/%s", id);
	at = strstr(received->str, "\"conversation\":{\"id\":\"");
	g_assert_nonnull(at);
	sid = g_strndup(at + strlen("\"conversation\":{\"id\":\""), strlen("cts_") + 26);
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));
	confab_test_daemon_kill(f->d[0]);
	confab_test_upstream_set_hold(up, FALSE);

	wait.path = g_strdup_printf("/api/v1/conversations/%s/messages?order=desc&limit=1", sid);
	if (!confab_test_wait_until(ends_incomplete, &wait, 30000))
		g_error("the killed instance's answer was not stored incomplete within 30 s");
	{
		g_autoptr(ConfabTestResponse) g =
		    confab_test_http(f->d[1], "GET", path, f->token, NULL);
		g_assert_cmpuint(g->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(g->json, "status"), ==, "incomplete");
		g_assert_cmpstr(confab_test_json_string(g->json, "incomplete_details.reason"),
				==,
				"interrupted");
	}
	{
		g_autoptr(ConfabTestResponse) d =
		    confab_test_http(f->d[1], "DELETE", path, f->token, NULL);
		g_autofree gchar *all = g_strdup_printf("/api/v1/conversations/%s/messages", sid);
		g_autoptr(ConfabTestResponse) m = NULL;
		g_assert_cmpuint(d->status, ==, 200);
		m = confab_test_http(f->d[2], "GET", all, f->token, NULL);
		g_assert_cmpuint(m->status, ==, 200);
		g_assert_cmpuint(json_array_get_length(
				     json_node_get_array(confab_test_json_get(m->json, "data"))),
				 ==,
				 0);
	}
	g_free(wait.path);
	confab_test_upstream_stop(up);
}

/* ---------- background responses across instances (issue 31) ---------- */

/*
 * A background stream runs on instance 0, its client gone; instance 1
 * follows it live from its kept events; instance 2 cancels another one
 * that instance 0 runs, and it stops there.
 */
static void
test_background_across(Fixture *f, gconstpointer data)
{
	ConfabTestUpstream *up = confab_test_upstream_start(TRUE);
	g_autofree gchar *agent = held_agent(f, up);
	g_autoptr(GString) received = g_string_new(NULL);
	g_autoptr(GString) followed = g_string_new(NULL);
	g_autoptr(GSocketConnection) conn = NULL;
	g_autoptr(GSocketConnection) follower = NULL;
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":\"go\",\"stream\":true,\"background\":true}",
	    agent);
	g_autofree gchar *post = g_strdup_printf(
	    "POST /api/v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	    f->token,
	    strlen(body),
	    body);
	g_autofree gchar *get = NULL;
	g_autofree gchar *id = NULL;
	g_autofree gchar *json_body =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":\"stop me\",\"background\":true}", agent);
	g_autofree gchar *cancel = NULL;
	g_autofree gchar *path = NULL;
	const gchar *at;

	conn = confab_test_raw_open(f->d[0], post, received, "event: response.in_progress\n");
	at = strstr(received->str, "\"id\":\"resp_");
	g_assert_nonnull(at);
	id = g_strndup(at + strlen("\"id\":\""), strlen("resp_") + 26);
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));
	g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
	get = g_strdup_printf("GET /api/v1/responses/%s?stream=true HTTP/1.1\r\nHost: x\r\n"
			      "Authorization: Bearer %s\r\n\r\n",
			      id,
			      f->token);
	follower = confab_test_raw_open(f->d[1], get, followed, "event: response.in_progress\n");
	g_assert_null(strstr(followed->str, "response.completed"));
	confab_test_upstream_set_hold(up, FALSE);
	read_stream_until(follower, followed, "event: response.completed\n");
	g_assert_nonnull(strstr(followed->str, "event: response.output_text.done\n"));

	/* cancelled from instance 2 while instance 0 runs it */
	confab_test_upstream_set_hold(up, TRUE);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->d[0], "POST", "/api/v1/responses", f->token, json_body);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(r->json, "status"), ==, "queued");
		cancel = g_strdup_printf("/api/v1/responses/%s/cancel",
					 confab_test_json_string(r->json, "id"));
		path =
		    g_strdup_printf("/api/v1/responses/%s", confab_test_json_string(r->json, "id"));
	}
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));
	{
		g_autoptr(ConfabTestResponse) c =
		    confab_test_http(f->d[2], "POST", cancel, f->token, NULL);
		g_autoptr(ConfabTestResponse) g =
		    confab_test_http(f->d[1], "GET", path, f->token, NULL);
		g_assert_cmpuint(c->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(c->json, "status"), ==, "cancelled");
		g_assert_cmpstr(confab_test_json_string(g->json, "status"), ==, "cancelled");
	}
	confab_test_upstream_stop(up);
}

/* ---------- the database goes away, and comes back ---------- */

typedef struct {
	guint status;
	gdouble took;
	gchar *retry_after;
	gchar *code;
} Timed;

static void
timed_clear(Timed *t)
{
	g_clear_pointer(&t->retry_after, g_free);
	g_clear_pointer(&t->code, g_free);
}

static void
timed_get(ConfabTestDaemon *daemon, const gchar *path, const gchar *token, Timed *t)
{
	gint64 start = g_get_monotonic_time();
	g_autoptr(ConfabTestResponse) r = confab_test_http(daemon, "GET", path, token, NULL);

	timed_clear(t);
	t->took = seconds_since(start);
	t->status = r->status;
	t->retry_after = g_strdup(soup_message_headers_get_one(r->headers, "Retry-After"));
	if (r->json != NULL)
		t->code = g_strdup(confab_test_json_string(r->json, "error.code"));
}

static void
assert_unavailable(Fixture *f, const gchar *how)
{
	Timed t = {0};

	for (guint i = 0; i < N_INSTANCES; i++) {
		timed_get(f->d[i], "/api/v1/conversations", f->token, &t);
		g_test_message("%s: instance %u answered %u after %.2f s",
			       how,
			       i,
			       t.status,
			       t.took);
		g_assert_cmpuint(t.status, ==, 503);
		g_assert_cmpstr(t.code, ==, "store_unavailable");
		g_assert_nonnull(t.retry_after);
		g_assert_cmpfloat(t.took, <, 5.0);
		/* a request that needs no database is answered at once */
		timed_get(f->d[i], "/api/v1/conversations", "nca_not-a-token", &t);
		g_assert_cmpuint(t.status, ==, 401);
		g_assert_cmpfloat(t.took, <, 0.5);
	}
	timed_clear(&t);
}

static gchar *
conversation_ids(ConfabTestDaemon *daemon, const gchar *token)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(daemon, "GET", "/api/v1/conversations?limit=100", token, NULL);
	g_assert_cmpuint(r->status, ==, 200);
	return g_strndup(g_bytes_get_data(r->body, NULL), g_bytes_get_size(r->body));
}

static void
test_database_down(Fixture *f, gconstpointer data)
{
	g_autofree gchar *before = NULL;
	g_autofree gchar *after = NULL;
	gdouble took;

	for (guint i = 0; i < 6; i++)
		g_free(new_conversation(f->d[i % N_INSTANCES], f->token, f->agent));
	before = conversation_ids(f->d[0], f->token);

	confab_test_pg_pause(cluster);
	assert_unavailable(f, "database hanging");
	confab_test_pg_resume(cluster);
	for (guint i = 0; i < N_INSTANCES; i++) {
		took = wait_status(f->d[i], "/api/v1/conversations", f->token, 200, 10000);
		g_test_message("resumed: instance %u serving again after %.2f s", i, took);
	}

	confab_test_pg_kill(cluster);
	assert_unavailable(f, "database down");
	confab_test_pg_restart(cluster);
	for (guint i = 0; i < N_INSTANCES; i++) {
		took = wait_status(f->d[i], "/api/v1/conversations", f->token, 200, 10000);
		g_test_message("restarted: instance %u serving again after %.2f s", i, took);
	}
	/* nothing acknowledged was lost, and turns work again */
	after = conversation_ids(f->d[1], f->token);
	g_assert_cmpstr(after, ==, before);
	g_free(new_conversation(f->d[2], f->token, f->agent));
}

int
main(int argc, char **argv)
{
	g_autofree gchar *dbus_daemon = NULL;
	gint status;

	confab_test_init(&argc, &argv, FALSE);
	if (g_getenv("CONFABD") == NULL) {
		g_printerr("SKIP: CONFABD is not set; run the tests with meson test\n");
		return CONFAB_TEST_SKIP;
	}
	dbus_daemon = g_find_program_in_path("dbus-daemon");
	if (dbus_daemon == NULL) {
		g_printerr("SKIP: dbus-daemon is not installed (apt-get install dbus-daemon)\n");
		return CONFAB_TEST_SKIP;
	}
	/* exits 77 without the server binaries */
	cluster = confab_test_pg_start();
#define ADD(name, func) g_test_add(name, Fixture, NULL, fixture_setup, func, fixture_teardown)
	ADD("/confab/postgres/quota-exact", test_quota_exact);
	g_test_add("/confab/postgres/parallel-across",
		   Fixture,
		   "[quota]\ndefault_max_parallel=2\n",
		   fixture_setup,
		   test_parallel_across,
		   fixture_teardown);
	g_test_add("/confab/postgres/tokens-across",
		   Fixture,
		   "[quota]\ndefault_monthly_tokens=10360\n",
		   fixture_setup,
		   test_tokens_across,
		   fixture_teardown);
	g_test_add("/confab/postgres/tpm-exact",
		   Fixture,
		   "[quota]\ndefault_tpm=10360\n",
		   fixture_setup,
		   test_tpm_exact,
		   fixture_teardown);
	g_test_add("/confab/postgres/rate-exact",
		   Fixture,
		   "[quota]\ndefault_rpm=10\n",
		   fixture_setup,
		   test_rate_exact,
		   fixture_teardown);
	ADD("/confab/postgres/admin-propagates", test_admin_propagates);
	ADD("/confab/postgres/mcp-oauth-across", test_mcp_oauth_across);
	ADD("/confab/postgres/conversation-across", test_conversation_across);
	ADD("/confab/postgres/busy-across", test_busy_across);
	ADD("/confab/postgres/response-running-across", test_response_running_across);
	ADD("/confab/postgres/kill-instance", test_kill_instance);
	ADD("/confab/postgres/response-killed-delete", test_response_killed_delete);
	ADD("/confab/postgres/background-across", test_background_across);
	ADD("/confab/postgres/database-down", test_database_down);
#undef ADD
	status = g_test_run();
	confab_test_pg_stop(cluster);
	return status;
}
