/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "confab-test-helper.h"

/*
 * Flow control: a stream is as fast as its reader. A real confabd relays
 * tests/fake-upstream's "tiny" answer — tens of thousands of one-byte
 * deltas, written as fast as the socket takes them, some 270 bytes each
 * once relayed — to raw clients that read 64 KiB at a time at a set speed
 * through a 128 KiB receive buffer, pause, or stop. Each client that
 * keeps reading gets every byte and [DONE], the answer is stored as
 * completed, and the daemon's RSS grows by far less than the streams (it
 * holds each about max_stream_buffer ahead of its reader). A client that
 * takes nothing for idle_timeout is cut: the answer is stored as
 * incomplete, and one that reads again finds a stream_cut error event,
 * [DONE] and the end of the chunked body — exactly what was stored.
 */

#define API_KEY	     "sk-fake-flow-0123456789"
#define IDLE_TIMEOUT 4
#define CUT_GRACE    5 /* CUT_GRACE_SECONDS in confab-http-server.c */
#define CONFIG	     "[limits]\nidle_timeout=4\n"
#define MB	     (1000.0 * 1000.0)
#define READ_SIZE    65536
#define RCVBUF	     131072

static gboolean
under_wrapper(void)
{
	const gchar *wrapper = g_getenv("CONFABD_WRAPPER");
	return wrapper != NULL && *wrapper != '\0';
}

static gboolean
rss_meaningful(void)
{
	return !under_wrapper() && g_getenv("ASAN_OPTIONS") == NULL;
}

/* Deltas in an answer: under ASan or valgrind, which relay them ten to a
 * hundred times slower, a tenth (the streams are still several times
 * max_stream_buffer, so the flow is held and opened again and again). */
static guint
scaled(guint n)
{
	return under_wrapper() || g_getenv("ASAN_OPTIONS") != NULL ? n / 10 : n;
}

/* ---------- the fixture ---------- */

typedef struct {
	ConfabTestFakeUpstream *up;
	ConfabTestDaemon *daemon;
	gchar *token;
	guint64 rss_start_kib;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	f->up = confab_test_fake_upstream_start();
	f->daemon = confab_test_daemon_start(data != NULL ? data : CONFIG, NULL);
	f->token = confab_test_create_token(f->daemon, "alice", "chat.completions", NULL, NULL);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_assert_cmpint(confab_test_daemon_stop(f->daemon), ==, 0);
	confab_test_daemon_free(f->daemon);
	confab_test_fake_upstream_free(f->up);
	g_free(f->token);
}

/* An openai agent for the fake's @model; timeouts of 0 are the defaults. */
static gchar *
create_agent(Fixture *f, const gchar *model, guint idle_timeout, guint total_timeout)
{
	GVariantDict dict;

	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "name", "s", model);
	g_variant_dict_insert(&dict, "provider", "s", "openai");
	g_variant_dict_insert(&dict, "base_url", "s", f->up->base_url);
	g_variant_dict_insert(&dict, "upstream_model", "s", model);
	g_variant_dict_insert(&dict, "api_key", "s", API_KEY);
	if (idle_timeout > 0)
		g_variant_dict_insert(&dict, "idle_timeout", "u", idle_timeout);
	if (total_timeout > 0)
		g_variant_dict_insert(&dict, "total_timeout", "u", total_timeout);
	return confab_test_create_agent_props(f->daemon, g_variant_dict_end(&dict));
}

static guint64
daemon_status_kib(Fixture *f, const gchar *field)
{
	const gchar *pid = g_subprocess_get_identifier(f->daemon->process);
	g_autofree gchar *path = g_strdup_printf("/proc/%s/status", pid);
	g_autofree gchar *text = NULL;
	const gchar *line;

	g_assert_nonnull(pid);
	if (!g_file_get_contents(path, &text, NULL, NULL))
		return 0;
	line = strstr(text, field);
	return line != NULL ? g_ascii_strtoull(line + strlen(field), NULL, 10) : 0;
}

/* ---------- clients that read at their own pace ---------- */

typedef struct {
	const gchar *label;
	gdouble rate;			   /* bytes per second; 0: as fast as it can */
	gsize pause_at;			   /* after this many bytes... */
	gint64 pause_us;		   /* ...it takes nothing for this long; -1: it stops */
	gboolean (*resume)(gpointer data); /* with pause_us 0: until this holds */
	gpointer resume_data;

	gint fd;
	GString *raw;
	gint64 start;
	gint64 paused_since; /* 0: reading */
	gint64 paused_us;    /* in all, not counted against its rate */
	gboolean paused_once;
	gboolean eof;
	gint64 elapsed_us;
} Reader;

