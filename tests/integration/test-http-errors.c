/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * Every error row of the contract, against a real confabd: status, the
 * OpenAI error shape and nothing else, the code, the param. After each
 * test the daemon still answers and no failing request left a
 * conversation behind.
 */

#define SESSION_ID_UNKNOWN "cts_00000000000000000000000000"

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent_a;
	gchar *agent_b;
	gchar *alice;
	gchar *bob;
	guint n_sessions; /* conversations the test created on purpose */
} Fixture;

static void
fixture_setup_config(Fixture *f, const gchar *config)
{
	f->daemon = confab_test_daemon_start(config, NULL);
	f->agent_a = confab_test_create_agent(f->daemon, "echo-a", "echo");
	f->agent_b = confab_test_create_agent(f->daemon, "echo-b", "echo");
	f->alice = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
	f->bob = confab_test_create_token(f->daemon, "bob", "api.full", NULL, NULL);
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	fixture_setup_config(f, data);
}

static guint
count_sessions(Fixture *f)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) sessions = NULL;
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "limit", "u", 1000);
	confab_dbus_admin_call_list_sessions_sync(f->daemon->admin,
						  g_variant_dict_end(&dict),
						  &sessions,
						  NULL,
						  &error);
	g_assert_no_error(error);
	return g_variant_n_children(sessions);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	/* the daemon still answers, and the failures stored nothing */
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(f->daemon, "GET", "/api/v1/conversations", f->alice, NULL);
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpuint(count_sessions(f), ==, f->n_sessions);
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	g_free(f->agent_a);
	g_free(f->agent_b);
	g_free(f->alice);
	g_free(f->bob);
}

/* ---------- helpers ---------- */

static const gchar *
type_for_status(guint status)
{
	switch (status) {
	case 400:
	case 405:
	case 413:
	case 415:
		return "invalid_request_error";
	case 401:
		return "authentication_error";
	case 403:
		return "permission_error";
	case 404:
		return "not_found_error";
	case 409:
		return "conflict_error";
	case 429:
		return "insufficient_quota";
	default:
		g_assert_not_reached();
	}
}

/* the OpenAI error shape and nothing more: {"error":{message,type,param,code}} */
static void
assert_error_body(ConfabTestResponse *r, guint status, const gchar *code)
{
	JsonObject *root;
	JsonObject *error;
	JsonNode *param;
	const gchar *members[] = {"message", "type", "param", "code"};

	if (r->status != status)
		g_test_message("expected %u %s, got %u: %.*s",
			       status,
			       code,
			       r->status,
			       (int)g_bytes_get_size(r->body),
			       (const gchar *)g_bytes_get_data(r->body, NULL));
	g_assert_cmpstr(soup_message_headers_get_content_type(r->headers, NULL),
			==,
			"application/json");
	confab_test_assert_error(r, status, code);
	root = json_node_get_object(r->json);
	g_assert_cmpuint(json_object_get_size(root), ==, 1);
	error = json_object_get_object_member(root, "error");
	g_assert_cmpuint(json_object_get_size(error), ==, 4);
	for (guint i = 0; i < G_N_ELEMENTS(members); i++)
		g_assert_true(json_object_has_member(error, members[i]));
	g_assert_cmpstr(confab_test_json_string(r->json, "error.type"),
			==,
			type_for_status(status));
	g_assert_cmpuint(strlen(confab_test_json_string(r->json, "error.message")), >, 0);
	param = json_object_get_member(error, "param");
	g_assert_true(
	    JSON_NODE_HOLDS_NULL(param) ||
	    (JSON_NODE_HOLDS_VALUE(param) && json_node_get_value_type(param) == G_TYPE_STRING));
}

static void
assert_error_param(ConfabTestResponse *r, guint status, const gchar *code, const gchar *param)
{
	assert_error_body(r, status, code);
	g_assert_cmpstr(confab_test_json_string(r->json, "error.param"), ==, param);
}

static gchar *
chat_body(const gchar *agent, const gchar *session_id, const gchar *text)
{
	if (session_id != NULL)
		return g_strdup_printf("{\"model\":\"%s\",\"metadata\":{\"session_id\":\"%s\"},"
				       "\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}",
				       agent,
				       session_id,
				       text);
	return g_strdup_printf("{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":"
			       "\"%s\"}]}",
			       agent,
			       text);
}

static gchar *
new_conversation(Fixture *f, const gchar *token, const gchar *agent)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(f->daemon, token, agent, NULL, "hello", FALSE);
	g_assert_cmpuint(r->status, ==, 200);
	f->n_sessions++;
	return g_strdup(confab_test_json_string(r->json, "metadata.session_id"));
}

static ConfabTestResponse *
post_raw(Fixture *f, const gchar *token, const gchar *content_type, const gchar *data, gsize len)
{
	g_autofree gchar *auth = token != NULL ? g_strdup_printf("Authorization: Bearer %s", token)
					       : NULL;
	g_autofree gchar *type =
	    content_type != NULL ? g_strdup_printf("Content-Type: %s", content_type) : NULL;
	const gchar *headers[3] = {NULL};
	g_autoptr(GBytes) bytes = g_bytes_new(data, len);
	guint n = 0;

	if (type != NULL)
		headers[n++] = type;
	if (auth != NULL)
		headers[n++] = auth;
	return confab_test_http_full(f->daemon, "POST", "/api/v1/chat/completions", headers, bytes);
}

static ConfabTestResponse *
post_json(Fixture *f, const gchar *token, const gchar *body)
{
	return post_raw(f, token, "application/json", body, strlen(body));
}

/* each of the three endpoints, with @auth as the whole Authorization value */
typedef struct {
	const gchar *method;
	gchar *path;
	gchar *body;
} Endpoint;

static void
endpoints_init(Fixture *f, Endpoint endpoints[3], const gchar *session_id)
{
	endpoints[0].method = "POST";
	endpoints[0].path = g_strdup("/api/v1/chat/completions");
	endpoints[0].body = chat_body(f->agent_a, NULL, "hi");
	endpoints[1].method = "GET";
	endpoints[1].path = g_strdup("/api/v1/conversations");
	endpoints[1].body = NULL;
	endpoints[2].method = "GET";
	endpoints[2].path = g_strdup_printf("/api/v1/conversations/%s/messages", session_id);
	endpoints[2].body = NULL;
}

