// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * common.c - timer calibration, percentiles, JSON/CSV output, RNG, size
 * distributions and option parsing for hkv-bench.
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common.h"

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

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

/* ---- JSON --------------------------------------------------------------- */
static void json_sep(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	fprintf(j->f, "\n%*s", 2 * j->depth, "");
	if (key)
		fprintf(j->f, "\"%s\": ", key);
}

static void json_open(struct json *j, const char *key, char c)
{
	json_sep(j, key);
	fputc(c, j->f);
	if (j->depth < (int)HKV_BENCH_ARRAY(j->first) - 1)
		j->depth++;
	j->first[j->depth] = true;
}

static void json_close(struct json *j, char c)
{
	j->depth--;
	fprintf(j->f, "\n%*s%c", 2 * j->depth, "", c);
}

void json_begin(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	fputc('{', f);
	j->first[0] = true;
	j->depth = 1;
	j->first[1] = true;
}

void json_end(struct json *j)
{
	json_close(j, '}');
	fputc('\n', j->f);
	fflush(j->f);
}

void json_obj(struct json *j, const char *key) { json_open(j, key, '{'); }
void json_obj_end(struct json *j) { json_close(j, '}'); }
void json_arr(struct json *j, const char *key) { json_open(j, key, '['); }
void json_arr_end(struct json *j) { json_close(j, ']'); }

