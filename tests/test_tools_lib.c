// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_tools_lib.c - tools/lib, shared by every tool: the JSON writer
 * (layout, escaping of quotes, control characters, NUL and bytes that are
 * not UTF-8), the reader of a top-level member, and the size and count parser (one meaning of the suffixes,
 * hex, signs and overflow near 2^64 rejected, nothing written on failure).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tools/lib/json_reader.h"
#include "../tools/lib/json_writer.h"
#include "../tools/lib/parse.h"
#include "../tools/lib/tool.h"

/* run @fn on a writer over a memory stream; the caller frees the text */
static char *json_text(void (*fn)(struct json *))
{
	struct json j;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	json_begin(&j, f);
	fn(&j);
	json_end(&j);
	fclose(f);
	return buf;
}

static void doc_nested(struct json *j)
{
	json_u64(j, "a", UINT64_MAX);
	json_i64(j, "b", INT64_MIN);
	json_arr(j, "c");
	json_u64(j, NULL, 1);
	json_obj(j, NULL);
	json_str(j, "d", NULL);
	json_close(j);
	json_arr_end(j);
	json_dbl(j, "e", NAN);
	json_dbl(j, "f", 0.5);
	json_bool(j, "g", false);
	json_obj(j, "h");
	json_obj_end(j);
}

static void test_json_layout(void **state)
{
	char *s;

	(void)state;
	s = json_text(doc_nested);
	assert_string_equal(s, "{\"a\": 18446744073709551615, \"b\": -9223372036854775808, "
			    "\"c\": [1, {\"d\": null}], \"e\": null, \"f\": 0.5, \"g\": false, "
			    "\"h\": {}}\n");
	free(s);
}

struct rec {
	uint64_t a;
	unsigned b;
	int c;
	bool d;
	double e;
	char f[8], g[8];
};

static const struct json_field rec_fields[] = {
	JSON_FIELD(struct rec, a, JSON_U64), JSON_FIELD(struct rec, b, JSON_UINT),
	JSON_FIELD_AS(struct rec, c, "see", JSON_INT), JSON_FIELD(struct rec, d, JSON_BOOL),
	JSON_FIELD(struct rec, e, JSON_DBL), JSON_FIELD(struct rec, f, JSON_STR),
	JSON_FIELD(struct rec, g, JSON_STR0),
};

static void doc_fields(struct json *j)
{
	static const struct rec r = { .a = UINT64_MAX, .b = UINT32_MAX, .c = -7, .d = true,
				      .e = 2.5, .f = "", .g = "" };
	static const struct rec q = { .e = INFINITY, .f = "x\"", .g = "y" };
	static const int v[] = { 3, -1 };

	json_obj(j, "r");
	json_fields(j, &r, rec_fields, JSON_NFIELDS(rec_fields));
	json_close(j);
	json_obj(j, "q");
	json_fields(j, &q, rec_fields, JSON_NFIELDS(rec_fields));
	json_close(j);
	json_ints(j, "v", v, 2);
	json_ints(j, "w", v, 0);
}

static void test_json_fields(void **state)
{
	char *s = json_text(doc_fields);

	(void)state;
	assert_string_equal(s, "{\"r\": {\"a\": 18446744073709551615, \"b\": 4294967295, "
			    "\"see\": -7, \"d\": true, \"e\": 2.5, \"f\": \"\", \"g\": null}, "
			    "\"q\": {\"a\": 0, \"b\": 0, \"see\": 0, \"d\": false, \"e\": null, "
			    "\"f\": \"x\\\"\", \"g\": \"y\"}, \"v\": [3, -1], \"w\": []}\n");
	free(s);
}

static char *escaped(const char *in, size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	json_write_string(f, in, n);
	fclose(f);
	return buf;
}

#define assert_escapes(in, want) do {					\
	char *got = escaped(in, sizeof(in) - 1);			\
	assert_string_equal(got, want);					\
	free(got);							\
} while (0)

