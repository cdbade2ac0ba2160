/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <glib/gstdio.h>
#include <string.h>

#include "confab-test-helper.h"

/*
 * Who may read and continue what, as a matrix: two owners, two agents,
 * three scopes (chat.completions, api.full and one for another service),
 * unbound and bound tokens, against the three endpoints. A model of the
 * expected state is kept beside the daemon and every answer is checked
 * against it. Then the token secrets are looked for where they must never
 * be: the daemon's output and its database files.
 */

#define N_OWNERS 2
#define N_AGENTS 2

static const gchar *const scopes[] = {"chat.completions", "api.full", "other"};

typedef struct {
	gchar *id;
	const gchar *owner; /* unowned */
	const gchar *agent; /* unowned */
	gboolean channel;
	guint n_messages;
} Session;

typedef struct {
	gchar *secret;
	const gchar *owner; /* unowned */
	const gchar *scope; /* unowned */
	const gchar *bound; /* unowned, nullable */
} Token;

typedef struct {
	ConfabTestDaemon *daemon;
	gchar *owners[N_OWNERS];
	gchar *agents[N_AGENTS];
	GPtrArray *sessions; /* Session */
	GPtrArray *tokens;   /* Token */
	guint requests;
} Matrix;

static void
session_free(Session *s)
{
	g_free(s->id);
	g_free(s);
}

static void
token_free(Token *t)
{
	g_free(t->secret);
	g_free(t);
}

static Session *
add_session(Matrix *m, const gchar *id, const gchar *owner, const gchar *agent, gboolean channel)
{
	Session *s = g_new0(Session, 1);
	s->id = g_strdup(id);
	s->owner = owner;
	s->agent = agent;
	s->channel = channel;
	s->n_messages = 2;
	g_ptr_array_add(m->sessions, s);
	return s;
}

/* ---------- the rules, as the contract states them ---------- */

static gboolean
token_has_scope(const Token *t)
{
	return g_strcmp0(t->scope, "other") != 0;
}

static gboolean
token_may_use_agent(const Token *t, const gchar *agent)
{
	return t->bound == NULL || g_strcmp0(t->bound, agent) == 0;
}

/* may @t list and replay @s? */
static gboolean
token_sees(const Token *t, const Session *s)
{
	return !s->channel && g_strcmp0(s->owner, t->owner) == 0 &&
	       token_may_use_agent(t, s->agent);
}

/* ---------- helpers ---------- */

static const gchar *
describe(const Token *t)
{
	static gchar buf[256];
	g_snprintf(buf,
		   sizeof(buf),
		   "%s/%s/%s",
		   t->owner,
		   t->scope,
		   t->bound != NULL ? t->bound : "unbound");
	return buf;
}

static void
assert_error(ConfabTestResponse *r,
	     guint status,
	     const gchar *code,
	     const Token *t,
	     const gchar *what)
{
	if (r->status != status ||
	    g_strcmp0(confab_test_json_string(r->json, "error.code"), code) != 0)
		g_test_message("%s as %s: expected %u %s, got %u %.*s",
			       what,
			       describe(t),
			       status,
			       code,
			       r->status,
			       (int)MIN(g_bytes_get_size(r->body), 300),
			       (const gchar *)g_bytes_get_data(r->body, NULL));
	confab_test_assert_error(r, status, code);
}

static void
assert_status(ConfabTestResponse *r, guint status, const Token *t, const gchar *what)
{
	if (r->status != status)
		g_test_message("%s as %s: expected %u, got %u %.*s",
			       what,
			       describe(t),
			       status,
			       r->status,
			       (int)MIN(g_bytes_get_size(r->body), 300),
			       (const gchar *)g_bytes_get_data(r->body, NULL));
	g_assert_cmpuint(r->status, ==, status);
}

static ConfabTestResponse *
get(Matrix *m, const Token *t, const gchar *path)
{
	m->requests++;
	return confab_test_http(m->daemon, "GET", path, t->secret, NULL);
}

static ConfabTestResponse *
post_chat(Matrix *m, const Token *t, const gchar *agent, const gchar *session)
{
	g_autofree gchar *text = g_strdup_printf("said by %s", t->owner);
	m->requests++;
	return confab_test_chat(m->daemon, t->secret, agent, session, text, m->requests % 3 == 0);
}

