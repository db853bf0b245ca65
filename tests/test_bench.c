// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_bench.c - hkv-bench's own machinery (tools/hkv-bench, linked in by
 * mk/bench.mk): option parsing, size distributions, percentiles, bitmaps,
 * fragmentation scan, the baselines' placement, and the replay checks that
 * must catch a wrong allocator.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tools/hkv-bench/workload.h"
#include "../tools/hkv-bench/churn.h"

static void test_parse(void **state)
{
	uint64_t v = 0;
	double d = 0;

	(void)state;
	assert_int_equal(parse_count("3.5M", false, &v), 0);
	assert_int_equal(v, 3500000);
	assert_int_equal(parse_count("64K", true, &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(parse_count("220GiB", true, &v), 0);
	assert_int_equal(v, 220ull << 30);
	assert_int_equal(parse_count("16384", false, &v), 0);
	assert_int_equal(v, 16384);
	v = 7;
	assert_int_equal(parse_count("junk", false, &v), -EINVAL);
	assert_int_equal(parse_count("-1", false, &v), -EINVAL);
	assert_int_equal(parse_count("1Q", false, &v), -EINVAL);
	assert_int_equal(parse_count("", false, &v), -EINVAL);
	assert_int_equal(parse_count("1e30", false, &v), -EINVAL);
	assert_int_equal(v, 7);		/* unchanged on error */
	assert_int_equal(parse_double("0.95", 0.05, 0.995, &d), 0);
	assert_true(d == 0.95);
	assert_int_equal(parse_double("1.5", 0.05, 0.995, &d), -EINVAL);
	assert_int_equal(parse_double("0.5x", 0, 1, &d), -EINVAL);
	assert_int_equal(parse_double("nan", 0, 1, &d), -EINVAL);
}

static void test_sizes(void **state)
{
	char path[] = "/tmp/hkv-test-sizes-XXXXXX";
	struct sizes s;
	struct rng r;
	int fd;

	(void)state;
	assert_int_equal(sizes_load(&s, "default", 1 << 20), 0);
	assert_int_equal(s.n, 4096);
	assert_true(s.mean > 29 && s.mean < 31);
	assert_true(s.cum[s.n - 1] == 1.0);
	for (size_t i = 1; i < s.n; i++)
		assert_true(s.cum[i] >= s.cum[i - 1]);
	rng_seed(&r, 1);
	for (int i = 0; i < 10000; i++) {
		uint32_t n = sizes_draw(&s, &r);

		assert_true(n >= 1 && n <= 4096);
	}
	sizes_free(&s);
	assert_int_equal(sizes_load(&s, "default", 100), 0);
	assert_int_equal(s.n, 100);
	sizes_free(&s);

	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "# pages count\n4 3\n\n16 1\n9999 5\n", 31), 31);
	close(fd);
	assert_int_equal(sizes_load(&s, path, 1000), 0);	/* 9999 dropped */
	assert_int_equal(s.n, 2);
	assert_true(s.mean == 7.0);
	sizes_free(&s);
	assert_int_equal(sizes_load(&s, path, 2), -EINVAL);	/* nothing fits */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "4 3\nbogus\n", 10), 10);
	close(fd);
	assert_int_equal(sizes_load(&s, path, 1000), -EINVAL);
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "0 3\n", 4), 4);	/* zero pages */
	close(fd);
	assert_int_equal(sizes_load(&s, path, 1000), -EINVAL);
	unlink(path);
	assert_int_equal(sizes_load(&s, path, 1000), -ENOENT);
}

static void test_samples(void **state)
{
	const struct timer_info *ti = timer_init();
	struct samples s;
	struct lat l, runs[3];

	(void)state;
	assert_true(ti->ns_per_tick > 0);
	assert_true(ti->resolution_ticks > 0);
	assert_int_equal(samples_init(&s, 1000), 0);
	for (uint64_t i = 1000; i >= 1; i--)	/* 1..1000 ticks, reversed */
		samples_add(&s, 0, i + 5, 5);	/* overhead 5 subtracted */
	samples_add(&s, 0, 1, 5);		/* over capacity: dropped */
	assert_int_equal(s.n, 1000);
	samples_summarize(&s, &l);
	assert_true(l.p50 == 501 * ti->ns_per_tick || l.p50 == 500 * ti->ns_per_tick);
	assert_true(l.p99 == 990 * ti->ns_per_tick || l.p99 == 991 * ti->ns_per_tick);
	assert_true(l.max == 1000 * ti->ns_per_tick);
	samples_free(&s);
	assert_int_equal(samples_init(&s, 4), 0);
	samples_add(&s, 10, 12, 5);		/* below the overhead: 0 */
	samples_summarize(&s, &l);
	assert_true(l.max == 0);
	samples_free(&s);
	runs[0] = (struct lat){ .p50 = 3, .p99 = 30 };
	runs[1] = (struct lat){ .p50 = 1, .p99 = 10 };
	runs[2] = (struct lat){ .p50 = 2, .p99 = 90 };
	lat_median(runs, 3, &l);
	assert_true(l.p50 == 2 && l.p99 == 30);
}

