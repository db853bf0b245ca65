// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_oom.c - every heap allocation the library makes is failed in turn
 * (pool creation, bookkeeping growth in hkv_free, unit add and split,
 * free_slots, stats printing): each call must return -ENOMEM, change
 * nothing, and leak nothing (as many blocks freed as allocated). A free
 * deferred to the lane's holder whose run cannot grow the index stays
 * queued until a later call can. Evictions
 * whose free cannot grow the index keep the unit, or park its pages until
 * the next eviction: no page is lost. The test replaces malloc and friends in its own executable, so it
 * runs in the plain build only: the sanitizers bring their own allocators
 * (and check leaks there themselves).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "internal.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OOM_TESTABLE 0
static long live;
static int fail_in = -1;
#else
#define OOM_TESTABLE 1

void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t m);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);
void __libc_free(void *p);

static int fail_in = -1;	/* fail the allocation this many calls ahead */
static long live;		/* blocks allocated minus blocks freed */

static bool fail_now(void)
{
	return fail_in >= 0 && fail_in-- == 0;
}

static void *counted(void *p)
{
	if (p)
		live++;
	return p;
}

void *malloc(size_t n)
{
	return fail_now() ? NULL : counted(__libc_malloc(n));
}

void *calloc(size_t n, size_t m)
{
	return fail_now() ? NULL : counted(__libc_calloc(n, m));
}

void *realloc(void *p, size_t n)
{
	if (fail_now())
		return NULL;
	if (!p)
		return counted(__libc_realloc(p, n));
	return __libc_realloc(p, n);	/* same block count */
}

void *aligned_alloc(size_t align, size_t n)
{
	return fail_now() ? NULL : counted(__libc_memalign(align, n));
}

void free(void *p)
{
	if (p)
		live--;
	__libc_free(p);
}
#endif

/*
 * Run fn with the k-th allocation failing, for k = 0, 1, ... until fn
 * succeeds with no failure left to inject; every failing run must return
 * -ENOMEM with the heap as before (fn undoes nothing itself).
 */
static int each_failure(int (*fn)(void *), void *arg, bool (*same)(void *))
{
	int k, ret, runs = 0;

	for (k = 0;; k++) {
		long before = live;

		fail_in = k;
		ret = fn(arg);
		if (fail_in >= 0) {		/* ran out of allocations to fail */
			fail_in = -1;
			assert_int_equal(ret, 0);
			return runs;
		}
		fail_in = -1;
		assert_int_equal(ret, -ENOMEM);
		if (live != before)
			print_message("allocation %d failed: %ld blocks leaked\n", k, live - before);
		assert_int_equal(live, before);
		if (same)
			assert_true(same(arg));
		runs++;
	}
}

static int create(void *arg)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 5000, .nlanes = 3 };
	struct hkv_pool **p = arg;

	return hkv_pool_create(&o, p);
}

static void test_create(void **state)
{
	struct hkv_pool *p = NULL;
	int runs;

	(void)state;
	if (!OOM_TESTABLE)
		skip();
	runs = each_failure(create, &p, NULL);
	print_message("hkv_pool_create: %d allocations failed in turn, all clean\n", runs);
	assert_true(runs >= 8);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
}

struct frag {
	struct hkv_pool *pool;
	struct hkv_extent e[2];
	uint64_t avail;
	int ret;
};

static bool unchanged(void *arg)
{
	struct frag *f = arg;

	return hkv_available(f->pool) == f->avail && hkv_check(f->pool) == 0;
}

static int free_two(void *arg)
{
	struct frag *f = arg;

	return hkv_free(f->pool, f->e, 2);
}

/* many single-page holes: the next frees must grow the node array (or,
 * with @spare 1, the one after them) */
static struct frag *fragmented_spare(uint32_t spare)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 4096 };
	struct frag *f = calloc(1, sizeof(*f));
	struct hkv_extent e;
	uint64_t i;

	assert_int_equal(hkv_pool_create(&o, &f->pool), 0);
	for (i = 0; i < 4096; i++)
		assert_int_equal(hkv_alloc(f->pool, 1, 0, 0, &e, 1), 1);
	for (i = 0; i < 4096; i += 2) {
		struct hkv_extent h = { i, 1 };

		/* stop where the node array is full, so the next free grows it */
		if (f->pool->lanes[0].xi.free_extents + spare == f->pool->lanes[0].xi.ncap)
			break;
		assert_int_equal(hkv_free(f->pool, &h, 1), 0);
	}
	f->e[0] = (struct hkv_extent){ i + 2, 1 };
	f->e[1] = (struct hkv_extent){ i + 4, 1 };
	f->avail = hkv_available(f->pool);
	return f;
}

