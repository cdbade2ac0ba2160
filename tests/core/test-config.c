/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <glib/gstdio.h>
#include <string.h>

#include "confab-test-helper.h"
#include "core/confab-config.h"
#include "util/confab-error.h"

/* The config file: defaults, every key, and refusals that name the key. */

static void
test_defaults(void)
{
	g_autoptr(ConfabConfig) config = NULL;

	g_unsetenv("CREDENTIALS_DIRECTORY");
	config = confab_config_new();

	g_assert_cmpstr(config->listen, ==, "127.0.0.1:8080");
	g_assert_cmpstr(config->state_dir, ==, CONFAB_DEFAULT_STATE_DIR);
	g_assert_cmpstr(config->bus, ==, "system");
	g_assert_cmpuint(config->shutdown_grace, ==, 10);
	/* the contract's defaults */
	g_assert_cmpuint(config->max_body_bytes, ==, 32 * 1024 * 1024);
	g_assert_cmpuint(config->max_files_per_message, ==, 10);
	g_assert_cmpuint(config->max_file_bytes, ==, 25 * 1024 * 1024);
	g_assert_cmpuint(config->max_json_depth, >=, 8);
	g_assert_cmpuint(config->max_json_depth, <=, 10000);
	/* unlimited quota unless the file says otherwise */
	g_assert_cmpuint(config->default_monthly_requests, ==, 0);
	g_assert_cmpuint(config->default_rpm, ==, 0);
	g_assert_cmpuint(config->default_max_parallel, ==, 0);
	g_assert_cmpuint(config->default_tpm, ==, 0);
	g_assert_cmpuint(config->default_monthly_tokens, ==, 0);
	g_assert_cmpuint(config->token_reservation, ==, 1024);
	g_assert_cmpuint(config->upstream_connect_timeout, >, 0);
	g_assert_cmpuint(config->upstream_total_timeout, >=, config->upstream_first_byte_timeout);
	/* a stream's head waits 15 s at most for an upstream's answer */
	g_assert_cmpuint(config->stream_head_wait, ==, 15);
	g_assert_cmpuint(config->read_connections, >=, 1);
	g_assert_cmpstr(config->credentials_dir, ==, "/etc/confab/keys");
	/* the contract's approval timeout */
	g_assert_cmpuint(config->tool_approval_timeout, ==, 120);
}

/* Under systemd, LoadCredential= says where the keys are. */
static void
test_credentials_directory(void)
{
	g_autoptr(ConfabConfig) config = NULL;
	g_autoptr(ConfabConfig) empty = NULL;

	g_setenv("CREDENTIALS_DIRECTORY", "/run/credentials/confab.service", TRUE);
	config = confab_config_new();
	g_assert_cmpstr(config->credentials_dir, ==, "/run/credentials/confab.service");
	g_setenv("CREDENTIALS_DIRECTORY", "", TRUE);
	empty = confab_config_new();
	g_assert_cmpstr(empty->credentials_dir, ==, "/etc/confab/keys");
	g_unsetenv("CREDENTIALS_DIRECTORY");
	/* the file wins */
	g_assert_true(
	    confab_config_load_data(config, "[upstream]\ncredentials_dir=/srv/keys\n", NULL));
	g_assert_cmpstr(config->credentials_dir, ==, "/srv/keys");
}

static void
test_empty_file_keeps_defaults(void)
{
	g_autoptr(ConfabConfig) config = confab_config_new();
	g_autoptr(ConfabConfig) defaults = confab_config_new();
	g_autoptr(GError) error = NULL;

	g_assert_true(confab_config_load_data(config, "", &error));
	g_assert_no_error(error);
	g_assert_true(confab_config_load_data(config, "# only a comment\n\n[daemon]\n", &error));
	g_assert_no_error(error);
	g_assert_cmpstr(config->listen, ==, defaults->listen);
	g_assert_cmpuint(config->max_body_bytes, ==, defaults->max_body_bytes);
	g_assert_cmpuint(config->idle_timeout, ==, defaults->idle_timeout);
}

