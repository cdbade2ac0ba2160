/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * org.confab.Confab1.Admin on a private bus, against a real confabd: every
 * method, its named errors, what it must never return (the upstream key,
 * a token secret), and its live properties.
 */

#define ERR_PREFIX	   "org.confab.Confab1.Error."
#define INVALID_ARGUMENT   ERR_PREFIX "InvalidArgument"
#define AGENT_NOT_FOUND	   ERR_PREFIX "AgentNotFound"
#define SESSION_NOT_FOUND  ERR_PREFIX "SessionNotFound"
#define NOT_FOUND	   ERR_PREFIX "NotFound"
#define SESSION_ID_UNKNOWN "cts_00000000000000000000000000"
#define AGENT_ID_UNKNOWN   "agt_00000000000000000000000000"
#define UPSTREAM_KEY	   "sk-upstream-SECRET-0123456789"

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent;
	gchar *alice;
	gchar *keys_dir; /* [upstream] credentials_dir */
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	g_autofree gchar *config = NULL;

	f->keys_dir = confab_test_make_tmpdir("keys");
	config = g_strdup_printf("[upstream]\ncredentials_dir=%s\n", f->keys_dir);
	f->daemon = confab_test_daemon_start(config, NULL);
	f->agent = confab_test_create_agent(f->daemon, "echo", "echo");
	f->alice = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	g_free(f->agent);
	g_free(f->alice);
	confab_test_rm_rf(f->keys_dir);
	g_free(f->keys_dir);
}

/* ---------- helpers ---------- */

/* a named D-Bus error with a readable message */
static void
assert_dbus_error(GError *error, const gchar *name)
{
	g_autofree gchar *remote = NULL;
	g_assert_nonnull(error);
	g_assert_true(g_dbus_error_is_remote_error(error));
	remote = g_dbus_error_get_remote_error(error);
	if (g_strcmp0(remote, name) != 0)
		g_test_message("expected %s, got %s: %s", name, remote, error->message);
	g_assert_cmpstr(remote, ==, name);
	g_assert_cmpuint(strlen(error->message), >, strlen(remote) + 4);
}

static GVariant *
props_new(const gchar *first_key, ...) G_GNUC_NULL_TERMINATED;

/* key, GVariant* (floating), key, value…, NULL */
static GVariant *
props_new(const gchar *first_key, ...)
{
	GVariantDict dict;
	va_list args;
	g_variant_dict_init(&dict, NULL);
	va_start(args, first_key);
	for (const gchar *key = first_key; key != NULL; key = va_arg(args, const gchar *))
		g_variant_dict_insert_value(&dict, key, va_arg(args, GVariant *));
	va_end(args);
	return g_variant_dict_end(&dict);
}

static GError *
create_agent_error(Fixture *f, GVariant *props)
{
	GError *error = NULL;
	g_autofree gchar *id = NULL;
	confab_dbus_admin_call_create_agent_sync(f->daemon->admin, props, &id, NULL, &error);
	if (error == NULL)
		g_test_message("CreateAgent unexpectedly made %s", id);
	return error;
}

static GError *
create_token_error(Fixture *f, GVariant *props)
{
	GError *error = NULL;
	g_autofree gchar *id = NULL;
	g_autofree gchar *secret = NULL;
	confab_dbus_admin_call_create_token_sync(f->daemon->admin,
						 props,
						 &id,
						 &secret,
						 NULL,
						 &error);
	return error;
}

static GVariant *
get_agent(Fixture *f, const gchar *id)
{
	g_autoptr(GError) error = NULL;
	GVariant *agent = NULL;
	confab_dbus_admin_call_get_agent_sync(f->daemon->admin, id, &agent, NULL, &error);
	g_assert_no_error(error);
	return agent;
}

static GVariant *
list_agents(Fixture *f)
{
	g_autoptr(GError) error = NULL;
	GVariant *agents = NULL;
	confab_dbus_admin_call_list_agents_sync(f->daemon->admin, &agents, NULL, &error);
	g_assert_no_error(error);
	return agents;
}

static GVariant *
list_tokens(Fixture *f, GVariant *filter)
{
	g_autoptr(GError) error = NULL;
	GVariant *tokens = NULL;
	confab_dbus_admin_call_list_tokens_sync(f->daemon->admin, filter, &tokens, NULL, &error);
	g_assert_no_error(error);
	return tokens;
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

static GError *
list_sessions_error(Fixture *f, GVariant *filter)
{
	GError *error = NULL;
	g_autoptr(GVariant) sessions = NULL;
	confab_dbus_admin_call_list_sessions_sync(f->daemon->admin,
						  filter,
						  &sessions,
						  NULL,
						  &error);
	return error;
}

static GVariant *
get_messages(Fixture *f, const gchar *session_id, GVariant *options)
{
	g_autoptr(GError) error = NULL;
	GVariant *messages = NULL;
	confab_dbus_admin_call_get_messages_sync(f->daemon->admin,
						 session_id,
						 options != NULL ? options
								 : g_variant_new("a{sv}", NULL),
						 &messages,
						 NULL,
						 &error);
	g_assert_no_error(error);
	return messages;
}

static GError *
get_messages_error(Fixture *f, const gchar *session_id, GVariant *options)
{
	GError *error = NULL;
	g_autoptr(GVariant) messages = NULL;
	confab_dbus_admin_call_get_messages_sync(f->daemon->admin,
						 session_id,
						 options != NULL ? options
								 : g_variant_new("a{sv}", NULL),
						 &messages,
						 NULL,
						 &error);
	return error;
}

static gchar *
chat(Fixture *f, const gchar *token, const gchar *agent, const gchar *session, const gchar *text)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(f->daemon, token, agent, session, text, FALSE);
	g_assert_cmpuint(r->status, ==, 200);
	return g_strdup(confab_test_json_string(r->json, "metadata.session_id"));
}

static GVariant *
admin_property(Fixture *f, const gchar *name)
{
	g_autoptr(GError) error = NULL;
	GDBusConnection *conn = g_dbus_proxy_get_connection(G_DBUS_PROXY(f->daemon->admin));
	g_autoptr(GVariant) reply = NULL;
	GVariant *value = NULL;

	/* asked each time: the proxy's cache is not live */
	reply = g_dbus_connection_call_sync(conn,
					    "org.confab.Confab1",
					    "/org/confab/Confab1",
					    "org.freedesktop.DBus.Properties",
					    "Get",
					    g_variant_new("(ss)", "org.confab.Confab1.Admin", name),
					    G_VARIANT_TYPE("(v)"),
					    G_DBUS_CALL_FLAGS_NONE,
					    -1,
					    NULL,
					    &error);
	g_assert_no_error(error);
	g_variant_get(reply, "(v)", &value);
	return value;
}

static guint64
turns_served(Fixture *f)
{
	g_autoptr(GVariant) v = admin_property(f, "TurnsServed");
	return g_variant_get_uint64(v);
}

static guint32
active_turns(Fixture *f)
{
	g_autoptr(GVariant) v = admin_property(f, "ActiveTurns");
	return g_variant_get_uint32(v);
}

/* ---------- agents ---------- */

static void
test_create_agent_errors(Fixture *f, gconstpointer data)
{
	struct {
		GVariant *props;
		const gchar *why;
	} cases[] = {
	    {props_new("provider", g_variant_new_string("echo"), NULL), "no name"},
	    {props_new("name",
		       g_variant_new_string(""),
		       "provider",
		       g_variant_new_string("echo"),
		       NULL),
	     "an empty name"},
	    {props_new("name", g_variant_new_string("x"), NULL), "no provider"},
	    {props_new("name",
		       g_variant_new_string("x"),
		       "provider",
		       g_variant_new_string("nope"),
		       NULL),
	     "an unknown provider"},
	    {props_new("name",
		       g_variant_new_uint32(1),
		       "provider",
		       g_variant_new_string("echo"),
		       NULL),
	     "a name that is not a string"},
	    {props_new("name",
		       g_variant_new_string("x"),
		       "provider",
		       g_variant_new_string("echo"),
		       "nmae",
		       g_variant_new_string("typo"),
		       NULL),
	     "an unknown key"},
	    {props_new("name",
		       g_variant_new_string("x"),
		       "provider",
		       g_variant_new_string("echo"),
		       "connect_timeout",
		       g_variant_new_string("10"),
		       NULL),
	     "a timeout that is not a uint32"},
	    {props_new("name",
		       g_variant_new_string("x"),
		       "provider",
		       g_variant_new_string("echo"),
		       "params",
		       g_variant_new_string("[1,2]"),
		       NULL),
	     "params that are not a JSON object"},
	    {props_new("name",
		       g_variant_new_string("x"),
		       "provider",
		       g_variant_new_string("openai"),
		       NULL),
	     "openai without base_url"},
	    {props_new("name",
		       g_variant_new_string("x"),
		       "provider",
		       g_variant_new_string("openai"),
		       "base_url",
		       g_variant_new_string("ftp://example.com/v1"),
		       "upstream_model",
		       g_variant_new_string("m"),
		       NULL),
	     "openai with a base_url that is not http(s)"},
	    {props_new("name",
		       g_variant_new_string("x"),
		       "provider",
		       g_variant_new_string("openai"),
		       "base_url",
		       g_variant_new_string("https://example.com/v1"),
		       NULL),
	     "openai without upstream_model"},
	};
	g_autoptr(GVariant) before = list_agents(f);
	g_autoptr(GVariant) after = NULL;

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;
		g_test_message("CreateAgent with %s", cases[i].why);
		error = create_agent_error(f, cases[i].props);
		assert_dbus_error(error, INVALID_ARGUMENT);
	}
	/* nothing half-made */
	after = list_agents(f);
	g_assert_cmpuint(g_variant_n_children(after), ==, g_variant_n_children(before));
}