static gint
connect_daemon(Fixture *f)
{
	const gchar *colon = strrchr(f->daemon->url, ':');
	struct sockaddr_in sin = {0};
	gint rcvbuf = RCVBUF;
	gint fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	g_assert_cmpint(fd, >=, 0);
	g_assert_nonnull(colon);
	/* a real client's window, rather than the megabytes loopback grants */
	g_assert_cmpint(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), ==, 0);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((guint16)atoi(colon + 1));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	g_assert_cmpint(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), ==, 0);
	return fd;
}

static void
reader_post(Fixture *f, Reader *r, const gchar *path, const gchar *body);

static void
reader_start(Fixture *f, Reader *r, const gchar *agent, const gchar *text)
{
	g_autofree gchar *body = g_strdup_printf("{\"model\":\"%s\",\"stream\":true,\"messages\":"
						 "[{\"role\":\"user\",\"content\":\"%s\"}]}",
						 agent,
						 text);
	reader_post(f, r, "/api/v1/chat/completions", body);
}

static void
reader_post(Fixture *f, Reader *r, const gchar *path, const gchar *body)
{
	g_autofree gchar *request =
	    g_strdup_printf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
			    "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
			    "Content-Length: %zu\r\n\r\n%s",
			    path,
			    f->token,
			    strlen(body),
			    body);
	gsize len = strlen(request);
	const gchar *p = request;

	r->fd = connect_daemon(f);
	r->raw = g_string_new(NULL);
	while (len > 0) {
		gssize n = send(r->fd, p, len, MSG_NOSIGNAL);
		g_assert_cmpint(n, >, 0);
		p += n;
		len -= (gsize)n;
	}
	r->start = g_get_monotonic_time();
}

/* Whether @r may read now, and if not, in how many ms it may. */
static gboolean
reader_may_read(Reader *r, gint64 now, gint *wait_ms)
{
	*wait_ms = -1;
	if (r->eof)
		return FALSE;
	if (!r->paused_once && r->pause_at > 0 && r->raw->len >= r->pause_at) {
		r->paused_once = TRUE;
		r->paused_since = now;
		g_test_message("%s: pauses after %zu bytes", r->label, r->raw->len);
	}
	if (r->paused_since != 0) {
		gboolean over = r->pause_us > 0	   ? now >= r->paused_since + r->pause_us
				: r->pause_us == 0 ? r->resume(r->resume_data)
						   : FALSE;
		if (!over) {
			*wait_ms = 20;
			return FALSE;
		}
		g_test_message("%s: reads again after %.2f s",
			       r->label,
			       (now - r->paused_since) / 1e6);
		r->paused_us += now - r->paused_since;
		r->paused_since = 0;
	}
	if (r->rate > 0) {
		gint64 due = r->start + r->paused_us + (gint64)(r->raw->len / r->rate * 1e6);
		if (now < due) {
			*wait_ms = (gint)MAX((due - now) / 1000, 1);
			return FALSE;
		}
	}
	return TRUE;
}

/* Runs @n readers side by side until each has its whole response (the
 * daemon closes the connection after it) or @timeout_s passes. */
