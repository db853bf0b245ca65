/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * res.h - the residency state of a pool, in layer order: res.c (the state,
 * its lock, the callbacks running), unit.c (ids, extents, pins, split),
 * evict.c (LRU, victim choice, eviction), room.c (room for HKV_ALLOC_EVICT,
 * watermarks), unit_check.c (the residency part of hkv_check()).
 *
 * Locking: one mutex per pool (struct hkv_res.lock) guards every field here.
 * Page bits (in_unit) and frees are changed under the owning lanes' locks,
 * taken after the residency lock, in ascending lane order. res_lock() takes
 * it, refusing a thread that runs this pool's evict callback (-EDEADLK) and
 * a pool inherited through fork() (-ECHILD); messages logged meanwhile are
 * delivered after res_unlock().
 */
#ifndef HKV_RES_H
#define HKV_RES_H

#include <time.h>

#include "internal.h"

#define RES_DEF_WINDOW	1	/* plain LRU: a window of 8 measured no gain */

/**
 * struct res_unit - one cache unit
 * @id: caller's id
 * @hnext: hash chain
 * @prev: LRU neighbour (colder)
 * @next: LRU neighbour (warmer)
 * @stamp: LRU clock at the last add/touch; split halves share it
 * @npages: pages in the unit
 * @home_pages: pages of the unit inside @home (what evicting it frees there)
 * @pins: pin count
 * @home: lane whose LRU list holds the unit (lane of its first page at add)
 * @used_ns: res_now() at the last add/touch (evicted-unit age)
 * @pinned_ns: res_now() when the pin count left 0
 * @pin_prev: older neighbour in the list of pinned units
 * @pin_next: newer neighbour
 * @n: number of extents
 * @sealed: @sum holds the checksum of its bytes (unit_sum.c); a split
 *	clears it in both halves
 * @sum: XXH3 of its bytes in page order, when @sealed
 * @ext: extents in the unit's page order (absolute pages)
 */
struct res_unit {
	uint64_t id;
	struct res_unit *hnext;
	struct res_unit *prev, *next;
	uint64_t stamp;
	uint64_t used_ns, pinned_ns;
	struct res_unit *pin_prev, *pin_next;
	uint64_t npages;
	uint64_t home_pages;
	uint32_t pins;
	uint32_t home;
	unsigned n;
	uint32_t sealed;
	uint64_t sum;
	struct hkv_extent ext[];
};

/* per lane: units homed there, coldest first */
struct res_lru {
	struct res_unit *head, *tail;
};

/* a private pool's freed unit records of 1, 2, 4 and 8 extents, kept for
 * the next units, under the residency lock (unit.c) */
struct unit_spares {
	struct res_unit *head[4];
	uint32_t count[4];
};

struct hkv_res {
	pthread_mutex_t lock;
	struct res_unit **bucket;
	uint64_t nbuckets, nunits;
	struct res_lru *lru;		/* [nlanes] */
	struct res_unit **cursor;	/* [nlanes] scratch for victim merge */
	struct res_unit **cand;		/* [window] victim candidates */
	uint64_t *evictable;		/* [nlanes] home_pages of unpinned units */
	struct res_unit *parked;	/* evicted, pages not yet freed (hnext) */
	uint64_t parked_pages;
	uint64_t clock;
	uint64_t unit_pages, pinned_units, pinned_pages;
	uint64_t evictions, evicted_pages, eviction_runs, evict_failures;
	/* pinned units, oldest pin first (hkv_stats oldest_pin_ns) */
	struct res_unit *pin_head, *pin_tail;
	uint64_t age_hist[HKV_AGE_HIST], age_ns;	/* evicted-unit ages */
	hkv_evict_fn fn;
	void *ctx;
	unsigned window;
};

/* ---- res.c ---- */
/* one evict callback running on this thread (a stack frame) */
struct res_cb_frame {
	const struct hkv_pool *pool;
	struct named_tls named;		/* this thread's named-pool lock state */
	struct res_cb_frame *prev;
};
void res_cb_enter(struct res_cb_frame *f, const struct hkv_pool *pool);
void res_cb_leave(struct res_cb_frame *f);
int res_lock(struct hkv_pool *pool);
void res_unlock(struct hkv_pool *pool);
/* the unit starts (true) or stops counting as evictable */
void res_evictable(struct hkv_res *r, const struct res_unit *u, bool add);

/* free pages of @lane, or of the pool for HKV_LANE_ANY (relaxed reads) */
static inline uint64_t res_free_of(const struct hkv_pool *pool, unsigned lane)
{
	if (lane == HKV_LANE_ANY)
		return pool_free_pages(pool);
	return HKV_LOAD(&pool->lanes[lane].xi.free_pages);
}

static inline uint64_t res_largest_of(const struct hkv_pool *pool, unsigned lane)
{
	return HKV_LOAD(&pool->lanes[lane].xi.largest);
}

/* can @lane answer @n pages (in one extent if @contig) now? */
static inline bool res_lane_room(const struct hkv_pool *pool, unsigned lane, uint64_t n,
				 bool contig)
{
	return contig ? res_largest_of(pool, lane) >= n : res_free_of(pool, lane) >= n;
}

/*
 * The time of unit events (last add or touch, first pin, eviction): ages
 * for hkv_stats (evicted-unit age, oldest pin), reported from 10 ms up, so
 * the coarse clock does (a tick's resolution, 4 ms at HZ=250) at a quarter
 * of CLOCK_MONOTONIC's cost on the add and touch paths. Not the os table's
 * clock: no test replaces it, and a replaced one would not be coarse.
 */
static inline uint64_t res_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- unit.c ---- */
/* list @u among the pinned units after @after (NULL: as the newest) */
void unit_pin_link(struct hkv_res *r, struct res_unit *u, struct res_unit *after);
struct res_unit *unit_find(const struct hkv_res *r, uint64_t id);
void unit_hash_remove(struct hkv_res *r, struct res_unit *u);
void unit_lru_unlink(struct hkv_res *r, struct res_unit *u);
int unit_free_pages(struct hkv_pool *pool, const struct res_unit *u);
void unit_drop(struct hkv_pool *pool, struct res_unit *u);
void unit_put(struct hkv_pool *pool, struct res_unit *u);
uint64_t unit_pages_in(const struct hkv_pool *pool, const struct res_unit *u, unsigned lane);
void unit_lane_span(const struct hkv_pool *pool, const struct hkv_extent *ext, unsigned n,
		   unsigned *lo, unsigned *hi);
void unit_mark_extent(struct hkv_pool *pool, const struct hkv_extent *e, bool set);

/* ---- evict.c ---- */
/* index room in every lane the unit touches for freeing it; 0 or -ENOMEM */
int evict_reserve(struct hkv_pool *pool, const struct res_unit *u);
/* evict until @lane (ANY: the pool) has @target free pages and, if
 * @contig, a free extent of @contig pages; residency lock held; pages freed */
uint64_t evict_run(struct hkv_pool *pool, unsigned lane, uint64_t target,
		   uint64_t contig, int reason);

/* ---- unit_check.c ---- every in_unit page belongs to exactly one unit (or parked
 * eviction) and the counts agree; residency and all lanes locked;
 * 0 or -EUCLEAN */
int unit_check_units(struct hkv_pool *pool);

#endif /* HKV_RES_H */
