/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/* confabctl agent create|update|list|show|delete */

#include "config.h"

#include <errno.h>
#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#include "cli/confabctl-agent.h"
#include "cli/confabctl-common.h"

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
	gchar *mcp_config;
	gint max_steps;
	gboolean remove_api_key;
	gchar **upstreams; /* --upstream, repeated */
	gchar *routing;
	gint hedge_after_ms;
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
	g_free(o->mcp_config);
	g_strfreev(o->upstreams);
	g_free(o->routing);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(AgentOptions, agent_options_clear)

/* the upstream's timeouts and the agent's tools */
static void
add_limit_entries(GOptionContext *context, AgentOptions *o)
{
	const GOptionEntry entries[] = {
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
	    {"mcp-config",
	     0,
	     0,
	     G_OPTION_ARG_FILENAME,
	     &o->mcp_config,
	     N_("The agent's own tools: a file of MCP servers in the mcpServers JSON shape "
		"(an empty file removes them)"),
	     N_("FILE")},
	    {"max-steps",
	     0,
	     0,
	     G_OPTION_ARG_INT,
	     &o->max_steps,
	     N_("Model calls of one turn that may ask for tools (1 to 100)"),
	     N_("N")},
	    {"upstream",
	     0,
	     0,
	     G_OPTION_ARG_STRING_ARRAY,
	     &o->upstreams,
	     N_("A target, in order (repeat for each; replaces them all): "
		"label=L,base_url=U,model=M[,key_file=FILE][,weight=W][,connect_timeout=S]"
		"[,first_byte_timeout=S][,idle_timeout=S][,total_timeout=S]"),
	     N_("SPEC")},
	    {"routing",
	     0,
	     0,
	     G_OPTION_ARG_STRING,
	     &o->routing,
	     N_("How a model call picks its target: fallback, weighted or least-busy"),
	     N_("STRATEGY")},
	    {"hedge-after-ms",
	     0,
	     0,
	     G_OPTION_ARG_INT,
	     &o->hedge_after_ms,
	     N_("Start the next target beside one that sent nothing for this long (0: never)"),
	     N_("MS")},
	    {NULL},
	};

	g_option_context_add_main_entries(context, entries, GETTEXT_PACKAGE);
	o->connect_timeout = o->first_byte_timeout = o->idle_timeout = o->total_timeout = -1;
	o->max_steps = -1;
	o->hedge_after_ms = -1;
}

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

	add_limit_entries(context, o);
	if (update)
		g_option_context_add_main_entries(context, update_entries, GETTEXT_PACKAGE);
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

/* The agent's tool servers from @path, as sent; NULL if unreadable. */
static gchar *
read_mcp_config(const gchar *path)
{
	g_autofree gchar *text = NULL;
	g_autoptr(GError) error = NULL;
	gsize length = 0;

	if (!g_file_get_contents(path, &text, &length, &error)) {
		g_printerr(_("confabctl: reading the tool servers: %s\n"), error->message);
		return NULL;
	}
	if (strlen(text) != length || !g_utf8_validate(text, -1, NULL)) {
		g_printerr(_("confabctl: %s is not UTF-8 text\n"), path);
		return NULL;
	}
	return g_strstrip(g_steal_pointer(&text));
}

static gboolean
spec_error(gint *exit_code, const gchar *spec, const gchar *why)
{
	g_autofree gchar *msg = g_strdup_printf(_("--upstream %s: %s"), spec, why);
	*exit_code = confabctl_common_usage_error(msg, NULL);
	return FALSE;
}

/* One --upstream SPEC into @builder's array: its keys read here, from
 * key_file, as --api-key-file does. */
