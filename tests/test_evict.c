// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_evict.c - planned eviction: hkv_evict targets, LRU order, pinned and
 * touched units surviving, free-room watermarks per pool and per lane, the
 * eviction callback and counters, the coalescing-aware victim window, and
 * units that cross chunk boundaries of a real memory pool.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hugekv.h"
#include "hkv_test_pool.h"

struct pool_cfg {
	uint64_t npages;
	unsigned nlanes, window;
	double low, high;
};

static struct hkv_pool *mkpool(struct pool_cfg c)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = c.npages, .nlanes = c.nlanes,
				   .evict_window = c.window, .free_room_low = c.low,
				   .free_room_high = c.high };

	return tp_pool(&o);
}

/* a unit of @n contiguous pages from @lane under id @id; returns its start */
static uint64_t unit(struct hkv_pool *p, uint64_t id, uint64_t n, unsigned lane)
{
	struct hkv_extent e;

	assert_int_equal(hkv_alloc(p, n, lane, HKV_ALLOC_CONTIG, &e, 1), 1);
	assert_int_equal(hkv_unit_add(p, id, &e, 1), 0);
	return e.start;
}

#define LOG_MAX 256
struct log {
	unsigned n;
	uint64_t id[LOG_MAX], pages[LOG_MAX];
};

static void log_fn(void *ctx, uint64_t id, const struct hkv_extent *ext, unsigned n)
{
	struct log *lg = ctx;
	uint64_t pages = 0;

	for (unsigned i = 0; i < n; i++)
		pages += ext[i].len;
	assert_true(lg->n < LOG_MAX);
	lg->id[lg->n] = id;
	lg->pages[lg->n++] = pages;
}

/* hkv_evict: LRU order, target reached within one unit, counters */
static void test_evict_target(void **state)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 100, .nlanes = 1, .window = 1 });
	struct log lg = { 0 };
	struct hkv_stats st;

	(void)state;
	hkv_set_evict_fn(p, log_fn, &lg);
	for (uint64_t i = 0; i < 10; i++)
		unit(p, 100 + i, 10, 0);
	assert_int_equal(hkv_evict(NULL, 10), -EINVAL);
	assert_int_equal(hkv_evict(p, 0), 0);		/* already there: no run */
	assert_int_equal(tp_stats(p).eviction_runs, 0);
	assert_int_equal(hkv_evict(p, 25), 30);		/* 25 <= 30 < 25 + 10 */
	assert_int_equal(hkv_available(p), 30);
	assert_int_equal(lg.n, 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(lg.id[i], 100 + i);
		assert_int_equal(lg.pages[i], 10);
	}
	assert_int_equal(hkv_unit_touch(p, 100), -ENOENT);	/* gone */
	st = tp_stats(p);
	assert_int_equal(st.evictions, 3);
	assert_int_equal(st.evicted_pages, 30);
	assert_int_equal(st.eviction_runs, 1);
	assert_int_equal(st.units, 7);
	assert_int_equal(st.unit_pages, 70);
	hkv_set_evict_fn(p, NULL, NULL);		/* no callback: still evicts */
	assert_int_equal(hkv_evict(p, 40), 10);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/* pinned and recently touched units survive; nothing evictable -> short */
static void test_survivors(void **state)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 100, .nlanes = 1, .window = 1 });
	struct log lg = { 0 };

	(void)state;
	hkv_set_evict_fn(p, log_fn, &lg);
	for (uint64_t i = 0; i < 10; i++)
		unit(p, i, 10, 0);
	assert_int_equal(hkv_unit_pin(p, 0), 0);
	assert_int_equal(hkv_unit_touch(p, 1), 0);
	assert_int_equal(hkv_evict(p, 20), 20);
	assert_int_equal(lg.id[0], 2);
	assert_int_equal(lg.id[1], 3);
	/* everything but the pinned unit can go; the target is not reached */
	assert_int_equal(hkv_evict(p, 100), 70);
	assert_int_equal(lg.n, 9);
	assert_int_equal(lg.id[8], 1);			/* the touched one last */
	for (unsigned i = 0; i < lg.n; i++)
		assert_int_not_equal(lg.id[i], 0);
	assert_int_equal(hkv_available(p), 90);
	assert_int_equal(hkv_evict(p, 100), 0);
	assert_int_equal(hkv_unit_unpin(p, 0), 0);
	assert_int_equal(hkv_evict(p, 100), 10);
	hkv_pool_destroy(p);
}