static void
endpoints_clear(Endpoint endpoints[3])
{
	for (guint i = 0; i < 3; i++) {
		g_free(endpoints[i].path);
		g_free(endpoints[i].body);
	}
}

static ConfabTestResponse *
call_endpoint(Fixture *f, Endpoint *e, const gchar *authorization)
{
	g_autofree gchar *auth =
	    authorization != NULL ? g_strdup_printf("Authorization: %s", authorization) : NULL;
	const gchar *headers[] = {"Content-Type: application/json", auth, NULL};
	g_autoptr(GBytes) bytes = e->body != NULL ? g_bytes_new(e->body, strlen(e->body)) : NULL;
	return confab_test_http_full(f->daemon, e->method, e->path, headers, bytes);
}

static void
assert_all_endpoints(Fixture *f,
		     const gchar *session_id,
		     const gchar *authorization,
		     guint status,
		     const gchar *code)
{
	Endpoint endpoints[3];
	endpoints_init(f, endpoints, session_id);
	for (guint i = 0; i < 3; i++) {
		g_autoptr(ConfabTestResponse) r = call_endpoint(f, &endpoints[i], authorization);
		g_test_message("%s %s with '%s'",
			       endpoints[i].method,
			       endpoints[i].path,
			       authorization != NULL ? authorization : "(none)");
		if (status == 200) {
			g_assert_cmpuint(r->status, ==, 200);
			if (i == 0)
				f->n_sessions++;
		} else {
			assert_error_body(r, status, code);
		}
	}
	endpoints_clear(endpoints);
}

static gchar *
create_token_full(Fixture *f,
		  const gchar *owner,
		  const gchar *const *scopes,
		  gint64 expires_at,
		  gchar **token_id)
{
	g_autoptr(GError) error = NULL;
	gchar *secret = NULL;
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "owner", "s", owner);
	g_variant_dict_insert_value(&dict, "scopes", g_variant_new_strv(scopes, -1));
	if (expires_at != 0)
		g_variant_dict_insert(&dict, "expires_at", "x", expires_at);
	confab_dbus_admin_call_create_token_sync(f->daemon->admin,
						 g_variant_dict_end(&dict),
						 token_id,
						 &secret,
						 NULL,
						 &error);
	g_assert_no_error(error);
	return secret;
}

static guint64
usage_requests(Fixture *f, const gchar *owner)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GVariant) usage = NULL;
	guint64 requests = 0;
	confab_dbus_admin_call_get_usage_sync(f->daemon->admin, owner, &usage, NULL, &error);
	g_assert_no_error(error);
	g_assert_true(g_variant_lookup(usage, "requests", "t", &requests));
	return requests;
}

/* ---------- 401 ---------- */

static void
test_unauthenticated(Fixture *f, gconstpointer data)
{
	g_autofree gchar *session = new_conversation(f, f->alice, f->agent_a);
	g_autofree gchar *wrong =
	    g_strdup_printf("Bearer nca_%s", "0123456789abcdefghijABCDEFGHIJxyzw");
	g_autofree gchar *basic = g_strdup_printf("Basic %s", f->alice);
	g_autofree gchar *no_scheme = g_strdup(f->alice);
	g_autofree gchar *truncated = g_strdup_printf("Bearer %.*s", 20, f->alice);
	g_autofree gchar *longer = g_strdup_printf("Bearer %sx", f->alice);
	g_autofree gchar *good = g_strdup_printf("Bearer %s", f->alice);

	assert_all_endpoints(f, session, NULL, 401, "missing_api_key");
	assert_all_endpoints(f, session, wrong, 401, "invalid_api_key");
	assert_all_endpoints(f, session, basic, 401, "invalid_api_key");
	assert_all_endpoints(f, session, no_scheme, 401, "invalid_api_key");
	assert_all_endpoints(f, session, truncated, 401, "invalid_api_key");
	assert_all_endpoints(f, session, longer, 401, "invalid_api_key");
	assert_all_endpoints(f, session, "Bearer ", 401, "invalid_api_key");
	assert_all_endpoints(f, session, "Bearer sk-proj-abcdef", 401, "invalid_api_key");
	/* the real one still works on all three */
	assert_all_endpoints(f, session, good, 200, NULL);
	{
		/* 401 says how to authenticate */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", "/api/v1/conversations", NULL, NULL);
		assert_error_body(r, 401, "missing_api_key");
		g_assert_nonnull(soup_message_headers_get_one(r->headers, "WWW-Authenticate"));
	}
}

static void
test_revoked(Fixture *f, gconstpointer data)
{
	g_autofree gchar *token_id = NULL;
	g_autofree gchar *secret =
	    confab_test_create_token(f->daemon, "alice", "api.full", NULL, &token_id);
	g_autofree gchar *auth = g_strdup_printf("Bearer %s", secret);
	g_autofree gchar *session = new_conversation(f, secret, f->agent_a);
	g_autoptr(GError) error = NULL;

	assert_all_endpoints(f, session, auth, 200, NULL);
	confab_dbus_admin_call_revoke_token_sync(f->daemon->admin, token_id, NULL, &error);
	g_assert_no_error(error);
	/* at once, on every endpoint */
	assert_all_endpoints(f, session, auth, 401, "invalid_api_key");
	/* revoking twice changes nothing */
	confab_dbus_admin_call_revoke_token_sync(f->daemon->admin, token_id, NULL, &error);
	g_assert_no_error(error);
	assert_all_endpoints(f, session, auth, 401, "invalid_api_key");
	/* the owner's other tokens are untouched */
	{
		g_autofree gchar *other = g_strdup_printf("Bearer %s", f->alice);
		assert_all_endpoints(f, session, other, 200, NULL);
	}
}

typedef struct {
	Fixture *f;
	gchar *path;
	const gchar *token;
} ExpiryWait;

