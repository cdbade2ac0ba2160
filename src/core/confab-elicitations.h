/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>
#include <json-glib/json-glib.h>

#include "model/confab-elicitation-request.h"
#include "model/confab-id.h"
#include "store/confab-store.h"

G_BEGIN_DECLS

#define CONFAB_TYPE_ELICITATIONS (confab_elicitations_get_type())
G_DECLARE_FINAL_TYPE(ConfabElicitations, confab_elicitations, CONFAB, ELICITATIONS, GObject)

ConfabElicitations *
confab_elicitations_new(ConfabStore *store, ConfabIdGenerator *ids, guint timeout_seconds);

void
confab_elicitations_create_async(ConfabElicitations *self,
				 const ConfabElicitationRequest *request,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
ConfabElicitationRequest *
confab_elicitations_create_finish(ConfabElicitations *self, GAsyncResult *result, GError **error);

void
confab_elicitations_wait_async(ConfabElicitations *self,
			       const ConfabElicitationRequest *request,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
ConfabElicitationRequest *
confab_elicitations_wait_finish(ConfabElicitations *self, GAsyncResult *result, GError **error);

void
confab_elicitations_answer_async(ConfabElicitations *self,
				 const gchar *elicitation_id,
				 const gchar *owner,
				 const gchar *agent_id,
				 const gchar *action,
				 JsonObject *content,
				 const gchar *by,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
ConfabElicitationRequest *
confab_elicitations_answer_finish(ConfabElicitations *self, GAsyncResult *result, GError **error);

void
confab_elicitations_expire_all(ConfabElicitations *self);

G_END_DECLS
