/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * extent.h - the free-extent index's own header, for lib/extent*.c only:
 * the steps of the hot paths (the pick, the one-extent take, the plain
 * free), static inline so that those calls in extent.c run without a call
 * inside, and the out-of-line steps the files share.
 *
 *   extent_group.c  group lines: page bitmaps, tags, overflow blocks
 *   extent_bins.c   exact bins: group bitmaps, in-bin tests, lowest group
 *   extent_tree.c   the long bins and the treap of the longest extents
 *   extent.c        the index: nodes, bins + treap, alloc, free, reports
 */
#ifndef HKV_EXTENT_H
#define HKV_EXTENT_H

#include "internal.h"

/* __always_inline: glibc's sys/cdefs.h */
#ifndef __always_inline
#define __always_inline	inline __attribute__((always_inline))
#endif

/* ---- extent_group.c: tags, the node ids of first and last pages -------- */

#define BYTES(v)	((v) * 0x0101010101010101ull)
#define KEY_OFF		BYTES(0x7f)	/* key bytes without the start flag */

/* tag page p with id (start: p is the first page of its extent) */
void tag_set(struct xindex *x, uint32_t p, uint32_t id, bool start);
/* drop page p's tag, if any */
void tag_clear(struct xindex *x, uint32_t p);

/* index of the lowest byte of w equal to v, or -1 (SWAR) */
static inline int key_find(uint64_t w, uint64_t v)
{
	uint64_t t = w ^ BYTES(v), z = (t - BYTES(1)) & ~t & BYTES(0x80);

	return z ? __builtin_ctzll(z) >> 3 : -1;
}

static inline uint64_t key_put(uint64_t w, int i, uint64_t v)
{
	return (w & ~(0xffull << (8 * i))) | (v << (8 * i));
}

/* 0x80 in exactly the bytes of w that are 0 (no SWAR borrow) */
static inline uint64_t zero_bytes(uint64_t w)
{
	return ~(((w & BYTES(0x7f)) + BYTES(0x7f)) | w | BYTES(0x7f));
}

/* fewer than two free slots in a line-held group */
static inline bool group_nearly_full(const struct xgroup *g)
{
	uint64_t z = zero_bytes(g->keys);

	return !g->blk && !(z & (z - 1));
}

/* a new tag in g would spill it to an overflow block */
static inline bool group_full(const struct xgroup *g)
{
	return !g->blk && key_find(g->keys, 0) < 0;
}

/* the tag of a tagged page */
static inline uint32_t tag_get(const struct xindex *x, uint32_t p)
{
	const struct xgroup *g = &x->grp[p >> 6];

	if (likely(!g->blk))
		return g->id[key_find(g->keys & KEY_OFF, (p & 63) + 1)];
	return x->ovf[g->blk - 1][p & 63];
}

/* tag page p, which carries no tag yet (a page just freed): no lookup */
static __always_inline void tag_add(struct xindex *x, uint32_t p, uint32_t id, bool start)
{
	struct xgroup *g = &x->grp[p >> 6];
	int i;

	if (likely(!g->blk) && likely((i = key_find(g->keys, 0)) >= 0)) {
		g->keys = key_put(g->keys, i, (p & 63) + 1 + (start ? XI_KEY_START : 0));
		g->id[i] = id;
		return;
	}
	tag_set(x, p, id, start);
}

/* both tags of a new extent [s, e) whose pages carry none (a plain free):
 * one line and no branch on the length when it has two free slots */
static __always_inline void tags_add(struct xindex *x, uint32_t s, uint32_t e, uint32_t id)
{
	struct xgroup *g = &x->grp[s >> 6];
	uint64_t z = zero_bytes(g->keys);

	if (likely(s >> 6 == (e - 1) >> 6 && !g->blk && (z & (z - 1)))) {
		unsigned i = (unsigned)__builtin_ctzll(z) >> 3;
		unsigned j = (unsigned)__builtin_ctzll(z & (z - 1)) >> 3;
		uint64_t first = (s & 63) + 1 + XI_KEY_START;
		/* a one-page extent has no end key: its slot stays empty */
		uint64_t end = (((e - 1) & 63) + 1) & -(uint64_t)(e - s > 1);

		g->keys |= first << (8 * i) | end << (8 * j);
		g->id[i] = id;
		g->id[j] = id;
		return;
	}
	tag_add(x, s, id, true);
	if (e - s > 1)
		tag_add(x, e - 1, id, false);
}

