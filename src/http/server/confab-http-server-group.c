/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include "http/server/confab-http-server-group.h"

/*
 * What the HTTP servers of several serving threads share, so that the
 * limits hold for the daemon and not for each thread: the connections open
 * (in all, and from each peer address) and the request body bytes held.
 * A connection is counted under a short mutex when it is accepted and when
 * it closes — never per request; body bytes with atomics. A server that is
 * given no group makes its own.
 */

struct _ConfabHttpServerGroup {
	GObject parent_instance;
	guint max_connections;
	guint max_connections_per_peer;
	gsize max_inflight_body_bytes;
	GMutex lock;	     /* connections, peers */
	gint connections;    /* written under the lock, read atomically */
	GHashTable *peers;   /* owned: peer -> connections from it */
	gsize inflight_body; /* atomic */
};

G_DEFINE_FINAL_TYPE(ConfabHttpServerGroup, confab_http_server_group, G_TYPE_OBJECT)

static void
confab_http_server_group_finalize(GObject *object)
{
	ConfabHttpServerGroup *self = CONFAB_HTTP_SERVER_GROUP(object);

	g_hash_table_unref(self->peers);
	g_mutex_clear(&self->lock);
	G_OBJECT_CLASS(confab_http_server_group_parent_class)->finalize(object);
}

static void
confab_http_server_group_class_init(ConfabHttpServerGroupClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_http_server_group_finalize;
}

static void
confab_http_server_group_init(ConfabHttpServerGroup *self)
{
	g_mutex_init(&self->lock);
	self->peers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

/**
 * confab_http_server_group_new:
 * @max_connections: connections open at once, over every server
 * @max_connections_per_peer: connections from one address
 * @max_inflight_body_bytes: request body bytes held at once
 *
 * Returns: (transfer full): a group; every method may be called from any
 *   thread
 */
ConfabHttpServerGroup *
confab_http_server_group_new(guint max_connections,
			     guint max_connections_per_peer,
			     gsize max_inflight_body_bytes)
{
	ConfabHttpServerGroup *self = g_object_new(CONFAB_TYPE_HTTP_SERVER_GROUP, NULL);

	self->max_connections = max_connections;
	self->max_connections_per_peer = max_connections_per_peer;
	self->max_inflight_body_bytes = max_inflight_body_bytes;
	return self;
}

/**
 * confab_http_server_group_add_connection:
 * @self: a #ConfabHttpServerGroup
 * @peer: the peer's address
 *
 * Counts a new connection from @peer, unless a limit says no.
 *
 * Returns: (nullable): %NULL when counted; otherwise why not, for the
 *   client
 */
const gchar *
confab_http_server_group_add_connection(ConfabHttpServerGroup *self, const gchar *peer)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
	guint from_peer = GPOINTER_TO_UINT(g_hash_table_lookup(self->peers, peer));

	if ((guint)self->connections >= self->max_connections)
		return "Too many connections; retry shortly";
	if (from_peer >= self->max_connections_per_peer)
		return "Too many connections from your address; retry shortly";
	g_hash_table_insert(self->peers, g_strdup(peer), GUINT_TO_POINTER(from_peer + 1));
	g_atomic_int_set(&self->connections, self->connections + 1);
	return NULL;
}

/**
 * confab_http_server_group_remove_connection:
 * @self: a #ConfabHttpServerGroup
 * @peer: the peer's address, as it was added
 */
void
confab_http_server_group_remove_connection(ConfabHttpServerGroup *self, const gchar *peer)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
	guint count = GPOINTER_TO_UINT(g_hash_table_lookup(self->peers, peer));

	if (count <= 1)
		g_hash_table_remove(self->peers, peer);
	else
		g_hash_table_insert(self->peers, g_strdup(peer), GUINT_TO_POINTER(count - 1));
	g_atomic_int_set(&self->connections, self->connections - 1);
}

/**
 * confab_http_server_group_hold_body:
 * @self: a #ConfabHttpServerGroup
 * @more: body bytes a request now holds besides what it held
 *
 * Returns: %TRUE if they are counted; %FALSE if they would exceed the cap
 *   (and nothing is counted)
 */
gboolean
confab_http_server_group_hold_body(ConfabHttpServerGroup *self, gsize more)
{
	gsize held = __atomic_load_n(&self->inflight_body, __ATOMIC_RELAXED);

	do {
		if (held + more > self->max_inflight_body_bytes || held + more < held)
			return FALSE;
	} while (!__atomic_compare_exchange_n(&self->inflight_body,
					      &held,
					      held + more,
					      TRUE,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return TRUE;
}

/**
 * confab_http_server_group_release_body:
 * @self: a #ConfabHttpServerGroup
 * @bytes: body bytes a request no longer holds
 */
void
confab_http_server_group_release_body(ConfabHttpServerGroup *self, gsize bytes)
{
	__atomic_fetch_sub(&self->inflight_body, bytes, __ATOMIC_RELAXED);
}

/**
 * confab_http_server_group_get_connections:
 *
 * Returns: the connections open now, over every server; any thread
 */
guint
confab_http_server_group_get_connections(ConfabHttpServerGroup *self)
{
	return (guint)g_atomic_int_get(&self->connections);
}