static struct frag *fragmented(void)
{
	return fragmented_spare(0);
}

static void test_free_growth(void **state)
{
	struct frag *f;
	int runs;

	(void)state;
	if (!OOM_TESTABLE)
		skip();
	f = fragmented();
	runs = each_failure(free_two, f, unchanged);
	assert_true(runs >= 1);			/* the growth really was needed */
	assert_int_equal(hkv_available(f->pool), f->avail + 2);
	hkv_pool_destroy(f->pool);
	free(f);
}

static void *free_elsewhere(void *arg)
{
	struct frag *f = arg;

	f->ret = hkv_free(f->pool, &f->e[0], 1);
	return NULL;
}

/* a free that another thread deferred to this one (the lane's owner), whose
 * run must grow the node array: with the growth failing it stays queued,
 * its page allocated and counted by hkv_available(); the next call runs it */
static void test_deferred_free_growth(void **state)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	struct frag *f;
	pthread_t t;

	(void)state;
	if (!OOM_TESTABLE)
		skip();
	f = fragmented();
	assert_int_equal(pthread_create(&t, NULL, free_elsewhere, f), 0);
	pthread_join(t, NULL);
	assert_int_equal(f->ret, 0);
	assert_non_null(f->pool->lanes[0].defer);	/* queued, not run */
	assert_int_equal(hkv_available(f->pool), f->avail + 1);
	fail_in = 0;
	assert_int_equal(hkv_extents_allocated(f->pool, &f->e[0], 1), 0);	/* run: no room */
	assert_int_equal(fail_in, -1);		/* the growth was tried, and failed */
	assert_int_equal(hkv_available(f->pool), f->avail + 1);
	assert_int_equal(hkv_extents_allocated(f->pool, &f->e[0], 1), -EINVAL);	/* run now */
	assert_int_equal(hkv_stats(f->pool, &st), 0);
	assert_int_equal(st.deferred_frees, 1);
	assert_int_equal(st.free_pages, f->avail + 1);
	assert_int_equal(hkv_check(f->pool), 0);
	hkv_pool_destroy(f->pool);
	free(f);
}

static int add_and_split(void *arg)
{
	struct frag *f = arg;
	int ret = hkv_unit_add(f->pool, 7, f->e, 2);

	if (ret)
		return ret;
	ret = hkv_unit_split(f->pool, 7, 1, 8);
	if (ret)	/* undo the add so the next round starts the same */
		assert_int_equal(hkv_unit_remove(f->pool, 7, 0), 0);
	return ret;
}

static int add(void *arg)
{
	struct frag *f = arg;

	return hkv_unit_add(f->pool, 7, f->e, 2);
}

/*
 * A removed unit's record is kept for the next unit of its size (unit.c),
 * so the first add runs alone, and the adds and splits after it are
 * measured with that record kept: every failing round must leave it so.
 */
static void test_units(void **state)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	struct frag *f;
	int runs;

	(void)state;
	if (!OOM_TESTABLE)
		skip();
	f = fragmented();
	runs = each_failure(add, f, unchanged);
	assert_true(runs >= 1);
	assert_int_equal(hkv_unit_remove(f->pool, 7, 0), 0);
	runs = each_failure(add_and_split, f, unchanged);
	assert_true(runs >= 1);
	assert_int_equal(hkv_stats(f->pool, &st), 0);
	assert_int_equal(st.units, 2);
	hkv_pool_destroy(f->pool);
	free(f);
}

static int slots(void *arg)
{
	struct frag *f = arg;
	const uint64_t *s;
	uint64_t n;

	return hkv_free_slots(f->pool, &s, &n);
}

static FILE *devnull;

static int print(void *arg)
{
	struct frag *f = arg;

	return hkv_stats_print(f->pool, devnull, HKV_PRINT_JSON);
}

static void test_views(void **state)
{
	struct frag *f;

	(void)state;
	if (!OOM_TESTABLE)
		skip();
	f = fragmented();
	assert_true(each_failure(slots, f, unchanged) >= 1);
	devnull = fopen("/dev/null", "w");
	assert_non_null(devnull);
	fputs("warm up: stdio allocates its buffer now\n", devnull);
	assert_true(each_failure(print, f, unchanged) >= 1);
	fclose(devnull);
	hkv_pool_destroy(f->pool);
	free(f);
}

/* evictions seen by the callback; it may free a page and then arm a failure */
struct evlog {
	struct hkv_pool *pool;
	unsigned calls;
	struct hkv_extent free_first;	/* len 0: none */
	int fail_after;			/* then fail_in = this (-1: leave it) */
};

