/*
 * Copyright 2026 The Confab authors
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */

#include "config.h"

#include <math.h>
#include <string.h>

#include "confab-test-helper.h"
#include "util/confab-error.h"
#include "util/confab-json.h"

/* The strict JSON checker in front of json-glib, and the string writer. */

#define DEPTH 64

static gboolean
check(const gchar *text, GError **error)
{
	return confab_json_check(text, strlen(text), DEPTH, error);
}

static void
assert_valid(const gchar *text)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) node = NULL;

	if (!check(text, &error))
		g_error("'%s' refused: %s", text, error->message);
	node = confab_json_parse(text, strlen(text), DEPTH, &error);
	if (node == NULL)
		g_error("'%s' passed the check but not the parser: %s", text, error->message);
}

static void
assert_invalid_len(const gchar *text, gsize len, gint code)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) error2 = NULL;
	g_autoptr(JsonNode) node = NULL;

	if (confab_json_check(text, len, DEPTH, &error)) {
		g_autofree gchar *escaped = g_strescape(text, NULL);
		g_error("'%s' accepted", escaped);
	}
	g_assert_error(error, CONFAB_ERROR, code);
	/* confab_json_parse() refuses it the same way */
	node = confab_json_parse(text, len, DEPTH, &error2);
	g_assert_null(node);
	g_assert_error(error2, CONFAB_ERROR, code);
}

static void
assert_invalid(const gchar *text)
{
	assert_invalid_len(text, strlen(text), CONFAB_ERROR_INVALID_JSON);
}

static void
test_valid_documents(void)
{
	const gchar *docs[] = {
	    "{}",
	    "[]",
	    "  {}  ",
	    "\t\r\n[ ]\n",
	    "[[]]",
	    "[{}]",
	    "{\"a\":{}}",
	    "{\"a\":[]}",
	    "{\"a\":1,\"b\":[true,false,null],\"c\":\"x\"}",
	    "{ \"a\" : 1 , \"b\" : 2 }",
	    "[1,2,3]",
	    "\"a string\"",
	    "0",
	    "true",
	    "null",
	    "{\"\":\"\"}",
	    "{\"a\":1,\"a\":2}",
	    "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]",
	    "[\"\\u00e9\\u00E9\\u20ac\"]",
	    "[\"\\ud83d\\ude00\"]",
	    "[\"h\xc3\xa9llo \xf0\x9f\x8c\x8d\"]",
	    "[\"\x7f\"]",
	    "{\"model\":\"agt_x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
	};
	for (guint i = 0; i < G_N_ELEMENTS(docs); i++)
		assert_valid(docs[i]);
}

static void
test_structure_errors(void)
{
	const gchar *docs[] = {
	    "",
	    "   ",
	    "\n",
	    "[",
	    "]",
	    "{",
	    "}",
	    "[1,]",
	    "[,1]",
	    "[,]",
	    "[1 2]",
	    "[1,,2]",
	    "{\"a\"}",
	    "{\"a\":}",
	    "{\"a\":1,}",
	    "{,}",
	    "{\"a\" 1}",
	    "{\"a\":1 \"b\":2}",
	    "{a:1}",
	    "{'a':1}",
	    "['a']",
	    "{1:1}",
	    "{\"a\":1]",
	    "[}",
	    "{]",
	    "[1}",
	    "[[]",
	    "[[]]]",
	    "tru",
	    "nul",
	    "fals",
	    "True",
	    "NULL",
	    "undefined",
	    "[true false]",
	    "truex",
	    "[truex]",
	    "\"unterminated",
	    "[\"unterminated]",
	    "/* comment */ {}",
	    "{} // comment",
	};
	for (guint i = 0; i < G_N_ELEMENTS(docs); i++)
		assert_invalid(docs[i]);
}

static void
test_trailing_garbage(void)
{
	const gchar *docs[] = {
	    "{} x",
	    "{}{}",
	    "[1]]",
	    "1 2",
	    "\"a\"\"b\"",
	    "{},",
	    "[] []",
	    "null null",
	    "{}\v",
	    "{}\f",
	};
	for (guint i = 0; i < G_N_ELEMENTS(docs); i++)
		assert_invalid(docs[i]);
	/* a NUL byte after the document is garbage too, not an end */
	assert_invalid_len("{}\0", 3, CONFAB_ERROR_INVALID_JSON);
	assert_invalid_len("{\"a\":\"b\0c\"}", 11, CONFAB_ERROR_INVALID_JSON);
}

