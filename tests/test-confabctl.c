/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/* confabctl against a real confabd on the test's private session bus. */

typedef struct {
	gint status;
	gchar *out;
	gchar *err;
	JsonNode *json;
} Run;

static void
run_free(Run *run)
{
	g_free(run->out);
	g_free(run->err);
	if (run->json != NULL)
		json_node_unref(run->json);
	g_free(run);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Run, run_free)

/* confabctl --session ARGS…, NULL-terminated */
static Run *
ctl(const gchar *first, ...)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autoptr(GSubprocess) proc = NULL;
	g_autoptr(GError) error = NULL;
	Run *run = g_new0(Run, 1);
	const gchar *arg;
	va_list ap;

	g_ptr_array_add(argv, (gpointer)g_getenv("CONFABCTL"));
	g_ptr_array_add(argv, "--session");
	va_start(ap, first);
	for (arg = first; arg != NULL; arg = va_arg(ap, const gchar *))
		g_ptr_array_add(argv, (gpointer)arg);
	va_end(ap);
	g_ptr_array_add(argv, NULL);
	proc = g_subprocess_newv((const gchar *const *)argv->pdata,
				 G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
				 &error);
	g_assert_no_error(error);
	g_subprocess_communicate_utf8(proc, NULL, NULL, &run->out, &run->err, &error);
	g_assert_no_error(error);
	run->status = g_subprocess_get_exit_status(proc);
	if (run->out != NULL && (run->out[0] == '{' || run->out[0] == '['))
		run->json = json_from_string(run->out, NULL);
	return run;
}

static void
assert_ok(Run *run)
{
	if (run->status != 0)
		g_error("confabctl exited %d: %s%s", run->status, run->out, run->err);
}

static const gchar *
member(JsonNode *node, const gchar *name)
{
	return json_object_get_string_member(json_node_get_object(node), name);
}

static void
test_agents(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *dir = confab_test_make_tmpdir("ctl");
	g_autofree gchar *keyfile = g_build_filename(dir, "key", NULL);
	g_autoptr(Run) created = NULL;
	g_autoptr(Run) shown = NULL;
	g_autoptr(Run) listed = NULL;
	g_autoptr(Run) table = NULL;
	g_autoptr(Run) updated = NULL;
	g_autoptr(Run) deleted = NULL;
	g_autoptr(Run) gone = NULL;
	g_autoptr(Run) reshown = NULL;
	const gchar *id;

	g_assert_true(g_file_set_contents(keyfile, "sk-very-secret-key\n", -1, NULL));
	created = ctl("agent",
		      "create",
		      "--name",
		      "gpt",
		      "--provider",
		      "openai",
		      "--base-url",
		      "http://127.0.0.1:9/v1",
		      "--upstream-model",
		      "m1",
		      "--api-key-file",
		      keyfile,
		      "--instructions",
		      "Be brief.",
		      "--json",
		      NULL);
	assert_ok(created);
	id = member(created->json, "id");
	g_assert_true(g_str_has_prefix(id, "agt_"));
	g_assert_null(strstr(created->out, "sk-very-secret-key"));

	shown = ctl("--json", "agent", "show", id, NULL);
	assert_ok(shown);
	g_assert_cmpstr(member(shown->json, "name"), ==, "gpt");
	g_assert_cmpstr(member(shown->json, "base_url"), ==, "http://127.0.0.1:9/v1");
	g_assert_cmpstr(member(shown->json, "instructions"), ==, "Be brief.");
	g_assert_true(
	    json_object_get_boolean_member(json_node_get_object(shown->json), "has_api_key"));
	/* the key is sent once and never comes back */
	g_assert_null(strstr(shown->out, "sk-very-secret-key"));
	g_assert_false(json_object_has_member(json_node_get_object(shown->json), "api_key"));

	listed = ctl("agent", "list", "--json", NULL);
	assert_ok(listed);
	g_assert_cmpuint(json_array_get_length(json_node_get_array(listed->json)), ==, 1);
	g_assert_null(strstr(listed->out, "sk-very-secret-key"));
	table = ctl("agent", "list", NULL);
	assert_ok(table);
	g_assert_true(g_str_has_prefix(table->out, "ID"));
	g_assert_nonnull(strstr(table->out, id));

	updated =
	    ctl("agent", "update", id, "--upstream-model", "m2", "--idle-timeout", "30", NULL);
	assert_ok(updated);
	reshown = ctl("agent", "show", id, "--json", NULL);
	assert_ok(reshown);
	g_assert_cmpstr(member(reshown->json, "upstream_model"), ==, "m2");
	g_assert_cmpint(
	    json_object_get_int_member(json_node_get_object(reshown->json), "idle_timeout"),
	    ==,
	    30);

	deleted = ctl("agent", "delete", id, NULL);
	assert_ok(deleted);
	gone = ctl("agent", "show", id, NULL);
	g_assert_cmpint(gone->status, ==, 1);
	g_assert_nonnull(strstr(gone->err, id));
	g_assert_null(strstr(gone->err, "org.confab.Confab1.Error"));

	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	confab_test_rm_rf(dir);
}

