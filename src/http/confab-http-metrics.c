/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include "http/confab-http-metrics.h"
#include "http/confab-http-response.h"

/*
 * GET /metrics: what the daemon has counted, in Prometheus' text format
 * 0.0.4, plus what is read when scraped: the quotas of this month (one
 * store operation, answered from memory by SQLite) and the process. The
 * router has checked the token (scope metrics.read) or the loopback rule.
 */

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static void
write_quotas(GString *out, GPtrArray *usage)
{
	confab_metrics_write_header(out,
				    "confab_quota_remaining_requests",
				    "gauge",
				    "Requests left this month to owners with a quota");
	for (guint i = 0; usage != NULL && i < usage->len; i++) {
		ConfabStoreUsage *u = g_ptr_array_index(usage, i);
		const gchar *labels[] = {"owner", u->owner, NULL};
		confab_metrics_write_sample(out,
					    "confab_quota_remaining_requests",
					    labels,
					    (gdouble)(u->limit - MIN(u->requests, u->limit)));
	}
}

static void
list_usage_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConfabHttpExchange) exchange = user_data;
	ConfabEngine *engine = CONFAB_ENGINE(source);
	g_autoptr(GPtrArray) usage = NULL;
	g_autoptr(GError) error = NULL;
	GString *out = g_string_sized_new(16384);

	usage = confab_engine_list_usage_finish(engine, result, &error);
	/* the rest is worth having while the store is away */
	if (usage == NULL)
		g_warning("metrics: the quotas could not be read: %s", error->message);
	confab_metrics_render(confab_engine_get_metrics(engine), out);
	write_quotas(out, usage);
	confab_router_write_metrics(confab_engine_get_router(engine), out);
	confab_metrics_write_process(out);
	confab_http_exchange_respond_take(exchange, 200, CONTENT_TYPE, g_string_free(out, FALSE));
}

/**
 * confab_http_metrics_handle:
 * @engine: the engine
 * @exchange: the request
 * @principal: (transfer full) (nullable): who asks; %NULL for a loopback
 *   peer the configuration lets in without a token
 * @param: unused
 *
 * Answers a scrape. Never counted against a quota.
 */
void
confab_http_metrics_handle(ConfabEngine *engine,
			   ConfabHttpExchange *exchange,
			   ConfabPrincipal *principal,
			   const gchar *param)
{
	g_autoptr(ConfabPrincipal) owned = principal;

	confab_engine_list_usage_async(engine,
				       NULL,
				       list_usage_cb,
				       confab_http_exchange_ref(exchange));
}
