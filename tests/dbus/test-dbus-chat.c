/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * org.confab.Confab1.Chat.Send on a private bus, against a real confabd:
 * new and continued channel sessions owned by the caller's Unix user,
 * which the v1 HTTP API never lists, replays nor continues, and which in
 * turn cannot continue an API session.
 */

#define ERR_PREFIX	   "org.confab.Confab1.Error."
#define SESSION_ID_UNKNOWN "cts_00000000000000000000000000"
#define AGENT_ID_UNKNOWN   "agt_00000000000000000000000000"

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent;
	gchar *me;  /* an API token of the caller's own Unix user */
	gchar *bob; /* an API token of someone else */
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->daemon = confab_test_daemon_start(data, NULL);
	f->agent = confab_test_create_agent(f->daemon, "echo", "echo");
	f->me = confab_test_create_token(f->daemon, g_get_user_name(), "api.full", NULL, NULL);
	f->bob = confab_test_create_token(f->daemon, "bob", "chat.completions", NULL, NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	g_free(f->agent);
	g_free(f->me);
	g_free(f->bob);
}

/* ---------- helpers ---------- */

static void
send_ok(Fixture *f,
	const gchar *agent,
	const gchar *session,
	const gchar *text,
	gchar **session_out,
	gchar **reply_out)
{
	g_autoptr(GError) error = NULL;
	confab_dbus_chat_call_send_sync(f->daemon->chat,
					agent,
					session,
					text,
					session_out,
					reply_out,
					NULL,
					&error);
	g_assert_no_error(error);
}

static void
assert_send_error(Fixture *f,
		  const gchar *agent,
		  const gchar *session,
		  const gchar *text,
		  const gchar *error_name)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *session_out = NULL;
	g_autofree gchar *reply = NULL;
	g_autofree gchar *remote = NULL;

	confab_dbus_chat_call_send_sync(f->daemon->chat,
					agent,
					session,
					text,
					&session_out,
					&reply,
					NULL,
					&error);
	if (error == NULL)
		g_test_message("Send(%s, %s) unexpectedly answered in %s",
			       agent,
			       session,
			       session_out);
	g_assert_nonnull(error);
	g_assert_true(g_dbus_error_is_remote_error(error));
	remote = g_dbus_error_get_remote_error(error);
	g_test_message("Send(%s, '%s'): %s: %s", agent, session, remote, error->message);
	g_assert_cmpstr(remote, ==, error_name);
	g_assert_cmpuint(strlen(error->message), >, strlen(remote) + 4);
}

static GVariant *
list_sessions(Fixture *f, GVariant *filter)
{
	g_autoptr(GError) error = NULL;
	GVariant *sessions = NULL;
	confab_dbus_admin_call_list_sessions_sync(f->daemon->admin,
						  filter,
						  &sessions,
						  NULL,
						  &error);
	g_assert_no_error(error);
	return sessions;
}

static GVariant *
get_messages(Fixture *f, const gchar *session)
{
	g_autoptr(GError) error = NULL;
	GVariant *messages = NULL;
	confab_dbus_admin_call_get_messages_sync(f->daemon->admin,
						 session,
						 g_variant_new("a{sv}", NULL),
						 &messages,
						 NULL,
						 &error);
	g_assert_no_error(error);
	return messages;
}

static GVariant *
find_session(Fixture *f, const gchar *id)
{
	g_autoptr(GVariant) all = list_sessions(f, g_variant_new("a{sv}", NULL));
	for (gsize i = 0; i < g_variant_n_children(all); i++) {
		g_autoptr(GVariant) s = g_variant_get_child_value(all, i);
		const gchar *sid = NULL;
		if (g_variant_lookup(s, "id", "&s", &sid) && g_strcmp0(sid, id) == 0)
			return g_steal_pointer(&s);
	}
	return NULL;
}

