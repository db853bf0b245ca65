// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * extent_group.c - the per-64-page group lines of a free-extent index: the
 * allocated and in_unit words (bit ranges, the free check) and the tags
 * (the node id of each page that starts or ends a free extent), up to
 * XI_GSLOTS per line, in an overflow block of 64 ids when a group is
 * crowded. The hot steps are static inline in extent.h.
 */
#include "extent.h"

/* ---- page bitmaps ------------------------------------------------------ */

/* mask of bits [lo, hi) of one word, 0 <= lo < hi <= 64 */
static inline uint64_t word_mask(unsigned lo, unsigned hi)
{
	uint64_t m = hi == 64 ? ~0ull : (1ull << hi) - 1;

	return m & ~((1ull << lo) - 1);
}

/**
 * xi_test_range_slow() - test a bit range that spans words
 * @bits: the bitmap
 * @from: first bit
 * @len: number of bits
 * @all_set: true to test that all are set, false that all are clear
 *
 * Return: whether they are.
 */
bool xi_test_range_slow(const uint64_t *bits, uint64_t from, uint64_t len, bool all_set)
{
	uint64_t end = from + len;

	while (from < end) {
		unsigned lo = from & 63;
		unsigned hi = (end - (from & ~63ull)) >= 64 ? 64 : (unsigned)(end & 63);
		uint64_t m = word_mask(lo, hi), w = bits[XI_WORD(from)];

		if (all_set ? (w & m) != m : (w & m) != 0)
			return false;
		from = (from & ~63ull) + hi;
	}
	return true;
}

/**
 * xi_set_range_slow() - set or clear a bit range that spans words
 * @bits: the bitmap
 * @from: first bit
 * @len: number of bits
 * @set: true to set, false to clear
 */
void xi_set_range_slow(uint64_t *bits, uint64_t from, uint64_t len, bool set)
{
	uint64_t end = from + len, w = from >> 6, last = (end - 1) >> 6;
	uint64_t head = ~0ull << (from & 63), tail = ~0ull >> (63 - ((end - 1) & 63));

	if (!len)
		return;
	if (w == last)
		head &= tail;
	xi_bits_store(&bits[8 * w], set ? bits[8 * w] | head : bits[8 * w] & ~head);
	if (w == last)
		return;
	for (w++; w < last; w++)	/* whole words: one store each */
		xi_bits_store(&bits[8 * w], set ? ~0ull : 0);
	xi_bits_store(&bits[8 * last], set ? bits[8 * last] | tail : bits[8 * last] & ~tail);
}

/* ---- tags ---------------------------------------------------------------- */

uint32_t xi_tag(const struct xindex *x, uint32_t p)
{
	const struct xgroup *g;

	if (p >= x->npages)
		return XI_NIL;
	g = &x->grp[p >> 6];
	if (g->blk)
		return g->keys & (1ull << (p & 63)) ? x->ovf[g->blk - 1][p & 63] : XI_NIL;
	return key_find(g->keys & KEY_OFF, (p & 63) + 1) < 0 ? XI_NIL : tag_get(x, p);
}

/* the pages of a group that carry tags (starts only: those that start) */
static uint64_t group_tagged(const struct xindex *x, uint64_t group, bool starts)
{
	const struct xgroup *g = &x->grp[group];
	uint64_t m = 0;

	if (g->blk)
		return starts ? g->starts : g->keys;
	for (int i = 0; i < XI_GSLOTS; i++) {
		unsigned k = (g->keys >> (8 * i)) & 0xff;

		if (k && (!starts || (k & XI_KEY_START)))
			m |= 1ull << ((k & 0x7f) - 1);
	}
	return m;
}

uint64_t xi_tagged(const struct xindex *x, uint64_t group)
{
	return group_tagged(x, group, false);
}

uint64_t xi_tagged_starts(const struct xindex *x, uint64_t group)
{
	return group_tagged(x, group, true);
}