static void
test_numbers(void)
{
	const gchar *good[] = {
	    "0",
	    "-0",
	    "1",
	    "-1",
	    "10",
	    "1.5",
	    "-0.0",
	    "0.5",
	    "1e10",
	    "1E10",
	    "1e+10",
	    "1e-10",
	    "-1.25e-3",
	    "123456789",
	    "[0,-0,0.0,1e0]",
	    "9007199254740993",
	};
	const gchar *bad[] = {
	    "01",    "-01", "00",    "-",     "+1",   ".5",   "1.",	  "1.e5",
	    "1e",    "1e+", "1e-",   "1E",    "0x10", "NaN",  "Infinity", "-Infinity",
	    "1_000", "--1", "1.2.3", "1e5e5", "[-]",  "[1.]", "[.1]",	  "- 1",
	};
	for (guint i = 0; i < G_N_ELEMENTS(good); i++)
		assert_valid(good[i]);
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++)
		assert_invalid(bad[i]);
}

static void
test_string_escapes(void)
{
	const gchar *bad[] = {
	    "[\"\\x41\"]",
	    "[\"\\'\"]",
	    "[\"\\a\"]",
	    "[\"\\u12\"]",
	    "[\"\\u123\"]",
	    "[\"\\uZZZZ\"]",
	    "[\"\\u12G4\"]",
	    "[\"\\",
	    "[\"\\u",
	    "[\"\\u00",
	    /* raw control characters inside a string */
	    "[\"a\tb\"]",
	    "[\"a\nb\"]",
	    "[\"a\rb\"]",
	    "[\"\x01\"]",
	    "[\"\x1f\"]",
	};
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++)
		assert_invalid(bad[i]);
}

static void
test_lone_surrogates(void)
{
	const gchar *bad[] = {
	    "[\"\\ud800\"]",
	    "[\"\\udbff\"]",
	    "[\"\\udc00\"]",
	    "[\"\\udfff\"]",
	    "[\"\\ud800x\"]",
	    "[\"\\ud800\\u0041\"]",
	    "[\"\\ud800\\ud800\"]",
	    "[\"\\ude00\\ud83d\"]",
	    "[\"\\ud83d\\n\"]",
	    "[\"\\ud83d\\",
	    "[\"\\ud83d\\u",
	    "{\"\\ud800\":1}",
	};
	for (guint i = 0; i < G_N_ELEMENTS(bad); i++)
		assert_invalid(bad[i]);
}

static void
test_surrogate_pair_decodes(void)
{
	const gchar *text = "[\"a\\ud83d\\ude00b\\u00e9\"]";
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) node = confab_json_parse(text, strlen(text), DEPTH, &error);

	g_assert_no_error(error);
	g_assert_cmpstr(json_array_get_string_element(json_node_get_array(node), 0),
			==,
			"a\xf0\x9f\x98\x80"
			"b\xc3\xa9");
}

static void
test_nul_refused(void)
{
	/* json-glib would cut the string at U+0000: refused, never truncated */
	const gchar *docs[] = {
	    "[\"\\u0000\"]",
	    "[\"abc\\u0000def\"]",
	    "{\"\\u0000\":1}",
	    "{\"content\":\"x\\u0000\"}",
	};
	for (guint i = 0; i < G_N_ELEMENTS(docs); i++)
		assert_invalid_len(docs[i], strlen(docs[i]), CONFAB_ERROR_INVALID_VALUE);
	/* other low code points are fine escaped */
	assert_valid("[\"\\u0001\\u001f\"]");
	/* a raw NUL byte is refused as well */
	assert_invalid_len("[\"a\0b\"]", 7, CONFAB_ERROR_INVALID_JSON);
}

