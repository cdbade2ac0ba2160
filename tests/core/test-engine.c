/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "core/confab-engine.h"
#include "providers/confab-provider-echo.h"
#include "store/sqlite/confab-store-sqlite.h"
#include "util/confab-error.h"

/* The engine on a real SQLite store: its caches of agents and tokens, how
 * it authenticates, what it refuses, quota admission through the store,
 * the turns in flight and the stop. */

typedef struct {
	gchar *dir;
	ConfabConfig *config;
	ConfabStore *store;
	ConfabEngine *engine;
} Fixture;

static gboolean
on_timeout(gpointer data)
{
	g_error("an engine operation did not complete within 30 s");
	return G_SOURCE_REMOVE;
}

static void
on_result(GObject *source, GAsyncResult *result, gpointer user_data)
{
	GAsyncResult **slot = user_data;
	g_assert_null(*slot);
	*slot = g_object_ref(result);
}

static GAsyncResult *
wait_for(GAsyncResult **slot)
{
	guint timeout = g_timeout_add_seconds(30, on_timeout, NULL);
	while (*slot == NULL)
		g_main_context_iteration(NULL, TRUE);
	g_source_remove(timeout);
	return g_steal_pointer(slot);
}

static void
load_engine(Fixture *f)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabProviderEcho) echo = confab_provider_echo_new();

	f->engine = confab_engine_new(f->config, f->store);
	confab_engine_add_provider(f->engine, CONFAB_PROVIDER(echo));
	confab_engine_load_async(f->engine, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_engine_load_finish(f->engine, res, &error));
	g_assert_no_error(error);
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	g_autofree gchar *path = NULL;
	g_autoptr(GError) error = NULL;

	f->dir = confab_test_make_tmpdir("engine");
	path = g_build_filename(f->dir, "confab.db", NULL);
	f->config = confab_config_new();
	f->config->max_inflight_turns = 2;
	f->store = CONFAB_STORE(confab_store_sqlite_new(path, 1, &error));
	g_assert_no_error(error);
	load_engine(f);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_clear_object(&f->engine);
	confab_store_close(f->store);
	g_clear_object(&f->store);
	confab_config_free(f->config);
	confab_test_rm_rf(f->dir);
	g_free(f->dir);
}

static ConfabAgent *
new_agent(const gchar *name, const gchar *provider)
{
	ConfabAgent *agent = confab_agent_new();
	g_autofree gchar *id = g_strdup_printf("agt_%026u", g_str_hash(name));
	confab_agent_set_id(agent, id);
	confab_agent_set_name(agent, name);
	confab_agent_set_provider(agent, provider);
	return agent;
}

static gboolean
save_agent(Fixture *f, ConfabAgent *agent, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_engine_save_agent_async(f->engine, agent, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_engine_save_agent_finish(f->engine, res, error);
}

static gchar *
create_token(Fixture *f,
	     const gchar *owner,
	     const gchar *const *scopes,
	     const gchar *agent_id,
	     ConfabToken **token_out)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	gchar *secret = NULL;
	ConfabToken *token;

	confab_engine_create_token_async(f->engine,
					 owner,
					 "test",
					 scopes,
					 agent_id,
					 0,
					 NULL,
					 on_result,
					 &slot);
	res = wait_for(&slot);
	token = confab_engine_create_token_finish(f->engine, res, &secret, &error);
	g_assert_no_error(error);
	if (token_out != NULL)
		*token_out = token;
	else
		g_object_unref(token);
	return secret;
}

static void
test_caches_loaded(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabAgent) agent = new_agent("kept", "echo");
	const gchar *scopes[] = {"chat.completions", NULL};
	g_autofree gchar *secret = NULL;
	g_autoptr(ConfabPrincipal) principal = NULL;
	g_autofree gchar *header = NULL;
	g_autoptr(ConfabAgent) found = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_true(save_agent(f, agent, &error));
	secret = create_token(f, "alice", scopes, NULL, NULL);
	/* a second engine on the same store loads what the first saved */
	g_clear_object(&f->engine);
	load_engine(f);
	found = confab_engine_lookup_agent(f->engine, confab_agent_get_id(agent));
	g_assert_nonnull(found);
	g_assert_cmpstr(confab_agent_get_name(found), ==, "kept");
	header = g_strconcat("Bearer ", secret, NULL);
	principal = confab_engine_authenticate(f->engine, header, CONFAB_SCOPES_API, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(principal->owner, ==, "alice");
}

