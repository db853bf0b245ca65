// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_arena.c - memory pools on real memory: 2 MiB hugetlb pools checked
 * against the kernel's own accounting of this process (HugetlbPages, smaps
 * KernelPageSize and mapped size, open files, move_pages: other processes
 * taking hugepages meanwhile move none of them), every page written and
 * read back, the arena
 * rounded up when page_bytes does not divide the hugepage, THP and 4 KiB
 * pools, strict 1 GiB on a machine without 1 GiB pages (hidden through the
 * os table: a clean error) and AUTO landing on 2 MiB (reported), a small
 * AUTO pool leaving 1 GiB pages alone, a strict pool larger than the hugepage
 * pool (clean error in a child: no SIGBUS, nothing leaked), and the dry run
 * hkv_pool_plan() agreeing with what a create gets.
 *
 * Needs root and free 2 MiB hugepages (CI: scripts/test-env reserves 1024);
 * without root the hugepage tests are skipped, with too few free pages they
 * fail and say how many are missing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "hkv_test_mem.h"
#include "hkv_test_pool.h"

#define MB		(1ull << 20)
#define HP		(2 * MB)
#define KV_PAGE		(64 * 1024ull)

static struct hkv_pool_opts opts(uint64_t npages, uint64_t page_bytes, int backing,
				 unsigned flags)
{
	return (struct hkv_pool_opts){ .sz = sizeof(struct hkv_pool_opts), .npages = npages,
				       .page_bytes = page_bytes, .backing = backing,
				       .numa_node = -1, .flags = flags };
}

/*
 * Create a pool whose creation faults exactly want_drop hugepages in and
 * maps want_map (reserved, faulted or not). Counted in this process only:
 * the machine-wide HugePages_Free moves whenever another process takes or
 * gives back hugepages.
 */
static struct hkv_pool *create_counted(const struct hkv_pool_opts *o, uint64_t want_drop,
				       uint64_t want_map)
{
	uint64_t own = tm_hugetlb_kb(), mapped = tm_smaps_mapped_kb(HP >> 10);
	struct hkv_pool *p = NULL;

	assert_int_equal(hkv_pool_create(o, &p), 0);
	assert_int_equal(tm_hugetlb_kb() - own, want_drop * (HP >> 10));
	assert_int_equal(tm_smaps_mapped_kb(HP >> 10) - mapped, want_map * (HP >> 10));
	return p;
}

/* destroy gives back all want_rise hugepages: no mapping, no file kept */
static void destroy_counted(struct hkv_pool *p, uint64_t want_rise)
{
	uint64_t mapped = tm_smaps_mapped_kb(HP >> 10);
	unsigned fds = tm_open_fds();

	hkv_pool_destroy(p);
	assert_int_equal(tm_hugetlb_kb(), 0);
	assert_int_equal(mapped - tm_smaps_mapped_kb(HP >> 10), want_rise * (HP >> 10));
	assert_int_equal(tm_open_fds(), fds);
}

