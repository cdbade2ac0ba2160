/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <string.h>

#include "http/confab-http-replay.h"

/*
 * GET /api/v1/responses/{id}?stream=true[&starting_after=N]: a background
 * stream told again from the events its turn kept (in batches, every
 * 200 ms of its turn: confab-http-responses.c), then followed as they are
 * kept, to its terminal event. Whichever instance ran the turn, any
 * instance sharing the store serves it: it reads the store, every
 * POLL_MS while nothing new is kept, and as fast as its reader takes the
 * events (it reads no more while the client is behind).
 */

#define POLL_MS 200

typedef struct {
	ConfabEngine *engine;	      /* owned */
	ConfabHttpExchange *exchange; /* owned */
	gchar *response_id;	      /* owned */
	gint64 after;		      /* the last event told */
	guint timer;
	gboolean draining; /* waits for the client to take what it has */
	gboolean wrote;	   /* events written since the last wait */
	gboolean gone;
	gboolean ended_once; /* the turn had ended at the last read */
} Replay;

static void
replay_free(Replay *r)
{
	confab_http_exchange_set_gone_func(r->exchange, NULL, NULL);
	confab_http_exchange_set_drained_func(r->exchange, NULL, NULL);
	g_clear_handle_id(&r->timer, g_source_remove);
	g_clear_object(&r->engine);
	g_clear_pointer(&r->exchange, confab_http_exchange_unref);
	g_free(r->response_id);
	g_free(r);
}

static void
replay_read(Replay *r);

static void
on_gone(ConfabHttpExchange *exchange, gpointer user_data)
{
	Replay *r = user_data;
	r->gone = TRUE;
	if (r->timer != 0 || r->draining) {
		/* no read out: done now */
		replay_free(r);
	}
}

static gboolean
on_tick(gpointer user_data)
{
	Replay *r = user_data;
	r->timer = 0;
	replay_read(r);
	return G_SOURCE_REMOVE;
}

static void
on_drained(ConfabHttpExchange *exchange, gpointer user_data)
{
	Replay *r = user_data;
	confab_http_exchange_set_drained_func(r->exchange, NULL, NULL);
	r->draining = FALSE;
	replay_read(r);
}

/* The next read: once the client has taken what it was given. */
static void
replay_wait(Replay *r, guint ms)
{
	/* (before the first event, the head alone waits to go out with it) */
	if (r->wrote && confab_http_exchange_get_unsent(r->exchange) > 0) {
		r->wrote = FALSE;
		r->draining = TRUE;
		confab_http_exchange_set_drained_func(r->exchange, on_drained, r);
		return;
	}
	r->wrote = FALSE;
	r->timer = g_timeout_add(ms, on_tick, r);
}

static void
replay_end(Replay *r)
{
	confab_http_exchange_end_stream(r->exchange);
	replay_free(r);
}

/* Writes the events of @data numbered above r->after. Returns whether one
 * of them was the terminal event. */
static gboolean
replay_batch(Replay *r, const gchar *data)
{
	g_auto(GStrv) blocks = g_strsplit(data, "\n\n", -1);
	gboolean terminal = FALSE;

	for (guint i = 0; blocks[i] != NULL; i++) {
		const gchar *seq = strstr(blocks[i], "\"sequence_number\":");
		gint64 n;

		if (seq == NULL)
			continue;
		n = g_ascii_strtoll(seq + strlen("\"sequence_number\":"), NULL, 10);
		if (n <= r->after)
			continue;
		confab_http_exchange_write(r->exchange, blocks[i], strlen(blocks[i]));
		confab_http_exchange_write(r->exchange, "\n\n", 2);
		r->wrote = TRUE;
		r->after = n;
		if (g_str_has_prefix(blocks[i], "event: response.completed\n") ||
		    g_str_has_prefix(blocks[i], "event: response.incomplete\n") ||
		    g_str_has_prefix(blocks[i], "event: response.failed\n"))
			terminal = TRUE;
	}
	return terminal;
}

static void
record_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Replay *r = user_data;
	g_autoptr(ConfabResponseRecord) record = NULL;
	g_autoptr(GError) error = NULL;

	if (r->gone) {
		replay_free(r);
		return;
	}
	record = confab_store_get_response_record_finish(CONFAB_STORE(source), result, &error);
	/* ended, and its events all read after that: a turn that ended with
	 * no terminal event (its confabd died) has no more to tell */
	if (record == NULL || !confab_response_record_is_running(record)) {
		if (r->ended_once) {
			replay_end(r);
			return;
		}
		r->ended_once = TRUE;
		replay_read(r);
		return;
	}
	replay_wait(r, POLL_MS);
}

static void
events_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Replay *r = user_data;
	g_autoptr(GPtrArray) batches = NULL;
	g_autoptr(GError) error = NULL;
	gboolean told = FALSE;

	if (r->gone) {
		replay_free(r);
		return;
	}
	batches = confab_store_list_response_events_finish(CONFAB_STORE(source), result, &error);
	if (batches == NULL) {
		g_warning("replaying response %s: %s", r->response_id, error->message);
		replay_end(r);
		return;
	}
	for (guint i = 0; i < batches->len; i++) {
		ConfabResponseEvents *batch = g_ptr_array_index(batches, i);
		gint64 before = r->after;
		if (replay_batch(r, batch->data)) {
			replay_end(r);
			return;
		}
		told = told || r->after > before;
	}
	if (told) {
		replay_wait(r, 0);
		return;
	}
	/* nothing new: has the turn ended? */
	confab_store_get_response_record_async(confab_engine_get_store(r->engine),
					       r->response_id,
					       NULL,
					       record_cb,
					       r);
}

static void
replay_read(Replay *r)
{
	if (r->gone) {
		replay_free(r);
		return;
	}
	confab_store_list_response_events_async(confab_engine_get_store(r->engine),
						r->response_id,
						r->after,
						NULL,
						events_cb,
						r);
}

/**
 * confab_http_replay_start:
 * @engine: the engine
 * @exchange: a GET of a background stream's response, checked (its owner,
 *   its record)
 * @response_id: the response
 * @after: the events numbered above this are told (-1: all)
 *
 * Answers with the response's events as Server-Sent Events, from its kept
 * events and then as they are kept, until its terminal event.
 */
void
confab_http_replay_start(ConfabEngine *engine,
			 ConfabHttpExchange *exchange,
			 const gchar *response_id,
			 gint64 after)
{
	Replay *r = g_new0(Replay, 1);

	r->engine = g_object_ref(engine);
	r->exchange = confab_http_exchange_ref(exchange);
	r->response_id = g_strdup(response_id);
	r->after = after;
	confab_http_exchange_add_header(exchange, "Cache-Control", "no-cache");
	confab_http_exchange_add_header(exchange, "x-accel-buffering", "no");
	confab_http_exchange_begin_stream(exchange, 200, "text/event-stream");
	confab_http_exchange_set_gone_func(exchange, on_gone, r);
	replay_read(r);
}
