// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * unit_sum.c - a unit's checksum: recorded on request (hkv_unit_seal()),
 * compared on load (hkv_unit_verify()), so that a cache that survived a
 * restart never serves bytes that changed underneath it silently. XXH3
 * (64 bits) over the unit's pages in its page order, from Debian's
 * libxxhash-dev compiled in (XXH_INLINE_ALL: no library to link or ship).
 * The hash runs under the residency lock, so the unit cannot be split,
 * evicted or removed meanwhile; writers of its bytes are the caller's to
 * hold off, as for any read of them.
 */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "res.h"

static uint64_t unit_hash(const struct hkv_pool *pool, const struct res_unit *u)
{
	XXH3_state_t st;

	XXH3_64bits_reset(&st);
	for (unsigned i = 0; i < u->n; i++)
		XXH3_64bits_update(&st, pool->base + u->ext[i].start * pool->page_bytes,
				   u->ext[i].len * pool->page_bytes);
	return XXH3_64bits_digest(&st);
}

/* the unit, residency locked; -EINVAL for an index-only pool */
static int sum_unit(struct hkv_pool *pool, uint64_t unit, struct res_unit **u)
{
	int err;

	if (!pool)
		return -EINVAL;
	if (!pool->base)
		return pool_forked(pool) ? -ECHILD : -EINVAL;
	err = res_lock(pool);
	if (err)
		return err;
	*u = unit_find(pool->res, unit);
	if (*u)
		return 0;
	res_unlock(pool);
	return -ENOENT;
}

HKV_API int hkv_unit_seal(struct hkv_pool *pool, uint64_t unit)
{
	struct res_unit *u;
	int err = sum_unit(pool, unit, &u);

	if (err)
		return err;
	u->sum = unit_hash(pool, u);
	HKV_STORE(&u->sealed, 1);	/* after the sum: a kill leaves it unsealed */
	res_unlock(pool);
	return 0;
}

HKV_API int hkv_unit_verify(struct hkv_pool *pool, uint64_t unit)
{
	struct res_unit *u;
	int err = sum_unit(pool, unit, &u);

	if (err)
		return err;
	if (!u->sealed)
		err = -ENODATA;
	else if (unit_hash(pool, u) != u->sum)
		err = -EBADMSG;
	res_unlock(pool);
	if (err == -EBADMSG)
		hkv_log(HKV_LOG_ERR, "pool %llu: unit %llu: bytes differ from its checksum",
			(unsigned long long)pool->id, (unsigned long long)unit);
	return err;
}