static void
run_readers(Reader *readers, guint n, guint timeout_s)
{
	gint64 deadline = g_get_monotonic_time() + (gint64)timeout_s * G_USEC_PER_SEC;
	gchar *buf = g_malloc(READ_SIZE);

	for (;;) {
		struct pollfd pfds[8];
		Reader *polled[8];
		guint npoll = 0;
		gint timeout = 100;
		gint64 now = g_get_monotonic_time();
		gboolean running = FALSE;

		g_assert_cmpuint(n, <=, G_N_ELEMENTS(pfds));
		for (guint i = 0; i < n; i++) {
			Reader *r = &readers[i];
			gint wait_ms;
			if (r->eof)
				continue;
			running = TRUE;
			if (reader_may_read(r, now, &wait_ms)) {
				pfds[npoll].fd = r->fd;
				pfds[npoll].events = POLLIN;
				polled[npoll++] = r;
			} else if (wait_ms >= 0) {
				timeout = MIN(timeout, wait_ms);
			}
		}
		if (!running)
			break;
		g_assert_cmpint(now, <, deadline);
		if (poll(pfds, npoll, timeout) <= 0)
			continue;
		for (guint i = 0; i < npoll; i++) {
			Reader *r = polled[i];
			gssize got;
			if (pfds[i].revents == 0)
				continue;
			got = recv(r->fd, buf, READ_SIZE, MSG_DONTWAIT);
			if (got < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (got <= 0) {
				r->eof = TRUE;
				r->elapsed_us = g_get_monotonic_time() - r->start;
				close(r->fd);
				r->fd = -1;
				continue;
			}
			g_string_append_len(r->raw, buf, got);
		}
	}
	g_free(buf);
}

static void
reader_clear(Reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	if (r->raw != NULL)
		g_string_free(r->raw, TRUE);
}

/* ---------- what a client got ---------- */

typedef struct {
	gboolean ended;	   /* the chunked body ended with its zero chunk */
	gboolean done;	   /* [DONE] was the last event */
	GString *text;	   /* the content deltas, joined */
	gchar *error_code; /* an in-stream error's code */
	guint events;
} Got;

static void
got_free(Got *got)
{
	g_string_free(got->text, TRUE);
	g_free(got->error_code);
	g_free(got);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Got, got_free)

static Got *
parse_response(GString *raw)
{
	Got *got = g_new0(Got, 1);
	const gchar *p = strstr(raw->str, "\r\n\r\n");
	const gchar *end = raw->str + raw->len;
	g_autoptr(GString) body = g_string_new(NULL);
	const gchar *e;

	got->text = g_string_new(NULL);
	g_assert_true(g_str_has_prefix(raw->str, "HTTP/1.1 200"));
	g_assert_nonnull(p);
	g_assert_nonnull(g_strstr_len(raw->str, p - raw->str, "Transfer-Encoding: chunked"));
	p += 4;
	while (p < end) {
		gchar *line_end = NULL;
		guint64 size = g_ascii_strtoull(p, &line_end, 16);
		if (line_end == p || line_end + 2 > end || strncmp(line_end, "\r\n", 2) != 0)
			break;
		p = line_end + 2;
		if (size == 0) {
			got->ended = TRUE;
			break;
		}
		if ((guint64)(end - p) < size + 2)
			break;
		g_string_append_len(body, p, (gssize)size);
		p += size + 2;
	}
	for (e = body->str; e < body->str + body->len;) {
		/* memmem within bounds: strstr() under ASan measures the whole
		 * rest at every call */
		const gchar *sep = memmem(e, body->str + body->len - e, "\n\n", 2);
		g_autofree gchar *data = NULL;
		g_autoptr(JsonNode) node = NULL;
		const gchar *content;

		if (sep == NULL)
			break;
		g_assert_true(g_str_has_prefix(e, "data: "));
		data = g_strndup(e + 6, sep - e - 6);
		e = sep + 2;
		got->events++;
		g_assert_false(got->done); /* nothing after [DONE] */
		if (g_str_equal(data, "[DONE]")) {
			got->done = TRUE;
			continue;
		}
		g_assert_null(got->error_code); /* nothing but [DONE] after an error */
		node = json_from_string(data, NULL);
		g_assert_nonnull(node);
		if (confab_test_json_get(node, "error") != NULL) {
			got->error_code = g_strdup(confab_test_json_string(node, "error.code"));
			continue;
		}
		content = confab_test_json_string(node, "choices.0.delta.content");
		if (content != NULL)
			g_string_append(got->text, content);
	}
	return got;
}

/* The fake's "tiny:N" text: N letters, a to z over and over. */
static gchar *
tiny_text(guint n)
{
	gchar *text = g_malloc(n + 1);
	for (guint i = 0; i < n; i++)
		text[i] = (gchar)('a' + i % 26);
	text[n] = '\0';
	return text;
}

/* ---------- what was stored ---------- */

typedef struct {
	gchar *status;
	gchar *text;
} Stored;

static void
stored_free(Stored *s)
{
	g_free(s->status);
	g_free(s->text);
	g_free(s);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Stored, stored_free)

/* The answer of the conversation titled @title, or NULL while there is
 * none. */
static Stored *
stored_answer(Fixture *f, const gchar *title)
{
	g_autoptr(ConfabTestResponse) convs =
	    confab_test_http(f->daemon, "GET", "/api/v1/conversations?limit=100", f->token, NULL);
	g_autoptr(ConfabTestResponse) list = NULL;
	g_autofree gchar *path = NULL;
	const gchar *session = NULL;
	JsonArray *data;
	Stored *s;

	g_assert_cmpuint(convs->status, ==, 200);
	data = json_node_get_array(confab_test_json_get(convs->json, "data"));
	for (guint i = 0; i < json_array_get_length(data); i++) {
		JsonNode *conv = json_array_get_element(data, i);
		if (g_strcmp0(confab_test_json_string(conv, "title"), title) == 0)
			session = confab_test_json_string(conv, "id");
	}
	if (session == NULL)
		return NULL;
	path = g_strdup_printf("/api/v1/conversations/%s/messages?order=asc", session);
	list = confab_test_http(f->daemon, "GET", path, f->token, NULL);
	g_assert_cmpuint(list->status, ==, 200);
	if (confab_test_json_get(list->json, "data.1") == NULL)
		return NULL;
	g_assert_cmpstr(confab_test_json_string(list->json, "data.1.role"), ==, "assistant");
	s = g_new0(Stored, 1);
	s->status = g_strdup(confab_test_json_string(list->json, "data.1.status"));
	s->text = g_strdup(confab_test_json_string(list->json, "data.1.content.0.text"));
	if (s->text == NULL)
		s->text = g_strdup("");
	return s;
}

typedef struct {
	Fixture *f;
	const gchar *title;
	const gchar *status;
} StatusWait;

static gboolean
has_status(gpointer data)
{
	StatusWait *w = data;
	g_autoptr(Stored) s = stored_answer(w->f, w->title);
	return s != NULL && g_strcmp0(s->status, w->status) == 0;
}

static void
assert_stored(Fixture *f, const gchar *title, const gchar *status, const gchar *text)
{
	StatusWait w = {f, title, status};
	g_autoptr(Stored) s = NULL;

	g_assert_true(confab_test_wait_until(has_status, &w, 30000));
	s = stored_answer(f, title);
	g_assert_cmpstr(s->status, ==, status);
	g_assert_cmpuint(strlen(s->text), ==, strlen(text));
	g_assert_true(strcmp(s->text, text) == 0);
}

/* ---------- the tests ---------- */

/* Clients at 16, 4 and 1 MB/s each get the whole answer. */
static void
check_reader_at(Fixture *f, gdouble mb_per_s, guint deltas)
{
	g_autofree gchar *model = g_strdup_printf("tiny:%u", deltas);
	g_autofree gchar *agent = create_agent(f, model, 0, 0);
	g_autofree gchar *title = g_strdup_printf("at %.0f MB/s", mb_per_s);
	g_autofree gchar *want = tiny_text(deltas);
	Reader r = {.label = title, .rate = mb_per_s * MB, .fd = -1};
	g_autoptr(Got) got = NULL;
	guint64 rss = daemon_status_kib(f, "VmRSS:");
	guint64 hwm;

	reader_start(f, &r, agent, title);
	run_readers(&r, 1, 120);
	hwm = daemon_status_kib(f, "VmHWM:");
	got = parse_response(r.raw);
	g_test_message(
	    "%s: %zu bytes in %.2f s (%.2f MB/s), %u events; daemon RSS %" G_GUINT64_FORMAT
	    " KiB before, peak %" G_GUINT64_FORMAT " KiB",
	    title,
	    r.raw->len,
	    r.elapsed_us / 1e6,
	    r.raw->len / (r.elapsed_us / 1e6) / MB,
	    got->events,
	    rss,
	    hwm);
	g_assert_true(got->ended);
	g_assert_true(got->done);
	g_assert_null(got->error_code);
	g_assert_cmpstr(got->text->str, ==, want);
	if (rss_meaningful())
		g_assert_cmpuint(hwm, <, rss + 64 * 1024);
	assert_stored(f, title, "completed", want);
	reader_clear(&r);
}

static void
test_reader_16mbs(Fixture *f, gconstpointer data)
{
	check_reader_at(f, 16, scaled(60000));
}

static void
test_reader_4mbs(Fixture *f, gconstpointer data)
{
	check_reader_at(f, 4, scaled(30000));
}

static void
test_reader_1mbs(Fixture *f, gconstpointer data)
{
	check_reader_at(f, 1, scaled(15000));
}

/* Four clients at four speeds at once. */
static void
test_four_readers(Fixture *f, gconstpointer data)
{
	g_autofree gchar *model = g_strdup_printf("tiny:%u", scaled(15000));
	g_autofree gchar *agent = create_agent(f, model, 0, 0);
	g_autofree gchar *want = tiny_text(scaled(15000));
	Reader r[4] = {
	    {.label = "four: 1 MB/s", .rate = 1 * MB, .fd = -1},
	    {.label = "four: 4 MB/s", .rate = 4 * MB, .fd = -1},
	    {.label = "four: 16 MB/s", .rate = 16 * MB, .fd = -1},
	    {.label = "four: as fast as it can", .rate = 0, .fd = -1},
	};
	guint64 rss = daemon_status_kib(f, "VmRSS:");
	guint64 hwm;

	for (guint i = 0; i < G_N_ELEMENTS(r); i++)
		reader_start(f, &r[i], agent, r[i].label);
	run_readers(r, G_N_ELEMENTS(r), 120);
	hwm = daemon_status_kib(f, "VmHWM:");
	g_test_message("four readers: daemon RSS %" G_GUINT64_FORMAT
		       " KiB before, peak %" G_GUINT64_FORMAT " KiB",
		       rss,
		       hwm);
	for (guint i = 0; i < G_N_ELEMENTS(r); i++) {
		g_autoptr(Got) got = parse_response(r[i].raw);
		g_test_message("%s: %zu bytes in %.2f s",
			       r[i].label,
			       r[i].raw->len,
			       r[i].elapsed_us / 1e6);
		g_assert_true(got->ended);
		g_assert_true(got->done);
		g_assert_null(got->error_code);
		g_assert_cmpstr(got->text->str, ==, want);
		assert_stored(f, r[i].label, "completed", want);
		reader_clear(&r[i]);
	}
	if (rss_meaningful())
		g_assert_cmpuint(hwm, <, rss + 64 * 1024);
}

/*
 * A client that pauses for less than idle_timeout gets everything; the
 * upstream, held back meanwhile, is not blamed by its 1 s idle timer.
 */
static void
test_pause(Fixture *f, gconstpointer data)
{
	g_autofree gchar *model = g_strdup_printf("tiny:%u", scaled(30000));
	g_autofree gchar *agent = create_agent(f, model, 1, 0);
	g_autofree gchar *want = tiny_text(scaled(30000));
	Reader r = {.label = "pause",
		    .pause_at = 256 * 1024,
		    .pause_us = (IDLE_TIMEOUT - 1) * G_USEC_PER_SEC,
		    .fd = -1};
	g_autoptr(Got) got = NULL;

	reader_start(f, &r, agent, "pause");
	run_readers(&r, 1, 120);
	got = parse_response(r.raw);
	g_assert_true(r.paused_once);
	g_assert_true(got->ended);
	g_assert_true(got->done);
	g_assert_null(got->error_code);
	g_assert_cmpstr(got->text->str, ==, want);
	assert_stored(f, "pause", "completed", want);
	reader_clear(&r);
}

/* The total timeout still runs while the client holds the upstream back:
 * the client that comes back finds the answer so far, the timeout, [DONE]. */
static void
test_total_timeout_while_held(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "tiny:60000", 0, 2);
	Reader r = {.label = "held past total_timeout",
		    .pause_at = 512 * 1024,
		    .pause_us = (IDLE_TIMEOUT - 1) * G_USEC_PER_SEC,
		    .fd = -1};
	g_autoptr(Got) got = NULL;
	g_autoptr(Stored) stored = NULL;

	reader_start(f, &r, agent, "held past total_timeout");
	run_readers(&r, 1, 120);
	got = parse_response(r.raw);
	g_assert_true(got->ended);
	g_assert_true(got->done);
	g_assert_cmpstr(got->error_code, ==, "upstream_timeout");
	g_assert_cmpuint(got->text->len, <, 60000);
	{
		StatusWait w = {f, "held past total_timeout", "failed"};
		g_assert_true(confab_test_wait_until(has_status, &w, 30000));
	}
	stored = stored_answer(f, "held past total_timeout");
	g_assert_cmpstr(stored->text, ==, got->text->str);
	reader_clear(&r);
}

