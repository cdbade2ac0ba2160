/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <glib/gstdio.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "confab-test-helper.h"

/*
 * Who may read the Admin properties on the system bus: a private
 * dbus-daemon with the system bus's default policy and the policy file
 * that is installed (built from data/org.confab.Confab1.conf.in), confabd
 * on it as the system service, and clients that run as root and as
 * nobody. An ordinary user may chat and introspect, but neither call the
 * Admin interface nor read its properties. The same again on a bus whose
 * policy lets everyone through: then confabd's own check must refuse.
 *
 * Clients run as nobody are this program again (--client), started with
 * its privileges dropped; it prints what the bus answered.
 */

#define ADMIN	       "org.confab.Confab1.Admin"
#define ACCESS_DENIED  "org.freedesktop.DBus.Error.AccessDenied"
#define AGENT_ID_NONE  "agt_00000000000000000000000000"
#define BUS_REFUSED    "Rejected send message"
#define DAEMON_REFUSED "may administer Confab"

/* The system bus's own default policy (dbus's system.conf), so that the
 * file under test decides alone what reaches org.confab.Confab1. */
static const gchar bus_config_head[] =
    "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN\"\n"
    " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
    "<busconfig>\n"
    "  <type>system</type>\n"
    "  <listen>unix:path=%s</listen>\n"
    "  <auth>EXTERNAL</auth>\n"
    "  <policy context=\"default\">\n"
    "    <allow user=\"*\"/>\n"
    "    <deny own=\"*\"/>\n"
    "    <deny send_type=\"method_call\"/>\n"
    "    <allow send_type=\"signal\"/>\n"
    "    <allow send_requested_reply=\"true\" send_type=\"method_return\"/>\n"
    "    <allow send_requested_reply=\"true\" send_type=\"error\"/>\n"
    "    <allow receive_type=\"method_call\"/>\n"
    "    <allow receive_type=\"method_return\"/>\n"
    "    <allow receive_type=\"error\"/>\n"
    "    <allow receive_type=\"signal\"/>\n"
    "    <allow send_destination=\"org.freedesktop.DBus\"\n"
    "           send_interface=\"org.freedesktop.DBus\"/>\n"
    "    <allow send_destination=\"org.freedesktop.DBus\"\n"
    "           send_interface=\"org.freedesktop.DBus.Introspectable\"/>\n"
    "    <allow send_destination=\"org.freedesktop.DBus\"\n"
    "           send_interface=\"org.freedesktop.DBus.Properties\"/>\n"
    "  </policy>\n";

/* Everyone may send anything to Confab: only confabd's check is left. */
static const gchar open_policy[] = "  <policy user=\"root\">\n"
				   "    <allow own=\"org.confab.Confab1\"/>\n"
				   "  </policy>\n"
				   "  <policy context=\"default\">\n"
				   "    <allow send_destination=\"org.confab.Confab1\"/>\n"
				   "  </policy>\n";

/* the bus socket's folder, named by DBUS_SYSTEM_BUS_ADDRESS */
static gchar *bus_dir;
static uid_t nobody_uid = 65534;
static gid_t nobody_gid = 65534;

/* ---------- the client, as nobody ---------- */

static gint
client_main(const gchar *address, const gchar *what)
{
	g_autoptr(GDBusConnection) bus = NULL;
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GError) error = NULL;
	const gchar *interface = "org.freedesktop.DBus.Properties";
	const gchar *method;
	GVariant *args;

	bus = g_dbus_connection_new_for_address_sync(
	    address,
	    G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
		G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
	    NULL,
	    NULL,
	    &error);
	if (bus == NULL) {
		g_print("FAILED %s\n", error->message);
		return 1;
	}
	if (g_str_equal(what, "get")) {
		method = "Get";
		args = g_variant_new("(ss)", ADMIN, "Version");
	} else if (g_str_equal(what, "get-all")) {
		method = "GetAll";
		args = g_variant_new("(s)", ADMIN);
	} else if (g_str_equal(what, "list-agents")) {
		interface = ADMIN;
		method = "ListAgents";
		args = NULL;
	} else if (g_str_equal(what, "introspect")) {
		interface = "org.freedesktop.DBus.Introspectable";
		method = "Introspect";
		args = NULL;
	} else if (g_str_equal(what, "chat")) {
		interface = "org.confab.Confab1.Chat";
		method = "Send";
		args = g_variant_new("(sss)", AGENT_ID_NONE, "", "hello");
	} else {
		g_print("FAILED unknown call %s\n", what);
		return 1;
	}
	reply = g_dbus_connection_call_sync(bus,
					    "org.confab.Confab1",
					    "/org/confab/Confab1",
					    interface,
					    method,
					    args,
					    NULL,
					    G_DBUS_CALL_FLAGS_NONE,
					    20000,
					    NULL,
					    &error);
	if (reply != NULL) {
		g_autofree gchar *text = g_variant_print(reply, FALSE);
		g_print("OK %s\n", text);
	} else {
		g_autofree gchar *name = g_dbus_error_get_remote_error(error);
		g_dbus_error_strip_remote_error(error);
		g_print("ERROR %s %s\n", name != NULL ? name : "(local)", error->message);
	}
	return 0;
}

