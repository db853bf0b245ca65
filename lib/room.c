// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * room.c - room for an HKV_ALLOC_EVICT request: whether eviction can make it
 * fit at all (decided before anything is evicted, from the free and
 * evictable page counts of the lanes), the free-room watermark rule, and
 * the eviction runs that make the room (evict.c).
 */
#include "res.h"
#include "trace.h"

/**
 * watermark() - the eviction target for a request, by the watermark rule
 * @pool: the pool (its free_room_low/high)
 * @total: pages of the space (a lane or the pool)
 * @fr: free pages of the space now
 * @n: pages asked for
 *
 * Free room after the request below low -> evict up to high after it.
 *
 * Return: the free-page count to evict to, or 0 if no eviction is needed.
 */
static uint64_t watermark(const struct hkv_pool *pool, uint64_t total, uint64_t fr,
			  uint64_t n)
{
	uint64_t low = (uint64_t)(pool->opts.free_room_low * (double)total);
	uint64_t high = (uint64_t)(pool->opts.free_room_high * (double)total);

	if (fr >= n && fr - n >= low)
		return 0;
	if (n > total)
		return UINT64_MAX;	/* can never fit (the caller checks first) */
	return n + HKV_MAX(low, high);
}

/* run the watermark rule for one lane or the pool; residency lock held */
static void make_room(struct hkv_pool *pool, unsigned lane, uint64_t n)
{
	uint64_t total = lane == HKV_LANE_ANY ? pool->npages : pool->lanes[lane].npages;
	uint64_t target = watermark(pool, total, res_free_of(pool, lane), n);

	if (target)
		evict_run(pool, lane, target, 0,
			  res_free_of(pool, lane) < n ? HKV_EVICT_ALLOC : HKV_EVICT_WATERMARK);
}

/*
 * Can eviction make @n pages fit in @lane? Evicting for a lane takes the
 * units homed there (whose first page lies in it), so the most it can free
 * there is their pages in the lane. A contiguous request must also fit in a
 * lane and a chunk.
 */
static bool lane_can_fit(const struct hkv_pool *pool, unsigned lane, uint64_t n, bool contig)
{
	const struct hkv_res *r = pool->res;
	uint64_t fr = res_free_of(pool, lane);

	if (n > pool->lanes[lane].npages || (contig && pool->chunk_pages && n > pool->chunk_pages))
		return false;
	return n <= fr || n - fr <= r->evictable[lane];
}

/* HKV_LANE_ANY beyond every lane: spread over several lanes (not for a
 * contiguous request), so the whole pool's evictable pages count */
static bool pool_can_fit(const struct hkv_pool *pool, uint64_t n, bool contig)
{
	const struct hkv_res *r = pool->res;
	uint64_t fr = res_free_of(pool, HKV_LANE_ANY);

	if (contig || pool->nlanes == 1 || n > pool->npages)
		return false;
	return n <= fr || n - fr <= r->unit_pages - r->pinned_pages;
}

/* for HKV_LANE_ANY: the lane eviction can make room in and that needs the
 * least of it (most free, then most evictable), or HKV_LANE_ANY if none */
static unsigned fit_lane(const struct hkv_pool *pool, uint64_t n, bool contig)
{
	unsigned best = HKV_LANE_ANY;

	for (unsigned i = 0; i < pool->nlanes; i++) {
		if (!lane_can_fit(pool, i, n, contig))
			continue;
		if (best == HKV_LANE_ANY || res_free_of(pool, i) > res_free_of(pool, best))
			best = i;
	}
	return best;
}

/* can some lane answer an HKV_LANE_ANY request now? O(nlanes) loads */
static bool any_room(const struct hkv_pool *pool, uint64_t n, bool contig)
{
	for (unsigned i = 0; i < pool->nlanes; i++)
		if (res_lane_room(pool, i, n, contig))
			return true;
	return false;
}

/**
 * room_make() - planned eviction before an HKV_ALLOC_EVICT request
 * @pool: the pool
 * @lane: the lane asked for, or HKV_LANE_ANY
 * @n: pages asked for
 * @flags: the request's HKV_ALLOC_* flags
 * @max_ext: extents the caller has room for (1: the request is contiguous)
 *
 * First decides whether eviction can make the request fit at all (pages of
 * the lane, chunk, free plus evictable pages); a request that never can
 * evicts nothing and counts as an evict failure. Otherwise applies the
 * watermark rule to the lane (if one is named) and to the pool, then makes
 * the room the request needs: in the named lane; for HKV_LANE_ANY in the
 * pool, since the answer may spread over lanes, or, contiguous, in the lane
 * that needs the least eviction. The common case (no eviction needed)
 * takes no lock.
 *
 * Return: 0, or -EDEADLK / -ECHILD (see res_lock()).
 */
