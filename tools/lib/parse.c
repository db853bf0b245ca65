// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * parse.c - sizes, counts, integers and seconds from the command line
 * (parse.h has the rules). Exact integer arithmetic: "1.5G" is 1610612736,
 * not a double rounded, and 16E is an error instead of 0.
 */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse.h"

typedef unsigned __int128 u128;

#define FRAC_MAX_DIGITS	18

/* "digits[.digits]" at *s: the value times 10^*ndec; *s moves past it */
static int parse_decimal(const char **s, u128 *v, unsigned *ndec)
{
	const char *p = *s;
	u128 x = 0;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		x = x * 10 + (unsigned)(*p - '0');
		if (x > UINT64_MAX)
			return -ERANGE;
	}
	*ndec = 0;
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		for (; isdigit((unsigned char)*p); p++) {
			if (++*ndec > FRAC_MAX_DIGITS)
				return -EINVAL;
			x = x * 10 + (unsigned)(*p - '0');
		}
	}
	*v = x;
	*s = p;
	return 0;
}

/* value * mul / 10^ndec, whole and within 64 bits */
static int scale(u128 v, unsigned ndec, u128 mul, uint64_t *out)
{
	u128 div = 1;

	while (ndec--)
		div *= 10;
	if (mul && v > ~(u128)0 / mul)
		return -ERANGE;
	v *= mul;
	if (v % div)
		return -EINVAL;	/* a fraction of a byte or of a count */
	v /= div;
	if (v > UINT64_MAX)
		return -ERANGE;
	*out = (uint64_t)v;
	return 0;
}

static int parse_scaled(const char *s, const char *units, unsigned base, bool bytes,
			uint64_t *out)
{
	const char *u;
	unsigned ndec;
	u128 v, mul = 1;
	int err;

	if (!s)
		return -EINVAL;
	err = parse_decimal(&s, &v, &ndec);
	if (err)
		return err;
	if (*s && (u = strchr(units, toupper((unsigned char)*s)))) {
		for (long k = u - units + 1; k > 0; k--)
			mul *= base;
		s++;
		if (bytes && (*s == 'i' || *s == 'I') && (s[1] == 'B' || s[1] == 'b'))
			s++;
	}
	if (bytes && (*s == 'B' || *s == 'b'))
		s++;
	if (*s)
		return -EINVAL;
	return scale(v, ndec, mul, out);
}

/**
 * tool_parse_size() - a byte count, suffixes powers of 1024
 * @s: "4096", "64K", "64KiB", "1.5G", "200GB", "0"
 * @out: receives the bytes
 *
 * Return: 0, -EINVAL (not a size), -ERANGE (above 2^64 - 1).
 */
int tool_parse_size(const char *s, uint64_t *out)
{
	return parse_scaled(s, "KMGTPE", 1024, true, out);
}

/**
 * tool_parse_count() - a count, suffixes powers of 1000
 * @s: "16384", "16K", "3.5M", "1G"
 * @out: receives the count
 *
 * Return: 0, -EINVAL (not a count), -ERANGE (above 2^64 - 1).
 */
int tool_parse_count(const char *s, uint64_t *out)
{
	return parse_scaled(s, "KMGT", 1000, false, out);
}

/* an optional '-' and a decimal digit: no spaces, no '+', no hex, no
 * "nan" or "inf" (which strtol and strtod would take) */
static bool plain_start(const char *s)
{
	if (*s == '-')
		s++;
	return isdigit((unsigned char)*s) && !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X'));
}

int tool_parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !plain_start(s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int tool_parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	if (!s || !plain_start(s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || !isfinite(v))
		return -EINVAL;
	if (errno || !(v >= lo && v <= hi))
		return -ERANGE;
	*out = v;
	return 0;
}

const char *tool_parse_strerror(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case -ERANGE:
		return "out of range";
	default:
		return "not a decimal number";
	}
}
