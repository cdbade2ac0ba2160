/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "confab-fuzz.h"
#include "dbus/confab-dbus-admin-impl.h"

/* The a{sv} of CreateAgent/UpdateAgent, from serialized GVariant bytes as a
 * D-Bus message would carry them. */
int
LLVMFuzzerTestOneInput(const guint8 *data, size_t size)
{
	g_autoptr(GBytes) bytes = g_bytes_new(data, size);
	g_autoptr(GVariant) props =
	    g_variant_ref_sink(g_variant_new_from_bytes(G_VARIANT_TYPE("a{sv}"), bytes, FALSE));
	g_autoptr(GVariant) normal = g_variant_get_normal_form(props);
	g_autoptr(ConfabAgent) agent = confab_agent_new();
	g_autoptr(GError) error = NULL;
	gboolean ok = confab_dbus_admin_impl_apply_agent_props(agent, normal, &error);

	g_assert(ok == (error == NULL));
	return 0;
}
