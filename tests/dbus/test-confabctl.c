/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * confabctl against a real confabd on the test's private session bus (the
 * bus GTestDBus starts becomes DBUS_SESSION_BUS_ADDRESS): every command
 * end to end, its --json parsed, its tables read, its exit codes.
 */

#define API_KEY	      "sk-very-secret-key"
#define OTHER_API_KEY "sk-rotated-key"

typedef struct {
	gint status;
	gchar *out;
	gchar *err;
	JsonNode *json; /* stdout parsed, when it is JSON */
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

typedef struct {
	gboolean no_session_flag; /* leave out --session */
	const gchar *stdin_text;  /* fed to its standard input */
	const gchar *const *env;  /* NAME, VALUE, … NULL */
} RunOptions;

static Run *
ctl_runv(const RunOptions *opts, const gchar *first, va_list ap)
{
	g_autoptr(GPtrArray) argv = g_ptr_array_new();
	g_autoptr(GSubprocessLauncher) launcher = NULL;
	g_autoptr(GSubprocess) proc = NULL;
	g_autoptr(GError) error = NULL;
	GSubprocessFlags flags = G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE;
	Run *run = g_new0(Run, 1);

	g_ptr_array_add(argv, (gpointer)g_getenv("CONFABCTL"));
	if (!opts->no_session_flag)
		g_ptr_array_add(argv, "--session");
	for (const gchar *arg = first; arg != NULL; arg = va_arg(ap, const gchar *))
		g_ptr_array_add(argv, (gpointer)arg);
	g_ptr_array_add(argv, NULL);

	flags |= opts->stdin_text != NULL ? G_SUBPROCESS_FLAGS_STDIN_PIPE
					  : G_SUBPROCESS_FLAGS_STDIN_INHERIT;
	launcher = g_subprocess_launcher_new(flags);
	for (guint i = 0; opts->env != NULL && opts->env[i] != NULL; i += 2)
		g_subprocess_launcher_setenv(launcher, opts->env[i], opts->env[i + 1], TRUE);
	proc = g_subprocess_launcher_spawnv(launcher, (const gchar *const *)argv->pdata, &error);
	g_assert_no_error(error);
	g_subprocess_communicate_utf8(proc, opts->stdin_text, NULL, &run->out, &run->err, &error);
	g_assert_no_error(error);
	g_assert_true(g_subprocess_get_if_exited(proc));
	run->status = g_subprocess_get_exit_status(proc);
	if (run->out != NULL && (run->out[0] == '{' || run->out[0] == '['))
		run->json = json_from_string(run->out, NULL);
	return run;
}

/* confabctl --session ARGS…, NULL-terminated */
static Run *
ctl(const gchar *first, ...)
{
	RunOptions opts = {0};
	Run *run;
	va_list ap;
	va_start(ap, first);
	run = ctl_runv(&opts, first, ap);
	va_end(ap);
	return run;
}

static Run *
ctl_full(const RunOptions *opts, const gchar *first, ...)
{
	Run *run;
	va_list ap;
	va_start(ap, first);
	run = ctl_runv(opts, first, ap);
	va_end(ap);
	return run;
}

static void
assert_status(Run *run, gint status)
{
	if (run->status != status)
		g_error("confabctl exited %d, not %d:\n%s%s",
			run->status,
			status,
			run->out,
			run->err);
}

static void
assert_ok(Run *run)
{
	assert_status(run, 0);
}

/* A failure the daemon reported: exit 1 and a message for people. */
static void
assert_refused(Run *run, const gchar *mentions)
{
	assert_status(run, 1);
	g_assert_true(g_str_has_prefix(run->err, "confabctl: "));
	g_assert_nonnull(strstr(run->err, mentions));
	/* the D-Bus error name is stripped */
	g_assert_null(strstr(run->err, "org.confab.Confab1.Error"));
	g_assert_null(strstr(run->err, "GDBus.Error"));
	g_assert_cmpstr(run->out, ==, "");
}

static JsonObject *
object(Run *run)
{
	g_assert_nonnull(run->json);
	g_assert_true(JSON_NODE_HOLDS_OBJECT(run->json));
	return json_node_get_object(run->json);
}

static JsonArray *
array(Run *run)
{
	g_assert_nonnull(run->json);
	g_assert_true(JSON_NODE_HOLDS_ARRAY(run->json));
	return json_node_get_array(run->json);
}

static const gchar *
member(JsonNode *node, const gchar *name)
{
	return json_object_get_string_member(json_node_get_object(node), name);
}

static guint
count_substrings(const gchar *haystack, const gchar *needle)
{
	guint n = 0;
	for (const gchar *p = strstr(haystack, needle); p != NULL; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* The fake OpenAI upstream, to see the key confabctl handed over. */
typedef struct {
	GSubprocess *process;
	gchar *url;
} Upstream;

static void
upstream_free(Upstream *up)
{
	g_subprocess_force_exit(up->process);
	g_subprocess_wait(up->process, NULL, NULL);
	g_object_unref(up->process);
	g_free(up->url);
	g_free(up);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Upstream, upstream_free)

static Upstream *
upstream_start(void)
{
	const gchar *prefix = "fake-upstream: listening on ";
	Upstream *up = g_new0(Upstream, 1);
	g_autoptr(GDataInputStream) out = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *line = NULL;

	/* stdin is a pipe the fake watches: it dies with the test */
	up->process =
	    g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE,
			     &error,
			     g_getenv("CONFAB_FAKE_UPSTREAM"),
			     "--stdin-watch",
			     NULL);
	g_assert_no_error(error);
	out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(up->process));
	line = g_data_input_stream_read_line_utf8(out, NULL, NULL, &error);
	g_assert_no_error(error);
	g_assert_true(g_str_has_prefix(line, prefix));
	up->url = g_strdup(line + strlen(prefix));
	return up;
}

/* The Authorization header of the fake's last completion request, or NULL. */
static gchar *
upstream_last_authorization(Upstream *up)
{
	g_autofree gchar *uri = g_strconcat(up->url, "/_requests", NULL);
	g_autoptr(SoupSession) session = soup_session_new();
	g_autoptr(SoupMessage) msg = soup_message_new("GET", uri);
	g_autoptr(GError) error = NULL;
	g_autoptr(GBytes) body = soup_session_send_and_read(session, msg, NULL, &error);
	g_autoptr(JsonNode) all = NULL;
	JsonArray *requests;
	JsonNode *last;

	g_assert_no_error(error);
	all = json_from_string(g_bytes_get_data(body, NULL), &error);
	g_assert_no_error(error);
	requests = json_node_get_array(all);
	g_assert_cmpuint(json_array_get_length(requests), >, 0);
	last = json_array_get_element(requests, json_array_get_length(requests) - 1);
	return g_strdup(confab_test_json_string(last, "headers.authorization"));
}

static void
test_agents(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *dir = confab_test_make_tmpdir("ctl");
	g_autofree gchar *keyfile = g_build_filename(dir, "key", NULL);
	g_autoptr(Run) created = NULL;
	g_autoptr(Run) shown = NULL;
	g_autoptr(Run) shown_text = NULL;
	g_autoptr(Run) listed = NULL;
	g_autoptr(Run) table = NULL;
	g_autoptr(Run) by_env = NULL;
	g_autoptr(Run) updated = NULL;
	g_autoptr(Run) reshown = NULL;
	g_autoptr(Run) nothing = NULL;
	g_autoptr(Run) deleted = NULL;
	g_autoptr(Run) gone = NULL;
	g_autoptr(Run) gone_update = NULL;
	g_autoptr(Run) gone_delete = NULL;
	g_autoptr(Run) bad_provider = NULL;
	g_autoptr(Run) plain = NULL;
	const gchar *const session_env[] = {"CONFABCTL_BUS", "session", NULL};
	const RunOptions env_opts = {.no_session_flag = TRUE, .env = session_env};
	const gchar *id;

	g_assert_true(g_file_set_contents(keyfile, API_KEY "\n", -1, NULL));
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
		      "Be brief.\nAnd kind.",
		      "--params",
		      "{\"temperature\": 0.5}",
		      "--json",
		      NULL);
	assert_ok(created);
	id = json_object_get_string_member(object(created), "id");
	g_assert_true(g_str_has_prefix(id, "agt_"));
	g_assert_null(strstr(created->out, API_KEY));

	/* without --json: the id alone, for $(…) */
	plain = ctl("agent", "create", "--name", "echo", "--provider", "echo", NULL);
	assert_ok(plain);
	g_assert_true(g_str_has_prefix(plain->out, "agt_"));
	g_assert_cmpuint(strlen(plain->out), ==, strlen(id) + 1);
	g_assert_true(g_str_has_suffix(plain->out, "\n"));

	shown = ctl("--json", "agent", "show", id, NULL);
	assert_ok(shown);
	g_assert_cmpstr(json_object_get_string_member(object(shown), "id"), ==, id);
	g_assert_cmpstr(member(shown->json, "name"), ==, "gpt");
	g_assert_cmpstr(member(shown->json, "provider"), ==, "openai");
	g_assert_cmpstr(member(shown->json, "base_url"), ==, "http://127.0.0.1:9/v1");
	g_assert_cmpstr(member(shown->json, "upstream_model"), ==, "m1");
	g_assert_cmpstr(member(shown->json, "instructions"), ==, "Be brief.\nAnd kind.");
	g_assert_nonnull(strstr(member(shown->json, "params"), "temperature"));
	g_assert_true(json_object_get_boolean_member(object(shown), "has_api_key"));
	g_assert_true(json_object_has_member(object(shown), "created_at"));
	/* the key is sent once and never comes back */
	g_assert_null(strstr(shown->out, API_KEY));
	g_assert_false(json_object_has_member(object(shown), "api_key"));

	shown_text = ctl("agent", "show", id, NULL);
	assert_ok(shown_text);
	g_assert_nonnull(strstr(shown_text->out, "Name:"));
	g_assert_nonnull(strstr(shown_text->out, "gpt"));
	/* a multi-line value continues indented, never as a label of its own */
	g_assert_nonnull(strstr(shown_text->out, "Be brief.\n "));
	g_assert_null(strstr(shown_text->out, API_KEY));
	g_assert_true(
	    g_regex_match_simple("^API key set: +yes$", shown_text->out, G_REGEX_MULTILINE, 0));
	g_assert_true(g_regex_match_simple("^Idle timeout: +0 \\(the default\\)$",
					   shown_text->out,
					   G_REGEX_MULTILINE,
					   0));

	listed = ctl("agent", "list", "--json", NULL);
	assert_ok(listed);
	g_assert_cmpuint(json_array_get_length(array(listed)), ==, 2);
	g_assert_null(strstr(listed->out, API_KEY));
	table = ctl("agent", "list", NULL);
	assert_ok(table);
	g_assert_true(g_str_has_prefix(table->out, "ID"));
	g_assert_nonnull(strstr(table->out, id));
	g_assert_nonnull(strstr(table->out, "openai"));
	g_assert_null(strstr(table->out, API_KEY));
	g_assert_cmpuint(count_substrings(table->out, "\n"), ==, 3);

	/* CONFABCTL_BUS=session stands for --session */
	by_env = ctl_full(&env_opts, "agent", "list", "--json", NULL);
	assert_ok(by_env);
	g_assert_cmpuint(json_array_get_length(array(by_env)), ==, 2);

	updated =
	    ctl("agent", "update", id, "--upstream-model", "m2", "--idle-timeout", "30", NULL);
	assert_ok(updated);
	g_assert_cmpstr(updated->out, ==, "");
	reshown = ctl("agent", "show", id, "--json", NULL);
	assert_ok(reshown);
	g_assert_cmpstr(member(reshown->json, "upstream_model"), ==, "m2");
	g_assert_cmpint(json_object_get_int_member(object(reshown), "idle_timeout"), ==, 30);
	/* what was not given stays */
	g_assert_cmpstr(member(reshown->json, "name"), ==, "gpt");
	g_assert_true(json_object_get_boolean_member(object(reshown), "has_api_key"));

	/* an update that changes nothing is a mistake */
	nothing = ctl("agent", "update", id, NULL);
	assert_status(nothing, 2);

	bad_provider = ctl("agent", "create", "--name", "x", "--provider", "telepathy", NULL);
	assert_refused(bad_provider, "provider");

	deleted = ctl("agent", "delete", id, NULL);
	assert_ok(deleted);
	gone = ctl("agent", "show", id, NULL);
	assert_refused(gone, id);
	gone_update = ctl("agent", "update", id, "--name", "again", NULL);
	assert_refused(gone_update, id);
	gone_delete = ctl("agent", "delete", id, NULL);
	assert_refused(gone_delete, id);

	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	confab_test_rm_rf(dir);
}

