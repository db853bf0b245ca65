// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stats.c - hkv_stats(), a snapshot of counters, gauges and fragmentation,
 * and hkv_check(), the full invariant check (printing: stats_print.c).
 */
#include "internal.h"
#include <stdio.h>

/* request sizes UFI is reported for */
static const uint64_t ufi_sizes[HKV_UFI_SIZES] = { 4, 16, 64, 256 };

static void add_lane(struct hkv_stats *st, const struct lane *l, unsigned i,
		     uint64_t usable[HKV_UFI_SIZES])
{
	const struct xindex *x = &l->xi;
	const struct lane_defer *q;
	unsigned j;

	st->free_pages += x->free_pages;
	st->free_extents += x->free_extents;
	st->largest_free_extent = HKV_MAX(st->largest_free_extent, x->largest);
	st->allocs += l->c.allocs;
	st->alloc_failures += l->c.alloc_failures;
	st->frees += l->c.frees;
	st->extents_returned += l->c.extents_returned;
	st->multi_extent_allocs += l->c.multi_extent_allocs;
	st->pages_allocated += l->c.pages_allocated;
	st->pages_freed += l->c.pages_freed;
	st->served_calls += l->c.served_calls;
	st->bias_revocations += l->revocations;
	q = __atomic_load_n(&l->defer, __ATOMIC_ACQUIRE);
	if (q) {		/* the lane is locked: its queue was run */
		st->deferred_frees += q->ran;
		st->deferred_free_errors += q->errors;
	}
	st->metadata_bytes += xi_metadata_bytes(x) + sizeof(*l) + (q ? sizeof(*q) : 0);
	for (j = 0; j < HKV_UFI_SIZES; j++)
		usable[j] += xi_usable(x, ufi_sizes[j]);
	if (i < HKV_STATS_LANES) {
		st->lane_free_pages[i] = x->free_pages;
		st->lane_free_extents[i] = x->free_extents;
		st->lane_largest_free_extent[i] = x->largest;
	}
}

/* each lane is read under its lock, one after another: per-lane figures
 * are consistent, the pool's sums a near snapshot under concurrency */
HKV_API int hkv_stats(const struct hkv_pool *pool, struct hkv_stats *st)
{
	struct hkv_pool *p = (struct hkv_pool *)pool;	/* locks only */
	uint64_t usable[HKV_UFI_SIZES] = { 0 };
	struct hkv_stats s = { .sz = sizeof(s) };
	size_t sz;
	unsigned i;
	int err;

	if (!pool || !st || st->sz < HKV_STATS_SZ0)
		return -EINVAL;
	if (pool_forked(pool))
		return -ECHILD;
	sz = HKV_MIN(st->sz, sizeof(s));
	s.npages = pool->npages;
	s.nlanes = pool->nlanes;
	s.page_bytes = pool->page_bytes;
	for (i = 0; i < pool->nlanes; i++) {
		lane_lock(&p->lanes[i]);
		add_lane(&s, &pool->lanes[i], i, usable);
		lane_unlock(&p->lanes[i]);
	}
	s.metadata_bytes += sizeof(*pool);
	for (i = 0; i < HKV_UFI_SIZES; i++) {
		s.ufi_size[i] = ufi_sizes[i];
		s.ufi[i] = s.free_pages ? (double)(s.free_pages - usable[i]) / s.free_pages : 0;
	}
	s.alloc_failures_nospc = HKV_LOAD(&pool->alloc_nospc);
	for (i = 1; i < HKV_EXTENTS_HIST; i++)
		s.extents_hist[i] = HKV_LOAD(&pool->extents_hist[i]);
	s.extents_hist[0] = s.allocs - s.multi_extent_allocs;
	if (s.allocs) {
		s.extents_per_alloc = (double)s.extents_returned / s.allocs;
		s.multi_extent_share = (double)s.multi_extent_allocs / s.allocs;
	}
	s.backing = s.backing_wanted = pool->opts.backing;
	s.numa_node = pool->opts.numa_node;
	s.flags = pool->opts.flags;
	err = res_stats(p, &s);
	if (err)
		return err;
	if (pool->arena)
		arena_stats(pool->arena, &s);
	memcpy(st, &s, sz);
	st->sz = sz;
	return 0;
}

/* each lane's index, then the units against the in_unit page bits;
 * messages about broken invariants are delivered after the locks are
 * released (the log callback may call back into the pool) */
HKV_API int hkv_check(const struct hkv_pool *pool)
{
	struct hkv_pool *p = (struct hkv_pool *)pool;	/* locks only */
	unsigned i;
	int err = 0;

	if (!pool)
		return -EINVAL;
	if (pool_forked(pool))
		return -ECHILD;
	log_hold();
	if (pool->named)
		err = named_check(p);
	for (i = 0; i < pool->nlanes && !err; i++) {
		const struct lane *l = &pool->lanes[i];

		lane_lock(&p->lanes[i]);
		err = xi_check(&l->xi);
		if (!err && (l->xi.base != l->first || l->xi.npages != l->npages ||
			     (i && l->first != pool->lanes[i - 1].first + pool->lanes[i - 1].npages)))
			err = -EUCLEAN;
		lane_unlock(&p->lanes[i]);
	}
	log_release();
	return err ? err : unit_check(p);
}
