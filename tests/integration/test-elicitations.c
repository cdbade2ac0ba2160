/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "confab-test-pg.h"

/*
 * Elicitations (issue 34), against a real confabd and the fake MCP
 * server's `elicit` tool, which asks the client for a form
 * (elicitation/create) and answers with the client's answer as its text:
 * the echo model then says that text. The turn waits with a `tool_event`
 * elicitation_request in its stream; POST /api/v1/elicitations/{id} (or
 * D-Bus Chat.AnswerElicitation) answers it, checked against the requested
 * schema with its defaults applied; nobody answering is `cancel` after
 * [tools] approval_timeout. With two daemons on one PostgreSQL database,
 * a request asked on one is answered on the other.
 */

typedef struct {
	ConfabTestDaemon *daemon;
	ConfabTestDaemon *other; /* nullable: a second instance (PostgreSQL) */
	gchar *agent;
	gchar *token;
	gchar *pg_url;
} Fixture;

static ConfabTestPg *cluster; /* started by the first PostgreSQL test */

/* An agent with the fake MCP server "fake": over stdio, or at @url. */
static gchar *
create_agent_at(ConfabTestDaemon *daemon, const gchar *url)
{
	g_autofree gchar *servers =
	    url != NULL ? g_strdup_printf("{\"mcpServers\":{\"fake\":{\"url\":\"%s\"}}}", url)
			: g_strdup_printf("{\"mcpServers\":{\"fake\":{\"command\":\"%s\"}}}",
					  g_getenv("CONFAB_FAKE_MCP"));
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "asker");
	g_variant_dict_insert(&dict, "provider", "s", "echo");
	g_variant_dict_insert(&dict, "mcp_servers", "s", servers);
	return confab_test_create_agent_props(daemon, g_variant_dict_end(&dict));
}

