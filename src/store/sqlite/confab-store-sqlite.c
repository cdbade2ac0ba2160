/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabStore"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>
#include <unistd.h>

#include "store/confab-store-call.h"
#include "store/sqlite/confab-store-sqlite.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * The SQLite store.
 *
 * One writer thread owns the only writable connection. Callers enqueue jobs
 * (copied data and a GTask) on a GAsyncQueue; the thread takes every job that
 * is waiting, runs them in one BEGIN IMMEDIATE transaction (each in its own
 * savepoint, so one bad job does not sink the others), commits once, and only
 * then returns each GTask, whose callback runs in the caller's main context.
 * That is group commit: under load one commit carries many turns.
 *
 * Reads run on a pool of reader threads of its own, each with a read-only
 * connection; in WAL mode they never wait for the writer.
 *
 * One process owns the database, so what must be atomic across turns —
 * quota counts and the sessions with a turn running — is kept here in
 * memory under one lock, loaded at start; a count becomes durable with the
 * turn's first commit. (A PostgreSQL store, shared by several daemons,
 * does the same in SQL.)
 */

#define WRITER_BATCH_MAX 512
/* group commit under load: after a batch of more than one job, the writer
 * lets this long (microseconds) pass before taking the next batch, as
 * PostgreSQL's commit_delay does when other transactions are in progress
 * (commit_siblings) */
#define WRITER_GATHER_US 200
/* search is indexed after this many writes, or when the writer has been
 * idle this long (microseconds), at most SEARCH_INDEX_CHUNK rows a time */
#define SEARCH_INDEX_AFTER_WRITES 64
#define SEARCH_INDEX_IDLE_US	  (200 * 1000)
#define SEARCH_INDEX_CHUNK	  256
/* the WAL is copied into the database by a thread of its own once it holds
 * this many pages (SQLite's default, which does it in the committing
 * thread); the writer does it itself only past CHECKPOINT_PAGES_MAX, when
 * the checkpoints fall behind */
#define CHECKPOINT_PAGES     1000
#define CHECKPOINT_PAGES_MAX 8000
/* what the checkpoint thread's queue carries */
#define CHECKPOINT_RUN	1
#define CHECKPOINT_STOP 2

typedef sqlite3_stmt ConfabCachedStmt;

typedef struct {
	sqlite3 *db;		  /* owned */
	GHashTable *stmts;	  /* owned: SQL text -> sqlite3_stmt */
	GHashTable *static_stmts; /* owned: SQL literal's address -> stmts' statement */
	/* the writer, while a batch runs without savepoints (tally_usage):
	 * the requests its turns counted, "owner\nmonth" -> count, written
	 * once per owner at the end of the batch */
	GHashTable *batch_usage; /* owned */
	/* and the tokens its turns used, "key\nmonth" -> gint64* (issue 30) */
	GHashTable *batch_tokens; /* owned */
	/* and what its answers add to the usage per owner, token and agent:
	 * use_key() -> ConfabStoreUsageRow, summed */
	GHashTable *batch_use; /* owned */
	gboolean tally_usage;
} Conn;

struct _ConfabStoreSqlite {
	GObject parent_instance;
	gchar *path;		       /* owned */
	Conn *writer;		       /* owned; used by the writer thread only */
	GThread *thread;	       /* owned */
	GAsyncQueue *queue;	       /* owned: Job */
	GAsyncQueue *read_queue;       /* owned: Job */
	GPtrArray *reader_threads;     /* owned: GThread, each with its Conn */
	Conn *checkpoint_conn;	       /* owned; used by the checkpoint thread only */
	GThread *checkpoint_thread;    /* owned */
	GAsyncQueue *checkpoint_queue; /* owned: CHECKPOINT_RUN, CHECKPOINT_STOP */
	gint checkpoint_asked;	       /* atomic: a CHECKPOINT_RUN is queued */
	/* the writer thread's only */
	gint wal_pages;		    /* the WAL's size at the last commit */
	gint wal_pages_asked;	    /* and when the writer last asked for a checkpoint */
	gsize checkpoints_finished; /* checkpoints (below) when it last finished one */
	gboolean closed;
	gsize commits;	   /* atomic */
	gsize jobs;	   /* atomic */
	gsize checkpoints; /* atomic */
	guint unindexed;   /* writer thread only: writes since search was indexed */
	guint last_batch;  /* writer thread only: the jobs of the last batch */
	gint search_index; /* atomic: full-text search kept (the default) */

	GMutex lock;		  /* guards what follows */
	GHashTable *quotas;	  /* owned: owner -> guint64*, the owners' own quotas */
	GHashTable *usage;	  /* owned: owner -> guint64*, requests in usage_month */
	gchar *usage_month;	  /* owned: YYYY-MM */
	GHashTable *rates;	  /* owned: owner -> gint64*, GCRA's arrival time (monotonic) */
	GHashTable *flying;	  /* owned: owner or token id -> guint*, its turns in flight */
	GHashTable *token_rates;  /* owned: owner or token id -> gint64*, tokens' GCRA */
	GHashTable *month_tokens; /* owned: owner or token id -> guint64*, in usage_month */
	GHashTable *busy;	  /* owned: session ids with a turn running */
};

static void
confab_store_sqlite_iface_init(ConfabStoreInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(ConfabStoreSqlite,
			      confab_store_sqlite,
			      G_TYPE_OBJECT,
			      G_IMPLEMENT_INTERFACE(CONFAB_TYPE_STORE,
						    confab_store_sqlite_iface_init))

/* ---------- connections and statements ---------- */

static void
confab_cached_stmt_reset(ConfabCachedStmt *stmt)
{
	sqlite3_reset(stmt);
	sqlite3_clear_bindings(stmt);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfabCachedStmt, confab_cached_stmt_reset)

static void
stmt_finalize(gpointer stmt)
{
	sqlite3_finalize(stmt);
}

static void
conn_free(Conn *conn)
{
	if (conn == NULL)
		return;
	g_clear_pointer(&conn->batch_usage, g_hash_table_unref);
	g_clear_pointer(&conn->batch_tokens, g_hash_table_unref);
	g_clear_pointer(&conn->batch_use, g_hash_table_unref);
	g_clear_pointer(&conn->static_stmts, g_hash_table_unref);
	g_clear_pointer(&conn->stmts, g_hash_table_unref);
	if (conn->db != NULL)
		sqlite3_close_v2(conn->db);
	g_free(conn);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Conn, conn_free)

/* What a failed SQLite call means to a caller. */
static ConfabErrorCode
error_code_for(gint rc)
{
	switch (rc & 0xff) {
	case SQLITE_FULL:     /* the disk, or the file size limit */
	case SQLITE_IOERR:    /* the disk failed a read or write */
	case SQLITE_CANTOPEN: /* the file or its journal went away */
	case SQLITE_READONLY: /* the file system was remounted read-only */
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		/* the store, not the request: worth trying again later */
		return CONFAB_ERROR_STORE_UNAVAILABLE;
	default:
		return rc == SQLITE_CONSTRAINT_FOREIGNKEY ? CONFAB_ERROR_NOT_FOUND
							  : CONFAB_ERROR_FAILED;
	}
}

static void
set_sqlite_error(GError **error, sqlite3 *db, const gchar *what)
{
	gint rc = sqlite3_extended_errcode(db);
	g_set_error(error,
		    CONFAB_ERROR,
		    error_code_for(rc),
		    "%s: %s (%d)",
		    what,
		    sqlite3_errmsg(db),
		    rc);
}

static gboolean
conn_exec(Conn *conn, const gchar *sql, GError **error)
{
	gchar *errmsg = NULL;
	if (sqlite3_exec(conn->db, sql, NULL, NULL, &errmsg) != SQLITE_OK) {
		g_set_error(error,
			    CONFAB_ERROR,
			    error_code_for(sqlite3_extended_errcode(conn->db)),
			    "%s: %s",
			    sql,
			    errmsg);
		sqlite3_free(errmsg);
		return FALSE;
	}
	return TRUE;
}

/* Returns a cached, reset statement; the caller resets it again with
 * g_autoptr(ConfabCachedStmt) and never finalizes it. */
static sqlite3_stmt *
conn_prepare(Conn *conn, const gchar *sql, GError **error)
{
	sqlite3_stmt *stmt = g_hash_table_lookup(conn->stmts, sql);
	if (stmt != NULL)
		return stmt;
	if (sqlite3_prepare_v3(conn->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, NULL) !=
	    SQLITE_OK) {
		set_sqlite_error(error, conn->db, "preparing statement");
		return NULL;
	}
	g_hash_table_insert(conn->stmts, g_strdup(sql), stmt);
	return stmt;
}

/*
 * conn_prepare() for SQL that is a string literal, found by its address:
 * the writer's statements of every turn, whose text is long to hash (a
 * twentieth of the writer's instructions went to g_str_hash). Never for
 * SQL built at run time, whose address may come back with other text.
 */
static sqlite3_stmt *
conn_prepare_static(Conn *conn, const gchar *sql, GError **error)
{
	sqlite3_stmt *stmt = g_hash_table_lookup(conn->static_stmts, sql);

	if (stmt != NULL)
		return stmt;
	stmt = conn_prepare(conn, sql, error);
	if (stmt != NULL)
		g_hash_table_insert(conn->static_stmts, (gpointer)sql, stmt);
	return stmt;
}

/* One statement without results, prepared once per connection: the
 * writer's transaction and savepoint statements, which sqlite3_exec()
 * would parse again for every job. */
static gboolean
conn_run(Conn *conn, const gchar *sql, GError **error)
{
	g_autoptr(ConfabCachedStmt) stmt = conn_prepare_static(conn, sql, error);

	if (stmt == NULL)
		return FALSE;
	if (sqlite3_step(stmt) != SQLITE_DONE) {
		g_set_error(error,
			    CONFAB_ERROR,
			    error_code_for(sqlite3_extended_errcode(conn->db)),
			    "%s: %s",
			    sql,
			    sqlite3_errmsg(conn->db));
		return FALSE;
	}
	return TRUE;
}

static gboolean
stmt_step_done(Conn *conn, sqlite3_stmt *stmt, GError **error)
{
	gint rc = sqlite3_step(stmt);
	if (rc != SQLITE_DONE) {
		set_sqlite_error(error, conn->db, "writing");
		return FALSE;
	}
	return TRUE;
}

static void
bind_text(sqlite3_stmt *stmt, gint idx, const gchar *text)
{
	if (text == NULL)
		sqlite3_bind_null(stmt, idx);
	else
		sqlite3_bind_text(stmt, idx, text, -1, SQLITE_STATIC);
}

static const gchar *
column_text(sqlite3_stmt *stmt, gint idx)
{
	return (const gchar *)sqlite3_column_text(stmt, idx);
}

static Conn *
conn_open(const gchar *path, gboolean readonly, GError **error)
{
	g_autoptr(Conn) conn = g_new0(Conn, 1);
	gint flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_PRIVATECACHE;

	flags |= readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
	conn->stmts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, stmt_finalize);
	conn->static_stmts = g_hash_table_new(g_direct_hash, g_direct_equal);
	conn->batch_usage = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	conn->batch_tokens = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	conn->batch_use = g_hash_table_new_full(g_str_hash,
						g_str_equal,
						g_free,
						(GDestroyNotify)confab_store_usage_row_free);
	if (sqlite3_open_v2(path, &conn->db, flags, NULL) != SQLITE_OK) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_FAILED,
			    "opening %s: %s",
			    path,
			    conn->db != NULL ? sqlite3_errmsg(conn->db) : "out of memory");
		return NULL;
	}
	sqlite3_extended_result_codes(conn->db, 1);
	sqlite3_busy_timeout(conn->db, 10000);
	if (!readonly) {
		/* foreign keys are not enforced: a turn's messages go to a
		 * conversation that its own job inserted or found
		 * (touch_session()), and deleting one deletes its messages
		 * (op_delete_session's sql_sqlite_then). SQLite's check, a lookup per
		 * message, was a fourteenth of the writer's work per turn. */
		if (!conn_exec(conn,
			       "PRAGMA journal_mode=WAL;"
			       "PRAGMA synchronous=NORMAL;"
			       "PRAGMA foreign_keys=OFF;"
			       "PRAGMA cache_size=-4096;"
			       "PRAGMA temp_store=MEMORY;",
			       error))
			return NULL;
	} else {
		if (!conn_exec(conn, "PRAGMA query_only=1;PRAGMA cache_size=-2048;", error))
			return NULL;
	}
	return g_steal_pointer(&conn);
}

/* ---------- schema ---------- */

static const gchar migrate_v1[] =
    "CREATE TABLE agents ("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  name TEXT NOT NULL,"
    "  instructions TEXT NOT NULL DEFAULT '',"
    "  provider TEXT NOT NULL,"
    "  base_url TEXT,"
    "  upstream_model TEXT,"
    "  api_key TEXT,"
    "  api_key_file TEXT,"
    "  params TEXT,"
    "  connect_timeout INTEGER NOT NULL DEFAULT 0,"
    "  first_byte_timeout INTEGER NOT NULL DEFAULT 0,"
    "  idle_timeout INTEGER NOT NULL DEFAULT 0,"
    "  total_timeout INTEGER NOT NULL DEFAULT 0,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  deleted_at INTEGER NOT NULL DEFAULT 0"
    ") STRICT;"
    "CREATE TABLE tokens ("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  hash BLOB NOT NULL UNIQUE,"
    "  owner TEXT NOT NULL,"
    "  name TEXT NOT NULL DEFAULT '',"
    "  scopes TEXT NOT NULL,"
    "  agent_id TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  expires_at INTEGER NOT NULL DEFAULT 0,"
    "  revoked_at INTEGER NOT NULL DEFAULT 0"
    ") STRICT;"
    "CREATE TABLE sessions ("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  owner TEXT NOT NULL,"
    "  agent_id TEXT NOT NULL,"
    "  source INTEGER NOT NULL,"
    "  title TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX sessions_by_owner ON sessions (owner, source, id);"
    "CREATE INDEX sessions_by_owner_agent ON sessions (owner, source, agent_id, id);"
    "CREATE TABLE messages ("
    "  id TEXT NOT NULL,"
    "  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,"
    "  role TEXT NOT NULL,"
    "  model TEXT NOT NULL,"
    "  content TEXT NOT NULL,"
    "  content_blocks TEXT NOT NULL,"
    "  status INTEGER NOT NULL DEFAULT 0,"
    "  finish_reason TEXT,"
    "  prompt_tokens INTEGER,"
    "  completion_tokens INTEGER,"
    "  created_at INTEGER NOT NULL"
    ") STRICT;"
    "CREATE UNIQUE INDEX messages_by_session ON messages (session_id, id);"
    "CREATE TABLE quotas ("
    "  owner TEXT PRIMARY KEY NOT NULL,"
    "  monthly_requests INTEGER NOT NULL"
    ") STRICT;"
    "CREATE TABLE usage ("
    "  owner TEXT NOT NULL,"
    "  month TEXT NOT NULL,"
    "  requests INTEGER NOT NULL,"
    "  PRIMARY KEY (owner, month)"
    ") STRICT, WITHOUT ROWID;";