static gboolean
add_upstream_spec(JsonBuilder *builder, const gchar *spec, gint *exit_code)
{
	static const gchar *const numbers[] = {"weight",
					       "connect_timeout",
					       "first_byte_timeout",
					       "idle_timeout",
					       "total_timeout",
					       NULL};
	g_auto(GStrv) pairs = g_strsplit(spec, ",", -1);

	json_builder_begin_object(builder);
	for (guint i = 0; pairs[i] != NULL; i++) {
		const gchar *eq = strchr(pairs[i], '=');
		g_autofree gchar *key = NULL;
		const gchar *value;
		guint64 number;

		if (eq == NULL || eq == pairs[i])
			return spec_error(exit_code, spec, _("each part must be KEY=VALUE"));
		key = g_strndup(pairs[i], eq - pairs[i]);
		value = eq + 1;
		if (g_str_equal(key, "label") || g_str_equal(key, "base_url")) {
			json_builder_set_member_name(builder, key);
			json_builder_add_string_value(builder, value);
		} else if (g_str_equal(key, "model")) {
			json_builder_set_member_name(builder, "upstream_model");
			json_builder_add_string_value(builder, value);
		} else if (g_str_equal(key, "key_file")) {
			g_autofree gchar *api_key = read_api_key(value);
			if (api_key == NULL) {
				*exit_code = CONFABCTL_EXIT_FAILED;
				return FALSE;
			}
			json_builder_set_member_name(builder, "api_key");
			json_builder_add_string_value(builder, api_key);
			memset(api_key, 0, strlen(api_key));
		} else if (g_strv_contains(numbers, key)) {
			if (!g_ascii_string_to_unsigned(value, 10, 0, 86400, &number, NULL))
				return spec_error(exit_code, spec, _("a number is expected"));
			json_builder_set_member_name(builder, key);
			json_builder_add_int_value(builder, (gint64)number);
		} else {
			return spec_error(exit_code,
					  spec,
					  _("the keys are label, base_url, model, key_file, weight "
					    "and the four timeouts"));
		}
	}
	json_builder_end_object(builder);
	return TRUE;
}

/* --upstream (the targets, all of them), --routing and --hedge-after-ms
 * into @props. */
static gboolean
add_routing_props(AgentOptions *o, GVariantBuilder *props, gint *exit_code)
{
	if (o->upstreams != NULL) {
		g_autoptr(JsonBuilder) builder = json_builder_new();
		g_autoptr(JsonNode) root = NULL;
		g_autofree gchar *json = NULL;

		if (o->base_url != NULL || o->upstream_model != NULL || o->api_key_file != NULL) {
			*exit_code = confabctl_common_usage_error(
			    _("--upstream names every target: --base-url, --upstream-model "
			      "and --api-key-file go in its first"),
			    NULL);
			return FALSE;
		}
		json_builder_begin_array(builder);
		for (guint i = 0; o->upstreams[i] != NULL; i++)
			if (!add_upstream_spec(builder, o->upstreams[i], exit_code))
				return FALSE;
		json_builder_end_array(builder);
		root = json_builder_get_root(builder);
		json = json_to_string(root, FALSE);
		g_variant_builder_add(props, "{sv}", "upstreams", g_variant_new_string(json));
		memset(json, 0, strlen(json));
	}
	if (o->routing != NULL || o->hedge_after_ms != -1) {
		g_autofree gchar *json = NULL;
		if (o->hedge_after_ms < -1) {
			*exit_code =
			    confabctl_common_usage_error(_("--hedge-after-ms must be 0 or more"),
							 NULL);
			return FALSE;
		}
		if (o->routing != NULL && o->hedge_after_ms != -1)
			json = g_strdup_printf("{\"strategy\":\"%s\",\"hedge_after_ms\":%d}",
					       o->routing,
					       o->hedge_after_ms);
		else if (o->routing != NULL)
			json = g_strdup_printf("{\"strategy\":\"%s\"}", o->routing);
		else
			json = g_strdup_printf("{\"hedge_after_ms\":%d}", o->hedge_after_ms);
		if (o->routing != NULL && strpbrk(o->routing, "\"\\") != NULL) {
			*exit_code = confabctl_common_usage_error(
			    _("--routing is fallback, weighted or least-busy"),
			    NULL);
			return FALSE;
		}
		g_variant_builder_add(props, "{sv}", "routing", g_variant_new_string(json));
	}
	return TRUE;
}

