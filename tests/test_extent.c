// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_extent.c - the free-extent index (lib/extent*.c) on its own: best
 * fit, ties to lower addresses, carving from the low end, fewest extents,
 * coalescing, chunk barriers, the treap of long extents.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "internal.h"

static long take(struct xindex *x, uint64_t n, struct hkv_extent *ext)
{
	long k = xi_plan(x, n, false);

	if (k > 0) {
		assert_int_equal(xi_reserve_plan(x, n, k), 0);
		xi_take(x, n, k, ext);
	}
	return k;
}

static void put(struct xindex *x, uint64_t start, uint64_t len)
{
	assert_int_equal(xi_check_allocated(x, start, len), 0);
	assert_int_equal(xi_reserve(x, 1), 0);
	xi_free(x, start, len);
	assert_int_equal(xi_check(x), 0);
}

static void test_init(void **state)
{
	struct xindex x;

	(void)state;
	assert_int_equal(xi_init(&x, 100, 5000, 0), 0);
	assert_int_equal(x.free_pages, 5000);
	assert_int_equal(x.free_extents, 1);
	assert_int_equal(x.largest, 5000);
	assert_int_equal(xi_check(&x), 0);
	xi_fini(&x);
	assert_int_equal(xi_init(&x, 0, 0, 0), -E2BIG);
	assert_int_equal(xi_init(&x, 0, (uint64_t)UINT32_MAX + 5, 0), -E2BIG);
}

static void test_carve_front_and_coalesce(void **state)
{
	struct hkv_extent e[4], a, b, c;
	struct xindex x;

	(void)state;
	assert_int_equal(xi_init(&x, 1000, 64, 0), 0);
	assert_int_equal(take(&x, 10, e), 1);
	a = e[0];
	assert_int_equal(a.start, 1000);	/* low end of the space */
	assert_int_equal(take(&x, 10, e), 1);
	b = e[0];
	assert_int_equal(b.start, 1010);
	assert_int_equal(take(&x, 10, e), 1);
	c = e[0];
	assert_int_equal(x.free_extents, 1);
	put(&x, a.start, a.len);
	put(&x, c.start, c.len);		/* merges with the tail run */
	assert_int_equal(x.free_extents, 2);
	assert_int_equal(x.largest, 44);
	put(&x, b.start, b.len);		/* merges both sides */
	assert_int_equal(x.free_extents, 1);
	assert_int_equal(x.largest, 64);
	assert_int_equal(x.free_pages, 64);
	xi_fini(&x);
}

/* holes of 3, 5, 5, 8 pages: best fit takes the smallest that fits */
static void test_best_fit(void **state)
{
	static const uint32_t holes[] = { 8, 5, 3, 5 };
	struct hkv_extent e[8], hole[4];
	struct xindex x;
	uint64_t p = 0;
	unsigned i;

	(void)state;
	assert_int_equal(xi_init(&x, 0, 256, 0), 0);
	for (i = 0; i < 4; i++) {
		assert_int_equal(take(&x, holes[i], e), 1);
		hole[i] = e[0];
		assert_int_equal(take(&x, 1, e), 1);	/* a separator */
		p += holes[i] + 1;
	}
	for (i = 0; i < 4; i++)
		put(&x, hole[i].start, hole[i].len);
	assert_int_equal(take(&x, 4, e), 1);
	assert_int_equal(e[0].start, hole[1].start);	/* a 5, the lower one */
	assert_int_equal(take(&x, 4, e), 1);
	assert_int_equal(e[0].start, hole[3].start);	/* the other 5 */
	assert_int_equal(take(&x, 3, e), 1);
	assert_int_equal(e[0].start, hole[2].start);	/* exactly 3 */
	assert_int_equal(take(&x, 7, e), 1);
	assert_int_equal(e[0].start, hole[0].start);	/* the 8 */
	assert_int_equal(xi_check(&x), 0);
	xi_fini(&x);
}

/* free runs of 10, 20, 30, 4 pages in [0, 100), separated by allocated pages */
static void four_runs(struct xindex *x)
{
	struct hkv_extent e;

	assert_int_equal(xi_init(x, 0, 100, 0), 0);
	assert_int_equal(take(x, 100, &e), 1);
	put(x, 0, 10);
	put(x, 11, 20);
	put(x, 32, 30);
	put(x, 63, 4);
}

/* no run is long enough: whole runs largest first plus a best-fit rest */
static void test_fewest_extents(void **state)
{
	struct hkv_extent e[16];
	struct xindex x;

	(void)state;
	four_runs(&x);
	assert_int_equal(xi_plan(&x, 31, true), -ENOMEM);
	assert_int_equal(xi_plan(&x, 65, false), -ENOMEM);
	assert_int_equal(xi_plan(&x, 64, false), 4);
	assert_int_equal(xi_plan(&x, 35, false), 2);
	assert_int_equal(take(&x, 35, e), 2);
	assert_int_equal(e[0].start, 32);	/* the 30 */
	assert_int_equal(e[0].len, 30);
	assert_int_equal(e[1].start, 0);	/* 5 more: best fit is the 10 */
	assert_int_equal(e[1].len, 5);
	assert_int_equal(xi_check(&x), 0);
	xi_fini(&x);
}

