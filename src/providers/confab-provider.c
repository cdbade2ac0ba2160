/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabProvider"

#include "config.h"

#include "providers/confab-provider.h"

G_DEFINE_INTERFACE(ConfabProvider, confab_provider, G_TYPE_OBJECT)

static void
confab_provider_default_init(ConfabProviderInterface *iface)
{
}

void
confab_provider_request_free(ConfabProviderRequest *request)
{
	if (request == NULL)
		return;
	g_clear_object(&request->agent);
	g_clear_pointer(&request->messages, json_array_unref);
	g_clear_pointer(&request->params, json_object_unref);
	g_clear_pointer(&request->flow, confab_flow_unref);
	g_free(request->target);
	g_free(request->target_model);
	g_free(request->error_type);
	g_free(request->error_code);
	g_free(request->error_param);
	g_free(request);
}

/**
 * confab_provider_request_answered:
 * @request: a request being run
 *
 * For providers: the upstream has answered @request with a success status.
 * Calls its @answered function, the first time only.
 */
void
confab_provider_request_answered(ConfabProviderRequest *request)
{
	ConfabAnsweredFunc answered = request->answered;

	if (answered == NULL)
		return;
	request->answered = NULL;
	answered(request, request->answered_data);
}

/**
 * confab_provider_request_set_error_fields:
 * @request: a request that failed
 * @type: (nullable): the upstream error's `type`
 * @code: (nullable): its `code`
 * @param: (nullable): its `param`
 *
 * Sets (or clears) what the upstream's OpenAI-shaped error said besides its
 * message, for a door that relays it.
 */
void
confab_provider_request_set_error_fields(ConfabProviderRequest *request,
					 const gchar *type,
					 const gchar *code,
					 const gchar *param)
{
	g_free(request->error_type);
	request->error_type = g_strdup(type);
	g_free(request->error_code);
	request->error_code = g_strdup(code);
	g_free(request->error_param);
	request->error_param = g_strdup(param);
}

/**
 * confab_provider_result_new:
 * @finish_reason: why the completion ended
 *
 * Returns: (transfer full): a result with unknown usage
 */
ConfabProviderResult *
confab_provider_result_new(const gchar *finish_reason)
{
	ConfabProviderResult *result = g_new0(ConfabProviderResult, 1);
	result->finish_reason = g_strdup(finish_reason);
	result->prompt_tokens = -1;
	result->completion_tokens = -1;
	return result;
}

void
confab_provider_result_free(ConfabProviderResult *result)
{
	if (result == NULL)
		return;
	g_free(result->finish_reason);
	g_free(result);
}

const gchar *
confab_provider_get_name(ConfabProvider *self)
{
	g_return_val_if_fail(CONFAB_IS_PROVIDER(self), NULL);
	return CONFAB_PROVIDER_GET_IFACE(self)->get_name(self);
}

/**
 * confab_provider_check_agent:
 * @self: a #ConfabProvider
 * @agent: an agent about to be saved
 * @error: return location for a #GError
 *
 * Returns: %TRUE if @agent's settings suit this provider
 */
gboolean
confab_provider_check_agent(ConfabProvider *self, ConfabAgent *agent, GError **error)
{
	ConfabProviderInterface *iface;
	g_return_val_if_fail(CONFAB_IS_PROVIDER(self), FALSE);
	iface = CONFAB_PROVIDER_GET_IFACE(self);
	if (iface->check_agent == NULL)
		return TRUE;
	return iface->check_agent(self, agent, error);
}

/**
 * confab_provider_complete_async:
 * @self: a #ConfabProvider
 * @request: (transfer none): what to complete; kept alive by the provider
 * @delta_func: receives the answer as it comes
 * @delta_data: data for @delta_func
 * @cancellable: (nullable): aborts the completion
 * @callback: called once the completion ended
 * @user_data: data for @callback
 *
 * Runs one chat completion.
 */
void
confab_provider_complete_async(ConfabProvider *self,
			       ConfabProviderRequest *request,
			       ConfabDeltaFunc delta_func,
			       gpointer delta_data,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data)
{
	g_return_if_fail(CONFAB_IS_PROVIDER(self));
	g_return_if_fail(request != NULL);
	CONFAB_PROVIDER_GET_IFACE(self)->complete_async(self,
							request,
							delta_func,
							delta_data,
							cancellable,
							callback,
							user_data);
}

/**
 * confab_provider_complete_finish:
 *
 * Returns: (transfer full): how the completion ended, or %NULL with @error
 */
ConfabProviderResult *
confab_provider_complete_finish(ConfabProvider *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(CONFAB_IS_PROVIDER(self), NULL);
	return CONFAB_PROVIDER_GET_IFACE(self)->complete_finish(self, result, error);
}
