/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabConfig"

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/confab-config.h"
#include "util/confab-error.h"

/**
 * confab_config_new:
 *
 * Returns: (transfer full): the built-in defaults
 */
ConfabConfig *
confab_config_new(void)
{
	ConfabConfig *self = g_new0(ConfabConfig, 1);
	self->listen = g_strdup("127.0.0.1:8080");
	self->state_dir = g_strdup(CONFAB_DEFAULT_STATE_DIR);
	self->bus = g_strdup("system");
	self->shutdown_grace = 10;
	self->serving_threads = 1;
	self->max_body_bytes = 32 * 1024 * 1024;
	self->max_json_depth = 64;
	self->max_files_per_message = 10;
	self->max_file_bytes = 25 * 1024 * 1024;
	self->max_connections = 1024;
	self->max_inflight_turns = 1024;
	self->idle_timeout = 60;
	self->max_header_bytes = 64 * 1024;
	self->max_stream_buffer = 1024 * 1024;
	self->max_connections_per_peer = 64;
	self->body_timeout = 60;
	self->stream_head_wait = 15;
	self->max_inflight_body_bytes = 256 * 1024 * 1024;
	self->max_answer_bytes = 8 * 1024 * 1024;
	self->default_monthly_requests = 0;
	self->upstream_connect_timeout = 10;
	self->upstream_first_byte_timeout = 120;
	self->upstream_idle_timeout = 120;
	self->upstream_total_timeout = 900;
	self->upstream_max_retries = 2;
	self->upstream_max_connections = 256;
	self->upstream_health_skip_ms = 30000;
	self->token_reservation = 1024;
	/* systemd's LoadCredential= puts them there */
	if (g_getenv("CREDENTIALS_DIRECTORY") != NULL && *g_getenv("CREDENTIALS_DIRECTORY") != '\0')
		self->credentials_dir = g_strdup(g_getenv("CREDENTIALS_DIRECTORY"));
	else
		self->credentials_dir = g_strdup("/etc/confab/keys");
	self->read_connections = 2;
	self->tool_max_output_bytes = 65536;
	self->tool_approval_timeout = 120;
	self->responses_max_background = 16;
	self->responses_event_retention = 3600;
	self->store_backend = g_strdup("sqlite");
	self->desktop_search_index = g_strdup("auto");
	self->store_pool_size = 8;
	self->store_instance_lease = 15;
	return self;
}

void
confab_config_free(ConfabConfig *self)
{
	if (self == NULL)
		return;
	g_free(self->listen);
	g_free(self->http_public_url);
	g_free(self->state_dir);
	g_free(self->bus);
	g_free(self->credentials_dir);
	g_free(self->desktop_default_agent);
	g_free(self->desktop_search_index);
	g_free(self->store_backend);
	g_free(self->store_url);
	g_free(self->store_password_file);
	g_free(self);
}

typedef enum {
	KEY_STRING,
	KEY_UINT,
	KEY_SIZE,
	KEY_UINT64,
	KEY_BOOL,
} KeyKind;

typedef struct {
	const gchar *group;
	const gchar *key;
	KeyKind kind;
	gsize offset;
	guint64 min;
	guint64 max;
} KeySpec;

#define OFF(f) G_STRUCT_OFFSET(ConfabConfig, f)