static void test_fewest_remainder_best_fit(void **state)
{
	struct hkv_extent e[4];
	struct xindex x;

	(void)state;
	four_runs(&x);
	/* 33 = the 30 + 3, and the best fit for 3 is the run of 4 */
	assert_int_equal(take(&x, 33, e), 2);
	assert_int_equal(e[0].start, 32);
	assert_int_equal(e[1].start, 63);
	assert_int_equal(e[1].len, 3);
	assert_int_equal(xi_check(&x), 0);
	xi_fini(&x);
}

/* extents never cross a barrier (registration chunk), and never merge */
static void test_barrier(void **state)
{
	struct hkv_extent e[8];
	struct xindex x;

	(void)state;
	/* space [10, 110) with barriers at multiples of 32: 10-31, 32-63, ... */
	assert_int_equal(xi_init(&x, 10, 100, 32), 0);
	assert_int_equal(x.free_extents, 4);
	assert_int_equal(x.largest, 32);
	assert_int_equal(xi_plan(&x, 33, true), -ENOMEM);
	assert_int_equal(take(&x, 40, e), 2);
	assert_true(e[0].start % 32 == 0 && e[0].len == 32);
	assert_int_equal(xi_check(&x), 0);
	put(&x, e[0].start, e[0].len);
	put(&x, e[1].start, e[1].len);
	assert_int_equal(x.free_extents, 4);	/* no merge across 32, 64, 96 */
	xi_fini(&x);
}

/*
 * Lengths nexact+1..nlong live in long bins (a treap by start per length):
 * best fit is the smallest such length, ties to the lower address, and the
 * lowest moves to the next one when it is taken or merged away.
 */
static void test_long_bins(void **state)
{
	static const uint32_t len[8] = { 300, 300, 700, 300, 257, 1024, 300, 700 };
	struct hkv_extent e[8], runs[8];
	struct xindex x;
	unsigned i;

	(void)state;
	assert_int_equal(xi_init(&x, 0, 200000, 0), 0);
	assert_int_equal(x.nexact, 256);
	assert_int_equal(x.nlong, 1024);
	for (i = 0; i < 8; i++) {	/* separated runs */
		assert_int_equal(take(&x, len[i], e), 1);
		runs[i] = e[0];
		assert_int_equal(take(&x, 1, e), 1);
	}
	assert_int_equal(take(&x, x.free_pages, e), 1);	/* the wilderness */
	for (i = 8; i-- > 0;)		/* freed high to low: each new one the lowest */
		put(&x, runs[i].start, runs[i].len);
	assert_int_equal(x.tree_count, 0);
	assert_int_equal(x.bin_count[300], 4);
	assert_int_equal(x.largest, 1024);
	assert_int_equal(take(&x, 258, e), 1);		/* best fit 300, the lowest */
	assert_int_equal(e[0].start, runs[0].start);
	assert_int_equal(xi_check(&x), 0);		/* rest of 42 in an exact bin */
	assert_int_equal(take(&x, 300, e), 1);		/* next lowest 300: run 1 */
	assert_int_equal(e[0].start, runs[1].start);
	put(&x, runs[1].start, 300);			/* lowest again */
	assert_int_equal(take(&x, 299, e), 1);
	assert_int_equal(e[0].start, runs[1].start);
	put(&x, runs[1].start, 299);			/* merges with its 1-page rest */
	assert_int_equal(take(&x, 257, e), 1);		/* exact 257: run 4 */
	assert_int_equal(e[0].start, runs[4].start);
	assert_int_equal(take(&x, 1024, e), 1);	/* the largest, from a long bin */
	assert_int_equal(e[0].start, runs[5].start);
	assert_int_equal(x.largest, 700);
	assert_int_equal(xi_plan(&x, 1500, false), 3);	/* 700 + 700 + a 300 */
	assert_int_equal(take(&x, 1500, e), 3);
	assert_int_equal(e[0].start, runs[2].start);
	assert_int_equal(e[1].start, runs[7].start);
	assert_int_equal(e[2].start, runs[1].start);
	assert_int_equal(e[2].len, 100);
	assert_int_equal(xi_check(&x), 0);
	xi_fini(&x);
}

/* long extents live in the treap: best fit and largest-first through it */
static void test_treap(void **state)
{
	struct hkv_extent e[64], runs[40];
	struct xindex x;
	unsigned i;

	(void)state;
	assert_int_equal(xi_init(&x, 0, 200000, 0), 0);
	for (i = 0; i < 40; i++) {	/* runs of 1100 + 37 * i, separated */
		assert_int_equal(take(&x, 1100 + 37 * i, e), 1);
		runs[i] = e[0];
		assert_int_equal(take(&x, 1, e), 1);
	}
	assert_int_equal(take(&x, x.free_pages, e), 1);	/* the wilderness */
	for (i = 0; i < 40; i += 2)
		put(&x, runs[i].start, runs[i].len);
	assert_int_equal(x.tree_count, 20);
	assert_int_equal(take(&x, 1101, e), 1);		/* best fit: run 2 */
	assert_int_equal(e[0].start, runs[2].start);
	assert_int_equal(xi_check(&x), 0);
	/* runs 38, 36, 34 hold 7296 pages: a 4th extent of 204, best fit */
	assert_int_equal(xi_plan(&x, 7500, false), 4);
	assert_int_equal(take(&x, 7500, e), 4);
	assert_int_equal(e[0].start, runs[38].start);
	assert_int_equal(e[1].start, runs[36].start);
	assert_int_equal(e[2].start, runs[34].start);
	assert_int_equal(e[3].start, runs[0].start);	/* smallest that fits */
	assert_int_equal(xi_check(&x), 0);
	xi_fini(&x);
}

