// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * multi.c - the calls that may span lanes and must change all or nothing:
 * hkv_alloc_lanes(), hkv_free(), and HKV_LANE_ANY allocations (one lane when
 * one can answer, else several). Lanes are always locked in ascending
 * order; a free is validated completely before anything is changed.
 */
#include "extent.h"
#include "trace.h"

/* range checks; lanes spanned and pieces (lane and chunk splits) counted */
static int free_validate(const struct hkv_pool *pool, const struct hkv_extent *ext,
			 unsigned n, unsigned *lo, unsigned *hi, uint64_t *pieces)
{
	unsigned i, ln;

	*lo = pool->nlanes;
	*hi = 0;
	*pieces = 0;
	for (i = 0; i < n; i++) {
		if (!ext[i].len || ext[i].start >= pool->npages ||
		    ext[i].len > pool->npages - ext[i].start)
			return -EINVAL;
		for_each_piece(pool, &ext[i], s, len, ln) {
			*lo = HKV_MIN(*lo, ln);
			*hi = HKV_MAX(*hi, ln);
			(*pieces)++;
		}
	}
	return *pieces > UINT32_MAX ? -EINVAL : 0;
}

/* mark the first n extents free (tentatively) or allocated again */
static void mark_extents(struct hkv_pool *pool, const struct hkv_extent *ext, unsigned n,
			 bool allocated)
{
	unsigned i, ln;

	for (i = 0; i < n; i++)
		for_each_piece(pool, &ext[i], s, len, ln)
			xi_mark(&pool->lanes[ln].xi, s, len, allocated);
}

/*
 * A page named twice in one free: up to FREE_PAIRWISE extents are compared
 * with each other (a few comparisons), more are found by their bits, each
 * extent's pages marked free once checked, so that a later one naming them
 * fails its check (two passes over the bits, not n^2 comparisons).
 */
#define FREE_PAIRWISE	8

/* does ext[i] share a page with ext[0 .. i - 1]? */
static bool overlaps_earlier(const struct hkv_extent *ext, unsigned i)
{
	for (unsigned j = 0; j < i; j++)
		if (ext[i].start < ext[j].start + ext[j].len &&
		    ext[j].start < ext[i].start + ext[i].len)
			return true;
	return false;
}

/* every page allocated, outside units, and named once; changes nothing */
static int free_check(struct hkv_pool *pool, const struct hkv_extent *ext, unsigned n)
{
	bool marking = n > FREE_PAIRWISE;
	unsigned i, ln;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		if (!marking && overlaps_earlier(ext, i)) {
			err = -EINVAL;	/* as the check of marked pages says */
			continue;
		}
		for_each_piece(pool, &ext[i], s, len, ln) {
			err = xi_check_allocated(&pool->lanes[ln].xi, s, len);
			if (err)
				break;
		}
		if (!err && marking)
			mark_extents(pool, &ext[i], 1, false);
	}
	if (marking)
		mark_extents(pool, ext, err ? i - 1 : n, true);
	return err;
}

/*
 * A random victim's bitmap word and boundary tags are usually cold: start
 * all their misses now, in parallel, rather than one after another under
 * the lock.
 */
static void free_prefetch(const struct xindex *x, const struct hkv_extent *e)
{
	uint64_t s = e->start - x->base;

	/* the group lines of the first and last pages (the neighbours' pages
	 * are nearly always in the same lines); e is inside the lane */
	hkv_prefetch_w(&x->grp[s >> 6]);
	hkv_prefetch_w(&x->grp[(s + e->len - 1) >> 6]);
}

/* the common call, run under the lane's lock: one extent (c->start, c->n)
 * inside one lane and one chunk, the index's steps inline */
static __always_inline int free_one_locked(struct hkv_pool *pool, struct lane *l,
					    struct lane_call *c)
{
	int ret = xi_free_checked(&l->xi, c->start, c->n);

	if (likely(!ret)) {
		l->c.pages_freed += c->n;
		l->c.frees++;		/* stands for gen++ */
		trace_frag_lane(pool, l);
	}
	return ret;
}

