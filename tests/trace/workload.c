// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * workload.c - a process of known operation counts for the tracing tests.
 *
 * usage: trace-workload [--wait] [--memory] [--xfer LIB] [--named NAME [--hold]]
 *                       ALLOCS UNITS
 *
 * On an index-only pool of two lanes: ALLOCS calls of hkv_alloc (sizes
 * 1..13, any lane) plus one hkv_alloc_lanes and one failing hkv_alloc;
 * one hkv_free per successful allocation plus one failing hkv_free; then
 * UNITS units of 4 pages, all evicted by one hkv_evict(). --memory also
 * creates and destroys a small pool on 4 KiB pages (arena probes).
 * --wait prints "ready PID" and waits for SIGUSR1 before starting, so a
 * tracer can attach to this pid first. --xfer LIB loads LIB (a
 * libhugekv-xfer.so, mapped before "ready") and fires XFER_N transfers of
 * XFER_BYTES to peer 1 (the last one a straggler) and one failed transfer
 * to peer 2. --named NAME makes the pool a named pool (removed at the
 * end); --hold then prints "held PID" after the JSON line and waits for a
 * second SIGUSR1 before it detaches, so a tracer can read the pool's stats
 * page (its name) at exit. Prints what it did as one JSON line: the counts
 * the probes must report.
 */
#include <dlfcn.h>
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

#define XFER_N		20
#define XFER_BYTES	(1 << 20)
#define XFER_NS		1000000		/* 1 ms each, the straggler 100 ms */

typedef void (*xfer_fn)(uint64_t pool, uint64_t peer, uint64_t pages, uint64_t ops,
			uint64_t bytes, int64_t result, uint64_t ns);

static xfer_fn xfer_open(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	xfer_fn fn = h ? (xfer_fn)dlsym(h, "fixture_xfer") : NULL;

	if (!fn)
		fprintf(stderr, "trace-workload: %s: %s\n", lib, dlerror());
	return fn;
}

static void xfers(xfer_fn fn, uint64_t pool)
{
	for (int i = 0; i < XFER_N; i++)
		fn(pool, 1, 16, 2, XFER_BYTES, 0, i == XFER_N - 1 ? 100 * XFER_NS : XFER_NS);
	fn(pool, 2, 16, 2, XFER_BYTES, -ECONNRESET, XFER_NS);
}

static void wait_go(const char *what)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("%s %d\n", what, (int)getpid());
	fflush(stdout);
	sigwait(&set, &sig);
}

int main(int argc, char **argv)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = NPAGES, .nlanes = 2,
				   .backing = HKV_BACKING_NONE, .numa_node = -1 };
	unsigned long allocs, nunits, evicted = 0, runs = 0;
	bool wait = false, memory = false, hold = false;
	xfer_fn xfer = NULL;
	struct hkv_pool *p;
	int i = 1, ret;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--wait"))
			wait = true;
		else if (!strcmp(argv[i], "--memory"))
			memory = true;
		else if (!strcmp(argv[i], "--named") && i + 1 < argc)
			o.name = argv[++i];
		else if (!strcmp(argv[i], "--hold"))
			hold = true;
		else if (!strcmp(argv[i], "--xfer") && i + 1 < argc) {
			if (!(xfer = xfer_open(argv[++i])))
				return 1;
		} else
			break;
	}
	if (argc - i != 2 || !strcmp(argv[1], "--help")) {
		fprintf(stderr, "usage: trace-workload [--wait] [--memory] [--xfer LIB] "
			"[--named NAME [--hold]] ALLOCS UNITS\n");
		return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	allocs = strtoul(argv[i], NULL, 0);
	nunits = strtoul(argv[i + 1], NULL, 0);
	if (wait)
		wait_go("ready");
	if (memory && memory_pool())
		return 1;
	ret = hkv_pool_create(&o, &p);
	if (ret)
		return die("pool", ret);
	ret = churn(p, allocs) || units(p, nunits, &evicted, &runs);
	if (xfer)
		xfers(xfer, hkv_pool_id(p));
	printf("{\"pid\": %d, \"pool\": %llu, \"alloc\": %lu, \"free\": %lu, \"evict\": %lu, "
	       "\"evict_run\": %lu", (int)getpid(), (unsigned long long)hkv_pool_id(p),
	       n_alloc, n_free, evicted, runs);
	if (xfer)
		printf(", \"xfer_submit\": %d, \"xfer_done\": %d, \"peer1_bytes\": %d, "
		       "\"stragglers\": 1, \"failures\": 1", XFER_N + 1, XFER_N + 1,
		       XFER_N * XFER_BYTES);
	printf("}\n");
	if (hold)
		wait_go("held");
	hkv_pool_destroy(p);
	if (o.name)
		hkv_pool_unlink(o.name);
	return ret;
}
