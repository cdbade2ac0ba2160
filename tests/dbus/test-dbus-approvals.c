/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-fake-notifications.h"
#include "confab-test-helper.h"

/*
 * Approvals on the desktop (issue 22): a turn started from the desktop —
 * Chat.Send on the session bus, GNOME Shell search's "Ask" — whose agent
 * wants to run a tool that needs approval shows a notification with the
 * actions "allow" and "deny", saying which agent wants to run which tool
 * with which arguments; the notification server's ActionInvoked decides
 * (by "desktop"). A fake notification server on the test's private
 * session bus records the Notify calls and clicks the buttons. The tool
 * is the MCP project's filesystem server (tests/mcp).
 */

#define SEARCH_PATH  "/org/confab/Confab1/SearchProvider"
#define SEARCH_IFACE "org.gnome.Shell.SearchProvider2"

typedef struct {
	ConfabTestDaemon *daemon;
	ConfabFakeNotifications *notifications;
	gchar *agent;
	gchar *tmpdir;
	gchar *file;
} Fixture;

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

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	g_autofree gchar *script = npm_server("server-filesystem");
	g_autofree gchar *servers = NULL;
	GVariantDict dict;

	if (script == NULL) {
		g_test_skip("the MCP reference servers are not installed (cd tests/mcp && npm ci)");
		return;
	}
	f->tmpdir = confab_test_make_tmpdir("dbus-approvals");
	f->file = g_build_filename(f->tmpdir, "desk.txt", NULL);
	f->notifications = confab_fake_notifications_new();
	f->daemon = confab_test_daemon_start(NULL, NULL);
	servers = g_strdup_printf("{\"mcpServers\":{\"files\":{\"command\":\"node\","
				  "\"args\":[\"%s\",\"%s\"],\"require_approval\":\"always\"}}}",
				  script,
				  f->tmpdir);
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "Scribe");
	g_variant_dict_insert(&dict, "provider", "s", "echo");
	g_variant_dict_insert(&dict, "mcp_servers", "s", servers);
	f->agent = confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	if (f->daemon != NULL) {
		g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
		confab_test_daemon_free(f->daemon);
	}
	g_clear_pointer(&f->notifications, confab_fake_notifications_free);
	if (f->tmpdir != NULL)
		confab_test_rm_rf(f->tmpdir);
	g_free(f->tmpdir);
	g_free(f->file);
	g_free(f->agent);
}

static gchar *
write_text(Fixture *f, const gchar *content)
{
	return g_strdup_printf("/tool files__write_file {\"path\":\"%s\",\"content\":\"%s\"}",
			       f->file,
			       content);
}

typedef struct {
	GAsyncResult *result;
} Pending;

static void
on_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Pending *p = user_data;
	p->result = g_object_ref(result);
}

static gboolean
pending_done(gpointer data)
{
	Pending *p = data;
	while (g_main_context_iteration(NULL, FALSE))
		;
	return p->result != NULL;
}

/* The approval's notification: its actions, summary and body (a little
 * markup, so text is escaped). */
static void
check_prompt(Fixture *f, guint index, const gchar *expect_in_body)
{
	GVariant *params;
	const gchar *summary = NULL, *body = NULL;
	g_autofree const gchar **actions = NULL;
	g_autoptr(GVariant) hints = NULL;
	guint8 urgency = 0;

	g_assert_true(confab_fake_notifications_wait(f->notifications, index + 1, 30000));
	params = confab_fake_notifications_get(f->notifications, index);
	g_variant_get_child(params, 3, "&s", &summary);
	g_variant_get_child(params, 4, "&s", &body);
	g_variant_get_child(params, 5, "^a&s", &actions);
	hints = g_variant_get_child_value(params, 6);
	g_assert_cmpstr(summary, ==, "Allow Scribe to run a tool?");
	g_assert_true(
	    g_str_has_prefix(body, "Scribe wants to run the tool write_file of files with "));
	g_assert_nonnull(strstr(body, expect_in_body));
	g_assert_cmpuint(g_strv_length((gchar **)actions), ==, 4);
	g_assert_cmpstr(actions[0], ==, "allow");
	g_assert_cmpstr(actions[2], ==, "deny");
	g_assert_true(g_variant_lookup(hints, "urgency", "y", &urgency));
	g_assert_cmpuint(urgency, ==, 2);
}

