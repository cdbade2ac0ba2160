/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <string.h>

#include "util/confab-http-fields.h"

/* name\0value\0 pairs in one buffer, and where each pair starts */
struct _ConfabHttpFields {
	GString *text;	 /* owned */
	GArray *offsets; /* owned: guint32 pairs (name, value) into text */
};

/**
 * confab_http_fields_new:
 *
 * Returns: (transfer full): an empty field list
 */
ConfabHttpFields *
confab_http_fields_new(void)
{
	ConfabHttpFields *fields = g_new0(ConfabHttpFields, 1);
	fields->text = g_string_sized_new(256);
	fields->offsets = g_array_sized_new(FALSE, FALSE, sizeof(guint32), 16);
	return fields;
}

void
confab_http_fields_free(ConfabHttpFields *fields)
{
	if (fields == NULL)
		return;
	g_string_free(fields->text, TRUE);
	g_array_unref(fields->offsets);
	g_free(fields);
}

/**
 * confab_http_fields_clear:
 *
 * Empties the list, keeping its memory for the next message.
 */
void
confab_http_fields_clear(ConfabHttpFields *fields)
{
	g_string_truncate(fields->text, 0);
	g_array_set_size(fields->offsets, 0);
}

/**
 * confab_http_fields_append:
 * @fields: a #ConfabHttpFields
 * @name: the field name (not NUL-terminated)
 * @name_len: its length
 * @value: the value, whitespace already trimmed
 * @value_len: its length
 */
void
confab_http_fields_append(ConfabHttpFields *fields,
			  const gchar *name,
			  gsize name_len,
			  const gchar *value,
			  gsize value_len)
{
	guint32 at = (guint32)fields->text->len;

	g_array_append_val(fields->offsets, at);
	g_string_append_len(fields->text, name, (gssize)name_len);
	g_string_append_c(fields->text, '\0');
	at = (guint32)fields->text->len;
	g_array_append_val(fields->offsets, at);
	g_string_append_len(fields->text, value, (gssize)value_len);
	g_string_append_c(fields->text, '\0');
}

guint
confab_http_fields_get_size(const ConfabHttpFields *fields)
{
	return fields->offsets->len / 2;
}

const gchar *
confab_http_fields_get_name(const ConfabHttpFields *fields, guint index)
{
	g_return_val_if_fail(index < confab_http_fields_get_size(fields), NULL);
	return fields->text->str + g_array_index(fields->offsets, guint32, 2 * index);
}

const gchar *
confab_http_fields_get_value(const ConfabHttpFields *fields, guint index)
{
	g_return_val_if_fail(index < confab_http_fields_get_size(fields), NULL);
	return fields->text->str + g_array_index(fields->offsets, guint32, 2 * index + 1);
}

/**
 * confab_http_fields_get:
 * @fields: a #ConfabHttpFields
 * @name: a field name
 *
 * Returns: (nullable): the value of the first field called @name
 */
const gchar *
confab_http_fields_get(const ConfabHttpFields *fields, const gchar *name)
{
	guint n = confab_http_fields_get_size(fields);
	for (guint i = 0; i < n; i++) {
		if (g_ascii_strcasecmp(confab_http_fields_get_name(fields, i), name) == 0)
			return confab_http_fields_get_value(fields, i);
	}
	return NULL;
}

/**
 * confab_http_fields_count:
 *
 * Returns: how many field lines are called @name
 */
guint
confab_http_fields_count(const ConfabHttpFields *fields, const gchar *name)
{
	guint n = confab_http_fields_get_size(fields);
	guint count = 0;
	for (guint i = 0; i < n; i++) {
		if (g_ascii_strcasecmp(confab_http_fields_get_name(fields, i), name) == 0)
			count++;
	}
	return count;
}

/**
 * confab_http_fields_list_has_token:
 * @list: a comma-separated list, as `Connection: keep-alive, Upgrade`
 * @token: a token
 *
 * Returns: whether @token is one of the elements of @list (any case)
 */