/* the validated free of n extents in lanes lo..hi, all locked: all or
 * nothing */
static int free_locked(struct hkv_pool *pool, const struct hkv_extent *ext, unsigned n,
		       unsigned lo, unsigned hi, uint64_t pieces)
{
	unsigned i, ln;
	int ret = 0;

	for (i = lo; i <= hi && !ret; i++)
		ret = xi_reserve(&pool->lanes[i].xi, (uint32_t)pieces);
	if (!ret)
		ret = free_check(pool, ext, n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		for_each_piece(pool, &ext[i], s, len, ln) {
			xi_free(&pool->lanes[ln].xi, s, len);
			pool->lanes[ln].c.pages_freed += len;
		}
	}
	pool->lanes[lo].c.frees++;
	for (i = lo; i <= hi; i++) {
		pool->lanes[i].gen++;
		trace_frag(pool, &pool->lanes[i], i);
	}
	return 0;
}

/* free_locked() inside one lane, as a lane_call(): c->ext[0 .. c->n - 1],
 * c->max_ext pieces */
static int free_lane_locked(struct hkv_pool *pool, struct lane *l, struct lane_call *c)
{
	unsigned ln = (unsigned)(l - pool->lanes);

	return free_locked(pool, c->ext, (unsigned)c->n, ln, ln, c->max_ext);
}

/* hkv_free() of anything but one extent inside one lane and one chunk:
 * validated, then freed all or nothing; *lo_out: the lane the free probe
 * names, *pages_out: the pages freed */
static __attribute__((noinline)) int free_many(struct hkv_pool *pool,
					       const struct hkv_extent *ext, unsigned n,
					       unsigned *lo_out, uint64_t *pages_out)
{
	uint64_t pieces = 0, pages = 0;
	unsigned i, lo = 0, hi = 0;
	int ret;

	ret = n ? free_validate(pool, ext, n, &lo, &hi, &pieces) : 0;
	if (ret || !n)
		goto out;
	if (lo == hi) {		/* one lane: its owner may run it */
		struct lane_call c = { .ext = (struct hkv_extent *)ext, .n = n,
				       .max_ext = (unsigned)pieces, .frees = true };
		struct lane *l = &pool->lanes[lo];

		if (lane_owned(l))
			free_prefetch(&l->xi, &ext[0]);
		ret = lane_call(pool, l, free_lane_locked, &c);
	} else {
		free_prefetch(&pool->lanes[lane_of(pool, ext->start)].xi, &ext[0]);
		lanes_lock(pool, lo, hi);
		ret = free_locked(pool, ext, n, lo, hi, pieces);
		lanes_unlock(pool, lo, hi);
	}
	for (i = 0; !ret && i < n; i++)
		pages += ext[i].len;
out:
	*lo_out = lo;
	*pages_out = pages;
	return ret;
}

/* hkv_free() of anything but one extent inside one lane and one chunk,
 * with its free probe */
static __attribute__((noinline)) int free_other(struct hkv_pool *pool,
						const struct hkv_extent *ext, unsigned n)
{
	uint64_t pages;
	unsigned lo;
	int ret = free_many(pool, ext, n, &lo, &pages);

	if (HKV_PROBE_ON(free))
		hkv_probe_free(pool->id, (int)lo, pages, n, ret);
	return ret;
}

