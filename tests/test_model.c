// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_model.c - model-based randomized test: hundreds of thousands of
 * mixed operations near 95 % occupancy against a byte-per-page reference.
 * After every call: the extents are disjoint, were free, stay inside their
 * lane (and chunk), sum to the request, are the fewest possible and the
 * single extent is a best fit carved from the low end of its free run;
 * failed calls changed nothing. Periodically: stats, free_slots and
 * hkv_check agree with the model.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "internal.h"

struct model {
	struct hkv_pool *pool;
	uint64_t npages, nfree;
	unsigned nlanes;
	uint8_t *used;			/* reference: 1 = allocated */
	struct hkv_extent *live;	/* allocated extents, as handed out */
	size_t nlive;
	uint64_t rng;
	uint64_t max_req;
	uint64_t spread;		/* HKV_LANE_ANY answers from several lanes */
};

static uint64_t rnd(struct model *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return m->rng;
}

/* heavy-tailed request: mostly 1-32, tail up to max_req */
static uint64_t req_size(struct model *m)
{
	uint64_t r = rnd(m) % 100;

	if (r < 70)
		return 1 + rnd(m) % 8;
	if (r < 95)
		return 1 + rnd(m) % 32;
	return 1 + rnd(m) % m->max_req;
}

/* free runs of a lane, longest first; returns count */
static size_t lane_runs(struct model *m, unsigned lane, uint64_t *len, uint64_t *start)
{
	struct hkv_extent r;
	uint64_t p, end;
	size_t n = 0;

	hkv_lane_range(m->pool, lane, &r);
	end = r.start + r.len;
	for (p = r.start; p < end;) {
		uint64_t s = p;

		if (m->used[p]) {
			p++;
			continue;
		}
		while (p < end && !m->used[p])
			p++;
		len[n] = p - s;
		start[n++] = s;
	}
	return n;
}

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* the fewest extents for n pages from runs (sorted in place), or -1 */
static long fewest(uint64_t *len, size_t nr, uint64_t n)
{
	uint64_t sum = 0;
	size_t i;

	qsort(len, nr, sizeof(*len), cmp_desc);
	for (i = 0; i < nr; i++) {
		sum += len[i];
		if (sum >= n)
			return (long)i + 1;
	}
	return -1;
}

static void check_alloc(struct model *m, unsigned lane, uint64_t n, int k,
			const struct hkv_extent *e, uint64_t *len, uint64_t *start, size_t nr)
{
	uint64_t fit = UINT64_MAX, sum = 0, best = 0;
	struct hkv_extent r;
	long want;
	size_t i;
	int j;

	for (i = 0; i < nr; i++)
		if (len[i] >= n && len[i] < fit)
			fit = len[i];
	if (k == 1 && fit != UINT64_MAX) {	/* best fit, from a run's low end */
		uint64_t lowest = UINT64_MAX;	/* ties: the lowest such run */

		for (i = 0; i < nr; i++) {
			if (start[i] == e[0].start)
				best = len[i];
			if (len[i] == fit && start[i] < lowest)
				lowest = start[i];
		}
		assert_int_equal(best, fit);
		assert_int_equal(e[0].start, lowest);
	}
	want = fewest(len, nr, n);
	if (k < 0) {
		assert_int_equal(want, -1);
		return;
	}
	assert_int_equal(k, want);
	hkv_lane_range(m->pool, lane, &r);
	for (j = 0; j < k; j++) {
		assert_true(e[j].len > 0 && e[j].start >= r.start &&
			    e[j].start + e[j].len <= r.start + r.len);
		for (i = 0; i < e[j].len; i++) {
			assert_int_equal(m->used[e[j].start + i], 0);	/* free, disjoint */
			m->used[e[j].start + i] = 1;
		}
		sum += e[j].len;
		m->live[m->nlive++] = e[j];
	}
	assert_int_equal(sum, n);
	m->nfree -= n;
}

