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
 * What every command shares is in cli/confabctl-common.c.
 */

#include "config.h"

#include <errno.h>
#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "cli/confabctl-common.h"

/* ---------- agents ---------- */

typedef struct {
	gchar *name;
	gchar *provider;
	gchar *instructions;
	gchar *base_url;
	gchar *upstream_model;
	gchar *api_key_file;
	gchar *params;
	gint connect_timeout;
	gint first_byte_timeout;
	gint idle_timeout;
	gint total_timeout;
	gboolean remove_api_key;
} AgentOptions;

static void
agent_options_clear(AgentOptions *o)
{
	g_free(o->name);
	g_free(o->provider);
	g_free(o->instructions);
	g_free(o->base_url);
	g_free(o->upstream_model);
	g_free(o->api_key_file);
	g_free(o->params);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(AgentOptions, agent_options_clear)

static GOptionContext *
agent_context(const gchar *parameter, const gchar *summary, gboolean update, AgentOptions *o)
{
	const GOptionEntry entries[] = {
	    {"name", 0, 0, G_OPTION_ARG_STRING, &o->name, N_("The agent's name"), N_("NAME")},
	    {"provider",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &o->provider,
	     N_("echo (built in) or openai (any OpenAI-compatible upstream)"),
	     N_("PROVIDER")},
	    {"instructions",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &o->instructions,
	     N_("The system message every turn starts with"),
	     N_("TEXT")},
	    {"base-url",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &o->base_url,
	     N_("The upstream's base URL, as the OpenAI SDKs take it"),
	     N_("URL")},
	    {"upstream-model",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &o->upstream_model,
	     N_("The model the upstream is asked for"),
	     N_("MODEL")},
	    {"api-key-file",
	     0,
	     0,
	     G_OPTION_ARG_FILENAME,
	     &o->api_key_file,
	     N_("A file holding the upstream API key, or - for standard input (read here, "
		"never shown again)"),
	     N_("FILE")},
	    {"params",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &o->params,
	     N_("Default request parameters, as a JSON object"),
	     N_("JSON")},
	    {"connect-timeout",
	     0,
	     0,
	     G_OPTION_ARG_INT,
	     &o->connect_timeout,
	     N_("Seconds to connect to the upstream"),
	     N_("S")},
	    {"first-byte-timeout",
	     0,
	     0,
	     G_OPTION_ARG_INT,
	     &o->first_byte_timeout,
	     N_("Seconds until the upstream's first byte"),
	     N_("S")},
	    {"idle-timeout",
	     0,
	     0,
	     G_OPTION_ARG_INT,
	     &o->idle_timeout,
	     N_("Seconds the upstream may pause between chunks"),
	     N_("S")},
	    {"total-timeout",
	     0,
	     0,
	     G_OPTION_ARG_INT,
	     &o->total_timeout,
	     N_("Seconds a whole answer may take"),
	     N_("S")},
	    {NULL},
	};
	const GOptionEntry update_entries[] = {
	    {"remove-api-key",
	     0,
	     0,
	     G_OPTION_ARG_NONE,
	     &o->remove_api_key,
	     N_("Forget the upstream API key"),
	     NULL},
	    {NULL},
	};
	GOptionContext *context = confabctl_common_subcommand_context(parameter, summary, entries);

	if (update)
		g_option_context_add_main_entries(context, update_entries, GETTEXT_PACKAGE);
	o->connect_timeout = o->first_byte_timeout = o->idle_timeout = o->total_timeout = -1;
	return context;
}

/* The upstream key from @path, or standard input for "-"; NULL if unusable. */
static gchar *
read_api_key(const gchar *path)
{
	g_autofree gchar *key = NULL;
	g_autoptr(GError) error = NULL;
	gsize length = 0;
	gboolean usable;

	if (g_str_equal(path, "-")) {
		g_autoptr(GString) in = g_string_new(NULL);
		gchar buf[4096];
		gsize n;
		while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0 && in->len < 1024 * 1024)
			g_string_append_len(in, buf, n);
		if (ferror(stdin)) {
			g_printerr(_("confabctl: reading the API key: %s\n"), g_strerror(errno));
			return NULL;
		}
		length = in->len;
		key = g_string_free(g_steal_pointer(&in), FALSE);
	} else if (!g_file_get_contents(path, &key, &length, &error)) {
		g_printerr(_("confabctl: reading the API key: %s\n"), error->message);
		return NULL;
	}
	/* a key is one word: anything else is the wrong file (an env file, a PEM) */
	usable = strlen(key) == length;
	g_strstrip(key);
	usable =
	    usable && *key != '\0' && strlen(key) <= 16 * 1024 && g_utf8_validate(key, -1, NULL);
	for (const gchar *p = key; *p != '\0'; p++) {
		if ((guchar)*p <= ' ' || (guchar)*p == 0x7f)
			usable = FALSE;
	}
	if (!usable) {
		g_printerr(_("confabctl: %s holds no usable API key\n"),
			   g_str_equal(path, "-") ? _("standard input") : path);
		memset(key, 0, strlen(key));
		return NULL;
	}
	return g_steal_pointer(&key);
}