void json_u64(struct json *j, const char *key, uint64_t v)
{
	json_sep(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_dbl(struct json *j, const char *key, double v)
{
	json_sep(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.6g", v);
	else
		fputs("null", j->f);	/* JSON has no inf/nan */
}

void json_str(struct json *j, const char *key, const char *v)
{
	json_sep(j, key);
	fputc('"', j->f);
	for (; *v; v++) {
		if (*v == '"' || *v == '\\')
			fputc('\\', j->f);
		if ((unsigned char)*v >= 0x20)
			fputc(*v, j->f);
	}
	fputc('"', j->f);
}

void json_key(struct json *j, const char *key)
{
	json_sep(j, key);
}

void json_bool(struct json *j, const char *key, bool v)
{
	json_sep(j, key);
	fputs(v ? "true" : "false", j->f);
}

void json_lat(struct json *j, const char *key, const struct lat *l)
{
	json_obj(j, key);
	json_u64(j, "n", l->n);
	json_dbl(j, "mean", l->mean);
	json_dbl(j, "p50", l->p50);
	json_dbl(j, "p90", l->p90);
	json_dbl(j, "p99", l->p99);
	json_dbl(j, "p999", l->p999);
	json_dbl(j, "max", l->max);
	json_obj_end(j);
}

/* ---- CSV ---------------------------------------------------------------- */
FILE *csv_open(const char *dir, const char *name, const char *header)
{
	char path[4096];
	FILE *f;

	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "hkv-bench: mkdir %s: %s\n", dir, strerror(errno));
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "hkv-bench: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (*header)
		fprintf(f, "%s\n", header);
	return f;
}

/* ---- RNG ---------------------------------------------------------------- */
static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

/* ---- request sizes ------------------------------------------------------ */
#define SIZES_DEFAULT_MAX	4096
#define SIZES_DEFAULT_EXP	1.6

static int sizes_push(struct sizes *d, size_t *cap, uint64_t pages, double w)
{
	if (d->n == *cap) {
		size_t nc = *cap ? 2 * *cap : 256;
		uint32_t *s = realloc(d->size, nc * sizeof(*s));
		double *c;

		if (!s)
			return -ENOMEM;
		d->size = s;
		c = realloc(d->cum, nc * sizeof(*c));
		if (!c)
			return -ENOMEM;
		d->cum = c;
		*cap = nc;
	}
	d->size[d->n] = (uint32_t)pages;
	d->cum[d->n++] = w;
	return 0;
}

static int sizes_read_file(struct sizes *d, size_t *cap, const char *path,
			   uint64_t max_pages)
{
	char line[256];
	unsigned lineno = 0;
	FILE *f = fopen(path, "r");
	int err = 0;

	if (!f) {
		err = -errno;
		fprintf(stderr, "hkv-bench: --sizes %s: %s\n", path, strerror(errno));
		return err;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		unsigned long long pages, count;
		char *p = line + strspn(line, " \t");

		lineno++;
		if (*p == '#' || *p == '\n' || !*p)
			continue;
		if (sscanf(p, "%llu %llu", &pages, &count) != 2 || !pages) {
			fprintf(stderr, "hkv-bench: %s:%u: want \"pages count\"\n",
				path, lineno);
			err = -EINVAL;
		} else if (pages <= max_pages && count) {
			err = sizes_push(d, cap, pages, (double)count);
		}
	}
	fclose(f);
	return err;
}

/**
 * sizes_load() - load a request-size distribution
 * @d: receives it
 * @spec: "default" (P(n) ~ n^-1.6 for n = 1..4096 pages: mostly small radix
 *	nodes, a heavy tail of long prompts) or a file of "pages count" lines
 * @max_pages: sizes above this are dropped (small spaces)
 *
 * Return: 0, or -EINVAL / -ENOENT / -ENOMEM with a message printed.
 */
int sizes_load(struct sizes *d, const char *spec, uint64_t max_pages)
{
	size_t cap = 0;
	double total = 0, sum = 0;
	int err = 0;

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", spec);
	if (!strcmp(spec, "default")) {
		for (uint64_t n = 1; n <= SIZES_DEFAULT_MAX && n <= max_pages && !err; n++)
			err = sizes_push(d, &cap, n, pow((double)n, -SIZES_DEFAULT_EXP));
	} else {
		err = sizes_read_file(d, &cap, spec, max_pages);
	}
	if (!err && !d->n) {
		fprintf(stderr, "hkv-bench: --sizes %s: no size <= %llu pages\n",
			spec, (unsigned long long)max_pages);
		err = -EINVAL;
	}
	if (err) {
		sizes_free(d);
		return err;
	}
	for (size_t i = 0; i < d->n; i++)
		total += d->cum[i];
	for (size_t i = 0; i < d->n; i++) {
		sum += d->cum[i];
		d->mean += d->size[i] * d->cum[i] / total;
		d->cum[i] = sum / total;
	}
	d->cum[d->n - 1] = 1.0;
	return 0;
}

void sizes_free(struct sizes *d)
{
	free(d->size);
	free(d->cum);
	d->size = NULL;
	d->cum = NULL;
	d->n = 0;
}

uint32_t sizes_draw(const struct sizes *d, struct rng *r)
{
	double u = rng_unit(r);
	size_t lo = 0, hi = d->n - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (d->cum[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return d->size[lo];
}

/* ---- options ------------------------------------------------------------ */
/**
 * parse_count() - parse "3.5M", "220G", "64K", "16384"
 * @s: the text
 * @binary: suffixes are powers of 1024 (bytes) instead of 1000 (counts)
 * @out: receives the value
 *
 * Return: 0, or -EINVAL for junk, a negative or a zero-free overflow.
 */
int parse_count(const char *s, bool binary, uint64_t *out)
{
	double base = binary ? 1024 : 1000, v, mul = 1;
	char *end;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || v < 0 || !isfinite(v))
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mul = base; end++; break;
	case 'm': case 'M': mul = base * base; end++; break;
	case 'g': case 'G': mul = base * base * base; end++; break;
	case 't': case 'T': mul = base * base * base * base; end++; break;
	}
	if (*end == 'i' && binary)
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	v *= mul;
	if (*end || v > 1.8e19)
		return -EINVAL;
	*out = (uint64_t)(v + 0.5);
	return 0;
}

int parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

const char *fmt_count(uint64_t v, char *buf, size_t len)
{
	if (v >= 1000000 && v % 10000 == 0)
		snprintf(buf, len, "%.2fM", v / 1e6);
	else if (v >= 1000000)
		snprintf(buf, len, "%.3fM", v / 1e6);
	else if (v >= 10000)
		snprintf(buf, len, "%.1fK", v / 1e3);
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

void bench_pin_cpu(void)
{
	const char *s = getenv("HKV_BENCH_CPU");
	cpu_set_t set;

	if (!s || !*s)
		return;
	CPU_ZERO(&set);
	CPU_SET(atoi(s), &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "hkv-bench: HKV_BENCH_CPU=%s: %s\n", s, strerror(errno));
}

/* ---- bitmaps ------------------------------------------------------------ */
void bits_fill(uint64_t *b, uint64_t start, uint64_t len, bool set)
{
	while (len) {
		uint64_t w = start / 64, off = start % 64;
		uint64_t k = 64 - off < len ? 64 - off : len;
		uint64_t m = (k == 64 ? ~0ull : ((1ull << k) - 1)) << off;

		b[w] = set ? b[w] | m : b[w] & ~m;
		start += k;
		len -= k;
	}
}

bool bits_all(const uint64_t *b, uint64_t start, uint64_t len, bool set)
{
	while (len) {
		uint64_t w = start / 64, off = start % 64;
		uint64_t k = 64 - off < len ? 64 - off : len;
		uint64_t m = (k == 64 ? ~0ull : ((1ull << k) - 1)) << off;

		if ((b[w] & m) != (set ? m : 0))
			return false;
		start += k;
		len -= k;
	}
	return true;
}
