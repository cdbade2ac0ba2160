/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabEngine"

#include "config.h"

#include <pwd.h>
#include <string.h>

#include "core/confab-agent-secrets.h"
#include "core/confab-engine.h"
#include "tools/confab-tool-config.h"
#include "util/confab-error.h"

/*
 * The engine is the service behind every door: it holds the store, the
 * providers, the turns in flight, and caches of what every request
 * consults — agents and tokens (by the SHA-256 of their secret). What
 * several daemons share (quota counts, which sessions have a turn running)
 * is the store's alone. Writes go to the store first and reach the caches
 * once committed; the store says when the caches are stale (another daemon
 * changed something), and they are reloaded whole.
 *
 * Serving threads share one engine. The caches are read on every request
 * and written only when an admin changes something or the store says they
 * are stale, so they sit under a GRWLock: readers (a hash lookup and a ref,
 * no I/O) never wait for each other. The turns in flight are counted with
 * atomics (read by D-Bus and metrics without a lock); the set of their
 * cancellables, which only a stop walks, has its own short mutex. ::drained
 * is emitted on the context the engine was made on (the daemon's main
 * context), whichever thread ends the last turn. Providers are per context:
 * each serving thread has its own (their upstream clients keep sockets on
 * that thread's context); the table is filled before the threads start and
 * read-only after.
 */

struct _ConfabEngine {
	GObject parent_instance;
	const ConfabConfig *config;		     /* unowned: the daemon's */
	ConfabStore *store;			     /* owned */
	ConfabIdGenerator *ids;			     /* owned */
	GHashTable *providers;			     /* owned: name -> ConfabProvider */
	ConfabToolbox *toolbox;			     /* owned: the agents' own tool servers */
	ConfabMcpAuthorizations *mcp_authorizations; /* owned: their servers' OAuth */
	ConfabMetrics *metrics;			     /* owned */
	ConfabRouter *router;		  /* owned: routing across targets, their health */
	ConfabSecretStore *secrets;	  /* owned, nullable: confabd --user's keyring */
	ConfabApprovals *approvals;	  /* owned: tool calls waiting for a person */
	ConfabElicitations *elicitations; /* owned: MCP servers' questions to a person */
	ConfabBackground *background;	  /* owned: background responses running here */

	GMainContext *context;	       /* owned: where ::drained is emitted */
	GHashTable *context_providers; /* owned: GMainContext -> (name -> ConfabProvider) */

	GRWLock cache_lock;	 /* agents, tokens, token_index */
	GHashTable *agents;	 /* owned: id -> ConfabAgent (never mutated once here) */
	GHashTable *tokens;	 /* owned: id -> ConfabToken (never mutated once here) */
	GHashTable *token_index; /* owned: guint64 hash prefix -> GPtrArray of ConfabToken */
	guint tokens_generation; /* atomic: bumped, under the lock, when a token changes */
	/* owned: id -> its ConfabStoreLimits (which holds the key), of owners and
	 * of tokens, under cache_lock */
	GHashTable *limits[2];

	GMutex turns_lock;    /* turns */
	GHashTable *turns;    /* owned: GCancellable of each turn in flight */
	gint n_turns;	      /* atomic: g_hash_table_size (turns) */
	guint64 turns_served; /* atomic */
	gint shutting_down;   /* atomic */
};

G_DEFINE_FINAL_TYPE(ConfabEngine, confab_engine, G_TYPE_OBJECT)

static void
confab_engine_dispose(GObject *object);

enum { SIGNAL_DRAINED, N_SIGNALS };

static guint signals[N_SIGNALS];

/* ---------- helpers ---------- */

static guint64 *
uint64_new(guint64 value)
{
	guint64 *p = g_new(guint64, 1);
	*p = value;
	return p;
}

static gchar *
month_of(GDateTime *dt)
{
	return g_date_time_format(dt, "%Y-%m");
}

/**
 * confab_engine_current_month:
 * @self: a #ConfabEngine
 *
 * Returns: (transfer full): this month in UTC, as `YYYY-MM`
 */
gchar *
confab_engine_current_month(ConfabEngine *self)
{
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	return month_of(now);
}

static gint64
seconds_to_month_end(void)
{
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();
	g_autoptr(GDateTime) first =
	    g_date_time_new_utc(g_date_time_get_year(now), g_date_time_get_month(now), 1, 0, 0, 0);
	g_autoptr(GDateTime) next = g_date_time_add_months(first, 1);
	return MAX(g_date_time_difference(next, now) / G_TIME_SPAN_SECOND, 0);
}

static guint64
hash_prefix(const guint8 *digest)
{
	guint64 prefix;
	memcpy(&prefix, digest, sizeof(prefix));
	return prefix;
}

/* Compares two digests without an early exit, so the time taken does not
 * tell how many leading bytes matched. */
static gboolean
digest_equal_ct(const guint8 *a, const guint8 *b, gsize len)
{
	volatile guint8 diff = 0;
	for (gsize i = 0; i < len; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

static void
sha256(const gchar *text, guint8 digest[32])
{
	g_autoptr(GChecksum) checksum = g_checksum_new(G_CHECKSUM_SHA256);
	gsize len = 32;
	g_checksum_update(checksum, (const guchar *)text, strlen(text));
	g_checksum_get_digest(checksum, digest, &len);
	g_assert(len == 32);
}

/* called with the lock held */
static void
token_index_add(ConfabEngine *self, ConfabToken *token)
{
	GBytes *hash = confab_token_get_hash(token);
	guint64 prefix;
	GPtrArray *bucket;

	if (hash == NULL || g_bytes_get_size(hash) != 32)
		return;
	prefix = hash_prefix(g_bytes_get_data(hash, NULL));
	bucket = g_hash_table_lookup(self->token_index, &prefix);
	if (bucket == NULL) {
		bucket = g_ptr_array_new_with_free_func(g_object_unref);
		g_hash_table_insert(self->token_index, uint64_new(prefix), bucket);
	}
	for (guint i = 0; i < bucket->len; i++) {
		ConfabToken *other = g_ptr_array_index(bucket, i);
		if (g_strcmp0(confab_token_get_id(other), confab_token_get_id(token)) == 0) {
			g_ptr_array_index(bucket, i) = g_object_ref(token);
			g_object_unref(other);
			return;
		}
	}
	g_ptr_array_add(bucket, g_object_ref(token));
}

/* called with the lock held */
static void
cache_token(ConfabEngine *self, ConfabToken *token)
{
	/* what a connection remembers of the token it authenticated is no
	 * longer used (confab_engine_authenticate_cached) */
	g_atomic_int_inc(&self->tokens_generation);
	g_hash_table_replace(self->tokens,
			     g_strdup(confab_token_get_id(token)),
			     g_object_ref(token));
	token_index_add(self, token);
}

/* ---------- GObject ---------- */

static void
confab_engine_finalize(GObject *object)
{
	ConfabEngine *self = CONFAB_ENGINE(object);

	g_clear_object(&self->store);
	g_clear_object(&self->ids);
	g_clear_object(&self->mcp_authorizations);
	g_clear_object(&self->toolbox);
	g_clear_object(&self->approvals);
	g_clear_object(&self->elicitations);
	g_clear_object(&self->background);
	g_clear_object(&self->metrics);
	g_clear_object(&self->router);
	g_clear_object(&self->secrets);
	g_clear_pointer(&self->providers, g_hash_table_unref);
	g_clear_pointer(&self->agents, g_hash_table_unref);
	g_clear_pointer(&self->tokens, g_hash_table_unref);
	g_clear_pointer(&self->token_index, g_hash_table_unref);
	g_clear_pointer(&self->limits[0], g_hash_table_unref);
	g_clear_pointer(&self->limits[1], g_hash_table_unref);
	g_clear_pointer(&self->turns, g_hash_table_unref);
	g_clear_pointer(&self->context_providers, g_hash_table_unref);
	g_clear_pointer(&self->context, g_main_context_unref);
	g_rw_lock_clear(&self->cache_lock);
	g_mutex_clear(&self->turns_lock);
	G_OBJECT_CLASS(confab_engine_parent_class)->finalize(object);
}

static void
confab_engine_class_init(ConfabEngineClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->dispose = confab_engine_dispose;
	object_class->finalize = confab_engine_finalize;

	/**
	 * ConfabEngine::drained:
	 *
	 * Emitted during shutdown when the last running turn has ended.
	 */
	signals[SIGNAL_DRAINED] = g_signal_new("drained",
					       G_TYPE_FROM_CLASS(klass),
					       G_SIGNAL_RUN_LAST,
					       0,
					       NULL,
					       NULL,
					       NULL,
					       G_TYPE_NONE,
					       0);
}

static gdouble
active_turns_gauge(gpointer user_data)
{
	return confab_engine_get_active_turns(user_data);
}

static void
confab_engine_init(ConfabEngine *self)
{
	g_rw_lock_init(&self->cache_lock);
	g_mutex_init(&self->turns_lock);
	self->context = g_main_context_ref_thread_default();
	self->context_providers = g_hash_table_new_full(g_direct_hash,
							g_direct_equal,
							(GDestroyNotify)g_main_context_unref,
							(GDestroyNotify)g_hash_table_unref);
	self->ids = confab_id_generator_new();
	self->providers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_object_unref);
	self->agents = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_object_unref);
	self->tokens = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_object_unref);
	for (guint i = 0; i < G_N_ELEMENTS(self->limits); i++)
		self->limits[i] = g_hash_table_new_full(g_str_hash,
							g_str_equal,
							NULL,
							(GDestroyNotify)confab_store_limits_free);
	self->token_index = g_hash_table_new_full(g_int64_hash,
						  g_int64_equal,
						  g_free,
						  (GDestroyNotify)g_ptr_array_unref);
	self->turns = g_hash_table_new_full(g_direct_hash,
					    g_direct_equal,
					    g_object_unref,
					    (GDestroyNotify)g_main_context_unref);
}

