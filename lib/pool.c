// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pool.c - the top layer: pool life cycle (create: options from opts.c,
 * arena, lanes, residency, a named pool's files from named.c, the stats
 * page; attach; destroy) and the single-lane entry points: hkv_alloc(),
 * the lane range, free pages, page addresses and regions. Calls that span
 * lanes are in multi.c.
 */
#include "lane_one.h"

static uint64_t pool_ids;

/* a new pool's id (an attached handle's too) */
static uint64_t pool_next_id(void)
{
	return __atomic_add_fetch(&pool_ids, 1, __ATOMIC_RELAXED);
}

static int lanes_create(struct hkv_pool *pool)
{
	uint64_t q = pool->npages / pool->nlanes, rem = pool->npages % pool->nlanes;
	uint64_t first = 0;
	unsigned i;
	int err;

	pool->lanes = meta_aligned(sizeof(struct lane) * pool->nlanes);
	if (!pool->lanes)
		return -ENOMEM;
	for (i = 0; i < pool->nlanes; i++) {
		uint64_t n = q + (i < rem);

		err = lane_init(&pool->lanes[i], first, n, pool->chunk_pages);
		if (err)
			goto undo_lanes;
		first += n;
	}
	return 0;

undo_lanes:
	while (i--)
		lane_fini(&pool->lanes[i]);
	meta_release(pool->lanes);
	pool->lanes = NULL;
	return err;
}

static void lanes_destroy(struct hkv_pool *pool)
{
	unsigned i;

	/* lane_fini() frees memory only: a fork() child may do it too, though
	 * it may see a lock held */
	for (i = 0; i < pool->nlanes; i++)
		lane_fini(&pool->lanes[i]);
	meta_release(pool->lanes);
}

/**
 * pool_build() - the lanes and the residency state of a new pool
 * @pool: the pool, its sizes set (and its arena, for a memory pool)
 *
 * Return: 0, or -errno with nothing left.
 */
static int pool_build(struct hkv_pool *pool)
{
	int err = lanes_create(pool);

	if (err)
		return err;
	err = res_create(pool);
	if (err)
		lanes_destroy(pool);
	return err;
}

HKV_API int hkv_pool_create(const struct hkv_pool_opts *opts, struct hkv_pool **out)
{
	struct hkv_pool *pool;
	size_t label_len;
	int err;

	if (!out)
		return -EINVAL;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	err = opts_effective(opts, &pool->opts);
	if (err)
		goto free_pool;
	/* the pool's own copy: the caller's may go (opts.label points here);
	 * malloc, not strdup, whose allocation an interposed malloc misses */
	label_len = pool->opts.label ? strlen(pool->opts.label) : 0;	/* < HKV_LABEL_MAX */
	pool->label = malloc(label_len + 1);
	err = pool->label ? 0 : -ENOMEM;
	if (err)
		goto free_pool;
	memcpy(pool->label, label_len ? pool->opts.label : "", label_len + 1);
	pool->opts.label = pool->label[0] ? pool->label : NULL;
	pool->id = pool_next_id();
	pool->fork_gen = fork_generation();
	pool->lane_bias = lane_bias_setup();
	pool->lane_defer = env_get()->lane_defer != 0;
	lane_wait_setup();
	pool->npages = pool->opts.npages;
	pool->page_bytes = pool->opts.page_bytes;
	pool->nlanes = pool->opts.nlanes;
	pool->chunk_pages = pool->page_bytes ? pool->opts.chunk_bytes / pool->page_bytes : 0;
	/* boundaries sit at multiples of the chunk: none inside the pool, none at all */
	if (pool->chunk_pages >= pool->npages)
		pool->chunk_pages = 0;
	if (pool->opts.name) {		/* built in its files (named.c) */
		struct named_create_ctx *c;

		err = named_create(pool, &c);
		if (err)
			goto free_pool;
		err = named_create_finish(pool, c, pool_build(pool));
		if (err)
			goto free_pool;
		statpage_start(pool);	/* this process's page of the pool */
		*out = pool;
		return 0;
	}
	if (pool->page_bytes) {
		err = arena_create(pool, &pool->arena);
		if (err)
			goto free_pool;
	}
	err = pool_build(pool);
	if (err)
		goto destroy_arena;
	pthread_mutex_init(&pool->slots_lock, NULL);
	statpage_start(pool);
	*out = pool;
	return 0;

destroy_arena:
	if (pool->arena)
		arena_destroy(pool->arena);
free_pool:
	free(pool->label);
	free(pool);
	return err;
}

HKV_API int hkv_pool_attach(const char *name, unsigned flags, struct hkv_pool **out)
{
	struct hkv_pool *pool;
	int err;

	if (!out || flags || !named_name_ok(name))
		return -EINVAL;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->id = pool_next_id();
	pool->fork_gen = fork_generation();
	err = named_attach(pool, name);
	if (err) {
		free(pool);
		return err;
	}
	statpage_start(pool);	/* this process's page of the pool */
	*out = pool;
	return 0;
}

/* In a child of the creating process the arena is not there (DONTFORK) and
 * its address range may hold the child's own mappings: only the
 * bookkeeping is freed. From the pool's own evict callback it is refused. */
