/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <libsoup/soup.h>
#include <stdlib.h>

/*
 * A tiny libsoup-3 SoupServer, for docs/decisions.md's comparison with
 * Confab's own HTTP/1.1 server (tests/bench/soup-compare): the routes that the
 * framing corpus (tests/integration/http-corpus) asks for, answered the way
 * confabd answers them when the request is well framed, without a store or a
 * token check, so that what is measured is libsoup:
 *
 *   GET  /api/v1/conversations      200, an empty list
 *   GET  /api/v1/models             200, one model (the CPU benchmark's route)
 *   POST /api/v1/chat/completions   200, how many body bytes were read
 *   anything else                   404 route_not_found
 *
 * Usage: soup-server PORT. It prints "soup-server: listening on
 * http://127.0.0.1:PORT" once it listens, and serves until killed.
 */

static void
respond(SoupServerMessage *msg, guint status, const gchar *json)
{
	soup_server_message_set_status(msg, status, NULL);
	soup_server_message_set_response(msg,
					 "application/json",
					 SOUP_MEMORY_COPY,
					 json,
					 strlen(json));
}

static void
handle(SoupServer *server,
       SoupServerMessage *msg,
       const char *path,
       GHashTable *query,
       gpointer user_data)
{
	const gchar *method = soup_server_message_get_method(msg);

	if (g_str_equal(method, "GET") && g_str_equal(path, "/api/v1/conversations")) {
		respond(msg,
			200,
			"{\"object\":\"list\",\"data\":[],\"first_id\":null,\"last_id\":null,"
			"\"has_more\":false}");
	} else if (g_str_equal(method, "GET") && g_str_equal(path, "/api/v1/models")) {
		respond(msg,
			200,
			"{\"object\":\"list\",\"data\":[{\"id\":\"agt_bench\",\"object\":\"model\","
			"\"created\":1700000000,\"owned_by\":\"confab\",\"name\":\"bench\"}]}");
	} else if (g_str_equal(method, "POST") && g_str_equal(path, "/api/v1/chat/completions")) {
		SoupMessageBody *body = soup_server_message_get_request_body(msg);
		g_autofree gchar *json = g_strdup_printf(
		    "{\"object\":\"chat.completion\",\"body_bytes\":%" G_GINT64_FORMAT "}",
		    body->length);
		respond(msg, 200, json);
	} else {
		respond(msg,
			404,
			"{\"error\":{\"message\":\"No such route\",\"type\":\"not_found_error\","
			"\"param\":null,\"code\":\"route_not_found\"}}");
	}
}

int
main(int argc, char **argv)
{
	g_autoptr(SoupServer) server = NULL;
	g_autoptr(GMainLoop) loop = NULL;
	g_autoptr(GError) error = NULL;
	guint64 port = 0;

	if (argc != 2 || !g_ascii_string_to_unsigned(argv[1], 10, 1, 65535, &port, NULL)) {
		g_printerr("usage: soup-server PORT\n");
		return EXIT_FAILURE;
	}
	server = soup_server_new("server-header", "soup-server", NULL);
	soup_server_add_handler(server, NULL, handle, NULL, NULL);
	if (!soup_server_listen_local(server, (guint)port, SOUP_SERVER_LISTEN_IPV4_ONLY, &error)) {
		g_printerr("soup-server: %s\n", error->message);
		return EXIT_FAILURE;
	}
	g_print("soup-server: listening on http://127.0.0.1:%u\n", (guint)port);
	loop = g_main_loop_new(NULL, FALSE);
	g_main_loop_run(loop);
	return EXIT_SUCCESS;
}