/* each round's ratio is taken within the round, and the figures stay in
 * round order (the medians of the figures must not reorder them first) */
static void test_ratio_spread(void **state)
{
	double num[5] = { 1, 3, 2, 8, 5 }, den[5] = { 2, 1, 4, 0, 5 };
	double v[3] = { 7, 5, 6 };
	struct spread s;

	(void)state;
	s = ratio_spread(num, den, 5);	/* 0.5, 3, 0.5, 0 (no figure), 1 */
	assert_true(s.med == 0.5 && s.lo == 0 && s.hi == 3);
	assert_true(num[0] == 1 && num[1] == 3 && den[2] == 4 && den[3] == 0);
	s = spread_d(v, 3);
	assert_true(s.med == 6 && s.lo == 5 && s.hi == 7);
	s = spread_d(v, 0);
	assert_true(s.med == 0 && s.lo == 0 && s.hi == 0);
}

static void test_bits_frag(void **state)
{
	uint64_t b[3] = { 0 };
	struct frag f;

	(void)state;
	/* 150 pages: allocated [10, 20), [63, 65), [100, 150) */
	bits_fill(b, 10, 10, true);
	bits_fill(b, 63, 2, true);
	bits_fill(b, 100, 50, true);
	assert_true(bits_all(b, 10, 10, true));
	assert_false(bits_all(b, 9, 2, true));
	assert_true(bits_all(b, 65, 35, false));
	assert_false(bits_all(b, 60, 5, false));
	frag_scan(b, 150, &f);
	assert_int_equal(f.free_pages, 10 + 43 + 35);
	assert_int_equal(f.free_extents, 3);
	assert_int_equal(f.largest, 43);
	/* UFI(16) = (88 - (0 + 32 + 32)) / 88 */
	assert_true(f.ufi[0] > 0.2727 && f.ufi[0] < 0.2728);
	bits_fill(b, 0, 150, false);
	frag_scan(b, 150, &f);
	assert_int_equal(f.free_extents, 1);
	assert_int_equal(f.largest, 150);
	bits_fill(b, 0, 150, true);
	frag_scan(b, 150, &f);
	assert_int_equal(f.free_pages, 0);
	assert_true(f.ufi[3] == 0);
}

static void mkworkload(struct workload *w, uint64_t npages, double split)
{
	memset(w, 0, sizeof(*w));
	w->npages = npages;
	w->occupancy = 0.95;
	w->burnin = 2;
	w->ops = 20000;
	w->split_share = split;
	w->seed = 7;
	w->interval = 5000;
	assert_int_equal(sizes_load(&w->sizes, "default", npages / 16), 0);
}

/* sorted-scan and bitmap-firstfit place pages identically: same figures */
static void test_baselines_agree(void **state)
{
	struct result ss = { .name = "sorted-scan" }, bf = { .name = "bitmap-firstfit" };
	struct result tf = { .name = "token-freelist" };
	struct workload w;
	struct trace t;

	(void)state;
	mkworkload(&w, 8192, 0.25);
	assert_int_equal(trace_generate(&w, &t), 0);
	assert_true(t.measure_from > 0 && t.n > t.measure_from);
	assert_int_equal(replay(&bl_sorted_scan, &w, &t, 0, &ss), 0);
	assert_int_equal(replay(&bl_bitmap_firstfit, &w, &t, 0, &bf), 0);
	assert_int_equal(replay(&bl_token_freelist, &w, &t, 0, &tf), 0);
	assert_int_equal(ss.ops, w.ops);
	assert_int_equal(ss.allocs + ss.frees, ss.ops);
	assert_int_equal(ss.end.free_extents, bf.end.free_extents);
	assert_int_equal(ss.end.largest, bf.end.largest);
	assert_int_equal(ss.ext_max, bf.ext_max);
	assert_true(ss.epa_mean == bf.epa_mean);
	assert_true(tf.epa_mean > bf.epa_mean);
	assert_int_equal(tf.end.free_pages, bf.end.free_pages);
	assert_int_equal(bf.ntl, w.ops / w.interval);
	result_free(&ss);
	result_free(&bf);
	result_free(&tf);
	/* a cap on measured ops */
	memset(&ss, 0, sizeof(ss));
	ss.name = "sorted-scan";
	assert_int_equal(replay(&bl_sorted_scan, &w, &t, 100, &ss), 0);
	assert_int_equal(ss.ops, 100);
	result_free(&ss);
	trace_free(&t);
	sizes_free(&w.sizes);
}

