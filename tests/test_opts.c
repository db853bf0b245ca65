// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_opts.c - the one option check: hkv_pool_plan() refuses exactly what
 * hkv_pool_create() refuses, with the same error, and changes nothing;
 * size limits fail at once with the right code; a HUGEKV_NODE naming a
 * node without memory is reported and ignored, never fatal.
 */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "hkv_test_mem.h"

#define KV_PAGE		(64 * 1024ull)

static struct hkv_pool_opts base(void)
{
	return (struct hkv_pool_opts){ .sz = sizeof(struct hkv_pool_opts), .npages = 64,
				       .page_bytes = KV_PAGE, .backing = HKV_BACKING_SMALL,
				       .numa_node = -1 };
}

/* plan and create agree on o: both return want; create leaves *out alone */
static void agree(const struct hkv_pool_opts *o, int want, const char *what)
{
	struct hkv_plan pl = { .sz = sizeof(pl) };
	struct hkv_pool *p = (struct hkv_pool *)&pl;	/* a sentinel, never written */
	int plan = hkv_pool_plan(o, &pl), create = hkv_pool_create(o, &p);

	if (plan != want || create != want)
		fail_msg("%s: plan %d, create %d, want %d", what, plan, create, want);
	assert_ptr_equal(p, (struct hkv_pool *)&pl);
}

static void t_plan_refuses_what_create_refuses(void **state)
{
	struct hkv_pool_opts o;

	(void)state;
	o = base(); o.free_room_low = NAN; o.free_room_high = 0.5;
	agree(&o, -EINVAL, "NaN low watermark");
	o = base(); o.free_room_low = 0.2; o.free_room_high = NAN;
	agree(&o, -EINVAL, "NaN high watermark");
	o = base(); o.free_room_low = 0.5; o.free_room_high = 0.2;
	agree(&o, -EINVAL, "low > high");
	o = base(); o.free_room_high = 1.5;
	agree(&o, -EINVAL, "high > 1");
	o = base(); o.chunk_bytes = KV_PAGE - 1;
	agree(&o, -EINVAL, "chunk smaller than a page");
	o = base(); o.evict_window = 1025;
	agree(&o, -EINVAL, "oversized evict_window");
	o = base(); o.page_bytes = 0; o.backing = HKV_BACKING_HUGE_2M;
	agree(&o, -EINVAL, "index-only with 2 MiB backing");
	o = base(); o.page_bytes = 4096; o.npages = 1ull << 33;
	agree(&o, -E2BIG, "2^33 pages in one lane");
	o = base(); o.npages = UINT64_MAX; o.nlanes = UINT_MAX; o.page_bytes = 0;
	o.backing = HKV_BACKING_AUTO;
	agree(&o, -E2BIG, "UINT64_MAX pages in UINT_MAX lanes");
	o = base(); o.nlanes = HKV_POOL_MAX_LANES + 1; o.npages = 1 << 20; o.page_bytes = 0;
	o.backing = HKV_BACKING_AUTO;
	agree(&o, -E2BIG, "more lanes than the limit");
	o = base(); o.flags = 1u << 9;
	agree(&o, -EINVAL, "unknown flag");
	o = base(); o.numa_node = -7;
	agree(&o, -EINVAL, "node below -1");
	o = base(); o.sz = 8;
	agree(&o, -EINVAL, "short sz");
	/* 17 TiB of 4 KiB pages on THP is 2^32 + pages in one lane */
	o = base(); o.page_bytes = 4096; o.npages = (17ull << 40) / 4096; o.backing = HKV_BACKING_THP;
	agree(&o, -E2BIG, "17T of 4K pages");
}

/* the lane limit is the header's: HKV_POOL_MAX_LANES lanes of 16 pages
 * are a pool whose last lane allocates and frees; one lane more is -E2BIG */
