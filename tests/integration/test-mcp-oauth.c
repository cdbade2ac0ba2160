/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <libsoup/soup.h>
#include <string.h>

#include "confab-test-helper.h"

/*
 * Remote MCP servers behind OAuth 2.1, against a real confabd: the fake MCP
 * server of tests/ with --oauth is its own authorization server. The
 * authorization code (a person opens the URL AuthorizeMcpServer gives; the
 * authorization server sends them back to confabd's callback), the client
 * credentials grant, refreshing, and every bad answer an authorization
 * server or a callback can give: each a clear error naming the server and
 * the step, never a crash, a hang, or tokens half stored.
 */

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *token;
	gchar *tmpdir;
	GSubprocess *server;
	gchar *url;
	gchar *record;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->daemon = confab_test_daemon_start(NULL, NULL);
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
	f->tmpdir = confab_test_make_tmpdir("mcp-oauth");
	f->record = g_build_filename(f->tmpdir, "record.jsonl", NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	if (f->server != NULL) {
		g_subprocess_force_exit(f->server);
		g_subprocess_wait(f->server, NULL, NULL);
		g_object_unref(f->server);
	}
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	confab_test_rm_rf(f->tmpdir);
	g_free(f->tmpdir);
	g_free(f->token);
	g_free(f->url);
	g_free(f->record);
}

/* ---------- helpers ---------- */

/* The fake MCP server, its own OAuth server in @mode. */
static void
start_server(Fixture *f, const gchar *mode)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GDataInputStream) out = NULL;
	g_autofree gchar *line = NULL;

	f->server = g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE,
				     &error,
				     g_getenv("CONFAB_FAKE_MCP"),
				     "--http",
				     "0",
				     "--oauth",
				     mode,
				     "--record",
				     f->record,
				     NULL);
	g_assert_no_error(error);
	out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(f->server));
	line = g_data_input_stream_read_line(out, NULL, NULL, NULL);
	g_assert_nonnull(line);
	g_assert_true(g_str_has_prefix(line, "PORT="));
	f->url = g_strdup_printf("http://127.0.0.1:%s/mcp", line + 5);
}

static gchar *
create_agent(Fixture *f, const gchar *oauth_json)
{
	g_autofree gchar *servers =
	    g_strdup_printf("{\"mcpServers\":{\"remote\":{\"url\":\"%s\"%s%s}}}",
			    f->url,
			    oauth_json != NULL ? ",\"oauth\":" : "",
			    oauth_json != NULL ? oauth_json : "");
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "hands");
	g_variant_dict_insert(&dict, "provider", "s", "echo");
	g_variant_dict_insert(&dict, "mcp_servers", "s", servers);
	return confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
}

/* The status ListAgentTools gives the server "remote" (its first row). */
static gchar *
server_status(Fixture *f, const gchar *agent)
{
	g_autoptr(GVariant) tools = NULL;
	g_autoptr(GVariant) first = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_true(confab_dbus_admin_call_list_agent_tools_sync(f->daemon->admin,
								   agent,
								   &tools,
								   NULL,
								   &error));
	g_assert_no_error(error);
	g_assert_cmpuint(g_variant_n_children(tools), >, 0);
	first = g_variant_get_child_value(tools, 0);
	g_assert_cmpstr(confab_test_variant_string(first, "server"), ==, "remote");
	return g_strdup(confab_test_variant_string(first, "status"));
}

static gchar *
authorize(Fixture *f, const gchar *agent, GError **error)
{
	gchar *url = NULL;

	if (!confab_dbus_admin_call_authorize_mcp_server_sync(f->daemon->admin,
							      agent,
							      "remote",
							      &url,
							      NULL,
							      error))
		return NULL;
	return url;
}

/* GET @url without following a redirect; the status, and the Location. */
static guint
get(const gchar *url, gchar **location, gchar **body)
{
	g_autoptr(SoupSession) session = soup_session_new();
	g_autoptr(SoupMessage) msg = soup_message_new("GET", url);
	g_autoptr(GBytes) bytes = NULL;
	g_autoptr(GError) error = NULL;

	g_assert_nonnull(msg);
	soup_message_add_flags(msg, SOUP_MESSAGE_NO_REDIRECT);
	bytes = soup_session_send_and_read(session, msg, NULL, &error);
	g_assert_no_error(error);
	if (location != NULL)
		*location =
		    g_strdup(soup_message_headers_get_one(soup_message_get_response_headers(msg),
							  "Location"));
	if (body != NULL)
		*body = g_strndup(g_bytes_get_data(bytes, NULL), g_bytes_get_size(bytes));
	return soup_message_get_status(msg);
}

