/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <signal.h>
#include <string.h>

#include "confab-test-helper.h"

/*
 * Agents that act, against a real confabd: the offline echo agent, which
 * turns "/tool NAME {args}" lines into tool calls, with the agent's own MCP
 * servers — the scripted fake server of tests/, and the MCP project's own
 * reference servers from npm (server-everything over stdio and streamable
 * HTTP, server-filesystem) when tests/mcp has them. The turn runs the tools
 * between model calls, streams tool_event chunks, stores the transcript as
 * content blocks, counts in /metrics, and stops the servers with the
 * daemon.
 */

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent;
	gchar *token;
	gchar *tmpdir;
} Fixture;

static gchar *
fake_servers_json(void)
{
	const gchar *fake = g_getenv("CONFAB_FAKE_MCP");
	g_autoptr(GString) json = g_string_new("{\"mcpServers\":{\"fake\":{\"command\":\"");

	g_assert_nonnull(fake);
	g_string_append(json, fake);
	g_string_append(json, "\"}}}");
	return g_string_free(g_steal_pointer(&json), FALSE);
}

static gchar *
create_tool_agent(Fixture *f, const gchar *servers_json, guint max_steps)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "hands");
	g_variant_dict_insert(&dict, "provider", "s", "echo");
	if (servers_json != NULL)
		g_variant_dict_insert(&dict, "mcp_servers", "s", servers_json);
	if (max_steps > 0)
		g_variant_dict_insert(&dict, "max_steps", "u", max_steps);
	return confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	g_autofree gchar *servers = fake_servers_json();

	f->daemon = confab_test_daemon_start(NULL, NULL);
	f->agent = create_tool_agent(f, servers, 0);
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
	f->tmpdir = confab_test_make_tmpdir("agent-tools");
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	if (f->daemon != NULL) {
		g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
		confab_test_daemon_free(f->daemon);
	}
	confab_test_rm_rf(f->tmpdir);
	g_free(f->tmpdir);
	g_free(f->agent);
	g_free(f->token);
}

/* ---------- helpers ---------- */

static ConfabTestResponse *
post(Fixture *f, const gchar *body)
{
	return confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->token, body);
}

/* a request with one user message @text, and @extra members ("" or ",…") */
static gchar *
chat_body(const gchar *agent, const gchar *text, gboolean stream, const gchar *extra)
{
	g_autoptr(GString) body = g_string_new("{\"model\":\"");
	g_autoptr(JsonNode) node = json_node_new(JSON_NODE_VALUE);
	g_autofree gchar *quoted = NULL;

	json_node_set_string(node, text);
	quoted = json_to_string(node, FALSE);
	g_string_append_printf(
	    body,
	    "%s\",\"messages\":[{\"role\":\"user\",\"content\":%s}]%s%s}",
	    agent,
	    quoted,
	    stream ? ",\"stream\":true,\"stream_options\":{\"include_usage\":true}" : "",
	    extra != NULL ? extra : "");
	return g_string_free(g_steal_pointer(&body), FALSE);
}

static JsonArray *
stored_blocks(Fixture *f, const gchar *session_id)
{
	g_autofree gchar *path =
	    g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session_id);
	g_autoptr(ConfabTestResponse) r = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	JsonArray *data;
	JsonObject *assistant;

	g_assert_cmpuint(r->status, ==, 200);
	data = json_node_get_array(confab_test_json_get(r->json, "data"));
	g_assert_cmpuint(json_array_get_length(data), ==, 2);
	assistant = json_array_get_object_element(data, 1);
	g_assert_cmpstr(json_object_get_string_member(assistant, "role"), ==, "assistant");
	return json_array_ref(json_object_get_array_member(assistant, "content_blocks"));
}

static JsonObject *
block(JsonArray *blocks, guint index, const gchar *type)
{
	JsonObject *b;

	g_assert_cmpuint(index, <, json_array_get_length(blocks));
	b = json_array_get_object_element(blocks, index);
	g_assert_cmpstr(json_object_get_string_member(b, "type"), ==, type);
	return b;
}

