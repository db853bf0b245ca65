// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_pool.c - the public API of index-only pools: every contract clause
 * and error code of create, alloc, alloc_lanes, free, lane_range,
 * available, stats, stats_print, check, free_slots, strerror.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>

#include "internal.h"
#include "hkv_test_pool.h"

static void assert_state(struct hkv_pool *p, uint64_t free_pages, uint64_t free_extents)
{
	struct hkv_stats st = { .sz = sizeof(st) };

	assert_int_equal(hkv_stats(p, &st), 0);
	assert_int_equal(st.free_pages, free_pages);
	assert_int_equal(st.free_extents, free_extents);
	assert_int_equal(hkv_available(p), free_pages);
	assert_int_equal(hkv_check(p), 0);
}

static void test_create_errors(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 100 };
	struct hkv_pool *p = (struct hkv_pool *)0x1;

	(void)state;
	assert_int_equal(hkv_pool_create(NULL, &p), -EINVAL);
	assert_int_equal(hkv_pool_create(&o, NULL), -EINVAL);
#define BAD(field, value, err) do {					\
		struct hkv_pool_opts b = o;				\
		b.field = value;					\
		assert_int_equal(hkv_pool_create(&b, &p), err);		\
		assert_ptr_equal(p, (struct hkv_pool *)0x1);		\
	} while (0)
	BAD(sz, 0, -EINVAL);
	BAD(sz, offsetof(struct hkv_pool_opts, free_room_high), -EINVAL);
	BAD(npages, 0, -EINVAL);
	BAD(nlanes, 101, -EINVAL);
	BAD(backing, -1, -EINVAL);
	BAD(backing, 6, -EINVAL);
	BAD(backing, HKV_BACKING_HUGE_2M, -EINVAL);	/* needs page_bytes */
	BAD(flags, 1u << 7, -EINVAL);
	BAD(numa_node, -2, -EINVAL);
	BAD(free_room_low, 0.5, -EINVAL);		/* low > high */
	BAD(free_room_high, 1.5, -EINVAL);
	BAD(free_room_low, -0.1, -EINVAL);
	BAD(free_room_high, NAN, -EINVAL);
	BAD(chunk_bytes, 4096, -EINVAL);		/* index-only: no bytes */
	BAD(evict_window, 100000, -EINVAL);
	BAD(npages, (uint64_t)1 << 33, -E2BIG);		/* one lane over 2^32-2 */
#undef BAD
}

/* the first released layout (sz up to free_room_high) is accepted */
static void test_create_old_layout(void **state)
{
	struct hkv_pool_opts o = { .sz = offsetof(struct hkv_pool_opts, free_room_high) +
				   sizeof(double), .npages = 10, .chunk_bytes = 12345 };
	struct hkv_pool *p;

	(void)state;
	assert_int_equal(hkv_pool_create(&o, &p), 0);	/* chunk_bytes not read */
	assert_int_equal(hkv_available(p), 10);
	assert_null(hkv_page_ptr(p, 0));
	assert_int_equal(hkv_regions(p, NULL, 0), 0);
	assert_int_not_equal(hkv_pool_id(p), 0);
	hkv_pool_destroy(p);
	hkv_pool_destroy(NULL);
}

static void test_alloc_errors(void **state)
{
	struct hkv_pool *p = tp_index_pool(64, 2);
	struct hkv_extent e[4];

	(void)state;
	assert_int_equal(hkv_alloc(NULL, 1, 0, 0, e, 4), -EINVAL);
	assert_int_equal(hkv_alloc(p, 0, 0, 0, e, 4), -EINVAL);
	assert_int_equal(hkv_alloc(p, 1, 0, 0, NULL, 4), -EINVAL);
	assert_int_equal(hkv_alloc(p, 1, 2, 0, e, 4), -EINVAL);
	assert_int_equal(hkv_alloc(p, 1, 0, 1u << 5, e, 4), -EINVAL);
	assert_int_equal(hkv_alloc(p, 33, 0, 0, e, 4), -ENOMEM);	/* lane 0 has 32 */
	assert_int_equal(hkv_alloc(p, 65, HKV_LANE_ANY, 0, e, 4), -ENOMEM);
	assert_int_equal(hkv_alloc(p, 1, 0, 0, e, 0), -ENOSPC);
	assert_state(p, 64, 2);
	hkv_pool_destroy(p);
}

