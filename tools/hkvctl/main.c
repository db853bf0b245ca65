// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hkvctl - inspect and prepare a machine for hugekv: topology, a dry-run
 * plan of a pool, per-node hugepage reservation, and verification of a
 * running process's hugepages. Conventions of numactl and hugeadm: sizes
 * with K/M/G/T suffixes (powers of 1024), nodes by number.
 */
#include <stdio.h>
#include <string.h>

#include "hkvctl.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *what;
} cmds[] = {
	{ "topology", cmd_topology, "nodes, CPUs, memory, distances, hugepage pools, THP, "
				    "hugetlbfs mounts, memlock, cgroup limits, GPUs and NICs" },
	{ "plan", cmd_plan, "dry run of hkv_pool_create: page size per node, shortfalls, "
			    "what to reserve" },
	{ "reserve", cmd_reserve, "set a node's hugepage pool (root) and report what the "
				  "kernel granted" },
	{ "verify", cmd_verify, "page size and node of a running process's hugepages, "
				"flagging misplaced or downgraded memory" },
	{ "pools", cmd_pools, "named pools: size, page size, units, free, recoveries, "
			      "attached processes" },
	{ "pool", cmd_pool, "pool rm NAME [--force]: remove a named pool's files" },
	{ "metrics", cmd_metrics, "every pool's stats page as OpenMetrics: once, a textfile "
				  "for node_exporter, or served at /metrics" },
	{ "top", cmd_top, "a live view of every pool on the host from its stats page" },
	{ "mount", cmd_mount, "mount hugetlbfs of a page size (2M, 1G) on a directory for "
			      "named pools" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: hkvctl COMMAND [OPTIONS]   (hkvctl COMMAND --help for each)\n\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-9s %s\n", cmds[i].name, cmds[i].what);
	fprintf(f, "\nEvery command takes --json (one JSON object on stdout).\n"
		"Exit status: 0 ok, 1 a problem was found or the action failed, 2 usage.\n"
		"HKVCTL_ROOT=DIR reads /sys and /proc under DIR (a captured tree).\n"
		"See hkvctl(1) and Kbuild-docs/admin-guide/hkvctl.rst.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return TOOL_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return TOOL_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		return tool_version("hkvctl");
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "hkvctl: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return TOOL_USAGE;
}
