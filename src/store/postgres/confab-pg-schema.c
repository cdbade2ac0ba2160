/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabPg"

#include "config.h"

#include <stdlib.h>

#include "store/postgres/confab-pg-schema.h"
#include "util/confab-error.h"

/*
 * The PostgreSQL schema, versioned in the table schema_version and migrated
 * at start under a session-level pg_advisory_lock(), so that instances that
 * start together take turns: the first migrates, the others find the
 * schema current. Every migration of one start runs in one transaction: a
 * failure leaves the old schema whole, and never deletes user data.
 *
 * Ids and owners are COLLATE "C": lists and cursors compare them byte by
 * byte, as SQLite does, whatever the database's collation.
 *
 * What several instances must agree on lives here:
 * - usage (owner, month): requests, the committed count, and pending, the
 *   requests admitted whose turn has not committed yet. Admission is one
 *   conditional upsert of that row (see confab-store-postgres.c), so the
 *   row lock orders the instances and requests + pending never passes the
 *   quota.
 * - usage_holds: one row per pending request, naming the instance that
 *   admitted it; a commit or a release deletes it by its id (idempotent).
 * - instances: each live instance renews its row (expires_at) every few
 *   seconds; confab_reap() ends the instances whose row expired: gives back
 *   their pending requests, stores the unfinished answers of their streams
 *   as incomplete, frees their session leases and times out the approvals
 *   their turns waited for.
 * - session_leases: one row per session with a turn running; its answer_*
 *   columns hold what a stream's answer is stored as if its instance dies.
 */

#define MIGRATE_V1                                                                                 \
	"CREATE TABLE agents ("                                                                    \
	"  id text COLLATE \"C\" PRIMARY KEY,"                                                     \
	"  name text NOT NULL,"                                                                    \
	"  instructions text NOT NULL DEFAULT '',"                                                 \
	"  provider text NOT NULL,"                                                                \
	"  base_url text,"                                                                         \
	"  upstream_model text,"                                                                   \
	"  api_key text,"                                                                          \
	"  api_key_file text,"                                                                     \
	"  params text,"                                                                           \
	"  connect_timeout integer NOT NULL DEFAULT 0,"                                            \
	"  first_byte_timeout integer NOT NULL DEFAULT 0,"                                         \
	"  idle_timeout integer NOT NULL DEFAULT 0,"                                               \
	"  total_timeout integer NOT NULL DEFAULT 0,"                                              \
	"  created_at bigint NOT NULL,"                                                            \
	"  updated_at bigint NOT NULL,"                                                            \
	"  deleted_at bigint NOT NULL DEFAULT 0,"                                                  \
	"  mcp_servers text,"                                                                      \
	"  max_steps integer NOT NULL DEFAULT 10"                                                  \
	");"                                                                                       \
	"CREATE TABLE tokens ("                                                                    \
	"  id text COLLATE \"C\" PRIMARY KEY,"                                                     \
	"  hash bytea NOT NULL UNIQUE,"                                                            \
	"  owner text COLLATE \"C\" NOT NULL,"                                                     \
	"  name text NOT NULL DEFAULT '',"                                                         \
	"  scopes text NOT NULL,"                                                                  \
	"  agent_id text COLLATE \"C\","                                                           \
	"  created_at bigint NOT NULL,"                                                            \
	"  expires_at bigint NOT NULL DEFAULT 0,"                                                  \
	"  revoked_at bigint NOT NULL DEFAULT 0"                                                   \
	");"                                                                                       \
	"CREATE TABLE sessions ("                                                                  \
	"  id text COLLATE \"C\" PRIMARY KEY,"                                                     \
	"  owner text COLLATE \"C\" NOT NULL,"                                                     \
	"  agent_id text COLLATE \"C\" NOT NULL,"                                                  \
	"  source integer NOT NULL,"                                                               \
	"  title text,"                                                                            \
	"  created_at bigint NOT NULL,"                                                            \
	"  updated_at bigint NOT NULL"                                                             \
	");"                                                                                       \
	"CREATE INDEX sessions_by_owner ON sessions (owner, source, id);"                          \
	"CREATE INDEX sessions_by_owner_agent ON sessions (owner, source, agent_id, id);"          \
	"CREATE TABLE messages ("                                                                  \
	"  id text COLLATE \"C\" NOT NULL,"                                                        \
	"  session_id text COLLATE \"C\" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,"     \
	"  role text NOT NULL,"                                                                    \
	"  model text NOT NULL,"                                                                   \
	"  content text NOT NULL,"                                                                 \
	"  content_blocks text NOT NULL,"                                                          \
	"  status integer NOT NULL DEFAULT 0,"                                                     \
	"  finish_reason text,"                                                                    \
	"  prompt_tokens bigint,"                                                                  \
	"  completion_tokens bigint,"                                                              \
	"  created_at bigint NOT NULL,"                                                            \
	"  PRIMARY KEY (session_id, id)"                                                           \
	");"                                                                                       \
	"CREATE TABLE quotas ("                                                                    \
	"  owner text COLLATE \"C\" PRIMARY KEY,"                                                  \
	"  monthly_requests bigint NOT NULL"                                                       \
	");"                                                                                       \
	"CREATE TABLE usage ("                                                                     \
	"  owner text COLLATE \"C\" NOT NULL,"                                                     \
	"  month text COLLATE \"C\" NOT NULL,"                                                     \
	"  requests bigint NOT NULL DEFAULT 0,"                                                    \
	"  pending bigint NOT NULL DEFAULT 0,"                                                     \
	"  PRIMARY KEY (owner, month)"                                                             \
	");"                                                                                       \
	"CREATE TABLE instances ("                                                                 \
	"  id text COLLATE \"C\" PRIMARY KEY,"                                                     \
	"  started_at timestamptz NOT NULL DEFAULT now(),"                                         \
	"  expires_at timestamptz NOT NULL"                                                        \
	");"                                                                                       \
	"CREATE TABLE usage_holds ("                                                               \
	"  id text COLLATE \"C\" PRIMARY KEY,"                                                     \
	"  instance_id text COLLATE \"C\" NOT NULL,"                                               \
	"  owner text COLLATE \"C\" NOT NULL,"                                                     \
	"  month text COLLATE \"C\" NOT NULL"                                                      \
	");"                                                                                       \
	"CREATE INDEX usage_holds_by_instance ON usage_holds (instance_id);"                       \
	"CREATE TABLE session_leases ("                                                            \
	"  session_id text COLLATE \"C\" PRIMARY KEY,"                                             \
	"  instance_id text COLLATE \"C\" NOT NULL,"                                               \
	"  lease_id text COLLATE \"C\" NOT NULL,"                                                  \
	"  answer_id text COLLATE \"C\","                                                          \
	"  answer_model text,"                                                                     \
	"  answer_created_at bigint"                                                               \
	");"                                                                                       \
	"CREATE INDEX session_leases_by_instance ON session_leases (instance_id);" COMMIT_TURN_V1  \
	    REAP_V1