static void test_json_escaping(void **state)
{
	(void)state;
	assert_escapes("plain /path", "\"plain /path\"");
	assert_escapes("q\"b\\", "\"q\\\"b\\\\\"");
	assert_escapes("\n\t\r\x01\x1f\x7f", "\"\\n\\t\\r\\u0001\\u001f\\u007f\"");
	assert_escapes("nul\0here", "\"nul\\u0000here\"");
	/* valid UTF-8 passes: 2, 3 and 4 byte sequences */
	assert_escapes("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
	/* not UTF-8: each bad byte is U+FFFD, the rest survives */
	assert_escapes("a\xff" "b", "\"a\\ufffdb\"");
	assert_escapes("\xc3", "\"\\ufffd\"");				/* truncated */
	assert_escapes("\xc0\xaf", "\"\\ufffd\\ufffd\"");		/* overlong '/' */
	assert_escapes("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");	/* overlong */
	assert_escapes("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");	/* surrogate */
	assert_escapes("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");	/* > U+10FFFF */
	assert_escapes("\x80x", "\"\\ufffdx\"");			/* lone continuation */
}

static void key_escaped(struct json *j)
{
	json_u64(j, "k\"\xff", 1);
}

static void test_json_keys_escaped(void **state)
{
	char *s = json_text(key_escaped);

	(void)state;
	assert_string_equal(s, "{\"k\\\"\\ufffd\": 1}\n");
	free(s);
}

static void test_parse_size(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "4096", 4096 }, { "4096B", 4096 }, { "64K", 65536 },
		{ "64k", 65536 }, { "64KiB", 65536 }, { "64KB", 65536 }, { "2M", 2 << 20 },
		{ "1G", 1ull << 30 }, { "1.5G", 3ull << 29 }, { "200G", 200ull << 30 },
		{ "1T", 1ull << 40 }, { "1P", 1ull << 50 }, { "15E", 15ull << 60 },
		{ "18446744073709551615", UINT64_MAX }, { "0.5K", 512 },
	};
	static const struct { const char *s; int err; } bad[] = {
		{ "", -EINVAL }, { "K", -EINVAL }, { "-1", -EINVAL }, { "+1", -EINVAL },
		{ " 1", -EINVAL }, { "1 ", -EINVAL }, { "0x10M", -EINVAL }, { "0x10", -EINVAL },
		{ "1e3", -EINVAL }, { "inf", -EINVAL }, { "nan", -EINVAL }, { "12Q", -EINVAL },
		{ "1.", -EINVAL }, { ".5G", -EINVAL }, { "1.3K", -EINVAL }, { "1KK", -EINVAL },
		{ "16E", -ERANGE }, { "18446744073709551616", -ERANGE },
		{ "17179869184G", -ERANGE }, { "99999999999999999999999", -ERANGE },
		{ "1.0000000000000000001", -EINVAL },
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 7;
		assert_int_equal(tool_parse_size(ok[i].s, &v), 0);
		assert_true(v == ok[i].v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_int_equal(tool_parse_size(bad[i].s, &v), bad[i].err);
		assert_true(v == 7);		/* unchanged on failure */
	}
	assert_int_equal(tool_parse_size(NULL, &v), -EINVAL);
}