/* The agent's tool options, into @props; FALSE and *exit_code set if one is
 * unusable. */
static gboolean
add_tool_props(AgentOptions *o, GVariantBuilder *props, gint *exit_code)
{
	if (o->max_steps != -1 && (o->max_steps < 1 || o->max_steps > 100)) {
		*exit_code =
		    confabctl_common_usage_error(_("--max-steps must be from 1 to 100"), NULL);
		return FALSE;
	}
	if (o->max_steps != -1)
		g_variant_builder_add(props,
				      "{sv}",
				      "max_steps",
				      g_variant_new_uint32(o->max_steps));
	if (o->mcp_config != NULL) {
		g_autofree gchar *text = read_mcp_config(o->mcp_config);
		if (text == NULL) {
			*exit_code = CONFABCTL_EXIT_FAILED;
			return FALSE;
		}
		g_variant_builder_add(props, "{sv}", "mcp_servers", g_variant_new_string(text));
	}
	return TRUE;
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
	if (!add_tool_props(o, &props, exit_code) || !add_routing_props(o, &props, exit_code)) {
		g_variant_builder_clear(&props);
		return NULL;
	}
	return g_variant_builder_end(&props);
}

gint
confabctl_agent_create(ConfabctlContext *ctx, gint argc, gchar **argv)
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

gint
confabctl_agent_update(ConfabctlContext *ctx, gint argc, gchar **argv)
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

gint
confabctl_agent_list(ConfabctlContext *ctx, gint argc, gchar **argv)
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

gint
confabctl_agent_show(ConfabctlContext *ctx, gint argc, gchar **argv)
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
				     "max_steps",
				     "mcp_servers",
				     "upstreams",
				     "routing",
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
				       N_("Max steps"),
				       N_("Tool servers"),
				       N_("Upstream targets"),
				       N_("Routing"),
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

gint
confabctl_agent_delete(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	return confabctl_common_simple_id_call(ctx,
					       argc,
					       argv,
					       "DeleteAgent",
					       _("AGENT_ID"),
					       _("Deletes an agent; its conversations stay."),
					       _("agent delete needs one agent id"));
}

gint
confabctl_agent_tools(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    _("AGENT_ID"),
	    _("Lists an agent's own tools, starting its tool servers if need be."),
	    NULL);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) tools = NULL;
	const gchar *header[] = {N_("TOOL"), N_("SERVER"), N_("STATUS"), N_("DESCRIPTION"), NULL};
	const gchar *translated[G_N_ELEMENTS(header)] = {NULL};
	gint code = CONFABCTL_EXIT_OK;
	ConfabctlTable *table;
	GVariantIter iter;
	GVariant *tool;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return confabctl_common_usage_error(_("agent tools needs one agent id"), context);
	reply =
	    confabctl_common_call(ctx, "ListAgentTools", g_variant_new("(s)", argv[1]), "(aa{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	tools = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(tools);
		return CONFABCTL_EXIT_OK;
	}
	for (guint i = 0; header[i] != NULL; i++)
		translated[i] = _(header[i]);
	table = confabctl_common_table_new(translated);
	g_variant_iter_init(&iter, tools);
	while ((tool = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv row = g_new0(gchar *, 5);
		row[0] = confabctl_common_dict_string(tool, "name");
		row[1] = confabctl_common_dict_string(tool, "server");
		row[2] = confabctl_common_dict_string(tool, "status");
		row[3] = confabctl_common_dict_string(tool, "description");
		confabctl_common_table_add(table, row);
		g_variant_unref(tool);
	}
	confabctl_common_table_print_free(table);
	return CONFABCTL_EXIT_OK;
}

/**
 * confabctl_agent_authorize:
 * @ctx: the connection
 * @argc: the arguments' count
 * @argv: `authorize AGENT_ID SERVER`
 *
 * Prints the URL a person opens to authorize Confab at an agent's remote
 * MCP server (OAuth); the tokens stay in the daemon.
 *
 * Returns: the exit code
 */
