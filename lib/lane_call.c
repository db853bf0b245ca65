// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lane_call.c - the lane lock (a futex word), its bias to a lone owner,
 * and lane_call()'s slow paths: a call that finds its lane locked, or whose
 * thread is not the lane's owner, waits for the holder to run it (flat
 * combining; struct lane_call in internal.h says why).
 */
#include <linux/membarrier.h>
#include <pthread.h>

#include "internal.h"

/* a waiting caller's line: posted, owner and the slot, one line */
_Static_assert(offsetof(struct lane, slot) + sizeof(struct lane_slot) <=
	       offsetof(struct lane, posted) + 64, "the slot spills out of the posted line");

/*
 * Every wait here is counted in pauses, and a pause lasts 10 ns on one CPU
 * and 27 ns on another (an AMD EPYC guest). The counts below were tuned
 * where it lasted 10 ns (hkv-bench lanes); lane_wait_setup() times the
 * pause once per process and scales them to last as long here: unscaled on
 * the 27 ns CPU, a waiting caller looked at its result every 1.3 us instead
 * of every 0.5, and a handoff ran at 0.47-0.53x one thread instead of 0.74x.
 */
#define LANE_PAUSE_NS	10	/* the pause the counts were tuned for */
#define LANE_LOCK_SPIN	128	/* rounds before lane_lock() sleeps */
#define LANE_POLL	48	/* see wait_round() */
#define LANE_GRACE	384
#define LANE_SPIN_MAX	4096

#define LANE_WAITS_TUNED	{ LANE_LOCK_SPIN, LANE_POLL, LANE_GRACE, LANE_SPIN_MAX }

struct lane_waits lane_waits = LANE_WAITS_TUNED;

/* a count tuned for LANE_PAUSE_NS pauses, for pauses of ps picoseconds:
 * at least 4, at most 8 times the count */
static unsigned wait_scaled(unsigned count, uint64_t ps)
{
	uint64_t n = (uint64_t)count * LANE_PAUSE_NS * 1000 / HKV_MAX(ps, 1ull);

	return (unsigned)HKV_MAX(HKV_MIN(n, 8ull * count), 4ull);
}

/**
 * lane_waits_scaled() - the lane waits for a CPU whose pause lasts @ns_1024
 *	nanoseconds per 1024
 * @ns_1024: the time of 1024 pauses; 0 (no clock) leaves the counts as tuned
 *
 * Return: the counts.
 */
struct lane_waits lane_waits_scaled(uint64_t ns_1024)
{
	uint64_t ps = ns_1024 * 1000 / 1024;

	if (!ns_1024)
		return (struct lane_waits)LANE_WAITS_TUNED;
	return (struct lane_waits){ wait_scaled(LANE_LOCK_SPIN, ps), wait_scaled(LANE_POLL, ps),
				    wait_scaled(LANE_GRACE, ps), wait_scaled(LANE_SPIN_MAX, ps) };
}

/* lane_wait_setup()'s once: the shortest of three timings of 1024 pauses
 * (a preemption inside one would shorten every wait) */
static void wait_calibrate(void)
{
	uint64_t best = UINT64_MAX;

	for (int t = 0; t < 3; t++) {
		uint64_t t0 = os->now_ns(), dt;

		for (int i = 0; i < 1024; i++)
			cpu_relax();
		dt = os->now_ns() - t0;
		best = HKV_MIN(best, dt);
	}
	lane_waits = lane_waits_scaled(best);
	hkv_log(HKV_LOG_DEBUG, "lane waits: %llu ns per 1024 pauses: poll %u, grace %u, "
		"spin %u, lock spin %u pauses", (unsigned long long)best, lane_waits.poll,
		lane_waits.grace, lane_waits.spin_max, lane_waits.lock_spin);
}

/**
 * lane_wait_setup() - scale the lane waits to this CPU's pause, once per
 *	process (about 0.1 ms, at the first pool's creation)
 *
 * Every pool calls it before it exists, so every lane wait runs after it.
 */
void lane_wait_setup(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	log_once(&once, wait_calibrate);	/* it logs the counts */
}

/**
 * lane_lock_wait() - lane_lock() when the lock is held: spin, then sleep
 * @l: the lane
 *
 * A sleeper marks the lock LANE_SLEEPERS, so the release that finds that
 * mark wakes one; a woken thread marks it again when it takes the lock (it
 * cannot know whether others still sleep).
 */
void lane_lock_wait(struct lane *l)
{
	for (unsigned spin = 0; spin < lane_waits.lock_spin; spin++) {
		if (HKV_LOAD(&l->lock) == LANE_UNLOCKED && lane_trylock(l))
			return;
		cpu_relax();
	}
	while (__atomic_exchange_n(&l->lock, LANE_SLEEPERS, __ATOMIC_ACQUIRE) != LANE_UNLOCKED)
		os->futex_wait(&l->lock, LANE_SLEEPERS);
	if (HKV_LOAD(&l->bias))
		lane_unbias(l);
	lane_run_deferred(l);
}

