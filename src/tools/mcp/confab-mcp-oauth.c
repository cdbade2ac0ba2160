/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMcpOAuth"

#include "config.h"

#include <string.h>

#include "tools/mcp/confab-mcp-oauth-jwt.h"
#include "tools/mcp/confab-mcp-oauth-metadata.h"
#include "tools/mcp/confab-mcp-oauth.h"
#include "upstream/confab-upstream-client.h"
#include "util/confab-error.h"
#include "util/confab-http-fields.h"
#include "util/confab-json.h"
#include "util/confab-random.h"

/**
 * ConfabMcpOAuth:
 *
 * OAuth 2.1 authorization of one remote MCP server, as the MCP
 * authorization spec says. On a 401 (or a 403 `insufficient_scope`) the
 * transport hands the challenge here: discovery (RFC 9728 protected-resource
 * metadata, then RFC 8414 / OpenID authorization-server metadata, with the
 * 2025-03-26 fallbacks), registration (the configured client, a client ID
 * metadata document, or RFC 7591 dynamic registration), then the grant:
 * client credentials at once, or an authorization code with PKCE S256,
 * which needs a person: the challenge then fails with
 * %CONFAB_MCP_OAUTH_ERROR_AUTHORIZATION_NEEDED and the authorization URL
 * waits in confab_mcp_oauth_get_authorization_url() until
 * confab_mcp_oauth_complete_async() brings the code back.
 *
 * `resource` (RFC 8707) goes on every authorization and token request. The
 * token goes only to the MCP server's origin. Tokens are never logged; the
 * owner persists them with confab_mcp_oauth_save_state() on ::changed.
 */

#define OAUTH_HTTP_TIMEOUT_MS 30000
#define MAX_OAUTH_BODY	      (256 * 1024)
#define REFRESH_MARGIN_S      60
#define JSON_MAX_DEPTH	      16

struct _ConfabMcpOAuth {
	GObject parent_instance;
	gchar *name;
	gchar *server_url;
	ConfabUpstreamClient *client;
	ConfabMcpOAuthGrant grant;
	/* configured */
	gchar *config_client_id;
	gchar *config_client_secret; /* secret */
	gchar *private_key_pem;	     /* secret */
	gchar *config_scope;
	gchar *redirect_uri;
	gchar *client_metadata_url;
	gchar *authorize_hint;
	/* discovered */
	gchar *resource; /* what `resource` says: the PRM's, else the server URL */
	gchar **resource_scopes;
	ConfabMcpOAuthServer *server;
	gboolean discovered;
	/* the client: configured or registered */
	gchar *client_id;
	gchar *client_secret; /* secret */
	gchar *auth_method;
	/* tokens (secret) */
	gchar *access_token;
	gchar *refresh_token;
	gint64 expires_at; /* real time, seconds; 0: unknown */
	gchar *granted_scope;
	/* the authorization waiting for its person */
	gchar *pending_state;
	gchar *pending_verifier; /* secret */
	gchar *pending_url;
	gchar *pending_scope;
	gchar *pending_redirect;
	/* the scope sets a person was asked for, or the token endpoint asked */
	GHashTable *asked_scopes;
	/* a challenge's flow runs once; later ones wait for it */
	GPtrArray *waiting;
	gboolean flow_running;
	/* the kept state: read again at each challenge (another instance may
	 * have authorized); a state older than ours is not taken */
	ConfabMcpOAuthLoadFunc load;
	gpointer load_data;
	GDestroyNotify load_notify;
	gint64 version; /* real time, microseconds, of our last change */
};

G_DEFINE_FINAL_TYPE(ConfabMcpOAuth, confab_mcp_oauth, G_TYPE_OBJECT)