/* A message's columns in a turn's commit: v1's, and MORE after created_at
 * (v2: response_id; v8: upstream) */
#define MESSAGE_RECORD_WITH(MORE)                                                                  \
	"(id text, session_id text, role text, model text, content text, content_blocks text, "    \
	"status integer, finish_reason text, prompt_tokens bigint, completion_tokens bigint, "     \
	"created_at bigint" MORE ")"
#define MESSAGE_INSERT_WITH(COLUMNS, VALUES)                                                       \
	"INSERT INTO messages (id, session_id, role, model, content, content_blocks, status, "     \
	"finish_reason, prompt_tokens, completion_tokens, created_at" COLUMNS ") "                 \
	"SELECT m.id, m.session_id, m.role, m.model, m.content, m.content_blocks, m.status, "      \
	"m.finish_reason, m.prompt_tokens, m.completion_tokens, m.created_at" VALUES " "
#define MESSAGE_RECORD MESSAGE_RECORD_WITH("")
#define MESSAGE_INSERT MESSAGE_INSERT_WITH("", "")

/* A turn's commit, one statement: the session (new, or touched and still
 * there: else SQLSTATE CF404), the user's messages, the count that admission
 * held (made durable, its hold gone), the answer (and the session's lease
 * ends with it), or the answer to store should this instance die (kept with
 * the lease). v1 creates it; v2, v8 (messages.upstream) and v13 (USE: the
 * usage per owner, token and agent) replace it, over the messages' columns
 * of their version. */
#define COMMIT_TURN_V1			 "CREATE " COMMIT_TURN(MESSAGE_INSERT, MESSAGE_RECORD, "")
#define COMMIT_TURN_WITH(INSERT, RECORD) COMMIT_TURN_WITH_USE(INSERT, RECORD, "")
#define COMMIT_TURN_WITH_USE(INSERT, RECORD, USE)                                                  \
	"CREATE OR REPLACE " COMMIT_TURN(INSERT, RECORD, USE)
#define COMMIT_TURN(INSERT, RECORD, USE)                                                           \
	"FUNCTION confab_commit_turn(t jsonb) RETURNS void LANGUAGE plpgsql AS $$ "                \
	"DECLARE "                                                                                 \
	"  sid text := t #>> '{session,id}'; "                                                     \
	"  n integer; "                                                                            \
	"BEGIN "                                                                                   \
	"  IF (t ->> 'session_is_new')::boolean THEN "                                             \
	"    INSERT INTO sessions (id, owner, agent_id, source, title, created_at, updated_at) "   \
	"      SELECT s.id, s.owner, s.agent_id, s.source, s.title, s.created_at, "                \
	"             (t ->> 'updated_at')::bigint "                                               \
	"      FROM jsonb_to_record(t -> 'session') AS s (id text, owner text, agent_id text, "    \
	"           source integer, title text, created_at bigint); "                              \
	"  ELSE "                                                                                  \
	"    UPDATE sessions SET updated_at = GREATEST(updated_at, (t ->> 'updated_at')::bigint) " \
	"      WHERE id = sid; "                                                                   \
	"    GET DIAGNOSTICS n = ROW_COUNT; "                                                      \
	"    IF n = 0 THEN "                                                                       \
	"      RAISE EXCEPTION 'no session %', sid USING ERRCODE = 'CF404'; "                      \
	"    END IF; "                                                                             \
	"  END IF; " INSERT "FROM jsonb_to_recordset(t -> 'messages') AS m " RECORD "; "           \
	"  IF t -> 'assistant' IS NOT NULL THEN " INSERT                                           \
	"FROM jsonb_to_recordset(jsonb_build_array(t -> 'assistant')) AS m " RECORD "; "           \
	"    DELETE FROM session_leases WHERE session_id = sid AND lease_id = t ->> 'lease'; "     \
	"    UPDATE session_leases SET answer_id = NULL "                                          \
	"      WHERE session_id = sid AND answer_id = t #>> '{assistant,id}'; "                    \
	"  END IF; "                                                                               \
	"  IF t -> 'unfinished' IS NOT NULL THEN "                                                 \
	"    UPDATE session_leases SET answer_id = t #>> '{unfinished,id}', "                      \
	"      answer_model = t #>> '{unfinished,model}', "                                        \
	"      answer_created_at = (t #>> '{unfinished,created_at}')::bigint "                     \
	"      WHERE session_id = sid AND instance_id = t ->> 'instance'; "                        \
	"  END IF; " USE                                                                           \
	"  /* last: the owner's row is every turn's, its lock held until COMMIT */ "               \
	"  IF t ->> 'usage_owner' IS NOT NULL THEN "                                               \
	"    DELETE FROM usage_holds WHERE id = t ->> 'hold'; "                                    \
	"    GET DIAGNOSTICS n = ROW_COUNT; "                                                      \
	"    INSERT INTO usage AS u (owner, month, requests, pending) "                            \
	"      VALUES (t ->> 'usage_owner', t ->> 'usage_month', 1, 0) "                           \
	"      ON CONFLICT (owner, month) DO UPDATE "                                              \
	"      SET requests = u.requests + 1, pending = GREATEST(u.pending - n, 0); "              \
	"  END IF; "                                                                               \
	"END $$;"

