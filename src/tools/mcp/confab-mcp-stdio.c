/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMcpStdio"

#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "tools/mcp/confab-mcp-jsonrpc.h"
#include "tools/mcp/confab-mcp-line-reader.h"
#include "tools/mcp/confab-mcp-stdio.h"

/**
 * ConfabMcpStdio:
 *
 * The MCP stdio transport: the server is a child process that reads one
 * JSON-RPC message per line on its stdin and writes one per line on its
 * stdout; what it writes on stderr is logged under its name, a line at a
 * time, cut and rate-limited.
 *
 * The child gets a minimal environment (PATH, HOME, LANG and the
 * configured variables), its own process group, and PR_SET_PDEATHSIG
 * (SIGKILL): if confabd dies, even by SIGKILL, the kernel kills the child.
 * Closing sends SIGTERM to the group and SIGKILL if the child has not exited
 * after the kill timeout (5 s); when the child has exited, whatever is left
 * of its group is killed too, so that nothing it started outlives it.
 *
 * The object holds itself alive until the child is gone: dropping the last
 * reference of its owner after confab_mcp_transport_close() is enough.
 */

#define DEFAULT_KILL_TIMEOUT_MS	  5000
#define DEFAULT_MAX_STDERR_LINE	  4096
#define STDOUT_BUFFER		  65536
#define STDERR_BUFFER		  4096
#define STDERR_LINES_PER_INTERVAL 50
#define STDERR_INTERVAL_US	  (10 * G_USEC_PER_SEC)
#define DEFAULT_PATH		  "/usr/local/bin:/usr/bin:/bin"

struct _ConfabMcpStdio {
	GObject parent_instance;
	gchar *name;	   /* owned */
	gchar **argv;	   /* owned */
	gchar **envp;	   /* owned: the child's whole environment */
	gchar *cwd;	   /* owned, nullable */
	gchar *identifier; /* owned: the pid, once running */
	guint kill_timeout_ms;
	gsize max_stderr_line;
	GMainContext *context;		 /* owned */
	GSubprocess *process;		 /* owned */
	pid_t pid;			 /* also the process group */
	GOutputStream *stdin_pipe;	 /* unowned: the process's */
	GInputStream *stdout_pipe;	 /* unowned: the process's */
	GInputStream *stderr_pipe;	 /* unowned: the process's */
	GCancellable *cancellable;	 /* owned: stops reads and writes */
	ConfabMcpLineReader *out_reader; /* owned */
	ConfabMcpLineReader *err_reader; /* owned */
	gchar *out_buffer;		 /* owned */
	gchar *err_buffer;		 /* owned */
	GQueue writes;			 /* of GTask, the one being written first */
	gboolean writing;
	gboolean started;
	gboolean terminating;
	gboolean exited;
	gint wait_status;
	GSource *kill_source;  /* owned: SIGKILL after the timeout */
	GSource *grace_source; /* owned: closes if stdout stays open after the exit */
	gint64 stderr_interval_start;
	guint stderr_lines;
	guint stderr_suppressed;
};

