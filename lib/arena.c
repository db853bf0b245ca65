// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * arena.c - the memory behind a pool: one contiguous virtual range, one
 * segment per node, each mapped with the best backing its policy allows,
 * bound to its node, prefaulted and verified.
 *
 * The range is first reserved PROT_NONE (so segments stay contiguous and a
 * failed segment can be given back without opening a hole), then each
 * segment is mapped over it with MAP_FIXED. Hugetlb segments are mapped
 * without MAP_NORESERVE, so the kernel reserves their pages at mmap time,
 * and are prefaulted with MADV_POPULATE_WRITE, which returns an error where
 * a touch would raise SIGBUS. Every degradation is logged, traced and shown
 * in the region flags and stats.
 */
#include <linux/mman.h>
#include <numaif.h>
#include <sys/mman.h>

#include "internal.h"
#include "trace.h"

#define PLACEHOLDER_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)

/* reserve bytes of address space aligned to align; NULL on failure */
static char *reserve_range(uint64_t bytes, uint64_t align, int *err)
{
	char *p, *a;
	uint64_t head, tail;

	*err = os->mmap(NULL, bytes + align, PROT_NONE, PLACEHOLDER_FLAGS, -1, 0, (void **)&p);
	if (*err)
		return NULL;
	a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	head = a - p;
	tail = align - head;
	/* trimming only shrinks the reservation; a failure just keeps more */
	if (head)
		os->munmap(p, head);
	if (tail)
		os->munmap(a + bytes, tail);
	return a;
}

/* give a segment's pages back, keeping its address range reserved */
static int unmap_segment(struct arena_seg *s)
{
	void *p;

	return os->mmap(s->base, s->bytes, PROT_NONE, PLACEHOLDER_FLAGS | MAP_FIXED, -1, 0, &p);
}

static int map_flags(int backing)
{
	int f = MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED;

	if (backing == HKV_BACKING_HUGE_1G)
		f |= MAP_HUGETLB | MAP_HUGE_1GB;
	else if (backing == HKV_BACKING_HUGE_2M)
		f |= MAP_HUGETLB | MAP_HUGE_2MB;
	return f;
}

/* a step that degrades the pool rather than failing it (non-strict) */
static int soft_fail(struct hkv_arena *a, struct arena_seg *s, const char *what, int err)
{
	if (a->opts.flags & HKV_POOL_STRICT) {
		hkv_log(HKV_LOG_ERR, "pool %llu node %d: %s failed: %s (strict)",
			(unsigned long long)a->pool_id, s->node, what, strerror(-err));
		return err;
	}
	hkv_log(HKV_LOG_WARN, "pool %llu node %d: %s failed: %s; continuing without it",
		(unsigned long long)a->pool_id, s->node, what, strerror(-err));
	s->flags |= HKV_REGION_FALLBACK;
	if (!s->why)
		s->why = err;
	s->fallbacks++;
	return 0;
}

static int bind_segment(struct hkv_arena *a, struct arena_seg *s)
{
	unsigned long mask[HKV_MAX_NODES / (8 * sizeof(long)) + 1] = { 0 };
	int n = s->node, err;

	if (!a->topo.numa)
		return 0;
	if (n < 0 || n >= (int)(8 * sizeof(mask)))
		return -EINVAL;
	mask[n / (8 * sizeof(long))] |= 1ul << (n % (8 * sizeof(long)));
	err = os->mbind(s->base, s->bytes, MPOL_BIND, mask, 8 * sizeof(mask) + 1, 0);
	return err ? soft_fail(a, s, "mbind", err) : 0;
}

static bool prefaulting(const struct hkv_arena *a)
{
	return !(a->opts.flags & HKV_POOL_NO_PREFAULT);
}

/*
 * Without prefault, hugetlb pages are charged to the hugetlb cgroup only
 * when first touched: a fault-time limit below the segment would raise
 * SIGBUS then. Refuse such a segment now (a shortfall, as a failed prefault
 * is), counting what this arena's earlier segments of that size take.
 */
static int check_fault_limit(struct hkv_arena *a, struct arena_seg *s)
{
	uint64_t room, taken = 0;
	struct arena_seg *o;

	if (prefaulting(a) || (s->pgsz != HKV_PGSZ_2M && s->pgsz != HKV_PGSZ_1G))
		return 0;
	room = cgroup_hugetlb_room(s->pgsz);
	for (o = a->seg; o < s; o++)
		if (o->pgsz == s->pgsz)
			taken += o->bytes;
	if (room >= taken && room - taken >= s->bytes)
		return 0;
	hkv_log(HKV_LOG_WARN, "pool %llu node %d: hugetlb cgroup limit leaves %llu bytes of "
		"%s pages, the segment needs %llu (no prefault: a touch would raise SIGBUS)",
		(unsigned long long)a->pool_id, s->node,
		(unsigned long long)(room > taken ? room - taken : 0),
		hkv_backing_name(s->backing), (unsigned long long)s->bytes);
	return -ENOMEM;
}

