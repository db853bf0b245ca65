// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_lane_call_thread.c - calls that find their lane locked are run by
 * the thread holding the lock (lane_call(), flat combining): posted
 * allocations and frees get the answer they would have got alone, errors
 * included, with nothing changed on an error; several posters at once;
 * a caller whose owner went quiet takes the lane over (an allocation; a
 * free runs and leaves the owner); a thread that cannot
 * get the lock sleeps and is woken; a one-lane handoff
 * (one thread allocates, the other frees what it is handed) keeps every
 * page with one holder. The test thread holds a lane's lock itself to make
 * calls wait, so the posted path runs every time, not by chance.
 * A lane used by one thread only is biased to it (calls without the lock
 * word): the bias comes after LANE_BIAS_AFTER calls, another thread's lock
 * revokes it, waiting for a biased call in progress to end; an owner that
 * finds the lock held waits; posted calls are still run; without
 * membarrier(2) (injected) or with HUGEKV_LANE_BIAS=0 no lane is biased.
 * The waits, counted in pauses, are scaled once per process to the pause's
 * length (an injected clock).
 * Run under ThreadSanitizer by `make check`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include "hkv_test_mem.h"

#define POSTERS	4

struct call {
	struct hkv_pool *pool;
	bool is_free;
	unsigned nfree;		/* extents to free (0: 1) */
	struct hkv_extent ext[4];
	uint64_t npages;
	int ret;
	int returned;
	pthread_t tid;
};

static void *do_call(void *arg)
{
	struct call *c = arg;

	if (c->is_free)
		c->ret = hkv_free(c->pool, c->ext, c->nfree ? c->nfree : 1);
	else
		c->ret = hkv_alloc(c->pool, c->npages, 0, 0, c->ext, 4);
	__atomic_store_n(&c->returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

static unsigned posted_count(struct lane *l)
{
	unsigned n = __atomic_load_n(&l->slot.state, __ATOMIC_ACQUIRE) == LANE_SLOT_POSTED;

	/* the list is only read here while its callers wait (they cannot
	 * return before the holder runs them), so walking it is safe */
	for (struct lane_call *c = __atomic_load_n(&l->posted, __ATOMIC_ACQUIRE); c;
	     c = c->next)
		n++;
	return n;
}

static struct hkv_stats stats_of(struct hkv_pool *pool)
{
	struct hkv_stats st = { .sz = sizeof(st) };

	assert_int_equal(hkv_stats(pool, &st), 0);
	return st;
}

static uint64_t served(struct hkv_pool *pool)
{
	return stats_of(pool).served_calls;
}

static struct hkv_pool *pool_new(uint64_t npages)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = npages, .nlanes = 1 };
	struct hkv_pool *pool;

	assert_int_equal(hkv_pool_create(&o, &pool), 0);
	return pool;
}

/* start the calls with lane 0 locked here, wait until all are posted and
 * none has returned, then unlock: the unlock runs them. Their frees are
 * not deferred (answered at once, lane_defer.c): test_lane_defer_thread
 * tests those */
static void run_posted(struct hkv_pool *pool, struct call *c, unsigned n)
{
	struct lane *l = &pool->lanes[0];
	uint64_t before = served(pool);
	unsigned i;

	pool->lane_defer = false;
	lane_lock(l);
	for (i = 0; i < n; i++) {
		c[i].pool = pool;
		assert_int_equal(pthread_create(&c[i].tid, NULL, do_call, &c[i]), 0);
	}
	while (posted_count(l) < n)
		sched_yield();
	for (i = 0; i < n; i++)
		assert_int_equal(__atomic_load_n(&c[i].returned, __ATOMIC_ACQUIRE), 0);
	lane_unlock(l);
	for (i = 0; i < n; i++)
		pthread_join(c[i].tid, NULL);
	assert_int_equal(served(pool) - before, n);
	assert_null(l->posted);
	assert_int_equal(__atomic_load_n(&l->slot.state, __ATOMIC_ACQUIRE), LANE_SLOT_FREE);
}

