/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "model/confab-session.h"

/**
 * ConfabSession:
 *
 * A conversation with one agent.
 */
struct _ConfabSession {
	GObject parent_instance;
	gchar *id;	 /* owned */
	gchar *owner;	 /* owned */
	gchar *agent_id; /* owned */
	ConfabSessionSource source;
	gchar *title; /* owned */
	gint64 created_at;
	gint64 updated_at;
	gchar *metadata; /* owned: a JSON object, the Conversations API's */
};

G_DEFINE_FINAL_TYPE(ConfabSession, confab_session, G_TYPE_OBJECT)

static void
confab_session_finalize(GObject *object)
{
	ConfabSession *self = CONFAB_SESSION(object);

	g_free(self->id);
	g_free(self->owner);
	g_free(self->agent_id);
	g_free(self->title);
	g_free(self->metadata);

	G_OBJECT_CLASS(confab_session_parent_class)->finalize(object);
}

static void
confab_session_class_init(ConfabSessionClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->finalize = confab_session_finalize;
}

static void
confab_session_init(ConfabSession *self)
{
}

/**
 * confab_session_new:
 *
 * Returns: (transfer full): a new, empty #ConfabSession
 */
ConfabSession *
confab_session_new(void)
{
	return g_object_new(CONFAB_TYPE_SESSION, NULL);
}

const gchar *
confab_session_get_id(ConfabSession *self)
{
	g_return_val_if_fail(CONFAB_IS_SESSION(self), NULL);
	return self->id;
}

void
confab_session_set_id(ConfabSession *self, const gchar *id)
{
	g_return_if_fail(CONFAB_IS_SESSION(self));
	if (g_strcmp0(self->id, id) == 0)
		return;
	g_free(self->id);
	self->id = g_strdup(id);
}

const gchar *
confab_session_get_owner(ConfabSession *self)
{
	g_return_val_if_fail(CONFAB_IS_SESSION(self), NULL);
	return self->owner;
}

void
confab_session_set_owner(ConfabSession *self, const gchar *owner)
{
	g_return_if_fail(CONFAB_IS_SESSION(self));
	if (g_strcmp0(self->owner, owner) == 0)
		return;
	g_free(self->owner);
	self->owner = g_strdup(owner);
}

const gchar *
confab_session_get_agent_id(ConfabSession *self)
{
	g_return_val_if_fail(CONFAB_IS_SESSION(self), NULL);
	return self->agent_id;
}

void
confab_session_set_agent_id(ConfabSession *self, const gchar *agent_id)
{
	g_return_if_fail(CONFAB_IS_SESSION(self));
	if (g_strcmp0(self->agent_id, agent_id) == 0)
		return;
	g_free(self->agent_id);
	self->agent_id = g_strdup(agent_id);
}

ConfabSessionSource
confab_session_get_source(ConfabSession *self)
{
	g_return_val_if_fail(CONFAB_IS_SESSION(self), 0);
	return self->source;
}

void
confab_session_set_source(ConfabSession *self, ConfabSessionSource source)
{
	g_return_if_fail(CONFAB_IS_SESSION(self));
	if (self->source == source)
		return;
	self->source = source;
}

const gchar *
confab_session_get_title(ConfabSession *self)
{
	g_return_val_if_fail(CONFAB_IS_SESSION(self), NULL);
	return self->title;
}

void
confab_session_set_title(ConfabSession *self, const gchar *title)
{
	g_return_if_fail(CONFAB_IS_SESSION(self));
	if (g_strcmp0(self->title, title) == 0)
		return;
	g_free(self->title);
	self->title = g_strdup(title);
}

/**
 * confab_session_get_metadata:
 *
 * Returns: (nullable): the conversation's metadata, a JSON object of
 *   strings as the Conversations API keeps it; %NULL for none
 */
const gchar *
confab_session_get_metadata(ConfabSession *self)
{
	g_return_val_if_fail(CONFAB_IS_SESSION(self), NULL);
	return self->metadata;
}

/**
 * confab_session_set_metadata:
 * @metadata: (nullable): a JSON object of strings, already checked
 */
void
confab_session_set_metadata(ConfabSession *self, const gchar *metadata)
{
	g_return_if_fail(CONFAB_IS_SESSION(self));
	if (g_strcmp0(self->metadata, metadata) == 0)
		return;
	g_free(self->metadata);
	self->metadata = g_strdup(metadata);
}

gint64
confab_session_get_created_at(ConfabSession *self)
{
	g_return_val_if_fail(CONFAB_IS_SESSION(self), 0);
	return self->created_at;
}

void
confab_session_set_created_at(ConfabSession *self, gint64 created_at)
{
	g_return_if_fail(CONFAB_IS_SESSION(self));
	if (self->created_at == created_at)
		return;
	self->created_at = created_at;
}

gint64
confab_session_get_updated_at(ConfabSession *self)
{
	g_return_val_if_fail(CONFAB_IS_SESSION(self), 0);
	return self->updated_at;
}

void
confab_session_set_updated_at(ConfabSession *self, gint64 updated_at)
{
	g_return_if_fail(CONFAB_IS_SESSION(self));
	if (self->updated_at == updated_at)
		return;
	self->updated_at = updated_at;
}

/**
 * confab_session_title_from_text:
 * @text: the first user text
 *
 * Returns: (transfer full) (nullable): @text on one line, cut at a word
 * boundary near 80 characters; %NULL if it is blank
 */
gchar *
confab_session_title_from_text(const gchar *text)
{
	const guint max_chars = 80;
	g_autoptr(GString) line = g_string_new(NULL);
	gboolean space = FALSE;
	glong n_chars = 0;
	const gchar *cut;

	/* collapse every run of whitespace into one space; what lies past the
	 * first max_chars + 1 characters cannot change the title */
	for (const gchar *p = text; *p != '\0' && n_chars <= (glong)max_chars;
	     p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		if (g_unichar_isspace(c)) {
			space = line->len > 0;
			continue;
		}
		if (space) {
			g_string_append_c(line, ' ');
			n_chars++;
		}
		space = FALSE;
		g_string_append_unichar(line, c);
		n_chars++;
	}
	if (line->len == 0)
		return NULL;
	if (n_chars <= (glong)max_chars)
		return g_string_free(g_steal_pointer(&line), FALSE);

	/* the last space within the limit, if it is not too early */
	cut = g_utf8_offset_to_pointer(line->str, max_chars);
	for (const gchar *p = cut; p > line->str + max_chars / 2; p = g_utf8_prev_char(p)) {
		if (*p == ' ') {
			cut = p;
			break;
		}
	}
	g_string_truncate(line, cut - line->str);
	g_string_append(line, "…");
	return g_string_free(g_steal_pointer(&line), FALSE);
}

const gchar *
confab_session_source_to_string(ConfabSessionSource source)
{
	return source == CONFAB_SESSION_SOURCE_CHANNEL ? "channel" : "api";
}

gboolean
confab_session_source_from_string(const gchar *str, ConfabSessionSource *source)
{
	if (g_strcmp0(str, "api") == 0) {
		*source = CONFAB_SESSION_SOURCE_API;
		return TRUE;
	}
	if (g_strcmp0(str, "channel") == 0) {
		*source = CONFAB_SESSION_SOURCE_CHANNEL;
		return TRUE;
	}
	return FALSE;
}
