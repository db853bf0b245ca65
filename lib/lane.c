// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lane.c - owner lanes: each lane is an extent index over its own
 * contiguous block of pages, with its own lock and counters, so threads on
 * different lanes never contend and extents never cross a lane.
 */
#include "lane_one.h"

/**
 * lane_init() - set up a lane with every page free
 * @l: the lane
 * @first: its first absolute page
 * @npages: its pages
 * @barrier: chunk size in pages that extents never cross (0 = none)
 *
 * Return: 0, -E2BIG or -ENOMEM.
 */
int lane_init(struct lane *l, uint64_t first, uint64_t npages, uint64_t barrier)
{
	int err;

	memset(l, 0, sizeof(*l));
	err = xi_init(&l->xi, first, npages, barrier);
	if (err)
		return err;
	l->first = first;
	l->npages = npages;
	return 0;
}

/**
 * lane_fini() - free a lane's index
 * @l: the lane
 */
void lane_fini(struct lane *l)
{
	lane_defer_fini(l);
	xi_fini(&l->xi);
}

/**
 * lane_of() - the lane that owns a page
 * @pool: the pool
 * @page: an absolute page < npages
 *
 * Lanes are nlanes near-equal blocks: the first npages % nlanes lanes hold
 * one page more.
 *
 * Return: the lane number.
 */
unsigned lane_of(const struct hkv_pool *pool, uint64_t page)
{
	uint64_t q, rem, big;

	if (pool->nlanes == 1)
		return 0;
	q = pool->npages / pool->nlanes;
	rem = pool->npages % pool->nlanes;
	big = rem * (q + 1);
	if (page < big)
		return (unsigned)(page / (q + 1));
	return (unsigned)(rem + (page - big) / q);
}

/**
 * lane_piece() - the part of a page range inside one lane and one chunk
 * @pool: the pool
 * @p: first page (< npages)
 * @end: end of the range (<= npages)
 * @len: receives the piece's length
 *
 * Return: the piece's lane.
 */
unsigned lane_piece(const struct hkv_pool *pool, uint64_t p, uint64_t end, uint64_t *len)
{
	unsigned li = lane_of(pool, p);
	const struct lane *l = &pool->lanes[li];
	uint64_t stop = HKV_MIN(end, l->first + l->npages);

	if (pool->chunk_pages)
		stop = HKV_MIN(stop, (p / pool->chunk_pages + 1) * pool->chunk_pages);
	*len = stop - p;
	return li;
}

void lanes_lock(struct hkv_pool *pool, unsigned lo, unsigned hi)
{
	if (pool->named)	/* the order: the pool, then lanes (named_lock.c) */
		named_lock(pool->lanes[lo].named);
	for (unsigned i = lo; i <= hi; i++)
		lane_lock(&pool->lanes[i]);
}

void lanes_unlock(struct hkv_pool *pool, unsigned lo, unsigned hi)
{
	for (unsigned i = hi + 1; i-- > lo;)
		lane_unlock(&pool->lanes[i]);
	if (pool->named)
		named_unlock(pool->lanes[lo].named);
}

/* the general allocation: plan, reserve, take (extents or -errno) */
static __attribute__((noinline)) long lane_alloc_plan(struct xindex *x, uint64_t n,
						      unsigned flags, struct hkv_extent *ext,
						      unsigned max_ext)
{
	long k = xi_plan(x, n, flags & HKV_ALLOC_CONTIG);

	if (k > (long)max_ext)
		return -ENOSPC;
	if (k > 0 && unlikely(xi_reserve_plan(x, n, k)))
		return -ENOMEM;	/* the tags could not grow */
	if (k >= 0)
		xi_take(x, n, k, ext);
	return k;
}

/**
 * lane_alloc_locked() - allocate from a locked lane and count the result
 * @pool: the pool
 * @l: the lane, locked
 * @n: pages (> 0)
 * @flags: HKV_ALLOC_CONTIG or 0
 * @ext: receives the extents
 * @max_ext: room in @ext
 *
 * Most requests are answered by one binned extent, in one step
 * (xi_alloc_one()); the rest are planned first.
 *
 * Return: extents, -ENOMEM or -ENOSPC (nothing taken).
 */
int lane_alloc_locked(struct hkv_pool *pool, struct lane *l, uint64_t n, unsigned flags,
		      struct hkv_extent *ext, unsigned max_ext)
{
	long k = likely(max_ext) ? xi_alloc_one(&l->xi, n, ext) : 0;

	if (unlikely(!k))
		k = lane_alloc_plan(&l->xi, n, flags, ext, max_ext);
	if (unlikely(k < 0)) {
		lane_count_failure(pool, &l->c, k);
		return (int)k;
	}
	l->c.allocs++;
	l->c.extents_returned += (uint64_t)k;
	if (unlikely(k > 1))
		lane_count_multi(pool, &l->c, k);
	l->c.pages_allocated += n;	/* allocs++ stands for gen++ */
	trace_frag_lane(pool, l);
	return (int)k;
}

/**
 * lane_alloc_fn() - lane_alloc_locked() as a lane_call()
 * @pool: the pool
 * @l: the lane, locked
 * @c: c->n pages, c->flags, c->ext, c->max_ext
 *
 * lane_alloc_one() out of line (lane_one.h).
 *
 * Return: extents, -ENOMEM or -ENOSPC (nothing taken).
 */
int lane_alloc_fn(struct hkv_pool *pool, struct lane *l, struct lane_call *c)
{
	return lane_alloc_one(pool, l, c);
}