static const gchar migrate_v2[] =
    "ALTER TABLE agents ADD COLUMN mcp_servers TEXT;"
    "ALTER TABLE agents ADD COLUMN max_steps INTEGER NOT NULL DEFAULT 10;";

/*
 * The text of a message that search finds: its text parts, joined, at most
 * SEARCH_TEXT_MAX characters (a 10 MiB answer is not indexed whole). A
 * content that is not JSON is not indexed, never refused.
 */
#define SEARCH_TEXT_MAX_CHARS 65536
#define SEARCH_TEXT_MAX	      G_STRINGIFY(SEARCH_TEXT_MAX_CHARS)
#define SEARCH_TEXT(content)                                                                       \
	"(SELECT substr(group_concat(json_extract(" content ", j.fullkey || '.text'), ' '), 1, "   \
	"" SEARCH_TEXT_MAX ") FROM json_each(" content ") AS j WHERE j.type = 'object' AND "       \
	"json_extract(" content ", j.fullkey || '.type') = 'text')"
/* rows of one conversation in the index: its doc << 20 | n, n = 0 for the
 * title and 1, 2, ... for its messages */
#define SEARCH_ROW_BITS "20"
#define SEARCH_MAX_ROWS "1048576"

/*
 * Full-text search of the conversations (GNOME Shell's search provider).
 * Each conversation has a number, its doc, in creation order; every row of
 * the FTS5 table `search` (its title, each user or assistant message) has
 * the rowid doc << 20 | n, so a match gives the conversation without a
 * lookup and the rows of one conversation are one rowid range. Schema v3
 * kept it with triggers in each turn's own transaction; v4 queues and
 * indexes in batches (migrate_v4).
 */
static const gchar migrate_v3[] =
    "CREATE TABLE search_docs ("
    "  doc INTEGER PRIMARY KEY,"
    "  session_id TEXT NOT NULL UNIQUE,"
    "  owner TEXT NOT NULL,"
    "  rows INTEGER NOT NULL"
    ") STRICT;"
    "CREATE INDEX search_docs_by_owner ON search_docs (owner, doc);"
    /* prefix indexes: the Shell searches from the first letter typed */
    "CREATE VIRTUAL TABLE search USING fts5(text, "
    "  tokenize = 'unicode61 remove_diacritics 2', prefix = '1 2');"
    /* what the database holds already, in creation order */
    "INSERT INTO search_docs (session_id, owner, rows) "
    "  SELECT id, owner, 1 FROM sessions ORDER BY id;"
    "INSERT INTO search (rowid, text) "
    "  SELECT d.doc << " SEARCH_ROW_BITS ", s.title FROM search_docs d "
    "  JOIN sessions s ON s.id = d.session_id WHERE s.title IS NOT NULL;"
    "INSERT INTO search (rowid, text) SELECT (doc << " SEARCH_ROW_BITS ") | n, t FROM ("
    "  SELECT d.doc AS doc, row_number() OVER "
    "    (PARTITION BY m.session_id ORDER BY m.id) AS n, "
    "  CASE WHEN json_valid(m.content) THEN " SEARCH_TEXT(
	"m.content") " END AS t "
		     "  FROM messages m JOIN search_docs d ON d.session_id = m.session_id "
		     "  WHERE m.role IN ('user', 'assistant')) WHERE n < " SEARCH_MAX_ROWS ";"
		     "UPDATE search_docs SET rows = MIN(" SEARCH_MAX_ROWS ", 1 + (SELECT count(*) "
		     "  FROM messages m WHERE m.session_id = search_docs.session_id "
		     "  AND m.role IN ('user', 'assistant')));"
		     /* and what comes */
		     "CREATE TRIGGER search_session_new AFTER INSERT ON sessions BEGIN"
		     "  INSERT INTO search_docs (session_id, owner, rows) VALUES (new.id, "
		     "new.owner, 1);"
		     "  INSERT INTO search (rowid, text) SELECT doc << " SEARCH_ROW_BITS
		     ", new.title"
		     "    FROM search_docs WHERE session_id = new.id AND new.title IS NOT "
		     "NULL;"
		     "END;"
		     "CREATE TRIGGER search_message_new AFTER INSERT ON messages"
		     "  WHEN new.role IN ('user', 'assistant') AND json_valid(new.content) "
		     "BEGIN"
		     "  INSERT INTO search (rowid, text) SELECT (doc << " SEARCH_ROW_BITS
		     ") | rows, "
		     "" SEARCH_TEXT(
			 "new.content") " FROM search_docs"
					"    WHERE session_id = new.session_id AND rows "
					"< " SEARCH_MAX_ROWS ";"
					"  UPDATE search_docs SET rows = rows + 1"
					"    WHERE session_id = new.session_id AND rows "
					"< " SEARCH_MAX_ROWS ";"
					"END;"
					"CREATE TRIGGER search_session_gone AFTER DELETE "
					"ON sessions BEGIN"
					"  DELETE FROM search WHERE rowid BETWEEN"
					"    (SELECT doc << " SEARCH_ROW_BITS
					" FROM search_docs WHERE session_id = old.id)"
					"    AND (SELECT (doc << " SEARCH_ROW_BITS
					") | (" SEARCH_MAX_ROWS " - 1)"
					"      FROM search_docs WHERE session_id = old.id);"
					"  DELETE FROM search_docs WHERE session_id = "
					"old.id;"
					"END;";

/* What queues new conversations and messages for search (schema v4, and
 * when the index is turned on again). */
#define SEARCH_QUEUE_TRIGGERS                                                                      \
	"CREATE TRIGGER search_session_queued AFTER INSERT ON sessions BEGIN"                      \
	"  INSERT INTO search_pending (session_id) VALUES (new.id);"                               \
	"END;"                                                                                     \
	"CREATE TRIGGER search_message_queued AFTER INSERT ON messages"                            \
	"  WHEN new.role IN ('user', 'assistant') BEGIN"                                           \
	"  INSERT INTO search_pending (session_id, message_id)"                                    \
	"    VALUES (new.session_id, new.id);"                                                     \
	"END;"

/*
 * v4: triggers only queue each new conversation and user or assistant
 * message in search_pending, in the turn's transaction; the writer indexes
 * the queue later, many turns in one transaction (writer_index_search()).
 * FTS5 writes a segment per transaction: indexing each turn in its own
 * commit cost 40-57 us a row (prefix indexes included), in batches of a
 * few hundred rows 9-15 us. Deleting a conversation still drops its rows
 * at once (search_session_gone); what it left queued finds nothing.
 */
static const gchar migrate_v4[] = "DROP TRIGGER search_session_new;"
				  "DROP TRIGGER search_message_new;"
				  "CREATE TABLE search_pending ("
				  "  seq INTEGER PRIMARY KEY,"
				  "  session_id TEXT NOT NULL,"
				  "  message_id TEXT"
				  ") STRICT;" SEARCH_QUEUE_TRIGGERS;

/* v6: the Responses API: a response's messages (its input and its answer)
 * carry its id */
static const gchar migrate_v6[] = "ALTER TABLE messages ADD COLUMN response_id TEXT;"
				  "CREATE INDEX messages_by_response ON messages (response_id) "
				  "  WHERE response_id IS NOT NULL;";

/*
 * v7 (approvals, issue 22): tool calls that wait for a person's decision.
 * A migration of its own, apart from the others, so that it can be
 * renumbered at a merge; nothing else reads or writes the table.
 */
static const gchar migrate_v7_approvals[] =
    "CREATE TABLE approvals ("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  owner TEXT NOT NULL,"
    "  agent_id TEXT NOT NULL,"
    "  session_id TEXT NOT NULL,"
    "  server TEXT NOT NULL,"
    "  tool TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  arguments TEXT NOT NULL,"
    "  tool_call_id TEXT NOT NULL,"
    "  state TEXT NOT NULL DEFAULT 'pending',"
    "  decided_by TEXT,"
    "  reason TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  decided_at INTEGER NOT NULL DEFAULT 0"
    ") STRICT;"
    "CREATE INDEX approvals_by_session ON approvals (session_id);";

/*
 * v12 (elicitations, issue 34): an MCP server's `elicitation/create`, put
 * to the person whose turn called it; answered with one conditional
 * UPDATE of a pending row (confab-elicitations.c).
 */
static const gchar migrate_v12_elicitations[] =
    "CREATE TABLE elicitations ("
    "  id TEXT PRIMARY KEY NOT NULL,"
    "  owner TEXT NOT NULL,"
    "  agent_id TEXT NOT NULL,"
    "  session_id TEXT NOT NULL,"
    "  server TEXT NOT NULL,"
    "  message TEXT NOT NULL,"
    "  schema TEXT NOT NULL,"
    "  state TEXT NOT NULL DEFAULT 'pending',"
    "  content TEXT,"
    "  answered_by TEXT,"
    "  created_at INTEGER NOT NULL,"
    "  answered_at INTEGER NOT NULL DEFAULT 0,"
    "  instance_id TEXT"
    ") STRICT;"
    "CREATE INDEX elicitations_by_session ON elicitations (session_id);";

/*
 * v13 (limits, issue 30): an owner's or a token's own limits, each 0 when
 * it has none (the owner's then fall back to `[quota]`). The engine keeps
 * them in memory and gives the ones that apply to each admission.
 */
static const gchar migrate_v13_limits[] = "CREATE TABLE limits ("
					  "  kind TEXT NOT NULL,"
					  "  id TEXT NOT NULL,"
					  "  rpm INTEGER NOT NULL DEFAULT 0,"
					  "  tpm INTEGER NOT NULL DEFAULT 0,"
					  "  max_parallel INTEGER NOT NULL DEFAULT 0,"
					  "  monthly_tokens INTEGER NOT NULL DEFAULT 0,"
					  "  updated_at INTEGER NOT NULL DEFAULT 0,"
					  "  PRIMARY KEY (kind, id)"
					  ") STRICT;"
					  "CREATE TABLE token_usage ("
					  "  key TEXT NOT NULL,"
					  "  month TEXT NOT NULL,"
					  "  tokens INTEGER NOT NULL DEFAULT 0,"
					  "  PRIMARY KEY (key, month)"
					  ") STRICT;";

/*
 * v8 (approvals asked by a response, issue 22): the Responses API's
 * approval requests end their response; the response that asked is kept,
 * so that only its continuation decides them, and no timeout does.
 */
static const gchar migrate_v8_approval_response[] =
    "ALTER TABLE approvals ADD COLUMN response_id TEXT;"
    "CREATE INDEX approvals_pending ON approvals (owner, id) "
    "  WHERE state = 'pending' AND response_id IS NULL;";

/*
 * v9 (background responses, issue 31): a response's record beside its
 * messages (its request's parameters; for a background one, where it
 * stands and whether someone asked it to stop), and a background stream's
 * events, kept in batches to replay.
 */
static const gchar migrate_v9_responses[] = "CREATE TABLE responses ("
					    "  id TEXT PRIMARY KEY NOT NULL,"
					    "  owner TEXT NOT NULL,"
					    "  agent_id TEXT NOT NULL,"
					    "  session_id TEXT,"
					    "  background INTEGER NOT NULL,"
					    "  stream INTEGER NOT NULL,"
					    "  status TEXT NOT NULL,"
					    "  params TEXT NOT NULL,"
					    "  error TEXT,"
					    "  cancel_requested INTEGER NOT NULL DEFAULT 0,"
					    "  created_at INTEGER NOT NULL,"
					    "  completed_at INTEGER NOT NULL DEFAULT 0,"
					    "  instance_id TEXT"
					    ") STRICT;"
					    "CREATE INDEX responses_running ON responses (owner) "
					    "  WHERE status IN ('queued', 'in_progress');"
					    "CREATE TABLE response_events ("
					    "  response_id TEXT NOT NULL,"
					    "  first_seq INTEGER NOT NULL,"
					    "  last_seq INTEGER NOT NULL,"
					    "  data TEXT NOT NULL,"
					    "  PRIMARY KEY (response_id, first_seq)"
					    ") STRICT, WITHOUT ROWID;";

/*
 * v10 (the Conversations API, issue 32): a conversation's metadata, a JSON
 * object of strings; NULL for none. A conversation created without an
 * agent has agent_id '' until its first response.
 */
static const gchar migrate_v10_conversation_metadata[] =
    "ALTER TABLE sessions ADD COLUMN metadata TEXT;";

/*
 * v11 (upstream routing, issue 29): an agent's targets beyond the first
 * (the single-upstream columns stay target 0, "primary" while upstreams is
 * NULL) and its routing settings, both JSON; the target that answered an
 * assistant message (messages.upstream, JSON).
 */
static const gchar migrate_v11_targets[] = "ALTER TABLE agents ADD COLUMN upstreams TEXT;"
					   "ALTER TABLE agents ADD COLUMN routing TEXT;"
					   "ALTER TABLE messages ADD COLUMN upstream TEXT;";

/*
 * v14 (MCP authorization, issue 34): each agent's MCP server's OAuth state
 * (its registered client, its tokens, the authorization waiting for a
 * person), written only by confabd and never read back out of it; the
 * pending authorization's `state`, unique, finds it at the callback.
 */
static const gchar migrate_v14_mcp_oauth[] =
    "CREATE TABLE mcp_oauth ("
    "  agent_id TEXT NOT NULL,"
    "  server TEXT NOT NULL,"
    "  state TEXT,"
    "  data TEXT NOT NULL,"
    "  version INTEGER NOT NULL,"
    "  updated_at INTEGER NOT NULL,"
    "  PRIMARY KEY (agent_id, server)"
    ") STRICT;"
    "CREATE UNIQUE INDEX mcp_oauth_by_state ON mcp_oauth (state) "
    "  WHERE state IS NOT NULL;";

/*
 * v15 (usage per owner, token and agent, issue 30): a month's turns and
 * tokens, one row per owner, token ('' for none) and agent, added to by
 * each turn's answer in its own commit (write_use()).
 */
static const gchar migrate_v15_usage_monthly[] = "CREATE TABLE usage_monthly ("
						 "  month TEXT NOT NULL,"
						 "  owner TEXT NOT NULL,"
						 "  token_id TEXT NOT NULL,"
						 "  agent_id TEXT NOT NULL,"
						 "  requests INTEGER NOT NULL DEFAULT 0,"
						 "  input_tokens INTEGER NOT NULL DEFAULT 0,"
						 "  output_tokens INTEGER NOT NULL DEFAULT 0,"
						 "  reasoning_tokens INTEGER NOT NULL DEFAULT 0,"
						 "  PRIMARY KEY (month, owner, token_id, agent_id)"
						 ") STRICT, WITHOUT ROWID;";

/*
 * v16 (issue 30): the tokens a month's budgets counted, kept in the usage
 * row of the turn that used them (write_use()), so that a turn under
 * token budgets writes no row of its own: token_usage stays for the
 * months counted before, and for a turn settled in another month than it
 * counts in. Both are summed when the store opens.
 */
