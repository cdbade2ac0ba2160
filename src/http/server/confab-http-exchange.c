/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <string.h>

#include "http/server/confab-http-server-private.h"

/*
 * The handler's side of one request. Everything that touches the wire is
 * the connection's (confab-http-server.c); an exchange whose connection is
 * gone keeps its request data and ignores every write.
 */

ConfabHttpExchange *
confab_http_exchange_new(ConfabHttpConnection *conn, ConfabHttpRequestParser *parser)
{
	ConfabHttpExchange *self = g_new0(ConfabHttpExchange, 1);
	ConfabHttpRequestHead *head =
	    (ConfabHttpRequestHead *)confab_http_request_parser_get_head(parser);

	g_ref_count_init(&self->ref);
	self->conn = conn;
	/* the head moves here: the parser may serve the next request while a
	 * handler still holds this one */
	self->head = *head;
	head->method = NULL;
	head->target = NULL;
	head->path = NULL;
	head->query = NULL;
	head->fields = confab_http_fields_new();
	self->peer = g_strdup(confab_http_server_connection_get_peer(conn));
	self->loopback = confab_http_server_connection_is_loopback(conn);
	self->start = g_get_monotonic_time();
	/* room for a limited answer's headers without growing */
	self->headers = g_string_sized_new(512);
	return self;
}

/**
 * confab_http_exchange_ref:
 *
 * Returns: (transfer full): @self
 */
ConfabHttpExchange *
confab_http_exchange_ref(ConfabHttpExchange *self)
{
	g_ref_count_inc(&self->ref);
	return self;
}

void
confab_http_exchange_unref(ConfabHttpExchange *self)
{
	if (self == NULL || !g_ref_count_dec(&self->ref))
		return;
	g_assert(self->conn == NULL);
	if (self->data_destroy != NULL)
		self->data_destroy(self->data);
	g_free(self->head.method);
	g_free(self->head.target);
	g_free(self->head.path);
	g_free(self->head.query);
	confab_http_fields_free(self->head.fields);
	g_clear_pointer(&self->body, g_bytes_unref);
	if (self->flow != NULL)
		confab_flow_close(self->flow);
	g_clear_pointer(&self->flow, confab_flow_unref);
	g_free(self->peer);
	g_string_free(self->headers, TRUE);
	for (guint i = 1; self->notes != NULL && i < self->notes->len; i += 2)
		g_free(g_ptr_array_index(self->notes, i));
	g_clear_pointer(&self->notes, g_ptr_array_unref);
	g_free(self);
}

/* ---------- the request ---------- */

const gchar *
confab_http_exchange_get_method(ConfabHttpExchange *self)
{
	return self->head.method;
}

/**
 * confab_http_exchange_get_path:
 *
 * Returns: the path of the request target, still percent-encoded
 */
const gchar *
confab_http_exchange_get_path(ConfabHttpExchange *self)
{
	return self->head.path;
}

/**
 * confab_http_exchange_get_query:
 *
 * Returns: (nullable): the query string, still percent-encoded
 */
const gchar *
confab_http_exchange_get_query(ConfabHttpExchange *self)
{
	return self->head.query;
}

/**
 * confab_http_exchange_get_header:
 *
 * Returns: (nullable): the first request header called @name
 */
const gchar *
confab_http_exchange_get_header(ConfabHttpExchange *self, const gchar *name)
{
	return confab_http_fields_get(self->head.fields, name);
}

/**
 * confab_http_exchange_has_body:
 *
 * Returns: whether the request announces a body
 */
gboolean
confab_http_exchange_has_body(ConfabHttpExchange *self)
{
	return self->head.framing != CONFAB_HTTP_FRAMING_NONE;
}

/**
 * confab_http_exchange_get_content_length:
 *
 * Returns: the announced body length; -1 for a chunked body
 */
gint64
confab_http_exchange_get_content_length(ConfabHttpExchange *self)
{
	if (self->head.framing == CONFAB_HTTP_FRAMING_CHUNKED)
		return -1;
	return (gint64)self->head.content_length;
}

/**
 * confab_http_exchange_get_body_size:
 *
 * Returns: the size of the request body received, until it is stolen
 */
gsize
confab_http_exchange_get_body_size(ConfabHttpExchange *self)
{
	return self->body != NULL ? g_bytes_get_size(self->body) : 0;
}

