/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <glib-unix.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "http/server/confab-http-server-group.h"
#include "http/server/confab-http-server-private.h"
#include "openai/confab-openai-error.h"
#include "util/confab-error.h"

/*
 * Confab's HTTP/1.1 server: the only code that reads and writes client
 * sockets. One GSource per connection watches its descriptor; requests are
 * parsed by ConfabHttpRequestParser (strict RFC 9112), handed to the
 * handler as a ConfabHttpExchange, and answered from an output queue
 * written with one sendmsg() of all that is queued.
 *
 * A connection is in one state at a time, each with its deadline, checked
 * by one timer per server twice a second:
 *
 *  IDLE     between requests: closed, silently, after idle_timeout
 *  HEAD     a head is arriving: it must be whole within idle_timeout
 *  BODY     a body is arriving: each read within idle_timeout of the
 *           last, the whole body within body_timeout (408 otherwise)
 *  BUSY     the handler has the request or its response is being written:
 *           a response that makes no progress for idle_timeout is cut
 *  CLOSING  the last response is out; what the client still sends is read
 *           and dropped for a moment, so that it reads the response rather
 *           than a reset
 *
 * While a request is served the connection is still read: a client that
 * leaves is heard at once (the exchange's gone function runs), and bytes of
 * a pipelined request wait, up to a bound, for their turn.
 */

#define READ_BUFFER	       65536
#define MAX_READS_PER_DISPATCH 4
#define MAX_PENDING	       65536
#define LINGER_SECONDS	       2
#define CUT_GRACE_SECONDS      5
#define SWEEP_MS	       500
#define MAX_IOV		       64
#define SMALL_PIECE	       4096
#define SEGMENT_BUFFER	       16384
#define ACCEPT_BATCH	       64
#define LISTEN_BACKLOG	       4096
#define MAX_FIELDS	       100
#define MAX_CHUNK_LINE	       4096

typedef enum {
	CONN_IDLE,
	CONN_HEAD,
	CONN_BODY,
	CONN_BUSY,
	CONN_CLOSING,
} ConnState;

/* A piece of output: bytes given by a handler, or small pieces copied
 * together into one buffer. */
typedef struct {
	GBytes *bytes;	 /* owned, nullable */
	GByteArray *buf; /* owned, nullable */
	gsize off;
} Segment;

typedef struct {
	GSource source;
	ConfabHttpConnection *conn; /* unowned */
} ConnSource;

struct _ConfabHttpConnection {
	gint ref;
	ConfabHttpServer *server; /* unowned; NULL once closed */
	gint fd;
	GSource *source; /* owned */
	gpointer fd_tag;
	GIOCondition events;
	GList link; /* in server->conns */
	gchar *peer;
	gboolean loopback;
	ConnState state;
	gint64 deadline;
	gint64 body_deadline;
	gint64 last_progress;
	ConfabHttpRequestParser *parser; /* owned */
	GByteArray *pending;		 /* owned, nullable: the next requests' bytes */
	GQueue out;			 /* Segment */
	gsize out_bytes;
	ConfabHttpExchange *exchange; /* owned: the request being served */
	gboolean body_done;
	gboolean close_after; /* close once the response is sent */
	gboolean in_process;
	gboolean resume; /* the response ended while process() ran */
	gsize body_accounted;
	gpointer data; /* owned: the handler's, for the connection's life */
	GDestroyNotify data_destroy;
	gboolean flush_queued; /* in server->to_flush */
};

struct _ConfabHttpServer {
	GObject parent_instance;
	ConfabHttpServerLimits limits;
	ConfabHttpServerHandler handler;
	gpointer handler_data;
	ConfabHttpRequestLimits parser_limits;
	GMainContext *context;	      /* owned */
	GSocket *listener;	      /* owned */
	GSource *accept_source;	      /* owned */
	GQueue conns;		      /* ConfabHttpConnection, by their link */
	ConfabHttpServerGroup *group; /* owned: the counts limited over threads */
	gboolean reuse_port;
	gint n_conns;	    /* atomic: conns.length, for other threads */
	GSource *sweep;	    /* owned */
	gchar *url;	    /* owned */
	gint active;	    /* atomic: exchanges between head and end */
	gchar *read_buffer; /* owned: one for every connection */
	gchar date[40];
	gint64 date_second;
	GSource *flusher; /* owned, nullable: writes what the pieces queued */
	GQueue to_flush;  /* ConfabHttpConnection, a reference each */
};

G_DEFINE_FINAL_TYPE(ConfabHttpServer, confab_http_server, G_TYPE_OBJECT)

static void
conn_close(ConfabHttpConnection *conn);
static void
conn_process(ConfabHttpConnection *conn, const gchar *data, gsize len);

/* ---------- responses on the wire ---------- */

static const gchar *
reason_phrase(guint status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 413:
		return "Content Too Large";
	case 415:
		return "Unsupported Media Type";
	case 417:
		return "Expectation Failed";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 505:
		return "HTTP Version Not Supported";
	case 500:
	default:
		return "Internal Server Error";
	}
}