static void t_lane_limit(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 16ull * HKV_POOL_MAX_LANES,
				   .nlanes = HKV_POOL_MAX_LANES };
	struct hkv_plan pl = { .sz = sizeof(pl) };
	struct hkv_extent e, last;
	struct hkv_pool *p = NULL;

	(void)state;
	assert_int_equal(HKV_POOL_MAX_LANES, 65536);
	assert_int_equal(hkv_pool_plan(&o, &pl), 0);
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(hkv_lane_range(p, HKV_POOL_MAX_LANES - 1, &last), 0);
	assert_int_equal(last.start + last.len, o.npages);
	assert_int_equal(hkv_lane_range(p, HKV_POOL_MAX_LANES, &e), -EINVAL);
	assert_int_equal(hkv_alloc(p, 16, HKV_POOL_MAX_LANES - 1, HKV_ALLOC_CONTIG, &e, 1), 1);
	assert_int_equal(e.start, last.start);
	assert_int_equal(hkv_alloc(p, 1, HKV_POOL_MAX_LANES, 0, &e, 1), -EINVAL);
	assert_int_equal(hkv_alloc(p, 16, HKV_LANE_ANY, HKV_ALLOC_CONTIG, &e, 1), 1);
	assert_int_equal(hkv_free(p, &e, 1), 0);
	assert_int_equal(hkv_free(p, &last, 1), 0);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);

	o.nlanes = HKV_POOL_MAX_LANES + 1;
	o.npages = 16ull * o.nlanes;
	agree(&o, -E2BIG, "one lane over the limit");
	assert_string_equal(hkv_strerror(-E2BIG),
			    "too large: a lane may hold at most 2^32-2 pages, a pool at most 65536 lanes");
}

/* chunks at least the pool's size are no barrier: created, not -E2BIG */
static void t_chunk_limits(void **state)
{
	const uint64_t sizes[] = { UINT64_MAX, (1ull << 32) * KV_PAGE, 64 * KV_PAGE };
	struct hkv_extent e[2];
	unsigned i;

	(void)state;
	for (i = 0; i < HKV_ARRAY_SIZE(sizes); i++) {
		struct hkv_pool_opts o = base();
		struct hkv_pool *p = NULL;

		o.chunk_bytes = sizes[i];
		assert_int_equal(hkv_pool_create(&o, &p), 0);
		assert_int_equal(hkv_alloc(p, 64, HKV_LANE_ANY, 0, e, 2), 1);	/* one extent */
		assert_int_equal(e[0].len, 64);
		assert_int_equal(hkv_free(p, e, 1), 0);
		assert_int_equal(hkv_check(p), 0);
		hkv_pool_destroy(p);
	}
}

/* a node without memory in HUGEKV_NODE is reported and ignored */
static void t_env_node_missing(void **state)
{
	const char *vals[] = { "99", "4096" };
	unsigned i;

	(void)state;
	for (i = 0; i < HKV_ARRAY_SIZE(vals); i++) {
		struct hkv_pool_opts o = base();
		struct hkv_plan pl = { .sz = sizeof(pl) };
		struct hkv_stats st = { .sz = sizeof(st) };
		struct hkv_pool *p = NULL;
		struct tm_log lg;

		setenv("HUGEKV_NODE", vals[i], 1);
		tm_log_capture(&lg);
		env_reload();
		assert_int_equal(hkv_pool_plan(&o, &pl), 0);
		assert_int_equal(pl.numa_node, -1);
		assert_int_equal(hkv_pool_create(&o, &p), 0);
		tm_log_capture(NULL);
		assert_true(tm_log_has(&lg, "HUGEKV_NODE="));
		assert_true(lg.warn >= 1);
		assert_int_equal(hkv_stats(p, &st), 0);
		assert_int_equal(st.numa_node, -1);
		hkv_pool_destroy(p);
	}
	unsetenv("HUGEKV_NODE");
	env_reload();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_plan_refuses_what_create_refuses),
		cmocka_unit_test(t_lane_limit),
		cmocka_unit_test(t_chunk_limits),
		cmocka_unit_test(t_env_node_missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
