/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

#include "confab-test-helper.h"
#include "confab-test-pg.h"

/*
 * Approvals (issue 22), against a real confabd and the MCP project's own
 * filesystem server from npm (tests/mcp): an agent whose `write_file`
 * needs a person's approval. The turn waits with a `tool_event`
 * approval_request in its stream; a decision over HTTP (or D-Bus
 * Chat.Approve) lets the call run or not; nobody deciding declines after
 * [tools] approval_timeout; a client that hangs up does not void the
 * decision. Every refusal of a bad decision is a clear error, and nothing
 * runs because of it. With two daemons on one PostgreSQL database, an
 * approval asked on one is decided on the other.
 */

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent;
	gchar *token;
	gchar *tmpdir;
	gchar *file;		 /* what write_file is asked to write */
	ConfabTestDaemon *other; /* nullable: a second instance (PostgreSQL) */
	gchar *pg_url;		 /* owned, nullable */
} Fixture;

static ConfabTestPg *cluster; /* started by the first PostgreSQL test */

static gchar *
npm_server(const gchar *package)
{
	const gchar *root = g_getenv("MESON_SOURCE_ROOT");
	g_autofree gchar *node = g_find_program_in_path("node");
	g_autofree gchar *script = g_build_filename(root != NULL ? root : ".",
						    "tests",
						    "mcp",
						    "node_modules",
						    "@modelcontextprotocol",
						    package,
						    "dist",
						    "index.js",
						    NULL);

	if (node == NULL || !g_file_test(script, G_FILE_TEST_EXISTS))
		return NULL;
	return g_steal_pointer(&script);
}

static gchar *
create_agent(ConfabTestDaemon *daemon, const gchar *servers_json)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "careful");
	g_variant_dict_insert(&dict, "provider", "s", "echo");
	g_variant_dict_insert(&dict, "mcp_servers", "s", servers_json);
	return confab_test_create_agent_props(daemon, g_variant_dict_end(&dict));
}

static gchar *
filesystem_servers(const gchar *script, const gchar *root)
{
	return g_strdup_printf("{\"mcpServers\":{\"files\":{\"command\":\"node\","
			       "\"args\":[\"%s\",\"%s\"],\"require_approval\":{\"always\":"
			       "{\"tool_names\":[\"write_file\"]}}}}}",
			       script,
			       root);
}

static void
setup_with(Fixture *f, const gchar *config)
{
	g_autofree gchar *script = npm_server("server-filesystem");
	g_autofree gchar *servers = NULL;

	if (script == NULL) {
		g_test_skip("the MCP reference servers are not installed (cd tests/mcp && npm ci)");
		return;
	}
	f->tmpdir = confab_test_make_tmpdir("approvals");
	f->file = g_build_filename(f->tmpdir, "out.txt", NULL);
	f->daemon = confab_test_daemon_start(config, NULL);
	servers = filesystem_servers(script, f->tmpdir);
	f->agent = create_agent(f->daemon, servers);
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	setup_with(f, data);
}

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *path;
	const gchar *token;
} Probe;

static gboolean
knows_agent(gpointer data)
{
	Probe *p = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(p->daemon, "GET", p->path, p->token, NULL);
	return r->status == 200;
}

/* Two daemons on one PostgreSQL database, each on a bus of its own: the
 * fixture's daemon (A) and other (B). */
static void
pg_setup(Fixture *f, gconstpointer data)
{
	g_autofree gchar *script = npm_server("server-filesystem");
	g_autofree gchar *servers = NULL;
	g_autofree gchar *arg = NULL;
	g_autofree gchar *path = NULL;
	const gchar *args[2] = {NULL, NULL};
	Probe probe;

	if (script == NULL) {
		g_test_skip("the MCP reference servers are not installed (cd tests/mcp && npm ci)");
		return;
	}
	if (!confab_test_pg_available()) {
		g_test_skip("PostgreSQL's server binaries are not installed");
		return;
	}
	if (cluster == NULL)
		cluster = confab_test_pg_start();
	f->pg_url = confab_test_pg_new_database(cluster);
	arg = g_strdup_printf("--store-url=%s", f->pg_url);
	args[0] = arg;
	f->tmpdir = confab_test_make_tmpdir("approvals-pg");
	f->file = g_build_filename(f->tmpdir, "out.txt", NULL);
	f->daemon = confab_test_daemon_start_private_bus(data, args);
	f->other = confab_test_daemon_start_private_bus(data, args);
	servers = filesystem_servers(script, f->tmpdir);
	f->agent = create_agent(f->daemon, servers);
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
	path = g_strdup_printf("/api/v1/models/%s", f->agent);
	probe = (Probe){f->other, path, f->token};
	g_assert_true(confab_test_wait_until(knows_agent, &probe, 5000));
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	if (f->other != NULL) {
		g_assert_cmpint(confab_test_daemon_stop(f->other), ==, 0);
		confab_test_daemon_free(f->other);
	}
	g_free(f->pg_url);
	if (f->daemon != NULL) {
		g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
		confab_test_daemon_free(f->daemon);
	}
	if (f->tmpdir != NULL)
		confab_test_rm_rf(f->tmpdir);
	g_free(f->tmpdir);
	g_free(f->file);
	g_free(f->agent);
	g_free(f->token);
}

/* ---------- a streaming client that reads as events come ---------- */

typedef struct {
	GSocketConnection *connection;
	GDataInputStream *in;
} Stream;

static void
stream_free(Stream *s)
{
	g_clear_object(&s->in);
	if (s->connection != NULL)
		g_io_stream_close(G_IO_STREAM(s->connection), NULL, NULL);
	g_clear_object(&s->connection);
	g_free(s);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Stream, stream_free)

static gchar *
write_body(Fixture *f, gboolean stream, const gchar *content)
{
	g_autoptr(JsonNode) node = json_node_new(JSON_NODE_VALUE);
	g_autofree gchar *text =
	    g_strdup_printf("/tool files__write_file {\"path\":\"%s\",\"content\":\"%s\"}",
			    f->file,
			    content);
	g_autofree gchar *quoted = NULL;

	json_node_set_string(node, text);
	quoted = json_to_string(node, FALSE);
	return g_strdup_printf(
	    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":%s}]%s}",
	    f->agent,
	    quoted,
	    stream ? ",\"stream\":true" : "");
}

static Stream *
stream_open(Fixture *f, const gchar *body)
{
	Stream *s = g_new0(Stream, 1);
	g_autoptr(GSocketClient) client = g_socket_client_new();
	g_autoptr(GError) error = NULL;
	g_autofree gchar *request = NULL;
	const gchar *port = strrchr(f->daemon->url, ':') + 1;
	gsize written = 0;

	s->connection =
	    g_socket_client_connect_to_host(client, "127.0.0.1", atoi(port), NULL, &error);
	g_assert_no_error(error);
	g_socket_set_timeout(g_socket_connection_get_socket(s->connection), 60);
	request = g_strdup_printf("POST /api/v1/chat/completions HTTP/1.1\r\nHost: test\r\n"
				  "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
				  "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
				  f->token,
				  strlen(body),
				  body);
	g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(s->connection)),
				  request,
				  strlen(request),
				  &written,
				  NULL,
				  &error);
	g_assert_no_error(error);
	s->in = g_data_input_stream_new(g_io_stream_get_input_stream(G_IO_STREAM(s->connection)));
	g_data_input_stream_set_newline_type(s->in, G_DATA_STREAM_NEWLINE_TYPE_ANY);
	return s;
}

/* The next `data:` JSON object of the stream (chunked framing lines and
 * headers are skipped); NULL at [DONE] or the end. */
static JsonObject *
stream_next(Stream *s)
{
	for (;;) {
		g_autoptr(GError) error = NULL;
		g_autofree gchar *line = g_data_input_stream_read_line(s->in, NULL, NULL, &error);
		g_autoptr(JsonParser) parser = NULL;

		g_assert_no_error(error);
		if (line == NULL)
			return NULL;
		if (!g_str_has_prefix(line, "data: "))
			continue;
		if (g_str_equal(line + 6, "[DONE]"))
			return NULL;
		parser = json_parser_new();
		g_assert_true(json_parser_load_from_data(parser, line + 6, -1, NULL));
		return json_object_ref(json_node_get_object(json_parser_get_root(parser)));
	}
}

/* Reads until a tool_event of @type; returns that event. */
static JsonObject *
stream_until_event(Stream *s, const gchar *type)
{
	for (;;) {
		g_autoptr(JsonObject) chunk = stream_next(s);
		JsonObject *event;

		g_assert_nonnull(chunk);
		if (!json_object_has_member(chunk, "tool_event"))
			continue;
		event = json_object_get_object_member(chunk, "tool_event");
		if (g_str_equal(json_object_get_string_member(event, "type"), type))
			return json_object_ref(event);
	}
}

