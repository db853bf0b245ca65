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

/* alignment and size granule of a segment: THP wants 2 MiB-aligned ranges */
static uint64_t backing_align(int backing)
{
	return backing == HKV_BACKING_THP ? HKV_PGSZ_2M : backing_pgsz(backing);
}

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

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/**
 * plan_fits() - can a backing be tried for a segment on a node
 * @t: topology
 * @n: the node
 * @b: HKV_BACKING_*
 * @bytes: segment bytes (a multiple of the backing's page size)
 * @planned: hugepages of this size that earlier segments of the same arena
 *	take from the global pool
 *
 * Hugetlb: the size must exist, and both the node's free pages and the
 * global unreserved pages must cover the segment (reservations are global,
 * placement is per node). THP: the kernel must offer it and not be "never".
 *
 * Return: 0, -EOPNOTSUPP (not offered) or -ENOMEM (shortfall).
 */
int plan_fits(const struct topo *t, const struct topo_node *n, int b, uint64_t bytes,
	      uint64_t planned)
{
	const struct topo_pool *np, *gp;
	uint64_t need, gfree;

	if (b == HKV_BACKING_THP)
		return !t->thp_mode[0] || !strcmp(t->thp_mode, "never") ? -EOPNOTSUPP : 0;
	if (b != HKV_BACKING_HUGE_1G && b != HKV_BACKING_HUGE_2M)
		return 0;
	np = topo_pool(n, backing_pgsz(b));
	gp = topo_glob(t, backing_pgsz(b));
	if (!np->present && !gp->present)
		return -EOPNOTSUPP;
	need = bytes / backing_pgsz(b);
	gfree = gp->free > gp->resv ? gp->free - gp->resv : 0;
	if (np->free < need || gfree < planned + need)
		return -ENOMEM;
	return 0;
}

/* pick the first backing that fits; records why the wanted one did not */
static int choose(const struct hkv_pool_opts *o, const struct topo *t,
		  const struct topo_node *n, uint64_t raw, struct hkv_plan_node *pn,
		  uint64_t *planned)
{
	int b = pn->wanted_backing, err;

	for (;;) {
		err = plan_fits(t, n, b, round_up(raw, backing_align(b)), planned[b]);
		if (!err)
			break;
		if (!pn->fallback_errno)
			pn->fallback_errno = err;
		b = plan_next_backing(o, b);
		if (b < 0) {
			pn->backing = pn->wanted_backing;
			return -ENOMEM;
		}
	}
	pn->backing = b;
	planned[b] += round_up(raw, backing_align(b)) / backing_pgsz(b);
	return 0;
}

/* page counts of the wanted size: what an operator must reserve */
static void fill_wanted(const struct topo_node *n, struct hkv_plan_node *pn)
{
	const struct topo_pool *tp = topo_pool(n, pn->wanted_bytes);

	pn->hugepage_bytes = backing_pgsz(pn->backing);
	if (pn->backing == HKV_BACKING_HUGE_1G || pn->backing == HKV_BACKING_HUGE_2M)
		pn->hugepages_needed = pn->bytes / pn->hugepage_bytes;
	if (!tp)
		return;		/* THP/4K wanted: nothing to reserve */
	pn->wanted_needed = (pn->bytes + pn->wanted_bytes - 1) / pn->wanted_bytes;
	pn->wanted_free = tp->free;
	pn->wanted_total = tp->total;
	pn->shortfall = pn->wanted_needed > tp->free ? pn->wanted_needed - tp->free : 0;
	pn->reserve_total = tp->total + pn->shortfall;
}

/* segment boundaries on the granule, KV pages that start in each */
static void lay_out(const struct hkv_pool_opts *o, struct hkv_plan *p, uint64_t gran)
{
	uint64_t pb = o->page_bytes, b0, b1;
	unsigned i, k = 0;

	p->arena_bytes = round_up(p->kv_bytes, gran);
	for (i = 0; i < p->nnodes; i++) {
		struct hkv_plan_node *pn = &p->node[i];

		b0 = i ? round_up(pn->first_page * pb, gran) : 0;
		b1 = i + 1 < p->nnodes ? round_up(p->node[i + 1].first_page * pb, gran) :
					 p->arena_bytes;
		if (b1 <= b0)
			continue;	/* a small pool fits in fewer segments */
		pn->bytes = b1 - b0;
		pn->first_page = (b0 + pb - 1) / pb;
		pn->npages = HKV_MIN(o->npages, (b1 + pb - 1) / pb) - pn->first_page;
		p->node[k++] = *pn;
	}
	p->nnodes = k;
}

/* first page of part i of n, as pool.c splits lanes (first parts +1) */
static uint64_t lane_first(uint64_t npages, unsigned n, unsigned i)
{
	return npages / n * i + HKV_MIN(i, npages % n);
}

