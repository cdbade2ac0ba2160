/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include "confab-fuzz.h"
#include "openai/confab-responses-request.h"

/* A request body, as the responses handler gets it: JSON → a validated turn. */
int
LLVMFuzzerTestOneInput(const guint8 *data, size_t size)
{
	const ConfabChatLimits limits = {64, 10, 1024 * 1024};
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabResponsesRequest) request =
	    confab_responses_request_parse((const gchar *)data, size, &limits, &error);

	/* exactly one of a request and an error */
	g_assert((request == NULL) != (error == NULL));
	return 0;
}
