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
 */

#include "config.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

#define BUS_NAME    "org.confab.Confab1"
#define OBJECT_PATH "/org/confab/Confab1"
#define ADMIN_IFACE "org.confab.Confab1.Admin"

enum {
	EXIT_OK = 0,
	EXIT_FAILED = 1,
	EXIT_USAGE = 2,
	EXIT_UNREACHABLE = 3,
};

typedef struct {
	GDBusConnection *bus;
	gboolean json;
	gint exit_code;
} Ctl;

typedef gint (*CommandFunc)(Ctl *ctl, gint argc, gchar **argv);

/* ---------- output ---------- */

static void
print_json(JsonNode *node)
{
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autofree gchar *text = NULL;
	json_generator_set_root(gen, node);
	json_generator_set_pretty(gen, TRUE);
	text = json_generator_to_data(gen, NULL);
	g_print("%s\n", text);
}

static void
print_variant_json(GVariant *value)
{
	g_autoptr(JsonNode) node = json_gvariant_serialize(value);
	print_json(node);
}

static gchar *
format_time(gint64 unix_seconds)
{
	g_autoptr(GDateTime) dt = NULL;
	if (unix_seconds <= 0)
		return g_strdup("-");
	dt = g_date_time_new_from_unix_local(unix_seconds);
	return dt != NULL ? g_date_time_format(dt, "%Y-%m-%d %H:%M") : g_strdup("-");
}

/*
 * Titles and messages come from API users: printed raw, an escape sequence
 * in them could rewrite the administrator's terminal. Control characters
 * become U+FFFD; line breaks and tabs too unless @keep_lines (then only
 * a tab becomes a space).
 */
static gchar *
sanitize(const gchar *text, gboolean keep_lines)
{
	g_autofree gchar *valid = g_utf8_make_valid(text, -1);
	GString *out = g_string_sized_new(strlen(valid));

	for (const gchar *p = valid; *p != '\0'; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		if (keep_lines && c == '\n')
			g_string_append_c(out, '\n');
		else if (c == '\t' || (!keep_lines && (c == '\n' || c == '\r')))
			g_string_append_c(out, ' ');
		else if (g_unichar_iscntrl(c) || c == 0x2028 || c == 0x2029)
			g_string_append_unichar(out, 0xFFFD);
		else
			g_string_append_unichar(out, c);
	}
	return g_string_free(out, FALSE);
}

/* Terminal columns: wide (CJK) characters take two, combining ones none. */
static guint
display_width(const gchar *text)
{
	guint width = 0;
	for (const gchar *p = text; *p != '\0'; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		if (!g_unichar_iszerowidth(c))
			width += g_unichar_iswide(c) ? 2 : 1;
	}
	return width;
}

/* A member of an a{sv} as text for people, or "-". */
static gchar *
dict_text(GVariant *dict, const gchar *key)
{
	g_autoptr(GVariant) value = g_variant_lookup_value(dict, key, NULL);
	if (value == NULL)
		return g_strdup("-");
	if (g_variant_is_of_type(value, G_VARIANT_TYPE_STRING))
		return g_strdup(*g_variant_get_string(value, NULL) != '\0'
				    ? g_variant_get_string(value, NULL)
				    : "-");
	if (g_variant_is_of_type(value, G_VARIANT_TYPE_INT64))
		return format_time(g_variant_get_int64(value));
	if (g_variant_is_of_type(value, G_VARIANT_TYPE_BOOLEAN))
		return g_strdup(g_variant_get_boolean(value) ? _("yes") : _("no"));
	if (g_variant_is_of_type(value, G_VARIANT_TYPE_STRING_ARRAY)) {
		const gchar **strv = g_variant_get_strv(value, NULL);
		gchar *joined = g_strjoinv(",", (gchar **)strv);
		g_free(strv);
		return joined;
	}
	return g_variant_print(value, FALSE);
}

/* The same on one line, safe to print in a table. */
static gchar *
dict_string(GVariant *dict, const gchar *key)
{
	g_autofree gchar *text = dict_text(dict, key);
	return sanitize(text, FALSE);
}

/* A table: a header row and rows of strings, columns padded to fit. */
typedef struct {
	GPtrArray *rows; /* GStrv */
	guint columns;
} Table;

