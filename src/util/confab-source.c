/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "util/confab-source.h"

/*
 * Timers and idles on the caller's thread-default main context.
 *
 * g_timeout_add() and g_idle_add() attach to the global default context,
 * and g_source_remove() finds an id there only: code that may run on a
 * serving thread (its own context pushed as thread-default) keeps the
 * GSource itself and destroys it with confab_source_clear().
 */

static GSource *
attach(GSource *source, GSourceFunc func, gpointer user_data)
{
	g_source_set_callback(source, func, user_data, NULL);
	g_source_attach(source, g_main_context_get_thread_default());
	return source;
}

/**
 * confab_source_add_timeout:
 * @interval_ms: milliseconds
 * @func: called on the thread-default context
 * @user_data: data for @func
 *
 * Returns: (transfer full): the source, attached; keep it to destroy it
 *   with confab_source_clear(), and drop the reference when @func returns
 *   %G_SOURCE_REMOVE
 */
GSource *
confab_source_add_timeout(guint interval_ms, GSourceFunc func, gpointer user_data)
{
	return attach(g_timeout_source_new(interval_ms), func, user_data);
}

/**
 * confab_source_add_timeout_seconds:
 * @interval: seconds
 * @func: called on the thread-default context
 * @user_data: data for @func
 *
 * Returns: (transfer full): the source, attached
 */
GSource *
confab_source_add_timeout_seconds(guint interval, GSourceFunc func, gpointer user_data)
{
	return attach(g_timeout_source_new_seconds(interval), func, user_data);
}

/**
 * confab_source_add_idle:
 * @func: called on the thread-default context
 * @user_data: data for @func
 *
 * Returns: (transfer full): the source, attached
 */
GSource *
confab_source_add_idle(GSourceFunc func, gpointer user_data)
{
	return attach(g_idle_source_new(), func, user_data);
}

/**
 * confab_source_clear:
 * @source: (inout) (nullable): a source from this file, or %NULL
 *
 * Destroys the source, if any, drops the reference and sets it to %NULL.
 */
void
confab_source_clear(GSource **source)
{
	if (*source == NULL)
		return;
	g_source_destroy(*source);
	g_clear_pointer(source, g_source_unref);
}
