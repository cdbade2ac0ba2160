/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * A full disk, against a real confabd: the daemon runs with a file size
 * limit (RLIMIT_FSIZE, SIGXFSZ ignored, so a write past it fails with
 * EFBIG as on a full file system), and a turn too large to store is
 * answered 503 store_unavailable with Retry-After — not a 500, not a
 * crash, no half-written conversation, not counted against the quota.
 */

/* 4096 blocks of 512 bytes: the database and its WAL stay under 2 MiB */
#define LIMIT_WRAPPER "sh -c 'trap \"\" XFSZ; ulimit -f 4096; exec \"$0\" \"$@\"'"

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent;
	gchar *token;
	gchar *big_text;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	const gchar *outer = g_getenv("CONFABD_WRAPPER");
	g_autofree gchar *saved = g_strdup(outer);
	g_autofree gchar *wrapper = outer != NULL && *outer != '\0'
					? g_strdup_printf("%s %s", LIMIT_WRAPPER, outer)
					: g_strdup(LIMIT_WRAPPER);

	/* the daemon alone runs under the limit */
	g_setenv("CONFABD_WRAPPER", wrapper, TRUE);
	f->daemon = confab_test_daemon_start(NULL, NULL);
	if (saved != NULL)
		g_setenv("CONFABD_WRAPPER", saved, TRUE);
	else
		g_unsetenv("CONFABD_WRAPPER");
	f->agent = confab_test_create_agent(f->daemon, "echo", "echo");
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
	/* 3 MiB of words: more than the files may grow */
	{
		GString *text = g_string_sized_new(3 * 1024 * 1024 + 16);
		while (text->len < 3 * 1024 * 1024)
			g_string_append(text, "words that will not fit ");
		f->big_text = g_string_free(text, FALSE);
	}
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	g_free(f->agent);
	g_free(f->token);
	g_free(f->big_text);
}

static guint64
requests_counted(Fixture *f)
{
	g_autoptr(GVariant) usage = NULL;
	g_autoptr(GError) error = NULL;
	guint64 requests = 0;

	confab_dbus_admin_call_get_usage_sync(f->daemon->admin, "alice", &usage, NULL, &error);
	g_assert_no_error(error);
	g_assert_true(g_variant_lookup(usage, "requests", "t", &requests));
	return requests;
}

static guint
conversations(Fixture *f)
{
	g_autoptr(ConfabTestResponse) r =
	    confab_test_http(f->daemon, "GET", "/api/v1/conversations", f->token, NULL);
	g_assert_cmpuint(r->status, ==, 200);
	return json_array_get_length(json_node_get_array(confab_test_json_get(r->json, "data")));
}

static void
assert_store_unavailable(ConfabTestResponse *r)
{
	if (r->status != 503)
		g_test_message("%u %.*s",
			       r->status,
			       (int)g_bytes_get_size(r->body),
			       (const gchar *)g_bytes_get_data(r->body, NULL));
	confab_test_assert_error(r, 503, "store_unavailable");
	g_assert_cmpstr(confab_test_json_string(r->json, "error.type"), ==, "service_unavailable");
	g_assert_nonnull(soup_message_headers_get_one(r->headers, "Retry-After"));
}

static void
test_json_turn(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) small =
	    confab_test_chat(f->daemon, f->token, f->agent, NULL, "fits", FALSE);
	g_autoptr(ConfabTestResponse) big = NULL;

	g_assert_cmpuint(small->status, ==, 200);
	g_assert_cmpuint(requests_counted(f), ==, 1);
	big = confab_test_chat(f->daemon, f->token, f->agent, NULL, f->big_text, FALSE);
	assert_store_unavailable(big);
	/* nothing of it stored, nothing counted, the daemon serves on */
	g_assert_cmpuint(conversations(f), ==, 1);
	g_assert_cmpuint(requests_counted(f), ==, 1);
}

static void
test_stream_turn(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabTestResponse) big =
	    confab_test_chat(f->daemon, f->token, f->agent, NULL, f->big_text, TRUE);

	/* the user's side is committed before the first byte of a stream */
	assert_store_unavailable(big);
	g_assert_cmpuint(conversations(f), ==, 0);
	g_assert_cmpuint(requests_counted(f), ==, 0);
}

/* The Conversations API: a conversation created with items, or items
 * added, too large to store: nothing of it stored (the conversation and
 * its items are one commit), and the conversation is as it was. */
static void
test_conversation_items(Fixture *f, gconstpointer data)
{
	g_autofree gchar *body = g_strdup_printf("{\"items\":[{\"role\":\"user\","
						 "\"content\":\"fits\"},{\"role\":\"user\","
						 "\"content\":\"%s\"}]}",
						 f->big_text);
	g_autoptr(ConfabTestResponse) big =
	    confab_test_http(f->daemon, "POST", "/api/v1/conversations", f->token, body);
	g_autoptr(ConfabTestResponse) small = NULL;
	g_autoptr(ConfabTestResponse) added = NULL;
	g_autoptr(ConfabTestResponse) items = NULL;
	g_autofree gchar *path = NULL;

	assert_store_unavailable(big);
	g_assert_cmpuint(conversations(f), ==, 0);

	small = confab_test_http(f->daemon,
				 "POST",
				 "/api/v1/conversations",
				 f->token,
				 "{\"items\":[{\"role\":\"user\",\"content\":\"fits\"}]}");
	g_assert_cmpuint(small->status, ==, 200);
	path = g_strdup_printf("/api/v1/conversations/%s/items",
			       confab_test_json_string(small->json, "id"));
	added = confab_test_http(f->daemon, "POST", path, f->token, body);
	assert_store_unavailable(added);
	items = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(items->status, ==, 200);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(items->json, "data"))),
	    ==,
	    1);
	g_assert_cmpuint(conversations(f), ==, 1);
}

int
main(int argc, char **argv)
{
	gint ret;

	if (confab_test_store_is_postgres()) {
		/* SQLite's file hitting the disk's end; PostgreSQL's failures are
		 * test-postgres's */
		g_printerr("SKIP: a SQLite test\n");
		return CONFAB_TEST_SKIP;
	}
	confab_test_init(&argc, &argv, TRUE);
#define ADD(name, func)                                                                            \
	g_test_add("/confab/store-full/" name, Fixture, NULL, fixture_setup, func, fixture_teardown)
	ADD("json-turn", test_json_turn);
	ADD("stream-turn", test_stream_turn);
	ADD("conversation-items", test_conversation_items);
#undef ADD
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
