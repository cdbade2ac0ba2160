/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabId"

#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "model/confab-id.h"
#include "util/confab-error.h"
#include "util/confab-random.h"

/*
 * Ids are "<prefix><26 chars>": 10 Crockford base32 characters of Unix time
 * in milliseconds then 16 of randomness (80 bits), lower case, as ULID. The
 * alphabet is in ASCII order, so ids sort by creation time as plain strings.
 * Within one millisecond the generator increments the random part instead
 * of drawing a new one (ULID's monotonic mode): ids stay strictly increasing
 * in one daemon, which list cursors rely on.
 */

static const gchar crockford[] = "0123456789abcdefghjkmnpqrstvwxyz";

struct _ConfabIdGenerator {
	GObject parent_instance;
	GMutex mutex;
	gint64 last_ms;
	guint64 rand_hi; /* upper 16 bits of the 80-bit random part */
	guint64 rand_lo; /* lower 64 bits */
	gint64 (*clock_ms)(gpointer data);
	gpointer clock_data; /* unowned */
};

G_DEFINE_FINAL_TYPE(ConfabIdGenerator, confab_id_generator, G_TYPE_OBJECT)

static gint64
confab_id_generator_real_clock(gpointer data)
{
	return g_get_real_time() / 1000;
}

static void
confab_id_generator_finalize(GObject *object)
{
	ConfabIdGenerator *self = CONFAB_ID_GENERATOR(object);
	g_mutex_clear(&self->mutex);
	G_OBJECT_CLASS(confab_id_generator_parent_class)->finalize(object);
}

static void
confab_id_generator_class_init(ConfabIdGeneratorClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_id_generator_finalize;
}

static void
confab_id_generator_init(ConfabIdGenerator *self)
{
	g_mutex_init(&self->mutex);
	self->last_ms = -1;
	self->clock_ms = confab_id_generator_real_clock;
}

/**
 * confab_id_generator_new:
 *
 * Returns: (transfer full): a new id generator; one per daemon
 */
ConfabIdGenerator *
confab_id_generator_new(void)
{
	return g_object_new(CONFAB_TYPE_ID_GENERATOR, NULL);
}

/**
 * confab_id_generator_set_clock:
 * @self: a #ConfabIdGenerator
 * @clock_ms: (nullable): returns the time in Unix milliseconds
 * @data: passed to @clock_ms
 *
 * Replaces the clock, for tests.
 */
void
confab_id_generator_set_clock(ConfabIdGenerator *self, gint64 (*clock_ms)(gpointer), gpointer data)
{
	g_return_if_fail(CONFAB_IS_ID_GENERATOR(self));
	self->clock_ms = clock_ms != NULL ? clock_ms : confab_id_generator_real_clock;
	self->clock_data = data;
}

/**
 * confab_id_generator_next:
 * @self: a #ConfabIdGenerator
 * @prefix: the id prefix, such as `cts_`
 *
 * Thread-safe.
 *
 * Returns: (transfer full): a new id, greater than every id this generator
 * returned before
 */
gchar *
confab_id_generator_next(ConfabIdGenerator *self, const gchar *prefix)
{
	gsize plen = strlen(prefix);
	gchar *id = g_malloc(plen + CONFAB_ID_BODY_LEN + 1);
	gchar *p = id + plen;
	gint64 ms;
	guint64 hi, lo;

	g_return_val_if_fail(CONFAB_IS_ID_GENERATOR(self), NULL);

	memcpy(id, prefix, plen);
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->mutex);
		ms = self->clock_ms(self->clock_data);
		if (ms <= self->last_ms) {
			/* same millisecond, or the clock stepped back: keep the
			 * last time and count up, so ids never go backwards */
			ms = self->last_ms;
			self->rand_lo++;
			if (self->rand_lo == 0)
				self->rand_hi = (self->rand_hi + 1) & 0xffff;
			if (self->rand_lo == 0 && self->rand_hi == 0) {
				/* 2^80 ids in one millisecond: borrow the next one */
				ms = ++self->last_ms;
			}
		} else {
			guint8 rnd[10];
			if (!confab_random_bytes(rnd, sizeof(rnd), NULL))
				g_assert_not_reached();
			self->rand_hi = ((guint64)rnd[0] << 8) | rnd[1];
			/* leave headroom so increments within a millisecond do
			 * not wrap into the time part */
			self->rand_hi &= 0x7fff;
			memcpy(&self->rand_lo, rnd + 2, 8);
			self->last_ms = ms;
		}
		hi = self->rand_hi;
		lo = self->rand_lo;
	}

	/* 48-bit time in 10 characters (50 bits) */
	for (gint i = 9; i >= 0; i--) {
		p[i] = crockford[ms & 0x1f];
		ms >>= 5;
	}
	/* 80-bit random part in 16 characters, most significant first */
	for (gint i = 15; i >= 0; i--) {
		p[10 + i] = crockford[lo & 0x1f];
		lo = (lo >> 5) | ((hi & 0x1f) << 59);
		hi >>= 5;
	}
	p[CONFAB_ID_BODY_LEN] = '\0';
	return id;
}

static gint
crockford_value(gchar c)
{
	const gchar *p;
	if (c == '\0')
		return -1;
	p = strchr(crockford, c);
	return p != NULL ? (gint)(p - crockford) : -1;
}

/**
 * confab_id_is_valid:
 * @id: (nullable): a string
 * @prefix: (nullable): the expected prefix, or %NULL for any of ours
 *
 * Returns: %TRUE if @id has the shape of an id with @prefix
 */
gboolean
confab_id_is_valid(const gchar *id, const gchar *prefix)
{
	const gchar *body;
	if (id == NULL)
		return FALSE;
	if (prefix != NULL) {
		if (!g_str_has_prefix(id, prefix))
			return FALSE;
		body = id + strlen(prefix);
	} else {
		body = strchr(id, '_');
		if (body == NULL || body - id != 3)
			return FALSE;
		body++;
	}
	if (strlen(body) != CONFAB_ID_BODY_LEN)
		return FALSE;
	/* the first character carries only 3 bits of a 48-bit time */
	if (crockford_value(body[0]) > 7)
		return FALSE;
	for (guint i = 0; i < CONFAB_ID_BODY_LEN; i++) {
		if (crockford_value(body[i]) < 0)
			return FALSE;
	}
	return TRUE;
}

/**
 * confab_id_get_timestamp_ms:
 * @id: a valid id
 *
 * Returns: the creation time encoded in @id, in Unix milliseconds, or -1
 */
gint64
confab_id_get_timestamp_ms(const gchar *id)
{
	const gchar *body = strrchr(id, '_');
	const gchar *dash = strrchr(id, '-');
	gint64 ms = 0;
	if (dash != NULL && (body == NULL || dash > body))
		body = dash;
	if (body == NULL || strlen(body + 1) != CONFAB_ID_BODY_LEN)
		return -1;
	body++;
	for (guint i = 0; i < 10; i++) {
		gint v = crockford_value(body[i]);
		if (v < 0)
			return -1;
		ms = (ms << 5) | v;
	}
	return ms;
}

/**
 * confab_id_get_timestamp:
 * @id: a valid id
 *
 * Returns: the creation time encoded in @id, in Unix seconds, or -1
 */
gint64
confab_id_get_timestamp(const gchar *id)
{
	gint64 ms = confab_id_get_timestamp_ms(id);
	return ms < 0 ? -1 : ms / 1000;
}
