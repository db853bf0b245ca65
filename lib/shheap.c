// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * shheap.c - the heap inside a named pool's bookkeeping file. Every
 * structure of a named pool (lanes, extent indexes, units, LRU) is allocated
 * here instead of from malloc, so that it lives in the file and every
 * attached process sees it at the same address (named.c maps the file at
 * the address its creator recorded: pointers stay valid).
 *
 * Power-of-two size classes from 128 bytes, each with a free list; new
 * blocks come from a bump pointer. A block starts with a 64-byte header
 * (its class and a check word), so payloads are 64-byte aligned like the
 * cache-line aligned structures they hold. Only whole pages the payloads
 * touch take memory: the file is sparse.
 *
 * Every change is one compare-and-swap of a word (a list head, the bump
 * pointer), made last: a process killed in the middle of an allocation or
 * free leaks at most that block, never breaks a list. A new block's header
 * is written before the bump pointer passes it, so the blocks below the
 * bump pointer can always be walked (shheap_sweep()). Lock-free: the
 * holders of a named pool's lane locks allocate at once (extent indexes
 * grow); shheap_sweep() alone needs every lock of the pool held.
 */
#include "internal.h"

#define SHBLK_HDR	64
#define SHBLK_MAGIC	0x68686b76626c6b00ull	/* "hhkvblk" + class */
#define SHBLK_FREED	0x6868667265656400ull

struct shblk {
	uint64_t magic;		/* SHBLK_MAGIC | class, SHBLK_FREED | class;
				 * relaxed atomics: a stale bump tries it */
	uint64_t next;		/* free list */
	uint64_t bytes;		/* asked for (payload) */
	uint64_t pad[5];
};

/**
 * shheap_init() - an empty heap over [base, base + len)
 * @h: the heap's state (inside the file, outside the range)
 * @base: first byte, 64-byte aligned
 * @len: bytes
 */
void shheap_init(struct shheap *h, void *base, uint64_t len)
{
	memset(h, 0, sizeof(*h));
	h->base = (uint64_t)(uintptr_t)base;
	h->top = h->base;
	h->end = h->base + len;
}

static unsigned shheap_class(uint64_t bytes)
{
	uint64_t need = bytes + SHBLK_HDR;
	unsigned c = SHHEAP_MIN_CLASS;

	while (c < SHHEAP_CLASSES && (1ull << c) < need)
		c++;
	return c;
}

/* a free list head: a block's address and, above it, a count of the
 * head's changes, so that a pop whose head was popped and pushed again
 * in between fails its compare-and-swap (the ABA case) */
#define SHHEAP_ADDR	((1ull << 48) - 1)
#define SHHEAP_TAG1	(1ull << 48)

/* the head block of class c's free list, unlinked; NULL when it is empty */
static struct shblk *shheap_pop(struct shheap *h, unsigned c)
{
	uint64_t old = __atomic_load_n(&h->free_head[c], __ATOMIC_ACQUIRE);

