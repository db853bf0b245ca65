/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * bench.h - hkv-bench subcommands. Each takes argc/argv starting at the
 * subcommand's own name and returns the process exit status. Subcommands
 * live in their own .c file; main.c dispatches (weak references, so a
 * subcommand whose file is not there yet reports that instead of failing
 * the link).
 */
#ifndef HKV_BENCH_H
#define HKV_BENCH_H

int bench_churn(int argc, char **argv);		/* churn.c */
int bench_scale(int argc, char **argv);		/* scale.c */
int bench_lanes(int argc, char **argv);		/* lanes.c */
int bench_prefault(int argc, char **argv);	/* prefault.c */
int bench_access(int argc, char **argv);	/* access.c */
int bench_trace(int argc, char **argv);		/* trace.c */
int bench_evict(int argc, char **argv);		/* evict.c */

#endif /* HKV_BENCH_H */