/* equal longest runs in the treap: largest-first takes the lower one */
static void test_treap_ties_low(void **state)
{
	struct hkv_extent e[4];
	struct xindex x;

	(void)state;
	assert_int_equal(xi_init(&x, 0, 100, 0), 0);	/* one bin: runs in the treap */
	assert_int_equal(take(&x, 100, e), 1);
	put(&x, 50, 10);
	put(&x, 0, 10);
	put(&x, 80, 10);
	assert_int_equal(take(&x, 15, e), 2);
	assert_int_equal(e[0].start, 0);
	assert_int_equal(e[0].len, 10);
	assert_int_equal(e[1].start, 50);		/* best fit, lower of the two */
	assert_int_equal(e[1].len, 5);
	assert_int_equal(take(&x, 10, e), 1);
	assert_int_equal(e[0].start, 80);		/* the only run of 10 left */
	assert_int_equal(xi_check(&x), 0);
	xi_fini(&x);
}

static void test_check_catches_corruption(void **state)
{
	struct hkv_extent e[2];
	struct xindex x;

	(void)state;
	hkv_set_log_fn(NULL, NULL);
	setenv("HUGEKV_LOG", "quiet", 1);
	env_reload();
	assert_int_equal(xi_init(&x, 0, 64, 0), 0);
	assert_int_equal(take(&x, 8, e), 1);
	x.allocated[0] &= ~1ull;		/* a page freed behind its back */
	assert_int_equal(xi_check(&x), -EUCLEAN);
	x.allocated[0] |= 1ull;
	x.in_unit[0] |= 1ull << 40;		/* a free page in a unit */
	assert_int_equal(xi_check(&x), -EUCLEAN);
	x.in_unit[0] &= ~(1ull << 40);
	x.free_pages++;
	assert_int_equal(xi_check(&x), -EUCLEAN);
	x.free_pages--;
	assert_int_equal(xi_check(&x), 0);
	xi_fini(&x);
	unsetenv("HUGEKV_LOG");
	env_reload();
}

/* best-fit ties go to the lower address, whatever the order of the frees
 * and however near each other the candidates are */
static void test_ties_lower_address(void **state)
{
	struct hkv_extent e[1];
	struct xindex x;

	(void)state;
	assert_int_equal(xi_init(&x, 0, 4096, 0), 0);
	assert_int_equal(take(&x, 30, e), 1);
	put(&x, 10, 5);				/* free runs [10,+5) and [20,+5) */
	put(&x, 20, 5);
	assert_int_equal(take(&x, 5, e), 1);
	assert_int_equal(e[0].start, 10);
	assert_int_equal(take(&x, 5, e), 1);
	assert_int_equal(e[0].start, 20);
	put(&x, 20, 5);				/* the other order */
	put(&x, 10, 5);
	assert_int_equal(take(&x, 4, e), 1);
	assert_int_equal(e[0].start, 10);
	/* three equal runs far apart (different groups), freed high to low */
	assert_int_equal(take(&x, 3000, e), 1);
	put(&x, 2000, 7);
	put(&x, 1000, 7);
	put(&x, 500, 7);
	assert_int_equal(take(&x, 6, e), 1);
	assert_int_equal(e[0].start, 500);
	assert_int_equal(take(&x, 7, e), 1);
	assert_int_equal(e[0].start, 1000);
	xi_fini(&x);
}

/* a group of 64 pages with more tagged pages than its line holds spills its
 * tags to an overflow block and takes them back when it calms down */
static void test_crowded_group(void **state)
{
	struct hkv_extent e[1];
	struct xindex x;
	uint64_t p;

	(void)state;
	assert_int_equal(xi_init(&x, 1000, 192, 0), 0);
	for (p = 0; p < 192; p++) {
		assert_int_equal(take(&x, 1, e), 1);
		assert_int_equal(e[0].start, 1000 + p);	/* the low end, page by page */
	}
	for (p = 64; p < 128; p += 2)		/* 32 one-page runs in group 1 */
		put(&x, 1000 + p, 1);
	assert_true(x.ovf_cap >= 1 && x.ovf_nfree < x.ovf_cap);
	assert_int_equal(xi_tag(&x, 70), x.node[xi_tag(&x, 70)].start == 70 ? xi_tag(&x, 70) : XI_NIL);
	assert_int_equal(take(&x, 1, e), 1);	/* best fit: the lowest one-page run */
	assert_int_equal(e[0].start, 1064);
	put(&x, 1064, 1);
	for (p = 65; p < 128; p += 2)		/* merge them all: one run, tags back */
		put(&x, 1000 + p, 1);
	assert_int_equal(x.ovf_nfree, x.ovf_cap);
	assert_int_equal(x.free_extents, 1);
	assert_int_equal(x.largest, 64);
	put(&x, 1000, 64);
	put(&x, 1128, 64);
	assert_int_equal(x.largest, 192);
	xi_fini(&x);
}

