// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_unit.c - cache units: add, touch, pin/unpin, split, remove, and every
 * error code of them; failed calls change nothing (checked with hkv_free,
 * hkv_stats and hkv_check); hkv_check catches page bits that disagree with
 * the units.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "res.h"
#include "hkv_test_pool.h"

/* index-only pool; plain LRU victims (window 1) so eviction order is LRU order */
static struct hkv_pool *mkpool(uint64_t npages, unsigned nlanes)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = npages, .nlanes = nlanes,
				   .evict_window = 1 };

	return tp_pool(&o);
}

static struct hkv_extent take(struct hkv_pool *p, uint64_t n, unsigned lane)
{
	struct hkv_extent e;

	assert_int_equal(hkv_alloc(p, n, lane, HKV_ALLOC_CONTIG, &e, 1), 1);
	return e;
}

/* evicted units in order, with their extents */
struct log {
	unsigned n;
	uint64_t id[16];
	unsigned next[16];
	struct hkv_extent ext[16][4];
};

static void log_fn(void *ctx, uint64_t unit, const struct hkv_extent *ext, unsigned n)
{
	struct log *lg = ctx;

	assert_true(lg->n < 16 && n <= 4);
	lg->id[lg->n] = unit;
	lg->next[lg->n] = n;
	memcpy(lg->ext[lg->n], ext, n * sizeof(*ext));
	lg->n++;
}

