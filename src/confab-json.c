/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabJson"

#include "config.h"

#include <math.h>
#include <string.h>

#include "confab-error.h"
#include "confab-json.h"

/*
 * json-glib 1.6 is lenient (it takes single quotes and bare words), silently
 * truncates strings at an escaped U+0000, and recurses once per nesting level
 * until its stack overflows. So every byte from the network first goes
 * through this strict RFC 8259 checker: it is iterative, caps the depth, and
 * refuses what json-glib would mangle. Only then does json-glib see it.
 */

typedef struct {
	const guchar *p;
	const guchar *end;
	GError **error;
	/* where we are, to name the field of a bad string: per level, the
	 * container ('{' or '['), the member name or the element index */
	gchar *stack;
	const guchar **keys;
	gsize *key_lens;
	guint *indices;
	guint depth;
} Scan;

/* "messages[0].content", as the OpenAI errors name a field */
static gchar *
scan_path(Scan *s)
{
	GString *path = g_string_new(NULL);
	for (guint d = 0; d < s->depth; d++) {
		if (s->stack[d] == '[') {
			g_string_append_printf(path, "[%u]", s->indices[d]);
		} else if (s->keys[d] != NULL) {
			if (path->len > 0)
				g_string_append_c(path, '.');
			g_string_append_len(path, (const gchar *)s->keys[d], s->key_lens[d]);
		}
	}
	if (path->len == 0) {
		g_string_free(path, TRUE);
		return NULL;
	}
	return g_string_free(path, FALSE);
}

static gboolean
scan_fail_text(Scan *s, gint code, const gchar *what)
{
	g_autofree gchar *param = scan_path(s);
	confab_set_error_param_printf(s->error,
				      code,
				      param,
				      "%s%s%s",
				      what,
				      param != NULL ? " in " : "",
				      param != NULL ? param : "");
	return FALSE;
}

static gboolean
scan_fail(Scan *s, const gchar *what)
{
	confab_set_error_param_printf(s->error,
				      CONFAB_ERROR_INVALID_JSON,
				      NULL,
				      "The request body is not valid JSON: %s",
				      what);
	return FALSE;
}