static const gchar *
server_date(ConfabHttpServer *self)
{
	gint64 now = g_get_real_time() / G_USEC_PER_SEC;
	if (now != self->date_second) {
		time_t t = (time_t)now;
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(self->date, sizeof(self->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
		self->date_second = now;
	}
	return self->date;
}

/*
 * Every response head Confab sends, refusals included. @length is the
 * body's length, or -1 for a chunked body, or -2 for a body that ends when
 * the connection closes (HTTP/1.0).
 */
static void
append_head(GString *out,
	    ConfabHttpServer *server,
	    guint status,
	    const gchar *fields,
	    gint64 length,
	    gboolean close,
	    gboolean http10_keep_alive)
{
	/* no format: this runs for every response */
	g_string_append(out, "HTTP/1.1 ");
	confab_http_fields_append_uint(out, status);
	g_string_append_c(out, ' ');
	g_string_append(out, reason_phrase(status));
	g_string_append(out, "\r\nDate: ");
	g_string_append(out, server_date(server));
	g_string_append(out, "\r\nServer: confab/" PACKAGE_VERSION "\r\n");
	if (fields != NULL)
		g_string_append(out, fields);
	if (length >= 0) {
		g_string_append(out, "Content-Length: ");
		confab_http_fields_append_uint(out, (guint64)length);
		g_string_append(out, "\r\n");
	} else if (length == -1)
		g_string_append(out, "Transfer-Encoding: chunked\r\n");
	if (close)
		g_string_append(out, "Connection: close\r\n");
	else if (http10_keep_alive)
		g_string_append(out, "Connection: keep-alive\r\n");
	g_string_append(out, "\r\n");
}

/* ---------- the output queue ---------- */

static void
segment_free(Segment *seg)
{
	g_clear_pointer(&seg->bytes, g_bytes_unref);
	g_clear_pointer(&seg->buf, g_byte_array_unref);
	g_free(seg);
}

static const guint8 *
segment_data(Segment *seg, gsize *len)
{
	if (seg->bytes != NULL) {
		gsize size;
		const guint8 *data = g_bytes_get_data(seg->bytes, &size);
		*len = size - seg->off;
		return data + seg->off;
	}
	*len = seg->buf->len - seg->off;
	return seg->buf->data + seg->off;
}

/* Room for @len bytes in the last segment: a new one when it has none. */
static Segment *
queue_reserve(ConfabHttpConnection *conn, gsize len)
{
	Segment *tail = g_queue_peek_tail(&conn->out);

	if (tail == NULL || tail->buf == NULL || tail->buf->len + len > SEGMENT_BUFFER) {
		tail = g_new0(Segment, 1);
		tail->buf = g_byte_array_sized_new((guint)MAX(len, 512));
		g_queue_push_tail(&conn->out, tail);
	}
	return tail;
}

static void
queue_copy(ConfabHttpConnection *conn, const gchar *data, gsize len)
{
	Segment *tail;

	if (len == 0)
		return;
	tail = queue_reserve(conn, len);
	g_byte_array_append(tail->buf, (const guint8 *)data, (guint)len);
	conn->out_bytes += len;
}

static void
queue_bytes(ConfabHttpConnection *conn, GBytes *bytes)
{
	Segment *seg;
	gsize len = g_bytes_get_size(bytes);

	if (len == 0)
		return;
	if (len <= SMALL_PIECE) {
		queue_copy(conn, g_bytes_get_data(bytes, NULL), len);
		return;
	}
	seg = g_new0(Segment, 1);
	seg->bytes = g_bytes_ref(bytes);
	g_queue_push_tail(&conn->out, seg);
	conn->out_bytes += len;
}

static void
queue_clear(ConfabHttpConnection *conn)
{
	g_queue_clear_full(&conn->out, (GDestroyNotify)segment_free);
	conn->out_bytes = 0;
}

/*
 * A stream's flow: held once more than max_stream_buffer bytes wait
 * unsent, open again at half of that. Whoever produces the stream waits
 * for it, so a stream never outruns its reader by much more than the
 * buffer, and nothing is dropped for being slow.
 */
static void
conn_update_flow(ConfabHttpConnection *conn)
{
	ConfabHttpExchange *exchange = conn->exchange;
	gsize high;

	if (exchange == NULL || exchange->flow == NULL || conn->server == NULL)
		return;
	high = conn->server->limits.max_stream_buffer;
	if (conn->out_bytes > high)
		confab_flow_set_held(exchange->flow, TRUE);
	else if (conn->out_bytes <= high / 2)
		confab_flow_set_held(exchange->flow, FALSE);
}

/* ---------- connection basics ---------- */

static ConfabHttpConnection *
conn_ref(ConfabHttpConnection *conn)
{
	conn->ref++;
	return conn;
}

static void
conn_unref(ConfabHttpConnection *conn)
{
	if (--conn->ref > 0)
		return;
	g_assert(conn->fd < 0);
	queue_clear(conn);
	if (conn->data_destroy != NULL)
		conn->data_destroy(conn->data);
	g_clear_pointer(&conn->pending, g_byte_array_unref);
	confab_http_request_parser_free(conn->parser);
	g_free(conn->peer);
	g_free(conn);
}

static void
conn_set_events(ConfabHttpConnection *conn, GIOCondition events)
{
	if (conn->fd < 0 || events == conn->events)
		return;
	conn->events = events;
	g_source_modify_unix_fd(conn->source, conn->fd_tag, events);
}

static GIOCondition
conn_read_events(ConfabHttpConnection *conn)
{
	/* reading stops while too many pipelined bytes wait */
	if (conn->pending != NULL && conn->pending->len >= MAX_PENDING)
		return 0;
	return G_IO_IN;
}

static gint64
now_plus(guint seconds)
{
	return g_get_monotonic_time() + (gint64)seconds * G_USEC_PER_SEC;
}

void
confab_http_server_connection_set_data(ConfabHttpConnection *conn,
				       gpointer data,
				       GDestroyNotify destroy)
{
	if (conn->data_destroy != NULL)
		conn->data_destroy(conn->data);
	conn->data = data;
	conn->data_destroy = destroy;
}

gpointer
confab_http_server_connection_get_data(ConfabHttpConnection *conn)
{
	return conn->data;
}

const gchar *
confab_http_server_connection_get_peer(ConfabHttpConnection *conn)
{
	return conn->peer;
}

gboolean
confab_http_server_connection_is_loopback(ConfabHttpConnection *conn)
{
	return conn->loopback;
}

gsize
confab_http_server_connection_get_unsent(ConfabHttpConnection *conn)
{
	return conn->out_bytes;
}

static void
release_body(ConfabHttpConnection *conn)
{
	if (conn->server != NULL && conn->body_accounted > 0)
		confab_http_server_group_release_body(conn->server->group, conn->body_accounted);
	conn->body_accounted = 0;
}

/* The exchange is over, sent (@completed) or not. */
static void
conn_end_exchange(ConfabHttpConnection *conn, gboolean completed)
{
	g_autoptr(ConfabHttpExchange) exchange = g_steal_pointer(&conn->exchange);
	ConfabHttpServer *server = conn->server;

	if (exchange == NULL)
		return;
	release_body(conn);
	exchange->conn = NULL;
	exchange->finished = TRUE;
	if (exchange->flow != NULL)
		confab_flow_close(exchange->flow);
	if (server != NULL)
		g_atomic_int_add(&server->active, -1);
	if (!completed) {
		exchange->gone = TRUE;
		if (exchange->gone_func != NULL)
			exchange->gone_func(exchange, exchange->gone_data);
	}
	if (server != NULL && server->handler.finished != NULL)
		server->handler.finished(exchange, completed, server->handler_data);
}

/* Closes the connection now: anything unsent is dropped. */
static void
conn_close(ConfabHttpConnection *conn)
{
	ConfabHttpServer *server = conn->server;

	if (conn->fd < 0)
		return;
	conn_ref(conn);
	g_source_destroy(conn->source);
	g_clear_pointer(&conn->source, g_source_unref);
	close(conn->fd);
	conn->fd = -1;
	queue_clear(conn);
	if (server != NULL) {
		g_queue_unlink(&server->conns, &conn->link);
		g_atomic_int_set(&server->n_conns, server->conns.length);
		confab_http_server_group_remove_connection(server->group, conn->peer);
		if (server->conns.length == 0 && server->sweep != NULL) {
			g_source_destroy(server->sweep);
			g_clear_pointer(&server->sweep, g_source_unref);
		}
	}
	conn_end_exchange(conn, FALSE);
	conn->server = NULL;
	conn_unref(conn); /* the server's */
	conn_unref(conn);
}

/* The last response is sent: stop sending, read what still comes. */
static void
conn_linger(ConfabHttpConnection *conn)
{
	(void)shutdown(conn->fd, SHUT_WR);
	conn->state = CONN_CLOSING;
	conn->deadline = now_plus(LINGER_SECONDS);
	g_clear_pointer(&conn->pending, g_byte_array_unref);
	conn_set_events(conn, G_IO_IN);
}

static void
conn_resume(ConfabHttpConnection *conn)
{
	g_autoptr(GByteArray) pending = g_steal_pointer(&conn->pending);

	conn_set_events(conn, G_IO_IN);
	if (pending != NULL && pending->len > 0)
		conn_process(conn, (const gchar *)pending->data, pending->len);
}

/* The whole response is written. */
static void
conn_response_done(ConfabHttpConnection *conn)
{
	gboolean keep = !conn->close_after;

	conn_end_exchange(conn, TRUE);
	if (conn->fd < 0)
		return;
	confab_http_request_parser_reset(conn->parser);
	conn->body_done = FALSE;
	if (!keep) {
		conn_linger(conn);
		return;
	}
	conn->state = CONN_IDLE;
	conn->deadline = now_plus(conn->server->limits.idle_timeout);
	if (conn->in_process)
		conn->resume = TRUE;
	else
		conn_resume(conn);
}

static void
conn_sent_all(ConfabHttpConnection *conn)
{
	ConfabHttpExchange *exchange = conn->exchange;

	if (exchange == NULL) {
		if (conn->close_after && conn->state != CONN_CLOSING)
			conn_linger(conn);
		return;
	}
	if (exchange->ended) {
		conn_response_done(conn);
		return;
	}
	if (exchange->drained_func != NULL) {
		ConfabHttpExchangeFunc func = exchange->drained_func;
		exchange->drained_func = NULL;
		func(exchange, exchange->drained_data);
	}
}

/* Writes what is queued, as far as the socket takes it. */
static void
conn_write(ConfabHttpConnection *conn)
{
	while (conn->fd >= 0 && conn->out.length > 0) {
		struct iovec iov[MAX_IOV];
		struct msghdr msg = {0};
		guint n = 0;
		gssize sent;

		for (GList *l = conn->out.head; l != NULL && n < MAX_IOV; l = l->next) {
			gsize len;
			iov[n].iov_base = (gpointer)segment_data(l->data, &len);
			iov[n].iov_len = len;
			n++;
		}
		msg.msg_iov = iov;
		msg.msg_iovlen = n;
		sent = sendmsg(conn->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (sent < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				conn_set_events(conn, conn_read_events(conn) | G_IO_OUT);
				conn_update_flow(conn);
				return;
			}
			g_debug("writing to %s: %s", conn->peer, g_strerror(errno));
			conn_close(conn);
			return;
		}
		conn->out_bytes -= (gsize)sent;
		conn->last_progress = g_get_monotonic_time();
		while (sent > 0) {
			Segment *seg = g_queue_peek_head(&conn->out);
			gsize len;
			segment_data(seg, &len);
			if ((gsize)sent < len) {
				seg->off += (gsize)sent;
				break;
			}
			sent -= (gssize)len;
			segment_free(g_queue_pop_head(&conn->out));
		}
	}
	if (conn->fd < 0)
		return;
	conn_update_flow(conn);
	if (conn->events & G_IO_OUT)
		conn_set_events(conn,
				conn->state == CONN_CLOSING ? G_IO_IN : conn_read_events(conn));
	conn_sent_all(conn);
}

void
confab_http_server_connection_flush(ConfabHttpConnection *conn)
{
	/* waiting for the socket: the watch goes on when it can */
	if (conn->fd < 0 || (conn->events & G_IO_OUT))
		return;
	conn_ref(conn);
	conn_write(conn);
	conn_unref(conn);
}

/*
 * A stream's pieces go out together: each piece written in one main-loop
 * iteration (the deltas of one upstream read, say) is queued, and the
 * connection is written once, at the next iteration, in one sendmsg,
 * instead of once per piece.
 */
static gboolean
flusher_ready(GSource *source, gint *timeout)
{
	ConfabHttpServer *self = *(ConfabHttpServer **)(source + 1);

	if (timeout != NULL)
		*timeout = -1;
	return self->to_flush.length > 0;
}

static gboolean
flusher_check(GSource *source)
{
	return flusher_ready(source, NULL);
}

static gboolean
flusher_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
	ConfabHttpServer *self = *(ConfabHttpServer **)(source + 1);
	ConfabHttpConnection *conn;

	while ((conn = g_queue_pop_head(&self->to_flush)) != NULL) {
		conn->flush_queued = FALSE;
		confab_http_server_connection_flush(conn);
		conn_unref(conn);
	}
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs flusher_funcs = {
    .prepare = flusher_ready,
    .check = flusher_check,
    .dispatch = flusher_dispatch,
};

static void
queue_flush(ConfabHttpConnection *conn)
{
	ConfabHttpServer *self = conn->server;

	if (self == NULL || conn->fd < 0) {
		confab_http_server_connection_flush(conn);
		return;
	}
	if (conn->flush_queued)
		return;
	if (self->flusher == NULL) {
		self->flusher = g_source_new(&flusher_funcs, sizeof(GSource) + sizeof(gpointer));
		*(ConfabHttpServer **)(self->flusher + 1) = self;
		g_source_set_static_name(self->flusher, "[confab] http flush");
		g_source_attach(self->flusher, self->context);
	}
	conn->flush_queued = TRUE;
	g_queue_push_tail(&self->to_flush, conn_ref(conn));
}

static void
flusher_clear(ConfabHttpServer *self)
{
	ConfabHttpConnection *conn;

	while ((conn = g_queue_pop_head(&self->to_flush)) != NULL) {
		conn->flush_queued = FALSE;
		conn_unref(conn);
	}
	if (self->flusher != NULL) {
		g_source_destroy(self->flusher);
		g_clear_pointer(&self->flusher, g_source_unref);
	}
}

void
confab_http_server_connection_cut(ConfabHttpConnection *conn)
{
	g_debug("disconnecting %s", conn->peer);
	conn_close(conn);
}

/* ---------- responses ---------- */

static gboolean
conn_should_close(ConfabHttpConnection *conn, ConfabHttpExchange *exchange)
{
	/* a body left unread cannot be skipped safely */
	if (exchange->head.framing != CONFAB_HTTP_FRAMING_NONE && !conn->body_done)
		conn->close_after = TRUE;
	if (!exchange->head.keep_alive || conn->server == NULL)
		conn->close_after = TRUE;
	return conn->close_after;
}

static gboolean
is_head_request(ConfabHttpExchange *exchange)
{
	return g_strcmp0(exchange->head.method, "HEAD") == 0;
}

void
confab_http_server_connection_send_response(ConfabHttpConnection *conn,
					    ConfabHttpExchange *exchange,
					    GBytes *body)
{
	g_autoptr(GString) head = g_string_sized_new(256);
	gboolean close = conn_should_close(conn, exchange);

	append_head(head,
		    conn->server,
		    exchange->status,
		    exchange->headers->str,
		    body != NULL ? (gint64)g_bytes_get_size(body) : 0,
		    close,
		    exchange->head.version_minor == 0);
	conn->state = CONN_BUSY;
	/* a small body goes out in one buffer with the head, sized once */
	if (body != NULL && !is_head_request(exchange) && g_bytes_get_size(body) <= SMALL_PIECE)
		queue_reserve(conn, head->len + g_bytes_get_size(body));
	queue_copy(conn, head->str, head->len);
	if (body != NULL && !is_head_request(exchange))
		queue_bytes(conn, body);
	confab_http_server_connection_flush(conn);
}

void
confab_http_server_connection_send_stream_head(ConfabHttpConnection *conn,
					       ConfabHttpExchange *exchange)
{
	g_autoptr(GString) head = g_string_sized_new(256);
	gboolean http10 = exchange->head.version_minor == 0;

	/* HTTP/1.0 has no chunks: the body ends with the connection */
	if (http10)
		conn->close_after = TRUE;
	append_head(head,
		    conn->server,
		    exchange->status,
		    exchange->headers->str,
		    http10 ? -2 : -1,
		    conn_should_close(conn, exchange),
		    FALSE);
	conn->state = CONN_BUSY;
	/* it goes out with the first piece */
	queue_copy(conn, head->str, head->len);
}

void
confab_http_server_connection_send_piece(ConfabHttpConnection *conn,
					 ConfabHttpExchange *exchange,
					 const gchar *data,
					 gsize len,
					 GBytes *bytes,
					 gboolean flush)
{
	gboolean chunked = exchange->head.version_minor > 0;

	if (bytes != NULL)
		len = g_bytes_get_size(bytes);
	if (!is_head_request(exchange)) {
		if (chunked) {
			gchar size_line[24];
			gint n = g_snprintf(size_line, sizeof(size_line), "%zx\r\n", len);
			queue_copy(conn, size_line, (gsize)n);
		}
		if (bytes != NULL)
			queue_bytes(conn, bytes);
		else
			queue_copy(conn, data, len);
		if (chunked)
			queue_copy(conn, "\r\n", 2);
	}
	if (flush)
		queue_flush(conn);
	if (conn->fd >= 0)
		conn_update_flow(conn);
}

void
confab_http_server_connection_send_end(ConfabHttpConnection *conn, ConfabHttpExchange *exchange)
{
	if (exchange->head.version_minor > 0 && !is_head_request(exchange))
		queue_copy(conn, "0\r\n\r\n", 5);
	confab_http_server_connection_flush(conn);
}

/* Answers an error without the handler: a request that cannot be parsed,
 * a head that took too long, a body over a limit. The connection closes. */
static void
conn_send_error(ConfabHttpConnection *conn, const GError *error)
{
	const ConfabOpenaiErrorInfo *info = confab_openai_error_info(error);
	g_autofree gchar *body = confab_openai_error_body(error);
	const gchar *fields = info->status == 503 ? "Retry-After: 1\r\n" : NULL;
	ConfabHttpExchange *exchange = conn->exchange;

	conn->close_after = TRUE;
	if (exchange != NULL && !exchange->responded) {
		if (fields != NULL)
			confab_http_exchange_add_header(exchange, "Retry-After", "1");
		confab_http_exchange_respond_take(exchange,
						  info->status,
						  "application/json",
						  g_steal_pointer(&body));
		return;
	}
	if (exchange != NULL) {
		/* the handler answered already (it never does mid-body): close */
		conn_close(conn);
		return;
	}
	{
		g_autoptr(GString) raw = g_string_sized_new(512);
		g_autofree gchar *ct = g_strconcat("Content-Type: application/json\r\n",
						   fields != NULL ? fields : "",
						   NULL);
		append_head(raw, conn->server, info->status, ct, (gint64)strlen(body), TRUE, FALSE);
		g_string_append(raw, body);
		conn->state = CONN_BUSY;
		queue_copy(conn, raw->str, raw->len);
		confab_http_server_connection_flush(conn);
	}
}

/* ---------- requests ---------- */

static void
refuse(ConfabHttpConnection *conn, ConfabErrorCode code, const gchar *message)
{
	g_autoptr(GError) error = g_error_new_literal(CONFAB_ERROR, code, message);
	conn_send_error(conn, error);
}

/* Body bytes held at once, over every connection, are capped. */
static gboolean
account_body(ConfabHttpConnection *conn, gsize total)
{
	ConfabHttpServer *server = conn->server;

	if (total <= conn->body_accounted)
		return TRUE;
	if (!confab_http_server_group_hold_body(server->group, total - conn->body_accounted)) {
		refuse(conn,
		       CONFAB_ERROR_OVERLOADED,
		       "Too many request bodies are in flight; retry shortly");
		return FALSE;
	}
	conn->body_accounted = total;
	return TRUE;
}

static void
conn_on_head(ConfabHttpConnection *conn)
{
	ConfabHttpServer *server = conn->server;
	g_autoptr(ConfabHttpExchange) exchange = confab_http_exchange_new(conn, conn->parser);
	gint64 length = confab_http_exchange_get_content_length(exchange);

	/* the connection's reference; ours lasts while the handler may answer,
	 * and the answer may end the exchange */
	conn->exchange = confab_http_exchange_ref(exchange);
	g_atomic_int_inc(&server->active);
	conn->state = CONN_BODY;
	conn->deadline = now_plus(server->limits.idle_timeout);
	conn->body_deadline = now_plus(server->limits.body_timeout);
	server->handler.head(exchange, server->handler_data);
	if (conn->fd < 0 || exchange->responded)
		return;
	if (length > 0 && (guint64)length > server->limits.max_body_bytes) {
		g_autofree gchar *message =
		    g_strdup_printf("The request body is larger than %" G_GSIZE_FORMAT " bytes",
				    server->limits.max_body_bytes);
		refuse(conn, CONFAB_ERROR_REQUEST_TOO_LARGE, message);
		return;
	}
	if (length > 0 && !account_body(conn, (gsize)length))
		return;
	if (exchange->head.expect_continue) {
		static const gchar cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		queue_copy(conn, cont, sizeof(cont) - 1);
		confab_http_server_connection_flush(conn);
	}
}

static void
conn_on_request(ConfabHttpConnection *conn)
{
	ConfabHttpServer *server = conn->server;
	ConfabHttpExchange *exchange = conn->exchange;

	conn->body_done = TRUE;
	if (exchange->responded) /* refused from its head, body read anyway */
		return;
	exchange->body = confab_http_request_parser_steal_body(conn->parser);
	conn->state = CONN_BUSY;
	conn->deadline = 0;
	server->handler.request(exchange, server->handler_data);
}

static void
conn_stash(ConfabHttpConnection *conn, const gchar *data, gsize len)
{
	if (len == 0 || conn->state == CONN_CLOSING)
		return;
	if (conn->pending == NULL)
		conn->pending = g_byte_array_new();
	g_byte_array_append(conn->pending, (const guint8 *)data, (guint)len);
	if (conn->pending->len >= MAX_PENDING)
		conn_set_events(conn, conn->events & ~G_IO_IN);
}

static void
conn_process(ConfabHttpConnection *conn, const gchar *data, gsize len)
{
	conn_ref(conn);
	conn->in_process = TRUE;
	while (conn->fd >= 0) {
		g_autoptr(GError) error = NULL;
		ConfabHttpParseResult result;
		gsize used = 0;

		if (conn->state == CONN_BUSY || conn->state == CONN_CLOSING) {
			conn_stash(conn, data, len);
			break;
		}
		if (len == 0 && conn->state != CONN_BODY)
			break;
		result = confab_http_request_parser_feed(conn->parser, data, len, &used, &error);
		data += used;
		len -= used;
		if (result == CONFAB_HTTP_PARSE_MORE) {
			if (conn->state == CONN_IDLE &&
			    confab_http_request_parser_started(conn->parser)) {
				conn->state = CONN_HEAD;
				conn->deadline = now_plus(conn->server->limits.idle_timeout);
			} else if (conn->state == CONN_BODY) {
				conn->deadline = now_plus(conn->server->limits.idle_timeout);
				if (!account_body(
					conn,
					confab_http_request_parser_get_body_length(conn->parser)))
					break;
			}
			if (len == 0)
				break;
		} else if (result == CONFAB_HTTP_PARSE_HEAD) {
			conn_on_head(conn);
		} else if (result == CONFAB_HTTP_PARSE_BODY) {
			conn_on_request(conn);
			if (conn->resume) {
				/* answered at once: serve the next request */
				conn->resume = FALSE;
				continue;
			}
		} else {
			conn_send_error(conn, error);
			break;
		}
	}
	conn->in_process = FALSE;
	if (conn->resume && conn->fd >= 0) {
		conn->resume = FALSE;
		conn_resume(conn);
	}
	conn_unref(conn);
}

static void
conn_read(ConfabHttpConnection *conn)
{
	gchar *buffer = conn->server->read_buffer;

	for (guint i = 0; i < MAX_READS_PER_DISPATCH && conn->fd >= 0; i++) {
		gssize n = recv(conn->fd, buffer, READ_BUFFER, 0);
		if (n > 0) {
			if (conn->state == CONN_CLOSING)
				continue;
			conn_process(conn, buffer, (gsize)n);
			if (n < READ_BUFFER)
				return;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		/* the client closed or reset the connection: if a request was
		 * being served, the client is gone */
		if (conn->exchange != NULL && !conn->exchange->ended)
			g_debug("the client %s left during its request", conn->peer);
		conn_close(conn);
		return;
	}
}

static gboolean
conn_source_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
	ConfabHttpConnection *conn = ((ConnSource *)source)->conn;
	GIOCondition revents = g_source_query_unix_fd(source, conn->fd_tag);

	conn_ref(conn);
	if ((revents & G_IO_OUT) && conn->fd >= 0)
		conn_write(conn);
	if ((revents & (G_IO_IN | G_IO_HUP | G_IO_ERR)) && conn->fd >= 0) {
		if ((conn->events & G_IO_IN) || conn->state == CONN_CLOSING)
			conn_read(conn);
		else if (revents & (G_IO_HUP | G_IO_ERR))
			conn_close(conn);
	}
	conn_unref(conn);
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs conn_source_funcs = {
    .dispatch = conn_source_dispatch,
};

/* ---------- deadlines ---------- */

/*
 * Whether the socket is ready for @events now. A pause deadline measures
 * the client, but what the timer sees is when this main loop last read or
 * wrote: while the loop was busy elsewhere (a large turn being parsed or
 * answered) a client that kept sending, or kept reading, looks idle. Its
 * bytes waiting to be read, or room to write, say otherwise; the watch
 * takes them in this same iteration and moves the deadline.
 */
static gboolean
conn_ready(ConfabHttpConnection *conn, gshort events)
{
	struct pollfd pfd = {conn->fd, events, 0};
	return poll(&pfd, 1, 0) > 0 && (pfd.revents & events) != 0;
}

/*
 * A stream whose client took nothing for idle_timeout ends properly if the
 * client still can take it: the handler's cut function stops the answer
 * and ends the stream (an error event, then the end of the body), the
 * connection closes after it, and the client has CUT_GRACE_SECONDS more to
 * read that far. One that still takes nothing is then closed as it is.
 */
static gboolean
conn_cut_stream(ConfabHttpConnection *conn, gint64 now)
{
	ConfabHttpExchange *exchange = conn->exchange;
	guint idle = conn->server->limits.idle_timeout;

	if (exchange == NULL || !exchange->streaming || exchange->ended || exchange->cut ||
	    exchange->cut_func == NULL)
		return FALSE;
	g_debug("cutting the stream of %s: it took nothing for %u s", conn->peer, idle);
	exchange->cut = TRUE;
	conn->close_after = TRUE;
	/* the grace: the deadline moves CUT_GRACE_SECONDS on */
	conn->last_progress = now - ((gint64)idle - CUT_GRACE_SECONDS) * G_USEC_PER_SEC;
	conn_ref(conn);
	exchange->cut_func(exchange, exchange->cut_data);
	conn_unref(conn);
	return TRUE;
}

static void
conn_check_deadline(ConfabHttpConnection *conn, gint64 now)
{
	switch (conn->state) {
	case CONN_IDLE:
		/* a next request waiting unread is no idle client */
		if (now >= conn->deadline && !conn_ready(conn, POLLIN))
			conn_close(conn);
		break;
	case CONN_CLOSING:
		if (now >= conn->deadline)
			conn_close(conn);
		break;
	case CONN_HEAD:
		if (now >= conn->deadline)
			refuse(conn,
			       CONFAB_ERROR_REQUEST_TIMEOUT,
			       "The request head took too long to arrive");
		break;
	case CONN_BODY:
		/* the whole body's deadline holds whatever waits; the pause
		 * between two reads is the client's only if nothing does */
		if (now >= conn->body_deadline ||
		    (now >= conn->deadline && !conn_ready(conn, POLLIN)))
			refuse(conn,
			       CONFAB_ERROR_REQUEST_TIMEOUT,
			       "The request body took too long to arrive");
		break;
	case CONN_BUSY:
	default:
		/* a response nobody reads: the socket has no room for it */
		if (conn->out_bytes > 0 &&
		    now >= conn->last_progress +
			       (gint64)conn->server->limits.idle_timeout * G_USEC_PER_SEC &&
		    !conn_ready(conn, POLLOUT) && !conn_cut_stream(conn, now)) {
			g_debug("closing %s: its response went unread", conn->peer);
			conn_close(conn);
		}
		break;
	}
}

static gboolean
on_sweep(gpointer user_data)
{
	ConfabHttpServer *self = user_data;
	g_autoptr(GPtrArray) conns = g_ptr_array_new_with_free_func((GDestroyNotify)conn_unref);
	gint64 now = g_get_monotonic_time();

	for (GList *l = self->conns.head; l != NULL; l = l->next)
		g_ptr_array_add(conns, conn_ref(l->data));
	for (guint i = 0; i < conns->len; i++) {
		ConfabHttpConnection *conn = g_ptr_array_index(conns, i);
		if (conn->fd >= 0)
			conn_check_deadline(conn, now);
	}
	return G_SOURCE_CONTINUE;
}

/* ---------- accepting ---------- */

static gchar *
peer_name(const struct sockaddr_storage *ss, gboolean *loopback)
{
	gchar text[INET6_ADDRSTRLEN] = "?";

	*loopback = FALSE;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
		*loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
		if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
			inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], text, sizeof(text));
			*loopback = in6->sin6_addr.s6_addr[12] == 127;
		} else {
			inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
			*loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
		}
	} else if (ss->ss_family == AF_UNIX) {
		g_strlcpy(text, "local", sizeof(text));
		*loopback = TRUE;
	}
	return g_strdup(text);
}

