/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * GET /api/v1/models and /api/v1/models/{id} against a real confabd: the
 * agents in OpenAI's model shape, what a bound token sees, 404 for what
 * does not exist or is not the caller's, the scope rule, and that neither
 * counts against a quota.
 */

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent_a;
	gchar *agent_b;
	gchar *token;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->daemon = confab_test_daemon_start(NULL, NULL);
	f->agent_a = confab_test_create_agent(f->daemon, "Echo A", "echo");
	f->agent_b = confab_test_create_agent(f->daemon, "Echo B", "echo");
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	g_free(f->agent_a);
	g_free(f->agent_b);
	g_free(f->token);
}

static void
assert_model(JsonObject *model, const gchar *id, const gchar *name)
{
	g_assert_cmpstr(json_object_get_string_member(model, "id"), ==, id);
	g_assert_cmpstr(json_object_get_string_member(model, "object"), ==, "model");
	g_assert_cmpstr(json_object_get_string_member(model, "owned_by"), ==, "confab");
	g_assert_cmpstr(json_object_get_string_member(model, "name"), ==, name);
	/* created: the agent's creation, in seconds, not long ago */
	g_assert_cmpint(json_object_get_int_member(model, "created"),
			>,
			g_get_real_time() / G_USEC_PER_SEC - 600);
	g_assert_cmpint(json_object_get_int_member(model, "created"),
			<=,
			g_get_real_time() / G_USEC_PER_SEC);
}

static JsonArray *
list_data(ConfabTestResponse *r)
{
	JsonNode *data = confab_test_json_get(r->json, "data");
	g_assert_nonnull(data);
	g_assert_true(JSON_NODE_HOLDS_ARRAY(data));
	return json_node_get_array(data);
}

static void
test_list(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(f->daemon, "GET", "/api/v1/models", f->token, NULL);
	JsonArray *models;
	gboolean a_first;

	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(r->json, "object"), ==, "list");
	models = list_data(r);
	g_assert_cmpuint(json_array_get_length(models), ==, 2);
	/* by id */
	a_first = strcmp(f->agent_a, f->agent_b) < 0;
	assert_model(json_array_get_object_element(models, a_first ? 0 : 1), f->agent_a, "Echo A");
	assert_model(json_array_get_object_element(models, a_first ? 1 : 0), f->agent_b, "Echo B");
}

static void
test_get(Fixture *f, gconstpointer data)
{
	g_autofree gchar *path = g_strconcat("/api/v1/models/", f->agent_b, NULL);
	g_autoptr(ConfabTestResponse) r = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_autoptr(ConfabTestResponse) missing = NULL;
	g_autoptr(ConfabTestResponse) malformed = NULL;

	g_assert_cmpuint(r->status, ==, 200);
	assert_model(json_node_get_object(r->json), f->agent_b, "Echo B");

	missing = confab_test_http(f->daemon,
				   "GET",
				   "/api/v1/models/agt_00000000000000000000000000",
				   f->token,
				   NULL);
	confab_test_assert_error(missing, 404, "agent_not_found");
	g_assert_cmpstr(confab_test_json_string(missing->json, "error.param"), ==, "model");
	malformed = confab_test_http(f->daemon, "GET", "/api/v1/models/gpt-4o%00x", f->token, NULL);
	confab_test_assert_error(malformed, 404, "agent_not_found");
}

static void
test_bound_token(Fixture *f, gconstpointer data)
{
	g_autofree gchar *bound =
	    confab_test_create_token(f->daemon, "bob", "api.full", f->agent_a, NULL);
	g_autofree gchar *other_path = g_strconcat("/api/v1/models/", f->agent_b, NULL);
	g_autofree gchar *own_path = g_strconcat("/api/v1/models/", f->agent_a, NULL);
	g_autoptr(ConfabTestResponse) list =
	    confab_test_http(f->daemon, "GET", "/api/v1/models", bound, NULL);
	g_autoptr(ConfabTestResponse) other =
	    confab_test_http(f->daemon, "GET", other_path, bound, NULL);
	g_autoptr(ConfabTestResponse) own =
	    confab_test_http(f->daemon, "GET", own_path, bound, NULL);

	g_assert_cmpuint(list->status, ==, 200);
	g_assert_cmpuint(json_array_get_length(list_data(list)), ==, 1);
	assert_model(json_array_get_object_element(list_data(list), 0), f->agent_a, "Echo A");
	/* another agent does not exist for it */
	confab_test_assert_error(other, 404, "agent_not_found");
	g_assert_cmpuint(own->status, ==, 200);
}

