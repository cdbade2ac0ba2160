/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib.h>

G_BEGIN_DECLS

/**
 * ConfabMcpLineFunc:
 * @line: one line, without its "\n" (or "\r\n"), not NUL-terminated
 * @len: its length, never 0
 * @user_data: data given with the function
 */
typedef void (*ConfabMcpLineFunc)(const gchar *line, gsize len, gpointer user_data);

/**
 * ConfabMcpLineTooLongFunc:
 * @head: the first bytes of a line longer than the maximum
 * @head_len: their length (at most 256)
 * @tail: its last bytes
 * @tail_len: their length (at most 256)
 * @size: the length of the whole line
 * @user_data: data given with the function
 */
typedef void (*ConfabMcpLineTooLongFunc)(const gchar *head,
					 gsize head_len,
					 const gchar *tail,
					 gsize tail_len,
					 guint64 size,
					 gpointer user_data);

typedef struct _ConfabMcpLineReader ConfabMcpLineReader;

ConfabMcpLineReader *
confab_mcp_line_reader_new(gsize max_line,
			   ConfabMcpLineFunc line_func,
			   ConfabMcpLineTooLongFunc too_long_func,
			   gpointer user_data);
void
confab_mcp_line_reader_set_max_line(ConfabMcpLineReader *reader, gsize max_line);
void
confab_mcp_line_reader_feed(ConfabMcpLineReader *reader, const gchar *data, gsize len);
void
confab_mcp_line_reader_finish(ConfabMcpLineReader *reader);
gsize
confab_mcp_line_reader_get_buffered(ConfabMcpLineReader *reader);
void
confab_mcp_line_reader_free(ConfabMcpLineReader *reader);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabMcpLineReader, confab_mcp_line_reader_free)

G_END_DECLS