static void
test_agent_lifecycle(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) agent = NULL;
	g_autoptr(GVariant) agents = NULL;
	g_autofree gchar *printed = NULL;
	g_autofree gchar *id = NULL;
	g_autofree gchar *session = NULL;
	gint64 created_at = 0, updated_at = 0;
	gboolean has_key = FALSE;
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;

	id = confab_test_create_agent_props(f->daemon,
					    props_new("name",
						      g_variant_new_string("Remote"),
						      "provider",
						      g_variant_new_string("openai"),
						      "instructions",
						      g_variant_new_string("Be brief."),
						      "base_url",
						      g_variant_new_string("http://127.0.0.1:9/v1"),
						      "upstream_model",
						      g_variant_new_string("gpt-test"),
						      "api_key",
						      g_variant_new_string(UPSTREAM_KEY),
						      "params",
						      g_variant_new_string("{\"temperature\":0.5}"),
						      "total_timeout",
						      g_variant_new_uint32(42),
						      NULL));
	g_assert_true(g_str_has_prefix(id, "agt_"));
	agent = get_agent(f, id);
	g_assert_cmpstr(confab_test_variant_string(agent, "id"), ==, id);
	g_assert_cmpstr(confab_test_variant_string(agent, "name"), ==, "Remote");
	g_assert_cmpstr(confab_test_variant_string(agent, "provider"), ==, "openai");
	g_assert_cmpstr(confab_test_variant_string(agent, "instructions"), ==, "Be brief.");
	g_assert_cmpstr(confab_test_variant_string(agent, "base_url"), ==, "http://127.0.0.1:9/v1");
	g_assert_cmpstr(confab_test_variant_string(agent, "upstream_model"), ==, "gpt-test");
	g_assert_true(g_variant_lookup(agent, "has_api_key", "b", &has_key));
	g_assert_true(has_key);
	g_assert_true(g_variant_lookup(agent, "created_at", "x", &created_at));
	g_assert_true(g_variant_lookup(agent, "updated_at", "x", &updated_at));
	g_assert_cmpint(created_at, >=, now - 1);
	g_assert_cmpint(created_at, <=, now + 2);
	{
		guint32 t = 0;
		g_assert_true(g_variant_lookup(agent, "total_timeout", "u", &t));
		g_assert_cmpuint(t, ==, 42);
	}
	/* the key itself never comes back */
	g_assert_false(g_variant_lookup(agent, "api_key", "&s", NULL));
	printed = g_variant_print(agent, TRUE);
	g_assert_null(strstr(printed, UPSTREAM_KEY));
	g_clear_pointer(&printed, g_free);
	agents = list_agents(f);
	printed = g_variant_print(agents, TRUE);
	g_assert_null(strstr(printed, UPSTREAM_KEY));
	g_assert_null(strstr(printed, "'api_key'"));
	g_assert_cmpuint(g_variant_n_children(agents), ==, 2);
	{
		/* by id */
		g_autoptr(GVariant) a0 = g_variant_get_child_value(agents, 0);
		g_autoptr(GVariant) a1 = g_variant_get_child_value(agents, 1);
		g_assert_cmpstr(confab_test_variant_string(a0, "id"),
				<,
				confab_test_variant_string(a1, "id"));
		g_assert_cmpstr(confab_test_variant_string(a0, "id"), ==, f->agent);
		g_assert_cmpstr(confab_test_variant_string(a1, "id"), ==, id);
	}

	/* UpdateAgent: changes what it names, keeps the rest */
	confab_dbus_admin_call_update_agent_sync(
	    f->daemon->admin,
	    id,
	    props_new("name", g_variant_new_string("Renamed"), NULL),
	    NULL,
	    &error);
	g_assert_no_error(error);
	g_clear_pointer(&agent, g_variant_unref);
	agent = get_agent(f, id);
	g_assert_cmpstr(confab_test_variant_string(agent, "name"), ==, "Renamed");
	g_assert_cmpstr(confab_test_variant_string(agent, "instructions"), ==, "Be brief.");
	g_assert_true(g_variant_lookup(agent, "has_api_key", "b", &has_key));
	g_assert_true(has_key);
	{
		gint64 c = 0, u = 0;
		g_assert_true(g_variant_lookup(agent, "created_at", "x", &c));
		g_assert_true(g_variant_lookup(agent, "updated_at", "x", &u));
		g_assert_cmpint(c, ==, created_at);
		g_assert_cmpint(u, >=, updated_at);
	}
	/* an empty api_key removes the key */
	confab_dbus_admin_call_update_agent_sync(
	    f->daemon->admin,
	    id,
	    props_new("api_key", g_variant_new_string(""), NULL),
	    NULL,
	    &error);
	g_assert_no_error(error);
	g_clear_pointer(&agent, g_variant_unref);
	agent = get_agent(f, id);
	g_assert_true(g_variant_lookup(agent, "has_api_key", "b", &has_key));
	g_assert_false(has_key);
	/* refused updates change nothing */
	{
		GVariant *bad[] = {
		    props_new("name", g_variant_new_int32(3), NULL),
		    props_new("provider", g_variant_new_string("nope"), NULL),
		    props_new("colour", g_variant_new_string("blue"), NULL),
		    props_new("base_url", g_variant_new_string("not a url"), NULL),
		    props_new("params", g_variant_new_string("{"), NULL),
		};
		for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
			g_autoptr(GError) e = NULL;
			confab_dbus_admin_call_update_agent_sync(f->daemon->admin,
								 id,
								 bad[i],
								 NULL,
								 &e);
			assert_dbus_error(e, INVALID_ARGUMENT);
		}
		g_clear_pointer(&agent, g_variant_unref);
		agent = get_agent(f, id);
		g_assert_cmpstr(confab_test_variant_string(agent, "name"), ==, "Renamed");
		g_assert_cmpstr(confab_test_variant_string(agent, "provider"), ==, "openai");
		g_assert_cmpstr(confab_test_variant_string(agent, "base_url"),
				==,
				"http://127.0.0.1:9/v1");
	}
	{
		g_autoptr(GError) e = NULL;
		confab_dbus_admin_call_update_agent_sync(
		    f->daemon->admin,
		    AGENT_ID_UNKNOWN,
		    props_new("name", g_variant_new_string("x"), NULL),
		    NULL,
		    &e);
		assert_dbus_error(e, AGENT_NOT_FOUND);
	}
	{
		g_autoptr(GError) e = NULL;
		g_autoptr(GVariant) v = NULL;
		confab_dbus_admin_call_get_agent_sync(f->daemon->admin, "nonsense", &v, NULL, &e);
		assert_dbus_error(e, AGENT_NOT_FOUND);
	}

	/* DeleteAgent: gone for chat, its sessions stay */
	session = chat(f, f->alice, f->agent, NULL, "before the end");
	confab_dbus_admin_call_delete_agent_sync(f->daemon->admin, f->agent, NULL, &error);
	g_assert_no_error(error);
	{
		g_autoptr(GError) e = NULL;
		g_autoptr(GVariant) v = NULL;
		confab_dbus_admin_call_get_agent_sync(f->daemon->admin, f->agent, &v, NULL, &e);
		assert_dbus_error(e, AGENT_NOT_FOUND);
	}
	{
		g_autoptr(GVariant) all = list_agents(f);
		g_autoptr(GVariant) only = NULL;
		g_assert_cmpuint(g_variant_n_children(all), ==, 1);
		only = g_variant_get_child_value(all, 0);
		g_assert_cmpstr(confab_test_variant_string(only, "id"), ==, id);
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->alice, f->agent, NULL, "hello?", FALSE);
		confab_test_assert_error(r, 404, "agent_not_found");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->alice, f->agent, session, "hello?", FALSE);
		g_assert_cmpuint(r->status, ==, 404);
	}
	{
		g_autoptr(GVariant) m = get_messages(f, session, NULL);
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations/%s/messages", session);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", p, f->alice, NULL);
		g_assert_cmpuint(g_variant_n_children(m), ==, 2);
		g_assert_cmpuint(r->status, ==, 200);
	}
	{
		g_autoptr(GError) e = NULL;
		confab_dbus_admin_call_delete_agent_sync(f->daemon->admin, f->agent, NULL, &e);
		assert_dbus_error(e, AGENT_NOT_FOUND);
	}
	{
		/* a token cannot be bound to a deleted agent */
		const gchar *scopes[] = {"api.full", NULL};
		g_autoptr(GError) e = create_token_error(f,
							 props_new("owner",
								   g_variant_new_string("alice"),
								   "scopes",
								   g_variant_new_strv(scopes, -1),
								   "agent_id",
								   g_variant_new_string(f->agent),
								   NULL));
		assert_dbus_error(e, AGENT_NOT_FOUND);
	}
}

/* ---------- tokens ---------- */