static gboolean
token_refused(gpointer data)
{
	ExpiryWait *w = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(w->f->daemon, "GET", w->path, w->token, NULL);
	g_assert_true(r->status == 200 || r->status == 401);
	return r->status == 401;
}

static void
test_expired(Fixture *f, gconstpointer data)
{
	const gchar *scopes[] = {"chat.completions", NULL};
	gint64 expires_at = g_get_real_time() / G_USEC_PER_SEC + 3;
	g_autofree gchar *secret = create_token_full(f, "alice", scopes, expires_at, NULL);
	g_autofree gchar *auth = g_strdup_printf("Bearer %s", secret);
	g_autofree gchar *session = new_conversation(f, f->alice, f->agent_a);
	ExpiryWait w = {f, g_strdup("/api/v1/conversations"), secret};

	/* valid until it expires */
	if (g_get_real_time() / G_USEC_PER_SEC < expires_at - 1) {
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", w.path, secret, NULL);
		g_assert_cmpuint(r->status, ==, 200);
	}
	g_assert_true(confab_test_wait_until(token_refused, &w, 15000));
	g_assert_cmpint(g_get_real_time() / G_USEC_PER_SEC, >=, expires_at);
	assert_all_endpoints(f, session, auth, 401, "invalid_api_key");
	g_free(w.path);
	{
		/* a token that expired already cannot be minted */
		g_autoptr(GError) error = NULL;
		g_autofree gchar *id = NULL;
		g_autofree gchar *s = NULL;
		GVariantDict dict;
		g_variant_dict_init(&dict, NULL);
		g_variant_dict_insert(&dict, "owner", "s", "alice");
		g_variant_dict_insert_value(&dict, "scopes", g_variant_new_strv(scopes, -1));
		g_variant_dict_insert(&dict, "expires_at", "x", (gint64)1000);
		confab_dbus_admin_call_create_token_sync(f->daemon->admin,
							 g_variant_dict_end(&dict),
							 &id,
							 &s,
							 NULL,
							 &error);
		g_assert_nonnull(error);
	}
}

/* ---------- 403 ---------- */

static void
test_insufficient_scope(Fixture *f, gconstpointer data)
{
	const gchar *other[] = {"other", NULL};
	const gchar *several[] = {"files.read", "models.list", NULL};
	const gchar *near[] = {"chat.completion", "api", "API.FULL", "chat.completions.read", NULL};
	const gchar *mixed[] = {"other", "chat.completions", NULL};
	g_autofree gchar *session = new_conversation(f, f->alice, f->agent_a);
	g_autofree gchar *s1 = create_token_full(f, "alice", other, 0, NULL);
	g_autofree gchar *s2 = create_token_full(f, "alice", several, 0, NULL);
	g_autofree gchar *s3 = create_token_full(f, "alice", near, 0, NULL);
	g_autofree gchar *s4 = create_token_full(f, "alice", mixed, 0, NULL);
	g_autofree gchar *a1 = g_strdup_printf("Bearer %s", s1);
	g_autofree gchar *a2 = g_strdup_printf("Bearer %s", s2);
	g_autofree gchar *a3 = g_strdup_printf("Bearer %s", s3);
	g_autofree gchar *a4 = g_strdup_printf("Bearer %s", s4);

	assert_all_endpoints(f, session, a1, 403, "insufficient_scope");
	assert_all_endpoints(f, session, a2, 403, "insufficient_scope");
	assert_all_endpoints(f, session, a3, 403, "insufficient_scope");
	/* other scopes beside a good one do no harm */
	assert_all_endpoints(f, session, a4, 200, NULL);
}

static void
test_permission_denied(Fixture *f, gconstpointer data)
{
	g_autofree gchar *bound =
	    confab_test_create_token(f->daemon, "alice", "chat.completions", f->agent_a, NULL);
	g_autofree gchar *body = chat_body(f->agent_b, NULL, "hi");
	g_autoptr(ConfabTestResponse) r = post_json(f, bound, body);

	assert_error_param(r, 403, "permission_denied", "model");
	{
		/* streaming: refused before the stream starts */
		g_autofree gchar *stream = g_strdup_printf(
		    "{\"model\":\"%s\",\"stream\":true,\"messages\":[{\"role\":\"user\","
		    "\"content\":\"hi\"}]}",
		    f->agent_b);
		g_autoptr(ConfabTestResponse) s = post_json(f, bound, stream);
		assert_error_body(s, 403, "permission_denied");
	}
	{
		/* even an agent that does not exist: the token is bound */
		g_autofree gchar *b = chat_body("agt_00000000000000000000000000", NULL, "hi");
		g_autoptr(ConfabTestResponse) s = post_json(f, bound, b);
		g_assert_cmpuint(s->status, >=, 403);
		g_assert_cmpuint(s->status, <=, 404);
	}
	{
		g_autofree gchar *ok = chat_body(f->agent_a, NULL, "hi");
		g_autoptr(ConfabTestResponse) s = post_json(f, bound, ok);
		g_assert_cmpuint(s->status, ==, 200);
		f->n_sessions++;
	}
}

/* ---------- 404 ---------- */

