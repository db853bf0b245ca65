// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_arena_thread.c - the concurrent parts of the arena, run under TSan
 * by `make check`: prefault slices on several threads (populate and the
 * touch fallback of kernels without MADV_POPULATE_WRITE), and pools
 * created and destroyed from several threads at once, each writing its own
 * pages while the others prefault.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "hkv_test_mem.h"

#define KV_PAGE		(64 * 1024ull)

static void fill_check(struct hkv_pool *p, uint64_t npages, uint64_t salt)
{
	uint64_t i;

	for (i = 0; i < npages; i++)
		*(uint64_t *)hkv_page_ptr(p, i) = i ^ salt;
	for (i = 0; i < npages; i++)
		assert_int_equal(*(uint64_t *)hkv_page_ptr(p, i), i ^ salt);
}

static struct hkv_pool *create(int backing, uint64_t npages, unsigned threads)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = npages, .page_bytes = KV_PAGE,
				   .backing = backing, .numa_node = -1,
				   .flags = HKV_POOL_STRICT, .prefault_threads = threads };
	struct hkv_pool *p = NULL;

	assert_int_equal(hkv_pool_create(&o, &p), 0);
	return p;
}

static void t_prefault_threads(void **state)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	struct hkv_pool *p;

	(void)state;
	tm_require_hugepages(32);
	p = create(HKV_BACKING_HUGE_2M, 1024, 4);
	assert_int_equal(hkv_stats(p, &st), 0);
	assert_int_equal(st.prefault_threads, 4);
	fill_check(p, 1024, 1);
	hkv_pool_destroy(p);
	p = create(HKV_BACKING_SMALL, 1024, 3);
	fill_check(p, 1024, 2);
	hkv_pool_destroy(p);
}

static void t_touch_threads(void **state)
{
	struct tm_fault f = { TM_MADVISE, 0, EINVAL, MADV_POPULATE_WRITE };
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	tm_log_capture(&lg);
	tm_inject(&f);
	p = create(HKV_BACKING_SMALL, 512, 4);
	tm_reset();
	tm_log_capture(NULL);
	assert_true(tm_log_has(&lg, "touched pages"));
	fill_check(p, 512, 3);
	hkv_pool_destroy(p);
}

#define CREATORS	4
#define ROUNDS		3

/* no cmocka asserts off the main thread: count failures instead */
static void *creator(void *arg)
{
	uintptr_t id = (uintptr_t)arg, bad = 0;
	unsigned r;
	uint64_t i;

	for (r = 0; r < ROUNDS; r++) {
		struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 256, .page_bytes = KV_PAGE,
					   .backing = id % 2 ? HKV_BACKING_HUGE_2M :
							       HKV_BACKING_SMALL,
					   .numa_node = -1, .flags = HKV_POOL_STRICT,
					   .prefault_threads = 2 };
		struct hkv_pool *p = NULL;

		if (hkv_pool_create(&o, &p)) {
			bad++;
			continue;
		}
		for (i = 0; i < 256; i++)
			*(uint64_t *)hkv_page_ptr(p, i) = i ^ id;
		for (i = 0; i < 256; i++)
			bad += *(uint64_t *)hkv_page_ptr(p, i) != (i ^ id);
		hkv_pool_destroy(p);
	}
	return (void *)bad;
}

static void t_concurrent_creates(void **state)
{
	pthread_t t[CREATORS];
	uintptr_t i;

	(void)state;
	tm_require_hugepages(8 * CREATORS);
	for (i = 0; i < CREATORS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, creator, (void *)i), 0);
	for (i = 0; i < CREATORS; i++) {
		void *bad;

		assert_int_equal(pthread_join(t[i], &bad), 0);
		assert_null(bad);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_prefault_threads),
		cmocka_unit_test(t_touch_threads),
		cmocka_unit_test(t_concurrent_creates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