static void
test_tokens(Fixture *f, gconstpointer data)
{
	const gchar *scopes[] = {"chat.completions", "other.scope", NULL};
	g_autoptr(GError) error = NULL;
	g_autofree gchar *token_id = NULL;
	g_autofree gchar *secret = NULL;
	g_autofree gchar *bound_id = NULL;
	g_autofree gchar *bound_secret = NULL;
	g_autoptr(GVariant) tokens = NULL;
	g_autofree gchar *printed = NULL;
	GVariantIter iter;
	GVariant *token;
	gboolean found = FALSE;
	gint64 expires = g_get_real_time() / G_USEC_PER_SEC + 86400;

	confab_dbus_admin_call_create_token_sync(f->daemon->admin,
						 props_new("owner",
							   g_variant_new_string("carol"),
							   "name",
							   g_variant_new_string("laptop"),
							   "scopes",
							   g_variant_new_strv(scopes, -1),
							   "expires_at",
							   g_variant_new_int64(expires),
							   NULL),
						 &token_id,
						 &secret,
						 NULL,
						 &error);
	g_assert_no_error(error);
	g_assert_true(g_str_has_prefix(token_id, "tok_"));
	g_assert_true(g_str_has_prefix(secret, "nca_"));
	g_assert_cmpuint(strlen(secret), >=, 4 + 32);
	for (const gchar *p = secret + 4; *p != '\0'; p++)
		g_assert_true(g_ascii_isalnum(*p));
	bound_secret =
	    confab_test_create_token(f->daemon, "carol", "api.full", f->agent, &bound_id);
	g_assert_cmpstr(secret, !=, bound_secret);

	/* the secret works */
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", "/api/v1/conversations", secret, NULL);
		g_assert_cmpuint(r->status, ==, 200);
	}

	/* ListTokens: everything but the secret and its hash */
	tokens = list_tokens(f, props_new("owner", g_variant_new_string("carol"), NULL));
	g_assert_cmpuint(g_variant_n_children(tokens), ==, 2);
	printed = g_variant_print(tokens, TRUE);
	g_assert_null(strstr(printed, secret));
	g_assert_null(strstr(printed, bound_secret));
	g_assert_null(strstr(printed, secret + 4));
	g_assert_null(strstr(printed, "nca_"));
	g_variant_iter_init(&iter, tokens);
	while ((token = g_variant_iter_next_value(&iter)) != NULL) {
		g_autoptr(GVariant) owned = token;
		g_autofree const gchar **got_scopes = NULL;
		gint64 x = -1;
		gboolean revoked = TRUE;
		GVariantIter kv;
		const gchar *key;
		g_variant_iter_init(&kv, owned);
		while (g_variant_iter_next(&kv, "{&sv}", &key, NULL)) {
			g_assert_null(strstr(key, "secret"));
			g_assert_null(strstr(key, "hash"));
		}
		g_assert_cmpstr(confab_test_variant_string(owned, "owner"), ==, "carol");
		g_assert_true(g_variant_lookup(owned, "created_at", "x", &x));
		g_assert_true(g_variant_lookup(owned, "revoked_at", "x", &x));
		g_assert_cmpint(x, ==, 0);
		g_assert_true(g_variant_lookup(owned, "revoked", "b", &revoked));
		g_assert_false(revoked);
		if (g_strcmp0(confab_test_variant_string(owned, "id"), token_id) == 0) {
			found = TRUE;
			g_assert_cmpstr(confab_test_variant_string(owned, "name"), ==, "laptop");
			g_assert_true(g_variant_lookup(owned, "scopes", "^a&s", &got_scopes));
			g_assert_cmpuint(g_strv_length((gchar **)got_scopes), ==, 2);
			g_assert_cmpstr(got_scopes[0], ==, "chat.completions");
			g_assert_cmpstr(got_scopes[1], ==, "other.scope");
			g_assert_true(g_variant_lookup(owned, "expires_at", "x", &x));
			g_assert_cmpint(x, ==, expires);
		} else {
			g_assert_cmpstr(confab_test_variant_string(owned, "id"), ==, bound_id);
			g_assert_cmpstr(confab_test_variant_string(owned, "agent_id"),
					==,
					f->agent);
		}
	}
	g_assert_true(found);
	{
		/* no filter: every owner's */
		g_autoptr(GVariant) all = list_tokens(f, g_variant_new("a{sv}", NULL));
		g_autofree gchar *s = g_variant_print(all, TRUE);
		g_assert_cmpuint(g_variant_n_children(all), ==, 3);
		g_assert_null(strstr(s, f->alice));
		g_assert_null(strstr(s, "nca_"));
	}
	{
		g_autoptr(GVariant) none =
		    list_tokens(f, props_new("owner", g_variant_new_string("nobody"), NULL));
		g_assert_cmpuint(g_variant_n_children(none), ==, 0);
	}
	{
		g_autoptr(GError) e = NULL;
		g_autoptr(GVariant) v = NULL;
		confab_dbus_admin_call_list_tokens_sync(
		    f->daemon->admin,
		    props_new("ownr", g_variant_new_string("carol"), NULL),
		    &v,
		    NULL,
		    &e);
		assert_dbus_error(e, INVALID_ARGUMENT);
	}
	{
		g_autoptr(GError) e = NULL;
		g_autoptr(GVariant) v = NULL;
		confab_dbus_admin_call_list_tokens_sync(
		    f->daemon->admin,
		    props_new("owner", g_variant_new_uint32(1), NULL),
		    &v,
		    NULL,
		    &e);
		assert_dbus_error(e, INVALID_ARGUMENT);
	}

	/* RevokeToken */
	confab_dbus_admin_call_revoke_token_sync(f->daemon->admin, token_id, NULL, &error);
	g_assert_no_error(error);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", "/api/v1/conversations", secret, NULL);
		confab_test_assert_error(r, 401, "invalid_api_key");
	}
	{
		g_autoptr(GVariant) after =
		    list_tokens(f, props_new("owner", g_variant_new_string("carol"), NULL));
		g_variant_iter_init(&iter, after);
		while ((token = g_variant_iter_next_value(&iter)) != NULL) {
			g_autoptr(GVariant) owned = token;
			gboolean revoked = FALSE;
			gint64 at = 0;
			g_assert_true(g_variant_lookup(owned, "revoked", "b", &revoked));
			g_assert_true(g_variant_lookup(owned, "revoked_at", "x", &at));
			if (g_strcmp0(confab_test_variant_string(owned, "id"), token_id) == 0) {
				g_assert_true(revoked);
				g_assert_cmpint(at, >, 0);
			} else {
				g_assert_false(revoked);
				g_assert_cmpint(at, ==, 0);
			}
		}
	}
	{
		/* the bound one still works */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", "/api/v1/conversations", bound_secret, NULL);
		g_assert_cmpuint(r->status, ==, 200);
	}
	{
		const gchar *unknown[] = {"tok_00000000000000000000000000", "nonsense", ""};
		for (guint i = 0; i < G_N_ELEMENTS(unknown); i++) {
			g_autoptr(GError) e = NULL;
			confab_dbus_admin_call_revoke_token_sync(f->daemon->admin,
								 unknown[i],
								 NULL,
								 &e);
			assert_dbus_error(e, NOT_FOUND);
		}
	}
}

static void
test_create_token_errors(Fixture *f, gconstpointer data)
{
	const gchar *good[] = {"chat.completions", NULL};
	const gchar *empty[] = {NULL};
	const gchar *spaced[] = {"chat completions", NULL};
	const gchar *blank[] = {"", NULL};
	gint64 past = g_get_real_time() / G_USEC_PER_SEC - 10;
	struct {
		GVariant *props;
		const gchar *error;
		const gchar *why;
	} cases[] = {
	    {props_new("scopes", g_variant_new_strv(good, -1), NULL), INVALID_ARGUMENT, "no owner"},
	    {props_new("owner",
		       g_variant_new_string(""),
		       "scopes",
		       g_variant_new_strv(good, -1),
		       NULL),
	     INVALID_ARGUMENT,
	     "an empty owner"},
	    {props_new("owner",
		       g_variant_new_uint32(1000),
		       "scopes",
		       g_variant_new_strv(good, -1),
		       NULL),
	     INVALID_ARGUMENT,
	     "an owner that is not a string"},
	    {props_new("owner", g_variant_new_string("alice"), NULL),
	     INVALID_ARGUMENT,
	     "no scopes"},
	    {props_new("owner",
		       g_variant_new_string("alice"),
		       "scopes",
		       g_variant_new_string("chat.completions"),
		       NULL),
	     INVALID_ARGUMENT,
	     "scopes as a string"},
	    {props_new("owner",
		       g_variant_new_string("alice"),
		       "scopes",
		       g_variant_new_strv(empty, -1),
		       NULL),
	     INVALID_ARGUMENT,
	     "no scope in scopes"},
	    {props_new("owner",
		       g_variant_new_string("alice"),
		       "scopes",
		       g_variant_new_strv(spaced, -1),
		       NULL),
	     INVALID_ARGUMENT,
	     "a scope with a space"},
	    {props_new("owner",
		       g_variant_new_string("alice"),
		       "scopes",
		       g_variant_new_strv(blank, -1),
		       NULL),
	     INVALID_ARGUMENT,
	     "an empty scope"},
	    {props_new("owner",
		       g_variant_new_string("alice"),
		       "scopes",
		       g_variant_new_strv(good, -1),
		       "agent_id",
		       g_variant_new_string(AGENT_ID_UNKNOWN),
		       NULL),
	     AGENT_NOT_FOUND,
	     "an unknown agent"},
	    {props_new("owner",
		       g_variant_new_string("alice"),
		       "scopes",
		       g_variant_new_strv(good, -1),
		       "expires_at",
		       g_variant_new_uint32(5),
		       NULL),
	     INVALID_ARGUMENT,
	     "expires_at that is not an int64"},
	    {props_new("owner",
		       g_variant_new_string("alice"),
		       "scopes",
		       g_variant_new_strv(good, -1),
		       "expires_at",
		       g_variant_new_int64(past),
		       NULL),
	     INVALID_ARGUMENT,
	     "expires_at in the past"},
	    {props_new("owner",
		       g_variant_new_string("alice"),
		       "scopes",
		       g_variant_new_strv(good, -1),
		       "expires_at",
		       g_variant_new_int64(-5),
		       NULL),
	     INVALID_ARGUMENT,
	     "a negative expires_at"},
	    {props_new("owner",
		       g_variant_new_string("alice"),
		       "scopes",
		       g_variant_new_strv(good, -1),
		       "secret",
		       g_variant_new_string("nca_mine"),
		       NULL),
	     INVALID_ARGUMENT,
	     "a secret of the caller's choosing"},
	};
	g_autoptr(GVariant) before = list_tokens(f, g_variant_new("a{sv}", NULL));
	g_autoptr(GVariant) after = NULL;

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;
		g_test_message("CreateToken with %s", cases[i].why);
		error = create_token_error(f, cases[i].props);
		assert_dbus_error(error, cases[i].error);
	}
	after = list_tokens(f, g_variant_new("a{sv}", NULL));
	g_assert_cmpuint(g_variant_n_children(after), ==, g_variant_n_children(before));
}

