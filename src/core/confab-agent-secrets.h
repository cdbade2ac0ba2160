/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "model/confab-agent.h"
#include "secrets/confab-secret-store.h"
#include "store/confab-store.h"

G_BEGIN_DECLS

/* What the api_key column holds for a key that is in the keyring */
#define CONFAB_AGENT_SECRETS_MARKER "secret-service:" CONFAB_SECRET_SCHEMA

gboolean
confab_agent_secrets_has_plain(ConfabAgent *agent);
ConfabAgent *
confab_agent_secrets_strip(ConfabAgent *agent);
void
confab_agent_secrets_keep_async(ConfabSecretStore *secrets,
				ConfabAgent *agent,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
gboolean
confab_agent_secrets_keep_finish(GAsyncResult *result, GError **error);
void
confab_agent_secrets_forget(ConfabSecretStore *secrets, const gchar *agent_id);
void
confab_agent_secrets_hydrate_async(ConfabSecretStore *secrets,
				   ConfabStore *store,
				   GPtrArray *agents,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data);
GPtrArray *
confab_agent_secrets_hydrate_finish(GAsyncResult *result, GError **error);

G_END_DECLS