/* v2: the Responses API: a response's messages (its input and its answer)
 * carry its id; the commit stores it */
#define MESSAGE_RECORD_V2 MESSAGE_RECORD_WITH(", response_id text")
#define MESSAGE_INSERT_V2 MESSAGE_INSERT_WITH(", response_id", ", m.response_id")
#define COMMIT_TURN_V2	  COMMIT_TURN_WITH(MESSAGE_INSERT_V2, MESSAGE_RECORD_V2)

#define MIGRATE_V2                                                                                 \
	"ALTER TABLE messages ADD COLUMN response_id text COLLATE \"C\";"                          \
	"CREATE INDEX messages_by_response ON messages (response_id) "                             \
	"  WHERE response_id IS NOT NULL;" COMMIT_TURN_V2

/* Ends instances: @only_instance, or every one whose row expired (another instance
 * reaping the same ones skips them). Their pending requests are given
 * back, their streams' unfinished answers stored incomplete, their leases
 * freed. Returns how many instances it ended. */
#define REAP_V1 "CREATE " REAP("", "")

/* confab_reap(): BEFORE and AFTER are what later versions give back too,
 * before the usage holds and after the leases */
#define REAP(BEFORE, AFTER)                                                                        \
	"FUNCTION confab_reap(only_instance text) RETURNS integer LANGUAGE plpgsql AS $$ "         \
	"DECLARE "                                                                                 \
	"  dead text[]; "                                                                          \
	"BEGIN "                                                                                   \
	"  IF only_instance IS NOT NULL THEN "                                                     \
	"    dead := ARRAY[only_instance]; "                                                       \
	"  ELSE "                                                                                  \
	"    SELECT array_agg(d.id) INTO dead FROM (SELECT id FROM instances "                     \
	"      WHERE expires_at < now() FOR UPDATE SKIP LOCKED) AS d; "                            \
	"  END IF; "                                                                               \
	"  IF dead IS NULL THEN "                                                                  \
	"    RETURN 0; "                                                                           \
	"  END IF; " BEFORE "  UPDATE usage AS u SET pending = GREATEST(u.pending - h.n, 0) "      \
	"    FROM (SELECT owner, month, count(*) AS n FROM usage_holds "                           \
	"          WHERE instance_id = ANY (dead) GROUP BY owner, month) AS h "                    \
	"    WHERE u.owner = h.owner AND u.month = h.month; "                                      \
	"  DELETE FROM usage_holds WHERE instance_id = ANY (dead); "                               \
	"  INSERT INTO messages (id, session_id, role, model, content, content_blocks, status, "   \
	"                        created_at) "                                                     \
	"    SELECT l.answer_id, l.session_id, 'assistant', l.answer_model, '[]', '[]', 1, "       \
	"           l.answer_created_at "                                                          \
	"    FROM session_leases AS l JOIN sessions AS s ON s.id = l.session_id "                  \
	"    WHERE l.instance_id = ANY (dead) AND l.answer_id IS NOT NULL "                        \
	"    ON CONFLICT DO NOTHING; "                                                             \
	"  UPDATE sessions AS s SET updated_at = GREATEST(s.updated_at, l.answer_created_at) "     \
	"    FROM session_leases AS l "                                                            \
	"    WHERE l.session_id = s.id AND l.instance_id = ANY (dead) "                            \
	"      AND l.answer_id IS NOT NULL; "                                                      \
	"  DELETE FROM session_leases WHERE instance_id = ANY (dead); " AFTER                      \
	"  DELETE FROM instances WHERE id = ANY (dead); "                                          \
	"  RETURN cardinality(dead); "                                                             \
	"END $$;"

