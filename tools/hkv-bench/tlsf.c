// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tlsf.c - a good-fit segregated allocator of the TLSF / OffsetAllocator
 * family, written as fast as that design allows, to hold hugekv's core
 * against: 256 size bins on an 8-bit float (5 exponent bits, 3 mantissa
 * bits: 8 linear bins per power of two), a two-level bitmap of non-empty
 * bins (one 32-bit word over 32 top bins, one byte per top bin), requests
 * rounded up to the next bin so any block of the found bin fits (one
 * bit-scan per level, no list walk), blocks split exactly (no page
 * wasted), neighbour links between address-adjacent blocks for O(1)
 * coalescing, free by handle, no validation of what is freed, no lock.
 *
 * When no block of the rounded-up class exists, the head of the request's
 * own (round-down) bin is tried, then the answer is assembled from the
 * largest blocks (each block one extent) so every request of a churn that
 * fits in the free pages succeeds, as it does for hugekv.
 *
 * tlsf_create_regions() makes the same allocator keep the order hugekv's
 * contract asks for at region granularity: each bin holds one list per
 * region (the finest power of two of pages that makes at most 64 regions)
 * and a bitmap of its non-empty ones, and a bin's block is the head of
 * its lowest-addressed region's list (the most recently filed there).
 * What that order costs the family's own design is what it shows.
 *
 * Two interfaces: tlsf_*() with handles kept by the caller (the way
 * OffsetAllocator is used; family.c runs it so), and bl_tlsf for the
 * replay harness, which names allocations by extent only: it finds the
 * handle in a page -> block map (first and last page of each used block).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"

#define TL_MBITS	3
#define TL_MVAL		(1u << TL_MBITS)
#define TL_MMASK	(TL_MVAL - 1)
#define TL_TOP		32
#define TL_BINS		(TL_TOP * TL_MVAL)

/* size -> bin, rounding down: a block is filed where every request that
 * searches from this bin upward... fits after round-up (see bin_up) */
static inline uint32_t bin_down(uint32_t size)
{
	uint32_t hb, sh;

	if (size < TL_MVAL)
		return size;
	hb = 31 - (uint32_t)__builtin_clz(size);
	sh = hb - TL_MBITS;
	return ((sh + 1) << TL_MBITS) + ((size >> sh) & TL_MMASK);
}

/* size -> the lowest bin whose every block holds size pages */
static inline uint32_t bin_up(uint32_t size)
{
	uint32_t hb, sh, m;

	if (size < TL_MVAL)
		return size;
	hb = 31 - (uint32_t)__builtin_clz(size);
	sh = hb - TL_MBITS;
	m = (size >> sh) & TL_MMASK;
	if (size & ((1u << sh) - 1))
		m++;			/* may carry into the exponent: fine */
	return ((sh + 1) << TL_MBITS) + m;
}

static int create(uint64_t npages, bool regions, void **st)
{
	struct tlsf *t;

	if (!npages || npages > UINT32_MAX - 1)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->npages = (uint32_t)npages;
	/* every page a block is the worst case; untouched capacity costs no RAM */
	t->cap = t->npages + 1;
	t->node = malloc((size_t)t->cap * sizeof(*t->node));
	t->stack = malloc((size_t)t->cap * sizeof(*t->stack));
	if (!t->node || !t->stack) {
		tlsf_destroy(t);
		return -ENOMEM;
	}
	memset(t->head, 0xff, sizeof(t->head));
	if (regions) {
		while (((t->npages - 1) >> t->rshift) >= 64)
			t->rshift++;
		t->rhead = malloc(TL_BINS * 64 * sizeof(*t->rhead));
		if (!t->rhead) {
			tlsf_destroy(t);
			return -ENOMEM;
		}
		memset(t->rhead, 0xff, TL_BINS * 64 * sizeof(*t->rhead));
	}
	t->top = 0;
	t->nfree_ids = 0;
	t->used_ids = 0;
	/* one block: the whole space */
	t->node[0] = (struct tl_node){ .off = 0, .size = t->npages, .bprev = TL_NIL,
				      .bnext = TL_NIL, .nprev = TL_NIL, .nnext = TL_NIL };
	t->used_ids = 1;
	t->free_pages = t->npages;
	tlsf_insert(t, 0);
	*st = t;
	return 0;
}

int tlsf_create(uint64_t npages, void **st)
{
	return create(npages, false, st);
}

int tlsf_create_regions(uint64_t npages, void **st)
{
	return create(npages, true, st);
}

void tlsf_destroy(void *st)
{
	struct tlsf *t = st;

	if (!t)
		return;
	free(t->node);
	free(t->stack);
	free(t->map);
	free(t->rhead);
	free(t);
}

static inline uint32_t node_new(struct tlsf *t)
{
	if (t->nfree_ids)
		return t->stack[--t->nfree_ids];
	if (t->used_ids > t->peak_ids)
		t->peak_ids = t->used_ids;
	return t->used_ids++;
}