/* A client that stops reading is cut after idle_timeout, not before, and
 * the answer is stored as incomplete. */
static void
test_reader_stops(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "tiny:60000", 0, 0);
	Reader r = {.label = "stops", .fd = -1};
	StatusWait w = {f, "stops", "incomplete"};
	gint64 stopped;
	g_autoptr(Stored) stored = NULL;
	gchar buf[4096];

	reader_start(f, &r, agent, "stops");
	/* the head and a little: then nothing */
	while (strstr(r.raw->str, "\"role\":\"assistant\"") == NULL) {
		gssize n = recv(r.fd, buf, sizeof(buf), 0);
		g_assert_cmpint(n, >, 0);
		g_string_append_len(r.raw, buf, n);
	}
	stopped = g_get_monotonic_time();
	g_assert_true(confab_test_wait_until(has_status, &w, 60000));
	g_test_message("stored as incomplete %.2f s after the client stopped",
		       (g_get_monotonic_time() - stopped) / 1e6);
	/* cut for taking nothing, not for the size of what waits */
	g_assert_cmpint(g_get_monotonic_time() - stopped, >=, (IDLE_TIMEOUT - 1) * G_USEC_PER_SEC);
	stored = stored_answer(f, "stops");
	g_assert_cmpuint(strlen(stored->text), <, 60000);
	reader_clear(&r);
}

