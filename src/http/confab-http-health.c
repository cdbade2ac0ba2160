/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include "http/confab-http-health.h"
#include "store/confab-store.h"

/*
 * GET /healthz and GET /readyz, for load balancers, containers and
 * systemd: no token, and nothing said beyond the status. Alive is the
 * process answering; ready is the store answering too (one read), within
 * READY_WAIT_MS: a store that hangs is as unready as one that fails.
 */

#define CONTENT_TYPE  "text/plain; charset=utf-8"
#define READY_WAIT_MS 5000

/* One readiness check: whichever comes first, the store's answer or the
 * timer, answers the client; the other finds it answered. */
typedef struct {
	ConfabHttpExchange *exchange; /* owned */
	GCancellable *cancellable;    /* owned */
	GSource *timer;		      /* owned */
	gboolean answered;
} Ready;

static void
ready_clear(Ready *ready)
{
	g_source_unref(ready->timer);
	g_object_unref(ready->cancellable);
	confab_http_exchange_unref(ready->exchange);
}

static void
ready_unref(Ready *ready)
{
	g_rc_box_release_full(ready, (GDestroyNotify)ready_clear);
}

static void
ready_answer(Ready *ready, gboolean ok)
{
	if (ready->answered)
		return;
	ready->answered = TRUE;
	if (ok)
		confab_http_exchange_respond_take(ready->exchange,
						  200,
						  CONTENT_TYPE,
						  g_strdup("ok\n"));
	else
		confab_http_exchange_respond_take(ready->exchange,
						  503,
						  CONTENT_TYPE,
						  g_strdup("not ready\n"));
}

static void
ping_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Ready *ready = user_data;
	g_autoptr(GError) error = NULL;
	gboolean ok = confab_store_ping_finish(CONFAB_STORE(source), result, &error);

	if (!ok && !ready->answered)
		g_message("readyz: the store does not answer: %s", error->message);
	ready_answer(ready, ok);
	g_source_destroy(ready->timer); /* drops the timer's reference */
	ready_unref(ready);
}

static gboolean
ready_timeout_cb(gpointer user_data)
{
	Ready *ready = user_data;

	if (!ready->answered)
		g_message("readyz: the store did not answer within %d ms", READY_WAIT_MS);
	ready_answer(ready, FALSE);
	g_cancellable_cancel(ready->cancellable);
	return G_SOURCE_REMOVE;
}

/**
 * confab_http_health_alive:
 * @engine: the engine
 * @exchange: the request
 * @principal: (transfer full) (nullable): %NULL: the route takes no token
 * @param: unused
 *
 * `GET /healthz`: 200 while the process serves.
 */
void
confab_http_health_alive(ConfabEngine *engine,
			 ConfabHttpExchange *exchange,
			 ConfabPrincipal *principal,
			 const gchar *param)
{
	g_autoptr(ConfabPrincipal) owned = principal;

	confab_http_exchange_respond_take(exchange, 200, CONTENT_TYPE, g_strdup("ok\n"));
}

/**
 * confab_http_health_ready:
 * @engine: the engine
 * @exchange: the request
 * @principal: (transfer full) (nullable): %NULL: the route takes no token
 * @param: unused
 *
 * `GET /readyz`: 200 when the store answers a read, 503 when it fails or
 * does not answer in time.
 */
void
confab_http_health_ready(ConfabEngine *engine,
			 ConfabHttpExchange *exchange,
			 ConfabPrincipal *principal,
			 const gchar *param)
{
	g_autoptr(ConfabPrincipal) owned = principal;
	Ready *ready = g_rc_box_new0(Ready);

	ready->exchange = confab_http_exchange_ref(exchange);
	ready->cancellable = g_cancellable_new();
	ready->timer = g_timeout_source_new(READY_WAIT_MS);
	g_source_set_callback(ready->timer,
			      ready_timeout_cb,
			      g_rc_box_acquire(ready),
			      (GDestroyNotify)ready_unref);
	g_source_attach(ready->timer, g_main_context_get_thread_default());
	confab_store_ping_async(confab_engine_get_store(engine),
				ready->cancellable,
				ping_cb,
				ready);
}
