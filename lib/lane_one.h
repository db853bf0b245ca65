/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lane_one.h - the lane_call() function of an allocation, static inline so
 * that hkv_alloc() runs the common request (one extent, from an exact bin)
 * with no call between the lane lock and the index's lines. For lane.c
 * (its out-of-line copy, lane_alloc_fn()) and pool.c.
 */
#ifndef HKV_LANE_ONE_H
#define HKV_LANE_ONE_H

#include "extent.h"
#include "trace.h"

/*
 * lane_alloc_locked() as a lane_call(): c->n pages, c->flags, c->ext,
 * c->max_ext. A request that one free extent answers is taken in one step
 * (xi_alloc_bin()) and counted here; the rest go to lane_alloc_locked().
 */
static __always_inline int lane_alloc_one(struct hkv_pool *pool, struct lane *l,
					  struct lane_call *c)
{
	long k = likely(c->max_ext) ? xi_alloc_bin(&l->xi, c->n, c->ext) : 0;

	if (unlikely(k <= 0)) {
		if (!k)
			return lane_alloc_locked(pool, l, c->n, c->flags, c->ext, c->max_ext);
		lane_count_failure(pool, &l->c, k);
		return (int)k;
	}
	l->c.allocs++;
	l->c.extents_returned++;
	l->c.pages_allocated += c->n;	/* allocs++ stands for gen++ */
	trace_frag_lane(pool, l);
	return 1;
}

#endif /* HKV_LANE_ONE_H */
