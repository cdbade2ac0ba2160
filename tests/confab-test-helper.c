/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "confab-test-helper.h"
#include "confab-test-pg.h"

/*
 * What the integration tests share: a private session bus (GTestDBus), a
 * real confabd started on a free loopback port with a temporary state
 * directory, provisioning through the real D-Bus Admin interface, and a
 * small synchronous HTTP client. Every wait has a deadline; nothing sleeps.
 */

static GTestDBus *test_bus = NULL;

/**
 * confab_test_init:
 * @argc: from main()
 * @argv: from main()
 * @need_bus: whether the tests need a private session bus
 *
 * g_test_init(), and a private bus. Exits 77 (skipped) if dbus-daemon is
 * missing, saying why.
 */
void
confab_test_init(gint *argc, gchar ***argv, gboolean need_bus)
{
	g_autofree gchar *dbus_daemon = NULL;

	g_test_init(argc, argv, NULL);
	if (!need_bus)
		return;
	dbus_daemon = g_find_program_in_path("dbus-daemon");
	if (dbus_daemon == NULL) {
		g_printerr("SKIP: dbus-daemon is not installed (apt-get install dbus-daemon)\n");
		exit(CONFAB_TEST_SKIP);
	}
	if (g_getenv("CONFABD") == NULL) {
		g_printerr("SKIP: CONFABD is not set; run the tests with meson test\n");
		exit(CONFAB_TEST_SKIP);
	}
	test_bus = g_test_dbus_new(G_TEST_DBUS_NONE);
	g_test_dbus_up(test_bus);
}

void
confab_test_finish(void)
{
	if (test_bus != NULL) {
		g_test_dbus_down(test_bus);
		g_clear_object(&test_bus);
	}
}

gchar *
confab_test_make_tmpdir(const gchar *name)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *tmpl = g_strdup_printf("confab-%s-XXXXXX", name);
	gchar *dir = g_dir_make_tmp(tmpl, &error);
	g_assert_no_error(error);
	return dir;
}

void
confab_test_rm_rf(const gchar *path)
{
	g_autoptr(GDir) dir = NULL;
	const gchar *name;

	if (path == NULL)
		return;
	dir = g_dir_open(path, 0, NULL);
	if (dir != NULL) {
		while ((name = g_dir_read_name(dir)) != NULL) {
			g_autofree gchar *child = g_build_filename(path, name, NULL);
			if (g_file_test(child, G_FILE_TEST_IS_DIR) &&
			    !g_file_test(child, G_FILE_TEST_IS_SYMLINK))
				confab_test_rm_rf(child);
			else
				g_unlink(child);
		}
	}
	g_rmdir(path);
}

/**
 * confab_test_wait_until:
 * @condition: checked every few milliseconds
 * @data: for @condition
 * @timeout_ms: the deadline
 *
 * Iterates the thread-default main context until @condition holds.
 *
 * Returns: %TRUE if it held before the deadline
 */
gboolean
confab_test_wait_until(gboolean (*condition)(gpointer), gpointer data, guint timeout_ms)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	while (!condition(data)) {
		if (g_get_monotonic_time() > deadline)
			return FALSE;
		while (g_main_context_iteration(NULL, FALSE))
			;
		g_usleep(2000);
	}
	return TRUE;
}

/* ---------- the daemon ---------- */

static gpointer
reader_thread(gpointer data)
{
	ConfabTestDaemon *daemon = data;
	for (;;) {
		g_autofree gchar *line =
		    g_data_input_stream_read_line_utf8(daemon->stdout_stream, NULL, NULL, NULL);
		if (line == NULL)
			break;
		g_mutex_lock(&daemon->lock);
		g_string_append(daemon->output, line);
		g_string_append_c(daemon->output, '\n');
		g_mutex_unlock(&daemon->lock);
		if (g_getenv("CONFAB_TEST_VERBOSE") != NULL)
			g_printerr("[confabd] %s\n", line);
	}
	return NULL;
}

/**
 * confab_test_daemon_get_output:
 *
 * Returns: (transfer full): what the daemon printed so far
 */
gchar *
confab_test_daemon_get_output(ConfabTestDaemon *daemon)
{
	gchar *copy;
	g_mutex_lock(&daemon->lock);
	copy = g_strdup(daemon->output->str);
	g_mutex_unlock(&daemon->lock);
	return copy;
}

static gboolean
daemon_listening(gpointer data)
{
	ConfabTestDaemon *daemon = data;
	g_autofree gchar *output = confab_test_daemon_get_output(daemon);
	return strstr(output, "confabd: listening on ") != NULL ||
	       g_subprocess_get_identifier(daemon->process) == NULL;
}

static gboolean
daemon_exited(gpointer data)
{
	ConfabTestDaemon *daemon = data;
	/* get_if_exited only learns of the exit through the main context */
	return g_subprocess_get_identifier(daemon->process) == NULL;
}

static gboolean
proxy_has_owner(gpointer data)
{
	g_autofree gchar *owner = g_dbus_proxy_get_name_owner(G_DBUS_PROXY(data));
	return owner != NULL;
}

static void
die_with_parent(gpointer data)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* A dbus-daemon for one confabd alone, so that several can each own the
 * bus name; returns its address. */
static gchar *
start_private_bus(ConfabTestDaemon *daemon)
{
	const gchar *argv[] = {"dbus-daemon", "--session", "--nofork", "--print-address=1", NULL};
	g_autoptr(GError) error = NULL;
	g_autoptr(GDataInputStream) out = NULL;
	gchar *address;

	g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
	    G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE);

	/* it goes with the test, should the test die */
	g_subprocess_launcher_set_child_setup(launcher, die_with_parent, NULL, NULL);
	daemon->bus_process = g_subprocess_launcher_spawnv(launcher, argv, &error);
	g_assert_no_error(error);
	out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(daemon->bus_process));
	address = g_data_input_stream_read_line_utf8(out, NULL, NULL, &error);
	g_assert_no_error(error);
	g_assert_nonnull(address);
	return address;
}

static void
connect_private_bus(ConfabTestDaemon *daemon, const gchar *address)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GDBusConnection) bus = g_dbus_connection_new_for_address_sync(
	    address,
	    G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
		G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
	    NULL,
	    NULL,
	    &error);

	g_assert_no_error(error);
	daemon->admin = confab_dbus_admin_proxy_new_sync(bus,
							 G_DBUS_PROXY_FLAGS_NONE,
							 "org.confab.Confab1",
							 "/org/confab/Confab1",
							 NULL,
							 &error);
	g_assert_no_error(error);
	daemon->chat = confab_dbus_chat_proxy_new_sync(bus,
						       G_DBUS_PROXY_FLAGS_NONE,
						       "org.confab.Confab1",
						       "/org/confab/Confab1",
						       NULL,
						       &error);
	g_assert_no_error(error);
	if (!confab_test_wait_until(proxy_has_owner, daemon->admin, 20000))
		g_error("confabd did not take its bus name within 20 s");
}

