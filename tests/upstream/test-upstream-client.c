/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "upstream/confab-upstream-client.h"

/* The upstream client against a small threaded server: connection reuse,
 * a kept-alive connection the server closed, the connection cap, abort. */

typedef enum {
	SERVE_KEEP,	   /* answer and keep the connection */
	SERVE_CLOSE_AFTER, /* answer, then close without saying so */
	SERVE_HOLD,	   /* read the request, answer nothing until it goes */
	SERVE_FLOOD,	   /* a body without end, as fast as the socket takes it */
} ServeMode;

typedef struct {
	GThreadedSocketService *service;
	guint16 port;
	ServeMode mode;
	gint connections; /* accepted */
	gint requests;	  /* answered */
	gint gone;	  /* connections that ended */
} Server;

/* Reads one request (head and Content-Length body); FALSE at its end. */
static gboolean
read_request(GDataInputStream *in, gsize *body_len)
{
	gsize length = 0;
	gboolean first = TRUE;

	for (;;) {
		g_autofree gchar *line = g_data_input_stream_read_line(in, NULL, NULL, NULL);
		if (line == NULL)
			return FALSE;
		g_strchomp(line);
		if (*line == '\0')
			break;
		if (first)
			g_assert_true(g_str_has_prefix(line, "POST /v1/chat/completions HTTP/1.1"));
		first = FALSE;
		if (g_ascii_strncasecmp(line, "Content-Length:", 15) == 0)
			length = (gsize)g_ascii_strtoull(line + 15, NULL, 10);
	}
	*body_len = length;
	if (length > 0) {
		g_autofree gchar *body = g_malloc(length);
		gsize got = 0;
		if (!g_input_stream_read_all(G_INPUT_STREAM(in), body, length, &got, NULL, NULL) ||
		    got != length)
			return FALSE;
	}
	return TRUE;
}

static gboolean
on_run(GThreadedSocketService *service,
       GSocketConnection *connection,
       GObject *source,
       gpointer user_data)
{
	Server *server = user_data;
	GInputStream *raw = g_io_stream_get_input_stream(G_IO_STREAM(connection));
	GOutputStream *out = g_io_stream_get_output_stream(G_IO_STREAM(connection));
	g_autoptr(GDataInputStream) in = g_data_input_stream_new(raw);
	gsize body_len;

	g_atomic_int_inc(&server->connections);
	g_data_input_stream_set_newline_type(in, G_DATA_STREAM_NEWLINE_TYPE_ANY);
	while (read_request(in, &body_len)) {
		static const gchar chunked[] = "HTTP/1.1 200 OK\r\n"
					       "Content-Type: text/event-stream\r\n"
					       "Transfer-Encoding: chunked\r\n\r\n"
					       "8\r\ndata: hi\r\n"
					       "2\r\n\n\n\r\n"
					       "0\r\n\r\n";
		if (server->mode == SERVE_FLOOD) {
			static const gchar head[] = "HTTP/1.1 200 OK\r\n"
						    "Content-Type: text/event-stream\r\n\r\n";
			g_autofree gchar *block = g_malloc(65536);
			memset(block, ':', 65536);
			if (g_output_stream_write_all(out, head, strlen(head), NULL, NULL, NULL)) {
				/* until the client goes */
				while (
				    g_output_stream_write_all(out, block, 65536, NULL, NULL, NULL))
					;
			}
			break;
		}
		if (server->mode == SERVE_HOLD) {
			gchar byte;
			/* until the client closes */
			(void)g_input_stream_read(raw, &byte, 1, NULL, NULL);
			break;
		}
		if (!g_output_stream_write_all(out, chunked, strlen(chunked), NULL, NULL, NULL))
			break;
		g_atomic_int_inc(&server->requests);
		if (server->mode == SERVE_CLOSE_AFTER)
			break;
	}
	g_io_stream_close(G_IO_STREAM(connection), NULL, NULL);
	g_atomic_int_inc(&server->gone);
	return TRUE;
}

static Server *
server_new(ServeMode mode)
{
	Server *server = g_new0(Server, 1);
	g_autoptr(GError) error = NULL;

	server->mode = mode;
	server->service = G_THREADED_SOCKET_SERVICE(g_threaded_socket_service_new(8));
	server->port =
	    g_socket_listener_add_any_inet_port(G_SOCKET_LISTENER(server->service), NULL, &error);
	g_assert_no_error(error);
	g_signal_connect(server->service, "run", G_CALLBACK(on_run), server);
	g_socket_service_start(G_SOCKET_SERVICE(server->service));
	return server;
}

