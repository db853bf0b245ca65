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
 * runs with no lane lock held.
 */
#include "res.h"
#include "trace.h"

/**
 * res_create() - set up the residency state of a new pool (pool->res)
 * @pool: the pool, lanes already created
 *
 * Return: 0 or -ENOMEM.
 */
int res_create(struct hkv_pool *pool)
{
	struct hkv_res *r = calloc(1, sizeof(*r));
	unsigned w = pool->opts.evict_window;

	if (!r)
		return -ENOMEM;
	r->nbuckets = 64;
	r->bucket = calloc(r->nbuckets, sizeof(*r->bucket));
	r->lru = calloc(pool->nlanes, sizeof(*r->lru));
	r->cursor = calloc(pool->nlanes, sizeof(*r->cursor));
	r->window = w ? w : RES_DEF_WINDOW;
	r->cand = calloc(r->window, sizeof(*r->cand));
	if (!r->bucket || !r->lru || !r->cursor || !r->cand)
		goto free_arrays;
	if (pthread_mutex_init(&r->lock, NULL))
		goto free_arrays;
	pool->res = r;
	return 0;

free_arrays:
	free(r->cand);
	free(r->cursor);
	free(r->lru);
	free(r->bucket);
	free(r);
	return -ENOMEM;
}

/**
 * res_destroy() - forget every unit (the pool is going away)
 * @pool: the pool; pool->res may be NULL
 */
void res_destroy(struct hkv_pool *pool)
{
	struct hkv_res *r = pool->res;

	if (!r)
		return;
	for (uint64_t i = 0; i < r->nbuckets; i++) {
		struct res_unit *u = r->bucket[i], *next;

		for (; u; u = next) {
			next = u->hnext;
			free(u);
		}
	}
	pthread_mutex_destroy(&r->lock);
	free(r->cand);
	free(r->cursor);
	free(r->lru);
	free(r->bucket);
	free(r);
	pool->res = NULL;
}

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

/* evict one unpinned unit: leave the LRU, tell the engine, free the pages */
static void evict_unit(struct hkv_pool *pool, struct hkv_res *r, struct res_unit *u,
		       int reason)
{
	res_hash_remove(r, u);
	res_lru_unlink(r, u);
	if (r->fn)
		r->fn(r->ctx, u->id, u->ext, u->n);
	if (res_free_pages(pool, u)) {
		/* the engine was told: leave the pages allocated, out of any unit */
		hkv_log(HKV_LOG_ERR, "evict: unit %llu: no memory to free %llu pages",
			(unsigned long long)u->id, (unsigned long long)u->npages);
		r->evict_failures++;
	}
	r->evictions++;
	r->evicted_pages += u->npages;
	hkv_probe_evict(pool->id, u->home, u->id, u->npages, reason);
	free(u);
}

static uint64_t free_of(const struct hkv_pool *pool, unsigned lane)
{
	if (lane == HKV_LANE_ANY)
		return hkv_available(pool);
	return HKV_LOAD(&pool->lanes[lane].xi.free_pages);
}

/**
 * evict_run() - one planned eviction run (residency lock held)
 * @pool: the pool
 * @lane: the lane to free pages in, or HKV_LANE_ANY for the pool
 * @target: free pages to reach
 * @reason: HKV_EVICT_* for the probe
 *
 * Evicts until @lane (or the pool) has @target free pages or nothing
 * unpinned is left.
 *
 * Return: pages freed.
 */
static uint64_t evict_run(struct hkv_pool *pool, unsigned lane, uint64_t target, int reason)
{
	struct hkv_res *r = pool->res;
	uint64_t before = free_of(pool, lane), freed = 0, units = 0;
	struct res_unit *v;

	r->eviction_runs++;
	while (free_of(pool, lane) < target && (v = pick_victim(pool, r, lane))) {
		freed += v->npages;
		units++;
		evict_unit(pool, r, v, reason);
	}
	hkv_probe_evict_run(pool->id, before, target, freed, units);
	return freed;
}

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

	if (fr >= n + low)
		return 0;
	return n + HKV_MAX(low, high);
}

