// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lane_defer.c - frees deferred to the lane's holder.
 *
 * A thread that frees pages of a lane another thread holds would wait for
 * that thread to run its free (lane_call_slow()): a round trip of the call's
 * line between the two caches, during which it runs nothing else. Its
 * answer can be known without the lock, though: the pages are allocated and
 * in no unit (read here), and no earlier free of them waits in the queue.
 * So the free is answered 0 at once, queued, and run by the lane's holder
 * before the holder runs any call (its own or a waiting one), in order:
 * every later call sees it; hkv_available() counts its pages meanwhile.
 *
 * The pages must stay allocated from the look at their bits to the run, or
 * another free of them and an allocation could come between, and the run
 * would free someone else's pages. Only the holder frees and allocates,
 * and only a call that looked at the queue first. So the freeing thread
 * claims its entry before it looks (an atomic operation: a full barrier),
 * and the holder ends every take of the queue (lane_defer_take()) with a
 * look that follows a full barrier made after its last free: the frees of
 * the calls before (its own, or run for waiting callers) and those the
 * take itself ran. Either the freeing thread's look sees the holder's
 * free, and the free waits for the exact answer, or that last look sees
 * the claim, and the holder settles and runs the entry before any
 * allocation. A take that finds the queue empty makes the barrier once;
 * one that runs frees makes it after them (a barrier only before the
 * runs would leave them unordered with the look of a claim the take did
 * not see). A claim not settled soon (its thread preempted) is dropped by
 * the holder, and that free waits too.
 *
 * A free that cannot be answered so (not allocated, in a unit, queued
 * already, the queue full) takes the waiting path, which runs the queue
 * first and then gives the exact answer.
 */
#include "extent.h"

_Static_assert(sizeof(struct lane_defer) <= XI_META_QUEUE, "XI_META_QUEUE");

/**
 * pool_bits_unsettle() - a holder of every lane is about to change page
 *	bits that it restores before it unlocks them (hkv_check())
 * @pool: the pool, every lane locked
 *
 * lane_defer_free() reads the bits without the lock and trusts them only
 * if no such change began or ended meanwhile (a sequence lock).
 */
void pool_bits_unsettle(struct hkv_pool *pool)
{
	__atomic_fetch_add(&pool->bits_seq, 1, __ATOMIC_SEQ_CST);	/* odd before any change */
}

/**
 * pool_bits_settle() - the bits are as before pool_bits_unsettle()
 * @pool: the pool, every lane locked
 */
void pool_bits_settle(struct hkv_pool *pool)
{
	__atomic_store_n(&pool->bits_seq, pool->bits_seq + 1, __ATOMIC_RELEASE);
}

/**
 * lane_defer_fini() - free the lane's queue, if it has one
 * @l: the lane, used by no thread
 */
void lane_defer_fini(struct lane *l)
{
	free(l->defer);
	l->defer = NULL;
}

/* the lane's queue, made by its first deferred free; NULL if it cannot be
 * had (the free then waits) */
static struct lane_defer *defer_queue(struct lane *l)
{
	struct lane_defer *q = __atomic_load_n(&l->defer, __ATOMIC_ACQUIRE), *none = NULL;

	if (likely(q))
		return q;
	q = aligned_alloc(64, sizeof(*q));
	if (!q)
		return NULL;
	memset(q, 0, sizeof(*q));
	for (uint64_t i = 0; i < LANE_DEFER_SIZE; i++)
		q->ent[i].seq = defer_seq(i, DEFER_FREE);
	/* release: the holder that finds it finds it whole */
	if (__atomic_compare_exchange_n(&l->defer, &none, q, false, __ATOMIC_RELEASE,
					__ATOMIC_ACQUIRE))
		return q;
	free(q);		/* another thread made it first */
	return none;
}

/* the phase of the entry at the head once it is settled: a claim waits
 * settle pauses, then the holder drops it (its thread, preempted, may
 * still write the entry: it frees it itself) */