enum { SIGNAL_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

G_DEFINE_QUARK(confab - mcp - oauth - error - quark, confab_mcp_oauth_error)

static void
wipe(gchar **secret)
{
	if (*secret != NULL) {
		memset(*secret, 0, strlen(*secret));
		g_clear_pointer(secret, g_free);
	}
}

static void
set_str(gchar **slot, const gchar *value)
{
	gchar *copy = g_strdup(value);
	wipe(slot);
	*slot = copy;
}

static GError *
step_error(ConfabMcpOAuth *self, const gchar *step, const GError *why)
{
	return g_error_new(CONFAB_MCP_OAUTH_ERROR,
			   CONFAB_MCP_OAUTH_ERROR_FAILED,
			   "The MCP server %s: OAuth %s: %s",
			   self->name,
			   step,
			   why->message);
}

static GError *
step_error_literal(ConfabMcpOAuth *self, const gchar *step, const gchar *why)
{
	return g_error_new(CONFAB_MCP_OAUTH_ERROR,
			   CONFAB_MCP_OAUTH_ERROR_FAILED,
			   "The MCP server %s: OAuth %s: %s",
			   self->name,
			   step,
			   why);
}

static void
emit_changed(ConfabMcpOAuth *self)
{
	self->version = MAX(g_get_real_time(), self->version + 1);
	g_signal_emit(self, signals[SIGNAL_CHANGED], 0);
}

/* ---------- HTTP requests of our own ---------- */

typedef struct {
	ConfabUpstreamExchange *exchange;
	GSource *timeout;
	guint status;
	GString *body;
	gboolean too_large;
	gboolean done;
	GTask *task;
} Fetch;

typedef struct {
	guint status;
	GString *body;
} FetchResult;

static void
fetch_result_free(FetchResult *result)
{
	if (result->body != NULL) {
		memset(result->body->str, 0, result->body->len);
		g_string_free(result->body, TRUE);
	}
	g_free(result);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(FetchResult, fetch_result_free)

static void
fetch_free(Fetch *fetch)
{
	if (fetch->timeout != NULL) {
		g_source_destroy(fetch->timeout);
		g_source_unref(fetch->timeout);
	}
	g_clear_pointer(&fetch->exchange, confab_upstream_client_exchange_unref);
	if (fetch->body != NULL) {
		memset(fetch->body->str, 0, fetch->body->len);
		g_string_free(fetch->body, TRUE);
	}
	g_clear_object(&fetch->task);
	g_free(fetch);
}

static void
fetch_end(Fetch *fetch, GError *error)
{
	FetchResult *result;

	if (fetch->done) {
		g_clear_error(&error);
		return;
	}
	fetch->done = TRUE;
	if (error != NULL) {
		g_task_return_error(fetch->task, error);
		return;
	}
	result = g_new0(FetchResult, 1);
	result->status = fetch->status;
	result->body = g_steal_pointer(&fetch->body);
	g_task_return_pointer(fetch->task, result, (GDestroyNotify)fetch_result_free);
}

static void
fetch_on_head(guint status, const gchar *reason, const ConfabHttpFields *fields, gpointer data)
{
	((Fetch *)data)->status = status;
}

static void
fetch_on_body(const gchar *data, gsize len, gpointer user_data)
{
	Fetch *fetch = user_data;

	if (fetch->body->len + len > MAX_OAUTH_BODY) {
		fetch->too_large = TRUE;
		return;
	}
	g_string_append_len(fetch->body, data, len);
}

static void
fetch_on_done(GError *error, gpointer user_data)
{
	Fetch *fetch = user_data;

	if (error == NULL && fetch->too_large)
		error = g_error_new(G_IO_ERROR,
				    G_IO_ERROR_MESSAGE_TOO_LARGE,
				    "the answer is larger than %d bytes",
				    MAX_OAUTH_BODY);
	fetch_end(fetch, error);
	fetch_free(fetch);
}

static gboolean
fetch_on_timeout(gpointer user_data)
{
	Fetch *fetch = user_data;

	g_clear_pointer(&fetch->timeout, g_source_unref);
	confab_upstream_client_exchange_abort(fetch->exchange);
	fetch_end(fetch, g_error_new(G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "no answer in time"));
	fetch_free(fetch);
	return G_SOURCE_REMOVE;
}

static const ConfabUpstreamHandler fetch_handler = {NULL,
						    fetch_on_head,
						    fetch_on_body,
						    fetch_on_done};

/* A request to an OAuth endpoint; @headers ("Name: value\r\n" lines) may
 * hold a secret. */
static void
fetch_async(ConfabMcpOAuth *self,
	    const gchar *method,
	    const gchar *url,
	    const gchar *headers,
	    const gchar *content_type,
	    const gchar *body,
	    GAsyncReadyCallback callback,
	    gpointer user_data)
{
	Fetch *fetch = g_new0(Fetch, 1);
	g_autoptr(GBytes) bytes = body != NULL ? g_bytes_new(body, strlen(body)) : NULL;
	g_autofree gchar *all = g_strconcat("Accept: application/json\r\n", headers, NULL);
	GError *error = NULL;

	fetch->task = g_task_new(self, NULL, callback, user_data);
	fetch->body = g_string_new(NULL);
	if (!confab_mcp_oauth_metadata_url_allowed(url, &error)) {
		fetch_end(fetch, error);
		fetch_free(fetch);
		return;
	}
	fetch->exchange = confab_upstream_client_request(self->client,
							 method,
							 url,
							 all,
							 content_type,
							 bytes,
							 &fetch_handler,
							 fetch,
							 &error);
	memset(all, 0, strlen(all));
	if (fetch->exchange == NULL) {
		fetch_end(fetch, error);
		fetch_free(fetch);
		return;
	}
	fetch->timeout = g_timeout_source_new(OAUTH_HTTP_TIMEOUT_MS);
	g_source_set_callback(fetch->timeout, fetch_on_timeout, fetch, NULL);
	g_source_attach(fetch->timeout, g_main_context_get_thread_default());
}

static FetchResult *
fetch_finish(ConfabMcpOAuth *self, GAsyncResult *result, GError **error)
{
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* "HTTP 400: invalid_grant: …" for an error answer. */
static gchar *
status_text(FetchResult *result)
{
	g_autofree gchar *message =
	    confab_mcp_oauth_metadata_parse_error(result->body->str, result->body->len);

	return g_strdup_printf("HTTP %u%s%s",
			       result->status,
			       message != NULL ? ": " : "",
			       message != NULL ? message : "");
}

/* ---------- the state ---------- */

static void
clear_tokens(ConfabMcpOAuth *self)
{
	wipe(&self->access_token);
	wipe(&self->refresh_token);
	g_clear_pointer(&self->granted_scope, g_free);
	self->expires_at = 0;
}

static void
take_tokens(ConfabMcpOAuth *self, ConfabMcpOAuthTokens *tokens, const gchar *asked_scope)
{
	clear_tokens(self);
	self->access_token = g_steal_pointer(&tokens->access_token);
	self->refresh_token = g_steal_pointer(&tokens->refresh_token);
	self->granted_scope = g_strdup(tokens->scope != NULL ? tokens->scope : asked_scope);
	self->expires_at =
	    tokens->expires_in >= 0 ? g_get_real_time() / G_USEC_PER_SEC + tokens->expires_in : 0;
	g_debug("%s: OAuth tokens taken", self->name);
	emit_changed(self);
}

static void
clear_pending(ConfabMcpOAuth *self)
{
	g_clear_pointer(&self->pending_state, g_free);
	wipe(&self->pending_verifier);
	g_clear_pointer(&self->pending_url, g_free);
	g_clear_pointer(&self->pending_scope, g_free);
	g_clear_pointer(&self->pending_redirect, g_free);
}

/* ---------- the flow of a challenge ---------- */

typedef struct _DiscoveryStep DiscoveryStep;

typedef struct {
	guint status;
	ConfabMcpOAuthChallenge *challenge;
	GPtrArray *urls;
	guint next;
	/* unowned (static): the discovery step flow->urls are fetched for */
	const DiscoveryStep *step;
	gboolean legacy;      /* no protected-resource metadata: 2025-03-26 */
	gchar *issuer;	      /* the authorization server we look up */
	gchar *scope;	      /* what to ask for */
	gboolean interactive; /* AuthorizeMcpServer: build the URL, do not fail */
} Flow;

static void
flow_free(Flow *flow)
{
	confab_mcp_oauth_metadata_challenge_free(flow->challenge);
	g_clear_pointer(&flow->urls, g_ptr_array_unref);
	g_free(flow->issuer);
	g_free(flow->scope);
	g_free(flow);
}

static void
flow_discover_resource(GTask *task);
static void
flow_discover_server(GTask *task);
static void
flow_register(GTask *task);
static void
flow_grant(GTask *task);

static Flow *
flow_of(GTask *task)
{
	return g_task_get_task_data(task);
}

/* The end of a flow: every challenge that waited for it hears the same. */
static void
flow_begin(GTask *task);

/* The end of a flow: every challenge that waited for it hears the same;
 * an authorization a person asked for meanwhile runs next, on its own (it
 * wants a URL, not this flow's "authorization needed"). */
static void
flow_return(GTask *task, GError *error)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	g_autoptr(GPtrArray) waiting = g_steal_pointer(&self->waiting);
	GTask *next = NULL;

	self->waiting = g_ptr_array_new_with_free_func(g_object_unref);
	self->flow_running = FALSE;
	for (guint i = 0; i < waiting->len; i++) {
		GTask *waiter = waiting->pdata[i];
		if (((Flow *)g_task_get_task_data(waiter))->interactive) {
			if (next == NULL)
				next = g_object_ref(waiter);
			else
				g_ptr_array_add(self->waiting, g_object_ref(waiter));
		} else if (error != NULL) {
			g_task_return_error(waiter, g_error_copy(error));
		} else {
			g_task_return_boolean(waiter, TRUE);
		}
	}
	if (error != NULL)
		g_task_return_error(task, error);
	else
		g_task_return_boolean(task, TRUE);
	if (next != NULL) {
		self->flow_running = TRUE;
		flow_begin(next);
	}
}

/* -- discovery: a metadata document, tried at each of flow->urls in turn -- */

struct _DiscoveryStep {
	const gchar *what; /* the step, for its errors */
	/* reads and checks the document: the metadata (owned), or NULL and @error */
	gpointer (*read)(GTask *task, const GString *body, GError **error);
	/* takes the task and the metadata: the next step */
	void (*found)(GTask *task, gpointer metadata);
	/* takes the task: the next place, or what follows when none is left */
	void (*next)(GTask *task);
};

/* The first place that answers 200 decides: its document is the step's, or
 * the step fails. */
static void
on_discovery_fetched(GObject *source, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	const DiscoveryStep *step = flow_of(task)->step;
	g_autoptr(GError) error = NULL;
	g_autoptr(FetchResult) result = fetch_finish(self, res, &error);
	gpointer metadata;

	if (result == NULL || result->status != 200) {
		/* not there: the next place */
		step->next(g_steal_pointer(&task));
		return;
	}
	metadata = step->read(task, result->body, &error);
	if (metadata == NULL) {
		flow_return(task, step_error(self, step->what, error));
		return;
	}
	step->found(g_steal_pointer(&task), metadata);
}

/* Fetches the next of flow->urls for @step. */
static void
discovery_fetch(GTask *task, const DiscoveryStep *step)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	Flow *flow = flow_of(task);

	flow->step = step;
	fetch_async(self,
		    "GET",
		    flow->urls->pdata[flow->next++],
		    "",
		    NULL,
		    NULL,
		    on_discovery_fetched,
		    task);
}

/* -- protected-resource metadata (RFC 9728) -- */

static gpointer
resource_read(GTask *task, const GString *body, GError **error)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	g_autoptr(ConfabMcpOAuthResource) resource =
	    confab_mcp_oauth_metadata_parse_resource(body->str, body->len, error);

