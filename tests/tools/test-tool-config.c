/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "tools/confab-tool-config.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/* An agent's mcp_servers: what is taken, what is refused and how it says
 * so, and the secrets: masked when shown, kept when sent back masked. */

#define FULL                                                                                       \
	"{\"$schema\":\"https://example.com/mcp.json\",\"mcpServers\":{"                           \
	"\"fs\":{\"command\":\"npx\",\"args\":[\"-y\",\"server-filesystem\",\"/srv\"],"            \
	"\"env\":{\"DEBUG\":\"1\",\"API_KEY\":\"s3cret\"},\"cwd\":\"/srv\",\"allow\":[\"read\","   \
	"\"list\"],\"timeout\":0.5,\"type\":\"stdio\"},"                                           \
	"\"docs_2\":{\"url\":\"https://docs.example.com/mcp\",\"headers\":{\"X-Api-Key\":"         \
	"\"k1\",\"X-Team\":\"blue\"},\"bearer_token_file\":\"/etc/confab/docs.token\","            \
	"\"type\":\"http\"}}}"

static void
test_valid(void)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabToolConfig) config = confab_tool_config_parse(FULL, &error);
	const ConfabToolConfigServer *fs;
	const ConfabToolConfigServer *docs;
	const gchar *argv[] = {"npx", "-y", "server-filesystem", "/srv", NULL};
	const gchar *env[] = {"DEBUG=1", "API_KEY=s3cret", NULL};
	const gchar *header_names[] = {"X-Api-Key", "X-Team", NULL};
	const gchar *header_values[] = {"k1", "blue", NULL};

	g_assert_no_error(error);
	g_assert_nonnull(config);
	g_assert_cmpuint(confab_tool_config_get_n_servers(config), ==, 2);
	fs = confab_tool_config_get_server(config, 0);
	docs = confab_tool_config_get_server(config, 1);
	g_assert_true(confab_tool_config_lookup_server(config, "docs_2") == docs);
	g_assert_null(confab_tool_config_lookup_server(config, "nope"));

	g_assert_cmpstr(confab_tool_config_server_get_name(fs), ==, "fs");
	g_assert_cmpint(confab_tool_config_server_get_kind(fs), ==, CONFAB_TOOL_CONFIG_KIND_STDIO);
	g_assert_true(g_strv_equal(confab_tool_config_server_get_argv(fs), argv));
	g_assert_true(g_strv_equal(confab_tool_config_server_get_env(fs), env));
	g_assert_cmpstr(confab_tool_config_server_get_cwd(fs), ==, "/srv");
	g_assert_null(confab_tool_config_server_get_url(fs));
	g_assert_cmpuint(confab_tool_config_server_get_timeout_ms(fs), ==, 500);
	g_assert_true(confab_tool_config_server_allows(fs, "read"));
	g_assert_false(confab_tool_config_server_allows(fs, "write"));
	g_assert_cmpuint(g_strv_length((gchar **)confab_tool_config_server_get_allow(fs)), ==, 2);

	g_assert_cmpstr(confab_tool_config_server_get_name(docs), ==, "docs_2");
	g_assert_cmpint(confab_tool_config_server_get_kind(docs), ==, CONFAB_TOOL_CONFIG_KIND_HTTP);
	g_assert_null(confab_tool_config_server_get_argv(docs));
	g_assert_null(confab_tool_config_server_get_env(docs));
	g_assert_cmpstr(confab_tool_config_server_get_url(docs),
			==,
			"https://docs.example.com/mcp");
	g_assert_true(g_strv_equal(confab_tool_config_server_get_header_names(docs), header_names));
	g_assert_true(
	    g_strv_equal(confab_tool_config_server_get_header_values(docs), header_values));
	g_assert_cmpstr(confab_tool_config_server_get_bearer_token_file(docs),
			==,
			"/etc/confab/docs.token");
	g_assert_null(confab_tool_config_server_get_allow(docs));
	g_assert_true(confab_tool_config_server_allows(docs, "anything"));
	g_assert_cmpuint(confab_tool_config_server_get_timeout_ms(docs), ==, 60000);
	g_assert_cmpstr(confab_tool_config_server_get_fingerprint(fs),
			!=,
			confab_tool_config_server_get_fingerprint(docs));
}