/* fragment lane 0 into runs of 2: multi-extent answers, ENOSPC, CONTIG */
static void test_alloc_multi_and_enospc(void **state)
{
	struct hkv_pool *p = tp_index_pool(32, 1);
	struct hkv_extent e[32], one;
	unsigned i;

	(void)state;
	for (i = 0; i < 32; i++)
		assert_int_equal(hkv_alloc(p, 1, 0, 0, &e[i], 1), 1);
	for (i = 0; i < 32; i += 4) {
		struct hkv_extent pair = { i, 2 };

		assert_int_equal(hkv_free(p, &pair, 1), 0);
	}
	assert_state(p, 16, 8);
	assert_int_equal(hkv_alloc(p, 3, 0, HKV_ALLOC_CONTIG, &one, 1), -ENOMEM);
	assert_int_equal(hkv_alloc(p, 7, 0, 0, e, 3), -ENOSPC);	/* needs 4 */
	assert_state(p, 16, 8);					/* nothing taken */
	assert_int_equal(hkv_alloc(p, 7, 0, 0, e, 4), 4);
	assert_int_equal(e[0].len + e[1].len + e[2].len + e[3].len, 7);
	assert_int_equal(e[3].len, 1);
	assert_int_equal(e[3].start % 4, 0);		/* the rest from a low end */
	assert_state(p, 9, 5);
	hkv_pool_destroy(p);
}

static void test_lanes(void **state)
{
	struct hkv_pool *p = tp_index_pool(10, 3);	/* lanes of 4, 3, 3 */
	struct hkv_extent r, e[8];
	uint64_t count[3] = { 2, 0, 3 };

	(void)state;
	assert_int_equal(hkv_lane_range(p, 0, &r), 0);
	assert_true(r.start == 0 && r.len == 4);
	assert_int_equal(hkv_lane_range(p, 2, &r), 0);
	assert_true(r.start == 7 && r.len == 3);
	assert_int_equal(hkv_lane_range(p, 3, &r), -EINVAL);
	assert_int_equal(hkv_lane_range(p, 0, NULL), -EINVAL);
	assert_int_equal(hkv_alloc(p, 3, 1, 0, e, 8), 1);
	assert_true(e[0].start == 4 && e[0].len == 3);
	assert_int_equal(hkv_alloc(p, 1, 1, 0, e, 8), -ENOMEM);
	/* all or nothing: lane 1 is full */
	count[1] = 1;
	assert_int_equal(hkv_alloc_lanes(p, count, 0, e, 8), -ENOMEM);
	assert_state(p, 7, 2);
	count[1] = 0;
	assert_int_equal(hkv_alloc_lanes(p, count, 0, e, 1), -ENOSPC);
	assert_int_equal(hkv_alloc_lanes(p, count, 0, e, 8), 2);
	assert_true(e[0].start == 0 && e[0].len == 2 && e[1].start == 7 && e[1].len == 3);
	count[0] = count[2] = 0;
	assert_int_equal(hkv_alloc_lanes(p, count, 0, e, 8), -EINVAL);	/* nothing asked */
	assert_int_equal(hkv_alloc_lanes(p, NULL, 0, e, 8), -EINVAL);
	assert_int_equal(hkv_alloc_lanes(p, count, 1u << 9, e, 8), -EINVAL);
	/* ANY picks a lane that has room; extents never cross lanes */
	assert_int_equal(hkv_alloc(p, 2, HKV_LANE_ANY, 0, e, 8), 1);
	assert_true(e[0].start == 2 && e[0].len == 2);
	assert_state(p, 0, 0);
	hkv_pool_destroy(p);
}