	if (resource == NULL)
		return NULL;
	if (!confab_mcp_oauth_metadata_resource_covers(resource->resource, self->server_url)) {
		g_set_error(error,
			    CONFAB_MCP_OAUTH_ERROR,
			    CONFAB_MCP_OAUTH_ERROR_FAILED,
			    "it names the resource %s, not %s",
			    resource->resource,
			    self->server_url);
		return NULL;
	}
	return g_steal_pointer(&resource);
}

static void
resource_found(GTask *task, gpointer metadata)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	Flow *flow = flow_of(task);
	g_autoptr(ConfabMcpOAuthResource) resource = metadata;

	set_str(&self->resource, resource->resource);
	g_strfreev(self->resource_scopes);
	self->resource_scopes = g_steal_pointer(&resource->scopes_supported);
	flow->issuer = g_strdup(resource->authorization_server);
	g_clear_pointer(&flow->urls, g_ptr_array_unref);
	flow_discover_server(task);
}

static const DiscoveryStep resource_discovery = {
    .what = "protected-resource metadata",
    .read = resource_read,
    .found = resource_found,
    .next = flow_discover_resource,
};

static void
flow_discover_resource(GTask *task)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	Flow *flow = flow_of(task);

	if (flow->urls == NULL) {
		flow->urls = confab_mcp_oauth_metadata_resource_metadata_urls(
		    self->server_url,
		    flow->challenge->resource_metadata);
		flow->next = 0;
	}
	if (flow->next >= flow->urls->len) {
		/* none: a 2025-03-26 server, its own authorization server */
		g_debug("%s: no protected-resource metadata; the 2025-03-26 discovery", self->name);
		flow->legacy = TRUE;
		set_str(&self->resource, self->server_url);
		flow->issuer = confab_mcp_oauth_metadata_origin(self->server_url);
		g_clear_pointer(&flow->urls, g_ptr_array_unref);
		flow_discover_server(task);
		return;
	}
	discovery_fetch(task, &resource_discovery);
}

/* -- authorization-server metadata (RFC 8414, OpenID) -- */

static gboolean
server_urls_allowed(ConfabMcpOAuthServer *server, GError **error)
{
	return confab_mcp_oauth_metadata_url_allowed(server->token_endpoint, error) &&
	       (server->authorization_endpoint == NULL ||
		confab_mcp_oauth_metadata_url_allowed(server->authorization_endpoint, error)) &&
	       (server->registration_endpoint == NULL ||
		confab_mcp_oauth_metadata_url_allowed(server->registration_endpoint, error));
}

/* Takes @metadata, a ConfabMcpOAuthServer. */
static void
server_found(GTask *task, gpointer metadata)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	ConfabMcpOAuthServer *server = metadata;

	if (self->server != NULL && g_strcmp0(self->server->issuer, server->issuer) != 0) {
		/* another authorization server: its client and tokens are not ours */
		g_clear_pointer(&self->client_id, g_free);
		wipe(&self->client_secret);
		clear_tokens(self);
	}
	confab_mcp_oauth_metadata_server_free(self->server);
	self->server = server;
	self->discovered = TRUE;
	flow_register(task);
}

static gpointer
server_read(GTask *task, const GString *body, GError **error)
{
	Flow *flow = flow_of(task);
	g_autoptr(ConfabMcpOAuthServer) server =
	    confab_mcp_oauth_metadata_parse_server(body->str, body->len, error);

	if (server == NULL || !server_urls_allowed(server, error))
		return NULL;
	/* the 2025-03-26 discovery did not know the issuer beforehand */
	if (!flow->legacy &&
	    !confab_mcp_oauth_metadata_same_resource(server->issuer, flow->issuer)) {
		g_set_error(error,
			    CONFAB_MCP_OAUTH_ERROR,
			    CONFAB_MCP_OAUTH_ERROR_FAILED,
			    "the metadata names the issuer %s, not %s",
			    server->issuer,
			    flow->issuer);
		return NULL;
	}
	return g_steal_pointer(&server);
}

static const DiscoveryStep server_discovery = {
    .what = "authorization-server metadata",
    .read = server_read,
    .found = server_found,
    .next = flow_discover_server,
};

/* The 2025-03-26 fallback: /authorize, /token, /register at the origin. */
static ConfabMcpOAuthServer *
default_server(const gchar *origin)
{
	ConfabMcpOAuthServer *server = g_new0(ConfabMcpOAuthServer, 1);

	server->issuer = g_strdup(origin);
	server->authorization_endpoint = g_strconcat(origin, "/authorize", NULL);
	server->token_endpoint = g_strconcat(origin, "/token", NULL);
	server->registration_endpoint = g_strconcat(origin, "/register", NULL);
	return server;
}

static void
flow_discover_server(GTask *task)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	Flow *flow = flow_of(task);
	g_autoptr(GError) error = NULL;

	if (flow->urls == NULL) {
		if (!confab_mcp_oauth_metadata_url_allowed(flow->issuer, &error)) {
			flow_return(task, step_error(self, "authorization-server metadata", error));
			return;
		}
		flow->urls = confab_mcp_oauth_metadata_server_metadata_urls(flow->issuer);
		flow->next = 0;
	}
	if (flow->next < flow->urls->len) {
		discovery_fetch(task, &server_discovery);
		return;
	}
	if (flow->legacy) {
		g_debug("%s: no authorization-server metadata; the default endpoints", self->name);
		server_found(task, default_server(flow->issuer));
		return;
	}
	flow_return(task,
		    step_error_literal(self,
				       "authorization-server metadata",
				       "the authorization server publishes none at its "
				       "well-known paths"));
}

/* -- registration -- */

static const gchar *
choose_auth_method(ConfabMcpOAuth *self, gboolean has_secret)
{
	const gchar *const *supported =
	    (const gchar *const *)(self->server != NULL ? self->server->token_endpoint_auth_methods
							: NULL);

	if (self->private_key_pem != NULL)
		return "private_key_jwt";
	if (!has_secret)
		return "none";
	if (supported == NULL ||
	    confab_mcp_oauth_metadata_scope_has(supported, "client_secret_basic"))
		return "client_secret_basic";
	if (confab_mcp_oauth_metadata_scope_has(supported, "client_secret_post"))
		return "client_secret_post";
	return "client_secret_basic";
}

