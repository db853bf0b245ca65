// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * test_named_proc.c - one named pool, many real processes:
 *
 * - churn: N processes allocate (own lane and HKV_LANE_ANY), free, make,
 *   pin, split and remove units at once; each page carries an owner word
 *   that a process claims with a compare-and-swap from 0 when it gets the
 *   page and gives back before it frees it: a page handed out twice fails
 *   the swap; at the end every page is free again (none lost) and
 *   hkv_check() is clean.
 * - a holder killed inside the lock: a child takes the pool's lock, tears
 *   the indexes and is killed; the next caller rebuilds, units and their
 *   bytes survive, the child's pages come back, counted.
 * - a lane's holder killed inside its lock: the other lanes go on, the
 *   lane is repaired (alone, or with the pool), its pages come back.
 * - the kill fuzzer: hundreds of children killed with SIGKILL at random
 *   points of a loop of every call (detach and attach too); after each
 *   kill: hkv_check() clean,
 *   free + in units + held by this (live) process = all pages, every
 *   unit's bytes intact; one child at a time, and three at once (a dead
 *   one's locks and biased lanes met by the living). HKV_KILLS sets the number of kills
 *   (default 150 each).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "hkv_test_named.h"
#include "named.h"
#include "res.h"

#define PG	4096
#define MAGIC	0x6b766b766b766b76ull

static int setup(void **state)
{
	(void)state;
	return tn_dir_setup("hkv-nproc");
}

static int teardown(void **state)
{
	(void)state;
	return tn_dir_teardown();
}

static struct hkv_pool *mk(const char *name, uint64_t npages, unsigned nlanes, uint64_t chunk)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = npages, .page_bytes = PG,
				   .nlanes = nlanes, .backing = HKV_BACKING_SMALL,
				   .chunk_bytes = chunk * PG, .name = name };
	struct hkv_pool *p = NULL;

	assert_int_equal(hkv_pool_create(&o, &p), 0);
	return p;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- churn --------------------------------------------------------------- */

#define NPROC		4
#define CHURN_OPS	20000
#define HELD_MAX	48

struct held {
	struct hkv_extent e[4];
	int n;
	uint64_t unit;		/* 0: plain allocation */
};

static uint64_t *word(struct hkv_pool *p, uint64_t page)
{
	return hkv_page_ptr(p, page);
}

