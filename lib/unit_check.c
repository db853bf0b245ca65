// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * unit_check.c - hkv_check() of the residency state: units against the
 * in_unit page bits, and the unit, pin, evictable and LRU counts. Walks
 * every unit and every page on purpose: for tests and fuzzing only.
 */
#include "res.h"

/*
 * The check takes each unit's pages away from the in_unit bitmaps (each must
 * be allocated and still marked: a page in two units fails there), then
 * requires the bitmaps to be empty (a marked page in no unit fails), then
 * puts back exactly what it took. O(pages + units); all locks held.
 */
static bool take_unit(struct hkv_pool *pool, const struct res_unit *u, bool take)
{
	unsigned i, li;

	for (i = 0; i < u->n; i++) {
		for_each_piece(pool, &u->ext[i], p, len, li) {
			struct xindex *x = &pool->lanes[li].xi;

			if (take && (!xi_test_range(x->in_unit, p - x->base, len, true) ||
				     !xi_test_range(x->allocated, p - x->base, len, true)))
				goto give_back;
		}
		unit_mark_extent(pool, &u->ext[i], !take);
	}
	return true;

give_back:
	while (i--)
		unit_mark_extent(pool, &u->ext[i], true);
	return false;
}

/* take (or give back) the first @max units of the hash and the parked
 * list; returns how many were taken, *all whether that was every unit */
static uint64_t take_units(struct hkv_pool *pool, uint64_t max, bool take, bool *all)
{
	struct hkv_res *r = pool->res;
	uint64_t done = 0;

	*all = false;
	for (uint64_t b = 0; b <= r->nbuckets; b++) {
		struct res_unit *u = b < r->nbuckets ? r->bucket[b] : r->parked;

		for (; u; u = u->hnext, done++)
			if (done == max || !take_unit(pool, u, take))
				return done;
	}
	*all = true;
	return done;
}

#define UCHECK(cond, ...)	HKV_CHECK(cond, __VA_ARGS__)

/* unit counters and LRU lists agree with the hash */
static int check_counts(struct hkv_pool *pool)
{
	struct hkv_res *r = pool->res;
	uint64_t units = 0, pages = 0, pinned = 0, pinned_pages = 0, parked = 0, listed = 0;

	for (uint64_t b = 0; b < r->nbuckets; b++) {
		for (const struct res_unit *u = r->bucket[b]; u; u = u->hnext) {
			UCHECK(unit_find(r, u->id) == u, "unit %llu is filed twice",
			       (unsigned long long)u->id);
			units++;
			pages += u->npages;
			pinned += !!u->pins;
			pinned_pages += u->pins ? u->npages : 0;
		}
	}
	for (const struct res_unit *u = r->parked; u; u = u->hnext)
		parked += u->npages;
	for (unsigned i = 0; i < pool->nlanes; i++) {
		uint64_t evictable = 0;

		for (const struct res_unit *u = r->lru[i].head; u; u = u->next, listed++) {
			UCHECK(u->home == i && unit_find(r, u->id) == u &&
			       (u->next ? u->next->prev == u : r->lru[i].tail == u),
			       "lane %u: LRU list is broken at unit %llu", i,
			       (unsigned long long)u->id);
			evictable += u->pins ? 0 : u->home_pages;
		}
		UCHECK(evictable == r->evictable[i], "lane %u: %llu evictable pages counted, %llu found",
		       i, (unsigned long long)r->evictable[i], (unsigned long long)evictable);
	}
	UCHECK(units == r->nunits && listed == units && pages == r->unit_pages &&
	       pinned == r->pinned_units && pinned_pages == r->pinned_pages &&
	       parked == r->parked_pages, "unit counters disagree with the units");
	return 0;
}

/**
 * unit_check_units() - every in_unit page belongs to exactly one unit
 * @pool: the pool (residency lock and every lane lock held)
 *
 * Return: 0, or -EUCLEAN (logged).
 */
int unit_check_units(struct hkv_pool *pool)
{
	int err = check_counts(pool);
	uint64_t taken;
	bool all;

	if (err)
		return err;
	/* the in_unit bits are taken away and put back: a thread reading them
	 * without the lock (lane_defer_free()) must not trust them meanwhile */
	pool_bits_unsettle(pool);
	taken = take_units(pool, UINT64_MAX, true, &all);
	if (!all) {
		hkv_log(HKV_LOG_ERR, "hkv_check: a page is in two units, or a unit page is "
			"not marked or not allocated");
		err = -EUCLEAN;
	}
	for (unsigned i = 0; i < pool->nlanes && !err; i++) {
		const struct xindex *x = &pool->lanes[i].xi;

		if (!xi_test_range(x->in_unit, 0, x->npages, false)) {
			hkv_log(HKV_LOG_ERR, "hkv_check: lane %u: pages marked in a unit that "
				"no unit holds", i);
			err = -EUCLEAN;
		}
	}
	take_units(pool, taken, false, &all);
	pool_bits_settle(pool);
	return err;
}

/**
 * unit_check() - hkv_check() of the residency state
 * @pool: the pool
 *
 * Return: 0, -EUCLEAN, or -EDEADLK / -ECHILD (see res_lock()).
 */
int unit_check(struct hkv_pool *pool)
{
	int err = res_lock(pool);

	if (err)
		return err;
	lanes_lock(pool, 0, pool->nlanes - 1);
	err = unit_check_units(pool);
	lanes_unlock(pool, 0, pool->nlanes - 1);
	res_unlock(pool);
	return err;
}