/* Over a connection cap: one 503, then close. */
static void
refuse_connection(ConfabHttpServer *self, gint fd, const gchar *message)
{
	g_autoptr(GError) error =
	    g_error_new_literal(CONFAB_ERROR, CONFAB_ERROR_OVERLOADED, message);
	g_autofree gchar *body = confab_openai_error_body(error);
	g_autoptr(GString) raw = g_string_sized_new(512);

	append_head(raw,
		    self,
		    503,
		    "Content-Type: application/json\r\nRetry-After: 1\r\n",
		    (gint64)strlen(body),
		    TRUE,
		    FALSE);
	g_string_append(raw, body);
	(void)send(fd, raw->str, raw->len, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)shutdown(fd, SHUT_WR);
	close(fd);
}

static void
add_connection(ConfabHttpServer *self, gint fd, const struct sockaddr_storage *ss)
{
	ConfabHttpConnection *conn;
	gboolean loopback;
	g_autofree gchar *peer = peer_name(ss, &loopback);
	const gchar *refusal = confab_http_server_group_add_connection(self->group, peer);
	gint one = 1;

	if (refusal != NULL) {
		refuse_connection(self, fd, refusal);
		return;
	}
	if (ss->ss_family != AF_UNIX)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	conn = g_new0(ConfabHttpConnection, 1);
	conn->ref = 1;
	conn->server = self;
	conn->fd = fd;
	conn->peer = g_steal_pointer(&peer);
	conn->loopback = loopback;
	conn->parser = confab_http_request_parser_new(&self->parser_limits);
	conn->link.data = conn;
	conn->state = CONN_IDLE;
	conn->deadline = now_plus(self->limits.idle_timeout);
	conn->events = G_IO_IN;
	conn->source = g_source_new(&conn_source_funcs, sizeof(ConnSource));
	((ConnSource *)conn->source)->conn = conn;
	g_source_set_static_name(conn->source, "[confab] http connection");
	conn->fd_tag = g_source_add_unix_fd(conn->source, fd, G_IO_IN);
	/* GLib takes a source that may not recurse out of the poll set for
	 * each dispatch and puts it back after, waking its own context up
	 * both times (two eventfd writes and an extra loop iteration per
	 * dispatch); nothing iterates this context from a callback */
	g_source_set_can_recurse(conn->source, TRUE);
	g_source_attach(conn->source, self->context);
	g_queue_push_tail_link(&self->conns, &conn->link);
	g_atomic_int_set(&self->n_conns, self->conns.length);
	if (self->sweep == NULL) {
		/* twice a second: a deadline is met within half a second */
		self->sweep = g_timeout_source_new(SWEEP_MS);
		g_source_set_callback(self->sweep, on_sweep, self, NULL);
		g_source_set_static_name(self->sweep, "[confab] http deadlines");
		g_source_attach(self->sweep, self->context);
	}
}

