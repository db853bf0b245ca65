// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_arena_inject.c - a failure injected at every system call site of the
 * arena (through the os layer's table, tests/common/hkv_test_mem.c): the
 * address-space reservation, the hugetlb mmap, mbind, MADV_DONTFORK,
 * MADV_HUGEPAGE, MADV_NOHUGEPAGE, MADV_POPULATE_WRITE (error, and a kernel without it),
 * move_pages, the smaps read, thread creation, CPU pinning, every sysfs
 * read, getrlimit, the give-back of a failed segment and the final munmap.
 * Each gives a clean error (STRICT) or a fallback that is reported in the
 * log, the region flags and the stats; a failed create leaves this
 * process's hugetlb pages and mappings as they were (and LSan sees no leak
 * under ASan).
 *
 * The memory is real (2 MiB hugepages, THP, 4 KiB); only the injected call
 * fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "hkv_test_mem.h"
#include "hkv_test_pool.h"

#define HP		(2ull << 20)
#define KV_PAGE		(64 * 1024ull)
#define NPAGES		512		/* 32 MiB: 16 hugepages */
#define NHUGE		(NPAGES * KV_PAGE / HP)

static struct hkv_pool_opts opts(int backing, unsigned flags)
{
	return (struct hkv_pool_opts){ .sz = sizeof(struct hkv_pool_opts), .npages = NPAGES,
				       .page_bytes = KV_PAGE, .backing = backing,
				       .numa_node = -1, .flags = flags,
				       .prefault_threads = 2 };
}

/* mappings of 16 MiB or more: an arena left behind shows here (thread
 * stacks and malloc come and go below that size) */
static unsigned map_count(void)
{
	unsigned long long a, b;
	char line[512];
	unsigned n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &a, &b) == 2 && b - a >= (16ull << 20))
			n++;
	fclose(f);
	return n;
}

/* what this process holds: hugetlb pages (faulted), hugepage-backed
 * mappings and all mappings; not the machine's HugePages_Free, which other
 * processes change meanwhile */
struct snap {
	uint64_t hugetlb_kb, huge_mapped_kb;
	unsigned maps;
};

static struct snap snap(void)
{
	return (struct snap){ tm_hugetlb_kb(), tm_smaps_mapped_kb(2048), map_count() };
}

/* create must fail with err and leave everything as it was */
static void expect_fail(struct tm_fault f, int backing, unsigned flags, int err)
{
	struct hkv_pool_opts o = opts(backing, flags);
	struct hkv_pool *p = NULL;
	struct tm_log lg;
	struct snap s0 = snap(), s1;

	tm_log_capture(&lg);
	tm_inject(&f);
	assert_int_equal(hkv_pool_create(&o, &p), err);
	assert_true(tm_failed() >= 1);
	tm_reset();
	tm_log_capture(NULL);
	assert_null(p);
	s1 = snap();
	assert_int_equal(s1.hugetlb_kb, s0.hugetlb_kb);
	assert_int_equal(s1.huge_mapped_kb, s0.huge_mapped_kb);
	assert_int_equal(s1.maps, s0.maps);
	assert_true(lg.err + lg.warn >= 1);	/* never silent */
}

/* create must succeed despite the fault, reporting it; returns the pool */
static struct hkv_pool *expect_ok(struct tm_fault f, int backing, unsigned flags,
				  struct tm_log *lg, struct hkv_region *r)
{
	struct hkv_pool_opts o = opts(backing, flags);
	struct hkv_pool *p = NULL;

	tm_log_capture(lg);
	tm_inject(&f);
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_true(tm_failed() >= 1);
	tm_reset();
	tm_log_capture(NULL);
	assert_int_equal(hkv_regions(p, r, 1), 1);
	assert_true(lg->warn >= 1);
	memset(r->base, 0x5a, r->bytes);	/* every byte there */
	return p;
}

static int setup(void **state)
{
	struct hkv_pool_opts o = opts(HKV_BACKING_HUGE_2M, 0);
	struct hkv_pool *p = NULL;

	(void)state;
	tm_require_hugepages(2 * NHUGE);
	/* warm up: the first pool's threads and (ASan) allocator regions stay */
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	hkv_pool_destroy(p);
	return 0;
}

