/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <sqlite3.h>
#include <string.h>

#include "confab-test-helper.h"

/*
 * confabd --user keeps agents' upstream keys and tool secrets in the Secret
 * Service: a real gnome-keyring-daemon on the test's private session bus,
 * its keyring in a temporary directory, unlocked with a test password. The
 * database holds a marker and the masked tool configuration; the key is
 * sent upstream after a restart; a deleted agent's secrets leave the
 * keyring; without a Secret Service the daemon says so once and keeps them
 * in the database, and moves them to the keyring on the first start that
 * finds one. Skipped without gnome-keyring-daemon or libsecret.
 */

#define API_KEY	   "sk-keyring-test-key"
#define MCP_SECRET "mcp-keyring-test-secret"
#define MARKER	   "secret-service:org.confab.Confab1.Secret"
#define MCP_CONFIG                                                                                 \
	"{\"mcpServers\":{\"files\":{\"command\":\"true\",\"env\":{\"TOKEN\":\"" MCP_SECRET "\"}}" \
	"}}"
#define USER_CONFIG "[daemon]\nshutdown_grace = 1\n"

#ifdef HAVE_LIBSECRET

/* ---------- the keyring ---------- */

typedef struct {
	GSubprocess *process;
	gchar *dir;
} Keyring;

static gboolean
has_secrets_owner(gpointer data)
{
	g_autoptr(GDBusConnection) bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, NULL);
	g_autoptr(GVariant) reply =
	    g_dbus_connection_call_sync(bus,
					"org.freedesktop.DBus",
					"/org/freedesktop/DBus",
					"org.freedesktop.DBus",
					"NameHasOwner",
					g_variant_new("(s)", "org.freedesktop.secrets"),
					G_VARIANT_TYPE("(b)"),
					G_DBUS_CALL_FLAGS_NONE,
					-1,
					NULL,
					NULL);
	gboolean owned = FALSE;
	if (reply != NULL)
		g_variant_get(reply, "(b)", &owned);
	return owned;
}

/* gnome-keyring-daemon, secrets only, its login keyring made and unlocked
 * with a test password read from its stdin */
static Keyring *
keyring_start(void)
{
	Keyring *k = g_new0(Keyring, 1);
	g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
	    G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
	    G_SUBPROCESS_FLAGS_STDERR_SILENCE);
	g_autofree gchar *runtime = NULL;
	g_autoptr(GError) error = NULL;
	GOutputStream *in;

	k->dir = confab_test_make_tmpdir("keyring");
	runtime = g_build_filename(k->dir, "runtime", NULL);
	g_mkdir_with_parents(runtime, 0700);
	g_subprocess_launcher_setenv(launcher, "XDG_DATA_HOME", k->dir, TRUE);
	g_subprocess_launcher_setenv(launcher, "XDG_RUNTIME_DIR", runtime, TRUE);
	g_subprocess_launcher_setenv(launcher, "HOME", k->dir, TRUE);
	k->process = g_subprocess_launcher_spawn(launcher,
						 &error,
						 "gnome-keyring-daemon",
						 "--foreground",
						 "--unlock",
						 "--components=secrets",
						 "--control-directory",
						 runtime,
						 NULL);
	g_assert_no_error(error);
	in = g_subprocess_get_stdin_pipe(k->process);
	g_output_stream_write_all(in, "test-password", 13, NULL, NULL, &error);
	g_assert_no_error(error);
	g_output_stream_close(in, NULL, NULL);
	if (!confab_test_wait_until(has_secrets_owner, NULL, 20000))
		g_error("gnome-keyring-daemon did not own org.freedesktop.secrets within 20 s");
	return k;
}

static void
keyring_stop(Keyring *k)
{
	g_subprocess_force_exit(k->process);
	g_subprocess_wait(k->process, NULL, NULL);
	g_object_unref(k->process);
	confab_test_rm_rf(k->dir);
	g_free(k->dir);
	g_free(k);
}

/* what the keyring holds for the agent, asked with secret-tool (libsecret
 * in this process would keep the test's bus busy) */