static void
test_invalid_utf8(void)
{
	const gchar *docs[] = {
	    "[\"\xff\"]",
	    "[\"\xfe\"]",
	    "[\"\xc0\xaf\"]",	      /* overlong '/' */
	    "[\"\xe0\x80\xaf\"]",     /* overlong */
	    "[\"\xed\xa0\x80\"]",     /* a surrogate encoded in UTF-8 */
	    "[\"\xe2\x82\"]",	      /* truncated */
	    "[\"\x80\"]",	      /* a lone continuation byte */
	    "[\"\xf4\x90\x80\x80\"]", /* past U+10FFFF */
	    "[\"\xf8\x88\x80\x80\x80\"]",
	    "[\"ok\"] \xff",
	    "\xff",
	};
	for (guint i = 0; i < G_N_ELEMENTS(docs); i++)
		assert_invalid(docs[i]);
}

static gchar *
nested(guint depth, gboolean objects)
{
	GString *s = g_string_new(NULL);
	for (guint i = 0; i < depth; i++)
		g_string_append(s, objects ? "{\"a\":" : "[");
	g_string_append(s, "1");
	for (guint i = 0; i < depth; i++)
		g_string_append(s, objects ? "}" : "]");
	return g_string_free(s, FALSE);
}

static void
test_depth(void)
{
	for (guint o = 0; o < 2; o++) {
		g_autofree gchar *at = nested(DEPTH, o);
		g_autofree gchar *over = nested(DEPTH + 1, o);
		g_autofree gchar *under = nested(DEPTH - 1, o);
		g_autoptr(GError) error = NULL;

		assert_valid(at);
		assert_valid(under);
		g_assert_false(confab_json_check(over, strlen(over), DEPTH, &error));
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_JSON);
		g_assert_nonnull(strstr(error->message, "64"));
	}
	/* empty containers count as a level too */
	{
		GString *s = g_string_new(NULL);
		g_autoptr(GError) error = NULL;
		for (guint i = 0; i < DEPTH; i++)
			g_string_append_c(s, '[');
		for (guint i = 0; i < DEPTH; i++)
			g_string_append_c(s, ']');
		g_assert_true(confab_json_check(s->str, s->len, DEPTH, NULL));
		g_string_prepend(s, "[");
		g_string_append(s, "]");
		g_assert_false(confab_json_check(s->str, s->len, DEPTH, &error));
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_JSON);
		g_string_free(s, TRUE);
	}
	/* a mix of arrays and objects */
	{
		GString *s = g_string_new(NULL);
		for (guint i = 0; i < DEPTH / 2; i++)
			g_string_append(s, "{\"k\":[");
		for (guint i = 0; i < DEPTH / 2; i++)
			g_string_append(s, "]}");
		assert_valid(s->str);
		g_string_free(s, TRUE);
	}
	/* siblings do not add up */
	{
		g_autofree gchar *deep = nested(DEPTH - 1, FALSE);
		g_autofree gchar *wide = g_strdup_printf("[%s,%s,%s]", deep, deep, deep);
		assert_valid(wide);
	}
	/* depth 0 allows scalars only */
	g_assert_true(confab_json_check("1", 1, 0, NULL));
	g_assert_false(confab_json_check("[]", 2, 0, NULL));
}

static void
test_depth_bomb(void)
{
	/* json-glib 1.6 overflows its stack near 100,000 levels: the checker
	 * refuses it without recursing */
	const gsize n = 100000;
	g_autofree gchar *open = g_malloc(n);
	g_autofree gchar *both = g_malloc(2 * n);
	g_autoptr(GError) error = NULL;
	g_autoptr(GError) error2 = NULL;
	g_autoptr(GError) error3 = NULL;
	g_autoptr(JsonNode) node = NULL;

	memset(open, '[', n);
	g_assert_false(confab_json_check(open, n, DEPTH, &error));
	g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_JSON);
	node = confab_json_parse(open, n, DEPTH, &error2);
	g_assert_null(node);
	g_assert_error(error2, CONFAB_ERROR, CONFAB_ERROR_INVALID_JSON);

	memset(both, '[', n);
	memset(both + n, ']', n);
	g_assert_false(confab_json_check(both, 2 * n, 10000, &error3));
	g_assert_error(error3, CONFAB_ERROR, CONFAB_ERROR_INVALID_JSON);
	/* the checker itself is iterative: a huge cap is no problem for it */
	g_assert_true(confab_json_check(both, 2 * n, 2 * n, NULL));
	memset(both, '{', n);
	g_assert_false(confab_json_check(both, 2 * n, 2 * n, NULL));
}

