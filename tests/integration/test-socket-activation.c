/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * Socket activation, as confabd.socket does it: `systemd-socket-activate`
 * listens and starts confabd on the first connection, passing the socket
 * as $LISTEN_FDS. The daemon answers that first connection, says it listens
 * on the passed socket's address (its own --listen names another port), and
 * serves chat turns there, with one serving thread and with two (each
 * thread accepting from its own dup of the one socket).
 */

/* The daemon's threads called confab-http-*, as /proc names them. */
static guint
count_serving_threads(ConfabTestDaemon *daemon)
{
	g_autofree gchar *dir_path =
	    g_strdup_printf("/proc/%s/task", g_subprocess_get_identifier(daemon->process));
	g_autoptr(GDir) dir = g_dir_open(dir_path, 0, NULL);
	const gchar *tid;
	guint n = 0;

	g_assert_nonnull(dir);
	while ((tid = g_dir_read_name(dir)) != NULL) {
		g_autofree gchar *comm_path = g_build_filename(dir_path, tid, "comm", NULL);
		g_autofree gchar *comm = NULL;
		if (g_file_get_contents(comm_path, &comm, NULL, NULL) &&
		    g_str_has_prefix(comm, "confab-http-"))
			n++;
	}
	return n;
}

static void
check_activated(guint threads)
{
	g_autofree gchar *config = g_strdup_printf("[daemon]\nserving_threads=%u\n", threads);
	g_autoptr(ConfabTestDaemon) daemon = NULL;
	g_autofree gchar *agent = NULL;
	g_autofree gchar *token = NULL;
	g_autofree gchar *output = NULL;

	daemon = confab_test_daemon_start_activated(config, NULL);
	/* the passed socket's address, not --listen=127.0.0.1:1 */
	g_assert_true(g_str_has_prefix(daemon->url, "http://127.0.0.1:"));
	g_assert_false(g_str_has_suffix(daemon->url, ":1"));
	output = confab_test_daemon_get_output(daemon);
	g_assert_nonnull(strstr(output, "Execing "));

	agent = confab_test_create_agent(daemon, "activated", "echo");
	token = confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	/* more turns than threads, each on a new connection */
	for (guint i = 0; i < 4 * threads; i++) {
		g_autofree gchar *text = g_strdup_printf("turn %u through the passed socket", i);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, token, agent, NULL, text, i % 2 == 1);
		g_assert_cmpuint(r->status, ==, 200);
		if (i % 2 == 0)
			g_assert_cmpstr(
			    confab_test_json_string(r->json, "choices.0.message.content"),
			    ==,
			    text);
	}

	g_assert_cmpuint(count_serving_threads(daemon), ==, threads > 1 ? threads : 0);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_one_thread(void)
{
	g_autofree gchar *tool = confab_test_have_socket_activate();
	if (tool == NULL) {
		g_test_skip("systemd-socket-activate is not installed (Debian: systemd)");
		return;
	}
	check_activated(1);
}

static void
test_two_threads(void)
{
	g_autofree gchar *tool = confab_test_have_socket_activate();
	if (tool == NULL) {
		g_test_skip("systemd-socket-activate is not installed (Debian: systemd)");
		return;
	}
	check_activated(2);
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
	g_test_add_func("/confab/socket-activation/one-thread", test_one_thread);
	g_test_add_func("/confab/socket-activation/two-threads", test_two_threads);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