static gchar *
keyring_lookup(const gchar *agent_id, const gchar *kind)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GSubprocess) tool =
	    g_subprocess_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE,
			     &error,
			     "secret-tool",
			     "lookup",
			     "agent_id",
			     agent_id,
			     "kind",
			     kind,
			     NULL);
	g_autofree gchar *out = NULL;

	g_assert_no_error(error);
	g_subprocess_communicate_utf8(tool, NULL, NULL, &out, NULL, &error);
	g_assert_no_error(error);
	if (!g_subprocess_get_if_exited(tool) || g_subprocess_get_exit_status(tool) != 0)
		return NULL;
	return g_steal_pointer(&out);
}

/* ---------- the fake upstream, to see the key sent ---------- */

typedef struct {
	GSubprocess *process;
	gchar *url;
	SoupSession *session;
} Upstream;

static Upstream *
upstream_start(void)
{
	Upstream *up = g_new0(Upstream, 1);
	g_autoptr(GError) error = NULL;
	g_autoptr(GDataInputStream) out = NULL;
	g_autofree gchar *line = NULL;
	const gchar *prefix = "fake-upstream: listening on ";

	up->process =
	    g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE,
			     &error,
			     g_getenv("CONFAB_FAKE_UPSTREAM"),
			     "--stdin-watch",
			     NULL);
	g_assert_no_error(error);
	out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(up->process));
	line = g_data_input_stream_read_line_utf8(out, NULL, NULL, &error);
	g_assert_no_error(error);
	g_assert_true(g_str_has_prefix(line, prefix));
	up->url = g_strdup(line + strlen(prefix));
	up->session = soup_session_new();
	return up;
}

static void
upstream_stop(Upstream *up)
{
	g_subprocess_force_exit(up->process);
	g_subprocess_wait(up->process, NULL, NULL);
	g_object_unref(up->process);
	g_object_unref(up->session);
	g_free(up->url);
	g_free(up);
}

/* the Authorization header of the last completion the fake received */
static gchar *
upstream_last_authorization(Upstream *up)
{
	g_autofree gchar *uri = g_strconcat(up->url, "/_requests", NULL);
	g_autoptr(SoupMessage) msg = soup_message_new("GET", uri);
	g_autoptr(GError) error = NULL;
	g_autoptr(GBytes) body = soup_session_send_and_read(up->session, msg, NULL, &error);
	g_autoptr(JsonNode) all = NULL;
	JsonArray *requests;
	JsonNode *last;

	g_assert_no_error(error);
	all = json_from_string(g_bytes_get_data(body, NULL), &error);
	g_assert_no_error(error);
	requests = json_node_get_array(all);
	g_assert_cmpuint(json_array_get_length(requests), >, 0);
	last = json_array_get_element(requests, json_array_get_length(requests) - 1);
	return g_strdup(confab_test_json_string(last, "headers.authorization"));
}

/* ---------- the daemon ---------- */

static ConfabTestDaemon *
start_user_daemon(const gchar *state_dir)
{
	const gchar *const args[] = {"--user", NULL};
	return confab_test_daemon_start_full(state_dir, USER_CONFIG, args);
}

static gchar *
create_agent(ConfabTestDaemon *daemon, Upstream *up)
{
	g_autofree gchar *base_url = g_strconcat(up->url, "/v1", NULL);
	GVariantDict dict;
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "gpt");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", base_url);
	g_variant_dict_insert(&dict, "upstream_model", "s", "plain");
	g_variant_dict_insert(&dict, "api_key", "s", API_KEY);
	g_variant_dict_insert(&dict, "mcp_servers", "s", MCP_CONFIG);
	return confab_test_create_agent_props(daemon, g_variant_dict_end(&dict));
}