static void
test_parse_values(void)
{
	const gchar *text = "{\"s\":\"x\\\"y\",\"i\":-42,\"d\":2.5,\"b\":true,\"n\":null,"
			    "\"a\":[1,\"two\"]}";
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) node = confab_json_parse(text, strlen(text), DEPTH, &error);
	JsonObject *obj;

	g_assert_no_error(error);
	g_assert_true(JSON_NODE_HOLDS_OBJECT(node));
	obj = json_node_get_object(node);
	g_assert_cmpstr(json_object_get_string_member(obj, "s"), ==, "x\"y");
	g_assert_cmpint(json_object_get_int_member(obj, "i"), ==, -42);
	g_assert_cmpfloat(json_object_get_double_member(obj, "d"), ==, 2.5);
	g_assert_true(json_object_get_boolean_member(obj, "b"));
	g_assert_true(json_object_get_null_member(obj, "n"));
	g_assert_cmpuint(json_array_get_length(json_object_get_array_member(obj, "a")), ==, 2);
}

/* The value json-glib made of the single element of @doc, as a double;
 * FALSE if the document was refused. */
static gboolean
parse_one_number(const gchar *doc, gdouble *value)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) node = confab_json_parse(doc, strlen(doc), DEPTH, &error);
	JsonNode *elem;

	if (node == NULL) {
		g_assert_true(error->domain == CONFAB_ERROR);
		g_assert_true(error->code == CONFAB_ERROR_INVALID_JSON ||
			      error->code == CONFAB_ERROR_INVALID_VALUE);
		return FALSE;
	}
	elem = json_array_get_element(json_node_get_array(node), 0);
	if (json_node_get_value_type(elem) == G_TYPE_INT64)
		*value = (gdouble)json_node_get_int(elem);
	else
		*value = json_node_get_double(elem);
	return TRUE;
}

static void
test_integer_overflow_not_mangled(void)
{
	/* json-glib 1.6 wraps integers outside int64 (2^63 becomes -2^63, 2^64
	 * becomes -1): the checker must refuse what json-glib would mangle, or
	 * the value must come out right */
	struct {
		const gchar *doc;
		gdouble value;
	} cases[] = {
	    {"[9223372036854775808]", 9223372036854775808.0},
	    {"[-9223372036854775809]", -9223372036854775809.0},
	    {"[18446744073709551616]", 18446744073709551616.0},
	    {"[18446744073709551617]", 18446744073709551617.0},
	    {"[99999999999999999999]", 99999999999999999999.0},
	    {"[-99999999999999999999999]", -99999999999999999999999.0},
	};
	gdouble v = 0;

	/* the ends of the range are exact */
	g_assert_true(parse_one_number("[9223372036854775807]", &v));
	g_assert_cmpfloat(v, ==, 9223372036854775807.0);
	g_assert_true(parse_one_number("[-9223372036854775808]", &v));
	g_assert_cmpfloat(v, ==, -9223372036854775808.0);

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		if (!parse_one_number(cases[i].doc, &v))
			continue; /* refused: fine */
		if (v != cases[i].value)
			g_error("%s parsed as %g", cases[i].doc, v);
	}
}

static void
test_number_overflow_not_infinite(void)
{
	/* 1e400 is valid JSON text but no double: json-glib makes it inf, which
	 * it then writes back as "inf.0" */
	const gchar *docs[] = {"[1e400]", "[-1e400]", "[1e309]", "[123e999999999]"};
	gdouble v = 0;

	for (guint i = 0; i < G_N_ELEMENTS(docs); i++) {
		if (parse_one_number(docs[i], &v) && !isfinite(v))
			g_error("%s parsed as %g", docs[i], v);
	}
	/* underflow to zero is harmless */
	g_assert_true(parse_one_number("[1e-400]", &v));
	g_assert_cmpfloat(v, ==, 0.0);
}