/**
 * confab_test_store_is_postgres:
 *
 * Whether the daemons the tests start use PostgreSQL: `tests/pg/with-cluster`
 * set `CONFAB_TEST_PG_URL` (the `postgres` test run). Tests that look into
 * SQLite's files skip themselves then.
 */
gboolean
confab_test_store_is_postgres(void)
{
	const gchar *url = g_getenv("CONFAB_TEST_PG_URL");

	if (g_strcmp0(g_getenv("CONFAB_TEST_STORE"), "postgres") == 0 &&
	    (url == NULL || *url == '\0'))
		g_error("the postgres test setup runs inside tests/pg/with-cluster");
	return url != NULL && *url != '\0';
}

/* A database of the with-cluster cluster for @state_dir: the same state
 * directory (a daemon restarted on it) finds the same database again. */
static gchar *
pg_url_for_state_dir(const gchar *state_dir)
{
	g_autofree gchar *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA1, state_dir, -1);
	g_autofree gchar *name = g_strdup_printf("s%.20s", sum);
	g_autoptr(GString) admin = g_string_new(g_getenv("CONFAB_TEST_PG_URL"));
	g_autoptr(GString) url = g_string_new(g_getenv("CONFAB_TEST_PG_URL"));
	g_autofree gchar *query = NULL;
	g_autofree gchar *found = NULL;

	/* postgresql:///confab?host=DIR/sock&port=PORT&user=confab */
	g_assert_true(g_str_has_prefix(admin->str, "postgresql:///confab?"));
	g_string_replace(admin, "/confab?", "/postgres?", 1);
	g_string_replace(admin, "user=confab", "user=postgres", 1);
	g_string_replace(url, "confab?", "", 1);
	g_string_insert(url, strlen("postgresql:///"), "?");
	g_string_insert(url, strlen("postgresql:///"), name);
	query = g_strdup_printf("SELECT 1 FROM pg_database WHERE datname = '%s'", name);
	found = confab_test_pg_query(admin->str, query);
	if (found == NULL) {
		g_autofree gchar *create = g_strdup_printf("CREATE DATABASE %s OWNER confab", name);
		g_autofree gchar *out = confab_test_pg_query(admin->str, create);
	}
	return g_string_free(g_steal_pointer(&url), FALSE);
}

/**
 * confab_test_store_dump:
 * @state_dir: a daemon's state directory
 *
 * On PostgreSQL (see confab_test_store_is_postgres()), every row of the
 * database of the daemons started on @state_dir, as XML text.
 *
 * Returns: (transfer full): the text
 */
gchar *
confab_test_store_dump(const gchar *state_dir)
{
	g_autofree gchar *url = pg_url_for_state_dir(state_dir);

	g_assert_true(confab_test_store_is_postgres());
	return confab_test_pg_query(url, "SELECT database_to_xml(true, false, '')::text");
}

static ConfabTestDaemon *
daemon_start(const gchar *state_dir,
	     const gchar *config_text,
	     const gchar *const *extra_args,
	     gboolean private_bus,
	     gboolean activated);

/**
 * confab_test_daemon_start_private_bus:
 * @config_text: (nullable): a confab.conf to start with
 * @extra_args: (nullable): more command-line arguments
 *
 * As confab_test_daemon_start(), on a dbus-daemon of its own: for tests that
 * run several daemons, each with its Admin and Chat interfaces.
 *
 * Returns: (transfer full): a running daemon, ready on HTTP and D-Bus
 */
ConfabTestDaemon *
confab_test_daemon_start_private_bus(const gchar *config_text, const gchar *const *extra_args)
{
	return daemon_start(NULL, config_text, extra_args, TRUE, FALSE);
}

/**
 * confab_test_daemon_start_full:
 * @state_dir: (nullable): reuse this state directory (it is not removed)
 * @config_text: (nullable): a confab.conf to start with
 * @extra_args: (nullable): more command-line arguments
 *
 * Returns: (transfer full): a running daemon, ready on HTTP and D-Bus
 */
ConfabTestDaemon *
confab_test_daemon_start_full(const gchar *state_dir,
			      const gchar *config_text,
			      const gchar *const *extra_args)
{
	return daemon_start(state_dir, config_text, extra_args, FALSE, FALSE);
}

/**
 * confab_test_daemon_start_activated:
 * @config_text: (nullable): a confab.conf to start with
 * @extra_args: (nullable): more command-line arguments
 *
 * As confab_test_daemon_start(), through socket activation:
 * `systemd-socket-activate` listens on a free loopback port and starts
 * confabd, with the socket as $LISTEN_FDS, on the first connection. The
 * helper makes that connection with a request, and fails unless it is
 * answered. confabd's own --listen names a port that nothing listens on,
 * so that a daemon that ignored the socket would not be found.
 * Call only when confab_test_have_socket_activate().
 *
 * Returns: (transfer full): a running daemon, ready on HTTP and D-Bus
 */
ConfabTestDaemon *
confab_test_daemon_start_activated(const gchar *config_text, const gchar *const *extra_args)
{
	return daemon_start(NULL, config_text, extra_args, FALSE, TRUE);
}

/**
 * confab_test_have_socket_activate:
 *
 * Returns: (transfer full) (nullable): the path of `systemd-socket-activate`
 *   (Debian: package systemd), or %NULL when it is not installed
 */
gchar *
confab_test_have_socket_activate(void)
{
	return g_find_program_in_path("systemd-socket-activate");
}

/* A loopback port free a moment ago. */
static guint16
free_port(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GSocket) socket =
	    g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, &error);
	g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
	g_autoptr(GSocketAddress) any = g_inet_socket_address_new(loopback, 0);
	g_autoptr(GSocketAddress) bound = NULL;

	g_assert_no_error(error);
	g_socket_bind(socket, any, FALSE, &error);
	g_assert_no_error(error);
	bound = g_socket_get_local_address(socket, &error);
	g_assert_no_error(error);
	return g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
}

/* systemd-socket-activate hands its child TERM, PATH, USER and HOME alone;
 * the rest of the test's environment goes through -E, with @overrides. */
static void
add_socket_activate_args(GPtrArray *argv, guint16 port, const gchar *const *overrides)
{
	g_auto(GStrv) env = g_get_environ();

	g_ptr_array_add(argv, confab_test_have_socket_activate());
	g_ptr_array_add(argv, g_strdup_printf("--listen=127.0.0.1:%u", port));
	for (guint i = 0; overrides[i] != NULL; i += 2)
		env = g_environ_setenv(env, overrides[i], overrides[i + 1], TRUE);
	for (guint i = 0; env[i] != NULL; i++) {
		const gchar *eq = strchr(env[i], '=');
		g_autofree gchar *name = eq != NULL ? g_strndup(env[i], eq - env[i]) : NULL;
		/* it refuses names that are not shell names */
		if (name == NULL || !g_regex_match_simple("^[A-Za-z_][A-Za-z0-9_]*$", name, 0, 0))
			continue;
		g_ptr_array_add(argv, g_strdup_printf("--setenv=%s", env[i]));
	}
}

