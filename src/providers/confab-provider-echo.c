/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabProviderEcho"

#include "config.h"

#include <string.h>

#include "openai/confab-openai-message.h"
#include "providers/confab-provider-echo.h"
#include "util/confab-json.h"

/*
 * The built-in offline provider: it answers with exactly the text of the last
 * user message, streamed in word-sized deltas (a word and the whitespace
 * after it) that join back to that text byte for byte. Usage is counted in
 * words. Deterministic, for a first run and for tests.
 *
 * It can also act, so that an agent's tools can be tried without a model:
 * when tools are offered, a last user message whose lines start with
 * `/tool NAME {json arguments}` (NAME one of the offered tools) is answered
 * with those tool calls (finish_reason tool_calls); once they have answered
 * (the last messages are their results), the answer is what they said.
 * With tool_choice "none" it only ever echoes.
 */

struct _ConfabProviderEcho {
	GObject parent_instance;
};

static void
confab_provider_echo_iface_init(ConfabProviderInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(ConfabProviderEcho,
			      confab_provider_echo,
			      G_TYPE_OBJECT,
			      G_IMPLEMENT_INTERFACE(CONFAB_TYPE_PROVIDER,
						    confab_provider_echo_iface_init))

/* The end of the piece that starts at @p: a word and the whitespace after
 * it; the first piece (@first) also carries any leading whitespace. */
static const gchar *
piece_end(const gchar *p, gboolean first)
{
	/* leading whitespace joins the first word */
	while (first && *p != '\0' && g_unichar_isspace(g_utf8_get_char(p)))
		p = g_utf8_next_char(p);
	while (*p != '\0' && !g_unichar_isspace(g_utf8_get_char(p)))
		p = g_utf8_next_char(p);
	while (*p != '\0' && g_unichar_isspace(g_utf8_get_char(p)))
		p = g_utf8_next_char(p);
	return p;
}

/**
 * confab_provider_echo_split:
 * @text: UTF-8 text
 *
 * Splits @text into deltas: each a word and the whitespace after it; the
 * first also carries any leading whitespace. Joined, they are @text. (The
 * provider itself cuts them one at a time, as it sends them.)
 *
 * Returns: (transfer full) (element-type utf8): the deltas
 */
GPtrArray *
confab_provider_echo_split(const gchar *text)
{
	GPtrArray *parts = g_ptr_array_new_with_free_func(g_free);

	for (const gchar *p = text; *p != '\0';) {
		const gchar *end = piece_end(p, p == text);
		g_ptr_array_add(parts, g_strndup(p, end - p));
		p = end;
	}
	return parts;
}

/**
 * confab_provider_echo_count_words:
 * @text: UTF-8 text
 *
 * Returns: the number of whitespace-separated words in @text
 */
guint
confab_provider_echo_count_words(const gchar *text)
{
	guint words = 0;
	gboolean in_word = FALSE;
	for (const gchar *p = text; *p != '\0'; p = g_utf8_next_char(p)) {
		gboolean space = g_unichar_isspace(g_utf8_get_char(p));
		if (!space && !in_word)
			words++;
		in_word = !space;
	}
	return words;
}

typedef struct {
	const gchar *reply;    /* the answer's text, sent piece by piece: in one of */
	gchar *reply_owned;    /* owned, nullable: a text of its own, or */
	JsonNode *reply_node;  /* owned, nullable: the user's string content, not
				* copied (it may be megabytes) */
	gsize next;	       /* where the next piece starts in @reply */
	GString *piece;	       /* owned: the piece being sent */
	JsonArray *tool_calls; /* owned, nullable: the answer is these calls */
	ConfabDeltaFunc delta_func;
	gpointer delta_data;
	gint64 prompt_words;
	gint64 completion_words;
	ConfabFlow *flow; /* owned, nullable: the client's */
	guint flow_wait;
} EchoRun;

static void
echo_run_free(EchoRun *run)
{
	confab_flow_clear_wait(run->flow, &run->flow_wait);
	g_clear_pointer(&run->flow, confab_flow_unref);
	g_free(run->reply_owned);
	g_clear_pointer(&run->reply_node, json_node_unref);
	g_string_free(run->piece, TRUE);
	g_clear_pointer(&run->tool_calls, json_array_unref);
	g_free(run);
}

static gboolean
echo_step(gpointer user_data);

static void
echo_schedule(GTask *task)
{
	g_autoptr(GSource) source = g_idle_source_new();

	g_source_set_priority(source, G_PRIORITY_DEFAULT);
	g_source_set_callback(source, echo_step, g_object_ref(task), g_object_unref);
	g_source_set_static_name(source, "[confab] echo");
	g_source_attach(source, g_task_get_context(task));
}

/* The client caught up (or left): go on. */
static void
on_flow_open(gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	EchoRun *run = g_task_get_task_data(task);

	run->flow_wait = 0;
	echo_schedule(task);
}

static gboolean
echo_step(gpointer user_data)
{
	GTask *task = user_data;
	EchoRun *run = g_task_get_task_data(task);
	ConfabProviderResult *result;

	/* a handful of deltas per main loop iteration: streamed, but cheap */
	for (guint i = 0; i < 64 && run->reply[run->next] != '\0'; i++) {
		const gchar *start = run->reply + run->next;
		const gchar *end = piece_end(start, run->next == 0);
		if (g_task_return_error_if_cancelled(task))
			return G_SOURCE_REMOVE;
		if (confab_flow_is_held(run->flow)) {
			/* the client is behind: nothing more until it catches up */
			run->flow_wait = confab_flow_wait(run->flow,
							  g_task_get_cancellable(task),
							  on_flow_open,
							  g_object_ref(task));
			return G_SOURCE_REMOVE;
		}
		g_string_append_len(g_string_truncate(run->piece, 0), start, end - start);
		run->next = end - run->reply;
		run->delta_func(&(ConfabDelta){.content = run->piece->str}, run->delta_data);
	}
	if (run->reply[run->next] != '\0')
		return G_SOURCE_CONTINUE;
	if (g_task_return_error_if_cancelled(task))
		return G_SOURCE_REMOVE;
	if (run->tool_calls != NULL)
		run->delta_func(&(ConfabDelta){.tool_calls = run->tool_calls}, run->delta_data);
	/* all sent: the text is let go before the caller hears (the user's,
	 * which the loop drops at its end, would outlive it here) */
	run->reply = "";
	g_clear_pointer(&run->reply_owned, g_free);
	g_clear_pointer(&run->reply_node, json_node_unref);
	result = confab_provider_result_new(run->tool_calls != NULL ? "tool_calls" : "stop");
	result->prompt_tokens = run->prompt_words;
	result->completion_tokens = run->completion_words;
	g_task_return_pointer(task, result, (GDestroyNotify)confab_provider_result_free);
	return G_SOURCE_REMOVE;
}

static const gchar *
confab_provider_echo_get_name(ConfabProvider *provider)
{
	return "echo";
}

/* Whether @name is a function tool the request offers, and may be called. */
static gboolean
tool_offered(JsonObject *params, const gchar *name)
{
	JsonNode *tools = params != NULL ? json_object_get_member(params, "tools") : NULL;
	const gchar *choice = params != NULL ? confab_json_get_string(params, "tool_choice") : NULL;

	if (tools == NULL || !JSON_NODE_HOLDS_ARRAY(tools) || g_strcmp0(choice, "none") == 0)
		return FALSE;
	for (guint i = 0; i < json_array_get_length(json_node_get_array(tools)); i++) {
		JsonObject *tool = json_array_get_object_element(json_node_get_array(tools), i);
		JsonObject *fn = tool != NULL ? confab_json_get_object(tool, "function") : NULL;
		if (fn != NULL && g_strcmp0(confab_json_get_string(fn, "name"), name) == 0)
			return TRUE;
	}
	return FALSE;
}

/* `/tool NAME {arguments}` lines, as tool calls; NULL if there are none */
static JsonArray *
scripted_tool_calls(const gchar *text, JsonObject *params, guint step)
{
	g_auto(GStrv) lines = NULL;
	g_autoptr(JsonArray) calls = NULL;

	/* no line can be one: the text is not split (it may be megabytes) */
	if (strstr(text, "/tool ") == NULL)
		return NULL;
	lines = g_strsplit(text, "\n", -1);
	calls = json_array_new();

	for (guint i = 0; lines[i] != NULL; i++) {
		g_auto(GStrv) words = NULL;
		JsonObject *call, *fn;
		g_autofree gchar *id = NULL;
		const gchar *args;

		if (!g_str_has_prefix(lines[i], "/tool "))
			continue;
		words = g_strsplit(g_strstrip(lines[i] + 6), " ", 2);
		if (words[0] == NULL || !tool_offered(params, words[0]))
			continue;
		args = words[1] != NULL && *g_strstrip(words[1]) != '\0' ? words[1] : "{}";
		id = g_strdup_printf("call_echo_%u_%u", step, json_array_get_length(calls));
		call = json_object_new();
		fn = json_object_new();
		json_object_set_int_member(call, "index", json_array_get_length(calls));
		json_object_set_string_member(call, "id", id);
		json_object_set_string_member(call, "type", "function");
		json_object_set_string_member(fn, "name", words[0]);
		json_object_set_string_member(fn, "arguments", args);
		json_object_set_object_member(call, "function", fn);
		json_array_add_object_element(calls, call);
	}
	return json_array_get_length(calls) > 0 ? g_steal_pointer(&calls) : NULL;
}

static void
confab_provider_echo_complete_async(ConfabProvider *provider,
				    ConfabProviderRequest *request,
				    ConfabDeltaFunc delta_func,
				    gpointer delta_data,
				    GCancellable *cancellable,
				    GAsyncReadyCallback callback,
				    gpointer user_data)
{
	g_autoptr(GTask) task = g_task_new(provider, cancellable, callback, user_data);
	g_autofree gchar *reply_owned = NULL;
	g_autoptr(JsonNode) reply_node = NULL;
	const gchar *reply = "";
	g_autoptr(GString) results = g_string_new(NULL);
	EchoRun *run = g_new0(EchoRun, 1);
	guint n = json_array_get_length(request->messages);
	const gchar *last_role = "";

	g_task_set_source_tag(task, confab_provider_echo_complete_async);
	for (guint i = 0; i < n; i++) {
		JsonObject *msg = json_array_get_object_element(request->messages, i);
		JsonNode *content = json_object_get_member(msg, "content");
		g_autofree gchar *owned = NULL;
		const gchar *text;

		/* a string content is read where it is; parts are joined */
		if (content != NULL && JSON_NODE_HOLDS_VALUE(content) &&
		    json_node_get_value_type(content) == G_TYPE_STRING)
			text = json_node_get_string(content);
		else
			text = owned = confab_openai_message_get_text(msg);
		run->prompt_words += confab_provider_echo_count_words(text);
		last_role = json_object_get_string_member_with_default(msg, "role", "");
		if (g_str_equal(last_role, "user")) {
			g_clear_pointer(&reply_node, json_node_unref);
			g_free(reply_owned);
			reply_owned = g_steal_pointer(&owned);
			if (reply_owned == NULL)
				reply_node = json_node_ref(content);
			reply = text;
			g_string_truncate(results, 0);
		} else if (g_str_equal(last_role, "tool")) {
			g_string_append_printf(results, "%s%s", results->len > 0 ? "\n" : "", text);
		}
	}
	if (g_str_equal(last_role, "user")) {
		run->tool_calls = scripted_tool_calls(reply, request->params, n);
	} else if (g_str_equal(last_role, "tool") && strstr(reply, "/tool ") != NULL) {
		/* the tools it called have answered: their words are its answer */
		g_clear_pointer(&reply_node, json_node_unref);
		g_free(reply_owned);
		reply = reply_owned = g_string_free(g_steal_pointer(&results), FALSE);
	}
	run->completion_words = run->tool_calls != NULL ? 0
							: confab_provider_echo_count_words(reply);
	if (run->tool_calls != NULL) {
		run->reply = "";
	} else {
		run->reply = reply;
		run->reply_owned = g_steal_pointer(&reply_owned);
		run->reply_node = g_steal_pointer(&reply_node);
	}
	run->piece = g_string_new(NULL);
	run->delta_func = delta_func;
	run->delta_data = delta_data;
	run->flow = request->flow != NULL ? confab_flow_ref(request->flow) : NULL;
	g_task_set_task_data(task, run, (GDestroyNotify)echo_run_free);
	/* it answers at once */
	confab_provider_request_answered(request);
	echo_schedule(task);
}

static ConfabProviderResult *
confab_provider_echo_complete_finish(ConfabProvider *provider, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, provider), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

static void
confab_provider_echo_iface_init(ConfabProviderInterface *iface)
{
	iface->get_name = confab_provider_echo_get_name;
	iface->complete_async = confab_provider_echo_complete_async;
	iface->complete_finish = confab_provider_echo_complete_finish;
}

static void
confab_provider_echo_class_init(ConfabProviderEchoClass *klass)
{
}

static void
confab_provider_echo_init(ConfabProviderEcho *self)
{
}

/**
 * confab_provider_echo_new:
 *
 * Returns: (transfer full): the echo provider
 */
ConfabProviderEcho *
confab_provider_echo_new(void)
{
	return g_object_new(CONFAB_TYPE_PROVIDER_ECHO, NULL);
}