typedef struct {
	GPtrArray *events; /* JsonObject: the tool_event of each such chunk */
	GString *text;	   /* the streamed answer */
	gchar *finish_reason;
	gchar *session_id;
	gboolean usage_seen;
	gboolean done;
} Stream;

static void
stream_clear(Stream *s)
{
	/* a test skipped early never filled it */
	g_clear_pointer(&s->events, g_ptr_array_unref);
	if (s->text != NULL)
		g_string_free(s->text, TRUE);
	g_free(s->finish_reason);
	g_free(s->session_id);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Stream, stream_clear)

static void
read_chunk(Stream *s, JsonObject *chunk)
{
	JsonArray *choices = json_object_get_array_member(chunk, "choices");

	if (json_object_has_member(chunk, "tool_event")) {
		/* a tool event has no choice: clients that do not know it skip it */
		g_assert_cmpuint(json_array_get_length(choices), ==, 0);
		g_assert_cmpstr(json_object_get_string_member(chunk, "object"),
				==,
				"chat.completion.chunk");
		g_ptr_array_add(
		    s->events,
		    json_object_ref(json_object_get_object_member(chunk, "tool_event")));
		return;
	}
	if (json_object_has_member(chunk, "usage") &&
	    JSON_NODE_HOLDS_OBJECT(json_object_get_member(chunk, "usage")))
		s->usage_seen = TRUE;
	if (json_object_has_member(chunk, "metadata") && s->session_id == NULL)
		s->session_id = g_strdup(
		    json_object_get_string_member(json_object_get_object_member(chunk, "metadata"),
						  "session_id"));
	for (guint i = 0; i < json_array_get_length(choices); i++) {
		JsonObject *choice = json_array_get_object_element(choices, i);
		JsonObject *delta = json_object_get_object_member(choice, "delta");
		if (json_object_has_member(delta, "content") &&
		    !json_object_get_null_member(delta, "content"))
			g_string_append(s->text, json_object_get_string_member(delta, "content"));
		if (json_object_has_member(choice, "finish_reason") &&
		    !json_object_get_null_member(choice, "finish_reason"))
			s->finish_reason =
			    g_strdup(json_object_get_string_member(choice, "finish_reason"));
	}
}

static void
parse_stream(ConfabTestResponse *r, Stream *s)
{
	g_autoptr(GPtrArray) events = confab_test_sse_events(r);

	s->events = g_ptr_array_new_with_free_func((GDestroyNotify)json_object_unref);
	s->text = g_string_new(NULL);
	g_assert_cmpuint(r->status, ==, 200);
	for (guint i = 0; i < events->len; i++) {
		const gchar *data = g_ptr_array_index(events, i);
		g_autoptr(JsonParser) parser = json_parser_new();
		if (g_str_equal(data, "[DONE]")) {
			s->done = TRUE;
			continue;
		}
		g_assert_false(s->done);
		g_assert_true(json_parser_load_from_data(parser, data, -1, NULL));
		read_chunk(s, json_node_get_object(json_parser_get_root(parser)));
	}
}

static const gchar *
event_string(Stream *s, guint index, const gchar *member)
{
	g_assert_cmpuint(index, <, s->events->len);
	return json_object_get_string_member(g_ptr_array_index(s->events, index), member);
}

/* ---------- the agent's own tools ---------- */

