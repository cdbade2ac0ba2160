/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabHttp"

#include "config.h"

#include <string.h>

#include "core/confab-approvals.h"
#include "http/confab-http-conversations.h"
#include "http/confab-http-response.h"
#include "http/confab-http-responses.h"
#include "model/confab-id.h"
#include "openai/confab-list-params.h"
#include "openai/confab-responses-request.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * OpenAI's Conversations API on Confab's conversations (the sessions,
 * `cts_…`): POST /api/v1/conversations, GET/POST/DELETE
 * /api/v1/conversations/{id}, and the items of one: GET and POST
 * /conversations/{id}/items, GET and DELETE /conversations/{id}/items/{item}.
 *
 * Items are the Responses API's items, stored as the conversation's
 * messages: the Responses door's input parser makes them messages
 * (confab_responses_request_parse_items()) and its rendering shows
 * messages as items (confab_http_responses_message_items()). A message is
 * one item or, an answer, several: the first has the message's id, the
 * next ones the message's id and `_1`, `_2`… Deleting one of an
 * answer's items marks it deleted in the message's content blocks
 * (confab_http_responses_message_drop_item()): the others keep their
 * ids, and are what the next response's model is sent; deleting a
 * message's only item, or its last one left, deletes the message.
 *
 * An mcp_approval_response item that answers a pending approval asked in
 * the conversation decides it before anything is stored: one a turn waits
 * for (a chat completion's, or a D-Bus one's) as POST
 * /api/v1/approvals/{id} does, and that turn goes on; it holds the
 * conversation, so such items are not stored beside it (its answer records
 * the decisions). One a response asked is decided as its continuation
 * would (confab_approvals_answer_async()), the item stored, and the
 * conversation's next response runs the call, or not, as decided.
 *
 * Only the caller's own API conversations exist here (a bound token: its
 * agent's). Adding or deleting while a turn of the conversation runs is
 * 409 conversation_busy: the writer holds the session as a turn does.
 */

#define METADATA_MAX_PAIRS	 16
#define METADATA_MAX_KEY_CHARS	 64
#define METADATA_MAX_VALUE_CHARS 512
#define ITEM_INDEX_MAX		 100000

typedef enum {
	ACTION_GET,
	ACTION_UPDATE,
	ACTION_DELETE,
	ACTION_LIST_ITEMS,
	ACTION_ADD_ITEMS,
	ACTION_GET_ITEM,
	ACTION_DELETE_ITEM,
	ACTION_DELETE_MESSAGE, /* an item's whole message, once read */
} Action;

typedef struct {
	ConfabEngine *engine;	      /* owned */
	ConfabHttpExchange *exchange; /* owned */
	ConfabPrincipal *principal;   /* owned */
	Action action;
	gchar *session_id;	  /* owned */
	ConfabSession *session;	  /* owned, once read */
	gboolean held;		  /* the session, as a turn holds it */
	gchar *message_id;	  /* owned: the item's message, or the cursor's */
	guint item_index;	  /* the item within that message */
	gchar *metadata;	  /* owned: the new metadata (update) */
	ConfabChatRequest *items; /* owned: the items to add, as messages */
	ConfabOrder order;
	guint limit;
	GPtrArray *out;	      /* owned: item JSON, for lists */
	gboolean from_cursor; /* the next page starts with the cursor's message */
	GPtrArray *decisions; /* owned: per item, the approval it decides, or NULL */
	gboolean turn_runs;   /* a turn of the conversation runs (and waits) */
	guint next;	      /* the next item whose decision to make */
} ConvCtx;

static void
conv_ctx_free(ConvCtx *ctx)
{
	if (ctx->held)
		confab_store_release_session(confab_engine_get_store(ctx->engine), ctx->session_id);
	g_clear_object(&ctx->engine);
	g_clear_pointer(&ctx->exchange, confab_http_exchange_unref);
	g_clear_pointer(&ctx->principal, confab_principal_free);
	g_free(ctx->session_id);
	g_clear_object(&ctx->session);
	g_free(ctx->message_id);
	g_free(ctx->metadata);
	g_clear_pointer(&ctx->items, confab_chat_request_free);
	g_clear_pointer(&ctx->out, g_ptr_array_unref);
	g_clear_pointer(&ctx->decisions, g_ptr_array_unref);
	g_free(ctx);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConvCtx, conv_ctx_free)

static ConfabStore *
ctx_store(ConvCtx *ctx)
{
	return confab_engine_get_store(ctx->engine);
}

static gint64
now_seconds(void)
{
	return g_get_real_time() / G_USEC_PER_SEC;
}

/* Answers @error and frees @ctx (its session released). */
static void
fail_ctx(ConvCtx *ctx, const GError *error)
{
	confab_http_response_error(ctx->exchange, error);
	conv_ctx_free(ctx);
}

static GError *
conversation_not_found(const gchar *session_id)
{
	return g_error_new(CONFAB_ERROR,
			   CONFAB_ERROR_CONVERSATION_NOT_FOUND,
			   "No conversation '%s'",
			   session_id);
}

static GError *
item_not_found(const gchar *item_id, const gchar *session_id)
{
	return g_error_new(CONFAB_ERROR,
			   CONFAB_ERROR_ITEM_NOT_FOUND,
			   "No item '%s' in conversation '%s'",
			   item_id,
			   session_id);
}

/* ---------- items and their ids ---------- */

