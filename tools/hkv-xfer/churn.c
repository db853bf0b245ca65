// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * churn.c - make a pool look like a live KV cache: allocate cache entries
 * of heavy-tailed sizes (1..127 pages) up to the occupancy less the room of
 * the requests to transfer, free random ones and allocate new ones for
 * four pool turnovers; then allocate the requests, one hkv_alloc each, as
 * an engine allocates a request's KV: their extents are what the free
 * space of a churned pool gives. Deterministic for a seed, so a sender can
 * replay its receiver's churn on an index-only copy and know where the
 * receiver's requests are.
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

/* fill to target pages with requests of heavy-tailed sizes, then churn */
static int churn(struct hkv_pool *pool, uint64_t target, uint64_t npages, uint64_t *s)
{
	size_t nlive = 0, k;
	uint64_t used = 0, i;
	struct live *lv = malloc((npages + 1) * sizeof(*lv));
	unsigned j;

	if (!lv)
		return -ENOMEM;
	while (used < target) {
		uint64_t want = XMIN(req_size(s), target - used);

		if (take(pool, want, &lv[nlive]))
			break;
		used += want, nlive++;
	}
	/* pages freed and reallocated: four turnovers of the pool */
	for (i = 0; i < 4 * npages && nlive;) {
		k = rnd(s) % nlive;
		for (j = 0; j < lv[k].n; j++)
			used -= lv[k].ext[j].len, i += lv[k].ext[j].len;
		hkv_free(pool, lv[k].ext, lv[k].n);
		lv[k] = lv[--nlive];
		while (used < target) {
			uint64_t want = XMIN(req_size(s), target - used);

			if (take(pool, want, &lv[nlive]))
				break;
			used += want, nlive++;
		}
	}
	free(lv);		/* the churned pages stay allocated: the cache */
	return 0;
}

/**
 * churn_pool() - churn a pool like a live cache, then allocate the requests
 * @pool: a fresh pool
 * @a: pages, occupancy, seed, request size and count
 * @set: receives the requests' extents
 *
 * The cache is churned to @a->occupancy less the requests' share, then
 * the requests are allocated the way an engine allocates a request's KV
 * (one hkv_alloc each: the fewest extents the free space allows).
 *
 * Return: 0, or -errno (-ENOMEM: the requests do not fit).
 */
int churn_pool(struct hkv_pool *pool, const struct pool_args *a, struct page_set *set)
{
	uint64_t s = a->seed * 2654435761u + 88172645463325252ull, reserve, target;
	struct live l;
	unsigned i, j;
	int err;

	memset(set, 0, sizeof(*set));
	reserve = a->req_pages * a->nreq;
	target = (uint64_t)(a->occupancy * (double)a->pages);
	if (reserve > a->pages)
		return -ENOMEM;
	if (a->occupancy > 0 && target > reserve) {
		err = churn(pool, target - reserve, a->pages, &s);
		if (err)
			return err;
	}
	set->ext = malloc(sizeof(*set->ext) * a->nreq * ALLOC_EXT + 1);
	set->first = malloc(sizeof(*set->first) * (a->nreq + 1));
	if (!set->ext || !set->first) {
		page_set_free(set);
		return -ENOMEM;
	}
	for (i = 0; i < a->nreq; i++) {
		err = take(pool, a->req_pages, &l);
		if (err) {
			page_set_free(set);
			return err;
		}
		set->first[i] = set->n;
		for (j = 0; j < l.n; j++)
			set->ext[set->n++] = l.ext[j];
		set->pages += a->req_pages;
		set->nreq++;
	}
	set->first[i] = set->n;
	return 0;
}

void page_set_free(struct page_set *set)
{
	free(set->ext);
	free(set->first);
	memset(set, 0, sizeof(*set));
}