static void
test_json_turn(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body =
	    chat_body(f->agent, "/tool fake__echo {\"text\":\"hello from a tool\"}", FALSE, NULL);
	g_autoptr(ConfabTestResponse) r = post(f, body);
	g_autoptr(JsonArray) blocks = NULL;
	JsonObject *call, *result;

	g_assert_cmpuint(r->status, ==, 200);
	/* the client sees the answer after the tools, not the calls */
	g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.message.content"),
			==,
			"hello from a tool");
	g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.finish_reason"), ==, "stop");
	g_assert_null(confab_test_json_get(r->json, "choices.0.message.tool_calls"));
	/* usage sums both model calls */
	g_assert_cmpint(confab_test_json_int(r->json, "usage.completion_tokens"), ==, 4);
	g_assert_cmpint(confab_test_json_int(r->json, "usage.prompt_tokens"), >, 6);

	blocks = stored_blocks(f, confab_test_json_string(r->json, "metadata.session_id"));
	g_assert_cmpuint(json_array_get_length(blocks), ==, 3);
	call = block(blocks, 0, "tool_call");
	g_assert_cmpstr(json_object_get_string_member(call, "name"), ==, "fake__echo");
	g_assert_cmpstr(json_object_get_string_member(call, "server"), ==, "fake");
	g_assert_cmpstr(json_object_get_string_member(call, "arguments"),
			==,
			"{\"text\":\"hello from a tool\"}");
	result = block(blocks, 1, "tool_result");
	g_assert_cmpstr(json_object_get_string_member(result, "tool_call_id"),
			==,
			json_object_get_string_member(call, "id"));
	g_assert_cmpstr(json_object_get_string_member(result, "content"), ==, "hello from a tool");
	g_assert_false(json_object_get_boolean_member(result, "is_error"));
	g_assert_cmpint(json_object_get_int_member(result, "elapsed_ms"), >=, 0);
	g_assert_cmpstr(json_object_get_string_member(block(blocks, 2, "text"), "text"),
			==,
			"hello from a tool");
}

static void
test_stream_events(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = chat_body(
	    f->agent,
	    "/tool fake__echo {\"text\":\"one\"}\n/tool fake__progress {\"steps\":2,\"ms\":10}",
	    TRUE,
	    NULL);
	g_autoptr(ConfabTestResponse) r = post(f, body);
	g_auto(Stream) s = {0};
	guint calls = 0, progress = 0, results = 0;
	g_autofree gchar *echo_id = NULL;

	parse_stream(r, &s);
	g_assert_true(s.done);
	g_assert_true(s.usage_seen);
	g_assert_cmpstr(s.finish_reason, ==, "stop");
	/* the tools' words, one line each, in the order called */
	g_assert_nonnull(strstr(s.text->str, "one\n"));
	for (guint i = 0; i < s.events->len; i++) {
		const gchar *type = event_string(&s, i, "type");
		JsonObject *event = g_ptr_array_index(s.events, i);
		g_assert_nonnull(event_string(&s, i, "id"));
		if (g_str_equal(type, "call")) {
			calls++;
			g_assert_nonnull(json_object_get_string_member(event, "arguments"));
			if (g_str_equal(json_object_get_string_member(event, "name"), "fake__echo"))
				echo_id = g_strdup(json_object_get_string_member(event, "id"));
		} else if (g_str_equal(type, "progress")) {
			progress++;
			g_assert_cmpfloat(json_object_get_double_member(event, "total"), ==, 2);
			g_assert_cmpfloat(json_object_get_double_member(event, "progress"),
					  ==,
					  progress);
		} else {
			g_assert_cmpstr(type, ==, "result");
			results++;
			g_assert_false(json_object_get_boolean_member(event, "is_error"));
			g_assert_cmpint(json_object_get_int_member(event, "elapsed_ms"), >=, 0);
		}
	}
	g_assert_cmpuint(calls, ==, 2);
	g_assert_cmpuint(results, ==, 2);
	g_assert_cmpuint(progress, ==, 2);
	g_assert_nonnull(echo_id);
	/* a call's event comes before its result's */
	g_assert_cmpstr(event_string(&s, 0, "type"), ==, "call");
}