/* What a person does to authorize "remote": asks for the URL
 * (AuthorizeMcpServer) and opens it; the authorization server approves and
 * redirects to confabd's callback. With @callback, the callback's URL is
 * returned there, not opened; without, it is opened and must succeed.
 * Returns the authorization URL. */
static gchar *
authorize_as_person(Fixture *f, const gchar *agent, gchar **callback)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *url = authorize(f, agent, &error);
	g_autofree gchar *location = NULL;

	g_assert_no_error(error);
	g_assert_cmpuint(get(url, &location, NULL), ==, 302);
	g_assert_nonnull(location);
	if (callback != NULL)
		*callback = g_steal_pointer(&location);
	else
		g_assert_cmpuint(get(location, NULL, NULL), ==, 200);
	return g_steal_pointer(&url);
}

static gchar *
chat_body(const gchar *agent, const gchar *text)
{
	return g_strdup_printf("{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":"
			       "\"%s\"}]}",
			       agent,
			       text);
}

static gchar *
record_text(Fixture *f)
{
	gchar *text = NULL;

	g_assert_true(g_file_get_contents(f->record, &text, NULL, NULL));
	return text;
}

/* ---------- tests ---------- */

/* No `oauth` in the entry: a 401 is answered with discovery, dynamic
 * registration and the authorization code, which a person completes once;
 * the callback is strict about its state. */
static void
test_authorization_code(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = NULL, *status = NULL, *url = NULL, *callback = NULL;
	g_autofree gchar *page = NULL, *body = NULL, *record = NULL, *again = NULL;
	g_autofree gchar *command = NULL, *resource = NULL, *streamed = NULL, *stream_body = NULL;
	g_autoptr(ConfabTestResponse) before = NULL;
	g_autoptr(ConfabTestResponse) after = NULL;
	g_autoptr(GError) error = NULL;

	start_server(f, "ok");
	agent = create_agent(f, NULL);
	command = g_strdup_printf("confabctl agent authorize %s remote", agent);

	/* until a person authorizes, the tools say so, and name the command */
	status = server_status(f, agent);
	g_assert_true(g_str_has_prefix(status, "authorization needed"));
	g_assert_nonnull(strstr(status, command));
	body = chat_body(agent, "/tool remote__echo {\\\"text\\\":\\\"hi\\\"}");
	stream_body = g_strdup_printf("%.*s,\"stream\":true}", (int)strlen(body) - 1, body);
	before =
	    confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->token, stream_body);
	g_assert_cmpuint(before->status, ==, 200);
	streamed = g_strndup(g_bytes_get_data(before->body, NULL), g_bytes_get_size(before->body));
	g_assert_nonnull(strstr(streamed, "\"tool_event\":{\"type\":\"authorization_needed\""));
	g_assert_nonnull(strstr(streamed, command));

	url = authorize_as_person(f, agent, &callback);
	g_assert_nonnull(strstr(url, "code_challenge_method=S256"));
	g_assert_nonnull(strstr(url, "resource="));
	g_assert_nonnull(strstr(url, "client_id=dcr-client"));
	g_assert_true(g_str_has_prefix(callback, f->daemon->url));
	g_assert_nonnull(strstr(callback, "/api/v1/oauth/callback?"));
	g_assert_cmpuint(get(callback, NULL, &page), ==, 200);
	g_assert_nonnull(strstr(page, "You may close this page"));
	/* the same callback again: the state is used up */
	g_free(page);
	g_assert_cmpuint(get(callback, NULL, &page), ==, 400);
	g_assert_nonnull(strstr(page, "unknown or was used already"));

	g_free(status);
	status = server_status(f, agent);
	g_assert_cmpstr(status, ==, "ready");
	after =
	    confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->token, stream_body);
	g_assert_cmpuint(after->status, ==, 200);
	g_free(streamed);
	streamed = g_strndup(g_bytes_get_data(after->body, NULL), g_bytes_get_size(after->body));
	g_assert_nonnull(strstr(streamed, "\"type\":\"result\""));
	g_assert_nonnull(strstr(streamed, "\"is_error\":false"));
	g_assert_null(strstr(streamed, "authorization_needed"));

	/* resource (RFC 8707) on the token request */
	record = record_text(f);
	resource =
	    g_strdup_printf("\"grant_type\":\"authorization_code\",\"resource\":\"%s\"", f->url);
	g_assert_nonnull(strstr(record, resource));
	/* never a token over D-Bus or in the agent */
	again = authorize(f, agent, &error);
	g_assert_no_error(error);
	g_assert_null(strstr(again, "tok-"));
}

