// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * workload.c - a process of known operation counts for the tracing tests.
 *
 * usage: trace-workload [--wait] [--memory] ALLOCS UNITS
 *
 * On an index-only pool of two lanes: ALLOCS calls of hkv_alloc (sizes
 * 1..13, any lane) plus one hkv_alloc_lanes and one failing hkv_alloc;
 * one hkv_free per successful allocation plus one failing hkv_free; then
 * UNITS units of 4 pages, all evicted by one hkv_evict(). --memory also
 * creates and destroys a small pool on 4 KiB pages (arena probes).
 * --wait prints "ready PID" and waits for SIGUSR1 before starting, so a
 * tracer can attach to this pid first. Prints what it did as one JSON
 * line: the counts the probes must report.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hugekv.h"

#define NPAGES	262144
#define MAXEXT	16

struct held {
	struct hkv_extent ext[MAXEXT];
	int n;
};

static unsigned long n_alloc, n_free;

static int die(const char *what, int err)
{
	fprintf(stderr, "trace-workload: %s: %s\n", what, hkv_strerror(err));
	return 1;
}

static int memory_pool(void)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 64, .page_bytes = 4096,
				   .backing = HKV_BACKING_SMALL, .numa_node = -1 };
	struct hkv_pool *p;
	int ret = hkv_pool_create(&o, &p);

	if (ret)
		return die("memory pool", ret);
	hkv_pool_destroy(p);
	return 0;
}

/* ALLOCS allocations, then free them all (odd ones first: fragmentation) */
static int churn(struct hkv_pool *p, unsigned long allocs)
{
	struct held *h = calloc(allocs + 1, sizeof(*h));
	uint64_t count[2] = { 3, 5 };
	struct hkv_extent bad = { 0, 0 };
	unsigned long i;

	if (!h)
		return die("calloc", -ENOMEM);
	for (i = 0; i < allocs; i++, n_alloc++) {
		h[i].n = hkv_alloc(p, 1 + i % 13, HKV_LANE_ANY, 0, h[i].ext, MAXEXT);
		if (h[i].n <= 0)
			return die("hkv_alloc", h[i].n);
	}
	h[allocs].n = hkv_alloc_lanes(p, count, 0, h[allocs].ext, MAXEXT);
	n_alloc++;
	if (h[allocs].n <= 0)
		return die("hkv_alloc_lanes", h[allocs].n);
	n_alloc++;
	if (hkv_alloc(p, 2 * NPAGES, HKV_LANE_ANY, 0, h[0].ext, MAXEXT) != -ENOMEM)
		return die("oversized hkv_alloc", -EPROTO);
	for (unsigned long pass = 2; pass-- > 0;) {
		for (i = 0; i <= allocs; i++) {
			if ((i & 1) != pass)
				continue;
			n_free++;
			if (hkv_free(p, h[i].ext, h[i].n))
				return die("hkv_free", -EPROTO);
		}
	}
	n_free++;
	if (hkv_free(p, &bad, 1) != -EINVAL)
		return die("empty-extent hkv_free", -EPROTO);
	free(h);
	return 0;
}

static int units(struct hkv_pool *p, unsigned long nunits, unsigned long *evicted,
		 unsigned long *runs)
{
	struct hkv_stats a = { .sz = sizeof(a) }, b = { .sz = sizeof(b) };
	struct hkv_extent ext[MAXEXT];
	unsigned long i;
	int n, ret;

	for (i = 0; i < nunits; i++, n_alloc++) {
		n = hkv_alloc(p, 4, HKV_LANE_ANY, 0, ext, MAXEXT);
		if (n <= 0)
			return die("unit hkv_alloc", n);
		ret = hkv_unit_add(p, 1000 + i, ext, n);
		if (ret)
			return die("hkv_unit_add", ret);
	}
	hkv_stats(p, &a);
	if (hkv_evict(p, NPAGES) != (int64_t)(4 * nunits))
		return die("hkv_evict", -EPROTO);
	hkv_stats(p, &b);
	*evicted = b.evictions - a.evictions;
	*runs = b.eviction_runs - a.eviction_runs;
	if (*evicted != nunits)
		return die("evictions counted", -EPROTO);
	return 0;
}

static void wait_go(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	sigwait(&set, &sig);
}

int main(int argc, char **argv)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = NPAGES, .nlanes = 2,
				   .backing = HKV_BACKING_NONE, .numa_node = -1 };
	unsigned long allocs, nunits, evicted = 0, runs = 0;
	bool wait = false, memory = false;
	struct hkv_pool *p;
	int i = 1, ret;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--wait"))
			wait = true;
		else if (!strcmp(argv[i], "--memory"))
			memory = true;
		else
			break;
	}
	if (argc - i != 2 || !strcmp(argv[1], "--help")) {
		fprintf(stderr, "usage: trace-workload [--wait] [--memory] ALLOCS UNITS\n");
		return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	allocs = strtoul(argv[i], NULL, 0);
	nunits = strtoul(argv[i + 1], NULL, 0);
	if (wait)
		wait_go();
	if (memory && memory_pool())
		return 1;
	ret = hkv_pool_create(&o, &p);
	if (ret)
		return die("pool", ret);
	ret = churn(p, allocs) || units(p, nunits, &evicted, &runs);
	printf("{\"pid\": %d, \"pool\": %llu, \"alloc\": %lu, \"free\": %lu, \"evict\": %lu, "
	       "\"evict_run\": %lu}\n", (int)getpid(), (unsigned long long)hkv_pool_id(p),
	       n_alloc, n_free, evicted, runs);
	hkv_pool_destroy(p);
	return ret;
}