static void
confab_engine_dispose(GObject *object)
{
	ConfabEngine *self = CONFAB_ENGINE(object);
	if (self->store != NULL)
		g_signal_handlers_disconnect_by_data(self->store, self);
	G_OBJECT_CLASS(confab_engine_parent_class)->dispose(object);
}

/* ---------- the caches ---------- */

static GHashTable *
agent_table_new(void)
{
	return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_object_unref);
}

static void
set_agents(ConfabEngine *self, GPtrArray *agents)
{
	g_autoptr(GHashTable) table = agent_table_new();
	g_autoptr(GRWLockWriterLocker) locker = NULL;

	for (guint i = 0; i < agents->len; i++) {
		ConfabAgent *agent = g_ptr_array_index(agents, i);
		g_hash_table_insert(table,
				    g_strdup(confab_agent_get_id(agent)),
				    g_object_ref(agent));
	}
	locker = g_rw_lock_writer_locker_new(&self->cache_lock);
	g_clear_pointer(&self->agents, g_hash_table_unref);
	self->agents = g_steal_pointer(&table);
}

static void
set_tokens(ConfabEngine *self, GPtrArray *tokens)
{
	g_autoptr(GRWLockWriterLocker) locker = g_rw_lock_writer_locker_new(&self->cache_lock);

	g_atomic_int_inc(&self->tokens_generation);
	g_hash_table_remove_all(self->tokens);
	g_hash_table_remove_all(self->token_index);
	for (guint i = 0; i < tokens->len; i++)
		cache_token(self, g_ptr_array_index(tokens, i));
}

/* the table of a kind of limits' ("owner" or "token") */
static GHashTable *
limits_of(ConfabEngine *self, const gchar *kind)
{
	return self->limits[g_str_equal(kind, "token") ? 1 : 0];
}

/* An owner's or a token's own limits, under cache_lock; none when no
 * limits are set at all, without a lookup (a turn's admission asks). */
static ConfabStoreLimits *
lookup_limits(ConfabEngine *self, guint kind, const gchar *id)
{
	GHashTable *table = self->limits[kind];

	if (id == NULL || g_hash_table_size(table) == 0)
		return NULL;
	return g_hash_table_lookup(table, id);
}

static void
set_limits(ConfabEngine *self, GPtrArray *limits)
{
	g_autoptr(GRWLockWriterLocker) locker = g_rw_lock_writer_locker_new(&self->cache_lock);

	g_hash_table_remove_all(self->limits[0]);
	g_hash_table_remove_all(self->limits[1]);
	for (guint i = 0; i < limits->len; i++) {
		ConfabStoreLimits *one = g_steal_pointer(&g_ptr_array_index(limits, i));
		g_hash_table_replace(limits_of(self, one->kind), one->id, one);
	}
}

typedef struct {
	gboolean agents;
	gboolean tokens;
	guint pending;
	GError *error;
} Reload;

static void
reload_free(Reload *reload)
{
	g_clear_error(&reload->error);
	g_free(reload);
}

static void
reload_step_done(GTask *task, GError *error)
{
	Reload *reload = g_task_get_task_data(task);

	if (error != NULL && reload->error == NULL)
		reload->error = error;
	else
		g_clear_error(&error);
	if (--reload->pending > 0)
		return;
	if (reload->error != NULL)
		g_task_return_error(task, g_steal_pointer(&reload->error));
	else
		g_task_return_boolean(task, TRUE);
}

static void
agents_hydrated_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabEngine *self = g_task_get_source_object(task);
	GError *error = NULL;
	g_autoptr(GPtrArray) agents = confab_agent_secrets_hydrate_finish(result, &error);

	if (agents != NULL)
		set_agents(self, agents);
	reload_step_done(task, error);
}

static void
agents_loaded_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabEngine *self = g_task_get_source_object(task);
	GError *error = NULL;
	g_autoptr(GPtrArray) agents =
	    confab_store_load_agents_finish(CONFAB_STORE(source), result, &error);

	if (agents == NULL) {
		reload_step_done(task, error);
		return;
	}
	/* their secrets from the keyring (confabd --user), before they serve */
	confab_agent_secrets_hydrate_async(self->secrets,
					   self->store,
					   agents,
					   NULL,
					   agents_hydrated_cb,
					   g_steal_pointer(&task));
}

static void
tokens_loaded_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabEngine *self = g_task_get_source_object(task);
	GError *error = NULL;
	g_autoptr(GPtrArray) tokens =
	    confab_store_load_tokens_finish(CONFAB_STORE(source), result, &error);

	if (tokens != NULL)
		set_tokens(self, tokens);
	reload_step_done(task, error);
}

static void
limits_loaded_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabEngine *self = g_task_get_source_object(task);
	GError *error = NULL;
	g_autoptr(GPtrArray) limits =
	    confab_store_load_limits_finish(CONFAB_STORE(source), result, &error);

	if (limits != NULL)
		set_limits(self, limits);
	reload_step_done(task, error);
}

static void
reload_async(ConfabEngine *self,
	     gboolean agents,
	     gboolean tokens,
	     gboolean limits,
	     GCancellable *cancellable,
	     GAsyncReadyCallback callback,
	     gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	Reload *reload = g_new0(Reload, 1);

	g_task_set_task_data(task, reload, (GDestroyNotify)reload_free);
	reload->pending = (agents ? 1 : 0) + (tokens ? 1 : 0) + (limits ? 1 : 0);
	if (reload->pending == 0) {
		g_task_return_boolean(task, TRUE);
		return;
	}
	if (agents)
		confab_store_load_agents_async(self->store,
					       cancellable,
					       agents_loaded_cb,
					       g_object_ref(task));
	if (tokens)
		confab_store_load_tokens_async(self->store,
					       cancellable,
					       tokens_loaded_cb,
					       g_object_ref(task));
	if (limits)
		confab_store_load_limits_async(self->store,
					       cancellable,
					       limits_loaded_cb,
					       g_object_ref(task));
}

static void
reloaded_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	if (!g_task_propagate_boolean(G_TASK(result), &error))
		g_warning("reloading what the store changed: %s", error->message);
}

static void
on_store_changed(ConfabStore *store, gint change, gpointer user_data)
{
	ConfabEngine *self = user_data;
	gboolean all = change == CONFAB_STORE_CHANGE_ALL;

	/* quotas are the store's own: nothing cached here */
	reload_async(self,
		     all || change == CONFAB_STORE_CHANGE_AGENTS,
		     all || change == CONFAB_STORE_CHANGE_TOKENS,
		     all || change == CONFAB_STORE_CHANGE_LIMITS,
		     NULL,
		     reloaded_cb,
		     NULL);
}

static ConfabAgent *
lookup_agent(const gchar *agent_id, gpointer user_data)
{
	return confab_engine_lookup_agent(user_data, agent_id);
}

/* Where the remote MCP servers' OAuth state is kept, and where people come
 * back to: `[http] public_url`, else the listen address. */
static ConfabMcpAuthorizations *
mcp_authorizations_new(ConfabEngine *self)
{
	const ConfabConfig *config = self->config;
	g_autofree gchar *public_url =
	    confab_mcp_authorizations_public_url(config->http_public_url, config->listen);

	if (!g_str_has_prefix(public_url, "http://") && !g_str_has_prefix(public_url, "https://"))
		g_warning("[http] public_url=%s is not an http:// or https:// URL", public_url);
	return confab_mcp_authorizations_new(self->store,
					     self->toolbox,
					     public_url,
					     lookup_agent,
					     self);
}

/**
 * confab_engine_new:
 * @config: the daemon's settings; must outlive the engine
 * @store: the store
 *
 * Returns: (transfer full): a new engine, its caches empty until
 *   confab_engine_load_async() completes
 */
ConfabEngine *
confab_engine_new(const ConfabConfig *config, ConfabStore *store)
{
	ConfabEngine *self;

	g_return_val_if_fail(config != NULL, NULL);
	g_return_val_if_fail(CONFAB_IS_STORE(store), NULL);

	self = g_object_new(CONFAB_TYPE_ENGINE, NULL);
	self->config = config;
	self->store = g_object_ref(store);
	self->toolbox = confab_toolbox_new(config->state_dir, config->tool_max_output_bytes);
	self->mcp_authorizations = mcp_authorizations_new(self);
	self->metrics = confab_metrics_new();
	confab_metrics_add_gauge(self->metrics,
				 "confab_active_turns",
				 "Chat turns running now",
				 active_turns_gauge,
				 self);
	self->approvals =
	    confab_approvals_new(store, self->ids, self->metrics, config->tool_approval_timeout);
	self->elicitations =
	    confab_elicitations_new(store, self->ids, config->tool_approval_timeout);
	self->router = confab_router_new(self->metrics, config->upstream_health_skip_ms);
	self->background = confab_background_new(store, config);
	g_signal_connect(store, "changed", G_CALLBACK(on_store_changed), self);
	return self;
}

/**
 * confab_engine_get_background:
 *
 * Returns: (transfer none): the background responses running here
 */
ConfabBackground *
confab_engine_get_background(ConfabEngine *self)
{
	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	return self->background;
}

/**
 * confab_engine_get_approvals:
 *
 * Returns: (transfer none): the tool calls waiting for a person's decision
 */
ConfabApprovals *
confab_engine_get_approvals(ConfabEngine *self)
{
	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	return self->approvals;
}

/**
 * confab_engine_get_elicitations:
 *
 * Returns: (transfer none): the MCP servers' questions waiting for a person
 */
ConfabElicitations *
confab_engine_get_elicitations(ConfabEngine *self)
{
	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	return self->elicitations;
}

