// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_evict_thread.c - "nothing lost": pinned units keep their bytes and
 * are never evicted, under real threads on a real memory pool.
 *
 * Scheduler threads allocate with HKV_ALLOC_EVICT, write a per-page pattern,
 * add the pages as a unit and pin it (a transfer in flight), then hand it to
 * a transfer thread. The transfer thread checks the pattern, sometimes
 * splits the unit (both halves must stay pinned), and unpins. Scribbler
 * threads allocate with eviction, overwrite what they get and free it. The
 * evict callback overwrites what it is handed, and flags any page that the
 * test holds pinned. Runs under ThreadSanitizer in `make check`.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hugekv.h"

#define NPAGES		2048
#define PAGE_BYTES	4096
#define MAX_EXT		8
#define RING		64
#define INFLIGHT	40	/* pinned units waiting for their transfer */
#define SCHEDULERS	2
#define SCRIBBLERS	2
#define ITERS		3000
#define SPLIT_BIT	(1ull << 62)

struct job {
	uint64_t id;
	unsigned n;
	struct hkv_extent ext[MAX_EXT];
};

static struct {
	struct hkv_pool *pool;
	char *base;
	uint8_t pinmark[NPAGES];	/* 1 while the test holds the page pinned */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job ring[RING];
	unsigned head, tail;		/* under lock */
	bool done, stop;		/* done: schedulers finished; stop: scribblers */
	uint64_t next_id;
	/* results (atomic) */
	uint64_t bad_evictions, bad_bytes, bad_calls, evicted, verified, splits, scribbles;
} g;

static uint64_t *page_words(uint64_t page)
{
	return (uint64_t *)(g.base + page * PAGE_BYTES);
}

static void fill_pattern(const struct hkv_extent *e, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		for (uint64_t p = e[i].start; p < e[i].start + e[i].len; p++)
			for (unsigned w = 0; w < PAGE_BYTES / 8; w++)
				page_words(p)[w] = (p << 16) ^ w ^ 0xc0ffee0000000000ull;
}

static bool check_pattern(const struct hkv_extent *e, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		for (uint64_t p = e[i].start; p < e[i].start + e[i].len; p++)
			for (unsigned w = 0; w < PAGE_BYTES / 8; w++)
				if (page_words(p)[w] != ((p << 16) ^ w ^ 0xc0ffee0000000000ull))
					return false;
	return true;
}

static void set_pinmark(const struct hkv_extent *e, unsigned n, uint8_t v)
{
	for (unsigned i = 0; i < n; i++)
		for (uint64_t p = e[i].start; p < e[i].start + e[i].len; p++)
			__atomic_store_n(&g.pinmark[p], v, __ATOMIC_RELAXED);
}

static void count(uint64_t *c)
{
	__atomic_add_fetch(c, 1, __ATOMIC_RELAXED);
}

/* the engine reuses evicted pages at once: overwrite them */
static void on_evict(void *ctx, uint64_t unit, const struct hkv_extent *ext, unsigned n)
{
	(void)ctx;
	(void)unit;
	for (unsigned i = 0; i < n; i++) {
		for (uint64_t p = ext[i].start; p < ext[i].start + ext[i].len; p++)
			if (__atomic_load_n(&g.pinmark[p], __ATOMIC_RELAXED))
				count(&g.bad_evictions);
		memset(g.base + ext[i].start * PAGE_BYTES, 0xee, ext[i].len * PAGE_BYTES);
	}
	count(&g.evicted);
}

static void push(const struct job *j)
{
	pthread_mutex_lock(&g.lock);
	while (g.tail - g.head == RING)
		pthread_cond_wait(&g.cond, &g.lock);
	g.ring[g.tail++ % RING] = *j;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
}

/* false when the schedulers are done and the ring is empty */
static bool pop(struct job *j)
{
	pthread_mutex_lock(&g.lock);
	while (g.tail == g.head && !g.done)
		pthread_cond_wait(&g.cond, &g.lock);
	if (g.tail == g.head) {
		pthread_mutex_unlock(&g.lock);
		return false;
	}
	*j = g.ring[g.head++ % RING];
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
	return true;
}

static void *scheduler(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct job j;
	int ret;

	for (unsigned it = 0; it < ITERS; it++) {
		ret = hkv_alloc(g.pool, 1 + rand_r(&seed) % 16, HKV_LANE_ANY, HKV_ALLOC_EVICT,
				j.ext, MAX_EXT);
		if (ret < 0)
			continue;	/* everything pinned for now */
		j.n = (unsigned)ret;
		j.id = __atomic_add_fetch(&g.next_id, 1, __ATOMIC_RELAXED);
		fill_pattern(j.ext, j.n);
		if (hkv_unit_add(g.pool, j.id, j.ext, j.n))
			count(&g.bad_calls);
		if (rand_r(&seed) % 2)
			continue;	/* a cold unit, left to eviction */
		ret = hkv_unit_pin(g.pool, j.id);
		if (ret == -ENOENT)
			continue;	/* evicted before the pin: fine */
		if (ret)
			count(&g.bad_calls);
		set_pinmark(j.ext, j.n, 1);
		push(&j);
	}
	return NULL;
}