/* a strict 2 MiB pool of 256 hugepages, checked against the kernel */
static void t_huge_2m(void **state)
{
	const uint64_t npages = 8192;	/* 512 MiB of 64 KiB pages */
	struct hkv_pool_opts o = opts(npages, KV_PAGE, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT);
	struct hkv_region r[2];
	struct hkv_stats st;
	struct hkv_pool *p;
	uint64_t off;

	struct rlimit rl;
	struct tm_log lg;

	(void)state;
	tm_require_hugepages(256);
	tm_log_capture(&lg);
	p = create_counted(&o, 256, 256);
	tm_log_capture(NULL);
	assert_int_equal(lg.warn + lg.err, 0);		/* got what it asked for */
	assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &rl), 0);
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 512 * MB)
		assert_true(tm_log_has(&lg, "exceeds RLIMIT_MEMLOCK"));
	assert_int_equal(hkv_regions(p, r, 2), 1);
	assert_ptr_equal(r[0].base, hkv_page_ptr(p, 0));
	assert_int_equal(r[0].bytes, 512 * MB);
	assert_int_equal(r[0].first_page, 0);
	assert_int_equal(r[0].npages, npages);
	assert_int_equal(r[0].node, 0);
	assert_int_equal(r[0].hugepage_bytes, HP);
	assert_int_equal(r[0].flags, 0);
	assert_int_equal((uintptr_t)r[0].base % HP, 0);
	/* the kernel's view, read without the library */
	assert_int_equal(tm_smaps_page_size(r[0].base, r[0].bytes), HP);
	for (off = 0; off < r[0].bytes; off += HP)
		assert_int_equal(tm_node_of((char *)r[0].base + off), 0);
	tm_check_pages(p, npages, KV_PAGE);
	st = tp_stats(p);
	assert_int_equal(st.backing, HKV_BACKING_HUGE_2M);
	assert_int_equal(st.backing_wanted, HKV_BACKING_HUGE_2M);
	assert_int_equal(st.flags & HKV_POOL_STRICT, HKV_POOL_STRICT);
	assert_int_equal(st.arena_bytes, 512 * MB);
	assert_int_equal(st.arena_round_up_bytes, 0);
	assert_true(st.prefault_ns > 0);
	assert_true(st.prefault_gbps > 0);
	assert_true(st.prefault_threads >= 1);
	assert_int_equal(st.misplaced_pages, 0);
	assert_int_equal(st.fallbacks, 0);
	assert_int_equal(st.nregions, 1);
	assert_int_equal(st.region[0].node, 0);
	assert_int_equal(st.region[0].hugepage_bytes, HP);
	assert_int_equal(st.region[0].wanted_bytes, HP);
	assert_int_equal(st.region[0].fallback_errno, 0);
	destroy_counted(p, 256);
	assert_int_equal(tm_smaps_vmas(2048), 0);
}

/* page_bytes that does not divide 2 MiB: arena rounded up, said in stats */
static void t_round_up(void **state)
{
	const uint64_t pb = 3 * MB + 4096, npages = 7;
	struct hkv_pool_opts o = opts(npages, pb, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT);
	uint64_t arena = (npages * pb + HP - 1) / HP * HP;
	struct hkv_stats st;
	struct hkv_pool *p;

	(void)state;
	tm_require_hugepages(arena / HP);
	p = create_counted(&o, arena / HP, arena / HP);
	st = tp_stats(p);
	assert_int_equal(st.arena_bytes, arena);
	assert_int_equal(st.arena_round_up_bytes, arena - npages * pb);
	assert_true(st.arena_round_up_bytes > 0);
	/* last byte of the last page is there and writable */
	*((char *)hkv_page_ptr(p, npages - 1) + pb - 1) = 42;
	tm_check_pages(p, npages, pb);
	destroy_counted(p, arena / HP);
}

/* a machine without 1 GiB pages, whatever this one has: the kernel's
 * 1 GiB pool is hidden through the os table (its sysfs files are ENOENT) */
static void hide_1g(void)
{
	struct tm_fault f = { TM_OPEN, 0, ENOENT, 0, "hugepages-1048576kB" };

	tm_inject(&f);
}

/* no 1 GiB pages: strict 1G is a clean error that takes nothing */
static void t_strict_1g_absent(void **state)
{
	struct hkv_pool_opts o = opts(16, KV_PAGE, HKV_BACKING_HUGE_1G, HKV_POOL_STRICT);
	/* this process's own hugetlb pages, mappings and open files (a kept
	 * memfd holds its pages with no mapping): exact whatever others do */
	uint64_t own = tm_hugetlb_kb();
	unsigned vmas = tm_smaps_vmas(2048) + tm_smaps_vmas(1 << 20), fds = tm_open_fds();
	struct hkv_pool *p = NULL;
	struct tm_log lg;

	(void)state;
	hide_1g();
	tm_log_capture(&lg);
	assert_int_equal(hkv_pool_create(&o, &p), -ENOMEM);
	tm_log_capture(NULL);
	assert_null(p);
	assert_true(tm_log_has(&lg, "offers no such pages"));
	assert_int_equal(tm_hugetlb_kb(), own);
	assert_int_equal(tm_smaps_vmas(2048) + tm_smaps_vmas(1 << 20), vmas);
	assert_int_equal(tm_open_fds(), fds);
	tm_reset();
	assert_true(strlen(hkv_strerror(-ENOMEM)) > 10);
}

