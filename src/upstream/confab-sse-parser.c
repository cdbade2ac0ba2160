/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

/**
 * ConfabSseParser:
 *
 * An incremental parser of a `text/event-stream` body, following the WHATWG
 * "server-sent events" interpretation rules: lines end in CRLF, LF or a lone
 * CR (a CRLF split between two reads counts once), a leading BOM is ignored,
 * `:` starts a comment, `data:` lines accumulate joined by "\n", `event:` sets
 * the type, an empty line dispatches, and an event without data is dropped.
 * `id:` and `retry:` are kept for a client that resumes the stream
 * (confab_sse_parser_get_last_event_id(), confab_sse_parser_get_retry()).
 *
 * Input may be cut at any byte. An event larger than the configured maximum
 * is an error rather than unbounded buffering. At the end of the stream a
 * last line without a terminator and a last event without its empty line are
 * still dispatched: upstreams that close right after `data: [DONE]` exist.
 */

#include "config.h"

#include <string.h>

#include "upstream/confab-sse-parser.h"
#include "util/confab-error.h"

#define DEFAULT_MAX_EVENT_SIZE (4 * 1024 * 1024)

struct _ConfabSseParser {
	GObject parent_instance;
	ConfabSseEventFunc func;
	gpointer user_data;
	gsize max_event_size;
	GString *line; /* a line not yet terminated */
	GString *data; /* data lines of the event being built */
	gchar *event;  /* its event type, or NULL */
	gboolean has_data;
	gchar *id_buffer;     /* the last `id:` field seen, or NULL */
	gchar *last_event_id; /* set from id_buffer at each dispatch */
	gint64 retry_ms;      /* the last valid `retry:`, or -1 */
	gboolean skip_lf;     /* the last byte seen was a CR */
	gboolean started;     /* past the optional BOM */
};

G_DEFINE_TYPE(ConfabSseParser, confab_sse_parser, G_TYPE_OBJECT)

static void
confab_sse_parser_finalize(GObject *object)
{
	ConfabSseParser *self = CONFAB_SSE_PARSER(object);
	g_string_free(self->line, TRUE);
	g_string_free(self->data, TRUE);
	g_free(self->event);
	g_free(self->id_buffer);
	g_free(self->last_event_id);
	G_OBJECT_CLASS(confab_sse_parser_parent_class)->finalize(object);
}

static void
confab_sse_parser_class_init(ConfabSseParserClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_sse_parser_finalize;
}

static void
confab_sse_parser_init(ConfabSseParser *self)
{
	self->max_event_size = DEFAULT_MAX_EVENT_SIZE;
	self->line = g_string_new(NULL);
	self->data = g_string_new(NULL);
	self->retry_ms = -1;
}

/**
 * confab_sse_parser_new:
 * @func: (scope notified): called for every dispatched event
 * @user_data: data for @func
 *
 * Returns: (transfer full): a new parser
 */
ConfabSseParser *
confab_sse_parser_new(ConfabSseEventFunc func, gpointer user_data)
{
	ConfabSseParser *self = g_object_new(CONFAB_TYPE_SSE_PARSER, NULL);
	g_return_val_if_fail(func != NULL, NULL);
	self->func = func;
	self->user_data = user_data;
	return self;
}

/**
 * confab_sse_parser_set_max_event_size:
 * @self: a #ConfabSseParser
 * @max_bytes: the largest event (its lines and data) accepted
 */
void
confab_sse_parser_set_max_event_size(ConfabSseParser *self, gsize max_bytes)
{
	g_return_if_fail(CONFAB_IS_SSE_PARSER(self));
	g_return_if_fail(max_bytes > 0);
	self->max_event_size = max_bytes;
}

static void
dispatch(ConfabSseParser *self)
{
	/* the last event id holds from here, even for an event without data */
	if (g_strcmp0(self->last_event_id, self->id_buffer) != 0) {
		g_free(self->last_event_id);
		self->last_event_id = g_strdup(self->id_buffer);
	}
	if (self->has_data) {
		/* the data lines were each followed by "\n": drop the last one */
		g_string_truncate(self->data, self->data->len - 1);
		self->func(self->event, self->data->str, self->data->len, self->user_data);
	}
	g_string_truncate(self->data, 0);
	g_clear_pointer(&self->event, g_free);
	self->has_data = FALSE;
}

static gboolean
too_big(ConfabSseParser *self, gsize more, GError **error)
{
	if (self->data->len + self->line->len + more <= self->max_event_size)
		return FALSE;
	g_set_error(error,
		    CONFAB_ERROR,
		    CONFAB_ERROR_UPSTREAM,
		    "The upstream sent a server-sent event larger than %" G_GSIZE_FORMAT " bytes",
		    self->max_event_size);
	return TRUE;
}

