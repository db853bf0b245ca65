/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * maps.h - a process's mappings as /proc/PID/smaps and numa_maps describe
 * them (maps.c), for `hkvctl verify`.
 */
#ifndef HKVCTL_MAPS_H
#define HKVCTL_MAPS_H

#include "hkvctl.h"

#define MAPS_MAX_NODES	64

struct map {
	uint64_t start, end;
	char path[256];
	uint64_t page_bytes;		/* KernelPageSize */
	uint64_t rss, thp_bytes, hugetlb_bytes;
	bool hugetlb, thp_advised, dontfork;	/* VmFlags ht, hg, dc */
	char policy[64];		/* numa_maps: default, bind:0, ... */
	int policy_nodes[MAPS_MAX_NODES], npolicy_nodes;
	uint64_t node_pages[MAPS_MAX_NODES];	/* numa_maps N<n>= */
	uint64_t numa_page_bytes;	/* numa_maps kernelpagesize_kB */
};

struct maps {
	int n, cap;
	struct map *m;
};

/* read smaps and numa_maps of @pid; -errno (-ENOENT: no such process) */
int maps_read(int pid, struct maps *out);
void maps_free(struct maps *ms);

#endif /* HKVCTL_MAPS_H */