/*
 * v3 (approvals, issue 22): tool calls that wait for a person's decision.
 * A migration of its own, apart from the others, so that it can be
 * renumbered at a merge. Any instance decides a row with one conditional
 * UPDATE (state = 'pending'); the instance whose turn waits polls its own
 * pending rows (confab-approvals.c).
 */
#define MIGRATE_V3_APPROVALS                                                                       \
	"CREATE TABLE approvals ("                                                                 \
	"  id text COLLATE \"C\" PRIMARY KEY,"                                                     \
	"  owner text COLLATE \"C\" NOT NULL,"                                                     \
	"  agent_id text COLLATE \"C\" NOT NULL,"                                                  \
	"  session_id text COLLATE \"C\" NOT NULL,"                                                \
	"  server text NOT NULL,"                                                                  \
	"  tool text NOT NULL,"                                                                    \
	"  name text NOT NULL,"                                                                    \
	"  arguments text NOT NULL,"                                                               \
	"  tool_call_id text NOT NULL,"                                                            \
	"  state text NOT NULL DEFAULT 'pending',"                                                 \
	"  decided_by text,"                                                                       \
	"  reason text,"                                                                           \
	"  created_at bigint NOT NULL,"                                                            \
	"  decided_at bigint NOT NULL DEFAULT 0"                                                   \
	");"                                                                                       \
	"CREATE INDEX approvals_by_session ON approvals (session_id);"

/*
 * v4 (approvals asked by a response, issue 22): the Responses API's
 * approval requests end their response; the response that asked is kept,
 * so that only its continuation decides them, and no timeout does.
 */
#define MIGRATE_V4_APPROVAL_RESPONSE                                                               \
	"ALTER TABLE approvals ADD COLUMN response_id text COLLATE \"C\";"                         \
	"CREATE INDEX approvals_pending ON approvals (owner, id) "                                 \
	"  WHERE state = 'pending' AND response_id IS NULL;"

/*
 * v5 (approvals after a crash, issue 35): an approval a turn waits for
 * names the instance whose turn waits (instance_id). It can be decided
 * only while that instance's row in instances is live; confab_reap() times
 * out the pending approvals of the instances it ends. Pending approvals
 * from before this version name no instance: nobody can tell whether their
 * turn still waits, so they time out here (an older confabd still running
 * sees its wait end as timed out, and its call does not run).
 */
#define MIGRATE_V5_APPROVAL_INSTANCE                                                               \
	"ALTER TABLE approvals ADD COLUMN instance_id text COLLATE \"C\";"                         \
	"UPDATE approvals SET state = 'timed_out', decided_by = 'timeout', "                       \
	"  reason = 'confabd was upgraded: nobody waits for it any more', "                        \
	"  decided_at = extract(epoch FROM now())::bigint "                                        \
	"  WHERE state = 'pending' AND response_id IS NULL;"                                       \
	"CREATE INDEX approvals_by_instance ON approvals (instance_id) "                           \
	"  WHERE state = 'pending';" REAP_V5

/* confab_reap() of v1, and the pending approvals of the instances it ends
 * timed out: their turns are gone, so no decision can run their calls. */
#define REAP_V5 "CREATE OR REPLACE " REAP("", REAP_APPROVALS)
#define REAP_APPROVALS                                                                             \
	"  UPDATE approvals SET state = 'timed_out', decided_by = 'timeout', "                     \
	"    reason = 'Its confabd stopped: nobody waits for it any more', "                       \
	"    decided_at = extract(epoch FROM now())::bigint "                                      \
	"    WHERE state = 'pending' AND instance_id = ANY (dead); "

/* v9's: v5's, and the pending elicitations of the instances it ends timed
 * out (their turns are gone; nobody can answer them any more). */
#define REAP_V9 "CREATE OR REPLACE " REAP("", REAP_APPROVALS REAP_ELICITATIONS)
#define REAP_ELICITATIONS                                                                          \
	"  UPDATE elicitations SET state = 'timed_out', answered_by = 'timeout', "                 \
	"    answered_at = extract(epoch FROM now())::bigint "                                     \
	"    WHERE state = 'pending' AND instance_id = ANY (dead); "

/*
 * v6 (background responses, issue 31): a response's record beside its
 * messages (its request's parameters; for a background one, where it
 * stands, which instance runs it and whether someone asked it to stop),
 * and a background stream's events, kept in batches for any instance to
 * replay.
 */
#define MIGRATE_V6_RESPONSES                                                                       \
	"CREATE TABLE responses ("                                                                 \
	"  id text COLLATE \"C\" PRIMARY KEY,"                                                     \
	"  owner text COLLATE \"C\" NOT NULL,"                                                     \
	"  agent_id text COLLATE \"C\" NOT NULL,"                                                  \
	"  session_id text COLLATE \"C\","                                                         \
	"  background integer NOT NULL,"                                                           \
	"  stream integer NOT NULL,"                                                               \
	"  status text NOT NULL,"                                                                  \
	"  params text NOT NULL,"                                                                  \
	"  error text,"                                                                            \
	"  cancel_requested integer NOT NULL DEFAULT 0,"                                           \
	"  created_at bigint NOT NULL,"                                                            \
	"  completed_at bigint NOT NULL DEFAULT 0,"                                                \
	"  instance_id text COLLATE \"C\""                                                         \
	");"                                                                                       \
	"CREATE INDEX responses_running ON responses (owner) "                                     \
	"  WHERE status IN ('queued', 'in_progress');"                                             \
	"CREATE TABLE response_events ("                                                           \
	"  response_id text COLLATE \"C\" NOT NULL,"                                               \
	"  first_seq bigint NOT NULL,"                                                             \
	"  last_seq bigint NOT NULL,"                                                              \
	"  data text NOT NULL,"                                                                    \
	"  PRIMARY KEY (response_id, first_seq)"                                                   \
	");"

