/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabSecretScrubber"

#include "config.h"

#include <string.h>

#include "util/confab-secret-scrubber.h"

/**
 * ConfabSecretScrubber:
 *
 * Replaces every occurrence of any of a set of secrets (an upstream's API
 * key, a token read from a file...) with `[REDACTED]` in text that came
 * from elsewhere, before the text reaches a client, a stored row or a log
 * line.
 *
 * On a whole string: confab_secret_scrubber_scrub(). On a stream of pieces
 * (the deltas of an answer), where a secret may be cut between two of them:
 * confab_secret_scrubber_feed() releases what cannot be the start of a
 * secret and keeps in the caller's @pending the rest, at most the longest
 * secret less one byte; the next piece or confab_secret_scrubber_flush()
 * releases it. Whatever the cuts, the pieces released put together are the
 * whole string scrubbed. What is released never ends inside a UTF-8
 * character (so an incomplete character at the end of a piece is held
 * too); a secret that is valid UTF-8 never starts or ends inside one in
 * valid text, so redacting it never cuts one either.
 *
 * Where occurrences overlap, the leftmost wins, and of those starting at the
 * same byte the longest. A secret cut off by the end of the text (the
 * upstream's message truncated, a stream that stopped) is redacted too
 * when at least CONFAB_SECRET_SCRUBBER_MIN_SECRET of its bytes are there.
 */

struct _ConfabSecretScrubber {
	GObject parent_instance;
	GPtrArray *secrets; /* owned: gchar*, wiped when freed */
	gsize longest;
	guint32 first[8]; /* bit per byte value: some secret starts with it */
};

G_DEFINE_FINAL_TYPE(ConfabSecretScrubber, confab_secret_scrubber, G_TYPE_OBJECT)

static void
secret_free(gpointer data)
{
	gchar *secret = data;
	memset(secret, 0, strlen(secret));
	g_free(secret);
}

static void
confab_secret_scrubber_finalize(GObject *object)
{
	ConfabSecretScrubber *self = CONFAB_SECRET_SCRUBBER(object);
	g_ptr_array_unref(self->secrets);
	G_OBJECT_CLASS(confab_secret_scrubber_parent_class)->finalize(object);
}

static void
confab_secret_scrubber_class_init(ConfabSecretScrubberClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_secret_scrubber_finalize;
}

static void
confab_secret_scrubber_init(ConfabSecretScrubber *self)
{
	self->secrets = g_ptr_array_new_with_free_func(secret_free);
}

/**
 * confab_secret_scrubber_new:
 *
 * Returns: (transfer full): a scrubber without secrets: it changes nothing
 */
ConfabSecretScrubber *
confab_secret_scrubber_new(void)
{
	return g_object_new(CONFAB_TYPE_SECRET_SCRUBBER, NULL);
}

/**
 * confab_secret_scrubber_add_secret:
 * @self: a #ConfabSecretScrubber
 * @secret: (nullable): a secret
 *
 * Adds @secret, unless it is shorter than CONFAB_SECRET_SCRUBBER_MIN_SECRET
 * bytes or known already. Not while a stream is being scrubbed: what its
 * pending buffer holds was decided with the secrets of the time.
 *
 * Returns: whether @secret is scrubbed from now on
 */
gboolean
confab_secret_scrubber_add_secret(ConfabSecretScrubber *self, const gchar *secret)
{
	gsize len;

	g_return_val_if_fail(CONFAB_IS_SECRET_SCRUBBER(self), FALSE);
	if (secret == NULL)
		return FALSE;
	len = strlen(secret);
	if (len < CONFAB_SECRET_SCRUBBER_MIN_SECRET)
		return FALSE;
	for (guint i = 0; i < self->secrets->len; i++) {
		if (strcmp(g_ptr_array_index(self->secrets, i), secret) == 0)
			return TRUE;
	}
	g_ptr_array_add(self->secrets, g_strdup(secret));
	self->longest = MAX(self->longest, len);
	self->first[(guchar)secret[0] / 32] |= 1u << ((guchar)secret[0] % 32);
	return TRUE;
}