static void test_free_errors_change_nothing(void **state)
{
	struct hkv_pool *p = tp_index_pool(64, 2);
	struct hkv_extent a, b, bad[2];

	(void)state;
	assert_int_equal(hkv_alloc(p, 10, 0, 0, &a, 1), 1);
	assert_int_equal(hkv_alloc(p, 10, 1, 0, &b, 1), 1);
	assert_int_equal(hkv_free(NULL, &a, 1), -EINVAL);
	assert_int_equal(hkv_free(p, NULL, 1), -EINVAL);
	assert_int_equal(hkv_free(p, &a, 0), 0);
	bad[0] = (struct hkv_extent){ a.start, 0 };			/* empty */
	assert_int_equal(hkv_free(p, bad, 1), -EINVAL);
	bad[0] = (struct hkv_extent){ 60, 5 };				/* past the end */
	assert_int_equal(hkv_free(p, bad, 1), -EINVAL);
	bad[0] = (struct hkv_extent){ UINT64_MAX - 1, 4 };		/* wraps */
	assert_int_equal(hkv_free(p, bad, 1), -EINVAL);
	bad[0] = (struct hkv_extent){ a.start + 5, 10 };		/* partly free */
	assert_int_equal(hkv_free(p, bad, 1), -EINVAL);
	bad[0] = b;
	bad[1] = (struct hkv_extent){ b.start + 9, 1 };			/* named twice */
	assert_int_equal(hkv_free(p, bad, 2), -EINVAL);
	bad[0] = a;
	bad[1] = (struct hkv_extent){ 50, 1 };				/* 2nd is free */
	assert_int_equal(hkv_free(p, bad, 2), -EINVAL);
	assert_state(p, 44, 2);
	/* sub-ranges of what was allocated, across lanes, in one call */
	bad[0] = (struct hkv_extent){ a.start + 3, 4 };
	bad[1] = (struct hkv_extent){ b.start, 2 };
	assert_int_equal(hkv_free(p, bad, 2), 0);
	assert_state(p, 50, 4);
	assert_int_equal(hkv_free(p, bad, 2), -EINVAL);			/* double free */
	bad[0] = (struct hkv_extent){ a.start, 3 };
	bad[1] = (struct hkv_extent){ a.start + 7, 3 };
	assert_int_equal(hkv_free(p, bad, 2), 0);
	bad[0] = (struct hkv_extent){ b.start + 2, 8 };
	assert_int_equal(hkv_free(p, bad, 1), 0);
	assert_state(p, 64, 2);
	hkv_pool_destroy(p);
}

/*
 * A page named twice in one free fails it, whether the extents are few
 * (compared with each other) or many (found by their bits), and wherever
 * the repeat is; extents that only touch are freed.
 */
static void test_free_named_twice(void **state)
{
	struct hkv_pool *p = tp_index_pool(256, 2);
	struct hkv_extent a, e[16];
	unsigned counts[] = { 2, 3, 8, 9, 16 }, k, i;

	(void)state;
	/* 100 of lane 0's 128 pages, freed in extents of 6 */
	assert_int_equal(hkv_alloc(p, 100, 0, 0, &a, 1), 1);
	for (k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		unsigned n = counts[k];

		for (i = 0; i < n; i++)
			e[i] = (struct hkv_extent){ a.start + 6 * i, 6 };
		/* the last repeats a page of the first, of the middle one, or
		 * names all of an earlier one; one inside another */
		e[n - 1] = (struct hkv_extent){ a.start + 5, 2 };
		assert_int_equal(hkv_free(p, e, n), -EINVAL);
		e[n - 1] = (struct hkv_extent){ a.start + 6 * ((n - 1) / 2) + 1, 1 };
		assert_int_equal(hkv_free(p, e, n), -EINVAL);
		e[n - 1] = e[0];
		assert_int_equal(hkv_free(p, e, n), -EINVAL);
		e[0] = (struct hkv_extent){ a.start + 6 * (n - 1), 6 };
		e[n - 1] = (struct hkv_extent){ a.start + 6 * (n - 1) + 2, 2 };
		assert_int_equal(hkv_free(p, e, n), -EINVAL);
		assert_state(p, 156, 2);
	}
	/* touching, in any order: freed, few and many */
	for (i = 0; i < 3; i++)
		e[i] = (struct hkv_extent){ a.start + 6 * (2 - i), 6 };
	assert_int_equal(hkv_free(p, e, 3), 0);
	assert_state(p, 174, 3);
	for (i = 0; i < 12; i++)
		e[i] = (struct hkv_extent){ a.start + 18 + 6 * (11 - i), 6 };
	assert_int_equal(hkv_free(p, e, 12), 0);
	assert_state(p, 246, 3);
	hkv_pool_destroy(p);
}