/*
 * v7 (the Conversations API, issue 32): a conversation's metadata, a JSON
 * object of strings; NULL for none. A conversation created without an
 * agent has agent_id '' until its first response.
 */
#define MIGRATE_V7_CONVERSATION_METADATA "ALTER TABLE sessions ADD COLUMN metadata text;"

/*
 * v8 (upstream routing, issue 29): an agent's targets beyond the first
 * (the single-upstream columns stay target 0, "primary" while upstreams is
 * NULL) and its routing settings, both JSON; the target that answered an
 * assistant message (messages.upstream, JSON), which the commit stores.
 */
#define MESSAGE_RECORD_V8 MESSAGE_RECORD_WITH(", response_id text, upstream text")
#define MESSAGE_INSERT_V8                                                                          \
	MESSAGE_INSERT_WITH(", response_id, upstream", ", m.response_id, m.upstream")

#define MIGRATE_V8_TARGETS                                                                         \
	"ALTER TABLE agents ADD COLUMN IF NOT EXISTS upstreams text;"                              \
	"ALTER TABLE agents ADD COLUMN IF NOT EXISTS routing text;"                                \
	"ALTER TABLE messages ADD COLUMN IF NOT EXISTS upstream text;" COMMIT_TURN_WITH(           \
	    MESSAGE_INSERT_V8,                                                                     \
	    MESSAGE_RECORD_V8)

/*
 * v9 (elicitations, issue 34): an MCP server's `elicitation/create`, put
 * to the person whose turn called it. Any instance answers a row with one
 * conditional UPDATE (pending, and the waiting instance's lease live); the
 * instance whose turn waits polls it (confab-elicitations.c); confab_reap()
 * times out the pending ones of the instances it ends.
 */
#define MIGRATE_V9_ELICITATIONS                                                                    \
	"CREATE TABLE elicitations ("                                                              \
	"  id text COLLATE \"C\" PRIMARY KEY,"                                                     \
	"  owner text COLLATE \"C\" NOT NULL,"                                                     \
	"  agent_id text COLLATE \"C\" NOT NULL,"                                                  \
	"  session_id text COLLATE \"C\" NOT NULL,"                                                \
	"  server text NOT NULL,"                                                                  \
	"  message text NOT NULL,"                                                                 \
	"  schema text NOT NULL,"                                                                  \
	"  state text NOT NULL DEFAULT 'pending',"                                                 \
	"  content text,"                                                                          \
	"  answered_by text,"                                                                      \
	"  created_at bigint NOT NULL,"                                                            \
	"  answered_at bigint NOT NULL DEFAULT 0,"                                                 \
	"  instance_id text COLLATE \"C\""                                                         \
	");"                                                                                       \
	"CREATE INDEX elicitations_by_session ON elicitations (session_id);"                       \
	"CREATE INDEX elicitations_by_instance ON elicitations (instance_id) "                     \
	"  WHERE state = 'pending';" REAP_V9

/*
 * v10 (limits, issue 30): each owner's row of rates: GCRA's theoretical
 * arrival time for the requests per minute, in microseconds of the
 * database's clock (one clock for every instance), and its turns in
 * flight; a parallel_holds row per turn in flight, naming its instance, so
 * that confab_reap() gives back a dead instance's (it locks rates before
 * usage, as admissions do).
 */
#define MIGRATE_V10_RATES                                                                          \
	"CREATE TABLE rates ("                                                                     \
	"  owner text COLLATE \"C\" PRIMARY KEY,"                                                  \
	"  tat bigint NOT NULL DEFAULT 0,"                                                         \
	"  in_flight bigint NOT NULL DEFAULT 0"                                                    \
	");"                                                                                       \
	"CREATE TABLE parallel_holds ("                                                            \
	"  id text COLLATE \"C\" PRIMARY KEY,"                                                     \
	"  instance_id text COLLATE \"C\" NOT NULL,"                                               \
	"  owner text COLLATE \"C\" NOT NULL"                                                      \
	");"                                                                                       \
	"CREATE INDEX parallel_holds_by_instance ON parallel_holds (instance_id);" REAP_V10

/* confab_reap() of v9, and the turns in flight of the instances it ends
 * given back (before usage: the order admissions lock in). */
#define REAP_V10 "CREATE OR REPLACE " REAP(REAP_RATES, REAP_APPROVALS REAP_ELICITATIONS)
#define REAP_RATES                                                                                 \
	"  UPDATE rates AS r SET in_flight = GREATEST(r.in_flight - s.n, 0) "                      \
	"    FROM (SELECT owner, count(*) AS n FROM parallel_holds "                               \
	"          WHERE instance_id = ANY (dead) GROUP BY owner) AS s "                           \
	"    WHERE r.owner = s.owner; "                                                            \
	"  DELETE FROM parallel_holds WHERE instance_id = ANY (dead); "

