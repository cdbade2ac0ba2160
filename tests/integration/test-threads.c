/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "confab-test-helper.h"

/*
 * [daemon] serving_threads = 2, seen from outside the daemon: it runs two
 * threads named confab-http-N, and a load over many connections keeps both
 * of them busy (each wakes up for a fair share of it: its voluntary context
 * switches in /proc), with
 * every turn answered; the connection cap holds for the daemon, not for
 * each thread.
 */

#define CLIENTS		 16
#define TURNS_PER_CLIENT 60

typedef struct {
	gchar *tid;
	guint64 cpu;	  /* utime + stime, clock ticks */
	guint64 switches; /* voluntary context switches */
} ThreadUse;

static void
thread_use_clear(ThreadUse *use)
{
	g_free(use->tid);
}

static const gchar *
daemon_pid(ConfabTestDaemon *daemon)
{
	return g_subprocess_get_identifier(daemon->process);
}

static guint16
daemon_port(ConfabTestDaemon *daemon)
{
	const gchar *colon = strrchr(daemon->url, ':');
	g_assert_nonnull(colon);
	return (guint16)g_ascii_strtoull(colon + 1, NULL, 10);
}

static void
read_use(ConfabTestDaemon *daemon, ThreadUse *use)
{
	g_autofree gchar *stat_path =
	    g_strdup_printf("/proc/%s/task/%s/stat", daemon_pid(daemon), use->tid);
	g_autofree gchar *status_path =
	    g_strdup_printf("/proc/%s/task/%s/status", daemon_pid(daemon), use->tid);
	g_autofree gchar *stat = NULL;
	g_autofree gchar *status = NULL;
	g_auto(GStrv) fields = NULL;
	const gchar *line;

	g_assert_true(g_file_get_contents(stat_path, &stat, NULL, NULL));
	/* after the ")" that ends the name: state is field 3, utime 14 */
	fields = g_strsplit(strrchr(stat, ')') + 2, " ", -1);
	g_assert_cmpuint(g_strv_length(fields), >, 12);
	use->cpu = g_ascii_strtoull(fields[11], NULL, 10) + g_ascii_strtoull(fields[12], NULL, 10);
	g_assert_true(g_file_get_contents(status_path, &status, NULL, NULL));
	line = strstr(status, "\nvoluntary_ctxt_switches:");
	g_assert_nonnull(line);
	use->switches = g_ascii_strtoull(line + strlen("\nvoluntary_ctxt_switches:"), NULL, 10);
}

/* The daemon's threads called confab-http-*, as /proc names them. */
static GArray *
serving_threads(ConfabTestDaemon *daemon)
{
	g_autofree gchar *path = g_strdup_printf("/proc/%s/task", daemon_pid(daemon));
	g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
	GArray *threads = g_array_new(FALSE, TRUE, sizeof(ThreadUse));
	const gchar *tid;

	g_array_set_clear_func(threads, (GDestroyNotify)thread_use_clear);
	g_assert_nonnull(dir);
	while ((tid = g_dir_read_name(dir)) != NULL) {
		g_autofree gchar *comm_path = g_strdup_printf("%s/%s/comm", path, tid);
		g_autofree gchar *comm = NULL;
		ThreadUse use = {0};

		if (!g_file_get_contents(comm_path, &comm, NULL, NULL) ||
		    !g_str_has_prefix(comm, "confab-http-"))
			continue;
		use.tid = g_strdup(tid);
		read_use(daemon, &use);
		g_array_append_val(threads, use);
	}
	return threads;
}

static gint
connect_to(guint16 port)
{
	struct sockaddr_in sin = {0};
	gint fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	g_assert_cmpint(fd, >=, 0);
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	g_assert_cmpint(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), ==, 0);
	return fd;
}

static void
send_all(gint fd, const gchar *data, gsize len)
{
	while (len > 0) {
		gssize n = send(fd, data, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		g_assert_cmpint(n, >, 0);
		data += n;
		len -= n;
	}
}

/* One response with a Content-Length body; its status, or 0 on EOF. */
static guint
read_response(gint fd)
{
	g_autoptr(GString) in = g_string_new(NULL);
	gchar buf[16384];

	for (;;) {
		const gchar *end = strstr(in->str, "\r\n\r\n");
		gssize n;

		if (end != NULL) {
			g_autofree gchar *head = g_ascii_strdown(in->str, end - in->str);
			const gchar *length = strstr(head, "\r\ncontent-length:");
			gsize body = length != NULL ? g_ascii_strtoull(length + 17, NULL, 10) : 0;
			if (in->len - (end + 4 - in->str) >= body)
				return (
				    guint)g_ascii_strtoull(in->str + strlen("HTTP/1.1 "), NULL, 10);
		}
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		g_string_append_len(in, buf, n);
	}
}

typedef struct {
	guint16 port;
	const gchar *request;
	guint answered;
} Client;

static gpointer
client_run(gpointer data)
{
	Client *client = data;
	gint fd = connect_to(client->port);

	for (guint i = 0; i < TURNS_PER_CLIENT; i++) {
		send_all(fd, client->request, strlen(client->request));
		if (read_response(fd) == 200)
			client->answered++;
	}
	close(fd);
	return NULL;
}

static gchar *
chat_request(const gchar *token, const gchar *agent)
{
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]}",
	    agent);
	return g_strdup_printf("POST /api/v1/chat/completions HTTP/1.1\r\n"
			       "Host: x\r\n"
			       "Authorization: Bearer %s\r\n"
			       "Content-Type: application/json\r\n"
			       "Content-Length: %zu\r\n\r\n%s",
			       token,
			       strlen(body),
			       body);
}

