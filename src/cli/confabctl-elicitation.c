/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* confabctl elicitation list|accept|decline|cancel: a person answers, from
 * the terminal, the question an agent's MCP server asks during a tool call
 * (the Chat interface: the caller's own questions, or everyone's for an
 * administrator) */

#include "config.h"

#include <glib/gi18n.h>

#include "cli/confabctl-common.h"
#include "cli/confabctl-elicitation.h"

#define CHAT_IFACE "org.confab.Confab1.Chat"

/* messages are cut to this many characters in the table */
#define MESSAGE_WIDTH 60

gint
confabctl_elicitation_list(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    NULL,
	    _("Lists the questions of agents' tool servers that wait for your answer, oldest "
	      "first."),
	    NULL);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) elicitations = NULL;
	const gchar *header[] =
	    {_("ID"), _("OWNER"), _("AGENT"), _("SERVER"), _("MESSAGE"), _("ASKED"), NULL};
	gint code = CONFABCTL_EXIT_OK;
	ConfabctlTable *table;
	GVariantIter iter;
	GVariant *elicitation;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1)
		return confabctl_common_usage_error(_("elicitation list takes no argument"),
						    context);
	reply = confabctl_common_call_iface(ctx, CHAT_IFACE, "ListElicitations", NULL, "(aa{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	elicitations = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(elicitations);
		return CONFABCTL_EXIT_OK;
	}
	table = confabctl_common_table_new(header);
	g_variant_iter_init(&iter, elicitations);
	while ((elicitation = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv row = g_new0(gchar *, 7);
		g_autofree gchar *message = confabctl_common_dict_string(elicitation, "message");

		row[0] = confabctl_common_dict_string(elicitation, "id");
		row[1] = confabctl_common_dict_string(elicitation, "owner");
		row[2] = confabctl_common_dict_string(elicitation, "agent_id");
		row[3] = confabctl_common_dict_string(elicitation, "server");
		if (g_utf8_strlen(message, -1) > MESSAGE_WIDTH) {
			g_autofree gchar *cut = g_utf8_substring(message, 0, MESSAGE_WIDTH - 1);
			row[4] = g_strconcat(cut, "…", NULL);
		} else {
			row[4] = g_steal_pointer(&message);
		}
		row[5] = confabctl_common_dict_string(elicitation, "created_at");
		confabctl_common_table_add(table, row);
		g_variant_unref(elicitation);
	}
	confabctl_common_table_print_free(table);
	return CONFABCTL_EXIT_OK;
}

/* AnswerElicitation with @action; accept takes the content as an optional
 * second argument (a JSON object of the form's fields). */
static gint
answer(ConfabctlContext *ctx, gint argc, gchar **argv, const gchar *action)
{
	gboolean accept = g_str_equal(action, "accept");
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    accept ? _("ELICITATION_ID [CONTENT_JSON]") : _("ELICITATION_ID"),
	    accept ? _("Answers a question of an agent's tool server with the form's fields, a "
		       "JSON object; the fields left out take the form's defaults.")
	    : g_str_equal(action, "decline") ? _("Declines to answer a question of an agent's "
						 "tool server: the server is told.")
					     : _("Cancels a question of an agent's tool server, "
						 "as if nobody had answered."),
	    NULL);
	g_autoptr(GVariant) reply = NULL;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2 && !(accept && argc == 3))
		return confabctl_common_usage_error(_("one elicitation id is needed"), context);
	reply = confabctl_common_call_iface(
	    ctx,
	    CHAT_IFACE,
	    "AnswerElicitation",
	    g_variant_new("(sss)", argv[1], action, argc == 3 ? argv[2] : ""),
	    "()");
	if (reply == NULL)
		return ctx->exit_code;
	if (!ctx->json)
		g_print(_("Answered %s: %s\n"), argv[1], action);
	return CONFABCTL_EXIT_OK;
}

gint
confabctl_elicitation_accept(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	return answer(ctx, argc, argv, "accept");
}

gint
confabctl_elicitation_decline(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	return answer(ctx, argc, argv, "decline");
}

gint
confabctl_elicitation_cancel(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	return answer(ctx, argc, argv, "cancel");
}