/* An item's id: its message's, and `_N` for the N-th item after the first. */
static gchar *
item_id(const gchar *message_id, guint index)
{
	if (index == 0)
		return g_strdup(message_id);
	return g_strdup_printf("%s_%u", message_id, index);
}

/* The message and the index of an item id; FALSE for no item id. */
static gboolean
parse_item_id(const gchar *id, gchar **message_id, guint *index)
{
	gsize len = strlen(CONFAB_PREFIX_MESSAGE) + CONFAB_ID_BODY_LEN;
	g_autofree gchar *message = NULL;
	guint64 n = 0;

	if (strlen(id) < len)
		return FALSE;
	message = g_strndup(id, len);
	if (!confab_id_is_valid(message, CONFAB_PREFIX_MESSAGE))
		return FALSE;
	if (id[len] != '\0' &&
	    (id[len] != '_' || id[len + 1] == '0' ||
	     !g_ascii_string_to_unsigned(id + len + 1, 10, 1, ITEM_INDEX_MAX, &n, NULL)))
		return FALSE;
	*message_id = g_steal_pointer(&message);
	*index = (guint)n;
	return TRUE;
}

#define ID_HEAD "{\"id\":"

/* The id an item's JSON starts with (every rendered item does), and in
 * *@rest what follows it; NULL for none. */
static gchar *
read_item_id(const gchar *item, const gchar **rest)
{
	gsize head = strlen(ID_HEAD);
	gsize used = 0;
	gchar *id;

	if (!g_str_has_prefix(item, ID_HEAD))
		return NULL;
	id = confab_json_read_string(item + head, strlen(item + head), &used);
	if (id != NULL && rest != NULL)
		*rest = item + head + used;
	return id;
}

/* The items of @message as JSON, with their conversation item ids; a
 * deleted one is NULL in its place. */
static GPtrArray *
message_items(ConfabMessage *message)
{
	return confab_http_responses_message_items(message, confab_message_get_id(message));
}

/* Moves @message's items to @out in the list's order (@desc), past the
 * cursor's item @cursor of it, or all for -1; deleted ones are none. */
static void
take_message_items(GPtrArray *out, ConfabMessage *message, gboolean desc, gint64 cursor)
{
	g_autoptr(GPtrArray) items = message_items(message);
	guint n = items->len;
	guint first = !desc && cursor >= 0 ? (guint)cursor + 1 : 0;
	guint end = desc && cursor >= 0 ? MIN((guint)cursor, n) : n;

	for (guint k = first; k < end; k++) {
		guint i = desc ? end - 1 - (k - first) : k;
		gpointer item = g_ptr_array_index(items, i);
		if (item == NULL)
			continue;
		g_ptr_array_index(items, i) = NULL;
		g_ptr_array_add(out, item);
	}
}

/* `{"object":"list","data":[…],"first_id":…,"last_id":…,"has_more":…}`;
 * the ids are read back from the items. */
static gchar *
items_list_json(GPtrArray *items, gboolean has_more)
{
	GString *out = g_string_new("{\"object\":\"list\",\"data\":[");
	g_autofree gchar *first = NULL;
	g_autofree gchar *last = NULL;

	for (guint i = 0; i < items->len; i++) {
		if (i > 0)
			g_string_append_c(out, ',');
		g_string_append(out, g_ptr_array_index(items, i));
	}
	if (items->len > 0) {
		first = read_item_id(g_ptr_array_index(items, 0), NULL);
		last = read_item_id(g_ptr_array_index(items, items->len - 1), NULL);
	}
	g_string_append(out, "],\"first_id\":");
	confab_json_append_string(out, first);
	g_string_append(out, ",\"last_id\":");
	confab_json_append_string(out, last);
	g_string_append_printf(out, ",\"has_more\":%s}", has_more ? "true" : "false");
	return g_string_free(out, FALSE);
}

/* ---------- conversations ---------- */

static gchar *
conversation_json(ConfabSession *session)
{
	const gchar *metadata = confab_session_get_metadata(session);
	GString *out = g_string_new("{\"id\":");

	confab_json_append_string(out, confab_session_get_id(session));
	g_string_append_printf(out,
			       ",\"object\":\"conversation\",\"created_at\":%" G_GINT64_FORMAT
			       ",\"metadata\":%s}",
			       confab_session_get_created_at(session),
			       metadata != NULL ? metadata : "{}");
	return g_string_free(out, FALSE);
}

/* `metadata`: at most 16 pairs of strings, keys up to 64 characters,
 * values up to 512; null is none. Returns it as stored, or NULL. */
