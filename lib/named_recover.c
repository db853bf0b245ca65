// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * named_recover.c - what the next caller does when a process of a named
 * pool died: inside a call (one of the pool's locks found held by it,
 * named_lock.c), or outside one (its slot found dead at an attach, a check
 * or a detach).
 *
 * What recovery trusts (each changed by single stores, in an order that a
 * kill at any instruction leaves readable): the units (the id hash: a unit
 * is linked in by one store once it is complete, unlinked by one store;
 * its extents), the per-page owner bytes (h->owner: the slot + 1 of the
 * process holding the page outside units, written under the lane's lock
 * next to the allocated bits), the process slots and the heap (shheap.c: at worst
 * a leaked block). What it rebuilds from them: every lane's free-extent
 * index (allocated = in a unit, or held by a live process; everything
 * else is free), the in_unit bits, the LRU lists (by the units' stamps),
 * the unit, pin and evictable counts. Units survive, with their bytes;
 * pages a dead process held outside units come back. A unit that no
 * longer reads right (extents out of range or overlapping another's, a
 * kill inside a split) is dropped and counted; pages are never lost.
 */
#include <stdio.h>

#include "named.h"
#include "res.h"
#include "trace.h"

#define BIT(b, p)	(((b)[(p) >> 6] >> ((p) & 63)) & 1)
#define SETBIT(b, p)	((b)[(p) >> 6] |= 1ull << ((p) & 63))

/* the lane that owns a page (lanes are near-equal blocks, pool.c) */
static unsigned lane_at(const struct named_hdr *h, uint64_t page)
{
	uint64_t q = h->npages / h->nlanes, rem = h->npages % h->nlanes, big = rem * (q + 1);

	if (page < big)
		return (unsigned)(page / (q + 1));
	return (unsigned)(rem + (page - big) / q);
}

/* a unit as recovery reads it: inside the heap, extents inside the pool,
 * its pages in no unit seen before (claim) */
static bool unit_sane(const struct named_hdr *h, const struct res_unit *u,
		      const uint64_t *claim)
{
	uint64_t pages = 0;

	if (!u->n || u->n > h->npages)
		return false;
	for (unsigned i = 0; i < u->n; i++) {
		const struct hkv_extent *e = &u->ext[i];

		if (!e->len || e->start >= h->npages || e->len > h->npages - e->start)
			return false;
		for (uint64_t p = e->start; p < e->start + e->len; p++)
			if (BIT(claim, p))
				return false;
		pages += e->len;
	}
	return pages == u->npages;
}

static int by_stamp(const void *a, const void *b)
{
	const struct res_unit *x = *(struct res_unit *const *)a, *y = *(struct res_unit *const *)b;

	return x->stamp < y->stamp ? -1 : x->stamp > y->stamp;
}

/* the units that read right, their pages claimed; the rest unlinked.
 * Returns the units (an array the caller frees), *n their number */
static struct res_unit **units_collect(struct named_hdr *h, uint64_t *claim, uint64_t *n,
				       uint64_t *dropped)
{
	struct hkv_res *r = h->res;
	struct res_unit **all = malloc((h->npages + 1) * sizeof(*all));

	*n = 0;
	if (!all)
		return NULL;
	for (uint64_t b = 0; b < r->nbuckets; b++) {
		struct res_unit **pp = &r->bucket[b];

		while (*pp) {
			struct res_unit *u = *pp;

			if (*n > h->npages || !shheap_is_block(&h->heap, u)) {
				*pp = NULL;	/* the rest of the chain is unreadable */
				(*dropped)++;
				break;
			}
			if (!unit_sane(h, u, claim)) {
				*pp = u->hnext;	/* this one only */
				(*dropped)++;
				continue;
			}
			for (unsigned i = 0; i < u->n; i++)
				for (uint64_t p = u->ext[i].start; p < u->ext[i].start + u->ext[i].len; p++)
					SETBIT(claim, p);
			all[(*n)++] = u;
			pp = &u->hnext;
		}
	}
	return all;
}

/* the residency's derived state from the units */
static void units_rebuild(struct named_hdr *h, struct res_unit **all, uint64_t n)
{
	struct hkv_res *r = h->res;

	qsort(all, n, sizeof(*all), by_stamp);
	memset(r->lru, 0, h->nlanes * sizeof(*r->lru));
	memset(r->evictable, 0, h->nlanes * sizeof(*r->evictable));
	r->nunits = n;
	r->unit_pages = r->pinned_units = r->pinned_pages = 0;
	r->parked = NULL;	/* evictions that had not freed: their pages are free */
	r->parked_pages = 0;
	for (uint64_t i = 0; i < n; i++) {
		struct res_unit *u = all[i];
		struct res_lru *l;
		const struct lane *hl;

		u->home = lane_at(h, u->ext[0].start);
		hl = &h->lanes[u->home];
		u->home_pages = 0;
		for (unsigned k = 0; k < u->n; k++) {
			uint64_t s = HKV_MAX(u->ext[k].start, hl->first);
			uint64_t e = HKV_MIN(u->ext[k].start + u->ext[k].len, hl->first + hl->npages);

			u->home_pages += e > s ? e - s : 0;
		}
		l = &r->lru[u->home];
		u->prev = l->tail;
		u->next = NULL;
		if (l->tail)
			l->tail->next = u;
		else
			l->head = u;
		l->tail = u;
		r->unit_pages += u->npages;
		r->clock = HKV_MAX(r->clock, u->stamp);
		if (u->pins) {
			r->pinned_units++;
			r->pinned_pages += u->npages;
		} else {
			r->evictable[u->home] += u->home_pages;
		}
	}
}

/* the blocks recovery keeps: what it trusts (sorted payload addresses) */
struct kept {
	const void **at;
	uint64_t n;
};

static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(const void *const *)a, y = (uintptr_t)*(const void *const *)b;

	return x < y ? -1 : x > y;
}

