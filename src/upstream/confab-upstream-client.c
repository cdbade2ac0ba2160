/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabUpstreamClient"

#include "config.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>

#include "upstream/confab-upstream-client.h"
#include "upstream/confab-upstream-response-parser.h"
#include "util/confab-http-fields.h"
#include "util/confab-source.h"

/*
 * The HTTP/1.1 client Confab talks to its upstreams with: one POST at a
 * time per connection, connections kept alive in a pool per scheme, host
 * and port, at most max_connections of them open; requests beyond that
 * wait for one. It does on the main loop only what a relay needs:
 *
 *  - the request (head and body) goes out in one writev(2);
 *  - each connection has one source watching its socket for its whole
 *    life, so a request on a kept-alive connection changes nothing in the
 *    main context's poll set (with GLib 2.74 every change to it wakes the
 *    loop through its eventfd); an idle connection that turns readable was
 *    closed by the upstream and is dropped;
 *  - the response is read into one buffer shared by all connections and
 *    handed on undecoded but de-chunked, piece by piece, as it arrives;
 *  - a dispatch reads at most READS_PER_DISPATCH buffers, then returns to
 *    the main loop, however fast the upstream sends: the callers' timers
 *    (first byte, idle, total) and every other connection get their turn.
 *    A plain socket that still has data is readable again at once; a TLS
 *    stream may hold decrypted bytes the socket does not show, so it
 *    resumes from an idle source of the same priority;
 *  - a kept-alive connection that the upstream closed in the meantime
 *    (nothing of a response arrived) is replaced once by a new one.
 *
 * TLS (https) and proxies come from GSocketClient and glib-networking.
 * Everything runs in the thread-default main context of the caller of
 * confab_upstream_client_new().
 */

#define READ_BUFFER	   16384
#define READS_PER_DISPATCH 4 /* 64 KiB, then the main loop runs */

typedef struct _Conn Conn;

struct _ConfabUpstreamExchange {
	gint ref_count;
	ConfabUpstreamClient *client; /* owned */
	const ConfabUpstreamHandler *handler;
	gpointer user_data;
	gchar *key;  /* owned: scheme://host:port */
	gchar *host; /* owned */
	guint16 port;
	gboolean tls;
	gchar *head; /* owned; wiped when freed: it may hold a key */
	gsize head_len;
	GBytes *body; /* owned */
	gsize written;
	Conn *conn;			      /* owned while attached */
	GCancellable *cancellable;	      /* owned: the connect's, if any */
	ConfabUpstreamResponseParser *parser; /* owned */
	gboolean reused;		      /* the connection came from the pool */
	gboolean retried;		      /* a stale connection was replaced */
	gboolean fresh;			      /* take no connection from the pool */
	gboolean sent;
	gboolean paused;   /* the caller holds reading back */
	gboolean waiting;  /* in client->waiting */
	gboolean finished; /* done, or aborted: nothing more happens */
};

struct _Conn {
	ConfabUpstreamClient *client; /* unowned: it frees its connections */
	gchar *key;		      /* owned */
	GIOStream *stream;	      /* owned */
	GSocket *socket;	      /* unowned: the stream's */
	GPollableInputStream *in;     /* unowned: the stream's */
	GPollableOutputStream *out;   /* unowned: the stream's */
	gboolean tls;
	GSource *watch;			  /* owned: G_IO_IN on the socket, but while paused */
	GSource *write_source;		  /* owned: while a write waits */
	GSource *resume_source;		  /* owned: TLS reading resumes */
	ConfabUpstreamExchange *exchange; /* unowned: the one using it */
	gint64 idle_since;
};

struct _ConfabUpstreamClient {
	GObject parent_instance;
	GSocketClient *plain; /* owned */
	GSocketClient *tls;   /* owned */
	gchar *user_agent;    /* owned */
	guint max_connections;
	guint idle_timeout;  /* s */
	guint n_connections; /* open or opening */
	guint n_idle;
	GHashTable *idle; /* owned: key -> GQueue of Conn, most recent last */
	GQueue waiting;	  /* of ConfabUpstreamExchange (a ref each) */
	GSource *sweep;	  /* owned */
	gchar *buffer;	  /* owned: READ_BUFFER bytes, shared */
};

G_DEFINE_FINAL_TYPE(ConfabUpstreamClient, confab_upstream_client, G_TYPE_OBJECT)

