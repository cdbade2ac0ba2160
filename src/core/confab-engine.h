/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#pragma once

#include <gio/gio.h>

#include "core/confab-approvals.h"
#include "core/confab-background.h"
#include "core/confab-config.h"
#include "core/confab-elicitations.h"
#include "core/confab-mcp-authorizations.h"
#include "core/confab-router.h"
#include "metrics/confab-metrics.h"
#include "model/confab-agent.h"
#include "model/confab-enums.h"
#include "model/confab-id.h"
#include "model/confab-principal.h"
#include "model/confab-token.h"
#include "providers/confab-provider.h"
#include "secrets/confab-secret-store.h"
#include "store/confab-store.h"
#include "tools/confab-toolbox.h"

G_BEGIN_DECLS

#define CONFAB_SCOPE_CHAT    "chat.completions"
#define CONFAB_SCOPE_FULL    "api.full"
#define CONFAB_SCOPE_METRICS "metrics.read"

/* the scopes the v1 API accepts, any one of them */
#define CONFAB_SCOPES_API ((const gchar *const[]){CONFAB_SCOPE_CHAT, CONFAB_SCOPE_FULL, NULL})
/* the scope /metrics accepts */
#define CONFAB_SCOPES_METRICS ((const gchar *const[]){CONFAB_SCOPE_METRICS, NULL})

/**
 * ConfabQuotaInfo:
 * @limit: requests a month; 0 when unlimited
 * @remaining: requests left this month
 * @reset_seconds: seconds until the month rolls over (UTC)
 * @rpm: requests a minute; 0 when unlimited
 * @rate_remaining: requests the rate admits at once after this one
 * @rate_reset_ms: milliseconds until the rate is whole again
 * @retry_after_ms: when refused for the rate: milliseconds until a request
 *   would be admitted; 0 otherwise
 * @parallel_taken: the admitted turn holds one of its owner's slots
 *   (`[quota] default_max_parallel`): give it back with
 *   confab_engine_release_parallel() when the turn ends
 * @token_parallel_taken: the admitted turn holds one of its token's slots:
 *   give it back with confab_engine_release_parallel() on the token's id
 * @tpm: tokens a minute (the tighter of the owner's and the token's); 0
 *   when unlimited
 * @tpm_remaining: tokens the rate would take at once after the first
 *   call's reservation
 * @tpm_reset_ms: milliseconds until the tokens' rate is whole again
 * @token_id: private
 */
typedef struct {
	guint64 limit;
	guint64 remaining;
	gint64 reset_seconds;
	guint64 rpm;
	guint64 rate_remaining;
	gint64 rate_reset_ms;
	gint64 retry_after_ms;
	gboolean parallel_taken;
	gboolean token_parallel_taken;
	guint64 tpm;
	guint64 tpm_remaining;
	gint64 tpm_reset_ms;
	gchar *token_id;
} ConfabQuotaInfo;

#define CONFAB_TYPE_ENGINE (confab_engine_get_type())
G_DECLARE_FINAL_TYPE(ConfabEngine, confab_engine, CONFAB, ENGINE, GObject)

ConfabEngine *
confab_engine_new(const ConfabConfig *config, ConfabStore *store);
void
confab_engine_load_async(ConfabEngine *self,
			 GCancellable *cancellable,
			 GAsyncReadyCallback callback,
			 gpointer user_data);
gboolean
confab_engine_load_finish(ConfabEngine *self, GAsyncResult *result, GError **error);
const ConfabConfig *
confab_engine_get_config(ConfabEngine *self);
ConfabStore *
confab_engine_get_store(ConfabEngine *self);
ConfabBackground *
confab_engine_get_background(ConfabEngine *self);
ConfabIdGenerator *
confab_engine_get_id_generator(ConfabEngine *self);
ConfabToolbox *
confab_engine_get_toolbox(ConfabEngine *self);
ConfabMcpAuthorizations *
confab_engine_get_mcp_authorizations(ConfabEngine *self);
ConfabApprovals *
confab_engine_get_approvals(ConfabEngine *self);
ConfabElicitations *
confab_engine_get_elicitations(ConfabEngine *self);
ConfabMetrics *
confab_engine_get_metrics(ConfabEngine *self);
ConfabRouter *
confab_engine_get_router(ConfabEngine *self);
void
confab_engine_add_provider(ConfabEngine *self, ConfabProvider *provider);
void
confab_engine_set_secret_store(ConfabEngine *self, ConfabSecretStore *secrets);
void
confab_engine_add_context_provider(ConfabEngine *self,
				   GMainContext *context,
				   ConfabProvider *provider);
ConfabProvider *
confab_engine_get_provider(ConfabEngine *self, const gchar *name);

/* authentication */
ConfabPrincipal *
confab_engine_authenticate(ConfabEngine *self,
			   const gchar *authorization,
			   const gchar *const *scopes,
			   GError **error);