/* map and bind a segment with one backing (no prefault yet); 0 or -errno */
static int map_bind(struct hkv_arena *a, struct arena_seg *s, int b)
{
	void *p;
	int err, aerr;

	s->backing = b;
	s->pgsz = backing_pgsz(b);
	err = check_fault_limit(a, s);
	if (err)
		return err;
	err = os->mmap(s->base, s->bytes, PROT_READ | PROT_WRITE, map_flags(b), -1, 0, &p);
	if (err)
		return err;
	err = bind_segment(a, s);
	if (!err && (aerr = os->madvise(s->base, s->bytes, MADV_DONTFORK)))
		err = soft_fail(a, s, "MADV_DONTFORK", aerr);
	if (!err && b == HKV_BACKING_THP)
		err = os->madvise(s->base, s->bytes, MADV_HUGEPAGE);
	/* 4 KiB means 4 KiB, also where THP is "always" */
	if (!err && b == HKV_BACKING_SMALL && a->topo.thp_mode[0] &&
	    (aerr = os->madvise(s->base, s->bytes, MADV_NOHUGEPAGE)))
		err = soft_fail(a, s, "MADV_NOHUGEPAGE", aerr);
	return err;
}

/*
 * Report one step down the backing order. AUTO stepping past a page size
 * the machine does not offer at all is info (it would warn on every start
 * of every pool there); flags, stats and the probe say it either way.
 */
static void report_fallback(struct hkv_arena *a, struct arena_seg *s, int from, int to,
			    int err)
{
	int level = to < 0 ? HKV_LOG_ERR : HKV_LOG_WARN;

	if (to >= 0 && err == -EOPNOTSUPP && a->opts.backing == HKV_BACKING_AUTO)
		level = HKV_LOG_INFO;
	hkv_log(level, "pool %llu node %d: %s backing for %llu bytes failed (%s); %s",
		(unsigned long long)a->pool_id, s->node, hkv_backing_name(from),
		(unsigned long long)s->bytes, strerror(-err),
		to < 0 ? "no fallback (strict)" : hkv_backing_name(to));
	hkv_probe_arena_fallback(a->pool_id, s->node, s->bytes, backing_pgsz(from), err,
				 os->now_ns() - s->t0);
	if (to < 0)
		return;
	s->flags |= HKV_REGION_FALLBACK;
	s->fallbacks++;
	if (!s->why)
		s->why = err;
}

/* give back a segment whose backing failed and take the next; 0 or -errno */
static int step_down(struct hkv_arena *a, struct arena_seg *s, int err)
{
	int uerr = unmap_segment(s), next;

	if (uerr) {
		hkv_log(HKV_LOG_ERR, "pool %llu: cannot give back a failed segment: %s",
			(unsigned long long)a->pool_id, strerror(-uerr));
		return uerr;
	}
	s->flags &= ~(HKV_REGION_MISPLACED | HKV_REGION_THP);
	next = plan_next_backing(&a->opts, s->backing);
	report_fallback(a, s, s->backing, next, err);
	if (next < 0)
		return err;
	s->backing = next;
	return 0;
}

/* the segment is final: flags, counters, probe */
static void settled(struct hkv_arena *a, struct arena_seg *s)
{
	if (s->backing == HKV_BACKING_THP)
		s->flags |= HKV_REGION_THP;
	a->fallbacks += s->fallbacks;
	hkv_probe_arena_map(a->pool_id, s->node, s->bytes, s->pgsz, os->now_ns() - s->t0);
}

/* one segment on its own, from its current backing down, until one works */
static int settle_alone(struct hkv_arena *a, struct arena_seg *s)
{
	int err;

	for (;;) {
		err = map_bind(a, s, s->backing);
		if (!err && prefaulting(a)) {
			int perr = prefault_segments(a, &s, 1, &err);

			err = perr ? perr : err;
			a->prefault_ns += s->prefault_ns;	/* every try's time */
		}
		if (!err)
			err = arena_verify(a, s);
		if (!err)
			return 0;
		err = step_down(a, s, err);
		if (err)
			return err;
	}
}