/* claim (0 -> me) or give back (me -> 0) every page's owner word */
static int own(struct hkv_pool *p, const struct hkv_extent *e, int n, uint64_t me, bool claim)
{
	for (int i = 0; i < n; i++)
		for (uint64_t pg = e[i].start; pg < e[i].start + e[i].len; pg++) {
			uint64_t want = claim ? 0 : me;

			if (!__atomic_compare_exchange_n(word(p, pg), &want, claim ? me : 0, false,
							 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
				return -1;
		}
	return 0;
}

static int churn_child(unsigned rank)
{
	struct hkv_pool *p = NULL;
	struct held h[HELD_MAX];
	uint64_t s = 0x9e3779b97f4a7c15ull * (rank + 1), me = getpid(), nunits = 0;
	int nh = 0, n;

	if (hkv_pool_attach("churn", 0, &p))
		return 10;
	for (int op = 0; op < CHURN_OPS; op++) {
		uint64_t r = rnd(&s);

		if (nh < HELD_MAX && (r % 3 || !nh)) {
			unsigned lane = r & 8 ? HKV_LANE_ANY : rank;

			n = hkv_alloc(p, 1 + (r >> 8) % 9, lane, 0, h[nh].e, 4);
			if (n == -ENOMEM || n == -ENOSPC)
				continue;
			if (n < 1)
				return 11;
			if (own(p, h[nh].e, n, me, true))
				return 12;	/* handed out twice */
			h[nh].n = n;
			h[nh].unit = 0;
			if (r & 16) {
				h[nh].unit = me << 32 | ++nunits;
				if (hkv_unit_add(p, h[nh].unit, h[nh].e, (unsigned)n))
					return 13;
				if ((r & 32) && (hkv_unit_pin(p, h[nh].unit) ||
						 hkv_unit_unpin(p, h[nh].unit)))
					return 14;
			}
			nh++;
		} else {
			struct held *x = &h[(r >> 8) % nh];

			if (own(p, x->e, x->n, me, false))
				return 15;
			if (x->unit ? hkv_unit_remove(p, x->unit, HKV_UNIT_FREE)
				    : hkv_free(p, x->e, (unsigned)x->n))
				return 16;
			*x = h[--nh];
		}
	}
	while (nh--) {
		if (own(p, h[nh].e, h[nh].n, me, false))
			return 17;
		if (h[nh].unit ? hkv_unit_remove(p, h[nh].unit, HKV_UNIT_FREE)
			       : hkv_free(p, h[nh].e, (unsigned)h[nh].n))
			return 18;
	}
	hkv_pool_destroy(p);
	return 0;
}

static void test_churn(void **state)
{
	struct hkv_pool *p = mk("churn", 4096, NPROC, 0);
	struct hkv_stats st = { .sz = sizeof(st) };
	pid_t pid[NPROC];
	int status;

	(void)state;
	for (unsigned i = 0; i < NPROC; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			_exit(churn_child(i));
		assert_true(pid[i] > 0);
	}
	for (unsigned i = 0; i < NPROC; i++) {
		assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(hkv_check(p), 0);
	assert_int_equal(hkv_available(p), 4096);
	for (uint64_t pg = 0; pg < 4096; pg++)
		assert_int_equal(*word(p, pg), 0);
	assert_int_equal(hkv_stats(p, &st), 0);
	assert_int_equal(st.units, 0);
	assert_true(st.allocs >= NPROC * CHURN_OPS / 2);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("churn"), 0);
}

/* ---- a holder killed inside the lock -------------------------------------- */

static void fill_unit(struct hkv_pool *p, const struct hkv_extent *e, int n)
{
	for (int i = 0; i < n; i++)
		for (uint64_t pg = e[i].start; pg < e[i].start + e[i].len; pg++)
			*word(p, pg) = MAGIC ^ pg;
}

static int units_intact(struct hkv_pool *p, uint64_t *pages)
{
	uint64_t ids[512];
	struct hkv_extent e[16];
	int64_t n = hkv_unit_list(p, ids, 512);

	*pages = 0;
	if (n < 0 || n > 512)
		return -1;
	for (int64_t i = 0; i < n; i++) {
		int k = hkv_unit_extents(p, ids[i], e, 16);

		if (k < 1 || k > 16)
			return -2;
		for (int j = 0; j < k; j++)
			for (uint64_t pg = e[j].start; pg < e[j].start + e[j].len; pg++, (*pages)++)
				if (*word(p, pg) != (MAGIC ^ pg))
					return -3;
	}
	return 0;
}

static int torn_child(void *arg)
{
	struct hkv_pool *p = NULL;
	struct hkv_extent e[4];
	struct named_hdr *h;

	(void)arg;
	if (hkv_pool_attach("torn", 0, &p))
		return 1;
	if (hkv_alloc(p, 5, 0, 0, e, 4) != 1)	/* held outside units: comes back */
		return 2;
	if (hkv_alloc(p, 7, 1, 0, e, 4) != 1)
		return 3;
	fill_unit(p, e, 1);
	if (hkv_unit_add(p, 77, e, 1) || hkv_unit_pin(p, 77) || hkv_unit_pin(p, 77))
		return 4;
	h = p->named->hdr;
	named_lock(h);
	/* a call killed half-way: counts, an extent and the LRU torn */
	h->lanes[0].xi.free_pages += 3;
	h->lanes[1].xi.largest = 1;
	h->res->lru[1].head = NULL;
	h->res->nunits = 9;
	raise(SIGKILL);
	return 5;
}

static void test_killed_holder(void **state)
{
	struct hkv_pool *p = mk("torn", 256, 2, 0);
	struct hkv_named_info info = { .sz = sizeof(info) };
	struct hkv_stats st = { .sz = sizeof(st) };
	struct hkv_extent e[4], mine;
	uint64_t pages;
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(hkv_alloc(p, 3, 1, 0, &mine, 1), 1);	/* this process's */
	pid = fork();
	if (pid == 0)
		_exit(torn_child(NULL));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* the next call finds the lock's holder dead */
	assert_int_equal(hkv_check(p), 0);
	assert_int_equal(hkv_pool_info(p, &info), 0);
	assert_int_equal(info.recoveries, 1);
	assert_int_equal(info.reclaimed_pages, 5);
	assert_int_equal(info.dropped_pins, 2);
	assert_int_equal(info.nattached, 1);
	assert_int_equal(hkv_unit_extents(p, 77, e, 4), 1);
	assert_int_equal(e[0].len, 7);
	assert_int_equal(units_intact(p, &pages), 0);
	assert_int_equal(pages, 7);
	assert_int_equal(hkv_available(p), 256 - 7 - 3);
	assert_int_equal(hkv_stats(p, &st), 0);
	assert_int_equal(st.units, 1);
	assert_int_equal(st.pinned_units, 0);
	/* the pool works on: this process's pages still its own, the unit evictable */
	assert_int_equal(hkv_free(p, &mine, 1), 0);
	assert_int_equal(hkv_evict(p, 256), 7);
	assert_int_equal(hkv_available(p), 256);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("torn"), 0);
}

/* ---- a lane's holder killed inside its lock ----------------------------------- */

/* the lane biased to this thread: LANE_BIAS_AFTER calls of it alone */
static int bias_lane(struct hkv_pool *p, unsigned lane)
{
	struct hkv_extent e;

	for (unsigned i = 0; i < LANE_BIAS_AFTER + 8; i++)
		if (hkv_alloc(p, 1, lane, 0, &e, 1) != 1 || hkv_free(p, &e, 1))
			return -1;
	return HKV_LOAD(&p->lanes[lane].bias) ? 0 : 1;
}

/* biased: inside a call without the lock word (busy set) */
static int lane_torn_child(void *arg)
{
	struct hkv_pool *p = NULL;
	struct hkv_extent e[4];
	struct lane *l;

	if (hkv_pool_attach("lanetorn", 0, &p))
		return 1;
	if (hkv_alloc(p, 6, 1, 0, e, 4) != 1)	/* held outside units: comes back */
		return 2;
	l = &p->lanes[1];
	if (arg && bias_lane(p, 1))
		return 3;
	if (arg)
		HKV_STORE(&l->busy, 1);
	else
		lane_lock(l);
	/* an allocation killed half-way: counts and an extent torn */
	l->xi.free_pages -= 4;
	l->xi.largest = 1;
	raise(SIGKILL);
	return 5;
}

/*
 * A process killed while it holds one lane's lock (and not the pool's):
 * the others go on. first: the first call after the kill: 0 an allocation
 * on that lane (the lane is repaired alone, the pool rebuilt at the next
 * pool lock), 1 hkv_check() (every lock: the pool rebuilt), 2 a unit's
 * removal on that lane (the pool lock held: the lane repaired alone).
 */
static void lane_killed(uintptr_t first, bool biased)
{
	struct hkv_pool *p = mk("lanetorn", 256, 2, 0);
	struct hkv_named_info info = { .sz = sizeof(info) };
	struct hkv_extent e[4], mine, other, u1;
	uint64_t pages;
	int status;
	pid_t pid;

	assert_int_equal(hkv_alloc(p, 3, 1, 0, &mine, 1), 1);	/* this process's */
	assert_int_equal(hkv_alloc(p, 5, 0, 0, &other, 1), 1);
	assert_int_equal(hkv_alloc(p, 7, 1, 0, &u1, 1), 1);
	fill_unit(p, &u1, 1);
	assert_int_equal(hkv_unit_add(p, 71, &u1, 1), 0);
	assert_int_equal(hkv_alloc(p, 2, 1, 0, e, 1), 1);
	fill_unit(p, e, 1);
	assert_int_equal(hkv_unit_add(p, 72, e, 1), 0);
	pid = fork();
	if (pid == 0)
		_exit(lane_torn_child((void *)(uintptr_t)biased));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* the other lane was never blocked */
	assert_int_equal(hkv_free(p, &other, 1), 0);
	if (first == 0) {
		assert_int_equal(hkv_alloc(p, 4, 1, 0, e, 4), 1);
		assert_int_equal(hkv_free(p, e, 1), 0);
	} else if (first == 2) {
		assert_int_equal(hkv_unit_remove(p, 72, HKV_UNIT_FREE), 0);
	}
	assert_int_equal(hkv_check(p), 0);
	assert_int_equal(hkv_pool_info(p, &info), 0);
	assert_true(info.recoveries >= 1);
	assert_int_equal(info.reclaimed_pages, 6);
	assert_int_equal(info.nattached, 1);
	assert_int_equal(units_intact(p, &pages), 0);
	assert_int_equal(pages, first == 2 ? 7 : 9);
	assert_int_equal(hkv_available(p), 256 - pages - 3);
	/* the pool works on */
	assert_int_equal(hkv_free(p, &mine, 1), 0);
	assert_int_equal(hkv_evict(p, 256), (int64_t)pages);
	assert_int_equal(hkv_available(p), 256);
	assert_int_equal(hkv_check(p), 0);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("lanetorn"), 0);
}