static gboolean
on_incoming(gint listen_fd, GIOCondition condition, gpointer user_data)
{
	ConfabHttpServer *self = user_data;

	for (guint i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage ss;
		socklen_t len = sizeof(ss);
		gint fd =
		    accept4(listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				g_warning("accepting a connection: %s", g_strerror(errno));
			break;
		}
		add_connection(self, fd, &ss);
	}
	return G_SOURCE_CONTINUE;
}

/* ---------- GObject ---------- */

static void
confab_http_server_dispose(GObject *object)
{
	ConfabHttpServer *self = CONFAB_HTTP_SERVER(object);
	confab_http_server_disconnect(self);
	G_OBJECT_CLASS(confab_http_server_parent_class)->dispose(object);
}

static void
confab_http_server_finalize(GObject *object)
{
	ConfabHttpServer *self = CONFAB_HTTP_SERVER(object);
	g_clear_object(&self->group);
	g_main_context_unref(self->context);
	g_free(self->read_buffer);
	g_free(self->url);
	G_OBJECT_CLASS(confab_http_server_parent_class)->finalize(object);
}

static void
confab_http_server_class_init(ConfabHttpServerClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->dispose = confab_http_server_dispose;
	object_class->finalize = confab_http_server_finalize;
}

static void
confab_http_server_init(ConfabHttpServer *self)
{
	g_queue_init(&self->conns);
	g_queue_init(&self->to_flush);
}