/**
 * confab_secret_scrubber_get_n_secrets:
 * @self: a #ConfabSecretScrubber
 *
 * Returns: how many secrets it scrubs
 */
guint
confab_secret_scrubber_get_n_secrets(ConfabSecretScrubber *self)
{
	g_return_val_if_fail(CONFAB_IS_SECRET_SCRUBBER(self), 0);
	return self->secrets->len;
}

/**
 * confab_secret_scrubber_get_max_hold:
 * @self: a #ConfabSecretScrubber
 *
 * Returns: the most bytes confab_secret_scrubber_feed() keeps pending
 *   because they may start a secret: the longest secret less one (an
 *   incomplete UTF-8 character, at most 3 bytes, may be kept instead)
 */
gsize
confab_secret_scrubber_get_max_hold(ConfabSecretScrubber *self)
{
	g_return_val_if_fail(CONFAB_IS_SECRET_SCRUBBER(self), 0);
	return MAX(self->longest, 1) - 1;
}

/* At @p (@rest bytes to the end): the length of the longest secret found
 * whole there (0 for none); *@prefix says whether the rest is a proper
 * prefix of a longer secret, which more bytes could complete. */
static gsize
match_at(ConfabSecretScrubber *self, const gchar *p, gsize rest, gboolean *prefix)
{
	gsize best = 0;

	*prefix = FALSE;
	for (guint i = 0; i < self->secrets->len; i++) {
		const gchar *secret = g_ptr_array_index(self->secrets, i);
		gsize len = strlen(secret);

		if (len <= rest) {
			if (len > best && memcmp(p, secret, len) == 0)
				best = len;
		} else if (memcmp(p, secret, rest) == 0) {
			*prefix = TRUE;
		}
	}
	return best;
}

static gboolean
is_continuation(guchar c)
{
	return (c & 0xc0) == 0x80;
}

/* The length of the UTF-8 sequence a lead byte starts (1 for anything
 * else: an invalid byte is not waited on). */
static gsize
sequence_length(guchar c)
{
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 1;
}

/*
 * Scrubs @text into @out. With @final, all of it; otherwise it stops where
 * what follows may start a secret (or is an incomplete character) and
 * returns that offset: those bytes are for the next call.
 */
static gsize
process(ConfabSecretScrubber *self, GString *out, const gchar *text, gsize len, gboolean final)
{
	gsize i = 0;
	gsize from = 0; /* copied to @out up to here */
	gsize hold = len;

	while (i < len) {
		guchar c = (guchar)text[i];
		gboolean prefix;
		gsize match;

		if ((self->first[c / 32] & (1u << (c % 32))) == 0) {
			i++;
			continue;
		}
		match = match_at(self, text + i, len - i, &prefix);
		if (prefix) {
			if (!final) {
				/* more bytes will say: wait for them */
				hold = i;
				break;
			}
			if (len - i >= CONFAB_SECRET_SCRUBBER_MIN_SECRET) {
				/* a secret cut off by the end */
				g_string_append_len(out, text + from, (gssize)(i - from));
				g_string_append(out, CONFAB_SECRET_SCRUBBER_REDACTED);
				from = i = len;
				break;
			}
		}
		if (match > 0) {
			g_string_append_len(out, text + from, (gssize)(i - from));
			g_string_append(out, CONFAB_SECRET_SCRUBBER_REDACTED);
			i += match;
			from = i;
			continue;
		}
		i++;
	}
	if (final) {
		g_string_append_len(out, text + from, (gssize)(len - from));
		return len;
	}
	if (hold == len) {
		/* an incomplete character at the end waits for its rest */
		gsize lead = len;
		while (lead > from && len - lead < 3 && is_continuation((guchar)text[lead - 1]))
			lead--;
		if (lead > from && !is_continuation((guchar)text[lead - 1]) &&
		    sequence_length((guchar)text[lead - 1]) > len - (lead - 1))
			hold = lead - 1;
	} else {
		/* a secret starting inside a character: keep the character
		 * whole (never past what was redacted) */
		while (hold > from && is_continuation((guchar)text[hold]))
			hold--;
	}
	g_string_append_len(out, text + from, (gssize)(hold - from));
	return hold;
}

