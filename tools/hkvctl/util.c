// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * util.c - size and number parsing, messages, a small JSON writer.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "hkvctl.h"

/**
 * ctl_parse_size() - parse a byte count with an optional binary suffix
 * @s: e.g. "200G", "2M", "1g", "4096", "1.5T"; suffixes K M G T (powers
 *	of 1024, as numactl and hugeadm read them), an optional trailing "B"
 *	or "iB"
 * @out: receives the bytes
 *
 * Return: 0, or -EINVAL for anything else, zero included; -ERANGE on
 * overflow.
 */
int ctl_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGTP";
	const char *u;
	double v, mul = 1;
	char *end;

	if (!s || !*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s)
		return -EINVAL;
	if (*end) {
		u = strchr(units, toupper((unsigned char)*end));
		if (!u)
			return -EINVAL;
		mul = pow(1024, (double)(u - units + 1));
		end++;
		if (!strcasecmp(end, "iB") || !strcasecmp(end, "B"))
			end += strlen(end);
		if (*end)
			return -EINVAL;
	}
	v *= mul;
	if (v < 1 || v != v)
		return -EINVAL;
	if (v >= 18446744073709551616.0)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

/**
 * ctl_parse_int() - parse a decimal integer within [min, max]
 * @s: the text
 * @min: smallest value accepted
 * @max: largest value accepted
 * @out: receives the value
 *
 * Return: 0, or -EINVAL.
 */
int ctl_parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/**
 * ctl_fmt_size() - format bytes the way the other tools print them
 * @bytes: the count
 * @buf: output buffer
 * @n: its size
 *
 * Return: @buf, e.g. "2M", "1G", "1.50G", "512K".
 */
const char *ctl_fmt_size(uint64_t bytes, char *buf, size_t n)
{
	static const char units[] = "BKMGTP";
	double v = (double)bytes;
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, n, "%" PRIu64 "B", bytes);
	else if (v == (double)(uint64_t)v)
		snprintf(buf, n, "%" PRIu64 "%c", (uint64_t)v, units[i]);
	else
		snprintf(buf, n, "%.2f%c", v, units[i]);
	return buf;
}

int ctl_fmt(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = vsnprintf(buf, n, fmt, ap);
	va_end(ap);
	return r;
}

/**
 * ctl_err() - print "hkvctl CMD: message" to stderr
 * @cmd: subcommand name
 * @fmt: printf format
 */
void ctl_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "hkvctl %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- JSON --------------------------------------------------------------- */

void json_begin(struct ctl_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	fputc('{', f);
	j->open[0] = '{';
}

void json_end(struct ctl_json *j)
{
	while (j->depth > 0)
		json_close(j);
	fputs("}\n", j->f);
}

static void json_key(struct ctl_json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
	if (key)
		fprintf(j->f, "\"%s\":", key);
}

static void json_open(struct ctl_json *j, const char *key, char c)
{
	json_key(j, key);
	fputc(c, j->f);
	if (j->depth < 31)
		j->depth++;
	j->open[j->depth] = c;
	j->need_comma[j->depth] = false;
}

void json_obj(struct ctl_json *j, const char *key)
{
	json_open(j, key, '{');
}

void json_arr(struct ctl_json *j, const char *key)
{
	json_open(j, key, '[');
}

void json_close(struct ctl_json *j)
{
	if (j->depth == 0)
		return;
	fputc(j->open[j->depth] == '[' ? ']' : '}', j->f);
	j->depth--;
}

void json_u64(struct ctl_json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void json_i64(struct ctl_json *j, const char *key, int64_t v)
{
	json_key(j, key);
	fprintf(j->f, "%" PRId64, v);
}

void json_dbl(struct ctl_json *j, const char *key, double v)
{
	json_key(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.6g", v);
	else
		fputs("null", j->f);
}

void json_bool(struct ctl_json *j, const char *key, bool v)
{
	json_key(j, key);
	fputs(v ? "true" : "false", j->f);
}

/* strings from sysfs and /proc: escape what JSON requires */
void json_str(struct ctl_json *j, const char *key, const char *v)
{
	json_key(j, key);
	if (!v) {
		fputs("null", j->f);
		return;
	}
	fputc('"', j->f);
	for (; *v; v++) {
		unsigned char c = (unsigned char)*v;

		if (c == '"' || c == '\\')
			fprintf(j->f, "\\%c", c);
		else if (c < 0x20)
			fprintf(j->f, "\\u%04x", c);
		else
			fputc(c, j->f);
	}
	fputc('"', j->f);
}
