/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabProviderOpenai"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "providers/confab-provider-openai.h"
#include "upstream/confab-sse-parser.h"
#include "upstream/confab-upstream-client.h"
#include "util/confab-error.h"
#include "util/confab-http-fields.h"
#include "util/confab-json.h"
#include "util/confab-secret-scrubber.h"
#include "util/confab-source.h"

/*
 * Any OpenAI-compatible /v1/chat/completions upstream: OpenAI, Ollama,
 * vLLM, llama.cpp's server, LM Studio, OpenRouter...
 *
 * One ConfabUpstreamClient serves every agent, so connections to an
 * upstream host are kept alive and reused; it resolves no proxy per
 * request, and relays each piece of the body as it is read. Confab always
 * asks the upstream to stream (with usage), relays each delta the moment
 * its event is parsed, and assembles the whole answer for clients that did
 * not stream. Before the first byte of an answer, connection errors, 429
 * and 5xx are retried with backoff, honouring Retry-After; after it, never.
 * The turn's GCancellable aborts the request, which closes the upstream
 * connection at once.
 *
 * Nothing the upstream says reaches the turn (so a client, a stored row or
 * a log line) before a ConfabSecretScrubber has taken the agent's key out
 * of it: an upstream that echoes the Authorization header in an error, or
 * in its answer, gets [REDACTED] relayed. Deltas are scrubbed as a stream
 * (the key may be cut between two), with a few bytes held back until the
 * next delta or the end; error messages, tool-call ids and names, and the
 * finish reason as whole strings.
 */

#define READ_CHUNK     16384
#define ERROR_BODY_MAX 65536
/* the longest type, code or param of an upstream's error that is relayed */
#define ERROR_FIELD_MAX 256
#define RETRY_BASE_MS	250
#define RETRY_MAX_MS	20000

#define UPSTREAM_JSON_MAX_DEPTH 128
#define MAX_TOOL_CALL_INDEX	1024 /* as many as a turn stores */

struct _ConfabProviderOpenai {
	GObject parent_instance;
	ConfabProviderOpenaiOptions options; /* owned strings */
	ConfabUpstreamClient *client;	     /* owned */
	GHashTable *key_files;		     /* owned: path -> KeyFile */
};