static inline void node_del(struct tlsf *t, uint32_t id)
{
	t->stack[t->nfree_ids++] = id;
}

/* the list a free block at off of bin b is on */
static inline uint32_t *list_of(struct tlsf *t, uint32_t b, uint32_t off)
{
	return t->rhead ? &t->rhead[b * 64 + (off >> t->rshift)] : &t->head[b];
}

/* bin b's block to take: its head, or its lowest region's */
static inline uint32_t bin_head(const struct tlsf *t, uint32_t b)
{
	if (!t->rhead)
		return t->head[b];
	return t->rmask[b] ? t->rhead[b * 64 + (uint32_t)__builtin_ctzll(t->rmask[b])] : TL_NIL;
}

void tlsf_insert(struct tlsf *t, uint32_t id)
{
	struct tl_node *n = &t->node[id];
	uint32_t b = bin_down(n->size), *hp = list_of(t, b, n->off), h = *hp;

	n->used = 0;
	n->bin = b;
	n->bprev = TL_NIL;
	n->bnext = h;
	if (h != TL_NIL)
		t->node[h].bprev = id;
	*hp = id;
	if (t->rhead)
		t->rmask[b] |= 1ull << (n->off >> t->rshift);
	t->leaf[b >> TL_MBITS] |= (uint8_t)(1u << (b & TL_MMASK));
	t->top |= 1u << (b >> TL_MBITS);
}

static inline void tlsf_unlink(struct tlsf *t, uint32_t id)
{
	struct tl_node *n = &t->node[id];
	uint32_t b = n->bin, *hp = list_of(t, b, n->off);	/* off stays while filed */

	if (n->bprev != TL_NIL)
		t->node[n->bprev].bnext = n->bnext;
	else
		*hp = n->bnext;
	if (n->bnext != TL_NIL)
		t->node[n->bnext].bprev = n->bprev;
	if (t->rhead && *hp == TL_NIL)
		t->rmask[b] &= ~(1ull << (n->off >> t->rshift));
	if (bin_head(t, b) == TL_NIL &&
	    !(t->leaf[b >> TL_MBITS] &= (uint8_t)~(1u << (b & TL_MMASK))))
		t->top &= ~(1u << (b >> TL_MBITS));
}

/* first non-empty bin >= b, or TL_BINS */
static inline uint32_t find_from(const struct tlsf *t, uint32_t b)
{
	uint32_t top = b >> TL_MBITS, m;

	if (b >= TL_BINS)
		return TL_BINS;
	m = t->leaf[top] & (0xffu << (b & TL_MMASK)) & 0xffu;
	if (m)
		return (top << TL_MBITS) + (uint32_t)__builtin_ctz(m);
	m = top + 1 < TL_TOP ? t->top & (~0u << (top + 1)) : 0;
	if (!m)
		return TL_BINS;
	top = (uint32_t)__builtin_ctz(m);
	return (top << TL_MBITS) + (uint32_t)__builtin_ctz(t->leaf[top]);
}

/* highest non-empty bin, or TL_BINS */
static inline uint32_t find_last(const struct tlsf *t)
{
	uint32_t top;

	if (!t->top)
		return TL_BINS;
	top = 31 - (uint32_t)__builtin_clz(t->top);
	return (top << TL_MBITS) + 31 - (uint32_t)__builtin_clz(t->leaf[top]);
}

/* take n pages from the front of free block id (n <= its size) */
static inline uint32_t take(struct tlsf *t, uint32_t id, uint32_t n)
{
	struct tl_node *b = &t->node[id];
	uint32_t rest = b->size - n;

	tlsf_unlink(t, id);
	b->used = 1;
	if (rest) {
		uint32_t r = node_new(t);
		struct tl_node *rn = &t->node[r];

		b = &t->node[id];
		*rn = (struct tl_node){ .off = b->off + n, .size = rest, .nprev = id,
					.nnext = b->nnext };
		if (b->nnext != TL_NIL)
			t->node[b->nnext].nprev = r;
		b->nnext = r;
		b->size = n;
		tlsf_insert(t, r);
	}
	t->free_pages -= n;
	return id;
}

/* the biggest block, all of it or n pages of it */
static uint32_t take_largest(struct tlsf *t, uint32_t n)
{
	uint32_t b = find_last(t), id = bin_head(t, b);

	/* blocks of the top bin differ in size; its head is good enough */
	return take(t, id, HKV_BENCH_MIN(n, t->node[id].size));
}

/**
 * tlsf_alloc() - n pages
 * @st: the allocator
 * @n: pages (> 0)
 * @ext: receives the extents (one per block)
 * @max: room in @ext
 * @h: receives one handle per extent
 *
 * Return: extents, or -ENOMEM / -ENOSPC (nothing taken).
 */