/* the agent's row as the database keeps it */
static void
stored(ConfabTestDaemon *daemon, const gchar *agent_id, gchar **api_key, gchar **mcp_servers)
{
	g_autofree gchar *path = g_build_filename(daemon->state_dir, "confab.db", NULL);
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;

	g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
	g_assert_cmpint(sqlite3_prepare_v2(db,
					   "SELECT api_key, mcp_servers FROM agents WHERE id = ?1",
					   -1,
					   &stmt,
					   NULL),
			==,
			SQLITE_OK);
	sqlite3_bind_text(stmt, 1, agent_id, -1, SQLITE_STATIC);
	g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
	*api_key = g_strdup((const gchar *)sqlite3_column_text(stmt, 0));
	*mcp_servers = g_strdup((const gchar *)sqlite3_column_text(stmt, 1));
	sqlite3_finalize(stmt);
	sqlite3_close(db);
}

/* a turn through Chat.Send; the key the upstream saw */
static gchar *
key_sent(ConfabTestDaemon *daemon, Upstream *up, const gchar *agent_id)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *session = NULL;
	g_autofree gchar *reply = NULL;

	confab_dbus_chat_call_send_sync(daemon->chat,
					agent_id,
					"",
					"hi",
					&session,
					&reply,
					NULL,
					&error);
	g_assert_no_error(error);
	return upstream_last_authorization(up);
}