static void
test_tool_error(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = chat_body(f->agent, "/tool fake__fail {}", FALSE, NULL);
	g_autoptr(ConfabTestResponse) r = post(f, body);
	g_autoptr(JsonArray) blocks = NULL;
	JsonObject *result;

	/* a tool that fails is the model's news, not the client's error */
	g_assert_cmpuint(r->status, ==, 200);
	blocks = stored_blocks(f, confab_test_json_string(r->json, "metadata.session_id"));
	result = block(blocks, 1, "tool_result");
	g_assert_true(json_object_get_boolean_member(result, "is_error"));
	g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.message.content"),
			==,
			json_object_get_string_member(result, "content"));
}

static void
test_server_dies(Fixture *f, gconstpointer data)
{
	g_autofree gchar *die = chat_body(f->agent, "/tool fake__die {}", FALSE, NULL);
	g_autoptr(ConfabTestResponse) r = post(f, die);
	g_autoptr(JsonArray) blocks = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	blocks = stored_blocks(f, confab_test_json_string(r->json, "metadata.session_id"));
	g_assert_true(json_object_get_boolean_member(block(blocks, 1, "tool_result"), "is_error"));
	g_assert_nonnull(
	    strstr(json_object_get_string_member(block(blocks, 1, "tool_result"), "content"),
		   "The tool failed"));
}

static void
test_client_tools(Fixture *f, gconstpointer data)
{
	const gchar *weather = ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
			       "\"get_weather\",\"parameters\":{\"type\":\"object\"}}}]";
	const gchar *clash = ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
			     "\"fake__echo\",\"parameters\":{\"type\":\"object\"}}}]";
	g_autofree gchar *mixed_body =
	    chat_body(f->agent,
		      "/tool fake__echo {\"text\":\"mine\"}\n/tool get_weather {\"city\":\"Oslo\"}",
		      FALSE,
		      weather);
	g_autofree gchar *clash_body = chat_body(f->agent, "hi", FALSE, clash);
	g_autoptr(ConfabTestResponse) mixed = post(f, mixed_body);
	g_autoptr(ConfabTestResponse) clashing = post(f, clash_body);
	JsonArray *calls;

	/* the agent's own ran; the client gets only its own call */
	g_assert_cmpuint(mixed->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(mixed->json, "choices.0.finish_reason"),
			==,
			"tool_calls");
	calls =
	    json_node_get_array(confab_test_json_get(mixed->json, "choices.0.message.tool_calls"));
	g_assert_cmpuint(json_array_get_length(calls), ==, 1);
	g_assert_cmpstr(
	    confab_test_json_string(mixed->json, "choices.0.message.tool_calls.0.function.name"),
	    ==,
	    "get_weather");
	/* a client tool may not take the name of one of the agent's */
	confab_test_assert_error(clashing, 400, "invalid_value");
	g_assert_cmpstr(confab_test_json_string(clashing->json, "error.param"), ==, "tools");
}

static void
test_list_agent_tools(Fixture *f, gconstpointer data)
{
	g_autoptr(GVariant) tools = NULL;
	g_autoptr(GError) error = NULL;
	gboolean found = FALSE;

	g_assert_true(confab_dbus_admin_call_list_agent_tools_sync(f->daemon->admin,
								   f->agent,
								   &tools,
								   NULL,
								   &error));
	g_assert_no_error(error);
	for (gsize i = 0; i < g_variant_n_children(tools); i++) {
		g_autoptr(GVariant) tool = g_variant_get_child_value(tools, i);
		if (g_strcmp0(confab_test_variant_string(tool, "name"), "fake__echo") != 0)
			continue;
		found = TRUE;
		g_assert_cmpstr(confab_test_variant_string(tool, "server"), ==, "fake");
		g_assert_cmpstr(confab_test_variant_string(tool, "status"), ==, "ready");
		g_assert_nonnull(strstr(confab_test_variant_string(tool, "input_schema"), "text"));
	}
	g_assert_true(found);
}

