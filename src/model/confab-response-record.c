/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabModel"

#include "config.h"

#include "model/confab-response-record.h"

/**
 * confab_response_record_new:
 *
 * Returns: (transfer full): an empty record
 */
ConfabResponseRecord *
confab_response_record_new(void)
{
	return g_new0(ConfabResponseRecord, 1);
}

/**
 * confab_response_record_free:
 * @record: (nullable): a record
 */
void
confab_response_record_free(ConfabResponseRecord *record)
{
	if (record == NULL)
		return;
	g_free(record->id);
	g_free(record->owner);
	g_free(record->agent_id);
	g_free(record->session_id);
	g_free(record->status);
	g_free(record->params);
	g_free(record->error);
	g_free(record);
}

/**
 * confab_response_record_is_running:
 * @record: a record
 *
 * Returns: whether it is queued or in progress
 */
gboolean
confab_response_record_is_running(const ConfabResponseRecord *record)
{
	return g_strcmp0(record->status, "queued") == 0 ||
	       g_strcmp0(record->status, "in_progress") == 0;
}

/**
 * confab_response_record_events_free:
 * @events: (nullable): a batch of events
 */
void
confab_response_record_events_free(ConfabResponseEvents *events)
{
	if (events == NULL)
		return;
	g_free(events->data);
	g_free(events);
}
