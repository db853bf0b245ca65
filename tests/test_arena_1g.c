// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_arena_1g.c - pools on real 1 GiB hugepages, checked against the
 * kernel's own accounting of its 1 GiB pool (free_hugepages and
 * resv_hugepages under /sys/kernel/mm/hugepages/hugepages-1048576kB),
 * smaps KernelPageSize and move_pages: a strict 1 GiB pool, a strict pool
 * larger than the free 1 GiB pages (a clean error), AUTO on 1 GiB pages,
 * and an AUTO pool larger than the free 1 GiB pages (every free one, then
 * 2 MiB pages, one contiguous range).
 *
 * Each test reads what the machine offers: without 1 GiB support the
 * tests here are skipped (test_arena.c and test_arena_topo.c cover that
 * case through the os table); with too few free 1 GiB pages a test that
 * needs them is skipped and says how many it found (scripts/test-env
 * reserves them as root, and says what the kernel granted).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "hkv_test_mem.h"

#define MB		(1ull << 20)
#define GB		(1ull << 30)
#define HP		(2 * MB)
#define KV_PAGE		(64 * 1024ull)
#define SYS_1G		"/sys/kernel/mm/hugepages/hugepages-1048576kB"

static uint64_t read_1g(const char *file)
{
	char path[128];
	uint64_t v = 0;

	snprintf(path, sizeof(path), SYS_1G "/%s", file);
	assert_int_equal(os_read_u64(path, &v), 0);
	return v;
}

/* free and unreserved 1 GiB pages; skips the test when fewer than want */
static uint64_t require_1g(uint64_t want)
{
	uint64_t fr, rs;

	if (access(SYS_1G, F_OK))
		skip();		/* no 1 GiB pages: covered through the os table */
	if (getuid())
		skip();
	fr = read_1g("free_hugepages");
	rs = read_1g("resv_hugepages");
	if (fr - rs < want) {
		print_message("needs %llu free 1 GiB pages, %llu free here (scripts/test-env "
			      "--hugepages-1g N reserves them)\n", (unsigned long long)want,
			      (unsigned long long)(fr - rs));
		skip();
	}
	return fr - rs;
}

static struct hkv_pool_opts opts(uint64_t npages, int backing, unsigned flags)
{
	return (struct hkv_pool_opts){ .sz = sizeof(struct hkv_pool_opts), .npages = npages,
				       .page_bytes = KV_PAGE, .backing = backing,
				       .numa_node = -1, .flags = flags };
}

/* the region is on 1 GiB pages by the kernel's account, on node 0 */
static void check_1g_region(const struct hkv_region *r)
{
	uint64_t off;

	assert_int_equal(r->hugepage_bytes, GB);
	assert_int_equal((uintptr_t)r->base % GB, 0);
	assert_int_equal(tm_smaps_page_size(r->base, r->bytes), GB);
	for (off = 0; off < r->bytes; off += GB)
		assert_int_equal(tm_node_of((char *)r->base + off), 0);
	assert_int_equal(r->node, 0);
}

/* in a child: create, touch every page, destroy; no SIGBUS, exit 0 */
static int child_touch(void *arg)
{
	const struct hkv_pool_opts *o = arg;
	struct hkv_pool *p = NULL;
	uint64_t i;

	if (hkv_pool_create(o, &p))
		return 10;
	for (i = 0; i < o->npages; i++)
		*(volatile char *)hkv_page_ptr(p, i) = 1;
	hkv_pool_destroy(p);
	return 0;
}

static void t_strict_1g(void **state)
{
	const uint64_t npages = GB / KV_PAGE;
	struct hkv_pool_opts o = opts(npages, HKV_BACKING_HUGE_1G, HKV_POOL_STRICT);
	struct hkv_region r;
	struct hkv_stats st = { .sz = sizeof(st) };
	struct hkv_pool *p = NULL;
	uint64_t fr;

	(void)state;
	require_1g(1);
	fr = read_1g("free_hugepages");
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(fr - read_1g("free_hugepages"), 1);	/* exactly the one page */
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.bytes, GB);
	assert_int_equal(r.npages, npages);
	assert_int_equal(r.flags, 0);
	check_1g_region(&r);
	assert_int_equal(hkv_stats(p, &st), 0);
	assert_int_equal(st.backing, HKV_BACKING_HUGE_1G);
	assert_int_equal(st.fallbacks, 0);
	assert_int_equal(st.arena_round_up_bytes, 0);
	tm_check_pages(p, npages, KV_PAGE);
	hkv_pool_destroy(p);
	assert_int_equal(read_1g("free_hugepages"), fr);
	assert_int_equal(tm_smaps_vmas(1048576), 0);
	tm_run_in_child(child_touch, &o);
	assert_int_equal(read_1g("free_hugepages"), fr);
}