static gchar *
send_and_decide(Fixture *f, const gchar *text, const gchar *action, gchar **session_id)
{
	Pending p = {NULL};
	g_autoptr(GError) error = NULL;
	gchar *reply = NULL;

	confab_dbus_chat_call_send(f->daemon->chat, f->agent, "", text, NULL, on_done, &p);
	check_prompt(f, 0, "{&quot;path&quot;:");
	g_assert_null(p.result); /* the turn waits */
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	confab_fake_notifications_invoke_action(f->notifications, 0, action);
	g_assert_true(confab_test_wait_until(pending_done, &p, 30000));
	g_assert_true(confab_dbus_chat_call_send_finish(f->daemon->chat,
							session_id,
							&reply,
							p.result,
							&error));
	g_assert_no_error(error);
	g_object_unref(p.result);
	return reply;
}

static const gchar *
approval_by(Fixture *f, const gchar *session_id, gboolean *approve)
{
	static gchar by[32];
	g_autoptr(GVariant) messages = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonParser) parser = json_parser_new();
	const gchar *blocks = NULL;
	JsonArray *array;

	g_assert_true(confab_dbus_admin_call_get_messages_sync(f->daemon->admin,
							       session_id,
							       g_variant_new_parsed("@a{sv} {}"),
							       &messages,
							       NULL,
							       &error));
	g_assert_no_error(error);
	g_assert_cmpuint(g_variant_n_children(messages), ==, 2);
	{
		g_autoptr(GVariant) answer = g_variant_get_child_value(messages, 1);
		g_assert_true(g_variant_lookup(answer, "content_blocks", "&s", &blocks));
		g_assert_true(json_parser_load_from_data(parser, blocks, -1, NULL));
	}
	array = json_node_get_array(json_parser_get_root(parser));
	for (guint i = 0; i < json_array_get_length(array); i++) {
		JsonObject *b = json_array_get_object_element(array, i);
		if (g_str_equal(json_object_get_string_member(b, "type"), "approval")) {
			*approve = json_object_get_boolean_member(b, "approve");
			g_strlcpy(by, json_object_get_string_member(b, "by"), sizeof(by));
			return by;
		}
	}
	g_error("no approval block");
	return NULL;
}

/* Chat.Send, "allow": the file is written and the answer says so. */
static void
test_send_allow(Fixture *f, gconstpointer data)
{
	g_autofree gchar *text = NULL;
	g_autofree gchar *reply = NULL;
	g_autofree gchar *session = NULL;
	g_autofree gchar *written = NULL;
	gboolean approve = FALSE;

	if (f->daemon == NULL)
		return;
	text = write_text(f, "from the desktop");
	reply = send_and_decide(f, text, "allow", &session);
	g_assert_true(g_file_get_contents(f->file, &written, NULL, NULL));
	g_assert_cmpstr(written, ==, "from the desktop");
	g_assert_null(strstr(reply, "declined"));
	g_assert_cmpstr(approval_by(f, session, &approve), ==, "desktop");
	g_assert_true(approve);
}

/* Chat.Send, "deny": nothing is written; the model hears the user
 * declined. Long arguments are cut in the notification. */
static void
test_send_deny(Fixture *f, gconstpointer data)
{
	g_autofree gchar *long_content = g_strnfill(400, 'x');
	g_autofree gchar *text = NULL;
	g_autofree gchar *reply = NULL;
	g_autofree gchar *session = NULL;
	gboolean approve = TRUE;
	const gchar *body = NULL;

	if (f->daemon == NULL)
		return;
	text = write_text(f, long_content);
	reply = send_and_decide(f, text, "deny", &session);
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	g_assert_nonnull(strstr(reply, "declined"));
	g_assert_cmpstr(approval_by(f, session, &approve), ==, "desktop");
	g_assert_false(approve);
	g_variant_get_child(confab_fake_notifications_get(f->notifications, 0), 4, "&s", &body);
	g_assert_null(strstr(body, long_content));
	g_assert_true(g_str_has_suffix(body, "…"));
	g_assert_cmpuint(g_utf8_strlen(body, -1), <, 400);
}