static void
exchange_start(ConfabUpstreamExchange *ex);
static void
exchange_read(ConfabUpstreamExchange *ex);
static void
client_slot_freed(ConfabUpstreamClient *self);
static gboolean
on_resume(gpointer user_data);
static void
conn_unwatch(Conn *conn);

static ConfabUpstreamExchange *
exchange_ref(ConfabUpstreamExchange *ex)
{
	g_atomic_int_inc(&ex->ref_count);
	return ex;
}

/**
 * confab_upstream_client_exchange_unref:
 * @exchange: an exchange from confab_upstream_client_post()
 *
 * Drops the caller's reference. A running exchange goes on; abort it
 * first if its callbacks must not run any more.
 */
void
confab_upstream_client_exchange_unref(ConfabUpstreamExchange *ex)
{
	if (!g_atomic_int_dec_and_test(&ex->ref_count))
		return;
	g_assert(ex->conn == NULL);
	g_clear_object(&ex->parser);
	g_clear_object(&ex->cancellable);
	g_free(ex->host);
	g_clear_pointer(&ex->body, g_bytes_unref);
	if (ex->head != NULL) {
		memset(ex->head, 0, ex->head_len);
		g_free(ex->head);
	}
	g_free(ex->key);
	g_clear_object(&ex->client);
	g_free(ex);
}

/* ---------- connections ---------- */

static void
conn_free(Conn *conn)
{
	ConfabUpstreamClient *self = conn->client;

	if (conn->write_source != NULL) {
		g_source_destroy(conn->write_source);
		g_source_unref(conn->write_source);
	}
	if (conn->resume_source != NULL) {
		g_source_destroy(conn->resume_source);
		g_source_unref(conn->resume_source);
	}
	if (conn->watch != NULL) {
		g_source_destroy(conn->watch);
		g_source_unref(conn->watch);
	}
	g_socket_close(conn->socket, NULL);
	g_object_unref(conn->stream);
	g_free(conn->key);
	g_free(conn);
	self->n_connections--;
	client_slot_freed(self);
}

static void
pool_remove(ConfabUpstreamClient *self, Conn *conn)
{
	GQueue *queue = g_hash_table_lookup(self->idle, conn->key);
	if (queue != NULL && g_queue_remove(queue, conn))
		self->n_idle--;
}

static gboolean
on_conn_readable(GSocket *socket, GIOCondition condition, gpointer user_data)
{
	Conn *conn = user_data;
	gchar byte;
	gssize n;
	g_autoptr(GError) error = NULL;

	if (conn->exchange != NULL && conn->exchange->paused) {
		conn_unwatch(conn);
		return G_SOURCE_CONTINUE; /* destroyed already */
	}
	if (conn->exchange != NULL) {
		exchange_read(conn->exchange);
		return G_SOURCE_CONTINUE;
	}
	/* idle: TLS may have had housekeeping to read (a session ticket);
	 * anything else means the upstream closed it or talks out of turn */
	n = g_pollable_input_stream_read_nonblocking(conn->in, &byte, 1, NULL, &error);
	if (n < 0 && g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
		return G_SOURCE_CONTINUE;
	pool_remove(conn->client, conn);
	conn_free(conn);
	return G_SOURCE_CONTINUE; /* destroyed already */
}

/* The socket's watch: for the connection's life, but while an exchange is
 * paused. */
static void
conn_watch(Conn *conn)
{
	if (conn->watch != NULL)
		return;
	conn->watch = g_socket_create_source(conn->socket, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
	g_source_set_callback(conn->watch, G_SOURCE_FUNC(on_conn_readable), conn, NULL);
	g_source_set_static_name(conn->watch, "[confab] upstream connection");
	/* not taken out of the poll set and put back, with a wake-up of the
	 * context each time, for each dispatch: nothing iterates the context
	 * from a callback */
	g_source_set_can_recurse(conn->watch, TRUE);
	g_source_attach(conn->watch, g_main_context_get_thread_default());
}

static void
conn_unwatch(Conn *conn)
{
	if (conn->watch == NULL)
		return;
	g_source_destroy(conn->watch);
	g_clear_pointer(&conn->watch, g_source_unref);
}

static Conn *
conn_new(ConfabUpstreamClient *self, const gchar *key, GSocketConnection *connection, gboolean tls)
{
	Conn *conn = g_new0(Conn, 1);

	conn->client = self;
	conn->key = g_strdup(key);
	conn->stream = G_IO_STREAM(connection);
	conn->socket = g_socket_connection_get_socket(connection);
	conn->in = G_POLLABLE_INPUT_STREAM(g_io_stream_get_input_stream(conn->stream));
	conn->out = G_POLLABLE_OUTPUT_STREAM(g_io_stream_get_output_stream(conn->stream));
	conn->tls = tls;
	/* the request goes out in one write; the reply should come at once */
	(void)g_socket_set_option(conn->socket, IPPROTO_TCP, TCP_NODELAY, 1, NULL);
	conn_watch(conn);
	return conn;
}

static gboolean
sweep(gpointer user_data)
{
	ConfabUpstreamClient *self = user_data;
	gint64 now = g_get_monotonic_time();
	gint64 limit = (gint64)self->idle_timeout * G_USEC_PER_SEC;
	GHashTableIter iter;
	GQueue *queue;
	GPtrArray *stale = g_ptr_array_new();

	g_hash_table_iter_init(&iter, self->idle);
	while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&queue)) {
		for (GList *l = queue->head; l != NULL; l = l->next) {
			Conn *conn = l->data;
			if (now - conn->idle_since >= limit)
				g_ptr_array_add(stale, conn);
		}
	}
	for (guint i = 0; i < stale->len; i++) {
		pool_remove(self, stale->pdata[i]);
		conn_free(stale->pdata[i]);
	}
	g_ptr_array_free(stale, TRUE);
	if (self->n_idle == 0) {
		g_clear_pointer(&self->sweep, g_source_unref);
		return G_SOURCE_REMOVE;
	}
	return G_SOURCE_CONTINUE;
}