static void
test_both_threads_serve(void)
{
	g_autoptr(ConfabTestDaemon) daemon =
	    confab_test_daemon_start("[daemon]\nserving_threads=2\n", NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autofree gchar *request = chat_request(token, agent);
	g_autoptr(GArray) before = serving_threads(daemon);
	Client clients[CLIENTS];
	GThread *threads[CLIENTS];
	guint64 cpu = 0;
	guint64 switches = 0;

	g_assert_cmpuint(before->len, ==, 2);
	for (guint i = 0; i < CLIENTS; i++) {
		clients[i] = (Client){daemon_port(daemon), request, 0};
		threads[i] = g_thread_new("client", client_run, &clients[i]);
	}
	for (guint i = 0; i < CLIENTS; i++) {
		g_thread_join(threads[i]);
		g_assert_cmpuint(clients[i].answered, ==, TURNS_PER_CLIENT);
	}

	/* with 16 connections spread by the kernel, both threads served: each
	 * did a fair part of the work (the odds that all 16 land on one
	 * thread are 2^-15) */
	for (guint i = 0; i < before->len; i++) {
		ThreadUse *use = &g_array_index(before, ThreadUse, i);
		ThreadUse now = {use->tid, 0, 0};
		read_use(daemon, &now);
		use->cpu = now.cpu - use->cpu;
		use->switches = now.switches - use->switches;
		cpu += use->cpu;
		switches += use->switches;
	}
	g_test_message("serving threads: %" G_GUINT64_FORMAT " ticks in all", cpu);
	for (guint i = 0; i < before->len; i++) {
		ThreadUse *use = &g_array_index(before, ThreadUse, i);
		g_test_message("thread %s: %" G_GUINT64_FORMAT " ticks, %" G_GUINT64_FORMAT
			       " voluntary switches",
			       use->tid,
			       use->cpu,
			       use->switches);
		g_assert_cmpuint(use->switches, >=, 20);
		/* CPU time comes in 10 ms ticks: too coarse to compare */
		g_assert_cmpuint(use->switches * 10, >=, switches);
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

/* max_connections is the daemon's: with two threads and three connections
 * held, a fourth is refused, whichever thread it reaches. */
static void
test_connection_cap_is_shared(void)
{
	g_autoptr(ConfabTestDaemon) daemon =
	    confab_test_daemon_start("[daemon]\nserving_threads=2\n[limits]\nmax_connections=3\n",
				     NULL);
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autofree gchar *get = g_strdup_printf("GET /api/v1/conversations HTTP/1.1\r\n"
						"Host: x\r\n"
						"Authorization: Bearer %s\r\n\r\n",
						token);
	gint held[3];
	gint extra;

	for (guint i = 0; i < G_N_ELEMENTS(held); i++) {
		held[i] = connect_to(daemon_port(daemon));
		send_all(held[i], get, strlen(get));
		g_assert_cmpuint(read_response(held[i]), ==, 200);
	}
	for (guint i = 0; i < 4; i++) {
		/* a fresh port each time: another hash, maybe the other thread */
		extra = connect_to(daemon_port(daemon));
		g_assert_cmpuint(read_response(extra), ==, 503);
		close(extra);
	}
	for (guint i = 0; i < G_N_ELEMENTS(held); i++)
		close(held[i]);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

int
main(int argc, char **argv)
{
	gint ret;

	confab_test_init(&argc, &argv, TRUE);
	if (!g_file_test("/proc/self/task", G_FILE_TEST_IS_DIR)) {
		g_printerr("SKIP: no /proc/PID/task to observe the threads in\n");
		return 77;
	}
	g_test_add_func("/confab/threads/both-serve", test_both_threads_serve);
	g_test_add_func("/confab/threads/connection-cap-is-shared", test_connection_cap_is_shared);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