static Table *
table_new(const gchar *const *header)
{
	Table *table = g_new0(Table, 1);
	table->rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	table->columns = g_strv_length((gchar **)header);
	g_ptr_array_add(table->rows, g_strdupv((gchar **)header));
	return table;
}

static void
table_add(Table *table, GStrv row)
{
	g_assert(g_strv_length(row) == table->columns);
	g_ptr_array_add(table->rows, row);
}

static void
table_print_free(Table *table)
{
	g_autofree guint *widths = g_new0(guint, table->columns);

	for (guint r = 0; r < table->rows->len; r++) {
		GStrv row = g_ptr_array_index(table->rows, r);
		for (guint c = 0; c < table->columns; c++)
			widths[c] = MAX(widths[c], display_width(row[c]));
	}
	for (guint r = 0; r < table->rows->len; r++) {
		GStrv row = g_ptr_array_index(table->rows, r);
		GString *line = g_string_new(NULL);
		for (guint c = 0; c < table->columns; c++) {
			g_string_append(line, row[c]);
			if (c + 1 < table->columns) {
				for (guint pad = display_width(row[c]); pad < widths[c] + 2; pad++)
					g_string_append_c(line, ' ');
			}
		}
		g_print("%s\n", line->str);
		g_string_free(line, TRUE);
	}
	g_ptr_array_unref(table->rows);
	g_free(table);
}

/* ---------- calling the daemon ---------- */

/* Whether @error means nobody answers for the service, rather than a refusal. */
static gboolean
error_is_unreachable(const GError *error)
{
	if (error->domain == G_DBUS_ERROR) {
		switch (error->code) {
		case G_DBUS_ERROR_SERVICE_UNKNOWN:
		case G_DBUS_ERROR_NAME_HAS_NO_OWNER:
		case G_DBUS_ERROR_NO_REPLY:
		case G_DBUS_ERROR_NO_SERVER:
		case G_DBUS_ERROR_DISCONNECTED:
		case G_DBUS_ERROR_TIMEOUT:
		case G_DBUS_ERROR_TIMED_OUT:
		/* bus activation could not start the daemon */
		case G_DBUS_ERROR_SPAWN_EXEC_FAILED:
		case G_DBUS_ERROR_SPAWN_FORK_FAILED:
		case G_DBUS_ERROR_SPAWN_CHILD_EXITED:
		case G_DBUS_ERROR_SPAWN_CHILD_SIGNALED:
		case G_DBUS_ERROR_SPAWN_FAILED:
		case G_DBUS_ERROR_SPAWN_SETUP_FAILED:
		case G_DBUS_ERROR_SPAWN_CONFIG_INVALID:
		case G_DBUS_ERROR_SPAWN_SERVICE_INVALID:
		case G_DBUS_ERROR_SPAWN_SERVICE_NOT_FOUND:
		case G_DBUS_ERROR_SPAWN_PERMISSIONS_INVALID:
		case G_DBUS_ERROR_SPAWN_FILE_INVALID:
		case G_DBUS_ERROR_SPAWN_NO_MEMORY:
			return TRUE;
		default:
			return FALSE;
		}
	}
	return g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CLOSED) ||
	       g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED) ||
	       g_error_matches(error, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE) ||
	       g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
}

/* Prints a failed call's message, without the D-Bus error name; the exit code. */
static gint
report_error(GError *error)
{
	g_autofree gchar *remote = g_dbus_error_get_remote_error(error);
	g_autofree gchar *message = NULL;

	g_dbus_error_strip_remote_error(error);
	message = sanitize(error->message, FALSE);
	if (error_is_unreachable(error)) {
		g_printerr(_("confabctl: the Confab service cannot be reached (%s). Is confabd "
			     "running, on this bus?\n"),
			   message);
		return EXIT_UNREACHABLE;
	}
	if (g_strcmp0(remote, "org.freedesktop.DBus.Error.AccessDenied") == 0)
		g_printerr(_("confabctl: permission denied: %s\n"), message);
	else
		g_printerr("confabctl: %s\n", message);
	return EXIT_FAILED;
}