/* ---------- quota ---------- */

static void
test_quota(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) usage = NULL;
	guint64 n = 0;
	gboolean is_default = TRUE;

	confab_dbus_admin_call_set_quota_sync(f->daemon->admin, "alice", 7, NULL, &error);
	g_assert_no_error(error);
	g_free(chat(f, f->alice, f->agent, NULL, "one"));
	confab_dbus_admin_call_get_usage_sync(f->daemon->admin, "alice", &usage, NULL, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(confab_test_variant_string(usage, "owner"), ==, "alice");
	g_assert_nonnull(confab_test_variant_string(usage, "month"));
	g_assert_cmpuint(strlen(confab_test_variant_string(usage, "month")), ==, 7);
	g_assert_true(g_variant_lookup(usage, "requests", "t", &n));
	g_assert_cmpuint(n, ==, 1);
	g_assert_true(g_variant_lookup(usage, "quota", "t", &n));
	g_assert_cmpuint(n, ==, 7);
	g_assert_true(g_variant_lookup(usage, "remaining", "t", &n));
	g_assert_cmpuint(n, ==, 6);
	g_assert_true(g_variant_lookup(usage, "quota_is_default", "b", &is_default));
	g_assert_false(is_default);

	confab_dbus_admin_call_set_quota_sync(f->daemon->admin, "", 7, NULL, &error);
	assert_dbus_error(error, INVALID_ARGUMENT);
	g_clear_error(&error);
	confab_dbus_admin_call_set_quota_sync(f->daemon->admin, "alice", G_MAXUINT64, NULL, &error);
	assert_dbus_error(error, INVALID_ARGUMENT);
	g_clear_error(&error);
	g_clear_pointer(&usage, g_variant_unref);
	confab_dbus_admin_call_get_usage_sync(f->daemon->admin, "alice", &usage, NULL, &error);
	g_assert_no_error(error);
	g_assert_true(g_variant_lookup(usage, "quota", "t", &n));
	g_assert_cmpuint(n, ==, 7);
}

/* ---------- sessions ---------- */

static void
test_list_sessions(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent_b = confab_test_create_agent(f->daemon, "other", "echo");
	g_autofree gchar *bob = confab_test_create_token(f->daemon, "bob", "api.full", NULL, NULL);
	g_autofree gchar *a1 = chat(f, f->alice, f->agent, NULL, "alice one");
	g_autofree gchar *a2 = chat(f, f->alice, agent_b, NULL, "alice two");
	g_autofree gchar *b1 = chat(f, bob, f->agent, NULL, "bob one");
	g_autofree gchar *channel = NULL;
	g_autofree gchar *reply = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) all = NULL;
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	const gchar *expected_desc[4];

	confab_dbus_chat_call_send_sync(f->daemon->chat,
					f->agent,
					"",
					"channel one",
					&channel,
					&reply,
					NULL,
					&error);
	g_assert_no_error(error);
	expected_desc[0] = channel;
	expected_desc[1] = b1;
	expected_desc[2] = a2;
	expected_desc[3] = a1;

	/* everything, newest first, channel sessions included */
	all = list_sessions(f, g_variant_new("a{sv}", NULL));
	g_assert_cmpuint(g_variant_n_children(all), ==, 4);
	for (guint i = 0; i < 4; i++) {
		g_autoptr(GVariant) s = g_variant_get_child_value(all, i);
		gint64 c = 0, u = 0;
		g_assert_cmpstr(confab_test_variant_string(s, "id"), ==, expected_desc[i]);
		g_assert_nonnull(confab_test_variant_string(s, "owner"));
		g_assert_nonnull(confab_test_variant_string(s, "agent_id"));
		g_assert_nonnull(confab_test_variant_string(s, "title"));
		g_assert_true(g_variant_lookup(s, "created_at", "x", &c));
		g_assert_true(g_variant_lookup(s, "updated_at", "x", &u));
		g_assert_cmpint(c, >=, now - 5);
		g_assert_cmpint(u, >=, c);
		g_assert_cmpstr(confab_test_variant_string(s, "source"),
				==,
				i == 0 ? "channel" : "api");
	}
	{
		g_autoptr(GVariant) s = g_variant_get_child_value(all, 3);
		g_assert_cmpstr(confab_test_variant_string(s, "owner"), ==, "alice");
		g_assert_cmpstr(confab_test_variant_string(s, "agent_id"), ==, f->agent);
		g_assert_cmpstr(confab_test_variant_string(s, "title"), ==, "alice one");
	}
	{
		g_autoptr(GVariant) s = g_variant_get_child_value(all, 0);
		g_assert_cmpstr(confab_test_variant_string(s, "owner"), ==, g_get_user_name());
	}

	/* filters */
	{
		g_autoptr(GVariant) v =
		    list_sessions(f, props_new("owner", g_variant_new_string("alice"), NULL));
		g_assert_cmpuint(g_variant_n_children(v), ==, 2);
	}
	{
		g_autoptr(GVariant) v =
		    list_sessions(f, props_new("agent_id", g_variant_new_string(f->agent), NULL));
		g_assert_cmpuint(g_variant_n_children(v), ==, 3);
	}
	{
		g_autoptr(GVariant) v = list_sessions(f,
						      props_new("owner",
								g_variant_new_string("alice"),
								"agent_id",
								g_variant_new_string(agent_b),
								NULL));
		g_autoptr(GVariant) s = NULL;
		g_assert_cmpuint(g_variant_n_children(v), ==, 1);
		s = g_variant_get_child_value(v, 0);
		g_assert_cmpstr(confab_test_variant_string(s, "id"), ==, a2);
	}
	{
		g_autoptr(GVariant) v =
		    list_sessions(f, props_new("source", g_variant_new_string("channel"), NULL));
		g_autoptr(GVariant) s = NULL;
		g_assert_cmpuint(g_variant_n_children(v), ==, 1);
		s = g_variant_get_child_value(v, 0);
		g_assert_cmpstr(confab_test_variant_string(s, "id"), ==, channel);
	}
	{
		g_autoptr(GVariant) v =
		    list_sessions(f, props_new("source", g_variant_new_string("api"), NULL));
		g_assert_cmpuint(g_variant_n_children(v), ==, 3);
	}
	{
		g_autoptr(GVariant) v =
		    list_sessions(f, props_new("owner", g_variant_new_string("nobody"), NULL));
		g_assert_cmpuint(g_variant_n_children(v), ==, 0);
	}

	/* paging */
	{
		g_autoptr(GVariant) p1 = list_sessions(f,
						       props_new("limit",
								 g_variant_new_uint32(2),
								 "order",
								 g_variant_new_string("asc"),
								 NULL));
		g_autoptr(GVariant) last = NULL;
		g_autoptr(GVariant) p2 = NULL;
		g_autoptr(GVariant) first = NULL;
		g_assert_cmpuint(g_variant_n_children(p1), ==, 2);
		first = g_variant_get_child_value(p1, 0);
		g_assert_cmpstr(confab_test_variant_string(first, "id"), ==, a1);
		last = g_variant_get_child_value(p1, 1);
		g_assert_cmpstr(confab_test_variant_string(last, "id"), ==, a2);
		p2 = list_sessions(
		    f,
		    props_new("limit",
			      g_variant_new_uint32(2),
			      "order",
			      g_variant_new_string("asc"),
			      "after",
			      g_variant_new_string(confab_test_variant_string(last, "id")),
			      NULL));
		g_assert_cmpuint(g_variant_n_children(p2), ==, 2);
		g_clear_pointer(&first, g_variant_unref);
		first = g_variant_get_child_value(p2, 0);
		g_assert_cmpstr(confab_test_variant_string(first, "id"), ==, b1);
	}
	{
		g_autoptr(GVariant) v =
		    list_sessions(f, props_new("after", g_variant_new_string(b1), NULL));
		g_assert_cmpuint(g_variant_n_children(v), ==, 2);
	}

	/* refused filters */
	{
		GVariant *bad[] = {
		    props_new("source", g_variant_new_string("web"), NULL),
		    props_new("limit", g_variant_new_uint32(0), NULL),
		    props_new("limit", g_variant_new_uint32(1001), NULL),
		    props_new("limit", g_variant_new_int32(5), NULL),
		    props_new("order", g_variant_new_string("up"), NULL),
		    props_new("after", g_variant_new_string("garbage"), NULL),
		    props_new("after",
			      g_variant_new_string("msg_00000000000000000000000000"),
			      NULL),
		    props_new("owner", g_variant_new_int32(5), NULL),
		    props_new("agent", g_variant_new_string("x"), NULL),
		};
		for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
			g_autofree gchar *s = g_variant_print(bad[i], TRUE);
			g_autoptr(GError) e = NULL;
			g_test_message("ListSessions %s", s);
			e = list_sessions_error(f, bad[i]);
			assert_dbus_error(e, INVALID_ARGUMENT);
		}
	}
}