gboolean
confab_http_fields_list_has_token(const gchar *list, const gchar *token)
{
	gsize token_len = strlen(token);
	const gchar *p = list;

	while (p != NULL && *p != '\0') {
		const gchar *end;
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		end = p;
		while (*end != '\0' && *end != ',')
			end++;
		{
			const gchar *last = end;
			while (last > p && (last[-1] == ' ' || last[-1] == '\t'))
				last--;
			if ((gsize)(last - p) == token_len &&
			    g_ascii_strncasecmp(p, token, token_len) == 0)
				return TRUE;
		}
		p = end;
	}
	return FALSE;
}

/**
 * confab_http_fields_has_token:
 *
 * Returns: whether any field called @name lists @token
 */
gboolean
confab_http_fields_has_token(const ConfabHttpFields *fields, const gchar *name, const gchar *token)
{
	guint n = confab_http_fields_get_size(fields);
	for (guint i = 0; i < n; i++) {
		if (g_ascii_strcasecmp(confab_http_fields_get_name(fields, i), name) == 0 &&
		    confab_http_fields_list_has_token(confab_http_fields_get_value(fields, i),
						      token))
			return TRUE;
	}
	return FALSE;
}

/* tchar, RFC 9110 section 5.6.2: ALPHA, DIGIT and !#$%&'*+-.^_`|~ (a
 * table: every field name of every request and response is checked) */
