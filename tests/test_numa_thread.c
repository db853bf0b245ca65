// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_numa_thread.c - concurrent pool creates read the topology through
 * real libnuma at the same time (its CPU-mask cache is filled without a
 * lock); run under ThreadSanitizer by make check. Every thread must see the
 * same topology, and every pool must come up.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "internal.h"

#define THREADS	4
#define ROUNDS	20

struct arg {
	struct topo first;
	int err;
};

static void *reader(void *p)
{
	struct arg *a = p;
	struct topo *t = malloc(sizeof(*t));
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 16, .page_bytes = 4096,
				   .backing = HKV_BACKING_SMALL, .prefault_threads = 1 };

	for (int i = 0; i < ROUNDS && !a->err; i++) {
		struct hkv_pool *pool = NULL;

		a->err = numa_topo_read(i ? t : &a->first);
		if (!a->err && i && (t->nnodes != a->first.nnodes ||
				     t->node[0].ncpus != a->first.node[0].ncpus ||
				     !CPU_EQUAL(&t->node[0].cpus, &a->first.node[0].cpus)))
			a->err = -EUCLEAN;
		if (!a->err)
			a->err = hkv_pool_create(&o, &pool);
		hkv_pool_destroy(pool);
	}
	free(t);
	return NULL;
}

static void test_concurrent_topology(void **state)
{
	struct arg a[THREADS];
	pthread_t t[THREADS];

	(void)state;
	memset(a, 0, sizeof(a));
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, &a[i]), 0);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].err, 0);
		assert_true(a[i].first.nnodes >= 1);
		assert_true(a[i].first.node[0].ncpus >= 1);
		assert_int_equal(a[i].first.nnodes, a[0].first.nnodes);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_topology),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
