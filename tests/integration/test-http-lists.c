/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * GET /api/v1/conversations and GET /api/v1/conversations/{id}/messages
 * against a real confabd: the list envelope, limit, order, cursors, the
 * model filter, the item fields, and who sees what.
 */

/* valid-shaped ids that were never issued: before and after any real one */
#define SESSION_ID_LOWEST  "cts_00000000000000000000000000"
#define SESSION_ID_HIGHEST "cts_7zzzzzzzzzzzzzzzzzzzzzzzzz"

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent_a;
	gchar *agent_b;
	gchar *alice;
	gchar *bob;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->daemon = confab_test_daemon_start(NULL, NULL);
	f->agent_a = confab_test_create_agent(f->daemon, "echo-a", "echo");
	f->agent_b = confab_test_create_agent(f->daemon, "echo-b", "echo");
	f->alice = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
	f->bob = confab_test_create_token(f->daemon, "bob", "api.full", NULL, NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	g_free(f->agent_a);
	g_free(f->agent_b);
	g_free(f->alice);
	g_free(f->bob);
}

/* ---------- helpers ---------- */

static gchar *
new_conversation(Fixture *f, const gchar *token, const gchar *agent, const gchar *text)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_chat(f->daemon, token, agent, NULL, text, FALSE);
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_nonnull(confab_test_json_string(r->json, "metadata.session_id"));
	return g_strdup(confab_test_json_string(r->json, "metadata.session_id"));
}

static ConfabTestResponse *
get_ok(Fixture *f, const gchar *token, const gchar *path)
{
	ConfabTestResponse *r = confab_test_http(f->daemon, "GET", path, token, NULL);
	if (r->status != 200)
		g_test_message("GET %s: %u %.*s",
			       path,
			       r->status,
			       (int)g_bytes_get_size(r->body),
			       (const gchar *)g_bytes_get_data(r->body, NULL));
	g_assert_cmpuint(r->status, ==, 200);
	g_assert_cmpstr(soup_message_headers_get_content_type(r->headers, NULL),
			==,
			"application/json");
	g_assert_nonnull(r->json);
	return r;
}

static JsonArray *
list_data(ConfabTestResponse *r)
{
	JsonNode *data = confab_test_json_get(r->json, "data");
	g_assert_nonnull(data);
	g_assert_true(JSON_NODE_HOLDS_ARRAY(data));
	return json_node_get_array(data);
}

static guint
list_len(ConfabTestResponse *r)
{
	return json_array_get_length(list_data(r));
}

static const gchar *
item_id(ConfabTestResponse *r, guint i)
{
	JsonObject *item = json_array_get_object_element(list_data(r), i);
	return json_object_get_string_member(item, "id");
}

static gboolean
json_is_null(JsonNode *node, const gchar *path)
{
	JsonNode *value = confab_test_json_get(node, path);
	return value != NULL && JSON_NODE_HOLDS_NULL(value);
}

static gboolean
json_bool(JsonNode *node, const gchar *path)
{
	JsonNode *value = confab_test_json_get(node, path);
	g_assert_nonnull(value);
	g_assert_true(JSON_NODE_HOLDS_VALUE(value));
	g_assert_true(json_node_get_value_type(value) == G_TYPE_BOOLEAN);
	return json_node_get_boolean(value);
}

static gboolean
json_is_int(JsonNode *node, const gchar *path)
{
	JsonNode *value = confab_test_json_get(node, path);
	return value != NULL && JSON_NODE_HOLDS_VALUE(value) &&
	       json_node_get_value_type(value) == G_TYPE_INT64;
}

/* the envelope of any page: shape, and first_id/last_id naming its ends */
static void
assert_envelope(ConfabTestResponse *r)
{
	guint n;
	g_assert_cmpstr(confab_test_json_string(r->json, "object"), ==, "list");
	n = list_len(r);
	g_assert_true(json_object_has_member(json_node_get_object(r->json), "has_more"));
	(void)json_bool(r->json, "has_more");
	if (n == 0) {
		g_assert_true(json_is_null(r->json, "first_id"));
		g_assert_true(json_is_null(r->json, "last_id"));
		g_assert_false(json_bool(r->json, "has_more"));
	} else {
		g_assert_cmpstr(confab_test_json_string(r->json, "first_id"), ==, item_id(r, 0));
		g_assert_cmpstr(confab_test_json_string(r->json, "last_id"), ==, item_id(r, n - 1));
	}
}

static gboolean
list_contains(ConfabTestResponse *r, const gchar *id)
{
	for (guint i = 0; i < list_len(r); i++) {
		if (g_strcmp0(item_id(r, i), id) == 0)
			return TRUE;
	}
	return FALSE;
}

static void
assert_error_param(ConfabTestResponse *r, guint status, const gchar *code, const gchar *param)
{
	confab_test_assert_error(r, status, code);
	g_assert_cmpstr(confab_test_json_string(r->json, "error.param"), ==, param);
}

static void
delete_session(Fixture *f, const gchar *session_id)
{
	g_autoptr(GError) error = NULL;
	confab_dbus_admin_call_delete_session_sync(f->daemon->admin, session_id, NULL, &error);
	g_assert_no_error(error);
}

/* ---------- the envelope ---------- */

static void
test_empty(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) r = get_ok(f, f->alice, "/api/v1/conversations");
	assert_envelope(r);
	g_assert_cmpuint(list_len(r), ==, 0);
	g_assert_true(json_is_null(r->json, "first_id"));
	g_assert_true(json_is_null(r->json, "last_id"));
	g_assert_false(json_bool(r->json, "has_more"));
}

