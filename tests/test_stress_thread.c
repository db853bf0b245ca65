// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_stress_thread.c - four threads mix every call on one memory pool for
 * a few seconds (HKV_STRESS_SECONDS, default 3): allocations (any lane, a
 * named lane, contiguous, with eviction), frees of sub-ranges, units, pins,
 * splits, touches, removes, explicit evictions, stats and full checks.
 *
 * Every page carries an owner word in its own memory: an allocation claims
 * it with a compare-and-swap from 0, a free or an eviction gives it back;
 * a page handed out twice, freed while another owns it, or evicted while
 * pinned fails the test. At the end everything is given back and the pool
 * must be whole. make check runs it plain, under ASan+UBSan and under TSan.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "hugekv.h"

#define THREADS		4
#define NPAGES		4096
#define PAGE_BYTES	256
#define NLANES		4
#define SLOTS		48	/* units per thread */
#define LOOSE		48	/* plain allocations per thread */
#define UEXT		8	/* extents per unit at most */

struct unit_slot {
	uint64_t id;			/* 0 = empty; written by the owner only */
	int pinned;			/* atomic: the owner holds a pin */
	int evicted;			/* atomic: the callback saw it go */
	unsigned n;
	uint64_t npages;
	struct hkv_extent ext[UEXT];
};

struct worker {
	unsigned tid;
	uint64_t seed, serial, ops;
	struct hkv_extent loose[LOOSE];
	unsigned nloose;
	struct unit_slot slot[SLOTS];
};

static struct hkv_pool *pool;
static struct worker workers[THREADS];
static int stop, errors;
static char first_error[256];

#define FAIL(...)							\
	do {								\
		if (__atomic_fetch_add(&errors, 1, __ATOMIC_SEQ_CST) == 0) \
			snprintf(first_error, sizeof(first_error), __VA_ARGS__); \
	} while (0)

static uint64_t rnd(struct worker *w)
{
	w->seed ^= w->seed << 13;
	w->seed ^= w->seed >> 7;
	w->seed ^= w->seed << 17;
	return w->seed;
}

static uint64_t *owner(uint64_t page)
{
	return hkv_page_ptr(pool, page);
}

static void claim(struct worker *w, const struct hkv_extent *e, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		for (uint64_t p = e[i].start; p < e[i].start + e[i].len; p++) {
			uint64_t zero = 0;

			if (!__atomic_compare_exchange_n(owner(p), &zero, w->tid + 1, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
				FAIL("page %llu handed to thread %u, owned by %llu",
				     (unsigned long long)p, w->tid, (unsigned long long)zero);
		}
	}
}

static void unclaim(uint64_t tag, const struct hkv_extent *e, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		for (uint64_t p = e[i].start; p < e[i].start + e[i].len; p++) {
			uint64_t old = __atomic_exchange_n(owner(p), 0, __ATOMIC_ACQ_REL);

			if (old != tag)
				FAIL("page %llu given back by %llu, owned by %llu",
				     (unsigned long long)p, (unsigned long long)tag,
				     (unsigned long long)old);
		}
	}
}

/* unit ids: thread, slot, serial */
static uint64_t unit_id(struct worker *w, unsigned slot)
{
	return ((uint64_t)w->tid + 1) << 48 | (uint64_t)slot << 32 | (++w->serial & 0xffffffff);
}

static void evict_fn(void *ctx, uint64_t id, const struct hkv_extent *ext, unsigned n)
{
	unsigned tid = (unsigned)(id >> 48) - 1, slot = (unsigned)(id >> 32) & 0xffff;
	struct unit_slot *s;

	(void)ctx;
	if (tid >= THREADS || slot >= SLOTS) {
		FAIL("evicted unknown unit %llx", (unsigned long long)id);
		return;
	}
	s = &workers[tid].slot[slot];
	if (__atomic_load_n(&s->pinned, __ATOMIC_ACQUIRE))
		FAIL("unit %llx evicted while pinned", (unsigned long long)id);
	if (__atomic_exchange_n(&s->evicted, 1, __ATOMIC_ACQ_REL))
		FAIL("unit %llx evicted twice", (unsigned long long)id);
	unclaim(tid + 1, ext, n);
}

