/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabDbus"

#include "config.h"

#include <string.h>

#include "core/confab-turn.h"
#include "dbus/confab-dbus-caller.h"
#include "dbus/confab-dbus-chat-impl.h"
#include "util/confab-error.h"

/*
 * org.confab.Confab1.Chat: a desktop program talks to an agent. The owner
 * is the caller's Unix user, asked of the bus; the session is a channel
 * session, which the v1 API never shows. The same ConfabTurn as HTTP runs
 * it, with a sink that waits for the whole answer.
 */

struct _ConfabDbusChatImpl {
	ConfabDbusChatSkeleton parent_instance;
	ConfabEngine *engine; /* owned */
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
send_return_error(SendCall *call, GError *error)
{
	confab_error_register_dbus();
	g_dbus_method_invocation_return_gerror(call->invocation, error);
	g_error_free(error);
}

static void
run_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(SendCall) call = user_data;
	GError *error = NULL;

	if (!confab_turn_run_finish(CONFAB_TURN(source), result, &error)) {
		send_return_error(call, error);
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
		send_return_error(call, error);
		return;
	}
	turn = call->turn;
	confab_turn_run_async(turn, run_cb, g_steal_pointer(&call));
}

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
		send_return_error(call, error);
		return;
	}
	owner = confab_dbus_caller_user_name_for_uid(uid);
	principal = confab_principal_new(owner, CONFAB_SESSION_SOURCE_CHANNEL);
	call->turn = confab_turn_new(
	    call->self->engine,
	    g_steal_pointer(&principal),
	    confab_chat_request_new_text(call->agent_id, call->session_id, call->text));
	turn = call->turn;
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
		confab_error_register_dbus();
		g_dbus_method_invocation_return_gerror(invocation, error);
		g_error_free(error);
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

static void
confab_dbus_chat_impl_iface_init(ConfabDbusChatIface *iface)
{
	iface->handle_send = handle_send;
}

static void
confab_dbus_chat_impl_finalize(GObject *object)
{
	ConfabDbusChatImpl *self = CONFAB_DBUS_CHAT_IMPL(object);
	g_clear_object(&self->engine);
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