static void
test_limit(Fixture *f, gconstpointer data)
{
	const gchar *bad[] =
	    {"0", "101", "abc", "-1", "", "1.5", "+5", "20abc", "99999999999999999999"};
	g_autofree gchar *session = NULL;
	g_autofree gchar *mpath = NULL;

	for (guint i = 0; i < 25; i++) {
		g_autofree gchar *text = g_strdup_printf("conversation %u", i);
		g_autofree gchar *id = new_conversation(f, f->alice, f->agent_a, text);
		if (session == NULL)
			session = g_steal_pointer(&id);
	}

	{
		/* default 20 */
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->alice, "/api/v1/conversations");
		assert_envelope(r);
		g_assert_cmpuint(list_len(r), ==, 20);
		g_assert_true(json_bool(r->json, "has_more"));
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    get_ok(f, f->alice, "/api/v1/conversations?limit=1");
		assert_envelope(r);
		g_assert_cmpuint(list_len(r), ==, 1);
		g_assert_true(json_bool(r->json, "has_more"));
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    get_ok(f, f->alice, "/api/v1/conversations?limit=100");
		assert_envelope(r);
		g_assert_cmpuint(list_len(r), ==, 25);
		g_assert_false(json_bool(r->json, "has_more"));
	}
	{
		/* a page that ends exactly at the last item has no more */
		g_autoptr(ConfabTestResponse) r =
		    get_ok(f, f->alice, "/api/v1/conversations?limit=25");
		g_assert_cmpuint(list_len(r), ==, 25);
		g_assert_false(json_bool(r->json, "has_more"));
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    get_ok(f, f->alice, "/api/v1/conversations?limit=24");
		g_assert_cmpuint(list_len(r), ==, 24);
		g_assert_true(json_bool(r->json, "has_more"));
	}

	mpath = g_strdup_printf("/api/v1/conversations/%s/messages", session);
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree gchar *p1 = g_strdup_printf("/api/v1/conversations?limit=%s", bad[i]);
		g_autofree gchar *p2 = g_strdup_printf("%s?limit=%s", mpath, bad[i]);
		g_autoptr(ConfabTestResponse) r1 =
		    confab_test_http(f->daemon, "GET", p1, f->alice, NULL);
		g_autoptr(ConfabTestResponse) r2 =
		    confab_test_http(f->daemon, "GET", p2, f->alice, NULL);
		g_test_message("limit=%s", bad[i]);
		assert_error_param(r1, 400, "invalid_limit", "limit");
		assert_error_param(r2, 400, "invalid_limit", "limit");
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    get_ok(f, f->alice, "/api/v1/conversations?limit=1&order=asc");
		g_autoptr(ConfabTestResponse) m = NULL;
		g_autofree gchar *p = g_strdup_printf("%s?limit=1", mpath);
		g_assert_cmpuint(list_len(r), ==, 1);
		m = get_ok(f, f->alice, p);
		g_assert_cmpuint(list_len(m), ==, 1);
		g_assert_true(json_bool(m->json, "has_more"));
	}
	{
		g_autoptr(ConfabTestResponse) r1 =
		    confab_test_http(f->daemon,
				     "GET",
				     "/api/v1/conversations?order=sideways",
				     f->alice,
				     NULL);
		g_autofree gchar *p = g_strdup_printf("%s?order=ASC", mpath);
		g_autoptr(ConfabTestResponse) r2 =
		    confab_test_http(f->daemon, "GET", p, f->alice, NULL);
		assert_error_param(r1, 400, "invalid_order", "order");
		assert_error_param(r2, 400, "invalid_order", "order");
	}
}

