/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabPg"

#include "config.h"

#include <string.h>

#include "store/postgres/confab-pg-connection.h"

/*
 * One PostgreSQL connection driven by the GLib main loop; nothing here waits
 * for the server.
 *
 * Connecting: PQconnectStartParams() runs in a worker thread, because it
 * resolves the first host name with a blocking getaddrinfo(); PQconnectPoll()
 * then runs on the loop, and PQsocket() is read again after every step, since
 * libpq opens a new socket for each address and host it tries. A deadline
 * (connect-timeout) bounds the whole of it, authentication and setup
 * included: libpq's own connect_timeout only works in its blocking calls.
 *
 * Queries: one job in flight at a time, the rest in a FIFO. A job is one
 * statement, a script, or a whole transaction (BEGIN, the statements, COMMIT,
 * or ROLLBACK at the first error), so nothing of another caller's runs in the
 * middle of a transaction. Statements with parameters are prepared once per
 * connection and SQL text (PQsendPrepare, then PQsendQueryPrepared); the
 * socket is flushed with PQflush while it is writable, and results are read
 * with PQconsumeInput, PQisBusy and PQgetResult, never with a call that waits.
 *
 * One GSource per connection watches the socket (g_source_add_unix_fd, its
 * events switched with g_source_modify_unix_fd) and wakes for the earliest
 * deadline through g_source_set_ready_time: the connect deadline, each job's
 * deadline (query-timeout from when it was queued), and the time a cancelled
 * query has to go away.
 *
 * A job past its deadline fails at once with CONFAB_PG_ERROR_TIMEOUT; when it
 * is the one in flight, a cancel request goes to the server from a worker
 * thread (PQcancel connects and waits for the server: it blocks), and nothing
 * else is sent until both the cancel request and the abandoned job are done
 * with, lest the cancel hit the next query. When the server does not answer
 * within CANCEL_GRACE_MS, the connection is dropped as broken. The server
 * also enforces statement_timeout, set to query-timeout plus a second when
 * connecting, for when this process is gone.
 */

#define DEFAULT_CONNECT_TIMEOUT_MS 5000
#define DEFAULT_QUERY_TIMEOUT_MS   5000
/* how long the server has to end a query after a cancel request */
#define CANCEL_GRACE_MS 2000
/* statement_timeout beyond query-timeout: the server's own limit is a
 * backstop for a client that is gone, and should not race the client's */
#define SERVER_TIMEOUT_MARGIN_MS 1000
/* prepared statements per connection; SQL beyond that runs unnamed */
#define STMT_CACHE_MAX 256
#define NO_DEADLINE    G_MAXINT64

/* ---------- errors ---------- */

/* libpq messages end in a newline and may hold several lines ("connection to
 * server at ... failed: Connection refused\n\tIs the server running ...") */
static gchar *
one_line(const gchar *message)
{
	g_autoptr(GString) str = g_string_new(message != NULL ? message : "");
	g_strstrip(str->str);
	str->len = strlen(str->str);
	g_string_replace(str, "\n\t", " ", 0);
	g_string_replace(str, "\n", "; ", 0);
	if (str->len == 0)
		g_string_append(str, "unknown error");
	return g_string_free(g_steal_pointer(&str), FALSE);
}

static GError *
error_from_result(const PGresult *res)
{
	const gchar *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	g_autofree gchar *message = one_line(primary != NULL ? primary : PQresultErrorMessage(res));
	return confab_pg_error_new_sql(PQresultErrorField(res, PG_DIAG_SQLSTATE), message);
}

static gboolean
result_ok(const PGresult *res)
{
	switch (PQresultStatus(res)) {
	case PGRES_COMMAND_OK:
	case PGRES_TUPLES_OK:
	case PGRES_EMPTY_QUERY:
	case PGRES_SINGLE_TUPLE:
		return TRUE;
	default:
		return FALSE;
	}
}

/* ---------- jobs ---------- */

typedef enum {
	JOB_QUERY,	 /* one statement: its result */
	JOB_SCRIPT,	 /* PQsendQuery, several statements: the last result */
	JOB_TRANSACTION, /* BEGIN, statements, COMMIT: their results */
} JobKind;

typedef enum {
	PHASE_PREPARE,
	PHASE_EXECUTE,
} Phase;

typedef struct {
	JobKind kind;
	GTask *task;	    /* owned; NULL for internal jobs and once abandoned */
	GPtrArray *steps;   /* owned: ConfabPgStatement */
	guint step;	    /* the one running */
	Phase phase;	    /* of a prepared step */
	gchar *stmt_name;   /* owned: what PQsendPrepare is creating */
	gboolean retried;   /* re-prepared once after a stale plan */
	PGresult *partial;  /* owned: the running step's result so far */
	PGresult *result;   /* owned: for JOB_QUERY and JOB_SCRIPT */
	GPtrArray *results; /* owned: PGresult, the statements' of a transaction */
	GError *error;	    /* owned: why the job fails (after its ROLLBACK) */
	gboolean rolling_back;
	guint rollbacks;	   /* ROLLBACKs sent */
	gboolean rollback_pending; /* once the cancel request is done */
	gboolean abandoned;	   /* its caller had its answer; drain and drop */
	gboolean setup;		   /* the SET sent when connecting */
	gint64 deadline;	   /* monotonic µs */
	GCancellable *cancellable; /* owned */
	gulong cancelled_id;
} Job;

/* A statement sent as it is: no parameters, not prepared. */
static ConfabPgStatement *
simple(const gchar *sql)
{
	return confab_pg_batch_statement_new(sql, 0, NULL, TRUE);
}

/* A job of @kind for @task (NULL for an internal one), @first its first step. */
static Job *
job_new(JobKind kind, GTask *task, ConfabPgStatement *first)
{
	Job *job = g_new0(Job, 1);
	job->kind = kind;
	job->task = task != NULL ? g_object_ref(task) : NULL;
	job->steps = g_ptr_array_new_with_free_func((GDestroyNotify)confab_pg_batch_statement_free);
	g_ptr_array_add(job->steps, first);
	job->deadline = NO_DEADLINE;
	if (task != NULL && g_task_get_cancellable(task) != NULL)
		job->cancellable = g_object_ref(g_task_get_cancellable(task));
	return job;
}

static void
job_free(Job *job)
{
	g_cancellable_disconnect(job->cancellable, job->cancelled_id);
	g_clear_object(&job->cancellable);
	g_clear_object(&job->task);
	g_ptr_array_unref(job->steps);
	g_free(job->stmt_name);
	g_clear_pointer(&job->partial, PQclear);
	g_clear_pointer(&job->result, PQclear);
	g_clear_pointer(&job->results, g_ptr_array_unref);
	g_clear_error(&job->error);
	g_free(job);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Job, job_free)

/* Returns the job's answer to its caller, if it still has one, and frees it.
 * The callback may run at once and call back into the connection. */
static void
job_return(Job *job)
{
	g_autoptr(Job) owned = job;
	g_autoptr(GTask) task = g_steal_pointer(&job->task);

	if (task == NULL)
		return;
	if (job->error != NULL)
		g_task_return_error(task, g_steal_pointer(&job->error));
	else if (job->kind == JOB_TRANSACTION)
		g_task_return_pointer(task,
				      g_steal_pointer(&job->results),
				      (GDestroyNotify)g_ptr_array_unref);
	else
		g_task_return_pointer(task, g_steal_pointer(&job->result), (GDestroyNotify)PQclear);
}

/* ---------- the object ---------- */

typedef struct {
	GSource source;
	ConfabPgConnection *self; /* unowned: it destroys the source before it goes */
	gint wake;		  /* atomic: a cancellable fired, maybe in another thread */
} PgSource;