static void
test_not_found(Fixture *f, gconstpointer data)
{
	g_autofree gchar *alice_a = new_conversation(f, f->alice, f->agent_a);
	g_autofree gchar *bob_a = new_conversation(f, f->bob, f->agent_a);
	g_autofree gchar *channel = NULL;
	g_autofree gchar *reply = NULL;
	g_autofree gchar *me =
	    confab_test_create_token(f->daemon, g_get_user_name(), "api.full", NULL, NULL);
	g_autoptr(GError) error = NULL;
	struct {
		const gchar *token;
		const gchar *agent;
		const gchar *session;
		const gchar *why;
	} cases[] = {
	    {f->alice, f->agent_a, bob_a, "another owner's session"},
	    {f->bob, f->agent_a, alice_a, "another owner's session"},
	    {f->alice, f->agent_b, alice_a, "the same owner's session with another agent"},
	    {f->alice, f->agent_a, SESSION_ID_UNKNOWN, "an unknown session"},
	    {f->alice, f->agent_a, "cts_nope", "a malformed session id"},
	    {f->alice, f->agent_a, "", "an empty session id"},
	    {f->alice, f->agent_a, "msg_00000000000000000000000000", "a message id"},
	    {me, f->agent_a, NULL, "a channel session"},
	};

	confab_dbus_chat_call_send_sync(f->daemon->chat,
					f->agent_a,
					"",
					"from the desktop",
					&channel,
					&reply,
					NULL,
					&error);
	g_assert_no_error(error);
	f->n_sessions++;
	cases[G_N_ELEMENTS(cases) - 1].session = channel;

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *body = chat_body(cases[i].agent, cases[i].session, "intrude");
		g_autoptr(ConfabTestResponse) r = post_json(f, cases[i].token, body);
		g_test_message("continuing %s (%s)", cases[i].why, cases[i].session);
		if (*cases[i].session == '\0' && r->status == 400)
			continue; /* an empty id may be refused as a bad value */
		assert_error_body(r, 404, "conversation_not_found");
	}
	{
		/* the sessions are untouched: still 2 messages each */
		g_autoptr(GVariant) messages = NULL;
		confab_dbus_admin_call_get_messages_sync(f->daemon->admin,
							 bob_a,
							 g_variant_new("a{sv}", NULL),
							 &messages,
							 NULL,
							 &error);
		g_assert_no_error(error);
		g_assert_cmpuint(g_variant_n_children(messages), ==, 2);
	}
	{
		g_autofree gchar *body = chat_body("agt_00000000000000000000000000", NULL, "hi");
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, body);
		assert_error_param(r, 404, "agent_not_found", "model");
	}
	{
		g_autofree gchar *body = chat_body("gpt-4o", NULL, "hi");
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, body);
		assert_error_param(r, 404, "agent_not_found", "model");
	}
	{
		/* a deleted agent cannot be talked to */
		g_autofree gchar *agent = confab_test_create_agent(f->daemon, "doomed", "echo");
		g_autofree gchar *body = chat_body(agent, NULL, "hi");
		g_autoptr(ConfabTestResponse) r = NULL;
		confab_dbus_admin_call_delete_agent_sync(f->daemon->admin, agent, NULL, &error);
		g_assert_no_error(error);
		r = post_json(f, f->alice, body);
		assert_error_body(r, 404, "agent_not_found");
	}
	{
		const gchar *routes[][2] = {
		    {"GET", "/"},
		    {"GET", "/api/v1"},
		    {"GET", "/api/v1/"},
		    {"GET", "/api/v1/embeddings"},
		    {"GET", "/api/v2/conversations"},
		    {"GET", "/v1/chat/completions"},
		    {"POST", "/api/v1/chat/completions/"},
		    {"POST", "/api/v1/chat"},
		    {"GET", "/api/v1/conversations/"},
		    {"GET", "/api/v1/conversations//messages"},
		    {"GET", "/api/v1/conversations/x/messages/y"},
		    {"GET", "/api/v1/conversations/x/other"},
		    {"GET", "/API/V1/CONVERSATIONS"},
		};
		for (guint i = 0; i < G_N_ELEMENTS(routes); i++) {
			g_autoptr(ConfabTestResponse) r =
			    confab_test_http(f->daemon, routes[i][0], routes[i][1], f->alice, NULL);
			g_test_message("%s %s", routes[i][0], routes[i][1]);
			assert_error_body(r, 404, "route_not_found");
		}
		/* also without a token: nothing there to protect */
		{
			g_autoptr(ConfabTestResponse) r =
			    confab_test_http(f->daemon, "GET", "/api/v1/embeddings", NULL, NULL);
			g_assert_cmpuint(r->status, ==, 404);
			g_assert_nonnull(r->json);
		}
	}
}

/* ---------- 405 ---------- */

static void
test_method_not_allowed(Fixture *f, gconstpointer data)
{
	g_autofree gchar *session = new_conversation(f, f->alice, f->agent_a);
	g_autofree gchar *messages = g_strdup_printf("/api/v1/conversations/%s/messages", session);
	struct {
		const gchar *method;
		const gchar *path;
		const gchar *body;
		const gchar *allow;
	} cases[] = {
	    {"GET", "/api/v1/chat/completions", NULL, "POST"},
	    {"PUT", "/api/v1/chat/completions", "{}", "POST"},
	    {"DELETE", "/api/v1/chat/completions", NULL, "POST"},
	    {"DELETE", "/api/v1/conversations", NULL, "GET, POST"},
	    {"PATCH", "/api/v1/conversations", "{}", "GET, POST"},
	    {"DELETE", messages, NULL, "GET"},
	    {"POST", messages, "{\"a\":1}", "GET"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(ConfabTestResponse) r = confab_test_http(f->daemon,
								   cases[i].method,
								   cases[i].path,
								   f->alice,
								   cases[i].body);
		g_test_message("%s %s", cases[i].method, cases[i].path);
		assert_error_body(r, 405, "method_not_allowed");
		g_assert_cmpstr(soup_message_headers_get_one(r->headers, "Allow"),
				==,
				cases[i].allow);
	}
	{
		/* DELETE did not delete */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", messages, f->alice, NULL);
		g_assert_cmpuint(r->status, ==, 200);
	}
}

/* ---------- 409 ---------- */

typedef struct {
	ConfabTestDaemon *daemon;
	const gchar *token;
	const gchar *agent;
	const gchar *session;
	guint status;
} HeldTurn;

static gpointer
held_turn_thread(gpointer data)
{
	HeldTurn *t = data;
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(t->daemon, t->token, t->agent, t->session, "held", FALSE);
	t->status = r->status;
	return NULL;
}

static void
test_busy(Fixture *f, gconstpointer data)
{
	ConfabTestUpstream *up = confab_test_upstream_start(FALSE);
	g_autofree gchar *agent = NULL;
	g_autofree gchar *session = NULL;
	HeldTurn held = {f->daemon, f->alice, NULL, NULL, 0};
	GThread *thread;
	guint64 used;
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", "slow");
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", confab_test_upstream_get_base_url(up));
	g_variant_dict_insert(&dict, "upstream_model", "s", "slow-model");
	agent = confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));

	session = new_conversation(f, f->alice, agent);
	held.agent = agent;
	held.session = session;
	confab_test_upstream_set_hold(up, TRUE);
	thread = g_thread_new("held-turn", held_turn_thread, &held);
	g_assert_true(confab_test_upstream_wait_waiting(up, 1, 30000));

	used = usage_requests(f, "alice");
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->alice, agent, session, "meanwhile", FALSE);
		assert_error_param(r, 409, "conversation_busy", "metadata.session_id");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->alice, agent, session, "meanwhile", TRUE);
		assert_error_body(r, 409, "conversation_busy");
	}
	/* a 409 does not count against the quota */
	g_assert_cmpuint(usage_requests(f, "alice"), ==, used);
	{
		/* other conversations are not held up */
		g_autofree gchar *other = new_conversation(f, f->alice, f->agent_a);
		g_assert_nonnull(other);
	}

	confab_test_upstream_set_hold(up, FALSE);
	g_thread_join(thread);
	g_assert_cmpuint(held.status, ==, 200);
	{
		/* free again once the turn ended */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->alice, agent, session, "after", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpstr(confab_test_json_string(r->json, "choices.0.message.content"),
				==,
				"slow answer");
	}
	{
		/* the refused turns stored nothing: 3 turns, 6 messages */
		g_autoptr(GError) error = NULL;
		g_autoptr(GVariant) messages = NULL;
		confab_dbus_admin_call_get_messages_sync(f->daemon->admin,
							 session,
							 g_variant_new("a{sv}", NULL),
							 &messages,
							 NULL,
							 &error);
		g_assert_no_error(error);
		g_assert_cmpuint(g_variant_n_children(messages), ==, 6);
	}
	confab_test_upstream_stop(up);
}

