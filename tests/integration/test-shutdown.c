/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <signal.h>
#include <string.h>

#include "confab-test-helper.h"

/*
 * Graceful stop: SIGTERM while streams are open. Within the grace period
 * the streams finish; past it they end with an error event and [DONE].
 * Either way everything is committed and confabd exits 0 in time; new
 * turns meanwhile get 503 shutting_down.
 *
 * The upstream is a slow OpenAI-compatible stream served from a thread of
 * this test: one chunk every CHUNK_MS.
 */

#define CHUNK_MS 200

typedef struct {
	GThread *thread;
	GMainContext *context;
	GMainLoop *loop;
	SoupServer *server;
	gchar *url;
	guint chunks; /* per answer */
	GMutex lock;
	GCond cond;
} Upstream;

typedef struct {
	SoupServerMessage *msg;
	guint sent;
	guint total;
	GSource *timer;
} Streaming;

static void
streaming_free(Streaming *s)
{
	if (s->timer != NULL) {
		g_source_destroy(s->timer);
		g_source_unref(s->timer);
	}
	g_object_unref(s->msg);
	g_free(s);
}

static gboolean
send_chunk(gpointer data)
{
	Streaming *s = data;
	SoupMessageBody *body = soup_server_message_get_response_body(s->msg);
	g_autofree gchar *event = NULL;

	if (s->sent < s->total) {
		event = g_strdup_printf(
		    "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,"
		    "\"model\":\"slow\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"w%u \"},"
		    "\"finish_reason\":null}]}\n\n",
		    s->sent);
		s->sent++;
		soup_message_body_append(body, SOUP_MEMORY_COPY, event, strlen(event));
		soup_server_message_unpause(s->msg);
		return G_SOURCE_CONTINUE;
	}
	event = g_strdup("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,"
			 "\"model\":\"slow\",\"choices\":[{\"index\":0,\"delta\":{},"
			 "\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
	soup_message_body_append(body, SOUP_MEMORY_COPY, event, strlen(event));
	soup_message_body_complete(body);
	soup_server_message_unpause(s->msg);
	g_clear_pointer(&s->timer, g_source_unref);
	return G_SOURCE_REMOVE;
}

static void
on_finished(SoupServerMessage *msg, gpointer data)
{
	Streaming *s = data;
	if (s->timer != NULL)
		g_source_destroy(s->timer);
}

static void
upstream_handler(SoupServer *server,
		 SoupServerMessage *msg,
		 const char *path,
		 GHashTable *query,
		 gpointer data)
{
	Upstream *up = data;
	Streaming *s = g_new0(Streaming, 1);

	s->msg = g_object_ref(msg);
	s->total = up->chunks;
	soup_server_message_set_status(msg, 200, NULL);
	soup_message_headers_set_encoding(soup_server_message_get_response_headers(msg),
					  SOUP_ENCODING_CHUNKED);
	soup_message_headers_set_content_type(soup_server_message_get_response_headers(msg),
					      "text/event-stream",
					      NULL);
	s->timer = g_timeout_source_new(CHUNK_MS);
	g_source_set_callback(s->timer, send_chunk, s, NULL);
	g_source_attach(s->timer, up->context);
	g_signal_connect(msg, "finished", G_CALLBACK(on_finished), s);
	g_object_set_data_full(G_OBJECT(msg), "streaming", s, (GDestroyNotify)streaming_free);
	soup_server_message_pause(msg);
}

static gpointer
upstream_thread(gpointer data)
{
	Upstream *up = data;
	g_autoptr(GError) error = NULL;
	GSList *uris;

	g_main_context_push_thread_default(up->context);
	up->server = soup_server_new(NULL, NULL);
	soup_server_add_handler(up->server, "/v1/chat/completions", upstream_handler, up, NULL);
	soup_server_listen_local(up->server, 0, SOUP_SERVER_LISTEN_IPV4_ONLY, &error);
	g_assert_no_error(error);
	uris = soup_server_get_uris(up->server);
	g_mutex_lock(&up->lock);
	up->url = g_strdup_printf("http://127.0.0.1:%d/v1", g_uri_get_port(uris->data));
	g_cond_signal(&up->cond);
	g_mutex_unlock(&up->lock);
	g_slist_free_full(uris, (GDestroyNotify)g_uri_unref);
	g_main_loop_run(up->loop);
	soup_server_disconnect(up->server);
	g_clear_object(&up->server);
	g_main_context_pop_thread_default(up->context);
	return NULL;
}

static Upstream *
upstream_start(guint chunks)
{
	Upstream *up = g_new0(Upstream, 1);
	up->chunks = chunks;
	up->context = g_main_context_new();
	up->loop = g_main_loop_new(up->context, FALSE);
	g_mutex_init(&up->lock);
	g_cond_init(&up->cond);
	g_mutex_lock(&up->lock);
	up->thread = g_thread_new("upstream", upstream_thread, up);
	while (up->url == NULL)
		g_cond_wait(&up->cond, &up->lock);
	g_mutex_unlock(&up->lock);
	return up;
}

static void
upstream_stop(Upstream *up)
{
	g_main_loop_quit(up->loop);
	g_thread_join(up->thread);
	g_main_loop_unref(up->loop);
	g_main_context_unref(up->context);
	g_free(up->url);
	g_free(up);
}

/* ---------- streaming clients ---------- */

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *agent;
	gint first_event; /* atomic */
	GString *body;
	gchar *session_id;
	gboolean failed;
} Client;

