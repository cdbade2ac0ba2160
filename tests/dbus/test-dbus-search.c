/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-fake-notifications.h"
#include "confab-test-helper.h"

/*
 * org.gnome.Shell.SearchProvider2 at /org/confab/Confab1/SearchProvider,
 * called as GNOME Shell calls it, on a private session bus, against a real
 * confabd: the caller's conversations by title and content, "Ask AGENT"
 * first, metas with a snippet, and activation shown as a desktop
 * notification, which a fake notification server on the same bus records.
 */

#define SEARCH_PATH  "/org/confab/Confab1/SearchProvider"
#define SEARCH_IFACE "org.gnome.Shell.SearchProvider2"

typedef struct {
	ConfabTestDaemon *daemon;
	ConfabFakeNotifications *notifications;
	gchar *agent;
	gchar *me;  /* an API token of the caller's own Unix user */
	gchar *bob; /* someone else's */
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->notifications = confab_fake_notifications_new();
	f->daemon = confab_test_daemon_start(data, NULL);
	f->agent = confab_test_create_agent(f->daemon, "helper", "echo");
	f->me = confab_test_create_token(f->daemon, g_get_user_name(), "api.full", NULL, NULL);
	f->bob = confab_test_create_token(f->daemon, "bob", "chat.completions", NULL, NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	confab_fake_notifications_free(f->notifications);
	g_free(f->agent);
	g_free(f->me);
	g_free(f->bob);
}

/* ---------- calling the provider ---------- */

static GVariant *
call(const gchar *method, GVariant *args, const gchar *reply_type)
{
	g_autoptr(GDBusConnection) bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, NULL);
	g_autoptr(GError) error = NULL;
	GVariant *reply = g_dbus_connection_call_sync(bus,
						      "org.confab.Confab1",
						      SEARCH_PATH,
						      SEARCH_IFACE,
						      method,
						      args,
						      G_VARIANT_TYPE(reply_type),
						      G_DBUS_CALL_FLAGS_NONE,
						      30000,
						      NULL,
						      &error);
	g_assert_no_error(error);
	return reply;
}

/* GetInitialResultSet for "WORD WORD…" */
static GStrv
initial(const gchar *query)
{
	g_auto(GStrv) terms = g_strsplit(query, " ", -1);
	g_autoptr(GVariant) reply =
	    call("GetInitialResultSet", g_variant_new("(^as)", terms), "(as)");
	GStrv results = NULL;
	g_variant_get(reply, "(^as)", &results);
	return results;
}

static GStrv
subsearch(const gchar *const *previous, const gchar *query)
{
	g_auto(GStrv) terms = g_strsplit(query, " ", -1);
	g_autoptr(GVariant) reply =
	    call("GetSubsearchResultSet", g_variant_new("(^as^as)", previous, terms), "(as)");
	GStrv results = NULL;
	g_variant_get(reply, "(^as)", &results);
	return results;
}

static GVariant *
metas(const gchar *const *ids)
{
	g_autoptr(GVariant) reply = call("GetResultMetas", g_variant_new("(^as)", ids), "(aa{sv})");
	return g_variant_get_child_value(reply, 0);
}

static void
activate(const gchar *id, const gchar *query)
{
	g_auto(GStrv) terms = g_strsplit(query, " ", -1);
	g_autoptr(GVariant) reply =
	    call("ActivateResult", g_variant_new("(s^asu)", id, terms, 0), "()");
}

static void
launch(const gchar *query)
{
	g_auto(GStrv) terms = g_strsplit(query, " ", -1);
	g_autoptr(GVariant) reply = call("LaunchSearch", g_variant_new("(^asu)", terms, 0), "()");
}

/* a channel conversation of the caller, as a desktop program starts one */
static gchar *
send_new(Fixture *f, const gchar *text)
{
	g_autoptr(GError) error = NULL;
	gchar *session = NULL;
	g_autofree gchar *reply = NULL;
	confab_dbus_chat_call_send_sync(f->daemon->chat,
					f->agent,
					"",
					text,
					&session,
					&reply,
					NULL,
					&error);
	g_assert_no_error(error);
	return session;
}