static gchar *
api_session(Fixture *f, const gchar *token)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(f->daemon, token, f->agent, NULL, "over http", FALSE);
	g_assert_cmpuint(r->status, ==, 200);
	return g_strdup(confab_test_json_string(r->json, "metadata.session_id"));
}

/* ---------- tests ---------- */

static void
test_new_and_continue(Fixture *f, gconstpointer data)
{
	const gchar *text = "  Hello, desktop!\tGrüße 🌍 \n";
	g_autofree gchar *session = NULL;
	g_autofree gchar *reply = NULL;
	g_autofree gchar *session2 = NULL;
	g_autofree gchar *reply2 = NULL;
	g_autofree gchar *other = NULL;
	g_autofree gchar *other_reply = NULL;
	g_autoptr(GVariant) messages = NULL;
	const gchar *roles[] = {"user", "assistant", "user", "assistant"};
	const gchar *texts[] = {NULL, NULL, "second", "second"};

	texts[0] = texts[1] = text;
	send_ok(f, f->agent, "", text, &session, &reply);
	g_assert_true(g_str_has_prefix(session, "cts_"));
	g_assert_cmpuint(strlen(session), ==, 4 + 26);
	/* the echo answer, every character of it */
	g_assert_cmpstr(reply, ==, text);

	send_ok(f, f->agent, session, "second", &session2, &reply2);
	g_assert_cmpstr(session2, ==, session);
	g_assert_cmpstr(reply2, ==, "second");

	/* a second empty session_id starts another session */
	send_ok(f, f->agent, "", "another", &other, &other_reply);
	g_assert_cmpstr(other, !=, session);

	messages = get_messages(f, session);
	g_assert_cmpuint(g_variant_n_children(messages), ==, 4);
	for (guint i = 0; i < 4; i++) {
		g_autoptr(GVariant) m = g_variant_get_child_value(messages, i);
		g_autoptr(JsonNode) content =
		    json_from_string(confab_test_variant_string(m, "content"), NULL);
		g_assert_cmpstr(confab_test_variant_string(m, "role"), ==, roles[i]);
		g_assert_cmpstr(confab_test_variant_string(m, "model"), ==, f->agent);
		g_assert_cmpstr(confab_test_variant_string(m, "status"), ==, "completed");
		g_assert_nonnull(content);
		g_assert_cmpstr(confab_test_json_string(content, "0.text"), ==, texts[i]);
	}
}

static void
test_owner_and_source(Fixture *f, gconstpointer data)
{
	g_autofree gchar *session = NULL;
	g_autofree gchar *reply = NULL;
	g_autoptr(GVariant) s = NULL;
	g_autoptr(GVariant) channel = NULL;
	g_autoptr(GVariant) api = NULL;
	g_autoptr(GVariant) mine = NULL;
	g_autofree gchar *http_id = api_session(f, f->me);

	send_ok(f, f->agent, "", "whose is this", &session, &reply);
	s = find_session(f, session);
	g_assert_nonnull(s);
	/* the caller's Unix user, from the bus credentials */
	g_assert_cmpstr(confab_test_variant_string(s, "owner"), ==, g_get_user_name());
	g_assert_cmpstr(confab_test_variant_string(s, "source"), ==, "channel");
	g_assert_cmpstr(confab_test_variant_string(s, "agent_id"), ==, f->agent);
	g_assert_cmpstr(confab_test_variant_string(s, "title"), ==, "whose is this");

	channel = list_sessions(f, g_variant_new_parsed("{'source': <'channel'>}"));
	g_assert_cmpuint(g_variant_n_children(channel), ==, 1);
	api = list_sessions(f, g_variant_new_parsed("{'source': <'api'>}"));
	g_assert_cmpuint(g_variant_n_children(api), ==, 1);
	{
		g_autoptr(GVariant) a = g_variant_get_child_value(api, 0);
		g_assert_cmpstr(confab_test_variant_string(a, "id"), ==, http_id);
	}
	mine = list_sessions(
	    f,
	    g_variant_new_parsed("{'owner': <%s>, 'source': <'channel'>}", g_get_user_name()));
	g_assert_cmpuint(g_variant_n_children(mine), ==, 1);
}

