/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bench.h - the registry of hkv-bench benchmarks. Each benchmark is one
 * `struct bench` (after the kernel's BPF selftest bench): its options and
 * the steps main.c runs in order, so option parsing, --help, --json, exit
 * statuses and the JSON envelope are written once, in main.c.
 */
#ifndef HKV_BENCH_H
#define HKV_BENCH_H

#include <getopt.h>
#include <stddef.h>

#include "../lib/json_writer.h"

/* option values main.c keeps for itself; benchmarks use others */
enum { BENCH_OPT_JSON = 0x10000, BENCH_OPT_HELP = 'h' };

/**
 * struct bench - one benchmark
 * @name: the subcommand
 * @what: one line for `hkv-bench --help`
 * @usage: the subcommand's --help text (--json and --help are added)
 * @opts: its long options, {NULL} terminated
 * @more_opts: a second table it also takes (scale takes churn's), or NULL
 * @size: bytes of state, zeroed, passed to every step
 * @init: defaults, or NULL
 * @parse: one option (getopt's value and argument): 0 or -EINVAL
 * @validate: after the options (@json: --json was given), derived values
 *	and checks; -EINVAL (message printed) is bad usage, or NULL
 * @measure: the runs; -errno: failed, nothing reported; > 0: reported,
 *	but the exit status is 1 (a configuration failed)
 * @report: with @j the members of the open JSON object (main wrote
 *	"bench" and "version"), else the text on stdout
 * @fini: frees what the steps allocated, or NULL
 */
struct bench {
	const char *name, *what, *usage;
	const struct option *opts, *more_opts;
	size_t size;
	void (*init)(void *st);
	int (*parse)(void *st, int opt, const char *arg);
	int (*validate)(void *st, int json);
	int (*measure)(void *st);
	void (*report)(void *st, struct json *j);
	void (*fini)(void *st);
};

extern const struct bench bench_churn, bench_scale, bench_lanes, bench_evict;
extern const struct bench bench_replay;
extern const struct bench bench_named;	/* named.c */
/* weak: a binary built without them says so */
extern const struct bench bench_prefault __attribute__((weak));
extern const struct bench bench_access __attribute__((weak));
extern const struct bench bench_trace __attribute__((weak));

#endif /* HKV_BENCH_H */