/*
 * v11 (limits per owner and per token, issue 30): an owner's or a token's
 * own limits, 0 where it has none. Every instance keeps them in memory,
 * reloaded when one of them sets some (NOTIFY). A token's row of rates and
 * its parallel_holds are keyed by its id (tok_…) in the owner column, so
 * confab_reap() gives them back as it does an owner's.
 */
#define MIGRATE_V11_LIMITS                                                                         \
	"CREATE TABLE limits ("                                                                    \
	"  kind text COLLATE \"C\" NOT NULL,"                                                      \
	"  id text COLLATE \"C\" NOT NULL,"                                                        \
	"  rpm bigint NOT NULL DEFAULT 0,"                                                         \
	"  tpm bigint NOT NULL DEFAULT 0,"                                                         \
	"  max_parallel bigint NOT NULL DEFAULT 0,"                                                \
	"  monthly_tokens bigint NOT NULL DEFAULT 0,"                                              \
	"  updated_at bigint NOT NULL DEFAULT 0,"                                                  \
	"  PRIMARY KEY (kind, id)"                                                                 \
	");"                                                                                       \
	"ALTER TABLE rates ADD COLUMN token_tat bigint NOT NULL DEFAULT 0;"                        \
	"CREATE TABLE token_usage ("                                                               \
	"  key text COLLATE \"C\" NOT NULL,"                                                       \
	"  month text COLLATE \"C\" NOT NULL,"                                                     \
	"  tokens bigint NOT NULL DEFAULT 0,"                                                      \
	"  PRIMARY KEY (key, month)"                                                               \
	");" TAKE_TOKENS_V11

/*
 * confab_take_tokens() (v11): a reservation or a settlement of @n tokens
 * against up to two keys (a token's id, then its owner: the order every
 * admission locks rates in), each with a rate (tokens per minute @tpm, @cost
 * microseconds of GCRA arrival time, the token_tat of its row of rates) and
 * a month's budget (token_usage; counted for both keys, budget or not, so
 * that a budget set later sees the month's tokens). Every row is locked first (FOR UPDATE:
 * under READ COMMITTED each statement of the function reads the newest
 * version once the lock is had), then checked, then changed only if all
 * hold (or @force): all or nothing, whatever other instances do. A month's
 * count is not clamped at 0: the settlements of one turn may run in any
 * order on the pool's connections, and their sum is what counts.
 */
#define TAKE_TOKENS_V11                                                                            \
	"CREATE OR REPLACE FUNCTION confab_take_tokens(k1 text, tpm1 bigint, cost1 bigint, "       \
	"    monthly1 bigint, k2 text, tpm2 bigint, cost2 bigint, monthly2 bigint, m text, "       \
	"    n bigint, force boolean) "                                                            \
	"RETURNS TABLE (ok boolean, spent boolean, t1 bigint, u1 bigint, t2 bigint, u2 bigint, "   \
	"    now bigint) "                                                                         \
	"LANGUAGE plpgsql AS $$ "                                                                  \
	"DECLARE "                                                                                 \
	"  k text[] := ARRAY[k1, k2]; "                                                            \
	"  tpm bigint[] := ARRAY[tpm1, tpm2]; "                                                    \
	"  cost bigint[] := ARRAY[cost1, cost2]; "                                                 \
	"  monthly bigint[] := ARRAY[monthly1, monthly2]; "                                        \
	"  t bigint[] := ARRAY[0, 0]::bigint[]; "                                                  \
	"  u bigint[] := ARRAY[0, 0]::bigint[]; "                                                  \
	"  nt bigint[] := ARRAY[0, 0]::bigint[]; "                                                 \
	"  nu bigint[] := ARRAY[0, 0]::bigint[]; "                                                 \
	"  clk bigint := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint; "              \
	"  good boolean := true; "                                                                 \
	"  is_spent boolean := false; "                                                            \
	"  cur bigint; "                                                                           \
	"BEGIN "                                                                                   \
	"  FOR i IN 1 .. 2 LOOP "                                                                  \
	"    CONTINUE WHEN k[i] IS NULL OR k[i] = ''; "                                            \
	"    IF tpm[i] > 0 THEN "                                                                  \
	"      INSERT INTO rates (owner) VALUES (k[i]) ON CONFLICT DO NOTHING; "                   \
	"      SELECT token_tat INTO cur FROM rates WHERE owner = k[i] FOR UPDATE; "               \
	"      t[i] := cur; "                                                                      \
	"      nt[i] := GREATEST(GREATEST(t[i], clk) + cost[i], clk); "                            \
	"      IF NOT force AND n > 0 AND nt[i] - clk > 60000000 THEN good := false; END IF; "     \
	"    END IF; "                                                                             \
	"    IF true THEN "                                                                        \
	"      INSERT INTO token_usage (key, month) VALUES (k[i], m) ON CONFLICT DO NOTHING; "     \
	"      SELECT tokens INTO cur FROM token_usage WHERE key = k[i] AND month = m "            \
	"        FOR UPDATE; "                                                                     \
	"      u[i] := cur; "                                                                      \
	"      nu[i] := u[i] + n; "                                                                \
	"      IF NOT force AND n > 0 AND monthly[i] > 0 AND nu[i] > monthly[i] THEN "             \
	"        good := false; is_spent := true; "                                                \
	"      END IF; "                                                                           \
	"    END IF; "                                                                             \
	"  END LOOP; "                                                                             \
	"  IF good THEN "                                                                          \
	"    FOR i IN 1 .. 2 LOOP "                                                                \
	"      CONTINUE WHEN k[i] IS NULL OR k[i] = ''; "                                          \
	"      IF tpm[i] > 0 THEN "                                                                \
	"        UPDATE rates SET token_tat = nt[i] WHERE owner = k[i]; t[i] := nt[i]; "           \
	"      END IF; "                                                                           \
	"      IF true THEN "                                                                      \
	"        UPDATE token_usage SET tokens = nu[i] WHERE key = k[i] AND month = m; "           \
	"        u[i] := nu[i]; "                                                                  \
	"      END IF; "                                                                           \
	"    END LOOP; "                                                                           \
	"  END IF; "                                                                               \
	"  RETURN QUERY SELECT good, is_spent, t[1], u[1], t[2], u[2], clk; "                      \
	"END $$;"