/* a call on a unit said -ENOENT: it must have been evicted */
static void gone(struct unit_slot *s)
{
	if (!__atomic_load_n(&s->evicted, __ATOMIC_ACQUIRE))
		FAIL("unit %llx vanished without an eviction", (unsigned long long)s->id);
	s->id = 0;
}

static void do_alloc(struct worker *w)
{
	uint64_t n = 1 + rnd(w) % 24;
	unsigned flags = (rnd(w) % 3 ? 0 : HKV_ALLOC_CONTIG) | (rnd(w) % 2 ? HKV_ALLOC_EVICT : 0);
	unsigned lane = rnd(w) % 3 ? HKV_LANE_ANY : (unsigned)(rnd(w) % NLANES);
	struct hkv_extent e[4];
	int k;

	if (w->nloose + 4 > LOOSE)
		return;
	k = hkv_alloc(pool, n, lane, flags, e, 4);
	if (k < 0) {
		if (k != -ENOMEM && k != -ENOSPC)
			FAIL("hkv_alloc: %d", k);
		return;
	}
	claim(w, e, (unsigned)k);
	for (int i = 0; i < k; i++)
		w->loose[w->nloose++] = e[i];
}

static void do_alloc_lanes(struct worker *w)
{
	uint64_t count[NLANES] = { 0 };
	struct hkv_extent e[8];
	int k;

	if (w->nloose + 8 > LOOSE)
		return;
	count[rnd(w) % NLANES] = 1 + rnd(w) % 8;
	count[rnd(w) % NLANES] += 1 + rnd(w) % 8;
	k = hkv_alloc_lanes(pool, count, rnd(w) % 2 ? HKV_ALLOC_EVICT : 0, e, 8);
	if (k < 0) {
		if (k != -ENOMEM && k != -ENOSPC)
			FAIL("hkv_alloc_lanes: %d", k);
		return;
	}
	claim(w, e, (unsigned)k);
	for (int i = 0; i < k; i++)
		w->loose[w->nloose++] = e[i];
}

/* free a loose allocation, or its head (a sub-range) */
static void do_free(struct worker *w)
{
	unsigned i;
	struct hkv_extent *e, part;
	int rc;

	if (!w->nloose)
		return;
	i = (unsigned)(rnd(w) % w->nloose);
	e = &w->loose[i];
	part = (struct hkv_extent){ e->start, e->len > 1 && rnd(w) % 2 ? e->len / 2 : e->len };
	unclaim(w->tid + 1, &part, 1);
	rc = hkv_free(pool, &part, 1);
	if (rc)
		FAIL("hkv_free of my pages: %d", rc);
	e->start += part.len;
	e->len -= part.len;
	if (!e->len)
		w->loose[i] = w->loose[--w->nloose];
}

static int free_slot(struct worker *w)
{
	for (unsigned i = 0; i < SLOTS; i++)
		if (!w->slot[i].id)
			return (int)i;
	return -1;
}

/* up to UEXT loose allocations become one unit */
static void do_unit_add(struct worker *w)
{
	int si = free_slot(w);
	struct unit_slot *s;
	unsigned n;
	int rc;

	if (si < 0 || !w->nloose)
		return;
	s = &w->slot[si];
	n = 1 + (unsigned)(rnd(w) % (w->nloose < 3 ? w->nloose : 3));
	s->n = n;
	s->npages = 0;
	for (unsigned i = 0; i < n; i++) {
		s->ext[i] = w->loose[w->nloose - n + i];
		s->npages += s->ext[i].len;
	}
	s->id = unit_id(w, (unsigned)si);
	__atomic_store_n(&s->evicted, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s->pinned, 0, __ATOMIC_RELEASE);
	rc = hkv_unit_add(pool, s->id, s->ext, n);
	if (rc) {
		FAIL("hkv_unit_add: %d", rc);
		s->id = 0;
		return;
	}
	w->nloose -= n;
}