static const gchar migrate_v16_usage_tokens[] =
    "ALTER TABLE usage_monthly ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;";

/*
 * v17: the search index keeps a conversation's text by row number, not by
 * message, so a message deleted alone (a conversation item, a response's
 * input and answer) left its text found. Deleting a user's or the
 * assistant's message of an indexed conversation now indexes it anew,
 * queued as a new conversation's is; the rows of a statement that deletes
 * several find the conversation no longer indexed after the first, and
 * what the first queued of them finds nothing. A conversation deleted
 * whole drops its rows first (search_session_gone), and an index turned
 * off has no rows: nothing to do then.
 */
static const gchar migrate_v17_search_message_gone[] =
    "CREATE TRIGGER search_message_gone AFTER DELETE ON messages"
    "  WHEN old.role IN ('user', 'assistant') AND EXISTS"
    "    (SELECT 1 FROM search_docs WHERE session_id = old.session_id) BEGIN"
    "  DELETE FROM search WHERE rowid BETWEEN"
    "    (SELECT doc << " SEARCH_ROW_BITS " FROM search_docs WHERE session_id = old.session_id)"
    "    AND (SELECT (doc << " SEARCH_ROW_BITS ") | (" SEARCH_MAX_ROWS " - 1)"
    "      FROM search_docs WHERE session_id = old.session_id);"
    "  DELETE FROM search_docs WHERE session_id = old.session_id;"
    "  DELETE FROM search_pending WHERE session_id = old.session_id;"
    "  INSERT INTO search_pending (session_id) VALUES (old.session_id);"
    "  INSERT INTO search_pending (session_id, message_id) SELECT session_id, id"
    "    FROM messages WHERE session_id = old.session_id"
    "    AND role IN ('user', 'assistant') ORDER BY id;"
    "END;";

/* What takes the schema from version N to N + 1, at [N]: the next schema
 * adds its own at the end (and CONFAB_DB_VERSION goes up). */
static const gchar *const migrations[CONFAB_DB_VERSION] = {
    migrate_v1,
    migrate_v2,
    migrate_v3,
    migrate_v4,
    /* v5: content_blocks '' means "the content": the same table, a value
     * older versions would misread, hence the version */
    NULL,
    migrate_v6,
    migrate_v7_approvals,
    migrate_v8_approval_response,
    migrate_v9_responses,
    migrate_v10_conversation_metadata,
    migrate_v11_targets,
    migrate_v12_elicitations,
    migrate_v13_limits,
    migrate_v14_mcp_oauth,
    migrate_v15_usage_monthly,
    migrate_v16_usage_tokens,
    migrate_v17_search_message_gone,
};

static gboolean
conn_get_user_version(Conn *conn, gint *version, GError **error)
{
	g_autoptr(ConfabCachedStmt) stmt = conn_prepare(conn, "PRAGMA user_version", error);
	if (stmt == NULL)
		return FALSE;
	if (sqlite3_step(stmt) != SQLITE_ROW) {
		set_sqlite_error(error, conn->db, "reading user_version");
		return FALSE;
	}
	*version = sqlite3_column_int(stmt, 0);
	return TRUE;
}

static gboolean
conn_migrate_in_transaction(Conn *conn, GError **error)
{
	gint version = 0;
	g_autofree gchar *set_version = NULL;

	if (!conn_get_user_version(conn, &version, error))
		return FALSE;
	if (version > CONFAB_DB_VERSION) {
		/* never touch a database from the future: fail loudly */
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_FAILED,
			    "the database schema is version %d, newer than this confabd "
			    "understands (%d)",
			    version,
			    CONFAB_DB_VERSION);
		return FALSE;
	}
	if (version == CONFAB_DB_VERSION)
		return TRUE;

	for (gint v = version; v < CONFAB_DB_VERSION; v++)
		if (migrations[v] != NULL && !conn_exec(conn, migrations[v], error))
			return FALSE;
	set_version = g_strdup_printf("PRAGMA user_version=%d", CONFAB_DB_VERSION);
	if (!conn_exec(conn, set_version, error))
		return FALSE;
	if (version != 0)
		g_info("migrated the database from version %d to %d", version, CONFAB_DB_VERSION);
	return TRUE;
}

/* All migrations run in one transaction: a failure rolls back to the old
 * schema whole, and no user data is lost. */
static gboolean
conn_migrate(Conn *conn, GError **error)
{
	if (!conn_exec(conn, "BEGIN IMMEDIATE", error))
		return FALSE;
	if (!conn_migrate_in_transaction(conn, error)) {
		sqlite3_exec(conn->db, "ROLLBACK", NULL, NULL, NULL);
		g_prefix_error_literal(error, "migrating the database: ");
		return FALSE;
	}
	return conn_exec(conn, "COMMIT", error);
}

/* ---------- rows, as the store's mappers read them ---------- */

static const gchar *
row_text(ConfabStoreRow *row, guint col)
{
	return column_text(row->result, (gint)col);
}

static gint64
row_int(ConfabStoreRow *row, guint col)
{
	return sqlite3_column_int64(row->result, (gint)col);
}

static gboolean
row_is_null(ConfabStoreRow *row, guint col)
{
	return sqlite3_column_type(row->result, (gint)col) == SQLITE_NULL;
}

static GBytes *
row_bytes(ConfabStoreRow *row, guint col)
{
	return g_bytes_new(sqlite3_column_blob(row->result, (gint)col),
			   (gsize)sqlite3_column_bytes(row->result, (gint)col));
}

static const ConfabStoreRowFuncs row_funcs = {row_text, row_int, row_is_null, row_bytes};

/* ---------- the writer thread ---------- */

/* ---------- the search index (writer thread) ---------- */

/* Appends the text parts of @parts (an array, or an object's members, as
 * SQLite's json_each() walks them), joined by spaces. */
static void
search_append_text_parts(GString *out, JsonNode *parts)
{
	g_autoptr(GList) members = NULL;
	g_autoptr(GList) elements = NULL;
	GList *values;

	if (JSON_NODE_HOLDS_ARRAY(parts)) {
		elements = json_array_get_elements(json_node_get_array(parts));
		values = elements;
	} else if (JSON_NODE_HOLDS_OBJECT(parts)) {
		members = json_object_get_values(json_node_get_object(parts));
		values = members;
	} else {
		return;
	}
	for (GList *l = values; l != NULL; l = l->next) {
		JsonObject *part = JSON_NODE_HOLDS_OBJECT(l->data) ? json_node_get_object(l->data)
								   : NULL;
		const gchar *text;
		if (part == NULL || g_strcmp0(confab_json_get_string(part, "type"), "text") != 0)
			continue;
		text = confab_json_get_string(part, "text");
		if (text == NULL)
			continue;
		if (out->len > 0)
			g_string_append_c(out, ' ');
		g_string_append(out, text);
	}
}

/*
 * What search indexes of a stored message content: its text parts, joined
 * by spaces, at most SEARCH_TEXT_MAX characters (a 10 MiB answer is not
 * indexed whole); %NULL in @text when it has none.
 *
 * Returns: %FALSE when @content is not JSON: not indexed, never refused
 */
static gboolean
search_text_of(const gchar *content, gchar **text)
{
	g_autoptr(JsonNode) root = confab_json_parse(content, strlen(content), 1000, NULL);
	g_autoptr(GString) out = NULL;
	const gchar *end;

	*text = NULL;
	if (root == NULL)
		return FALSE;
	out = g_string_new(NULL);
	search_append_text_parts(out, root);
	if (out->len == 0)
		return TRUE;
	end = out->str;
	for (glong n = 0; n < SEARCH_TEXT_MAX_CHARS && *end != '\0'; n++)
		end = g_utf8_next_char(end);
	g_string_truncate(out, end - out->str);
	*text = g_string_free(g_steal_pointer(&out), FALSE);
	return TRUE;
}

/* A conversation from the queue: its doc, and its title as row 0. */
static gboolean
index_session(Conn *conn, const gchar *session_id, GError **error)
{
	g_autoptr(ConfabCachedStmt) doc =
	    conn_prepare(conn,
			 "INSERT OR IGNORE INTO search_docs (session_id, owner, rows) "
			 "SELECT id, owner, 1 FROM sessions WHERE id = ?1",
			 error);
	g_autoptr(ConfabCachedStmt) title = NULL;

	if (doc == NULL)
		return FALSE;
	bind_text(doc, 1, session_id);
	if (!stmt_step_done(conn, doc, error))
		return FALSE;
	/* deleted since, or indexed already */
	if (sqlite3_changes(conn->db) == 0)
		return TRUE;
	title = conn_prepare(conn,
			     "INSERT INTO search (rowid, text) SELECT d.doc << " SEARCH_ROW_BITS
			     ", s.title FROM search_docs d JOIN sessions s ON s.id = d.session_id "
			     "WHERE d.session_id = ?1 AND s.title IS NOT NULL",
			     error);
	if (title == NULL)
		return FALSE;
	bind_text(title, 1, session_id);
	return stmt_step_done(conn, title, error);
}

/* The text of a message from the queue, or %NULL (gone, or not JSON). */
static gboolean
read_message_text(Conn *conn,
		  const gchar *session_id,
		  const gchar *message_id,
		  gboolean *indexed,
		  gchar **text,
		  GError **error)
{
	g_autoptr(ConfabCachedStmt) stmt =
	    conn_prepare(conn,
			 "SELECT content FROM messages WHERE session_id = ?1 AND id = ?2",
			 error);
	gint rc;

	*indexed = FALSE;
	if (stmt == NULL)
		return FALSE;
	bind_text(stmt, 1, session_id);
	bind_text(stmt, 2, message_id);
	rc = sqlite3_step(stmt);
	if (rc == SQLITE_ROW)
		*indexed = search_text_of(column_text(stmt, 0), text);
	else if (rc != SQLITE_DONE) {
		set_sqlite_error(error, conn->db, "reading a message to index");
		return FALSE;
	}
	return TRUE;
}

/* A message from the queue: the next row of its conversation (which has
 * room for SEARCH_MAX_ROWS). */
static gboolean
index_message(Conn *conn, const gchar *session_id, const gchar *message_id, GError **error)
{
	g_autoptr(ConfabCachedStmt) row = NULL;
	g_autoptr(ConfabCachedStmt) next = NULL;
	g_autofree gchar *text = NULL;
	gboolean indexed;

	if (!read_message_text(conn, session_id, message_id, &indexed, &text, error))
		return FALSE;
	if (!indexed)
		return TRUE;
	row = conn_prepare(
	    conn,
	    "INSERT INTO search (rowid, text) SELECT (doc << " SEARCH_ROW_BITS
	    ") | rows, ?2 FROM search_docs WHERE session_id = ?1 AND rows < " SEARCH_MAX_ROWS,
	    error);
	if (row == NULL)
		return FALSE;
	bind_text(row, 1, session_id);
	bind_text(row, 2, text);
	if (!stmt_step_done(conn, row, error))
		return FALSE;
	if (sqlite3_changes(conn->db) == 0)
		return TRUE;
	next = conn_prepare(conn,
			    "UPDATE search_docs SET rows = rows + 1 WHERE session_id = ?1",
			    error);
	if (next == NULL)
		return FALSE;
	bind_text(next, 1, session_id);
	return stmt_step_done(conn, next, error);
}

/*
 * Indexes up to @max rows of the search queue, oldest first, and takes them
 * off it, in the caller's transaction.
 *
 * Returns: how many, or -1 with @error set
 */
static gint64
search_index_pending(Conn *conn, guint max, GError **error)
{
	g_autoptr(ConfabCachedStmt) next =
	    conn_prepare(conn,
			 "SELECT seq, session_id, message_id FROM search_pending "
			 "ORDER BY seq LIMIT ?1",
			 error);
	g_autoptr(ConfabCachedStmt) done = NULL;
	gint64 last = 0;
	gint64 n = 0;
	gint rc;

	if (next == NULL)
		return -1;
	sqlite3_bind_int64(next, 1, max);
	while ((rc = sqlite3_step(next)) == SQLITE_ROW) {
		const gchar *session_id = column_text(next, 1);
		const gchar *message_id = column_text(next, 2);
		if (message_id == NULL ? !index_session(conn, session_id, error)
				       : !index_message(conn, session_id, message_id, error))
			return -1;
		last = sqlite3_column_int64(next, 0);
		n++;
	}
	if (rc != SQLITE_DONE) {
		set_sqlite_error(error, conn->db, "reading the search queue");
		return -1;
	}
	if (n == 0)
		return 0;
	done = conn_prepare(conn, "DELETE FROM search_pending WHERE seq <= ?1", error);
	if (done == NULL)
		return -1;
	sqlite3_bind_int64(done, 1, last);
	return stmt_step_done(conn, done, error) ? n : -1;
}

/* A write job: everything queued, indexed (a search asks first). */
static gboolean
write_index_search(Conn *conn, gpointer data, GError **error)
{
	gint64 n;

	while ((n = search_index_pending(conn, SEARCH_INDEX_CHUNK, error)) == SEARCH_INDEX_CHUNK)
		;
	return n >= 0;
}

/* Between batches: one chunk of the queue, in a transaction of its own. A
 * failure (a full disk) leaves the queue as it was, for the next writes. */
static void
writer_index_search(ConfabStoreSqlite *self)
{
	Conn *conn = self->writer;
	g_autoptr(GError) error = NULL;
	gint64 n = -1;

	if (conn_exec(conn, "BEGIN IMMEDIATE", &error)) {
		n = search_index_pending(conn, SEARCH_INDEX_CHUNK, &error);
		if (n < 0 || !conn_exec(conn, "COMMIT", &error)) {
			sqlite3_exec(conn->db, "ROLLBACK", NULL, NULL, NULL);
			n = -1;
		}
	}
	if (n < 0)
		g_warning("indexing conversations for search: %s", error->message);
	/* a whole chunk: more may wait */
	self->unindexed = n == SEARCH_INDEX_CHUNK ? SEARCH_INDEX_AFTER_WRITES : 0;
}

typedef gboolean (*WriteFunc)(Conn *conn, gpointer data, GError **error);
typedef gpointer (*ReadFunc)(Conn *conn, gpointer data, GError **error);

/* A job for the writer (@func) or a reader (@read); one with neither is
 * its thread's stop sentinel. */
typedef struct {
	WriteFunc func;
	ReadFunc read;
	gpointer data; /* owned */
	GDestroyNotify data_free;
	GDestroyNotify result_free; /* a read's */
	GTask *task;		    /* owned */
	GError *error;		    /* a write's */
} Job;

static void
job_free(Job *job)
{
	if (job->data_free != NULL && job->data != NULL)
		job->data_free(job->data);
	g_clear_object(&job->task);
	g_clear_error(&job->error);
	g_free(job);
}

/*
 * Runs each job of a batch in a savepoint of the open transaction: a job
 * that fails is undone alone. But after some errors (a full disk, an I/O
 * error) SQLite rolls the whole transaction back itself: then nothing of
 * the batch stands, the rest is not run (it would commit on its own), and
 * the batch fails with that error.
 */