static gpointer
client_thread(gpointer data)
{
	Client *c = data;
	g_autoptr(SoupSession) session = soup_session_new();
	g_autofree gchar *uri = g_strconcat(c->daemon->url, "/api/v1/chat/completions", NULL);
	g_autofree gchar *auth = g_strdup_printf("Bearer %s", c->token);
	g_autofree gchar *json = g_strdup_printf("{\"model\":\"%s\",\"stream\":true,\"messages\":[{"
						 "\"role\":\"user\",\"content\":\"go\"}]}",
						 c->agent);
	g_autoptr(GBytes) req = g_bytes_new(json, strlen(json));
	g_autoptr(SoupMessage) msg = soup_message_new("POST", uri);
	g_autoptr(GInputStream) stream = NULL;
	g_autoptr(GError) error = NULL;

	soup_message_headers_replace(soup_message_get_request_headers(msg), "Authorization", auth);
	soup_message_set_request_body_from_bytes(msg, "application/json", req);
	stream = soup_session_send(session, msg, NULL, &error);
	if (stream == NULL || soup_message_get_status(msg) != 200) {
		c->failed = TRUE;
		g_atomic_int_set(&c->first_event, 1);
		return NULL;
	}
	c->session_id = g_strdup(
	    soup_message_headers_get_one(soup_message_get_response_headers(msg), "x-session-id"));
	for (;;) {
		gchar buf[4096];
		gssize n = g_input_stream_read(stream, buf, sizeof(buf), NULL, &error);
		if (n <= 0)
			break;
		g_string_append_len(c->body, buf, n);
		if (strstr(c->body->str, "\"content\":\"w0 \"") != NULL)
			g_atomic_int_set(&c->first_event, 1);
	}
	if (error != NULL)
		c->failed = TRUE;
	g_atomic_int_set(&c->first_event, 1);
	return NULL;
}

static gboolean
all_started(gpointer data)
{
	Client *clients = data;
	for (guint i = 0; i < 3; i++) {
		if (!g_atomic_int_get(&clients[i].first_event))
			return FALSE;
	}
	return TRUE;
}

static gchar *
last_status(ConfabTestDaemon *daemon, const gchar *token, const gchar *session_id)
{
	g_autofree gchar *path =
	    g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session_id);
	g_autoptr(ConfabTestResponse) r = confab_test_http(daemon, "GET", path, token, NULL);
	JsonArray *data;
	g_assert_cmpuint(r->status, ==, 200);
	data = json_node_get_array(confab_test_json_get(r->json, "data"));
	g_assert_cmpuint(json_array_get_length(data), ==, 2);
	return g_strdup(
	    json_object_get_string_member(json_array_get_object_element(data, 1), "status"));
}

