/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <libsoup/soup.h>

#include "dbus/confab-dbus-generated.h"

G_BEGIN_DECLS

/* Exit code meson reads as "skipped". */
#define CONFAB_TEST_SKIP 77

void
confab_test_init(gint *argc, gchar ***argv, gboolean need_bus);
void
confab_test_finish(void);
gchar *
confab_test_make_tmpdir(const gchar *name);
void
confab_test_rm_rf(const gchar *path);
gboolean
confab_test_wait_until(gboolean (*condition)(gpointer), gpointer data, guint timeout_ms);
gboolean
confab_test_store_is_postgres(void);
gchar *
confab_test_store_dump(const gchar *state_dir);

/**
 * ConfabTestDaemon:
 * @process: the confabd process
 * @url: `http://127.0.0.1:PORT`
 * @state_dir: its temporary state directory
 * @admin: (nullable): a proxy for org.confab.Confab1.Admin
 * @chat: (nullable): a proxy for org.confab.Confab1.Chat
 * @output: (nullable): everything it printed, once stopped
 *
 * @bus_process: (nullable): its own dbus-daemon, from
 *   confab_test_daemon_start_private_bus()
 *
 * A real confabd on a free loopback port, with a temporary state directory,
 * on the private session bus of confab_test_init() (or a bus of its own).
 */
typedef struct {
	GSubprocess *process;
	GSubprocess *bus_process;
	gchar *url;
	gchar *state_dir;
	gboolean own_state_dir;
	gchar *config_dir; /* owned, nullable: when the state dir is not there yet */
	ConfabDbusAdmin *admin;
	ConfabDbusChat *chat;
	GString *output;
	GDataInputStream *stdout_stream;
	GThread *reader;
	GMutex lock;
} ConfabTestDaemon;

ConfabTestDaemon *
confab_test_daemon_start(const gchar *config_text, const gchar *const *extra_args);
ConfabTestDaemon *
confab_test_daemon_start_full(const gchar *state_dir,
			      const gchar *config_text,
			      const gchar *const *extra_args);
ConfabTestDaemon *
confab_test_daemon_start_activated(const gchar *config_text, const gchar *const *extra_args);
gchar *
confab_test_have_socket_activate(void);
ConfabTestDaemon *
confab_test_daemon_start_private_bus(const gchar *config_text, const gchar *const *extra_args);
gint
confab_test_daemon_stop(ConfabTestDaemon *daemon);
void
confab_test_daemon_kill(ConfabTestDaemon *daemon);
gchar *
confab_test_daemon_get_output(ConfabTestDaemon *daemon);
void
confab_test_daemon_free(ConfabTestDaemon *daemon);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabTestDaemon, confab_test_daemon_free)

gchar *
confab_test_create_agent(ConfabTestDaemon *daemon, const gchar *name, const gchar *provider);
gint
confab_test_confabctl(gchar **out, const gchar *const *args);
GSubprocess *
confab_test_fake_mcp_http(const gchar *option, const gchar *value, gchar **url);
gchar *
confab_test_create_agent_props(ConfabTestDaemon *daemon, GVariant *props);
gchar *
confab_test_create_token(ConfabTestDaemon *daemon,
			 const gchar *owner,
			 const gchar *scope,
			 const gchar *agent_id,
			 gchar **token_id);
void
confab_test_set_quota(ConfabTestDaemon *daemon, const gchar *owner, guint64 quota);

/**
 * ConfabTestResponse:
 * @status: the HTTP status
 * @headers: the response headers
 * @body: the raw body
 * @json: (nullable): the body parsed, when it is JSON
 */
typedef struct {
	guint status;
	SoupMessageHeaders *headers;
	GBytes *body;
	JsonNode *json;
} ConfabTestResponse;

void
confab_test_response_free(ConfabTestResponse *response);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabTestResponse, confab_test_response_free)