static void test_add_remove(void **state)
{
	struct hkv_pool *p = mkpool(64, 1);
	struct hkv_extent a = take(p, 10, 0), b = take(p, 5, 0);
	struct hkv_extent two[2] = { a, b };
	struct hkv_stats st;

	(void)state;
	assert_int_equal(hkv_unit_add(p, 7, two, 2), 0);
	st = tp_stats(p);
	assert_int_equal(st.units, 1);
	assert_int_equal(st.unit_pages, 15);
	/* unit pages cannot be freed, nothing is freed then */
	assert_int_equal(hkv_free(p, &a, 1), -EBUSY);
	assert_int_equal(hkv_available(p), 49);
	/* remove without FREE: pages stay allocated, hkv_free works again */
	assert_int_equal(hkv_unit_remove(p, 7, 0), 0);
	assert_int_equal(hkv_available(p), 49);
	assert_int_equal(tp_stats(p).units, 0);
	assert_int_equal(hkv_free(p, two, 2), 0);
	/* remove with FREE gives the pages back */
	a = take(p, 20, 0);
	assert_int_equal(hkv_unit_add(p, 8, &a, 1), 0);
	assert_int_equal(hkv_unit_remove(p, 8, HKV_UNIT_FREE), 0);
	assert_int_equal(hkv_available(p), 64);
	assert_int_equal(hkv_free(p, &a, 1), -EINVAL);
	st = tp_stats(p);
	assert_int_equal(st.units, 0);
	assert_int_equal(st.unit_pages, 0);
	assert_int_equal(tp_stats(p).largest_free_extent, 64);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

static void test_add_errors(void **state)
{
	struct hkv_pool *p = mkpool(64, 1);
	struct hkv_extent a = take(p, 10, 0), b = take(p, 10, 0);
	struct hkv_extent bad;

	(void)state;
	assert_int_equal(hkv_unit_add(p, 1, &a, 1), 0);
	/* -EEXIST: the id is taken; b stays out of any unit */
	assert_int_equal(hkv_unit_add(p, 1, &b, 1), -EEXIST);
	/* -EINVAL: a page already in a unit (one page of a) */
	bad = (struct hkv_extent){ a.start + 9, 2 };
	assert_int_equal(hkv_unit_add(p, 2, &bad, 1), -EINVAL);
	/* -EINVAL: a page not allocated */
	bad = (struct hkv_extent){ b.start + 5, 10 };
	assert_int_equal(hkv_unit_add(p, 2, &bad, 1), -EINVAL);
	/* -EINVAL: a page named twice; the first extent must be rolled back */
	{
		struct hkv_extent twice[2] = { { b.start, 4 }, { b.start + 3, 2 } };

		assert_int_equal(hkv_unit_add(p, 2, twice, 2), -EINVAL);
	}
	/* -EINVAL: empty extent, out of range, overflow, no extents */
	bad = (struct hkv_extent){ b.start, 0 };
	assert_int_equal(hkv_unit_add(p, 2, &bad, 1), -EINVAL);
	bad = (struct hkv_extent){ 60, 5 };
	assert_int_equal(hkv_unit_add(p, 2, &bad, 1), -EINVAL);
	bad = (struct hkv_extent){ 1, UINT64_MAX };
	assert_int_equal(hkv_unit_add(p, 2, &bad, 1), -EINVAL);
	assert_int_equal(hkv_unit_add(p, 2, &b, 0), -EINVAL);
	assert_int_equal(hkv_unit_add(p, 2, NULL, 1), -EINVAL);
	assert_int_equal(hkv_unit_add(NULL, 2, &b, 1), -EINVAL);
	/* nothing changed: b is free-able, one unit of 10 pages */
	assert_int_equal(tp_stats(p).units, 1);
	assert_int_equal(tp_stats(p).unit_pages, 10);
	assert_int_equal(hkv_check(p), 0);
	assert_int_equal(hkv_free(p, &b, 1), 0);
	hkv_pool_destroy(p);
}

static void test_pins(void **state)
{
	struct hkv_pool *p = mkpool(64, 1);
	struct hkv_extent a = take(p, 10, 0);
	struct hkv_stats st;

	(void)state;
	assert_int_equal(hkv_unit_pin(p, 3), -ENOENT);
	assert_int_equal(hkv_unit_unpin(p, 3), -ENOENT);
	assert_int_equal(hkv_unit_touch(p, 3), -ENOENT);
	assert_int_equal(hkv_unit_remove(p, 3, 0), -ENOENT);
	assert_int_equal(hkv_unit_pin(NULL, 3), -EINVAL);
	assert_int_equal(hkv_unit_add(p, 3, &a, 1), 0);
	assert_int_equal(hkv_unit_unpin(p, 3), -EINVAL);	/* below zero */
	assert_int_equal(hkv_unit_pin(p, 3), 0);
	assert_int_equal(hkv_unit_pin(p, 3), 0);
	st = tp_stats(p);
	assert_int_equal(st.pinned_units, 1);
	assert_int_equal(st.pinned_pages, 10);
	/* pinned: never removed, freed or evicted */
	assert_int_equal(hkv_unit_remove(p, 3, HKV_UNIT_FREE), -EBUSY);
	assert_int_equal(hkv_unit_remove(p, 3, 0), -EBUSY);
	assert_int_equal(hkv_free(p, &a, 1), -EBUSY);
	assert_int_equal(hkv_evict(p, 64), 0);
	assert_int_equal(hkv_available(p), 54);
	assert_int_equal(hkv_unit_touch(p, 3), 0);
	assert_int_equal(hkv_unit_unpin(p, 3), 0);
	assert_int_equal(hkv_unit_remove(p, 3, 0), -EBUSY);	/* one pin left */
	assert_int_equal(hkv_unit_unpin(p, 3), 0);
	assert_int_equal(hkv_unit_unpin(p, 3), -EINVAL);
	st = tp_stats(p);
	assert_int_equal(st.pinned_units, 0);
	assert_int_equal(st.pinned_pages, 0);
	assert_int_equal(hkv_unit_remove(p, 3, 1u << 5), -EINVAL);	/* unknown flag */
	assert_int_equal(hkv_unit_remove(p, 3, HKV_UNIT_FREE), 0);
	assert_int_equal(hkv_available(p), 64);
	hkv_pool_destroy(p);
}

static void test_split(void **state)
{
	struct hkv_pool *p = mkpool(64, 1);
	struct hkv_extent e[2] = { take(p, 4, 0), take(p, 6, 0) };
	struct log lg = { 0 };

	(void)state;
	hkv_set_evict_fn(p, log_fn, &lg);
	assert_int_equal(hkv_unit_add(p, 1, e, 2), 0);
	assert_int_equal(hkv_unit_split(p, 9, 2, 2), -ENOENT);
	assert_int_equal(hkv_unit_split(p, 1, 0, 2), -EINVAL);
	assert_int_equal(hkv_unit_split(p, 1, 10, 2), -EINVAL);
	assert_int_equal(hkv_unit_split(p, 1, 2, 1), -EEXIST);
	assert_int_equal(hkv_unit_split(NULL, 1, 2, 2), -EINVAL);
	/* inside the first extent: 1 keeps [e0, 2), 2 gets [e0+2, 2) + e1 */
	assert_int_equal(hkv_unit_split(p, 1, 2, 2), 0);
	/* at the extent boundary of unit 2: 2 keeps 2 pages, 3 gets e1 */
	assert_int_equal(hkv_unit_split(p, 2, 2, 3), 0);
	assert_int_equal(tp_stats(p).units, 3);
	assert_int_equal(tp_stats(p).unit_pages, 10);
	assert_int_equal(hkv_evict(p, 64), 10);
	assert_int_equal(lg.n, 3);
	/* the halves kept the LRU position: evicted in unit order */
	assert_int_equal(lg.id[0], 1);
	assert_int_equal(lg.next[0], 1);
	assert_int_equal(lg.ext[0][0].start, e[0].start);
	assert_int_equal(lg.ext[0][0].len, 2);
	assert_int_equal(lg.id[1], 2);
	assert_int_equal(lg.next[1], 1);
	assert_int_equal(lg.ext[1][0].start, e[0].start + 2);
	assert_int_equal(lg.ext[1][0].len, 2);
	assert_int_equal(lg.id[2], 3);
	assert_int_equal(lg.next[2], 1);
	assert_int_equal(lg.ext[2][0].start, e[1].start);
	assert_int_equal(lg.ext[2][0].len, 6);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/* a split during a pending transfer leaves both halves pinned */
static void test_split_pinned(void **state)
{
	struct hkv_pool *p = mkpool(64, 1);
	struct hkv_extent a = take(p, 10, 0), b = take(p, 10, 0);
	struct log lg = { 0 };

	(void)state;
	hkv_set_evict_fn(p, log_fn, &lg);
	assert_int_equal(hkv_unit_add(p, 1, &a, 1), 0);
	assert_int_equal(hkv_unit_add(p, 2, &b, 1), 0);
	assert_int_equal(hkv_unit_touch(p, 1), 0);	/* order: 2, 1 */
	assert_int_equal(hkv_unit_pin(p, 1), 0);
	assert_int_equal(hkv_unit_split(p, 1, 3, 5), 0);
	assert_int_equal(tp_stats(p).pinned_units, 2);
	assert_int_equal(tp_stats(p).pinned_pages, 10);
	assert_int_equal(hkv_unit_remove(p, 5, 0), -EBUSY);
	assert_int_equal(hkv_evict(p, 64), 10);	/* only unit 2 goes */
	assert_int_equal(lg.n, 1);
	assert_int_equal(lg.id[0], 2);
	assert_int_equal(hkv_unit_unpin(p, 1), 0);
	assert_int_equal(tp_stats(p).pinned_units, 1);
	assert_int_equal(tp_stats(p).pinned_pages, 7);
	assert_int_equal(hkv_evict(p, 64), 3);	/* 1 goes, 5 stays pinned */
	assert_int_equal(lg.id[1], 1);
	assert_int_equal(hkv_unit_unpin(p, 5), 0);
	assert_int_equal(hkv_evict(p, 64), 7);
	assert_int_equal(lg.id[2], 5);
	assert_int_equal(hkv_available(p), 64);
	hkv_pool_destroy(p);
}

/* a unit whose extents cross lanes: marked, refused and freed lane by lane */
static void test_cross_lane(void **state)
{
	struct hkv_pool *p = mkpool(100, 4);
	struct hkv_extent l1 = take(p, 25, 1), l2 = take(p, 25, 2), l3 = take(p, 10, 3);
	struct hkv_extent whole = { l1.start, 50 };	/* lanes 1 and 2, one extent */
	struct hkv_extent mixed[2] = { l3, whole };
	struct hkv_stats st;

	(void)state;
	assert_int_equal(l1.start + 25, l2.start);
	assert_int_equal(hkv_unit_add(p, 1, mixed, 2), 0);
	assert_int_equal(hkv_free(p, &l2, 1), -EBUSY);
	assert_int_equal(hkv_free(p, &l3, 1), -EBUSY);
	assert_int_equal(hkv_unit_remove(p, 1, HKV_UNIT_FREE), 0);
	st = tp_stats(p);
	assert_int_equal(st.free_pages, 100);
	assert_int_equal(st.free_extents, 4);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(st.lane_free_pages[i], 25);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/* many units: the id hash grows; lookups and removal stay right */
static void test_many(void **state)
{
	enum { N = 5000 };
	struct hkv_pool *p = mkpool(N, 1);

	(void)state;
	for (uint64_t i = 0; i < N; i++) {
		struct hkv_extent e = take(p, 1, 0);

		assert_int_equal(hkv_unit_add(p, i * 0x9e3779b97f4a7c15ull, &e, 1), 0);
	}
	assert_int_equal(tp_stats(p).units, N);
	for (uint64_t i = 0; i < N; i += 2)
		assert_int_equal(hkv_unit_remove(p, i * 0x9e3779b97f4a7c15ull, HKV_UNIT_FREE), 0);
	for (uint64_t i = 0; i < N; i++)
		assert_int_equal(hkv_unit_touch(p, i * 0x9e3779b97f4a7c15ull), i % 2 ? 0 : -ENOENT);
	assert_int_equal(hkv_available(p), N / 2);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/* a unit of n one-page extents, every other page of its run (so that no
 * two coalesce): its extents in ext */
static void add_spread(struct hkv_pool *p, uint64_t id, unsigned n, struct hkv_extent *ext)
{
	struct hkv_extent run = take(p, 2 * n, 0);

	for (unsigned i = 0; i < n; i++) {
		ext[i] = (struct hkv_extent){ run.start + 2 * i, 1 };
		assert_int_equal(hkv_free(p, &(struct hkv_extent){ run.start + 2 * i + 1, 1 }, 1), 0);
	}
	assert_int_equal(hkv_unit_add(p, id, ext, n), 0);
}

/*
 * Freed unit records are kept for the next units of their size class (1,
 * 2, 4, 8 extents): records taken back, split, evicted and removed in
 * every order hold exactly the extents they were given (ASan would see a
 * record too small for its extents), and the pool checks clean.
 */
static void test_record_reuse(void **state)
{
	enum { N = 4096, ROUNDS = 400 };
	struct hkv_pool *p = mkpool(N, 1);
	struct hkv_extent ext[16], got[16];
	uint64_t x = 1;

	(void)state;
	for (unsigned r = 0; r < ROUNDS; r++) {
		unsigned n = 1 + r % 12;	/* in every class, and past them */
		uint64_t id = 1000 + r;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		add_spread(p, id, n, ext);
		assert_int_equal(hkv_unit_extents(p, id, got, 16), n);
		assert_memory_equal(got, ext, n * sizeof(*ext));
		unsigned left = n;

		if (n > 1 && x >> 63) {		/* the split halves: fewer extents each */
			unsigned at = 1 + (unsigned)(x >> 40) % (n - 1);

			left = at;
			assert_int_equal(hkv_unit_split(p, id, at, id + 1000000), 0);
			assert_int_equal(hkv_unit_extents(p, id, got, 16), at);
			assert_memory_equal(got, ext, at * sizeof(*ext));
			assert_int_equal(hkv_unit_extents(p, id + 1000000, got, 16), n - at);
			assert_memory_equal(got, ext + at, (n - at) * sizeof(*ext));
			assert_int_equal(hkv_unit_remove(p, id + 1000000, HKV_UNIT_FREE), 0);
		}
		if (x >> 62 & 1)	/* evicted, or removed */
			assert_int_equal(hkv_evict(p, N), left);
		else
			assert_int_equal(hkv_unit_remove(p, id, HKV_UNIT_FREE), 0);
		assert_int_equal(tp_stats(p).units, 0);
	}
	assert_int_equal(hkv_available(p), N);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/*
 * hkv_check() holds units and page bits to each other: a page marked in a
 * unit that no unit holds, a unit page not marked, or a page in two units
 * is -EUCLEAN; the check leaves the bits as it found them.
 */
static void test_check_units(void **state)
{
	struct hkv_pool *p = mkpool(200, 2);
	struct hkv_extent a = take(p, 10, 0), b = take(p, 10, 1), loose = take(p, 5, 1);
	struct xindex *x0 = &p->lanes[0].xi, *x1 = &p->lanes[1].xi;

	(void)state;
	assert_int_equal(hkv_unit_add(p, 1, &a, 1), 0);
	assert_int_equal(hkv_unit_add(p, 2, &b, 1), 0);
	assert_int_equal(hkv_check(p), 0);
	/* an in_unit page that belongs to no unit */
	xi_set_range(x1->in_unit, loose.start + 2 - x1->base, 1, true);
	assert_int_equal(hkv_check(p), -EUCLEAN);
	xi_set_range(x1->in_unit, loose.start + 2 - x1->base, 1, false);
	assert_int_equal(hkv_check(p), 0);
	/* a unit page not marked */
	xi_set_range(x0->in_unit, a.start + 9 - x0->base, 1, false);
	assert_int_equal(hkv_check(p), -EUCLEAN);
	xi_set_range(x0->in_unit, a.start + 9 - x0->base, 1, true);
	assert_int_equal(hkv_check(p), 0);
	/* two units over one page (forged: unit 2 claims a page of unit 1) */
	{	/* no API can do this */
		struct hkv_extent *e = &p->res->lru[1].head->ext[0];
		uint64_t old = e->start;

		e->start = a.start;	/* lane 0 pages, marked by unit 1 */
		assert_int_equal(hkv_check(p), -EUCLEAN);
		e->start = old;
	}
	/* the failed checks gave back every bit: all is as before */
	assert_int_equal(hkv_check(p), 0);
	assert_int_equal(hkv_free(p, &a, 1), -EBUSY);
	assert_int_equal(hkv_free(p, &loose, 1), 0);
	assert_int_equal(hkv_unit_remove(p, 1, HKV_UNIT_FREE), 0);
	assert_int_equal(hkv_unit_remove(p, 2, HKV_UNIT_FREE), 0);
	assert_int_equal(hkv_available(p), 200);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_remove),
		cmocka_unit_test(test_add_errors),
		cmocka_unit_test(test_pins),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_split_pinned),
		cmocka_unit_test(test_cross_lane),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_record_reuse),
		cmocka_unit_test(test_check_units),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