/* Calls an Admin method; NULL (and ctl->exit_code set) on failure. */
static GVariant *
call(Ctl *ctl, const gchar *method, GVariant *args, const gchar *reply_type)
{
	g_autoptr(GError) error = NULL;
	GVariant *reply = g_dbus_connection_call_sync(ctl->bus,
						      BUS_NAME,
						      OBJECT_PATH,
						      ADMIN_IFACE,
						      method,
						      args,
						      G_VARIANT_TYPE(reply_type),
						      G_DBUS_CALL_FLAGS_NONE,
						      60000,
						      NULL,
						      &error);
	if (reply == NULL)
		ctl->exit_code = report_error(error);
	return reply;
}

static gint
usage_error(const gchar *message, GOptionContext *context)
{
	g_printerr("confabctl: %s\n", message);
	if (context != NULL) {
		g_autofree gchar *help = g_option_context_get_help(context, TRUE, NULL);
		g_printerr("\n%s", help);
	}
	return EXIT_USAGE;
}

/* Parses a subcommand's options; the positional arguments stay in argv. */
static gboolean
parse_options(GOptionContext *context, gint *argc, gchar ***argv, gint *exit_code)
{
	g_autoptr(GError) error = NULL;
	if (!g_option_context_parse(context, argc, argv, &error)) {
		*exit_code = usage_error(error->message, context);
		return FALSE;
	}
	return TRUE;
}

static GOptionContext *
subcommand_context(const gchar *parameter, const gchar *summary, const GOptionEntry *entries)
{
	GOptionContext *context = g_option_context_new(parameter);
	g_option_context_set_summary(context, summary);
	g_option_context_set_translation_domain(context, GETTEXT_PACKAGE);
	if (entries != NULL)
		g_option_context_add_main_entries(context, entries, GETTEXT_PACKAGE);
	return context;
}

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
	GOptionContext *context = subcommand_context(parameter, summary, entries);

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
			*exit_code = usage_error(msg, NULL);
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
		*exit_code =
		    usage_error(_("--api-key-file and --remove-api-key exclude each other"), NULL);
		return NULL;
	}
	if (o->api_key_file != NULL) {
		g_autofree gchar *key = read_api_key(o->api_key_file);
		if (key == NULL) {
			g_variant_builder_clear(&props);
			*exit_code = EXIT_FAILED;
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
cmd_agent_create(Ctl *ctl, gint argc, gchar **argv)
{
	g_auto(AgentOptions) o = {0};
	g_autoptr(GOptionContext) context =
	    agent_context(NULL, _("Creates an agent and prints its id."), FALSE, &o);
	g_autoptr(GVariant) reply = NULL;
	GVariant *props;
	gint code = EXIT_OK;
	const gchar *id;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1 || o.name == NULL || o.provider == NULL)
		return usage_error(_("agent create needs --name and --provider"), context);
	props = agent_props(&o, &code);
	if (props == NULL)
		return code;
	reply = call(ctl, "CreateAgent", g_variant_new("(@a{sv})", props), "(s)");
	if (reply == NULL)
		return ctl->exit_code;
	g_variant_get(reply, "(&s)", &id);
	if (ctl->json) {
		g_autoptr(GVariant) obj =
		    g_variant_ref_sink(g_variant_new_parsed("{'id': <%s>}", id));
		print_variant_json(obj);
	} else {
		g_print("%s\n", id);
	}
	return EXIT_OK;
}

static gint
cmd_agent_update(Ctl *ctl, gint argc, gchar **argv)
{
	g_auto(AgentOptions) o = {0};
	g_autoptr(GOptionContext) context =
	    agent_context(_("AGENT_ID"), _("Changes the given settings of an agent."), TRUE, &o);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) props = NULL;
	gint code = EXIT_OK;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return usage_error(_("agent update needs one agent id"), context);
	props = agent_props(&o, &code);
	if (props == NULL)
		return code;
	g_variant_ref_sink(props);
	if (g_variant_n_children(props) == 0)
		return usage_error(_("agent update needs at least one setting to change"), context);
	reply = call(ctl, "UpdateAgent", g_variant_new("(s@a{sv})", argv[1], props), "()");
	return reply != NULL ? EXIT_OK : ctl->exit_code;
}

