// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lru.c - the churn with hugekv's residency choosing the victims: every
 * allocation becomes a cache unit, live units are touched at random, and a
 * request that does not fit first evicts the coldest unit (hkv_evict with
 * evict_window 1 = plain LRU, 8 = prefer cold units that border free
 * extents). Radix splits are hkv_unit_split + hkv_unit_remove(HKV_UNIT_FREE)
 * of the tail. The victims are recorded, so the baselines replay the same
 * sequence.
 *
 * Under the pool's free-room watermarks (workload room_low > 0, `hkv-bench
 * churn --watermarks`) every step allocates with HKV_ALLOC_EVICT and the pool evicts
 * inside hkv_alloc to keep room_low free; a random live unit may be
 * removed first (remove_share). A request that fails even then is counted
 * and dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

#define SPLIT_IDS	(1ull << 40)	/* unit ids of split-off tails */

struct lru {
	struct gen g;
	struct runctx rc;
	struct hkv_pool *pool;
	struct trace *t;
	uint64_t overhead, nsplit;
	uint32_t *evicted;	/* unit ids the callback saw */
	uint32_t nev, cap;
	bool measuring;
	struct hkv_stats st0;	/* at the first measured step */
};

static void lru_on_evict(void *ctx, uint64_t unit, const struct hkv_extent *ext,
			 unsigned n)
{
	struct lru *l = ctx;

	(void)ext;
	(void)n;
	if (l->nev < l->cap)
		l->evicted[l->nev] = (uint32_t)unit;
	l->nev++;
}

static int lru_push(struct lru *l, uint32_t kind, uint32_t pages, uint32_t id)
{
	return l->t ? trace_push(l->t, kind, pages, id) : 0;
}

/* unit id went free (evicted or removed): shadow check, records, trace */
static int lru_gone(struct lru *l, uint32_t id)
{
	int err = rc_freed(&l->rc, rec_ext(&l->rc.rec[id]), l->rc.rec[id].n);

	rc_release(&l->rc, id);
	gen_remove(&l->g, id);
	return err ? err : lru_push(l, OP_FREE, 0, id);
}

/* the units the evict callback saw since the last call */
static int lru_reap(struct lru *l)
{
	int err = 0;

	if (l->nev > l->cap) {
		fprintf(stderr, "hkv-bench: %u units evicted at once\n", l->nev);
		return -EUCLEAN;
	}
	for (uint32_t i = 0; i < l->nev && !err; i++)
		err = lru_gone(l, l->evicted[i]);
	l->nev = 0;
	return err;
}

static int lru_alloc(struct lru *l, bool measuring)
{
	bool wm = l->g.w->room_low > 0;
	uint32_t pages;
	int64_t id = gen_alloc(&l->g, &pages);
	uint64_t t0, t1;
	int k, err;

	if (id < 0 || rc_grow(&l->rc, (uint32_t)id))
		return -ENOMEM;
	l->nev = 0;
	t0 = tick();
	k = hkv_alloc(l->pool, pages, 0, wm ? HKV_ALLOC_EVICT : 0, l->rc.ext, l->rc.maxext);
	t1 = tick();
	if (measuring && k >= 0)
		samples_add(&l->rc.r->alloc, t0, t1, l->overhead);
	/* the victims went free before the new extents were handed out */
	err = wm ? lru_reap(l) : 0;
	if (!err && wm && k < 0) {
		l->rc.r->failures += measuring;
		gen_remove(&l->g, (uint32_t)id);
		return 0;
	}
	if (!err)
		err = rc_alloc_done(&l->rc, (uint32_t)id, k, pages, measuring);
	if (!err)
		err = hkv_unit_add(l->pool, (uint64_t)id, rec_ext(&l->rc.rec[id]),
				   l->rc.rec[id].n);
	if (!err && l->t && pages > l->t->max_size)
		l->t->max_size = pages;
	return err ? err : lru_push(l, OP_ALLOC, pages, (uint32_t)id);
}

/* watermarks: the engine drops a random unit (radix pruning, an abort) */
static int lru_remove(struct lru *l, bool measuring)
{
	uint32_t id = gen_pick(&l->g);
	uint64_t t0, t1;
	int err;

	t0 = tick();
	err = hkv_unit_remove(l->pool, id, HKV_UNIT_FREE);
	t1 = tick();
	if (err) {
		fprintf(stderr, "hkv-bench: unit remove: %s\n", hkv_strerror(err));
		return err;
	}
	if (measuring) {
		samples_add(&l->rc.r->free, t0, t1, l->overhead);
		l->rc.r->frees++;
	}
	return lru_gone(l, id);
}

static int lru_split(struct lru *l, uint32_t id, uint32_t keep, bool measuring)
{
	uint64_t nu = SPLIT_IDS + l->nsplit++, t0, t1;
	unsigned n;
	int err;

	t0 = tick();
	err = hkv_unit_split(l->pool, id, keep, nu);
	if (!err)
		err = hkv_unit_remove(l->pool, nu, HKV_UNIT_FREE);
	t1 = tick();
	if (err) {
		fprintf(stderr, "hkv-bench: unit split/remove: %s\n", hkv_strerror(err));
		return err;
	}
	if (measuring) {
		samples_add(&l->rc.r->free, t0, t1, l->overhead);
		l->rc.r->frees++;
	}
	n = rc_tail(&l->rc, id, keep);
	err = rc_freed(&l->rc, l->rc.tail, n);
	rc_truncate(&l->rc, id, keep);
	gen_shrink(&l->g, id, keep);
	return err ? err : lru_push(l, OP_PARTIAL, keep, id);
}

static int lru_evict(struct lru *l, bool measuring)
{
	uint64_t t0, t1;
	int64_t freed;

	l->nev = 0;
	t0 = tick();
	freed = hkv_evict(l->pool, hkv_available(l->pool) + 1);
	t1 = tick();
	if (freed <= 0 || !l->nev || l->nev > l->cap) {
		fprintf(stderr, "hkv-bench: hkv_evict freed %lld pages, %u units\n",
			(long long)freed, l->nev);
		return freed < 0 ? (int)freed : -EUCLEAN;
	}
	if (measuring) {
		samples_add(&l->rc.r->free, t0, t1, l->overhead);
		l->rc.r->frees++;
	}
	return lru_reap(l);
}

static int lru_step(struct lru *l, int phase)
{
	bool measuring = phase == PH_MEASURE;
	uint32_t id, keep;

	if (l->t && measuring && !l->t->measure_from)
		l->t->measure_from = l->t->n;
	if (measuring && !l->measuring) {
		l->measuring = true;
		l->st0.sz = sizeof(l->st0);
		hkv_stats(l->pool, &l->st0);
	}
	if (l->g.nlive && rng_unit(&l->g.rng) < l->g.w->touch_share &&
	    hkv_unit_touch(l->pool, gen_pick(&l->g)))
		return -EUCLEAN;
	if (l->g.w->room_low > 0) {
		int err = 0;

		gen_fits(&l->g);	/* marks the space full: burn-in counts from there */
		if (l->g.nlive && rng_unit(&l->g.rng) < l->g.w->remove_share)
			err = lru_remove(l, measuring);
		return err ? err : lru_alloc(l, measuring);
	}
	if (gen_fits(&l->g))
		return lru_alloc(l, measuring);
	if (!l->g.nlive)
		return -EINVAL;
	id = gen_pick(&l->g);
	keep = gen_split(&l->g, id);
	return keep ? lru_split(l, id, keep, measuring) : lru_evict(l, measuring);
}

/**
 * run_lru() - the churn with LRU victims chosen by hugekv
 * @hk: hugekv's adapter (pool options)
 * @w: the workload
 * @t: receives the op trace for the baselines, or NULL
 * @r: receives the figures
 *
 * Return: 0, or -errno; -ENOSYS style failures of the residency API are
 * reported with their message.
 */
int run_lru(const struct balloc_ops *hk, const struct workload *w,
	    struct trace *t, struct result *r)
{
	struct lru *l = calloc(1, sizeof(*l));
	uint64_t t0 = now_ns();
	uint32_t max_size = 0;
	void *st;
	int phase, err;

	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < w->sizes.n; i++)
		max_size = w->sizes.size[i] > max_size ? w->sizes.size[i] : max_size;
	l->t = t;
	if (t)
		memset(t, 0, sizeof(*t));
	l->overhead = timer_init()->overhead_ticks;
	l->cap = 1 << 16;
	l->evicted = malloc(l->cap * sizeof(*l->evicted));
	err = l->evicted ? rc_init(&l->rc, w, r, 1024, max_size) : -ENOMEM;
	if (err)
		goto out_free;
	gen_init(&l->g, w);
	err = hk->create(w->npages, &st);
	if (err)
		goto out_gen;
	l->pool = st;
	hkv_set_evict_fn(l->pool, lru_on_evict, l);
	while (!err && (phase = gen_phase(&l->g)) != PH_DONE) {
		err = lru_step(l, phase);
		gen_count(&l->g, phase);
		if (!err && phase == PH_MEASURE)
			err = rc_after_op(&l->rc);
	}
	if (t)
		t->nallocs = l->g.next_id;
	if (!err) {
		struct hkv_stats st1 = { .sz = sizeof(st1) };

		hkv_stats(l->pool, &st1);
		r->evict_runs = st1.eviction_runs - l->st0.eviction_runs;
		r->evictions = st1.evictions - l->st0.evictions;
	}
	rc_finish(&l->rc);
	r->seconds = (now_ns() - t0) / 1e9;
	hkv_set_evict_fn(l->pool, NULL, NULL);
	hk->destroy(st);
out_gen:
	gen_fini(&l->g);
	rc_fini(&l->rc);
out_free:
	free(l->evicted);
	free(l);
	return err;
}