static void test_posted_alloc_free(void **state)
{
	struct hkv_pool *pool = pool_new(1024);
	struct call a = { .npages = 5 }, f = { .is_free = true };

	(void)state;
	run_posted(pool, &a, 1);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.ext[0].start, 0);	/* what a lone call gets */
	assert_int_equal(a.ext[0].len, 5);
	assert_int_equal(hkv_available(pool), 1024 - 5);
	f.ext[0] = a.ext[0];
	run_posted(pool, &f, 1);
	assert_int_equal(f.ret, 0);
	assert_int_equal(hkv_available(pool), 1024);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

/* a posted call's errors reach its caller, and change nothing */
static void test_posted_errors(void **state)
{
	struct hkv_pool *pool = pool_new(1024);
	struct hkv_extent e;
	struct call f = { .is_free = true, .ext = { { 100, 4 } } };
	struct call big = { .npages = 2000 };
	struct call twice = { .is_free = true };

	(void)state;
	assert_int_equal(hkv_alloc(pool, 8, 0, 0, &e, 1), 1);
	run_posted(pool, &f, 1);		/* pages that are free */
	assert_int_equal(f.ret, -EINVAL);
	run_posted(pool, &big, 1);		/* more than the pool */
	assert_int_equal(big.ret, -ENOMEM);
	assert_int_equal(hkv_available(pool), 1024 - 8);
	assert_int_equal(hkv_free(pool, &e, 1), 0);
	twice.ext[0] = e;
	run_posted(pool, &twice, 1);		/* freed already */
	assert_int_equal(twice.ret, -EINVAL);
	assert_int_equal(hkv_available(pool), 1024);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

/* a free of several extents in one lane is run by the holder too, all or
 * nothing */
static void test_posted_free_many(void **state)
{
	struct hkv_pool *pool = pool_new(1024);
	struct hkv_extent e[3];
	struct call bad = { .is_free = true, .nfree = 2 }, good = { .is_free = true, .nfree = 3 };

	(void)state;
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(hkv_alloc(pool, 4, 0, 0, &e[i], 1), 1);
	bad.ext[0] = e[0];
	bad.ext[1] = (struct hkv_extent){ 500, 2 };	/* free pages */
	run_posted(pool, &bad, 1);
	assert_int_equal(bad.ret, -EINVAL);
	assert_int_equal(hkv_available(pool), 1024 - 12);
	assert_int_equal(hkv_extents_allocated(pool, e, 3), 0);	/* nothing freed */
	memcpy(good.ext, e, sizeof(e));
	run_posted(pool, &good, 1);
	assert_int_equal(good.ret, 0);
	assert_int_equal(hkv_available(pool), 1024);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

/* several callers waiting at once each get their own answer */
static void test_many_posters(void **state)
{
	struct hkv_pool *pool = pool_new(4096);
	struct call c[POSTERS] = { { 0 } };
	bool seen[4096] = { false };
	unsigned i;

	(void)state;
	for (i = 0; i < POSTERS; i++)
		c[i].npages = 1 + i;
	run_posted(pool, c, POSTERS);
	for (i = 0; i < POSTERS; i++) {
		assert_int_equal(c[i].ret, 1);
		assert_int_equal(c[i].ext[0].len, 1 + i);
		for (uint64_t p = c[i].ext[0].start; p < c[i].ext[0].start + c[i].ext[0].len; p++) {
			assert_false(seen[p]);	/* no page handed out twice */
			seen[p] = true;
		}
	}
	assert_int_equal(hkv_available(pool), 4096 - (1 + 2 + 3 + 4));
	for (i = 0; i < POSTERS; i++) {
		c[i].is_free = true;
		c[i].returned = 0;
	}
	run_posted(pool, c, POSTERS);
	for (i = 0; i < POSTERS; i++)
		assert_int_equal(c[i].ret, 0);
	assert_int_equal(hkv_available(pool), 4096);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

/* the owner went quiet: another thread's allocation waits out the grace,
 * runs itself and makes that thread the owner; a free (one extent, or
 * several) runs itself the same way but leaves the owner as it was */
static void test_owner_moves(void **state)
{
	struct hkv_pool *pool = pool_new(1024);
	struct call a = { .npages = 3 };
	struct hkv_extent e, m[2];

	(void)state;
	pool->lane_defer = false;	/* the frees below wait (take the lock) */
	assert_int_equal(hkv_alloc(pool, 1, 0, 0, &e, 1), 1);
	assert_true(lane_owned(&pool->lanes[0]));
	a.pool = pool;
	assert_int_equal(pthread_create(&a.tid, NULL, do_call, &a), 0);
	pthread_join(a.tid, NULL);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.ext[0].start, 1);
	assert_false(lane_owned(&pool->lanes[0]));
	assert_int_equal(served(pool), 0);
	assert_int_equal(hkv_free(pool, &e, 1), 0);
	assert_false(lane_owned(&pool->lanes[0]));
	assert_int_equal(hkv_alloc(pool, 2, 0, HKV_ALLOC_CONTIG, m, 1), 1);
	assert_int_equal(hkv_alloc(pool, 2, 0, HKV_ALLOC_CONTIG, &m[1], 1), 1);
	assert_true(lane_owned(&pool->lanes[0]));	/* an allocation takes it back */
	a = (struct call){ .pool = pool, .is_free = true, .nfree = 2,
			   .ext = { m[0], m[1] } };
	assert_int_equal(pthread_create(&a.tid, NULL, do_call, &a), 0);
	pthread_join(a.tid, NULL);
	assert_int_equal(a.ret, 0);
	assert_true(lane_owned(&pool->lanes[0]));	/* still this thread's */
	assert_int_equal(hkv_free(pool, &(struct hkv_extent){ 1, 3 }, 1), 0);
	assert_int_equal(hkv_available(pool), 1024);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

static void *take_stats(void *arg)
{
	struct call *c = arg;
	struct hkv_stats st = { .sz = sizeof(st) };

	c->ret = hkv_stats(c->pool, &st);	/* takes every lane's lock */
	__atomic_store_n(&c->returned, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* a thread that cannot get a lane's lock sleeps on it, marks it, and the
 * unlock wakes it */
static void test_lock_sleeper(void **state)
{
	struct hkv_pool *pool = pool_new(1024);
	struct lane *l = &pool->lanes[0];
	struct call c = { .pool = pool };
	unsigned waited = 0;

	(void)state;
	lane_lock(l);
	assert_int_equal(pthread_create(&c.tid, NULL, take_stats, &c), 0);
	while (__atomic_load_n(&l->lock, __ATOMIC_ACQUIRE) != LANE_SLEEPERS && waited++ < 5000)
		usleep(1000);
	assert_int_equal(__atomic_load_n(&l->lock, __ATOMIC_ACQUIRE), LANE_SLEEPERS);
	usleep(20000);			/* asleep, not spinning: it has not returned */
	assert_int_equal(__atomic_load_n(&c.returned, __ATOMIC_ACQUIRE), 0);
	lane_unlock(l);
	pthread_join(c.tid, NULL);
	assert_int_equal(c.ret, 0);
	assert_int_equal(__atomic_load_n(&l->lock, __ATOMIC_ACQUIRE), LANE_UNLOCKED);
	hkv_pool_destroy(pool);
}

/* the engine pattern on one lane: one thread allocates, the other frees
 * what it is handed; every page has one holder at a time */
#define RING	64
#define HANDED	20000

struct handoff {
	struct hkv_pool *pool;
	struct hkv_extent ring[RING];
	uint64_t head, tail;	/* consumer, producer */
	uint32_t *holder;	/* per page: 0 free, 1 handed out */
	int errors;
};

/* every page of e goes from holder from to holder to; a page held by
 * another is an error */
static void holder_move(uint32_t *holder, int *errors, const struct hkv_extent *e,
			uint32_t from, uint32_t to)
{
	for (uint64_t p = e->start; p < e->start + e->len; p++) {
		uint32_t expect = from;

		if (!__atomic_compare_exchange_n(&holder[p], &expect, to, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			__atomic_add_fetch(errors, 1, __ATOMIC_RELAXED);
	}
}

static void hold(struct handoff *h, const struct hkv_extent *e, uint32_t from, uint32_t to)
{
	holder_move(h->holder, &h->errors, e, from, to);
}

static void *produce(void *arg)
{
	struct handoff *h = arg;
	uint64_t t = 0, s = 0x9e3779b97f4a7c15ull;

	while (t < HANDED) {
		struct hkv_extent e;
		int k;

		if (t - __atomic_load_n(&h->head, __ATOMIC_ACQUIRE) == RING) {
			sched_yield();
			continue;
		}
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		k = hkv_alloc(h->pool, 1 + s % 16, 0, HKV_ALLOC_CONTIG, &e, 1);
		if (k == -ENOMEM) {
			sched_yield();
			continue;
		}
		if (k != 1) {
			__atomic_add_fetch(&h->errors, 1, __ATOMIC_RELAXED);
			break;
		}
		hold(h, &e, 0, 1);
		h->ring[t % RING] = e;
		__atomic_store_n(&h->tail, ++t, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&h->tail, HANDED + 1, __ATOMIC_RELEASE);	/* done */
	return NULL;
}

static void *consume(void *arg)
{
	struct handoff *h = arg;
	uint64_t i = 0;

	for (;;) {
		uint64_t t = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);

		if (t > HANDED && i >= HANDED)
			break;
		if (i == t || i >= HANDED) {
			sched_yield();
			continue;
		}
		hold(h, &h->ring[i % RING], 1, 0);
		if (hkv_free(h->pool, &h->ring[i % RING], 1))
			__atomic_add_fetch(&h->errors, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&h->head, ++i, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void test_handoff(void **state)
{
	struct handoff h = { .pool = pool_new(512) };
	pthread_t p, c;

	(void)state;
	h.holder = calloc(512, sizeof(*h.holder));
	assert_non_null(h.holder);
	assert_int_equal(pthread_create(&p, NULL, produce, &h), 0);
	assert_int_equal(pthread_create(&c, NULL, consume, &h), 0);
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	assert_int_equal(h.errors, 0);
	/* the consumer's first free found the producer the lane's owner and
	 * its queue empty: answered at once (lane_defer.c) */
	assert_true(stats_of(h.pool).deferred_frees > 0);
	assert_int_equal(hkv_available(h.pool), 512);
	assert_int_equal(hkv_check(h.pool), 0);
	free(h.holder);
	hkv_pool_destroy(h.pool);
}

/* ---- the bias ------------------------------------------------------------ */

static uint64_t revocations(struct hkv_pool *pool)
{
	struct hkv_stats st = { .sz = sizeof(st) };

	assert_int_equal(hkv_stats(pool, &st), 0);
	return st.bias_revocations;
}

static bool lane_biased(struct lane *l)
{
	return __atomic_load_n(&l->bias, __ATOMIC_ACQUIRE);
}

/* this thread's calls on lane 0 until it is biased (or could have been) */
static void bias_lane(struct hkv_pool *pool)
{
	struct hkv_extent e;

	for (unsigned i = 0; i < LANE_BIAS_AFTER; i++) {
		assert_int_equal(hkv_alloc(pool, 1 + i % 7, 0, 0, &e, 1), 1);
		assert_int_equal(hkv_free(pool, &e, 1), 0);
	}
}

/* the kernel offers expedited private membarrier (else the bias is never
 * taken; test_bias_needs_membarrier covers that path by injection) */
static bool have_membarrier(void)
{
	long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) {
		print_message("no expedited private membarrier here: bias not tested live\n");
		return false;
	}
	return true;
}

/* a 1024-page pool whose lane 0 is biased to this thread (the test is
 * skipped where the kernel lacks expedited private membarrier) */
static struct hkv_pool *biased_pool(void)
{
	struct hkv_pool *pool;

	if (!have_membarrier())
		skip();
	pool = pool_new(1024);
	assert_true(pool->lane_bias);
	bias_lane(pool);
	assert_true(lane_biased(&pool->lanes[0]));
	return pool;
}

/* one thread's calls bias the lane; its own stats keep it; another
 * thread's lock revokes it once; the owner's answers stay a lone caller's */
static void test_bias_taken_and_revoked(void **state)
{
	struct hkv_pool *pool = biased_pool();
	struct lane *l = &pool->lanes[0];
	struct call s = { .pool = pool };
	struct hkv_extent e;

	(void)state;
	assert_int_equal(hkv_alloc(pool, 5, 0, 0, &e, 1), 1);
	assert_int_equal(e.start, 0);
	assert_int_equal(__atomic_load_n(&l->lock, __ATOMIC_ACQUIRE), LANE_UNLOCKED);
	assert_int_equal(__atomic_load_n(&l->busy, __ATOMIC_ACQUIRE), 0);
	assert_int_equal(revocations(pool), 0);		/* the owner's own lock */
	assert_true(lane_biased(l));
	assert_int_equal(pthread_create(&s.tid, NULL, take_stats, &s), 0);
	pthread_join(s.tid, NULL);
	assert_int_equal(s.ret, 0);
	assert_false(lane_biased(l));
	assert_int_equal(revocations(pool), 1);
	assert_true(lane_owned(l));			/* a lock is not a call */
	assert_int_equal(hkv_free(pool, &e, 1), 0);
	assert_int_equal(hkv_available(pool), 1024);
	bias_lane(pool);				/* and again */
	assert_true(lane_biased(l));
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

struct inside {
	struct hkv_pool *pool;
	int entered, leave;
	int revoked;		/* the revoker returned (with its stats) */
	int early;		/* ... while the call was still inside */
	uint64_t ret;
};

static int inside_fn(struct hkv_pool *pool, struct lane *l, struct lane_call *c)
{
	struct inside *in = (struct inside *)c->ext;

	(void)pool;
	(void)l;
	__atomic_store_n(&in->entered, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&in->leave, __ATOMIC_ACQUIRE))
		usleep(100);
	return 7;
}

/* once the call is inside: take the lane's lock (hkv_stats) */
static void *revoker(void *arg)
{
	struct inside *in = arg;

	while (!__atomic_load_n(&in->entered, __ATOMIC_ACQUIRE))
		usleep(100);
	in->ret = revocations(in->pool);
	__atomic_store_n(&in->revoked, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* 20 ms after the call went inside, note whether the revoker got through,
 * then let the call end */
static void *releaser(void *arg)
{
	struct inside *in = arg;

	while (!__atomic_load_n(&in->entered, __ATOMIC_ACQUIRE))
		usleep(100);
	usleep(20000);
	in->early = __atomic_load_n(&in->revoked, __ATOMIC_ACQUIRE);
	__atomic_store_n(&in->leave, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* a thread that takes the lock while the owner is inside a biased call
 * waits until the call has ended */
static void test_bias_revoker_waits(void **state)
{
	struct hkv_pool *pool = biased_pool();
	struct lane *l = &pool->lanes[0];
	struct inside in = { .pool = pool };
	struct lane_call c = { .ext = (struct hkv_extent *)&in };
	pthread_t r, w;

	(void)state;
	assert_int_equal(pthread_create(&r, NULL, revoker, &in), 0);
	assert_int_equal(pthread_create(&w, NULL, releaser, &in), 0);
	assert_int_equal(lane_call(pool, l, inside_fn, &c), 7);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	assert_int_equal(in.early, 0);
	assert_int_equal(in.ret, 1);
	assert_false(lane_biased(l));
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

struct holder {
	struct hkv_pool *pool;
	int held, call_returned, seen_returned;
};

/* lock the lane (revoking its bias), hold it 20 ms, note whether the
 * owner's call got through meanwhile, unlock (running the posted call) */
static void *lock_holder(void *arg)
{
	struct holder *h = arg;
	struct lane *l = &h->pool->lanes[0];

	lane_lock(l);
	__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
	usleep(20000);
	h->seen_returned = __atomic_load_n(&h->call_returned, __ATOMIC_ACQUIRE);
	lane_unlock(l);
	return NULL;
}

/* the other order: the lock is held (the bias revoked) when the owner
 * calls; its call waits and is run by the holder's unlock */
static void test_bias_owner_waits(void **state)
{
	struct hkv_pool *pool = biased_pool();
	struct lane *l = &pool->lanes[0];
	struct holder h = { .pool = pool };
	struct hkv_extent e;
	uint64_t before;
	pthread_t t;

	(void)state;
	before = served(pool);
	assert_int_equal(pthread_create(&t, NULL, lock_holder, &h), 0);
	while (!__atomic_load_n(&h.held, __ATOMIC_ACQUIRE))
		usleep(100);
	assert_false(lane_biased(l));
	assert_int_equal(hkv_alloc(pool, 9, 0, 0, &e, 1), 1);
	__atomic_store_n(&h.call_returned, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	assert_int_equal(h.seen_returned, 0);
	assert_int_equal(e.start, 0);
	assert_int_equal(e.len, 9);
	assert_int_equal(served(pool) - before, 1);
	assert_int_equal(revocations(pool), 1);
	assert_int_equal(hkv_free(pool, &e, 1), 0);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

/* a revoker held inside its membarrier(2): it has the lock word but has
 * not yet cleared the bias */
static int mb_entered, mb_leave;

static int slow_membarrier(int cmd)
{
	if (cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED) {
		__atomic_store_n(&mb_entered, 1, __ATOMIC_RELEASE);
		while (!__atomic_load_n(&mb_leave, __ATOMIC_ACQUIRE))
			usleep(100);
	}
	return os_default_ops.membarrier(cmd);
}

static void *stats_only(void *arg)
{
	revocations(arg);
	return NULL;
}

static void *mb_releaser(void *arg)
{
	struct holder *h = arg;

	usleep(20000);
	h->seen_returned = __atomic_load_n(&h->call_returned, __ATOMIC_ACQUIRE);
	__atomic_store_n(&mb_leave, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* the owner calls while a revoker holds the lock word but the bias is
 * still set: the owner sees the lock held and waits for it */
static void test_bias_revoke_window(void **state)
{
	static struct os_ops ops;
	struct hkv_pool *pool = biased_pool();
	struct holder h = { .pool = pool };
	struct hkv_extent e;
	pthread_t r, w;

	(void)state;
	ops = os_default_ops;
	ops.membarrier = slow_membarrier;
	mb_entered = mb_leave = 0;
	os_set_ops(&ops);
	assert_int_equal(pthread_create(&r, NULL, stats_only, pool), 0);
	while (!__atomic_load_n(&mb_entered, __ATOMIC_ACQUIRE))
		usleep(100);
	assert_true(lane_biased(&pool->lanes[0]));
	assert_int_equal(pthread_create(&w, NULL, mb_releaser, &h), 0);
	assert_int_equal(hkv_alloc(pool, 4, 0, 0, &e, 1), 1);
	__atomic_store_n(&h.call_returned, 1, __ATOMIC_RELEASE);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	os_set_ops(NULL);
	assert_int_equal(h.seen_returned, 0);
	assert_int_equal(e.start, 0);
	assert_int_equal(revocations(pool), 1);
	assert_int_equal(hkv_free(pool, &e, 1), 0);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);
}

/* an owner churning on a biased lane (per-page holder words) while another
 * thread, each time it sees the lane biased, takes the lock or calls on
 * the lane: no page is handed out twice, every revocation is counted */
#define BIAS_ROUNDS	8

struct churn {
	struct hkv_pool *pool;
	uint32_t *holder;
	int stop, errors;
	unsigned rounds;
};

static void take(struct churn *ch, const struct hkv_extent *e, uint32_t from, uint32_t to)
{
	holder_move(ch->holder, &ch->errors, e, from, to);
}

static void *bias_owner(void *arg)
{
	struct churn *ch = arg;
	struct hkv_extent live[32];
	uint64_t s = 0x243f6a8885a308d3ull;
	unsigned n = 0;

	while (!__atomic_load_n(&ch->stop, __ATOMIC_ACQUIRE)) {
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		if (n < 32 && (s & 1)) {
			int k = hkv_alloc(ch->pool, 1 + s % 13, 0, HKV_ALLOC_CONTIG, &live[n], 1);

			if (k == 1)
				take(ch, &live[n++], 0, 1);
			else if (k != -ENOMEM)
				__atomic_add_fetch(&ch->errors, 1, __ATOMIC_RELAXED);
		} else if (n) {
			unsigned v = (unsigned)(s >> 8) % n;

			take(ch, &live[v], 1, 0);
			if (hkv_free(ch->pool, &live[v], 1))
				__atomic_add_fetch(&ch->errors, 1, __ATOMIC_RELAXED);
			live[v] = live[--n];
		}
	}
	while (n--) {
		take(ch, &live[n], 1, 0);
		if (hkv_free(ch->pool, &live[n], 1))
			__atomic_add_fetch(&ch->errors, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *bias_visitor(void *arg)
{
	struct churn *ch = arg;
	struct lane *l = &ch->pool->lanes[0];
	struct hkv_extent e;

	for (unsigned r = 0; r < BIAS_ROUNDS; r++) {
		while (!lane_biased(l))
			usleep(200);
		if (r & 1) {		/* a call: posted, or run after the grace */
			if (hkv_alloc(ch->pool, 2, 0, HKV_ALLOC_CONTIG, &e, 1) == 1) {
				take(ch, &e, 0, 2);
				take(ch, &e, 2, 0);
				if (hkv_free(ch->pool, &e, 1))
					__atomic_add_fetch(&ch->errors, 1, __ATOMIC_RELAXED);
			}
		} else {
			revocations(ch->pool);	/* a lock: revokes */
			ch->rounds++;
		}
	}
	__atomic_store_n(&ch->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_bias_churn(void **state)
{
	struct churn ch = { .pool = pool_new(512) };
	pthread_t o, v;

	(void)state;
	if (!have_membarrier()) {
		hkv_pool_destroy(ch.pool);
		skip();
	}
	ch.holder = calloc(512, sizeof(*ch.holder));
	assert_non_null(ch.holder);
	assert_int_equal(pthread_create(&o, NULL, bias_owner, &ch), 0);
	assert_int_equal(pthread_create(&v, NULL, bias_visitor, &ch), 0);
	pthread_join(v, NULL);
	pthread_join(o, NULL);
	assert_int_equal(ch.errors, 0);
	assert_int_equal(ch.rounds, BIAS_ROUNDS / 2);
	assert_true(revocations(ch.pool) >= BIAS_ROUNDS / 2);
	assert_int_equal(hkv_available(ch.pool), 512);
	assert_int_equal(hkv_check(ch.pool), 0);
	free(ch.holder);
	hkv_pool_destroy(ch.pool);
}

/* no membarrier(2) registration (injected), or HUGEKV_LANE_BIAS=0: the
 * lane is never biased, and its calls are answered as ever */
static void test_bias_needs_membarrier(void **state)
{
	struct tm_fault f = { .op = TM_MEMBARRIER, .nth = 0, .err = EPERM,
			      .arg = MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED };
	struct hkv_pool *pool;
	struct hkv_extent e;

	(void)state;
	tm_inject(&f);
	pool = pool_new(1024);
	assert_int_equal(tm_failed(), 1);
	tm_reset();
	assert_false(pool->lane_bias);
	bias_lane(pool);
	assert_false(lane_biased(&pool->lanes[0]));
	assert_int_equal(hkv_alloc(pool, 3, 0, 0, &e, 1), 1);
	assert_int_equal(e.start, 0);
	assert_int_equal(hkv_free(pool, &e, 1), 0);
	assert_int_equal(hkv_check(pool), 0);
	hkv_pool_destroy(pool);

	setenv("HUGEKV_LANE_BIAS", "0", 1);
	env_reload();
	pool = pool_new(1024);
	assert_false(pool->lane_bias);
	bias_lane(pool);
	assert_false(lane_biased(&pool->lanes[0]));
	hkv_pool_destroy(pool);
	unsetenv("HUGEKV_LANE_BIAS");
	env_reload();
}

/* the waits scaled to a pause of the given ns per 1024: tuned at 10 ns */
static void test_wait_scaling(void **state)
{
	struct lane_waits w = lane_waits_scaled(10240), none = lane_waits_scaled(0);

	(void)state;
	assert_memory_equal(&w, &none, sizeof(w));	/* 10 ns: as tuned */
	assert_true(w.poll >= 16 && w.grace > w.poll && w.spin_max > w.grace && w.lock_spin);
	w = lane_waits_scaled(27648);			/* 27 ns: as long in time */
	assert_int_equal(w.poll, none.poll * 10 / 27);
	assert_int_equal(w.grace, none.grace * 10 / 27);
	assert_int_equal(w.spin_max, none.spin_max * 10 / 27);
	assert_int_equal(w.lock_spin, none.lock_spin * 10 / 27);
	w = lane_waits_scaled(1);			/* no pause: at most 8x */
	assert_int_equal(w.poll, 8 * none.poll);
	assert_int_equal(w.spin_max, 8 * none.spin_max);
	w = lane_waits_scaled(1ull << 40);		/* a stalled timing: at least 4 */
	assert_int_equal(w.poll, 4);
	assert_int_equal(w.grace, 4);
	assert_int_equal(w.spin_max, 4);
	assert_int_equal(w.lock_spin, 4);
}

/* a clock that moves 27 ns a pause (27 648 ns between two readings) */
static uint64_t fake_now;

static uint64_t slow_pause_clock(void)
{
	return fake_now += 27648;
}

/* in a child that has made no pool yet: its first pool scales the waits
 * from the clock, once; a second pool, with another clock, changes nothing */
static int child_waits_from_clock(void *arg)
{
	struct lane_waits want = lane_waits_scaled(27648), tuned = lane_waits_scaled(0);
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 1024, .nlanes = 1 };
	struct os_ops ops = tm_ops;
	struct hkv_pool *pool;
	struct tm_log lg;

	(void)arg;		/* no cmocka asserts in a child: step numbers */
	if (memcmp(&lane_waits, &tuned, sizeof(tuned)))
		return 1;		/* a pool was made before the fork */
	ops.now_ns = slow_pause_clock;
	os_set_ops(&ops);
	tm_log_capture(&lg);
	if (hkv_pool_create(&o, &pool))
		return 2;
	if (memcmp(&lane_waits, &want, sizeof(want)))
		return 3;
	hkv_pool_destroy(pool);
	os_set_ops(NULL);
	if (hkv_pool_create(&o, &pool))
		return 4;
	if (memcmp(&lane_waits, &want, sizeof(want)))
		return 5;
	hkv_pool_destroy(pool);
	tm_log_capture(NULL);
	/* said once, at debug level */
	if (!tm_log_has(&lg, "lane waits: 27648 ns per 1024 pauses: poll 17, grace 142, "
			     "spin 1517, lock spin 47 pauses"))
		return 6;
	if (strstr(strstr(lg.text, "lane waits") + 1, "lane waits"))
		return 7;
	return 0;
}

/* runs first: no pool exists in this process yet */
static void test_waits_from_clock(void **state)
{
	(void)state;
	tm_run_in_child(child_waits_from_clock, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_waits_from_clock),
		cmocka_unit_test(test_wait_scaling),
		cmocka_unit_test(test_posted_alloc_free),
		cmocka_unit_test(test_posted_errors),
		cmocka_unit_test(test_posted_free_many),
		cmocka_unit_test(test_many_posters),
		cmocka_unit_test(test_owner_moves),
		cmocka_unit_test(test_lock_sleeper),
		cmocka_unit_test(test_handoff),
		cmocka_unit_test(test_bias_taken_and_revoked),
		cmocka_unit_test(test_bias_revoker_waits),
		cmocka_unit_test(test_bias_owner_waits),
		cmocka_unit_test(test_bias_revoke_window),
		cmocka_unit_test(test_bias_churn),
		cmocka_unit_test(test_bias_needs_membarrier),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