static gboolean
writer_run_jobs(Conn *conn, GPtrArray *batch, GError **error)
{
	for (guint i = 0; i < batch->len; i++) {
		Job *job = g_ptr_array_index(batch, i);
		(void)conn_run(conn, "SAVEPOINT job", NULL);
		if (job->func(conn, job->data, &job->error)) {
			(void)conn_run(conn, "RELEASE job", NULL);
			continue;
		}
		if (job->error == NULL)
			g_set_error_literal(&job->error,
					    CONFAB_ERROR,
					    CONFAB_ERROR_FAILED,
					    "write failed");
		if (sqlite3_get_autocommit(conn->db)) {
			g_propagate_error(error, g_error_copy(job->error));
			return FALSE;
		}
		sqlite3_exec(conn->db, "ROLLBACK TO job", NULL, NULL, NULL);
		sqlite3_exec(conn->db, "RELEASE job", NULL, NULL, NULL);
	}
	return TRUE;
}

static gboolean
write_batch_usage(Conn *conn, GError **error);

/*
 * The common case: every job of the batch succeeds, without the savepoints
 * — whose statement journal copies every page a job touches, a quarter of
 * the writer's work in a batch of turns. A job that fails sets @retry: the
 * batch is undone and run again with them. An error that SQLite answers by
 * rolling the whole transaction back fails the batch, as with savepoints.
 */
static gboolean
writer_run_jobs_plain(Conn *conn, GPtrArray *batch, gboolean *retry, GError **error)
{
	for (guint i = 0; i < batch->len; i++) {
		Job *job = g_ptr_array_index(batch, i);
		if (job->func(conn, job->data, &job->error))
			continue;
		if (job->error == NULL)
			g_set_error_literal(&job->error,
					    CONFAB_ERROR,
					    CONFAB_ERROR_FAILED,
					    "write failed");
		if (sqlite3_get_autocommit(conn->db)) {
			g_propagate_error(error, g_error_copy(job->error));
			return FALSE;
		}
		/* the jobs run again, each of them */
		for (guint j = 0; j <= i; j++)
			g_clear_error(&((Job *)g_ptr_array_index(batch, j))->error);
		*retry = TRUE;
		return FALSE;
	}
	return write_batch_usage(conn, error);
}

/* One transaction for the batch. Returns: whether it was committed */
static gboolean
writer_try_batch(Conn *conn, GPtrArray *batch, gboolean savepoints, gboolean *retry, GError **error)
{
	gboolean committed;

	if (!conn_run(conn, "BEGIN IMMEDIATE", error))
		return FALSE;
	/* without savepoints, the turns' requests are tallied, and written
	 * once per owner at the end; with them, each job counts its own */
	conn->tally_usage = !savepoints;
	g_hash_table_remove_all(conn->batch_usage);
	g_hash_table_remove_all(conn->batch_tokens);
	g_hash_table_remove_all(conn->batch_use);
	committed = (savepoints ? writer_run_jobs(conn, batch, error)
				: writer_run_jobs_plain(conn, batch, retry, error)) &&
		    conn_run(conn, "COMMIT", error);
	conn->tally_usage = FALSE;
	if (!committed)
		sqlite3_exec(conn->db, "ROLLBACK", NULL, NULL, NULL);
	return committed;
}

/* Returns: whether the batch was committed */
static gboolean
writer_run_batch(ConfabStoreSqlite *self, GPtrArray *batch)
{
	Conn *conn = self->writer;
	g_autoptr(GError) error_txn = NULL;
	gboolean retry = FALSE;

	/* a job failed alone: again, each job in a savepoint, so that it
	 * fails alone */
	if (!writer_try_batch(conn, batch, FALSE, &retry, &error_txn) && retry)
		writer_try_batch(conn, batch, TRUE, NULL, &error_txn);
	if (error_txn == NULL) {
		g_atomic_pointer_add(&self->commits, 1);
		g_atomic_pointer_add(&self->jobs, batch->len);
	} else {
		g_warning("write transaction failed: %s", error_txn->message);
	}

	/* only now, committed (or not), does anybody hear back */
	for (guint i = 0; i < batch->len; i++) {
		Job *job = g_ptr_array_index(batch, i);
		if (error_txn != NULL) {
			g_clear_error(&job->error);
			job->error = g_error_new(CONFAB_ERROR,
						 error_txn->code,
						 "storing: %s",
						 error_txn->message);
		}
	}
	return error_txn == NULL;
}

/* In the callers' thread: the outcome of a batch, task by task. */
static gboolean
writer_complete(gpointer user_data)
{
	GPtrArray *jobs = user_data;

	for (guint i = 0; i < jobs->len; i++) {
		Job *job = g_ptr_array_index(jobs, i);
		/* what was written is let go first: a caller that answers its
		 * client from the callback (a JSON turn, its answer built from
		 * the text the loop still holds) would otherwise hold it twice */
		if (job->data_free != NULL)
			g_clear_pointer(&job->data, job->data_free);
		if (job->error != NULL)
			g_task_return_error(job->task, g_steal_pointer(&job->error));
		else
			g_task_return_boolean(job->task, TRUE);
	}
	return G_SOURCE_REMOVE;
}

static void
writer_hand_back_to(GPtrArray *jobs, GMainContext *context)
{
	/* not g_main_context_invoke(): it would run the callbacks in this
	 * thread whenever nobody owns the context at the moment */
	g_autoptr(GSource) source = g_idle_source_new();
	g_source_set_priority(source, G_PRIORITY_DEFAULT);
	g_source_set_callback(source, writer_complete, jobs, (GDestroyNotify)g_ptr_array_unref);
	g_source_set_static_name(source, "[confab] writes done");
	g_source_attach(source, context);
}

/* Hands a batch's tasks back, and the batch with them (transfer full), to
 * the contexts they were made on: one source per context (a serving thread
 * each, and the main context for D-Bus), not one per task, which is what a
 * task returned from this thread would cost. The jobs of one context keep
 * their order. */
static void
writer_hand_back(GPtrArray *batch)
{
	GMainContext *first = NULL;
	g_autoptr(GHashTable) by_context = NULL;
	GHashTableIter iter;
	gpointer key;
	gpointer value;

	for (guint i = 0; i < batch->len; i++) {
		Job *job = g_ptr_array_index(batch, i);
		if (i == 0)
			first = g_task_get_context(job->task);
		else if (g_task_get_context(job->task) != first)
			break;
		if (i + 1 == batch->len) {
			writer_hand_back_to(batch, first);
			return;
		}
	}
	/* several contexts: the batch gives its jobs up to one array each */
	by_context = g_hash_table_new(g_direct_hash, g_direct_equal);
	g_ptr_array_set_free_func(batch, NULL);
	for (guint i = 0; i < batch->len; i++) {
		Job *job = g_ptr_array_index(batch, i);
		GMainContext *context = g_task_get_context(job->task);
		GPtrArray *jobs = g_hash_table_lookup(by_context, context);
		if (jobs == NULL) {
			jobs = g_ptr_array_new_with_free_func((GDestroyNotify)job_free);
			g_hash_table_insert(by_context, context, jobs);
		}
		g_ptr_array_add(jobs, job);
	}
	g_ptr_array_unref(batch);
	g_hash_table_iter_init(&iter, by_context);
	while (g_hash_table_iter_next(&iter, &key, &value))
		writer_hand_back_to(value, key);
}

/*
 * Checkpoints. A commit appends the pages it changed to the WAL; a
 * checkpoint copies them into the database file (and syncs both), so that
 * the WAL can start over. SQLite runs it in the commit that passes 1000
 * pages: the writer's turn, and every turn waiting behind it, then paid
 * for the copy and the syncs (a third of the writer's time was in the
 * kernel). Here the writer's commits only ask (writer_wal_committed()) and
 * a thread of its own copies (PASSIVE: it never waits for the writer,
 * which goes on appending meanwhile). The WAL starts over at the writer's
 * next transaction after a checkpoint that copied all of it, which the
 * thread's never does while writes go on; so when nothing waits for it,
 * the writer copies the few pages appended since (writer_idle()). Under
 * writes that never leave it idle, the WAL grows to CHECKPOINT_PAGES_MAX
 * and the writer copies it in a commit, as SQLite would have.
 */
static gint
writer_wal_committed(gpointer data, sqlite3 *db, const gchar *name, gint pages)
{
	ConfabStoreSqlite *self = data;

	self->wal_pages = pages;
	if (pages >= CHECKPOINT_PAGES_MAX) {
		/* the checkpoints fall behind (a reader holds old pages, or
		 * the thread does not get a core): as SQLite would, here */
		(void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		return SQLITE_OK;
	}
	if (pages < self->wal_pages_asked)
		self->wal_pages_asked = 0; /* it started over */
	/* once per CHECKPOINT_PAGES pages: a checkpoint syncs both files,
	 * and the WAL grows on while it runs */
	if (pages >= self->wal_pages_asked + CHECKPOINT_PAGES) {
		self->wal_pages_asked = pages;
		if (g_atomic_int_compare_and_exchange(&self->checkpoint_asked, 0, 1))
			g_async_queue_push(self->checkpoint_queue, GINT_TO_POINTER(CHECKPOINT_RUN));
	}
	return SQLITE_OK;
}

/* Not a write: what the checkpoint thread queues when it is done, to wake
 * the writer (writer_next_job() then finishes the checkpoint, if idle). */
static gboolean
write_wake(Conn *conn, gpointer data, GError **error)
{
	return TRUE;
}

static gpointer
checkpoint_thread(gpointer data)
{
	ConfabStoreSqlite *self = data;

	while (GPOINTER_TO_INT(g_async_queue_pop(self->checkpoint_queue)) == CHECKPOINT_RUN) {
		gint rc;
		g_atomic_int_set(&self->checkpoint_asked, 0);
		rc = sqlite3_wal_checkpoint_v2(self->checkpoint_conn->db,
					       NULL,
					       SQLITE_CHECKPOINT_PASSIVE,
					       NULL,
					       NULL);
		/* busy: the writer checkpoints itself; the next commit asks again */
		if (rc == SQLITE_OK) {
			Job *wake = g_new0(Job, 1);
			g_atomic_pointer_add(&self->checkpoints, 1);
			wake->func = write_wake;
			g_async_queue_push(self->queue, wake);
		} else if ((rc & 0xff) != SQLITE_BUSY)
			g_warning("checkpointing the WAL: %s (%d)",
				  sqlite3_errmsg(self->checkpoint_conn->db),
				  rc);
	}
	return NULL;
}

/* The writer has nothing to do: when the checkpoint thread copied the WAL
 * since the writer last did this, the pages appended since are copied
 * too, so that the next transaction starts the WAL over. */
static void
writer_idle(ConfabStoreSqlite *self)
{
	gsize checkpoints = (gsize)g_atomic_pointer_get(&self->checkpoints);
	gint rc;

	if (self->wal_pages < CHECKPOINT_PAGES || checkpoints == self->checkpoints_finished)
		return;
	self->checkpoints_finished = checkpoints;
	rc = sqlite3_wal_checkpoint_v2(self->writer->db,
				       NULL,
				       SQLITE_CHECKPOINT_PASSIVE,
				       NULL,
				       NULL);
	if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
		g_warning("checkpointing the WAL: %s (%d)", sqlite3_errmsg(self->writer->db), rc);
}

/* The next job; %NULL when the writer is idle with search left to index:
 * a moment after the last write, at once while a backlog lasts (a whole
 * chunk was indexed last time). */
static Job *
writer_next_job(ConfabStoreSqlite *self)
{
	Job *job;

	if (self->wal_pages >= CHECKPOINT_PAGES) {
		job = g_async_queue_try_pop(self->queue);
		if (job != NULL)
			return job;
		writer_idle(self);
	}
	if (self->unindexed == 0 || !g_atomic_int_get(&self->search_index))
		return g_async_queue_pop(self->queue);
	if (self->unindexed >= SEARCH_INDEX_AFTER_WRITES)
		return g_async_queue_try_pop(self->queue);
	return g_async_queue_timeout_pop(self->queue, SEARCH_INDEX_IDLE_US);
}

static gpointer
writer_thread(gpointer data)
{
	ConfabStoreSqlite *self = data;
	gboolean stop = FALSE;

	self->unindexed = 1; /* what an earlier run may have left queued */
	while (!stop) {
		Job *job = writer_next_job(self);
		GPtrArray *batch;
		if (job == NULL) {
			/* idle: index what the last writes queued */
			writer_index_search(self);
			continue;
		}
		if (job->func == NULL) {
			job_free(job);
			break;
		}
		if (job->func == write_wake) {
			job_free(job);
			continue;
		}
		/* under load (the last batch was not alone), the jobs that
		 * arrive a moment later go in the same commit: one commit's
		 * pages, syncs and wake-ups for more turns; and a caller that
		 * queues a job while the writer sleeps does not wake it */
		if (self->last_batch > 1)
			g_usleep(WRITER_GATHER_US);
		batch = g_ptr_array_new_with_free_func((GDestroyNotify)job_free);
		g_ptr_array_add(batch, job);
		while (batch->len < WRITER_BATCH_MAX) {
			job = g_async_queue_try_pop(self->queue);
			if (job == NULL)
				break;
			if (job->func == NULL) {
				job_free(job);
				stop = TRUE;
				break;
			}
			if (job->func == write_wake) {
				job_free(job);
				continue;
			}
			g_ptr_array_add(batch, job);
		}
		self->last_batch = batch->len;
		if (writer_run_batch(self, batch))
			self->unindexed += batch->len;
		writer_hand_back(batch);
		if (self->unindexed >= SEARCH_INDEX_AFTER_WRITES &&
		    g_atomic_int_get(&self->search_index))
			writer_index_search(self);
	}
	return NULL;
}

/* A task for a vfunc's caller, tagged with the vfunc. */
static GTask *
task_new(gpointer self,
	 gpointer source_tag,
	 GCancellable *cancellable,
	 GAsyncReadyCallback callback,
	 gpointer user_data)
{
	GTask *task = g_task_new(self, cancellable, callback, user_data);

	g_task_set_source_tag(task, source_tag);
	return task;
}

/* In a vfunc: its caller's task, tagged with @tag. */
#define TASK_NEW(tag) task_new(store, (tag), cancellable, callback, user_data)

/* Answers the vfunc's caller at once: in-memory counts need no thread. */
#define ANSWER(tag, result, result_free)                                                           \
	answer(TASK_NEW(tag), (result), (GDestroyNotify)(result_free))

static void
answer(GTask *task, gpointer result, GDestroyNotify result_free)
{
	g_task_return_pointer(task, result, result_free);
	g_object_unref(task);
}

/* Queues @job (transfer full) on @queue, whose thread completes its task. */
static void
job_push(ConfabStoreSqlite *self,
	 GAsyncQueue *queue,
	 gpointer data,
	 GDestroyNotify data_free,
	 GTask *task,
	 Job *job)
{
	job->task = task;
	job->data = data;
	job->data_free = data_free;
	if (self->closed) {
		g_task_return_new_error(job->task,
					CONFAB_ERROR,
					CONFAB_ERROR_SHUTTING_DOWN,
					"the store is closed");
		job_free(job);
		return;
	}
	g_async_queue_push(queue, job);
}

/* Queues @func for the writer, which completes @task (transfer full). */
static void
writer_push_task(ConfabStoreSqlite *self,
		 WriteFunc func,
		 gpointer data,
		 GDestroyNotify data_free,
		 GTask *task)
{
	Job *job = g_new0(Job, 1);

	/* a write that was started is seen through, whatever the caller does */
	g_task_set_check_cancellable(task, FALSE);
	job->func = func;
	job_push(self, self->queue, data, data_free, task, job);
}

/* ---------- reads ---------- */

typedef struct {
	GAsyncQueue *queue; /* owned */
	Conn *conn;	    /* owned */
} Reader;

static gpointer
reader_thread(gpointer data)
{
	Reader *reader = data;

	for (;;) {
		Job *job = g_async_queue_pop(reader->queue);
		g_autoptr(GError) error = NULL;
		gpointer result;

		if (job->read == NULL) {
			job_free(job);
			break;
		}
		if (g_task_return_error_if_cancelled(job->task)) {
			job_free(job);
			continue;
		}
		/* each read sees one consistent snapshot */
		result = job->read(reader->conn, job->data, &error);
		if (result == NULL && error != NULL)
			g_task_return_error(job->task, g_steal_pointer(&error));
		else
			g_task_return_pointer(job->task, result, job->result_free);
		job_free(job);
	}
	conn_free(reader->conn);
	g_async_queue_unref(reader->queue);
	g_free(reader);
	return NULL;
}

/* Queues @func for a reader, which completes @task (transfer full). */
static void
reader_run_task(ConfabStoreSqlite *self,
		ReadFunc func,
		gpointer data,
		GDestroyNotify data_free,
		GDestroyNotify result_free,
		GTask *task)
{
	Job *job = g_new0(Job, 1);

	job->read = func;
	job->result_free = result_free;
	job_push(self, self->read_queue, data, data_free, task, job);
}

/* ---------- agents and tokens ---------- */

/* ---------- quotas and their counts, in memory ---------- */

static guint64 *
uint64_new(guint64 value)
{
	guint64 *p = g_new(guint64, 1);
	*p = value;
	return p;
}

/* At start-up, on the writer's connection before its thread runs. */
static GHashTable *
load_owner_counts(Conn *conn, const gchar *sql, const gchar *month, GError **error)
{
	g_autoptr(GHashTable) counts =
	    g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autoptr(ConfabCachedStmt) stmt = conn_prepare(conn, sql, error);
	gint rc;

	if (stmt == NULL)
		return NULL;
	if (month != NULL)
		bind_text(stmt, 1, month);
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		g_hash_table_insert(counts,
				    g_strdup(column_text(stmt, 0)),
				    uint64_new((guint64)sqlite3_column_int64(stmt, 1)));
	if (rc != SQLITE_DONE) {
		set_sqlite_error(error, conn->db, "loading counts");
		return NULL;
	}
	return g_steal_pointer(&counts);
}

/* called with the lock held: a new month starts everyone at zero */
static void
roll_month(ConfabStoreSqlite *self, const gchar *month)
{
	if (g_strcmp0(month, self->usage_month) <= 0)
		return;
	g_free(self->usage_month);
	self->usage_month = g_strdup(month);
	g_hash_table_remove_all(self->usage);
	g_hash_table_remove_all(self->month_tokens);
}

/* called with the lock held */
static ConfabStoreUsage *
usage_of(ConfabStoreSqlite *self, const gchar *owner, const gchar *month, guint64 default_limit)
{
	ConfabStoreUsage *usage = g_new0(ConfabStoreUsage, 1);
	guint64 *limit = g_hash_table_lookup(self->quotas, owner);
	guint64 *used;

	roll_month(self, month);
	used = g_str_equal(month, self->usage_month) ? g_hash_table_lookup(self->usage, owner)
						     : NULL;
	usage->owner = g_strdup(owner);
	usage->month = g_strdup(month);
	usage->requests = used != NULL ? *used : 0;
	usage->limit = limit != NULL ? *limit : default_limit;
	usage->is_override = limit != NULL;
	return usage;
}

static void
confab_store_sqlite_get_usage(ConfabStore *store,
			      const gchar *owner,
			      const gchar *month,
			      guint64 default_limit,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(store);
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);

	ANSWER(confab_store_sqlite_get_usage,
	       usage_of(self, owner, month, default_limit),
	       confab_store_usage_free);
}