/* Callbacks that must be refused: an unknown state, none, no code. */
static void
test_bad_callbacks(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = NULL, *url = NULL, *callback = NULL, *page = NULL;
	g_autofree gchar *unknown = NULL, *none = NULL, *no_code = NULL, *status = NULL;
	g_autoptr(GUri) uri = NULL;
	g_autoptr(GHashTable) params = NULL;

	start_server(f, "ok");
	agent = create_agent(f, NULL);
	unknown = g_strdup_printf("%s/api/v1/oauth/callback?code=x&state=nobody", f->daemon->url);
	g_assert_cmpuint(get(unknown, NULL, &page), ==, 400);
	g_assert_nonnull(strstr(page, "unknown"));
	none = g_strdup_printf("%s/api/v1/oauth/callback", f->daemon->url);
	g_free(page);
	g_assert_cmpuint(get(none, NULL, &page), ==, 400);
	g_assert_nonnull(strstr(page, "no state"));

	/* a real state without a code: refused, and used up */
	url = authorize_as_person(f, agent, &callback);
	uri = g_uri_parse(callback, G_URI_FLAGS_ENCODED, NULL);
	params = g_uri_parse_params(g_uri_get_query(uri), -1, "&", G_URI_PARAMS_NONE, NULL);
	no_code = g_strdup_printf("%s/api/v1/oauth/callback?state=%s",
				  f->daemon->url,
				  (const gchar *)g_hash_table_lookup(params, "state"));
	g_free(page);
	g_assert_cmpuint(get(no_code, NULL, &page), ==, 400);
	g_assert_nonnull(strstr(page, "no code"));
	g_assert_nonnull(strstr(page, "remote"));
	g_free(page);
	g_assert_cmpuint(get(callback, NULL, &page), ==, 400);
	status = server_status(f, agent);
	g_assert_nonnull(strstr(status, "authorization needed"));
}

/* client_credentials: no person; the secret is masked when read back. */
static void
test_client_credentials(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = NULL, *status = NULL, *record = NULL;
	g_autoptr(GVariant) props = NULL;
	g_autoptr(GError) error = NULL;
	const gchar *servers;

	start_server(f, "ok");
	agent = create_agent(f,
			     "{\"grant\":\"client_credentials\",\"client_id\":\"cc\","
			     "\"client_secret\":\"very-secret\",\"scope\":\"mcp\"}");
	status = server_status(f, agent);
	g_assert_cmpstr(status, ==, "ready");
	record = record_text(f);
	g_assert_nonnull(strstr(record, "\"grant_type\":\"client_credentials\""));

	g_assert_true(
	    confab_dbus_admin_call_get_agent_sync(f->daemon->admin, agent, &props, NULL, &error));
	g_assert_no_error(error);
	servers = confab_test_variant_string(props, "mcp_servers");
	g_assert_null(strstr(servers, "very-secret"));
	g_assert_nonnull(strstr(servers, "\"client_secret\":\"********\""));
	g_assert_nonnull(strstr(servers, "\"client_id\":\"cc\""));
}

/* A token that expires is refreshed before it does. */
static void
test_refresh(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = NULL, *url = NULL, *body = NULL;
	g_autofree gchar *record = NULL, *status = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;

	start_server(f, "expiring");
	agent = create_agent(f, NULL);
	status = server_status(f, agent);
	g_assert_nonnull(strstr(status, "authorization needed"));
	url = authorize_as_person(f, agent, NULL);
	body = chat_body(agent, "/tool remote__echo {\\\"text\\\":\\\"fresh\\\"}");
	r = confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->token, body);
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_nonnull(
	    strstr(confab_test_json_string(r->json, "choices.0.message.content"), "fresh"));
	record = record_text(f);
	g_assert_nonnull(strstr(record, "\"grant_type\":\"refresh_token\""));
}