static void
test_server_cannot_start(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_tool_agent(
	    f,
	    "{\"mcpServers\":{\"broken\":{\"command\":\"/nonexistent/mcp-server\"}}}",
	    0);
	g_autofree gchar *body = chat_body(agent, "just talk", FALSE, NULL);
	g_autoptr(ConfabTestResponse) r = post(f, body);
	g_autoptr(GVariant) tools = NULL;
	g_autoptr(GVariant) first = NULL;
	g_autoptr(GError) error = NULL;

	/* the agent still talks */
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.message.content"),
			==,
			"just talk");
	g_assert_true(confab_dbus_admin_call_list_agent_tools_sync(f->daemon->admin,
								   agent,
								   &tools,
								   NULL,
								   &error));
	g_assert_no_error(error);
	g_assert_cmpuint(g_variant_n_children(tools), ==, 1);
	first = g_variant_get_child_value(tools, 0);
	g_assert_cmpstr(confab_test_variant_string(first, "server"), ==, "broken");
	g_assert_true(g_str_has_prefix(confab_test_variant_string(first, "status"), "failed: "));
}

static gdouble
metric(const gchar *text, const gchar *name)
{
	const gchar *at = strstr(text, name);
	if (at == NULL)
		return -1;
	return g_ascii_strtod(at + strlen(name) + 1, NULL);
}

static void
test_metrics(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = chat_body(f->agent,
					   "/tool fake__echo {\"text\":\"x\"}\n/tool fake__fail {}",
					   FALSE,
					   NULL);
	g_autoptr(ConfabTestResponse) r = post(f, body);
	g_autofree gchar *token =
	    confab_test_create_token(f->daemon, "ops", "metrics.read", NULL, NULL);
	g_autoptr(ConfabTestResponse) m = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *ok = NULL, *failed = NULL, *upstream = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	m = confab_test_http(f->daemon, "GET", "/metrics", token, NULL);
	g_assert_cmpuint(m->status, ==, 200);
	text = g_strndup(g_bytes_get_data(m->body, NULL), g_bytes_get_size(m->body));
	ok = g_strdup_printf("confab_tool_calls_total{agent=\"%s\",server=\"fake\",outcome=\"ok\"}",
			     f->agent);
	failed = g_strdup_printf(
	    "confab_tool_calls_total{agent=\"%s\",server=\"fake\",outcome=\"tool_error\"}",
	    f->agent);
	upstream = g_strdup_printf("confab_upstream_requests_total{agent=\"%s\",outcome=\"ok\"}",
				   f->agent);
	g_assert_cmpfloat(metric(text, ok), ==, 1);
	g_assert_cmpfloat(metric(text, failed), ==, 1);
	/* one model call asked for the tools, one answered after them */
	g_assert_cmpfloat(metric(text, upstream), ==, 2);
	g_assert_cmpfloat(metric(text, "confab_tool_duration_seconds_count{server=\"fake\"}"),
			  ==,
			  2);
}

/* ---------- stopping ---------- */

static gboolean
pid_alive(GPid pid)
{
	g_autofree gchar *path = g_strdup_printf("/proc/%d/stat", pid);
	g_autofree gchar *stat = NULL;
	const gchar *state;

	if (!g_file_get_contents(path, &stat, NULL, NULL))
		return FALSE;
	/* a zombie is gone for our purpose */
	state = strrchr(stat, ')');
	return state != NULL && state[2] != 'Z';
}