/* the tags of a whole extent taken out: one line when both are in it */
static __always_inline void tags_clear(struct xindex *x, uint32_t start, uint32_t len)
{
	struct xgroup *g = &x->grp[start >> 6];
	uint32_t last = start + len - 1;

	if (likely(start >> 6 == last >> 6 && !g->blk)) {
		/* both keys in one pass; a one-page extent has no key without
		 * the start flag, so the second match is empty, with no branch
		 * on len */
		uint64_t k = g->keys;
		uint64_t z = zero_bytes(k ^ BYTES((start & 63) + 1 + XI_KEY_START)) |
			     zero_bytes(k ^ BYTES((last & 63) + 1));

		g->keys = k & ~((z >> 7) * 0xff);
		return;
	}
	if (likely(start >> 6 != last >> 6 && !g->blk && !x->grp[last >> 6].blk)) {
		/* two line-held groups: one key each, matched exactly */
		struct xgroup *h = &x->grp[last >> 6];
		uint64_t zg = zero_bytes(g->keys ^ BYTES((start & 63) + 1 + XI_KEY_START));
		uint64_t zh = zero_bytes(h->keys ^ BYTES((last & 63) + 1));

		g->keys &= ~((zg >> 7) * 0xff);
		h->keys &= ~((zh >> 7) * 0xff);
		return;
	}
	tag_clear(x, start);
	if (len > 1)
		tag_clear(x, last);
}

/* tags_clear() of a bin pick's extent: the start key is in the pick's slot
 * of a line-held group; the end key (a one-page extent has none, and then
 * nothing matches: the start key was the page's only one) in one pass */
static __always_inline void tags_clear_pick(struct xindex *x, uint32_t start, uint32_t len,
					    unsigned slot)
{
	struct xgroup *g = &x->grp[start >> 6];
	uint32_t last = start + len - 1;

	if (likely(start >> 6 == last >> 6 && !g->blk)) {
		uint64_t k = g->keys & ~(0xffull << (8 * slot));
		uint64_t z = zero_bytes(k ^ BYTES((last & 63) + 1));

		g->keys = k & ~((z >> 7) * 0xff);
		return;
	}
	tags_clear(x, start, len);
}

/* the first page of id moves from p to q (carving): one key rewritten when
 * both are in one line-held group */
static __always_inline void tag_move(struct xindex *x, uint32_t p, uint32_t q, uint32_t id)
{
	struct xgroup *g = &x->grp[p >> 6];
	int i, j;

	if (likely(p >> 6 == q >> 6 && !g->blk)) {
		i = key_find(g->keys & KEY_OFF, (p & 63) + 1);
		j = key_find(g->keys & KEY_OFF, (q & 63) + 1);
		if (j >= 0)		/* q ends the extent: its slot stays */
			g->keys = key_put(g->keys, i, 0);
		else
			j = i;
		g->keys = key_put(g->keys, j, (q & 63) + 1 + XI_KEY_START);
		g->id[j] = id;
		return;
	}
	tag_clear(x, p);
	tag_set(x, q, id, true);
}

static inline void set_tags(struct xindex *x, uint32_t id)
{
	const struct fext *e = &x->node[id];

	tag_set(x, e->start, id, true);
	if (e->len > 1)
		tag_set(x, e->start + e->len - 1, id, false);
}

/* ---- extent_tree.c: long bins (the treap proper is in internal.h) ------ */

/* file free extent id (start, len set; nexact < len <= nlong) in its long
 * bin, a treap of that length's extents by start with its lowest kept */