/*
 * The metadata bound with its lane term: at most XI_META_PAGE bytes per
 * page, XI_META_EXTENT per free extent, XI_META_CROWDED per crowded group,
 * XI_META_LANE per lane (XI_META_QUEUE more for a lane that had a deferred
 * free: none here) and the pool struct, so a thousand lanes of 100
 * pages (18 B/page once) or one-page lanes (1.6 KB once) stay
 * proportional. Checked fresh and after a fragmenting churn.
 */
static void check_meta_bound(uint64_t npages, unsigned nlanes)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = npages, .nlanes = nlanes,
				   .backing = HKV_BACKING_NONE, .numa_node = -1 };
	struct hkv_stats st = { .sz = sizeof(st) };
	struct hkv_extent e[8];
	struct hkv_pool *p;
	uint64_t bound, crowded = 0, *keep = calloc(npages, sizeof(*keep)), nkeep = 0;

	assert_int_equal(hkv_pool_create(&o, &p), 0);
	for (int round = 0; round < 2; round++) {
		assert_int_equal(hkv_stats(p, &st), 0);
		for (unsigned l = 0; l < nlanes; l++)
			for (uint64_t g = 0; g < (p->lanes[l].npages + 63) / 64; g++)
				crowded += p->lanes[l].xi.grp[g].blk != 0;
		bound = XI_META_PAGE * npages + XI_META_EXTENT * st.free_extents +
			XI_META_CROWDED * crowded + XI_META_LANE * (uint64_t)nlanes +
			sizeof(struct hkv_pool);
		print_message("%llu pages, %u lanes: %llu metadata bytes (%.2f B/page), bound %llu\n",
			      (unsigned long long)npages, nlanes,
			      (unsigned long long)st.metadata_bytes,
			      (double)st.metadata_bytes / (double)npages, (unsigned long long)bound);
		assert_true(st.metadata_bytes <= bound);
		/* fragment: one-page allocations everywhere, every other one freed */
		while (round == 0 && hkv_alloc(p, 1, HKV_LANE_ANY, 0, e, 8) == 1)
			keep[nkeep++] = e[0].start;
		for (uint64_t i = 0; round == 0 && i < nkeep; i += 2) {
			e[0] = (struct hkv_extent){ keep[i], 1 };
			assert_int_equal(hkv_free(p, e, 1), 0);
		}
		crowded = 0;
	}
	hkv_pool_destroy(p);
	free(keep);
}

static void test_metadata_bound(void **state)
{
	(void)state;
	check_meta_bound(100000, 1000);
	check_meta_bound(1000, 1000);
	check_meta_bound(64, 64);
	check_meta_bound(1, 1);
	check_meta_bound(16384, 1);
	check_meta_bound(1 << 20, 1);
	check_meta_bound(1 << 20, 7);
}

static void test_bit_ranges(void **state)
{
	uint64_t bits[32] = { 0 };	/* words 0, 8, 16, 24 (XI_WORD stride) */

	(void)state;
	xi_set_range(bits, 60, 70, true);
	assert_true(xi_test_range(bits, 60, 70, true));
	assert_false(xi_test_range(bits, 59, 2, true));
	assert_true(xi_test_range(bits, 130, 50, false));
	assert_false(xi_test_range(bits, 129, 2, false));
	assert_int_equal(bits[XI_WORD(0)], 0xfull << 60);
	assert_int_equal(bits[XI_WORD(64)], ~0ull);
	assert_int_equal(bits[XI_WORD(128)], 0x3);
	for (unsigned i = 0; i < 32; i++)	/* the rest of each group line */
		if (i % 8)
			assert_int_equal(bits[i], 0);
	xi_set_range(bits, 64, 64, false);
	assert_int_equal(bits[XI_WORD(64)], 0);
	assert_true(xi_test_range(bits, 0, 0, true));
}

/* long ranges (past two group lines) against a bit-per-byte model: every
 * (from, len) on five group lines, set, clear, test and the free check */
