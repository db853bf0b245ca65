// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_arena_topo.c - what this machine does not have, through the os
 * layer's table: 1 GiB hugepages and a second NUMA node.
 *
 * The machine may have one node and no 1 GiB pages; here the table fakes
 * both, whatever the machine has (tests/test_arena_1g.c uses real ones):
 * sysfs files of a 1 GiB pool and of node 1 are served from memfds, a
 * MAP_HUGE_1GB mapping is made of real 2 MiB hugepages (smaps is rewritten
 * to say 1048576 kB for it), mbind to node 1 binds node 0 instead (the
 * request is recorded), and move_pages reports node 1 for the pages bound
 * there. Everything else is real: the memory, the prefault threads (both
 * nodes' at once), their pinning to the fake node's CPU, the kernel's
 * hugepage accounting. Also
 * here: smaps reporting smaller pages than asked, a kernel refusing the
 * hugetlb reservation that sysfs said was there (in a child: no SIGBUS),
 * and a kernel without NUMA support.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/mman.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "hkv_test_mem.h"
#include "hkv_test_pool.h"

#define MB		(1ull << 20)
#define HP		(2 * MB)
#define GB		(1ull << 30)
#define KV_PAGE		(64 * 1024ull)

/* ---- the fake machine ---- */

struct fake_file {
	const char *path;	/* substring of the path */
	char text[64];
};

static struct fake {
	int nodes;		/* 1 or 2 */
	bool no_numa;
	bool one_gig;		/* offer 1 GiB pages */
	unsigned one_gig_free;	/* ... this many free (0 = 2) */
	bool map_1g_fails;
	bool node1_reported;	/* move_pages says node 1 for node-1 memory */
	const char *smaps_kb;	/* KernelPageSize to claim for hugetlb VMAs */
	uintptr_t g1_lo[8], g1_hi[8];	/* ranges mapped as 1 GiB (stand-ins) */
	unsigned ng1;
	struct fake_file files[16];
	unsigned nfiles;
	/* what the library asked for */
	unsigned mbind_nodes, mbind_calls, cpus_pinned;
	uintptr_t node1_lo, node1_hi;	/* memory bound to node 1 */
	pthread_mutex_t lock;
} fk = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void fake_reset(void)
{
	pthread_mutex_t lock = fk.lock;

	memset(&fk, 0, sizeof(fk));
	fk.lock = lock;
	fk.nodes = 1;
}

static void fake_file(const char *path, const char *fmt, ...)
{
	struct fake_file *f = &fk.files[fk.nfiles++];
	va_list ap;

	f->path = path;
	va_start(ap, fmt);
	vsnprintf(f->text, sizeof(f->text), fmt, ap);
	va_end(ap);
}

static int memfd_with(const char *text, size_t len)
{
	int fd = memfd_create("fake", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* real smaps with KernelPageSize rewritten for hugetlb VMAs */
static int fake_smaps(void)
{
	size_t cap = 1 << 20, len = 0;
	char *out = malloc(cap), line[512];
	FILE *f = fopen("/proc/self/smaps", "r");
	int fd;

	assert_non_null(out);
	assert_non_null(f);
	uintptr_t vma = 0, hi;
	bool claim = false;

	while (fgets(line, sizeof(line), f)) {
		unsigned long kb;

		if (sscanf(line, "%lx-%lx ", &vma, &hi) == 2) {
			/* only the 1 GiB mappings' stand-ins (all, if none recorded) */
			claim = !fk.ng1;
			for (unsigned i = 0; i < fk.ng1; i++)
				claim |= vma >= fk.g1_lo[i] && vma < fk.g1_hi[i];
		}
		if (claim && sscanf(line, "KernelPageSize: %lu kB", &kb) == 1 && kb == 2048)
			snprintf(line, sizeof(line), "KernelPageSize: %s kB\n", fk.smaps_kb);
		if (len + strlen(line) < cap) {
			memcpy(out + len, line, strlen(line));
			len += strlen(line);
		}
	}
	fclose(f);
	fd = memfd_with(out, len);
	free(out);
	return fd;
}

static int fk_open(const char *path, int flags)
{
	char redirect[256], *p;
	unsigned i;

	for (i = 0; i < fk.nfiles; i++)
		if (strstr(path, fk.files[i].path))
			return memfd_with(fk.files[i].text, strlen(fk.files[i].text));
	if (fk.smaps_kb && strstr(path, "smaps"))
		return fake_smaps();
	if (fk.one_gig && strstr(path, "hugepages-1048576kB")) {
		/* a 1 GiB pool of 2 pages, one_gig_free (default all) free */
		char n[8];

		snprintf(n, sizeof(n), "%u\n", strstr(path, "free") ? (fk.one_gig_free ?: 2) :
			 strstr(path, "resv") ? 0 : 2);
		return memfd_with(n, strlen(n));
	}
	/* node 1 has node 0's hugepage pools */
	snprintf(redirect, sizeof(redirect), "%s", path);
	p = strstr(redirect, "/node1/");
	if (p)
		p[5] = '0';
	return tm_ops.open(redirect, flags);
}

static int fk_numa_available(void)
{
	return fk.no_numa ? -1 : 0;
}

static int fk_numa_max_node(void)
{
	return fk.nodes - 1;
}

static long long fk_node_size(int node)
{
	return node < fk.nodes ? 8ll << 30 : -1;
}

static int fk_node_cpus(int node, cpu_set_t *set)
{
	CPU_ZERO(set);
	if (node >= fk.nodes)
		return -EINVAL;
	if (fk.nodes == 1)
		return tm_ops.node_cpus(node, set);
	CPU_SET(node, set);	/* node n has CPU n */
	return 0;
}

static int fk_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out)
{
	const int size_bits = (int)(0x3fu << MAP_HUGE_SHIFT);

	if ((flags & MAP_HUGETLB) && (flags & size_bits) == MAP_HUGE_1GB) {
		if (fk.map_1g_fails)
			return -EINVAL;
		flags = (flags & ~size_bits) | MAP_HUGE_2MB;
		if (addr && fk.ng1 < 8) {
			fk.g1_lo[fk.ng1] = (uintptr_t)addr;
			fk.g1_hi[fk.ng1++] = (uintptr_t)addr + len;
		}
	}
	return tm_ops.mmap(addr, len, prot, flags, fd, off, out);
}

static int fk_mbind(void *addr, unsigned long len, int mode, const unsigned long *mask,
		     unsigned long maxnode, unsigned flags)
{
	unsigned long node0 = 1;

	fk.mbind_calls++;
	fk.mbind_nodes |= (unsigned)mask[0];
	if (mask[0] & 2) {
		fk.node1_lo = (uintptr_t)addr;
		fk.node1_hi = (uintptr_t)addr + len;
	}
	return tm_ops.mbind(addr, len, mode, &node0, maxnode, flags);
}

static long fk_move_pages(int pid, unsigned long count, void **pages, const int *nodes,
			  int *status, int flags)
{
	long ret = tm_ops.move_pages(pid, count, pages, nodes, status, flags);
	unsigned long i;

	for (i = 0; !ret && fk.node1_reported && i < count; i++)
		if ((uintptr_t)pages[i] >= fk.node1_lo && (uintptr_t)pages[i] < fk.node1_hi &&
		    status[i] == 0)
			status[i] = 1;
	return ret;
}

static int fk_set_affinity(const cpu_set_t *set)
{
	unsigned i;

	pthread_mutex_lock(&fk.lock);
	for (i = 0; i < 32; i++)
		if (CPU_ISSET(i, set))
			fk.cpus_pinned |= 1u << i;
	pthread_mutex_unlock(&fk.lock);
	return tm_ops.set_affinity(set);
}

/* POPULATE_WRITE calls in flight, each held 200 ms when fk.slow */
static unsigned inflight, max_inflight;
static bool slow;

static int fk_madvise(void *addr, size_t len, int advice)
{
	int ret;

	if (advice != MADV_POPULATE_WRITE || !slow)
		return tm_ops.madvise(addr, len, advice);
	pthread_mutex_lock(&fk.lock);
	inflight++;
	max_inflight = HKV_MAX(max_inflight, inflight);
	pthread_mutex_unlock(&fk.lock);
	usleep(200 * 1000);
	ret = tm_ops.madvise(addr, len, advice);
	pthread_mutex_lock(&fk.lock);
	inflight--;
	pthread_mutex_unlock(&fk.lock);
	return ret;
}

static struct os_ops fk_ops;

static void fake_install(void)
{
	fk_ops = tm_ops;
	fk_ops.open = fk_open;
	fk_ops.numa_available = fk_numa_available;
	fk_ops.numa_max_node = fk_numa_max_node;
	fk_ops.node_size = fk_node_size;
	fk_ops.node_cpus = fk_node_cpus;
	fk_ops.mmap = fk_mmap;
	fk_ops.mbind = fk_mbind;
	fk_ops.move_pages = fk_move_pages;
	fk_ops.set_affinity = fk_set_affinity;
	fk_ops.madvise = fk_madvise;
	os_set_ops(&fk_ops);
}

static int teardown_each(void **state)
{
	(void)state;
	tm_reset();
	tm_log_capture(NULL);
	fake_reset();
	return 0;
}

/* ---- helpers ---- */

static struct hkv_pool_opts opts(uint64_t npages, int backing, unsigned flags)
{
	return (struct hkv_pool_opts){ .sz = sizeof(struct hkv_pool_opts), .npages = npages,
				       .page_bytes = KV_PAGE, .backing = backing,
				       .numa_node = -1, .flags = flags };
}

/* ---- 1 GiB ---- */

#define NEAR_1G		(15 * 1024)	/* 960 MiB of 64 KiB pages: 1/16 round-up */

/* AUTO takes a (faked) 1 GiB page: 1 GiB aligned, rounded up, verified */
static void t_1g_path(void **state)
{
	struct hkv_pool_opts o = opts(NEAR_1G, HKV_BACKING_AUTO, 0);
	struct hkv_plan pl = { .sz = sizeof(pl) };
	struct hkv_region r;
	struct hkv_stats st;
	struct hkv_pool *p = NULL;
	uint64_t own, mapped;

	(void)state;
	tm_require_hugepages(512);
	fake_reset();
	fk.one_gig = true;
	fk.smaps_kb = "1048576";
	fake_install();
	assert_int_equal(hkv_pool_plan(&o, &pl), 0);
	assert_int_equal(pl.backing, HKV_BACKING_HUGE_1G);
	assert_int_equal(pl.node[0].hugepages_needed, 1);
	assert_int_equal(pl.arena_bytes, GB);
	/* this process's own hugetlb pages and mappings: exact whatever
	 * other processes take or give back meanwhile */
	own = tm_hugetlb_kb();
	mapped = tm_smaps_mapped_kb(2048);
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(tm_hugetlb_kb() - own, 512 * 2048);	/* 2 MiB stand-ins */
	assert_int_equal(tm_smaps_mapped_kb(2048) - mapped, 512 * 2048);
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.hugepage_bytes, GB);
	assert_int_equal(r.flags, 0);
	assert_int_equal(r.bytes, GB);
	assert_int_equal(r.npages, NEAR_1G);
	assert_int_equal((uintptr_t)r.base % GB, 0);
	st = tp_stats(p);
	assert_int_equal(st.backing, HKV_BACKING_HUGE_1G);
	assert_int_equal(st.arena_round_up_bytes, GB - NEAR_1G * KV_PAGE);
	assert_int_equal(st.fallbacks, 0);
	tm_check_pages(p, NEAR_1G, KV_PAGE);
	hkv_pool_destroy(p);
	assert_int_equal(tm_hugetlb_kb(), own);
	assert_int_equal(tm_smaps_mapped_kb(2048), mapped);
}

/* a 1 GiB mapping the kernel refuses: AUTO steps down to 2 MiB, reported */
static void t_1g_mmap_fails(void **state)
{
	struct hkv_pool_opts o = opts(NEAR_1G, HKV_BACKING_AUTO, 0);
	struct hkv_region r;
	struct hkv_pool *p = NULL;
	struct tm_log lg;

	(void)state;
	tm_require_hugepages(512);
	fake_reset();
	fk.one_gig = true;
	fk.map_1g_fails = true;
	fake_install();
	tm_log_capture(&lg);
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.hugepage_bytes, HP);
	assert_int_equal(r.flags, HKV_REGION_FALLBACK);
	assert_int_equal(r.bytes, GB);		/* still rounded to the 1 GiB plan */
	assert_int_equal(tp_stats(p).region[0].fallback_errno, -EINVAL);
	assert_true(tm_log_has(&lg, "1g backing"));
	tm_check_pages(p, NEAR_1G, KV_PAGE);
	hkv_pool_destroy(p);
	/* strict: the same is a clean error */
	o.backing = HKV_BACKING_HUGE_1G;
	o.flags = HKV_POOL_STRICT;
	p = NULL;
	assert_int_equal(hkv_pool_create(&o, &p), -EINVAL);
	assert_null(p);
}