static gchar *
registration_body(ConfabMcpOAuth *self)
{
	const gchar *const *supported =
	    (const gchar *const *)self->server->token_endpoint_auth_methods;
	const gchar *method = "client_secret_basic";
	GString *out = g_string_new("{\"client_name\":\"Confab\"");

	if (supported != NULL && !confab_mcp_oauth_metadata_scope_has(supported, method))
		method = confab_mcp_oauth_metadata_scope_has(supported, "client_secret_post")
			     ? "client_secret_post"
			     : "none";
	if (self->grant == CONFAB_MCP_OAUTH_GRANT_CLIENT_CREDENTIALS) {
		g_string_append(out, ",\"grant_types\":[\"client_credentials\"]");
	} else {
		g_string_append(out, ",\"redirect_uris\":[");
		confab_json_append_string(out,
					  self->redirect_uri != NULL ? self->redirect_uri : "");
		g_string_append(out,
				"],\"grant_types\":[\"authorization_code\",\"refresh_token\"],"
				"\"response_types\":[\"code\"]");
	}
	g_string_append(out, ",\"token_endpoint_auth_method\":");
	confab_json_append_string(out, method);
	g_string_append_c(out, '}');
	return g_string_free(out, FALSE);
}

static void
on_registered(GObject *source, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	g_autoptr(GError) error = NULL;
	g_autoptr(FetchResult) result = fetch_finish(self, res, &error);
	g_autoptr(ConfabMcpOAuthRegistration) registration = NULL;

	if (result == NULL) {
		flow_return(task, step_error(self, "registration", error));
		return;
	}
	if (result->status != 200 && result->status != 201) {
		g_autofree gchar *why = status_text(result);
		flow_return(task, step_error_literal(self, "registration: refused", why));
		return;
	}
	registration = confab_mcp_oauth_metadata_parse_registration(result->body->str,
								    result->body->len,
								    &error);
	if (registration == NULL) {
		flow_return(task, step_error(self, "registration", error));
		return;
	}
	set_str(&self->client_id, registration->client_id);
	set_str(&self->client_secret, registration->client_secret);
	set_str(&self->auth_method,
		registration->token_endpoint_auth_method != NULL
		    ? registration->token_endpoint_auth_method
		    : choose_auth_method(self, registration->client_secret != NULL));
	g_debug("%s: registered as an OAuth client", self->name);
	emit_changed(self);
	flow_grant(g_steal_pointer(&task));
}

static void
flow_register(GTask *task)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	g_autofree gchar *body = NULL;

	if (self->config_client_id != NULL) {
		set_str(&self->client_id, self->config_client_id);
		set_str(&self->client_secret, self->config_client_secret);
		set_str(&self->auth_method, choose_auth_method(self, self->client_secret != NULL));
	} else if (self->client_id == NULL && self->server->client_id_metadata_document_supported &&
		   self->client_metadata_url != NULL &&
		   g_str_has_prefix(self->client_metadata_url, "https://")) {
		set_str(&self->client_id, self->client_metadata_url);
		wipe(&self->client_secret);
		set_str(&self->auth_method, "none");
	}
	if (self->client_id != NULL) {
		flow_grant(task);
		return;
	}
	if (self->server->registration_endpoint == NULL) {
		flow_return(task,
			    step_error_literal(self,
					       "registration",
					       "the authorization server offers no dynamic "
					       "registration; give oauth.client_id in the entry"));
		return;
	}
	body = registration_body(self);
	fetch_async(self,
		    "POST",
		    self->server->registration_endpoint,
		    "",
		    "application/json",
		    body,
		    on_registered,
		    task);
}

/* -- the token endpoint -- */

static void
form_add(GString *form, const gchar *name, const gchar *value)
{
	g_autofree gchar *escaped = NULL;

	if (value == NULL)
		return;
	escaped = g_uri_escape_string(value, NULL, FALSE);
	if (form->len > 0)
		g_string_append_c(form, '&');
	g_string_append_printf(form, "%s=%s", name, escaped);
	memset(escaped, 0, strlen(escaped));
}

/* Adds the client's authentication to a token request: @headers gets
 * Basic, or @form the client's fields. */