/**
 * confab_http_server_new:
 * @limits: the limits; copied
 * @handler: what to call for each request; copied
 * @user_data: data for @handler
 *
 * A server on the thread-default main context.
 *
 * Returns: (transfer full): a server, not listening yet
 */
ConfabHttpServer *
confab_http_server_new(const ConfabHttpServerLimits *limits,
		       const ConfabHttpServerHandler *handler,
		       gpointer user_data)
{
	ConfabHttpServer *self = g_object_new(CONFAB_TYPE_HTTP_SERVER, NULL);

	self->limits = *limits;
	self->handler = *handler;
	self->handler_data = user_data;
	self->parser_limits.max_head_bytes = limits->max_header_bytes;
	self->parser_limits.max_fields = MAX_FIELDS;
	self->parser_limits.max_body_bytes = limits->max_body_bytes;
	self->parser_limits.max_chunk_line = MAX_CHUNK_LINE;
	self->context = g_main_context_ref_thread_default();
	self->read_buffer = g_malloc(READ_BUFFER);
	self->group = confab_http_server_group_new(limits->max_connections,
						   limits->max_connections_per_peer,
						   limits->max_inflight_body_bytes);
	return self;
}

/**
 * confab_http_server_share:
 * @self: a #ConfabHttpServer, not listening yet
 * @group: the counts this server shares with the servers of other threads
 * @reuse_port: whether to listen with `SO_REUSEPORT`, beside the others on
 *   the same address (the kernel spreads the connections over them)
 *
 * The limits on connections and request bodies then hold for the group,
 * not for this server alone.
 */
