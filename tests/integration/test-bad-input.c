/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"

/*
 * The bad input corpus: hundreds of malformed requests — every truncation
 * of a good body, wrong types in every field, bad encodings, NUL bytes,
 * deep nesting, oversize bodies and files, bad base64, bad cursors, wrong
 * methods, paths and content types. Each must get a 4xx in the OpenAI
 * shape; none may crash the daemon, answer 5xx, or write a row.
 */

#define CONFIG                                                                                     \
	"[limits]\n"                                                                               \
	"max_body_bytes=262144\n"                                                                  \
	"max_file_bytes=1024\n"                                                                    \
	"max_files_per_message=3\n"

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent;
	gchar *token;
	guint sent;
} Fixture;

static void
check_refused(Fixture *f,
	      const gchar *method,
	      const gchar *path,
	      const gchar *content_type,
	      const gchar *body,
	      gssize body_len,
	      const gchar *what)
{
	g_autofree gchar *auth = g_strdup_printf("Authorization: Bearer %s", f->token);
	g_autofree gchar *ctype =
	    content_type != NULL ? g_strdup_printf("Content-Type: %s", content_type) : NULL;
	const gchar *headers[] = {auth, ctype, NULL};
	g_autoptr(GBytes) bytes = NULL;
	g_autoptr(ConfabTestResponse) r = NULL;
	JsonObject *error;

	if (body != NULL)
		bytes = g_bytes_new(body, body_len < 0 ? strlen(body) : (gsize)body_len);
	r = confab_test_http_full(f->daemon, method, path, headers, bytes);
	f->sent++;
	if (r->status < 400 || r->status >= 500)
		g_error("%s: %s %s answered %u: %.*s",
			what,
			method,
			path,
			r->status,
			(int)MIN(g_bytes_get_size(r->body), 300),
			(const gchar *)g_bytes_get_data(r->body, NULL));
	if (r->json == NULL || !JSON_NODE_HOLDS_OBJECT(r->json))
		g_error("%s: %u without a JSON error body", what, r->status);
	error = json_object_get_object_member(json_node_get_object(r->json), "error");
	g_assert_nonnull(error);
	g_assert_true(json_object_has_member(error, "message"));
	g_assert_true(json_object_has_member(error, "type"));
	g_assert_true(json_object_has_member(error, "param"));
	g_assert_true(json_object_has_member(error, "code"));
	g_assert_cmpuint(json_object_get_size(error), ==, 4);
	g_assert_nonnull(json_object_get_string_member(error, "type"));
	g_assert_nonnull(json_object_get_string_member(error, "code"));
	g_assert_cmpuint(strlen(json_object_get_string_member(error, "message")), >, 0);
}

static void
post_chat(Fixture *f, const gchar *body, gssize len, const gchar *what)
{
	check_refused(f, "POST", "/api/v1/chat/completions", "application/json", body, len, what);
}

static gchar *
with_field(Fixture *f, const gchar *field_json)
{
	return g_strdup_printf("{\"model\":\"%s\",%s}", f->agent, field_json);
}