static gboolean
client_auth(ConfabMcpOAuth *self, GString *form, GString *headers, GError **error)
{
	const gchar *method = self->auth_method != NULL ? self->auth_method : "none";

	if (strcmp(method, "client_secret_basic") == 0 && self->client_secret != NULL) {
		g_autofree gchar *id = g_uri_escape_string(self->client_id, NULL, FALSE);
		g_autofree gchar *secret = g_uri_escape_string(self->client_secret, NULL, FALSE);
		g_autofree gchar *pair = g_strconcat(id, ":", secret, NULL);
		g_autofree gchar *encoded = g_base64_encode((const guchar *)pair, strlen(pair));
		g_string_append_printf(headers, "Authorization: Basic %s\r\n", encoded);
		memset(secret, 0, strlen(secret));
		memset(pair, 0, strlen(pair));
		memset(encoded, 0, strlen(encoded));
		return TRUE;
	}
	form_add(form, "client_id", self->client_id);
	if (strcmp(method, "client_secret_post") == 0) {
		form_add(form, "client_secret", self->client_secret);
	} else if (strcmp(method, "private_key_jwt") == 0) {
		g_autofree gchar *assertion = confab_mcp_oauth_jwt_sign(self->private_key_pem,
									self->client_id,
									self->server->issuer,
									error);
		if (assertion == NULL)
			return FALSE;
		form_add(form,
			 "client_assertion_type",
			 "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
		form_add(form, "client_assertion", assertion);
	}
	return TRUE;
}

typedef struct {
	gchar *scope;
	gboolean refresh;
} TokenRequest;

static void
token_request_free(TokenRequest *request)
{
	g_free(request->scope);
	g_free(request);
}

static void
on_token(GObject *source, GAsyncResult *res, gpointer user_data);

/* POSTs @form (with the client's authentication and `resource`) to the
 * token endpoint; @task hears TRUE once the tokens are taken. */
static void
token_request(ConfabMcpOAuth *self,
	      GTask *task,
	      GString *form,
	      const gchar *scope,
	      gboolean refresh)
{
	g_autoptr(GString) headers = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	TokenRequest *request = g_new0(TokenRequest, 1);

	form_add(form, "resource", self->resource != NULL ? self->resource : self->server_url);
	if (!client_auth(self, form, headers, &error)) {
		token_request_free(request);
		flow_return(task, step_error(self, "token request", error));
		return;
	}
	request->scope = g_strdup(scope);
	request->refresh = refresh;
	g_object_set_data_full(G_OBJECT(task),
			       "token-request",
			       request,
			       (GDestroyNotify)token_request_free);
	fetch_async(self,
		    "POST",
		    self->server->token_endpoint,
		    headers->str,
		    "application/x-www-form-urlencoded",
		    form->str,
		    on_token,
		    task);
	memset(headers->str, 0, headers->len);
	memset(form->str, 0, form->len);
}

static void
on_token(GObject *source, GAsyncResult *res, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	TokenRequest *request = g_object_get_data(G_OBJECT(task), "token-request");
	g_autoptr(GError) error = NULL;
	g_autoptr(FetchResult) result = fetch_finish(self, res, &error);
	g_autoptr(ConfabMcpOAuthTokens) tokens = NULL;
	const gchar *step = request->refresh ? "token refresh" : "token request";

	if (result == NULL) {
		flow_return(task, step_error(self, step, error));
		return;
	}
	if (result->status != 200) {
		g_autofree gchar *why = status_text(result);
		if (request->refresh)
			clear_tokens(self);
		flow_return(task, step_error_literal(self, step, why));
		return;
	}
	tokens =
	    confab_mcp_oauth_metadata_parse_tokens(result->body->str, result->body->len, &error);
	if (tokens == NULL) {
		flow_return(task, step_error(self, step, error));
		return;
	}
	if (request->refresh && tokens->refresh_token == NULL)
		tokens->refresh_token = g_strdup(self->refresh_token);
	take_tokens(self, tokens, request->scope);
	flow_return(task, NULL);
}

/* -- the grants -- */

static gchar *
random_string(gsize n_bytes)
{
	g_autofree guint8 *bytes = g_malloc(n_bytes);
	gchar *text;

	if (!confab_random_bytes(bytes, n_bytes, NULL)) {
		for (gsize i = 0; i < n_bytes; i++)
			bytes[i] = (guint8)g_random_int();
	}
	text = g_base64_encode(bytes, n_bytes);
	g_strdelimit(text, "+", '-');
	g_strdelimit(text, "/", '_');
	g_strdelimit(text, "=", '\0');
	return text;
}

static gchar *
pkce_challenge(const gchar *verifier)
{
	g_autoptr(GChecksum) sha = g_checksum_new(G_CHECKSUM_SHA256);
	guint8 digest[32];
	gsize len = sizeof digest;
	gchar *text;

	g_checksum_update(sha, (const guchar *)verifier, strlen(verifier));
	g_checksum_get_digest(sha, digest, &len);
	text = g_base64_encode(digest, len);
	g_strdelimit(text, "+", '-');
	g_strdelimit(text, "/", '_');
	g_strdelimit(text, "=", '\0');
	return text;
}

/* What to ask for: the challenge's scope, else the resource's
 * scopes_supported, else nothing; offline_access where the authorization
 * server lists it (authorization code). */
static gchar *
choose_scope(ConfabMcpOAuth *self, Flow *flow)
{
	g_autofree gchar *base = NULL;
	g_autofree gchar *supported = NULL;

	if (self->config_scope != NULL)
		base = g_strdup(self->config_scope);
	else if (flow->challenge->scope != NULL && *flow->challenge->scope != '\0')
		base = g_strdup(flow->challenge->scope);
	else if (self->resource_scopes != NULL && self->resource_scopes[0] != NULL)
		base = g_strjoinv(" ", self->resource_scopes);
	if (flow->scope != NULL) {
		gchar *both = confab_mcp_oauth_metadata_scope_union(flow->scope, base);
		g_free(base);
		base = both;
	}
	if (self->grant == CONFAB_MCP_OAUTH_GRANT_AUTHORIZATION_CODE &&
	    confab_mcp_oauth_metadata_scope_has(
		(const gchar *const *)self->server->scopes_supported,
		"offline_access"))
		return confab_mcp_oauth_metadata_scope_union(base, "offline_access");
	return g_steal_pointer(&base);
}

static GError *
authorization_needed(ConfabMcpOAuth *self)
{
	return g_error_new(CONFAB_MCP_OAUTH_ERROR,
			   CONFAB_MCP_OAUTH_ERROR_AUTHORIZATION_NEEDED,
			   "authorization needed for the MCP server %s%s%s",
			   self->name,
			   self->authorize_hint != NULL ? ": " : "",
			   self->authorize_hint != NULL ? self->authorize_hint : "");
}

/* Builds the authorization URL (PKCE S256, state, resource). */
static gboolean
begin_authorization(ConfabMcpOAuth *self, const gchar *scope, GError **error)
{
	const gchar *const *methods = (const gchar *const *)self->server->code_challenge_methods;
	g_autoptr(GString) query = g_string_new(NULL);
	g_autofree gchar *challenge = NULL;
	const gchar *endpoint = self->server->authorization_endpoint;

	if (endpoint == NULL) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_UPSTREAM,
			    "the authorization server has no authorization endpoint");
		return FALSE;
	}
	if (methods != NULL && !confab_mcp_oauth_metadata_scope_has(methods, "S256")) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_UPSTREAM,
			    "the authorization server does not offer PKCE S256");
		return FALSE;
	}
	if (self->redirect_uri == NULL) {
		g_set_error(error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM, "no redirect URI is set");
		return FALSE;
	}
	clear_pending(self);
	self->pending_state = random_string(24);
	self->pending_verifier = random_string(48);
	self->pending_scope = g_strdup(scope);
	self->pending_redirect = g_strdup(self->redirect_uri);
	challenge = pkce_challenge(self->pending_verifier);
	form_add(query, "response_type", "code");
	form_add(query, "client_id", self->client_id);
	form_add(query, "redirect_uri", self->redirect_uri);
	form_add(query, "state", self->pending_state);
	form_add(query, "code_challenge", challenge);
	form_add(query, "code_challenge_method", "S256");
	form_add(query, "resource", self->resource != NULL ? self->resource : self->server_url);
	form_add(query, "scope", scope);
	self->pending_url =
	    g_strconcat(endpoint, strchr(endpoint, '?') != NULL ? "&" : "?", query->str, NULL);
	g_hash_table_add(self->asked_scopes, g_strdup(scope != NULL ? scope : ""));
	emit_changed(self);
	return TRUE;
}

static void
flow_grant(GTask *task)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	Flow *flow = flow_of(task);
	g_autofree gchar *scope = choose_scope(self, flow);
	g_autoptr(GError) error = NULL;

	if (self->grant == CONFAB_MCP_OAUTH_GRANT_CLIENT_CREDENTIALS) {
		g_autoptr(GString) form = g_string_new(NULL);
		g_hash_table_add(self->asked_scopes, g_strdup(scope != NULL ? scope : ""));
		form_add(form, "grant_type", "client_credentials");
		form_add(form, "scope", scope);
		token_request(self, task, form, scope, FALSE);
		return;
	}
	if (!flow->interactive && self->pending_url != NULL &&
	    g_strcmp0(self->pending_scope, scope) == 0 &&
	    g_strcmp0(self->pending_redirect, self->redirect_uri) == 0) {
		/* the URL a person may have open already stays valid */
		flow_return(task, authorization_needed(self));
		return;
	}
	if (!begin_authorization(self, scope, &error)) {
		flow_return(task, step_error(self, "authorization", error));
		return;
	}
	g_message("%s: authorization needed", self->name);
	flow_return(task, flow->interactive ? NULL : authorization_needed(self));
}

/* -- refresh -- */

static void
refresh_begin(ConfabMcpOAuth *self, GTask *task)
{
	g_autoptr(GString) form = g_string_new(NULL);

	form_add(form, "grant_type", "refresh_token");
	form_add(form, "refresh_token", self->refresh_token);
	token_request(self, task, form, self->granted_scope, TRUE);
}

/* -- step-up (403 insufficient_scope) -- */

