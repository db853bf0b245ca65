/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * topo.h - the machine as hkvctl reads it (topo.c), shared by topology
 * and plan.
 */
#ifndef HKVCTL_TOPO_H
#define HKVCTL_TOPO_H

#include "hkvctl.h"

#define TOPO_MAX_CPUS	4096
#define TOPO_MAX_DIST	256
#define TOPO_MAX_PCI	1024	/* SR-IOV NICs bring many functions */
#define TOPO_MAX_CG	CTL_MAX_SIZES

struct topo_node {
	int id;
	char cpulist[512];
	int ncpus, ndist;
	int cpus[TOPO_MAX_CPUS];
	int dist[TOPO_MAX_DIST];
	uint64_t mem_total, mem_free;
	struct ctl_pool pool[CTL_MAX_SIZES];	/* per topo.size[] */
};

struct topo_size {
	uint64_t page_bytes;
	struct ctl_pool global;
	const char *mount;		/* hugetlbfs mount, NULL if none */
	bool libhugetlbfs;		/* gethugepagesizes() lists it */
};

struct topo_cg {
	char path[256];
	char size[16];			/* "2MB", "1GB" */
	bool limited;
	uint64_t limit, usage;
};

struct topo_pci {
	char addr[32], kind[8], class[16], vendor[16], device[16];
	char driver[64], ifname[128];
	int node;
};

struct topo {
	int nnodes, nsizes, ncg, npci;
	struct topo_node *node;
	struct topo_size size[CTL_MAX_SIZES];
	char thp_enabled[32], thp_defrag[32];
	uint64_t memlock_soft, memlock_hard;	/* RLIM_INFINITY = unlimited */
	struct topo_cg cg[TOPO_MAX_CG];
	struct topo_pci pci[TOPO_MAX_PCI];
};

int topo_read(struct topo **out);
void topo_free(struct topo *t);
/* index of the node with id @node, or -1 */
int topo_node_index(const struct topo *t, int node);
/* the rest of the topology JSON after "nodes" */
void topo_json_rest(const struct topo *t, struct json *j);

#endif /* HKVCTL_TOPO_H */
