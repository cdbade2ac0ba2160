/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabDbus"

#include "config.h"

#include <string.h>

#include "core/confab-turn.h"
#include "dbus/confab-dbus-approval-prompt.h"
#include "dbus/confab-dbus-caller.h"
#include "dbus/confab-dbus-chat-impl.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * org.confab.Confab1.Chat: a desktop program talks to an agent. The owner
 * is the caller's Unix user, asked of the bus; the session is a channel
 * session, which the v1 API never shows. The same ConfabTurn as HTTP runs
 * it, with a sink that waits for the whole answer.
 *
 * Approve decides a tool call a turn waits for (issue 22): the approval's
 * owner, or an administrator. On the session bus, a Send turn whose agent
 * asks for approval also shows a desktop notification that can decide it
 * (confab-dbus-approval-prompt.c).
 */

struct _ConfabDbusChatImpl {
	ConfabDbusChatSkeleton parent_instance;
	ConfabEngine *engine;	      /* owned */
	ConfabDbusNotifier *notifier; /* owned, nullable: no desktop to ask */
	gchar *admin_group;	      /* owned, nullable */
};

static void
confab_dbus_chat_impl_iface_init(ConfabDbusChatIface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(ConfabDbusChatImpl,
			      confab_dbus_chat_impl,
			      CONFAB_DBUS_TYPE_CHAT_SKELETON,
			      G_IMPLEMENT_INTERFACE(CONFAB_DBUS_TYPE_CHAT,
						    confab_dbus_chat_impl_iface_init))

typedef struct {
	ConfabDbusChatImpl *self;	   /* owned */
	GDBusMethodInvocation *invocation; /* owned */
	gchar *agent_id;		   /* owned */
	gchar *session_id;		   /* owned, nullable */
	gchar *text;			   /* owned */
	ConfabTurn *turn;		   /* owned */
} SendCall;

static void
send_call_free(SendCall *call)
{
	g_clear_object(&call->self);
	g_clear_object(&call->invocation);
	g_free(call->agent_id);
	g_free(call->session_id);
	g_free(call->text);
	g_clear_object(&call->turn);
	g_free(call);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SendCall, send_call_free)

static void
run_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(SendCall) call = user_data;
	GError *error = NULL;

	if (!confab_turn_run_finish(CONFAB_TURN(source), result, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	confab_dbus_chat_complete_send(CONFAB_DBUS_CHAT(call->self),
				       call->invocation,
				       confab_turn_get_session_id(call->turn),
				       confab_turn_get_content(call->turn));
}

static void
start_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(SendCall) call = user_data;
	ConfabTurn *turn;
	GError *error = NULL;

	if (!confab_turn_start_finish(CONFAB_TURN(source), result, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	turn = call->turn;
	confab_turn_run_async(turn, run_cb, g_steal_pointer(&call));
}

static void
on_approval_request(ConfabTurn *turn, const ConfabApproval *approval, gpointer user_data)
{
	SendCall *call = user_data;

	if (call->self->notifier != NULL)
		confab_dbus_approval_prompt_show(call->self->notifier,
						 call->self->engine,
						 approval);
}

/* A Send turn's answer comes whole at the end; only a request for approval
 * is shown as it comes, on the desktop. */
/* its approval decided (here, elsewhere, or timed out): the question goes */
/* an MCP server's question: told to the Send caller only */
static void
signal_elicitation(SendCall *call, const gchar *event_json)
{
	GDBusInterfaceSkeleton *skeleton = G_DBUS_INTERFACE_SKELETON(call->self);
	GDBusConnection *connection = g_dbus_method_invocation_get_connection(call->invocation);
	g_autoptr(JsonNode) node = confab_json_from_string(event_json);
	g_autoptr(JsonNode) schema_node = NULL;
	g_autofree gchar *schema = NULL;
	JsonObject *event;
	g_autoptr(GError) error = NULL;

	if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
		return;
	event = json_node_get_object(node);
	if (g_strcmp0(confab_json_get_string(event, "type"), "elicitation_request") != 0 ||
	    g_dbus_interface_skeleton_get_object_path(skeleton) == NULL)
		return;
	schema_node = json_object_dup_member(event, "requested_schema");
	schema = schema_node != NULL ? json_to_string(schema_node, FALSE) : g_strdup("{}");
	if (!g_dbus_connection_emit_signal(
		connection,
		g_dbus_method_invocation_get_sender(call->invocation),
		g_dbus_interface_skeleton_get_object_path(skeleton),
		"org.confab.Confab1.Chat",
		"ElicitationRequested",
		g_variant_new("(ssss)",
			      confab_json_get_string(event, "id") ?: "",
			      confab_json_get_string(event, "server") ?: "",
			      confab_json_get_string(event, "message") ?: "",
			      schema),
		&error))
		g_message("telling the caller of an elicitation: %s", error->message);
}

static void
on_tool_event(ConfabTurn *turn, const gchar *event_json, gpointer user_data)
{
	SendCall *call = user_data;

	if (call->self->notifier != NULL)
		confab_dbus_approval_prompt_tool_event(call->self->notifier, event_json);
	signal_elicitation(call, event_json);
}

static const ConfabTurnSink send_sink = {
    .tool_event = on_tool_event,
    .approval_request = on_approval_request,
};

static void
caller_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(SendCall) call = user_data;
	g_autoptr(ConfabPrincipal) principal = NULL;
	g_autofree gchar *owner = NULL;
	ConfabTurn *turn;
	GError *error = NULL;
	guint32 uid = 0;

	if (!confab_dbus_caller_get_uid_finish(result, &uid, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	owner = confab_dbus_caller_user_name_for_uid(uid);
	principal = confab_principal_new(owner, CONFAB_SESSION_SOURCE_CHANNEL);
	call->turn = confab_turn_new(
	    call->self->engine,
	    g_steal_pointer(&principal),
	    confab_chat_request_new_text(call->agent_id, call->session_id, call->text));
	turn = call->turn;
	/* approvals on the desktop; elicitations to the caller */
	confab_turn_set_sink(turn, &send_sink, call);
	confab_turn_start_async(turn, start_cb, g_steal_pointer(&call));
}

static gboolean
handle_send(ConfabDbusChat *object,
	    GDBusMethodInvocation *invocation,
	    const gchar *agent_id,
	    const gchar *session_id,
	    const gchar *text)
{
	ConfabDbusChatImpl *self = CONFAB_DBUS_CHAT_IMPL(object);
	const ConfabConfig *config = confab_engine_get_config(self->engine);
	SendCall *call;

	if (*text == '\0' || strlen(text) > config->max_body_bytes) {
		GError *error = NULL;
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "text",
				 "The text must be non-empty and within the body size limit");
		confab_error_return_dbus(invocation, error);
		return G_DBUS_METHOD_INVOCATION_HANDLED;
	}
	call = g_new0(SendCall, 1);
	call->self = g_object_ref(self);
	call->invocation = g_object_ref(invocation);
	call->agent_id = g_strdup(agent_id);
	call->session_id = *session_id != '\0' ? g_strdup(session_id) : NULL;
	call->text = g_strdup(text);
	/* the owner comes from the bus, never from an argument */
	confab_dbus_caller_get_uid_async(invocation, NULL, caller_cb, call);
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* ---------- Approve ---------- */

typedef struct {
	ConfabDbusChatImpl *self;	   /* owned */
	GDBusMethodInvocation *invocation; /* owned */
	gchar *approval_id;		   /* owned */
	gboolean approve;
} ApproveCall;

static void
approve_call_free(ApproveCall *call)
{
	g_clear_object(&call->self);
	g_clear_object(&call->invocation);
	g_free(call->approval_id);
	g_free(call);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ApproveCall, approve_call_free)

static void
approved_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ApproveCall) call = user_data;
	g_autoptr(ConfabApproval) approval = NULL;
	GError *error = NULL;

	approval = confab_approvals_decide_finish(CONFAB_APPROVALS(source), result, &error);
	if (approval == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	confab_dbus_chat_complete_approve(CONFAB_DBUS_CHAT(call->self), call->invocation);
}

/* ---------- ListApprovals ---------- */

#define LIST_APPROVALS_MAX 100

static void
approvals_listed_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ApproveCall) call = user_data;
	g_autoptr(GPtrArray) approvals = NULL;
	GVariantBuilder builder;
	GError *error = NULL;

	approvals = confab_store_list_approvals_finish(CONFAB_STORE(source), result, &error);
	if (approvals == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	g_variant_builder_init(&builder, G_VARIANT_TYPE("aa{sv}"));
	for (guint i = 0; i < approvals->len; i++) {
		ConfabApproval *a = g_ptr_array_index(approvals, i);
		g_variant_builder_open(&builder, G_VARIANT_TYPE("a{sv}"));
		g_variant_builder_add(&builder, "{sv}", "id", g_variant_new_string(a->id));
		g_variant_builder_add(&builder, "{sv}", "owner", g_variant_new_string(a->owner));
		g_variant_builder_add(&builder,
				      "{sv}",
				      "agent_id",
				      g_variant_new_string(a->agent_id));
		g_variant_builder_add(&builder,
				      "{sv}",
				      "session_id",
				      g_variant_new_string(a->session_id));
		g_variant_builder_add(&builder, "{sv}", "server", g_variant_new_string(a->server));
		g_variant_builder_add(&builder, "{sv}", "tool", g_variant_new_string(a->tool));
		g_variant_builder_add(&builder, "{sv}", "name", g_variant_new_string(a->name));
		g_variant_builder_add(&builder,
				      "{sv}",
				      "arguments",
				      g_variant_new_string(a->arguments));
		g_variant_builder_add(&builder,
				      "{sv}",
				      "created_at",
				      g_variant_new_int64(a->created_at));
		g_variant_builder_close(&builder);
	}
	confab_dbus_chat_complete_list_approvals(CONFAB_DBUS_CHAT(call->self),
						 call->invocation,
						 g_variant_builder_end(&builder));
}

/* The caller's owner name, or NULL for an administrator (anyone's): then
 * Approve decides, or ListApprovals lists (no approval id). */
static void
approvals_caller_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ApproveCall) call = user_data;
	ConfabEngine *engine = call->self->engine;
	g_autofree gchar *owner = NULL;
	GError *error = NULL;
	guint32 uid = 0;

	if (!confab_dbus_caller_get_uid_finish(result, &uid, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	/* an administrator decides and sees anyone's; another user only
	 * their own */
	if (!confab_dbus_caller_uid_is_admin(uid, call->self->admin_group))
		owner = confab_dbus_caller_user_name_for_uid(uid);
	if (call->approval_id == NULL) {
		confab_store_list_approvals_async(confab_engine_get_store(engine),
						  owner,
						  NULL,
						  LIST_APPROVALS_MAX,
						  NULL,
						  approvals_listed_cb,
						  g_steal_pointer(&call));
		return;
	}
	/* the call goes to the callback: read it before it is handed over */
	{
		ApproveCall *pending = g_steal_pointer(&call);
		confab_approvals_decide_async(confab_engine_get_approvals(engine),
					      pending->approval_id,
					      owner,
					      NULL,
					      pending->approve,
					      NULL,
					      "dbus",
					      approved_cb,
					      pending);
	}
}

static gboolean
handle_approve(ConfabDbusChat *object,
	       GDBusMethodInvocation *invocation,
	       const gchar *approval_id,
	       gboolean approve)
{
	ConfabDbusChatImpl *self = CONFAB_DBUS_CHAT_IMPL(object);
	ApproveCall *call = g_new0(ApproveCall, 1);

	call->self = g_object_ref(self);
	call->invocation = g_object_ref(invocation);
	call->approval_id = g_strdup(approval_id);
	call->approve = approve;
	/* the owner comes from the bus, never from an argument */
	confab_dbus_caller_get_uid_async(invocation, NULL, approvals_caller_cb, call);
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

/* ---------- AnswerElicitation ---------- */

typedef struct {
	ConfabDbusChatImpl *self;	   /* owned */
	GDBusMethodInvocation *invocation; /* owned */
	gchar *id;			   /* owned */
	gchar *action;			   /* owned */
	JsonObject *content;		   /* owned, nullable */
} ElicitCall;

static void
elicit_call_free(ElicitCall *call)
{
	g_clear_object(&call->self);
	g_clear_object(&call->invocation);
	g_free(call->id);
	g_free(call->action);
	g_clear_pointer(&call->content, json_object_unref);
	g_free(call);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ElicitCall, elicit_call_free)

static void
elicitation_answered_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ElicitCall) call = user_data;
	g_autoptr(ConfabElicitationRequest) answered = NULL;
	GError *error = NULL;

	answered = confab_elicitations_answer_finish(CONFAB_ELICITATIONS(source), result, &error);
	if (answered == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	confab_dbus_chat_complete_answer_elicitation(CONFAB_DBUS_CHAT(call->self),
						     call->invocation);
}

#define LIST_ELICITATIONS_MAX 100

static void
elicitations_listed_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ElicitCall) call = user_data;
	g_autoptr(GPtrArray) elicitations = NULL;
	GVariantBuilder builder;
	GError *error = NULL;

	elicitations = confab_store_list_elicitations_finish(CONFAB_STORE(source), result, &error);
	if (elicitations == NULL) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	g_variant_builder_init(&builder, G_VARIANT_TYPE("aa{sv}"));
	for (guint i = 0; i < elicitations->len; i++) {
		ConfabElicitationRequest *e = g_ptr_array_index(elicitations, i);
		g_variant_builder_open(&builder, G_VARIANT_TYPE("a{sv}"));
		g_variant_builder_add(&builder,
				      "{sv}",
				      "id",
				      g_variant_new_string(e->id != NULL ? e->id : ""));
		g_variant_builder_add(&builder,
				      "{sv}",
				      "owner",
				      g_variant_new_string(e->owner != NULL ? e->owner : ""));
		g_variant_builder_add(&builder,
				      "{sv}",
				      "agent_id",
				      g_variant_new_string(e->agent_id != NULL ? e->agent_id : ""));
		g_variant_builder_add(
		    &builder,
		    "{sv}",
		    "session_id",
		    g_variant_new_string(e->session_id != NULL ? e->session_id : ""));
		g_variant_builder_add(&builder,
				      "{sv}",
				      "server",
				      g_variant_new_string(e->server != NULL ? e->server : ""));
		g_variant_builder_add(&builder,
				      "{sv}",
				      "message",
				      g_variant_new_string(e->message != NULL ? e->message : ""));
		g_variant_builder_add(&builder,
				      "{sv}",
				      "requested_schema",
				      g_variant_new_string(e->schema != NULL ? e->schema : ""));
		g_variant_builder_add(&builder,
				      "{sv}",
				      "created_at",
				      g_variant_new_int64(e->created_at));
		g_variant_builder_close(&builder);
	}
	confab_dbus_chat_complete_list_elicitations(CONFAB_DBUS_CHAT(call->self),
						    call->invocation,
						    g_variant_builder_end(&builder));
}