/* GNOME Shell search's "Ask": the approval is asked the same way; once
 * allowed, the answer comes as a notification of its own. */
static void
test_ask_allow(Fixture *f, gconstpointer data)
{
	g_autofree gchar *text = NULL;
	g_autofree gchar *id = NULL;
	g_autofree gchar *written = NULL;
	g_autoptr(GDBusConnection) bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, NULL);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GError) error = NULL;
	const gchar *const terms[] = {"write", NULL};
	const gchar *summary = NULL;

	if (f->daemon == NULL)
		return;
	text = write_text(f, "asked from the shell");
	id = g_strconcat("ask:", f->agent, ":", text, NULL);
	reply = g_dbus_connection_call_sync(bus,
					    "org.confab.Confab1",
					    SEARCH_PATH,
					    SEARCH_IFACE,
					    "ActivateResult",
					    g_variant_new("(s^asu)", id, terms, 0),
					    G_VARIANT_TYPE("()"),
					    G_DBUS_CALL_FLAGS_NONE,
					    30000,
					    NULL,
					    &error);
	g_assert_no_error(error);
	check_prompt(f, 0, "asked from the shell");
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	confab_fake_notifications_invoke_action(f->notifications, 0, "allow");
	/* the answer */
	g_assert_true(confab_fake_notifications_wait(f->notifications, 2, 30000));
	g_variant_get_child(confab_fake_notifications_get(f->notifications, 1), 3, "&s", &summary);
	g_assert_cmpstr(summary, ==, "Scribe");
	g_assert_true(g_file_get_contents(f->file, &written, NULL, NULL));
	g_assert_cmpstr(written, ==, "asked from the shell");
}

/* From the terminal: confabctl approval list shows the waiting call,
 * approval deny declines it (by "dbus"), its notification is withdrawn,
 * and a second decision fails. */
static void
test_terminal_deny(Fixture *f, gconstpointer data)
{
	Pending p = {NULL};
	g_autoptr(GError) error = NULL;
	g_autofree gchar *text = NULL;
	g_autofree gchar *listed = NULL;
	g_autofree gchar *denied = NULL;
	g_autofree gchar *again = NULL;
	g_autofree gchar *empty = NULL;
	g_autofree gchar *session_id = NULL;
	g_autofree gchar *reply = NULL;
	g_autoptr(JsonNode) list = NULL;
	JsonObject *item;
	gchar id[64];
	gboolean approve = TRUE;

	if (f->daemon == NULL)
		return;
	if (g_getenv("CONFABCTL") == NULL) {
		g_test_skip("CONFABCTL is not set; run the tests with meson test");
		return;
	}
	text = write_text(f, "from the terminal");
	confab_dbus_chat_call_send(f->daemon->chat, f->agent, "", text, NULL, on_done, &p);
	check_prompt(f, 0, "from the terminal");
	g_assert_cmpint(
	    confab_test_confabctl(&listed, (const gchar *[]){"--json", "approval", "list", NULL}),
	    ==,
	    0);
	list = json_from_string(listed, NULL);
	g_assert_nonnull(list);
	g_assert_cmpuint(json_array_get_length(json_node_get_array(list)), ==, 1);
	item = json_array_get_object_element(json_node_get_array(list), 0);
	g_assert_cmpstr(json_object_get_string_member(item, "server"), ==, "files");
	g_assert_cmpstr(json_object_get_string_member(item, "tool"), ==, "write_file");
	g_assert_cmpstr(json_object_get_string_member(item, "agent_id"), ==, f->agent);
	g_assert_nonnull(strstr(json_object_get_string_member(item, "arguments"), "terminal"));
	g_strlcpy(id, json_object_get_string_member(item, "id"), sizeof(id));

	g_assert_cmpint(
	    confab_test_confabctl(&denied, (const gchar *[]){"approval", "deny", id, NULL}),
	    ==,
	    0);
	g_assert_nonnull(strstr(denied, id));
	g_assert_true(confab_test_wait_until(pending_done, &p, 30000));
	g_assert_true(confab_dbus_chat_call_send_finish(f->daemon->chat,
							&session_id,
							&reply,
							p.result,
							&error));
	g_assert_no_error(error);
	g_object_unref(p.result);
	g_assert_nonnull(strstr(reply, "declined"));
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	g_assert_cmpstr(approval_by(f, session_id, &approve), ==, "dbus");
	g_assert_false(approve);
	/* decided elsewhere: its notification is withdrawn */
	g_assert_true(confab_fake_notifications_wait_closed(f->notifications, 0, 30000));

	/* decided: not listed, and not decided twice */
	g_assert_cmpint(
	    confab_test_confabctl(&again, (const gchar *[]){"approval", "allow", id, NULL}),
	    !=,
	    0);
	g_assert_cmpint(
	    confab_test_confabctl(&empty, (const gchar *[]){"--json", "approval", "list", NULL}),
	    ==,
	    0);
	g_assert_cmpstr(g_strstrip(empty), ==, "[]");
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
}