/* The key confabctl reads from a file or stdin is the one the upstream gets. */
static void
test_api_key(void)
{
	g_autoptr(ConfabTestDaemon) daemon = NULL;
	g_autoptr(Upstream) up = NULL;
	g_autofree gchar *dir = NULL;
	g_autofree gchar *keyfile = NULL;
	g_autofree gchar *envfile = NULL;
	g_autofree gchar *emptyfile = NULL;
	g_autofree gchar *missing = NULL;
	g_autofree gchar *base_url = NULL;
	g_autofree gchar *token = NULL;
	g_autofree gchar *agent = NULL;
	g_autofree gchar *auth = NULL;
	g_autoptr(Run) created = NULL;
	g_autoptr(Run) rotated = NULL;
	g_autoptr(Run) removed = NULL;
	g_autoptr(Run) both = NULL;
	g_autoptr(Run) from_env_file = NULL;
	g_autoptr(Run) from_empty = NULL;
	g_autoptr(Run) from_missing = NULL;
	g_autoptr(Run) from_bad_stdin = NULL;
	g_autoptr(Run) shown = NULL;
	const RunOptions stdin_opts = {.stdin_text = "  " OTHER_API_KEY "\n"};
	const RunOptions bad_stdin_opts = {.stdin_text = "two words\n"};

	if (g_getenv("CONFAB_FAKE_UPSTREAM") == NULL) {
		g_test_skip("CONFAB_FAKE_UPSTREAM is not set; run the tests with meson test");
		return;
	}
	daemon = confab_test_daemon_start(NULL, NULL);
	up = upstream_start();
	dir = confab_test_make_tmpdir("ctl-key");
	keyfile = g_build_filename(dir, "key", NULL);
	envfile = g_build_filename(dir, "env", NULL);
	emptyfile = g_build_filename(dir, "empty", NULL);
	missing = g_build_filename(dir, "missing", NULL);
	base_url = g_strconcat(up->url, "/v1", NULL);
	token = confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);

	g_assert_true(g_file_set_contents(keyfile, "\n" API_KEY "\n\n", -1, NULL));
	g_assert_true(g_file_set_contents(envfile, "OPENAI_API_KEY=" API_KEY "\nX=1\n", -1, NULL));
	g_assert_true(g_file_set_contents(emptyfile, " \n", -1, NULL));
	created = ctl("agent",
		      "create",
		      "--name",
		      "up",
		      "--provider",
		      "openai",
		      "--base-url",
		      base_url,
		      "--upstream-model",
		      "plain",
		      "--api-key-file",
		      keyfile,
		      NULL);
	assert_ok(created);
	agent = g_strstrip(g_strdup(created->out));
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, token, agent, NULL, "hello", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	auth = upstream_last_authorization(up);
	g_assert_cmpstr(auth, ==, "Bearer " API_KEY);
	g_clear_pointer(&auth, g_free);

	/* "-" reads the key from standard input */
	rotated = ctl_full(&stdin_opts, "agent", "update", agent, "--api-key-file", "-", NULL);
	assert_ok(rotated);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, token, agent, NULL, "hello", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	auth = upstream_last_authorization(up);
	g_assert_cmpstr(auth, ==, "Bearer " OTHER_API_KEY);
	g_clear_pointer(&auth, g_free);

	/* files that hold no key are refused before anything is sent */
	from_env_file = ctl("agent", "update", agent, "--api-key-file", envfile, NULL);
	assert_status(from_env_file, 1);
	g_assert_nonnull(strstr(from_env_file->err, envfile));
	g_assert_null(strstr(from_env_file->err, API_KEY));
	from_empty = ctl("agent", "update", agent, "--api-key-file", emptyfile, NULL);
	assert_status(from_empty, 1);
	from_missing = ctl("agent", "update", agent, "--api-key-file", missing, NULL);
	assert_status(from_missing, 1);
	g_assert_nonnull(strstr(from_missing->err, missing));
	from_bad_stdin =
	    ctl_full(&bad_stdin_opts, "agent", "update", agent, "--api-key-file", "-", NULL);
	assert_status(from_bad_stdin, 1);
	both = ctl("agent", "update", agent, "--api-key-file", keyfile, "--remove-api-key", NULL);
	assert_status(both, 2);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, token, agent, NULL, "hello", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	auth = upstream_last_authorization(up);
	g_assert_cmpstr(auth, ==, "Bearer " OTHER_API_KEY);
	g_clear_pointer(&auth, g_free);

	removed = ctl("agent", "update", agent, "--remove-api-key", NULL);
	assert_ok(removed);
	shown = ctl("agent", "show", agent, "--json", NULL);
	assert_ok(shown);
	g_assert_false(json_object_get_boolean_member(object(shown), "has_api_key"));
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, token, agent, NULL, "hello", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	auth = upstream_last_authorization(up);
	g_assert_null(auth);

	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	confab_test_rm_rf(dir);
}