static void
test_order(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(ConfabTestResponse) desc = NULL;
	g_autoptr(ConfabTestResponse) explicit_desc = NULL;
	g_autoptr(ConfabTestResponse) asc = NULL;
	g_autoptr(ConfabTestResponse) m_desc = NULL;
	g_autoptr(ConfabTestResponse) m_asc = NULL;
	g_autoptr(ConfabTestResponse) second = NULL;
	g_autofree gchar *path = NULL;
	const gchar *turn_texts[] = {"one", "two", "three"};

	for (guint i = 0; i < 6; i++) {
		g_autofree gchar *text = g_strdup_printf("order %u", i);
		g_ptr_array_add(ids, new_conversation(f, f->alice, f->agent_a, text));
	}
	desc = get_ok(f, f->alice, "/api/v1/conversations");
	explicit_desc = get_ok(f, f->alice, "/api/v1/conversations?order=desc");
	asc = get_ok(f, f->alice, "/api/v1/conversations?order=asc");
	g_assert_cmpuint(list_len(desc), ==, 6);
	g_assert_cmpuint(list_len(asc), ==, 6);
	for (guint i = 0; i < 6; i++) {
		JsonObject *d = json_array_get_object_element(list_data(desc), i);
		/* newest first by default, oldest first with asc */
		g_assert_cmpstr(item_id(desc, i), ==, g_ptr_array_index(ids, 5 - i));
		g_assert_cmpstr(item_id(explicit_desc, i), ==, g_ptr_array_index(ids, 5 - i));
		g_assert_cmpstr(item_id(asc, i), ==, g_ptr_array_index(ids, i));
		if (i > 0) {
			JsonObject *prev = json_array_get_object_element(list_data(desc), i - 1);
			g_assert_cmpint(json_object_get_int_member(prev, "created_at"),
					>=,
					json_object_get_int_member(d, "created_at"));
			g_assert_cmpstr(item_id(desc, i - 1), >, item_id(desc, i));
		}
	}

	/* a continuation does not reorder: creation time sorts, not updates */
	second = confab_test_chat(f->daemon,
				  f->alice,
				  f->agent_a,
				  g_ptr_array_index(ids, 0),
				  "later",
				  FALSE);
	g_assert_cmpuint(second->status, ==, 200);
	{
		g_autoptr(ConfabTestResponse) again = get_ok(f, f->alice, "/api/v1/conversations");
		g_assert_cmpstr(item_id(again, 5), ==, g_ptr_array_index(ids, 0));
	}

	/* messages: chronological with asc, reversed by default */
	for (guint i = 0; i < G_N_ELEMENTS(turn_texts); i++) {
		g_autoptr(ConfabTestResponse) r = confab_test_chat(f->daemon,
								   f->alice,
								   f->agent_a,
								   g_ptr_array_index(ids, 1),
								   turn_texts[i],
								   FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	path = g_strdup_printf("/api/v1/conversations/%s/messages",
			       (gchar *)g_ptr_array_index(ids, 1));
	m_desc = get_ok(f, f->alice, path);
	{
		g_autofree gchar *p = g_strdup_printf("%s?order=asc", path);
		m_asc = get_ok(f, f->alice, p);
	}
	assert_envelope(m_desc);
	assert_envelope(m_asc);
	g_assert_cmpuint(list_len(m_asc), ==, 8);
	g_assert_cmpuint(list_len(m_desc), ==, 8);
	for (guint i = 0; i < 8; i++) {
		g_autofree gchar *p = g_strdup_printf("data.%u.role", i);
		g_assert_cmpstr(item_id(m_asc, i), ==, item_id(m_desc, 7 - i));
		g_assert_cmpstr(confab_test_json_string(m_asc->json, p),
				==,
				i % 2 == 0 ? "user" : "assistant");
		if (i > 0)
			g_assert_cmpstr(item_id(m_asc, i - 1), <, item_id(m_asc, i));
	}
	g_assert_cmpstr(confab_test_json_string(m_asc->json, "data.0.content.0.text"),
			==,
			"order 1");
	g_assert_cmpstr(confab_test_json_string(m_asc->json, "data.7.content.0.text"), ==, "three");
	g_assert_cmpstr(confab_test_json_string(m_desc->json, "data.0.content.0.text"),
			==,
			"three");
}

/* follows `after` from page to page; returns every id seen, in order */
static GPtrArray *
page_through(Fixture *f, const gchar *base, const gchar *order, guint limit, guint *n_pages)
{
	GPtrArray *seen = g_ptr_array_new_with_free_func(g_free);
	g_autofree gchar *after = NULL;
	guint pages = 0;

	for (;;) {
		g_autofree gchar *path = NULL;
		g_autoptr(ConfabTestResponse) r = NULL;
		gboolean more;
		if (after != NULL)
			path = g_strdup_printf("%s%corder=%s&limit=%u&after=%s",
					       base,
					       strchr(base, '?') != NULL ? '&' : '?',
					       order,
					       limit,
					       after);
		else
			path = g_strdup_printf("%s%corder=%s&limit=%u",
					       base,
					       strchr(base, '?') != NULL ? '&' : '?',
					       order,
					       limit);
		r = get_ok(f, f->alice, path);
		assert_envelope(r);
		pages++;
		g_assert_cmpuint(pages, <=, 100);
		for (guint i = 0; i < list_len(r); i++)
			g_ptr_array_add(seen, g_strdup(item_id(r, i)));
		more = json_bool(r->json, "has_more");
		if (!more)
			break;
		g_assert_cmpuint(list_len(r), ==, limit);
		g_free(after);
		after = g_strdup(confab_test_json_string(r->json, "last_id"));
	}
	*n_pages = pages;
	return seen;
}

static void
assert_each_once(GPtrArray *seen, GPtrArray *expected)
{
	g_autoptr(GHashTable) set = g_hash_table_new(g_str_hash, g_str_equal);
	g_assert_cmpuint(seen->len, ==, expected->len);
	for (guint i = 0; i < seen->len; i++)
		g_assert_true(g_hash_table_add(set, g_ptr_array_index(seen, i)));
	for (guint i = 0; i < expected->len; i++)
		g_assert_true(g_hash_table_contains(set, g_ptr_array_index(expected, i)));
}

static void
test_paging(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) desc = NULL;
	g_autoptr(GPtrArray) asc = NULL;
	g_autoptr(GPtrArray) messages = NULL;
	g_autoptr(GPtrArray) message_ids = g_ptr_array_new_with_free_func(g_free);
	g_autofree gchar *mbase = NULL;
	guint pages = 0;

	for (guint i = 0; i < 45; i++) {
		g_autofree gchar *text = g_strdup_printf("page %u", i);
		g_ptr_array_add(ids, new_conversation(f, f->alice, f->agent_a, text));
	}
	desc = page_through(f, "/api/v1/conversations", "desc", 20, &pages);
	g_assert_cmpuint(pages, ==, 3);
	assert_each_once(desc, ids);
	for (guint i = 0; i < 45; i++)
		g_assert_cmpstr(g_ptr_array_index(desc, i), ==, g_ptr_array_index(ids, 44 - i));

	asc = page_through(f, "/api/v1/conversations", "asc", 20, &pages);
	g_assert_cmpuint(pages, ==, 3);
	for (guint i = 0; i < 45; i++)
		g_assert_cmpstr(g_ptr_array_index(asc, i), ==, g_ptr_array_index(ids, i));

	/* first_id works as a cursor too: going back from the second page */
	{
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations?order=asc&after=%s",
						      (gchar *)g_ptr_array_index(ids, 19));
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->alice, p);
		g_autofree gchar *back = NULL;
		g_autoptr(ConfabTestResponse) b = NULL;
		g_assert_cmpstr(confab_test_json_string(r->json, "first_id"),
				==,
				g_ptr_array_index(ids, 20));
		back = g_strdup_printf("/api/v1/conversations?order=desc&limit=100&after=%s",
				       confab_test_json_string(r->json, "first_id"));
		b = get_ok(f, f->alice, back);
		g_assert_cmpuint(list_len(b), ==, 20);
		g_assert_cmpstr(item_id(b, 0), ==, g_ptr_array_index(ids, 19));
		g_assert_false(json_bool(b->json, "has_more"));
	}

	/* paging the messages of one long conversation */
	for (guint i = 0; i < 11; i++) {
		g_autofree gchar *text = g_strdup_printf("turn %u", i);
		g_autoptr(ConfabTestResponse) r = confab_test_chat(f->daemon,
								   f->alice,
								   f->agent_a,
								   g_ptr_array_index(ids, 0),
								   text,
								   FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	mbase = g_strdup_printf("/api/v1/conversations/%s/messages",
				(gchar *)g_ptr_array_index(ids, 0));
	{
		g_autofree gchar *p = g_strdup_printf("%s?order=asc&limit=100", mbase);
		g_autoptr(ConfabTestResponse) all = get_ok(f, f->alice, p);
		g_assert_cmpuint(list_len(all), ==, 24);
		for (guint i = 0; i < 24; i++)
			g_ptr_array_add(message_ids, g_strdup(item_id(all, i)));
	}
	messages = page_through(f, mbase, "asc", 5, &pages);
	g_assert_cmpuint(pages, ==, 5);
	assert_each_once(messages, message_ids);
	for (guint i = 0; i < 24; i++)
		g_assert_cmpstr(g_ptr_array_index(messages, i),
				==,
				g_ptr_array_index(message_ids, i));
	g_clear_pointer(&messages, g_ptr_array_unref);
	messages = page_through(f, mbase, "desc", 7, &pages);
	g_assert_cmpuint(pages, ==, 4);
	for (guint i = 0; i < 24; i++)
		g_assert_cmpstr(g_ptr_array_index(messages, i),
				==,
				g_ptr_array_index(message_ids, 23 - i));
}

static void
test_after_deleted(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
	const gchar *gone;

	for (guint i = 0; i < 10; i++) {
		g_autofree gchar *text = g_strdup_printf("deleted cursor %u", i);
		g_ptr_array_add(ids, new_conversation(f, f->alice, f->agent_a, text));
	}
	gone = g_ptr_array_index(ids, 4);
	delete_session(f, gone);
	{
		/* the deleted conversation is gone from the list at once */
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->alice, "/api/v1/conversations");
		g_assert_cmpuint(list_len(r), ==, 9);
		g_assert_false(list_contains(r, gone));
	}
	{
		g_autofree gchar *p =
		    g_strdup_printf("/api/v1/conversations?order=desc&after=%s", gone);
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->alice, p);
		assert_envelope(r);
		g_assert_cmpuint(list_len(r), ==, 4);
		for (guint i = 0; i < 4; i++)
			g_assert_cmpstr(item_id(r, i), ==, g_ptr_array_index(ids, 3 - i));
		g_assert_false(json_bool(r->json, "has_more"));
	}
	{
		g_autofree gchar *p =
		    g_strdup_printf("/api/v1/conversations?order=asc&limit=2&after=%s", gone);
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->alice, p);
		g_assert_cmpuint(list_len(r), ==, 2);
		g_assert_cmpstr(item_id(r, 0), ==, g_ptr_array_index(ids, 5));
		g_assert_cmpstr(item_id(r, 1), ==, g_ptr_array_index(ids, 6));
		g_assert_true(json_bool(r->json, "has_more"));
	}
	{
		/* ids that never existed work the same way */
		g_autoptr(ConfabTestResponse) hi =
		    get_ok(f,
			   f->alice,
			   "/api/v1/conversations?limit=100&after=" SESSION_ID_HIGHEST);
		g_autoptr(ConfabTestResponse) lo =
		    get_ok(f, f->alice, "/api/v1/conversations?limit=100&after=" SESSION_ID_LOWEST);
		g_autoptr(ConfabTestResponse) lo_asc =
		    get_ok(f,
			   f->alice,
			   "/api/v1/conversations?limit=100&order=asc&after=" SESSION_ID_LOWEST);
		g_assert_cmpuint(list_len(hi), ==, 9);
		g_assert_cmpuint(list_len(lo), ==, 0);
		assert_envelope(lo);
		g_assert_cmpuint(list_len(lo_asc), ==, 9);
	}
	{
		/* its messages are gone too */
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations/%s/messages", gone);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", p, f->alice, NULL);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
}