static void
confab_mcp_stdio_transport_init(ConfabMcpTransportInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(ConfabMcpStdio,
			      confab_mcp_stdio,
			      G_TYPE_OBJECT,
			      G_IMPLEMENT_INTERFACE(CONFAB_TYPE_MCP_TRANSPORT,
						    confab_mcp_stdio_transport_init))

/* One line: the message and its newline in one buffer. Not two vectors:
 * GLib 2.74 writes vectors to a pipe one by one, and when the first goes
 * out and the second would block, writev_async_pollable() fails its own
 * check (bytes_written == 0) with a warning, fatal under G_DEBUG. */
typedef struct {
	gchar *line; /* owned */
	gsize len;
} Write;

static void
write_free(Write *w)
{
	g_free(w->line);
	g_free(w);
}

/* ---------- the child's end ---------- */

static void
kill_group(ConfabMcpStdio *self, gint sig)
{
	/* the group outlives its leader while anything it started runs */
	if (self->pid > 0 && kill(-self->pid, sig) < 0 && errno != ESRCH)
		g_debug("%s: kill(%d, %d): %s", self->name, -self->pid, sig, g_strerror(errno));
}

static gboolean
on_kill_timeout(gpointer user_data)
{
	ConfabMcpStdio *self = user_data;

	g_message("%s: the MCP server did not exit %u ms after SIGTERM; killing it",
		  self->name,
		  self->kill_timeout_ms);
	kill_group(self, SIGKILL);
	g_clear_pointer(&self->kill_source, g_source_unref);
	return G_SOURCE_REMOVE;
}

/* SIGTERM to the group, SIGKILL after the kill timeout. */
static void
terminate(ConfabMcpStdio *self)
{
	if (self->terminating || self->process == NULL)
		return;
	self->terminating = TRUE;
	if (self->exited) {
		kill_group(self, SIGKILL);
		return;
	}
	/* the specification's order: no more input, then SIGTERM */
	if (!self->writing)
		g_output_stream_close(self->stdin_pipe, NULL, NULL);
	kill_group(self, SIGTERM);
	self->kill_source = g_timeout_source_new(self->kill_timeout_ms);
	g_source_set_callback(self->kill_source, on_kill_timeout, self, NULL);
	g_source_set_static_name(self->kill_source, "[confab] mcp server kill");
	g_source_attach(self->kill_source, self->context);
}

static gchar *
describe_exit(ConfabMcpStdio *self)
{
	if (!self->exited)
		return g_strdup_printf("The MCP server %s closed its output", self->name);
	if (WIFEXITED(self->wait_status))
		return g_strdup_printf("The MCP server %s exited with status %d",
				       self->name,
				       WEXITSTATUS(self->wait_status));
	if (WIFSIGNALED(self->wait_status))
		return g_strdup_printf("The MCP server %s was killed by signal %d",
				       self->name,
				       WTERMSIG(self->wait_status));
	return g_strdup_printf("The MCP server %s exited", self->name);
}

static void
fail_writes(ConfabMcpStdio *self)
{
	GTask *task;

	/* the one being written completes through its callback */
	while (g_queue_get_length(&self->writes) > (self->writing ? 1u : 0u)) {
		task = g_queue_pop_tail(&self->writes);
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The MCP server is gone");
		g_object_unref(task);
	}
}

static void
stdio_closed(ConfabMcpStdio *self, gboolean by_us)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(ConfabMcpStdio) keep = g_object_ref(self);

	if (confab_mcp_transport_is_closed(CONFAB_MCP_TRANSPORT(self)))
		return;
	g_cancellable_cancel(self->cancellable);
	fail_writes(self);
	if (!by_us) {
		g_autofree gchar *why = describe_exit(self);
		error = g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED, why);
	}
	confab_mcp_transport_emit_closed(CONFAB_MCP_TRANSPORT(self), error);
	terminate(self);
	if (self->grace_source != NULL) {
		g_source_destroy(self->grace_source);
		g_clear_pointer(&self->grace_source, g_source_unref);
		g_object_unref(self); /* the wait's */
	}
}

static gboolean
on_exit_grace(gpointer user_data)
{
	ConfabMcpStdio *self = user_data;

	g_clear_pointer(&self->grace_source, g_source_unref);
	stdio_closed(self, FALSE);
	g_object_unref(self); /* the wait's */
	return G_SOURCE_REMOVE;
}

static void
on_exited(GObject *source, GAsyncResult *result, gpointer user_data)
{
	ConfabMcpStdio *self = user_data; /* the reference taken at spawn */

	(void)g_subprocess_wait_finish(G_SUBPROCESS(source), result, NULL);
	self->exited = TRUE;
	self->wait_status = g_subprocess_get_status(G_SUBPROCESS(source));
	if (self->kill_source != NULL) {
		g_source_destroy(self->kill_source);
		g_clear_pointer(&self->kill_source, g_source_unref);
	}
	if (!self->terminating) {
		g_autofree gchar *why = describe_exit(self);
		g_message("%s", why);
	}
	/* what it started dies with it */
	kill_group(self, SIGKILL);
	self->terminating = TRUE;
	if (confab_mcp_transport_is_closed(CONFAB_MCP_TRANSPORT(self))) {
		g_object_unref(self);
		return;
	}
	/* its last answers may still be in the pipe: the end of stdout
	 * closes the transport, or this, if something holds stdout open */
	self->grace_source = g_timeout_source_new(500);
	g_source_set_callback(self->grace_source, on_exit_grace, self, NULL);
	g_source_set_static_name(self->grace_source, "[confab] mcp server exit");
	g_source_attach(self->grace_source, self->context);
}

/* ---------- stdout ---------- */

static void
on_line(const gchar *line, gsize len, gpointer user_data)
{
	confab_mcp_transport_emit_message(CONFAB_MCP_TRANSPORT(user_data), line, len, NULL);
}