static void do_alloc(struct model *m)
{
	uint64_t n = req_size(m), *len, *start;
	unsigned lane = (unsigned)(rnd(m) % m->nlanes);
	struct hkv_extent e[64];
	size_t nr;
	int k;

	len = malloc(m->npages * sizeof(*len));
	start = malloc(m->npages * sizeof(*start));
	nr = lane_runs(m, lane, len, start);
	k = hkv_alloc(m->pool, n, lane, 0, e, 64);
	assert_true(k > 0 || k == -ENOMEM || k == -ENOSPC);
	if (k == -ENOSPC)
		assert_true(fewest(len, nr, n) > 64);
	else
		check_alloc(m, lane, n, k, e, len, start, nr);
	free(len);
	free(start);
}

/* the lane of an absolute page */
static unsigned page_lane(struct model *m, uint64_t p)
{
	struct hkv_extent r;

	for (unsigned l = 0; l < m->nlanes; l++)
		if (hkv_lane_range(m->pool, l, &r) == 0 && p >= r.start && p < r.start + r.len)
			return l;
	fail();
	return 0;
}

/* free pages of a lane in the model */
static uint64_t lane_free(struct model *m, unsigned lane)
{
	struct hkv_extent r;
	uint64_t n = 0;

	hkv_lane_range(m->pool, lane, &r);
	for (uint64_t p = r.start; p < r.start + r.len; p++)
		n += !m->used[p];
	return n;
}

/*
 * HKV_LANE_ANY: a lane with a run of n pages answers with one best-fit
 * extent; else the lane with the most free pages answers with its fewest;
 * else, when the pool has n free pages, several lanes answer with the
 * fewest extents of all lanes' runs together (each extent inside a lane).
 */
static void do_alloc_any(struct model *m)
{
	uint64_t n = req_size(m) * (rnd(m) % 16 == 0 ? 8 : 1), sum = 0, most = 0;
	uint64_t *len = malloc(m->npages * sizeof(*len));
	uint64_t *start = malloc(m->npages * sizeof(*start));
	uint64_t *all = malloc(m->npages * sizeof(*all));
	size_t nr, nall = 0;
	bool one = false;
	struct hkv_extent e[64];
	int k, j;

	for (unsigned l = 0; l < m->nlanes; l++) {
		nr = lane_runs(m, l, len, start);
		for (size_t i = 0; i < nr; i++) {
			one |= len[i] >= n;
			all[nall++] = len[i];
		}
		most = HKV_MAX(most, lane_free(m, l));
	}
	k = hkv_alloc(m->pool, n, HKV_LANE_ANY, 0, e, 64);
	if (k == -ENOSPC) {
		assert_false(one);
		assert_true(most < n ? fewest(all, nall, n) > 64 : true);
		goto out;
	}
	if (k < 0) {
		assert_int_equal(k, -ENOMEM);
		assert_true(m->nfree < n);
		goto out;
	}
	if (one || most >= n) {		/* one lane answered, as hkv_alloc(lane) */
		unsigned l = page_lane(m, e[0].start);

		assert_true(one ? k == 1 : lane_free(m, l) == most);
		nr = lane_runs(m, l, len, start);
		check_alloc(m, l, n, k, e, len, start, nr);
		goto out;
	}
	assert_int_equal(k, fewest(all, nall, n));	/* spread over lanes */
	for (j = 0; j < k; j++) {
		unsigned l = page_lane(m, e[j].start);

		assert_int_equal(page_lane(m, e[j].start + e[j].len - 1), l);
		for (uint64_t p = e[j].start; p < e[j].start + e[j].len; p++) {
			assert_int_equal(m->used[p], 0);
			m->used[p] = 1;
		}
		sum += e[j].len;
		m->live[m->nlive++] = e[j];
	}
	assert_int_equal(sum, n);
	m->nfree -= n;
	m->spread++;
out:
	free(len);
	free(start);
	free(all);
}