static void t_reserve_mmap(void **state)
{
	struct tm_fault f = { TM_MMAP, 1, ENOMEM, MAP_NORESERVE };

	(void)state;
	expect_fail(f, HKV_BACKING_HUGE_2M, 0, -ENOMEM);
	expect_fail(f, HKV_BACKING_SMALL, HKV_POOL_STRICT, -ENOMEM);
}

static void t_hugetlb_mmap(void **state)
{
	struct tm_fault f = { TM_MMAP, 0, ENOMEM, MAP_HUGETLB };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	expect_fail(f, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, -ENOMEM);
	p = expect_ok(f, HKV_BACKING_HUGE_2M, 0, &lg, &r);
	assert_int_equal(r.hugepage_bytes, 4096);
	assert_true(r.flags & HKV_REGION_FALLBACK);
	assert_int_equal(tp_stats(p).region[0].fallback_errno, -ENOMEM);
	assert_int_equal(tp_stats(p).region[0].wanted_bytes, HP);
	assert_int_equal(tp_stats(p).fallbacks, 1);
	assert_true(tm_log_has(&lg, "2m backing"));
	hkv_pool_destroy(p);
}

static void t_mbind(void **state)
{
	struct tm_fault f = { TM_MBIND, 1, EIO };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	expect_fail(f, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, -EIO);
	p = expect_ok(f, HKV_BACKING_HUGE_2M, 0, &lg, &r);
	assert_int_equal(r.hugepage_bytes, HP);		/* kept, but unbound */
	assert_int_equal(r.flags, HKV_REGION_FALLBACK);
	assert_int_equal(tp_stats(p).region[0].fallback_errno, -EIO);
	assert_true(tm_log_has(&lg, "mbind failed"));
	hkv_pool_destroy(p);
}

static void t_dontfork(void **state)
{
	struct tm_fault f = { TM_MADVISE, 1, EINVAL, MADV_DONTFORK };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	expect_fail(f, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, -EINVAL);
	p = expect_ok(f, HKV_BACKING_HUGE_2M, 0, &lg, &r);
	assert_int_equal(r.flags, HKV_REGION_FALLBACK);
	assert_true(tm_log_has(&lg, "MADV_DONTFORK"));
	hkv_pool_destroy(p);
}

static void t_madv_hugepage(void **state)
{
	struct tm_fault f = { TM_MADVISE, 1, EINVAL, MADV_HUGEPAGE };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	expect_fail(f, HKV_BACKING_THP, HKV_POOL_STRICT, -EINVAL);
	p = expect_ok(f, HKV_BACKING_THP, 0, &lg, &r);
	assert_int_equal(r.flags, HKV_REGION_FALLBACK);	/* 4 KiB, no THP flag */
	assert_int_equal(tp_stats(p).backing, HKV_BACKING_SMALL);
	assert_true(tm_log_has(&lg, "thp backing"));
	hkv_pool_destroy(p);
}

static void t_nohugepage(void **state)
{
	struct tm_fault f = { TM_MADVISE, 1, EINVAL, MADV_NOHUGEPAGE };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	expect_fail(f, HKV_BACKING_SMALL, HKV_POOL_STRICT, -EINVAL);
	p = expect_ok(f, HKV_BACKING_SMALL, 0, &lg, &r);
	assert_int_equal(r.hugepage_bytes, 4096);
	assert_int_equal(r.flags, HKV_REGION_FALLBACK);
	assert_true(tm_log_has(&lg, "MADV_NOHUGEPAGE failed"));
	hkv_pool_destroy(p);
}

static void t_populate_error(void **state)
{
	struct tm_fault f = { TM_MADVISE, 1, ENOMEM, MADV_POPULATE_WRITE };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;
	uint64_t held;	/* this process's hugetlb pages, KiB */

	(void)state;
	expect_fail(f, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, -ENOMEM);
	held = tm_hugetlb_kb();
	p = expect_ok(f, HKV_BACKING_HUGE_2M, 0, &lg, &r);
	/* the failed 2 MiB segment gave its pages back, THP took over */
	assert_int_equal(tm_hugetlb_kb(), held);
	assert_int_equal(r.flags, HKV_REGION_FALLBACK | HKV_REGION_THP);
	assert_int_equal(tp_stats(p).backing, HKV_BACKING_THP);
	hkv_pool_destroy(p);
}