struct _ConfabPgConnection {
	GObject parent_instance;
	gchar *conninfo; /* owned */
	gchar *password; /* owned, nullable */
	guint connect_timeout_ms;
	guint query_timeout_ms;

	ConfabPgConnectionState state;
	PGconn *conn;		 /* owned */
	gboolean handshake_done; /* PQconnectPoll said OK */
	GMainContext *context;	 /* owned */
	PgSource *source;	 /* owned */
	gpointer fd_tag;	 /* unowned: in source */
	gint fd;
	GIOCondition fd_events;
	gboolean flushing; /* PQflush returned 1 */
	gint64 connect_deadline;
	GTask *connect_task; /* owned */
	gulong connect_cancelled_id;

	GQueue queue;	   /* owned: Job, waiting */
	Job *in_flight;	   /* owned */
	gboolean sent;	   /* a command of in_flight awaits its results */
	GHashTable *stmts; /* owned: SQL text -> statement name */
	guint stmt_counter;
	gboolean cancelling;	/* a PQcancel thread runs */
	gint64 broken_deadline; /* the server must be done with a cancelled query by then */
	GError *close_error;	/* owned: why it closed */
};

G_DEFINE_FINAL_TYPE(ConfabPgConnection, confab_pg_connection, G_TYPE_OBJECT)

enum { PROP_0, PROP_CONNINFO, PROP_PASSWORD, PROP_CONNECT_TIMEOUT, PROP_QUERY_TIMEOUT, N_PROPS };

static GParamSpec *properties[N_PROPS];

enum { SIGNAL_CLOSED, SIGNAL_NOTIFICATION, N_SIGNALS };

static guint signals[N_SIGNALS];

static void
send_next(ConfabPgConnection *self);
static void
update_ready_time(ConfabPgConnection *self);

static gint64
deadline_after(guint timeout_ms)
{
	if (timeout_ms == 0)
		return NO_DEADLINE;
	return g_get_monotonic_time() + (gint64)timeout_ms * 1000;
}

/* A job's time beyond the query timeout for what it carries: a second for
 * each MiB of its parameters. The query timeout tells a hung server from a
 * busy one; a statement that carries megabytes (a large turn's commit) has
 * them to send, and the server to store, on a machine that may be loaded,
 * and gets that time on top (docs/deployment.md). */
#define PAYLOAD_BYTES_PER_SECOND (1024 * 1024)

static guint
job_payload_ms(const Job *job)
{
	guint64 bytes = 0;

	for (guint i = 0; i < job->steps->len; i++) {
		const ConfabPgStatement *step = g_ptr_array_index(job->steps, i);
		for (guint j = 0; j < step->n_params; j++)
			bytes += step->params[j] != NULL ? strlen(step->params[j]) : 0;
	}
	return (guint)MIN(bytes * 1000 / PAYLOAD_BYTES_PER_SECOND, G_MAXUINT / 2);
}

/* ---------- closing ---------- */

static void
fail_job(Job *job, const GError *error)
{
	if (job->task != NULL && job->error == NULL)
		job->error = g_error_copy(error);
	job_return(job);
}

/* Closes for good: every job fails with a copy of @error, then `closed`. */
static void
close_with_error(ConfabPgConnection *self, GError *error)
{
	g_autoptr(ConfabPgConnection) ref = g_object_ref(self);
	g_autoptr(GError) owned = error;
	g_autoptr(GTask) connect_task = NULL;
	GQueue jobs = G_QUEUE_INIT;
	Job *job;

	if (self->state == CONFAB_PG_CONNECTION_STATE_CLOSED)
		return;
	g_debug("connection closed: %s", error->message);
	self->state = CONFAB_PG_CONNECTION_STATE_CLOSED;
	self->close_error = g_error_copy(error);
	if (self->source != NULL) {
		g_source_destroy((GSource *)self->source);
		g_clear_pointer((GSource **)&self->source, g_source_unref);
		self->fd_tag = NULL;
	}
	g_clear_pointer(&self->conn, PQfinish);
	connect_task = g_steal_pointer(&self->connect_task);
	if (connect_task != NULL)
		g_cancellable_disconnect(g_task_get_cancellable(connect_task),
					 self->connect_cancelled_id);
	self->connect_cancelled_id = 0;

	/* detach everything before a callback can run */
	if (self->in_flight != NULL)
		g_queue_push_tail(&jobs, g_steal_pointer(&self->in_flight));
	while ((job = g_queue_pop_head(&self->queue)) != NULL)
		g_queue_push_tail(&jobs, job);

	if (connect_task != NULL)
		g_task_return_error(connect_task, g_error_copy(error));
	while ((job = g_queue_pop_head(&jobs)) != NULL)
		fail_job(job, error);
	g_signal_emit(self, signals[SIGNAL_CLOSED], 0, error);
}

static G_GNUC_PRINTF(3, 4) void close_with(ConfabPgConnection *self,
					   ConfabPgErrorCode code,
					   const gchar *format,
					   ...)
{
	va_list args;
	GError *error;

	va_start(args, format);
	error = g_error_new_valist(CONFAB_PG_ERROR, code, format, args);
	va_end(args);
	close_with_error(self, error);
}

static void
close_lost(ConfabPgConnection *self)
{
	g_autofree gchar *message = one_line(PQerrorMessage(self->conn));
	close_with(self, CONFAB_PG_ERROR_CLOSED, "connection to PostgreSQL lost: %s", message);
}

/* ---------- the socket ---------- */

/* Watches PQsocket() for @events; libpq may have replaced the socket since
 * the last call (a new one for each address and host it tries). */
static void
watch_fd(ConfabPgConnection *self, GIOCondition events)
{
	gint fd = self->conn != NULL ? PQsocket(self->conn) : -1;

	if (self->source == NULL)
		return;
	if (fd != self->fd || self->fd_tag == NULL) {
		if (self->fd_tag != NULL)
			g_source_remove_unix_fd((GSource *)self->source, self->fd_tag);
		self->fd_tag = NULL;
		self->fd = fd;
		if (fd >= 0)
			self->fd_tag = g_source_add_unix_fd((GSource *)self->source, fd, events);
	} else if (events != self->fd_events) {
		g_source_modify_unix_fd((GSource *)self->source, self->fd_tag, events);
	}
	self->fd_events = events;
}

static gboolean
flush(ConfabPgConnection *self)
{
	gint rc = PQflush(self->conn);
	if (rc < 0) {
		close_lost(self);
		return FALSE;
	}
	self->flushing = rc == 1;
	return TRUE;
}

static void
drain_notifications(ConfabPgConnection *self)
{
	PGnotify *notify;
	while (self->conn != NULL && (notify = PQnotifies(self->conn)) != NULL) {
		g_signal_emit(self,
			      signals[SIGNAL_NOTIFICATION],
			      0,
			      notify->relname,
			      notify->extra);
		PQfreemem(notify);
	}
}

