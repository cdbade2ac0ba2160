/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "confab-test-helper.h"

/* Hostile clients on raw sockets: idle and slowloris connections are
 * closed, the connection cap answers 503, bodies over the cap are refused
 * from their head without being read, and the daemon serves on. */

#define CONFIG                                                                                     \
	"[limits]\n"                                                                               \
	"idle_timeout=1\n"                                                                         \
	"max_connections=8\n"                                                                      \
	"max_body_bytes=65536\n"

static GSocketConnection *
raw_connect(ConfabTestDaemon *daemon)
{
	g_autoptr(GSocketClient) client = g_socket_client_new();
	g_autoptr(GError) error = NULL;
	GSocketConnection *conn =
	    g_socket_client_connect_to_uri(client, daemon->url, 80, NULL, &error);
	g_assert_no_error(error);
	g_socket_set_timeout(g_socket_connection_get_socket(conn), 10);
	return conn;
}

/* Writes all of @data; FALSE if the daemon closed first. */
static gboolean
raw_try_send(GSocketConnection *conn, const gchar *data, gsize len)
{
	return g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)),
					 data,
					 len,
					 NULL,
					 NULL,
					 NULL);
}

static void
raw_send(GSocketConnection *conn, const gchar *data, gsize len)
{
	g_assert_true(raw_try_send(conn, data, len));
}

/* Everything the server sends until it closes (or 10 s pass). */
static gchar *
raw_read_all(GSocketConnection *conn)
{
	GString *out = g_string_new(NULL);
	gchar buf[4096];

	for (;;) {
		g_autoptr(GError) error = NULL;
		gssize n = g_socket_receive(g_socket_connection_get_socket(conn),
					    buf,
					    sizeof(buf),
					    NULL,
					    &error);
		if (n <= 0)
			break;
		g_string_append_len(out, buf, n);
	}
	return g_string_free(out, FALSE);
}

static void
assert_still_serving(ConfabTestDaemon *daemon, const gchar *token)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(daemon, "GET", "/api/v1/conversations", token, NULL);
	g_assert_cmpuint(r->status, ==, 200);
}

