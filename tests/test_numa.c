// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_numa.c - topology (lib/numa.c): this machine as libnuma and sysfs
 * describe it, cross-checked against /proc and sysconf; a
 * missing 1 GiB pool; more nodes than reported inline; node CPUs that
 * cannot be read (reported, prefault unpinned); and the plan's choice of
 * backing from those numbers (plan.c), without mapping anything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
#include <cmocka.h>

#include "hkv_test_mem.h"

static void t_this_machine(void **state)
{
	struct topo t;
	struct rlimit rl;
	const struct topo_node *n;

	(void)state;
	assert_int_equal(numa_topo_read(&t), 0);
	assert_true(t.numa);
	assert_true(t.nnodes >= 1);
	n = numa_topo_find(&t, 0);
	assert_non_null(n);
	assert_null(numa_topo_find(&t, 4000));
	assert_int_equal(n->ncpus, sysconf(_SC_NPROCESSORS_ONLN));	/* one node here */
	assert_true(n->huge_2m.present);
	assert_true(t.glob_2m.present);
	assert_int_equal(t.glob_2m.total, tm_meminfo("HugePages_Total"));
	assert_true(n->huge_2m.free <= n->huge_2m.total);
	assert_int_equal(numa_topo_pool(n, HKV_PGSZ_2M), &n->huge_2m);
	assert_int_equal(numa_topo_pool(n, HKV_PGSZ_1G), &n->huge_1g);
	assert_null(numa_topo_pool(n, HKV_PGSZ_4K));
	assert_int_equal(numa_topo_glob(&t, HKV_PGSZ_1G), &t.glob_1g);
	assert_null(numa_topo_glob(&t, 12345));
	assert_int_equal(getrlimit(RLIMIT_MEMLOCK, &rl), 0);
	assert_int_equal(t.memlock, rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur);
	if (!access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK))
		assert_true(!strcmp(t.thp_mode, "always") || !strcmp(t.thp_mode, "madvise") ||
			    !strcmp(t.thp_mode, "never"));
	/* no 1 GiB pages on this machine: absent, not an error */
	if (access("/sys/kernel/mm/hugepages/hugepages-1048576kB", F_OK))
		assert_false(t.glob_1g.present || n->huge_1g.present);
}

static int max_node_99(void)
{
	return 99;
}

static long long every_node(int node)
{
	(void)node;
	return 1ll << 30;
}

static int node_cpus_0(int node, cpu_set_t *set)
{
	(void)node;
	return os_default_ops.node_cpus(0, set);
}

static int open_node0(const char *path, int flags)
{
	char p[256], *s;

	snprintf(p, sizeof(p), "%s", path);
	s = strstr(p, "/node");
	if (s && s[5] >= '0' && s[5] <= '9') {	/* every node reads node 0's files */
		size_t tail = strlen(strchr(s + 5, '/'));

		memmove(s + 6, strchr(s + 5, '/'), tail + 1);
		s[5] = '0';
	}
	return os_default_ops.open(p, flags);
}

/* 100 nodes: the first HKV_MAX_NODES are used, and it says so */
static void t_many_nodes(void **state)
{
	struct os_ops ops = tm_ops;
	struct tm_log lg;
	struct topo t;

	(void)state;
	ops.numa_max_node = max_node_99;
	ops.node_size = every_node;
	ops.node_cpus = node_cpus_0;
	ops.open = open_node0;
	tm_log_capture(&lg);
	os_set_ops(&ops);
	assert_int_equal(numa_topo_read(&t), 0);
	os_set_ops(NULL);
	tm_log_capture(NULL);
	assert_int_equal(t.nnodes, HKV_MAX_NODES);
	assert_int_equal(t.node[HKV_MAX_NODES - 1].node, HKV_MAX_NODES - 1);
	assert_true(tm_log_has(&lg, "more than 16 memory nodes"));
}

static void t_node_cpus_fail(void **state)
{
	struct tm_fault f = { TM_NODE_CPUS, 0, EIO };
	struct tm_log lg;
	struct topo t;

	(void)state;
	tm_log_capture(&lg);
	tm_inject(&f);
	assert_int_equal(numa_topo_read(&t), 0);
	tm_reset();
	tm_log_capture(NULL);
	assert_int_equal(t.node[0].ncpus, 0);
	assert_true(tm_log_has(&lg, "cannot read the CPUs of node 0"));
}

/* a made-up machine with NUMA support: n nodes, node 0 with ncpus CPUs,
 * no hugepage pool and no THP until the test sets them */
static void made_up(struct topo *t, unsigned n, unsigned ncpus)
{
	memset(t, 0, sizeof(*t));
	t->numa = true;
	t->nnodes = n;
	t->node[0].ncpus = ncpus;
}