/* ---------- 413 ---------- */

#define SMALL_LIMIT_CONFIG "[limits]\nmax_body_bytes=2048\n"

static void
fixture_setup_small(Fixture *f, gconstpointer data)
{
	fixture_setup_config(f, SMALL_LIMIT_CONFIG);
}

/* sends @request on a raw connection and reads until the server closes */
static gchar *
raw_exchange(Fixture *f, const gchar *request, gsize len, gsize trailing)
{
	g_autoptr(GSocketClient) client = g_socket_client_new();
	g_autoptr(GSocketConnection) conn = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) response = g_string_new(NULL);
	const gchar *host = f->daemon->url + strlen("http://");
	GOutputStream *out;
	GInputStream *in;
	gchar buf[4096];
	gssize n;

	g_socket_client_set_timeout(client, 20);
	conn = g_socket_client_connect_to_host(client, host, 80, NULL, &error);
	g_assert_no_error(error);
	out = g_io_stream_get_output_stream(G_IO_STREAM(conn));
	in = g_io_stream_get_input_stream(G_IO_STREAM(conn));
	g_output_stream_write_all(out, request, len, NULL, NULL, &error);
	g_assert_no_error(error);
	/* some body, far less than announced: the answer must not wait for it */
	for (gsize sent = 0; sent < trailing; sent += sizeof(buf)) {
		memset(buf, 'x', sizeof(buf));
		if (!g_output_stream_write_all(out, buf, sizeof(buf), NULL, NULL, NULL))
			break;
	}
	while ((n = g_input_stream_read(in, buf, sizeof(buf), NULL, &error)) > 0)
		g_string_append_len(response, buf, n);
	return g_strndup(response->str, response->len);
}

static void
test_too_large(Fixture *f, gconstpointer data)
{
	GString *big = g_string_new(NULL);
	g_autofree gchar *text = NULL;
	g_autofree gchar *body = NULL;
	g_autofree gchar *request = NULL;
	g_autofree gchar *response = NULL;
	const gchar *json;

	/* just over the limit, from the body */
	for (guint i = 0; i < 300; i++)
		g_string_append(big, "word word ");
	text = g_string_free(big, FALSE);
	body = chat_body(f->agent_a, NULL, text);
	g_assert_cmpuint(strlen(body), >, 2048);
	{
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, body);
		assert_error_body(r, 413, "request_too_large");
	}
	{
		/* at the limit is fine */
		g_autofree gchar *small = chat_body(f->agent_a, NULL, "fits");
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, small);
		g_assert_cmpuint(r->status, ==, 200);
		f->n_sessions++;
	}

	/* from the Content-Length alone: 1 GB announced, a few KB sent */
	request = g_strdup_printf("POST /api/v1/chat/completions HTTP/1.1\r\n"
				  "Host: localhost\r\n"
				  "Authorization: Bearer %s\r\n"
				  "Content-Type: application/json\r\n"
				  "Content-Length: 1000000000\r\n"
				  "\r\n",
				  f->alice);
	response = raw_exchange(f, request, strlen(request), 8192);
	g_test_message("raw response: %s", response);
	g_assert_true(g_str_has_prefix(response, "HTTP/1.1 413"));
	g_assert_nonnull(strcasestr(response, "content-type: application/json"));
	json = strstr(response, "\r\n\r\n");
	g_assert_nonnull(json);
	{
		g_autoptr(JsonNode) node = json_from_string(json + 4, NULL);
		g_assert_nonnull(node);
		g_assert_cmpstr(confab_test_json_string(node, "error.code"),
				==,
				"request_too_large");
		g_assert_cmpstr(confab_test_json_string(node, "error.type"),
				==,
				"invalid_request_error");
	}
	g_clear_pointer(&request, g_free);
	g_clear_pointer(&response, g_free);

	/* chunked, with no Content-Length to go by */
	{
		GString *chunked = g_string_new(NULL);
		g_string_append_printf(chunked,
				       "POST /api/v1/chat/completions HTTP/1.1\r\n"
				       "Host: localhost\r\n"
				       "Authorization: Bearer %s\r\n"
				       "Content-Type: application/json\r\n"
				       "Transfer-Encoding: chunked\r\n"
				       "\r\n",
				       f->alice);
		for (guint i = 0; i < 4; i++) {
			g_string_append(chunked, "400\r\n");
			for (guint j = 0; j < 0x400; j++)
				g_string_append_c(chunked, ' ');
			g_string_append(chunked, "\r\n");
		}
		response = raw_exchange(f, chunked->str, chunked->len, 0);
		g_string_free(chunked, TRUE);
		g_test_message("raw chunked response: %s", response);
		g_assert_true(g_str_has_prefix(response, "HTTP/1.1 413"));
		g_assert_nonnull(strstr(response, "request_too_large"));
	}
	{
		/* the daemon is fine afterwards */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", "/api/v1/conversations", f->alice, NULL);
		g_assert_cmpuint(r->status, ==, 200);
	}
}

