/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "model/confab-token.h"

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
	gint64 last_used_at;
};

G_DEFINE_FINAL_TYPE(ConfabToken, confab_token, G_TYPE_OBJECT)

enum {
	PROP_0,
	PROP_ID,
	PROP_OWNER,
	PROP_NAME,
	PROP_SCOPES,
	PROP_AGENT_ID,
	PROP_HASH,
	PROP_CREATED_AT,
	PROP_EXPIRES_AT,
	PROP_REVOKED_AT,
	PROP_LAST_USED_AT,
	N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
confab_token_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
	ConfabToken *self = CONFAB_TOKEN(object);

	switch (prop_id) {
	case PROP_ID:
		g_value_set_string(value, self->id);
		break;
	case PROP_OWNER:
		g_value_set_string(value, self->owner);
		break;
	case PROP_NAME:
		g_value_set_string(value, self->name);
		break;
	case PROP_SCOPES:
		g_value_set_boxed(value, self->scopes);
		break;
	case PROP_AGENT_ID:
		g_value_set_string(value, self->agent_id);
		break;
	case PROP_HASH:
		g_value_set_boxed(value, self->hash);
		break;
	case PROP_CREATED_AT:
		g_value_set_int64(value, self->created_at);
		break;
	case PROP_EXPIRES_AT:
		g_value_set_int64(value, self->expires_at);
		break;
	case PROP_REVOKED_AT:
		g_value_set_int64(value, self->revoked_at);
		break;
	case PROP_LAST_USED_AT:
		g_value_set_int64(value, self->last_used_at);
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
	}
}

static void
confab_token_set_property(GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
	ConfabToken *self = CONFAB_TOKEN(object);

	switch (prop_id) {
	case PROP_ID:
		confab_token_set_id(self, g_value_get_string(value));
		break;
	case PROP_OWNER:
		confab_token_set_owner(self, g_value_get_string(value));
		break;
	case PROP_NAME:
		confab_token_set_name(self, g_value_get_string(value));
		break;
	case PROP_SCOPES:
		confab_token_set_scopes(self, g_value_get_boxed(value));
		break;
	case PROP_AGENT_ID:
		confab_token_set_agent_id(self, g_value_get_string(value));
		break;
	case PROP_HASH:
		confab_token_set_hash(self, g_value_get_boxed(value));
		break;
	case PROP_CREATED_AT:
		confab_token_set_created_at(self, g_value_get_int64(value));
		break;
	case PROP_EXPIRES_AT:
		confab_token_set_expires_at(self, g_value_get_int64(value));
		break;
	case PROP_REVOKED_AT:
		confab_token_set_revoked_at(self, g_value_get_int64(value));
		break;
	case PROP_LAST_USED_AT:
		confab_token_set_last_used_at(self, g_value_get_int64(value));
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
	}
}

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

	object_class->get_property = confab_token_get_property;
	object_class->set_property = confab_token_set_property;
	object_class->finalize = confab_token_finalize;

	properties[PROP_ID] = g_param_spec_string("id",
						  NULL,
						  "The token id (tok_…)",
						  NULL,
						  G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
						      G_PARAM_STATIC_STRINGS);
	properties[PROP_OWNER] = g_param_spec_string("owner",
						     NULL,
						     "The owner (a user name)",
						     NULL,
						     G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
							 G_PARAM_STATIC_STRINGS);
	properties[PROP_NAME] = g_param_spec_string("name",
						    NULL,
						    "A human-readable name",
						    NULL,
						    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
							G_PARAM_STATIC_STRINGS);
	properties[PROP_SCOPES] = g_param_spec_boxed("scopes",
						     NULL,
						     "The scopes",
						     G_TYPE_STRV,
						     G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
							 G_PARAM_STATIC_STRINGS);
	properties[PROP_AGENT_ID] = g_param_spec_string(
	    "agent-id",
	    NULL,
	    "The agent the token is bound to, if any",
	    NULL,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_HASH] = g_param_spec_boxed("hash",
						   NULL,
						   "SHA-256 of the secret (32 bytes)",
						   G_TYPE_BYTES,
						   G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY |
						       G_PARAM_STATIC_STRINGS);
	properties[PROP_CREATED_AT] = g_param_spec_int64(
	    "created-at",
	    NULL,
	    "Creation time, Unix seconds",
	    G_MININT64,
	    G_MAXINT64,
	    0,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_EXPIRES_AT] = g_param_spec_int64(
	    "expires-at",
	    NULL,
	    "Expiry, Unix seconds; 0 for never",
	    G_MININT64,
	    G_MAXINT64,
	    0,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_REVOKED_AT] = g_param_spec_int64(
	    "revoked-at",
	    NULL,
	    "Revocation time, Unix seconds; 0 if live",
	    G_MININT64,
	    G_MAXINT64,
	    0,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
	properties[PROP_LAST_USED_AT] = g_param_spec_int64(
	    "last-used-at",
	    NULL,
	    "Last use, Unix seconds; 0 if never",
	    G_MININT64,
	    G_MAXINT64,
	    0,
	    G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);

	g_object_class_install_properties(object_class, N_PROPS, properties);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_ID]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_OWNER]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_NAME]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_SCOPES]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_AGENT_ID]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_HASH]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_CREATED_AT]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_EXPIRES_AT]);
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
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_REVOKED_AT]);
}

gint64
confab_token_get_last_used_at(ConfabToken *self)
{
	g_return_val_if_fail(CONFAB_IS_TOKEN(self), 0);
	return self->last_used_at;
}

void
confab_token_set_last_used_at(ConfabToken *self, gint64 last_used_at)
{
	g_return_if_fail(CONFAB_IS_TOKEN(self));
	if (self->last_used_at == last_used_at)
		return;
	self->last_used_at = last_used_at;
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_LAST_USED_AT]);
}
