// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_fork.c - a pool does not survive fork(): its arena is MADV_DONTFORK,
 * so in the child every call on the inherited pool answers -ECHILD (NULL
 * from hkv_page_ptr, 0 from hkv_available) instead of handing out pages
 * that are not there, even with the pool's locks held at fork time;
 * hkv_pool_destroy() frees the bookkeeping and leaves the child's own
 * mappings in the old arena range alone; new pools in the child work; the
 * parent's pool is unaffected. Real fork(), real memory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "hkv_test_mem.h"
#include "res.h"
#include "hkv_test_pool.h"

struct forked {
	struct hkv_pool *mem, *idx;
	struct hkv_extent held;		/* allocated before the fork, unit 1 */
	char *page0;			/* the parent's address of page 0 */
	uint64_t npages;
};

static struct hkv_pool *mkpool(uint64_t page_bytes, int backing)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 64, .page_bytes = page_bytes,
				   .backing = backing, .nlanes = 2, .prefault_threads = 1 };

	return tp_pool(&o);
}

/* every call on an inherited pool: -ECHILD; returns the failing step */
static int refused(struct hkv_pool *p, const struct hkv_extent *held)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	uint64_t count[2] = { 1, 1 }, n;
	struct hkv_extent e[4], r;
	struct hkv_region reg;
	const uint64_t *slots;

	if (hkv_alloc(p, 1, HKV_LANE_ANY, 0, e, 4) != -ECHILD)
		return 1;
	if (hkv_alloc(p, 1, 0, HKV_ALLOC_EVICT, e, 4) != -ECHILD)
		return 2;
	if (hkv_alloc_lanes(p, count, 0, e, 4) != -ECHILD)
		return 3;
	if (hkv_free(p, held, 1) != -ECHILD)
		return 4;
	if (hkv_page_ptr(p, 0) || hkv_available(p))
		return 5;
	if (hkv_stats(p, &st) != -ECHILD || hkv_check(p) != -ECHILD)
		return 6;
	if (hkv_unit_pin(p, 1) != -ECHILD || hkv_unit_unpin(p, 1) != -ECHILD ||
	    hkv_unit_touch(p, 1) != -ECHILD || hkv_unit_split(p, 1, 1, 2) != -ECHILD ||
	    hkv_unit_remove(p, 1, 0) != -ECHILD || hkv_unit_add(p, 3, held, 1) != -ECHILD)
		return 7;
	if (hkv_evict(p, 64) != -ECHILD)
		return 8;
	if (hkv_free_slots(p, &slots, &n) != -ECHILD)
		return 9;
	if (hkv_regions(p, &reg, 1) != -ECHILD || hkv_lane_range(p, 0, &r) != -ECHILD)
		return 10;
	if (hkv_stats_print(p, stderr, 0) != -ECHILD)
		return 11;
	return 0;
}

static int child(void *arg)
{
	struct forked *f = arg;
	struct hkv_pool *q = NULL;
	struct hkv_extent e;
	char *mine;
	int step;

	alarm(30);		/* a lock held at fork time must not hang us */
	step = refused(f->mem, &f->held);
	if (step)
		return step;
	step = refused(f->idx, &f->held);
	if (step)
		return 20 + step;
	/* the arena is not here: the child may map its own memory there ... */
	mine = mmap(f->page0, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (mine != f->page0)
		return 40;
	strcpy(mine, "child");
	/* ... and destroying the inherited pool leaves that mapping alone */
	hkv_pool_destroy(f->mem);
	hkv_pool_destroy(f->idx);
	if (strcmp(mine, "child"))
		return 41;
	/* a pool the child creates is its own */
	q = mkpool(4096, HKV_BACKING_SMALL);
	if (hkv_alloc(q, 3, HKV_LANE_ANY, 0, &e, 1) != 1)
		return 42;
	memset(hkv_page_ptr(q, e.start), 0x5a, 3 * 4096);
	if (hkv_free(q, &e, 1) || hkv_check(q))
		return 43;
	hkv_pool_destroy(q);
	return 0;
}

static void test_fork(void **state)
{
	struct forked f = { 0 };
	struct hkv_extent e;

	(void)state;
	f.mem = mkpool(4096, HKV_BACKING_SMALL);
	f.idx = mkpool(0, HKV_BACKING_AUTO);
	assert_int_equal(hkv_alloc(f.mem, 4, 0, HKV_ALLOC_CONTIG, &f.held, 1), 1);
	assert_int_equal(hkv_unit_add(f.mem, 1, &f.held, 1), 0);
	assert_int_equal(hkv_alloc(f.idx, 4, 0, HKV_ALLOC_CONTIG, &e, 1), 1);
	assert_int_equal(hkv_unit_add(f.idx, 1, &e, 1), 0);
	f.page0 = hkv_page_ptr(f.mem, 0);
	memset(f.page0, 1, 64 * 4096);
	/* locks held at fork time, as another thread might hold them (in the
	 * library's order: residency, then lanes) */
	pthread_mutex_lock(&f.mem->res->lock);
	lane_lock(&f.mem->lanes[0]);
	tm_run_in_child(child, &f);
	lane_unlock(&f.mem->lanes[0]);
	pthread_mutex_unlock(&f.mem->res->lock);
	/* the parent's pools are untouched and work */
	assert_int_equal(hkv_alloc(f.mem, 4, 1, 0, &e, 1), 1);
	memset(hkv_page_ptr(f.mem, e.start), 2, 4 * 4096);
	assert_int_equal(hkv_free(f.mem, &e, 1), 0);
	assert_int_equal(hkv_unit_remove(f.mem, 1, HKV_UNIT_FREE), 0);
	assert_int_equal(hkv_available(f.mem), 64);
	assert_int_equal(hkv_check(f.mem), 0);
	assert_int_equal(hkv_check(f.idx), 0);
	hkv_pool_destroy(f.mem);
	hkv_pool_destroy(f.idx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fork),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
