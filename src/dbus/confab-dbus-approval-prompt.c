/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabDbus"

#include "config.h"

#include <glib/gi18n.h>
#include <json-glib/json-glib.h>

#include "dbus/confab-dbus-approval-prompt.h"

/*
 * The desktop's door for approvals: a turn started from the desktop
 * (Chat.Send on the session bus, GNOME Shell search's "Ask") whose agent
 * wants to run a tool that needs approval shows a notification with the
 * actions "allow" and "deny"; the person's choice decides it (by
 * "desktop"), as the approval's owner. A notification closed without a
 * choice decides nothing: the approval then times out, or is decided
 * elsewhere (HTTP, Chat.Approve). Once it is decided, however, the
 * notification is withdrawn (confab_dbus_approval_prompt_tool_event()):
 * nobody can act on it any more.
 */

typedef struct {
	ConfabEngine *engine; /* owned */
	gchar *approval_id;   /* owned */
	gchar *owner;	      /* owned */
} Prompt;

static void
prompt_free(Prompt *prompt)
{
	g_object_unref(prompt->engine);
	g_free(prompt->approval_id);
	g_free(prompt->owner);
	g_free(prompt);
}

/**
 * confab_dbus_approval_prompt_body:
 * @agent_name: the agent's name
 * @approval: the pending approval
 *
 * Returns: (transfer full): the text of the notification: who wants to run
 *   what, with which arguments (cut to a readable length)
 */
gchar *
confab_dbus_approval_prompt_body(const gchar *agent_name, const ConfabApproval *approval)
{
	const gchar *args = approval->arguments != NULL && *approval->arguments != '\0'
				? approval->arguments
				: "{}";
	g_autofree gchar *cut = NULL;

	if (g_utf8_validate(args, -1, NULL) &&
	    g_utf8_strlen(args, -1) > CONFAB_DBUS_APPROVAL_PROMPT_MAX_ARGS) {
		g_autofree gchar *head =
		    g_utf8_substring(args, 0, CONFAB_DBUS_APPROVAL_PROMPT_MAX_ARGS);
		cut = g_strconcat(head, "…", NULL);
	} else {
		cut = g_strdup(args);
	}
	/* TRANSLATORS: an agent, a tool, its server, its arguments (JSON) */
	return g_strdup_printf(_("%s wants to run the tool %s of %s with %s"),
			       agent_name,
			       approval->tool != NULL ? approval->tool : approval->name,
			       approval->server,
			       cut);
}

static void
decided_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConfabApproval) approval = NULL;
	g_autoptr(GError) error = NULL;

	approval = confab_approvals_decide_finish(CONFAB_APPROVALS(source), result, &error);
	if (approval == NULL)
		g_message("the desktop's decision was not taken: %s", error->message);
}

static void
on_action(const gchar *action, gpointer user_data)
{
	Prompt *prompt = user_data;
	gboolean approve;

	if (g_strcmp0(action, "allow") == 0)
		approve = TRUE;
	else if (g_strcmp0(action, "deny") == 0)
		approve = FALSE;
	else
		return; /* "default" (a click on the bubble) decides nothing */
	confab_approvals_decide_async(confab_engine_get_approvals(prompt->engine),
				      prompt->approval_id,
				      prompt->owner,
				      NULL,
				      approve,
				      NULL,
				      "desktop",
				      decided_cb,
				      NULL);
}

/**
 * confab_dbus_approval_prompt_show:
 * @notifier: the desktop's notifications
 * @engine: the engine
 * @approval: a pending approval of a turn started from the desktop
 *
 * Asks the person, with a notification whose actions "allow" and "deny"
 * decide the approval.
 */
void
confab_dbus_approval_prompt_show(ConfabDbusNotifier *notifier,
				 ConfabEngine *engine,
				 const ConfabApproval *approval)
{
	const gchar *const actions[] = {"allow", _("Allow"), "deny", _("Deny"), NULL};
	g_autoptr(ConfabAgent) agent = confab_engine_lookup_agent(engine, approval->agent_id);
	const gchar *name = agent != NULL ? confab_agent_get_name(agent) : approval->agent_id;
	g_autofree gchar *summary = g_strdup_printf(_("Allow %s to run a tool?"), name);
	g_autofree gchar *body = confab_dbus_approval_prompt_body(name, approval);
	Prompt *prompt = g_new0(Prompt, 1);

	prompt->engine = g_object_ref(engine);
	prompt->approval_id = g_strdup(approval->id);
	prompt->owner = g_strdup(approval->owner);
	confab_dbus_notifier_ask(notifier,
				 approval->id,
				 summary,
				 body,
				 actions,
				 on_action,
				 prompt,
				 (GDestroyNotify)prompt_free);
}

/**
 * confab_dbus_approval_prompt_tool_event:
 * @notifier: the desktop's notifications
 * @event_json: a `tool_event` of a turn whose approvals are asked on the
 *   desktop
 *
 * Withdraws the notification of an approval once the event says it is
 * decided (by anyone, anywhere) or timed out.
 */
void
confab_dbus_approval_prompt_tool_event(ConfabDbusNotifier *notifier, const gchar *event_json)
{
	g_autoptr(JsonNode) node = json_from_string(event_json, NULL);
	JsonObject *event;

	if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
		return;
	event = json_node_get_object(node);
	if (g_strcmp0(json_object_get_string_member_with_default(event, "type", NULL),
		      "approval") != 0)
		return;
	confab_dbus_notifier_withdraw(notifier,
				      json_object_get_string_member_with_default(event, "id", ""));
}