/* an API conversation of the token's owner */
static gchar *
api_new(Fixture *f, const gchar *token, const gchar *text)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(f->daemon, token, f->agent, NULL, text, FALSE);
	g_assert_cmpuint(r->status, ==, 200);
	return g_strdup(confab_test_json_string(r->json, "metadata.session_id"));
}

static gchar *
joined(const gchar *const *ids)
{
	return g_strjoinv(" ", (gchar **)ids);
}

/* the summary and body of the Notify call number @i */
static void
notification(Fixture *f, guint i, const gchar **summary, const gchar **body)
{
	GVariant *params;
	g_assert_true(confab_fake_notifications_wait(f->notifications, i + 1, 30000));
	params = confab_fake_notifications_get(f->notifications, i);
	g_variant_get_child(params, 3, "&s", summary);
	g_variant_get_child(params, 4, "&s", body);
}

/* ---------- tests ---------- */

/* "Ask" first, then the caller's conversations that match every term,
 * by title or content, newest first; nobody else's. */
static void
test_results(Fixture *f, gconstpointer data)
{
	g_autofree gchar *soup = send_new(f, "Tomato soup with basil");
	g_autofree gchar *trip = api_new(f, f->me, "A trip to Köln and its cathedral");
	g_autofree gchar *bobs = api_new(f, f->bob, "Tomato soup for Bob");
	g_autofree gchar *ask_soup = g_strdup_printf("ask:%s:tomato", f->agent);
	g_auto(GStrv) tomato = initial("tomato");
	g_auto(GStrv) koln = initial("KOLN cath");
	g_auto(GStrv) none = initial("zucchini");
	g_auto(GStrv) empty = initial("");
	g_autofree gchar *newer = send_new(f, "More tomato ideas");
	g_auto(GStrv) both = initial("tomato");

	g_assert_cmpuint(g_strv_length(tomato), ==, 2);
	g_assert_cmpstr(tomato[0], ==, ask_soup);
	g_assert_cmpstr(tomato[1], ==, soup);
	g_assert_false(g_strv_contains((const gchar *const *)tomato, bobs));
	g_assert_cmpuint(g_strv_length(koln), ==, 2);
	g_assert_cmpstr(koln[1], ==, trip);
	/* nothing found: still the offer to ask */
	g_assert_cmpuint(g_strv_length(none), ==, 1);
	g_assert_true(g_str_has_prefix(none[0], "ask:"));
	g_assert_cmpuint(g_strv_length(empty), ==, 0);
	/* newest first */
	g_assert_cmpuint(g_strv_length(both), ==, 3);
	g_assert_cmpstr(both[1], ==, newer);
	g_assert_cmpstr(both[2], ==, soup);
	{
		/* a narrower search, the same way */
		g_auto(GStrv) narrower = subsearch((const gchar *const *)both, "tomato basil");
		g_autofree gchar *ids = joined((const gchar *const *)narrower);
		g_autofree gchar *expected =
		    g_strdup_printf("ask:%s:tomato basil %s", f->agent, soup);
		g_assert_cmpstr(ids, ==, expected);
	}
}

/* GetResultMetas: id, name (the title or "Ask AGENT: …"), description (a
 * snippet of what matched); another user's conversation is not described. */