/**
 * lane_bias_setup() - can lanes of a new pool be biased?
 *
 * Registers the process for expedited private membarrier(2) (idempotent),
 * which lane_unbias() needs; HUGEKV_LANE_BIAS=0 turns biasing off.
 *
 * Return: true when lanes may be biased.
 */
bool lane_bias_setup(void)
{
	int err;

	if (!env_get()->lane_bias)
		return false;
	err = os->membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED);
	if (err)
		hkv_log(HKV_LOG_DEBUG, "membarrier registration: %s: lanes stay unbiased",
			hkv_strerror(err));
	return !err;
}

/**
 * lane_bias_on() - bias a lane to its owner
 * @pool: the pool
 * @l: the lane, locked by its owner, which ran LANE_BIAS_AFTER calls in a
 *	row with no other thread at the lane
 */
void lane_bias_on(const struct hkv_pool *pool, struct lane *l)
{
	if (pool->lane_bias && !HKV_LOAD(&l->posted) &&
	    HKV_LOAD(&l->slot.state) == LANE_SLOT_FREE)
		HKV_STORE(&l->bias, 1);
}

/**
 * lane_unbias() - revoke a lane's bias once its lock is taken
 * @l: the lane, just locked by this thread
 *
 * The owner announces a call in l->busy and then reads the lock word; this
 * thread wrote the lock word and then reads busy. Neither order holds on
 * its own (a store may pass a later load), so membarrier(2) runs a full
 * barrier on the owner's CPU: either its busy store is visible now, and
 * this thread waits for the call to end, or its look at the lock comes
 * after and finds it held. The owner itself revokes nothing: it runs no
 * call while it holds the lock.
 */
void lane_unbias(struct lane *l)
{
	if (HKV_LOAD(&l->owner) == __builtin_thread_pointer())
		return;
	/* cannot fail: lane_bias_setup() registered the process, and without
	 * that no lane is biased */
	(void)os->membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
	while (__atomic_load_n(&l->busy, __ATOMIC_ACQUIRE))
		cpu_relax();
	HKV_STORE(&l->bias, 0);
	l->quiet = 0;
	l->revocations++;
}

/**
 * lane_serve_biased() - a biased owner found calls waiting after its own
 * @l: the lane, not locked
 *
 * Another thread is at the lane: the owner locks it (revoking nothing, the
 * bias is its own), drops the bias, and runs the calls before it unlocks.
 */
void lane_serve_biased(struct lane *l)
{
	lane_lock(l);
	HKV_STORE(&l->bias, 0);
	lane_unlock(l);
}

/* lane_release() found a sleeper */
void lane_wake(struct lane *l)
{
	os->futex_wake(&l->lock, 1);
}

/*
 * A waiting caller looks at its result every LANE_POLL pauses (about 0.5 us
 * once lane_wait_setup() scaled it), not at every one: each look pulls the
 * result's line back from the holder, whose next write to it then waits for
 * the line to return. Looking at every pause, two threads on one lane got 0.71x one
 * thread's throughput and a handoff 0.52x; every 48, 0.86x and 0.55x
 * (hkv-bench lanes; longer gaps favour the first and
 * cost the second).
 * A caller that is not the owner waits LANE_GRACE pauses for the owner to
 * run its call before it tries the lock itself, then tries it at every
 * look (the holder may have unlocked just before the call was posted);
 * after LANE_SPIN_MAX it sleeps on the lock: a holder that is descheduled
 * must not keep it spinning.
 *
 * A caller that takes the lock so becomes the owner, unless its call is a
 * free. A thread that frees what another allocates (a backup thread) comes
 * here only for a free that could not be deferred (lane_defer.c), and it
 * takes the lock only when the allocating thread did not run the free in
 * time: descheduled, or waiting for memory those very frees give back. As
 * the owner it would take the lane from the thread that calls it most:
 * every allocation would then wait for a free to run it, or a grace to
 * take the lane back, and the frees would run on the freeing thread instead
 * of being queued.
 */

/* the call in the slot, run by the holder */
static void slot_run(struct hkv_pool *pool, struct lane *l)
{
	struct lane_slot *sl = &l->slot;
	struct lane_call c = { .n = sl->n, .ext = sl->ext };

	if (sl->ext) {
		c.flags = (unsigned)(sl->a >> 32);
		c.max_ext = (unsigned)sl->a;
	} else {
		c.start = sl->a;
	}
	sl->ret = sl->fn(pool, l, &c);
	__atomic_store_n(&sl->state, LANE_SLOT_DONE, __ATOMIC_RELEASE);
}

/**
 * lane_serve() - run the calls waiting on a locked lane
 * @l: the lane, locked by the caller
 * @mine: the caller's own listed call, or NULL (not counted as served)
 *
 * Runs the slot's call and takes the whole list at once; a call posted
 * after that is run by the next holder, or by its own caller once it gets
 * the lock.
 */