/* The rest of the stream: its text, and its tool events in @events. */
static gchar *
stream_rest(Stream *s, GPtrArray *events)
{
	GString *text = g_string_new(NULL);
	JsonObject *chunk;

	while ((chunk = stream_next(s)) != NULL) {
		JsonArray *choices = NULL;

		if (json_object_has_member(chunk, "error")) {
			g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), chunk);
			g_autofree gchar *json = json_to_string(node, FALSE);
			g_error("an error in the stream: %s", json);
		}
		choices = json_object_get_array_member(chunk, "choices");
		if (json_object_has_member(chunk, "tool_event") && events != NULL)
			g_ptr_array_add(
			    events,
			    json_object_ref(json_object_get_object_member(chunk, "tool_event")));
		for (guint i = 0; choices != NULL && i < json_array_get_length(choices); i++) {
			JsonObject *delta =
			    json_object_get_object_member(json_array_get_object_element(choices, i),
							  "delta");
			if (json_object_has_member(delta, "content") &&
			    !json_object_get_null_member(delta, "content"))
				g_string_append(text,
						json_object_get_string_member(delta, "content"));
		}
		json_object_unref(chunk);
	}
	return g_string_free(text, FALSE);
}

/* ---------- helpers ---------- */

static void
assert_remote_error(const GError *error, const gchar *name)
{
	g_autofree gchar *remote = NULL;

	g_assert_nonnull(error);
	remote = g_dbus_error_get_remote_error(error);
	g_assert_cmpstr(remote, ==, name);
}

static ConfabTestResponse *
decide(Fixture *f, const gchar *token, const gchar *id, const gchar *body)
{
	g_autofree gchar *path = g_strdup_printf("/api/v1/approvals/%s", id);
	return confab_test_http(f->daemon, "POST", path, token, body);
}

static JsonArray *
assistant_blocks(Fixture *f, const gchar *session_id, const gchar **status)
{
	g_autofree gchar *path =
	    g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session_id);
	g_autoptr(ConfabTestResponse) r = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	JsonArray *data;
	JsonObject *assistant;
	static gchar status_buf[32];

	g_assert_cmpuint(r->status, ==, 200);
	data = json_node_get_array(confab_test_json_get(r->json, "data"));
	if (json_array_get_length(data) < 2)
		return NULL;
	assistant = json_array_get_object_element(data, 1);
	g_assert_cmpstr(json_object_get_string_member(assistant, "role"), ==, "assistant");
	if (status != NULL) {
		g_strlcpy(status_buf,
			  json_object_get_string_member(assistant, "status"),
			  sizeof(status_buf));
		*status = status_buf;
	}
	return json_array_ref(json_object_get_array_member(assistant, "content_blocks"));
}

static JsonObject *
find_block(JsonArray *blocks, const gchar *type)
{
	for (guint i = 0; i < json_array_get_length(blocks); i++) {
		JsonObject *b = json_array_get_object_element(blocks, i);
		if (g_str_equal(json_object_get_string_member(b, "type"), type))
			return b;
	}
	g_error("no %s block", type);
	return NULL;
}

static gint
block_index(JsonArray *blocks, const gchar *type)
{
	for (guint i = 0; i < json_array_get_length(blocks); i++) {
		JsonObject *b = json_array_get_object_element(blocks, i);
		if (g_str_equal(json_object_get_string_member(b, "type"), type))
			return i;
	}
	return -1;
}

static gchar *
metrics(Fixture *f)
{
	g_autofree gchar *token =
	    confab_test_create_token(f->daemon, "ops", "metrics.read", NULL, NULL);
	g_autoptr(ConfabTestResponse) m =
	    confab_test_http(f->daemon, "GET", "/metrics", token, NULL);

	g_assert_cmpuint(m->status, ==, 200);
	return g_strndup(g_bytes_get_data(m->body, NULL), g_bytes_get_size(m->body));
}

/* ---------- the tests ---------- */

/* Denied: the file is left untouched, the model is told the user declined
 * and answers; the request, the decision and the declined result are in
 * the transcript; the turn counted in flight while it waited; a second
 * decision is 409. */
static void
test_deny(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(ConfabTestResponse) again = NULL;
	g_autoptr(GPtrArray) events =
	    g_ptr_array_new_with_free_func((GDestroyNotify)json_object_unref);
	g_autoptr(JsonArray) blocks = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *m = NULL;
	g_autofree gchar *m2 = NULL;
	g_autofree gchar *expected_args = NULL;
	g_autofree gchar *session = NULL;
	JsonObject *b;
	const gchar *status = NULL;

	if (f->daemon == NULL)
		return;
	body = write_body(f, TRUE, "secret plans");
	s = stream_open(f, body);
	request = stream_until_event(s, "approval_request");
	g_assert_true(g_str_has_prefix(json_object_get_string_member(request, "id"), "mcpr_"));
	g_assert_cmpstr(json_object_get_string_member(request, "server"), ==, "files");
	g_assert_cmpstr(json_object_get_string_member(request, "name"), ==, "files__write_file");
	expected_args = g_strdup_printf("{\"path\":\"%s\",\"content\":\"secret plans\"}", f->file);
	g_assert_cmpstr(json_object_get_string_member(request, "arguments"), ==, expected_args);

	/* waiting: nothing written, the turn is in flight */
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	m = metrics(f);
	g_assert_nonnull(strstr(m, "\nconfab_active_turns 1\n"));

	r = decide(f,
		   f->token,
		   json_object_get_string_member(request, "id"),
		   "{\"approve\":false,\"reason\":\"not today\"}");
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "state"), ==, "denied");
	g_assert_cmpstr(confab_test_json_string(r->json, "decided_by"), ==, "api");
	g_assert_cmpstr(confab_test_json_string(r->json, "reason"), ==, "not today");
	session = g_strdup(confab_test_json_string(r->json, "session_id"));

	text = stream_rest(s, events);
	g_assert_nonnull(strstr(text, "declined"));
	g_assert_nonnull(strstr(text, "not today"));
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));

	/* the same decision again: the first stands */
	again =
	    decide(f, f->token, json_object_get_string_member(request, "id"), "{\"approve\":true}");
	confab_test_assert_error(again, 409, "approval_already_decided");
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));

	blocks = assistant_blocks(f, session, &status);
	g_assert_cmpstr(status, ==, "completed");
	g_assert_cmpint(block_index(blocks, "tool_call"),
			<,
			block_index(blocks, "approval_request"));
	g_assert_cmpint(block_index(blocks, "approval_request"),
			<,
			block_index(blocks, "approval"));
	g_assert_cmpint(block_index(blocks, "approval"), <, block_index(blocks, "tool_result"));
	b = find_block(blocks, "approval_request");
	g_assert_cmpstr(json_object_get_string_member(b, "id"),
			==,
			json_object_get_string_member(request, "id"));
	g_assert_cmpstr(json_object_get_string_member(b, "tool_call_id"),
			==,
			json_object_get_string_member(find_block(blocks, "tool_call"), "id"));
	g_assert_cmpstr(json_object_get_string_member(b, "name"), ==, "files__write_file");
	g_assert_cmpstr(json_object_get_string_member(b, "server"), ==, "files");
	g_assert_cmpstr(json_object_get_string_member(b, "arguments"), ==, expected_args);
	b = find_block(blocks, "approval");
	g_assert_false(json_object_get_boolean_member(b, "approve"));
	g_assert_cmpstr(json_object_get_string_member(b, "by"), ==, "api");
	g_assert_cmpstr(json_object_get_string_member(b, "reason"), ==, "not today");
	g_assert_true(
	    json_object_get_boolean_member(find_block(blocks, "tool_result"), "is_error"));

	m2 = metrics(f);
	g_assert_nonnull(strstr(m2, "confab_tool_approvals_total{decision=\"denied\"} 1\n"));
	g_assert_nonnull(strstr(m2, "\nconfab_active_turns 0\n"));
}

/* Approved: the call runs (the file is written) and the loop goes on. */
static void
test_approve(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(GPtrArray) events =
	    g_ptr_array_new_with_free_func((GDestroyNotify)json_object_unref);
	g_autoptr(JsonArray) blocks = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *written = NULL;
	g_autofree gchar *m = NULL;
	gboolean approval_event = FALSE;
	const gchar *status = NULL;
	JsonObject *b;

	if (f->daemon == NULL)
		return;
	body = write_body(f, TRUE, "hello");
	s = stream_open(f, body);
	request = stream_until_event(s, "approval_request");
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	r = decide(f, f->token, json_object_get_string_member(request, "id"), "{\"approve\":true}");
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "state"), ==, "approved");
	text = stream_rest(s, events);
	for (guint i = 0; i < events->len; i++) {
		JsonObject *e = g_ptr_array_index(events, i);
		if (g_str_equal(json_object_get_string_member(e, "type"), "approval")) {
			approval_event = TRUE;
			g_assert_true(json_object_get_boolean_member(e, "approve"));
			g_assert_cmpstr(json_object_get_string_member(e, "by"), ==, "api");
		}
		if (g_str_equal(json_object_get_string_member(e, "type"), "result"))
			g_assert_false(json_object_get_boolean_member(e, "is_error"));
	}
	g_assert_true(approval_event);
	g_assert_true(g_file_get_contents(f->file, &written, NULL, NULL));
	g_assert_cmpstr(written, ==, "hello");
	g_assert_null(strstr(text, "declined"));
	blocks = assistant_blocks(f, confab_test_json_string(r->json, "session_id"), &status);
	g_assert_cmpstr(status, ==, "completed");
	b = find_block(blocks, "approval");
	g_assert_true(json_object_get_boolean_member(b, "approve"));
	g_assert_true(json_object_get_null_member(b, "reason"));
	g_assert_false(
	    json_object_get_boolean_member(find_block(blocks, "tool_result"), "is_error"));
	m = metrics(f);
	g_assert_nonnull(strstr(m, "confab_tool_approvals_total{decision=\"approved\"} 1\n"));
}