static gboolean
server_gone(gpointer data);

static void
server_free(Server *server)
{
	/* the clients are gone first (declared after): so are the handlers */
	g_assert_true(confab_test_wait_until(server_gone, server, 10000));
	g_socket_service_stop(G_SOCKET_SERVICE(server->service));
	g_socket_listener_close(G_SOCKET_LISTENER(server->service));
	g_object_unref(server->service);
	g_free(server);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Server, server_free)

typedef struct {
	gboolean sent;
	guint status;
	GString *body;
	gboolean done;
	GError *error;
} Outcome;

static void
on_sent(gpointer user_data)
{
	((Outcome *)user_data)->sent = TRUE;
}

static void
on_head(guint status, const gchar *reason, const ConfabHttpFields *fields, gpointer user_data)
{
	((Outcome *)user_data)->status = status;
}

static void
on_body(const gchar *data, gsize len, gpointer user_data)
{
	g_string_append_len(((Outcome *)user_data)->body, data, len);
}

static void
on_done(GError *error, gpointer user_data)
{
	Outcome *outcome = user_data;
	g_assert_false(outcome->done);
	outcome->done = TRUE;
	outcome->error = error;
}

static const ConfabUpstreamHandler handler = {on_sent, on_head, on_body, on_done};

static void
outcome_clear(Outcome *outcome)
{
	if (outcome->body != NULL)
		g_string_free(outcome->body, TRUE);
	g_clear_error(&outcome->error);
	memset(outcome, 0, sizeof *outcome);
}

static gboolean
outcome_done(gpointer data)
{
	return ((Outcome *)data)->done;
}

static ConfabUpstreamExchange *
post(ConfabUpstreamClient *client, Server *server, Outcome *outcome)
{
	g_autofree gchar *url =
	    g_strdup_printf("http://127.0.0.1:%u/v1/chat/completions", server->port);
	g_autoptr(GBytes) body = g_bytes_new_static("{\"model\":\"m\"}", 13);
	ConfabUpstreamExchange *exchange;

	outcome_clear(outcome);
	outcome->body = g_string_new(NULL);
	exchange = confab_upstream_client_post(client,
					       url,
					       "Authorization: Bearer sk-test\r\n",
					       "application/json",
					       body,
					       &handler,
					       outcome,
					       NULL);
	g_assert_nonnull(exchange);
	return exchange;
}

static void
post_and_wait(ConfabUpstreamClient *client, Server *server, Outcome *outcome)
{
	g_autoptr(ConfabUpstreamExchange) exchange = post(client, server, outcome);
	g_assert_true(confab_test_wait_until(outcome_done, outcome, 10000));
	g_assert_no_error(outcome->error);
	g_assert_true(outcome->sent);
	g_assert_cmpuint(outcome->status, ==, 200);
	g_assert_cmpstr(outcome->body->str, ==, "data: hi\n\n");
}

static gboolean
server_gone(gpointer data)
{
	Server *server = data;
	return g_atomic_int_get(&server->gone) == g_atomic_int_get(&server->connections);
}

static void
test_reuse(void)
{
	g_autoptr(Server) server = server_new(SERVE_KEEP);
	g_autoptr(ConfabUpstreamClient) client = confab_upstream_client_new("test", 8, 60, NULL);
	Outcome outcome = {0};

	for (guint i = 0; i < 20; i++)
		post_and_wait(client, server, &outcome);
	g_assert_cmpint(g_atomic_int_get(&server->requests), ==, 20);
	g_assert_cmpint(g_atomic_int_get(&server->connections), ==, 1);
	g_assert_cmpuint(confab_upstream_client_get_n_connections(client), ==, 1);
	outcome_clear(&outcome);
	g_clear_object(&client);
	/* the pool's connection is closed with the client */
	g_assert_true(confab_test_wait_until(server_gone, server, 10000));
}

static void
test_stale_connection_replaced(void)
{
	g_autoptr(Server) server = server_new(SERVE_CLOSE_AFTER);
	g_autoptr(ConfabUpstreamClient) client = confab_upstream_client_new("test", 8, 60, NULL);
	Outcome outcome = {0};

	for (guint i = 0; i < 5; i++) {
		post_and_wait(client, server, &outcome);
		/* let the close reach us, or not: both must work */
		if (i % 2 == 0)
			g_assert_true(confab_test_wait_until(server_gone, server, 10000));
	}
	g_assert_cmpint(g_atomic_int_get(&server->requests), ==, 5);
	g_assert_cmpint(g_atomic_int_get(&server->connections), ==, 5);
	outcome_clear(&outcome);
}