static void
confab_provider_openai_iface_init(ConfabProviderInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(ConfabProviderOpenai,
			      confab_provider_openai,
			      G_TYPE_OBJECT,
			      G_IMPLEMENT_INTERFACE(CONFAB_TYPE_PROVIDER,
						    confab_provider_openai_iface_init))

/* ---------- API keys read from files ---------- */

/* What identifies a version of the file: a rotation by rename changes the
 * inode, and one in place within the same second still changes the
 * nanoseconds of its times. */
typedef struct {
	guint64 inode;
	gint64 size;
	gint64 mtime_ns;
	gint64 ctime_ns;
} KeyFileStamp;

typedef struct {
	KeyFileStamp stamp;
	gchar *key;
} KeyFile;

static void
key_file_stamp_init(KeyFileStamp *stamp, const GStatBuf *st)
{
	stamp->inode = st->st_ino;
	stamp->size = st->st_size;
#ifdef st_mtime /* glibc and the BSDs: struct timespec st_mtim */
	stamp->mtime_ns =
	    (gint64)st->st_mtim.tv_sec * G_GINT64_CONSTANT(1000000000) + st->st_mtim.tv_nsec;
	stamp->ctime_ns =
	    (gint64)st->st_ctim.tv_sec * G_GINT64_CONSTANT(1000000000) + st->st_ctim.tv_nsec;
#else
	stamp->mtime_ns = (gint64)st->st_mtime * G_GINT64_CONSTANT(1000000000);
	stamp->ctime_ns = (gint64)st->st_ctime * G_GINT64_CONSTANT(1000000000);
#endif
}

static void
key_file_free(KeyFile *kf)
{
	if (kf->key != NULL) {
		memset(kf->key, 0, strlen(kf->key));
		g_free(kf->key);
	}
	g_free(kf);
}

/*
 * An agent's api_key_file, as a canonical path inside [upstream]
 * credentials_dir: a name relative to it, or an absolute path in it. A path
 * with a ".." component is refused outright; symbolic links are followed,
 * and where they lead must still be inside. The file must be a regular one.
 * Sets a message for the caller to give its code.
 */
static gchar *
resolve_key_file(ConfabProviderOpenai *self, const gchar *path, gchar **message)
{
	const gchar *dir = self->options.credentials_dir;
	g_auto(GStrv) parts = NULL;
	g_autofree gchar *full = NULL;
	g_autofree gchar *canon_dir = NULL;
	g_autofree gchar *canon = NULL;
	g_autofree gchar *inside = NULL;

	if (path == NULL || *path == '\0') {
		*message = g_strdup("api_key_file is empty");
		return NULL;
	}
	parts = g_strsplit(path, "/", -1);
	for (guint i = 0; parts[i] != NULL; i++) {
		if (g_str_equal(parts[i], "..")) {
			*message = g_strdup_printf("api_key_file %s may not contain \"..\"", path);
			return NULL;
		}
	}
	if (dir == NULL || *dir == '\0' || (canon_dir = realpath(dir, NULL)) == NULL) {
		*message = g_strdup_printf("api_key_file %s: the credentials directory %s does "
					   "not exist",
					   path,
					   dir != NULL ? dir : "");
		return NULL;
	}
	full = g_path_is_absolute(path) ? g_strdup(path) : g_build_filename(dir, path, NULL);
	canon = realpath(full, NULL);
	if (canon == NULL) {
		*message =
		    g_strdup_printf("api_key_file %s cannot be found: %s", path, g_strerror(errno));
		return NULL;
	}
	inside = g_str_has_suffix(canon_dir, "/") ? g_strdup(canon_dir)
						  : g_strconcat(canon_dir, "/", NULL);
	if (!g_str_has_prefix(canon, inside)) {
		*message = g_strdup_printf("api_key_file %s is not inside the credentials "
					   "directory %s ([upstream] credentials_dir)",
					   path,
					   dir);
		return NULL;
	}
	if (!g_file_test(canon, G_FILE_TEST_IS_REGULAR)) {
		*message = g_strdup_printf("api_key_file %s is not a regular file", path);
		return NULL;
	}
	return g_steal_pointer(&canon);
}

#define KEY_FILE_MAX 65536

static gchar *
key_file_error(GError **error, gchar *message)
{
	g_set_error(error,
		    CONFAB_ERROR,
		    CONFAB_ERROR_UPSTREAM,
		    "The agent's API key cannot be read: %s",
		    message);
	g_free(message);
	return NULL;
}

/* Re-read only when the file changed: a stat, not a read, per request. The
 * path is checked again each time: what it points to may have changed. */
static gchar *
read_key_file(ConfabProviderOpenai *self, const gchar *path, GError **error)
{
	gchar *message = NULL;
	g_autofree gchar *canon = resolve_key_file(self, path, &message);
	GStatBuf st;
	KeyFileStamp stamp;
	KeyFile *kf;
	gchar *contents;
	gssize n;
	gint fd;

	if (canon == NULL)
		return key_file_error(error, message);
	/* the last component is not swapped for a link between the check
	 * and the read; a FIFO does not block */
	fd = open(canon, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return key_file_error(error, g_strdup_printf("%s: %s", path, g_strerror(errno)));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > KEY_FILE_MAX) {
		close(fd);
		return key_file_error(
		    error,
		    g_strdup_printf("%s is not a regular file of at most %d bytes",
				    path,
				    KEY_FILE_MAX));
	}
	key_file_stamp_init(&stamp, &st);
	kf = g_hash_table_lookup(self->key_files, canon);
	if (kf != NULL && memcmp(&kf->stamp, &stamp, sizeof(stamp)) == 0) {
		close(fd);
		return g_strdup(kf->key);
	}
	contents = g_malloc0(KEY_FILE_MAX + 1);
	n = read(fd, contents, KEY_FILE_MAX);
	close(fd);
	if (n < 0) {
		g_free(contents);
		return key_file_error(error, g_strdup_printf("%s: %s", path, g_strerror(errno)));
	}
	kf = g_new0(KeyFile, 1);
	kf->stamp = stamp;
	kf->key = g_strdup(g_strstrip(contents));
	memset(contents, 0, KEY_FILE_MAX + 1);
	g_free(contents);
	g_hash_table_replace(self->key_files, g_strdup(canon), kf);
	return g_strdup(kf->key);
}

/* ---------- the upstream request ---------- */

/**
 * confab_provider_openai_build_url:
 * @base_url: as the OpenAI SDKs take it, e.g. `https://api.openai.com/v1`
 *
 * Returns: (transfer full): @base_url + `/chat/completions`
 */
gchar *
confab_provider_openai_build_url(const gchar *base_url)
{
	g_autofree gchar *base = g_strdup(base_url);
	gsize len = strlen(base);
	while (len > 0 && base[len - 1] == '/')
		base[--len] = '\0';
	return g_strconcat(base, "/chat/completions", NULL);
}

/* the parameters Confab sets itself, whatever an agent or client says */
static gboolean
is_reserved_param(const gchar *name)
{
	return g_str_equal(name, "model") || g_str_equal(name, "messages") ||
	       g_str_equal(name, "stream") || g_str_equal(name, "stream_options") ||
	       g_str_equal(name, "n");
}

/* @params' members, as more members of the object @out writes; but those
 * Confab sets itself, and those @over (nullable) sets again. */
static void
append_params(GString *out, JsonObject *params, JsonObject *over)
{
	JsonObjectIter iter;
	const gchar *name;
	JsonNode *value;

	json_object_iter_init_ordered(&iter, params);
	while (json_object_iter_next_ordered(&iter, &name, &value)) {
		if (is_reserved_param(name) || (over != NULL && json_object_has_member(over, name)))
			continue;
		g_string_append_c(out, ',');
		confab_json_append_string(out, name);
		g_string_append_c(out, ':');
		confab_json_append_node(out, value);
	}
}

/**
 * confab_provider_openai_build_body:
 * @request: the provider request
 * @error: return location for a #GError
 *
 * The upstream request: the agent's model, the context, the agent's default
 * parameters overridden by the client's, and always `stream` with
 * `stream_options.include_usage`, so usage is known.
 *
 * Returns: (transfer full): the JSON body
 */
gchar *
confab_provider_openai_build_body(ConfabProviderRequest *request, GError **error)
{
	ConfabAgent *agent = request->agent;
	const gchar *model = confab_agent_get_upstream_model(agent);
	const gchar *defaults = confab_agent_get_params(agent);
	GString *out = g_string_sized_new(1024);

	/* written as it goes: a tree of it, then its text, was a twentieth
	 * of a turn's work */
	g_string_append(out, "{\"model\":");
	confab_json_append_string(out, model);
	g_string_append(out, ",\"messages\":[");
	for (guint i = 0; i < json_array_get_length(request->messages); i++) {
		if (i > 0)
			g_string_append_c(out, ',');
		confab_json_append_node(out, json_array_get_element(request->messages, i));
	}
	g_string_append_c(out, ']');
	/* the agent's defaults, but what the client sets again */
	if (defaults != NULL && *defaults != '\0') {
		g_autoptr(JsonNode) node = confab_json_parse(defaults, strlen(defaults), 32, NULL);
		if (node != NULL && JSON_NODE_HOLDS_OBJECT(node))
			append_params(out, json_node_get_object(node), request->params);
	}
	if (request->params != NULL)
		append_params(out, request->params, NULL);
	g_string_append(out, ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
	return g_string_free(out, FALSE);
}

/* ---------- one completion ---------- */

typedef enum {
	PHASE_CONNECT,	  /* until the connection is up */
	PHASE_FIRST_BYTE, /* until the response headers */
	PHASE_BODY,	  /* between chunks */
} Phase;

typedef struct {
	ConfabProviderOpenai *self;	/* owned */
	ConfabProviderRequest *request; /* unowned: the turn keeps it */
	ConfabDeltaFunc delta_func;
	gpointer delta_data;
	GTask *task;		   /* unowned: the task owns this call */
	GCancellable *cancellable; /* owned: the turn's */
	gulong cancelled_id;
	ConfabUpstreamExchange *exchange; /* owned: this attempt's */
	gchar *retry_after;		  /* owned: the response's Retry-After */
	gchar *retry_after_ms;		  /* owned: its retry-after-ms (OpenAI's) */
	guint status;
	gchar *reason;		 /* owned */
	gchar *error_fields[3];	 /* owned: the error body's type, code, param, scrubbed */
	ConfabSseParser *parser; /* owned */
	GString *error_body;	 /* owned: a non-200 body */
	GString *json_body;	 /* owned: a non-streamed 200 body */
	gchar *url;		 /* owned */
	gchar *host;	/* owned: for messages, never the URL's userinfo; see call_host() */
	gchar *body;	/* owned */
	gchar *api_key; /* owned */
	guint attempts;
	gint64 deadline;       /* monotonic, the total timeout */
	gint64 phase_deadline; /* monotonic, the current phase's */
	gint64 timer_due;      /* monotonic, when timer fires */
	GSource *timer;	       /* owned */
	GSource *retry;	       /* owned */
	Phase phase;
	gboolean timed_out;
	gboolean relayed;     /* a delta reached the turn: no more retries */
	guint64 answer_bytes; /* relayed: content, tool-call names and arguments */
	gboolean done;	      /* [DONE] or a finish_reason seen */
	gboolean saw_done;
	GError *stream_error;		/* owned: an error event inside the stream */
	gchar *finish_reason;		/* owned */
	ConfabSecretScrubber *scrubber; /* owned: the agent's key and the like */
	GString *content_pending;	/* owned: content held back by the scrubber */
	GPtrArray *arguments_pending;	/* owned: GString by tool-call index, or NULL */
	gint64 prompt_tokens;
	gint64 completion_tokens;
	gint64 reasoning_tokens;
	guint flow_wait; /* the client is behind: reading waits for it */
} Call;

static void
pending_free(gpointer data)
{
	GString *pending = data;
	if (pending == NULL)
		return;
	memset(pending->str, 0, pending->len);
	g_string_free(pending, TRUE);
}

/* Stops the attempt's request, if any: the connection closes, and none of
 * its callbacks runs any more. */
static void
call_drop_exchange(Call *call)
{
	if (call->exchange != NULL) {
		confab_upstream_client_exchange_abort(call->exchange);
		g_clear_pointer(&call->exchange, confab_upstream_client_exchange_unref);
	}
}

static void
call_clear_attempt(Call *call)
{
	/* a call that has returned no longer waits, and its request may be
	 * gone (a router frees its attempts' once it has its answer) */
	if (call->flow_wait != 0)
		confab_flow_clear_wait(call->request->flow, &call->flow_wait);
	confab_source_clear(&call->timer);
	call_drop_exchange(call);
	g_clear_pointer(&call->retry_after, g_free);
	g_clear_pointer(&call->retry_after_ms, g_free);
	g_clear_pointer(&call->reason, g_free);
	for (guint i = 0; i < G_N_ELEMENTS(call->error_fields); i++)
		g_clear_pointer(&call->error_fields[i], g_free);
	call->status = 0;
	g_clear_object(&call->parser);
	if (call->error_body != NULL)
		g_string_free(g_steal_pointer(&call->error_body), TRUE);
	if (call->json_body != NULL)
		g_string_free(g_steal_pointer(&call->json_body), TRUE);
}

static void
call_free(Call *call)
{
	call_clear_attempt(call);
	confab_source_clear(&call->retry);
	if (call->cancellable != NULL && call->cancelled_id != 0)
		g_cancellable_disconnect(call->cancellable, call->cancelled_id);
	g_clear_object(&call->cancellable);
	g_clear_object(&call->self);
	g_free(call->url);
	g_free(call->host);
	g_free(call->body);
	if (call->api_key != NULL) {
		memset(call->api_key, 0, strlen(call->api_key));
		g_free(call->api_key);
	}
	g_clear_error(&call->stream_error);
	g_free(call->finish_reason);
	g_clear_object(&call->scrubber);
	pending_free(call->content_pending);
	g_ptr_array_unref(call->arguments_pending);
	g_free(call);
}

static gchar *
host_of(const gchar *url)
{
	g_autoptr(GUri) uri = g_uri_parse(url, G_URI_FLAGS_NONE, NULL);
	if (uri == NULL || g_uri_get_host(uri) == NULL)
		return g_strdup("(invalid URL)");
	if (g_uri_get_port(uri) > 0)
		return g_strdup_printf("%s:%d", g_uri_get_host(uri), g_uri_get_port(uri));
	return g_strdup(g_uri_get_host(uri));
}

/* The upstream's host[:port], for messages: only errors need it, so the URL
 * is not parsed again on the way of every turn. */
static const gchar *
call_host(Call *call)
{
	if (call->host == NULL)
		call->host = host_of(call->url);
	return call->host;
}

static guint
timeout_for(Call *call, Phase phase)
{
	ConfabAgent *agent = call->request->agent;
	const ConfabProviderOpenaiOptions *options = &call->self->options;
	guint t;

	switch (phase) {
	case PHASE_CONNECT:
		t = confab_agent_get_connect_timeout(agent);
		return t > 0 ? t : options->connect_timeout;
	case PHASE_FIRST_BYTE:
		t = confab_agent_get_first_byte_timeout(agent);
		return t > 0 ? t : options->first_byte_timeout;
	case PHASE_BODY:
	default:
		t = confab_agent_get_idle_timeout(agent);
		return t > 0 ? t : options->idle_timeout;
	}
}

static void
call_flush(Call *call);

static gint64
retry_delay_ms(Call *call);

static void
call_fail(Call *call, GError *error)
{
	GTask *task = call->task;

	/* for a router: whether another target may be worth it; for a door:
	 * what to relay of a refusal */
	call->request->status = call->status;
	call->request->retry_after_ms = retry_delay_ms(call);
	confab_provider_request_set_error_fields(call->request,
						 call->error_fields[0],
						 call->error_fields[1],
						 call->error_fields[2]);
	call_clear_attempt(call);
	/* what was held back goes to the turn, which stores it with the
	 * error; not to a client that left */
	if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
		call_flush(call);
	confab_secret_scrubber_scrub_error(call->scrubber, error);
	g_task_return_error(task, error);
	g_object_unref(task);
}

static void
call_succeed(Call *call)
{
	GTask *task = call->task;
	g_autofree gchar *finish = NULL;
	ConfabProviderResult *result;

	call_flush(call);
	finish = confab_secret_scrubber_scrub(call->scrubber, call->finish_reason);
	result = confab_provider_result_new(finish != NULL ? finish : "stop");
	result->prompt_tokens = call->prompt_tokens;
	result->completion_tokens = call->completion_tokens;
	result->reasoning_tokens = call->reasoning_tokens;
	call_clear_attempt(call);
	g_task_return_pointer(task, result, (GDestroyNotify)confab_provider_result_free);
	g_object_unref(task);
}

static GError *
timeout_error(Call *call);
static void
fail_or_retry(Call *call, GError *error);
static void
call_fail(Call *call, GError *error);

static void
set_timer(Call *call, gint64 due, gint64 now);

static gboolean
on_timer(gpointer user_data)
{
	Call *call = user_data;
	gint64 now = g_get_monotonic_time();
	GError *error;

	g_clear_pointer(&call->timer, g_source_unref);
	if (now < call->phase_deadline) {
		/* the phase was extended since the timer was set */
		set_timer(call, call->phase_deadline, now);
		return G_SOURCE_REMOVE;
	}
	call->timed_out = TRUE;
	error = timeout_error(call);
	/* an upstream that never let us in is worth another try; one that took
	 * the request and said nothing in time is busy, and asking again
	 * would multiply the client's wait */
	if (call->phase == PHASE_CONNECT)
		fail_or_retry(call, error);
	else
		call_fail(call, error);
	return G_SOURCE_REMOVE;
}

static void
set_timer(Call *call, gint64 due, gint64 now)
{
	gint64 ms = MAX((due - now + 999) / 1000, 1);
	confab_source_clear(&call->timer);
	call->timer_due = due;
	call->timer = confab_source_add_timeout((guint)MIN(ms, G_MAXUINT), on_timer, call);
}

/* (Re)arms the timer of the current phase, never beyond the total timeout.
 * Called for every piece of a stream: the timer only moves when it would
 * fire too late; firing early, it sets itself again. */
static void
arm_timer(Call *call, Phase phase)
{
	gint64 now = g_get_monotonic_time();
	gint64 due = now + (gint64)timeout_for(call, phase) * 1000 * 1000;

	call->phase = phase;
	call->phase_deadline = MIN(due, call->deadline);
	if (call->timer == NULL || call->phase_deadline < call->timer_due)
		set_timer(call, call->phase_deadline, now);
}

static GError *
timeout_error(Call *call)
{
	const gchar *what = call->phase == PHASE_CONNECT      ? "to connect"
			    : call->phase == PHASE_FIRST_BYTE ? "to start answering"
							      : "to send the next chunk";
	if (g_get_monotonic_time() >= call->deadline)
		return g_error_new(CONFAB_ERROR,
				   CONFAB_ERROR_UPSTREAM_TIMEOUT,
				   "The upstream %s did not finish within the total timeout",
				   call_host(call));
	return g_error_new(CONFAB_ERROR,
			   CONFAB_ERROR_UPSTREAM_TIMEOUT,
			   "The upstream %s took longer than %u s %s",
			   call_host(call),
			   timeout_for(call, call->phase),
			   what);
}

/* An error from I/O: a timeout of ours, the turn's cancellation, or real. */
static GError *
classify_io_error(Call *call, GError *error)
{
	if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
		if (g_cancellable_is_cancelled(call->cancellable)) {
			/* the client left: the turn stores what it has */
			return error;
		}
		if (call->timed_out) {
			g_error_free(error);
			return timeout_error(call);
		}
	}
	if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT)) {
		g_error_free(error);
		return timeout_error(call);
	}
	{
		GError *wrapped = g_error_new(CONFAB_ERROR,
					      CONFAB_ERROR_UPSTREAM,
					      "Cannot reach the upstream %s: %s",
					      call_host(call),
					      error->message);
		g_error_free(error);
		return wrapped;
	}
}