/* fill with 10-page units until @free pages are left */
static void fill(struct hkv_pool *p, uint64_t *next_id, uint64_t free_left, unsigned lane)
{
	while (hkv_available(p) > free_left)
		unit(p, (*next_id)++, 10, lane);
}

/*
 * Watermarks 10 % / 20 %: the request that would leave free room below low
 * evicts until free room after it is >= high (within one unit), and the
 * next allocations need no run: eviction comes in planned batches.
 */
static void test_watermarks(void **state)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 1000, .nlanes = 1,
						       .window = 1, .low = 0.1, .high = 0.2 });
	struct hkv_extent e;
	uint64_t id = 0, before;
	struct log lg = { 0 };

	(void)state;
	hkv_set_evict_fn(p, log_fn, &lg);
	fill(p, &id, 100, 0);
	/* without HKV_ALLOC_EVICT nothing is evicted */
	assert_int_equal(hkv_alloc(p, 10, 0, 0, &e, 1), 1);
	assert_int_equal(hkv_free(p, &e, 1), 0);
	assert_int_equal(tp_stats(p).eviction_runs, 0);
	/* 100 - 10 < 100: evict to >= 200 free after the request */
	assert_int_equal(hkv_alloc(p, 10, 0, HKV_ALLOC_EVICT, &e, 1), 1);
	before = hkv_available(p) + 10;
	assert_true(before >= 210 && before < 220);
	assert_int_equal(lg.n, 11);
	assert_int_equal(lg.id[0], 0);
	assert_int_equal(lg.id[10], 10);
	assert_int_equal(tp_stats(p).eviction_runs, 1);
	/* the next 10 allocations stay above low: no run */
	for (unsigned i = 0; i < 10; i++)
		assert_int_equal(hkv_alloc(p, 10, 0, HKV_ALLOC_EVICT, &e, 1), 1);
	assert_int_equal(tp_stats(p).eviction_runs, 1);
	assert_int_equal(tp_stats(p).evict_failures, 0);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/* runs for 200 unit-sized allocations in a full pool with @low/@high */
static uint64_t runs_for(double low, double high)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 1000, .nlanes = 1,
						       .window = 1, .low = low, .high = high });
	uint64_t id = 0, runs;
	struct hkv_extent e;

	fill(p, &id, 100, 0);
	for (unsigned i = 0; i < 200; i++) {
		assert_int_equal(hkv_alloc(p, 10, 0, HKV_ALLOC_EVICT, &e, 1), 1);
		assert_int_equal(hkv_unit_add(p, id++, &e, 1), 0);
	}
	runs = tp_stats(p).eviction_runs;
	assert_int_equal(tp_stats(p).evict_failures, 0);
	hkv_pool_destroy(p);
	return runs;
}

/* the gap between low and high is what batches eviction */
static void test_watermark_gap(void **state)
{
	uint64_t no_gap = runs_for(0.1, 0.1), gap = runs_for(0.1, 0.2);

	(void)state;
	assert_int_equal(no_gap, 200);	/* one unit per allocation */
	assert_int_equal(gap, 19);	/* 11 units per run, then 10 free rides */
}

