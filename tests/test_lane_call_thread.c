// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_lane_call_thread.c - calls that find their lane locked are run by
 * the thread holding the lock (lane_call(), flat combining): posted
 * allocations and frees get the answer they would have got alone, errors
 * included, with nothing changed on an error; several posters at once;
 * a caller whose owner went quiet takes the lane over; a thread that cannot
 * get the lock sleeps and is woken; a one-lane handoff
 * (one thread allocates, the other frees what it is handed) keeps every
 * page with one holder. The test thread holds a lane's lock itself to make
 * calls wait, so the posted path runs every time, not by chance. Run under
 * ThreadSanitizer by `make check`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "internal.h"

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

static uint64_t served(struct hkv_pool *pool)
{
	struct hkv_stats st = { .sz = sizeof(st) };

	assert_int_equal(hkv_stats(pool, &st), 0);
	return st.served_calls;
}

static struct hkv_pool *pool_new(uint64_t npages)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = npages, .nlanes = 1 };
	struct hkv_pool *pool;

	assert_int_equal(hkv_pool_create(&o, &pool), 0);
	return pool;
}

/* start the calls with lane 0 locked here, wait until all are posted and
 * none has returned, then unlock: the unlock runs them */
static void run_posted(struct hkv_pool *pool, struct call *c, unsigned n)
{
	struct lane *l = &pool->lanes[0];
	uint64_t before = served(pool);
	unsigned i;

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

/* the owner went quiet: another thread's call waits out the grace, runs
 * itself and makes that thread the owner */
static void test_owner_moves(void **state)
{
	struct hkv_pool *pool = pool_new(1024);
	struct call a = { .npages = 3 };
	struct hkv_extent e;

	(void)state;
	assert_int_equal(hkv_alloc(pool, 1, 0, 0, &e, 1), 1);
	assert_true(lane_owned(&pool->lanes[0]));
	a.pool = pool;
	assert_int_equal(pthread_create(&a.tid, NULL, do_call, &a), 0);
	pthread_join(a.tid, NULL);
	assert_int_equal(a.ret, 1);
	assert_int_equal(a.ext[0].start, 1);
	assert_false(lane_owned(&pool->lanes[0]));
	assert_int_equal(served(pool), 0);
	assert_int_equal(hkv_free(pool, &e, 1), 0);	/* and back */
	assert_true(lane_owned(&pool->lanes[0]));
	assert_int_equal(hkv_free(pool, a.ext, 1), 0);
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

static void hold(struct handoff *h, const struct hkv_extent *e, uint32_t from, uint32_t to)
{
	for (uint64_t p = e->start; p < e->start + e->len; p++) {
		uint32_t expect = from;

		if (!__atomic_compare_exchange_n(&h->holder[p], &expect, to, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			__atomic_add_fetch(&h->errors, 1, __ATOMIC_RELAXED);
	}
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
	assert_int_equal(hkv_available(h.pool), 512);
	assert_int_equal(hkv_check(h.pool), 0);
	free(h.holder);
	hkv_pool_destroy(h.pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_posted_alloc_free),
		cmocka_unit_test(test_posted_errors),
		cmocka_unit_test(test_posted_free_many),
		cmocka_unit_test(test_many_posters),
		cmocka_unit_test(test_owner_moves),
		cmocka_unit_test(test_lock_sleeper),
		cmocka_unit_test(test_handoff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
