/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* confabctl token create|list|revoke */

#include "config.h"

#include <glib/gi18n.h>

#include "cli/confabctl-common.h"
#include "cli/confabctl-token.h"

gint
confabctl_token_create(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autofree gchar *owner = NULL;
	g_autofree gchar *name = NULL;
	g_autofree gchar *agent = NULL;
	g_auto(GStrv) scopes = NULL;
	gint64 expires_at = 0;
	const GOptionEntry entries[] = {
	    {"owner", 0, 0, G_OPTION_ARG_STRING, &owner, N_("Whose token it is"), N_("OWNER")},
	    {"scope",
	     0,
	     0,
	     G_OPTION_ARG_STRING_ARRAY,
	     &scopes,
	     N_("A scope: chat.completions or api.full (repeatable)"),
	     N_("SCOPE")},
	    {"agent",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &agent,
	     N_("Bind the token to this agent"),
	     N_("AGENT_ID")},
	    {"name", 0, 0, G_OPTION_ARG_STRING, &name, N_("A name to recognize it by"), N_("NAME")},
	    {"expires-at",
	     0,
	     0,
	     G_OPTION_ARG_INT64,
	     &expires_at,
	     N_("When it stops working, in Unix seconds"),
	     N_("UNIX_TIME")},
	    {NULL},
	};
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    NULL,
	    _("Creates an API token and prints its secret, once: store it now."),
	    entries);
	g_autoptr(GVariant) reply = NULL;
	GVariantBuilder props;
	const gchar *token_id;
	const gchar *secret;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1 || owner == NULL || scopes == NULL)
		return confabctl_common_usage_error(
		    _("token create needs --owner and at least one --scope"),
		    context);
	g_variant_builder_init(&props, G_VARIANT_TYPE_VARDICT);
	g_variant_builder_add(&props, "{sv}", "owner", g_variant_new_string(owner));
	g_variant_builder_add(&props,
			      "{sv}",
			      "scopes",
			      g_variant_new_strv((const gchar *const *)scopes, -1));
	if (agent != NULL)
		g_variant_builder_add(&props, "{sv}", "agent_id", g_variant_new_string(agent));
	if (name != NULL)
		g_variant_builder_add(&props, "{sv}", "name", g_variant_new_string(name));
	if (expires_at != 0)
		g_variant_builder_add(&props,
				      "{sv}",
				      "expires_at",
				      g_variant_new_int64(expires_at));
	reply = confabctl_common_call(ctx, "CreateToken", g_variant_new("(a{sv})", &props), "(ss)");
	if (reply == NULL)
		return ctx->exit_code;
	g_variant_get(reply, "(&s&s)", &token_id, &secret);
	if (ctx->json) {
		g_autoptr(GVariant) obj = g_variant_ref_sink(
		    g_variant_new_parsed("{'id': <%s>, 'secret': <%s>}", token_id, secret));
		confabctl_common_print_variant_json(obj);
	} else {
		g_print(_("Token:  %s\n"), token_id);
		g_print(_("Secret: %s\n"), secret);
		g_printerr(_("The secret is shown this once: Confab keeps only its hash.\n"));
	}
	return CONFABCTL_EXIT_OK;
}

static const gchar *
token_state(GVariant *token)
{
	gboolean revoked = FALSE;
	gint64 expires_at = 0;
	g_variant_lookup(token, "revoked", "b", &revoked);
	g_variant_lookup(token, "expires_at", "x", &expires_at);
	if (revoked)
		return _("revoked");
	if (expires_at > 0 && expires_at <= g_get_real_time() / G_USEC_PER_SEC)
		return _("expired");
	return _("active");
}

gint
confabctl_token_list(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autofree gchar *owner = NULL;
	const GOptionEntry entries[] = {
	    {"owner",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &owner,
	     N_("Only this owner's tokens"),
	     N_("OWNER")},
	    {NULL},
	};
	g_autoptr(GOptionContext) context =
	    confabctl_common_subcommand_context(NULL,
						_("Lists tokens (never their secrets)."),
						entries);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) tokens = NULL;
	GVariantBuilder filter;
	const gchar *header[] = {_("ID"),
				 _("OWNER"),
				 _("NAME"),
				 _("SCOPES"),
				 _("AGENT"),
				 _("STATE"),
				 _("CREATED"),
				 NULL};
	gint code = CONFABCTL_EXIT_OK;
	ConfabctlTable *table;
	GVariantIter iter;
	GVariant *token;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1)
		return confabctl_common_usage_error(_("token list takes no argument"), context);
	g_variant_builder_init(&filter, G_VARIANT_TYPE_VARDICT);
	if (owner != NULL)
		g_variant_builder_add(&filter, "{sv}", "owner", g_variant_new_string(owner));
	reply =
	    confabctl_common_call(ctx, "ListTokens", g_variant_new("(a{sv})", &filter), "(aa{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	tokens = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(tokens);
		return CONFABCTL_EXIT_OK;
	}
	table = confabctl_common_table_new(header);
	g_variant_iter_init(&iter, tokens);
	while ((token = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv row = g_new0(gchar *, 8);
		row[0] = confabctl_common_dict_string(token, "id");
		row[1] = confabctl_common_dict_string(token, "owner");
		row[2] = confabctl_common_dict_string(token, "name");
		row[3] = confabctl_common_dict_string(token, "scopes");
		row[4] = confabctl_common_dict_string(token, "agent_id");
		row[5] = g_strdup(token_state(token));
		row[6] = confabctl_common_dict_string(token, "created_at");
		confabctl_common_table_add(table, row);
		g_variant_unref(token);
	}
	confabctl_common_table_print_free(table);
	return CONFABCTL_EXIT_OK;
}

gint
confabctl_token_revoke(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	return confabctl_common_simple_id_call(ctx,
					       argc,
					       argv,
					       "RevokeToken",
					       _("TOKEN_ID"),
					       _("Revokes a token: it stops working at once."),
					       _("token revoke needs one token id"));
}