/* per-lane watermark: the lane runs short, only its units are evicted */
static void test_lane_watermark(void **state)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 1000, .nlanes = 2,
						       .window = 1, .low = 0.1, .high = 0.2 });
	struct log lg = { 0 };
	struct hkv_extent e;
	uint64_t id = 0;

	(void)state;
	hkv_set_evict_fn(p, log_fn, &lg);
	for (unsigned i = 0; i < 10; i++)	/* the coldest units live in lane 1 */
		unit(p, 1000 + i, 10, 1);
	while (tp_stats(p).lane_free_pages[0] > 0)
		unit(p, id++, 10, 0);
	/* pool: 400 free of 1000, fine; lane 0: 0 free of 500, below 50 */
	assert_int_equal(hkv_alloc(p, 10, 0, HKV_ALLOC_EVICT, &e, 1), 1);
	assert_int_equal(lg.n, 11);	/* lane 0 to >= 10 + 100 free */
	for (unsigned i = 0; i < lg.n; i++)
		assert_true(lg.id[i] < 1000);
	assert_int_equal(tp_stats(p).lane_free_pages[0], 100);
	assert_int_equal(tp_stats(p).lane_free_pages[1], 400);
	/* HKV_LANE_ANY looks at the pool only: 500 free is plenty */
	assert_int_equal(hkv_alloc(p, 10, HKV_LANE_ANY, HKV_ALLOC_EVICT, &e, 1), 1);
	assert_int_equal(lg.n, 11);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/* watermarks off: HKV_ALLOC_EVICT still evicts what the request needs */
static void test_evict_for_request(void **state)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 100, .nlanes = 1, .window = 1 });
	struct hkv_extent e[4];
	uint64_t id = 0;

	(void)state;
	fill(p, &id, 0, 0);
	assert_int_equal(hkv_alloc(p, 15, 0, 0, e, 4), -ENOMEM);
	assert_int_equal(hkv_alloc(p, 15, 0, HKV_ALLOC_EVICT, e, 4), 1);
	assert_int_equal(tp_stats(p).evictions, 2);
	assert_int_equal(hkv_available(p), 5);
	/* nothing evictable: the allocation fails and it is counted */
	for (uint64_t i = 2; i < 10; i++)
		assert_int_equal(hkv_unit_pin(p, i), 0);
	assert_int_equal(hkv_alloc(p, 10, 0, HKV_ALLOC_EVICT, e, 4), -ENOMEM);
	assert_int_equal(tp_stats(p).evict_failures, 1);
	assert_int_equal(hkv_available(p), 5);
	hkv_pool_destroy(p);
}

/*
 * Several lanes: hkv_evict merges the lanes' LRU lists by age. An
 * HKV_LANE_ANY request may spread over lanes, so it evicts only for room in
 * the pool (the pool's coldest units); a contiguous one needs room in one
 * lane and evicts there.
 */
static void test_any_lane(void **state)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 100, .nlanes = 2, .window = 1 });
	struct log lg = { 0 };
	struct hkv_extent e[4];

	(void)state;
	hkv_set_evict_fn(p, log_fn, &lg);
	for (uint64_t i = 0; i < 10; i++)	/* ages alternate between lanes */
		unit(p, i, 10, i % 2);
	assert_int_equal(hkv_evict(p, 20), 20);
	assert_int_equal(lg.id[0], 0);
	assert_int_equal(lg.id[1], 1);
	/* 10 free in each lane: 20 pages spread over both, nothing evicted */
	assert_int_equal(hkv_alloc(p, 20, HKV_LANE_ANY, HKV_ALLOC_EVICT, e, 4), 2);
	assert_int_equal(lg.n, 2);
	/* nothing free: the pool's two coldest units go, one in each lane */
	assert_int_equal(hkv_alloc(p, 20, HKV_LANE_ANY, HKV_ALLOC_EVICT, e, 4), 2);
	assert_int_equal(lg.n, 4);
	assert_int_equal(lg.id[2], 2);
	assert_int_equal(lg.id[3], 3);
	/* contiguous: one lane's units 4 and 6 make [20, 40) */
	assert_int_equal(hkv_alloc(p, 20, HKV_LANE_ANY, HKV_ALLOC_EVICT | HKV_ALLOC_CONTIG, e, 4),
			 1);
	assert_int_equal(e[0].start, 20);
	assert_int_equal(lg.n, 6);
	assert_int_equal(lg.id[4], 4);
	assert_int_equal(lg.id[5], 6);
	assert_int_equal(tp_stats(p).evict_failures, 0);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/* hkv_alloc_lanes with HKV_ALLOC_EVICT makes room in every lane it takes from */
