/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "store/postgres/confab-pg-connection.h"

G_BEGIN_DECLS

/* Bump with a migration in confab-pg-schema.c:
 *  1: agents, tokens, sessions, messages, quotas, usage (with pending
 *     counts), usage_holds, instances, session_leases; confab_commit_turn()
 *     and confab_reap()
 *  2: messages.response_id
 *  3: approvals
 *  4: approvals.response_id
 *  5: approvals.instance_id, the instance whose turn waits; confab_reap()
 *     times out the approvals of the instances it ends
 *  6: responses and response_events (background responses)
 *  7: sessions.metadata (the Conversations API)
 */
/*  8: agents.upstreams, agents.routing and messages.upstream (upstream
 *     routing); confab_commit_turn() stores messages.upstream
 */
/*  9: elicitations (MCP servers' questions to a person, issue 34)
 * 10: rates and parallel_holds (limits: requests per minute, turns in flight);
 *     confab_reap() gives back a dead instance's turns in flight
 * 11: limits (an owner's or a token's own limits); a token's rates and
 *     parallel_holds rows are keyed by its id
 */
/* 11: limits (issue 30)
 * 12: mcp_oauth (MCP servers' OAuth clients and tokens, issue 34)
 * 13: usage_monthly (usage per owner, token and agent, issue 30);
 *     confab_commit_turn() adds a turn's answer's `use` to it
 */
#define CONFAB_PG_SCHEMA_VERSION 13

/* the pg_advisory_lock() key migrations run under: "confab" in ASCII */
#define CONFAB_PG_SCHEMA_LOCK_KEY "109330244723042"

void
confab_pg_schema_migrate_async(ConfabPgConnection *connection,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
gboolean
confab_pg_schema_migrate_finish(GAsyncResult *result, gint *from_version, GError **error);

G_END_DECLS