	for (;;) {
		struct shblk *b = (struct shblk *)(uintptr_t)(old & SHHEAP_ADDR);
		uint64_t next;

		if (!b)
			return NULL;
		/* b may be taken meanwhile: then the swap below fails */
		next = HKV_LOAD(&b->next) & SHHEAP_ADDR;
		if (__atomic_compare_exchange_n(&h->free_head[c], &old,
						next | ((old + SHHEAP_TAG1) & ~SHHEAP_ADDR),
						false, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
			return b;
	}
}

/*
 * A new block of class c at the bump pointer. Its header is claimed with a
 * compare-and-swap from zero (memory above the bump pointer was never
 * written) before the bump pointer passes it: a block below the pointer is
 * always walkable. A caller that finds a header claimed above the pointer
 * (its claimer is between its two swaps, or was killed there) moves the
 * pointer past it for it, then tries the next place.
 */
static struct shblk *shheap_bump(struct shheap *h, unsigned c)
{
	uint64_t size = 1ull << c, at = __atomic_load_n(&h->top, __ATOMIC_ACQUIRE);

	for (;;) {
		struct shblk *b = (struct shblk *)(uintptr_t)at;
		uint64_t mine = SHBLK_MAGIC | c, seen = 0;

		if (size > h->end - at)
			return NULL;
		if (__atomic_compare_exchange_n(&b->magic, &seen, mine, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			uint64_t want = at;

			/* fails only when a helper moved it past this block */
			__atomic_compare_exchange_n(&h->top, &want, at + size, false,
						    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
			return b;
		}
		if ((seen & ~0xffull) == SHBLK_MAGIC && (seen & 0xff) >= SHHEAP_MIN_CLASS &&
		    (seen & 0xff) < SHHEAP_CLASSES) {
			uint64_t want = at;

			__atomic_compare_exchange_n(&h->top, &want, at + (1ull << (seen & 0xff)),
						    false, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
		}
		at = __atomic_load_n(&h->top, __ATOMIC_ACQUIRE);
		if ((uint64_t)(uintptr_t)b == at) {	/* not a header: unreadable */
			hkv_log(HKV_LOG_ERR, "named pool heap: block at %#llx unreadable",
				(unsigned long long)at);
			return NULL;
		}
	}
}

/**
 * shheap_alloc() - a zeroed block
 * @h: the heap
 * @bytes: payload size
 *
 * Lock-free (holders of different locks of one pool allocate at once):
 * a free list is popped, or the bump pointer moved, by one compare-and-swap.
 *
 * Return: the payload (64-byte aligned), or NULL when the heap is full.
 */
void *shheap_alloc(struct shheap *h, uint64_t bytes)
{
	unsigned c = shheap_class(bytes);
	struct shblk *b;
	uint64_t size;

	if (c >= SHHEAP_CLASSES)
		return NULL;
	size = 1ull << c;
	b = shheap_pop(h, c);
	if (b) {
		if ((HKV_LOAD(&b->magic) & ~0xffull) != SHBLK_FREED) {
			hkv_log(HKV_LOG_ERR, "named pool heap: free list %u broken", c);
			return NULL;
		}
		memset((char *)b + SHBLK_HDR, 0, HKV_MIN(bytes, size - SHBLK_HDR));
		HKV_STORE(&b->magic, SHBLK_MAGIC | c);
	} else {
		b = shheap_bump(h, c);		/* never touched: zero */
		if (!b)
			return NULL;
	}
	HKV_STORE(&b->next, 0);
	b->bytes = bytes;
	HKV_ADD(&h->used, size);
	return (char *)b + SHBLK_HDR;
}

/* the block of a payload, or NULL for a pointer that is none */
static struct shblk *shheap_blk(const struct shheap *h, const void *p)
{
	struct shblk *b = (struct shblk *)((char *)p - SHBLK_HDR);

	if (!shheap_owns(h, p) || (HKV_LOAD(&b->magic) & ~0xffull) != SHBLK_MAGIC)
		return NULL;
	return b;
}

/**
 * shheap_free() - give a block back
 * @h: the heap
 * @p: a payload of shheap_alloc(), or NULL
 */
void shheap_free(struct shheap *h, void *p)
{
	struct shblk *b;
	uint64_t old;
	unsigned c;

	if (!p)
		return;
	b = shheap_blk(h, p);
	if (!b) {
		hkv_log(HKV_LOG_ERR, "named pool heap: free of %p, not a block", p);
		return;
	}
	c = (unsigned)(HKV_LOAD(&b->magic) & 0xff);
	HKV_STORE(&b->magic, SHBLK_FREED | c);
	HKV_ADD(&h->used, -(1ull << c));
	old = HKV_LOAD(&h->free_head[c]);
	do	/* the one change: the head's swap (release: the header with it) */
		HKV_STORE(&b->next, old & SHHEAP_ADDR);
	while (!__atomic_compare_exchange_n(&h->free_head[c], &old,
					    (uint64_t)(uintptr_t)b |
					    ((old + SHHEAP_TAG1) & ~SHHEAP_ADDR),
					    false, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/**
 * shheap_realloc() - realloc() inside the heap
 * @h: the heap
 * @p: a payload, or NULL
 * @bytes: the new size
 *
 * Return: the new payload (the old one freed; new bytes zeroed), or NULL
 * (@p unchanged).
 */
void *shheap_realloc(struct shheap *h, void *p, uint64_t bytes)
{
	struct shblk *b = p ? shheap_blk(h, p) : NULL;
	void *n;

	if (p && !b)
		return NULL;
	if (b && shheap_class(bytes) == (HKV_LOAD(&b->magic) & 0xff)) {
		if (bytes > b->bytes)
			memset((char *)p + b->bytes, 0, bytes - b->bytes);
		b->bytes = bytes;
		return p;
	}
	n = shheap_alloc(h, bytes);
	if (!n)
		return NULL;
	if (b)
		memcpy(n, p, HKV_MIN(bytes, b->bytes));
	shheap_free(h, p);
	return n;
}

/**
 * shheap_is_block() - is @p the payload of an allocated block?
 * @h: the heap
 * @p: any pointer
 *
 * Return: true if so (what recovery asks of a pointer it found).
 */
bool shheap_is_block(const struct shheap *h, const void *p)
{
	return p && ((uintptr_t)p & 63) == 0 && shheap_blk(h, p) &&
	       (uint64_t)(uintptr_t)p < HKV_LOAD(&h->top);
}

/**
 * shheap_sweep() - free every block but those kept, whatever the lists say
 * @h: the heap
 * @keep: true for a payload that stays allocated
 * @ctx: passed to @keep
 *
 * Walks the blocks below the bump pointer and makes new free lists of all
 * the others, published at the end (a kill midway leaks blocks at most:
 * a later sweep takes them back). Recovery's way to drop every derived
 * structure at once, without freeing through pointers a killed process
 * may have left stale (a double free there could hand a block out twice).
 *
 * Return: the bytes of the blocks kept.
 */
uint64_t shheap_sweep(struct shheap *h, bool (*keep)(void *ctx, const void *payload),
		      void *ctx)
{
	uint64_t heads[SHHEAP_CLASSES] = { 0 }, used = 0, top = HKV_LOAD(&h->top);
	uint64_t at = h->base;

	while (at < top) {
		struct shblk *b = (struct shblk *)(uintptr_t)at;
		uint64_t magic = HKV_LOAD(&b->magic);
		unsigned c = (unsigned)(magic & 0xff);
		uint64_t kind = magic & ~0xffull;

		if ((kind != SHBLK_MAGIC && kind != SHBLK_FREED) || c < SHHEAP_MIN_CLASS ||
		    c >= SHHEAP_CLASSES || (1ull << c) > top - at) {
			hkv_log(HKV_LOG_ERR, "named pool heap: block at %#llx unreadable; the "
				"rest is left as it is", (unsigned long long)at);
			break;
		}
		if (kind == SHBLK_MAGIC && keep(ctx, (char *)b + SHBLK_HDR)) {
			used += 1ull << c;
		} else {
			HKV_STORE(&b->magic, SHBLK_FREED | c);
			HKV_STORE(&b->next, heads[c]);
			heads[c] = at;
		}
		at += 1ull << c;
	}
	/* the tags go on counting: a stale pop of a killed caller fails */
	for (unsigned c = 0; c < SHHEAP_CLASSES; c++)
		HKV_STORE(&h->free_head[c], heads[c] | ((HKV_LOAD(&h->free_head[c]) +
							 SHHEAP_TAG1) & ~SHHEAP_ADDR));
	HKV_STORE(&h->used, used);
	return used;
}

/**
 * shheap_owns() - is @p inside the heap's range?
 * @h: the heap
 * @p: any pointer
 *
 * Return: true if so.
 */
bool shheap_owns(const struct shheap *h, const void *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p;

	return a >= h->base + SHBLK_HDR && a < h->end;
}