static void
test_get_messages(Fixture *f, gconstpointer data)
{
	g_autofree gchar *session = chat(f, f->alice, f->agent, NULL, "first words");
	g_autofree gchar *again = chat(f, f->alice, f->agent, session, "second words");
	g_autoptr(GVariant) messages = get_messages(f, session, NULL);
	g_autoptr(GVariant) desc = NULL;
	g_autofree gchar *channel = NULL;
	g_autofree gchar *reply = NULL;
	g_autoptr(GError) error = NULL;
	const gchar *roles[] = {"user", "assistant", "user", "assistant"};
	const gchar *texts[] = {"first words", "first words", "second words", "second words"};

	g_assert_cmpstr(again, ==, session);
	/* ascending by default here */
	g_assert_cmpuint(g_variant_n_children(messages), ==, 4);
	for (guint i = 0; i < 4; i++) {
		g_autoptr(GVariant) m = g_variant_get_child_value(messages, i);
		g_autoptr(JsonNode) content = NULL;
		g_autoptr(JsonNode) blocks = NULL;
		gint64 created = 0;
		g_assert_true(g_str_has_prefix(confab_test_variant_string(m, "id"), "msg_"));
		g_assert_cmpstr(confab_test_variant_string(m, "session_id"), ==, session);
		g_assert_cmpstr(confab_test_variant_string(m, "role"), ==, roles[i]);
		g_assert_cmpstr(confab_test_variant_string(m, "model"), ==, f->agent);
		g_assert_cmpstr(confab_test_variant_string(m, "status"), ==, "completed");
		g_assert_true(g_variant_lookup(m, "created_at", "x", &created));
		g_assert_cmpint(created, >, 0);
		/* JSON arrays, as the v1 API returns them */
		content = json_from_string(confab_test_variant_string(m, "content"), NULL);
		blocks = json_from_string(confab_test_variant_string(m, "content_blocks"), NULL);
		g_assert_nonnull(content);
		g_assert_nonnull(blocks);
		g_assert_true(JSON_NODE_HOLDS_ARRAY(content));
		g_assert_true(JSON_NODE_HOLDS_ARRAY(blocks));
		g_assert_cmpstr(confab_test_json_string(content, "0.type"), ==, "text");
		g_assert_cmpstr(confab_test_json_string(content, "0.text"), ==, texts[i]);
		g_assert_cmpstr(confab_test_json_string(blocks, "0.text"), ==, texts[i]);
		if (i % 2 == 1)
			g_assert_cmpstr(confab_test_variant_string(m, "finish_reason"), ==, "stop");
	}
	{
		/* the same as HTTP replays */
		g_autofree gchar *p =
		    g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", p, f->alice, NULL);
		g_assert_cmpuint(r->status, ==, 200);
		for (guint i = 0; i < 4; i++) {
			g_autoptr(GVariant) m = g_variant_get_child_value(messages, i);
			g_autofree gchar *path = g_strdup_printf("data.%u", i);
			JsonNode *item = confab_test_json_get(r->json, path);
			g_autoptr(JsonNode) content =
			    json_from_string(confab_test_variant_string(m, "content"), NULL);
			g_autoptr(JsonNode) blocks =
			    json_from_string(confab_test_variant_string(m, "content_blocks"), NULL);
			g_assert_cmpstr(confab_test_json_string(item, "id"),
					==,
					confab_test_variant_string(m, "id"));
			g_assert_true(
			    json_node_equal(content, confab_test_json_get(item, "content")));
			g_assert_true(
			    json_node_equal(blocks, confab_test_json_get(item, "content_blocks")));
		}
	}
	desc = get_messages(f,
			    session,
			    props_new("order",
				      g_variant_new_string("desc"),
				      "limit",
				      g_variant_new_uint32(3),
				      NULL));
	g_assert_cmpuint(g_variant_n_children(desc), ==, 3);
	{
		g_autoptr(GVariant) d0 = g_variant_get_child_value(desc, 0);
		g_autoptr(GVariant) m3 = g_variant_get_child_value(messages, 3);
		g_autoptr(GVariant) m0 = g_variant_get_child_value(messages, 0);
		g_autoptr(GVariant) rest = NULL;
		g_assert_cmpstr(confab_test_variant_string(d0, "id"),
				==,
				confab_test_variant_string(m3, "id"));
		rest = get_messages(
		    f,
		    session,
		    props_new("after",
			      g_variant_new_string(confab_test_variant_string(m0, "id")),
			      NULL));
		g_assert_cmpuint(g_variant_n_children(rest), ==, 3);
	}

	/* any session, channel ones too */
	confab_dbus_chat_call_send_sync(f->daemon->chat,
					f->agent,
					"",
					"over the bus",
					&channel,
					&reply,
					NULL,
					&error);
	g_assert_no_error(error);
	{
		g_autoptr(GVariant) m = get_messages(f, channel, NULL);
		g_autoptr(GVariant) first = NULL;
		g_autoptr(JsonNode) content = NULL;
		g_assert_cmpuint(g_variant_n_children(m), ==, 2);
		first = g_variant_get_child_value(m, 0);
		content = json_from_string(confab_test_variant_string(first, "content"), NULL);
		g_assert_cmpstr(confab_test_json_string(content, "0.text"), ==, "over the bus");
	}

	/* errors */
	{
		const gchar *unknown[] = {SESSION_ID_UNKNOWN, "cts_nope", "", "garbage"};
		for (guint i = 0; i < G_N_ELEMENTS(unknown); i++) {
			g_autoptr(GError) e = get_messages_error(f, unknown[i], NULL);
			assert_dbus_error(e, SESSION_NOT_FOUND);
		}
	}
	{
		GVariant *bad[] = {
		    props_new("limit", g_variant_new_uint32(0), NULL),
		    props_new("limit", g_variant_new_string("5"), NULL),
		    props_new("order", g_variant_new_string("sideways"), NULL),
		    props_new("after", g_variant_new_string(session), NULL),
		    props_new("color", g_variant_new_string("x"), NULL),
		};
		for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
			g_autoptr(GError) e = get_messages_error(f, session, bad[i]);
			assert_dbus_error(e, INVALID_ARGUMENT);
		}
	}
}

static void
test_delete_session(Fixture *f, gconstpointer data)
{
	g_autofree gchar *session = chat(f, f->alice, f->agent, NULL, "short-lived");
	g_autofree gchar *keep = chat(f, f->alice, f->agent, NULL, "long-lived");
	g_autofree gchar *path = g_strdup_printf("/api/v1/conversations/%s/messages", session);
	g_autoptr(GError) error = NULL;

	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", path, f->alice, NULL);
		g_assert_cmpuint(r->status, ==, 200);
	}
	confab_dbus_admin_call_delete_session_sync(f->daemon->admin, session, NULL, &error);
	g_assert_no_error(error);
	/* at once, everywhere */
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", path, f->alice, NULL);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->alice, f->agent, session, "hello?", FALSE);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", "/api/v1/conversations", f->alice, NULL);
		JsonArray *items = json_node_get_array(confab_test_json_get(r->json, "data"));
		g_assert_cmpuint(json_array_get_length(items), ==, 1);
		g_assert_cmpstr(confab_test_json_string(r->json, "data.0.id"), ==, keep);
	}
	{
		g_autoptr(GError) e = get_messages_error(f, session, NULL);
		assert_dbus_error(e, SESSION_NOT_FOUND);
	}
	{
		g_autoptr(GVariant) v = list_sessions(f, g_variant_new("a{sv}", NULL));
		g_assert_cmpuint(g_variant_n_children(v), ==, 1);
	}
	{
		const gchar *unknown[] = {session, SESSION_ID_UNKNOWN, "cts_nope", ""};
		for (guint i = 0; i < G_N_ELEMENTS(unknown); i++) {
			g_autoptr(GError) e = NULL;
			confab_dbus_admin_call_delete_session_sync(f->daemon->admin,
								   unknown[i],
								   NULL,
								   &e);
			assert_dbus_error(e, SESSION_NOT_FOUND);
		}
	}
	{
		/* the other one is intact */
		g_autoptr(GVariant) m = get_messages(f, keep, NULL);
		g_assert_cmpuint(g_variant_n_children(m), ==, 2);
	}
}

/* ---------- properties ---------- */

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *agent;
	guint status;
} HeldTurn;