static gboolean
activator_listening(gpointer data)
{
	ConfabTestDaemon *daemon = data;
	g_autofree gchar *output = confab_test_daemon_get_output(daemon);
	return strstr(output, "Listening on ") != NULL ||
	       g_subprocess_get_identifier(daemon->process) == NULL;
}

/* The first connection, made while only systemd-socket-activate listens:
 * confabd starts, takes the socket and answers it. */
static void
wake_activated(ConfabTestDaemon *daemon, guint16 port)
{
	const gchar *request = "GET /api/v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			       "Connection: close\r\n\r\n";
	g_autoptr(GSocketClient) client = g_socket_client_new();
	g_autoptr(GSocketConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	gchar reply[64] = {0};
	gsize got = 0;

	if (!confab_test_wait_until(activator_listening, daemon, 30000))
		g_error("systemd-socket-activate did not listen within 30 s");
	g_socket_client_set_timeout(client, 60);
	conn = g_socket_client_connect_to_host(client, "127.0.0.1", port, NULL, &error);
	g_assert_no_error(error);
	g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)),
				  request,
				  strlen(request),
				  NULL,
				  NULL,
				  &error);
	g_assert_no_error(error);
	g_input_stream_read_all(g_io_stream_get_input_stream(G_IO_STREAM(conn)),
				reply,
				sizeof(reply) - 1,
				&got,
				NULL,
				&error);
	g_assert_no_error(error);
	if (!g_str_has_prefix(reply, "HTTP/1.1 401 ")) {
		g_autofree gchar *output = confab_test_daemon_get_output(daemon);
		g_error("the first connection got '%s', not a 401; output:\n%s", reply, output);
	}
}

static ConfabTestDaemon *
daemon_start(const gchar *state_dir,
	     const gchar *config_text,
	     const gchar *const *extra_args,
	     gboolean private_bus,
	     gboolean activated)
{
	g_autoptr(ConfabTestDaemon) daemon = g_new0(ConfabTestDaemon, 1);
	g_autoptr(GSubprocessLauncher) launcher = NULL;
	g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GError) error = NULL;
	g_autofree gchar *output = NULL;
	g_autofree gchar *bus_address = NULL;
	g_autofree gchar *threads_config = NULL;
	const gchar *threads = g_getenv("CONFAB_TEST_SERVING_THREADS");
	const gchar *line;
	guint16 activate_port = activated ? free_port() : 0;
	g_autofree gchar *asan =
	    g_getenv("ASAN_OPTIONS") != NULL
		? g_strconcat(g_getenv("ASAN_OPTIONS"), ":fast_unwind_on_malloc=0", NULL)
		: NULL;

	g_mutex_init(&daemon->lock);
	daemon->output = g_string_new(NULL);
	if (state_dir != NULL) {
		daemon->state_dir = g_strdup(state_dir);
	} else {
		daemon->state_dir = confab_test_make_tmpdir("state");
		daemon->own_state_dir = TRUE;
	}

	if (activated) {
		const gchar *overrides[] = {"G_DEBUG",
					    "fatal-criticals",
					    asan != NULL ? "ASAN_OPTIONS" : NULL,
					    asan,
					    NULL};
		add_socket_activate_args(argv, activate_port, overrides);
	}
	/* CONFABD_WRAPPER: e.g. valgrind, from the valgrind test setup */
	if (g_getenv("CONFABD_WRAPPER") != NULL && *g_getenv("CONFABD_WRAPPER") != '\0') {
		g_auto(GStrv) wrapper = NULL;
		if (!g_shell_parse_argv(g_getenv("CONFABD_WRAPPER"), NULL, &wrapper, &error))
			g_error("CONFABD_WRAPPER: %s", error->message);
		for (guint i = 0; wrapper[i] != NULL; i++)
			g_ptr_array_add(argv, g_strdup(wrapper[i]));
	}
	g_ptr_array_add(argv, g_strdup(g_getenv("CONFABD")));
	/* activated: a port nobody listens on, in case the daemon binds it */
	g_ptr_array_add(argv,
			g_strdup(activated ? "--listen=127.0.0.1:1" : "--listen=127.0.0.1:0"));
	g_ptr_array_add(argv, g_strdup_printf("--state-dir=%s", daemon->state_dir));
	g_ptr_array_add(argv,
			g_strdup(test_bus != NULL || private_bus ? "--bus=session" : "--bus=none"));
	if (confab_test_store_is_postgres()) {
		g_autofree gchar *url = pg_url_for_state_dir(daemon->state_dir);
		g_ptr_array_add(argv, g_strdup_printf("--store-url=%s", url));
	}
	/* CONFAB_TEST_SERVING_THREADS: every suite with that many serving
	 * threads (the threads2 test setup); a test's own [daemon] section
	 * may still say otherwise, since a key file's later group wins */
	if (threads != NULL && *threads != '\0') {
		g_autofree gchar *text = g_strdup_printf("[daemon]\nserving_threads=%s\n%s",
							 threads,
							 config_text != NULL ? config_text : "");
		g_free(threads_config);
		threads_config = g_steal_pointer(&text);
		config_text = threads_config;
	}
	if (config_text != NULL) {
		g_autofree gchar *path = NULL;
		/* a state dir the daemon is to make: the file goes elsewhere */
		if (!g_file_test(daemon->state_dir, G_FILE_TEST_IS_DIR))
			daemon->config_dir = confab_test_make_tmpdir("conf");
		path = g_build_filename(daemon->config_dir != NULL ? daemon->config_dir
								   : daemon->state_dir,
					"test.conf",
					NULL);
		g_file_set_contents(path, config_text, -1, &error);
		g_assert_no_error(error);
		g_ptr_array_add(argv, g_strdup_printf("--config=%s", path));
	}
	for (guint i = 0; extra_args != NULL && extra_args[i] != NULL; i++)
		g_ptr_array_add(argv, g_strdup(extra_args[i]));
	g_ptr_array_add(argv, NULL);

	launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE |
					     G_SUBPROCESS_FLAGS_STDERR_MERGE);
	if (private_bus) {
		g_subprocess_launcher_set_child_setup(launcher, die_with_parent, NULL, NULL);
		bus_address = start_private_bus(daemon);
		g_subprocess_launcher_setenv(launcher,
					     "DBUS_SESSION_BUS_ADDRESS",
					     bus_address,
					     TRUE);
	}
	/* a critical in the daemon under test is a bug: make it loud */
	g_subprocess_launcher_setenv(launcher, "G_DEBUG", "fatal-criticals", TRUE);
	/* under ASan, full malloc stacks for the daemon: the leak suppressions
	 * (tests/lsan.supp) name frames inside libsoup that the fast unwinder
	 * cannot see */
	if (asan != NULL)
		g_subprocess_launcher_setenv(launcher, "ASAN_OPTIONS", asan, TRUE);
	daemon->process =
	    g_subprocess_launcher_spawnv(launcher, (const gchar *const *)argv->pdata, &error);
	g_assert_no_error(error);
	daemon->stdout_stream =
	    g_data_input_stream_new(g_subprocess_get_stdout_pipe(daemon->process));
	daemon->reader = g_thread_new("confabd-output", reader_thread, daemon);
	if (activated)
		wake_activated(daemon, activate_port);

	if (!confab_test_wait_until(daemon_listening, daemon, 60000))
		g_error("confabd did not start listening within 60 s");
	output = confab_test_daemon_get_output(daemon);
	line = strstr(output, "confabd: listening on ");
	if (line == NULL)
		g_error("confabd failed to start:\n%s", output);
	line += strlen("confabd: listening on ");
	daemon->url = g_strndup(line, strcspn(line, "\n"));

	if (private_bus) {
		connect_private_bus(daemon, bus_address);
	} else if (test_bus != NULL) {
		daemon->admin = confab_dbus_admin_proxy_new_for_bus_sync(G_BUS_TYPE_SESSION,
									 G_DBUS_PROXY_FLAGS_NONE,
									 "org.confab.Confab1",
									 "/org/confab/Confab1",
									 NULL,
									 &error);
		g_assert_no_error(error);
		daemon->chat = confab_dbus_chat_proxy_new_for_bus_sync(G_BUS_TYPE_SESSION,
								       G_DBUS_PROXY_FLAGS_NONE,
								       "org.confab.Confab1",
								       "/org/confab/Confab1",
								       NULL,
								       &error);
		g_assert_no_error(error);
		if (!confab_test_wait_until(proxy_has_owner, daemon->admin, 20000))
			g_error("confabd did not take its bus name within 20 s");
	}
	return g_steal_pointer(&daemon);
}