static void
start_attempt(Call *call);

static gboolean
on_retry(gpointer user_data)
{
	Call *call = user_data;
	g_clear_pointer(&call->retry, g_source_unref);
	start_attempt(call);
	return G_SOURCE_REMOVE;
}

/* Retry-After: delay-seconds or an HTTP-date (RFC 9110 section 10.2.3) */
static gint64
parse_retry_after(const gchar *value)
{
	guint64 seconds = 0;

	if (value == NULL)
		return -1;
	if (g_ascii_string_to_unsigned(value, 10, 0, 86400, &seconds, NULL))
		return (gint64)seconds * 1000;
	{
		g_autoptr(GDateTime) when = confab_http_fields_parse_date(value);
		g_autoptr(GDateTime) now = g_date_time_new_now_utc();
		if (when != NULL)
			return MAX(g_date_time_difference(when, now) / 1000, 0);
	}
	return -1;
}

/* How long the upstream asked us to wait, in ms: its retry-after-ms
 * (OpenAI's, finer), else its Retry-After; -1 when it did not say. */
static gint64
retry_delay_ms(Call *call)
{
	guint64 ms = 0;

	if (call->retry_after_ms != NULL &&
	    g_ascii_string_to_unsigned(call->retry_after_ms, 10, 0, 86400000, &ms, NULL))
		return (gint64)ms;
	return parse_retry_after(call->retry_after);
}