static void
flow_step_up(GTask *task)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	Flow *flow = flow_of(task);
	g_autofree gchar *scope =
	    confab_mcp_oauth_metadata_scope_union(self->granted_scope, flow->challenge->scope);

	if (g_hash_table_contains(self->asked_scopes, scope != NULL ? scope : "")) {
		g_autofree gchar *why = g_strdup_printf(
		    "the server still answers insufficient_scope after Confab asked for “%s”",
		    scope != NULL ? scope : "");
		flow_return(task, step_error_literal(self, "step-up", why));
		return;
	}
	g_debug("%s: stepping up to the scope %s", self->name, scope);
	g_free(flow->scope);
	flow->scope = g_steal_pointer(&scope);
	if (!self->discovered || self->client_id == NULL) {
		flow_discover_resource(task);
		return;
	}
	flow_grant(task);
}

static void
flow_decide(GTask *task);

typedef struct {
	GTask *task;
	gchar *token; /* the token that was refused, or NULL */
} Reload;

static gboolean
load_newer(ConfabMcpOAuth *self, const gchar *state);

static void
on_reloaded(gchar *state, gpointer data)
{
	Reload *reload = data;
	g_autoptr(GTask) task = reload->task;
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	Flow *flow = flow_of(task);
	gboolean other;

	if (state != NULL) {
		load_newer(self, state);
		memset(state, 0, strlen(state));
		g_free(state);
	}
	/* another instance (or a callback) brought a token other than the
	 * one refused: retry with it */
	other = flow->status == 401 && !flow->interactive && self->access_token != NULL &&
		g_strcmp0(self->access_token, reload->token) != 0;
	wipe(&reload->token);
	g_free(reload);
	if (other) {
		flow_return(g_steal_pointer(&task), NULL);
		return;
	}
	flow_decide(g_steal_pointer(&task));
}

static void
flow_begin(GTask *task)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	Reload *reload;

	if (self->load == NULL) {
		flow_decide(task);
		return;
	}
	reload = g_new0(Reload, 1);
	reload->task = task;
	reload->token = g_strdup(self->access_token);
	self->load(self->load_data, on_reloaded, reload);
}

static void
flow_decide(GTask *task)
{
	ConfabMcpOAuth *self = g_task_get_source_object(task);
	Flow *flow = flow_of(task);

	if (flow->status == 403) {
		if (g_strcmp0(flow->challenge->error, "insufficient_scope") != 0) {
			flow_return(
			    task,
			    step_error_literal(self, "authorization", "HTTP 403 forbidden"));
			return;
		}
		flow_step_up(task);
		return;
	}
	if (self->refresh_token != NULL && self->server != NULL && !flow->interactive) {
		/* a token the server refused: refresh it first */
		refresh_begin(self, task);
		return;
	}
	clear_tokens(self);
	if (self->discovered && self->client_id != NULL) {
		flow_grant(task);
		return;
	}
	flow_discover_resource(task);
}

/* ---------- public ---------- */

static void
flow_start(ConfabMcpOAuth *self, GTask *task, Flow *flow)
{
	g_task_set_task_data(task, flow, (GDestroyNotify)flow_free);
	if (self->flow_running) {
		g_ptr_array_add(self->waiting, g_steal_pointer(&task));
		return;
	}
	self->flow_running = TRUE;
	flow_begin(task);
}

/**
 * confab_mcp_oauth_challenge_async:
 * @self: a #ConfabMcpOAuth
 * @status: the MCP server's status, 401 or 403
 * @www_authenticate: (nullable): its WWW-Authenticate
 *
 * Does what the challenge asks. It succeeds once a new token is there to
 * retry with; it fails with %CONFAB_MCP_OAUTH_ERROR_AUTHORIZATION_NEEDED
 * when a person must authorize first, or %CONFAB_MCP_OAUTH_ERROR_FAILED
 * naming the step that failed.
 */
void
confab_mcp_oauth_challenge_async(ConfabMcpOAuth *self,
				 guint status,
				 const gchar *www_authenticate,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);
	Flow *flow = g_new0(Flow, 1);

	g_return_if_fail(CONFAB_IS_MCP_OAUTH(self));
	g_task_set_source_tag(task, confab_mcp_oauth_challenge_async);
	flow->status = status;
	flow->challenge = confab_mcp_oauth_metadata_parse_challenge(www_authenticate);
	flow_start(self, task, flow);
}

gboolean
confab_mcp_oauth_challenge_finish(ConfabMcpOAuth *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/**
 * confab_mcp_oauth_authorize_async:
 *
 * Builds a new authorization URL for a person to open (discovering and
 * registering first where needed), with the scopes the server asked for
 * last; confab_mcp_oauth_authorize_finish() returns it.
 */
void
confab_mcp_oauth_authorize_async(ConfabMcpOAuth *self,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);
	Flow *flow = g_new0(Flow, 1);

	g_return_if_fail(CONFAB_IS_MCP_OAUTH(self));
	g_task_set_source_tag(task, confab_mcp_oauth_authorize_async);
	flow->status = 401;
	flow->interactive = TRUE;
	flow->challenge = confab_mcp_oauth_metadata_parse_challenge(NULL);
	flow->scope = g_strdup(self->pending_scope);
	if (self->grant != CONFAB_MCP_OAUTH_GRANT_AUTHORIZATION_CODE) {
		g_task_return_new_error(task,
					CONFAB_MCP_OAUTH_ERROR,
					CONFAB_MCP_OAUTH_ERROR_FAILED,
					"The MCP server %s uses the client credentials grant: no "
					"person authorizes it",
					self->name);
		g_object_unref(task);
		flow_free(flow);
		return;
	}
	g_hash_table_remove_all(self->asked_scopes);
	flow_start(self, task, flow);
}

gchar *
confab_mcp_oauth_authorize_finish(ConfabMcpOAuth *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	if (!g_task_propagate_boolean(G_TASK(result), error))
		return NULL;
	return g_strdup(self->pending_url);
}

/**
 * confab_mcp_oauth_refresh_async:
 *
 * Refreshes the token (before it expires).
 */
void
confab_mcp_oauth_refresh_async(ConfabMcpOAuth *self,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);
	Flow *flow = g_new0(Flow, 1);

	g_return_if_fail(CONFAB_IS_MCP_OAUTH(self));
	g_task_set_source_tag(task, confab_mcp_oauth_refresh_async);
	flow->challenge = confab_mcp_oauth_metadata_parse_challenge(NULL);
	g_task_set_task_data(task, flow, (GDestroyNotify)flow_free);
	if (self->refresh_token == NULL || self->server == NULL || self->flow_running) {
		g_task_return_boolean(task, TRUE);
		g_object_unref(task);
		return;
	}
	self->flow_running = TRUE;
	refresh_begin(self, task);
}