static void ev_fn(void *ctx, uint64_t unit, const struct hkv_extent *ext, unsigned n)
{
	struct evlog *lg = ctx;

	(void)unit;
	(void)ext;
	(void)n;
	lg->calls++;
	if (lg->free_first.len)
		assert_int_equal(hkv_free(lg->pool, &lg->free_first, 1), 0);
	if (lg->fail_after >= 0)
		fail_in = lg->fail_after;
}

/*
 * An eviction whose free needs the free-extent index to grow, and the
 * growth fails: the unit stays as it was (callback not called, pages
 * still its own), hkv_evict() frees nothing, and a later eviction with
 * memory frees it.
 */
static void test_evict_nomem(void **state)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	struct evlog lg = { .fail_after = -1 };
	struct frag *f;

	(void)state;
	if (!OOM_TESTABLE)
		skip();
	f = fragmented();
	lg.pool = f->pool;
	hkv_set_evict_fn(f->pool, ev_fn, &lg);
	assert_int_equal(hkv_unit_add(f->pool, 7, &f->e[0], 1), 0);
	fail_in = 0;
	assert_int_equal(hkv_evict(f->pool, f->avail + 1), 0);
	fail_in = -1;
	assert_int_equal(lg.calls, 0);
	assert_int_equal(hkv_unit_touch(f->pool, 7), 0);	/* still a unit */
	assert_int_equal(hkv_free(f->pool, &f->e[0], 1), -EBUSY);
	assert_int_equal(hkv_available(f->pool), f->avail);
	assert_int_equal(hkv_check(f->pool), 0);
	assert_int_equal(hkv_stats(f->pool, &st), 0);
	assert_int_equal(st.units, 1);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.evict_failures, 1);
	/* with memory: evicted and freed */
	assert_int_equal(hkv_evict(f->pool, f->avail + 1), 1);
	assert_int_equal(lg.calls, 1);
	assert_int_equal(hkv_unit_touch(f->pool, 7), -ENOENT);
	assert_int_equal(hkv_available(f->pool), f->avail + 1);
	assert_int_equal(hkv_check(f->pool), 0);
	hkv_pool_destroy(f->pool);
	free(f);
}

/*
 * The room reserved before the callback is used up by a free the callback
 * makes, and the index then cannot grow: the evicted unit's pages are
 * parked (still marked, counted by hkv_check, refused by hkv_free and
 * hkv_unit_add) and freed by the next eviction. No page is lost.
 */
static void test_evict_parked(void **state)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	struct evlog lg = { .fail_after = 0 };
	struct xindex *x;
	struct frag *f;

	(void)state;
	if (!OOM_TESTABLE)
		skip();
	f = fragmented_spare(1);
	x = &f->pool->lanes[0].xi;
	assert_true(x->free_extents + 1 == x->ncap);
	lg.pool = f->pool;
	lg.free_first = f->e[1];		/* an isolated page: one more extent */
	hkv_set_evict_fn(f->pool, ev_fn, &lg);
	assert_int_equal(hkv_unit_add(f->pool, 7, &f->e[0], 1), 0);
	f->avail = hkv_available(f->pool);
	assert_int_equal(hkv_evict(f->pool, f->avail + 1), 0);
	fail_in = -1;
	assert_int_equal(lg.calls, 1);
	assert_int_equal(hkv_unit_touch(f->pool, 7), -ENOENT);	/* evicted ... */
	assert_int_equal(hkv_free(f->pool, &f->e[0], 1), -EBUSY);	/* ... not yet freed */
	assert_int_equal(hkv_unit_add(f->pool, 8, &f->e[0], 1), -EINVAL);
	assert_int_equal(hkv_available(f->pool), f->avail + 1);	/* the callback's free */
	assert_int_equal(hkv_check(f->pool), 0);
	assert_int_equal(hkv_stats(f->pool, &st), 0);
	assert_int_equal(st.evict_failures, 1);
	assert_int_equal(st.evictions, 0);
	/* the next eviction frees the parked pages */
	lg.free_first.len = 0;
	lg.fail_after = -1;
	assert_int_equal(hkv_evict(f->pool, 0), 1);
	assert_int_equal(hkv_available(f->pool), f->avail + 2);
	assert_int_equal(hkv_free(f->pool, &f->e[0], 1), -EINVAL);	/* free now */
	assert_int_equal(hkv_check(f->pool), 0);
	assert_int_equal(hkv_stats(f->pool, &st), 0);
	assert_int_equal(st.evictions, 1);
	assert_int_equal(st.evicted_pages, 1);
	hkv_pool_destroy(f->pool);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create),
		cmocka_unit_test(test_free_growth),
		cmocka_unit_test(test_deferred_free_growth),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_views),
		cmocka_unit_test(test_evict_nomem),
		cmocka_unit_test(test_evict_parked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