static void test_lane_killed_alloc(void **state)
{
	(void)state;
	lane_killed(0, false);
}

static void test_lane_killed_check(void **state)
{
	(void)state;
	lane_killed(1, false);
}

static void test_lane_killed_unit(void **state)
{
	(void)state;
	lane_killed(2, false);
}

/* the same three with the lane biased to the killed process, killed
 * inside a call that took no lock word */
static void test_lane_killed_biased(void **state)
{
	(void)state;
	for (uintptr_t first = 0; first < 3; first++)
		lane_killed(first, true);
}

/* ---- pins of processes that leave ------------------------------------------ */

static int pin_child(void *arg)
{
	struct hkv_pool *p = NULL;
	uintptr_t mode = (uintptr_t)arg;

	if (hkv_pool_attach("pins", 0, &p))
		return 1;
	if (mode == 0 && (hkv_unit_pin(p, 1) || hkv_unit_pin(p, 2)))
		return 2;
	if (mode == 1 && hkv_unit_unpin(p, 3))	/* the parent's pin, unpinned here */
		return 3;
	if (mode == 2) {
		hkv_pool_destroy(p);	/* detaches with its pins held */
		return 0;
	}
	_exit(0);	/* exits without unpinning */
}

static int run_child(int (*fn)(void *), void *arg)
{
	int st;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(arg));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_pins_dropped(void **state)
{
	struct hkv_pool *p = mk("pins", 64, 1, 0);
	struct hkv_named_info info = { .sz = sizeof(info) };
	struct hkv_stats st = { .sz = sizeof(st) };
	struct hkv_extent e;

	(void)state;
	for (uint64_t u = 1; u <= 3; u++) {
		assert_int_equal(hkv_alloc(p, 2, 0, 0, &e, 1), 1);
		assert_int_equal(hkv_unit_add(p, u, &e, 1), 0);
	}
	assert_int_equal(hkv_unit_pin(p, 2), 0);	/* this process's, kept */
	assert_int_equal(hkv_unit_pin(p, 3), 0);
	assert_int_equal(run_child(pin_child, (void *)0), 0);
	assert_int_equal(hkv_check(p), 0);	/* reaps the dead child */
	assert_int_equal(hkv_pool_info(p, &info), 0);
	assert_int_equal(info.dropped_pins, 2);
	assert_int_equal(hkv_stats(p, &st), 0);
	assert_int_equal(st.pinned_units, 2);
	assert_int_equal(hkv_unit_remove(p, 1, 0), 0);	/* unpinned again */
	assert_int_equal(hkv_unit_remove(p, 2, 0), -EBUSY);
	/* unpinned by another process: the pin is gone for good */
	assert_int_equal(run_child(pin_child, (void *)1), 0);
	assert_int_equal(hkv_check(p), 0);
	assert_int_equal(hkv_unit_unpin(p, 3), -EINVAL);
	/* a detach with pins held drops them too */
	assert_int_equal(hkv_unit_unpin(p, 2), 0);
	assert_int_equal(run_child(pin_child, (void *)2), 0);
	assert_int_equal(hkv_unit_split(p, 2, 1, 20), 0);
	assert_int_equal(hkv_unit_pin(p, 2), 0);
	assert_int_equal(hkv_unit_split(p, 3, 1, 30), 0);
	assert_int_equal(hkv_check(p), 0);
	assert_int_equal(hkv_stats(p, &st), 0);
	assert_int_equal(st.pinned_units, 1);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("pins"), 0);
}

