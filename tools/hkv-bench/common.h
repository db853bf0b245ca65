/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * common.h - helpers shared by hkv-bench subcommands: the per-call timer,
 * sample sets and percentiles, a seeded RNG, request-size
 * distributions and option parsing; the JSON writer, the number parser and
 * the clock are the tools' own (tools/lib).
 */
#ifndef HKV_BENCH_COMMON_H
#define HKV_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../lib/json_writer.h"
#include "../lib/tool.h"

#define HKV_BENCH_ARRAY(a) (sizeof(a) / sizeof((a)[0]))
#define HKV_BENCH_MIN(a, b) ((a) < (b) ? (a) : (b))
#define HKV_BENCH_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- timer: rdtsc calibrated against CLOCK_MONOTONIC -------------------- */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
/* lfence keeps the measured call from leaking out of the window */
static inline uint64_t tick(void)
{
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
}
#else
#include <time.h>
static inline uint64_t tick(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
#endif

struct timer_info {
	const char *source;	/* "rdtsc" or "clock_gettime" */
	double ns_per_tick;
	uint64_t overhead_ticks;	/* median cost of an empty tick() pair */
	uint64_t resolution_ticks;	/* smallest step seen (VMs: ~10 ns) */
};

/* calibrate once; later calls return the cached result */
const struct timer_info *timer_init(void);
/* CLOCK_MONOTONIC: the tools' one clock */
static inline uint64_t now_ns(void)
{
	return tool_now_ns();
}

/* ---- samples and percentiles ------------------------------------------ */
struct samples {
	uint32_t *v;			/* ticks, timer overhead subtracted */
	size_t n, cap;
};

int samples_init(struct samples *s, size_t cap);
void samples_free(struct samples *s);
static inline void samples_add(struct samples *s, uint64_t t0, uint64_t t1,
			       uint64_t overhead)
{
	uint64_t d = t1 - t0;

	d = d > overhead ? d - overhead : 0;
	if (s->n < s->cap)
		s->v[s->n++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
}

/* summary of a sample set in ns */
struct lat {
	size_t n;
	double mean, p50, p90, p99, p999, max;
};

/* sorts s->v in place */
void samples_summarize(struct samples *s, struct lat *out);
/* quantile q in [0,1] of sorted samples, in ns */
double samples_quantile_ns(const struct samples *s, double q);
/* element-wise median of n summaries (medians of repeated runs) */
void lat_median(const struct lat *runs, unsigned n, struct lat *out);
/* median of n values; sorts them in place (v[0] lowest, v[n - 1] highest) */
double median_d(double *v, unsigned n);
/* the median, lowest and highest of per-round figures */
struct spread {
	double med, lo, hi;
};
/* the spread of n values; sorts them in place */
struct spread spread_d(double *v, unsigned n);
/* the spread of the per-round ratios num[r] / den[r] (0 where den[r] is 0):
 * each round over itself; num and den are left as they are (at most 64) */
struct spread ratio_spread(const double *num, const double *den, unsigned n);

/* ---- JSON: the tools' writer (tools/lib/json_writer.h) ----------------- */
/* a latency summary as {"n": .., "mean": .., "p50": .., ...} */
void json_lat(struct json *j, const char *key, const struct lat *l);
/* a spread as KEY (the median) and KEY_range ([lowest, highest]) */
void json_spread(struct json *j, const char *key, const struct spread *s);

/* ---- report fields: one table for a record's JSON and its text row ------ */
enum col_type { COL_U64, COL_UINT, COL_INT, COL_DBL, COL_STR, COL_LAT };

struct col {
	const char *key;	/* JSON member; NULL: text only */
	size_t off;
	enum col_type type;	/* COL_STR: a const char *; COL_LAT: JSON only */
	const char *head;	/* text heading; NULL: JSON only */
	const char *fmt;	/* text cell, "%9.3f"; "%d"/"%u" kinds print counts */
	double mul;		/* text: the value times this (100: a percentage) */
};

#define COL(T, m, key, type, head, fmt)	{ key, offsetof(T, m), type, head, fmt, 0 }
#define COL_PCT(T, m, key, head, fmt)	{ key, offsetof(T, m), COL_DBL, head, fmt, 100 }
#define NCOLS(t)			(sizeof(t) / sizeof((t)[0]))
/* the text columns of a latency summary @m: p50 (headed @head), p90, p99, p999 */
#define COL_LAT_TEXT(T, m, head)					\
	COL(T, m.p50, NULL, COL_DBL, head, "%9.0f"),			\
	COL(T, m.p90, NULL, COL_DBL, "p90", "%8.0f"),			\
	COL(T, m.p99, NULL, COL_DBL, "p99", "%8.0f"),			\
	COL(T, m.p999, NULL, COL_DBL, "p999", "%8.0f")

/* the headings, one record's cells (each followed by a newline) */
void cols_head(FILE *f, const struct col *c, size_t n);
void cols_text(FILE *f, const void *obj, const struct col *c, size_t n);
/* the record's members into the open object */
void cols_json(struct json *j, const void *obj, const struct col *c, size_t n);

/* ---- RNG: splitmix64 seeded, xoshiro256** ------------------------------- */
struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* uniform in [0, n) */
static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
}
static inline double rng_unit(struct rng *r)	/* [0, 1) */
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- request-size distribution ----------------------------------------- */
struct sizes {
	char name[64];
	uint32_t *size;		/* distinct sizes */
	double *cum;		/* cumulative probability */
	size_t n;
	double mean;
};

/* "default" (built in, heavy tailed) or a file of "pages count" lines;
 * sizes above max_pages are dropped. Return: 0 or -errno, message printed */
int sizes_load(struct sizes *d, const char *spec, uint64_t max_pages);
void sizes_free(struct sizes *d);
uint32_t sizes_draw(const struct sizes *d, struct rng *r);

/* ---- bitmaps ------------------------------------------------------------ */
void bits_fill(uint64_t *b, uint64_t start, uint64_t len, bool set);
bool bits_all(const uint64_t *b, uint64_t start, uint64_t len, bool set);

/* ---- options ------------------------------------------------------------ */
/* the tools' parser (tools/lib/parse.h): a count, "3.5M" -> 3500000
 * (K/M/G/T powers of 1000), or with @bytes a size, "64K" -> 65536 (powers
 * of 1024); -EINVAL for anything else, @out unchanged */
int parse_count(const char *s, bool bytes, uint64_t *out);
/* a finite number in [lo, hi]; -EINVAL otherwise */
int parse_double(const char *s, double lo, double hi, double *out);
/* "3.5M" style for humans */
const char *fmt_count(uint64_t v, char *buf, size_t len);
/* --backing B into @list: a strict backing (not auto or none), at most @max;
 * -EINVAL otherwise */
int backing_add(const char *s, int *list, unsigned *n, unsigned max);
/* without --backing: 4k, thp (with @thp), 2m, and 1g where the kernel has it */
void backing_defaults(int *list, unsigned *n, bool thp);

/* ---- environment -------------------------------------------------------- */
/* bench runs pin to one CPU when asked (HKV_BENCH_CPU), for steadier tails */
void bench_pin_cpu(void);

#endif /* HKV_BENCH_COMMON_H */