static void
test_corpus(Fixture *f, gconstpointer data)
{
	g_autofree gchar *good = g_strdup_printf(
	    "{\"model\":\"%s\",\"stream\":false,\"temperature\":0.5,\"messages\":[{\"role\":"
	    "\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":[{\"type\":"
	    "\"text\",\"text\":\"hello\"}]}]}",
	    f->agent);
	const gchar *bad_messages[] = {
	    "\"messages\":[]",
	    "\"messages\":\"hello\"",
	    "\"messages\":{}",
	    "\"messages\":null",
	    "\"messages\":[1]",
	    "\"messages\":[null]",
	    "\"messages\":[[]]",
	    "\"messages\":[{}]",
	    "\"messages\":[{\"role\":1,\"content\":\"x\"}]",
	    "\"messages\":[{\"role\":\"wizard\",\"content\":\"x\"}]",
	    "\"messages\":[{\"role\":\"USER\",\"content\":\"x\"}]",
	    "\"messages\":[{\"content\":\"x\"}]",
	    "\"messages\":[{\"role\":\"user\"}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":1}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":true}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":{}}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[1]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[\"x\"]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"bogus\"}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":1}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":1,\"text\":\"x\"}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":1}"
	    "]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}"
	    "}]}"
	    "]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{"
	    "\"url\":5}}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"file\"}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"file\",\"file\":\"x\"}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"file\",\"file\":{\"file_"
	    "data\":"
	    "\"data:text/plain;base64,!!!notbase64\"}}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"file\",\"file\":{"
	    "\"file_data\":\"data:text/plain;base64,a===\"}}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"file\",\"file\":{\"file_"
	    "data\":"
	    "5}}]}]",
	    "\"messages\":[{\"role\":\"tool\",\"content\":\"42\"}]",
	    "\"messages\":[{\"role\":\"tool\",\"tool_call_id\":5,\"content\":\"42\"}]",
	    "\"messages\":[{\"role\":\"assistant\",\"content\":\"x\",\"tool_calls\":5}]",
	    "\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":1}]}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":\"\\ud800\"}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":\"\\udc00x\"}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":\"\\u12\"}]",
	    "\"messages\":[{\"role\":\"user\",\"content\":\"\\x41\"}]",
	};
	const gchar *bad_params[] = {
	    "\"temperature\":\"hot\"",
	    "\"temperature\":-1",
	    "\"temperature\":3",
	    "\"top_p\":\"x\"",
	    "\"top_p\":2",
	    "\"max_tokens\":-1",
	    "\"max_tokens\":\"10\"",
	    "\"max_tokens\":1.5",
	    "\"max_completion_tokens\":[]",
	    "\"stream\":\"yes\"",
	    "\"stream\":1",
	    "\"stream_options\":1",
	    "\"stream_options\":{\"include_usage\":\"yes\"}",
	    "\"metadata\":5",
	    "\"metadata\":{\"session_id\":5}",
	    "\"metadata\":{\"session_id\":\"cts_bad\"}",
	    "\"metadata\":{\"session_id\":\"agt_01m83kak8r5be847f8xe9e4pmd\"}",
	    "\"metadata\":{\"session_id\":\"cts_01m83kak8r5be847f8xe9e4pmd\"}",
	    "\"stop\":5",
	    "\"stop\":[1]",
	    "\"seed\":\"x\"",
	    "\"response_format\":\"json\"",
	    "\"user\":5",
	    "\"tools\":\"x\"",
	    "\"tools\":[1]",
	    "\"tool_choice\":5",
	    "\"n\":0",
	};
	const gchar *bad_models[] = {
	    "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	    "{\"model\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	    "{\"model\":null,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	    "{\"model\":\"\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	    "{\"model\":[],\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	    "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
	    "{\"model\":\"agt_01m83kak8r5be847f8xe9e4pmd\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\"}]}",
	};
	const gchar *not_json[] = {
	    "",
	    " ",
	    "null",
	    "true",
	    "1",
	    "\"x\"",
	    "[]",
	    "[{}]",
	    "{",
	    "}",
	    "{]",
	    "{\"model\"}",
	    "{\"model\":}",
	    "{\"a\":1,}",
	    "{'model':'x'}",
	    "{\"a\":1}{\"b\":2}",
	    "{\"a\":1} x",
	    "{\"a\":01}",
	    "{\"a\":1e999999}",
	    "{\"a\":NaN}",
	    "{\"a\":.5}",
	    "\xef\xbb\xbf{}",
	    "{\"a\":\"\t\"}",
	    "/* c */{}",
	};
	const struct {
		const gchar *method;
		const gchar *path;
	} bad_routes[] = {
	    {"GET", "/api/v1/chat/completions"},
	    {"PUT", "/api/v1/chat/completions"},
	    {"DELETE", "/api/v1/chat/completions"},
	    {"PATCH", "/api/v1/chat/completions"},
	    {"POST", "/api/v1/conversations"},
	    {"DELETE", "/api/v1/conversations"},
	    {"POST", "/api/v1/conversations/cts_01m83kak8r5be847f8xe9e4pmd/messages"},
	    {"GET", "/api/v1/conversations/cts_01m83kak8r5be847f8xe9e4pmd"},
	    {"GET", "/api/v1/conversations/cts_01m83kak8r5be847f8xe9e4pmd/messages/x"},
	    {"GET", "/api/v1/conversations//messages"},
	    {"GET", "/api/v1/conversations/x%2Fy/messages"},
	    {"GET", "/api/v1/conversations/cts_01m83kak8r5be847f8xe9e4pmd/messages"},
	    {"GET", "/api/v1/conversations/msg_01m83kak8r5be847f8xe9e4pmd/messages"},
	    {"GET", "/api/v1/conversations/%20/messages"},
	    {"GET", "/api/v1/"},
	    {"GET", "/api/v2/conversations"},
	    {"GET", "/"},
	    {"GET", "/api/v1/chat/completions/"},
	    {"GET", "/api/v1/conversations?limit=0"},
	    {"GET", "/api/v1/conversations?limit=101"},
	    {"GET", "/api/v1/conversations?limit=-1"},
	    {"GET", "/api/v1/conversations?limit=abc"},
	    {"GET", "/api/v1/conversations?limit=1e2"},
	    {"GET", "/api/v1/conversations?limit="},
	    {"GET", "/api/v1/conversations?limit=99999999999999999999"},
	    {"GET", "/api/v1/conversations?order=up"},
	    {"GET", "/api/v1/conversations?order="},
	    {"GET", "/api/v1/conversations?after=xyz"},
	    {"GET", "/api/v1/conversations?after=cts_"},
	    {"GET", "/api/v1/conversations?after=msg_01m83kak8r5be847f8xe9e4pmd"},
	    {"GET", "/api/v1/conversations?after=cts_01m83kak8r5be847f8xe9e4pm!"},
	    {"GET", "/api/v1/conversations?after=%ff%fe"},
	    {"GET", "/api/v1/conversations?after=cts_01M83KAK8R5BE847F8XE9E4PMD"},
	};
	const gchar *bad_types[] = {
	    NULL,
	    "text/plain",
	    "multipart/form-data; boundary=x",
	    "application/x-www-form-urlencoded",
	    "application/jsonp",
	    "application/xml",
	};
	gsize good_len = strlen(good);

	/* every truncation of a good body */
	for (gsize i = 0; i < good_len; i++) {
		g_autofree gchar *what = g_strdup_printf("truncated at %" G_GSIZE_FORMAT, i);
		post_chat(f, good, i, what);
	}
	for (guint i = 0; i < G_N_ELEMENTS(bad_messages); i++) {
		g_autofree gchar *body = with_field(f, bad_messages[i]);
		post_chat(f, body, -1, bad_messages[i]);
	}
	for (guint i = 0; i < G_N_ELEMENTS(bad_params); i++) {
		g_autofree gchar *body = g_strdup_printf(
		    "{\"model\":\"%s\",%s,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		    f->agent,
		    bad_params[i]);
		post_chat(f, body, -1, bad_params[i]);
	}
	for (guint i = 0; i < G_N_ELEMENTS(bad_models); i++)
		post_chat(f, bad_models[i], -1, bad_models[i]);
	for (guint i = 0; i < G_N_ELEMENTS(not_json); i++)
		post_chat(f, not_json[i], -1, not_json[i]);
	for (guint i = 0; i < G_N_ELEMENTS(bad_routes); i++)
		check_refused(f,
			      bad_routes[i].method,
			      bad_routes[i].path,
			      NULL,
			      NULL,
			      0,
			      bad_routes[i].path);
	for (guint i = 0; i < G_N_ELEMENTS(bad_types); i++)
		check_refused(f,
			      "POST",
			      "/api/v1/chat/completions",
			      bad_types[i],
			      good,
			      -1,
			      bad_types[i] != NULL ? bad_types[i] : "no content type");

	/* bytes that are not text */
	{
		const gchar *raw[] = {
		    "\xff\xfe",
		    "\xc0\xaf",
		    "\xed\xa0\x80",
		    "\xf4\x90\x80\x80",
		    "caf\xe9",
		    "\x80",
		};
		for (guint i = 0; i < G_N_ELEMENTS(raw); i++) {
			g_autofree gchar *body =
			    g_strdup_printf("{\"model\":\"%s\",\"messages\":[{\"role\":\"user\","
					    "\"content\":\"%s\"}]}",
					    f->agent,
					    raw[i]);
			post_chat(f, body, -1, "non-UTF-8");
		}
	}
	/* a raw NUL inside the body */
	{
		g_autofree gchar *body = g_strdup_printf(
		    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}",
		    f->agent);
		gsize len = strlen(body);
		for (gsize at = 1; at < len; at += 7) {
			g_autofree gchar *copy = g_memdup2(body, len);
			copy[at] = '\0';
			post_chat(f, copy, len, "NUL byte");
		}
	}
	/* nesting, from just past the limit to far past it */
	{
		const guint depths[] = {65, 100, 1000, 100000};
		for (guint i = 0; i < G_N_ELEMENTS(depths); i++) {
			GString *body = g_string_new(NULL);
			g_string_append_printf(body,
					       "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\","
					       "\"content\":\"x\",\"extra\":",
					       f->agent);
			for (guint d = 0; d < depths[i]; d++)
				g_string_append_c(body, '[');
			for (guint d = 0; d < depths[i]; d++)
				g_string_append_c(body, ']');
			g_string_append(body, "}]}");
			post_chat(f, body->str, body->len, "deep nesting");
			g_string_free(body, TRUE);
		}
	}
	/* sizes: a body over the cap, a file over its cap, too many files */
	{
		g_autofree gchar *pad = g_strnfill(300 * 1024, 'a');
		g_autofree gchar *big = g_strdup_printf(
		    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}",
		    f->agent,
		    pad);
		g_autofree gchar *raw = g_strnfill(2000, 'b');
		g_autofree gchar *b64 = g_base64_encode((const guchar *)raw, strlen(raw));
		g_autofree gchar *bigfile = g_strdup_printf(
		    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
		    "\"file\",\"file\":{\"filename\":\"b.txt\",\"file_data\":\"data:text/"
		    "plain;base64,%s\"}}]}]}",
		    f->agent,
		    b64);
		GString *many = g_string_new(NULL);

		post_chat(f, big, -1, "body over the cap");
		post_chat(f, bigfile, -1, "file over the cap");
		g_string_append_printf(
		    many,
		    "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":[",
		    f->agent);
		for (guint i = 0; i < 4; i++)
			g_string_append_printf(many,
					       "%s{\"type\":\"image_url\",\"image_url\":{\"url\":"
					       "\"https://example.com/%u.png\"}}",
					       i > 0 ? "," : "",
					       i);
		g_string_append(many, "]}]}");
		post_chat(f, many->str, many->len, "too many files");
		g_string_free(many, TRUE);
	}
	/* tokens */
	{
		const gchar *tokens[] = {"",
					 "Bearer",
					 "Bearer ",
					 "Basic abc",
					 "Bearer nca_",
					 "Bearer x",
					 "Bearer nca_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
		for (guint i = 0; i < G_N_ELEMENTS(tokens); i++) {
			g_autofree gchar *auth = g_strdup_printf("Authorization: %s", tokens[i]);
			const gchar *headers[] = {auth, "Content-Type: application/json", NULL};
			g_autoptr(GBytes) bytes = g_bytes_new(good, good_len);
			g_autoptr(ConfabTestResponse) r =
			    confab_test_http_full(f->daemon,
						  "POST",
						  "/api/v1/chat/completions",
						  i == 0 ? headers + 1 : headers,
						  bytes);
			g_assert_cmpuint(r->status, ==, 401);
			f->sent++;
		}
	}
	g_test_message("%u malformed requests refused", f->sent);
	g_assert_cmpuint(f->sent, >=, 300);

	/* the daemon lives, and no row was written */
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_http(f->daemon, "GET", "/api/v1/conversations", f->token, NULL);
		g_autoptr(GVariant) sessions = NULL;
		g_autoptr(GError) error = NULL;
		g_assert_cmpuint(r->status, ==, 200);
		g_assert_cmpuint(
		    json_array_get_length(
			json_object_get_array_member(json_node_get_object(r->json), "data")),
		    ==,
		    0);
		confab_dbus_admin_call_list_sessions_sync(f->daemon->admin,
							  g_variant_new("a{sv}", NULL),
							  &sessions,
							  NULL,
							  &error);
		g_assert_no_error(error);
		g_assert_cmpuint(g_variant_n_children(sessions), ==, 0);
	}
	/* and it still works */
	{
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(f->daemon, f->token, f->agent, NULL, "still here", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->daemon = confab_test_daemon_start(CONFIG, NULL);
	f->agent = confab_test_create_agent(f->daemon, "echo", "echo");
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	g_free(f->agent);
	g_free(f->token);
}

gint
main(gint argc, gchar **argv)
{
	confab_test_init(&argc, &argv, TRUE);
	g_test_add("/confab/bad-input/corpus",
		   Fixture,
		   NULL,
		   fixture_setup,
		   test_corpus,
		   fixture_teardown);
	return g_test_run();
}