/* 1.25 GiB: one 1 GiB page, the rest on 2 MiB pages, in one segment */
static void t_1g_mixed(void **state)
{
	const uint64_t npages = (GB + 256 * MB) / KV_PAGE;	/* 1.25 GiB */
	struct hkv_pool_opts o = opts(npages, HKV_BACKING_AUTO, 0);
	struct hkv_plan pl = { .sz = sizeof(pl) };
	struct hkv_region r[4];
	struct hkv_stats st;
	struct hkv_pool *p = NULL;

	(void)state;
	tm_require_hugepages(512 + 128);
	fake_reset();
	fk.one_gig = true;
	fk.one_gig_free = 1;
	fk.smaps_kb = "1048576";	/* the 1G part's stand-ins; the 2M part reads 2M */
	fake_install();
	assert_int_equal(hkv_pool_plan(&o, &pl), 0);
	assert_int_equal(pl.nparts, 2);
	assert_int_equal(pl.fallbacks, 0);	/* a 2nd 1G page would waste 0.75 GiB */
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(tm_hugetlb_kb(), (512 + 128) * (HP >> 10));	/* own: exact */
	assert_int_equal(hkv_regions(p, r, 4), 2);
	assert_int_equal(r[0].hugepage_bytes, GB);
	assert_int_equal(r[0].bytes, GB);
	assert_int_equal(r[0].first_page, 0);
	assert_int_equal(r[0].npages, GB / KV_PAGE);
	assert_int_equal((uintptr_t)r[0].base % GB, 0);
	assert_int_equal(r[1].hugepage_bytes, HP);
	assert_ptr_equal(r[1].base, (char *)r[0].base + GB);	/* one contiguous range */
	assert_int_equal(r[1].bytes, 256 * MB);
	assert_int_equal(r[1].first_page, GB / KV_PAGE);
	assert_int_equal(r[1].npages, 256 * MB / KV_PAGE);
	assert_int_equal(r[1].flags, HKV_REGION_ROUND_UP);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(r[i].hugepage_bytes, pl.part[i].hugepage_bytes);
		assert_int_equal(r[i].bytes, pl.part[i].bytes);
	}
	st = tp_stats(p);
	assert_int_equal(st.nregions, 2);
	assert_int_equal(st.region[1].wanted_bytes, HP);
	assert_int_equal(st.region[1].fallback_errno, 0);
	assert_int_equal(st.fallbacks, 0);
	assert_int_equal(st.arena_round_up_bytes, 0);
	tm_check_pages(p, npages, KV_PAGE);
	hkv_pool_destroy(p);
	assert_int_equal(tm_hugetlb_kb(), 0);
}