/**
 * confab_test_daemon_start:
 * @config_text: (nullable): a confab.conf to start with
 * @extra_args: (nullable): more command-line arguments
 *
 * Returns: (transfer full): a running daemon on a fresh state directory
 */
ConfabTestDaemon *
confab_test_daemon_start(const gchar *config_text, const gchar *const *extra_args)
{
	return confab_test_daemon_start_full(NULL, config_text, extra_args);
}

static gint
wait_exit(ConfabTestDaemon *daemon, guint timeout_ms)
{
	if (!confab_test_wait_until(daemon_exited, daemon, timeout_ms))
		return -1;
	if (daemon->reader != NULL)
		g_thread_join(g_steal_pointer(&daemon->reader));
	if (g_subprocess_get_if_exited(daemon->process))
		return g_subprocess_get_exit_status(daemon->process);
	return 128 + g_subprocess_get_term_sig(daemon->process);
}

/**
 * confab_test_daemon_stop:
 * @daemon: a running daemon
 *
 * SIGTERM, then waits up to 30 s.
 *
 * Returns: the exit status, 128+N for signal N, or -1 if it did not exit
 */
gint
confab_test_daemon_stop(ConfabTestDaemon *daemon)
{
	gint status;
	if (g_subprocess_get_identifier(daemon->process) == NULL)
		return wait_exit(daemon, 0);
	g_subprocess_send_signal(daemon->process, SIGTERM);
	status = wait_exit(daemon, 60000);
	if (status < 0)
		confab_test_daemon_kill(daemon);
	if (status != 0) {
		/* say why: the daemon's output is the only witness */
		g_autofree gchar *output = confab_test_daemon_get_output(daemon);
		g_printerr("confabd exited with status %d; its output:\n%s\n", status, output);
	}
	return status;
}

/**
 * confab_test_daemon_kill:
 * @daemon: a running daemon
 *
 * SIGKILL: no chance to clean up, as in a crash.
 */
void
confab_test_daemon_kill(ConfabTestDaemon *daemon)
{
	if (g_subprocess_get_identifier(daemon->process) != NULL)
		g_subprocess_force_exit(daemon->process);
	wait_exit(daemon, 30000);
}

void
confab_test_daemon_free(ConfabTestDaemon *daemon)
{
	if (daemon == NULL)
		return;
	if (daemon->process != NULL) {
		confab_test_daemon_kill(daemon);
		g_clear_object(&daemon->process);
	}
	if (daemon->reader != NULL)
		g_thread_join(daemon->reader);
	g_clear_object(&daemon->stdout_stream);
	g_clear_object(&daemon->admin);
	g_clear_object(&daemon->chat);
	if (daemon->bus_process != NULL) {
		g_subprocess_force_exit(daemon->bus_process);
		g_subprocess_wait(daemon->bus_process, NULL, NULL);
		g_clear_object(&daemon->bus_process);
	}
	if (daemon->own_state_dir)
		confab_test_rm_rf(daemon->state_dir);
	if (daemon->config_dir != NULL)
		confab_test_rm_rf(daemon->config_dir);
	g_free(daemon->config_dir);
	g_free(daemon->state_dir);
	g_free(daemon->url);
	g_string_free(daemon->output, TRUE);
	g_mutex_clear(&daemon->lock);
	g_free(daemon);
}

/* ---------- provisioning ---------- */

/**
 * confab_test_confabctl:
 * @out: (out): its standard output
 * @args: its arguments
 *
 * Runs confabctl (CONFABCTL) with @args on the test's session bus.
 *
 * Returns: 0 when it succeeded, 1 when not
 */
gint
confab_test_confabctl(gchar **out, const gchar *const *args)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autoptr(GError) error = NULL;
	g_autofree gchar *err = NULL;
	gint status = 0;

	g_ptr_array_add(argv, (gpointer)g_getenv("CONFABCTL"));
	g_ptr_array_add(argv, "--session");
	for (guint i = 0; args[i] != NULL; i++)
		g_ptr_array_add(argv, (gpointer)args[i]);
	g_ptr_array_add(argv, NULL);
	g_assert_true(g_spawn_sync(NULL,
				   (gchar **)argv->pdata,
				   NULL,
				   G_SPAWN_DEFAULT,
				   NULL,
				   NULL,
				   out,
				   &err,
				   &status,
				   &error));
	g_assert_no_error(error);
	if (err != NULL && *err != '\0')
		g_test_message("confabctl said: %s", err);
	return g_spawn_check_wait_status(status, NULL) ? 0 : 1;
}

/**
 * confab_test_fake_mcp_http:
 * @option: (nullable): one option of the fake MCP server's
 * @value: (nullable): its value
 * @url: (out): where it serves
 *
 * Starts the fake MCP server (CONFAB_FAKE_MCP) over Streamable HTTP on a
 * free port; it exits when its stdin closes, with the subprocess.
 *
 * Returns: (transfer full): the server
 */
GSubprocess *
confab_test_fake_mcp_http(const gchar *option, const gchar *value, gchar **url)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GDataInputStream) out = NULL;
	g_autofree gchar *line = NULL;
	GSubprocess *server =
	    g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE,
			     &error,
			     g_getenv("CONFAB_FAKE_MCP"),
			     "--http",
			     "0",
			     option,
			     option != NULL ? value : NULL,
			     NULL);

	g_assert_no_error(error);
	out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(server));
	line = g_data_input_stream_read_line(out, NULL, NULL, NULL);
	g_assert_nonnull(line);
	g_assert_true(g_str_has_prefix(line, "PORT="));
	*url = g_strdup_printf("http://127.0.0.1:%s/mcp", line + 5);
	return server;
}