static gint
cmd_agent_list(Ctl *ctl, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context = subcommand_context(NULL, _("Lists the agents."), NULL);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) agents = NULL;
	const gchar *header[] =
	    {N_("ID"), N_("NAME"), N_("PROVIDER"), N_("MODEL"), N_("BASE URL"), NULL};
	const gchar *translated[G_N_ELEMENTS(header)] = {NULL};
	gint code = EXIT_OK;
	Table *table;
	GVariantIter iter;
	GVariant *agent;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1)
		return usage_error(_("agent list takes no argument"), context);
	reply = call(ctl, "ListAgents", NULL, "(aa{sv})");
	if (reply == NULL)
		return ctl->exit_code;
	agents = g_variant_get_child_value(reply, 0);
	if (ctl->json) {
		print_variant_json(agents);
		return EXIT_OK;
	}
	for (guint i = 0; header[i] != NULL; i++)
		translated[i] = _(header[i]);
	table = table_new(translated);
	g_variant_iter_init(&iter, agents);
	while ((agent = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv row = g_new0(gchar *, 6);
		row[0] = dict_string(agent, "id");
		row[1] = dict_string(agent, "name");
		row[2] = dict_string(agent, "provider");
		row[3] = dict_string(agent, "upstream_model");
		row[4] = dict_string(agent, "base_url");
		table_add(table, row);
		g_variant_unref(agent);
	}
	table_print_free(table);
	return EXIT_OK;
}

/*
 * "Label: value" lines, the values aligned whatever the labels' language;
 * a value's further lines indented. @labels are translated, @values raw.
 */
static void
print_pairs(const gchar *const *labels, const gchar *const *values)
{
	guint width = 0;
	for (guint i = 0; labels[i] != NULL; i++)
		width = MAX(width, display_width(labels[i]));
	for (guint i = 0; labels[i] != NULL; i++) {
		g_autofree gchar *value = sanitize(values[i], TRUE);
		g_auto(GStrv) lines = g_strsplit(value, "\n", -1);
		g_print("%s:%*s%s\n",
			labels[i],
			(gint)(width + 1 - display_width(labels[i])),
			"",
			lines[0] != NULL ? lines[0] : "");
		for (guint l = 1; lines[l] != NULL; l++)
			g_print("%*s%s\n", (gint)(width + 2), "", lines[l]);
	}
}

/* The members @keys of @dict as print_pairs() lines. */
static void
print_fields(GVariant *dict, const gchar *const *keys, const gchar *const *labels)
{
	g_autoptr(GPtrArray) translated = g_ptr_array_new();
	g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; keys[i] != NULL; i++) {
		g_ptr_array_add(translated, (gpointer)_(labels[i]));
		g_ptr_array_add(values, dict_text(dict, keys[i]));
	}
	g_ptr_array_add(translated, NULL);
	g_ptr_array_add(values, NULL);
	print_pairs((const gchar *const *)translated->pdata, (const gchar *const *)values->pdata);
}

static gint
cmd_agent_show(Ctl *ctl, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context =
	    subcommand_context(_("AGENT_ID"), _("Shows an agent (never its API key)."), NULL);
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
	gint code = EXIT_OK;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return usage_error(_("agent show needs one agent id"), context);
	reply = call(ctl, "GetAgent", g_variant_new("(s)", argv[1]), "(a{sv})");
	if (reply == NULL)
		return ctl->exit_code;
	agent = g_variant_get_child_value(reply, 0);
	if (ctl->json) {
		print_variant_json(agent);
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
		print_fields(display, keys, labels);
	}
	return EXIT_OK;
}

static gint
simple_id_call(Ctl *ctl,
	       gint argc,
	       gchar **argv,
	       const gchar *method,
	       const gchar *parameter,
	       const gchar *summary,
	       const gchar *usage)
{
	g_autoptr(GOptionContext) context = subcommand_context(parameter, summary, NULL);
	g_autoptr(GVariant) reply = NULL;
	gint code = EXIT_OK;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return usage_error(usage, context);
	reply = call(ctl, method, g_variant_new("(s)", argv[1]), "()");
	return reply != NULL ? EXIT_OK : ctl->exit_code;
}

static gint
cmd_agent_delete(Ctl *ctl, gint argc, gchar **argv)
{
	return simple_id_call(ctl,
			      argc,
			      argv,
			      "DeleteAgent",
			      _("AGENT_ID"),
			      _("Deletes an agent; its conversations stay."),
			      _("agent delete needs one agent id"));
}