static void
notice_receiver(void *arg, const PGresult *res)
{
	g_debug("server notice: %s", PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
}

/* ---------- sending ---------- */

/* Prepared statements pay off for DML; utility statements (BEGIN, SET,
 * LISTEN, DDL) run unnamed. */
static gboolean
worth_preparing(const gchar *sql)
{
	static const gchar *const words[] =
	    {"select", "insert", "update", "delete", "with", "values", "merge", "table"};
	while (g_ascii_isspace(*sql) || *sql == '(')
		sql++;
	for (guint i = 0; i < G_N_ELEMENTS(words); i++) {
		gsize len = strlen(words[i]);
		if (g_ascii_strncasecmp(sql, words[i], len) == 0 && !g_ascii_isalnum(sql[len]) &&
		    sql[len] != '_')
			return TRUE;
	}
	return FALSE;
}

static gboolean
is_commit(const gchar *sql)
{
	while (g_ascii_isspace(*sql))
		sql++;
	return (g_ascii_strncasecmp(sql, "commit", 6) == 0 && !g_ascii_isalnum(sql[6])) ||
	       (g_ascii_strncasecmp(sql, "end", 3) == 0 && !g_ascii_isalnum(sql[3]));
}

static ConfabPgStatement *
job_step(Job *job)
{
	return g_ptr_array_index(job->steps, job->step);
}

static void
step_done(ConfabPgConnection *self, PGresult *res, GError *local_error);

/* Sends the job's current step (or its ROLLBACK). */
static void
send_step(ConfabPgConnection *self, Job *job)
{
	ConfabPgStatement *step = job_step(job);
	const gchar *const *params = (const gchar *const *)step->params;
	const gchar *name;
	gint ok;

	if (job->rolling_back) {
		ok = PQsendQuery(self->conn, "ROLLBACK");
	} else if (step->simple) {
		ok = PQsendQuery(self->conn, step->sql);
	} else if ((name = g_hash_table_lookup(self->stmts, step->sql)) != NULL) {
		job->phase = PHASE_EXECUTE;
		ok = PQsendQueryPrepared(self->conn, name, step->n_params, params, NULL, NULL, 0);
	} else if (worth_preparing(step->sql) && g_hash_table_size(self->stmts) < STMT_CACHE_MAX) {
		job->phase = PHASE_PREPARE;
		g_free(job->stmt_name);
		job->stmt_name = g_strdup_printf("confab_%u", ++self->stmt_counter);
		ok = PQsendPrepare(self->conn, job->stmt_name, step->sql, step->n_params, NULL);
	} else {
		job->phase = PHASE_EXECUTE;
		ok = PQsendQueryParams(self->conn,
				       step->sql,
				       step->n_params,
				       NULL,
				       params,
				       NULL,
				       NULL,
				       0);
	}
	if (!ok) {
		g_autofree gchar *message = NULL;
		self->sent = FALSE;
		if (PQstatus(self->conn) == CONNECTION_BAD) {
			close_lost(self);
			return;
		}
		message = one_line(PQerrorMessage(self->conn));
		step_done(self,
			  NULL,
			  g_error_new_literal(CONFAB_PG_ERROR, CONFAB_PG_ERROR_FAILED, message));
		return;
	}
	self->sent = TRUE;
	if (!flush(self))
		return;
	watch_fd(self, G_IO_IN | (self->flushing ? G_IO_OUT : 0));
}

/* A cancel request still on its way could hit the ROLLBACK itself, and
 * leave the transaction open for the next job: wait for it first. */
static void
start_rollback(ConfabPgConnection *self, Job *job)
{
	job->rolling_back = TRUE;
	if (self->cancelling) {
		job->rollback_pending = TRUE;
		return;
	}
	job->rollback_pending = FALSE;
	job->rollbacks++;
	send_step(self, job);
}

static void
become_ready(ConfabPgConnection *self)
{
	g_autoptr(GTask) task = g_steal_pointer(&self->connect_task);
	self->state = CONFAB_PG_CONNECTION_STATE_READY;
	self->connect_deadline = 0;
	g_cancellable_disconnect(g_task_get_cancellable(task), self->connect_cancelled_id);
	self->connect_cancelled_id = 0;
	g_task_return_boolean(task, TRUE);
}

/* The job in flight is over: it goes back to its caller. */
static void
job_over(ConfabPgConnection *self)
{
	g_autoptr(Job) job = g_steal_pointer(&self->in_flight);

	if (!self->cancelling)
		self->broken_deadline = 0;
	if (job->setup) {
		if (job->error != NULL) {
			g_prefix_error(&job->error, "setting up the connection: ");
			close_with_error(self, g_steal_pointer(&job->error));
			return;
		}
		become_ready(self);
	}
	job_return(g_steal_pointer(&job));
}

static gboolean
is_stale_statement(const GError *error)
{
	/* "cached plan must not change result type" once another instance
	 * has altered a table; "prepared statement does not exist" after a
	 * DISCARD ALL */
	const gchar *sqlstate = confab_pg_error_get_sqlstate(error);
	return sqlstate != NULL &&
	       (g_str_equal(sqlstate, "0A000") || g_str_equal(sqlstate, "26000"));
}

/* The in-flight job's step ended, with @res (its last result) or with
 * @local_error (libpq refused to send it). Sends what follows: the execution
 * of a statement just prepared, the next step, a ROLLBACK, or nothing, and
 * then the job is over. */
static void
step_done(ConfabPgConnection *self, PGresult *res, GError *local_error)
{
	g_autoptr(PGresult) owned = res;
	g_autoptr(GError) error = local_error;
	Job *job = self->in_flight;
	ConfabPgStatement *step = job_step(job);
	gboolean in_transaction;

	if (PQstatus(self->conn) == CONNECTION_BAD) {
		close_lost(self);
		return;
	}
	if (error == NULL && res == NULL)
		error = g_error_new_literal(CONFAB_PG_ERROR, CONFAB_PG_ERROR_FAILED, "no result");
	if (error == NULL && !result_ok(res))
		error = error_from_result(res);
	in_transaction = PQtransactionStatus(self->conn) != PQTRANS_IDLE;

	if (job->rolling_back) {
		if (error != NULL)
			g_debug("ROLLBACK failed: %s", error->message);
		if (in_transaction && job->rollbacks < 3) {
			start_rollback(self, job);
			return;
		}
		if (in_transaction) {
			close_with(self,
				   CONFAB_PG_ERROR_FAILED,
				   "could not roll a transaction back");
			return;
		}
		job_over(self);
		return;
	}
	if (!step->simple && job->phase == PHASE_PREPARE && error == NULL) {
		g_hash_table_insert(self->stmts,
				    g_strdup(step->sql),
				    g_steal_pointer(&job->stmt_name));
		if (!job->abandoned) {
			job->phase = PHASE_EXECUTE;
			send_step(self, job);
			return;
		}
	} else if (error != NULL && !step->simple && job->phase == PHASE_EXECUTE && !job->retried &&
		   !job->abandoned && !in_transaction &&
		   g_hash_table_contains(self->stmts, step->sql) && is_stale_statement(error)) {
		/* prepare it again under a new name, once */
		g_debug("preparing again after: %s", error->message);
		job->retried = TRUE;
		g_hash_table_remove(self->stmts, step->sql);
		send_step(self, job);
		return;
	}

	if (job->abandoned) {
		/* its caller has had its answer; a transaction it began still
		 * ends here */
		if (job->kind != JOB_QUERY && in_transaction) {
			start_rollback(self, job);
			return;
		}
	} else if (job->kind == JOB_TRANSACTION) {
		if (error != NULL) {
			g_prefix_error(&error, "statement %u of the transaction: ", job->step);
			job->error = g_steal_pointer(&error);
			if (in_transaction) {
				start_rollback(self, job);
				return;
			}
		} else {
			if (job->step > 0 && job->step + 1 < job->steps->len)
				g_ptr_array_add(job->results, g_steal_pointer(&owned));
			if (++job->step < job->steps->len) {
				send_step(self, job);
				return;
			}
		}
	} else if (error != NULL) {
		job->error = g_steal_pointer(&error);
		/* a script that failed inside its own BEGIN leaves the
		 * transaction open; a single statement leaves it to its caller */
		if (job->kind == JOB_SCRIPT && in_transaction) {
			start_rollback(self, job);
			return;
		}
	} else if (job->kind == JOB_QUERY && is_commit(step->sql) &&
		   g_strcmp0(PQcmdStatus(owned), "ROLLBACK") == 0) {
		/* the COMMIT of a transaction in which a statement failed
		 * succeeds as a ROLLBACK: to whoever sent it, a failure */
		job->error =
		    confab_pg_error_new_sql("25P02",
					    "COMMIT rolled the transaction back: a statement in "
					    "it had failed");
	} else {
		job->result = g_steal_pointer(&owned);
	}
	job_over(self);
}

/* Reads what the server sent for the job in flight, without waiting. */
static void
read_results(ConfabPgConnection *self)
{
	/* nothing is outstanding while a ROLLBACK waits for a cancel request */
	while (self->in_flight != NULL && self->sent && self->conn != NULL &&
	       !PQisBusy(self->conn)) {
		Job *job = self->in_flight;
		PGresult *res = PQgetResult(self->conn);

		if (res == NULL) {
			self->sent = FALSE;
			step_done(self, g_steal_pointer(&job->partial), NULL);
			continue;
		}
		switch (PQresultStatus(res)) {
		case PGRES_COPY_IN:
			PQclear(res);
			if (PQputCopyEnd(self->conn, "COPY is not supported here") < 0) {
				close_lost(self);
				return;
			}
			break;
		case PGRES_COPY_OUT:
		case PGRES_COPY_BOTH:
			PQclear(res);
			close_with(self, CONFAB_PG_ERROR_FAILED, "COPY is not supported here");
			return;
		default:
			/* a script yields one result per statement: keep the
			 * first error, else the last */
			if (job->partial != NULL && !result_ok(job->partial)) {
				PQclear(res);
			} else {
				g_clear_pointer(&job->partial, PQclear);
				job->partial = res;
			}
			break;
		}
	}
}

static void
send_next(ConfabPgConnection *self)
{
	while (self->state == CONFAB_PG_CONNECTION_STATE_READY && self->in_flight == NULL &&
	       !self->cancelling) {
		Job *job = g_queue_pop_head(&self->queue);
		if (job == NULL)
			break;
		self->in_flight = job;
		send_step(self, job);
	}
}

/* ---------- timeouts and cancellation ---------- */

typedef struct {
	GWeakRef self;
	PGcancel *cancel; /* owned */
} CancelData;

static void
cancel_data_free(CancelData *data)
{
	g_weak_ref_clear(&data->self);
	PQfreeCancel(data->cancel);
	g_free(data);
}

static void
cancel_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
	CancelData *data = task_data;
	gchar errbuf[256] = "";

	/* connects to the server and waits for it to close the connection:
	 * blocks, for as long as a hung server likes */
	if (!PQcancel(data->cancel, errbuf, sizeof(errbuf))) {
		g_task_return_new_error(task,
					CONFAB_PG_ERROR,
					CONFAB_PG_ERROR_FAILED,
					"cancel request failed: %s",
					errbuf);
		return;
	}
	g_task_return_boolean(task, TRUE);
}

