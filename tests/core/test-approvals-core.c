/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "confab-test-helper.h"
#include "core/confab-approvals.h"
#include "store/sqlite/confab-store-sqlite.h"
#include "util/confab-error.h"

/*
 * ConfabApprovals over a SQLite store: create stores a pending approval;
 * a wait ends with the decision made in this process (woken at once, also
 * from another thread), with one the store got by another path (the poll,
 * as from another instance), with the timeout, or with expire_all(); the
 * first decision stands; the owner is checked.
 */

typedef struct {
	gchar *dir;
	ConfabStore *store;
	ConfabIdGenerator *ids;
	ConfabMetrics *metrics;
	ConfabApprovals *approvals;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
	g_autoptr(GError) error = NULL;
	g_autofree gchar *path = NULL;

	f->dir = confab_test_make_tmpdir("approvals-unit");
	path = g_build_filename(f->dir, "confab.db", NULL);
	f->store = CONFAB_STORE(confab_store_sqlite_new(path, 1, &error));
	g_assert_no_error(error);
	f->ids = confab_id_generator_new();
	f->metrics = confab_metrics_new();
	f->approvals = confab_approvals_new(f->store, f->ids, f->metrics, GPOINTER_TO_UINT(data));
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
	g_clear_object(&f->approvals);
	confab_store_close(f->store);
	g_clear_object(&f->store);
	g_clear_object(&f->ids);
	g_clear_object(&f->metrics);
	confab_test_rm_rf(f->dir);
	g_free(f->dir);
}

static void
on_result(GObject *source, GAsyncResult *result, gpointer user_data)
{
	GAsyncResult **slot = user_data;
	*slot = g_object_ref(result);
}

static GAsyncResult *
wait_for(GAsyncResult **slot, guint timeout_ms)
{
	gint64 deadline = g_get_monotonic_time() + timeout_ms * 1000;

	while (*slot == NULL) {
		if (g_get_monotonic_time() > deadline)
			g_error("no result within %u ms", timeout_ms);
		g_main_context_iteration(NULL, FALSE);
		g_usleep(1000);
	}
	return g_steal_pointer(slot);
}

static ConfabApproval *
create(Fixture *f, const gchar *owner)
{
	g_autoptr(ConfabApproval) request = confab_approval_new();
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;
	ConfabApproval *approval;

	request->owner = g_strdup(owner);
	request->agent_id = g_strdup("agt_x");
	request->session_id = g_strdup("cts_x");
	request->server = g_strdup("files");
	request->tool = g_strdup("write_file");
	request->name = g_strdup("files__write_file");
	request->arguments = g_strdup("{}");
	request->tool_call_id = g_strdup("call_1");
	confab_approvals_create_async(f->approvals, request, on_result, &slot);
	res = wait_for(&slot, 10000);
	approval = confab_approvals_create_finish(f->approvals, res, &error);
	g_assert_no_error(error);
	g_assert_true(g_str_has_prefix(approval->id, "mcpr_"));
	g_assert_cmpint(approval->state, ==, CONFAB_APPROVAL_STATE_PENDING);
	return approval;
}

static ConfabApproval *
decide(Fixture *f, const gchar *id, const gchar *owner, gboolean approve, GError **error)
{
	g_autoptr(GAsyncResult) res = NULL;
	GAsyncResult *slot = NULL;

	confab_approvals_decide_async(f->approvals,
				      id,
				      owner,
				      NULL,
				      approve,
				      "why",
				      "api",
				      on_result,
				      &slot);
	res = wait_for(&slot, 10000);
	return confab_approvals_decide_finish(f->approvals, res, error);
}

/* A decision in this process wakes the waiter at once; a second one is
 * refused; another owner's and unknown ids are not found. */