/*
 * The family's allocator, as written and lowest region first: 4096 pages
 * in 512 blocks of 8, three isolated blocks freed (regions 40, 3 and 10 of
 * 64 pages each, in that order); the next 8 pages come from the most
 * recently freed block as written, from the lowest region's with regions.
 * Then a churn against a shadow of the pages: no page handed out twice,
 * and everything freed coalesces back into one block.
 */
static void test_tlsf_regions(void **state)
{
	static const uint32_t freed[3] = { 40 * 64, 3 * 64, 10 * 64 };
	struct hkv_extent e[64];
	uint32_t h[64], *hs = calloc(512, sizeof(*hs));
	uint8_t *used = calloc(4096, 1);

	(void)state;
	assert_non_null(hs);
	assert_non_null(used);
	for (int regions = 0; regions < 2; regions++) {
		uint64_t rng = 7;
		void *st;
		struct tlsf *t;
		uint32_t live = 0, *lh = calloc(4096, sizeof(*lh)), *ls = calloc(4096, sizeof(*ls));

		assert_non_null(lh);
		assert_non_null(ls);
		assert_int_equal((regions ? tlsf_create_regions : tlsf_create)(4096, &st), 0);
		t = st;
		assert_int_equal(t->rshift, regions ? 6 : 0);
		for (uint32_t i = 0; i < 512; i++) {
			assert_int_equal(tlsf_alloc(t, 8, e, 1, &hs[i]), 1);
			assert_int_equal(e[0].start, 8 * i);
		}
		for (int i = 0; i < 3; i++)
			tlsf_free_one(t, hs[freed[i] / 8]);
		assert_int_equal(tlsf_alloc(t, 8, e, 1, h), 1);
		assert_int_equal(e[0].start, regions ? 3 * 64 : 10 * 64);
		assert_int_equal(tlsf_alloc(t, 8, e, 1, h), 1);
		assert_int_equal(e[0].start, regions ? 10 * 64 : 3 * 64);
		assert_int_equal(tlsf_alloc(t, 8, e, 1, h), 1);
		assert_int_equal(e[0].start, 40 * 64);
		for (uint32_t i = 0; i < 512; i++)
			tlsf_free_one(t, hs[i]);
		assert_int_equal(t->free_pages, 4096);
		memset(used, 0, 4096);
		for (int op = 0; op < 20000; op++) {
			if (live && (rng = rng * 6364136223846793005ull + 1442695040888963407ull,
				     (rng >> 33) % 2 || t->free_pages < 64)) {
				uint32_t v = (uint32_t)((rng >> 40) % live);

				memset(used + ls[v] / 65536, 0, ls[v] % 65536);
				tlsf_free_one(t, lh[v]);
				lh[v] = lh[--live];
				ls[v] = ls[live];
				continue;
			}
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			uint32_t n = 1 + (uint32_t)((rng >> 35) % 48);
			int k = tlsf_alloc(t, n, e, 64, h);

			assert_true(k > 0);
			for (int i = 0; i < k; i++) {
				for (uint64_t p = e[i].start; p < e[i].start + e[i].len; p++) {
					assert_int_equal(used[p], 0);
					used[p] = 1;
				}
				lh[live] = h[i];
				ls[live++] = (uint32_t)(e[i].start * 65536 + e[i].len);
			}
		}
		while (live--)
			tlsf_free_one(t, lh[live]);
		assert_int_equal(tlsf_alloc(t, 4096, e, 1, h), 1);	/* one block again */
		tlsf_destroy(t);
		free(lh);
		free(ls);
	}
	free(hs);
	free(used);
}

