/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

/**
 * ConfabMetric:
 * @CONFAB_METRIC_HTTP_REQUESTS: counter {route, code}
 * @CONFAB_METRIC_TURNS: counter {agent, status}
 * @CONFAB_METRIC_TURN_DURATION: histogram {agent}
 * @CONFAB_METRIC_TIME_TO_FIRST_TOKEN: histogram {agent}
 * @CONFAB_METRIC_INTER_TOKEN_LATENCY: histogram {agent}
 * @CONFAB_METRIC_TOKENS: counter {agent, direction}
 * @CONFAB_METRIC_UPSTREAM_REQUESTS: counter {agent, outcome}
 * @CONFAB_METRIC_UPSTREAM_RETRIES: counter {agent}
 * @CONFAB_METRIC_TOOL_CALLS: counter {agent, server, outcome}
 * @CONFAB_METRIC_TOOL_DURATION: histogram {server}
 * @CONFAB_METRIC_STORE_COMMIT: histogram, no labels
 * @CONFAB_METRIC_TOOL_APPROVALS: counter {decision}
 * @CONFAB_METRIC_UPSTREAM_ATTEMPTS: counter {agent, target, outcome}
 *
 * The families Confab counts on its request path. Gauges (active turns,
 * connections, quotas, the process) are read when scraped.
 */
typedef enum {
	CONFAB_METRIC_HTTP_REQUESTS,
	CONFAB_METRIC_TURNS,
	CONFAB_METRIC_TURN_DURATION,
	CONFAB_METRIC_TIME_TO_FIRST_TOKEN,
	CONFAB_METRIC_INTER_TOKEN_LATENCY,
	CONFAB_METRIC_TOKENS,
	CONFAB_METRIC_UPSTREAM_REQUESTS,
	CONFAB_METRIC_UPSTREAM_RETRIES,
	CONFAB_METRIC_TOOL_CALLS,
	CONFAB_METRIC_TOOL_DURATION,
	CONFAB_METRIC_STORE_COMMIT,
	CONFAB_METRIC_TOOL_APPROVALS,
	CONFAB_METRIC_UPSTREAM_ATTEMPTS,
	CONFAB_METRIC_N_FAMILIES,
} ConfabMetric;

/* one labelled series of a family; lives as long as its #ConfabMetrics */
typedef struct _ConfabMetricsSeries ConfabMetricsSeries;

#define CONFAB_TYPE_METRICS (confab_metrics_get_type())
G_DECLARE_FINAL_TYPE(ConfabMetrics, confab_metrics, CONFAB, METRICS, GObject)

ConfabMetrics *
confab_metrics_new(void);
ConfabMetricsSeries *
confab_metrics_series(ConfabMetrics *self, ConfabMetric metric, ...);
void
confab_metrics_series_add(ConfabMetricsSeries *series, guint64 n);
void
confab_metrics_series_observe(ConfabMetricsSeries *series, gdouble seconds);
void
confab_metrics_add(ConfabMetrics *self, ConfabMetric metric, guint64 n, ...);
void
confab_metrics_render(ConfabMetrics *self, GString *out);

/**
 * ConfabMetricsGaugeFunc:
 * @user_data: what was given with it
 *
 * Returns: the gauge's value now; called on the scraping thread
 */
typedef gdouble (*ConfabMetricsGaugeFunc)(gpointer user_data);

void
confab_metrics_add_gauge(ConfabMetrics *self,
			 const gchar *name,
			 const gchar *help,
			 ConfabMetricsGaugeFunc func,
			 gpointer user_data);
void
confab_metrics_remove_gauges(ConfabMetrics *self, gpointer user_data);

void
confab_metrics_write_header(GString *out, const gchar *name, const gchar *type, const gchar *help);
void
confab_metrics_write_sample(GString *out,
			    const gchar *name,
			    const gchar *const *labels,
			    gdouble value);
void
confab_metrics_write_process(GString *out);

G_END_DECLS