/**
 * confab_http_exchange_steal_body:
 *
 * Returns: (transfer full): the request body, once the request is whole;
 *   the exchange lets go of it
 */
GBytes *
confab_http_exchange_steal_body(ConfabHttpExchange *self)
{
	if (self->body == NULL)
		return g_bytes_new(NULL, 0);
	return g_steal_pointer(&self->body);
}

/**
 * confab_http_exchange_get_peer:
 *
 * Returns: the client's address, as text
 */
const gchar *
confab_http_exchange_get_peer(ConfabHttpExchange *self)
{
	return self->peer;
}

/**
 * confab_http_exchange_is_loopback:
 *
 * Returns: whether the client connected from this host's loopback
 */
gboolean
confab_http_exchange_is_loopback(ConfabHttpExchange *self)
{
	return self->loopback;
}

/**
 * confab_http_exchange_get_start_time:
 *
 * Returns: when the request head arrived, in monotonic microseconds
 */
gint64
confab_http_exchange_get_start_time(ConfabHttpExchange *self)
{
	return self->start;
}

/**
 * confab_http_exchange_set_data:
 * @self: a #ConfabHttpExchange
 * @data: (transfer full) (nullable): the handler's data
 * @destroy: (nullable): frees @data with the exchange, or when replaced
 */
void
confab_http_exchange_set_data(ConfabHttpExchange *self, gpointer data, GDestroyNotify destroy)
{
	if (self->data_destroy != NULL)
		self->data_destroy(self->data);
	self->data = data;
	self->data_destroy = destroy;
}

gpointer
confab_http_exchange_get_data(ConfabHttpExchange *self)
{
	return self->data;
}

/**
 * confab_http_exchange_set_connection_data:
 * @self: a #ConfabHttpExchange
 * @data: (transfer full) (nullable): the handler's data for the connection
 *   the request came on, kept for the requests after it on that connection
 * @destroy: (nullable): frees @data with the connection, or when replaced
 *
 * Once the exchange is over (its connection may be gone), @data is freed
 * at once.
 */
void
confab_http_exchange_set_connection_data(ConfabHttpExchange *self,
					 gpointer data,
					 GDestroyNotify destroy)
{
	if (self->conn == NULL) {
		if (destroy != NULL)
			destroy(data);
		return;
	}
	confab_http_server_connection_set_data(self->conn, data, destroy);
}

/**
 * confab_http_exchange_get_connection_data:
 *
 * Returns: (transfer none) (nullable): what
 *   confab_http_exchange_set_connection_data() set on this request's
 *   connection; %NULL once the exchange is over
 */
gpointer
confab_http_exchange_get_connection_data(ConfabHttpExchange *self)
{
	return self->conn != NULL ? confab_http_server_connection_get_data(self->conn) : NULL;
}

/* ---------- notes ---------- */

/**
 * confab_http_exchange_annotate:
 * @self: a #ConfabHttpExchange
 * @key: (not nullable): a name; a string that lives as long as the program
 * @value: (nullable): its value; %NULL leaves the note as it is
 *
 * Notes something about the request for whoever logs it.
 */
void
confab_http_exchange_annotate(ConfabHttpExchange *self, const gchar *key, const gchar *value)
{
	if (value == NULL)
		return;
	if (self->notes == NULL)
		self->notes = g_ptr_array_new();
	for (guint i = 0; i < self->notes->len; i += 2) {
		if (g_str_equal(g_ptr_array_index(self->notes, i), key)) {
			g_free(g_ptr_array_index(self->notes, i + 1));
			g_ptr_array_index(self->notes, i + 1) = g_strdup(value);
			return;
		}
	}
	g_ptr_array_add(self->notes, (gpointer)key);
	g_ptr_array_add(self->notes, g_strdup(value));
}

/**
 * confab_http_exchange_get_annotation:
 *
 * Returns: (nullable): the note called @key
 */
const gchar *
confab_http_exchange_get_annotation(ConfabHttpExchange *self, const gchar *key)
{
	for (guint i = 0; self->notes != NULL && i < self->notes->len; i += 2) {
		if (g_str_equal(g_ptr_array_index(self->notes, i), key))
			return g_ptr_array_index(self->notes, i + 1);
	}
	return NULL;
}

/* ---------- the response ---------- */