static bool kept_has(void *ctx, const void *payload)
{
	const struct kept *k = ctx;

	return bsearch(&payload, k->at, k->n, sizeof(*k->at), ptr_cmp) != NULL;
}

/*
 * Every block but the trusted ones back to the heap: the lanes' indexes
 * (rebuilt next), parked and dropped units, blocks a killed process leaked.
 * Nothing is freed through a pointer a killed process may have left stale.
 */
static int heap_sweep(struct named_hdr *h, struct res_unit **all, uint64_t nunits)
{
	struct hkv_res *r = h->res;
	const void *fixed[] = { h->owner, h->pins, h->lanes, r, r->bucket, r->lru, r->cursor,
				r->cand, r->evictable };
	struct kept k = { malloc((nunits + HKV_ARRAY_SIZE(fixed)) * sizeof(void *)), 0 };

	if (!k.at)
		return -ENOMEM;
	for (unsigned i = 0; i < HKV_ARRAY_SIZE(fixed); i++)
		k.at[k.n++] = fixed[i];
	for (uint64_t i = 0; i < nunits; i++)
		k.at[k.n++] = all[i];
	qsort(k.at, k.n, sizeof(*k.at), ptr_cmp);
	shheap_sweep(&h->heap, kept_has, &k);
	free(k.at);
	return 0;
}

/* one lane's index anew (its old one swept): pages of keep allocated, of
 * claim in a unit */
static int lane_rebuild(struct lane *l, uint64_t barrier, const uint64_t *keep,
			const uint64_t *claim, uint8_t *owner)
{
	struct xindex *x = &l->xi;
	struct hkv_extent e;
	int err;

	/* the owner records are not touched here (no owner set while the
	 * index is rebuilt): a kill midway must leave them as they were */
	err = xi_init(x, l->first, l->npages, barrier);
	if (err)
		return err;
	while (x->free_pages) {		/* everything taken, one extent a chunk */
		uint64_t n = x->largest;

		if (xi_reserve_plan(x, n, 1))
			return -ENOMEM;
		xi_take(x, n, 1, &e);
	}
	for (uint64_t p = l->first, end = l->first + l->npages; p < end;) {
		uint64_t q = p, stop = barrier ? HKV_MIN(end, (p / barrier + 1) * barrier) : end;
		bool kept = BIT(keep, p);

		while (q < stop && BIT(keep, q) == kept)
			q++;
		if (!kept) {
			err = xi_free_one(x, p, q - p);
			if (err)
				return err;
		}
		p = q;
	}
	for (uint64_t p = l->first; p < l->first + l->npages; p++)
		if (BIT(claim, p))
			xi_set_range(x->in_unit, p - l->first, 1, true);
	l->gen++;
	return xi_set_owner(x, owner);
}