/**
 * confab_engine_load_async:
 * @self: a #ConfabEngine
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once agents and tokens are loaded from the store
 * @user_data: data for @callback
 */
void
confab_engine_load_async(ConfabEngine *self,
			 GCancellable *cancellable,
			 GAsyncReadyCallback callback,
			 gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_ENGINE(self));
	reload_async(self, TRUE, TRUE, TRUE, cancellable, callback, user_data);
}

gboolean
confab_engine_load_finish(ConfabEngine *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

const ConfabConfig *
confab_engine_get_config(ConfabEngine *self)
{
	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	return self->config;
}

/**
 * confab_engine_get_store:
 *
 * Returns: (transfer none): the store
 */
ConfabStore *
confab_engine_get_store(ConfabEngine *self)
{
	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	return self->store;
}

/**
 * confab_engine_get_id_generator:
 *
 * Returns: (transfer none): the daemon's id generator
 */
ConfabIdGenerator *
confab_engine_get_id_generator(ConfabEngine *self)
{
	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	return self->ids;
}

/**
 * confab_engine_get_metrics:
 *
 * Returns: (transfer none): what the daemon counts
 */
ConfabMetrics *
confab_engine_get_metrics(ConfabEngine *self)
{
	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	return self->metrics;
}

/**
 * confab_engine_get_router:
 *
 * Returns: (transfer none): the router every model call goes through, and
 *   the health of every agent's targets on this instance
 */
ConfabRouter *
confab_engine_get_router(ConfabEngine *self)
{
	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	return self->router;
}

/**
 * confab_engine_get_mcp_authorizations:
 *
 * Returns: (transfer none): the OAuth of the agents' remote MCP servers
 */
ConfabMcpAuthorizations *
confab_engine_get_mcp_authorizations(ConfabEngine *self)
{
	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	return self->mcp_authorizations;
}

/**
 * confab_engine_get_toolbox:
 *
 * Returns: (transfer none): the agents' own tool servers
 */
ConfabToolbox *
confab_engine_get_toolbox(ConfabEngine *self)
{
	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	return self->toolbox;
}

void
confab_engine_add_provider(ConfabEngine *self, ConfabProvider *provider)
{
	g_return_if_fail(CONFAB_IS_ENGINE(self));
	g_return_if_fail(CONFAB_IS_PROVIDER(provider));
	g_hash_table_replace(self->providers,
			     g_strdup(confab_provider_get_name(provider)),
			     g_object_ref(provider));
}

/**
 * confab_engine_set_secret_store:
 * @self: a #ConfabEngine, not loaded yet
 * @secrets: (nullable): where agents' secrets are kept rather than in the
 *   store (confabd --user)
 */
void
confab_engine_set_secret_store(ConfabEngine *self, ConfabSecretStore *secrets)
{
	g_return_if_fail(CONFAB_IS_ENGINE(self));
	g_set_object(&self->secrets, secrets);
}

/**
 * confab_engine_get_provider:
 *
 * Returns: (transfer none) (nullable): the provider called @name
 */
ConfabProvider *
confab_engine_get_provider(ConfabEngine *self, const gchar *name)
{
	GMainContext *context = g_main_context_get_thread_default();
	GHashTable *providers = NULL;

	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	if (name == NULL)
		return NULL;
	if (context != NULL)
		providers = g_hash_table_lookup(self->context_providers, context);
	return g_hash_table_lookup(providers != NULL ? providers : self->providers, name);
}

/**
 * confab_engine_add_context_provider:
 * @self: a #ConfabEngine
 * @context: a serving thread's context
 * @provider: the provider that thread's turns use
 *
 * Gives the turns that run with @context as their thread-default context
 * their own @provider, in place of the one added with
 * confab_engine_add_provider() under the same name. Only before the
 * serving threads start: the table is read without a lock.
 */
void
confab_engine_add_context_provider(ConfabEngine *self,
				   GMainContext *context,
				   ConfabProvider *provider)
{
	GHashTable *providers;

	g_return_if_fail(CONFAB_IS_ENGINE(self));
	g_return_if_fail(context != NULL);
	g_return_if_fail(CONFAB_IS_PROVIDER(provider));
	providers = g_hash_table_lookup(self->context_providers, context);
	if (providers == NULL) {
		providers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_object_unref);
		g_hash_table_insert(self->context_providers,
				    g_main_context_ref(context),
				    providers);
	}
	g_hash_table_replace(providers,
			     g_strdup(confab_provider_get_name(provider)),
			     g_object_ref(provider));
}

/* ---------- authentication ---------- */

static gboolean
token_has_scope(ConfabToken *token, const gchar *const *accepted)
{
	const gchar *const *scopes = confab_token_get_scopes(token);
	for (guint i = 0; scopes != NULL && accepted[i] != NULL; i++)
		if (g_strv_contains(scopes, accepted[i]))
			return TRUE;
	return FALSE;
}

/* Whether @token may be used now: not revoked, not expired, with one of
 * @scopes. */
static gboolean
token_admits(ConfabToken *token, const gchar *const *scopes, GError **error)
{
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;

	if (confab_token_get_revoked_at(token) != 0 ||
	    (confab_token_get_expires_at(token) != 0 &&
	     confab_token_get_expires_at(token) <= now)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_API_KEY,
				 NULL,
				 "Incorrect API token provided, or it was revoked or has "
				 "expired");
		return FALSE;
	}
	if (!token_has_scope(token, scopes)) {
		g_autofree gchar *accepted = g_strjoinv(", ", (gchar **)scopes);
		confab_error_set_printf(error,
					CONFAB_ERROR_INSUFFICIENT_SCOPE,
					NULL,
					"This API token has none of the scopes this endpoint "
					"accepts (%s)",
					accepted);
		return FALSE;
	}
	return TRUE;
}

static ConfabPrincipal *
principal_of(ConfabToken *token)
{
	ConfabPrincipal *principal =
	    confab_principal_new(confab_token_get_owner(token), CONFAB_SESSION_SOURCE_API);

	principal->token_id = g_strdup(confab_token_get_id(token));
	principal->agent_id = g_strdup(confab_token_get_agent_id(token));
	return principal;
}

/* The token whose secret @authorization carries, checked; its generation
 * of the token cache in @generation, read before the lookup. */
static ConfabToken *
authenticate_token(ConfabEngine *self,
		   const gchar *authorization,
		   const gchar *const *scopes,
		   guint *generation,
		   GError **error)
{
	g_autoptr(ConfabToken) token = NULL;
	const gchar *secret;
	guint8 digest[32];
	guint64 prefix;
	GPtrArray *bucket;

	if (authorization == NULL || *authorization == '\0') {
		confab_error_set(error,
				 CONFAB_ERROR_MISSING_API_KEY,
				 NULL,
				 "You didn't provide an API key. Send it in the "
				 "Authorization header: 'Authorization: Bearer nca_…'");
		return NULL;
	}
	if (g_ascii_strncasecmp(authorization, "Bearer ", 7) != 0) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_API_KEY,
				 NULL,
				 "The Authorization header must be 'Bearer <API token>'");
		return NULL;
	}
	secret = authorization + 7;
	while (*secret == ' ')
		secret++;
	if (!g_str_has_prefix(secret, CONFAB_PREFIX_SECRET)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_API_KEY,
				 NULL,
				 "Incorrect API token provided: Confab tokens start with "
				 "'nca_'");
		return NULL;
	}

	sha256(secret, digest);
	prefix = hash_prefix(digest);
	{
		g_autoptr(GRWLockReaderLocker) locker =
		    g_rw_lock_reader_locker_new(&self->cache_lock);
		*generation = (guint)g_atomic_int_get(&self->tokens_generation);
		bucket = g_hash_table_lookup(self->token_index, &prefix);
		for (guint i = 0; bucket != NULL && i < bucket->len; i++) {
			ConfabToken *candidate = g_ptr_array_index(bucket, i);
			GBytes *hash = confab_token_get_hash(candidate);
			if (digest_equal_ct(g_bytes_get_data(hash, NULL), digest, 32))
				token = g_object_ref(candidate);
		}
	}
	memset(digest, 0, sizeof(digest));

	if (token == NULL) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_API_KEY,
				 NULL,
				 "Incorrect API token provided, or it was revoked or has "
				 "expired");
		return NULL;
	}
	if (!token_admits(token, scopes, error))
		return NULL;
	return g_steal_pointer(&token);
}

/**
 * confab_engine_authenticate:
 * @self: a #ConfabEngine
 * @authorization: (nullable): the Authorization header
 * @scopes: the scopes the endpoint accepts, any one of them will do
 * @error: return location for a #GError
 *
 * Finds the token by the SHA-256 of the bearer secret, compares the whole
 * digest in constant time, and checks that it is live and carries one of
 * @scopes (%CONFAB_SCOPES_API for the v1 API).
 *
 * Returns: (transfer full): the principal
 */
ConfabPrincipal *
confab_engine_authenticate(ConfabEngine *self,
			   const gchar *authorization,
			   const gchar *const *scopes,
			   GError **error)
{
	g_autoptr(ConfabToken) token = NULL;
	guint generation;

	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);

	token = authenticate_token(self, authorization, scopes, &generation, error);
	return token != NULL ? principal_of(token) : NULL;
}

/*
 * What one connection remembers of the last token it authenticated: the
 * header it came in, and the token as the cache held it then. The next
 * request on the connection with the very same header skips the SHA-256
 * and the lookup while the token cache has not changed since (its
 * generation is bumped by every change: a revocation, a new token, a
 * reload because the store said tokens changed, which is how other
 * instances on one PostgreSQL database are heard). Expiry and scopes are
 * checked again each time. A connection lives on one thread, so nothing
 * here is shared.
 */
struct _ConfabEngineAuthCache {
	gchar *authorization; /* owned, wiped when freed */
	gsize len;
	ConfabToken *token; /* owned, nullable */
	guint generation;
};

