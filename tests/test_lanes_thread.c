// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_lanes_thread.c - real threads allocating and freeing on separate
 * lanes, on one shared lane and on HKV_LANE_ANY, while a reader takes
 * stats, free_slots and invariant checks. Every page carries an owner word
 * set with compare-and-swap: a page handed to two threads at once fails the
 * test. Run under ThreadSanitizer by `make check`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "internal.h"

#define OPS	40000
#define HELD	64

struct shared {
	struct hkv_pool *pool;
	uint32_t *owner;	/* 0 = free, else thread id + 1 */
	int stop;
	int errors;
};

struct worker {
	struct shared *sh;
	unsigned id, lane;
	uint64_t seed;
};

static void claim(struct shared *sh, const struct hkv_extent *e, uint32_t from, uint32_t to)
{
	uint64_t p;

	for (p = e->start; p < e->start + e->len; p++) {
		uint32_t expect = from;

		if (!__atomic_compare_exchange_n(&sh->owner[p], &expect, to, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			__atomic_add_fetch(&sh->errors, 1, __ATOMIC_RELAXED);
	}
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct hkv_extent held[HELD][8];
	int nheld[HELD] = { 0 };
	uint64_t s = w->seed;
	long i;

	for (i = 0; i < OPS; i++) {
		unsigned slot;
		int k, j;

		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		slot = (unsigned)(s % HELD);
		if (nheld[slot]) {
			for (j = 0; j < nheld[slot]; j++)
				claim(w->sh, &held[slot][j], w->id + 1, 0);
			if (hkv_free(w->sh->pool, held[slot], (unsigned)nheld[slot]))
				__atomic_add_fetch(&w->sh->errors, 1, __ATOMIC_RELAXED);
			nheld[slot] = 0;
			continue;
		}
		k = hkv_alloc(w->sh->pool, 1 + (s >> 20) % 24, w->lane, 0, held[slot], 8);
		if (k == -ENOMEM || k == -ENOSPC)
			continue;
		if (k <= 0) {
			__atomic_add_fetch(&w->sh->errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		for (j = 0; j < k; j++)
			claim(w->sh, &held[slot][j], 0, w->id + 1);
		nheld[slot] = k;
	}
	for (i = 0; i < HELD; i++) {
		int j;

		for (j = 0; j < nheld[i]; j++)
			claim(w->sh, &held[i][j], w->id + 1, 0);
		if (nheld[i] && hkv_free(w->sh->pool, held[i], (unsigned)nheld[i]))
			__atomic_add_fetch(&w->sh->errors, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *read_views(void *arg)
{
	struct shared *sh = arg;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		struct hkv_stats st = { .sz = sizeof(st) };
		const uint64_t *slots;
		uint64_t n;

		if (hkv_stats(sh->pool, &st) || st.free_pages > st.npages ||
		    hkv_available(sh->pool) > st.npages || hkv_check(sh->pool) ||
		    hkv_free_slots(sh->pool, &slots, &n))
			__atomic_add_fetch(&sh->errors, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void run(unsigned nlanes, unsigned lane0, unsigned lane1)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 2048, .nlanes = nlanes };
	struct shared sh = { 0 };
	struct worker w[2] = { { &sh, 0, lane0, 0x1111 }, { &sh, 1, lane1, 0x2222 } };
	pthread_t t[2], reader;

	assert_int_equal(hkv_pool_create(&o, &sh.pool), 0);
	sh.owner = calloc(o.npages, sizeof(*sh.owner));
	assert_int_equal(pthread_create(&reader, NULL, read_views, &sh), 0);
	assert_int_equal(pthread_create(&t[0], NULL, work, &w[0]), 0);
	assert_int_equal(pthread_create(&t[1], NULL, work, &w[1]), 0);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	__atomic_store_n(&sh.stop, 1, __ATOMIC_RELEASE);
	pthread_join(reader, NULL);
	assert_int_equal(sh.errors, 0);
	assert_int_equal(hkv_available(sh.pool), o.npages);
	assert_int_equal(hkv_check(sh.pool), 0);
	free(sh.owner);
	hkv_pool_destroy(sh.pool);
}

static void test_separate_lanes(void **state)
{
	(void)state;
	run(2, 0, 1);
}

static void test_same_lane(void **state)
{
	(void)state;
	run(2, 1, 1);
}

static void test_any_lane(void **state)
{
	(void)state;
	run(4, HKV_LANE_ANY, HKV_LANE_ANY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_separate_lanes),
		cmocka_unit_test(test_same_lane),
		cmocka_unit_test(test_any_lane),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
