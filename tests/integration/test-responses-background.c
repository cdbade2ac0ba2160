/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * Background responses (`background: true`), end to end against a real
 * confabd and an upstream that holds its answers until told
 * (confab_test_upstream_start(TRUE)), so that each step happens while the
 * turn is known to be running: queued at once and polled with GET; a
 * stream whose client leaves and whose events are then replayed, whole or
 * after a sequence number; cancel; what a killed daemon leaves; the cap on
 * those running at once; and the stored parameters of any response.
 */

typedef struct {
	ConfabTestDaemon *daemon;
	ConfabTestUpstream *up;
	gchar *agent; /* on @up */
	gchar *token; /* alice */
} Fixture;

static void
setup_with(Fixture *f, const gchar *config)
{
	GVariantDict dict;

	f->up = confab_test_upstream_start(TRUE);
	f->daemon = confab_test_daemon_start(config, NULL);
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "held");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", confab_test_upstream_get_base_url(f->up));
	g_variant_dict_insert(&dict, "upstream_model", "s", "held-model");
	f->agent = confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	setup_with(f, data);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	confab_test_upstream_set_hold(f->up, FALSE);
	if (f->daemon != NULL) {
		g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
		confab_test_daemon_free(f->daemon);
	}
	confab_test_upstream_stop(f->up);
	g_free(f->agent);
	g_free(f->token);
}

static ConfabTestResponse *
post(Fixture *f, const gchar *extra)
{
	g_autofree gchar *body =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":\"Say it\",\"background\":true%s}",
			    f->agent,
			    extra != NULL ? extra : "");
	return confab_test_http(f->daemon, "POST", "/api/v1/responses", f->token, body);
}

static ConfabTestResponse *
get(Fixture *f, const gchar *id, const gchar *query)
{
	g_autofree gchar *path =
	    g_strdup_printf("/api/v1/responses/%s%s", id, query != NULL ? query : "");
	return confab_test_http(f->daemon, "GET", path, f->token, NULL);
}

/* GET until the response's status is @status (the turn runs in the
 * daemon; a bounded wait, not a timing). */
static ConfabTestResponse *
wait_status(Fixture *f, const gchar *id, const gchar *status)
{
	gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

	for (;;) {
		ConfabTestResponse *r = get(f, id, NULL);
		g_assert_cmpuint(r->status, ==, 200);
		if (g_strcmp0(confab_test_json_string(r->json, "status"), status) == 0)
			return r;
		g_assert_cmpint(g_get_monotonic_time(), <, deadline);
		confab_test_response_free(r);
		g_usleep(20000);
	}
}

/* The events of a Responses stream: "event: T\ndata: {…}" blocks. */
static GPtrArray *
events_of(const gchar *text)
{
	GPtrArray *events = g_ptr_array_new_with_free_func((GDestroyNotify)json_node_unref);
	g_auto(GStrv) blocks = g_strsplit(text, "\n\n", -1);

	for (guint i = 0; blocks[i] != NULL; i++) {
		const gchar *data = strstr(blocks[i], "data: ");
		JsonNode *node;
		if (data == NULL)
			continue;
		node = json_from_string(data + strlen("data: "), NULL);
		g_assert_nonnull(node);
		g_ptr_array_add(events, node);
	}
	return events;
}

static GPtrArray *
response_events(ConfabTestResponse *r)
{
	g_autofree gchar *text =
	    g_strndup(g_bytes_get_data(r->body, NULL), g_bytes_get_size(r->body));
	g_assert_cmpstr(soup_message_headers_get_content_type(r->headers, NULL),
			==,
			"text/event-stream");
	return events_of(text);
}

static const gchar *
event_type(GPtrArray *events, guint i)
{
	return confab_test_json_string(g_ptr_array_index(events, i), "type");
}

/* ---------- JSON: queued at once, polled ---------- */

