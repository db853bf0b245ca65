// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * extent_check.c - full invariant check of a free-extent index. It walks
 * every page and every free extent on purpose: it is for tests and fuzzing,
 * never for the hot path.
 */
#include "internal.h"
#include <stdio.h>

#define CHECK(cond, ...)	HKV_CHECK(cond, __VA_ARGS__)

static bool is_free(const struct xindex *x, uint32_t p)
{
	return xi_page_free(x, p);
}

/* every maximal free run (split at barriers) is one indexed node */
static int check_runs(const struct xindex *x, uint64_t *pages, uint64_t *runs,
		      uint64_t *largest, uint64_t *bound, uint64_t *starts)
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
		starts[s >> 6] |= 1ull << (s & 63);
		bound[(p - 1) >> 6] |= 1ull << ((p - 1) & 63);
		*pages += p - s;
		(*runs)++;
		if (p - s > *largest)
			*largest = p - s;
	}
	return 0;
}

/* every bin's group bitmap names exactly the groups where its extents start */
static int check_bins(const struct xindex *x, uint64_t *count)
{
	uint64_t ngroups = ((uint64_t)x->npages + 63) / 64, leaf = (ngroups + 63) / 64;
	uint64_t *want = calloc((size_t)(x->nexact + 1) * leaf, sizeof(*want));
	uint32_t *n = calloc(x->nexact + 1, sizeof(*n));
	int err = 0;

	if (!want || !n) {
		free(want);
		free(n);
		return -ENOMEM;
	}
	for (uint64_t g = 0; g < ngroups && !err; g++) {
		for (uint64_t m = xi_tagged(x, g); m; m &= m - 1) {
			uint32_t p = (uint32_t)(g * 64 + (uint64_t)__builtin_ctzll(m));
			uint32_t id = xi_tag(x, p);
			const struct fext *e = &x->node[id];

			if (e->start != p || e->len > x->nexact)
				continue;	/* an end, or in the treap */
			if (e->prio || e->parent) {
				hkv_log(HKV_LOG_ERR, "hkv_check: node %u of %u pages is not in its bin",
					id, e->len);
				err = -EUCLEAN;
				break;
			}
			want[(size_t)e->len * leaf + g / 64] |= 1ull << (g % 64);
			n[e->len]++;
		}
	}
	for (uint32_t bin = 1; bin <= x->nexact && !err; bin++) {
		const uint64_t *bits = x->bin_bits + (size_t)bin * x->bin_stride;

		if (memcmp(bits, want + (size_t)bin * leaf, leaf * 8) || n[bin] != x->bin_count[bin] ||
		    !!n[bin] != !!(x->bin_mask[bin >> 6] & (1ull << (bin & 63))) ||
		    !!x->bin_mask[bin >> 6] != !!(x->bin_words & (1ull << (bin >> 6)))) {
			hkv_log(HKV_LOG_ERR, "hkv_check: bin %u: %u extents, counted %u, or its "
				"groups or masks are wrong", bin, n[bin], x->bin_count[bin]);
			err = -EUCLEAN;
		}
		for (uint64_t j = 0, low = XI_NIL; j < leaf && !err; j++) {	/* lowest group */
			if (want[(size_t)bin * leaf + j] || j == leaf - 1) {
				if (want[(size_t)bin * leaf + j])
					low = j * 64 + (uint64_t)__builtin_ctzll(want[(size_t)bin * leaf + j]);
				if (low != x->bin_low[bin]) {
					hkv_log(HKV_LOG_ERR, "hkv_check: bin %u: lowest group %u, "
						"counted %llu", bin, x->bin_low[bin],
						(unsigned long long)low);
					err = -EUCLEAN;
				}
				break;
			}
		}
		for (uint32_t l = 1; l < x->bin_levels && !err; l++) {	/* summaries */
			for (uint64_t j = 0; j < x->bin_off[l] - x->bin_off[l - 1]; j++) {
				bool set = bits[x->bin_off[l] + j / 64] >> (j % 64) & 1;

				if (set != !!bits[x->bin_off[l - 1] + j]) {
					hkv_log(HKV_LOG_ERR, "hkv_check: bin %u: level %u summary", bin, l);
					err = -EUCLEAN;
					break;
				}
			}
		}
		*count += n[bin];
	}
	free(want);
	free(n);
	return err;
}