static gchar *
create_agent(ConfabTestDaemon *daemon)
{
	return create_agent_at(daemon, NULL);
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	if (g_getenv("CONFAB_FAKE_MCP") == NULL) {
		g_test_skip("CONFAB_FAKE_MCP is not set");
		return;
	}
	f->daemon = confab_test_daemon_start(data, NULL);
	f->agent = create_agent(f->daemon);
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
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

/* Two daemons on one PostgreSQL database, each on a bus of its own. */
static void
pg_setup(Fixture *f, gconstpointer data)
{
	g_autofree gchar *arg = NULL;
	g_autofree gchar *path = NULL;
	const gchar *args[2] = {NULL, NULL};
	Probe probe;

	if (g_getenv("CONFAB_FAKE_MCP") == NULL) {
		g_test_skip("CONFAB_FAKE_MCP is not set");
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
	f->daemon = confab_test_daemon_start_private_bus(data, args);
	f->other = confab_test_daemon_start_private_bus(data, args);
	f->agent = create_agent(f->daemon);
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
	if (f->daemon != NULL) {
		g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
		confab_test_daemon_free(f->daemon);
	}
	g_free(f->pg_url);
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
elicit_body(Fixture *f, gboolean stream)
{
	return g_strdup_printf("{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":"
			       "\"/tool fake__elicit {}\"}]%s}",
			       f->agent,
			       stream ? ",\"stream\":true" : "");
}

static Stream *
stream_post(Fixture *f, const gchar *path, const gchar *body)
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
	request = g_strdup_printf("POST %s HTTP/1.1\r\nHost: test\r\n"
				  "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
				  "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
				  path,
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

static Stream *
stream_open(Fixture *f)
{
	g_autofree gchar *body = elicit_body(f, TRUE);
	return stream_post(f, "/api/v1/chat/completions", body);
}

/* The next `data:` JSON object of the stream; NULL at [DONE] or the end. */
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

/* The rest of the stream's text. */
static gchar *
stream_rest(Stream *s)
{
	GString *text = g_string_new(NULL);
	JsonObject *chunk;

	while ((chunk = stream_next(s)) != NULL) {
		JsonArray *choices = json_object_get_array_member(chunk, "choices");

		g_assert_false(json_object_has_member(chunk, "error"));
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

static ConfabTestResponse *
answer(ConfabTestDaemon *daemon, const gchar *token, const gchar *id, const gchar *body)
{
	g_autofree gchar *path = g_strdup_printf("/api/v1/elicitations/%s", id);
	return confab_test_http(daemon, "POST", path, token, body);
}

/* What the server was answered, as the tool's text said it. */
static JsonObject *
parse_answer(const gchar *text)
{
	g_autoptr(JsonParser) parser = json_parser_new();
	g_autoptr(GError) error = NULL;

	json_parser_load_from_data(parser, text, -1, &error);
	g_assert_no_error(error);
	return json_object_ref(json_node_get_object(json_parser_get_root(parser)));
}

/* ---------- the tests ---------- */

/* Accepted with content: the server gets it with the defaults of the
 * fields left out; the request is recorded as accepted; a second answer is
 * 409. */
static void
test_accept(Fixture *f, gconstpointer data)
{
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(ConfabTestResponse) again = NULL;
	g_autoptr(JsonObject) got = NULL;
	g_autofree gchar *text = NULL;
	JsonObject *content;
	const gchar *id;

	if (f->daemon == NULL)
		return;
	s = stream_open(f);
	request = stream_until_event(s, "elicitation_request");
	id = json_object_get_string_member(request, "id");
	g_assert_true(g_str_has_prefix(id, "mcpe_"));
	g_assert_cmpstr(json_object_get_string_member(request, "server"), ==, "fake");
	g_assert_cmpstr(json_object_get_string_member(request, "message"), ==, "Who are you?");
	g_assert_cmpstr(json_object_get_string_member(
			    json_object_get_object_member(request, "requested_schema"),
			    "type"),
			==,
			"object");
	/* listed for its owner, and for nobody else */
	{
		g_autofree gchar *bob =
		    confab_test_create_token(f->daemon, "bob", "chat.completions", NULL, NULL);
		g_autoptr(ConfabTestResponse) mine =
		    confab_test_http(f->daemon, "GET", "/api/v1/elicitations", f->token, NULL);
		g_autoptr(ConfabTestResponse) theirs =
		    confab_test_http(f->daemon, "GET", "/api/v1/elicitations", bob, NULL);
		g_assert_cmpuint(mine->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(mine->json, "object"), ==, "list");
		g_assert_cmpstr(confab_test_json_string(mine->json, "data.0.id"), ==, id);
		g_assert_cmpstr(confab_test_json_string(mine->json, "data.0.state"), ==, "pending");
		g_assert_cmpstr(confab_test_json_string(mine->json, "data.0.server"), ==, "fake");
		g_assert_null(confab_test_json_string(mine->json, "data.1.id"));
		g_assert_cmpuint(theirs->status, ==, 200);
		g_assert_null(confab_test_json_string(theirs->json, "data.0.id"));
	}
	r = answer(f->daemon,
		   f->token,
		   id,
		   "{\"action\":\"accept\",\"content\":{\"email\":\"a@example.org\",\"age\":41}}");
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "state"), ==, "accepted");
	g_assert_cmpstr(confab_test_json_string(r->json, "answered_by"), ==, "api");
	text = stream_rest(s);
	got = parse_answer(text);
	g_assert_cmpstr(json_object_get_string_member(got, "action"), ==, "accept");
	content = json_object_get_object_member(got, "content");
	g_assert_cmpstr(json_object_get_string_member(content, "email"), ==, "a@example.org");
	g_assert_cmpint(json_object_get_int_member(content, "age"), ==, 41);
	/* the defaults of the fields left out */
	g_assert_cmpstr(json_object_get_string_member(content, "name"), ==, "John Doe");
	g_assert_cmpstr(json_object_get_string_member(content, "status"), ==, "active");
	g_assert_true(json_object_get_boolean_member(content, "verified"));
	again = answer(f->daemon, f->token, id, "{\"action\":\"decline\"}");
	confab_test_assert_error(again, 409, "elicitation_already_answered");
	{
		g_autoptr(ConfabTestResponse) none =
		    confab_test_http(f->daemon, "GET", "/api/v1/elicitations", f->token, NULL);
		g_assert_cmpuint(none->status, ==, 200);
		g_assert_null(confab_test_json_string(none->json, "data.0.id"));
	}
}

/* Two turns wait on one server (Streamable HTTP) at once: each gets the
 * elicitation its own call brought, not the older turn both, and each
 * answer reaches its own call. */
static void
test_two_turns(Fixture *f, gconstpointer data)
{
	g_autofree gchar *url = NULL;
	g_autoptr(GSubprocess) server = NULL;
	g_autoptr(Stream) first = NULL;
	g_autoptr(Stream) second = NULL;
	g_autoptr(JsonObject) first_request = NULL;
	g_autoptr(JsonObject) second_request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(ConfabTestResponse) r2 = NULL;
	g_autoptr(JsonObject) got = NULL;
	g_autoptr(JsonObject) got2 = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *text2 = NULL;

	if (f->daemon == NULL)
		return;
	server = confab_test_fake_mcp_http(NULL, NULL, &url);
	g_free(f->agent);
	f->agent = create_agent_at(f->daemon, url);
	first = stream_open(f);
	first_request = stream_until_event(first, "elicitation_request");
	second = stream_open(f);
	second_request = stream_until_event(second, "elicitation_request");
	g_assert_cmpstr(json_object_get_string_member(first_request, "id"),
			!=,
			json_object_get_string_member(second_request, "id"));
	r = answer(f->daemon,
		   f->token,
		   json_object_get_string_member(second_request, "id"),
		   "{\"action\":\"accept\",\"content\":{\"email\":\"second@example.org\"}}");
	g_assert_cmpuint(r->status, ==, 200);
	text2 = stream_rest(second);
	got2 = parse_answer(text2);
	g_assert_cmpstr(
	    json_object_get_string_member(json_object_get_object_member(got2, "content"), "email"),
	    ==,
	    "second@example.org");
	r2 = answer(f->daemon,
		    f->token,
		    json_object_get_string_member(first_request, "id"),
		    "{\"action\":\"decline\"}");
	g_assert_cmpuint(r2->status, ==, 200);
	text = stream_rest(first);
	got = parse_answer(text);
	g_assert_cmpstr(json_object_get_string_member(got, "action"), ==, "decline");
	g_subprocess_force_exit(server);
	g_subprocess_wait(server, NULL, NULL);
}

/* Declined: the server is told decline, with no content. */
static void
test_decline(Fixture *f, gconstpointer data)
{
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(JsonObject) got = NULL;
	g_autofree gchar *text = NULL;

	if (f->daemon == NULL)
		return;
	s = stream_open(f);
	request = stream_until_event(s, "elicitation_request");
	r = answer(f->daemon,
		   f->token,
		   json_object_get_string_member(request, "id"),
		   "{\"action\":\"decline\"}");
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "state"), ==, "declined");
	text = stream_rest(s);
	got = parse_answer(text);
	g_assert_cmpstr(json_object_get_string_member(got, "action"), ==, "decline");
	g_assert_false(json_object_has_member(got, "content"));
}

/* Nobody answers: after [tools] approval_timeout the server is told
 * cancel (a JSON turn, which waits as a stream does); a late answer is
 * 409. */
static void
test_timeout(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(JsonObject) got = NULL;

	if (f->daemon == NULL)
		return;
	body = elicit_body(f, FALSE);
	r = confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->token, body);
	g_assert_cmpuint(r->status, ==, 200);
	got = parse_answer(confab_test_json_string(r->json, "choices.0.message.content"));
	g_assert_cmpstr(json_object_get_string_member(got, "action"), ==, "cancel");
}

/* Bad answers are refused with the field named and leave the request
 * pending: a good answer then counts. Another owner's request, or an id
 * that does not exist, is 404. */
static void
test_bad_input(Fixture *f, gconstpointer data)
{
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(JsonObject) got = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *bob = NULL;
	const gchar *id;
	struct {
		const gchar *body;
		const gchar *param;
	} bad[] = {
	    {"{\"action\":\"accept\",\"content\":{\"email\":\"a@example.org\",\"age\":\"x\"}}",
	     "content.age"},
	    {"{\"action\":\"accept\",\"content\":{\"age\":3}}", "content.email"},
	    {"{\"action\":\"accept\",\"content\":{\"email\":\"not an address\"}}", "content.email"},
	    {"{\"action\":\"accept\",\"content\":{\"email\":\"a@example.org\",\"shoe\":1}}",
	     "content.shoe"},
	    {"{\"action\":\"accept\",\"content\":[1]}", "content"},
	    {"{\"action\":\"maybe\"}", "action"},
	    {"{}", "action"},
	};

	if (f->daemon == NULL)
		return;
	s = stream_open(f);
	request = stream_until_event(s, "elicitation_request");
	id = json_object_get_string_member(request, "id");
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(ConfabTestResponse) r = answer(f->daemon, f->token, id, bad[i].body);
		confab_test_assert_error(r, 400, "invalid_value");
		g_assert_cmpstr(confab_test_json_string(r->json, "error.param"), ==, bad[i].param);
	}
	bob = confab_test_create_token(f->daemon, "bob", "chat.completions", NULL, NULL);
	{
		g_autoptr(ConfabTestResponse) r =
		    answer(f->daemon, bob, id, "{\"action\":\"decline\"}");
		g_autoptr(ConfabTestResponse) none =
		    answer(f->daemon, f->token, "mcpe_nothing", "{\"action\":\"decline\"}");
		confab_test_assert_error(r, 404, "elicitation_not_found");
		confab_test_assert_error(none, 404, "elicitation_not_found");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    answer(f->daemon,
			   f->token,
			   id,
			   "{\"action\":\"accept\",\"content\":{\"email\":\"b@example.org\"}}");
		g_assert_cmpuint(r->status, ==, 200);
	}
	text = stream_rest(s);
	got = parse_answer(text);
	g_assert_cmpstr(json_object_get_string_member(got, "action"), ==, "accept");
	g_assert_cmpstr(
	    json_object_get_string_member(json_object_get_object_member(got, "content"), "email"),
	    ==,
	    "b@example.org");
}