static gboolean
check_metadata(JsonNode *node, gchar **out, GError **error)
{
	g_autoptr(GList) members = NULL;
	JsonObject *obj;

	*out = NULL;
	if (node == NULL || JSON_NODE_HOLDS_NULL(node))
		return TRUE;
	if (!JSON_NODE_HOLDS_OBJECT(node)) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "metadata",
				 "metadata must be an object of strings");
		return FALSE;
	}
	obj = json_node_get_object(node);
	if (json_object_get_size(obj) > METADATA_MAX_PAIRS) {
		confab_error_set_printf(error,
					CONFAB_ERROR_INVALID_VALUE,
					"metadata",
					"metadata may hold %d pairs at most",
					METADATA_MAX_PAIRS);
		return FALSE;
	}
	members = json_object_get_members(obj);
	for (GList *l = members; l != NULL; l = l->next) {
		JsonNode *value = json_object_get_member(obj, l->data);
		g_autofree gchar *param = g_strdup_printf("metadata.%s", (const gchar *)l->data);

		if (g_utf8_strlen(l->data, -1) > METADATA_MAX_KEY_CHARS) {
			confab_error_set_printf(error,
						CONFAB_ERROR_INVALID_VALUE,
						"metadata",
						"metadata keys may have %d characters at most",
						METADATA_MAX_KEY_CHARS);
			return FALSE;
		}
		if (!JSON_NODE_HOLDS_VALUE(value) ||
		    json_node_get_value_type(value) != G_TYPE_STRING) {
			confab_error_set(error,
					 CONFAB_ERROR_INVALID_VALUE,
					 param,
					 "metadata values must be strings");
			return FALSE;
		}
		if (g_utf8_strlen(json_node_get_string(value), -1) > METADATA_MAX_VALUE_CHARS) {
			confab_error_set_printf(error,
						CONFAB_ERROR_INVALID_VALUE,
						param,
						"metadata values may have %d characters at most",
						METADATA_MAX_VALUE_CHARS);
			return FALSE;
		}
	}
	*out = confab_json_to_string(node);
	return TRUE;
}

/* The body as a JSON object; NULL once the error is answered. */
static JsonNode *
parse_body(ConfabEngine *engine, ConfabHttpExchange *exchange)
{
	g_autoptr(GBytes) bytes = confab_http_exchange_steal_body(exchange);
	const ConfabConfig *config = confab_engine_get_config(engine);
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(GError) error = NULL;

	root = confab_json_parse(bytes != NULL ? g_bytes_get_data(bytes, NULL) : "",
				 bytes != NULL ? g_bytes_get_size(bytes) : 0,
				 config->max_json_depth,
				 &error);
	if (root != NULL && !JSON_NODE_HOLDS_OBJECT(root)) {
		g_clear_pointer(&root, json_node_unref);
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_JSON,
				 NULL,
				 "The request body must be a JSON object");
	}
	if (root == NULL)
		confab_http_response_error(exchange, error);
	return g_steal_pointer(&root);
}

static ConfabChatRequest *
parse_items(ConfabEngine *engine, JsonNode *items, GError **error)
{
	const ConfabConfig *config = confab_engine_get_config(engine);
	ConfabChatLimits limits = {config->max_json_depth,
				   config->max_files_per_message,
				   config->max_file_bytes};

	return confab_responses_request_parse_items(items, &limits, error);
}

/* The parsed items as messages of @session_id, with ids from now on. */
static GPtrArray *
take_messages(ConvCtx *ctx, const gchar *model, gint64 now)
{
	ConfabIdGenerator *ids = confab_engine_get_id_generator(ctx->engine);
	GPtrArray *messages = g_ptr_array_ref(ctx->items->messages);

	for (guint i = 0; i < messages->len; i++) {
		ConfabMessage *msg = g_ptr_array_index(messages, i);
		g_autofree gchar *id = confab_id_generator_next(ids, CONFAB_PREFIX_MESSAGE);

		confab_message_set_id(msg, id);
		confab_message_set_session_id(msg, ctx->session_id);
		confab_message_set_model(msg, model);
		confab_message_set_status(msg, CONFAB_MESSAGE_STATUS_COMPLETED);
		confab_message_set_created_at(msg, now);
	}
	return messages;
}

static GPtrArray *
messages_items(GPtrArray *messages)
{
	GPtrArray *items = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < messages->len; i++)
		take_message_items(items, g_ptr_array_index(messages, i), FALSE, -1);
	return items;
}

/* ---------- POST /conversations ---------- */

static void
created_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConvCtx) ctx = user_data;
	g_autoptr(GError) error = NULL;

	if (!confab_store_create_conversation_finish(CONFAB_STORE(source), result, &error)) {
		confab_http_response_error(ctx->exchange, error);
		return;
	}
	confab_http_response_json(ctx->exchange, 200, conversation_json(ctx->session));
}

/* The session POST /conversations creates: the caller's, of its bound
 * agent or of none yet, titled by its first user message. */
static ConfabSession *
new_session(ConvCtx *ctx, gint64 now)
{
	ConfabSession *session = confab_session_new();

	confab_session_set_id(session, ctx->session_id);
	confab_session_set_owner(session, ctx->principal->owner);
	confab_session_set_agent_id(session,
				    ctx->principal->agent_id != NULL ? ctx->principal->agent_id
								     : "");
	confab_session_set_source(session, CONFAB_SESSION_SOURCE_API);
	for (guint i = 0; ctx->items != NULL && i < ctx->items->messages->len; i++) {
		ConfabMessage *msg = g_ptr_array_index(ctx->items->messages, i);
		if (g_strcmp0(confab_message_get_role(msg), "user") == 0) {
			confab_session_set_title(session, g_ptr_array_index(ctx->items->titles, i));
			break;
		}
	}
	confab_session_set_created_at(session, now);
	confab_session_set_updated_at(session, now);
	confab_session_set_metadata(session, ctx->metadata);
	return session;
}

static ConvCtx *
conv_ctx_new(ConfabEngine *engine,
	     ConfabHttpExchange *exchange,
	     ConfabPrincipal *principal,
	     Action action,
	     const gchar *session_id)
{
	ConvCtx *ctx = g_new0(ConvCtx, 1);

	ctx->engine = g_object_ref(engine);
	ctx->exchange = confab_http_exchange_ref(exchange);
	ctx->principal = principal;
	ctx->action = action;
	ctx->session_id = g_strdup(session_id);
	return ctx;
}

