/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/*
 * What every confabctl command shares: the connection to the daemon and
 * its Admin interface, error reporting and exit codes, option parsing,
 * and the output (JSON for scripts, tables and "Label: value" lines for
 * people, sanitized).
 */

#include "config.h"

#include <glib/gi18n.h>
#include <string.h>

#include "cli/confabctl-common.h"

#define BUS_NAME    "org.confab.Confab1"
#define OBJECT_PATH "/org/confab/Confab1"
#define ADMIN_IFACE "org.confab.Confab1.Admin"

/* ---------- output ---------- */

void
confabctl_common_print_json(JsonNode *node)
{
	g_autoptr(JsonGenerator) gen = json_generator_new();
	g_autofree gchar *text = NULL;
	json_generator_set_root(gen, node);
	json_generator_set_pretty(gen, TRUE);
	text = json_generator_to_data(gen, NULL);
	g_print("%s\n", text);
}

void
confabctl_common_print_variant_json(GVariant *value)
{
	g_autoptr(JsonNode) node = json_gvariant_serialize(value);
	confabctl_common_print_json(node);
}

gchar *
confabctl_common_format_time(gint64 unix_seconds)
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
gchar *
confabctl_common_sanitize(const gchar *text, gboolean keep_lines)
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
guint
confabctl_common_display_width(const gchar *text)
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
gchar *
confabctl_common_dict_text(GVariant *dict, const gchar *key)
{
	g_autoptr(GVariant) value = g_variant_lookup_value(dict, key, NULL);
	if (value == NULL)
		return g_strdup("-");
	if (g_variant_is_of_type(value, G_VARIANT_TYPE_STRING))
		return g_strdup(*g_variant_get_string(value, NULL) != '\0'
				    ? g_variant_get_string(value, NULL)
				    : "-");
	if (g_variant_is_of_type(value, G_VARIANT_TYPE_INT64))
		return confabctl_common_format_time(g_variant_get_int64(value));
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
gchar *
confabctl_common_dict_string(GVariant *dict, const gchar *key)
{
	g_autofree gchar *text = confabctl_common_dict_text(dict, key);
	return confabctl_common_sanitize(text, FALSE);
}

/*
 * "Label: value" lines, the values aligned whatever the labels' language;
 * a value's further lines indented. @labels are translated, @values raw.
 */
void
confabctl_common_print_pairs(const gchar *const *labels, const gchar *const *values)
{
	guint width = 0;
	for (guint i = 0; labels[i] != NULL; i++)
		width = MAX(width, confabctl_common_display_width(labels[i]));
	for (guint i = 0; labels[i] != NULL; i++) {
		g_autofree gchar *value = confabctl_common_sanitize(values[i], TRUE);
		g_auto(GStrv) lines = g_strsplit(value, "\n", -1);
		g_print("%s:%*s%s\n",
			labels[i],
			(gint)(width + 1 - confabctl_common_display_width(labels[i])),
			"",
			lines[0] != NULL ? lines[0] : "");
		for (guint l = 1; lines[l] != NULL; l++)
			g_print("%*s%s\n", (gint)(width + 2), "", lines[l]);
	}
}

/* The members @keys of @dict as confabctl_common_print_pairs() lines. */
void
confabctl_common_print_fields(GVariant *dict, const gchar *const *keys, const gchar *const *labels)
{
	g_autoptr(GPtrArray) translated = g_ptr_array_new();
	g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; keys[i] != NULL; i++) {
		g_ptr_array_add(translated, (gpointer)_(labels[i]));
		g_ptr_array_add(values, confabctl_common_dict_text(dict, keys[i]));
	}
	g_ptr_array_add(translated, NULL);
	g_ptr_array_add(values, NULL);
	confabctl_common_print_pairs((const gchar *const *)translated->pdata,
				     (const gchar *const *)values->pdata);
}

struct _ConfabctlTable {
	GPtrArray *rows; /* GStrv */
	guint columns;
};

ConfabctlTable *
confabctl_common_table_new(const gchar *const *header)
{
	ConfabctlTable *table = g_new0(ConfabctlTable, 1);
	table->rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
	table->columns = g_strv_length((gchar **)header);
	g_ptr_array_add(table->rows, g_strdupv((gchar **)header));
	return table;
}

/* Takes @row, which has as many columns as the header. */
void
confabctl_common_table_add(ConfabctlTable *table, GStrv row)
{
	g_assert(g_strv_length(row) == table->columns);
	g_ptr_array_add(table->rows, row);
}