/* A connection with nothing to do: to a waiting exchange, or the pool. */
static void
pool_put(ConfabUpstreamClient *self, Conn *conn)
{
	GQueue *queue;

	for (GList *l = self->waiting.head; l != NULL; l = l->next) {
		ConfabUpstreamExchange *ex = l->data;
		if (!ex->fresh && strcmp(ex->key, conn->key) == 0) {
			g_queue_delete_link(&self->waiting, l);
			ex->waiting = FALSE;
			ex->conn = conn;
			ex->reused = TRUE;
			conn->exchange = ex;
			exchange_start(ex);
			confab_upstream_client_exchange_unref(ex);
			return;
		}
	}
	if (self->waiting.length > 0) {
		/* others wait for a connection elsewhere: make room */
		conn_free(conn);
		return;
	}
	queue = g_hash_table_lookup(self->idle, conn->key);
	if (queue == NULL) {
		queue = g_queue_new();
		g_hash_table_insert(self->idle, g_strdup(conn->key), queue);
	}
	conn->idle_since = g_get_monotonic_time();
	g_queue_push_tail(queue, conn);
	self->n_idle++;
	if (self->sweep == NULL && self->idle_timeout > 0)
		self->sweep =
		    confab_source_add_timeout_seconds(MAX(self->idle_timeout / 2, 1), sweep, self);
}

static Conn *
pool_take(ConfabUpstreamClient *self, const gchar *key)
{
	GQueue *queue = g_hash_table_lookup(self->idle, key);
	Conn *conn = queue != NULL ? g_queue_pop_tail(queue) : NULL;
	if (conn != NULL)
		self->n_idle--;
	return conn;
}

/* Closes an idle connection to any host, to make room for one elsewhere. */
static void
pool_evict_one(ConfabUpstreamClient *self)
{
	GHashTableIter iter;
	GQueue *queue;

	g_hash_table_iter_init(&iter, self->idle);
	while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&queue)) {
		Conn *conn = g_queue_pop_head(queue);
		if (conn != NULL) {
			self->n_idle--;
			conn_free(conn);
			return;
		}
	}
}

/* ---------- exchanges ---------- */

static void
exchange_detach(ConfabUpstreamExchange *ex, gboolean keep)
{
	Conn *conn = g_steal_pointer(&ex->conn);

	if (conn == NULL)
		return;
	conn->exchange = NULL;
	if (conn->write_source != NULL) {
		g_source_destroy(conn->write_source);
		g_clear_pointer(&conn->write_source, g_source_unref);
	}
	if (conn->resume_source != NULL) {
		g_source_destroy(conn->resume_source);
		g_clear_pointer(&conn->resume_source, g_source_unref);
	}
	if (keep) {
		/* paused by the very piece that ended the response */
		conn_watch(conn);
		pool_put(ex->client, conn);
	} else {
		conn_free(conn);
	}
}

