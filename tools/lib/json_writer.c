// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * json_writer.c - the tools' JSON writer (json_writer.h): nesting and
 * commas, and strings that are valid JSON for any input bytes.
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json_writer.h"

/* length of the valid UTF-8 sequence at @s (at most @n bytes), 0 if none:
 * no overlong forms, no surrogates, nothing above U+10FFFF (RFC 3629) */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0xc2 || c > 0xf4)
		return 0;	/* continuation byte, overlong lead, or too high */
	len = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	if (n < len)
		return 0;
	cp = c & (0x3f >> (len - 1));
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/**
 * json_write_string() - write @n bytes of @s as one JSON string literal
 * @f: the stream
 * @s: the bytes (any: NUL, control characters, invalid UTF-8)
 * @n: how many
 */
void json_write_string(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;

	fputc('"', f);
	while (p < end) {
		unsigned char c = *p;
		size_t len;

		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc(c, f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c == '\r') {
			fputs("\\r", f);
		} else if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
		} else if (c >= 0x80) {
			len = utf8_len(p, (size_t)(end - p));
			if (!len) {
				fputs("\\ufffd", f);	/* not UTF-8: replaced, never passed */
				p++;
				continue;
			}
			fwrite(p, 1, len, f);
			p += len;
			continue;
		} else {
			fputc(c, f);
		}
		p++;
	}
	fputc('"', f);
}

void json_begin(struct json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->open[0] = '{';
	j->first[0] = true;
	fputc('{', f);
}

void json_key(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputs(", ", j->f);
	j->first[j->depth] = false;
	if (key) {
		json_write_string(j->f, key, strlen(key));
		fputs(": ", j->f);
	}
}

static void json_open(struct json *j, const char *key, char c)
{
	json_key(j, key);
	fputc(c, j->f);
	if (j->depth < JSON_MAX_DEPTH - 1)
		j->depth++;
	j->open[j->depth] = c;
	j->first[j->depth] = true;
}

void json_obj(struct json *j, const char *key)
{
	json_open(j, key, '{');
}

void json_arr(struct json *j, const char *key)
{
	json_open(j, key, '[');
}

static void json_close_level(struct json *j)
{
	fputc(j->open[j->depth] == '[' ? ']' : '}', j->f);
	if (j->depth > 0)
		j->depth--;
}

void json_close(struct json *j)
{
	if (j->depth > 0)
		json_close_level(j);
}

void json_obj_end(struct json *j)
{
	json_close(j);
}

void json_arr_end(struct json *j)
{
	json_close(j);
}

void json_end(struct json *j)
{
	while (j->depth > 0)
		json_close_level(j);
	json_close_level(j);	/* the top object */
	fputc('\n', j->f);
	fflush(j->f);
}

void json_u64(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void json_i64(struct json *j, const char *key, int64_t v)
{
	json_key(j, key);
	fprintf(j->f, "%" PRId64, v);
}

void json_dbl(struct json *j, const char *key, double v)
{
	json_key(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.6g", v);
	else
		fputs("null", j->f);	/* JSON has no NaN or infinity */
}

void json_bool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	json_key(j, key);
	fputs("null", j->f);
}

void json_str(struct json *j, const char *key, const char *v)
{
	if (!v) {
		json_null(j, key);
		return;
	}
	json_strn(j, key, v, strlen(v));
}

void json_strn(struct json *j, const char *key, const char *v, size_t n)
{
	json_key(j, key);
	json_write_string(j->f, v, n);
}

void json_fields(struct json *j, const void *obj, const struct json_field *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const void *p = (const char *)obj + f[i].off;

		switch (f[i].type) {
		case JSON_U64:
			json_u64(j, f[i].name, *(const uint64_t *)p);
			break;
		case JSON_UINT:
			json_u64(j, f[i].name, *(const unsigned *)p);
			break;
		case JSON_INT:
			json_i64(j, f[i].name, *(const int *)p);
			break;
		case JSON_BOOL:
			json_bool(j, f[i].name, *(const bool *)p);
			break;
		case JSON_DBL:
			json_dbl(j, f[i].name, *(const double *)p);
			break;
		case JSON_STR:
		case JSON_STR0:
			json_str(j, f[i].name, f[i].type == JSON_STR0 && !*(const char *)p ?
				 NULL : (const char *)p);
			break;
		}
	}
}

void json_ints(struct json *j, const char *key, const int *v, size_t n)
{
	json_arr(j, key);
	for (size_t i = 0; i < n; i++)
		json_i64(j, NULL, v[i]);
	json_close(j);
}