HKV_API int hkv_free(struct hkv_pool *pool, const struct hkv_extent *ext, unsigned n)
{
	struct lane_call c;
	struct lane *l;
	unsigned lo = 0;
	bool queued = false;
	int ret;

	if (!pool || (!ext && n)) {
		ret = -EINVAL;
		goto out;
	}
	if (unlikely(pool_forked(pool))) {
		ret = -ECHILD;
		goto out;
	}
	/* the common call: one extent inside one lane and one chunk */
	if (unlikely(n != 1 || !ext->len || ext->start >= pool->npages ||
		     ext->len > pool->npages - ext->start))
		return free_other(pool, ext, n);
	if (pool->nlanes != 1 || pool->chunk_pages) {
		uint64_t len;

		lo = lane_piece(pool, ext->start, ext->start + ext->len, &len);
		if (len != ext->len)
			return free_other(pool, ext, n);
	}
	/* only what lane_call_slow() reads: the extent, no c->ext and
	 * c->frees (a free); it writes the rest before any use */
	c.start = ext->start;
	c.n = ext->len;
	c.ext = NULL;
	c.frees = true;
	l = &pool->lanes[lo];
	if (lane_owned(l))	/* else the owner runs it: leave its lines alone */
		free_prefetch(&l->xi, ext);
	else		/* another thread's lane: answered now, run by it? */
		queued = pool->lane_defer && HKV_LOAD(&l->owner) &&
			 lane_defer_free(pool, l, ext->start, ext->len);
	ret = likely(!queued) ? lane_call(pool, l, free_one_locked, &c) : 0;
	if (HKV_PROBE_ON(free))	/* the lane from l: lo is not kept across */
		hkv_probe_free(pool->id, (int)(l - pool->lanes), ret ? 0 : c.n, n, ret);
	return ret;
out:
	if (HKV_PROBE_ON(free))
		hkv_probe_free(pool ? pool->id : 0, (int)lo, 0, n, ret);
	return ret;
}

/* one lane's share of a request spread over lanes */
struct spread {
	struct xi_cursor c;	/* its free extents, descending */
	bool live;		/* c holds a group */
	uint64_t pages;		/* taken from this lane */
	long k;			/* extents taken from it */
};

/*
 * Fewest extents over the union of the lanes' free extents: whole extents
 * largest-first (merging the lanes' descending walks) until the rest fits
 * in one, then that rest as a best fit from the lane whose fit is
 * smallest. Each lane's share is then exactly what xi_take() does: its
 * k - 1 largest whole and a best fit for the rest. Lanes locked.
 */
static long spread_plan(struct hkv_pool *pool, uint64_t n, struct spread *s,
			unsigned max_ext)
{
	uint64_t need = n, fit = 0, free = 0;
	unsigned i, j, r;
	long k = 0;

	for (i = 0; i < pool->nlanes; i++) {	/* calloc'ed: the rest is zero */
		s[i].live = xi_cursor_first(&pool->lanes[i].xi, &s[i].c);
		free += pool->lanes[i].xi.free_pages;
	}
	if (free < n)
		return -ENOMEM;		/* before -ENOSPC, as in one lane */
	for (;;) {
		uint64_t take;

		for (j = pool->nlanes, i = 0; i < pool->nlanes; i++)
			if (s[i].live && (j == pool->nlanes || s[i].c.len > s[j].c.len))
				j = i;
		if (j == pool->nlanes)
			return -ENOMEM;
		if (s[j].c.len >= need)
			break;
		take = HKV_MIN(s[j].c.count, (need - 1) / s[j].c.len);
		k += (long)take;
		if (k + 1 > (long)max_ext)
			return -ENOSPC;
		s[j].pages += take * s[j].c.len;
		s[j].k += (long)take;
		need -= take * s[j].c.len;
		if (take == s[j].c.count)
			s[j].live = xi_cursor_next(&pool->lanes[j].xi, &s[j].c);
		else
			s[j].c.count -= take;
	}
	for (r = j, i = 0; i < pool->nlanes; i++) {
		uint64_t f;

		if (!s[i].live || s[i].c.len < need)
			continue;
		f = xi_fit_len(&pool->lanes[i].xi, need);
		if (!fit || f < fit) {
			fit = f;
			r = i;
		}
	}
	s[r].pages += need;
	s[r].k++;
	return k + 1;
}

/**
 * multi_alloc_spread() - n pages from several lanes, all or nothing
 * @pool: the pool (more than one lane)
 * @n: pages (> 0)
 * @ext: receives the extents, lane by lane (each lane's largest first)
 * @max_ext: room in @ext
 *
 * For HKV_LANE_ANY when no single lane has @n free pages. Every lane is
 * locked (ascending) while the plan is made and taken.
 *
 * Return: extents, -ENOMEM (the pool has fewer free pages, or no memory
 * for the plan) or -ENOSPC; nothing is taken then.
 */
