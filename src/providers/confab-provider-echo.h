/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "providers/confab-provider.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_PROVIDER_ECHO (confab_provider_echo_get_type())
G_DECLARE_FINAL_TYPE(ConfabProviderEcho, confab_provider_echo, CONFAB, PROVIDER_ECHO, GObject)

ConfabProviderEcho *
confab_provider_echo_new(void);
GPtrArray *
confab_provider_echo_split(const gchar *text);
guint
confab_provider_echo_count_words(const gchar *text);

G_END_DECLS
