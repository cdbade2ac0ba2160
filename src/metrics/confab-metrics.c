/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabMetrics"

#include "config.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "metrics/confab-metrics.h"

/*
 * Counters and histograms in Prometheus' text format 0.0.4.
 *
 * A series is found once by its label values (a reader lock around a hash
 * table, which serving threads take side by side; the writer lock only to
 * add one) and then counted with relaxed atomic adds, so that a turn, which
 * looks up its agent's series when it starts, pays a few uncontended
 * atomic instructions per event and never waits for a scrape. A scrape
 * takes the lock only to collect the series it then reads.
 *
 * Label values are ids and fixed words chosen by Confab (agent ids, route
 * patterns, status codes, outcome words, tool server names from the
 * agent's configuration) — never text a user sent.
 */

#define MAX_LABELS 3

/* 1 ms to 5 min */
static const gdouble duration_buckets[] = {
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1,
    2.5,
    5,
    10,
    30,
    60,
    120,
    300,
};
#define N_BUCKETS G_N_ELEMENTS(duration_buckets)

typedef struct {
	const gchar *name;
	const gchar *help;
	gboolean histogram;
	const gchar *labels[MAX_LABELS + 1];
} Family;

static const Family families[CONFAB_METRIC_N_FAMILIES] = {
    [CONFAB_METRIC_HTTP_REQUESTS] = {"confab_http_requests_total",
				     "HTTP requests answered, by route pattern and status code",
				     FALSE,
				     {"route", "code"}},
    [CONFAB_METRIC_TURNS] = {"confab_turns_total",
			     "Chat turns finished, by agent and the stored answer's status",
			     FALSE,
			     {"agent", "status"}},
    [CONFAB_METRIC_TURN_DURATION] = {"confab_turn_duration_seconds",
				     "Time from a turn's start to its answer's end",
				     TRUE,
				     {"agent"}},
    [CONFAB_METRIC_TIME_TO_FIRST_TOKEN] = {"confab_time_to_first_token_seconds",
					   "Time from a turn's start to its first answer text",
					   TRUE,
					   {"agent"}},
    [CONFAB_METRIC_INTER_TOKEN_LATENCY] = {"confab_inter_token_latency_seconds",
					   "Time between two pieces of a streamed answer",
					   TRUE,
					   {"agent"}},
    [CONFAB_METRIC_TOKENS] = {"confab_tokens_total",
			      "Tokens used, as the upstream counted them",
			      FALSE,
			      {"agent", "direction"}},
    [CONFAB_METRIC_UPSTREAM_REQUESTS] = {"confab_upstream_requests_total",
					 "Requests to model upstreams, by outcome",
					 FALSE,
					 {"agent", "outcome"}},
    [CONFAB_METRIC_UPSTREAM_RETRIES] = {"confab_upstream_retries_total",
					"Upstream requests sent again after a failure",
					FALSE,
					{"agent"}},
    [CONFAB_METRIC_TOOL_CALLS] = {"confab_tool_calls_total",
				  "Server-side tool calls, by MCP server and outcome",
				  FALSE,
				  {"agent", "server", "outcome"}},
    [CONFAB_METRIC_TOOL_DURATION] = {"confab_tool_duration_seconds",
				     "Time a server-side tool call took",
				     TRUE,
				     {"server"}},
    [CONFAB_METRIC_STORE_COMMIT] = {"confab_store_commit_seconds",
				    "Time from handing a turn's rows to the store to their commit",
				    TRUE,
				    {NULL}},
    [CONFAB_METRIC_TOOL_APPROVALS] = {"confab_tool_approvals_total",
				      "Tool calls a person was asked to approve, by decision",
				      FALSE,
				      {"decision"}},
    [CONFAB_METRIC_UPSTREAM_ATTEMPTS] = {"confab_upstream_attempts_total",
					 "Calls to an agent's upstream targets, by outcome",
					 FALSE,
					 {"agent", "target", "outcome"}},
};