/* a small AUTO pool leaves the scarce 1 GiB pages alone, and says why */
static void t_1g_small_auto(void **state)
{
	struct hkv_pool_opts o = opts(256, HKV_BACKING_AUTO, 0);	/* 16 MiB */
	struct hkv_region r;
	struct hkv_pool *p = NULL;
	struct tm_log lg;

	(void)state;
	tm_require_hugepages(8);
	fake_reset();
	fk.one_gig = true;
	fake_install();
	tm_log_capture(&lg);
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	tm_log_capture(NULL);
	assert_int_equal(lg.warn + lg.err, 0);
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.hugepage_bytes, HP);
	assert_int_equal(r.bytes, 16 * MB);
	assert_int_equal(r.flags, HKV_REGION_ROUND_UP);
	assert_int_equal(tp_stats(p).fallbacks, 0);
	assert_int_equal(tp_stats(p).arena_round_up_bytes, 0);
	tm_check_pages(p, 256, KV_PAGE);
	hkv_pool_destroy(p);
}

/* a 1 GiB pool too small for a strict pool: the error says what to reserve */
static void t_1g_short(void **state)
{
	struct hkv_pool_opts o = opts(3 * GB / KV_PAGE, HKV_BACKING_HUGE_1G, HKV_POOL_STRICT);
	struct hkv_plan pl = { .sz = sizeof(pl) };
	struct hkv_pool *p = NULL;
	struct tm_log lg;

	(void)state;
	fake_reset();
	fk.one_gig = true;	/* 2 free: 3 needed */
	fake_install();
	tm_log_capture(&lg);
	assert_int_equal(hkv_pool_plan(&o, &pl), -ENOMEM);
	assert_int_equal(pl.node[0].wanted_needed, 3);
	assert_int_equal(pl.node[0].wanted_free, 2);
	assert_int_equal(pl.node[0].shortfall, 1);
	assert_int_equal(pl.node[0].reserve_total, 3);
	assert_int_equal(hkv_pool_create(&o, &p), -ENOMEM);
	assert_true(tm_log_has(&lg, "reserve 3 on this node"));
}