/**
 * confab_test_create_agent_props:
 * @daemon: a daemon
 * @props: (transfer floating): CreateAgent properties
 *
 * Returns: (transfer full): the agent id
 */
gchar *
confab_test_create_agent_props(ConfabTestDaemon *daemon, GVariant *props)
{
	g_autoptr(GError) error = NULL;
	gchar *agent_id = NULL;
	confab_dbus_admin_call_create_agent_sync(daemon->admin, props, &agent_id, NULL, &error);
	g_assert_no_error(error);
	return agent_id;
}

gchar *
confab_test_create_agent(ConfabTestDaemon *daemon, const gchar *name, const gchar *provider)
{
	GVariantDict dict;
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", name);
	g_variant_dict_insert(&dict, "provider", "s", provider);
	return confab_test_create_agent_props(daemon, g_variant_dict_end(&dict));
}

/**
 * confab_test_create_token:
 * @daemon: a daemon
 * @owner: the owner
 * @scope: one scope
 * @agent_id: (nullable): bind to this agent
 * @token_id: (out) (optional): the token id
 *
 * Returns: (transfer full): the secret
 */
gchar *
confab_test_create_token(ConfabTestDaemon *daemon,
			 const gchar *owner,
			 const gchar *scope,
			 const gchar *agent_id,
			 gchar **token_id)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *id = NULL;
	const gchar *scopes[] = {scope, NULL};
	gchar *secret = NULL;
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "owner", "s", owner);
	g_variant_dict_insert_value(&dict, "scopes", g_variant_new_strv(scopes, -1));
	if (agent_id != NULL)
		g_variant_dict_insert(&dict, "agent_id", "s", agent_id);
	confab_dbus_admin_call_create_token_sync(daemon->admin,
						 g_variant_dict_end(&dict),
						 &id,
						 &secret,
						 NULL,
						 &error);
	g_assert_no_error(error);
	if (token_id != NULL)
		*token_id = g_steal_pointer(&id);
	return secret;
}

void
confab_test_set_quota(ConfabTestDaemon *daemon, const gchar *owner, guint64 quota)
{
	g_autoptr(GError) error = NULL;
	confab_dbus_admin_call_set_quota_sync(daemon->admin, owner, quota, NULL, &error);
	g_assert_no_error(error);
}

/* ---------- HTTP ---------- */

static void
session_free(gpointer data)
{
	g_clear_object(&data);
}

static GPrivate session_key = G_PRIVATE_INIT(session_free);

/* one client session per thread: tests may hammer from several */
static SoupSession *
thread_session(void)
{
	SoupSession *session = g_private_get(&session_key);
	if (session == NULL) {
		session =
		    soup_session_new_with_options("timeout", 60, "max-conns-per-host", 64, NULL);
		g_private_set(&session_key, session);
	}
	return session;
}

void
confab_test_response_free(ConfabTestResponse *response)
{
	if (response == NULL)
		return;
	g_clear_pointer(&response->headers, soup_message_headers_unref);
	g_clear_pointer(&response->body, g_bytes_unref);
	g_clear_pointer(&response->json, json_node_unref);
	g_free(response);
}

/**
 * confab_test_http_full:
 * @daemon: a daemon
 * @method: GET, POST…
 * @path: a path, with its query
 * @headers: (nullable): "Name: value" strings
 * @body: (nullable): the request body
 *
 * Returns: (transfer full): the response
 */
/* A request a daemon did not answer: what it printed says why (a crash, a
 * critical made fatal, a stop), where an assertion alone would not. */
static void G_GNUC_NORETURN
request_failed(ConfabTestDaemon *daemon,
	       const gchar *method,
	       const gchar *path,
	       const GError *error)
{
	g_autofree gchar *output = confab_test_daemon_get_output(daemon);
	gsize len = strlen(output);
	const gchar *tail = len > 8192 ? output + len - 8192 : output;

	g_error("%s %s%s: %s; confabd (pid %s) printed, last:\n%s",
		method,
		daemon->url,
		path,
		error->message,
		daemon->process != NULL ? g_subprocess_get_identifier(daemon->process) : "gone",
		tail);
}

ConfabTestResponse *
confab_test_http_full(ConfabTestDaemon *daemon,
		      const gchar *method,
		      const gchar *path,
		      const gchar *const *headers,
		      GBytes *body)
{
	g_autofree gchar *uri = g_strconcat(daemon->url, path, NULL);
	g_autoptr(SoupMessage) msg = soup_message_new(method, uri);
	g_autoptr(GError) error = NULL;
	ConfabTestResponse *response = g_new0(ConfabTestResponse, 1);
	SoupMessageHeaders *req_headers;
	const gchar *content_type;

	g_assert_nonnull(msg);
	req_headers = soup_message_get_request_headers(msg);
	for (guint i = 0; headers != NULL && headers[i] != NULL; i++) {
		g_auto(GStrv) kv = g_strsplit(headers[i], ":", 2);
		g_assert_nonnull(kv[1]);
		soup_message_headers_replace(req_headers, kv[0], g_strstrip(kv[1]));
	}
	if (body != NULL) {
		/* copied: setting the body replaces the header it points into */
		g_autofree gchar *type =
		    g_strdup(soup_message_headers_get_one(req_headers, "Content-Type"));
		soup_message_set_request_body_from_bytes(msg, type, body);
	}
	response->body = soup_session_send_and_read(thread_session(), msg, NULL, &error);
	if (error != NULL)
		request_failed(daemon, method, path, error);
	response->status = soup_message_get_status(msg);
	response->headers = soup_message_headers_ref(soup_message_get_response_headers(msg));
	content_type = soup_message_headers_get_content_type(response->headers, NULL);
	if (g_strcmp0(content_type, "application/json") == 0) {
		g_autoptr(JsonParser) parser = json_parser_new();
		gsize len = 0;
		const gchar *data = g_bytes_get_data(response->body, &len);
		if (json_parser_load_from_data(parser, data, len, NULL) &&
		    json_parser_get_root(parser) != NULL)
			response->json = json_node_copy(json_parser_get_root(parser));
	}
	return response;
}

/**
 * confab_test_http:
 * @daemon: a daemon
 * @method: GET, POST…
 * @path: a path, with its query
 * @token: (nullable): sent as a Bearer token
 * @body: (nullable): a JSON body
 *
 * Returns: (transfer full): the response
 */
ConfabTestResponse *
confab_test_http(ConfabTestDaemon *daemon,
		 const gchar *method,
		 const gchar *path,
		 const gchar *token,
		 const gchar *body)
{
	g_autofree gchar *auth = token != NULL ? g_strdup_printf("Authorization: Bearer %s", token)
					       : NULL;
	const gchar *headers[] = {"Content-Type: application/json", auth, NULL};
	g_autoptr(GBytes) bytes = body != NULL ? g_bytes_new(body, strlen(body)) : NULL;
	return confab_test_http_full(daemon, method, path, headers, bytes);
}