static void
exchange_unwait(ConfabUpstreamExchange *ex)
{
	if (ex->waiting) {
		ex->waiting = FALSE;
		g_queue_remove(&ex->client->waiting, ex);
		confab_upstream_client_exchange_unref(ex);
	}
}

/* The end: the connection goes back to the pool (@keep) or is closed, and
 * the caller hears @error (or success). Drops the running reference. */
static void
exchange_finish(ConfabUpstreamExchange *ex, GError *error, gboolean keep)
{
	if (ex->finished) {
		g_clear_error(&error);
		return;
	}
	ex->finished = TRUE;
	exchange_unwait(ex);
	exchange_detach(ex, keep && error == NULL);
	ex->handler->done(error, ex->user_data);
	confab_upstream_client_exchange_unref(ex);
}

/**
 * confab_upstream_client_exchange_abort:
 * @exchange: an exchange from confab_upstream_client_post()
 *
 * Stops the exchange: its connection is closed (the upstream sees the
 * request abandoned) and none of its callbacks runs any more. Safe from
 * inside them, and on a finished exchange.
 */
void
confab_upstream_client_exchange_abort(ConfabUpstreamExchange *ex)
{
	if (ex->finished)
		return;
	ex->finished = TRUE;
	confab_upstream_response_parser_stop(ex->parser);
	if (ex->cancellable != NULL)
		g_cancellable_cancel(ex->cancellable);
	exchange_unwait(ex);
	exchange_detach(ex, FALSE);
	confab_upstream_client_exchange_unref(ex);
}

/**
 * confab_upstream_client_exchange_pause:
 * @exchange: a running exchange
 *
 * Stops reading the response: the upstream is held back by TCP's own flow
 * control once the socket's buffers fill. The piece being handed to the
 * body callback is finished first. Safe from inside the callbacks.
 */
void
confab_upstream_client_exchange_pause(ConfabUpstreamExchange *ex)
{
	if (ex->finished || ex->paused)
		return;
	ex->paused = TRUE;
	if (ex->conn != NULL) {
		conn_unwatch(ex->conn);
		if (ex->conn->resume_source != NULL) {
			g_source_destroy(ex->conn->resume_source);
			g_clear_pointer(&ex->conn->resume_source, g_source_unref);
		}
	}
}

/**
 * confab_upstream_client_exchange_resume:
 * @exchange: an exchange
 *
 * Reads the response again, from the main loop (never from here).
 */
void
confab_upstream_client_exchange_resume(ConfabUpstreamExchange *ex)
{
	Conn *conn = ex->conn;

	if (!ex->paused)
		return;
	ex->paused = FALSE;
	if (ex->finished || conn == NULL)
		return;
	conn_watch(conn);
	/* what arrived meanwhile (or TLS holds decrypted) is read at once */
	if (conn->resume_source == NULL) {
		conn->resume_source = g_idle_source_new();
		g_source_set_priority(conn->resume_source, G_PRIORITY_DEFAULT);
		g_source_set_callback(conn->resume_source, on_resume, conn, NULL);
		g_source_set_static_name(conn->resume_source, "[confab] upstream read resumes");
		g_source_attach(conn->resume_source, g_main_context_get_thread_default());
	}
}

/* A kept-alive connection the upstream had closed: once, a new one. */
static gboolean
exchange_retry_stale(ConfabUpstreamExchange *ex)
{
	if (!ex->reused || ex->retried || confab_upstream_response_parser_started(ex->parser))
		return FALSE;
	g_debug("a kept-alive connection to %s was closed; opening another", ex->key);
	ex->retried = TRUE;
	ex->fresh = TRUE;
	ex->reused = FALSE;
	ex->written = 0;
	confab_upstream_response_parser_reset(ex->parser, FALSE);
	exchange_detach(ex, FALSE);
	exchange_start(ex);
	return TRUE;
}

static void
exchange_write(ConfabUpstreamExchange *ex);

/* head and body */
static gsize
exchange_request_len(ConfabUpstreamExchange *ex)
{
	return ex->head_len + (ex->body != NULL ? g_bytes_get_size(ex->body) : 0);
}

static gboolean
on_writable(GObject *stream, gpointer user_data)
{
	ConfabUpstreamExchange *ex = user_data;
	Conn *conn = ex->conn;

	g_clear_pointer(&conn->write_source, g_source_unref);
	exchange_write(ex);
	return G_SOURCE_REMOVE;
}