/* Nobody decides: after [tools] approval_timeout the call is declined,
 * the model answers, and a late decision is 409. */
static void
test_timeout(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(ConfabTestResponse) late = NULL;
	g_autoptr(JsonArray) blocks = NULL;
	g_autofree gchar *m = NULL;
	const gchar *status = NULL;
	JsonObject *b;
	gint64 start = g_get_monotonic_time();

	if (f->daemon == NULL)
		return;
	body = write_body(f, FALSE, "too late");
	r = confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->token, body);
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpint(g_get_monotonic_time() - start, >=, G_USEC_PER_SEC);
	g_assert_nonnull(strstr(confab_test_json_string(r->json, "choices.0.message.content"),
				"did not approve"));
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	blocks =
	    assistant_blocks(f, confab_test_json_string(r->json, "metadata.session_id"), &status);
	b = find_block(blocks, "approval");
	g_assert_false(json_object_get_boolean_member(b, "approve"));
	g_assert_cmpstr(json_object_get_string_member(b, "by"), ==, "timeout");
	late = decide(f,
		      f->token,
		      json_object_get_string_member(find_block(blocks, "approval_request"), "id"),
		      "{\"approve\":true}");
	confab_test_assert_error(late, 409, "approval_already_decided");
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	m = metrics(f);
	g_assert_nonnull(strstr(m, "confab_tool_approvals_total{decision=\"timed_out\"} 1\n"));
}

typedef struct {
	Fixture *f;
	gchar *session;
} Stored;

static gboolean
answer_stored(gpointer data)
{
	Stored *st = data;
	g_autoptr(JsonArray) blocks = assistant_blocks(st->f, st->session, NULL);
	return blocks != NULL;
}

static gboolean
file_written(gpointer data)
{
	g_autofree gchar *contents = NULL;

	/* the server may create it before it writes it */
	return g_file_get_contents(data, &contents, NULL, NULL) && *contents != '\0';
}

/* The client hangs up while the turn waits: the decision still applies
 * (the file is written), and the answer is stored incomplete with the
 * call, the request, the decision and the result; the model is not
 * called again. */
static void
test_hang_up_then_decide(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(JsonArray) blocks = NULL;
	g_autofree gchar *written = NULL;
	g_autofree gchar *m = NULL;
	const gchar *status = NULL;
	Stored st = {f, NULL};

	if (f->daemon == NULL)
		return;
	body = write_body(f, TRUE, "after you left");
	s = stream_open(f, body);
	request = stream_until_event(s, "approval_request");
	g_clear_pointer(&s, stream_free); /* hang up */
	g_usleep(300 * 1000);
	r = decide(f, f->token, json_object_get_string_member(request, "id"), "{\"approve\":true}");
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_true(confab_test_wait_until(file_written, f->file, 30000));
	g_assert_true(g_file_get_contents(f->file, &written, NULL, NULL));
	g_assert_cmpstr(written, ==, "after you left");
	st.session = g_strdup(confab_test_json_string(r->json, "session_id"));
	g_assert_true(confab_test_wait_until(answer_stored, &st, 30000));
	blocks = assistant_blocks(f, st.session, &status);
	g_assert_cmpstr(status, ==, "incomplete");
	g_assert_true(json_object_get_boolean_member(find_block(blocks, "approval"), "approve"));
	g_assert_false(
	    json_object_get_boolean_member(find_block(blocks, "tool_result"), "is_error"));
	/* no model call after the client left: no text after the result */
	g_assert_cmpint(block_index(blocks, "text"), ==, -1);
	m = metrics(f);
	g_assert_nonnull(strstr(m, "\nconfab_active_turns 0\n"));
	g_free(st.session);
}

/* Bad decisions: each a clear OpenAI-shaped error, and none runs the
 * call; at the end the waiting call is still pending, and is denied. */
static void
test_bad_input(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autofree gchar *bob = NULL;
	g_autofree gchar *other_agent = NULL;
	g_autofree gchar *bound = NULL;
	g_autofree gchar *metrics_only = NULL;
	g_autofree gchar *text = NULL;
	const gchar *id;
	struct {
		const gchar *id;
		const gchar *token; /* NULL: alice's */
		const gchar *body;
		guint status;
		const gchar *code;
	} cases[] = {
	    {"mcpr_01jzzzzzzzzzzzzzzzzzzzzzzz",
	     NULL,
	     "{\"approve\":true}",
	     404,
	     "approval_not_found"},
	    {"not-an-id", NULL, "{\"approve\":true}", 404, "approval_not_found"},
	    {"cts_01jzzzzzzzzzzzzzzzzzzzzzzz",
	     NULL,
	     "{\"approve\":true}",
	     404,
	     "approval_not_found"},
	    {NULL, "bob", "{\"approve\":true}", 404, "approval_not_found"},
	    {NULL, "bound", "{\"approve\":true}", 404, "approval_not_found"},
	    {NULL, "metrics", "{\"approve\":true}", 403, "insufficient_scope"},
	    {NULL, "none", "{\"approve\":true}", 401, "missing_api_key"},
	    {NULL, NULL, "{}", 400, "invalid_value"},
	    {NULL, NULL, "{\"approve\":\"yes\"}", 400, "invalid_value"},
	    {NULL, NULL, "{\"approve\":1}", 400, "invalid_value"},
	    {NULL, NULL, "{\"approve\":true,\"reason\":42}", 400, "invalid_value"},
	    {NULL, NULL, "[true]", 400, "invalid_value"},
	    {NULL, NULL, "{\"approve\":tru", 400, "invalid_json"},
	};

	if (f->daemon == NULL)
		return;
	bob = confab_test_create_token(f->daemon, "bob", "api.full", NULL, NULL);
	other_agent = confab_test_create_agent(f->daemon, "other", "echo");
	bound = confab_test_create_token(f->daemon, "alice", "chat.completions", other_agent, NULL);
	metrics_only = confab_test_create_token(f->daemon, "alice", "metrics.read", NULL, NULL);
	body = write_body(f, TRUE, "never");
	s = stream_open(f, body);
	request = stream_until_event(s, "approval_request");
	id = json_object_get_string_member(request, "id");
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		const gchar *token = cases[i].token == NULL		      ? f->token
				     : g_str_equal(cases[i].token, "bob")     ? bob
				     : g_str_equal(cases[i].token, "bound")   ? bound
				     : g_str_equal(cases[i].token, "metrics") ? metrics_only
									      : NULL;
		g_autoptr(ConfabTestResponse) r =
		    decide(f, token, cases[i].id != NULL ? cases[i].id : id, cases[i].body);
		g_test_message("case %u: %s", i, cases[i].body);
		confab_test_assert_error(r, cases[i].status, cases[i].code);
		g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	}
	{
		/* not JSON at all: 415; and GET is not a decision */
		g_autofree gchar *path = g_strdup_printf("/api/v1/approvals/%s", id);
		g_autofree gchar *auth = g_strdup_printf("Authorization: Bearer %s", f->token);
		const gchar *headers[] = {auth, "Content-Type: text/plain", NULL};
		g_autoptr(GBytes) plain = g_bytes_new_static("approve", 7);
		g_autoptr(ConfabTestResponse) r415 = NULL;
		g_autoptr(ConfabTestResponse) r405 =
		    confab_test_http(f->daemon, "GET", path, f->token, NULL);

		confab_test_assert_error(r405, 405, "method_not_allowed");
		r415 = confab_test_http_full(f->daemon, "POST", path, headers, plain);
		confab_test_assert_error(r415, 415, "unsupported_media_type");
	}
	/* listed for its owner alone: a client that does not read the
	 * stream's events finds what waits */
	{
		g_autoptr(ConfabTestResponse) mine =
		    confab_test_http(f->daemon, "GET", "/api/v1/approvals", f->token, NULL);
		g_autoptr(ConfabTestResponse) bobs =
		    confab_test_http(f->daemon, "GET", "/api/v1/approvals", bob, NULL);
		g_autoptr(ConfabTestResponse) bounds =
		    confab_test_http(f->daemon, "GET", "/api/v1/approvals", bound, NULL);
		g_autoptr(ConfabTestResponse) refused =
		    confab_test_http(f->daemon, "GET", "/api/v1/approvals", metrics_only, NULL);
		JsonArray *listed;

		g_assert_cmpuint(mine->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(mine->json, "object"), ==, "list");
		listed = json_node_get_array(confab_test_json_get(mine->json, "data"));
		g_assert_cmpuint(json_array_get_length(listed), ==, 1);
		g_assert_cmpstr(
		    json_object_get_string_member(json_array_get_object_element(listed, 0), "id"),
		    ==,
		    id);
		g_assert_cmpstr(
		    json_object_get_string_member(json_array_get_object_element(listed, 0),
						  "state"),
		    ==,
		    "pending");
		g_assert_cmpuint(bobs->status, ==, 200);
		g_assert_cmpuint(json_array_get_length(
				     json_node_get_array(confab_test_json_get(bobs->json, "data"))),
				 ==,
				 0);
		g_assert_cmpuint(bounds->status, ==, 200);
		g_assert_cmpuint(json_array_get_length(json_node_get_array(
				     confab_test_json_get(bounds->json, "data"))),
				 ==,
				 0);
		confab_test_assert_error(refused, 403, "insufficient_scope");
	}
	/* still pending: the owner decides now */
	{
		g_autoptr(ConfabTestResponse) r = decide(f, f->token, id, "{\"approve\":false}");
		g_assert_cmpuint(r->status, ==, 200);
	}
	text = stream_rest(s, NULL);
	g_assert_nonnull(strstr(text, "declined"));
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
}