static void
test_every_section(void)
{
	g_autoptr(ConfabConfig) config = confab_config_new();
	g_autoptr(GError) error = NULL;
	const gchar *text = "[daemon]\n"
			    "listen=0.0.0.0:9000\n"
			    "state_dir=/srv/confab\n"
			    "bus=session\n"
			    "shutdown_grace=30\n"
			    "serving_threads=4\n"
			    "[limits]\n"
			    "max_body_bytes=2048\n"
			    "max_json_depth=100\n"
			    "max_files_per_message=3\n"
			    "max_file_bytes=1000\n"
			    "max_connections=50\n"
			    "max_inflight_turns=7\n"
			    "idle_timeout=5\n"
			    "max_header_bytes=8192\n"
			    "max_stream_buffer=65536\n"
			    "[http]\n"
			    "stream_head_wait=2\n"
			    "[quota]\n"
			    "default_monthly_requests=12345678901\n"
			    "default_rpm=60\n"
			    "default_max_parallel=4\n"
			    "[upstream]\n"
			    "connect_timeout=3\n"
			    "first_byte_timeout=4\n"
			    "idle_timeout=6\n"
			    "total_timeout=600\n"
			    "max_retries=0\n"
			    "max_connections=9\n"
			    "credentials_dir=/srv/confab/keys\n"
			    "[storage]\n"
			    "read_connections=5\n";

	g_assert_true(confab_config_load_data(config, text, &error));
	g_assert_no_error(error);
	g_assert_cmpstr(config->listen, ==, "0.0.0.0:9000");
	g_assert_cmpstr(config->state_dir, ==, "/srv/confab");
	g_assert_cmpstr(config->bus, ==, "session");
	g_assert_cmpuint(config->shutdown_grace, ==, 30);
	g_assert_cmpuint(config->serving_threads, ==, 4);
	g_assert_cmpuint(config->max_body_bytes, ==, 2048);
	g_assert_cmpuint(config->max_json_depth, ==, 100);
	g_assert_cmpuint(config->max_files_per_message, ==, 3);
	g_assert_cmpuint(config->max_file_bytes, ==, 1000);
	g_assert_cmpuint(config->max_connections, ==, 50);
	g_assert_cmpuint(config->stream_head_wait, ==, 2);
	g_assert_cmpuint(config->max_inflight_turns, ==, 7);
	/* [limits] idle_timeout and [upstream] idle_timeout are different keys */
	g_assert_cmpuint(config->idle_timeout, ==, 5);
	g_assert_cmpuint(config->upstream_idle_timeout, ==, 6);
	g_assert_cmpuint(config->max_header_bytes, ==, 8192);
	g_assert_cmpuint(config->max_stream_buffer, ==, 65536);
	g_assert_cmpuint(config->default_monthly_requests, ==, G_GUINT64_CONSTANT(12345678901));
	g_assert_cmpuint(config->default_rpm, ==, 60);
	g_assert_cmpuint(config->default_max_parallel, ==, 4);
	g_assert_cmpuint(config->upstream_connect_timeout, ==, 3);
	g_assert_cmpuint(config->upstream_first_byte_timeout, ==, 4);
	g_assert_cmpuint(config->upstream_total_timeout, ==, 600);
	g_assert_cmpuint(config->upstream_max_retries, ==, 0);
	/* [upstream] max_connections does not touch [limits] max_connections */
	g_assert_cmpuint(config->upstream_max_connections, ==, 9);
	g_assert_cmpuint(config->max_connections, ==, 50);
	g_assert_cmpstr(config->credentials_dir, ==, "/srv/confab/keys");
	g_assert_cmpuint(config->read_connections, ==, 5);
}