/* a kernel without MADV_POPULATE_WRITE: pages are touched instead */
static void t_populate_missing(void **state)
{
	struct tm_fault f = { TM_MADVISE, 0, EINVAL, MADV_POPULATE_WRITE };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;
	uint64_t held;	/* this process's hugetlb pages, KiB */

	(void)state;
	held = tm_hugetlb_kb();
	p = expect_ok(f, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, &lg, &r);
	assert_int_equal(tm_hugetlb_kb() - held, NHUGE * (HP >> 10));
	assert_int_equal(r.flags, 0);
	assert_int_equal(r.node, 0);
	assert_true(tm_log_has(&lg, "touched pages"));
	hkv_pool_destroy(p);
}

static void t_move_pages(void **state)
{
	struct tm_fault f = { TM_MOVE_PAGES, 0, ENOSYS };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	expect_fail(f, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, -ENOSYS);
	p = expect_ok(f, HKV_BACKING_HUGE_2M, 0, &lg, &r);
	assert_int_equal(r.node, -1);		/* unverified */
	assert_true(tm_log_has(&lg, "placement unverified"));
	hkv_pool_destroy(p);
}

static void t_smaps(void **state)
{
	struct tm_fault fo = { TM_OPEN, 0, EACCES, 0, "smaps" };
	struct tm_fault fr = { TM_READ, 0, EIO, 0, "smaps" };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	expect_fail(fo, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, -EACCES);
	expect_fail(fr, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, -EIO);
	p = expect_ok(fr, HKV_BACKING_HUGE_2M, 0, &lg, &r);
	assert_int_equal(r.hugepage_bytes, HP);
	assert_true(tm_log_has(&lg, "cannot read /proc/self/smaps"));
	hkv_pool_destroy(p);
}

static void t_threads(void **state)
{
	struct tm_fault all = { TM_THREAD, 0, EAGAIN };
	struct tm_fault one = { TM_THREAD, 2, EAGAIN };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	p = expect_ok(all, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, &lg, &r);
	assert_int_equal(r.flags, 0);
	assert_int_equal(tp_stats(p).prefault_threads, 1);
	assert_true(tm_log_has(&lg, "2 of 2 prefault threads could not start"));
	hkv_pool_destroy(p);
	p = expect_ok(one, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, &lg, &r);
	assert_int_equal(tp_stats(p).prefault_threads, 1);
	assert_true(tm_log_has(&lg, "1 of 2 prefault threads"));
	hkv_pool_destroy(p);
}

static void t_affinity(void **state)
{
	struct tm_fault f = { TM_AFFINITY, 0, EINVAL };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	p = expect_ok(f, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, &lg, &r);
	assert_int_equal(r.flags, 0);
	assert_true(tm_log_has(&lg, "could not be pinned"));
	hkv_pool_destroy(p);
}

/* every sysfs/procfs file the topology reads, failing to open and to read */
static void t_sysfs(void **state)
{
	static const char *const files[] = {
		"node0/hugepages/hugepages-2048kB/nr_hugepages",
		"node0/hugepages/hugepages-2048kB/free_hugepages",
		"mm/hugepages/hugepages-2048kB/nr_hugepages",
		"mm/hugepages/hugepages-2048kB/free_hugepages",
		"mm/hugepages/hugepages-2048kB/resv_hugepages",
		"transparent_hugepage/enabled",
	};
	struct hkv_plan pl = { .sz = sizeof(pl) };
	struct hkv_pool_opts o = opts(HKV_BACKING_SMALL, 0);
	struct tm_log lg;
	unsigned i;

	(void)state;
	for (i = 0; i < HKV_ARRAY_SIZE(files); i++) {
		struct tm_fault fo = { TM_OPEN, 0, EACCES, 0, files[i] };
		struct tm_fault fr = { TM_READ, 0, EIO, 0, files[i] };

		expect_fail(fo, HKV_BACKING_AUTO, 0, -EACCES);
		expect_fail(fr, HKV_BACKING_SMALL, 0, -EIO);
		tm_log_capture(&lg);
		tm_inject(&fo);
		assert_int_equal(hkv_pool_plan(&o, &pl), -EACCES);
		tm_reset();
		tm_log_capture(NULL);
		assert_int_equal(lg.err, 1);
	}
}

