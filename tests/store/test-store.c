/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "confab-test-helper.h"
#include "confab-test-pg.h"
#include "model/confab-id.h"
#include "store/postgres/confab-pg-schema.h"
#include "store/postgres/confab-store-postgres.h"
#include "store/sqlite/confab-store-sqlite.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * The store, through its interface: one table of tests registered once per
 * backend (add_tests()), so that every backend keeps the same promises —
 * writes that commit whole or not at all, cursor pages, quota admission that
 * never overshoots, one turn at a time per session. Tests of one backend's
 * own mechanics (SQLite's file, schema version and group commit;
 * PostgreSQL's migrations, instances and failures) come after.
 *
 * PostgreSQL runs as a throwaway cluster for the whole file
 * (tests/pg/pg-cluster), one fresh database per test; without the server
 * binaries its tests are skipped.
 */

typedef struct _Fixture Fixture;

typedef struct {
	const gchar *name;
	/* opens (or reopens, keeping the data) f->store */
	void (*open)(Fixture *f);
} Backend;

struct _Fixture {
	const Backend *backend;
	gchar *dir;
	gchar *path;
	gchar *pg_url; /* the test's own database */
	ConfabStore *store;
	ConfabIdGenerator *ids;
	gint64 clock_ms;
	gchar *month; /* this month, as the store counts it */
};

static gint64
fixture_clock(gpointer data)
{
	Fixture *f = data;
	/* every id a millisecond later than the last: distinct created_at
	 * seconds are not needed, ids sort anyway */
	return f->clock_ms++;
}

static ConfabStore *
open_store(const gchar *path)
{
	g_autoptr(GError) error = NULL;
	ConfabStoreSqlite *store = confab_store_sqlite_new(path, 2, &error);
	g_assert_no_error(error);
	g_assert_nonnull(store);
	return CONFAB_STORE(store);
}

static void
sqlite_open(Fixture *f)
{
	f->store = open_store(f->path);
}

static const Backend sqlite_backend = {"sqlite", sqlite_open};

static ConfabTestPg *pg_cluster;

static ConfabStore *
open_postgres(const gchar *url)
{
	g_autoptr(GError) error = NULL;
	ConfabStorePostgres *store = confab_store_postgres_new(url, NULL, 4, 15, &error);
	g_assert_no_error(error);
	g_assert_nonnull(store);
	return CONFAB_STORE(store);
}

static void
postgres_open(Fixture *f)
{
	if (f->pg_url == NULL)
		f->pg_url = confab_test_pg_new_database(pg_cluster);
	f->store = open_postgres(f->pg_url);
}

static const Backend postgres_backend = {"postgresql", postgres_open};

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();

	f->backend = data;
	f->dir = confab_test_make_tmpdir("store");
	f->path = g_build_filename(f->dir, "confab.db", NULL);
	f->month = g_date_time_format(now, "%Y-%m");
	f->backend->open(f);
	f->ids = confab_id_generator_new();
	f->clock_ms = 1700000000000;
	confab_id_generator_set_clock(f->ids, fixture_clock, f);
}

/* Closes and opens the store again: what it reads now was committed. */
static void
reopen(Fixture *f)
{
	confab_store_close(f->store);
	g_clear_object(&f->store);
	f->backend->open(f);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	if (f->store != NULL) {
		confab_store_close(f->store);
		g_clear_object(&f->store);
	}
	g_clear_object(&f->ids);
	confab_test_rm_rf(f->dir);
	g_free(f->dir);
	g_free(f->path);
	g_free(f->pg_url);
	g_free(f->month);
}

/* ---------- waiting for async results ---------- */

static gboolean
on_timeout(gpointer data)
{
	g_error("a store operation did not complete within 30 s");
	return G_SOURCE_REMOVE;
}

static void
on_result(GObject *source, GAsyncResult *result, gpointer user_data)
{
	GAsyncResult **slot = user_data;
	g_assert_null(*slot);
	*slot = g_object_ref(result);
}

/* Runs the main context until *@slot is set, with a deadline. */
static GAsyncResult *
wait_for(GAsyncResult **slot)
{
	guint timeout = g_timeout_add_seconds(30, on_timeout, NULL);
	while (*slot == NULL)
		g_main_context_iteration(NULL, TRUE);
	g_source_remove(timeout);
	return g_steal_pointer(slot);
}

static gboolean
save_agent(Fixture *f, ConfabAgent *agent, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_save_agent_async(f->store, agent, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_save_agent_finish(f->store, res, error);
}

static gboolean
delete_agent(Fixture *f, const gchar *id, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_delete_agent_async(f->store, id, 1700000100, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_delete_agent_finish(f->store, res, error);
}

static gboolean
save_token(Fixture *f, ConfabToken *token, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_save_token_async(f->store, token, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_save_token_finish(f->store, res, error);
}

static gboolean
set_quota(Fixture *f, const gchar *owner, guint64 n, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_set_quota_async(f->store, owner, n, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_set_quota_finish(f->store, res, error);
}

static gboolean
begin_turn(Fixture *f, ConfabStoreTurn *record, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_commit_turn_async(f->store, record, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_commit_turn_finish(f->store, res, error);
}

/* an answer alone, as a stream commits it at its end */
static gboolean
finish_turn(Fixture *f, ConfabMessage *msg, GError **error)
{
	g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();

	record->session = confab_session_new();
	confab_session_set_id(record->session, confab_message_get_session_id(msg));
	record->assistant = g_object_ref(msg);
	return begin_turn(f, record, error);
}

static GPtrArray *
load_agents(Fixture *f, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_load_agents_async(f->store, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_load_agents_finish(f->store, res, error);
}

static GPtrArray *
load_tokens(Fixture *f, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_load_tokens_async(f->store, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_load_tokens_finish(f->store, res, error);
}

static ConfabStoreUsage *
get_usage(Fixture *f, const gchar *owner, guint64 default_limit)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	ConfabStoreUsage *usage;
	confab_store_get_usage_async(f->store,
				     owner,
				     f->month,
				     default_limit,
				     NULL,
				     on_result,
				     &slot);
	res = wait_for(&slot);
	usage = confab_store_get_usage_finish(f->store, res, &error);
	g_assert_no_error(error);
	return usage;
}

/* the requests committed for @owner this month, read after a reopen */
static guint64
durable_usage(Fixture *f, const gchar *owner)
{
	g_autoptr(ConfabStoreUsage) usage = NULL;
	reopen(f);
	usage = get_usage(f, owner, 0);
	return usage->requests;
}

static ConfabStoreUsage *
admit(Fixture *f, const gchar *owner, guint64 default_limit)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	ConfabStoreUsage *usage;
	confab_store_admit_quota_async(f->store,
				       owner,
				       f->month,
				       default_limit,
				       0,
				       0,
				       NULL,
				       on_result,
				       &slot);
	res = wait_for(&slot);
	usage = confab_store_admit_quota_finish(f->store, res, &error);
	g_assert_no_error(error);
	return usage;
}

static GPtrArray *
list_usage(Fixture *f, guint64 default_limit)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GPtrArray *list;
	confab_store_list_usage_async(f->store, f->month, default_limit, NULL, on_result, &slot);
	res = wait_for(&slot);
	list = confab_store_list_usage_finish(f->store, res, &error);
	g_assert_no_error(error);
	return list;
}

static gboolean
acquire(Fixture *f, const gchar *session_id, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_acquire_session_async(f->store, session_id, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_acquire_session_finish(f->store, res, error);
}

static gboolean
is_running(Fixture *f, const gchar *session_id)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	gboolean running = FALSE;

	confab_store_session_is_running_async(f->store, session_id, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_session_is_running_finish(f->store, res, &running, &error));
	g_assert_no_error(error);
	return running;
}

static gboolean
delete_session(Fixture *f, const gchar *id, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_delete_session_async(f->store, id, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_delete_session_finish(f->store, res, error);
}

static ConfabSession *
get_session(Fixture *f, const gchar *id, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_get_session_async(f->store, id, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_get_session_finish(f->store, res, error);
}

static GPtrArray *
get_history(Fixture *f, const gchar *id)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GPtrArray *history;
	confab_store_get_history_async(f->store, id, NULL, on_result, &slot);
	res = wait_for(&slot);
	history = confab_store_get_history_finish(f->store, res, &error);
	g_assert_no_error(error);
	g_assert_nonnull(history);
	return history;
}

static ConfabStorePage *
list_sessions(Fixture *f, const ConfabStoreSessionQuery *query)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	ConfabStorePage *page;
	confab_store_list_sessions_async(f->store, query, NULL, on_result, &slot);
	res = wait_for(&slot);
	page = confab_store_list_sessions_finish(f->store, res, &error);
	g_assert_no_error(error);
	g_assert_nonnull(page);
	return page;
}

static ConfabStorePage *
list_messages(Fixture *f, const ConfabStoreMessageQuery *query)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	ConfabStorePage *page;
	confab_store_list_messages_async(f->store, query, NULL, on_result, &slot);
	res = wait_for(&slot);
	page = confab_store_list_messages_finish(f->store, res, &error);
	g_assert_no_error(error);
	g_assert_nonnull(page);
	return page;
}

/* ---------- building rows ---------- */

static ConfabAgent *
make_agent(Fixture *f, const gchar *name)
{
	ConfabAgent *agent = confab_agent_new();
	g_autofree gchar *id = confab_id_generator_next(f->ids, CONFAB_PREFIX_AGENT);
	confab_agent_set_id(agent, id);
	confab_agent_set_name(agent, name);
	confab_agent_set_provider(agent, "echo");
	confab_agent_set_instructions(agent, "Be brief.");
	confab_agent_set_created_at(agent, 1700000000);
	confab_agent_set_updated_at(agent, 1700000000);
	return agent;
}

static ConfabMessage *
make_message(Fixture *f, const gchar *session_id, const gchar *role, const gchar *text)
{
	ConfabMessage *msg = confab_message_new();
	g_autofree gchar *id = confab_id_generator_next(f->ids, CONFAB_PREFIX_MESSAGE);
	g_autoptr(GString) content = g_string_new("[{\"type\":\"text\",\"text\":");
	confab_json_append_string(content, text);
	g_string_append(content, "}]");
	confab_message_set_id(msg, id);
	confab_message_set_session_id(msg, session_id);
	confab_message_set_role(msg, role);
	confab_message_set_model(msg, "agt_model");
	confab_message_set_content(msg, content->str);
	confab_message_set_content_blocks(msg, content->str);
	confab_message_set_created_at(msg, 1700000000);
	return msg;
}

/* Creates a session with one user message; returns its id. */
static gchar *
create_session(Fixture *f,
	       const gchar *owner,
	       const gchar *agent_id,
	       ConfabSessionSource source,
	       const gchar *text)
{
	g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
	g_autoptr(GError) error = NULL;
	gchar *id = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);

	record->session = confab_session_new();
	confab_session_set_id(record->session, id);
	confab_session_set_owner(record->session, owner);
	confab_session_set_agent_id(record->session, agent_id);
	confab_session_set_source(record->session, source);
	confab_session_set_title(record->session, text);
	confab_session_set_created_at(record->session, 1700000000);
	confab_session_set_updated_at(record->session, 1700000000);
	record->session_is_new = TRUE;
	g_ptr_array_add(record->messages, make_message(f, id, "user", text));
	g_assert_true(begin_turn(f, record, &error));
	g_assert_no_error(error);
	return id;
}

static gint
file_mode(const gchar *path)
{
	GStatBuf st;
	if (g_stat(path, &st) != 0)
		return -1;
	return st.st_mode & 0777;
}

static gint
read_user_version(const gchar *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;
	gint version;

	g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
	g_assert_cmpint(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, NULL),
			==,
			SQLITE_OK);
	g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
	version = sqlite3_column_int(stmt, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return version;
}

/* ---------- tests ---------- */

static void
test_file_private(Fixture *f, gconstpointer data)
{
	g_autofree gchar *wal = g_strconcat(f->path, "-wal", NULL);
	g_autofree gchar *shm = g_strconcat(f->path, "-shm", NULL);
	g_autofree gchar *sid = NULL;

	g_assert_cmpint(file_mode(f->path), ==, 0600);
	/* after a write, the WAL and its index are private too */
	sid = create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "secret stuff");
	if (g_file_test(wal, G_FILE_TEST_EXISTS))
		g_assert_cmpint(file_mode(wal), ==, 0600);
	if (g_file_test(shm, G_FILE_TEST_EXISTS))
		g_assert_cmpint(file_mode(shm), ==, 0600);
}

static void
test_existing_file_made_private(void)
{
	g_autofree gchar *dir = confab_test_make_tmpdir("store-mode");
	g_autofree gchar *path = g_build_filename(dir, "confab.db", NULL);
	g_autoptr(ConfabStore) store = NULL;

	g_assert_true(g_file_set_contents(path, "", 0, NULL));
	g_assert_cmpint(g_chmod(path, 0644), ==, 0);
	store = open_store(path);
	g_assert_cmpint(file_mode(path), ==, 0600);
	confab_store_close(store);
	confab_test_rm_rf(dir);
}

static void
test_user_version(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(read_user_version(f->path), ==, CONFAB_DB_VERSION);
	g_assert_cmpint(CONFAB_DB_VERSION, >=, 1);
}

static void
test_future_version_refused(Fixture *f, gconstpointer data)
{
	sqlite3 *db = NULL;
	g_autofree gchar *sid = create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "x");
	g_autoptr(GError) error = NULL;
	ConfabStoreSqlite *store;

	confab_store_close(f->store);
	g_clear_object(&f->store);
	g_assert_cmpint(sqlite3_open(f->path, &db), ==, SQLITE_OK);
	g_assert_cmpint(sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL),
			==,
			SQLITE_OK);
	sqlite3_close(db);

	store = confab_store_sqlite_new(f->path, 1, &error);
	g_assert_null(store);
	g_assert_nonnull(error);
	/* and it was left alone */
	g_assert_cmpint(read_user_version(f->path), ==, 99);
}

static void
test_agents(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabAgent) a = make_agent(f, "alpha");
	g_autoptr(ConfabAgent) b = make_agent(f, "beta");
	g_autoptr(GPtrArray) agents = NULL;
	g_autoptr(GPtrArray) after = NULL;
	g_autoptr(GError) error = NULL;
	ConfabAgent *loaded;

	confab_agent_set_provider(b, "openai");
	confab_agent_set_base_url(b, "https://api.example.com/v1");
	confab_agent_set_upstream_model(b, "gpt-x");
	confab_agent_set_api_key(b, "sk-secret");
	confab_agent_set_total_timeout(b, 77);
	g_assert_true(save_agent(f, a, &error));
	g_assert_true(save_agent(f, b, &error));
	g_assert_no_error(error);

	agents = load_agents(f, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(agents->len, ==, 2);
	loaded = g_ptr_array_index(agents, 1);
	g_assert_cmpstr(confab_agent_get_id(loaded), ==, confab_agent_get_id(b));
	g_assert_cmpstr(confab_agent_get_name(loaded), ==, "beta");
	g_assert_cmpstr(confab_agent_get_provider(loaded), ==, "openai");
	g_assert_cmpstr(confab_agent_get_base_url(loaded), ==, "https://api.example.com/v1");
	g_assert_cmpstr(confab_agent_get_upstream_model(loaded), ==, "gpt-x");
	g_assert_cmpstr(confab_agent_get_api_key(loaded), ==, "sk-secret");
	g_assert_cmpuint(confab_agent_get_total_timeout(loaded), ==, 77);
	g_assert_cmpstr(confab_agent_get_instructions(loaded), ==, "Be brief.");

	/* saving again updates in place */
	confab_agent_set_name(a, "alpha2");
	confab_agent_set_updated_at(a, 1700000500);
	g_assert_true(save_agent(f, a, &error));
	g_clear_pointer(&agents, g_ptr_array_unref);
	agents = load_agents(f, &error);
	g_assert_cmpuint(agents->len, ==, 2);
	g_assert_cmpstr(confab_agent_get_name(g_ptr_array_index(agents, 0)), ==, "alpha2");
	g_assert_cmpint(confab_agent_get_updated_at(g_ptr_array_index(agents, 0)), ==, 1700000500);
	g_assert_cmpint(confab_agent_get_created_at(g_ptr_array_index(agents, 0)), ==, 1700000000);

	/* deleted: gone from the load, twice is not found */
	g_assert_true(delete_agent(f, confab_agent_get_id(b), &error));
	g_assert_no_error(error);
	after = load_agents(f, &error);
	g_assert_cmpuint(after->len, ==, 1);
	g_assert_cmpstr(confab_agent_get_id(g_ptr_array_index(after, 0)),
			==,
			confab_agent_get_id(a));
	g_assert_false(delete_agent(f, confab_agent_get_id(b), &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_AGENT_NOT_FOUND);
	g_clear_error(&error);
	g_assert_false(delete_agent(f, "agt_nope", &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_AGENT_NOT_FOUND);
}

static void
test_deleted_agent_key_erased(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabAgent) a = make_agent(f, "keyed");
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;

	confab_agent_set_api_key(a, "sk-must-go");
	g_assert_true(save_agent(f, a, NULL));
	g_assert_true(delete_agent(f, confab_agent_get_id(a), NULL));
	/* the upstream key does not linger in the database */
	g_assert_cmpint(sqlite3_open_v2(f->path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
	g_assert_cmpint(sqlite3_prepare_v2(db,
					   "SELECT count(*) FROM agents WHERE api_key IS NOT NULL",
					   -1,
					   &stmt,
					   NULL),
			==,
			SQLITE_OK);
	g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
	g_assert_cmpint(sqlite3_column_int(stmt, 0), ==, 0);
	sqlite3_finalize(stmt);
	sqlite3_close(db);
}

static void
test_tokens(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabToken) t = confab_token_new();
	g_autofree gchar *id = confab_id_generator_next(f->ids, CONFAB_PREFIX_TOKEN);
	const gchar *scopes[] = {"chat.completions", "other.scope", NULL};
	guint8 digest[32];
	g_autoptr(GBytes) hash = NULL;
	g_autoptr(GPtrArray) tokens = NULL;
	g_autoptr(GPtrArray) again = NULL;
	g_autoptr(GError) error = NULL;
	ConfabToken *loaded;

	for (guint i = 0; i < sizeof(digest); i++)
		digest[i] = (guint8)(i * 7 + 1);
	digest[5] = 0; /* a NUL inside the hash is kept */
	hash = g_bytes_new(digest, sizeof(digest));
	confab_token_set_id(t, id);
	confab_token_set_owner(t, "alice");
	confab_token_set_name(t, "laptop");
	confab_token_set_scopes(t, scopes);
	confab_token_set_agent_id(t, "agt_bound");
	confab_token_set_hash(t, hash);
	confab_token_set_created_at(t, 1700000000);
	g_assert_true(save_token(f, t, &error));
	g_assert_no_error(error);

	tokens = load_tokens(f, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(tokens->len, ==, 1);
	loaded = g_ptr_array_index(tokens, 0);
	g_assert_cmpstr(confab_token_get_id(loaded), ==, id);
	g_assert_cmpstr(confab_token_get_owner(loaded), ==, "alice");
	g_assert_cmpstr(confab_token_get_name(loaded), ==, "laptop");
	g_assert_cmpstr(confab_token_get_agent_id(loaded), ==, "agt_bound");
	g_assert_true(g_bytes_equal(confab_token_get_hash(loaded), hash));
	g_assert_cmpstrv(confab_token_get_scopes(loaded), scopes);
	g_assert_cmpint(confab_token_get_revoked_at(loaded), ==, 0);

	/* revoking is saving again */
	confab_token_set_revoked_at(t, 1700000999);
	g_assert_true(save_token(f, t, &error));
	again = load_tokens(f, &error);
	g_assert_cmpuint(again->len, ==, 1);
	g_assert_cmpint(confab_token_get_revoked_at(g_ptr_array_index(again, 0)), ==, 1700000999);
}

static void
test_token_hash_unique(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabToken) t1 = confab_token_new();
	g_autoptr(ConfabToken) t2 = confab_token_new();
	g_autofree gchar *id1 = confab_id_generator_next(f->ids, CONFAB_PREFIX_TOKEN);
	g_autofree gchar *id2 = confab_id_generator_next(f->ids, CONFAB_PREFIX_TOKEN);
	const gchar *scopes[] = {"api.full", NULL};
	g_autoptr(GBytes) hash = g_bytes_new_static("0123456789abcdef0123456789abcdef", 32);
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) tokens = NULL;

	confab_token_set_id(t1, id1);
	confab_token_set_id(t2, id2);
	confab_token_set_owner(t1, "a");
	confab_token_set_owner(t2, "b");
	confab_token_set_scopes(t1, scopes);
	confab_token_set_scopes(t2, scopes);
	confab_token_set_hash(t1, hash);
	confab_token_set_hash(t2, hash);
	g_assert_true(save_token(f, t1, &error));
	/* two tokens with one secret would be ambiguous */
	g_assert_false(save_token(f, t2, &error));
	g_assert_nonnull(error);
	tokens = load_tokens(f, NULL);
	g_assert_cmpuint(tokens->len, ==, 1);
}

static GPtrArray *
get_response(Fixture *f, const gchar *id)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GPtrArray *messages;

	confab_store_get_response_async(f->store, id, NULL, on_result, &slot);
	res = wait_for(&slot);
	messages = confab_store_get_response_finish(f->store, res, &error);
	g_assert_no_error(error);
	g_assert_nonnull(messages);
	return messages;
}