static void
test_not_in_http(Fixture *f, gconstpointer data)
{
	g_autofree gchar *session = NULL;
	g_autofree gchar *reply = NULL;
	g_autofree gchar *http_id = api_session(f, f->me);
	g_autofree gchar *path = NULL;
	g_autofree gchar *bound = NULL;

	send_ok(f, f->agent, "", "private", &session, &reply);
	/* not listed, for the same user's token, whatever the filter */
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon,
				     "GET",
				     "/api/v1/conversations?limit=100",
				     f->me,
				     NULL);
		JsonArray *items;
		g_assert_cmpuint(r->status, ==, 200);
		items = json_node_get_array(confab_test_json_get(r->json, "data"));
		g_assert_cmpuint(json_array_get_length(items), ==, 1);
		g_assert_cmpstr(confab_test_json_string(r->json, "data.0.id"), ==, http_id);
	}
	{
		g_autofree gchar *p = g_strdup_printf(
		    "/api/v1/conversations?order=asc&limit=100&model=%s&after=" SESSION_ID_UNKNOWN,
		    f->agent);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", p, f->me, NULL);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_null(strstr(g_bytes_get_data(r->body, NULL), session));
	}
	/* nor replayed */
	path = g_strdup_printf("/api/v1/conversations/%s/messages", session);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", path, f->me, NULL);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	bound = confab_test_create_token(f->daemon, g_get_user_name(), "api.full", f->agent, NULL);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", path, bound, NULL);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	/* nor continued */
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->me, f->agent, session, "from http", FALSE);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->me, f->agent, session, "from http", TRUE);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	/* and the refused attempts left it as it was */
	{
		g_autoptr(GVariant) m = get_messages(f, session);
		g_assert_cmpuint(g_variant_n_children(m), ==, 2);
	}
}

static void
test_errors(Fixture *f, gconstpointer data)
{
	g_autofree gchar *mine = api_session(f, f->me);
	g_autofree gchar *bobs = api_session(f, f->bob);
	g_autofree gchar *other_agent = confab_test_create_agent(f->daemon, "other", "echo");
	g_autofree gchar *channel = NULL;
	g_autofree gchar *reply = NULL;
	g_autofree gchar *doomed = NULL;
	g_autoptr(GError) error = NULL;

	send_ok(f, f->agent, "", "channel", &channel, &reply);

	assert_send_error(f, AGENT_ID_UNKNOWN, "", "hi", ERR_PREFIX "AgentNotFound");
	assert_send_error(f, "nonsense", "", "hi", ERR_PREFIX "AgentNotFound");
	assert_send_error(f, "", "", "hi", ERR_PREFIX "AgentNotFound");
	/* API sessions cannot be continued over the channel, even the caller's own */
	assert_send_error(f, f->agent, mine, "hi", ERR_PREFIX "SessionNotFound");
	assert_send_error(f, f->agent, bobs, "hi", ERR_PREFIX "SessionNotFound");
	/* nor unknown ones, nor a channel session with another agent */
	assert_send_error(f, f->agent, SESSION_ID_UNKNOWN, "hi", ERR_PREFIX "SessionNotFound");
	assert_send_error(f, f->agent, "cts_nope", "hi", ERR_PREFIX "SessionNotFound");
	assert_send_error(f,
			  f->agent,
			  "msg_00000000000000000000000000",
			  "hi",
			  ERR_PREFIX "SessionNotFound");
	assert_send_error(f, other_agent, channel, "hi", ERR_PREFIX "SessionNotFound");
	/* nothing to say */
	assert_send_error(f, f->agent, "", "", ERR_PREFIX "InvalidArgument");
	assert_send_error(f, f->agent, channel, "", ERR_PREFIX "InvalidArgument");

	/* the API sessions are untouched */
	{
		g_autoptr(GVariant) m = get_messages(f, mine);
		g_autoptr(GVariant) b = get_messages(f, bobs);
		g_autoptr(GVariant) c = get_messages(f, channel);
		g_assert_cmpuint(g_variant_n_children(m), ==, 2);
		g_assert_cmpuint(g_variant_n_children(b), ==, 2);
		g_assert_cmpuint(g_variant_n_children(c), ==, 2);
	}
	{
		/* and no session was created by the refusals */
		g_autoptr(GVariant) all = list_sessions(f, g_variant_new("a{sv}", NULL));
		g_assert_cmpuint(g_variant_n_children(all), ==, 3);
	}

	/* a deleted session or agent is gone for the channel too */
	send_ok(f, f->agent, "", "soon gone", &doomed, NULL);
	confab_dbus_admin_call_delete_session_sync(f->daemon->admin, doomed, NULL, &error);
	g_assert_no_error(error);
	assert_send_error(f, f->agent, doomed, "hello?", ERR_PREFIX "SessionNotFound");
	confab_dbus_admin_call_delete_agent_sync(f->daemon->admin, other_agent, NULL, &error);
	g_assert_no_error(error);
	assert_send_error(f, other_agent, "", "hello?", ERR_PREFIX "AgentNotFound");
}