static GHashTable *
ids_of(ConfabTestResponse *r)
{
	GHashTable *ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	JsonArray *data = json_node_get_array(confab_test_json_get(r->json, "data"));
	for (guint i = 0; i < json_array_get_length(data); i++) {
		JsonObject *item = json_array_get_object_element(data, i);
		g_hash_table_add(ids, g_strdup(json_object_get_string_member(item, "id")));
	}
	return ids;
}

/* ---------- the three endpoints ---------- */

static void
check_list(Matrix *m, const Token *t, const gchar *model)
{
	g_autofree gchar *path =
	    model != NULL ? g_strdup_printf("/api/v1/conversations?limit=100&model=%s", model)
			  : g_strdup("/api/v1/conversations?limit=100");
	g_autoptr(ConfabTestResponse) r = get(m, t, path);
	g_autoptr(GHashTable) ids = NULL;
	guint expected = 0;

	if (!token_has_scope(t)) {
		assert_error(r, 403, "insufficient_scope", t, path);
		return;
	}
	assert_status(r, 200, t, path);
	ids = ids_of(r);
	for (guint i = 0; i < m->sessions->len; i++) {
		Session *s = g_ptr_array_index(m->sessions, i);
		gboolean want =
		    token_sees(t, s) && (model == NULL || g_strcmp0(model, s->agent) == 0);
		if (want != g_hash_table_contains(ids, s->id))
			g_test_message("GET %s as %s: %s (%s, %s, %s) %s",
				       path,
				       describe(t),
				       s->id,
				       s->owner,
				       s->agent,
				       s->channel ? "channel" : "api",
				       want ? "missing" : "listed");
		g_assert_true(want == g_hash_table_contains(ids, s->id));
		if (want)
			expected++;
	}
	g_assert_cmpuint(g_hash_table_size(ids), ==, expected);
}

static void
check_messages(Matrix *m, const Token *t, Session *s)
{
	g_autofree gchar *path =
	    g_strdup_printf("/api/v1/conversations/%s/messages?limit=100&order=asc", s->id);
	g_autoptr(ConfabTestResponse) r = get(m, t, path);

	if (!token_has_scope(t)) {
		assert_error(r, 403, "insufficient_scope", t, path);
		return;
	}
	if (!token_sees(t, s)) {
		/* never says whether it exists */
		assert_error(r, 404, "conversation_not_found", t, path);
		g_assert_null(g_strstr_len(g_bytes_get_data(r->body, NULL),
					   g_bytes_get_size(r->body),
					   "said by"));
		return;
	}
	assert_status(r, 200, t, path);
	g_assert_cmpuint(
	    json_array_get_length(json_node_get_array(confab_test_json_get(r->json, "data"))),
	    ==,
	    s->n_messages);
}

static void
check_new(Matrix *m, const Token *t, const gchar *agent)
{
	g_autoptr(ConfabTestResponse) r = post_chat(m, t, agent, NULL);

	if (!token_has_scope(t)) {
		assert_error(r, 403, "insufficient_scope", t, "new conversation");
		return;
	}
	if (!token_may_use_agent(t, agent)) {
		assert_error(r, 403, "permission_denied", t, "new conversation");
		return;
	}
	assert_status(r, 200, t, "new conversation");
	add_session(m,
		    soup_message_headers_get_one(r->headers, "x-session-id"),
		    t->owner,
		    agent,
		    FALSE);
}

static void
check_continue(Matrix *m, const Token *t, Session *s, const gchar *agent)
{
	g_autoptr(ConfabTestResponse) r = post_chat(m, t, agent, s->id);
	g_autofree gchar *what = g_strdup_printf("continuing %s (%s, %s, %s) with %s",
						 s->id,
						 s->owner,
						 s->agent,
						 s->channel ? "channel" : "api",
						 agent);

	if (!token_has_scope(t)) {
		assert_error(r, 403, "insufficient_scope", t, what);
		return;
	}
	if (!token_may_use_agent(t, agent)) {
		assert_error(r, 403, "permission_denied", t, what);
		return;
	}
	if (!token_sees(t, s) || g_strcmp0(agent, s->agent) != 0) {
		assert_error(r, 404, "conversation_not_found", t, what);
		return;
	}
	assert_status(r, 200, t, what);
	g_assert_cmpstr(soup_message_headers_get_one(r->headers, "x-session-id"), ==, s->id);
	s->n_messages += 2;
}