/* phase 1: map and bind, stepping down where even that fails */
static int place_segment(struct hkv_arena *a, struct arena_seg *s,
			 const struct hkv_plan_part *pp)
{
	int err;

	/* the plan put these bytes below the size they wanted: say why once */
	if (pp->flags & HKV_REGION_FALLBACK)
		report_fallback(a, s, s->wanted, pp->backing, pp->fallback_errno);
	s->flags |= pp->flags & HKV_REGION_ROUND_UP;
	s->backing = pp->backing;
	while ((err = map_bind(a, s, s->backing)))
		if ((err = step_down(a, s, err)))
			return err;
	return 0;
}

/* the backing whose page size is pgsz (hugetlb sizes; else 4 KiB pages) */
static int backing_of(uint64_t pgsz)
{
	return pgsz == HKV_PGSZ_1G ? HKV_BACKING_HUGE_1G :
	       pgsz == HKV_PGSZ_2M ? HKV_BACKING_HUGE_2M : HKV_BACKING_SMALL;
}

static void seg_init(struct hkv_arena *a, struct arena_seg *s, const struct hkv_plan_part *pp,
		     char *base)
{
	s->base = base;
	s->bytes = pp->bytes;
	s->first_page = pp->first_page;
	s->npages = pp->npages;
	s->node = pp->node;
	s->verified_node = -1;
	s->tn = numa_topo_find(&a->topo, pp->node);
	s->wanted_pgsz = pp->wanted_bytes;
	s->wanted = pp->wanted_bytes == backing_pgsz(pp->backing) ? pp->backing :
		    backing_of(pp->wanted_bytes);
	s->t0 = os->now_ns();
}

/* plan, then log a strict shortfall the way an operator can act on it */
static int arena_plan(struct hkv_arena *a, struct hkv_plan *p)
{
	unsigned i;
	int err;

	err = plan_arena(&a->opts, &a->topo, p);
	if (err != -ENOMEM)
		return err;
	for (i = 0; i < p->nnodes; i++) {
		const struct hkv_plan_node *pn = &p->node[i];

		if (!pn->fallback_errno)
			continue;
		if (pn->fallback_errno == -EOPNOTSUPP)
			hkv_log(HKV_LOG_ERR, "pool %llu node %d: strict %s backing: this kernel or "
				"CPU offers no such pages", (unsigned long long)a->pool_id, pn->node,
				hkv_backing_name(pn->wanted_backing));
		else
			hkv_log(HKV_LOG_ERR, "pool %llu node %d: strict %s backing unavailable (%s): "
				"needs %llu hugepages, %llu free; reserve %llu on this node",
				(unsigned long long)a->pool_id, pn->node,
				hkv_backing_name(pn->wanted_backing), strerror(-pn->fallback_errno),
				(unsigned long long)pn->wanted_needed,
				(unsigned long long)pn->wanted_free,
				(unsigned long long)pn->reserve_total);
		hkv_probe_arena_fallback(a->pool_id, pn->node, pn->bytes, pn->wanted_bytes,
					 pn->fallback_errno, os->now_ns() - a->t0);
	}
	return err;
}

/*
 * Map every segment into the reserved range. All segments are mapped and
 * bound first, then prefaulted at once (each by its own node's CPUs, so a
 * two-socket pool fills both sockets' memory in parallel), then verified;
 * a segment that fails there is redone alone with the next backing.
 */
static int map_all(struct hkv_arena *a, const struct hkv_plan *p)
{
	struct arena_seg *segs[HKV_ARENA_SEGS];
	int errs[HKV_ARENA_SEGS] = { 0 };
	uint64_t off = 0, t0;
	unsigned i;
	int err;

	for (i = 0; i < p->nparts; i++) {
		segs[i] = &a->seg[i];
		seg_init(a, segs[i], &p->part[i], a->base + off);
		off += segs[i]->bytes;
		a->nseg = i + 1;
		err = place_segment(a, segs[i], &p->part[i]);
		if (err)
			return err;
	}
	t0 = os->now_ns();
	if (prefaulting(a)) {
		err = prefault_segments(a, segs, a->nseg, errs);
		if (err)
			return err;
	}
	a->prefault_ns = prefaulting(a) ? os->now_ns() - t0 : 0;
	for (i = 0; i < a->nseg; i++) {
		err = errs[i] ? errs[i] : arena_verify(a, segs[i]);
		if (err) {
			err = step_down(a, segs[i], err);
			if (!err)
				err = settle_alone(a, segs[i]);
			if (err)
				return err;
		}
		settled(a, segs[i]);
	}
	return 0;
}

/**
 * arena_create() - map, bind, prefault and verify a pool's memory
 * @pool: the pool (id, effective opts, npages, page_bytes set)
 * @out: receives the arena; pool->base is set too
 *
 * Return: 0, or -errno with everything given back: -ENOMEM (shortfall,
 * strict backing unavailable or misplaced), -EINVAL (no such node), or the
 * error of the failing call.
 */