/* Over D-Bus: Chat.AnswerElicitation, with its errors. */
static void
test_dbus(Fixture *f, gconstpointer data)
{
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(JsonObject) got = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *remote = NULL;
	const gchar *id;

	if (f->daemon == NULL)
		return;
	g_assert_nonnull(f->daemon->chat);
	s = stream_open(f);
	request = stream_until_event(s, "elicitation_request");
	id = json_object_get_string_member(request, "id");
	g_assert_false(confab_dbus_chat_call_answer_elicitation_sync(f->daemon->chat,
								     id,
								     "accept",
								     "{\"age\":-1}",
								     NULL,
								     &error));
	remote = g_dbus_error_get_remote_error(error);
	g_assert_cmpstr(remote, ==, "org.confab.Confab1.Error.InvalidArgument");
	g_assert_nonnull(strstr(error->message, "content."));
	g_clear_error(&error);
	g_assert_false(confab_dbus_chat_call_answer_elicitation_sync(f->daemon->chat,
								     "mcpe_nothing",
								     "cancel",
								     "",
								     NULL,
								     &error));
	g_free(remote);
	remote = g_dbus_error_get_remote_error(error);
	g_assert_cmpstr(remote, ==, "org.confab.Confab1.Error.ElicitationNotFound");
	g_clear_error(&error);
	g_assert_true(confab_dbus_chat_call_answer_elicitation_sync(f->daemon->chat,
								    id,
								    "accept",
								    "{\"email\":\"d@example.org\"}",
								    NULL,
								    &error));
	g_assert_no_error(error);
	text = stream_rest(s);
	got = parse_answer(text);
	g_assert_cmpstr(json_object_get_string_member(got, "action"), ==, "accept");
	g_assert_false(confab_dbus_chat_call_answer_elicitation_sync(f->daemon->chat,
								     id,
								     "cancel",
								     "",
								     NULL,
								     &error));
	g_free(remote);
	remote = g_dbus_error_get_remote_error(error);
	g_assert_cmpstr(remote, ==, "org.confab.Confab1.Error.AlreadyAnswered");
}