static gpointer
held_turn_thread(gpointer data)
{
	HeldTurn *t = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(t->daemon, t->token, t->agent, NULL, "held", FALSE);
	t->status = r->status;
	return NULL;
}

static void
test_properties(Fixture *f, gconstpointer data)
{
	g_autoptr(GVariant) version = admin_property(f, "Version");
	g_autoptr(GVariant) address = admin_property(f, "ListenAddress");

	g_assert_cmpstr(g_variant_get_string(version, NULL), ==, PACKAGE_VERSION);
	g_assert_cmpstr(confab_dbus_admin_get_version(f->daemon->admin), ==, PACKAGE_VERSION);
	g_assert_cmpstr(g_variant_get_string(address, NULL), ==, f->daemon->url);
	g_assert_true(g_str_has_prefix(g_variant_get_string(address, NULL), "http://"));
	g_assert_cmpuint(active_turns(f), ==, 0);
}

static void
test_turns_served(Fixture *f, gconstpointer data)
{
	guint64 served;

	/* TurnsServed counts the turns that ran, read live */
	served = turns_served(f);
	g_free(chat(f, f->alice, f->agent, NULL, "one"));
	g_free(chat(f, f->alice, f->agent, NULL, "two"));
	g_assert_cmpuint(turns_served(f), ==, served + 2);
	g_assert_cmpuint(active_turns(f), ==, 0);
}

static void
test_refused_not_served(Fixture *f, gconstpointer data)
{
	g_autofree gchar *bound =
	    confab_test_create_token(f->daemon, "alice", "api.full", f->agent, NULL);
	g_autofree gchar *other = confab_test_create_agent(f->daemon, "other", "echo");
	guint64 served = turns_served(f);

	/* refused requests are not turns served */
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->alice, AGENT_ID_UNKNOWN, NULL, "x", FALSE);
		confab_test_assert_error(r, 404, "agent_not_found");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, bound, other, NULL, "x", FALSE);
		confab_test_assert_error(r, 403, "permission_denied");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->alice, f->agent, SESSION_ID_UNKNOWN, "x", FALSE);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	g_assert_cmpuint(turns_served(f), ==, served);
}

static void
test_active_turns(Fixture *f, gconstpointer data)
{
	ConfabTestUpstream *up = confab_test_upstream_start(TRUE);
	g_autofree gchar *agent = NULL;
	HeldTurn held[2] = {{f->daemon, f->alice, NULL, 0}, {f->daemon, f->alice, NULL, 0}};
	GThread *threads[2];
	guint64 served = turns_served(f);

	agent = confab_test_create_agent_props(
	    f->daemon,
	    props_new("name",
		      g_variant_new_string("slow"),
		      "provider",
		      g_variant_new_string("openai"),
		      "base_url",
		      g_variant_new_string(confab_test_upstream_get_base_url(up)),
		      "upstream_model",
		      g_variant_new_string("m"),
		      NULL));
	for (guint i = 0; i < 2; i++) {
		held[i].agent = agent;
		threads[i] = g_thread_new("held", held_turn_thread, &held[i]);
	}
	g_assert_true(confab_test_upstream_wait_waiting(up, 2, 30000));
	g_assert_cmpuint(active_turns(f), ==, 2);
	g_assert_cmpuint(turns_served(f), ==, served);
	confab_test_upstream_set_hold(up, FALSE);
	for (guint i = 0; i < 2; i++) {
		g_thread_join(threads[i]);
		g_assert_cmpuint(held[i].status, ==, 200);
	}
	g_assert_cmpuint(active_turns(f), ==, 0);
	g_assert_cmpuint(turns_served(f), ==, served + 2);
	confab_test_upstream_stop(up);
}

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *agent;
	const gchar *session;
	ConfabTestResponse *response;
} HeldContinuation;

static gpointer
held_continuation_thread(gpointer data)
{
	HeldContinuation *t = data;
	t->response = confab_test_chat(t->daemon, t->token, t->agent, t->session, "held", FALSE);
	return NULL;
}

static void
test_delete_session_mid_turn(Fixture *f, gconstpointer data)
{
	ConfabTestUpstream *up = confab_test_upstream_start(FALSE);
	g_autofree gchar *agent = NULL;
	g_autofree gchar *session = NULL;
	HeldContinuation held = {f->daemon, f->alice, NULL, NULL, NULL};
	g_autoptr(GError) error = NULL;
	GThread *thread;

	agent = confab_test_create_agent_props(
	    f->daemon,
	    props_new("name",
		      g_variant_new_string("slow"),
		      "provider",
		      g_variant_new_string("openai"),
		      "base_url",
		      g_variant_new_string(confab_test_upstream_get_base_url(up)),
		      "upstream_model",
		      g_variant_new_string("m"),
		      NULL));
	session = chat(f, f->alice, agent, NULL, "first");
	confab_test_upstream_set_hold(up, TRUE);
	held.agent = agent;
	held.session = session;
	thread = g_thread_new("held", held_continuation_thread, &held);
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));

	/* deleted while a turn runs in it: at once and for good */
	confab_dbus_admin_call_delete_session_sync(f->daemon->admin, session, NULL, &error);
	g_assert_no_error(error);
	{
		g_autoptr(GError) e = get_messages_error(f, session, NULL);
		assert_dbus_error(e, SESSION_NOT_FOUND);
	}
	confab_test_upstream_set_hold(up, FALSE);
	g_thread_join(thread);
	/* the turn ends cleanly, one way or the other */
	g_test_message("held turn: %u", held.response->status);
	g_assert_nonnull(held.response->json);
	if (held.response->status != 200)
		confab_test_assert_error(held.response, 404, "conversation_not_found");
	g_clear_pointer(&held.response, confab_test_response_free);
	/* and does not bring the session back */
	{
		g_autoptr(GError) e = get_messages_error(f, session, NULL);
		g_autoptr(GVariant) all = list_sessions(f, g_variant_new("a{sv}", NULL));
		assert_dbus_error(e, SESSION_NOT_FOUND);
		for (gsize i = 0; i < g_variant_n_children(all); i++) {
			g_autoptr(GVariant) s = g_variant_get_child_value(all, i);
			g_assert_cmpstr(confab_test_variant_string(s, "id"), !=, session);
		}
	}
	{
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations/%s/messages", session);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", p, f->alice, NULL);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	{
		/* the agent and the daemon carry on */
		g_autofree gchar *next = chat(f, f->alice, agent, NULL, "next");
		g_assert_nonnull(next);
	}
	confab_test_upstream_stop(up);
}

/* ---------- revocation ---------- */

/* Reads from @conn until @text has come (or the daemon closes). */
static void
read_until(GSocketConnection *conn, GString *got, const gchar *text)
{
	GSocket *socket = g_socket_connection_get_socket(conn);
	gchar buf[4096];

	while (strstr(got->str, text) == NULL) {
		g_autoptr(GError) error = NULL;
		gssize n = g_socket_receive(socket, buf, sizeof(buf), NULL, &error);
		g_assert_no_error(error);
		g_assert_cmpint(n, >, 0);
		g_string_append_len(got, buf, n);
	}
}

/*
 * A revocation applies to the requests that start after it: the token is
 * checked once, when a request arrives. A stream already running with it
 * goes on to its end (bounded by the upstream's total_timeout) and its
 * turn is stored; the next request with the token is refused.
 */
static void
test_revoke_mid_stream(Fixture *f, gconstpointer data)
{
	ConfabTestUpstream *up = confab_test_upstream_start(TRUE);
	g_autoptr(GSocketClient) client = g_socket_client_new();
	g_autoptr(GSocketConnection) conn = NULL;
	g_autoptr(GString) got = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) messages = NULL;
	g_autoptr(GVariant) assistant = NULL;
	g_autofree gchar *token_id = NULL;
	g_autofree gchar *secret =
	    confab_test_create_token(f->daemon, "carol", "chat.completions", NULL, &token_id);
	g_autofree gchar *agent = NULL;
	g_autofree gchar *body = NULL;
	g_autofree gchar *request = NULL;
	g_autofree gchar *session = NULL;
	const gchar *session_header;

	agent = confab_test_create_agent_props(
	    f->daemon,
	    props_new("name",
		      g_variant_new_string("slow"),
		      "provider",
		      g_variant_new_string("openai"),
		      "base_url",
		      g_variant_new_string(confab_test_upstream_get_base_url(up)),
		      "upstream_model",
		      g_variant_new_string("m"),
		      NULL));
	body = g_strdup_printf("{\"model\":\"%s\",\"stream\":true,"
			       "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
			       agent);
	request = g_strdup_printf("POST /api/v1/chat/completions HTTP/1.1\r\n"
				  "Host: x\r\n"
				  "Authorization: Bearer %s\r\n"
				  "Content-Type: application/json\r\n"
				  "Content-Length: %" G_GSIZE_FORMAT "\r\n\r\n%s",
				  secret,
				  strlen(body),
				  body);

	/* the stream has begun, and its turn waits on the upstream */
	conn = g_socket_client_connect_to_uri(client, f->daemon->url, 80, NULL, &error);
	g_assert_no_error(error);
	g_socket_set_timeout(g_socket_connection_get_socket(conn), 30);
	g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)),
				  request,
				  strlen(request),
				  NULL,
				  NULL,
				  &error);
	g_assert_no_error(error);
	read_until(conn, got, "\"role\":\"assistant\"");
	g_assert_true(g_str_has_prefix(got->str, "HTTP/1.1 200"));
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));

	/* revoked now: a new request with the token is refused at once... */
	confab_dbus_admin_call_revoke_token_sync(f->daemon->admin, token_id, NULL, &error);
	g_assert_no_error(error);
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", "/api/v1/conversations", secret, NULL);
		confab_test_assert_error(r, 401, "invalid_api_key");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, secret, agent, NULL, "again", TRUE);
		confab_test_assert_error(r, 401, "invalid_api_key");
	}

	/* ...while the stream that began before goes on to its end */
	confab_test_upstream_set_hold(up, FALSE);
	read_until(conn, got, "\r\n0\r\n\r\n");
	g_assert_nonnull(strstr(got->str, "\"content\":\"slow answer\""));
	g_assert_nonnull(strstr(got->str, "\"finish_reason\":\"stop\""));
	g_assert_nonnull(strstr(got->str, "data: [DONE]"));
	g_assert_null(strstr(got->str, "\"error\""));

	/* and its turn is stored whole */
	session_header = strstr(got->str, "x-session-id: ");
	g_assert_nonnull(session_header);
	session_header += strlen("x-session-id: ");
	session = g_strndup(session_header, strcspn(session_header, "\r"));
	messages = get_messages(f, session, NULL);
	g_assert_cmpuint(g_variant_n_children(messages), ==, 2);
	assistant = g_variant_get_child_value(messages, 1);
	g_assert_cmpstr(confab_test_variant_string(assistant, "role"), ==, "assistant");
	g_assert_cmpstr(confab_test_variant_string(assistant, "status"), ==, "completed");
	confab_test_upstream_stop(up);
}

