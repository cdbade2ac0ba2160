/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/confab-error.h"
#include "util/confab-sd-listen.h"

/*
 * confab_sd_listen_fds(): the sd_listen_fds(3) protocol. Descriptors are
 * taken only when $LISTEN_PID is this process; they become close-on-exec;
 * the variables are unset in every case, so that children never see them.
 */

/* Descriptor 3 was free when the test started: the tests may use it. */
static gboolean fd3_free;

static gboolean
skip_unless_fd3_free(void)
{
	if (!fd3_free)
		g_test_skip("descriptor 3 is in use by the test's environment");
	return !fd3_free;
}

static void
set_env(const gchar *pid, const gchar *fds)
{
	g_setenv("LISTEN_PID", pid, TRUE);
	g_setenv("LISTEN_FDS", fds, TRUE);
	g_setenv("LISTEN_FDNAMES", "http", TRUE);
}

static void
assert_env_unset(void)
{
	g_assert_null(g_getenv("LISTEN_PID"));
	g_assert_null(g_getenv("LISTEN_FDS"));
	g_assert_null(g_getenv("LISTEN_FDNAMES"));
}

static void
test_none(void)
{
	g_autoptr(GError) error = NULL;
	g_unsetenv("LISTEN_PID");
	g_unsetenv("LISTEN_FDS");
	g_assert_cmpint(confab_sd_listen_fds(&error), ==, 0);
	g_assert_no_error(error);
}

static void
test_ours(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *pid = g_strdup_printf("%d", (gint)getpid());
	gint sock;

	if (skip_unless_fd3_free())
		return;
	sock = socket(AF_INET, SOCK_STREAM, 0);
	/* a socket at descriptor 3, without close-on-exec, as systemd passes it */
	g_assert_cmpint(sock, >=, 0);
	g_assert_cmpint(dup2(sock, CONFAB_SD_LISTEN_FDS_START), ==, CONFAB_SD_LISTEN_FDS_START);
	if (sock != CONFAB_SD_LISTEN_FDS_START)
		close(sock);
	g_assert_cmpint(fcntl(CONFAB_SD_LISTEN_FDS_START, F_GETFD) & FD_CLOEXEC, ==, 0);

	set_env(pid, "1");
	g_assert_cmpint(confab_sd_listen_fds(&error), ==, 1);
	g_assert_no_error(error);
	assert_env_unset();
	g_assert_cmpint(fcntl(CONFAB_SD_LISTEN_FDS_START, F_GETFD) & FD_CLOEXEC, !=, 0);
	close(CONFAB_SD_LISTEN_FDS_START);
}

static void
test_another_process(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *pid = g_strdup_printf("%d", (gint)getpid() + 1);

	/* inherited from an activated parent: not for us */
	set_env(pid, "1");
	g_assert_cmpint(confab_sd_listen_fds(&error), ==, 0);
	g_assert_no_error(error);
	assert_env_unset();
}

static void
test_malformed(void)
{
	g_autofree gchar *pid = g_strdup_printf("%d", (gint)getpid());
	const gchar *cases[][2] = {
	    {"12x", "1"},
	    {"", "1"},
	    {"0", "1"},
	    {pid, "one"},
	    {pid, "-1"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;
		set_env(cases[i][0], cases[i][1]);
		g_assert_cmpint(confab_sd_listen_fds(&error), ==, -1);
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
		assert_env_unset();
	}
}

static void
test_closed_descriptor(void)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *pid = g_strdup_printf("%d", (gint)getpid());

	/* LISTEN_FDS counts a descriptor that is not open */
	if (skip_unless_fd3_free())
		return;
	set_env(pid, "1");
	g_assert_cmpint(confab_sd_listen_fds(&error), ==, -1);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	assert_env_unset();
}

int
main(int argc, char **argv)
{
	fd3_free = fcntl(CONFAB_SD_LISTEN_FDS_START, F_GETFD) < 0;
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/confab/sd-listen/none", test_none);
	g_test_add_func("/confab/sd-listen/ours", test_ours);
	g_test_add_func("/confab/sd-listen/another-process", test_another_process);
	g_test_add_func("/confab/sd-listen/malformed", test_malformed);
	g_test_add_func("/confab/sd-listen/closed-descriptor", test_closed_descriptor);
	return g_test_run();
}
