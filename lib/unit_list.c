// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * unit_list.c - hkv_unit_list() and hkv_unit_extents(): the units of a pool
 * and their extents, as an engine that attached a named pool after a
 * restart reads them to serve hits at once (any pool answers them).
 */
#include "res.h"

HKV_API int64_t hkv_unit_list(const struct hkv_pool *cpool, uint64_t *ids, uint64_t max)
{
	struct hkv_pool *pool = (struct hkv_pool *)cpool;	/* takes its lock */
	struct hkv_res *r;
	uint64_t n = 0;
	int err;

	if (!pool || (!ids && max))
		return -EINVAL;
	err = res_lock(pool);
	if (err)
		return err;
	r = pool->res;
	for (uint64_t b = 0; b < r->nbuckets; b++)
		for (const struct res_unit *u = r->bucket[b]; u; u = u->hnext, n++)
			if (n < max)
				ids[n] = u->id;
	res_unlock(pool);
	return (int64_t)n;
}

HKV_API int hkv_unit_extents(const struct hkv_pool *cpool, uint64_t unit,
			     struct hkv_extent *ext, unsigned max)
{
	struct hkv_pool *pool = (struct hkv_pool *)cpool;
	const struct res_unit *u;
	int err;

	if (!pool || (!ext && max))
		return -EINVAL;
	err = res_lock(pool);
	if (err)
		return err;
	u = unit_find(pool->res, unit);
	if (!u) {
		res_unlock(pool);
		return -ENOENT;
	}
	if (max)
		memcpy(ext, u->ext, (size_t)HKV_MIN(max, u->n) * sizeof(*ext));
	err = (int)u->n;
	res_unlock(pool);
	return err;
}
