/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * tool.h - what every hugekv tool does the same way (bpftool's
 * conventions): exit status 0 ok, 1 the action failed or found a problem,
 * 2 bad usage; --version prints "NAME (hugekv) VERSION"; --help goes to
 * stdout and exits 0, a usage error names the problem on stderr and exits
 * 2; --json prints one JSON object on stdout (json_writer.h); errors are
 * "TOOL[ COMMAND]: message" on stderr. And the one clock the tools time
 * things with.
 */
#ifndef HKV_TOOLS_TOOL_H
#define HKV_TOOLS_TOOL_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>

enum { TOOL_OK = 0, TOOL_FAIL = 1, TOOL_USAGE = 2 };

/* the project version the tools were built with */
extern const char tool_version_string[];

/* print "NAME (hugekv) VERSION" on stdout; returns TOOL_OK */
int tool_version(const char *name);
/* "WHO: message" and a newline on stderr */
void tool_err(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* CLOCK_MONOTONIC, the clock of bpf_ktime_get_ns(), in ns and in seconds */
static inline uint64_t tool_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double tool_now_s(void)
{
	return (double)tool_now_ns() / 1e9;
}

#endif /* HKV_TOOLS_TOOL_H */