static void
cancel_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	CancelData *data = g_task_get_task_data(G_TASK(result));
	g_autoptr(ConfabPgConnection) self = g_weak_ref_get(&data->self);
	g_autoptr(GError) error = NULL;

	if (!g_task_propagate_boolean(G_TASK(result), &error))
		g_debug("%s", error->message);
	if (self == NULL)
		return;
	self->cancelling = FALSE;
	if (self->state == CONFAB_PG_CONNECTION_STATE_CLOSED)
		return;
	if (self->in_flight != NULL && self->in_flight->rollback_pending)
		start_rollback(self, self->in_flight);
	if (self->state == CONFAB_PG_CONNECTION_STATE_CLOSED)
		return;
	if (self->in_flight == NULL)
		self->broken_deadline = 0;
	send_next(self);
	if (self->state != CONFAB_PG_CONNECTION_STATE_CLOSED)
		update_ready_time(self);
}

/* The caller of the job in flight gets @error now; the server is asked to
 * stop it, and must be done with it within CANCEL_GRACE_MS. */
static void
abandon_in_flight(ConfabPgConnection *self, GError *error)
{
	Job *job = self->in_flight;
	g_autoptr(GTask) task = g_steal_pointer(&job->task);

	job->abandoned = TRUE;
	self->broken_deadline = deadline_after(CANCEL_GRACE_MS);
	if (!self->cancelling) {
		PGcancel *cancel = PQgetCancel(self->conn);
		if (cancel != NULL) {
			g_autoptr(GTask) ctask = g_task_new(NULL, NULL, cancel_done, NULL);
			CancelData *data = g_new0(CancelData, 1);
			g_weak_ref_init(&data->self, self);
			data->cancel = cancel;
			g_task_set_source_tag(ctask, abandon_in_flight);
			g_task_set_task_data(ctask, data, (GDestroyNotify)cancel_data_free);
			self->cancelling = TRUE;
			g_task_run_in_thread(ctask, cancel_thread);
		}
	}
	g_task_return_error(task, error);
}

/* Returns: (nullable): why @job ends now, if it does: cancelled, or past
 * its deadline */
static GError *
job_expired(ConfabPgConnection *self, const Job *job, gint64 now)
{
	if (g_cancellable_is_cancelled(job->cancellable))
		return g_error_new_literal(G_IO_ERROR,
					   G_IO_ERROR_CANCELLED,
					   "the query was cancelled");
	if (now >= job->deadline)
		return g_error_new(CONFAB_PG_ERROR,
				   CONFAB_PG_ERROR_TIMEOUT,
				   "PostgreSQL query timed out after %u ms",
				   self->query_timeout_ms);
	return NULL;
}

static void
check_deadlines(ConfabPgConnection *self)
{
	gint64 now = g_get_monotonic_time();
	GQueue expired = G_QUEUE_INIT;
	GError *error;
	Job *job;

	if (self->state == CONFAB_PG_CONNECTION_STATE_CONNECTING && self->connect_task != NULL) {
		GCancellable *cancellable = g_task_get_cancellable(self->connect_task);
		if (g_cancellable_is_cancelled(cancellable)) {
			close_with_error(self,
					 g_error_new_literal(G_IO_ERROR,
							     G_IO_ERROR_CANCELLED,
							     "connecting was cancelled"));
			return;
		}
		if (self->connect_deadline != 0 && now >= self->connect_deadline) {
			close_with(self,
				   CONFAB_PG_ERROR_TIMEOUT,
				   "connecting to PostgreSQL timed out after %u ms",
				   self->connect_timeout_ms);
			return;
		}
	}

	job = self->in_flight;
	if (job != NULL && job->task != NULL && (error = job_expired(self, job, now)) != NULL) {
		abandon_in_flight(self, error);
		if (self->state == CONFAB_PG_CONNECTION_STATE_CLOSED)
			return;
	}

	for (GList *l = self->queue.head; l != NULL;) {
		GList *next = l->next;
		job = l->data;
		if ((job->error = job_expired(self, job, now)) != NULL) {
			g_queue_delete_link(&self->queue, l);
			g_queue_push_tail(&expired, job);
		}
		l = next;
	}
	while ((job = g_queue_pop_head(&expired)) != NULL)
		job_return(job);
	if (self->state == CONFAB_PG_CONNECTION_STATE_CLOSED)
		return;

	if (self->broken_deadline != 0 && now >= self->broken_deadline) {
		if (self->cancelling || (self->in_flight != NULL && self->in_flight->abandoned)) {
			close_with(self,
				   CONFAB_PG_ERROR_TIMEOUT,
				   "PostgreSQL did not end a cancelled query within %u ms; "
				   "connection dropped",
				   (guint)CANCEL_GRACE_MS);
			return;
		}
		self->broken_deadline = 0;
	}
}

