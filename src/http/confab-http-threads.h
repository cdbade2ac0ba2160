/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "core/confab-engine.h"

G_BEGIN_DECLS

/**
 * ConfabHttpThreadsSetupFunc:
 * @context: a serving thread's context, before the thread runs
 * @user_data: the data given to confab_http_threads_start()
 *
 * Gives a serving thread what is its own besides its HTTP server: the
 * daemon adds the thread's providers to the engine here
 * (confab_engine_add_context_provider()).
 */
typedef void (*ConfabHttpThreadsSetupFunc)(GMainContext *context, gpointer user_data);

#define CONFAB_TYPE_HTTP_THREADS (confab_http_threads_get_type())
G_DECLARE_FINAL_TYPE(ConfabHttpThreads, confab_http_threads, CONFAB, HTTP_THREADS, GObject)

ConfabHttpThreads *
confab_http_threads_new(ConfabEngine *engine, guint n_threads);
gboolean
confab_http_threads_start(ConfabHttpThreads *self,
			  const gchar *address,
			  ConfabHttpThreadsSetupFunc setup,
			  gpointer user_data,
			  GError **error);
void
confab_http_threads_set_listen_fd(ConfabHttpThreads *self, gint fd);
guint
confab_http_threads_get_n_threads(ConfabHttpThreads *self);
gchar *
confab_http_threads_get_url(ConfabHttpThreads *self);
guint
confab_http_threads_get_active_requests(ConfabHttpThreads *self);
void
confab_http_threads_stop(ConfabHttpThreads *self);

G_END_DECLS
