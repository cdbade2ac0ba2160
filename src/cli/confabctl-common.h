/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/*
 * Exit codes: 0 done; 1 the daemon refused or failed (its message is
 * printed); 2 bad usage; 3 the daemon or the bus cannot be reached.
 */
enum {
	CONFABCTL_EXIT_OK = 0,
	CONFABCTL_EXIT_FAILED = 1,
	CONFABCTL_EXIT_USAGE = 2,
	CONFABCTL_EXIT_UNREACHABLE = 3,
};

/* What every command works with. */
typedef struct {
	GDBusConnection *bus; /* owned; NULL when only --help is asked for */
	gboolean json;
	gint exit_code; /* of the last failed call */
} ConfabctlContext;

/* A command: its arguments start with "confabctl NOUN VERB" as argv[0]. */
typedef gint (*ConfabctlCommandFunc)(ConfabctlContext *ctx, gint argc, gchar **argv);

/* calling the daemon */
gint
confabctl_common_connect(ConfabctlContext *ctx, gboolean use_system, gboolean use_session);
void
confabctl_common_disconnect(ConfabctlContext *ctx);
gint
confabctl_common_report_error(GError *error);
GVariant *
confabctl_common_call(ConfabctlContext *ctx,
		      const gchar *method,
		      GVariant *args,
		      const gchar *reply_type);
GVariant *
confabctl_common_call_iface(ConfabctlContext *ctx,
			    const gchar *iface,
			    const gchar *method,
			    GVariant *args,
			    const gchar *reply_type);
GVariant *
confabctl_common_get_property(ConfabctlContext *ctx, const gchar *name);
gint
confabctl_common_simple_id_call(ConfabctlContext *ctx,
				gint argc,
				gchar **argv,
				const gchar *method,
				const gchar *parameter,
				const gchar *summary,
				const gchar *usage);

/* options and usage */
gint
confabctl_common_usage_error(const gchar *message, GOptionContext *context);
gboolean
confabctl_common_parse_options(GOptionContext *context, gint *argc, gchar ***argv, gint *exit_code);
GOptionContext *
confabctl_common_subcommand_context(const gchar *parameter,
				    const gchar *summary,
				    const GOptionEntry *entries);

/* output */
void
confabctl_common_print_json(JsonNode *node);
void
confabctl_common_print_variant_json(GVariant *value);
gchar *
confabctl_common_format_time(gint64 unix_seconds);
gchar *
confabctl_common_sanitize(const gchar *text, gboolean keep_lines);
guint
confabctl_common_display_width(const gchar *text);
gchar *
confabctl_common_dict_text(GVariant *dict, const gchar *key);
gchar *
confabctl_common_dict_string(GVariant *dict, const gchar *key);
void
confabctl_common_print_pairs(const gchar *const *labels, const gchar *const *values);
void
confabctl_common_print_fields(GVariant *dict, const gchar *const *keys, const gchar *const *labels);

/* A table: a header row and rows of strings, columns padded to fit. */
typedef struct _ConfabctlTable ConfabctlTable;

ConfabctlTable *
confabctl_common_table_new(const gchar *const *header);
void
confabctl_common_table_add(ConfabctlTable *table, GStrv row);
void
confabctl_common_table_print_free(ConfabctlTable *table);

G_END_DECLS
