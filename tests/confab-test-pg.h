/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>
#include <libpq-fe.h>

G_BEGIN_DECLS

/**
 * ConfabTestPg:
 *
 * A throwaway PostgreSQL cluster in a temporary directory, driven by
 * `tests/pg/pg-cluster` (`$CONFAB_PG_CLUSTER` overrides its path). Over TCP
 * (confab_test_pg_get_url()) the role `confab` needs its password; over the
 * Unix socket (confab_test_pg_get_socket_url()) it is trusted.
 */
typedef struct _ConfabTestPg ConfabTestPg;

gboolean
confab_test_pg_available(void);
void
confab_test_pg_skip_unless_available(void);
ConfabTestPg *
confab_test_pg_start(void);
void
confab_test_pg_stop(ConfabTestPg *pg);
void
confab_test_pg_restart(ConfabTestPg *pg);
void
confab_test_pg_kill(ConfabTestPg *pg);
void
confab_test_pg_pause(ConfabTestPg *pg);
void
confab_test_pg_resume(ConfabTestPg *pg);
const gchar *
confab_test_pg_get_url(ConfabTestPg *pg);
const gchar *
confab_test_pg_get_socket_url(ConfabTestPg *pg);
const gchar *
confab_test_pg_get_password(ConfabTestPg *pg);
const gchar *
confab_test_pg_get_password_file(ConfabTestPg *pg);
const gchar *
confab_test_pg_get_dir(ConfabTestPg *pg);
gchar *
confab_test_pg_new_database(ConfabTestPg *pg);
gchar *
confab_test_pg_query(const gchar *url, const gchar *sql);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabTestPg, confab_test_pg_stop)

G_END_DECLS