/* D-Bus Chat.Approve: an administrator (the test runs as root or as the
 * daemon's own user) decides alice's approval; unknown and decided ids
 * are Error.ApprovalNotFound and Error.AlreadyDecided. */
static void
test_dbus_approve(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *written = NULL;
	const gchar *id;

	if (f->daemon == NULL)
		return;
	g_assert_nonnull(f->daemon->chat);
	g_assert_false(confab_dbus_chat_call_approve_sync(f->daemon->chat,
							  "mcpr_01jzzzzzzzzzzzzzzzzzzzzzzz",
							  TRUE,
							  NULL,
							  &error));
	g_assert_nonnull(error);
	assert_remote_error(error, "org.confab.Confab1.Error.ApprovalNotFound");
	g_clear_error(&error);

	body = write_body(f, TRUE, "by dbus");
	s = stream_open(f, body);
	request = stream_until_event(s, "approval_request");
	id = json_object_get_string_member(request, "id");
	g_assert_true(confab_dbus_chat_call_approve_sync(f->daemon->chat, id, TRUE, NULL, &error));
	g_assert_no_error(error);
	text = stream_rest(s, NULL);
	g_assert_true(g_file_get_contents(f->file, &written, NULL, NULL));
	g_assert_cmpstr(written, ==, "by dbus");
	g_assert_false(
	    confab_dbus_chat_call_approve_sync(f->daemon->chat, id, FALSE, NULL, &error));
	assert_remote_error(error, "org.confab.Confab1.Error.AlreadyDecided");
	{
		g_autoptr(JsonArray) blocks = NULL;
		g_autofree gchar *path = NULL;
		g_autoptr(ConfabTestResponse) r = NULL;

		/* the decision is recorded as the D-Bus door's */
		path = g_strdup_printf("/api/v1/conversations?limit=1");
		r = confab_test_http(f->daemon, "GET", path, f->token, NULL);
		blocks = assistant_blocks(f, confab_test_json_string(r->json, "data.0.id"), NULL);
		g_assert_cmpstr(json_object_get_string_member(find_block(blocks, "approval"), "by"),
				==,
				"dbus");
	}
}

/* The daemon stops while a call waits: nobody is expected to decide within
 * the grace, so the call is declined at once, the model answers, the
 * client gets the whole answer and the daemon exits cleanly. */
static void
test_stop_while_waiting(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autofree gchar *text = NULL;
	gint64 start;

	if (f->daemon == NULL)
		return;
	body = write_body(f, TRUE, "never written");
	s = stream_open(f, body);
	request = stream_until_event(s, "approval_request");
	start = g_get_monotonic_time();
	g_subprocess_send_signal(f->daemon->process, SIGTERM);
	text = stream_rest(s, NULL);
	g_assert_nonnull(strstr(text, "confabd is stopping"));
	g_assert_true(g_subprocess_wait(f->daemon->process, NULL, NULL));
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	/* well within the shutdown grace (10 s) */
	g_assert_cmpint(g_get_monotonic_time() - start, <, 8 * G_USEC_PER_SEC);
	g_clear_pointer(&f->daemon, confab_test_daemon_free);
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
}

/* The daemon whose turn waited dies (kill -9): nobody waits for the
 * approval any more. Once its timeout has passed (whatever the store knows
 * of the dead daemon), a decision finds it timed out (409) rather than
 * approving a call nobody will run. */
static void
test_orphaned(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	ConfabTestDaemon *dead;

	if (f->daemon == NULL)
		return;
	body = write_body(f, TRUE, "orphan");
	s = stream_open(f, body);
	request = stream_until_event(s, "approval_request");
	dead = f->daemon;
	confab_test_daemon_kill(dead);
	g_clear_pointer(&s, stream_free);
	f->daemon = confab_test_daemon_start_full(dead->state_dir, data, NULL);
	/* past the timeout (1 s), to the second */
	g_usleep(2 * G_USEC_PER_SEC);
	r = decide(f, f->token, json_object_get_string_member(request, "id"), "{\"approve\":true}");
	confab_test_assert_error(r, 409, "approval_already_decided");
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	g_clear_pointer(&f->daemon, confab_test_daemon_free);
	confab_test_daemon_free(dead);
}

/* ---------- after a crash: only a live turn's approval is decided, or listed ---------- */

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *id;
} Listed;

/* Whether GET /api/v1/approvals on @daemon lists @id. */
static gboolean
is_listed(ConfabTestDaemon *daemon, const gchar *token, const gchar *id)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(daemon, "GET", "/api/v1/approvals", token, NULL);
	JsonArray *data;

	g_assert_cmpuint(r->status, ==, 200);
	data = json_node_get_array(confab_test_json_get(r->json, "data"));
	for (guint i = 0; i < json_array_get_length(data); i++) {
		JsonObject *a = json_array_get_object_element(data, i);
		if (g_strcmp0(json_object_get_string_member(a, "id"), id) == 0) {
			g_assert_cmpstr(json_object_get_string_member(a, "state"), ==, "pending");
			return TRUE;
		}
	}
	return FALSE;
}

static gboolean
not_listed(gpointer data)
{
	Listed *l = data;
	return !is_listed(l->daemon, l->token, l->id);
}

/* A stream that waits at an approval_request on f->daemon, which is then
 * killed (SIGKILL) and started again on its state directory (and, on
 * PostgreSQL, its database); returns the request's id. @asked: when the
 * request arrived (monotonic). */
static gchar *
wait_then_crash(Fixture *f, const gchar *config, const gchar *content, gint64 *asked)
{
	g_autofree gchar *body = write_body(f, TRUE, content);
	g_autoptr(Stream) s = stream_open(f, body);
	g_autoptr(JsonObject) request = stream_until_event(s, "approval_request");
	ConfabTestDaemon *dead = f->daemon;
	gchar *id = g_strdup(json_object_get_string_member(request, "id"));

	*asked = g_get_monotonic_time();
	g_assert_true(is_listed(f->daemon, f->token, id));
	confab_test_daemon_kill(dead);
	g_clear_pointer(&s, stream_free);
	/* the state directory is the dead one's: the new daemon keeps it */
	dead->own_state_dir = FALSE;
	f->daemon = confab_test_daemon_start_full(dead->state_dir, config, NULL);
	f->daemon->own_state_dir = TRUE;
	confab_test_daemon_free(dead);
	return id;
}

/* Issue 35, bug 4: the daemon whose turn waits is killed and started
 * again; a decision 5.5 s after the request ([tools] approval_timeout 4)
 * is 409 approval_already_decided, not 200 "approved" for a call that
 * nobody will run. */
static void
test_crash_then_decide(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	gint64 asked = 0;

	if (f->daemon == NULL)
		return;
	id = wait_then_crash(f, data, "after the crash", &asked);
	/* the moment: past the timeout, within its old grace */
	while (g_get_monotonic_time() < asked + 5500 * 1000)
		g_usleep(50 * 1000);
	r = decide(f, f->token, id, "{\"approve\":true}");
	confab_test_assert_error(r, 409, "approval_already_decided");
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	g_assert_false(is_listed(f->daemon, f->token, id));
}

/* Issue 35, bug 5: after the same crash, the approval of the dead turn is
 * timed out: GET /api/v1/approvals does not list it (SQLite: from the
 * start, the one process owning the database; PostgreSQL: once the dead
 * instance's lease, [store] instance_lease, has run out), and a decision
 * is 409, though the timeout has not passed. */
static void
test_crash_then_list(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	gint64 asked = 0;
	Listed l;

	if (f->daemon == NULL)
		return;
	id = wait_then_crash(f, data, "never listed again", &asked);
	l = (Listed){f->daemon, f->token, id};
	if (confab_test_store_is_postgres())
		g_assert_true(confab_test_wait_until(not_listed, &l, 30000));
	else
		g_assert_false(is_listed(f->daemon, f->token, id));
	r = decide(f, f->token, id, "{\"approve\":true}");
	confab_test_assert_error(r, 409, "approval_already_decided");
	/* the timeout (60 s) is far: it was the crash that ended it */
	g_assert_cmpint(g_get_monotonic_time() - asked, <, 50 * G_USEC_PER_SEC);
	g_assert_nonnull(strstr(confab_test_json_string(r->json, "error.message"), "timed out"));
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	g_assert_false(is_listed(f->daemon, f->token, id));
}

/* require_approval is checked with the agent: a bad one is refused by
 * CreateAgent with a message naming the server and the key. */