static gboolean
process_line(ConfabSseParser *self, const gchar *line, gsize len, GError **error)
{
	const gchar *colon;
	const gchar *value;
	gsize field_len;
	gsize value_len;

	if (len == 0) {
		dispatch(self);
		return TRUE;
	}
	if (line[0] == ':')
		return TRUE; /* a comment, often a keep-alive */
	colon = memchr(line, ':', len);
	if (colon != NULL) {
		field_len = colon - line;
		value = colon + 1;
		value_len = len - field_len - 1;
		if (value_len > 0 && value[0] == ' ') {
			value++;
			value_len--;
		}
	} else {
		field_len = len;
		value = line + len;
		value_len = 0;
	}
	if (field_len == 4 && memcmp(line, "data", 4) == 0) {
		if (too_big(self, value_len + 1, error))
			return FALSE;
		g_string_append_len(self->data, value, value_len);
		g_string_append_c(self->data, '\n');
		self->has_data = TRUE;
	} else if (field_len == 5 && memcmp(line, "event", 5) == 0) {
		g_free(self->event);
		self->event = g_strndup(value, value_len);
	} else if (field_len == 2 && memcmp(line, "id", 2) == 0) {
		/* an id with a NUL in it is ignored; an empty one resets */
		if (memchr(value, '\0', value_len) == NULL) {
			g_free(self->id_buffer);
			self->id_buffer = value_len > 0 ? g_strndup(value, value_len) : NULL;
		}
	} else if (field_len == 5 && memcmp(line, "retry", 5) == 0) {
		gint64 ms = 0;
		gsize i;
		for (i = 0; i < value_len && g_ascii_isdigit(value[i]); i++)
			ms = MIN(ms * 10 + (value[i] - '0'), (gint64)G_MAXINT32);
		if (value_len > 0 && i == value_len)
			self->retry_ms = MIN(ms, G_MAXINT32);
	}
	/* unknown fields are ignored */
	return TRUE;
}

/**
 * confab_sse_parser_feed:
 * @self: a #ConfabSseParser
 * @data: (array length=len): bytes of the stream, cut anywhere
 * @len: the length of @data
 * @error: return location for a #GError
 *
 * Parses @data and calls the event function for every event it completes.
 *
 * Returns: %FALSE when an event grows past the maximum size
 */
gboolean
confab_sse_parser_feed(ConfabSseParser *self, const gchar *data, gsize len, GError **error)
{
	const gchar *p = data;
	const gchar *end = data + len;

	g_return_val_if_fail(CONFAB_IS_SSE_PARSER(self), FALSE);
	g_return_val_if_fail(data != NULL || len == 0, FALSE);

	if (!self->started && len > 0) {
		/* the BOM may itself arrive split; only a whole one is skipped */
		static const guchar bom[] = {0xEF, 0xBB, 0xBF};
		gsize have = self->line->len;
		while (have < 3 && p < end && (guchar)*p == bom[have]) {
			g_string_append_c(self->line, *p++);
			have++;
		}
		if (have == 3) {
			g_string_truncate(self->line, 0);
			self->started = TRUE;
		} else if (p < end) {
			/* not a BOM: what was held back is the start of a line */
			self->started = TRUE;
		} else {
			return TRUE;
		}
	}

	if (self->skip_lf && p < end) {
		if (*p == '\n')
			p++;
		self->skip_lf = FALSE;
	}
	while (p < end) {
		const gchar *eol = p;
		while (eol < end && *eol != '\n' && *eol != '\r')
			eol++;
		if (eol == end) {
			/* an unterminated line: keep it for the next read */
			if (too_big(self, end - p, error))
				return FALSE;
			g_string_append_len(self->line, p, end - p);
			return TRUE;
		}
		if (too_big(self, eol - p, error))
			return FALSE;
		if (self->line->len > 0) {
			/* out of the buffer first, as finish() does, so that
			 * too_big() does not count the line twice */
			gsize line_len = self->line->len + (eol - p);
			g_autofree gchar *line = g_malloc(line_len + 1);
			memcpy(line, self->line->str, self->line->len);
			memcpy(line + self->line->len, p, eol - p);
			line[line_len] = '\0';
			g_string_truncate(self->line, 0);
			if (!process_line(self, line, line_len, error))
				return FALSE;
		} else {
			if (!process_line(self, p, eol - p, error))
				return FALSE;
		}
		p = eol + 1;
		if (*eol == '\r') {
			if (p < end) {
				if (*p == '\n')
					p++;
			} else {
				self->skip_lf = TRUE;
			}
		}
	}
	return TRUE;
}

/**
 * confab_sse_parser_get_last_event_id:
 * @self: a #ConfabSseParser
 *
 * The stream's last event ID as the WHATWG rules keep it: the value of
 * the last `id:` field, taken when an event is dispatched (an event
 * without data counts), an empty `id:` clearing it.
 *
 * Returns: (nullable): the last event ID, or %NULL when there is none
 */
const gchar *
confab_sse_parser_get_last_event_id(ConfabSseParser *self)
{
	g_return_val_if_fail(CONFAB_IS_SSE_PARSER(self), NULL);
	return self->last_event_id;
}

/**
 * confab_sse_parser_get_retry:
 * @self: a #ConfabSseParser
 *
 * The reconnection time the stream asked for with its last valid
 * `retry:` field (ASCII digits only, capped at %G_MAXINT32).
 *
 * Returns: milliseconds, or -1 when the stream gave none
 */
gint64
confab_sse_parser_get_retry(ConfabSseParser *self)
{
	g_return_val_if_fail(CONFAB_IS_SSE_PARSER(self), -1);
	return self->retry_ms;
}

/**
 * confab_sse_parser_finish:
 * @self: a #ConfabSseParser
 * @error: return location for a #GError
 *
 * Ends the stream: a last unterminated line is taken as a line and a last
 * event still being built is dispatched.
 *
 * Returns: %TRUE on success
 */
gboolean
confab_sse_parser_finish(ConfabSseParser *self, GError **error)
{
	g_return_val_if_fail(CONFAB_IS_SSE_PARSER(self), FALSE);

	if (self->line->len > 0) {
		g_autofree gchar *line = g_strndup(self->line->str, self->line->len);
		gsize len = self->line->len;
		g_string_truncate(self->line, 0);
		if (!process_line(self, line, len, error))
			return FALSE;
	}
	dispatch(self);
	self->skip_lf = FALSE;
	return TRUE;
}