/* one more 1 GiB page than is free: -ENOMEM, nothing taken */
static void t_strict_1g_short(void **state)
{
	uint64_t avail, fr, rs;
	struct hkv_pool_opts o;
	struct hkv_pool *p = NULL;
	struct tm_log lg;

	(void)state;
	avail = require_1g(0);
	fr = read_1g("free_hugepages");
	rs = read_1g("resv_hugepages");
	o = opts((avail + 1) * (GB / KV_PAGE), HKV_BACKING_HUGE_1G, HKV_POOL_STRICT);
	tm_log_capture(&lg);
	assert_int_equal(hkv_pool_create(&o, &p), -ENOMEM);
	tm_log_capture(NULL);
	assert_null(p);
	assert_true(tm_log_has(&lg, "strict 1g backing unavailable"));
	assert_int_equal(read_1g("free_hugepages"), fr);
	assert_int_equal(read_1g("resv_hugepages"), rs);
	assert_int_equal(tm_smaps_vmas(1048576), 0);
}

/* AUTO with a free 1 GiB page takes it for a 1 GiB pool */
static void t_auto_1g(void **state)
{
	struct hkv_pool_opts o = opts(GB / KV_PAGE, HKV_BACKING_AUTO, 0);
	struct hkv_region r;
	struct hkv_pool *p = NULL;
	uint64_t fr;

	(void)state;
	require_1g(1);
	fr = read_1g("free_hugepages");
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(fr - read_1g("free_hugepages"), 1);
	assert_int_equal(tm_hugetlb_kb(), GB >> 10);	/* no 2 MiB page taken */
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.flags, 0);
	check_1g_region(&r);
	tm_check_pages(p, GB / KV_PAGE, KV_PAGE);
	hkv_pool_destroy(p);
	assert_int_equal(read_1g("free_hugepages"), fr);
}

/* k GiB + 256 MiB with k free 1 GiB pages: k x 1G, then 128 x 2M */
static void t_auto_mixed(void **state)
{
	uint64_t k, npages, fr;
	struct hkv_plan pl = { .sz = sizeof(pl) };
	struct hkv_pool_opts o;
	struct hkv_region r[4];
	struct hkv_pool *p = NULL;

	(void)state;
	k = HKV_MIN(require_1g(1), 2);
	tm_require_hugepages(128);
	npages = (k * GB + 256 * MB) / KV_PAGE;
	o = opts(npages, HKV_BACKING_AUTO, 0);
	assert_int_equal(hkv_pool_plan(&o, &pl), 0);
	assert_int_equal(pl.nparts, 2);
	assert_int_equal(pl.part[0].hugepages, k);
	assert_int_equal(pl.part[1].hugepages, 128);
	fr = read_1g("free_hugepages");
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(fr - read_1g("free_hugepages"), k);
	/* this process's own hugetlb count is exact whatever others do */
	assert_int_equal(tm_hugetlb_kb(), (k * GB + 128 * HP) >> 10);
	assert_int_equal(hkv_regions(p, r, 4), 2);
	assert_int_equal(r[0].bytes, k * GB);
	check_1g_region(&r[0]);
	assert_ptr_equal(r[1].base, (char *)r[0].base + k * GB);
	assert_int_equal(r[1].hugepage_bytes, HP);
	assert_int_equal(r[1].bytes, 256 * MB);
	assert_int_equal(r[1].first_page, k * GB / KV_PAGE);
	assert_int_equal(r[1].flags, HKV_REGION_ROUND_UP);
	assert_int_equal(tm_smaps_page_size(r[1].base, r[1].bytes), HP);
	tm_check_pages(p, npages, KV_PAGE);
	hkv_pool_destroy(p);
	assert_int_equal(read_1g("free_hugepages"), fr);
	assert_int_equal(tm_hugetlb_kb(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_strict_1g),
		cmocka_unit_test(t_strict_1g_short),
		cmocka_unit_test(t_auto_1g),
		cmocka_unit_test(t_auto_mixed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