/**
 * confab_engine_auth_cache_new:
 *
 * Returns: (transfer full): an empty cache, for one connection
 */
ConfabEngineAuthCache *
confab_engine_auth_cache_new(void)
{
	return g_new0(ConfabEngineAuthCache, 1);
}

static void
auth_cache_clear(ConfabEngineAuthCache *cache)
{
	if (cache->authorization != NULL) {
		memset(cache->authorization, 0, cache->len);
		g_clear_pointer(&cache->authorization, g_free);
	}
	cache->len = 0;
	g_clear_object(&cache->token);
}

/**
 * confab_engine_auth_cache_free:
 * @cache: (transfer full) (nullable): a cache
 */
void
confab_engine_auth_cache_free(ConfabEngineAuthCache *cache)
{
	if (cache == NULL)
		return;
	auth_cache_clear(cache);
	g_free(cache);
}

/* constant time in the length of @b, which is as long as @a */
static gboolean
bytes_equal_ct(const gchar *a, const gchar *b, gsize len)
{
	guint8 diff = 0;

	for (gsize i = 0; i < len; i++)
		diff |= (guint8)(a[i] ^ b[i]);
	return diff == 0;
}

/**
 * confab_engine_authenticate_cached:
 * @self: a #ConfabEngine
 * @cache: the connection's #ConfabEngineAuthCache
 * @authorization: (nullable): the Authorization header
 * @scopes: the scopes the endpoint accepts, any one of them will do
 * @error: return location for a #GError
 *
 * As confab_engine_authenticate(), with what @cache remembers of the
 * connection's last token: the same header as last time, while no token
 * changed in the cache, is the same token (whose expiry and scopes are
 * checked again).
 *
 * Returns: (transfer full): the principal
 */
ConfabPrincipal *
confab_engine_authenticate_cached(ConfabEngine *self,
				  ConfabEngineAuthCache *cache,
				  const gchar *authorization,
				  const gchar *const *scopes,
				  GError **error)
{
	g_autoptr(ConfabToken) token = NULL;
	guint generation;
	gsize len;

	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	g_return_val_if_fail(cache != NULL, NULL);

	len = authorization != NULL ? strlen(authorization) : 0;
	if (cache->token != NULL && len > 0 && len == cache->len &&
	    cache->generation == (guint)g_atomic_int_get(&self->tokens_generation) &&
	    bytes_equal_ct(authorization, cache->authorization, len)) {
		if (!token_admits(cache->token, scopes, error))
			return NULL;
		return principal_of(cache->token);
	}
	auth_cache_clear(cache);
	token = authenticate_token(self, authorization, scopes, &generation, error);
	if (token == NULL)
		return NULL;
	cache->authorization = g_strndup(authorization, len);
	cache->len = len;
	cache->token = g_object_ref(token);
	cache->generation = generation;
	return principal_of(token);
}

/* ---------- agents ---------- */

/**
 * confab_engine_lookup_agent:
 * @self: a #ConfabEngine
 * @agent_id: (nullable): an agent id
 *
 * Returns: (transfer full) (nullable): the agent, if it exists
 */
ConfabAgent *
confab_engine_lookup_agent(ConfabEngine *self, const gchar *agent_id)
{
	g_autoptr(GRWLockReaderLocker) locker = NULL;
	ConfabAgent *agent;

	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	if (agent_id == NULL)
		return NULL;
	locker = g_rw_lock_reader_locker_new(&self->cache_lock);
	agent = g_hash_table_lookup(self->agents, agent_id);
	return agent != NULL ? g_object_ref(agent) : NULL;
}

static gint
compare_by_id(gconstpointer a, gconstpointer b, const gchar *(*get_id)(gpointer))
{
	return g_strcmp0(get_id(*(gpointer *)a), get_id(*(gpointer *)b));
}

static gint
compare_agents(gconstpointer a, gconstpointer b)
{
	return compare_by_id(a, b, (const gchar *(*)(gpointer))confab_agent_get_id);
}

static gint
compare_tokens(gconstpointer a, gconstpointer b)
{
	return compare_by_id(a, b, (const gchar *(*)(gpointer))confab_token_get_id);
}

/**
 * confab_engine_list_agents:
 *
 * Returns: (transfer full) (element-type ConfabAgent): every agent, by id
 */
GPtrArray *
confab_engine_list_agents(ConfabEngine *self)
{
	g_autoptr(GRWLockReaderLocker) locker = g_rw_lock_reader_locker_new(&self->cache_lock);
	GPtrArray *agents = g_ptr_array_new_with_free_func(g_object_unref);
	GHashTableIter iter;
	gpointer value;

	g_hash_table_iter_init(&iter, self->agents);
	while (g_hash_table_iter_next(&iter, NULL, &value))
		g_ptr_array_add(agents, g_object_ref(value));
	g_ptr_array_sort(agents, compare_agents);
	return agents;
}

static void
save_agent_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabEngine *self = g_task_get_source_object(task);
	ConfabAgent *agent = g_task_get_task_data(task);
	g_autoptr(GError) error = NULL;

	if (!confab_store_save_agent_finish(CONFAB_STORE(source), result, &error)) {
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	{
		g_autoptr(GRWLockWriterLocker) locker =
		    g_rw_lock_writer_locker_new(&self->cache_lock);
		g_hash_table_replace(self->agents,
				     g_strdup(confab_agent_get_id(agent)),
				     g_object_ref(agent));
	}
	/* its tool servers start again, with what it says now */
	confab_toolbox_forget_agent(self->toolbox, confab_agent_get_id(agent));
	g_task_return_boolean(task, TRUE);
}

static void
secrets_kept_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabEngine *self = g_task_get_source_object(task);
	ConfabAgent *agent = g_task_get_task_data(task);
	GCancellable *cancellable = g_task_get_cancellable(task);
	g_autoptr(ConfabAgent) stored = NULL;

	/* without the keyring they stay in the database (it said so once) */
	if (confab_agent_secrets_keep_finish(result, NULL))
		stored = confab_agent_secrets_strip(agent);
	else
		stored = g_object_ref(agent);
	confab_store_save_agent_async(self->store,
				      stored,
				      cancellable,
				      save_agent_cb,
				      g_steal_pointer(&task));
}

/* Each target beyond the first, as the provider sees it: its errors name
 * the target (`upstreams[2].base_url`). */
static gboolean
check_targets(ConfabProvider *provider, ConfabAgent *agent, GError **error)
{
	for (guint i = 1; i < confab_agent_get_n_targets(agent); i++) {
		g_autoptr(ConfabAgent) as_target = confab_agent_for_target(agent, i);
		g_autoptr(GError) local = NULL;
		g_autofree gchar *param = NULL;

		if (confab_provider_check_agent(provider, as_target, &local))
			continue;
		param = g_strdup_printf("upstreams[%u].%s",
					i,
					confab_error_get_param(local) ?: "base_url");
		confab_error_set_printf(error,
					local->code,
					param,
					"upstreams[%u] (%s): %s",
					i,
					confab_agent_get_target_label(agent, i),
					local->message);
		return FALSE;
	}
	return TRUE;
}

/* With the keyring, an agent's key stays out of the database; the keyring
 * holds one key per agent, target 0's: the others must come from key files. */
static gboolean
check_target_keys_for_keyring(ConfabAgent *agent, GError **error)
{
	g_autoptr(GPtrArray) targets = confab_agent_dup_targets(agent);

	for (guint i = 1; i < targets->len; i++) {
		ConfabAgentTarget *target = g_ptr_array_index(targets, i);
		g_autofree gchar *param = NULL;

		if (target->api_key == NULL)
			continue;
		param = g_strdup_printf("upstreams[%u].api_key", i);
		confab_error_set_printf(
		    error,
		    CONFAB_ERROR_INVALID_VALUE,
		    param,
		    "upstreams[%u].api_key: with the keyring, only the first target's "
		    "key is kept there; give this one as api_key_file",
		    i);
		return FALSE;
	}
	return TRUE;
}

/* The agent's own tools: servers in the mcpServers shape, a sane max_steps. */
static gboolean
check_tools(ConfabAgent *agent, GError **error)
{
	const gchar *servers = confab_agent_get_mcp_servers(agent);
	guint max_steps = confab_agent_get_max_steps(agent);

	if (max_steps < 1 || max_steps > CONFAB_AGENT_MAX_STEPS_LIMIT) {
		confab_error_set_printf(error,
					CONFAB_ERROR_INVALID_VALUE,
					"max_steps",
					"max_steps must be from 1 to %u",
					CONFAB_AGENT_MAX_STEPS_LIMIT);
		return FALSE;
	}
	if (servers != NULL) {
		g_autoptr(ConfabToolConfig) config = confab_tool_config_parse(servers, error);
		if (config == NULL)
			return FALSE;
	}
	return TRUE;
}

/**
 * confab_engine_save_agent_async:
 * @self: a #ConfabEngine
 * @agent: (transfer none): a new agent, or a changed copy of one; the
 *   engine keeps it, so the caller must not change it afterwards
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once it is stored
 * @user_data: data for @callback
 *
 * Checks the agent's provider settings, stores it, then serves it.
 */