void
confab_http_server_share(ConfabHttpServer *self, ConfabHttpServerGroup *group, gboolean reuse_port)
{
	g_return_if_fail(CONFAB_IS_HTTP_SERVER(self));
	g_return_if_fail(self->listener == NULL);
	g_set_object(&self->group, group);
	self->reuse_port = reuse_port;
}

static void
update_url(ConfabHttpServer *self)
{
	g_autoptr(GSocketAddress) address = g_socket_get_local_address(self->listener, NULL);
	GInetAddress *inet;
	g_autofree gchar *host = NULL;
	gboolean v6;

	g_clear_pointer(&self->url, g_free);
	if (!G_IS_INET_SOCKET_ADDRESS(address))
		return;
	inet = g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(address));
	host = g_inet_address_to_string(inet);
	v6 = g_inet_address_get_family(inet) == G_SOCKET_FAMILY_IPV6;
	self->url = g_strdup_printf("http://%s%s%s:%u",
				    v6 ? "[" : "",
				    host,
				    v6 ? "]" : "",
				    g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(address)));
}

/* g_socket_bind() turns SO_REUSEPORT off for TCP: bind(2) it is. */
static gboolean
bind_reuse_port(GSocket *socket, GSocketAddress *address, GError **error)
{
	struct sockaddr_storage native;
	gssize len = g_socket_address_get_native_size(address);
	gint fd = g_socket_get_fd(socket);
	gint one = 1;

	if (len < 0 || !g_socket_address_to_native(address, &native, sizeof(native), error))
		return FALSE;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&native, (socklen_t)len) < 0) {
		gint saved = errno;
		g_set_error(error,
			    G_IO_ERROR,
			    g_io_error_from_errno(saved),
			    "Error binding to address: %s",
			    g_strerror(saved));
		return FALSE;
	}
	return TRUE;
}