/* A 403 insufficient_scope during a call: the call says "authorization
 * needed", the next authorization asks for the union of the scopes, and
 * then the call works. */
static void
test_step_up(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = NULL, *url = NULL, *body = NULL;
	g_autofree gchar *stream_body = NULL, *streamed = NULL, *again = NULL;
	g_autoptr(ConfabTestResponse) first = NULL;
	g_autoptr(ConfabTestResponse) second = NULL;

	start_server(f, "step-up");
	agent = create_agent(f, NULL);
	url = authorize_as_person(f, agent, NULL);
	g_assert_null(strstr(url, "write"));

	body = chat_body(agent, "/tool remote__echo {\\\"text\\\":\\\"hi\\\"}");
	stream_body = g_strdup_printf("%.*s,\"stream\":true}", (int)strlen(body) - 1, body);
	first =
	    confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->token, stream_body);
	g_assert_cmpuint(first->status, ==, 200);
	streamed = g_strndup(g_bytes_get_data(first->body, NULL), g_bytes_get_size(first->body));
	/* the result event and the model hear it */
	g_assert_nonnull(strstr(streamed, "\"type\":\"result\""));
	g_assert_nonnull(strstr(streamed, "\"error\":\"The tool failed: "));
	g_assert_nonnull(strstr(streamed, "authorization needed"));

	again = authorize_as_person(f, agent, NULL);
	g_assert_nonnull(strstr(again, "scope=mcp%20write"));
	second =
	    confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->token, stream_body);
	g_assert_cmpuint(second->status, ==, 200);
	g_free(streamed);
	streamed = g_strndup(g_bytes_get_data(second->body, NULL), g_bytes_get_size(second->body));
	g_assert_nonnull(strstr(streamed, "\"is_error\":false"));
	g_assert_null(strstr(streamed, "authorization needed"));
}

typedef struct {
	const gchar *mode;
	const gchar *oauth;
	const gchar *step;
} Bad;

/* An authorization server's bad answers: each a clear error with the
 * server and the step, and confabd goes on. */
static void
test_bad_servers(Fixture *f, gconstpointer data)
{
	static const Bad cases[] = {
	    {"bad-metadata", NULL, "authorization-server metadata"},
	    {"issuer-mismatch", NULL, "names the issuer"},
	    {"register-refused", NULL, "registration: refused"},
	    {"token-400",
	     "{\"grant\":\"client_credentials\",\"client_id\":\"cc\",\"client_secret\":\"s\"}",
	     "token request: HTTP 400: invalid_grant"},
	    {"token-401",
	     "{\"grant\":\"client_credentials\",\"client_id\":\"cc\",\"client_secret\":\"s\"}",
	     "token request: HTTP 401: invalid_client"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *agent = NULL, *status = NULL, *label = NULL;
		if (f->server != NULL) {
			g_subprocess_force_exit(f->server);
			g_subprocess_wait(f->server, NULL, NULL);
			g_clear_object(&f->server);
			g_clear_pointer(&f->url, g_free);
		}
		start_server(f, cases[i].mode);
		agent = create_agent(f, cases[i].oauth);
		status = server_status(f, agent);
		label = g_strdup_printf("%s/remote", agent);
		g_test_message("%s: %s", cases[i].mode, status);
		g_assert_true(g_str_has_prefix(status, "failed: "));
		g_assert_nonnull(strstr(status, label));
		g_assert_nonnull(strstr(status, "OAuth"));
		g_assert_nonnull(strstr(status, cases[i].step));
	}
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
	g_test_add("/confab/mcp-oauth/" name, Fixture, NULL, fixture_setup, func, fixture_teardown)
	ADD("authorization-code", test_authorization_code);
	ADD("bad-callbacks", test_bad_callbacks);
	ADD("client-credentials", test_client_credentials);
	ADD("refresh", test_refresh);
	ADD("step-up", test_step_up);
	ADD("bad-servers", test_bad_servers);
#undef ADD
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