void
confab_engine_save_agent_async(ConfabEngine *self,
			       ConfabAgent *agent,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	g_autoptr(GError) error = NULL;
	ConfabProvider *provider;

	g_task_set_source_tag(task, confab_engine_save_agent_async);
	g_task_set_task_data(task, g_object_ref(agent), g_object_unref);
	if (confab_agent_get_name(agent) == NULL || *confab_agent_get_name(agent) == '\0') {
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "name",
				 "An agent needs a name");
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	provider = confab_engine_get_provider(self, confab_agent_get_provider(agent));
	if (provider == NULL) {
		g_autoptr(GList) names = g_hash_table_get_keys(self->providers);
		g_autoptr(GString) known = g_string_new(NULL);
		names = g_list_sort(names, (GCompareFunc)g_strcmp0);
		for (GList *l = names; l != NULL; l = l->next)
			g_string_append_printf(known,
					       "%s%s",
					       known->len ? ", " : "",
					       (gchar *)l->data);
		confab_error_set_printf(&error,
					CONFAB_ERROR_INVALID_VALUE,
					"provider",
					"Unknown provider '%s' (known: %s)",
					confab_agent_get_provider(agent) ?: "",
					known->str);
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	if (!confab_provider_check_agent(provider, agent, &error) ||
	    !check_targets(provider, agent, &error) || !check_tools(agent, &error)) {
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	if (self->secrets != NULL && confab_secret_store_is_available(self->secrets)) {
		if (!check_target_keys_for_keyring(agent, &error)) {
			g_task_return_error(task, g_steal_pointer(&error));
			return;
		}
		/* the keyring first; the database keeps the agent without them */
		confab_agent_secrets_keep_async(self->secrets,
						agent,
						cancellable,
						secrets_kept_cb,
						g_steal_pointer(&task));
		return;
	}
	confab_store_save_agent_async(self->store,
				      agent,
				      cancellable,
				      save_agent_cb,
				      g_steal_pointer(&task));
}

gboolean
confab_engine_save_agent_finish(ConfabEngine *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

static void
delete_agent_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabEngine *self = g_task_get_source_object(task);
	const gchar *agent_id = g_task_get_task_data(task);
	g_autoptr(GError) error = NULL;

	if (!confab_store_delete_agent_finish(CONFAB_STORE(source), result, &error)) {
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	{
		g_autoptr(GRWLockWriterLocker) locker =
		    g_rw_lock_writer_locker_new(&self->cache_lock);
		g_hash_table_remove(self->agents, agent_id);
	}
	confab_agent_secrets_forget(self->secrets, agent_id);
	confab_toolbox_forget_agent(self->toolbox, agent_id);
	g_task_return_boolean(task, TRUE);
}

/**
 * confab_engine_delete_agent_async:
 *
 * Deletes an agent: it can no longer be talked to; its sessions stay.
 */
void
confab_engine_delete_agent_async(ConfabEngine *self,
				 const gchar *agent_id,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	g_autoptr(ConfabAgent) agent = confab_engine_lookup_agent(self, agent_id);

	g_task_set_source_tag(task, confab_engine_delete_agent_async);
	g_task_set_task_data(task, g_strdup(agent_id), g_free);
	if (agent == NULL) {
		g_task_return_new_error(task,
					CONFAB_ERROR,
					CONFAB_ERROR_AGENT_NOT_FOUND,
					"No agent '%s'",
					agent_id);
		return;
	}
	confab_store_delete_agent_async(self->store,
					agent_id,
					g_get_real_time() / G_USEC_PER_SEC,
					cancellable,
					delete_agent_cb,
					g_steal_pointer(&task));
}

gboolean
confab_engine_delete_agent_finish(ConfabEngine *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/* ---------- tokens ---------- */

/**
 * confab_engine_lookup_token:
 *
 * Returns: (transfer full) (nullable): the token with id @token_id
 */
ConfabToken *
confab_engine_lookup_token(ConfabEngine *self, const gchar *token_id)
{
	g_autoptr(GRWLockReaderLocker) locker = NULL;
	ConfabToken *token;

	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	if (token_id == NULL)
		return NULL;
	locker = g_rw_lock_reader_locker_new(&self->cache_lock);
	token = g_hash_table_lookup(self->tokens, token_id);
	return token != NULL ? g_object_ref(token) : NULL;
}

/**
 * confab_engine_list_tokens:
 * @self: a #ConfabEngine
 * @owner: (nullable): only this owner's tokens
 *
 * Returns: (transfer full) (element-type ConfabToken): the tokens, by id
 */
GPtrArray *
confab_engine_list_tokens(ConfabEngine *self, const gchar *owner)
{
	g_autoptr(GRWLockReaderLocker) locker = g_rw_lock_reader_locker_new(&self->cache_lock);
	GPtrArray *tokens = g_ptr_array_new_with_free_func(g_object_unref);
	GHashTableIter iter;
	gpointer value;

	g_hash_table_iter_init(&iter, self->tokens);
	while (g_hash_table_iter_next(&iter, NULL, &value)) {
		if (owner != NULL && g_strcmp0(confab_token_get_owner(value), owner) != 0)
			continue;
		g_ptr_array_add(tokens, g_object_ref(value));
	}
	g_ptr_array_sort(tokens, compare_tokens);
	return tokens;
}

typedef struct {
	ConfabToken *token;
	gchar *secret;
} CreateTokenData;

static void
create_token_data_free(CreateTokenData *data)
{
	g_clear_object(&data->token);
	if (data->secret != NULL) {
		memset(data->secret, 0, strlen(data->secret));
		g_free(data->secret);
	}
	g_free(data);
}

static void
save_token_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabEngine *self = g_task_get_source_object(task);
	ConfabToken *token = g_task_get_task_data(task);
	g_autoptr(GError) error = NULL;

	if (!confab_store_save_token_finish(CONFAB_STORE(source), result, &error)) {
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	{
		g_autoptr(GRWLockWriterLocker) locker =
		    g_rw_lock_writer_locker_new(&self->cache_lock);
		cache_token(self, token);
	}
	g_task_return_boolean(task, TRUE);
}

static void
create_token_saved_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	CreateTokenData *data = g_task_get_task_data(task);
	g_autoptr(GError) error = NULL;

	if (!g_task_propagate_boolean(G_TASK(result), &error)) {
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	g_task_return_boolean(task, TRUE);
	(void)data;
}

static gboolean
check_scope_name(const gchar *scope)
{
	if (scope == NULL || *scope == '\0' || strlen(scope) > 128)
		return FALSE;
	for (const gchar *p = scope; *p != '\0'; p++) {
		if (!g_ascii_isgraph(*p))
			return FALSE;
	}
	return TRUE;
}

static void
save_token_internal(ConfabEngine *self,
		    ConfabToken *token,
		    GCancellable *cancellable,
		    GAsyncReadyCallback callback,
		    gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_task_data(task, g_object_ref(token), g_object_unref);
	confab_store_save_token_async(self->store, token, cancellable, save_token_cb, task);
}

/**
 * confab_engine_create_token_async:
 * @self: a #ConfabEngine
 * @owner: who the token acts for
 * @name: (nullable): a label
 * @scopes: the scopes, at least one
 * @agent_id: (nullable): bind the token to this agent
 * @expires_at: Unix seconds, or 0 for never
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once the token is stored
 * @user_data: data for @callback
 *
 * Mints a token. Its secret exists only in memory until it is handed to
 * the caller once; the store keeps its SHA-256.
 */
void
confab_engine_create_token_async(ConfabEngine *self,
				 const gchar *owner,
				 const gchar *name,
				 const gchar *const *scopes,
				 const gchar *agent_id,
				 gint64 expires_at,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	CreateTokenData *data = g_new0(CreateTokenData, 1);
	g_autoptr(GError) error = NULL;
	g_autoptr(GBytes) hash = NULL;
	g_autofree gchar *id = NULL;
	guint8 digest[32];
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;

	g_task_set_source_tag(task, confab_engine_create_token_async);
	g_task_set_task_data(task, data, (GDestroyNotify)create_token_data_free);

	if (owner == NULL || *owner == '\0' || strlen(owner) > 256) {
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "owner",
				 "A token needs an owner (a user name)");
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	if (scopes == NULL || scopes[0] == NULL) {
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "scopes",
				 "A token needs at least one scope");
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	for (guint i = 0; scopes[i] != NULL; i++) {
		if (!check_scope_name(scopes[i])) {
			confab_error_set(&error,
					 CONFAB_ERROR_INVALID_VALUE,
					 "scopes",
					 "Scopes are non-empty words without spaces");
			g_task_return_error(task, g_steal_pointer(&error));
			return;
		}
	}
	if (agent_id != NULL && *agent_id != '\0') {
		g_autoptr(ConfabAgent) agent = confab_engine_lookup_agent(self, agent_id);
		if (agent == NULL) {
			g_task_return_new_error(task,
						CONFAB_ERROR,
						CONFAB_ERROR_AGENT_NOT_FOUND,
						"No agent '%s' to bind the token to",
						agent_id);
			return;
		}
	}
	if (expires_at < 0 || (expires_at != 0 && expires_at <= now)) {
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "expires_at",
				 "expires_at must be in the future (Unix seconds) or 0");
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}

	data->secret = confab_token_secret_new(&error);
	if (data->secret == NULL) {
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	sha256(data->secret, digest);
	hash = g_bytes_new(digest, sizeof(digest));
	memset(digest, 0, sizeof(digest));
	id = confab_id_generator_next(self->ids, CONFAB_PREFIX_TOKEN);

	data->token = confab_token_new();
	confab_token_set_id(data->token, id);
	confab_token_set_owner(data->token, owner);
	confab_token_set_name(data->token, name != NULL ? name : "");
	confab_token_set_scopes(data->token, scopes);
	confab_token_set_agent_id(data->token,
				  agent_id != NULL && *agent_id != '\0' ? agent_id : NULL);
	confab_token_set_hash(data->token, hash);
	confab_token_set_created_at(data->token, now);
	confab_token_set_expires_at(data->token, expires_at);
	save_token_internal(self,
			    data->token,
			    cancellable,
			    create_token_saved_cb,
			    g_steal_pointer(&task));
}

/**
 * confab_engine_create_token_finish:
 * @self: a #ConfabEngine
 * @result: the result
 * @secret: (out) (transfer full): the secret, to show once
 * @error: return location for a #GError
 *
 * Returns: (transfer full): the new token
 */
ConfabToken *
confab_engine_create_token_finish(ConfabEngine *self,
				  GAsyncResult *result,
				  gchar **secret,
				  GError **error)
{
	CreateTokenData *data;
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	if (!g_task_propagate_boolean(G_TASK(result), error))
		return NULL;
	data = g_task_get_task_data(G_TASK(result));
	*secret = g_steal_pointer(&data->secret);
	return g_object_ref(data->token);
}

static ConfabToken *
token_copy(ConfabToken *token)
{
	ConfabToken *copy = confab_token_new();
	confab_token_set_id(copy, confab_token_get_id(token));
	confab_token_set_owner(copy, confab_token_get_owner(token));
	confab_token_set_name(copy, confab_token_get_name(token));
	confab_token_set_scopes(copy, confab_token_get_scopes(token));
	confab_token_set_agent_id(copy, confab_token_get_agent_id(token));
	confab_token_set_hash(copy, confab_token_get_hash(token));
	confab_token_set_created_at(copy, confab_token_get_created_at(token));
	confab_token_set_expires_at(copy, confab_token_get_expires_at(token));
	confab_token_set_revoked_at(copy, confab_token_get_revoked_at(token));
	return copy;
}

/**
 * confab_engine_revoke_token_async:
 *
 * Revokes a token: from the commit on, it authenticates nothing.
 */
void
confab_engine_revoke_token_async(ConfabEngine *self,
				 const gchar *token_id,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	g_autoptr(ConfabToken) token = confab_engine_lookup_token(self, token_id);
	g_autoptr(ConfabToken) revoked = NULL;

	if (token == NULL) {
		g_task_report_new_error(self,
					callback,
					user_data,
					confab_engine_revoke_token_async,
					CONFAB_ERROR,
					CONFAB_ERROR_NOT_FOUND,
					"No token '%s'",
					token_id);
		return;
	}
	revoked = token_copy(token);
	if (confab_token_get_revoked_at(revoked) == 0)
		confab_token_set_revoked_at(revoked, g_get_real_time() / G_USEC_PER_SEC);
	save_token_internal(self, revoked, cancellable, callback, user_data);
}

gboolean
confab_engine_revoke_token_finish(ConfabEngine *self, GAsyncResult *result, GError **error)
{
	return g_task_propagate_boolean(G_TASK(result), error);
}

/* ---------- quota ---------- */

static void
task_return_boolean_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	GError *error = NULL;

	if (!g_task_propagate_boolean(G_TASK(result), &error))
		g_task_return_error(task, error);
	else
		g_task_return_boolean(task, TRUE);
}

/**
 * confab_engine_set_quota_async:
 * @self: a #ConfabEngine
 * @owner: the owner
 * @monthly_requests: the owner's monthly request quota; 0 for unlimited,
 *   whatever the configured default
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once stored
 * @user_data: data for @callback
 *
 * Sets a per-owner quota.
 */
void
confab_engine_set_quota_async(ConfabEngine *self,
			      const gchar *owner,
			      guint64 monthly_requests,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);

	g_task_set_source_tag(task, confab_engine_set_quota_async);
	if (owner == NULL || *owner == '\0') {
		g_autoptr(GError) error = NULL;
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "owner",
				 "A quota needs an owner");
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	confab_store_set_quota_async(self->store,
				     owner,
				     monthly_requests,
				     cancellable,
				     task_return_boolean_cb,
				     g_steal_pointer(&task));
}

gboolean
confab_engine_set_quota_finish(ConfabEngine *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

static void
usage_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	GError *error = NULL;
	ConfabStoreUsage *usage =
	    confab_store_get_usage_finish(CONFAB_STORE(source), result, &error);

	if (usage == NULL)
		g_task_return_error(task, error);
	else
		g_task_return_pointer(task, usage, (GDestroyNotify)confab_store_usage_free);
}

/**
 * confab_engine_get_usage_async:
 * @self: a #ConfabEngine
 * @owner: the owner
 * @cancellable: (nullable): a #GCancellable
 * @callback: called with the owner's quota and use of this month
 * @user_data: data for @callback
 */
void
confab_engine_get_usage_async(ConfabEngine *self,
			      const gchar *owner,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	g_autofree gchar *month = confab_engine_current_month(self);

	g_task_set_source_tag(task, confab_engine_get_usage_async);
	confab_store_get_usage_async(self->store,
				     owner,
				     month,
				     self->config->default_monthly_requests,
				     cancellable,
				     usage_cb,
				     g_steal_pointer(&task));
}

static void
list_usage_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	GError *error = NULL;
	GPtrArray *list = confab_store_list_usage_finish(CONFAB_STORE(source), result, &error);

	if (list == NULL)
		g_task_return_error(task, error);
	else
		g_task_return_pointer(task, list, (GDestroyNotify)g_ptr_array_unref);
}

/**
 * confab_engine_list_usage_async:
 * @self: a #ConfabEngine
 * @cancellable: (nullable): a #GCancellable
 * @callback: called with the owners who have a quota, and their use
 * @user_data: data for @callback
 */
void
confab_engine_list_usage_async(ConfabEngine *self,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	g_autofree gchar *month = confab_engine_current_month(self);

	g_task_set_source_tag(task, confab_engine_list_usage_async);
	confab_store_list_usage_async(self->store,
				      month,
				      self->config->default_monthly_requests,
				      cancellable,
				      list_usage_cb,
				      g_steal_pointer(&task));
}

/**
 * confab_engine_list_usage_finish:
 *
 * Returns: (transfer full) (element-type ConfabStoreUsage): this month's
 *   use of every owner with a quota, by owner
 */
GPtrArray *
confab_engine_list_usage_finish(ConfabEngine *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * confab_engine_get_usage_finish:
 *
 * Returns: (transfer full): the owner's quota and use of this month
 */
ConfabStoreUsage *
confab_engine_get_usage_finish(ConfabEngine *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/* The quota after @usage's request in @info; whether it was admitted. */
static gboolean
quota_verdict(ConfabStoreUsage *usage, ConfabQuotaInfo *info, GError **error)
{
	info->limit = usage->limit;
	info->remaining = usage->limit > usage->requests ? usage->limit - usage->requests : 0;
	info->reset_seconds = seconds_to_month_end();
	info->rpm = usage->rpm;
	info->rate_remaining = usage->rate_remaining;
	info->rate_reset_ms = usage->rate_reset_ms;
	info->retry_after_ms = usage->rate_limited ? usage->retry_after_ms : 0;
	info->parallel_taken = usage->admitted && usage->parallel_taken;
	info->token_parallel_taken = usage->admitted && usage->token_parallel_taken;
	if (usage->parallel_limited) {
		confab_error_set_printf(error,
					CONFAB_ERROR_RATE_LIMITED,
					NULL,
					"Rate limit reached: %" G_GUINT64_FORMAT
					" turns in flight at most; retry when one has ended",
					usage->max_parallel);
		return FALSE;
	}
	if (usage->rate_limited) {
		confab_error_set_printf(error,
					CONFAB_ERROR_RATE_LIMITED,
					NULL,
					"Rate limit reached: %" G_GUINT64_FORMAT
					" requests per minute; retry in %" G_GINT64_FORMAT " ms",
					usage->rpm,
					usage->retry_after_ms);
		return FALSE;
	}
	if (!usage->admitted) {
		confab_error_set_printf(error,
					CONFAB_ERROR_QUOTA_EXCEEDED,
					NULL,
					"You exceeded your monthly quota of %" G_GUINT64_FORMAT
					" requests; it resets at the start of next month (UTC)",
					usage->limit);
		return FALSE;
	}
	return TRUE;
}

/* The limits an admission checks: the owner's own, else `[quota]`'s; the
 * token's own (a token has none by default). */
static void
admission_init(ConfabEngine *self,
	       ConfabStoreAdmission *admission,
	       const gchar *owner,
	       const gchar *token_id,
	       const gchar *month)
{
	g_autoptr(GRWLockReaderLocker) locker = NULL;
	ConfabStoreLimits *own, *token;

	*admission = (ConfabStoreAdmission){
	    .owner = owner,
	    .month = month,
	    .default_limit = self->config->default_monthly_requests,
	    .rpm = self->config->default_rpm,
	    .max_parallel = self->config->default_max_parallel,
	    .token_id = token_id,
	};
	locker = g_rw_lock_reader_locker_new(&self->cache_lock);
	own = lookup_limits(self, 0, owner);
	if (own != NULL) {
		admission->rpm = own->rpm > 0 ? own->rpm : admission->rpm;
		admission->max_parallel = own->max_parallel > 0 ? own->max_parallel
								: admission->max_parallel;
	}
	token = lookup_limits(self, 1, token_id);
	if (token != NULL) {
		admission->token_rpm = token->rpm;
		admission->token_max_parallel = token->max_parallel;
	}
}

/* slots taken for a turn the month then refused */
static void
release_refused(ConfabStore *store, ConfabStoreUsage *usage, const gchar *token_id)
{
	if (usage->admitted)
		return;
	if (usage->parallel_taken)
		confab_store_release_parallel(store, usage->owner);
	if (usage->token_parallel_taken && token_id != NULL)
		confab_store_release_parallel(store, token_id);
}

static void
admit_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabQuotaInfo *info = g_task_get_task_data(task);
	g_autoptr(ConfabStoreUsage) usage = NULL;
	GError *error = NULL;

	usage = confab_store_admit_quota_finish(CONFAB_STORE(source), result, &error);
	if (usage == NULL) {
		g_task_return_error(task, error);
		return;
	}
	release_refused(CONFAB_STORE(source), usage, info->token_id);
	if (!quota_verdict(usage, info, &error)) {
		g_task_return_error(task, error);
		return;
	}
	g_task_return_boolean(task, TRUE);
}

/**
 * confab_engine_admit_now:
 * @self: a #ConfabEngine
 * @owner: the owner
 * @token_id: (nullable): the token the request came with
 * @month: (nullable): the month to count in, from
 *   confab_engine_current_month(); %NULL not to count the month (only the
 *   rates and turns in flight hold: D-Bus Chat.Send)
 * @info: (out): the limits after this request (also when it was refused)
 * @error: return location for a #GError
 *
 * confab_engine_admit_async(), answered at once: only where
 * confab_engine_answers_now().
 *
 * Returns: whether the request is admitted
 */
gboolean
confab_engine_admit_now(ConfabEngine *self,
			const gchar *owner,
			const gchar *token_id,
			const gchar *month,
			ConfabQuotaInfo *info,
			GError **error)
{
	g_autoptr(ConfabStoreUsage) usage = NULL;
	ConfabStoreAdmission admission;

	g_return_val_if_fail(CONFAB_IS_ENGINE(self), FALSE);
	admission_init(self, &admission, owner, token_id, month);
	usage = confab_store_admit_now(self->store, &admission);
	return quota_verdict(usage, info, error);
}

/**
 * confab_engine_admit_quota_now:
 *
 * confab_engine_admit_now() without a token.
 *
 * Returns: whether the request is admitted
 */
gboolean
confab_engine_admit_quota_now(ConfabEngine *self,
			      const gchar *owner,
			      const gchar *month,
			      ConfabQuotaInfo *info,
			      GError **error)
{
	return confab_engine_admit_now(self, owner, NULL, month, info, error);
}

/**
 * confab_engine_release_parallel:
 * @self: a #ConfabEngine
 * @owner: the owner, or the token's id
 *
 * Gives back the slot of a turn that ends (ConfabQuotaInfo.parallel_taken
 * on the owner, ConfabQuotaInfo.token_parallel_taken on the token's id).
 */
void
confab_engine_release_parallel(ConfabEngine *self, const gchar *owner)
{
	g_return_if_fail(CONFAB_IS_ENGINE(self));
	confab_store_release_parallel(self->store, owner);
}

/**
 * confab_engine_answers_now:
 *
 * Returns: whether the store answers quotas and sessions at once
 *   (confab_store_answers_now())
 */
gboolean
confab_engine_answers_now(ConfabEngine *self)
{
	g_return_val_if_fail(CONFAB_IS_ENGINE(self), FALSE);
	return confab_store_answers_now(self->store);
}

static void
quota_info_free(ConfabQuotaInfo *info)
{
	g_free(info->token_id);
	g_free(info);
}

/**
 * confab_engine_admit_async:
 * @self: a #ConfabEngine
 * @owner: the owner
 * @token_id: (nullable): the token the request came with
 * @month: (nullable): the month to count in, from
 *   confab_engine_current_month(); %NULL not to count the month
 * @cancellable: (nullable): a #GCancellable
 * @callback: called with the verdict
 * @user_data: data for @callback
 *
 * Counts one request against the owner's monthly quota and the limits of
 * the owner and of the token (see confab_store_admit_async()): the
 * owner's own limits, else `[quota]`'s; the token's own. Refuses it with
 * CONFAB_ERROR_QUOTA_EXCEEDED or CONFAB_ERROR_RATE_LIMITED.
 */
void
confab_engine_admit_async(ConfabEngine *self,
			  const gchar *owner,
			  const gchar *token_id,
			  const gchar *month,
			  GCancellable *cancellable,
			  GAsyncReadyCallback callback,
			  gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);
	ConfabQuotaInfo *info = g_new0(ConfabQuotaInfo, 1);
	ConfabStoreAdmission admission;

	g_task_set_source_tag(task, confab_engine_admit_async);
	info->token_id = g_strdup(token_id);
	g_task_set_task_data(task, info, (GDestroyNotify)quota_info_free);
	admission_init(self, &admission, owner, token_id, month);
	confab_store_admit_async(self->store, &admission, cancellable, admit_cb, task);
}

/**
 * confab_engine_admit_quota_async:
 *
 * confab_engine_admit_async() without a token.
 */
void
confab_engine_admit_quota_async(ConfabEngine *self,
				const gchar *owner,
				const gchar *month,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	confab_engine_admit_async(self, owner, NULL, month, cancellable, callback, user_data);
}

/**
 * confab_engine_admit_quota_finish:
 * @self: a #ConfabEngine
 * @result: the result
 * @info: (out): the quota after this request (also when it was refused)
 * @error: return location for a #GError
 *
 * Returns: whether the request is admitted
 */
gboolean
confab_engine_admit_quota_finish(ConfabEngine *self,
				 GAsyncResult *result,
				 ConfabQuotaInfo *info,
				 GError **error)
{
	ConfabQuotaInfo *data;

	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	data = g_task_get_task_data(G_TASK(result));
	*info = *data;
	info->token_id = NULL;
	return g_task_propagate_boolean(G_TASK(result), error);
}

/* ---------- tokens ---------- */

/**
 * confab_engine_tokens_init:
 * @self: a #ConfabEngine
 * @tokens: (out caller-allocates): the budgets of @owner and @token_id
 * @owner: the owner
 * @token_id: (nullable): its token
 * @month: the month, `YYYY-MM`
 *
 * The token budgets a model call counts against: the owner's own, else
 * `[quota]`'s; the token's own.
 *
 * Returns: whether any budget applies (else there is nothing to count)
 */
gboolean
confab_engine_tokens_init(ConfabEngine *self,
			  ConfabStoreTokens *tokens,
			  const gchar *owner,
			  const gchar *token_id,
			  const gchar *month)
{
	g_autoptr(GRWLockReaderLocker) locker = NULL;
	ConfabStoreLimits *own, *token;

	g_return_val_if_fail(CONFAB_IS_ENGINE(self), FALSE);
	*tokens = (ConfabStoreTokens){
	    .owner = owner,
	    .token_id = token_id,
	    .month = month,
	    .tpm = self->config->default_tpm,
	    .monthly = self->config->default_monthly_tokens,
	};
	locker = g_rw_lock_reader_locker_new(&self->cache_lock);
	own = lookup_limits(self, 0, owner);
	if (own != NULL) {
		tokens->tpm = own->tpm > 0 ? own->tpm : tokens->tpm;
		tokens->monthly = own->monthly_tokens > 0 ? own->monthly_tokens : tokens->monthly;
	}
	token = lookup_limits(self, 1, token_id);
	if (token != NULL) {
		tokens->token_tpm = token->tpm;
		tokens->token_monthly = token->monthly_tokens;
	}
	return tokens->tpm > 0 || tokens->monthly > 0 || tokens->token_tpm > 0 ||
	       tokens->token_monthly > 0;
}

/**
 * confab_engine_tokens_verdict:
 * @verdict: a reservation's verdict
 * @info: (inout): the turn's limits, to which the tokens' rate is added
 * @error: return location for a #GError
 *
 * Returns: whether the tokens were reserved; else @error is
 *   CONFAB_ERROR_RATE_LIMITED (tokens per minute) or
 *   CONFAB_ERROR_QUOTA_EXCEEDED (tokens per month)
 */
gboolean
confab_engine_tokens_verdict(const ConfabStoreTokenVerdict *verdict,
			     ConfabQuotaInfo *info,
			     GError **error)
{
	info->tpm = verdict->tpm;
	info->tpm_remaining = verdict->tpm_remaining;
	info->tpm_reset_ms = verdict->tpm_reset_ms;
	if (verdict->admitted)
		return TRUE;
	if (verdict->monthly_spent) {
		confab_error_set(error,
				 CONFAB_ERROR_QUOTA_EXCEEDED,
				 NULL,
				 "You exceeded your monthly token budget; it resets at the "
				 "start of next month (UTC)");
		return FALSE;
	}
	info->retry_after_ms = verdict->retry_after_ms;
	confab_error_set_printf(error,
				CONFAB_ERROR_RATE_LIMITED,
				NULL,
				"Rate limit reached: %" G_GUINT64_FORMAT
				" tokens per minute; retry in %" G_GINT64_FORMAT " ms",
				verdict->tpm,
				verdict->retry_after_ms);
	return FALSE;
}

/* ---------- limits ---------- */

static gboolean
limits_target_check(ConfabEngine *self,
		    const gchar *kind,
		    const gchar *id,
		    gboolean setting,
		    GError **error)
{
	g_autoptr(GRWLockReaderLocker) locker = NULL;
	GHashTableIter iter;
	gpointer value;

	if (g_strcmp0(kind, "owner") != 0 && g_strcmp0(kind, "token") != 0) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "kind",
				 "The kind of limits must be 'owner' or 'token'");
		return FALSE;
	}
	if (id == NULL || *id == '\0') {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "id",
				 "Limits need an owner's name or a token's id");
		return FALSE;
	}
	locker = g_rw_lock_reader_locker_new(&self->cache_lock);
	if (g_str_equal(kind, "token")) {
		ConfabToken *token = g_hash_table_lookup(self->tokens, id);
		if (token == NULL) {
			confab_error_set_printf(error,
						CONFAB_ERROR_INVALID_VALUE,
						"id",
						"No token %s",
						id);
			return FALSE;
		}
		if (setting && confab_token_get_revoked_at(token) != 0) {
			confab_error_set_printf(error,
						CONFAB_ERROR_INVALID_VALUE,
						"id",
						"Token %s is revoked: it has no limits to set",
						id);
			return FALSE;
		}
		return TRUE;
	}
	/* an owner: one a token acts for, or a user of this system (D-Bus) */
	g_hash_table_iter_init(&iter, self->tokens);
	while (g_hash_table_iter_next(&iter, NULL, &value))
		if (g_strcmp0(confab_token_get_owner(value), id) == 0)
			return TRUE;
	if (getpwnam(id) != NULL)
		return TRUE;
	confab_error_set_printf(error,
				CONFAB_ERROR_INVALID_VALUE,
				"id",
				"No owner %s: no token acts for it and no user has this name",
				id);
	return FALSE;
}

