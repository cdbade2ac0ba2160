/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include "core/confab-engine.h"
#include "dbus/confab-dbus-notifier.h"
#include "dbus/confab-dbus-search-provider-generated.h"

G_BEGIN_DECLS

/* Where the daemon exports it, as the search provider's .ini says */
#define CONFAB_SEARCH_PROVIDER_PATH "/org/confab/Confab1/SearchProvider"

/* Result ids: "ask:AGENT_ID:TEXT" asks an agent; a session id shows it */
#define CONFAB_SEARCH_ASK_PREFIX "ask:"

/* Conversations a search shows at most, after "Ask AGENT" */
#define CONFAB_SEARCH_MAX_RESULTS 20

#define CONFAB_TYPE_DBUS_SEARCH_IMPL (confab_dbus_search_impl_get_type())
G_DECLARE_FINAL_TYPE(ConfabDbusSearchImpl,
		     confab_dbus_search_impl,
		     CONFAB,
		     DBUS_SEARCH_IMPL,
		     ConfabDbusSearchProvider2Skeleton)

ConfabDbusSearchImpl *
confab_dbus_search_impl_new(ConfabEngine *engine, ConfabDbusNotifier *notifier);

G_END_DECLS