static void
test_idle_closed(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(CONFIG, NULL);
	g_autoptr(GSocketConnection) conn = raw_connect(daemon);
	gint64 start = g_get_monotonic_time();
	g_autofree gchar *got = raw_read_all(conn);
	gint64 elapsed = g_get_monotonic_time() - start;

	/* closed without a byte, after the idle timeout, well before ours */
	g_assert_cmpstr(got, ==, "");
	g_assert_cmpint(elapsed, >=, G_USEC_PER_SEC / 2);
	g_assert_cmpint(elapsed, <, 8 * G_USEC_PER_SEC);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_slowloris(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(CONFIG, NULL);
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autoptr(GSocketConnection) conn = raw_connect(daemon);
	gint64 start = g_get_monotonic_time();
	gboolean closed = FALSE;

	raw_send(conn, "GET /api/v1/conversations HTTP/1.1\r\nHost: x\r\n", 46);
	/* one header line every 200 ms keeps bytes flowing, but the head
	 * never completes: the deadline is for the whole head */
	for (guint i = 0; i < 50 && !closed; i++) {
		g_usleep(200 * 1000);
		if (!raw_try_send(conn, "X-Slow: y\r\n", 11))
			closed = TRUE;
		else if (g_socket_condition_check(g_socket_connection_get_socket(conn),
						  G_IO_IN | G_IO_HUP) != 0)
			closed = TRUE;
	}
	g_assert_true(closed);
	g_assert_cmpint(g_get_monotonic_time() - start, <, 8 * G_USEC_PER_SEC);
	assert_still_serving(daemon, token);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_connection_cap(void)
{
	g_autoptr(ConfabTestDaemon) daemon =
	    confab_test_daemon_start("[limits]\nmax_connections=4\nidle_timeout=30\n", NULL);
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autoptr(GPtrArray) held = g_ptr_array_new_with_free_func(g_object_unref);
	g_autoptr(GSocketConnection) extra = NULL;
	g_autofree gchar *got = NULL;

	for (guint i = 0; i < 4; i++)
		g_ptr_array_add(held, raw_connect(daemon));
	g_usleep(200 * 1000);
	extra = raw_connect(daemon);
	got = raw_read_all(extra);
	g_assert_true(g_str_has_prefix(got, "HTTP/1.1 503"));
	g_assert_nonnull(strstr(got, "Retry-After:"));
	g_assert_nonnull(strstr(got, "\"type\":\"service_unavailable\""));

	/* freeing the held ones frees the slots */
	g_ptr_array_set_size(held, 0);
	g_usleep(300 * 1000);
	assert_still_serving(daemon, token);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_body_refused_unread(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(CONFIG, NULL);
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autoptr(GSocketConnection) conn = raw_connect(daemon);
	g_autofree gchar *head = g_strdup_printf("POST /api/v1/chat/completions HTTP/1.1\r\n"
						 "Host: x\r\n"
						 "Authorization: Bearer %s\r\n"
						 "Content-Type: application/json\r\n"
						 "Content-Length: 1073741824\r\n\r\n{\"model\":",
						 token);
	g_autofree gchar *got = NULL;

	/* a gigabyte announced, a few bytes sent: the answer comes at once */
	raw_send(conn, head, strlen(head));
	got = raw_read_all(conn);
	g_assert_true(g_str_has_prefix(got, "HTTP/1.1 413"));
	g_assert_nonnull(strstr(got, "\"code\":\"request_too_large\""));
	g_assert_nonnull(strstr(got, "Connection: close"));
	assert_still_serving(daemon, token);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_chunked_over_cap(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(CONFIG, NULL);
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autoptr(GSocketConnection) conn = raw_connect(daemon);
	g_autofree gchar *head = g_strdup_printf("POST /api/v1/chat/completions HTTP/1.1\r\n"
						 "Host: x\r\n"
						 "Authorization: Bearer %s\r\n"
						 "Content-Type: application/json\r\n"
						 "Transfer-Encoding: chunked\r\n\r\n",
						 token);
	g_autofree gchar *chunk = g_strnfill(16384, ' ');
	g_autofree gchar *got = NULL;

	raw_send(conn, head, strlen(head));
	/* 16 KiB chunks up to past the 64 KiB cap, then stop sending */
	for (guint i = 0; i < 6; i++) {
		g_autofree gchar *frame = g_strdup_printf("4000\r\n%s\r\n", chunk);
		if (!raw_try_send(conn, frame, strlen(frame)))
			break;
	}
	got = raw_read_all(conn);
	g_assert_true(g_str_has_prefix(got, "HTTP/1.1 413"));
	assert_still_serving(daemon, token);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_refused_head_with_body(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(CONFIG, NULL);
	g_autoptr(GSocketConnection) conn = raw_connect(daemon);
	const gchar *head = "POST /api/v1/chat/completions HTTP/1.1\r\n"
			    "Host: x\r\n"
			    "Authorization: Bearer nca_wrong\r\n"
			    "Content-Type: application/json\r\n"
			    "Content-Length: 50000\r\n\r\n{";
	g_autofree gchar *got = NULL;

	/* a bad token is refused from the head; the body is never awaited */
	raw_send(conn, head, strlen(head));
	got = raw_read_all(conn);
	g_assert_true(g_str_has_prefix(got, "HTTP/1.1 401"));
	g_assert_nonnull(strstr(got, "WWW-Authenticate: Bearer"));
	g_assert_nonnull(strstr(got, "\"code\":\"invalid_api_key\""));
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_garbage_head(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(CONFIG, NULL);
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	const struct {
		const gchar *head;
		gsize len;
		const gchar *answer; /* the status line's start */
	} heads[] = {
	    {"\x00\x01\x02\r\n\r\n", 7, "HTTP/1.1 400"},
	    {"GET\r\n\r\n", 0, "HTTP/1.1 400"},
	    {"POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
	     0,
	     "HTTP/1.1 400"},
	    /* RFC 9112 6.3: chunked must be the final coding */
	    {"POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
	     "bogus\r\n\r\n",
	     0,
	     "HTTP/1.1 400"},
	    /* RFC 9112 6.1: a coding other than chunked is not implemented */
	    {"POST /api/v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, "
	     "chunked\r\n\r\n",
	     0,
	     "HTTP/1.1 501"},
	    {"GET /api/v1/conversations HTTP/9.9\r\nHost: x\r\n\r\n", 0, "HTTP/1.1 505"},
	    /* empty lines only: a request that never comes */
	    {"\r\n\r\n\r\n", 0, "HTTP/1.1 408"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(heads); i++) {
		g_autoptr(GSocketConnection) conn = raw_connect(daemon);
		g_autofree gchar *got = NULL;
		gsize len = heads[i].len != 0 ? heads[i].len : strlen(heads[i].head);
		raw_send(conn, heads[i].head, len);
		got = raw_read_all(conn);
		g_test_message("head %u: %.60s", i, got);
		g_assert_true(g_str_has_prefix(got, heads[i].answer));
		/* every refusal is the OpenAI error shape, and closes */
		g_assert_nonnull(strstr(got, "Content-Type: application/json\r\n"));
		g_assert_nonnull(strstr(got, "Connection: close\r\n"));
		g_assert_nonnull(strstr(got, "\r\n\r\n{\"error\":{\"message\":"));
	}
	assert_still_serving(daemon, token);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_head_too_large(void)
{
	g_autoptr(ConfabTestDaemon) daemon =
	    confab_test_daemon_start("[limits]\nmax_header_bytes=16384\n", NULL);
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autoptr(GSocketConnection) conn = raw_connect(daemon);
	g_autofree gchar *filler = g_strnfill(1000, 'x');
	g_autoptr(GString) head = g_string_new("GET /api/v1/conversations HTTP/1.1\r\nHost: x\r\n");
	g_autofree gchar *got = NULL;

	/* 100 headers of 1 KB: past the limit, refused before the end */
	for (guint i = 0; i < 100; i++)
		g_string_append_printf(head, "X-Filler-%u: %s\r\n", i, filler);
	g_string_append(head, "\r\n");
	/* the daemon may close while we still write */
	(void)raw_try_send(conn, head->str, head->len);
	got = raw_read_all(conn);
	g_assert_true(g_str_has_prefix(got, "HTTP/1.1 431"));
	g_assert_nonnull(strstr(got, "\"code\":\"request_header_too_large\""));

	/* a head under the limit, with a few KB of headers, is served */
	{
		g_autofree gchar *auth = g_strdup_printf("Authorization: Bearer %s", token);
		g_autofree gchar *ys = g_strnfill(8000, 'y');
		g_autofree gchar *big = g_strdup_printf("X-Big: %s", ys);
		const gchar *headers[] = {auth, big, NULL};
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http_full(daemon, "GET", "/api/v1/conversations", headers, NULL);
		g_assert_cmpuint(r->status, ==, 200);
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static guint
daemon_fds(ConfabTestDaemon *daemon)
{
	g_autofree gchar *path =
	    g_strdup_printf("/proc/%s/fd", g_subprocess_get_identifier(daemon->process));
	g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
	guint n = 0;
	g_assert_nonnull(dir);
	while (g_dir_read_name(dir) != NULL)
		n++;
	return n;
}

/* libsoup alone keeps a connection forever (CLOSE-WAIT) when its client
 * leaves or resets between two requests: every way of leaving must give
 * the file descriptor back. */
static void
test_no_leak_on_leaving(void)
{
	g_autoptr(ConfabTestDaemon) daemon =
	    confab_test_daemon_start("[limits]\nidle_timeout=300\n", NULL);
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autofree gchar *request = g_strdup_printf("GET /api/v1/conversations HTTP/1.1\r\n"
						    "Host: x\r\n"
						    "Authorization: Bearer %s\r\n\r\n",
						    token);
	guint before;
	guint after = 0;

	assert_still_serving(daemon, token);
	g_usleep(200 * 1000);
	before = daemon_fds(daemon);
	for (guint i = 0; i < 60; i++) {
		g_autoptr(GSocketConnection) conn = raw_connect(daemon);
		GSocket *socket = g_socket_connection_get_socket(conn);
		gchar buf[4096];

		raw_send(conn, request, strlen(request));
		switch (i % 3) {
		case 0:
			/* a whole response read, then gone while kept alive */
			(void)g_socket_receive(socket, buf, sizeof(buf), NULL, NULL);
			break;
		case 1:
			/* gone before the response */
			break;
		case 2:
			/* a reset after the response */
			(void)g_socket_receive(socket, buf, sizeof(buf), NULL, NULL);
			{
				struct linger lg = {1, 0};
				setsockopt(g_socket_get_fd(socket),
					   SOL_SOCKET,
					   SO_LINGER,
					   &lg,
					   sizeof(lg));
			}
			break;
		default:
			break;
		}
		g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
	}
	/* every descriptor comes back, well before the idle timeout */
	for (guint tries = 0; tries < 50; tries++) {
		g_usleep(100 * 1000);
		after = daemon_fds(daemon);
		if (after <= before)
			break;
	}
	g_assert_cmpuint(after, <=, before);
	assert_still_serving(daemon, token);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

gint
main(gint argc, gchar **argv)
{
	confab_test_init(&argc, &argv, TRUE);
	g_test_add_func("/confab/hostile/idle-closed", test_idle_closed);
	g_test_add_func("/confab/hostile/slowloris", test_slowloris);
	g_test_add_func("/confab/hostile/connection-cap", test_connection_cap);
	g_test_add_func("/confab/hostile/body-refused-unread", test_body_refused_unread);
	g_test_add_func("/confab/hostile/chunked-over-cap", test_chunked_over_cap);
	g_test_add_func("/confab/hostile/refused-head-with-body", test_refused_head_with_body);
	g_test_add_func("/confab/hostile/garbage-head", test_garbage_head);
	g_test_add_func("/confab/hostile/no-leak-on-leaving", test_no_leak_on_leaving);
	g_test_add_func("/confab/hostile/head-too-large", test_head_too_large);
	return g_test_run();
}