static void
on_line_too_long(const gchar *head,
		 gsize head_len,
		 const gchar *tail,
		 gsize tail_len,
		 guint64 size,
		 gpointer user_data)
{
	confab_mcp_transport_emit_dropped(CONFAB_MCP_TRANSPORT(user_data),
					  head,
					  head_len,
					  tail,
					  tail_len,
					  size);
}

static void
read_stdout(ConfabMcpStdio *self);

static void
on_stdout_read(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConfabMcpStdio) self = user_data;
	g_autoptr(GError) error = NULL;
	gssize n = g_input_stream_read_finish(G_INPUT_STREAM(source), result, &error);

	if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
		return;
	if (n > 0) {
		confab_mcp_line_reader_feed(self->out_reader, self->out_buffer, (gsize)n);
		if (!confab_mcp_transport_is_closed(CONFAB_MCP_TRANSPORT(self)))
			read_stdout(self);
		return;
	}
	if (n < 0)
		g_debug("%s: reading the server's stdout: %s", self->name, error->message);
	confab_mcp_line_reader_finish(self->out_reader);
	stdio_closed(self, FALSE);
}

static void
read_stdout(ConfabMcpStdio *self)
{
	g_input_stream_read_async(self->stdout_pipe,
				  self->out_buffer,
				  STDOUT_BUFFER,
				  G_PRIORITY_DEFAULT,
				  self->cancellable,
				  on_stdout_read,
				  g_object_ref(self));
}

/* ---------- stderr ---------- */

static gchar *
printable(const gchar *text, gsize len)
{
	g_autofree gchar *valid = g_utf8_make_valid(text, (gssize)len);
	GString *out = g_string_sized_new(len);

	for (const gchar *p = valid; *p != '\0'; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		if (c == '\t' || !g_unichar_iscntrl(c))
			g_string_append_unichar(out, c);
		else
			g_string_append_c(out, ' ');
	}
	return g_string_free(out, FALSE);
}

/* A server that floods its stderr must not flood the journal. */
static gboolean
stderr_allowed(ConfabMcpStdio *self)
{
	gint64 now = g_get_monotonic_time();

	if (now - self->stderr_interval_start >= STDERR_INTERVAL_US) {
		if (self->stderr_suppressed > 0)
			g_message("%s: %u more lines of the MCP server's stderr were not logged",
				  self->name,
				  self->stderr_suppressed);
		self->stderr_interval_start = now;
		self->stderr_lines = 0;
		self->stderr_suppressed = 0;
	}
	if (self->stderr_lines >= STDERR_LINES_PER_INTERVAL) {
		self->stderr_suppressed++;
		return FALSE;
	}
	self->stderr_lines++;
	return TRUE;
}

static void
on_stderr_line(const gchar *line, gsize len, gpointer user_data)
{
	ConfabMcpStdio *self = user_data;
	g_autofree gchar *text = NULL;

	if (!stderr_allowed(self))
		return;
	text = printable(line, len);
	g_message("%s: %s", self->name, text);
}

static void
on_stderr_too_long(const gchar *head,
		   gsize head_len,
		   const gchar *tail,
		   gsize tail_len,
		   guint64 size,
		   gpointer user_data)
{
	ConfabMcpStdio *self = user_data;
	g_autofree gchar *text = NULL;

	if (!stderr_allowed(self))
		return;
	text = printable(head, head_len);
	g_message("%s: %s… (a line of %" G_GUINT64_FORMAT " bytes, cut)", self->name, text, size);
}

static void
read_stderr(ConfabMcpStdio *self);

static void
on_stderr_read(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConfabMcpStdio) self = user_data;
	gssize n = g_input_stream_read_finish(G_INPUT_STREAM(source), result, NULL);

	if (n > 0) {
		confab_mcp_line_reader_feed(self->err_reader, self->err_buffer, (gsize)n);
		read_stderr(self);
		return;
	}
	/* the end, or closed by us: what is left is a last line */
	confab_mcp_line_reader_finish(self->err_reader);
}

static void
read_stderr(ConfabMcpStdio *self)
{
	/* not cancelled on close: a dying server's last words are logged */
	g_input_stream_read_async(self->stderr_pipe,
				  self->err_buffer,
				  STDERR_BUFFER,
				  G_PRIORITY_LOW,
				  NULL,
				  on_stderr_read,
				  g_object_ref(self));
}

/* ---------- stdin ---------- */

static void
write_next(ConfabMcpStdio *self);

