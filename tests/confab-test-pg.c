/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confab-test-pg.h"

/* Exit code meson reads as "skipped". */
#define CONFAB_TEST_PG_SKIP 77

struct _ConfabTestPg {
	GSubprocess *reaper;  /* owned */
	gchar *dir;	      /* owned */
	gchar *url;	      /* owned */
	gchar *socket_url;    /* owned */
	gchar *password_file; /* owned */
	gchar *password;      /* owned */
};

static gchar *
script_path(void)
{
	const gchar *env = g_getenv("CONFAB_PG_CLUSTER");
	if (env != NULL && *env != '\0')
		return g_strdup(env);
	return g_test_build_filename(G_TEST_DIST, "pg", "pg-cluster", NULL);
}

/* Runs `bash pg-cluster COMMAND [DIR]`; its stderr goes to ours. Returns its
 * stdout, or NULL with @error set when it fails. */
static gchar *
run_script(const gchar *command, const gchar *dir, gboolean quiet, GError **error)
{
	g_autofree gchar *script = script_path();
	g_autofree gchar *out = NULL;
	g_autoptr(GSubprocess) proc = NULL;
	GSubprocessFlags flags = G_SUBPROCESS_FLAGS_STDOUT_PIPE;
	const gchar *argv[] = {"bash", script, command, dir, NULL};

	if (quiet)
		flags |= G_SUBPROCESS_FLAGS_STDERR_SILENCE;
	proc = g_subprocess_newv(argv, flags, error);
	if (proc == NULL)
		return NULL;
	if (!g_subprocess_communicate_utf8(proc, NULL, NULL, &out, NULL, error))
		return NULL;
	if (!g_subprocess_get_successful(proc)) {
		g_set_error(error,
			    G_IO_ERROR,
			    G_IO_ERROR_FAILED,
			    "pg-cluster %s failed (exit %d)",
			    command,
			    g_subprocess_get_exit_status(proc));
		return NULL;
	}
	return g_steal_pointer(&out);
}

static void
reaper_setup(gpointer data)
{
	/* out of the test's process group: meson may kill that on a timeout */
	setsid();
}

/* A test that aborts would leave its server running: a reaper process waits
 * on a pipe from us and stops the cluster when the pipe closes without a
 * "done" line first, as it does when we die. */
static GSubprocess *
start_reaper(const gchar *dir, GError **error)
{
	g_autofree gchar *script = script_path();
	g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
	    G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
	    G_SUBPROCESS_FLAGS_STDERR_SILENCE);
	const gchar *argv[] = {"bash",
			       "-c",
			       "read -r line; [ \"$line\" = done ] || exec bash \"$0\" stop \"$1\"",
			       script,
			       dir,
			       NULL};
	g_subprocess_launcher_set_child_setup(launcher, reaper_setup, NULL, NULL);
	return g_subprocess_launcher_spawnv(launcher, argv, error);
}

static void
stop_reaper(GSubprocess *reaper)
{
	GOutputStream *input = g_subprocess_get_stdin_pipe(reaper);
	g_output_stream_write_all(input, "done\n", 5, NULL, NULL, NULL);
	g_output_stream_close(input, NULL, NULL);
	g_subprocess_wait(reaper, NULL, NULL);
}

/**
 * confab_test_pg_available:
 *
 * Returns: whether pg-cluster finds the PostgreSQL server binaries
 */
gboolean
confab_test_pg_available(void)
{
	static gint available = -1;
	if (available < 0) {
		g_autofree gchar *script = script_path();
		g_autofree gchar *out = NULL;
		available = g_file_test(script, G_FILE_TEST_EXISTS) &&
			    (out = run_script("check", NULL, TRUE, NULL)) != NULL;
	}
	return available;
}

/**
 * confab_test_pg_skip_unless_available:
 *
 * Exits with 77 (skipped), saying why, when PostgreSQL is not installed.
 */