typedef struct _ConfabEngineAuthCache ConfabEngineAuthCache;
ConfabEngineAuthCache *
confab_engine_auth_cache_new(void);
void
confab_engine_auth_cache_free(ConfabEngineAuthCache *cache);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabEngineAuthCache, confab_engine_auth_cache_free)
ConfabPrincipal *
confab_engine_authenticate_cached(ConfabEngine *self,
				  ConfabEngineAuthCache *cache,
				  const gchar *authorization,
				  const gchar *const *scopes,
				  GError **error);

/* agents */
ConfabAgent *
confab_engine_lookup_agent(ConfabEngine *self, const gchar *agent_id);
GPtrArray *
confab_engine_list_agents(ConfabEngine *self);
void
confab_engine_save_agent_async(ConfabEngine *self,
			       ConfabAgent *agent,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
gboolean
confab_engine_save_agent_finish(ConfabEngine *self, GAsyncResult *result, GError **error);
void
confab_engine_delete_agent_async(ConfabEngine *self,
				 const gchar *agent_id,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
gboolean
confab_engine_delete_agent_finish(ConfabEngine *self, GAsyncResult *result, GError **error);

/* tokens */
ConfabToken *
confab_engine_lookup_token(ConfabEngine *self, const gchar *token_id);
GPtrArray *
confab_engine_list_tokens(ConfabEngine *self, const gchar *owner);
void
confab_engine_create_token_async(ConfabEngine *self,
				 const gchar *owner,
				 const gchar *name,
				 const gchar *const *scopes,
				 const gchar *agent_id,
				 gint64 expires_at,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
ConfabToken *
confab_engine_create_token_finish(ConfabEngine *self,
				  GAsyncResult *result,
				  gchar **secret,
				  GError **error);
void
confab_engine_revoke_token_async(ConfabEngine *self,
				 const gchar *token_id,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data);
gboolean
confab_engine_revoke_token_finish(ConfabEngine *self, GAsyncResult *result, GError **error);

/* quota */
void
confab_engine_set_quota_async(ConfabEngine *self,
			      const gchar *owner,
			      guint64 monthly_requests,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data);
gboolean
confab_engine_set_quota_finish(ConfabEngine *self, GAsyncResult *result, GError **error);
void
confab_engine_get_usage_async(ConfabEngine *self,
			      const gchar *owner,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data);
void
confab_engine_list_usage_async(ConfabEngine *self,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
GPtrArray *
confab_engine_list_usage_finish(ConfabEngine *self, GAsyncResult *result, GError **error);
ConfabStoreUsage *
confab_engine_get_usage_finish(ConfabEngine *self, GAsyncResult *result, GError **error);
void
confab_engine_admit_quota_async(ConfabEngine *self,
				const gchar *owner,
				const gchar *month,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data);
gboolean
confab_engine_admit_quota_finish(ConfabEngine *self,
				 GAsyncResult *result,
				 ConfabQuotaInfo *info,
				 GError **error);
gboolean
confab_engine_answers_now(ConfabEngine *self);
void
confab_engine_release_parallel(ConfabEngine *self, const gchar *owner);
gboolean
confab_engine_admit_quota_now(ConfabEngine *self,
			      const gchar *owner,
			      const gchar *month,
			      ConfabQuotaInfo *info,
			      GError **error);
gchar *
confab_engine_current_month(ConfabEngine *self);
void
confab_engine_admit_async(ConfabEngine *self,
			  const gchar *owner,
			  const gchar *token_id,
			  const gchar *month,
			  GCancellable *cancellable,
			  GAsyncReadyCallback callback,
			  gpointer user_data);
gboolean
confab_engine_admit_now(ConfabEngine *self,
			const gchar *owner,
			const gchar *token_id,
			const gchar *month,
			ConfabQuotaInfo *info,
			GError **error);

/* tokens */
gboolean
confab_engine_tokens_init(ConfabEngine *self,
			  ConfabStoreTokens *tokens,
			  const gchar *owner,
			  const gchar *token_id,
			  const gchar *month);
gboolean
confab_engine_tokens_verdict(const ConfabStoreTokenVerdict *verdict,
			     ConfabQuotaInfo *info,
			     GError **error);

/* limits */
ConfabStoreLimits *
confab_engine_get_limits(ConfabEngine *self, const gchar *kind, const gchar *id, GError **error);
void
confab_engine_set_limits_async(ConfabEngine *self,
			       const gchar *kind,
			       const gchar *id,
			       const gint64 values[4],
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data);
gboolean
confab_engine_set_limits_finish(ConfabEngine *self, GAsyncResult *result, GError **error);

/* turns */
gboolean
confab_engine_turn_begin(ConfabEngine *self, GCancellable *cancellable, GError **error);
void
confab_engine_turn_end(ConfabEngine *self, GCancellable *cancellable, gboolean served);
guint
confab_engine_get_active_turns(ConfabEngine *self);
guint64
confab_engine_get_turns_served(ConfabEngine *self);

/* shutdown */
void
confab_engine_begin_shutdown(ConfabEngine *self);
void
confab_engine_cancel_turns(ConfabEngine *self);

G_END_DECLS