/* Before the first byte of an answer only: try again later, or give up. */
static gboolean
maybe_retry(Call *call, GError *error)
{
	gint64 delay = retry_delay_ms(call);
	gint64 left = (call->deadline - g_get_monotonic_time()) / 1000;

	if (call->relayed || call->attempts > call->self->options.max_retries ||
	    g_cancellable_is_cancelled(call->cancellable))
		return FALSE;
	if (delay < 0) {
		delay = (gint64)RETRY_BASE_MS << MIN(call->attempts - 1, 6);
		delay += g_random_int_range(0, RETRY_BASE_MS);
	}
	if (delay > RETRY_MAX_MS || delay >= left)
		return FALSE;
	g_info("upstream %s: %s; retrying in %" G_GINT64_FORMAT " ms",
	       call_host(call),
	       error->message,
	       delay);
	call_clear_attempt(call);
	call->request->retries++;
	call->retry = confab_source_add_timeout((guint)delay, on_retry, call);
	return TRUE;
}

static void
fail_or_retry(Call *call, GError *error)
{
	/* the retry is logged with it */
	confab_secret_scrubber_scrub_error(call->scrubber, error);
	if (maybe_retry(call, error)) {
		g_error_free(error);
		return;
	}
	call_fail(call, error);
}

/* ---------- reading the answer ---------- */

static const gchar *
string_member(JsonObject *obj, const gchar *name)
{
	JsonNode *node = obj != NULL ? json_object_get_member(obj, name) : NULL;
	if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) ||
	    json_node_get_value_type(node) != G_TYPE_STRING)
		return NULL;
	return json_node_get_string(node);
}

static JsonObject *
object_member(JsonObject *obj, const gchar *name)
{
	JsonNode *node = obj != NULL ? json_object_get_member(obj, name) : NULL;
	return node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
}

static JsonArray *
array_member(JsonObject *obj, const gchar *name)
{
	JsonNode *node = obj != NULL ? json_object_get_member(obj, name) : NULL;
	return node != NULL && JSON_NODE_HOLDS_ARRAY(node) ? json_node_get_array(node) : NULL;
}

static void
read_usage(Call *call, JsonObject *root)
{
	JsonObject *usage = object_member(root, "usage");
	JsonObject *details = object_member(usage, "completion_tokens_details");
	JsonNode *p, *c, *r;
	if (usage == NULL)
		return;
	r = details != NULL ? json_object_get_member(details, "reasoning_tokens") : NULL;
	if (r != NULL && JSON_NODE_HOLDS_VALUE(r) && json_node_get_value_type(r) == G_TYPE_INT64)
		call->reasoning_tokens = MAX(json_node_get_int(r), 0);
	p = json_object_get_member(usage, "prompt_tokens");
	c = json_object_get_member(usage, "completion_tokens");
	if (p != NULL && JSON_NODE_HOLDS_VALUE(p))
		call->prompt_tokens = json_node_get_int(p);
	if (c != NULL && JSON_NODE_HOLDS_VALUE(c))
		call->completion_tokens = json_node_get_int(c);
}

static GError *
upstream_error_from(Call *call, JsonObject *error_obj, const gchar *fallback)
{
	const gchar *message = string_member(error_obj, "message");
	return g_error_new(CONFAB_ERROR,
			   CONFAB_ERROR_UPSTREAM,
			   "The upstream %s failed: %s",
			   call_host(call),
			   message != NULL ? message : fallback);
}

static void
relay(Call *call, const gchar *content, JsonArray *tool_calls)
{
	call->relayed = TRUE;
	call->delta_func(&(ConfabDelta){.content = content, .tool_calls = tool_calls},
			 call->delta_data);
}

/* Relays @content scrubbed; what may start a secret waits for the next. */
static void
relay_content(Call *call, const gchar *content)
{
	g_autofree gchar *released = confab_secret_scrubber_feed(call->scrubber,
								 call->content_pending,
								 content,
								 strlen(content));
	if (*released != '\0')
		relay(call, released, NULL);
}

static GString *
arguments_pending(Call *call, guint index)
{
	if (call->arguments_pending->len <= index)
		g_ptr_array_set_size(call->arguments_pending, index + 1);
	if (g_ptr_array_index(call->arguments_pending, index) == NULL)
		g_ptr_array_index(call->arguments_pending, index) = g_string_new(NULL);
	return g_ptr_array_index(call->arguments_pending, index);
}

/* Sets @name on @dest to @value scrubbed as a whole. */
static void
set_scrubbed(Call *call, JsonObject *dest, const gchar *name, const gchar *value)
{
	g_autofree gchar *clean = confab_secret_scrubber_scrub(call->scrubber, value);
	json_object_set_string_member(dest, name, clean);
}

/*
 * The fragments of @tool_calls as the turn takes them: objects with an
 * integer index from 0 to MAX_TOOL_CALL_INDEX (the position in the array
 * when there is none), string id, type, name and arguments; anything else
 * is dropped rather than relayed. Arguments are scrubbed as a stream per
 * call (clients join them), the rest as whole strings.
 *
 * Returns: (transfer full) (nullable): the fragments, %NULL for none
 */