/* The caller's owner name, or NULL for an administrator (anyone's): then
 * AnswerElicitation answers, or ListElicitations lists (no id). */
static void
elicit_caller_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ElicitCall) call = user_data;
	g_autofree gchar *owner = NULL;
	GError *error = NULL;
	guint32 uid = 0;
	ElicitCall *pending;

	if (!confab_dbus_caller_get_uid_finish(result, &uid, &error)) {
		confab_error_return_dbus(call->invocation, error);
		return;
	}
	/* an administrator answers anyone's; another user only their own */
	if (!confab_dbus_caller_uid_is_admin(uid, call->self->admin_group))
		owner = confab_dbus_caller_user_name_for_uid(uid);
	if (call->id == NULL) {
		/* read before the call is handed over */
		ConfabStore *store = confab_engine_get_store(call->self->engine);
		confab_store_list_elicitations_async(store,
						     owner,
						     NULL,
						     LIST_ELICITATIONS_MAX,
						     NULL,
						     elicitations_listed_cb,
						     g_steal_pointer(&call));
		return;
	}
	pending = g_steal_pointer(&call);
	confab_elicitations_answer_async(confab_engine_get_elicitations(pending->self->engine),
					 pending->id,
					 owner,
					 NULL,
					 pending->action,
					 pending->content,
					 "dbus",
					 elicitation_answered_cb,
					 pending);
}