static void
test_to_string_is_json(void)
{
	/* what Confab writes (stored parts, upstream bodies, SSE) is JSON that
	 * its own strict checker accepts, numbers included */
	const gchar *docs[] = {
	    "[0.5]",
	    "[2.5e-7]",
	    "[-0.0]",
	    "[123]",
	    "[1e16]",
	    "[1e17]",
	    "[1e20]",
	    "[1E+25]",
	    "[1.5e300]",
	    "[1e308]",
	    "[100000000000000000000.0]",
	    "{\"schema\":{\"maximum\":1e21,\"minimum\":-1e21}}",
	};
	for (guint i = 0; i < G_N_ELEMENTS(docs); i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(JsonNode) node =
		    confab_json_parse(docs[i], strlen(docs[i]), DEPTH, &error);
		g_autofree gchar *text = NULL;
		g_autoptr(GString) appended = g_string_new(NULL);
		g_autoptr(JsonNode) back = NULL;

		g_assert_no_error(error);
		text = confab_json_to_string(node);
		if (!confab_json_check(text, strlen(text), DEPTH, &error))
			g_error("%s was written as %s: %s", docs[i], text, error->message);
		confab_json_append_node(appended, node);
		g_assert_cmpstr(appended->str, ==, text);
		/* and reads back as the same value */
		back = confab_json_parse(text, strlen(text), DEPTH, &error);
		g_assert_no_error(error);
		g_assert_true(json_node_equal(node, back));
	}
}

static void
test_append_string_escapes(void)
{
	g_autoptr(GString) out = g_string_new(NULL);

	confab_json_append_string(out, "a\"b\\c/d\ne\rf\tg\bh\fi\x01j\x1fk\x7fl");
	g_assert_cmpstr(out->str, ==, "\"a\\\"b\\\\c/d\\ne\\rf\\tg\\bh\\fi\\u0001j\\u001fk\x7fl\"");

	g_string_truncate(out, 0);
	confab_json_append_string(out, "h\xc3\xa9llo \xf0\x9f\x8c\x8d \xe2\x80\xa8");
	/* non-ASCII is kept as UTF-8, not escaped */
	g_assert_cmpstr(out->str, ==, "\"h\xc3\xa9llo \xf0\x9f\x8c\x8d \xe2\x80\xa8\"");

	g_string_truncate(out, 0);
	confab_json_append_string(out, "");
	g_assert_cmpstr(out->str, ==, "\"\"");

	g_string_truncate(out, 0);
	confab_json_append_string(out, NULL);
	g_assert_cmpstr(out->str, ==, "null");

	/* appends, does not replace */
	g_string_assign(out, "x:");
	confab_json_append_string(out, "y");
	g_assert_cmpstr(out->str, ==, "x:\"y\"");

	/* with a length: an embedded NUL is escaped, and the length is obeyed */
	g_string_truncate(out, 0);
	confab_json_append_string_len(out, "a\0b", 3);
	g_assert_cmpstr(out->str, ==, "\"a\\u0000b\"");
	g_string_truncate(out, 0);
	confab_json_append_string_len(out, "abcdef", 3);
	g_assert_cmpstr(out->str, ==, "\"abc\"");
}

static void
test_append_string_round_trip(void)
{
	/* every byte 1..127 and some non-ASCII, each round-trips exactly */
	g_autoptr(GString) all = g_string_new(NULL);
	g_autoptr(GString) out = g_string_new(NULL);
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) node = NULL;

	for (guint c = 1; c < 128; c++)
		g_string_append_c(all, (gchar)c);
	g_string_append(all, "\xc3\xa9\xf0\x9f\x98\x80\xe2\x80\xa8\xef\xbb\xbf");
	confab_json_append_string(out, all->str);
	/* the output is itself strict JSON */
	g_assert_true(confab_json_check(out->str, out->len, DEPTH, &error));
	g_assert_no_error(error);
	node = confab_json_parse(out->str, out->len, DEPTH, &error);
	g_assert_no_error(error);
	g_assert_cmpstr(json_node_get_string(node), ==, all->str);
	/* no raw control character survives */
	for (gsize i = 0; i < out->len; i++)
		g_assert_cmpuint((guchar)out->str[i], >=, 0x20);
}

