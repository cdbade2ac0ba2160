/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "openai/confab-openai-message.h"
#include "util/confab-json.h"

/*
 * The model's context, settled: every tool call answered right after the
 * assistant message that made it (confab_openai_message_settle_calls()).
 */

#define NOT_RUN "not run"

static gchar *
settle(const gchar *json)
{
	g_autoptr(JsonNode) node = confab_json_from_string(json);

	g_assert_nonnull(node);
	confab_openai_message_settle_calls(json_node_get_array(node), NOT_RUN);
	return confab_json_to_string(node);
}

static void
test_settle(void)
{
	static const struct {
		const gchar *in;
		const gchar *out; /* NULL: unchanged */
	} cases[] = {
	    /* nothing to settle */
	    {"[]", NULL},
	    {"[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}]",
	     NULL},
	    /* in order already, results in any order */
	    {"[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"1\"},{\"id\":"
	     "\"2\"}]},{\"role\":\"tool\",\"tool_call_id\":\"2\",\"content\":\"r2\"},{\"role\":"
	     "\"tool\",\"tool_call_id\":\"1\",\"content\":\"r1\"},{\"role\":\"user\",\"content\":"
	     "\"u\"}]",
	     NULL},
	    /* a result a later turn gave (a continuation's, after its new
	     * message) moves up to its call */
	    {"[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"1\"},{\"id\":"
	     "\"2\"}]},{\"role\":\"tool\",\"tool_call_id\":\"2\",\"content\":\"r2\"},{\"role\":"
	     "\"user\",\"content\":\"u\"},{\"role\":\"tool\",\"tool_call_id\":\"1\",\"content\":"
	     "\"r1\"}]",
	     "[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"1\"},{\"id\":"
	     "\"2\"}]},{\"role\":\"tool\",\"tool_call_id\":\"2\",\"content\":\"r2\"},{\"role\":"
	     "\"tool\",\"tool_call_id\":\"1\",\"content\":\"r1\"},{\"role\":\"user\",\"content\":"
	     "\"u\"}]"},
	    /* a call nothing answers is answered "not run", before what follows */
	    {"[{\"role\":\"assistant\",\"content\":\"t\",\"tool_calls\":[{\"id\":\"1\"}]},{"
	     "\"role\":"
	     "\"user\",\"content\":\"u\"}]",
	     "[{\"role\":\"assistant\",\"content\":\"t\",\"tool_calls\":[{\"id\":\"1\"}]},{"
	     "\"role\":"
	     "\"tool\",\"tool_call_id\":\"1\",\"content\":\"not run\"},{\"role\":\"user\","
	     "\"content\":\"u\"}]"},
	    /* at the very end too, and in two turns */
	    {"[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"1\"}]},{\"role\":\"tool\","
	     "\"tool_call_id\":\"1\",\"content\":\"r\"},{\"role\":\"assistant\",\"tool_calls\":[{"
	     "\"id\":\"2\"}]}]",
	     "[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"1\"}]},{\"role\":\"tool\","
	     "\"tool_call_id\":\"1\",\"content\":\"r\"},{\"role\":\"assistant\",\"tool_calls\":[{"
	     "\"id\":\"2\"}]},{\"role\":\"tool\",\"tool_call_id\":\"2\",\"content\":\"not run\"}]"},
	    /* an empty tool_calls list calls nothing */
	    {"[{\"role\":\"assistant\",\"content\":\"a\",\"tool_calls\":[]},{\"role\":\"user\","
	     "\"content\":\"u\"}]",
	     NULL},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *out = settle(cases[i].in);
		g_test_message("case %u", i);
		g_assert_cmpstr(out, ==, cases[i].out != NULL ? cases[i].out : cases[i].in);
	}
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/openai-message/settle", test_settle);
	return g_test_run();
}