static void
test_tokens(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *other = confab_test_create_agent(daemon, "other", "echo");
	g_autoptr(Run) created = NULL;
	g_autoptr(Run) created_text = NULL;
	g_autoptr(Run) bound = NULL;
	g_autoptr(Run) expired = NULL;
	g_autoptr(Run) expiring = NULL;
	g_autoptr(Run) dave = NULL;
	g_autoptr(Run) unknown_agent = NULL;
	g_autofree gchar *future = NULL;
	g_autoptr(Run) listed = NULL;
	g_autoptr(Run) listed_all = NULL;
	g_autoptr(Run) table = NULL;
	g_autoptr(Run) revoked = NULL;
	g_autoptr(Run) after_revoke = NULL;
	g_autoptr(Run) revoke_unknown = NULL;
	g_autoptr(Run) bad_scope = NULL;
	g_autofree gchar *text_secret = NULL;
	g_autofree gchar *past = NULL;
	const gchar *secret;
	const gchar *token_id;
	const gchar *line;
	JsonArray *tokens;

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
	token_id = json_object_get_string_member(object(created), "id");
	secret = json_object_get_string_member(object(created), "secret");
	g_assert_true(g_str_has_prefix(token_id, "tok_"));
	g_assert_true(g_str_has_prefix(secret, "nca_"));
	{
		/* the printed secret works */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, secret, agent, NULL, "hello", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}

	/* for people: the id and the secret, once each, and a warning aside */
	created_text = ctl("token",
			   "create",
			   "--owner",
			   "bob",
			   "--scope",
			   "chat.completions",
			   "--scope",
			   "api.full",
			   NULL);
	assert_ok(created_text);
	line = strstr(created_text->out, "nca_");
	g_assert_nonnull(line);
	text_secret = g_strndup(line, strcspn(line, "\n"));
	g_assert_cmpuint(count_substrings(created_text->out, "nca_"), ==, 1);
	g_assert_cmpuint(count_substrings(created_text->out, "tok_"), ==, 1);
	g_assert_null(strstr(created_text->err, "nca_"));
	g_assert_cmpstr(created_text->err, !=, "");
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, text_secret, agent, NULL, "hello", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}

	/* bound to one agent: another is refused */
	bound = ctl("--json",
		    "token",
		    "create",
		    "--owner",
		    "carol",
		    "--scope",
		    "chat.completions",
		    "--agent",
		    agent,
		    NULL);
	assert_ok(bound);
	{
		const gchar *bound_secret = json_object_get_string_member(object(bound), "secret");
		g_autoptr(ConfabTestResponse) ok =
		    confab_test_chat(daemon, bound_secret, agent, NULL, "hello", FALSE);
		g_autoptr(ConfabTestResponse) refused =
		    confab_test_chat(daemon, bound_secret, other, NULL, "hello", FALSE);
		g_assert_cmpuint(ok->status, ==, 200);
		g_assert_cmpuint(refused->status, >=, 400);
	}

	/* --expires-at: in the past is refused, in the future is kept */
	past = g_strdup_printf("%" G_GINT64_FORMAT, g_get_real_time() / G_USEC_PER_SEC - 60);
	expired = ctl("token",
		      "create",
		      "--owner",
		      "dave",
		      "--scope",
		      "chat.completions",
		      "--expires-at",
		      past,
		      NULL);
	assert_refused(expired, "expires_at");
	future = g_strdup_printf("%" G_GINT64_FORMAT, g_get_real_time() / G_USEC_PER_SEC + 3600);
	expiring = ctl("--json",
		       "token",
		       "create",
		       "--owner",
		       "dave",
		       "--scope",
		       "chat.completions",
		       "--expires-at",
		       future,
		       NULL);
	assert_ok(expiring);
	dave = ctl("token", "list", "--owner", "dave", "--json", NULL);
	assert_ok(dave);
	g_assert_cmpuint(json_array_get_length(array(dave)), ==, 1);
	g_assert_cmpint(
	    json_object_get_int_member(json_node_get_object(json_array_get_element(array(dave), 0)),
				       "expires_at"),
	    ==,
	    g_ascii_strtoll(future, NULL, 10));
	unknown_agent = ctl("token",
			    "create",
			    "--owner",
			    "eve",
			    "--scope",
			    "chat.completions",
			    "--agent",
			    "agt_nope",
			    NULL);
	assert_refused(unknown_agent, "agt_nope");

	/* listed, never with a secret */
	listed = ctl("token", "list", "--owner", "alice", "--json", NULL);
	assert_ok(listed);
	tokens = array(listed);
	g_assert_cmpuint(json_array_get_length(tokens), ==, 1);
	g_assert_cmpstr(member(json_array_get_element(tokens, 0), "id"), ==, token_id);
	g_assert_cmpstr(member(json_array_get_element(tokens, 0), "name"), ==, "laptop");
	g_assert_null(strstr(listed->out, secret));
	g_assert_null(strstr(listed->out, secret + 4));
	g_assert_null(strstr(listed->out, "nca_"));
	g_assert_null(strstr(listed->out, "secret"));
	listed_all = ctl("token", "list", "--json", NULL);
	assert_ok(listed_all);
	g_assert_cmpuint(json_array_get_length(array(listed_all)), >=, 3);
	g_assert_null(strstr(listed_all->out, "nca_"));
	table = ctl("token", "list", NULL);
	assert_ok(table);
	g_assert_nonnull(strstr(table->out, token_id));
	g_assert_nonnull(strstr(table->out, "chat.completions,api.full"));
	g_assert_null(strstr(table->out, "nca_"));

	/* revoked: 401 at once, and listed as such */
	revoked = ctl("token", "revoke", token_id, NULL);
	assert_ok(revoked);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, secret, agent, NULL, "hello", FALSE);
		confab_test_assert_error(r, 401, "invalid_api_key");
	}
	after_revoke = ctl("token", "list", "--owner", "alice", NULL);
	assert_ok(after_revoke);
	g_assert_nonnull(strstr(after_revoke->out, "revoked"));
	revoke_unknown = ctl("token", "revoke", "tok_nope", NULL);
	assert_refused(revoke_unknown, "tok_nope");

	bad_scope = ctl("token", "create", "--owner", "eve", "--scope", "", NULL);
	assert_refused(bad_scope, "cope");

	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

/* this month, as confabd counts it (UTC) */
static gchar *
month_now(void)
{
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	return g_date_time_format(now, "%Y-%m");
}