static gboolean
cut_stored(gpointer data)
{
	return has_status(data);
}

/* A client that takes nothing for idle_timeout, then reads again: the
 * stream ends properly, with a stream_cut event and [DONE], and it got
 * exactly what was stored. */
static void
test_cut_then_read(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "tiny:60000", 0, 0);
	StatusWait w = {f, "cut, then reads", "incomplete"};
	Reader r = {.label = "cut, then reads",
		    .pause_at = 256 * 1024,
		    .pause_us = 0,
		    .resume = cut_stored,
		    .resume_data = &w,
		    .fd = -1};
	g_autoptr(Got) got = NULL;
	g_autoptr(Stored) stored = NULL;

	reader_start(f, &r, agent, "cut, then reads");
	run_readers(&r, 1, 120);
	got = parse_response(r.raw);
	g_test_message("after the cut: %zu bytes, %zu of text, error %s",
		       r.raw->len,
		       got->text->len,
		       got->error_code);
	g_assert_true(got->ended);
	g_assert_true(got->done);
	g_assert_cmpstr(got->error_code, ==, "stream_cut");
	stored = stored_answer(f, "cut, then reads");
	g_assert_cmpstr(stored->status, ==, "incomplete");
	g_assert_cmpstr(stored->text, ==, got->text->str);
	reader_clear(&r);
}

