/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "tools/mcp/confab-mcp-elicitation.h"
#include "tools/mcp/confab-mcp-oauth.h"
#include "tools/mcp/confab-mcp-tool.h"

G_BEGIN_DECLS

/* The longest function name OpenAI takes. */
#define CONFAB_TOOLBOX_MAX_NAME 64

/**
 * ConfabToolboxTool:
 * @name: the name the model sees, `SERVER__tool` made to fit
 *   `[A-Za-z0-9_-]{1,64}`; "" for a server that could not start
 * @server: the tool server's configured name
 * @tool: the tool's own name on its server; "" for a server that could
 *   not start
 * @description: what it does, for the model (may be "")
 * @input_schema: its JSON Schema as JSON text (`{"type":"object"}` when
 *   the server gave none; "" for a server that could not start)
 * @status: "ready", or "failed: " and a short reason
 *
 * One tool an agent's servers offer, as confab_toolbox_list_tools_async()
 * lists it; a server that could not start is one entry with its failure.
 */
typedef struct {
	gchar *name;
	gchar *server;
	gchar *tool;
	gchar *description;
	gchar *input_schema;
	gchar *status;
} ConfabToolboxTool;

#define CONFAB_TYPE_TOOLBOX_TOOL (confab_toolbox_tool_get_type())
GType
confab_toolbox_tool_get_type(void);
ConfabToolboxTool *
confab_toolbox_tool_copy(const ConfabToolboxTool *tool);
void
confab_toolbox_tool_free(ConfabToolboxTool *tool);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabToolboxTool, confab_toolbox_tool_free)

/**
 * ConfabToolboxProgressFunc:
 * @progress: the progress so far
 * @total: the total, or a negative number when unknown
 * @message: (nullable): what the server said about it
 * @user_data: data given with the function
 *
 * A `notifications/progress` about a running tool call.
 */
typedef void (*ConfabToolboxProgressFunc)(gdouble progress,
					  gdouble total,
					  const gchar *message,
					  gpointer user_data);

/**
 * ConfabToolboxElicitFunc:
 * @elicitation: the server's `elicitation/create`; reference it to answer
 *   it later, with confab_toolbox_answer_elicitation()
 * @user_data: data given with the function
 *
 * An elicitation the server of a call in flight sends: a question for the
 * person whose call it is.
 */
typedef void (*ConfabToolboxElicitFunc)(ConfabMcpElicitation *elicitation, gpointer user_data);

/**
 * ConfabToolboxOAuthLoadFunc:
 *
 * Reads the kept OAuth state of @agent_id's server @server and calls
 * @done with it (transfer full, %NULL for none) on the toolbox's context.
 */
typedef void (*ConfabToolboxOAuthLoadFunc)(const gchar *agent_id,
					   const gchar *server,
					   ConfabMcpOAuthLoaded done,
					   gpointer done_data,
					   gpointer user_data);
/**
 * ConfabToolboxOAuthSaveFunc:
 * @pending_state: (nullable): the state of the authorization waiting
 * @data: the whole state, secrets included
 * @version: when it changed (a save of an older one must not win)
 *
 * Keeps it (write-only), in the background.
 */
typedef void (*ConfabToolboxOAuthSaveFunc)(const gchar *agent_id,
					   const gchar *server,
					   const gchar *pending_state,
					   const gchar *data,
					   gint64 version,
					   gpointer user_data);

#define CONFAB_TYPE_TOOLBOX (confab_toolbox_get_type())
G_DECLARE_FINAL_TYPE(ConfabToolbox, confab_toolbox, CONFAB, TOOLBOX, GObject)

ConfabToolbox *
confab_toolbox_new(const gchar *home_dir, gsize max_output_bytes);
void
confab_toolbox_set_backoff(ConfabToolbox *self, guint initial_ms, guint max_ms);

void
confab_toolbox_list_tools_async(ConfabToolbox *self,
				const gchar *agent_id,
				const gchar *config_json,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
GPtrArray *
confab_toolbox_list_tools_finish(ConfabToolbox *self, GAsyncResult *result, GError **error);

void
confab_toolbox_call_async(ConfabToolbox *self,
			  const gchar *agent_id,
			  const gchar *config_json,
			  const gchar *name,
			  JsonObject *arguments,
			  ConfabToolboxProgressFunc progress,
			  gpointer progress_data,
			  GDestroyNotify progress_notify,
			  GCancellable *cancellable,
			  GAsyncReadyCallback callback,
			  gpointer user_data);
void
confab_toolbox_call_elicit_async(ConfabToolbox *self,
				 const gchar *agent_id,
				 const gchar *config_json,
				 const gchar *name,
				 JsonObject *arguments,
				 ConfabToolboxProgressFunc progress,
				 ConfabToolboxElicitFunc elicit,
				 gpointer progress_data,
				 GDestroyNotify progress_notify,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
void
confab_toolbox_answer_elicitation(ConfabToolbox *self,
				  ConfabMcpElicitation *elicitation,
				  const gchar *action,
				  JsonObject *content);
ConfabMcpToolResult *
confab_toolbox_call_finish(ConfabToolbox *self, GAsyncResult *result, GError **error);

gboolean
confab_toolbox_is_tool(ConfabToolbox *self,
		       const gchar *agent_id,
		       const gchar *config_json,
		       const gchar *name);
gboolean
confab_toolbox_lookup_tool(ConfabToolbox *self,
			   const gchar *agent_id,
			   const gchar *name,
			   gchar **server,
			   gchar **tool);
void
confab_toolbox_forget_agent(ConfabToolbox *self, const gchar *agent_id);
GPid
confab_toolbox_get_server_pid(ConfabToolbox *self, const gchar *agent_id, const gchar *server);

void
confab_toolbox_set_oauth(ConfabToolbox *self,
			 ConfabToolboxOAuthLoadFunc load,
			 ConfabToolboxOAuthSaveFunc save,
			 gpointer user_data,
			 const gchar *redirect_uri,
			 const gchar *client_metadata_url);
void
confab_toolbox_authorize_async(ConfabToolbox *self,
			       const gchar *agent_id,
			       const gchar *config_json,
			       const gchar *server,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
gchar *
confab_toolbox_authorize_finish(ConfabToolbox *self,
				GAsyncResult *result,
				gchar **pending_state,
				gchar **kept,
				gint64 *version,
				GError **error);
void
confab_toolbox_complete_oauth_async(ConfabToolbox *self,
				    const gchar *agent_id,
				    const gchar *config_json,
				    const gchar *server,
				    const gchar *kept,
				    const gchar *state,
				    const gchar *code,
				    GCancellable *cancellable,
				    GAsyncReadyCallback callback,
				    gpointer user_data);
gchar *
confab_toolbox_complete_oauth_finish(ConfabToolbox *self, GAsyncResult *result, GError **error);

void
confab_toolbox_shutdown_async(ConfabToolbox *self,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data);
gboolean
confab_toolbox_shutdown_finish(ConfabToolbox *self, GAsyncResult *result, GError **error);

G_END_DECLS