/**
 * confab_http_conversations_create:
 * @engine: the engine
 * @exchange: a POST /api/v1/conversations `{items?, metadata?}`
 * @principal: (transfer full): who asks
 * @param: unused
 *
 * Creates a conversation, with its first items if any, in one go: a bad
 * item or metadata creates nothing.
 */
void
confab_http_conversations_create(ConfabEngine *engine,
				 ConfabHttpExchange *exchange,
				 ConfabPrincipal *principal,
				 const gchar *param)
{
	g_autoptr(ConvCtx) ctx = conv_ctx_new(engine, exchange, principal, ACTION_GET, NULL);
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(GPtrArray) messages = NULL;
	g_autoptr(GError) error = NULL;
	JsonObject *body;
	JsonNode *items;
	gint64 now = now_seconds();

	root = parse_body(engine, exchange);
	if (root == NULL)
		return;
	body = json_node_get_object(root);
	if (!check_metadata(json_object_get_member(body, "metadata"), &ctx->metadata, &error)) {
		confab_http_response_error(exchange, error);
		return;
	}
	items = json_object_get_member(body, "items");
	if (items != NULL && !JSON_NODE_HOLDS_NULL(items) &&
	    !(JSON_NODE_HOLDS_ARRAY(items) &&
	      json_array_get_length(json_node_get_array(items)) == 0)) {
		ctx->items = parse_items(engine, items, &error);
		if (ctx->items == NULL) {
			confab_http_response_error(exchange, error);
			return;
		}
	}
	ctx->session_id =
	    confab_id_generator_next(confab_engine_get_id_generator(engine), CONFAB_PREFIX_SESSION);
	ctx->session = new_session(ctx, now);
	/* the conversation and its items in one commit; nobody knows it yet:
	 * no turn to hold it against */
	if (ctx->items != NULL)
		messages = take_messages(ctx, confab_session_get_agent_id(ctx->session), now);
	confab_store_create_conversation_async(confab_engine_get_store(engine),
					       ctx->session,
					       messages,
					       NULL,
					       created_cb,
					       ctx);
	ctx = NULL; /* the callback's */
}

/* ---------- one conversation: read, update, delete ---------- */

static void
updated_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConvCtx) ctx = user_data;
	g_autoptr(GError) error = NULL;

	if (!confab_store_set_conversation_metadata_finish(CONFAB_STORE(source), result, &error)) {
		confab_http_response_error(ctx->exchange, error);
		return;
	}
	confab_session_set_metadata(ctx->session, ctx->metadata);
	confab_http_response_json(ctx->exchange, 200, conversation_json(ctx->session));
}

static void
deleted_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConvCtx) ctx = user_data;
	g_autoptr(GError) error = NULL;
	GString *out;

	if (!confab_store_delete_session_finish(CONFAB_STORE(source), result, &error)) {
		confab_http_response_error(ctx->exchange, error);
		return;
	}
	out = g_string_new("{\"id\":");
	confab_json_append_string(out, ctx->session_id);
	g_string_append(out, ",\"object\":\"conversation.deleted\",\"deleted\":true}");
	confab_http_response_json(ctx->exchange, 200, g_string_free(out, FALSE));
}

/* ---------- items ---------- */

static void
list_page(ConvCtx *ctx);

/* The first message of the first page is the cursor's: its items after
 * the cursor's come first. It is taken off the page. */
static gboolean
take_cursor(ConvCtx *ctx, ConfabStorePage *page, GError **error)
{
	ConfabMessage *msg = page->items->len > 0 ? g_ptr_array_index(page->items, 0) : NULL;

	ctx->from_cursor = FALSE;
	if (msg == NULL || g_strcmp0(confab_message_get_id(msg), ctx->message_id) != 0) {
		confab_error_set(error,
				 CONFAB_ERROR_INVALID_AFTER,
				 "after",
				 "after must be the id of an item of this conversation, taken "
				 "from first_id or last_id");
		return FALSE;
	}
	take_message_items(ctx->out, msg, ctx->order == CONFAB_ORDER_DESC, ctx->item_index);
	g_ptr_array_remove_index(page->items, 0);
	return TRUE;
}

static void
page_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConvCtx) ctx = user_data;
	g_autoptr(ConfabStorePage) page = NULL;
	g_autoptr(GError) error = NULL;
	gboolean desc = ctx->order == CONFAB_ORDER_DESC;

	page = confab_store_list_messages_finish(CONFAB_STORE(source), result, &error);
	if (page == NULL) {
		confab_http_response_error(ctx->exchange, error);
		return;
	}
	if (ctx->from_cursor && !take_cursor(ctx, page, &error)) {
		confab_http_response_error(ctx->exchange, error);
		return;
	}
	for (guint i = 0; i < page->items->len && ctx->out->len <= ctx->limit; i++) {
		ConfabMessage *msg = g_ptr_array_index(page->items, i);
		take_message_items(ctx->out, msg, desc, -1);
		g_free(ctx->message_id);
		ctx->message_id = g_strdup(confab_message_get_id(msg));
	}
	/* a page of answers without items (failed ones) is no page: on */
	if (ctx->out->len <= ctx->limit && page->has_more) {
		list_page(g_steal_pointer(&ctx));
		return;
	}
	if (ctx->out->len > ctx->limit) {
		g_ptr_array_set_size(ctx->out, ctx->limit);
		confab_http_response_json(ctx->exchange, 200, items_list_json(ctx->out, TRUE));
		return;
	}
	confab_http_response_json(ctx->exchange, 200, items_list_json(ctx->out, FALSE));
}

