/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <string.h>

#include "http/confab-http-response.h"
#include "openai/confab-openai-error.h"
#include "util/confab-error.h"
#include "util/confab-json.h"
#include "util/confab-log.h"

/*
 * What every handler answers with — JSON bodies, errors in the OpenAI shape
 * with the headers that go with their status — and the access log line
 * each request leaves behind.
 */

/**
 * confab_http_response_json:
 * @exchange: the exchange
 * @status: the status
 * @body: (transfer full): the JSON body
 */
void
confab_http_response_json(ConfabHttpExchange *exchange, guint status, gchar *body)
{
	confab_http_exchange_respond_take(exchange, status, "application/json", body);
}

/**
 * confab_http_response_add_error_headers:
 * @exchange: the exchange
 * @status: the status of the error about to be sent
 *
 * Adds what goes with an error status: `WWW-Authenticate` with 401,
 * `Retry-After` with 503, and `x-should-retry: false` with 429, 502 and 504
 * (the OpenAI SDKs retry those unless told not to; Confab has already
 * retried the upstream).
 */
void
confab_http_response_add_error_headers(ConfabHttpExchange *exchange, guint status)
{
	switch (status) {
	case 401:
		confab_http_exchange_add_header(exchange, "WWW-Authenticate", "Bearer");
		break;
	case 429:
	case 502:
	case 504:
		confab_http_exchange_add_header(exchange, "x-should-retry", "false");
		break;
	case 503:
		confab_http_exchange_add_header(exchange, "Retry-After", "1");
		break;
	default:
		break;
	}
}

/**
 * confab_http_response_error:
 * @exchange: the exchange
 * @error: what went wrong
 *
 * Sends the OpenAI error shape with the status, type and code the contract
 * gives @error, and the headers that go with them.
 */
void
confab_http_response_error(ConfabHttpExchange *exchange, const GError *error)
{
	const ConfabOpenaiErrorInfo *info = confab_openai_error_info(error);

	if (info->status == 500)
		g_warning("internal error answered 500: %s", error != NULL ? error->message : "?");
	/* a rate refusal is for the SDKs to retry (Retry-After says when) */
	if (g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_RATE_LIMITED))
		confab_http_exchange_add_header(exchange, "x-should-retry", "true");
	else
		confab_http_response_add_error_headers(exchange, info->status);
	confab_http_response_json(exchange, info->status, confab_openai_error_body(error));
}

/* The upstream statuses a turn's error answers with as they are: the
 * request's own fault (400, 404, 413, 422), or too much at once (429). */
static gboolean
is_relayed_status(guint status)
{
	return status == 400 || status == 404 || status == 413 || status == 422 || status == 429;
}

/* 429 relayed: when to come back (the upstream's time, else a second), and
 * whether to at all (not for a spent quota, which waiting does not mend). */
static void
add_relayed_429_headers(ConfabHttpExchange *exchange, const ConfabProviderRequest *call)
{
	gint64 ms = call->retry_after_ms > 0 ? call->retry_after_ms : 1000;
	gchar buf[32];

	g_snprintf(buf, sizeof(buf), "%" G_GINT64_FORMAT, (ms + 999) / 1000);
	confab_http_exchange_add_header(exchange, "Retry-After", buf);
	g_snprintf(buf, sizeof(buf), "%" G_GINT64_FORMAT, ms);
	confab_http_exchange_add_header(exchange, "retry-after-ms", buf);
	confab_http_exchange_add_header(exchange,
					"x-should-retry",
					g_strcmp0(call->error_code, "insufficient_quota") == 0 ||
						g_strcmp0(call->error_type, "insufficient_quota") ==
						    0
					    ? "false"
					    : "true");
}

/**
 * confab_http_response_turn_error:
 * @exchange: the exchange
 * @turn: (nullable): the turn that failed, once it ran
 * @error: how it failed
 *
 * The one mapping from a turn's failure to an HTTP error, for JSON answers
 * and for streams whose head has not gone out. An upstream's refusal that
 * is the request's own fault (400, 404, 413, 422) or a rate limit (429,
 * with `Retry-After`, `retry-after-ms` and `x-should-retry`) is relayed
 * with its status and its error's type, code and param (scrubbed), the
 * message naming the upstream and what it said; anything else is
 * confab_http_response_error(): 502 `upstream_error`, 504
 * `upstream_timeout`, and so on.
 */