HKV_API void hkv_pool_destroy(struct hkv_pool *pool)
{
	if (!pool)
		return;
	if (res_in_callback(pool)) {	/* the eviction still uses the pool */
		hkv_log(HKV_LOG_ERR, "pool %llu: hkv_pool_destroy() from its own evict "
			"callback refused", (unsigned long long)pool->id);
		return;
	}
	statpage_stop(pool);	/* its thread reads the pool */
	if (pool->named) {		/* the pool stays: this process detaches */
		free(pool->label);
		pool->label = NULL;
		named_detach(pool);
		return;
	}
	res_destroy(pool);
	unit_spares_free(pool);
	compat_fini(pool);
	if (!pool_forked(pool))		/* a fork() child may see it held */
		pthread_mutex_destroy(&pool->slots_lock);
	lanes_destroy(pool);
	if (pool->arena && pool_forked(pool))
		free(pool->arena);	/* the struct only: nothing of it is mapped here */
	else if (pool->arena)
		arena_destroy(pool->arena);
	free(pool->label);
	free(pool);
}

HKV_API uint64_t hkv_pool_id(const struct hkv_pool *pool)
{
	return pool ? pool->id : 0;
}

/* hkv_alloc() with HKV_ALLOC_EVICT or HKV_LANE_ANY: *used receives the lane
 * the alloc probe names */
static __attribute__((noinline)) int alloc_other(struct hkv_pool *pool, uint64_t npages,
						 unsigned lane, unsigned flags,
						 struct hkv_extent *ext, unsigned max_ext,
						 unsigned *used)
{
	struct lane_call c = { .n = npages, .flags = flags, .ext = ext, .max_ext = max_ext };
	int ret;

	if (flags & HKV_ALLOC_EVICT) {
		ret = room_make(pool, lane, npages, flags, max_ext);
		if (ret)
			return ret;
	}
	if (lane == HKV_LANE_ANY && pool->nlanes == 1)
		lane = *used = 0;	/* one lane: no lane choice to make */
	if (lane == HKV_LANE_ANY)
		return multi_alloc_any(pool, npages, flags, ext, max_ext, used);
	return lane_call(pool, &pool->lanes[lane], lane_alloc_fn, &c);
}

HKV_API int hkv_alloc(struct hkv_pool *pool, uint64_t npages, unsigned lane,
		      unsigned flags, struct hkv_extent *ext, unsigned max_ext)
{
	struct lane_call c;
	int ret;

	if (unlikely(!pool || !npages || !ext || (flags & ~(HKV_ALLOC_CONTIG | HKV_ALLOC_EVICT)) ||
		     (lane >= pool->nlanes && lane != HKV_LANE_ANY))) {
		ret = -EINVAL;
		goto out;
	}
	if (unlikely(pool_forked(pool))) {
		ret = -ECHILD;
		goto out;
	}
	/* one lane: no choice to make, the lane's own path (room_make() still
	 * sees HKV_LANE_ANY: its watermarks are the pool's) */
	if (unlikely(lane == HKV_LANE_ANY) && pool->nlanes == 1 && !(flags & HKV_ALLOC_EVICT))
		lane = 0;
	if (unlikely((flags & HKV_ALLOC_EVICT) || lane == HKV_LANE_ANY)) {
		unsigned used = lane;

		ret = alloc_other(pool, npages, lane, flags, ext, max_ext, &used);
		lane = used;
		goto out;
	}
	/* only what lane_call_slow() reads: the arguments (c->ext set tells
	 * an allocation, and c->frees unset); it writes the rest before any
	 * use */
	c.n = npages;
	c.ext = ext;
	c.flags = flags;
	c.max_ext = max_ext;
	c.frees = false;
	ret = lane_call(pool, &pool->lanes[lane], lane_alloc_one, &c);
	/* the arguments from c, which holds them anyway: none kept in a
	 * register or a spill across the call */
	if (HKV_PROBE_ON(alloc))
		hkv_probe_alloc(pool->id, (int)lane, c.n, ret,
				ret > 0 ? c.ext[0].start : 0, ret > 0 ? c.ext[0].len : 0);
	return ret;
out:
	if (HKV_PROBE_ON(alloc))	/* arguments cost loads: only when traced */
		hkv_probe_alloc(pool ? pool->id : 0, (int)lane, npages, ret,
				ret > 0 ? ext[0].start : 0, ret > 0 ? ext[0].len : 0);
	return ret;
}

HKV_API int hkv_lane_range(const struct hkv_pool *pool, unsigned lane, struct hkv_extent *out)
{
	if (!pool || !out || lane >= pool->nlanes)
		return -EINVAL;
	if (pool_forked(pool))
		return -ECHILD;
	out->start = pool->lanes[lane].first;
	out->len = pool->lanes[lane].npages;
	return 0;
}

HKV_API uint64_t hkv_available(const struct hkv_pool *pool)
{
	if (!pool || pool_forked(pool))
		return 0;
	return pool_free_pages(pool);
}

HKV_API void *hkv_page_ptr(const struct hkv_pool *pool, uint64_t page)
{
	if (!pool || !pool->base || page >= pool->npages || pool_forked(pool))
		return NULL;
	return pool->base + page * pool->page_bytes;
}

HKV_API int hkv_regions(const struct hkv_pool *pool, struct hkv_region *r, unsigned max)
{
	if (!pool || (!r && max))
		return -EINVAL;
	if (pool_forked(pool))
		return -ECHILD;
	return pool->arena ? arena_regions(pool->arena, r, max) : 0;
}