static void
start_accepting(ConfabHttpServer *self, GSocket *listener)
{
	self->listener = listener;
	update_url(self);
	self->accept_source = g_unix_fd_source_new(g_socket_get_fd(self->listener), G_IO_IN);
	g_source_set_callback(self->accept_source, G_SOURCE_FUNC(on_incoming), self, NULL);
	g_source_set_static_name(self->accept_source, "[confab] http accept");
	g_source_set_can_recurse(self->accept_source, TRUE); /* see add_connection */
	g_source_attach(self->accept_source, self->context);
}

/**
 * confab_http_server_listen:
 * @self: a #ConfabHttpServer
 * @address: where to listen; port 0 picks a free one
 * @error: return location for a #GError
 */
gboolean
confab_http_server_listen(ConfabHttpServer *self, GSocketAddress *address, GError **error)
{
	g_autoptr(GSocket) socket = NULL;

	g_return_val_if_fail(self->listener == NULL, FALSE);
	socket = g_socket_new(g_socket_address_get_family(address),
			      G_SOCKET_TYPE_STREAM,
			      G_SOCKET_PROTOCOL_TCP,
			      error);
	if (socket == NULL)
		return FALSE;
	g_socket_set_blocking(socket, FALSE);
	g_socket_set_listen_backlog(socket, LISTEN_BACKLOG);
	if (!(self->reuse_port ? bind_reuse_port(socket, address, error)
			       : g_socket_bind(socket, address, TRUE, error)) ||
	    !g_socket_listen(socket, error))
		return FALSE;
	start_accepting(self, g_steal_pointer(&socket));
	return TRUE;
}