/*
 * v12 (MCP authorization, issue 34): each agent's MCP server's OAuth state
 * (its client, its tokens, the authorization waiting for a person), which
 * any instance uses; the pending `state` finds it at the callback.
 */
#define MIGRATE_V12_MCP_OAUTH                                                                      \
	"CREATE TABLE mcp_oauth ("                                                                 \
	"  agent_id text COLLATE \"C\" NOT NULL,"                                                  \
	"  server text COLLATE \"C\" NOT NULL,"                                                    \
	"  state text COLLATE \"C\","                                                              \
	"  data text NOT NULL,"                                                                    \
	"  version bigint NOT NULL,"                                                               \
	"  updated_at bigint NOT NULL,"                                                            \
	"  PRIMARY KEY (agent_id, server)"                                                         \
	");"                                                                                       \
	"CREATE UNIQUE INDEX mcp_oauth_by_state ON mcp_oauth (state) WHERE state IS NOT NULL;"

/*
 * v13 (usage per owner, token and agent, issue 30): a month's turns and
 * tokens, one row per owner, token ('' for none) and agent, added to by
 * confab_commit_turn() with a turn's answer (its `use`), in the turn's own
 * transaction: before the owner's usage row, so that every commit locks
 * in one order.
 */
#define USE_V13                                                                                    \
	"  IF t -> 'use' IS NOT NULL THEN "                                                        \
	"    INSERT INTO usage_monthly AS um (month, owner, token_id, agent_id, requests, "        \
	"        input_tokens, output_tokens, reasoning_tokens) "                                  \
	"      VALUES (t #>> '{use,month}', t #>> '{use,owner}', t #>> '{use,token_id}', "         \
	"        t #>> '{use,agent_id}', (t #>> '{use,requests}')::bigint, "                       \
	"        (t #>> '{use,input_tokens}')::bigint, (t #>> '{use,output_tokens}')::bigint, "    \
	"        (t #>> '{use,reasoning_tokens}')::bigint) "                                       \
	"      ON CONFLICT (month, owner, token_id, agent_id) DO UPDATE SET "                      \
	"        requests = um.requests + EXCLUDED.requests, "                                     \
	"        input_tokens = um.input_tokens + EXCLUDED.input_tokens, "                         \
	"        output_tokens = um.output_tokens + EXCLUDED.output_tokens, "                      \
	"        reasoning_tokens = um.reasoning_tokens + EXCLUDED.reasoning_tokens; "             \
	"  END IF; "

#define MIGRATE_V13_USAGE_MONTHLY                                                                  \
	"CREATE TABLE usage_monthly ("                                                             \
	"  month text COLLATE \"C\" NOT NULL,"                                                     \
	"  owner text COLLATE \"C\" NOT NULL,"                                                     \
	"  token_id text COLLATE \"C\" NOT NULL,"                                                  \
	"  agent_id text COLLATE \"C\" NOT NULL,"                                                  \
	"  requests bigint NOT NULL DEFAULT 0,"                                                    \
	"  input_tokens bigint NOT NULL DEFAULT 0,"                                                \
	"  output_tokens bigint NOT NULL DEFAULT 0,"                                               \
	"  reasoning_tokens bigint NOT NULL DEFAULT 0,"                                            \
	"  PRIMARY KEY (month, owner, token_id, agent_id)"                                         \
	");" COMMIT_TURN_WITH_USE(MESSAGE_INSERT_V8, MESSAGE_RECORD_V8, USE_V13)

/* [from] -> the SQL that brings version from to from + 1 */
static const gchar *const migrations[CONFAB_PG_SCHEMA_VERSION] = {
    MIGRATE_V1,
    MIGRATE_V2,
    MIGRATE_V3_APPROVALS,
    MIGRATE_V4_APPROVAL_RESPONSE,
    MIGRATE_V5_APPROVAL_INSTANCE,
    MIGRATE_V6_RESPONSES,
    MIGRATE_V7_CONVERSATION_METADATA,
    MIGRATE_V8_TARGETS,
    MIGRATE_V9_ELICITATIONS,
    MIGRATE_V10_RATES,
    MIGRATE_V11_LIMITS,
    MIGRATE_V12_MCP_OAUTH,
    MIGRATE_V13_USAGE_MONTHLY,
};

typedef enum {
	STEP_LOCK,
	STEP_VERSION,
	STEP_MIGRATE,
	STEP_UNLOCK,
} Step;

