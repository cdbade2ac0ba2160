/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "model/confab-message.h"

/**
 * ConfabMessage:
 *
 * One message of a session.
 */
struct _ConfabMessage {
	GObject parent_instance;
	gchar *id;		     /* owned */
	gchar *session_id;	     /* owned */
	gchar *role;		     /* owned */
	gchar *model;		     /* owned */
	gchar *content;		     /* owned */
	gchar *content_blocks;	     /* owned; NULL while blocks_are_content */
	gboolean blocks_are_content; /* one string for both: the common case */
	ConfabMessageStatus status;
	gchar *finish_reason; /* owned */
	gint64 prompt_tokens;
	gint64 completion_tokens;
	gint64 created_at;
	gchar *response_id; /* owned, nullable: the Responses API response it belongs to */
	gchar *upstream;    /* owned, nullable: the target that answered, as JSON */
};

G_DEFINE_FINAL_TYPE(ConfabMessage, confab_message, G_TYPE_OBJECT)

static void
confab_message_finalize(GObject *object)
{
	ConfabMessage *self = CONFAB_MESSAGE(object);

	g_free(self->id);
	g_free(self->session_id);
	g_free(self->role);
	g_free(self->model);
	g_free(self->content);
	g_free(self->content_blocks);
	g_free(self->finish_reason);
	g_free(self->response_id);
	g_free(self->upstream);

	G_OBJECT_CLASS(confab_message_parent_class)->finalize(object);
}

static void
confab_message_class_init(ConfabMessageClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->finalize = confab_message_finalize;
}

static void
confab_message_init(ConfabMessage *self)
{
	self->prompt_tokens = -1;
	self->completion_tokens = -1;
}

/**
 * confab_message_new:
 *
 * Returns: (transfer full): a new, empty #ConfabMessage
 */
ConfabMessage *
confab_message_new(void)
{
	return g_object_new(CONFAB_TYPE_MESSAGE, NULL);
}

const gchar *
confab_message_get_id(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), NULL);
	return self->id;
}

void
confab_message_set_id(ConfabMessage *self, const gchar *id)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (g_strcmp0(self->id, id) == 0)
		return;
	g_free(self->id);
	self->id = g_strdup(id);
}

const gchar *
confab_message_get_session_id(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), NULL);
	return self->session_id;
}

void
confab_message_set_session_id(ConfabMessage *self, const gchar *session_id)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (g_strcmp0(self->session_id, session_id) == 0)
		return;
	g_free(self->session_id);
	self->session_id = g_strdup(session_id);
}

const gchar *
confab_message_get_role(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), NULL);
	return self->role;
}

void
confab_message_set_role(ConfabMessage *self, const gchar *role)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (g_strcmp0(self->role, role) == 0)
		return;
	g_free(self->role);
	self->role = g_strdup(role);
}

const gchar *
confab_message_get_model(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), NULL);
	return self->model;
}

void
confab_message_set_model(ConfabMessage *self, const gchar *model)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (g_strcmp0(self->model, model) == 0)
		return;
	g_free(self->model);
	self->model = g_strdup(model);
}

/* Before the content changes: blocks that were the content keep it. */
static void
unshare_content(ConfabMessage *self)
{
	if (!self->blocks_are_content)
		return;
	self->content_blocks = g_steal_pointer(&self->content);
	self->blocks_are_content = FALSE;
}

const gchar *
confab_message_get_content(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), NULL);
	return self->content;
}

void
confab_message_set_content(ConfabMessage *self, const gchar *content)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (g_strcmp0(self->content, content) == 0)
		return;
	unshare_content(self);
	g_free(self->content);
	self->content = g_strdup(content);
}

/* a GString's text, in a block of its own size (a GString grows by
 * doubling: a big one may be half empty) */
static gchar *
string_free_exact(GString *string)
{
	gsize len = string->len;
	return g_realloc(g_string_free(string, FALSE), len + 1);
}

/**
 * confab_message_take_content:
 * @self: a #ConfabMessage
 * @content: (transfer full): the content JSON, built in a #GString
 *
 * Sets the content without copying it: for large messages.
 */
void
confab_message_take_content(ConfabMessage *self, GString *content)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	unshare_content(self);
	g_free(self->content);
	self->content = string_free_exact(content);
}