/* heap order, BST order, parent links, lengths in (lo, hi]; returns nodes
 * or -EUCLEAN */
static long check_tree(const struct xindex *x, uint32_t id, uint32_t parent, uint32_t lo,
		       uint32_t hi)
{
	const struct fext *e;
	long l, r;

	if (id == XI_NIL)
		return 0;
	e = &x->node[id];
	CHECK(e->parent == parent && e->prio != 0 && e->len > lo && e->len <= hi,
	      "treap node %u: bad link or size", id);
	CHECK(parent == XI_NIL || x->node[parent].prio >= e->prio, "treap heap order");
	CHECK(xi_tag(x, e->start) == id, "treap node %u is not a free run", id);
	if (e->prev != XI_NIL)
		CHECK(x->node[e->prev].len < e->len || (x->node[e->prev].len == e->len &&
		      x->node[e->prev].start < e->start), "treap order (left)");
	if (e->next != XI_NIL)
		CHECK(x->node[e->next].len > e->len || (x->node[e->next].len == e->len &&
		      x->node[e->next].start > e->start), "treap order (right)");
	l = check_tree(x, e->prev, id, lo, hi);
	r = check_tree(x, e->next, id, lo, hi);
	if (l < 0 || r < 0)
		return -EUCLEAN;
	return l + r + 1;
}

/* each long bin: its treap holds extents of its length only, as many as
 * counted, its lowest is the leftmost node, and the masks agree */
static long check_long_bins(const struct xindex *x)
{
	long all = 0;

	for (uint32_t len = x->nexact + 1; len <= x->nlong; len++) {
		const uint32_t *b = &x->long_bin[2 * (len - x->nexact - 1)];
		long n = check_tree(x, b[0], XI_NIL, len - 1, len);
		uint32_t low = b[0];

		if (n < 0)
			return -EUCLEAN;
		while (low != XI_NIL && x->node[low].prev != XI_NIL)
			low = x->node[low].prev;
		CHECK(low == b[1], "long bin %u: lowest %u, leftmost %u", len, b[1], low);
		CHECK((uint64_t)n == x->bin_count[len] &&
		      !!n == !!(x->bin_mask[len >> 6] & (1ull << (len & 63))) &&
		      !!x->bin_mask[len >> 6] == !!(x->bin_words & (1ull << (len >> 6))),
		      "long bin %u: %ld extents, counted %u, or its masks are wrong", len, n,
		      x->bin_count[len]);
		all += n;
	}
	return all;
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
	long treed, longs;

	uint64_t ngroups = ((uint64_t)x->npages + 63) / 64, spilled = 0;
	uint64_t *bound = calloc(2 * ngroups, sizeof(*bound)), *starts = bound + ngroups;
	int err;

	if (!bound)
		return -ENOMEM;
	err = check_runs(x, &pages, &runs, &largest, bound, starts);
	for (uint64_t g = 0; !err && g < ngroups; g++) {
		/* tags mark exactly the first and last pages of free runs */
		if (xi_tagged(x, g) != bound[g] || xi_tagged_starts(x, g) != starts[g]) {
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
	treed = check_tree(x, x->root, XI_NIL, x->nlong, UINT32_MAX);
	longs = check_long_bins(x);
	if (treed < 0 || longs < 0)
		return -EUCLEAN;
	CHECK(pages == x->free_pages, "free pages %llu, counted %llu",
	      (unsigned long long)x->free_pages, (unsigned long long)pages);
	CHECK(runs == x->free_extents && binned + (uint64_t)(longs + treed) == runs,
	      "free extents %llu, runs %llu, indexed %llu",
	      (unsigned long long)x->free_extents, (unsigned long long)runs,
	      (unsigned long long)(binned + (uint64_t)(longs + treed)));
	CHECK((uint64_t)treed == x->tree_count, "treap count");
	CHECK(largest == x->largest, "largest %llu, found %llu",
	      (unsigned long long)x->largest, (unsigned long long)largest);
	for (max = x->root; max != XI_NIL && x->node[max].next != XI_NIL;)
		max = x->node[max].next;
	CHECK(max == x->tree_max, "treap max is stale");
	return 0;
}
