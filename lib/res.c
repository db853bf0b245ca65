// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * res.c - the residency state of a pool (struct hkv_res, res.h): its
 * creation, the residency lock (messages logged under it are held until it
 * is released, so a log callback may call back in), the evict callbacks
 * this thread is running (a residency call from inside one is -EDEADLK),
 * the evictable pages per lane, and the snapshot for hkv_stats(). unit.c,
 * evict.c and room.c build on it.
 */
#include <stddef.h>

#include "res.h"

#define RES_FITS(st, field) \
	((st)->sz >= offsetof(struct hkv_stats, field) + sizeof((st)->field))

/* the evict callbacks this thread is running, innermost first */
static __thread struct res_cb_frame *cb_top;

/**
 * res_cb_enter() - this thread starts running @pool's evict callback
 * @f: a frame on the caller's stack, until res_cb_leave()
 * @pool: the pool
 */
void res_cb_enter(struct res_cb_frame *f, const struct hkv_pool *pool)
{
	f->pool = pool;
	f->prev = cb_top;
	cb_top = f;
	named_cb_enter(&f->named);	/* the callback may use other pools */
}

/**
 * res_cb_leave() - the callback of res_cb_enter() returned
 * @f: its frame
 */
void res_cb_leave(struct res_cb_frame *f)
{
	named_cb_leave(&f->named);
	cb_top = f->prev;
}

/**
 * res_in_callback() - is this thread running @pool's evict callback?
 * @pool: the pool
 *
 * Return: true inside the callback (at any depth of nested callbacks).
 */
bool res_in_callback(const struct hkv_pool *pool)
{
	for (const struct res_cb_frame *f = cb_top; f; f = f->prev)
		if (f->pool == pool)
			return true;
	return false;
}

/**
 * res_lock() - take a pool's residency lock
 * @pool: the pool
 *
 * Return: 0, -EDEADLK from inside this pool's evict callback (the lock is
 * held by this thread), or -ECHILD for a pool inherited through fork().
 */
int res_lock(struct hkv_pool *pool)
{
	if (pool_forked(pool))
		return -ECHILD;
	if (res_in_callback(pool))
		return -EDEADLK;
	log_hold();
	if (pool->named)
		named_lock(pool->named->hdr);
	else
		pthread_mutex_lock(&pool->res->lock);
	return 0;
}

/**
 * res_unlock() - release the residency lock, then deliver held messages
 * @pool: the pool
 */
void res_unlock(struct hkv_pool *pool)
{
	if (pool->named)
		named_unlock(pool->named->hdr);
	else
		pthread_mutex_unlock(&pool->res->lock);
	log_release();
}

/**
 * res_evictable() - count a unit in (or out of) its home lane's evictable pages
 * @r: residency state (locked)
 * @u: an unpinned unit (or one whose pin count just left or reached 0)
 * @add: true to count it in
 */
void res_evictable(struct hkv_res *r, const struct res_unit *u, bool add)
{
	if (add)
		r->evictable[u->home] += u->home_pages;
	else
		r->evictable[u->home] -= u->home_pages;
}

/* the state's arrays and the state itself (any of them may be NULL) */
static void res_free(struct hkv_res *r)
{
	meta_release(r->evictable);
	meta_release(r->cand);
	meta_release(r->cursor);
	meta_release(r->lru);
	meta_release(r->bucket);
	meta_release(r);
}

/**
 * res_create() - set up the residency state of a new pool (pool->res)
 * @pool: the pool, lanes already created
 *
 * Return: 0 or -ENOMEM.
 */
int res_create(struct hkv_pool *pool)
{
	struct hkv_res *r = meta_calloc(1, sizeof(*r));
	unsigned w = pool->opts.evict_window;

	if (!r)
		return -ENOMEM;
	r->nbuckets = 64;
	/* a named pool's table never grows: a process killed while moving
	 * units to a new table would lose them (units <= pages) */
	while (pool->opts.name && r->nbuckets < pool->npages)
		r->nbuckets *= 2;
	r->bucket = meta_calloc(r->nbuckets, sizeof(*r->bucket));
	r->lru = meta_calloc(pool->nlanes, sizeof(*r->lru));
	r->cursor = meta_calloc(pool->nlanes, sizeof(*r->cursor));
	r->window = w ? w : RES_DEF_WINDOW;
	r->cand = meta_calloc(r->window, sizeof(*r->cand));
	r->evictable = meta_calloc(pool->nlanes, sizeof(*r->evictable));
	if (!r->bucket || !r->lru || !r->cursor || !r->cand || !r->evictable)
		goto free_arrays;
	if (pthread_mutex_init(&r->lock, NULL))
		goto free_arrays;
	pool->res = r;
	return 0;

free_arrays:
	res_free(r);
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
			meta_release(u);
		}
	}
	for (struct res_unit *u = r->parked, *next; u; u = next) {
		next = u->hnext;
		meta_release(u);
	}
	if (!pool_forked(pool))		/* a fork() child may see it held */
		pthread_mutex_destroy(&r->lock);
	res_free(r);
	pool->res = NULL;
}

/**
 * res_stats() - fill the residency fields of a stats snapshot
 * @pool: the pool
 * @st: the snapshot (@st->sz decides whether the fields exist)
 *
 * Return: 0, or -EDEADLK / -ECHILD (see res_lock()).
 */
int res_stats(struct hkv_pool *pool, struct hkv_stats *st)
{
	struct hkv_res *r = pool->res;
	int err;

	if (!r || !RES_FITS(st, evict_failures))
		return 0;
	err = res_lock(pool);
	if (err)
		return err;
	st->units = r->nunits;
	st->unit_pages = r->unit_pages;
	st->pinned_units = r->pinned_units;
	st->pinned_pages = r->pinned_pages;
	st->evictions = r->evictions;
	st->evicted_pages = r->evicted_pages;
	st->eviction_runs = r->eviction_runs;
	st->evict_failures = r->evict_failures;
	if (RES_FITS(st, oldest_pin_ns)) {
		memcpy(st->evict_age_hist, r->age_hist, sizeof(r->age_hist));
		st->evict_age_ns = r->age_ns;
		st->oldest_pin_ns = r->pin_head ? res_now() - r->pin_head->pinned_ns : 0;
	}
	res_unlock(pool);
	return 0;
}
