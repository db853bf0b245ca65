// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_named_numa.c - numa_node of a named pool is enforced: the memory
 * file is allocated with the creating thread bound to the node (the
 * policy is seen at fallocate() through os.c's table, and the thread's own
 * policy comes back after), the pages are on the node (move_pages() and
 * get_mempolicy() on the mapping), a node without memory or that does not
 * exist is -EINVAL with nothing made, and a policy call that fails fails
 * the create cleanly. One NUMA node here: the call path is what is tested.
 */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hkv_test_named.h"
#include "internal.h"

#define NPAGES	64

static struct os_ops ops;
static int policy_at_fallocate;		/* the thread's mode then, -1: not seen */
static unsigned long mask_at_fallocate;
static int sets, fail_set, fail_fallocate;

static int setup(void **state)
{
	(void)state;
	return tn_dir_setup("hkv-nnuma");
}

static int teardown(void **state)
{
	(void)state;
	return tn_dir_teardown();
}

static int rec_fallocate(int fd, uint64_t off, uint64_t len)
{
	unsigned long m[HKV_MAX_NODES / (8 * sizeof(long)) + 1] = { 0 };

	if (get_mempolicy(&policy_at_fallocate, m, 8 * sizeof(m), NULL, 0))
		policy_at_fallocate = -1;
	mask_at_fallocate = m[0];
	if (fail_fallocate)
		return -ENOSPC;
	return os_default_ops.fallocate(fd, off, len);
}

static int rec_set_mempolicy(int mode, const unsigned long *mask, unsigned long maxnode)
{
	if (++sets == fail_set)
		return -EPERM;
	return os_default_ops.set_mempolicy(mode, mask, maxnode);
}

static void hook(void)
{
	ops = os_default_ops;
	ops.fallocate = rec_fallocate;
	ops.set_mempolicy = rec_set_mempolicy;
	os_set_ops(&ops);
	policy_at_fallocate = -1;
	mask_at_fallocate = 0;
	sets = fail_set = fail_fallocate = 0;
}

static int create(int node, struct hkv_pool **p)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = NPAGES, .page_bytes = 4096,
				   .backing = HKV_BACKING_SMALL, .numa_node = node,
				   .name = "numa" };

	*p = NULL;
	return hkv_pool_create(&o, p);
}

static bool meta_exists(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/hugekv.numa.meta", tn_dir);
	return access(path, F_OK) == 0;
}

static bool no_numa(void)
{
	return numa_available() < 0;
}

static int thread_mode(void)
{
	int mode = -1;

	assert_int_equal(get_mempolicy(&mode, NULL, 0, NULL, 0), 0);
	return mode;
}

static void test_bound_to_node(void **state)
{
	void *pages[NPAGES];
	int status[NPAGES], node = -1;
	struct hkv_pool *p;

	(void)state;
	if (no_numa())
		skip();
	hook();
	assert_int_equal(create(0, &p), 0);
	os_set_ops(NULL);
	assert_int_equal(policy_at_fallocate, MPOL_BIND);	/* the thread, then */
	assert_int_equal(mask_at_fallocate, 1ul);		/* node 0 only */
	assert_int_equal(sets, 2);				/* bound, restored */
	assert_int_equal(thread_mode(), MPOL_DEFAULT);
	for (int i = 0; i < NPAGES; i++)
		pages[i] = hkv_page_ptr(p, (uint64_t)i);
	assert_int_equal(move_pages(0, NPAGES, pages, NULL, status, 0), 0);
	for (int i = 0; i < NPAGES; i++)
		assert_int_equal(status[i], 0);
	assert_int_equal(get_mempolicy(&node, NULL, 0, pages[NPAGES - 1],
				       MPOL_F_NODE | MPOL_F_ADDR), 0);
	assert_int_equal(node, 0);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("numa"), 0);
}

/* a policy of the thread's own is what it has after the create */
static void test_thread_policy_restored(void **state)
{
	unsigned long m = 1, got[HKV_MAX_NODES / (8 * sizeof(long)) + 1] = { 0 };
	struct hkv_pool *p;
	int mode = -1;

	(void)state;
	if (no_numa())
		skip();
	assert_int_equal(set_mempolicy(MPOL_PREFERRED, &m, 8 * sizeof(m)), 0);
	hook();
	assert_int_equal(create(0, &p), 0);
	os_set_ops(NULL);
	assert_int_equal(policy_at_fallocate, MPOL_BIND);
	assert_int_equal(get_mempolicy(&mode, got, 8 * sizeof(got), NULL, 0), 0);
	assert_int_equal(mode, MPOL_PREFERRED);
	assert_int_equal(got[0], 1ul);
	assert_int_equal(set_mempolicy(MPOL_DEFAULT, NULL, 0), 0);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("numa"), 0);
}

/* -1: no binding, the thread's policy untouched */
static void test_any_node(void **state)
{
	struct hkv_pool *p;

	(void)state;
	hook();
	assert_int_equal(create(-1, &p), 0);
	os_set_ops(NULL);
	assert_int_equal(sets, 0);
	assert_int_not_equal(policy_at_fallocate, MPOL_BIND);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("numa"), 0);
}

static void test_invalid_node(void **state)
{
	const int nodes[] = { HKV_MAX_NODES, HKV_MAX_NODES + 7, 1000000 };
	struct hkv_pool *p;

	(void)state;
	hook();
	for (unsigned i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		assert_int_equal(create(nodes[i], &p), -EINVAL);
		assert_null(p);
		assert_false(meta_exists());
	}
	/* a node number this machine lacks (one node here: 1) */
	if (numa_available() < 0 || numa_max_node() < 1) {
		assert_int_equal(create(1, &p), -EINVAL);
		assert_false(meta_exists());
	}
	assert_int_equal(sets, 0);
	os_set_ops(NULL);
}

/* a failed bind, a failed fallocate on the node: -errno, nothing left,
 * the thread's policy as before */
static void test_failures(void **state)
{
	struct hkv_pool *p;

	(void)state;
	if (no_numa())
		skip();
	hook();
	fail_set = 1;
	assert_int_equal(create(0, &p), -EPERM);
	assert_false(meta_exists());
	assert_int_equal(policy_at_fallocate, -1);		/* never reached */
	hook();
	fail_fallocate = 1;
	assert_int_equal(create(0, &p), -ENOMEM);
	assert_false(meta_exists());
	assert_int_equal(sets, 2);				/* restored */
	assert_int_equal(thread_mode(), MPOL_DEFAULT);
	os_set_ops(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound_to_node),
		cmocka_unit_test(test_thread_policy_restored),
		cmocka_unit_test(test_any_node),
		cmocka_unit_test(test_invalid_node),
		cmocka_unit_test(test_failures),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