void long_insert(struct xindex *x, uint32_t id);
/* take it out; its successor becomes the lowest if it was */
void long_remove(struct xindex *x, uint32_t id);

/* ---- extent_bins.c: exact bins ----------------------------------------- */

/* does group g hold the start of an extent of bin other than skip? */
bool group_has_other(const struct xindex *x, uint64_t g, uint32_t bin, uint32_t skip);
/* group_lowest() of a crowded group: its tags in the overflow block */
void group_lowest_crowded(const struct xindex *x, uint64_t g, uint32_t bin, struct xpick *pick);
/* clear leaf bit i and the summaries that empty */
void bits_clear(const struct xindex *x, uint64_t *bits, uint64_t i);
/* clear bit i of level from (the lowest set one) and the summaries that
 * empty; the new lowest leaf bit, or XI_NIL */
uint32_t bits_clear_lowest_up(const struct xindex *x, uint64_t *bits, uint64_t i, unsigned from);
/* take free extent id, [start, +len), out of its bin (the node is written) */
void bin_remove(struct xindex *x, uint32_t id, uint32_t start, uint32_t len);
/* largest non-empty bin, exact or long, < n (n <= nlong + 1), or 0 */
uint32_t bin_last_below(const struct xindex *x, uint32_t n);

/*
 * Each exact bin has a bitmap of the groups (64 pages) where one of its
 * extents starts, with a summary bitmap over its words, and so on up to one
 * word (XI_LEVELS at most). The lowest set leaf bit is the lowest group
 * holding such a start; the group's tags name its extents, and the lowest
 * matching start is the bin's lowest-address extent: ties go exactly to the
 * lower address, in a few word operations and at most one scan of a
 * group's tags (eight, or 64 in a crowded group).
 */
static inline uint64_t *bin_bits(const struct xindex *x, uint32_t bin)
{
	return x->bin_bits + (size_t)bin * x->bin_stride;
}

/* is id, whose first page carries a start flag, an extent of this bin (and
 * not one just taken out of it)? Flags are exact, and a treap extent is
 * longer than any bin, so the length and the in-bin mark tell */
static inline bool in_bin(const struct xindex *x, uint32_t id, uint32_t bin)
{
	const struct fext *e = &x->node[id];

	return e->len == bin && e->parent != XI_NIL;
}

/*
 * Is the extent starting at offset o of line gr one of this bin? Free runs
 * are maximal, so where the run of free pages from o ends inside the line
 * (and no barrier falls inside a line) its length is the extent's, read
 * from the allocated word without touching the node. Only an extent that
 * reaches the line's end needs its node. A run that ends inside the line
 * and belongs to an extent just taken out of its bin is longer than the
 * extent was (a merging free clears its pages before it takes its
 * neighbours out), so it never matches.
 */
static inline bool starts_bin(const struct xindex *x, const struct xgroup *gr, unsigned o,
			      uint32_t id, uint32_t bin)
{
	uint64_t w = gr->alloc >> o;

	if (likely(w) && likely(x->runs_exact))
		return (uint32_t)__builtin_ctzll(w) == bin;
	return in_bin(x, id, bin);
}

/* the lowest start in group g of an extent of bin (node id and first page,
 * from the line); .more: another one starts there too. Returned by value,
 * so that a caller's pick stays in registers */