/**
 * confab_http_server_listen_fd:
 * @self: a #ConfabHttpServer
 * @fd: a listening TCP socket (one systemd passed, or a dup of it); the
 *   server owns it from now on, and closes it on error
 * @error: return location for a #GError
 *
 * Accepts from a socket that is already listening. Servers of several
 * threads may each accept from their own dup of one socket.
 */
gboolean
confab_http_server_listen_fd(ConfabHttpServer *self, gint fd, GError **error)
{
	g_autoptr(GSocket) socket = NULL;
	gint type = 0;
	gint accepting = 0;
	socklen_t len = sizeof(gint);

	g_return_val_if_fail(self->listener == NULL, FALSE);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) < 0 || !accepting) {
		g_set_error(error,
			    G_IO_ERROR,
			    G_IO_ERROR_INVALID_ARGUMENT,
			    "descriptor %d is not a listening stream socket",
			    fd);
		close(fd);
		return FALSE;
	}
	socket = g_socket_new_from_fd(fd, error);
	if (socket == NULL)
		return FALSE;
	/* the peer's address counts connections per peer */
	if (g_socket_get_family(socket) != G_SOCKET_FAMILY_IPV4 &&
	    g_socket_get_family(socket) != G_SOCKET_FAMILY_IPV6) {
		g_set_error(error,
			    G_IO_ERROR,
			    G_IO_ERROR_NOT_SUPPORTED,
			    "descriptor %d is not a TCP socket",
			    fd);
		return FALSE;
	}
	g_socket_set_blocking(socket, FALSE);
	start_accepting(self, g_steal_pointer(&socket));
	return TRUE;
}

/**
 * confab_http_server_get_url:
 *
 * Returns: (transfer full) (nullable): `http://HOST:PORT`, once listening
 */
gchar *
confab_http_server_get_url(ConfabHttpServer *self)
{
	return g_strdup(self->url);
}

/**
 * confab_http_server_get_active_requests:
 *
 * Returns: the requests whose head is in and whose response is not over
 */
guint
confab_http_server_get_active_requests(ConfabHttpServer *self)
{
	return (guint)g_atomic_int_get(&self->active);
}

/**
 * confab_http_server_get_connections:
 *
 * Returns: the connections open now
 */
guint
confab_http_server_get_connections(ConfabHttpServer *self)
{
	return (guint)g_atomic_int_get(&self->n_conns);
}

/**
 * confab_http_server_stop_listening:
 *
 * Accepts no new connection; those open are served on.
 */
void
confab_http_server_stop_listening(ConfabHttpServer *self)
{
	if (self->accept_source != NULL) {
		g_source_destroy(self->accept_source);
		g_clear_pointer(&self->accept_source, g_source_unref);
	}
	if (self->listener != NULL) {
		g_socket_close(self->listener, NULL);
		g_clear_object(&self->listener);
	}
}

/**
 * confab_http_server_disconnect:
 *
 * Stops listening and closes every connection.
 */
void
confab_http_server_disconnect(ConfabHttpServer *self)
{
	confab_http_server_stop_listening(self);
	while (self->conns.head != NULL)
		conn_close(self->conns.head->data);
	flusher_clear(self);
	if (self->sweep != NULL) {
		g_source_destroy(self->sweep);
		g_clear_pointer(&self->sweep, g_source_unref);
	}
}
