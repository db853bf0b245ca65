// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * timing.c - the per-call timer (rdtsc calibrated against CLOCK_MONOTONIC,
 * its overhead and resolution measured), sample sets, percentiles and
 * medians of repeated runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/**
 * timer_init() - calibrate tick() once
 *
 * The tick rate is measured against CLOCK_MONOTONIC over 50 ms (median of
 * three windows); the overhead is the median of 10001 back-to-back tick()
 * pairs, which every sample subtracts.
 *
 * Return: the calibration, cached.
 */
const struct timer_info *timer_init(void)
{
	static struct timer_info ti;
	static uint64_t pair[10001];
	double rate[3];

	if (ti.ns_per_tick)
		return &ti;
#if defined(__x86_64__) || defined(__i386__)
	ti.source = "rdtsc";
	for (int i = 0; i < 3; i++) {
		uint64_t n0 = now_ns(), t0 = tick(), n1, t1;

		do
			n1 = now_ns();
		while (n1 - n0 < 50000000ull);
		t1 = tick();
		rate[i] = (double)(n1 - n0) / (double)(t1 - t0);
	}
	ti.ns_per_tick = median_d(rate, 3);
#else
	(void)rate;
	ti.source = "clock_gettime";
	ti.ns_per_tick = 1.0;
#endif
	for (size_t i = 0; i < HKV_BENCH_ARRAY(pair); i++) {
		uint64_t a = tick(), b = tick();

		pair[i] = b - a;
	}
	qsort(pair, HKV_BENCH_ARRAY(pair), sizeof(pair[0]), cmp_u64);
	ti.overhead_ticks = pair[HKV_BENCH_ARRAY(pair) / 2];
	/* a VM may advance the TSC in steps: differences are multiples */
	ti.resolution_ticks = pair[0];
	for (size_t i = 1; i < HKV_BENCH_ARRAY(pair); i++)
		if (pair[i] != pair[0]) {
			uint64_t a = pair[i] - pair[0], b = pair[0];

			while (b) {	/* gcd of the step sizes seen */
				uint64_t t = a % b;

				a = b;
				b = t;
			}
			ti.resolution_ticks = a;
			break;
		}
	return &ti;
}

int samples_init(struct samples *s, size_t cap)
{
	s->n = 0;
	s->cap = cap;
	s->v = malloc((cap ? cap : 1) * sizeof(*s->v));
	return s->v ? 0 : -ENOMEM;
}

void samples_free(struct samples *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* LSD radix sort: qsort of millions of samples would dominate the run */
static void sort_u32(uint32_t *v, size_t n)
{
	uint32_t *tmp = malloc(n * sizeof(*tmp));
	size_t cnt[256];

	if (!tmp) {
		qsort(v, n, sizeof(*v), cmp_u32);
		return;
	}
	for (int shift = 0; shift < 32; shift += 8) {
		size_t sum = 0;

		memset(cnt, 0, sizeof(cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(v[i] >> shift) & 255]++;
		for (int b = 0; b < 256; b++) {
			size_t c = cnt[b];

			cnt[b] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[cnt[(v[i] >> shift) & 255]++] = v[i];
		memcpy(v, tmp, n * sizeof(*v));
	}
	free(tmp);
}

double samples_quantile_ns(const struct samples *s, double q)
{
	const struct timer_info *ti = timer_init();
	size_t i;

	if (!s->n)
		return 0;
	i = (size_t)(q * (double)(s->n - 1) + 0.5);
	if (i >= s->n)
		i = s->n - 1;
	return s->v[i] * ti->ns_per_tick;
}

void samples_summarize(struct samples *s, struct lat *out)
{
	const struct timer_info *ti = timer_init();
	double sum = 0;

	memset(out, 0, sizeof(*out));
	if (!s->n)
		return;
	sort_u32(s->v, s->n);
	for (size_t i = 0; i < s->n; i++)
		sum += s->v[i];
	out->n = s->n;
	out->mean = sum / (double)s->n * ti->ns_per_tick;
	out->p50 = samples_quantile_ns(s, 0.50);
	out->p90 = samples_quantile_ns(s, 0.90);
	out->p99 = samples_quantile_ns(s, 0.99);
	out->p999 = samples_quantile_ns(s, 0.999);
	out->max = s->v[s->n - 1] * ti->ns_per_tick;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double median_d(double *v, unsigned n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_dbl);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct spread spread_d(double *v, unsigned n)
{
	double med = median_d(v, n);	/* sorted: the range at the ends */

	return n ? (struct spread){ med, v[0], v[n - 1] } : (struct spread){ 0 };
}

struct spread ratio_spread(const double *num, const double *den, unsigned n)
{
	double v[64];

	n = n > 64 ? 64 : n;
	for (unsigned r = 0; r < n; r++)
		v[r] = den[r] > 0 ? num[r] / den[r] : 0;
	return spread_d(v, n);
}

void lat_median(const struct lat *runs, unsigned n, struct lat *out)
{
	double tmp[64];

	memset(out, 0, sizeof(*out));
	if (!n)
		return;
	if (n > 64)
		n = 64;
	out->n = runs[0].n;
#define MED(f) do {							\
		for (unsigned i = 0; i < n; i++)			\
			tmp[i] = runs[i].f;				\
		out->f = median_d(tmp, n);				\
	} while (0)
	MED(mean); MED(p50); MED(p90); MED(p99); MED(p999); MED(max);
#undef MED
}