static void
scan_ws(Scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static gint
hex4(const guchar *p)
{
	gint v = 0;
	for (guint i = 0; i < 4; i++) {
		gint c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

static gboolean
scan_string(Scan *s, gboolean is_key)
{
	const guchar *start;

	/* s->p is on the opening quote */
	s->p++;
	start = s->p;
	for (;;) {
		const guchar *q = s->p;
		/* fast path over plain bytes */
		while (q < s->end && *q != '"' && *q != '\\' && *q >= 0x20)
			q++;
		s->p = q;
		if (s->p >= s->end)
			return scan_fail(s, "unterminated string");
		if (*s->p == '"') {
			if (!g_utf8_validate_len((const gchar *)start, s->p - start, NULL))
				return scan_fail_text(s,
						      CONFAB_ERROR_INVALID_JSON,
						      "Text that is not valid UTF-8");
			if (is_key && s->depth > 0) {
				s->keys[s->depth - 1] = start;
				s->key_lens[s->depth - 1] = s->p - start;
			}
			s->p++;
			return TRUE;
		}
		if (*s->p < 0x20)
			return scan_fail(s, "control character in a string");
		/* backslash */
		if (s->p + 1 >= s->end)
			return scan_fail(s, "unterminated string");
		switch (s->p[1]) {
		case '"':
		case '\\':
		case '/':
		case 'b':
		case 'f':
		case 'n':
		case 'r':
		case 't':
			s->p += 2;
			break;
		case 'u': {
			gint cp;
			if (s->end - s->p < 6 || (cp = hex4(s->p + 2)) < 0)
				return scan_fail(s, "bad \\u escape");
			s->p += 6;
			if (cp == 0)
				return scan_fail_text(
				    s,
				    CONFAB_ERROR_INVALID_VALUE,
				    "Text containing U+0000 (\\u0000) is not accepted");
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return scan_fail(s, "lone low surrogate in a \\u escape");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				gint lo;
				if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' ||
				    (lo = hex4(s->p + 2)) < 0xdc00 || lo > 0xdfff)
					return scan_fail(s, "lone high surrogate in a \\u escape");
				s->p += 6;
			}
			break;
		}
		default:
			return scan_fail(s, "bad escape in a string");
		}
	}
}

static gboolean
scan_digits(Scan *s)
{
	const guchar *start = s->p;
	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return s->p > start;
}

static gboolean
scan_number(Scan *s)
{
	const guchar *start = s->p;
	gboolean integral = TRUE;

	if (*s->p == '-')
		s->p++;
	if (s->p >= s->end)
		return scan_fail(s, "bad number");
	if (*s->p == '0') {
		s->p++;
	} else if (!scan_digits(s)) {
		return scan_fail(s, "bad number");
	}
	if (s->p < s->end && *s->p == '.') {
		integral = FALSE;
		s->p++;
		if (!scan_digits(s))
			return scan_fail(s, "bad number");
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		integral = FALSE;
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (!scan_digits(s))
			return scan_fail(s, "bad number");
	}
	/* json-glib wraps integers outside int64 (2^63 becomes -2^63) and
	 * turns doubles that overflow into inf: refuse both */
	if (integral) {
		gboolean neg = *start == '-';
		gsize digits = (gsize)(s->p - start) - (neg ? 1 : 0);
		const gchar *max = neg ? "9223372036854775808" : "9223372036854775807";
		if (digits > 19 || (digits == 19 && memcmp(start + (neg ? 1 : 0), max, 19) > 0))
			return scan_fail(s, "integer out of range");
	} else {
		g_autofree gchar *text = g_strndup((const gchar *)start, s->p - start);
		if (!isfinite(g_ascii_strtod(text, NULL)))
			return scan_fail(s, "number out of range");
	}
	return TRUE;
}

static gboolean
scan_literal(Scan *s, const gchar *lit)
{
	gsize n = strlen(lit);
	if ((gsize)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
		return scan_fail(s, "unexpected character");
	s->p += n;
	return TRUE;
}

static gboolean
scan_member_name(Scan *s)
{
	if (s->p >= s->end || *s->p != '"')
		return scan_fail(s, "expected a member name");
	if (!scan_string(s, TRUE))
		return FALSE;
	scan_ws(s);
	if (s->p >= s->end || *s->p != ':')
		return scan_fail(s, "expected ':'");
	s->p++;
	scan_ws(s);
	return TRUE;
}

static gboolean
scan_scalar(Scan *s)
{
	switch (*s->p) {
	case '"':
		return scan_string(s, FALSE);
	case 't':
		return scan_literal(s, "true");
	case 'f':
		return scan_literal(s, "false");
	case 'n':
		return scan_literal(s, "null");
	default:
		if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))
			return scan_number(s);
		return scan_fail(s, "unexpected character");
	}
}

/**
 * confab_json_check:
 * @data: the bytes
 * @len: their length
 * @max_depth: the deepest nesting of arrays and objects allowed
 * @error: return location for a #GError
 *
 * Checks that @data is one strict RFC 8259 JSON text in UTF-8, nested at most
 * @max_depth deep, without U+0000 in any string. Iterative: no input can
 * exhaust the stack.
 *
 * Returns: %TRUE if json-glib may parse @data
 */
