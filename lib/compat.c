// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * compat.c - the legacy flat view: sorted free page ids, for callers that
 * still read a free-slot array. Materialized on demand (a bitmap walk) and
 * cached until the next mutation of any lane: each lane bumps its
 * generation, or its allocs or frees counter, on every change, so the sum
 * of them names a state.
 */
#include "internal.h"

static uint64_t gen_sum(const struct hkv_pool *pool)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < pool->nlanes; i++)
		sum += pool->lanes[i].gen + pool->lanes[i].c.allocs + pool->lanes[i].c.frees;
	return sum;
}

/* all lanes locked */
static int slots_fill(struct hkv_pool *pool)
{
	uint64_t total = 0, n = 0, *slots;
	unsigned i;

	for (i = 0; i < pool->nlanes; i++)
		total += pool->lanes[i].xi.free_pages;
	slots = realloc(pool->slots, HKV_MAX(total, 1) * sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	pool->slots = slots;
	for (i = 0; i < pool->nlanes; i++)
		n += xi_free_ids(&pool->lanes[i].xi, slots + n);
	pool->nslots = n;
	return 0;
}

HKV_API int hkv_free_slots(struct hkv_pool *pool, const uint64_t **slots, uint64_t *n)
{
	int err = 0;

	if (!pool || !slots || !n)
		return -EINVAL;
	if (pool_forked(pool))
		return -ECHILD;
	pthread_mutex_lock(&pool->slots_lock);
	/* every lane at once: lanes_lock() (a named pool's pool lock first) */
	lanes_lock(pool, 0, pool->nlanes - 1);
	if (!pool->slots_valid || pool->slots_gen != gen_sum(pool)) {
		err = slots_fill(pool);
		pool->slots_valid = !err;
		pool->slots_gen = gen_sum(pool);
	}
	lanes_unlock(pool, 0, pool->nlanes - 1);
	if (!err) {
		*slots = pool->slots;
		*n = pool->nslots;
	}
	pthread_mutex_unlock(&pool->slots_lock);
	return err;
}

/**
 * compat_fini() - free the cached view
 * @pool: the pool
 */
void compat_fini(struct hkv_pool *pool)
{
	free(pool->slots);
	pool->slots = NULL;
}