/* ---- the kill fuzzer ------------------------------------------------------- */

/* every call, in a loop, until killed; a byte on ready once attached */
static void fuzz_child(uint64_t seed, int ready)
{
	struct hkv_pool *p = NULL;
	struct hkv_extent e[8];
	uint64_t s = seed | 1, ids[64];
	int n;

	if (hkv_pool_attach("fuzz", 0, &p) || write(ready, "r", 1) != 1)
		_exit(1);
	for (;;) {
		uint64_t r = rnd(&s), id = seed << 20 | (r & 0xfffff);
		int64_t nu;

		switch (r >> 40 & 7) {
		case 0:
		case 1:
			n = hkv_alloc(p, 1 + (r >> 8) % 12, r & 64 ? HKV_LANE_ANY : (r >> 4) % 3,
				      r & 128 ? HKV_ALLOC_EVICT : 0, e, 8);
			if (n > 0 && (r & 256)) {
				fill_unit(p, e, n);
				if (hkv_unit_add(p, id, e, (unsigned)n))
					hkv_free(p, e, (unsigned)n);
			} else if (n > 0 && (r & 512)) {
				hkv_free(p, e, (unsigned)n);
			}
			break;
		case 2:
			if (r & 2) {	/* every lane locked at once */
				const uint64_t *sl;
				uint64_t ns;

				hkv_free_slots(p, &sl, &ns);
			}
			nu = hkv_unit_list(p, ids, 64);
			if (nu > 0)
				hkv_unit_remove(p, ids[(r >> 8) % HKV_MIN(nu, 64)],
						r & 1 ? HKV_UNIT_FREE : 0);
			break;
		case 3:
			nu = hkv_unit_list(p, ids, 64);
			if (nu > 0 && !hkv_unit_pin(p, ids[(r >> 8) % HKV_MIN(nu, 64)]) && (r & 1))
				hkv_unit_unpin(p, ids[(r >> 8) % HKV_MIN(nu, 64)]);
			break;
		case 4:
			nu = hkv_unit_list(p, ids, 64);
			if (nu > 0)
				hkv_unit_split(p, ids[(r >> 8) % HKV_MIN(nu, 64)], 1, id ^ 0x80000);
			break;
		case 5:
			if (r & 1)	/* long enough for a bias, killed inside or not */
				bias_lane(p, (r >> 4) % 3);
			else
				hkv_evict(p, hkv_available(p) + 1 + (r >> 8) % 16);
			break;
		case 6:
			nu = hkv_unit_list(p, ids, 64);
			if (nu > 0)
				hkv_unit_touch(p, ids[(r >> 8) % HKV_MIN(nu, 64)]);
			if ((r & 15) == 0) {	/* leave (with what it holds) and come back */
				hkv_pool_destroy(p);
				if (hkv_pool_attach("fuzz", 0, &p))
					_exit(2);
			}
			break;
		default: {
			uint64_t count[3] = { r & 3, r >> 2 & 3, 1 };

			n = hkv_alloc_lanes(p, count, 0, e, 8);
			if (n > 0)
				hkv_free(p, e, (unsigned)n);
			break;
		}
		}
	}
}