static gboolean
delete_response(Fixture *f, const gchar *id, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;

	confab_store_delete_response_async(f->store, id, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_delete_response_finish(f->store, res, error);
}

/* The messages stored with a response id: read oldest first, deleted
 * together; a session that is not there is its own error. */
static void
test_responses(Fixture *f, gconstpointer data)
{
	g_autofree gchar *sid =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "question");
	g_autoptr(ConfabStoreTurn) second = confab_store_turn_new();
	g_autoptr(ConfabMessage) reply = make_message(f, sid, "assistant", "answer");
	g_autoptr(ConfabMessage) reply2 = NULL;
	g_autoptr(GPtrArray) first_response = NULL;
	g_autoptr(GPtrArray) other = NULL;
	g_autoptr(GPtrArray) gone = NULL;
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(ConfabSession) missing = NULL;
	g_autoptr(GError) error = NULL;

	confab_message_set_response_id(reply, "resp_one");
	/* the target that answered, kept with the answer */
	confab_message_set_upstream(reply,
				    "{\"label\":\"b\",\"upstream_model\":\"m\",\"attempts\":2}");
	g_assert_true(finish_turn(f, reply, &error));
	second->session = confab_session_new();
	confab_session_set_id(second->session, sid);
	confab_session_set_updated_at(second->session, 1700000020);
	g_ptr_array_add(second->messages, make_message(f, sid, "user", "more"));
	confab_message_set_response_id(g_ptr_array_index(second->messages, 0), "resp_two");
	g_assert_true(begin_turn(f, second, &error));
	reply2 = make_message(f, sid, "assistant", "more answer");
	confab_message_set_response_id(reply2, "resp_two");
	g_assert_true(finish_turn(f, reply2, &error));
	g_assert_no_error(error);

	first_response = get_response(f, "resp_one");
	g_assert_cmpuint(first_response->len, ==, 1);
	g_assert_cmpstr(confab_message_get_response_id(g_ptr_array_index(first_response, 0)),
			==,
			"resp_one");
	g_assert_cmpstr(confab_message_get_upstream(g_ptr_array_index(first_response, 0)),
			==,
			"{\"label\":\"b\",\"upstream_model\":\"m\",\"attempts\":2}");
	other = get_response(f, "resp_two");
	g_assert_null(confab_message_get_upstream(g_ptr_array_index(other, 0)));
	g_assert_cmpuint(other->len, ==, 2);
	g_assert_cmpstr(confab_message_get_role(g_ptr_array_index(other, 0)), ==, "user");
	g_assert_cmpstr(confab_message_get_role(g_ptr_array_index(other, 1)), ==, "assistant");

	g_assert_true(delete_response(f, "resp_two", &error));
	g_assert_no_error(error);
	gone = get_response(f, "resp_two");
	g_assert_cmpuint(gone->len, ==, 0);
	history = get_history(f, sid);
	g_assert_cmpuint(history->len, ==, 2);
	g_assert_false(delete_response(f, "resp_two", &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_RESPONSE_NOT_FOUND);
	g_clear_error(&error);

	missing = get_session(f, "cts_nope", &error);
	g_assert_null(missing);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
}

static void
test_turns(Fixture *f, gconstpointer data)
{
	g_autofree gchar *sid = create_session(f,
					       "alice",
					       "agt_a",
					       CONFAB_SESSION_SOURCE_API,
					       "h\xc3\xa9llo \xf0\x9f\x8c\x8d");
	g_autoptr(ConfabMessage) reply = make_message(f, sid, "assistant", "h\xc3\xa9llo");
	g_autoptr(ConfabStoreTurn) second = confab_store_turn_new();
	g_autoptr(ConfabMessage) reply2 = NULL;
	g_autoptr(ConfabSession) session = NULL;
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(GError) error = NULL;
	ConfabMessage *m;

	confab_message_set_finish_reason(reply, "stop");
	confab_message_set_prompt_tokens(reply, 2);
	confab_message_set_completion_tokens(reply, 1);
	confab_message_set_created_at(reply, 1700000010);
	g_assert_true(finish_turn(f, reply, &error));
	g_assert_no_error(error);

	/* a second turn on the existing session */
	second->session = confab_session_new();
	confab_session_set_id(second->session, sid);
	confab_session_set_updated_at(second->session, 1700000020);
	second->session_is_new = FALSE;
	g_ptr_array_add(second->messages, make_message(f, sid, "system", "sys"));
	g_ptr_array_add(second->messages, make_message(f, sid, "user", "again"));
	g_assert_true(begin_turn(f, second, &error));
	g_assert_no_error(error);
	/* made now: ids order the history */
	reply2 = make_message(f, sid, "assistant", "partial");
	confab_message_set_status(reply2, CONFAB_MESSAGE_STATUS_INCOMPLETE);
	confab_message_set_created_at(reply2, 1700000030);
	g_assert_true(finish_turn(f, reply2, &error));

	session = get_session(f, sid, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(confab_session_get_owner(session), ==, "alice");
	g_assert_cmpstr(confab_session_get_agent_id(session), ==, "agt_a");
	g_assert_cmpint(confab_session_get_source(session), ==, CONFAB_SESSION_SOURCE_API);
	g_assert_cmpstr(confab_session_get_title(session), ==, "h\xc3\xa9llo \xf0\x9f\x8c\x8d");
	g_assert_cmpint(confab_session_get_created_at(session), ==, 1700000000);
	/* updated by the last write */
	g_assert_cmpint(confab_session_get_updated_at(session), ==, 1700000030);

	history = get_history(f, sid);
	g_assert_cmpuint(history->len, ==, 5);
	{
		const gchar *roles[] = {"user", "assistant", "system", "user", "assistant"};
		for (guint i = 0; i < 5; i++) {
			m = g_ptr_array_index(history, i);
			g_assert_cmpstr(confab_message_get_role(m), ==, roles[i]);
			g_assert_cmpstr(confab_message_get_session_id(m), ==, sid);
			if (i > 0)
				g_assert_cmpstr(
				    confab_message_get_id(g_ptr_array_index(history, i - 1)),
				    <,
				    confab_message_get_id(m));
		}
	}
	m = g_ptr_array_index(history, 0);
	g_assert_cmpstr(confab_message_get_content(m),
			==,
			"[{\"type\":\"text\",\"text\":\"h\xc3\xa9llo \xf0\x9f\x8c\x8d\"}]");
	g_assert_cmpint(confab_message_get_prompt_tokens(m), ==, -1);
	m = g_ptr_array_index(history, 1);
	g_assert_cmpstr(confab_message_get_id(m), ==, confab_message_get_id(reply));
	g_assert_cmpstr(confab_message_get_finish_reason(m), ==, "stop");
	g_assert_cmpint(confab_message_get_prompt_tokens(m), ==, 2);
	g_assert_cmpint(confab_message_get_completion_tokens(m), ==, 1);
	g_assert_cmpint(confab_message_get_status(m), ==, CONFAB_MESSAGE_STATUS_COMPLETED);
	g_assert_cmpint(confab_message_get_created_at(m), ==, 1700000010);
	g_assert_cmpstr(confab_message_get_model(m), ==, "agt_model");
	m = g_ptr_array_index(history, 4);
	g_assert_cmpint(confab_message_get_status(m), ==, CONFAB_MESSAGE_STATUS_INCOMPLETE);
}

static void
test_turn_on_missing_session(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
	g_autoptr(ConfabMessage) reply = NULL;
	g_autofree gchar *ghost = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) history = NULL;

	record->session = confab_session_new();
	confab_session_set_id(record->session, ghost);
	record->session_is_new = FALSE;
	g_ptr_array_add(record->messages, make_message(f, ghost, "user", "hello?"));
	g_assert_false(begin_turn(f, record, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
	g_clear_error(&error);

	reply = make_message(f, ghost, "assistant", "x");
	g_assert_false(finish_turn(f, reply, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
	g_clear_error(&error);

	g_assert_null(get_session(f, ghost, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
	/* nothing half-written */
	history = get_history(f, ghost);
	g_assert_cmpuint(history->len, ==, 0);
}

static void
test_failed_turn_leaves_nothing(Fixture *f, gconstpointer data)
{
	/* a new session whose second message cannot be stored (a duplicate
	 * id): neither the session nor the first message may remain */
	g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
	g_autofree gchar *sid = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);
	g_autoptr(ConfabMessage) first = make_message(f, sid, "user", "one");
	g_autoptr(ConfabMessage) dup = make_message(f, sid, "user", "two");
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(ConfabStorePage) page = NULL;
	ConfabStoreSessionQuery query = {NULL, NULL, -1, NULL, CONFAB_ORDER_DESC, 100};

	confab_message_set_id(dup, confab_message_get_id(first));
	record->session = confab_session_new();
	confab_session_set_id(record->session, sid);
	confab_session_set_owner(record->session, "alice");
	confab_session_set_agent_id(record->session, "agt_a");
	record->session_is_new = TRUE;
	record->usage_owner = g_strdup("alice");
	record->usage_month = g_strdup(f->month);
	g_ptr_array_add(record->messages, g_object_ref(first));
	g_ptr_array_add(record->messages, g_object_ref(dup));
	g_assert_false(begin_turn(f, record, &error));
	g_assert_nonnull(error);
	g_clear_error(&error);

	g_assert_null(get_session(f, sid, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
	history = get_history(f, sid);
	g_assert_cmpuint(history->len, ==, 0);
	page = list_sessions(f, &query);
	g_assert_cmpuint(page->items->len, ==, 0);
	/* and the request was not counted */
	g_assert_cmpuint(durable_usage(f, "alice"), ==, 0);
}

static GPtrArray *
collect_session_pages(Fixture *f, ConfabStoreSessionQuery *query, guint *n_pages)
{
	GPtrArray *ids = g_ptr_array_new_with_free_func(g_free);
	g_autofree gchar *after = NULL;

	*n_pages = 0;
	for (;;) {
		g_autoptr(ConfabStorePage) page = NULL;
		query->after = after;
		page = list_sessions(f, query);
		query->after = NULL;
		(*n_pages)++;
		g_assert_cmpuint(page->items->len, <=, query->limit);
		for (guint i = 0; i < page->items->len; i++)
			g_ptr_array_add(
			    ids,
			    g_strdup(confab_session_get_id(g_ptr_array_index(page->items, i))));
		if (!page->has_more)
			break;
		/* a page that says more follows is full */
		g_assert_cmpuint(page->items->len, ==, query->limit);
		g_free(after);
		after = g_strdup(
		    confab_session_get_id(g_ptr_array_index(page->items, page->items->len - 1)));
		g_assert_cmpuint(*n_pages, <, 1000);
	}
	return ids;
}

static void
test_session_pages(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) created = g_ptr_array_new_with_free_func(g_free);
	ConfabStoreSessionQuery query = {NULL, NULL, -1, NULL, CONFAB_ORDER_DESC, 10};
	guint n_pages = 0;

	for (guint i = 0; i < 25; i++)
		g_ptr_array_add(
		    created,
		    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "t"));

	/* newest first, 10 + 10 + 5 */
	{
		g_autoptr(GPtrArray) ids = collect_session_pages(f, &query, &n_pages);
		g_assert_cmpuint(n_pages, ==, 3);
		g_assert_cmpuint(ids->len, ==, 25);
		for (guint i = 0; i < 25; i++)
			g_assert_cmpstr(g_ptr_array_index(ids, i),
					==,
					g_ptr_array_index(created, 24 - i));
	}
	/* oldest first */
	query.order = CONFAB_ORDER_ASC;
	{
		g_autoptr(GPtrArray) ids = collect_session_pages(f, &query, &n_pages);
		g_assert_cmpuint(n_pages, ==, 3);
		g_assert_cmpuint(ids->len, ==, 25);
		for (guint i = 0; i < 25; i++)
			g_assert_cmpstr(g_ptr_array_index(ids, i),
					==,
					g_ptr_array_index(created, i));
	}
	/* a page ending exactly at the last item says no more */
	query.limit = 25;
	{
		g_autoptr(ConfabStorePage) page = list_sessions(f, &query);
		g_assert_cmpuint(page->items->len, ==, 25);
		g_assert_false(page->has_more);
	}
	query.limit = 24;
	{
		g_autoptr(ConfabStorePage) page = list_sessions(f, &query);
		g_assert_cmpuint(page->items->len, ==, 24);
		g_assert_true(page->has_more);
	}
	query.limit = 5;
	{
		/* after the last one: empty, no more */
		g_autoptr(ConfabStorePage) page = NULL;
		query.after = g_ptr_array_index(created, 24);
		page = list_sessions(f, &query);
		query.after = NULL;
		g_assert_cmpuint(page->items->len, ==, 0);
		g_assert_false(page->has_more);
	}
	query.limit = 1;
	query.order = CONFAB_ORDER_DESC;
	{
		g_autoptr(GPtrArray) ids = collect_session_pages(f, &query, &n_pages);
		g_assert_cmpuint(n_pages, ==, 25);
		g_assert_cmpuint(ids->len, ==, 25);
	}
}

static void
test_cursor_after_deleted(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) created = g_ptr_array_new_with_free_func(g_free);
	ConfabStoreSessionQuery query = {NULL, NULL, -1, NULL, CONFAB_ORDER_DESC, 3};
	g_autoptr(GError) error = NULL;

	for (guint i = 0; i < 10; i++)
		g_ptr_array_add(
		    created,
		    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "t"));
	/* the cursor's own row is deleted between two pages */
	g_assert_true(delete_session(f, g_ptr_array_index(created, 6), &error));
	g_assert_no_error(error);
	query.after = g_ptr_array_index(created, 6);
	{
		g_autoptr(ConfabStorePage) page = list_sessions(f, &query);
		g_assert_cmpuint(page->items->len, ==, 3);
		g_assert_true(page->has_more);
		for (guint i = 0; i < 3; i++)
			g_assert_cmpstr(confab_session_get_id(g_ptr_array_index(page->items, i)),
					==,
					g_ptr_array_index(created, 5 - i));
	}
	query.order = CONFAB_ORDER_ASC;
	{
		g_autoptr(ConfabStorePage) page = list_sessions(f, &query);
		g_assert_cmpuint(page->items->len, ==, 3);
		g_assert_false(page->has_more);
		for (guint i = 0; i < 3; i++)
			g_assert_cmpstr(confab_session_get_id(g_ptr_array_index(page->items, i)),
					==,
					g_ptr_array_index(created, 7 + i));
	}
	/* a cursor that never existed, between two ids */
	{
		g_autoptr(ConfabStorePage) page = NULL;
		g_autofree gchar *zeros = g_strnfill(CONFAB_ID_BODY_LEN, '0');
		g_autofree gchar *oldest = g_strconcat("cts_", zeros, NULL);
		query.after = oldest;
		query.limit = 100;
		page = list_sessions(f, &query);
		g_assert_cmpuint(page->items->len, ==, 9);
		query.after = NULL;
	}
	query.after = NULL;
}

static void
test_session_filters(Fixture *f, gconstpointer data)
{
	g_autofree gchar *a1 = create_session(f, "alice", "agt_1", CONFAB_SESSION_SOURCE_API, "a1");
	g_autofree gchar *a2 = create_session(f, "alice", "agt_2", CONFAB_SESSION_SOURCE_API, "a2");
	g_autofree gchar *a3 =
	    create_session(f, "alice", "agt_1", CONFAB_SESSION_SOURCE_CHANNEL, "a3");
	g_autofree gchar *b1 = create_session(f, "bob", "agt_1", CONFAB_SESSION_SOURCE_API, "b1");
	struct {
		const gchar *owner;
		const gchar *agent;
		gint source;
		const gchar *expect[5];
	} cases[] = {
	    {"alice", NULL, CONFAB_SESSION_SOURCE_API, {a2, a1, NULL}},
	    {"alice", "agt_1", CONFAB_SESSION_SOURCE_API, {a1, NULL}},
	    {"alice", "agt_2", CONFAB_SESSION_SOURCE_API, {a2, NULL}},
	    {"alice", "agt_3", CONFAB_SESSION_SOURCE_API, {NULL}},
	    {"alice", NULL, CONFAB_SESSION_SOURCE_CHANNEL, {a3, NULL}},
	    {"alice", NULL, -1, {a3, a2, a1, NULL}},
	    {"bob", NULL, CONFAB_SESSION_SOURCE_API, {b1, NULL}},
	    {"bob", "agt_2", -1, {NULL}},
	    {"carol", NULL, -1, {NULL}},
	    {NULL, "agt_1", -1, {b1, a3, a1, NULL}},
	    {NULL, NULL, -1, {b1, a3, a2, a1, NULL}},
	    {NULL, NULL, CONFAB_SESSION_SOURCE_API, {b1, a2, a1, NULL}},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		ConfabStoreSessionQuery query = {(gchar *)cases[i].owner,
						 (gchar *)cases[i].agent,
						 cases[i].source,
						 NULL,
						 CONFAB_ORDER_DESC,
						 20};
		g_autoptr(ConfabStorePage) page = list_sessions(f, &query);
		guint n = g_strv_length((gchar **)cases[i].expect);
		if (page->items->len != n)
			g_error("case %u: %u sessions, expected %u", i, page->items->len, n);
		for (guint k = 0; k < n; k++)
			g_assert_cmpstr(confab_session_get_id(g_ptr_array_index(page->items, k)),
					==,
					cases[i].expect[k]);
		g_assert_false(page->has_more);
	}
	/* a cursor from another owner's list does not leak anything either */
	{
		ConfabStoreSessionQuery query = {"bob", NULL, -1, a1, CONFAB_ORDER_ASC, 20};
		g_autoptr(ConfabStorePage) page = list_sessions(f, &query);
		g_assert_cmpuint(page->items->len, ==, 1);
		g_assert_cmpstr(confab_session_get_id(g_ptr_array_index(page->items, 0)), ==, b1);
	}
}

static void
test_message_pages(Fixture *f, gconstpointer data)
{
	g_autofree gchar *sid = create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "0");
	g_autofree gchar *other =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "other");
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
	g_autofree gchar *after = NULL;
	ConfabStoreMessageQuery query = {sid, NULL, CONFAB_ORDER_ASC, 4};
	guint pages = 0;

	for (guint i = 1; i < 11; i++) {
		g_autofree gchar *text = g_strdup_printf("%u", i);
		g_autoptr(ConfabMessage) m =
		    make_message(f, sid, i % 2 ? "assistant" : "user", text);
		g_assert_true(finish_turn(f, m, NULL));
	}
	history = get_history(f, sid);
	g_assert_cmpuint(history->len, ==, 11);

	/* 11 messages in pages of 4: 4 + 4 + 3, only this session's */
	for (;;) {
		g_autoptr(ConfabStorePage) page = NULL;
		query.after = after;
		page = list_messages(f, &query);
		query.after = NULL;
		pages++;
		for (guint i = 0; i < page->items->len; i++) {
			ConfabMessage *m = g_ptr_array_index(page->items, i);
			g_assert_cmpstr(confab_message_get_session_id(m), ==, sid);
			g_ptr_array_add(all, g_strdup(confab_message_get_id(m)));
		}
		if (!page->has_more)
			break;
		g_free(after);
		after = g_strdup(
		    confab_message_get_id(g_ptr_array_index(page->items, page->items->len - 1)));
		g_assert_cmpuint(pages, <, 100);
	}
	g_assert_cmpuint(pages, ==, 3);
	g_assert_cmpuint(all->len, ==, 11);
	for (guint i = 0; i < 11; i++)
		g_assert_cmpstr(g_ptr_array_index(all, i),
				==,
				confab_message_get_id(g_ptr_array_index(history, i)));

	/* newest first */
	query.order = CONFAB_ORDER_DESC;
	query.limit = 100;
	{
		g_autoptr(ConfabStorePage) page = list_messages(f, &query);
		g_assert_cmpuint(page->items->len, ==, 11);
		g_assert_false(page->has_more);
		g_assert_cmpstr(confab_message_get_id(g_ptr_array_index(page->items, 0)),
				==,
				confab_message_get_id(g_ptr_array_index(history, 10)));
	}
	/* desc after the 5th: the 4 older ones */
	query.after = (gchar *)confab_message_get_id(g_ptr_array_index(history, 4));
	{
		g_autoptr(ConfabStorePage) page = list_messages(f, &query);
		g_assert_cmpuint(page->items->len, ==, 4);
		g_assert_cmpstr(confab_message_get_id(g_ptr_array_index(page->items, 0)),
				==,
				confab_message_get_id(g_ptr_array_index(history, 3)));
	}
	/* from the 5th on: itself first, both ways */
	query.from = TRUE;
	query.limit = 2;
	for (guint o = 0; o < 2; o++) {
		g_autoptr(ConfabStorePage) page = NULL;
		query.order = o == 0 ? CONFAB_ORDER_DESC : CONFAB_ORDER_ASC;
		page = list_messages(f, &query);
		g_assert_cmpuint(page->items->len, ==, 2);
		g_assert_true(page->has_more);
		g_assert_cmpstr(confab_message_get_id(g_ptr_array_index(page->items, 0)),
				==,
				query.after);
		g_assert_cmpstr(confab_message_get_id(g_ptr_array_index(page->items, 1)),
				==,
				confab_message_get_id(g_ptr_array_index(history, o == 0 ? 3 : 5)));
	}
	query.from = FALSE;
	query.after = NULL;
	/* an unknown session has no messages */
	query.session_id = "cts_00000000000000000000000000";
	{
		g_autoptr(ConfabStorePage) page = list_messages(f, &query);
		g_assert_cmpuint(page->items->len, ==, 0);
		g_assert_false(page->has_more);
	}
	query.session_id = NULL;
}

static void
test_delete_session_cascades(Fixture *f, gconstpointer data)
{
	g_autofree gchar *sid = create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "x");
	g_autofree gchar *keep =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "y");
	g_autoptr(ConfabMessage) reply = make_message(f, sid, "assistant", "x");
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(GPtrArray) kept = NULL;
	g_autoptr(GError) error = NULL;
	ConfabStoreMessageQuery query = {sid, NULL, CONFAB_ORDER_ASC, 100};

	g_assert_true(finish_turn(f, reply, NULL));
	g_assert_true(delete_session(f, sid, &error));
	g_assert_no_error(error);
	history = get_history(f, sid);
	g_assert_cmpuint(history->len, ==, 0);
	{
		g_autoptr(ConfabStorePage) page = list_messages(f, &query);
		g_assert_cmpuint(page->items->len, ==, 0);
	}
	kept = get_history(f, keep);
	g_assert_cmpuint(kept->len, ==, 1);
	/* twice: not found */
	g_assert_false(delete_session(f, sid, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
}

static void
test_quotas_and_usage(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;

	g_assert_true(set_quota(f, "alice", 5, &error));
	g_assert_true(set_quota(f, "bob", 7, &error));
	g_assert_true(set_quota(f, "bob", 8, &error));
	g_assert_true(set_quota(f, "carol", G_MAXUINT64, &error));
	g_assert_no_error(error);
	{
		g_autoptr(ConfabStoreUsage) alice = get_usage(f, "alice", 100);
		g_autoptr(ConfabStoreUsage) bob = get_usage(f, "bob", 100);
		g_autoptr(ConfabStoreUsage) carol = get_usage(f, "carol", 100);
		g_autoptr(ConfabStoreUsage) dave = get_usage(f, "dave", 100);
		g_assert_cmpuint(alice->limit, ==, 5);
		g_assert_true(alice->is_override);
		g_assert_cmpuint(bob->limit, ==, 8);
		g_assert_cmpuint(carol->limit, >=, G_MAXINT64);
		/* no quota of one's own: the default */
		g_assert_cmpuint(dave->limit, ==, 100);
		g_assert_false(dave->is_override);
		g_assert_cmpstr(dave->month, ==, f->month);
	}
	/* 0 is alice's own too: unlimited, whatever the default */
	g_assert_true(set_quota(f, "alice", 0, &error));
	{
		g_autoptr(ConfabStoreUsage) alice = get_usage(f, "alice", 100);
		g_assert_cmpuint(alice->limit, ==, 0);
		g_assert_true(alice->is_override);
	}
	{
		g_autoptr(ConfabStoreUsage) admitted = admit(f, "alice", 1);
		g_autoptr(ConfabStoreUsage) again = admit(f, "alice", 1);
		g_assert_true(admitted->admitted);
		g_assert_true(again->admitted);
		confab_store_release_quota(f->store, "alice", f->month);
		confab_store_release_quota(f->store, "alice", f->month);
	}

	/* usage counts each turn whose first commit carries it */
	for (guint i = 0; i < 3; i++) {
		g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
		g_autofree gchar *sid = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);
		record->session = confab_session_new();
		confab_session_set_id(record->session, sid);
		confab_session_set_owner(record->session, "alice");
		confab_session_set_agent_id(record->session, "agt_a");
		record->session_is_new = TRUE;
		if (i < 2) {
			record->usage_owner = g_strdup("alice");
			record->usage_month = g_strdup(f->month);
		}
		g_ptr_array_add(record->messages, make_message(f, sid, "user", "u"));
		g_assert_true(begin_turn(f, record, &error));
	}
	g_assert_cmpuint(durable_usage(f, "alice"), ==, 2);
	/* and quotas survive a reopen */
	{
		g_autoptr(ConfabStoreUsage) bob = get_usage(f, "bob", 0);
		g_assert_cmpuint(bob->limit, ==, 8);
	}
}

static void
test_list_usage(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;

	g_assert_true(set_quota(f, "carol", 2, &error));
	g_assert_true(set_quota(f, "alice", 5, &error));
	g_assert_no_error(error);
	confab_store_usage_free(admit(f, "alice", 0));
	confab_store_usage_free(admit(f, "bob", 0));
	confab_store_usage_free(admit(f, "bob", 0));
	{
		/* no default: the owners with a quota of their own, by owner */
		g_autoptr(GPtrArray) list = list_usage(f, 0);
		ConfabStoreUsage *alice, *carol;
		g_assert_cmpuint(list->len, ==, 2);
		alice = g_ptr_array_index(list, 0);
		carol = g_ptr_array_index(list, 1);
		g_assert_cmpstr(alice->owner, ==, "alice");
		g_assert_cmpuint(alice->limit, ==, 5);
		g_assert_cmpuint(alice->requests, ==, 1);
		g_assert_true(alice->is_override);
		g_assert_cmpstr(alice->month, ==, f->month);
		g_assert_cmpstr(carol->owner, ==, "carol");
		g_assert_cmpuint(carol->requests, ==, 0);
	}
	{
		/* a default: also who used some of it this month */
		g_autoptr(GPtrArray) list = list_usage(f, 10);
		ConfabStoreUsage *bob;
		g_assert_cmpuint(list->len, ==, 3);
		bob = g_ptr_array_index(list, 1);
		g_assert_cmpstr(bob->owner, ==, "bob");
		g_assert_cmpuint(bob->limit, ==, 10);
		g_assert_cmpuint(bob->requests, ==, 2);
		g_assert_false(bob->is_override);
	}
	/* an owner made unlimited is no longer listed, default or not */
	g_assert_true(set_quota(f, "carol", 0, &error));
	{
		g_autoptr(GPtrArray) list = list_usage(f, 0);
		g_autoptr(GPtrArray) with_default = list_usage(f, 10);
		g_assert_cmpuint(list->len, ==, 1);
		g_assert_cmpuint(with_default->len, ==, 2);
	}
}

static void
test_admit_quota(Fixture *f, gconstpointer data)
{
	/* the default quota: 3 a month */
	for (guint i = 1; i <= 3; i++) {
		g_autoptr(ConfabStoreUsage) usage = admit(f, "erin", 3);
		g_assert_true(usage->admitted);
		g_assert_cmpuint(usage->requests, ==, i);
		g_assert_cmpuint(usage->limit, ==, 3);
	}
	{
		g_autoptr(ConfabStoreUsage) refused = admit(f, "erin", 3);
		g_assert_false(refused->admitted);
		g_assert_cmpuint(refused->requests, ==, 3);
	}
	/* a count given back (its turn was never stored) frees a place */
	confab_store_release_quota(f->store, "erin", f->month);
	{
		g_autoptr(ConfabStoreUsage) again = admit(f, "erin", 3);
		g_assert_true(again->admitted);
	}
	/* an owner's own quota wins over the default; 0 is unlimited */
	g_assert_true(set_quota(f, "erin", 5, NULL));
	{
		g_autoptr(ConfabStoreUsage) more = admit(f, "erin", 3);
		g_assert_true(more->admitted);
		g_assert_cmpuint(more->limit, ==, 5);
	}
	for (guint i = 0; i < 100; i++) {
		g_autoptr(ConfabStoreUsage) free_usage = admit(f, "frank", 0);
		g_assert_true(free_usage->admitted);
	}
}

typedef struct {
	guint done;
	guint admitted;
} Admissions;

static void
on_admitted(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Admissions *a = user_data;
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabStoreUsage) usage =
	    confab_store_admit_quota_finish(CONFAB_STORE(source), result, &error);
	g_assert_no_error(error);
	if (usage->admitted)
		a->admitted++;
	a->done++;
}