static void
test_minimal(void)
{
	const gchar *empty[] =
	    {NULL, "", "  \n", "{}", "{\"mcpServers\":{}}", "{\"$schema\":\"x\"}"};

	for (guint i = 0; i < G_N_ELEMENTS(empty); i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabToolConfig) config = confab_tool_config_parse(empty[i], &error);
		g_assert_no_error(error);
		g_assert_cmpuint(confab_tool_config_get_n_servers(config), ==, 0);
	}
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(ConfabToolConfig) config = confab_tool_config_parse(
		    "{\"mcpServers\":{\"a\":{\"command\":\"x\"},\"b\":{\"url\":\"http://h:1/mcp\","
		    "\"type\":\"streamable-http\",\"timeout\":3600},\"c\":{\"command\":\"y\","
		    "\"allow\":[]}}}",
		    &error);
		const gchar *argv[] = {"x", NULL};
		const ConfabToolConfigServer *a;

		g_assert_no_error(error);
		g_assert_cmpuint(confab_tool_config_get_n_servers(config), ==, 3);
		a = confab_tool_config_get_server(config, 0);
		g_assert_true(g_strv_equal(confab_tool_config_server_get_argv(a), argv));
		g_assert_cmpuint(g_strv_length((gchar **)confab_tool_config_server_get_env(a)),
				 ==,
				 0);
		g_assert_null(confab_tool_config_server_get_cwd(a));
		g_assert_cmpuint(confab_tool_config_server_get_timeout_ms(
				     confab_tool_config_get_server(config, 1)),
				 ==,
				 3600000);
		/* an empty allow list offers nothing */
		g_assert_false(
		    confab_tool_config_server_allows(confab_tool_config_get_server(config, 2),
						     "x"));
	}
}

typedef struct {
	const gchar *json;
	const gchar *message; /* a part of the error message */
} Refusal;