/**
 * confab_test_chat:
 * @daemon: a daemon
 * @token: the API token
 * @agent_id: the model
 * @session_id: (nullable): a session to continue
 * @text: the user's message
 * @stream: whether to stream
 *
 * Returns: (transfer full): the response
 */
ConfabTestResponse *
confab_test_chat(ConfabTestDaemon *daemon,
		 const gchar *token,
		 const gchar *agent_id,
		 const gchar *session_id,
		 const gchar *text,
		 gboolean stream)
{
	g_autoptr(JsonBuilder) builder = json_builder_new();
	g_autoptr(JsonNode) root = NULL;
	g_autofree gchar *body = NULL;

	json_builder_begin_object(builder);
	json_builder_set_member_name(builder, "model");
	json_builder_add_string_value(builder, agent_id);
	json_builder_set_member_name(builder, "messages");
	json_builder_begin_array(builder);
	json_builder_begin_object(builder);
	json_builder_set_member_name(builder, "role");
	json_builder_add_string_value(builder, "user");
	json_builder_set_member_name(builder, "content");
	json_builder_add_string_value(builder, text);
	json_builder_end_object(builder);
	json_builder_end_array(builder);
	if (stream) {
		json_builder_set_member_name(builder, "stream");
		json_builder_add_boolean_value(builder, TRUE);
	}
	if (session_id != NULL) {
		json_builder_set_member_name(builder, "metadata");
		json_builder_begin_object(builder);
		json_builder_set_member_name(builder, "session_id");
		json_builder_add_string_value(builder, session_id);
		json_builder_end_object(builder);
	}
	json_builder_end_object(builder);
	root = json_builder_get_root(builder);
	body = json_to_string(root, FALSE);
	return confab_test_http(daemon, "POST", "/api/v1/chat/completions", token, body);
}

/**
 * confab_test_sse_events:
 * @response: a text/event-stream response
 *
 * Returns: (transfer full) (element-type utf8): the data of each event, in
 * order; the last is "[DONE]" for a whole stream
 */
GPtrArray *
confab_test_sse_events(ConfabTestResponse *response)
{
	GPtrArray *events = g_ptr_array_new_with_free_func(g_free);
	gsize len = 0;
	const gchar *data = g_bytes_get_data(response->body, &len);
	g_autofree gchar *text = g_strndup(data, len);
	g_auto(GStrv) blocks = g_strsplit(text, "\n\n", -1);

	for (guint i = 0; blocks[i] != NULL; i++) {
		if (blocks[i][0] == '\0')
			continue;
		g_assert_true(g_str_has_prefix(blocks[i], "data: "));
		g_ptr_array_add(events, g_strdup(blocks[i] + strlen("data: ")));
	}
	return events;
}

/* ---------- JSON ---------- */

/**
 * confab_test_json_get:
 * @node: (nullable): a JSON node
 * @path: a dot path such as `choices.0.message.content`
 *
 * Returns: (transfer none) (nullable): the node at @path
 */
JsonNode *
confab_test_json_get(JsonNode *node, const gchar *path)
{
	g_auto(GStrv) parts = g_strsplit(path, ".", -1);
	for (guint i = 0; parts[i] != NULL && node != NULL; i++) {
		if (JSON_NODE_HOLDS_OBJECT(node)) {
			JsonObject *obj = json_node_get_object(node);
			node = json_object_get_member(obj, parts[i]);
		} else if (JSON_NODE_HOLDS_ARRAY(node)) {
			JsonArray *arr = json_node_get_array(node);
			guint64 index = 0;
			if (!g_ascii_string_to_unsigned(parts[i], 10, 0, G_MAXUINT, &index, NULL) ||
			    index >= json_array_get_length(arr))
				return NULL;
			node = json_array_get_element(arr, index);
		} else {
			return NULL;
		}
	}
	return node;
}

const gchar *
confab_test_json_string(JsonNode *node, const gchar *path)
{
	JsonNode *value = confab_test_json_get(node, path);
	if (value == NULL || !JSON_NODE_HOLDS_VALUE(value) ||
	    json_node_get_value_type(value) != G_TYPE_STRING)
		return NULL;
	return json_node_get_string(value);
}

gint64
confab_test_json_int(JsonNode *node, const gchar *path)
{
	JsonNode *value = confab_test_json_get(node, path);
	if (value == NULL || !JSON_NODE_HOLDS_VALUE(value))
		return G_MININT64;
	return json_node_get_int(value);
}

/**
 * confab_test_assert_error:
 * @response: a response
 * @status: the expected status
 * @code: the expected error code
 *
 * Checks the OpenAI error shape: error.message, type, param and code.
 */
void
confab_test_assert_error(ConfabTestResponse *response, guint status, const gchar *code)
{
	JsonNode *error;
	g_assert_cmpuint(response->status, ==, status);
	g_assert_nonnull(response->json);
	error = confab_test_json_get(response->json, "error");
	g_assert_nonnull(error);
	g_assert_true(JSON_NODE_HOLDS_OBJECT(error));
	g_assert_nonnull(confab_test_json_string(response->json, "error.message"));
	g_assert_nonnull(confab_test_json_string(response->json, "error.type"));
	g_assert_true(json_object_has_member(json_node_get_object(error), "param"));
	g_assert_cmpstr(confab_test_json_string(response->json, "error.code"), ==, code);
}

/* ---------- an upstream that can hold its answers ---------- */

/*
 * An OpenAI-compatible upstream in a thread of the test that holds its
 * answers until told to: paused messages, so that it can hold several at
 * once, and a turn stays open for as long as the test wants.
 */
struct _ConfabTestUpstream {
	GThread *thread;
	GMainContext *context;
	GMainLoop *loop;
	gchar *base_url;
	GMutex lock;
	GCond cond;
	gboolean hold;
	gboolean ready;
	guint waiting;
	GPtrArray *held; /* SoupServerMessage, paused */
};

static const gchar upstream_reply[] =
    "{\"id\":\"chatcmpl-slow\",\"object\":\"chat.completion\",\"created\":1,"
    "\"model\":\"slow\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
    "\"content\":\"slow answer\"},\"finish_reason\":\"stop\"}],"
    "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}";

static void
upstream_respond(SoupServerMessage *msg)
{
	soup_server_message_set_status(msg, 200, NULL);
	soup_server_message_set_response(msg,
					 "application/json",
					 SOUP_MEMORY_STATIC,
					 upstream_reply,
					 strlen(upstream_reply));
}