struct _ConfabMetricsSeries {
	ConfabMetric metric;
	gchar *values[MAX_LABELS];
	gchar *key;
	guint64 value;		    /* counter; histogram: the count */
	guint64 sum_ns;		    /* histogram */
	guint64 buckets[N_BUCKETS]; /* histogram, not cumulative */
};

typedef struct {
	const gchar *name; /* static */
	const gchar *help; /* static */
	ConfabMetricsGaugeFunc func;
	gpointer user_data;
} Gauge;

struct _ConfabMetrics {
	GObject parent_instance;
	GRWLock series_lock; /* series */
	GHashTable *series;  /* key -> ConfabMetricsSeries, owned */
	GMutex lock;	     /* gauges */
	GArray *gauges;	     /* Gauge, in the order added */
};

G_DEFINE_FINAL_TYPE(ConfabMetrics, confab_metrics, G_TYPE_OBJECT)

static void
series_free(ConfabMetricsSeries *series)
{
	for (guint i = 0; i < MAX_LABELS; i++)
		g_free(series->values[i]);
	g_free(series->key);
	g_free(series);
}

static guint
family_n_labels(ConfabMetric metric)
{
	guint n = 0;
	while (n < MAX_LABELS && families[metric].labels[n] != NULL)
		n++;
	return n;
}

G_STATIC_ASSERT(CONFAB_METRIC_N_FAMILIES < 100); /* two digits in a key */

/* The series' key, "METRIC\x1fVALUE\x1fVALUE", in @buf when it fits (the
 * common case: counting is done on every request, so builds it without a
 * format or an allocation), else in @heap. */
static const gchar *
series_key(ConfabMetric metric,
	   const gchar **values,
	   guint n,
	   gchar *buf,
	   gsize size,
	   GString **heap)
{
	gsize len = 0;
	gsize need = 3;

	for (guint i = 0; i < n; i++)
		need += 1 + strlen(values[i]);
	if (need >= size) {
		*heap = g_string_new(NULL);
		g_string_append_printf(*heap, "%d", metric);
		for (guint i = 0; i < n; i++) {
			g_string_append_c(*heap, '\x1f');
			g_string_append(*heap, values[i]);
		}
		return (*heap)->str;
	}
	if (metric >= 10)
		buf[len++] = (gchar)('0' + metric / 10);
	buf[len++] = (gchar)('0' + metric % 10);
	for (guint i = 0; i < n; i++) {
		gsize l = strlen(values[i]);
		buf[len++] = '\x1f';
		memcpy(buf + len, values[i], l);
		len += l;
	}
	buf[len] = '\0';
	return buf;
}

static ConfabMetricsSeries *
lookup(ConfabMetrics *self, ConfabMetric metric, va_list args)
{
	g_autoptr(GRWLockWriterLocker) locker = NULL;
	const gchar *values[MAX_LABELS] = {NULL};
	guint n = family_n_labels(metric);
	gchar buf[256];
	g_autoptr(GString) heap = NULL;
	const gchar *key;
	ConfabMetricsSeries *series;

	for (guint i = 0; i < n; i++) {
		values[i] = va_arg(args, const gchar *);
		if (values[i] == NULL)
			values[i] = "";
	}
	key = series_key(metric, values, n, buf, sizeof(buf), &heap);
	{
		/* found: the common case, which threads do side by side */
		g_autoptr(GRWLockReaderLocker) reader =
		    g_rw_lock_reader_locker_new(&self->series_lock);
		series = g_hash_table_lookup(self->series, key);
		if (series != NULL)
			return series;
	}
	locker = g_rw_lock_writer_locker_new(&self->series_lock);
	series = g_hash_table_lookup(self->series, key);
	if (series != NULL)
		return series;
	series = g_new0(ConfabMetricsSeries, 1);
	series->metric = metric;
	for (guint i = 0; i < n; i++)
		series->values[i] = g_strdup(values[i]);
	series->key = g_strdup(key);
	g_hash_table_insert(self->series, series->key, series);
	return series;
}

