/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabStore"

#include "config.h"

#include "store/confab-store-call.h"

/* ---------- calls ---------- */

static GDestroyNotify
item_free(ConfabStoreCall *call)
{
	return call->op->free != NULL ? call->op->free : g_object_unref;
}

static void
arg_clear(ConfabStoreArg *arg)
{
	g_clear_pointer(&arg->text, g_free);
	g_clear_pointer(&arg->bytes, g_bytes_unref);
}

/**
 * confab_store_call_new:
 * @op: the operation, a static description
 *
 * Returns: (transfer full): a call of @op without arguments yet
 */
ConfabStoreCall *
confab_store_call_new(const ConfabStoreOp *op)
{
	ConfabStoreCall *call = g_new0(ConfabStoreCall, 1);

	call->op = op;
	call->args = g_array_new(FALSE, TRUE, sizeof(ConfabStoreArg));
	g_array_set_clear_func(call->args, (GDestroyNotify)arg_clear);
	return call;
}

static void
call_clear_result(ConfabStoreCall *call)
{
	if (call->result == NULL)
		return;
	switch (call->op->rows) {
	case CONFAB_STORE_ROWS_LIST:
		g_ptr_array_unref(call->result);
		break;
	case CONFAB_STORE_ROWS_ONE:
	case CONFAB_STORE_ROWS_WRITTEN:
		item_free(call)(call->result);
		break;
	case CONFAB_STORE_ROWS_PAGE:
		confab_store_page_free(call->result);
		break;
	case CONFAB_STORE_ROWS_NONE:
		break;
	}
	call->result = NULL;
}

void
confab_store_call_free(ConfabStoreCall *call)
{
	if (call == NULL)
		return;
	call_clear_result(call);
	g_clear_error(&call->error);
	g_array_unref(call->args);
	g_free(call->sql);
	g_free(call);
}

/* Adds `$n`, the next argument: @text copied, %NULL for SQL NULL. */
void
confab_store_call_add_text(ConfabStoreCall *call, const gchar *text)
{
	ConfabStoreArg arg = {CONFAB_STORE_ARG_TEXT, g_strdup(text), 0, NULL};
	g_array_append_val(call->args, arg);
}

void
confab_store_call_add_int(ConfabStoreCall *call, gint64 value)
{
	ConfabStoreArg arg = {CONFAB_STORE_ARG_INT, NULL, value, NULL};
	g_array_append_val(call->args, arg);
}

void
confab_store_call_add_bytes(ConfabStoreCall *call, GBytes *bytes)
{
	ConfabStoreArg arg = {CONFAB_STORE_ARG_BYTES, NULL, 0, g_bytes_ref(bytes)};
	g_array_append_val(call->args, arg);
}

/* Adds `$n`: the instance that runs the call, as the backend knows it. */
void
confab_store_call_add_instance(ConfabStoreCall *call)
{
	ConfabStoreArg arg = {CONFAB_STORE_ARG_INSTANCE, NULL, 0, NULL};
	g_array_append_val(call->args, arg);
}

/* This call's own statement (transfer full), for an op built per call
 * from constant fragments: values are still bound, never written in. */
void
confab_store_call_set_sql(ConfabStoreCall *call, gchar *sql)
{
	g_free(call->sql);
	call->sql = sql;
}

/* The statement to run in the dialect @sqlite or PostgreSQL's. */
const gchar *
confab_store_call_get_sql(ConfabStoreCall *call, gboolean sqlite)
{
	if (call->sql != NULL)
		return call->sql;
	if (sqlite && call->op->sql_sqlite != NULL)
		return call->op->sql_sqlite;
	return call->op->sql;
}

guint
confab_store_call_get_n_args(ConfabStoreCall *call)
{
	return call->args->len;
}

const ConfabStoreArg *
confab_store_call_get_arg(ConfabStoreCall *call, guint index)
{
	return &g_array_index(call->args, ConfabStoreArg, index);
}

/* Whether @call writes: a backend runs it in its writer, or on its
 * primary. */
gboolean
confab_store_call_writes(ConfabStoreCall *call)
{
	return call->op->rows == CONFAB_STORE_ROWS_NONE ||
	       call->op->rows == CONFAB_STORE_ROWS_WRITTEN;
}