static int multi_alloc_spread(struct hkv_pool *pool, uint64_t n, struct hkv_extent *ext,
		      unsigned max_ext)
{
	struct spread *s = calloc(pool->nlanes, sizeof(*s));
	unsigned i, last = pool->nlanes - 1, got = 0;
	long k;

	if (!s)
		return -ENOMEM;
	lanes_lock(pool, 0, last);
	k = spread_plan(pool, n, s, max_ext);
	for (i = 0; k > 0 && i <= last; i++)	/* every lane before any take */
		if (s[i].k && xi_reserve_plan(&pool->lanes[i].xi, s[i].pages, s[i].k))
			k = -ENOMEM;
	if (k < 0) {
		lane_count_failure(pool, &pool->lanes[0].c, k);
		goto unlock;
	}
	for (i = 0; i <= last; i++) {
		struct lane *l = &pool->lanes[i];

		if (!s[i].k)
			continue;
		xi_take(&l->xi, s[i].pages, s[i].k, ext + got);
		got += (unsigned)s[i].k;
		l->c.pages_allocated += s[i].pages;
		l->gen++;
		trace_frag(pool, l, i);
	}
	pool->lanes[0].c.allocs++;
	pool->lanes[0].c.extents_returned += (uint64_t)k;
	if (k > 1)
		lane_count_multi(pool, &pool->lanes[0].c, k);
unlock:
	lanes_unlock(pool, 0, last);
	free(s);
	return (int)k;
}

/* lanes with a non-zero count: first and last, and the total */
static int lanes_validate(const struct hkv_pool *pool, const uint64_t *count,
			  unsigned *lo, unsigned *hi, uint64_t *total)
{
	unsigned i;

	*lo = pool->nlanes;
	*hi = 0;
	*total = 0;
	for (i = 0; i < pool->nlanes; i++) {
		if (!count[i])
			continue;
		if (count[i] > pool->npages - *total)
			return -ENOMEM;
		*total += count[i];
		*lo = HKV_MIN(*lo, i);
		*hi = i;
	}
	return *total ? 0 : -EINVAL;
}

/* plan every lane; the extents needed in all, or -ENOMEM */
static long lanes_plan(struct hkv_pool *pool, const uint64_t *count, unsigned lo,
		       unsigned hi, unsigned flags)
{
	long k, sum = 0;
	unsigned i;

	for (i = lo; i <= hi; i++) {
		if (!count[i])
			continue;
		k = xi_plan(&pool->lanes[i].xi, count[i], flags & HKV_ALLOC_CONTIG);
		if (k < 0)
			return k;
		if (xi_reserve_plan(&pool->lanes[i].xi, count[i], k))	/* every lane before any take */
			return -ENOMEM;
		sum += k;
	}
	return sum;
}

HKV_API int hkv_alloc_lanes(struct hkv_pool *pool, const uint64_t *count,
			    unsigned flags, struct hkv_extent *ext, unsigned max_ext)
{
	unsigned i, lo = 0, hi = 0, got = 0;
	uint64_t total = 0, largest = 0;
	long need;
	int ret;

	if (!pool || !count || !ext || (flags & ~(HKV_ALLOC_CONTIG | HKV_ALLOC_EVICT))) {
		ret = -EINVAL;
		goto out;
	}
	if (pool_forked(pool)) {
		ret = -ECHILD;
		goto out;
	}
	ret = lanes_validate(pool, count, &lo, &hi, &total);
	if (!ret && (flags & HKV_ALLOC_EVICT))
		ret = room_make_lanes(pool, count, flags, max_ext);
	if (ret)
		goto out;
	lanes_lock(pool, lo, hi);
	need = lanes_plan(pool, count, lo, hi, flags);
	if (need > (long)max_ext)
		need = -ENOSPC;
	if (need < 0) {
		lane_count_failure(pool, &pool->lanes[lo].c, need);
		ret = (int)need;
		goto unlock;
	}
	for (i = lo; i <= hi; i++) {
		if (count[i])
			got += (unsigned)lane_alloc_locked(pool, &pool->lanes[i], count[i], flags,
							   ext + got, max_ext - got);
	}
	ret = (int)got;
unlock:
	lanes_unlock(pool, lo, hi);
out:
	if (HKV_PROBE_ON(alloc)) {
		for (i = 0; ret > 0 && i < (unsigned)ret; i++)
			largest = HKV_MAX(largest, ext[i].len);
		hkv_probe_alloc(pool ? pool->id : 0, -1, total, ret,
				ret > 0 ? ext[0].start : 0, largest);
	}
	return ret;
}