/* A real client: curl --limit-rate. */
static void
test_curl_limit_rate(Fixture *f, gconstpointer data)
{
	g_autofree gchar *curl = g_find_program_in_path("curl");
	g_autofree gchar *model = NULL;
	g_autofree gchar *agent = NULL;
	g_autofree gchar *want = NULL;
	g_autofree gchar *body = NULL;
	g_autofree gchar *auth = NULL;
	g_autofree gchar *url = NULL;
	g_autofree gchar *out = NULL;
	g_autofree gchar *err = NULL;
	g_autoptr(GSubprocess) proc = NULL;
	g_autoptr(GError) error = NULL;
	g_autoptr(GString) raw = NULL;
	g_autoptr(Got) got = NULL;
	gint64 start;

	if (curl == NULL) {
		g_test_skip("curl is not installed");
		return;
	}
	model = g_strdup_printf("tiny:%u", scaled(60000));
	agent = create_agent(f, model, 0, 0);
	want = tiny_text(scaled(60000));
	body = g_strdup_printf("{\"model\":\"%s\",\"stream\":true,\"messages\":"
			       "[{\"role\":\"user\",\"content\":\"curl\"}]}",
			       agent);
	auth = g_strdup_printf("Authorization: Bearer %s", f->token);
	url = g_strdup_printf("%s/api/v1/chat/completions", f->daemon->url);
	start = g_get_monotonic_time();
	/* --raw: the chunked body as it came, to check that it ended */
	proc = g_subprocess_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
				&error,
				curl,
				"-sS",
				"--include",
				"--raw",
				"--limit-rate",
				"10M",
				"-H",
				auth,
				"-H",
				"Content-Type: application/json",
				"--data-binary",
				body,
				url,
				NULL);
	g_assert_no_error(error);
	g_subprocess_communicate_utf8(proc, NULL, NULL, &out, &err, &error);
	g_assert_no_error(error);
	g_test_message("curl --limit-rate 10M: %zu bytes in %.2f s, exit %d %s",
		       strlen(out),
		       (g_get_monotonic_time() - start) / 1e6,
		       g_subprocess_get_exit_status(proc),
		       err);
	g_assert_cmpint(g_subprocess_get_exit_status(proc), ==, 0);
	raw = g_string_new(out);
	got = parse_response(raw);
	g_assert_true(got->ended);
	g_assert_true(got->done);
	g_assert_null(got->error_code);
	g_assert_cmpstr(got->text->str, ==, want);
	assert_stored(f, "curl", "completed", want);
}

