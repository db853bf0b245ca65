// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * plan.c - how an arena is laid out: one segment per node, the backing each
 * segment gets under the pool's policy, and the hugepages that takes.
 *
 * arena_create() and the public dry run hkv_pool_plan() share this code, so
 * what `hkvctl plan` prints is what a create would try first. The plan uses
 * free counts from sysfs, which are a snapshot: arena.c still falls back (or
 * fails, with STRICT) when a mapping or prefault finds less.
 */
#include <stddef.h>

#include "internal.h"

/* backings in the order AUTO tries them */
static const int order[] = {
	HKV_BACKING_HUGE_1G, HKV_BACKING_HUGE_2M, HKV_BACKING_THP, HKV_BACKING_SMALL,
};

/**
 * plan_next_backing() - the backing to try after one that failed
 * @o: effective pool options (backing and STRICT decide)
 * @b: the backing that failed
 *
 * Return: the next HKV_BACKING_*, or -1 when there is none (STRICT with an
 * explicit backing never degrades; AUTO always may).
 */
int plan_next_backing(const struct hkv_pool_opts *o, int b)
{
	unsigned i;

	if ((o->flags & HKV_POOL_STRICT) && o->backing != HKV_BACKING_AUTO)
		return -1;
	for (i = 0; i + 1 < HKV_ARRAY_SIZE(order); i++)
		if (order[i] == b)
			return order[i + 1];
	return -1;
}

/* first page of part i of n, as pool.c splits lanes (first parts +1) */
static uint64_t lane_first(uint64_t npages, unsigned n, unsigned i)
{
	return npages / n * i + HKV_MIN(i, npages % n);
}

static const struct topo_node *seg_node(const struct topo *t, const struct topo_node *only,
					unsigned i)
{
	return only ? only : &t->node[i];
}

/* the segment summary: what an operator reads first (hkvctl plan) */
static void fill_node(const struct topo_node *n, struct hkv_plan_node *pn,
		      const struct hkv_plan_part *part, unsigned np,
		      const struct hkv_plan_part *ideal, int why)
{
	const struct numa_topo_pool *tp;
	unsigned i;

	pn->node = n->node;
	pn->ncpus = n->ncpus;
	pn->wanted_backing = ideal->backing;
	pn->wanted_bytes = backing_pgsz(ideal->backing);
	pn->fallback_errno = why;
	pn->backing = np ? part[0].backing : ideal->backing;
	for (i = 0; i < np; i++) {
		pn->bytes += part[i].bytes;
		pn->backing = HKV_MAX(pn->backing, part[i].backing);
	}
	pn->hugepage_bytes = backing_pgsz(pn->backing);
	for (i = 0; i < np; i++)
		if (part[i].backing == pn->backing)
			pn->hugepages_needed = part[i].hugepages;
	tp = numa_topo_pool(n, pn->wanted_bytes);
	if (!tp)
		return;		/* THP/4K wanted: nothing to reserve */
	pn->wanted_needed = ideal->hugepages;
	pn->wanted_free = tp->free;
	pn->wanted_total = tp->total;
	pn->shortfall = pn->wanted_needed > tp->free ? pn->wanted_needed - tp->free : 0;
	pn->reserve_total = tp->total + pn->shortfall;
}

/*
 * Plan the segments over byte bounds b[0..nseg] (segment i holds
 * [b[i], b[i+1]); the last one ends at the KV bytes and may round up).
 * Returns 0 or -ENOMEM (a strict segment short); -E2BIG if parts overflow.
 */
static int plan_bounds(const struct hkv_pool_opts *o, const struct topo *t,
		       const struct topo_node *only, const uint64_t *b, unsigned nseg,
		       uint64_t cap, struct hkv_plan *p)
{
	uint64_t planned[HKV_BACKING_NONE + 1] = { 0 };
	uint64_t off = 0, pb = o->page_bytes;
	unsigned i, k;
	int ret = 0;

	p->nnodes = p->nparts = 0;
	for (i = 0; i < nseg; i++) {
		struct hkv_plan_part ideal[HKV_SEG_PARTS], *part = &p->part[p->nparts];
		struct seg_req rq = {
			.o = o, .t = t, .n = seg_node(t, only, i), .raw = b[i + 1] - b[i],
			.cap = cap, .exact = b[i + 1] < p->kv_bytes, .planned = planned,
		};
		struct hkv_plan_node *pn = &p->node[p->nnodes];
		unsigned np, ni;
		int why, iwhy;

		if (b[i + 1] <= b[i])
			continue;	/* a small pool fits in fewer segments */
		if (p->nparts + HKV_SEG_PARTS > HKV_PLAN_PARTS)
			return -E2BIG;
		if (backing_segment(&rq, part, &np, &why))
			ret = -ENOMEM;
		rq.plentiful = true;	/* the wanted layout: reads and counts nothing */
		backing_segment(&rq, ideal, &ni, &iwhy);
		memset(pn, 0, sizeof(*pn));
		fill_node(rq.n, pn, part, np, ideal, why);
		pn->first_page = (off + pb - 1) / pb;
		for (k = 0; k < np; k++) {
			part[k].first_page = (off + pb - 1) / pb;
			off += part[k].bytes;
			part[k].npages = HKV_MIN(o->npages, (off + pb - 1) / pb) - part[k].first_page;
		}
		if (!np)
			off += pn->bytes = HKV_ROUND_UP(rq.raw, backing_align(pn->backing));
		pn->npages = HKV_MIN(o->npages, (off + pb - 1) / pb) - pn->first_page;
		p->nparts += np;
		p->nnodes++;
	}
	p->arena_bytes = off;
	return ret;
}