static void test_long_ranges(void **state)
{
	enum { PAGES = 320 };
	uint64_t bits[5 * 8] = { 0 }, rng = 0x9e3779b97f4a7c15ull;
	uint8_t alloc[PAGES], unit[PAGES];
	struct xindex x;

	(void)state;
	for (unsigned from = 0; from < PAGES; from += 3) {
		for (unsigned len = 1; from + len <= PAGES; len++) {
			xi_set_range(bits, from, len, true);
			for (unsigned p = 0; p < PAGES; p++)
				assert_int_equal(bits[XI_WORD(p)] >> (p & 63) & 1,
						 p >= from && p < from + len);
			assert_true(xi_test_range(bits, from, len, true));
			xi_set_range(bits, 0, PAGES, true);
			xi_set_range(bits, from, len, false);
			assert_true(xi_test_range(bits, from, len, false));
			for (unsigned p = 0; p < PAGES; p++)
				assert_int_equal(bits[XI_WORD(p)] >> (p & 63) & 1,
						 p < from || p >= from + len);
			xi_set_range(bits, 0, PAGES, false);
		}
	}
	assert_int_equal(xi_init(&x, 1000, PAGES, 0), 0);
	for (unsigned round = 0; round < 4; round++) {
		for (unsigned p = 0; p < PAGES; p++) {	/* mostly allocated, some in units */
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			alloc[p] = (rng >> 33) % 97 != 0 || round == 0;
			unit[p] = alloc[p] && (rng >> 40) % 89 == 0 && round != 1;
			x.allocated[XI_WORD(p)] = (x.allocated[XI_WORD(p)] & ~(1ull << (p & 63))) |
						  (uint64_t)alloc[p] << (p & 63);
			x.in_unit[XI_WORD(p)] = (x.in_unit[XI_WORD(p)] & ~(1ull << (p & 63))) |
						(uint64_t)unit[p] << (p & 63);
		}
		for (unsigned from = 0; from < PAGES; from += 5) {
			for (unsigned len = 1; from + len <= PAGES; len++) {
				int want = 0;

				for (unsigned p = from; p < from + len; p++) {
					if (!alloc[p]) {
						want = -EINVAL;
						break;
					}
					if (unit[p])
						want = -EBUSY;
				}
				assert_int_equal(xi_check_allocated(&x, 1000 + from, len), want);
				assert_int_equal(xi_check_allocated_fast(&x, 1000 + from, len), want);
			}
		}
	}
	xi_fini(&x);
}

/* a bin's lowest group moves up through every level of its group bitmap
 * (three levels here) and back down when a lower extent is freed */
static void test_bin_lowest_levels(void **state)
{
	static const uint32_t runs[] = {	/* 3-page runs, freed in this order */
		8000 * 64 + 1, 70 * 64 + 20, 4100 * 64 + 7, 70 * 64 + 3, 4100 * 64 + 40,
	};
	static const uint32_t want[] = {
		70 * 64 + 3, 70 * 64 + 20, 4100 * 64 + 7, 4100 * 64 + 40, 8000 * 64 + 1,
	};
	struct hkv_extent e[1];
	struct xindex x;

	(void)state;
	assert_int_equal(xi_init(&x, 0, 8192 * 64, 0), 0);
	assert_true(x.bin_levels >= 3);
	assert_int_equal(take(&x, 8192 * 64, e), 1);
	for (unsigned i = 0; i < 5; i++)
		put(&x, runs[i], 3);
	for (unsigned i = 0; i < 5; i++) {
		assert_int_equal(take(&x, 3, e), 1);
		assert_int_equal(e[0].start, want[i]);
		assert_int_equal(xi_check(&x), 0);
		if (i == 1) {		/* a lower one arrives: it goes first */
			put(&x, 10 * 64 + 5, 3);
			assert_int_equal(take(&x, 3, e), 1);
			assert_int_equal(e[0].start, 10 * 64 + 5);
		}
	}
	assert_int_equal(x.free_extents, 0);
	xi_fini(&x);
}

/*
 * Churn near 95 % occupancy on the index alone, against a byte per page:
 * every one-extent answer is the lowest-address best fit among the free
 * runs (split at barriers), for barrier layouts where a free run inside a
 * group line is its extent (none, group-aligned) and where it need not be
 * (a barrier inside a line, an unaligned base).
 */
static uint64_t churn_rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* the lowest-address best fit for n pages in the model, or UINT64_MAX */
static uint64_t model_fit(const uint8_t *used, uint64_t base, uint64_t npages,
			  uint64_t barrier, uint64_t n)
{
	uint64_t best = UINT64_MAX, best_len = UINT64_MAX;

	for (uint64_t p = 0; p < npages;) {
		uint64_t s = p;

		if (used[p]) {
			p++;
			continue;
		}
		do
			p++;
		while (p < npages && !used[p] && !(barrier && (base + p) % barrier == 0));
		if (p - s >= n && p - s < best_len) {
			best = s;
			best_len = p - s;
		}
	}
	return best;
}