/* ---------- tokens ---------- */

static gint
cmd_token_create(Ctl *ctl, gint argc, gchar **argv)
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
	g_autoptr(GOptionContext) context =
	    subcommand_context(NULL,
			       _("Creates an API token and prints its secret, once: store it now."),
			       entries);
	g_autoptr(GVariant) reply = NULL;
	GVariantBuilder props;
	const gchar *token_id;
	const gchar *secret;
	gint code = EXIT_OK;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1 || owner == NULL || scopes == NULL)
		return usage_error(_("token create needs --owner and at least one --scope"),
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
	reply = call(ctl, "CreateToken", g_variant_new("(a{sv})", &props), "(ss)");
	if (reply == NULL)
		return ctl->exit_code;
	g_variant_get(reply, "(&s&s)", &token_id, &secret);
	if (ctl->json) {
		g_autoptr(GVariant) obj = g_variant_ref_sink(
		    g_variant_new_parsed("{'id': <%s>, 'secret': <%s>}", token_id, secret));
		print_variant_json(obj);
	} else {
		g_print(_("Token:  %s\n"), token_id);
		g_print(_("Secret: %s\n"), secret);
		g_printerr(_("The secret is shown this once: Confab keeps only its hash.\n"));
	}
	return EXIT_OK;
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
cmd_token_list(Ctl *ctl, gint argc, gchar **argv)
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
	    subcommand_context(NULL, _("Lists tokens (never their secrets)."), entries);
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
	gint code = EXIT_OK;
	Table *table;
	GVariantIter iter;
	GVariant *token;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1)
		return usage_error(_("token list takes no argument"), context);
	g_variant_builder_init(&filter, G_VARIANT_TYPE_VARDICT);
	if (owner != NULL)
		g_variant_builder_add(&filter, "{sv}", "owner", g_variant_new_string(owner));
	reply = call(ctl, "ListTokens", g_variant_new("(a{sv})", &filter), "(aa{sv})");
	if (reply == NULL)
		return ctl->exit_code;
	tokens = g_variant_get_child_value(reply, 0);
	if (ctl->json) {
		print_variant_json(tokens);
		return EXIT_OK;
	}
	table = table_new(header);
	g_variant_iter_init(&iter, tokens);
	while ((token = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv row = g_new0(gchar *, 8);
		row[0] = dict_string(token, "id");
		row[1] = dict_string(token, "owner");
		row[2] = dict_string(token, "name");
		row[3] = dict_string(token, "scopes");
		row[4] = dict_string(token, "agent_id");
		row[5] = g_strdup(token_state(token));
		row[6] = dict_string(token, "created_at");
		table_add(table, row);
		g_variant_unref(token);
	}
	table_print_free(table);
	return EXIT_OK;
}

static gint
cmd_token_revoke(Ctl *ctl, gint argc, gchar **argv)
{
	return simple_id_call(ctl,
			      argc,
			      argv,
			      "RevokeToken",
			      _("TOKEN_ID"),
			      _("Revokes a token: it stops working at once."),
			      _("token revoke needs one token id"));
}

/* ---------- quota and usage ---------- */

static gint
cmd_quota_set(Ctl *ctl, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context =
	    subcommand_context(_("OWNER REQUESTS"),
			       _("Sets an owner's monthly request quota (0: unlimited)."),
			       NULL);
	g_autoptr(GVariant) reply = NULL;
	guint64 quota = 0;
	gint code = EXIT_OK;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 3)
		return usage_error(_("quota set needs an owner and a number of requests"), context);
	if (!g_ascii_string_to_unsigned(argv[2], 10, 0, G_MAXINT64, &quota, NULL))
		return usage_error(_("the number of requests must be a whole number"), context);
	reply = call(ctl, "SetQuota", g_variant_new("(st)", argv[1], quota), "()");
	return reply != NULL ? EXIT_OK : ctl->exit_code;
}