static JsonArray *
clean_tool_calls(Call *call, JsonArray *tool_calls)
{
	g_autoptr(JsonArray) out = json_array_new();

	for (guint j = 0; j < json_array_get_length(tool_calls); j++) {
		JsonNode *node = json_array_get_element(tool_calls, j);
		JsonObject *frag = JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
		JsonNode *index_node = frag != NULL ? json_object_get_member(frag, "index") : NULL;
		JsonObject *fn = object_member(frag, "function");
		const gchar *id = string_member(frag, "id");
		const gchar *type = string_member(frag, "type");
		const gchar *name = string_member(fn, "name");
		const gchar *arguments = string_member(fn, "arguments");
		gint64 index = j;
		JsonObject *clean;
		gboolean carries = FALSE;

		if (frag == NULL)
			continue;
		if (index_node != NULL && JSON_NODE_HOLDS_VALUE(index_node) &&
		    json_node_get_value_type(index_node) == G_TYPE_INT64)
			index = json_node_get_int(index_node);
		if (index < 0 || index > MAX_TOOL_CALL_INDEX)
			continue;
		clean = json_object_new();
		json_object_set_int_member(clean, "index", index);
		if (id != NULL) {
			set_scrubbed(call, clean, "id", id);
			carries = TRUE;
		}
		if (type != NULL) {
			set_scrubbed(call, clean, "type", type);
			carries = TRUE;
		}
		if (fn != NULL) {
			JsonObject *clean_fn = json_object_new();
			if (name != NULL) {
				/* whole: clients take a name as it comes */
				set_scrubbed(call, clean_fn, "name", name);
				carries = TRUE;
			}
			if (arguments != NULL) {
				g_autofree gchar *released = confab_secret_scrubber_feed(
				    call->scrubber,
				    arguments_pending(call, (guint)index),
				    arguments,
				    strlen(arguments));
				json_object_set_string_member(clean_fn, "arguments", released);
				carries = carries || *released != '\0';
			}
			json_object_set_object_member(clean, "function", clean_fn);
		}
		if (carries)
			json_array_add_object_element(out, clean);
		else
			json_object_unref(clean);
	}
	return json_array_get_length(out) > 0 ? g_steal_pointer(&out) : NULL;
}

/* The answer ended: what the scrubber held back goes to the turn. */
static void
call_flush(Call *call)
{
	g_autofree gchar *content =
	    confab_secret_scrubber_flush(call->scrubber, call->content_pending);
	g_autoptr(JsonArray) rests = json_array_new();

	if (*content != '\0')
		relay(call, content, NULL);
	for (guint i = 0; i < call->arguments_pending->len; i++) {
		GString *pending = g_ptr_array_index(call->arguments_pending, i);
		g_autofree gchar *rest = NULL;
		JsonObject *frag;
		JsonObject *fn;

		if (pending == NULL || pending->len == 0)
			continue;
		rest = confab_secret_scrubber_flush(call->scrubber, pending);
		frag = json_object_new();
		fn = json_object_new();
		json_object_set_int_member(frag, "index", i);
		json_object_set_string_member(fn, "arguments", rest);
		json_object_set_object_member(frag, "function", fn);
		json_array_add_object_element(rests, frag);
	}
	if (json_array_get_length(rests) > 0)
		relay(call, NULL, rests);
}

/* The bytes of the answer in tool-call fragments: names and arguments. */
static gsize
tool_calls_size(JsonArray *tool_calls)
{
	gsize size = 0;

	for (guint i = 0; i < json_array_get_length(tool_calls); i++) {
		JsonNode *node = json_array_get_element(tool_calls, i);
		JsonObject *fn = JSON_NODE_HOLDS_OBJECT(node)
				     ? object_member(json_node_get_object(node), "function")
				     : NULL;
		const gchar *name = string_member(fn, "name");
		const gchar *arguments = string_member(fn, "arguments");

		size +=
		    (name != NULL ? strlen(name) : 0) + (arguments != NULL ? strlen(arguments) : 0);
	}
	return size;
}

/* Counts @more bytes of answer; past [limits] max_answer_bytes the answer
 * fails (the turn keeps what was relayed before) and FALSE says not to
 * relay them. */
static gboolean
take_answer_bytes(Call *call, gsize more)
{
	gsize max = call->self->options.max_answer_bytes;

	if (call->answer_bytes + more <= max) {
		call->answer_bytes += more;
		/* taken, if maybe held back by the scrubber: an answer has
		 * begun, and is not asked for again */
		if (more > 0)
			call->relayed = TRUE;
		return TRUE;
	}
	if (call->stream_error == NULL)
		call->stream_error =
		    g_error_new(CONFAB_ERROR,
				CONFAB_ERROR_UPSTREAM,
				"The upstream's answer is larger than %" G_GSIZE_FORMAT " bytes",
				max);
	return FALSE;
}

static gsize
json_object_size(JsonObject *object)
{
	g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), object);
	g_autofree gchar *text = json_to_string(node, FALSE);
	return strlen(text);
}

/*
 * What else a choice says besides its text and calls, relayed as the client
 * asked for it: a refusal, reasoning (vLLM's and DeepSeek's
 * `reasoning_content`, OpenRouter's `reasoning`) and the log probabilities.
 * Refusal and reasoning are scrubbed of secrets piece by piece; a secret
 * cut across two pieces of reasoning is not recognised.
 */
static gboolean
relay_extras(Call *call, JsonObject *choice, JsonObject *delta)
{
	const gchar *refusal = string_member(delta, "refusal");
	const gchar *reasoning = string_member(delta, "reasoning_content");
	JsonObject *logprobs = object_member(choice, "logprobs");
	g_autofree gchar *clean_refusal = NULL;
	g_autofree gchar *clean_reasoning = NULL;
	gsize size = 0;

	if (reasoning == NULL)
		reasoning = string_member(delta, "reasoning");
	if (refusal != NULL && *refusal == '\0')
		refusal = NULL;
	if (reasoning != NULL && *reasoning == '\0')
		reasoning = NULL;
	if (refusal == NULL && reasoning == NULL && logprobs == NULL)
		return TRUE;
	size = (refusal != NULL ? strlen(refusal) : 0) +
	       (reasoning != NULL ? strlen(reasoning) : 0) +
	       (logprobs != NULL ? json_object_size(logprobs) : 0);
	if (!take_answer_bytes(call, size))
		return FALSE;
	clean_refusal = refusal != NULL ? confab_secret_scrubber_scrub(call->scrubber, refusal)
					: NULL;
	clean_reasoning =
	    reasoning != NULL ? confab_secret_scrubber_scrub(call->scrubber, reasoning) : NULL;
	call->relayed = TRUE;
	call->delta_func(&(ConfabDelta){.refusal = clean_refusal,
					.reasoning = clean_reasoning,
					.logprobs = logprobs},
			 call->delta_data);
	return TRUE;
}

/* What handle_completion_object() and its helpers read of an answer or a
 * chunk, and only that is built of it: the rest (ids, times, models,
 * fingerprints, token details) is checked, then skipped. A member read
 * below must be named here. */
static const gchar *const completion_members[] = {"choices",
						  "error",
						  "usage",
						  "prompt_tokens",
						  "completion_tokens",
						  "completion_tokens_details",
						  "reasoning_tokens",
						  "message",
						  "delta",
						  "content",
						  "refusal",
						  "reasoning_content",
						  "reasoning",
						  "finish_reason",
						  "index",
						  "tool_calls",
						  "id",
						  "type",
						  "function",
						  "name",
						  "arguments",
						  NULL};
/* relayed as the upstream sent it */
static const gchar *const completion_whole[] = {"logprobs", NULL};
static const ConfabJsonKeep completion_keep = {completion_members, completion_whole};

