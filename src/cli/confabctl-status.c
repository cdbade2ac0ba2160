/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* confabctl status */

#include "config.h"

#include <glib/gi18n.h>

#include "cli/confabctl-common.h"
#include "cli/confabctl-status.h"

gint
confabctl_status_show(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context =
	    confabctl_common_subcommand_context(NULL,
						_("Shows the daemon's version and activity."),
						NULL);
	const gchar *names[] = {"Version", "ListenAddress", "ActiveTurns", "TurnsServed", NULL};
	const gchar *labels[] = {N_("Version"),
				 N_("Listening on"),
				 N_("Turns running"),
				 N_("Turns served"),
				 NULL};
	GVariantBuilder all;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1)
		return confabctl_common_usage_error(_("status takes no argument"), context);
	g_variant_builder_init(&all, G_VARIANT_TYPE_VARDICT);
	for (guint i = 0; names[i] != NULL; i++) {
		g_autoptr(GVariant) value = confabctl_common_get_property(ctx, names[i]);
		if (value == NULL) {
			g_variant_builder_clear(&all);
			return ctx->exit_code;
		}
		g_variant_builder_add(&all, "{sv}", names[i], value);
	}
	{
		g_autoptr(GVariant) dict = g_variant_ref_sink(g_variant_builder_end(&all));
		if (ctx->json) {
			confabctl_common_print_variant_json(dict);
		} else {
			confabctl_common_print_fields(dict, names, labels);
		}
	}
	return CONFABCTL_EXIT_OK;
}
