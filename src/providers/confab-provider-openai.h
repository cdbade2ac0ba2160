/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "providers/confab-provider.h"

G_BEGIN_DECLS

/**
 * ConfabProviderOpenaiOptions:
 * @connect_timeout: seconds to connect, unless the agent says
 * @first_byte_timeout: seconds to the answer's first byte, unless the agent says
 * @idle_timeout: seconds between two pieces of an answer, unless the agent says
 * @total_timeout: seconds for a whole answer, unless the agent says
 * @max_retries: attempts after the first, before any answer byte
 * @max_connections: upstream connections open at once
 * @max_answer_bytes: the largest answer held
 * @credentials_dir: the only directory an api_key_file may be in
 *
 * What the openai provider is told by the daemon's configuration.
 */
typedef struct {
	guint connect_timeout;
	guint first_byte_timeout;
	guint idle_timeout;
	guint total_timeout;
	guint max_retries;
	guint max_connections;
	gsize max_answer_bytes;
	gchar *credentials_dir;
} ConfabProviderOpenaiOptions;

#define CONFAB_TYPE_PROVIDER_OPENAI (confab_provider_openai_get_type())
G_DECLARE_FINAL_TYPE(ConfabProviderOpenai, confab_provider_openai, CONFAB, PROVIDER_OPENAI, GObject)

ConfabProviderOpenai *
confab_provider_openai_new(const ConfabProviderOpenaiOptions *options);
gchar *
confab_provider_openai_build_url(const gchar *base_url);
gchar *
confab_provider_openai_build_body(ConfabProviderRequest *request, GError **error);

G_END_DECLS