gint
confabctl_agent_authorize(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    _("AGENT_ID SERVER"),
	    _("Prints the URL to open to authorize Confab at an agent's remote MCP server. "
	      "Once the authorization server sends you back to confabd, the server's tools "
	      "are available."),
	    NULL);
	g_autoptr(GVariant) reply = NULL;
	const gchar *url = NULL;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 3)
		return confabctl_common_usage_error(
		    _("agent authorize needs an agent id and a server name"),
		    context);
	reply = confabctl_common_call(ctx,
				      "AuthorizeMcpServer",
				      g_variant_new("(ss)", argv[1], argv[2]),
				      "(s)");
	if (reply == NULL)
		return ctx->exit_code;
	g_variant_get(reply, "(&s)", &url);
	if (ctx->json) {
		g_autoptr(GVariant) dict = NULL;
		GVariantDict d;
		g_variant_dict_init(&d, NULL);
		g_variant_dict_insert(&d, "url", "s", url);
		dict = g_variant_ref_sink(g_variant_dict_end(&d));
		confabctl_common_print_variant_json(dict);
		return CONFABCTL_EXIT_OK;
	}
	g_print(_("Open this URL to authorize Confab at %s:\n%s\n"), argv[2], url);
	return CONFABCTL_EXIT_OK;
}

/* "since" and "skip_until" as people read them; 0 is never */
static gchar *
health_time(GVariant *target, const gchar *key)
{
	gint64 when = 0;

	if (!g_variant_lookup(target, key, "x", &when) || when == 0)
		return g_strdup("-");
	return confabctl_common_format_time(when);
}

/**
 * confabctl_agent_health:
 * @ctx: the connection
 * @argc: the arguments' count
 * @argv: `health AGENT_ID`
 *
 * Prints the health of an agent's upstream targets, as the daemon sees it.
 *
 * Returns: the exit code
 */
gint
confabctl_agent_health(ConfabctlContext *ctx, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context = confabctl_common_subcommand_context(
	    _("AGENT_ID"),
	    _("Shows the health of an agent's upstream targets on this daemon."),
	    NULL);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) targets = NULL;
	const gchar *header[] = {N_("TARGET"),
				 N_("STATE"),
				 N_("FAILURES"),
				 N_("SINCE"),
				 N_("SKIPPED UNTIL"),
				 N_("LAST ERROR"),
				 NULL};
	const gchar *translated[G_N_ELEMENTS(header)] = {NULL};
	gint code = CONFABCTL_EXIT_OK;
	ConfabctlTable *table;
	GVariantIter iter;
	GVariant *target;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return confabctl_common_usage_error(_("agent health needs one agent id"), context);
	reply =
	    confabctl_common_call(ctx, "GetAgentHealth", g_variant_new("(s)", argv[1]), "(aa{sv})");
	if (reply == NULL)
		return ctx->exit_code;
	targets = g_variant_get_child_value(reply, 0);
	if (ctx->json) {
		confabctl_common_print_variant_json(targets);
		return CONFABCTL_EXIT_OK;
	}
	for (guint i = 0; header[i] != NULL; i++)
		translated[i] = _(header[i]);
	table = confabctl_common_table_new(translated);
	g_variant_iter_init(&iter, targets);
	while ((target = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv row = g_new0(gchar *, 7);
		guint32 failures = 0;

		g_variant_lookup(target, "failures", "u", &failures);
		row[0] = confabctl_common_dict_string(target, "label");
		row[1] = confabctl_common_dict_string(target, "state");
		row[2] = g_strdup_printf("%u", failures);
		row[3] = health_time(target, "since");
		row[4] = health_time(target, "skip_until");
		row[5] = confabctl_common_dict_string(target, "last_error");
		confabctl_common_table_add(table, row);
		g_variant_unref(target);
	}
	confabctl_common_table_print_free(table);
	return CONFABCTL_EXIT_OK;
}