static void
test_partial_override(void)
{
	g_autoptr(ConfabConfig) config = confab_config_new();
	g_autoptr(ConfabConfig) defaults = confab_config_new();
	g_autoptr(GError) error = NULL;

	g_assert_true(confab_config_load_data(config,
					      "[limits]\nmax_json_depth = 32 \n"
					      "unknown_key=1\n[unknown_group]\nx=y\n",
					      &error));
	g_assert_no_error(error);
	g_assert_cmpuint(config->max_json_depth, ==, 32);
	g_assert_cmpuint(config->max_body_bytes, ==, defaults->max_body_bytes);
	g_assert_cmpstr(config->listen, ==, defaults->listen);
	/* a second file overrides only what it names */
	g_assert_true(confab_config_load_data(config, "[daemon]\nlisten=[::1]:1234\n", &error));
	g_assert_cmpstr(config->listen, ==, "[::1]:1234");
	g_assert_cmpuint(config->max_json_depth, ==, 32);
}

static void
assert_bad_value(const gchar *group, const gchar *key, const gchar *value)
{
	g_autoptr(ConfabConfig) config = confab_config_new();
	g_autoptr(GError) error = NULL;
	g_autofree gchar *text = g_strdup_printf("[%s]\n%s=%s\n", group, key, value);
	g_autofree gchar *needle = g_strdup_printf("[%s] %s", group, key);

	if (confab_config_load_data(config, text, &error))
		g_error("[%s] %s=%s accepted", group, key, value);
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	/* the message names the group and the key */
	if (strstr(error->message, needle) == NULL)
		g_error("message '%s' does not name %s", error->message, needle);
}

static void
test_bad_values(void)
{
	const gchar *not_numbers[] = {"", "abc", "-1", "+5", "1.5", "0x10", "1e3", "12abc", "1 2"};
	for (guint i = 0; i < G_N_ELEMENTS(not_numbers); i++)
		assert_bad_value("limits", "max_json_depth", not_numbers[i]);

	/* out of range, both ends */
	assert_bad_value("limits", "max_json_depth", "7");
	assert_bad_value("limits", "max_json_depth", "10001");
	assert_bad_value("limits", "max_body_bytes", "1023");
	assert_bad_value("limits", "max_body_bytes", "99999999999");
	assert_bad_value("limits", "max_connections", "0");
	assert_bad_value("limits", "max_inflight_turns", "0");
	assert_bad_value("limits", "idle_timeout", "0");
	assert_bad_value("limits", "max_header_bytes", "100");
	assert_bad_value("limits", "max_stream_buffer", "10");
	assert_bad_value("limits", "max_files_per_message", "1001");
	assert_bad_value("daemon", "shutdown_grace", "3601");
	assert_bad_value("daemon", "serving_threads", "65");
	assert_bad_value("quota", "default_monthly_requests", "-1");
	assert_bad_value("quota", "default_monthly_requests", "18446744073709551616");
	assert_bad_value("upstream", "connect_timeout", "0");
	assert_bad_value("upstream", "first_byte_timeout", "0");
	assert_bad_value("upstream", "idle_timeout", "0");
	assert_bad_value("upstream", "total_timeout", "86401");
	assert_bad_value("upstream", "max_retries", "11");
	assert_bad_value("upstream", "max_connections", "0");
	assert_bad_value("storage", "read_connections", "0");
	assert_bad_value("storage", "read_connections", "65");
	assert_bad_value("metrics", "local_unauthenticated", "yes");
	assert_bad_value("metrics", "local_unauthenticated", "");
	/* a number that wraps a 32-bit unsigned is refused, not truncated */
	assert_bad_value("limits", "max_json_depth", "4294967360");
}

