/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabDbus"

#include "config.h"

#include <glib/gi18n.h>
#include <string.h>

#include "core/confab-turn.h"
#include "dbus/confab-dbus-approval-prompt.h"
#include "dbus/confab-dbus-caller.h"
#include "dbus/confab-dbus-search-impl.h"
#include "openai/confab-openai-message.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * org.gnome.Shell.SearchProvider2: typing in the Activities overview finds
 * the caller's conversations (the store's full-text search) and offers to
 * ask the default agent ([desktop] default_agent) first. Choosing "Ask"
 * runs a turn as Chat.Send does, on a new channel session of the caller,
 * and shows the answer as a desktop notification; choosing a conversation
 * shows its last answer so. The caller is always the Unix user the bus
 * names, never an argument: another user's conversation is never found,
 * described nor shown.
 *
 * GetResultMetas gets ids alone: the titles and snippets of the last
 * searches are kept (per caller) to describe them; an id not kept is
 * looked up in the store.
 */

#define METAS_MAX 2000 /* results kept for GetResultMetas, all callers */

struct _ConfabDbusSearchImpl {
	ConfabDbusSearchProvider2Skeleton parent_instance;
	ConfabEngine *engine;	      /* owned */
	ConfabDbusNotifier *notifier; /* owned, nullable: no notifications */
	GHashTable *metas;	      /* owned: "owner\nsession id" -> Meta */
};