/* many admissions in flight at once never admit more than the quota */
static void
test_admit_concurrent(Fixture *f, gconstpointer data)
{
	Admissions a = {0, 0};
	guint timeout;

	for (guint i = 0; i < 200; i++)
		confab_store_admit_quota_async(f->store,
					       "gina",
					       f->month,
					       37,
					       0,
					       0,
					       NULL,
					       on_admitted,
					       &a);
	timeout = g_timeout_add_seconds(30, on_timeout, NULL);
	while (a.done < 200)
		g_main_context_iteration(NULL, TRUE);
	g_source_remove(timeout);
	g_assert_cmpuint(a.admitted, ==, 37);
}

static void
test_sessions_busy(Fixture *f, gconstpointer data)
{
	g_autofree gchar *sid =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "hi");
	g_autofree gchar *other =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "there");
	g_autoptr(GError) error = NULL;

	g_assert_false(is_running(f, sid));
	g_assert_true(acquire(f, sid, &error));
	g_assert_no_error(error);
	/* one turn at a time per session, and the store says which run */
	g_assert_true(is_running(f, sid));
	g_assert_false(acquire(f, sid, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_BUSY);
	g_clear_error(&error);
	/* other sessions are free */
	g_assert_false(is_running(f, other));
	g_assert_true(acquire(f, other, &error));
	confab_store_release_session(f->store, sid);
	g_assert_false(is_running(f, sid));
	g_assert_true(is_running(f, other));
	g_assert_true(acquire(f, sid, &error));
	g_assert_no_error(error);
	confab_store_release_session(f->store, sid);
	confab_store_release_session(f->store, other);
	g_assert_false(is_running(f, other));
}

/* a JSON turn's two sides go in one transaction: both, or neither */
static void
test_turn_both_sides(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
	g_autofree gchar *sid = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);
	g_autoptr(ConfabMessage) user = make_message(f, sid, "user", "question");
	g_autoptr(ConfabMessage) answer = make_message(f, sid, "assistant", "answer");
	g_autoptr(ConfabStoreTurn) bad = NULL;
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(GError) error = NULL;

	record->session = confab_session_new();
	confab_session_set_id(record->session, sid);
	confab_session_set_owner(record->session, "alice");
	confab_session_set_agent_id(record->session, "agt_a");
	confab_session_set_created_at(record->session, 1700000000);
	confab_session_set_updated_at(record->session, 1700000000);
	record->session_is_new = TRUE;
	record->usage_owner = g_strdup("alice");
	record->usage_month = g_strdup(f->month);
	g_ptr_array_add(record->messages, g_object_ref(user));
	confab_message_set_created_at(answer, 1700000009);
	record->assistant = g_object_ref(answer);
	g_assert_true(begin_turn(f, record, &error));
	g_assert_no_error(error);
	history = get_history(f, sid);
	g_assert_cmpuint(history->len, ==, 2);
	{
		g_autoptr(ConfabSession) session = get_session(f, sid, &error);
		g_assert_cmpint(confab_session_get_updated_at(session), ==, 1700000009);
	}

	/* the answer cannot be stored (its id is taken): the user's side of
	 * the same record is not stored either, nor counted */
	bad = confab_store_turn_new();
	bad->session = g_object_ref(record->session);
	bad->session_is_new = FALSE;
	bad->usage_owner = g_strdup("alice");
	bad->usage_month = g_strdup(f->month);
	g_ptr_array_add(bad->messages, make_message(f, sid, "user", "second"));
	bad->assistant = make_message(f, sid, "assistant", "dup");
	confab_message_set_id(bad->assistant, confab_message_get_id(answer));
	g_assert_false(begin_turn(f, bad, &error));
	g_assert_nonnull(error);
	g_clear_pointer(&history, g_ptr_array_unref);
	history = get_history(f, sid);
	g_assert_cmpuint(history->len, ==, 2);
	g_assert_cmpuint(durable_usage(f, "alice"), ==, 1);
}

static void
test_reopen_persists(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabAgent) agent = make_agent(f, "persisted");
	g_autofree gchar *sid =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "remember me");
	g_autoptr(GPtrArray) agents = NULL;
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(ConfabStoreUsage) usage = NULL;
	g_autoptr(ConfabSession) session = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_true(save_agent(f, agent, NULL));
	g_assert_true(set_quota(f, "alice", 42, NULL));
	reopen(f);
	agents = load_agents(f, &error);
	g_assert_cmpuint(agents->len, ==, 1);
	g_assert_cmpstr(confab_agent_get_name(g_ptr_array_index(agents, 0)), ==, "persisted");
	session = get_session(f, sid, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(confab_session_get_title(session), ==, "remember me");
	history = get_history(f, sid);
	g_assert_cmpuint(history->len, ==, 1);
	usage = get_usage(f, "alice", 0);
	g_assert_cmpuint(usage->limit, ==, 42);
}

typedef struct {
	guint done;
	guint failed;
} Counter;

static void
on_counted(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Counter *c = user_data;
	g_autoptr(GError) error = NULL;
	if (!confab_store_commit_turn_finish(CONFAB_STORE(source), result, &error))
		c->failed++;
	c->done++;
}

static void
test_group_commit(Fixture *f, gconstpointer data)
{
	const guint n = 500;
	Counter counter = {0, 0};
	guint64 commits = 0;
	guint64 jobs = 0;
	guint timeout;
	ConfabStoreSessionQuery query = {"alice", NULL, -1, NULL, CONFAB_ORDER_ASC, 100};
	guint n_pages = 0;

	/* many writes in flight at once, none awaited before the next */
	for (guint i = 0; i < n; i++) {
		g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
		g_autofree gchar *sid = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);
		record->session = confab_session_new();
		confab_session_set_id(record->session, sid);
		confab_session_set_owner(record->session, "alice");
		confab_session_set_agent_id(record->session, "agt_a");
		record->session_is_new = TRUE;
		/* a batch tallies its turns' requests per owner: two owners,
		 * and turns that count none, mixed */
		if (i % 5 != 4) {
			/* a name with a newline: the tally's key holds one too */
			record->usage_owner = g_strdup(i % 5 == 3 ? "bob\nsmith" : "alice");
			record->usage_month = g_strdup(f->month);
		}
		g_ptr_array_add(record->messages, make_message(f, sid, "user", "u"));
		confab_store_commit_turn_async(f->store, record, NULL, on_counted, &counter);
	}
	timeout = g_timeout_add_seconds(60, on_timeout, NULL);
	while (counter.done < n)
		g_main_context_iteration(NULL, TRUE);
	g_source_remove(timeout);
	g_assert_cmpuint(counter.failed, ==, 0);

	confab_store_sqlite_get_stats(CONFAB_STORE_SQLITE(f->store), &commits, &jobs);
	g_assert_cmpuint(jobs, ==, n);
	/* batched: fewer transactions than writes */
	g_assert_cmpuint(commits, <, jobs);
	g_assert_cmpuint(commits, >=, 1);

	/* every one committed, durably: after a reopen */
	g_assert_cmpuint(durable_usage(f, "alice"), ==, n / 5 * 3);
	g_assert_cmpuint(durable_usage(f, "bob\nsmith"), ==, n / 5);
	{
		g_autoptr(GPtrArray) ids = collect_session_pages(f, &query, &n_pages);
		g_assert_cmpuint(ids->len, ==, n);
	}
}

static void
test_closed_store(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabAgent) agent = make_agent(f, "late");
	g_autoptr(GError) error = NULL;
	ConfabStoreSessionQuery query = {NULL, NULL, -1, NULL, CONFAB_ORDER_DESC, 10};
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(ConfabStorePage) page = NULL;

	g_autoptr(GAsyncResult) ping = NULL;
	g_autoptr(GAsyncResult) ping_closed = NULL;

	/* what /readyz asks: yes while open, no once closed */
	confab_store_ping_async(f->store, NULL, on_result, &slot);
	ping = wait_for(&slot);
	g_assert_true(confab_store_ping_finish(f->store, ping, &error));
	g_assert_no_error(error);
	confab_store_close(f->store);
	/* closing twice is harmless */
	confab_store_close(f->store);
	confab_store_ping_async(f->store, NULL, on_result, &slot);
	ping_closed = wait_for(&slot);
	g_assert_false(confab_store_ping_finish(f->store, ping_closed, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_SHUTTING_DOWN);
	g_clear_error(&error);
	g_assert_false(save_agent(f, agent, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_SHUTTING_DOWN);
	g_clear_error(&error);
	confab_store_list_sessions_async(f->store, &query, NULL, on_result, &slot);
	res = wait_for(&slot);
	page = confab_store_list_sessions_finish(f->store, res, &error);
	g_assert_null(page);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_SHUTTING_DOWN);
}

static void
test_write_then_read_consistent(Fixture *f, gconstpointer data)
{
	/* a read issued after a write completed sees it (the reader pool does
	 * not serve a stale snapshot) */
	for (guint i = 0; i < 50; i++) {
		g_autofree gchar *sid =
		    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "x");
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabSession) session = get_session(f, sid, &error);
		g_assert_no_error(error);
		g_assert_cmpstr(confab_session_get_id(session), ==, sid);
	}
}

