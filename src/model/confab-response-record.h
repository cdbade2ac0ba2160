/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

/**
 * ConfabResponseRecord:
 * @id: the response's id (`resp_…`)
 * @owner: whose it is
 * @agent_id: the agent that answers it
 * @session_id: (nullable): its conversation; %NULL until its turn has begun
 *   a new one
 * @background: made with `background: true`: it runs with no client
 *   attached, and @status is where it stands
 * @stream: made with `stream: true` too: its events are kept
 *   (#ConfabResponseEvents) for a client to replay
 * @status: for a background response, `queued`, `in_progress`,
 *   `completed`, `incomplete`, `failed` or `cancelled`; for another,
 *   `foreground`: where it stands is what its messages say
 * @params: what its request said that the response object repeats, a JSON
 *   object (`instructions`, `tools`, `temperature`…)
 * @error: (nullable): how it failed, `{"code","message"}` JSON
 * @cancel_requested: someone asked it to stop (POST …/cancel, on any
 *   instance): the instance that runs it stops it
 * @created_at: Unix seconds
 * @completed_at: Unix seconds once it ended, else 0
 *
 * A response as the store keeps it beside its messages: its request's
 * parameters, and for a background response where it stands. A plain
 * record, so that any instance on a shared database can serve it.
 */
typedef struct {
	gchar *id;
	gchar *owner;
	gchar *agent_id;
	gchar *session_id;
	gboolean background;
	gboolean stream;
	gchar *status;
	gchar *params;
	gchar *error;
	gboolean cancel_requested;
	gint64 created_at;
	gint64 completed_at;
} ConfabResponseRecord;

ConfabResponseRecord *
confab_response_record_new(void);
void
confab_response_record_free(ConfabResponseRecord *record);
gboolean
confab_response_record_is_running(const ConfabResponseRecord *record);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabResponseRecord, confab_response_record_free)

/**
 * ConfabResponseEvents:
 * @first: the sequence number of its first event
 * @last: that of its last event
 * @data: the events as they were streamed (`event: …\ndata: …\n\n` each)
 *
 * A batch of a background stream's events, kept in order.
 */
typedef struct {
	gint64 first;
	gint64 last;
	gchar *data;
} ConfabResponseEvents;

void
confab_response_record_events_free(ConfabResponseEvents *events);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabResponseEvents, confab_response_record_events_free)

G_END_DECLS