static const guint8 tchar_table[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0,
    0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

static gboolean
is_tchar(guchar c)
{
	return tchar_table[c] != 0;
}

/**
 * confab_http_fields_is_token:
 *
 * Returns: whether @str is a non-empty token (RFC 9110 section 5.6.2)
 */
gboolean
confab_http_fields_is_token(const gchar *str, gsize len)
{
	if (len == 0)
		return FALSE;
	for (gsize i = 0; i < len; i++) {
		if (!is_tchar((guchar)str[i]))
			return FALSE;
	}
	return TRUE;
}

/**
 * confab_http_fields_append_uint:
 * @head: a message head being written
 * @value: a field's number (Content-Length), or a status code
 *
 * Appends @value's decimal digits, without printf's formatting: a head of
 * every request and response has one.
 */
void
confab_http_fields_append_uint(GString *head, guint64 value)
{
	gchar digits[24];
	guint n = 0;

	do {
		digits[sizeof(digits) - 1 - n++] = (gchar)('0' + value % 10);
		value /= 10;
	} while (value > 0);
	g_string_append_len(head, digits + sizeof(digits) - n, n);
}

/**
 * confab_http_fields_is_field_value:
 *
 * Returns: whether @value holds only what a field value may (RFC 9110
 * section 5.5): visible characters, obs-text, spaces and tabs; never NUL, CR,
 * LF or another control character
 */
gboolean
confab_http_fields_is_field_value(const gchar *value, gsize len)
{
	for (gsize i = 0; i < len; i++) {
		guchar c = (guchar)value[i];
		if (c == '\t' || c == ' ' || (c >= 0x21 && c != 0x7f))
			continue;
		return FALSE;
	}
	return TRUE;
}

/**
 * confab_http_fields_parse_field_line:
 * @line: one field line, without its CRLF
 * @len: its length
 * @name_len: (out): the length of the name, which starts @line
 * @value: (out): where the value starts, whitespace trimmed
 * @value_len: (out): the length of the value
 *
 * Splits `name: value` strictly (RFC 9112 section 5): the name is a token
 * directly followed by the colon — whitespace before the colon, a line that
 * starts with whitespace (obs-fold) or a control character in the value
 * makes the line invalid.
 *
 * Returns: whether @line is a valid field line
 */
gboolean
confab_http_fields_parse_field_line(const gchar *line,
				    gsize len,
				    gsize *name_len,
				    const gchar **value,
				    gsize *value_len)
{
	const gchar *colon = memchr(line, ':', len);
	const gchar *start;
	const gchar *end = line + len;

	if (colon == NULL || !confab_http_fields_is_token(line, (gsize)(colon - line)))
		return FALSE;
	start = colon + 1;
	while (start < end && (*start == ' ' || *start == '\t'))
		start++;
	while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (!confab_http_fields_is_field_value(start, (gsize)(end - start)))
		return FALSE;
	*name_len = (gsize)(colon - line);
	*value = start;
	*value_len = (gsize)(end - start);
	return TRUE;
}

/* Finds `type "/" subtype` at the start of a Content-Type value (RFC 9110
 * section 8.3.1), leading whitespace skipped; parameters may follow. */
static gboolean
find_media_type(const gchar *value, const gchar **start, gsize *len)
{
	const gchar *p;
	const gchar *slash;
	const gchar *end;

	if (value == NULL)
		return FALSE;
	p = value;
	while (*p == ' ' || *p == '\t')
		p++;
	slash = strchr(p, '/');
	if (slash == NULL || !confab_http_fields_is_token(p, (gsize)(slash - p)))
		return FALSE;
	end = slash + 1;
	while (is_tchar((guchar)*end))
		end++;
	if (end == slash + 1)
		return FALSE;
	/* then nothing, or parameters */
	{
		const gchar *q = end;
		while (*q == ' ' || *q == '\t')
			q++;
		if (*q != '\0' && *q != ';')
			return FALSE;
	}
	*start = p;
	*len = (gsize)(end - p);
	return TRUE;
}

/**
 * confab_http_fields_media_type:
 * @value: (nullable): a Content-Type value, as `text/event-stream; charset=utf-8`
 *
 * Returns: (transfer full) (nullable): the media type without its
 *   parameters, in lower case (`text/event-stream`), or %NULL when @value
 *   is missing or does not start with `type/subtype`
 */
gchar *
confab_http_fields_media_type(const gchar *value)
{
	const gchar *start;
	gsize len;

	if (!find_media_type(value, &start, &len))
		return NULL;
	return g_ascii_strdown(start, (gssize)len);
}

/**
 * confab_http_fields_media_type_is:
 * @value: (nullable): a Content-Type value
 * @type: a media type without parameters, as `application/json`
 *
 * Returns: whether @value names @type (in any case), with or without
 *   parameters
 */
gboolean
confab_http_fields_media_type_is(const gchar *value, const gchar *type)
{
	const gchar *start;
	gsize len;

	return find_media_type(value, &start, &len) && strlen(type) == len &&
	       g_ascii_strncasecmp(start, type, len) == 0;
}

/* ---------- HTTP-date, RFC 9110 section 5.6.7 ---------- */

static const gchar *const month_names[] =
    {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const gchar *const day_names[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
static const gchar *const long_day_names[] =
    {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};

typedef struct {
	const gchar *p;
} DateScan;

static gboolean
date_literal(DateScan *s, const gchar *lit)
{
	gsize n = strlen(lit);
	if (strncmp(s->p, lit, n) != 0)
		return FALSE;
	s->p += n;
	return TRUE;
}

/* exactly @n digits */
static gboolean
date_digits(DateScan *s, guint n, gint *out)
{
	gint v = 0;
	for (guint i = 0; i < n; i++) {
		if (!g_ascii_isdigit(s->p[i]))
			return FALSE;
		v = v * 10 + (s->p[i] - '0');
	}
	s->p += n;
	*out = v;
	return TRUE;
}

/* one of @names (any case), its index in @index */
static gboolean
date_name(DateScan *s, const gchar *const *names, guint n, gint *index)
{
	for (guint i = 0; i < n; i++) {
		gsize len = strlen(names[i]);
		if (g_ascii_strncasecmp(s->p, names[i], len) == 0) {
			s->p += len;
			*index = (gint)i;
			return TRUE;
		}
	}
	return FALSE;
}

/* HH:MM:SS */
static gboolean
date_time(DateScan *s, gint *h, gint *m, gint *sec)
{
	return date_digits(s, 2, h) && date_literal(s, ":") && date_digits(s, 2, m) &&
	       date_literal(s, ":") && date_digits(s, 2, sec);
}

static GDateTime *
date_new(gint year, gint month, gint day, gint h, gint m, gint sec)
{
	if (year < 1 || year > 9999 || day < 1 || day > 31 || h > 23 || m > 59 || sec > 60)
		return NULL;
	/* a leap second: GDateTime has none */
	if (sec == 60)
		sec = 59;
	return g_date_time_new_utc(year, month + 1, day, h, m, sec);
}

/* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
static GDateTime *
parse_imf_fixdate(const gchar *value)
{
	DateScan s = {value};
	gint wday, day, month, year, h, m, sec;

	if (!date_name(&s, day_names, 7, &wday) || !date_literal(&s, ", ") ||
	    !date_digits(&s, 2, &day) || !date_literal(&s, " ") ||
	    !date_name(&s, month_names, 12, &month) || !date_literal(&s, " ") ||
	    !date_digits(&s, 4, &year) || !date_literal(&s, " ") || !date_time(&s, &h, &m, &sec) ||
	    !date_literal(&s, " GMT") || *s.p != '\0')
		return NULL;
	return date_new(year, month, day, h, m, sec);
}

/* rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT */
static GDateTime *
parse_rfc850_date(const gchar *value)
{
	DateScan s = {value};
	gint wday, day, month, yy, h, m, sec, year;
	g_autoptr(GDateTime) now = NULL;
	gint this_year;

	if (!date_name(&s, long_day_names, 7, &wday) || !date_literal(&s, ", ") ||
	    !date_digits(&s, 2, &day) || !date_literal(&s, "-") ||
	    !date_name(&s, month_names, 12, &month) || !date_literal(&s, "-") ||
	    !date_digits(&s, 2, &yy) || !date_literal(&s, " ") || !date_time(&s, &h, &m, &sec) ||
	    !date_literal(&s, " GMT") || *s.p != '\0')
		return NULL;
	/* RFC 9110: a two-digit year more than 50 years ahead is in the past */
	now = g_date_time_new_now_utc();
	this_year = g_date_time_get_year(now);
	year = this_year - this_year % 100 + yy;
	if (year > this_year + 50)
		year -= 100;
	return date_new(year, month, day, h, m, sec);
}

/* asctime-date: Sun Nov  6 08:49:37 1994 */
static GDateTime *
parse_asctime_date(const gchar *value)
{
	DateScan s = {value};
	gint wday, day, month, year, h, m, sec;

	if (!date_name(&s, day_names, 7, &wday) || !date_literal(&s, " ") ||
	    !date_name(&s, month_names, 12, &month) || !date_literal(&s, " "))
		return NULL;
	if (*s.p == ' ') {
		s.p++;
		if (!date_digits(&s, 1, &day))
			return NULL;
	} else if (!date_digits(&s, 2, &day)) {
		return NULL;
	}
	if (!date_literal(&s, " ") || !date_time(&s, &h, &m, &sec) || !date_literal(&s, " ") ||
	    !date_digits(&s, 4, &year) || *s.p != '\0')
		return NULL;
	return date_new(year, month, day, h, m, sec);
}

/**
 * confab_http_fields_parse_date:
 * @value: an HTTP-date, as in Retry-After or Date
 *
 * Parses the three forms RFC 9110 section 5.6.7 asks recipients to take:
 * IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
 * (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime's
 * (`Sun Nov  6 08:49:37 1994`). Surrounding whitespace is ignored; names
 * are taken in any case; the day name is not checked against the date.
 *
 * Returns: (transfer full) (nullable): the time in UTC, or %NULL when
 *   @value is none of them or not a real date
 */
GDateTime *
confab_http_fields_parse_date(const gchar *value)
{
	g_autofree gchar *trimmed = NULL;
	GDateTime *when;

	g_return_val_if_fail(value != NULL, NULL);
	trimmed = g_strstrip(g_strdup(value));
	when = parse_imf_fixdate(trimmed);
	if (when == NULL)
		when = parse_rfc850_date(trimmed);
	if (when == NULL)
		when = parse_asctime_date(trimmed);
	return when;
}
