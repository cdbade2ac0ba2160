/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "util/confab-json.h"

/*
 * Elicitations over D-Bus (issue 34): a Chat.Send turn whose agent's MCP
 * server asks the person a question (the fake server's `elicit` tool,
 * elicitation/create) tells it to the Send caller with the
 * ElicitationRequested signal; Chat.AnswerElicitation answers it, checked
 * against the requested schema with its defaults applied, and the server
 * gets the answer (its text is the echo model's reply). Another owner's
 * request is not found, over HTTP as over D-Bus.
 */

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	g_autofree gchar *servers = NULL;
	GVariantDict dict;

	if (g_getenv("CONFAB_FAKE_MCP") == NULL) {
		g_test_skip("CONFAB_FAKE_MCP is not set");
		return;
	}
	f->daemon = confab_test_daemon_start(NULL, NULL);
	servers = g_strdup_printf("{\"mcpServers\":{\"fake\":{\"command\":\"%s\"}}}",
				  g_getenv("CONFAB_FAKE_MCP"));
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "Asker");
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
	g_free(f->agent);
}

typedef struct {
	GAsyncResult *result;
	gchar *id;
	gchar *server;
	gchar *message;
	gchar *schema;
} Pending;

static void
on_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Pending *p = user_data;
	p->result = g_object_ref(result);
}

static void
on_requested(ConfabDbusChat *chat,
	     const gchar *id,
	     const gchar *server,
	     const gchar *message,
	     const gchar *schema,
	     gpointer user_data)
{
	Pending *p = user_data;

	g_free(p->id);
	p->id = g_strdup(id);
	p->server = g_strdup(server);
	p->message = g_strdup(message);
	p->schema = g_strdup(schema);
}

static gboolean
has_request(gpointer data)
{
	return ((Pending *)data)->id != NULL;
}

static gboolean
is_done(gpointer data)
{
	return ((Pending *)data)->result != NULL;
}

static void
assert_remote_error(const GError *error, const gchar *name)
{
	g_autofree gchar *remote = NULL;

	g_assert_nonnull(error);
	remote = g_dbus_error_get_remote_error(error);
	g_assert_cmpstr(remote, ==, name);
}

/* Send, the signal, a bad answer, another owner's try, the answer. */
static void
test_send_answer(Fixture *f, gconstpointer data)
{
	Pending p = {NULL};
	g_autoptr(GError) error = NULL;
	g_autofree gchar *session = NULL;
	g_autofree gchar *reply = NULL;
	g_autofree gchar *bob = NULL;
	g_autofree gchar *path = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	gulong id;

	if (f->daemon == NULL)
		return;
	id = g_signal_connect(f->daemon->chat,
			      "elicitation-requested",
			      G_CALLBACK(on_requested),
			      &p);
	confab_dbus_chat_call_send(f->daemon->chat,
				   f->agent,
				   "",
				   "/tool fake__elicit {}",
				   NULL,
				   on_done,
				   &p);
	g_assert_true(confab_test_wait_until(has_request, &p, 30000));
	g_assert_true(g_str_has_prefix(p.id, "mcpe_"));
	g_assert_cmpstr(p.server, ==, "fake");
	g_assert_cmpstr(p.message, ==, "Who are you?");
	g_assert_nonnull(strstr(p.schema, "\"required\":[\"email\"]"));
	g_assert_null(p.result); /* the turn waits */

	/* content that does not match: the field is named, it stays pending */
	g_assert_false(confab_dbus_chat_call_answer_elicitation_sync(f->daemon->chat,
								     p.id,
								     "accept",
								     "{\"email\":\"x@example.org\","
								     "\"status\":\"gone\"}",
								     NULL,
								     &error));
	assert_remote_error(error, "org.confab.Confab1.Error.InvalidArgument");
	g_assert_nonnull(strstr(error->message, "content.status"));
	g_clear_error(&error);
	g_assert_false(confab_dbus_chat_call_answer_elicitation_sync(f->daemon->chat,
								     p.id,
								     "maybe",
								     "",
								     NULL,
								     &error));
	assert_remote_error(error, "org.confab.Confab1.Error.InvalidArgument");
	g_clear_error(&error);

	/* the Send caller's Unix user owns it: a token of another owner
	 * cannot see it */
	bob = confab_test_create_token(f->daemon, "bob", "chat.completions", NULL, NULL);
	path = g_strdup_printf("/api/v1/elicitations/%s", p.id);
	r = confab_test_http(f->daemon, "POST", path, bob, "{\"action\":\"decline\"}");
	confab_test_assert_error(r, 404, "elicitation_not_found");

	g_assert_true(confab_dbus_chat_call_answer_elicitation_sync(f->daemon->chat,
								    p.id,
								    "accept",
								    "{\"email\":\"x@example.org\"}",
								    NULL,
								    &error));
	g_assert_no_error(error);
	g_assert_true(confab_test_wait_until(is_done, &p, 30000));
	g_assert_true(
	    confab_dbus_chat_call_send_finish(f->daemon->chat, &session, &reply, p.result, &error));
	g_assert_no_error(error);
	g_assert_nonnull(strstr(reply, "\"action\":\"accept\""));
	g_assert_nonnull(strstr(reply, "\"email\":\"x@example.org\""));
	/* a default the answer left out */
	g_assert_nonnull(strstr(reply, "\"name\":\"John Doe\""));
	g_assert_false(confab_dbus_chat_call_answer_elicitation_sync(f->daemon->chat,
								     p.id,
								     "cancel",
								     "",
								     NULL,
								     &error));
	assert_remote_error(error, "org.confab.Confab1.Error.AlreadyAnswered");
	g_signal_handler_disconnect(f->daemon->chat, id);
	g_object_unref(p.result);
	g_free(p.id);
	g_free(p.server);
	g_free(p.message);
	g_free(p.schema);
}