void
confab_http_response_turn_error(ConfabHttpExchange *exchange, ConfabTurn *turn, const GError *error)
{
	const ConfabProviderRequest *call = turn != NULL ? confab_turn_get_failed_call(turn) : NULL;
	GString *body;
	gboolean is_429;

	if (call == NULL || !g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_UPSTREAM) ||
	    !is_relayed_status(call->status)) {
		confab_http_response_error(exchange, error);
		return;
	}
	is_429 = call->status == 429;
	if (is_429)
		add_relayed_429_headers(exchange, call);
	body = g_string_new("{\"error\":{\"message\":");
	confab_json_append_string(body, error->message);
	g_string_append(body, ",\"type\":");
	confab_json_append_string(body,
				  call->error_type != NULL ? call->error_type
				  : is_429		   ? "rate_limit_error"
							   : "invalid_request_error");
	g_string_append(body, ",\"param\":");
	confab_json_append_string(body, call->error_param);
	g_string_append(body, ",\"code\":");
	confab_json_append_string(body,
				  call->error_code != NULL ? call->error_code
				  : is_429		   ? "rate_limit_exceeded"
							   : NULL);
	g_string_append(body, "}}");
	confab_http_response_json(exchange, call->status, g_string_free(body, FALSE));
}

/* @value in decimal, written backwards from @end; returns where it begins.
 * The headers of every limited answer are written this way rather than by
 * printf (issue 30: a turn under limits costs at most 5 % more). */
static gchar *
format_digits(gchar *end, guint64 value)
{
	do {
		*--end = (gchar)('0' + value % 10);
		value /= 10;
	} while (value > 0);
	return end;
}

#define DURATION_SIZE 48

/* confab_http_response_format_duration() into @buf, of DURATION_SIZE. */
static const gchar *
format_duration(gchar *buf, gint64 ms)
{
	gchar *end = buf + DURATION_SIZE;
	gchar *p = end;
	guint64 hours, minutes, seconds, rest;

	*--p = '\0';
	ms = MAX(ms, 0);
	if (ms < 1000) {
		p -= 2;
		memcpy(p, "ms", 2);
		return format_digits(p, (guint64)ms);
	}
	hours = (guint64)ms / 3600000;
	minutes = (guint64)ms / 60000 % 60;
	seconds = (guint64)ms / 1000 % 60;
	rest = (guint64)ms % 1000;
	*--p = 's';
	if (rest > 0) {
		/* three digits, less their trailing zeros */
		gint digits = 3;
		while (rest % 10 == 0) {
			rest /= 10;
			digits--;
		}
		for (gint i = 0; i < digits; i++) {
			*--p = (gchar)('0' + rest % 10);
			rest /= 10;
		}
		*--p = '.';
	}
	p = format_digits(p, seconds);
	if (hours > 0 || minutes > 0) {
		*--p = 'm';
		p = format_digits(p, minutes);
	}
	if (hours > 0) {
		*--p = 'h';
		p = format_digits(p, hours);
	}
	return p;
}

/**
 * confab_http_response_format_duration:
 * @ms: milliseconds, 0 or more
 *
 * Writes a duration as OpenAI's x-ratelimit-reset-* headers do (Go's
 * notation): `20ms` under a second, else `1s`, `1.5s`, `6m0s`, `1h0m0s`.
 *
 * Returns: (transfer full): the duration
 */
gchar *
confab_http_response_format_duration(gint64 ms)
{
	gchar buf[DURATION_SIZE];

	return g_strdup(format_duration(buf, ms));
}

/* a header whose value is a number */
static void
add_number_header(ConfabHttpExchange *exchange, const gchar *name, guint64 value)
{
	gchar buf[24];

	buf[sizeof(buf) - 1] = '\0';
	confab_http_exchange_add_header(exchange,
					name,
					format_digits(buf + sizeof(buf) - 1, value));
}