static gint
cmd_usage(Ctl *ctl, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context =
	    subcommand_context(_("OWNER"), _("Shows an owner's requests this month."), NULL);
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
	gint code = EXIT_OK;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return usage_error(_("usage needs one owner"), context);
	reply = call(ctl, "GetUsage", g_variant_new("(s)", argv[1]), "(a{sv})");
	if (reply == NULL)
		return ctl->exit_code;
	usage = g_variant_get_child_value(reply, 0);
	if (ctl->json) {
		print_variant_json(usage);
		return EXIT_OK;
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
		print_pairs(labels, values);
	}
	return EXIT_OK;
}

/* ---------- sessions ---------- */

static gint
cmd_session_list(Ctl *ctl, gint argc, gchar **argv)
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
	g_autoptr(GOptionContext) context =
	    subcommand_context(NULL,
			       _("Lists conversations of every source, newest first."),
			       entries);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) sessions = NULL;
	GVariantBuilder filter;
	const gchar *header[] =
	    {_("ID"), _("SOURCE"), _("OWNER"), _("AGENT"), _("UPDATED"), _("TITLE"), NULL};
	gint code = EXIT_OK;
	Table *table;
	GVariantIter iter;
	GVariant *session;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1)
		return usage_error(_("session list takes no argument"), context);
	if (limit != -1 && (limit < 1 || limit > 1000))
		return usage_error(_("--limit must be from 1 to 1000"), context);
	if (source != NULL && !g_str_equal(source, "api") && !g_str_equal(source, "channel"))
		return usage_error(_("--source must be api or channel"), context);
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
	reply = call(ctl, "ListSessions", g_variant_new("(a{sv})", &filter), "(aa{sv})");
	if (reply == NULL)
		return ctl->exit_code;
	sessions = g_variant_get_child_value(reply, 0);
	if (ctl->json) {
		print_variant_json(sessions);
		return EXIT_OK;
	}
	table = table_new(header);
	g_variant_iter_init(&iter, sessions);
	while ((session = g_variant_iter_next_value(&iter)) != NULL) {
		GStrv row = g_new0(gchar *, 7);
		row[0] = dict_string(session, "id");
		row[1] = dict_string(session, "source");
		row[2] = dict_string(session, "owner");
		row[3] = dict_string(session, "agent_id");
		row[4] = dict_string(session, "updated_at");
		row[5] = dict_string(session, "title");
		table_add(table, row);
		g_variant_unref(session);
	}
	table_print_free(table);
	return EXIT_OK;
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
cmd_session_show(Ctl *ctl, gint argc, gchar **argv)
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
	    subcommand_context(_("SESSION_ID"), _("Shows a conversation's messages."), entries);
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GVariant) messages = NULL;
	GVariantBuilder options;
	gint code = EXIT_OK;
	GVariantIter iter;
	GVariant *message;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return usage_error(_("session show needs one session id"), context);
	if (limit != -1 && (limit < 1 || limit > 1000))
		return usage_error(_("--limit must be from 1 to 1000"), context);
	g_variant_builder_init(&options, G_VARIANT_TYPE_VARDICT);
	if (after != NULL)
		g_variant_builder_add(&options, "{sv}", "after", g_variant_new_string(after));
	if (limit > 0)
		g_variant_builder_add(&options, "{sv}", "limit", g_variant_new_uint32(limit));
	reply = call(ctl, "GetMessages", g_variant_new("(sa{sv})", argv[1], &options), "(aa{sv})");
	if (reply == NULL)
		return ctl->exit_code;
	messages = g_variant_get_child_value(reply, 0);
	if (ctl->json) {
		print_variant_json(messages);
		return EXIT_OK;
	}
	g_variant_iter_init(&iter, messages);
	while ((message = g_variant_iter_next_value(&iter)) != NULL) {
		g_autofree gchar *when = dict_string(message, "created_at");
		g_autofree gchar *role = dict_string(message, "role");
		g_autofree gchar *status = dict_string(message, "status");
		const gchar *content = NULL;
		g_autofree gchar *text = NULL;
		g_autofree gchar *raw = NULL;
		g_variant_lookup(message, "content", "&s", &content);
		raw = content_text(content);
		text = sanitize(raw, TRUE);
		if (g_strcmp0(status, "completed") == 0 || g_strcmp0(status, "-") == 0)
			g_print("[%s] %s: %s\n", when, role, text);
		else
			g_print("[%s] %s (%s): %s\n", when, role, status, text);
		g_variant_unref(message);
	}
	return EXIT_OK;
}

