// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * extent_bins.c - the exact bins of a free-extent index, out of line: the
 * in-bin tests that walk a group's tags, the bitmap walks that climb
 * levels, a removal not found by a pick, the largest non-empty bin. The
 * steps of a pick, a take and a plain free are static inline in extent.h.
 */
#include "extent.h"

/* does group g hold the start of an extent of bin other than skip? */
bool group_has_other(const struct xindex *x, uint64_t g, uint32_t bin, uint32_t skip)
{
	const struct xgroup *gr = &x->grp[g];

	if (gr->blk) {
		for (uint64_t m = gr->starts; m; m &= m - 1) {
			unsigned o = (unsigned)__builtin_ctzll(m);
			uint32_t id = x->ovf[gr->blk - 1][o];

			if (id != skip && starts_bin(x, gr, o, id, bin))
				return true;
		}
		return false;
	}
	for (uint64_t f = gr->keys & BYTES(XI_KEY_START); f; f &= f - 1) {
		int i = __builtin_ctzll(f) >> 3;
		unsigned o = ((gr->keys >> (8 * i)) & 0x7f) - 1;
		uint32_t id = gr->id[i];

		if (id != skip && starts_bin(x, gr, o, id, bin))
			return true;
	}
	return false;
}

/* group_lowest() of a crowded group: its tags in the overflow block */
void group_lowest_crowded(const struct xindex *x, uint64_t g, uint32_t bin,
			  struct xpick *pick)
{
	const struct xgroup *gr = &x->grp[g];
	uint32_t n = 0;

	pick->id = XI_NIL;
	for (uint64_t m = gr->starts; m; m &= m - 1) {
		unsigned o = (unsigned)__builtin_ctzll(m);
		uint32_t id = x->ovf[gr->blk - 1][o];

		if (starts_bin(x, gr, o, id, bin) && !n++) {
			pick->id = id;
			pick->start = (uint32_t)(g << 6) + o;
		}
	}
	pick->len = bin;
	pick->more = n > 1;
	pick->slot = 0;		/* no key slots: tags_clear_pick() looks */
}

void bits_clear(const struct xindex *x, uint64_t *bits, uint64_t i)
{
	for (unsigned l = 0; l < x->bin_levels; l++, i >>= 6) {
		uint64_t *w = &bits[x->bin_off[l] + (i >> 6)];

		*w &= ~(1ull << (i & 63));
		if (*w)
			return;
	}
}

/* clear leaf bit i, the lowest set one, and return the new lowest (or
 * XI_NIL): i's word at each level held no lower bit, so the first level
 * whose word stays non-zero holds the next one, found down its lowest bits
 * without starting again from the top */
uint32_t bits_clear_lowest_up(const struct xindex *x, uint64_t *bits, uint64_t i,
			      unsigned from)
{
	for (unsigned l = from; l < x->bin_levels; l++, i >>= 6) {
		uint64_t *w = &bits[x->bin_off[l] + (i >> 6)];

		*w &= ~(1ull << (i & 63));
		if (*w) {
			i = (i & ~63ull) + (uint64_t)__builtin_ctzll(*w);
			while (l-- > 0)
				i = (i << 6) + (uint64_t)__builtin_ctzll(bits[x->bin_off[l] + i]);
			return (uint32_t)i;
		}
	}
	return XI_NIL;
}

/* take free extent id, [start, +len), out of its bin; the node is written,
 * not read */
void bin_remove(struct xindex *x, uint32_t id, uint32_t start, uint32_t len)
{
	uint32_t g = start >> 6;
	/* the pick just found it, and whether its group holds another */
	bool more = id == x->hint.id ? x->hint.more : group_has_other(x, g, len, id);

	bin_del(x, start, len, more);
	x->node[id].parent = XI_NIL;	/* its tags may stay a moment (a free) */
}

/* largest non-empty bin, exact or long, < n (n <= nlong + 1), or 0 */
uint32_t bin_last_below(const struct xindex *x, uint32_t n)
{
	uint32_t w;
	uint64_t m, words;

	if (n == 0)
		return 0;
	n--;
	w = n >> 6;
	m = x->bin_mask[w] & ((n & 63) == 63 ? ~0ull : (2ull << (n & 63)) - 1);
	if (!m) {
		words = x->bin_words & ((1ull << w) - 1);
		if (!words)
			return 0;
		w = 63 - (uint32_t)__builtin_clzll(words);
		m = x->bin_mask[w];
	}
	return (w << 6) + 63 - (uint32_t)__builtin_clzll(m);
}