gboolean
confab_mcp_oauth_refresh_finish(ConfabMcpOAuth *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/**
 * confab_mcp_oauth_complete_async:
 * @state: the callback's `state`
 * @code: (nullable): the callback's `code`
 *
 * Exchanges the authorization code for tokens, with the PKCE verifier.
 * The state must be the pending one; it is used once.
 */
void
confab_mcp_oauth_complete_async(ConfabMcpOAuth *self,
				const gchar *state,
				const gchar *code,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);
	g_autoptr(GString) form = g_string_new(NULL);
	g_autofree gchar *scope = NULL;
	Flow *flow = g_new0(Flow, 1);

	g_return_if_fail(CONFAB_IS_MCP_OAUTH(self));
	g_task_set_source_tag(task, confab_mcp_oauth_complete_async);
	flow->challenge = confab_mcp_oauth_metadata_parse_challenge(NULL);
	g_task_set_task_data(task, flow, (GDestroyNotify)flow_free);
	if (state == NULL || self->pending_state == NULL ||
	    strcmp(state, self->pending_state) != 0 || self->server == NULL) {
		g_task_return_new_error(task,
					CONFAB_MCP_OAUTH_ERROR,
					CONFAB_MCP_OAUTH_ERROR_BAD_STATE,
					"The MCP server %s: OAuth callback: unknown or used state",
					self->name);
		g_object_unref(task);
		return;
	}
	if (code == NULL || *code == '\0') {
		clear_pending(self);
		g_task_return_error(task,
				    step_error_literal(self, "callback", "it carries no code"));
		g_object_unref(task);
		return;
	}
	form_add(form, "grant_type", "authorization_code");
	form_add(form, "code", code);
	form_add(form, "redirect_uri", self->pending_redirect);
	form_add(form, "code_verifier", self->pending_verifier);
	scope = g_strdup(self->pending_scope);
	clear_pending(self);
	self->flow_running = TRUE;
	token_request(self, task, form, scope, FALSE);
}

gboolean
confab_mcp_oauth_complete_finish(ConfabMcpOAuth *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/**
 * confab_mcp_oauth_dup_authorization:
 * @url: where the request goes
 *
 * Returns: (transfer full) (nullable): the `Authorization` value for a
 *   request to @url: the token, only for the MCP server's origin
 */
gchar *
confab_mcp_oauth_dup_authorization(ConfabMcpOAuth *self, const gchar *url)
{
	g_return_val_if_fail(CONFAB_IS_MCP_OAUTH(self), NULL);
	if (self->access_token == NULL ||
	    !confab_mcp_oauth_metadata_same_origin(url, self->server_url))
		return NULL;
	return g_strconcat("Bearer ", self->access_token, NULL);
}

/**
 * confab_mcp_oauth_get_version:
 *
 * Returns: when the state last changed (real time, microseconds): what
 *   orders saves that may land out of order
 */
gint64
confab_mcp_oauth_get_version(ConfabMcpOAuth *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_OAUTH(self), 0);
	return self->version;
}

gboolean
confab_mcp_oauth_has_token(ConfabMcpOAuth *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_OAUTH(self), FALSE);
	return self->access_token != NULL;
}

/**
 * confab_mcp_oauth_needs_refresh:
 *
 * Whether the token expires within a minute and can be refreshed.
 */
gboolean
confab_mcp_oauth_needs_refresh(ConfabMcpOAuth *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_OAUTH(self), FALSE);
	return self->refresh_token != NULL && self->server != NULL && self->expires_at > 0 &&
	       g_get_real_time() / G_USEC_PER_SEC + REFRESH_MARGIN_S >= self->expires_at;
}

const gchar *
confab_mcp_oauth_get_authorization_url(ConfabMcpOAuth *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_OAUTH(self), NULL);
	return self->pending_url;
}

const gchar *
confab_mcp_oauth_get_pending_state(ConfabMcpOAuth *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_OAUTH(self), NULL);
	return self->pending_state;
}

/* ---------- persistence ---------- */

static void
append_member(GString *out, const gchar *name, const gchar *value)
{
	if (value == NULL)
		return;
	if (out->len > 1)
		g_string_append_c(out, ',');
	confab_json_append_string(out, name);
	g_string_append_c(out, ':');
	confab_json_append_string(out, value);
}

/**
 * confab_mcp_oauth_save_state:
 *
 * Returns: (transfer full): what to keep of the authorization (the client,
 *   the tokens, the pending authorization), as JSON; it holds secrets:
 *   store it write-only and wipe it
 */
gchar *
confab_mcp_oauth_save_state(ConfabMcpOAuth *self)
{
	GString *out = g_string_new("{");
	g_autofree gchar *expires = g_strdup_printf("%" G_GINT64_FORMAT, self->expires_at);
	g_autofree gchar *version = g_strdup_printf("%" G_GINT64_FORMAT, self->version);

	g_return_val_if_fail(CONFAB_IS_MCP_OAUTH(self), NULL);
	if (self->server != NULL) {
		append_member(out, "issuer", self->server->issuer);
		append_member(out, "authorization_endpoint", self->server->authorization_endpoint);
		append_member(out, "token_endpoint", self->server->token_endpoint);
	}
	append_member(out, "resource", self->resource);
	append_member(out, "client_id", self->client_id);
	append_member(out, "client_secret", self->client_secret);
	append_member(out, "auth_method", self->auth_method);
	append_member(out, "access_token", self->access_token);
	append_member(out, "refresh_token", self->refresh_token);
	append_member(out, "expires_at", expires);
	append_member(out, "scope", self->granted_scope);
	append_member(out, "pending_state", self->pending_state);
	append_member(out, "pending_verifier", self->pending_verifier);
	append_member(out, "pending_url", self->pending_url);
	append_member(out, "pending_scope", self->pending_scope);
	append_member(out, "pending_redirect", self->pending_redirect);
	append_member(out, "version", version);
	g_string_append_c(out, '}');
	return g_string_free(out, FALSE);
}

static void
load_server(ConfabMcpOAuth *self, JsonObject *object)
{
	const gchar *issuer = confab_json_get_string(object, "issuer");
	const gchar *token = confab_json_get_string(object, "token_endpoint");

	if (issuer == NULL || token == NULL || self->server != NULL)
		return;
	self->server = g_new0(ConfabMcpOAuthServer, 1);
	self->server->issuer = g_strdup(issuer);
	self->server->token_endpoint = g_strdup(token);
	self->server->authorization_endpoint =
	    g_strdup(confab_json_get_string(object, "authorization_endpoint"));
}

/**
 * confab_mcp_oauth_load_state:
 *
 * Takes what confab_mcp_oauth_save_state() gave (by this or another
 * instance).
 */
gboolean
confab_mcp_oauth_load_state(ConfabMcpOAuth *self, const gchar *state, GError **error)
{
	g_autoptr(JsonNode) root = NULL;
	JsonObject *object;
	const gchar *expires, *version;

	g_return_val_if_fail(CONFAB_IS_MCP_OAUTH(self), FALSE);
	root = state != NULL ? confab_json_parse(state, strlen(state), JSON_MAX_DEPTH, error)
			     : NULL;
	if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
		if (root != NULL)
			g_set_error(error, CONFAB_ERROR, CONFAB_ERROR_FAILED, "not an object");
		return FALSE;
	}
	object = json_node_get_object(root);
	load_server(self, object);
	set_str(&self->resource, confab_json_get_string(object, "resource"));
	set_str(&self->client_id, confab_json_get_string(object, "client_id"));
	set_str(&self->client_secret, confab_json_get_string(object, "client_secret"));
	set_str(&self->auth_method, confab_json_get_string(object, "auth_method"));
	set_str(&self->access_token, confab_json_get_string(object, "access_token"));
	set_str(&self->refresh_token, confab_json_get_string(object, "refresh_token"));
	set_str(&self->granted_scope, confab_json_get_string(object, "scope"));
	expires = confab_json_get_string(object, "expires_at");
	self->expires_at = expires != NULL ? g_ascii_strtoll(expires, NULL, 10) : 0;
	set_str(&self->pending_state, confab_json_get_string(object, "pending_state"));
	set_str(&self->pending_verifier, confab_json_get_string(object, "pending_verifier"));
	set_str(&self->pending_url, confab_json_get_string(object, "pending_url"));
	set_str(&self->pending_scope, confab_json_get_string(object, "pending_scope"));
	set_str(&self->pending_redirect, confab_json_get_string(object, "pending_redirect"));
	version = confab_json_get_string(object, "version");
	self->version = version != NULL ? g_ascii_strtoll(version, NULL, 10) : 0;
	return TRUE;
}