/**
 * plan_granule() - the alignment an arena of plan p needs: its largest
 *	part's (every part after it then starts aligned too)
 * @p: the plan
 *
 * Return: bytes, at least 4 KiB.
 */
uint64_t plan_granule(const struct hkv_plan *p)
{
	uint64_t g = HKV_PGSZ_4K;
	unsigned i;

	for (i = 0; i < p->nparts; i++)
		g = HKV_MAX(g, backing_align(p->part[i].backing));
	return g;
}

/**
 * plan_arena() - lay out an arena and choose each segment's page sizes
 * @o: effective options (env applied), page_bytes > 0
 * @t: topology
 * @p: receives the plan (all of struct hkv_plan)
 *
 * numa_node >= 0 gives one segment on that node; -1 one segment per memory
 * node, KV pages split evenly (so lane i of nnodes lanes is node-local).
 * With several segments, the page sizes are chosen on each node's share,
 * then the boundaries are moved to the largest alignment any of them needs
 * and the parts chosen again on the final bounds (inner segments exactly).
 *
 * Return: 0, -EINVAL (no such node, size overflow), or -ENOMEM when a
 * strict pool's backing does not fit (the plan still says where and why).
 */
int plan_arena(const struct hkv_pool_opts *o, const struct topo *t, struct hkv_plan *p)
{
	const struct topo_node *only = NULL;
	uint64_t b[HKV_PLAN_NODES + 1], gran;
	unsigned i, nseg;
	int ret;

	memset(p, 0, sizeof(*p));
	p->sz = sizeof(*p);
	p->backing_wanted = o->backing;
	p->numa_node = o->numa_node;
	p->flags = o->flags;
	p->prefault_threads = o->prefault_threads;
	p->memlock_limit = t->memlock;
	memcpy(p->thp_mode, t->thp_mode, sizeof(p->thp_mode));
	if (!o->page_bytes || o->npages > UINT64_MAX / 2 / o->page_bytes)
		return -EINVAL;
	p->kv_bytes = o->npages * o->page_bytes;
	if (o->numa_node >= 0) {
		only = numa_topo_find(t, o->numa_node);
		if (!only) {
			hkv_log(HKV_LOG_ERR, "numa_node %d has no memory or does not exist",
				o->numa_node);
			return -EINVAL;
		}
	}
	nseg = only ? 1 : t->nnodes;
	for (i = 0; i <= nseg; i++)
		b[i] = lane_first(o->npages, nseg, i) * o->page_bytes;
	ret = plan_bounds(o, t, only, b, nseg, 0, p);
	if (nseg > 1 && ret != -E2BIG) {
		gran = plan_granule(p);
		for (i = 1; i < nseg; i++)
			b[i] = HKV_MIN(HKV_ROUND_UP(b[i], gran), p->kv_bytes);
		ret = plan_bounds(o, t, only, b, nseg, gran, p);
	}
	if (ret == -E2BIG)
		return -EINVAL;
	p->round_up_bytes = p->arena_bytes - p->kv_bytes;
	for (i = 0; i < p->nnodes; i++) {
		p->backing = HKV_MAX(p->backing, p->node[i].backing);
		p->fallbacks += p->node[i].fallback_errno != 0;
	}
	return ret;
}

/**
 * hkv_pool_plan() - dry run: what hkv_pool_create() would map, and where
 * @opts: pool options
 * @plan: receives the plan; the caller sets @plan->sz
 *
 * Return: 0, -ENOMEM (a strict pool would not fit), -EINVAL, or -errno of
 * a topology read.
 */
int hkv_pool_plan(const struct hkv_pool_opts *opts, struct hkv_plan *plan)
{
	struct hkv_pool_opts o;
	struct hkv_plan *full;
	struct topo *t;
	size_t sz;
	int ret;

	if (!plan || plan->sz < offsetof(struct hkv_plan, node))
		return -EINVAL;
	ret = opts_effective(opts, &o);
	if (ret)
		return ret;
	full = calloc(1, sizeof(*full));
	t = calloc(1, sizeof(*t));
	if (!full || !t) {
		ret = -ENOMEM;
		goto free_bufs;
	}
	if (!o.page_bytes) {		/* index-only: no memory to plan */
		full->backing_wanted = full->backing = HKV_BACKING_NONE;
		full->numa_node = o.numa_node;
		full->flags = o.flags;
	} else {
		ret = numa_topo_read(t);
		if (ret)
			goto free_bufs;
		ret = plan_arena(&o, t, full);
		if (ret && ret != -ENOMEM)
			goto free_bufs;
	}
	sz = HKV_MIN(plan->sz, sizeof(*full));
	memcpy(plan, full, sz);
	plan->sz = sz;
free_bufs:
	free(t);
	free(full);
	return ret;
}