static void
test_policy_refused(Fixture *f, gconstpointer data)
{
	GVariantDict dict;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *id = NULL;

	if (f->daemon == NULL)
		return;
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "sloppy");
	g_variant_dict_insert(&dict, "provider", "s", "echo");
	g_variant_dict_insert(&dict,
			      "mcp_servers",
			      "s",
			      "{\"mcpServers\":{\"files\":{\"command\":\"x\","
			      "\"require_approval\":\"sometimes\"}}}");
	g_assert_false(confab_dbus_admin_call_create_agent_sync(f->daemon->admin,
								g_variant_dict_end(&dict),
								&id,
								NULL,
								&error));
	assert_remote_error(error, "org.confab.Confab1.Error.InvalidArgument");
	g_assert_nonnull(strstr(error->message, "server “files”: “require_approval” must be"));

	/* a good one is shown back by GetAgent and confabctl agent show */
	{
		g_autoptr(GVariant) agent = NULL;
		g_autoptr(GError) get_error = NULL;
		const gchar *servers = NULL;
		g_autofree gchar *out = NULL;
		g_autofree gchar *err = NULL;
		gint status = -1;
		const gchar *argv[] =
		    {g_getenv("CONFABCTL"), "--session", "agent", "show", f->agent, NULL};

		g_assert_true(confab_dbus_admin_call_get_agent_sync(f->daemon->admin,
								    f->agent,
								    &agent,
								    NULL,
								    &get_error));
		g_assert_no_error(get_error);
		g_assert_true(g_variant_lookup(agent, "mcp_servers", "&s", &servers));
		g_assert_nonnull(
		    strstr(servers,
			   "\"require_approval\":{\"always\":{\"tool_names\":[\"write_file\"]}}"));
		if (argv[0] == NULL)
			return;
		g_assert_true(g_spawn_sync(NULL,
					   (gchar **)argv,
					   NULL,
					   G_SPAWN_DEFAULT,
					   NULL,
					   NULL,
					   &out,
					   &err,
					   &status,
					   &get_error));
		g_assert_no_error(get_error);
		g_assert_cmpint(status, ==, 0);
		g_assert_nonnull(strstr(out, "require_approval"));
		g_assert_nonnull(strstr(out, "write_file"));
	}
}

/* Waiting for a person is not idleness: a JSON turn and a stream that
 * send nothing for longer than [limits] idle_timeout while a call waits
 * are not cut, and answer once it is decided (here: timed out). */
static void
test_wait_longer_than_idle(Fixture *f, gconstpointer data)
{
	g_autofree gchar *json_body = NULL;
	g_autofree gchar *stream_body = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autofree gchar *text = NULL;

	if (f->daemon == NULL)
		return;
	stream_body = write_body(f, TRUE, "stream");
	s = stream_open(f, stream_body);
	request = stream_until_event(s, "approval_request");
	json_body = write_body(f, FALSE, "json");
	r = confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->token, json_body);
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_nonnull(strstr(confab_test_json_string(r->json, "choices.0.message.content"),
				"did not approve"));
	text = stream_rest(s, NULL);
	g_assert_nonnull(strstr(text, "did not approve"));
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
}

/* Two instances on PostgreSQL: the turn waits on A, the decision is made
 * on B (over HTTP, then over B's D-Bus), and A's turn hears it. */
static void
test_across_instances(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *text2 = NULL;
	g_autofree gchar *written = NULL;
	gint64 decided;

	if (f->daemon == NULL)
		return;
	body = write_body(f, TRUE, "decided on B");
	s = stream_open(f, body);
	request = stream_until_event(s, "approval_request");
	r = confab_test_http(f->other,
			     "POST",
			     "/api/v1/approvals/x",
			     f->token,
			     "{\"approve\":true}");
	confab_test_assert_error(r, 404, "approval_not_found");
	g_clear_pointer(&r, confab_test_response_free);
	{
		g_autofree gchar *path =
		    g_strdup_printf("/api/v1/approvals/%s",
				    json_object_get_string_member(request, "id"));
		r = confab_test_http(f->other, "POST", path, f->token, "{\"approve\":true}");
	}
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "state"), ==, "approved");
	decided = g_get_monotonic_time();
	text = stream_rest(s, NULL);
	/* A polls its approvals every 250 ms */
	g_assert_cmpint(g_get_monotonic_time() - decided, <, 5 * G_USEC_PER_SEC);
	g_assert_true(g_file_get_contents(f->file, &written, NULL, NULL));
	g_assert_cmpstr(written, ==, "decided on B");

	/* and over B's D-Bus, a denial */
	g_clear_pointer(&s, stream_free);
	g_clear_pointer(&request, json_object_unref);
	g_free(body);
	g_assert_cmpint(g_unlink(f->file), ==, 0);
	body = write_body(f, TRUE, "denied on B");
	s = stream_open(f, body);
	request = stream_until_event(s, "approval_request");
	g_assert_true(
	    confab_dbus_chat_call_approve_sync(f->other->chat,
					       json_object_get_string_member(request, "id"),
					       FALSE,
					       NULL,
					       &error));
	g_assert_no_error(error);
	text2 = stream_rest(s, NULL);
	g_assert_nonnull(strstr(text2, "declined"));
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
}

static gboolean
reaped_timed_out(gpointer data)
{
	const gchar *const *q = data;
	g_autofree gchar *state = confab_test_pg_query(q[0], q[1]);
	return g_strcmp0(state, "timed_out") == 0;
}

/* Issue 35, bugs 4 and 5 with two instances on PostgreSQL ([store]
 * instance_lease 5 s, approval_timeout far): B sees A's waiting approval
 * as live while A lives, for longer than a lease (A renews it); once A is
 * killed, A's lease runs out, B's heartbeat times the approval out, B no
 * longer lists it, and a decision on B is 409, not "approved". */
static void
test_lease_across_instances(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autofree gchar *query = NULL;
	g_autofree gchar *state = NULL;
	const gchar *id;
	const gchar *q[2];
	gint64 start;
	Listed l;

	if (f->daemon == NULL)
		return;
	body = write_body(f, TRUE, "A was killed");
	s = stream_open(f, body);
	request = stream_until_event(s, "approval_request");
	id = json_object_get_string_member(request, "id");
	g_assert_true(is_listed(f->other, f->token, id));
	/* more than a lease passes: A renews its own, and B still lists it */
	start = g_get_monotonic_time();
	while (g_get_monotonic_time() < start + 8 * G_USEC_PER_SEC)
		g_usleep(100 * 1000);
	g_assert_true(is_listed(f->other, f->token, id));
	g_assert_true(is_listed(f->daemon, f->token, id));

	confab_test_daemon_kill(f->daemon);
	g_clear_pointer(&s, stream_free);
	g_clear_pointer(&f->daemon, confab_test_daemon_free);
	start = g_get_monotonic_time();
	query = g_strdup_printf("SELECT state FROM approvals WHERE id = '%s'", id);
	state = confab_test_pg_query(f->pg_url, query);
	g_assert_cmpstr(state, ==, "pending");
	l = (Listed){f->other, f->token, id};
	g_assert_true(confab_test_wait_until(not_listed, &l, 30000));
	q[0] = f->pg_url;
	q[1] = query;
	/* B's heartbeat reaps A: every third of a lease */
	g_assert_true(confab_test_wait_until(reaped_timed_out, q, 30000));
	g_test_message("A's approval timed out %.1f s after A was killed",
		       (g_get_monotonic_time() - start) / (gdouble)G_USEC_PER_SEC);
	{
		g_autofree gchar *path = g_strdup_printf("/api/v1/approvals/%s", id);
		r = confab_test_http(f->other, "POST", path, f->token, "{\"approve\":true}");
	}
	confab_test_assert_error(r, 409, "approval_already_decided");
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
}

/* ---------- the Responses API: mcp_approval_request, mcp_approval_response ---------- */

static gchar *
responses_body(Fixture *f, const gchar *content, const gchar *extra)
{
	g_autoptr(JsonNode) node = json_node_new(JSON_NODE_VALUE);
	g_autofree gchar *text =
	    g_strdup_printf("/tool files__write_file {\"path\":\"%s\",\"content\":\"%s\"}",
			    f->file,
			    content);
	g_autofree gchar *quoted = NULL;

	json_node_set_string(node, text);
	quoted = json_to_string(node, FALSE);
	return g_strdup_printf("{\"model\":\"%s\",\"input\":%s%s}",
			       f->agent,
			       quoted,
			       extra != NULL ? extra : "");
}

static gchar *
answer_body(Fixture *f, const gchar *previous, const gchar *items)
{
	return g_strdup_printf("{\"model\":\"%s\",\"previous_response_id\":\"%s\",\"input\":[%s]}",
			       f->agent,
			       previous,
			       items);
}

static ConfabTestResponse *
respond(ConfabTestDaemon *daemon, const gchar *token, const gchar *body)
{
	return confab_test_http(daemon, "POST", "/api/v1/responses", token, body);
}

/* The response's output items of @type, in order. */
static GPtrArray *
items_of(JsonNode *response, const gchar *type)
{
	GPtrArray *items = g_ptr_array_new_with_free_func((GDestroyNotify)json_object_unref);
	JsonArray *output = json_node_get_array(confab_test_json_get(response, "output"));

	for (guint i = 0; i < json_array_get_length(output); i++) {
		JsonObject *item = json_array_get_object_element(output, i);
		if (g_str_equal(json_object_get_string_member(item, "type"), type))
			g_ptr_array_add(items, json_object_ref(item));
	}
	return items;
}

static guint
n_items(JsonNode *response, const gchar *type)
{
	g_autoptr(GPtrArray) items = items_of(response, type);
	return items->len;
}

