// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * churn.c - make a pool look like a live KV cache: allocate requests of
 * heavy-tailed sizes (1..127 pages) to the occupancy, then free random
 * ones and allocate new ones for several pool turnovers. The pages a side
 * transfers are the live allocations in their (random) final order, so
 * consecutive allocations are rarely adjacent: the extents a serving
 * engine would send. Deterministic for a seed, so a sender can replay its
 * receiver's churn on an index-only copy and know where to write.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hkv-xfer.h"

#define ALLOC_EXT	64

struct live {
	unsigned n;
	struct hkv_extent ext[ALLOC_EXT];
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t req_size(uint64_t *s)
{
	unsigned b = (unsigned)(rnd(s) % 7);

	return (1ull << b) + rnd(s) % (1ull << b);
}

static int take(struct hkv_pool *pool, uint64_t n, struct live *l)
{
	int r = hkv_alloc(pool, n, HKV_LANE_ANY, 0, l->ext, ALLOC_EXT);

	if (r < 0)
		return r;
	l->n = (unsigned)r;
	return 0;
}

/**
 * churn_pool() - fill and churn a pool, return its live pages in order
 * @pool: a fresh pool
 * @a: pages, occupancy, seed
 * @set: receives the live extents
 *
 * Return: 0, or -errno.
 */
int churn_pool(struct hkv_pool *pool, const struct pool_args *a, struct page_set *set)
{
	uint64_t s = a->seed * 2654435761u + 88172645463325252ull, target, used = 0, i, turns;
	struct live *lv;
	size_t nlive = 0, cap = a->pages + 1, k;
	unsigned j, n = 0;
	int err;

	memset(set, 0, sizeof(*set));
	if (a->occupancy <= 0) {	/* no churn: everything, in page order */
		set->ext = malloc(sizeof(*set->ext) * ALLOC_EXT);
		if (!set->ext)
			return -ENOMEM;
		err = hkv_alloc(pool, a->pages, HKV_LANE_ANY, 0, set->ext, ALLOC_EXT);
		if (err < 0) {
			page_set_free(set);
			return err;
		}
		set->n = (unsigned)err;
		set->pages = a->pages;
		return 0;
	}
	target = (uint64_t)(a->occupancy * (double)a->pages);
	lv = malloc(cap * sizeof(*lv));
	if (!lv)
		return -ENOMEM;
	while (used < target) {
		uint64_t want = XMIN(req_size(&s), target - used);

		if (take(pool, want, &lv[nlive]))
			break;
		used += want, nlive++;
	}
	turns = 4 * a->pages;	/* pages freed and reallocated: four turnovers */
	for (i = 0; i < turns && nlive;) {
		k = rnd(&s) % nlive;
		for (j = 0; j < lv[k].n; j++)
			used -= lv[k].ext[j].len, i += lv[k].ext[j].len;
		hkv_free(pool, lv[k].ext, lv[k].n);
		lv[k] = lv[--nlive];
		while (used < target) {
			uint64_t want = XMIN(req_size(&s), target - used);

			if (take(pool, want, &lv[nlive]))
				break;
			used += want, nlive++;
		}
	}
	for (k = 0; k < nlive; k++)
		n += lv[k].n;
	set->ext = malloc(sizeof(*set->ext) * (n ? n : 1));
	if (!set->ext) {
		free(lv);
		return -ENOMEM;
	}
	for (k = 0; k < nlive; k++)
		for (j = 0; j < lv[k].n; j++) {
			set->ext[set->n++] = lv[k].ext[j];
			set->pages += lv[k].ext[j].len;
		}
	free(lv);
	return 0;
}

void page_set_free(struct page_set *set)
{
	free(set->ext);
	memset(set, 0, sizeof(*set));
}

unsigned page_set_slice(const struct page_set *set, uint64_t from, uint64_t count,
			struct hkv_extent *out, unsigned max)
{
	uint64_t pos = 0;
	unsigned i, n = 0;

	for (i = 0; i < set->n && count; i++) {
		uint64_t len = set->ext[i].len, skip, take;

		if (pos + len <= from) {
			pos += len;
			continue;
		}
		if (n == max)
			return 0;
		skip = from - pos;
		take = XMIN(len - skip, count);
		out[n].start = set->ext[i].start + skip;
		out[n++].len = take;
		count -= take;
		from += take;
		pos += len;
	}
	return count ? 0 : n;
}