static void
exchange_write(ConfabUpstreamExchange *ex)
{
	gsize body_len = 0;
	const gchar *body = ex->body != NULL ? g_bytes_get_data(ex->body, &body_len) : NULL;
	gsize total = exchange_request_len(ex);
	Conn *conn = ex->conn;

	while (ex->written < total) {
		GOutputVector vectors[2];
		guint n = 0;
		gsize wrote = 0;
		GError *error = NULL;
		GPollableReturn ret;

		if (ex->written < ex->head_len) {
			vectors[n].buffer = ex->head + ex->written;
			vectors[n++].size = ex->head_len - ex->written;
			if (body_len > 0) {
				vectors[n].buffer = body;
				vectors[n++].size = body_len;
			}
		} else {
			vectors[n].buffer = body + (ex->written - ex->head_len);
			vectors[n++].size = total - ex->written;
		}
		ret = g_pollable_output_stream_writev_nonblocking(conn->out,
								  vectors,
								  n,
								  &wrote,
								  NULL,
								  &error);
		if (ret == G_POLLABLE_RETURN_WOULD_BLOCK) {
			conn->write_source =
			    g_pollable_output_stream_create_source(conn->out, NULL);
			g_source_set_callback(conn->write_source,
					      G_SOURCE_FUNC(on_writable),
					      ex,
					      NULL);
			g_source_set_can_recurse(conn->write_source, TRUE); /* as the watch */
			g_source_attach(conn->write_source, g_main_context_get_thread_default());
			return;
		}
		if (ret == G_POLLABLE_RETURN_FAILED) {
			if (exchange_retry_stale(ex)) {
				g_error_free(error);
				return;
			}
			exchange_finish(ex, error, FALSE);
			return;
		}
		ex->written += wrote;
	}
	if (!ex->sent) {
		ex->sent = TRUE;
		if (ex->handler->sent != NULL)
			ex->handler->sent(ex->user_data);
	}
}

static gboolean
on_resume(gpointer user_data)
{
	Conn *conn = user_data;

	g_clear_pointer(&conn->resume_source, g_source_unref);
	if (conn->exchange != NULL)
		exchange_read(conn->exchange);
	return G_SOURCE_REMOVE;
}

/* Reads what the connection has, READS_PER_DISPATCH buffers at most. */
static void
exchange_read(ConfabUpstreamExchange *ex)
{
	ConfabUpstreamClient *self = ex->client;
	guint reads = 0;

	exchange_ref(ex);
	while (!ex->finished && !ex->paused) {
		Conn *conn = ex->conn;
		GError *error = NULL;
		gsize consumed = 0;
		gssize n;

		if (reads++ == READS_PER_DISPATCH) {
			/* enough for one dispatch: let the loop run */
			if (conn->tls && conn->resume_source == NULL) {
				conn->resume_source = g_idle_source_new();
				g_source_set_priority(conn->resume_source, G_PRIORITY_DEFAULT);
				g_source_set_callback(conn->resume_source, on_resume, conn, NULL);
				g_source_set_static_name(conn->resume_source,
							 "[confab] upstream read resumes");
				g_source_attach(conn->resume_source,
						g_main_context_get_thread_default());
			}
			break;
		}
		n = g_pollable_input_stream_read_nonblocking(conn->in,
							     self->buffer,
							     READ_BUFFER,
							     NULL,
							     &error);
		if (n < 0) {
			if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
				g_error_free(error);
				break;
			}
			if (exchange_retry_stale(ex)) {
				g_error_free(error);
				break;
			}
			exchange_finish(ex, error, FALSE);
			break;
		}
		if (n == 0) {
			if (confab_upstream_response_parser_eof(ex->parser, &error) ==
			    CONFAB_UPSTREAM_PARSE_DONE) {
				exchange_finish(ex, NULL, FALSE);
			} else if (exchange_retry_stale(ex)) {
				g_error_free(error);
			} else {
				exchange_finish(ex, error, FALSE);
			}
			break;
		}
		switch (confab_upstream_response_parser_feed(ex->parser,
							     self->buffer,
							     (gsize)n,
							     &consumed,
							     &error)) {
		case CONFAB_UPSTREAM_PARSE_DONE:
			/* bytes past the response, or a request not all
			 * written: the connection is not fit for another */
			exchange_finish(
			    ex,
			    NULL,
			    consumed == (gsize)n &&
				confab_upstream_response_parser_keep_alive(ex->parser) &&
				ex->written == exchange_request_len(ex));
			break;
		case CONFAB_UPSTREAM_PARSE_ERROR:
			exchange_finish(ex, error, FALSE);
			break;
		case CONFAB_UPSTREAM_PARSE_STOPPED:
			break;
		case CONFAB_UPSTREAM_PARSE_MORE:
		default:
			/* a short read drained the socket; TLS may hold more
			 * than the socket shows, so it reads until it blocks */
			if (!conn->tls && n < READ_BUFFER)
				goto out;
			continue;
		}
	}