static void
test_close_finishes_queued_writes(Fixture *f, gconstpointer data)
{
	/* writes queued before close() are committed and answered, not lost */
	const guint n = 100;
	Counter counter = {0, 0};
	guint timeout;
	ConfabStoreSessionQuery query = {NULL, NULL, -1, NULL, CONFAB_ORDER_ASC, 100};
	g_autoptr(ConfabStorePage) page = NULL;

	for (guint i = 0; i < n; i++) {
		g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
		g_autofree gchar *sid = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);
		record->session = confab_session_new();
		confab_session_set_id(record->session, sid);
		confab_session_set_owner(record->session, "alice");
		confab_session_set_agent_id(record->session, "agt_a");
		record->session_is_new = TRUE;
		g_ptr_array_add(record->messages, make_message(f, sid, "user", "u"));
		confab_store_commit_turn_async(f->store, record, NULL, on_counted, &counter);
	}
	confab_store_close(f->store);
	timeout = g_timeout_add_seconds(30, on_timeout, NULL);
	while (counter.done < n)
		g_main_context_iteration(NULL, TRUE);
	g_source_remove(timeout);
	g_assert_cmpuint(counter.failed, ==, 0);

	g_clear_object(&f->store);
	f->backend->open(f);
	page = list_sessions(f, &query);
	g_assert_cmpuint(page->items->len, ==, n);
	g_assert_false(page->has_more);
}

static void
test_cancelled_write_still_committed(Fixture *f, gconstpointer data)
{
	/* once handed to the store, a write is seen through: a client that
	 * goes away must not leave the turn half-recorded */
	g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
	g_autofree gchar *sid = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabSession) session = NULL;
	GAsyncResult *slot = NULL;

	record->session = confab_session_new();
	confab_session_set_id(record->session, sid);
	confab_session_set_owner(record->session, "alice");
	confab_session_set_agent_id(record->session, "agt_a");
	record->session_is_new = TRUE;
	g_ptr_array_add(record->messages, make_message(f, sid, "user", "u"));
	confab_store_commit_turn_async(f->store, record, cancellable, on_result, &slot);
	g_cancellable_cancel(cancellable);
	res = wait_for(&slot);
	g_assert_true(confab_store_commit_turn_finish(f->store, res, &error));
	g_assert_no_error(error);
	session = get_session(f, sid, &error);
	g_assert_no_error(error);
	g_assert_nonnull(session);
}

static void
test_cancelled_read(Fixture *f, gconstpointer data)
{
	g_autoptr(GCancellable) cancellable = g_cancellable_new();
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabStorePage) page = NULL;
	ConfabStoreSessionQuery query = {NULL, NULL, -1, NULL, CONFAB_ORDER_ASC, 10};
	GAsyncResult *slot = NULL;

	g_cancellable_cancel(cancellable);
	confab_store_list_sessions_async(f->store, &query, cancellable, on_result, &slot);
	res = wait_for(&slot);
	page = confab_store_list_sessions_finish(f->store, res, &error);
	g_assert_null(page);
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
	/* the reader pool is intact afterwards */
	{
		g_autofree gchar *sid =
		    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "x");
		g_autoptr(ConfabStorePage) page2 = list_sessions(f, &query);
		g_assert_cmpuint(page2->items->len, ==, 1);
	}
}

static void
test_open_in_missing_dir(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabStoreSqlite) store =
	    confab_store_sqlite_new("/nonexistent-confab-dir/sub/confab.db", 1, &error);
	g_assert_null(store);
	g_assert_nonnull(error);
}

static void
test_parallel_reads(Fixture *f, gconstpointer data)
{
	/* more reads in flight than reader connections: they queue, and every
	 * one answers */
	const guint n = 64;
	GAsyncResult **slots = g_new0(GAsyncResult *, n);
	ConfabStoreSessionQuery query = {"alice", NULL, -1, NULL, CONFAB_ORDER_DESC, 5};
	guint timeout;

	for (guint i = 0; i < 7; i++)
		g_free(create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "x"));
	for (guint i = 0; i < n; i++)
		confab_store_list_sessions_async(f->store, &query, NULL, on_result, &slots[i]);
	timeout = g_timeout_add_seconds(30, on_timeout, NULL);
	for (guint i = 0; i < n; i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabStorePage) page = NULL;
		while (slots[i] == NULL)
			g_main_context_iteration(NULL, TRUE);
		page = confab_store_list_sessions_finish(f->store, slots[i], &error);
		g_assert_no_error(error);
		g_assert_cmpuint(page->items->len, ==, 5);
		g_assert_true(page->has_more);
		g_object_unref(slots[i]);
	}
	g_source_remove(timeout);
	g_free(slots);
}

typedef struct {
	gboolean done;
	gboolean ok;
	gint code;
} One;

static void
on_one(GObject *source, GAsyncResult *result, gpointer user_data)
{
	One *one = user_data;
	g_autoptr(GError) error = NULL;
	one->ok = confab_store_commit_turn_finish(CONFAB_STORE(source), result, &error);
	one->code = error != NULL ? error->code : -1;
	one->done = TRUE;
}

static ConfabStoreTurn *
new_session_record(Fixture *f, gchar **sid_out)
{
	ConfabStoreTurn *record = confab_store_turn_new();
	gchar *sid = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);
	record->session = confab_session_new();
	confab_session_set_id(record->session, sid);
	confab_session_set_owner(record->session, "alice");
	confab_session_set_agent_id(record->session, "agt_a");
	record->session_is_new = TRUE;
	record->usage_owner = g_strdup("alice");
	record->usage_month = g_strdup(f->month);
	g_ptr_array_add(record->messages, make_message(f, sid, "user", "u"));
	*sid_out = sid;
	return record;
}

/* The WAL header's checkpoint sequence: SQLite counts up each time the WAL
 * starts over. */
static guint32
wal_sequence(Fixture *f)
{
	g_autofree gchar *wal = g_strconcat(f->path, "-wal", NULL);
	g_autofree gchar *head = NULL;
	gsize len = 0;

	if (!g_file_get_contents(wal, &head, &len, NULL) || len < 16)
		return 0;
	return ((guint32)(guchar)head[12] << 24) | ((guint32)(guchar)head[13] << 16) |
	       ((guint32)(guchar)head[14] << 8) | (guint32)(guchar)head[15];
}

/* The WAL is copied into the database by the checkpoint thread, not in a
 * commit, and still starts over; nothing written is lost. */
static void
test_checkpoint_off_writer(Fixture *f, gconstpointer data)
{
	ConfabStoreSqlite *store = CONFAB_STORE_SQLITE(f->store);
	g_autoptr(GPtrArray) sids = g_ptr_array_new_with_free_func(g_free);
	guint32 sequence;
	gint64 deadline;
	GStatBuf st;

	/* one commit each: a few WAL pages each, past the 1,000 that ask for
	 * a checkpoint */
	while (confab_store_sqlite_get_checkpoints(store) == 0) {
		g_autoptr(GError) error = NULL;
		gchar *sid = NULL;
		g_autoptr(ConfabStoreTurn) record = new_session_record(f, &sid);
		g_ptr_array_add(sids, sid);
		g_assert_true(begin_turn(f, record, &error));
		g_assert_no_error(error);
		g_assert_cmpuint(sids->len, <, 20000);
	}
	/* copied into the database file, which held a few pages before */
	g_assert_cmpint(g_stat(f->path, &st), ==, 0);
	g_assert_cmpint(st.st_size, >, 64 * 1024);
	/* and the WAL starts over, at a later write */
	sequence = wal_sequence(f);
	deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
	while (wal_sequence(f) == sequence) {
		g_autoptr(GError) error = NULL;
		gchar *sid = NULL;
		g_autoptr(ConfabStoreTurn) record = new_session_record(f, &sid);
		g_ptr_array_add(sids, sid);
		g_assert_true(begin_turn(f, record, &error));
		g_assert_cmpint(g_get_monotonic_time(), <, deadline);
		g_usleep(2000);
	}
	/* every conversation, after a reopen */
	reopen(f);
	for (guint i = 0; i < sids->len; i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabSession) session =
		    get_session(f, g_ptr_array_index(sids, i), &error);
		g_assert_no_error(error);
		g_assert_nonnull(session);
	}
}

static void
test_failed_write_in_batch(Fixture *f, gconstpointer data)
{
	/* writes queued together share a transaction: one failing must not
	 * take the others down, nor leave any of its own rows */
	g_autofree gchar *sid1 = NULL;
	g_autofree gchar *sid2 = NULL;
	g_autofree gchar *sid3 = NULL;
	g_autoptr(ConfabStoreTurn) good1 = new_session_record(f, &sid1);
	g_autoptr(ConfabStoreTurn) bad = new_session_record(f, &sid2);
	g_autoptr(ConfabStoreTurn) good2 = new_session_record(f, &sid3);
	g_autoptr(ConfabMessage) dup = NULL;
	One r1 = {0}, r2 = {0}, r3 = {0};
	guint timeout;

	/* the bad one: a second message with the first one's id */
	dup = make_message(f, sid2, "user", "dup");
	confab_message_set_id(dup, confab_message_get_id(g_ptr_array_index(bad->messages, 0)));
	g_ptr_array_add(bad->messages, g_object_ref(dup));

	confab_store_commit_turn_async(f->store, good1, NULL, on_one, &r1);
	confab_store_commit_turn_async(f->store, bad, NULL, on_one, &r2);
	confab_store_commit_turn_async(f->store, good2, NULL, on_one, &r3);
	timeout = g_timeout_add_seconds(30, on_timeout, NULL);
	while (!r1.done || !r2.done || !r3.done)
		g_main_context_iteration(NULL, TRUE);
	g_source_remove(timeout);

	g_assert_true(r1.ok);
	g_assert_false(r2.ok);
	g_assert_true(r3.ok);
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabSession) s1 = get_session(f, sid1, &error);
		g_autoptr(ConfabSession) s3 = get_session(f, sid3, &error);
		g_autoptr(ConfabSession) s2 = NULL;
		g_autoptr(GPtrArray) h2 = get_history(f, sid2);
		g_assert_nonnull(s1);
		g_assert_nonnull(s3);
		s2 = get_session(f, sid2, &error);
		g_assert_null(s2);
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
		g_assert_cmpuint(h2->len, ==, 0);
	}
	/* counted twice, not three times */
	g_assert_cmpuint(durable_usage(f, "alice"), ==, 2);
}

/* A database of schema version 1 (tests/store/fixtures/confab-v1.db) is
 * migrated on open, keeping everything it held. */
static void
test_migrate_v1(Fixture *f, gconstpointer data)
{
	g_autofree gchar *fixture =
	    g_test_build_filename(G_TEST_DIST, "store", "fixtures", "confab-v1.db", NULL);
	g_autofree gchar *bytes = NULL;
	gsize len = 0;
	g_autoptr(GPtrArray) agents = NULL;
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(GError) error = NULL;

	confab_store_close(f->store);
	g_clear_object(&f->store);
	{
		g_autofree gchar *wal = g_strconcat(f->path, "-wal", NULL);
		g_autofree gchar *shm = g_strconcat(f->path, "-shm", NULL);
		(void)g_unlink(wal);
		(void)g_unlink(shm);
	}
	g_assert_true(g_file_get_contents(fixture, &bytes, &len, &error));
	g_assert_true(g_file_set_contents(f->path, bytes, (gssize)len, &error));
	g_assert_cmpint(read_user_version(f->path), ==, 1);
	f->store = open_store(f->path);
	g_assert_cmpint(read_user_version(f->path), ==, CONFAB_DB_VERSION);

	agents = load_agents(f, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(agents->len, ==, 2);
	g_assert_cmpstr(confab_agent_get_name(g_ptr_array_index(agents, 0)), ==, "old-echo");
	g_assert_cmpstr(confab_agent_get_api_key(g_ptr_array_index(agents, 1)), ==, "sk-fixture");
	/* the new columns take their defaults */
	g_assert_null(confab_agent_get_mcp_servers(g_ptr_array_index(agents, 0)));
	g_assert_cmpuint(confab_agent_get_max_steps(g_ptr_array_index(agents, 0)),
			 ==,
			 CONFAB_AGENT_DEFAULT_MAX_STEPS);
	/* its one upstream is target 0, "primary", its key kept */
	{
		ConfabAgent *keyed = g_ptr_array_index(agents, 1);
		g_autoptr(GPtrArray) targets = confab_agent_dup_targets(keyed);
		ConfabAgentTarget *primary = g_ptr_array_index(targets, 0);
		g_assert_cmpuint(targets->len, ==, 1);
		g_assert_cmpstr(primary->label, ==, "primary");
		g_assert_cmpstr(primary->api_key, ==, "sk-fixture");
		g_assert_cmpuint(primary->weight, ==, 1);
		g_assert_cmpint(confab_agent_get_routing_strategy(keyed),
				==,
				CONFAB_ROUTING_FALLBACK);
	}
	history = get_history(f, "cts_01jfixture0000000000000000");
	g_assert_cmpuint(history->len, ==, 2);
	{
		g_autoptr(ConfabStoreUsage) usage = get_usage(f, "alice", 0);
		g_assert_cmpuint(usage->limit, ==, 50);
	}
}

/* ---------- search ---------- */

static GPtrArray *
search(Fixture *f, const gchar *owner, const gchar *const *terms, guint limit)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GPtrArray *hits;
	confab_store_search_sessions_async(f->store, owner, terms, limit, NULL, on_result, &slot);
	res = wait_for(&slot);
	hits = confab_store_search_sessions_finish(f->store, res, &error);
	g_assert_no_error(error);
	g_assert_nonnull(hits);
	return hits;
}

/* the ids found for "WORD WORD…", newest first, joined by spaces */
static gchar *
found(Fixture *f, const gchar *owner, const gchar *query)
{
	g_auto(GStrv) terms = g_strsplit(query, " ", -1);
	g_autoptr(GPtrArray) hits = search(f, owner, (const gchar *const *)terms, 20);
	g_autoptr(GString) ids = g_string_new(NULL);
	for (guint i = 0; i < hits->len; i++) {
		ConfabStoreSearchHit *hit = g_ptr_array_index(hits, i);
		g_string_append_printf(ids,
				       "%s%s",
				       i > 0 ? " " : "",
				       confab_session_get_id(hit->session));
	}
	return g_string_free(g_steal_pointer(&ids), FALSE);
}

static void
answer(Fixture *f, const gchar *session_id, const gchar *text)
{
	g_autoptr(ConfabMessage) msg = make_message(f, session_id, "assistant", text);
	g_autoptr(GError) error = NULL;
	g_assert_true(finish_turn(f, msg, &error));
	g_assert_no_error(error);
}

#define ASSERT_FOUND(f, owner, query, expected)                                                    \
	do {                                                                                       \
		g_autofree gchar *ids_ = found(f, owner, query);                                   \
		g_assert_cmpstr(ids_, ==, expected);                                               \
	} while (0)

/* Every term must start a word of the title or of any message (not
 * necessarily the same one), case and accents aside; the owner's
 * conversations only, newest first. */
static void
test_search(Fixture *f, gconstpointer data)
{
	g_autofree gchar *soup =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "Soup recipes");
	g_autofree gchar *trip =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_CHANNEL, "Trip to Köln");
	g_autofree gchar *bobs =
	    create_session(f, "bob", "agt_a", CONFAB_SESSION_SOURCE_API, "Soup for Bob");
	g_autofree gchar *both = NULL;

	answer(f, soup, "A tomato soup needs basil and GARLIC.");
	answer(f, trip, "The cathedral is worth a visit; try the Kölsch.");

	ASSERT_FOUND(f, "alice", "soup", soup);
	ASSERT_FOUND(f, "alice", "SOUP", soup);
	ASSERT_FOUND(f, "alice", "gar", soup);	  /* a prefix */
	ASSERT_FOUND(f, "alice", "arlic", "");	  /* not inside a word */
	ASSERT_FOUND(f, "alice", "koln", trip);	  /* accents aside */
	ASSERT_FOUND(f, "alice", "kölsch", trip); /* both ways */
	ASSERT_FOUND(f, "bob", "soup", bobs);	  /* each owner their own */
	ASSERT_FOUND(f, "carol", "soup", "");
	/* every term, from the title and a message together */
	ASSERT_FOUND(f, "alice", "recipes basil", soup);
	ASSERT_FOUND(f, "alice", "recipes cathedral", "");
	/* newest first */
	both = create_session(f, "alice", "agt_b", CONFAB_SESSION_SOURCE_API, "Visit and soup");
	{
		g_autofree gchar *expected = g_strdup_printf("%s %s", both, soup);
		ASSERT_FOUND(f, "alice", "soup", expected);
	}
	{
		g_autofree gchar *expected = g_strdup_printf("%s %s", both, trip);
		ASSERT_FOUND(f, "alice", "visit", expected);
	}
	/* gone with the conversation */
	{
		g_autoptr(GError) error = NULL;
		g_assert_true(delete_session(f, both, &error));
		g_assert_no_error(error);
	}
	ASSERT_FOUND(f, "alice", "soup", soup);
	ASSERT_FOUND(f, "alice", "visit", trip);
}

static gboolean
delete_message(Fixture *f, const gchar *session_id, const gchar *id, GError **error);

/* A message deleted alone (a conversation item, a response's input and
 * answer) is no longer found; the rest of its conversation is. */
static void
test_search_deleted(Fixture *f, gconstpointer data)
{
	g_autofree gchar *garden =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "Garden notes");
	g_autoptr(ConfabMessage) first =
	    make_message(f, garden, "assistant", "Plant the zucchini early.");
	g_autoptr(ConfabMessage) second =
	    make_message(f, garden, "assistant", "Water the tulips daily.");
	g_autoptr(ConfabMessage) third = make_message(f, garden, "user", "Prune the roses?");
	g_autoptr(ConfabMessage) fourth = make_message(f, garden, "assistant", "Yes, in March.");
	g_autoptr(GError) error = NULL;

	confab_message_set_response_id(third, "resp_roses");
	confab_message_set_response_id(fourth, "resp_roses");
	g_assert_true(finish_turn(f, first, &error));
	g_assert_true(finish_turn(f, second, &error));
	g_assert_true(finish_turn(f, third, &error));
	g_assert_true(finish_turn(f, fourth, &error));
	g_assert_no_error(error);
	ASSERT_FOUND(f, "alice", "zucchini", garden);
	ASSERT_FOUND(f, "alice", "roses march", garden);

	g_assert_true(delete_message(f, garden, confab_message_get_id(first), &error));
	g_assert_no_error(error);
	ASSERT_FOUND(f, "alice", "zucchini", "");
	ASSERT_FOUND(f, "alice", "tulips", garden);
	ASSERT_FOUND(f, "alice", "garden", garden);
	ASSERT_FOUND(f, "alice", "roses", garden);

	g_assert_true(delete_response(f, "resp_roses", &error));
	g_assert_no_error(error);
	ASSERT_FOUND(f, "alice", "roses", "");
	ASSERT_FOUND(f, "alice", "march", "");
	ASSERT_FOUND(f, "alice", "tulips garden", garden);
	g_assert_false(delete_response(f, "resp_roses", &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_RESPONSE_NOT_FOUND);
}

/* What search reads of a message: the text parts of a user's or the
 * assistant's content (several parts together), not other parts, not a
 * tool's output. */
static void
test_search_message_text(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "Parts");
	g_autoptr(ConfabMessage) parts = make_message(f, id, "assistant", "");
	g_autoptr(ConfabMessage) tool = make_message(f, id, "tool", "zucchini");
	g_autoptr(GError) error = NULL;

	confab_message_set_content(parts,
				   "[{\"type\":\"text\",\"text\":\"Rhubarb grows\"},"
				   "{\"type\":\"image_url\",\"image_url\":{\"url\":"
				   "\"https://example.com/turnip.png\"}},"
				   "{\"type\":\"text\",\"text\":\"in cold gardens\"}]");
	g_assert_true(finish_turn(f, parts, &error));
	g_assert_no_error(error);
	g_assert_true(finish_turn(f, tool, &error));
	g_assert_no_error(error);

	ASSERT_FOUND(f, "alice", "rhubarb", id);
	ASSERT_FOUND(f, "alice", "rhubarb cold", id); /* two parts, one message */
	ASSERT_FOUND(f, "alice", "turnip", "");	      /* not a text part */
	ASSERT_FOUND(f, "alice", "zucchini", "");     /* a tool's output */
	{
		const gchar *const terms[] = {"gardens", NULL};
		g_autoptr(GPtrArray) hits = search(f, "alice", terms, 20);
		ConfabStoreSearchHit *hit = g_ptr_array_index(hits, 0);
		g_assert_cmpstr(hit->snippet, ==, "Rhubarb grows in cold gardens");
	}
}