static gboolean
client_has_no_connection(gpointer data)
{
	return confab_upstream_client_get_n_connections(CONFAB_UPSTREAM_CLIENT(data)) == 0;
}

/* An idle connection the server closes is dropped at once; one left
 * unused for idle_timeout seconds is closed by the client. */
static void
test_idle_connections_go(void)
{
	g_autoptr(Server) closing = server_new(SERVE_CLOSE_AFTER);
	g_autoptr(Server) keeping = server_new(SERVE_KEEP);
	g_autoptr(ConfabUpstreamClient) client = confab_upstream_client_new("test", 8, 1, NULL);
	Outcome outcome = {0};

	post_and_wait(client, closing, &outcome);
	g_assert_true(confab_test_wait_until(client_has_no_connection, client, 10000));

	post_and_wait(client, keeping, &outcome);
	g_assert_cmpuint(confab_upstream_client_get_n_connections(client), ==, 1);
	g_assert_true(confab_test_wait_until(client_has_no_connection, client, 10000));
	g_assert_true(confab_test_wait_until(server_gone, keeping, 10000));
	outcome_clear(&outcome);
}

static void
test_connection_cap(void)
{
	g_autoptr(Server) server = server_new(SERVE_KEEP);
	g_autoptr(ConfabUpstreamClient) client = confab_upstream_client_new("test", 2, 60, NULL);
	Outcome outcomes[6] = {{0}};
	ConfabUpstreamExchange *exchanges[6];

	for (guint i = 0; i < G_N_ELEMENTS(exchanges); i++)
		exchanges[i] = post(client, server, &outcomes[i]);
	g_assert_cmpuint(confab_upstream_client_get_n_connections(client), <=, 2);
	for (guint i = 0; i < G_N_ELEMENTS(exchanges); i++) {
		g_assert_true(confab_test_wait_until(outcome_done, &outcomes[i], 10000));
		g_assert_no_error(outcomes[i].error);
		g_assert_cmpstr(outcomes[i].body->str, ==, "data: hi\n\n");
		confab_upstream_client_exchange_unref(exchanges[i]);
		outcome_clear(&outcomes[i]);
	}
	g_assert_cmpint(g_atomic_int_get(&server->requests), ==, 6);
	g_assert_cmpint(g_atomic_int_get(&server->connections), <=, 2);
}

static void
test_abort(void)
{
	g_autoptr(Server) server = server_new(SERVE_HOLD);
	g_autoptr(ConfabUpstreamClient) client = confab_upstream_client_new("test", 8, 60, NULL);
	Outcome outcome = {0};
	ConfabUpstreamExchange *exchange = post(client, server, &outcome);

	g_assert_true(confab_test_wait_until(outcome_done, &outcome, 300) == FALSE);
	g_assert_true(outcome.sent);
	confab_upstream_client_exchange_abort(exchange);
	confab_upstream_client_exchange_unref(exchange);
	/* the server sees the connection go; nobody hears back */
	g_assert_true(confab_test_wait_until(server_gone, server, 10000));
	g_assert_false(outcome.done);
	g_assert_cmpuint(confab_upstream_client_get_n_connections(client), ==, 0);
	outcome_clear(&outcome);
}

typedef struct {
	ConfabUpstreamExchange *exchange;
	guint64 bytes;
	guint run;	 /* body pieces since the main loop last ran */
	guint max_run;	 /* the longest such run */
	gint64 fired_at; /* monotonic, when the timer ran */
	gboolean done;
} Flood;

static void
on_flood_head(guint status, const gchar *reason, const ConfabHttpFields *fields, gpointer data)
{
	g_assert_cmpuint(status, ==, 200);
}

static void
on_flood_body(const gchar *data, gsize len, gpointer user_data)
{
	Flood *flood = user_data;

	flood->bytes += len;
	flood->run++;
	flood->max_run = MAX(flood->max_run, flood->run);
	/* slower than the server, as a relay that parses is */
	g_usleep(200);
}

/* runs once per main loop iteration while the flood goes on */
static gboolean
on_flood_idle(gpointer user_data)
{
	Flood *flood = user_data;
	flood->run = 0;
	return flood->done ? G_SOURCE_REMOVE : G_SOURCE_CONTINUE;
}

static void
on_flood_done(GError *error, gpointer user_data)
{
	g_error("a flood has no end: %s", error != NULL ? error->message : "done");
}

static const ConfabUpstreamHandler flood_handler = {NULL,
						    on_flood_head,
						    on_flood_body,
						    on_flood_done};