/* ---------- the matrix ---------- */

static void
matrix_setup(Matrix *m)
{
	g_autoptr(GError) error = NULL;

	/* the first owner is the Unix user, so that its channel session is there to leak */
	m->owners[0] = g_strdup(g_get_user_name());
	m->owners[1] = g_strdup("isolation-other");
	m->sessions = g_ptr_array_new_with_free_func((GDestroyNotify)session_free);
	m->tokens = g_ptr_array_new_with_free_func((GDestroyNotify)token_free);
	m->daemon = confab_test_daemon_start(NULL, NULL);
	for (guint a = 0; a < N_AGENTS; a++) {
		g_autofree gchar *name = g_strdup_printf("agent-%u", a);
		m->agents[a] = confab_test_create_agent(m->daemon, name, "echo");
	}
	for (guint o = 0; o < N_OWNERS; o++) {
		for (guint s = 0; s < G_N_ELEMENTS(scopes); s++) {
			for (gint b = -1; b < N_AGENTS; b++) {
				Token *t = g_new0(Token, 1);
				t->owner = m->owners[o];
				t->scope = scopes[s];
				t->bound = b >= 0 ? m->agents[b] : NULL;
				t->secret = confab_test_create_token(m->daemon,
								     t->owner,
								     t->scope,
								     t->bound,
								     NULL);
				g_ptr_array_add(m->tokens, t);
			}
		}
	}
	/* one API conversation per owner and agent, made by the unbound token */
	for (guint o = 0; o < N_OWNERS; o++) {
		for (guint a = 0; a < N_AGENTS; a++) {
			g_autofree gchar *text = g_strdup_printf("said by %s", m->owners[o]);
			Token *t = g_ptr_array_index(m->tokens, o * G_N_ELEMENTS(scopes) * 3);
			g_autoptr(ConfabTestResponse) r =
			    confab_test_chat(m->daemon, t->secret, m->agents[a], NULL, text, FALSE);
			g_assert_cmpuint(r->status, ==, 200);
			add_session(m,
				    confab_test_json_string(r->json, "metadata.session_id"),
				    m->owners[o],
				    m->agents[a],
				    FALSE);
		}
	}
	/* and a channel conversation of the first owner with each agent */
	for (guint a = 0; a < N_AGENTS; a++) {
		g_autofree gchar *id = NULL;
		g_autofree gchar *reply = NULL;
		confab_dbus_chat_call_send_sync(m->daemon->chat,
						m->agents[a],
						"",
						"said by the desktop",
						&id,
						&reply,
						NULL,
						&error);
		g_assert_no_error(error);
		add_session(m, id, m->owners[0], m->agents[a], TRUE);
	}
}

static void
matrix_free(Matrix *m)
{
	if (m->daemon != NULL)
		confab_test_daemon_free(m->daemon);
	for (guint i = 0; i < N_OWNERS; i++)
		g_free(m->owners[i]);
	for (guint i = 0; i < N_AGENTS; i++)
		g_free(m->agents[i]);
	g_ptr_array_unref(m->sessions);
	g_ptr_array_unref(m->tokens);
}