/* run the watermark rule for one lane or the pool; residency lock held */
static void make_room(struct hkv_pool *pool, unsigned lane, uint64_t n)
{
	uint64_t total = lane == HKV_LANE_ANY ? pool->npages : pool->lanes[lane].npages;
	uint64_t target = watermark(pool, total, free_of(pool, lane), n);

	if (target)
		evict_run(pool, lane, target,
			  free_of(pool, lane) < n ? HKV_EVICT_ALLOC : HKV_EVICT_WATERMARK);
}

/* the lane with the most free pages (where an HKV_LANE_ANY request lands) */
static unsigned roomiest(const struct hkv_pool *pool)
{
	unsigned best = 0;

	for (unsigned i = 1; i < pool->nlanes; i++)
		if (free_of(pool, i) > free_of(pool, best))
			best = i;
	return best;
}

/**
 * res_make_room() - planned eviction before an HKV_ALLOC_EVICT request
 * @pool: the pool
 * @lane: the lane asked for, or HKV_LANE_ANY
 * @n: pages asked for
 *
 * Applies the watermark rule to the lane (if one is named) and to the pool;
 * an HKV_LANE_ANY request also gets room for @n pages in one lane. A request
 * that still cannot fit counts as an evict failure. The common case (no
 * eviction needed) takes no lock.
 */
void res_make_room(struct hkv_pool *pool, unsigned lane, uint64_t n)
{
	struct hkv_res *r = pool->res;
	bool any = lane >= pool->nlanes;
	unsigned fit;

	if (!watermark(pool, pool->npages, free_of(pool, HKV_LANE_ANY), n) &&
	    (any ? free_of(pool, roomiest(pool)) >= n
		 : !watermark(pool, pool->lanes[lane].npages, free_of(pool, lane), n)))
		return;
	pthread_mutex_lock(&r->lock);
	if (!any)
		make_room(pool, lane, n);
	make_room(pool, HKV_LANE_ANY, n);
	fit = any ? roomiest(pool) : lane;
	if (any && free_of(pool, fit) < n)
		evict_run(pool, fit, n, HKV_EVICT_ALLOC);
	if (free_of(pool, fit) < n)
		r->evict_failures++;	/* nothing (or too little) evictable */
	pthread_mutex_unlock(&r->lock);
}

/**
 * hkv_evict() - evict cold unpinned units until @target_free pages are free
 * @pool: the pool
 * @target_free: absolute free-page count
 *
 * Return: pages freed, or -EINVAL.
 */
HKV_API int64_t hkv_evict(struct hkv_pool *pool, uint64_t target_free)
{
	uint64_t freed = 0;

	if (!pool)
		return -EINVAL;
	pthread_mutex_lock(&pool->res->lock);
	if (hkv_available(pool) < target_free)
		freed = evict_run(pool, HKV_LANE_ANY, target_free, HKV_EVICT_EXPLICIT);
	pthread_mutex_unlock(&pool->res->lock);
	return (int64_t)freed;
}

/**
 * hkv_set_evict_fn() - set the callback told about each evicted unit
 * @pool: the pool
 * @fn: callback, or NULL
 * @ctx: passed to @fn
 */
HKV_API void hkv_set_evict_fn(struct hkv_pool *pool, hkv_evict_fn fn, void *ctx)
{
	if (!pool)
		return;
	pthread_mutex_lock(&pool->res->lock);
	pool->res->fn = fn;
	pool->res->ctx = ctx;
	pthread_mutex_unlock(&pool->res->lock);
}

#define RES_FITS(st, field) \
	((st)->sz >= offsetof(struct hkv_stats, field) + sizeof((st)->field))

/**
 * res_stats() - fill the residency fields of a stats snapshot
 * @pool: the pool
 * @st: the snapshot (@st->sz decides whether the fields exist)
 */
void res_stats(const struct hkv_pool *pool, struct hkv_stats *st)
{
	struct hkv_res *r = pool->res;

	if (!r || !RES_FITS(st, evict_failures))
		return;
	pthread_mutex_lock(&r->lock);
	st->units = r->nunits;
	st->unit_pages = r->unit_pages;
	st->pinned_units = r->pinned_units;
	st->pinned_pages = r->pinned_pages;
	st->evictions = r->evictions;
	st->evicted_pages = r->evicted_pages;
	st->eviction_runs = r->eviction_runs;
	st->evict_failures = r->evict_failures;
	pthread_mutex_unlock(&r->lock);
}