static void
test_tokens_quota_usage(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autoptr(Run) created = NULL;
	g_autoptr(Run) listed = NULL;
	g_autoptr(Run) quota = NULL;
	g_autoptr(Run) usage = NULL;
	g_autoptr(Run) revoked = NULL;
	g_autoptr(Run) bad_quota = NULL;
	const gchar *secret;
	const gchar *token_id;

	created = ctl("--json",
		      "token",
		      "create",
		      "--owner",
		      "alice",
		      "--scope",
		      "chat.completions",
		      "--name",
		      "laptop",
		      NULL);
	assert_ok(created);
	token_id = member(created->json, "id");
	secret = member(created->json, "secret");
	g_assert_true(g_str_has_prefix(token_id, "tok_"));
	g_assert_true(g_str_has_prefix(secret, "nca_"));

	/* the printed secret works */
	quota = ctl("quota", "set", "alice", "5", NULL);
	assert_ok(quota);
	for (guint i = 0; i < 2; i++) {
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, secret, agent, NULL, "hello", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	usage = ctl("usage", "alice", "--json", NULL);
	assert_ok(usage);
	g_assert_cmpint(json_object_get_int_member(json_node_get_object(usage->json), "requests"),
			==,
			2);
	g_assert_cmpint(json_object_get_int_member(json_node_get_object(usage->json), "quota"),
			==,
			5);
	g_assert_cmpint(json_object_get_int_member(json_node_get_object(usage->json), "remaining"),
			==,
			3);

	/* listed, never with its secret */
	listed = ctl("token", "list", "--owner", "alice", "--json", NULL);
	assert_ok(listed);
	g_assert_cmpuint(json_array_get_length(json_node_get_array(listed->json)), ==, 1);
	g_assert_null(strstr(listed->out, secret));
	g_assert_null(strstr(listed->out, secret + 4));

	revoked = ctl("token", "revoke", token_id, NULL);
	assert_ok(revoked);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, secret, agent, NULL, "hello", FALSE);
		confab_test_assert_error(r, 401, "invalid_api_key");
	}
	bad_quota = ctl("quota", "set", "alice", "lots", NULL);
	g_assert_cmpint(bad_quota->status, ==, 2);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_sessions(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(daemon, token, agent, NULL, "hello from the API", FALSE);
	const gchar *api_session = confab_test_json_string(r->json, "metadata.session_id");
	g_autofree gchar *channel_session = NULL;
	g_autofree gchar *reply = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(Run) all = NULL;
	g_autoptr(Run) api = NULL;
	g_autoptr(Run) channel = NULL;
	g_autoptr(Run) shown = NULL;
	g_autoptr(Run) shown_text = NULL;
	g_autoptr(Run) deleted = NULL;

	g_assert_true(confab_dbus_chat_call_send_sync(daemon->chat,
						      agent,
						      "",
						      "hello over D-Bus",
						      &channel_session,
						      &reply,
						      NULL,
						      &error));
	g_assert_no_error(error);

	all = ctl("session", "list", "--json", NULL);
	assert_ok(all);
	g_assert_cmpuint(json_array_get_length(json_node_get_array(all->json)), ==, 2);
	api = ctl("session", "list", "--source", "api", "--json", NULL);
	assert_ok(api);
	g_assert_cmpuint(json_array_get_length(json_node_get_array(api->json)), ==, 1);
	g_assert_cmpstr(member(json_array_get_element(json_node_get_array(api->json), 0), "id"),
			==,
			api_session);
	channel = ctl("session", "list", "--source", "channel", "--owner", g_get_user_name(), NULL);
	assert_ok(channel);
	g_assert_nonnull(strstr(channel->out, channel_session));
	g_assert_null(strstr(channel->out, api_session));

	shown = ctl("session", "show", api_session, "--json", NULL);
	assert_ok(shown);
	g_assert_cmpuint(json_array_get_length(json_node_get_array(shown->json)), ==, 2);
	shown_text = ctl("session", "show", channel_session, NULL);
	assert_ok(shown_text);
	g_assert_nonnull(strstr(shown_text->out, "user: hello over D-Bus"));
	g_assert_nonnull(strstr(shown_text->out, "assistant: hello over D-Bus"));

	deleted = ctl("session", "delete", api_session, NULL);
	assert_ok(deleted);
	{
		g_autofree gchar *path =
		    g_strdup_printf("/api/v1/conversations/%s/messages", api_session);
		g_autoptr(ConfabTestResponse) gone =
		    confab_test_http(daemon, "GET", path, token, NULL);
		confab_test_assert_error(gone, 404, "conversation_not_found");
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_usage_and_unreachable(void)
{
	g_autoptr(Run) no_command = ctl(NULL);
	g_autoptr(Run) unknown = ctl("frobnicate", NULL);
	g_autoptr(Run) missing = ctl("token", "create", "--owner", "bob", NULL);
	g_autoptr(Run) help = ctl("agent", "create", "--help", NULL);
	g_autoptr(Run) version = ctl("--version", NULL);
	g_autoptr(Run) nobody = NULL;

	g_assert_cmpint(no_command->status, ==, 2);
	g_assert_cmpint(unknown->status, ==, 2);
	g_assert_cmpint(missing->status, ==, 2);
	g_assert_cmpint(help->status, ==, 0);
	g_assert_nonnull(strstr(help->out, "--api-key-file"));
	g_assert_cmpint(version->status, ==, 0);
	g_assert_true(g_str_has_prefix(version->out, "confabctl "));
	/* no daemon on the bus */
	nobody = ctl("agent", "list", NULL);
	g_assert_cmpint(nobody->status, ==, 3);
	g_assert_nonnull(strstr(nobody->err, "cannot be reached"));
}

gint
main(gint argc, gchar **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
	if (g_getenv("CONFABCTL") == NULL)
		return CONFAB_TEST_SKIP;
	g_test_add_func("/confab/confabctl/agents", test_agents);
	g_test_add_func("/confab/confabctl/tokens-quota-usage", test_tokens_quota_usage);
	g_test_add_func("/confab/confabctl/sessions", test_sessions);
	g_test_add_func("/confab/confabctl/usage-and-unreachable", test_usage_and_unreachable);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