/* every user message of every session was written by its owner */
static void
check_transcripts(Matrix *m)
{
	for (guint i = 0; i < m->sessions->len; i++) {
		Session *s = g_ptr_array_index(m->sessions, i);
		g_autoptr(GError) error = NULL;
		g_autoptr(GVariant) messages = NULL;
		g_autofree gchar *mark = g_strdup_printf("\"said by %s\"", s->owner);
		confab_dbus_admin_call_get_messages_sync(
		    m->daemon->admin,
		    s->id,
		    g_variant_new_parsed("{'limit': <%u>}", 1000u),
		    &messages,
		    NULL,
		    &error);
		g_assert_no_error(error);
		g_assert_cmpuint(g_variant_n_children(messages), ==, s->n_messages);
		for (gsize j = 0; j < g_variant_n_children(messages); j++) {
			g_autoptr(GVariant) msg = g_variant_get_child_value(messages, j);
			const gchar *role = NULL;
			const gchar *content = NULL;
			const gchar *model = NULL;
			g_assert_true(g_variant_lookup(msg, "role", "&s", &role));
			g_assert_true(g_variant_lookup(msg, "content", "&s", &content));
			g_assert_true(g_variant_lookup(msg, "model", "&s", &model));
			g_assert_cmpstr(model, ==, s->agent);
			if (!s->channel && g_str_equal(role, "user"))
				g_assert_nonnull(strstr(content, mark));
		}
	}
}

static void
test_matrix(void)
{
	Matrix m = {NULL};

	matrix_setup(&m);
	for (guint i = 0; i < m.tokens->len; i++) {
		const Token *t = g_ptr_array_index(m.tokens, i);
		guint n_before = m.sessions->len;

		/* GET /api/v1/conversations, unfiltered and per model */
		check_list(&m, t, NULL);
		for (guint a = 0; a < N_AGENTS; a++)
			check_list(&m, t, m.agents[a]);
		/* GET …/messages of every session there is */
		for (guint s = 0; s < m.sessions->len; s++)
			check_messages(&m, t, g_ptr_array_index(m.sessions, s));
		/* POST: a new conversation with each agent */
		for (guint a = 0; a < N_AGENTS; a++)
			check_new(&m, t, m.agents[a]);
		/* POST: continue every session, with its agent and with the other */
		for (guint s = 0; s < n_before; s++) {
			Session *session = g_ptr_array_index(m.sessions, s);
			for (guint a = 0; a < N_AGENTS; a++)
				check_continue(&m, t, session, m.agents[a]);
		}
		/* what it made is listed for it at once */
		check_list(&m, t, NULL);
	}
	g_test_message("%u requests, %u sessions", m.requests, m.sessions->len);
	g_assert_cmpuint(m.sessions->len, >, 6);

	/* the daemon's own view agrees with the model */
	check_transcripts(&m);
	{
		g_autoptr(GError) error = NULL;
		g_autoptr(GVariant) all = NULL;
		confab_dbus_admin_call_list_sessions_sync(
		    m.daemon->admin,
		    g_variant_new_parsed("{'limit': <%u>}", 1000u),
		    &all,
		    NULL,
		    &error);
		g_assert_no_error(error);
		g_assert_cmpuint(g_variant_n_children(all), ==, m.sessions->len);
	}
	g_assert_cmpint(confab_test_daemon_stop(m.daemon), ==, 0);
	matrix_free(&m);
}

/* ---------- secrets ---------- */

static gboolean
bytes_contain(const gchar *data, gsize len, const gchar *needle)
{
	gsize n = strlen(needle);
	if (n == 0 || len < n)
		return FALSE;
	for (gsize i = 0; i + n <= len; i++) {
		if (data[i] == needle[0] && memcmp(data + i, needle, n) == 0)
			return TRUE;
	}
	return FALSE;
}

/* every file under @dir, recursively */
static void
collect_files(const gchar *dir, GPtrArray *out)
{
	g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
	const gchar *name;
	if (d == NULL)
		return;
	while ((name = g_dir_read_name(d)) != NULL) {
		g_autofree gchar *path = g_build_filename(dir, name, NULL);
		if (g_file_test(path, G_FILE_TEST_IS_DIR))
			collect_files(path, out);
		else
			g_ptr_array_add(out, g_steal_pointer(&path));
	}
}