static gboolean
on_flood_timer(gpointer user_data)
{
	Flood *flood = user_data;
	flood->fired_at = g_get_monotonic_time();
	confab_upstream_client_exchange_abort(flood->exchange);
	flood->done = TRUE;
	return G_SOURCE_REMOVE;
}

static gboolean
flood_done(gpointer data)
{
	return ((Flood *)data)->done;
}

/* However fast the upstream sends, the client returns to the main loop
 * every few reads: a timer set for 300 ms fires on time, not when the
 * upstream pauses (it never does). */
static void
test_timers_fire_under_flood(void)
{
	g_autoptr(Server) server = server_new(SERVE_FLOOD);
	g_autoptr(ConfabUpstreamClient) client = confab_upstream_client_new("test", 8, 60, NULL);
	g_autofree gchar *url =
	    g_strdup_printf("http://127.0.0.1:%u/v1/chat/completions", server->port);
	g_autoptr(GBytes) body = g_bytes_new_static("{}", 2);
	Flood flood = {0};
	gint64 start = g_get_monotonic_time();

	flood.exchange = confab_upstream_client_post(client,
						     url,
						     NULL,
						     "application/json",
						     body,
						     &flood_handler,
						     &flood,
						     NULL);
	g_assert_nonnull(flood.exchange);
	g_timeout_add(300, on_flood_timer, &flood);
	g_idle_add_full(G_PRIORITY_DEFAULT, on_flood_idle, &flood, NULL);
	g_assert_true(confab_test_wait_until(flood_done, &flood, 10000));
	/* the idle source goes once it sees the end */
	while (g_main_context_iteration(NULL, FALSE))
		;
	g_test_message("the timer fired after %" G_GINT64_FORMAT " ms, %" G_GUINT64_FORMAT
		       " bytes read, at most %u reads in a row",
		       (flood.fired_at - start) / 1000,
		       flood.bytes,
		       flood.max_run);
	g_assert_cmpint(flood.fired_at - start, <, 1000 * 1000);
	g_assert_cmpuint(flood.bytes, >, 0);
	/* READS_PER_DISPATCH in confab-upstream-client.c */
	g_assert_cmpuint(flood.max_run, <=, 4);
	confab_upstream_client_exchange_unref(flood.exchange);
	g_assert_cmpuint(confab_upstream_client_get_n_connections(client), ==, 0);
}

static void
test_refused_and_bad_url(void)
{
	g_autoptr(ConfabUpstreamClient) client = confab_upstream_client_new("test", 8, 60, NULL);
	g_autoptr(GSocket) socket =
	    g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
	g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
	g_autoptr(GSocketAddress) any = g_inet_socket_address_new(loopback, 0);
	g_autoptr(GSocketAddress) bound = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GBytes) body = g_bytes_new_static("{}", 2);
	g_autofree gchar *url = NULL;
	g_autoptr(ConfabUpstreamExchange) exchange = NULL;
	Outcome outcome = {0};

	/* a port nobody listens on: bound, never listening */
	g_assert_true(g_socket_bind(socket, any, FALSE, NULL));
	bound = g_socket_get_local_address(socket, NULL);
	url = g_strdup_printf("http://127.0.0.1:%u/v1",
			      g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound)));
	outcome.body = g_string_new(NULL);
	exchange = confab_upstream_client_post(client,
					       url,
					       NULL,
					       "application/json",
					       body,
					       &handler,
					       &outcome,
					       NULL);
	g_assert_true(confab_test_wait_until(outcome_done, &outcome, 10000));
	g_assert_error(outcome.error, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED);
	g_assert_false(outcome.sent);
	g_assert_cmpuint(confab_upstream_client_get_n_connections(client), ==, 0);
	outcome_clear(&outcome);

	g_assert_null(confab_upstream_client_post(client,
						  "ftp://example.com/",
						  NULL,
						  "application/json",
						  body,
						  &handler,
						  &outcome,
						  &error));
	g_assert_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED);
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/upstream-client/reuse", test_reuse);
	g_test_add_func("/confab/upstream-client/stale-connection-replaced",
			test_stale_connection_replaced);
	g_test_add_func("/confab/upstream-client/connection-cap", test_connection_cap);
	g_test_add_func("/confab/upstream-client/idle-connections-go", test_idle_connections_go);
	g_test_add_func("/confab/upstream-client/abort", test_abort);
	g_test_add_func("/confab/upstream-client/refused-and-bad-url", test_refused_and_bad_url);
	g_test_add_func("/confab/upstream-client/timers-fire-under-flood",
			test_timers_fire_under_flood);
	return g_test_run();
}