static void
test_json(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) r =
	    post(f,
		 ",\"temperature\":0.25,\"instructions\":\"Be brief.\","
		 "\"metadata\":{\"topic\":\"bg\"},\"tools\":[{\"type\":\"function\",\"name\":"
		 "\"f\",\"parameters\":{}}]");
	g_autoptr(ConfabTestResponse) running = NULL;
	g_autoptr(ConfabTestResponse) done = NULL;
	const gchar *id;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "status"), ==, "queued");
	g_assert_true(json_node_get_boolean(confab_test_json_get(r->json, "background")));
	id = confab_test_json_string(r->json, "id");
	/* the upstream holds the answer: it runs */
	g_assert_true(confab_test_upstream_wait_waiting(f->up, 1, 30000));
	running = wait_status(f, id, "in_progress");
	g_assert_true(json_node_get_boolean(confab_test_json_get(running->json, "background")));
	confab_test_upstream_set_hold(f->up, FALSE);
	done = wait_status(f, id, "completed");
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(done->json, "output"))),
	    >,
	    0);
	g_assert_true(JSON_NODE_HOLDS_VALUE(confab_test_json_get(done->json, "completed_at")));
	/* what its request said */
	g_assert_cmpfloat(json_node_get_double(confab_test_json_get(done->json, "temperature")),
			  ==,
			  0.25);
	g_assert_cmpstr(confab_test_json_string(done->json, "instructions"), ==, "Be brief.");
	g_assert_cmpstr(confab_test_json_string(done->json, "metadata.topic"), ==, "bg");
	g_assert_cmpstr(confab_test_json_string(done->json, "tools.0.name"), ==, "f");
	g_assert_true(json_node_get_boolean(confab_test_json_get(done->json, "background")));
}

/* ---------- a stream whose client leaves, replayed ---------- */

/* POST a background stream by hand; returns the connection, read up to
 * response.in_progress, and the response's id. */
static GSocketConnection *
open_stream(Fixture *f, GString *received, gchar **id)
{
	g_autoptr(GSocketConnection) conn = NULL;
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":\"Say it\",\"stream\":true,\"background\":true}",
	    f->agent);
	g_autofree gchar *request =
	    g_strdup_printf("POST /api/v1/responses HTTP/1.1\r\nHost: x\r\n"
			    "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
			    "Content-Length: %zu\r\n\r\n%s",
			    f->token,
			    strlen(body),
			    body);
	const gchar *at;

	conn = confab_test_raw_open(f->daemon, request, received, "event: response.in_progress\n");
	at = strstr(received->str, "\"id\":\"resp_");
	g_assert_nonnull(at);
	*id = g_strndup(at + strlen("\"id\":\""), strlen("resp_") + 26);
	return g_steal_pointer(&conn);
}

static void
test_stream_replay(Fixture *f, gconstpointer data)
{
	g_autoptr(GString) received = g_string_new(NULL);
	g_autoptr(GSocketConnection) conn = NULL;
	g_autoptr(ConfabTestResponse) done = NULL;
	g_autoptr(ConfabTestResponse) all = NULL;
	g_autoptr(ConfabTestResponse) tail = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autoptr(GPtrArray) after = NULL;
	g_autofree gchar *id = NULL;
	g_autofree gchar *text = NULL;

	conn = open_stream(f, received, &id);
	g_assert_true(confab_test_upstream_wait_waiting(f->up, 1, 30000));
	/* the client goes away: the turn goes on */
	g_io_stream_close(G_IO_STREAM(conn), NULL, NULL);
	g_clear_object(&conn);
	confab_test_upstream_set_hold(f->up, FALSE);
	done = wait_status(f, id, "completed");

	/* every event, from 0 without gaps, the last one terminal */
	all = get(f, id, "?stream=true");
	g_assert_cmpuint(all->status, ==, 200);
	events = response_events(all);
	g_assert_cmpuint(events->len, >=, 4);
	for (guint i = 0; i < events->len; i++)
		g_assert_cmpint(
		    confab_test_json_int(g_ptr_array_index(events, i), "sequence_number"),
		    ==,
		    i);
	g_assert_cmpstr(event_type(events, 0), ==, "response.created");
	g_assert_cmpstr(event_type(events, events->len - 1), ==, "response.completed");
	g_assert_cmpstr(
	    confab_test_json_string(g_ptr_array_index(events, events->len - 1), "response.status"),
	    ==,
	    "completed");
	/* what the first client saw is what was kept: the same response */
	text = g_strdup_printf("\"id\":\"%s\"", id);
	g_assert_nonnull(strstr(received->str, text));
	g_assert_cmpstr(confab_test_json_string(g_ptr_array_index(events, 0), "response.id"),
			==,
			id);

	/* after a sequence number: the rest */
	tail = get(f, id, "?stream=true&starting_after=1");
	after = response_events(tail);
	g_assert_cmpuint(after->len, ==, events->len - 2);
	g_assert_cmpint(confab_test_json_int(g_ptr_array_index(after, 0), "sequence_number"),
			==,
			2);
}

