// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * backing.c - page sizes: what each backing maps with, and the parts of one
 * node segment.
 *
 * A segment is laid out as consecutive parts, largest page size first (so
 * every part starts aligned to its page size): as many 1 GiB pages as the
 * node and the global pool have free, then 2 MiB pages, then THP, then
 * 4 KiB pages. Hugepages are scarce and shared by every process on the
 * machine, so AUTO does not round a small rest up to a large page: a page
 * size takes the whole rest only when that wastes at most 1/8 of the
 * segment, otherwise just the whole pages that fit (a 16 MiB pool gets
 * eight 2 MiB pages, not a 1 GiB page). The same walk with every size
 * plentiful gives the "wanted" layout that shortfalls are measured against.
 */
#include "internal.h"

#define SEG_WASTE_SHIFT	3	/* a round-up may waste 1/8 of the segment */

/**
 * backing_pgsz() - page size a backing maps with
 * @backing: HKV_BACKING_*
 *
 * Return: 1 GiB, 2 MiB, or 4 KiB (THP and small pages; THP segments are
 * still 2 MiB aligned, see backing_align()), 0 for NONE/AUTO.
 */
uint64_t backing_pgsz(int backing)
{
	switch (backing) {
	case HKV_BACKING_HUGE_1G: return HKV_PGSZ_1G;
	case HKV_BACKING_HUGE_2M: return HKV_PGSZ_2M;
	case HKV_BACKING_THP:
	case HKV_BACKING_SMALL: return HKV_PGSZ_4K;
	default: return 0;
	}
}

/* alignment and size granule of a part: THP wants 2 MiB-aligned ranges */
uint64_t backing_align(int backing)
{
	return backing == HKV_BACKING_THP ? HKV_PGSZ_2M : backing_pgsz(backing);
}

/* the next smaller page size, whatever the policy; -1 after 4 KiB */
static int next_size(int b)
{
	switch (b) {
	case HKV_BACKING_HUGE_1G: return HKV_BACKING_HUGE_2M;
	case HKV_BACKING_HUGE_2M: return HKV_BACKING_THP;
	case HKV_BACKING_THP: return HKV_BACKING_SMALL;
	default: return -1;
	}
}

static bool thp_offered(const struct topo *t)
{
	return t->thp_mode[0] && strcmp(t->thp_mode, "never");
}

/* pages of backing b the segment may take (UINT64_MAX: no limit); *why
 * says why there are none: -EOPNOTSUPP not offered, -ENOMEM none free */
static uint64_t seg_avail(const struct seg_req *rq, int b, int *why)
{
	const struct numa_topo_pool *np, *gp;
	uint64_t gfree, n;

	if (rq->plentiful || b == HKV_BACKING_SMALL)
		return UINT64_MAX;
	if (b == HKV_BACKING_THP) {
		*why = -EOPNOTSUPP;
		return thp_offered(rq->t) ? UINT64_MAX : 0;
	}
	np = numa_topo_pool(rq->n, backing_pgsz(b));
	gp = numa_topo_glob(rq->t, backing_pgsz(b));
	if (!np->present && !gp->present) {
		*why = -EOPNOTSUPP;
		return 0;
	}
	/* reservations are global, placement per node: both must cover it */
	gfree = gp->free > gp->resv ? gp->free - gp->resv : 0;
	gfree = gfree > rq->planned[b] ? gfree - rq->planned[b] : 0;
	n = HKV_MIN(np->free, gfree);
	*why = -ENOMEM;
	return n;
}

/* bytes of backing b for the rest r: all of it rounded up, or only the
 * whole units that fit when the round-up would waste too much */
static uint64_t seg_take(const struct seg_req *rq, int b, uint64_t r, bool *rounded)
{
	uint64_t u = backing_align(b), full = HKV_ROUND_UP(r, u);
	bool asked = rq->o->backing == b;	/* an explicit backing is used as asked */

	if (rq->exact)
		return r / u * u;
	if (asked || b == HKV_BACKING_SMALL || (full - r) << SEG_WASTE_SHIFT <= rq->raw)
		return full;
	*rounded = true;
	return r / u * u;
}

static int first_size(const struct hkv_pool_opts *o)
{
	return o->backing == HKV_BACKING_AUTO ? HKV_BACKING_HUGE_1G : o->backing;
}

/**
 * backing_segment() - choose the parts of one segment
 * @rq: the segment and the machine
 * @part: receives up to HKV_SEG_PARTS parts, in address order
 * @nparts: receives the number written
 * @why: receives -errno of the first shortfall (0 = none)
 *
 * Parts of hugetlb sizes are counted into @rq->planned (unless plentiful).
 * A part flagged HKV_REGION_FALLBACK holds bytes that wanted a larger page
 * size; HKV_REGION_ROUND_UP, bytes that AUTO's size rule put on smaller
 * pages.
 *
 * Return: 0, or -ENOMEM when a strict explicit backing falls short (the
 * parts then say what it would get).
 */
int backing_segment(const struct seg_req *rq, struct hkv_plan_part *part, unsigned *nparts,
		 int *why)
{
	const struct hkv_pool_opts *o = rq->o;
	bool strict = (o->flags & HKV_POOL_STRICT) && o->backing != HKV_BACKING_AUTO;
	bool rounded = false;
	uint64_t r = rq->raw, missing = 0, short_pgsz = 0;
	unsigned k = 0;
	int b;

	*why = 0;
	for (b = first_size(o); b >= 0 && r; b = strict ? -1 : next_size(b)) {
		uint64_t pg = backing_pgsz(b), take, avail;
		unsigned flags = (*why ? HKV_REGION_FALLBACK : 0) | (rounded ? HKV_REGION_ROUND_UP : 0);
		int err = 0;

		if (rq->cap && backing_align(b) > rq->cap)
			continue;	/* the segment starts only cap-aligned */
		take = seg_take(rq, b, r, &rounded);
		avail = seg_avail(rq, b, &err);
		if (avail != UINT64_MAX && take / pg > avail) {
			if (!*why) {
				*why = err;
				short_pgsz = pg;
			}
			if (pg == short_pgsz)
				missing += take / pg - avail;
			take = avail * pg;
		}
		if (!take)
			continue;
		part[k] = (struct hkv_plan_part){
			.node = rq->n->node, .backing = b, .hugepage_bytes = pg, .bytes = take,
			.wanted_bytes = flags & HKV_REGION_FALLBACK ? short_pgsz : pg,
			.flags = flags, .fallback_errno = flags & HKV_REGION_FALLBACK ? *why : 0,
		};
		if (b == HKV_BACKING_HUGE_1G || b == HKV_BACKING_HUGE_2M) {
			part[k].hugepages = take / pg;
			part[k].node_free = numa_topo_pool(rq->n, pg)->free;
			if (!rq->plentiful)
				rq->planned[b] += take / pg;
		}
		if (flags & HKV_REGION_FALLBACK) {
			part[k].shortfall = missing;
			missing = 0;
		}
		r -= HKV_MIN(r, take);
		k++;
	}
	*nparts = k;
	return r ? -ENOMEM : 0;
}