/* the pids of @parent's children whose command line mentions @needle */
static GArray *
children_of(GPid parent, const gchar *needle)
{
	g_autoptr(GDir) proc = g_dir_open("/proc", 0, NULL);
	GArray *pids = g_array_new(FALSE, FALSE, sizeof(GPid));
	const gchar *name;

	while ((name = g_dir_read_name(proc)) != NULL) {
		g_autofree gchar *stat_path = g_build_filename("/proc", name, "stat", NULL);
		g_autofree gchar *cmd_path = g_build_filename("/proc", name, "cmdline", NULL);
		g_autofree gchar *stat = NULL, *cmdline = NULL;
		const gchar *after;
		gsize len;
		if (!g_ascii_isdigit(name[0]) ||
		    !g_file_get_contents(stat_path, &stat, NULL, NULL) ||
		    !g_file_get_contents(cmd_path, &cmdline, &len, NULL))
			continue;
		after = strrchr(stat, ')');
		if (after == NULL || g_ascii_strtoll(after + 4, NULL, 10) != parent ||
		    g_strstr_len(cmdline, len, needle) == NULL) {
			continue;
		}
		g_array_append_val(pids, (GPid){(GPid)g_ascii_strtoll(name, NULL, 10)});
	}
	return pids;
}

static void
test_stop_stops_servers(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body =
	    chat_body(f->agent, "/tool fake__echo {\"text\":\"x\"}", FALSE, NULL);
	g_autoptr(ConfabTestResponse) r = post(f, body);
	GPid daemon_pid;
	g_autoptr(GArray) servers = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	daemon_pid =
	    (GPid)g_ascii_strtoll(g_subprocess_get_identifier(f->daemon->process), NULL, 10);
	servers = children_of(daemon_pid, "fake-mcp-server");
	g_assert_cmpuint(servers->len, ==, 1);
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(g_steal_pointer(&f->daemon));
	g_assert_false(pid_alive(g_array_index(servers, GPid, 0)));
}

/* ---------- the MCP project's reference servers ---------- */

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

	if (node == NULL || !g_file_test(script, G_FILE_TEST_EXISTS)) {
		g_test_skip("the MCP reference servers are not installed (cd tests/mcp && npm ci)");
		return NULL;
	}
	return g_steal_pointer(&script);
}

static void
test_everything_stdio(Fixture *f, gconstpointer data)
{
	g_autofree gchar *script = npm_server("server-everything");
	g_autofree gchar *servers = NULL;
	g_autofree gchar *agent = NULL;
	g_autofree gchar *body = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;

	if (script == NULL)
		return;
	servers = g_strdup_printf("{\"mcpServers\":{\"everything\":{\"command\":\"node\","
				  "\"args\":[\"%s\",\"stdio\"]}}}",
				  script);
	agent = create_tool_agent(f, servers, 0);
	body = chat_body(agent,
			 "/tool everything__echo {\"message\":\"hi\"}\n"
			 "/tool everything__get-sum {\"a\":2,\"b\":40}",
			 FALSE,
			 NULL);
	r = post(f, body);
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_true(
	    g_str_has_prefix(confab_test_json_string(r->json, "choices.0.message.content"),
			     "Echo: hi\n"));
	g_assert_nonnull(
	    strstr(confab_test_json_string(r->json, "choices.0.message.content"), "42"));
}

static guint16
free_port(void)
{
	g_autoptr(GSocket) socket =
	    g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
	g_autoptr(GInetAddress) loopback = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
	g_autoptr(GSocketAddress) any = g_inet_socket_address_new(loopback, 0);
	g_autoptr(GSocketAddress) address = NULL;

	g_assert_true(g_socket_bind(socket, any, FALSE, NULL));
	address = g_socket_get_local_address(socket, NULL);
	return g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(address));
}

static gboolean
port_open(gpointer data)
{
	g_autoptr(GSocketClient) client = g_socket_client_new();
	g_autoptr(GSocketConnection) connection =
	    g_socket_client_connect_to_host(client,
					    "127.0.0.1",
					    GPOINTER_TO_UINT(data),
					    NULL,
					    NULL);
	return connection != NULL;
}

