// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * named_lock.c - the locks of a named pool: one per lane (a lane's own
 * allocations and frees) and one for the pool (the residency, and every
 * call spanning lanes), in the pool's file. Order: the pool lock, then
 * lanes in ascending order; a thread that holds a lane lock without the
 * pool lock takes no other lock of the pool, so holders of different
 * lanes never wait for one another and nobody waits in a cycle.
 *
 * A lock is a 32-bit word: 0 when free, else its holder's thread id and
 * its process slot + 1 (whose pid and start time tell whether that
 * process still runs), and a bit for sleeping waiters. Taking a free lock
 * is one compare-and-swap, releasing it one exchange; a futex wake only
 * when a waiter sleeps. glibc's robust mutex costs several times that
 * (a list of held robust mutexes kept for the kernel, and recursion
 * counts), paid by every process on every call.
 *
 * A holder killed at any instruction: a waiter sleeps with a timeout and
 * looks at the holder's process when it ends; a dead holder's lock is
 * taken over by a compare-and-swap of the word it left (one waiter wins)
 * and the pool repaired before the call goes on:
 * - the pool lock's holder died: every lane lock is taken too and the
 *   whole pool rebuilt (named_recover_fn(h, NAMED_RECOVER_DEAD));
 * - a lane lock's holder died, the pool lock held by nobody dead: only
 *   the lane is rebuilt (named_recover_fn(h, lane)), from what its holder
 *   could not touch (in-unit bits: changed under the pool lock, and owner
 *   bytes); the lane's old index stays in the heap until a full rebuild
 *   sweeps it, due at the next outermost taking of the pool lock;
 * - a lane lock's holder died while a dead process holds the pool lock:
 *   the pool lock is taken first (a full rebuild), then the lane again.
 *
 * A lane used by one thread only is biased to it (as a private pool's
 * lane, lane_call.c): after LANE_BIAS_AFTER calls of the lane under its
 * lock with no bias revoked, its last holder runs its lane_call()s
 * without the lock word, announcing each in l->busy with a plain store
 * and then reading the lock word free. Whoever takes the lock word then
 * revokes the bias: membarrier(2) of every registered process (global,
 * expedited) makes the owner's busy store visible or its look at the lock
 * word see it held, then it waits for busy to clear. An owner killed
 * inside a biased call leaves busy set: the revoker finds it dead as it
 * would find a dead lock holder, and repairs the lane the same way. For a
 * named lane, l->bias holds the biased thread's lock word (0: none) and
 * l->quiet the calls under the lock since the last revocation.
 *
 * The pool lock is recursive (the residency then lanes_lock() of the same
 * call; a call from an evict callback); lane locks are not. While it
 * holds a lock a thread allocates bookkeeping from the file's heap
 * (meta_heap_swap()); the heap is lock-free (shheap.c).
 */
#include <linux/membarrier.h>
#include <stdio.h>
#include <unistd.h>

#include "named.h"

#define NL_WAITERS	(1u << 30)
#define NL_SPIN		100			/* pauses before a waiter sleeps */
#define NL_LOOK_NS	(5ull * 1000 * 1000)	/* a sleeper looks at the holder */

/* named_recover(), set by named.c before this process maps a pool: the
 * recovery rebuilds lanes and residency, the layers above this lock that
 * take it, so it is reached through a pointer (internal.h has the order) */
void (*named_recover_fn)(struct named_hdr *h, int lane);

/* the named pools this process is attached to, and its slot in each (a
 * fork() child attaches anew and overwrites the entry of the same address;
 * until then the entry is its parent's: gen tells, and the child's lock
 * words must not name the parent's slot, whose process has not the
 * child's threads: a waiter would take the child for dead) */
static struct {
	struct named_hdr *h;
	uint8_t slot1;
	uint64_t gen;		/* fork_gen when set */
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
	HKV_STORE(&local[i].gen, HKV_LOAD(&fork_gen));
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
			return HKV_LOAD(&local[i].gen) == HKV_LOAD(&fork_gen) ?
			       HKV_LOAD(&local[i].slot1) : 0;
	return 0;
}

/**
 * named_slot_alive() - is a slot's process still the one that attached?
 * @s: the slot
 *
 * Return: true if its pid runs and started when the slot says.
 */
bool named_slot_alive(const struct named_slot *s)
{
	int pid = HKV_LOAD(&s->pid);

	return pid && os_proc_start(pid) == HKV_LOAD(&s->start);
}

/*
 * A thread of a process: 1 it runs (*start: its start time, the process's
 * for its first thread), 0 it is gone or a zombie, -errno it cannot be told
 * (/proc unreadable here: no descriptor left, say), which a waiter takes
 * for alive: taking over a live holder's lock would break the pool.
 */