static gint
cmd_session_delete(Ctl *ctl, gint argc, gchar **argv)
{
	return simple_id_call(ctl,
			      argc,
			      argv,
			      "DeleteSession",
			      _("SESSION_ID"),
			      _("Deletes a conversation and its messages."),
			      _("session delete needs one session id"));
}

/* ---------- status ---------- */

static GVariant *
get_property(Ctl *ctl, const gchar *name)
{
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GError) error = NULL;
	GVariant *value = NULL;

	reply = g_dbus_connection_call_sync(ctl->bus,
					    BUS_NAME,
					    OBJECT_PATH,
					    "org.freedesktop.DBus.Properties",
					    "Get",
					    g_variant_new("(ss)", ADMIN_IFACE, name),
					    G_VARIANT_TYPE("(v)"),
					    G_DBUS_CALL_FLAGS_NONE,
					    60000,
					    NULL,
					    &error);
	if (reply == NULL) {
		ctl->exit_code = report_error(error);
		return NULL;
	}
	g_variant_get(reply, "(v)", &value);
	return value;
}

static gint
cmd_status(Ctl *ctl, gint argc, gchar **argv)
{
	g_autoptr(GOptionContext) context =
	    subcommand_context(NULL, _("Shows the daemon's version and activity."), NULL);
	const gchar *names[] = {"Version", "ListenAddress", "ActiveTurns", "TurnsServed", NULL};
	const gchar *labels[] = {N_("Version"),
				 N_("Listening on"),
				 N_("Turns running"),
				 N_("Turns served"),
				 NULL};
	GVariantBuilder all;
	gint code = EXIT_OK;

	if (!parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 1)
		return usage_error(_("status takes no argument"), context);
	g_variant_builder_init(&all, G_VARIANT_TYPE_VARDICT);
	for (guint i = 0; names[i] != NULL; i++) {
		g_autoptr(GVariant) value = get_property(ctl, names[i]);
		if (value == NULL) {
			g_variant_builder_clear(&all);
			return ctl->exit_code;
		}
		g_variant_builder_add(&all, "{sv}", names[i], value);
	}
	{
		g_autoptr(GVariant) dict = g_variant_ref_sink(g_variant_builder_end(&all));
		if (ctl->json) {
			print_variant_json(dict);
		} else {
			print_fields(dict, names, labels);
		}
	}
	return EXIT_OK;
}

/* ---------- main ---------- */