static void
test_decide_wakes(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabApproval) approval = create(f, "alice");
	g_autoptr(ConfabApproval) decided = NULL;
	g_autoptr(ConfabApproval) waited = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;

	confab_approvals_wait_async(f->approvals, approval, on_result, &slot);
	g_assert_cmpuint(confab_approvals_get_n_waiting(f->approvals), ==, 1);
	g_assert_null(decide(f, approval->id, "bob", TRUE, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_APPROVAL_NOT_FOUND);
	g_clear_error(&error);
	g_assert_null(decide(f, "mcpr_bad", "alice", TRUE, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_APPROVAL_NOT_FOUND);
	g_clear_error(&error);
	g_assert_null(slot);
	decided = decide(f, approval->id, "alice", FALSE, &error);
	g_assert_no_error(error);
	res = wait_for(&slot, 200); /* well before the next poll */
	waited = confab_approvals_wait_finish(f->approvals, res, &error);
	g_assert_no_error(error);
	g_assert_cmpint(waited->state, ==, CONFAB_APPROVAL_STATE_DENIED);
	g_assert_cmpstr(waited->decided_by, ==, "api");
	g_assert_cmpstr(waited->reason, ==, "why");
	g_assert_cmpuint(confab_approvals_get_n_waiting(f->approvals), ==, 0);
	/* an administrator (no owner) is refused too once it is decided */
	g_assert_null(decide(f, approval->id, NULL, TRUE, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_APPROVAL_DECIDED);
}

/* A decision the store got by another path (another instance) reaches
 * the waiter by its poll. */
static void
test_poll_sees_other_instance(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabApproval) approval = create(f, "alice");
	g_autoptr(ConfabApproval) decision = confab_approval_new();
	g_autoptr(ConfabApproval) waited = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GAsyncResult) res2 = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;
	GAsyncResult *slot2 = NULL;

	confab_approvals_wait_async(f->approvals, approval, on_result, &slot);
	decision->id = g_strdup(approval->id);
	decision->state = CONFAB_APPROVAL_STATE_APPROVED;
	decision->decided_by = g_strdup("dbus");
	decision->decided_at = 1;
	/* straight to the store: the approvals object does not hear of it */
	confab_store_decide_approval_async(f->store, decision, NULL, on_result, &slot2);
	res2 = wait_for(&slot2, 10000);
	g_clear_pointer(&waited, confab_approval_free);
	waited = confab_store_decide_approval_finish(f->store, res2, &error);
	g_assert_no_error(error);
	g_clear_pointer(&waited, confab_approval_free);
	res = wait_for(&slot, 5 * CONFAB_APPROVALS_POLL_MS);
	waited = confab_approvals_wait_finish(f->approvals, res, &error);
	g_assert_no_error(error);
	g_assert_cmpint(waited->state, ==, CONFAB_APPROVAL_STATE_APPROVED);
	g_assert_cmpstr(waited->decided_by, ==, "dbus");
}

/* Nobody decides: the waiter times the approval out itself. */
static void
test_timeout(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabApproval) approval = create(f, "alice");
	g_autoptr(ConfabApproval) waited = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	g_autoptr(GError) error = NULL;
	GAsyncResult *slot = NULL;
	gint64 start = g_get_monotonic_time();

	confab_approvals_wait_async(f->approvals, approval, on_result, &slot);
	res = wait_for(&slot, 5000);
	g_assert_cmpint(g_get_monotonic_time() - start, >=, 900 * 1000);
	waited = confab_approvals_wait_finish(f->approvals, res, &error);
	g_assert_no_error(error);
	g_assert_cmpint(waited->state, ==, CONFAB_APPROVAL_STATE_TIMED_OUT);
	g_assert_cmpstr(waited->decided_by, ==, "timeout");
	g_assert_nonnull(strstr(waited->reason, "within 1 s"));
	g_assert_null(decide(f, approval->id, "alice", TRUE, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_APPROVAL_DECIDED);
}