/* ---- two nodes ---- */

static struct hkv_pool *two_nodes(unsigned flags, int err)
{
	struct hkv_pool_opts o = opts(1024, HKV_BACKING_HUGE_2M, flags);
	struct hkv_pool *p = NULL;

	o.nlanes = 2;
	assert_int_equal(hkv_pool_create(&o, &p), err);
	return p;
}

static void t_two_nodes(void **state)
{
	struct hkv_plan pl = { .sz = sizeof(pl) };
	struct hkv_pool_opts o = opts(1024, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT);
	struct hkv_extent lane1;
	struct hkv_region r[3];
	struct hkv_stats st;
	struct hkv_pool *p;

	(void)state;
	tm_require_hugepages(32);
	fake_reset();
	fk.nodes = 2;
	fk.node1_reported = true;
	fake_install();
	o.nlanes = 2;
	assert_int_equal(hkv_pool_plan(&o, &pl), 0);
	assert_int_equal(pl.nnodes, 2);
	assert_int_equal(pl.node[1].node, 1);
	assert_int_equal(pl.node[1].ncpus, 1);
	assert_int_equal(pl.node[1].first_page, 512);
	p = two_nodes(HKV_POOL_STRICT, 0);
	assert_int_equal(hkv_regions(p, r, 3), 2);
	assert_ptr_equal((char *)r[0].base + r[0].bytes, r[1].base);	/* contiguous */
	assert_int_equal(r[0].node, 0);
	assert_int_equal(r[1].node, 1);
	assert_int_equal(r[0].flags | r[1].flags, 0);
	assert_int_equal(r[0].bytes, 32 * MB);
	assert_int_equal(r[1].first_page, 512);
	assert_int_equal(hkv_lane_range(p, 1, &lane1), 0);
	assert_int_equal(lane1.start, r[1].first_page);	/* lane i is node i */
	assert_int_equal(fk.mbind_nodes, 3);		/* bound to node 0 and node 1 */
	assert_int_equal(fk.cpus_pinned, 3);		/* threads on CPU 0 and CPU 1 */
	st = tp_stats(p);
	assert_int_equal(st.nregions, 2);
	assert_int_equal(st.region[1].node, 1);
	assert_int_equal(st.misplaced_pages, 0);
	tm_check_pages(p, 1024, KV_PAGE);
	hkv_pool_destroy(p);
}

