/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <json-glib/json-glib.h>

#include "model/confab-message.h"

G_BEGIN_DECLS

/**
 * ConfabChatLimits:
 * @max_depth: the deepest JSON nesting accepted
 * @max_files: attachments (image_url and file parts) per message
 * @max_file_bytes: decoded size of one attachment
 */
typedef struct {
	guint max_depth;
	guint max_files;
	gsize max_file_bytes;
	gboolean no_messages_ok; /* a Responses continuation that only answers approvals */
} ConfabChatLimits;

#define CONFAB_CHAT_LIMITS_DEFAULT                                                                 \
	{                                                                                          \
		64, 10, 25 * 1024 * 1024                                                           \
	}

/**
 * ConfabChatRequest:
 * @model: the agent id asked for
 * @stream: whether to answer with Server-Sent Events
 * @include_usage: stream_options.include_usage
 * @session_id: (nullable): metadata.session_id, to continue a session
 * @messages: (element-type ConfabMessage): the request's messages, validated
 *   and converted (role, content, content_blocks); no id nor session yet
 * @titles: (element-type utf8): for each message, the title its text would
 *   give a new conversation (%NULL when blank), in step
 * @params: (nullable): OpenAI request parameters to pass upstream
 *   (temperature, max_tokens, tools...), validated
 *
 * A chat completion request, checked whole before anything is stored.
 */
typedef struct {
	gchar *model;
	gboolean stream;
	gboolean include_usage;
	gchar *session_id;
	GPtrArray *messages;
	GPtrArray *titles;
	JsonObject *params;
} ConfabChatRequest;

ConfabChatRequest *
confab_chat_request_parse(const gchar *data,
			  gsize len,
			  const ConfabChatLimits *limits,
			  GError **error);
ConfabChatRequest *
confab_chat_request_new_text(const gchar *model, const gchar *session_id, const gchar *text);
void
confab_chat_request_free(ConfabChatRequest *request);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabChatRequest, confab_chat_request_free)

gboolean
confab_chat_request_base64_check(const gchar *data, gsize len, gsize *decoded_len);

G_END_DECLS