/**
 * confab_secret_scrubber_scrub_len:
 * @self: a #ConfabSecretScrubber
 * @text: text, not necessarily NUL-terminated
 * @len: its length
 *
 * Returns: (transfer full): @text with every secret redacted
 */
gchar *
confab_secret_scrubber_scrub_len(ConfabSecretScrubber *self, const gchar *text, gsize len)
{
	GString *out;

	g_return_val_if_fail(CONFAB_IS_SECRET_SCRUBBER(self), NULL);
	g_return_val_if_fail(text != NULL || len == 0, NULL);
	out = g_string_sized_new(len + 1);
	process(self, out, text, len, TRUE);
	return g_string_free(out, FALSE);
}

/**
 * confab_secret_scrubber_scrub:
 * @self: a #ConfabSecretScrubber
 * @text: (nullable): a whole string, as an error message
 *
 * Returns: (transfer full) (nullable): @text with every secret redacted
 */
gchar *
confab_secret_scrubber_scrub(ConfabSecretScrubber *self, const gchar *text)
{
	g_return_val_if_fail(CONFAB_IS_SECRET_SCRUBBER(self), NULL);
	if (text == NULL)
		return NULL;
	return confab_secret_scrubber_scrub_len(self, text, strlen(text));
}

/**
 * confab_secret_scrubber_scrub_error:
 * @self: a #ConfabSecretScrubber
 * @error: (nullable): an error whose message may quote a secret
 *
 * Scrubs @error's message in place.
 */
void
confab_secret_scrubber_scrub_error(ConfabSecretScrubber *self, GError *error)
{
	gchar *message;

	g_return_if_fail(CONFAB_IS_SECRET_SCRUBBER(self));
	if (error == NULL || error->message == NULL || self->secrets->len == 0)
		return;
	message = confab_secret_scrubber_scrub(self, error->message);
	g_free(error->message);
	error->message = message;
}

/**
 * confab_secret_scrubber_feed:
 * @self: a #ConfabSecretScrubber
 * @pending: the stream's bytes held back so far (empty at its start);
 *   owned by the caller, one per stream
 * @piece: the next piece of the stream
 * @len: its length
 *
 * Returns: (transfer full): what can be released now, scrubbed; may be
 *   empty
 */
gchar *
confab_secret_scrubber_feed(ConfabSecretScrubber *self,
			    GString *pending,
			    const gchar *piece,
			    gsize len)
{
	GString *out;
	gsize hold;

	g_return_val_if_fail(CONFAB_IS_SECRET_SCRUBBER(self), NULL);
	g_return_val_if_fail(pending != NULL, NULL);
	g_return_val_if_fail(piece != NULL || len == 0, NULL);
	g_string_append_len(pending, piece, (gssize)len);
	out = g_string_sized_new(pending->len + 1);
	hold = process(self, out, pending->str, pending->len, FALSE);
	g_string_erase(pending, 0, (gssize)hold);
	return g_string_free(out, FALSE);
}

/**
 * confab_secret_scrubber_flush:
 * @self: a #ConfabSecretScrubber
 * @pending: a stream's held-back bytes; emptied
 *
 * The stream ended: releases what was held back, scrubbed.
 *
 * Returns: (transfer full): the rest; may be empty
 */
gchar *
confab_secret_scrubber_flush(ConfabSecretScrubber *self, GString *pending)
{
	gchar *rest;

	g_return_val_if_fail(CONFAB_IS_SECRET_SCRUBBER(self), NULL);
	g_return_val_if_fail(pending != NULL, NULL);
	rest = confab_secret_scrubber_scrub_len(self, pending->str, pending->len);
	memset(pending->str, 0, pending->len);
	g_string_truncate(pending, 0);
	return rest;
}
