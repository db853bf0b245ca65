/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * json_writer.h - the one JSON writer of the hugekv tools (hkvctl,
 * hkv-trace, hkv-bench, ...), after bpftool's json_writer.c: it tracks
 * commas and nesting, and writes every string, keys included, as valid
 * JSON whatever bytes it is given.
 *
 * Escaping: '"' and '\\' with a backslash; control characters (below 0x20,
 * and 0x7f) as \n, \t, ... or \u00XX; UTF-8 sequences pass through; every
 * byte that is not part of a valid UTF-8 sequence (a path from /proc, a
 * truncated name) becomes U+FFFD, so a parser never sees invalid UTF-8.
 * Numbers: integers exactly; doubles with %.6g, NaN and infinities as null.
 *
 * Layout: one line, members separated by ", " and keys by ": "
 * ({"a": 1, "b": [1, 2]}), so a shell test can grep a top-level key.
 */
#ifndef HKV_TOOLS_JSON_WRITER_H
#define HKV_TOOLS_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH	32

struct json {
	FILE *f;
	int depth;
	char open[JSON_MAX_DEPTH];	/* '{' or '[' per level */
	bool first[JSON_MAX_DEPTH];	/* nothing written at this level yet */
};

/* open the top-level object on @f */
void json_begin(struct json *j, FILE *f);
/* close every open level and the top object, newline, flush */
void json_end(struct json *j);

/* @key is NULL inside arrays */
void json_obj(struct json *j, const char *key);
void json_arr(struct json *j, const char *key);
/* close the innermost object or array */
void json_close(struct json *j);
void json_obj_end(struct json *j);
void json_arr_end(struct json *j);

void json_u64(struct json *j, const char *key, uint64_t v);
void json_i64(struct json *j, const char *key, int64_t v);
void json_dbl(struct json *j, const char *key, double v);
void json_bool(struct json *j, const char *key, bool v);
void json_null(struct json *j, const char *key);
/* NULL @v writes null */
void json_str(struct json *j, const char *key, const char *v);
/* @n bytes of @v, NUL bytes included (escaped as \u0000) */
void json_strn(struct json *j, const char *key, const char *v, size_t n);
/* an array of @n ints */
void json_ints(struct json *j, const char *key, const int *v, size_t n);
/* the key (and separator); the caller then writes one JSON value to j->f */
void json_key(struct json *j, const char *key);

/*
 * Field tables: the members of a struct written in table order, named
 * once (as lib/stats_print.c prints struct hkv_stats):
 *
 *	static const struct json_field node_fields[] = {
 *		JSON_FIELD(struct hkv_plan_node, node, JSON_INT),
 *		JSON_FIELD(struct hkv_plan_node, npages, JSON_U64), ...
 *	};
 *	json_fields(j, pn, node_fields, JSON_NFIELDS(node_fields));
 */
enum json_type {
	JSON_U64,	/* uint64_t */
	JSON_UINT,	/* unsigned */
	JSON_INT,	/* int */
	JSON_BOOL,	/* bool */
	JSON_DBL,	/* double */
	JSON_STR,	/* char[]: a string */
	JSON_STR0,	/* char[]: a string, null when empty */
};

struct json_field {
	const char *name;
	size_t off;
	enum json_type type;
};

#define JSON_FIELD_AS(type, member, key, t)	{ key, offsetof(type, member), t }
#define JSON_FIELD(type, member, t)		JSON_FIELD_AS(type, member, #member, t)
#define JSON_NFIELDS(table)			(sizeof(table) / sizeof((table)[0]))

/* write the fields of @obj that @f describes, as members of the open object */
void json_fields(struct json *j, const void *obj, const struct json_field *f, size_t n);

/* a JSON string literal of @n bytes of @s on @f, escaped as above */
void json_write_string(FILE *f, const char *s, size_t n);

#endif /* HKV_TOOLS_JSON_WRITER_H */