static __always_inline struct xpick group_lowest(const struct xindex *x, uint64_t g,
						 uint32_t bin)
{
	const struct xgroup *gr = &x->grp[g];
	uint64_t keys = gr->keys, alloc = gr->alloc, starts = keys & BYTES(XI_KEY_START);
	uint32_t best = XI_NIL, besto = 64, n = 0, bests = 0;
	bool exact = x->runs_exact;	/* loaded once, not per tag */

	if (unlikely(gr->blk)) {
		struct xpick pick;

		group_lowest_crowded(x, g, bin, &pick);
		return pick;
	}
	if (likely(starts && !(starts & (starts - 1)))) {
		/* one start in the group (most often): the bin's bitmap says
		 * one of its extents starts here, so it is that one */
		int i = __builtin_ctzll(starts) >> 3;

		return (struct xpick){ .id = gr->id[i],
				       .start = (uint32_t)(g << 6) +
						(uint32_t)((keys >> (8 * i)) & 0x7f) - 1,
				       .len = bin, .more = false, .slot = (uint8_t)i };
	}
	for (uint64_t f = starts; f; f &= f - 1) {
		int i = __builtin_ctzll(f) >> 3;
		unsigned o = ((keys >> (8 * i)) & 0x7f) - 1;
		uint32_t id = gr->id[i];
		uint64_t w = alloc >> o;
		bool match = likely(w) && likely(exact) ? (uint32_t)__builtin_ctzll(w) == bin
							 : in_bin(x, id, bin);

		if (match) {
			n++;
			if (o < besto) {
				besto = o;
				best = id;
				bests = (uint32_t)i;
			}
		}
	}
	return (struct xpick){ .id = best, .start = (uint32_t)(g << 6) + besto, .len = bin,
			       .more = n > 1, .slot = (uint8_t)bests };
}

/* set leaf bit i and its summaries: every level, since a summary bit that
 * is set already stays so (no branch on the words). The top level is one
 * word; two and three levels (up to 16 M pages) are written out, without
 * the loop's per-level offset loads */
static __always_inline void bits_set(const struct xindex *x, uint64_t *bits, uint64_t i)
{
	if (likely(x->bin_levels == 3)) {
		bits[i >> 6] |= 1ull << (i & 63);
		bits[x->bin_off[1] + (i >> 12)] |= 1ull << ((i >> 6) & 63);
		bits[x->bin_off[2]] |= 1ull << (i >> 12);
		return;
	}
	if (x->bin_levels == 2) {
		bits[i >> 6] |= 1ull << (i & 63);
		bits[x->bin_off[1]] |= 1ull << (i >> 6);
		return;
	}
	for (unsigned l = 0; l < x->bin_levels; l++, i >>= 6)
		bits[x->bin_off[l] + (i >> 6)] |= 1ull << (i & 63);
}

/*
 * The same for the two lowest levels without a branch on the leaf word
 * (whether the lowest group's leaf word holds another is data, not a
 * pattern): the level-1 bit is cleared only if the leaf word emptied, and
 * since i's leaf word was the lowest non-zero one, the lowest bit of the
 * level-1 word names it while it stays non-zero, so one reload (forwarded
 * from the store just made) gives the new lowest either way. Only an
 * emptied level-1 word climbs further.
 */
static __always_inline uint32_t bits_clear_lowest(const struct xindex *x, uint64_t *bits,
						  uint64_t i)
{
	uint64_t *w0 = &bits[i >> 6], *w1, v0, v1, j;

	if (unlikely(x->bin_levels < 2))
		return bits_clear_lowest_up(x, bits, i, 0);
	v0 = *w0 & ~(1ull << (i & 63));
	*w0 = v0;
	w1 = &bits[x->bin_off[1] + (i >> 12)];
	v1 = *w1 & ~((uint64_t)!v0 << ((i >> 6) & 63));
	*w1 = v1;
	j = i >> 12;		/* the level-1 word */
	if (unlikely(!v1)) {
		/* up to 16 M pages there are three levels, the top one word:
		 * its lowest bit names the next level-1 word */
		if (x->bin_levels != 3)
			return x->bin_levels > 2 ? bits_clear_lowest_up(x, bits, j, 2) : XI_NIL;
		v1 = bits[x->bin_off[2]] & ~(1ull << j);
		bits[x->bin_off[2]] = v1;
		if (!v1)
			return XI_NIL;
		j = (uint64_t)__builtin_ctzll(v1);
		v1 = bits[x->bin_off[1] + j];
	}
	j = (j << 6) + (uint64_t)__builtin_ctzll(v1);
	return (uint32_t)((j << 6) + (uint64_t)__builtin_ctzll(bits[j]));
}