void
confab_test_pg_skip_unless_available(void)
{
	g_autofree gchar *script = NULL;

	if (confab_test_pg_available())
		return;
	script = script_path();
	if (!g_file_test(script, G_FILE_TEST_EXISTS))
		g_printerr("SKIP: %s not found; run the tests with meson test, or set "
			   "CONFAB_PG_CLUSTER\n",
			   script);
	else
		g_printerr("SKIP: the PostgreSQL server binaries (initdb, pg_ctl, postgres) were "
			   "not found; apt-get install postgresql, or set PG_BINDIR\n");
	exit(CONFAB_TEST_PG_SKIP);
}

static void
parse_env(ConfabTestPg *pg, const gchar *out)
{
	g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
	g_autoptr(GError) error = NULL;

	for (guint i = 0; lines[i] != NULL; i++) {
		const gchar *value = strchr(lines[i], '=');
		g_autofree gchar *key = NULL;
		if (value == NULL)
			continue;
		key = g_strndup(lines[i], value - lines[i]);
		value++;
		if (g_str_equal(key, "PGURL")) {
			g_free(pg->url);
			pg->url = g_strdup(value);
		} else if (g_str_equal(key, "PGSOCKET_URL")) {
			g_free(pg->socket_url);
			pg->socket_url = g_strdup(value);
		} else if (g_str_equal(key, "PGPASSWORD_FILE")) {
			g_free(pg->password_file);
			pg->password_file = g_strdup(value);
		}
	}
	if (pg->url == NULL || pg->socket_url == NULL || pg->password_file == NULL)
		g_error("pg-cluster printed no PGURL: %s", out);
	g_clear_pointer(&pg->password, g_free);
	if (!g_file_get_contents(pg->password_file, &pg->password, NULL, &error))
		g_error("%s", error->message);
	g_strchomp(pg->password);
}

/**
 * confab_test_pg_start:
 *
 * Creates and starts a cluster on a free port in a new temporary directory;
 * exits with 77 (skipped) when PostgreSQL is not installed.
 *
 * Returns: (transfer full): the cluster, for confab_test_pg_stop()
 */
ConfabTestPg *
confab_test_pg_start(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *out = NULL;
	ConfabTestPg *pg;

	confab_test_pg_skip_unless_available();
	pg = g_new0(ConfabTestPg, 1);
	pg->dir = g_dir_make_tmp("confab-pg-XXXXXX", &error);
	if (pg->dir == NULL)
		g_error("%s", error->message);
	out = run_script("start", pg->dir, FALSE, &error);
	if (out == NULL)
		g_error("%s", error->message);
	parse_env(pg, out);
	pg->reaper = start_reaper(pg->dir, &error);
	if (pg->reaper == NULL)
		g_error("%s", error->message);
	return pg;
}

static void
run_or_die(ConfabTestPg *pg, const gchar *command)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *out = run_script(command, pg->dir, FALSE, &error);
	if (out == NULL)
		g_error("%s", error->message);
	if (g_str_equal(command, "restart"))
		parse_env(pg, out);
}

/**
 * confab_test_pg_stop:
 * @pg: (transfer full) (nullable): a cluster
 *
 * Stops the cluster at once (paused or not) and removes its directory.
 */
void
confab_test_pg_stop(ConfabTestPg *pg)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *out = NULL;

	if (pg == NULL)
		return;
	out = run_script("stop", pg->dir, FALSE, &error);
	if (out == NULL)
		g_printerr("pg-cluster stop: %s\n", error->message);
	if (pg->reaper != NULL) {
		stop_reaper(pg->reaper);
		g_object_unref(pg->reaper);
	}
	g_free(pg->dir);
	g_free(pg->url);
	g_free(pg->socket_url);
	g_free(pg->password_file);
	g_free(pg->password);
	g_free(pg);
}

/**
 * confab_test_pg_restart:
 *
 * Stops the server at once if it runs (crash recovery follows), starts it
 * again on the same port and waits until it accepts connections.
 */
void
confab_test_pg_restart(ConfabTestPg *pg)
{
	run_or_die(pg, "restart");
}

