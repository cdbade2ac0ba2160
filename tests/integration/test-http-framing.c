/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "confab-test-helper.h"

/*
 * The HTTP/1.1 framing corpus, tests/integration/http-corpus/, replayed against one
 * real confabd on a raw socket: one test case per file. A file is named
 * <expected status>-<what>.http and holds the bytes as sent, with @TOKEN@
 * and @AGENT@ for a valid API secret and agent id.
 *
 * An error closes the connection: it carries a JSON body in the OpenAI
 * shape and Connection: close, nothing is answered after it (the cases hide
 * a request behind the bad one that would answer 200), and the server
 * closes. A valid case is answered 2xx with JSON, every request of it, and
 * its last request asks for the connection to be closed. After each case
 * the daemon still serves a plain request on a fresh connection.
 */

#define CONFIG "[limits]\nmax_header_bytes=65536\n"

/* the corpus counts lengths with the substituted values */
#define TOKEN_LEN 47
#define AGENT_LEN 30

/* how long the server has to answer and close, and to follow a response
 * that already fails the case with anything more */
#define DEADLINE_S 5
#define GRACE_MS   1000

typedef struct {
	ConfabTestDaemon *daemon; /* owned */
	gchar *token;		  /* owned */
	gchar *agent;		  /* owned */
	gchar *corpus;		  /* owned */
	gint64 slowdown;	  /* under a wrapper such as valgrind */
} Fixture;

static Fixture fixture;

/* ---------- the daemon, one for the whole binary ---------- */

static void
fixture_start_daemon(void)
{
	fixture.daemon = confab_test_daemon_start(CONFIG, NULL);
	fixture.agent = confab_test_create_agent(fixture.daemon, "echo", "echo");
	fixture.token =
	    confab_test_create_token(fixture.daemon, "alice", "chat.completions", NULL, NULL);
	g_assert_cmpuint(strlen(fixture.token), ==, TOKEN_LEN);
	g_assert_cmpuint(strlen(fixture.agent), ==, AGENT_LEN);
}

static void
fixture_drop_daemon(void)
{
	g_clear_pointer(&fixture.daemon, confab_test_daemon_free);
	g_clear_pointer(&fixture.token, g_free);
	g_clear_pointer(&fixture.agent, g_free);
}

static gboolean
daemon_exited(gpointer user_data)
{
	return g_subprocess_get_identifier(fixture.daemon->process) == NULL;
}

static gboolean
raw_can_connect(void);

/* A case that killed the daemon fails; the next ones get a new daemon. */
static void
fixture_ensure_daemon(void)
{
	if (raw_can_connect())
		return;
	if (confab_test_wait_until(daemon_exited, NULL, 2000)) {
		g_autofree gchar *output = confab_test_daemon_get_output(fixture.daemon);
		g_test_message("confabd had died; its output:\n%s", output);
	}
	fixture_drop_daemon();
	fixture_start_daemon();
}

static gint64
deadline_in_ms(gint64 ms)
{
	return g_get_monotonic_time() + ms * 1000 * fixture.slowdown;
}

/* ---------- raw sockets ---------- */

typedef enum {
	RAW_EOF,
	RAW_RESET,
	RAW_TIMEOUT,
	RAW_ENOUGH,
} RawEnd;

static const gchar *
raw_end_to_string(RawEnd end)
{
	switch (end) {
	case RAW_EOF:
		return "closed";
	case RAW_RESET:
		return "reset";
	case RAW_TIMEOUT:
		return "still open";
	case RAW_ENOUGH:
	default:
		return "read on";
	}
}

static GSocketConnection *
raw_connect(GError **error)
{
	g_autoptr(GSocketClient) client = g_socket_client_new();
	GSocketConnection *conn =
	    g_socket_client_connect_to_uri(client, fixture.daemon->url, 80, NULL, error);
	if (conn == NULL)
		return NULL;
	/* bounds a write the server stops reading */
	g_socket_set_timeout(g_socket_connection_get_socket(conn),
			     DEADLINE_S * (guint)fixture.slowdown);
	return conn;
}

