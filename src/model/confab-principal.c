/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "model/confab-principal.h"

/**
 * confab_principal_new:
 * @owner: the owner
 * @source: the door
 *
 * Returns: (transfer full): a principal
 */
ConfabPrincipal *
confab_principal_new(const gchar *owner, ConfabSessionSource source)
{
	ConfabPrincipal *principal = g_new0(ConfabPrincipal, 1);
	principal->owner = g_strdup(owner);
	principal->source = source;
	return principal;
}

void
confab_principal_free(ConfabPrincipal *principal)
{
	if (principal == NULL)
		return;
	g_free(principal->owner);
	g_free(principal->token_id);
	g_free(principal->agent_id);
	g_free(principal);
}
