// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * workload.c - the serving process of the metrics tests: two labelled
 * pools (a memory pool on hugepages with watermarks and an index-only
 * one) under churn: allocations with eviction, units, pins (one held for
 * good), touches, removals, failed requests of both reasons.
 *
 *   workload STATS_FILE
 *
 * SIGUSR1: stop the churn, publish both pages, write both pools'
 * hkv_stats_print() JSON (one line each) to STATS_FILE (renamed into place),
 * then idle. SIGTERM: destroy the pools (their pages go) and exit 0.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hugekv.h>

static volatile sig_atomic_t quiesce, quit;

static void on_usr1(int s) { (void)s; quiesce = 1; }
static void on_term(int s) { (void)s; quit = 1; }

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static struct hkv_pool *make(uint64_t npages, uint64_t page_bytes, unsigned nlanes,
			     double low, double high, const char *label)
{
	char buf[64];
	struct hkv_pool_opts o = {
		.sz = sizeof(o), .npages = npages, .page_bytes = page_bytes, .nlanes = nlanes,
		.numa_node = -1, .free_room_low = low, .free_room_high = high, .label = buf,
	};
	struct hkv_pool *p;
	int err;

	snprintf(buf, sizeof(buf), "%s", label);
	err = hkv_pool_create(&o, &p);
	if (err) {
		fprintf(stderr, "workload: create %s: %s\n", label, hkv_strerror(err));
		exit(1);
	}
	memset(buf, 'X', sizeof(buf) - 1);	/* the pool keeps its own copy */
	return p;
}

/* one step on the memory pool: a unit, a pin now and then */
static void step_mem(struct hkv_pool *p, uint64_t *s, uint64_t *next_id)
{
	struct hkv_extent e[16];
	uint64_t id = (*next_id)++, n = 1 + rnd(s) % 12;
	int k = hkv_alloc(p, n, HKV_LANE_ANY, HKV_ALLOC_EVICT, e, 16);

	if (k <= 0)
		return;
	if (hkv_unit_add(p, id, e, (unsigned)k)) {
		for (int i = 0; i < k; i++)
			hkv_free(p, &e[i], 1);
		return;
	}
	if (rnd(s) % 8 == 0) {		/* a transfer: pinned for a moment */
		hkv_unit_pin(p, id);
		hkv_unit_unpin(p, id);
	}
	if (rnd(s) % 4 == 0)
		hkv_unit_touch(p, id - rnd(s) % 32);
	if (rnd(s) % 16 == 0)
		hkv_unit_remove(p, id - 1 - rnd(s) % 64, HKV_UNIT_FREE);
	if (rnd(s) % 64 == 0)		/* more extents than allowed, or more than the pool */
		hkv_alloc(p, rnd(s) % 2 ? 1000000 : 200, 0, 0, e, 1);
}

/* the index-only pool: allocate until full, then free all */
static void step_idx(struct hkv_pool *p, uint64_t *s, struct hkv_extent *held, unsigned *nheld)
{
	int k = hkv_alloc(p, 1 + rnd(s) % 40, 0, 0, &held[*nheld], 4);

	if (k > 0) {
		*nheld += (unsigned)k;
		if (*nheld + 4 <= 4096)
			return;
	}
	for (unsigned i = 0; i < *nheld; i++)
		hkv_free(p, &held[i], 1);
	*nheld = 0;
}

static void write_stats(const char *path, struct hkv_pool *a, struct hkv_pool *b)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || hkv_stats_print(a, f, HKV_PRINT_JSON) || hkv_stats_print(b, f, HKV_PRINT_JSON) ||
	    fclose(f) || rename(tmp, path)) {
		perror("workload: stats");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	static struct hkv_extent held[4096];
	struct hkv_pool *mem, *idx;
	uint64_t s = 88172645463325252ull, next_id = 1;
	struct hkv_extent pin_e;
	unsigned nheld = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: workload STATS_FILE\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	signal(SIGTERM, on_term);
	mem = make(2048, 16384, 2, 0.10, 0.20, "L2 host tier");
	idx = make(4096, 0, 1, 0, 0, "GPU \"index\"");
	/* a pin held for good: the oldest pin's age grows */
	if (hkv_alloc(mem, 4, 0, 0, &pin_e, 1) != 1 || hkv_unit_add(mem, 0, &pin_e, 1) ||
	    hkv_unit_pin(mem, 0)) {
		fprintf(stderr, "workload: the held pin\n");
		return 1;
	}
	printf("ready %d %llu %llu\n", (int)getpid(), (unsigned long long)hkv_pool_id(mem),
	       (unsigned long long)hkv_pool_id(idx));
	fflush(stdout);
	while (!quiesce && !quit) {
		for (int i = 0; i < 200; i++) {
			step_mem(mem, &s, &next_id);
			step_idx(idx, &s, held, &nheld);
		}
		usleep(2000);
	}
	if (quiesce && !quit) {
		hkv_stats_publish(mem);
		hkv_stats_publish(idx);
		write_stats(argv[1], mem, idx);
		while (!quit)
			pause();
	}
	hkv_pool_destroy(mem);
	hkv_pool_destroy(idx);
	return 0;
}