/* file [start, +len) in its bin, whose bitmap is bits: bitmap, lowest
 * group, masks, count (the node is marked by the caller) */
static __always_inline void bin_add_in(struct xindex *x, uint64_t *bits, uint32_t start,
				       uint32_t len)
{
	bits_set(x, bits, start >> 6);
	x->bin_low[len] = HKV_MIN(x->bin_low[len], start >> 6);	/* XI_NIL when empty */
	/* the masks name the non-empty bins: only a bin's first extent
	 * changes them (most inserts find the bin in use) */
	if (unlikely(!x->bin_count[len]++)) {
		x->bin_mask[len >> 6] |= 1ull << (len & 63);
		x->bin_words |= 1ull << (len >> 6);
	}
}

/* the same, the bitmap found here */
static __always_inline void bin_add(struct xindex *x, uint32_t start, uint32_t len)
{
	bin_add_in(x, bin_bits(x, len), start, len);
}

/* file free extent id, [start, +len), in its bin, whose bitmap is bits */
static __always_inline void bin_insert_in(struct xindex *x, uint64_t *bits, uint32_t id,
					  uint32_t start, uint32_t len)
{
	struct fext *e = &x->node[id];

	e->prio = 0;
	e->parent = 0;		/* in a bin */
	bin_add_in(x, bits, start, len);
}

/* the same, the bitmap found here */
static __always_inline void bin_insert(struct xindex *x, uint32_t id, uint32_t start,
				       uint32_t len)
{
	bin_insert_in(x, bin_bits(x, len), id, start, len);
}

/* the pick's extent leaves its bin; its group holds another of the bin iff
 * more (the node is not touched) */
static __always_inline void bin_del(struct xindex *x, uint32_t start, uint32_t len, bool more)
{
	uint32_t g = start >> 6;

	if (!more) {
		if (g == x->bin_low[len])
			x->bin_low[len] = bits_clear_lowest(x, bin_bits(x, len), g);
		else
			bits_clear(x, bin_bits(x, len), g);
	}
	if (!--x->bin_count[len] && !(x->bin_mask[len >> 6] &= ~(1ull << (len & 63))))
		x->bin_words &= ~(1ull << (len >> 6));
}

/* bin_del() of a bin pick: its group is the bin's lowest (bits: the
 * bin's bitmap) */
static __always_inline void bin_del_low(struct xindex *x, uint64_t *bits, uint32_t g,
					uint32_t len, bool more)
{
	if (!more) {
		uint32_t low = bits_clear_lowest(x, bits, g);

		x->bin_low[len] = low;
		/* the bin's next pick reads that group's line: start its miss
		 * now, while the caller works between its calls */
		if (low != XI_NIL)
			hkv_prefetch_w(&x->grp[low]);
	}
	if (!--x->bin_count[len] && !(x->bin_mask[len >> 6] &= ~(1ull << (len & 63))))
		x->bin_words &= ~(1ull << (len >> 6));
}

/* smallest non-empty bin (exact or long) >= n (n <= nlong), or 0: two
 * words, never a scan */
static __always_inline uint32_t bin_first_from_bins(const struct xindex *x, uint32_t n)
{
	uint32_t w = n >> 6;
	uint64_t m, words;

	m = x->bin_mask[w] & (~0ull << (n & 63));
	if (!m) {
		words = w + 1 < 64 ? x->bin_words & (~0ull << (w + 1)) : 0;
		if (!words)
			return 0;
		w = (uint32_t)__builtin_ctzll(words);
		m = x->bin_mask[w];
	}
	return (w << 6) + (uint32_t)__builtin_ctzll(m);
}

/* the same for any n: 0 above the long bins */
static __always_inline uint32_t bin_first_from(const struct xindex *x, uint32_t n)
{
	return n > x->nlong ? 0 : bin_first_from_bins(x, n);
}