static void test_alloc_lanes(void **state)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 100, .nlanes = 2, .window = 1 });
	uint64_t count[2] = { 15, 5 };
	struct hkv_extent e[8];
	struct log lg = { 0 };

	(void)state;
	hkv_set_evict_fn(p, log_fn, &lg);
	for (uint64_t i = 0; i < 10; i++)
		unit(p, i, 10, i / 5);		/* 0..4 in lane 0, 5..9 in lane 1 */
	assert_int_equal(hkv_alloc_lanes(p, count, 0, e, 8), -ENOMEM);
	assert_true(hkv_alloc_lanes(p, count, HKV_ALLOC_EVICT, e, 8) >= 2);
	assert_int_equal(lg.n, 3);		/* two from lane 0, one from lane 1 */
	assert_int_equal(lg.id[0], 0);
	assert_int_equal(lg.id[1], 1);
	assert_int_equal(lg.id[2], 5);
	assert_int_equal(hkv_available(p), 10);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/*
 * A request that eviction can never make fit evicts nothing: more than the
 * pool, more than a lane (a named lane, or any lane for a contiguous
 * request), UINT64_MAX, one lane of hkv_alloc_lanes over its size, a lane
 * whose units are all pinned, more than the pool's unpinned units and free
 * pages together.
 */
static void test_never_fits(void **state)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 1000, .nlanes = 2, .window = 1 });
	uint64_t over_lane[2] = { 400, 501 }, pinned_lane[2] = { 0, 100 };
	struct log lg = { 0 };
	struct hkv_extent e[64];

	(void)state;
	hkv_set_evict_fn(p, log_fn, &lg);
	for (uint64_t i = 0; i < 20; i++)
		unit(p, i, 50, i / 10);		/* 0..9 fill lane 0, 10..19 lane 1 */
	assert_int_equal(hkv_available(p), 0);
	assert_int_equal(hkv_alloc(p, 1001, HKV_LANE_ANY, HKV_ALLOC_EVICT, e, 64), -ENOMEM);
	assert_int_equal(hkv_alloc(p, 501, HKV_LANE_ANY, HKV_ALLOC_EVICT | HKV_ALLOC_CONTIG,
				   e, 64), -ENOMEM);
	assert_int_equal(hkv_alloc(p, 501, 1, HKV_ALLOC_EVICT, e, 64), -ENOMEM);
	assert_int_equal(hkv_alloc(p, UINT64_MAX, HKV_LANE_ANY, HKV_ALLOC_EVICT, e, 64), -ENOMEM);
	assert_int_equal(hkv_alloc(p, UINT64_MAX, 0, HKV_ALLOC_EVICT, e, 64), -ENOMEM);
	assert_int_equal(hkv_alloc_lanes(p, over_lane, HKV_ALLOC_EVICT, e, 64), -ENOMEM);
	assert_int_equal(lg.n, 0);
	assert_int_equal(tp_stats(p).units, 20);
	/* lane 1's units pinned: evicting lane 0 cannot help lane 1 */
	for (uint64_t i = 10; i < 20; i++)
		assert_int_equal(hkv_unit_pin(p, i), 0);
	assert_int_equal(hkv_alloc(p, 100, 1, HKV_ALLOC_EVICT, e, 64), -ENOMEM);
	assert_int_equal(hkv_alloc_lanes(p, pinned_lane, HKV_ALLOC_EVICT, e, 64), -ENOMEM);
	assert_int_equal(hkv_alloc(p, 501, HKV_LANE_ANY, HKV_ALLOC_EVICT, e, 64), -ENOMEM);
	assert_int_equal(lg.n, 0);
	assert_int_equal(tp_stats(p).evictions, 0);
	assert_true(tp_stats(p).evict_failures >= 8);
	/* what can fit still evicts, only what it needs */
	assert_int_equal(hkv_alloc(p, 100, HKV_LANE_ANY, HKV_ALLOC_EVICT, e, 64), 1);
	assert_int_equal(lg.n, 2);
	assert_int_equal(lg.id[0], 0);
	assert_int_equal(lg.id[1], 1);
	assert_int_equal(e[0].start, 0);
	assert_int_equal(hkv_check(p), 0);
	/* more than a lane, not contiguous: eviction over the pool, then the
	 * answer spreads over both lanes */
	assert_int_equal(hkv_free(p, e, 1), 0);
	for (uint64_t i = 10; i < 20; i++)
		assert_int_equal(hkv_unit_unpin(p, i), 0);
	assert_true(hkv_alloc(p, 700, HKV_LANE_ANY, HKV_ALLOC_EVICT, e, 64) >= 2);
	assert_int_equal(hkv_available(p), 0);
	assert_int_equal(lg.n, 2 + 12);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/* what the evict callback gets back from calls on the same pool */