static void
test_authenticate(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabAgent) agent = new_agent("bound", "echo");
	const gchar *chat[] = {"chat.completions", NULL};
	const gchar *other[] = {"metrics.read", NULL};
	g_autoptr(ConfabToken) token = NULL;
	g_autofree gchar *good = NULL;
	g_autofree gchar *scopeless = NULL;
	g_autofree gchar *good_header = NULL;
	g_autofree gchar *scopeless_header = NULL;
	const struct {
		const gchar *header;
		ConfabErrorCode code;
	} bad[] = {
	    {NULL, CONFAB_ERROR_MISSING_API_KEY},
	    {"", CONFAB_ERROR_MISSING_API_KEY},
	    {"Basic abc", CONFAB_ERROR_INVALID_API_KEY},
	    {"Bearer sk-not-ours", CONFAB_ERROR_INVALID_API_KEY},
	    {"Bearer nca_unknownunknownunknownunknownunknown1", CONFAB_ERROR_INVALID_API_KEY},
	};

	g_assert_true(save_agent(f, agent, NULL));
	good = create_token(f, "bob", chat, confab_agent_get_id(agent), &token);
	scopeless = create_token(f, "bob", other, NULL, NULL);
	good_header = g_strconcat("Bearer ", good, NULL);
	scopeless_header = g_strconcat("bearer  ", scopeless, NULL);

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) error = NULL;
		g_assert_null(confab_engine_authenticate(f->engine,
							 bad[i].header,
							 CONFAB_SCOPES_API,
							 &error));
		g_assert_error(error, CONFAB_ERROR, (gint)bad[i].code);
	}
	{
		g_autoptr(GError) error = NULL;
		g_assert_null(confab_engine_authenticate(f->engine,
							 scopeless_header,
							 CONFAB_SCOPES_API,
							 &error));
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INSUFFICIENT_SCOPE);
	}
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabPrincipal) p =
		    confab_engine_authenticate(f->engine, good_header, CONFAB_SCOPES_API, &error);
		g_assert_no_error(error);
		g_assert_cmpstr(p->owner, ==, "bob");
		g_assert_cmpstr(p->token_id, ==, confab_token_get_id(token));
		g_assert_cmpstr(p->agent_id, ==, confab_agent_get_id(agent));
		g_assert_cmpint(p->source, ==, CONFAB_SESSION_SOURCE_API);
	}
	/* the store keeps the digest, never the secret */
	g_assert_cmpuint(g_bytes_get_size(confab_token_get_hash(token)), ==, 32);
	g_assert_null(
	    memmem(g_bytes_get_data(confab_token_get_hash(token), NULL), 32, good, strlen(good)));
	/* revoked: refused from then on */
	{
		GAsyncResult *slot = NULL;
		g_autoptr(GAsyncResult) res = NULL;
		g_autoptr(GError) error = NULL;
		confab_engine_revoke_token_async(f->engine,
						 confab_token_get_id(token),
						 NULL,
						 on_result,
						 &slot);
		res = wait_for(&slot);
		g_assert_true(confab_engine_revoke_token_finish(f->engine, res, &error));
		g_assert_null(
		    confab_engine_authenticate(f->engine, good_header, CONFAB_SCOPES_API, &error));
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_API_KEY);
	}
}

static gboolean
cached_is_refused(gpointer data)
{
	gpointer *args = data;
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabPrincipal) p =
	    confab_engine_authenticate_cached(args[0], args[1], args[2], CONFAB_SCOPES_API, &error);
	return p == NULL && g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_API_KEY);
}

/* a connection's cache skips the hash of a header it saw last, but never
 * outlives a change: another token, a narrower scope, a revocation here
 * or elsewhere (another daemon on the same database) */