/* The agent's a{sv}; NULL and *exit_code set if an option is unusable. */
static GVariant *
agent_props(AgentOptions *o, gint *exit_code)
{
	GVariantBuilder props;
	const struct {
		const gchar *key;
		const gchar *value;
	} strings[] = {
	    {"name", o->name},
	    {"provider", o->provider},
	    {"instructions", o->instructions},
	    {"base_url", o->base_url},
	    {"upstream_model", o->upstream_model},
	    {"params", o->params},
	};
	const struct {
		const gchar *key;
		const gchar *option;
		gint value;
	} timeouts[] = {
	    {"connect_timeout", "--connect-timeout", o->connect_timeout},
	    {"first_byte_timeout", "--first-byte-timeout", o->first_byte_timeout},
	    {"idle_timeout", "--idle-timeout", o->idle_timeout},
	    {"total_timeout", "--total-timeout", o->total_timeout},
	};

	g_variant_builder_init(&props, G_VARIANT_TYPE_VARDICT);
	for (guint i = 0; i < G_N_ELEMENTS(strings); i++) {
		if (strings[i].value != NULL)
			g_variant_builder_add(&props,
					      "{sv}",
					      strings[i].key,
					      g_variant_new_string(strings[i].value));
	}
	for (guint i = 0; i < G_N_ELEMENTS(timeouts); i++) {
		if (timeouts[i].value < -1 || timeouts[i].value > 86400) {
			g_autofree gchar *msg =
			    g_strdup_printf(_("%s must be from 0 to 86400 seconds"),
					    timeouts[i].option);
			g_variant_builder_clear(&props);
			*exit_code = confabctl_common_usage_error(msg, NULL);
			return NULL;
		}
		if (timeouts[i].value >= 0)
			g_variant_builder_add(&props,
					      "{sv}",
					      timeouts[i].key,
					      g_variant_new_uint32(timeouts[i].value));
	}
	if (o->api_key_file != NULL && o->remove_api_key) {
		g_variant_builder_clear(&props);
		*exit_code = confabctl_common_usage_error(
		    _("--api-key-file and --remove-api-key exclude each other"),
		    NULL);
		return NULL;
	}
	if (o->api_key_file != NULL) {
		g_autofree gchar *key = read_api_key(o->api_key_file);
		if (key == NULL) {
			g_variant_builder_clear(&props);
			*exit_code = CONFABCTL_EXIT_FAILED;
			return NULL;
		}
		g_variant_builder_add(&props, "{sv}", "api_key", g_variant_new_string(key));
		memset(key, 0, strlen(key));
	}
	if (o->remove_api_key)
		g_variant_builder_add(&props, "{sv}", "api_key", g_variant_new_string(""));
	return g_variant_builder_end(&props);
}

static gint
cmd_agent_create(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_auto(AgentOptions) o = {0};
	g_autoptr(GOptionContext) context =
	    agent_context(NULL, _("Creates an agent and prints its id."), FALSE, &o);
	g_autoptr(GVariant) reply = NULL;
	GVariant *props;
	gint code = CONFABCTL_EXIT_OK;
	const gchar *id;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1 || o.name == NULL || o.provider == NULL)
		return confabctl_common_usage_error(_("agent create needs --name and --provider"),
						    context);
	props = agent_props(&o, &code);
	if (props == NULL)
		return code;
	reply = confabctl_common_call(ctx, "CreateAgent", g_variant_new("(@a{sv})", props), "(s)");
	if (reply == NULL)
		return ctx->exit_code;
	g_variant_get(reply, "(&s)", &id);
	if (ctx->json) {
		g_autoptr(GVariant) obj =
		    g_variant_ref_sink(g_variant_new_parsed("{'id': <%s>}", id));
		confabctl_common_print_variant_json(obj);
	} else {
		g_print("%s\n", id);
	}
	return CONFABCTL_EXIT_OK;
}