static void
test_no_api_quota(Fixture *f, gconstpointer data)
{
	const gchar *me = g_get_user_name();
	g_autofree gchar *session = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) usage = NULL;
	guint64 requests = 99;

	/* the monthly quota is the v1 API's: the desktop channel does not spend it */
	confab_test_set_quota(f->daemon, me, 1);
	for (guint i = 0; i < 3; i++) {
		g_autofree gchar *out = NULL;
		g_autofree gchar *reply = NULL;
		send_ok(f, f->agent, session != NULL ? session : "", "again", &out, &reply);
		g_assert_cmpstr(reply, ==, "again");
		if (session == NULL)
			session = g_steal_pointer(&out);
	}
	confab_dbus_admin_call_get_usage_sync(f->daemon->admin, me, &usage, NULL, &error);
	g_assert_no_error(error);
	g_assert_true(g_variant_lookup(usage, "requests", "t", &requests));
	g_assert_cmpuint(requests, ==, 0);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->me, f->agent, NULL, "api", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->me, f->agent, NULL, "api", FALSE);
		confab_test_assert_error(r, 429, "insufficient_quota");
	}
}

typedef struct {
	Fixture *f;
	const gchar *agent;
	const gchar *session;
	gchar *reply;
	GError *error;
} HeldSend;

static gpointer
held_send_thread(gpointer data)
{
	HeldSend *h = data;
	g_autofree gchar *out = NULL;
	confab_dbus_chat_call_send_sync(h->f->daemon->chat,
					h->agent,
					h->session,
					"held",
					&out,
					&h->reply,
					NULL,
					&h->error);
	return NULL;
}