static gint
compare_usage(gconstpointer a, gconstpointer b)
{
	return strcmp((*(ConfabStoreUsage *const *)a)->owner,
		      (*(ConfabStoreUsage *const *)b)->owner);
}

/* called with the lock held */
static void
add_owners(GHashTable *owners, GHashTable *table)
{
	GHashTableIter iter;
	gpointer key;

	g_hash_table_iter_init(&iter, table);
	while (g_hash_table_iter_next(&iter, &key, NULL))
		g_hash_table_add(owners, key);
}

static void
confab_store_sqlite_list_usage(ConfabStore *store,
			       const gchar *month,
			       guint64 default_limit,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(store);
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
	g_autoptr(GHashTable) owners = g_hash_table_new(g_str_hash, g_str_equal);
	GPtrArray *list = g_ptr_array_new_with_free_func((GDestroyNotify)confab_store_usage_free);
	GHashTableIter iter;
	gpointer owner;

	roll_month(self, month);
	add_owners(owners, self->quotas);
	if (default_limit > 0 && g_str_equal(month, self->usage_month))
		add_owners(owners, self->usage);
	g_hash_table_iter_init(&iter, owners);
	while (g_hash_table_iter_next(&iter, &owner, NULL)) {
		ConfabStoreUsage *usage = usage_of(self, owner, month, default_limit);
		if (usage->limit > 0)
			g_ptr_array_add(list, usage);
		else
			confab_store_usage_free(usage);
	}
	g_ptr_array_sort(list, compare_usage);
	ANSWER(confab_store_sqlite_list_usage, list, g_ptr_array_unref);
}

/* called with the lock held: @key's count in @table (an owner's, or a
 * token's id's: GCRA's arrival time, turns in flight, a month's tokens),
 * made at 0; @size is the count's */
static gpointer
count_of(GHashTable *table, const gchar *key, gsize size)
{
	gpointer count = g_hash_table_lookup(table, key);

	if (count == NULL) {
		count = g_malloc0(size);
		g_hash_table_insert(table, g_strdup(key), count);
	}
	return count;
}

/* called with the lock held: the owner's rate and the token's, GCRA; each
 * moves on only when both admit */
static gboolean
admit_rates(ConfabStoreSqlite *self, ConfabStoreUsage *usage, const ConfabStoreAdmission *a)
{
	gint64 now = g_get_monotonic_time();
	gint64 *owner_tat = a->rpm > 0 ? count_of(self->rates, a->owner, sizeof(gint64)) : NULL;
	gint64 *token_tat = a->token_id != NULL && a->token_rpm > 0
				? count_of(self->rates, a->token_id, sizeof(gint64))
				: NULL;
	gint64 owner_next = owner_tat != NULL ? *owner_tat : 0;
	gint64 token_next = token_tat != NULL ? *token_tat : 0;
	gboolean owner_ok = owner_tat == NULL || confab_store_rate_admit(&owner_next, now, a->rpm);
	gboolean token_ok =
	    token_tat == NULL || confab_store_rate_admit(&token_next, now, a->token_rpm);

	if (owner_ok && token_ok) {
		if (owner_tat != NULL)
			*owner_tat = owner_next;
		if (token_tat != NULL)
			*token_tat = token_next;
	}
	if (owner_tat != NULL)
		confab_store_usage_set_rate(usage, a->rpm, owner_next, now, owner_ok);
	if (token_tat != NULL)
		confab_store_usage_set_token_rate(usage, a->token_rpm, token_next, now, token_ok);
	return owner_ok && token_ok;
}

/* called with the lock held: @key's turns in flight (counted in place: a
 * turn's admission and its end change them without an allocation) */
static guint
flying_of(ConfabStoreSqlite *self, const gchar *key)
{
	guint *flying = g_hash_table_lookup(self->flying, key);

	return flying != NULL ? *flying : 0;
}

/* called with the lock held: whether the owner's turns in flight, and the
 * token's, leave room for one more */
static gboolean
admit_parallel(ConfabStoreSqlite *self, ConfabStoreUsage *usage, const ConfabStoreAdmission *a)
{
	guint owner = flying_of(self, a->owner);
	guint token = a->token_id != NULL ? flying_of(self, a->token_id) : 0;

	usage->max_parallel = a->max_parallel;
	if (a->max_parallel > 0 && owner >= a->max_parallel) {
		usage->parallel_limited = TRUE;
	} else if (a->token_id != NULL && a->token_max_parallel > 0 &&
		   token >= a->token_max_parallel) {
		usage->max_parallel = a->token_max_parallel;
		usage->parallel_limited = TRUE;
	}
	if (usage->parallel_limited) {
		usage->rate_limited = TRUE;
		usage->retry_after_ms = 1000;
	}
	return !usage->parallel_limited;
}

static ConfabStoreUsage *
confab_store_sqlite_admit_quota_now(ConfabStore *store, const ConfabStoreAdmission *a)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(store);
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
	ConfabStoreUsage *usage = NULL;

	if (a->month != NULL) {
		usage = usage_of(self, a->owner, a->month, a->default_limit);
	} else {
		usage = g_new0(ConfabStoreUsage, 1);
		usage->owner = g_strdup(a->owner);
	}
	/* one critical section: the month, the turns in flight, the rates;
	 * what refuses first costs nothing of what follows */
	usage->admitted = usage->limit == 0 || usage->requests < usage->limit;
	if (usage->admitted)
		usage->admitted = admit_parallel(self, usage, a);
	if (usage->admitted)
		usage->admitted = admit_rates(self, usage, a);
	if (!usage->admitted)
		return usage;
	if (a->month != NULL) {
		(*(guint64 *)count_of(self->usage, a->owner, sizeof(guint64)))++;
		usage->requests++;
	}
	if (a->max_parallel > 0) {
		(*(guint *)count_of(self->flying, a->owner, sizeof(guint)))++;
		usage->parallel_taken = TRUE;
	}
	if (a->token_id != NULL && a->token_max_parallel > 0) {
		(*(guint *)count_of(self->flying, a->token_id, sizeof(guint)))++;
		usage->token_parallel_taken = TRUE;
	}
	return usage;
}

/* ---------- tokens: reservations and settlements, in memory ---------- */

/* a month's tokens after @tokens more (or given back: never below 0) */
static guint64
month_after(guint64 before, gint64 tokens)
{
	return tokens >= 0 ? before + (guint64)tokens : before - MIN(before, (guint64)-tokens);
}

static ConfabStoreTokenVerdict
confab_store_sqlite_take_tokens_now(ConfabStore *store, const ConfabStoreTokens *t)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(store);
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
	ConfabStoreTokenVerdict verdict = {0};
	const gchar *keys[2] = {t->owner, t->token_id};
	guint64 tpm[2] = {t->tpm, t->token_id != NULL ? t->token_tpm : 0};
	guint64 monthly[2] = {t->monthly, t->token_id != NULL ? t->token_monthly : 0};
	guint64 *used[2] = {NULL, NULL};
	gint64 *tat[2] = {NULL, NULL};
	gint64 now = g_get_monotonic_time();
	gint64 next[2] = {0, 0};
	gboolean rate_ok[2] = {TRUE, TRUE};

	roll_month(self, t->month);
	/* every budget first, then every change: all or nothing; each key's
	 * counts looked up once (a turn takes twice: issue 30's 5 %) */
	for (guint i = 0; i < 2; i++) {
		if (keys[i] == NULL)
			continue;
		/* counted for every key, budget or not: a budget set later
		 * sees the month's tokens, as after a restart */
		used[i] = count_of(self->month_tokens, keys[i], sizeof(guint64));
		if (monthly[i] > 0 && !t->force && t->tokens > 0 &&
		    month_after(*used[i], t->tokens) > monthly[i])
			verdict.monthly_spent = TRUE;
		if (tpm[i] > 0) {
			tat[i] = count_of(self->token_rates, keys[i], sizeof(gint64));
			next[i] = *tat[i];
			rate_ok[i] = confab_store_token_rate_take(&next[i],
								  now,
								  tpm[i],
								  t->tokens,
								  t->force);
		}
	}
	verdict.admitted = !verdict.monthly_spent && rate_ok[0] && rate_ok[1];
	for (guint i = 0; i < 2; i++) {
		if (tat[i] != NULL) {
			if (verdict.admitted)
				*tat[i] = next[i];
			confab_store_token_verdict_set_rate(&verdict,
							    tpm[i],
							    *tat[i],
							    now,
							    t->tokens,
							    rate_ok[i]);
		}
		if (verdict.admitted && used[i] != NULL)
			*used[i] = month_after(*used[i], t->tokens);
	}
	return verdict;
}

static void
confab_store_sqlite_take_tokens(ConfabStore *store,
				const ConfabStoreTokens *tokens,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	ConfabStoreTokenVerdict *verdict = g_new(ConfabStoreTokenVerdict, 1);

	*verdict = confab_store_sqlite_take_tokens_now(store, tokens);
	ANSWER(confab_store_sqlite_take_tokens, verdict, g_free);
}

static void
confab_store_sqlite_release_parallel(ConfabStore *store, const gchar *owner)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(store);
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
	guint *flying = g_hash_table_lookup(self->flying, owner);

	if (flying != NULL && *flying > 1)
		(*flying)--;
	else
		g_hash_table_remove(self->flying, owner);
}

static void
confab_store_sqlite_admit_quota(ConfabStore *store,
				const ConfabStoreAdmission *admission,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	ANSWER(confab_store_sqlite_admit_quota,
	       confab_store_sqlite_admit_quota_now(store, admission),
	       confab_store_usage_free);
}

static void
confab_store_sqlite_release_quota(ConfabStore *store, const gchar *owner, const gchar *month)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(store);
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
	guint64 *used = g_hash_table_lookup(self->usage, owner);

	if (g_strcmp0(month, self->usage_month) == 0 && used != NULL && *used > 0)
		(*used)--;
}

static gboolean
confab_store_sqlite_acquire_session_now(ConfabStore *store, const gchar *session_id, GError **error)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(store);
	gboolean added;

	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
		added = g_hash_table_add(self->busy, g_strdup(session_id));
	}
	if (!added) {
		confab_error_set(error,
				 CONFAB_ERROR_CONVERSATION_BUSY,
				 "metadata.session_id",
				 "Another turn is running in this conversation; retry when "
				 "it has finished");
		return FALSE;
	}
	return TRUE;
}

static void
confab_store_sqlite_acquire_session(ConfabStore *store,
				    const gchar *session_id,
				    GCancellable *cancellable,
				    GAsyncReadyCallback callback,
				    gpointer user_data)
{
	g_autoptr(GTask) task = TASK_NEW(confab_store_sqlite_acquire_session);
	GError *error = NULL;

	if (!confab_store_sqlite_acquire_session_now(store, session_id, &error))
		g_task_return_error(task, error);
	else
		g_task_return_boolean(task, TRUE);
}