/**
 * confab_http_exchange_add_header:
 * @self: a #ConfabHttpExchange
 * @name: a field name
 * @value: its value; CR, LF and other control characters are dropped
 *
 * Adds a response header; before the response begins.
 */
void
confab_http_exchange_add_header(ConfabHttpExchange *self, const gchar *name, const gchar *value)
{
	g_return_if_fail(!self->responded);
	g_return_if_fail(confab_http_fields_is_token(name, strlen(name)));
	g_string_append(self->headers, name);
	g_string_append_len(self->headers, ": ", 2);
	/* runs of what may stay, at once */
	for (const gchar *p = value; *p != '\0';) {
		const gchar *run = p;
		while ((guchar)*p >= 0x20 && *p != 0x7f)
			p++;
		g_string_append_len(self->headers, run, p - run);
		while (*p != '\0' && ((guchar)*p < 0x20 || *p == 0x7f))
			p++;
	}
	g_string_append_len(self->headers, "\r\n", 2);
}

static void
append_content_type(GString *headers, const gchar *content_type)
{
	g_string_append_len(headers, "Content-Type: ", 14);
	g_string_append(headers, content_type);
	g_string_append_len(headers, "\r\n", 2);
}

/**
 * confab_http_exchange_respond:
 * @self: a #ConfabHttpExchange
 * @status: the status
 * @content_type: the body's media type
 * @body: the whole body
 *
 * Sends the whole response; the exchange ends once it is written.
 */
void
confab_http_exchange_respond(ConfabHttpExchange *self,
			     guint status,
			     const gchar *content_type,
			     GBytes *body)
{
	g_return_if_fail(!self->responded);
	self->responded = TRUE;
	self->ended = TRUE;
	self->status = status;
	append_content_type(self->headers, content_type);
	if (self->conn != NULL)
		confab_http_server_connection_send_response(self->conn, self, body);
}

/**
 * confab_http_exchange_respond_take:
 * @self: a #ConfabHttpExchange
 * @status: the status
 * @content_type: the body's media type
 * @body: (transfer full): the body, a string
 */
void
confab_http_exchange_respond_take(ConfabHttpExchange *self,
				  guint status,
				  const gchar *content_type,
				  gchar *body)
{
	g_autoptr(GBytes) bytes = g_bytes_new_take(body, strlen(body));
	confab_http_exchange_respond(self, status, content_type, bytes);
}

/**
 * confab_http_exchange_begin_stream:
 * @self: a #ConfabHttpExchange
 * @status: the status
 * @content_type: the stream's media type
 *
 * Starts a response whose body follows in pieces. The head goes out with
 * the first piece.
 */
void
confab_http_exchange_begin_stream(ConfabHttpExchange *self, guint status, const gchar *content_type)
{
	g_return_if_fail(!self->responded);
	self->responded = TRUE;
	self->streaming = TRUE;
	if (self->flow == NULL)
		self->flow = confab_flow_new();
	self->status = status;
	append_content_type(self->headers, content_type);
	if (self->conn != NULL)
		confab_http_server_connection_send_stream_head(self->conn, self);
}

/**
 * confab_http_exchange_write:
 * @self: a streaming #ConfabHttpExchange
 * @data: a piece of the body
 * @len: its length
 *
 * Sends a piece (as one chunk) by the next main-loop iteration, in one
 * write with the other pieces written before then. Nothing is dropped: past the
 * stream buffer, the exchange's flow is held until the client catches up,
 * and whoever writes should wait for it (confab_http_exchange_get_flow()).
 */
void
confab_http_exchange_write(ConfabHttpExchange *self, const gchar *data, gsize len)
{
	g_return_if_fail(self->streaming && !self->ended);
	if (self->conn != NULL && len > 0)
		confab_http_server_connection_send_piece(self->conn, self, data, len, NULL, TRUE);
}

/**
 * confab_http_exchange_write_bytes:
 * @self: a streaming #ConfabHttpExchange
 * @bytes: a piece of the body, queued without a copy
 *
 * Queues a piece; it goes out with the next confab_http_exchange_flush()
 * (or write, or the end of the stream).
 */
void
confab_http_exchange_write_bytes(ConfabHttpExchange *self, GBytes *bytes)
{
	g_return_if_fail(self->streaming && !self->ended);
	if (self->conn != NULL && g_bytes_get_size(bytes) > 0)
		confab_http_server_connection_send_piece(self->conn, self, NULL, 0, bytes, FALSE);
}