static void
test_busy(Fixture *f, gconstpointer data)
{
	ConfabTestUpstream *up = confab_test_upstream_start(FALSE);
	g_autofree gchar *agent = NULL;
	g_autofree gchar *session = NULL;
	g_autofree gchar *reply = NULL;
	HeldSend held = {f, NULL, NULL, NULL, NULL};
	GThread *thread;
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "slow");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", confab_test_upstream_get_base_url(up));
	g_variant_dict_insert(&dict, "upstream_model", "s", "m");
	agent = confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
	send_ok(f, agent, "", "first", &session, &reply);
	g_assert_cmpstr(reply, ==, "slow answer");

	confab_test_upstream_set_hold(up, TRUE);
	held.agent = agent;
	held.session = session;
	thread = g_thread_new("held", held_send_thread, &held);
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));

	/* one turn at a time per session, on the channel too */
	assert_send_error(f, agent, session, "meanwhile", ERR_PREFIX "Busy");
	{
		/* other sessions are not held up */
		g_autofree gchar *other = NULL;
		g_autofree gchar *other_reply = NULL;
		send_ok(f, f->agent, "", "elsewhere", &other, &other_reply);
		g_assert_cmpstr(other_reply, ==, "elsewhere");
	}
	confab_test_upstream_set_hold(up, FALSE);
	g_thread_join(thread);
	g_assert_no_error(held.error);
	g_assert_cmpstr(held.reply, ==, "slow answer");
	g_free(held.reply);
	{
		/* the refused Send stored nothing: two turns, four messages */
		g_autoptr(GVariant) m = get_messages(f, session);
		g_assert_cmpuint(g_variant_n_children(m), ==, 4);
	}
	confab_test_upstream_stop(up);
}

#define FAST_FAIL_CONFIG "[upstream]\nmax_retries=0\nconnect_timeout=5\n"

static void
test_upstream_failure(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *agent = NULL;
	g_autofree gchar *session = NULL;
	g_autofree gchar *reply = NULL;
	g_autofree gchar *remote = NULL;
	g_autoptr(GVariant) channel = NULL;
	g_autoptr(GVariant) messages = NULL;
	g_autoptr(GVariant) user = NULL;
	g_autoptr(GVariant) answer = NULL;
	GVariantDict dict;

	/* nothing listens on the discard port of loopback */
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "unreachable");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", "http://127.0.0.1:9/v1");
	g_variant_dict_insert(&dict, "upstream_model", "s", "m");
	agent = confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));

	confab_dbus_chat_call_send_sync(f->daemon->chat,
					agent,
					"",
					"anyone there?",
					&session,
					&reply,
					NULL,
					&error);
	g_assert_nonnull(error);
	remote = g_dbus_error_get_remote_error(error);
	g_test_message("%s: %s", remote, error->message);
	g_assert_true(g_strcmp0(remote, ERR_PREFIX "Upstream") == 0 ||
		      g_strcmp0(remote, ERR_PREFIX "UpstreamTimeout") == 0);

	/* the user's message stays, the answer is stored as failed */
	channel = list_sessions(f, g_variant_new_parsed("{'source': <'channel'>}"));
	g_assert_cmpuint(g_variant_n_children(channel), ==, 1);
	{
		g_autoptr(GVariant) s = g_variant_get_child_value(channel, 0);
		messages = get_messages(f, confab_test_variant_string(s, "id"));
	}
	g_assert_cmpuint(g_variant_n_children(messages), ==, 2);
	user = g_variant_get_child_value(messages, 0);
	answer = g_variant_get_child_value(messages, 1);
	g_assert_cmpstr(confab_test_variant_string(user, "role"), ==, "user");
	g_assert_cmpstr(confab_test_variant_string(user, "status"), ==, "completed");
	g_assert_cmpstr(confab_test_variant_string(answer, "role"), ==, "assistant");
	g_assert_cmpstr(confab_test_variant_string(answer, "status"), ==, "failed");
	g_assert_nonnull(strstr(confab_test_variant_string(answer, "content_blocks"), "\"error\""));
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, func)                                                                            \
	g_test_add("/confab/dbus-chat/" name, Fixture, NULL, fixture_setup, func, fixture_teardown)
	ADD("new-and-continue", test_new_and_continue);
	ADD("owner-and-source", test_owner_and_source);
	ADD("not-in-http", test_not_in_http);
	ADD("errors", test_errors);
	ADD("no-api-quota", test_no_api_quota);
	ADD("busy", test_busy);
#undef ADD
	g_test_add("/confab/dbus-chat/upstream-failure",
		   Fixture,
		   FAST_FAIL_CONFIG,
		   fixture_setup,
		   test_upstream_failure,
		   fixture_teardown);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
