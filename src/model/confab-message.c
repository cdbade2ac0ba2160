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
	gchar *id;	       /* owned */
	gchar *session_id;     /* owned */
	gchar *role;	       /* owned */
	gchar *model;	       /* owned */
	gchar *content;	       /* owned */
	gchar *content_blocks; /* owned */
	ConfabMessageStatus status;
	gchar *finish_reason; /* owned */
	gint64 prompt_tokens;
	gint64 completion_tokens;
	gint64 created_at;
};

G_DEFINE_FINAL_TYPE(ConfabMessage, confab_message, G_TYPE_OBJECT)

enum {
	PROP_0,
	PROP_ID,
	PROP_SESSION_ID,
	PROP_ROLE,
	PROP_MODEL,
	PROP_CONTENT,
	PROP_CONTENT_BLOCKS,
	PROP_STATUS,
	PROP_FINISH_REASON,
	PROP_PROMPT_TOKENS,
	PROP_COMPLETION_TOKENS,
	PROP_CREATED_AT,
	N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
confab_message_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
	ConfabMessage *self = CONFAB_MESSAGE(object);

	switch (prop_id) {
	case PROP_ID:
		g_value_set_string(value, self->id);
		break;
	case PROP_SESSION_ID:
		g_value_set_string(value, self->session_id);
		break;
	case PROP_ROLE:
		g_value_set_string(value, self->role);
		break;
	case PROP_MODEL:
		g_value_set_string(value, self->model);
		break;
	case PROP_CONTENT:
		g_value_set_string(value, self->content);
		break;
	case PROP_CONTENT_BLOCKS:
		g_value_set_string(value, self->content_blocks);
		break;
	case PROP_STATUS:
		g_value_set_enum(value, self->status);
		break;
	case PROP_FINISH_REASON:
		g_value_set_string(value, self->finish_reason);
		break;
	case PROP_PROMPT_TOKENS:
		g_value_set_int64(value, self->prompt_tokens);
		break;
	case PROP_COMPLETION_TOKENS:
		g_value_set_int64(value, self->completion_tokens);
		break;
	case PROP_CREATED_AT:
		g_value_set_int64(value, self->created_at);
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
	}
}

static void
confab_message_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
	ConfabMessage *self = CONFAB_MESSAGE(object);

	switch (prop_id) {
	case PROP_ID:
		confab_message_set_id(self, g_value_get_string(value));
		break;
	case PROP_SESSION_ID:
		confab_message_set_session_id(self, g_value_get_string(value));
		break;
	case PROP_ROLE:
		confab_message_set_role(self, g_value_get_string(value));
		break;
	case PROP_MODEL:
		confab_message_set_model(self, g_value_get_string(value));
		break;
	case PROP_CONTENT:
		confab_message_set_content(self, g_value_get_string(value));
		break;
	case PROP_CONTENT_BLOCKS:
		confab_message_set_content_blocks(self, g_value_get_string(value));
		break;
	case PROP_STATUS:
		confab_message_set_status(self, g_value_get_enum(value));
		break;
	case PROP_FINISH_REASON:
		confab_message_set_finish_reason(self, g_value_get_string(value));
		break;
	case PROP_PROMPT_TOKENS:
		confab_message_set_prompt_tokens(self, g_value_get_int64(value));
		break;
	case PROP_COMPLETION_TOKENS:
		confab_message_set_completion_tokens(self, g_value_get_int64(value));
		break;
	case PROP_CREATED_AT:
		confab_message_set_created_at(self, g_value_get_int64(value));
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
	}
}

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

	G_OBJECT_CLASS(confab_message_parent_class)->finalize(object);
}

static void
confab_message_class_init(ConfabMessageClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->get_property = confab_message_get_property;
	object_class->set_property = confab_message_set_property;
	object_class->finalize = confab_message_finalize;

	properties[PROP_ID] = g_param_spec_string("id",
						  NULL,
						  "The message id (msg_…)",
						  NULL,
						  G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
						      G_PARAM_STATIC_STRINGS);
	properties[PROP_SESSION_ID] = g_param_spec_string(
	    "session-id",
	    NULL,
	    "The session id",
	    NULL,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_ROLE] = g_param_spec_string("role",
						    NULL,
						    "system, developer, user, assistant or tool",
						    NULL,
						    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
							G_PARAM_STATIC_STRINGS);
	properties[PROP_MODEL] = g_param_spec_string("model",
						     NULL,
						     "The agent id",
						     NULL,
						     G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
							 G_PARAM_STATIC_STRINGS);
	properties[PROP_CONTENT] = g_param_spec_string("content",
						       NULL,
						       "OpenAI content parts, a JSON array",
						       NULL,
						       G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
							   G_PARAM_STATIC_STRINGS);
	properties[PROP_CONTENT_BLOCKS] = g_param_spec_string(
	    "content-blocks",
	    NULL,
	    "Transcript blocks, a JSON array",
	    NULL,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_STATUS] =
	    g_param_spec_enum("status",
			      NULL,
			      "completed, incomplete or failed",
			      CONFAB_TYPE_MESSAGE_STATUS,
			      CONFAB_MESSAGE_STATUS_COMPLETED,
			      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_FINISH_REASON] = g_param_spec_string(
	    "finish-reason",
	    NULL,
	    "Why the assistant stopped",
	    NULL,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_PROMPT_TOKENS] = g_param_spec_int64(
	    "prompt-tokens",
	    NULL,
	    "Usage: prompt tokens, -1 if unknown",
	    G_MININT64,
	    G_MAXINT64,
	    0,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_COMPLETION_TOKENS] = g_param_spec_int64(
	    "completion-tokens",
	    NULL,
	    "Usage: completion tokens, -1 if unknown",
	    G_MININT64,
	    G_MAXINT64,
	    0,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_CREATED_AT] = g_param_spec_int64(
	    "created-at",
	    NULL,
	    "Creation time, Unix seconds",
	    G_MININT64,
	    G_MAXINT64,
	    0,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);

	g_object_class_install_properties(object_class, N_PROPS, properties);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_ID]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_SESSION_ID]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_ROLE]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_MODEL]);
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
	g_free(self->content);
	self->content = g_strdup(content);
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_CONTENT]);
}

const gchar *
confab_message_get_content_blocks(ConfabMessage *self)
{
	g_return_val_if_fail(CONFAB_IS_MESSAGE(self), NULL);
	return self->content_blocks;
}

void
confab_message_set_content_blocks(ConfabMessage *self, const gchar *content_blocks)
{
	g_return_if_fail(CONFAB_IS_MESSAGE(self));
	if (g_strcmp0(self->content_blocks, content_blocks) == 0)
		return;
	g_free(self->content_blocks);
	self->content_blocks = g_strdup(content_blocks);
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_CONTENT_BLOCKS]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_STATUS]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_FINISH_REASON]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_PROMPT_TOKENS]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_COMPLETION_TOKENS]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_CREATED_AT]);
}
