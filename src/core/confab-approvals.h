/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "metrics/confab-metrics.h"
#include "model/confab-approval.h"
#include "model/confab-id.h"
#include "store/confab-store.h"

G_BEGIN_DECLS

/* How often a waiting turn reads its approval from the store, so that a
 * decision made on another instance reaches it (milliseconds). */
#define CONFAB_APPROVALS_POLL_MS 250

#define CONFAB_TYPE_APPROVALS (confab_approvals_get_type())
G_DECLARE_FINAL_TYPE(ConfabApprovals, confab_approvals, CONFAB, APPROVALS, GObject)

ConfabApprovals *
confab_approvals_new(ConfabStore *store,
		     ConfabIdGenerator *ids,
		     ConfabMetrics *metrics,
		     guint timeout_seconds);
guint
confab_approvals_get_timeout(ConfabApprovals *self);

void
confab_approvals_create_async(ConfabApprovals *self,
			      const ConfabApproval *request,
			      GAsyncReadyCallback callback,
			      gpointer user_data);
ConfabApproval *
confab_approvals_create_finish(ConfabApprovals *self, GAsyncResult *result, GError **error);

void
confab_approvals_wait_async(ConfabApprovals *self,
			    const ConfabApproval *approval,
			    GAsyncReadyCallback callback,
			    gpointer user_data);
ConfabApproval *
confab_approvals_wait_finish(ConfabApprovals *self, GAsyncResult *result, GError **error);

void
confab_approvals_decide_async(ConfabApprovals *self,
			      const gchar *approval_id,
			      const gchar *owner,
			      const gchar *agent_id,
			      gboolean approve,
			      const gchar *reason,
			      const gchar *by,
			      GAsyncReadyCallback callback,
			      gpointer user_data);
void
confab_approvals_answer_async(ConfabApprovals *self,
			      const gchar *approval_id,
			      const gchar *owner,
			      const gchar *response_id,
			      gboolean approve,
			      const gchar *reason,
			      GAsyncReadyCallback callback,
			      gpointer user_data);
ConfabApproval *
confab_approvals_decide_finish(ConfabApprovals *self, GAsyncResult *result, GError **error);

void
confab_approvals_expire_all(ConfabApprovals *self, const gchar *reason);
guint
confab_approvals_get_n_waiting(ConfabApprovals *self);

G_END_DECLS