static void
test_quota_usage(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *secret =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autoptr(Run) quota = NULL;
	g_autoptr(Run) usage = NULL;
	g_autoptr(Run) usage_text = NULL;
	g_autoptr(Run) unlimited = NULL;
	g_autoptr(Run) unlimited_text = NULL;
	g_autoptr(Run) bad_quota = NULL;
	g_autoptr(Run) negative = NULL;
	g_autoptr(Run) missing = NULL;
	g_autoptr(Run) status = NULL;
	g_autoptr(Run) status_text = NULL;

	quota = ctl("quota", "set", "alice", "4", NULL);
	assert_ok(quota);
	for (guint i = 0; i < 3; i++) {
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, secret, agent, NULL, "hello", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	usage = ctl("usage", "alice", "--json", NULL);
	assert_ok(usage);
	g_assert_cmpstr(json_object_get_string_member(object(usage), "owner"), ==, "alice");
	g_assert_cmpint(json_object_get_int_member(object(usage), "requests"), ==, 3);
	g_assert_cmpint(json_object_get_int_member(object(usage), "quota"), ==, 4);
	g_assert_cmpint(json_object_get_int_member(object(usage), "remaining"), ==, 1);
	g_assert_false(json_object_get_boolean_member(object(usage), "quota_is_default"));
	g_assert_cmpuint(strlen(json_object_get_string_member(object(usage), "month")), ==, 7);
	usage_text = ctl("usage", "alice", NULL);
	assert_ok(usage_text);
	g_assert_true(
	    g_regex_match_simple("^Requests: +3$", usage_text->out, G_REGEX_MULTILINE, 0));
	g_assert_true(g_regex_match_simple("^Quota: +4$", usage_text->out, G_REGEX_MULTILINE, 0));
	g_assert_true(
	    g_regex_match_simple("^Remaining: +1$", usage_text->out, G_REGEX_MULTILINE, 0));
	{
		/* the fourth is the last */
		g_autoptr(ConfabTestResponse) fourth =
		    confab_test_chat(daemon, secret, agent, NULL, "hello", FALSE);
		g_autoptr(ConfabTestResponse) fifth =
		    confab_test_chat(daemon, secret, agent, NULL, "hello", FALSE);
		g_assert_cmpuint(fourth->status, ==, 200);
		confab_test_assert_error(fifth, 429, "insufficient_quota");
	}

	/* 0 removes the override: the default (unlimited here) applies */
	unlimited = ctl("quota", "set", "alice", "0", NULL);
	assert_ok(unlimited);
	unlimited_text = ctl("usage", "alice", NULL);
	assert_ok(unlimited_text);
	g_assert_nonnull(strstr(unlimited_text->out, "unlimited"));
	g_assert_null(strstr(unlimited_text->out, "Remaining"));
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, secret, agent, NULL, "hello", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}

	{
		/* the usage kept with the turns: five answered, by agent, by
		 * token, of a month, and what the owner's GetUsage adds */
		g_autofree gchar *month = month_now();
		g_autoptr(Run) by_agent = ctl("usage", "--by", "agent", NULL);
		g_autoptr(Run) by_token = ctl("usage", "--by", "token", "--json", NULL);
		g_autoptr(Run) of_alice = ctl("usage", "alice", "--month", month, NULL);
		g_autoptr(Run) old = ctl("usage", "--month", "2001-01", "--json", NULL);
		g_autoptr(Run) tokens_text = ctl("usage", "alice", NULL);
		g_autoptr(Run) bad_by = ctl("usage", "--by", "model", NULL);
		g_autoptr(Run) bad_month = ctl("usage", "--month", "2026-13", NULL);
		g_autoptr(Run) two_owners = ctl("usage", "alice", "bob", NULL);
		g_autofree gchar *agent_line =
		    g_strdup_printf("^%s +%s +5 +[1-9][0-9]* +[1-9][0-9]* +0$", agent, month);
		JsonObject *row;

		assert_ok(by_agent);
		g_assert_true(
		    g_regex_match_simple("^AGENT +MONTH +REQUESTS +INPUT +OUTPUT +REASONING$",
					 by_agent->out,
					 G_REGEX_MULTILINE,
					 0));
		g_assert_true(
		    g_regex_match_simple(agent_line, by_agent->out, G_REGEX_MULTILINE, 0));
		assert_ok(by_token);
		g_assert_cmpuint(json_array_get_length(array(by_token)), ==, 1);
		row = json_array_get_object_element(array(by_token), 0);
		g_assert_true(
		    g_str_has_prefix(json_object_get_string_member(row, "token_id"), "tok_"));
		g_assert_cmpint(json_object_get_int_member(row, "requests"), ==, 5);
		g_assert_cmpint(json_object_get_int_member(row, "input_tokens"), >, 0);
		g_assert_cmpint(json_object_get_int_member(row, "reasoning_tokens"), ==, 0);
		assert_ok(of_alice);
		g_assert_true(g_regex_match_simple("^alice +[0-9-]+ +5 ",
						   of_alice->out,
						   G_REGEX_MULTILINE,
						   0));
		assert_ok(old);
		g_assert_cmpuint(json_array_get_length(array(old)), ==, 0);
		assert_ok(tokens_text);
		g_assert_true(g_regex_match_simple("^Input tokens: +[1-9][0-9]*$",
						   tokens_text->out,
						   G_REGEX_MULTILINE,
						   0));
		g_assert_true(g_regex_match_simple("^Reasoning tokens: +0$",
						   tokens_text->out,
						   G_REGEX_MULTILINE,
						   0));
		assert_status(bad_by, 2);
		assert_status(bad_month, 2);
		assert_status(two_owners, 2);
	}

	bad_quota = ctl("quota", "set", "alice", "lots", NULL);
	assert_status(bad_quota, 2);
	negative = ctl("quota", "set", "alice", "-1", NULL);
	assert_status(negative, 2);
	missing = ctl("quota", "set", "alice", NULL);
	assert_status(missing, 2);

	/* the daemon's properties */
	status = ctl("status", "--json", NULL);
	assert_ok(status);
	g_assert_cmpstr(json_object_get_string_member(object(status), "Version"),
			==,
			PACKAGE_VERSION);
	g_assert_cmpstr(json_object_get_string_member(object(status), "ListenAddress"),
			==,
			daemon->url);
	g_assert_cmpint(json_object_get_int_member(object(status), "TurnsServed"), >=, 5);
	status_text = ctl("status", NULL);
	assert_ok(status_text);
	g_assert_nonnull(strstr(status_text->out, daemon->url));

	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

/* confabctl limits set|show: a round trip, 0 removing one, every bad input
 * refused before or by the daemon, nothing changed */
static void
test_limits(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *token_id = NULL;
	g_autofree gchar *secret =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, &token_id);
	g_autoptr(Run) set = ctl("limits",
				 "set",
				 "owner",
				 "alice",
				 "--rpm",
				 "60",
				 "--tpm",
				 "9000",
				 "--max-parallel",
				 "2",
				 "--monthly-tokens",
				 "123456789",
				 NULL);
	g_autoptr(Run) show = NULL;
	g_autoptr(Run) show_text = NULL;
	g_autoptr(Run) set_token = NULL;
	g_autoptr(Run) show_token = NULL;
	g_autoptr(Run) remove = NULL;
	g_autoptr(Run) after = NULL;
	g_autoptr(Run) revoke = NULL;
	const gchar *const bad[][8] = {
	    {"limits", "set", "owner", "alice", "--rpm", "-1", NULL},
	    {"limits", "set", "owner", "alice", "--rpm", "ten", NULL},
	    {"limits", "set", "owner", "alice", "--max-parallel", "1.5", NULL},
	    {"limits", "set", "owner", "alice", "--tpm", "99999999999999999999999", NULL},
	    {"limits", "set", "owner", "alice", NULL},
	    {"limits", "set", "group", "alice", "--rpm", "1", NULL},
	    {"limits", "set", "owner", NULL},
	    {"limits", "show", "owner", NULL},
	};

	assert_ok(set);
	show = ctl("limits", "show", "owner", "alice", "--json", NULL);
	assert_ok(show);
	g_assert_cmpint(json_object_get_int_member(object(show), "rpm"), ==, 60);
	g_assert_cmpint(json_object_get_int_member(object(show), "tpm"), ==, 9000);
	g_assert_cmpint(json_object_get_int_member(object(show), "max_parallel"), ==, 2);
	g_assert_cmpint(json_object_get_int_member(object(show), "monthly_tokens"), ==, 123456789);
	show_text = ctl("limits", "show", "owner", "alice", NULL);
	assert_ok(show_text);
	g_assert_true(g_regex_match_simple("^Requests per minute: +60$",
					   show_text->out,
					   G_REGEX_MULTILINE,
					   0));
	g_assert_true(
	    g_regex_match_simple("^Turns in flight: +2$", show_text->out, G_REGEX_MULTILINE, 0));

	set_token = ctl("limits", "set", "token", token_id, "--rpm", "5", NULL);
	assert_ok(set_token);
	show_token = ctl("limits", "show", "token", token_id, "--json", NULL);
	assert_ok(show_token);
	g_assert_cmpint(json_object_get_int_member(object(show_token), "rpm"), ==, 5);
	g_assert_cmpint(json_object_get_int_member(object(show_token), "tpm"), ==, 0);

	/* 0 removes one; the others stay */
	remove = ctl("limits", "set", "owner", "alice", "--rpm", "0", NULL);
	assert_ok(remove);
	after = ctl("limits", "show", "owner", "alice", NULL);
	assert_ok(after);
	g_assert_true(
	    g_regex_match_simple("^Requests per minute: +none$", after->out, G_REGEX_MULTILINE, 0));
	g_assert_true(
	    g_regex_match_simple("^Tokens per minute: +9000$", after->out, G_REGEX_MULTILINE, 0));

	/* refused before the daemon is asked: usage errors */
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(Run) run = NULL;
		run = ctl(bad[i][0],
			  bad[i][1],
			  bad[i][2],
			  bad[i][3],
			  bad[i][4],
			  bad[i][5],
			  bad[i][6],
			  bad[i][7],
			  NULL);
		assert_status(run, 2);
	}
	/* refused by the daemon: an unknown owner or token, a revoked token */
	{
		g_autoptr(Run) unknown =
		    ctl("limits", "set", "owner", "nobody-has-this-name", "--rpm", "1", NULL);
		g_autoptr(Run) no_token =
		    ctl("limits", "show", "token", "tok_nosuchtoken000000000000", NULL);
		assert_refused(unknown, "No owner nobody-has-this-name");
		assert_refused(no_token, "No token");
	}
	revoke = ctl("token", "revoke", token_id, NULL);
	assert_ok(revoke);
	{
		g_autoptr(Run) revoked =
		    ctl("limits", "set", "token", token_id, "--rpm", "1", NULL);
		assert_refused(revoked, "revoked");
	}
	{
		/* nothing changed by any of them */
		g_autoptr(Run) final = ctl("limits", "show", "owner", "alice", "--json", NULL);
		assert_ok(final);
		g_assert_cmpint(json_object_get_int_member(object(final), "rpm"), ==, 0);
		g_assert_cmpint(json_object_get_int_member(object(final), "tpm"), ==, 9000);
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_sessions(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *other = confab_test_create_agent(daemon, "other", "echo");
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(daemon, token, agent, NULL, "hello from the API", FALSE);
	g_autoptr(ConfabTestResponse) r2 =
	    confab_test_chat(daemon, token, other, NULL, "hello to the other", FALSE);
	const gchar *api_session = confab_test_json_string(r->json, "metadata.session_id");
	const gchar *other_session = confab_test_json_string(r2->json, "metadata.session_id");
	g_autofree gchar *channel_session = NULL;
	g_autofree gchar *reply = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(Run) all = NULL;
	g_autoptr(Run) all_text = NULL;
	g_autoptr(Run) api = NULL;
	g_autoptr(Run) channel = NULL;
	g_autoptr(Run) by_agent = NULL;
	g_autoptr(Run) by_owner = NULL;
	g_autoptr(Run) first_page = NULL;
	g_autoptr(Run) second_page = NULL;
	g_autoptr(Run) bad_source = NULL;
	g_autoptr(Run) bad_limit = NULL;
	g_autoptr(Run) shown = NULL;
	g_autoptr(Run) shown_page = NULL;
	g_autoptr(Run) shown_text = NULL;
	g_autoptr(Run) deleted = NULL;
	g_autoptr(Run) after_delete = NULL;
	g_autoptr(Run) deleted_again = NULL;
	g_autoptr(Run) show_deleted = NULL;
	JsonArray *sessions;
	JsonArray *messages;
	JsonNode *first;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpuint(r2->status, ==, 200);
	g_assert_true(confab_dbus_chat_call_send_sync(daemon->chat,
						      agent,
						      "",
						      "hello over D-Bus",
						      &channel_session,
						      &reply,
						      NULL,
						      &error));
	g_assert_no_error(error);

	/* every source, newest first, with what an operator needs */
	all = ctl("session", "list", "--json", NULL);
	assert_ok(all);
	sessions = array(all);
	g_assert_cmpuint(json_array_get_length(sessions), ==, 3);
	first = json_array_get_element(sessions, 0);
	g_assert_cmpstr(member(first, "id"), ==, channel_session);
	g_assert_cmpstr(member(first, "source"), ==, "channel");
	g_assert_cmpstr(member(first, "owner"), ==, g_get_user_name());
	g_assert_cmpstr(member(first, "agent_id"), ==, agent);
	g_assert_cmpstr(member(first, "title"), ==, "hello over D-Bus");
	g_assert_true(json_object_has_member(json_node_get_object(first), "updated_at"));
	all_text = ctl("session", "list", NULL);
	assert_ok(all_text);
	g_assert_true(g_str_has_prefix(all_text->out, "ID"));
	g_assert_cmpuint(count_substrings(all_text->out, "\n"), ==, 4);
	g_assert_nonnull(strstr(all_text->out, "hello from the API"));

	api = ctl("session", "list", "--source", "api", "--json", NULL);
	assert_ok(api);
	g_assert_cmpuint(json_array_get_length(array(api)), ==, 2);
	g_assert_null(strstr(api->out, channel_session));
	channel = ctl("session", "list", "--source", "channel", "--owner", g_get_user_name(), NULL);
	assert_ok(channel);
	g_assert_nonnull(strstr(channel->out, channel_session));
	g_assert_null(strstr(channel->out, api_session));
	by_agent = ctl("session", "list", "--agent", other, "--json", NULL);
	assert_ok(by_agent);
	g_assert_cmpuint(json_array_get_length(array(by_agent)), ==, 1);
	g_assert_cmpstr(member(json_array_get_element(array(by_agent), 0), "id"),
			==,
			other_session);
	by_owner = ctl("session", "list", "--owner", "alice", "--json", NULL);
	assert_ok(by_owner);
	g_assert_cmpuint(json_array_get_length(array(by_owner)), ==, 2);

	/* paging: --limit and --after walk the same list */
	first_page = ctl("session", "list", "--limit", "2", "--json", NULL);
	assert_ok(first_page);
	g_assert_cmpuint(json_array_get_length(array(first_page)), ==, 2);
	second_page = ctl("session",
			  "list",
			  "--limit",
			  "2",
			  "--after",
			  member(json_array_get_element(array(first_page), 1), "id"),
			  "--json",
			  NULL);
	assert_ok(second_page);
	g_assert_cmpuint(json_array_get_length(array(second_page)), ==, 1);
	g_assert_cmpstr(member(json_array_get_element(array(second_page), 0), "id"),
			==,
			member(json_array_get_element(sessions, 2), "id"));
	bad_source = ctl("session", "list", "--source", "carrier-pigeon", NULL);
	assert_status(bad_source, 2);
	bad_limit = ctl("session", "list", "--limit", "0", NULL);
	assert_status(bad_limit, 2);

	/* messages, oldest first, content as the v1 API returns it */
	shown = ctl("session", "show", api_session, "--json", NULL);
	assert_ok(shown);
	messages = array(shown);
	g_assert_cmpuint(json_array_get_length(messages), ==, 2);
	g_assert_cmpstr(member(json_array_get_element(messages, 0), "role"), ==, "user");
	g_assert_cmpstr(member(json_array_get_element(messages, 1), "role"), ==, "assistant");
	g_assert_cmpstr(member(json_array_get_element(messages, 1), "session_id"), ==, api_session);
	{
		g_autoptr(JsonNode) content =
		    json_from_string(member(json_array_get_element(messages, 0), "content"), NULL);
		g_assert_cmpstr(confab_test_json_string(content, "0.text"),
				==,
				"hello from the API");
	}
	shown_page = ctl("session", "show", api_session, "--limit", "1", "--json", NULL);
	assert_ok(shown_page);
	g_assert_cmpuint(json_array_get_length(array(shown_page)), ==, 1);
	shown_text = ctl("session", "show", channel_session, NULL);
	assert_ok(shown_text);
	g_assert_nonnull(strstr(shown_text->out, "user: hello over D-Bus"));
	g_assert_nonnull(strstr(shown_text->out, "assistant: hello over D-Bus"));

	/* deleted: gone from the API and from the list, at once */
	deleted = ctl("session", "delete", api_session, NULL);
	assert_ok(deleted);
	{
		g_autofree gchar *path =
		    g_strdup_printf("/api/v1/conversations/%s/messages", api_session);
		g_autoptr(ConfabTestResponse) gone =
		    confab_test_http(daemon, "GET", path, token, NULL);
		confab_test_assert_error(gone, 404, "conversation_not_found");
	}
	after_delete = ctl("session", "list", "--json", NULL);
	assert_ok(after_delete);
	g_assert_cmpuint(json_array_get_length(array(after_delete)), ==, 2);
	g_assert_null(strstr(after_delete->out, api_session));
	deleted_again = ctl("session", "delete", api_session, NULL);
	assert_refused(deleted_again, api_session);
	show_deleted = ctl("session", "show", api_session, NULL);
	assert_refused(show_deleted, api_session);

	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

/* What API users wrote cannot drive the administrator's terminal. */
static void
test_hostile_text(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	/* a title-setting OSC, a screen clear and a C1 CSI, JSON-escaped */
	const gchar *evil = "\\u001b]0;owned\\u0007 hi \\u001b[2J \\u009b31m bye\\r";
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\": \"%s\", \"messages\": [{\"role\": \"user\", \"content\": \"%s\"}]}",
	    agent,
	    evil);
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(daemon, "POST", "/api/v1/chat/completions", token, body);
	const gchar *session = NULL;
	g_autoptr(Run) listed = NULL;
	g_autoptr(Run) listed_json = NULL;
	g_autoptr(Run) shown = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	session = confab_test_json_string(r->json, "metadata.session_id");
	listed = ctl("session", "list", NULL);
	assert_ok(listed);
	shown = ctl("session", "show", session, NULL);
	assert_ok(shown);
	for (guint i = 0; i < 2; i++) {
		const gchar *out = i == 0 ? listed->out : shown->out;
		g_assert_null(strchr(out, '\033'));
		g_assert_null(strchr(out, '\007'));
		g_assert_null(strchr(out, '\r'));
		g_assert_null(strstr(out, "\302\233"));
		g_assert_nonnull(strstr(out, " hi "));
		g_assert_nonnull(strstr(out, "\357\277\275")); /* U+FFFD */
	}
	/* --json carries the text as it is, escaped by the JSON encoder */
	listed_json = ctl("session", "list", "--json", NULL);
	assert_ok(listed_json);
	g_assert_null(strchr(listed_json->out, '\033'));
	g_assert_nonnull(
	    strstr(member(json_array_get_element(array(listed_json), 0), "title"), "\033]0;owned"));

	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

/* session show names the Responses API responses of a conversation's
 * turns; GetMessages carries them as response_id */
static void
test_session_responses(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autofree gchar *body = g_strdup_printf("{\"model\":\"%s\",\"input\":\"first\"}", agent);
	g_autoptr(ConfabTestResponse) r1 =
	    confab_test_http(daemon, "POST", "/api/v1/responses", token, body);
	g_autofree gchar *body2 = NULL;
	g_autoptr(ConfabTestResponse) r2 = NULL;
	g_autoptr(ConfabTestResponse) chat = NULL;
	g_autoptr(Run) shown = NULL;
	g_autoptr(Run) shown_json = NULL;
	g_autofree gchar *line1 = NULL;
	g_autofree gchar *line2 = NULL;
	const gchar *session;
	const gchar *first, *second;

	g_assert_cmpuint(r1->status, ==, 200);
	session = confab_test_json_string(r1->json, "conversation.id");
	body2 = g_strdup_printf(
	    "{\"model\":\"%s\",\"input\":\"second\",\"previous_response_id\":\"%s\"}",
	    agent,
	    confab_test_json_string(r1->json, "id"));
	r2 = confab_test_http(daemon, "POST", "/api/v1/responses", token, body2);
	g_assert_cmpuint(r2->status, ==, 200);
	chat = confab_test_chat(daemon, token, agent, session, "a chat turn", FALSE);
	g_assert_cmpuint(chat->status, ==, 200);

	shown = ctl("session", "show", session, NULL);
	assert_ok(shown);
	line1 = g_strdup_printf("-- response %s --\n", confab_test_json_string(r1->json, "id"));
	line2 = g_strdup_printf("-- response %s --\n", confab_test_json_string(r2->json, "id"));
	first = strstr(shown->out, line1);
	second = strstr(shown->out, line2);
	g_assert_nonnull(first);
	g_assert_nonnull(second);
	g_assert_true(first < second);
	g_assert_nonnull(strstr(second, "a chat turn"));
	/* each response named once */
	g_assert_null(strstr(first + 1, line1));

	shown_json = ctl("session", "show", session, "--json", NULL);
	assert_ok(shown_json);
	g_assert_cmpstr(member(json_array_get_element(array(shown_json), 0), "response_id"),
			==,
			confab_test_json_string(r1->json, "id"));
	g_assert_cmpstr(member(json_array_get_element(array(shown_json), 3), "response_id"),
			==,
			confab_test_json_string(r2->json, "id"));
	/* a chat completion's messages have none */
	g_assert_false(json_object_has_member(
	    json_node_get_object(json_array_get_element(array(shown_json), 4)),
	    "response_id"));

	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

static void
test_usage_errors(void)
{
	g_autoptr(Run) no_command = ctl(NULL);
	g_autoptr(Run) unknown = ctl("frobnicate", NULL);
	g_autoptr(Run) unknown_sub = ctl("agent", "frobnicate", NULL);
	g_autoptr(Run) unknown_option = ctl("agent", "list", "--frobnicate", NULL);
	g_autoptr(Run) extra = ctl("agent", "list", "extra", NULL);
	g_autoptr(Run) missing = ctl("token", "create", "--owner", "bob", NULL);
	g_autoptr(Run) missing_id = ctl("agent", "show", NULL);
	g_autoptr(Run) both_buses = ctl("--system", "agent", "list", NULL);
	g_autoptr(Run) help = ctl("agent", "create", "--help", NULL);
	g_autoptr(Run) help_cmd = ctl("help", NULL);
	g_autoptr(Run) help_of = ctl("help", "session", "list", NULL);
	g_autoptr(Run) version = ctl("--version", NULL);

	assert_status(no_command, 2);
	g_assert_nonnull(strstr(no_command->err, "agent create"));
	assert_status(unknown, 2);
	g_assert_nonnull(strstr(unknown->err, "frobnicate"));
	assert_status(unknown_sub, 2);
	assert_status(unknown_option, 2);
	g_assert_nonnull(strstr(unknown_option->err, "--frobnicate"));
	assert_status(extra, 2);
	assert_status(missing, 2);
	g_assert_nonnull(strstr(missing->err, "--scope"));
	assert_status(missing_id, 2);
	assert_status(both_buses, 2);
	g_assert_cmpstr(both_buses->out, ==, "");

	/* help needs no daemon */
	assert_ok(help);
	g_assert_nonnull(strstr(help->out, "--api-key-file"));
	g_assert_null(strstr(help->out, "--api-key="));
	assert_ok(help_cmd);
	for (const gchar *const *c = (const gchar *const[]){"agent create",
							    "agent list",
							    "agent show",
							    "agent update",
							    "agent delete",
							    "token create",
							    "token list",
							    "token revoke",
							    "quota set",
							    "usage",
							    "limits set",
							    "limits show",
							    "session list",
							    "session show",
							    "session delete",
							    NULL};
	     *c != NULL;
	     c++)
		g_assert_nonnull(strstr(help_cmd->out, *c));
	assert_ok(help_of);
	g_assert_nonnull(strstr(help_of->out, "--source"));
	assert_ok(version);
	g_assert_cmpstr(version->out, ==, "confabctl " PACKAGE_VERSION "\n");
}

static void
test_unreachable(void)
{
	const gchar *const no_bus_env[] = {"DBUS_SESSION_BUS_ADDRESS",
					   "unix:path=/nonexistent/confab-test-bus",
					   NULL};
	const RunOptions no_bus = {.env = no_bus_env};
	g_autoptr(ConfabTestDaemon) daemon = NULL;
	g_autoptr(Run) nobody = NULL;
	g_autoptr(Run) after_stop = NULL;
	g_autoptr(Run) no_bus_at_all = NULL;

	/* nobody owns org.confab.Confab1 on the bus */
	nobody = ctl("agent", "list", NULL);
	assert_status(nobody, 3);
	g_assert_nonnull(strstr(nobody->err, "cannot be reached"));
	g_assert_cmpstr(nobody->out, ==, "");

	/* the daemon went away */
	daemon = confab_test_daemon_start(NULL, NULL);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	after_stop = ctl("session", "list", "--json", NULL);
	assert_status(after_stop, 3);
	g_assert_cmpstr(after_stop->out, ==, "");

	/* no bus at all */
	no_bus_at_all = ctl_full(&no_bus, "usage", "alice", NULL);
	assert_status(no_bus_at_all, 3);
	g_assert_nonnull(strstr(no_bus_at_all->err, "session bus"));
}

/* Without --system or --session, and with no system service to talk to,
 * confabctl talks to the per-user daemon on the session bus. */
static void
test_default_bus(void)
{
	const gchar *const no_system_env[] = {"DBUS_SYSTEM_BUS_ADDRESS",
					      "unix:path=/nonexistent/confab-test-system-bus",
					      "CONFABCTL_BUS",
					      "",
					      NULL};
	const RunOptions no_system = {.no_session_flag = TRUE, .env = no_system_env};
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "mine", "echo");
	g_autoptr(Run) listed = ctl_full(&no_system, "agent", "list", "--json", NULL);

	assert_ok(listed);
	g_assert_cmpuint(json_array_get_length(array(listed)), ==, 1);
	g_assert_nonnull(strstr(listed->out, agent));
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

/* --upstream (repeated), --routing, --hedge-after-ms: in, and shown back
 * without keys; bad specs refused before anything is sent */
static void
test_upstreams(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *dir = confab_test_make_tmpdir("ctl-upstreams");
	g_autofree gchar *keyfile = g_build_filename(dir, "key", NULL);
	g_autofree gchar *first = NULL;
	g_autofree gchar *id = NULL;
	g_autoptr(Run) created = NULL;
	g_autoptr(Run) shown = NULL;
	g_autoptr(Run) updated = NULL;
	g_autoptr(Run) again = NULL;
	g_autoptr(JsonNode) upstreams = NULL;
	g_autoptr(JsonNode) routing = NULL;
	JsonArray *targets;
	const gchar *const bad[][2] = {
	    {"--upstream", "label=a,base_url=http://x/v1,model=m,weight=0"},
	    {"--upstream", "label=a,base_url=ftp://x/v1,model=m"},
	    {"--upstream", "label=a,base_url=http://x/v1,model=m,colour=red"},
	    {"--upstream", "label=a,base_url=http://x/v1,model=m,weight=lots"},
	    {"--routing", "random"},
	};

	g_assert_true(g_file_set_contents(keyfile, API_KEY "\n", -1, NULL));
	first =
	    g_strdup_printf("label=hosted,base_url=https://api.example/v1,model=big,key_file=%s,"
			    "weight=3",
			    keyfile);
	created = ctl("agent",
		      "create",
		      "--name",
		      "routed",
		      "--provider",
		      "openai",
		      "--upstream",
		      first,
		      "--upstream",
		      "label=local,base_url=http://127.0.0.1:11434/v1,model=small",
		      "--routing",
		      "weighted",
		      "--hedge-after-ms",
		      "800",
		      NULL);
	assert_ok(created);
	id = g_strstrip(g_strdup(created->out));
	shown = ctl("--json", "agent", "show", id, NULL);
	assert_ok(shown);
	g_assert_null(strstr(shown->out, API_KEY));
	upstreams = json_from_string(confab_test_json_string(shown->json, "upstreams"), NULL);
	targets = json_node_get_array(upstreams);
	g_assert_cmpuint(json_array_get_length(targets), ==, 2);
	g_assert_true(json_object_get_boolean_member(json_array_get_object_element(targets, 0),
						     "has_api_key"));
	g_assert_cmpint(
	    json_object_get_int_member(json_array_get_object_element(targets, 0), "weight"),
	    ==,
	    3);
	g_assert_cmpstr(
	    json_object_get_string_member(json_array_get_object_element(targets, 1), "label"),
	    ==,
	    "local");
	routing = json_from_string(confab_test_json_string(shown->json, "routing"), NULL);
	g_assert_cmpstr(json_object_get_string_member(json_node_get_object(routing), "strategy"),
			==,
			"weighted");

	/* --routing alone keeps hedge_after_ms */
	updated = ctl("agent", "update", id, "--routing", "least-busy", NULL);
	assert_ok(updated);
	again = ctl("--json", "agent", "show", id, NULL);
	g_clear_pointer(&routing, json_node_unref);
	routing = json_from_string(confab_test_json_string(again->json, "routing"), NULL);
	g_assert_cmpstr(json_object_get_string_member(json_node_get_object(routing), "strategy"),
			==,
			"least-busy");
	g_assert_cmpint(json_object_get_int_member(json_node_get_object(routing), "hedge_after_ms"),
			==,
			800);

	{
		/* health: every target, up before any call */
		g_autoptr(Run) health = ctl("--json", "agent", "health", id, NULL);
		g_autoptr(Run) table = ctl("agent", "health", id, NULL);
		g_autoptr(Run) missing =
		    ctl("agent", "health", "agt_00000000000000000000000000", NULL);
		JsonArray *rows;

		assert_ok(health);
		rows = json_node_get_array(health->json);
		g_assert_cmpuint(json_array_get_length(rows), ==, 2);
		g_assert_cmpstr(
		    json_object_get_string_member(json_array_get_object_element(rows, 1), "label"),
		    ==,
		    "local");
		g_assert_cmpstr(
		    json_object_get_string_member(json_array_get_object_element(rows, 0), "state"),
		    ==,
		    "up");
		assert_ok(table);
		g_assert_nonnull(strstr(table->out, "hosted"));
		g_assert_cmpint(missing->status, !=, 0);
	}
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(Run) refused = ctl("agent", "update", id, bad[i][0], bad[i][1], NULL);
		g_assert_cmpint(refused->status, !=, 0);
		g_assert_cmpstr(refused->err, !=, "");
	}
	{
		/* --upstream names every target: not with --base-url */
		g_autoptr(Run) both = ctl("agent",
					  "update",
					  id,
					  "--base-url",
					  "http://x/v1",
					  "--upstream",
					  "label=a,base_url=http://x/v1,model=m",
					  NULL);
		g_assert_cmpint(both->status, !=, 0);
	}
	confab_test_rm_rf(dir);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

/* confabctl response list|cancel: a background response that runs (its
 * upstream holds the answer), listed, stopped, and listed no more */
static void
test_background_responses(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	ConfabTestUpstream *up = confab_test_upstream_start(TRUE);
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autofree gchar *agent = NULL;
	g_autofree gchar *body = NULL;
	g_autofree gchar *path = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	g_autoptr(Run) listed = NULL;
	g_autoptr(Run) bobs = NULL;
	g_autoptr(Run) cancelled = NULL;
	g_autoptr(Run) empty = NULL;
	g_autoptr(Run) unknown = NULL;
	g_autoptr(Run) shown = NULL;
	g_autofree gchar *running = NULL;
	const gchar *id;
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "held");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", confab_test_upstream_get_base_url(up));
	g_variant_dict_insert(&dict, "upstream_model", "s", "m");
	agent = confab_test_create_agent_props(daemon, g_variant_dict_end(&dict));
	body = g_strdup_printf("{\"model\":\"%s\",\"input\":\"go\",\"background\":true}", agent);
	r = confab_test_http(daemon, "POST", "/api/v1/responses", token, body);
	g_assert_cmpuint(r->status, ==, 200);
	id = confab_test_json_string(r->json, "id");
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));

	listed = ctl("response", "list", NULL);
	assert_ok(listed);
	g_assert_nonnull(strstr(listed->out, id));
	g_assert_nonnull(strstr(listed->out, "alice"));
	g_assert_nonnull(strstr(listed->out, "in_progress"));
	bobs = ctl("response", "list", "--owner", "bob", NULL);
	assert_ok(bobs);
	g_assert_null(strstr(bobs->out, id));
	/* and in its conversation, new as it is */
	shown = ctl("session", "show", confab_test_json_string(r->json, "conversation.id"), NULL);
	assert_ok(shown);
	running = g_strdup_printf("-- response %s runs in the background (in_progress) --", id);
	g_assert_nonnull(strstr(shown->out, running));

	cancelled = ctl("response", "cancel", id, NULL);
	assert_ok(cancelled);
	/* it ends cancelled: then it is no longer listed */
	path = g_strdup_printf("/api/v1/responses/%s", id);
	for (gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;;) {
		g_autoptr(ConfabTestResponse) got =
		    confab_test_http(daemon, "GET", path, token, NULL);
		if (g_strcmp0(confab_test_json_string(got->json, "status"), "cancelled") == 0)
			break;
		g_assert_cmpint(g_get_monotonic_time(), <, deadline);
		g_usleep(20000);
	}
	empty = ctl("response", "list", NULL);
	assert_ok(empty);
	g_assert_null(strstr(empty->out, id));
	unknown = ctl("response", "cancel", "resp_00000000000000000000000000", NULL);
	assert_refused(unknown, "resp_00000000000000000000000000");
	confab_test_upstream_set_hold(up, FALSE);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	confab_test_upstream_stop(up);
}

