/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hkv_test_pool.h - the pool helpers every suite needs: create a pool that
 * must be created, and read its statistics that must be readable (each
 * fails the running cmocka test otherwise).
 */
#ifndef HKV_TEST_POOL_H
#define HKV_TEST_POOL_H

#include <stdint.h>

#include "hugekv.h"

/* hkv_pool_create(o), which must return 0 */
struct hkv_pool *tp_pool(const struct hkv_pool_opts *o);
/* an index-only pool of npages in nlanes lanes, default options otherwise */
struct hkv_pool *tp_index_pool(uint64_t npages, unsigned nlanes);
/* hkv_stats(p), which must return 0 */
struct hkv_stats tp_stats(const struct hkv_pool *p);

#endif