/**
 * confab_http_exchange_flush:
 *
 * Sends what is queued.
 */
void
confab_http_exchange_flush(ConfabHttpExchange *self)
{
	if (self->conn != NULL)
		confab_http_server_connection_flush(self->conn);
}

/**
 * confab_http_exchange_end_stream:
 *
 * Ends a streamed response; the exchange ends once it is written.
 */
void
confab_http_exchange_end_stream(ConfabHttpExchange *self)
{
	g_return_if_fail(self->streaming);
	if (self->ended)
		return;
	self->ended = TRUE;
	if (self->conn != NULL)
		confab_http_server_connection_send_end(self->conn, self);
}

guint
confab_http_exchange_get_status(ConfabHttpExchange *self)
{
	return self->status;
}

gboolean
confab_http_exchange_has_responded(ConfabHttpExchange *self)
{
	return self->responded;
}

/**
 * confab_http_exchange_get_unsent:
 *
 * Returns: bytes of the response queued and not yet taken by the kernel
 */
gsize
confab_http_exchange_get_unsent(ConfabHttpExchange *self)
{
	return self->conn != NULL ? confab_http_server_connection_get_unsent(self->conn) : 0;
}

/**
 * confab_http_exchange_get_flow:
 *
 * The stream's backpressure: held while more than `max_stream_buffer`
 * bytes wait unsent, open again once the client has taken half of them,
 * closed when the exchange is over. Who produces the stream waits for it.
 *
 * A handler that will stream may take it before its head goes out (the
 * flow is made at the first ask), to hand it to what produces the stream
 * from the start; it is open until the stream's writes wait unsent.
 *
 * Returns: (transfer none): the flow of the (streamed) response
 */
ConfabFlow *
confab_http_exchange_get_flow(ConfabHttpExchange *self)
{
	if (self->flow == NULL)
		self->flow = confab_flow_new();
	return self->flow;
}

/* ---------- the client ---------- */

/**
 * confab_http_exchange_is_gone:
 *
 * Returns: whether the client left (or was disconnected) before the
 *   response was sent
 */
gboolean
confab_http_exchange_is_gone(ConfabHttpExchange *self)
{
	return self->gone;
}

/**
 * confab_http_exchange_set_gone_func:
 * @self: a #ConfabHttpExchange
 * @func: (nullable): called once if the client leaves, or is disconnected,
 *   before the whole response is sent — also while the handler is waiting
 *   and nothing is being written
 * @user_data: data for @func
 */
void
confab_http_exchange_set_gone_func(ConfabHttpExchange *self,
				   ConfabHttpExchangeFunc func,
				   gpointer user_data)
{
	self->gone_func = func;
	self->gone_data = user_data;
}

/**
 * confab_http_exchange_set_drained_func:
 * @self: a #ConfabHttpExchange
 * @func: (nullable): called when everything queued has been sent
 * @user_data: data for @func
 */
void
confab_http_exchange_set_drained_func(ConfabHttpExchange *self,
				      ConfabHttpExchangeFunc func,
				      gpointer user_data)
{
	self->drained_func = func;
	self->drained_data = user_data;
}

/**
 * confab_http_exchange_set_cut_func:
 * @self: a #ConfabHttpExchange
 * @func: (nullable): called once if the server cuts the stream because its
 *   client took nothing for `idle_timeout`: the handler stops producing and
 *   ends the stream with a last event; the server then sends what it can
 *   for a moment and closes the connection. Without one, the connection
 *   closes at once.
 * @user_data: data for @func
 */
void
confab_http_exchange_set_cut_func(ConfabHttpExchange *self,
				  ConfabHttpExchangeFunc func,
				  gpointer user_data)
{
	self->cut_func = func;
	self->cut_data = user_data;
}

/**
 * confab_http_exchange_is_cut:
 *
 * Returns: whether the server is cutting the stream (its cut function ran)
 */
gboolean
confab_http_exchange_is_cut(ConfabHttpExchange *self)
{
	return self->cut;
}

/**
 * confab_http_exchange_close:
 *
 * Disconnects the client at once, as if it had left.
 */
void
confab_http_exchange_close(ConfabHttpExchange *self)
{
	if (self->conn != NULL)
		confab_http_server_connection_cut(self->conn);
}