static gint
cmd_agent_update(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_auto(AgentOptions) o = {0};
	g_autoptr(GOptionContext) context =
	    agent_context(_("AGENT_ID"), _("Changes the given settings of an agent."), TRUE, &o);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) props = NULL;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return confabctl_common_usage_error(_("agent update needs one agent id"), context);
	props = agent_props(&o, &code);
	if (props == NULL)
		return code;
	g_variant_ref_sink(props);
	if (g_variant_n_children(props) == 0)
		return confabctl_common_usage_error(
		    _("agent update needs at least one setting to change"),
		    context);
	reply = confabctl_common_call(ctx,
				      "UpdateAgent",
				      g_variant_new("(s@a{sv})", argv[1], props),
				      "()");
	return reply != NULL ? CONFABCTL_EXIT_OK : ctx->exit_code;
}

static gint
cmd_agent_list(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context =
	    confabctl_common_subcommand_context(NULL, _("Lists the agents."), NULL);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) agents = NULL;
	const gchar *header[] =
	    {N_("ID"), N_("NAME"), N_("PROVIDER"), N_("MODEL"), N_("BASE URL"), NULL};
	const gchar *translated[G_N_ELEMENTS(header)] = {NULL};
	gint code = CONFABCTL_EXIT_OK;
	ConfabctlTable *table;
	GVariantIter iter;
	GVariant *agent;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1)
		return confabctl_common_usage_error(_("agent list takes no argument"), context);
	reply = confabctl_common_call(ctx, "ListAgents", NULL, "(aa{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	agents = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(agents);
		return CONFABCTL_EXIT_OK;
	}
	for (guint i = 0; header[i] != NULL; i++)
		translated[i] = _(header[i]);
	table = confabctl_common_table_new(translated);
	g_variant_iter_init(&iter, agents);
	while ((agent = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv row = g_new0(gchar *, 6);
		row[0] = confabctl_common_dict_string(agent, "id");
		row[1] = confabctl_common_dict_string(agent, "name");
		row[2] = confabctl_common_dict_string(agent, "provider");
		row[3] = confabctl_common_dict_string(agent, "upstream_model");
		row[4] = confabctl_common_dict_string(agent, "base_url");
		confabctl_common_table_add(table, row);
		g_variant_unref(agent);
	}
	confabctl_common_table_print_free(table);
	return CONFABCTL_EXIT_OK;
}

static gint
cmd_agent_show(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context =
	    confabctl_common_subcommand_context(_("AGENT_ID"),
						_("Shows an agent (never its API key)."),
						NULL);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) agent = NULL;
	const gchar *const keys[] = {"id",
				     "name",
				     "provider",
				     "instructions",
				     "base_url",
				     "upstream_model",
				     "has_api_key",
				     "params",
				     "connect_timeout",
				     "first_byte_timeout",
				     "idle_timeout",
				     "total_timeout",
				     "created_at",
				     "updated_at",
				     NULL};
	const gchar *const labels[] = {N_("Id"),
				       N_("Name"),
				       N_("Provider"),
				       N_("Instructions"),
				       N_("Base URL"),
				       N_("Upstream model"),
				       N_("API key set"),
				       N_("Parameters"),
				       N_("Connect timeout"),
				       N_("First byte timeout"),
				       N_("Idle timeout"),
				       N_("Total timeout"),
				       N_("Created"),
				       N_("Updated"),
				       NULL};
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return confabctl_common_usage_error(_("agent show needs one agent id"), context);
	reply = confabctl_common_call(ctx, "GetAgent", g_variant_new("(s)", argv[1]), "(a{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	agent = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(agent);
	} else {
		/* a timeout of 0 is the configured default: say so */
		const gchar *const timeouts[] = {"connect_timeout",
						 "first_byte_timeout",
						 "idle_timeout",
						 "total_timeout"};
		g_autofree gchar *by_default = g_strdup_printf(_("%s (the default)"), "0");
		g_auto(GVariantDict) shown = G_VARIANT_DICT_INIT(agent);
		g_autoptr(GVariant) display = NULL;
		for (guint i = 0; i < G_N_ELEMENTS(timeouts); i++) {
			guint32 seconds = 1;
			if (g_variant_dict_lookup(&shown, timeouts[i], "u", &seconds) &&
			    seconds == 0)
				g_variant_dict_insert(&shown, timeouts[i], "s", by_default);
		}
		display = g_variant_ref_sink(g_variant_dict_end(&shown));
		confabctl_common_print_fields(display, keys, labels);
	}
	return CONFABCTL_EXIT_OK;
}