static void
test_auth(Fixture *f, gconstpointer data)
{
	g_autofree gchar *metrics_only =
	    confab_test_create_token(f->daemon, "carol", "metrics.read", NULL, NULL);
	g_autoptr(ConfabTestResponse) none =
	    confab_test_http(f->daemon, "GET", "/api/v1/models", NULL, NULL);
	g_autoptr(ConfabTestResponse) scope =
	    confab_test_http(f->daemon, "GET", "/api/v1/models", metrics_only, NULL);
	g_autoptr(ConfabTestResponse) post =
	    confab_test_http(f->daemon, "POST", "/api/v1/models", f->token, "{}");

	confab_test_assert_error(none, 401, "missing_api_key");
	confab_test_assert_error(scope, 403, "insufficient_scope");
	confab_test_assert_error(post, 405, "method_not_allowed");
}

static void
test_not_counted(Fixture *f, gconstpointer data)
{
	g_autofree gchar *path = g_strconcat("/api/v1/models/", f->agent_a, NULL);

	confab_test_set_quota(f->daemon, "alice", 1);
	for (guint i = 0; i < 3; i++) {
		g_autoptr(ConfabTestResponse) list =
		    confab_test_http(f->daemon, "GET", "/api/v1/models", f->token, NULL);
		g_autoptr(ConfabTestResponse) one =
		    confab_test_http(f->daemon, "GET", path, f->token, NULL);
		g_assert_cmpuint(list->status, ==, 200);
		g_assert_cmpuint(one->status, ==, 200);
		g_assert_null(
		    soup_message_headers_get_one(list->headers, "x-ratelimit-remaining-requests"));
	}
	/* the one request of the month is still there */
	{
		g_autoptr(ConfabTestResponse) chat =
		    confab_test_chat(f->daemon, f->token, f->agent_a, NULL, "hi", FALSE);
		g_autoptr(ConfabTestResponse) over =
		    confab_test_chat(f->daemon, f->token, f->agent_a, NULL, "hi", FALSE);
		g_assert_cmpuint(chat->status, ==, 200);
		confab_test_assert_error(over, 429, "insufficient_quota");
	}
}

static void
test_deleted_agent(Fixture *f, gconstpointer data)
{
	g_autofree gchar *path = g_strconcat("/api/v1/models/", f->agent_b, NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabTestResponse) list = NULL;
	g_autoptr(ConfabTestResponse) one = NULL;

	g_assert_true(
	    confab_dbus_admin_call_delete_agent_sync(f->daemon->admin, f->agent_b, NULL, &error));
	g_assert_no_error(error);
	list = confab_test_http(f->daemon, "GET", "/api/v1/models", f->token, NULL);
	g_assert_cmpuint(json_array_get_length(list_data(list)), ==, 1);
	one = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	confab_test_assert_error(one, 404, "agent_not_found");
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, func)                                                                            \
	g_test_add("/confab/http-models/" name,                                                    \
		   Fixture,                                                                        \
		   NULL,                                                                           \
		   fixture_setup,                                                                  \
		   func,                                                                           \
		   fixture_teardown)
	ADD("list", test_list);
	ADD("get", test_get);
	ADD("bound-token", test_bound_token);
	ADD("auth", test_auth);
	ADD("not-counted", test_not_counted);
	ADD("deleted-agent", test_deleted_agent);
#undef ADD
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