/**
 * pins_apply() - every unit's pin count from the live slots' records
 * @h: the header (locked; the id hash readable)
 * @live: per slot + 1, whether its process lives (live[0] unused)
 *
 * Records of dead slots and of units that are gone are cleared.
 *
 * Return: the pins dropped.
 */
static uint64_t pins_apply(struct named_hdr *h, const uint8_t *live)
{
	struct hkv_res *r = h->res;
	uint64_t dropped = 0;

	for (uint64_t b = 0; b < r->nbuckets; b++)
		for (struct res_unit *u = r->bucket[b]; u; u = u->hnext)
			u->pins = 0;
	for (unsigned s = 0; s < HKV_NAMED_SLOTS; s++) {
		struct named_pin *t = named_slot_pins(h, s);

		for (uint32_t i = 0; i < h->pin_hw[s]; i++) {
			struct res_unit *u;

			if (!t[i].count)
				continue;
			u = live[s + 1] ? unit_find(r, t[i].unit) : NULL;
			if (u && u->pins <= UINT32_MAX - t[i].count) {
				u->pins += t[i].count;
				continue;
			}
			dropped += t[i].count;
			t[i].count = 0;
		}
		if (!live[s + 1])
			h->pin_hw[s] = 0;
	}
	return dropped;
}

/*
 * Everything derived, from what recovery trusts; slots of dead processes
 * (and gone, the slot + 1 in the mask) freed. The caller holds every lock.
 */
static int rebuild(struct named_hdr *h, uint64_t gone)
{
	uint64_t words = h->npages / 64 + 1, nunits = 0, dropped = 0, reclaimed = 0;
	uint64_t *claim = calloc(2 * words, 8), *keep = claim + words;
	uint8_t *own = malloc(h->npages), live[HKV_NAMED_SLOTS + 1] = { 0 };
	struct res_unit **all = NULL;
	int err = -ENOMEM;

	if (!claim || !own)
		goto out;
	for (unsigned i = 0; i < HKV_NAMED_SLOTS; i++)
		live[i + 1] = h->slot[i].pid && !(gone >> i & 1) && named_slot_alive(&h->slot[i]);
	all = units_collect(h, claim, &nunits, &dropped);
	if (!all)
		goto out;
	for (uint64_t p = 0; p < h->npages; p++) {
		uint8_t o = h->owner[p];

		if (o > HKV_NAMED_SLOTS || !live[o]) {
			reclaimed += o && !BIT(claim, p);
			o = 0;
		}
		own[p] = o;
		if (o || BIT(claim, p))
			SETBIT(keep, p);
	}
	err = heap_sweep(h, all, nunits);
	if (err)
		goto out;
	for (unsigned i = 0; i < h->nlanes; i++) {
		/* the chunk from the header: a killed rebuild may have left
		 * the index's own copy zeroed */
		err = lane_rebuild(&h->lanes[i], h->chunk_pages, keep, claim, h->owner);
		if (err)
			goto out;
	}
	memcpy(h->owner, own, h->npages);
	h->dropped_pins += pins_apply(h, live);
	units_rebuild(h, all, nunits);
	for (unsigned i = 0; i < HKV_NAMED_SLOTS; i++) {
		if (!h->slot[i].pid || live[i + 1])
			continue;
		hkv_log(gone >> i & 1 ? HKV_LOG_INFO : HKV_LOG_WARN,
			"named pool %s: process %d %s; slot %u freed", h->name, h->slot[i].pid,
			gone >> i & 1 ? "detached" : "died attached", i);
		HKV_STORE(&h->slot[i].pid, 0);
		if (!(gone >> i & 1))
			h->dead_slots++;
	}
	h->reclaimed_pages += reclaimed;
	h->dropped_units += dropped;
	if (reclaimed || dropped)
		hkv_log(HKV_LOG_WARN, "named pool %s: %llu pages held by processes that left or died given back, "
			"%llu units unreadable and dropped, %llu units kept", h->name,
			(unsigned long long)reclaimed, (unsigned long long)dropped,
			(unsigned long long)nunits);
	err = 0;
out:
	if (err)
		hkv_log(HKV_LOG_ERR, "named pool %s: rebuild failed: %s", h->name,
			strerror(-err));
	free(all);
	free(own);
	free(claim);
	return err;
}