/* free a random live extent, whole or a random sub-range (radix split) */
static void do_free(struct model *m)
{
	size_t i = rnd(m) % m->nlive;
	struct hkv_extent e = m->live[i], f = e;
	uint64_t p;

	if (e.len > 2 && rnd(m) % 4 == 0) {
		uint64_t cut = 1 + rnd(m) % (e.len - 1);

		f.len = cut;			/* free the head, keep the tail */
		m->live[i] = (struct hkv_extent){ e.start + cut, e.len - cut };
	} else {
		m->live[i] = m->live[--m->nlive];
	}
	assert_int_equal(hkv_free(m->pool, &f, 1), 0);
	for (p = f.start; p < f.start + f.len; p++)
		m->used[p] = 0;
	m->nfree += f.len;
	if (rnd(m) % 64 == 0)	/* a double free fails and changes nothing */
		assert_int_equal(hkv_free(m->pool, &f, 1), -EINVAL);
}

static void check_views(struct model *m)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	const uint64_t *slots;
	uint64_t n, p, j = 0;

	assert_int_equal(hkv_check(m->pool), 0);
	assert_int_equal(hkv_stats(m->pool, &st), 0);
	assert_int_equal(st.free_pages, m->nfree);
	assert_int_equal(hkv_available(m->pool), m->nfree);
	assert_int_equal(hkv_free_slots(m->pool, &slots, &n), 0);
	assert_int_equal(n, m->nfree);
	for (p = 0; p < m->npages; p++)
		if (!m->used[p])
			assert_int_equal(slots[j++], p);
}

static void run_model(uint64_t npages, unsigned nlanes, uint64_t max_req, long ops,
		      uint64_t seed)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = npages, .nlanes = nlanes };
	struct model m = { .npages = npages, .nfree = npages, .nlanes = nlanes,
			   .rng = seed, .max_req = max_req };
	long i;

	assert_int_equal(hkv_pool_create(&o, &m.pool), 0);
	m.used = calloc(npages, 1);
	m.live = calloc(npages, sizeof(*m.live));
	for (i = 0; i < ops; i++) {
		/* hover around 95 % occupancy */
		bool alloc = m.nlive == 0 || (m.nfree > npages / 20 ? rnd(&m) % 8 != 0
								     : rnd(&m) % 3 == 0);

		/* HKV_LANE_ANY on one lane too: its own path there */
		if (alloc && rnd(&m) % 4 == 0)
			do_alloc_any(&m);
		else if (alloc)
			do_alloc(&m);
		else
			do_free(&m);
		if (i % 5000 == 0)
			check_views(&m);
	}
	check_views(&m);
	{	/* the run really exercised multi-extent answers near full */
		struct hkv_stats st = { .sz = sizeof(st) };

		assert_int_equal(hkv_stats(m.pool, &st), 0);
		print_message("%llu allocs, %llu multi-extent, %.3f extents/alloc, %llu failed\n",
			      (unsigned long long)st.allocs,
			      (unsigned long long)st.multi_extent_allocs, st.extents_per_alloc,
			      (unsigned long long)st.alloc_failures);
		assert_true(st.allocs + st.alloc_failures > (uint64_t)ops / 3);
		assert_true(st.multi_extent_allocs > 0 && st.alloc_failures > 0);
		if (nlanes > 1) {	/* and HKV_LANE_ANY answers across lanes */
			print_message("%llu HKV_LANE_ANY answers from several lanes\n",
				      (unsigned long long)m.spread);
			assert_true(m.spread > 0);
		}
	}
	while (m.nlive)
		do_free(&m);
	check_views(&m);
	assert_int_equal(m.nfree, npages);
	hkv_pool_destroy(m.pool);
	free(m.used);
	free(m.live);
}

/* small lanes (12 exact bins each, the rest in the treap), three lanes */
static void test_model_bins(void **state)
{
	(void)state;
	run_model(3000, 3, 64, 200000, 0x1234567);
}

/* one long lane with a long tail: the treap of long extents too */
static void test_model_treap(void **state)
{
	(void)state;
	run_model(12000, 1, 2500, 100000, 0xdeadbeef);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_model_bins),
		cmocka_unit_test(test_model_treap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
