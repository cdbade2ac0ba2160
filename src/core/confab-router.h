/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "metrics/confab-metrics.h"
#include "model/confab-agent.h"
#include "providers/confab-provider.h"

G_BEGIN_DECLS

#define CONFAB_ROUTER_FAILURES_TO_SKIP 3
#define CONFAB_ROUTER_SKIP_MAX_MS      (5 * 60 * 1000)

#define CONFAB_TYPE_ROUTER (confab_router_get_type())
G_DECLARE_FINAL_TYPE(ConfabRouter, confab_router, CONFAB, ROUTER, GObject)

/**
 * ConfabRouterTargetHealth:
 * @label: the target's label
 * @state: "up", "failing" (failed lately, still tried), "skipped" (not tried
 *   until @skip_until) or "probing" (one call is trying it again)
 * @failures: failures in a row
 * @last_error: (nullable): what its last failure said (scrubbed)
 * @since: the wall-clock time (seconds) its state began
 * @skip_until: the wall-clock time (seconds) a skip ends; 0 for none
 * @in_flight: calls running on it, on this instance
 *
 * One target's health as this instance sees it.
 */
typedef struct {
	gchar *label;
	const gchar *state;
	guint failures;
	gchar *last_error;
	gint64 since;
	gint64 skip_until;
	guint in_flight;
} ConfabRouterTargetHealth;

void
confab_router_target_health_free(ConfabRouterTargetHealth *health);

ConfabRouter *
confab_router_new(ConfabMetrics *metrics, guint skip_ms);
void
confab_router_complete_async(ConfabRouter *self,
			     ConfabProvider *provider,
			     ConfabProviderRequest *request,
			     ConfabDeltaFunc delta_func,
			     gpointer delta_data,
			     GCancellable *cancellable,
			     GAsyncReadyCallback callback,
			     gpointer user_data);
ConfabProviderResult *
confab_router_complete_finish(ConfabRouter *self, GAsyncResult *result, GError **error);
GPtrArray *
confab_router_get_health(ConfabRouter *self, ConfabAgent *agent);
void
confab_router_write_metrics(ConfabRouter *self, GString *out);

G_END_DECLS