/* One chat.completion.chunk, or a whole chat.completion (@whole). */
static void
handle_completion_object(Call *call, JsonObject *root, gboolean whole)
{
	JsonArray *choices = array_member(root, "choices");
	JsonObject *error_obj = object_member(root, "error");

	if (error_obj != NULL) {
		if (call->stream_error == NULL)
			call->stream_error = upstream_error_from(call, error_obj, "error event");
		return;
	}
	read_usage(call, root);
	for (guint i = 0; choices != NULL && i < json_array_get_length(choices); i++) {
		JsonNode *cnode = json_array_get_element(choices, i);
		JsonObject *choice = JSON_NODE_HOLDS_OBJECT(cnode) ? json_node_get_object(cnode)
								   : NULL;
		JsonObject *delta = object_member(choice, whole ? "message" : "delta");
		const gchar *content = string_member(delta, "content");
		JsonArray *tool_calls = array_member(delta, "tool_calls");
		const gchar *finish = string_member(choice, "finish_reason");
		JsonNode *index = choice != NULL ? json_object_get_member(choice, "index") : NULL;

		/* Confab asks for one choice; ignore any other */
		if (index != NULL && JSON_NODE_HOLDS_VALUE(index) && json_node_get_int(index) != 0)
			continue;
		/* reasoning comes before the text it leads to */
		if (!relay_extras(call, choice, delta))
			return;
		if (content != NULL && *content != '\0') {
			if (!take_answer_bytes(call, strlen(content)))
				return;
			relay_content(call, content);
		}
		if (tool_calls != NULL && json_array_get_length(tool_calls) > 0) {
			g_autoptr(JsonArray) clean = NULL;

			if (!take_answer_bytes(call, tool_calls_size(tool_calls)))
				return;
			/* a whole message's calls become indexed fragments too */
			clean = clean_tool_calls(call, tool_calls);
			if (clean != NULL)
				relay(call, NULL, clean);
		}
		if (finish != NULL) {
			g_free(call->finish_reason);
			call->finish_reason = g_strdup(finish);
		}
	}
}

/* Why @what from the upstream cannot be read: confab_json_parse()'s
 * @error, worded for an upstream (its messages speak of a request body),
 * or valid JSON that is not an object. */
static GError *
unreadable_json_error(Call *call, const gchar *what, const GError *error)
{
	static const gchar *const prefixes[] = {"The request body is not valid JSON: ",
						"The request body is ",
						NULL};
	const gchar *reason;

	if (error == NULL)
		return g_error_new(CONFAB_ERROR,
				   CONFAB_ERROR_UPSTREAM,
				   "The upstream %s sent %s that is not a JSON object",
				   call_host(call),
				   what);
	reason = error->message;
	for (guint i = 0; prefixes[i] != NULL; i++) {
		if (g_str_has_prefix(reason, prefixes[i])) {
			reason += strlen(prefixes[i]);
			break;
		}
	}
	return g_error_new(CONFAB_ERROR,
			   CONFAB_ERROR_UPSTREAM,
			   "The upstream %s sent %s that is not valid JSON: %s",
			   call_host(call),
			   what,
			   reason);
}

static void
on_sse_event(const gchar *event, const gchar *data, gsize data_len, gpointer user_data)
{
	Call *call = user_data;
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(GError) error = NULL;

	if (call->saw_done || call->stream_error != NULL)
		return;
	if (data_len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		call->saw_done = TRUE;
		return;
	}
	root = confab_json_parse_kept(data,
				      data_len,
				      UPSTREAM_JSON_MAX_DEPTH,
				      &completion_keep,
				      &error);
	if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
		call->stream_error = unreadable_json_error(call, "an event", error);
		return;
	}
	handle_completion_object(call, json_node_get_object(root), FALSE);
}

static void
finish_json_body(Call *call)
{
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(GError) error = NULL;

	root = confab_json_parse_kept(call->json_body->str,
				      call->json_body->len,
				      UPSTREAM_JSON_MAX_DEPTH,
				      &completion_keep,
				      &error);
	if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
		call_fail(call, unreadable_json_error(call, "an answer", error));
		return;
	}
	handle_completion_object(call, json_node_get_object(root), TRUE);
	if (call->stream_error != NULL) {
		call_fail(call, g_steal_pointer(&call->stream_error));
		return;
	}
	call_succeed(call);
}

/* What an error body says besides its message, kept (scrubbed) for a door
 * that relays the refusal; a member that is no short string is left out. */
static void
keep_error_fields(Call *call, JsonObject *error_obj)
{
	static const gchar *const names[] = {"type", "code", "param"};

	for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
		const gchar *value = string_member(error_obj, names[i]);

		g_clear_pointer(&call->error_fields[i], g_free);
		if (value != NULL && *value != '\0' && strlen(value) <= ERROR_FIELD_MAX)
			call->error_fields[i] = confab_secret_scrubber_scrub(call->scrubber, value);
	}
}

static void
finish_error_body(Call *call)
{
	guint status = call->status;
	g_autoptr(JsonNode) root = NULL;
	JsonObject *error_obj = NULL;
	g_autofree gchar *reason = NULL;
	GError *error;

	root = confab_json_parse(call->error_body->str,
				 call->error_body->len,
				 UPSTREAM_JSON_MAX_DEPTH,
				 NULL);
	if (root != NULL && JSON_NODE_HOLDS_OBJECT(root))
		error_obj = object_member(json_node_get_object(root), "error");
	reason = g_strdup_printf("HTTP %u %s", status, call->reason != NULL ? call->reason : "");
	if (error_obj != NULL) {
		const gchar *message = string_member(error_obj, "message");
		keep_error_fields(call, error_obj);
		error = g_error_new(CONFAB_ERROR,
				    CONFAB_ERROR_UPSTREAM,
				    "The upstream %s answered %s: %s",
				    call_host(call),
				    g_strstrip(reason),
				    message != NULL ? message : "no message");
	} else {
		error = g_error_new(CONFAB_ERROR,
				    CONFAB_ERROR_UPSTREAM,
				    "The upstream %s answered %s",
				    call_host(call),
				    g_strstrip(reason));
	}
	if (status == 429 || status >= 500)
		fail_or_retry(call, error);
	else
		call_fail(call, error);
}

static void
on_upstream_done(GError *error, gpointer user_data)
{
	Call *call = user_data;

	if (error != NULL) {
		error = classify_io_error(call, error);
		/* a connection that failed or never came up is worth another
		 * try, as long as nothing of an answer was taken */
		if (call->error_body == NULL && call->json_body == NULL && !call->relayed &&
		    error->domain == CONFAB_ERROR && error->code == CONFAB_ERROR_UPSTREAM) {
			fail_or_retry(call, error);
			return;
		}
		call_fail(call, error);
		return;
	}
	/* the end of the body */
	if (call->status == 0) {
		call_fail(call,
			  g_error_new(CONFAB_ERROR,
				      CONFAB_ERROR_UPSTREAM,
				      "The upstream %s answered nothing",
				      call_host(call)));
	} else if (call->error_body != NULL) {
		finish_error_body(call);
	} else if (call->json_body != NULL) {
		finish_json_body(call);
	} else if (!confab_sse_parser_finish(call->parser, &error)) {
		call_fail(call, error);
	} else if (call->stream_error != NULL) {
		call_fail(call, g_steal_pointer(&call->stream_error));
	} else if (call->saw_done || call->finish_reason != NULL) {
		call_succeed(call);
	} else {
		call_fail(call,
			  g_error_new(CONFAB_ERROR,
				      CONFAB_ERROR_UPSTREAM,
				      "The upstream %s closed the stream before the end of "
				      "the answer",
				      call_host(call)));
	}
}