/* The messages after ctx->message_id (the cursor's), enough of them for
 * one more item than the page holds: whether more follow. */
static void
list_page(ConvCtx *ctx)
{
	g_auto(ConfabStoreMessageQuery) query = {NULL};

	query.session_id = g_strdup(ctx->session_id);
	query.after = g_strdup(ctx->message_id);
	query.order = ctx->order;
	query.from = ctx->from_cursor;
	query.limit = ctx->limit + 1 - ctx->out->len + (ctx->from_cursor ? 1 : 0);
	confab_store_list_messages_async(ctx_store(ctx), &query, NULL, page_cb, ctx);
}

static void
added_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConvCtx) ctx = user_data;
	g_autoptr(GPtrArray) items = NULL;
	g_autoptr(GError) error = NULL;

	if (!confab_store_append_messages_finish(CONFAB_STORE(source), result, &error)) {
		confab_http_response_error(ctx->exchange, error);
		return;
	}
	items = messages_items(ctx->items->messages);
	confab_http_response_json(ctx->exchange, 200, items_list_json(items, FALSE));
}

static void
item_deleted_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConvCtx) ctx = user_data;
	g_autoptr(GError) error = NULL;
	gboolean done =
	    ctx->action == ACTION_DELETE_MESSAGE
		? confab_store_delete_message_finish(CONFAB_STORE(source), result, &error)
		: confab_store_set_message_content_finish(CONFAB_STORE(source), result, &error);

	if (!done) {
		confab_http_response_error(ctx->exchange, error);
		return;
	}
	confab_http_response_json(ctx->exchange, 200, conversation_json(ctx->session));
}

/* Deletes the item of @msg that @ctx names: the message, when it is its
 * only item or last one left; else the item, marked deleted in the
 * message's content blocks. */
static void
delete_item(ConvCtx *ctx, ConfabMessage *msg)
{
	gboolean emptied = TRUE;

	confab_http_responses_message_drop_item(msg, ctx->item_index, &emptied);
	if (emptied) {
		ctx->action = ACTION_DELETE_MESSAGE;
		confab_store_delete_message_async(ctx_store(ctx),
						  ctx->session_id,
						  ctx->message_id,
						  NULL,
						  item_deleted_cb,
						  ctx);
		return;
	}
	confab_store_set_message_content_async(ctx_store(ctx),
					       ctx->session_id,
					       ctx->message_id,
					       confab_message_get_content(msg),
					       confab_message_get_content_blocks(msg),
					       NULL,
					       item_deleted_cb,
					       ctx);
}

/* The item's message: answered (GET), or deleted (DELETE). */
static void
item_message_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConvCtx) ctx = user_data;
	g_autoptr(ConfabMessage) msg = NULL;
	g_autoptr(GPtrArray) items = NULL;
	g_autoptr(GError) error = NULL;
	g_autofree gchar *id = NULL;

	msg = confab_store_get_message_finish(CONFAB_STORE(source), result, &error);
	if (msg != NULL)
		items = message_items(msg);
	if (msg == NULL || ctx->item_index >= items->len ||
	    g_ptr_array_index(items, ctx->item_index) == NULL) {
		id = item_id(ctx->message_id, ctx->item_index);
		g_clear_error(&error);
		error = item_not_found(id, ctx->session_id);
		confab_http_response_error(ctx->exchange, error);
		return;
	}
	if (ctx->action == ACTION_GET_ITEM) {
		confab_http_response_json(ctx->exchange,
					  200,
					  g_strdup(g_ptr_array_index(items, ctx->item_index)));
		return;
	}
	delete_item(ctx, msg);
	ctx = NULL; /* the callback's */
}

/* ---------- mcp_approval_response items: decisions ---------- */

static void
hold(ConvCtx *ctx);

static void
decide_next(ConvCtx *ctx);

static void
decided_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConvCtx *ctx = user_data;
	g_autoptr(ConfabApproval) decided = NULL;
	g_autoptr(GError) error = NULL;

	decided = confab_approvals_decide_finish(CONFAB_APPROVALS(source), result, &error);
	if (decided == NULL) {
		fail_ctx(ctx, error);
		return;
	}
	decide_next(ctx);
}

/* The items added while a turn waits for their decisions: answered as
 * they stand, not stored (the turn's answer records the decisions). */
static void
answer_decided(ConvCtx *ctx)
{
	g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func(g_free);

	for (guint i = 0; i < ctx->items->messages->len; i++)
		take_message_items(items, g_ptr_array_index(ctx->items->messages, i), FALSE, -1);
	confab_http_response_json(ctx->exchange, 200, items_list_json(items, FALSE));
	conv_ctx_free(ctx);
}

/* Decides, in order, the approvals that the items answer (as POST
 * /api/v1/approvals/{id}, by "api"); then stores the items, or, while
 * the turn that waited runs, answers them. */