static const Refusal refusals[] = {
    {"{", "mcp_servers is not valid JSON"},
    {"[]", "mcp_servers must be a JSON object"},
    {"{\"servers\":{}}", "“servers” is not a key Confab knows"},
    {"{\"$schema\":1}", "“$schema” must be a string"},
    {"{\"mcpServers\":[]}", "“mcpServers” must be an object"},
    {"{\"mcpServers\":{\"Fs\":{\"command\":\"x\"}}}", "the server name “Fs” must be 1 to 32"},
    {"{\"mcpServers\":{\"\":{\"command\":\"x\"}}}", "the server name “” must be 1 to 32"},
    {"{\"mcpServers\":{\"a.b\":{\"command\":\"x\"}}}", "the server name “a.b”"},
    {"{\"mcpServers\":{\"abcdefghijklmnopqrstuvwxyz0123456\":{\"command\":\"x\"}}}",
     "must be 1 to 32"},
    {"{\"mcpServers\":{\"fs\":\"npx\"}}", "server “fs”: must be an object"},
    {"{\"mcpServers\":{\"fs\":{\"cmd\":\"x\"}}}", "server “fs”: “cmd” is not a key"},
    {"{\"mcpServers\":{\"fs\":{\"args\":[]}}}", "server “fs”: needs “command” (stdio) or “url”"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"url\":\"http://h/\"}}}",
     "server “fs”: has both “command” (stdio) and “url” (HTTP)"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"headers\":{}}}}",
     "server “fs”: “headers” is for HTTP servers"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"bearer_token_file\":\"/t\"}}}",
     "server “fs”: “bearer_token_file” is for HTTP servers"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"http://h/mcp\",\"env\":{}}}}",
     "server “w”: “env” is for stdio servers"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"http://h/mcp\",\"cwd\":\"/\"}}}",
     "server “w”: “cwd” is for stdio servers"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"\"}}}",
     "server “fs”: “command” must be a string that is not empty"},
    {"{\"mcpServers\":{\"fs\":{\"command\":[\"x\"]}}}", "server “fs”: “command” must be a string"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"args\":\"-y\"}}}",
     "server “fs”: “args” must be an array of strings"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"args\":[1]}}}",
     "server “fs”: “args” must be an array of strings"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"env\":{\"A\":1}}}}",
     "server “fs”: “env” must be an object of strings"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"env\":{\"1A\":\"v\"}}}}",
     "server “fs”: “env” names “1A”, not a variable name"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"env\":[]}}}",
     "server “fs”: “env” must be an object of strings"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"cwd\":\"srv\"}}}",
     "server “fs”: “cwd” must be an absolute path"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"ftp://h/mcp\"}}}",
     "server “w”: “url” must be http:// or https:// with a host"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"http:///mcp\"}}}", "server “w”: “url” must be http://"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"not a url\"}}}", "server “w”: “url” is not a URL"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"http://h/\",\"headers\":{\"Content-Type\":\"x\"}}}}",
     "server “w”: “headers” cannot set Content-Type"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"http://h/\",\"headers\":{\"A B\":\"x\"}}}}",
     "server “w”: “headers” names “A B”, not a header name"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"http://h/\",\"headers\":{\"X\":\"a\\r\\nB: c\"}}}}",
     "server “w”: “headers” “X” holds a control character"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"http://h/\",\"headers\":{\"authorization\":\"x\"},"
     "\"bearer_token_file\":\"/t\"}}}",
     "server “w”: “headers” cannot set Authorization with “bearer_token_file”"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"http://h/\",\"bearer_token_file\":\"t\"}}}",
     "server “w”: “bearer_token_file” must be an absolute path"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"allow\":\"read\"}}}",
     "server “fs”: “allow” must be an array of strings"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"allow\":[\"\"]}}}",
     "server “fs”: “allow” must hold names of 1 to 128 bytes"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"allow\":[\"a\",\"a\"]}}}",
     "server “fs”: “allow” names “a” twice"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"timeout\":0}}}",
     "server “fs”: “timeout” must be more than 0 and at most 3600 seconds"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"timeout\":-1}}}",
     "“timeout” must be more than 0"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"timeout\":3600.5}}}",
     "“timeout” must be more than 0"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"timeout\":\"60\"}}}",
     "server “fs”: “timeout” must be a number of seconds"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"timeout\":true}}}",
     "“timeout” must be a number of seconds"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"http://h/\",\"type\":\"sse\"}}}",
     "server “w”: “type” is “sse”, the HTTP+SSE transport MCP deprecated"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"http://h/\",\"type\":\"ws\"}}}",
     "server “w”: “type” must be “stdio”, “http” or “streamable-http”"},
    {"{\"mcpServers\":{\"w\":{\"url\":\"http://h/\",\"type\":\"stdio\"}}}",
     "server “w”: “type” is “stdio”, but the server has “url”"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"type\":\"http\"}}}",
     "server “fs”: “type” is “http”, but the server has “command”"},
    {"{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"args\":[[[[[[[[[[[[[[[[[\"deep\"]]]]]]]]]]]]]]]]"
     "]}}}",
     "mcp_servers is not valid JSON"},
};

static void
assert_refused(const gchar *json, const gchar *message)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabToolConfig) config = confab_tool_config_parse(json, &error);

	g_assert_null(config);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	g_assert_cmpstr(confab_error_get_param(error), ==, "mcp_servers");
	if (strstr(error->message, message) == NULL)
		g_error("%s: expected “%s”, got “%s”", json, message, error->message);
}

static void
test_refused(void)
{
	for (guint i = 0; i < G_N_ELEMENTS(refusals); i++)
		assert_refused(refusals[i].json, refusals[i].message);
}

