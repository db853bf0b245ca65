// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * topology.c - `hkvctl topology`: what an operator needs to place a KV
 * cache: nodes with CPUs, memory and distances, hugepage pools per node and
 * size, THP mode, hugetlbfs mounts, RLIMIT_MEMLOCK, hugetlb cgroup limits,
 * and the GPUs/NICs with their node.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <hugetlbfs.h>

#include "hkvctl.h"
#include "machine.h"

static void topo_usage(FILE *f)
{
	fprintf(f,
"usage: hkvctl topology [--json]\n"
"\n"
"Prints the NUMA nodes (CPUs, memory, distances), each node's hugepage pools\n"
"per page size (total/free/surplus; reserved and overcommit are system-wide),\n"
"the THP mode, hugetlbfs mounts and their page sizes, RLIMIT_MEMLOCK, the\n"
"hugetlb cgroup limits of this process, and the GPUs, NICs and accelerators\n"
"on PCI with their NUMA node (-1: the firmware did not say).\n"
"\n"
"  --json     one JSON object on stdout\n"
"  -h, --help this text\n");
}

static void print_nodes_text(const struct machine *t)
{
	char a[32], b[32];

	printf("available: %d node%s (", t->nnodes, t->nnodes == 1 ? "" : "s");
	for (int i = 0; i < t->nnodes; i++)
		printf("%s%d", i ? "," : "", t->node[i].id);
	printf(")\n");
	for (int i = 0; i < t->nnodes; i++) {
		const struct machine_node *n = &t->node[i];

		printf("node %d cpus: %s\n", n->id, n->cpulist);
		printf("node %d size: %s  free: %s\n", n->id,
		       ctl_fmt_size(n->mem_total, a, sizeof(a)),
		       ctl_fmt_size(n->mem_free, b, sizeof(b)));
	}
	printf("node distances:\nnode ");
	for (int i = 0; i < t->nnodes; i++)
		printf("%4d", t->node[i].id);
	printf("\n");
	for (int i = 0; i < t->nnodes; i++) {
		printf("%4d:", t->node[i].id);
		for (int k = 0; k < t->node[i].ndist; k++)
			printf("%4d", t->node[i].dist[k]);
		printf("\n");
	}
}

static void print_pools_text(const struct machine *t)
{
	char s[32], a[32];

	printf("\nhugepage pools (pages):\n  %-6s %-5s %10s %10s %10s %10s\n",
	       "size", "node", "total", "free", "surplus", "free bytes");
	for (int k = 0; k < t->nsizes; k++) {
		const struct machine_size *z = &t->size[k];

		for (int i = 0; i < t->nnodes; i++) {
			const struct ctl_pool *p = &t->node[i].pool[k];

			printf("  %-6s %-5d %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10s\n",
			       ctl_fmt_size(z->page_bytes, s, sizeof(s)), t->node[i].id,
			       p->total, p->free, p->surplus,
			       ctl_fmt_size(p->free * z->page_bytes, a, sizeof(a)));
		}
		printf("  %-6s %-5s %10" PRIu64 " %10" PRIu64 " %10" PRIu64
		       " %10s  reserved %" PRIu64 ", overcommit %" PRIu64 "\n",
		       s, "all", z->global.total, z->global.free, z->global.surplus,
		       ctl_fmt_size(z->global.free * z->page_bytes, a, sizeof(a)),
		       z->global.resv, z->global.overcommit);
	}
	if (!t->nsizes)
		printf("  (none: the kernel has no hugetlb support)\n");
	for (int k = 0; k < t->nsizes; k++)
		printf("hugetlbfs %-6s %s\n", ctl_fmt_size(t->size[k].page_bytes, s, sizeof(s)),
		       t->size[k].mount ? t->size[k].mount : "(not mounted)");
}

static void print_limits_text(const struct machine *t)
{
	char a[32], b[32];

	printf("\nTHP: enabled [%s], defrag [%s]\n", t->thp_enabled, t->thp_defrag);
	printf("RLIMIT_MEMLOCK: soft %s, hard %s\n",
	       t->memlock_soft == RLIM_INFINITY ? "unlimited" :
	       ctl_fmt_size(t->memlock_soft, a, sizeof(a)),
	       t->memlock_hard == RLIM_INFINITY ? "unlimited" :
	       ctl_fmt_size(t->memlock_hard, b, sizeof(b)));
	if (!t->ncg)
		printf("hugetlb cgroup: none (no hugetlb controller for this process)\n");
	for (int i = 0; i < t->ncg; i++)
		printf("hugetlb cgroup %s: %s limit %s, usage %s\n", t->cg[i].path,
		       t->cg[i].size, t->cg[i].limited ?
		       ctl_fmt_size(t->cg[i].limit, a, sizeof(a)) : "max",
		       ctl_fmt_size(t->cg[i].usage, b, sizeof(b)));
}

static void print_pci_text(const struct machine *t)
{
	printf("\nPCI devices (GPU/NIC/accelerator):\n");
	if (!t->npci)
		printf("  none found\n");
	for (int i = 0; i < t->npci; i++) {
		const struct machine_pci *d = &t->pci[i];

		printf("  %s %-5s class %s vendor %s node %2d driver %s%s%s\n",
		       d->addr, d->kind, d->class, d->vendor, d->node,
		       d->driver[0] ? d->driver : "-",
		       d->ifname[0] ? " if " : "", d->ifname);
	}
}

static void print_json(const struct machine *t)
{
	struct json j;

	json_begin(&j, stdout);
	json_arr(&j, "nodes");
	for (int i = 0; i < t->nnodes; i++) {
		const struct machine_node *n = &t->node[i];

		json_obj(&j, NULL);
		json_i64(&j, "node", n->id);
		json_str(&j, "cpulist", n->cpulist);
		json_ints(&j, "cpus", n->cpus, (size_t)n->ncpus);
		json_u64(&j, "mem_total_bytes", n->mem_total);
		json_u64(&j, "mem_free_bytes", n->mem_free);
		json_ints(&j, "distances", n->dist, (size_t)n->ndist);
		json_arr(&j, "hugepages");
		for (int k = 0; k < t->nsizes; k++) {
			json_obj(&j, NULL);
			json_u64(&j, "page_bytes", t->size[k].page_bytes);
			json_u64(&j, "total", n->pool[k].total);
			json_u64(&j, "free", n->pool[k].free);
			json_u64(&j, "surplus", n->pool[k].surplus);
			json_close(&j);
		}
		json_close(&j);
		json_close(&j);
	}
	json_close(&j);
	machine_json_rest(t, &j);
	json_end(&j);
}

int cmd_topology(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct machine *t;
	bool json = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h': topo_usage(stdout); return TOOL_OK;
		default: topo_usage(stderr); return TOOL_USAGE;
		}
	}
	if (ctl_no_operands("topology", argc, argv))
		return TOOL_USAGE;
	r = machine_read(&t);
	if (r) {
		ctl_err("topology", "cannot read the topology: %s", strerror(-r));
		return TOOL_FAIL;
	}
	if (json) {
		print_json(t);
	} else {
		print_nodes_text(t);
		print_pools_text(t);
		print_limits_text(t);
		print_pci_text(t);
	}
	machine_free(t);
	return TOOL_OK;
}
