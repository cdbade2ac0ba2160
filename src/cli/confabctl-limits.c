/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* confabctl limits set|show owner|token ID */

#include "config.h"

#include <glib/gi18n.h>

#include "cli/confabctl-common.h"
#include "cli/confabctl-limits.h"

/* owner|token ID, as SetLimits and GetLimits take them */
static gboolean
limits_target(gint argc, gchar **argv, GOptionContext *context, gint *code)
{
	if (argc != 3) {
		*code = confabctl_common_usage_error(_("limits needs owner or token, and an id"),
						     context);
		return FALSE;
	}
	if (g_strcmp0(argv[1], "owner") != 0 && g_strcmp0(argv[1], "token") != 0) {
		*code = confabctl_common_usage_error(_("the kind of limits is owner or token"),
						     context);
		return FALSE;
	}
	return TRUE;
}

/* --NAME VALUE into @builder: a whole number, 0 removing the limit */
static gboolean
add_limit(GVariantBuilder *builder,
	  const gchar *key,
	  const gchar *option,
	  const gchar *value,
	  guint64 max,
	  GOptionContext *context,
	  gint *code)
{
	guint64 number = 0;

	if (value == NULL)
		return TRUE;
	if (!g_ascii_string_to_unsigned(value, 10, 0, max, &number, NULL)) {
		g_autofree gchar *message = g_strdup_printf(
		    _("%s must be a whole number from 0 (no limit) to %" G_GUINT64_FORMAT
		      ", not “%s”"),
		    option,
		    max,
		    value);
		*code = confabctl_common_usage_error(message, context);
		return FALSE;
	}
	if (g_str_equal(key, "max_parallel"))
		g_variant_builder_add(builder, "{sv}", key, g_variant_new_uint32((guint32)number));
	else
		g_variant_builder_add(builder, "{sv}", key, g_variant_new_uint64(number));
	return TRUE;
}

gint
confabctl_limits_set(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autofree gchar *rpm = NULL;
	g_autofree gchar *tpm = NULL;
	g_autofree gchar *max_parallel = NULL;
	g_autofree gchar *monthly_tokens = NULL;
	const GOptionEntry entries[] = {
	    {"rpm", 0, 0, G_OPTION_ARG_STRING, &rpm, N_("Requests per minute"), "N"},
	    {"tpm", 0, 0, G_OPTION_ARG_STRING, &tpm, N_("Tokens per minute"), "N"},
	    {"max-parallel", 0, 0, G_OPTION_ARG_STRING, &max_parallel, N_("Turns in flight"), "N"},
	    {"monthly-tokens",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &monthly_tokens,
	     N_("Tokens per month"),
	     "N"},
	    {NULL},
	};
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    _("owner|token ID"),
	    _("Sets an owner's or a token's own limits (0 removes one; others stay)."),
	    entries);
	g_autoptr(GVariant) reply = NULL;
	GVariantBuilder builder;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (!limits_target(argc, argv, context, &code))
		return code;
	if (rpm == NULL && tpm == NULL && max_parallel == NULL && monthly_tokens == NULL)
		return confabctl_common_usage_error(
		    _("limits set needs --rpm, --tpm, --max-parallel or --monthly-tokens"),
		    context);
	g_variant_builder_init(&builder, G_VARIANT_TYPE_VARDICT);
	if (!add_limit(&builder, "rpm", "--rpm", rpm, G_MAXINT32, context, &code) ||
	    !add_limit(&builder, "tpm", "--tpm", tpm, G_MAXINT64, context, &code) ||
	    !add_limit(&builder,
		       "max_parallel",
		       "--max-parallel",
		       max_parallel,
		       G_MAXINT32,
		       context,
		       &code) ||
	    !add_limit(&builder,
		       "monthly_tokens",
		       "--monthly-tokens",
		       monthly_tokens,
		       G_MAXINT64,
		       context,
		       &code)) {
		g_variant_builder_clear(&builder);
		return code;
	}
	reply = confabctl_common_call(ctx,
				      "SetLimits",
				      g_variant_new("(ssa{sv})", argv[1], argv[2], &builder),
				      "()");
	return reply != NULL ? CONFABCTL_EXIT_OK : ctx->exit_code;
}

static gchar *
limit_text(GVariant *limits, const gchar *key)
{
	guint64 value = 0;
	guint32 small = 0;

	if (g_variant_lookup(limits, key, "u", &small))
		value = small;
	else
		g_variant_lookup(limits, key, "t", &value);
	if (value == 0)
		return g_strdup(_("none"));
	return g_strdup_printf("%" G_GUINT64_FORMAT, value);
}

gint
confabctl_limits_show(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context =
	    confabctl_common_subcommand_context(_("owner|token ID"),
						_("Shows an owner's or a token's own limits."),
						NULL);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) limits = NULL;
	g_autofree gchar *rpm = NULL;
	g_autofree gchar *tpm = NULL;
	g_autofree gchar *max_parallel = NULL;
	g_autofree gchar *monthly_tokens = NULL;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (!limits_target(argc, argv, context, &code))
		return code;
	reply = confabctl_common_call(ctx,
				      "GetLimits",
				      g_variant_new("(ss)", argv[1], argv[2]),
				      "(a{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	limits = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(limits);
		return CONFABCTL_EXIT_OK;
	}
	rpm = limit_text(limits, "rpm");
	tpm = limit_text(limits, "tpm");
	max_parallel = limit_text(limits, "max_parallel");
	monthly_tokens = limit_text(limits, "monthly_tokens");
	{
		const gchar *labels[] = {argv[1][0] == 'o' ? _("Owner") : _("Token"),
					 _("Requests per minute"),
					 _("Tokens per minute"),
					 _("Turns in flight"),
					 _("Tokens per month"),
					 NULL};
		const gchar *values[] = {argv[2], rpm, tpm, max_parallel, monthly_tokens, NULL};
		confabctl_common_print_pairs(labels, values);
	}
	return CONFABCTL_EXIT_OK;
}