/* both nodes' segments prefault at the same time, each on its own CPUs */
static void t_two_nodes_parallel(void **state)
{
	struct hkv_stats st;
	struct hkv_pool *p;

	(void)state;
	tm_require_hugepages(32);
	fake_reset();
	fk.nodes = 2;
	fk.node1_reported = true;
	fake_install();
	slow = true;
	max_inflight = 0;
	p = two_nodes(HKV_POOL_STRICT, 0);
	slow = false;
	assert_int_equal(max_inflight, 2);
	st = tp_stats(p);
	assert_true(st.region[0].prefault_ns >= 200000000ull);
	assert_true(st.region[1].prefault_ns >= 200000000ull);
	/* the pool's prefault time is the wall time, not the sum */
	assert_true(st.prefault_ns < st.region[0].prefault_ns + st.region[1].prefault_ns);
	hkv_pool_destroy(p);
}

/* memory bound to node 1 found on node 0 */
static void t_two_nodes_misplaced(void **state)
{
	struct hkv_region r[2];
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	tm_require_hugepages(32);
	fake_reset();
	fk.nodes = 2;
	fake_install();
	tm_log_capture(&lg);
	assert_null(two_nodes(HKV_POOL_STRICT, -ENOMEM));
	assert_true(tm_log_has(&lg, "16 of 16 pages not on the node"));
	p = two_nodes(0, 0);
	assert_int_equal(hkv_regions(p, r, 2), 2);
	assert_int_equal(r[0].flags, 0);
	assert_int_equal(r[1].flags, HKV_REGION_MISPLACED);
	assert_int_equal(r[1].node, 0);			/* where it really is */
	assert_int_equal(tp_stats(p).misplaced_pages, 16);
	assert_int_equal(tp_stats(p).region[1].misplaced_pages, 16);
	hkv_pool_destroy(p);
}