static uint64_t defer_settle(struct lane_defer_ent *e, uint64_t h, unsigned settle)
{
	uint64_t claimed = defer_seq(h, DEFER_CLAIMED), v = claimed;

	for (unsigned spin = 0; spin < settle; spin++) {
		v = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		if (v != claimed)
			return v;
		cpu_relax();
	}
	if (__atomic_compare_exchange_n(&e->seq, &v, defer_seq(h, DEFER_DROPPED), false,
					__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
		return defer_seq(h, DEFER_DROPPED);
	return v;		/* settled by its thread meanwhile */
}

/* run the entry at h, settled as v; false: it stays (the index cannot
 * grow: its pages stay allocated, and the next holder tries again) */
static bool defer_run_one(struct lane *l, struct lane_defer *q, struct lane_defer_ent *e,
			  uint64_t h, uint64_t v)
{
	int err;

	if (v != defer_seq(h, DEFER_FILLED))
		return true;	/* void or dropped */
	err = xi_free_checked(&l->xi, l->xi.base + e->start, e->len);
	if (unlikely(err == -ENOMEM))
		return false;
	if (likely(!err)) {
		l->c.pages_freed += e->len;
		l->c.frees++;
		q->ran++;
		return true;
	}
	/* another thread freed them, or made a unit of them, at the same
	 * time (a caller's bug): they were answered 0 too */
	q->errors++;
	hkv_log(HKV_LOG_WARN, "free of pages %llu+%llu, deferred: %s when run (another thread "
		"freed them, or made a unit of them, at the same time)",
		(unsigned long long)(l->xi.base + e->start), (unsigned long long)e->len,
		hkv_strerror(err));
	return true;
}

/* filled entries whose group lines are prefetched before the run of the
 * entry ahead of them: their misses overlap that run */
#define DEFER_AHEAD	4

/* prefetch, for writing, the group lines of the filled entries from *pf
 * up to DEFER_AHEAD past h; *pf: the first not prefetched yet */
static inline void defer_prefetch_run(const struct lane *l, const struct lane_defer *q,
				      uint64_t h, uint64_t *pf)
{
	for (; *pf < h + DEFER_AHEAD; (*pf)++) {
		const struct lane_defer_ent *e = &q->ent[*pf % LANE_DEFER_SIZE];

		if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != defer_seq(*pf, DEFER_FILLED))
			return;
		hkv_prefetch_w(&l->xi.grp[e->start >> 6]);
		hkv_prefetch_w(&l->xi.grp[(e->start + e->len - 1) >> 6]);
	}
}

/**
 * lane_defer_take() - run the lane's queue
 * @l: the lane, held by this thread, which has a queue; out of line, so
 *	that lane_call() and lane_trylock() stay a load and a branch longer
 *	for a lane that never had a deferred free
 * @settle: pauses to wait for a claim in progress (the lane's grace,
 *	lane_call.c)
 *
 * Runs the filled entries in order and drops claims not settled within
 * @settle, up to the first free entry. A free the index cannot grow for
 * (-ENOMEM) stays queued, with the frees after it, until the next holder:
 * its pages stay allocated meanwhile, never lost.
 */
void lane_defer_take(struct lane *l, unsigned settle)
{
	struct lane_defer *q = __atomic_load_n(&l->defer, __ATOMIC_ACQUIRE);
	uint64_t h0 = q->head, h = h0, pf = h + 1, v;
	bool fenced = false;	/* no free since the barrier */

	for (;;) {
		struct lane_defer_ent *e = &q->ent[h % LANE_DEFER_SIZE];

		v = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		if (v <= defer_seq(h, DEFER_FREE)) {	/* not claimed, or a lap behind */
			if (fenced)
				break;
			/* a locked operation (a full barrier) on this thread's
			 * line: every free before it (the calls before this
			 * one, the runs above) comes before the look that
			 * ends the take (see above); then the look again */
			__atomic_fetch_add(&q->barrier, 1, __ATOMIC_SEQ_CST);
			fenced = true;
			continue;
		}
		if (v == defer_seq(h, DEFER_CLAIMED))
			v = defer_settle(e, h, settle);
		defer_prefetch_run(l, q, h, &pf);
		if (!defer_run_one(l, q, e, h, v)) {
			if (!fenced)	/* the runs above, before a later claim's look */
				__atomic_fetch_add(&q->barrier, 1, __ATOMIC_SEQ_CST);
			break;
		}
		if (v == defer_seq(h, DEFER_FILLED))
			fenced = false;
		/* the entry is free for the position one lap ahead (a dropped
		 * one once its thread is done with it) */
		if (v != defer_seq(h, DEFER_DROPPED))
			__atomic_store_n(&e->seq, defer_seq(h + LANE_DEFER_SIZE, DEFER_FREE),
					 __ATOMIC_RELEASE);
		h++;
		pf = HKV_MAX(pf, h + 1);
	}
	/* release: a reader of the new head sees the pages freed */
	if (h != h0)
		__atomic_store_n(&q->head, h, __ATOMIC_RELEASE);
}

/**
 * lane_defer_pages() - the pages of the queued frees
 * @l: the lane, held by any thread or none
 *
 * Return: their sum, a relaxed reading.
 */
uint64_t lane_defer_pages(const struct lane *l)
{
	const struct lane_defer *q = __atomic_load_n(&l->defer, __ATOMIC_ACQUIRE);
	uint64_t h, sum = 0;

	if (!q)
		return 0;
	h = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < LANE_DEFER_SIZE; i++, h++) {
		uint64_t v = __atomic_load_n(&q->ent[h % LANE_DEFER_SIZE].seq, __ATOMIC_ACQUIRE);

		if (v <= defer_seq(h, DEFER_FREE) || v > defer_seq(h, DEFER_DROPPED))
			break;
		if (v == defer_seq(h, DEFER_FILLED))
			sum += HKV_LOAD(&q->ent[h % LANE_DEFER_SIZE].len);
	}
	return sum;
}

/*
 * does a queued free name a page of [from, +len) (pages of the space)? The
 * filled entries below the tail, newest first, down to the first that a
 * holder reached (run and freed for a later lap, or dropped): a holder
 * runs the entries in order, so every one below it ran, or was never
 * filled. The head, which the holder writes at every take that runs
 * something, is not read: its line stays with the holder.
 */
