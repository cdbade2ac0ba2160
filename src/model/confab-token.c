/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "model/confab-id.h"
#include "model/confab-token.h"
#include "util/confab-random.h"

/**
 * ConfabToken:
 *
 * An API token; only the SHA-256 of its secret is kept.
 */
struct _ConfabToken {
	GObject parent_instance;
	gchar *id;	 /* owned */
	gchar *owner;	 /* owned */
	gchar *name;	 /* owned */
	gchar **scopes;	 /* owned */
	gchar *agent_id; /* owned */
	GBytes *hash;	 /* owned */
	gint64 created_at;
	gint64 expires_at;
	gint64 revoked_at;
};

G_DEFINE_FINAL_TYPE(ConfabToken, confab_token, G_TYPE_OBJECT)

static void
confab_token_finalize(GObject *object)
{
	ConfabToken *self = CONFAB_TOKEN(object);

	g_free(self->id);
	g_free(self->owner);
	g_free(self->name);
	g_strfreev(self->scopes);
	g_free(self->agent_id);
	g_clear_pointer(&self->hash, g_bytes_unref);

	G_OBJECT_CLASS(confab_token_parent_class)->finalize(object);
}

static void
confab_token_class_init(ConfabTokenClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);

	object_class->finalize = confab_token_finalize;
}

static void
confab_token_init(ConfabToken *self)
{
}

/**
 * confab_token_new:
 *
 * Returns: (transfer full): a new, empty #ConfabToken
 */
ConfabToken *
confab_token_new(void)
{
	return g_object_new(CONFAB_TYPE_TOKEN, NULL);
}

const gchar *
confab_token_get_id(ConfabToken *self)
{
	g_return_val_if_fail(CONFAB_IS_TOKEN(self), NULL);
	return self->id;
}

void
confab_token_set_id(ConfabToken *self, const gchar *id)
{
	g_return_if_fail(CONFAB_IS_TOKEN(self));
	if (g_strcmp0(self->id, id) == 0)
		return;
	g_free(self->id);
	self->id = g_strdup(id);
}

const gchar *
confab_token_get_owner(ConfabToken *self)
{
	g_return_val_if_fail(CONFAB_IS_TOKEN(self), NULL);
	return self->owner;
}

void
confab_token_set_owner(ConfabToken *self, const gchar *owner)
{
	g_return_if_fail(CONFAB_IS_TOKEN(self));
	if (g_strcmp0(self->owner, owner) == 0)
		return;
	g_free(self->owner);
	self->owner = g_strdup(owner);
}

const gchar *
confab_token_get_name(ConfabToken *self)
{
	g_return_val_if_fail(CONFAB_IS_TOKEN(self), NULL);
	return self->name;
}

void
confab_token_set_name(ConfabToken *self, const gchar *name)
{
	g_return_if_fail(CONFAB_IS_TOKEN(self));
	if (g_strcmp0(self->name, name) == 0)
		return;
	g_free(self->name);
	self->name = g_strdup(name);
}

const gchar *const *
confab_token_get_scopes(ConfabToken *self)
{
	g_return_val_if_fail(CONFAB_IS_TOKEN(self), NULL);
	return (const gchar *const *)self->scopes;
}

void
confab_token_set_scopes(ConfabToken *self, const gchar *const *scopes)
{
	g_return_if_fail(CONFAB_IS_TOKEN(self));
	if (self->scopes == (gchar **)scopes)
		return;
	g_strfreev(self->scopes);
	self->scopes = g_strdupv((gchar **)scopes);
}

const gchar *
confab_token_get_agent_id(ConfabToken *self)
{
	g_return_val_if_fail(CONFAB_IS_TOKEN(self), NULL);
	return self->agent_id;
}

void
confab_token_set_agent_id(ConfabToken *self, const gchar *agent_id)
{
	g_return_if_fail(CONFAB_IS_TOKEN(self));
	if (g_strcmp0(self->agent_id, agent_id) == 0)
		return;
	g_free(self->agent_id);
	self->agent_id = g_strdup(agent_id);
}

GBytes *
confab_token_get_hash(ConfabToken *self)
{
	g_return_val_if_fail(CONFAB_IS_TOKEN(self), NULL);
	return self->hash;
}

void
confab_token_set_hash(ConfabToken *self, GBytes *hash)
{
	g_return_if_fail(CONFAB_IS_TOKEN(self));
	if (self->hash == hash)
		return;
	g_clear_pointer(&self->hash, g_bytes_unref);
	self->hash = hash != NULL ? g_bytes_ref(hash) : NULL;
}

gint64
confab_token_get_created_at(ConfabToken *self)
{
	g_return_val_if_fail(CONFAB_IS_TOKEN(self), 0);
	return self->created_at;
}

void
confab_token_set_created_at(ConfabToken *self, gint64 created_at)
{
	g_return_if_fail(CONFAB_IS_TOKEN(self));
	if (self->created_at == created_at)
		return;
	self->created_at = created_at;
}

gint64
confab_token_get_expires_at(ConfabToken *self)
{
	g_return_val_if_fail(CONFAB_IS_TOKEN(self), 0);
	return self->expires_at;
}

void
confab_token_set_expires_at(ConfabToken *self, gint64 expires_at)
{
	g_return_if_fail(CONFAB_IS_TOKEN(self));
	if (self->expires_at == expires_at)
		return;
	self->expires_at = expires_at;
}

gint64
confab_token_get_revoked_at(ConfabToken *self)
{
	g_return_val_if_fail(CONFAB_IS_TOKEN(self), 0);
	return self->revoked_at;
}

void
confab_token_set_revoked_at(ConfabToken *self, gint64 revoked_at)
{
	g_return_if_fail(CONFAB_IS_TOKEN(self));
	if (self->revoked_at == revoked_at)
		return;
	self->revoked_at = revoked_at;
}

/**
 * confab_token_secret_new:
 * @error: return location for a #GError
 *
 * Returns: (transfer full): a new API token secret, `nca_` and 43 base62
 * characters (256 bits) from the kernel CSPRNG
 */
gchar *
confab_token_secret_new(GError **error)
{
	static const gchar base62[] =
	    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	GString *s = g_string_new(CONFAB_PREFIX_SECRET);
	guint8 rnd[64];
	guint want = 43;

	while (want > 0) {
		if (!confab_random_bytes(rnd, sizeof(rnd), error)) {
			g_string_free(s, TRUE);
			return NULL;
		}
		for (guint i = 0; i < sizeof(rnd) && want > 0; i++) {
			/* rejection sampling keeps the characters uniform */
			if (rnd[i] >= 248)
				continue;
			g_string_append_c(s, base62[rnd[i] % 62]);
			want--;
		}
	}
	memset(rnd, 0, sizeof(rnd));
	return g_string_free(s, FALSE);
}
