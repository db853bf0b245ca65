// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_named_thread.c - a named pool used by several threads of one
 * process at once (under TSan in make check): allocations on own lanes and
 * HKV_LANE_ANY, frees, units made, pinned, split and removed, evictions
 * and checks, through the pool's lane locks and pool lock in the file;
 * bursts on a thread's own lane long enough to bias it to that thread,
 * revoked by the others' calls; then
 * every page is free again and hkv_check() is clean. A second handle on the
 * same pool cannot exist in one process (-EADDRINUSE), so the threads share
 * the creator's.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "hugekv.h"

#define NTHREADS	4
#define OPS		20000
#define BURST		17000	/* > the calls after which a lane is biased */

struct worker {
	struct hkv_pool *p;
	unsigned id;
	int err;
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct hkv_extent e[4], held[32][4];
	int nh[32] = { 0 }, n;
	uint64_t s = 0x9e3779b97f4a7c15ull * (w->id + 1), unit = (uint64_t)w->id << 40;

	for (int op = 0; op < OPS && !w->err; op++) {
		uint64_t r = rnd(&s);
		unsigned slot = (unsigned)(r >> 8) % 32;

		if (nh[slot]) {
			if ((r & 3) == 0) {	/* through a unit: add, pin, split, remove */
				unit += 2;
				if (hkv_unit_add(w->p, unit, held[slot], (unsigned)nh[slot]) ||
				    hkv_unit_pin(w->p, unit) || hkv_unit_unpin(w->p, unit))
					w->err = 1;
				n = hkv_unit_split(w->p, unit, 1, unit + 1);
				if (n && n != -EINVAL)
					w->err = 2;
				if (hkv_unit_remove(w->p, unit, HKV_UNIT_FREE) ||
				    (!n && hkv_unit_remove(w->p, unit + 1, HKV_UNIT_FREE)))
					w->err = 3;
			} else if (hkv_free(w->p, held[slot], (unsigned)nh[slot])) {
				w->err = 4;
			}
			nh[slot] = 0;
			continue;
		}
		n = hkv_alloc(w->p, 1 + (r >> 16) % 6, r & 64 ? HKV_LANE_ANY : w->id, 0, e, 4);
		if (n > 0) {
			memcpy(held[slot], e, sizeof(e));
			nh[slot] = n;
		} else if (n != -ENOMEM && n != -ENOSPC) {
			w->err = 5;
		}
		if ((r & 1023) == 0 && hkv_check(w->p))
			w->err = 6;
		if ((r & 1023) == 1) {	/* every lane at once, beside the others' calls */
			const uint64_t *sl;
			uint64_t ns;

			if (hkv_free_slots(w->p, &sl, &ns))
				w->err = 9;
		}
		for (int i = 0; op % 5000 == 0 && i < BURST && !w->err; i++)
			if (hkv_alloc(w->p, 1, w->id, 0, e, 1) == 1 && hkv_free(w->p, e, 1))
				w->err = 8;
	}
	for (unsigned i = 0; i < 32; i++)
		if (nh[i] && hkv_free(w->p, held[i], (unsigned)nh[i]))
			w->err = 7;
	return NULL;
}

static void test_threads(void **state)
{
	char dir[64], cmd[96];
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 4096, .nlanes = NTHREADS,
				   .name = "threads" };
	struct worker w[NTHREADS];
	pthread_t t[NTHREADS];
	struct hkv_pool *p = NULL, *q = NULL;

	(void)state;
	snprintf(dir, sizeof(dir), "/dev/shm/hkv-nthr-XXXXXX");
	assert_non_null(mkdtemp(dir));
	setenv("HUGEKV_NAMED_DIR", dir, 1);
	assert_int_equal(hkv_pool_create(&o, &p), 0);
	assert_int_equal(hkv_pool_attach("threads", 0, &q), -EADDRINUSE);
	for (unsigned i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .p = p, .id = i };
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (unsigned i = 0; i < NTHREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(w[i].err, 0);
	}
	assert_int_equal(hkv_available(p), 4096);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("threads"), 0);
	snprintf(cmd, sizeof(cmd), "rmdir %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