/* What the query language of a backend would read as syntax is a word. */
static void
test_search_hostile_terms(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = create_session(f,
					      "alice",
					      "agt_a",
					      CONFAB_SESSION_SOURCE_API,
					      "He said \"AND\" or NEAR(it) * then col:umn");
	const gchar *const hostile[] = {"\"",
					"\"\"",
					"*",
					"AND",
					"OR",
					"NOT",
					"NEAR(it",
					"col:umn",
					"^",
					"'; DROP TABLE sessions; --",
					"\xe2\x80\x8b",
					"",
					"-",
					"{col}",
					NULL};

	for (guint i = 0; hostile[i] != NULL; i++) {
		const gchar *const one[] = {hostile[i], NULL};
		g_autoptr(GPtrArray) hits = search(f, "alice", one, 20);
		g_test_message("search %s: %u", hostile[i], hits->len);
		g_assert_cmpuint(hits->len, <=, 1);
	}
	ASSERT_FOUND(f, "alice", "and", id);
	ASSERT_FOUND(f, "alice", "near", id);
	ASSERT_FOUND(f, "alice", "col:umn", id);
	{
		/* no term at all: nothing, not everything */
		const gchar *const none[] = {NULL};
		g_autoptr(GPtrArray) hits = search(f, "alice", none, 20);
		g_assert_cmpuint(hits->len, ==, 0);
	}
	{
		g_autoptr(GPtrArray) hits = search(f, "alice", hostile, 20);
		g_assert_cmpuint(hits->len, <=, 1);
	}
}

/* At most the limit, the newest; a snippet from the text that matched. */
static void
test_search_limit_and_snippet(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) hits = NULL;
	const gchar *const terms[] = {"weather", NULL};
	const gchar *const long_terms[] = {"needle", NULL};
	g_autofree gchar *long_one = NULL;
	g_autoptr(GString) text = g_string_new(NULL);

	for (guint i = 0; i < 25; i++) {
		g_autofree gchar *title = g_strdup_printf("Weather report %u", i);
		g_ptr_array_add(
		    ids,
		    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, title));
	}
	hits = search(f, "alice", terms, 20);
	g_assert_cmpuint(hits->len, ==, 20);
	for (guint i = 0; i < 20; i++) {
		ConfabStoreSearchHit *hit = g_ptr_array_index(hits, i);
		g_assert_cmpstr(confab_session_get_id(hit->session),
				==,
				g_ptr_array_index(ids, 24 - i));
		g_assert_cmpstr(confab_session_get_title(hit->session),
				==,
				confab_session_get_title(hit->session));
		g_assert_nonnull(strstr(hit->snippet, "Weather report"));
	}

	/* a long message: a line around the match, cut on both sides */
	for (guint i = 0; i < 60; i++)
		g_string_append(text, "lorem ipsum\n");
	g_string_append(text, "the needle is here");
	for (guint i = 0; i < 60; i++)
		g_string_append(text, " dolor sit");
	long_one = create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "Haystack");
	answer(f, long_one, text->str);
	g_clear_pointer(&hits, g_ptr_array_unref);
	hits = search(f, "alice", long_terms, 20);
	g_assert_cmpuint(hits->len, ==, 1);
	{
		ConfabStoreSearchHit *hit = g_ptr_array_index(hits, 0);
		g_test_message("snippet: %s", hit->snippet);
		g_assert_nonnull(strstr(hit->snippet, "the needle is here"));
		g_assert_true(g_str_has_prefix(hit->snippet, "…"));
		g_assert_true(g_str_has_suffix(hit->snippet, "…"));
		g_assert_null(strchr(hit->snippet, '\n'));
		g_assert_cmpuint(g_utf8_strlen(hit->snippet, -1), <=, 162);
	}
}

/* Copies a fixture database over the fixture's store, closed. */
static void
install_fixture(Fixture *f, const gchar *name, gint version)
{
	g_autofree gchar *fixture =
	    g_test_build_filename(G_TEST_DIST, "store", "fixtures", name, NULL);
	g_autofree gchar *bytes = NULL;
	g_autofree gchar *wal = g_strconcat(f->path, "-wal", NULL);
	g_autofree gchar *shm = g_strconcat(f->path, "-shm", NULL);
	g_autoptr(GError) error = NULL;
	gsize len = 0;

	confab_store_close(f->store);
	g_clear_object(&f->store);
	(void)g_unlink(wal);
	(void)g_unlink(shm);
	g_assert_true(g_file_get_contents(fixture, &bytes, &len, &error));
	g_assert_true(g_file_set_contents(f->path, bytes, (gssize)len, &error));
	g_assert_cmpint(read_user_version(f->path), ==, version);
}

/* One number from SQL run on SQLite's file beside the store. */
static gint64
sqlite_count(const gchar *path, const gchar *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;
	gint64 n;

	g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), ==, SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	g_assert_cmpint(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), ==, SQLITE_OK);
	g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
	n = sqlite3_column_int64(stmt, 0);
	while (sqlite3_step(stmt) == SQLITE_ROW)
		;
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	return n;
}

/* New conversations and messages are queued for search in their own
 * transaction and indexed by the writer later, many at a time: when it has
 * been idle for a moment (here, what the store found queued when it
 * opened), after enough writes, or first thing when a search comes. */
static void
test_search_queue(Fixture *f, gconstpointer data)
{
	g_autofree gchar *soup =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "Soup recipes");
	guint waited_ms = 0;

	/* left queued by a daemon that stopped before indexing it */
	confab_store_close(f->store);
	g_clear_object(&f->store);
	g_assert_cmpint(sqlite_count(f->path,
				     "INSERT INTO sessions (id, owner, agent_id, source, title, "
				     "created_at, updated_at) VALUES ('cts_queued', 'alice', "
				     "'agt_a', 0, 'Left in the queue', 1, 1) RETURNING 1"),
			==,
			1);
	g_assert_cmpint(sqlite_count(f->path, "SELECT count(*) FROM search_pending"), >=, 1);
	f->backend->open(f);
	/* no search asks: the writer indexes it on its own */
	while (sqlite_count(f->path, "SELECT count(*) FROM search_pending") > 0) {
		g_assert_cmpuint(waited_ms, <, 10000);
		g_usleep(20 * 1000);
		waited_ms += 20;
	}
	g_test_message("the queue was indexed %u ms after the store opened", waited_ms);
	g_assert_cmpint(
	    sqlite_count(f->path, "SELECT count(*) FROM search WHERE search MATCH 'queue*'"),
	    ==,
	    1);
	ASSERT_FOUND(f, "alice", "queue", "cts_queued");
	ASSERT_FOUND(f, "alice", "soup", soup);

	/* a search right after a turn finds it: it has the queue indexed first */
	answer(f, soup, "Leek and potato.");
	ASSERT_FOUND(f, "alice", "leek", soup);
	g_assert_cmpint(sqlite_count(f->path, "SELECT count(*) FROM search_pending"), ==, 0);
}

/* A message whose blocks are its content (a user's text) is stored once:
 * the blocks column says '' and reads back as the content; blocks of their
 * own (an assistant's tool calls) are stored as they are. */
static void
test_blocks_stored_once(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "Once");
	g_autoptr(ConfabMessage) own = make_message(f, id, "assistant", "calling");
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(GError) error = NULL;
	ConfabMessage *user;
	ConfabMessage *assistant;

	confab_message_set_content_blocks(own, "[{\"type\":\"tool_call\",\"id\":\"c1\"}]");
	g_assert_true(finish_turn(f, own, &error));
	g_assert_no_error(error);
	g_assert_cmpint(
	    sqlite_count(f->path, "SELECT count(*) FROM messages WHERE content_blocks = ''"),
	    ==,
	    1);
	reopen(f);
	history = get_history(f, id);
	g_assert_cmpuint(history->len, ==, 2);
	user = g_ptr_array_index(history, 0);
	assistant = g_ptr_array_index(history, 1);
	g_assert_cmpstr(confab_message_get_content_blocks(user),
			==,
			confab_message_get_content(user));
	g_assert_nonnull(strstr(confab_message_get_content(user), "Once"));
	g_assert_cmpstr(confab_message_get_content_blocks(assistant),
			==,
			"[{\"type\":\"tool_call\",\"id\":\"c1\"}]");
	/* a shared string unshares when either side changes */
	confab_message_share_content_blocks(user);
	confab_message_set_content(user, "[]");
	g_assert_nonnull(strstr(confab_message_get_content_blocks(user), "Once"));
	g_assert_cmpstr(confab_message_get_content(user), ==, "[]");
}

/* Off: no index kept and a search is refused as not implemented (the
 * search then offers "Ask" alone); on again, every conversation is indexed,
 * the ones written while it was off too. */
static void
test_search_index_off(Fixture *f, gconstpointer data)
{
	g_autofree gchar *before =
	    create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "Sorrel soup");
	g_autofree gchar *during = NULL;
	g_autoptr(GPtrArray) hits = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	const gchar *const terms[] = {"sorrel", NULL};

	confab_store_sqlite_set_search_index(CONFAB_STORE_SQLITE(f->store), FALSE);
	during = create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "Sorrel pie");
	answer(f, during, "Sorrel and eggs.");
	confab_store_search_sessions_async(f->store, "alice", terms, 20, NULL, on_result, &slot);
	res = wait_for(&slot);
	hits = confab_store_search_sessions_finish(f->store, res, &error);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_NOT_IMPLEMENTED);
	g_assert_null(hits);
	g_assert_cmpint(sqlite_count(f->path, "SELECT count(*) FROM search"), ==, 0);
	g_assert_cmpint(sqlite_count(f->path, "SELECT count(*) FROM search_pending"), ==, 0);

	confab_store_sqlite_set_search_index(CONFAB_STORE_SQLITE(f->store), TRUE);
	{
		g_autofree gchar *expected = g_strdup_printf("%s %s", during, before);
		ASSERT_FOUND(f, "alice", "sorrel", expected);
	}
	ASSERT_FOUND(f, "alice", "eggs", during);
	/* and what comes after */
	answer(f, before, "With cream.");
	ASSERT_FOUND(f, "alice", "cream", before);
}

/* A database of schema version 2 (tests/store/fixtures/confab-v2.db) is
 * migrated on open: what it held is kept, and search finds it, titles and
 * the text of user and assistant messages (not tool output, not content
 * that is not JSON). */
static void
test_migrate_v2(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) agents = NULL;
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *added = NULL;

	install_fixture(f, "confab-v2.db", 2);
	f->store = open_store(f->path);
	g_assert_cmpint(read_user_version(f->path), ==, CONFAB_DB_VERSION);

	agents = load_agents(f, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(agents->len, ==, 2);
	g_assert_cmpstr(confab_agent_get_api_key(g_ptr_array_index(agents, 1)), ==, "sk-fixture");
	g_assert_nonnull(strstr(confab_agent_get_mcp_servers(g_ptr_array_index(agents, 1)),
				"mcp-fixture-secret"));
	history = get_history(f, "cts_01jfixture0000000000000001");
	g_assert_cmpuint(history->len, ==, 4);

	ASSERT_FOUND(f, "alice", "hello", "cts_01jfixture0000000000000000");
	ASSERT_FOUND(f, "alice", "garden", "cts_01jfixture0000000000000001");
	ASSERT_FOUND(f, "alice", "cherry shade", "cts_01jfixture0000000000000001");
	ASSERT_FOUND(f, "alice", "zucchini", "");
	ASSERT_FOUND(f, "alice", "base64", "");
	ASSERT_FOUND(f, "bob", "hello", "");
	{
		const gchar *const terms[] = {"cherry", NULL};
		g_autoptr(GPtrArray) hits = search(f, "alice", terms, 20);
		ConfabStoreSearchHit *hit = g_ptr_array_index(hits, 0);
		g_assert_cmpstr(hit->snippet, ==, "Cherry tomatoes tolerate partial shade best.");
		g_assert_cmpstr(confab_session_get_title(hit->session), ==, "Planning the garden");
	}
	/* and what comes after the migration is found too, newest first */
	added = create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "More garden");
	answer(f, "cts_01jfixture0000000000000001", "Kale, too.");
	{
		g_autofree gchar *expected =
		    g_strdup_printf("%s cts_01jfixture0000000000000001", added);
		ASSERT_FOUND(f, "alice", "garden", expected);
	}
	ASSERT_FOUND(f, "alice", "kale tomatoes", "cts_01jfixture0000000000000001");
	reopen(f);
	ASSERT_FOUND(f, "alice", "kale tomatoes", "cts_01jfixture0000000000000001");
}

/* ---------- PostgreSQL's own mechanics ---------- */

static void
test_skip_postgres(void)
{
	g_test_skip("the PostgreSQL server binaries were not found (apt-get install postgresql)");
}

static gpointer
open_in_thread(gpointer data)
{
	const gchar *url = data;
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabStorePostgres) store = confab_store_postgres_new(url, NULL, 1, 15, &error);

	g_assert_no_error(error);
	confab_store_close(CONFAB_STORE(store));
	return NULL;
}

/* instances that start together on a new database: one migrates, the
 * others wait for it under the advisory lock and find the schema current */
static void
test_pg_migrate_together(void)
{
	g_autofree gchar *url = confab_test_pg_new_database(pg_cluster);
	GThread *threads[4];
	g_autofree gchar *version = NULL;
	g_autofree gchar *rows = NULL;

	for (guint i = 0; i < G_N_ELEMENTS(threads); i++)
		threads[i] = g_thread_new("open", open_in_thread, url);
	for (guint i = 0; i < G_N_ELEMENTS(threads); i++)
		g_thread_join(threads[i]);
	version = confab_test_pg_query(url, "SELECT version FROM schema_version");
	g_assert_cmpint(atoi(version), ==, CONFAB_PG_SCHEMA_VERSION);
	rows = confab_test_pg_query(url, "SELECT count(*) FROM schema_version");
	g_assert_cmpstr(rows, ==, "1");
	/* every instance left cleanly: none is registered any more */
	g_free(rows);
	rows = confab_test_pg_query(url, "SELECT count(*) FROM instances");
	g_assert_cmpstr(rows, ==, "0");
}

/* a database of schema v1 (before the Responses API) with a conversation:
 * migrated to the current schema, its messages kept, response ids added */
static void
test_pg_migrate_v1(void)
{
	g_autofree gchar *url = confab_test_pg_new_database(pg_cluster);
	g_autoptr(ConfabStore) store = open_postgres(url);
	g_autoptr(ConfabStore) again = NULL;
	g_autofree gchar *out = NULL;
	g_autofree gchar *version = NULL;
	g_autofree gchar *kept = NULL;
	g_autofree gchar *column = NULL;

	confab_store_close(store);
	/* back to v1: no response_id column, no approvals */
	out = confab_test_pg_query(
	    url,
	    "ALTER TABLE messages DROP COLUMN response_id;"
	    "DROP TABLE approvals;"
	    "DROP TABLE responses; DROP TABLE response_events; DROP TABLE elicitations;"
	    "ALTER TABLE sessions DROP COLUMN metadata;"
	    "DROP TABLE rates; DROP TABLE parallel_holds; DROP TABLE limits; DROP TABLE "
	    "token_usage; DROP TABLE mcp_oauth; DROP TABLE usage_monthly;"
	    "UPDATE schema_version SET version = 1;"
	    "INSERT INTO sessions (id, owner, agent_id, source, title, created_at, updated_at) "
	    "VALUES ('cts_01jmigrate000000000000001', 'alice', 'agt_01jmigrate000000000000001', 0, "
	    "'t', 1, 1);"
	    "INSERT INTO messages (id, session_id, role, model, content, content_blocks, status, "
	    "created_at) VALUES ('msg_01jmigrate000000000000001', 'cts_01jmigrate000000000000001', "
	    "'user', 'agt_01jmigrate000000000000001', '[]', '[]', 0, 1);"
	    "SELECT 1");
	again = open_postgres(url);
	version = confab_test_pg_query(url, "SELECT version FROM schema_version");
	g_assert_cmpint(atoi(version), ==, CONFAB_PG_SCHEMA_VERSION);
	kept = confab_test_pg_query(url, "SELECT id FROM messages");
	g_assert_cmpstr(kept, ==, "msg_01jmigrate000000000000001");
	column = confab_test_pg_query(url, "SELECT count(response_id) FROM messages");
	g_assert_cmpstr(column, ==, "0");
	g_free(column);
	/* v8: agents from before targets have none beyond their one */
	column = confab_test_pg_query(url, "SELECT count(upstreams) + count(routing) FROM agents");
	g_assert_cmpstr(column, ==, "0");
	confab_store_close(again);
}

/* a database of schema v4, with an approval a turn waits for (no instance
 * could be named then) and one a response asked: migrated, the first is
 * timed out (nobody can tell whether its turn still waits), the second is
 * still pending */
static void
test_pg_migrate_v4(void)
{
	g_autofree gchar *url = confab_test_pg_new_database(pg_cluster);
	g_autoptr(ConfabStore) store = open_postgres(url);
	g_autoptr(ConfabStore) again = NULL;
	g_autofree gchar *out = NULL;
	g_autofree gchar *version = NULL;
	g_autofree gchar *waited = NULL;
	g_autofree gchar *asked = NULL;

	confab_store_close(store);
	out = confab_test_pg_query(
	    url,
	    "ALTER TABLE approvals DROP COLUMN instance_id;"
	    "DROP TABLE responses; DROP TABLE response_events; DROP TABLE elicitations;"
	    "ALTER TABLE sessions DROP COLUMN metadata;"
	    "DROP TABLE rates; DROP TABLE parallel_holds; DROP TABLE limits; DROP TABLE "
	    "token_usage; DROP TABLE mcp_oauth; DROP TABLE usage_monthly;"
	    "UPDATE schema_version SET version = 4;"
	    "INSERT INTO approvals (id, owner, agent_id, session_id, server, tool, name, "
	    "arguments, tool_call_id, created_at, response_id) VALUES "
	    "('mcpr_01jmigrate00000000000001', 'alice', 'agt_x', 'cts_x', 'files', 'w', "
	    "'files__w', "
	    "'{}', 'call_1', 1, NULL), "
	    "('mcpr_01jmigrate00000000000002', 'alice', 'agt_x', 'cts_x', 'files', 'w', "
	    "'files__w', "
	    "'{}', 'call_2', 1, 'resp_x');"
	    "SELECT 1");
	again = open_postgres(url);
	version = confab_test_pg_query(url, "SELECT version FROM schema_version");
	g_assert_cmpint(atoi(version), ==, CONFAB_PG_SCHEMA_VERSION);
	waited = confab_test_pg_query(
	    url,
	    "SELECT state FROM approvals WHERE id = 'mcpr_01jmigrate00000000000001'");
	g_assert_cmpstr(waited, ==, "timed_out");
	asked = confab_test_pg_query(
	    url,
	    "SELECT state FROM approvals WHERE id = 'mcpr_01jmigrate00000000000002'");
	g_assert_cmpstr(asked, ==, "pending");
	confab_store_close(again);
}