static void
test_too_many_servers(void)
{
	g_autoptr(GString) json = g_string_new("{\"mcpServers\":{");
	g_autoptr(ConfabToolConfig) config = NULL;
	g_autoptr(GError) error = NULL;

	for (guint i = 0; i < CONFAB_TOOL_CONFIG_MAX_SERVERS; i++)
		g_string_append_printf(json, "%s\"s%u\":{\"command\":\"x\"}", i > 0 ? "," : "", i);
	g_string_append(json, "}}");
	config = confab_tool_config_parse(json->str, &error);
	g_assert_no_error(error);
	g_assert_cmpuint(confab_tool_config_get_n_servers(config), ==, 32);
	g_string_truncate(json, json->len - 2);
	g_string_append(json, ",\"one_more\":{\"command\":\"x\"}}}");
	assert_refused(json->str, "“mcpServers” has more than 32 servers");
}

/* A valid config of exactly @size bytes. */
static gchar *
config_of_size(gsize size)
{
	const gchar *head = "{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"args\":[\"";
	const gchar *tail = "\"]}}}";
	GString *json = g_string_new(head);
	gsize fill = size - strlen(head) - strlen(tail);

	for (gsize i = 0; i < fill; i++)
		g_string_append_c(json, 'a');
	g_string_append(json, tail);
	g_assert_cmpuint(json->len, ==, size);
	return g_string_free(json, FALSE);
}

static void
test_size_cap(void)
{
	g_autofree gchar *fits = config_of_size(CONFAB_TOOL_CONFIG_MAX_BYTES);
	g_autofree gchar *too_large = config_of_size(CONFAB_TOOL_CONFIG_MAX_BYTES + 1);
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabToolConfig) config = confab_tool_config_parse(fits, &error);

	g_assert_no_error(error);
	g_assert_cmpuint(confab_tool_config_get_n_servers(config), ==, 1);
	assert_refused(too_large, "mcp_servers is larger than 64 KiB");
}

static void
test_mask(void)
{
	g_autofree gchar *masked = confab_tool_config_mask(FULL);
	g_autofree gchar *odd = NULL;
	g_autofree gchar *empty = confab_tool_config_mask("  ");

	/* compact, keys in their order, secrets gone, the rest as it was */
	g_assert_cmpstr(
	    masked,
	    ==,
	    "{\"$schema\":\"https://example.com/mcp.json\",\"mcpServers\":{"
	    "\"fs\":{\"command\":\"npx\",\"args\":[\"-y\",\"server-filesystem\",\"/srv\"],"
	    "\"env\":{\"DEBUG\":\"********\",\"API_KEY\":\"********\"},\"cwd\":\"/srv\","
	    "\"allow\":[\"read\",\"list\"],\"timeout\":0.5,\"type\":\"stdio\"},"
	    "\"docs_2\":{\"url\":\"https://docs.example.com/mcp\",\"headers\":{\"X-Api-Key\":"
	    "\"********\",\"X-Team\":\"********\"},\"bearer_token_file\":\"/etc/confab/"
	    "docs.token\","
	    "\"type\":\"http\"}}}");
	g_assert_null(strstr(masked, "s3cret"));
	g_assert_null(strstr(masked, "k1"));
	/* text that is not JSON is never shown */
	g_assert_null(confab_tool_config_mask("{\"mcpServers\":{\"a\":{\"env\":{\"K\":\"secret\""));
	g_assert_cmpstr(empty, ==, "");
	/* a secret where a config would not have one is masked all the same */
	odd = confab_tool_config_mask("{\"mcpServers\":{\"a\":{\"env\":\"K=secret\"},\"b\":1}}");
	g_assert_cmpstr(odd,
			==,
			"{\"mcpServers\":{\"a\":{\"env\":\"********\"},\"b\":\"********\"}}");
}

/* The two texts hold the same JSON. */
static void
assert_same_json(const gchar *a, const gchar *b)
{
	g_autoptr(JsonNode) na = confab_json_from_string(a);
	g_autoptr(JsonNode) nb = confab_json_from_string(b);
	g_autofree gchar *ta = confab_json_to_string(na);
	g_autofree gchar *tb = confab_json_to_string(nb);

	g_assert_cmpstr(ta, ==, tb);
}