static void churn_one(uint64_t base, uint64_t npages, uint64_t barrier, uint64_t seed)
{
	struct { uint64_t start, len; } *live = calloc(npages, sizeof(*live));
	uint8_t *used = calloc(npages, 1);
	uint64_t nlive = 0, nused = 0, rng = seed;
	struct hkv_extent e[64];
	struct xindex x;

	assert_non_null(live);
	assert_non_null(used);
	assert_int_equal(xi_init(&x, base, npages, barrier), 0);
	assert_int_equal(xi_check(&x), 0);
	for (int op = 0; op < 6000; op++) {
		bool alloc = nused < npages * 95 / 100 && (churn_rnd(&rng) % 2 || !nlive);
		uint64_t n = churn_rnd(&rng) % 8 ? 1 + churn_rnd(&rng) % 12 : 1 + churn_rnd(&rng) % 300;

		if (alloc) {
			uint64_t want = model_fit(used, base, npages, barrier, n);
			long k = xi_plan(&x, n, false);

			if (k <= 0 || k > 64)
				continue;
			assert_int_equal(xi_reserve_plan(&x, n, k), 0);
			xi_take(&x, n, k, e);
			if (k == 1)
				assert_int_equal(e[0].start - base, want);
			for (long i = 0; i < k; i++) {
				for (uint64_t p = e[i].start - base; p < e[i].start - base + e[i].len; p++) {
					assert_int_equal(used[p], 0);
					used[p] = 1;
				}
				live[nlive].start = e[i].start;
				live[nlive++].len = e[i].len;
				nused += e[i].len;
			}
		} else if (nlive) {
			uint64_t i = churn_rnd(&rng) % nlive;

			put(&x, live[i].start, live[i].len);
			memset(used + live[i].start - base, 0, live[i].len);
			nused -= live[i].len;
			live[i] = live[--nlive];
		}
		if (op % 97 == 0)
			assert_int_equal(xi_check(&x), 0);
	}
	assert_int_equal(xi_check(&x), 0);
	xi_fini(&x);
	free(live);
	free(used);
}

static void test_churn_barriers(void **state)
{
	(void)state;
	churn_one(0, 6000, 0, 1);		/* no barrier */
	churn_one(37, 6000, 0, 2);		/* unaligned base, no barrier */
	churn_one(0, 6000, 128, 3);		/* barriers on group lines */
	churn_one(37, 6000, 128, 4);		/* ... not on this space's lines */
	churn_one(0, 6000, 100, 5);		/* barriers inside lines */
	churn_one(5, 6001, 24, 6);		/* several per line */
	/* more extents in a line at creation than its tag slots hold: the
	 * overflow blocks are reserved for them (a line with one free slot
	 * left and a two-tag extent to file used to take a block it had not
	 * reserved, and a later take crashed) */
	churn_one(0, 256, 10, 7);
	churn_one(3, 3000, 7, 8);
	churn_one(0, 640, 1, 9);		/* every page a barrier */
}

/*
 * The one-step paths (xi_alloc_one(), xi_free_one()) against the planned
 * ones (xi_plan(), xi_reserve_plan(), xi_take(); xi_reserve_free(),
 * xi_check_allocated(), xi_free()) on twin indexes fed the same churn:
 * every extent returned, every free's answer and the indexes' figures
 * must match, and a refused free must change nothing.
 */
struct xi_snap {
	void *grp, *bins, *counts;
	size_t grp_bytes, bins_bytes, counts_bytes;
	uint64_t free_pages, free_extents, largest;
};

static void snap_take(const struct xindex *x, struct xi_snap *sn)
{
	sn->grp_bytes = ((size_t)x->npages + 63) / 64 * sizeof(struct xgroup);
	sn->bins_bytes = (size_t)(x->nexact + 1) * x->bin_stride * 8;
	sn->counts_bytes = ((size_t)x->nlong + 1 + x->nexact + 1 +
			    2 * (x->nlong - x->nexact)) * sizeof(uint32_t);
	sn->grp = malloc(sn->grp_bytes);
	sn->bins = malloc(sn->bins_bytes);
	sn->counts = malloc(sn->counts_bytes);
	assert_non_null(sn->grp);
	assert_non_null(sn->bins);
	assert_non_null(sn->counts);
	memcpy(sn->grp, x->grp, sn->grp_bytes);
	memcpy(sn->bins, x->bin_bits, sn->bins_bytes);
	memcpy(sn->counts, x->bin_count, sn->counts_bytes);
	sn->free_pages = x->free_pages;
	sn->free_extents = x->free_extents;
	sn->largest = x->largest;
}

/* x is as the snapshot saw it; the snapshot is released */
static void snap_same(const struct xindex *x, struct xi_snap *sn)
{
	assert_int_equal(memcmp(sn->grp, x->grp, sn->grp_bytes), 0);
	assert_int_equal(memcmp(sn->bins, x->bin_bits, sn->bins_bytes), 0);
	assert_int_equal(memcmp(sn->counts, x->bin_count, sn->counts_bytes), 0);
	assert_int_equal(sn->free_pages, x->free_pages);
	assert_int_equal(sn->free_extents, x->free_extents);
	assert_int_equal(sn->largest, x->largest);
	free(sn->grp);
	free(sn->bins);
	free(sn->counts);
}

/* the planned free: its answer, nothing changed when it refuses */
static int free_planned(struct xindex *x, uint64_t start, uint64_t len)
{
	int err = xi_reserve_free(x, start, len);

	if (!err)
		err = xi_check_allocated(x, start, len);
	if (!err)
		xi_free(x, start, len);
	return err;
}

/* a refused one-step free changes nothing, and answers as the planned one */
static void free_refused(struct xindex *a, struct xindex *b, uint64_t start, uint64_t len,
			 int want)
{
	struct xi_snap sn;

	snap_take(b, &sn);
	assert_int_equal(xi_free_one(b, start, len), want);
	snap_same(b, &sn);
	assert_int_equal(free_planned(a, start, len), want);
}