/* x-ratelimit-@part-@what, in @buf of 48 bytes (without printf) */
static const gchar *
rate_header_name(gchar *buf, const gchar *part, const gchar *what)
{
	gsize a = strlen(part);
	gsize b = strlen(what);

	g_assert(12 + a + 1 + b < 48);
	memcpy(buf, "x-ratelimit-", 12);
	memcpy(buf + 12, part, a);
	buf[12 + a] = '-';
	memcpy(buf + 12 + a + 1, what, b + 1);
	return buf;
}

/* A per-minute rate's three headers: x-ratelimit-{limit,remaining,reset}-
 * @what (`requests` or `tokens`). */
static void
add_rate_headers(ConfabHttpExchange *exchange,
		 const gchar *what,
		 guint64 limit,
		 guint64 remaining,
		 gint64 reset_ms)
{
	gchar name[48];
	gchar reset[DURATION_SIZE];

	add_number_header(exchange, rate_header_name(name, "limit", what), limit);
	add_number_header(exchange, rate_header_name(name, "remaining", what), remaining);
	confab_http_exchange_add_header(exchange,
					rate_header_name(name, "reset", what),
					format_duration(reset, reset_ms));
}

/* When the rate or the turns in flight refused: when to come back. */
static void
add_retry_headers(ConfabHttpExchange *exchange, const ConfabQuotaInfo *info)
{
	gint64 ms = MAX(info->retry_after_ms, 0);

	add_number_header(exchange, "Retry-After", (guint64)(ms + 999) / 1000);
	add_number_header(exchange, "retry-after-ms", (guint64)ms);
}

/**
 * confab_http_response_add_quota_headers:
 * @exchange: the exchange
 * @info: the owner's quota and rate after this request
 *
 * Adds the x-ratelimit-*-requests headers, when a quota or a rate applies:
 * of the two, the one with fewer requests left (the rate on a tie; the
 * month while it refuses), and `Retry-After` with `retry-after-ms` when the
 * rate or the turns in flight refused the request; the x-ratelimit-*-tokens
 * headers when a tokens-per-minute rate applies.
 */
void
confab_http_response_add_quota_headers(ConfabHttpExchange *exchange, const ConfabQuotaInfo *info)
{
	gchar buf[32];

	if (info->tpm > 0)
		add_rate_headers(exchange,
				 "tokens",
				 info->tpm,
				 info->tpm_remaining,
				 info->tpm_reset_ms);
	if (info->retry_after_ms > 0)
		add_retry_headers(exchange, info);
	if (info->rpm > 0 && (info->retry_after_ms > 0 || info->limit == 0 ||
			      info->rate_remaining <= info->remaining)) {
		add_rate_headers(exchange,
				 "requests",
				 info->rpm,
				 info->rate_remaining,
				 info->rate_reset_ms);
		return;
	}
	if (info->limit == 0)
		return;
	add_number_header(exchange, "x-ratelimit-limit-requests", info->limit);
	add_number_header(exchange, "x-ratelimit-remaining-requests", info->remaining);
	/* whole seconds, as OpenAI's `6m0s` notation allows */
	buf[sizeof(buf) - 1] = '\0';
	buf[sizeof(buf) - 2] = 's';
	confab_http_exchange_add_header(
	    exchange,
	    "x-ratelimit-reset-requests",
	    format_digits(buf + sizeof(buf) - 2, (guint64)MAX(info->reset_seconds, 0)));
}

/* ---------- the access log ---------- */

/**
 * confab_http_response_log_set:
 * @exchange: a request being served
 * @owner: (nullable): the owner it acts for
 * @agent: (nullable): the agent it talks to
 * @session: (nullable): the session it is about
 *
 * Adds to what the access log says of @exchange.
 */
void
confab_http_response_log_set(ConfabHttpExchange *exchange,
			     const gchar *owner,
			     const gchar *agent,
			     const gchar *session)
{
	if (!confab_log_info_enabled(G_LOG_DOMAIN))
		return;
	confab_http_exchange_annotate(exchange, "owner", owner);
	confab_http_exchange_annotate(exchange, "agent", agent);
	confab_http_exchange_annotate(exchange, "session", session);
}

