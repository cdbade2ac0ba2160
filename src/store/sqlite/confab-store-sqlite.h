/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "store/confab-store.h"

G_BEGIN_DECLS

/* Bump with a migrate_vN() and a fixture in tests/store/fixtures:
 *  1: agents, tokens, sessions, messages, quotas, usage
 *  2: agents.mcp_servers and agents.max_steps (tools)
 *  3: search_docs and the FTS5 table search, kept by triggers (the desktop's
 *     search)
 */
/* 11: agents.upstreams, agents.routing and messages.upstream (upstream
 *     routing, issue 29)
 */
/* 12: elicitations (MCP servers' questions to a person, issue 34) */
/* 13: limits (issue 30) */
/* 14: mcp_oauth (MCP servers' OAuth clients and tokens, issue 34) */
/* 15: usage_monthly (usage per owner, token and agent, issue 30) */
#define CONFAB_DB_VERSION 17

#define CONFAB_TYPE_STORE_SQLITE (confab_store_sqlite_get_type())
G_DECLARE_FINAL_TYPE(ConfabStoreSqlite, confab_store_sqlite, CONFAB, STORE_SQLITE, GObject)

ConfabStoreSqlite *
confab_store_sqlite_new(const gchar *path, guint n_readers, GError **error);
void
confab_store_sqlite_set_search_index(ConfabStoreSqlite *self, gboolean enabled);
void
confab_store_sqlite_get_stats(ConfabStoreSqlite *self, guint64 *commits, guint64 *jobs);

guint64
confab_store_sqlite_get_checkpoints(ConfabStoreSqlite *self);

G_END_DECLS