static void
update_ready_time(ConfabPgConnection *self)
{
	gint64 t = NO_DEADLINE;

	if (self->source == NULL)
		return;
	if (self->state == CONFAB_PG_CONNECTION_STATE_CONNECTING && self->connect_deadline != 0)
		t = MIN(t, self->connect_deadline);
	if (self->in_flight != NULL && self->in_flight->task != NULL)
		t = MIN(t, self->in_flight->deadline);
	for (GList *l = self->queue.head; l != NULL; l = l->next)
		t = MIN(t, ((Job *)l->data)->deadline);
	if (self->broken_deadline != 0)
		t = MIN(t, self->broken_deadline);
	g_source_set_ready_time((GSource *)self->source, t == NO_DEADLINE ? -1 : t);
	/* read after the write: a cancellable that fired in another thread
	 * meanwhile has its wake-up kept */
	if (g_atomic_int_get(&self->source->wake))
		g_source_set_ready_time((GSource *)self->source, 0);
}

/* Runs in whichever thread cancels: only wakes the loop up. */
static void
cancellable_fired(GCancellable *cancellable, gpointer data)
{
	PgSource *source = data;
	g_atomic_int_set(&source->wake, 1);
	g_source_set_ready_time((GSource *)source, 0);
}

static void
watch_cancellable(ConfabPgConnection *self, GCancellable *cancellable, gulong *id)
{
	if (cancellable == NULL || self->source == NULL)
		return;
	*id = g_cancellable_connect(cancellable,
				    G_CALLBACK(cancellable_fired),
				    g_source_ref((GSource *)self->source),
				    (GDestroyNotify)g_source_unref);
}

/* ---------- connecting ---------- */

static void
handshake_done(ConfabPgConnection *self)
{
	g_autofree gchar *sql = NULL;
	Job *job;

	if (PQsetnonblocking(self->conn, 1) != 0) {
		close_lost(self);
		return;
	}
	self->handshake_done = TRUE;
	PQsetNoticeReceiver(self->conn, notice_receiver, NULL);
	watch_fd(self, G_IO_IN);

	/* the server stops runaway statements by itself, even when this
	 * process is gone */
	sql = g_strdup_printf(
	    "SET statement_timeout = %u",
	    self->query_timeout_ms > 0 ? self->query_timeout_ms + SERVER_TIMEOUT_MARGIN_MS : 0);
	job = job_new(JOB_QUERY, NULL, simple(sql));
	job->setup = TRUE;
	self->in_flight = job;
	send_step(self, job);
}

static void
connect_poll(ConfabPgConnection *self)
{
	switch (PQconnectPoll(self->conn)) {
	case PGRES_POLLING_READING:
		watch_fd(self, G_IO_IN);
		break;
	case PGRES_POLLING_WRITING:
		watch_fd(self, G_IO_OUT);
		break;
	case PGRES_POLLING_OK:
		handshake_done(self);
		break;
	case PGRES_POLLING_FAILED:
	default: {
		g_autofree gchar *message = one_line(PQerrorMessage(self->conn));
		close_with(self,
			   CONFAB_PG_ERROR_CONNECT,
			   "could not connect to PostgreSQL: %s",
			   message);
		break;
	}
	}
}

static void
io_ready(ConfabPgConnection *self, GIOCondition revents)
{
	if ((revents & (G_IO_IN | G_IO_HUP | G_IO_ERR)) != 0 && !PQconsumeInput(self->conn)) {
		close_lost(self);
		return;
	}
	if (self->flushing && !flush(self))
		return;
	drain_notifications(self);
	if (self->state == CONFAB_PG_CONNECTION_STATE_CLOSED)
		return;
	read_results(self);
	if (self->state == CONFAB_PG_CONNECTION_STATE_CLOSED)
		return;
	drain_notifications(self);
	if (self->state == CONFAB_PG_CONNECTION_STATE_CLOSED)
		return;
	if (PQstatus(self->conn) == CONNECTION_BAD) {
		close_lost(self);
		return;
	}
	send_next(self);
	if (self->state == CONFAB_PG_CONNECTION_STATE_CLOSED)
		return;
	watch_fd(self, G_IO_IN | (self->flushing ? G_IO_OUT : 0));
}

static void
connection_dispatch(ConfabPgConnection *self)
{
	g_autoptr(ConfabPgConnection) ref = g_object_ref(self);
	GIOCondition revents = 0;

	g_atomic_int_set(&self->source->wake, 0);
	if (self->fd_tag != NULL)
		revents = g_source_query_unix_fd((GSource *)self->source, self->fd_tag);
	if (revents != 0 && self->conn != NULL) {
		if (!self->handshake_done)
			connect_poll(self);
		else
			io_ready(self, revents);
	}
	if (self->state != CONFAB_PG_CONNECTION_STATE_CLOSED)
		check_deadlines(self);
	if (self->state != CONFAB_PG_CONNECTION_STATE_CLOSED)
		update_ready_time(self);
}

static gboolean
pg_source_dispatch(GSource *source, GSourceFunc callback, gpointer user_data)
{
	connection_dispatch(((PgSource *)source)->self);
	return G_SOURCE_CONTINUE;
}

static GSourceFuncs pg_source_funcs = {
    .dispatch = pg_source_dispatch,
};

typedef struct {
	gchar **keywords; /* owned */
	gchar **values;	  /* owned */
} ConnectParams;

static void
connect_params_free(ConnectParams *params)
{
	g_strfreev(params->keywords);
	g_strfreev(params->values);
	g_free(params);
}

static void
connect_start_thread(GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
	ConnectParams *params = task_data;
	/* resolves the first host name: may block */
	PGconn *conn = PQconnectStartParams((const char *const *)params->keywords,
					    (const char *const *)params->values,
					    1);
	if (conn == NULL) {
		g_task_return_new_error(task,
					CONFAB_PG_ERROR,
					CONFAB_PG_ERROR_CONNECT,
					"could not connect to PostgreSQL: out of memory");
		return;
	}
	g_task_return_pointer(task, conn, (GDestroyNotify)PQfinish);
}

static void
connect_started(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConfabPgConnection *self = CONFAB_PG_CONNECTION(source);
	g_autoptr(GError) error = NULL;
	PGconn *conn = g_task_propagate_pointer(G_TASK(result), &error);

	if (self->state != CONFAB_PG_CONNECTION_STATE_CONNECTING) {
		/* timed out, cancelled or closed meanwhile */
		g_clear_pointer(&conn, PQfinish);
		return;
	}
	if (conn == NULL) {
		close_with_error(self, g_steal_pointer(&error));
		return;
	}
	self->conn = conn;
	if (PQstatus(conn) == CONNECTION_BAD) {
		connect_poll(self);
		return;
	}
	/* PQconnectStart leaves it as if PQconnectPoll had said WRITING */
	watch_fd(self, G_IO_OUT);
	update_ready_time(self);
}

static ConnectParams *
connect_params_new(ConfabPgConnection *self)
{
	g_autoptr(GStrvBuilder) keys = g_strv_builder_new();
	g_autoptr(GStrvBuilder) values = g_strv_builder_new();
	ConnectParams *params = g_new0(ConnectParams, 1);
	/* defaults first: the URL overrides them */
	const gchar *const defaults[][2] = {
	    {"fallback_application_name", "confabd"},
	    {"client_encoding", "UTF8"},
	    {"keepalives_idle", "30"},
	    {"keepalives_interval", "10"},
	    {"keepalives_count", "3"},
	    {"dbname", self->conninfo},
	};

	for (guint i = 0; i < G_N_ELEMENTS(defaults); i++) {
		g_strv_builder_add(keys, defaults[i][0]);
		g_strv_builder_add(values, defaults[i][1]);
	}
	/* then what must win over the URL */
	if (self->password != NULL) {
		g_strv_builder_add(keys, "password");
		g_strv_builder_add(values, self->password);
	}
	params->keywords = g_strv_builder_end(keys);
	params->values = g_strv_builder_end(values);
	return params;
}

