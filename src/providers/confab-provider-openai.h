/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-config.h"
#include "providers/confab-provider.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_PROVIDER_OPENAI (confab_provider_openai_get_type())
G_DECLARE_FINAL_TYPE(ConfabProviderOpenai, confab_provider_openai, CONFAB, PROVIDER_OPENAI, GObject)

ConfabProviderOpenai *
confab_provider_openai_new(const ConfabConfig *config);
gchar *
confab_provider_openai_build_url(const gchar *base_url);
gchar *
confab_provider_openai_build_body(ConfabProviderRequest *request, GError **error);

G_END_DECLS
