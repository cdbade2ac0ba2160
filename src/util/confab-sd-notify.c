/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabDaemon"

#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/confab-sd-notify.h"

/**
 * confab_sd_notify:
 * @state: e.g. `READY=1` or `STOPPING=1`
 *
 * Tells systemd how the service is doing, over $NOTIFY_SOCKET, the way
 * sd_notify(3) does, without linking libsystemd. Does nothing outside
 * systemd.
 *
 * Returns: %TRUE if the message was sent
 */
gboolean
confab_sd_notify(const gchar *state)
{
	const gchar *path = g_getenv("NOTIFY_SOCKET");
	struct sockaddr_un addr = {0};
	socklen_t addr_len;
	gsize path_len;
	gint fd;
	gssize sent;

	if (path == NULL || (path[0] != '/' && path[0] != '@'))
		return FALSE;
	path_len = strlen(path);
	if (path_len >= sizeof(addr.sun_path))
		return FALSE;
	addr.sun_family = AF_UNIX;
	memcpy(addr.sun_path, path, path_len);
	/* an abstract socket: '@' stands for the leading NUL */
	if (path[0] == '@')
		addr.sun_path[0] = '\0';
	addr_len = offsetof(struct sockaddr_un, sun_path) + path_len;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return FALSE;
	sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&addr, addr_len);
	if (sent < 0)
		g_debug("sd_notify(%s): %s", state, g_strerror(errno));
	close(fd);
	return sent >= 0;
}