out:
	confab_upstream_client_exchange_unref(ex);
}

static void
on_head(guint status, const gchar *reason, const ConfabHttpFields *fields, gpointer user_data)
{
	ConfabUpstreamExchange *ex = user_data;
	ex->handler->head(status, reason, fields, ex->user_data);
}

static void
on_body(const gchar *data, gsize len, gpointer user_data)
{
	ConfabUpstreamExchange *ex = user_data;
	if (!ex->finished)
		ex->handler->body(data, len, ex->user_data);
}

static void
on_connected(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConfabUpstreamExchange *ex = user_data;
	ConfabUpstreamClient *self = ex->client;
	GError *error = NULL;
	GSocketConnection *connection =
	    g_socket_client_connect_finish(G_SOCKET_CLIENT(source), result, &error);

	if (ex->finished) {
		/* aborted meanwhile */
		if (connection != NULL) {
			g_io_stream_close(G_IO_STREAM(connection), NULL, NULL);
			g_object_unref(connection);
		}
		g_clear_error(&error);
		self->n_connections--;
		client_slot_freed(self);
	} else if (connection == NULL) {
		self->n_connections--;
		client_slot_freed(self);
		exchange_finish(ex, error, FALSE);
	} else {
		ex->conn = conn_new(self, ex->key, connection, ex->tls);
		ex->conn->exchange = ex;
		exchange_write(ex);
	}
	confab_upstream_client_exchange_unref(ex);
}

static void
exchange_connect(ConfabUpstreamExchange *ex)
{
	ConfabUpstreamClient *self = ex->client;
	g_autoptr(GSocketConnectable) address = g_network_address_new(ex->host, ex->port);

	self->n_connections++;
	if (ex->cancellable == NULL)
		ex->cancellable = g_cancellable_new();
	g_socket_client_connect_async(ex->tls ? self->tls : self->plain,
				      address,
				      ex->cancellable,
				      on_connected,
				      exchange_ref(ex));
}

/* Finds the exchange a connection: from the pool, a new one, or a wait. */
static void
exchange_start(ConfabUpstreamExchange *ex)
{
	ConfabUpstreamClient *self = ex->client;

	if (ex->conn == NULL && !ex->fresh) {
		ex->conn = pool_take(self, ex->key);
		if (ex->conn != NULL) {
			ex->conn->exchange = ex;
			ex->reused = TRUE;
		}
	}
	if (ex->conn != NULL) {
		exchange_write(ex);
		return;
	}
	/* idle connections exist only while nobody waits: closing one starts
	 * no waiter, and frees a slot for this exchange */
	if (self->n_connections >= self->max_connections)
		pool_evict_one(self);
	if (self->n_connections < self->max_connections) {
		exchange_connect(ex);
		return;
	}
	ex->waiting = TRUE;
	g_queue_push_tail(&self->waiting, exchange_ref(ex));
}

/* A connection closed or failed to open: the first waiter may open one. */
static void
client_slot_freed(ConfabUpstreamClient *self)
{
	ConfabUpstreamExchange *ex;

	if (self->n_connections >= self->max_connections)
		return;
	ex = g_queue_pop_head(&self->waiting);
	if (ex == NULL)
		return;
	ex->waiting = FALSE;
	exchange_connect(ex);
	confab_upstream_client_exchange_unref(ex);
}

/**
 * confab_upstream_client_request:
 * @self: a #ConfabUpstreamClient
 * @method: the request method, such as "POST", "GET" or "DELETE"
 * @url: an http:// or https:// URL
 * @extra_headers: (nullable): more header lines, each ending in "\r\n"
 * @content_type: (nullable): the body's media type; with a %NULL @body
 *   too, the request has no body and no Content-Length
 * @body: (nullable): the body
 * @handler: what to call as the exchange goes; must outlive it
 * @user_data: data for @handler
 * @error: return location for an error in the URL
 *
 * Sends a request to @url. Only @handler's sent callback may run before
 * this returns; head, body and done come from the main loop.
 *
 * Returns: (transfer full): the running exchange, or %NULL for a URL it
 *   cannot reach
 */
