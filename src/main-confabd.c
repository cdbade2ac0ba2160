/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "Confabd"

#include "config.h"

#include <glib/gi18n.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef HAVE_MALLOPT
#include <malloc.h>
#endif

#include "confab-daemon.h"
#include "util/confab-log.h"

static gchar *
dev_state_dir(void)
{
	return g_build_filename(g_get_user_data_dir(), "confab", NULL);
}

/* confabd --user reads $XDG_CONFIG_HOME/confab/confab.conf when it exists */
static gchar *
user_config_file(void)
{
	return g_build_filename(g_get_user_config_dir(), "confab", "confab.conf", NULL);
}

static void
print_dev_banner(const gchar *url, const gchar *agent_id, const gchar *secret, gboolean has_bus)
{
	g_print(_("Confab is running at %s (development mode)\n"), url);
	g_print(_("  agent: %s\n"), agent_id);
	g_print(_("  token: %s  (shown once; a new one is minted at each start)\n"), secret);
	if (has_bus)
		g_print(_("  admin: confabctl --session agent list\n"));
	g_print(_("Try it:\n"));
	g_print("  curl -s %s/api/v1/chat/completions \\\n"
		"    -H 'Authorization: Bearer %s' \\\n"
		"    -H 'Content-Type: application/json' \\\n"
		"    -d '{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello, "
		"Confab!\"}]}'\n",
		url,
		secret,
		agent_id);
	g_print(_("Or point an OpenAI SDK at %s/api/v1 with that token as the API key.\n"), url);
}

typedef struct {
	gboolean dev;
	gboolean user;
	gboolean version;
	gchar *listen;
	gchar *state_dir;
	gchar *bus;
	gchar *config_file;
	gchar *store_url;
} Options;

static void
options_clear(Options *o)
{
	g_free(o->listen);
	g_free(o->state_dir);
	g_free(o->bus);
	g_free(o->config_file);
	g_free(o->store_url);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Options, options_clear)

static gboolean
parse_options(Options *o, gint *argc, gchar ***argv, GError **error)
{
	const GOptionEntry entries[] = {
	    {"dev",
	     0,
	     0,
	     G_OPTION_ARG_NONE,
	     &o->dev,
	     N_("Development mode: session bus, state in $XDG_DATA_HOME/confab, a demo agent "
		"and a dev token"),
	     NULL},
	    {"user",
	     0,
	     0,
	     G_OPTION_ARG_NONE,
	     &o->user,
	     N_("Per-user mode: the session bus, state in $XDG_DATA_HOME/confab, settings from "
		"$XDG_CONFIG_HOME/confab/confab.conf, upstream keys in the keyring"),
	     NULL},
	    {"listen",
	     'l',
	     0,
	     G_OPTION_ARG_STRING,
	     &o->listen,
	     N_("Serve HTTP on this address (default 127.0.0.1:8080)"),
	     N_("HOST:PORT")},
	    {"state-dir",
	     's',
	     0,
	     G_OPTION_ARG_FILENAME,
	     &o->state_dir,
	     N_("Keep the database in this directory"),
	     N_("DIR")},
	    {"bus",
	     'b',
	     0,
	     G_OPTION_ARG_STRING,
	     &o->bus,
	     N_("Administration bus: system, session or none"),
	     N_("BUS")},
	    {"config",
	     'c',
	     0,
	     G_OPTION_ARG_FILENAME,
	     &o->config_file,
	     N_("Read settings from this file (default: the system configuration file, "
		"when it exists)"),
	     N_("FILE")},
	    {"store-url",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &o->store_url,
	     N_("Keep everything in this PostgreSQL database (a libpq connection URI), shared "
		"with any other confabd pointed at it"),
	     N_("URL")},
	    {"version",
	     0,
	     0,
	     G_OPTION_ARG_NONE,
	     &o->version,
	     N_("Print the version and exit"),
	     NULL},
	    {NULL}};
	g_autoptr(GOptionContext) context = g_option_context_new(NULL);

	g_option_context_set_summary(context,
				     _("Confab: a self-hosted agent chat-completion service."));
	g_option_context_add_main_entries(context, entries, GETTEXT_PACKAGE);
	return g_option_context_parse(context, argc, argv, error);
}

static void
replace_string(gchar **field, gchar **value)
{
	if (*value == NULL)
		return;
	g_free(*field);
	*field = g_steal_pointer(value);
}