/* node 1 has no free hugepages: it steps down to THP alone */
static void t_two_nodes_short(void **state)
{
	struct hkv_region r[2];
	struct hkv_stats st;
	struct hkv_pool *p;
	struct tm_log lg;

	(void)state;
	tm_require_hugepages(16);
	fake_reset();
	fk.nodes = 2;
	fk.node1_reported = true;
	fake_file("node1/hugepages/hugepages-2048kB/free_hugepages", "0\n");
	fake_install();
	tm_log_capture(&lg);
	assert_null(two_nodes(HKV_POOL_STRICT, -ENOMEM));
	assert_true(tm_log_has(&lg, "node 1: strict 2m backing unavailable"));
	p = two_nodes(0, 0);
	assert_int_equal(hkv_regions(p, r, 2), 2);
	assert_int_equal(r[0].hugepage_bytes, HP);
	assert_int_equal(r[0].flags, 0);
	assert_int_equal(r[1].hugepage_bytes, 4096);
	assert_int_equal(r[1].flags, HKV_REGION_THP | HKV_REGION_FALLBACK);
	assert_int_equal(r[1].node, 1);
	st = tp_stats(p);
	assert_int_equal(st.backing, HKV_BACKING_THP);	/* the worst region */
	assert_int_equal(st.fallbacks, 1);
	assert_int_equal(st.region[1].fallback_errno, -ENOMEM);
	tm_check_pages(p, 1024, KV_PAGE);
	hkv_pool_destroy(p);
}

static void t_node_1_only(void **state)
{
	struct hkv_pool_opts o = opts(256, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT);
	struct hkv_region r[2];
	struct hkv_pool *p = NULL;

	(void)state;
	tm_require_hugepages(8);
	fake_reset();
	fk.nodes = 2;
	fk.node1_reported = true;
	fake_install();
	o.numa_node = 1;
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(hkv_regions(p, r, 2), 1);
	assert_int_equal(r[0].node, 1);
	assert_int_equal(fk.mbind_nodes, 2);
	assert_int_equal(fk.cpus_pinned, 2);
	hkv_pool_destroy(p);
	o.numa_node = 2;
	assert_int_equal(hkv_pool_create(&o, &p), -EINVAL);
}

