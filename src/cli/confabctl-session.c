/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* confabctl session list|show|delete */

#include "config.h"

#include <glib/gi18n.h>
#include <json-glib/json-glib.h>

#include "cli/confabctl-common.h"
#include "cli/confabctl-session.h"

gint
confabctl_session_list(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autofree gchar *owner = NULL;
	g_autofree gchar *agent = NULL;
	g_autofree gchar *source = NULL;
	g_autofree gchar *after = NULL;
	gint limit = -1; /* not given */
	const GOptionEntry entries[] = {
	    {"owner", 0, 0, G_OPTION_ARG_STRING, &owner, N_("Only this owner's"), N_("OWNER")},
	    {"agent", 0, 0, G_OPTION_ARG_STRING, &agent, N_("Only this agent's"), N_("AGENT_ID")},
	    {"source", 0, 0, G_OPTION_ARG_STRING, &source, N_("api or channel"), N_("SOURCE")},
	    {"limit", 0, 0, G_OPTION_ARG_INT, &limit, N_("At most this many (1 to 1000)"), N_("N")},
	    {"after",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &after,
	     N_("Continue after this session id"),
	     N_("SESSION_ID")},
	    {NULL},
	};
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    NULL,
	    _("Lists conversations of every source, newest first."),
	    entries);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) sessions = NULL;
	GVariantBuilder filter;
	const gchar *header[] =
	    {_("ID"), _("SOURCE"), _("OWNER"), _("AGENT"), _("UPDATED"), _("TITLE"), NULL};
	gint code = CONFABCTL_EXIT_OK;
	ConfabctlTable *table;
	GVariantIter iter;
	GVariant *session;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1)
		return confabctl_common_usage_error(_("session list takes no argument"), context);
	if (limit != -1 && (limit < 1 || limit > 1000))
		return confabctl_common_usage_error(_("--limit must be from 1 to 1000"), context);
	if (source != NULL && !g_str_equal(source, "api") && !g_str_equal(source, "channel"))
		return confabctl_common_usage_error(_("--source must be api or channel"), context);
	g_variant_builder_init(&filter, G_VARIANT_TYPE_VARDICT);
	if (owner != NULL)
		g_variant_builder_add(&filter, "{sv}", "owner", g_variant_new_string(owner));
	if (agent != NULL)
		g_variant_builder_add(&filter, "{sv}", "agent_id", g_variant_new_string(agent));
	if (source != NULL)
		g_variant_builder_add(&filter, "{sv}", "source", g_variant_new_string(source));
	if (after != NULL)
		g_variant_builder_add(&filter, "{sv}", "after", g_variant_new_string(after));
	if (limit > 0)
		g_variant_builder_add(&filter, "{sv}", "limit", g_variant_new_uint32(limit));
	reply = confabctl_common_call(ctx,
				      "ListSessions",
				      g_variant_new("(a{sv})", &filter),
				      "(aa{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	sessions = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(sessions);
		return CONFABCTL_EXIT_OK;
	}
	table = confabctl_common_table_new(header);
	g_variant_iter_init(&iter, sessions);
	while ((session = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv row = g_new0(gchar *, 7);
		row[0] = confabctl_common_dict_string(session, "id");
		row[1] = confabctl_common_dict_string(session, "source");
		row[2] = confabctl_common_dict_string(session, "owner");
		row[3] = confabctl_common_dict_string(session, "agent_id");
		row[4] = confabctl_common_dict_string(session, "updated_at");
		row[5] = confabctl_common_dict_string(session, "title");
		confabctl_common_table_add(table, row);
		g_variant_unref(session);
	}
	confabctl_common_table_print_free(table);
	return CONFABCTL_EXIT_OK;
}

/* The readable text of a message's content (OpenAI parts, as JSON). */
static gchar *
content_text(const gchar *content_json)
{
	g_autoptr(JsonParser) parser = json_parser_new();
	GString *out = g_string_new(NULL);
	JsonNode *root;

	if (content_json == NULL || !json_parser_load_from_data(parser, content_json, -1, NULL))
		return g_string_free(out, FALSE);
	root = json_parser_get_root(parser);
	if (root != NULL && JSON_NODE_HOLDS_ARRAY(root)) {
		JsonArray *parts = json_node_get_array(root);
		for (guint i = 0; i < json_array_get_length(parts); i++) {
			JsonObject *part = json_array_get_object_element(parts, i);
			const gchar *type;
			if (part == NULL)
				continue;
			type = json_object_get_string_member_with_default(part, "type", "");
			if (out->len > 0)
				g_string_append_c(out, ' ');
			if (g_str_equal(type, "text"))
				g_string_append(
				    out,
				    json_object_get_string_member_with_default(part, "text", ""));
			else
				g_string_append_printf(out, "[%s]", type);
		}
	}
	return g_string_free(out, FALSE);
}