/* the part of a job past @at pages, for the split-off half */
static struct job tail_of(const struct job *j, uint64_t at)
{
	struct job t = { .id = j->id | SPLIT_BIT };

	for (unsigned i = 0; i < j->n; i++) {
		uint64_t skip = at < j->ext[i].len ? at : j->ext[i].len;

		if (skip < j->ext[i].len)
			t.ext[t.n++] = (struct hkv_extent){ j->ext[i].start + skip,
							    j->ext[i].len - skip };
		at -= skip;
	}
	return t;
}

/* finish one transfer: check the bytes, maybe split, unpin */
static void complete(struct job *j)
{
	uint64_t pages = 0;
	struct job t = { .n = 0 };

	for (unsigned i = 0; i < j->n; i++)
		pages += j->ext[i].len;
	if (!check_pattern(j->ext, j->n))
		count(&g.bad_bytes);
	count(&g.verified);
	if (pages > 1 && j->id % 2) {	/* the radix node splits mid-transfer */
		if (hkv_unit_split(g.pool, j->id, pages / 2, j->id | SPLIT_BIT))
			count(&g.bad_calls);
		t = tail_of(j, pages / 2);
		count(&g.splits);
		sched_yield();
		if (!check_pattern(j->ext, j->n))
			count(&g.bad_bytes);
	}
	set_pinmark(j->ext, j->n, 0);
	if (hkv_unit_unpin(g.pool, j->id))
		count(&g.bad_calls);
	if (t.n && hkv_unit_unpin(g.pool, t.id))
		count(&g.bad_calls);
}

/*
 * Transfers complete in order, INFLIGHT behind the newest: pinned units grow
 * cold while they wait, so eviction meets them at the cold end of the LRU.
 */
static void *transfer(void *arg)
{
	static struct job fifo[INFLIGHT];
	unsigned head = 0, tail = 0;

	(void)arg;
	while (pop(&fifo[tail % INFLIGHT])) {
		if (++tail - head == INFLIGHT)
			complete(&fifo[head++ % INFLIGHT]);
	}
	while (head != tail)
		complete(&fifo[head++ % INFLIGHT]);
	return NULL;
}

static void *scribbler(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	struct hkv_extent e[MAX_EXT];

	while (!__atomic_load_n(&g.stop, __ATOMIC_RELAXED)) {
		int n = hkv_alloc(g.pool, 1 + rand_r(&seed) % 32, HKV_LANE_ANY, HKV_ALLOC_EVICT,
				  e, MAX_EXT);

		if (n < 0) {
			sched_yield();
			continue;
		}
		for (int i = 0; i < n; i++)
			memset(g.base + e[i].start * PAGE_BYTES, 0x5a, e[i].len * PAGE_BYTES);
		if (hkv_free(g.pool, e, (unsigned)n))
			count(&g.bad_calls);
		count(&g.scribbles);
	}
	return NULL;
}

static void test_nothing_lost(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = NPAGES, .page_bytes = PAGE_BYTES,
				   .nlanes = 2, .backing = HKV_BACKING_HUGE_2M,
				   .free_room_low = 0.05, .free_room_high = 0.15 };
	pthread_t sch[SCHEDULERS], scr[SCRIBBLERS], tr;
	struct hkv_stats st = { .sz = sizeof(st) };

	(void)state;
	assert_int_equal(hkv_pool_create(&o, &g.pool), 0);
	g.base = hkv_page_ptr(g.pool, 0);
	assert_non_null(g.base);
	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	hkv_set_evict_fn(g.pool, on_evict, NULL);
	assert_int_equal(pthread_create(&tr, NULL, transfer, NULL), 0);
	for (uintptr_t i = 0; i < SCRIBBLERS; i++)
		assert_int_equal(pthread_create(&scr[i], NULL, scribbler, (void *)(i + 100)), 0);
	for (uintptr_t i = 0; i < SCHEDULERS; i++)
		assert_int_equal(pthread_create(&sch[i], NULL, scheduler, (void *)(i + 1)), 0);
	for (unsigned i = 0; i < SCHEDULERS; i++)
		pthread_join(sch[i], NULL);
	pthread_mutex_lock(&g.lock);
	g.done = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
	pthread_join(tr, NULL);
	__atomic_store_n(&g.stop, true, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < SCRIBBLERS; i++)
		pthread_join(scr[i], NULL);

	print_message("verified %llu pinned units (%llu split), %llu evicted, %llu scribbles\n",
		      (unsigned long long)g.verified, (unsigned long long)g.splits,
		      (unsigned long long)g.evicted, (unsigned long long)g.scribbles);
	assert_int_equal(g.bad_evictions, 0);
	assert_int_equal(g.bad_bytes, 0);
	assert_int_equal(g.bad_calls, 0);
	/* the test exercised what it claims to */
	assert_true(g.verified > 100);
	assert_true(g.splits > 10);
	assert_true(g.evicted > 100);
	assert_true(g.scribbles > 0);
	assert_int_equal(hkv_stats(g.pool, &st), 0);
	assert_int_equal(st.pinned_units, 0);
	assert_int_equal(st.evictions, g.evicted);
	assert_int_equal(hkv_check(g.pool), 0);
	hkv_pool_destroy(g.pool);
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_lost),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