/*
 * Before a take from a bin's lowest group low: the leaf word the take
 * clears, and the bin's next non-empty leaf word, which the take reads for
 * the bin's new lowest group when it empties low's (nine takes in ten at
 * 3.5 M pages; the next one is under another level-1 word in four); the
 * misses then overlap the group line's.
 */
static __always_inline void bin_prefetch_leaves(const struct xindex *x, uint64_t *bits,
						uint32_t low)
{
	uint64_t w1, top, j;

	__builtin_prefetch(&bits[low >> 6], 1);
	if (unlikely(x->bin_levels < 2))
		return;
	j = low >> 12;		/* the level-1 word */
	w1 = bits[x->bin_off[1] + j] & (~1ull << ((low >> 6) & 63));
	if (!w1) {
		/* up to 16 M pages the top level is one word (bits_clear_lowest) */
		if (x->bin_levels != 3)
			return;
		top = bits[x->bin_off[2]] & (~1ull << j);
		if (!top)
			return;
		j = (uint64_t)__builtin_ctzll(top);
		w1 = bits[x->bin_off[1] + j];
		if (!w1)
			return;
	}
	__builtin_prefetch(&bits[(j << 6) + (uint64_t)__builtin_ctzll(w1)]);
}

/* the lowest-address extent of a non-empty bin, kept as the hint */
static __always_inline uint32_t bin_pick(const struct xindex *x, uint32_t bin)
{
	struct xindex *w = (struct xindex *)x;	/* the hint is a cache */

	bin_prefetch_leaves(x, bin_bits(x, bin), x->bin_low[bin]);
	w->hint = group_lowest(x, x->bin_low[bin], bin);
	return w->hint.id;
}

/* ---- extent.c: the one-step allocation and free (inlined by lane.c and
 * multi.c too) ------------------------------------------------------------ */

/* the largest free extent after it left the index */
void refresh_largest(struct xindex *x);
/* file free extent id, [start, +len), in its bin, long bin or the treap */
void idx_insert(struct xindex *x, uint32_t id, uint32_t start, uint32_t len);
/* free [s, e) (bits cleared) next to a free left and/or right neighbour */
void free_merge(struct xindex *x, uint32_t s, uint32_t e, bool left, bool right);
/* xi_alloc_bin() of a fit from a long bin (bin) or the treap (bin 0) */
long xi_alloc_carved(struct xindex *x, uint64_t n, uint32_t bin, struct hkv_extent *ext);

static __always_inline uint32_t node_get(struct xindex *x)
{
	uint32_t id = x->free_node;

	if (id != XI_NIL) {
		x->free_node = x->node[id].next;
		return id;
	}
	return x->nused++;	/* xi_reserve() made room */
}

static __always_inline void node_put(struct xindex *x, uint32_t id)
{
	x->node[id].next = x->free_node;
	x->free_node = id;
}

/*
 * n pages from the front of a bin pick's extent, all from the figures the
 * pick read in its group line: the node is written, never read (a bin
 * node's prio and parent are 0 already). bits: the pick's bin's bitmap.
 */
static __always_inline void take_binned_in(struct xindex *x, struct xpick pk, uint32_t n,
					   struct hkv_extent *out, uint64_t *bits)
{
	uint32_t id = pk.id, start = pk.start, len = pk.len;

	if (!n)			/* never: every caller takes pages; lets the */
		__builtin_unreachable();	/* range below skip its test */
	/* apart from out->start (another block): two plain stores, not one
	 * assembled in a vector register */
	out->len = n;
	bin_del_low(x, bits, start >> 6, len, pk.more);	/* a pick's group */
	if (len == n) {
		tags_clear_pick(x, start, len, pk.slot);
		node_put(x, id);
		x->free_extents--;
	} else {
		tag_move(x, start, start + n, id);
		x->node[id].start = start + n;
		x->node[id].len = len - n;
		bin_add(x, start + n, len - n);
	}
	if (len == x->largest)
		refresh_largest(x);
	xi_set_range(x->allocated, start, n, true);
	xi_own(x, start, n, true);
	out->start = x->base + start;
}