/* reads from @in until @needle has arrived, the peer closes, or 20 s pass */
static gboolean
read_until(GInputStream *in, GString *got, const gchar *needle)
{
	gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
	while (strstr(got->str, needle) == NULL) {
		gchar buf[4096];
		gssize n;
		if (g_get_monotonic_time() > deadline)
			return FALSE;
		n = g_input_stream_read(in, buf, sizeof(buf), NULL, NULL);
		if (n <= 0)
			return strstr(got->str, needle) != NULL;
		g_string_append_len(got, buf, n);
	}
	return TRUE;
}

/* curl sends "Expect: 100-continue" with any body over 1 KiB */
static void
test_expect_continue(Fixture *f, gconstpointer data)
{
	const gchar *host = f->daemon->url + strlen("http://");
	g_autofree gchar *body = chat_body(f->agent_a, NULL, "expected");

	/* too large: refused at once, never invited */
	{
		g_autoptr(GSocketClient) client = g_socket_client_new();
		g_autoptr(GSocketConnection) conn = NULL;
		g_autoptr(GError) error = NULL;
		g_autoptr(GString) got = g_string_new(NULL);
		g_autofree gchar *head =
		    g_strdup_printf("POST /api/v1/chat/completions HTTP/1.1\r\n"
				    "Host: localhost\r\n"
				    "Authorization: Bearer %s\r\n"
				    "Content-Type: application/json\r\n"
				    "Content-Length: 50000000\r\n"
				    "Expect: 100-continue\r\n"
				    "\r\n",
				    f->alice);
		g_socket_client_set_timeout(client, 20);
		conn = g_socket_client_connect_to_host(client, host, 80, NULL, &error);
		g_assert_no_error(error);
		g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)),
					  head,
					  strlen(head),
					  NULL,
					  NULL,
					  &error);
		g_assert_no_error(error);
		g_assert_true(
		    read_until(g_io_stream_get_input_stream(G_IO_STREAM(conn)), got, "}}"));
		g_test_message("Expect, too large: %s", got->str);
		g_assert_true(g_str_has_prefix(got->str, "HTTP/1.1 413"));
		g_assert_nonnull(strstr(got->str, "request_too_large"));
	}
	/* within the limit: invited, then answered */
	{
		g_autoptr(GSocketClient) client = g_socket_client_new();
		g_autoptr(GSocketConnection) conn = NULL;
		g_autoptr(GError) error = NULL;
		g_autoptr(GString) got = g_string_new(NULL);
		g_autofree gchar *head =
		    g_strdup_printf("POST /api/v1/chat/completions HTTP/1.1\r\n"
				    "Host: localhost\r\n"
				    "Authorization: Bearer %s\r\n"
				    "Content-Type: application/json\r\n"
				    "Content-Length: %zu\r\n"
				    "Expect: 100-continue\r\n"
				    "Connection: close\r\n"
				    "\r\n",
				    f->alice,
				    strlen(body));
		GOutputStream *out;
		GInputStream *in;
		g_socket_client_set_timeout(client, 20);
		conn = g_socket_client_connect_to_host(client, host, 80, NULL, &error);
		g_assert_no_error(error);
		out = g_io_stream_get_output_stream(G_IO_STREAM(conn));
		in = g_io_stream_get_input_stream(G_IO_STREAM(conn));
		g_output_stream_write_all(out, head, strlen(head), NULL, NULL, &error);
		g_assert_no_error(error);
		g_assert_true(read_until(in, got, "\r\n\r\n"));
		g_test_message("Expect, within the limit: %s", got->str);
		g_assert_true(g_str_has_prefix(got->str, "HTTP/1.1 100"));
		g_output_stream_write_all(out, body, strlen(body), NULL, NULL, &error);
		g_assert_no_error(error);
		g_assert_true(read_until(in, got, "chat.completion\""));
		g_assert_nonnull(strstr(got->str, "HTTP/1.1 200"));
		f->n_sessions++;
	}
}

/* ---------- 415 ---------- */

static void
test_media_type(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = chat_body(f->agent_a, NULL, "hi");
	const gchar *bad[] = {"text/plain",
			      "application/x-www-form-urlencoded",
			      "multipart/form-data; boundary=x",
			      "application/jsonx",
			      "text/json"};

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(ConfabTestResponse) r = post_raw(f, f->alice, bad[i], body, strlen(body));
		g_test_message("Content-Type: %s", bad[i]);
		assert_error_body(r, 415, "unsupported_media_type");
	}
	{
		g_autoptr(ConfabTestResponse) r = post_raw(f, f->alice, NULL, body, strlen(body));
		assert_error_body(r, 415, "unsupported_media_type");
	}
	{
		/* parameters and case do not matter */
		g_autoptr(ConfabTestResponse) r =
		    post_raw(f, f->alice, "Application/JSON; charset=utf-8", body, strlen(body));
		g_assert_cmpuint(r->status, ==, 200);
		f->n_sessions++;
	}
}

/* ---------- 400 ---------- */

