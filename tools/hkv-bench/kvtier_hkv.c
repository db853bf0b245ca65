// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kvtier_hkv.c - hugekv at both tiers of the engine model: L1 an
 * index-only pool (the GPU page index), L2 the pool that holds the host
 * bytes (t->mem, on hugepages). Every allocation asks HKV_ALLOC_EVICT: the
 * pool keeps its planned free room (watermarks) by evicting cold unpinned
 * units inside hkv_alloc; a block is one unit, pins are the request's.
 */
#include <errno.h>
#include <stdlib.h>

#include "kvmodel.h"

static void hk_evicted(void *ctx, uint64_t unit, const struct hkv_extent *ext, unsigned n)
{
	(void)ext;
	(void)n;
	kvtier_victim(ctx, (uint32_t)unit);
}

static int hk_setup(struct kvtier *t, struct hkv_pool *pool)
{
	t->st = pool;
	hkv_set_evict_fn(pool, hk_evicted, t);
	return 0;
}

static int hk_create_l1(struct kvtier *t)
{
	struct hkv_pool_opts o = {
		.sz = sizeof(o), .npages = t->npages, .backing = HKV_BACKING_NONE,
		.numa_node = -1, .nlanes = 1, .free_room_low = t->room_low,
		.free_room_high = t->room_high, .label = "L1 GPU page index",
	};
	struct hkv_pool *pool;
	int err = hkv_pool_create(&o, &pool);

	return err ? err : hk_setup(t, pool);
}

/* L2: the model made the memory pool (t->mem) with the watermarks */
static int hk_create_l2(struct kvtier *t)
{
	return t->mem ? hk_setup(t, t->mem) : -EINVAL;
}

static void hk_destroy_l1(struct kvtier *t)
{
	hkv_pool_destroy(t->st);
}

static void hk_destroy_l2(struct kvtier *t)
{
	(void)t;		/* the model destroys t->mem */
}

static int hk_alloc(struct kvtier *t, uint32_t npages, struct hkv_extent *ext, unsigned max)
{
	return hkv_alloc(t->st, npages, 0, HKV_ALLOC_EVICT, ext, max);
}

static int hk_add(struct kvtier *t, uint32_t unit, const struct hkv_extent *ext, unsigned n)
{
	return hkv_unit_add(t->st, unit, ext, n);
}

#define HK_EACH(fn)							\
static int hk_##fn(struct kvtier *t, const uint32_t *u, unsigned n)	\
{									\
	for (unsigned i = 0; i < n; i++) {				\
		int err = hkv_unit_##fn(t->st, u[i]);			\
									\
		if (err)						\
			return err;					\
	}								\
	return 0;							\
}
HK_EACH(pin)
HK_EACH(unpin)
HK_EACH(touch)

static int hk_free(struct kvtier *t, const struct hkv_extent *ext, unsigned n)
{
	return hkv_free(t->st, ext, n);
}

const struct kvtier_ops kv_hugekv_l1 = {
	.name = "hugekv index-only pool, watermarks",
	.create = hk_create_l1, .destroy = hk_destroy_l1, .alloc = hk_alloc, .add = hk_add,
	.pin = hk_pin, .unpin = hk_unpin, .touch = hk_touch, .free = hk_free,
};

const struct kvtier_ops kv_hugekv_l2 = {
	.name = "hugekv hugepage pool, watermarks",
	.create = hk_create_l2, .destroy = hk_destroy_l2, .alloc = hk_alloc, .add = hk_add,
	.pin = hk_pin, .unpin = hk_unpin, .touch = hk_touch, .free = hk_free,
};