static void
test_after_malformed(Fixture *f, gconstpointer data)
{
	g_autofree gchar *session = new_conversation(f, f->alice, f->agent_a, "hello");
	g_autofree gchar *mpath = g_strdup_printf("/api/v1/conversations/%s/messages", session);
	g_autoptr(ConfabTestResponse) m = NULL;
	g_autofree gchar *message_id = NULL;
	const gchar *bad[] = {
	    "garbage",
	    "cts_",
	    "cts_short",
	    "cts_0000000000000000000000000",   /* 25 characters */
	    "cts_000000000000000000000000000", /* 27 characters */
	    "cts_8zzzzzzzzzzzzzzzzzzzzzzzzz",  /* beyond 48 bits of time */
	    "cts_0000000000000000000000000u",  /* not Crockford base32 */
	    "agt_00000000000000000000000000",
	    "cts_00000000000000000000000000%27%20OR%201%3D1",
	};

	m = get_ok(f, f->alice, mpath);
	message_id = g_strdup(item_id(m, 1)); /* desc: the user message */
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations?after=%s", bad[i]);
		g_autofree gchar *q = g_strdup_printf("%s?after=%s", mpath, bad[i]);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", p, f->alice, NULL);
		g_autoptr(ConfabTestResponse) s =
		    confab_test_http(f->daemon, "GET", q, f->alice, NULL);
		g_test_message("after=%s", bad[i]);
		assert_error_param(r, 400, "invalid_after", "after");
		assert_error_param(s, 400, "invalid_after", "after");
	}
	{
		/* a NUL byte is refused one way or another, never matched */
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon,
				     "GET",
				     "/api/v1/conversations?after=cts_%00",
				     f->alice,
				     NULL);
		g_assert_cmpuint(r->status, ==, 400);
		g_assert_nonnull(r->json);
	}
	{
		/* each list takes its own kind of id */
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations?after=%s", message_id);
		g_autofree gchar *q = g_strdup_printf("%s?after=%s", mpath, session);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", p, f->alice, NULL);
		g_autoptr(ConfabTestResponse) s =
		    confab_test_http(f->daemon, "GET", q, f->alice, NULL);
		assert_error_param(r, 400, "invalid_after", "after");
		assert_error_param(s, 400, "invalid_after", "after");
	}
	{
		g_autofree gchar *q = g_strdup_printf("%s?order=asc&after=%s", mpath, message_id);
		g_autoptr(ConfabTestResponse) s = get_ok(f, f->alice, q);
		g_assert_cmpuint(list_len(s), ==, 1);
		g_assert_cmpstr(confab_test_json_string(s->json, "data.0.role"), ==, "assistant");
	}
}