static void t_rlimit(void **state)
{
	struct tm_fault f = { TM_RLIMIT, 0, EPERM };
	struct hkv_pool_opts o = opts(HKV_BACKING_SMALL, 0);
	struct hkv_pool *p = NULL;
	struct tm_log lg;

	(void)state;
	tm_log_capture(&lg);
	tm_inject(&f);
	assert_int_equal(hkv_pool_create(&o, &p), -EPERM);
	tm_reset();
	tm_log_capture(NULL);
	assert_null(p);
	assert_true(tm_log_has(&lg, "RLIMIT_MEMLOCK"));
}

static void t_node_cpus(void **state)
{
	struct tm_fault f = { TM_NODE_CPUS, 0, EIO };
	struct hkv_region r;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	p = expect_ok(f, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT, &lg, &r);
	assert_int_equal(r.node, 0);
	assert_true(tm_log_has(&lg, "prefault unpinned"));
	hkv_pool_destroy(p);
}

/* the hugetlb mmap fails, and so does giving its range back */
static int fail_count;
static int mmap_twice(void *addr, size_t len, int prot, int flags, int fd, off_t off,
		      void **out)
{
	if ((flags & MAP_HUGETLB) ||
	    ((flags & MAP_FIXED) && prot == PROT_NONE && fail_count == 1)) {
		fail_count++;
		return -ENOMEM;
	}
	return os_default_ops.mmap(addr, len, prot, flags, fd, off, out);
}

static void t_give_back_fails(void **state)
{
	struct os_ops ops = tm_ops;
	struct hkv_pool_opts o = opts(HKV_BACKING_HUGE_2M, 0);
	struct hkv_pool *p = NULL;
	struct snap s0 = snap(), s1;
	struct tm_log lg;

	(void)state;
	ops.mmap = mmap_twice;
	fail_count = 0;
	tm_log_capture(&lg);
	os_set_ops(&ops);
	assert_int_equal(hkv_pool_create(&o, &p), -ENOMEM);
	tm_reset();
	tm_log_capture(NULL);
	assert_int_equal(fail_count, 2);
	assert_true(tm_log_has(&lg, "cannot give back"));
	s1 = snap();
	assert_int_equal(s1.maps, s0.maps);
	assert_int_equal(s1.hugetlb_kb, s0.hugetlb_kb);
	assert_int_equal(s1.huge_mapped_kb, s0.huge_mapped_kb);
}

/* munmap failing at destroy is logged (the memory then stays mapped) */
static void t_destroy_munmap(void **state)
{
	struct tm_fault f = { TM_MUNMAP, 0, EINVAL };
	struct hkv_pool_opts o = opts(HKV_BACKING_SMALL, 0);
	struct hkv_region r;
	struct hkv_pool *p = NULL;
	struct tm_log lg;

	(void)state;
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	tm_log_capture(&lg);
	tm_inject(&f);
	hkv_pool_destroy(p);
	tm_reset();
	tm_log_capture(NULL);
	assert_true(tm_log_has(&lg, "munmap of the arena failed"));
	assert_int_equal(munmap(r.base, r.bytes), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_reserve_mmap),
		cmocka_unit_test(t_hugetlb_mmap),
		cmocka_unit_test(t_mbind),
		cmocka_unit_test(t_dontfork),
		cmocka_unit_test(t_madv_hugepage),
		cmocka_unit_test(t_nohugepage),
		cmocka_unit_test(t_populate_error),
		cmocka_unit_test(t_populate_missing),
		cmocka_unit_test(t_move_pages),
		cmocka_unit_test(t_smaps),
		cmocka_unit_test(t_threads),
		cmocka_unit_test(t_affinity),
		cmocka_unit_test(t_sysfs),
		cmocka_unit_test(t_rlimit),
		cmocka_unit_test(t_node_cpus),
		cmocka_unit_test(t_give_back_fails),
		cmocka_unit_test(t_destroy_munmap),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
