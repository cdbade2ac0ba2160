/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <gio/gio.h>

#include "confab-fuzz.h"

/*
 * Without libFuzzer: replays every file of the corpus directories given on
 * the command line through the harness, as a regression test. A crash or
 * a failed assertion fails the test.
 */
int
main(int argc, char **argv)
{
	guint files = 0;

	for (int i = 1; i < argc; i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(GDir) dir = g_dir_open(argv[i], 0, &error);
		const gchar *name;

		if (dir == NULL) {
			g_printerr("%s\n", error->message);
			return 1;
		}
		while ((name = g_dir_read_name(dir)) != NULL) {
			g_autofree gchar *path = g_build_filename(argv[i], name, NULL);
			g_autofree gchar *contents = NULL;
			gsize len = 0;
			if (!g_file_get_contents(path, &contents, &len, &error)) {
				g_printerr("%s\n", error->message);
				return 1;
			}
			LLVMFuzzerTestOneInput((const guint8 *)contents, len);
			files++;
		}
	}
	g_print("replayed %u inputs\n", files);
	return files > 0 ? 0 : 1;
}