typedef struct {
	const gchar *group;
	const gchar *name;
	CommandFunc func;
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

/* Takes --json, --system and --session out of @args, up to a "--". */
static void
take_global_flags(GStrv args, gboolean *json, gboolean *use_system, gboolean *use_session)
{
	guint w = 0;
	guint r = 0;

	for (; args[r] != NULL && !g_str_equal(args[r], "--"); r++) {
		if (g_str_equal(args[r], "--json")) {
			*json = TRUE;
		} else if (g_str_equal(args[r], "--system")) {
			*use_system = TRUE;
		} else if (g_str_equal(args[r], "--session")) {
			*use_session = TRUE;
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
		if (!g_str_equal(commands[i].group, args[0]))
			continue;
		if (commands[i].name == NULL ||
		    (args[1] != NULL && g_str_equal(commands[i].name, args[1])))
			return &commands[i];
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	gboolean use_system = FALSE;
	gboolean use_session = FALSE;
	gboolean json = FALSE;
	gboolean version = FALSE;
	g_auto(GStrv) rest = NULL;
	const GOptionEntry entries[] = {
	    {"system",
	     0,
	     0,
	     G_OPTION_ARG_NONE,
	     &use_system,
	     N_("Talk to the system service (default)"),
	     NULL},
	    {"session",
	     0,
	     0,
	     G_OPTION_ARG_NONE,
	     &use_session,
	     N_("Talk to a daemon on the session bus"),
	     NULL},
	    {"json", 0, 0, G_OPTION_ARG_NONE, &json, N_("Print JSON, for scripts"), NULL},
	    {"version", 0, 0, G_OPTION_ARG_NONE, &version, N_("Print the version"), NULL},
	    {G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &rest, NULL, N_("COMMAND …")},
	    {NULL},
	};
	g_autoptr(GOptionContext) context = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *help = NULL;
	g_autoptr(GPtrArray) sub_argv = NULL;
	g_autofree gchar *argv0 = NULL;
	Ctl ctl = {0};
	const Command *command = NULL;
	gboolean want_help = FALSE;
	gchar **args;
	gint code;

	setlocale(LC_ALL, "");
	bindtextdomain(GETTEXT_PACKAGE, LOCALEDIR);
	bind_textdomain_codeset(GETTEXT_PACKAGE, "UTF-8");
	textdomain(GETTEXT_PACKAGE);

	context = g_option_context_new(NULL);
	g_option_context_set_translation_domain(context, GETTEXT_PACKAGE);
	g_option_context_set_summary(context,
				     _("Administers Confab, the agent chat-completion service."));
	help = commands_help();
	g_option_context_set_description(context, help);
	g_option_context_add_main_entries(context, entries, GETTEXT_PACKAGE);
	/* options after the command belong to the command */
	g_option_context_set_strict_posix(context, TRUE);
	if (!g_option_context_parse(context, &argc, &argv, &error))
		return usage_error(error->message, NULL);
	if (version) {
		g_print("confabctl %s\n", PACKAGE_VERSION);
		return EXIT_OK;
	}
	args = rest;
	if (rest == NULL) {
		g_autofree gchar *text = g_option_context_get_help(context, TRUE, NULL);
		g_printerr("%s", text);
		return EXIT_USAGE;
	}
	take_global_flags(rest, &json, &use_system, &use_session);
	if (rest[0] == NULL)
		return usage_error(_("no command given"), NULL);
	if (use_system && use_session)
		return usage_error(_("--system and --session exclude each other"), NULL);
	/* "help" alone lists the commands; "help agent create" is "agent create --help" */
	if (g_str_equal(rest[0], "help")) {
		if (rest[1] == NULL) {
			g_autofree gchar *text = g_option_context_get_help(context, TRUE, NULL);
			g_print("%s", text);
			return EXIT_OK;
		}
		want_help = TRUE;
		args = rest + 1;
	}
	command = find_command(args);
	if (command == NULL) {
		g_autofree gchar *msg = g_strdup_printf(_("unknown command '%s%s%s'"),
							args[0],
							args[1] != NULL ? " " : "",
							args[1] != NULL ? args[1] : "");
		g_printerr("confabctl: %s\n\n%s\n", msg, help);
		return EXIT_USAGE;
	}

	/* "Usage: confabctl agent create [OPTION…]" */
	argv0 = g_strdup_printf("confabctl %s%s%s",
				command->group,
				command->name != NULL ? " " : "",
				command->name != NULL ? command->name : "");
	sub_argv = g_ptr_array_new();
	g_ptr_array_add(sub_argv, argv0);
	if (want_help) {
		g_ptr_array_add(sub_argv, (gpointer) "--help");
	} else {
		for (guint i = command->name != NULL ? 2 : 1; args[i] != NULL; i++) {
			g_ptr_array_add(sub_argv, args[i]);
			if (g_str_equal(args[i], "--help") || g_str_equal(args[i], "-h"))
				want_help = TRUE;
		}
	}
	g_ptr_array_add(sub_argv, NULL);

	/* --help of a command needs no bus */
	if (!want_help) {
		if (!use_system && !use_session &&
		    g_strcmp0(g_getenv("CONFABCTL_BUS"), "session") == 0)
			use_session = TRUE;
		ctl.bus = g_bus_get_sync(use_session ? G_BUS_TYPE_SESSION : G_BUS_TYPE_SYSTEM,
					 NULL,
					 &error);
		if (ctl.bus == NULL) {
			g_printerr(use_session
				       ? _("confabctl: cannot connect to the session bus: %s\n")
				       : _("confabctl: cannot connect to the system bus: %s\n"),
				   error->message);
			return EXIT_UNREACHABLE;
		}
	}
	g_set_prgname(argv0);
	ctl.json = json;
	code = command->func(&ctl, sub_argv->len - 1, (gchar **)sub_argv->pdata);
	g_clear_object(&ctl.bus);
	return code;
}