static void
on_written(GObject *source, GAsyncResult *result, gpointer user_data)
{
	g_autoptr(ConfabMcpStdio) self = user_data;
	g_autoptr(GTask) task = g_queue_pop_head(&self->writes);
	GError *error = NULL;

	self->writing = FALSE;
	if (!g_output_stream_write_all_finish(G_OUTPUT_STREAM(source), result, NULL, &error)) {
		if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
			g_debug("%s: writing to the server: %s", self->name, error->message);
		g_clear_error(&error);
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The MCP server %s does not read its input",
					self->name);
	} else {
		g_task_return_boolean(task, TRUE);
	}
	if (confab_mcp_transport_is_closed(CONFAB_MCP_TRANSPORT(self))) {
		fail_writes(self);
		if (self->terminating && !self->exited)
			g_output_stream_close(self->stdin_pipe, NULL, NULL);
		return;
	}
	write_next(self);
}

static void
write_next(ConfabMcpStdio *self)
{
	GTask *task = g_queue_peek_head(&self->writes);
	Write *w;

	if (task == NULL || self->writing)
		return;
	w = g_task_get_task_data(task);
	self->writing = TRUE;
	g_output_stream_write_all_async(self->stdin_pipe,
					w->line,
					w->len,
					G_PRIORITY_DEFAULT,
					self->cancellable,
					on_written,
					g_object_ref(self));
}

static void
stdio_send_async(ConfabMcpTransport *transport,
		 GBytes *message,
		 GCancellable *cancellable,
		 GAsyncReadyCallback callback,
		 gpointer user_data)
{
	ConfabMcpStdio *self = CONFAB_MCP_STDIO(transport);
	g_autoptr(GTask) task = g_task_new(self, NULL, callback, user_data);
	gsize len;
	const gchar *data = g_bytes_get_data(message, &len);
	Write *w;

	/* a line is taken once queued, whatever @cancellable says later: half
	 * a line would break the stream */
	g_task_set_source_tag(task, stdio_send_async);
	if (!self->started || confab_mcp_transport_is_closed(transport)) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_CONNECTION_CLOSED,
					"The MCP server %s is not running",
					self->name);
		return;
	}
	if (memchr(data, '\n', len) != NULL || memchr(data, '\r', len) != NULL) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_INVALID_ARGUMENT,
					"An MCP message over stdio cannot hold a newline");
		return;
	}
	w = g_new0(Write, 1);
	w->line = g_malloc(len + 1);
	memcpy(w->line, data, len);
	w->line[len] = '\n';
	w->len = len + 1;
	g_task_set_task_data(task, w, (GDestroyNotify)write_free);
	g_queue_push_tail(&self->writes, g_steal_pointer(&task));
	write_next(self);
}

static gboolean
stdio_send_finish(ConfabMcpTransport *transport, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, transport), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

/* ---------- start ---------- */

static void
child_setup(gpointer user_data)
{
	pid_t parent = (pid_t)GPOINTER_TO_INT(user_data);

	/* between fork and exec: async-signal-safe calls only */
	(void)setpgid(0, 0);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* the parent may have died before prctl() */
	if (getppid() != parent)
		_exit(127);
}

static void
stdio_start_async(ConfabMcpTransport *transport,
		  GCancellable *cancellable,
		  GAsyncReadyCallback callback,
		  gpointer user_data)
{
	ConfabMcpStdio *self = CONFAB_MCP_STDIO(transport);
	g_autoptr(GTask) task = g_task_new(self, cancellable, callback, user_data);
	g_autoptr(GSubprocessLauncher) launcher = NULL;
	g_autoptr(GError) error = NULL;

	g_task_set_source_tag(task, stdio_start_async);
	if (self->started || confab_mcp_transport_is_closed(transport)) {
		g_task_return_new_error(task,
					G_IO_ERROR,
					G_IO_ERROR_FAILED,
					"The MCP server %s was started already",
					self->name);
		return;
	}
	launcher = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDIN_PIPE |
					     G_SUBPROCESS_FLAGS_STDOUT_PIPE |
					     G_SUBPROCESS_FLAGS_STDERR_PIPE);
	g_subprocess_launcher_set_environ(launcher, self->envp);
	if (self->cwd != NULL)
		g_subprocess_launcher_set_cwd(launcher, self->cwd);
	g_subprocess_launcher_set_child_setup(launcher,
					      child_setup,
					      GINT_TO_POINTER((gint)getpid()),
					      NULL);
	self->process =
	    g_subprocess_launcher_spawnv(launcher, (const gchar *const *)self->argv, &error);
	if (self->process == NULL) {
		g_prefix_error(&error, "Starting the MCP server %s: ", self->name);
		confab_mcp_transport_emit_closed(transport, error);
		g_task_return_error(task, g_steal_pointer(&error));
		return;
	}
	self->started = TRUE;
	/* NULL when the child exited, and was reaped, already: no group to kill */
	self->identifier = g_strdup(g_subprocess_get_identifier(self->process));
	self->pid = self->identifier != NULL ? (pid_t)g_ascii_strtoll(self->identifier, NULL, 10)
					     : 0;
	self->stdin_pipe = g_subprocess_get_stdin_pipe(self->process);
	self->stdout_pipe = g_subprocess_get_stdout_pipe(self->process);
	self->stderr_pipe = g_subprocess_get_stderr_pipe(self->process);
	g_debug("%s: started %s as %s",
		self->name,
		self->argv[0],
		self->identifier != NULL ? self->identifier : "a process that exited at once");

	g_subprocess_wait_async(self->process, NULL, on_exited, g_object_ref(self));
	read_stdout(self);
	read_stderr(self);
	g_task_return_boolean(task, TRUE);
}

