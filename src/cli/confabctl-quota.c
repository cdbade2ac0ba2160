/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* confabctl quota set, confabctl usage */

#include "config.h"

#include <glib/gi18n.h>

#include "cli/confabctl-common.h"
#include "cli/confabctl-quota.h"

gint
confabctl_quota_set(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    _("OWNER REQUESTS"),
	    _("Sets an owner's monthly request quota (0: unlimited)."),
	    NULL);
	g_autoptr(GVariant) reply = NULL;
	guint64 quota = 0;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 3)
		return confabctl_common_usage_error(
		    _("quota set needs an owner and a number of requests"),
		    context);
	if (!g_ascii_string_to_unsigned(argv[2], 10, 0, G_MAXINT64, &quota, NULL))
		return confabctl_common_usage_error(
		    _("the number of requests must be a whole number"),
		    context);
	reply = confabctl_common_call(ctx, "SetQuota", g_variant_new("(st)", argv[1], quota), "()");
	return reply != NULL ? CONFABCTL_EXIT_OK : ctx->exit_code;
}

gint
confabctl_quota_usage(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context =
	    confabctl_common_subcommand_context(_("OWNER"),
						_("Shows an owner's requests this month."),
						NULL);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) usage = NULL;
	guint64 requests = 0;
	guint64 quota = 0;
	guint64 remaining = 0;
	gboolean quota_is_default = FALSE;
	const gchar *month = "";
	g_autofree gchar *month_text = NULL;
	g_autofree gchar *requests_text = NULL;
	g_autofree gchar *quota_text = NULL;
	g_autofree gchar *remaining_text = NULL;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return confabctl_common_usage_error(_("usage needs one owner"), context);
	reply = confabctl_common_call(ctx, "GetUsage", g_variant_new("(s)", argv[1]), "(a{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	usage = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(usage);
		return CONFABCTL_EXIT_OK;
	}
	g_variant_lookup(usage, "requests", "t", &requests);
	g_variant_lookup(usage, "quota", "t", &quota);
	g_variant_lookup(usage, "quota_is_default", "b", &quota_is_default);
	g_variant_lookup(usage, "month", "&s", &month);
	month_text = g_strdup_printf(_("%s (UTC)"), month);
	requests_text = g_strdup_printf("%" G_GUINT64_FORMAT, requests);
	if (quota == 0) {
		quota_text = g_strdup(_("unlimited"));
	} else {
		g_variant_lookup(usage, "remaining", "t", &remaining);
		quota_text = g_strdup_printf("%" G_GUINT64_FORMAT, quota);
		remaining_text = g_strdup_printf("%" G_GUINT64_FORMAT, remaining);
	}
	if (quota_is_default) {
		gchar *marked = g_strdup_printf(_("%s (the default)"), quota_text);
		g_free(quota_text);
		quota_text = marked;
	}
	{
		const gchar *labels[] =
		    {_("Owner"), _("Month"), _("Requests"), _("Quota"), _("Remaining"), NULL};
		const gchar *values[] =
		    {argv[1], month_text, requests_text, quota_text, remaining_text, NULL};
		/* no "Remaining" line when unlimited */
		if (remaining_text == NULL)
			labels[4] = NULL;
		confabctl_common_print_pairs(labels, values);
	}
	return CONFABCTL_EXIT_OK;
}