/**
 * confab_pg_connection_connect_async:
 * @cancellable: (nullable): stops connecting
 *
 * Connects, authenticates and sets `statement_timeout` to the query timeout
 * plus a second,
 * all within the connect timeout, without blocking the thread-default main
 * context, whose loop drives the connection from then on. A connection
 * connects once: after a failure or a loss, make a new one.
 */
void
confab_pg_connection_connect_async(ConfabPgConnection *self,
				   GCancellable *cancellable,
				   GAsyncReadyCallback callback,
				   gpointer user_data)
{
	g_autoptr(GTask) task = NULL;
	g_autoptr(GTask) start = NULL;

	g_return_if_fail(CONFAB_IS_PG_CONNECTION(self));
	g_return_if_fail(cancellable == NULL || G_IS_CANCELLABLE(cancellable));

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_pg_connection_connect_async);
	if (self->state != CONFAB_PG_CONNECTION_STATE_NEW) {
		g_task_return_new_error(task,
					CONFAB_PG_ERROR,
					CONFAB_PG_ERROR_FAILED,
					"a connection connects only once");
		return;
	}
	self->state = CONFAB_PG_CONNECTION_STATE_CONNECTING;
	self->connect_task = g_steal_pointer(&task);
	self->connect_deadline =
	    self->connect_timeout_ms > 0 ? deadline_after(self->connect_timeout_ms) : 0;
	self->context = g_main_context_ref_thread_default();
	self->source = (PgSource *)g_source_new(&pg_source_funcs, sizeof(PgSource));
	self->source->self = self;
	g_source_set_static_name((GSource *)self->source, "ConfabPgConnection");
	g_source_attach((GSource *)self->source, self->context);
	watch_cancellable(self, cancellable, &self->connect_cancelled_id);
	update_ready_time(self);

	start = g_task_new(self, NULL, connect_started, NULL);
	g_task_set_source_tag(start, connect_started);
	g_task_set_task_data(start, connect_params_new(self), (GDestroyNotify)connect_params_free);
	g_task_run_in_thread(start, connect_start_thread);
}

/**
 * confab_pg_connection_connect_finish:
 *
 * Returns: %TRUE once the connection is ready; else %FALSE with @error:
 *   %CONFAB_PG_ERROR_CONNECT, %CONFAB_PG_ERROR_TIMEOUT or
 *   %G_IO_ERROR_CANCELLED
 */
gboolean
confab_pg_connection_connect_finish(ConfabPgConnection *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/* ---------- queries ---------- */

static void
enqueue_one(ConfabPgConnection *self, Job *job, guint timeout_ms);

/* An internal job that sets the server's statement_timeout for what
 * follows: @timeout_ms plus SERVER_TIMEOUT_MARGIN_MS. */
static Job *
server_timeout_job(guint timeout_ms)
{
	g_autofree gchar *sql =
	    g_strdup_printf("SET statement_timeout = %u", timeout_ms + SERVER_TIMEOUT_MARGIN_MS);
	return job_new(JOB_QUERY, NULL, simple(sql));
}

/* Queues @job with its deadline. One that carries megabytes has its time
 * for them beyond the query timeout (job_payload_ms()), from the server
 * too: its statement_timeout is raised for that job alone, by one job
 * before it and one after (a round trip each, for the rare large ones),
 * or the server would cancel what this side still waits for. */
static void
enqueue(ConfabPgConnection *self, Job *job)
{
	guint extra = self->query_timeout_ms > 0 ? job_payload_ms(job) : 0;

	if (extra == 0 || self->state == CONFAB_PG_CONNECTION_STATE_CLOSED) {
		enqueue_one(self, job, self->query_timeout_ms + extra);
		return;
	}
	enqueue_one(self,
		    server_timeout_job(self->query_timeout_ms + extra),
		    self->query_timeout_ms);
	enqueue_one(self, job, self->query_timeout_ms + extra);
	enqueue_one(self, server_timeout_job(self->query_timeout_ms), self->query_timeout_ms);
}

static void
enqueue_one(ConfabPgConnection *self, Job *job, guint timeout_ms)
{
	if (self->state == CONFAB_PG_CONNECTION_STATE_CLOSED) {
		g_autoptr(GError) error = g_error_new(CONFAB_PG_ERROR,
						      CONFAB_PG_ERROR_CLOSED,
						      "the connection is closed: %s",
						      self->close_error->message);
		fail_job(job, error);
		return;
	}
	if (job->task != NULL && g_task_return_error_if_cancelled(job->task)) {
		g_clear_object(&job->task);
		job_free(job);
		return;
	}
	job->deadline = deadline_after(self->query_timeout_ms > 0 ? timeout_ms : 0);
	watch_cancellable(self, job->cancellable, &job->cancelled_id);
	g_queue_push_tail(&self->queue, job);
	send_next(self);
	if (self->state != CONFAB_PG_CONNECTION_STATE_CLOSED)
		update_ready_time(self);
}

/**
 * confab_pg_connection_query_async:
 * @sql: one statement, with `$1`… for the parameters
 * @n_params: how many
 * @params: (array length=n_params) (nullable): the parameters in text form,
 *   each nullable for SQL NULL; copied
 * @cancellable: (nullable): fails the query at once; the server is asked to
 *   stop it
 *
 * Queues a statement; statements run one at a time, in the order they were
 * queued. SELECT, INSERT, UPDATE, DELETE, WITH and VALUES are prepared the
 * first time their text is seen and reused from then on. The query fails
 * with %CONFAB_PG_ERROR_TIMEOUT when its result is not in within the query
 * timeout of being queued.
 */
void
confab_pg_connection_query_async(ConfabPgConnection *self,
				 const gchar *sql,
				 guint n_params,
				 const gchar *const *params,
				 GCancellable *cancellable,
				 GAsyncReadyCallback callback,
				 gpointer user_data)
{
	g_autoptr(GTask) task = NULL;

	g_return_if_fail(CONFAB_IS_PG_CONNECTION(self));
	g_return_if_fail(sql != NULL);
	g_return_if_fail(n_params == 0 || params != NULL);
	g_return_if_fail(cancellable == NULL || G_IS_CANCELLABLE(cancellable));

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_pg_connection_query_async);
	enqueue(
	    self,
	    job_new(JOB_QUERY, task, confab_pg_batch_statement_new(sql, n_params, params, FALSE)));
}

/**
 * confab_pg_connection_query_finish:
 *
 * Returns: (transfer full): the result (its status PGRES_TUPLES_OK or
 *   PGRES_COMMAND_OK), or %NULL with @error; a server error is
 *   %CONFAB_PG_ERROR_SQL with its SQLSTATE
 */
PGresult *
confab_pg_connection_query_finish(ConfabPgConnection *self, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * confab_pg_connection_exec_script_async:
 * @script: statements separated by semicolons, without parameters
 *
 * Runs @script in one round trip (the simple query protocol). Without a BEGIN
 * of its own the server runs it as one transaction; with one, a failure rolls
 * the transaction back before the error is returned. For schema migrations
 * and other fixed SQL.
 */
void
confab_pg_connection_exec_script_async(ConfabPgConnection *self,
				       const gchar *script,
				       GCancellable *cancellable,
				       GAsyncReadyCallback callback,
				       gpointer user_data)
{
	g_autoptr(GTask) task = NULL;

	g_return_if_fail(CONFAB_IS_PG_CONNECTION(self));
	g_return_if_fail(script != NULL);

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_pg_connection_exec_script_async);
	enqueue(self, job_new(JOB_SCRIPT, task, simple(script)));
}