/* The echo agent, whose answer is the user's own text, is held back too:
 * a 6 MB text to a client reading at 4 MB/s. */
static void
test_echo_reader(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = confab_test_create_agent(f->daemon, "echo", "echo");
	GString *text = g_string_new(NULL);
	g_autofree gchar *want = NULL;
	Reader r = {.label = "echo at 4 MB/s", .rate = 4 * MB, .fd = -1};
	g_autoptr(Got) got = NULL;
	guint64 rss, hwm;

	for (guint i = 0; text->len < scaled(1024 * 1024); i++)
		g_string_append_printf(text, "echo%u ", i);
	want = g_string_free(text, FALSE);
	rss = daemon_status_kib(f, "VmRSS:");
	reader_start(f, &r, agent, want);
	run_readers(&r, 1, 120);
	hwm = daemon_status_kib(f, "VmHWM:");
	got = parse_response(r.raw);
	g_test_message("echo: %zu bytes in %.2f s; RSS %" G_GUINT64_FORMAT
		       " -> peak %" G_GUINT64_FORMAT " KiB",
		       r.raw->len,
		       r.elapsed_us / 1e6,
		       rss,
		       hwm);
	g_assert_true(got->ended);
	g_assert_true(got->done);
	g_assert_null(got->error_code);
	g_assert_cmpstr(got->text->str, ==, want);
	reader_clear(&r);
}

/* ---------- the Responses API ---------- */

typedef struct {
	gboolean ended;	   /* the chunked body ended with its zero chunk */
	gchar *terminal;   /* the last event's type */
	guint terminals;   /* response.completed, .incomplete, .failed */
	GString *text;	   /* the output_text deltas, joined */
	gchar *error_code; /* an error event's code */
	gboolean gaps;	   /* a sequence_number out of order */
} GotResponse;