/**
 * plan_arena() - lay out an arena and choose each segment's backing
 * @o: effective options (env applied), page_bytes > 0
 * @t: topology
 * @p: receives the plan (all of struct hkv_plan)
 *
 * numa_node >= 0 gives one segment on that node; -1 one segment per memory
 * node, KV pages split evenly (so lane i of nnodes lanes is node-local).
 *
 * Return: 0, -EINVAL (no such node, size overflow), or -ENOMEM when a
 * strict pool's backing does not fit (the plan still says where and why).
 */
int plan_arena(const struct hkv_pool_opts *o, const struct topo *t, struct hkv_plan *p)
{
	const struct topo_node *only = NULL;
	uint64_t gran = HKV_PGSZ_4K, planned[HKV_BACKING_NONE + 1] = { 0 };
	unsigned i;
	int ret = 0;

	memset(p, 0, sizeof(*p));
	p->sz = sizeof(*p);
	p->backing_wanted = o->backing;
	p->numa_node = o->numa_node;
	p->flags = o->flags;
	p->prefault_threads = o->prefault_threads;
	p->memlock_limit = t->memlock;
	memcpy(p->thp_mode, t->thp_mode, sizeof(p->thp_mode));
	if (o->page_bytes && o->npages > UINT64_MAX / 2 / o->page_bytes)
		return -EINVAL;
	p->kv_bytes = o->npages * o->page_bytes;
	if (o->numa_node >= 0) {
		only = topo_find(t, o->numa_node);
		if (!only) {
			hkv_log(HKV_LOG_ERR, "numa_node %d has no memory or does not exist",
				o->numa_node);
			return -EINVAL;
		}
	}
	p->nnodes = only ? 1 : t->nnodes;
	for (i = 0; i < p->nnodes; i++) {
		struct hkv_plan_node *pn = &p->node[i];
		const struct topo_node *n = only ? only : &t->node[i];
		uint64_t first = lane_first(o->npages, p->nnodes, i);
		uint64_t next = lane_first(o->npages, p->nnodes, i + 1);

		pn->node = n->node;
		pn->ncpus = n->ncpus;
		pn->first_page = first;
		pn->wanted_backing = o->backing == HKV_BACKING_AUTO ? HKV_BACKING_HUGE_1G : o->backing;
		pn->wanted_bytes = backing_pgsz(pn->wanted_backing);
		if (choose(o, t, n, (next - first) * o->page_bytes, pn, planned))
			ret = -ENOMEM;
		gran = HKV_MAX(gran, backing_align(pn->backing));
	}
	lay_out(o, p, gran);
	p->round_up_bytes = p->arena_bytes - p->kv_bytes;
	for (i = 0; i < p->nnodes; i++) {
		struct hkv_plan_node *pn = &p->node[i];

		fill_wanted(only ? only : topo_find(t, pn->node), pn);
		p->backing = HKV_MAX(p->backing, pn->backing);
		p->fallbacks += pn->backing != pn->wanted_backing;
	}
	return ret;
}

/**
 * plan_effective_opts() - options as hkv_pool_create() applies them
 * @in: the caller's options (@in->sz checked)
 * @out: receives the full struct, defaults and HUGEKV_* applied
 *
 * Return: 0, or -EINVAL for a bad size, page count, backing or node.
 */
int plan_effective_opts(const struct hkv_pool_opts *in, struct hkv_pool_opts *out)
{
	const struct hkv_env *env = env_get();

	if (!in || in->sz < HKV_OPTS_SZ0)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	memcpy(out, in, HKV_MIN(in->sz, sizeof(*out)));
	out->sz = sizeof(*out);
	if (!out->nlanes)
		out->nlanes = 1;
	if (!out->page_bytes)
		out->backing = HKV_BACKING_NONE;
	/* the same overrides as pool.c applies, in the same cases */
	if (out->page_bytes && env->backing >= 0 && env->backing != HKV_BACKING_NONE)
		out->backing = env->backing;
	if (out->page_bytes && env->node >= -1)
		out->numa_node = env->node;
	if (out->page_bytes && env->prefault_threads > 0)
		out->prefault_threads = (unsigned)env->prefault_threads;
	if (out->page_bytes && env->strict == 1)
		out->flags |= HKV_POOL_STRICT;
	else if (out->page_bytes && env->strict == 0)
		out->flags &= ~HKV_POOL_STRICT;
	if (!out->npages || out->numa_node < -1 || out->backing < HKV_BACKING_AUTO ||
	    out->backing > HKV_BACKING_NONE || out->nlanes > out->npages ||
	    (out->flags & ~(HKV_POOL_STRICT | HKV_POOL_NO_PREFAULT)))
		return -EINVAL;
	if (out->page_bytes && out->backing == HKV_BACKING_NONE)
		return -EINVAL;
	return 0;
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
	ret = plan_effective_opts(opts, &o);
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
		ret = topo_read(t);
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