void
confabctl_common_table_print_free(ConfabctlTable *table)
{
	g_autofree guint *widths = g_new0(guint, table->columns);

	for (guint r = 0; r < table->rows->len; r++) {
		GStrv row = g_ptr_array_index(table->rows, r);
		for (guint c = 0; c < table->columns; c++)
			widths[c] = MAX(widths[c], confabctl_common_display_width(row[c]));
	}
	for (guint r = 0; r < table->rows->len; r++) {
		GStrv row = g_ptr_array_index(table->rows, r);
		GString *line = g_string_new(NULL);
		for (guint c = 0; c < table->columns; c++) {
			g_string_append(line, row[c]);
			if (c + 1 < table->columns) {
				for (guint pad = confabctl_common_display_width(row[c]);
				     pad < widths[c] + 2;
				     pad++)
					g_string_append_c(line, ' ');
			}
		}
		g_print("%s\n", line->str);
		g_string_free(line, TRUE);
	}
	g_ptr_array_unref(table->rows);
	g_free(table);
}

/* ---------- options and usage ---------- */

gint
confabctl_common_usage_error(const gchar *message, GOptionContext *context)
{
	g_printerr("confabctl: %s\n", message);
	if (context != NULL) {
		g_autofree gchar *help = g_option_context_get_help(context, TRUE, NULL);
		g_printerr("\n%s", help);
	}
	return CONFABCTL_EXIT_USAGE;
}

/* Parses a subcommand's options; the positional arguments stay in argv. */
gboolean
confabctl_common_parse_options(GOptionContext *context, gint *argc, gchar ***argv, gint *exit_code)
{
	g_autoptr(GError) error = NULL;
	if (!g_option_context_parse(context, argc, argv, &error)) {
		*exit_code = confabctl_common_usage_error(error->message, context);
		return FALSE;
	}
	return TRUE;
}

GOptionContext *
confabctl_common_subcommand_context(const gchar *parameter,
				    const gchar *summary,
				    const GOptionEntry *entries)
{
	GOptionContext *context = g_option_context_new(parameter);
	g_option_context_set_summary(context, summary);
	g_option_context_set_translation_domain(context, GETTEXT_PACKAGE);
	if (entries != NULL)
		g_option_context_add_main_entries(context, entries, GETTEXT_PACKAGE);
	return context;
}

/* ---------- calling the daemon ---------- */

#define CONFAB_BUS_NAME "org.confab.Confab1"

/* Whether @bus has an owner of, or can start, org.confab.Confab1. */
static gboolean
bus_knows_confab(GDBusConnection *bus, const gchar *method)
{
	g_autoptr(GVariant) reply = NULL;
	gboolean found = FALSE;

	if (bus == NULL)
		return FALSE;
	reply = g_dbus_connection_call_sync(
	    bus,
	    "org.freedesktop.DBus",
	    "/org/freedesktop/DBus",
	    "org.freedesktop.DBus",
	    method,
	    g_str_equal(method, "NameHasOwner") ? g_variant_new("(s)", CONFAB_BUS_NAME) : NULL,
	    NULL,
	    G_DBUS_CALL_FLAGS_NONE,
	    5000,
	    NULL,
	    NULL);
	if (reply == NULL)
		return FALSE;
	if (g_variant_is_of_type(reply, G_VARIANT_TYPE("(b)"))) {
		g_variant_get(reply, "(b)", &found);
	} else if (g_variant_is_of_type(reply, G_VARIANT_TYPE("(as)"))) {
		g_autofree const gchar **names = NULL;
		g_variant_get(reply, "(^a&s)", &names);
		found = g_strv_contains(names, CONFAB_BUS_NAME);
	}
	return found;
}

/*
 * Without --system or --session: the system service when it runs, else a
 * per-user daemon (confabd --user) that runs, else the system service when
 * the system bus can start it (its activation file is installed), else the
 * session bus, which starts confabd --user.
 */
static gboolean
default_is_session(void)
{
	g_autoptr(GDBusConnection) system = g_bus_get_sync(G_BUS_TYPE_SYSTEM, NULL, NULL);
	g_autoptr(GDBusConnection) session = NULL;

	if (bus_knows_confab(system, "NameHasOwner"))
		return FALSE;
	session = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, NULL);
	if (bus_knows_confab(session, "NameHasOwner"))
		return TRUE;
	return !bus_knows_confab(system, "ListActivatableNames");
}

/*
 * Connects to the system bus with --system, to the session bus with
 * --session or CONFABCTL_BUS=session, and otherwise to the bus that
 * default_is_session() picks; an exit code.
 */