/* A raw GET of the response's stream, read up to @needle. */
static GSocketConnection *
open_replay(Fixture *f, const gchar *id, GString *received, const gchar *needle)
{
	g_autofree gchar *request =
	    g_strdup_printf("GET /api/v1/responses/%s?stream=true HTTP/1.1\r\nHost: x\r\n"
			    "Authorization: Bearer %s\r\n\r\n",
			    id,
			    f->token);
	return confab_test_raw_open(f->daemon, request, received, needle);
}

/* A second client follows the background stream live from GET: it has
 * the events kept so far while the turn still waits for its upstream, then
 * the rest as they come, to the terminal one; and the first client, still
 * there, gets the same. */
static void
test_stream_follow(Fixture *f, gconstpointer data)
{
	g_autoptr(GString) received = g_string_new(NULL);
	g_autoptr(GString) followed = g_string_new(NULL);
	g_autoptr(GSocketConnection) conn = NULL;
	g_autoptr(GSocketConnection) follower = NULL;
	g_autofree gchar *id = NULL;

	conn = open_stream(f, received, &id);
	g_assert_true(confab_test_upstream_wait_waiting(f->up, 1, 30000));
	follower = open_replay(f, id, followed, "event: response.in_progress\n");
	g_assert_null(strstr(followed->str, "response.completed"));
	confab_test_upstream_set_hold(f->up, FALSE);
	confab_test_raw_read_until(follower, followed, "event: response.completed\n");
	confab_test_raw_read_until(conn, received, "event: response.completed\n");
	/* the follower's events end as the first client's do */
	g_assert_nonnull(strstr(followed->str, "event: response.created\n"));
	g_assert_nonnull(strstr(followed->str, "event: response.output_text.done\n"));
}

/* ---------- cancel ---------- */

static void
test_cancel(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) r = post(f, NULL);
	g_autoptr(ConfabTestResponse) c = NULL;
	g_autoptr(ConfabTestResponse) again = NULL;
	g_autoptr(ConfabTestResponse) got = NULL;
	g_autoptr(ConfabTestResponse) plain = NULL;
	g_autoptr(ConfabTestResponse) refused = NULL;
	g_autoptr(ConfabTestResponse) unknown = NULL;
	g_autoptr(ConfabTestResponse) other = NULL;
	g_autofree gchar *path = NULL;
	g_autofree gchar *plain_path = NULL;
	g_autofree gchar *bob = NULL;
	const gchar *id;

	g_assert_cmpuint(r->status, ==, 200);
	id = confab_test_json_string(r->json, "id");
	g_assert_true(confab_test_upstream_wait_waiting(f->up, 1, 30000));
	path = g_strdup_printf("/api/v1/responses/%s/cancel", id);

	/* another owner's: not found, and nothing stops */
	bob = confab_test_create_token(f->daemon, "bob", "chat.completions", NULL, NULL);
	other = confab_test_http(f->daemon, "POST", path, bob, NULL);
	confab_test_assert_error(other, 404, "response_not_found");

	c = confab_test_http(f->daemon, "POST", path, f->token, NULL);
	g_assert_cmpuint(c->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(c->json, "status"), ==, "cancelled");
	g_assert_cmpstr(confab_test_json_string(c->json, "id"), ==, id);
	got = get(f, id, NULL);
	g_assert_cmpstr(confab_test_json_string(got->json, "status"), ==, "cancelled");
	/* idempotent */
	again = confab_test_http(f->daemon, "POST", path, f->token, NULL);
	g_assert_cmpuint(again->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(again->json, "status"), ==, "cancelled");

	/* not created in the background: 400; unknown: 404 */
	confab_test_upstream_set_hold(f->up, FALSE);
	{
		g_autofree gchar *body =
		    g_strdup_printf("{\"model\":\"%s\",\"input\":\"hi\"}", f->agent);
		plain = confab_test_http(f->daemon, "POST", "/api/v1/responses", f->token, body);
	}
	g_assert_cmpuint(plain->status, ==, 200);
	plain_path = g_strdup_printf("/api/v1/responses/%s/cancel",
				     confab_test_json_string(plain->json, "id"));
	refused = confab_test_http(f->daemon, "POST", plain_path, f->token, NULL);
	confab_test_assert_error(refused, 400, "invalid_value");
	unknown = confab_test_http(f->daemon,
				   "POST",
				   "/api/v1/responses/resp_00000000000000000000000000/cancel",
				   f->token,
				   NULL);
	confab_test_assert_error(unknown, 404, "response_not_found");
}