static void
test_metas(Fixture *f, gconstpointer data)
{
	g_autofree gchar *soup = send_new(f, "Soup of the day");
	g_autofree gchar *bobs = api_new(f, f->bob, "Bob's secret soup");
	g_auto(GStrv) ids = NULL;
	g_autoptr(GVariant) m = NULL;
	g_autoptr(GVariant) unknown = NULL;
	const gchar *const bobs_only[] = {bobs, "cts_00000000000000000000000000", "nonsense", NULL};

	/* the echo agent answered with the same text: both match */
	ids = initial("soup day");
	g_assert_cmpuint(g_strv_length(ids), ==, 2);
	m = metas((const gchar *const *)ids);
	g_assert_cmpuint(g_variant_n_children(m), ==, 2);
	{
		g_autoptr(GVariant) ask = g_variant_get_child_value(m, 0);
		g_assert_cmpstr(confab_test_variant_string(ask, "id"), ==, ids[0]);
		g_assert_cmpstr(confab_test_variant_string(ask, "name"),
				==,
				"Ask helper: soup day");
		g_assert_nonnull(confab_test_variant_string(ask, "description"));
	}
	{
		g_autoptr(GVariant) conv = g_variant_get_child_value(m, 1);
		g_assert_cmpstr(confab_test_variant_string(conv, "id"), ==, soup);
		g_assert_cmpstr(confab_test_variant_string(conv, "name"), ==, "Soup of the day");
		g_assert_cmpstr(confab_test_variant_string(conv, "description"),
				==,
				"Soup of the day");
	}
	/* a conversation of someone else, an unknown one, nonsense: nothing */
	unknown = metas(bobs_only);
	g_assert_cmpuint(g_variant_n_children(unknown), ==, 0);
	{
		/* one not from the last search is looked up */
		const gchar *const direct[] = {soup, NULL};
		g_autoptr(GVariant) again = NULL;
		g_auto(GStrv) other = initial("nothing-matches-this");
		again = metas(direct);
		g_assert_cmpuint(g_variant_n_children(again), ==, 1);
	}
}

/* ActivateResult on "Ask": a turn on a new channel conversation of the
 * caller, its answer as a notification; on a conversation: its last
 * answer. */
static void
test_activate(Fixture *f, gconstpointer data)
{
	g_autofree gchar *old = send_new(f, "The first answer");
	g_autofree gchar *bobs = api_new(f, f->bob, "not yours");
	g_auto(GStrv) ids = initial("what is love");
	const gchar *summary = NULL;
	const gchar *body = NULL;
	g_autoptr(GVariant) sessions = NULL;
	g_autoptr(GError) error = NULL;

	activate(ids[0], "what is love");
	notification(f, 0, &summary, &body);
	g_assert_cmpstr(summary, ==, "helper");
	g_assert_cmpstr(body, ==, "what is love");
	{
		/* it was a turn of the caller's, on the channel */
		GVariant *params = confab_fake_notifications_get(f->notifications, 0);
		const gchar *app = NULL;
		g_variant_get_child(params, 0, "&s", &app);
		g_assert_cmpstr(app, ==, "Confab");
	}
	confab_dbus_admin_call_list_sessions_sync(
	    f->daemon->admin,
	    g_variant_new_parsed("{'owner': <%s>, 'source': <'channel'>}", g_get_user_name()),
	    &sessions,
	    NULL,
	    &error);
	g_assert_no_error(error);
	g_assert_cmpuint(g_variant_n_children(sessions), ==, 2);

	/* another user's conversation shows nothing; the next one shows */
	activate(bobs, "not");
	activate(old, "first");
	notification(f, 1, &summary, &body);
	g_assert_cmpstr(summary, ==, "The first answer");
	g_assert_cmpstr(body, ==, "The first answer");
	/* the answer is text, never markup */
	{
		g_auto(GStrv) tags = initial("<b>bold</b> & co");
		activate(tags[0], "<b>bold</b> & co");
		notification(f, 2, &summary, &body);
		g_assert_cmpstr(body, ==, "&lt;b&gt;bold&lt;/b&gt; &amp; co");
	}
	g_assert_cmpuint(confab_fake_notifications_count(f->notifications), ==, 3);
}

/* LaunchSearch: the first result, "Ask". */
static void
test_launch(Fixture *f, gconstpointer data)
{
	const gchar *summary = NULL;
	const gchar *body = NULL;

	launch("hello   world");
	notification(f, 0, &summary, &body);
	g_assert_cmpstr(summary, ==, "helper");
	g_assert_cmpstr(body, ==, "hello world");
}

/* [desktop] default_agent names the agent to ask, by name or id; a name
 * that is no agent's offers none. */
/* A deleted Responses API response is no longer found: its text leaves the
 * index with it, the rest of its conversation stays findable. */