static void
test_authenticate_cached(Fixture *f, gconstpointer data)
{
	const gchar *chat[] = {"chat.completions", NULL};
	g_autoptr(ConfabToken) token = NULL;
	g_autoptr(ConfabToken) other_token = NULL;
	g_autofree gchar *good = create_token(f, "bob", chat, NULL, &token);
	g_autofree gchar *other = create_token(f, "eve", chat, NULL, &other_token);
	g_autofree gchar *good_header = g_strconcat("Bearer ", good, NULL);
	g_autofree gchar *other_header = g_strconcat("Bearer ", other, NULL);
	g_autofree gchar *tampered = g_strdup(good_header);
	g_autoptr(ConfabEngineAuthCache) cache = confab_engine_auth_cache_new();
	const gchar *headers[] = {good_header, good_header, other_header, good_header};
	const gchar *owners[] = {"bob", "bob", "eve", "bob"};

	for (guint i = 0; i < G_N_ELEMENTS(headers); i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabPrincipal) p = confab_engine_authenticate_cached(f->engine,
										 cache,
										 headers[i],
										 CONFAB_SCOPES_API,
										 &error);
		g_assert_no_error(error);
		g_assert_cmpstr(p->owner, ==, owners[i]);
	}
	/* the same length, another secret */
	tampered[strlen(tampered) - 1] = tampered[strlen(tampered) - 1] == 'a' ? 'b' : 'a';
	{
		g_autoptr(GError) error = NULL;
		g_assert_null(confab_engine_authenticate_cached(f->engine,
								cache,
								tampered,
								CONFAB_SCOPES_API,
								&error));
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_API_KEY);
	}
	/* the scopes are checked each time */
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabPrincipal) p = confab_engine_authenticate_cached(f->engine,
										 cache,
										 good_header,
										 CONFAB_SCOPES_API,
										 &error);
		g_assert_no_error(error);
		g_assert_null(confab_engine_authenticate_cached(f->engine,
								cache,
								good_header,
								CONFAB_SCOPES_METRICS,
								&error));
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INSUFFICIENT_SCOPE);
	}
	/* revoked here: refused on the next request */
	{
		GAsyncResult *slot = NULL;
		g_autoptr(GAsyncResult) res = NULL;
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabPrincipal) p = confab_engine_authenticate_cached(f->engine,
										 cache,
										 good_header,
										 CONFAB_SCOPES_API,
										 &error);
		g_assert_no_error(error);
		confab_engine_revoke_token_async(f->engine,
						 confab_token_get_id(token),
						 NULL,
						 on_result,
						 &slot);
		res = wait_for(&slot);
		g_assert_true(confab_engine_revoke_token_finish(f->engine, res, &error));
		g_assert_null(confab_engine_authenticate_cached(f->engine,
								cache,
								good_header,
								CONFAB_SCOPES_API,
								&error));
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_API_KEY);
	}
	/* revoked elsewhere: refused once the store says tokens changed */
	{
		GAsyncResult *slot = NULL;
		g_autoptr(GAsyncResult) res = NULL;
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabPrincipal) p = confab_engine_authenticate_cached(f->engine,
										 cache,
										 other_header,
										 CONFAB_SCOPES_API,
										 &error);
		gpointer args[3] = {f->engine, cache, other_header};
		/* another daemon's copy: the engine's own is never changed */
		g_autoptr(ConfabToken) copy = confab_token_new();

		g_assert_no_error(error);

		confab_token_set_id(copy, confab_token_get_id(other_token));
		confab_token_set_owner(copy, confab_token_get_owner(other_token));
		confab_token_set_name(copy, confab_token_get_name(other_token));
		confab_token_set_scopes(copy, confab_token_get_scopes(other_token));
		confab_token_set_agent_id(copy, confab_token_get_agent_id(other_token));
		confab_token_set_hash(copy, confab_token_get_hash(other_token));
		confab_token_set_created_at(copy, confab_token_get_created_at(other_token));
		confab_token_set_expires_at(copy, confab_token_get_expires_at(other_token));
		confab_token_set_revoked_at(copy, g_get_real_time() / G_USEC_PER_SEC);
		confab_store_save_token_async(f->store, copy, NULL, on_result, &slot);
		res = wait_for(&slot);
		g_assert_true(confab_store_save_token_finish(f->store, res, NULL));
		confab_store_emit_changed(f->store, CONFAB_STORE_CHANGE_TOKENS);
		g_assert_true(confab_test_wait_until(cached_is_refused, args, 10000));
	}
}

