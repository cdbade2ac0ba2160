/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

/**
 * CONFAB_SECRET_SCRUBBER_MIN_SECRET:
 *
 * The shortest secret a scrubber takes, in bytes: shorter strings are too
 * likely to be ordinary text.
 */
#define CONFAB_SECRET_SCRUBBER_MIN_SECRET 8

/**
 * CONFAB_SECRET_SCRUBBER_REDACTED:
 *
 * What each occurrence of a secret becomes.
 */
#define CONFAB_SECRET_SCRUBBER_REDACTED "[REDACTED]"

#define CONFAB_TYPE_SECRET_SCRUBBER (confab_secret_scrubber_get_type())
G_DECLARE_FINAL_TYPE(ConfabSecretScrubber, confab_secret_scrubber, CONFAB, SECRET_SCRUBBER, GObject)

ConfabSecretScrubber *
confab_secret_scrubber_new(void);
gboolean
confab_secret_scrubber_add_secret(ConfabSecretScrubber *self, const gchar *secret);
guint
confab_secret_scrubber_get_n_secrets(ConfabSecretScrubber *self);
gsize
confab_secret_scrubber_get_max_hold(ConfabSecretScrubber *self);
gchar *
confab_secret_scrubber_scrub(ConfabSecretScrubber *self, const gchar *text);
gchar *
confab_secret_scrubber_scrub_len(ConfabSecretScrubber *self, const gchar *text, gsize len);
void
confab_secret_scrubber_scrub_error(ConfabSecretScrubber *self, GError *error);
gchar *
confab_secret_scrubber_feed(ConfabSecretScrubber *self,
			    GString *pending,
			    const gchar *piece,
			    gsize len);
gchar *
confab_secret_scrubber_flush(ConfabSecretScrubber *self, GString *pending);

G_END_DECLS