int arena_create(struct hkv_pool *pool, struct hkv_arena **out)
{
	struct hkv_arena *a;
	struct hkv_plan *p;
	int err = -ENOMEM;

	a = calloc(1, sizeof(*a));
	p = calloc(1, sizeof(*p));
	if (!a || !p)
		goto free_plan;
	a->t0 = os->now_ns();
	a->pool_id = pool->id;
	a->opts = pool->opts;
	err = numa_topo_read(&a->topo);
	if (!err)
		err = arena_plan(a, p);
	if (err)
		goto free_plan;
	a->kv_bytes = p->kv_bytes;
	a->base = reserve_range(p->arena_bytes, plan_granule(p), &err);
	if (!a->base) {
		hkv_log(HKV_LOG_ERR, "pool %llu: cannot reserve %llu bytes of address space: %s",
			(unsigned long long)a->pool_id, (unsigned long long)p->arena_bytes,
			strerror(-err));
		goto free_plan;
	}
	a->bytes = p->arena_bytes;
	err = map_all(a, p);
	if (err)
		goto unmap_range;
	free(p);
	if (a->bytes > a->topo.memlock)	/* not a degradation: a hint for RDMA users */
		hkv_log(HKV_LOG_INFO, "pool %llu: arena of %llu bytes exceeds RLIMIT_MEMLOCK "
			"(%llu); registering it for RDMA needs a higher limit",
			(unsigned long long)a->pool_id, (unsigned long long)a->bytes,
			(unsigned long long)a->topo.memlock);
	pool->base = a->base;
	*out = a;
	return 0;

unmap_range:
	os->munmap(a->base, a->bytes);
free_plan:
	free(p);
	free(a);
	return err;
}

/**
 * arena_destroy() - unmap an arena and free it
 * @a: the arena, or NULL
 */
void arena_destroy(struct hkv_arena *a)
{
	int err;

	if (!a)
		return;
	err = os->munmap(a->base, a->bytes);
	if (err)
		hkv_log(HKV_LOG_ERR, "pool %llu: munmap of the arena failed: %s",
			(unsigned long long)a->pool_id, strerror(-err));
	free(a);
}

/**
 * arena_regions() - one region per segment
 * @a: the arena
 * @r: receives up to @max regions
 * @max: room in @r
 *
 * Return: the number of regions.
 */
int arena_regions(const struct hkv_arena *a, struct hkv_region *r, unsigned max)
{
	unsigned i;

	for (i = 0; i < a->nseg && i < max; i++) {
		const struct arena_seg *s = &a->seg[i];

		r[i] = (struct hkv_region){
			.base = s->base, .bytes = s->bytes, .first_page = s->first_page,
			.npages = s->npages, .node = s->verified_node,
			.hugepage_bytes = s->pgsz, .flags = s->flags,
		};
	}
	return (int)a->nseg;
}

/**
 * arena_stats() - fill the memory fields of a stats snapshot
 * @a: the arena
 * @st: a full struct hkv_stats
 */
void arena_stats(const struct hkv_arena *a, struct hkv_stats *st)
{
	unsigned i;

	st->backing = HKV_BACKING_AUTO;
	st->backing_wanted = a->opts.backing;
	st->numa_node = a->opts.numa_node;
	st->flags = a->opts.flags;
	st->arena_bytes = a->bytes;
	st->arena_round_up_bytes = a->bytes - a->kv_bytes;
	st->prefault_ns = a->prefault_ns;
	st->prefault_gbps = a->prefault_ns ? (double)a->bytes / (double)a->prefault_ns : 0;
	st->misplaced_pages = 0;
	st->fallbacks = a->fallbacks;
	st->prefault_threads = 0;
	st->nregions = a->nseg;
	for (i = 0; i < a->nseg; i++) {
		const struct arena_seg *s = &a->seg[i];

		st->backing = HKV_MAX(st->backing, s->backing);
		st->misplaced_pages += s->misplaced;
		st->prefault_threads = HKV_MAX(st->prefault_threads, s->threads);
		if (i >= HKV_STATS_REGIONS)
			continue;
		st->region[i] = (struct hkv_region_stats){
			.node = s->verified_node, .hugepage_bytes = s->pgsz,
			.wanted_bytes = s->wanted_pgsz, .bytes = s->bytes,
			.prefault_ns = s->prefault_ns, .misplaced_pages = s->misplaced,
			.flags = s->flags, .fallback_errno = s->why,
		};
	}
}