static void
test_deleted_response(Fixture *f, gconstpointer data)
{
	g_autofree gchar *first_body =
	    g_strdup_printf("{\"model\":\"%s\",\"input\":\"Tomatoes are red\"}", f->agent);
	g_autoptr(ConfabTestResponse) first =
	    confab_test_http(f->daemon, "POST", "/api/v1/responses", f->me, first_body);
	g_autofree gchar *second_body = NULL;
	g_autoptr(ConfabTestResponse) second = NULL;
	g_autoptr(ConfabTestResponse) deleted = NULL;
	g_autofree gchar *path = NULL;
	const gchar *session;

	g_assert_cmpuint(first->status, ==, 200);
	session = confab_test_json_string(first->json, "conversation.id");
	second_body = g_strdup_printf("{\"model\":\"%s\",\"input\":\"A gazpacho secret\","
				      "\"previous_response_id\":\"%s\"}",
				      f->agent,
				      confab_test_json_string(first->json, "id"));
	second = confab_test_http(f->daemon, "POST", "/api/v1/responses", f->me, second_body);
	g_assert_cmpuint(second->status, ==, 200);
	{
		g_auto(GStrv) found = initial("gazpacho");
		g_assert_cmpuint(g_strv_length(found), ==, 2);
		g_assert_cmpstr(found[1], ==, session);
	}
	path = g_strdup_printf("/api/v1/responses/%s", confab_test_json_string(second->json, "id"));
	deleted = confab_test_http(f->daemon, "DELETE", path, f->me, NULL);
	g_assert_cmpuint(deleted->status, ==, 200);
	{
		g_auto(GStrv) gone = initial("gazpacho");
		g_auto(GStrv) kept = initial("tomatoes red");
		g_assert_cmpuint(g_strv_length(gone), ==, 1);
		g_assert_true(g_str_has_prefix(gone[0], "ask:"));
		g_assert_cmpuint(g_strv_length(kept), ==, 2);
		g_assert_cmpstr(kept[1], ==, session);
	}
}

/* A conversation created by the Conversations API (POST /conversations,
 * no agent until its first response) is found, described and shown as any
 * other; one created empty (no title, no message) too, when asked for. */
static void
test_conversations_api(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) made = confab_test_http(
	    f->daemon,
	    "POST",
	    "/api/v1/conversations",
	    f->me,
	    "{\"items\":[{\"role\":\"user\",\"content\":\"Gazpacho from the items\"},"
	    "{\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
	    "\"text\":\"A cold soup\"}]},"
	    "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\","
	    "\"arguments\":\"{}\"}]}");
	g_autoptr(ConfabTestResponse) empty =
	    confab_test_http(f->daemon, "POST", "/api/v1/conversations", f->me, "{}");
	const gchar *id, *empty_id;
	const gchar *summary = NULL;
	const gchar *body = NULL;

	g_assert_cmpuint(made->status, ==, 200);
	g_assert_cmpuint(empty->status, ==, 200);
	id = confab_test_json_string(made->json, "id");
	empty_id = confab_test_json_string(empty->json, "id");
	{
		g_auto(GStrv) found = initial("gazpacho");
		g_auto(GStrv) by_answer = initial("cold soup");
		g_autoptr(GVariant) m = NULL;
		g_autoptr(GVariant) conv = NULL;

		g_assert_cmpuint(g_strv_length(found), ==, 2);
		g_assert_true(g_str_has_prefix(found[0], "ask:"));
		g_assert_cmpstr(found[1], ==, id);
		g_assert_cmpuint(g_strv_length(by_answer), ==, 2);
		g_assert_cmpstr(by_answer[1], ==, id);
		m = metas((const gchar *const *)found);
		g_assert_cmpuint(g_variant_n_children(m), ==, 2);
		conv = g_variant_get_child_value(m, 1);
		g_assert_cmpstr(confab_test_variant_string(conv, "id"), ==, id);
		g_assert_cmpstr(confab_test_variant_string(conv, "name"),
				==,
				"Gazpacho from the items");
	}
	{
		/* the empty one, asked for by id: described, with no title */
		const gchar *const direct[] = {empty_id, NULL};
		g_autoptr(GVariant) m = metas(direct);
		g_autoptr(GVariant) conv = NULL;
		g_assert_cmpuint(g_variant_n_children(m), ==, 1);
		conv = g_variant_get_child_value(m, 0);
		g_assert_cmpstr(confab_test_variant_string(conv, "id"), ==, empty_id);
		g_assert_nonnull(confab_test_variant_string(conv, "name"));
	}
	/* activated: its last answer, though no agent wrote it */
	activate(id, "gazpacho");
	notification(f, 0, &summary, &body);
	g_assert_cmpstr(summary, ==, "Gazpacho from the items");
	g_assert_cmpstr(body, ==, "A cold soup");
	activate(empty_id, "x");
	notification(f, 1, &summary, &body);
	g_assert_cmpstr(body, ==, "No answer yet.");
}

