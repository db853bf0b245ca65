// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_shheap_thread.c - a named pool's file heap (shheap.c) used by
 * several threads at once, as the holders of different lane locks use it
 * (under TSan in make check): blocks of random sizes from the free lists
 * and the bump pointer, each filled with its owner's pattern and checked
 * before it is freed (a block handed out twice fails the check); then the
 * heap is walked (shheap_sweep()): every block readable, exactly the ones
 * still held kept.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "internal.h"

#define NTHREADS	4
#define OPS		20000
#define HELD		64
#define HEAP_BYTES	(64ull << 20)

struct worker {
	struct shheap *h;
	unsigned id;
	int err;
	void *held[HELD];
	uint64_t bytes[HELD];
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(void *p, uint64_t bytes, uint8_t v)
{
	memset(p, v, bytes);
}

static bool filled(const void *p, uint64_t bytes, uint8_t v)
{
	for (uint64_t i = 0; i < bytes; i++)
		if (((const uint8_t *)p)[i] != v)
			return false;
	return true;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t s = 0x9e3779b97f4a7c15ull * (w->id + 1);
	uint8_t v = (uint8_t)(0x10 + w->id);

	for (int op = 0; op < OPS && !w->err; op++) {
		uint64_t r = rnd(&s);
		unsigned i = (unsigned)(r >> 8) % HELD;

		if (w->held[i]) {
			if (!filled(w->held[i], w->bytes[i], v))
				w->err = 1;	/* another thread wrote it: handed out twice */
			shheap_free(w->h, w->held[i]);
			w->held[i] = NULL;
			continue;
		}
		w->bytes[i] = 1 + (r >> 16) % (r & 1 ? 200 : 5000);
		w->held[i] = shheap_alloc(w->h, w->bytes[i]);
		if (!w->held[i] || !filled(w->held[i], w->bytes[i], 0))
			w->err = 2;	/* full, or not zeroed */
		else
			fill(w->held[i], w->bytes[i], v);
	}
	return NULL;
}

struct kept {
	struct worker *w;
	uint64_t found;
};

static bool keep_held(void *ctx, const void *payload)
{
	struct kept *k = ctx;

	for (unsigned t = 0; t < NTHREADS; t++)
		for (unsigned i = 0; i < HELD; i++)
			if (k->w[t].held[i] == payload) {
				k->found++;
				return true;
			}
	return false;
}

static void test_threads(void **state)
{
	void *mem = aligned_alloc(4096, HEAP_BYTES);
	struct worker w[NTHREADS] = { 0 };
	pthread_t t[NTHREADS];
	struct shheap h;
	struct kept k = { w, 0 };
	uint64_t held = 0;

	(void)state;
	assert_non_null(mem);
	memset(mem, 0, HEAP_BYTES);	/* as a new file: zero */
	shheap_init(&h, mem, HEAP_BYTES);
	for (unsigned i = 0; i < NTHREADS; i++) {
		w[i].h = &h;
		w[i].id = i;
		assert_int_equal(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (unsigned i = 0; i < NTHREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(w[i].err, 0);
		for (unsigned j = 0; j < HELD; j++)
			held += w[i].held[j] != NULL;
	}
	/* every block below the bump pointer readable; the held ones kept */
	assert_true(shheap_sweep(&h, keep_held, &k) > 0 || !held);
	assert_int_equal(k.found, held);
	for (unsigned i = 0; i < NTHREADS; i++)
		for (unsigned j = 0; j < HELD; j++)
			if (w[i].held[j])
				assert_true(shheap_is_block(&h, w[i].held[j]));
	/* and the heap goes on from the swept lists */
	for (unsigned i = 0; i < NTHREADS; i++)
		for (unsigned j = 0; j < HELD; j++)
			shheap_free(&h, w[i].held[j]);
	assert_int_equal(HKV_LOAD(&h.used), 0);
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