ConfabUpstreamExchange *
confab_upstream_client_request(ConfabUpstreamClient *self,
			       const gchar *method,
			       const gchar *url,
			       const gchar *extra_headers,
			       const gchar *content_type,
			       GBytes *body,
			       const ConfabUpstreamHandler *handler,
			       gpointer user_data,
			       GError **error)
{
	g_autoptr(GUri) uri = NULL;
	ConfabUpstreamExchange *ex;
	const gchar *scheme, *host, *path, *query;
	gboolean tls;
	gint port;
	g_autofree gchar *host_header = NULL;
	g_autoptr(GString) head = NULL;

	g_return_val_if_fail(CONFAB_IS_UPSTREAM_CLIENT(self), NULL);
	g_return_val_if_fail(method != NULL, NULL);
	g_return_val_if_fail(handler != NULL && handler->head != NULL && handler->body != NULL &&
				 handler->done != NULL,
			     NULL);

	uri = g_uri_parse(url, G_URI_FLAGS_ENCODED, error);
	if (uri == NULL)
		return NULL;
	scheme = g_uri_get_scheme(uri);
	host = g_uri_get_host(uri);
	if (g_ascii_strcasecmp(scheme, "http") == 0) {
		tls = FALSE;
	} else if (g_ascii_strcasecmp(scheme, "https") == 0) {
		tls = TRUE;
	} else {
		g_set_error(error,
			    G_IO_ERROR,
			    G_IO_ERROR_NOT_SUPPORTED,
			    "Unsupported URL scheme “%s”",
			    scheme);
		return NULL;
	}
	if (host == NULL || *host == '\0') {
		g_set_error_literal(error,
				    G_IO_ERROR,
				    G_IO_ERROR_INVALID_ARGUMENT,
				    "No host in the URL");
		return NULL;
	}
	port = g_uri_get_port(uri);
	if (port <= 0)
		port = tls ? 443 : 80;
	path = g_uri_get_path(uri);
	query = g_uri_get_query(uri);

	if (strchr(host, ':') != NULL)
		host_header = g_strdup_printf("[%s]", host);
	else
		host_header = g_strdup(host);
	if (port != (tls ? 443 : 80)) {
		gchar *with_port = g_strdup_printf("%s:%d", host_header, port);
		g_free(host_header);
		host_header = with_port;
	}

	/* appended piece by piece: printf's formatting was a third of
	 * this function's work, twice per turn */
	head = g_string_sized_new(512);
	g_string_append(head, method);
	g_string_append_c(head, ' ');
	g_string_append(head, path != NULL && *path != '\0' ? path : "/");
	if (query != NULL) {
		g_string_append_c(head, '?');
		g_string_append(head, query);
	}
	g_string_append(head, " HTTP/1.1\r\nHost: ");
	g_string_append(head, host_header);
	g_string_append(head, "\r\nUser-Agent: ");
	g_string_append(head, self->user_agent);
	g_string_append(head, "\r\n");
	if (extra_headers != NULL)
		g_string_append(head, extra_headers);
	if (content_type != NULL || body != NULL) {
		g_string_append(head, "Content-Type: ");
		g_string_append(head,
				content_type != NULL ? content_type : "application/octet-stream");
		g_string_append(head, "\r\nContent-Length: ");
		confab_http_fields_append_uint(head, body != NULL ? g_bytes_get_size(body) : 0);
		g_string_append(head, "\r\n");
	}
	g_string_append(head, "\r\n");

	ex = g_new0(ConfabUpstreamExchange, 1);
	ex->ref_count = 2; /* the caller's, and the running one */
	ex->client = g_object_ref(self);
	ex->handler = handler;
	ex->user_data = user_data;
	ex->tls = tls;
	ex->key = g_strdup_printf("%s://%s:%d", tls ? "https" : "http", host, port);
	ex->host = g_strdup(host);
	ex->port = (guint16)port;
	ex->head_len = head->len;
	ex->head = g_string_free(g_steal_pointer(&head), FALSE);
	ex->body = body != NULL ? g_bytes_ref(body) : NULL;
	ex->parser = confab_upstream_response_parser_new(on_head, on_body, ex);
	exchange_start(ex);
	return ex;
}

