// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_lane_defer_thread.c - frees of a lane another thread owns are
 * answered at once and run by that lane's next holder (lane_defer.c):
 * every later call sees them (a lowest-address fit, the stats, a check,
 * hkv_available() before they run); a free that cannot be answered so (a
 * page freed already or queued, free, in a unit, out of range) gets the
 * exact error and changes nothing; a full queue makes the free wait, which
 * runs the queue; HKV_LANE_ANY sees a lane's queued room; two threads
 * freeing the same pages at once free them once (the loser is counted and
 * logged); HUGEKV_LANE_DEFER=0 turns it off; a queue counts in the
 * metadata. The lane's owner here is a thread that allocated and exited,
 * so nothing runs the queue until this thread's next call: each step is
 * seen, not raced. Run under ThreadSanitizer by `make check`.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hkv_test_mem.h"
#include "hkv_test_pool.h"

#define NEXT	8		/* extents the owner allocates */

struct owner {
	struct hkv_pool *pool;
	unsigned lane, n;
	uint64_t len;		/* pages per extent */
	struct hkv_extent e[256];
	int ret;
};

static void *owner_run(void *arg)
{
	struct owner *o = arg;

	for (unsigned i = 0; i < o->n && !o->ret; i++)
		if (hkv_alloc(o->pool, o->len, o->lane, 0, &o->e[i], 1) != 1)
			o->ret = -1;
	return NULL;
}

/* another thread allocates n extents of len pages on the lane and exits:
 * it stays the lane's owner */
static void owner_alloc(struct owner *o, struct hkv_pool *pool, unsigned lane, unsigned n,
			uint64_t len)
{
	pthread_t t;

	*o = (struct owner){ .pool = pool, .lane = lane, .n = n, .len = len };
	assert_int_equal(pthread_create(&t, NULL, owner_run, o), 0);
	pthread_join(t, NULL);
	assert_int_equal(o->ret, 0);
	assert_false(lane_owned(&pool->lanes[lane]));
}

static struct hkv_pool *pool_new(uint64_t npages, unsigned nlanes)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = npages, .nlanes = nlanes };
	struct hkv_pool *pool;

	assert_int_equal(hkv_pool_create(&o, &pool), 0);
	return pool;
}

/* frees waiting in the lane's queue (read here while nothing runs it) */
static unsigned queued(struct hkv_pool *pool, unsigned lane)
{
	const struct lane_defer *q = __atomic_load_n(&pool->lanes[lane].defer, __ATOMIC_ACQUIRE);
	unsigned n = 0;

	if (!q)
		return 0;
	for (uint64_t h = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE); n < LANE_DEFER_SIZE; h++) {
		uint64_t v = __atomic_load_n(&q->ent[h % LANE_DEFER_SIZE].seq, __ATOMIC_ACQUIRE);

		if (v != defer_seq(h, DEFER_FILLED))
			break;
		n++;
	}
	return n;
}

/* a 1024-page pool whose lane another thread owns, with NEXT extents of 4
 * pages (o->e) allocated by it, the first one freed here: queued */
static struct hkv_pool *pool_queued(struct owner *o)
{
	struct hkv_pool *pool = pool_new(1024, 1);

	owner_alloc(o, pool, 0, NEXT, 4);
	assert_int_equal(hkv_free(pool, &o->e[0], 1), 0);
	assert_int_equal(queued(pool, 0), 1);
	return pool;
}

