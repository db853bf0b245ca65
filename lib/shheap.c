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
 * Every change is one store of a word (a list head, the bump pointer), made
 * last: a process killed in the middle of an allocation or free leaks at
 * most that block, never breaks a list. A new block's header is written
 * before the bump pointer passes it, so the blocks below the bump pointer
 * can always be walked (shheap_sweep()). Callers hold the pool's lock.
 */
#include "internal.h"

#define SHBLK_HDR	64
#define SHBLK_MAGIC	0x68686b76626c6b00ull	/* "hhkvblk" + class */
#define SHBLK_FREED	0x6868667265656400ull

struct shblk {
	uint64_t magic;		/* SHBLK_MAGIC | class, SHBLK_FREED | class */
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

/**
 * shheap_alloc() - a zeroed block
 * @h: the heap
 * @bytes: payload size
 *
 * Return: the payload (64-byte aligned), or NULL when the heap is full.
 */
void *shheap_alloc(struct shheap *h, uint64_t bytes)
{
	unsigned c = shheap_class(bytes);
	struct shblk *b;
	uint64_t at, size;

	if (c >= SHHEAP_CLASSES)
		return NULL;
	size = 1ull << c;
	if (h->free_head[c]) {
		b = (struct shblk *)(uintptr_t)h->free_head[c];
		if ((b->magic & ~0xffull) != SHBLK_FREED) {
			hkv_log(HKV_LOG_ERR, "named pool heap: free list %u broken", c);
			return NULL;
		}
		HKV_STORE(&h->free_head[c], b->next);	/* the one store */
		memset((char *)b + SHBLK_HDR, 0, HKV_MIN(bytes, size - SHBLK_HDR));
		b->magic = SHBLK_MAGIC | c;
		b->next = 0;
		b->bytes = bytes;
	} else {
		at = h->top;
		if (size > h->end - at)
			return NULL;
		b = (struct shblk *)(uintptr_t)at;	/* never touched: zero */
		b->magic = SHBLK_MAGIC | c;		/* walkable before it counts */
		b->next = 0;
		b->bytes = bytes;
		HKV_STORE(&h->top, at + size);		/* the one store */
	}
	HKV_ADD(&h->used, size);
	return (char *)b + SHBLK_HDR;
}

/* the block of a payload, or NULL for a pointer that is none */
static struct shblk *shheap_blk(const struct shheap *h, const void *p)
{
	struct shblk *b = (struct shblk *)((char *)p - SHBLK_HDR);

	if (!shheap_owns(h, p) || (b->magic & ~0xffull) != SHBLK_MAGIC)
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
	unsigned c;

	if (!p)
		return;
	b = shheap_blk(h, p);
	if (!b) {
		hkv_log(HKV_LOG_ERR, "named pool heap: free of %p, not a block", p);
		return;
	}
	c = (unsigned)(b->magic & 0xff);
	b->magic = SHBLK_FREED | c;
	b->next = h->free_head[c];
	HKV_ADD(&h->used, -(1ull << c));
	HKV_STORE(&h->free_head[c], (uint64_t)(uintptr_t)b);	/* the one store */
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
	if (b && shheap_class(bytes) == (b->magic & 0xff)) {
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
		unsigned c = (unsigned)(b->magic & 0xff);
		uint64_t kind = b->magic & ~0xffull;

		if ((kind != SHBLK_MAGIC && kind != SHBLK_FREED) || c < SHHEAP_MIN_CLASS ||
		    c >= SHHEAP_CLASSES || (1ull << c) > top - at) {
			hkv_log(HKV_LOG_ERR, "named pool heap: block at %#llx unreadable; the "
				"rest is left as it is", (unsigned long long)at);
			break;
		}
		if (kind == SHBLK_MAGIC && keep(ctx, (char *)b + SHBLK_HDR)) {
			used += 1ull << c;
		} else {
			b->magic = SHBLK_FREED | c;
			b->next = heads[c];
			heads[c] = at;
		}
		at += 1ull << c;
	}
	for (unsigned c = 0; c < SHHEAP_CLASSES; c++)
		HKV_STORE(&h->free_head[c], heads[c]);
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