int tlsf_alloc(void *st, uint32_t n, struct hkv_extent *ext, unsigned max, uint32_t *h)
{
	struct tlsf *t = st;
	uint32_t b, id;
	unsigned k = 0;

	if (unlikely_tl(n > t->free_pages || !n || !max))
		return !n ? -EINVAL : !max ? -ENOSPC : -ENOMEM;
	b = find_from(t, bin_up(n));
	if (likely_tl(b < TL_BINS)) {
		id = take(t, bin_head(t, b), n);
		goto one;
	}
	id = bin_head(t, bin_down(n));	/* its own class may still hold a fit */
	if (id != TL_NIL && t->node[id].size >= n) {
		id = take(t, id, n);
		goto one;
	}
	/* assemble from the largest blocks, the last one a good fit if any */
	while (n) {
		b = find_from(t, bin_up(n));
		id = b < TL_BINS ? take(t, bin_head(t, b), n) : take_largest(t, n);
		if (k == max) {		/* rare: give it all back */
			tlsf_free_one(t, id);
			while (k--)
				tlsf_free_one(t, h[k]);
			return -ENOSPC;
		}
		ext[k] = (struct hkv_extent){ t->node[id].off, t->node[id].size };
		h[k++] = id;
		n -= t->node[id].size;
	}
	return (int)k;
one:
	ext[0] = (struct hkv_extent){ t->node[id].off, n };
	h[0] = id;
	return 1;
}

/* free one used block by handle, merging with free neighbours */
void tlsf_free_one(struct tlsf *t, uint32_t id)
{
	struct tl_node *n = &t->node[id];
	uint32_t p = n->nprev, q = n->nnext;

	t->free_pages += n->size;
	if (p != TL_NIL && !t->node[p].used) {
		struct tl_node *pn = &t->node[p];

		tlsf_unlink(t, p);
		n->off = pn->off;
		n->size += pn->size;
		n->nprev = pn->nprev;
		if (pn->nprev != TL_NIL)
			t->node[pn->nprev].nnext = id;
		node_del(t, p);
	}
	if (q != TL_NIL && !t->node[q].used) {
		struct tl_node *qn = &t->node[q];

		tlsf_unlink(t, q);
		n->size += qn->size;
		n->nnext = qn->nnext;
		if (qn->nnext != TL_NIL)
			t->node[qn->nnext].nprev = id;
		node_del(t, q);
	}
	tlsf_insert(t, id);
}

/**
 * tlsf_shrink() - keep the first keep pages of a used block, free the rest
 * @st: the allocator
 * @id: the block's handle
 * @keep: pages kept, 0 < keep < its size
 */
void tlsf_shrink(void *st, uint32_t id, uint32_t keep)
{
	struct tlsf *t = st;
	struct tl_node *b = &t->node[id];
	uint32_t r = node_new(t);

	b = &t->node[id];
	t->node[r] = (struct tl_node){ .off = b->off + keep, .size = b->size - keep,
				       .nprev = id, .nnext = b->nnext, .used = 1 };
	if (b->nnext != TL_NIL)
		t->node[b->nnext].nprev = r;
	b->nnext = r;
	b->size = keep;
	tlsf_free_one(t, r);
}

size_t tlsf_metadata_bytes(const struct tlsf *t)
{
	return (size_t)t->peak_ids * (sizeof(struct tl_node) + sizeof(uint32_t)) +
	       sizeof(*t) + (t->rhead ? TL_BINS * 64 * sizeof(*t->rhead) : 0);
}

/* ---- behind the replay harness: handles found from page numbers ---------- */
static int bt_create(uint64_t npages, void **st)
{
	struct tlsf *t;
	int err = tlsf_create(npages, st);

	if (err)
		return err;
	t = *st;
	t->map = malloc((size_t)t->npages * sizeof(*t->map));
	if (!t->map) {
		tlsf_destroy(t);
		return -ENOMEM;
	}
	return 0;
}

static int bt_alloc(void *st, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	struct tlsf *t = st;
	uint32_t h[64], *hp = max <= 64 ? h : malloc(max * sizeof(*hp));
	int k;

	if (!hp)
		return -ENOMEM;
	k = tlsf_alloc(t, n, ext, max, hp);
	for (int i = 0; i < k; i++) {
		t->map[ext[i].start] = hp[i];
		t->map[ext[i].start + ext[i].len - 1] = hp[i];
	}
	if (hp != h)
		free(hp);
	return k;
}

/* whole blocks, or a tail of a block (a partial free) */
static int bt_free(void *st, const struct hkv_extent *ext, unsigned n)
{
	struct tlsf *t = st;

	for (unsigned i = 0; i < n; i++) {
		uint32_t last = (uint32_t)(ext[i].start + ext[i].len - 1), id = t->map[last];
		struct tl_node *b = &t->node[id];

		if (b->off == ext[i].start) {
			tlsf_free_one(t, id);
			continue;
		}
		tlsf_shrink(t, id, (uint32_t)(ext[i].start - b->off));
		t->map[ext[i].start - 1] = id;
	}
	return 0;
}

const struct balloc_ops bl_tlsf = {
	.name = "tlsf",
	.create = bt_create,
	.destroy = tlsf_destroy,
	.alloc = bt_alloc,
	.free = bt_free,
};