/* Built-in defaults, then the configuration file, then the command line. */
static ConfabConfig *
config_from_options(Options *o, GError **error)
{
	g_autoptr(ConfabConfig) config = confab_config_new();
	g_autofree gchar *user_file = NULL;
	const gchar *file = o->config_file;

	if (o->dev && o->user) {
		g_set_error_literal(error,
				    G_OPTION_ERROR,
				    G_OPTION_ERROR_FAILED,
				    _("--dev and --user exclude each other"));
		return NULL;
	}
	if (o->dev || o->user) {
		g_free(config->state_dir);
		config->state_dir = dev_state_dir();
		g_free(config->bus);
		config->bus = g_strdup("session");
	}
	if (o->user)
		user_file = user_config_file();
	if (file == NULL && o->user && g_file_test(user_file, G_FILE_TEST_EXISTS))
		file = user_file;
	if (file == NULL && !o->dev && !o->user &&
	    g_file_test(CONFAB_DEFAULT_CONFIG, G_FILE_TEST_EXISTS))
		file = CONFAB_DEFAULT_CONFIG;
	if (file != NULL && !confab_config_load_file(config, file, error))
		return NULL;
	if (o->user) {
		/* the user's own daemon is on the user's own bus, whatever the file says */
		g_free(config->bus);
		config->bus = g_strdup("session");
	}
	replace_string(&config->listen, &o->listen);
	replace_string(&config->state_dir, &o->state_dir);
	replace_string(&config->bus, &o->bus);
	if (o->store_url != NULL) {
		/* a URL alone selects PostgreSQL */
		replace_string(&config->store_url, &o->store_url);
		g_free(config->store_backend);
		config->store_backend = g_strdup("postgresql");
	}
	return g_steal_pointer(&config);
}

static gint
serve(ConfabConfig *config, gboolean dev, gboolean user)
{
	g_autoptr(ConfabDaemon) daemon = confab_daemon_new(config, dev);
	g_autoptr(GError) error = NULL;
	g_autofree gchar *url = NULL;

	confab_daemon_set_user_mode(daemon, user);

	if (!confab_daemon_start(daemon, &error)) {
		g_printerr("confabd: %s\n", error->message);
		return EXIT_FAILURE;
	}
	url = confab_daemon_get_url(daemon);
	if (dev) {
		g_autofree gchar *agent_id = NULL;
		g_autofree gchar *secret = NULL;
		if (!confab_daemon_provision_dev(daemon, &agent_id, &secret, &error)) {
			g_printerr("confabd: %s\n", error->message);
			return EXIT_FAILURE;
		}
		print_dev_banner(url, agent_id, secret, confab_daemon_has_bus(daemon));
	}
	/* one line that scripts and tests read to find the port */
	g_print("confabd: listening on %s\n", url);
	fflush(stdout);
	return confab_daemon_run(daemon);
}

int
main(int argc, char **argv)
{
	g_auto(Options) options = {0};
	g_autoptr(GError) error = NULL;
	ConfabConfig *config;

#ifdef HAVE_MALLOPT
	/* Blocks of 1 MiB and more (a large turn's body, text and answer) are
	 * mapped on their own and unmapped when freed. glibc's default raises
	 * that threshold to the largest block freed so far (up to 32 MiB): once
	 * a turn's body is freed after parsing, its text and answer come from
	 * the heap, whose freed pages stay resident; a 10 MiB turn then peaked
	 * 10 MiB higher and left 10 MiB more behind (tests/bench/run --only
	 * bigbody). glibc's own setting, when the environment gives one, wins. */
	if (g_getenv("MALLOC_MMAP_THRESHOLD_") == NULL && g_getenv("GLIBC_TUNABLES") == NULL)
		mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
#endif
	setlocale(LC_ALL, "");
	g_log_set_writer_func(confab_log_writer, NULL, NULL);
	bindtextdomain(GETTEXT_PACKAGE, LOCALEDIR);
	bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
	textdomain(GETTEXT_PACKAGE);

	if (!parse_options(&options, &argc, &argv, &error)) {
		g_printerr("confabd: %s\n", error->message);
		return EXIT_FAILURE;
	}
	if (options.version) {
		g_print("confabd %s\n", PACKAGE_VERSION);
		return EXIT_SUCCESS;
	}
	config = config_from_options(&options, &error);
	if (config == NULL) {
		g_printerr("confabd: %s\n", error->message);
		return EXIT_FAILURE;
	}
	return serve(config, options.dev, options.user);
}