static void
confab_dbus_search_impl_iface_init(ConfabDbusSearchProvider2Iface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(ConfabDbusSearchImpl,
			      confab_dbus_search_impl,
			      CONFAB_DBUS_TYPE_SEARCH_PROVIDER2_SKELETON,
			      G_IMPLEMENT_INTERFACE(CONFAB_DBUS_TYPE_SEARCH_PROVIDER2,
						    confab_dbus_search_impl_iface_init))

typedef struct {
	gchar *name;	    /* owned */
	gchar *description; /* owned */
} Meta;

static void
meta_free(Meta *meta)
{
	g_free(meta->name);
	g_free(meta->description);
	g_free(meta);
}

typedef enum {
	CALL_SEARCH,
	CALL_METAS,
	CALL_ACTIVATE,
	CALL_LAUNCH,
} CallKind;

/* One method call, from its arrival to its answer (and, for the two that
 * act, to the notification). */
typedef struct {
	ConfabDbusSearchImpl *self;	   /* owned */
	GDBusMethodInvocation *invocation; /* owned; NULL once answered */
	CallKind kind;
	GStrv terms;	     /* owned */
	GStrv ids;	     /* owned: GetResultMetas */
	gchar *id;	     /* owned: ActivateResult */
	gchar *owner;	     /* owned: the caller, once the bus said */
	GVariantBuilder out; /* GetResultMetas' answer, as it grows */
	guint next;	     /* GetResultMetas: the next id to describe */
	ConfabTurn *turn;    /* owned: "Ask" */
} Call;

static void
call_free(Call *call)
{
	g_clear_object(&call->self);
	g_clear_object(&call->invocation);
	g_strfreev(call->terms);
	g_strfreev(call->ids);
	g_free(call->id);
	g_free(call->owner);
	if (call->kind == CALL_METAS)
		g_variant_builder_clear(&call->out);
	g_clear_object(&call->turn);
	g_free(call);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Call, call_free)

static Call *
call_new(ConfabDbusSearchImpl *self, GDBusMethodInvocation *invocation, CallKind kind)
{
	Call *call = g_new0(Call, 1);
	call->self = g_object_ref(self);
	/* the handler's reference: answering the call consumes it */
	call->invocation = invocation;
	call->kind = kind;
	if (kind == CALL_METAS)
		g_variant_builder_init(&call->out, G_VARIANT_TYPE("aa{sv}"));
	return call;
}

static gchar *
meta_key(const gchar *owner, const gchar *id)
{
	return g_strconcat(owner, "\n", id, NULL);
}

static void
remember(ConfabDbusSearchImpl *self, const gchar *owner, const gchar *id, Meta *meta)
{
	if (g_hash_table_size(self->metas) >= METAS_MAX)
		g_hash_table_remove_all(self->metas);
	g_hash_table_replace(self->metas, meta_key(owner, id), meta);
}

/* What was typed, as one text: the terms joined by spaces. */
static gchar *
terms_text(const gchar *const *terms)
{
	g_autoptr(GString) text = g_string_new(NULL);
	for (guint i = 0; terms != NULL && terms[i] != NULL; i++) {
		g_autofree gchar *term = g_strstrip(g_strdup(terms[i]));
		if (*term == '\0')
			continue;
		if (text->len > 0)
			g_string_append_c(text, ' ');
		g_string_append(text, term);
	}
	return g_string_free(g_steal_pointer(&text), FALSE);
}

/* ---------- the agent to ask ---------- */

/* [desktop] default_agent, by id or by name; unset: the agent created
 * first. */
static ConfabAgent *
default_agent(ConfabDbusSearchImpl *self)
{
	const gchar *wanted = confab_engine_get_config(self->engine)->desktop_default_agent;
	g_autoptr(GPtrArray) agents = NULL;

	if (wanted != NULL && *wanted != '\0') {
		ConfabAgent *agent = confab_engine_lookup_agent(self->engine, wanted);
		if (agent != NULL)
			return agent;
	}
	agents = confab_engine_list_agents(self->engine);
	for (guint i = 0; i < agents->len; i++) {
		ConfabAgent *agent = g_ptr_array_index(agents, i);
		if (wanted == NULL || *wanted == '\0' ||
		    g_strcmp0(confab_agent_get_name(agent), wanted) == 0)
			return g_object_ref(agent);
	}
	return NULL;
}

/* "ask:AGENT_ID:TEXT" */
static gchar *
ask_id(ConfabAgent *agent, const gchar *text)
{
	return g_strconcat(CONFAB_SEARCH_ASK_PREFIX, confab_agent_get_id(agent), ":", text, NULL);
}

/* The agent and the text of an "Ask" id; FALSE if @id is not one. */
static gboolean
parse_ask_id(const gchar *id, gchar **agent_id, const gchar **text)
{
	const gchar *rest;
	const gchar *colon;

	if (!g_str_has_prefix(id, CONFAB_SEARCH_ASK_PREFIX))
		return FALSE;
	rest = id + strlen(CONFAB_SEARCH_ASK_PREFIX);
	colon = strchr(rest, ':');
	if (colon == NULL || colon == rest || colon[1] == '\0')
		return FALSE;
	*agent_id = g_strndup(rest, colon - rest);
	*text = colon + 1;
	return TRUE;
}

static Meta *
ask_meta(ConfabDbusSearchImpl *self, const gchar *id)
{
	g_autofree gchar *agent_id = NULL;
	g_autoptr(ConfabAgent) agent = NULL;
	const gchar *text = NULL;
	Meta *meta;

	if (!parse_ask_id(id, &agent_id, &text))
		return NULL;
	agent = confab_engine_lookup_agent(self->engine, agent_id);
	if (agent == NULL)
		return NULL;
	meta = g_new0(Meta, 1);
	/* TRANSLATORS: the first search result in GNOME Shell: an agent's
	 * name, then what the user typed */
	meta->name = g_strdup_printf(_("Ask %s: %s"), confab_agent_get_name(agent), text);
	meta->description = g_strdup(_("Sends this to the agent and shows the answer"));
	return meta;
}

/* ---------- GetInitialResultSet, GetSubsearchResultSet ---------- */

static void
search_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(GError) error = NULL;
	g_autoptr(GPtrArray) hits =
	    confab_store_search_sessions_finish(CONFAB_STORE(source), result, &error);
	g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(ConfabAgent) agent = default_agent(call->self);
	g_autofree gchar *text = terms_text((const gchar *const *)call->terms);

	if (hits == NULL && !g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_NOT_IMPLEMENTED))
		g_warning("searching the conversations: %s", error->message);
	if (agent != NULL)
		g_ptr_array_add(ids, ask_id(agent, text));
	for (guint i = 0; hits != NULL && i < hits->len; i++) {
		ConfabStoreSearchHit *hit = g_ptr_array_index(hits, i);
		const gchar *id = confab_session_get_id(hit->session);
		Meta *meta = g_new0(Meta, 1);
		meta->name = g_strdup(confab_session_get_title(hit->session));
		meta->description = g_strdup(hit->snippet != NULL ? hit->snippet : "");
		remember(call->self, call->owner, id, meta);
		g_ptr_array_add(ids, g_strdup(id));
	}
	g_ptr_array_add(ids, NULL);
	g_dbus_method_invocation_return_value(g_steal_pointer(&call->invocation),
					      g_variant_new("(^as)", (gchar **)ids->pdata));
}