static int task_look(int pid, unsigned tid, uint64_t *start)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%u/stat", pid, tid);
	return os_proc_stat(path, start);
}

/*
 * Does the holder a lock word names still run? Its slot's process must be
 * the one that attached (a pid alone may be reused: thousands of processes
 * come and go in a pool's life) and have the thread. A holder without a
 * slot (attaching) is looked up by its thread id alone.
 */
static bool holder_alive(const struct named_hdr *h, uint32_t w)
{
	unsigned tid = w & NL_TID_MASK, s1 = (w >> NL_SLOT_SHIFT) & 0x7f;
	uint64_t start = 0, ignored;
	int pid = (int)tid, r;

	if (s1) {
		if (s1 > HKV_NAMED_SLOTS)
			return false;
		int spid = HKV_LOAD(&h->slot[s1 - 1].pid);

		/* 0: it is detaching (it frees its slot under its locks): by
		 * the thread id alone, as a holder without a slot */
		if (spid) {
			r = task_look(spid, (unsigned)spid, &start);
			if (r <= 0 || start != HKV_LOAD(&h->slot[s1 - 1].start))
				return r < 0;	/* gone, or another process of that pid */
			pid = spid;
		}
	}
	return task_look(pid, tid, &ignored) != 0;	/* unreadable: alive */
}

/**
 * named_tid_read() - named_word() in a thread that has not read its id
 *	since the last fork()
 * @t: the thread's named_tls
 * @gen: fork_gen + 1
 */
void named_tid_read(struct named_tls *t, uint64_t gen)
{
	t->tid = (uint32_t)gettid() & NL_TID_MASK;
	t->tid_gen = gen;
}

static inline uint32_t lock_word(struct named_tls *t, uint8_t slot1)
{
	return named_word(t, slot1);
}

/*
 * The lock word w held by another: spin a little, then sleep on the futex
 * with the waiters bit set. Returns true when w was taken over from a dead
 * holder (the caller repairs what it guarded), false when it was free.
 * A thread that slept takes the lock with the waiters bit set: others may
 * still sleep, and its release must wake them.
 */