/* The Responses door: a streamed response tells the question as its own
 * event on the mcp_call item; the answer reaches the server, whose text
 * is the call's output. */
static void
test_responses(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = NULL;
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) asked = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	JsonObject *event;
	gboolean completed = FALSE;

	if (f->daemon == NULL)
		return;
	body = g_strdup_printf("{\"model\":\"%s\",\"input\":\"/tool fake__elicit {}\","
			       "\"stream\":true}",
			       f->agent);
	s = stream_post(f, "/api/v1/responses", body);
	for (;;) {
		asked = stream_next(s);
		g_assert_nonnull(asked);
		if (g_str_equal(json_object_get_string_member(asked, "type"),
				"response.mcp_call.elicitation_request"))
			break;
		g_clear_pointer(&asked, json_object_unref);
	}
	g_assert_true(g_str_has_prefix(json_object_get_string_member(asked, "item_id"), "mcp_"));
	g_assert_cmpstr(json_object_get_string_member(asked, "server_label"), ==, "fake");
	r = answer(f->daemon,
		   f->token,
		   json_object_get_string_member(asked, "elicitation_id"),
		   "{\"action\":\"accept\",\"content\":{\"email\":\"r@example.org\"}}");
	g_assert_cmpuint(r->status, ==, 200);
	while ((event = stream_next(s)) != NULL) {
		if (g_str_equal(json_object_get_string_member(event, "type"),
				"response.output_item.done")) {
			JsonObject *item = json_object_get_object_member(event, "item");
			if (g_str_equal(json_object_get_string_member(item, "type"), "mcp_call")) {
				g_autoptr(JsonObject) got =
				    parse_answer(json_object_get_string_member(item, "output"));
				g_assert_cmpstr(json_object_get_string_member(got, "action"),
						==,
						"accept");
				completed = TRUE;
			}
		}
		json_object_unref(event);
	}
	g_assert_true(completed);
}