/**
 * confab_engine_get_limits:
 * @self: a #ConfabEngine
 * @kind: `owner` or `token`
 * @id: the owner's name, or the token's id
 * @error: return location for a #GError
 *
 * Returns: (transfer full): the owner's or token's own limits (0 where it
 *   has none), or %NULL for an unknown kind, owner or token
 */
ConfabStoreLimits *
confab_engine_get_limits(ConfabEngine *self, const gchar *kind, const gchar *id, GError **error)
{
	g_autoptr(GRWLockReaderLocker) locker = NULL;
	ConfabStoreLimits *stored, *limits;

	g_return_val_if_fail(CONFAB_IS_ENGINE(self), NULL);
	if (!limits_target_check(self, kind, id, FALSE, error))
		return NULL;
	limits = g_new0(ConfabStoreLimits, 1);
	limits->kind = g_strdup(kind);
	limits->id = g_strdup(id);
	locker = g_rw_lock_reader_locker_new(&self->cache_lock);
	stored = g_hash_table_lookup(limits_of(self, kind), id);
	if (stored != NULL) {
		limits->rpm = stored->rpm;
		limits->tpm = stored->tpm;
		limits->max_parallel = stored->max_parallel;
		limits->monthly_tokens = stored->monthly_tokens;
	}
	return limits;
}