static gchar *
replace(const gchar *text, const gchar *from, const gchar *to)
{
	g_auto(GStrv) parts = g_strsplit(text, from, -1);
	g_assert_cmpuint(g_strv_length(parts), ==, 2);
	return g_strjoinv(to, parts);
}

/* replace(), taking @text */
static gchar *
replace_take(gchar *text, const gchar *from, const gchar *to)
{
	g_autofree gchar *old = text;
	return replace(old, from, to);
}

static void
assert_merge_refused(const gchar *old, const gchar *new, const gchar *message)
{
	g_autoptr(GError) error = NULL;
	gchar *merged = NULL;

	g_assert_false(confab_tool_config_merge_masked(old, new, &merged, &error));
	g_assert_null(merged);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	g_assert_cmpstr(confab_error_get_param(error), ==, "mcp_servers");
	if (strstr(error->message, message) == NULL)
		g_error("expected “%s”, got “%s”", message, error->message);
}

static void
test_merge_masked(void)
{
	g_autofree gchar *masked = confab_tool_config_mask(FULL);
	g_autofree gchar *merged = NULL;
	g_autofree gchar *edited = NULL;
	g_autofree gchar *merged_edit = NULL;
	g_autofree gchar *expected_edit = NULL;
	g_autofree gchar *new_key = NULL;
	g_autofree gchar *moved_url = NULL;
	g_autofree gchar *moved_command = NULL;
	g_autofree gchar *renamed = NULL;
	g_autofree gchar *unchanged = NULL;
	const gchar *plain =
	    "{ \"mcpServers\": {\"a\": {\"command\": \"x\", \"env\": {\"K\": \"v\"}}} }";
	g_autoptr(GError) error = NULL;

	/* read masked, sent back as it is: the secrets stay */
	g_assert_true(confab_tool_config_merge_masked(FULL, masked, &merged, &error));
	g_assert_no_error(error);
	assert_same_json(merged, FULL);

	/* an edit next to masked secrets: the edit is taken, the secrets stay,
	 * a new value replaces its secret */
	edited = replace(masked, "\"timeout\":0.5", "\"timeout\":2");
	edited =
	    replace_take(g_steal_pointer(&edited), "\"X-Team\":\"********\"", "\"X-Team\":\"red\"");
	g_assert_true(confab_tool_config_merge_masked(FULL, edited, &merged_edit, &error));
	g_assert_no_error(error);
	expected_edit = replace(FULL, "\"timeout\":0.5", "\"timeout\":2");
	expected_edit = replace_take(g_steal_pointer(&expected_edit),
				     "\"X-Team\":\"blue\"",
				     "\"X-Team\":\"red\"");
	assert_same_json(merged_edit, expected_edit);

	/* nothing masked: the text as sent, spaces and all */
	g_assert_true(confab_tool_config_merge_masked(FULL, plain, &unchanged, &error));
	g_assert_cmpstr(unchanged, ==, plain);

	/* a masked value with nothing stored to keep */
	new_key = replace(masked,
			  "\"DEBUG\":\"********\"",
			  "\"DEBUG\":\"********\",\"NEW\":\"********\"");
	assert_merge_refused(
	    FULL,
	    new_key,
	    "server “fs”: “env” “NEW” is masked (********) but there is no stored value");
	assert_merge_refused(NULL, masked, "“env” “DEBUG” is masked");
	renamed = replace(masked, "\"fs\":", "\"files\":");
	assert_merge_refused(FULL, renamed, "server “files”: “env” “DEBUG” is masked");
	/* a secret does not follow its server elsewhere */
	moved_url = replace(masked, "https://docs.example.com/mcp", "https://attacker.example/mcp");
	assert_merge_refused(
	    FULL,
	    moved_url,
	    "server “docs_2”: “headers” “X-Api-Key” is masked (********) but “url” changed");
	moved_command = replace(masked, "\"command\":\"npx\"", "\"command\":\"sh\"");
	assert_merge_refused(FULL,
			     moved_command,
			     "“env” “DEBUG” is masked (********) but “command” changed");
	/* and the new text is checked as any */
	assert_merge_refused(FULL, "{\"mcpServers\":{\"a\":{}}}", "needs “command”");
}