static void
test_append_node(void)
{
	g_autoptr(GString) out = g_string_new(NULL);
	g_autoptr(JsonNode) node = confab_json_from_string("{ \"a\" : [ 1 , \"x\" ] }");
	g_autofree gchar *text = NULL;

	g_assert_nonnull(node);
	confab_json_append_node(out, node);
	g_assert_cmpstr(out->str, ==, "{\"a\":[1,\"x\"]}");
	g_string_truncate(out, 0);
	confab_json_append_node(out, NULL);
	g_assert_cmpstr(out->str, ==, "null");
	text = confab_json_to_string(node);
	g_assert_cmpstr(text, ==, "{\"a\":[1,\"x\"]}");
	g_assert_null(confab_json_from_string(NULL));
}

/* A bad string is named by its place, as OpenAI names a field. */
static void
test_bad_text_names_the_field(void)
{
	const struct {
		const gchar *doc;
		gint code;
		const gchar *param;
	} cases[] = {
	    {"{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
	     CONFAB_ERROR_INVALID_JSON,
	     "messages[0].content"},
	    {"{\"messages\":[{},{\"content\":[{\"type\":\"text\",\"text\":\"a\\u0000\"}]}]}",
	     CONFAB_ERROR_INVALID_VALUE,
	     "messages[1].content[0].text"},
	    {"{\"model\":\"caf\xe9\"}", CONFAB_ERROR_INVALID_JSON, "model"},
	    {"[\"\xc0\xaf\"]", CONFAB_ERROR_INVALID_JSON, "[0]"},
	    {"\"\xff\"", CONFAB_ERROR_INVALID_JSON, NULL},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autoptr(GError) error = NULL;
		g_assert_false(
		    confab_json_check(cases[i].doc, strlen(cases[i].doc), DEPTH, &error));
		g_assert_error(error, CONFAB_ERROR, cases[i].code);
		g_assert_cmpstr(confab_error_get_param(error), ==, cases[i].param);
	}
}

/* The tree confab_json_parse() builds is the one json-glib's parser builds
 * from the same text: compared through json-glib's generator, on samples
 * and on every input of the fuzzing corpora. */
static void
assert_same_tree(const gchar *text, gsize len)
{
	g_autoptr(JsonNode) ours = NULL;
	g_autoptr(JsonParser) parser = json_parser_new_immutable();
	g_autofree gchar *ours_text = NULL;
	g_autofree gchar *theirs_text = NULL;
	g_autofree gchar *copy = g_strndup(text, len);

	/* the builder must not read past len: give it no NUL to stop at */
	g_autofree gchar *unterminated = g_malloc(len + 1);
	memcpy(unterminated, text, len);
	unterminated[len] = '7';

	ours = confab_json_parse(unterminated, len, DEPTH, NULL);
	if (ours == NULL)
		return; /* refused: other tests cover what is */
	g_assert_true(json_parser_load_from_data(parser, copy, (gssize)len, NULL));
	ours_text = json_to_string(ours, FALSE);
	theirs_text = json_to_string(json_parser_get_root(parser), FALSE);
	g_assert_cmpstr(ours_text, ==, theirs_text);
	g_assert_true(json_node_equal(ours, json_parser_get_root(parser)));
}