struct reentry {
	struct hkv_pool *pool, *other;
	unsigned calls;
	int pin, unpin, add, touch, split, remove, evict, stats, check, alloc_evict, lanes_evict;
	int alloc, other_alloc;
};

static void reentry_fn(void *ctx, uint64_t unit, const struct hkv_extent *ext, unsigned n)
{
	struct reentry *re = ctx;
	struct hkv_stats st = { .sz = sizeof(st) };
	uint64_t count[1] = { 1 };
	struct hkv_extent e;

	(void)unit;
	(void)n;
	re->calls++;
	re->pin = hkv_unit_pin(re->pool, 1);
	re->unpin = hkv_unit_unpin(re->pool, 1);
	re->touch = hkv_unit_touch(re->pool, 1);
	re->split = hkv_unit_split(re->pool, 1, 1, 99);
	re->remove = hkv_unit_remove(re->pool, 1, 0);
	re->add = hkv_unit_add(re->pool, 98, ext, 1);
	re->evict = (int)hkv_evict(re->pool, 100);
	re->stats = hkv_stats(re->pool, &st);
	re->check = hkv_check(re->pool);
	re->alloc_evict = hkv_alloc(re->pool, 1, 0, HKV_ALLOC_EVICT, &e, 1);
	re->lanes_evict = hkv_alloc_lanes(re->pool, count, HKV_ALLOC_EVICT, &e, 1);
	hkv_set_evict_fn(re->pool, NULL, NULL);		/* refused: no effect */
	/* plain allocation and free take no residency lock: they work */
	re->alloc = hkv_alloc(re->pool, 1, 0, 0, &e, 1);
	if (re->alloc == 1)
		assert_int_equal(hkv_free(re->pool, &e, 1), 0);
	/* another pool is another lock */
	re->other_alloc = hkv_alloc(re->other, 1, 0, HKV_ALLOC_EVICT, &e, 1);
	/* destroying the pool under the eviction is refused (ASan would see it) */
	hkv_pool_destroy(re->pool);
}