/**
 * confab_pg_connection_exec_script_finish:
 *
 * Returns: (transfer full): the result of the last statement, or %NULL with
 *   the first error
 */
PGresult *
confab_pg_connection_exec_script_finish(ConfabPgConnection *self,
					GAsyncResult *result,
					GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

/**
 * confab_pg_connection_transaction_async:
 * @batch: the statements; copied
 *
 * Runs BEGIN, the statements of @batch in order, and COMMIT as one job:
 * nothing else queued on the connection runs in between. At the first
 * statement that fails the rest are skipped, ROLLBACK is sent, and the
 * error (prefixed with the statement's index, from 1) is returned once the
 * rollback is done. A COMMIT that fails (a serialization failure, a
 * deferred constraint) is an error too. On a timeout or a cancellation the
 * caller is answered at once and the transaction is rolled back.
 */
void
confab_pg_connection_transaction_async(ConfabPgConnection *self,
				       ConfabPgBatch *batch,
				       GCancellable *cancellable,
				       GAsyncReadyCallback callback,
				       gpointer user_data)
{
	g_autoptr(GTask) task = NULL;
	Job *job;

	g_return_if_fail(CONFAB_IS_PG_CONNECTION(self));
	g_return_if_fail(batch != NULL);

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_pg_connection_transaction_async);
	job = job_new(JOB_TRANSACTION, task, simple("BEGIN"));
	job->results = g_ptr_array_new_with_free_func((GDestroyNotify)PQclear);
	for (guint i = 0; i < confab_pg_batch_get_length(batch); i++) {
		const ConfabPgStatement *statement = confab_pg_batch_get_statement(batch, i);
		g_ptr_array_add(
		    job->steps,
		    confab_pg_batch_statement_new(statement->sql,
						  statement->n_params,
						  (const gchar *const *)statement->params,
						  FALSE));
	}
	g_ptr_array_add(job->steps, simple("COMMIT"));
	enqueue(self, job);
}

/**
 * confab_pg_connection_transaction_finish:
 *
 * Returns: (transfer full) (element-type PGresult): the results of the
 *   statements of the batch, in order, or %NULL with @error
 */
GPtrArray *
confab_pg_connection_transaction_finish(ConfabPgConnection *self,
					GAsyncResult *result,
					GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, self), NULL);
	return g_task_propagate_pointer(G_TASK(result), error);
}

static gboolean
valid_channel(const gchar *channel)
{
	/* an identifier longer than NAMEDATALEN - 1 would be truncated */
	return channel != NULL && *channel != '\0' && strlen(channel) < 64 &&
	       g_utf8_validate(channel, -1, NULL);
}

/**
 * confab_pg_connection_listen_async:
 * @channel: a channel name (any text up to 63 bytes; quoted here)
 *
 * Sends `LISTEN "channel"`; from when it completes, `NOTIFY`s on @channel
 * arrive as #ConfabPgConnection::notification.
 */
void
confab_pg_connection_listen_async(ConfabPgConnection *self,
				  const gchar *channel,
				  GCancellable *cancellable,
				  GAsyncReadyCallback callback,
				  gpointer user_data)
{
	g_autoptr(GTask) task = NULL;
	g_autoptr(GString) sql = NULL;

	g_return_if_fail(CONFAB_IS_PG_CONNECTION(self));

	task = g_task_new(self, cancellable, callback, user_data);
	g_task_set_source_tag(task, confab_pg_connection_listen_async);
	if (!valid_channel(channel)) {
		g_task_return_new_error(task,
					CONFAB_PG_ERROR,
					CONFAB_PG_ERROR_FAILED,
					"invalid channel name");
		return;
	}
	sql = g_string_new("LISTEN \"");
	for (const gchar *p = channel; *p != '\0'; p++) {
		if (*p == '"')
			g_string_append_c(sql, '"');
		g_string_append_c(sql, *p);
	}
	g_string_append_c(sql, '"');
	enqueue(self, job_new(JOB_QUERY, task, simple(sql->str)));
}

gboolean
confab_pg_connection_listen_finish(ConfabPgConnection *self, GAsyncResult *result, GError **error)
{
	g_autoptr(PGresult) res = NULL;
	g_return_val_if_fail(g_task_is_valid(result, self), FALSE);
	res = g_task_propagate_pointer(G_TASK(result), error);
	return res != NULL;
}

static void
listen_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GError) error = NULL;
	if (!confab_pg_connection_listen_finish(CONFAB_PG_CONNECTION(source), result, &error))
		g_debug("LISTEN failed: %s", error->message);
}

/**
 * confab_pg_connection_listen:
 *
 * confab_pg_connection_listen_async() without waiting for the answer.
 */
void
confab_pg_connection_listen(ConfabPgConnection *self, const gchar *channel)
{
	confab_pg_connection_listen_async(self, channel, NULL, listen_done, NULL);
}

/**
 * confab_pg_connection_close:
 *
 * Closes the connection: queued and running queries fail with
 * %CONFAB_PG_ERROR_CLOSED and #ConfabPgConnection::closed is emitted.
 */
void
confab_pg_connection_close(ConfabPgConnection *self)
{
	g_return_if_fail(CONFAB_IS_PG_CONNECTION(self));
	close_with(self, CONFAB_PG_ERROR_CLOSED, "the connection was closed");
}

/* ---------- accessors ---------- */

ConfabPgConnectionState
confab_pg_connection_get_state(ConfabPgConnection *self)
{
	g_return_val_if_fail(CONFAB_IS_PG_CONNECTION(self), CONFAB_PG_CONNECTION_STATE_CLOSED);
	return self->state;
}

/**
 * confab_pg_connection_get_transaction_status:
 *
 * Returns: where the connection stands between jobs: PQTRANS_IDLE,
 *   PQTRANS_INTRANS or PQTRANS_INERROR (PQTRANS_ACTIVE while a statement
 *   runs, PQTRANS_UNKNOWN without a connection)
 */
PGTransactionStatusType
confab_pg_connection_get_transaction_status(ConfabPgConnection *self)
{
	g_return_val_if_fail(CONFAB_IS_PG_CONNECTION(self), PQTRANS_UNKNOWN);
	if (self->conn == NULL || !self->handshake_done)
		return PQTRANS_UNKNOWN;
	return PQtransactionStatus(self->conn);
}

/**
 * confab_pg_connection_get_n_queued:
 *
 * Returns: how many jobs wait or run
 */
guint
confab_pg_connection_get_n_queued(ConfabPgConnection *self)
{
	g_return_val_if_fail(CONFAB_IS_PG_CONNECTION(self), 0);
	return self->queue.length + (self->in_flight != NULL && !self->in_flight->setup ? 1 : 0);
}

gint
confab_pg_connection_get_backend_pid(ConfabPgConnection *self)
{
	g_return_val_if_fail(CONFAB_IS_PG_CONNECTION(self), 0);
	return self->conn != NULL && self->handshake_done ? PQbackendPID(self->conn) : 0;
}

void
confab_pg_connection_set_connect_timeout(ConfabPgConnection *self, guint timeout_ms)
{
	g_return_if_fail(CONFAB_IS_PG_CONNECTION(self));
	if (self->connect_timeout_ms == timeout_ms)
		return;
	self->connect_timeout_ms = timeout_ms;
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_CONNECT_TIMEOUT]);
}

guint
confab_pg_connection_get_connect_timeout(ConfabPgConnection *self)
{
	g_return_val_if_fail(CONFAB_IS_PG_CONNECTION(self), 0);
	return self->connect_timeout_ms;
}

