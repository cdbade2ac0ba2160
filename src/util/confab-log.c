/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <stdio.h>
#include <unistd.h>

#include "util/confab-log.h"

/*
 * Logging. Under systemd, stderr is the journal: every message goes there
 * as structured fields, info level included (one line per HTTP request),
 * and journalctl filters. Elsewhere GLib's default writer applies, which
 * shows info and debug only for the domains in G_MESSAGES_DEBUG.
 */

static gboolean
to_journal(void)
{
	static gsize checked = 0;
	static gboolean journal = FALSE;
	if (g_once_init_enter(&checked)) {
		journal = g_log_writer_is_journald(fileno(stderr));
		g_once_init_leave(&checked, 1);
	}
	return journal;
}

/**
 * confab_log_writer:
 *
 * The daemon's #GLogWriterFunc: the journal when stderr is the journal,
 * GLib's default writer otherwise.
 */
GLogWriterOutput
confab_log_writer(GLogLevelFlags log_level,
		  const GLogField *fields,
		  gsize n_fields,
		  gpointer user_data)
{
	if (to_journal() && !(log_level & G_LOG_LEVEL_DEBUG) &&
	    g_log_writer_journald(log_level, fields, n_fields, user_data) == G_LOG_WRITER_HANDLED) {
		if (log_level & G_LOG_FLAG_FATAL)
			abort();
		return G_LOG_WRITER_HANDLED;
	}
	return g_log_writer_default(log_level, fields, n_fields, user_data);
}

/**
 * confab_log_info_enabled:
 * @log_domain: a log domain
 *
 * Returns: whether an info message of @log_domain would be written: worth
 *   building its fields
 */
gboolean
confab_log_info_enabled(const gchar *log_domain)
{
	return to_journal() || !g_log_writer_default_would_drop(G_LOG_LEVEL_INFO, log_domain);
}
