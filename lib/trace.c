// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * trace.c - probe semaphores and the rate-limited "frag" probe.
 */
#include "internal.h"
#include "trace.h"

/* the semaphores of libhugekv's probes (bpf/hugekv_probes.h, CORE rows) */
HKV_PROBE_SEMAPHORES(CORE)

unsigned long trace_frag_computed;

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
 * trace_frag_emit() - fire the frag probe when the lane changed enough
 * @pool: the pool
 * @l: the lane, locked by the caller
 * @lane_no: its number
 *
 * Called only under the frag semaphore (trace_frag()), so the UFI scan of
 * the exact bins is paid only while a tracer is attached.
 */
void trace_frag_emit(struct hkv_pool *pool, struct lane *l, unsigned lane_no)
{
	const struct xindex *x = &l->xi;

	if (++l->frag_ops < FRAG_EVERY && !frag_moved(l->frag_largest, x->largest) &&
	    !frag_moved(l->frag_extents, x->free_extents))
		return;
	l->frag_ops = 0;
	l->frag_largest = x->largest;
	l->frag_extents = x->free_extents;
	HKV_ADD(&trace_frag_computed, 1);
	hkv_probe_frag(pool->id, lane_no, x->free_pages, x->free_extents, x->largest,
		       stats_ufi_permille(x, FRAG_UFI_SIZE));
}