static gboolean
raw_can_connect(void)
{
	g_autoptr(GSocketConnection) conn = raw_connect(NULL);
	return conn != NULL;
}

static gboolean
raw_send(GSocketConnection *conn, const gchar *data, gsize len, GError **error)
{
	return g_output_stream_write_all(g_io_stream_get_output_stream(G_IO_STREAM(conn)),
					 data,
					 len,
					 NULL,
					 NULL,
					 error);
}

/* Whether the bytes so far are enough; it may also bring @deadline nearer. */
typedef gboolean (*RawUntil)(const GString *received, gint64 *deadline, gpointer user_data);

/* Appends to @received what the peer sends until it closes or resets,
 * @deadline passes, or @until says enough. */
static RawEnd
raw_read(GSocket *socket, GString *received, gint64 deadline, RawUntil until, gpointer user_data)
{
	for (;;) {
		g_autoptr(GError) error = NULL;
		gchar buf[16384];
		gint64 now;
		gssize n;

		if (until != NULL && until(received, &deadline, user_data))
			return RAW_ENOUGH;
		now = g_get_monotonic_time();
		if (now >= deadline)
			return RAW_TIMEOUT;
		if (!g_socket_condition_timed_wait(socket, G_IO_IN, deadline - now, NULL, &error))
			continue;
		n = g_socket_receive(socket, buf, sizeof(buf), NULL, &error);
		if (n == 0)
			return RAW_EOF;
		if (n < 0) {
			if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK) ||
			    g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
				continue;
			return RAW_RESET;
		}
		g_string_append_len(received, buf, n);
	}
}

/* ---------- a byte stream as HTTP/1.1 responses ---------- */

typedef struct {
	guint status;
	SoupMessageHeaders *headers; /* owned */
	GBytes *body;		     /* owned */
} RawResponse;