static void
test_tree_like_json_glib(void)
{
	const gchar *samples[] = {
	    "{}",
	    "[]",
	    " [ 1 , -2 , 3.5 , -0.25e-3 , 1E3 , 0 , -0 , 9223372036854775807 ] ",
	    "{\"a\":{\"b\":[true,false,null,{\"c\":\"d\"}]},\"e\":[]}",
	    "\"plain\"",
	    "\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\u20ac \\ud83d\\ude00 end\"",
	    "{\"k\":\"caf\xc3\xa9\",\"k2\":\"\xf0\x9f\x98\x80\"}",
	    "{\"dup\":1,\"other\":2,\"dup\":3}",
	    "[[[[[[[[[[1]]]]]]]]]]",
	    "{\"model\":\"agt_x\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	    "\"temperature\":0.7,\"max_tokens\":100,\"stream\":true}",
	    "12345",
	    "-1.5",
	    "true",
	    "null",
	    "[\"\", {\"\":\"\"}]",
	    "\t\r\n{\"a\" : 1 ,\n\"b\" :\t[ ] }\n",
	};
	const gchar *corpora[] = {"chat-request", "sse-parser", "dbus-props", "list-query"};
	guint files = 0;

	for (guint i = 0; i < G_N_ELEMENTS(samples); i++)
		assert_same_tree(samples[i], strlen(samples[i]));
	for (guint c = 0; c < G_N_ELEMENTS(corpora); c++) {
		g_autofree gchar *dir_path =
		    g_test_build_filename(G_TEST_DIST, "fuzz", "corpus", corpora[c], NULL);
		g_autoptr(GDir) dir = g_dir_open(dir_path, 0, NULL);
		const gchar *name;
		if (dir == NULL)
			continue;
		while ((name = g_dir_read_name(dir)) != NULL) {
			g_autofree gchar *path = g_build_filename(dir_path, name, NULL);
			g_autofree gchar *contents = NULL;
			gsize len = 0;
			if (!g_file_get_contents(path, &contents, &len, NULL))
				continue;
			assert_same_tree(contents, len);
			files++;
		}
	}
	g_test_message("compared the trees of %u corpus inputs", files);
	g_assert_cmpuint(files, >, 100);
}

/* one string read alone, as the stored text blocks are read without a
 * tree: the checker's rules, and what follows is left alone */
static void
test_read_string(void)
{
	const struct {
		const gchar *in;
		const gchar *out; /* NULL: refused */
		gsize used;
	} cases[] = {
	    {"\"plain\"}]", "plain", 7},
	    {"\"a\\\"b\\n\\u00e9\\ud83d\\ude00\"", "a\"b\n\xc3\xa9\xf0\x9f\x98\x80", 26},
	    {"\"\"", "", 2},
	    {"\"unterminated", NULL, 0},
	    {"plain", NULL, 0},
	    {"\"\\u0000\"", NULL, 0},
	    {"\"\\ud800\"", NULL, 0},
	    {"\"\xff\"", NULL, 0},
	    {"\"ctl\n\"", NULL, 0},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		gsize used = 0;
		g_autofree gchar *out =
		    confab_json_read_string(cases[i].in, strlen(cases[i].in), &used);
		g_assert_cmpstr(out, ==, cases[i].out);
		if (cases[i].out != NULL)
			g_assert_cmpuint(used, ==, cases[i].used);
	}
}

static const gchar *const kept_names[] = {"choices", "message", "content", "usage", "n", NULL};
static const gchar *const kept_whole[] = {"logprobs", NULL};
static const ConfabJsonKeep kept = {kept_names, kept_whole};

static gchar *
parse_kept(const gchar *text)
{
	g_autoptr(GError) error = NULL;
	g_autoptr(JsonNode) node = confab_json_parse_kept(text, strlen(text), DEPTH, &kept, &error);

	g_assert_no_error(error);
	g_assert_nonnull(node);
	return confab_json_to_string(node);
}

/* Only the members named are built, at any depth; inside one named whole,
 * everything; what is skipped may hold anything, escapes and brackets in
 * strings included. */
