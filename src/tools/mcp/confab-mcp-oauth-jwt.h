/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

gchar *
confab_mcp_oauth_jwt_sign(const gchar *private_key_pem,
			  const gchar *client_id,
			  const gchar *audience,
			  GError **error);

G_END_DECLS