static struct unit_slot *some_unit(struct worker *w)
{
	unsigned start = (unsigned)(rnd(w) % SLOTS);

	for (unsigned i = 0; i < SLOTS; i++)
		if (w->slot[(start + i) % SLOTS].id)
			return &w->slot[(start + i) % SLOTS];
	return NULL;
}

static void do_pin(struct worker *w)
{
	struct unit_slot *s = some_unit(w);
	int rc;

	if (!s)
		return;
	if (__atomic_load_n(&s->pinned, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&s->pinned, 0, __ATOMIC_RELEASE);	/* before the unpin */
		rc = hkv_unit_unpin(pool, s->id);
		if (rc)
			FAIL("unpin of a pinned unit: %d", rc);
		return;
	}
	rc = hkv_unit_pin(pool, s->id);
	if (rc == -ENOENT)
		gone(s);
	else if (rc)
		FAIL("pin: %d", rc);
	else
		__atomic_store_n(&s->pinned, 1, __ATOMIC_RELEASE);	/* after the pin */
	/* a pinned unit stays: its pages are refused by hkv_free and unit_add */
	if (!rc && (hkv_free(pool, &s->ext[0], 1) != -EBUSY ||
		    hkv_unit_add(pool, unit_id(w, SLOTS), &s->ext[0], 1) != -EINVAL))
		FAIL("a pinned unit's pages were not refused");
}

static void do_touch(struct worker *w)
{
	struct unit_slot *s = some_unit(w);
	int rc;

	if (!s)
		return;
	rc = hkv_unit_touch(pool, s->id);
	if (rc == -ENOENT)
		gone(s);
	else if (rc)
		FAIL("touch: %d", rc);
}

/* the extents of pages [at, npages) of s into t, s keeps [0, at) */
static void split_shadow(struct unit_slot *s, uint64_t at, struct unit_slot *t)
{
	uint64_t acc = 0;
	unsigned k = 0;

	while (acc + s->ext[k].len <= at)
		acc += s->ext[k++].len;
	t->n = 0;
	if (at > acc) {
		t->ext[t->n++] = (struct hkv_extent){ s->ext[k].start + (at - acc),
						      s->ext[k].len - (at - acc) };
		s->ext[k].len = at - acc;
		k++;
	}
	for (unsigned i = k; i < s->n; i++)
		t->ext[t->n++] = s->ext[i];
	s->n = k;
	t->npages = s->npages - at;
	s->npages = at;
}