static void
search(Call *call)
{
	g_autofree gchar *text = terms_text((const gchar *const *)call->terms);
	const gchar *const none[] = {NULL};

	if (*text == '\0') {
		g_dbus_method_invocation_return_value(g_steal_pointer(&call->invocation),
						      g_variant_new("(^as)", none));
		call_free(call);
		return;
	}
	confab_store_search_sessions_async(confab_engine_get_store(call->self->engine),
					   call->owner,
					   (const gchar *const *)call->terms,
					   CONFAB_SEARCH_MAX_RESULTS,
					   NULL,
					   search_cb,
					   call);
}

/* ---------- GetResultMetas ---------- */

static void
add_meta(Call *call, const gchar *id, const Meta *meta)
{
	GVariantDict dict;
	g_variant_dict_init(&dict, NULL);
	g_variant_dict_insert(&dict, "id", "s", id);
	g_variant_dict_insert(&dict, "name", "s", meta->name != NULL ? meta->name : "");
	g_variant_dict_insert(&dict,
			      "description",
			      "s",
			      meta->description != NULL ? meta->description : "");
	g_variant_builder_add_value(&call->out, g_variant_dict_end(&dict));
}

static void
describe_next(Call *call);

static void
session_meta_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Call *call = user_data;
	const gchar *id = call->ids[call->next];
	g_autoptr(ConfabSession) session =
	    confab_store_get_session_finish(CONFAB_STORE(source), result, NULL);

	/* another user's conversation is not described: as if unknown */
	if (session != NULL && g_strcmp0(confab_session_get_owner(session), call->owner) == 0) {
		Meta meta = {(gchar *)confab_session_get_title(session), (gchar *)""};
		if (meta.name == NULL)
			meta.name = _("Conversation");
		add_meta(call, id, &meta);
	}
	call->next++;
	describe_next(call);
}

/* Describes the ids one after the other: from the last searches, the
 * "Ask" id itself, or the store. */
static void
describe_next(Call *call)
{
	for (; call->ids[call->next] != NULL; call->next++) {
		const gchar *id = call->ids[call->next];
		g_autofree gchar *key = meta_key(call->owner, id);
		const Meta *known = g_hash_table_lookup(call->self->metas, key);
		Meta *ask;

		if (known != NULL) {
			add_meta(call, id, known);
			continue;
		}
		ask = ask_meta(call->self, id);
		if (ask != NULL) {
			add_meta(call, id, ask);
			meta_free(ask);
			continue;
		}
		if (!g_str_has_prefix(id, CONFAB_PREFIX_SESSION))
			continue;
		confab_store_get_session_async(confab_engine_get_store(call->self->engine),
					       id,
					       NULL,
					       session_meta_cb,
					       call);
		return;
	}
	g_dbus_method_invocation_return_value(g_steal_pointer(&call->invocation),
					      g_variant_new("(aa{sv})", &call->out));
	call_free(call);
}

/* ---------- ActivateResult, LaunchSearch ---------- */