static const KeySpec keys[] = {
    {"daemon", "listen", KEY_STRING, OFF(listen), 0, 0},
    {"daemon", "state_dir", KEY_STRING, OFF(state_dir), 0, 0},
    {"daemon", "bus", KEY_STRING, OFF(bus), 0, 0},
    {"daemon", "shutdown_grace", KEY_UINT, OFF(shutdown_grace), 0, 3600},
    {"daemon", "serving_threads", KEY_UINT, OFF(serving_threads), 0, 64},
    {"limits", "max_body_bytes", KEY_SIZE, OFF(max_body_bytes), 1024, G_MAXINT32},
    {"limits", "max_json_depth", KEY_UINT, OFF(max_json_depth), 8, 10000},
    {"limits", "max_files_per_message", KEY_UINT, OFF(max_files_per_message), 0, 1000},
    {"limits", "max_file_bytes", KEY_SIZE, OFF(max_file_bytes), 0, G_MAXINT32},
    {"limits", "max_connections", KEY_UINT, OFF(max_connections), 1, 1000000},
    {"limits", "max_inflight_turns", KEY_UINT, OFF(max_inflight_turns), 1, 1000000},
    {"limits", "idle_timeout", KEY_UINT, OFF(idle_timeout), 1, 86400},
    {"limits", "max_header_bytes", KEY_SIZE, OFF(max_header_bytes), 1024, 16 * 1024 * 1024},
    {"limits", "max_stream_buffer", KEY_SIZE, OFF(max_stream_buffer), 4096, G_MAXINT32},
    {"limits", "max_connections_per_peer", KEY_UINT, OFF(max_connections_per_peer), 1, 1000000},
    {"limits", "body_timeout", KEY_UINT, OFF(body_timeout), 1, 86400},
    {"limits", "max_inflight_body_bytes", KEY_SIZE, OFF(max_inflight_body_bytes), 1024, G_MAXINT64},
    {"limits", "max_answer_bytes", KEY_SIZE, OFF(max_answer_bytes), 1024, G_MAXINT32},
    {"http", "stream_head_wait", KEY_UINT, OFF(stream_head_wait), 0, 3600},
    {"quota", "default_monthly_requests", KEY_UINT64, OFF(default_monthly_requests), 0, G_MAXINT64},
    {"quota", "default_rpm", KEY_UINT64, OFF(default_rpm), 0, G_MAXINT32},
    {"quota", "default_max_parallel", KEY_UINT64, OFF(default_max_parallel), 0, G_MAXINT32},
    {"quota", "default_tpm", KEY_UINT64, OFF(default_tpm), 0, G_MAXINT32},
    {"quota", "default_monthly_tokens", KEY_UINT64, OFF(default_monthly_tokens), 0, G_MAXINT64},
    {"quota", "token_reservation", KEY_UINT64, OFF(token_reservation), 1, G_MAXINT32},
    {"upstream", "connect_timeout", KEY_UINT, OFF(upstream_connect_timeout), 1, 3600},
    {"upstream", "first_byte_timeout", KEY_UINT, OFF(upstream_first_byte_timeout), 1, 86400},
    {"upstream", "idle_timeout", KEY_UINT, OFF(upstream_idle_timeout), 1, 86400},
    {"upstream", "total_timeout", KEY_UINT, OFF(upstream_total_timeout), 1, 86400},
    {"upstream", "max_retries", KEY_UINT, OFF(upstream_max_retries), 0, 10},
    {"upstream", "max_connections", KEY_UINT, OFF(upstream_max_connections), 1, 100000},
    {"upstream", "health_skip_ms", KEY_UINT, OFF(upstream_health_skip_ms), 100, 300000},
    {"upstream", "credentials_dir", KEY_STRING, OFF(credentials_dir), 0, 0},
    {"tools", "max_output_bytes", KEY_SIZE, OFF(tool_max_output_bytes), 1024, 16 * 1024 * 1024},
    {"tools", "approval_timeout", KEY_UINT, OFF(tool_approval_timeout), 1, 86400},
    {"responses", "max_background", KEY_UINT, OFF(responses_max_background), 0, 1000000},
    {"responses", "event_retention", KEY_UINT, OFF(responses_event_retention), 60, 30 * 86400},
    {"storage", "read_connections", KEY_UINT, OFF(read_connections), 1, 64},
    {"store", "backend", KEY_STRING, OFF(store_backend), 0, 0},
    {"store", "url", KEY_STRING, OFF(store_url), 0, 0},
    {"store", "password_file", KEY_STRING, OFF(store_password_file), 0, 0},
    {"store", "pool_size", KEY_UINT, OFF(store_pool_size), 1, 1000},
    {"store", "instance_lease", KEY_UINT, OFF(store_instance_lease), 2, 3600},
    {"http", "public_url", KEY_STRING, OFF(http_public_url), 0, 0},
    {"metrics", "local_unauthenticated", KEY_BOOL, OFF(metrics_local_unauthenticated), 0, 1},
    {"desktop", "default_agent", KEY_STRING, OFF(desktop_default_agent), 0, 0},
    {"desktop", "search_index", KEY_STRING, OFF(desktop_search_index), 0, 0},
};

static gboolean
parse_bool(const gchar *value, guint64 *number)
{
	if (g_str_equal(value, "true") || g_str_equal(value, "1"))
		*number = 1;
	else if (g_str_equal(value, "false") || g_str_equal(value, "0"))
		*number = 0;
	else
		return FALSE;
	return TRUE;
}

