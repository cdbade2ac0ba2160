/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* confabctl approval list|allow|deny: a person decides, from the terminal,
 * before an agent's tool runs (the Chat interface: the caller's own calls,
 * or everyone's for an administrator) */

#include "config.h"

#include <glib/gi18n.h>

#include "cli/confabctl-approval.h"
#include "cli/confabctl-common.h"

#define CHAT_IFACE "org.confab.Confab1.Chat"

/* arguments are cut to this many characters in the table */
#define ARGUMENTS_WIDTH 60

gint
confabctl_approval_list(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    NULL,
	    _("Lists the tool calls that wait for your decision, oldest first."),
	    NULL);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) approvals = NULL;
	const gchar *header[] =
	    {_("ID"), _("OWNER"), _("AGENT"), _("TOOL"), _("ARGUMENTS"), _("ASKED"), NULL};
	gint code = CONFABCTL_EXIT_OK;
	ConfabctlTable *table;
	GVariantIter iter;
	GVariant *approval;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1)
		return confabctl_common_usage_error(_("approval list takes no argument"), context);
	reply = confabctl_common_call_iface(ctx, CHAT_IFACE, "ListApprovals", NULL, "(aa{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	approvals = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(approvals);
		return CONFABCTL_EXIT_OK;
	}
	table = confabctl_common_table_new(header);
	g_variant_iter_init(&iter, approvals);
	while ((approval = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv row = g_new0(gchar *, 7);
		g_autofree gchar *server = confabctl_common_dict_string(approval, "server");
		g_autofree gchar *tool = confabctl_common_dict_string(approval, "tool");
		g_autofree gchar *arguments = confabctl_common_dict_string(approval, "arguments");

		row[0] = confabctl_common_dict_string(approval, "id");
		row[1] = confabctl_common_dict_string(approval, "owner");
		row[2] = confabctl_common_dict_string(approval, "agent_id");
		row[3] = g_strdup_printf("%s/%s", server, tool);
		if (g_utf8_strlen(arguments, -1) > ARGUMENTS_WIDTH) {
			g_autofree gchar *cut = g_utf8_substring(arguments, 0, ARGUMENTS_WIDTH - 1);
			row[4] = g_strconcat(cut, "…", NULL);
		} else {
			row[4] = g_steal_pointer(&arguments);
		}
		row[5] = confabctl_common_dict_string(approval, "created_at");
		confabctl_common_table_add(table, row);
		g_variant_unref(approval);
	}
	confabctl_common_table_print_free(table);
	return CONFABCTL_EXIT_OK;
}

static gint
decide(ConfabctlContext *ctx, gint argc, gchar **argv, gboolean approve)
{
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    _("APPROVAL_ID"),
	    approve ? _("Lets a tool call that waits for your decision run.")
		    : _("Declines a tool call that waits for your decision: it does not run, "
			"and the model is told."),
	    NULL);
	g_autoptr(GVariant) reply = NULL;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return confabctl_common_usage_error(_("one approval id is needed"), context);
	reply = confabctl_common_call_iface(ctx,
					    CHAT_IFACE,
					    "Approve",
					    g_variant_new("(sb)", argv[1], approve),
					    "()");
	if (reply == NULL)
		return ctx->exit_code;
	if (!ctx->json)
		g_print(approve ? _("Allowed %s\n") : _("Denied %s\n"), argv[1]);
	return CONFABCTL_EXIT_OK;
}

gint
confabctl_approval_allow(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	return decide(ctx, argc, argv, TRUE);
}

gint
confabctl_approval_deny(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	return decide(ctx, argc, argv, FALSE);
}