static void
limits_set_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabEngine *self = g_task_get_source_object(task);
	GError *error = NULL;

	if (!confab_store_set_limits_finish(CONFAB_STORE(source), result, &error)) {
		g_task_return_error(task, error);
		return;
	}
	/* this instance's own write: read them back before answering */
	reload_async(self,
		     FALSE,
		     FALSE,
		     TRUE,
		     NULL,
		     task_return_boolean_cb,
		     g_steal_pointer(&task));
}

/**
 * confab_engine_set_limits_async:
 * @self: a #ConfabEngine
 * @kind: `owner` or `token`
 * @id: the owner's name, or the token's id (not a revoked one)
 * @values: rpm, tpm, max_parallel, monthly_tokens: 0 removes one, below 0
 *   leaves it as it is
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once stored and in force on this instance
 * @user_data: data for @callback
 *
 * Sets an owner's or a token's own limits. An unknown owner or token, or a
 * revoked token, is CONFAB_ERROR_INVALID_VALUE, and nothing changes.
 */
void
confab_engine_set_limits_async(ConfabEngine *self,
			       const gchar *kind,
			       const gchar *id,
			       const gint64 values[4],
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	GError *error = NULL;

	g_task_set_source_tag(task, confab_engine_set_limits_async);
	if (!limits_target_check(self, kind, id, TRUE, &error)) {
		g_task_return_error(task, error);
		return;
	}
	confab_store_set_limits_async(self->store,
				      kind,
				      id,
				      values,
				      cancellable,
				      limits_set_cb,
				      g_steal_pointer(&task));
}

