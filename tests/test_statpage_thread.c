// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_statpage_thread.c - the stats page under threads (also run under
 * TSan): workers allocate, add, pin, unpin and evict units on a pool whose
 * thread publishes every millisecond, one worker also publishes itself,
 * while a reader checks each snapshot it reads for consistency (lanes sum
 * to the pool, pinned within cached within allocated, publications in
 * order). Destroy stops the publisher with work in flight.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hugekv.h"

#define WORKERS	3
#define ROUNDS	4000

static char dir[256], path[512];
static int done;
/* counted in the threads, asserted in the test's own (cmocka's asserts
 * jump back into the test: only from its thread) */
static uint64_t bad, reads, publish_errors;

struct worker {
	struct hkv_pool *pool;
	unsigned idx;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t base = (uint64_t)w->idx << 32;

	for (uint64_t i = 0; i < ROUNDS; i++) {
		struct hkv_extent e[8];
		int k = hkv_alloc(w->pool, 1 + i % 5, HKV_LANE_ANY, HKV_ALLOC_EVICT, e, 8);

		if (k <= 0)
			continue;
		if (hkv_unit_add(w->pool, base + i, e, (unsigned)k)) {
			hkv_free(w->pool, e, (unsigned)k);
			continue;
		}
		if (!hkv_unit_pin(w->pool, base + i))
			hkv_unit_unpin(w->pool, base + i);
		if (w->idx == 0 && i % 256 == 0 && hkv_stats_publish(w->pool))
			__atomic_add_fetch(&publish_errors, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* one publication's figures agree with each other (hkv_stats() reads the
 * lanes, then the units: across them it is a near snapshot only) */
static bool consistent(const struct hkv_page *pg, uint64_t *last)
{
	const struct hkv_stats *st = &pg->stats;
	uint64_t lanes = 0;
	bool ok;

	for (unsigned i = 0; i < st->nlanes; i++)
		lanes += st->lane_free_pages[i];
	ok = lanes == st->free_pages && st->free_pages <= st->npages &&
	     st->pinned_pages <= st->unit_pages && st->unit_pages <= st->npages &&
	     st->extents_hist[0] <= st->allocs && pg->published_ns >= *last &&
	     !strcmp(pg->label, "threads");
	*last = pg->published_ns;
	return ok;
}

static void *reader(void *arg)
{
	static struct hkv_page pg;
	uint64_t last = 0;

	(void)arg;
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		memset(&pg, 0, sizeof(pg));
		pg.sz = sizeof(pg);
		if (hkv_page_read(path, &pg) == 0) {
			bad += !consistent(&pg, &last);
			reads++;
		}
	}
	return NULL;
}

static void test_publish_under_load(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 4096, .nlanes = 4,
				   .free_room_low = 0.1, .free_room_high = 0.2, .label = "threads" };
	struct worker w[WORKERS];
	pthread_t t[WORKERS], r;
	struct hkv_pool *p;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/hkv-statpage-thread-%d", (int)getpid());
	setenv("HUGEKV_RUNTIME_DIR", dir, 1);
	setenv("HUGEKV_STATS_INTERVAL_MS", "1", 1);
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	snprintf(path, sizeof(path), "%s/pool.%d.%llu.page", dir, (int)getpid(),
		 (unsigned long long)hkv_pool_id(p));
	assert_int_equal(pthread_create(&r, NULL, reader, NULL), 0);
	for (unsigned i = 0; i < WORKERS; i++) {
		w[i] = (struct worker){ .pool = p, .idx = i };
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (unsigned i = 0; i < WORKERS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(r, NULL), 0);
	assert_true(reads > 0);
	assert_int_equal(bad, 0);
	assert_int_equal(publish_errors, 0);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
	assert_int_equal(access(path, F_OK), -1);
	rmdir(dir);
}

/* pools created and destroyed from many threads: each publisher starts and
 * stops with its pool */
static void *churn_pools(void *arg)
{
	(void)arg;
	for (int i = 0; i < 20; i++) {
		struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 64 };
		struct hkv_pool *p;
		struct hkv_extent e;

		if (hkv_pool_create(&o, &p)) {
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (hkv_alloc(p, 3, 0, 0, &e, 1) != 1)
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		hkv_pool_destroy(p);
	}
	return NULL;
}

static void test_create_destroy_threads(void **state)
{
	pthread_t t[4];

	(void)state;
	bad = 0;
	snprintf(dir, sizeof(dir), "/tmp/hkv-statpage-thread-%d", (int)getpid());
	setenv("HUGEKV_RUNTIME_DIR", dir, 1);
	setenv("HUGEKV_STATS_INTERVAL_MS", "1", 1);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn_pools, NULL), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(bad, 0);
	assert_int_equal(rmdir(dir), 0);	/* empty: every page went */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_publish_under_load),
		cmocka_unit_test(test_create_destroy_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