static void
test_model_filter(Fixture *f, gconstpointer data)
{
	g_autoptr(GPtrArray) a_ids = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) b_ids = g_ptr_array_new_with_free_func(g_free);
	g_autofree gchar *pa = NULL;
	g_autofree gchar *pb = NULL;

	for (guint i = 0; i < 5; i++) {
		g_ptr_array_add(i % 2 == 0 ? a_ids : b_ids,
				new_conversation(f,
						 f->alice,
						 i % 2 == 0 ? f->agent_a : f->agent_b,
						 "filter me"));
	}
	pa = g_strdup_printf("/api/v1/conversations?model=%s", f->agent_a);
	pb = g_strdup_printf("/api/v1/conversations?order=asc&model=%s", f->agent_b);
	{
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->alice, pa);
		assert_envelope(r);
		g_assert_cmpuint(list_len(r), ==, 3);
		for (guint i = 0; i < 3; i++) {
			g_autofree gchar *p = g_strdup_printf("data.%u.model", i);
			g_assert_cmpstr(confab_test_json_string(r->json, p), ==, f->agent_a);
			g_assert_cmpstr(item_id(r, i), ==, g_ptr_array_index(a_ids, 2 - i));
		}
	}
	{
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->alice, pb);
		g_assert_cmpuint(list_len(r), ==, 2);
		g_assert_cmpstr(item_id(r, 0), ==, g_ptr_array_index(b_ids, 0));
		g_assert_cmpstr(item_id(r, 1), ==, g_ptr_array_index(b_ids, 1));
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    get_ok(f, f->alice, "/api/v1/conversations?model=" SESSION_ID_LOWEST);
		assert_envelope(r);
		g_assert_cmpuint(list_len(r), ==, 0);
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    get_ok(f, f->alice, "/api/v1/conversations?model=agt_nope");
		g_assert_cmpuint(list_len(r), ==, 0);
	}
	{
		/* filter and limit together */
		g_autofree gchar *p = g_strdup_printf("%s&limit=2", pa);
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->alice, p);
		g_assert_cmpuint(list_len(r), ==, 2);
		g_assert_true(json_bool(r->json, "has_more"));
	}
}