int room_make(struct hkv_pool *pool, unsigned lane, uint64_t n, unsigned flags,
		  unsigned max_ext)
{
	struct hkv_res *r = pool->res;
	bool any = lane >= pool->nlanes, contig = (flags & HKV_ALLOC_CONTIG) || max_ext == 1;
	bool spread = any && !contig && pool->nlanes > 1;	/* room in the pool will do */
	unsigned fit;
	int err;

	if (res_in_callback(pool))		/* the same answer with or without eviction */
		return -EDEADLK;
	if (!max_ext)
		return 0;			/* no answer fits in no extent */
	if (!watermark(pool, pool->npages, res_free_of(pool, HKV_LANE_ANY), n) &&
	    (spread || (any ? any_room(pool, n, contig)
			    : !watermark(pool, pool->lanes[lane].npages, res_free_of(pool, lane), n) &&
			      res_lane_room(pool, lane, n, contig))))
		return 0;
	err = res_lock(pool);
	if (err)
		return err;
	fit = spread ? HKV_LANE_ANY : any ? fit_lane(pool, n, contig) : lane;
	if (fit == HKV_LANE_ANY ? !pool_can_fit(pool, n, contig)
				: !lane_can_fit(pool, fit, n, contig)) {
		r->evict_failures++;	/* evicting cannot help: evict nothing */
		goto unlock;
	}
	if (!any)
		make_room(pool, lane, n);
	/* the request's own room first, so the pool's rule counts it */
	if (fit == HKV_LANE_ANY ? res_free_of(pool, fit) < n : !res_lane_room(pool, fit, n, contig))
		evict_run(pool, fit, n, contig ? n : 0, HKV_EVICT_ALLOC);
	make_room(pool, HKV_LANE_ANY, n);
	if (fit == HKV_LANE_ANY ? res_free_of(pool, fit) < n : !res_lane_room(pool, fit, n, contig))
		r->evict_failures++;	/* too little evictable after all */
unlock:
	res_unlock(pool);
	return 0;
}

/**
 * room_make_lanes() - planned eviction before an HKV_ALLOC_EVICT
 *	hkv_alloc_lanes() request
 * @pool: the pool
 * @count: pages per lane (their total at most the pool's pages)
 * @flags: the request's HKV_ALLOC_* flags
 * @max_ext: extents the caller has room for (one per lane: contiguous)
 *
 * All or nothing as the allocation is: if eviction cannot make every
 * lane's count fit, nothing is evicted.
 *
 * Return: 0, or -EDEADLK / -ECHILD (see res_lock()).
 */
int room_make_lanes(struct hkv_pool *pool, const uint64_t *count, unsigned flags,
			unsigned max_ext)
{
	struct hkv_res *r = pool->res;
	bool contig = flags & HKV_ALLOC_CONTIG, need = false;
	uint64_t total = 0, lanes = 0;
	unsigned i;
	int err;

	if (res_in_callback(pool))
		return -EDEADLK;
	for (i = 0; i < pool->nlanes; i++)
		lanes += !!count[i];
	if (lanes > max_ext)
		return 0;		/* at least one extent per lane: never fits */
	contig |= lanes == max_ext;
	for (i = 0; i < pool->nlanes; i++) {
		total += count[i];
		need |= count[i] && (watermark(pool, pool->lanes[i].npages, res_free_of(pool, i),
					       count[i]) || !res_lane_room(pool, i, count[i], contig));
	}
	if (!need && !watermark(pool, pool->npages, res_free_of(pool, HKV_LANE_ANY), total))
		return 0;
	err = res_lock(pool);
	if (err)
		return err;
	for (i = 0; i < pool->nlanes; i++) {
		if (count[i] && !lane_can_fit(pool, i, count[i], contig)) {
			r->evict_failures++;
			goto unlock;
		}
	}
	for (i = 0; i < pool->nlanes; i++)
		if (count[i])
			make_room(pool, i, count[i]);
	make_room(pool, HKV_LANE_ANY, total);
	for (i = 0; i < pool->nlanes; i++)
		if (count[i] && !res_lane_room(pool, i, count[i], contig))
			evict_run(pool, i, count[i], contig ? count[i] : 0, HKV_EVICT_ALLOC);
	for (i = 0; i < pool->nlanes; i++) {
		if (count[i] && !res_lane_room(pool, i, count[i], contig)) {
			r->evict_failures++;
			break;
		}
	}
unlock:
	res_unlock(pool);
	return 0;
}