static gboolean
load_keyfile(ConfabConfig *self, GKeyFile *kf, const gchar *origin, GError **error)
{
	for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
		const KeySpec *spec = &keys[i];
		gpointer field = G_STRUCT_MEMBER_P(self, spec->offset);
		g_autofree gchar *value = NULL;
		guint64 number = 0;

		if (!g_key_file_has_key(kf, spec->group, spec->key, NULL))
			continue;
		value = g_key_file_get_string(kf, spec->group, spec->key, NULL);
		if (value == NULL)
			continue;
		g_strstrip(value);
		if (spec->kind == KEY_STRING) {
			g_free(*(gchar **)field);
			*(gchar **)field = g_steal_pointer(&value);
			continue;
		}
		if (spec->kind == KEY_BOOL && !parse_bool(value, &number)) {
			g_set_error(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_INVALID_VALUE,
				    "%s: [%s] %s=%s: expected true or false",
				    origin,
				    spec->group,
				    spec->key,
				    value);
			return FALSE;
		}
		if (spec->kind != KEY_BOOL &&
		    !g_ascii_string_to_unsigned(value, 10, spec->min, spec->max, &number, NULL)) {
			g_set_error(
			    error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_INVALID_VALUE,
			    "%s: [%s] %s=%s: expected a whole number from %" G_GUINT64_FORMAT
			    " to %" G_GUINT64_FORMAT,
			    origin,
			    spec->group,
			    spec->key,
			    value,
			    spec->min,
			    spec->max);
			return FALSE;
		}
		switch (spec->kind) {
		case KEY_UINT:
			*(guint *)field = (guint)number;
			break;
		case KEY_SIZE:
			*(gsize *)field = (gsize)number;
			break;
		case KEY_UINT64:
			*(guint64 *)field = number;
			break;
		case KEY_BOOL:
			*(gboolean *)field = number != 0;
			break;
		default:
			g_assert_not_reached();
		}
	}
	return TRUE;
}

/**
 * confab_config_load_data:
 * @self: a #ConfabConfig
 * @data: key file text
 * @error: return location for a #GError
 *
 * Overrides the settings that @data names.
 */
gboolean
confab_config_load_data(ConfabConfig *self, const gchar *data, GError **error)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	if (!g_key_file_load_from_data(kf, data, -1, G_KEY_FILE_NONE, error))
		return FALSE;
	return load_keyfile(self, kf, "config", error);
}

/**
 * confab_config_load_file:
 * @self: a #ConfabConfig
 * @path: a key file
 * @error: return location for a #GError
 *
 * Overrides the settings that @path names.
 */
gboolean
confab_config_load_file(ConfabConfig *self, const gchar *path, GError **error)
{
	g_autoptr(GKeyFile) kf = g_key_file_new();
	if (!g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, error)) {
		g_prefix_error(error, "%s: ", path);
		return FALSE;
	}
	return load_keyfile(self, kf, path, error);
}

/**
 * confab_config_parse_listen:
 * @listen: `HOST:PORT`, `[IPv6]:PORT` or `PORT`
 * @host: (out): the host
 * @port: (out): the port; 0 picks a free one
 * @error: return location for a #GError
 */
gboolean
confab_config_parse_listen(const gchar *listen, gchar **host, guint16 *port, GError **error)
{
	const gchar *colon;
	guint64 number = 0;
	g_autofree gchar *h = NULL;

	if (listen == NULL || *listen == '\0') {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_INVALID_VALUE,
				    "empty address");
		return FALSE;
	}
	colon = strrchr(listen, ':');
	if (colon == NULL) {
		h = g_strdup("127.0.0.1");
		colon = listen - 1;
	} else if (listen[0] == '[') {
		const gchar *close = strchr(listen, ']');
		if (close == NULL || close + 1 != colon) {
			g_set_error(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_INVALID_VALUE,
				    "bad address '%s'",
				    listen);
			return FALSE;
		}
		h = g_strndup(listen + 1, close - listen - 1);
	} else {
		h = g_strndup(listen, colon - listen);
	}
	if (!g_ascii_string_to_unsigned(colon + 1, 10, 0, 65535, &number, NULL)) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_INVALID_VALUE,
			    "bad port in '%s'",
			    listen);
		return FALSE;
	}
	*host = g_steal_pointer(&h);
	*port = (guint16)number;
	return TRUE;
}