static bool defer_overlaps(const struct lane_defer *q, uint64_t from, uint64_t len)
{
	uint64_t t = HKV_LOAD(&q->tail), p = t;

	while (p > t - HKV_MIN(t, (uint64_t)LANE_DEFER_SIZE)) {
		const struct lane_defer_ent *e = &q->ent[--p % LANE_DEFER_SIZE];
		uint64_t v = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);

		if (v >= defer_seq(p, DEFER_DROPPED))
			return false;
		if (v == defer_seq(p, DEFER_FILLED) && HKV_LOAD(&e->start) < from + len &&
		    from < (uint64_t)HKV_LOAD(&e->start) + HKV_LOAD(&e->len))
			return true;
	}
	return false;
}

/* every page of [start, +len) allocated and in no unit, read without the
 * lock: the free's own words of each group line it spans, trusted if no
 * holder changed them only to restore them (pool_bits_unsettle()) */
static bool defer_valid(const struct hkv_pool *pool, const struct lane *l, uint64_t start,
			uint64_t len)
{
	const struct xindex *x = &l->xi;
	uint64_t from = start - x->base, end = from + len;
	uint32_t seq = __atomic_load_n(&pool->bits_seq, __ATOMIC_ACQUIRE);

	if (seq & 1)
		return false;
	while (from < end) {
		uint64_t n = HKV_MIN(end - from, 64 - (from & 63));
		uint64_t m = xi_word_bits(from, n);
		const uint64_t *w = &x->allocated[XI_WORD(from)];

		/* acquire: read before the second look at the sequence */
		if ((__atomic_load_n(&w[0], __ATOMIC_ACQUIRE) & m) != m ||
		    (__atomic_load_n(&w[1], __ATOMIC_ACQUIRE) & m))
			return false;
		from += n;
	}
	return HKV_LOAD(&pool->bits_seq) == seq;
}

/* claim the entry for the next free position (a full barrier); NULL when
 * the queue is full */
static struct lane_defer_ent *defer_claim(struct lane_defer *q, uint64_t *pos)
{
	uint64_t p = HKV_LOAD(&q->tail);

	for (;;) {
		struct lane_defer_ent *e = &q->ent[p % LANE_DEFER_SIZE];
		uint64_t v = defer_seq(p, DEFER_FREE), t;

		if (__atomic_compare_exchange_n(&e->seq, &v, defer_seq(p, DEFER_CLAIMED), false,
						__ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE)) {
			t = HKV_LOAD(&q->tail);
			while (t <= p && !__atomic_compare_exchange_n(&q->tail, &t, p + 1, true,
								      __ATOMIC_RELAXED,
								      __ATOMIC_RELAXED))
				;
			*pos = p;
			return e;
		}
		if (v < defer_seq(p, DEFER_FREE))
			return NULL;	/* a lap behind: not run yet */
		p++;			/* taken at this position, or the hint was old */
	}
}

/* prefetch the group lines the validity look reads, before the claim */
static inline void defer_prefetch(const struct xindex *x, uint64_t start, uint64_t len)
{
	uint64_t s = start - x->base;

	__builtin_prefetch(&x->grp[s >> 6]);
	__builtin_prefetch(&x->grp[(s + len - 1) >> 6]);
}

/**
 * lane_defer_free() - answer a free of a lane another thread holds, and queue
 *	it for that thread
 * @pool: the pool
 * @l: the lane; not this thread's
 * @start: absolute first page, inside the lane and one chunk
 * @len: pages (> 0)
 *
 * Return: true if the free is answered 0 and queued; false if it must wait
 * for the exact answer (nothing done).
 */
bool lane_defer_free(struct hkv_pool *pool, struct lane *l, uint64_t start, uint64_t len)
{
	struct lane_defer *q = defer_queue(l);
	struct lane_defer_ent *e;
	uint64_t pos, claimed;
	bool ok;

	if (!q)
		return false;
	defer_prefetch(&l->xi, start, len);
	/* a first look before the claim, which the holder may wait for:
	 * it brings the lines here, and answers most bad frees */
	if (defer_overlaps(q, start - l->xi.base, len) || !defer_valid(pool, l, start, len))
		return false;
	e = defer_claim(q, &pos);
	if (!e)
		return false;
	ok = defer_valid(pool, l, start, len);
	if (ok) {
		HKV_STORE(&e->start, (uint32_t)(start - l->xi.base));
		HKV_STORE(&e->len, (uint32_t)len);
	}
	/* settle it, unless the holder dropped it meanwhile: then the entry
	 * is this thread's to free */
	claimed = defer_seq(pos, DEFER_CLAIMED);
	if (__atomic_compare_exchange_n(&e->seq, &claimed,
					defer_seq(pos, ok ? DEFER_FILLED : DEFER_VOID), false,
					__ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return ok;
	__atomic_store_n(&e->seq, defer_seq(pos + LANE_DEFER_SIZE, DEFER_FREE), __ATOMIC_RELEASE);
	return false;
}