static void
test_agent_checks(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabAgent) nameless = new_agent("x", "echo");
	g_autoptr(ConfabAgent) unknown = new_agent("y", "telepathy");
	g_autoptr(GError) error = NULL;

	confab_agent_set_name(nameless, "");
	g_assert_false(save_agent(f, nameless, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	g_assert_cmpstr(confab_error_get_param(error), ==, "name");
	g_clear_error(&error);
	g_assert_false(save_agent(f, unknown, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	g_assert_cmpstr(confab_error_get_param(error), ==, "provider");
	/* nothing refused reached the cache */
	g_assert_null(confab_engine_lookup_agent(f->engine, confab_agent_get_id(unknown)));
}

static gboolean
agent_is_cached(gpointer data)
{
	gpointer *args = data;
	g_autoptr(ConfabAgent) agent = confab_engine_lookup_agent(args[0], args[1]);
	return agent != NULL;
}

/* a change made elsewhere (another daemon on the same database) reaches
 * the caches once the store says so */
static void
test_store_invalidates(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabAgent) agent = new_agent("elsewhere", "echo");
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	gpointer args[2] = {f->engine, (gpointer)confab_agent_get_id(agent)};

	confab_store_save_agent_async(f->store, agent, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_save_agent_finish(f->store, res, NULL));
	g_assert_null(confab_engine_lookup_agent(f->engine, confab_agent_get_id(agent)));
	confab_store_emit_changed(f->store, CONFAB_STORE_CHANGE_AGENTS);
	g_assert_true(confab_test_wait_until(agent_is_cached, args, 10000));
}

static void
test_admit_quota(Fixture *f, gconstpointer data)
{
	g_autofree gchar *month = confab_engine_current_month(f->engine);
	ConfabQuotaInfo info;

	f->config->default_monthly_requests = 2;
	for (guint i = 0; i < 2; i++) {
		GAsyncResult *slot = NULL;
		g_autoptr(GAsyncResult) res = NULL;
		g_autoptr(GError) error = NULL;
		confab_engine_admit_quota_async(f->engine, "carol", month, NULL, on_result, &slot);
		res = wait_for(&slot);
		g_assert_true(confab_engine_admit_quota_finish(f->engine, res, &info, &error));
		g_assert_cmpuint(info.limit, ==, 2);
		g_assert_cmpuint(info.remaining, ==, 1 - i);
		g_assert_cmpint(info.reset_seconds, >, 0);
		g_assert_cmpint(info.reset_seconds, <=, 31 * 24 * 3600);
	}
	{
		GAsyncResult *slot = NULL;
		g_autoptr(GAsyncResult) res = NULL;
		g_autoptr(GError) error = NULL;
		confab_engine_admit_quota_async(f->engine, "carol", month, NULL, on_result, &slot);
		res = wait_for(&slot);
		g_assert_false(confab_engine_admit_quota_finish(f->engine, res, &info, &error));
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_QUOTA_EXCEEDED);
		/* the headers of a refusal still say what the quota is */
		g_assert_cmpuint(info.limit, ==, 2);
		g_assert_cmpuint(info.remaining, ==, 0);
	}
}

static void
on_drained(ConfabEngine *engine, gpointer user_data)
{
	gboolean *drained = user_data;
	*drained = TRUE;
}

static void
test_turns_in_flight(Fixture *f, gconstpointer data)
{
	g_autoptr(GCancellable) a = g_cancellable_new();
	g_autoptr(GCancellable) b = g_cancellable_new();
	g_autoptr(GCancellable) c = g_cancellable_new();
	g_autoptr(GError) error = NULL;
	gboolean drained = FALSE;

	g_assert_true(confab_engine_turn_begin(f->engine, a, &error));
	g_assert_true(confab_engine_turn_begin(f->engine, b, &error));
	/* max_inflight_turns = 2 */
	g_assert_false(confab_engine_turn_begin(f->engine, c, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_OVERLOADED);
	g_clear_error(&error);
	g_assert_cmpuint(confab_engine_get_active_turns(f->engine), ==, 2);

	g_signal_connect(f->engine, "drained", G_CALLBACK(on_drained), &drained);
	confab_engine_begin_shutdown(f->engine);
	g_assert_false(confab_engine_turn_begin(f->engine, c, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_SHUTTING_DOWN);
	/* cancel_turns reaches every running turn */
	confab_engine_cancel_turns(f->engine);
	g_assert_true(g_cancellable_is_cancelled(a));
	g_assert_true(g_cancellable_is_cancelled(b));
	confab_engine_turn_end(f->engine, a, TRUE);
	g_assert_false(drained);
	confab_engine_turn_end(f->engine, b, FALSE);
	g_assert_true(drained);
	g_assert_cmpuint(confab_engine_get_turns_served(f->engine), ==, 1);
}

/* A serving thread's turn: begun and ended on its own context. */
typedef struct {
	ConfabEngine *engine;
	GThread *thread;
	GCancellable *cancellable;
	gint begun;		 /* atomic */
	gint stop;		 /* atomic: end the turn */
	gboolean cancelled_here; /* "cancelled" ran on this thread */
	gint done;		 /* atomic */
} Worker;

static void
worker_cancelled(GCancellable *cancellable, gpointer user_data)
{
	Worker *w = user_data;
	w->cancelled_here = g_thread_self() == w->thread;
}

static gpointer
worker_run(gpointer data)
{
	Worker *w = data;
	g_autoptr(GMainContext) context = g_main_context_new();
	g_autoptr(GError) error = NULL;

	g_main_context_push_thread_default(context);
	g_cancellable_connect(w->cancellable, G_CALLBACK(worker_cancelled), w, NULL);
	g_assert_true(confab_engine_turn_begin(w->engine, w->cancellable, &error));
	g_atomic_int_set(&w->begun, 1);
	while (!g_atomic_int_get(&w->stop))
		g_main_context_iteration(context, FALSE);
	confab_engine_turn_end(w->engine, w->cancellable, TRUE);
	g_main_context_pop_thread_default(context);
	g_atomic_int_set(&w->done, 1);
	return NULL;
}

static gboolean
int_set(gpointer data)
{
	return g_atomic_int_get((gint *)data) != 0;
}

static gboolean
worker_cancelled_yet(gpointer data)
{
	Worker *w = data;
	if (g_cancellable_is_cancelled(w->cancellable))
		g_atomic_int_set(&w->stop, 1);
	return g_atomic_int_get(&w->stop);
}

/* A turn of another thread is cancelled on its thread (its handlers touch
 * what only that thread may); ::drained fires on the engine's context. */
static void
test_turn_of_another_thread(Fixture *f, gconstpointer data)
{
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	Worker w = {f->engine, NULL, cancellable};
	gboolean drained = FALSE;

	w.thread = g_thread_new("worker", worker_run, &w);
	g_assert_true(confab_test_wait_until(int_set, &w.begun, 5000));
	g_assert_cmpuint(confab_engine_get_active_turns(f->engine), ==, 1);
	g_signal_connect(f->engine, "drained", G_CALLBACK(on_drained), &drained);
	confab_engine_begin_shutdown(f->engine);
	confab_engine_cancel_turns(f->engine);
	g_assert_true(confab_test_wait_until(worker_cancelled_yet, &w, 5000));
	g_assert_true(confab_test_wait_until(int_set, &w.done, 5000));
	g_thread_join(w.thread);
	g_assert_true(w.cancelled_here);
	/* emitted here, where the engine was made, once this context runs */
	g_assert_true(confab_test_wait_until(int_set, &drained, 5000));
	g_assert_cmpuint(confab_engine_get_active_turns(f->engine), ==, 0);
	g_assert_cmpuint(confab_engine_get_turns_served(f->engine), ==, 1);
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
#define ADD(name, func) g_test_add(name, Fixture, NULL, fixture_setup, func, fixture_teardown)
	ADD("/confab/engine/caches-loaded", test_caches_loaded);
	ADD("/confab/engine/authenticate", test_authenticate);
	ADD("/confab/engine/authenticate-cached", test_authenticate_cached);
	ADD("/confab/engine/agent-checks", test_agent_checks);
	ADD("/confab/engine/store-invalidates", test_store_invalidates);
	ADD("/confab/engine/admit-quota", test_admit_quota);
	ADD("/confab/engine/turns-in-flight", test_turns_in_flight);
	ADD("/confab/engine/turn-of-another-thread", test_turn_of_another_thread);
#undef ADD
	return g_test_run();
}