/*
 * The pages of the slots in mask, with the index consistent (their holders
 * left or died outside the lock): those in units are the units' alone now
 * (owner byte cleared). Returns true if that was all they held; false if
 * they held pages outside units (a rebuild gives them back).
 */
static bool slots_settle(struct named_hdr *h, uint64_t mask)
{
	bool outside = false;

	for (unsigned li = 0; li < h->nlanes; li++) {
		struct xindex *x = &h->lanes[li].xi;
		uint8_t *owner = xi_owner(x);

		for (uint32_t p = 0; p < x->npages; p++) {
			uint8_t o = owner[p];

			if (!o || o > HKV_NAMED_SLOTS || !(mask >> (o - 1) & 1))
				continue;
			if ((x->in_unit[XI_WORD(p)] >> (p & 63)) & 1)
				owner[p] = 0;
			else
				outside = true;
		}
	}
	return !outside;
}

/**
 * named_release_slot() - a process leaves the pool (detach)
 * @h: the pool's header (every lock held)
 * @slot: its slot
 *
 * What it still holds outside units is given back (a process that detaches
 * with pages allocated leaks nothing), then the slot is free.
 */
void named_release_slot(struct named_hdr *h, unsigned slot)
{
	if ((!slots_settle(h, 1ull << slot) || named_pins_held(h, 1ull << slot)) &&
	    !rebuild(h, 1ull << slot))
		return;		/* the rebuild freed the slot */
	HKV_STORE(&h->slot[slot].pid, 0);
}

/**
 * named_reap() - free the slots of dead processes and give back what they
 * held outside units
 * @h: the pool's header (every lock held)
 */
void named_reap(struct named_hdr *h)
{
	uint64_t dead = 0;

	for (unsigned i = 0; i < HKV_NAMED_SLOTS; i++)
		if (h->slot[i].pid && !named_slot_alive(&h->slot[i]))
			dead |= 1ull << i;
	if (!dead)
		return;
	if ((!slots_settle(h, dead) || named_pins_held(h, dead)) && !rebuild(h, 0))
		return;
	for (unsigned i = 0; i < HKV_NAMED_SLOTS; i++) {
		if (!(dead >> i & 1))
			continue;
		hkv_log(HKV_LOG_WARN, "named pool %s: process %d died attached; slot %u freed",
			h->name, h->slot[i].pid, i);
		HKV_STORE(&h->slot[i].pid, 0);
		h->dead_slots++;
	}
}

/*
 * One lane rebuilt after its lock's holder died inside a call on that lane
 * alone, the pool lock held by nobody dead: its in-unit bits are sound
 * (they change under the pool lock) and so are the owner bytes; its index
 * is made anew from them. The old index is not freed through pointers the
 * dead holder may have left stale: the full rebuild due next sweeps it.
 */