static void
confab_store_sqlite_release_session(ConfabStore *store, const gchar *session_id)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(store);
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
	g_hash_table_remove(self->busy, session_id);
}

/* The busy sessions are this daemon's alone: SQLite has one daemon. */
static void
confab_store_sqlite_session_is_running(ConfabStore *store,
				       const gchar *session_id,
				       GCancellable *cancellable,
				       GAsyncReadyCallback callback,
				       gpointer user_data)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(store);
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
	gboolean running = g_hash_table_contains(self->busy, session_id);

	ANSWER(confab_store_sqlite_session_is_running,
	       running ? GINT_TO_POINTER(TRUE) : NULL,
	       NULL);
}

/* ---------- writes ---------- */

typedef struct {
	gchar *id;
	gint64 when;
} IdAndTime;

static void
id_and_time_free(IdAndTime *data)
{
	g_free(data->id);
	g_free(data);
}

static IdAndTime *
id_and_time_new(const gchar *id, gint64 when)
{
	IdAndTime *data = g_new0(IdAndTime, 1);
	data->id = g_strdup(id);
	data->when = when;
	return data;
}

static gboolean
write_set_quota(Conn *conn, gpointer data, GError **error)
{
	IdAndTime *quota = data; /* owner, monthly requests */
	g_autoptr(ConfabCachedStmt) stmt = NULL;

	/* 0 is kept too: unlimited, whatever the default */
	stmt = conn_prepare(conn,
			    "INSERT INTO quotas (owner, monthly_requests) VALUES (?1, ?2) "
			    "ON CONFLICT (owner) DO UPDATE SET monthly_requests = ?2",
			    error);
	if (stmt == NULL)
		return FALSE;
	bind_text(stmt, 1, quota->id);
	sqlite3_bind_int64(stmt, 2, quota->when);
	return stmt_step_done(conn, stmt, error);
}

static void
set_quota_written(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(source);
	IdAndTime *quota = g_task_get_task_data(task);
	GError *error = NULL;

	if (!g_task_propagate_boolean(G_TASK(result), &error)) {
		g_task_return_error(task, error);
		return;
	}
	{
		g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);
		g_hash_table_replace(self->quotas,
				     g_strdup(quota->id),
				     uint64_new((guint64)quota->when));
	}
	g_task_return_boolean(task, TRUE);
}

static void
confab_store_sqlite_set_quota(ConfabStore *store,
			      const gchar *owner,
			      guint64 monthly_requests,
			      GCancellable *cancellable,
			      GAsyncReadyCallback callback,
			      gpointer user_data)
{
	GTask *task = g_task_new(store, cancellable, callback, user_data);
	gint64 limit = (gint64)MIN(monthly_requests, (guint64)G_MAXINT64);

	g_task_set_source_tag(task, confab_store_sqlite_set_quota);
	g_task_set_task_data(task, id_and_time_new(owner, limit), (GDestroyNotify)id_and_time_free);
	writer_push_task(CONFAB_STORE_SQLITE(store),
			 write_set_quota,
			 id_and_time_new(owner, limit),
			 (GDestroyNotify)id_and_time_free,
			 task_new(CONFAB_STORE_SQLITE(store),
				  confab_store_sqlite_set_quota,
				  NULL,
				  set_quota_written,
				  task));
}

/* A message's content blocks as stored: '' when they are its content (a
 * user's message of text: its text is stored once, not twice; schema v5). */
static const gchar *
stored_blocks(ConfabMessage *msg)
{
	const gchar *content = confab_message_get_content(msg);
	const gchar *blocks = confab_message_get_content_blocks(msg);

	if (blocks == NULL)
		return "[]";
	if (content != NULL && (blocks == content || strcmp(blocks, content) == 0))
		return "";
	return blocks;
}

static gboolean
insert_message(Conn *conn, ConfabMessage *msg, GError **error)
{
	g_autoptr(ConfabCachedStmt) stmt =
	    conn_prepare_static(conn,
				"INSERT INTO messages (" CONFAB_STORE_MESSAGE_COLUMNS ") "
				"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
				error);
	if (stmt == NULL)
		return FALSE;
	bind_text(stmt, 1, confab_message_get_id(msg));
	bind_text(stmt, 2, confab_message_get_session_id(msg));
	bind_text(stmt, 3, confab_message_get_role(msg));
	bind_text(stmt, 4, confab_message_get_model(msg));
	bind_text(stmt, 5, confab_message_get_content(msg) ?: "[]");
	bind_text(stmt, 6, stored_blocks(msg));
	sqlite3_bind_int(stmt, 7, confab_message_get_status(msg));
	bind_text(stmt, 8, confab_message_get_finish_reason(msg));
	if (confab_message_get_prompt_tokens(msg) >= 0)
		sqlite3_bind_int64(stmt, 9, confab_message_get_prompt_tokens(msg));
	if (confab_message_get_completion_tokens(msg) >= 0)
		sqlite3_bind_int64(stmt, 10, confab_message_get_completion_tokens(msg));
	sqlite3_bind_int64(stmt, 11, confab_message_get_created_at(msg));
	bind_text(stmt, 12, confab_message_get_response_id(msg));
	bind_text(stmt, 13, confab_message_get_upstream(msg));
	if (!stmt_step_done(conn, stmt, error)) {
		if (error != NULL && *error != NULL && (*error)->code == CONFAB_ERROR_NOT_FOUND)
			(*error)->code = CONFAB_ERROR_CONVERSATION_NOT_FOUND;
		return FALSE;
	}
	return TRUE;
}

static gboolean
touch_session(Conn *conn, const gchar *session_id, gint64 when, GError **error)
{
	g_autoptr(ConfabCachedStmt) stmt = conn_prepare_static(
	    conn,
	    "UPDATE sessions SET updated_at = MAX(updated_at, ?2) WHERE id = ?1",
	    error);
	if (stmt == NULL)
		return FALSE;
	bind_text(stmt, 1, session_id);
	sqlite3_bind_int64(stmt, 2, when);
	if (!stmt_step_done(conn, stmt, error))
		return FALSE;
	if (sqlite3_changes(conn->db) == 0) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_CONVERSATION_NOT_FOUND,
			    "no session %s",
			    session_id);
		return FALSE;
	}
	return TRUE;
}

static gboolean
insert_session(Conn *conn, ConfabSession *session, gint64 updated_at, GError **error)
{
	g_autoptr(ConfabCachedStmt) stmt =
	    conn_prepare_static(conn,
				"INSERT INTO sessions (" CONFAB_STORE_SESSION_COLUMNS ") "
				"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
				error);
	if (stmt == NULL)
		return FALSE;
	bind_text(stmt, 1, confab_session_get_id(session));
	bind_text(stmt, 2, confab_session_get_owner(session));
	bind_text(stmt, 3, confab_session_get_agent_id(session));
	sqlite3_bind_int(stmt, 4, confab_session_get_source(session));
	bind_text(stmt, 5, confab_session_get_title(session));
	sqlite3_bind_int64(stmt, 6, confab_session_get_created_at(session));
	sqlite3_bind_int64(stmt, 7, updated_at);
	return stmt_step_done(conn, stmt, error);
}

/* @n more of a month's count of @key (an owner, or a token's id) */
static gboolean
write_count(Conn *conn,
	    const gchar *sql,
	    const gchar *key,
	    const gchar *month,
	    gint64 n,
	    GError **error)
{
	g_autoptr(ConfabCachedStmt) stmt = conn_prepare_static(conn, sql, error);

	if (stmt == NULL)
		return FALSE;
	bind_text(stmt, 1, key);
	bind_text(stmt, 2, month);
	sqlite3_bind_int64(stmt, 3, n);
	return stmt_step_done(conn, stmt, error);
}

#define WRITE_USAGE                                                                                \
	"INSERT INTO usage (owner, month, requests) VALUES (?1, ?2, ?3) "                          \
	"ON CONFLICT (owner, month) DO UPDATE SET requests = requests + ?3"
#define WRITE_TOKENS                                                                               \
	"INSERT INTO token_usage (key, month, tokens) VALUES (?1, ?2, ?3) "                        \
	"ON CONFLICT (key, month) DO UPDATE SET tokens = max(token_usage.tokens + ?3, 0)"

/* A turn's request, counted in its month: in the batch's tally when there
 * is one (one row written per owner and batch, not one per turn: a
 * ninth of the writer's work per turn), else at once. */
static gboolean
count_request(Conn *conn, const gchar *owner, const gchar *month, GError **error)
{
	g_autofree gchar *key = NULL;
	gpointer n;

	if (!conn->tally_usage)
		return write_count(conn, WRITE_USAGE, owner, month, 1, error);
	key = g_strconcat(owner, "\n", month, NULL);
	n = g_hash_table_lookup(conn->batch_usage, key);
	g_hash_table_replace(conn->batch_usage,
			     g_steal_pointer(&key),
			     GSIZE_TO_POINTER(GPOINTER_TO_SIZE(n) + 1));
	return TRUE;
}

/* What a turn's answer adds to the month's row of its owner, token and
 * agent (issue 30): one upsert, in the turn's (or the batch's)
 * transaction. */
static gboolean
write_use(Conn *conn, const ConfabStoreUsageRow *use, GError **error)
{
	g_autoptr(ConfabCachedStmt) stmt = conn_prepare_static(
	    conn,
	    "INSERT INTO usage_monthly (month, owner, token_id, agent_id, requests, "
	    "input_tokens, output_tokens, reasoning_tokens, tokens) "
	    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, max(?9, 0)) "
	    "ON CONFLICT (month, owner, token_id, agent_id) DO UPDATE SET "
	    "requests = requests + ?5, input_tokens = input_tokens + ?6, "
	    "output_tokens = output_tokens + ?7, reasoning_tokens = reasoning_tokens + ?8, "
	    "tokens = max(tokens + ?9, 0)",
	    error);

	if (stmt == NULL)
		return FALSE;
	bind_text(stmt, 1, use->month);
	bind_text(stmt, 2, use->owner);
	bind_text(stmt, 3, use->token_id != NULL ? use->token_id : "");
	bind_text(stmt, 4, use->agent_id);
	sqlite3_bind_int64(stmt, 5, (gint64)use->requests);
	sqlite3_bind_int64(stmt, 6, (gint64)use->input_tokens);
	sqlite3_bind_int64(stmt, 7, (gint64)use->output_tokens);
	sqlite3_bind_int64(stmt, 8, (gint64)use->reasoning_tokens);
	sqlite3_bind_int64(stmt, 9, use->tokens);
	return stmt_step_done(conn, stmt, error);
}

/* A turn's usage: in the batch's tally when there is one (one upsert per
 * owner, token and agent and batch, as its requests are), else at once. */
static gboolean
count_use(Conn *conn, const ConfabStoreUsageRow *use, GError **error)
{
	g_autofree gchar *key = NULL;
	ConfabStoreUsageRow *sum;

	if (!conn->tally_usage)
		return write_use(conn, use, error);
	/* lengths first: no two keys of different rows are the same text */
	key = g_strdup_printf("%zu:%s%zu:%s%zu:%s%zu:%s",
			      strlen(use->month),
			      use->month,
			      strlen(use->owner),
			      use->owner,
			      strlen(use->token_id ?: ""),
			      use->token_id ?: "",
			      strlen(use->agent_id),
			      use->agent_id);
	sum = g_hash_table_lookup(conn->batch_use, key);
	if (sum == NULL) {
		g_hash_table_insert(conn->batch_use,
				    g_steal_pointer(&key),
				    confab_store_usage_row_copy(use));
		return TRUE;
	}
	sum->requests += use->requests;
	sum->input_tokens += use->input_tokens;
	sum->output_tokens += use->output_tokens;
	sum->reasoning_tokens += use->reasoning_tokens;
	sum->tokens += use->tokens;
	return TRUE;
}

/* The batch's tally, written, before its commit. */
static gboolean
write_batch_usage(Conn *conn, GError **error)
{
	GHashTableIter iter;
	gpointer key;
	gpointer n;

	g_hash_table_iter_init(&iter, conn->batch_usage);
	while (g_hash_table_iter_next(&iter, &key, &n)) {
		/* the last one: a month has none, an owner might */
		const gchar *newline = strrchr(key, '\n');
		g_autofree gchar *owner = g_strndup(key, newline - (const gchar *)key);
		if (!write_count(conn, WRITE_USAGE, owner, newline + 1, GPOINTER_TO_SIZE(n), error))
			return FALSE;
	}
	g_hash_table_remove_all(conn->batch_usage);
	g_hash_table_iter_init(&iter, conn->batch_tokens);
	while (g_hash_table_iter_next(&iter, &key, &n)) {
		const gchar *newline = strrchr(key, '\n');
		g_autofree gchar *token_key = g_strndup(key, newline - (const gchar *)key);
		if (!write_count(conn, WRITE_TOKENS, token_key, newline + 1, *(gint64 *)n, error))
			return FALSE;
	}
	g_hash_table_remove_all(conn->batch_tokens);
	g_hash_table_iter_init(&iter, conn->batch_use);
	while (g_hash_table_iter_next(&iter, &key, &n)) {
		if (!write_use(conn, n, error))
			return FALSE;
	}
	g_hash_table_remove_all(conn->batch_use);
	return TRUE;
}

/* A turn's tokens, added to the month's counts of its owner and token in
 * the turn's transaction (the store counts them in memory as they are
 * taken; this keeps them over a restart): in the batch's tally when there
 * is one, as its requests are, else at once. */
static gboolean
count_tokens(Conn *conn, const ConfabStoreTurn *turn, GError **error)
{
	const gchar *keys[] = {turn->tokens_owner, turn->tokens_token_id};

	for (guint i = 0; i < G_N_ELEMENTS(keys); i++) {
		g_autofree gchar *tally = NULL;
		gint64 *sum;

		if (keys[i] == NULL)
			continue;
		if (!conn->tally_usage) {
			if (!write_count(conn,
					 WRITE_TOKENS,
					 keys[i],
					 turn->tokens_month,
					 turn->tokens,
					 error))
				return FALSE;
			continue;
		}
		tally = g_strconcat(keys[i], "\n", turn->tokens_month, NULL);
		sum = g_hash_table_lookup(conn->batch_tokens, tally);
		if (sum == NULL) {
			sum = g_new0(gint64, 1);
			g_hash_table_insert(conn->batch_tokens, g_steal_pointer(&tally), sum);
		}
		*sum += turn->tokens;
	}
	return TRUE;
}