static void
test_pg_future_version_refused(void)
{
	g_autofree gchar *url = confab_test_pg_new_database(pg_cluster);
	g_autoptr(ConfabStore) store = open_postgres(url);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabStorePostgres) again = NULL;
	g_autofree gchar *out = NULL;
	g_autofree gchar *version = NULL;

	confab_store_close(store);
	out = confab_test_pg_query(url, "UPDATE schema_version SET version = 99");
	again = confab_store_postgres_new(url, NULL, 1, 15, &error);
	g_assert_null(again);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_FAILED);
	version = confab_test_pg_query(url, "SELECT version FROM schema_version");
	g_assert_cmpstr(version, ==, "99");
}

typedef struct {
	guint counts[CONFAB_STORE_CHANGE_ALL + 1];
} Changes;

static void
on_changed(ConfabStore *store, gint change, gpointer data)
{
	Changes *changes = data;
	g_assert_cmpint(change, >=, 0);
	g_assert_cmpint(change, <=, CONFAB_STORE_CHANGE_ALL);
	changes->counts[change]++;
}

typedef struct {
	Changes *changes;
	ConfabStoreChange change;
} ChangeWait;

static gboolean
change_seen(gpointer data)
{
	ChangeWait *wait = data;
	return wait->changes->counts[wait->change] > 0;
}

/* what one instance writes, the others hear of within a second; the
 * writer itself does not */
static void
test_pg_changes_announced(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabStore) other = open_postgres(f->pg_url);
	g_autoptr(ConfabAgent) agent = make_agent(f, "announced");
	g_autoptr(ConfabToken) token = confab_token_new();
	g_autofree gchar *token_id = confab_id_generator_next(f->ids, CONFAB_PREFIX_TOKEN);
	g_autoptr(GBytes) hash = g_bytes_new_static("0123456789abcdef0123456789abcdef", 32);
	const gchar *scopes[] = {"chat.completions", NULL};
	Changes mine = {{0}}, theirs = {{0}};
	ChangeWait wait = {&theirs, CONFAB_STORE_CHANGE_AGENTS};

	g_signal_connect(f->store, "changed", G_CALLBACK(on_changed), &mine);
	g_signal_connect(other, "changed", G_CALLBACK(on_changed), &theirs);

	g_assert_true(save_agent(f, agent, NULL));
	g_assert_true(confab_test_wait_until(change_seen, &wait, 1000));
	confab_token_set_id(token, token_id);
	confab_token_set_owner(token, "alice");
	confab_token_set_scopes(token, scopes);
	confab_token_set_hash(token, hash);
	g_assert_true(save_token(f, token, NULL));
	wait.change = CONFAB_STORE_CHANGE_TOKENS;
	g_assert_true(confab_test_wait_until(change_seen, &wait, 1000));
	g_assert_true(set_quota(f, "alice", 3, NULL));
	wait.change = CONFAB_STORE_CHANGE_QUOTAS;
	g_assert_true(confab_test_wait_until(change_seen, &wait, 1000));
	theirs.counts[CONFAB_STORE_CHANGE_AGENTS] = 0;
	g_assert_true(delete_agent(f, confab_agent_get_id(agent), NULL));
	wait.change = CONFAB_STORE_CHANGE_AGENTS;
	g_assert_true(confab_test_wait_until(change_seen, &wait, 1000));

	/* and the other way round; the writer hears nothing of its own */
	wait.changes = &mine;
	g_assert_true(confab_test_wait_until(change_seen, &wait, 200) == FALSE);
	confab_store_save_agent_async(other, agent, NULL, NULL, NULL);
	g_assert_true(confab_test_wait_until(change_seen, &wait, 1000));
	g_signal_handlers_disconnect_by_data(f->store, &mine);
	g_signal_handlers_disconnect_by_data(other, &theirs);
	confab_store_close(other);
}

static gboolean
acquire_on(ConfabStore *store, const gchar *session_id, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_acquire_session_async(store, session_id, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_acquire_session_finish(store, res, error);
}

typedef struct {
	ConfabStore *store;
	const gchar *session_id;
} AcquireWait;

static gboolean
acquired(gpointer data)
{
	AcquireWait *wait = data;
	return acquire_on(wait->store, wait->session_id, NULL);
}

/* one turn at a time per session across instances, and the quota exact
 * when two instances admit at once */
static void
test_pg_instances_share(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabStore) other = open_postgres(f->pg_url);
	g_autofree gchar *sid = create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "x");
	g_autoptr(GError) error = NULL;
	AcquireWait wait = {other, sid};
	Admissions a = {0, 0};
	guint timeout;

	g_assert_true(acquire(f, sid, &error));
	g_assert_false(acquire_on(other, sid, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_BUSY);
	g_clear_error(&error);
	confab_store_release_session(f->store, sid);
	g_assert_true(confab_test_wait_until(acquired, &wait, 5000));
	g_assert_false(acquire(f, sid, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_BUSY);

	g_assert_true(set_quota(f, "gina", 37, NULL));
	for (guint i = 0; i < 200; i++)
		confab_store_admit_quota_async(i % 2 ? f->store : other,
					       "gina",
					       f->month,
					       0,
					       0,
					       0,
					       NULL,
					       on_admitted,
					       &a);
	timeout = g_timeout_add_seconds(30, on_timeout, NULL);
	while (a.done < 200)
		g_main_context_iteration(NULL, TRUE);
	g_source_remove(timeout);
	g_assert_cmpuint(a.admitted, ==, 37);
	confab_store_close(other);
}

typedef struct {
	const gchar *url;
	const gchar *sql;
	const gchar *expect;
} SqlWait;

static gboolean
sql_says(gpointer data)
{
	SqlWait *wait = data;
	g_autofree gchar *value = confab_test_pg_query(wait->url, wait->sql);
	return g_strcmp0(value, wait->expect) == 0;
}

/* An instance that stops renewing its lease (killed, its host lost) is
 * reaped by the others within 30 s: its counted but uncommitted requests
 * are given back, its stream's answer stored incomplete, its sessions
 * freed. Its rows are made by hand here, as a dead instance leaves them. */
static void
test_pg_dead_instance_reaped(Fixture *f, gconstpointer data)
{
	g_autofree gchar *sid = create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "x");
	g_autofree gchar *answer = confab_id_generator_next(f->ids, CONFAB_PREFIX_MESSAGE);
	g_autofree gchar *sql = g_strdup_printf(
	    "INSERT INTO instances (id, expires_at) VALUES ('ins_dead', now() + interval '2 s');"
	    "INSERT INTO usage (owner, month, requests, pending) VALUES ('alice', '%s', 4, 2);"
	    "INSERT INTO usage_holds VALUES ('h1', 'ins_dead', 'alice', '%s'),"
	    " ('h2', 'ins_dead', 'alice', '%s');"
	    "INSERT INTO session_leases VALUES ('%s', 'ins_dead', 'l1', '%s', 'agt_a', 1700000100)",
	    f->month,
	    f->month,
	    f->month,
	    sid,
	    answer);
	g_autofree gchar *out = confab_test_pg_query(f->pg_url, sql);
	SqlWait gone = {f->pg_url, "SELECT count(*) FROM session_leases", "0"};
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(ConfabStoreUsage) usage = NULL;
	gint64 started = g_get_monotonic_time();
	ConfabMessage *m;

	g_assert_false(acquire(f, sid, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_BUSY);
	g_assert_true(confab_test_wait_until(sql_says, &gone, 30000));
	g_test_message("reaped %.1f s after its lease expired",
		       (g_get_monotonic_time() - started) / 1e6 - 2);
	g_assert_true(acquire(f, sid, NULL));
	history = get_history(f, sid);
	g_assert_cmpuint(history->len, ==, 2);
	m = g_ptr_array_index(history, 1);
	g_assert_cmpstr(confab_message_get_id(m), ==, answer);
	g_assert_cmpstr(confab_message_get_role(m), ==, "assistant");
	g_assert_cmpint(confab_message_get_status(m), ==, CONFAB_MESSAGE_STATUS_INCOMPLETE);
	usage = get_usage(f, "alice", 0);
	g_assert_cmpuint(usage->requests, ==, 4);
	g_free(out);
	out = confab_test_pg_query(f->pg_url, "SELECT count(*) FROM instances");
	g_assert_cmpstr(out, ==, "1");
}

/* A stream's first commit leaves its answer with the lease; the answer's own
 * commit ends the lease, so that nothing is stored twice and the next turn
 * may start at once on any instance. */
static void
test_pg_answer_ends_lease(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabStore) other = open_postgres(f->pg_url);
	g_autofree gchar *sid = create_session(f, "alice", "agt_a", CONFAB_SESSION_SOURCE_API, "x");
	g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
	g_autoptr(ConfabMessage) answer = make_message(f, sid, "assistant", "done");
	g_autoptr(GError) error = NULL;
	g_autofree gchar *kept = NULL;
	g_autofree gchar *sql = g_strdup_printf("SELECT answer_id FROM session_leases "
						"WHERE session_id = '%s'",
						sid);

	g_assert_true(acquire(f, sid, NULL));
	record->session = confab_session_new();
	confab_session_set_id(record->session, sid);
	g_ptr_array_add(record->messages, make_message(f, sid, "user", "again"));
	record->unfinished = make_message(f, sid, "assistant", "");
	confab_message_set_id(record->unfinished, confab_message_get_id(answer));
	g_assert_true(begin_turn(f, record, NULL));
	kept = confab_test_pg_query(f->pg_url, sql);
	g_assert_cmpstr(kept, ==, confab_message_get_id(answer));
	g_assert_false(acquire_on(other, sid, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_BUSY);
	g_clear_error(&error);

	g_assert_true(finish_turn(f, answer, NULL));
	g_free(kept);
	kept = confab_test_pg_query(f->pg_url, "SELECT count(*) FROM session_leases");
	g_assert_cmpstr(kept, ==, "0");
	/* at once, before the release that follows the turn */
	g_assert_true(acquire_on(other, sid, &error));
	g_assert_no_error(error);
	confab_store_release_session(f->store, sid);
	confab_store_release_session(other, sid);
	confab_store_close(other);
}

typedef struct {
	ConfabStore *store;
	gint code; /* of the last try: -1 for success */
	gint64 took_us;
} Probe;

static gboolean
probe_ok(gpointer data)
{
	Probe *probe = data;
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) agents = NULL;
	gint64 start = g_get_monotonic_time();

	confab_store_load_agents_async(probe->store, NULL, on_result, &slot);
	res = wait_for(&slot);
	agents = confab_store_load_agents_finish(probe->store, res, &error);
	probe->took_us = g_get_monotonic_time() - start;
	probe->code = error != NULL ? error->code : -1;
	if (error != NULL)
		g_assert_true(error->domain == CONFAB_ERROR);
	return agents != NULL;
}

/* the database hangs (SIGSTOP) and then dies: each request fails within
 * 5 s with store_unavailable; back, it serves again within 10 s, and the
 * store says everything may have changed meanwhile */
static void
test_pg_unavailable(Fixture *f, gconstpointer data)
{
	Probe probe = {f->store, 0, 0};
	Changes changes = {{0}};
	ChangeWait wait = {&changes, CONFAB_STORE_CHANGE_ALL};
	gint64 back;

	g_signal_connect(f->store, "changed", G_CALLBACK(on_changed), &changes);
	g_assert_true(probe_ok(&probe));

	confab_test_pg_pause(pg_cluster);
	for (guint i = 0; i < 3; i++) {
		g_assert_false(probe_ok(&probe));
		g_assert_cmpint(probe.code, ==, CONFAB_ERROR_STORE_UNAVAILABLE);
		g_assert_cmpint(probe.took_us, <, 5 * G_USEC_PER_SEC);
		g_test_message("hanging database: failed after %.2f s", probe.took_us / 1e6);
	}
	confab_test_pg_resume(pg_cluster);
	back = g_get_monotonic_time();
	g_assert_true(confab_test_wait_until(probe_ok, &probe, 10000));
	g_test_message("resumed: serving again after %.2f s",
		       (g_get_monotonic_time() - back) / 1e6);

	confab_test_pg_kill(pg_cluster);
	g_assert_false(probe_ok(&probe));
	g_assert_cmpint(probe.code, ==, CONFAB_ERROR_STORE_UNAVAILABLE);
	g_assert_cmpint(probe.took_us, <, 5 * G_USEC_PER_SEC);
	confab_test_pg_restart(pg_cluster);
	back = g_get_monotonic_time();
	g_assert_true(confab_test_wait_until(probe_ok, &probe, 10000));
	g_test_message("restarted: serving again after %.2f s",
		       (g_get_monotonic_time() - back) / 1e6);
	/* notifications may have been missed: reload everything */
	g_assert_true(confab_test_wait_until(change_seen, &wait, 10000));
	g_signal_handlers_disconnect_by_data(f->store, &changes);
}

static void
test_pg_password_file(void)
{
	g_autofree gchar *dir = confab_test_make_tmpdir("pgpass");
	g_autofree gchar *path = g_build_filename(dir, "password", NULL);
	g_autoptr(GError) error = NULL;
	g_autofree gchar *a = NULL;
	g_autofree gchar *b = NULL;
	g_autofree gchar *c = NULL;

	g_assert_true(g_file_set_contents(path, "s3cret w1th space\nsecond line\n", -1, NULL));
	a = confab_store_postgres_read_password_file(path, &error);
	g_assert_cmpstr(a, ==, "s3cret w1th space");
	g_assert_true(g_file_set_contents(path, "crlf\r\n", -1, NULL));
	b = confab_store_postgres_read_password_file(path, &error);
	g_assert_cmpstr(b, ==, "crlf");
	g_assert_true(g_file_set_contents(path, "no newline", -1, NULL));
	c = confab_store_postgres_read_password_file(path, &error);
	g_assert_cmpstr(c, ==, "no newline");
	g_assert_no_error(error);
	confab_test_rm_rf(dir);
	g_assert_null(confab_store_postgres_read_password_file(path, &error));
	g_assert_nonnull(error);
}

/* over TCP, where the role needs its password: from the password file */
static void
test_pg_password_over_tcp(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *password =
	    confab_store_postgres_read_password_file(confab_test_pg_get_password_file(pg_cluster),
						     &error);
	g_autoptr(ConfabStorePostgres) store = NULL;
	g_autoptr(ConfabStorePostgres) refused = NULL;

	g_assert_no_error(error);
	store =
	    confab_store_postgres_new(confab_test_pg_get_url(pg_cluster), password, 2, 15, &error);
	g_assert_no_error(error);
	confab_store_close(CONFAB_STORE(store));
	refused =
	    confab_store_postgres_new(confab_test_pg_get_url(pg_cluster), "wrong", 2, 15, &error);
	g_assert_null(refused);
	g_assert_nonnull(error);
}

static void
add_postgres_tests(gboolean available)
{
	static const struct {
		const gchar *name;
		void (*func)(Fixture *, gconstpointer);
		void (*plain)(void);
	} tests[] = {
	    {"migrate-together", NULL, test_pg_migrate_together},
	    {"future-version-refused", NULL, test_pg_future_version_refused},
	    {"migrate-v1", NULL, test_pg_migrate_v1},
	    {"migrate-v4", NULL, test_pg_migrate_v4},
	    {"password-file", NULL, test_pg_password_file},
	    {"password-over-tcp", NULL, test_pg_password_over_tcp},
	    {"changes-announced", test_pg_changes_announced, NULL},
	    {"instances-share", test_pg_instances_share, NULL},
	    {"dead-instance-reaped", test_pg_dead_instance_reaped, NULL},
	    {"answer-ends-lease", test_pg_answer_ends_lease, NULL},
	    {"unavailable", test_pg_unavailable, NULL},
	};

	for (guint i = 0; i < G_N_ELEMENTS(tests); i++) {
		g_autofree gchar *path =
		    g_strdup_printf("/confab/store/postgresql/%s", tests[i].name);
		if (!available && tests[i].plain != test_pg_password_file)
			g_test_add_func(path, test_skip_postgres);
		else if (tests[i].plain != NULL)
			g_test_add_func(path, tests[i].plain);
		else
			g_test_add(path,
				   Fixture,
				   &postgres_backend,
				   fixture_setup,
				   tests[i].func,
				   fixture_teardown);
	}
}

/* The promises every backend keeps. */
/* ---------- approvals ---------- */

static ConfabApproval *
decide(Fixture *f, const gchar *id, ConfabApprovalState state, const gchar *by, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(ConfabApproval) decision = confab_approval_new();

	decision->id = g_strdup(id);
	decision->state = state;
	decision->decided_by = g_strdup(by);
	decision->reason = g_strdup("because");
	decision->decided_at = 1700000200;
	confab_store_decide_approval_async(f->store, decision, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_decide_approval_finish(f->store, res, error);
}

static ConfabApproval *
get_approval(Fixture *f, const gchar *id, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;

	confab_store_get_approval_async(f->store, id, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_get_approval_finish(f->store, res, error);
}

/* An approval is stored pending, read back whole, decided exactly once;
 * a second decision (or the timeout's) is refused and changes nothing. */
static void
test_approvals(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabApproval) approval = confab_approval_new();
	g_autoptr(ConfabApproval) read = NULL;
	g_autoptr(ConfabApproval) decided = NULL;
	g_autoptr(ConfabApproval) again = NULL;
	g_autoptr(ConfabApproval) missing = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;

	approval->id = confab_id_generator_next(f->ids, CONFAB_PREFIX_APPROVAL);
	approval->owner = g_strdup("alice");
	approval->agent_id = g_strdup("agt_x");
	approval->session_id = g_strdup("cts_x");
	approval->server = g_strdup("files");
	approval->tool = g_strdup("write_file");
	approval->name = g_strdup("files__write_file");
	approval->arguments = g_strdup("{\"path\":\"/tmp/é\"}");
	approval->tool_call_id = g_strdup("call_1");
	approval->created_at = 1700000100;
	confab_store_save_approval_async(f->store, approval, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_save_approval_finish(f->store, res, &error));
	g_assert_no_error(error);

	read = get_approval(f, approval->id, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(read->owner, ==, "alice");
	g_assert_cmpstr(read->name, ==, "files__write_file");
	g_assert_cmpstr(read->tool, ==, "write_file");
	g_assert_cmpstr(read->arguments, ==, approval->arguments);
	g_assert_cmpint(read->state, ==, CONFAB_APPROVAL_STATE_PENDING);
	g_assert_null(read->decided_by);

	decided = decide(f, approval->id, CONFAB_APPROVAL_STATE_DENIED, "api", &error);
	g_assert_no_error(error);
	g_assert_cmpint(decided->state, ==, CONFAB_APPROVAL_STATE_DENIED);
	g_assert_cmpstr(decided->decided_by, ==, "api");
	g_assert_cmpstr(decided->reason, ==, "because");

	again = decide(f, approval->id, CONFAB_APPROVAL_STATE_TIMED_OUT, "timeout", &error);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_APPROVAL_DECIDED);
	g_assert_true(g_str_has_suffix(error->message, "' is no longer pending: it was denied"));
	g_assert_null(again);
	g_clear_error(&error);
	g_clear_pointer(&read, confab_approval_free);
	reopen(f);
	read = get_approval(f, approval->id, &error);
	g_assert_no_error(error);
	g_assert_cmpint(read->state, ==, CONFAB_APPROVAL_STATE_DENIED);
	g_assert_cmpstr(read->decided_by, ==, "api");

	missing = decide(f,
			 "mcpr_01jzzzzzzzzzzzzzzzzzzzzzzz",
			 CONFAB_APPROVAL_STATE_APPROVED,
			 "api",
			 &error);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_APPROVAL_NOT_FOUND);
	g_assert_cmpstr(error->message, ==, "No approval 'mcpr_01jzzzzzzzzzzzzzzzzzzzzzzz'");
	g_clear_error(&error);
	g_assert_null(get_approval(f, "mcpr_01jzzzzzzzzzzzzzzzzzzzzzzz", &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_APPROVAL_NOT_FOUND);
}

/* ---------- MCP servers' OAuth state ---------- */

static gboolean
save_mcp_oauth(Fixture *f,
	       const gchar *server,
	       const gchar *state,
	       const gchar *data,
	       gint64 version)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	gboolean ok;

	confab_store_save_mcp_oauth_async(f->store,
					  "agt_x",
					  server,
					  state,
					  data,
					  version,
					  NULL,
					  on_result,
					  &slot);
	res = wait_for(&slot);
	ok = confab_store_save_mcp_oauth_finish(f->store, res, &error);
	g_assert_no_error(error);
	return ok;
}

