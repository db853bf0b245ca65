// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * l1l2-example.c - an engine's two pools per rank, as Kbuild-docs/core-api
 * describes them: L1 indexes the GPU's KV pages (index-only, no memory),
 * L2 holds their host copies on a hugepage arena. `make check` compiles and
 * runs this file (check-docs), so the documented example cannot drift from
 * the header.
 *
 * Build: cc l1l2-example.c -lhugekv
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hugekv.h>

#define KV_PAGE		(64 << 10)	/* bytes of one KV page (all layers) */
#define MAX_EXT		64

static unsigned char *gpu;		/* stands in for the GPU's KV buffer */

/* L2 evicted a host copy: the radix node forgets its L2 pages */
static void l2_evicted(void *ctx, uint64_t unit, const struct hkv_extent *ext, unsigned n)
{
	(void)ext;
	(void)n;
	++*(unsigned *)ctx;
	printf("L2 evicted unit %" PRIu64 "\n", unit);
}

static int make_pools(struct hkv_pool **l1, struct hkv_pool **l2)
{
	struct hkv_pool_opts o1 = {
		.sz = sizeof(o1), .npages = 384,	/* GPU KV pages */
		.page_bytes = 0,			/* index-only: L1 */
	};
	struct hkv_pool_opts o2 = {
		.sz = sizeof(o2), .npages = 512,	/* 32 MiB of host KV pages */
		.page_bytes = KV_PAGE,
		.backing = HKV_BACKING_AUTO,		/* 1G -> 2M -> THP -> 4K */
		.numa_node = -1,			/* or HUGEKV_NODE=N */
		.free_room_low = 0.10, .free_room_high = 0.25,
	};
	int err;

	err = hkv_pool_create(&o1, l1);
	if (err)
		return err;
	err = hkv_pool_create(&o2, l2);
	if (err)
		hkv_pool_destroy(*l1);
	return err;
}

/* back a unit up from L1 (GPU) to L2 (host): one copy per extent pair */
static int backup(struct hkv_pool *l2, uint64_t unit, const struct hkv_extent *g,
		  int ng, uint64_t npages)
{
	struct hkv_extent h[MAX_EXT];
	uint64_t gi = 0, hi = 0, goff = 0, hoff = 0;
	int nh;

	nh = hkv_alloc(l2, npages, HKV_LANE_ANY, HKV_ALLOC_EVICT, h, MAX_EXT);
	if (nh < 0)
		return nh;
	if (hkv_unit_add(l2, unit, h, (unsigned)nh) || hkv_unit_pin(l2, unit))
		return -EINVAL;			/* pinned: in flight, never evicted */
	while (gi < (uint64_t)ng && hi < (uint64_t)nh) {
		uint64_t run = g[gi].len - goff < h[hi].len - hoff ?
			       g[gi].len - goff : h[hi].len - hoff;

		/* a real engine: cudaMemcpyAsync(dst, src, bytes, D2H) */
		memcpy(hkv_page_ptr(l2, h[hi].start + hoff),
		       gpu + (g[gi].start + goff) * KV_PAGE, run * KV_PAGE);
		goff += run;
		hoff += run;
		if (goff == g[gi].len)
			gi++, goff = 0;
		if (hoff == h[hi].len)
			hi++, hoff = 0;
	}
	return hkv_unit_unpin(l2, unit);	/* done: evictable when cold */
}

int main(void)
{
	struct hkv_pool *l1, *l2;
	struct hkv_extent g[MAX_EXT];
	struct hkv_region r[8];
	unsigned evicted = 0;
	int err, n, nr;

	gpu = calloc(384, KV_PAGE);
	err = gpu ? make_pools(&l1, &l2) : -ENOMEM;
	if (err) {
		fprintf(stderr, "pools: %s\n", hkv_strerror(err));
		return 1;
	}
	hkv_set_evict_fn(l2, l2_evicted, &evicted);
	nr = hkv_regions(l2, r, 8);		/* register once: ibv_reg_mr() */
	for (int i = 0; i < nr && i < 8; i++)
		printf("L2 region %d: %" PRIu64 " bytes, %" PRIu64 "-byte pages, node %d\n",
		       i, r[i].bytes, r[i].hugepage_bytes, r[i].node);

	/* requests: each prefix becomes a radix node = a unit in both pools */
	for (uint64_t unit = 1; unit <= 12; unit++) {
		n = hkv_alloc(l1, 48, HKV_LANE_ANY, 0, g, MAX_EXT);
		if (n < 0) {	/* GPU full: drop the coldest GPU copies */
			hkv_evict(l1, hkv_available(l1) + 48);
			n = hkv_alloc(l1, 48, HKV_LANE_ANY, 0, g, MAX_EXT);
		}
		if (n < 0 || hkv_unit_add(l1, unit, g, (unsigned)n))
			return 1;
		err = backup(l2, unit, g, n, 48);
		if (err) {
			fprintf(stderr, "backup of unit %" PRIu64 ": %s\n", unit,
				hkv_strerror(err));
			return 1;
		}
	}
	printf("L1 free %" PRIu64 ", L2 free %" PRIu64 ", L2 evictions %u\n",
	       hkv_available(l1), hkv_available(l2), evicted);
	err = hkv_check(l1) || hkv_check(l2);
	hkv_pool_destroy(l2);
	hkv_pool_destroy(l1);
	free(gpu);
	return err ? 1 : 0;
}