/*
 * nkids children at once; each kill leaves the others running into what
 * it held (and maybe killed inside their own recovery), then the next is
 * killed, until none is left; the books are checked after each round.
 */
static void kill_fuzzer(unsigned nkids, unsigned dflt)
{
	struct hkv_pool *p = mk("fuzz", 1536, 3, 64);
	struct hkv_named_info info = { .sz = sizeof(info) };
	struct hkv_stats st = { .sz = sizeof(st) };
	const char *env = getenv("HKV_KILLS");
	unsigned kills = env ? (unsigned)atoi(env) : dflt;
	struct hkv_extent mine[4];
	uint64_t s = (uint64_t)time(NULL) | 1, pages, held = 0;
	int n, status;

	/* this live process holds pages through it all */
	n = hkv_alloc(p, 40, HKV_LANE_ANY, 0, mine, 4);
	assert_true(n >= 1);
	for (int i = 0; i < n; i++)
		held += mine[i].len;
	printf("kill fuzzer: seed %llu, %u kills\n", (unsigned long long)s, kills);
	for (unsigned k = 0; k < kills; k += nkids) {
		pid_t pid[4];

		for (unsigned i = 0; i < nkids; i++) {
			int fds[2];
			char c;

			assert_int_equal(pipe(fds), 0);
			pid[i] = fork();
			if (pid[i] == 0)
				fuzz_child(k + i + 1, fds[1]);
			assert_true(pid[i] > 0);
			close(fds[1]);
			assert_int_equal(read(fds[0], &c, 1), 1);	/* attached */
			close(fds[0]);
		}
		for (unsigned i = 0; i < nkids; i++) {	/* now the kills */
			struct timespec ts = { 0, (long)(rnd(&s) % 2000000) };

			nanosleep(&ts, NULL);
			kill(pid[i], SIGKILL);
			assert_int_equal(waitpid(pid[i], &status, 0), pid[i]);
		}
		/* recovery (if it died inside a call) and reaping, then the books */
		assert_int_equal(hkv_check(p), 0);
		assert_int_equal(hkv_stats(p, &st), 0);
		assert_int_equal(units_intact(p, &pages), 0);
		assert_int_equal(pages, st.unit_pages);
		assert_int_equal(st.free_pages + st.unit_pages + held, 1536);
	}
	assert_int_equal(hkv_pool_info(p, &info), 0);
	printf("kill fuzzer: %llu recoveries inside the lock, %llu dead slots, %llu pages "
	       "given back, %llu units kept\n", (unsigned long long)info.recoveries,
	       (unsigned long long)info.dead_slots, (unsigned long long)info.reclaimed_pages,
	       (unsigned long long)st.units);
	assert_int_equal(info.nattached, 1);
	assert_int_equal(hkv_free(p, mine, (unsigned)n), 0);
	hkv_pool_destroy(p);
	assert_int_equal(hkv_pool_unlink("fuzz"), 0);
}