/* expire_all() (the daemon stops) ends every wait now. */
static void
test_expire_all(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabApproval) a = create(f, "alice");
	g_autoptr(ConfabApproval) b = create(f, "bob");
	g_autoptr(GAsyncResult) ra = NULL;
	g_autoptr(GAsyncResult) rb = NULL;
	g_autoptr(ConfabApproval) wa = NULL;
	g_autoptr(ConfabApproval) wb = NULL;
	GAsyncResult *sa = NULL, *sb = NULL;

	confab_approvals_wait_async(f->approvals, a, on_result, &sa);
	confab_approvals_wait_async(f->approvals, b, on_result, &sb);
	confab_approvals_expire_all(f->approvals, "stopping");
	ra = wait_for(&sa, 2000);
	rb = wait_for(&sb, 2000);
	wa = confab_approvals_wait_finish(f->approvals, ra, NULL);
	wb = confab_approvals_wait_finish(f->approvals, rb, NULL);
	g_assert_cmpint(wa->state, ==, CONFAB_APPROVAL_STATE_TIMED_OUT);
	g_assert_cmpstr(wa->reason, ==, "stopping");
	g_assert_cmpint(wb->state, ==, CONFAB_APPROVAL_STATE_TIMED_OUT);
	/* one that was being stored meanwhile ends at once too */
	{
		g_autoptr(ConfabApproval) late = create(f, "carol");
		g_autoptr(GAsyncResult) rl = NULL;
		g_autoptr(ConfabApproval) wl = NULL;
		GAsyncResult *sl = NULL;

		confab_approvals_wait_async(f->approvals, late, on_result, &sl);
		rl = wait_for(&sl, 2000);
		wl = confab_approvals_wait_finish(f->approvals, rl, NULL);
		g_assert_cmpint(wl->state, ==, CONFAB_APPROVAL_STATE_TIMED_OUT);
		g_assert_cmpstr(wl->reason, ==, "stopping");
	}
}

/* A decision made on another thread (a serving thread) wakes the waiter
 * on its own context. */
typedef struct {
	Fixture *f;
	gchar *id;
	ConfabApproval *decided;
} ThreadDecide;

static gpointer
decide_in_thread(gpointer data)
{
	ThreadDecide *td = data;
	g_autoptr(GMainContext) context = g_main_context_new();

	g_main_context_push_thread_default(context);
	{
		GAsyncResult *slot = NULL;
		g_autoptr(GAsyncResult) res = NULL;
		confab_approvals_decide_async(td->f->approvals,
					      td->id,
					      "alice",
					      NULL,
					      TRUE,
					      NULL,
					      "api",
					      on_result,
					      &slot);
		while (slot == NULL)
			g_main_context_iteration(context, TRUE);
		res = slot;
		td->decided = confab_approvals_decide_finish(td->f->approvals, res, NULL);
	}
	g_main_context_pop_thread_default(context);
	return NULL;
}

static void
test_decide_from_thread(Fixture *f, gconstpointer data)
{
	g_autoptr(ConfabApproval) approval = create(f, "alice");
	g_autoptr(ConfabApproval) waited = NULL;
	g_autoptr(GAsyncResult) res = NULL;
	GAsyncResult *slot = NULL;
	ThreadDecide td = {f, approval->id, NULL};
	GThread *thread;

	confab_approvals_wait_async(f->approvals, approval, on_result, &slot);
	thread = g_thread_new("decide", decide_in_thread, &td);
	res = wait_for(&slot, 5000);
	g_thread_join(thread);
	waited = confab_approvals_wait_finish(f->approvals, res, NULL);
	g_assert_cmpint(waited->state, ==, CONFAB_APPROVAL_STATE_APPROVED);
	g_assert_nonnull(td.decided);
	g_assert_cmpint(td.decided->state, ==, CONFAB_APPROVAL_STATE_APPROVED);
	confab_approval_free(td.decided);
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
#define ADD(name, func, timeout)                                                                   \
	g_test_add("/confab/approvals/" name,                                                      \
		   Fixture,                                                                        \
		   GUINT_TO_POINTER(timeout),                                                      \
		   fixture_setup,                                                                  \
		   func,                                                                           \
		   fixture_teardown)
	ADD("decide-wakes", test_decide_wakes, 120);
	ADD("poll-sees-other-instance", test_poll_sees_other_instance, 120);
	ADD("timeout", test_timeout, 1);
	ADD("expire-all", test_expire_all, 120);
	ADD("decide-from-thread", test_decide_from_thread, 120);
#undef ADD
	return g_test_run();
}