static const gchar *
note(ConfabHttpExchange *exchange, const gchar *key)
{
	const gchar *value = confab_http_exchange_get_annotation(exchange, key);
	return value != NULL ? value : "";
}

/**
 * confab_http_response_log_request:
 * @exchange: a request that is over
 * @completed: whether its response was sent, or the client went first
 *
 * Writes the access log's line: one structured journal entry per request
 * (never a secret, never a body).
 */
void
confab_http_response_log_request(ConfabHttpExchange *exchange, gboolean completed)
{
	const gchar *method = confab_http_exchange_get_method(exchange);
	const gchar *path = confab_http_exchange_get_path(exchange);
	const gchar *owner = note(exchange, "owner");
	const gchar *agent = note(exchange, "agent");
	const gchar *session = note(exchange, "session");
	guint status = confab_http_exchange_get_status(exchange);
	gdouble ms;

	if (!confab_log_info_enabled(G_LOG_DOMAIN))
		return;
	ms = (g_get_monotonic_time() - confab_http_exchange_get_start_time(exchange)) / 1000.0;
	g_log_structured(G_LOG_DOMAIN,
			 G_LOG_LEVEL_INFO,
			 "MESSAGE",
			 "%s %s %u %.1f ms%s%s%s%s%s%s%s",
			 method,
			 path,
			 status,
			 ms,
			 *owner != '\0' ? " owner=" : "",
			 owner,
			 *agent != '\0' ? " agent=" : "",
			 agent,
			 *session != '\0' ? " session=" : "",
			 session,
			 completed ? "" : " (client gone)",
			 "CONFAB_METHOD",
			 "%s",
			 method,
			 "CONFAB_PATH",
			 "%s",
			 path,
			 "CONFAB_STATUS",
			 "%u",
			 status,
			 "CONFAB_DURATION_MS",
			 "%.3f",
			 ms,
			 "CONFAB_OWNER",
			 "%s",
			 owner,
			 "CONFAB_AGENT",
			 "%s",
			 agent,
			 "CONFAB_SESSION",
			 "%s",
			 session);
}

/**
 * confab_http_response_add_target_headers:
 * @exchange: (nullable): a JSON answer; nothing is added once it was sent
 * @turn: its turn, run
 *
 * `x-confab-upstream` (the label of the target that answered, or was tried
 * last) and `x-confab-attempts` (the targets tried, over the turn's model
 * calls), once any model call ran.
 */
void
confab_http_response_add_target_headers(ConfabHttpExchange *exchange, ConfabTurn *turn)
{
	guint attempts = 0;
	const gchar *target = NULL;
	gchar buf[16];

	/* a background response was answered long before its turn ended */
	if (exchange == NULL || confab_http_exchange_has_responded(exchange))
		return;
	target = confab_turn_get_target(turn, NULL, &attempts);
	if (target == NULL)
		return;
	confab_http_exchange_add_header(exchange, "x-confab-upstream", target);
	g_snprintf(buf, sizeof(buf), "%u", attempts);
	confab_http_exchange_add_header(exchange, "x-confab-attempts", buf);
}

/**
 * confab_http_response_pending_list:
 * @exchange: the exchange
 * @items: what waits for a person (approvals, elicitations), oldest first
 * @max: at most this many are listed; a list read with one more says
 *   `has_more`
 * @append: writes one item
 *
 * Answers 200 with an OpenAI-style list `{"object":"list","data":[…],
 * "has_more":…}`.
 */
void
confab_http_response_pending_list(ConfabHttpExchange *exchange,
				  GPtrArray *items,
				  guint max,
				  ConfabHttpAppendFunc append)
{
	GString *out = g_string_new("{\"object\":\"list\",\"data\":[");

	for (guint i = 0; i < items->len && i < max; i++) {
		if (i > 0)
			g_string_append_c(out, ',');
		append(out, g_ptr_array_index(items, i));
	}
	g_string_append_printf(out, "],\"has_more\":%s}", items->len > max ? "true" : "false");
	confab_http_response_json(exchange, 200, g_string_free(out, FALSE));
}