static void
test_conversation_fields(Fixture *f, gconstpointer data)
{
	const gchar *long_text =
	    "The quick brown fox jumps over the lazy dog while the five boxing wizards "
	    "jump quickly and a sphinx of black quartz judges my vow of silence today";
	gint64 before = g_get_real_time() / G_USEC_PER_SEC;
	g_autofree gchar *short_id = new_conversation(f, f->alice, f->agent_a, "Short title");
	g_autofree gchar *long_id = new_conversation(f, f->alice, f->agent_a, long_text);
	g_autofree gchar *system_body = g_strdup_printf(
	    "{\"model\":\"%s\",\"messages\":[{\"role\":\"system\",\"content\":\"You are a "
	    "system prompt\"},{\"role\":\"user\",\"content\":\"the user speaks\"}]}",
	    f->agent_b);
	g_autoptr(ConfabTestResponse) sys =
	    confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->alice, system_body);
	gint64 after = g_get_real_time() / G_USEC_PER_SEC + 1;
	g_autoptr(ConfabTestResponse) r = NULL;
	const gchar *title;
	g_autofree gchar *bare = NULL;
	gsize bare_len;
	JsonObject *item;

	g_assert_cmpuint(sys->status, ==, 200);
	r = get_ok(f, f->alice, "/api/v1/conversations?order=asc");
	g_assert_cmpuint(list_len(r), ==, 3);
	for (guint i = 0; i < 3; i++) {
		g_autofree gchar *p_obj = g_strdup_printf("data.%u.object", i);
		g_autofree gchar *p_c = g_strdup_printf("data.%u.created_at", i);
		g_autofree gchar *p_u = g_strdup_printf("data.%u.updated_at", i);
		item = json_array_get_object_element(list_data(r), i);
		g_assert_cmpstr(confab_test_json_string(r->json, p_obj), ==, "conversation");
		g_assert_true(g_str_has_prefix(item_id(r, i), "cts_"));
		/* integer Unix seconds */
		g_assert_true(json_is_int(r->json, p_c));
		g_assert_true(json_is_int(r->json, p_u));
		g_assert_cmpint(confab_test_json_int(r->json, p_c), >=, before);
		g_assert_cmpint(confab_test_json_int(r->json, p_c), <=, after);
		g_assert_cmpint(confab_test_json_int(r->json, p_u),
				>=,
				confab_test_json_int(r->json, p_c));
		g_assert_true(json_object_has_member(item, "title"));
		g_assert_true(json_object_has_member(item, "model"));
	}
	g_assert_cmpstr(item_id(r, 0), ==, short_id);
	g_assert_cmpstr(item_id(r, 1), ==, long_id);
	g_assert_cmpstr(confab_test_json_string(r->json, "data.0.model"), ==, f->agent_a);
	g_assert_cmpstr(confab_test_json_string(r->json, "data.2.model"), ==, f->agent_b);
	g_assert_cmpstr(confab_test_json_string(r->json, "data.0.title"), ==, "Short title");
	/* the first user text, not the system prompt */
	g_assert_cmpstr(confab_test_json_string(r->json, "data.2.title"), ==, "the user speaks");

	/* trimmed at a word boundary near 80 characters */
	title = confab_test_json_string(r->json, "data.1.title");
	g_assert_nonnull(title);
	g_test_message("long title: %s", title);
	bare = g_strdup(title);
	if (g_str_has_suffix(bare, "…"))
		bare[strlen(bare) - strlen("…")] = '\0';
	g_strchomp(bare);
	if (g_str_has_suffix(bare, "..."))
		bare[strlen(bare) - 3] = '\0';
	bare_len = strlen(bare);
	g_assert_cmpuint(bare_len, >=, 40);
	g_assert_cmpuint(bare_len, <=, 85);
	g_assert_true(g_str_has_prefix(long_text, bare));
	g_assert_true(long_text[bare_len] == ' ');
	g_assert_true(bare[bare_len - 1] != ' ');

	{
		/* updated_at follows a continuation; created_at stays */
		gint64 created = confab_test_json_int(r->json, "data.0.created_at");
		g_autoptr(ConfabTestResponse) c =
		    confab_test_chat(f->daemon, f->alice, f->agent_a, short_id, "more", FALSE);
		g_autoptr(ConfabTestResponse) again = NULL;
		g_assert_cmpuint(c->status, ==, 200);
		again = get_ok(f, f->alice, "/api/v1/conversations?order=asc");
		g_assert_cmpint(confab_test_json_int(again->json, "data.0.created_at"),
				==,
				created);
		g_assert_cmpint(confab_test_json_int(again->json, "data.0.updated_at"),
				>=,
				created);
		g_assert_cmpstr(confab_test_json_string(again->json, "data.0.title"),
				==,
				"Short title");
	}
}

static void
test_message_fields(Fixture *f, gconstpointer data)
{
	const gchar *text = "  Grüße, world!\n";
	gint64 before = g_get_real_time() / G_USEC_PER_SEC;
	g_autoptr(ConfabTestResponse) c =
	    confab_test_chat(f->daemon, f->alice, f->agent_a, NULL, text, FALSE);
	gint64 after = g_get_real_time() / G_USEC_PER_SEC + 1;
	const gchar *session = confab_test_json_string(c->json, "metadata.session_id");
	const gchar *assistant_id =
	    confab_test_json_string(c->json, "metadata.assistant_message_id");
	g_autofree gchar *path =
	    g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session);
	g_autoptr(ConfabTestResponse) r = NULL;

	g_assert_cmpuint(c->status, ==, 200);
	r = get_ok(f, f->alice, path);
	assert_envelope(r);
	g_assert_cmpuint(list_len(r), ==, 2);
	g_assert_false(json_bool(r->json, "has_more"));
	for (guint i = 0; i < 2; i++) {
		JsonObject *item = json_array_get_object_element(list_data(r), i);
		g_autofree gchar *p_c = g_strdup_printf("data.%u.created_at", i);
		JsonNode *content = json_object_get_member(item, "content");
		JsonNode *blocks = json_object_get_member(item, "content_blocks");
		g_assert_true(g_str_has_prefix(json_object_get_string_member(item, "id"), "msg_"));
		g_assert_cmpstr(json_object_get_string_member(item, "object"), ==, "message");
		g_assert_cmpstr(json_object_get_string_member(item, "model"), ==, f->agent_a);
		g_assert_cmpstr(json_object_get_string_member(item, "status"), ==, "completed");
		g_assert_true(json_is_int(r->json, p_c));
		g_assert_cmpint(confab_test_json_int(r->json, p_c), >=, before);
		g_assert_cmpint(confab_test_json_int(r->json, p_c), <=, after);
		g_assert_nonnull(content);
		g_assert_true(JSON_NODE_HOLDS_ARRAY(content));
		g_assert_nonnull(blocks);
		g_assert_true(JSON_NODE_HOLDS_ARRAY(blocks));
		g_assert_cmpuint(json_array_get_length(json_node_get_array(content)), ==, 1);
		g_assert_cmpuint(json_array_get_length(json_node_get_array(blocks)), >=, 1);
	}
	g_assert_cmpstr(confab_test_json_string(r->json, "data.0.role"), ==, "user");
	g_assert_cmpstr(confab_test_json_string(r->json, "data.1.role"), ==, "assistant");
	g_assert_cmpstr(item_id(r, 1), ==, assistant_id);
	/* the text exactly, whitespace and non-ASCII included */
	g_assert_cmpstr(confab_test_json_string(r->json, "data.0.content.0.type"), ==, "text");
	g_assert_cmpstr(confab_test_json_string(r->json, "data.0.content.0.text"), ==, text);
	g_assert_cmpstr(confab_test_json_string(r->json, "data.1.content.0.type"), ==, "text");
	g_assert_cmpstr(confab_test_json_string(r->json, "data.1.content.0.text"), ==, text);
	g_assert_cmpstr(confab_test_json_string(r->json, "data.0.content_blocks.0.type"),
			==,
			"text");
	g_assert_cmpstr(confab_test_json_string(r->json, "data.1.content_blocks.0.text"), ==, text);
}