static void
update_agent(Fixture *f, const gchar *id, GVariant *props)
{
	g_autoptr(GError) error = NULL;
	confab_dbus_admin_call_update_agent_sync(f->daemon->admin, id, props, NULL, &error);
	g_assert_no_error(error);
}

/* Whether the agent has a key, and its key file (NULL for none). */
static gboolean
agent_has_key(Fixture *f, const gchar *id, gchar **key_file)
{
	g_autoptr(GVariant) agent = get_agent(f, id);
	gboolean has_key = FALSE;

	g_assert_true(g_variant_lookup(agent, "has_api_key", "b", &has_key));
	if (key_file != NULL)
		*key_file = g_strdup(confab_test_variant_string(agent, "api_key_file"));
	return has_key;
}

/* A key was given for one upstream: UpdateAgent moving the agent to another
 * scheme, host or port drops it (and its key file), unless the same call
 * gives a key; another path on the same upstream keeps it. */
static void
test_move_drops_key(Fixture *f, gconstpointer data)
{
	g_autofree gchar *key_path = g_build_filename(f->keys_dir, "openai", NULL);
	g_autofree gchar *id = NULL;
	g_autofree gchar *key_file = NULL;
	g_autoptr(GError) error = NULL;

	g_file_set_contents(key_path, "sk-from-file-0123456789", -1, &error);
	g_assert_no_error(error);
	id = confab_test_create_agent_props(f->daemon,
					    props_new("name",
						      g_variant_new_string("Mover"),
						      "provider",
						      g_variant_new_string("openai"),
						      "base_url",
						      g_variant_new_string("http://127.0.0.1:9/v1"),
						      "upstream_model",
						      g_variant_new_string("gpt-test"),
						      "api_key",
						      g_variant_new_string(UPSTREAM_KEY),
						      "api_key_file",
						      g_variant_new_string("openai"),
						      NULL));
	g_assert_true(agent_has_key(f, id, NULL));

	/* the same upstream: another path, the host's case, the default port */
	update_agent(f,
		     id,
		     props_new("base_url", g_variant_new_string("http://127.0.0.1:9/v2"), NULL));
	g_assert_true(agent_has_key(f, id, &key_file));
	g_assert_cmpstr(key_file, ==, "openai");
	g_clear_pointer(&key_file, g_free);
	/* another host: the key and the key file go */
	update_agent(f,
		     id,
		     props_new("base_url", g_variant_new_string("http://LOCALHOST/v1"), NULL));
	g_assert_false(agent_has_key(f, id, &key_file));
	g_assert_null(key_file);
	/* the same upstream: the host's case, the default port */
	update_agent(f, id, props_new("api_key", g_variant_new_string(UPSTREAM_KEY), NULL));
	update_agent(f,
		     id,
		     props_new("base_url", g_variant_new_string("http://localhost:80/v3"), NULL));
	g_assert_true(agent_has_key(f, id, NULL));

	/* another port: both go */
	update_agent(f,
		     id,
		     props_new("api_key_file",
			       g_variant_new_string("openai"),
			       "base_url",
			       g_variant_new_string("http://localhost:8080/v1"),
			       NULL));
	g_assert_false(agent_has_key(f, id, &key_file));
	/* ...but a key file given in the same call stays */
	g_assert_cmpstr(key_file, ==, "openai");
	g_clear_pointer(&key_file, g_free);
	update_agent(f,
		     id,
		     props_new("base_url",
			       g_variant_new_string("http://localhost:8081/v1"),
			       "api_key",
			       g_variant_new_string(UPSTREAM_KEY),
			       NULL));
	/* a key given in the same call stays; the old key file goes */
	g_assert_true(agent_has_key(f, id, &key_file));
	g_assert_null(key_file);

	/* another scheme, another host */
	update_agent(
	    f,
	    id,
	    props_new("base_url", g_variant_new_string("https://localhost:8081/v1"), NULL));
	g_assert_false(agent_has_key(f, id, NULL));
	update_agent(f,
		     id,
		     props_new("base_url",
			       g_variant_new_string("https://upstream.example/v1"),
			       "api_key",
			       g_variant_new_string(UPSTREAM_KEY),
			       NULL));
	g_assert_true(agent_has_key(f, id, NULL));
	update_agent(f,
		     id,
		     props_new("base_url", g_variant_new_string("https://evil.example/v1"), NULL));
	g_assert_false(agent_has_key(f, id, NULL));
	/* an update that does not touch base_url keeps a key */
	update_agent(f, id, props_new("api_key", g_variant_new_string(UPSTREAM_KEY), NULL));
	update_agent(f, id, props_new("name", g_variant_new_string("Stayer"), NULL));
	g_assert_true(agent_has_key(f, id, NULL));
}

/* ---------- upstream targets ---------- */

#define TWO_TARGETS                                                                                \
	"[{\"label\":\"hosted\",\"base_url\":\"https://api.example/v1\",\"upstream_model\":"       \
	"\"big\",\"api_key\":\"" UPSTREAM_KEY "\",\"weight\":3,\"first_byte_timeout\":7},"         \
	"{\"label\":\"local\",\"base_url\":\"http://127.0.0.1:11434/v1\",\"upstream_model\":"      \
	"\"small\",\"api_key\":\"" UPSTREAM_KEY "-2\"}]"

static GVariant *
openai_props(const gchar *upstreams, const gchar *routing)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "Routed");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	if (upstreams != NULL)
		g_variant_dict_insert(&dict, "upstreams", "s", upstreams);
	if (routing != NULL)
		g_variant_dict_insert(&dict, "routing", "s", routing);
	return g_variant_dict_end(&dict);
}

static JsonNode *
agent_json(Fixture *f, const gchar *id, const gchar *key)
{
	g_autoptr(GVariant) agent = get_agent(f, id);
	const gchar *text = confab_test_variant_string(agent, key);

	g_assert_nonnull(text);
	/* keys are write-only, whatever holds them */
	g_assert_null(strstr(text, UPSTREAM_KEY));
	g_assert_null(strstr(text, "\"api_key\""));
	return json_from_string(text, NULL);
}

/* A target list's labels, comma-separated, and whether each has a key. */
static gchar *
target_labels(Fixture *f, const gchar *id)
{
	g_autoptr(JsonNode) upstreams = agent_json(f, id, "upstreams");
	JsonArray *array = json_node_get_array(upstreams);
	GString *out = g_string_new(NULL);

	for (guint i = 0; i < json_array_get_length(array); i++) {
		JsonObject *target = json_array_get_object_element(array, i);
		g_string_append_printf(
		    out,
		    "%s%s%s",
		    i > 0 ? "," : "",
		    json_object_get_string_member(target, "label"),
		    json_object_get_boolean_member(target, "has_api_key") ? "+key" : "");
	}
	return g_string_free(out, FALSE);
}