static void one_step_churn(uint64_t base, uint64_t npages, uint64_t barrier, uint64_t seed)
{
	struct { uint64_t start, len; } *live = calloc(npages, sizeof(*live));
	uint64_t nlive = 0, nused = 0, rng = seed, fused = 0, refused = 0;
	struct hkv_extent ea[64], eb[64];
	struct xindex a, b;

	assert_non_null(live);
	assert_int_equal(xi_init(&a, base, npages, barrier), 0);
	assert_int_equal(xi_init(&b, base, npages, barrier), 0);
	for (int op = 0; op < 8000; op++) {
		bool alloc = nused < npages * 95 / 100 && (churn_rnd(&rng) % 2 || !nlive);
		uint64_t r = churn_rnd(&rng) % 16;
		/* exact bins, long bins (nexact = 60 here) and the treap */
		uint64_t n = r < 12 ? 1 + churn_rnd(&rng) % 12 :
			     r < 15 ? 1 + churn_rnd(&rng) % 300 : 1 + churn_rnd(&rng) % 900;

		if (alloc) {
			long k = xi_alloc_one(&b, n, eb);
			long ka = xi_plan(&a, n, false);

			if (k == 0) {	/* not one extent: nothing done, the plan answers */
				assert_true(n > b.largest);
				k = xi_plan(&b, n, false);
			} else {
				fused++;
			}
			assert_int_equal(k, ka);
			if (k <= 0 || k > 64)
				continue;
			assert_int_equal(xi_reserve_plan(&a, n, k), 0);
			xi_take(&a, n, k, ea);
			if (k > 1 || ea[0].len != eb[0].len || ea[0].start != eb[0].start) {
				/* the planned answer for b too (several extents) */
				assert_true(k > 1);
				assert_int_equal(xi_reserve_plan(&b, n, k), 0);
				xi_take(&b, n, k, eb);
			}
			for (long i = 0; i < k; i++) {
				assert_int_equal(ea[i].start, eb[i].start);
				assert_int_equal(ea[i].len, eb[i].len);
				live[nlive].start = ea[i].start;
				live[nlive++].len = ea[i].len;
				nused += ea[i].len;
			}
		} else if (nlive) {
			uint64_t i = churn_rnd(&rng) % nlive, s = live[i].start, l = live[i].len;

			if (churn_rnd(&rng) % 8 == 0 && l > 1) {
				/* a sub-range freed first: the rest stays live */
				assert_int_equal(xi_free_one(&b, s + 1, l - 1), 0);
				assert_int_equal(free_planned(&a, s + 1, l - 1), 0);
				/* the freed part again: refused, nothing changed */
				free_refused(&a, &b, s, l, -EINVAL);
				free_refused(&a, &b, s + l - 1, 1, -EINVAL);
				refused += 2;
				live[i].len = 1;
				nused -= l - 1;
				continue;
			}
			if (churn_rnd(&rng) % 8 == 0) {	/* in a unit: refused */
				xi_set_range(a.in_unit, s - base + l - 1, 1, true);
				xi_set_range(b.in_unit, s - base + l - 1, 1, true);
				free_refused(&a, &b, s, l, -EBUSY);
				xi_set_range(a.in_unit, s - base + l - 1, 1, false);
				xi_set_range(b.in_unit, s - base + l - 1, 1, false);
				refused++;
			}
			assert_int_equal(xi_free_one(&b, s, l), 0);
			assert_int_equal(free_planned(&a, s, l), 0);
			nused -= l;
			live[i] = live[--nlive];
		}
		assert_int_equal(a.free_pages, b.free_pages);
		assert_int_equal(a.free_extents, b.free_extents);
		assert_int_equal(a.largest, b.largest);
		if (op % 97 == 0) {
			assert_int_equal(xi_check(&a), 0);
			assert_int_equal(xi_check(&b), 0);
		}
	}
	assert_true(fused > 1000);
	assert_true(refused > 100);
	assert_int_equal(xi_check(&a), 0);
	assert_int_equal(xi_check(&b), 0);
	xi_fini(&a);
	xi_fini(&b);
	free(live);
}

static void test_one_step_same_answers(void **state)
{
	(void)state;
	one_step_churn(0, 6000, 0, 11);		/* no barrier */
	one_step_churn(37, 6000, 0, 12);	/* unaligned base */
	one_step_churn(0, 6000, 128, 13);	/* barriers on group lines */
	one_step_churn(0, 6000, 100, 14);	/* barriers inside lines */
	one_step_churn(5, 6001, 24, 15);	/* several per line */
}

/* a request for more than the largest free extent is not taken in one step:
 * nothing changes, and the planned path answers with several extents */
/*
 * A pick's figures (x->hint) are not invalidated by later changes, so a
 * merging free must not take them for its neighbour: here the hint says
 * A's group holds no other extent of A's bin, which stops being true when
 * C is freed; freeing B then takes A out of its bin beside C.
 */