static void
test_range_ends_accepted(void)
{
	g_autoptr(ConfabConfig) config = confab_config_new();
	g_autoptr(GError) error = NULL;

	g_assert_true(confab_config_load_data(config,
					      "[limits]\nmax_json_depth=8\nmax_body_bytes=1024\n"
					      "max_files_per_message=0\nmax_file_bytes=0\n"
					      "[upstream]\nmax_retries=10\n"
					      "[daemon]\nshutdown_grace=0\n"
					      "[metrics]\nlocal_unauthenticated = true\n",
					      &error));
	g_assert_no_error(error);
	g_assert_true(config->metrics_local_unauthenticated);
	g_assert_cmpuint(config->max_json_depth, ==, 8);
	g_assert_cmpuint(config->max_body_bytes, ==, 1024);
	g_assert_cmpuint(config->max_files_per_message, ==, 0);
	g_assert_cmpuint(config->upstream_max_retries, ==, 10);
	g_assert_cmpuint(config->shutdown_grace, ==, 0);
	g_assert_true(confab_config_load_data(config, "[limits]\nmax_json_depth=10000\n", &error));
	g_assert_cmpuint(config->max_json_depth, ==, 10000);
}

static void
test_bad_syntax(void)
{
	g_autoptr(ConfabConfig) config = confab_config_new();
	g_autoptr(GError) error = NULL;

	g_assert_false(confab_config_load_data(config, "listen=1.2.3.4:5\n", &error));
	g_assert_nonnull(error);
	g_clear_error(&error);
	g_assert_false(confab_config_load_data(config, "[daemon\nlisten=x\n", &error));
	g_assert_nonnull(error);
	g_clear_error(&error);
	g_assert_false(confab_config_load_data(config, "[daemon]\nthis is not a key\n", &error));
	g_assert_nonnull(error);
}

static void
test_load_file(void)
{
	g_autofree gchar *dir = confab_test_make_tmpdir("config");
	g_autofree gchar *path = g_build_filename(dir, "confab.conf", NULL);
	g_autofree gchar *missing = g_build_filename(dir, "missing.conf", NULL);
	g_autoptr(ConfabConfig) config = confab_config_new();
	g_autoptr(GError) error = NULL;

	g_assert_true(g_file_set_contents(path,
					  "[daemon]\nlisten=127.0.0.1:0\n[quota]\n"
					  "default_monthly_requests=100\n",
					  -1,
					  &error));
	g_assert_true(confab_config_load_file(config, path, &error));
	g_assert_no_error(error);
	g_assert_cmpstr(config->listen, ==, "127.0.0.1:0");
	g_assert_cmpuint(config->default_monthly_requests, ==, 100);

	/* a missing file: the error names it */
	g_assert_false(confab_config_load_file(config, missing, &error));
	g_assert_nonnull(error);
	g_assert_nonnull(strstr(error->message, missing));
	g_clear_error(&error);

	/* a bad value in a file: the error names the file and the key */
	g_assert_true(g_file_set_contents(path, "[limits]\nidle_timeout=never\n", -1, NULL));
	g_assert_false(confab_config_load_file(config, path, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
	g_assert_nonnull(strstr(error->message, path));
	g_assert_nonnull(strstr(error->message, "idle_timeout"));
	confab_test_rm_rf(dir);
}

static void
test_parse_listen(void)
{
	struct {
		const gchar *listen;
		const gchar *host;
		guint16 port;
	} good[] = {
	    {"127.0.0.1:8080", "127.0.0.1", 8080},
	    {"0.0.0.0:0", "0.0.0.0", 0},
	    {"localhost:65535", "localhost", 65535},
	    {"[::1]:9000", "::1", 9000},
	    {"[::]:80", "::", 80},
	    {"8081", "127.0.0.1", 8081},
	};
	const gchar *bad[] = {
	    "",
	    "127.0.0.1:",
	    "127.0.0.1:65536",
	    "127.0.0.1:-1",
	    "127.0.0.1:http",
	    "127.0.0.1:80x",
	    "[::1]",
	    "[::1:80",
	    "[::1]x:80",
	    "99999",
	    "port",
	};

	for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
		g_autofree gchar *host = NULL;
		guint16 port = 1;
		g_autoptr(GError) error = NULL;
		if (!confab_config_parse_listen(good[i].listen, &host, &port, &error))
			g_error("'%s' refused: %s", good[i].listen, error->message);
		g_assert_cmpstr(host, ==, good[i].host);
		g_assert_cmpuint(port, ==, good[i].port);
	}
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autofree gchar *host = NULL;
		guint16 port = 1;
		g_autoptr(GError) error = NULL;
		if (confab_config_parse_listen(bad[i], &host, &port, &error))
			g_error("'%s' accepted as %s port %u", bad[i], host, port);
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_VALUE);
		g_assert_null(host);
	}
	{
		g_autofree gchar *host = NULL;
		guint16 port = 0;
		g_assert_false(confab_config_parse_listen(NULL, &host, &port, NULL));
	}
}