static guint
count(const gchar *haystack, const gchar *needle)
{
	guint n = 0;
	for (const gchar *p = strstr(haystack, needle); p != NULL; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* ---------- tests ---------- */

static void
test_keys_in_keyring(void)
{
	Keyring *k = keyring_start();
	Upstream *up = upstream_start();
	g_autofree gchar *state = confab_test_make_tmpdir("keyring-state");
	g_autoptr(ConfabTestDaemon) daemon = start_user_daemon(state);
	g_autofree gchar *agent = create_agent(daemon, up);
	g_autofree gchar *db_key = NULL;
	g_autofree gchar *db_tools = NULL;
	g_autofree gchar *kept_key = keyring_lookup(agent, "api_key");
	g_autofree gchar *kept_tools = keyring_lookup(agent, "mcp_servers");
	g_autofree gchar *sent = NULL;
	g_autoptr(GError) error = NULL;

	/* in the keyring, not in the database */
	stored(daemon, agent, &db_key, &db_tools);
	g_assert_cmpstr(db_key, ==, MARKER);
	g_assert_null(strstr(db_tools, MCP_SECRET));
	g_assert_nonnull(strstr(db_tools, "********"));
	g_assert_cmpstr(kept_key, ==, API_KEY);
	g_assert_nonnull(strstr(kept_tools, MCP_SECRET));
	sent = key_sent(daemon, up, agent);
	g_assert_cmpstr(sent, ==, "Bearer " API_KEY);

	/* a second target's key would have to sit in the database: refused */
	{
		g_autoptr(GVariantDict) props = g_variant_dict_new(NULL);
		g_autofree gchar *upstreams = g_strdup_printf(
		    "[{\"label\":\"primary\",\"base_url\":\"%s/v1\",\"upstream_model\":\"plain\"},"
		    "{\"label\":\"second\",\"base_url\":\"http://127.0.0.1:9/v1\","
		    "\"upstream_model\":\"m\",\"api_key\":\"sk-second-SECRET\"}]",
		    up->url);
		g_autoptr(GError) refused = NULL;

		g_variant_dict_insert(props, "upstreams", "s", upstreams);
		confab_dbus_admin_call_update_agent_sync(daemon->admin,
							 agent,
							 g_variant_dict_end(props),
							 NULL,
							 &refused);
		g_assert_nonnull(refused);
		g_assert_nonnull(strstr(refused->message, "upstreams[1].api_key"));
	}

	/* a new start reads them back from the keyring */
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	confab_test_daemon_free(g_steal_pointer(&daemon));
	daemon = start_user_daemon(state);
	g_clear_pointer(&sent, g_free);
	sent = key_sent(daemon, up, agent);
	g_assert_cmpstr(sent, ==, "Bearer " API_KEY);

	/* a deleted agent's secrets leave the keyring */
	confab_dbus_admin_call_delete_agent_sync(daemon->admin, agent, NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	g_clear_pointer(&kept_key, g_free);
	kept_key = keyring_lookup(agent, "api_key");
	g_assert_null(kept_key);
	g_clear_pointer(&kept_tools, g_free);
	kept_tools = keyring_lookup(agent, "mcp_servers");
	g_assert_null(kept_tools);

	upstream_stop(up);
	keyring_stop(k);
	confab_test_rm_rf(state);
}

static void
test_moved_on_first_start(void)
{
	Upstream *up = upstream_start();
	g_autofree gchar *state = confab_test_make_tmpdir("keyring-state");
	g_autoptr(ConfabTestDaemon) daemon = start_user_daemon(state);
	g_autofree gchar *agent = create_agent(daemon, up);
	g_autofree gchar *other = create_agent(daemon, up);
	g_autofree gchar *db_key = NULL;
	g_autofree gchar *db_tools = NULL;
	g_autofree gchar *output = NULL;
	g_autofree gchar *sent = NULL;
	g_autofree gchar *kept_key = NULL;
	Keyring *k;

	/* no Secret Service: said once, and the keys stay in the database */
	stored(daemon, agent, &db_key, &db_tools);
	g_assert_cmpstr(db_key, ==, API_KEY);
	g_assert_nonnull(strstr(db_tools, MCP_SECRET));
	sent = key_sent(daemon, up, agent);
	g_assert_cmpstr(sent, ==, "Bearer " API_KEY);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	output = confab_test_daemon_get_output(daemon);
	g_assert_cmpuint(count(output, "no Secret Service"), ==, 1);
	confab_test_daemon_free(g_steal_pointer(&daemon));

	/* the first start that finds one moves them there */
	k = keyring_start();
	daemon = start_user_daemon(state);
	g_clear_pointer(&sent, g_free);
	sent = key_sent(daemon, up, agent);
	g_assert_cmpstr(sent, ==, "Bearer " API_KEY);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	g_clear_pointer(&db_key, g_free);
	g_clear_pointer(&db_tools, g_free);
	stored(daemon, agent, &db_key, &db_tools);
	g_assert_cmpstr(db_key, ==, MARKER);
	g_assert_null(strstr(db_tools, MCP_SECRET));
	kept_key = keyring_lookup(agent, "api_key");
	g_assert_cmpstr(kept_key, ==, API_KEY);
	g_clear_pointer(&kept_key, g_free);
	kept_key = keyring_lookup(other, "api_key");
	g_assert_cmpstr(kept_key, ==, API_KEY);

	upstream_stop(up);
	keyring_stop(k);
	confab_test_rm_rf(state);
}

#endif /* HAVE_LIBSECRET */

gint
main(gint argc, gchar **argv)
{
	g_autofree gchar *keyring = g_find_program_in_path("gnome-keyring-daemon");
	g_autofree gchar *tool = g_find_program_in_path("secret-tool");
	gint ret;

#ifndef HAVE_LIBSECRET
	g_printerr("SKIP: confabd was built without libsecret (apt-get install libsecret-1-dev)\n");
	return CONFAB_TEST_SKIP;
#endif
	if (confab_test_store_is_postgres()) {
		/* it reads the agent's row in SQLite: the desktop's store */
		g_printerr("SKIP: a SQLite test (confabd --user)\n");
		return CONFAB_TEST_SKIP;
	}
	if (keyring == NULL) {
		g_printerr("SKIP: gnome-keyring-daemon is not installed (apt-get install "
			   "gnome-keyring)\n");
		return CONFAB_TEST_SKIP;
	}
	if (g_getenv("CONFAB_FAKE_UPSTREAM") == NULL) {
		g_printerr(
		    "SKIP: CONFAB_FAKE_UPSTREAM is not set; run the tests with meson test\n");
		return CONFAB_TEST_SKIP;
	}
	confab_test_init(&argc, &argv, TRUE);
#ifdef HAVE_LIBSECRET
	g_test_add_func("/confab/keyring/keys-in-keyring", test_keys_in_keyring);
	g_test_add_func("/confab/keyring/moved-on-first-start", test_moved_on_first_start);
#endif
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
