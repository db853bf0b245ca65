// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * util.c - formatting sizes and messages.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>

#include "hkvctl.h"

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
	static const char units[] = "BKMGTPE";
	double v = (double)bytes;
	int i = 0;

	while (v >= 1024 && i < 6) {
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
 * ctl_arg_size() - the SIZE of an option, in bytes (tools/lib/parse.h rules)
 * @cmd: subcommand, for the message
 * @opt: option name without "--"
 * @arg: the text
 * @min: smallest value accepted
 * @out: receives the bytes; unchanged on failure
 *
 * Return: 0, or -EINVAL with the reason printed.
 */
int ctl_arg_size(const char *cmd, const char *opt, const char *arg, uint64_t min,
		 uint64_t *out)
{
	uint64_t v;
	int err = tool_parse_size(arg, &v);
	char who[64];

	ctl_fmt(who, sizeof(who), "hkvctl %s", cmd);
	if (err == -ERANGE) {
		tool_err(who, "bad --%s '%s': more than 2^64 - 1 bytes", opt, arg);
		return -EINVAL;
	}
	if (err) {
		tool_err(who, "bad --%s '%s': not a size (decimal, K/M/G/T/P/E suffixes are "
			"powers of 1024, e.g. 200G, 1.5T, 2M)", opt, arg);
		return -EINVAL;
	}
	if (v < min) {
		tool_err(who, "bad --%s '%s': at least %" PRIu64 " bytes", opt, arg, min);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/**
 * ctl_arg_int() - the decimal integer of an option, within [min, max]
 * @cmd: subcommand, for the message
 * @opt: option name without "--"
 * @arg: the text
 * @min: smallest value accepted
 * @max: largest value accepted
 * @out: receives it; unchanged on failure
 *
 * Return: 0, or -EINVAL with the reason printed.
 */
int ctl_arg_int(const char *cmd, const char *opt, const char *arg, long min, long max,
		long *out)
{
	char who[64];

	if (!tool_parse_int(arg, min, max, out))
		return 0;
	ctl_fmt(who, sizeof(who), "hkvctl %s", cmd);
	tool_err(who, "bad --%s '%s': a whole number from %ld to %ld", opt, arg, min, max);
	return -EINVAL;
}

/**
 * ctl_no_operands() - after the options: nothing else may follow
 * @cmd: subcommand, for the message
 * @argc: argument count
 * @argv: arguments (getopt's optind is the first left)
 *
 * Return: 0, or -EINVAL with the first stray argument named.
 */
int ctl_no_operands(const char *cmd, int argc, char **argv)
{
	char who[64];

	if (optind >= argc)
		return 0;
	ctl_fmt(who, sizeof(who), "hkvctl %s", cmd);
	tool_err(who, "unexpected argument '%s'", argv[optind]);
	return -EINVAL;
}

/* how many units of @unit (> 0) hold @bytes, without the overflow of
 * (bytes + unit - 1) / unit near 2^64 */
uint64_t ctl_units(uint64_t bytes, uint64_t unit)
{
	return bytes / unit + (bytes % unit != 0);
}