/* one extent spanning two lanes is freed piece by piece, all or nothing */
static void test_free_across_lanes(void **state)
{
	struct hkv_pool *p = tp_index_pool(20, 2);
	struct hkv_extent e, all = { 0, 20 };
	uint64_t count[2] = { 10, 10 };
	struct hkv_extent two[2];

	(void)state;
	assert_int_equal(hkv_alloc_lanes(p, count, 0, two, 2), 2);
	e = (struct hkv_extent){ 5, 10 };
	assert_int_equal(hkv_free(p, &e, 1), 0);
	assert_state(p, 10, 2);			/* never merged across the lane */
	assert_int_equal(hkv_free(p, &all, 1), -EINVAL);
	assert_state(p, 10, 2);
	hkv_pool_destroy(p);
}

static void test_stats_and_print(void **state)
{
	struct hkv_pool *p = tp_index_pool(1000, 1);
	struct hkv_stats st = { .sz = sizeof(st) }, small;
	struct hkv_extent e[4];
	char buf[8192];
	FILE *f;

	(void)state;
	assert_int_equal(hkv_alloc(p, 100, 0, 0, e, 4), 1);
	assert_int_equal(hkv_alloc(p, 2000, 0, 0, e, 4), -ENOMEM);
	assert_int_equal(hkv_stats(p, &st), 0);
	assert_int_equal(st.npages, 1000);
	assert_int_equal(st.allocs, 1);
	assert_int_equal(st.alloc_failures, 1);
	assert_int_equal(st.extents_returned, 1);
	assert_int_equal(st.largest_free_extent, 900);
	assert_true(st.extents_per_alloc == 1.0);
	assert_int_equal(st.ufi_size[0], 4);
	assert_true(st.ufi[0] == 0.0);				/* 900 % 4 == 0 */
	assert_true(fabs(st.ufi[3] - (900.0 - 768) / 900) < 1e-9);	/* r = 256 */
	assert_int_equal(st.lane_free_pages[0], 900);
	assert_true(st.metadata_bytes > 0);
	assert_int_equal(st.backing, HKV_BACKING_NONE);
	memset(&small, 0xab, sizeof(small));
	small.sz = offsetof(struct hkv_stats, largest_free_extent) + 8;
	assert_int_equal(hkv_stats(p, &small), 0);
	assert_int_equal(small.free_pages, 900);
	assert_int_equal(small.nlanes, 0xabababab);		/* past sz: untouched */
	small.sz = 8;
	assert_int_equal(hkv_stats(p, &small), -EINVAL);
	assert_int_equal(hkv_stats(p, NULL), -EINVAL);
	f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(hkv_stats_print(p, f, HKV_PRINT_JSON), 0);
	fclose(f);
	assert_non_null(strstr(buf, "\"free_pages\": 900"));
	assert_non_null(strstr(buf, "\"ufi\": {\"4\": 0.0000"));
	assert_non_null(strstr(buf, "\"backing_name\": \"none\""));
	f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(hkv_stats_print(p, f, 0), 0);
	fclose(f);
	assert_non_null(strstr(buf, "largest_free_extent      900"));
	assert_non_null(strstr(buf, "backing                  5 (none)"));
	assert_int_equal(hkv_stats_print(p, stdout, 1u << 4), -EINVAL);
	assert_int_equal(hkv_stats_print(NULL, stdout, 0), -EINVAL);
	hkv_pool_destroy(p);
}