/* a queued free is answered 0 and seen by the next call of any kind */
static void test_seen_by_next_call(void **state)
{
	struct owner o;
	struct hkv_pool *pool = pool_queued(&o);
	struct hkv_extent x;
	struct hkv_stats st;

	(void)state;
	assert_int_equal(pool->lanes[0].xi.free_pages, 1024 - 4 * NEXT);	/* not run yet */
	assert_int_equal(hkv_available(pool), 1024 - 4 * NEXT + 4);	/* but counted */
	st = tp_stats(pool);
	assert_int_equal(queued(pool, 0), 0);
	assert_int_equal(st.frees, 1);
	assert_int_equal(st.deferred_frees, 1);
	assert_int_equal(st.deferred_free_errors, 0);
	assert_int_equal(st.free_pages, 1024 - 4 * NEXT + 4);
	/* queued, then an allocation: its lowest-address fit is the queued
	 * pages (pages 0..7), not the free pages after the owner's */
	assert_int_equal(hkv_free(pool, &o.e[1], 1), 0);
	assert_int_equal(queued(pool, 0), 1);
	assert_int_equal(hkv_alloc(pool, 8, 0, HKV_ALLOC_CONTIG, &x, 1), 1);
	assert_int_equal(x.start, 0);
	assert_int_equal(x.len, 8);
	/* and a check */
	assert_int_equal(hkv_free(pool, &o.e[2], 1), 0);
	assert_int_equal(hkv_check(pool), 0);
	assert_int_equal(queued(pool, 0), 0);
	assert_int_equal(hkv_extents_allocated(pool, &o.e[2], 1), -EINVAL);
	hkv_pool_destroy(pool);
}

/* a free that cannot be answered at once gets the exact error and changes
 * nothing; none of these is queued */