static void
test_parse_kept(void)
{
	static const struct {
		const gchar *in;
		const gchar *out;
	} cases[] = {
	    {"{\"id\":\"x\",\"n\":1}", "{\"n\":1}"},
	    {"{\"id\":\"x\"}", "{}"},
	    {"{ \"a\" : 1 , \"n\" : 2 , \"b\" : 3 }", "{\"n\":2}"},
	    {"{\"a\":-1.5e3,\"b\":true,\"c\":null,\"d\":false,\"n\":0}", "{\"n\":0}"},
	    {"{\"a\":\"q\\\"}{][\\\\\",\"n\":\"\\u00e9\"}", "{\"n\":\"\u00e9\"}"},
	    {"{\"a\":{\"n\":1,\"b\":[{\"c\":\"]\"}]},\"n\":[1,{\"n\":2,\"z\":3}]}",
	     "{\"n\":[1,{\"n\":2}]}"},
	    {"{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},"
	     "\"logprobs\":{\"content\":[{\"token\":\"hi\",\"top\":[{\"id\":1}]}],\"x\":{}},"
	     "\"finish_reason\":\"stop\"}],\"usage\":{\"total_tokens\":3,"
	     "\"details\":{\"cached\":0}},\"system_fingerprint\":\"fp\"}",
	     "{\"choices\":[{\"message\":{\"content\":\"hi\"},\"logprobs\":{\"content\":"
	     "[{\"token\":\"hi\",\"top\":[{\"id\":1}]}],\"x\":{}}}],\"usage\":{}}"},
	    /* after a whole member closes, sifting goes on */
	    {"{\"logprobs\":{\"a\":{\"b\":1}},\"usage\":{\"a\":1,\"n\":2}}",
	     "{\"logprobs\":{\"a\":{\"b\":1}},\"usage\":{\"n\":2}}"},
	    {"{\"logprobs\":7,\"usage\":{\"a\":1}}", "{\"logprobs\":7,\"usage\":{}}"},
	    {"[{\"a\":1,\"n\":2},3]", "[{\"n\":2},3]"},
	    {"\"text\"", "\"text\""},
	};

	for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
		g_autofree gchar *out = parse_kept(cases[i].in);
		g_assert_cmpstr(out, ==, cases[i].out);
	}
}

/* What is skipped is checked all the same. */
static void
test_parse_kept_refuses(void)
{
	static const gchar *const bad[] = {
	    "{\"a\":[1,}",
	    "{\"a\":\"\\x\",\"n\":1}",
	    "{\"a\":01}",
	    "{\"a\":1,\"n\":2",
	    "{\"a\":\"\xff\"}",
	};

	for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
		g_autoptr(GError) error = NULL;
		g_autoptr(JsonNode) node =
		    confab_json_parse_kept(bad[i], strlen(bad[i]), DEPTH, &kept, &error);
		g_assert_null(node);
		g_assert_error(error, CONFAB_ERROR, CONFAB_ERROR_INVALID_JSON);
	}
}

int
main(int argc, char **argv)
{
	confab_test_init(&argc, &argv, FALSE);
	g_test_add_func("/confab/json/valid-documents", test_valid_documents);
	g_test_add_func("/confab/json/structure-errors", test_structure_errors);
	g_test_add_func("/confab/json/trailing-garbage", test_trailing_garbage);
	g_test_add_func("/confab/json/numbers", test_numbers);
	g_test_add_func("/confab/json/string-escapes", test_string_escapes);
	g_test_add_func("/confab/json/lone-surrogates", test_lone_surrogates);
	g_test_add_func("/confab/json/surrogate-pair-decodes", test_surrogate_pair_decodes);
	g_test_add_func("/confab/json/nul-refused", test_nul_refused);
	g_test_add_func("/confab/json/invalid-utf8", test_invalid_utf8);
	g_test_add_func("/confab/json/depth", test_depth);
	g_test_add_func("/confab/json/depth-bomb", test_depth_bomb);
	g_test_add_func("/confab/json/parse-values", test_parse_values);
	g_test_add_func("/confab/json/integer-overflow-not-mangled",
			test_integer_overflow_not_mangled);
	g_test_add_func("/confab/json/number-overflow-not-infinite",
			test_number_overflow_not_infinite);
	g_test_add_func("/confab/json/to-string-is-json", test_to_string_is_json);
	g_test_add_func("/confab/json/append-string-escapes", test_append_string_escapes);
	g_test_add_func("/confab/json/append-string-round-trip", test_append_string_round_trip);
	g_test_add_func("/confab/json/append-node", test_append_node);
	g_test_add_func("/confab/json/bad-text-names-the-field", test_bad_text_names_the_field);
	g_test_add_func("/confab/json/tree-like-json-glib", test_tree_like_json_glib);
	g_test_add_func("/confab/json/read-string", test_read_string);
	g_test_add_func("/confab/json/parse-kept", test_parse_kept);
	g_test_add_func("/confab/json/parse-kept-refuses", test_parse_kept_refuses);
	return g_test_run();
}