/* the backing order and the fit rules, on made-up numbers */
static void t_plan_rules(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 1024, .page_bytes = 1 << 16,
				   .numa_node = -1, .backing = HKV_BACKING_AUTO };
	struct hkv_plan p;
	struct topo t;

	(void)state;
	made_up(&t, 1, 4);
	t.node[0].huge_2m = (struct numa_topo_pool){ true, 100, 40, 0 };
	t.glob_2m = (struct numa_topo_pool){ true, 100, 40, 0 };
	strcpy(t.thp_mode, "never");
	/* AUTO: 64 MiB is too small for a 1G page (size rule, not a fallback)
	 * -> 2M needs 32, the node and the global pool have 40 free */
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.backing, HKV_BACKING_HUGE_2M);
	assert_int_equal(p.node[0].fallback_errno, 0);
	assert_int_equal(p.nparts, 1);
	assert_int_equal(p.part[0].flags, HKV_REGION_ROUND_UP);
	assert_int_equal(p.part[0].hugepages, 32);
	assert_int_equal(p.fallbacks, 0);
	/* global reservations by others leave too few: THP is "never" -> 4K */
	t.glob_2m.resv = 20;
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.backing, HKV_BACKING_SMALL);
	assert_int_equal(p.fallbacks, 1);
	strcpy(t.thp_mode, "madvise");
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.backing, HKV_BACKING_THP);
	/* strict explicit backings never step down */
	o.backing = HKV_BACKING_HUGE_2M;
	o.flags = HKV_POOL_STRICT;
	assert_int_equal(plan_arena(&o, &t, &p), -ENOMEM);
	assert_int_equal(p.node[0].backing, HKV_BACKING_HUGE_2M);
	assert_int_equal(p.node[0].shortfall, 0);	/* the node has them: global short */
	o.backing = HKV_BACKING_THP;
	strcpy(t.thp_mode, "never");
	assert_int_equal(plan_arena(&o, &t, &p), -ENOMEM);
	assert_int_equal(p.node[0].fallback_errno, -EOPNOTSUPP);
	o.backing = HKV_BACKING_SMALL;
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.arena_bytes, 64 << 20);
	assert_int_equal(p.node[0].hugepage_bytes, 4096);
	/* AUTO + STRICT still walks the order */
	o.backing = HKV_BACKING_AUTO;
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(plan_next_backing(&o, HKV_BACKING_SMALL), -1);
	assert_string_equal(hkv_backing_name(HKV_BACKING_THP), "thp");
	assert_string_equal(hkv_backing_name(42), "?");
	assert_int_equal(backing_pgsz(HKV_BACKING_NONE), 0);
}