/**
 * confab_upstream_client_post:
 * @self: a #ConfabUpstreamClient
 * @url: an http:// or https:// URL
 * @extra_headers: (nullable): more header lines, each ending in "\r\n"
 * @content_type: the body's media type
 * @body: the body
 * @handler: what to call as the exchange goes; must outlive it
 * @user_data: data for @handler
 * @error: return location for an error in the URL
 *
 * POSTs @body to @url: confab_upstream_client_request() with "POST".
 *
 * Returns: (transfer full): the running exchange, or %NULL for a URL it
 *   cannot reach
 */
ConfabUpstreamExchange *
confab_upstream_client_post(ConfabUpstreamClient *self,
			    const gchar *url,
			    const gchar *extra_headers,
			    const gchar *content_type,
			    GBytes *body,
			    const ConfabUpstreamHandler *handler,
			    gpointer user_data,
			    GError **error)
{
	g_return_val_if_fail(content_type != NULL, NULL);
	return confab_upstream_client_request(self,
					      "POST",
					      url,
					      extra_headers,
					      content_type,
					      body,
					      handler,
					      user_data,
					      error);
}

/**
 * confab_upstream_client_get_n_connections:
 * @self: a #ConfabUpstreamClient
 *
 * Returns: the connections open or opening, busy or idle
 */
guint
confab_upstream_client_get_n_connections(ConfabUpstreamClient *self)
{
	g_return_val_if_fail(CONFAB_IS_UPSTREAM_CLIENT(self), 0);
	return self->n_connections;
}

static void
confab_upstream_client_finalize(GObject *object)
{
	ConfabUpstreamClient *self = CONFAB_UPSTREAM_CLIENT(object);
	GHashTableIter iter;
	GQueue *queue;

	/* exchanges hold the client: none is left, only idle connections */
	confab_source_clear(&self->sweep);
	self->max_connections = 0; /* nobody waits: start nothing */
	g_hash_table_iter_init(&iter, self->idle);
	while (g_hash_table_iter_next(&iter, NULL, (gpointer *)&queue)) {
		Conn *conn;
		while ((conn = g_queue_pop_head(queue)) != NULL)
			conn_free(conn);
	}
	g_hash_table_unref(self->idle);
	g_clear_object(&self->plain);
	g_clear_object(&self->tls);
	g_free(self->user_agent);
	g_free(self->buffer);
	G_OBJECT_CLASS(confab_upstream_client_parent_class)->finalize(object);
}

static void
confab_upstream_client_class_init(ConfabUpstreamClientClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_upstream_client_finalize;
}

static void
confab_upstream_client_init(ConfabUpstreamClient *self)
{
	self->idle =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_queue_free);
	g_queue_init(&self->waiting);
	self->buffer = g_malloc(READ_BUFFER);
}

static GSocketClient *
socket_client_new(gboolean tls, GProxyResolver *proxy_resolver)
{
	GSocketClient *client = g_socket_client_new();

	g_socket_client_set_tls(client, tls);
	if (proxy_resolver != NULL) {
		g_socket_client_set_proxy_resolver(client, proxy_resolver);
	} else {
		/* the default resolver would ask libproxy on every connect */
		g_socket_client_set_enable_proxy(client, FALSE);
	}
	return client;
}

/**
 * confab_upstream_client_new:
 * @user_agent: the User-Agent of every request
 * @max_connections: the most connections open at once, to all upstreams
 * @idle_timeout: seconds after which an unused connection is closed
 * @proxy_resolver: (nullable): where proxies come from; %NULL for none
 *
 * Returns: (transfer full): a client for the thread-default main context
 */
ConfabUpstreamClient *
confab_upstream_client_new(const gchar *user_agent,
			   guint max_connections,
			   guint idle_timeout,
			   GProxyResolver *proxy_resolver)
{
	ConfabUpstreamClient *self = g_object_new(CONFAB_TYPE_UPSTREAM_CLIENT, NULL);

	self->user_agent = g_strdup(user_agent);
	self->max_connections = MAX(max_connections, 1);
	self->idle_timeout = idle_timeout;
	self->plain = socket_client_new(FALSE, proxy_resolver);
	self->tls = socket_client_new(TRUE, proxy_resolver);
	return self;
}
