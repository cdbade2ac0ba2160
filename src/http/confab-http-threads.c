/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "http/confab-http-router.h"
#include "http/confab-http-threads.h"

/*
 * The serving threads. With one, the HTTP router runs on the caller's
 * context (the daemon's main loop), as it always did. With N > 1, each of
 * N threads owns a GMainContext (pushed as its thread-default), a router
 * with its own HTTP server, and — through the setup function — its own
 * providers and so its own upstream connections; the servers listen on the
 * same address with SO_REUSEPORT, and the kernel spreads the connections
 * over them. A connection stays on the thread that accepted it, with all
 * its requests and their turns. The limits on connections and request
 * bodies are counted over every thread (ConfabHttpServerGroup).
 *
 * Started with a socket systemd passed (confab_http_threads_set_listen_fd()),
 * there is no address to bind beside the others: each thread accepts from
 * its own dup of that one socket instead, and whichever thread the kernel
 * wakes first takes the connection.
 *
 * What the threads share is the engine (thread-safe: see its comment), the
 * store (its writer hands each completion back to the context that asked),
 * the metrics (atomics) and the toolbox (which marshals calls to the main
 * context). D-Bus stays on the main context.
 */

typedef struct {
	guint index;
	GMainContext *context;	  /* owned */
	GMainLoop *loop;	  /* owned */
	ConfabHttpRouter *router; /* owned: by the thread once it runs */
	GThread *thread;	  /* owned, nullable */
} Slot;

struct _ConfabHttpThreads {
	GObject parent_instance;
	ConfabEngine *engine; /* owned */
	guint n_threads;
	GPtrArray *slots;	       /* owned: of Slot */
	ConfabHttpServerGroup *group;  /* owned, nullable: with N > 1 */
	ConfabHttpRouter *main_router; /* owned, nullable: with N = 1 */
	gchar *url;		       /* owned */
	gint listen_fd;		       /* owned: -1 without an inherited socket */
};

G_DEFINE_FINAL_TYPE(ConfabHttpThreads, confab_http_threads, G_TYPE_OBJECT)

static void
slot_free(Slot *slot)
{
	g_assert(slot->thread == NULL);
	g_clear_object(&slot->router);
	g_clear_pointer(&slot->loop, g_main_loop_unref);
	g_clear_pointer(&slot->context, g_main_context_unref);
	g_free(slot);
}

static void
confab_http_threads_dispose(GObject *object)
{
	ConfabHttpThreads *self = CONFAB_HTTP_THREADS(object);

	confab_http_threads_stop(self);
	G_OBJECT_CLASS(confab_http_threads_parent_class)->dispose(object);
}

static void
confab_http_threads_finalize(GObject *object)
{
	ConfabHttpThreads *self = CONFAB_HTTP_THREADS(object);

	g_clear_pointer(&self->slots, g_ptr_array_unref);
	g_clear_object(&self->main_router);
	g_clear_object(&self->group);
	g_clear_object(&self->engine);
	g_free(self->url);
	if (self->listen_fd >= 0)
		close(self->listen_fd);
	G_OBJECT_CLASS(confab_http_threads_parent_class)->finalize(object);
}

static void
confab_http_threads_class_init(ConfabHttpThreadsClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->dispose = confab_http_threads_dispose;
	object_class->finalize = confab_http_threads_finalize;
}

static void
confab_http_threads_init(ConfabHttpThreads *self)
{
	self->slots = g_ptr_array_new_with_free_func((GDestroyNotify)slot_free);
	self->listen_fd = -1;
}

/**
 * confab_http_threads_new:
 * @engine: the engine
 * @n_threads: serving threads; 1 serves on the caller's context, 0 means
 *   one per CPU
 *
 * Returns: (transfer full): the serving threads, not started
 */
ConfabHttpThreads *
confab_http_threads_new(ConfabEngine *engine, guint n_threads)
{
	ConfabHttpThreads *self = g_object_new(CONFAB_TYPE_HTTP_THREADS, NULL);

	self->engine = g_object_ref(engine);
	self->n_threads = n_threads > 0 ? n_threads : MAX(g_get_num_processors(), 1);
	return self;
}

/**
 * confab_http_threads_set_listen_fd:
 * @self: a #ConfabHttpThreads, not started
 * @fd: a listening TCP socket (from systemd's socket activation), which
 *   @self owns from now on
 *
 * Serves on @fd instead of binding the address given to
 * confab_http_threads_start().
 */
void
confab_http_threads_set_listen_fd(ConfabHttpThreads *self, gint fd)
{
	g_return_if_fail(CONFAB_IS_HTTP_THREADS(self));
	g_return_if_fail(self->url == NULL);
	g_return_if_fail(fd >= 0);
	if (self->listen_fd >= 0)
		close(self->listen_fd);
	self->listen_fd = fd;
}

/* @self's inherited socket for one more server: a dup, which that server owns */
static gint
dup_listen_fd(ConfabHttpThreads *self, GError **error)
{
	gint fd = fcntl(self->listen_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		gint saved = errno;
		g_set_error(error,
			    G_IO_ERROR,
			    g_io_error_from_errno(saved),
			    "duplicating the inherited socket: %s",
			    g_strerror(saved));
	}
	return fd;
}

/**
 * confab_http_threads_get_n_threads:
 *
 * Returns: how many threads serve (1: the caller's context)
 */
guint
confab_http_threads_get_n_threads(ConfabHttpThreads *self)
{
	return self->n_threads;
}