/* AUTO mixes page sizes in one segment: every free 1G page, then 2M, then THP */
static void t_plan_mixed(void **state)
{
	const uint64_t G = 1ull << 30, M2 = 2ull << 20;
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 9 * G / 4 / (1 << 16),
				   .page_bytes = 1 << 16, .numa_node = -1,
				   .backing = HKV_BACKING_AUTO };
	struct hkv_plan p;
	struct topo t;

	(void)state;
	made_up(&t, 1, 2);
	t.node[0].huge_1g = t.glob_1g = (struct numa_topo_pool){ true, 2, 2, 0 };
	t.node[0].huge_2m = t.glob_2m = (struct numa_topo_pool){ true, 200, 200, 0 };
	strcpy(t.thp_mode, "madvise");
	/* 2.25 GiB, two free 1G pages: 2 x 1G + 128 x 2M, as wanted */
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.nparts, 2);
	assert_int_equal(p.part[0].backing, HKV_BACKING_HUGE_1G);
	assert_int_equal(p.part[0].hugepages, 2);
	assert_int_equal(p.part[0].first_page, 0);
	assert_int_equal(p.part[0].npages, 2 * G / (1 << 16));
	assert_int_equal(p.part[0].flags, 0);
	assert_int_equal(p.part[1].backing, HKV_BACKING_HUGE_2M);
	assert_int_equal(p.part[1].hugepages, 128);
	assert_int_equal(p.part[1].first_page, 2 * G / (1 << 16));
	assert_int_equal(p.part[1].flags, HKV_REGION_ROUND_UP);	/* a 3rd 1G: 0.75 G waste */
	assert_int_equal(p.arena_bytes, 9 * G / 4);
	assert_int_equal(p.round_up_bytes, 0);
	assert_int_equal(p.fallbacks, 0);
	assert_int_equal(p.node[0].wanted_backing, HKV_BACKING_HUGE_1G);
	assert_int_equal(p.node[0].wanted_needed, 2);
	assert_int_equal(p.node[0].shortfall, 0);
	/* one free 1G page: the second gigabyte goes to 2M, a fallback */
	t.node[0].huge_1g.free = t.glob_1g.free = 1;
	t.node[0].huge_2m = t.glob_2m = (struct numa_topo_pool){ true, 1000, 1000, 0 };
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.nparts, 2);
	assert_int_equal(p.part[0].hugepages, 1);
	assert_int_equal(p.part[1].hugepages, 5 * G / 4 / M2);
	assert_int_equal(p.part[1].flags, HKV_REGION_FALLBACK | HKV_REGION_ROUND_UP);
	assert_int_equal(p.part[1].fallback_errno, -ENOMEM);
	assert_int_equal(p.part[1].wanted_bytes, G);
	assert_int_equal(p.part[1].shortfall, 1);
	assert_int_equal(p.node[0].shortfall, 1);
	assert_int_equal(p.node[0].reserve_total, 3);
	assert_int_equal(p.fallbacks, 1);
	/* and too few 2M pages as well: the rest on THP, still one segment */
	t.node[0].huge_2m = t.glob_2m = (struct numa_topo_pool){ true, 200, 200, 0 };
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.nparts, 3);
	assert_int_equal(p.part[1].hugepages, 200);
	assert_int_equal(p.part[2].backing, HKV_BACKING_THP);
	assert_int_equal(p.part[2].bytes, 9 * G / 4 - G - 200 * M2);
	assert_int_equal(p.part[2].flags & HKV_REGION_FALLBACK, HKV_REGION_FALLBACK);
	assert_int_equal(p.backing, HKV_BACKING_THP);
	/* strict keeps its meaning: all of the asked size or -ENOMEM */
	o.backing = HKV_BACKING_HUGE_1G;
	o.flags = HKV_POOL_STRICT;
	assert_int_equal(plan_arena(&o, &t, &p), -ENOMEM);
	assert_int_equal(p.node[0].wanted_needed, 3);
	assert_int_equal(p.node[0].shortfall, 2);
	/* explicit 1G is used as asked: a 16 MiB pool rounds up to one page */
	o.npages = 256;
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.arena_bytes, G);
	/* AUTO: the same 16 MiB takes eight 2M pages, not the 1G page */
	o.backing = HKV_BACKING_AUTO;
	o.flags = 0;
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.nparts, 1);
	assert_int_equal(p.part[0].hugepages, 8);
	assert_int_equal(p.part[0].flags, HKV_REGION_ROUND_UP);
	assert_int_equal(p.arena_bytes, 16 << 20);
	/* a pool within 1/8 of a 1G page rounds up to it */
	o.npages = 15 * G / 16 / (1 << 16);
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.nparts, 1);
	assert_int_equal(p.part[0].backing, HKV_BACKING_HUGE_1G);
	assert_int_equal(p.round_up_bytes, G / 16);
	/* 1 MiB: not even a 2M page or a THP range is worth it: 4K */
	o.npages = 16;
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.part[0].backing, HKV_BACKING_SMALL);
	assert_int_equal(p.arena_bytes, 1 << 20);
}

/* two nodes share the global pool: the second segment cannot count it twice */
static void t_plan_global_sum(void **state)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 1024, .page_bytes = 1 << 16,
				   .numa_node = -1, .backing = HKV_BACKING_HUGE_2M };
	struct hkv_plan p;
	struct topo t;

	(void)state;
	made_up(&t, 2, 0);
	t.node[0] = (struct topo_node){ .node = 0, .huge_2m = { true, 20, 20, 0 } };
	t.node[1] = (struct topo_node){ .node = 1, .huge_2m = { true, 20, 20, 0 } };
	t.glob_2m = (struct numa_topo_pool){ true, 40, 20, 0 };	/* 16 + 16 > 20 */
	strcpy(t.thp_mode, "always");
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.nnodes, 2);
	assert_int_equal(p.node[0].backing, HKV_BACKING_HUGE_2M);
	assert_int_equal(p.node[1].backing, HKV_BACKING_THP);
	assert_int_equal(p.node[1].first_page, 512);
	assert_int_equal(p.node[1].bytes, 32 << 20);
	/* a pool smaller than two 1 GiB granules lands in one segment */
	t.glob_1g = (struct numa_topo_pool){ true, 8, 8, 0 };
	t.node[0].huge_1g = t.node[1].huge_1g = (struct numa_topo_pool){ true, 4, 4, 0 };
	o.backing = HKV_BACKING_HUGE_1G;
	assert_int_equal(plan_arena(&o, &t, &p), 0);
	assert_int_equal(p.nnodes, 1);
	assert_int_equal(p.node[0].npages, 1024);
	assert_int_equal(p.arena_bytes, 1 << 30);
	assert_int_equal(p.round_up_bytes, (1 << 30) - (64 << 20));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_this_machine),
		cmocka_unit_test(t_many_nodes),
		cmocka_unit_test(t_node_cpus_fail),
		cmocka_unit_test(t_plan_rules),
		cmocka_unit_test(t_plan_mixed),
		cmocka_unit_test(t_plan_global_sum),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
