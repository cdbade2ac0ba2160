/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

#include "model/confab-enums.h"

G_BEGIN_DECLS

/**
 * ConfabPrincipal:
 * @owner: whose data this is
 * @token_id: (nullable): the API token used, if any
 * @agent_id: (nullable): the only agent allowed, for a bound token
 * @source: the door: the v1 API or a channel
 *
 * Who is asking, once authenticated.
 */
typedef struct {
	gchar *owner;
	gchar *token_id;
	gchar *agent_id;
	ConfabSessionSource source;
} ConfabPrincipal;

ConfabPrincipal *
confab_principal_new(const gchar *owner, ConfabSessionSource source);
void
confab_principal_free(ConfabPrincipal *principal);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabPrincipal, confab_principal_free)

G_END_DECLS