static gboolean
recorded(gpointer data)
{
	g_autofree gchar *contents = NULL;
	return g_file_get_contents(data, &contents, NULL, NULL) &&
	       strstr(contents, "mcpr_") != NULL;
}

/* Issue 35, bug 5: confabd is killed while its desktop question waits;
 * the confabd started next on the same bus withdraws the question (nobody
 * can answer it: its turn is gone), and no approval is listed. */
static void
test_crash_withdraws(Fixture *f, gconstpointer data)
{
	Pending p = {NULL};
	g_autofree gchar *text = NULL;
	g_autoptr(GVariant) listed = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *record = NULL;
	ConfabTestDaemon *dead;

	if (f->daemon == NULL)
		return;
	text = write_text(f, "never");
	confab_dbus_chat_call_send(f->daemon->chat, f->agent, "", text, NULL, on_done, &p);
	check_prompt(f, 0, "never");
	/* the kill comes once confabd heard the server's answer and recorded
	 * the question (a kill before that loses its id); a synchronization
	 * point, not a check: the check is that the question is withdrawn */
	record = g_build_filename(f->daemon->state_dir, "desktop-questions", NULL);
	(void)confab_test_wait_until(recorded, record, 10000);
	dead = f->daemon;
	confab_test_daemon_kill(dead);
	/* the call fails with its daemon */
	g_assert_true(confab_test_wait_until(pending_done, &p, 30000));
	g_clear_object(&p.result);
	dead->own_state_dir = FALSE;
	f->daemon = confab_test_daemon_start_full(dead->state_dir, NULL, NULL);
	f->daemon->own_state_dir = TRUE;
	confab_test_daemon_free(dead);
	g_assert_true(confab_fake_notifications_wait_closed(f->notifications, 0, 30000));
	g_assert_false(g_file_test(f->file, G_FILE_TEST_EXISTS));
	/* SQLite: from the start; PostgreSQL: once the dead instance's lease ran out */
	if (!confab_test_store_is_postgres()) {
		g_assert_true(confab_dbus_chat_call_list_approvals_sync(f->daemon->chat,
									&listed,
									NULL,
									&error));
		g_assert_no_error(error);
		g_assert_cmpuint(g_variant_n_children(listed), ==, 0);
	}
}

int
main(int argc, char **argv)
{
	gint ret;

	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, func)                                                                            \
	g_test_add("/confab/dbus-approvals/" name,                                                 \
		   Fixture,                                                                        \
		   NULL,                                                                           \
		   fixture_setup,                                                                  \
		   func,                                                                           \
		   fixture_teardown)
	ADD("send-allow", test_send_allow);
	ADD("send-deny", test_send_deny);
	ADD("ask-allow", test_ask_allow);
	ADD("terminal-deny", test_terminal_deny);
	ADD("crash-withdraws", test_crash_withdraws);
#undef ADD
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
