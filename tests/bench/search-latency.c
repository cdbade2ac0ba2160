/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * tests/bench/search runs this: GNOME Shell's two calls for one search,
 * GetInitialResultSet then GetResultMetas of what it returned, against
 * org.confab.Confab1 on the session bus, N times per query; prints one line
 * per query with the results found and the p50, p90 and p99 latency of the
 * pair in milliseconds.
 *
 *   search-latency N "QUERY" ["QUERY" ...]
 */

#include <gio/gio.h>
#include <stdlib.h>

static gint
compare_doubles(gconstpointer a, gconstpointer b)
{
	gdouble x = *(const gdouble *)a, y = *(const gdouble *)b;
	return x < y ? -1 : x > y;
}

static GVariant *
call(GDBusConnection *bus, const gchar *method, GVariant *args, const gchar *type)
{
	g_autoptr(GError) error = NULL;
	GVariant *reply = g_dbus_connection_call_sync(bus,
						      "org.confab.Confab1",
						      "/org/confab/Confab1/SearchProvider",
						      "org.gnome.Shell.SearchProvider2",
						      method,
						      args,
						      G_VARIANT_TYPE(type),
						      G_DBUS_CALL_FLAGS_NONE,
						      30000,
						      NULL,
						      &error);
	if (reply == NULL)
		g_error("%s: %s", method, error->message);
	return reply;
}

int
main(int argc, char **argv)
{
	g_autoptr(GDBusConnection) bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, NULL);
	guint n = argc > 1 ? (guint)atoi(argv[1]) : 0;

	if (bus == NULL || n == 0 || argc < 3) {
		g_printerr("usage: search-latency N QUERY...\n");
		return 2;
	}
	for (gint q = 2; q < argc; q++) {
		g_auto(GStrv) terms = g_strsplit(argv[q], " ", -1);
		g_autoptr(GArray) ms = g_array_new(FALSE, FALSE, sizeof(gdouble));
		gsize found = 0;

		for (guint i = 0; i < n; i++) {
			gint64 start = g_get_monotonic_time();
			g_autoptr(GVariant) ids =
			    call(bus, "GetInitialResultSet", g_variant_new("(^as)", terms), "(as)");
			g_autoptr(GVariant) list = g_variant_get_child_value(ids, 0);
			g_autoptr(GVariant) metas =
			    call(bus, "GetResultMetas", g_variant_new("(@as)", list), "(aa{sv})");
			gdouble elapsed = (g_get_monotonic_time() - start) / 1000.0;
			g_array_append_val(ms, elapsed);
			found = g_variant_n_children(list);
		}
		g_array_sort(ms, compare_doubles);
		g_print("%-28s results %2zu  p50 %6.2f ms  p90 %6.2f ms  p99 %6.2f ms\n",
			argv[q],
			found,
			g_array_index(ms, gdouble, ms->len / 2),
			g_array_index(ms, gdouble, ms->len * 9 / 10),
			g_array_index(ms, gdouble, MIN(ms->len - 1, ms->len * 99 / 100)));
	}
	return 0;
}
