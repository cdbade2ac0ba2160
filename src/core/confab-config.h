/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/**
 * ConfabConfig:
 *
 * The daemon's settings: built-in defaults, then the config file (a
 * #GKeyFile), then the command line. Read-only once the daemon runs.
 * confab.conf(5) documents every key.
 */
typedef struct {
	/* [daemon] */
	gchar *listen;	       /* host:port */
	gchar *state_dir;      /* where confab.db lives */
	gchar *bus;	       /* system, session or none */
	guint shutdown_grace;  /* seconds running turns get on SIGTERM */
	guint serving_threads; /* HTTP threads, 0 for one per core */
	/* [limits] */
	gsize max_body_bytes;
	guint max_json_depth;
	guint max_files_per_message;
	gsize max_file_bytes;
	guint max_connections;
	guint max_inflight_turns;
	guint idle_timeout; /* seconds */
	gsize max_header_bytes;
	gsize max_stream_buffer; /* bytes queued for a slow stream reader */
	guint max_connections_per_peer;
	guint body_timeout;	       /* seconds for a whole request body */
	gsize max_inflight_body_bytes; /* request bodies held at once */
	gsize max_answer_bytes;	       /* the largest assembled answer */

	guint stream_head_wait; /* seconds a stream's head waits for an upstream; 0: none */
	/* [quota] */
	guint64 default_monthly_requests; /* 0: unlimited */
	guint64 default_rpm;		  /* requests per minute per owner; 0: unlimited */
	guint64 default_max_parallel;	  /* turns in flight per owner; 0: unlimited */
	guint64 default_tpm;		  /* tokens per minute per owner; 0: unlimited */
	guint64 default_monthly_tokens;	  /* tokens per month per owner; 0: unlimited */
	guint64 token_reservation;	  /* tokens reserved for an answer without max_tokens */
	/* [upstream] */
	guint upstream_connect_timeout;
	guint upstream_first_byte_timeout;
	guint upstream_idle_timeout;
	guint upstream_total_timeout;
	guint upstream_max_retries;
	guint upstream_max_connections;
	guint upstream_health_skip_ms; /* a target failing 3 times is skipped this long, at first */
	gchar *credentials_dir;	       /* the only place api_key_file may point */
	/* [tools] */
	gsize tool_max_output_bytes; /* tool output handed to a model */
	guint tool_approval_timeout; /* seconds a call waits for a person */
	/* [responses] */
	guint responses_max_background;	 /* background responses per owner at once; 0: no cap */
	guint responses_event_retention; /* seconds a background stream's events outlive it */
	/* [storage] */
	guint read_connections;
	/* [store] */
	gchar *store_backend;	    /* sqlite or postgresql */
	gchar *store_url;	    /* a libpq URI, for postgresql */
	gchar *store_password_file; /* its first line is the database password */
	guint store_pool_size;	    /* PostgreSQL connections */
	guint store_instance_lease; /* PostgreSQL: seconds an instance lives unrenewed */
	/* [http] */
	gchar *http_public_url; /* nullable: where people reach confabd (OAuth callbacks) */
	/* [metrics] */
	gboolean metrics_local_unauthenticated; /* /metrics without a token from loopback */
	/* [desktop] */
	gchar *desktop_default_agent; /* id or name of the agent search offers to ask */
	gchar *desktop_search_index;  /* auto (on the session bus), true or false */
} ConfabConfig;

ConfabConfig *
confab_config_new(void);
gboolean
confab_config_load_file(ConfabConfig *self, const gchar *path, GError **error);
gboolean
confab_config_load_data(ConfabConfig *self, const gchar *data, GError **error);
gboolean
confab_config_parse_listen(const gchar *listen, gchar **host, guint16 *port, GError **error);
void
confab_config_free(ConfabConfig *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabConfig, confab_config_free)

G_END_DECLS