static void
test_invalid_json(Fixture *f, gconstpointer data)
{
	g_autofree gchar *good = chat_body(f->agent_a, NULL, "hi");
	g_autofree gchar *truncated = g_strndup(good, strlen(good) - 3);
	const gchar *not_json[] =
	    {"hello", "", "{", "[]", "null", "\"x\"", "{'model':'x'}", "model=x"};
	g_autofree gchar *non_utf8 = g_strdup_printf("{\"model\":\"%s\",\"messages\":[{\"role\":"
						     "\"user\",\"content\":\"\xff\xfe\xc0\x80\"}]}",
						     f->agent_a);
	g_autofree gchar *non_utf8_key = g_strdup_printf(
	    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"con\xfftent\":\"x\"}]}",
	    f->agent_a);

	{
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, truncated);
		assert_error_body(r, 400, "invalid_json");
	}
	for (guint i = 0; i < G_N_ELEMENTS(not_json); i++) {
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, not_json[i]);
		g_test_message("body: %s", not_json[i]);
		assert_error_body(r, 400, "invalid_json");
	}
	{
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, non_utf8);
		assert_error_body(r, 400, "invalid_json");
	}
	{
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, non_utf8_key);
		assert_error_body(r, 400, "invalid_json");
	}
	{
		/* binary garbage, NUL bytes included */
		const gchar garbage[] = "\x00\x01\x02{\"model\"\x00:}\xff";
		g_autoptr(ConfabTestResponse) r =
		    post_raw(f, f->alice, "application/json", garbage, sizeof(garbage));
		assert_error_body(r, 400, "invalid_json");
	}
	{
		/* a valid body followed by a NUL and more */
		g_autofree gchar *with_nul = g_strdup_printf("%s%c{}", good, '\0');
		g_autoptr(ConfabTestResponse) r =
		    post_raw(f, f->alice, "application/json", with_nul, strlen(good) + 3);
		assert_error_body(r, 400, "invalid_json");
	}
}

static void
test_deep_nesting(Fixture *f, gconstpointer data)
{
	const guint depth = 100000;
	GString *deep = g_string_new(NULL);
	GString *objects = g_string_new(NULL);

	/* arrays as the value of an unknown member */
	g_string_append_printf(
	    deep,
	    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	    "\"extra\":",
	    f->agent_a);
	for (guint i = 0; i < depth; i++)
		g_string_append_c(deep, '[');
	for (guint i = 0; i < depth; i++)
		g_string_append_c(deep, ']');
	g_string_append_c(deep, '}');
	{
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, deep->str);
		assert_error_body(r, 400, "invalid_json");
	}
	/* objects in the content itself, never closed */
	g_string_append_printf(objects,
			       "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":",
			       f->agent_a);
	for (guint i = 0; i < depth; i++)
		g_string_append(objects, "{\"a\":");
	{
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, objects->str);
		assert_error_body(r, 400, "invalid_json");
	}
	{
		/* only brackets */
		g_autoptr(GString) only = g_string_new(NULL);
		g_autoptr(ConfabTestResponse) r = NULL;
		for (guint i = 0; i < depth; i++)
			g_string_append_c(only, '[');
		r = post_json(f, f->alice, only->str);
		assert_error_body(r, 400, "invalid_json");
	}
	g_string_free(deep, TRUE);
	g_string_free(objects, TRUE);
	{
		/* still alive and serving */
		g_autofree gchar *s = new_conversation(f, f->alice, f->agent_a);
		g_assert_nonnull(s);
	}
}

static void
test_missing_model(Fixture *f, gconstpointer data)
{
	{
		g_autoptr(ConfabTestResponse) r =
		    post_json(f,
			      f->alice,
			      "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
		assert_error_param(r, 400, "missing_model", "model");
	}
	{
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, "{}");
		assert_error_param(r, 400, "missing_model", "model");
	}
	{
		g_autoptr(ConfabTestResponse) r = post_json(
		    f,
		    f->alice,
		    "{\"model\":null,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
		assert_error_param(r, 400, "missing_model", "model");
	}
	{
		/* there, but not a string: a 400 that names it */
		const gchar *bodies[] = {
		    "{\"model\":42,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		    "{\"model\":[\"a\"],\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		    "{\"model\":\"\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		};
		for (guint i = 0; i < G_N_ELEMENTS(bodies); i++) {
			g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, bodies[i]);
			g_assert_cmpuint(r->status, ==, 400);
			assert_error_body(r, 400, confab_test_json_string(r->json, "error.code"));
			g_assert_cmpstr(confab_test_json_string(r->json, "error.param"),
					==,
					"model");
		}
	}
}

static void
test_invalid_messages(Fixture *f, gconstpointer data)
{
	struct {
		const gchar *messages; /* NULL: no messages member */
		const gchar *param;
	} cases[] = {
	    {NULL, "messages"},
	    {"[]", "messages"},
	    {"\"hi\"", "messages"},
	    {"{}", "messages"},
	    {"null", "messages"},
	    {"42", "messages"},
	    {"[\"hi\"]", "messages[0]"},
	    {"[{\"role\":\"wizard\",\"content\":\"hi\"}]", "messages[0].role"},
	    {"[{\"role\":\"User\",\"content\":\"hi\"}]", "messages[0].role"},
	    {"[{\"role\":42,\"content\":\"hi\"}]", "messages[0].role"},
	    {"[{\"content\":\"hi\"}]", "messages[0].role"},
	    {"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"robot\",\"content\":\"b\"}]",
	     "messages[1].role"},
	    {"[{\"role\":\"user\",\"content\":42}]", "messages[0].content"},
	    {"[{\"role\":\"user\",\"content\":true}]", "messages[0].content"},
	    {"[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}]",
	     "messages[0].content"},
	    {"[{\"role\":\"user\"}]", "messages[0].content"},
	    {"[{\"role\":\"user\",\"content\":[{\"type\":\"bogus\"}]}]",
	     "messages[0].content[0].type"},
	    {"[{\"role\":\"user\",\"content\":[42]}]", "messages[0].content[0]"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *body = cases[i].messages != NULL
					     ? g_strdup_printf("{\"model\":\"%s\",\"messages\":%s}",
							       f->agent_a,
							       cases[i].messages)
					     : g_strdup_printf("{\"model\":\"%s\"}", f->agent_a);
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, body);
		g_test_message("body: %s", body);
		assert_error_param(r, 400, "invalid_messages", cases[i].param);
	}
	{
		/* a continuation with nothing new after the last assistant message */
		g_autofree gchar *session = new_conversation(f, f->alice, f->agent_a);
		g_autofree gchar *body = g_strdup_printf(
		    "{\"model\":\"%s\",\"metadata\":{\"session_id\":\"%s\"},\"messages\":["
		    "{\"role\":\"user\",\"content\":\"hello\"},"
		    "{\"role\":\"assistant\",\"content\":\"hello\"}]}",
		    f->agent_a,
		    session);
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, body);
		assert_error_param(r, 400, "invalid_messages", "messages");
	}
}

static void
test_nul_in_content(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = g_strdup_printf(
	    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]}",
	    f->agent_a);
	g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, body);

	if (r->status == 400) {
		/* refused: fine, as long as it is the error shape */
		assert_error_body(r, 400, confab_test_json_string(r->json, "error.code"));
		return;
	}
	/* or stored and replayed exactly, never truncated at the NUL */
	g_assert_cmpuint(r->status, ==, 200);
	f->n_sessions++;
	{
		g_autofree gchar *path =
		    g_strdup_printf("/api/v1/conversations/%s/messages?order=asc",
				    confab_test_json_string(r->json, "metadata.session_id"));
		g_autoptr(ConfabTestResponse) m =
		    confab_test_http(f->daemon, "GET", path, f->alice, NULL);
		JsonNode *text = confab_test_json_get(m->json, "data.0.content.0.text");
		gsize len = 0;
		const gchar *raw = g_bytes_get_data(m->body, &len);
		g_assert_cmpuint(m->status, ==, 200);
		g_assert_nonnull(text);
		g_assert_nonnull(g_strstr_len(raw, len, "a\\u0000b"));
	}
}

