// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * evict.c - planned eviction: LRU victims, free-room watermarks, hkv_evict.
 *
 * Each lane keeps an LRU list of the units homed there (coldest first, by a
 * pool-wide clock). A victim is taken from a window of the coldest unpinned
 * units (one lane's list, or a merge of all lanes' lists by clock); within
 * the window the unit whose extents border the most free pages wins, since
 * freeing it coalesces into longer free runs (window 1 = plain LRU).
 *
 * An eviction run holds the residency lock from the first victim to the last
 * free: pins, unpins and other residency calls wait for it, and a unit that
 * is pinned when the run looks at it is never chosen. The evict callback
 * runs with no lane lock held; a residency call it makes on the same pool
 * is refused with -EDEADLK (a per-thread list of the callbacks running).
 *
 * An eviction changes all or nothing: the index room its free needs is
 * reserved before the unit leaves the LRU. Should another thread's frees use
 * that room up while the callback runs and the index then fail to grow, the
 * unit is parked (its pages stay marked, hkv_check() counts them) and freed
 * by the next eviction run: no page is lost.
 */
#include "res.h"
#include "trace.h"

static struct res_unit *skip_pinned(struct res_unit *u)
{
	while (u && u->pins)
		u = u->next;
	return u;
}

/* the up to @w coldest unpinned units of @lane (or of all lanes), coldest first */
static unsigned gather(const struct hkv_pool *pool, struct hkv_res *r, unsigned lane,
		       struct res_unit **cand, unsigned w)
{
	unsigned k = 0;

	if (lane != HKV_LANE_ANY) {
		for (struct res_unit *u = skip_pinned(r->lru[lane].head); u && k < w;
		     u = skip_pinned(u->next))
			cand[k++] = u;
		return k;
	}
	for (unsigned i = 0; i < pool->nlanes; i++)
		r->cursor[i] = skip_pinned(r->lru[i].head);
	while (k < w) {
		struct res_unit *best = NULL;
		unsigned bi = 0;

		for (unsigned i = 0; i < pool->nlanes; i++) {
			if (r->cursor[i] && (!best || r->cursor[i]->stamp < best->stamp)) {
				best = r->cursor[i];
				bi = i;
			}
		}
		if (!best)
			break;
		cand[k++] = best;
		r->cursor[bi] = skip_pinned(best->next);
	}
	return k;
}

static bool page_free(const struct xindex *x, uint64_t rel)
{
	return xi_page_free(x, rel);
}

/*
 * Scoring reads the allocated bits of the lanes the candidates live in; it
 * holds one lane lock at a time (*held), switching only when a candidate's
 * extent lies in another lane, so a window usually costs one lock round.
 */
static const struct xindex *hold(struct hkv_pool *pool, uint64_t page, unsigned *held)
{
	unsigned li = lane_of(pool, page);

	if (li != *held) {
		if (*held != HKV_LANE_ANY)
			lane_unlock(&pool->lanes[*held]);
		lane_lock(&pool->lanes[li]);
		*held = li;
	}
	return &pool->lanes[li].xi;
}

/* 1 if the page before (@after false) or after @e is free and would merge */
static unsigned border(struct hkv_pool *pool, const struct hkv_extent *e, bool after,
		       unsigned *held)
{
	uint64_t edge = after ? e->start + e->len - 1 : e->start;
	const struct xindex *x = hold(pool, edge, held);
	uint64_t rel = edge - x->base + after;	/* the boundary sits before rel */

	if (rel == 0 || rel >= x->npages || (x->barrier && (x->base + rel) % x->barrier == 0))
		return 0;
	return page_free(x, after ? rel : rel - 1);
}

/* how many of @u's extent edges border free pages: O(extents) */
static unsigned border_score(struct hkv_pool *pool, const struct res_unit *u, unsigned *held)
{
	unsigned s = 0;

	for (unsigned i = 0; i < u->n; i++)
		s += border(pool, &u->ext[i], false, held) + border(pool, &u->ext[i], true, held);
	return s;
}

/* the victim: the coldest unit of the window with the best border score */
static struct res_unit *pick_victim(struct hkv_pool *pool, struct hkv_res *r, unsigned lane)
{
	struct res_unit **cand = r->cand, *best;
	unsigned k = gather(pool, r, lane, cand, r->window), best_s, held = HKV_LANE_ANY;

	if (k <= 1)
		return k ? cand[0] : NULL;
	best = cand[0];
	best_s = border_score(pool, best, &held);
	for (unsigned i = 1; i < k && best_s < 2 * best->n; i++) {
		unsigned s = border_score(pool, cand[i], &held);

		if (s > best_s) {
			best = cand[i];
			best_s = s;
		}
	}
	lane_unlock(&pool->lanes[held]);
	return best;
}

/**
 * evict_reserve() - make the free of a unit's pages infallible (for now)
 * @pool: the pool (residency lock held)
 * @u: the unit
 *
 * Return: 0, or -ENOMEM when a lane's free-extent index cannot grow.
 */
int evict_reserve(struct hkv_pool *pool, const struct res_unit *u)
{
	unsigned lo, hi, li;
	uint64_t pieces = 0;	/* may pass 2^32 with small chunks: then -ENOMEM */
	int err = 0;

	unit_lane_span(pool, u->ext, u->n, &lo, &hi);
	for (unsigned i = 0; i < u->n; i++)
		for_each_piece(pool, &u->ext[i], p, len, li)
			pieces += li < pool->nlanes;
	lanes_lock(pool, lo, hi);
	for (unsigned i = lo; i <= hi && !err; i++)
		err = xi_reserve(&pool->lanes[i].xi, (uint32_t)HKV_MIN(pieces, UINT32_MAX));
	lanes_unlock(pool, lo, hi);
	return err;
}

