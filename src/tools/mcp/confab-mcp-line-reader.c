/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "tools/mcp/confab-mcp-line-reader.h"

#define EDGE	       256
#define SHRINK_ABOVE   (64 * 1024)
#define INITIAL_BUFFER 1024

struct _ConfabMcpLineReader {
	gsize max_line;
	ConfabMcpLineFunc line_func;
	ConfabMcpLineTooLongFunc too_long_func;
	gpointer user_data;
	GString *line; /* owned: never longer than max_line */
	gboolean discarding;
	guint64 discarded;
	gchar head[EDGE];
	gsize head_len;
	gchar tail[EDGE];
	gsize tail_len;
};

/**
 * confab_mcp_line_reader_new:
 * @max_line: the longest line held, without its newline
 * @line_func: called for every non-empty line
 * @too_long_func: called for every line longer than @max_line, which is
 *   dropped as it arrives
 * @user_data: data for the functions
 *
 * A splitter of a byte stream into "\n"-terminated lines (a "\r" before the
 * "\n" is dropped) that holds at most @max_line bytes whatever the peer
 * sends.
 *
 * Returns: (transfer full): a new reader
 */
ConfabMcpLineReader *
confab_mcp_line_reader_new(gsize max_line,
			   ConfabMcpLineFunc line_func,
			   ConfabMcpLineTooLongFunc too_long_func,
			   gpointer user_data)
{
	ConfabMcpLineReader *reader;

	g_return_val_if_fail(max_line > 0, NULL);
	g_return_val_if_fail(line_func != NULL && too_long_func != NULL, NULL);
	reader = g_new0(ConfabMcpLineReader, 1);
	reader->max_line = max_line;
	reader->line_func = line_func;
	reader->too_long_func = too_long_func;
	reader->user_data = user_data;
	reader->line = g_string_sized_new(MIN(max_line, INITIAL_BUFFER));
	return reader;
}

/**
 * confab_mcp_line_reader_set_max_line:
 * @reader: a #ConfabMcpLineReader
 * @max_line: the longest line held from now on
 */
void
confab_mcp_line_reader_set_max_line(ConfabMcpLineReader *reader, gsize max_line)
{
	g_return_if_fail(reader != NULL);
	g_return_if_fail(max_line > 0);
	reader->max_line = max_line;
}

/**
 * confab_mcp_line_reader_free:
 * @reader: (transfer full): a #ConfabMcpLineReader
 */
void
confab_mcp_line_reader_free(ConfabMcpLineReader *reader)
{
	if (reader == NULL)
		return;
	g_string_free(reader->line, TRUE);
	g_free(reader);
}

/**
 * confab_mcp_line_reader_get_buffered:
 * @reader: a #ConfabMcpLineReader
 *
 * Returns: the bytes held of a line not yet complete
 */
gsize
confab_mcp_line_reader_get_buffered(ConfabMcpLineReader *reader)
{
	g_return_val_if_fail(reader != NULL, 0);
	return reader->line->len;
}

static void
discard(ConfabMcpLineReader *reader, const gchar *data, gsize len)
{
	reader->discarded += len;
	if (reader->head_len < EDGE) {
		gsize n = MIN(len, EDGE - reader->head_len);
		memcpy(reader->head + reader->head_len, data, n);
		reader->head_len += n;
	}
	if (len >= EDGE) {
		memcpy(reader->tail, data + len - EDGE, EDGE);
		reader->tail_len = EDGE;
	} else {
		gsize keep = MIN(reader->tail_len, EDGE - len);
		memmove(reader->tail, reader->tail + reader->tail_len - keep, keep);
		memcpy(reader->tail + keep, data, len);
		reader->tail_len = keep + len;
	}
}

static void
reset_line(ConfabMcpLineReader *reader)
{
	if (reader->line->allocated_len > SHRINK_ABOVE) {
		/* one large message must not keep its buffer for good */
		g_string_free(reader->line, TRUE);
		reader->line = g_string_sized_new(MIN(reader->max_line, INITIAL_BUFFER));
	} else {
		g_string_truncate(reader->line, 0);
	}
}

static void
end_line(ConfabMcpLineReader *reader)
{
	if (reader->discarding) {
		gsize tail_len = reader->tail_len;
		guint64 size = reader->discarded;
		/* the "\r" of a "\r\n" is not part of the message */
		if (tail_len > 0 && reader->tail[tail_len - 1] == '\r') {
			tail_len--;
			size--;
		}
		reader->discarding = FALSE;
		reader->too_long_func(reader->head,
				      reader->head_len,
				      reader->tail,
				      tail_len,
				      size,
				      reader->user_data);
	} else {
		gsize len = reader->line->len;
		if (len > 0 && reader->line->str[len - 1] == '\r')
			len--;
		if (len > 0)
			reader->line_func(reader->line->str, len, reader->user_data);
	}
	reset_line(reader);
}

/**
 * confab_mcp_line_reader_feed:
 * @reader: a #ConfabMcpLineReader
 * @data: (array length=len): bytes of the stream, cut anywhere
 * @len: the length of @data
 *
 * Calls the line function for every line @data completes.
 */
void
confab_mcp_line_reader_feed(ConfabMcpLineReader *reader, const gchar *data, gsize len)
{
	const gchar *p = data;
	const gchar *end = data + len;

	g_return_if_fail(reader != NULL);
	g_return_if_fail(data != NULL || len == 0);

	while (p < end) {
		const gchar *nl = memchr(p, '\n', end - p);
		gsize seg_len = (nl != NULL ? nl : end) - p;

		if (reader->discarding) {
			discard(reader, p, seg_len);
		} else if (reader->line->len + seg_len > reader->max_line + 1) {
			/* (one byte of slack for a "\r" before the "\n") */
			reader->discarding = TRUE;
			reader->discarded = 0;
			reader->head_len = 0;
			reader->tail_len = 0;
			discard(reader, reader->line->str, reader->line->len);
			discard(reader, p, seg_len);
			reset_line(reader);
		} else {
			g_string_append_len(reader->line, p, seg_len);
		}
		if (nl == NULL)
			break;
		if (!reader->discarding && reader->line->len > reader->max_line &&
		    reader->line->str[reader->line->len - 1] != '\r') {
			/* the slack byte was not a "\r" after all */
			reader->discarding = TRUE;
			reader->discarded = 0;
			reader->head_len = 0;
			reader->tail_len = 0;
			discard(reader, reader->line->str, reader->line->len);
		}
		end_line(reader);
		p = nl + 1;
	}
}

/**
 * confab_mcp_line_reader_finish:
 * @reader: a #ConfabMcpLineReader
 *
 * The stream ended: a last line without its newline is taken as a line.
 */
void
confab_mcp_line_reader_finish(ConfabMcpLineReader *reader)
{
	g_return_if_fail(reader != NULL);
	if (reader->discarding || reader->line->len > 0)
		end_line(reader);
}