static __thread unsigned lane_hint;

/* an allocation from the lane when it still has an extent of c->n pages */
static int alloc_if_room(struct hkv_pool *pool, struct lane *l, struct lane_call *c)
{
	return l->xi.largest >= c->n ? lane_alloc_fn(pool, l, c) : -ENOMEM;
}

/**
 * multi_alloc_any() - allocate from whichever lane can answer best
 * @pool: the pool
 * @n: pages (> 0)
 * @flags: HKV_ALLOC_CONTIG or 0
 * @ext: receives the extents
 * @max_ext: room in @ext
 * @lane_out: receives the lane used
 *
 * Prefers a lane that has one extent of @n pages, starting from this
 * thread's last lane (threads spread out and stay put); else the lane with
 * the most free pages; when no lane has @n free pages, several lanes
 * (multi_alloc_spread(), all locked). O(nlanes) relaxed reads, one lock
 * taken per try. @lane_out is HKV_LANE_ANY for an answer from several lanes.
 *
 * Return: extents, -ENOMEM or -ENOSPC.
 */
int multi_alloc_any(struct hkv_pool *pool, uint64_t n, unsigned flags,
		   struct hkv_extent *ext, unsigned max_ext, unsigned *lane_out)
{
	unsigned i, start = lane_hint < pool->nlanes ? lane_hint : 0, best = start;
	unsigned ln = start;
	uint64_t most = 0;
	struct lane_call c;
	int ret;

	for (i = 0; i < pool->nlanes; i++, ln = ln + 1 < pool->nlanes ? ln + 1 : 0) {
		struct lane *l = &pool->lanes[ln];
		bool queued;	/* frees its holder runs first */
		uint64_t avail = lane_avail(l, &queued);

		if (avail > most) {
			most = avail;
			best = ln;
		}
		if (HKV_LOAD(&l->xi.largest) < n && likely(!queued))
			continue;
		c = (struct lane_call){ .n = n, .flags = flags, .ext = ext, .max_ext = max_ext };
		ret = lane_call(pool, l, alloc_if_room, &c);
		if (ret != -ENOMEM) {
			lane_hint = *lane_out = ln;
			return ret;
		}
	}
	/* no lane holds n pages: the pool may, across lanes */
	if (most < n && pool->nlanes > 1 && !(flags & HKV_ALLOC_CONTIG)) {
		*lane_out = HKV_LANE_ANY;
		return multi_alloc_spread(pool, n, ext, max_ext);
	}
	*lane_out = best;
	c = (struct lane_call){ .n = n, .flags = flags, .ext = ext, .max_ext = max_ext };
	ret = lane_call(pool, &pool->lanes[best], lane_alloc_fn, &c);
	if (ret >= 0)
		lane_hint = best;
	return ret;
}

HKV_API int hkv_extents_allocated(const struct hkv_pool *pool, const struct hkv_extent *ext,
				  unsigned n)
{
	struct hkv_pool *mpool = (struct hkv_pool *)pool;	/* only the locks change */
	unsigned lo, hi, i, ln;
	uint64_t pieces;
	int err;

	if (!pool || !ext || !n)
		return -EINVAL;
	if (pool_forked(pool))
		return -ECHILD;
	err = free_validate(pool, ext, n, &lo, &hi, &pieces);
	if (err)
		return err;
	lanes_lock(mpool, lo, hi);
	for (i = 0; !err && i < n; i++)
		for_each_piece(pool, &ext[i], p, len, ln)
			if (xi_check_allocated(&pool->lanes[ln].xi, p, len) == -EINVAL) {
				err = -EINVAL;
				break;
			}
	lanes_unlock(mpool, lo, hi);
	return err;
}
