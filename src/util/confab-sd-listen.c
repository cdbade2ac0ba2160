/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabDaemon"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "util/confab-error.h"
#include "util/confab-sd-listen.h"

/**
 * confab_sd_listen_fds:
 * @error: return location for a #GError
 *
 * The sockets systemd (a `.socket` unit, or `systemd-socket-activate`)
 * passed to this process, the way sd_listen_fds(3) finds them, without
 * linking libsystemd: `$LISTEN_PID` names this process and `$LISTEN_FDS`
 * counts descriptors from %CONFAB_SD_LISTEN_FDS_START on. The variables
 * are then unset, so that the children (MCP tool servers) do not take
 * them for theirs, and the descriptors are made close-on-exec.
 *
 * Returns: how many descriptors were passed (0 when none, or when they
 *   were meant for another process), or -1 with @error set when the
 *   variables are malformed
 */
gint
confab_sd_listen_fds(GError **error)
{
	const gchar *pid_text = g_getenv("LISTEN_PID");
	const gchar *fds_text = g_getenv("LISTEN_FDS");
	guint64 pid = 0;
	guint64 n = 0;
	gint result = -1;

	if (pid_text == NULL || fds_text == NULL)
		return 0;
	if (!g_ascii_string_to_unsigned(pid_text, 10, 1, G_MAXINT, &pid, NULL)) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_INVALID_VALUE,
			    "LISTEN_PID '%s' is not a process id",
			    pid_text);
	} else if ((pid_t)pid != getpid()) {
		/* inherited from a parent that was activated: not ours */
		result = 0;
	} else if (!g_ascii_string_to_unsigned(fds_text,
					       10,
					       0,
					       G_MAXINT - CONFAB_SD_LISTEN_FDS_START,
					       &n,
					       NULL)) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_INVALID_VALUE,
			    "LISTEN_FDS '%s' is not a number of descriptors",
			    fds_text);
	} else {
		result = (gint)n;
		for (gint fd = CONFAB_SD_LISTEN_FDS_START; fd < CONFAB_SD_LISTEN_FDS_START + result;
		     fd++) {
			gint flags = fcntl(fd, F_GETFD);
			if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) {
				gint saved = errno;
				g_set_error(error,
					    CONFAB_ERROR,
					    CONFAB_ERROR_INVALID_VALUE,
					    "LISTEN_FDS: descriptor %d: %s",
					    fd,
					    g_strerror(saved));
				result = -1;
				break;
			}
		}
	}
	g_unsetenv("LISTEN_PID");
	g_unsetenv("LISTEN_FDS");
	g_unsetenv("LISTEN_FDNAMES");
	return result;
}