/**
 * confab_message_take_content_blocks:
 * @self: a #ConfabMessage
 * @content_blocks: (transfer full): the content blocks JSON, in a #GString
 */
void
confab_message_take_content_blocks(ConfabMessage *self, GString *content_blocks)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	self->blocks_are_content = FALSE;
	g_free(self->content_blocks);
	self->content_blocks = string_free_exact(content_blocks);
}

/**
 * confab_message_share_content_blocks:
 * @self: a #ConfabMessage
 *
 * The content blocks are the content, as for a message of parts only: one
 * string for both (a text may be megabytes), until either is set again.
 */
void
confab_message_share_content_blocks(ConfabMessage *self)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	g_clear_pointer(&self->content_blocks, g_free);
	self->blocks_are_content = TRUE;
}

const gchar *
confab_message_get_content_blocks(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), NULL);
	return self->blocks_are_content ? self->content : self->content_blocks;
}

void
confab_message_set_content_blocks(ConfabMessage *self, const gchar *content_blocks)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (!self->blocks_are_content && g_strcmp0(self->content_blocks, content_blocks) == 0)
		return;
	self->blocks_are_content = FALSE;
	g_free(self->content_blocks);
	self->content_blocks = g_strdup(content_blocks);
}

ConfabMessageStatus
confab_message_get_status(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), 0);
	return self->status;
}

void
confab_message_set_status(ConfabMessage *self, ConfabMessageStatus status)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (self->status == status)
		return;
	self->status = status;
}

const gchar *
confab_message_get_finish_reason(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), NULL);
	return self->finish_reason;
}

void
confab_message_set_finish_reason(ConfabMessage *self, const gchar *finish_reason)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (g_strcmp0(self->finish_reason, finish_reason) == 0)
		return;
	g_free(self->finish_reason);
	self->finish_reason = g_strdup(finish_reason);
}

gint64
confab_message_get_prompt_tokens(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), 0);
	return self->prompt_tokens;
}

void
confab_message_set_prompt_tokens(ConfabMessage *self, gint64 prompt_tokens)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (self->prompt_tokens == prompt_tokens)
		return;
	self->prompt_tokens = prompt_tokens;
}

gint64
confab_message_get_completion_tokens(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), 0);
	return self->completion_tokens;
}

void
confab_message_set_completion_tokens(ConfabMessage *self, gint64 completion_tokens)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (self->completion_tokens == completion_tokens)
		return;
	self->completion_tokens = completion_tokens;
}

gint64
confab_message_get_created_at(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), 0);
	return self->created_at;
}

void
confab_message_set_created_at(ConfabMessage *self, gint64 created_at)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (self->created_at == created_at)
		return;
	self->created_at = created_at;
}

const gchar *
confab_message_status_to_string(ConfabMessageStatus status)
{
	switch (status) {
	case CONFAB_MESSAGE_STATUS_INCOMPLETE:
		return "incomplete";
	case CONFAB_MESSAGE_STATUS_FAILED:
		return "failed";
	case CONFAB_MESSAGE_STATUS_COMPLETED:
	default:
		return "completed";
	}
}

/**
 * confab_message_get_response_id:
 * @self: a #ConfabMessage
 *
 * Returns: (nullable): the id (`resp_…`) of the response whose input or
 *   answer this message is; %NULL for a chat completion's or a channel's
 */
const gchar *
confab_message_get_response_id(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), NULL);
	return self->response_id;
}

void
confab_message_set_response_id(ConfabMessage *self, const gchar *response_id)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	g_free(self->response_id);
	self->response_id = g_strdup(response_id);
}

/**
 * confab_message_get_upstream:
 * @self: a #ConfabMessage
 *
 * Returns: (nullable): for an assistant message that a routed model call
 *   answered, the target as JSON: `{"label","upstream_model","attempts"}`
 *   (the last model call's target, the targets tried over the turn)
 */
const gchar *
confab_message_get_upstream(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), NULL);
	return self->upstream;
}

/**
 * confab_message_set_upstream:
 * @self: a #ConfabMessage
 * @upstream: (nullable): what confab_message_get_upstream() returns
 *
 * Records the target that answered.
 */
void
confab_message_set_upstream(ConfabMessage *self, const gchar *upstream)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	g_free(self->upstream);
	self->upstream = g_strdup(upstream);
}