static void
decide_next(ConvCtx *ctx)
{
	GPtrArray *messages = ctx->items->messages;
	g_autoptr(JsonObject) block = NULL;
	ConfabApproval *approval;

	while (ctx->next < messages->len && g_ptr_array_index(ctx->decisions, ctx->next) == NULL)
		ctx->next++;
	if (ctx->next == messages->len) {
		if (ctx->turn_runs)
			answer_decided(ctx);
		else
			hold(ctx);
		return;
	}
	approval = g_ptr_array_index(ctx->decisions, ctx->next);
	block = confab_http_responses_message_decision(g_ptr_array_index(messages, ctx->next));
	ctx->next++;
	/* a response's request: the next response of the conversation runs
	 * the call, or not, as decided here */
	if (approval->response_id != NULL) {
		confab_approvals_answer_async(
		    confab_engine_get_approvals(ctx->engine),
		    approval->id,
		    ctx->principal->owner,
		    approval->response_id,
		    json_object_get_boolean_member_with_default(block, "approve", FALSE),
		    json_object_get_string_member_with_default(block, "reason", NULL),
		    decided_cb,
		    ctx);
		return;
	}
	confab_approvals_decide_async(
	    confab_engine_get_approvals(ctx->engine),
	    approval->id,
	    ctx->principal->owner,
	    ctx->principal->agent_id,
	    json_object_get_boolean_member_with_default(block, "approve", FALSE),
	    json_object_get_string_member_with_default(block, "reason", NULL),
	    "api",
	    decided_cb,
	    ctx);
}

/* Whether @approval is one an item of this conversation decides: the
 * caller's, pending, and asked in this conversation by a turn that waits
 * for it, or by a response (not while a turn runs: the item is stored).
 * Any other is a record only. */
static gboolean
decides(ConvCtx *ctx, const ConfabApproval *approval)
{
	return approval != NULL && g_strcmp0(approval->owner, ctx->principal->owner) == 0 &&
	       (ctx->principal->agent_id == NULL ||
		g_strcmp0(approval->agent_id, ctx->principal->agent_id) == 0) &&
	       g_strcmp0(approval->session_id, ctx->session_id) == 0 &&
	       approval->state == CONFAB_APPROVAL_STATE_PENDING &&
	       (approval->response_id == NULL || !ctx->turn_runs);
}

static void
read_decisions(ConvCtx *ctx);

static void
decision_read_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConvCtx *ctx = user_data;
	g_autoptr(ConfabApproval) approval = NULL;
	g_autoptr(GError) error = NULL;

	approval = confab_store_get_approval_finish(CONFAB_STORE(source), result, &error);
	if (approval == NULL &&
	    !g_error_matches(error, CONFAB_ERROR, CONFAB_ERROR_APPROVAL_NOT_FOUND)) {
		fail_ctx(ctx, error);
		return;
	}
	g_ptr_array_add(ctx->decisions, decides(ctx, approval) ? g_steal_pointer(&approval) : NULL);
	read_decisions(ctx);
}

/* Reads, item after item, the approval each mcp_approval_response item
 * names; then decides. While a turn runs, every item must decide what
 * it waits for: else 409 conversation_busy, before anything is decided. */
static void
read_decisions(ConvCtx *ctx)
{
	guint n = ctx->items->messages->len;

	for (guint i = ctx->decisions->len; i < n; i++) {
		g_autoptr(JsonObject) block = confab_http_responses_message_decision(
		    g_ptr_array_index(ctx->items->messages, i));
		const gchar *id = block != NULL ? confab_json_get_string(block, "id") : NULL;

		if (id != NULL && confab_id_is_valid(id, CONFAB_PREFIX_APPROVAL)) {
			confab_store_get_approval_async(ctx_store(ctx),
							id,
							NULL,
							decision_read_cb,
							ctx);
			return;
		}
		g_ptr_array_add(ctx->decisions, NULL);
	}
	for (guint i = 0; ctx->turn_runs && i < n; i++) {
		if (g_ptr_array_index(ctx->decisions, i) == NULL) {
			g_autoptr(GError) busy = g_error_new_literal(
			    CONFAB_ERROR,
			    CONFAB_ERROR_CONVERSATION_BUSY,
			    "A turn is running in this conversation: while it runs, items may "
			    "only decide the approvals it waits for; retry when it has finished");
			fail_ctx(ctx, busy);
			return;
		}
	}
	decide_next(ctx);
}

static void
running_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConvCtx *ctx = user_data;
	g_autoptr(GError) error = NULL;

	if (!confab_store_session_is_running_finish(CONFAB_STORE(source),
						    result,
						    &ctx->turn_runs,
						    &error)) {
		fail_ctx(ctx, error);
		return;
	}
	ctx->decisions = g_ptr_array_new_with_free_func((GDestroyNotify)confab_approval_free);
	read_decisions(ctx);
}

/* ---------- what each does, once the conversation is the caller's ---------- */

/* Writes that change the conversation's messages, or remove it, hold it
 * as a turn does: never while one runs. */
static void
run_held(ConvCtx *ctx);

static void
held_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConvCtx *ctx = user_data;
	g_autoptr(GError) error = NULL;

	if (!confab_store_acquire_session_finish(CONFAB_STORE(source), result, &error)) {
		fail_ctx(ctx, error);
		return;
	}
	ctx->held = TRUE;
	run_held(ctx);
}

static void
hold(ConvCtx *ctx)
{
	ConfabStore *store = ctx_store(ctx);
	g_autoptr(GError) error = NULL;

	if (!confab_store_answers_now(store)) {
		confab_store_acquire_session_async(store, ctx->session_id, NULL, held_cb, ctx);
		return;
	}
	if (!confab_store_acquire_session_now(store, ctx->session_id, &error)) {
		fail_ctx(ctx, error);
		return;
	}
	ctx->held = TRUE;
	run_held(ctx);
}