/* the same, the bitmap found here */
static __always_inline void take_binned(struct xindex *x, struct xpick pk, uint32_t n,
					struct hkv_extent *out)
{
	take_binned_in(x, pk, n, out, bin_bits(x, pk.len));
}

/* would carving n pages from the front of the pick add a tag to a full
 * group? */
static inline bool carve_needs_block(const struct xindex *x, const struct xpick *pk, uint64_t n)
{
	uint64_t t = pk->start + n;

	/* taken whole: tags only go; same group: the start's slot is reused;
	 * one page left: its tag is there */
	if (pk->len == n || t >> 6 == pk->start >> 6 || t == (uint64_t)pk->start + pk->len - 1)
		return false;
	return group_full(&x->grp[t >> 6]);
}

/* before carving n pages from the pick: prefetch the leaf word the rest
 * goes to, and make sure an overflow block is free if the carve adds a tag
 * to a full group line; 0 or -ENOMEM */
static __always_inline int pick_reserve(struct xindex *x, const struct xpick *pk, uint64_t n)
{
	if (pk->len - n - 1 < x->nexact)	/* the rest's leaf word */
		__builtin_prefetch(&bin_bits(x, pk->len - (uint32_t)n)[(pk->start + n) >> 12], 1);
	if (unlikely(!x->ovf_nfree) && carve_needs_block(x, pk, n))
		return xi_reserve_grow(x, 1);
	return 0;
}

/*
 * What xi_plan(), xi_reserve_plan() and xi_take() do for a request that one
 * extent answers, with the pick kept in registers instead of handed from
 * one call to the next through the index; a fit from an exact bin (most
 * requests) inline. A request for more pages than the largest free extent
 * is left to them, untouched. 1 (taken into ext), 0 (nothing done) or
 * -ENOMEM (its overflow block could not be had: nothing taken).
 */
static __always_inline long xi_alloc_bin(struct xindex *x, uint64_t n, struct hkv_extent *ext)
{
	struct xpick pk;
	uint32_t bin, low;
	uint64_t *bits;

	if (unlikely(n > x->largest))	/* several extents, or -ENOMEM */
		return 0;
	if (unlikely(n > x->nlong))	/* only the treap holds a fit */
		return xi_alloc_carved(x, n, 0, ext);
	bin = bin_first_from_bins(x, (uint32_t)n);
	if (unlikely(!bin || bin > x->nexact))
		return xi_alloc_carved(x, n, bin, ext);
	/* the bin's bitmap, once: a block grown below moves none */
	bits = bin_bits(x, bin);
	low = x->bin_low[bin];
	bin_prefetch_leaves(x, bits, low);
	pk = group_lowest(x, low, bin);
	if (unlikely(pick_reserve(x, &pk, n)))
		return -ENOMEM;
	take_binned_in(x, pk, (uint32_t)n, ext, bits);
	HKV_STORE(&x->free_pages, x->free_pages - n);
	return 1;
}

static __always_inline bool at_barrier(const struct xindex *x, uint32_t p)
{
	return x->barrier && (x->base + p) % x->barrier == 0;
}

/* clear the allocated bits of [s, +len): with w, the one or two words
 * (w[0], w[8]: the next line) under masks m and m2 that the free check
 * computed; without, from scratch */
static __always_inline void free_bits(struct xindex *x, uint32_t s, uint64_t len, uint64_t *w,
				      uint64_t m, uint64_t m2)
{
	xi_own(x, s, len, false);
	if (!w) {
		xi_set_range(x->allocated, s, len, false);
		return;
	}
	xi_bits_store(&w[0], w[0] & ~m);
	if (m2)
		xi_bits_store(&w[8], w[8] & ~m2);
}

/* free allocated pages [start, +len) (absolute, checked) and coalesce with
 * free neighbours, the plain free (no free neighbour, most frees) inline;
 * w, m, m2: as free_bits() takes them; bits: the bitmap of len's bin if
 * the caller has it, or NULL */