gint
confabctl_common_connect(ConfabctlContext *ctx, gboolean use_system, gboolean use_session)
{
	g_autoptr(GError) error = NULL;
	const gchar *env = g_getenv("CONFABCTL_BUS");

	if (!use_system && !use_session && env != NULL && *env != '\0') {
		use_session = g_str_equal(env, "session");
		use_system = !use_session;
	}
	if (!use_system && !use_session)
		use_session = default_is_session();
	ctx->bus =
	    g_bus_get_sync(use_session ? G_BUS_TYPE_SESSION : G_BUS_TYPE_SYSTEM, NULL, &error);
	if (ctx->bus == NULL) {
		g_printerr(use_session ? _("confabctl: cannot connect to the session bus: %s\n")
				       : _("confabctl: cannot connect to the system bus: %s\n"),
			   error->message);
		return CONFABCTL_EXIT_UNREACHABLE;
	}
	return CONFABCTL_EXIT_OK;
}

void
confabctl_common_disconnect(ConfabctlContext *ctx)
{
	g_clear_object(&ctx->bus);
}

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
gint
confabctl_common_report_error(GError *error)
{
	g_autofree gchar *remote = g_dbus_error_get_remote_error(error);
	g_autofree gchar *message = NULL;

	g_dbus_error_strip_remote_error(error);
	message = confabctl_common_sanitize(error->message, FALSE);
	if (error_is_unreachable(error)) {
		g_printerr(_("confabctl: the Confab service cannot be reached (%s). Is confabd "
			     "running, on this bus?\n"),
			   message);
		return CONFABCTL_EXIT_UNREACHABLE;
	}
	if (g_strcmp0(remote, "org.freedesktop.DBus.Error.AccessDenied") == 0)
		g_printerr(_("confabctl: permission denied: %s\n"), message);
	else
		g_printerr("confabctl: %s\n", message);
	return CONFABCTL_EXIT_FAILED;
}

/* Calls an Admin method; NULL (and ctx->exit_code set) on failure. */
GVariant *
confabctl_common_call(ConfabctlContext *ctx,
		      const gchar *method,
		      GVariant *args,
		      const gchar *reply_type)
{
	return confabctl_common_call_iface(ctx, ADMIN_IFACE, method, args, reply_type);
}

/* The same on another of the daemon's interfaces (Chat). */
GVariant *
confabctl_common_call_iface(ConfabctlContext *ctx,
			    const gchar *iface,
			    const gchar *method,
			    GVariant *args,
			    const gchar *reply_type)
{
	g_autoptr(GError) error = NULL;
	GVariant *reply = g_dbus_connection_call_sync(ctx->bus,
						      BUS_NAME,
						      OBJECT_PATH,
						      iface,
						      method,
						      args,
						      G_VARIANT_TYPE(reply_type),
						      G_DBUS_CALL_FLAGS_NONE,
						      60000,
						      NULL,
						      &error);
	if (reply == NULL)
		ctx->exit_code = confabctl_common_report_error(error);
	return reply;
}

/* An Admin property; NULL (and ctx->exit_code set) on failure. */
GVariant *
confabctl_common_get_property(ConfabctlContext *ctx, const gchar *name)
{
	g_autoptr(GVariant) reply = NULL;
	g_autoptr(GError) error = NULL;
	GVariant *value = NULL;

	reply = g_dbus_connection_call_sync(ctx->bus,
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
		ctx->exit_code = confabctl_common_report_error(error);
		return NULL;
	}
	g_variant_get(reply, "(v)", &value);
	return value;
}

/* A command that takes one id, calls @method with it and prints nothing. */
gint
confabctl_common_simple_id_call(ConfabctlContext *ctx,
				gint argc,
				gchar **argv,
				const gchar *method,
				const gchar *parameter,
				const gchar *summary,
				const gchar *usage)
{
	g_autoptr(GOptionContext) context =
	    confabctl_common_subcommand_context(parameter, summary, NULL);
	g_autoptr(GVariant) reply = NULL;
	gint code = CONFABCTL_EXIT_OK;

	if (!confabctl_common_parse_options(context, &argc, &argv, &code))
		return code;
	if (argc != 2)
		return confabctl_common_usage_error(usage, context);
	reply = confabctl_common_call(ctx, method, g_variant_new("(s)", argv[1]), "()");
	return reply != NULL ? CONFABCTL_EXIT_OK : ctx->exit_code;
}