/* The conversation's background responses running now, on any instance. */
static void
print_background(ConfabctlContext *ctx, const gchar *session_id)
{
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) responses = NULL;
	GVariantBuilder filter;
	GVariantIter iter;
	GVariant *response;

	g_variant_builder_init(&filter, G_VARIANT_TYPE_VARDICT);
	g_variant_builder_add(&filter, "{sv}", "session_id", g_variant_new_string(session_id));
	reply = confabctl_common_call(ctx,
				      "ListBackgroundResponses",
				      g_variant_new("(a{sv})", &filter),
				      "(aa{sv})");
	if (reply == NULL)
		return;
	responses = g_variant_get_child_value(reply, 0);
	g_variant_iter_init(&iter, responses);
	while ((response = g_variant_iter_next_value(&iter)) != NULL) {
		g_autofree gchar *id = confabctl_common_dict_string(response, "id");
		g_autofree gchar *status = confabctl_common_dict_string(response, "status");
		g_print(_("-- response %s runs in the background (%s) --\n"), id, status);
		g_variant_unref(response);
	}
}

gint
confabctl_session_show(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	gint limit = -1; /* not given */
	g_autofree gchar *after = NULL;
	const GOptionEntry entries[] = {
	    {"limit", 0, 0, G_OPTION_ARG_INT, &limit, N_("At most this many (1 to 1000)"), N_("N")},
	    {"after",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &after,
	     N_("Continue after this message id"),
	     N_("MESSAGE_ID")},
	    {NULL},
	};
	g_autoptr(GOptionContext) context =
	    confabctl_common_subcommand_context(_("SESSION_ID"),
						_("Shows a conversation's messages."),
						entries);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) messages = NULL;
	GVariantBuilder options;
	gint code = CONFABCTL_EXIT_OK;
	GVariantIter iter;
	GVariant *message;
	g_autofree gchar *last_response = NULL;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return confabctl_common_usage_error(_("session show needs one session id"),
						    context);
	if (limit != -1 && (limit < 1 || limit > 1000))
		return confabctl_common_usage_error(_("--limit must be from 1 to 1000"), context);
	g_variant_builder_init(&options, G_VARIANT_TYPE_VARDICT);
	if (after != NULL)
		g_variant_builder_add(&options, "{sv}", "after", g_variant_new_string(after));
	if (limit > 0)
		g_variant_builder_add(&options, "{sv}", "limit", g_variant_new_uint32(limit));
	reply = confabctl_common_call(ctx,
				      "GetMessages",
				      g_variant_new("(sa{sv})", argv[1], &options),
				      "(aa{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	messages = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(messages);
		return CONFABCTL_EXIT_OK;
	}
	g_variant_iter_init(&iter, messages);
	while ((message = g_variant_iter_next_value(&iter)) != NULL) {
		const gchar *response_id = NULL;
		g_autofree gchar *when = confabctl_common_dict_string(message, "created_at");
		g_autofree gchar *role = confabctl_common_dict_string(message, "role");
		g_autofree gchar *status = confabctl_common_dict_string(message, "status");
		const gchar *content = NULL;
		g_autofree gchar *text = NULL;
		g_autofree gchar *raw = NULL;
		g_variant_lookup(message, "content", "&s", &content);
		/* the turns of the Responses API: each response once, before its
		 * messages */
		if (g_variant_lookup(message, "response_id", "&s", &response_id) &&
		    g_strcmp0(response_id, last_response) != 0) {
			g_autofree gchar *clean = confabctl_common_sanitize(response_id, TRUE);
			g_print(_("-- response %s --\n"), clean);
			g_free(last_response);
			last_response = g_strdup(response_id);
		}
		raw = content_text(content);
		text = confabctl_common_sanitize(raw, TRUE);
		if (g_strcmp0(status, "completed") == 0 || g_strcmp0(status, "-") == 0)
			g_print("[%s] %s: %s\n", when, role, text);
		else
			g_print("[%s] %s (%s): %s\n", when, role, status, text);
		g_variant_unref(message);
	}
	print_background(ctx, argv[1]);
	return CONFABCTL_EXIT_OK;
}

gint
confabctl_session_delete(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	return confabctl_common_simple_id_call(ctx,
					       argc,
					       argv,
					       "DeleteSession",
					       _("SESSION_ID"),
					       _("Deletes a conversation and its messages."),
					       _("session delete needs one session id"));
}