/* require_approval: OpenAI's shape, and what each form means */
static gboolean
needs_approval(const gchar *policy, const gchar *tool)
{
	g_autofree gchar *json =
	    g_strdup_printf("{\"mcpServers\":{\"fs\":{\"command\":\"x\"%s%s}}}",
			    policy != NULL ? ",\"require_approval\":" : "",
			    policy != NULL ? policy : "");
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabToolConfig) config = confab_tool_config_parse(json, &error);

	g_assert_no_error(error);
	return confab_tool_config_server_requires_approval(
	    confab_tool_config_lookup_server(config, "fs"),
	    tool);
}

static void
test_require_approval(void)
{
	g_assert_false(needs_approval(NULL, "write_file"));
	g_assert_false(needs_approval("\"never\"", "write_file"));
	g_assert_true(needs_approval("\"always\"", "read_file"));
	/* only "always": the rest need none */
	g_assert_true(
	    needs_approval("{\"always\":{\"tool_names\":[\"write_file\"]}}", "write_file"));
	g_assert_false(
	    needs_approval("{\"always\":{\"tool_names\":[\"write_file\"]}}", "read_file"));
	/* "never" names the exceptions: the rest need approval */
	g_assert_false(needs_approval("{\"never\":{\"tool_names\":[\"read_file\"]}}", "read_file"));
	g_assert_true(needs_approval("{\"never\":{\"tool_names\":[\"read_file\"]}}", "write_file"));
	g_assert_true(
	    needs_approval("{\"always\":{\"tool_names\":[\"a\"]},\"never\":{\"tool_names\":["
			   "\"b\"]}}",
			   "c"));
	g_assert_false(
	    needs_approval("{\"always\":{\"tool_names\":[\"a\"]},\"never\":{\"tool_names\":["
			   "\"b\"]}}",
			   "b"));
}

static void
test_require_approval_refused(void)
{
	const struct {
		const gchar *policy;
		const gchar *message;
	} cases[] = {
	    {"\"sometimes\"", "server “fs”: “require_approval” must be “never”, “always” or"},
	    {"true", "“require_approval” must be “never”, “always” or"},
	    {"{}", "“require_approval” must be “never”, “always” or"},
	    {"{\"always\":[\"a\"]}", "“require_approval” must be"},
	    {"{\"maybe\":{\"tool_names\":[]}}", "“require_approval” has “maybe”"},
	    {"{\"always\":{\"names\":[]}}", "has “names”; a list holds only “tool_names”"},
	    {"{\"always\":{}}", "has a list without “tool_names”"},
	    {"{\"always\":{\"tool_names\":[1]}}", "“require_approval” must be an array of strings"},
	    {"{\"always\":{\"tool_names\":[\"a\"]},\"never\":{\"tool_names\":[\"a\"]}}",
	     "names “a” in both “always” and “never”"},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *json = g_strdup_printf(
		    "{\"mcpServers\":{\"fs\":{\"command\":\"x\",\"require_approval\":%s}}}",
		    cases[i].policy);
		assert_refused(json, cases[i].message);
	}
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/tool-config/valid", test_valid);
	g_test_add_func("/confab/tool-config/minimal", test_minimal);
	g_test_add_func("/confab/tool-config/refused", test_refused);
	g_test_add_func("/confab/tool-config/too-many-servers", test_too_many_servers);
	g_test_add_func("/confab/tool-config/size-cap", test_size_cap);
	g_test_add_func("/confab/tool-config/mask", test_mask);
	g_test_add_func("/confab/tool-config/merge-masked", test_merge_masked);
	g_test_add_func("/confab/tool-config/require-approval", test_require_approval);
	g_test_add_func("/confab/tool-config/require-approval-refused",
			test_require_approval_refused);
	return g_test_run();
}