static __always_inline void free_piece(struct xindex *x, uint64_t start, uint64_t len,
				       uint64_t *w, uint64_t m, uint64_t m2, uint64_t *bits)
{
	uint32_t s = (uint32_t)(start - x->base), e = s + (uint32_t)len, id;
	uint64_t nb = m << 1 | m >> 1;	/* with m's own bits, set */
	bool left = false, right = false;

	/* the neighbours' pages, outside [s, e): their bits are as before.
	 * Most pieces lie inside one word with a page on either side in it
	 * and (runs_exact) no barrier there: the word the check read tells */
	if (!w || m2 || (m & (1ull | 1ull << 63)) || !x->runs_exact || (w[0] & nb) != nb) {
		left = s > 0 && !at_barrier(x, s) && xi_page_free(x, s - 1);
		right = e < x->npages && !at_barrier(x, e) && xi_page_free(x, e);
	}
	if (unlikely(left || right)) {
		/* first: the bin tests read run lengths from these bits */
		free_bits(x, s, len, w, m, m2);
		free_merge(x, s, e, left, right);
	} else {	/* most frees: a new extent, its pages carry no tags */
		id = node_get(x);
		x->node[id].start = s;
		x->node[id].len = (uint32_t)len;
		tags_add(x, s, e, id);
		if (likely(len <= x->nexact)) {
			bin_insert_in(x, bits ? bits : bin_bits(x, (uint32_t)len), id, s,
				      (uint32_t)len);
			x->free_extents++;
			if (len > x->largest)
				HKV_STORE(&x->largest, len);
		} else {
			idx_insert(x, id, s, (uint32_t)len);
		}
		/* last: a long range's call leaves nothing to reload */
		free_bits(x, s, len, w, m, m2);
	}
	HKV_STORE(&x->free_pages, x->free_pages + len);
}

/* xi_free() */
static __always_inline void xi_free_piece(struct xindex *x, uint64_t start, uint64_t len)
{
	free_piece(x, start, len, NULL, 0, 0, NULL);
}

/*
 * xi_reserve_free(), xi_check_allocated() and xi_free() of one piece
 * (absolute pages, inside the space, not across a barrier) in one step,
 * with the same answers: 0, -ENOMEM, -EINVAL or -EBUSY, nothing changed on
 * failure. The reserve is a call only when the node array is full or
 * fewer than two overflow blocks are free; a piece in one or two group
 * lines (most) is checked and cleared with the same masks.
 */
static __always_inline int xi_free_checked(struct xindex *x, uint64_t start, uint64_t len)
{
	uint64_t from = start - x->base, off = from & 63, *bits = NULL;
	int err;

	if (len <= x->nexact) {	/* the leaf word its bin insert writes, most often */
		bits = bin_bits(x, (uint32_t)len);
		__builtin_prefetch(&bits[from >> 12], 1);
	}
	if (unlikely(x->free_extents >= x->ncap || x->ovf_nfree < 2)) {
		err = xi_reserve_free(x, start, len);
		if (err)
			return err;
	}
	if (likely(off + len <= 128)) {
		uint64_t m = off + len <= 64 ? xi_word_bits(from, len) : ~0ull << off;
		uint64_t m2 = off + len <= 64 ? 0 : xi_word_bits(0, off + len - 64);
		uint64_t *w = &x->allocated[XI_WORD(from)];

		/* -EINVAL wins over -EBUSY */
		if ((w[0] & m) != m || (m2 && (w[8] & m2) != m2))
			return -EINVAL;
		if ((w[1] & m) || (m2 && (w[9] & m2)))
			return -EBUSY;
		free_piece(x, start, len, w, m, m2, bits);
		return 0;
	}
	err = xi_check_allocated(x, start, len);
	if (unlikely(err))
		return err;
	xi_free_piece(x, start, len);
	return 0;
}

#endif /* HKV_EXTENT_H */