/* hugekv through the adapter agrees with the shadow bitmap */
static void test_hugekv_replay(void **state)
{
	struct result r = { .name = "hugekv" };
	struct hkv_stats st = { .sz = sizeof(st) };
	struct balloc_ops hk;
	struct workload w;
	struct trace t;

	(void)state;
	mkworkload(&w, 16384, 0.5);
	assert_int_equal(trace_generate(&w, &t), 0);
	hkv_adapter_ops(&w, &hk);
	hkv_adapter_keep_pool = true;
	assert_int_equal(replay(&hk, &w, &t, 0, &r), 0);
	assert_non_null(hkv_adapter_last_pool);
	assert_int_equal(hkv_stats(hkv_adapter_last_pool, &st), 0);
	assert_int_equal(st.free_pages, r.end.free_pages);
	assert_int_equal(st.free_extents, r.end.free_extents);
	assert_int_equal(st.largest_free_extent, r.end.largest);
	assert_true(r.epa_mean >= 1 && r.epa_mean < 2);
	assert_true(r.alloc_ns.p50 <= r.alloc_ns.p99);
	hkv_pool_destroy(hkv_adapter_last_pool);
	hkv_adapter_last_pool = NULL;
	hkv_adapter_keep_pool = false;
	result_free(&r);
	trace_free(&t);
	sizes_free(&w.sizes);
}

/* ---- allocators that lie: replay must notice -------------------------- */
static int bad_mode;
static uint64_t bad_pages;

static int bad_create(uint64_t npages, void **st)
{
	bad_pages = npages;
	*st = &bad_mode;
	return bad_mode == 4 ? -ENOMEM : 0;
}

static void bad_destroy(void *st)
{
	(void)st;
}

static int bad_alloc(void *st, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	static uint64_t next;

	(void)st;
	(void)max;
	if (bad_mode == 3)
		return -ENOMEM;
	if (bad_mode == 0)		/* overlap: always page 0 */
		next = 0;
	if (next + n > bad_pages)
		next = 0;
	ext[0] = (struct hkv_extent){ next, bad_mode == 1 && n > 1 ? n - 1 : n };
	next += n;
	return 1;
}

static int bad_free(void *st, const struct hkv_extent *ext, unsigned n)
{
	(void)st;
	(void)ext;
	(void)n;
	return bad_mode == 2 ? -EIO : 0;
}

static const struct balloc_ops bad_ops = {
	.name = "liar", .create = bad_create, .destroy = bad_destroy,
	.alloc = bad_alloc, .free = bad_free,
};

static void test_replay_catches(void **state)
{
	static const int want[] = { -EUCLEAN, -EUCLEAN, -EIO, -ENOMEM, -ENOMEM };
	struct workload w;
	struct trace t;

	(void)state;
	mkworkload(&w, 4096, 0.25);
	assert_int_equal(trace_generate(&w, &t), 0);
	for (bad_mode = 0; bad_mode < 5; bad_mode++) {
		struct result r = { .name = "liar" };

		assert_int_equal(replay(&bad_ops, &w, &t, 0, &r), want[bad_mode]);
		result_free(&r);
	}
	trace_free(&t);
	sizes_free(&w.sizes);
}

/* a request that can never fit under the target */
static void test_trace_too_big(void **state)
{
	uint32_t size = 64;
	double cum = 1.0;
	struct workload w = { .npages = 1024, .occupancy = 0.05, .ops = 10,
			      .seed = 1 };
	struct trace t;

	(void)state;
	w.sizes = (struct sizes){ .size = &size, .cum = &cum, .n = 1, .mean = 64 };
	assert_int_equal(trace_generate(&w, &t), -EINVAL);
	assert_null(t.op);
}

static void test_baseline_find(void **state)
{
	(void)state;
	assert_ptr_equal(baseline_find("sorted-scan"), &bl_sorted_scan);
	assert_ptr_equal(baseline_find("token-freelist"), &bl_token_freelist);
	assert_ptr_equal(baseline_find("bitmap-firstfit"), &bl_bitmap_firstfit);
	assert_null(baseline_find("buddy"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_ratio_spread),
		cmocka_unit_test(test_bits_frag),
		cmocka_unit_test(test_baselines_agree),
		cmocka_unit_test(test_tlsf_regions),
		cmocka_unit_test(test_hugekv_replay),
		cmocka_unit_test(test_replay_catches),
		cmocka_unit_test(test_trace_too_big),
		cmocka_unit_test(test_baseline_find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
