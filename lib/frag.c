// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * frag.c - fragmentation of a lane: the unusable free index of its extent
 * index, and the rate-limited "frag" probe (its arguments cost a scan of
 * the exact bins, so they are computed only while a tracer is attached and
 * the lane moved enough since the last hit).
 */
#include "internal.h"
#include "trace.h"

/**
 * frag_ufi_permille() - unusable free index of one lane, in permille
 * @x: the index (locked)
 * @r: request size
 *
 * Return: (F - usable(r)) * 1000 / F, 0 when nothing is free.
 */
uint64_t frag_ufi_permille(const struct xindex *x, uint64_t r)
{
	if (!x->free_pages)
		return 0;
	return (x->free_pages - xi_usable(x, r)) * 1000 / x->free_pages;
}

unsigned long frag_computed;

#define FRAG_EVERY	4096	/* fire at least every N mutations of a lane */
#define FRAG_SHIFT	4	/* or on a change of 1/16 in extents or largest, */
#define FRAG_MIN_DELTA	64	/* and of at least this much: each hit costs ~us */
#define FRAG_UFI_SIZE	16	/* reference request size of the UFI argument */

static bool frag_moved(uint64_t was, uint64_t now)
{
	uint64_t d = was > now ? was - now : now - was;

	return d > HKV_MAX(was >> FRAG_SHIFT, FRAG_MIN_DELTA);
}

/**
 * frag_emit() - fire the frag probe when the lane changed enough
 * @pool: the pool
 * @l: the lane, locked by the caller
 * @lane_no: its number
 *
 * Called only under the frag semaphore (trace_frag()), so the UFI scan of
 * the exact bins is paid only while a tracer is attached.
 */
void frag_emit(struct hkv_pool *pool, struct lane *l, unsigned lane_no)
{
	const struct xindex *x = &l->xi;

	if (++l->frag_ops < FRAG_EVERY && !frag_moved(l->frag_largest, x->largest) &&
	    !frag_moved(l->frag_extents, x->free_extents))
		return;
	l->frag_ops = 0;
	l->frag_largest = x->largest;
	l->frag_extents = x->free_extents;
	HKV_ADD(&frag_computed, 1);
	hkv_probe_frag(pool->id, lane_no, x->free_pages, x->free_extents, x->largest,
		       frag_ufi_permille(x, FRAG_UFI_SIZE));
}

/**
 * frag_emit_lane() - frag_emit() of a lane of the pool, by pointer
 * @pool: the pool
 * @l: one of pool->lanes, locked by the caller
 */
void frag_emit_lane(struct hkv_pool *pool, struct lane *l)
{
	frag_emit(pool, l, (unsigned)(l - pool->lanes));
}