static void
notify(ConfabDbusSearchImpl *self, const gchar *summary, const gchar *body)
{
	if (self->notifier != NULL)
		confab_dbus_notifier_notify(self->notifier, summary, body);
}

static void
ask_run_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *agent_id = NULL;
	g_autoptr(ConfabAgent) agent = NULL;
	const gchar *text = NULL;
	const gchar *name;

	parse_ask_id(call->id, &agent_id, &text);
	agent = confab_engine_lookup_agent(call->self->engine, agent_id);
	name = agent != NULL ? confab_agent_get_name(agent) : agent_id;
	if (!confab_turn_run_finish(CONFAB_TURN(source), result, &error)) {
		g_autofree gchar *summary = g_strdup_printf(_("%s could not answer"), name);
		notify(call->self, summary, error->message);
		return;
	}
	notify(call->self, name, confab_turn_get_content(call->turn));
}

static void
ask_start_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(GError) error = NULL;
	ConfabTurn *turn = call->turn;

	if (!confab_turn_start_finish(turn, result, &error)) {
		notify(call->self, _("Confab could not ask"), error->message);
		return;
	}
	confab_turn_run_async(turn, ask_run_cb, g_steal_pointer(&call));
}

/* A tool call of the "Ask" turn needs the person's approval: ask them. */
static void
on_ask_approval_request(ConfabTurn *turn, const ConfabApproval *approval, gpointer user_data)
{
	Call *call = user_data;

	if (call->self->notifier != NULL)
		confab_dbus_approval_prompt_show(call->self->notifier,
						 call->self->engine,
						 approval);
}

/* its approval decided (here, elsewhere, or timed out): the question goes */
static void
on_ask_tool_event(ConfabTurn *turn, const gchar *event_json, gpointer user_data)
{
	Call *call = user_data;

	if (call->self->notifier != NULL)
		confab_dbus_approval_prompt_tool_event(call->self->notifier, event_json);
}

static const ConfabTurnSink ask_sink = {
    .tool_event = on_ask_tool_event,
    .approval_request = on_ask_approval_request,
};

/* "Ask": a turn as Chat.Send runs it, on a new channel session of the
 * caller, then the answer as a notification. */
static void
ask(Call *call)
{
	g_autofree gchar *agent_id = NULL;
	const gchar *text = NULL;
	ConfabPrincipal *principal;
	ConfabTurn *turn;

	/* a malformed id, or no more than a request body may hold (as
	 * Chat.Send): nothing to ask */
	if (!parse_ask_id(call->id, &agent_id, &text) ||
	    strlen(text) > confab_engine_get_config(call->self->engine)->max_body_bytes) {
		call_free(call);
		return;
	}
	principal = confab_principal_new(call->owner, CONFAB_SESSION_SOURCE_CHANNEL);
	call->turn = confab_turn_new(call->self->engine,
				     principal,
				     confab_chat_request_new_text(agent_id, NULL, text));
	turn = call->turn;
	confab_turn_set_sink(turn, &ask_sink, call);
	confab_turn_start_async(turn, ask_start_cb, call);
}

/* The text of a conversation's last answer, or NULL. */
static gchar *
last_answer(GPtrArray *history)
{
	for (guint i = history->len; i > 0; i--) {
		ConfabMessage *msg = g_ptr_array_index(history, i - 1);
		g_autoptr(JsonNode) content = NULL;
		g_autoptr(JsonObject) wrapper = NULL;
		g_autofree gchar *text = NULL;

		if (g_strcmp0(confab_message_get_role(msg), "assistant") != 0)
			continue;
		content = confab_json_from_string(confab_message_get_content(msg));
		if (content == NULL)
			continue;
		wrapper = json_object_new();
		json_object_set_member(wrapper, "content", g_steal_pointer(&content));
		text = confab_openai_message_get_text(wrapper);
		if (*g_strstrip(text) != '\0')
			return g_steal_pointer(&text);
	}
	return NULL;
}

