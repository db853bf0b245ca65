// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * extent.c - the free-extent index of one page space (one lane).
 *
 * Free extents of length <= nexact sit in exact size bins; each bin keeps a
 * bitmap (with summary levels) of the 64-page groups where its extents
 * start, so its lowest-address extent is found in a few word operations:
 * ties go to the lower address, which keeps a large free run alive at the
 * high end under churn. Lengths up to nlong = 4 * nexact have long bins: a
 * treap of the length's extents by start, its lowest kept, and a bit in the
 * same non-empty-bin masks (12 bytes a bin, no group bitmap: long extents
 * are few). Longer extents sit in one treap keyed by (len, start): best fit
 * is a lower bound, the largest is its maximum.
 * Boundary tags (the node id at the first and last page of every free
 * extent) plus one allocated bit per page make coalescing O(1). Per 64-page
 * group, the allocated and in_unit words, a word marking the tagged pages
 * and the tags themselves share one cache line (struct xgroup): a free
 * checks the bits, finds its neighbours and rewrites their tags in the line
 * it already holds. Crowded groups (more than XI_GSLOTS tagged pages) keep
 * their tags in an overflow block.
 *
 * Cost: best fit O(1) in exact and long bins, O(log E) in the treap (a
 * long bin's insert and removal O(log E) in its own treap); an answer of k
 * extents O(k log E); free O(1) + O(log E) when a large extent is involved.
 * Nothing here walks all pages or all free extents except xi_usable() (bins
 * plus large extents, for stats), xi_free_ids() and xi_check().
 * Metadata: 1 byte per page (64-byte group lines) plus 256 bytes per crowded
 * group, 32 bytes per free extent, and per exact bin one bit per group (one
 * bin per XI_PAGES_PER_BIN pages, XI_MAX_EXACT at most: under 0.6 bytes per
 * page in all) plus its count and its lowest group (8 bytes), 12 bytes per
 * long bin. The lowest group is kept so that a pick goes straight to its
 * group line, with no bitmap level on the way: it changes only when that group loses its last
 * extent of the bin (the next one is found from the leaf word just cleared)
 * or a lower one arrives. A pick reads its extent's first page from the tag
 * and its length from the allocated word of the same line (free runs are
 * maximal), so a take writes the node but never waits for it.
 *
 * The group lines (bitmaps, tags) are in extent_group.c, the exact bins in
 * extent_bins.c, the treap in extent_tree.c; their steps on the hot paths
 * are static inline in extent.h.
 */
#include "extent.h"

/* ---- nodes --------------------------------------------------------------- */

static int xi_reserve_nodes(struct xindex *x, uint32_t extra);

/**
 * xi_reserve() - make room for more free extents
 * @x: the index
 * @extra: free extents that may be added before the next reserve
 *
 * Frees add at most one free extent per freed piece; reserving first makes
 * xi_free() infallible, so a multi-extent free changes all or nothing.
 *
 * Return: 0 or -ENOMEM.
 */
int xi_reserve(struct xindex *x, uint32_t extra)
{
	int err = xi_reserve_nodes(x, extra);

	return err ? err : xi_reserve_take(x, 2 * (long)extra);	/* two tags per piece */
}

/* room for extra more free extents in the node array */
static int xi_reserve_nodes(struct xindex *x, uint32_t extra)
{
	uint64_t need = x->free_extents + extra;
	struct fext *n;
	uint64_t cap;

	if (need <= x->ncap)
		return 0;
	/* doubling, but never past the most free extents the space can hold */
	cap = HKV_MAX(need, HKV_MIN(2ull * x->ncap, (uint64_t)x->npages / 2 + 2));
	if (cap > UINT32_MAX - 1)
		cap = UINT32_MAX - 1;
	if (need > cap)
		return -ENOMEM;
	n = meta_realloc(x->node, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	x->node = n;
	x->ncap = (uint32_t)cap;
	return 0;
}

/**
 * xi_reserve_grow() - make sure @blocks overflow blocks are free
 * @x: the index
 * @blocks: blocks the next operation may take (one per tag it adds)
 *
 * Return: 0 or -ENOMEM.
 */
int xi_reserve_grow(struct xindex *x, uint32_t blocks)
{
	/* a group holds one block at most, and only if it can hold more tags
	 * than its line does: this many is all there can be */
	uint64_t most = x->npages > XI_GSLOTS ? ((uint64_t)x->npages + 63) / 64 : 0, cap;
	uint32_t (*o)[64];

	if (x->ovf_nfree >= blocks || x->ovf_cap >= most)
		return 0;
	cap = HKV_MIN(HKV_MAX((uint64_t)x->ovf_cap + blocks - x->ovf_nfree,
			      2ull * x->ovf_cap), most);
	o = meta_realloc(x->ovf, cap * sizeof(*o));
	if (!o)
		return -ENOMEM;
	x->ovf = o;
	for (uint32_t b = x->ovf_cap; b < cap; b++) {
		o[b][0] = x->ovf_free;
		x->ovf_free = b;
		x->ovf_nfree++;
	}
	x->ovf_cap = (uint32_t)cap;
	return 0;
}

/* ---- index: bins + treap ----------------------------------------------- */

/* the largest free extent after it left the index (extent.h) */
void refresh_largest(struct xindex *x)
{
	HKV_STORE(&x->largest, x->root != XI_NIL ? x->node[x->tree_max].len
						 : bin_last_below(x, x->nlong + 1));
}

/* file free extent id, [start, +len), in the index (extent.h) */
void idx_insert(struct xindex *x, uint32_t id, uint32_t start, uint32_t len)
{
	if (len <= x->nexact)
		bin_insert(x, id, start, len);
	else if (len <= x->nlong)
		long_insert(x, id);
	else
		tree_insert(x, id);
	x->free_extents++;
	if (len > x->largest)
		HKV_STORE(&x->largest, len);
}

static void idx_remove(struct xindex *x, uint32_t id, uint32_t start, uint32_t len)
{
	if (len <= x->nexact)
		bin_remove(x, id, start, len);
	else if (len <= x->nlong)
		long_remove(x, id);
	else
		tree_remove(x, id);
	x->free_extents--;
	if (len == x->largest)
		refresh_largest(x);
}

/* the lowest-address extent of non-empty bin (exact or long) */
static __always_inline uint32_t any_pick(const struct xindex *x, uint32_t bin)
{
	if (likely(bin <= x->nexact))
		return bin_pick(x, bin);
	((struct xindex *)x)->hint.id = XI_NIL;	/* not a bin pick */
	return x->long_bin[2 * (bin - x->nexact - 1) + 1];
}

/* best fit for n pages: smallest extent >= n, lowest address; or XI_NIL */
static __always_inline uint32_t find_fit_inline(const struct xindex *x, uint64_t n)
{
	uint32_t bin = bin_first_from(x, (uint32_t)HKV_MIN(n, (uint64_t)x->nlong + 1));

	if (likely(bin))
		return any_pick(x, bin);
	((struct xindex *)x)->hint.id = XI_NIL;	/* not a bin pick */
	return tree_lower_bound(x, n);
}

static uint32_t find_fit(const struct xindex *x, uint64_t n)
{
	return find_fit_inline(x, n);
}

/* the largest free extent (ties: lowest address), or XI_NIL */
static uint32_t find_largest(const struct xindex *x)
{
	uint32_t bin;

	if (x->root != XI_NIL) {	/* the lowest of the longest */
		((struct xindex *)x)->hint.id = XI_NIL;	/* not a bin pick */
		return tree_lower_bound(x, x->node[x->tree_max].len);
	}
	bin = (uint32_t)x->largest;	/* with the treap empty, the largest bin */
	return bin ? any_pick(x, bin) : XI_NIL;
}

/* ---- init ---------------------------------------------------------------- */

/**
 * xi_init() - set up an index with every page free
 * @x: the index
 * @base: absolute page number of space page 0
 * @npages: pages in the space, 1..XI_MAX_PAGES
 * @barrier: extents never cross absolute multiples of this (0 = none)
 *
 * Return: 0, -E2BIG or -ENOMEM.
 */
int xi_init(struct xindex *x, uint64_t base, uint64_t npages, uint64_t barrier)
{
	uint64_t words = (npages + 63) / 64, nseg;
	uint32_t p;

	memset(x, 0, sizeof(*x));
	if (!npages || npages > XI_MAX_PAGES || barrier > UINT32_MAX)
		return -E2BIG;
	x->base = base;
	x->npages = (uint32_t)npages;
	x->barrier = (uint32_t)barrier;
	/* bins cost ~270 bytes each: keep them under ~2.7 bytes per page */
	x->nexact = (uint32_t)HKV_MAX(1, HKV_MIN(npages / XI_PAGES_PER_BIN, XI_MAX_EXACT));
	/* long bins: 12 bytes each, no group bitmap */
	x->nlong = (uint32_t)HKV_MAX(x->nexact, HKV_MIN(4ull * x->nexact, npages));
	x->nbinwords = (x->nlong + 1 + 63) / 64;
	for (uint64_t n = words, off = 0; ; n = (n + 63) / 64) {	/* group bitmaps */
		x->bin_off[x->bin_levels++] = (uint32_t)off;
		off += (n + 63) / 64;
		x->bin_stride = (uint32_t)off;
		if (n <= 64)
			break;
	}
	x->root = x->tree_max = x->free_node = x->hint.id = x->plan_id = XI_NIL;
	x->runs_exact = !barrier || (barrier % 64 == 0 && base % 64 == 0);
	x->seed = 0x9e3779b9u ^ (uint32_t)base;
	x->grp = meta_alloc(words * sizeof(struct xgroup));
	x->allocated = x->grp ? &x->grp[0].alloc : NULL;
	x->in_unit = x->grp ? &x->grp[0].in_unit : NULL;
	x->bin_bits = meta_alloc((size_t)(x->nexact + 1) * x->bin_stride * 8);
	/* counts of every bin, then the exact bins' lowest groups, then the
	 * long bins' (root, lowest) pairs */
	x->bin_count = meta_calloc((size_t)x->nlong + 1 + x->nexact + 1 + 2 * (x->nlong - x->nexact),
			      sizeof(uint32_t));
	x->bin_low = x->bin_count ? x->bin_count + x->nlong + 1 : NULL;
	x->long_bin = x->bin_low ? x->bin_low + x->nexact + 1 : NULL;
	for (uint32_t b = 0; x->bin_low && b < x->nexact + 1 + 2 * (x->nlong - x->nexact); b++)
		x->bin_low[b] = XI_NIL;
	x->bin_mask = meta_calloc(x->nbinwords, 8);
	nseg = barrier ? (base + npages - 1) / barrier - base / barrier + 1 : 1;
	if (!x->grp || !x->bin_bits ||
	    !x->bin_count || !x->bin_mask || xi_reserve_nodes(x, (uint32_t)nseg + 1)) {
		xi_fini(x);
		return -ENOMEM;
	}
	for (p = 0; p < x->npages;) {
		uint32_t end = x->npages, id = node_get(x);

		if (barrier)
			end = (uint32_t)HKV_MIN((uint64_t)end,
						((base + p) / barrier + 1) * barrier - base);
		x->node[id].start = p;
		x->node[id].len = end - p;
		/* its two tags: one line needs two free slots (barriers closer
		 * than a line put several extents in one), two lines one each */
		if ((p >> 6 == (end - 1) >> 6 ? group_nearly_full(&x->grp[p >> 6])
					      : group_full(&x->grp[p >> 6]) ||
						group_full(&x->grp[(end - 1) >> 6])) &&
		    xi_reserve_grow(x, 2)) {
			xi_fini(x);
			return -ENOMEM;
		}
		set_tags(x, id);
		idx_insert(x, id, p, end - p);
		p = end;
	}
	x->free_pages = npages;
	xi_map_bins(x);		/* zeroed memory is often not mapped yet */
	return 0;
}

/**
 * xi_fini() - free an index's memory
 * @x: the index (may be partly initialized)
 */
void xi_fini(struct xindex *x)
{
	meta_free(x->grp, ((size_t)x->npages + 63) / 64 * sizeof(struct xgroup));
	meta_release(x->ovf);
	meta_release(x->node);
	meta_free(x->bin_bits, (size_t)(x->nexact + 1) * x->bin_stride * 8);
	meta_release(x->bin_count);
	meta_release(x->bin_mask);
	memset(x, 0, sizeof(*x));
}

/* ---- alloc --------------------------------------------------------------- */

/**
 * xi_plan_multi() - extents of the best answer for n > largest free pages
 * @x: the index
 * @n: pages wanted, more than the largest free extent
 *
 * The largest-first prefix count, from the treap and the bin counts.
 *
 * Return: the number of extents, or -ENOMEM.
 */
long xi_plan_multi(const struct xindex *x, uint64_t n)
{
	uint64_t sum = 0;
	uint32_t id, bin;
	long k = 0;

	for (id = x->tree_max; id != XI_NIL; id = tree_prev(x, id)) {
		sum += x->node[id].len;
		k++;
		if (sum >= n)
			return k;
	}
	for (bin = bin_last_below(x, x->nlong + 1); bin; bin = bin_last_below(x, bin)) {
		uint64_t all = (uint64_t)x->bin_count[bin] * bin;

		if (sum + all >= n)
			return k + (long)((n - sum + bin - 1) / bin);
		sum += all;
		k += x->bin_count[bin];
	}
	return -ENOMEM;	/* unreachable while free_pages >= n */
}

/* take n pages from the low end of free extent id */
/*
 * A long extent that stays long after the carve keeps its treap slot when
 * its smaller key still sorts after its predecessor (always for the
 * wilderness, the largest): no remove and re-insert.
 */
static __always_inline bool shrink_in_place(struct xindex *x, uint32_t id, uint64_t n)
{
	struct fext *e = &x->node[id];
	uint32_t len = e->len - (uint32_t)n, start = e->start + (uint32_t)n, p;

	if (e->len <= x->nlong || len <= x->nlong)	/* not in the treap, or leaving it */
		return false;
	p = tree_prev(x, id);
	if (p != XI_NIL && (x->node[p].len > len ||
			    (x->node[p].len == len && x->node[p].start > start)))
		return false;
	tag_move(x, e->start, start, id);
	e->start = start;
	e->len = len;
	if (id == x->tree_max)
		HKV_STORE(&x->largest, len);
	return true;
}

/* id's figures: the hint's for the last bin pick (read from its group
 * line, so its node is only written), else its node's */
static inline struct xpick pick_of(const struct xindex *x, uint32_t id)
{
	if (id == x->hint.id)
		return x->hint;
	return (struct xpick){ .id = id, .start = x->node[id].start, .len = x->node[id].len };
}

static __always_inline void carve(struct xindex *x, struct xpick pk, uint64_t n,
				  struct hkv_extent *out)
{
	uint32_t id = pk.id, start = pk.start, len = pk.len;

	if (len > n && len > x->nlong && shrink_in_place(x, id, n))
		goto mark;
	idx_remove(x, id, start, len);
	if (len > n) {
		tag_move(x, start, start + (uint32_t)n, id);
		x->node[id].start = start + (uint32_t)n;
		x->node[id].len = len - (uint32_t)n;
		idx_insert(x, id, start + (uint32_t)n, len - (uint32_t)n);
	} else {
		tags_clear(x, start, len);
		node_put(x, id);
	}
mark:
	xi_set_range(x->allocated, start, n, true);
	xi_own(x, start, n, true);
	out->start = x->base + start;
	out->len = n;
}

/* xi_take() of a treap pick or of several extents */
static __attribute__((noinline)) void take_carved(struct xindex *x, uint64_t n, long nplan,
						  struct hkv_extent *ext)
{
	uint64_t total = n;
	long i;

	for (i = 0; i < nplan - 1; i++) {
		struct xpick pk = pick_of(x, find_largest(x));

		n -= pk.len;
		carve(x, pk, pk.len, &ext[i]);
	}
	carve(x, pick_of(x, nplan == 1 && x->plan_id != XI_NIL && x->plan_n == n ? x->plan_id
										: find_fit(x, n)), n, &ext[i]);
	HKV_STORE(&x->free_pages, x->free_pages - total);
}

/**
 * xi_take() - take n pages as the planned number of extents
 * @x: the index
 * @n: pages (> 0, <= free pages)
 * @nplan: extents, as returned by xi_plan()
 * @ext: receives @nplan extents, largest first, best-fit remainder last
 *
 * Right after xi_reserve_plan(x, n, nplan), with no change in between: one
 * extent is the fit it picked.
 */
void xi_take(struct xindex *x, uint64_t n, long nplan, struct hkv_extent *ext)
{
	/* the common call: xi_reserve_plan() picked one extent from a bin */
	if (likely(nplan == 1 && x->plan_id == x->hint.id && x->plan_n == n &&
		   x->plan_id != XI_NIL)) {
		take_binned(x, x->hint, (uint32_t)n, ext);
		HKV_STORE(&x->free_pages, x->free_pages - n);
		return;
	}
	take_carved(x, n, nplan, ext);
}

/**
 * xi_alloc_carved() - xi_alloc_bin() when the best fit is not in an exact bin
 * @x: the index
 * @n: pages, at most the largest free extent
 * @bin: the smallest non-empty long bin >= n, or 0 (the fit is in the treap)
 * @ext: receives the extent
 *
 * Return: 1, or -ENOMEM (nothing taken).
 */
long xi_alloc_carved(struct xindex *x, uint64_t n, uint32_t bin, struct hkv_extent *ext)
{
	uint32_t id = bin ? x->long_bin[2 * (bin - x->nexact - 1) + 1] : tree_lower_bound(x, n);
	struct xpick pk = { .id = id, .start = x->node[id].start, .len = x->node[id].len };

	if (unlikely(pick_reserve(x, &pk, n)))
		return -ENOMEM;
	carve(x, pk, n, ext);
	HKV_STORE(&x->free_pages, x->free_pages - n);
	return 1;
}

/**
 * xi_alloc_one() - the common allocation in one step: a best fit for a
 *	request that one free extent answers, found, reserved for and taken
 * @x: the index
 * @n: pages (> 0)
 * @ext: receives the extent
 *
 * xi_alloc_bin() as a call (extent.h says what it does).
 *
 * Return: 1 (the extent is in @ext), 0 (more pages than the largest free
 * extent: nothing done) or -ENOMEM (its overflow block could not be had:
 * nothing taken).
 */
long xi_alloc_one(struct xindex *x, uint64_t n, struct hkv_extent *ext)
{
	return xi_alloc_bin(x, n, ext);
}

/**
 * xi_reserve_plan() - make sure xi_take() of a plan cannot fail
 * @x: the index
 * @n: pages
 * @k: extents, from xi_plan()
 *
 * One extent: the best fit is found now (and kept for xi_take()), and a
 * block is reserved only if carving it adds a tag to a full group line.
 * Several: one block per extent.
 *
 * Return: 0 or -ENOMEM.
 */
int xi_reserve_plan(struct xindex *x, uint64_t n, long k)
{
	struct xpick pk;

	if (k != 1)
		return xi_reserve_take(x, k);
	x->plan_id = find_fit_inline(x, n);
	x->plan_n = n;
	pk = pick_of(x, x->plan_id);
	return pick_reserve(x, &pk, n);
}

/**
 * xi_reserve_free() - make sure xi_free() of one piece cannot fail
 * @x: the index
 * @start: absolute first page
 * @len: pages
 *
 * A free adds new tags only at its own first and last pages (a merge
 * rewrites the neighbour's): a block is needed only if their group lines
 * lack the free slots, and their lines are not even read while two blocks
 * are free (blocks come back when a crowded group empties, so under churn
 * there nearly always are).
 *
 * Return: 0 or -ENOMEM.
 */
int xi_reserve_free(struct xindex *x, uint64_t start, uint64_t len)
{
	uint64_t s = start - x->base, l = s + len - 1;
	const struct xgroup *a = &x->grp[s >> 6], *b = &x->grp[l >> 6];
	uint32_t need;

	if (len <= x->nexact)	/* the leaf word its bin insert writes, most often */
		__builtin_prefetch(&bin_bits(x, (uint32_t)len)[s >> 12], 1);
	if (unlikely(x->free_extents >= x->ncap) && xi_reserve_nodes(x, 1))
		return -ENOMEM;
	if (likely(x->ovf_nfree >= 2))	/* two new tags spill two lines at most */
		return 0;
	if (a == b)
		need = group_nearly_full(a);
	else
		need = group_full(a) + group_full(b);
	return need ? xi_reserve_grow(x, need) : 0;
}

/**
 * xi_cursor_first() - the free extents in descending length, group by group
 * @x: the index
 * @c: receives the first group (each treap extent alone, then each bin)
 *
 * Return: false when there is no free extent.
 */
bool xi_cursor_first(const struct xindex *x, struct xi_cursor *c)
{
	c->id = x->tree_max;
	c->bin = x->nlong + 1;
	if (c->id != XI_NIL) {
		c->len = x->node[c->id].len;
		c->count = 1;
		return true;
	}
	return xi_cursor_next(x, c);
}

/**
 * xi_cursor_next() - the next group of xi_cursor_first()'s walk
 * @x: the index
 * @c: the cursor
 *
 * Return: false at the end.
 */
bool xi_cursor_next(const struct xindex *x, struct xi_cursor *c)
{
	if (c->id != XI_NIL) {
		c->id = tree_prev(x, c->id);
		if (c->id != XI_NIL) {
			c->len = x->node[c->id].len;
			c->count = 1;
			return true;
		}
	}
	c->bin = bin_last_below(x, c->bin);
	if (!c->bin)
		return false;
	c->len = c->bin;
	c->count = x->bin_count[c->bin];
	return true;
}

/**
 * xi_fit_len() - length of the best fit for n pages
 * @x: the index
 * @n: pages (> 0)
 *
 * Return: the length of the smallest free extent >= n, or 0.
 */
uint64_t xi_fit_len(const struct xindex *x, uint64_t n)
{
	uint32_t id = find_fit(x, n);

	return id == XI_NIL ? 0 : x->node[id].len;
}

/* ---- free ---------------------------------------------------------------- */



/* free [s, e) (bits cleared) next to a free left and/or right neighbour
 * (extent.h) */
void free_merge(struct xindex *x, uint32_t s, uint32_t e, bool left, bool right)
{
	uint32_t e0 = e, id = XI_NIL, nb;
	bool start_tagged = false, end_tagged = false;

	x->hint.id = XI_NIL;	/* a neighbour is no pick: bin_remove() must look */
	if (left) {
		id = tag_get(x, s - 1);
		idx_remove(x, id, x->node[id].start, x->node[id].len);
		if (x->node[id].start != s - 1)
			tag_clear(x, s - 1);	/* no longer an end */
		s = x->node[id].start;
		start_tagged = true;	/* its start tag stays */
	}
	if (right) {
		nb = tag_get(x, e);
		idx_remove(x, nb, e, x->node[nb].len);
		if (x->node[nb].len != 1)
			tag_clear(x, e);	/* no longer a start */
		e = x->node[nb].start + x->node[nb].len;
		if (id == XI_NIL) {
			id = nb;
			end_tagged = x->node[nb].len != 1;	/* its end tag stays */
		} else {
			node_put(x, nb);
		}
	}
	x->node[id].start = s;
	x->node[id].len = e - s;
	/* only tags that change are written; pages just freed carry none */
	if (!start_tagged)
		tag_add(x, s, id, true);
	if (e - s > 1 && !end_tagged) {
		if (e == e0)
			tag_add(x, e - 1, id, false);	/* no right neighbour */
		else
			tag_set(x, e - 1, id, false);
	}
	idx_insert(x, id, s, e - s);
}

/**
 * xi_free() - free allocated pages and coalesce with free neighbours
 * @x: the index; xi_reserve(x, 1) done since the last free
 * @start: absolute first page (checked by xi_check_allocated())
 * @len: pages; must not cross a barrier
 */
void xi_free(struct xindex *x, uint64_t start, uint64_t len)
{
	xi_free_piece(x, start, len);
}

/**
 * xi_free_one() - free one piece in one step: reserve, check, free
 * @x: the index
 * @start: absolute first page, inside the space
 * @len: pages, inside the space; must not cross a barrier
 *
 * xi_free_checked() as a call (extent.h says what it does).
 *
 * Return: 0, -ENOMEM, -EINVAL (a page not allocated) or -EBUSY (a page in
 * a unit); nothing is changed on failure.
 */
int xi_free_one(struct xindex *x, uint64_t start, uint64_t len)
{
	return xi_free_checked(x, start, len);
}

/* ---- reports ------------------------------------------------------------- */

/**
 * xi_usable() - free pages usable by requests of r pages
 * @x: the index
 * @r: request size (> 0)
 *
 * Return: sum over free extents of floor(len / r) * r, in O(bins + large
 * extents) from the bin counts.
 */
uint64_t xi_usable(const struct xindex *x, uint64_t r)
{
	uint64_t sum = 0;
	uint32_t bin, id;

	for (bin = bin_first_from(x, (uint32_t)HKV_MIN(r, (uint64_t)x->nlong + 1)); bin;
	     bin = bin_first_from(x, bin + 1))
		sum += (uint64_t)x->bin_count[bin] * (bin / r * r);
	for (id = x->tree_max; id != XI_NIL; id = tree_prev(x, id))
		sum += x->node[id].len / r * r;
	return sum;
}

/**
 * xi_free_ids() - list free pages in order
 * @x: the index
 * @out: room for x->free_pages ids
 *
 * Return: the number written.
 */
uint64_t xi_free_ids(const struct xindex *x, uint64_t *out)
{
	uint64_t words = ((uint64_t)x->npages + 63) / 64, n = 0, w;

	for (w = 0; w < words; w++) {
		uint64_t free = ~x->grp[w].alloc;

		if (w == words - 1 && (x->npages & 63))
			free &= (1ull << (x->npages & 63)) - 1;
		while (free) {
			out[n++] = x->base + w * 64 + (uint64_t)__builtin_ctzll(free);
			free &= free - 1;
		}
	}
	return n;
}

/**
 * xi_map_bins() - map the index's bin bitmaps into this process
 * @x: the index, in a named pool's file (locked, or biased to the caller)
 *
 * A free prefetches the leaf word of its length's bin, which it writes
 * only when the freed extent stays that long (a page freed next to a
 * larger free extent merges into it). A process that attached to the
 * file has never touched a bin that nobody wrote since it mapped it: each
 * such prefetch walked the page tables to a missing entry and was dropped,
 * and an attached process's alloc+free cost 2-4x the creator's. One read
 * per page maps them (one page per 512 words: 9 for a lane of 64 K pages,
 * 440 for 3.5 M).
 */
void xi_map_bins(const struct xindex *x)
{
	const volatile uint64_t *b = x->bin_bits;
	size_t words = (size_t)(x->nexact + 1) * x->bin_stride;

	for (size_t w = 0; b && w < words; w += 4096 / sizeof(*b))
		(void)b[w];
	if (b && words)
		(void)b[words - 1];	/* the last page, when the array starts mid-page */
}

/**
 * xi_metadata_bytes() - bytes of bookkeeping the index holds
 * @x: the index
 *
 * Return: the bytes.
 */
size_t xi_metadata_bytes(const struct xindex *x)
{
	size_t words = ((size_t)x->npages + 63) / 64;

	return words * sizeof(struct xgroup) + (size_t)x->ovf_cap * sizeof(*x->ovf) +
	       (size_t)x->ncap * sizeof(struct fext) +
	       (size_t)(x->nexact + 1) * (x->bin_stride * 8 + 8) +
	       (size_t)(x->nlong - x->nexact) * 12 + x->nbinwords * 8;
}