static void
test_parts_replayed(Fixture *f, gconstpointer data)
{
	const gchar *parts_json =
	    "[{\"type\":\"text\",\"text\":\"look at these\"},"
	    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://example.com/cat.png\","
	    "\"detail\":\"high\"}},"
	    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,"
	    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJ"
	    "RU5ErkJggg==\"}},"
	    "{\"type\":\"file\",\"file\":{\"filename\":\"notes.txt\",\"file_data\":"
	    "\"data:text/plain;base64,aGVsbG8gd29ybGQ=\"}},"
	    "{\"type\":\"file\",\"file\":{\"file_id\":\"file-abc123\"}}]";
	g_autofree gchar *body =
	    g_strdup_printf("{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":%s}]}",
			    f->agent_a,
			    parts_json);
	g_autoptr(ConfabTestResponse) c =
	    confab_test_http(f->daemon, "POST", "/api/v1/chat/completions", f->alice, body);
	g_autoptr(JsonNode) sent = json_from_string(parts_json, NULL);
	g_autofree gchar *path = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	JsonNode *content;
	JsonArray *got;
	JsonArray *want;

	g_assert_cmpuint(c->status, ==, 200);
	g_assert_cmpstr(confab_test_json_string(c->json, "choices.0.message.content"),
			==,
			"look at these");
	path = g_strdup_printf("/api/v1/conversations/%s/messages?order=asc",
			       confab_test_json_string(c->json, "metadata.session_id"));
	r = get_ok(f, f->alice, path);
	g_assert_cmpuint(list_len(r), ==, 2);
	content = confab_test_json_get(r->json, "data.0.content");
	g_assert_true(JSON_NODE_HOLDS_ARRAY(content));
	got = json_node_get_array(content);
	want = json_node_get_array(sent);
	g_assert_cmpuint(json_array_get_length(got), ==, json_array_get_length(want));
	for (guint i = 0; i < json_array_get_length(want); i++) {
		g_autofree gchar *a = json_to_string(json_array_get_element(want, i), FALSE);
		g_autofree gchar *b = json_to_string(json_array_get_element(got, i), FALSE);
		g_test_message("part %u: sent %s, replayed %s", i, a, b);
		g_assert_true(json_node_equal(json_array_get_element(want, i),
					      json_array_get_element(got, i)));
	}
	/* the transcript carries the attachments as blocks as well */
	{
		JsonNode *blocks = confab_test_json_get(r->json, "data.0.content_blocks");
		g_autofree gchar *s = json_to_string(blocks, FALSE);
		g_assert_true(JSON_NODE_HOLDS_ARRAY(blocks));
		g_assert_nonnull(strstr(s, "https://example.com/cat.png"));
		g_assert_nonnull(strstr(s, "aGVsbG8gd29ybGQ="));
		g_assert_nonnull(strstr(s, "file-abc123"));
	}
}