static bool word_lock_slow(const struct named_hdr *h, uint32_t *w, uint32_t me)
{
	uint32_t flag = 0;

	for (unsigned spin = 0;; spin++) {
		uint32_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
		int r;

		if (!v) {
			if (__atomic_compare_exchange_n(w, &v, me | flag, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return false;
			continue;
		}
		if (spin < NL_SPIN) {
			cpu_relax();
			continue;
		}
		if (!(v & NL_WAITERS) &&
		    !__atomic_compare_exchange_n(w, &v, v | NL_WAITERS, false,
						 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			continue;
		v |= NL_WAITERS;
		flag = NL_WAITERS;
		r = os_default_ops.futex_wait_shared(w, v, NL_LOOK_NS);
		if (r != -ETIMEDOUT || __atomic_load_n(w, __ATOMIC_RELAXED) != v ||
		    holder_alive(h, v))
			continue;
		/* acquire: what the dead holder wrote is read by the repair */
		if (__atomic_compare_exchange_n(w, &v, me | NL_WAITERS, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return true;
	}
}

static inline bool word_lock(const struct named_hdr *h, uint32_t *w, uint32_t me)
{
	uint32_t v = 0;

	if (likely(__atomic_compare_exchange_n(w, &v, me, false, __ATOMIC_ACQUIRE,
					       __ATOMIC_RELAXED)))
		return false;
	return word_lock_slow(h, w, me);
}

static inline void word_unlock(uint32_t *w)
{
	if (unlikely(__atomic_exchange_n(w, 0, __ATOMIC_RELEASE) & NL_WAITERS))
		os_default_ops.futex_wake_shared(w, 1);
}

static inline uint32_t *lane_word(struct lane *l)
{
	return (uint32_t *)&l->lock;
}

static inline void hold_enter(struct named_tls *t, struct named_hdr *h, uint8_t slot1)
{
	named_hold_enter(t, &h->heap, slot1);
}

static inline void hold_leave(struct named_tls *t)
{
	named_hold_leave(t);
}

/* may this process bias lanes? It registers for expedited global
 * membarrier(2) (once per fork generation: a child is another process) */
static bool bias_allowed(void)
{
	static uint64_t gen;	/* fork_gen + 1 when ok was found */
	static bool ok;
	uint64_t g = HKV_LOAD(&fork_gen) + 1;
	bool r;

	if (likely(HKV_LOAD(&gen) == g))
		return HKV_LOAD(&ok);
	r = env_get()->lane_bias != 0 &&
	    !os_default_ops.membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
	HKV_STORE(&ok, r);
	HKV_STORE(&gen, g);
	return r;
}

/* a call under the lane's lock ended: its holder had the lane to itself
 * long enough, so the lane is biased to it (the lock still held); its bin
 * bitmaps mapped here first (xi_map_bins(): a lane repaired since this
 * process attached has new ones) */
static inline void bias_count(struct lane *l, uint32_t me)
{
	if (unlikely(++l->quiet >= LANE_BIAS_AFTER)) {
		l->quiet = 0;
		if (bias_allowed()) {
			xi_map_bins(&l->xi);
			HKV_STORE(&l->bias, (int)me);
		}
	}
}

/*
 * The lane's lock word just taken: another thread's bias revoked (see the
 * top of this file). Returns true when the biased thread died inside a
 * call (busy left set): the lane is then to be repaired like a dead
 * holder's.
 */
static bool bias_revoke(const struct named_hdr *h, struct lane *l, uint32_t me)
{
	uint32_t b = (uint32_t)HKV_LOAD(&l->bias);
	uint64_t look = 0;
	bool dead = false;

	if (likely(!b) || b == me)
		return false;
	/* the owner registered before it took the bias; GLOBAL waits longer
	 * (a grace period) where the expedited command is refused */
	if (os_default_ops.membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED))
		(void)os_default_ops.membarrier(MEMBARRIER_CMD_GLOBAL);
	for (unsigned spin = 0; __atomic_load_n(&l->busy, __ATOMIC_ACQUIRE); spin++) {
		uint64_t now;

		if (spin < NL_SPIN) {
			cpu_relax();
			continue;
		}
		/* its call is long (preempted): nap on busy, nobody wakes it */
		os_default_ops.futex_wait_shared((uint32_t *)&l->busy, 1, NL_LOOK_NS / 64);
		now = os_default_ops.now_ns();
		if (!look) {
			look = now;
		} else if (now - look > NL_LOOK_NS) {
			if (!holder_alive(h, b)) {
				dead = true;
				HKV_STORE(&l->busy, 0);
				break;
			}
			look = now;
		}
	}
	HKV_STORE(&l->bias, 0);
	l->quiet = 0;
	return dead;
}

/*
 * The whole pool rebuilt: every lane lock taken (after the pool lock: the
 * order), those of dead holders taken over, the rebuild run, the lanes
 * released. Also what named_lock_all() runs when it found a lane's holder
 * dead, and what a lane repair leaves due (its old index to sweep).
 */
static void recover_all(struct named_hdr *h, uint32_t me, bool locked, int why)
{
	if (!locked)
		for (unsigned i = 0; i < h->nlanes; i++) {
			word_lock(h, lane_word(&h->lanes[i]), me);
			bias_revoke(h, &h->lanes[i], me);	/* a dead owner's too */
		}
	HKV_LOAD(&named_recover_fn)(h, why);
	HKV_STORE(&h->rebuild_due, 0);
	if (!locked)
		for (unsigned i = h->nlanes; i-- > 0;)
			word_unlock(lane_word(&h->lanes[i]));
}

/**
 * named_lock() - take a named pool's pool lock (recursively)
 * @h: the pool's header
 *
 * A dead holder's pool (or one with a rebuild due) is rebuilt first: this
 * call then returns with the lock held and the pool consistent.
 */
void named_lock(struct named_hdr *h)
{
	struct named_tls *t = &named_tls;
	uint8_t slot1 = local_slot(h);
	uint32_t me = lock_word(t, slot1);
	bool dead = false;

	if ((__atomic_load_n(&h->lock, __ATOMIC_RELAXED) & ~NL_WAITERS) == me) {
		h->lock_depth++;	/* this thread holds it: only it writes it */
		hold_enter(t, h, slot1);
		return;
	}
	dead = word_lock(h, &h->lock, me);
	h->lock_depth = 1;
	hold_enter(t, h, slot1);
	if (unlikely(dead || HKV_LOAD(&h->rebuild_due)))
		recover_all(h, me, false, dead ? NAMED_RECOVER_DEAD : NAMED_RECOVER_SWEEP);
}

/**
 * named_unlock() - release one hold of named_lock()
 * @h: the pool's header
 */
void named_unlock(struct named_hdr *h)
{
	hold_leave(&named_tls);
	if (--h->lock_depth == 0)
		word_unlock(&h->lock);
}

/**
 * named_lock_all() - take a named pool's lock and every lane lock
 * @h: the pool's header
 *
 * For what reads or rebuilds every lane (attach, detach, check); a dead
 * lane holder's pool is rebuilt whole.
 */
void named_lock_all(struct named_hdr *h)
{
	uint32_t me;
	bool dead = false;

	named_lock(h);
	/* this thread's id as the pool lock holds it (waiters may set their bit) */
	me = __atomic_load_n(&h->lock, __ATOMIC_RELAXED) & ~NL_WAITERS;
	for (unsigned i = 0; i < h->nlanes; i++) {
		dead |= word_lock(h, lane_word(&h->lanes[i]), me);
		dead |= bias_revoke(h, &h->lanes[i], me);
	}
	if (unlikely(dead))
		recover_all(h, me, true, NAMED_RECOVER_DEAD);
}

/**
 * named_unlock_all() - release what named_lock_all() took
 * @h: the pool's header
 */
void named_unlock_all(struct named_hdr *h)
{
	for (unsigned i = h->nlanes; i-- > 0;)
		word_unlock(lane_word(&h->lanes[i]));
	named_unlock(h);
}

/*
 * The lane's lock word taken (dead: from a dead holder): a bias revoked,
 * a dead holder's lane repaired (or the pool rebuilt, see the top of this
 * file), then this thread's hold.
 */
static void lane_settle(struct named_hdr *h, struct lane *l, uint32_t me, uint8_t slot1,
			bool dead)
{
	for (;;) {
		uint32_t p, v = 0;

		dead |= bias_revoke(h, l, me);
		if (likely(!dead))
			break;
		p = __atomic_load_n(&h->lock, __ATOMIC_ACQUIRE) & ~NL_WAITERS;
		if (p == me || !p || holder_alive(h, p)) {
			/* nobody dead holds the pool lock: the lane alone */
			hold_enter(&named_tls, h, slot1);
			HKV_LOAD(&named_recover_fn)(h, (int)(l - h->lanes));
			HKV_STORE(&h->rebuild_due, 1);
			return;
		}
		/* the pool lock's holder is dead too: it may have been inside
		 * a call on this lane's units; the whole pool is rebuilt, with
		 * this lane (left held by the dead holder's id) taken over */
		__atomic_store_n(lane_word(l), p | NL_WAITERS, __ATOMIC_RELEASE);
		named_lock(h);
		named_unlock(h);
		dead = !__atomic_compare_exchange_n(lane_word(l), &v, me, false, __ATOMIC_ACQUIRE,
						    __ATOMIC_RELAXED) &&
		       word_lock_slow(h, lane_word(l), me);
	}
	hold_enter(&named_tls, h, slot1);
}

/**
 * named_lane_lock() - lane_lock() of a named pool's lane
 * @l: the lane
 *
 * A dead holder's lane is repaired first (or the pool rebuilt, see the
 * top of this file).
 */
void named_lane_lock(struct lane *l)
{
	struct named_hdr *h = l->named;
	uint8_t slot1 = local_slot(h);
	uint32_t me = lock_word(&named_tls, slot1);

	lane_settle(h, l, me, slot1, word_lock(h, lane_word(l), me));
}

/**
 * named_lane_unlock() - lane_unlock() of a named pool's lane
 * @l: the lane
 */
void named_lane_unlock(struct lane *l)
{
	hold_leave(&named_tls);
	word_unlock(lane_word(l));
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

/*
 * The lane's bin bitmaps mapped in this process before its first call
 * here under the lane's lock: the frees prefetch them (xi_map_bins()).
 * Not at attach: that would map every lane's (1.5 ms for 3.5 M pages
 * where a fault costs 3.5 us), and a process uses few of the lanes.
 */
static inline void bins_map(struct hkv_pool *pool, struct lane *l)
{
	uint8_t *done = pool->named->bins_mapped;
	size_t i = (size_t)(l - l->named->lanes);

	if (unlikely(done && !done[i])) {
		xi_map_bins(&l->xi);
		done[i] = 1;
	}
}

/**
 * named_lane_call() - lane_call() of a named pool, when the lane is not
 *	biased to this thread (named_lane_call_biased() ran the call
 *	otherwise)
 * @pool: the pool
 * @l: the lane
 * @fn: the call
 * @c: its arguments
 *
 * Return: what @fn returned.
 */
int named_lane_call(struct hkv_pool *pool, struct lane *l, lane_fn fn, struct lane_call *c)
{
	struct named_hdr *h = l->named;
	struct named_tls *t = &named_tls;
	uint8_t slot1 = (uint8_t)(pool->named->slot + 1);	/* local_slot(h), known */
	uint32_t me = lock_word(t, slot1), v = 0;
	int ret;

	if (likely(__atomic_compare_exchange_n(lane_word(l), &v, me, false, __ATOMIC_ACQUIRE,
					       __ATOMIC_RELAXED)) &&
	    likely(!HKV_LOAD(&l->bias)))
		hold_enter(t, h, slot1);
	else
		lane_settle(h, l, me, slot1, v && word_lock_slow(h, lane_word(l), me));
	bins_map(pool, l);
	ret = fn(pool, l, c);
	bias_count(l, me);
	hold_leave(t);
	word_unlock(lane_word(l));
	return ret;
}