typedef struct {
	ConfabPgConnection *connection; /* owned */
	Step step;
	gint from_version;
} Migration;

static void
migration_free(Migration *migration)
{
	g_clear_object(&migration->connection);
	g_free(migration);
}

static void
run_step(GTask *task);

static gchar *
migration_script(gint from)
{
	g_autoptr(GString) script = g_string_new("BEGIN;");

	for (gint v = from; v < CONFAB_PG_SCHEMA_VERSION; v++)
		g_string_append(script, migrations[v]);
	g_string_append_printf(script,
			       "DELETE FROM schema_version;"
			       "INSERT INTO schema_version (version) VALUES (%d);"
			       "COMMIT;",
			       CONFAB_PG_SCHEMA_VERSION);
	return g_string_free(g_steal_pointer(&script), FALSE);
}

/* After reading the version: what to do next, or why not. */
static gboolean
version_read(Migration *migration, PGresult *res, GError **error)
{
	const gchar *value = PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : NULL;

	if (value == NULL) {
		g_set_error_literal(error,
				    CONFAB_ERROR,
				    CONFAB_ERROR_FAILED,
				    "reading the schema version: no answer");
		return FALSE;
	}
	migration->from_version = atoi(value);
	if (migration->from_version > CONFAB_PG_SCHEMA_VERSION) {
		/* never touch a database from the future: fail loudly */
		g_set_error(error,
			    CONFAB_ERROR,
			    CONFAB_ERROR_FAILED,
			    "the database schema is version %d, newer than this confabd "
			    "understands (%d)",
			    migration->from_version,
			    CONFAB_PG_SCHEMA_VERSION);
		return FALSE;
	}
	migration->step = migration->from_version < CONFAB_PG_SCHEMA_VERSION ? STEP_MIGRATE
									     : STEP_UNLOCK;
	return TRUE;
}

static void
step_done(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(GTask) task = user_data;
	Migration *migration = g_task_get_task_data(task);
	g_autoptr(GError) error = NULL;
	g_autoptr(PGresult) res =
	    confab_pg_connection_exec_script_finish(CONFAB_PG_CONNECTION(source), result, &error);

	if (res == NULL) {
		g_prefix_error_literal(&error, "migrating the database: ");
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	switch (migration->step) {
	case STEP_LOCK:
		migration->step = STEP_VERSION;
		break;
	case STEP_VERSION:
		if (!version_read(migration, res, &error)) {
			g_task_return_error(task, g_steal_pointer(&error));
			return;
		}
		break;
	case STEP_MIGRATE:
		migration->step = STEP_UNLOCK;
		break;
	case STEP_UNLOCK:
	default:
		g_task_return_boolean(task, TRUE);
		return;
	}
	run_step(g_steal_pointer(&task));
}

static void
run_step(GTask *task)
{
	Migration *migration = g_task_get_task_data(task);
	g_autofree gchar *script = NULL;

	switch (migration->step) {
	case STEP_LOCK:
		/* waits while another instance migrates */
		script = g_strdup("SELECT pg_advisory_lock(" CONFAB_PG_SCHEMA_LOCK_KEY ")");
		break;
	case STEP_VERSION:
		script = g_strdup("CREATE TABLE IF NOT EXISTS schema_version "
				  "(version integer NOT NULL);"
				  "SELECT COALESCE(max(version), 0) FROM schema_version");
		break;
	case STEP_MIGRATE:
		script = migration_script(migration->from_version);
		break;
	case STEP_UNLOCK:
	default:
		script = g_strdup("SELECT pg_advisory_unlock(" CONFAB_PG_SCHEMA_LOCK_KEY ")");
		break;
	}
	confab_pg_connection_exec_script_async(migration->connection,
					       script,
					       g_task_get_cancellable(task),
					       step_done,
					       task);
}

/**
 * confab_pg_schema_migrate_async:
 * @connection: a ready connection, for this alone: closing it ends the
 *   advisory lock should anything fail halfway
 * @cancellable: (nullable): a #GCancellable
 * @callback: called once the schema is %CONFAB_PG_SCHEMA_VERSION
 * @user_data: data for @callback
 *
 * Brings the schema to %CONFAB_PG_SCHEMA_VERSION under an advisory lock,
 * all migrations in one transaction.
 */
void
confab_pg_schema_migrate_async(ConfabPgConnection *connection,
			       GCancellable *cancellable,
			       GAsyncReadyCallback callback,
			       gpointer user_data)
{
	GTask *task = g_task_new(NULL, cancellable, callback, user_data);
	Migration *migration = g_new0(Migration, 1);

	g_task_set_source_tag(task, confab_pg_schema_migrate_async);
	migration->connection = g_object_ref(connection);
	g_task_set_task_data(task, migration, (GDestroyNotify)migration_free);
	run_step(task);
}

/**
 * confab_pg_schema_migrate_finish:
 * @from_version: (out) (optional): the version found, 0 for a new database
 *
 * Returns: whether the schema is current
 */
gboolean
confab_pg_schema_migrate_finish(GAsyncResult *result, gint *from_version, GError **error)
{
	Migration *migration;

	g_return_val_if_fail(g_task_is_valid(result, NULL), FALSE);
	migration = g_task_get_task_data(G_TASK(result));
	if (from_version != NULL)
		*from_version = migration->from_version;
	return g_task_propagate_boolean(G_TASK(result), error);
}