/**
 * confab_metrics_series:
 * @self: (nullable): a #ConfabMetrics
 * @metric: the family
 * @...: its label values, as many as the family has labels, in order
 *
 * Finds or makes one series. Keep it: it lives as long as @self.
 *
 * Returns: (transfer none) (nullable): the series; %NULL when @self is
 *   %NULL (counting is then a no-op)
 */
ConfabMetricsSeries *
confab_metrics_series(ConfabMetrics *self, ConfabMetric metric, ...)
{
	ConfabMetricsSeries *series;
	va_list args;

	if (self == NULL)
		return NULL;
	g_return_val_if_fail(metric < CONFAB_METRIC_N_FAMILIES, NULL);
	va_start(args, metric);
	series = lookup(self, metric, args);
	va_end(args);
	return series;
}

/**
 * confab_metrics_series_add:
 * @series: (nullable): a counter series
 * @n: how much to add
 */
void
confab_metrics_series_add(ConfabMetricsSeries *series, guint64 n)
{
	if (series == NULL)
		return;
	g_return_if_fail(!families[series->metric].histogram);
	__atomic_fetch_add(&series->value, n, __ATOMIC_RELAXED);
}

/**
 * confab_metrics_series_observe:
 * @series: (nullable): a histogram series
 * @seconds: the duration observed
 */
void
confab_metrics_series_observe(ConfabMetricsSeries *series, gdouble seconds)
{
	guint bucket = 0;

	if (series == NULL)
		return;
	g_return_if_fail(families[series->metric].histogram);
	if (seconds < 0)
		seconds = 0;
	while (bucket < N_BUCKETS && seconds > duration_buckets[bucket])
		bucket++;
	if (bucket < N_BUCKETS)
		__atomic_fetch_add(&series->buckets[bucket], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&series->sum_ns, (guint64)(seconds * 1e9), __ATOMIC_RELAXED);
	__atomic_fetch_add(&series->value, 1, __ATOMIC_RELAXED);
}

/**
 * confab_metrics_add:
 * @self: (nullable): a #ConfabMetrics
 * @metric: a counter family
 * @n: how much to add
 * @...: its label values
 *
 * Looks the series up and counts: for events too rare to keep the series.
 */
void
confab_metrics_add(ConfabMetrics *self, ConfabMetric metric, guint64 n, ...)
{
	va_list args;

	if (self == NULL)
		return;
	va_start(args, n);
	confab_metrics_series_add(lookup(self, metric, args), n);
	va_end(args);
}

/* ---------- the text format ---------- */

static void
append_escaped(GString *out, const gchar *value)
{
	for (const gchar *p = value; *p != '\0'; p++) {
		if (*p == '\\')
			g_string_append(out, "\\\\");
		else if (*p == '"')
			g_string_append(out, "\\\"");
		else if (*p == '\n')
			g_string_append(out, "\\n");
		else
			g_string_append_c(out, *p);
	}
}

static void
append_value(GString *out, gdouble value)
{
	gchar buffer[G_ASCII_DTOSTR_BUF_SIZE];

	if (value == (gdouble)(gint64)value && value < 1e15 && value > -1e15)
		g_string_append_printf(out, "%" G_GINT64_FORMAT, (gint64)value);
	else
		g_string_append(out, g_ascii_dtostr(buffer, sizeof(buffer), value));
}

/**
 * confab_metrics_write_header:
 * @out: the text so far
 * @name: the family's name
 * @type: `counter`, `gauge` or `histogram`
 * @help: what it counts
 */