/* Bad targets and routing are refused, the field named, nothing stored. */
static void
test_targets_errors(Fixture *f, gconstpointer data)
{
	g_autoptr(GString) seventeen = g_string_new("[");
	const struct {
		const gchar *upstreams;
		const gchar *routing;
		const gchar *field;
	} cases[] = {
	    {"[]", NULL, "upstreams"},
	    {NULL, NULL, "upstreams"}, /* seventeen */
	    {"{}", NULL, "upstreams"},
	    {"[{\"label\":\"a\",\"base_url\":\"ftp://x/v1\",\"upstream_model\":\"m\"}]",
	     NULL,
	     "upstreams[0].base_url"},
	    {"[{\"label\":\"a\",\"base_url\":\"http://x/v1\",\"upstream_model\":\"m\"},"
	     "{\"label\":\"b\",\"base_url\":\"not a url\",\"upstream_model\":\"m\"}]",
	     NULL,
	     "upstreams[1].base_url"},
	    {"[{\"label\":\"a\",\"base_url\":\"http://x/v1\",\"upstream_model\":\"m\","
	     "\"weight\":0}]",
	     NULL,
	     "upstreams[0].weight"},
	    {"[{\"label\":\"a\",\"base_url\":\"http://x/v1\",\"upstream_model\":\"m\","
	     "\"weight\":1001}]",
	     NULL,
	     "upstreams[0].weight"},
	    {"[{\"label\":\"a\",\"base_url\":\"http://x/v1\",\"upstream_model\":\"m\"},"
	     "{\"label\":\"a\",\"base_url\":\"http://y/v1\",\"upstream_model\":\"m\"}]",
	     NULL,
	     "upstreams[1].label"},
	    {"[{\"base_url\":\"http://x/v1\",\"upstream_model\":\"m\"}]",
	     NULL,
	     "upstreams[0].label"},
	    {"[{\"label\":\"a\",\"base_url\":\"http://x/v1\"}]",
	     NULL,
	     "upstreams[0].upstream_model"},
	    {"[{\"label\":\"a\",\"base_url\":\"http://x/v1\",\"upstream_model\":\"m\","
	     "\"colour\":1}]",
	     NULL,
	     "upstreams[0].colour"},
	    /* a key file outside the credentials directory, as for one target */
	    {"[{\"label\":\"a\",\"base_url\":\"http://x/v1\",\"upstream_model\":\"m\"},"
	     "{\"label\":\"b\",\"base_url\":\"http://y/v1\",\"upstream_model\":\"m\","
	     "\"api_key_file\":\"/etc/passwd\"}]",
	     NULL,
	     "upstreams[1]"},
	    {TWO_TARGETS, "{\"strategy\":\"random\"}", "routing.strategy"},
	    {TWO_TARGETS, "{\"hedge_after_ms\":-1}", "routing.hedge_after_ms"},
	    {TWO_TARGETS, "{\"max_attempts\":\"2\"}", "routing.max_attempts"},
	    {TWO_TARGETS, "[]", "routing"},
	};
	g_autoptr(GVariant) before = list_agents(f);
	g_autoptr(GVariant) after = NULL;
	g_autofree gchar *id = NULL;

	for (guint i = 0; i < 17; i++)
		g_string_append_printf(seventeen,
				       "%s{\"label\":\"t%u\",\"base_url\":\"http://x/v1\","
				       "\"upstream_model\":\"m\"}",
				       i > 0 ? "," : "",
				       i);
	g_string_append(seventeen, "]");
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		const gchar *upstreams = cases[i].upstreams ?: seventeen->str;
		g_autoptr(GError) error = NULL;

		g_test_message("CreateAgent with upstreams %s routing %s",
			       upstreams,
			       cases[i].routing);
		error = create_agent_error(f, openai_props(upstreams, cases[i].routing));
		assert_dbus_error(error, INVALID_ARGUMENT);
		g_assert_nonnull(strstr(error->message, cases[i].field));
	}
	after = list_agents(f);
	g_assert_cmpuint(g_variant_n_children(after), ==, g_variant_n_children(before));

	/* an update refused leaves the agent as it was */
	id = confab_test_create_agent_props(f->daemon, openai_props(TWO_TARGETS, NULL));
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		const gchar *upstreams = cases[i].upstreams ?: seventeen->str;
		g_autoptr(GError) error = NULL;
		g_autoptr(GVariantDict) props = g_variant_dict_new(NULL);

		g_variant_dict_insert(props, "upstreams", "s", upstreams);
		if (cases[i].routing != NULL)
			g_variant_dict_insert(props, "routing", "s", cases[i].routing);
		confab_dbus_admin_call_update_agent_sync(f->daemon->admin,
							 id,
							 g_variant_dict_end(props),
							 NULL,
							 &error);
		assert_dbus_error(error, INVALID_ARGUMENT);
	}
	{
		g_autofree gchar *labels = target_labels(f, id);
		g_assert_cmpstr(labels, ==, "hosted+key,local+key");
	}
}

/* Targets and routing in, shown back without keys; an agent from before
 * targets has one, "primary"; a restart keeps them. */
static void
test_targets(Fixture *f, gconstpointer data)
{
	g_autofree gchar *id = confab_test_create_agent_props(
	    f->daemon,
	    openai_props(TWO_TARGETS, "{\"strategy\":\"weighted\",\"hedge_after_ms\":500}"));
	g_autofree gchar *legacy = NULL;
	g_autoptr(GVariant) agent = get_agent(f, id);
	g_autoptr(JsonNode) upstreams = agent_json(f, id, "upstreams");
	g_autoptr(JsonNode) routing = agent_json(f, id, "routing");
	JsonObject *first = json_array_get_object_element(json_node_get_array(upstreams), 0);
	g_autofree gchar *labels = NULL;
	ConfabTestDaemon *old = NULL;
	g_autofree gchar *config = NULL;

	/* the single-upstream properties describe target 0 */
	g_assert_cmpstr(confab_test_variant_string(agent, "base_url"),
			==,
			"https://api.example/v1");
	g_assert_cmpstr(confab_test_variant_string(agent, "upstream_model"), ==, "big");
	g_assert_cmpint(json_object_get_int_member(first, "weight"), ==, 3);
	g_assert_cmpint(json_object_get_int_member(first, "first_byte_timeout"), ==, 7);
	g_assert_cmpstr(json_object_get_string_member(json_node_get_object(routing), "strategy"),
			==,
			"weighted");
	g_assert_cmpint(json_object_get_int_member(json_node_get_object(routing), "hedge_after_ms"),
			==,
			500);

	/* routing members not given keep their values */
	update_agent(f,
		     id,
		     props_new("routing", g_variant_new_string("{\"max_attempts\":2}"), NULL));
	g_clear_pointer(&routing, json_node_unref);
	routing = agent_json(f, id, "routing");
	g_assert_cmpstr(json_object_get_string_member(json_node_get_object(routing), "strategy"),
			==,
			"weighted");
	g_assert_cmpint(json_object_get_int_member(json_node_get_object(routing), "max_attempts"),
			==,
			2);

	/* what GetAgent shows, sent back, keeps the keys (same label, same URL) */
	update_agent(f,
		     id,
		     props_new("upstreams",
			       g_variant_new_string(confab_test_variant_string(agent, "upstreams")),
			       NULL));
	labels = target_labels(f, id);
	g_assert_cmpstr(labels, ==, "hosted+key,local+key");
	g_clear_pointer(&labels, g_free);

	/* the old single-upstream calls still work: target 0 changes */
	update_agent(f, id, props_new("upstream_model", g_variant_new_string("bigger"), NULL));
	g_clear_pointer(&agent, g_variant_unref);
	agent = get_agent(f, id);
	g_assert_nonnull(strstr(confab_test_variant_string(agent, "upstreams"), "\"bigger\""));

	legacy =
	    confab_test_create_agent_props(f->daemon,
					   props_new("name",
						     g_variant_new_string("Old"),
						     "provider",
						     g_variant_new_string("openai"),
						     "base_url",
						     g_variant_new_string("https://api.example/v1"),
						     "upstream_model",
						     g_variant_new_string("m"),
						     "api_key",
						     g_variant_new_string(UPSTREAM_KEY),
						     NULL));
	labels = target_labels(f, legacy);
	g_assert_cmpstr(labels, ==, "primary+key");
	g_clear_pointer(&labels, g_free);

	/* a restart keeps them */
	old = f->daemon;
	g_assert_cmpint(confab_test_daemon_stop(old), ==, 0);
	config = g_strdup_printf("[upstream]\ncredentials_dir=%s\n", f->keys_dir);
	f->daemon = confab_test_daemon_start_full(old->state_dir, config, NULL);
	old->own_state_dir = FALSE;
	f->daemon->own_state_dir = TRUE;
	confab_test_daemon_free(old);
	labels = target_labels(f, id);
	g_assert_cmpstr(labels, ==, "hosted+key,local+key");
	g_clear_pointer(&labels, g_free);
	labels = target_labels(f, legacy);
	g_assert_cmpstr(labels, ==, "primary+key");
	g_clear_pointer(&routing, json_node_unref);
	routing = agent_json(f, id, "routing");
	g_assert_cmpint(json_object_get_int_member(json_node_get_object(routing), "hedge_after_ms"),
			==,
			500);
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, func)                                                                            \
	g_test_add("/confab/dbus-admin/" name, Fixture, NULL, fixture_setup, func, fixture_teardown)
	ADD("create-agent-errors", test_create_agent_errors);
	ADD("agent-lifecycle", test_agent_lifecycle);
	ADD("move-drops-key", test_move_drops_key);
	ADD("targets", test_targets);
	ADD("targets-errors", test_targets_errors);
	ADD("tokens", test_tokens);
	ADD("create-token-errors", test_create_token_errors);
	ADD("quota", test_quota);
	ADD("list-sessions", test_list_sessions);
	ADD("get-messages", test_get_messages);
	ADD("delete-session", test_delete_session);
	ADD("properties", test_properties);
	ADD("turns-served", test_turns_served);
	ADD("active-turns", test_active_turns);
	ADD("refused-not-served", test_refused_not_served);
	ADD("delete-session-mid-turn", test_delete_session_mid_turn);
	ADD("revoke-mid-stream", test_revoke_mid_stream);
#undef ADD
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