static void
run_held(ConvCtx *ctx)
{
	ConfabStore *store = ctx_store(ctx);
	g_autoptr(GPtrArray) messages = NULL;

	switch (ctx->action) {
	case ACTION_DELETE:
		confab_store_delete_session_async(store, ctx->session_id, NULL, deleted_cb, ctx);
		return;
	case ACTION_ADD_ITEMS: {
		gint64 now = now_seconds();
		messages = take_messages(ctx, confab_session_get_agent_id(ctx->session), now);
		confab_store_append_messages_async(store,
						   ctx->session_id,
						   messages,
						   now,
						   NULL,
						   added_cb,
						   ctx);
		return;
	}
	case ACTION_DELETE_ITEM:
		confab_store_get_message_async(store,
					       ctx->session_id,
					       ctx->message_id,
					       NULL,
					       item_message_cb,
					       ctx);
		return;
	default:
		g_assert_not_reached();
	}
}

static void
run(ConvCtx *ctx)
{
	ConfabStore *store = ctx_store(ctx);

	switch (ctx->action) {
	case ACTION_GET:
		confab_http_response_json(ctx->exchange, 200, conversation_json(ctx->session));
		conv_ctx_free(ctx);
		return;
	case ACTION_UPDATE:
		confab_store_set_conversation_metadata_async(store,
							     ctx->session_id,
							     ctx->metadata,
							     now_seconds(),
							     NULL,
							     updated_cb,
							     ctx);
		return;
	case ACTION_LIST_ITEMS:
		/* the cursor's message is the first of the first page */
		ctx->out = g_ptr_array_new_with_free_func(g_free);
		ctx->from_cursor = ctx->message_id != NULL;
		list_page(ctx);
		return;
	case ACTION_GET_ITEM:
		confab_store_get_message_async(store,
					       ctx->session_id,
					       ctx->message_id,
					       NULL,
					       item_message_cb,
					       ctx);
		return;
	case ACTION_ADD_ITEMS:
		/* its mcp_approval_response items first decide what they answer */
		confab_store_session_is_running_async(store,
						      ctx->session_id,
						      NULL,
						      running_cb,
						      ctx);
		return;
	case ACTION_DELETE:
	case ACTION_DELETE_ITEM:
		hold(ctx);
		return;
	case ACTION_DELETE_MESSAGE:
		g_assert_not_reached();
	}
}

/* Someone else's, a channel's, or (for a bound token) another agent's
 * conversation does not exist. */
static void
session_cb(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConvCtx *ctx = user_data;
	ConfabPrincipal *principal = ctx->principal;
	g_autoptr(GError) error = NULL;

	ctx->session = confab_store_get_session_finish(CONFAB_STORE(source), result, &error);
	if (ctx->session == NULL) {
		fail_ctx(ctx, error);
		return;
	}
	if (g_strcmp0(confab_session_get_owner(ctx->session), principal->owner) != 0 ||
	    confab_session_get_source(ctx->session) != CONFAB_SESSION_SOURCE_API ||
	    (principal->agent_id != NULL &&
	     g_strcmp0(confab_session_get_agent_id(ctx->session), principal->agent_id) != 0)) {
		g_autoptr(GError) missing = conversation_not_found(ctx->session_id);
		fail_ctx(ctx, missing);
		return;
	}
	run(ctx);
}

/* Reads the conversation, then runs what @ctx asks. */
static void
begin(ConvCtx *ctx)
{
	if (!confab_id_is_valid(ctx->session_id, CONFAB_PREFIX_SESSION)) {
		g_autoptr(GError) error = conversation_not_found(ctx->session_id);
		fail_ctx(ctx, error);
		return;
	}
	confab_store_get_session_async(ctx_store(ctx), ctx->session_id, NULL, session_cb, ctx);
}

/* ---------- the routes ---------- */

/**
 * confab_http_conversations_get:
 * @engine: the engine
 * @exchange: a GET /api/v1/conversations/{id}
 * @principal: (transfer full): who asks
 * @session_id: the conversation's id, from the path
 */
void
confab_http_conversations_get(ConfabEngine *engine,
			      ConfabHttpExchange *exchange,
			      ConfabPrincipal *principal,
			      const gchar *session_id)
{
	begin(conv_ctx_new(engine, exchange, principal, ACTION_GET, session_id));
}

/**
 * confab_http_conversations_update:
 * @engine: the engine
 * @exchange: a POST /api/v1/conversations/{id} `{metadata}`
 * @principal: (transfer full): who asks
 * @session_id: the conversation's id, from the path
 *
 * Replaces the conversation's metadata.
 */
void
confab_http_conversations_update(ConfabEngine *engine,
				 ConfabHttpExchange *exchange,
				 ConfabPrincipal *principal,
				 const gchar *session_id)
{
	g_autoptr(ConvCtx) ctx =
	    conv_ctx_new(engine, exchange, principal, ACTION_UPDATE, session_id);
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(GError) error = NULL;
	JsonNode *metadata;

	root = parse_body(engine, exchange);
	if (root == NULL)
		return;
	metadata = json_object_get_member(json_node_get_object(root), "metadata");
	if (metadata == NULL) {
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_VALUE,
				 "metadata",
				 "metadata is required: the conversation's new metadata");
		confab_http_response_error(exchange, error);
		return;
	}
	if (!check_metadata(metadata, &ctx->metadata, &error)) {
		confab_http_response_error(exchange, error);
		return;
	}
	begin(g_steal_pointer(&ctx));
}