/* Two instances on PostgreSQL: asked on A, answered on B. */
static void
test_across_instances(Fixture *f, gconstpointer data)
{
	g_autoptr(Stream) s = NULL;
	g_autoptr(JsonObject) request = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(JsonObject) got = NULL;
	g_autofree gchar *text = NULL;

	if (f->daemon == NULL)
		return;
	s = stream_open(f);
	request = stream_until_event(s, "elicitation_request");
	r = answer(f->other,
		   f->token,
		   json_object_get_string_member(request, "id"),
		   "{\"action\":\"accept\",\"content\":{\"email\":\"c@example.org\"}}");
	g_assert_cmpuint(r->status, ==, 200);
	text = stream_rest(s);
	got = parse_answer(text);
	g_assert_cmpstr(json_object_get_string_member(got, "action"), ==, "accept");
	g_assert_cmpint(
	    json_object_get_int_member(json_object_get_object_member(got, "content"), "age"),
	    ==,
	    30);
}

int
main(int argc, char **argv)
{
	gint ret;

	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, func, config)                                                                    \
	g_test_add("/confab/elicitations/" name,                                                   \
		   Fixture,                                                                        \
		   config,                                                                         \
		   fixture_setup,                                                                  \
		   func,                                                                           \
		   fixture_teardown)
	ADD("accept", test_accept, NULL);
	ADD("decline", test_decline, NULL);
	ADD("two-turns-one-server", test_two_turns, NULL);
	ADD("timeout-cancels", test_timeout, "[tools]\napproval_timeout = 1\n");
	ADD("bad-input", test_bad_input, NULL);
	ADD("dbus", test_dbus, NULL);
	ADD("responses", test_responses, NULL);
#undef ADD
	g_test_add("/confab/elicitations/postgres-across-instances",
		   Fixture,
		   NULL,
		   pg_setup,
		   test_across_instances,
		   fixture_teardown);
	ret = g_test_run();
	if (cluster != NULL)
		confab_test_pg_stop(cluster);
	confab_test_finish();
	return ret;
}