/* A response asks; nothing runs until its continuation answers. */
static JsonObject *
ask(Fixture *f, ConfabTestDaemon *daemon, const gchar *content, gchar **response_id)
{
	g_autofree gchar *body = responses_body(f, content, NULL);
	g_autoptr(ConfabTestResponse) r = respond(daemon, f->token, body);
	g_autoptr(GPtrArray) requests = NULL;
	g_autofree gchar *expected_args = NULL;
	JsonObject *request;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "status"), ==, "completed");
	requests = items_of(r->json, "mcp_approval_request");
	g_assert_cmpuint(requests->len, ==, 1);
	g_assert_cmpuint(n_items(r->json, "mcp_call"), ==, 0);
	request = g_ptr_array_index(requests, 0);
	g_assert_true(g_str_has_prefix(json_object_get_string_member(request, "id"), "mcpr_"));
	g_assert_cmpstr(json_object_get_string_member(request, "server_label"), ==, "files");
	g_assert_cmpstr(json_object_get_string_member(request, "name"), ==, "write_file");
	expected_args = g_strdup_printf("{\"path\":\"%s\",\"content\":\"%s\"}", f->file, content);
	g_assert_cmpstr(json_object_get_string_member(request, "arguments"), ==, expected_args);
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	*response_id = g_strdup(confab_test_json_string(r->json, "id"));
	return json_object_ref(request);
}

/* A response in a conversation asks; an mcp_approval_response item added
 * to the conversation decides it then (the same item again is a record),
 * and the conversation's next response runs the call, once. */
static void
test_conversation_item_answers_response(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) made = NULL;
	g_autoptr(ConfabTestResponse) asked = NULL;
	g_autoptr(ConfabTestResponse) added = NULL;
	g_autoptr(ConfabTestResponse) again = NULL;
	g_autoptr(ConfabTestResponse) next = NULL;
	g_autoptr(ConfabTestResponse) later = NULL;
	g_autoptr(GPtrArray) requests = NULL;
	g_autofree gchar *extra = NULL;
	g_autofree gchar *body = NULL;
	g_autofree gchar *path = NULL;
	g_autofree gchar *decision = NULL;
	g_autofree gchar *go_on = NULL;
	g_autofree gchar *written = NULL;
	const gchar *conversation;

	if (f->daemon == NULL)
		return;
	made = confab_test_http(f->daemon, "POST", "/api/v1/conversations", f->token, "{}");
	g_assert_cmpuint(made->status, ==, 200);
	conversation = confab_test_json_string(made->json, "id");
	extra = g_strdup_printf(",\"conversation\":\"%s\"", conversation);
	body = responses_body(f, "asked in a conversation", extra);
	asked = respond(f->daemon, f->token, body);
	g_assert_cmpuint(asked->status, ==, 200);
	requests = items_of(asked->json, "mcp_approval_request");
	g_assert_cmpuint(requests->len, ==, 1);

	path = g_strdup_printf("/api/v1/conversations/%s/items", conversation);
	decision = g_strdup_printf(
	    "{\"items\":[{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\","
	    "\"approve\":true}]}",
	    json_object_get_string_member(g_ptr_array_index(requests, 0), "id"));
	added = confab_test_http(f->daemon, "POST", path, f->token, decision);
	g_assert_cmpuint(added->status, ==, 200);
	/* decided, not run: no turn runs it yet */
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	{
		/* POST /approvals finds it decided */
		g_autofree gchar *direct_path = g_strdup_printf(
		    "/api/v1/approvals/%s",
		    json_object_get_string_member(g_ptr_array_index(requests, 0), "id"));
		g_autoptr(ConfabTestResponse) direct = confab_test_http(f->daemon,
									"POST",
									direct_path,
									f->token,
									"{\"approve\":false}");
		g_assert_cmpuint(direct->status, >=, 400);
	}
	again = confab_test_http(f->daemon, "POST", path, f->token, decision);
	g_assert_cmpuint(again->status, ==, 200);

	go_on = g_strdup_printf("{\"model\":\"%s\",\"input\":\"go on\",\"conversation\":\"%s\"}",
				f->agent,
				conversation);
	next = respond(f->daemon, f->token, go_on);
	g_assert_cmpuint(next->status, ==, 200);
	g_assert_cmpuint(n_items(next->json, "mcp_call"), ==, 1);
	g_assert_true(g_file_get_contents(f->file, &written, NULL, NULL));
	g_assert_cmpstr(written, ==, "asked in a conversation");
	/* once */
	later = respond(f->daemon, f->token, go_on);
	g_assert_cmpuint(later->status, ==, 200);
	g_assert_cmpuint(n_items(later->json, "mcp_call"), ==, 0);
}

/* Approved: the continuation runs the call (an mcp_call item) and the
 * model answers; the stored responses say the same; the request cannot
 * be answered twice, nor over POST /api/v1/approvals. */
static void
test_responses_approve(Fixture *f, gconstpointer data)
{
	g_autofree gchar *first = NULL;
	g_autofree gchar *body = NULL;
	g_autofree gchar *item = NULL;
	g_autofree gchar *written = NULL;
	g_autofree gchar *path = NULL;
	g_autofree gchar *m = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(ConfabTestResponse) again = NULL;
	g_autoptr(ConfabTestResponse) stored = NULL;
	g_autoptr(ConfabTestResponse) asked = NULL;
	g_autoptr(ConfabTestResponse) direct = NULL;
	g_autoptr(GPtrArray) calls = NULL;
	g_autoptr(GPtrArray) stored_calls = NULL;
	g_autoptr(GPtrArray) stored_requests = NULL;
	g_autoptr(JsonObject) other = NULL;
	g_autofree gchar *second_id = NULL;
	JsonObject *call;

	if (f->daemon == NULL)
		return;
	request = ask(f, f->daemon, "approved", &first);
	/* nobody waits for it: past approval_timeout (1 s, to the second), and
	 * though no turn of a live instance waits for it, it is still pending */
	g_usleep(2500 * 1000);
	item = g_strdup_printf("{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\","
			       "\"approve\":true}",
			       json_object_get_string_member(request, "id"));
	body = answer_body(f, first, item);
	r = respond(f->daemon, f->token, body);
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "status"), ==, "completed");
	g_assert_cmpstr(confab_test_json_string(r->json, "previous_response_id"), ==, first);
	g_assert_true(g_file_get_contents(f->file, &written, NULL, NULL));
	g_assert_cmpstr(written, ==, "approved");
	calls = items_of(r->json, "mcp_call");
	g_assert_cmpuint(calls->len, ==, 1);
	call = g_ptr_array_index(calls, 0);
	g_assert_cmpstr(json_object_get_string_member(call, "server_label"), ==, "files");
	g_assert_cmpstr(json_object_get_string_member(call, "name"), ==, "write_file");
	g_assert_true(json_object_get_null_member(call, "error"));
	g_assert_nonnull(json_object_get_string_member(call, "output"));
	g_assert_cmpuint(n_items(r->json, "message"), ==, 1);

	/* stored as served */
	path = g_strdup_printf("/api/v1/responses/%s", confab_test_json_string(r->json, "id"));
	stored = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(stored->status, ==, 200);
	stored_calls = items_of(stored->json, "mcp_call");
	g_assert_cmpuint(stored_calls->len, ==, 1);
	g_assert_cmpstr(json_object_get_string_member(g_ptr_array_index(stored_calls, 0), "id"),
			==,
			json_object_get_string_member(call, "id"));
	g_assert_cmpstr(json_object_get_string_member(g_ptr_array_index(stored_calls, 0), "output"),
			==,
			json_object_get_string_member(call, "output"));
	g_free(path);
	path = g_strdup_printf("/api/v1/responses/%s", first);
	asked = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(asked->status, ==, 200);
	stored_requests = items_of(asked->json, "mcp_approval_request");
	g_assert_cmpuint(stored_requests->len, ==, 1);
	/* as it was served: the call that asked is not an mcp_call item */
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(asked->json, "output"))),
	    ==,
	    1);
	g_assert_cmpstr(json_object_get_string_member(g_ptr_array_index(stored_requests, 0), "id"),
			==,
			json_object_get_string_member(request, "id"));

	/* answered: a second answer is refused, and nothing runs again */
	g_assert_cmpint(g_unlink(f->file), ==, 0);
	again = respond(f->daemon, f->token, body);
	confab_test_assert_error(again, 409, "approval_already_decided");
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));

	/* a response's request is its continuation's to answer */
	other = ask(f, f->daemon, "not over the approvals endpoint", &second_id);
	direct =
	    decide(f, f->token, json_object_get_string_member(other, "id"), "{\"approve\":true}");
	confab_test_assert_error(direct, 409, "approval_asked_by_response");
	{
		/* nor is it listed among the calls that wait for a decision */
		g_autoptr(ConfabTestResponse) listed =
		    confab_test_http(f->daemon, "GET", "/api/v1/approvals", f->token, NULL);
		g_assert_cmpuint(listed->status, ==, 200);
		g_assert_cmpuint(json_array_get_length(json_node_get_array(
				     confab_test_json_get(listed->json, "data"))),
				 ==,
				 0);
	}
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));

	m = metrics(f);
	g_assert_nonnull(strstr(m, "confab_tool_approvals_total{decision=\"approved\"} 1\n"));
	g_assert_nonnull(strstr(m, "\nconfab_active_turns 0\n"));
}