static void lane_repair(struct named_hdr *h, unsigned li)
{
	struct lane *l = &h->lanes[li];
	const uint64_t *in_unit = l->xi.in_unit;
	uint64_t words = h->npages / 64 + 1, reclaimed = 0;
	uint64_t *claim = calloc(2 * words, 8), *keep = claim + words;
	uint8_t live[HKV_NAMED_SLOTS + 1] = { 0 };
	int err = -ENOMEM;

	if (!claim)
		goto out;
	for (unsigned i = 0; i < HKV_NAMED_SLOTS; i++)
		live[i + 1] = named_slot_alive(&h->slot[i]);
	for (uint64_t p = l->first; p < l->first + l->npages; p++) {
		uint64_t rel = p - l->first;
		bool unit = (in_unit[XI_WORD(rel)] >> (rel & 63)) & 1;
		uint8_t o = h->owner[p];

		if (o > HKV_NAMED_SLOTS || (o && !live[o])) {
			reclaimed += !unit;
			h->owner[p] = o = 0;	/* before the index: a kill then leaves them free */
		}
		if (unit)
			SETBIT(claim, p);
		if (o || unit)
			SETBIT(keep, p);
	}
	err = lane_rebuild(l, h->chunk_pages, keep, claim, h->owner);
out:
	if (err)
		hkv_log(HKV_LOG_ERR, "named pool %s: lane %u: rebuild failed: %s", h->name, li,
			strerror(-err));
	free(claim);
	/* counts a pool lock holder may read: the lane lock is not theirs */
	HKV_ADD(&h->recoveries, 1);
	HKV_ADD(&h->reclaimed_pages, reclaimed);
	hkv_probe_named_recover(named_local_id(h), reclaimed, 0, 0);
}

/**
 * named_recover() - restore a pool whose lock's holder died
 * @h: the pool's header
 * @lane: a lane whose lock's holder died (its lock held), or
 *	NAMED_RECOVER_DEAD (the pool lock's holder died) or
 *	NAMED_RECOVER_SWEEP (a lane was repaired before: its old index to
 *	sweep), both with every lock held
 */
void named_recover(struct named_hdr *h, int lane)
{
	uint64_t before = h->reclaimed_pages, dropped = h->dropped_units;

	if (lane >= 0) {
		hkv_log(HKV_LOG_WARN, "named pool %s: a process died holding lane %d's lock; "
			"rebuilding the lane", h->name, lane);
		lane_repair(h, (unsigned)lane);
		return;
	}
	if (lane == NAMED_RECOVER_DEAD) {
		h->recoveries++;
		hkv_log(HKV_LOG_WARN, "named pool %s: a process died holding the pool's "
			"locks; rebuilding its indexes", h->name);
	}
	if (rebuild(h, 0))
		return;
	if (lane == NAMED_RECOVER_DEAD)
		hkv_probe_named_recover(named_local_id(h), h->reclaimed_pages - before,
					h->res->nunits, h->dropped_units - dropped);
}

/**
 * named_check() - hkv_check() of what a named pool adds: dead processes'
 * slots reaped, then every page's owner byte agrees with its bits
 * @pool: a named pool
 *
 * A free page has no owner; an allocated page outside units has a live
 * process's slot (what recovery relies on).
 *
 * Return: 0 or -EUCLEAN.
 */
int named_check(struct hkv_pool *pool)
{
	struct named_hdr *h = pool->named->hdr;
	bool used[HKV_NAMED_SLOTS + 1] = { true };
	int err = 0;

	named_lock_all(h);
	named_reap(h);
	for (unsigned i = 0; i < HKV_NAMED_SLOTS; i++)
		used[i + 1] = h->slot[i].pid != 0;
	for (unsigned li = 0; li < h->nlanes && !err; li++) {
		const struct xindex *x = &h->lanes[li].xi;
		const uint8_t *owner = xi_owner(x);

		for (uint32_t p = 0; p < x->npages; p++) {
			uint8_t o = owner[p];
			bool alloc = !xi_page_free(x, p);
			bool unit = (x->in_unit[XI_WORD(p)] >> (p & 63)) & 1;

			if (o > HKV_NAMED_SLOTS || (!alloc && o) || (alloc && !unit && !o) ||
			    !used[o]) {
				hkv_log(HKV_LOG_ERR, "hkv_check: named pool %s: page %llu: owner %u, "
					"allocated %d, in a unit %d", h->name,
					(unsigned long long)(x->base + p), o, alloc, unit);
				err = -EUCLEAN;
				break;
			}
		}
	}
	named_unlock_all(h);
	return err;
}
