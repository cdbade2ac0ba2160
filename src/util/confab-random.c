/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <errno.h>
#include <sys/random.h>

#include "util/confab-error.h"
#include "util/confab-random.h"

/**
 * confab_random_bytes:
 * @buf: destination
 * @len: number of bytes
 * @error: return location for a #GError
 *
 * Fills @buf from the kernel CSPRNG.
 */
gboolean
confab_random_bytes(guint8 *buf, gsize len, GError **error)
{
	gsize done = 0;
	while (done < len) {
		gssize n = getrandom(buf + done, len - done, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			g_set_error(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_FAILED,
				    "getrandom: %s",
				    g_strerror(errno));
			return FALSE;
		}
		done += (gsize)n;
	}
	return TRUE;
}