static void
test_secrets_never_stored(void)
{
	g_autofree gchar *state = confab_test_make_tmpdir("isolation-state");
	g_autoptr(ConfabTestDaemon) daemon = NULL;
	g_autoptr(GPtrArray) secrets = g_ptr_array_new_with_free_func(g_free);
	g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
	g_autofree gchar *agent = NULL;
	g_autofree gchar *output = NULL;
	g_autofree gchar *revoked_id = NULL;
	const gchar *upstream_key = "sk-isolation-UPSTREAM-KEY-0123456789abcdef";
	gboolean saw_db = FALSE;
	g_autoptr(GError) error = NULL;

	/* as talkative as it gets */
	g_setenv("G_MESSAGES_DEBUG", "all", TRUE);
	daemon = confab_test_daemon_start_full(state, NULL, NULL);
	g_unsetenv("G_MESSAGES_DEBUG");
	agent = confab_test_create_agent(daemon, "echo", "echo");
	{
		GVariantDict dict;
		g_autofree gchar *remote = NULL;
		g_variant_dict_init(&dict, NULL);
		g_variant_dict_insert(&dict, "name", "s", "keyed");
		g_variant_dict_insert(&dict, "provider", "s", "openai");
		g_variant_dict_insert(&dict, "base_url", "s", "http://127.0.0.1:9/v1");
		g_variant_dict_insert(&dict, "upstream_model", "s", "m");
		g_variant_dict_insert(&dict, "api_key", "s", upstream_key);
		remote = confab_test_create_agent_props(daemon, g_variant_dict_end(&dict));
		g_assert_nonnull(remote);
	}
	for (guint i = 0; i < 6; i++) {
		g_autofree gchar *owner = g_strdup_printf("owner-%u", i % 2);
		g_autofree gchar *id = NULL;
		gchar *secret = confab_test_create_token(daemon,
							 owner,
							 i < 3 ? "chat.completions" : "api.full",
							 i == 5 ? agent : NULL,
							 &id);
		g_ptr_array_add(secrets, secret);
		if (i == 4)
			revoked_id = g_steal_pointer(&id);
	}
	/* use them: good, bad, revoked, in headers and in bodies */
	for (guint i = 0; i < secrets->len; i++) {
		const gchar *secret = g_ptr_array_index(secrets, i);
		g_autoptr(ConfabTestResponse) a =
		    confab_test_chat(daemon, secret, agent, NULL, "hello", i % 2 == 0);
		g_autoptr(ConfabTestResponse) b =
		    confab_test_http(daemon, "GET", "/api/v1/conversations", secret, NULL);
		/* a client that pastes its token in the wrong place */
		g_autofree gchar *body =
		    g_strdup_printf("{\"model\":\"%s\",\"api_key\":\"%s\"", agent, secret);
		g_autoptr(ConfabTestResponse) c =
		    confab_test_http(daemon, "POST", "/api/v1/chat/completions", secret, body);
		g_autofree gchar *wrong = g_strdup_printf("%sX", secret);
		g_autoptr(ConfabTestResponse) d =
		    confab_test_http(daemon, "GET", "/api/v1/conversations", wrong, NULL);
		g_assert_cmpuint(a->status, ==, 200);
		g_assert_cmpuint(b->status, ==, 200);
		g_assert_cmpuint(c->status, ==, 400);
		g_assert_cmpuint(d->status, ==, 401);
		/* nor is it echoed back in an error */
		g_assert_false(bytes_contain(g_bytes_get_data(c->body, NULL),
					     g_bytes_get_size(c->body),
					     secret + 4));
		g_assert_false(bytes_contain(g_bytes_get_data(d->body, NULL),
					     g_bytes_get_size(d->body),
					     secret + 4));
	}
	{
		g_autoptr(ConfabTestResponse) r = NULL;
		const gchar *secret = g_ptr_array_index(secrets, 4);
		confab_dbus_admin_call_revoke_token_sync(daemon->admin, revoked_id, NULL, &error);
		g_assert_no_error(error);
		r = confab_test_http(daemon, "GET", "/api/v1/conversations", secret, NULL);
		g_assert_cmpuint(r->status, ==, 401);
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);

	output = confab_test_daemon_get_output(daemon);
	g_assert_nonnull(strstr(output, "listening on"));
	/* the access log was on: there was something to leak into */
	g_assert_nonnull(strstr(output, "/api/v1/chat/completions"));
	g_test_message("daemon output: %" G_GSIZE_FORMAT " bytes", strlen(output));
	for (guint i = 0; i < secrets->len; i++) {
		const gchar *secret = g_ptr_array_index(secrets, i);
		/* the random part: a prefix-less or truncated print leaks as well */
		g_autofree gchar *half = g_strndup(secret + 4, 16);
		g_assert_null(strstr(output, secret));
		g_assert_null(strstr(output, half));
	}
	g_assert_null(strstr(output, upstream_key));

	/* the database, its journal and anything else in the state directory
	 * (on PostgreSQL, every row of its database) */
	if (confab_test_store_is_postgres()) {
		g_autofree gchar *dump = confab_test_store_dump(state);
		g_assert_nonnull(strstr(dump, "<tokens>"));
		for (guint i = 0; i < secrets->len; i++) {
			const gchar *secret = g_ptr_array_index(secrets, i);
			g_autofree gchar *half = g_strndup(secret + 4, 16);
			g_assert_null(strstr(dump, secret));
			g_assert_null(strstr(dump, half));
		}
		g_clear_pointer(&daemon, confab_test_daemon_free);
		confab_test_rm_rf(state);
		return;
	}
	collect_files(state, files);
	g_assert_cmpuint(files->len, >, 0);
	for (guint f = 0; f < files->len; f++) {
		const gchar *file = g_ptr_array_index(files, f);
		g_autofree gchar *contents = NULL;
		gsize len = 0;
		g_file_get_contents(file, &contents, &len, &error);
		g_assert_no_error(error);
		if (len >= 16 && memcmp(contents, "SQLite format 3", 15) == 0)
			saw_db = TRUE;
		g_test_message("%s: %" G_GSIZE_FORMAT " bytes", file, len);
		for (guint i = 0; i < secrets->len; i++) {
			const gchar *secret = g_ptr_array_index(secrets, i);
			g_autofree gchar *half = g_strndup(secret + 4, 16);
			g_assert_false(bytes_contain(contents, len, secret));
			g_assert_false(bytes_contain(contents, len, half));
		}
	}
	g_assert_true(saw_db);
	g_clear_pointer(&daemon, confab_test_daemon_free);
	confab_test_rm_rf(state);
}