/* a group's slots are full: its tags move to an overflow block (reserved) */
static void g_spill(struct xindex *x, struct xgroup *g)
{
	uint32_t blk = x->ovf_free, *o = x->ovf[blk];
	uint64_t m = 0, st = 0;

	x->ovf_free = o[0];
	x->ovf_nfree--;
	for (int i = 0; i < XI_GSLOTS; i++) {
		unsigned k = (g->keys >> (8 * i)) & 0xff, b = (k & 0x7f) - 1;

		o[b] = g->id[i];	/* full: every key is set */
		m |= 1ull << b;
		if (k & XI_KEY_START)
			st |= 1ull << b;
	}
	g->keys = m;
	g->starts = st;
	g->blk = blk + 1;
}

/* few tags again: back into the line, the block freed */
static void g_unspill(struct xindex *x, struct xgroup *g)
{
	uint32_t blk = g->blk - 1, *o = x->ovf[blk];
	uint64_t m = g->keys, st = g->starts, keys = 0;

	for (int i = 0; m; i++, m &= m - 1) {
		unsigned b = (unsigned)__builtin_ctzll(m);

		g->id[i] = o[b];
		keys |= (uint64_t)((b + 1) | (st >> b & 1 ? XI_KEY_START : 0)) << (8 * i);
	}
	g->keys = keys;
	g->blk = 0;
	o[0] = x->ovf_free;
	x->ovf_free = blk;
	x->ovf_nfree++;
}

/* tag page p with id; start: p is the first page of its extent */
void tag_set(struct xindex *x, uint32_t p, uint32_t id, bool start)
{
	struct xgroup *g = &x->grp[p >> 6];
	unsigned b = p & 63;
	int i;

	if (likely(!g->blk)) {
		i = key_find(g->keys & KEY_OFF, b + 1);
		if (i < 0)
			i = key_find(g->keys, 0);	/* an empty slot */
		if (likely(i >= 0)) {
			g->keys = key_put(g->keys, i, (b + 1) | (start ? XI_KEY_START : 0));
			g->id[i] = id;
			return;
		}
		g_spill(x, g);
	}
	x->ovf[g->blk - 1][b] = id;
	g->keys |= 1ull << b;
	g->starts = start ? g->starts | 1ull << b : g->starts & ~(1ull << b);
}

void tag_clear(struct xindex *x, uint32_t p)
{
	struct xgroup *g = &x->grp[p >> 6];
	unsigned b = p & 63;
	int i;

	if (likely(!g->blk)) {
		i = key_find(g->keys & KEY_OFF, b + 1);
		if (i >= 0)
			g->keys = key_put(g->keys, i, 0);
		return;
	}
	g->keys &= ~(1ull << b);
	g->starts &= ~(1ull << b);
	if (__builtin_popcountll(g->keys) <= XI_GSLOTS / 2)	/* hysteresis */
		g_unspill(x, g);
}

/* ---- the free check ------------------------------------------------------ */

/**
 * xi_check_allocated() - may these pages be freed?
 * @x: the index
 * @start: absolute first page, inside the space
 * @len: pages, inside the space
 *
 * Return: 0, -EINVAL if a page is free, -EBUSY if a page is in a unit.
 */
int xi_check_allocated(const struct xindex *x, uint64_t start, uint64_t len)
{
	uint64_t from = start - x->base, end = from + len, w = from >> 6, last = (end - 1) >> 6;
	uint64_t m = ~0ull << (from & 63), tail = ~0ull >> (63 - ((end - 1) & 63)), busy = 0;
	const uint64_t *a = x->allocated;

	/* one pass over both interleaved maps; -EINVAL wins over -EBUSY */
	if (!len)
		return 0;
	for (; w <= last; w++, m = ~0ull) {
		if (w == last)
			m &= tail;
		if ((a[8 * w] & m) != m)
			return -EINVAL;
		busy |= a[8 * w + 1] & m;
	}
	return busy ? -EBUSY : 0;
}

/**
 * xi_mark() - set or clear allocated bits of absolute pages
 * @x: the index
 * @start: absolute first page
 * @len: pages
 * @allocated: the new state
 */
void xi_mark(struct xindex *x, uint64_t start, uint64_t len, bool allocated)
{
	xi_set_range(x->allocated, start - x->base, len, allocated);
}