/**
 * confab_http_conversations_delete:
 * @engine: the engine
 * @exchange: a DELETE /api/v1/conversations/{id}
 * @principal: (transfer full): who asks
 * @session_id: the conversation's id, from the path
 *
 * Deletes the conversation and its messages (409 while a turn of it runs).
 */
void
confab_http_conversations_delete(ConfabEngine *engine,
				 ConfabHttpExchange *exchange,
				 ConfabPrincipal *principal,
				 const gchar *session_id)
{
	begin(conv_ctx_new(engine, exchange, principal, ACTION_DELETE, session_id));
}

/**
 * confab_http_conversations_list_items:
 * @engine: the engine
 * @exchange: a GET /api/v1/conversations/{id}/items (`after`, `limit`,
 *   `order`, default desc; `include` is accepted and changes nothing)
 * @principal: (transfer full): who asks
 * @session_id: the conversation's id, from the path
 *
 * Lists the conversation's items a page at a time.
 */
void
confab_http_conversations_list_items(ConfabEngine *engine,
				     ConfabHttpExchange *exchange,
				     ConfabPrincipal *principal,
				     const gchar *session_id)
{
	g_autoptr(ConvCtx) ctx =
	    conv_ctx_new(engine, exchange, principal, ACTION_LIST_ITEMS, session_id);
	g_auto(ConfabListParams) params = {NULL};
	g_autoptr(GError) error = NULL;

	if (!confab_list_params_parse(confab_http_exchange_get_query(exchange),
				      NULL,
				      &params,
				      &error)) {
		confab_http_response_error(exchange, error);
		return;
	}
	if (params.after != NULL &&
	    !parse_item_id(params.after, &ctx->message_id, &ctx->item_index)) {
		confab_error_set(&error,
				 CONFAB_ERROR_INVALID_AFTER,
				 "after",
				 "after must be the id of an item of this conversation, taken from "
				 "first_id or last_id");
		confab_http_response_error(exchange, error);
		return;
	}
	ctx->order = params.order;
	ctx->limit = params.limit;
	begin(g_steal_pointer(&ctx));
}

/**
 * confab_http_conversations_add_items:
 * @engine: the engine
 * @exchange: a POST /api/v1/conversations/{id}/items `{items}`
 * @principal: (transfer full): who asks
 * @session_id: the conversation's id, from the path
 *
 * Adds up to 1,000 items, all in one commit or none.
 */
void
confab_http_conversations_add_items(ConfabEngine *engine,
				    ConfabHttpExchange *exchange,
				    ConfabPrincipal *principal,
				    const gchar *session_id)
{
	g_autoptr(ConvCtx) ctx =
	    conv_ctx_new(engine, exchange, principal, ACTION_ADD_ITEMS, session_id);
	g_autoptr(JsonNode) root = NULL;
	g_autoptr(GError) error = NULL;

	root = parse_body(engine, exchange);
	if (root == NULL)
		return;
	ctx->items = parse_items(engine,
				 json_object_get_member(json_node_get_object(root), "items"),
				 &error);
	if (ctx->items == NULL) {
		confab_http_response_error(exchange, error);
		return;
	}
	begin(g_steal_pointer(&ctx));
}

/* "cts_…/item" from the path: the conversation and the item. */
static ConvCtx *
item_ctx_new(ConfabEngine *engine,
	     ConfabHttpExchange *exchange,
	     ConfabPrincipal *principal,
	     Action action,
	     const gchar *ids)
{
	const gchar *slash = strchr(ids, '/');
	g_autofree gchar *session_id =
	    g_strndup(ids, slash != NULL ? (gsize)(slash - ids) : strlen(ids));
	g_autoptr(ConvCtx) ctx = conv_ctx_new(engine, exchange, principal, action, session_id);

	if (slash == NULL || !parse_item_id(slash + 1, &ctx->message_id, &ctx->item_index)) {
		g_autoptr(GError) error =
		    item_not_found(slash != NULL ? slash + 1 : "", ctx->session_id);
		confab_http_response_error(exchange, error);
		return NULL;
	}
	return g_steal_pointer(&ctx);
}

/**
 * confab_http_conversations_get_item:
 * @engine: the engine
 * @exchange: a GET /api/v1/conversations/{id}/items/{item_id}
 * @principal: (transfer full): who asks
 * @ids: the conversation's and the item's id, from the path, as `id/item_id`
 */
void
confab_http_conversations_get_item(ConfabEngine *engine,
				   ConfabHttpExchange *exchange,
				   ConfabPrincipal *principal,
				   const gchar *ids)
{
	ConvCtx *ctx = item_ctx_new(engine, exchange, principal, ACTION_GET_ITEM, ids);

	if (ctx != NULL)
		begin(ctx);
}

/**
 * confab_http_conversations_delete_item:
 * @engine: the engine
 * @exchange: a DELETE /api/v1/conversations/{id}/items/{item_id}
 * @principal: (transfer full): who asks
 * @ids: the conversation's and the item's id, from the path, as `id/item_id`
 *
 * Deletes the item (its message, when it is the message's only item);
 * answers with the conversation.
 */
void
confab_http_conversations_delete_item(ConfabEngine *engine,
				      ConfabHttpExchange *exchange,
				      ConfabPrincipal *principal,
				      const gchar *ids)
{
	ConvCtx *ctx = item_ctx_new(engine, exchange, principal, ACTION_DELETE_ITEM, ids);

	if (ctx != NULL)
		begin(ctx);
}