static void
raw_response_free(RawResponse *r)
{
	soup_message_headers_unref(r->headers);
	g_bytes_unref(r->body);
	g_free(r);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(RawResponse, raw_response_free)

static const gchar *
find_crlf(const gchar *p, const gchar *end)
{
	for (; p + 1 < end; p++) {
		if (p[0] == '\r' && p[1] == '\n')
			return p;
	}
	return NULL;
}

/* "HTTP/1.x NNN reason" */
static gboolean
parse_status_line(const gchar *line, gsize len, guint *status)
{
	if (len < 12 || (memcmp(line, "HTTP/1.1 ", 9) != 0 && memcmp(line, "HTTP/1.0 ", 9) != 0))
		return FALSE;
	if (!g_ascii_isdigit(line[9]) || !g_ascii_isdigit(line[10]) || !g_ascii_isdigit(line[11]) ||
	    (len > 12 && line[12] != ' '))
		return FALSE;
	*status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
	return TRUE;
}

/* A chunked body from @p: the de-chunked bytes and where it ends, or NULL
 * if it is not all there (or not chunked at all: *malformed). */
static GBytes *
parse_chunked(const gchar *p, const gchar *end, const gchar **after, gboolean *malformed)
{
	g_autoptr(GByteArray) body = g_byte_array_new();

	for (;;) {
		const gchar *eol = find_crlf(p, end);
		g_autofree gchar *line = NULL;
		gchar *rest = NULL;
		guint64 size;

		if (eol == NULL)
			return NULL;
		line = g_strndup(p, eol - p);
		size = g_ascii_strtoull(line, &rest, 16);
		if (rest == line || (*rest != '\0' && *rest != ';') || size > G_MAXINT32) {
			*malformed = TRUE;
			return NULL;
		}
		p = eol + 2;
		if (size == 0)
			break;
		if ((gsize)(end - p) < size + 2)
			return NULL;
		if (p[size] != '\r' || p[size + 1] != '\n') {
			*malformed = TRUE;
			return NULL;
		}
		g_byte_array_append(body, (const guint8 *)p, size);
		p += size + 2;
	}
	/* trailer fields, then an empty line */
	for (;;) {
		const gchar *eol = find_crlf(p, end);
		gboolean empty;

		if (eol == NULL)
			return NULL;
		empty = eol == p;
		p = eol + 2;
		if (empty)
			break;
	}
	*after = p;
	return g_byte_array_free_to_bytes(g_steal_pointer(&body));
}

/*
 * Splits @data into responses. @eof: the server closed after it, which ends
 * a body without a length. What is left over (a response not all there, or
 * bytes that are no response) is described in *leftover.
 */
static GPtrArray *
parse_responses(const gchar *data, gsize len, gboolean eof, gchar **leftover)
{
	GPtrArray *responses = g_ptr_array_new_with_free_func((GDestroyNotify)raw_response_free);
	const gchar *p = data;
	const gchar *end = data + len;

	*leftover = NULL;
	while (p < end) {
		g_autoptr(RawResponse) r = g_new0(RawResponse, 1);
		const gchar *eol = find_crlf(p, end);
		const gchar *head_end;
		const gchar *q;
		const gchar *length;
		gboolean malformed = FALSE;

		r->headers = soup_message_headers_new(SOUP_MESSAGE_HEADERS_RESPONSE);
		if (eol == NULL || !parse_status_line(p, eol - p, &r->status)) {
			gsize rest = end - p;
			if (eol == NULL && memcmp(p, "HTTP/1.", MIN(rest, 7)) == 0) {
				*leftover = g_strdup("a response cut short");
			} else {
				g_autofree gchar *text = g_strndup(p, MIN(rest, 60));
				g_autofree gchar *escaped = g_strescape(text, NULL);
				*leftover = g_strdup_printf("%zu bytes that are no response: %s",
							    rest,
							    escaped);
			}
			break;
		}
		/* the fields */
		head_end = NULL;
		for (q = eol + 2; q < end;) {
			const gchar *field_end = find_crlf(q, end);
			const gchar *colon;
			g_autofree gchar *name = NULL;
			g_autofree gchar *value = NULL;

			if (field_end == NULL)
				break;
			if (field_end == q) {
				head_end = q + 2;
				break;
			}
			colon = memchr(q, ':', field_end - q);
			if (colon == NULL || colon == q) {
				malformed = TRUE;
				break;
			}
			name = g_strndup(q, colon - q);
			value = g_strstrip(g_strndup(colon + 1, field_end - colon - 1));
			soup_message_headers_append(r->headers, name, value);
			q = field_end + 2;
		}
		if (malformed) {
			*leftover =
			    g_strdup_printf("a response with a malformed head (%u)", r->status);
			break;
		}
		if (head_end == NULL) {
			*leftover = g_strdup_printf("a response head cut short (%u)", r->status);
			break;
		}
		p = head_end;
		/* the body */
		length = soup_message_headers_get_one(r->headers, "Content-Length");
		if ((r->status >= 100 && r->status < 200) || r->status == 204 || r->status == 304) {
			r->body = g_bytes_new(NULL, 0);
		} else if (soup_message_headers_header_contains(r->headers,
								"Transfer-Encoding",
								"chunked")) {
			const gchar *after = NULL;
			r->body = parse_chunked(p, end, &after, &malformed);
			if (r->body == NULL) {
				*leftover =
				    g_strdup_printf(malformed ? "a malformed chunked body (%u)"
							      : "a chunked body cut short (%u)",
						    r->status);
				break;
			}
			p = after;
		} else if (length != NULL) {
			guint64 n = g_ascii_strtoull(length, NULL, 10);
			if ((guint64)(end - p) < n) {
				*leftover = g_strdup_printf("a body cut short (%u)", r->status);
				break;
			}
			r->body = g_bytes_new(p, n);
			p += n;
		} else {
			if (!eof) {
				*leftover = g_strdup_printf("a body until close (%u)", r->status);
				break;
			}
			r->body = g_bytes_new(p, end - p);
			p = end;
		}
		g_ptr_array_add(responses, g_steal_pointer(&r));
	}
	return responses;
}

/* ---------- what a response must be ---------- */

static gboolean
body_is_json(GBytes *body, JsonNode **root)
{
	g_autoptr(JsonParser) parser = json_parser_new();
	gsize len = 0;
	const gchar *data = g_bytes_get_data(body, &len);

	if (len == 0 || !g_utf8_validate_len(data, len, NULL))
		return FALSE;
	if (!json_parser_load_from_data(parser, data, len, NULL) ||
	    json_parser_get_root(parser) == NULL)
		return FALSE;
	if (root != NULL)
		*root = json_node_copy(json_parser_get_root(parser));
	return TRUE;
}

static gboolean
member_is_string(JsonObject *object, const gchar *name)
{
	JsonNode *node = json_object_get_member(object, name);
	return node != NULL && JSON_NODE_HOLDS_VALUE(node) &&
	       json_node_get_value_type(node) == G_TYPE_STRING;
}

/* {"error":{"message":string,"type":string,"param":…,"code":string}} */
static gboolean
body_is_error_json(GBytes *body)
{
	g_autoptr(JsonNode) root = NULL;
	JsonNode *error;
	JsonObject *object;

	if (!body_is_json(body, &root) || !JSON_NODE_HOLDS_OBJECT(root))
		return FALSE;
	error = json_object_get_member(json_node_get_object(root), "error");
	if (error == NULL || !JSON_NODE_HOLDS_OBJECT(error))
		return FALSE;
	object = json_node_get_object(error);
	return member_is_string(object, "message") && member_is_string(object, "type") &&
	       json_object_has_member(object, "param") && member_is_string(object, "code");
}

static gboolean
is_json_type(RawResponse *r)
{
	return g_strcmp0(soup_message_headers_get_content_type(r->headers, NULL),
			 "application/json") == 0;
}

static gboolean
closes(RawResponse *r)
{
	return soup_message_headers_header_contains(r->headers, "Connection", "close");
}

/* One response as the failure message tells it: 400 (text/plain, 11 bytes:
 * "Bad Request"); the body only of what is not a success. */
static void
describe_response(GString *out, RawResponse *r)
{
	const gchar *type = soup_message_headers_get_content_type(r->headers, NULL);
	gsize len = 0;
	const gchar *data = g_bytes_get_data(r->body, &len);

	g_string_append_printf(out, "%u", r->status);
	if (r->status < 200)
		return;
	g_string_append_printf(out,
			       " (%s%s, %zu bytes",
			       type != NULL ? type : "no Content-Type",
			       closes(r) ? ", Connection: close" : "",
			       len);
	if (len > 0 && r->status >= 300) {
		g_autofree gchar *text = g_strndup(data, MIN(len, 100));
		g_autofree gchar *escaped = g_strescape(text, NULL);
		g_string_append_printf(out, ": %s%s", escaped, len > 100 ? "..." : "");
	}
	g_string_append_c(out, ')');
}

static guint
first_final(GPtrArray *responses)
{
	for (guint i = 0; i < responses->len; i++) {
		RawResponse *r = g_ptr_array_index(responses, i);
		if (r->status >= 200)
			return i;
	}
	return responses->len;
}

/* A 404 answers a well-framed request for a path that does not exist: the
 * connection stays usable, and a request after it is served. Every other
 * error in the corpus is about framing, after which nothing on the
 * connection can be trusted. */
static gboolean
keeps_connection(guint status)
{
	return status == 404;
}

/* What the responses to a case must be, as a list of "; problem". */
static void
check_responses(GString *problems, GPtrArray *responses, guint expected)
{
	guint first = first_final(responses);
	guint finals = 0;

	if (first == responses->len) {
		g_string_append_printf(problems, "; no final response (expected %u)", expected);
		return;
	}
	for (guint i = first; i < responses->len; i++) {
		RawResponse *r = g_ptr_array_index(responses, i);
		guint n;

		if (r->status < 200)
			continue;
		n = ++finals;
		if (n == 1 && r->status != expected)
			g_string_append_printf(problems,
					       "; answered %u, expected %u",
					       r->status,
					       expected);
		/* the request hidden behind a refused one was read */
		if (n > 1 && expected >= 400 && !keeps_connection(expected))
			g_string_append_printf(problems,
					       "; response %u (%u) follows",
					       n,
					       r->status);
		if (n > 1 && expected < 400 && r->status >= 300)
			g_string_append_printf(problems, "; response %u is %u", n, r->status);
		if (r->status >= 400) {
			if (!is_json_type(r))
				g_string_append_printf(problems,
						       "; response %u (%u) is not application/json",
						       n,
						       r->status);
			if (!body_is_error_json(r->body))
				g_string_append_printf(
				    problems,
				    "; response %u (%u) has no UTF-8 JSON error body",
				    n,
				    r->status);
			if (!closes(r) && !keeps_connection(r->status))
				g_string_append_printf(problems,
						       "; response %u (%u) lacks Connection: close",
						       n,
						       r->status);
		} else if (r->status < 300 && !body_is_json(r->body, NULL)) {
			g_string_append_printf(problems,
					       "; the body of response %u is not JSON",
					       n);
		}
	}
}

/* ---------- a case ---------- */

typedef struct {
	guint expected;
	gint64 grace;
} CaseRead;

/* Once the first final response fails the case, what the server does next
 * (serving the hidden request, most often) follows at once: a short grace,
 * not the whole deadline. */
static gboolean
until_decided(const GString *received, gint64 *deadline, gpointer user_data)
{
	CaseRead *cr = user_data;
	g_autofree gchar *leftover = NULL;
	g_autoptr(GPtrArray) responses =
	    parse_responses(received->str, received->len, FALSE, &leftover);
	guint i = first_final(responses);
	RawResponse *r;

	if (i == responses->len)
		return FALSE;
	r = g_ptr_array_index(responses, i);
	if (r->status != cr->expected ||
	    (r->status >= 400 && !keeps_connection(r->status) && !closes(r)))
		*deadline = MIN(*deadline, g_get_monotonic_time() + cr->grace);
	return FALSE;
}

static gboolean
until_one_response(const GString *received, gint64 *deadline, gpointer user_data)
{
	g_autofree gchar *leftover = NULL;
	g_autoptr(GPtrArray) responses =
	    parse_responses(received->str, received->len, FALSE, &leftover);
	return responses->len > 0;
}

static GByteArray *
substitute(const gchar *data, gsize len)
{
	GByteArray *out = g_byte_array_sized_new(len + 64);

	for (gsize i = 0; i < len;) {
		if (len - i >= 7 && memcmp(data + i, "@TOKEN@", 7) == 0) {
			g_byte_array_append(out, (const guint8 *)fixture.token, TOKEN_LEN);
			i += 7;
		} else if (len - i >= 7 && memcmp(data + i, "@AGENT@", 7) == 0) {
			g_byte_array_append(out, (const guint8 *)fixture.agent, AGENT_LEN);
			i += 7;
		} else {
			g_byte_array_append(out, (const guint8 *)data + i, 1);
			i++;
		}
	}
	return out;
}

/* The head of a request that asks to wait for 100 Continue before its
 * body is sent alone: that is how the 100 is seen. Returns its length, 0
 * when the request does not ask. */
static gsize
expect_continue_head(const guint8 *data, gsize len)
{
	g_autofree gchar *head = NULL;
	gsize head_len = 0;

	for (gsize i = 0; i + 4 <= len && head_len == 0; i++) {
		if (memcmp(data + i, "\r\n\r\n", 4) == 0)
			head_len = i + 4;
	}
	if (head_len == 0)
		return 0;
	head = g_ascii_strdown((const gchar *)data, head_len);
	if (strstr(head, "\r\nexpect: 100-continue\r\n") == NULL)
		return 0;
	return head_len;
}

/* A plain request on a fresh connection. */
static gboolean
still_serving(GString *problems)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GSocketConnection) conn = raw_connect(&error);
	g_autoptr(GString) received = g_string_new(NULL);
	g_autoptr(GPtrArray) responses = NULL;
	g_autofree gchar *request = NULL;
	g_autofree gchar *leftover = NULL;
	RawEnd end;

	if (conn == NULL) {
		g_string_append_printf(problems, "; then no connection: %s", error->message);
		return FALSE;
	}
	request = g_strdup_printf("GET /api/v1/conversations HTTP/1.1\r\n"
				  "Host: localhost\r\n"
				  "Authorization: Bearer %s\r\n"
				  "Connection: close\r\n\r\n",
				  fixture.token);
	if (!raw_send(conn, request, strlen(request), &error)) {
		g_string_append_printf(problems,
				       "; then a plain request failed: %s",
				       error->message);
		return FALSE;
	}
	end = raw_read(g_socket_connection_get_socket(conn),
		       received,
		       deadline_in_ms(DEADLINE_S * 1000),
		       NULL,
		       NULL);
	responses = parse_responses(received->str, received->len, end == RAW_EOF, &leftover);
	if (responses->len == 0 ||
	    ((RawResponse *)g_ptr_array_index(responses, 0))->status != 200) {
		g_string_append(problems, "; then a plain request was not served");
		return FALSE;
	}
	return TRUE;
}