static gboolean
stdio_start_finish(ConfabMcpTransport *transport, GAsyncResult *result, GError **error)
{
	g_return_val_if_fail(g_task_is_valid(result, transport), FALSE);
	return g_task_propagate_boolean(G_TASK(result), error);
}

static void
stdio_close(ConfabMcpTransport *transport)
{
	ConfabMcpStdio *self = CONFAB_MCP_STDIO(transport);
	stdio_closed(self, TRUE);
}

static void
stdio_set_max_message_size(ConfabMcpTransport *transport, gsize max_bytes)
{
	ConfabMcpStdio *self = CONFAB_MCP_STDIO(transport);
	confab_mcp_line_reader_set_max_line(self->out_reader, max_bytes);
}

static void
confab_mcp_stdio_transport_init(ConfabMcpTransportInterface *iface)
{
	iface->start_async = stdio_start_async;
	iface->start_finish = stdio_start_finish;
	iface->send_async = stdio_send_async;
	iface->send_finish = stdio_send_finish;
	iface->close = stdio_close;
	iface->set_max_message_size = stdio_set_max_message_size;
}

/* ---------- the object ---------- */

static void
confab_mcp_stdio_finalize(GObject *object)
{
	ConfabMcpStdio *self = CONFAB_MCP_STDIO(object);

	/* reads, writes and the wait hold references: all are over */
	g_assert(g_queue_is_empty(&self->writes));
	g_assert(self->kill_source == NULL);
	g_assert(self->grace_source == NULL);
	g_clear_object(&self->process);
	g_clear_object(&self->cancellable);
	confab_mcp_line_reader_free(self->out_reader);
	confab_mcp_line_reader_free(self->err_reader);
	g_free(self->out_buffer);
	g_free(self->err_buffer);
	g_main_context_unref(self->context);
	g_strfreev(self->argv);
	g_strfreev(self->envp);
	g_free(self->cwd);
	g_free(self->identifier);
	g_free(self->name);
	G_OBJECT_CLASS(confab_mcp_stdio_parent_class)->finalize(object);
}

static void
confab_mcp_stdio_class_init(ConfabMcpStdioClass *klass)
{
	GObjectClass *object_class = G_OBJECT_CLASS(klass);
	object_class->finalize = confab_mcp_stdio_finalize;
}

static void
confab_mcp_stdio_init(ConfabMcpStdio *self)
{
	self->kill_timeout_ms = DEFAULT_KILL_TIMEOUT_MS;
	self->max_stderr_line = DEFAULT_MAX_STDERR_LINE;
	self->context = g_main_context_ref_thread_default();
	self->cancellable = g_cancellable_new();
	g_queue_init(&self->writes);
	self->out_buffer = g_malloc(STDOUT_BUFFER);
	self->err_buffer = g_malloc(STDERR_BUFFER);
	self->out_reader = confab_mcp_line_reader_new(CONFAB_MCP_DEFAULT_MAX_MESSAGE_SIZE,
						      on_line,
						      on_line_too_long,
						      self);
	self->err_reader = confab_mcp_line_reader_new(DEFAULT_MAX_STDERR_LINE,
						      on_stderr_line,
						      on_stderr_too_long,
						      self);
	self->stderr_interval_start = g_get_monotonic_time();
}