static gboolean
write_commit_turn(Conn *conn, gpointer data, GError **error)
{
	ConfabStoreTurn *turn = data;
	ConfabSession *session = turn->session;
	gint64 updated_at = confab_session_get_updated_at(session);

	if (turn->assistant != NULL)
		updated_at = MAX(updated_at, confab_message_get_created_at(turn->assistant));
	if (turn->session_is_new) {
		if (!insert_session(conn, session, updated_at, error))
			return FALSE;
	} else if (!touch_session(conn, confab_session_get_id(session), updated_at, error)) {
		return FALSE;
	}
	for (guint i = 0; i < turn->messages->len; i++) {
		if (!insert_message(conn, g_ptr_array_index(turn->messages, i), error))
			return FALSE;
	}
	if (turn->usage_owner != NULL &&
	    !count_request(conn, turn->usage_owner, turn->usage_month, error))
		return FALSE;
	/* the budgets' tokens go in the usage row of the month they count in
	 * (set, not added: a batch retried with savepoints runs this again) */
	if (turn->use != NULL)
		turn->use->tokens = g_strcmp0(turn->tokens_month, turn->use->month) == 0 &&
					    turn->tokens_owner != NULL
					? turn->tokens
					: 0;
	if (turn->tokens != 0 && (turn->use == NULL || turn->use->tokens == 0) &&
	    !count_tokens(conn, turn, error))
		return FALSE;
	if (turn->use != NULL && !count_use(conn, turn->use, error))
		return FALSE;
	return turn->assistant == NULL || insert_message(conn, turn->assistant, error);
}

static void
confab_store_sqlite_commit_turn(ConfabStore *store,
				const ConfabStoreTurn *turn,
				GCancellable *cancellable,
				GAsyncReadyCallback callback,
				gpointer user_data)
{
	writer_push_task(CONFAB_STORE_SQLITE(store),
			 write_commit_turn,
			 confab_store_turn_copy(turn),
			 (GDestroyNotify)confab_store_turn_free,
			 TASK_NEW(confab_store_sqlite_commit_turn));
}

/* ---------- reads ---------- */

/* ---------- search ---------- */

typedef struct {
	gchar *owner;
	GStrv terms;
	guint limit;
} SearchQuery;

static void
search_query_free(SearchQuery *query)
{
	g_free(query->owner);
	g_strfreev(query->terms);
	g_free(query);
}

/* A term as an FTS5 query: a string (quotes doubled), as a prefix. Terms
 * without a letter or a digit would be empty phrases: they are left out. */
static gchar *
fts_term(const gchar *term)
{
	g_autoptr(GString) out = g_string_new("\"");
	gboolean has_word = FALSE;
	guint n = 0;

	for (const gchar *p = term; *p != '\0' && n < CONFAB_STORE_SEARCH_MAX_TERM_LEN;
	     p = g_utf8_next_char(p), n++) {
		gunichar c = g_utf8_get_char(p);
		has_word = has_word || g_unichar_isalnum(c);
		if (c == '"')
			g_string_append_c(out, '"');
		g_string_append_unichar(out, c);
	}
	if (!has_word)
		return NULL;
	g_string_append(out, "\"*");
	return g_string_free(g_steal_pointer(&out), FALSE);
}

#define SEARCH_SESSION_COLUMNS                                                                     \
	"s.id, s.owner, s.agent_id, s.source, s.title, s.created_at, s.updated_at"

/* The SQL for @n terms, from constant fragments: the conversations whose
 * rows match each term, intersected, then the owner's, newest first. The
 * unary + keeps SQLite from looking each match up in the owner's index and
 * sorting them all: it walks the owner's conversations newest first instead,
 * each checked against the matches, and stops at the limit. */
static gchar *
search_sql(guint n)
{
	g_autoptr(GString) sql = g_string_new("SELECT " SEARCH_SESSION_COLUMNS ", d.doc "
					      "FROM search_docs d JOIN sessions s ON s.id = "
					      "d.session_id WHERE d.owner = ?1 AND +d.doc IN (");
	for (guint i = 0; i < n; i++)
		g_string_append_printf(sql,
				       "%sSELECT rowid >> " SEARCH_ROW_BITS
				       " FROM search WHERE search MATCH ?%u",
				       i > 0 ? " INTERSECT " : "",
				       i + 3);
	g_string_append(sql, ") ORDER BY d.doc DESC LIMIT ?2");
	return g_string_free(g_steal_pointer(&sql), FALSE);
}

/* The best line of a conversation for its result: from the row that
 * matches the most terms, a message rather than the title, the latest. */
static gchar *
search_snippet(Conn *conn, gint64 doc, const gchar *const *terms, GError **error)
{
	g_autoptr(ConfabCachedStmt) stmt =
	    conn_prepare(conn,
			 "SELECT rowid, text FROM search WHERE rowid BETWEEN ?1 AND ?2",
			 error);
	g_autofree gchar *best = NULL;
	guint best_score = 0;
	gint rc;

	if (stmt == NULL)
		return NULL;
	sqlite3_bind_int64(stmt, 1, doc << 20);
	sqlite3_bind_int64(stmt, 2, (doc << 20) | ((1 << 20) - 1));
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		guint matched = 0;
		g_autofree gchar *snippet =
		    confab_store_search_snippet(column_text(stmt, 1), terms, &matched);
		/* rows come in rowid order: the title first, then older first */
		guint score = matched * 2 + ((sqlite3_column_int64(stmt, 0) & 0xFFFFF) != 0);
		if (snippet != NULL && score >= best_score) {
			g_free(best);
			best = g_steal_pointer(&snippet);
			best_score = score;
		}
	}
	if (rc != SQLITE_DONE) {
		set_sqlite_error(error, conn->db, "reading a conversation's text");
		return NULL;
	}
	return g_steal_pointer(&best);
}

static gpointer
read_search_sessions(Conn *conn, gpointer data, GError **error)
{
	SearchQuery *query = data;
	g_autoptr(GPtrArray) hits =
	    g_ptr_array_new_with_free_func((GDestroyNotify)confab_store_search_hit_free);
	g_autoptr(GPtrArray) fts = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GArray) docs = g_array_new(FALSE, FALSE, sizeof(gint64));
	g_autoptr(ConfabCachedStmt) stmt = NULL;
	g_autofree gchar *sql = NULL;
	gint rc;

	for (guint i = 0; query->terms[i] != NULL && fts->len < CONFAB_STORE_SEARCH_MAX_TERMS;
	     i++) {
		gchar *term = fts_term(query->terms[i]);
		if (term != NULL)
			g_ptr_array_add(fts, term);
	}
	if (fts->len == 0 || query->limit == 0)
		return g_steal_pointer(&hits);
	sql = search_sql(fts->len);
	stmt = conn_prepare(conn, sql, error);
	if (stmt == NULL)
		return NULL;
	bind_text(stmt, 1, query->owner);
	sqlite3_bind_int(stmt, 2, (gint)query->limit);
	for (guint i = 0; i < fts->len; i++)
		bind_text(stmt, (gint)i + 3, g_ptr_array_index(fts, i));
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
		ConfabStoreSearchHit *hit = g_new0(ConfabStoreSearchHit, 1);
		gint64 doc = sqlite3_column_int64(stmt, 7);
		hit->session = CONFAB_SESSION(
		    confab_store_row_to_session(&(ConfabStoreRow){&row_funcs, stmt, 0}));
		g_ptr_array_add(hits, hit);
		g_array_append_val(docs, doc);
	}
	if (rc != SQLITE_DONE) {
		set_sqlite_error(error, conn->db, "searching");
		return NULL;
	}
	for (guint i = 0; i < hits->len; i++) {
		ConfabStoreSearchHit *hit = g_ptr_array_index(hits, i);
		hit->snippet = search_snippet(conn,
					      g_array_index(docs, gint64, i),
					      (const gchar *const *)query->terms,
					      error);
		if (hit->snippet == NULL && error != NULL && *error != NULL)
			return NULL;
	}
	return g_steal_pointer(&hits);
}

typedef struct {
	SearchQuery *query; /* owned */
	GCancellable *cancellable;
	GAsyncReadyCallback callback;
	gpointer user_data;
} SearchCall;

static void
search_sessions_indexed(GObject *source, GAsyncResult *result, gpointer user_data);

/* A search sees every message committed before it was asked: the writer
 * first indexes what is queued (search_pending), then a reader searches. */
static void
confab_store_sqlite_search_sessions(ConfabStore *store,
				    const gchar *owner,
				    const gchar *const *terms,
				    guint limit,
				    GCancellable *cancellable,
				    GAsyncReadyCallback callback,
				    gpointer user_data)
{
	SearchCall *call;

	if (!g_atomic_int_get(&CONFAB_STORE_SQLITE(store)->search_index)) {
		g_task_report_new_error(store,
					callback,
					user_data,
					confab_store_sqlite_search_sessions,
					CONFAB_ERROR,
					CONFAB_ERROR_NOT_IMPLEMENTED,
					"full-text search is off ([desktop] search_index)");
		return;
	}
	call = g_new0(SearchCall, 1);
	call->query = g_new0(SearchQuery, 1);
	call->query->owner = g_strdup(owner);
	call->query->terms = g_strdupv((gchar **)terms);
	call->query->limit = limit;
	call->cancellable = cancellable != NULL ? g_object_ref(cancellable) : NULL;
	call->callback = callback;
	call->user_data = user_data;
	writer_push_task(CONFAB_STORE_SQLITE(store),
			 write_index_search,
			 NULL,
			 NULL,
			 task_new(CONFAB_STORE_SQLITE(store),
				  confab_store_sqlite_search_sessions,
				  NULL,
				  search_sessions_indexed,
				  call));
}

static void
search_sessions_indexed(GObject *source, GAsyncResult *result, gpointer user_data)
{
	SearchCall *call = user_data;

	/* what could not be indexed now is not found yet; the rest is */
	g_task_propagate_boolean(G_TASK(result), NULL);
	reader_run_task(CONFAB_STORE_SQLITE(source),
			read_search_sessions,
			g_steal_pointer(&call->query),
			(GDestroyNotify)search_query_free,
			(GDestroyNotify)g_ptr_array_unref,
			task_new(source,
				 confab_store_sqlite_search_sessions,
				 call->cancellable,
				 call->callback,
				 call->user_data));
	g_clear_object(&call->cancellable);
	g_free(call);
}

/* Turns the search index on or off, in the writer's order: off drops the
 * queueing triggers and the index; on (when it was off) makes them again
 * and queues every conversation and message, in the order they came, for
 * the writer to index. */
static gboolean
write_search_index_mode(Conn *conn, gpointer data, GError **error)
{
	gboolean on = GPOINTER_TO_INT(data);
	g_autoptr(ConfabCachedStmt) stmt =
	    conn_prepare(conn,
			 "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
			 "AND name = 'search_message_queued'",
			 error);
	gboolean kept;

	if (stmt == NULL)
		return FALSE;
	if (sqlite3_step(stmt) != SQLITE_ROW) {
		set_sqlite_error(error, conn->db, "reading the schema");
		return FALSE;
	}
	kept = sqlite3_column_int(stmt, 0) > 0;
	if (on == kept)
		return TRUE;
	if (!on)
		return conn_exec(conn,
				 "DROP TRIGGER search_session_queued;"
				 "DROP TRIGGER search_message_queued;"
				 "DELETE FROM search_pending; DELETE FROM search;"
				 "DELETE FROM search_docs;",
				 error);
	g_message("search index turned on: indexing every conversation");
	return conn_exec(
	    conn,
	    SEARCH_QUEUE_TRIGGERS
	    "INSERT INTO search_pending (session_id) SELECT id FROM sessions ORDER BY id;"
	    "INSERT INTO search_pending (session_id, message_id) SELECT session_id, id "
	    "  FROM messages WHERE role IN ('user', 'assistant') ORDER BY rowid;",
	    error);
}

static void
search_index_mode_written(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GError) error = NULL;

	if (!g_task_propagate_boolean(G_TASK(result), &error))
		g_warning("turning the search index %s: %s",
			  GPOINTER_TO_INT(user_data) ? "on" : "off",
			  error->message);
}

/**
 * confab_store_sqlite_set_search_index:
 * @self: a #ConfabStoreSqlite
 * @enabled: whether to keep the full-text index of conversations
 *
 * Keeps the index that search_sessions() reads (on when the store opens),
 * or drops it and stops keeping it: every turn's commit is then cheaper,
 * and a search fails with %CONFAB_ERROR_NOT_IMPLEMENTED. Turned on again,
 * the writer indexes every conversation first. Applied in order with the
 * writes already queued.
 */
void
confab_store_sqlite_set_search_index(ConfabStoreSqlite *self, gboolean enabled)
{
	g_return_if_fail(CONFAB_IS_STORE_SQLITE(self));

	g_atomic_int_set(&self->search_index, enabled);
	writer_push_task(self,
			 write_search_index_mode,
			 GINT_TO_POINTER(enabled),
			 NULL,
			 task_new(self,
				  confab_store_sqlite_set_search_index,
				  NULL,
				  search_index_mode_written,
				  GINT_TO_POINTER(enabled)));
}

/* ---------- lifecycle ---------- */

static void
confab_store_sqlite_close(ConfabStore *store)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(store);
	Job *sentinel;
	Job *job;

	if (self->closed)
		return;
	self->closed = TRUE;

	/* the writer finishes every job queued before the sentinel */
	sentinel = g_new0(Job, 1);
	g_async_queue_push(self->queue, sentinel);
	g_thread_join(g_steal_pointer(&self->thread));
	g_async_queue_push(self->checkpoint_queue, GINT_TO_POINTER(CHECKPOINT_STOP));
	g_thread_join(g_steal_pointer(&self->checkpoint_thread));
	g_clear_pointer(&self->checkpoint_conn, conn_free);
	/* what the checkpoint thread queued for a writer that is gone */
	while ((job = g_async_queue_try_pop(self->queue)) != NULL)
		job_free(job);
	g_clear_pointer(&self->writer, conn_free);

	/* readers finish what is queued, then stop */
	for (guint i = 0; i < self->reader_threads->len; i++)
		g_async_queue_push(self->read_queue, g_new0(Job, 1));
	for (guint i = 0; i < self->reader_threads->len; i++)
		g_thread_join(g_ptr_array_index(self->reader_threads, i));
	g_ptr_array_set_size(self->reader_threads, 0);
}

/* ---------- approvals ---------- */

/* At open: one process owns the database, so every approval still pending
 * that a turn waited for was asked by a turn of a confabd that is gone (it
 * was killed, or the machine stopped). No decision can run its call any
 * more: it times out now, so that it is neither listed nor decided. */
/* At open, as for approvals: every elicitation still pending was asked by
 * a turn of a confabd gone; nobody can answer it any more. */
static gboolean
expire_orphaned_elicitations(Conn *conn, GError **error)
{
	g_autoptr(ConfabCachedStmt) stmt =
	    conn_prepare(conn,
			 "UPDATE elicitations SET state = 'timed_out', answered_by = 'timeout', "
			 "answered_at = ?1 WHERE state = 'pending'",
			 error);

	if (stmt == NULL)
		return FALSE;
	sqlite3_bind_int64(stmt, 1, g_get_real_time() / G_USEC_PER_SEC);
	if (!stmt_step_done(conn, stmt, error)) {
		g_prefix_error_literal(error, "timing out the elicitations of a confabd gone: ");
		return FALSE;
	}
	return TRUE;
}

