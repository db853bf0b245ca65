// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * main.c - hkv-bench: separates allocator and descriptor quality from
 * end-to-end noise. Dispatches to one subcommand per file (bench.h); the
 * subcommands other issues own are weak references, so the tool links and
 * says so before their files exist.
 */
#include <stdio.h>
#include <string.h>

#include "../lib/tool.h"
#include "bench.h"

int bench_prefault(int argc, char **argv) __attribute__((weak));
int bench_access(int argc, char **argv) __attribute__((weak));
int bench_trace(int argc, char **argv) __attribute__((weak));
int bench_evict(int argc, char **argv) __attribute__((weak));

struct subcmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *what;
};

static void usage(FILE *f, const struct subcmd *cmds, size_t n)
{
	fprintf(f, "usage: hkv-bench SUBCOMMAND [options]   (hkv-bench SUBCOMMAND --help)\n\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-10s %s%s\n", cmds[i].name, cmds[i].what,
			cmds[i].fn ? "" : " [not built in]");
	fprintf(f, "\nEach subcommand takes --json (one JSON object on stdout) and\n"
		"--csv DIR; `make bench` runs the standard suite into bench-results/.\n");
}

int main(int argc, char **argv)
{
	const struct subcmd cmds[] = {
		{ "churn", bench_churn, "steady-state churn near full occupancy, with baselines" },
		{ "scale", bench_scale, "churn cost from 16K to 16M pages" },
		{ "lanes", bench_lanes, "alloc throughput, 1 and 2 threads, own lanes or one" },
		{ "prefault", bench_prefault, "pool creation: prefault bandwidth vs memset" },
		{ "access", bench_access, "touching KV pages: hugepage vs 4K backing" },
		{ "trace", bench_trace, "probe overhead, untraced and traced" },
		{ "evict", bench_evict, "planned eviction: victim choice and coalescing" },
	};
	size_t n = sizeof(cmds) / sizeof(cmds[0]);

	if (argc >= 2 && !strcmp(argv[1], "--version"))
		return tool_version("hkv-bench");
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout, cmds, n);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		if (!cmds[i].fn) {
			fprintf(stderr, "hkv-bench: subcommand %s is not built in\n", cmds[i].name);
			return 2;
		}
		return cmds[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "hkv-bench: unknown subcommand '%s'\n", argv[1]);
	usage(stderr, cmds, n);
	return 2;
}