/* Conversations made by the Conversations API (POST /conversations), one
 * with items and no agent yet, one empty: listed and shown sanely (no
 * agent is "-", no title either), and an answer of which an item was
 * deleted shows what is left. */
static void
test_api_conversations(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
	g_autofree gchar *token =
	    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
	g_autoptr(ConfabTestResponse) made =
	    confab_test_http(daemon,
			     "POST",
			     "/api/v1/conversations",
			     token,
			     "{\"items\":[{\"role\":\"user\",\"content\":\"made of items\"},"
			     "{\"role\":\"assistant\",\"content\":\"noted\"},"
			     "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"lookup\","
			     "\"arguments\":\"{}\"}],\"metadata\":{\"k\":\"v\"}}");
	g_autoptr(ConfabTestResponse) empty =
	    confab_test_http(daemon, "POST", "/api/v1/conversations", token, "{}");
	g_autoptr(Run) listed = NULL;
	g_autoptr(Run) listed_text = NULL;
	g_autoptr(Run) by_agent = NULL;
	g_autoptr(Run) shown = NULL;
	g_autoptr(Run) shown_text = NULL;
	g_autoptr(Run) shown_empty = NULL;
	g_autoptr(Run) shown_after = NULL;
	const gchar *id, *empty_id;
	JsonArray *sessions;

	g_assert_cmpuint(made->status, ==, 200);
	g_assert_cmpuint(empty->status, ==, 200);
	id = confab_test_json_string(made->json, "id");
	empty_id = confab_test_json_string(empty->json, "id");

	listed = ctl("session", "list", "--json", NULL);
	assert_ok(listed);
	sessions = array(listed);
	g_assert_cmpuint(json_array_get_length(sessions), ==, 2);
	g_assert_cmpstr(member(json_array_get_element(sessions, 0), "id"), ==, empty_id);
	g_assert_cmpstr(member(json_array_get_element(sessions, 0), "agent_id"), ==, "");
	g_assert_cmpstr(member(json_array_get_element(sessions, 0), "title"), ==, "");
	g_assert_cmpstr(member(json_array_get_element(sessions, 1), "id"), ==, id);
	g_assert_cmpstr(member(json_array_get_element(sessions, 1), "source"), ==, "api");
	g_assert_cmpstr(member(json_array_get_element(sessions, 1), "owner"), ==, "alice");
	g_assert_cmpstr(member(json_array_get_element(sessions, 1), "agent_id"), ==, "");
	g_assert_cmpstr(member(json_array_get_element(sessions, 1), "title"), ==, "made of items");
	listed_text = ctl("session", "list", NULL);
	assert_ok(listed_text);
	g_assert_cmpuint(count_substrings(listed_text->out, "\n"), ==, 3);
	g_assert_nonnull(strstr(listed_text->out, "made of items"));
	g_assert_nonnull(strstr(listed_text->out, " - "));
	/* no agent's conversations */
	by_agent = ctl("session", "list", "--agent", agent, "--json", NULL);
	assert_ok(by_agent);
	g_assert_cmpuint(json_array_get_length(array(by_agent)), ==, 0);

	shown = ctl("session", "show", id, "--json", NULL);
	assert_ok(shown);
	g_assert_cmpuint(json_array_get_length(array(shown)), ==, 2);
	g_assert_cmpstr(member(json_array_get_element(array(shown), 1), "role"), ==, "assistant");
	shown_text = ctl("session", "show", id, NULL);
	assert_ok(shown_text);
	g_assert_nonnull(strstr(shown_text->out, "user: made of items"));
	g_assert_nonnull(strstr(shown_text->out, "assistant: noted"));
	shown_empty = ctl("session", "show", empty_id, "--json", NULL);
	assert_ok(shown_empty);
	g_assert_cmpuint(json_array_get_length(array(shown_empty)), ==, 0);
	{
		/* the answer's text deleted as an item: its call is left */
		g_autoptr(ConfabTestResponse) items = NULL;
		g_autoptr(ConfabTestResponse) gone = NULL;
		g_autofree gchar *path = g_strdup_printf("/api/v1/conversations/%s/items", id);
		g_autofree gchar *item_path = NULL;

		items = confab_test_http(daemon, "GET", path, token, NULL);
		g_assert_cmpuint(items->status, ==, 200);
		/* newest first: the call, the answer's text, the question */
		item_path = g_strdup_printf("%s/%s",
					    path,
					    confab_test_json_string(items->json, "data.1.id"));
		gone = confab_test_http(daemon, "DELETE", item_path, token, NULL);
		g_assert_cmpuint(gone->status, ==, 200);
	}
	shown_after = ctl("session", "show", id, NULL);
	assert_ok(shown_after);
	g_assert_null(strstr(shown_after->out, "noted"));
	g_assert_nonnull(strstr(shown_after->out, "user: made of items"));
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

gint
main(gint argc, gchar **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
	if (g_getenv("CONFABCTL") == NULL) {
		g_printerr("SKIP: CONFABCTL is not set; run the tests with meson test\n");
		return CONFAB_TEST_SKIP;
	}
	g_test_add_func("/confab/confabctl/agents", test_agents);
	g_test_add_func("/confab/confabctl/api-key", test_api_key);
	g_test_add_func("/confab/confabctl/upstreams", test_upstreams);
	g_test_add_func("/confab/confabctl/tokens", test_tokens);
	g_test_add_func("/confab/confabctl/quota-usage", test_quota_usage);
	g_test_add_func("/confab/confabctl/limits", test_limits);
	g_test_add_func("/confab/confabctl/sessions", test_sessions);
	g_test_add_func("/confab/confabctl/api-conversations", test_api_conversations);
	g_test_add_func("/confab/confabctl/hostile-text", test_hostile_text);
	g_test_add_func("/confab/confabctl/session-responses", test_session_responses);
	g_test_add_func("/confab/confabctl/background-responses", test_background_responses);
	g_test_add_func("/confab/confabctl/usage-errors", test_usage_errors);
	g_test_add_func("/confab/confabctl/unreachable", test_unreachable);
	g_test_add_func("/confab/confabctl/default-bus", test_default_bus);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