static void
test_everything_http(Fixture *f, gconstpointer data)
{
	g_autofree gchar *script = npm_server("server-everything");
	g_autoptr(GSubprocessLauncher) launcher = NULL;
	g_autoptr(GSubprocess) server = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *port = NULL, *servers = NULL, *agent = NULL, *body = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_auto(Stream) s = {0};
	guint progress = 0;

	if (script == NULL)
		return;
	port = g_strdup_printf("%u", free_port());
	launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE |
					     G_SUBPROCESS_FLAGS_STDERR_SILENCE);
	g_subprocess_launcher_setenv(launcher, "PORT", port, TRUE);
	server =
	    g_subprocess_launcher_spawn(launcher, &error, "node", script, "streamableHttp", NULL);
	g_assert_no_error(error);
	g_assert_true(confab_test_wait_until(port_open, GUINT_TO_POINTER(atoi(port)), 30000));
	servers = g_strdup_printf(
	    "{\"mcpServers\":{\"everything\":{\"url\":\"http://127.0.0.1:%s/mcp\"}}}",
	    port);
	agent = create_tool_agent(f, servers, 0);
	body = chat_body(
	    agent,
	    "/tool everything__trigger-long-running-operation "
	    "{\"duration\":0.2,\"steps\":2}\n/tool everything__echo {\"message\":\"web\"}",
	    TRUE,
	    NULL);
	r = post(f, body);
	parse_stream(r, &s);
	g_assert_true(s.done);
	g_assert_nonnull(strstr(s.text->str, "Echo: web"));
	for (guint i = 0; i < s.events->len; i++)
		progress += g_str_equal(event_string(&s, i, "type"), "progress");
	g_assert_cmpuint(progress, ==, 2);
	g_subprocess_force_exit(server);
	g_subprocess_wait(server, NULL, NULL);
}

/* Servers of the older protocol versions and one without tools, through a
 * turn: 2025-03-26 over HTTP (its answer's stream cut and resumed),
 * 2024-11-05 over stdio (a batch), and a server that declares no tools
 * capability: it is not asked, and lists nothing, without an error. */
static void
test_older_servers(Fixture *f, gconstpointer data)
{
	const gchar *fake = g_getenv("CONFAB_FAKE_MCP");
	g_autofree gchar *url = NULL;
	g_autoptr(GSubprocess) server = confab_test_fake_mcp_http("--protocol", "2025-03-26", &url);
	g_autofree gchar *servers =
	    g_strdup_printf("{\"mcpServers\":{\"march\":{\"url\":\"%s\"},"
			    "\"nov\":{\"command\":\"%s\",\"args\":[\"--protocol\",\"2024-11-05\"]},"
			    "\"bare\":{\"command\":\"%s\",\"args\":[\"--capabilities\",\"{}\"]}}}",
			    url,
			    fake,
			    fake);
	g_autofree gchar *agent = create_tool_agent(f, servers, 0);
	g_autofree gchar *body =
	    chat_body(agent, "/tool march__drop {\"retry\":50}\n/tool nov__batch {}", FALSE, NULL);
	g_autoptr(ConfabTestResponse) r = post(f, body);
	g_autoptr(JsonArray) blocks = NULL;
	g_autoptr(GVariant) tools = NULL;
	g_autoptr(GError) error = NULL;
	guint march = 0, nov = 0;

	g_assert_cmpuint(r->status, ==, 200);
	blocks = stored_blocks(f, confab_test_json_string(r->json, "metadata.session_id"));
	for (guint i = 0; i < json_array_get_length(blocks); i++) {
		JsonObject *b = json_array_get_object_element(blocks, i);
		if (g_strcmp0(json_object_get_string_member(b, "type"), "tool_result") != 0)
			continue;
		g_assert_false(json_object_get_boolean_member(b, "is_error"));
		march += g_str_equal(json_object_get_string_member(b, "content"), "resumed");
		nov += g_str_equal(json_object_get_string_member(b, "content"), "batched");
	}
	g_assert_cmpuint(march, ==, 1);
	g_assert_cmpuint(nov, ==, 1);

	g_assert_true(confab_dbus_admin_call_list_agent_tools_sync(f->daemon->admin,
								   agent,
								   &tools,
								   NULL,
								   &error));
	g_assert_no_error(error);
	march = nov = 0;
	for (gsize i = 0; i < g_variant_n_children(tools); i++) {
		g_autoptr(GVariant) tool = g_variant_get_child_value(tools, i);
		const gchar *name = confab_test_variant_string(tool, "server");
		g_assert_cmpstr(confab_test_variant_string(tool, "status"), ==, "ready");
		g_assert_cmpstr(name, !=, "bare");
		march += g_str_equal(name, "march");
		nov += g_str_equal(name, "nov");
	}
	g_assert_cmpuint(march, >, 0);
	g_assert_cmpuint(nov, >, 0);
	g_subprocess_force_exit(server);
	g_subprocess_wait(server, NULL, NULL);
}