static void
test_default_agent(void)
{
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start("[desktop]\n"
								      "default_agent = second\n",
								      NULL);
	g_autofree gchar *first = confab_test_create_agent(daemon, "first", "echo");
	g_autofree gchar *second = confab_test_create_agent(daemon, "second", "echo");
	g_auto(GStrv) ids = initial("hi");
	g_autofree gchar *expected = g_strdup_printf("ask:%s:hi", second);

	g_assert_cmpuint(g_strv_length(ids), ==, 1);
	g_assert_cmpstr(ids[0], ==, expected);
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	confab_test_daemon_free(g_steal_pointer(&daemon));

	daemon = confab_test_daemon_start("[desktop]\ndefault_agent = nobody\n", NULL);
	{
		g_autofree gchar *agent = confab_test_create_agent(daemon, "first", "echo");
		g_auto(GStrv) none = initial("hi");
		g_assert_cmpuint(g_strv_length(none), ==, 0);
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

/* Without any agent: no "Ask"; LaunchSearch shows the newest conversation
 * found. */
static void
test_no_agent(void)
{
	g_autoptr(ConfabFakeNotifications) notifications = confab_fake_notifications_new();
	g_autoptr(ConfabTestDaemon) daemon = confab_test_daemon_start(NULL, NULL);
	g_autofree gchar *agent = confab_test_create_agent(daemon, "gone", "echo");
	g_autofree gchar *session = NULL;
	g_autofree gchar *reply = NULL;
	g_autoptr(GError) error = NULL;
	g_auto(GStrv) ids = NULL;
	GVariant *params;
	const gchar *body = NULL;

	confab_dbus_chat_call_send_sync(daemon->chat,
					agent,
					"",
					"remember the milk",
					&session,
					&reply,
					NULL,
					&error);
	g_assert_no_error(error);
	confab_dbus_admin_call_delete_agent_sync(daemon->admin, agent, NULL, &error);
	g_assert_no_error(error);
	ids = initial("milk");
	g_assert_cmpuint(g_strv_length(ids), ==, 1);
	g_assert_cmpstr(ids[0], ==, session);
	launch("milk");
	g_assert_true(confab_fake_notifications_wait(notifications, 1, 30000));
	params = confab_fake_notifications_get(notifications, 0);
	g_variant_get_child(params, 4, "&s", &body);
	g_assert_cmpstr(body, ==, "remember the milk");
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
}

gint
main(gint argc, gchar **argv)
{
	gint ret;

	confab_test_init(&argc, &argv, TRUE);
	g_test_add("/confab/dbus-search/results",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_results,
		   fixture_teardown);
	g_test_add("/confab/dbus-search/metas",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_metas,
		   fixture_teardown);
	g_test_add("/confab/dbus-search/activate",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_activate,
		   fixture_teardown);
	g_test_add("/confab/dbus-search/launch",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_launch,
		   fixture_teardown);
	g_test_add("/confab/dbus-search/deleted-response",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_deleted_response,
		   fixture_teardown);
	g_test_add("/confab/dbus-search/conversations-api",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_conversations_api,
		   fixture_teardown);
	g_test_add_func("/confab/dbus-search/default-agent", test_default_agent);
	g_test_add_func("/confab/dbus-search/no-agent", test_no_agent);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