void
confab_metrics_write_header(GString *out, const gchar *name, const gchar *type, const gchar *help)
{
	g_string_append_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/**
 * confab_metrics_write_sample:
 * @out: the text so far
 * @name: the sample's name
 * @labels: (nullable): label names and values, alternating, %NULL-ended
 * @value: the value
 */
void
confab_metrics_write_sample(GString *out,
			    const gchar *name,
			    const gchar *const *labels,
			    gdouble value)
{
	g_string_append(out, name);
	for (guint i = 0; labels != NULL && labels[i] != NULL && labels[i + 1] != NULL; i += 2) {
		g_string_append_printf(out, "%s%s=\"", i == 0 ? "{" : ",", labels[i]);
		append_escaped(out, labels[i + 1]);
		g_string_append_c(out, '"');
	}
	if (labels != NULL && labels[0] != NULL)
		g_string_append_c(out, '}');
	g_string_append_c(out, ' ');
	append_value(out, value);
	g_string_append_c(out, '\n');
}

/* name/value pairs of @series' labels, plus one more pair when @extra */
static void
series_labels(ConfabMetricsSeries *series,
	      const gchar *extra_name,
	      const gchar *extra_value,
	      const gchar **labels)
{
	guint n = family_n_labels(series->metric);
	guint k = 0;

	for (guint i = 0; i < n; i++) {
		labels[k++] = families[series->metric].labels[i];
		labels[k++] = series->values[i];
	}
	if (extra_name != NULL) {
		labels[k++] = extra_name;
		labels[k++] = extra_value;
	}
	labels[k] = NULL;
}

static void
render_histogram(GString *out, ConfabMetricsSeries *series)
{
	const gchar *name = families[series->metric].name;
	g_autofree gchar *bucket_name = g_strconcat(name, "_bucket", NULL);
	g_autofree gchar *sum_name = g_strconcat(name, "_sum", NULL);
	g_autofree gchar *count_name = g_strconcat(name, "_count", NULL);
	const gchar *labels[2 * MAX_LABELS + 3];
	guint64 cumulative = 0;
	guint64 count = __atomic_load_n(&series->value, __ATOMIC_RELAXED);

	for (guint b = 0; b < N_BUCKETS; b++) {
		gchar le[G_ASCII_DTOSTR_BUF_SIZE];
		cumulative += __atomic_load_n(&series->buckets[b], __ATOMIC_RELAXED);
		/* "0.1", not "0.10000000000000001": selectors name buckets as written */
		g_ascii_formatd(le, sizeof(le), "%g", duration_buckets[b]);
		series_labels(series, "le", le, labels);
		confab_metrics_write_sample(out, bucket_name, labels, (gdouble)cumulative);
	}
	/* +Inf is the count; read after the buckets, it is never below them */
	count = MAX(count, cumulative);
	series_labels(series, "le", "+Inf", labels);
	confab_metrics_write_sample(out, bucket_name, labels, (gdouble)count);
	series_labels(series, NULL, NULL, labels);
	confab_metrics_write_sample(out,
				    sum_name,
				    labels,
				    __atomic_load_n(&series->sum_ns, __ATOMIC_RELAXED) / 1e9);
	confab_metrics_write_sample(out, count_name, labels, (gdouble)count);
}

static gint
compare_series(gconstpointer a, gconstpointer b)
{
	const ConfabMetricsSeries *x = *(ConfabMetricsSeries *const *)a;
	const ConfabMetricsSeries *y = *(ConfabMetricsSeries *const *)b;

	if (x->metric != y->metric)
		return x->metric < y->metric ? -1 : 1;
	return strcmp(x->key, y->key);
}

static GPtrArray *
collect(ConfabMetrics *self)
{
	g_autoptr(GRWLockReaderLocker) locker = g_rw_lock_reader_locker_new(&self->series_lock);
	GPtrArray *all = g_ptr_array_sized_new(g_hash_table_size(self->series));
	GHashTableIter iter;
	gpointer value;

	g_hash_table_iter_init(&iter, self->series);
	while (g_hash_table_iter_next(&iter, NULL, &value))
		g_ptr_array_add(all, value);
	g_ptr_array_sort(all, compare_series);
	return all;
}

/* ---------- gauges, read when scraped ---------- */

/**
 * confab_metrics_add_gauge:
 * @self: a #ConfabMetrics
 * @name: the gauge's name, a static string
 * @help: what it measures, a static string
 * @func: reads it, when scraped
 * @user_data: data for @func; confab_metrics_remove_gauges() forgets it
 *
 * Gauges added with the same name are scraped as one: their sum.
 */
void
confab_metrics_add_gauge(ConfabMetrics *self,
			 const gchar *name,
			 const gchar *help,
			 ConfabMetricsGaugeFunc func,
			 gpointer user_data)
{
	g_autoptr(GMutexLocker) locker = NULL;
	Gauge gauge = {name, help, func, user_data};

	g_return_if_fail(CONFAB_IS_METRICS(self));
	locker = g_mutex_locker_new(&self->lock);
	g_array_append_val(self->gauges, gauge);
}

/**
 * confab_metrics_remove_gauges:
 * @self: a #ConfabMetrics
 * @user_data: the data the gauges were added with
 */
void
confab_metrics_remove_gauges(ConfabMetrics *self, gpointer user_data)
{
	g_autoptr(GMutexLocker) locker = NULL;

	g_return_if_fail(CONFAB_IS_METRICS(self));
	locker = g_mutex_locker_new(&self->lock);
	for (guint i = self->gauges->len; i > 0; i--)
		if (g_array_index(self->gauges, Gauge, i - 1).user_data == user_data)
			g_array_remove_index(self->gauges, i - 1);
}

/* Gauges added under one name (one per serving thread) are one sample:
 * their sum. */
static void
render_gauges(ConfabMetrics *self, GString *out)
{
	g_autoptr(GMutexLocker) locker = g_mutex_locker_new(&self->lock);

	for (guint i = 0; i < self->gauges->len; i++) {
		Gauge *gauge = &g_array_index(self->gauges, Gauge, i);
		gboolean seen = FALSE;
		gdouble sum = 0;

		for (guint j = 0; j < i && !seen; j++)
			seen = g_str_equal(g_array_index(self->gauges, Gauge, j).name, gauge->name);
		if (seen)
			continue;
		for (guint j = i; j < self->gauges->len; j++) {
			Gauge *other = &g_array_index(self->gauges, Gauge, j);
			if (g_str_equal(other->name, gauge->name))
				sum += other->func(other->user_data);
		}
		confab_metrics_write_header(out, gauge->name, "gauge", gauge->help);
		confab_metrics_write_sample(out, gauge->name, NULL, sum);
	}
}

/**
 * confab_metrics_render:
 * @self: a #ConfabMetrics
 * @out: where the text goes
 *
 * Writes every family, with its series so far, by family then labels.
 */
void
confab_metrics_render(ConfabMetrics *self, GString *out)
{
	g_autoptr(GPtrArray) all = collect(self);
	guint i = 0;

	g_return_if_fail(CONFAB_IS_METRICS(self));
	for (guint f = 0; f < CONFAB_METRIC_N_FAMILIES; f++) {
		confab_metrics_write_header(out,
					    families[f].name,
					    families[f].histogram ? "histogram" : "counter",
					    families[f].help);
		for (; i < all->len; i++) {
			ConfabMetricsSeries *series = g_ptr_array_index(all, i);
			const gchar *labels[2 * MAX_LABELS + 1];
			if (series->metric != f)
				break;
			if (families[f].histogram) {
				render_histogram(out, series);
				continue;
			}
			series_labels(series, NULL, NULL, labels);
			confab_metrics_write_sample(
			    out,
			    families[f].name,
			    labels,
			    (gdouble)__atomic_load_n(&series->value, __ATOMIC_RELAXED));
		}
	}
	render_gauges(self, out);
}

/* ---------- the process ---------- */

typedef struct {
	guint64 cpu_ticks;  /* utime + stime */
	guint64 start_tick; /* since boot */
	guint64 rss_pages;
} ProcStat;

/* the boot time, in seconds since the epoch, from /proc/stat */
static guint64
boot_time(void)
{
	g_autofree gchar *stat = NULL;
	const gchar *line;

	if (!g_file_get_contents("/proc/stat", &stat, NULL, NULL))
		return 0;
	line = strstr(stat, "\nbtime ");
	return line != NULL ? g_ascii_strtoull(line + 7, NULL, 10) : 0;
}

static gboolean
read_proc_stat(ProcStat *out)
{
	g_autofree gchar *stat = NULL;
	g_auto(GStrv) fields = NULL;
	const gchar *after_comm;

	if (!g_file_get_contents("/proc/self/stat", &stat, NULL, NULL))
		return FALSE;
	/* the command may hold spaces and parentheses: fields start after the last ')' */
	after_comm = strrchr(stat, ')');
	if (after_comm == NULL)
		return FALSE;
	fields = g_strsplit(after_comm + 2, " ", -1);
	/* field 3 (state) is fields[0]: utime is 14, stime 15, starttime 22, rss 24 */
	if (g_strv_length(fields) < 22)
		return FALSE;
	out->cpu_ticks =
	    g_ascii_strtoull(fields[11], NULL, 10) + g_ascii_strtoull(fields[12], NULL, 10);
	out->start_tick = g_ascii_strtoull(fields[19], NULL, 10);
	out->rss_pages = g_ascii_strtoull(fields[21], NULL, 10);
	return TRUE;
}

static guint
count_open_fds(void)
{
	g_autoptr(GDir) dir = g_dir_open("/proc/self/fd", 0, NULL);
	guint n = 0;

	if (dir == NULL)
		return 0;
	while (g_dir_read_name(dir) != NULL)
		n++;
	/* not the one g_dir_open() holds */
	return n > 0 ? n - 1 : 0;
}

/**
 * confab_metrics_write_process:
 * @out: where the text goes
 *
 * The standard process_* families, from /proc.
 */
void
confab_metrics_write_process(GString *out)
{
	ProcStat stat = {0};
	glong ticks_per_second = MAX(sysconf(_SC_CLK_TCK), 1);
	glong page_size = sysconf(_SC_PAGESIZE);

	if (read_proc_stat(&stat)) {
		confab_metrics_write_header(out,
					    "process_cpu_seconds_total",
					    "counter",
					    "Total user and system CPU time spent in seconds.");
		confab_metrics_write_sample(out,
					    "process_cpu_seconds_total",
					    NULL,
					    (gdouble)stat.cpu_ticks / ticks_per_second);
		confab_metrics_write_header(out,
					    "process_resident_memory_bytes",
					    "gauge",
					    "Resident memory size in bytes.");
		confab_metrics_write_sample(out,
					    "process_resident_memory_bytes",
					    NULL,
					    (gdouble)stat.rss_pages * page_size);
		confab_metrics_write_header(
		    out,
		    "process_start_time_seconds",
		    "gauge",
		    "Start time of the process since unix epoch in seconds.");
		confab_metrics_write_sample(
		    out,
		    "process_start_time_seconds",
		    NULL,
		    (gdouble)(boot_time() + stat.start_tick / ticks_per_second));
	}
	confab_metrics_write_header(out,
				    "process_open_fds",
				    "gauge",
				    "Number of open file descriptors.");
	confab_metrics_write_sample(out, "process_open_fds", NULL, count_open_fds());
}

/* ---------- GObject ---------- */

static void
confab_metrics_finalize(GObject *object)
{
	ConfabMetrics *self = CONFAB_METRICS(object);
	g_hash_table_unref(self->series);
	g_array_unref(self->gauges);
	g_mutex_clear(&self->lock);
	g_rw_lock_clear(&self->series_lock);
	G_OBJECT_CLASS(confab_metrics_parent_class)->finalize(object);
}

static void
confab_metrics_class_init(ConfabMetricsClass *klass)
{
	G_OBJECT_CLASS(klass)->finalize = confab_metrics_finalize;
}

static void
confab_metrics_init(ConfabMetrics *self)
{
	g_mutex_init(&self->lock);
	g_rw_lock_init(&self->series_lock);
	self->series =
	    g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)series_free);
	self->gauges = g_array_new(FALSE, FALSE, sizeof(Gauge));
}

/**
 * confab_metrics_new:
 *
 * Returns: (transfer full): an empty registry
 */
ConfabMetrics *
confab_metrics_new(void)
{
	return g_object_new(CONFAB_TYPE_METRICS, NULL);
}