/* In the child, between fork and exec: nothing but system calls. */
static void
become_nobody(gpointer data)
{
	if (setgroups(0, NULL) != 0 || setgid(nobody_gid) != 0 || setuid(nobody_uid) != 0)
		_exit(126);
}

/* What the bus answered @what as nobody: "OK ..." or "ERROR NAME ...". */
static gchar *
call_as_nobody(const gchar *address, const gchar *what)
{
	g_autoptr(GSubprocessLauncher) launcher =
	    g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE);
	g_autoptr(GSubprocess) child = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *self = g_file_read_link("/proc/self/exe", &error);
	gchar *out = NULL;

	g_assert_no_error(error);
	g_subprocess_launcher_set_child_setup(launcher, become_nobody, NULL, NULL);
	child =
	    g_subprocess_launcher_spawn(launcher, &error, self, "--client", address, what, NULL);
	g_assert_no_error(error);
	g_subprocess_communicate_utf8(child, NULL, NULL, &out, NULL, &error);
	g_assert_no_error(error);
	g_assert_true(g_subprocess_get_if_exited(child));
	g_assert_cmpint(g_subprocess_get_exit_status(child), ==, 0);
	g_strchomp(out);
	g_test_message("as nobody, %s: %.160s", what, out);
	return out;
}

static void
assert_denied(const gchar *answer, const gchar *by)
{
	g_assert_true(g_str_has_prefix(answer, "ERROR " ACCESS_DENIED " "));
	g_assert_nonnull(strstr(answer, by));
}

/* ---------- a private system bus ---------- */

typedef struct {
	GSubprocess *process;
	gchar *address;
	GDBusConnection *root; /* this process, as root */
} Bus;

static gboolean
name_owned(gpointer data)
{
	Bus *bus = data;
	g_autoptr(GVariant) reply = NULL;
	gboolean owned = FALSE;

	reply = g_dbus_connection_call_sync(bus->root,
					    "org.freedesktop.DBus",
					    "/org/freedesktop/DBus",
					    "org.freedesktop.DBus",
					    "NameHasOwner",
					    g_variant_new("(s)", "org.confab.Confab1"),
					    G_VARIANT_TYPE("(b)"),
					    G_DBUS_CALL_FLAGS_NONE,
					    -1,
					    NULL,
					    NULL);
	if (reply != NULL)
		g_variant_get(reply, "(b)", &owned);
	return owned;
}

/* A test that fails must not leave its bus behind (holding the output
 * that meson waits on). */