/* From the terminal: confabctl elicitation list shows the question the
 * turn waits for, elicitation accept answers it with the content given,
 * and it is then neither listed nor answered twice. */
static void
test_terminal_answer(Fixture *f, gconstpointer data)
{
	Pending p = {NULL};
	g_autoptr(GError) error = NULL;
	g_autofree gchar *session = NULL;
	g_autofree gchar *reply = NULL;
	g_autofree gchar *listed = NULL;
	g_autofree gchar *answered = NULL;
	g_autofree gchar *again = NULL;
	g_autofree gchar *empty = NULL;
	g_autoptr(GVariant) over_dbus = NULL;
	g_autoptr(JsonNode) list = NULL;
	JsonObject *item;
	gchar id[64];
	gulong handler;

	if (f->daemon == NULL)
		return;
	if (g_getenv("CONFABCTL") == NULL) {
		g_test_skip("CONFABCTL is not set; run the tests with meson test");
		return;
	}
	handler = g_signal_connect(f->daemon->chat,
				   "elicitation-requested",
				   G_CALLBACK(on_requested),
				   &p);
	confab_dbus_chat_call_send(f->daemon->chat,
				   f->agent,
				   "",
				   "/tool fake__elicit {}",
				   NULL,
				   on_done,
				   &p);
	/* told once stored */
	g_assert_true(confab_test_wait_until(has_request, &p, 30000));
	confab_dbus_chat_call_list_elicitations_sync(f->daemon->chat, &over_dbus, NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(g_variant_n_children(over_dbus), ==, 1);
	g_assert_cmpint(
	    confab_test_confabctl(&listed,
				  (const gchar *[]){"--json", "elicitation", "list", NULL}),
	    ==,
	    0);
	list = confab_json_from_string(listed);
	g_assert_nonnull(list);
	g_assert_cmpuint(json_array_get_length(json_node_get_array(list)), ==, 1);
	item = json_array_get_object_element(json_node_get_array(list), 0);
	g_assert_cmpstr(json_object_get_string_member(item, "server"), ==, "fake");
	g_assert_cmpstr(json_object_get_string_member(item, "message"), ==, "Who are you?");
	g_assert_cmpstr(json_object_get_string_member(item, "agent_id"), ==, f->agent);
	g_assert_nonnull(strstr(json_object_get_string_member(item, "requested_schema"), "email"));
	g_strlcpy(id, json_object_get_string_member(item, "id"), sizeof(id));
	g_assert_cmpstr(id, ==, p.id);

	g_assert_cmpint(confab_test_confabctl(&answered,
					      (const gchar *[]){"elicitation",
								"accept",
								id,
								"{\"email\":\"t@example.org\"}",
								NULL}),
			==,
			0);
	g_assert_nonnull(strstr(answered, id));
	g_assert_true(confab_test_wait_until(is_done, &p, 30000));
	g_assert_true(
	    confab_dbus_chat_call_send_finish(f->daemon->chat, &session, &reply, p.result, &error));
	g_assert_no_error(error);
	g_assert_nonnull(strstr(reply, "\"email\":\"t@example.org\""));
	g_assert_cmpint(
	    confab_test_confabctl(&again, (const gchar *[]){"elicitation", "cancel", id, NULL}),
	    !=,
	    0);
	g_assert_cmpint(
	    confab_test_confabctl(&empty, (const gchar *[]){"--json", "elicitation", "list", NULL}),
	    ==,
	    0);
	g_assert_cmpstr(g_strstrip(empty), ==, "[]");
	g_signal_handler_disconnect(f->daemon->chat, handler);
	g_object_unref(p.result);
	g_free(p.id);
	g_free(p.server);
	g_free(p.message);
	g_free(p.schema);
}

int
main(int argc, char **argv)
{
	gint ret;

	confab_test_init(&argc, &argv, TRUE);
	g_test_add("/confab/dbus-elicitations/send-answer",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_send_answer,
		   fixture_teardown);
	g_test_add("/confab/dbus-elicitations/terminal-answer",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_terminal_answer,
		   fixture_teardown);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