/**
 * confab_test_pg_kill:
 *
 * SIGKILLs the postmaster and its children: connections see their peer vanish.
 */
void
confab_test_pg_kill(ConfabTestPg *pg)
{
	run_or_die(pg, "kill");
}

/**
 * confab_test_pg_pause:
 *
 * SIGSTOPs the server: connects and queries hang instead of failing.
 */
void
confab_test_pg_pause(ConfabTestPg *pg)
{
	run_or_die(pg, "pause");
}

void
confab_test_pg_resume(ConfabTestPg *pg)
{
	run_or_die(pg, "resume");
}

/**
 * confab_test_pg_get_url:
 *
 * Returns: `postgresql://confab@127.0.0.1:PORT/confab`; the password is
 *   confab_test_pg_get_password()
 */
const gchar *
confab_test_pg_get_url(ConfabTestPg *pg)
{
	return pg->url;
}

/**
 * confab_test_pg_get_socket_url:
 *
 * Returns: a URL to the database `confab` as `confab` over the Unix socket,
 *   where no password is asked
 */
const gchar *
confab_test_pg_get_socket_url(ConfabTestPg *pg)
{
	return pg->socket_url;
}

const gchar *
confab_test_pg_get_password(ConfabTestPg *pg)
{
	return pg->password;
}

/**
 * confab_test_pg_get_password_file:
 *
 * Returns: a file holding the password of `confab` on its first line
 */
const gchar *
confab_test_pg_get_password_file(ConfabTestPg *pg)
{
	return pg->password_file;
}

const gchar *
confab_test_pg_get_dir(ConfabTestPg *pg)
{
	return pg->dir;
}

/* The socket URL with another database (and user). */
static gchar *
socket_url_for(ConfabTestPg *pg, const gchar *dbname, const gchar *user)
{
	const gchar *query = strchr(pg->socket_url, '?');
	g_autofree gchar *rest = NULL;
	g_autoptr(GString) url = g_string_new("postgresql:///");

	g_assert_nonnull(query);
	rest = g_strdup(query);
	g_string_append(url, dbname);
	g_string_append(url, rest);
	if (user != NULL)
		g_string_replace(url, "user=confab", user, 0);
	return g_string_free(g_steal_pointer(&url), FALSE);
}

/**
 * confab_test_pg_query:
 * @url: a database
 * @sql: statements, without parameters
 *
 * Runs @sql with a blocking libpq connection (tests only) and fails the test
 * on any error.
 *
 * Returns: (transfer full) (nullable): the first column of the first row of
 *   the last statement's result, if any
 */
gchar *
confab_test_pg_query(const gchar *url, const gchar *sql)
{
	PGconn *conn = PQconnectdb(url);
	PGresult *res;
	gchar *value = NULL;

	if (PQstatus(conn) != CONNECTION_OK)
		g_error("connecting to %s: %s", url, PQerrorMessage(conn));
	res = PQexec(conn, sql);
	if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
		g_error("%s: %s", sql, PQresultErrorMessage(res));
	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) > 0 && PQnfields(res) > 0 &&
	    !PQgetisnull(res, 0, 0))
		value = g_strdup(PQgetvalue(res, 0, 0));
	PQclear(res);
	PQfinish(conn);
	return value;
}

/**
 * confab_test_pg_new_database:
 *
 * Creates an empty database owned by `confab`.
 *
 * Returns: (transfer full): its URL over the Unix socket, as `confab`
 */
gchar *
confab_test_pg_new_database(ConfabTestPg *pg)
{
	static guint counter = 0;
	g_autofree gchar *name = g_strdup_printf("t%u_%u", (guint)getpid(), ++counter);
	g_autofree gchar *admin = socket_url_for(pg, "postgres", "user=postgres");
	g_autofree gchar *sql = g_strdup_printf("CREATE DATABASE %s OWNER confab", name);
	g_autofree gchar *out = confab_test_pg_query(admin, sql);

	return socket_url_for(pg, name, NULL);
}
