// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hkv_test_pool.c - see tests/hkv_test_pool.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hkv_test_pool.h"

struct hkv_pool *tp_pool(const struct hkv_pool_opts *o)
{
	struct hkv_pool *p = NULL;

	assert_int_equal(hkv_pool_create(o, &p), 0);
	assert_non_null(p);
	return p;
}

struct hkv_pool *tp_index_pool(uint64_t npages, unsigned nlanes)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = npages, .nlanes = nlanes };

	return tp_pool(&o);
}

struct hkv_stats tp_stats(const struct hkv_pool *p)
{
	struct hkv_stats st = { .sz = sizeof(st) };

	assert_int_equal(hkv_stats(p, &st), 0);
	return st;
}