static void do_split(struct worker *w)
{
	struct unit_slot *s = some_unit(w), *t;
	int si = free_slot(w), rc;
	uint64_t at, id;

	if (!s || si < 0 || s->npages < 2)
		return;
	t = &w->slot[si];
	at = 1 + rnd(w) % (s->npages - 1);
	id = unit_id(w, (unsigned)si);
	__atomic_store_n(&t->evicted, 0, __ATOMIC_RELEASE);
	/* a pinned unit's halves are both pinned: the new one too */
	__atomic_store_n(&t->pinned, __atomic_load_n(&s->pinned, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELEASE);
	rc = hkv_unit_split(pool, s->id, at, id);
	if (rc == -ENOENT) {
		__atomic_store_n(&t->pinned, 0, __ATOMIC_RELEASE);
		gone(s);
		return;
	}
	if (rc) {
		FAIL("split: %d", rc);
		return;
	}
	split_shadow(s, at, t);
	t->id = id;
}

/* remove a unit (unpinned) keeping its pages, then free them */
static void do_remove(struct worker *w, struct unit_slot *s)
{
	int rc;

	if (!s)
		return;
	if (__atomic_load_n(&s->pinned, __ATOMIC_ACQUIRE)) {
		if (hkv_unit_remove(pool, s->id, 0) != -EBUSY)
			FAIL("remove of a pinned unit was not -EBUSY");
		return;
	}
	rc = hkv_unit_remove(pool, s->id, 0);
	if (rc == -ENOENT) {
		gone(s);
		return;
	}
	if (rc) {
		FAIL("remove: %d", rc);
		return;
	}
	unclaim(w->tid + 1, s->ext, s->n);
	rc = hkv_free(pool, s->ext, s->n);
	if (rc)
		FAIL("free after remove: %d", rc);
	s->id = 0;
}

static void do_remove_any(struct worker *w)
{
	do_remove(w, some_unit(w));
}

static void do_view(struct worker *w)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	int rc;

	switch (rnd(w) % 4) {
	case 0:
		rc = (int)hkv_evict(pool, hkv_available(pool) + 1 + rnd(w) % 64);
		if (rc < 0)
			FAIL("hkv_evict: %d", rc);
		break;
	case 1:
		rc = hkv_stats(pool, &st);
		if (rc || st.free_pages > NPAGES || st.unit_pages > NPAGES)
			FAIL("hkv_stats: %d", rc);
		break;
	case 2:
		if (rnd(w) % 8 == 0 && (rc = hkv_check(pool)))
			FAIL("hkv_check: %d", rc);
		break;
	default:
		if (hkv_available(pool) > NPAGES)
			FAIL("hkv_available over the pool");
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	void (*const ops[])(struct worker *) = {
		do_alloc, do_alloc, do_alloc, do_alloc_lanes, do_free, do_free, do_free,
		do_unit_add, do_unit_add, do_pin, do_pin, do_touch, do_split, do_remove_any, do_view,
	};

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		ops[rnd(w) % (sizeof(ops) / sizeof(ops[0]))](w);
		w->ops++;
	}
	/* give everything back */
	for (unsigned i = 0; i < SLOTS; i++) {
		struct unit_slot *s = &w->slot[i];

		if (!s->id)
			continue;
		if (__atomic_load_n(&s->pinned, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&s->pinned, 0, __ATOMIC_RELEASE);
			if (hkv_unit_unpin(pool, s->id))
				FAIL("final unpin");
		}
		do_remove(w, s);
	}
	while (w->nloose) {
		struct hkv_extent *e = &w->loose[--w->nloose];

		unclaim(w->tid + 1, e, 1);
		if (hkv_free(pool, e, 1))
			FAIL("final loose free");
	}
	return NULL;
}

static void test_stress(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = NPAGES, .page_bytes = PAGE_BYTES,
				   .nlanes = NLANES, .backing = HKV_BACKING_SMALL,
				   .prefault_threads = 1, .free_room_low = 0.05,
				   .free_room_high = 0.10 };
	const char *env = getenv("HKV_STRESS_SECONDS");
	unsigned seconds = env ? (unsigned)atoi(env) : 3;
	struct hkv_stats st = { .sz = sizeof(st) };
	pthread_t t[THREADS];
	uint64_t ops = 0;

	(void)state;
	assert_int_equal(hkv_pool_create(&o, &pool), 0);
	hkv_set_evict_fn(pool, evict_fn, NULL);
	memset(workers, 0, sizeof(workers));
	for (unsigned i = 0; i < THREADS; i++) {
		workers[i].tid = i;
		workers[i].seed = 0x9e3779b97f4a7c15ull * (i + 1);
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &workers[i]), 0);
	}
	sleep(seconds ? seconds : 1);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		ops += workers[i].ops;
	}
	if (errors)
		print_message("%d errors, the first: %s\n", errors, first_error);
	assert_int_equal(errors, 0);
	assert_int_equal(hkv_stats(pool, &st), 0);
	print_message("%llu calls in %u s; %llu evictions in %llu runs\n",
		      (unsigned long long)ops, seconds, (unsigned long long)st.evictions,
		      (unsigned long long)st.eviction_runs);
	assert_true(st.evictions > 0);
	assert_int_equal(st.units, 0);
	assert_int_equal(st.pinned_pages, 0);
	assert_int_equal(hkv_available(pool), NPAGES);
	assert_int_equal(hkv_check(pool), 0);
	for (uint64_t p = 0; p < NPAGES; p++)
		assert_int_equal(*owner(p), 0);
	hkv_pool_destroy(pool);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
