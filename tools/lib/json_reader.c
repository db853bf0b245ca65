// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * json_reader.c - find a top-level member of a JSON object (RFC 8259
 * syntax, checked as far as it is read). Enough for one tool to read
 * another's --json; not a general parser: values other than the one asked
 * for are skipped, not built.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "json_reader.h"
#include "parse.h"

#define MAX_DEPTH	64

static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

/* past the string at @p (on its '"'), or NULL; *same: it equals @key
 * (compared after the simple escapes; a \u escape never equals a key) */
static const char *string(const char *p, const char *key, bool *same)
{
	size_t k = 0;
	bool eq = key != NULL;

	for (p++; *p != '"'; p++) {
		char c = *p;

		if (!c || (unsigned char)c < 0x20)
			return NULL;
		if (c == '\\') {
			static const char esc[] = "\"\\/bfnrtu", val[] = "\"\\/\b\f\n\r\t";
			const char *e = *++p ? strchr(esc, *p) : NULL;

			if (!e)
				return NULL;
			if (*e == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)p[i]))
						return NULL;
				p += 4;
				eq = false;
				continue;
			}
			c = val[e - esc];
		}
		if (eq && key[k] == c)
			k++;
		else
			eq = false;
	}
	if (same)
		*same = eq && !key[k];
	return p + 1;
}

static const char *value(const char *p, int depth);

/* past the object or array at @p */
static const char *composite(const char *p, int depth)
{
	char close = *p == '{' ? '}' : ']';
	bool obj = *p == '{';

	if (depth > MAX_DEPTH)
		return NULL;
	p = ws(p + 1);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (obj) {
			if (*p != '"' || !(p = string(p, NULL, NULL)))
				return NULL;
			p = ws(p);
			if (*p++ != ':')
				return NULL;
		}
		if (!(p = value(ws(p), depth + 1)))
			return NULL;
		p = ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
		p = ws(p);
	}
}

/* past the value at @p, or NULL */
static const char *value(const char *p, int depth)
{
	if (*p == '{' || *p == '[')
		return composite(p, depth);
	if (*p == '"')
		return string(p, NULL, NULL);
	if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	if (*p == '-')
		p++;
	if (!isdigit((unsigned char)*p))
		return NULL;
	while (isdigit((unsigned char)*p) || *p == '.' || *p == 'e' || *p == 'E' ||
	       ((*p == '+' || *p == '-') && (p[-1] == 'e' || p[-1] == 'E')))
		p++;
	return p;
}

/* the value of the top-level member @key: 0 with *v on it and *end past
 * it, -ENOENT or -EINVAL */
static int member(const char *text, const char *key, const char **v, const char **end)
{
	const char *p = ws(text);
	bool same;

	if (*p != '{')
		return -EINVAL;
	p = ws(p + 1);
	if (*p == '}')
		return -ENOENT;
	for (;;) {
		if (*p != '"' || !(p = string(p, key, &same)))
			return -EINVAL;
		p = ws(p);
		if (*p++ != ':')
			return -EINVAL;
		*v = ws(p);
		if (!(*end = value(*v, 1)))
			return -EINVAL;
		if (same)
			return 0;
		p = ws(*end);
		if (*p == '}')
			return -ENOENT;
		if (*p++ != ',')
			return -EINVAL;
		p = ws(p);
	}
}

/* the non-negative integer from @v to @end */
static int number(const char *v, const char *end, uint64_t *out)
{
	char num[32];

	if (end <= v || (size_t)(end - v) >= sizeof(num))
		return -EINVAL;
	memcpy(num, v, (size_t)(end - v));
	num[end - v] = 0;
	/* digits only: the count parser without its suffixes */
	for (const char *c = num; *c; c++)
		if (!isdigit((unsigned char)*c))
			return -EINVAL;
	return tool_parse_count(num, out) ? -EINVAL : 0;
}

int json_get_u64(const char *text, const char *key, uint64_t *out)
{
	const char *v, *end;
	int err = member(text, key, &v, &end);

	if (err)
		return err;
	if (!strncmp(v, "null", 4))
		return -ENODATA;
	return number(v, end, out);
}

int json_get_u64_array(const char *text, const char *key, uint64_t *out, size_t max,
		       size_t *n)
{
	const char *v, *end, *p, *e;
	size_t k = 0;
	int err = member(text, key, &v, &end);

	if (err)
		return err;
	if (!strncmp(v, "null", 4))
		return -ENODATA;
	if (*v != '[')
		return -EINVAL;
	p = ws(v + 1);
	if (*p == ']') {
		*n = 0;
		return 0;
	}
	for (;;) {
		if (!(e = value(p, 2)) || (*p < '0' || *p > '9'))
			return -EINVAL;
		if (k == max)
			return -E2BIG;
		if (number(p, e, &out[k]))
			return -EINVAL;
		k++;
		p = ws(e);
		if (*p == ']')
			break;
		if (*p++ != ',')
			return -EINVAL;
		p = ws(p);
	}
	*n = k;
	return 0;
}