/* Events of a Responses stream, by their `event:` lines, each with its
 * data object. */
static GPtrArray *
responses_stream(Fixture *f, const gchar *body)
{
	g_autoptr(ConfabTestResponse) r = respond(f->daemon, f->token, body);
	GPtrArray *events = g_ptr_array_new_with_free_func((GDestroyNotify)json_object_unref);
	g_autofree gchar *text = NULL;
	g_auto(GStrv) lines = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	text = g_strndup(g_bytes_get_data(r->body, NULL), g_bytes_get_size(r->body));
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i] != NULL; i++) {
		g_autoptr(JsonParser) parser = NULL;
		if (!g_str_has_prefix(lines[i], "data: "))
			continue;
		parser = json_parser_new();
		g_assert_true(json_parser_load_from_data(parser, lines[i] + 6, -1, NULL));
		g_ptr_array_add(
		    events,
		    json_object_ref(json_node_get_object(json_parser_get_root(parser))));
	}
	return events;
}

static JsonObject *
find_event(GPtrArray *events, const gchar *type, const gchar *item_type)
{
	for (guint i = 0; i < events->len; i++) {
		JsonObject *e = g_ptr_array_index(events, i);
		if (!g_str_equal(json_object_get_string_member(e, "type"), type))
			continue;
		if (item_type == NULL || (json_object_has_member(e, "item") &&
					  g_str_equal(json_object_get_string_member(
							  json_object_get_object_member(e, "item"),
							  "type"),
						      item_type)))
			return e;
	}
	return NULL;
}

/* Streamed, and declined with a reason: the request is an output item of
 * the stream; the continuation runs nothing, and the model is told. */
static void
test_responses_deny_stream(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(GPtrArray) events = NULL;
	g_autoptr(GPtrArray) events2 = NULL;
	g_autofree gchar *item = NULL;
	g_autofree gchar *answer = NULL;
	g_autofree gchar *m = NULL;
	JsonObject *done, *request, *completed, *response;
	GString *text = g_string_new(NULL);
	g_autofree gchar *all_text = NULL;

	if (f->daemon == NULL) {
		g_string_free(text, TRUE);
		return;
	}
	body = responses_body(f, "never", ",\"stream\":true");
	events = responses_stream(f, body);
	done = find_event(events, "response.output_item.done", "mcp_approval_request");
	g_assert_nonnull(done);
	g_assert_nonnull(find_event(events, "response.output_item.added", "mcp_approval_request"));
	g_assert_null(find_event(events, "response.mcp_call.in_progress", NULL));
	request = json_object_get_object_member(done, "item");
	completed = find_event(events, "response.completed", NULL);
	g_assert_nonnull(completed);
	response = json_object_get_object_member(completed, "response");
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));

	item = g_strdup_printf("{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\","
			       "\"approve\":false,\"reason\":\"not today\"}",
			       json_object_get_string_member(request, "id"));
	answer =
	    g_strdup_printf("{\"model\":\"%s\",\"previous_response_id\":\"%s\",\"stream\":true,"
			    "\"input\":[%s]}",
			    f->agent,
			    json_object_get_string_member(response, "id"),
			    item);
	events2 = responses_stream(f, answer);
	g_assert_nonnull(find_event(events2, "response.completed", NULL));
	g_assert_null(find_event(events2, "response.mcp_call.in_progress", NULL));
	for (guint i = 0; i < events2->len; i++) {
		JsonObject *e = g_ptr_array_index(events2, i);
		if (g_str_equal(json_object_get_string_member(e, "type"),
				"response.output_text.delta"))
			g_string_append(text, json_object_get_string_member(e, "delta"));
	}
	all_text = g_string_free(text, FALSE);
	/* the echo model answers with the declined call's result */
	g_assert_nonnull(strstr(all_text, "declined"));
	g_assert_nonnull(strstr(all_text, "not today"));
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	m = metrics(f);
	g_assert_nonnull(strstr(m, "confab_tool_approvals_total{decision=\"denied\"} 1\n"));
}

/* Each bad answer is a clear error, and runs nothing; the request is still
 * pending after them all, and a new message that ignores it is answered
 * (the call it asked never runs). */
static void
test_responses_bad_input(Fixture *f, gconstpointer data)
{
	g_autofree gchar *first = NULL;
	g_autofree gchar *second = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(JsonObject) request2 = NULL;
	g_autofree gchar *bob = NULL;
	const gchar *id;
	struct {
		const gchar *previous; /* NULL: the first response; "": none */
		const gchar *token;    /* NULL: alice's */
		const gchar *items;    /* %s: the request's id */
		guint status;
		const gchar *code;
	} cases[] = {
	    {NULL,
	     NULL,
	     "{\"type\":\"mcp_approval_response\",\"approval_request_id\":"
	     "\"mcpr_01jzzzzzzzzzzzzzzzzzzzzzzz\",\"approve\":true}",
	     400,
	     "invalid_value"},
	    {NULL,
	     NULL,
	     "{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"nope\",\"approve\":"
	     "true}",
	     400,
	     "invalid_value"},
	    /* the request of another response */
	    {"second",
	     NULL,
	     "{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\",\"approve\":true}",
	     400,
	     "invalid_value"},
	    /* nothing continued */
	    {"",
	     NULL,
	     "{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\",\"approve\":true}",
	     400,
	     "invalid_value"},
	    /* another owner's response */
	    {NULL,
	     "bob",
	     "{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\",\"approve\":true}",
	     404,
	     "response_not_found"},
	    {NULL,
	     NULL,
	     "{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\",\"approve\":"
	     "\"yes\"}",
	     400,
	     "invalid_value"},
	    {NULL,
	     NULL,
	     "{\"type\":\"mcp_approval_response\",\"approve\":true}",
	     400,
	     "invalid_value"},
	    {NULL,
	     NULL,
	     "{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\",\"approve\":true,"
	     "\"reason\":7}",
	     400,
	     "invalid_value"},
	    {NULL,
	     NULL,
	     "{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\",\"approve\":true},"
	     "{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\",\"approve\":"
	     "false}",
	     400,
	     "invalid_value"},
	};

	if (f->daemon == NULL)
		return;
	bob = confab_test_create_token(f->daemon, "bob", "api.full", NULL, NULL);
	request = ask(f, f->daemon, "first", &first);
	id = json_object_get_string_member(request, "id");
	request2 = ask(f, f->daemon, "second", &second);
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_auto(GStrv) parts = g_strsplit(cases[i].items, "%s", -1);
		g_autofree gchar *items = g_strjoinv(id, parts);
		const gchar *previous = cases[i].previous == NULL		   ? first
					: g_str_equal(cases[i].previous, "second") ? second
										   : NULL;
		g_autofree gchar *body =
		    previous != NULL
			? answer_body(f, previous, items)
			: g_strdup_printf("{\"model\":\"%s\",\"input\":[%s]}", f->agent, items);
		g_autoptr(ConfabTestResponse) r =
		    respond(f->daemon, cases[i].token != NULL ? bob : f->token, body);

		g_test_message("case %u: %s", i, body);
		confab_test_assert_error(r, cases[i].status, cases[i].code);
		g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	}
	/* ignored: a new message instead; the model is answered, nothing runs */
	{
		g_autofree gchar *body =
		    g_strdup_printf("{\"model\":\"%s\",\"previous_response_id\":\"%s\","
				    "\"input\":\"never mind\"}",
				    f->agent,
				    second);
		g_autoptr(ConfabTestResponse) r = respond(f->daemon, f->token, body);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(r->json, "status"), ==, "completed");
		g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	}
	/* still pending: the first request is answered now */
	{
		g_autofree gchar *item = g_strdup_printf("{\"type\":\"mcp_approval_response\","
							 "\"approval_request_id\":\"%s\","
							 "\"approve\":true}",
							 id);
		g_autofree gchar *body = answer_body(f, first, item);
		g_autoptr(ConfabTestResponse) r = respond(f->daemon, f->token, body);
		g_autofree gchar *written = NULL;
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_true(g_file_get_contents(f->file, &written, NULL, NULL));
		g_assert_cmpstr(written, ==, "first");
	}
}

/* The MCP project's server-everything, with OpenAI's object policy: every
 * tool but echo needs a person. One response calls both: echo runs inside
 * it, get-sum ends it with a request; approved, the sum runs in the next. */