static void
history_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(GPtrArray) history =
	    confab_store_get_history_finish(CONFAB_STORE(source), result, NULL);
	g_autofree gchar *key = meta_key(call->owner, call->id);
	const Meta *known = g_hash_table_lookup(call->self->metas, key);
	g_autofree gchar *answer = history != NULL ? last_answer(history) : NULL;
	const gchar *title = known != NULL && known->name != NULL ? known->name : _("Conversation");

	notify(call->self, title, answer != NULL ? answer : _("No answer yet."));
}

static void
show_session_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(ConfabSession) session =
	    confab_store_get_session_finish(CONFAB_STORE(source), result, NULL);

	/* another user's conversation is not shown */
	if (session == NULL || g_strcmp0(confab_session_get_owner(session), call->owner) != 0)
		return;
	if (confab_session_get_title(session) != NULL) {
		Meta *meta = g_new0(Meta, 1);
		meta->name = g_strdup(confab_session_get_title(session));
		meta->description = g_strdup("");
		remember(call->self, call->owner, call->id, meta);
	}
	{
		Call *owned = g_steal_pointer(&call);
		confab_store_get_history_async(CONFAB_STORE(source),
					       owned->id,
					       NULL,
					       history_cb,
					       owned);
	}
}

static void
activate(Call *call)
{
	g_autofree gchar *agent_id = NULL;
	const gchar *text = NULL;

	if (parse_ask_id(call->id, &agent_id, &text)) {
		ask(call);
		return;
	}
	if (!g_str_has_prefix(call->id, CONFAB_PREFIX_SESSION)) {
		call_free(call);
		return;
	}
	confab_store_get_session_async(confab_engine_get_store(call->self->engine),
				       call->id,
				       NULL,
				       show_session_cb,
				       call);
}

static void
launch_search_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(Call) call = user_data;
	g_autoptr(GPtrArray) hits =
	    confab_store_search_sessions_finish(CONFAB_STORE(source), result, NULL);

	if (hits == NULL || hits->len == 0)
		return;
	call->id = g_strdup(
	    confab_session_get_id(((ConfabStoreSearchHit *)g_ptr_array_index(hits, 0))->session));
	activate(g_steal_pointer(&call));
}

/* The first result: "Ask" when there is an agent to ask, else the newest
 * conversation found. */
static void
launch(Call *call)
{
	g_autoptr(ConfabAgent) agent = default_agent(call->self);
	g_autofree gchar *text = terms_text((const gchar *const *)call->terms);

	if (*text == '\0') {
		call_free(call);
		return;
	}
	if (agent != NULL) {
		call->id = ask_id(agent, text);
		activate(call);
		return;
	}
	confab_store_search_sessions_async(confab_engine_get_store(call->self->engine),
					   call->owner,
					   (const gchar *const *)call->terms,
					   1,
					   NULL,
					   launch_search_cb,
					   call);
}

/* ---------- the caller, then the call ---------- */

static void
caller_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	Call *call = user_data;
	g_autoptr(GError) error = NULL;
	guint32 uid = 0;

	if (!confab_dbus_caller_get_uid_finish(result, &uid, &error)) {
		if (call->invocation != NULL)
			g_dbus_method_invocation_return_gerror(g_steal_pointer(&call->invocation),
							       error);
		call_free(call);
		return;
	}
	call->owner = confab_dbus_caller_user_name_for_uid(uid);
	switch (call->kind) {
	case CALL_SEARCH:
		search(call);
		break;
	case CALL_METAS:
		describe_next(call);
		break;
	case CALL_ACTIVATE:
		activate(call);
		break;
	case CALL_LAUNCH:
		launch(call);
		break;
	default:
		g_assert_not_reached();
	}
}

/* Asks the bus who calls; ActivateResult and LaunchSearch are answered at
 * once, what they do is shown by a notification. */