static void
die_with_parent(gpointer data)
{
	(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
}

/* A dbus-daemon whose policy is the system default plus @policy. */
static Bus *
bus_start(const gchar *policy)
{
	Bus *bus = g_new0(Bus, 1);
	g_autoptr(GError) error = NULL;
	g_autofree gchar *socket = g_build_filename(bus_dir, "system_bus_socket", NULL);
	g_autofree gchar *config_path = g_build_filename(bus_dir, "bus.conf", NULL);
	g_autoptr(GString) config = g_string_new(NULL);
	g_autoptr(GDataInputStream) out = NULL;
	g_autoptr(GSubprocessLauncher) launcher =
	    g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE);

	g_string_append_printf(config, bus_config_head, socket);
	g_string_append(config, policy);
	g_string_append(config, "</busconfig>\n");
	g_file_set_contents(config_path, config->str, -1, &error);
	g_assert_no_error(error);

	g_subprocess_launcher_set_child_setup(launcher, die_with_parent, NULL, NULL);
	bus->process = g_subprocess_launcher_spawn(launcher,
						   &error,
						   "dbus-daemon",
						   "--nofork",
						   "--print-address=1",
						   "--config-file",
						   config_path,
						   NULL);
	g_assert_no_error(error);
	out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(bus->process));
	bus->address = g_data_input_stream_read_line_utf8(out, NULL, NULL, &error);
	g_assert_no_error(error);
	g_assert_nonnull(bus->address);
	g_assert_true(g_str_has_suffix(g_getenv("DBUS_SYSTEM_BUS_ADDRESS"), socket));
	/* nobody must reach the socket */
	g_assert_cmpint(g_chmod(socket, 0777), ==, 0);

	bus->root = g_dbus_connection_new_for_address_sync(
	    bus->address,
	    G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT |
		G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION,
	    NULL,
	    NULL,
	    &error);
	g_assert_no_error(error);
	return bus;
}

static void
bus_stop(Bus *bus)
{
	g_dbus_connection_close_sync(bus->root, NULL, NULL);
	g_clear_object(&bus->root);
	g_subprocess_force_exit(bus->process);
	g_subprocess_wait(bus->process, NULL, NULL);
	g_clear_object(&bus->process);
	g_free(bus->address);
	g_free(bus);
}

/* confabd as the system service on @bus (DBUS_SYSTEM_BUS_ADDRESS). */
static ConfabTestDaemon *
daemon_start(Bus *bus)
{
	const gchar *args[] = {"--bus=system", NULL};
	ConfabTestDaemon *daemon = confab_test_daemon_start(NULL, args);

	g_assert_true(confab_test_wait_until(name_owned, bus, 20000));
	return daemon;
}

static GVariant *
call_as_root(Bus *bus, const gchar *interface, const gchar *method, GVariant *args)
{
	g_autoptr(GError) error = NULL;
	GVariant *reply = g_dbus_connection_call_sync(bus->root,
						      "org.confab.Confab1",
						      "/org/confab/Confab1",
						      interface,
						      method,
						      args,
						      NULL,
						      G_DBUS_CALL_FLAGS_NONE,
						      20000,
						      NULL,
						      &error);
	g_assert_no_error(error);
	return reply;
}

/* root reads every property, and may administer. */
static void
assert_root_reads(Bus *bus)
{
	g_autoptr(GVariant) version = NULL;
	g_autoptr(GVariant) all = NULL;
	g_autoptr(GVariant) props = NULL;
	g_autoptr(GVariant) agents = NULL;
	g_autoptr(GVariant) value = NULL;

	version = call_as_root(bus,
			       "org.freedesktop.DBus.Properties",
			       "Get",
			       g_variant_new("(ss)", ADMIN, "Version"));
	g_variant_get(version, "(v)", &value);
	g_assert_cmpstr(g_variant_get_string(value, NULL), ==, PACKAGE_VERSION);

	all = call_as_root(bus,
			   "org.freedesktop.DBus.Properties",
			   "GetAll",
			   g_variant_new("(s)", ADMIN));
	props = g_variant_get_child_value(all, 0);
	for (guint i = 0; i < 4; i++) {
		const gchar *names[] = {"Version", "ListenAddress", "ActiveTurns", "TurnsServed"};
		g_autoptr(GVariant) v = g_variant_lookup_value(props, names[i], NULL);
		g_assert_nonnull(v);
	}
	agents = call_as_root(bus, ADMIN, "ListAgents", NULL);
}

/* ---------- the tests ---------- */

static gchar *
shipped_policy(void)
{
	g_autofree gchar *path =
	    g_build_filename(g_getenv("MESON_BUILD_ROOT"), "data", "org.confab.Confab1.conf", NULL);
	g_autofree gchar *text = NULL;
	const gchar *start;
	const gchar *end;

	/* the file's <busconfig> body goes into ours */
	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	start = strstr(text, "<busconfig>");
	end = strstr(text, "</busconfig>");
	g_assert_nonnull(start);
	g_assert_nonnull(end);
	start += strlen("<busconfig>");
	return g_strndup(start, end - start);
}