static void test_stale_pick(void **state)
{
	struct hkv_extent e[2];
	struct xindex x;

	(void)state;
	assert_int_equal(xi_init(&x, 0, 6400, 0), 0);	/* lengths 1..64 binned */
	assert_int_equal(take(&x, 4, e), 1);		/* A [0, 4) */
	assert_int_equal(take(&x, 1, e), 1);		/* B [4, 5) */
	assert_int_equal(take(&x, 5, e), 1);		/* D [5, 10) */
	assert_int_equal(take(&x, 4, e), 1);		/* C [10, 14) */
	assert_int_equal(e[0].start, 10);
	assert_int_equal(take(&x, 6386, e), 1);
	put(&x, 0, 4);
	assert_int_equal(xi_fit_len(&x, 4), 4);		/* picks A */
	put(&x, 10, 4);
	put(&x, 4, 1);					/* A + B */
	assert_int_equal(take(&x, 4, e), 1);
	assert_int_equal(e[0].start, 10);		/* C, still in bin 4 */
	assert_int_equal(xi_check(&x), 0);
	xi_fini(&x);
}

/*
 * xi_free_one() reads a piece's neighbours from the word its check read
 * when the piece lies inside one word with a page either side (and only
 * line-end barriers); pieces at word ends, across words and in spaces with
 * barriers inside lines look them up. Every free's merges against a model:
 * free runs cut at barriers are the free extents.
 */
static void test_free_neighbours(void **state)
{
	static const uint32_t barriers[] = { 0, 64, 40 };
	struct hkv_extent e[1];
	bool fr[256];
	struct xindex x;

	(void)state;
	for (unsigned b = 0; b < 3; b++) {
		uint32_t bar = barriers[b], seed = 7 + b;

		assert_int_equal(xi_init(&x, 0, 256, bar), 0);
		for (unsigned p = 0; p < 256; p++) {	/* every page taken */
			assert_int_equal(take(&x, 1, e), 1);
			fr[p] = false;
		}
		for (unsigned round = 0; round < 4000; round++) {
			uint32_t s, len, runs = 0, big = 0, run = 0;

			seed = seed * 1103515245 + 12345;
			s = (seed >> 8) % 256;
			len = 1 + (seed >> 20) % 70;
			if (s + len > 256)
				len = 256 - s;
			for (uint32_t p = s + 1; bar && p < s + len; p++)
				if (p % bar == 0)
					len = p - s;	/* not across a barrier */
			for (uint32_t p = s; p < s + len; p++)
				if (fr[p])
					len = p - s;	/* allocated pages only */
			if (!len) {	/* take one back instead */
				if (take(&x, 1, e) == 1)
					fr[e[0].start] = false;
				continue;
			}
			assert_int_equal(xi_free_one(&x, s, len), 0);
			for (uint32_t p = s; p < s + len; p++)
				fr[p] = true;
			for (uint32_t p = 0; p <= 256; p++) {
				if (p < 256 && fr[p] && !(run && bar && p % bar == 0)) {
					run++;
					continue;
				}
				runs += run > 0;
				big = HKV_MAX(big, run);
				run = p < 256 && fr[p];
			}
			assert_int_equal(x.free_extents, runs);
			assert_int_equal(x.largest, big);
			assert_int_equal(xi_check(&x), 0);
		}
		xi_fini(&x);
	}
}

static void test_one_step_declines(void **state)
{
	struct hkv_extent e[4];
	struct xindex x;
	struct xi_snap sn;

	(void)state;
	assert_int_equal(xi_init(&x, 0, 4096, 0), 0);
	assert_int_equal(xi_alloc_one(&x, 100, e), 1);
	assert_int_equal(xi_alloc_one(&x, 100, e), 1);
	assert_int_equal(xi_free_one(&x, 0, 100), 0);		/* a 100-page hole */
	snap_take(&x, &sn);
	assert_int_equal(xi_alloc_one(&x, 4096 - 200 + 1, e), 0);	/* largest 3896 */
	snap_same(&x, &sn);
	assert_int_equal(take(&x, 4096 - 200 + 1, e), 2);	/* 3896 + 1 from the hole */
	assert_int_equal(e[1].start, 0);
	/* pages 1..99 are free: a free that covers some of them is refused */
	snap_take(&x, &sn);
	assert_int_equal(xi_free_one(&x, 50, 60), -EINVAL);
	snap_same(&x, &sn);
	assert_int_equal(xi_free_one(&x, 0, 1), 0);
	assert_int_equal(xi_check(&x), 0);
	xi_fini(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_crowded_group),
		cmocka_unit_test(test_ties_lower_address),
		cmocka_unit_test(test_metadata_bound),
		cmocka_unit_test(test_long_bins),
		cmocka_unit_test(test_carve_front_and_coalesce),
		cmocka_unit_test(test_best_fit),
		cmocka_unit_test(test_fewest_extents),
		cmocka_unit_test(test_fewest_remainder_best_fit),
		cmocka_unit_test(test_barrier),
		cmocka_unit_test(test_treap),
		cmocka_unit_test(test_treap_ties_low),
		cmocka_unit_test(test_check_catches_corruption),
		cmocka_unit_test(test_bit_ranges),
		cmocka_unit_test(test_long_ranges),
		cmocka_unit_test(test_bin_lowest_levels),
		cmocka_unit_test(test_churn_barriers),
		cmocka_unit_test(test_one_step_same_answers),
		cmocka_unit_test(test_one_step_declines),
		cmocka_unit_test(test_stale_pick),
		cmocka_unit_test(test_free_neighbours),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