static void
test_case(gconstpointer user_data)
{
	const gchar *name = user_data;
	g_autofree gchar *path = g_build_filename(fixture.corpus, name, NULL);
	g_autofree gchar *contents = NULL;
	g_autoptr(GByteArray) request = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GSocketConnection) conn = NULL;
	g_autoptr(GString) received = g_string_new(NULL);
	g_autoptr(GString) problems = g_string_new(NULL);
	g_autoptr(GString) story = g_string_new(NULL);
	g_autoptr(GPtrArray) responses = NULL;
	g_autofree gchar *leftover = NULL;
	CaseRead cr = {0};
	gsize len = 0;
	gsize sent = 0;
	gint64 start;
	RawEnd end;

	fixture_ensure_daemon();
	g_assert_true(g_file_get_contents(path, &contents, &len, &error));
	cr.expected = (guint)strtoul(name, NULL, 10);
	cr.grace = (gint64)GRACE_MS * 1000 * fixture.slowdown;
	g_assert_cmpuint(cr.expected, >=, 100);
	request = substitute(contents, len);
	conn = raw_connect(&error);
	g_assert_no_error(error);

	/* Expect: 100-continue: the head, the 100, then the body */
	sent = expect_continue_head(request->data, request->len);
	if (sent > 0) {
		if (!raw_send(conn, (const gchar *)request->data, sent, &error))
			g_string_append_printf(story, "[head not sent: %s] ", error->message);
		g_clear_error(&error);
		(void)raw_read(g_socket_connection_get_socket(conn),
			       received,
			       deadline_in_ms(DEADLINE_S * 1000),
			       until_one_response,
			       NULL);
		if (!g_str_has_prefix(received->str, "HTTP/1.1 100 ")) {
			g_string_append(problems, "; no 100 Continue before the body");
			if (received->len > 0)
				sent = request->len; /* answered already: no body */
		}
	}
	if (sent < request->len &&
	    !raw_send(conn, (const gchar *)request->data + sent, request->len - sent, &error))
		g_string_append_printf(story, "[not all sent: %s] ", error->message);
	g_clear_error(&error);

	start = g_get_monotonic_time();
	end = raw_read(g_socket_connection_get_socket(conn),
		       received,
		       deadline_in_ms(DEADLINE_S * 1000),
		       until_decided,
		       &cr);
	responses = parse_responses(received->str, received->len, end == RAW_EOF, &leftover);

	/* what happened, in one line */
	for (guint i = 0; i < responses->len; i++) {
		if (i > 0)
			g_string_append(story, ", then ");
		describe_response(story, g_ptr_array_index(responses, i));
	}
	if (leftover != NULL)
		g_string_append_printf(story,
				       "%s%s",
				       responses->len > 0 ? ", then " : "",
				       leftover);
	if (responses->len == 0 && leftover == NULL)
		g_string_append(story, "no response");
	g_string_append_printf(story,
			       "; %s after %.1f s",
			       raw_end_to_string(end),
			       (g_get_monotonic_time() - start) / (gdouble)G_USEC_PER_SEC);
	g_test_message("%s: %s", name, story->str);

	check_responses(problems, responses, cr.expected);
	if (leftover != NULL)
		g_string_append_printf(problems, "; %s", leftover);
	/* an error closes; a valid case closes because its last request asks */
	if (end != RAW_EOF)
		g_string_append_printf(problems,
				       "; the connection was %s, not closed",
				       raw_end_to_string(end));

	if (!still_serving(problems) && confab_test_wait_until(daemon_exited, NULL, 2000))
		g_string_append(problems, "; confabd died");

	if (problems->len > 0)
		g_test_fail_printf("%s [%s]", problems->str + 2, story->str);
}