static void test_free_slots(void **state)
{
	struct hkv_pool *p = tp_index_pool(100, 2);
	const uint64_t *s1, *s2;
	struct hkv_extent e;
	uint64_t n, i;

	(void)state;
	assert_int_equal(hkv_free_slots(p, &s1, &n), 0);
	assert_int_equal(n, 100);
	for (i = 0; i < n; i++)
		assert_int_equal(s1[i], i);
	assert_int_equal(hkv_free_slots(p, &s2, &n), 0);
	assert_ptr_equal(s1, s2);				/* cached */
	e = (struct hkv_extent){ 0, 0 };
	assert_int_equal(hkv_alloc(p, 5, 1, 0, &e, 1), 1);	/* pages 50..54 */
	assert_int_equal(hkv_free_slots(p, &s2, &n), 0);
	assert_int_equal(n, 95);
	assert_int_equal(s2[49], 49);
	assert_int_equal(s2[50], 55);
	assert_int_equal(hkv_free_slots(p, NULL, &n), -EINVAL);
	assert_int_equal(hkv_free_slots(NULL, &s2, &n), -EINVAL);
	hkv_pool_destroy(p);
}

/* hkv_extents_allocated(): a bitmap check across lanes that changes nothing */
static void test_extents_allocated(void **state)
{
	struct hkv_pool *p = tp_index_pool(300, 3);	/* lanes of 100 pages */
	struct hkv_extent a, b, e[2], part = { 120, 10 };
	uint64_t before;

	(void)state;
	assert_int_equal(hkv_alloc(p, 100, 1, 0, &a, 1), 1);	/* all of lane 1 */
	assert_int_equal(hkv_alloc(p, 40, 2, 0, &b, 1), 1);	/* [200, 240) */
	before = hkv_available(p);
	assert_int_equal(hkv_extents_allocated(p, &a, 1), 0);
	e[0] = (struct hkv_extent){ 150, 90 };		/* spans lanes 1 and 2 */
	assert_int_equal(hkv_extents_allocated(p, e, 1), 0);
	e[0] = (struct hkv_extent){ 150, 91 };		/* page 240 is free */
	assert_int_equal(hkv_extents_allocated(p, e, 1), -EINVAL);
	e[0] = (struct hkv_extent){ 99, 2 };		/* page 99 (lane 0) is free */
	assert_int_equal(hkv_extents_allocated(p, e, 1), -EINVAL);
	e[0] = a;
	e[1] = (struct hkv_extent){ 250, 1 };
	assert_int_equal(hkv_extents_allocated(p, e, 2), -EINVAL);	/* second one free */
	assert_int_equal(hkv_unit_add(p, 7, &b, 1), 0);		/* units count as allocated */
	assert_int_equal(hkv_extents_allocated(p, &b, 1), 0);
	assert_int_equal(hkv_free(p, &part, 1), 0);
	assert_int_equal(hkv_extents_allocated(p, &a, 1), -EINVAL);
	assert_int_equal(hkv_extents_allocated(p, &part, 1), -EINVAL);
	/* bad input */
	e[0] = (struct hkv_extent){ 100, 0 };
	assert_int_equal(hkv_extents_allocated(p, e, 1), -EINVAL);
	e[0] = (struct hkv_extent){ 299, 2 };
	assert_int_equal(hkv_extents_allocated(p, e, 1), -EINVAL);
	e[0] = (struct hkv_extent){ UINT64_MAX, 2 };
	assert_int_equal(hkv_extents_allocated(p, e, 1), -EINVAL);
	assert_int_equal(hkv_extents_allocated(p, &a, 0), -EINVAL);
	assert_int_equal(hkv_extents_allocated(p, NULL, 1), -EINVAL);
	assert_int_equal(hkv_extents_allocated(NULL, &a, 1), -EINVAL);
	assert_int_equal(hkv_available(p), before + 10);	/* only the free changed it */
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

/* per-lane fixed costs stay proportional: many small lanes, a one-page lane */
static void test_lane_metadata(void **state)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	struct hkv_pool *p = tp_index_pool(100000, 1000);	/* 1000 lanes of 100 pages */

	(void)state;
	assert_int_equal(hkv_stats(p, &st), 0);
	/* DESIGN: <= 3 B/page plus per-lane terms; these lanes had 18 B/page */
	assert_true(st.metadata_bytes <= 8 * st.npages);
	hkv_pool_destroy(p);
	p = tp_index_pool(1, 1);
	assert_int_equal(hkv_stats(p, &st), 0);
	assert_true(st.metadata_bytes <= 1024);		/* it was 1.4 KB */
	hkv_pool_destroy(p);
}

