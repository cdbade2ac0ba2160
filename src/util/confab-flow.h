/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/**
 * ConfabFlow:
 *
 * Backpressure between a reader and what feeds it: the door that writes a
 * stream to its client holds the flow while the client is behind, and
 * whatever produces the stream (the turn, its agent loop, the provider and
 * the upstream exchange under it) waits for the flow to open before it
 * produces more. One flow per streamed answer, used on one thread: the
 * thread-default main context of its creator, where waiters are called.
 */
typedef struct _ConfabFlow ConfabFlow;

/**
 * ConfabFlowFunc:
 * @user_data: data given with the function
 *
 * Called once, from the flow's main context, when the flow opens or the
 * wait's cancellable is cancelled.
 */
typedef void (*ConfabFlowFunc)(gpointer user_data);

ConfabFlow *
confab_flow_new(void);
ConfabFlow *
confab_flow_ref(ConfabFlow *self);
void
confab_flow_unref(ConfabFlow *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabFlow, confab_flow_unref)

void
confab_flow_set_held(ConfabFlow *self, gboolean held);
gboolean
confab_flow_is_held(ConfabFlow *self);
void
confab_flow_close(ConfabFlow *self);
guint
confab_flow_get_holds(ConfabFlow *self);
gint64
confab_flow_get_held_us(ConfabFlow *self);

guint
confab_flow_wait(ConfabFlow *self,
		 GCancellable *cancellable,
		 ConfabFlowFunc func,
		 gpointer user_data);
void
confab_flow_cancel_wait(ConfabFlow *self, guint id);
void
confab_flow_clear_wait(ConfabFlow *self, guint *id);

G_END_DECLS