static void test_parse_count(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(tool_parse_count("16K", &v), 0);
	assert_true(v == 16000);	/* counts are decimal, sizes binary */
	assert_int_equal(tool_parse_count("3.5M", &v), 0);
	assert_true(v == 3500000);
	assert_int_equal(tool_parse_count("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(tool_parse_count("18446744073709551.615K", &v), 0);
	assert_true(v == UINT64_MAX);
	v = 7;
	assert_int_equal(tool_parse_count("18446744073709552K", &v), -ERANGE);
	assert_int_equal(tool_parse_count("20T", &v), 0);
	assert_int_equal(tool_parse_count("16KiB", &v), -EINVAL);
	assert_int_equal(tool_parse_count("0x10M", &v), -EINVAL);
	assert_int_equal(tool_parse_count("0.5", &v), -EINVAL);	/* not whole */
	assert_int_equal(tool_parse_count("1P", &v), -EINVAL);
}

static void test_parse_int_double(void **state)
{
	double d = 7;
	long l = 7;

	(void)state;
	assert_int_equal(tool_parse_int("-3", -5, 5, &l), 0);
	assert_int_equal(l, -3);
	assert_int_equal(tool_parse_int("6", -5, 5, &l), -ERANGE);
	assert_int_equal(tool_parse_int("0x1", 0, 5, &l), -EINVAL);
	assert_int_equal(tool_parse_int(" 1", 0, 5, &l), -EINVAL);
	assert_int_equal(tool_parse_int("99999999999999999999", 0, LONG_MAX, &l), -ERANGE);
	assert_int_equal(l, -3);
	assert_int_equal(tool_parse_double("0.25", 0, 1, &d), 0);
	assert_true(d == 0.25);
	assert_int_equal(tool_parse_double("nan", 0, 1e9, &d), -EINVAL);
	assert_int_equal(tool_parse_double("-nan", -1e9, 1e9, &d), -EINVAL);
	assert_int_equal(tool_parse_double("inf", 0, INFINITY, &d), -EINVAL);
	assert_int_equal(tool_parse_double("1e999", 0, INFINITY, &d), -EINVAL);
	assert_int_equal(tool_parse_double("0x10", 0, 100, &d), -EINVAL);
	assert_int_equal(tool_parse_double("2", 0, 1, &d), -ERANGE);
	assert_true(d == 0.25);
}

static void test_json_get_u64(void **state)
{
	static const char doc[] =
		" {\"pools\": [{\"alloc\": 99}], \"note\": \"\\\"alloc\\\": 98, \\u0041\",\n"
		"  \"hist\": {\"alloc\": [1, 2.5e3, -1, true, false, null]}, \"al\\u006coc\": 97,"
		"  \"alloc\": 7, \"free\": null, \"big\": 18446744073709551615,"
		"  \"neg\": -1, \"frac\": 1.5, \"s\": \"x\"}";
	uint64_t v = 5;

	(void)state;
	/* only the top-level member: not inside the array, the nested object,
	 * the string, nor a key spelled with \u escapes */
	assert_int_equal(json_get_u64(doc, "alloc", &v), 0);
	assert_true(v == 7);
	assert_int_equal(json_get_u64(doc, "big", &v), 0);
	assert_true(v == UINT64_MAX);
	v = 5;
	assert_int_equal(json_get_u64(doc, "free", &v), -ENODATA);
	assert_int_equal(json_get_u64(doc, "evict", &v), -ENOENT);
	assert_int_equal(json_get_u64(doc, "neg", &v), -EINVAL);
	assert_int_equal(json_get_u64(doc, "frac", &v), -EINVAL);
	assert_int_equal(json_get_u64(doc, "s", &v), -EINVAL);
	assert_true(v == 5);
	assert_int_equal(json_get_u64("[1]", "a", &v), -EINVAL);
	assert_int_equal(json_get_u64("{\"a\": [1, }", "b", &v), -EINVAL);	/* malformed */
	assert_int_equal(json_get_u64("{\"a\": \"unterminated", "b", &v), -EINVAL);
	assert_int_equal(json_get_u64("{\"a\": 1", "b", &v), -EINVAL);	/* truncated */
	assert_int_equal(json_get_u64("{}", "a", &v), -ENOENT);
	assert_true(v == 5);
}

static void test_json_get_u64_array(void **state)
{
	static const char doc[] =
		"{\"timestamp\": 0, \"ids\": [0, 17 , 18446744073709551615], \"none\": [],"
		" \"n\": null, \"neg\": [1, -2], \"mix\": [1, \"2\"], \"frac\": [1.5],"
		" \"x\": {\"ids\": [9]}, \"bad\": [1,]}";
	uint64_t v[4] = { 5, 5, 5, 5 };
	size_t n = 99;

	(void)state;
	assert_int_equal(json_get_u64_array(doc, "ids", v, 4, &n), 0);
	assert_int_equal(n, 3);
	assert_true(v[0] == 0 && v[1] == 17 && v[2] == UINT64_MAX);
	assert_int_equal(json_get_u64_array(doc, "none", v, 4, &n), 0);
	assert_int_equal(n, 0);
	n = 99;
	assert_int_equal(json_get_u64_array(doc, "ids", v, 2, &n), -E2BIG);
	assert_int_equal(json_get_u64_array(doc, "n", v, 4, &n), -ENODATA);
	assert_int_equal(json_get_u64_array(doc, "neg", v, 4, &n), -EINVAL);
	assert_int_equal(json_get_u64_array(doc, "mix", v, 4, &n), -EINVAL);
	assert_int_equal(json_get_u64_array(doc, "frac", v, 4, &n), -EINVAL);
	assert_int_equal(json_get_u64_array(doc, "timestamp", v, 4, &n), -EINVAL);
	assert_int_equal(json_get_u64_array("{\"a\": [1]}", "b", v, 4, &n), -ENOENT);
	assert_int_equal(json_get_u64_array("{\"a\": [1, 2", "a", v, 4, &n), -EINVAL);
	assert_int_equal(n, 99);	/* untouched on failure */
	/* only the top-level member; a malformed member ends the search */
	assert_int_equal(json_get_u64_array("{\"x\": {\"a\": [9]}}", "a", v, 4, &n), -ENOENT);
	assert_int_equal(json_get_u64_array(doc, "zzz", v, 4, &n), -EINVAL);
}

static void test_version(void **state)
{
	(void)state;
	assert_true(strlen(tool_version_string) > 0);
	assert_non_null(strchr(tool_version_string, '.'));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_layout),
		cmocka_unit_test(test_json_fields),
		cmocka_unit_test(test_json_escaping),
		cmocka_unit_test(test_json_keys_escaped),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_parse_count),
		cmocka_unit_test(test_parse_int_double),
		cmocka_unit_test(test_json_get_u64),
		cmocka_unit_test(test_json_get_u64_array),
		cmocka_unit_test(test_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