static void
upstream_handler(SoupServer *server,
		 SoupServerMessage *msg,
		 const char *path,
		 GHashTable *query,
		 gpointer user_data)
{
	ConfabTestUpstream *up = user_data;
	gboolean hold;

	g_mutex_lock(&up->lock);
	hold = up->hold;
	if (hold) {
		soup_server_message_pause(msg);
		g_ptr_array_add(up->held, g_object_ref(msg));
		up->waiting++;
		g_cond_broadcast(&up->cond);
	}
	g_mutex_unlock(&up->lock);
	if (!hold)
		upstream_respond(msg);
}

/* in the upstream's thread */
static gboolean
upstream_release_held(gpointer data)
{
	ConfabTestUpstream *up = data;
	g_autoptr(GPtrArray) held = NULL;

	g_mutex_lock(&up->lock);
	held = g_steal_pointer(&up->held);
	up->held = g_ptr_array_new_with_free_func(g_object_unref);
	up->waiting = 0;
	g_mutex_unlock(&up->lock);
	for (guint i = 0; i < held->len; i++) {
		SoupServerMessage *msg = g_ptr_array_index(held, i);
		upstream_respond(msg);
		soup_server_message_unpause(msg);
	}
	return G_SOURCE_REMOVE;
}

static gpointer
upstream_thread(gpointer data)
{
	ConfabTestUpstream *up = data;
	g_autoptr(SoupServer) server = NULL;
	g_autoptr(GError) error = NULL;
	GSList *uris;
	g_autofree gchar *url = NULL;

	g_main_context_push_thread_default(up->context);
	server = soup_server_new(NULL, NULL);
	soup_server_add_handler(server, NULL, upstream_handler, up, NULL);
	soup_server_listen_local(server, 0, SOUP_SERVER_LISTEN_IPV4_ONLY, &error);
	g_assert_no_error(error);
	uris = soup_server_get_uris(server);
	url = g_uri_to_string(uris->data);
	g_slist_free_full(uris, (GDestroyNotify)g_uri_unref);
	g_mutex_lock(&up->lock);
	up->base_url = g_strdup_printf("%s%sv1", url, g_str_has_suffix(url, "/") ? "" : "/");
	up->ready = TRUE;
	g_cond_broadcast(&up->cond);
	g_mutex_unlock(&up->lock);
	g_main_loop_run(up->loop);
	upstream_release_held(up);
	soup_server_disconnect(server);
	g_main_context_pop_thread_default(up->context);
	return NULL;
}

/**
 * confab_test_upstream_start:
 * @hold: whether answers wait for confab_test_upstream_set_hold(FALSE)
 *
 * Returns: (transfer full): a running upstream
 */
ConfabTestUpstream *
confab_test_upstream_start(gboolean hold)
{
	ConfabTestUpstream *up = g_new0(ConfabTestUpstream, 1);
	g_mutex_init(&up->lock);
	g_cond_init(&up->cond);
	up->hold = hold;
	up->held = g_ptr_array_new_with_free_func(g_object_unref);
	up->context = g_main_context_new();
	up->loop = g_main_loop_new(up->context, FALSE);
	up->thread = g_thread_new("upstream", upstream_thread, up);
	g_mutex_lock(&up->lock);
	while (!up->ready)
		g_cond_wait(&up->cond, &up->lock);
	g_mutex_unlock(&up->lock);
	return up;
}

/**
 * confab_test_upstream_set_hold:
 * @up: an upstream
 * @hold: %TRUE to hold the answers from now on; %FALSE to answer, the held
 *   ones included
 */
void
confab_test_upstream_set_hold(ConfabTestUpstream *up, gboolean hold)
{
	g_mutex_lock(&up->lock);
	up->hold = hold;
	g_mutex_unlock(&up->lock);
	if (!hold)
		g_main_context_invoke(up->context, upstream_release_held, up);
}

/**
 * confab_test_upstream_get_base_url:
 *
 * Returns: its base URL, as an agent's base_url
 */
const gchar *
confab_test_upstream_get_base_url(ConfabTestUpstream *up)
{
	return up->base_url;
}

/**
 * confab_test_upstream_wait_waiting:
 * @up: an upstream
 * @n: how many held requests to wait for
 * @timeout_ms: the deadline
 *
 * Returns: %TRUE once @n requests are held, %FALSE at the deadline
 */
gboolean
confab_test_upstream_wait_waiting(ConfabTestUpstream *up, guint n, guint timeout_ms)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
	gboolean ok;
	g_mutex_lock(&up->lock);
	while (up->waiting < n && g_cond_wait_until(&up->cond, &up->lock, deadline))
		;
	ok = up->waiting >= n;
	g_mutex_unlock(&up->lock);
	return ok;
}

/**
 * confab_test_upstream_stop:
 * @up: (transfer full): an upstream; what it holds is answered first
 */
void
confab_test_upstream_stop(ConfabTestUpstream *up)
{
	confab_test_upstream_set_hold(up, FALSE);
	g_main_loop_quit(up->loop);
	g_thread_join(up->thread);
	g_main_loop_unref(up->loop);
	g_main_context_unref(up->context);
	g_mutex_clear(&up->lock);
	g_cond_clear(&up->cond);
	g_ptr_array_unref(up->held);
	g_free(up->base_url);
	g_free(up);
}

/**
 * confab_test_create_held_agent:
 * @daemon: a daemon
 * @up: an upstream (confab_test_upstream_start())
 *
 * Creates the agent "held", an openai agent whose model is @up's.
 *
 * Returns: (transfer full): the agent id
 */
gchar *
confab_test_create_held_agent(ConfabTestDaemon *daemon, ConfabTestUpstream *up)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "held");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", confab_test_upstream_get_base_url(up));
	g_variant_dict_insert(&dict, "upstream_model", "s", "held-model");
	return confab_test_create_agent_props(daemon, g_variant_dict_end(&dict));
}

/**
 * confab_test_variant_string:
 * @dict: an a{sv}
 * @key: a key
 *
 * Returns: (nullable): its string value, or %NULL if it has none
 */
const gchar *
confab_test_variant_string(GVariant *dict, const gchar *key)
{
	const gchar *value = NULL;
	if (!g_variant_lookup(dict, key, "&s", &value))
		return NULL;
	return value;
}

/**
 * confab_test_header:
 * @response: a response
 * @name: a header's name
 *
 * Returns: (nullable): the header's value, or %NULL if it has none
 */
const gchar *
confab_test_header(ConfabTestResponse *response, const gchar *name)
{
	return soup_message_headers_get_one(response->headers, name);
}

/**
 * confab_test_header_u64:
 * @response: a response
 * @name: a header's name
 *
 * Returns: the header's value, a whole number (the header must be there)
 */
guint64
confab_test_header_u64(ConfabTestResponse *response, const gchar *name)
{
	const gchar *value = confab_test_header(response, name);
	guint64 n = 0;
	g_assert_nonnull(value);
	g_assert_true(g_ascii_string_to_unsigned(value, 10, 0, G_MAXUINT64, &n, NULL));
	return n;
}

/**
 * confab_test_fake_upstream_start:
 *
 * Starts tests/fake-upstream ($CONFAB_FAKE_UPSTREAM) with --stdin-watch, so
 * that it never outlives a test that dies, and reads the address it prints.
 *
 * Returns: (transfer full): the running fake
 */