gboolean
confab_json_check(const gchar *data, gsize len, guint max_depth, GError **error)
{
	/* the containers we are in: '{' or '[' */
	g_autofree gchar *stack = g_malloc(max_depth + 1);
	g_autofree const guchar **keys = g_new0(const guchar *, max_depth + 1);
	g_autofree gsize *key_lens = g_new0(gsize, max_depth + 1);
	g_autofree guint *indices = g_new0(guint, max_depth + 1);
	Scan s = {(const guchar *)data,
		  (const guchar *)data + len,
		  error,
		  stack,
		  keys,
		  key_lens,
		  indices,
		  0};
	gboolean want_value = TRUE;

	/* UTF-8 is checked string by string, to name the field; bytes outside
	 * strings can only be JSON's own ASCII */

	scan_ws(&s);
	for (;;) {
		if (want_value) {
			if (s.p >= s.end)
				return scan_fail(&s, "unexpected end of input");
			if (*s.p == '{' || *s.p == '[') {
				if (s.depth >= max_depth) {
					confab_set_error_param_printf(
					    error,
					    CONFAB_ERROR_INVALID_JSON,
					    NULL,
					    "The request body is nested deeper than %u levels",
					    max_depth);
					return FALSE;
				}
				stack[s.depth] = (gchar)*s.p;
				keys[s.depth] = NULL;
				indices[s.depth] = 0;
				s.depth++;
				s.p++;
				scan_ws(&s);
				if (s.p < s.end && (*s.p == '}' || *s.p == ']')) {
					/* an empty container is a whole value */
					want_value = FALSE;
					continue;
				}
				if (stack[s.depth - 1] == '{' && !scan_member_name(&s))
					return FALSE;
				continue;
			}
			if (!scan_scalar(&s))
				return FALSE;
			want_value = FALSE;
			continue;
		}

		/* after a value */
		scan_ws(&s);
		if (s.depth == 0) {
			if (s.p != s.end)
				return scan_fail(&s, "trailing characters after the value");
			return TRUE;
		}
		if (s.p >= s.end)
			return scan_fail(&s, "unexpected end of input");
		if (*s.p == ',') {
			s.p++;
			scan_ws(&s);
			if (stack[s.depth - 1] == '[')
				indices[s.depth - 1]++;
			if (stack[s.depth - 1] == '{' && !scan_member_name(&s))
				return FALSE;
			want_value = TRUE;
			continue;
		}
		if ((*s.p == '}' && stack[s.depth - 1] == '{') ||
		    (*s.p == ']' && stack[s.depth - 1] == '[')) {
			s.p++;
			s.depth--;
			continue;
		}
		return scan_fail(&s, "expected ',' or a closing bracket");
	}
}

/**
 * confab_json_parse:
 * @data: the bytes
 * @len: their length
 * @max_depth: the deepest nesting allowed
 * @error: return location for a #GError
 *
 * confab_json_check() then json-glib.
 *
 * Returns: (transfer full): the root node
 */
JsonNode *
confab_json_parse(const gchar *data, gsize len, guint max_depth, GError **error)
{
	g_autoptr(JsonParser) parser = NULL;
	g_autoptr(GError) error_local = NULL;
	JsonNode *root;

	if (!confab_json_check(data, len, max_depth, error))
		return NULL;
	parser = json_parser_new_immutable();
	if (!json_parser_load_from_data(parser, data, (gssize)len, &error_local)) {
		confab_set_error_param_printf(error,
					      CONFAB_ERROR_INVALID_JSON,
					      NULL,
					      "The request body is not valid JSON: %s",
					      error_local->message);
		return NULL;
	}
	root = json_parser_steal_root(parser);
	if (root == NULL) {
		confab_set_error_param(error,
				       CONFAB_ERROR_INVALID_JSON,
				       NULL,
				       "The request body is empty");
		return NULL;
	}
	return root;
}

/**
 * confab_json_append_string_len:
 * @out: a #GString
 * @str: UTF-8 text
 * @len: its length in bytes
 *
 * Appends @str as a JSON string literal, quotes included.
 */
void
confab_json_append_string_len(GString *out, const gchar *str, gsize len)
{
	static const gchar hex[] = "0123456789abcdef";
	const guchar *p = (const guchar *)str;
	const guchar *end = p + len;

	g_string_append_c(out, '"');
	while (p < end) {
		const guchar *run = p;
		while (p < end && *p >= 0x20 && *p != '"' && *p != '\\')
			p++;
		if (p > run)
			g_string_append_len(out, (const gchar *)run, p - run);
		if (p >= end)
			break;
		switch (*p) {
		case '"':
			g_string_append(out, "\\\"");
			break;
		case '\\':
			g_string_append(out, "\\\\");
			break;
		case '\n':
			g_string_append(out, "\\n");
			break;
		case '\r':
			g_string_append(out, "\\r");
			break;
		case '\t':
			g_string_append(out, "\\t");
			break;
		case '\b':
			g_string_append(out, "\\b");
			break;
		case '\f':
			g_string_append(out, "\\f");
			break;
		default: {
			gchar esc[7] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 0xf], 0};
			g_string_append(out, esc);
		}
		}
		p++;
	}
	g_string_append_c(out, '"');
}

