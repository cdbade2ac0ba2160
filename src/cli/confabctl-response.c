/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* confabctl response list|cancel: the Responses API's background
 * responses running now, on every instance, and stopping one (the Admin
 * interface) */

#include "config.h"

#include <glib/gi18n.h>

#include "cli/confabctl-common.h"
#include "cli/confabctl-response.h"

gint
confabctl_response_list(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autofree gchar *owner = NULL;
	const GOptionEntry entries[] = {
	    {"owner", 0, 0, G_OPTION_ARG_STRING, &owner, N_("Only this owner's"), N_("OWNER")},
	    {NULL},
	};
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    NULL,
	    _("Lists the background responses queued or running now, oldest first."),
	    entries);
	const gchar *header[] =
	    {_("ID"), _("OWNER"), _("AGENT"), _("CONVERSATION"), _("STATUS"), _("STARTED"), NULL};
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) responses = NULL;
	gint code = CONFABCTL_EXIT_OK;
	GVariantBuilder filter;
	ConfabctlTable *table;
	GVariantIter iter;
	GVariant *response;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1)
		return confabctl_common_usage_error(_("response list takes no argument"), context);
	g_variant_builder_init(&filter, G_VARIANT_TYPE_VARDICT);
	if (owner != NULL)
		g_variant_builder_add(&filter, "{sv}", "owner", g_variant_new_string(owner));
	reply = confabctl_common_call(ctx,
				      "ListBackgroundResponses",
				      g_variant_new("(a{sv})", &filter),
				      "(aa{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	responses = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(responses);
		return CONFABCTL_EXIT_OK;
	}
	table = confabctl_common_table_new(header);
	g_variant_iter_init(&iter, responses);
	while ((response = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv row = g_new0(gchar *, 7);
		row[0] = confabctl_common_dict_string(response, "id");
		row[1] = confabctl_common_dict_string(response, "owner");
		row[2] = confabctl_common_dict_string(response, "agent_id");
		row[3] = confabctl_common_dict_string(response, "session_id");
		row[4] = confabctl_common_dict_string(response, "status");
		row[5] = confabctl_common_dict_string(response, "created_at");
		confabctl_common_table_add(table, row);
		g_variant_unref(response);
	}
	confabctl_common_table_print_free(table);
	return CONFABCTL_EXIT_OK;
}

gint
confabctl_response_cancel(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    _("RESPONSE_ID"),
	    _("Stops a background response: its text so far is kept, and it ends cancelled."),
	    NULL);
	g_autoptr(GVariant) reply = NULL;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return confabctl_common_usage_error(_("one response id is needed"), context);
	reply = confabctl_common_call(ctx, "CancelResponse", g_variant_new("(s)", argv[1]), "()");
	if (reply == NULL)
		return ctx->exit_code;
	if (!ctx->json)
		g_print(_("Asked %s to stop\n"), argv[1]);
	return CONFABCTL_EXIT_OK;
}