static void
test_invalid_file(Fixture *f, gconstpointer data)
{
	struct {
		const gchar *part;
		const gchar *param;
	} cases[] = {
	    {"{\"type\":\"file\",\"file\":{\"file_data\":\"not base64!\"}}",
	     "messages[0].content[1].file.file_data"},
	    {"{\"type\":\"file\",\"file\":{\"file_data\":\"data:application/pdf;base64,@@@@\"}}",
	     "messages[0].content[1].file.file_data"},
	    {"{\"type\":\"file\",\"file\":{\"filename\":\"a.txt\"}}",
	     "messages[0].content[1].file"},
	    {"{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,%%%%\"}}",
	     "messages[0].content[1].image_url.url"},
	};
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *body = g_strdup_printf(
		    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":["
		    "{\"type\":\"text\",\"text\":\"see\"},%s]}]}",
		    f->agent_a,
		    cases[i].part);
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, body);
		g_test_message("part: %s", cases[i].part);
		assert_error_param(r, 400, "invalid_file", cases[i].param);
	}
	{
		/* eleven files in one message: over the limit of ten */
		GString *parts = g_string_new("{\"type\":\"text\",\"text\":\"many\"}");
		g_autofree gchar *body = NULL;
		g_autoptr(ConfabTestResponse) r = NULL;
		for (guint i = 0; i < 11; i++)
			g_string_append(
			    parts,
			    ",{\"type\":\"file\",\"file\":{\"file_data\":\"aGVsbG8=\"}}");
		body = g_strdup_printf(
		    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":[%s]}]}",
		    f->agent_a,
		    parts->str);
		g_string_free(parts, TRUE);
		r = post_json(f, f->alice, body);
		assert_error_body(r, 400, "invalid_file");
		g_assert_nonnull(confab_test_json_string(r->json, "error.param"));
	}
}

static void
test_bad_values(Fixture *f, gconstpointer data)
{
	struct {
		const gchar *extra;
		const gchar *param;
	} cases[] = {
	    {"\"stream\":\"yes\"", "stream"},
	    {"\"metadata\":\"x\"", "metadata"},
	    {"\"metadata\":{\"session_id\":42}", "metadata.session_id"},
	};
	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *body = g_strdup_printf(
		    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],%s}",
		    f->agent_a,
		    cases[i].extra);
		g_autoptr(ConfabTestResponse) r = post_json(f, f->alice, body);
		g_test_message("body: %s", body);
		g_assert_cmpuint(r->status, ==, 400);
		assert_error_body(r, 400, confab_test_json_string(r->json, "error.code"));
		g_assert_cmpstr(confab_test_json_string(r->json, "error.param"),
				==,
				cases[i].param);
	}
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, func)                                                                            \
	g_test_add("/confab/http-errors/" name,                                                    \
		   Fixture,                                                                        \
		   NULL,                                                                           \
		   fixture_setup,                                                                  \
		   func,                                                                           \
		   fixture_teardown)
	ADD("401-unauthenticated", test_unauthenticated);
	ADD("401-revoked", test_revoked);
	ADD("401-expired", test_expired);
	ADD("403-insufficient-scope", test_insufficient_scope);
	ADD("403-permission-denied", test_permission_denied);
	ADD("404-not-found", test_not_found);
	ADD("405-method-not-allowed", test_method_not_allowed);
	ADD("409-busy", test_busy);
	ADD("415-media-type", test_media_type);
	ADD("400-invalid-json", test_invalid_json);
	ADD("400-deep-nesting", test_deep_nesting);
	ADD("400-missing-model", test_missing_model);
	ADD("400-invalid-messages", test_invalid_messages);
	ADD("400-nul-in-content", test_nul_in_content);
	ADD("400-invalid-file", test_invalid_file);
	ADD("400-bad-values", test_bad_values);
#undef ADD
	g_test_add("/confab/http-errors/413-expect-continue",
		   Fixture,
		   NULL,
		   fixture_setup_small,
		   test_expect_continue,
		   fixture_teardown);
	g_test_add("/confab/http-errors/413-too-large",
		   Fixture,
		   NULL,
		   fixture_setup_small,
		   test_too_large,
		   fixture_teardown);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