ConfabTestFakeUpstream *
confab_test_fake_upstream_start(void)
{
	ConfabTestFakeUpstream *up = g_new0(ConfabTestFakeUpstream, 1);
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
	g_assert_nonnull(line);
	g_assert_true(g_str_has_prefix(line, prefix));
	up->url = g_strdup(line + strlen(prefix));
	up->base_url = g_strconcat(up->url, "/v1", NULL);
	return up;
}

void
confab_test_fake_upstream_free(ConfabTestFakeUpstream *up)
{
	if (up == NULL)
		return;
	g_subprocess_force_exit(up->process);
	g_subprocess_wait(up->process, NULL, NULL);
	g_object_unref(up->process);
	g_free(up->url);
	g_free(up->base_url);
	g_free(up);
}

/**
 * confab_test_fake_upstream_requests:
 * @up: a running fake
 *
 * Every completion request the fake received, in order, as its
 * GET /_requests lists them (method, path, headers, body).
 *
 * Returns: (transfer full): a JSON array
 */
JsonNode *
confab_test_fake_upstream_requests(ConfabTestFakeUpstream *up)
{
	g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 30, NULL);
	g_autofree gchar *uri = g_strconcat(up->url, "/_requests", NULL);
	g_autoptr(SoupMessage) msg = soup_message_new("GET", uri);
	g_autoptr(GError) error = NULL;
	g_autoptr(GBytes) body = soup_session_send_and_read(session, msg, NULL, &error);
	g_autofree gchar *text = NULL;
	JsonNode *node;

	g_assert_no_error(error);
	g_assert_cmpuint(soup_message_get_status(msg), ==, 200);
	text = g_strndup(g_bytes_get_data(body, NULL), g_bytes_get_size(body));
	node = json_from_string(text, &error);
	g_assert_no_error(error);
	g_assert_true(JSON_NODE_HOLDS_ARRAY(node));
	return node;
}

/**
 * confab_test_fake_upstream_release:
 * @up: a fake upstream
 *
 * Lets its "held" streams go on (GET /_release).
 *
 * Returns: how many were waiting
 */
guint
confab_test_fake_upstream_release(ConfabTestFakeUpstream *up)
{
	g_autoptr(SoupSession) session = soup_session_new_with_options("timeout", 30, NULL);
	g_autofree gchar *uri = g_strconcat(up->url, "/_release", NULL);
	g_autoptr(SoupMessage) msg = soup_message_new("GET", uri);
	g_autoptr(GError) error = NULL;
	g_autoptr(GBytes) body = soup_session_send_and_read(session, msg, NULL, &error);
	g_autofree gchar *text = NULL;
	g_autoptr(JsonNode) node = NULL;

	g_assert_no_error(error);
	g_assert_cmpuint(soup_message_get_status(msg), ==, 200);
	text = g_strndup(g_bytes_get_data(body, NULL), g_bytes_get_size(body));
	node = json_from_string(text, &error);
	g_assert_no_error(error);
	return (guint)confab_test_json_int(node, "released");
}

/**
 * confab_test_raw_read_until:
 * @conn: a connection to a daemon
 * @received: what was read so far, appended to
 * @needle: what to read up to
 *
 * Reads until @received holds @needle (the socket's timeout bounds it).
 */
void
confab_test_raw_read_until(GSocketConnection *conn, GString *received, const gchar *needle)
{
	while (strstr(received->str, needle) == NULL) {
		g_autoptr(GError) error = NULL;
		gchar buf[4096];
		gssize n = g_input_stream_read(g_io_stream_get_input_stream(G_IO_STREAM(conn)),
					       buf,
					       sizeof(buf),
					       NULL,
					       &error);
		if (error != NULL)
			g_test_message("waiting for %s, got: %s", needle, received->str);
		g_assert_no_error(error);
		g_assert_cmpint(n, >, 0);
		g_string_append_len(received, buf, n);
	}
}

/**
 * confab_test_raw_open:
 * @daemon: a running daemon
 * @request: a whole HTTP request, as sent
 * @received: what is read, appended to
 * @needle: what to read up to
 *
 * Sends @request on a connection of its own and reads its answer up to
 * @needle: for a stream read (or left) by hand.
 *
 * Returns: (transfer full): the connection, still open
 */
GSocketConnection *
confab_test_raw_open(ConfabTestDaemon *daemon,
		     const gchar *request,
		     GString *received,
		     const gchar *needle)
{
	g_autoptr(GUri) uri = g_uri_parse(daemon->url, G_URI_FLAGS_NONE, NULL);
	g_autoptr(GSocketClient) client = g_socket_client_new();
	g_autoptr(GSocketConnection) conn = NULL;
	g_autoptr(GError) error = NULL;

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
	confab_test_raw_read_until(conn, received, needle);
	return g_steal_pointer(&conn);
}

/**
 * confab_test_routed_start:
 * @f: where to keep them
 * @config: confabd's configuration
 *
 * Starts a confabd with @config and two fake upstreams (tests/fake-upstream)
 * for its agents' targets, and makes alice a chat.completions token.
 */
void
confab_test_routed_start(ConfabTestRouted *f, const gchar *config)
{
	f->daemon = confab_test_daemon_start(config, NULL);
	f->a = confab_test_fake_upstream_start();
	f->b = confab_test_fake_upstream_start();
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
}

/**
 * confab_test_routed_stop:
 * @f: what confab_test_routed_start() started
 *
 * Stops the daemon (it must exit cleanly) and the upstreams.
 */
void
confab_test_routed_stop(ConfabTestRouted *f)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	confab_test_fake_upstream_free(f->a);
	confab_test_fake_upstream_free(f->b);
	g_free(f->token);
}

/**
 * confab_test_tokens_start:
 * @f: where to keep them
 * @config: (nullable): confabd's configuration
 * @other_owner: the owner of the second token (alice again, or another)
 *
 * Starts a confabd with @config, creates an echo agent, and makes alice a
 * chat.completions token, then @other_owner another.
 */
void
confab_test_tokens_start(ConfabTestTokens *f, const gchar *config, const gchar *other_owner)
{
	f->daemon = confab_test_daemon_start(config, NULL);
	f->agent = confab_test_create_agent(f->daemon, "echo", "echo");
	f->alice =
	    confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, &f->alice_id);
	f->other = confab_test_create_token(f->daemon,
					    other_owner,
					    "chat.completions",
					    NULL,
					    &f->other_id);
}

/**
 * confab_test_tokens_teardown:
 * @f: what confab_test_tokens_start() started
 * @data: the test's data (unused): this is a g_test_add() teardown
 *
 * Stops the daemon (it must exit cleanly) and frees the rest.
 */
void
confab_test_tokens_teardown(ConfabTestTokens *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	g_free(f->agent);
	g_free(f->alice);
	g_free(f->alice_id);
	g_free(f->other);
	g_free(f->other_id);
}
