// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * meta.c - memory for the allocator's large per-page arrays (boundary tags,
 * page bitmaps). Free paths touch them at random pages of a space of
 * millions of pages; on 4 KiB pages nearly every such touch is a TLB miss
 * and a page walk, so arrays of 1 MiB and more go on 2 MiB-aligned anonymous
 * memory with MADV_HUGEPAGE (best effort: with THP off they stay on 4 KiB
 * pages). From 1 MiB, not 2: the exact bins' group bitmaps of a 3.5 M-page
 * space are 1.8 MiB, read at random on every take and free; one huge page
 * for them costs at most 1 MiB more than they hold. It uses the real system calls of os.c, not the replaceable table:
 * this is the library's own bookkeeping, like malloc, not the pool's memory.
 *
 * A thread that holds a named pool's lock (or builds the pool) allocates
 * from the heap in that pool's file instead (shheap.c, meta_heap_swap()):
 * the callers need not know which kind of pool they serve.
 */
#include <sys/mman.h>

#include "internal.h"

#define META_HUGE	(2ull << 20)
#define META_HUGE_MIN	(META_HUGE / 2)	/* smaller arrays stay on the heap */

/* the named pool's file heap this thread works in (heap), or NULL */
__thread struct named_tls named_tls;
#define meta_heap	(named_tls.heap)

/**
 * meta_heap_swap() - route this thread's bookkeeping allocations
 * @h: a named pool's heap, or NULL for malloc and anonymous memory
 *
 * Return: the heap routed to before.
 */
struct shheap *meta_heap_swap(struct shheap *h)
{
	struct shheap *old = meta_heap;

	meta_heap = h;
	return old;
}

static size_t meta_len(size_t bytes)
{
	return (bytes + META_HUGE - 1) & ~(META_HUGE - 1);
}

/**
 * meta_alloc() - zeroed memory for a bookkeeping array
 * @bytes: size
 *
 * Return: the memory, or NULL.
 */
void *meta_alloc(size_t bytes)
{
	size_t len = meta_len(bytes);
	char *p, *a;

	if (meta_heap)
		return shheap_alloc(meta_heap, bytes);
	if (bytes < META_HUGE_MIN) {	/* cache-line aligned: group lines */
		p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
		if (p)
			memset(p, 0, bytes);
		return p;
	}
	if (os_default_ops.mmap(NULL, len + META_HUGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, (void **)&p))
		return NULL;
	a = (char *)(((uintptr_t)p + META_HUGE - 1) & ~(uintptr_t)(META_HUGE - 1));
	if (a > p)
		os_default_ops.munmap(p, (size_t)(a - p));
	if (a + len < p + len + META_HUGE)
		os_default_ops.munmap(a + len, (size_t)(p + META_HUGE - a));
	os_default_ops.madvise(a, len, MADV_HUGEPAGE);
	return a;
}

/**
 * meta_free() - give back what meta_alloc() returned
 * @p: the memory, or NULL
 * @bytes: the size given to meta_alloc()
 */
void meta_free(void *p, size_t bytes)
{
	if (!p)
		return;
	if (meta_heap && shheap_owns(meta_heap, p))
		shheap_free(meta_heap, p);
	else if (bytes < META_HUGE_MIN)
		free(p);
	else
		os_default_ops.munmap(p, meta_len(bytes));
}

/**
 * meta_calloc() - calloc() for bookkeeping (meta_release() gives it back)
 * @n: elements
 * @size: bytes each
 *
 * Return: zeroed memory, or NULL.
 */
void *meta_calloc(size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	if (meta_heap)
		return shheap_alloc(meta_heap, n * size);
	return calloc(n, size);
}

/**
 * meta_aligned() - zeroed, cache-line aligned bookkeeping
 * @bytes: size
 *
 * Return: the memory, or NULL.
 */
void *meta_aligned(size_t bytes)
{
	void *p;

	if (meta_heap)
		return shheap_alloc(meta_heap, bytes);
	p = aligned_alloc(64, HKV_ROUND_UP(HKV_MAX(bytes, 1), 64));
	if (p)
		memset(p, 0, bytes);
	return p;
}

/**
 * meta_realloc() - realloc() for bookkeeping
 * @p: memory of meta_calloc(), meta_aligned() or meta_realloc(), or NULL
 * @bytes: new size
 *
 * Return: the memory, or NULL (@p unchanged).
 */
void *meta_realloc(void *p, size_t bytes)
{
	if (meta_heap && (!p || shheap_owns(meta_heap, p)))
		return shheap_realloc(meta_heap, p, bytes);
	return realloc(p, bytes);
}

/**
 * meta_release() - give back meta_calloc(), meta_aligned(), meta_realloc()
 * @p: the memory, or NULL
 */
void meta_release(void *p)
{
	if (meta_heap && shheap_owns(meta_heap, p))
		shheap_free(meta_heap, p);
	else
		free(p);
}