/* Takes @state only when it is newer than what we have. */
static gboolean
load_newer(ConfabMcpOAuth *self, const gchar *state)
{
	g_autoptr(JsonNode) root = confab_json_parse(state, strlen(state), JSON_MAX_DEPTH, NULL);
	const gchar *version;

	if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root))
		return FALSE;
	version = confab_json_get_string(json_node_get_object(root), "version");
	if (version == NULL || g_ascii_strtoll(version, NULL, 10) <= self->version)
		return FALSE;
	return confab_mcp_oauth_load_state(self, state, NULL);
}

/**
 * confab_mcp_oauth_set_loader:
 * @load: (nullable): reads the kept state again
 *
 * Each challenge first reads the kept state, so that what another instance
 * (or the callback) stored is used: a token other than the refused one is
 * retried at once.
 */
void
confab_mcp_oauth_set_loader(ConfabMcpOAuth *self,
			    ConfabMcpOAuthLoadFunc load,
			    gpointer user_data,
			    GDestroyNotify notify)
{
	g_return_if_fail(CONFAB_IS_MCP_OAUTH(self));
	if (self->load_notify != NULL)
		self->load_notify(self->load_data);
	self->load = load;
	self->load_data = user_data;
	self->load_notify = notify;
}

/* ---------- configuration ---------- */

void
confab_mcp_oauth_set_grant(ConfabMcpOAuth *self, ConfabMcpOAuthGrant grant)
{
	g_return_if_fail(CONFAB_IS_MCP_OAUTH(self));
	self->grant = grant;
}

ConfabMcpOAuthGrant
confab_mcp_oauth_get_grant(ConfabMcpOAuth *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_OAUTH(self), 0);
	return self->grant;
}

/**
 * confab_mcp_oauth_set_client:
 * @client_id: (nullable): a pre-registered client
 * @client_secret: (nullable): its secret
 * @private_key_pem: (nullable): its key, for `private_key_jwt`
 */
void
confab_mcp_oauth_set_client(ConfabMcpOAuth *self,
			    const gchar *client_id,
			    const gchar *client_secret,
			    const gchar *private_key_pem)
{
	g_return_if_fail(CONFAB_IS_MCP_OAUTH(self));
	set_str(&self->config_client_id, client_id);
	set_str(&self->config_client_secret, client_secret);
	set_str(&self->private_key_pem, private_key_pem);
}

void
confab_mcp_oauth_set_scope(ConfabMcpOAuth *self, const gchar *scope)
{
	g_return_if_fail(CONFAB_IS_MCP_OAUTH(self));
	set_str(&self->config_scope, scope != NULL && *scope != '\0' ? scope : NULL);
}

void
confab_mcp_oauth_set_redirect_uri(ConfabMcpOAuth *self, const gchar *redirect_uri)
{
	g_return_if_fail(CONFAB_IS_MCP_OAUTH(self));
	set_str(&self->redirect_uri, redirect_uri);
}

/**
 * confab_mcp_oauth_set_client_metadata_url:
 * @url: (nullable): an https URL where Confab's client ID metadata
 *   document is; used as the client id where the server supports that
 */
void
confab_mcp_oauth_set_client_metadata_url(ConfabMcpOAuth *self, const gchar *url)
{
	g_return_if_fail(CONFAB_IS_MCP_OAUTH(self));
	set_str(&self->client_metadata_url, url);
}

/**
 * confab_mcp_oauth_set_authorize_hint:
 * @hint: (nullable): what a person does to authorize, for the message
 *   (say, "run `confabctl agent authorize AGENT SERVER`")
 */
void
confab_mcp_oauth_set_authorize_hint(ConfabMcpOAuth *self, const gchar *hint)
{
	g_return_if_fail(CONFAB_IS_MCP_OAUTH(self));
	set_str(&self->authorize_hint, hint);
}

static void
confab_mcp_oauth_finalize(GObject *object)
{
	ConfabMcpOAuth *self = CONFAB_MCP_OAUTH(object);

	g_assert(self->waiting->len == 0);
	if (self->load_notify != NULL)
		self->load_notify(self->load_data);
	g_ptr_array_unref(self->waiting);
	clear_tokens(self);
	clear_pending(self);
	wipe(&self->config_client_secret);
	wipe(&self->private_key_pem);
	wipe(&self->client_secret);
	g_free(self->config_client_id);
	g_free(self->config_scope);
	g_free(self->redirect_uri);
	g_free(self->client_metadata_url);
	g_free(self->authorize_hint);
	g_free(self->resource);
	g_strfreev(self->resource_scopes);
	confab_mcp_oauth_metadata_server_free(self->server);
	g_free(self->client_id);
	g_free(self->auth_method);
	g_hash_table_unref(self->asked_scopes);
	g_clear_object(&self->client);
	g_free(self->server_url);
	g_free(self->name);
	G_OBJECT_CLASS(confab_mcp_oauth_parent_class)->finalize(object);
}

static void
confab_mcp_oauth_class_init(ConfabMcpOAuthClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->finalize = confab_mcp_oauth_finalize;
	/**
	 * ConfabMcpOAuth::changed:
	 *
	 * The client, the tokens or the pending authorization changed: the
	 * owner saves confab_mcp_oauth_save_state().
	 */
	signals[SIGNAL_CHANGED] = g_signal_new("changed",
					       G_TYPE_FROM_CLASS(klass),
					       G_SIGNAL_RUN_LAST,
					       0,
					       NULL,
					       NULL,
					       NULL,
					       G_TYPE_NONE,
					       0);
}

static void
confab_mcp_oauth_init(ConfabMcpOAuth *self)
{
	self->waiting = g_ptr_array_new_with_free_func(g_object_unref);
	self->asked_scopes = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

/**
 * confab_mcp_oauth_new:
 * @name: the server's name, for errors
 * @server_url: the MCP endpoint
 *
 * Returns: (transfer full): the authorization of that server, with the
 *   authorization-code grant
 */
ConfabMcpOAuth *
confab_mcp_oauth_new(const gchar *name, const gchar *server_url)
{
	ConfabMcpOAuth *self;

	g_return_val_if_fail(name != NULL && server_url != NULL, NULL);
	self = g_object_new(CONFAB_TYPE_MCP_OAUTH, NULL);
	self->name = g_strdup(name);
	self->server_url = g_strdup(server_url);
	self->client = confab_upstream_client_new("confab/" PACKAGE_VERSION, 4, 30, NULL);
	return self;
}