/* ---------- bad input ---------- */

static void
test_refused(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) unstored = post(f, ",\"store\":false");
	g_autoptr(ConfabTestResponse) plain = NULL;
	g_autoptr(ConfabTestResponse) not_stream = NULL;
	g_autoptr(ConfabTestResponse) bad_after = NULL;
	g_autoptr(ConfabTestResponse) bg = NULL;
	g_autoptr(ConfabTestResponse) bg_stream = NULL;
	g_autofree gchar *body = g_strdup_printf("{\"model\":\"%s\",\"input\":\"hi\"}", f->agent);

	confab_test_assert_error(unstored, 400, "invalid_value");
	g_assert_cmpstr(confab_test_json_string(unstored->json, "error.param"), ==, "background");
	confab_test_upstream_set_hold(f->up, FALSE);
	plain = confab_test_http(f->daemon, "POST", "/api/v1/responses", f->token, body);
	g_assert_cmpuint(plain->status, ==, 200);
	not_stream = get(f, confab_test_json_string(plain->json, "id"), "?stream=true");
	confab_test_assert_error(not_stream, 400, "invalid_value");
	bad_after =
	    get(f, confab_test_json_string(plain->json, "id"), "?stream=true&starting_after=x");
	confab_test_assert_error(bad_after, 400, "invalid_value");
	/* background without stream: nothing kept to replay */
	bg = post(f, NULL);
	g_assert_cmpuint(bg->status, ==, 200);
	bg_stream = get(f, confab_test_json_string(bg->json, "id"), "?stream=true");
	confab_test_assert_error(bg_stream, 400, "invalid_value");
}

/* ---------- [responses] max_background ---------- */

static void
test_max_background(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) first = post(f, NULL);
	g_autoptr(ConfabTestResponse) second = post(f, NULL);
	g_autoptr(ConfabTestResponse) third = NULL;
	g_autoptr(ConfabTestResponse) done = NULL;

	g_assert_cmpuint(first->status, ==, 200);
	confab_test_assert_error(second, 429, "rate_limit_exceeded");
	confab_test_upstream_set_hold(f->up, FALSE);
	done = wait_status(f, confab_test_json_string(first->json, "id"), "completed");
	third = post(f, NULL);
	g_assert_cmpuint(third->status, ==, 200);
}

/* ---------- a daemon killed mid-turn ---------- */

/* Nothing stays queued or in progress for ever: the next start (SQLite),
 * or any instance once the dead one's lease has run out (PostgreSQL),
 * fails it with server_error. */
static void
test_killed(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) r = post(f, NULL);
	g_autoptr(ConfabTestResponse) got = NULL;
	g_autofree gchar *state_dir = NULL;
	g_autofree gchar *id = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	id = g_strdup(confab_test_json_string(r->json, "id"));
	g_assert_true(confab_test_upstream_wait_waiting(f->up, 1, 30000));
	state_dir = g_strdup(f->daemon->state_dir);
	f->daemon->own_state_dir = FALSE;
	confab_test_daemon_kill(f->daemon);
	confab_test_daemon_free(f->daemon);
	f->daemon = confab_test_daemon_start_full(state_dir, data, NULL);
	f->daemon->own_state_dir = TRUE;
	/* SQLite: at start; PostgreSQL: once the dead instance's lease has
	 * run out */
	got = wait_status(f, id, "failed");
	g_assert_cmpstr(confab_test_json_string(got->json, "error.code"), ==, "server_error");
}

/* ---------- administration over D-Bus ---------- */