static void
test_channel_not_listed(Fixture *f, gconstpointer data)
{
	const gchar *me = g_get_user_name();
	g_autofree gchar *token = confab_test_create_token(f->daemon, me, "api.full", NULL, NULL);
	g_autofree gchar *channel_id = NULL;
	g_autofree gchar *reply = NULL;
	g_autofree gchar *api_id = new_conversation(f, token, f->agent_a, "over http");
	g_autoptr(GError) error = NULL;

	confab_dbus_chat_call_send_sync(f->daemon->chat,
					f->agent_a,
					"",
					"over the bus",
					&channel_id,
					&reply,
					NULL,
					&error);
	g_assert_no_error(error);
	g_assert_true(g_str_has_prefix(channel_id, "cts_"));
	{
		g_autoptr(ConfabTestResponse) r =
		    get_ok(f, token, "/api/v1/conversations?limit=100");
		g_assert_cmpuint(list_len(r), ==, 1);
		g_assert_cmpstr(item_id(r, 0), ==, api_id);
		g_assert_false(list_contains(r, channel_id));
	}
	{
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations?model=%s", f->agent_a);
		g_autoptr(ConfabTestResponse) r = get_ok(f, token, p);
		g_assert_false(list_contains(r, channel_id));
	}
	{
		/* the channel session is a valid cursor neighbour, never an item */
		g_autofree gchar *p =
		    g_strdup_printf("/api/v1/conversations?order=asc&after=%s", api_id);
		g_autoptr(ConfabTestResponse) r = get_ok(f, token, p);
		g_assert_cmpuint(list_len(r), ==, 0);
	}
	{
		g_autofree gchar *p =
		    g_strdup_printf("/api/v1/conversations/%s/messages", channel_id);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", p, token, NULL);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
}

static void
test_other_owner(Fixture *f, gconstpointer data)
{
	g_autofree gchar *alice_id = new_conversation(f, f->alice, f->agent_a, "alice's");
	g_autofree gchar *bob_id = new_conversation(f, f->bob, f->agent_a, "bob's");
	g_autofree gchar *alice2 =
	    confab_test_create_token(f->daemon, "alice", "api.full", NULL, NULL);

	{
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->alice, "/api/v1/conversations");
		g_assert_cmpuint(list_len(r), ==, 1);
		g_assert_cmpstr(item_id(r, 0), ==, alice_id);
	}
	{
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->bob, "/api/v1/conversations");
		g_assert_cmpuint(list_len(r), ==, 1);
		g_assert_cmpstr(item_id(r, 0), ==, bob_id);
	}
	{
		/* the owner's conversations, whichever of its tokens made them */
		g_autoptr(ConfabTestResponse) r = get_ok(f, alice2, "/api/v1/conversations");
		g_assert_cmpuint(list_len(r), ==, 1);
		g_assert_cmpstr(item_id(r, 0), ==, alice_id);
	}
	{
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations/%s/messages", bob_id);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", p, f->alice, NULL);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	{
		/* a cursor of another owner's reveals nothing either */
		g_autofree gchar *p =
		    g_strdup_printf("/api/v1/conversations?order=asc&after=%s", alice_id);
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->bob, p);
		g_assert_false(list_contains(r, alice_id));
		g_assert_cmpuint(list_len(r), ==, 1);
	}
	{
		g_autofree gchar *p =
		    g_strdup_printf("/api/v1/conversations/%s/messages", alice_id);
		g_autoptr(ConfabTestResponse) r = get_ok(f, alice2, p);
		g_assert_cmpuint(list_len(r), ==, 2);
	}
}

static void
test_bound_token(Fixture *f, gconstpointer data)
{
	g_autofree gchar *bound =
	    confab_test_create_token(f->daemon, "alice", "chat.completions", f->agent_a, NULL);
	g_autofree gchar *a_id = new_conversation(f, f->alice, f->agent_a, "with a");
	g_autofree gchar *b_id = new_conversation(f, f->alice, f->agent_b, "with b");
	g_autofree gchar *a2_id = new_conversation(f, bound, f->agent_a, "bound with a");

	{
		g_autoptr(ConfabTestResponse) r = get_ok(f, bound, "/api/v1/conversations");
		g_assert_cmpuint(list_len(r), ==, 2);
		g_assert_cmpstr(item_id(r, 0), ==, a2_id);
		g_assert_cmpstr(item_id(r, 1), ==, a_id);
		g_assert_false(list_contains(r, b_id));
	}
	{
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations?model=%s", f->agent_b);
		g_autoptr(ConfabTestResponse) r = get_ok(f, bound, p);
		assert_envelope(r);
		g_assert_cmpuint(list_len(r), ==, 0);
	}
	{
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations?model=%s", f->agent_a);
		g_autoptr(ConfabTestResponse) r = get_ok(f, bound, p);
		g_assert_cmpuint(list_len(r), ==, 2);
	}
	{
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations/%s/messages", b_id);
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", p, bound, NULL);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
	{
		g_autofree gchar *p = g_strdup_printf("/api/v1/conversations/%s/messages", a_id);
		g_autoptr(ConfabTestResponse) r = get_ok(f, bound, p);
		g_assert_cmpuint(list_len(r), ==, 2);
	}
	{
		/* the unbound token of the same owner sees all three */
		g_autoptr(ConfabTestResponse) r = get_ok(f, f->alice, "/api/v1/conversations");
		g_assert_cmpuint(list_len(r), ==, 3);
	}
}

static void
test_unknown_session(Fixture *f, gconstpointer data)
{
	const gchar *paths[] = {
	    "/api/v1/conversations/" SESSION_ID_LOWEST "/messages",
	    "/api/v1/conversations/cts_nope/messages",
	    "/api/v1/conversations/nothing/messages",
	    "/api/v1/conversations/%2e%2e/messages",
	};
	for (guint i = 0; i < G_N_ELEMENTS(paths); i++) {
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", paths[i], f->alice, NULL);
		g_test_message("%s", paths[i]);
		g_assert_cmpuint(r->status, ==, 404);
		g_assert_nonnull(r->json);
	}
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", paths[0], f->alice, NULL);
		confab_test_assert_error(r, 404, "conversation_not_found");
	}
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, func)                                                                            \
	g_test_add("/confab/http-lists/" name, Fixture, NULL, fixture_setup, func, fixture_teardown)
	ADD("empty", test_empty);
	ADD("limit", test_limit);
	ADD("order", test_order);
	ADD("paging", test_paging);
	ADD("after-deleted", test_after_deleted);
	ADD("after-malformed", test_after_malformed);
	ADD("model-filter", test_model_filter);
	ADD("conversation-fields", test_conversation_fields);
	ADD("message-fields", test_message_fields);
	ADD("parts-replayed", test_parts_replayed);
	ADD("channel-not-listed", test_channel_not_listed);
	ADD("other-owner", test_other_owner);
	ADD("bound-token", test_bound_token);
	ADD("unknown-session", test_unknown_session);
#undef ADD
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