void lane_serve(struct lane *l, const struct lane_call *mine)
{
	struct lane_call *c;

	l->quiet = 0;		/* another thread is at the lane */
	if (__atomic_load_n(&l->slot.state, __ATOMIC_ACQUIRE) == LANE_SLOT_POSTED) {
		/* a call posted after its caller's deferred frees sees them */
		lane_run_deferred(l);
		slot_run(l->slot.pool, l);
		l->c.served_calls++;
	}
	if (!HKV_LOAD(&l->posted))
		return;
	c = __atomic_exchange_n(&l->posted, NULL, __ATOMIC_ACQUIRE);
	while (c) {
		struct lane_call *next = c->next;	/* c is the caller's once done */

		lane_run_deferred(l);	/* as for the slot's */
		c->ret = c->fn(c->pool, l, c);
		l->c.served_calls += c != mine;
		__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
		c = next;
	}
}

/* a waiting caller's pause between two looks at its result; then the lock
 * if it is free past the grace, or at once past the spinning (false: this
 * thread holds the lock now) */
static inline bool wait_round(struct lane *l, unsigned spin, unsigned grace)
{
	for (unsigned i = 0; i < lane_waits.poll; i++)
		cpu_relax();
	if (spin >= lane_waits.spin_max) {
		lane_lock(l);
		return false;
	}
	return spin < grace || !lane_trylock(l);
}

/* wait in the slot (claimed by this thread) */
static int slot_wait(struct lane *l, lane_fn fn, struct lane_call *c, unsigned grace)
{
	struct lane_slot *sl = &l->slot;
	unsigned spin;
	int ret;

	sl->fn = fn;
	sl->pool = c->pool;
	sl->a = c->ext ? (uint64_t)c->flags << 32 | c->max_ext : c->start;
	sl->n = c->n;
	sl->ext = c->ext;
	__atomic_store_n(&sl->state, LANE_SLOT_POSTED, __ATOMIC_RELEASE);
	for (spin = lane_waits.poll;
	     __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != LANE_SLOT_DONE;
	     spin += lane_waits.poll)
		if (!wait_round(l, spin, grace))
			goto own;
	ret = sl->ret;
	__atomic_store_n(&sl->state, LANE_SLOT_FREE, __ATOMIC_RELEASE);
	return ret;

own:
	/* under the lock the slot is still posted (run it here) or done */
	if (!c->frees)
		HKV_STORE(&l->owner, __builtin_thread_pointer());
	l->quiet = 0;
	if (HKV_LOAD(&sl->state) == LANE_SLOT_POSTED)
		ret = fn(c->pool, l, c);
	else
		ret = sl->ret;
	__atomic_store_n(&sl->state, LANE_SLOT_FREE, __ATOMIC_RELEASE);
	lane_unlock(l);
	return ret;
}

/* wait in the list (the slot is taken) */
static int list_wait(struct lane *l, lane_fn fn, struct lane_call *c, unsigned grace)
{
	struct lane_call *head = HKV_LOAD(&l->posted);
	unsigned spin;

	c->fn = fn;
	c->done = 0;
	do
		c->next = head;
	while (!__atomic_compare_exchange_n(&l->posted, &head, c, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
	for (spin = lane_waits.poll; !__atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
	     spin += lane_waits.poll)
		if (!wait_round(l, spin, grace))
			goto own;
	return c->ret;

own:
	/* c is done, or still listed and run now */
	if (!c->frees)
		HKV_STORE(&l->owner, __builtin_thread_pointer());
	lane_serve(l, c);
	lane_release(l);
	return c->ret;
}

/**
 * lane_call_slow() - lane_call() when this thread is not the owner or the
 *	lock is held
 * @pool: the pool
 * @l: the lane
 * @fn: the call
 * @call: its arguments, with @call.pool set: a copy, which lives in this
 *	frame until the call is done (a holder may run it from here)
 *
 * Return: what @fn returned, run by the holder or by this thread.
 */
int lane_call_slow(struct hkv_pool *pool, struct lane *l, lane_fn fn, struct lane_call call)
{
	struct lane_call *c = &call;
	void *me = __builtin_thread_pointer(), *owner = HKV_LOAD(&l->owner);
	unsigned grace = owner && owner != me ? lane_waits.grace : 0;
	int free_slot = LANE_SLOT_FREE, ret;

	if (!grace && lane_trylock(l)) {
		if (owner != me) {	/* the lane's first caller */
			HKV_STORE(&l->owner, me);
			l->quiet = 0;
		}
		ret = fn(pool, l, c);
		lane_unlock(l);
		return ret;
	}
	if (__atomic_compare_exchange_n(&l->slot.state, &free_slot, LANE_SLOT_FILLING, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return slot_wait(l, fn, c, grace);
	return list_wait(l, fn, c, grace);
}