static GVariant *
list_background(Fixture *f, const gchar *owner)
{
	GVariantDict filter;
	g_autoptr(GError) error = NULL;
	GVariant *list = NULL;

	g_variant_dict_init(&filter, NULL);
	if (owner != NULL)
		g_variant_dict_insert(&filter, "owner", "s", owner);
	confab_dbus_admin_call_list_background_responses_sync(f->daemon->admin,
							      g_variant_dict_end(&filter),
							      &list,
							      NULL,
							      &error);
	g_assert_no_error(error);
	return list;
}

static void
test_dbus(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) r = post(f, ",\"stream\":false");
	g_autoptr(ConfabTestResponse) cancelled = NULL;
	g_autoptr(ConfabTestResponse) plain = NULL;
	g_autoptr(GVariant) all = NULL;
	g_autoptr(GVariant) bobs = NULL;
	g_autoptr(GVariant) first = NULL;
	g_autoptr(GVariant) after = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *body = g_strdup_printf("{\"model\":\"%s\",\"input\":\"hi\"}", f->agent);
	g_autofree gchar *remote = NULL;
	const gchar *id;

	g_assert_cmpuint(r->status, ==, 200);
	id = confab_test_json_string(r->json, "id");
	g_assert_true(confab_test_upstream_wait_waiting(f->up, 1, 30000));
	all = list_background(f, NULL);
	g_assert_cmpuint(g_variant_n_children(all), ==, 1);
	first = g_variant_get_child_value(all, 0);
	g_assert_cmpstr(confab_test_variant_string(first, "id"), ==, id);
	g_assert_cmpstr(confab_test_variant_string(first, "owner"), ==, "alice");
	g_assert_cmpstr(confab_test_variant_string(first, "status"), ==, "in_progress");
	bobs = list_background(f, "bob");
	g_assert_cmpuint(g_variant_n_children(bobs), ==, 0);

	/* an administrator stops it */
	confab_dbus_admin_call_cancel_response_sync(f->daemon->admin, id, NULL, &error);
	g_assert_no_error(error);
	cancelled = wait_status(f, id, "cancelled");
	after = list_background(f, NULL);
	g_assert_cmpuint(g_variant_n_children(after), ==, 0);
	/* again: nothing changes */
	confab_dbus_admin_call_cancel_response_sync(f->daemon->admin, id, NULL, &error);
	g_assert_no_error(error);

	confab_test_upstream_set_hold(f->up, FALSE);
	plain = confab_test_http(f->daemon, "POST", "/api/v1/responses", f->token, body);
	g_assert_cmpuint(plain->status, ==, 200);
	confab_dbus_admin_call_cancel_response_sync(f->daemon->admin,
						    confab_test_json_string(plain->json, "id"),
						    NULL,
						    &error);
	g_assert_nonnull(error);
	remote = g_dbus_error_get_remote_error(error);
	g_assert_nonnull(strstr(remote, "InvalidArgument"));
	g_clear_pointer(&remote, g_free);
	g_clear_error(&error);
	confab_dbus_admin_call_cancel_response_sync(f->daemon->admin,
						    "resp_00000000000000000000000000",
						    NULL,
						    &error);
	g_assert_nonnull(error);
	remote = g_dbus_error_get_remote_error(error);
	g_assert_nonnull(strstr(remote, "ResponseNotFound"));
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, TRUE);

	g_test_add("/confab/responses-background/json",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_json,
		   fixture_teardown);
	g_test_add("/confab/responses-background/stream-replay",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_stream_replay,
		   fixture_teardown);
	g_test_add("/confab/responses-background/stream-follow",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_stream_follow,
		   fixture_teardown);
	g_test_add("/confab/responses-background/cancel",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_cancel,
		   fixture_teardown);
	g_test_add("/confab/responses-background/refused",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_refused,
		   fixture_teardown);
	g_test_add("/confab/responses-background/max-background",
		   Fixture,
		   "[responses]\nmax_background = 1\n",
		   fixture_setup,
		   test_max_background,
		   fixture_teardown);
	g_test_add("/confab/responses-background/dbus",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_dbus,
		   fixture_teardown);
	g_test_add("/confab/responses-background/killed",
		   Fixture,
		   "[store]\ninstance_lease = 2\n",
		   fixture_setup,
		   test_killed,
		   fixture_teardown);
	return g_test_run();
}
