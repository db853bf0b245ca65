/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * res.h - residency state shared by unit.c (ids, extents, pins, split) and
 * evict.c (LRU, victim choice, watermarks, eviction).
 *
 * Locking: one mutex per pool (struct hkv_res.lock) guards every field here.
 * Page bits (in_unit) and frees are changed under the owning lanes' locks,
 * taken after the residency lock, in ascending lane order.
 */
#ifndef HKV_RES_H
#define HKV_RES_H

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
 * @pins: pin count
 * @home: lane whose LRU list holds the unit (lane of its first page at add)
 * @n: number of extents
 * @ext: extents in the unit's page order (absolute pages)
 */
struct res_unit {
	uint64_t id;
	struct res_unit *hnext;
	struct res_unit *prev, *next;
	uint64_t stamp;
	uint64_t npages;
	uint32_t pins;
	uint32_t home;
	unsigned n;
	struct hkv_extent ext[];
};

/* per lane: units homed there, coldest first */
struct res_lru {
	struct res_unit *head, *tail;
};

struct hkv_res {
	pthread_mutex_t lock;
	struct res_unit **bucket;
	uint64_t nbuckets, nunits;
	struct res_lru *lru;		/* [nlanes] */
	struct res_unit **cursor;	/* [nlanes] scratch for victim merge */
	struct res_unit **cand;		/* [window] victim candidates */
	uint64_t clock;
	uint64_t unit_pages, pinned_units, pinned_pages;
	uint64_t evictions, evicted_pages, eviction_runs, evict_failures;
	hkv_evict_fn fn;
	void *ctx;
	unsigned window;
};

/* unit.c */
struct res_unit *res_find(const struct hkv_res *r, uint64_t id);
void res_hash_remove(struct hkv_res *r, struct res_unit *u);
void res_lru_unlink(struct hkv_res *r, struct res_unit *u);
int res_free_pages(struct hkv_pool *pool, const struct res_unit *u);
void res_unit_drop(struct hkv_res *r, struct res_unit *u);
uint64_t res_pages_in(const struct hkv_pool *pool, const struct res_unit *u, unsigned lane);

#endif /* HKV_RES_H */
