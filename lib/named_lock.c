// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * named_lock.c - the one lock of a named pool: a process-shared, robust,
 * recursive pthread mutex in the pool's file. Robust: when its holder dies
 * (killed at any instruction inside any call), the next locker gets
 * EOWNERDEAD, restores the pool (named_recover()) and marks the mutex
 * consistent. Recursive: the residency lock and the lane locks of a named
 * pool are this one mutex, taken in the nesting the private pool's code
 * already has (residency, then lanes). While it is held, this thread's
 * bookkeeping allocations go to the file's heap (meta_heap_swap()).
 *
 * One lock, not one per lane: a dead holder of one lane's lock may have
 * been inside a call spanning lanes and the residency, and a recovery that
 * holds everything is one that can be checked. What it costs processes on
 * their own lanes is measured in hkv-bench named.
 */
#include "named.h"

static __thread struct named_tls hold;

/**
 * named_lock() - take a named pool's lock (recursively)
 * @h: the pool's header
 *
 * A dead holder's pool is restored first: this call then returns with the
 * lock held and the pool consistent.
 */
void named_lock(struct named_hdr *h)
{
	int err = pthread_mutex_lock(&h->lock);

	if (unlikely(err == EOWNERDEAD)) {
		struct shheap *old = meta_heap_swap(&h->heap);

		named_recover(h);
		meta_heap_swap(old);
		pthread_mutex_consistent(&h->lock);
	} else if (unlikely(err)) {
		/* ENOTRECOVERABLE: a recovery itself died; nothing is safe */
		hkv_log(HKV_LOG_ERR, "named pool %s: lock unusable: %s", h->name, strerror(err));
		abort();
	}
	if (hold.depth++ == 0)
		hold.heap = meta_heap_swap(&h->heap);
}

/**
 * named_unlock() - release one hold of named_lock()
 * @h: the pool's header
 */
void named_unlock(struct named_hdr *h)
{
	if (--hold.depth == 0)
		meta_heap_swap(hold.heap);
	pthread_mutex_unlock(&h->lock);
}

/**
 * named_cb_enter() - an evict callback starts on this thread
 * @save: receives this thread's hold, which the callback starts without
 *
 * The callback may use other pools: their bookkeeping must not go to this
 * pool's heap. A call on the same named pool from the callback takes the
 * (recursive) lock again and routes its allocations again.
 */
void named_cb_enter(struct named_tls *save)
{
	*save = hold;
	save->routed = meta_heap_swap(NULL);
	hold.depth = 0;
	hold.heap = NULL;
}

/**
 * named_cb_leave() - the callback of named_cb_enter() returned
 * @save: the hold saved there
 */
void named_cb_leave(const struct named_tls *save)
{
	hold = *save;
	meta_heap_swap(save->routed);
}

/**
 * named_lane_call() - lane_call() of a named pool
 * @pool: the pool
 * @l: the lane
 * @fn: the call
 * @c: its arguments
 *
 * Return: what @fn returned.
 */
int named_lane_call(struct hkv_pool *pool, struct lane *l, lane_fn fn, struct lane_call *c)
{
	int ret;

	named_lock(l->named);
	ret = fn(pool, l, c);
	named_unlock(l->named);
	return ret;
}
