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

/* named_recover(), set by named.c before this process maps a pool: the
 * recovery rebuilds lanes and residency, the layers above this lock that
 * take it, so it is reached through a pointer (internal.h has the order) */
void (*named_recover_fn)(struct named_hdr *h);

/* the named pools this process is attached to, and its slot in each (a
 * fork() child attaches anew and overwrites the entry of the same address) */
static struct {
	struct named_hdr *h;
	uint8_t slot1;
	uint64_t id;		/* the handle's pool id */
} local[HKV_NAMED_SLOTS];

/**
 * named_local_set() - this process's slot in a pool
 * @h: the pool's header
 * @slot1: the slot + 1, or 0 when the process leaves the pool
 * @pool_id: the handle's hkv_pool_id()
 */
void named_local_set(struct named_hdr *h, uint8_t slot1, uint64_t pool_id)
{
	unsigned i, empty = HKV_NAMED_SLOTS;

	for (i = 0; i < HKV_NAMED_SLOTS; i++) {
		if (HKV_LOAD(&local[i].h) == h)
			break;
		if (!HKV_LOAD(&local[i].h) && empty == HKV_NAMED_SLOTS)
			empty = i;
	}
	if (i == HKV_NAMED_SLOTS)
		i = empty;
	if (i == HKV_NAMED_SLOTS)
		return;		/* attached to that many pools: recorded as none */
	HKV_STORE(&local[i].slot1, slot1);
	HKV_STORE(&local[i].id, pool_id);
	HKV_STORE(&local[i].h, slot1 ? h : NULL);
}

uint64_t named_local_id(const struct named_hdr *h)
{
	for (unsigned i = 0; i < HKV_NAMED_SLOTS; i++)
		if (HKV_LOAD(&local[i].h) == h)
			return HKV_LOAD(&local[i].id);
	return 0;
}

static uint8_t local_slot(const struct named_hdr *h)
{
	for (unsigned i = 0; i < HKV_NAMED_SLOTS; i++)
		if (HKV_LOAD(&local[i].h) == h)
			return HKV_LOAD(&local[i].slot1);
	return 0;
}

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
	struct named_tls *t;

	if (unlikely(err == EOWNERDEAD)) {
		struct shheap *old = meta_heap_swap(&h->heap);

		HKV_LOAD(&named_recover_fn)(h);
		meta_heap_swap(old);
		pthread_mutex_consistent(&h->lock);
	} else if (unlikely(err)) {
		/* ENOTRECOVERABLE: a recovery itself died; nothing is safe */
		hkv_log(HKV_LOG_ERR, "named pool %s: lock unusable: %s", h->name, strerror(err));
		abort();
	}
	t = &named_tls;		/* one lookup */
	if (t->depth++ == 0) {
		t->before = t->heap;
		t->heap = &h->heap;
		t->owner = local_slot(h);
	}
}

/**
 * named_unlock() - release one hold of named_lock()
 * @h: the pool's header
 */
void named_unlock(struct named_hdr *h)
{
	struct named_tls *t = &named_tls;

	if (--t->depth == 0)
		t->heap = t->before;
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
	*save = named_tls;
	named_tls = (struct named_tls){ 0 };
}

/**
 * named_cb_leave() - the callback of named_cb_enter() returned
 * @save: the hold saved there
 */
void named_cb_leave(const struct named_tls *save)
{
	named_tls = *save;
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
