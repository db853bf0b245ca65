/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * machine.h - the machine as hkvctl reads it (machine.c), shared by topology
 * and plan.
 */
#ifndef HKVCTL_MACHINE_H
#define HKVCTL_MACHINE_H

#include "hkvctl.h"

#define MACHINE_MAX_CPUS	4096
#define MACHINE_MAX_DIST	256
#define MACHINE_MAX_PCI	1024	/* SR-IOV NICs bring many functions */
#define MACHINE_MAX_CG	CTL_MAX_SIZES

struct machine_node {
	int id;
	char cpulist[512];
	int ncpus, ndist;
	int cpus[MACHINE_MAX_CPUS];
	int dist[MACHINE_MAX_DIST];
	uint64_t mem_total, mem_free;
	struct ctl_pool pool[CTL_MAX_SIZES];	/* per machine.size[] */
};

struct machine_size {
	uint64_t page_bytes;
	struct ctl_pool global;
	const char *mount;		/* hugetlbfs mount, NULL if none */
	bool libhugetlbfs;		/* gethugepagesizes() lists it */
};

struct machine_cg {
	char path[256];
	char size[16];			/* "2MB", "1GB" */
	bool limited;
	uint64_t limit, usage;
};

struct machine_pci {
	char addr[32], kind[8], class[16], vendor[16], device[16];
	char driver[64], ifname[128];
	int node;
};

struct machine {
	int nnodes, nsizes, ncg, npci;
	struct machine_node *node;
	struct machine_size size[CTL_MAX_SIZES];
	char thp_enabled[32], thp_defrag[32];
	uint64_t memlock_soft, memlock_hard;	/* RLIM_INFINITY = unlimited */
	struct machine_cg cg[MACHINE_MAX_CG];
	struct machine_pci pci[MACHINE_MAX_PCI];
};

int machine_read(struct machine **out);
void machine_free(struct machine *t);
/* index of the node with id @node, or -1 */
int machine_node_index(const struct machine *t, int node);
/* the rest of the topology JSON after "nodes" */
void machine_json_rest(const struct machine *t, struct json *j);

#endif /* HKVCTL_MACHINE_H */
