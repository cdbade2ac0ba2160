/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/*
 * confabctl: the administrator's command line, a thin client of the
 * org.confab.Confab1.Admin D-Bus interface. Human-readable tables by
 * default, --json for scripts.
 *
 * Exit codes: 0 done; 1 the daemon refused or failed (its message is
 * printed); 2 bad usage; 3 the daemon or the bus cannot be reached.
 *
 * This file parses the global options and finds the command; each noun has
 * its own file (cli/confabctl-agent.c, ...), and what they all share is in
 * cli/confabctl-common.c.
 */

#include "config.h"

#include <glib/gi18n.h>
#include <locale.h>

#include "cli/confabctl-agent.h"
#include "cli/confabctl-approval.h"
#include "cli/confabctl-common.h"
#include "cli/confabctl-elicitation.h"
#include "cli/confabctl-limits.h"
#include "cli/confabctl-quota.h"
#include "cli/confabctl-response.h"
#include "cli/confabctl-session.h"
#include "cli/confabctl-status.h"
#include "cli/confabctl-token.h"

typedef struct {
	const gchar *noun;
	const gchar *verb; /* NULL: the noun alone is the command */
	ConfabctlCommandFunc func;
	const gchar *synopsis;
} Command;

static const Command commands[] = {
    {"agent",
     "create",
     confabctl_agent_create,
     N_("agent create --name N --provider P [--instructions T] [--base-url U] "
	"[--upstream-model M] [--api-key-file F] [--mcp-config F] [--max-steps N] "
	"[--upstream SPEC]... [--routing STRATEGY] [--hedge-after-ms N]")},
    {"agent", "list", confabctl_agent_list, N_("agent list")},
    {"agent", "show", confabctl_agent_show, N_("agent show AGENT_ID")},
    {"agent",
     "update",
     confabctl_agent_update,
     N_("agent update AGENT_ID [options of create] [--remove-api-key]")},
    {"agent", "delete", confabctl_agent_delete, N_("agent delete AGENT_ID")},
    {"agent", "tools", confabctl_agent_tools, N_("agent tools AGENT_ID")},
    {"agent", "health", confabctl_agent_health, N_("agent health AGENT_ID")},
    {"agent", "authorize", confabctl_agent_authorize, N_("agent authorize AGENT_ID SERVER")},
    {"token",
     "create",
     confabctl_token_create,
     N_("token create --owner O --scope S [--scope S2] [--agent AGENT_ID] [--name N] "
	"[--expires-at UNIX_TIME]")},
    {"token", "list", confabctl_token_list, N_("token list [--owner O]")},
    {"token", "revoke", confabctl_token_revoke, N_("token revoke TOKEN_ID")},
    {"quota", "set", confabctl_quota_set, N_("quota set OWNER REQUESTS")},
    {"usage",
     NULL,
     confabctl_quota_usage,
     N_("usage [OWNER] [--month YYYY-MM] [--by owner|token|agent]")},
    {"limits",
     "set",
     confabctl_limits_set,
     N_("limits set owner|token ID [--rpm N] [--tpm N] [--max-parallel N] "
	"[--monthly-tokens N]")},
    {"limits", "show", confabctl_limits_show, N_("limits show owner|token ID")},
    {"session",
     "list",
     confabctl_session_list,
     N_("session list [--owner O] [--agent A] [--source api|channel] [--limit N] "
	"[--after SESSION_ID]")},
    {"session",
     "show",
     confabctl_session_show,
     N_("session show SESSION_ID [--limit N] [--after MESSAGE_ID]")},
    {"session", "delete", confabctl_session_delete, N_("session delete SESSION_ID")},
    {"approval", "list", confabctl_approval_list, N_("approval list")},
    {"approval", "allow", confabctl_approval_allow, N_("approval allow APPROVAL_ID")},
    {"approval", "deny", confabctl_approval_deny, N_("approval deny APPROVAL_ID")},
    {"elicitation", "list", confabctl_elicitation_list, N_("elicitation list")},
    {"elicitation",
     "accept",
     confabctl_elicitation_accept,
     N_("elicitation accept ELICITATION_ID [CONTENT_JSON]")},
    {"elicitation",
     "decline",
     confabctl_elicitation_decline,
     N_("elicitation decline ELICITATION_ID")},
    {"elicitation",
     "cancel",
     confabctl_elicitation_cancel,
     N_("elicitation cancel ELICITATION_ID")},
    {"response", "list", confabctl_response_list, N_("response list [--owner O]")},
    {"response", "cancel", confabctl_response_cancel, N_("response cancel RESPONSE_ID")},
    {"status", NULL, confabctl_status_show, N_("status")},
};