/* ---------- main ---------- */

static gint
compare_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const gchar *const *)a, *(const gchar *const *)b);
}

static GPtrArray *
corpus_files(const gchar *dir_path)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GDir) dir = g_dir_open(dir_path, 0, &error);
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	const gchar *name;

	g_assert_no_error(error);
	while ((name = g_dir_read_name(dir)) != NULL) {
		if (g_str_has_suffix(name, ".http"))
			g_ptr_array_add(names, g_strdup(name));
	}
	g_ptr_array_sort(names, compare_names);
	return names;
}

gint
main(gint argc, gchar **argv)
{
	g_autoptr(GPtrArray) names = NULL;
	g_autoptr(GPtrArray) args = NULL;
	const gchar *wrapper = g_getenv("CONFABD_WRAPPER");
	gint ret;

	/* every case reports, however many failed before it */
	args = g_ptr_array_new();
	g_ptr_array_add(args, argv[0]);
	g_ptr_array_add(args, (gpointer) "--keep-going");
	for (gint i = 1; i < argc; i++)
		g_ptr_array_add(args, argv[i]);
	g_ptr_array_add(args, NULL);
	argc = (gint)args->len - 1;
	argv = (gchar **)args->pdata;
	confab_test_init(&argc, &argv, TRUE);
	fixture.slowdown = wrapper != NULL && *wrapper != '\0' ? 10 : 1;
	/* g_test_get_filename() only works inside a test case */
	fixture.corpus = g_test_build_filename(G_TEST_DIST, "integration", "http-corpus", NULL);
	names = corpus_files(fixture.corpus);
	g_assert_cmpuint(names->len, >, 0);
	for (guint i = 0; i < names->len; i++) {
		const gchar *name = g_ptr_array_index(names, i);
		g_autofree gchar *test_path = g_strconcat("/confab/http-framing/", name, NULL);
		g_test_add_data_func(test_path, name, test_case);
	}

	fixture_start_daemon();
	ret = g_test_run();
	if (confab_test_daemon_stop(fixture.daemon) != 0)
		ret = 1;
	fixture_drop_daemon();
	g_free(fixture.corpus);
	confab_test_finish();
	return ret;
}
