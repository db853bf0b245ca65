// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * extent_check.c - full invariant check of a free-extent index. It walks
 * every page and every free extent on purpose: it is for tests and fuzzing,
 * never for the hot path.
 */
#include "internal.h"
#include <stdio.h>

#define CHECK(cond, ...)						\
	do {								\
		if (unlikely(!(cond))) {				\
			hkv_log(HKV_LOG_ERR, "hkv_check: " __VA_ARGS__); \
			return -EUCLEAN;				\
		}							\
	} while (0)

static bool is_free(const struct xindex *x, uint32_t p)
{
	return xi_page_free(x, p);
}

/* every maximal free run (split at barriers) is one indexed node */
static int check_runs(const struct xindex *x, uint64_t *pages, uint64_t *runs,
		      uint64_t *largest, uint64_t *bound)
{
	uint32_t p = 0;

	while (p < x->npages) {
		uint32_t s = p, id;

		if (!is_free(x, p)) {
			p++;
			continue;
		}
		do
			p++;
		while (p < x->npages && is_free(x, p) &&
		       !(x->barrier && (x->base + p) % x->barrier == 0));
		id = xi_tag(x, s);
		CHECK(id < x->nused, "run at %llu has no node",
		      (unsigned long long)(x->base + s));
		CHECK(x->node[id].start == s && x->node[id].len == p - s,
		      "run [%llu, +%u) disagrees with its node [%llu, +%u)",
		      (unsigned long long)(x->base + s), p - s,
		      (unsigned long long)(x->base + x->node[id].start), x->node[id].len);
		CHECK(xi_tag(x, p - 1) == id, "run at %llu: tail tag is wrong",
		      (unsigned long long)(x->base + s));
		CHECK(xi_test_range(x->in_unit, s, p - s, false), "free page in a unit");
		bound[s >> 6] |= 1ull << (s & 63);
		bound[(p - 1) >> 6] |= 1ull << ((p - 1) & 63);
		*pages += p - s;
		(*runs)++;
		if (p - s > *largest)
			*largest = p - s;
	}
	return 0;
}

static int check_bins(const struct xindex *x, uint64_t *count)
{
	uint32_t bin, region, id, prev, n;

	for (bin = 1; bin <= x->nexact; bin++) {
		bool any = false;

		for (region = 0, n = 0; region < XI_REGIONS; region++) {
			bool has = x->bin_head[(size_t)bin * XI_REGIONS + region] != XI_NIL;

			CHECK(has == !!(x->bin_regions[bin] & (1ull << region)),
			      "bin %u region %u mask is wrong", bin, region);
			prev = XI_NIL;
			for (id = x->bin_head[(size_t)bin * XI_REGIONS + region]; id != XI_NIL;
			     prev = id, id = x->node[id].next) {
				const struct fext *e = &x->node[id];

				CHECK(e->len == bin && e->prev == prev && e->prio == 0 &&
				      e->parent == region && e->start >> x->region_shift == region,
				      "bin %u region %u: node %u misfiled", bin, region, id);
				CHECK(xi_tag(x, e->start) == id, "bin node %u is not a free run", id);
				n++;
			}
			any |= has;
		}
		CHECK(n == x->bin_count[bin], "bin %u counts %u, holds %u", bin,
		      x->bin_count[bin], n);
		CHECK(any == !!(x->bin_mask[bin >> 6] & (1ull << (bin & 63))),
		      "bin %u: bin mask is wrong", bin);
		CHECK(!!x->bin_mask[bin >> 6] == !!(x->bin_words & (1ull << (bin >> 6))),
		      "bin %u: word summary is wrong", bin);
		*count += n;
	}
	return 0;
}

/* heap order, BST order, parent links; returns nodes or -EUCLEAN */
static long check_tree(const struct xindex *x, uint32_t id, uint32_t parent)
{
	const struct fext *e;
	long l, r;

	if (id == XI_NIL)
		return 0;
	e = &x->node[id];
	CHECK(e->parent == parent && e->prio != 0 && e->len > x->nexact,
	      "treap node %u: bad link or size", id);
	CHECK(parent == XI_NIL || x->node[parent].prio >= e->prio, "treap heap order");
	CHECK(xi_tag(x, e->start) == id, "treap node %u is not a free run", id);
	if (e->prev != XI_NIL)
		CHECK(x->node[e->prev].len < e->len || (x->node[e->prev].len == e->len &&
		      x->node[e->prev].start < e->start), "treap order (left)");
	if (e->next != XI_NIL)
		CHECK(x->node[e->next].len > e->len || (x->node[e->next].len == e->len &&
		      x->node[e->next].start > e->start), "treap order (right)");
	l = check_tree(x, e->prev, id);
	r = check_tree(x, e->next, id);
	if (l < 0 || r < 0)
		return -EUCLEAN;
	return l + r + 1;
}

/**
 * xi_check() - check every invariant of an index
 * @x: the index
 *
 * Return: 0, or -EUCLEAN (the first broken invariant is logged).
 */
int xi_check(const struct xindex *x)
{
	uint64_t pages = 0, runs = 0, largest = 0, binned = 0;
	uint32_t max;
	long treed;

	uint64_t ngroups = ((uint64_t)x->npages + 63) / 64, spilled = 0;
	uint64_t *bound = calloc(ngroups, sizeof(*bound));
	int err;

	if (!bound)
		return -ENOMEM;
	err = check_runs(x, &pages, &runs, &largest, bound);
	for (uint64_t g = 0; !err && g < ngroups; g++) {
		/* tags mark exactly the first and last pages of free runs */
		if (xi_tagged(x, g) != bound[g]) {
			hkv_log(HKV_LOG_ERR, "hkv_check: group %llu tags the wrong pages",
				(unsigned long long)g);
			err = -EUCLEAN;
		}
		if (x->grp[g].blk) {
			spilled++;
			if (x->grp[g].blk > x->ovf_cap)
				err = -EUCLEAN;
		} else if (__builtin_popcountll(bound[g]) > XI_GSLOTS) {
			err = -EUCLEAN;		/* cannot fit its slots */
		}
	}
	free(bound);
	if (err || check_bins(x, &binned))
		return -EUCLEAN;
	CHECK(spilled + x->ovf_nfree == x->ovf_cap, "overflow blocks: %llu used, %u free of %u",
	      (unsigned long long)spilled, x->ovf_nfree, x->ovf_cap);
	treed = check_tree(x, x->root, XI_NIL);
	if (treed < 0)
		return -EUCLEAN;
	CHECK(pages == x->free_pages, "free pages %llu, counted %llu",
	      (unsigned long long)x->free_pages, (unsigned long long)pages);
	CHECK(runs == x->free_extents && binned + (uint64_t)treed == runs,
	      "free extents %llu, runs %llu, indexed %llu",
	      (unsigned long long)x->free_extents, (unsigned long long)runs,
	      (unsigned long long)(binned + (uint64_t)treed));
	CHECK((uint64_t)treed == x->tree_count, "treap count");
	CHECK(largest == x->largest, "largest %llu, found %llu",
	      (unsigned long long)x->largest, (unsigned long long)largest);
	for (max = x->root; max != XI_NIL && x->node[max].next != XI_NIL;)
		max = x->node[max].next;
	CHECK(max == x->tree_max, "treap max is stale");
	return 0;
}