/* calls into the pool from its evict callback get -EDEADLK, not a hang */
static void test_callback_reentry(void **state)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 100, .nlanes = 1, .window = 1 });
	struct reentry re = { .pool = p, .other = mkpool((struct pool_cfg){ .npages = 10 }) };

	(void)state;
	alarm(30);			/* a deadlock fails the test instead of hanging it */
	hkv_set_evict_fn(p, reentry_fn, &re);
	unit(p, 0, 10, 0);
	unit(p, 1, 10, 0);
	assert_int_equal(hkv_evict(p, 85), 10);
	assert_int_equal(re.calls, 1);
	assert_int_equal(re.pin, -EDEADLK);
	assert_int_equal(re.unpin, -EDEADLK);
	assert_int_equal(re.touch, -EDEADLK);
	assert_int_equal(re.split, -EDEADLK);
	assert_int_equal(re.remove, -EDEADLK);
	assert_int_equal(re.add, -EDEADLK);
	assert_int_equal(re.evict, -EDEADLK);
	assert_int_equal(re.stats, -EDEADLK);
	assert_int_equal(re.check, -EDEADLK);
	assert_int_equal(re.alloc_evict, -EDEADLK);
	assert_int_equal(re.lanes_evict, -EDEADLK);
	assert_int_equal(re.alloc, 1);
	assert_int_equal(re.other_alloc, 1);
	/* the callback is still set, the unit still there; outside it all works */
	assert_int_equal(hkv_unit_pin(p, 1), 0);
	assert_int_equal(hkv_unit_unpin(p, 1), 0);
	assert_int_equal(hkv_evict(p, 100), 10);
	assert_int_equal(re.calls, 2);
	assert_int_equal(tp_stats(p).units, 0);
	assert_int_equal(hkv_check(p), 0);
	alarm(0);
	hkv_pool_destroy(re.other);
	hkv_pool_destroy(p);
}

/*
 * HKV_ALLOC_EVICT | HKV_ALLOC_CONTIG: eviction goes on until one free
 * extent holds the request, not just until enough pages are free.
 */
static void test_evict_contig(void **state)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 100, .nlanes = 1, .window = 1 });
	uint64_t count[1] = { 30 };
	struct log lg = { 0 };
	struct hkv_extent e[4];

	(void)state;
	hkv_set_evict_fn(p, log_fn, &lg);
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(unit(p, i, 10, 0), i * 10);
	/* coldest first: 0, 2, 4, 6, 8, then 1, 3, ... (no two adjacent) */
	for (uint64_t i = 1; i < 10; i += 2)
		assert_int_equal(hkv_unit_touch(p, i), 0);
	assert_int_equal(hkv_alloc(p, 20, 0, HKV_ALLOC_EVICT | HKV_ALLOC_CONTIG, e, 1), 1);
	assert_int_equal(e[0].len, 20);
	assert_int_equal(lg.n, 6);		/* 0 2 4 6 8 leave holes; 1 joins 0..29 */
	assert_int_equal(lg.id[5], 1);
	assert_int_equal(e[0].start, 0);
	/* the same through hkv_alloc_lanes: 30 contiguous pages */
	assert_int_equal(hkv_alloc_lanes(p, count, HKV_ALLOC_EVICT | HKV_ALLOC_CONTIG, e, 1), 1);
	assert_int_equal(e[0].len, 30);
	assert_int_equal(tp_stats(p).evict_failures, 0);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/*
 * Room for the answer: no room (max_ext 0) evicts nothing; room for one
 * extent is a contiguous request; hkv_alloc_lanes needs one per lane.
 */