/**
 * confab_store_call_add_row:
 * @call: a read's call
 * @row: its next row
 *
 * Maps @row into the call's result.
 *
 * Returns: whether the call wants another row
 */
gboolean
confab_store_call_add_row(ConfabStoreCall *call, ConfabStoreRow *row)
{
	ConfabStorePage *page;

	switch (call->op->rows) {
	case CONFAB_STORE_ROWS_LIST:
		if (call->result == NULL)
			call->result = g_ptr_array_new_with_free_func(item_free(call));
		g_ptr_array_add(call->result, call->op->map(row));
		return TRUE;
	case CONFAB_STORE_ROWS_ONE:
		call->result = call->op->map(row);
		return FALSE;
	case CONFAB_STORE_ROWS_WRITTEN:
		/* a writer that runs its batch again reads the row again */
		call_clear_result(call);
		g_clear_error(&call->error);
		call->result = call->op->map(row);
		if (call->op->verdict != NULL &&
		    !call->op->verdict(call, row, call->result, &call->error))
			call_clear_result(call);
		return FALSE;
	case CONFAB_STORE_ROWS_PAGE:
		if (call->result == NULL)
			call->result = confab_store_page_new();
		page = call->result;
		if (page->items->len == call->limit) {
			page->has_more = TRUE;
			return FALSE;
		}
		g_ptr_array_add(page->items, call->op->map(row));
		return TRUE;
	case CONFAB_STORE_ROWS_NONE:
		break;
	}
	return FALSE;
}

static GError *
missing_error(ConfabStoreCall *call)
{
	const gchar *first = call->args->len > 0 ? confab_store_call_get_arg(call, 0)->text : NULL;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	return g_error_new(CONFAB_ERROR,
			   call->op->missing,
			   call->op->missing_format,
			   first != NULL ? first : "");
#pragma GCC diagnostic pop
}

/**
 * confab_store_call_steal_result:
 * @call: a read whose rows were all added
 * @error: the op's missing error, for %CONFAB_STORE_ROWS_ONE or
 *   %CONFAB_STORE_ROWS_WRITTEN without a row; the op's verdict's
 *   error of its row
 *
 * Returns: (transfer full): what the rows made, as the op returns it (an
 *   empty list or page for no rows), freed with
 *   confab_store_call_get_result_free()
 */
gpointer
confab_store_call_steal_result(ConfabStoreCall *call, GError **error)
{
	gpointer result = g_steal_pointer(&call->result);

	if (result != NULL)
		return result;
	if (call->error != NULL) {
		g_propagate_error(error, g_steal_pointer(&call->error));
		return NULL;
	}
	switch (call->op->rows) {
	case CONFAB_STORE_ROWS_LIST:
		return g_ptr_array_new_with_free_func(item_free(call));
	case CONFAB_STORE_ROWS_PAGE:
		return confab_store_page_new();
	case CONFAB_STORE_ROWS_ONE:
	case CONFAB_STORE_ROWS_NONE:
	case CONFAB_STORE_ROWS_WRITTEN:
		break;
	}
	g_propagate_error(error, missing_error(call));
	return NULL;
}

GDestroyNotify
confab_store_call_get_result_free(ConfabStoreCall *call)
{
	switch (call->op->rows) {
	case CONFAB_STORE_ROWS_LIST:
		return (GDestroyNotify)g_ptr_array_unref;
	case CONFAB_STORE_ROWS_PAGE:
		return (GDestroyNotify)confab_store_page_free;
	case CONFAB_STORE_ROWS_ONE:
	case CONFAB_STORE_ROWS_WRITTEN:
		return item_free(call);
	case CONFAB_STORE_ROWS_NONE:
		break;
	}
	return NULL;
}

/**
 * confab_store_call_check_changed:
 * @call: a write whose statement ran
 * @changed_rows: the rows it changed
 * @error: the op's missing error, when it has one and no row changed
 *
 * Returns: whether the write did what it was for
 */
gboolean
confab_store_call_check_changed(ConfabStoreCall *call, gint64 changed_rows, GError **error)
{
	if (call->op->missing != 0 && changed_rows == 0) {
		g_propagate_error(error, missing_error(call));
		return FALSE;
	}
	return TRUE;
}