/* no 1 GiB pages: AUTO wants one for a 1 GiB pool, lands on 2 MiB, says so */
static void t_auto_lands_2m(void **state)
{
	const uint64_t npages = 16384;		/* 1 GiB of 64 KiB pages */
	struct hkv_pool_opts o = opts(npages, KV_PAGE, HKV_BACKING_AUTO, 0);
	struct hkv_region r;
	struct hkv_stats st;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	tm_require_hugepages(512);
	hide_1g();
	tm_log_capture(&lg);
	p = create_counted(&o, 512, 512);
	tm_log_capture(NULL);
	tm_reset();
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.hugepage_bytes, HP);
	assert_int_equal(r.flags, HKV_REGION_FALLBACK);
	assert_int_equal(r.node, 0);
	st = tp_stats(p);
	assert_int_equal(st.backing, HKV_BACKING_HUGE_2M);
	assert_int_equal(st.backing_wanted, HKV_BACKING_AUTO);
	assert_int_equal(st.fallbacks, 1);
	assert_int_equal(st.region[0].wanted_bytes, 1ull << 30);
	assert_int_equal(st.region[0].fallback_errno, -EOPNOTSUPP);
	/* not offered at all: said at info level (no warning on every start) */
	assert_int_equal(lg.warn + lg.err, 0);
	assert_true(tm_log_has(&lg, "1g backing for 1073741824 bytes failed (Operation not "
				    "supported); 2m"));
	tm_check_pages(p, npages, KV_PAGE);
	destroy_counted(p, 512);
}

/* free 1 GiB pages of the kernel's pool (0 when it has none) */
static uint64_t free_1g(void)
{
	uint64_t v = 0;

	os_read_u64("/sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages", &v);
	return v;
}

/* a small AUTO pool never takes a scarce 1 GiB page: 2 MiB, and why */
static void t_small_auto(void **state)
{
	struct hkv_pool_opts o = opts(256, KV_PAGE, HKV_BACKING_AUTO, 0);	/* 16 MiB */
	uint64_t g1 = free_1g();
	struct hkv_region r;
	struct hkv_stats st;
	struct hkv_pool *p;

	(void)state;
	tm_require_hugepages(8);
	p = create_counted(&o, 8, 8);
	assert_int_equal(free_1g(), g1);	/* whatever this machine offers */
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.hugepage_bytes, HP);
	assert_int_equal(r.bytes, 16 * MB);
	assert_int_equal(r.flags, HKV_REGION_ROUND_UP);
	st = tp_stats(p);
	assert_int_equal(st.fallbacks, 0);
	assert_int_equal(st.arena_round_up_bytes, 0);
	assert_int_equal(st.region[0].flags, HKV_REGION_ROUND_UP);
	tm_check_pages(p, 256, KV_PAGE);
	destroy_counted(p, 8);
}

/* in a child: a strict pool one hugepage larger than the hugepage pool */
static int child_too_big(void *arg)
{
	/* more than the whole hugepage pool: no other process's frees make it fit */
	uint64_t hp = tm_meminfo("HugePages_Total") + 1;
	struct hkv_pool_opts o = opts(hp * (HP / KV_PAGE), KV_PAGE, HKV_BACKING_HUGE_2M,
				      HKV_POOL_STRICT);
	struct hkv_pool *p = NULL;
	int ret;

	(void)arg;
	hkv_set_log_fn(NULL, NULL);
	ret = hkv_pool_create(&o, &p);
	if (ret != -ENOMEM || p)
		return 10;
	if (tm_hugetlb_kb() || tm_smaps_vmas(2048))	/* nothing kept (this process's) */
		return 11;
	return 0;
}

static void t_strict_too_big(void **state)
{
	(void)state;
	tm_require_hugepages(1);
	tm_run_in_child(child_too_big, NULL);
}

/* NO_PREFAULT: pages reserved at mmap (mapped), faulted later, node unknown */
static void t_no_prefault(void **state)
{
	struct hkv_pool_opts o = opts(1024, KV_PAGE, HKV_BACKING_HUGE_2M,
				      HKV_POOL_STRICT | HKV_POOL_NO_PREFAULT);
	struct hkv_region r;
	struct hkv_pool *p;

	(void)state;
	tm_require_hugepages(32);
	p = create_counted(&o, 0, 32);
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.node, -1);
	assert_int_equal(tp_stats(p).prefault_ns, 0);
	tm_check_pages(p, 1024, KV_PAGE);	/* reserved: touching cannot SIGBUS */
	assert_int_equal(tm_hugetlb_kb(), 32 * (HP >> 10));	/* all faulted now */
	destroy_counted(p, 32);
}