static void test_strerror(void **state)
{
	static const int codes[] = { EINVAL, ENOMEM, ENOSPC, EBUSY, EEXIST, ENOENT, EUCLEAN,
				     E2BIG, EPERM, EAGAIN, EOVERFLOW, ENODEV };
	unsigned i;

	(void)state;
	for (i = 0; i < HKV_ARRAY_SIZE(codes); i++) {
		assert_string_not_equal(hkv_strerror(-codes[i]), "unknown error");
		assert_string_equal(hkv_strerror(-codes[i]), hkv_strerror(codes[i]));
	}
	assert_string_equal(hkv_strerror(-9999), "unknown error");
	assert_non_null(strstr(hkv_strerror(-ENOSPC), "extents"));
}

/* registration chunks of a few KV pages put more free extents in one group
 * line at creation than its tag slots hold: every page can still be taken
 * one by one, given back, and the pool stays consistent */
static void test_small_chunks(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 256, .page_bytes = 64 << 10,
				   .chunk_bytes = 640 << 10, .backing = HKV_BACKING_SMALL,
				   .numa_node = -1 };
	struct hkv_extent e[256];
	bool seen[256] = { false };
	struct hkv_pool *p;

	(void)state;
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(hkv_check(p), 0);
	for (unsigned i = 0; i < 256; i++) {
		assert_int_equal(hkv_alloc(p, 1, HKV_LANE_ANY, 0, &e[i], 1), 1);
		assert_true(e[i].start < 256);
		assert_false(seen[e[i].start]);
		seen[e[i].start] = true;
	}
	assert_int_equal(e[0].start, 250);	/* best fit: the 6-page chunk first */
	assert_int_equal(hkv_alloc(p, 1, HKV_LANE_ANY, 0, &e[0], 1), -ENOMEM);
	assert_int_equal(hkv_check(p), 0);
	for (unsigned i = 0; i < 256; i += 2)
		assert_int_equal(hkv_free(p, &e[i], 1), 0);
	for (unsigned i = 1; i < 256; i += 2)
		assert_int_equal(hkv_free(p, &e[i], 1), 0);
	assert_int_equal(hkv_available(p), 256);
	assert_int_equal(hkv_alloc(p, 10, HKV_LANE_ANY, HKV_ALLOC_CONTIG, e, 1), 1);
	assert_int_equal(hkv_alloc(p, 11, HKV_LANE_ANY, HKV_ALLOC_CONTIG, e, 1), -ENOMEM);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_errors),
		cmocka_unit_test(test_create_old_layout),
		cmocka_unit_test(test_alloc_errors),
		cmocka_unit_test(test_alloc_multi_and_enospc),
		cmocka_unit_test(test_lanes),
		cmocka_unit_test(test_free_errors_change_nothing),
		cmocka_unit_test(test_free_named_twice),
		cmocka_unit_test(test_free_across_lanes),
		cmocka_unit_test(test_stats_and_print),
		cmocka_unit_test(test_free_slots),
		cmocka_unit_test(test_extents_allocated),
		cmocka_unit_test(test_lane_metadata),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_small_chunks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
