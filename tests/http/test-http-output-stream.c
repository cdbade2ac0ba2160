/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>
#include <sys/socket.h>

#include "confab-http-output-stream.h"
#include "confab-test-helper.h"

/* Which heads are sent together with the body that follows them. */
static void
test_head_with_body(void)
{
	const struct {
		const gchar *text;
		gboolean more;
	} cases[] = {
	    {"HTTP/1.1 200 OK\r\nContent-Length: 468\r\n\r\n", TRUE},
	    {"HTTP/1.1 404 Not Found\r\nServer: x\r\nContent-Length: 9\r\nX: y\r\n\r\n", TRUE},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", FALSE},
	    {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", FALSE},
	    {"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", FALSE},
	    {"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n", FALSE},
	    {"HTTP/1.1 100 Continue\r\nContent-Length: 5\r\n\r\n", FALSE},
	    {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", FALSE}, /* part of a head */
	    {"{\"HTTP/1.1 200\":\"\r\nContent-Length: 5\r\n\r\n\"}", FALSE},
	    {"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", FALSE},
	    {"HTTP/1.1", FALSE},
	    {"", FALSE},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
		g_assert_cmpint(confab_http_output_stream_is_head_with_body(cases[i].text,
									    strlen(cases[i].text)),
				==,
				cases[i].more);
}

/* Whatever it sends, and however, arrives whole and in order. */
static void
test_passes_bytes_through(void)
{
	const gchar *parts[] = {
	    "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n",
	    "hello world",
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
	    "5\r\nhello\r\n",
	    "0\r\n\r\n",
	};
	gint fds[2];
	g_autoptr(GSocket) ours = NULL;
	g_autoptr(GSocket) theirs = NULL;
	g_autoptr(GSocketConnection) connection = NULL;
	g_autoptr(GOutputStream) out = NULL;
	g_autoptr(GString) expected = g_string_new(NULL);
	g_autoptr(GString) got = g_string_new(NULL);
	gchar buffer[256];

	g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), ==, 0);
	ours = g_socket_new_from_fd(fds[0], NULL);
	theirs = g_socket_new_from_fd(fds[1], NULL);
	g_assert_nonnull(ours);
	g_assert_nonnull(theirs);
	connection = g_socket_connection_factory_create_connection(ours);
	out = confab_http_output_stream_new(g_io_stream_get_output_stream(G_IO_STREAM(connection)),
					    ours);
	g_assert_true(g_pollable_output_stream_can_poll(G_POLLABLE_OUTPUT_STREAM(out)));
	g_assert_true(g_pollable_output_stream_is_writable(G_POLLABLE_OUTPUT_STREAM(out)));
	for (guint i = 0; i < G_N_ELEMENTS(parts); i++) {
		g_autoptr(GError) error = NULL;
		gssize n = g_pollable_output_stream_write_nonblocking(G_POLLABLE_OUTPUT_STREAM(out),
								      parts[i],
								      strlen(parts[i]),
								      NULL,
								      &error);
		g_assert_no_error(error);
		g_assert_cmpint(n, ==, (gssize)strlen(parts[i]));
		g_string_append(expected, parts[i]);
	}
	/* a HEAD answer is sent as it is */
	confab_http_output_stream_set_head_request(CONFAB_HTTP_OUTPUT_STREAM(out), TRUE);
	g_assert_cmpint(g_pollable_output_stream_write_nonblocking(G_POLLABLE_OUTPUT_STREAM(out),
								   parts[0],
								   strlen(parts[0]),
								   NULL,
								   NULL),
			==,
			(gssize)strlen(parts[0]));
	g_string_append(expected, parts[0]);

	while (got->len < expected->len) {
		gssize n = g_socket_receive(theirs, buffer, sizeof buffer, NULL, NULL);
		g_assert_cmpint(n, >, 0);
		g_string_append_len(got, buffer, n);
	}
	g_assert_cmpstr(got->str, ==, expected->str);
	/* closing it leaves the connection open */
	g_assert_true(g_output_stream_close(out, NULL, NULL));
	g_assert_false(g_socket_is_closed(ours));
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/http-output-stream/head-with-body", test_head_with_body);
	g_test_add_func("/confab/http-output-stream/passes-bytes-through",
			test_passes_bytes_through);
	return g_test_run();
}