static gboolean
handle_answer_elicitation(ConfabDbusChat *object,
			  GDBusMethodInvocation *invocation,
			  const gchar *elicitation_id,
			  const gchar *action,
			  const gchar *content_json)
{
	ConfabDbusChatImpl *self = CONFAB_DBUS_CHAT_IMPL(object);
	g_autoptr(JsonNode) content = NULL;
	ElicitCall *call;

	if (*content_json != '\0') {
		content = confab_json_from_string(content_json);
		if (content == NULL || !JSON_NODE_HOLDS_OBJECT(content)) {
			GError *error = NULL;
			confab_error_set(&error,
					 CONFAB_ERROR_INVALID_VALUE,
					 "content",
					 "content_json must be a JSON object, or empty");
			confab_error_return_dbus(invocation, error);
			return G_DBUS_METHOD_INVOCATION_HANDLED;
		}
	}
	call = g_new0(ElicitCall, 1);
	call->self = g_object_ref(self);
	call->invocation = g_object_ref(invocation);
	call->id = g_strdup(elicitation_id);
	call->action = g_strdup(action);
	call->content = content != NULL ? json_object_ref(json_node_get_object(content)) : NULL;
	/* the owner comes from the bus, never from an argument */
	confab_dbus_caller_get_uid_async(invocation, NULL, elicit_caller_cb, call);
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_list_approvals(ConfabDbusChat *object, GDBusMethodInvocation *invocation)
{
	ConfabDbusChatImpl *self = CONFAB_DBUS_CHAT_IMPL(object);
	ApproveCall *call = g_new0(ApproveCall, 1);

	call->self = g_object_ref(self);
	call->invocation = g_object_ref(invocation);
	confab_dbus_caller_get_uid_async(invocation, NULL, approvals_caller_cb, call);
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static gboolean
handle_list_elicitations(ConfabDbusChat *object, GDBusMethodInvocation *invocation)
{
	ConfabDbusChatImpl *self = CONFAB_DBUS_CHAT_IMPL(object);
	ElicitCall *call = g_new0(ElicitCall, 1);

	call->self = g_object_ref(self);
	call->invocation = g_object_ref(invocation);
	confab_dbus_caller_get_uid_async(invocation, NULL, elicit_caller_cb, call);
	return G_DBUS_METHOD_INVOCATION_HANDLED;
}

static void
confab_dbus_chat_impl_iface_init(ConfabDbusChatIface *iface)
{
	iface->handle_send = handle_send;
	iface->handle_approve = handle_approve;
	iface->handle_list_approvals = handle_list_approvals;
	iface->handle_answer_elicitation = handle_answer_elicitation;
	iface->handle_list_elicitations = handle_list_elicitations;
}

static void
confab_dbus_chat_impl_finalize(GObject *object)
{
	ConfabDbusChatImpl *self = CONFAB_DBUS_CHAT_IMPL(object);
	g_clear_object(&self->engine);
	g_clear_object(&self->notifier);
	g_free(self->admin_group);
	G_OBJECT_CLASS(confab_dbus_chat_impl_parent_class)->finalize(object);
}

static void
confab_dbus_chat_impl_class_init(ConfabDbusChatImplClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_dbus_chat_impl_finalize;
}

static void
confab_dbus_chat_impl_init(ConfabDbusChatImpl *self)
{
}

/**
 * confab_dbus_chat_impl_new:
 * @engine: the engine
 *
 * Returns: (transfer full): the Chat interface, to export
 */
ConfabDbusChatImpl *
confab_dbus_chat_impl_new(ConfabEngine *engine)
{
	ConfabDbusChatImpl *self = g_object_new(CONFAB_TYPE_DBUS_CHAT_IMPL, NULL);
	self->engine = g_object_ref(engine);
	return self;
}

/**
 * confab_dbus_chat_impl_set_notifier:
 * @self: a #ConfabDbusChatImpl
 * @notifier: (nullable): the desktop's notifications (the session bus),
 *   where Send turns ask for approvals; %NULL for none
 * @admin_group: (nullable): the group whose members may decide anyone's
 *   approvals (Approve), beside root and the daemon's own user
 */
void
confab_dbus_chat_impl_set_notifier(ConfabDbusChatImpl *self,
				   ConfabDbusNotifier *notifier,
				   const gchar *admin_group)
{
	g_return_if_fail(CONFAB_IS_DBUS_CHAT_IMPL(self));
	g_set_object(&self->notifier, notifier);
	g_free(self->admin_group);
	self->admin_group = g_strdup(admin_group);
}