/* The options before the command. */
typedef struct {
	gboolean use_system;
	gboolean use_session;
	gboolean json;
	gboolean version;
	GStrv rest; /* owned: the command and its arguments */
} GlobalOptions;

static void
global_options_clear(GlobalOptions *o)
{
	g_strfreev(o->rest);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(GlobalOptions, global_options_clear)

static gchar *
commands_help(void)
{
	GString *help = g_string_new(_("Commands:"));
	g_string_append_c(help, '\n');
	for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
		g_string_append_printf(help, "  %s\n", _(commands[i].synopsis));
	g_string_append_c(help, '\n');
	g_string_append(help,
			_("Each command takes --help. Exit status: 0 done, 1 refused or failed, "
			  "2 bad usage, 3 the daemon cannot be reached."));
	return g_string_free(help, FALSE);
}

static GOptionContext *
global_context(GlobalOptions *o, const gchar *help)
{
	const GOptionEntry entries[] = {
	    {"system",
	     0,
	     0,
	     G_OPTION_ARG_NONE,
	     &o->use_system,
	     N_("Talk to the system service (default)"),
	     NULL},
	    {"session",
	     0,
	     0,
	     G_OPTION_ARG_NONE,
	     &o->use_session,
	     N_("Talk to a daemon on the session bus"),
	     NULL},
	    {"json", 0, 0, G_OPTION_ARG_NONE, &o->json, N_("Print JSON, for scripts"), NULL},
	    {"version", 0, 0, G_OPTION_ARG_NONE, &o->version, N_("Print the version"), NULL},
	    {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &o->rest, NULL, N_("COMMAND …")},
	    {NULL},
	};
	GOptionContext *context = g_option_context_new(NULL);

	g_option_context_set_translation_domain(context, GETTEXT_PACKAGE);
	g_option_context_set_summary(context,
				     _("Administers Confab, the agent chat-completion service."));
	g_option_context_set_description(context, help);
	g_option_context_add_main_entries(context, entries, GETTEXT_PACKAGE);
	/* options after the command belong to the command */
	g_option_context_set_strict_posix(context, TRUE);
	return context;
}

/* The global help: on standard output when @asked, else on standard error. */
static gint
print_help(GOptionContext *context, gboolean asked)
{
	g_autofree gchar *text = g_option_context_get_help(context, TRUE, NULL);
	if (!asked) {
		g_printerr("%s", text);
		return CONFABCTL_EXIT_USAGE;
	}
	g_print("%s", text);
	return CONFABCTL_EXIT_OK;
}

/* Takes --json, --system and --session out of @o->rest, up to a "--". */
static void
take_global_flags(GlobalOptions *o)
{
	GStrv args = o->rest;
	guint w = 0;
	guint r = 0;

	for (; args[r] != NULL && !g_str_equal(args[r], "--"); r++) {
		if (g_str_equal(args[r], "--json")) {
			o->json = TRUE;
		} else if (g_str_equal(args[r], "--system")) {
			o->use_system = TRUE;
		} else if (g_str_equal(args[r], "--session")) {
			o->use_session = TRUE;
		} else {
			args[w++] = args[r];
			continue;
		}
		g_free(args[r]);
	}
	for (; args[r] != NULL; r++)
		args[w++] = args[r];
	args[w] = NULL;
}

static const Command *
find_command(gchar **args)
{
	for (guint i = 0; i < G_N_ELEMENTS(commands); i++) {
		if (!g_str_equal(commands[i].noun, args[0]))
			continue;
		if (commands[i].verb == NULL ||
		    (args[1] != NULL && g_str_equal(commands[i].verb, args[1])))
			return &commands[i];
	}
	return NULL;
}

static gint
unknown_command(gchar **args, const gchar *help)
{
	g_autofree gchar *msg = g_strdup_printf(_("unknown command '%s%s%s'"),
						args[0],
						args[1] != NULL ? " " : "",
						args[1] != NULL ? args[1] : "");
	g_printerr("confabctl: %s\n\n%s\n", msg, help);
	return CONFABCTL_EXIT_USAGE;
}

/*
 * The command's argv, borrowing the strings: @argv0 ("confabctl agent
 * create", so that its help says "Usage: confabctl agent create [OPTION…]"),
 * then only --help if *@want_help, else the command's arguments from @args;
 * sets *@want_help when one of them is --help.
 */
static GPtrArray *
command_argv(const Command *command, gchar *argv0, gchar **args, gboolean *want_help)
{
	GPtrArray *sub_argv = g_ptr_array_new();

	g_ptr_array_add(sub_argv, argv0);
	if (*want_help) {
		g_ptr_array_add(sub_argv, (gpointer) "--help");
	} else {
		for (guint i = command->verb != NULL ? 2 : 1; args[i] != NULL; i++) {
			g_ptr_array_add(sub_argv, args[i]);
			if (g_str_equal(args[i], "--help") || g_str_equal(args[i], "-h"))
				*want_help = TRUE;
		}
	}
	g_ptr_array_add(sub_argv, NULL);
	return sub_argv;
}

int
main(int argc, char **argv)
{
	g_auto(GlobalOptions) opts = {0};
	g_autoptr(GOptionContext) context = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *help = NULL;
	g_autofree gchar *argv0 = NULL;
	g_autoptr(GPtrArray) sub_argv = NULL;
	ConfabctlContext ctx = {0};
	const Command *command = NULL;
	gboolean want_help = FALSE;
	gchar **args;
	gint code;

	setlocale(LC_ALL, "");
	bindtextdomain(GETTEXT_PACKAGE, LOCALEDIR);
	bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
	textdomain(GETTEXT_PACKAGE);

	help = commands_help();
	context = global_context(&opts, help);
	if (!g_option_context_parse(context, &argc, &argv, &error))
		return confabctl_common_usage_error(error->message, NULL);
	if (opts.version) {
		g_print("confabctl %s\n", PACKAGE_VERSION);
		return CONFABCTL_EXIT_OK;
	}
	if (opts.rest == NULL)
		return print_help(context, FALSE);
	take_global_flags(&opts);
	args = opts.rest;
	if (args[0] == NULL)
		return confabctl_common_usage_error(_("no command given"), NULL);
	if (opts.use_system && opts.use_session)
		return confabctl_common_usage_error(_("--system and --session exclude each other"),
						    NULL);
	/* "help" alone lists the commands; "help agent create" is "agent create --help" */
	if (g_str_equal(args[0], "help")) {
		if (args[1] == NULL)
			return print_help(context, TRUE);
		want_help = TRUE;
		args++;
	}
	command = find_command(args);
	if (command == NULL)
		return unknown_command(args, help);
	argv0 = g_strdup_printf("confabctl %s%s%s",
				command->noun,
				command->verb != NULL ? " " : "",
				command->verb != NULL ? command->verb : "");
	sub_argv = command_argv(command, argv0, args, &want_help);

	/* --help of a command needs no bus */
	if (!want_help) {
		code = confabctl_common_connect(&ctx, opts.use_system, opts.use_session);
		if (code != CONFABCTL_EXIT_OK)
			return code;
	}
	g_set_prgname(argv0);
	ctx.json = opts.json;
	code = command->func(&ctx, sub_argv->len - 1, (gchar **)sub_argv->pdata);
	confabctl_common_disconnect(&ctx);
	return code;
}
