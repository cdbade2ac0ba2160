/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "util/confab-month.h"

/**
 * confab_month_is_valid:
 * @month: a month as quotas and usage name it
 *
 * Returns: whether @month is `YYYY-MM`, a month from 01 to 12 (what
 *   D-Bus `ListUsage` and `confabctl usage --month` take)
 */
gboolean
confab_month_is_valid(const gchar *month)
{
	if (month == NULL || strlen(month) != 7 || month[4] != '-')
		return FALSE;
	for (guint i = 0; i < 7; i++) {
		if (i != 4 && !g_ascii_isdigit(month[i]))
			return FALSE;
	}
	return (month[5] == '0' && month[6] != '0') || (month[5] == '1' && month[6] <= '2');
}
