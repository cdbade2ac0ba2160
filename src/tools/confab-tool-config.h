/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

/* What confab_tool_config_mask() writes in place of a secret. */
#define CONFAB_TOOL_CONFIG_MASK "********"

/* The limits of an agent's `mcp_servers`. */
#define CONFAB_TOOL_CONFIG_MAX_BYTES	   (64 * 1024)
#define CONFAB_TOOL_CONFIG_MAX_SERVERS	   32
#define CONFAB_TOOL_CONFIG_MAX_NAME	   32
#define CONFAB_TOOL_CONFIG_DEFAULT_TIMEOUT 60	/* seconds per call */
#define CONFAB_TOOL_CONFIG_MAX_TIMEOUT	   3600 /* seconds per call */

/**
 * ConfabToolConfigKind:
 * @CONFAB_TOOL_CONFIG_KIND_STDIO: a child process (`command`)
 * @CONFAB_TOOL_CONFIG_KIND_HTTP: a streamable HTTP endpoint (`url`)
 *
 * How Confab reaches a tool server.
 */
typedef enum {
	CONFAB_TOOL_CONFIG_KIND_STDIO,
	CONFAB_TOOL_CONFIG_KIND_HTTP,
} ConfabToolConfigKind;

/**
 * ConfabToolConfigServer:
 *
 * One tool server of a #ConfabToolConfig; it lives as long as its config.
 */
typedef struct _ConfabToolConfigServer ConfabToolConfigServer;

#define CONFAB_TYPE_TOOL_CONFIG (confab_tool_config_get_type())
G_DECLARE_FINAL_TYPE(ConfabToolConfig, confab_tool_config, CONFAB, TOOL_CONFIG, GObject)

ConfabToolConfig *
confab_tool_config_parse(const gchar *json, GError **error);
guint
confab_tool_config_get_n_servers(ConfabToolConfig *self);
const ConfabToolConfigServer *
confab_tool_config_get_server(ConfabToolConfig *self, guint index);
const ConfabToolConfigServer *
confab_tool_config_lookup_server(ConfabToolConfig *self, const gchar *name);

gchar *
confab_tool_config_mask(const gchar *json);
gboolean
confab_tool_config_merge_masked(const gchar *old_json,
				const gchar *new_json,
				gchar **merged,
				GError **error);

const gchar *
confab_tool_config_server_get_name(const ConfabToolConfigServer *server);
ConfabToolConfigKind
confab_tool_config_server_get_kind(const ConfabToolConfigServer *server);
const gchar *const *
confab_tool_config_server_get_argv(const ConfabToolConfigServer *server);
const gchar *const *
confab_tool_config_server_get_env(const ConfabToolConfigServer *server);
const gchar *
confab_tool_config_server_get_cwd(const ConfabToolConfigServer *server);
const gchar *
confab_tool_config_server_get_url(const ConfabToolConfigServer *server);
const gchar *const *
confab_tool_config_server_get_header_names(const ConfabToolConfigServer *server);
const gchar *const *
confab_tool_config_server_get_header_values(const ConfabToolConfigServer *server);
const gchar *
confab_tool_config_server_get_bearer_token_file(const ConfabToolConfigServer *server);
gint
confab_tool_config_server_get_oauth(const ConfabToolConfigServer *server,
				    const gchar **client_id,
				    const gchar **client_secret,
				    const gchar **private_key,
				    const gchar **scope);
const gchar *const *
confab_tool_config_server_get_allow(const ConfabToolConfigServer *server);
gboolean
confab_tool_config_server_allows(const ConfabToolConfigServer *server, const gchar *tool);
gboolean
confab_tool_config_server_requires_approval(const ConfabToolConfigServer *server,
					    const gchar *tool);
guint
confab_tool_config_server_get_timeout_ms(const ConfabToolConfigServer *server);
const gchar *
confab_tool_config_server_get_fingerprint(const ConfabToolConfigServer *server);

G_END_DECLS