static void
test_filesystem(Fixture *f, gconstpointer data)
{
	g_autofree gchar *script = npm_server("server-filesystem");
	g_autofree gchar *file = NULL, *servers = NULL, *agent = NULL, *body = NULL;
	g_autofree gchar *text = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(ConfabTestResponse) outside = NULL;
	g_autoptr(JsonArray) blocks = NULL;
	g_autoptr(GError) error = NULL;

	if (script == NULL)
		return;
	file = g_build_filename(f->tmpdir, "notes.txt", NULL);
	g_assert_true(g_file_set_contents(file, "the meeting is on Thursday\n", -1, &error));
	servers = g_strdup_printf("{\"mcpServers\":{\"files\":{\"command\":\"node\","
				  "\"args\":[\"%s\",\"%s\"]}}}",
				  script,
				  f->tmpdir);
	agent = create_tool_agent(f, servers, 0);
	text = g_strdup_printf("/tool files__read_text_file {\"path\":\"%s\"}", file);
	body = chat_body(agent, text, FALSE, NULL);
	r = post(f, body);
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_nonnull(strstr(confab_test_json_string(r->json, "choices.0.message.content"),
				"the meeting is on Thursday"));
	/* outside its root the server refuses, and the model hears so */
	g_free(body);
	body =
	    chat_body(agent, "/tool files__read_text_file {\"path\":\"/etc/passwd\"}", FALSE, NULL);
	outside = post(f, body);
	g_assert_cmpuint(outside->status, ==, 200);
	blocks = stored_blocks(f, confab_test_json_string(outside->json, "metadata.session_id"));
	g_assert_true(json_object_get_boolean_member(block(blocks, 1, "tool_result"), "is_error"));
	g_assert_null(
	    strstr(confab_test_json_string(outside->json, "choices.0.message.content"), "root:"));
}

int
main(int argc, char **argv)
{
	gint ret;

	confab_test_init(&argc, &argv, TRUE);
	if (g_getenv("CONFAB_FAKE_MCP") == NULL) {
		g_printerr("SKIP: CONFAB_FAKE_MCP is not set; run the tests with meson test\n");
		return 77;
	}
#define ADD(name, func)                                                                            \
	g_test_add("/confab/agent-tools/" name,                                                    \
		   Fixture,                                                                        \
		   NULL,                                                                           \
		   fixture_setup,                                                                  \
		   func,                                                                           \
		   fixture_teardown)
	ADD("json-turn", test_json_turn);
	ADD("stream-events", test_stream_events);
	ADD("tool-error", test_tool_error);
	ADD("server-dies", test_server_dies);
	ADD("client-tools", test_client_tools);
	ADD("list-agent-tools", test_list_agent_tools);
	ADD("server-cannot-start", test_server_cannot_start);
	ADD("metrics", test_metrics);
	ADD("stop-stops-servers", test_stop_stops_servers);
	ADD("older-servers", test_older_servers);
	ADD("everything-stdio", test_everything_stdio);
	ADD("everything-http", test_everything_http);
	ADD("filesystem", test_filesystem);
#undef ADD
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
