/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#define G_LOG_DOMAIN "ConfabJson"

#include "config.h"

#include <math.h>
#include <string.h>

#include "util/confab-error.h"
#include "util/confab-json.h"

/*
 * json-glib 1.6 is lenient (it takes single quotes and bare words), silently
 * truncates strings at an escaped U+0000, and recurses once per nesting level
 * until its stack overflows. So every byte from the network first goes
 * through this strict RFC 8259 checker: it is iterative, caps the depth, and
 * refuses what json-glib would mangle. The checked text is then turned into
 * json-glib's nodes here, without its GScanner-based parser (the tests hold
 * the trees equal to the ones it builds).
 */

/* how deep the scans go without allocating */
#define SMALL_DEPTH 128

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
	confab_error_set_printf(s->error,
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
	confab_error_set_printf(s->error,
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
	/* the containers we are in: '{' or '[' (each level is set as it is
	 * entered: nothing needs clearing); on the stack up to SMALL_DEPTH */
	gchar stack_small[SMALL_DEPTH + 1];
	const guchar *keys_small[SMALL_DEPTH + 1];
	gsize key_lens_small[SMALL_DEPTH + 1];
	guint indices_small[SMALL_DEPTH + 1];
	g_autofree gchar *stack_heap = NULL;
	g_autofree const guchar **keys_heap = NULL;
	g_autofree gsize *key_lens_heap = NULL;
	g_autofree guint *indices_heap = NULL;
	gchar *stack = stack_small;
	const guchar **keys = keys_small;
	gsize *key_lens = key_lens_small;
	guint *indices = indices_small;
	Scan s;
	gboolean want_value = TRUE;

	if (max_depth > SMALL_DEPTH) {
		stack = stack_heap = g_malloc(max_depth + 1);
		keys = keys_heap = g_new(const guchar *, max_depth + 1);
		key_lens = key_lens_heap = g_new(gsize, max_depth + 1);
		indices = indices_heap = g_new(guint, max_depth + 1);
	}
	s = (Scan){(const guchar *)data,
		   (const guchar *)data + len,
		   error,
		   stack,
		   keys,
		   key_lens,
		   indices,
		   0};

	/* UTF-8 is checked string by string, to name the field; bytes outside
	 * strings can only be JSON's own ASCII */

	scan_ws(&s);
	for (;;) {
		if (want_value) {
			if (s.p >= s.end)
				return scan_fail(&s, "unexpected end of input");
			if (*s.p == '{' || *s.p == '[') {
				if (s.depth >= max_depth) {
					confab_error_set_printf(
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

/* ---------- building the tree of checked text ---------- */

/* The string at *pp (on its opening quote), unescaped; *pp moves past it.
 * The text passed confab_json_check(): escapes and pairs are well-formed. */
static gchar *
build_string(const guchar **pp)
{
	const guchar *p = *pp + 1;
	const guchar *q = p;
	GString *out;

	while (*q != '"' && *q != '\\')
		q++;
	if (*q == '"') {
		*pp = q + 1;
		return g_strndup((const gchar *)p, q - p);
	}
	out = g_string_sized_new((gsize)(q - p) + 16);
	g_string_append_len(out, (const gchar *)p, q - p);
	while (*q != '"') {
		if (*q != '\\') {
			const guchar *run = q;
			while (*q != '"' && *q != '\\')
				q++;
			g_string_append_len(out, (const gchar *)run, q - run);
			continue;
		}
		switch (q[1]) {
		case 'b':
			g_string_append_c(out, '\b');
			break;
		case 'f':
			g_string_append_c(out, '\f');
			break;
		case 'n':
			g_string_append_c(out, '\n');
			break;
		case 'r':
			g_string_append_c(out, '\r');
			break;
		case 't':
			g_string_append_c(out, '\t');
			break;
		case 'u': {
			gunichar cp = (gunichar)hex4(q + 2);
			if (cp >= 0xd800 && cp <= 0xdbff) {
				gunichar lo = (gunichar)hex4(q + 8);
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				q += 6;
			}
			g_string_append_unichar(out, cp);
			q += 4; /* and the two below */
			break;
		}
		default: /* '"', '\\', '/' */
			g_string_append_c(out, (gchar)q[1]);
			break;
		}
		q += 2;
	}
	*pp = q + 1;
	return g_string_free(out, FALSE);
}

/**
 * confab_json_read_string:
 * @data: text that starts with a JSON string's opening quote
 * @len: the bytes of @data
 * @consumed: (out): the bytes the string took, its quotes included
 *
 * Reads one JSON string, held to the rules of confab_json_check().
 *
 * Returns: (transfer full) (nullable): the string, unescaped; %NULL when
 *   @data does not start with a valid one
 */
gchar *
confab_json_read_string(const gchar *data, gsize len, gsize *consumed)
{
	Scan s = {0};
	const guchar *p = (const guchar *)data;
	gchar *out;

	g_return_val_if_fail(consumed != NULL, NULL);
	if (data == NULL || len == 0 || data[0] != '"')
		return NULL;
	s.p = p;
	s.end = p + len;
	if (!scan_string(&s, FALSE))
		return NULL;
	out = build_string(&p);
	*consumed = (gsize)(p - (const guchar *)data);
	return out;
}

static JsonNode *
build_number(const guchar **pp, const guchar *end)
{
	const guchar *p = *pp;
	const guchar *q = p;
	gboolean integral = TRUE;
	gchar small[64];
	g_autofree gchar *large = NULL;
	const gchar *text;
	gsize n;

	while (q < end && (g_ascii_isdigit(*q) || *q == '-' || *q == '+' || *q == '.' ||
			   *q == 'e' || *q == 'E')) {
		if (*q == '.' || *q == 'e' || *q == 'E')
			integral = FALSE;
		q++;
	}
	*pp = q;
	/* the input need not end in a NUL: strtod gets a copy that does */
	n = (gsize)(q - p);
	if (n < sizeof small) {
		memcpy(small, p, n);
		small[n] = '\0';
		text = small;
	} else {
		text = large = g_strndup((const gchar *)p, n);
	}
	if (integral)
		return json_node_init_int(json_node_alloc(), g_ascii_strtoll(text, NULL, 10));
	return json_node_init_double(json_node_alloc(), g_ascii_strtod(text, NULL));
}

/* The string at *pp, unescaped, as build_string(); in @buf when it is
 * short and has no escape (most names and values: json-glib copies them
 * again anyway), else in *@heap, which the caller frees. */
static const gchar *
build_string_tmp(const guchar **pp, gchar *buf, gsize size, gchar **heap)
{
	const guchar *p = *pp + 1;
	const guchar *q = p;

	while (*q != '"' && *q != '\\')
		q++;
	if (*q == '"' && (gsize)(q - p) < size) {
		memcpy(buf, p, q - p);
		buf[q - p] = '\0';
		*pp = q + 1;
		return buf;
	}
	*heap = build_string(pp);
	return *heap;
}

#define BUILD_SMALL_STRING 256

/* A string, literal or number at *pp; *pp moves past it. */
static JsonNode *
build_scalar(const guchar **pp, const guchar *end, gchar *buf, gsize size)
{
	switch (**pp) {
	case '"': {
		g_autofree gchar *heap = NULL;
		const gchar *text = build_string_tmp(pp, buf, size, &heap);
		return json_node_init_string(json_node_alloc(), text);
	}
	case 't':
		*pp += 4;
		return json_node_init_boolean(json_node_alloc(), TRUE);
	case 'f':
		*pp += 5;
		return json_node_init_boolean(json_node_alloc(), FALSE);
	case 'n':
		*pp += 4;
		return json_node_init_null(json_node_alloc());
	default:
		return build_number(pp, end);
	}
}

typedef struct {
	JsonNode *node;	  /* the container */
	const gchar *key; /* an object's member waiting for its value */
	gchar *key_heap;  /* owned, nullable: where @key is when not on the stack */
} BuildFrame;

static void
build_attach(BuildFrame *top, JsonNode *child)
{
	json_node_set_parent(child, top->node);
	if (JSON_NODE_HOLDS_ARRAY(top->node)) {
		json_array_add_element(json_node_get_array(top->node), child);
	} else {
		/* a repeated name: the last value wins, as with json-glib */
		json_object_set_member(json_node_get_object(top->node), top->key, child);
		top->key = NULL;
		g_clear_pointer(&top->key_heap, g_free);
	}
}

/* The name of the next member (in @buf or @top's key_heap), and its ':';
 * *pp moves to its value. */
static void
build_member_name(const guchar **pp, BuildFrame *top, gchar *buf, gsize size)
{
	const guchar *p;

	top->key = build_string_tmp(pp, buf, size, &top->key_heap);
	p = *pp;
	while (*p != ':')
		p++;
	p++;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	*pp = p;
}

/* Past the value at @p, in text confab_json_check() accepted: a member's
 * value, so that a ',' or a closing bracket follows it. */
static const guchar *
skip_value(const guchar *p)
{
	guint depth = 0;

	do {
		switch (*p) {
		case '"':
			for (p++; *p != '"'; p++) {
				if (*p == '\\')
					p++;
			}
			p++;
			break;
		case '{':
		case '[':
			depth++;
			p++;
			break;
		case '}':
		case ']':
			depth--;
			p++;
			break;
		default:
			/* a number, a literal, or what separates values */
			if (depth == 0) {
				while (*p != ',' && *p != '}' && *p != ']' && *p != ' ' &&
				       *p != '\t' && *p != '\n' && *p != '\r')
					p++;
				return p;
			}
			p++;
			break;
		}
	} while (depth > 0);
	return p;
}

static gboolean
name_in(const gchar *const *names, const gchar *name)
{
	for (; *names != NULL; names++) {
		if ((*names)[0] == name[0] && strcmp(*names, name) == 0)
			return TRUE;
	}
	return FALSE;
}

/* What build_tree() keeps of the objects it reads. */
typedef struct {
	const ConfabJsonKeep *keep; /* nullable: everything */
	guint whole_from;	    /* depth from which all is kept; 0: none */
	gboolean whole_next;	    /* the value to come is kept whole */
} BuildFilter;

/* Whether the member whose name was just read is built; when not, *pp
 * moves past its value. */
static gboolean
build_member_kept(BuildFilter *filter, BuildFrame *top, guint depth, const guchar **pp)
{
	if (filter->keep == NULL || (filter->whole_from > 0 && depth >= filter->whole_from))
		return TRUE;
	if (filter->keep->whole != NULL && name_in(filter->keep->whole, top->key)) {
		filter->whole_next = TRUE;
		return TRUE;
	}
	if (name_in(filter->keep->names, top->key))
		return TRUE;
	*pp = skip_value(*pp);
	top->key = NULL;
	g_clear_pointer(&top->key_heap, g_free);
	return FALSE;
}

/* Builds the tree of a text confab_json_check() accepted, without
 * recursion: as deep as the check let it be; with @keep, only the object
 * members it names. */
static JsonNode *
build_tree(const gchar *data, gsize len, guint max_depth, const ConfabJsonKeep *keep)
{
	const guchar *p = (const guchar *)data;
	const guchar *end = p + len;
	BuildFrame stack_small[SMALL_DEPTH + 1];
	g_autofree BuildFrame *stack_heap = NULL;
	BuildFrame *stack = stack_small;
	guint depth = 0;
	JsonNode *root = NULL;
	/* one name waits for its value at a time: the value is attached
	 * before anything inside it is read */
	gchar key_buf[BUILD_SMALL_STRING];
	gchar text_buf[BUILD_SMALL_STRING];
	BuildFilter filter = {keep, 0, FALSE};

	if (max_depth > SMALL_DEPTH)
		stack = stack_heap = g_new(BuildFrame, max_depth + 1);

#define SKIP_WS()                                                                                  \
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))                   \
	p++

	SKIP_WS();
	for (;;) {
		JsonNode *node;
		gboolean opened = FALSE;

		/* a value */
		switch (*p) {
		case '{': {
			JsonObject *object = json_object_new();
			node = json_node_init_object(json_node_alloc(), object);
			json_object_unref(object);
			opened = TRUE;
			p++;
			break;
		}
		case '[': {
			JsonArray *array = json_array_new();
			node = json_node_init_array(json_node_alloc(), array);
			json_array_unref(array);
			opened = TRUE;
			p++;
			break;
		}
		default:
			node = build_scalar(&p, end, text_buf, sizeof(text_buf));
			break;
		}
		if (depth > 0)
			build_attach(&stack[depth - 1], node);
		else
			root = node;
		if (opened) {
			stack[depth].node = node;
			stack[depth].key = NULL;
			stack[depth].key_heap = NULL;
			depth++;
			if (filter.whole_next && filter.whole_from == 0)
				filter.whole_from = depth;
		}
		filter.whole_next = FALSE;
		if (opened) {
			SKIP_WS();
			if (*p == '}' || *p == ']') {
				p++;
				depth--;
			} else if (!JSON_NODE_HOLDS_OBJECT(node)) {
				continue;
			} else {
				build_member_name(&p, &stack[depth - 1], key_buf, sizeof(key_buf));
				if (build_member_kept(&filter, &stack[depth - 1], depth, &p))
					continue;
			}
		}
		/* after a value: close what ends here, or go to the next one */
		for (;;) {
			SKIP_WS();
			if (depth < filter.whole_from)
				filter.whole_from = 0;
			if (depth == 0)
				goto out;
			if (*p == ',') {
				p++;
				SKIP_WS();
				if (!JSON_NODE_HOLDS_OBJECT(stack[depth - 1].node))
					break;
				build_member_name(&p, &stack[depth - 1], key_buf, sizeof(key_buf));
				if (build_member_kept(&filter, &stack[depth - 1], depth, &p))
					break;
				continue;
			}
			/* '}' or ']' */
			p++;
			depth--;
		}
	}
out:
#undef SKIP_WS
	return root;
}

/**
 * confab_json_parse:
 * @data: the bytes; they need not end in a NUL
 * @len: their length
 * @max_depth: the deepest nesting allowed
 * @error: return location for a #GError
 *
 * confab_json_check(), then the tree is built directly from the checked
 * text: json-glib's own parser tokenizes with GScanner and took a tenth of
 * the main loop's time under load.
 *
 * Returns: (transfer full): the root node (not sealed: json-glib seals
 *   by hashing every object, and nothing here needs it)
 */
JsonNode *
confab_json_parse(const gchar *data, gsize len, guint max_depth, GError **error)
{
	if (!confab_json_check(data, len, max_depth, error))
		return NULL;
	return build_tree(data, len, max_depth, NULL);
}

/**
 * confab_json_parse_kept:
 * @data: the bytes; they need not end in a NUL
 * @len: their length
 * @max_depth: the deepest nesting allowed
 * @keep: the object members to build
 * @error: return location for a #GError
 *
 * confab_json_parse() of a document of which a reader wants a few members:
 * the text is checked whole, but the tree holds only the members @keep
 * names (at any depth), and everything inside those it names whole. An
 * upstream's chat.completion chunk is mostly what Confab does not read
 * (ids, times, fingerprints, token details), and a json-glib member costs
 * a node, a copy of its name and a hash table entry.
 *
 * Returns: (transfer full): the root node
 */
JsonNode *
confab_json_parse_kept(const gchar *data,
		       gsize len,
		       guint max_depth,
		       const ConfabJsonKeep *keep,
		       GError **error)
{
	g_return_val_if_fail(keep != NULL && keep->names != NULL, NULL);
	if (!confab_json_check(data, len, max_depth, error))
		return NULL;
	return build_tree(data, len, max_depth, keep);
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
		/* in order, without a list of the names or a lookup of each */
		JsonObjectIter iter;
		const gchar *name;
		JsonNode *member;
		gboolean first = TRUE;
		json_object_iter_init_ordered(&iter, json_node_get_object(node));
		g_string_append_c(out, '{');
		while (json_object_iter_next_ordered(&iter, &name, &member)) {
			if (!first)
				g_string_append_c(out, ',');
			first = FALSE;
			confab_json_append_string(out, name);
			g_string_append_c(out, ':');
			confab_json_append_node(out, member);
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
	JsonNode *node;

	if (str == NULL)
		return NULL;
	node = confab_json_parse(str, strlen(str), SMALL_DEPTH, NULL);
	if (node != NULL)
		return node;
	/* deeper than that (a request may be, up to [limits]
	 * max_json_depth), or not ours after all: as before */
	return json_from_string(str, NULL);
}

/**
 * confab_json_get_string:
 * @object: a JSON object
 * @name: a member name
 *
 * Returns: (nullable): the member's value if it is a string, else %NULL
 */
const gchar *
confab_json_get_string(JsonObject *object, const gchar *name)
{
	JsonNode *node = json_object_get_member(object, name);

	if (node == NULL || !JSON_NODE_HOLDS_VALUE(node) ||
	    json_node_get_value_type(node) != G_TYPE_STRING)
		return NULL;
	return json_node_get_string(node);
}

/**
 * confab_json_get_object:
 * @object: a JSON object
 * @name: a member name
 *
 * Returns: (nullable): the member's value if it is an object, else %NULL
 */
JsonObject *
confab_json_get_object(JsonObject *object, const gchar *name)
{
	JsonNode *node = json_object_get_member(object, name);
	return node != NULL && JSON_NODE_HOLDS_OBJECT(node) ? json_node_get_object(node) : NULL;
}
