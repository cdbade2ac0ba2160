/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "store/confab-store.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_STORE_POSTGRES (confab_store_postgres_get_type())
G_DECLARE_FINAL_TYPE(ConfabStorePostgres, confab_store_postgres, CONFAB, STORE_POSTGRES, GObject)

ConfabStorePostgres *
confab_store_postgres_new(const gchar *url,
			  const gchar *password,
			  guint pool_size,
			  guint lease_seconds,
			  GError **error);
const gchar *
confab_store_postgres_get_instance_id(ConfabStorePostgres *self);
gchar *
confab_store_postgres_read_password_file(const gchar *path, GError **error);

G_END_DECLS