static gboolean
start(Call *call, gboolean answer_now)
{
	GDBusMethodInvocation *invocation = call->invocation;

	g_object_ref(invocation);
	if (answer_now)
		g_dbus_method_invocation_return_value(g_steal_pointer(&call->invocation), NULL);
	confab_dbus_caller_get_uid_async(invocation, NULL, caller_cb, call);
	g_object_unref(invocation);
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_get_initial_result_set(ConfabDbusSearchProvider2 *object,
			      GDBusMethodInvocation *invocation,
			      const gchar *const *terms)
{
	Call *call = call_new(CONFAB_DBUS_SEARCH_IMPL(object), invocation, CALL_SEARCH);
	call->terms = g_strdupv((gchar **)terms);
	return start(call, FALSE);
}

static gboolean
handle_get_subsearch_result_set(ConfabDbusSearchProvider2 *object,
				GDBusMethodInvocation *invocation,
				const gchar *const *previous_results,
				const gchar *const *terms)
{
	/* the index is fast enough to search afresh: a conversation beyond
	 * the first page can come up as the terms narrow */
	return handle_get_initial_result_set(object, invocation, terms);
}

static gboolean
handle_get_result_metas(ConfabDbusSearchProvider2 *object,
			GDBusMethodInvocation *invocation,
			const gchar *const *identifiers)
{
	Call *call = call_new(CONFAB_DBUS_SEARCH_IMPL(object), invocation, CALL_METAS);
	call->ids = g_strdupv((gchar **)identifiers);
	return start(call, FALSE);
}

static gboolean
handle_activate_result(ConfabDbusSearchProvider2 *object,
		       GDBusMethodInvocation *invocation,
		       const gchar *identifier,
		       const gchar *const *terms,
		       guint timestamp)
{
	Call *call = call_new(CONFAB_DBUS_SEARCH_IMPL(object), invocation, CALL_ACTIVATE);
	call->id = g_strdup(identifier);
	call->terms = g_strdupv((gchar **)terms);
	return start(call, TRUE);
}

static gboolean
handle_launch_search(ConfabDbusSearchProvider2 *object,
		     GDBusMethodInvocation *invocation,
		     const gchar *const *terms,
		     guint timestamp)
{
	Call *call = call_new(CONFAB_DBUS_SEARCH_IMPL(object), invocation, CALL_LAUNCH);
	call->terms = g_strdupv((gchar **)terms);
	return start(call, TRUE);
}

static void
confab_dbus_search_impl_iface_init(ConfabDbusSearchProvider2Iface *iface)
{
	iface->handle_get_initial_result_set = handle_get_initial_result_set;
	iface->handle_get_subsearch_result_set = handle_get_subsearch_result_set;
	iface->handle_get_result_metas = handle_get_result_metas;
	iface->handle_activate_result = handle_activate_result;
	iface->handle_launch_search = handle_launch_search;
}

static void
confab_dbus_search_impl_finalize(GObject *object)
{
	ConfabDbusSearchImpl *self = CONFAB_DBUS_SEARCH_IMPL(object);
	g_clear_object(&self->engine);
	g_clear_object(&self->notifier);
	g_clear_pointer(&self->metas, g_hash_table_unref);
	G_OBJECT_CLASS(confab_dbus_search_impl_parent_class)->finalize(object);
}

static void
confab_dbus_search_impl_class_init(ConfabDbusSearchImplClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = confab_dbus_search_impl_finalize;
}

static void
confab_dbus_search_impl_init(ConfabDbusSearchImpl *self)
{
	self->metas =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)meta_free);
}

/**
 * confab_dbus_search_impl_new:
 * @engine: the engine
 * @notifier: (nullable): where answers are shown
 *
 * Returns: (transfer full): the search provider, to export at
 *   %CONFAB_SEARCH_PROVIDER_PATH
 */
ConfabDbusSearchImpl *
confab_dbus_search_impl_new(ConfabEngine *engine, ConfabDbusNotifier *notifier)
{
	ConfabDbusSearchImpl *self = g_object_new(CONFAB_TYPE_DBUS_SEARCH_IMPL, NULL);
	self->engine = g_object_ref(engine);
	self->notifier = notifier != NULL ? g_object_ref(notifier) : NULL;
	return self;
}