/* A non-streamed answer holds at most max_answer_bytes of text, escaped
 * (most characters in one byte, quotes and newlines in two), and its
 * envelope. So may one server-sent event: a chunk is usually a few hundred
 * bytes, but a base64 image or a long tool call's arguments come as one
 * delta (16 MiB + 64 KiB with the default 8 MiB answer), and the cap bounds
 * what a line that never ends can make Confab hold. */
static gsize
json_body_max(Call *call)
{
	return call->self->options.max_answer_bytes * 2 + 64 * 1024;
}

/* The client has caught up: read on, and the idle timer runs again. */
static void
on_flow_open(gpointer user_data)
{
	Call *call = user_data;

	call->flow_wait = 0;
	if (call->exchange == NULL)
		return;
	arm_timer(call, PHASE_BODY);
	confab_upstream_client_exchange_resume(call->exchange);
}

/* The client is behind: the upstream waits (TCP holds it back), and so does
 * its idle timer, which would otherwise blame it for our wait; the total
 * timeout still runs. */
static void
call_pause(Call *call)
{
	gint64 now = g_get_monotonic_time();

	confab_upstream_client_exchange_pause(call->exchange);
	call->phase_deadline = call->deadline;
	set_timer(call, call->deadline, now);
	call->flow_wait = confab_flow_wait(call->request->flow, NULL, on_flow_open, call);
}

static void
on_upstream_body(const gchar *data, gsize len, gpointer user_data)
{
	Call *call = user_data;
	GError *error = NULL;

	/* paused, the rest of the read being handed on: no idle timer */
	if (call->flow_wait == 0)
		arm_timer(call, PHASE_BODY);
	if (call->error_body != NULL) {
		g_string_append_len(call->error_body,
				    data,
				    MIN(len, ERROR_BODY_MAX - call->error_body->len));
		if (call->error_body->len == ERROR_BODY_MAX) {
			/* enough to say what went wrong: read no more */
			call_drop_exchange(call);
			finish_error_body(call);
		}
	} else if (call->json_body != NULL) {
		if (call->json_body->len + len > json_body_max(call)) {
			call_fail(
			    call,
			    g_error_new(CONFAB_ERROR,
					CONFAB_ERROR_UPSTREAM,
					"The upstream %s answered with more than %" G_GSIZE_FORMAT
					" bytes",
					call_host(call),
					json_body_max(call)));
			return;
		}
		g_string_append_len(call->json_body, data, len);
	} else {
		if (!confab_sse_parser_feed(call->parser, data, len, &error)) {
			call_fail(call, error);
			return;
		}
		if (call->stream_error != NULL) {
			/* the upstream said it failed: no point reading on */
			call_fail(call, g_steal_pointer(&call->stream_error));
			return;
		}
		if (call->exchange != NULL && call->flow_wait == 0 &&
		    confab_flow_is_held(call->request->flow))
			call_pause(call);
	}
}

static void
on_upstream_head(guint status,
		 const gchar *reason,
		 const ConfabHttpFields *fields,
		 gpointer user_data)
{
	Call *call = user_data;
	const gchar *content_type = confab_http_fields_get(fields, "Content-Type");

	arm_timer(call, PHASE_BODY);
	call->status = status;
	call->reason = g_strdup(reason);
	call->retry_after = g_strdup(confab_http_fields_get(fields, "Retry-After"));
	call->retry_after_ms = g_strdup(confab_http_fields_get(fields, "retry-after-ms"));
	if (status != 200) {
		call->error_body = g_string_new(NULL);
		return;
	}
	if (confab_http_fields_media_type_is(content_type, "text/event-stream")) {
		call->parser = confab_sse_parser_new(on_sse_event, call);
		confab_sse_parser_set_max_event_size(call->parser, json_body_max(call));
	} else {
		/* an upstream that ignored "stream": one JSON answer */
		call->json_body = g_string_new(NULL);
	}
	/* a success status: the upstream has taken the call (a door may send
	 * its own head now) */
	confab_provider_request_answered(call->request);
}

static void
on_upstream_sent(gpointer user_data)
{
	Call *call = user_data;
	/* the connection is up and the upstream has the request */
	if (call->phase == PHASE_CONNECT)
		arm_timer(call, PHASE_FIRST_BYTE);
}

static const ConfabUpstreamHandler upstream_handler = {
    .sent = on_upstream_sent,
    .head = on_upstream_head,
    .body = on_upstream_body,
    .done = on_upstream_done,
};

static gboolean
on_cancelled_while_waiting(gpointer user_data)
{
	Call *call = user_data;
	g_clear_pointer(&call->retry, g_source_unref);
	call_fail(call, g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "cancelled"));
	return G_SOURCE_REMOVE;
}

static void
on_turn_cancelled(GCancellable *cancellable, gpointer user_data)
{
	Call *call = user_data;

	if (call->exchange == NULL && call->retry == NULL)
		return; /* finished, or never started */
	/* runs in the thread that cancelled (the turn's own: the engine
	 * cancels a turn on its context),
	 * maybe deep inside a callback of this very call: close the upstream
	 * connection now, and fail from the loop */
	confab_source_clear(&call->timer);
	call_drop_exchange(call);
	confab_source_clear(&call->retry);
	call->retry = confab_source_add_idle(on_cancelled_while_waiting, call);
}

/* An API key goes into a header line: it must not be able to end it. */
static gboolean
key_is_header_safe(const gchar *key)
{
	for (const guchar *p = (const guchar *)key; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return FALSE;
	}
	return TRUE;
}

static void
start_attempt(Call *call)
{
	g_autoptr(GBytes) body = g_bytes_new_static(call->body, strlen(call->body));
	g_autofree gchar *headers = NULL;
	GError *error = NULL;

	if (g_cancellable_is_cancelled(call->cancellable)) {
		call_fail(call, g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED, "cancelled"));
		return;
	}
	call->attempts++;
	call->timed_out = FALSE;
	if (call->api_key != NULL && *call->api_key != '\0') {
		if (!key_is_header_safe(call->api_key)) {
			call_fail(call,
				  g_error_new(CONFAB_ERROR,
					      CONFAB_ERROR_UPSTREAM,
					      "The API key for the upstream %s contains a control "
					      "character",
					      call_host(call)));
			return;
		}
		headers = g_strconcat("Accept: text/event-stream, application/json\r\n"
				      "Authorization: Bearer ",
				      call->api_key,
				      "\r\n",
				      NULL);
	}
	arm_timer(call, PHASE_CONNECT);
	call->exchange = confab_upstream_client_post(call->self->client,
						     call->url,
						     headers != NULL ? headers
								     : "Accept: text/event-stream, "
								       "application/json\r\n",
						     "application/json",
						     body,
						     &upstream_handler,
						     call,
						     &error);
	if (headers != NULL)
		memset(headers, 0, strlen(headers));
	if (call->exchange == NULL)
		call_fail(call, classify_io_error(call, error));
}

/* What no upstream text may carry to a client, a row or a log: the key
 * (inline or from its file), and the password of the base_url's userinfo. */