/**
 * confab_json_append_string:
 * @out: a #GString
 * @str: (nullable): UTF-8 text; %NULL appends `null`
 *
 * Appends @str as a JSON string literal.
 */
void
confab_json_append_string(GString *out, const gchar *str)
{
	if (str == NULL) {
		g_string_append(out, "null");
		return;
	}
	confab_json_append_string_len(out, str, strlen(str));
}

/**
 * confab_json_append_node:
 * @out: a #GString
 * @node: (nullable): a node; %NULL appends `null`
 *
 * Appends @node serialized compactly.
 */
void
confab_json_append_node(GString *out, JsonNode *node)
{
	if (node == NULL) {
		g_string_append(out, "null");
		return;
	}
	switch (JSON_NODE_TYPE(node)) {
	case JSON_NODE_OBJECT: {
		g_autoptr(GList) members = json_object_get_members(json_node_get_object(node));
		g_string_append_c(out, '{');
		for (GList *l = members; l != NULL; l = l->next) {
			if (l != members)
				g_string_append_c(out, ',');
			confab_json_append_string(out, l->data);
			g_string_append_c(out, ':');
			confab_json_append_node(
			    out,
			    json_object_get_member(json_node_get_object(node), l->data));
		}
		g_string_append_c(out, '}');
		break;
	}
	case JSON_NODE_ARRAY: {
		JsonArray *array = json_node_get_array(node);
		g_string_append_c(out, '[');
		for (guint i = 0; i < json_array_get_length(array); i++) {
			if (i > 0)
				g_string_append_c(out, ',');
			confab_json_append_node(out, json_array_get_element(array, i));
		}
		g_string_append_c(out, ']');
		break;
	}
	case JSON_NODE_NULL:
		g_string_append(out, "null");
		break;
	case JSON_NODE_VALUE:
		switch (json_node_get_value_type(node)) {
		case G_TYPE_INT64:
			g_string_append_printf(out, "%" G_GINT64_FORMAT, json_node_get_int(node));
			break;
		case G_TYPE_DOUBLE: {
			/* json-glib 1.6 writes 1e20 as "1e+20.0" and inf as
			 * "inf.0": neither is JSON */
			gchar buf[G_ASCII_DTOSTR_BUF_SIZE];
			gdouble d = json_node_get_double(node);
			if (!isfinite(d)) {
				g_string_append(out, "null");
				break;
			}
			g_ascii_dtostr(buf, sizeof(buf), d);
			g_string_append(out, buf);
			if (strpbrk(buf, ".eE") == NULL)
				g_string_append(out, ".0");
			break;
		}
		case G_TYPE_BOOLEAN:
			g_string_append(out, json_node_get_boolean(node) ? "true" : "false");
			break;
		case G_TYPE_STRING:
			confab_json_append_string(out, json_node_get_string(node));
			break;
		default:
			g_string_append(out, "null");
			break;
		}
		break;
	default:
		g_string_append(out, "null");
		break;
	}
}

/**
 * confab_json_to_string:
 * @node: a node
 *
 * Returns: (transfer full): @node as compact JSON
 */
gchar *
confab_json_to_string(JsonNode *node)
{
	GString *out = g_string_new(NULL);
	confab_json_append_node(out, node);
	return g_string_free(out, FALSE);
}

/**
 * confab_json_from_string:
 * @str: (nullable): JSON that this program wrote itself
 *
 * Parses stored JSON. Returns %NULL for %NULL or unparsable text.
 *
 * Returns: (transfer full) (nullable): the root node
 */
JsonNode *
confab_json_from_string(const gchar *str)
{
	if (str == NULL)
		return NULL;
	return json_from_string(str, NULL);
}