/* ---- the kernel disagreeing with sysfs ---- */

/* smaps says 4 kB where 2 MiB was mapped: a downgrade, reported */
static void t_smaps_downgrade(void **state)
{
	struct hkv_pool_opts o = opts(256, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT);
	struct hkv_region r;
	struct hkv_pool *p = NULL;
	struct tm_log lg;

	(void)state;
	tm_require_hugepages(8);
	fake_reset();
	fk.smaps_kb = "4";
	fake_install();
	tm_log_capture(&lg);
	assert_int_equal(hkv_pool_create(&o, &p), -ENOMEM);
	assert_true(tm_log_has(&lg, "KernelPageSize 4 kB, asked for 2048 kB"));
	o.flags = 0;
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.hugepage_bytes, 4096);
	assert_int_equal(r.flags, HKV_REGION_FALLBACK);
	hkv_pool_destroy(p);
}

/* sysfs says plenty is free, the kernel refuses the reservation at mmap */
static int child_refused(void *arg)
{
	/* more than the whole hugepage pool: no other process's frees make it fit */
	uint64_t hp = tm_meminfo("HugePages_Total") + 1;
	struct hkv_pool_opts o = opts(hp * (HP / KV_PAGE), HKV_BACKING_HUGE_2M,
				      HKV_POOL_STRICT);
	struct hkv_pool *p = NULL;
	struct tm_log lg;

	(void)arg;
	fake_reset();
	fake_file("hugepages-2048kB/free_hugepages", "1000000\n");
	fake_file("hugepages-2048kB/nr_hugepages", "1000000\n");
	fake_install();
	tm_log_capture(&lg);
	if (hkv_pool_create(&o, &p) != -ENOMEM || p)
		return 10;
	if (!tm_log_has(&lg, "2m backing"))
		return 11;
	if (tm_hugetlb_kb() || tm_smaps_vmas(2048))	/* nothing kept (this process's) */
		return 12;
	return 0;
}

static void t_kernel_refuses(void **state)
{
	(void)state;
	tm_require_hugepages(1);
	tm_run_in_child(child_refused, NULL);
}

/* a kernel without NUMA: one node 0, no mbind */
static void t_no_numa(void **state)
{
	struct hkv_pool_opts o = opts(256, HKV_BACKING_HUGE_2M, HKV_POOL_STRICT);
	struct hkv_region r;
	struct hkv_pool *p = NULL;

	(void)state;
	tm_require_hugepages(8);
	fake_reset();
	fk.no_numa = true;
	fake_install();
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(hkv_regions(p, &r, 1), 1);
	assert_int_equal(r.node, 0);
	assert_int_equal(fk.mbind_calls, 0);
	hkv_pool_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(t_1g_path, teardown_each),
		cmocka_unit_test_teardown(t_1g_mmap_fails, teardown_each),
		cmocka_unit_test_teardown(t_1g_short, teardown_each),
		cmocka_unit_test_teardown(t_1g_mixed, teardown_each),
		cmocka_unit_test_teardown(t_1g_small_auto, teardown_each),
		cmocka_unit_test_teardown(t_two_nodes, teardown_each),
		cmocka_unit_test_teardown(t_two_nodes_parallel, teardown_each),
		cmocka_unit_test_teardown(t_two_nodes_misplaced, teardown_each),
		cmocka_unit_test_teardown(t_two_nodes_short, teardown_each),
		cmocka_unit_test_teardown(t_node_1_only, teardown_each),
		cmocka_unit_test_teardown(t_smaps_downgrade, teardown_each),
		cmocka_unit_test_teardown(t_kernel_refuses, teardown_each),
		cmocka_unit_test_teardown(t_no_numa, teardown_each),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