static void
call_add_secrets(Call *call, ConfabAgent *agent)
{
	g_autoptr(GUri) uri = g_uri_parse(confab_agent_get_base_url(agent),
					  G_URI_FLAGS_HAS_PASSWORD | G_URI_FLAGS_ENCODED,
					  NULL);

	confab_secret_scrubber_add_secret(call->scrubber, call->api_key);
	if (uri != NULL) {
		confab_secret_scrubber_add_secret(call->scrubber, g_uri_get_password(uri));
		if (g_uri_get_password(uri) != NULL) {
			g_autofree gchar *decoded =
			    g_uri_unescape_string(g_uri_get_password(uri), NULL);
			confab_secret_scrubber_add_secret(call->scrubber, decoded);
		}
	}
}

static void
confab_provider_openai_complete_async(ConfabProvider *provider,
				      ConfabProviderRequest *request,
				      ConfabDeltaFunc delta_func,
				      gpointer delta_data,
				      GCancellable *cancellable,
				      GAsyncReadyCallback callback,
				      gpointer user_data)
{
	ConfabProviderOpenai *self = CONFAB_PROVIDER_OPENAI(provider);
	ConfabAgent *agent = request->agent;
	GTask *task = g_task_new(self, NULL, callback, user_data);
	Call *call = g_new0(Call, 1);
	GError *error = NULL;
	guint total = confab_agent_get_total_timeout(agent);

	g_task_set_source_tag(task, confab_provider_openai_complete_async);
	g_task_set_task_data(task, call, (GDestroyNotify)call_free);
	call->self = g_object_ref(self);
	call->task = task;
	call->request = request;
	call->delta_func = delta_func;
	call->delta_data = delta_data;
	call->prompt_tokens = -1;
	call->completion_tokens = -1;
	call->scrubber = confab_secret_scrubber_new();
	call->content_pending = g_string_new(NULL);
	call->arguments_pending = g_ptr_array_new_with_free_func(pending_free);
	call->cancellable = cancellable != NULL ? g_object_ref(cancellable) : g_cancellable_new();
	call->url = confab_provider_openai_build_url(confab_agent_get_base_url(agent));
	call->deadline = g_get_monotonic_time() +
			 (gint64)(total > 0 ? total : self->options.total_timeout) * G_USEC_PER_SEC;
	if (confab_agent_get_api_key(agent) != NULL) {
		call->api_key = g_strdup(confab_agent_get_api_key(agent));
	} else if (confab_agent_get_api_key_file(agent) != NULL) {
		call->api_key = read_key_file(self, confab_agent_get_api_key_file(agent), &error);
		if (call->api_key == NULL) {
			call_fail(call, error);
			return;
		}
	}
	call_add_secrets(call, agent);
	call->body = confab_provider_openai_build_body(request, &error);
	if (call->body == NULL) {
		call_fail(call, error);
		return;
	}
	call->cancelled_id =
	    g_cancellable_connect(call->cancellable, G_CALLBACK(on_turn_cancelled), call, NULL);
	start_attempt(call);
}

static ConfabProviderResult *
confab_provider_openai_complete_finish(ConfabProvider *provider,
				       GAsyncResult *result,
				       GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, provider), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

static gboolean
confab_provider_openai_check_agent(ConfabProvider *provider, ConfabAgent *agent, GError **error)
{
	const gchar *base_url = confab_agent_get_base_url(agent);
	const gchar *model = confab_agent_get_upstream_model(agent);
	g_autoptr(GUri) uri = NULL;

	if (base_url == NULL) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "base_url",
				 "An openai agent needs a base_url, e.g. "
				 "https://api.openai.com/v1");
		return FALSE;
	}
	uri = g_uri_parse(base_url, G_URI_FLAGS_NONE, NULL);
	if (uri == NULL ||
	    (g_strcmp0(g_uri_get_scheme(uri), "http") != 0 &&
	     g_strcmp0(g_uri_get_scheme(uri), "https") != 0) ||
	    g_uri_get_host(uri) == NULL || *g_uri_get_host(uri) == '\0') {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "base_url",
				 "base_url must be an http:// or https:// URL");
		return FALSE;
	}
	if (model == NULL || *model == '\0') {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "upstream_model",
				 "An openai agent needs an upstream_model");
		return FALSE;
	}
	if (confab_agent_get_api_key_file(agent) != NULL) {
		g_autofree gchar *message = NULL;
		g_autofree gchar *canon = resolve_key_file(CONFAB_PROVIDER_OPENAI(provider),
							   confab_agent_get_api_key_file(agent),
							   &message);
		if (canon == NULL) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_VALUE,
					 "api_key_file",
					 message);
			return FALSE;
		}
	}
	return TRUE;
}

static const gchar *
confab_provider_openai_get_name(ConfabProvider *provider)
{
	return "openai";
}

static void
confab_provider_openai_iface_init(ConfabProviderInterface *iface)
{
	iface->get_name = confab_provider_openai_get_name;
	iface->check_agent = confab_provider_openai_check_agent;
	iface->complete_async = confab_provider_openai_complete_async;
	iface->complete_finish = confab_provider_openai_complete_finish;
}

static void
confab_provider_openai_finalize(GObject *object)
{
	ConfabProviderOpenai *self = CONFAB_PROVIDER_OPENAI(object);
	g_clear_object(&self->client);
	g_free(self->options.credentials_dir);
	g_clear_pointer(&self->key_files, g_hash_table_unref);
	G_OBJECT_CLASS(confab_provider_openai_parent_class)->finalize(object);
}

static void
confab_provider_openai_class_init(ConfabProviderOpenaiClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_provider_openai_finalize;
}

static void
confab_provider_openai_init(ConfabProviderOpenai *self)
{
	self->key_files =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)key_file_free);
}

static const gchar *
env_first(const gchar *const *names)
{
	for (guint i = 0; names[i] != NULL; i++) {
		const gchar *value = g_getenv(names[i]);
		if (value != NULL && *value != '\0')
			return value;
	}
	return NULL;
}

/* A proxy from the environment, resolved once rather than per request. */
static GProxyResolver *
proxy_resolver_from_env(void)
{
	const gchar *const proxy_vars[] = {"https_proxy",
					   "HTTPS_PROXY",
					   "http_proxy",
					   "HTTP_PROXY",
					   "all_proxy",
					   "ALL_PROXY",
					   NULL};
	const gchar *const no_proxy_vars[] = {"no_proxy", "NO_PROXY", NULL};
	const gchar *proxy = env_first(proxy_vars);
	const gchar *no_proxy = env_first(no_proxy_vars);
	g_auto(GStrv) ignore = NULL;

	if (proxy == NULL)
		return NULL;
	if (no_proxy != NULL) {
		ignore = g_strsplit(no_proxy, ",", -1);
		for (guint i = 0; ignore[i] != NULL; i++)
			g_strstrip(ignore[i]);
	}
	return g_simple_proxy_resolver_new(proxy, ignore);
}

/**
 * confab_provider_openai_new:
 * @options: what the configuration says; copied
 *
 * Returns: (transfer full): the openai provider
 */
ConfabProviderOpenai *
confab_provider_openai_new(const ConfabProviderOpenaiOptions *options)
{
	ConfabProviderOpenai *self = g_object_new(CONFAB_TYPE_PROVIDER_OPENAI, NULL);
	g_autofree gchar *user_agent = g_strdup_printf("confab/%s", PACKAGE_VERSION);

	g_autoptr(GProxyResolver) resolver = proxy_resolver_from_env();

	self->options = *options;
	self->options.credentials_dir = g_strdup(options->credentials_dir);
	self->client =
	    confab_upstream_client_new(user_agent, options->max_connections, 60, resolver);
	return self;
}