static void
run_sigterm(guint chunks, guint grace, gboolean expect_complete)
{
	Upstream *up = upstream_start(chunks);
	g_autofree gchar *config = g_strdup_printf("[daemon]\nshutdown_grace=%u\n", grace);
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(config, NULL);
	g_autofree gchar *state_dir = g_strdup(daemon->state_dir);
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	GVariantBuilder props;
	g_autofree gchar *agent = NULL;
	g_autoptr(ConfabTestDaemon) again = NULL;
	Client clients[3] = {0};
	GThread *threads[3];
	gint64 start;
	gint status;

	g_variant_builder_init(&props, G_VARIANT_TYPE_VARDICT);
	g_variant_builder_add(&props, "{sv}", "name", g_variant_new_string("slow"));
	g_variant_builder_add(&props, "{sv}", "provider", g_variant_new_string("openai"));
	g_variant_builder_add(&props, "{sv}", "base_url", g_variant_new_string(up->url));
	g_variant_builder_add(&props, "{sv}", "upstream_model", g_variant_new_string("slow"));
	agent = confab_test_create_agent_props(daemon, g_variant_builder_end(&props));

	for (guint i = 0; i < 3; i++) {
		clients[i].daemon = daemon;
		clients[i].token = token;
		clients[i].agent = agent;
		clients[i].body = g_string_new(NULL);
		threads[i] = g_thread_new("client", client_thread, &clients[i]);
	}
	g_assert_true(confab_test_wait_until(all_started, clients, 20000));

	start = g_get_monotonic_time();
	g_subprocess_send_signal(daemon->process, SIGTERM);
	/* a new turn meanwhile is refused */
	g_usleep(100 * 1000);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, token, agent, NULL, "too late", FALSE);
		confab_test_assert_error(r, 503, "shutting_down");
	}
	for (guint i = 0; i < 3; i++)
		g_thread_join(threads[i]);
	status = confab_test_daemon_stop(daemon);
	g_assert_cmpint(status, ==, 0);
	/* within the grace period, plus the time to flush */
	g_assert_cmpint(g_get_monotonic_time() - start, <, (grace + 5) * G_USEC_PER_SEC);

	daemon->own_state_dir = FALSE;
	again = confab_test_daemon_start_full(state_dir, NULL, NULL);
	again->own_state_dir = TRUE;
	for (guint i = 0; i < 3; i++) {
		g_autofree gchar *stored = NULL;
		g_assert_false(clients[i].failed);
		/* every stream ends with [DONE], whatever happened */
		g_assert_true(g_str_has_suffix(clients[i].body->str, "data: [DONE]\n\n"));
		stored = last_status(again, token, clients[i].session_id);
		if (expect_complete) {
			g_assert_null(strstr(clients[i].body->str, "\"error\""));
			g_assert_nonnull(
			    strstr(clients[i].body->str, "\"finish_reason\":\"stop\""));
			g_assert_cmpstr(stored, ==, "completed");
		} else {
			g_assert_nonnull(strstr(clients[i].body->str, "data: {\"error\":"));
			g_assert_cmpstr(stored, ==, "incomplete");
		}
		g_string_free(clients[i].body, TRUE);
		g_free(clients[i].session_id);
	}
	g_assert_cmpint(confab_test_daemon_stop(again), ==, 0);
	upstream_stop(up);
}

static void
test_streams_finish(void)
{
	/* 8 chunks, 1.6 s, well inside a 10 s grace period */
	run_sigterm(8, 10, TRUE);
}

static void
test_grace_over(void)
{
	/* 100 chunks, 20 s, cut at a 1 s grace period */
	run_sigterm(100, 1, FALSE);
}

gint
main(gint argc, gchar **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
	g_test_add_func("/confab/shutdown/streams-finish", test_streams_finish);
	g_test_add_func("/confab/shutdown/grace-over", test_grace_over);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
