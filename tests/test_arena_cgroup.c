// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_arena_cgroup.c - a real hugetlb cgroup limit below the pool: the
 * shortfall shows at creation, never as a SIGBUS later.
 *
 * A child process joins a hugetlb cgroup (v1 controller, mounted on a temp
 * dir when it is not mounted yet) and creates a 2 MiB pool larger than
 * the cgroup allows. With a fault-time limit (hugetlb.2MB.limit_in_bytes)
 * the reservation at mmap succeeds and the prefault hits the limit, where
 * a plain touch would raise SIGBUS: strict gives -ENOMEM, non-strict falls
 * back to THP. With a reservation limit (hugetlb.2MB.rsvd.limit_in_bytes)
 * the mmap itself is refused. Without prefault (HKV_POOL_NO_PREFAULT) the
 * fault-time limit is read from the cgroup at create and the pool is
 * refused (strict) or falls back (non-strict) the same way, so a touch
 * never raises SIGBUS. The child checks that nothing stayed taken
 * and exits; the parent asserts it exited normally.
 *
 * Needs root and the hugetlb cgroup controller (skipped without either).
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "hkv_test_mem.h"

#define HP		(2ull << 20)
#define KV_PAGE		(64 * 1024ull)
#define NPAGES		512			/* 32 MiB = 16 hugepages */
#define LIMIT		(4 * HP)		/* the cgroup allows 4 */

static char mnt[256], cg[320];
static bool we_mounted;

/* an existing v1 hugetlb hierarchy, else one mounted on a temp dir */
static bool find_or_mount(void)
{
	char dev[256], dir[256], type[64], opts[512];
	FILE *f = fopen("/proc/self/mounts", "r");

	while (f && fscanf(f, "%255s %255s %63s %511s %*d %*d", dev, dir, type, opts) == 4)
		if (!strcmp(type, "cgroup") && strstr(opts, "hugetlb")) {
			snprintf(mnt, sizeof(mnt), "%s", dir);
			fclose(f);
			return true;
		}
	if (f)
		fclose(f);
	snprintf(mnt, sizeof(mnt), "/tmp/hkv-hugetlb-XXXXXX");
	if (!mkdtemp(mnt))
		return false;
	if (mount("none", mnt, "cgroup", 0, "hugetlb")) {
		rmdir(mnt);
		return false;
	}
	we_mounted = true;
	return true;
}

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		print_message("not root: skipping the hugetlb cgroup tests\n");
		return 0;
	}
	if (!find_or_mount()) {
		print_message("no hugetlb cgroup controller here: skipping\n");
		mnt[0] = '\0';
		return 0;
	}
	snprintf(cg, sizeof(cg), "%s/hkv-test-%d", mnt, (int)getpid());
	if (mkdir(cg, 0755)) {
		print_message("cannot create %s: skipping\n", cg);
		cg[0] = '\0';
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (cg[0])
		rmdir(cg);
	if (we_mounted) {
		umount(mnt);
		rmdir(mnt);
	}
	return 0;
}

static int write_file(const char *dir, const char *name, unsigned long long v)
{
	char path[400], buf[32];
	int fd, n, ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%llu\n", v);
	ok = write(fd, buf, n) == n;
	close(fd);
	return ok ? 0 : -EIO;
}

struct want {
	unsigned flags;		/* pool flags */
	int ret;		/* expected create result */
	unsigned region_flags;	/* on success */
};

/* in the cgroup: create, check the result, give it back, check the counts */
static int child(void *arg)
{
	struct want w = *(struct want *)arg;
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = NPAGES, .page_bytes = KV_PAGE,
				   .backing = HKV_BACKING_HUGE_2M, .numa_node = -1,
				   .flags = w.flags };
	uint64_t fr = tm_meminfo("HugePages_Free"), rs = tm_meminfo("HugePages_Rsvd");
	struct hkv_region r;
	struct hkv_pool *p = NULL;
	int ret;

	if (write_file(cg, "cgroup.procs", (unsigned long long)getpid()))
		return 20;
	ret = hkv_pool_create(&o, &p);
	if (ret != w.ret)
		return 21;
	if (!ret) {
		if (hkv_regions(p, &r, 1) != 1 || r.flags != w.region_flags)
			return 22;
		memset(r.base, 1, r.bytes);	/* every page: no SIGBUS */
		hkv_pool_destroy(p);
	}
	if (tm_hugetlb_kb() || tm_smaps_vmas(2048))
		return 23;
	/* others may move the global counts during development; CI is alone */
	if (tm_meminfo("HugePages_Free") != fr || tm_meminfo("HugePages_Rsvd") != rs)
		fprintf(stderr, "note: global hugepage counts moved (other users?)\n");
	return 0;
}

static void run_child(struct want w)
{
	tm_run_in_child(child, &w);
}

static void need_cgroup(void)
{
	if (geteuid() != 0 || !cg[0])
		skip();
	tm_require_hugepages(NPAGES * KV_PAGE / HP);
}

#define NOLIMIT	((unsigned long long)-1)

static void set_limits(unsigned long long fault, unsigned long long rsvd)
{
	char path[400];

	assert_int_equal(write_file(cg, "hugetlb.2MB.limit_in_bytes", fault), 0);
	snprintf(path, sizeof(path), "%s/hugetlb.2MB.rsvd.limit_in_bytes", cg);
	if (!access(path, F_OK))
		assert_int_equal(write_file(cg, "hugetlb.2MB.rsvd.limit_in_bytes", rsvd), 0);
	else if (rsvd != NOLIMIT)
		skip();		/* kernel before 5.7: no reservation limit */
}

static void t_fault_limit_strict(void **state)
{
	(void)state;
	need_cgroup();
	set_limits(LIMIT, NOLIMIT);
	run_child((struct want){ HKV_POOL_STRICT, -ENOMEM, 0 });
}

static void t_fault_limit_fallback(void **state)
{
	(void)state;
	need_cgroup();
	set_limits(LIMIT, NOLIMIT);
	run_child((struct want){ 0, 0, HKV_REGION_FALLBACK | HKV_REGION_THP });
}

static void t_rsvd_limit(void **state)
{
	(void)state;
	need_cgroup();
	set_limits(NOLIMIT, LIMIT);
	run_child((struct want){ HKV_POOL_STRICT, -ENOMEM, 0 });
	run_child((struct want){ 0, 0, HKV_REGION_FALLBACK | HKV_REGION_THP });
}

/* without prefault the limit is checked at create, never met as a SIGBUS */
static void t_fault_limit_no_prefault(void **state)
{
	(void)state;
	need_cgroup();
	set_limits(LIMIT, NOLIMIT);
	run_child((struct want){ HKV_POOL_STRICT | HKV_POOL_NO_PREFAULT, -ENOMEM, 0 });
	run_child((struct want){ HKV_POOL_NO_PREFAULT, 0, HKV_REGION_FALLBACK | HKV_REGION_THP });
	set_limits(64 * HP, NOLIMIT);
	run_child((struct want){ HKV_POOL_STRICT | HKV_POOL_NO_PREFAULT, 0, 0 });
}

/* the limit above the pool: a normal strict pool */
static void t_within_limit(void **state)
{
	(void)state;
	need_cgroup();
	set_limits(64 * HP, 64 * HP);
	run_child((struct want){ HKV_POOL_STRICT, 0, 0 });
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_fault_limit_strict),
		cmocka_unit_test(t_fault_limit_fallback),
		cmocka_unit_test(t_rsvd_limit),
		cmocka_unit_test(t_fault_limit_no_prefault),
		cmocka_unit_test(t_within_limit),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