static void
test_responses_everything(Fixture *f, gconstpointer data)
{
	g_autofree gchar *script = npm_server("server-everything");
	g_autofree gchar *servers = NULL;
	g_autofree gchar *agent = NULL;
	g_autofree gchar *body = NULL;
	g_autofree gchar *item = NULL;
	g_autofree gchar *answer = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(ConfabTestResponse) r2 = NULL;
	g_autoptr(GPtrArray) calls = NULL;
	g_autoptr(GPtrArray) requests = NULL;
	g_autoptr(GPtrArray) calls2 = NULL;
	JsonObject *request, *call;

	if (f->daemon == NULL || script == NULL)
		return;
	servers = g_strdup_printf("{\"mcpServers\":{\"everything\":{\"command\":\"node\","
				  "\"args\":[\"%s\",\"stdio\"],\"require_approval\":{\"never\":"
				  "{\"tool_names\":[\"echo\"]}}}}}",
				  script);
	agent = create_agent(f->daemon, servers);
	body = g_strdup_printf("{\"model\":\"%s\",\"input\":\"/tool everything__echo "
			       "{\\\"message\\\":\\\"hi\\\"}\\n/tool everything__get-sum "
			       "{\\\"a\\\":2,\\\"b\\\":40}\"}",
			       agent);
	r = respond(f->daemon, f->token, body);
	g_assert_cmpuint(r->status, ==, 200);
	calls = items_of(r->json, "mcp_call");
	g_assert_cmpuint(calls->len, ==, 1);
	call = g_ptr_array_index(calls, 0);
	g_assert_cmpstr(json_object_get_string_member(call, "name"), ==, "echo");
	g_assert_cmpstr(json_object_get_string_member(call, "output"), ==, "Echo: hi");
	requests = items_of(r->json, "mcp_approval_request");
	g_assert_cmpuint(requests->len, ==, 1);
	request = g_ptr_array_index(requests, 0);
	g_assert_cmpstr(json_object_get_string_member(request, "server_label"), ==, "everything");
	g_assert_cmpstr(json_object_get_string_member(request, "name"), ==, "get-sum");

	item = g_strdup_printf("{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\","
			       "\"approve\":true}",
			       json_object_get_string_member(request, "id"));
	answer =
	    g_strdup_printf("{\"model\":\"%s\",\"previous_response_id\":\"%s\",\"input\":[%s]}",
			    agent,
			    confab_test_json_string(r->json, "id"),
			    item);
	r2 = respond(f->daemon, f->token, answer);
	g_assert_cmpuint(r2->status, ==, 200);
	calls2 = items_of(r2->json, "mcp_call");
	g_assert_cmpuint(calls2->len, ==, 1);
	call = g_ptr_array_index(calls2, 0);
	g_assert_cmpstr(json_object_get_string_member(call, "name"), ==, "get-sum");
	g_assert_true(json_object_get_null_member(call, "error"));
	g_assert_nonnull(strstr(json_object_get_string_member(call, "output"), "42"));
	g_assert_nonnull(
	    strstr(confab_test_json_string(r2->json, "output.1.content.0.text"), "42"));
}

/* Two instances on PostgreSQL: the response asks on A, its continuation
 * is served by B, which runs the call. */
static void
test_responses_across_instances(Fixture *f, gconstpointer data)
{
	g_autofree gchar *first = NULL;
	g_autofree gchar *item = NULL;
	g_autofree gchar *body = NULL;
	g_autofree gchar *written = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;

	if (f->daemon == NULL)
		return;
	request = ask(f, f->daemon, "asked on A", &first);
	item = g_strdup_printf("{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"%s\","
			       "\"approve\":true}",
			       json_object_get_string_member(request, "id"));
	body = answer_body(f, first, item);
	r = respond(f->other, f->token, body);
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpuint(n_items(r->json, "mcp_call"), ==, 1);
	g_assert_true(g_file_get_contents(f->file, &written, NULL, NULL));
	g_assert_cmpstr(written, ==, "asked on A");
}

/* The Conversations API (issue 32): an mcp_approval_response item added
 * to the conversation whose chat completion waits decides that approval
 * as POST /approvals does, and the turn goes on; while it waits, any
 * other item is 409 conversation_busy and decides nothing. Once the turn
 * is over, the same item decides nothing more: a record. */
static void
test_conversation_item_decides(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) made = NULL;
	g_autoptr(ConfabTestResponse) busy = NULL;
	g_autoptr(ConfabTestResponse) added = NULL;
	g_autoptr(ConfabTestResponse) again = NULL;
	g_autoptr(ConfabTestResponse) listed = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(GPtrArray) events =
	    g_ptr_array_new_with_free_func((GDestroyNotify)json_object_unref);
	g_autofree gchar *plain = NULL;
	g_autofree gchar *body = NULL;
	g_autofree gchar *path = NULL;
	g_autofree gchar *decision = NULL;
	g_autofree gchar *mixed = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *written = NULL;
	gboolean approval_event = FALSE;

	if (f->daemon == NULL)
		return;
	made = confab_test_http(f->daemon, "POST", "/api/v1/conversations", f->token, "{}");
	g_assert_cmpuint(made->status, ==, 200);
	path = g_strdup_printf("/api/v1/conversations/%s/items",
			       confab_test_json_string(made->json, "id"));
	plain = write_body(f, TRUE, "from an item");
	body = g_strdup_printf("%.*s,\"metadata\":{\"session_id\":\"%s\"}}",
			       (int)strlen(plain) - 1,
			       plain,
			       confab_test_json_string(made->json, "id"));
	s = stream_open(f, body);
	request = stream_until_event(s, "approval_request");
	decision = g_strdup_printf("{\"items\":[{\"type\":\"mcp_approval_response\","
				   "\"approval_request_id\":\"%s\",\"approve\":true,"
				   "\"reason\":\"go\"}]}",
				   json_object_get_string_member(request, "id"));
	/* with another item: busy, and nothing decided */
	mixed = g_strdup_printf("{\"items\":[{\"type\":\"mcp_approval_response\","
				"\"approval_request_id\":\"%s\",\"approve\":false},"
				"{\"role\":\"user\",\"content\":\"meanwhile\"}]}",
				json_object_get_string_member(request, "id"));
	busy = confab_test_http(f->daemon, "POST", path, f->token, mixed);
	confab_test_assert_error(busy, 409, "conversation_busy");
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));

	added = confab_test_http(f->daemon, "POST", path, f->token, decision);
	g_assert_cmpuint(added->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(added->json, "data.0.type"),
			==,
			"mcp_approval_response");
	g_assert_cmpstr(confab_test_json_string(added->json, "data.0.approval_request_id"),
			==,
			json_object_get_string_member(request, "id"));
	text = stream_rest(s, events);
	for (guint i = 0; i < events->len; i++) {
		JsonObject *e = g_ptr_array_index(events, i);
		if (!g_str_equal(json_object_get_string_member(e, "type"), "approval"))
			continue;
		approval_event = TRUE;
		g_assert_true(json_object_get_boolean_member(e, "approve"));
		g_assert_cmpstr(json_object_get_string_member(e, "by"), ==, "api");
	}
	g_assert_true(approval_event);
	g_assert_true(g_file_get_contents(f->file, &written, NULL, NULL));
	g_assert_cmpstr(written, ==, "from an item");

	/* the turn is over: the same item is a record, and decides nothing */
	again = confab_test_http(f->daemon, "POST", path, f->token, decision);
	g_assert_cmpuint(again->status, ==, 200);
	listed = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(listed->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(listed->json, "data.0.type"),
			==,
			"mcp_approval_response");
}

int
main(int argc, char **argv)
{
	gint ret;

	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, func, config)                                                                    \
	g_test_add("/confab/approvals/" name,                                                      \
		   Fixture,                                                                        \
		   config,                                                                         \
		   fixture_setup,                                                                  \
		   func,                                                                           \
		   fixture_teardown)
	ADD("deny", test_deny, NULL);
	ADD("approve", test_approve, NULL);
	ADD("conversation-item-decides", test_conversation_item_decides, NULL);
	ADD("timeout", test_timeout, "[tools]\napproval_timeout = 1\n");
	ADD("hang-up-then-decide", test_hang_up_then_decide, NULL);
	ADD("bad-input", test_bad_input, NULL);
	ADD("dbus-approve", test_dbus_approve, NULL);
	ADD("policy-refused", test_policy_refused, NULL);
	ADD("stop-while-waiting", test_stop_while_waiting, NULL);
	ADD("orphaned", test_orphaned, "[tools]\napproval_timeout = 1\n");
	ADD("crash-then-decide", test_crash_then_decide, "[tools]\napproval_timeout = 4\n");
	ADD("crash-then-list",
	    test_crash_then_list,
	    "[tools]\napproval_timeout = 60\n[store]\ninstance_lease = 3\n");
	ADD("wait-longer-than-idle",
	    test_wait_longer_than_idle,
	    "[limits]\nidle_timeout = 1\n[tools]\napproval_timeout = 3\n");
	/* a response's request does not time out: approval_timeout 1 s */
	ADD("responses-approve", test_responses_approve, "[tools]\napproval_timeout = 1\n");
	ADD("responses-deny-stream", test_responses_deny_stream, NULL);
	ADD("responses-bad-input", test_responses_bad_input, NULL);
	ADD("responses-everything", test_responses_everything, NULL);
	ADD("conversation-item-answers-response", test_conversation_item_answers_response, NULL);
#undef ADD
	g_test_add("/confab/approvals/postgres-across-instances",
		   Fixture,
		   NULL,
		   pg_setup,
		   test_across_instances,
		   fixture_teardown);
	g_test_add("/confab/approvals/postgres-lease",
		   Fixture,
		   "[tools]\napproval_timeout = 120\n[store]\ninstance_lease = 5\n",
		   pg_setup,
		   test_lease_across_instances,
		   fixture_teardown);
	g_test_add("/confab/approvals/postgres-responses-across-instances",
		   Fixture,
		   NULL,
		   pg_setup,
		   test_responses_across_instances,
		   fixture_teardown);
	ret = g_test_run();
	if (cluster != NULL)
		confab_test_pg_stop(cluster);
	confab_test_finish();
	return ret;
}