gboolean
confab_engine_set_limits_finish(ConfabEngine *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/* ---------- turns ---------- */

/**
 * confab_engine_turn_begin:
 * @self: a #ConfabEngine
 * @cancellable: the turn's cancellable, cancelled if the daemon must stop
 *   before the turn ends
 * @error: return location for a #GError
 *
 * Admits a turn into flight, unless the daemon is stopping or full. Any
 * thread.
 */
gboolean
confab_engine_turn_begin(ConfabEngine *self, GCancellable *cancellable, GError **error)
{
	g_autoptr(GMutexLocker) locker = NULL;

	if (g_atomic_int_get(&self->shutting_down)) {
		confab_error_set(error,
				 CONFAB_ERROR_SHUTTING_DOWN,
				 NULL,
				 "The service is shutting down; retry shortly");
		return FALSE;
	}
	locker = g_mutex_locker_new(&self->turns_lock);
	/* checked again under the lock: begin_shutdown() sets it there, so a
	 * turn is either refused or counted before ::drained is decided */
	if (g_atomic_int_get(&self->shutting_down)) {
		confab_error_set(error,
				 CONFAB_ERROR_SHUTTING_DOWN,
				 NULL,
				 "The service is shutting down; retry shortly");
		return FALSE;
	}
	if (g_hash_table_size(self->turns) >= self->config->max_inflight_turns) {
		confab_error_set(error,
				 CONFAB_ERROR_OVERLOADED,
				 NULL,
				 "Too many turns are running; retry shortly");
		return FALSE;
	}
	/* the turn's context, where it is cancelled: its "cancelled" handlers
	 * touch what only that thread may touch */
	g_hash_table_insert(self->turns,
			    g_object_ref(cancellable),
			    g_main_context_ref_thread_default());
	g_atomic_int_inc(&self->n_turns);
	return TRUE;
}

static gboolean
emit_drained(gpointer user_data)
{
	g_signal_emit(user_data, signals[SIGNAL_DRAINED], 0);
	return G_SOURCE_REMOVE;
}

/* ::drained on the engine's own context, whichever thread got here */
static void
drained(ConfabEngine *self)
{
	g_autoptr(GSource) source = NULL;
	g_autoptr(GMainContext) here = g_main_context_ref_thread_default();

	if (here == self->context) {
		emit_drained(self);
		return;
	}
	source = g_idle_source_new();
	g_source_set_priority(source, G_PRIORITY_DEFAULT);
	g_source_set_callback(source, emit_drained, g_object_ref(self), g_object_unref);
	g_source_set_static_name(source, "[confab] turns drained");
	g_source_attach(source, self->context);
}

/**
 * confab_engine_turn_end:
 * @self: a #ConfabEngine
 * @cancellable: the cancellable given to confab_engine_turn_begin()
 * @served: whether the turn counts as served
 *
 * Any thread.
 */
void
confab_engine_turn_end(ConfabEngine *self, GCancellable *cancellable, gboolean served)
{
	gboolean last;
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->turns_lock);
		if (!g_hash_table_remove(self->turns, cancellable))
			return;
		g_atomic_int_dec_and_test(&self->n_turns);
		last = g_hash_table_size(self->turns) == 0;
	}
	if (served)
		__atomic_fetch_add(&self->turns_served, 1, __ATOMIC_RELAXED);
	if (last && g_atomic_int_get(&self->shutting_down))
		drained(self);
}

/**
 * confab_engine_get_active_turns:
 *
 * Returns: the turns in flight now; any thread, no lock
 */
guint
confab_engine_get_active_turns(ConfabEngine *self)
{
	return (guint)g_atomic_int_get(&self->n_turns);
}

/**
 * confab_engine_get_turns_served:
 *
 * Returns: the turns served since the start; any thread, no lock
 */
guint64
confab_engine_get_turns_served(ConfabEngine *self)
{
	return __atomic_load_n(&self->turns_served, __ATOMIC_RELAXED);
}

/**
 * confab_engine_begin_shutdown:
 *
 * From now on, new turns are refused with CONFAB_ERROR_SHUTTING_DOWN;
 * running ones go on. ::drained fires, on the engine's context, when the
 * last one ends.
 */
void
confab_engine_begin_shutdown(ConfabEngine *self)
{
	gboolean none;
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->turns_lock);
		g_atomic_int_set(&self->shutting_down, TRUE);
		none = g_hash_table_size(self->turns) == 0;
	}
	/* nobody is expected to decide within the grace: the turns that wait
	 * for a person go on at once, their calls declined */
	confab_approvals_expire_all(self->approvals, "confabd is stopping");
	confab_elicitations_expire_all(self->elicitations);
	if (none)
		drained(self);
}

static gboolean
cancel_in_context(gpointer user_data)
{
	g_cancellable_cancel(user_data);
	return G_SOURCE_REMOVE;
}

/**
 * confab_engine_cancel_turns:
 *
 * Cancels every running turn: each stores what it has as incomplete. A
 * turn is cancelled on its own thread's context, so that the handlers of
 * its cancellable run where the turn runs.
 */
void
confab_engine_cancel_turns(ConfabEngine *self)
{
	g_autoptr(GPtrArray) turns = g_ptr_array_new_with_free_func(g_object_unref);
	g_autoptr(GPtrArray) contexts =
	    g_ptr_array_new_with_free_func((GDestroyNotify)g_main_context_unref);
	g_autoptr(GMainContext) here = g_main_context_ref_thread_default();
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->turns_lock);
		GHashTableIter iter;
		gpointer key;
		gpointer value;

		g_hash_table_iter_init(&iter, self->turns);
		while (g_hash_table_iter_next(&iter, &key, &value)) {
			g_ptr_array_add(turns, g_object_ref(key));
			g_ptr_array_add(contexts, g_main_context_ref(value));
		}
	}
	/* not under the lock: a turn that ends at once calls turn_end() */
	for (guint i = 0; i < turns->len; i++) {
		g_autoptr(GSource) source = NULL;

		if (g_ptr_array_index(contexts, i) == here) {
			g_cancellable_cancel(g_ptr_array_index(turns, i));
			continue;
		}
		source = g_idle_source_new();
		g_source_set_priority(source, G_PRIORITY_HIGH);
		g_source_set_callback(source,
				      cancel_in_context,
				      g_object_ref(g_ptr_array_index(turns, i)),
				      g_object_unref);
		g_source_set_static_name(source, "[confab] cancel a turn");
		g_source_attach(source, g_ptr_array_index(contexts, i));
	}
	/* a turn waiting for a person would wait on through a cancel (its
	 * client's leaving does not void the decision): stopping ends it */
	confab_approvals_expire_all(self->approvals, "confabd stopped before anybody decided");
	confab_elicitations_expire_all(self->elicitations);
}