static void
got_response_free(GotResponse *got)
{
	g_free(got->terminal);
	g_string_free(got->text, TRUE);
	g_free(got->error_code);
	g_free(got);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(GotResponse, got_response_free)

static GotResponse *
parse_responses_stream(GString *raw)
{
	GotResponse *got = g_new0(GotResponse, 1);
	g_autoptr(GString) body = g_string_new(NULL);
	const gchar *p = strstr(raw->str, "\r\n\r\n");
	const gchar *end = raw->str + raw->len;
	gint64 next = 0;

	got->text = g_string_new(NULL);
	g_assert_true(g_str_has_prefix(raw->str, "HTTP/1.1 200"));
	g_assert_nonnull(p);
	for (p += 4; p < end;) {
		gchar *line_end = NULL;
		guint64 size = g_ascii_strtoull(p, &line_end, 16);
		if (line_end == p || line_end + 2 > end || strncmp(line_end, "\r\n", 2) != 0)
			break;
		p = line_end + 2;
		if (size == 0) {
			got->ended = TRUE;
			break;
		}
		if ((guint64)(end - p) < size + 2)
			break;
		g_string_append_len(body, p, (gssize)size);
		p += size + 2;
	}
	for (const gchar *e = body->str; e < body->str + body->len;) {
		const gchar *sep = memmem(e, body->str + body->len - e, "\n\n", 2);
		const gchar *data;
		g_autofree gchar *json = NULL;
		g_autoptr(JsonNode) node = NULL;
		const gchar *type;

		if (sep == NULL)
			break;
		data = memmem(e, sep - e, "\ndata: ", 7);
		g_assert_nonnull(data);
		json = g_strndup(data + 7, sep - data - 7);
		e = sep + 2;
		node = json_from_string(json, NULL);
		g_assert_nonnull(node);
		type = confab_test_json_string(node, "type");
		if (confab_test_json_int(node, "sequence_number") != next++)
			got->gaps = TRUE;
		g_free(got->terminal);
		got->terminal = g_strdup(type);
		if (g_str_equal(type, "response.output_text.delta"))
			g_string_append(got->text, confab_test_json_string(node, "delta"));
		else if (g_str_equal(type, "error"))
			got->error_code = g_strdup(confab_test_json_string(node, "code"));
		else if (g_str_equal(type, "response.completed") ||
			 g_str_equal(type, "response.incomplete") ||
			 g_str_equal(type, "response.failed"))
			got->terminals++;
	}
	return got;
}

static void
responses_start(Fixture *f, Reader *r, const gchar *agent, const gchar *input)
{
	g_autofree gchar *body =
	    g_strdup_printf("{\"model\":\"%s\",\"stream\":true,\"input\":\"%s\"}", agent, input);
	reader_post(f, r, "/api/v1/responses", body);
}

/* A streamed response to a client at 4 MB/s: all of it, one terminal. */
static void
test_responses_reader(Fixture *f, gconstpointer data)
{
	g_autofree gchar *model = g_strdup_printf("tiny:%u", scaled(30000));
	g_autofree gchar *agent = create_agent(f, model, 0, 0);
	g_autofree gchar *want = tiny_text(scaled(30000));
	Reader r = {.label = "responses at 4 MB/s", .rate = 4 * MB, .fd = -1};
	g_autoptr(GotResponse) got = NULL;

	responses_start(f, &r, agent, "responses at 4 MB/s");
	run_readers(&r, 1, 120);
	got = parse_responses_stream(r.raw);
	g_test_message("responses at 4 MB/s: %zu bytes in %.2f s", r.raw->len, r.elapsed_us / 1e6);
	g_assert_true(got->ended);
	g_assert_false(got->gaps);
	g_assert_cmpuint(got->terminals, ==, 1);
	g_assert_cmpstr(got->terminal, ==, "response.completed");
	g_assert_cmpstr(got->text->str, ==, want);
	assert_stored(f, "responses at 4 MB/s", "completed", want);
	reader_clear(&r);
}

/* A response stream cut for taking nothing ends with a stream_cut error and
 * one terminal event, for a client that reads again. */
static void
test_responses_cut(Fixture *f, gconstpointer data)
{
	g_autofree gchar *agent = create_agent(f, "tiny:60000", 0, 0);
	StatusWait w = {f, "responses cut", "incomplete"};
	Reader r = {.label = "responses cut",
		    .pause_at = 256 * 1024,
		    .pause_us = 0,
		    .resume = cut_stored,
		    .resume_data = &w,
		    .fd = -1};
	g_autoptr(GotResponse) got = NULL;
	g_autoptr(Stored) stored = NULL;

	responses_start(f, &r, agent, "responses cut");
	run_readers(&r, 1, 120);
	got = parse_responses_stream(r.raw);
	g_assert_true(got->ended);
	g_assert_false(got->gaps);
	g_assert_cmpstr(got->error_code, ==, "stream_cut");
	g_assert_cmpuint(got->terminals, ==, 1);
	g_assert_cmpstr(got->terminal, ==, "response.failed");
	stored = stored_answer(f, "responses cut");
	g_assert_cmpstr(stored->status, ==, "incomplete");
	g_assert_cmpstr(stored->text, ==, got->text->str);
	reader_clear(&r);
}

int
main(int argc, char **argv)
{
	gint ret;
	const struct {
		const gchar *path;
		void (*func)(Fixture *, gconstpointer);
	} tests[] = {
	    {"/confab/flow-control/reader-16mbs", test_reader_16mbs},
	    {"/confab/flow-control/reader-4mbs", test_reader_4mbs},
	    {"/confab/flow-control/reader-1mbs", test_reader_1mbs},
	    {"/confab/flow-control/four-readers", test_four_readers},
	    {"/confab/flow-control/pause", test_pause},
	    {"/confab/flow-control/total-timeout-while-held", test_total_timeout_while_held},
	    {"/confab/flow-control/reader-stops", test_reader_stops},
	    {"/confab/flow-control/cut-then-read", test_cut_then_read},
	    {"/confab/flow-control/curl-limit-rate", test_curl_limit_rate},
	    {"/confab/flow-control/echo-reader", test_echo_reader},
	    {"/confab/flow-control/responses-reader", test_responses_reader},
	    {"/confab/flow-control/responses-cut", test_responses_cut},
	};

	confab_test_init(&argc, &argv, TRUE);
	if (g_getenv("CONFAB_FAKE_UPSTREAM") == NULL) {
		g_printerr(
		    "SKIP: CONFAB_FAKE_UPSTREAM is not set; run the tests with meson test\n");
		confab_test_finish();
		return CONFAB_TEST_SKIP;
	}
	for (guint i = 0; i < G_N_ELEMENTS(tests); i++)
		g_test_add(tests[i].path,
			   Fixture,
			   NULL,
			   fixture_setup,
			   tests[i].func,
			   fixture_teardown);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