/* upper bounds of the evicted-unit age ranges (hkv_stats evict_age_hist) */
static const uint64_t age_le_ms[HKV_AGE_HIST - 1] = { 10, 100, 1000, 10000, 60000, 600000,
						      3600000 };

static void evicted(struct hkv_pool *pool, struct hkv_res *r, struct res_unit *u, int reason)
{
	uint64_t age = res_now() - u->used_ns;
	unsigned b = 0;

	while (b < HKV_AGE_HIST - 1 && age > age_le_ms[b] * 1000000ull)
		b++;
	r->age_hist[b]++;
	r->age_ns += age;
	r->evictions++;
	r->evicted_pages += u->npages;
	hkv_probe_evict(pool->id, u->home, u->id, u->npages, reason);
	unit_put(pool, u);
}

/* free the pages of parked evictions; returns the pages freed */
static uint64_t unpark(struct hkv_pool *pool, struct hkv_res *r)
{
	struct res_unit **pp = &r->parked, *u;
	uint64_t freed = 0;

	while ((u = *pp)) {
		if (unit_free_pages(pool, u)) {
			pp = &u->hnext;
			continue;
		}
		*pp = u->hnext;
		r->parked_pages -= u->npages;
		freed += u->npages;
		evicted(pool, r, u, HKV_EVICT_EXPLICIT);
	}
	return freed;
}

/*
 * evict one unpinned unit: reserve, leave the LRU, tell the engine, free the
 * pages. Returns the pages freed, or -ENOMEM with the unit as it was.
 */
static int64_t evict_unit(struct hkv_pool *pool, struct hkv_res *r, struct res_unit *u,
			  int reason)
{
	struct res_cb_frame frame;
	uint64_t npages;

	if (evict_reserve(pool, u)) {
		hkv_log(HKV_LOG_ERR, "evict: unit %llu stays: no memory to free its %llu pages",
			(unsigned long long)u->id, (unsigned long long)u->npages);
		r->evict_failures++;
		return -ENOMEM;
	}
	res_evictable(r, u, false);
	unit_hash_remove(r, u);
	unit_lru_unlink(r, u);
	if (pool->named ? pool->named->evict_fn != NULL : r->fn != NULL) {
		/* a named pool's callback is the evicting process's own */
		res_cb_enter(&frame, pool);
		if (pool->named)
			pool->named->evict_fn(pool->named->evict_ctx, u->id, u->ext, u->n);
		else
			r->fn(r->ctx, u->id, u->ext, u->n);
		res_cb_leave(&frame);
	}
	if (unit_free_pages(pool, u)) {
		/* the room was used up meanwhile: park it, pages still marked */
		hkv_log(HKV_LOG_ERR, "evict: unit %llu: no memory to free %llu pages yet; "
			"freed by the next eviction", (unsigned long long)u->id,
			(unsigned long long)u->npages);
		r->evict_failures++;
		u->hnext = r->parked;
		r->parked = u;
		r->parked_pages += u->npages;
		return 0;
	}
	npages = u->npages;
	evicted(pool, r, u, reason);
	return (int64_t)npages;
}

/**
 * evict_run() - one planned eviction run (residency lock held)
 * @pool: the pool
 * @lane: the lane to free pages in, or HKV_LANE_ANY for the pool
 * @target: free pages to reach
 * @contig: and a free extent of this many pages in @lane (0: no)
 * @reason: HKV_EVICT_* for the probe
 *
 * Evicts until @lane (or the pool) has @target free pages (and the extent),
 * nothing unpinned is left, or an eviction cannot get the memory its free
 * needs.
 *
 * Return: pages freed.
 */
uint64_t evict_run(struct hkv_pool *pool, unsigned lane, uint64_t target,
		       uint64_t contig, int reason)
{
	struct hkv_res *r = pool->res;
	uint64_t before = res_free_of(pool, lane), freed = unpark(pool, r), units = 0;
	struct res_unit *v;
	int64_t got;

	r->eviction_runs++;
	while ((res_free_of(pool, lane) < target ||
		(contig && res_largest_of(pool, lane) < contig)) &&
	       (v = pick_victim(pool, r, lane))) {
		got = evict_unit(pool, r, v, reason);
		if (got < 0)
			break;		/* out of memory: stop, nothing half done */
		freed += (uint64_t)got;
		units++;
	}
	hkv_probe_evict_run(pool->id, before, target, freed, units);
	return freed;
}

HKV_API int64_t hkv_evict(struct hkv_pool *pool, uint64_t target_free)
{
	uint64_t freed;
	int err;

	if (!pool)
		return -EINVAL;
	err = res_lock(pool);
	if (err)
		return err;
	freed = unpark(pool, pool->res);
	if (pool_free_pages(pool) < target_free)
		freed += evict_run(pool, HKV_LANE_ANY, target_free, 0, HKV_EVICT_EXPLICIT);
	res_unlock(pool);
	return (int64_t)freed;
}

HKV_API void hkv_set_evict_fn(struct hkv_pool *pool, hkv_evict_fn fn, void *ctx)
{
	if (!pool || res_lock(pool))
		return;		/* from the callback itself, or after fork() */
	if (pool->named) {	/* function pointers are this process's */
		pool->named->evict_fn = fn;
		pool->named->evict_ctx = ctx;
	} else {
		pool->res->fn = fn;
		pool->res->ctx = ctx;
	}
	res_unlock(pool);
}