/**
 * confab_pg_connection_set_query_timeout:
 * @timeout_ms: 0 for none
 *
 * Sets the time a job has from being queued to its result. Set before
 * connecting, it also sets the server's `statement_timeout` (one second
 * longer, so as not to race the client's timer).
 */
void
confab_pg_connection_set_query_timeout(ConfabPgConnection *self, guint timeout_ms)
{
	g_return_if_fail(CONFAB_IS_PG_CONNECTION(self));
	if (self->query_timeout_ms == timeout_ms)
		return;
	self->query_timeout_ms = timeout_ms;
	g_object_notify_by_pspec(G_OBJECT(self), properties[PROP_QUERY_TIMEOUT]);
}

guint
confab_pg_connection_get_query_timeout(ConfabPgConnection *self)
{
	g_return_val_if_fail(CONFAB_IS_PG_CONNECTION(self), 0);
	return self->query_timeout_ms;
}

/* ---------- GObject ---------- */

static void
confab_pg_connection_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
	ConfabPgConnection *self = CONFAB_PG_CONNECTION(object);
	switch (prop_id) {
	case PROP_CONNINFO:
		g_value_set_string(value, self->conninfo);
		break;
	case PROP_CONNECT_TIMEOUT:
		g_value_set_uint(value, self->connect_timeout_ms);
		break;
	case PROP_QUERY_TIMEOUT:
		g_value_set_uint(value, self->query_timeout_ms);
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
	}
}

static void
confab_pg_connection_set_property(GObject *object,
				  guint prop_id,
				  const GValue *value,
				  GParamSpec *pspec)
{
	ConfabPgConnection *self = CONFAB_PG_CONNECTION(object);
	switch (prop_id) {
	case PROP_CONNINFO:
		self->conninfo = g_value_dup_string(value);
		break;
	case PROP_PASSWORD:
		self->password = g_value_dup_string(value);
		break;
	case PROP_CONNECT_TIMEOUT:
		confab_pg_connection_set_connect_timeout(self, g_value_get_uint(value));
		break;
	case PROP_QUERY_TIMEOUT:
		confab_pg_connection_set_query_timeout(self, g_value_get_uint(value));
		break;
	default:
		G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
	}
}

static void
confab_pg_connection_dispose(GObject *object)
{
	ConfabPgConnection *self = CONFAB_PG_CONNECTION(object);
	/* pending calls hold a reference: nothing is left to answer */
	if (self->state != CONFAB_PG_CONNECTION_STATE_CLOSED &&
	    self->state != CONFAB_PG_CONNECTION_STATE_NEW)
		close_with(self, CONFAB_PG_ERROR_CLOSED, "the connection was disposed");
	G_OBJECT_CLASS(confab_pg_connection_parent_class)->dispose(object);
}

static void
confab_pg_connection_finalize(GObject *object)
{
	ConfabPgConnection *self = CONFAB_PG_CONNECTION(object);
	Job *job;

	while ((job = g_queue_pop_head(&self->queue)) != NULL)
		job_free(job);
	g_clear_pointer(&self->in_flight, job_free);
	g_clear_pointer(&self->conn, PQfinish);
	g_clear_pointer(&self->context, g_main_context_unref);
	g_clear_pointer(&self->stmts, g_hash_table_unref);
	g_clear_error(&self->close_error);
	g_free(self->conninfo);
	if (self->password != NULL)
		memset(self->password, 0, strlen(self->password));
	g_free(self->password);
	G_OBJECT_CLASS(confab_pg_connection_parent_class)->finalize(object);
}

/**
 * confab_pg_connection_new_conninfo_pspecs:
 *
 * The construct-only properties of a connection, and of a #ConfabPgPool for
 * the connections it makes: `conninfo`, a libpq URI or `key=value` string,
 * and `password`, which wins over the conninfo's (e.g. from a password
 * file; without one libpq looks in the conninfo, `PGPASSWORD` and
 * `~/.pgpass`).
 */
void
confab_pg_connection_new_conninfo_pspecs(GParamSpec **conninfo, GParamSpec **password)
{
	const GParamFlags flags = G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS;

	*conninfo = g_param_spec_string("conninfo", NULL, NULL, NULL, G_PARAM_READWRITE | flags);
	*password = g_param_spec_string("password", NULL, NULL, NULL, G_PARAM_WRITABLE | flags);
}

/**
 * confab_pg_connection_class_new_notification:
 *
 * Returns: the `notification` signal (@channel, @payload) of a connection
 *   or a #ConfabPgPool
 */
guint
confab_pg_connection_class_new_notification(GObjectClass *klass)
{
	return g_signal_new("notification",
			    G_TYPE_FROM_CLASS(klass),
			    G_SIGNAL_RUN_LAST,
			    0,
			    NULL,
			    NULL,
			    NULL,
			    G_TYPE_NONE,
			    2,
			    G_TYPE_STRING,
			    G_TYPE_STRING);
}

static void
confab_pg_connection_class_init(ConfabPgConnectionClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

	object_class->get_property = confab_pg_connection_get_property;
	object_class->set_property = confab_pg_connection_set_property;
	object_class->dispose = confab_pg_connection_dispose;
	object_class->finalize = confab_pg_connection_finalize;

	confab_pg_connection_new_conninfo_pspecs(&properties[PROP_CONNINFO],
						 &properties[PROP_PASSWORD]);
	properties[PROP_CONNECT_TIMEOUT] = g_param_spec_uint("connect-timeout",
							     NULL,
							     NULL,
							     0,
							     G_MAXUINT,
							     DEFAULT_CONNECT_TIMEOUT_MS,
							     rw);
	properties[PROP_QUERY_TIMEOUT] = g_param_spec_uint("query-timeout",
							   NULL,
							   NULL,
							   0,
							   G_MAXINT32,
							   DEFAULT_QUERY_TIMEOUT_MS,
							   rw);
	g_object_class_install_properties(object_class, N_PROPS, properties);

	/**
	 * ConfabPgConnection::closed:
	 * @error: why: %CONFAB_PG_ERROR_CLOSED when lost or closed, or the
	 *   error that ended connecting
	 *
	 * Emitted once, when the connection ends for good, after every query
	 * it held has failed.
	 */
	signals[SIGNAL_CLOSED] = g_signal_new("closed",
					      G_TYPE_FROM_CLASS(klass),
					      G_SIGNAL_RUN_LAST,
					      0,
					      NULL,
					      NULL,
					      NULL,
					      G_TYPE_NONE,
					      1,
					      G_TYPE_ERROR);
	/**
	 * ConfabPgConnection::notification:
	 * @channel: the channel
	 * @payload: the payload, maybe empty
	 *
	 * A NOTIFY on a channel this connection listens on. (Not "notify":
	 * GObject has that one.)
	 */
	signals[SIGNAL_NOTIFICATION] = confab_pg_connection_class_new_notification(object_class);
}

static void
confab_pg_connection_init(ConfabPgConnection *self)
{
	self->fd = -1;
	self->connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
	self->query_timeout_ms = DEFAULT_QUERY_TIMEOUT_MS;
	self->stmts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_queue_init(&self->queue);
}

/**
 * confab_pg_connection_new:
 * @conninfo: a libpq URI (`postgresql://user@host/db?sslmode=…`) or
 *   `key=value` string
 * @password: (nullable): wins over any password in @conninfo
 *
 * Returns: (transfer full): a connection, not yet connected
 */
ConfabPgConnection *
confab_pg_connection_new(const gchar *conninfo, const gchar *password)
{
	g_return_val_if_fail(conninfo != NULL, NULL);
	return g_object_new(CONFAB_TYPE_PG_CONNECTION,
			    "conninfo",
			    conninfo,
			    "password",
			    password,
			    NULL);
}