static void
test_shipped_policy(void)
{
	g_autofree gchar *policy = shipped_policy();
	Bus *bus = bus_start(policy);
	g_autoptr(ConfabTestDaemon) daemon = daemon_start(bus);
	g_autofree gchar *get = NULL;
	g_autofree gchar *get_all = NULL;
	g_autofree gchar *admin = NULL;
	g_autofree gchar *introspect = NULL;
	g_autofree gchar *chat = NULL;

	/* the bus itself turns nobody away from the Admin properties... */
	get = call_as_nobody(bus->address, "get");
	assert_denied(get, BUS_REFUSED);
	get_all = call_as_nobody(bus->address, "get-all");
	assert_denied(get_all, BUS_REFUSED);
	admin = call_as_nobody(bus->address, "list-agents");
	assert_denied(admin, BUS_REFUSED);

	/* ...but not from what any local user may do */
	introspect = call_as_nobody(bus->address, "introspect");
	g_assert_true(g_str_has_prefix(introspect, "OK "));
	chat = call_as_nobody(bus->address, "chat");
	g_assert_true(g_str_has_prefix(chat, "ERROR org.confab.Confab1.Error."));

	assert_root_reads(bus);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	bus_stop(bus);
}

static void
test_daemon_checks(void)
{
	Bus *bus = bus_start(open_policy);
	g_autoptr(ConfabTestDaemon) daemon = daemon_start(bus);
	g_autofree gchar *get = NULL;
	g_autofree gchar *get_all = NULL;
	g_autofree gchar *admin = NULL;

	/* the bus lets everything through: confabd refuses */
	get = call_as_nobody(bus->address, "get");
	assert_denied(get, DAEMON_REFUSED);
	get_all = call_as_nobody(bus->address, "get-all");
	assert_denied(get_all, DAEMON_REFUSED);
	admin = call_as_nobody(bus->address, "list-agents");
	assert_denied(admin, DAEMON_REFUSED);

	assert_root_reads(bus);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	bus_stop(bus);
}

gint
main(gint argc, gchar **argv)
{
	g_autofree gchar *dbus_daemon = NULL;
	g_autofree gchar *address = NULL;
	struct passwd *nobody;
	gint ret;

	if (argc == 4 && g_str_equal(argv[1], "--client"))
		return client_main(argv[2], argv[3]);

	confab_test_init(&argc, &argv, FALSE);
	dbus_daemon = g_find_program_in_path("dbus-daemon");
	if (dbus_daemon == NULL) {
		g_printerr("SKIP: dbus-daemon is not installed (apt-get install dbus-daemon)\n");
		return CONFAB_TEST_SKIP;
	}
	if (g_getenv("CONFABD") == NULL || g_getenv("MESON_BUILD_ROOT") == NULL) {
		g_printerr("SKIP: CONFABD or MESON_BUILD_ROOT is not set; run the tests with meson "
			   "test\n");
		return CONFAB_TEST_SKIP;
	}
	/* a client of another user, and the bus and confabd as root as on a
	 * real system */
	if (getuid() != 0) {
		g_printerr("SKIP: the policy test runs clients as another user, which only root "
			   "can do\n");
		return CONFAB_TEST_SKIP;
	}
	nobody = getpwnam("nobody");
	if (nobody != NULL) {
		nobody_uid = nobody->pw_uid;
		nobody_gid = nobody->pw_gid;
	}
	/* confabd finds the bus there (set before any thread could read the
	 * environment); nobody must reach the socket in it */
	bus_dir = confab_test_make_tmpdir("policy-bus");
	g_assert_cmpint(g_chmod(bus_dir, 0755), ==, 0);
	address = g_strdup_printf("unix:path=%s/system_bus_socket", bus_dir);
	g_setenv("DBUS_SYSTEM_BUS_ADDRESS", address, TRUE);

	g_test_add_func("/confab/dbus-policy/shipped-policy", test_shipped_policy);
	g_test_add_func("/confab/dbus-policy/daemon-checks", test_daemon_checks);
	ret = g_test_run();
	confab_test_rm_rf(bus_dir);
	g_free(bus_dir);
	return ret;
}