ConfabTestResponse *
confab_test_http(ConfabTestDaemon *daemon,
		 const gchar *method,
		 const gchar *path,
		 const gchar *token,
		 const gchar *body);
ConfabTestResponse *
confab_test_http_full(ConfabTestDaemon *daemon,
		      const gchar *method,
		      const gchar *path,
		      const gchar *const *headers,
		      GBytes *body);
ConfabTestResponse *
confab_test_chat(ConfabTestDaemon *daemon,
		 const gchar *token,
		 const gchar *agent_id,
		 const gchar *session_id,
		 const gchar *text,
		 gboolean stream);
GPtrArray *
confab_test_sse_events(ConfabTestResponse *response);
void
confab_test_raw_read_until(GSocketConnection *conn, GString *received, const gchar *needle);
GSocketConnection *
confab_test_raw_open(ConfabTestDaemon *daemon,
		     const gchar *request,
		     GString *received,
		     const gchar *needle);

const gchar *
confab_test_json_string(JsonNode *node, const gchar *path);
gint64
confab_test_json_int(JsonNode *node, const gchar *path);
JsonNode *
confab_test_json_get(JsonNode *node, const gchar *path);
void
confab_test_assert_error(ConfabTestResponse *response, guint status, const gchar *code);

const gchar *
confab_test_variant_string(GVariant *dict, const gchar *key);
const gchar *
confab_test_header(ConfabTestResponse *response, const gchar *name);
guint64
confab_test_header_u64(ConfabTestResponse *response, const gchar *name);

typedef struct _ConfabTestUpstream ConfabTestUpstream;

ConfabTestUpstream *
confab_test_upstream_start(gboolean hold);
const gchar *
confab_test_upstream_get_base_url(ConfabTestUpstream *up);
void
confab_test_upstream_set_hold(ConfabTestUpstream *up, gboolean hold);
gboolean
confab_test_upstream_wait_waiting(ConfabTestUpstream *up, guint n, guint timeout_ms);
void
confab_test_upstream_stop(ConfabTestUpstream *up);
gchar *
confab_test_create_held_agent(ConfabTestDaemon *daemon, ConfabTestUpstream *up);

/* tests/fake-upstream, in a process of its own ($CONFAB_FAKE_UPSTREAM) */
typedef struct {
	GSubprocess *process;
	gchar *url;	 /* http://127.0.0.1:PORT */
	gchar *base_url; /* url + /v1 */
} ConfabTestFakeUpstream;

ConfabTestFakeUpstream *
confab_test_fake_upstream_start(void);
void
confab_test_fake_upstream_free(ConfabTestFakeUpstream *up);
JsonNode *
confab_test_fake_upstream_requests(ConfabTestFakeUpstream *up);
guint
confab_test_fake_upstream_release(ConfabTestFakeUpstream *up);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabTestFakeUpstream, confab_test_fake_upstream_free)

/* a confabd, two fake upstreams for its agents' targets, alice's token */
typedef struct {
	ConfabTestDaemon *daemon;
	ConfabTestFakeUpstream *a;
	ConfabTestFakeUpstream *b;
	gchar *token;
} ConfabTestRouted;

void
confab_test_routed_start(ConfabTestRouted *f, const gchar *config);
void
confab_test_routed_stop(ConfabTestRouted *f);

/* a confabd, an echo agent, two chat.completions tokens: alice's and another */
typedef struct {
	ConfabTestDaemon *daemon;
	gchar *agent;	 /* the echo agent's id */
	gchar *alice;	 /* alice's token (a secret) */
	gchar *alice_id; /* its id */
	gchar *other;	 /* the other token: its owner is the one started with */
	gchar *other_id; /* its id */
} ConfabTestTokens;

void
confab_test_tokens_start(ConfabTestTokens *f, const gchar *config, const gchar *other_owner);
void
confab_test_tokens_teardown(ConfabTestTokens *f, gconstpointer data);

G_END_DECLS
