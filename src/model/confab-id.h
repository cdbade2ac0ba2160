/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <glib-object.h>

G_BEGIN_DECLS

#define CONFAB_PREFIX_AGENT	  "agt_"
#define CONFAB_PREFIX_SESSION	  "cts_"
#define CONFAB_PREFIX_MESSAGE	  "msg_"
#define CONFAB_PREFIX_TOKEN	  "tok_"
#define CONFAB_PREFIX_SECRET	  "nca_"
#define CONFAB_PREFIX_COMPLETION  "chatcmpl-"
#define CONFAB_PREFIX_APPROVAL	  "mcpr_"
#define CONFAB_PREFIX_ELICITATION "mcpe_"
#define CONFAB_PREFIX_RESPONSE	  "resp_"

/* characters after the prefix: 10 of time (ms) and 16 of randomness */
#define CONFAB_ID_BODY_LEN 26

#define CONFAB_TYPE_ID_GENERATOR (confab_id_generator_get_type())
G_DECLARE_FINAL_TYPE(ConfabIdGenerator, confab_id_generator, CONFAB, ID_GENERATOR, GObject)

ConfabIdGenerator *
confab_id_generator_new(void);
gchar *
confab_id_generator_next(ConfabIdGenerator *self, const gchar *prefix);
void
confab_id_generator_set_clock(ConfabIdGenerator *self, gint64 (*clock_ms)(gpointer), gpointer data);

gboolean
confab_id_is_valid(const gchar *id, const gchar *prefix);
gint64
confab_id_get_timestamp_ms(const gchar *id);
gint64
confab_id_get_timestamp(const gchar *id);

G_END_DECLS
