// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * common.c - seeded RNG, option parsing, backing lists, bitmaps and CPU pinning for
 * hkv-bench (timing.c, json.c and sizes.c hold the rest of common.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hugekv.h"
#include "../lib/parse.h"
#include "common.h"

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

/* ---- options ------------------------------------------------------------ */
int parse_count(const char *s, bool bytes, uint64_t *out)
{
	return (bytes ? tool_parse_size(s, out) : tool_parse_count(s, out)) ? -EINVAL : 0;
}

int parse_double(const char *s, double lo, double hi, double *out)
{
	return tool_parse_double(s, lo, hi, out) ? -EINVAL : 0;
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

/* ---- backings (prefault, access) ---------------------------------------- */
int backing_add(const char *s, int *list, unsigned *n, unsigned max)
{
	int b;

	if (hkv_backing_parse(s, &b) || b == HKV_BACKING_AUTO || b == HKV_BACKING_NONE ||
	    *n == max)
		return -EINVAL;
	list[(*n)++] = b;
	return 0;
}

void backing_defaults(int *list, unsigned *n, bool thp)
{
	if (*n)
		return;
	list[(*n)++] = HKV_BACKING_SMALL;
	if (thp)
		list[(*n)++] = HKV_BACKING_THP;
	list[(*n)++] = HKV_BACKING_HUGE_2M;
	/* 1 GiB pages where the kernel offers them */
	if (!access("/sys/kernel/mm/hugepages/hugepages-1048576kB", F_OK))
		list[(*n)++] = HKV_BACKING_HUGE_1G;
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