static void test_evict_max_ext(void **state)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 100, .nlanes = 2, .window = 1 });
	uint64_t count[2] = { 10, 10 };
	struct log lg = { 0 };
	struct hkv_extent e[2];

	(void)state;
	hkv_set_evict_fn(p, log_fn, &lg);
	for (uint64_t i = 0; i < 5; i++)
		assert_int_equal(unit(p, i, 10, 0), i * 10);
	for (uint64_t i = 5; i < 10; i++)
		unit(p, i, 10, 1);
	assert_true(hkv_alloc(p, 10, 0, HKV_ALLOC_EVICT, e, 0) < 0);
	assert_true(hkv_alloc_lanes(p, count, HKV_ALLOC_EVICT, e, 1) < 0);
	assert_int_equal(lg.n, 0);
	/* lane 0 coldest first: 0, 2, 4, then 1, 3 (no two adjacent) */
	for (uint64_t i = 1; i < 5; i += 2)
		assert_int_equal(hkv_unit_touch(p, i), 0);
	assert_int_equal(hkv_alloc(p, 20, 0, HKV_ALLOC_EVICT, e, 1), 1);
	assert_int_equal(e[0].len, 20);
	assert_int_equal(lg.n, 4);		/* 0 2 4 leave holes; 1 joins 0..29 */
	assert_int_equal(hkv_alloc_lanes(p, count, HKV_ALLOC_EVICT, e, 2), 2);
	assert_int_equal(tp_stats(p).evict_failures, 0);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/*
 * Victim window: units 0..9 of 10 pages in address order, coldest first,
 * unit 5 removed (a hole at 50..59). Plain LRU takes unit 0; window 8
 * takes unit 4, the coldest that borders the hole, and the free run grows.
 */
static uint64_t first_victim(unsigned window, uint64_t *largest)
{
	struct hkv_pool *p = mkpool((struct pool_cfg){ .npages = 100, .nlanes = 1,
						       .window = window });
	struct log lg = { 0 };

	hkv_set_evict_fn(p, log_fn, &lg);
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(unit(p, i, 10, 0), i * 10);
	assert_int_equal(hkv_unit_remove(p, 5, HKV_UNIT_FREE), 0);
	assert_int_equal(hkv_evict(p, 11), 10);
	*largest = tp_stats(p).largest_free_extent;
	hkv_pool_destroy(p);
	return lg.id[0];
}

static void test_victim_window(void **state)
{
	uint64_t largest;

	(void)state;
	assert_int_equal(first_victim(1, &largest), 0);
	assert_int_equal(largest, 10);
	assert_int_equal(first_victim(8, &largest), 4);
	assert_int_equal(largest, 20);
	assert_int_equal(first_victim(0, &largest), 0);	/* 0 = default 1 */
	assert_int_equal(first_victim(3, &largest), 0);	/* 4 is outside */
}

/*
 * A real memory pool with 16-page chunks: one unit extent that spans two
 * allocations across a chunk boundary is freed chunk by chunk.
 */
static void test_chunk_boundary(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 64, .page_bytes = 4096,
				   .backing = HKV_BACKING_SMALL, .chunk_bytes = 16 * 4096 };
	struct hkv_extent e[4], whole;
	struct hkv_pool *p;
	int n;

	(void)state;
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	n = hkv_alloc(p, 32, 0, 0, e, 4);
	assert_int_equal(n, 2);
	assert_int_equal(e[0].len + e[1].len, 32);
	whole.start = e[0].start < e[1].start ? e[0].start : e[1].start;
	whole.len = 32;
	memset(hkv_page_ptr(p, whole.start), 0x5a, 32 * 4096);
	assert_int_equal(hkv_unit_add(p, 1, &whole, 1), 0);
	assert_int_equal(hkv_free(p, e, 2), -EBUSY);
	assert_int_equal(hkv_evict(p, 64), 32);
	assert_int_equal(tp_stats(p).free_extents, 4);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evict_target),
		cmocka_unit_test(test_survivors),
		cmocka_unit_test(test_watermarks),
		cmocka_unit_test(test_watermark_gap),
		cmocka_unit_test(test_lane_watermark),
		cmocka_unit_test(test_evict_for_request),
		cmocka_unit_test(test_any_lane),
		cmocka_unit_test(test_alloc_lanes),
		cmocka_unit_test(test_victim_window),
		cmocka_unit_test(test_never_fits),
		cmocka_unit_test(test_evict_contig),
		cmocka_unit_test(test_evict_max_ext),
		cmocka_unit_test(test_callback_reentry),
		cmocka_unit_test(test_chunk_boundary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