/* The daemon makes its state directory 0700 and its database files 0600,
 * whatever the umask. */
static void
test_state_modes(void)
{
	g_autofree gchar *parent = confab_test_make_tmpdir("modes");
	g_autofree gchar *state = g_build_filename(parent, "state", NULL);
	g_autoptr(ConfabTestDaemon) daemon = NULL;
	const gchar *files[] = {"confab.db", "confab.db-wal", "confab.db-shm"};
	mode_t old = umask(0);
	GStatBuf st;

	daemon = confab_test_daemon_start_full(state, NULL, NULL);
	umask(old);
	{
		g_autofree gchar *token =
		    confab_test_create_token(daemon, "alice", "chat.completions", NULL, NULL);
		g_autofree gchar *agent = confab_test_create_agent(daemon, "echo", "echo");
		g_autoptr(ConfabTestResponse) r =
		    confab_test_chat(daemon, token, agent, NULL, "hello", FALSE);
		g_assert_cmpuint(r->status, ==, 200);
	}
	g_assert_cmpint(g_stat(state, &st), ==, 0);
	g_assert_cmpint(st.st_mode & 0777, ==, 0700);
	/* SQLite's files (none on PostgreSQL) */
	for (guint i = 0; i < G_N_ELEMENTS(files) && !confab_test_store_is_postgres(); i++) {
		g_autofree gchar *path = g_build_filename(state, files[i], NULL);
		if (g_stat(path, &st) != 0)
			continue; /* the WAL files come and go */
		g_assert_cmpint(st.st_mode & 0777, ==, 0600);
	}
	g_assert_cmpint(confab_test_daemon_stop(daemon), ==, 0);
	confab_test_rm_rf(parent);
}

int
main(int argc, char **argv)
{
	gint ret;
	confab_test_init(&argc, &argv, TRUE);
	g_test_add_func("/confab/isolation/matrix", test_matrix);
	g_test_add_func("/confab/isolation/secrets-never-stored", test_secrets_never_stored);
	g_test_add_func("/confab/isolation/state-modes", test_state_modes);
	ret = g_test_run();
	confab_test_finish();
	return ret;
}