static void test_errors_not_queued(void **state)
{
	struct owner o;
	struct hkv_pool *pool = pool_queued(&o);
	struct hkv_extent half, bad[] = { { 500, 2 }, { 1020, 8 }, { 2000, 1 }, { 3, 0 } };
	struct hkv_stats st;

	(void)state;
	/* named again while queued, whole or in part: the waiting path runs
	 * the queue first, then finds the pages free */
	assert_int_equal(hkv_free(pool, &o.e[0], 1), -EINVAL);
	assert_int_equal(queued(pool, 0), 0);
	assert_int_equal(hkv_free(pool, &o.e[1], 1), 0);
	half = (struct hkv_extent){ o.e[1].start + 2, 2 };
	assert_int_equal(hkv_free(pool, &half, 1), -EINVAL);
	for (unsigned i = 0; i < HKV_ARRAY_SIZE(bad); i++)
		assert_int_equal(hkv_free(pool, &bad[i], 1), -EINVAL);
	/* pages in a unit */
	assert_int_equal(hkv_unit_add(pool, 7, &o.e[2], 1), 0);
	assert_int_equal(hkv_free(pool, &o.e[2], 1), -EBUSY);
	assert_int_equal(queued(pool, 0), 0);
	st = tp_stats(pool);
	assert_int_equal(st.frees, 2);
	/* e[0] and e[1]: the waiting free before e[1] left the lane's owner,
	 * so e[1] was queued too, and ran in the waiting free of its half */
	assert_int_equal(st.deferred_frees, 2);
	assert_int_equal(st.free_pages, 1024 - 4 * NEXT + 8);
	assert_int_equal(hkv_unit_remove(pool, 7, HKV_UNIT_FREE), 0);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

/* a full queue: the next free waits and runs the queue; the lane's owner
 * stays (a free does not take the lane), so the frees after it are queued
 * again */
static void test_queue_full(void **state)
{
	struct hkv_pool *pool = pool_new(1024, 1);
	struct hkv_stats st;
	struct owner o;

	(void)state;
	owner_alloc(&o, pool, 0, 200, 1);
	for (unsigned i = 0; i < 200; i++) {
		unsigned k = i % (LANE_DEFER_SIZE + 1);

		assert_int_equal(hkv_free(pool, &o.e[i], 1), 0);
		assert_int_equal(queued(pool, 0), k < LANE_DEFER_SIZE ? k + 1 : 0);
	}
	assert_false(lane_owned(&pool->lanes[0]));
	st = tp_stats(pool);
	assert_int_equal(st.frees, 200);
	assert_int_equal(st.deferred_frees, 200 - 200 / (LANE_DEFER_SIZE + 1));
	assert_int_equal(st.free_pages, 1024);
	assert_int_equal(st.free_extents, 1);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

/* a free of pages queued already is found behind newer entries, lap after
 * lap of the queue (the look goes from the tail back to the first entry a
 * holder ran, without the head): it waits, which runs the queue, and gets
 * -EINVAL; a page next to a queued free is not in it */
static void test_queued_found_across_laps(void **state)
{
	struct hkv_pool *pool = pool_new(1024, 1);
	struct hkv_stats st;
	struct owner o;

	(void)state;
	owner_alloc(&o, pool, 0, 250, 2);
	for (unsigned r = 0; r < 25; r++) {
		struct hkv_extent *e = &o.e[10 * r], half = { e[3].start + 1, 1 };

		for (unsigned i = 0; i < 9; i++)
			assert_int_equal(hkv_free(pool, &e[i], 1), 0);
		assert_int_equal(queued(pool, 0), 9);
		assert_int_equal(hkv_free(pool, &half, 1), -EINVAL);
		assert_int_equal(queued(pool, 0), 0);
		assert_int_equal(hkv_free(pool, &e[9], 1), 0);	/* queued */
		assert_int_equal(queued(pool, 0), 1);
		assert_int_equal(hkv_free(pool, &e[9], 1), -EINVAL);
	}
	st = tp_stats(pool);
	assert_int_equal(st.frees, 250);
	assert_int_equal(st.deferred_frees, 250);
	assert_int_equal(st.deferred_free_errors, 0);
	assert_int_equal(st.free_pages, 1024);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

/* HKV_LANE_ANY counts a lane's queued room: lane 0 full (this thread's),
 * lane 1 full but for a queued free, the only room for 64 contiguous */
static void test_any_lane_sees_queue(void **state)
{
	struct hkv_pool *pool = pool_new(1024, 2);
	struct hkv_extent mine, x;
	struct owner o;

	(void)state;
	assert_int_equal(hkv_alloc(pool, 512, 0, 0, &mine, 1), 1);
	owner_alloc(&o, pool, 1, 8, 64);
	assert_int_equal(hkv_available(pool), 0);
	assert_int_equal(hkv_free(pool, &o.e[3], 1), 0);
	assert_int_equal(queued(pool, 1), 1);
	assert_int_equal(hkv_available(pool), 64);
	assert_int_equal(hkv_alloc(pool, 64, HKV_LANE_ANY, HKV_ALLOC_CONTIG, &x, 1), 1);
	assert_int_equal(x.start, o.e[3].start);
	assert_int_equal(hkv_available(pool), 0);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

/* HUGEKV_LANE_DEFER=0: the same frees wait, and no queue is made */
static void test_env_off(void **state)
{
	struct hkv_pool *pool;
	struct hkv_stats st;
	struct owner o;

	(void)state;
	setenv("HUGEKV_LANE_DEFER", "0", 1);
	env_reload();
	pool = pool_new(1024, 1);
	unsetenv("HUGEKV_LANE_DEFER");
	env_reload();
	owner_alloc(&o, pool, 0, NEXT, 4);
	for (unsigned i = 0; i < NEXT; i++)
		assert_int_equal(hkv_free(pool, &o.e[i], 1), 0);
	assert_null(pool->lanes[0].defer);
	st = tp_stats(pool);
	assert_int_equal(st.frees, NEXT);
	assert_int_equal(st.deferred_frees, 0);
	hkv_pool_destroy(pool);
}

/* a lane's queue counts in its metadata, within XI_META_QUEUE */
static void test_queue_metadata(void **state)
{
	struct hkv_pool *pool = pool_new(1024, 1);
	uint64_t before = tp_stats(pool).metadata_bytes, after;
	struct owner o;

	(void)state;
	owner_alloc(&o, pool, 0, NEXT, 4);
	before = tp_stats(pool).metadata_bytes;
	assert_int_equal(hkv_free(pool, &o.e[0], 1), 0);
	after = tp_stats(pool).metadata_bytes;
	assert_true(after > before);
	assert_true(after - before <= XI_META_QUEUE);
	hkv_pool_destroy(pool);
}

/* ---- threads at once ----------------------------------------------------- */

#define ROUNDS	2000
#define RACE_N	16

struct race {
	struct hkv_pool *pool;
	struct hkv_extent e[RACE_N];
	pthread_barrier_t go, done;
	int zeros, einval, other;
	int stop, started;
};

/*
 * The owner: takes the lane with one allocation, then holds it with calls
 * that allocate nothing (frees of pages past the pool: -EINVAL), so it runs
 * the queue while nothing takes the raced pages again. (Had it allocated
 * them in between, the later of two racing frees would free its pages,
 * with or without the queue: a free names pages, not an allocation.) Page
 * 4095 stays free: the raced extents are allocated from the low end.
 */
static void *race_owner(void *arg)
{
	struct race *r = arg;
	struct hkv_extent e, past = { 4095, 1 };

	if (hkv_alloc(r->pool, 1, 0, 0, &e, 1) != 1)
		__atomic_add_fetch(&r->other, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&r->started, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
		if (hkv_free(r->pool, &past, 1) != -EINVAL)
			__atomic_add_fetch(&r->other, 1, __ATOMIC_RELAXED);
	if (hkv_free(r->pool, &e, 1))
		__atomic_add_fetch(&r->other, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* two of these free the same extents at once, every round */
static void *race_freer(void *arg)
{
	struct race *r = arg;

	for (unsigned round = 0; round < ROUNDS; round++) {
		pthread_barrier_wait(&r->go);
		for (unsigned i = 0; i < RACE_N; i++) {
			int ret = hkv_free(r->pool, &r->e[i], 1);

			__atomic_add_fetch(ret == 0 ? &r->zeros : ret == -EINVAL ? &r->einval
						    : &r->other, 1, __ATOMIC_RELAXED);
		}
		pthread_barrier_wait(&r->done);
	}
	return NULL;
}

/*
 * Two threads free the same extents at once (a caller's bug) while a third
 * holds the lane: each extent is freed once. A free answered 0 at once but
 * found freed when run is counted and logged; the other gets -EINVAL.
 * Every answer 0 is one free run, or one of those: zeros = frees + errors.
 */
static void test_racing_frees(void **state)
{
	struct race r = { .pool = pool_new(4096, 1) };
	pthread_t owner, f[2];
	struct hkv_stats st0, st;
	struct tm_log log;

	(void)state;
	tm_log_capture(&log);
	pthread_barrier_init(&r.go, NULL, 3);
	pthread_barrier_init(&r.done, NULL, 3);
	assert_int_equal(pthread_create(&owner, NULL, race_owner, &r), 0);
	while (!__atomic_load_n(&r.started, __ATOMIC_ACQUIRE))
		sched_yield();
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&f[i], NULL, race_freer, &r), 0);
	st0 = tp_stats(r.pool);
	for (unsigned round = 0; round < ROUNDS; round++) {
		for (unsigned i = 0; i < RACE_N; i++)
			assert_int_equal(hkv_alloc(r.pool, 1 + i % 5, 0, 0, &r.e[i], 1), 1);
		pthread_barrier_wait(&r.go);
		pthread_barrier_wait(&r.done);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(owner, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(f[i], NULL);
	st = tp_stats(r.pool);
	tm_log_capture(NULL);
	print_message("%d answered 0 (%llu deferred), %d -EINVAL, %llu found freed when run\n",
		      r.zeros, (unsigned long long)(st.deferred_frees - st0.deferred_frees),
		      r.einval, (unsigned long long)st.deferred_free_errors);
	assert_int_equal(r.other, 0);
	assert_int_equal(r.zeros + r.einval, 2 * ROUNDS * RACE_N);
	assert_int_equal((uint64_t)r.zeros, (uint64_t)ROUNDS * RACE_N + st.deferred_free_errors);
	assert_int_equal(log.warn, st.deferred_free_errors);
	if (st.deferred_free_errors)
		assert_true(tm_log_has(&log, "deferred: invalid argument"));
	assert_int_equal(st.free_pages, 4096);
	assert_int_equal(hkv_check(r.pool), 0);
	pthread_barrier_destroy(&r.go);
	pthread_barrier_destroy(&r.done);
	hkv_pool_destroy(r.pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seen_by_next_call),
		cmocka_unit_test(test_errors_not_queued),
		cmocka_unit_test(test_queue_full),
		cmocka_unit_test(test_queued_found_across_laps),
		cmocka_unit_test(test_any_lane_sees_queue),
		cmocka_unit_test(test_env_off),
		cmocka_unit_test(test_queue_metadata),
		cmocka_unit_test(test_racing_frees),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