static void small_pool(int backing, unsigned want_flags)
{
	struct hkv_pool_opts o = opts(256, KV_PAGE, backing, HKV_POOL_STRICT);
	struct hkv_region r;
	struct hkv_pool *p = NULL;

	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.hugepage_bytes, 4096);
	assert_int_equal(r.flags, want_flags);
	assert_int_equal(r.node, 0);
	assert_int_equal(tp_stats(p).backing, backing);
	tm_check_pages(p, 256, KV_PAGE);
	hkv_pool_destroy(p);
}

static void t_small_and_thp(void **state)
{
	char mode[64] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	(void)state;
	small_pool(HKV_BACKING_SMALL, 0);
	if (f) {
		if (!fgets(mode, sizeof(mode), f))
			mode[0] = '\0';
		fclose(f);
	}
	if (!strstr(mode, "[never]") && mode[0])
		small_pool(HKV_BACKING_THP, HKV_REGION_THP);
}

/* the dry run says what a create then gets */
static void t_plan_matches(void **state)
{
	struct hkv_pool_opts o = opts(2048, KV_PAGE, HKV_BACKING_AUTO, 0);
	struct hkv_plan pl = { .sz = sizeof(pl) };
	struct hkv_region r;
	struct hkv_pool *p;

	(void)state;
	tm_require_hugepages(64);
	assert_int_equal(hkv_pool_plan(&o, &pl), 0);
	assert_int_equal(pl.nnodes, 1);
	assert_int_equal(pl.node[0].node, 0);
	assert_int_equal(pl.node[0].ncpus, sysconf(_SC_NPROCESSORS_ONLN));
	assert_int_equal(pl.kv_bytes, 128 * MB);
	assert_int_equal(pl.node[0].hugepages_needed, 64);
	assert_int_equal(pl.node[0].first_page, 0);
	assert_int_equal(pl.node[0].npages, 2048);
	assert_true(pl.memlock_limit > 0);
	p = create_counted(&o, 64, 64);
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.hugepage_bytes, pl.node[0].hugepage_bytes);
	assert_int_equal(r.bytes, pl.node[0].bytes);
	assert_int_equal(tp_stats(p).backing, pl.backing);
	destroy_counted(p, 64);
}