static gint
cmd_agent_delete(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	return confabctl_common_simple_id_call(ctx,
					       argc,
					       argv,
					       "DeleteAgent",
					       _("AGENT_ID"),
					       _("Deletes an agent; its conversations stay."),
					       _("agent delete needs one agent id"));
}

/* ---------- tokens ---------- */

static gint
cmd_token_create(ConfabctlContext *ctx, gint argc, gchar **argv)
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

static gint
cmd_token_list(ConfabctlContext *ctx, gint argc, gchar **argv)
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

static gint
cmd_token_revoke(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	return confabctl_common_simple_id_call(ctx,
					       argc,
					       argv,
					       "RevokeToken",
					       _("TOKEN_ID"),
					       _("Revokes a token: it stops working at once."),
					       _("token revoke needs one token id"));
}

/* ---------- quota and usage ---------- */

static gint
cmd_quota_set(ConfabctlContext *ctx, gint argc, gchar **argv)
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

static gint
cmd_usage(ConfabctlContext *ctx, gint argc, gchar **argv)
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

/* ---------- sessions ---------- */

static gint
cmd_session_list(ConfabctlContext *ctx, gint argc, gchar **argv)
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

static gint
cmd_session_show(ConfabctlContext *ctx, gint argc, gchar **argv)
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
		g_autofree gchar *when = confabctl_common_dict_string(message, "created_at");
		g_autofree gchar *role = confabctl_common_dict_string(message, "role");
		g_autofree gchar *status = confabctl_common_dict_string(message, "status");
		const gchar *content = NULL;
		g_autofree gchar *text = NULL;
		g_autofree gchar *raw = NULL;
		g_variant_lookup(message, "content", "&s", &content);
		raw = content_text(content);
		text = confabctl_common_sanitize(raw, TRUE);
		if (g_strcmp0(status, "completed") == 0 || g_strcmp0(status, "-") == 0)
			g_print("[%s] %s: %s\n", when, role, text);
		else
			g_print("[%s] %s (%s): %s\n", when, role, status, text);
		g_variant_unref(message);
	}
	return CONFABCTL_EXIT_OK;
}

static gint
cmd_session_delete(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	return confabctl_common_simple_id_call(ctx,
					       argc,
					       argv,
					       "DeleteSession",
					       _("SESSION_ID"),
					       _("Deletes a conversation and its messages."),
					       _("session delete needs one session id"));
}

/* ---------- status ---------- */

static gint
cmd_status(ConfabctlContext *ctx, gint argc, gchar **argv)
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

/* ---------- main ---------- */

typedef struct {
	const gchar *noun;
	const gchar *verb; /* NULL: the noun alone is the command */
	ConfabctlCommandFunc func;
	const gchar *synopsis;
} Command;

static const Command commands[] = {
    {"agent",
     "create",
     cmd_agent_create,
     N_("agent create --name N --provider P [--instructions T] [--base-url U] "
	"[--upstream-model M] [--api-key-file F]")},
    {"agent", "list", cmd_agent_list, N_("agent list")},
    {"agent", "show", cmd_agent_show, N_("agent show AGENT_ID")},
    {"agent",
     "update",
     cmd_agent_update,
     N_("agent update AGENT_ID [options of create] [--remove-api-key]")},
    {"agent", "delete", cmd_agent_delete, N_("agent delete AGENT_ID")},
    {"token",
     "create",
     cmd_token_create,
     N_("token create --owner O --scope S [--scope S2] [--agent AGENT_ID] [--name N] "
	"[--expires-at UNIX_TIME]")},
    {"token", "list", cmd_token_list, N_("token list [--owner O]")},
    {"token", "revoke", cmd_token_revoke, N_("token revoke TOKEN_ID")},
    {"quota", "set", cmd_quota_set, N_("quota set OWNER REQUESTS")},
    {"usage", NULL, cmd_usage, N_("usage OWNER")},
    {"session",
     "list",
     cmd_session_list,
     N_("session list [--owner O] [--agent A] [--source api|channel] [--limit N] "
	"[--after SESSION_ID]")},
    {"session",
     "show",
     cmd_session_show,
     N_("session show SESSION_ID [--limit N] [--after MESSAGE_ID]")},
    {"session", "delete", cmd_session_delete, N_("session delete SESSION_ID")},
    {"status", NULL, cmd_status, N_("status")},
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