static void
test_documented_defaults(void)
{
	/* data/confab.conf.in shows every key commented out with its built-in
	 * default: uncommented, it must change nothing */
	g_autofree gchar *path =
	    g_test_build_filename(G_TEST_DIST, "..", "data", "confab.conf.in", NULL);
	g_autofree gchar *text = NULL;
	g_auto(GStrv) lines = NULL;
	g_autoptr(GString) uncommented = g_string_new(NULL);
	g_autoptr(GRegex) regex = g_regex_new("^#([a-z_]+) = (.*)$", 0, 0, NULL);
	g_autoptr(ConfabConfig) documented = NULL;
	g_autoptr(ConfabConfig) defaults = NULL;
	g_autoptr(GError) error = NULL;
	guint keys = 0;

	/* credentials_dir's default outside systemd */
	g_unsetenv("CREDENTIALS_DIRECTORY");
	documented = confab_config_new();
	defaults = confab_config_new();

	if (!g_file_get_contents(path, &text, NULL, NULL)) {
		g_test_skip("data/confab.conf.in not found");
		return;
	}
	lines = g_strsplit(text, "\n", -1);
	for (guint i = 0; lines[i] != NULL; i++) {
		g_autoptr(GMatchInfo) match = NULL;
		if (g_regex_match(regex, lines[i], 0, &match)) {
			g_autofree gchar *key = g_match_info_fetch(match, 1);
			g_autofree gchar *value = g_match_info_fetch(match, 2);
			/* the packaged state directory depends on the prefix */
			if (g_str_equal(key, "state_dir"))
				continue;
			g_string_append_printf(uncommented, "%s = %s\n", key, value);
			keys++;
		} else if (lines[i][0] == '[') {
			g_string_append_printf(uncommented, "%s\n", lines[i]);
		}
	}
	/* every key but state_dir */
	g_assert_cmpuint(keys, ==, 46);
	g_assert_true(confab_config_load_data(documented, uncommented->str, &error));
	g_assert_no_error(error);
	g_assert_cmpstr(documented->listen, ==, defaults->listen);
	g_assert_cmpstr(documented->bus, ==, defaults->bus);
	/* [http] public_url: empty is the listen address */
	g_assert_cmpstr(documented->http_public_url ?: "", ==, "");
	g_assert_null(defaults->http_public_url);
	/* [desktop] default_agent: empty is unset */
	g_assert_cmpstr(documented->desktop_default_agent ?: "", ==, "");
	g_assert_null(defaults->desktop_default_agent);
	g_assert_cmpstr(documented->desktop_search_index, ==, defaults->desktop_search_index);
	g_assert_cmpuint(documented->shutdown_grace, ==, defaults->shutdown_grace);
	g_assert_cmpuint(documented->serving_threads, ==, defaults->serving_threads);
	g_assert_cmpuint(documented->max_body_bytes, ==, defaults->max_body_bytes);
	g_assert_cmpuint(documented->max_json_depth, ==, defaults->max_json_depth);
	g_assert_cmpuint(documented->max_files_per_message, ==, defaults->max_files_per_message);
	g_assert_cmpuint(documented->max_file_bytes, ==, defaults->max_file_bytes);
	g_assert_cmpuint(documented->max_connections, ==, defaults->max_connections);
	g_assert_cmpuint(documented->max_inflight_turns, ==, defaults->max_inflight_turns);
	g_assert_cmpuint(documented->idle_timeout, ==, defaults->idle_timeout);
	g_assert_cmpuint(documented->max_header_bytes, ==, defaults->max_header_bytes);
	g_assert_cmpuint(documented->max_stream_buffer, ==, defaults->max_stream_buffer);
	g_assert_cmpuint(documented->max_connections_per_peer,
			 ==,
			 defaults->max_connections_per_peer);
	g_assert_cmpuint(documented->body_timeout, ==, defaults->body_timeout);
	g_assert_cmpuint(documented->stream_head_wait, ==, defaults->stream_head_wait);
	g_assert_cmpuint(documented->responses_max_background,
			 ==,
			 defaults->responses_max_background);
	g_assert_cmpuint(documented->responses_event_retention,
			 ==,
			 defaults->responses_event_retention);
	g_assert_cmpuint(documented->max_inflight_body_bytes,
			 ==,
			 defaults->max_inflight_body_bytes);
	g_assert_cmpuint(documented->max_answer_bytes, ==, defaults->max_answer_bytes);
	g_assert_cmpuint(documented->tool_max_output_bytes, ==, defaults->tool_max_output_bytes);
	g_assert_cmpuint(documented->tool_approval_timeout, ==, defaults->tool_approval_timeout);
	g_assert_cmpint(documented->metrics_local_unauthenticated,
			==,
			defaults->metrics_local_unauthenticated);
	g_assert_cmpuint(documented->default_monthly_requests,
			 ==,
			 defaults->default_monthly_requests);
	g_assert_cmpuint(documented->upstream_connect_timeout,
			 ==,
			 defaults->upstream_connect_timeout);
	g_assert_cmpuint(documented->upstream_first_byte_timeout,
			 ==,
			 defaults->upstream_first_byte_timeout);
	g_assert_cmpuint(documented->upstream_idle_timeout, ==, defaults->upstream_idle_timeout);
	g_assert_cmpuint(documented->upstream_total_timeout, ==, defaults->upstream_total_timeout);
	g_assert_cmpuint(documented->upstream_max_retries, ==, defaults->upstream_max_retries);
	g_assert_cmpuint(documented->upstream_max_connections,
			 ==,
			 defaults->upstream_max_connections);
	g_assert_cmpuint(documented->read_connections, ==, defaults->read_connections);
	g_assert_cmpstr(documented->credentials_dir, ==, defaults->credentials_dir);
	g_assert_cmpstr(documented->store_backend, ==, defaults->store_backend);
	g_assert_cmpuint(documented->store_pool_size, ==, defaults->store_pool_size);
	g_assert_cmpuint(documented->store_instance_lease, ==, defaults->store_instance_lease);
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/config/defaults", test_defaults);
	g_test_add_func("/confab/config/empty-file-keeps-defaults", test_empty_file_keeps_defaults);
	g_test_add_func("/confab/config/every-section", test_every_section);
	g_test_add_func("/confab/config/credentials-directory", test_credentials_directory);
	g_test_add_func("/confab/config/partial-override", test_partial_override);
	g_test_add_func("/confab/config/bad-values", test_bad_values);
	g_test_add_func("/confab/config/range-ends-accepted", test_range_ends_accepted);
	g_test_add_func("/confab/config/bad-syntax", test_bad_syntax);
	g_test_add_func("/confab/config/load-file", test_load_file);
	g_test_add_func("/confab/config/parse-listen", test_parse_listen);
	g_test_add_func("/confab/config/documented-defaults", test_documented_defaults);
	return g_test_run();
}