static gchar *
get_mcp_oauth(Fixture *f, const gchar *server, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;

	confab_store_get_mcp_oauth_async(f->store, "agt_x", server, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_get_mcp_oauth_finish(f->store, res, error);
}

static gboolean
claim_mcp_oauth(Fixture *f, const gchar *state, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;

	confab_store_claim_mcp_oauth_state_async(f->store, state, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_claim_mcp_oauth_state_finish(f->store, res, error);
}

/* An MCP server's OAuth state: replaced on each save, found by its
 * pending state, whose claim counts once. */
static void
test_mcp_oauth(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_auto(GStrv) found = NULL;
	g_autofree gchar *read = NULL;
	g_autofree gchar *none = NULL;
	GAsyncResult *slot = NULL;

	none = get_mcp_oauth(f, "crm", &error);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_NOT_FOUND);
	g_assert_null(none);
	g_clear_error(&error);
	g_assert_true(save_mcp_oauth(f, "crm", NULL, "{\"client_id\":\"a\"}", 10));
	g_assert_true(save_mcp_oauth(f, "crm", "st-1", "{\"client_id\":\"b\"}", 20));
	/* an older state landing late changes nothing */
	g_assert_true(save_mcp_oauth(f, "crm", NULL, "{\"client_id\":\"a\"}", 15));
	read = get_mcp_oauth(f, "crm", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(read, ==, "{\"client_id\":\"b\"}");

	confab_store_find_mcp_oauth_state_async(f->store, "st-1", NULL, on_result, &slot);
	res = wait_for(&slot);
	found = confab_store_find_mcp_oauth_state_finish(f->store, res, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(found[0], ==, "agt_x");
	g_assert_cmpstr(found[1], ==, "crm");
	g_assert_cmpstr(found[2], ==, read);

	g_assert_true(claim_mcp_oauth(f, "st-1", &error));
	g_assert_no_error(error);
	g_assert_false(claim_mcp_oauth(f, "st-1", &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_NOT_FOUND);
	g_clear_error(&error);
	g_assert_false(claim_mcp_oauth(f, "never", &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_NOT_FOUND);
}

/* ---------- elicitations ---------- */

static gboolean
answer_elicitation(Fixture *f, const gchar *id, const gchar *state, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(ConfabElicitationRequest) answer = confab_elicitation_request_new();

	answer->id = g_strdup(id);
	answer->state = g_strdup(state);
	answer->content = g_strdup("{\"email\":\"é@example.org\"}");
	answer->answered_by = g_strdup("api");
	answer->answered_at = 1700000200;
	confab_store_answer_elicitation_async(f->store, answer, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_answer_elicitation_finish(f->store, res, error);
}

static GPtrArray *
list_elicitations(Fixture *f, const gchar *owner, const gchar *agent_id)
{
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;
	GPtrArray *list;

	confab_store_list_elicitations_async(f->store, owner, agent_id, 10, NULL, on_result, &slot);
	res = wait_for(&slot);
	list = confab_store_list_elicitations_finish(f->store, res, &error);
	g_assert_no_error(error);
	g_assert_nonnull(list);
	return list;
}

static ConfabElicitationRequest *
get_elicitation(Fixture *f, const gchar *id, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;

	confab_store_get_elicitation_async(f->store, id, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_get_elicitation_finish(f->store, res, error);
}

/* An elicitation request is stored pending, read back whole, answered
 * exactly once; a second answer (or the timeout's) is refused and changes
 * nothing. */
static void
test_elicitations(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabElicitationRequest) request = confab_elicitation_request_new();
	g_autoptr(ConfabElicitationRequest) read = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;

	request->id = confab_id_generator_next(f->ids, CONFAB_PREFIX_ELICITATION);
	request->owner = g_strdup("alice");
	request->agent_id = g_strdup("agt_x");
	request->session_id = g_strdup("cts_x");
	request->server = g_strdup("crm");
	request->message = g_strdup("Which account? ✓");
	request->schema = g_strdup("{\"type\":\"object\",\"properties\":{}}");
	request->state = g_strdup(CONFAB_ELICITATION_PENDING);
	request->created_at = 1700000100;
	confab_store_save_elicitation_async(f->store, request, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_save_elicitation_finish(f->store, res, &error));
	g_assert_no_error(error);

	read = get_elicitation(f, request->id, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(read->owner, ==, "alice");
	g_assert_cmpstr(read->message, ==, "Which account? ✓");
	g_assert_cmpstr(read->schema, ==, request->schema);
	g_assert_cmpstr(read->state, ==, CONFAB_ELICITATION_PENDING);
	g_assert_null(read->content);
	g_assert_cmpint(read->created_at, ==, 1700000100);
	/* listed while pending: for its owner, and for everyone (NULL) */
	{
		g_autoptr(GPtrArray) mine = list_elicitations(f, "alice", NULL);
		g_autoptr(GPtrArray) all = list_elicitations(f, NULL, NULL);
		g_autoptr(GPtrArray) theirs = list_elicitations(f, "bob", NULL);
		g_autoptr(GPtrArray) of_agent = list_elicitations(f, "alice", "agt_x");
		g_autoptr(GPtrArray) of_other = list_elicitations(f, "alice", "agt_y");
		g_assert_cmpuint(of_agent->len, ==, 1);
		g_assert_cmpuint(of_other->len, ==, 0);
		g_assert_cmpuint(mine->len, ==, 1);
		g_assert_cmpstr(((ConfabElicitationRequest *)mine->pdata[0])->id, ==, request->id);
		g_assert_cmpuint(all->len, ==, 1);
		g_assert_cmpuint(theirs->len, ==, 0);
	}

	g_assert_true(answer_elicitation(f, request->id, CONFAB_ELICITATION_ACCEPTED, &error));
	g_assert_no_error(error);
	g_assert_false(answer_elicitation(f, request->id, CONFAB_ELICITATION_TIMED_OUT, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_ELICITATION_ANSWERED);
	g_clear_error(&error);
	g_clear_pointer(&read, confab_elicitation_request_free);
	reopen(f);
	read = get_elicitation(f, request->id, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(read->state, ==, CONFAB_ELICITATION_ACCEPTED);
	g_assert_cmpstr(read->content, ==, "{\"email\":\"é@example.org\"}");
	g_assert_cmpstr(read->answered_by, ==, "api");
	g_assert_cmpint(read->answered_at, ==, 1700000200);
	{
		g_autoptr(GPtrArray) answered = list_elicitations(f, NULL, NULL);
		g_assert_cmpuint(answered->len, ==, 0);
	}

	g_assert_false(answer_elicitation(f,
					  "mcpe_01jzzzzzzzzzzzzzzzzzzzzzzz",
					  CONFAB_ELICITATION_DECLINED,
					  &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_ELICITATION_ANSWERED);
	g_clear_error(&error);
	g_assert_null(get_elicitation(f, "mcpe_01jzzzzzzzzzzzzzzzzzzzzzzz", &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_ELICITATION_NOT_FOUND);
	g_clear_error(&error);

	/* one pending when its confabd stops: nobody can answer it any more
	 * (SQLite at open, PostgreSQL's confab_reap() of the closing
	 * instance) */
	g_free(request->id);
	request->id = confab_id_generator_next(f->ids, CONFAB_PREFIX_ELICITATION);
	confab_store_save_elicitation_async(f->store, request, NULL, on_result, &slot);
	g_clear_object(&res);
	res = wait_for(&slot);
	g_assert_true(confab_store_save_elicitation_finish(f->store, res, &error));
	reopen(f);
	g_clear_pointer(&read, confab_elicitation_request_free);
	read = get_elicitation(f, request->id, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(read->state, ==, CONFAB_ELICITATION_TIMED_OUT);
	g_assert_cmpstr(read->answered_by, ==, "timeout");
	g_assert_false(answer_elicitation(f, request->id, CONFAB_ELICITATION_ACCEPTED, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_ELICITATION_ANSWERED);
}

static ConfabApproval *
save_new_approval(Fixture *f, const gchar *response_id)
{
	ConfabApproval *approval = confab_approval_new();
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;

	approval->id = confab_id_generator_next(f->ids, CONFAB_PREFIX_APPROVAL);
	approval->owner = g_strdup("alice");
	approval->agent_id = g_strdup("agt_x");
	approval->session_id = g_strdup("cts_x");
	approval->server = g_strdup("files");
	approval->tool = g_strdup("write_file");
	approval->name = g_strdup("files__write_file");
	approval->arguments = g_strdup("{}");
	approval->tool_call_id = g_strdup("call_1");
	approval->created_at = 1700000100;
	approval->response_id = g_strdup(response_id);
	confab_store_save_approval_async(f->store, approval, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_save_approval_finish(f->store, res, &error));
	g_assert_no_error(error);
	return approval;
}

static guint
n_listed_of(Fixture *f, const gchar *agent_id)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GPtrArray) list = NULL;
	g_autoptr(GError) error = NULL;

	confab_store_list_approvals_async(f->store, "alice", agent_id, 10, NULL, on_result, &slot);
	res = wait_for(&slot);
	list = confab_store_list_approvals_finish(f->store, res, &error);
	g_assert_no_error(error);
	return list->len;
}

static guint
n_listed(Fixture *f)
{
	return n_listed_of(f, NULL);
}

/* Issue 35: the approvals that the turns of a store (a confabd) waited for
 * do not outlive it: once it is gone (SQLite: opened again; PostgreSQL:
 * its instance ended), they are timed out, are not listed, and a decision
 * is refused. A response's request is nobody's wait: it stays pending. */
static void
test_approvals_orphaned(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabApproval) waited = save_new_approval(f, NULL);
	g_autoptr(ConfabApproval) asked = save_new_approval(f, "resp_x");
	g_autoptr(ConfabApproval) read = NULL;
	g_autoptr(ConfabApproval) decided = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_cmpuint(n_listed(f), ==, 1);
	/* a bound token's list: its agent's only */
	g_assert_cmpuint(n_listed_of(f, "agt_x"), ==, 1);
	g_assert_cmpuint(n_listed_of(f, "agt_y"), ==, 0);
	reopen(f);
	g_assert_cmpuint(n_listed(f), ==, 0);
	read = get_approval(f, waited->id, &error);
	g_assert_no_error(error);
	g_assert_cmpint(read->state, ==, CONFAB_APPROVAL_STATE_TIMED_OUT);
	g_assert_cmpstr(read->decided_by, ==, "timeout");
	decided = decide(f, waited->id, CONFAB_APPROVAL_STATE_APPROVED, "api", &error);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_APPROVAL_DECIDED);
	g_assert_null(decided);
	g_clear_error(&error);
	g_clear_pointer(&read, confab_approval_free);
	read = get_approval(f, asked->id, &error);
	g_assert_no_error(error);
	g_assert_cmpint(read->state, ==, CONFAB_APPROVAL_STATE_PENDING);
	decided = decide(f, asked->id, CONFAB_APPROVAL_STATE_APPROVED, "api", &error);
	g_assert_no_error(error);
	g_assert_cmpint(decided->state, ==, CONFAB_APPROVAL_STATE_APPROVED);
}

/* ---------- response records and kept events (issue 31) ---------- */

static gboolean
save_record(Fixture *f, const gchar *id, gboolean background, guint max, GError **error)
{
	g_autoptr(ConfabResponseRecord) record = confab_response_record_new();
	g_autoptr(GAsyncResult) res = NULL;
	GAsyncResult *slot = NULL;

	record->id = g_strdup(id);
	record->owner = g_strdup("alice");
	record->agent_id = g_strdup("agt_x");
	record->background = background;
	record->stream = TRUE;
	record->status = g_strdup(background ? "queued" : "in_progress");
	record->params = g_strdup("{\"temperature\":0.5}");
	record->created_at = 1700000200;
	confab_store_save_response_async(f->store, record, max, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_save_response_finish(f->store, res, error);
}

static ConfabResponseRecord *
get_record(Fixture *f, const gchar *id, GError **error)
{
	g_autoptr(GAsyncResult) res = NULL;
	GAsyncResult *slot = NULL;

	confab_store_get_response_record_async(f->store, id, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_get_response_record_finish(f->store, res, error);
}

static void
end_response(Fixture *f,
	     const gchar *id,
	     const gchar *status,
	     gint64 completed_at,
	     const ConfabResponseEvents *events)
{
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;

	confab_store_end_response_async(f->store,
					id,
					status,
					NULL,
					completed_at,
					events,
					NULL,
					on_result,
					&slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_end_response_finish(f->store, res, &error));
	g_assert_no_error(error);
}

static GPtrArray *
list_events(Fixture *f, const gchar *id, gint64 after)
{
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;
	GPtrArray *list;

	confab_store_list_response_events_async(f->store, id, after, NULL, on_result, &slot);
	res = wait_for(&slot);
	list = confab_store_list_response_events_finish(f->store, res, &error);
	g_assert_no_error(error);
	return list;
}

static void
append_events(Fixture *f, const gchar *id, gint64 first, gint64 last, const gchar *data)
{
	ConfabResponseEvents events = {first, last, (gchar *)data};
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;

	confab_store_append_response_events_async(f->store, id, &events, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_append_response_events_finish(f->store, res, &error));
	g_assert_no_error(error);
}

static void
test_response_records(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabResponseRecord) read = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;

	/* two background ones may run, the third is refused; a response
	 * that is not background is never */
	g_assert_true(save_record(f, "resp_a", TRUE, 2, &error));
	g_assert_true(save_record(f, "resp_b", TRUE, 2, &error));
	g_assert_no_error(error);
	g_assert_false(save_record(f, "resp_c", TRUE, 2, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_RATE_LIMITED);
	g_clear_error(&error);
	g_assert_true(save_record(f, "resp_d", FALSE, 2, &error));
	g_assert_no_error(error);
	read = get_record(f, "resp_c", &error);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_RESPONSE_NOT_FOUND);
	g_assert_null(read);
	g_clear_error(&error);

	read = get_record(f, "resp_a", &error);
	g_assert_no_error(error);
	g_assert_cmpstr(read->status, ==, "queued");
	g_assert_true(read->background);
	g_assert_true(read->stream);
	g_assert_cmpstr(read->params, ==, "{\"temperature\":0.5}");
	g_assert_true(confab_response_record_is_running(read));
	g_clear_pointer(&read, confab_response_record_free);

	/* one ends, with its last events: another may start */
	{
		ConfabResponseEvents last = {0, 1, (gchar *)"e0e1"};
		end_response(f, "resp_a", "completed", 1700000300, &last);
	}
	end_response(f, "resp_a", "failed", 1700000400, NULL); /* ended: stays */
	read = get_record(f, "resp_a", &error);
	g_assert_cmpstr(read->status, ==, "completed");
	g_assert_cmpint(read->completed_at, ==, 1700000300);
	events = list_events(f, "resp_a", -1);
	g_assert_cmpuint(events->len, ==, 1);
	g_assert_cmpstr(((ConfabResponseEvents *)events->pdata[0])->data, ==, "e0e1");
	g_clear_pointer(&events, g_ptr_array_unref);
	g_clear_pointer(&read, confab_response_record_free);
	g_assert_true(save_record(f, "resp_c", TRUE, 2, &error));
	g_assert_no_error(error);

	/* asked to stop: it ends cancelled, however its turn ended */
	confab_store_cancel_response_async(f->store, "resp_b", NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_cancel_response_finish(f->store, res, &error));
	g_assert_no_error(error);
	read = get_record(f, "resp_b", &error);
	g_assert_true(read->cancel_requested);
	g_clear_pointer(&read, confab_response_record_free);
	end_response(f, "resp_b", "incomplete", 1700000500, NULL);
	read = get_record(f, "resp_b", &error);
	g_assert_cmpstr(read->status, ==, "cancelled");
	g_clear_pointer(&read, confab_response_record_free);

	/* events: kept in batches, read after a sequence number */
	append_events(f, "resp_c", 0, 2, "e0e1e2");
	append_events(f, "resp_c", 3, 3, "e3");
	events = list_events(f, "resp_c", -1);
	g_assert_cmpuint(events->len, ==, 2);
	g_assert_cmpstr(((ConfabResponseEvents *)events->pdata[0])->data, ==, "e0e1e2");
	g_clear_pointer(&events, g_ptr_array_unref);
	events = list_events(f, "resp_c", 2);
	g_assert_cmpuint(events->len, ==, 1);
	g_assert_cmpint(((ConfabResponseEvents *)events->pdata[0])->first, ==, 3);
	g_clear_pointer(&events, g_ptr_array_unref);

	/* a store opened again: what ran in the one before failed, and its
	 * events go once they are old */
	reopen(f);
	confab_store_fail_orphan_responses_async(f->store,
						 "{\"code\":\"server_error\"}",
						 1700000600,
						 NULL,
						 on_result,
						 &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_fail_orphan_responses_finish(f->store, res, &error));
	g_assert_no_error(error);
	read = get_record(f, "resp_c", &error);
	g_assert_cmpstr(read->status, ==, "failed");
	g_assert_cmpstr(read->error, ==, "{\"code\":\"server_error\"}");
	g_clear_pointer(&read, confab_response_record_free);
	read = get_record(f, "resp_a", &error);
	g_assert_cmpstr(read->status, ==, "completed");
	g_clear_pointer(&read, confab_response_record_free);
	confab_store_drop_response_events_async(f->store, 1700000601, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_drop_response_events_finish(f->store, res, &error));
	g_assert_no_error(error);
	events = list_events(f, "resp_c", -1);
	g_assert_cmpuint(events->len, ==, 0);
}

/* ---------- conversations (the Conversations API) ---------- */

static gchar *
create_conversation(Fixture *f, const gchar *agent_id, const gchar *metadata)
{
	g_autoptr(ConfabSession) session = confab_session_new();
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;
	gchar *id = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);

	confab_session_set_id(session, id);
	confab_session_set_owner(session, "alice");
	confab_session_set_agent_id(session, agent_id);
	confab_session_set_source(session, CONFAB_SESSION_SOURCE_API);
	confab_session_set_created_at(session, 1700000000);
	confab_session_set_updated_at(session, 1700000000);
	confab_session_set_metadata(session, metadata);
	confab_store_create_conversation_async(f->store, session, NULL, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_create_conversation_finish(f->store, res, &error));
	g_assert_no_error(error);
	return id;
}

/* A conversation created before any turn: no agent ('') and no message
 * yet, its metadata kept as given; listed with the owner's others. */
static void
test_conversation_create(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = create_conversation(f, NULL, "{\"topic\":\"é\"}");
	g_autofree gchar *plain = create_conversation(f, "agt_bound", NULL);
	g_autoptr(ConfabSession) read = NULL;
	g_autoptr(ConfabSession) read_plain = NULL;
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(ConfabStorePage) page = NULL;
	g_auto(ConfabStoreSessionQuery) query = {NULL};
	g_autoptr(GError) error = NULL;

	reopen(f);
	read = get_session(f, id, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(confab_session_get_owner(read), ==, "alice");
	g_assert_cmpstr(confab_session_get_agent_id(read), ==, "");
	g_assert_cmpstr(confab_session_get_metadata(read), ==, "{\"topic\":\"é\"}");
	g_assert_null(confab_session_get_title(read));
	read_plain = get_session(f, plain, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(confab_session_get_agent_id(read_plain), ==, "agt_bound");
	g_assert_null(confab_session_get_metadata(read_plain));
	history = get_history(f, id);
	g_assert_cmpuint(history->len, ==, 0);

	query.owner = g_strdup("alice");
	query.source = CONFAB_SESSION_SOURCE_API;
	query.order = CONFAB_ORDER_ASC;
	query.limit = 10;
	page = list_sessions(f, &query);
	g_assert_cmpuint(page->items->len, ==, 2);
	g_assert_cmpstr(confab_session_get_id(g_ptr_array_index(page->items, 0)), ==, id);
}

static gboolean
append_messages(Fixture *f, const gchar *session_id, GPtrArray *messages, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_append_messages_async(f->store,
					   session_id,
					   messages,
					   1700000500,
					   NULL,
					   on_result,
					   &slot);
	res = wait_for(&slot);
	return confab_store_append_messages_finish(f->store, res, error);
}

static ConfabMessage *
get_message(Fixture *f, const gchar *session_id, const gchar *id, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_get_message_async(f->store, session_id, id, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_get_message_finish(f->store, res, error);
}

static gboolean
delete_message(Fixture *f, const gchar *session_id, const gchar *id, GError **error)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	confab_store_delete_message_async(f->store, session_id, id, NULL, on_result, &slot);
	res = wait_for(&slot);
	return confab_store_delete_message_finish(f->store, res, error);
}

/* Items added outside a turn: many messages in one call, all or none (not
 * to a conversation that is gone), then one read and one deleted; another
 * conversation's message is not this one's. */
static void
test_conversation_items(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = create_conversation(f, NULL, NULL);
	g_autofree gchar *other = create_conversation(f, NULL, NULL);
	g_autoptr(GPtrArray) batch = g_ptr_array_new_with_free_func(g_object_unref);
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(ConfabMessage) read = NULL;
	g_autoptr(ConfabSession) session = NULL;
	g_autoptr(GError) error = NULL;
	const gchar *second;

	for (guint i = 0; i < 1000; i++) {
		g_autofree gchar *text = g_strdup_printf("item \"%u\" é", i);
		g_ptr_array_add(batch, make_message(f, id, i % 2 ? "assistant" : "user", text));
	}
	g_assert_true(append_messages(f, id, batch, &error));
	g_assert_no_error(error);
	g_assert_false(append_messages(f, "cts_01jzzzzzzzzzzzzzzzzzzzzzzz", batch, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
	g_clear_error(&error);
	reopen(f);

	history = get_history(f, id);
	g_assert_cmpuint(history->len, ==, 1000);
	for (guint i = 0; i < history->len; i++) {
		ConfabMessage *got = g_ptr_array_index(history, i);
		ConfabMessage *sent = g_ptr_array_index(batch, i);
		g_assert_cmpstr(confab_message_get_id(got), ==, confab_message_get_id(sent));
		g_assert_cmpstr(confab_message_get_role(got), ==, confab_message_get_role(sent));
		g_assert_cmpstr(confab_message_get_content(got),
				==,
				confab_message_get_content(sent));
		g_assert_cmpstr(confab_message_get_content_blocks(got),
				==,
				confab_message_get_content_blocks(sent));
		g_assert_cmpint(confab_message_get_created_at(got), ==, 1700000500);
	}
	session = get_session(f, id, &error);
	g_assert_no_error(error);
	g_assert_cmpint(confab_session_get_updated_at(session), ==, 1700000500);

	second = confab_message_get_id(g_ptr_array_index(batch, 1));
	read = get_message(f, id, second, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(confab_message_get_role(read), ==, "assistant");
	g_assert_null(get_message(f, other, second, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_ITEM_NOT_FOUND);
	g_clear_error(&error);
	g_assert_false(delete_message(f, other, second, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_ITEM_NOT_FOUND);
	g_clear_error(&error);

	g_assert_true(delete_message(f, id, second, &error));
	g_assert_no_error(error);
	g_assert_null(get_message(f, id, second, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_ITEM_NOT_FOUND);
	g_clear_error(&error);
	g_clear_pointer(&history, g_ptr_array_unref);
	history = get_history(f, id);
	g_assert_cmpuint(history->len, ==, 999);
}

/* A conversation created with its first messages is one commit: one
 * message that cannot be stored (a duplicate id) leaves neither the
 * conversation nor any message. A message's content replaced (an item of
 * it deleted) is read back so; another conversation's is not found. */
static void
test_conversation_create_with_items(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabSession) session = confab_session_new();
	g_autoptr(GPtrArray) batch = g_ptr_array_new_with_free_func(g_object_unref);
	g_autoptr(GPtrArray) history = NULL;
	g_autoptr(ConfabMessage) read = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *id = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);
	g_autofree gchar *other = create_conversation(f, NULL, NULL);
	GAsyncResult *slot = NULL;
	const gchar *second;

	confab_session_set_id(session, id);
	confab_session_set_owner(session, "alice");
	confab_session_set_agent_id(session, "");
	confab_session_set_source(session, CONFAB_SESSION_SOURCE_API);
	confab_session_set_created_at(session, 1700000000);
	confab_session_set_updated_at(session, 1700000000);
	for (guint i = 0; i < 3; i++)
		g_ptr_array_add(batch, make_message(f, id, i % 2 ? "assistant" : "user", "x"));
	/* the last one fails, after the conversation and the others */
	confab_message_set_id(g_ptr_array_index(batch, 2),
			      confab_message_get_id(g_ptr_array_index(batch, 0)));
	confab_store_create_conversation_async(f->store, session, batch, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_false(confab_store_create_conversation_finish(f->store, res, &error));
	g_assert_nonnull(error);
	g_clear_error(&error);
	g_clear_object(&res);
	g_assert_null(get_session(f, id, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
	g_clear_error(&error);
	history = get_history(f, id);
	g_assert_cmpuint(history->len, ==, 0);
	g_clear_pointer(&history, g_ptr_array_unref);

	/* the same, right: all of it */
	g_ptr_array_set_size(batch, 2);
	confab_store_create_conversation_async(f->store, session, batch, NULL, on_result, &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_create_conversation_finish(f->store, res, &error));
	g_assert_no_error(error);
	g_clear_object(&res);
	history = get_history(f, id);
	g_assert_cmpuint(history->len, ==, 2);
	g_assert_cmpint(confab_message_get_created_at(g_ptr_array_index(history, 1)),
			==,
			1700000000);

	second = confab_message_get_id(g_ptr_array_index(batch, 1));
	confab_store_set_message_content_async(f->store,
					       id,
					       second,
					       "[]",
					       "[{\"type\":\"deleted\"}]",
					       NULL,
					       on_result,
					       &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_set_message_content_finish(f->store, res, &error));
	g_assert_no_error(error);
	g_clear_object(&res);
	read = get_message(f, id, second, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(confab_message_get_content(read), ==, "[]");
	g_assert_cmpstr(confab_message_get_content_blocks(read), ==, "[{\"type\":\"deleted\"}]");
	confab_store_set_message_content_async(f->store,
					       other,
					       second,
					       "[]",
					       "[]",
					       NULL,
					       on_result,
					       &slot);
	res = wait_for(&slot);
	g_assert_false(confab_store_set_message_content_finish(f->store, res, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_ITEM_NOT_FOUND);
}

/* Metadata replaced; the agent given once, to a conversation without one. */
static void
test_conversation_metadata_and_agent(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = create_conversation(f, NULL, "{\"a\":\"1\"}");
	g_autoptr(ConfabSession) read = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;

	confab_store_set_conversation_metadata_async(f->store,
						     id,
						     "{\"b\":\"2\"}",
						     1700000900,
						     NULL,
						     on_result,
						     &slot);
	res = wait_for(&slot);
	g_assert_true(confab_store_set_conversation_metadata_finish(f->store, res, &error));
	g_assert_no_error(error);
	g_clear_object(&res);
	confab_store_set_conversation_metadata_async(f->store,
						     "cts_01jzzzzzzzzzzzzzzzzzzzzzzz",
						     NULL,
						     1700000900,
						     NULL,
						     on_result,
						     &slot);
	res = wait_for(&slot);
	g_assert_false(confab_store_set_conversation_metadata_finish(f->store, res, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
	g_clear_error(&error);

	for (guint i = 0; i < 2; i++) {
		g_clear_object(&res);
		confab_store_set_conversation_agent_async(f->store,
							  id,
							  i == 0 ? "agt_first" : "agt_second",
							  NULL,
							  on_result,
							  &slot);
		res = wait_for(&slot);
		g_assert_cmpint(confab_store_set_conversation_agent_finish(f->store, res, &error),
				==,
				i == 0);
		if (i == 0)
			g_assert_no_error(error);
		else
			g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_CONVERSATION_NOT_FOUND);
		g_clear_error(&error);
	}
	reopen(f);
	read = get_session(f, id, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(confab_session_get_metadata(read), ==, "{\"b\":\"2\"}");
	g_assert_cmpint(confab_session_get_updated_at(read), ==, 1700000900);
	g_assert_cmpstr(confab_session_get_agent_id(read), ==, "agt_first");
}

/* ---------- usage per owner, token and agent ---------- */

static GPtrArray *
list_usage_by(Fixture *f, const gchar *month, ConfabStoreUsageBy by, const gchar *owner)
{
	GAsyncResult *slot = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GPtrArray *rows = NULL;

	confab_store_list_usage_by_async(f->store, month, by, owner, NULL, on_result, &slot);
	res = wait_for(&slot);
	rows = confab_store_list_usage_by_finish(f->store, res, &error);
	g_assert_no_error(error);
	g_assert_nonnull(rows);
	return rows;
}

static void
assert_usage_row(GPtrArray *rows,
		 guint i,
		 const gchar *id,
		 guint64 requests,
		 guint64 input,
		 guint64 output,
		 guint64 reasoning)
{
	ConfabStoreUsageRow *row;
	const gchar *key;

	g_assert_cmpuint(i, <, rows->len);
	row = g_ptr_array_index(rows, i);
	/* the one key a row is summed by; the others are "" */
	key = row->owner[0] != '\0'	 ? row->owner
	      : row->agent_id[0] != '\0' ? row->agent_id
					 : row->token_id;
	g_assert_cmpstr(key, ==, id);
	g_assert_cmpuint(row->requests, ==, requests);
	g_assert_cmpuint(row->input_tokens, ==, input);
	g_assert_cmpuint(row->output_tokens, ==, output);
	g_assert_cmpuint(row->reasoning_tokens, ==, reasoning);
}

/* A turn's usage is added with its commit (ConfabStoreTurn.use): many
 * commits at once (SQLite's group commit tallies them per batch), a
 * failed one adding nothing, summed by owner, token and agent, of one
 * owner, of one month, durable over a reopen. */
static void
test_usage_by(Fixture *f, gconstpointer data)
{
	/* owner, token ("" none), agent, month */
	static const gchar *const keys[][4] = {
	    {"alice", "tok_a1", "agt_x", NULL},
	    {"alice", "tok_a2", "agt_y", NULL},
	    {"bob\nsmith", "tok_b", "agt_x", NULL},
	    {"carol", "", "agt_y", NULL},
	    {"alice", "tok_a1", "agt_x", "2001-01"},
	};
	const guint n = 50;
	Counter counter = {0, 0};
	guint timeout;

	for (guint i = 0; i < n; i++) {
		g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
		g_autofree gchar *sid = confab_id_generator_next(f->ids, CONFAB_PREFIX_SESSION);
		const gchar *const *key = keys[i % G_N_ELEMENTS(keys)];
		ConfabStoreUsageRow *use = g_new0(ConfabStoreUsageRow, 1);

		record->session = confab_session_new();
		confab_session_set_id(record->session, sid);
		confab_session_set_owner(record->session, key[0]);
		confab_session_set_agent_id(record->session, key[2]);
		record->session_is_new = TRUE;
		g_ptr_array_add(record->messages, make_message(f, sid, "user", "u"));
		record->assistant = make_message(f, sid, "assistant", "a");
		use->month = g_strdup(key[3] != NULL ? key[3] : f->month);
		use->owner = g_strdup(key[0]);
		use->token_id = g_strdup(key[1]);
		use->agent_id = g_strdup(key[2]);
		use->requests = 1;
		use->input_tokens = 42;
		use->output_tokens = 17;
		use->reasoning_tokens = 5;
		record->use = use;
		confab_store_commit_turn_async(f->store, record, NULL, on_counted, &counter);
	}
	timeout = g_timeout_add_seconds(60, on_timeout, NULL);
	while (counter.done < n)
		g_main_context_iteration(NULL, TRUE);
	g_source_remove(timeout);
	g_assert_cmpuint(counter.failed, ==, 0);
	{
		/* a turn that fails (its session is gone) adds nothing */
		g_autoptr(ConfabStoreTurn) record = confab_store_turn_new();
		g_autoptr(GError) error = NULL;
		ConfabStoreUsageRow use =
		    {f->month, "alice", "tok_a1", "agt_x", 1, 1000, 1000, 1000};

		record->session = confab_session_new();
		confab_session_set_id(record->session, "cts_missing");
		record->assistant = make_message(f, "cts_missing", "assistant", "a");
		record->use = confab_store_usage_row_copy(&use);
		g_assert_false(begin_turn(f, record, &error));
		g_assert_nonnull(error);
	}

	for (guint round = 0; round < 2; round++) {
		g_autoptr(GPtrArray) owners =
		    list_usage_by(f, f->month, CONFAB_STORE_USAGE_BY_OWNER, NULL);
		g_autoptr(GPtrArray) tokens =
		    list_usage_by(f, f->month, CONFAB_STORE_USAGE_BY_TOKEN, NULL);
		g_autoptr(GPtrArray) agents =
		    list_usage_by(f, f->month, CONFAB_STORE_USAGE_BY_AGENT, NULL);
		g_autoptr(GPtrArray) alice =
		    list_usage_by(f, f->month, CONFAB_STORE_USAGE_BY_AGENT, "alice");
		g_autoptr(GPtrArray) old =
		    list_usage_by(f, "2001-01", CONFAB_STORE_USAGE_BY_TOKEN, NULL);
		g_autoptr(GPtrArray) none =
		    list_usage_by(f, "2001-02", CONFAB_STORE_USAGE_BY_OWNER, NULL);

		/* 10 turns of each key: in order of the owners' names */
		g_assert_cmpuint(owners->len, ==, 3);
		assert_usage_row(owners, 0, "alice", 20, 840, 340, 100);
		assert_usage_row(owners, 1, "bob\nsmith", 10, 420, 170, 50);
		assert_usage_row(owners, 2, "carol", 10, 420, 170, 50);
		g_assert_cmpstr(((ConfabStoreUsageRow *)g_ptr_array_index(owners, 0))->month,
				==,
				f->month);
		g_assert_cmpuint(tokens->len, ==, 4);
		assert_usage_row(tokens, 0, "", 10, 420, 170, 50);
		assert_usage_row(tokens, 1, "tok_a1", 10, 420, 170, 50);
		assert_usage_row(tokens, 2, "tok_a2", 10, 420, 170, 50);
		assert_usage_row(tokens, 3, "tok_b", 10, 420, 170, 50);
		g_assert_cmpuint(agents->len, ==, 2);
		assert_usage_row(agents, 0, "agt_x", 20, 840, 340, 100);
		assert_usage_row(agents, 1, "agt_y", 20, 840, 340, 100);
		g_assert_cmpuint(alice->len, ==, 2);
		assert_usage_row(alice, 0, "agt_x", 10, 420, 170, 50);
		assert_usage_row(alice, 1, "agt_y", 10, 420, 170, 50);
		g_assert_cmpuint(old->len, ==, 1);
		assert_usage_row(old, 0, "tok_a1", 10, 420, 170, 50);
		g_assert_cmpuint(none->len, ==, 0);
		/* durable: the same after a reopen */
		reopen(f);
	}
}

static void
add_tests(const Backend *backend, gboolean available)
{
	static const struct {
		const gchar *name;
		void (*func)(Fixture *, gconstpointer);
	} tests[] = {
	    {"agents", test_agents},
	    {"tokens", test_tokens},
	    {"token-hash-unique", test_token_hash_unique},
	    {"turns", test_turns},
	    {"responses", test_responses},
	    {"turn-both-sides", test_turn_both_sides},
	    {"turn-on-missing-session", test_turn_on_missing_session},
	    {"failed-turn-leaves-nothing", test_failed_turn_leaves_nothing},
	    {"session-pages", test_session_pages},
	    {"cursor-after-deleted", test_cursor_after_deleted},
	    {"session-filters", test_session_filters},
	    {"message-pages", test_message_pages},
	    {"delete-session-cascades", test_delete_session_cascades},
	    {"quotas-and-usage", test_quotas_and_usage},
	    {"list-usage", test_list_usage},
	    {"usage-by", test_usage_by},
	    {"admit-quota", test_admit_quota},
	    {"admit-concurrent", test_admit_concurrent},
	    {"sessions-busy", test_sessions_busy},
	    {"reopen-persists", test_reopen_persists},
	    {"closed-store", test_closed_store},
	    {"write-then-read-consistent", test_write_then_read_consistent},
	    {"close-finishes-queued-writes", test_close_finishes_queued_writes},
	    {"cancelled-write-still-committed", test_cancelled_write_still_committed},
	    {"cancelled-read", test_cancelled_read},
	    {"failed-write-in-batch", test_failed_write_in_batch},
	    {"parallel-reads", test_parallel_reads},
	    {"search", test_search},
	    {"search-deleted", test_search_deleted},
	    {"search-message-text", test_search_message_text},
	    {"search-hostile-terms", test_search_hostile_terms},
	    {"search-limit-and-snippet", test_search_limit_and_snippet},
	    {"approvals", test_approvals},
	    {"approvals-orphaned", test_approvals_orphaned},
	    {"elicitations", test_elicitations},
	    {"mcp-oauth", test_mcp_oauth},
	    {"response-records", test_response_records},
	    {"conversation-create", test_conversation_create},
	    {"conversation-items", test_conversation_items},
	    {"conversation-create-with-items", test_conversation_create_with_items},
	    {"conversation-metadata-and-agent", test_conversation_metadata_and_agent},
	};

	for (guint i = 0; i < G_N_ELEMENTS(tests); i++) {
		g_autofree gchar *path =
		    g_strdup_printf("/confab/store/%s/%s", backend->name, tests[i].name);
		if (!available)
			g_test_add_func(path, test_skip_postgres);
		else
			g_test_add(path,
				   Fixture,
				   backend,
				   fixture_setup,
				   tests[i].func,
				   fixture_teardown);
	}
}

int
main(int argc, char **argv)
{
	gint status;

	confab_test_init(&argc, &argv, FALSE);
	add_tests(&sqlite_backend, TRUE);
	/* SQLite's own mechanics */
#define ADD(name, func)                                                                            \
	g_test_add(name, Fixture, &sqlite_backend, fixture_setup, func, fixture_teardown)
	ADD("/confab/store/sqlite/file-private", test_file_private);
	g_test_add_func("/confab/store/sqlite/existing-file-made-private",
			test_existing_file_made_private);
	ADD("/confab/store/sqlite/user-version", test_user_version);
	ADD("/confab/store/sqlite/future-version-refused", test_future_version_refused);
	ADD("/confab/store/sqlite/deleted-agent-key-erased", test_deleted_agent_key_erased);
	ADD("/confab/store/sqlite/group-commit", test_group_commit);
	ADD("/confab/store/sqlite/checkpoint-off-writer", test_checkpoint_off_writer);
	ADD("/confab/store/sqlite/migrate-v1", test_migrate_v1);
	ADD("/confab/store/sqlite/migrate-v2", test_migrate_v2);
	ADD("/confab/store/sqlite/search-queue", test_search_queue);
	ADD("/confab/store/sqlite/search-index-off", test_search_index_off);
	ADD("/confab/store/sqlite/blocks-stored-once", test_blocks_stored_once);
	g_test_add_func("/confab/store/sqlite/open-in-missing-dir", test_open_in_missing_dir);
#undef ADD

	add_tests(&postgres_backend, confab_test_pg_available());
	add_postgres_tests(confab_test_pg_available());
	if (confab_test_pg_available())
		pg_cluster = confab_test_pg_start();
	status = g_test_run();
	g_clear_pointer(&pg_cluster, confab_test_pg_stop);
	return status;
}
