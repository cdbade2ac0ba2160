/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* confabctl quota set, confabctl usage [OWNER] [--month M] [--by owner|token|agent] */

#include "config.h"

#include <glib/gi18n.h>
#include <string.h>

#include "cli/confabctl-common.h"
#include "cli/confabctl-quota.h"
#include "util/confab-month.h"

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

static gchar *
dict_count(GVariant *dict, const gchar *key)
{
	guint64 n = 0;

	g_variant_lookup(dict, key, "t", &n);
	return g_strdup_printf("%" G_GUINT64_FORMAT, n);
}

/* ListUsage: a month's usage per owner, token or agent, as a table */
static gint
list_usage(ConfabctlContext *ctx, const gchar *owner, const gchar *month, const gchar *by)
{
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) rows = NULL;
	GVariantBuilder filter;
	const gchar *key = g_str_equal(by, "owner")   ? "owner"
			   : g_str_equal(by, "token") ? "token_id"
						      : "agent_id";
	const gchar *header[] = {g_str_equal(by, "owner")   ? _("OWNER")
				 : g_str_equal(by, "token") ? _("TOKEN")
							    : _("AGENT"),
				 _("MONTH"),
				 _("REQUESTS"),
				 _("INPUT"),
				 _("OUTPUT"),
				 _("REASONING"),
				 NULL};
	ConfabctlTable *table;
	GVariantIter iter;
	GVariant *row;

	g_variant_builder_init(&filter, G_VARIANT_TYPE_VARDICT);
	g_variant_builder_add(&filter, "{sv}", "by", g_variant_new_string(by));
	if (month != NULL)
		g_variant_builder_add(&filter, "{sv}", "month", g_variant_new_string(month));
	if (owner != NULL)
		g_variant_builder_add(&filter, "{sv}", "owner", g_variant_new_string(owner));
	reply =
	    confabctl_common_call(ctx, "ListUsage", g_variant_new("(a{sv})", &filter), "(aa{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	rows = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(rows);
		return CONFABCTL_EXIT_OK;
	}
	table = confabctl_common_table_new(header);
	g_variant_iter_init(&iter, rows);
	while ((row = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv cells = g_new0(gchar *, 7);
		cells[0] = confabctl_common_dict_string(row, key);
		if (cells[0] == NULL || cells[0][0] == '\0') {
			/* turns without a token: D-Bus Chat.Send */
			g_free(cells[0]);
			cells[0] = g_strdup("-");
		}
		cells[1] = confabctl_common_dict_string(row, "month");
		cells[2] = dict_count(row, "requests");
		cells[3] = dict_count(row, "input_tokens");
		cells[4] = dict_count(row, "output_tokens");
		cells[5] = dict_count(row, "reasoning_tokens");
		confabctl_common_table_add(table, cells);
		g_variant_unref(row);
	}
	confabctl_common_table_print_free(table);
	return CONFABCTL_EXIT_OK;
}

/* GetUsage's answer, as pairs */
static void
print_owner_usage(const gchar *owner, GVariant *usage)
{
	guint64 requests = 0;
	guint64 quota = 0;
	guint64 remaining = 0;
	gboolean quota_is_default = FALSE;
	const gchar *month = "";
	g_autofree gchar *month_text = NULL;
	g_autofree gchar *requests_text = NULL;
	g_autofree gchar *quota_text = NULL;
	g_autofree gchar *remaining_text = NULL;
	g_autofree gchar *input_text = NULL;
	g_autofree gchar *output_text = NULL;
	g_autofree gchar *reasoning_text = NULL;

	g_variant_lookup(usage, "requests", "t", &requests);
	g_variant_lookup(usage, "quota", "t", &quota);
	g_variant_lookup(usage, "quota_is_default", "b", &quota_is_default);
	g_variant_lookup(usage, "month", "&s", &month);
	month_text = g_strdup_printf(_("%s (UTC)"), month);
	requests_text = g_strdup_printf("%" G_GUINT64_FORMAT, requests);
	input_text = dict_count(usage, "input_tokens");
	output_text = dict_count(usage, "output_tokens");
	reasoning_text = dict_count(usage, "reasoning_tokens");
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
		const gchar *labels[] = {_("Owner"),
					 _("Month"),
					 _("Requests"),
					 _("Input tokens"),
					 _("Output tokens"),
					 _("Reasoning tokens"),
					 _("Quota"),
					 _("Remaining"),
					 NULL};
		const gchar *values[] = {owner,
					 month_text,
					 requests_text,
					 input_text,
					 output_text,
					 reasoning_text,
					 quota_text,
					 remaining_text,
					 NULL};
		/* no "Remaining" line when unlimited */
		if (remaining_text == NULL)
			labels[7] = NULL;
		confabctl_common_print_pairs(labels, values);
	}
}

gint
confabctl_quota_usage(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autofree gchar *month_opt = NULL;
	g_autofree gchar *by = NULL;
	const GOptionEntry entries[] = {
	    {"month", 0, 0, G_OPTION_ARG_STRING, &month_opt, N_("The month (UTC)"), "YYYY-MM"},
	    {"by",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &by,
	     N_("A row per owner (the default), token or agent"),
	     "owner|token|agent"},
	    {NULL},
	};
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    _("[OWNER]"),
	    _("Shows an owner's requests and tokens this month; with --by or --month, or "
	      "without an owner, a month's usage per owner, token or agent."),
	    entries);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) usage = NULL;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc > 2)
		return confabctl_common_usage_error(_("usage takes one owner at most"), context);
	if (by != NULL && !g_str_equal(by, "owner") && !g_str_equal(by, "token") &&
	    !g_str_equal(by, "agent"))
		return confabctl_common_usage_error(_("--by is owner, token or agent"), context);
	if (month_opt != NULL && !confab_month_is_valid(month_opt))
		return confabctl_common_usage_error(_("--month is a month as YYYY-MM"), context);
	if (argc == 1 || by != NULL || month_opt != NULL)
		return list_usage(ctx, argc == 2 ? argv[1] : NULL, month_opt, by ?: "owner");
	reply = confabctl_common_call(ctx, "GetUsage", g_variant_new("(s)", argv[1]), "(a{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	usage = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(usage);
		return CONFABCTL_EXIT_OK;
	}
	print_owner_usage(argv[1], usage);
	return CONFABCTL_EXIT_OK;
}