static gboolean
valid_env_entry(const gchar *entry)
{
	const gchar *eq = strchr(entry, '=');
	return eq != NULL && eq != entry;
}

/**
 * confab_mcp_stdio_new:
 * @name: the server's name, for the log
 * @argv: the command and its arguments; the command is looked up in PATH
 * @env: (nullable): `KEY=VALUE` entries added to the minimal environment
 *   (they win over PATH, HOME and LANG)
 * @cwd: (nullable): the child's working directory
 * @home: the child's HOME
 * @error: return location for a #GError
 *
 * Returns: (transfer full): a transport that starts the server with
 *   confab_mcp_transport_start_async(), or %NULL for a bad @argv or @env
 */
ConfabMcpStdio *
confab_mcp_stdio_new(const gchar *name,
		     const gchar *const *argv,
		     const gchar *const *env,
		     const gchar *cwd,
		     const gchar *home,
		     GError **error)
{
	ConfabMcpStdio *self;
	const gchar *path = g_getenv("PATH");
	const gchar *lang = g_getenv("LANG");
	gchar **envp = NULL;

	g_return_val_if_fail(name != NULL, NULL);
	g_return_val_if_fail(home != NULL, NULL);

	if (argv == NULL || argv[0] == NULL || *argv[0] == '\0') {
		g_set_error_literal(error,
				    G_IO_ERROR,
				    G_IO_ERROR_INVALID_ARGUMENT,
				    "An MCP server needs a command");
		return NULL;
	}
	for (guint i = 0; env != NULL && env[i] != NULL; i++) {
		if (!valid_env_entry(env[i])) {
			g_set_error(error,
				    G_IO_ERROR,
				    G_IO_ERROR_INVALID_ARGUMENT,
				    "Not an environment entry: “%s”",
				    env[i]);
			return NULL;
		}
	}
	envp = g_environ_setenv(envp, "PATH", path != NULL ? path : DEFAULT_PATH, TRUE);
	envp = g_environ_setenv(envp, "HOME", home, TRUE);
	envp = g_environ_setenv(envp, "LANG", lang != NULL ? lang : "C.UTF-8", TRUE);
	for (guint i = 0; env != NULL && env[i] != NULL; i++) {
		const gchar *eq = strchr(env[i], '=');
		g_autofree gchar *key = g_strndup(env[i], eq - env[i]);
		envp = g_environ_setenv(envp, key, eq + 1, TRUE);
	}

	self = g_object_new(CONFAB_TYPE_MCP_STDIO, NULL);
	self->name = g_strdup(name);
	self->argv = g_strdupv((gchar **)argv);
	self->envp = envp;
	self->cwd = g_strdup(cwd);
	return self;
}

/**
 * confab_mcp_stdio_set_kill_timeout:
 * @self: a #ConfabMcpStdio
 * @timeout_ms: how long after SIGTERM the group gets SIGKILL
 */
void
confab_mcp_stdio_set_kill_timeout(ConfabMcpStdio *self, guint timeout_ms)
{
	g_return_if_fail(CONFAB_IS_MCP_STDIO(self));
	self->kill_timeout_ms = timeout_ms;
}

/**
 * confab_mcp_stdio_set_max_stderr_line:
 * @self: a #ConfabMcpStdio
 * @max_bytes: the longest stderr line logged whole
 */
void
confab_mcp_stdio_set_max_stderr_line(ConfabMcpStdio *self, gsize max_bytes)
{
	g_return_if_fail(CONFAB_IS_MCP_STDIO(self));
	g_return_if_fail(max_bytes > 0);
	self->max_stderr_line = max_bytes;
	confab_mcp_line_reader_set_max_line(self->err_reader, max_bytes);
}

/**
 * confab_mcp_stdio_get_identifier:
 * @self: a #ConfabMcpStdio
 *
 * Returns: (nullable): the child's pid (also its process group), once
 *   started
 */
const gchar *
confab_mcp_stdio_get_identifier(ConfabMcpStdio *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_STDIO(self), NULL);
	return self->identifier;
}

/**
 * confab_mcp_stdio_has_exited:
 * @self: a #ConfabMcpStdio
 *
 * Returns: whether the child was started and has exited
 */
gboolean
confab_mcp_stdio_has_exited(ConfabMcpStdio *self)
{
	g_return_val_if_fail(CONFAB_IS_MCP_STDIO(self), FALSE);
	return self->exited;
}