static void t_plan_args(void **state)
{
	struct hkv_pool_opts o = opts(16, KV_PAGE, HKV_BACKING_SMALL, 0);
	struct hkv_plan pl = { .sz = sizeof(pl) };
	struct hkv_plan small = { .sz = offsetof(struct hkv_plan, node) };

	(void)state;
	assert_int_equal(hkv_pool_plan(NULL, &pl), -EINVAL);
	assert_int_equal(hkv_pool_plan(&o, NULL), -EINVAL);
	pl.sz = 8;
	assert_int_equal(hkv_pool_plan(&o, &pl), -EINVAL);
	pl.sz = sizeof(pl);
	o.sz = 8;
	assert_int_equal(hkv_pool_plan(&o, &pl), -EINVAL);
	o = opts(0, KV_PAGE, HKV_BACKING_SMALL, 0);
	assert_int_equal(hkv_pool_plan(&o, &pl), -EINVAL);
	o = opts(16, KV_PAGE, HKV_BACKING_NONE, 0);
	assert_int_equal(hkv_pool_plan(&o, &pl), -EINVAL);
	o = opts(16, KV_PAGE, 77, 0);
	assert_int_equal(hkv_pool_plan(&o, &pl), -EINVAL);
	o = opts(16, KV_PAGE, HKV_BACKING_SMALL, 0);
	o.numa_node = 63;	/* no such node */
	assert_int_equal(hkv_pool_plan(&o, &pl), -EINVAL);
	o.numa_node = -2;
	assert_int_equal(hkv_pool_plan(&o, &pl), -EINVAL);
	o.numa_node = -1;
	o.flags = 1u << 7;
	assert_int_equal(hkv_pool_plan(&o, &pl), -EINVAL);
	o.flags = 0;
	o.nlanes = 17;		/* more lanes than pages */
	assert_int_equal(hkv_pool_plan(&o, &pl), -EINVAL);
	o = opts(UINT64_MAX / 1024, 1 << 20, HKV_BACKING_SMALL, 0);
	assert_int_equal(hkv_pool_plan(&o, &pl), -EINVAL);
	/* index-only pools plan no memory */
	o = opts(16, 0, HKV_BACKING_AUTO, 0);
	assert_int_equal(hkv_pool_plan(&o, &pl), 0);
	assert_int_equal(pl.backing, HKV_BACKING_NONE);
	assert_int_equal(pl.nnodes, 0);
	/* an older, shorter plan struct gets only its prefix */
	o = opts(16, KV_PAGE, HKV_BACKING_SMALL, 0);
	assert_int_equal(hkv_pool_plan(&o, &small), 0);
	assert_int_equal(small.sz, offsetof(struct hkv_plan, node));
	assert_int_equal(small.nnodes, 1);
	assert_int_equal(small.node[0].bytes, 0);
	/* a strict 2 MiB pool larger than the free pool: -ENOMEM with the numbers */
	o = opts(1ull << 22, KV_PAGE, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT);	/* 256 GiB */
	assert_int_equal(hkv_pool_plan(&o, &pl), -ENOMEM);
	assert_int_equal(pl.node[0].fallback_errno, -ENOMEM);
	assert_int_equal(pl.node[0].wanted_needed, 1ull << 17);
	assert_int_equal(pl.node[0].shortfall, pl.node[0].wanted_needed - pl.node[0].wanted_free);
	assert_int_equal(pl.node[0].reserve_total, pl.node[0].wanted_total + pl.node[0].shortfall);
	/* the same non-strict: planned onto THP or 4 KiB, counted as a fallback */
	o.flags = 0;
	assert_int_equal(hkv_pool_plan(&o, &pl), 0);
	assert_true(pl.backing == HKV_BACKING_THP || pl.backing == HKV_BACKING_SMALL);
	assert_int_equal(pl.fallbacks, 1);
}

/* HUGEKV_* options are applied and recorded (plan and stats) */
static void t_env(void **state)
{
	struct hkv_pool_opts o = opts(64, KV_PAGE, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT);
	struct hkv_plan pl = { .sz = sizeof(pl) };
	struct hkv_stats st;
	struct hkv_pool *p = NULL;

	(void)state;
	setenv("HUGEKV_BACKING", "4k", 1);
	setenv("HUGEKV_STRICT", "0", 1);
	setenv("HUGEKV_PREFAULT_THREADS", "1", 1);
	setenv("HUGEKV_NODE", "0", 1);
	env_reload();
	assert_int_equal(hkv_pool_plan(&o, &pl), 0);
	assert_int_equal(pl.backing_wanted, HKV_BACKING_SMALL);
	assert_int_equal(pl.flags & HKV_POOL_STRICT, 0);
	assert_int_equal(pl.prefault_threads, 1);
	assert_int_equal(pl.numa_node, 0);
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	st = tp_stats(p);
	assert_int_equal(st.backing_wanted, HKV_BACKING_SMALL);
	assert_int_equal(st.backing, HKV_BACKING_SMALL);
	assert_int_equal(st.flags & HKV_POOL_STRICT, 0);
	assert_int_equal(st.prefault_threads, 1);
	assert_int_equal(st.numa_node, 0);
	hkv_pool_destroy(p);
	unsetenv("HUGEKV_BACKING");
	unsetenv("HUGEKV_STRICT");
	unsetenv("HUGEKV_PREFAULT_THREADS");
	unsetenv("HUGEKV_NODE");
	env_reload();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_huge_2m),
		cmocka_unit_test(t_round_up),
		cmocka_unit_test(t_strict_1g_absent),
		cmocka_unit_test(t_auto_lands_2m),
		cmocka_unit_test(t_small_auto),
		cmocka_unit_test(t_strict_too_big),
		cmocka_unit_test(t_no_prefault),
		cmocka_unit_test(t_small_and_thp),
		cmocka_unit_test(t_plan_matches),
		cmocka_unit_test(t_plan_args),
		cmocka_unit_test(t_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