static gboolean
expire_orphaned_approvals(Conn *conn, GError **error)
{
	g_autoptr(ConfabCachedStmt) stmt =
	    conn_prepare(conn,
			 "UPDATE approvals SET state = 'timed_out', decided_by = 'timeout', "
			 "reason = 'Its confabd stopped: nobody waits for it any more', "
			 "decided_at = ?1 WHERE state = 'pending' AND response_id IS NULL",
			 error);

	if (stmt == NULL)
		return FALSE;
	sqlite3_bind_int64(stmt, 1, g_get_real_time() / G_USEC_PER_SEC);
	if (!stmt_step_done(conn, stmt, error)) {
		g_prefix_error_literal(error, "timing out the approvals of a confabd gone: ");
		return FALSE;
	}
	if (sqlite3_changes(conn->db) > 0)
		g_message("timed out %d pending approvals: the confabd whose turns waited "
			  "for them stopped",
			  sqlite3_changes(conn->db));
	return TRUE;
}

/* ---------- every operation described once (confab-store-call.h) ---------- */

/* The call's statement, cached, with its arguments bound: `$n` is the
 * parameter SQLite names so. */
static sqlite3_stmt *
prepare_call(Conn *conn, ConfabStoreCall *call, const gchar *sql, GError **error)
{
	static const gchar *const names[] = {"$1",  "$2",  "$3",  "$4",	 "$5",	"$6",  "$7",
					     "$8",  "$9",  "$10", "$11", "$12", "$13", "$14",
					     "$15", "$16", "$17", "$18", "$19", "$20"};
	sqlite3_stmt *stmt = sql == call->sql ? conn_prepare(conn, sql, error)
					      : conn_prepare_static(conn, sql, error);

	if (stmt == NULL)
		return NULL;
	g_assert(confab_store_call_get_n_args(call) <= G_N_ELEMENTS(names));
	for (guint i = 0; i < confab_store_call_get_n_args(call); i++) {
		const ConfabStoreArg *arg = confab_store_call_get_arg(call, i);
		gint idx = sqlite3_bind_parameter_index(stmt, names[i]);

		if (idx == 0)
			continue;
		switch (arg->type) {
		case CONFAB_STORE_ARG_TEXT:
			bind_text(stmt, idx, arg->text);
			break;
		case CONFAB_STORE_ARG_INT:
			sqlite3_bind_int64(stmt, idx, arg->integer);
			break;
		case CONFAB_STORE_ARG_BYTES:
			sqlite3_bind_blob(stmt,
					  idx,
					  g_bytes_get_data(arg->bytes, NULL),
					  (gint)g_bytes_get_size(arg->bytes),
					  SQLITE_STATIC);
			break;
		case CONFAB_STORE_ARG_INSTANCE:
			/* one process owns the database: no instance to name */
			sqlite3_bind_null(stmt, idx);
			break;
		}
	}
	return stmt;
}

/* a reader thread's: each read sees one consistent snapshot */
static gpointer
read_call(Conn *conn, gpointer data, GError **error)
{
	ConfabStoreCall *call = data;
	g_autoptr(ConfabCachedStmt) stmt =
	    prepare_call(conn, call, confab_store_call_get_sql(call, TRUE), error);
	ConfabStoreRow row = {&row_funcs, stmt, 0};
	gint rc;

	if (stmt == NULL)
		return NULL;
	while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
		if (!confab_store_call_add_row(call, &row))
			break;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		set_sqlite_error(error, conn->db, call->op->what);
		return NULL;
	}
	return confab_store_call_steal_result(call, error);
}

/* the writer's, in its batch */
static gboolean
write_call(Conn *conn, gpointer data, GError **error)
{
	ConfabStoreCall *call = data;
	g_autoptr(ConfabCachedStmt) stmt =
	    prepare_call(conn, call, confab_store_call_get_sql(call, TRUE), error);
	g_autoptr(ConfabCachedStmt) then = NULL;
	ConfabStoreRow row = {&row_funcs, NULL, 0};
	gint rc;

	if (stmt == NULL)
		return FALSE;
	if (sqlite3_step(stmt) != SQLITE_DONE) {
		set_sqlite_error(error, conn->db, call->op->what);
		return FALSE;
	}
	if (call->op->rows == CONFAB_STORE_ROWS_NONE &&
	    !confab_store_call_check_changed(call, sqlite3_changes(conn->db), error))
		return FALSE;
	if (call->op->sql_sqlite_then == NULL)
		return TRUE;
	then = prepare_call(conn, call, call->op->sql_sqlite_then, error);
	if (then == NULL)
		return FALSE;
	/* a written row's read (CONFAB_STORE_ROWS_WRITTEN) */
	row.result = then;
	while ((rc = sqlite3_step(then)) == SQLITE_ROW)
		if (!confab_store_call_add_row(call, &row))
			break;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		set_sqlite_error(error, conn->db, call->op->what);
		return FALSE;
	}
	return TRUE;
}

/* A written row's answer, once its write committed: the outer task's. */
static void
call_written(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	ConfabStoreCall *call = g_task_get_task_data(task);
	GError *error = NULL;
	gpointer row;

	if (!g_task_propagate_boolean(G_TASK(result), &error)) {
		g_task_return_error(task, error);
		return;
	}
	row = confab_store_call_steal_result(call, &error);
	if (row == NULL)
		g_task_return_error(task, error);
	else
		g_task_return_pointer(task, row, confab_store_call_get_result_free(call));
}

static void
confab_store_sqlite_run(ConfabStore *store, ConfabStoreCall *call, GTask *task)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(store);

	/* the call is the task's: it lives as long as the job */
	if (call->op->rows == CONFAB_STORE_ROWS_NONE)
		writer_push_task(self, write_call, call, NULL, task);
	else if (call->op->rows == CONFAB_STORE_ROWS_WRITTEN) {
		/* the writer answers a boolean: the row is the call's */
		g_task_set_check_cancellable(task, FALSE);
		writer_push_task(self,
				 write_call,
				 call,
				 NULL,
				 task_new(self, confab_store_sqlite_run, NULL, call_written, task));
	} else
		reader_run_task(self,
				read_call,
				call,
				NULL,
				confab_store_call_get_result_free(call),
				task);
}

static void
confab_store_sqlite_iface_init(ConfabStoreInterface *iface)
{
	iface->run = confab_store_sqlite_run;
	iface->set_quota = confab_store_sqlite_set_quota;
	iface->get_usage = confab_store_sqlite_get_usage;
	iface->admit_quota = confab_store_sqlite_admit_quota;
	iface->list_usage = confab_store_sqlite_list_usage;
	iface->release_quota = confab_store_sqlite_release_quota;
	iface->release_parallel = confab_store_sqlite_release_parallel;
	iface->acquire_session = confab_store_sqlite_acquire_session;
	iface->admit_quota_now = confab_store_sqlite_admit_quota_now;
	iface->take_tokens = confab_store_sqlite_take_tokens;
	iface->take_tokens_now = confab_store_sqlite_take_tokens_now;
	iface->acquire_session_now = confab_store_sqlite_acquire_session_now;
	iface->release_session = confab_store_sqlite_release_session;
	iface->session_is_running = confab_store_sqlite_session_is_running;
	iface->commit_turn = confab_store_sqlite_commit_turn;
	iface->search_sessions = confab_store_sqlite_search_sessions;
	iface->close = confab_store_sqlite_close;
}

static void
confab_store_sqlite_finalize(GObject *object)
{
	ConfabStoreSqlite *self = CONFAB_STORE_SQLITE(object);

	if (self->thread != NULL)
		confab_store_sqlite_close(CONFAB_STORE(self));
	g_clear_pointer(&self->checkpoint_conn, conn_free);
	g_clear_pointer(&self->writer, conn_free);
	g_clear_pointer(&self->checkpoint_queue, g_async_queue_unref);
	g_clear_pointer(&self->queue, g_async_queue_unref);
	g_clear_pointer(&self->read_queue, g_async_queue_unref);
	g_clear_pointer(&self->reader_threads, g_ptr_array_unref);
	g_clear_pointer(&self->quotas, g_hash_table_unref);
	g_clear_pointer(&self->usage, g_hash_table_unref);
	g_clear_pointer(&self->rates, g_hash_table_unref);
	g_clear_pointer(&self->flying, g_hash_table_unref);
	g_clear_pointer(&self->token_rates, g_hash_table_unref);
	g_clear_pointer(&self->month_tokens, g_hash_table_unref);
	g_clear_pointer(&self->busy, g_hash_table_unref);
	g_free(self->usage_month);
	g_mutex_clear(&self->lock);
	g_free(self->path);
	G_OBJECT_CLASS(confab_store_sqlite_parent_class)->finalize(object);
}

static void
confab_store_sqlite_class_init(ConfabStoreSqliteClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_store_sqlite_finalize;
}

static void
confab_store_sqlite_init(ConfabStoreSqlite *self)
{
	self->queue = g_async_queue_new();
	self->read_queue = g_async_queue_new();
	self->checkpoint_queue = g_async_queue_new();
	self->search_index = TRUE;
	self->reader_threads = g_ptr_array_new();
	self->busy = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	self->rates = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	self->flying = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	self->token_rates = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_mutex_init(&self->lock);
}

/* The owners' quotas, and this month's counts. */
static gboolean
load_counts(ConfabStoreSqlite *self, GError **error)
{
	g_autoptr(GDateTime) now = g_date_time_new_now_utc();

	self->usage_month = g_date_time_format(now, "%Y-%m");
	self->quotas = load_owner_counts(self->writer,
					 "SELECT owner, monthly_requests FROM quotas",
					 NULL,
					 error);
	if (self->quotas == NULL)
		return FALSE;
	self->usage = load_owner_counts(self->writer,
					"SELECT owner, requests FROM usage WHERE month = ?1",
					self->usage_month,
					error);
	if (self->usage == NULL)
		return FALSE;
	/* the months' tokens of owners and tokens: in the usage rows (v16),
	 * and in token_usage for what was counted before, or elsewhere */
	self->month_tokens =
	    load_owner_counts(self->writer,
			      "SELECT key, sum(tokens) FROM ("
			      "SELECT key, tokens FROM token_usage WHERE month = ?1 "
			      "UNION ALL SELECT owner, tokens FROM usage_monthly WHERE month = ?1 "
			      "UNION ALL SELECT token_id, tokens FROM usage_monthly "
			      "WHERE month = ?1 AND token_id <> '') GROUP BY key",
			      self->usage_month,
			      error);
	return self->month_tokens != NULL;
}

/* SQLite creates the -wal and -shm files with the mode of the database,
 * so creating the database 0600 keeps all three private. */
static gboolean
create_private_file(const gchar *path, GError **error)
{
	gint fd = g_open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_FAILED,
			    "creating %s: %s",
			    path,
			    g_strerror(errno));
		return FALSE;
	}
	if (fchmod(fd, 0600) < 0)
		g_warning("making %s private: %s", path, g_strerror(errno));
	close(fd);
	return TRUE;
}

/**
 * confab_store_sqlite_new:
 * @path: the database file, created 0600 if missing
 * @n_readers: the number of read connections
 * @error: return location for a #GError
 *
 * Opens (or creates) the database, migrates it to %CONFAB_DB_VERSION and
 * starts the writer thread.
 *
 * Returns: (transfer full): a new store
 */
/*
 * Process-wide settings, before SQLite initializes itself (after that it
 * refuses them, harmlessly): no memory statistics. With them, every
 * allocation of every connection takes one global mutex — the writer's
 * and the readers' alike — to count what nobody reads.
 */
static void
configure_sqlite(void)
{
	static gsize done = 0;

	if (g_once_init_enter(&done)) {
		(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
		g_once_init_leave(&done, 1);
	}
}

ConfabStoreSqlite *
confab_store_sqlite_new(const gchar *path, guint n_readers, GError **error)
{
	g_autoptr(ConfabStoreSqlite) self = g_object_new(CONFAB_TYPE_STORE_SQLITE, NULL);

	g_return_val_if_fail(path != NULL, NULL);

	if (sqlite3_threadsafe() == 0) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_FAILED,
				    "SQLite was built without thread support");
		return NULL;
	}
	configure_sqlite();
	self->path = g_strdup(path);
	if (!create_private_file(path, error))
		return NULL;
	self->writer = conn_open(path, FALSE, error);
	if (self->writer == NULL)
		return NULL;
	if (!conn_migrate(self->writer, error))
		return NULL;
	if (!expire_orphaned_approvals(self->writer, error))
		return NULL;
	if (!expire_orphaned_elicitations(self->writer, error))
		return NULL;
	if (!load_counts(self, error))
		return NULL;
	for (guint i = 0; i < MAX(n_readers, 1); i++) {
		Reader *reader = g_new0(Reader, 1);
		GThread *thread;
		reader->conn = conn_open(path, TRUE, error);
		if (reader->conn == NULL) {
			g_free(reader);
			return NULL;
		}
		reader->queue = g_async_queue_ref(self->read_queue);
		thread = g_thread_try_new("confab-reader", reader_thread, reader, error);
		if (thread == NULL) {
			conn_free(reader->conn);
			g_async_queue_unref(reader->queue);
			g_free(reader);
			return NULL;
		}
		g_ptr_array_add(self->reader_threads, thread);
	}
	self->checkpoint_conn = conn_open(path, FALSE, error);
	if (self->checkpoint_conn == NULL)
		return NULL;
	self->checkpoint_thread = g_thread_try_new("confab-wal", checkpoint_thread, self, error);
	if (self->checkpoint_thread == NULL)
		return NULL;
	/* instead of SQLite's own checkpoints, in the writer's commits */
	sqlite3_wal_hook(self->writer->db, writer_wal_committed, self);
	self->thread = g_thread_try_new("confab-writer", writer_thread, self, error);
	if (self->thread == NULL)
		return NULL;
	return g_steal_pointer(&self);
}

/**
 * confab_store_sqlite_get_checkpoints:
 * @self: a #ConfabStoreSqlite
 *
 * Returns: the checkpoints the checkpoint thread ran: the WAL copied into
 * the database, off the writer's commits
 */
guint64
confab_store_sqlite_get_checkpoints(ConfabStoreSqlite *self)
{
	g_return_val_if_fail(CONFAB_IS_STORE_SQLITE(self), 0);
	return (guint64)g_atomic_pointer_get(&self->checkpoints);
}

/**
 * confab_store_sqlite_get_stats:
 * @self: a #ConfabStoreSqlite
 * @commits: (out) (optional): transactions committed
 * @jobs: (out) (optional): writes committed
 *
 * jobs / commits is the mean group-commit batch.
 */
void
confab_store_sqlite_get_stats(ConfabStoreSqlite *self, guint64 *commits, guint64 *jobs)
{
	g_return_if_fail(CONFAB_IS_STORE_SQLITE(self));
	if (commits != NULL)
		*commits = (guint64)g_atomic_pointer_get(&self->commits);
	if (jobs != NULL)
		*jobs = (guint64)g_atomic_pointer_get(&self->jobs);
}