static void test_kill_fuzzer(void **state)
{
	(void)state;
	kill_fuzzer(1, 150);
}

/* three children at once: locks of the dead met by the living */
static void test_kill_fuzzer_many(void **state)
{
	(void)state;
	kill_fuzzer(3, 150);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_churn),
		cmocka_unit_test(test_killed_holder),
		cmocka_unit_test(test_pins_dropped),
		cmocka_unit_test(test_lane_killed_alloc),
		cmocka_unit_test(test_lane_killed_check),
		cmocka_unit_test(test_lane_killed_unit),
		cmocka_unit_test(test_lane_killed_biased),
		cmocka_unit_test(test_kill_fuzzer),
		cmocka_unit_test(test_kill_fuzzer_many),
	};

	/*
	 * No stats-page publisher thread, even when run outside run-tests
	 * (which turns it off for every suite): these tests fork, and a thread
	 * of the parent inside malloc at the fork leaves the child's malloc
	 * lock held under ASan's allocator (GCC 12's does not take its locks
	 * around fork(), glibc's malloc does). The children then hang in their
	 * first calloc. Named pools' pages are tested in check-metrics.
	 */
	setenv("HUGEKV_STATS_INTERVAL_MS", "0", 1);
	return cmocka_run_group_tests(tests, setup, teardown);
}