static gpointer
serving_thread(gpointer data)
{
	Slot *slot = data;

	g_main_context_push_thread_default(slot->context);
	g_main_loop_run(slot->loop);
	/* what the router holds goes on this thread, where it lives */
	confab_http_router_disconnect(slot->router);
	g_clear_object(&slot->router);
	/* completions already queued (a bounded number of rounds) */
	for (guint i = 0; i < 100 && g_main_context_iteration(slot->context, FALSE); i++)
		;
	g_main_context_pop_thread_default(slot->context);
	return NULL;
}

/* A router on @slot's context, listening on @address beside the others. */
static gboolean
slot_listen(ConfabHttpThreads *self, Slot *slot, const gchar *address, GError **error)
{
	gboolean ok;

	g_main_context_push_thread_default(slot->context);
	slot->router = confab_http_router_new(self->engine);
	if (self->listen_fd >= 0) {
		gint fd = dup_listen_fd(self, error);
		confab_http_router_share(slot->router, self->group, FALSE);
		ok = fd >= 0 && confab_http_router_listen_fd(slot->router, fd, error);
	} else {
		confab_http_router_share(slot->router, self->group, TRUE);
		ok = confab_http_router_listen(slot->router, address, error);
	}
	g_main_context_pop_thread_default(slot->context);
	return ok;
}

static gboolean
start_threads(ConfabHttpThreads *self,
	      const gchar *address,
	      ConfabHttpThreadsSetupFunc setup,
	      gpointer user_data,
	      GError **error)
{
	const ConfabConfig *config = confab_engine_get_config(self->engine);
	g_autofree gchar *bound = NULL;

	self->group = confab_http_server_group_new(config->max_connections,
						   config->max_connections_per_peer,
						   config->max_inflight_body_bytes);
	for (guint i = 0; i < self->n_threads; i++) {
		Slot *slot = g_new0(Slot, 1);
		slot->index = i;
		slot->context = g_main_context_new();
		slot->loop = g_main_loop_new(slot->context, FALSE);
		g_ptr_array_add(self->slots, slot);
		if (setup != NULL)
			setup(slot->context, user_data);
		/* the first one picks the port when the address says 0 */
		if (!slot_listen(self, slot, bound != NULL ? bound : address, error))
			return FALSE;
		if (bound == NULL) {
			self->url = confab_http_router_get_url(slot->router);
			bound = g_strdup(self->url + strlen("http://"));
		}
	}
	/* each server has its dup now */
	if (self->listen_fd >= 0)
		close(g_steal_fd(&self->listen_fd));
	for (guint i = 0; i < self->slots->len; i++) {
		Slot *slot = g_ptr_array_index(self->slots, i);
		g_autofree gchar *name = g_strdup_printf("confab-http-%u", slot->index);
		slot->thread = g_thread_new(name, serving_thread, slot);
	}
	return TRUE;
}

/**
 * confab_http_threads_start:
 * @self: a #ConfabHttpThreads
 * @address: `HOST:PORT`; port 0 picks a free one (unused with an inherited
 *   socket)
 * @setup: (nullable): called for each serving thread's context before it
 *   runs (not with one thread: that one is the caller's)
 * @user_data: data for @setup
 * @error: return location for a #GError
 *
 * Listens, and starts the threads.
 */
gboolean
confab_http_threads_start(ConfabHttpThreads *self,
			  const gchar *address,
			  ConfabHttpThreadsSetupFunc setup,
			  gpointer user_data,
			  GError **error)
{
	g_return_val_if_fail(CONFAB_IS_HTTP_THREADS(self), FALSE);
	g_return_val_if_fail(self->url == NULL, FALSE);

	if (self->n_threads > 1)
		return start_threads(self, address, setup, user_data, error);
	self->main_router = confab_http_router_new(self->engine);
	if (self->listen_fd >= 0 ? !confab_http_router_listen_fd(self->main_router,
								 g_steal_fd(&self->listen_fd),
								 error)
				 : !confab_http_router_listen(self->main_router, address, error))
		return FALSE;
	self->url = confab_http_router_get_url(self->main_router);
	return TRUE;
}

/**
 * confab_http_threads_get_url:
 *
 * Returns: (transfer full) (nullable): `http://HOST:PORT`, once listening
 */
gchar *
confab_http_threads_get_url(ConfabHttpThreads *self)
{
	return g_strdup(self->url);
}

/**
 * confab_http_threads_get_active_requests:
 *
 * Returns: the requests whose head is in and whose response is not over,
 *   on every thread
 */
guint
confab_http_threads_get_active_requests(ConfabHttpThreads *self)
{
	guint active = 0;

	if (self->main_router != NULL)
		return confab_http_router_get_active_requests(self->main_router);
	for (guint i = 0; i < self->slots->len; i++) {
		Slot *slot = g_ptr_array_index(self->slots, i);
		if (slot->thread != NULL)
			active += confab_http_router_get_active_requests(slot->router);
	}
	return active;
}

static gboolean
quit_slot(gpointer user_data)
{
	Slot *slot = user_data;
	g_main_loop_quit(slot->loop);
	return G_SOURCE_REMOVE;
}

/**
 * confab_http_threads_stop:
 *
 * Stops listening and closes every connection; the threads end.
 */
void
confab_http_threads_stop(ConfabHttpThreads *self)
{
	if (self->main_router != NULL)
		confab_http_router_disconnect(self->main_router);
	for (guint i = 0; i < self->slots->len; i++) {
		Slot *slot = g_ptr_array_index(self->slots, i);
		g_autoptr(GSource) source = NULL;

		if (slot->thread == NULL)
			continue;
		source = g_idle_source_new();
		g_source_set_callback(source, quit_slot, slot, NULL);
		g_source_attach(source, slot->context);
	}
	for (guint i = 0; i < self->slots->len; i++) {
		Slot *slot = g_ptr_array_index(self->slots, i);
		if (slot->thread != NULL)
			g_thread_join(g_steal_pointer(&slot->thread));
	}
}
