// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * unit.c - cache units: id hash, page marking, pins, split, remove.
 *
 * A unit is a set of allocated extents under a caller's 64-bit id. The id
 * hash (chained, power-of-two buckets) and the per-lane LRU lists live under
 * the pool's residency lock; a unit's pages carry the in_unit bit of their
 * lane's index, set and cleared under the lane locks, which is what makes
 * hkv_free() refuse them with -EBUSY.
 */
#include "res.h"
#include "trace.h"

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/**
 * unit_find() - look a unit up by id
 * @r: residency state (locked)
 * @id: the unit's id
 *
 * Return: the unit, or NULL.
 */
struct res_unit *unit_find(const struct hkv_res *r, uint64_t id)
{
	struct res_unit *u = r->bucket[hash64(id) & (r->nbuckets - 1)];

	while (u && u->id != id)
		u = u->hnext;
	return u;
}

/* double the buckets when the table is full; on ENOMEM chains just grow */
static void hash_grow(struct hkv_res *r)
{
	uint64_t nb = r->nbuckets * 2;
	struct res_unit **b = meta_calloc(nb, sizeof(*b));

	if (!b)
		return;
	for (uint64_t i = 0; i < r->nbuckets; i++) {
		struct res_unit *u = r->bucket[i], *next;

		for (; u; u = next) {
			next = u->hnext;
			u->hnext = b[hash64(u->id) & (nb - 1)];
			b[hash64(u->id) & (nb - 1)] = u;
		}
	}
	meta_release(r->bucket);
	r->bucket = b;
	r->nbuckets = nb;
}

static void hash_insert(struct hkv_res *r, struct res_unit *u)
{
	struct res_unit **b;

	if (r->nunits >= r->nbuckets)
		hash_grow(r);
	b = &r->bucket[hash64(u->id) & (r->nbuckets - 1)];
	u->hnext = *b;
	*b = u;
	r->nunits++;
	r->unit_pages += u->npages;
}

/**
 * unit_hash_remove() - take a unit out of the id hash and the unit counts
 * @r: residency state (locked)
 * @u: the unit
 */
void unit_hash_remove(struct hkv_res *r, struct res_unit *u)
{
	struct res_unit **pp = &r->bucket[hash64(u->id) & (r->nbuckets - 1)];

	while (*pp != u)
		pp = &(*pp)->hnext;
	*pp = u->hnext;
	r->nunits--;
	r->unit_pages -= u->npages;
}

/* insert @u after @prev (NULL: at the cold end) of its home lane's list */
static void lru_insert_after(struct hkv_res *r, struct res_unit *prev, struct res_unit *u)
{
	struct res_lru *l = &r->lru[u->home];

	u->prev = prev;
	u->next = prev ? prev->next : l->head;
	if (u->next)
		u->next->prev = u;
	else
		l->tail = u;
	if (prev)
		prev->next = u;
	else
		l->head = u;
}

/**
 * unit_lru_unlink() - take a unit out of its home lane's LRU list
 * @r: residency state (locked)
 * @u: the unit
 */
void unit_lru_unlink(struct hkv_res *r, struct res_unit *u)
{
	struct res_lru *l = &r->lru[u->home];

	if (u->prev)
		u->prev->next = u->next;
	else
		l->head = u->next;
	if (u->next)
		u->next->prev = u->prev;
	else
		l->tail = u->prev;
	u->prev = u->next = NULL;
}

/* make @u the most recently used unit */
static void lru_make_hot(struct hkv_res *r, struct res_unit *u)
{
	u->stamp = ++r->clock;
	u->used_ns = res_now();
	lru_insert_after(r, r->lru[u->home].tail, u);
}

/**
 * unit_drop() - forget an unpinned unit (its pages are handled already)
 * @pool: the pool (residency locked)
 * @u: the unit, freed here
 */
void unit_drop(struct hkv_pool *pool, struct res_unit *u)
{
	unit_hash_remove(pool->res, u);
	unit_lru_unlink(pool->res, u);
	unit_put(pool, u);
}

/**
 * unit_lane_span() - lowest and highest lane that some extents touch
 * @pool: the pool
 * @ext: extents inside the pool
 * @n: how many (> 0)
 * @lo: receives the lowest lane
 * @hi: receives the highest lane
 */
void unit_lane_span(const struct hkv_pool *pool, const struct hkv_extent *ext, unsigned n,
		   unsigned *lo, unsigned *hi)
{
	*lo = UINT32_MAX;
	*hi = 0;
	for (unsigned i = 0; i < n; i++) {
		*lo = HKV_MIN(*lo, lane_of(pool, ext[i].start));
		*hi = HKV_MAX(*hi, lane_of(pool, ext[i].start + ext[i].len - 1));
	}
}

/**
 * unit_mark_extent() - set or clear the in_unit bits of one extent
 * @pool: the pool (the extent's lanes locked)
 * @e: the extent
 * @set: true to set
 */
void unit_mark_extent(struct hkv_pool *pool, const struct hkv_extent *e, bool set)
{
	unsigned li;

	for_each_piece(pool, e, p, len, li) {
		struct xindex *x = &pool->lanes[li].xi;

		xi_set_range(x->in_unit, p - x->base, len, set);
	}
}

/*
 * mark_unit() - claim pages for a unit (lanes locked): every page allocated
 * and in no unit, none named twice; all or nothing.
 */
static int mark_unit(struct hkv_pool *pool, const struct hkv_extent *ext, unsigned n)
{
	unsigned i, li;

	for (i = 0; i < n; i++) {
		for_each_piece(pool, &ext[i], p, len, li) {
			if (xi_check_allocated(&pool->lanes[li].xi, p, len))
				goto unmark_claimed;
		}
		unit_mark_extent(pool, &ext[i], true);
	}
	return 0;

unmark_claimed:
	while (i--)
		unit_mark_extent(pool, &ext[i], false);
	return -EINVAL;
}

/* clear a unit's in_unit bits, pages stay allocated */
static void unmark_unit(struct hkv_pool *pool, const struct res_unit *u)
{
	unsigned lo, hi;

	unit_lane_span(pool, u->ext, u->n, &lo, &hi);
	lanes_lock(pool, lo, hi);
	for (unsigned i = 0; i < u->n; i++) {
		unsigned li;

		unit_mark_extent(pool, &u->ext[i], false);
		/* a named pool: the pages are now the caller's */
		for_each_piece(pool, &u->ext[i], p, len, li)
			xi_own(&pool->lanes[li].xi, (uint32_t)(p - pool->lanes[li].xi.base),
			       len, true);
	}
	lanes_unlock(pool, lo, hi);
}

/**
 * unit_free_pages() - clear a unit's in_unit bits and free its pages
 * @pool: the pool (residency lock held)
 * @u: the unit (not changed)
 *
 * Return: 0, or -ENOMEM when the lanes' indexes cannot grow (nothing done).
 */
int unit_free_pages(struct hkv_pool *pool, const struct res_unit *u)
{
	unsigned lo, hi, li;
	uint64_t pieces = 0;	/* may pass 2^32 with small chunks: then -ENOMEM */

	unit_lane_span(pool, u->ext, u->n, &lo, &hi);
	for (unsigned i = 0; i < u->n; i++)
		for_each_piece(pool, &u->ext[i], p, len, li)
			pieces++;
	lanes_lock(pool, lo, hi);
	for (unsigned i = lo; i <= hi; i++) {
		if (xi_reserve(&pool->lanes[i].xi, (uint32_t)HKV_MIN(pieces, UINT32_MAX))) {
			lanes_unlock(pool, lo, hi);
			return -ENOMEM;
		}
	}
	for (unsigned i = 0; i < u->n; i++) {
		for_each_piece(pool, &u->ext[i], p, len, li) {
			struct lane *l = &pool->lanes[li];

			xi_set_range(l->xi.in_unit, p - l->xi.base, len, false);
			xi_free(&l->xi, p, len);
			l->gen++;
			l->c.pages_freed += len;
		}
	}
	for (unsigned i = lo; i <= hi; i++)
		trace_frag(pool, &pool->lanes[i], i);
	lanes_unlock(pool, lo, hi);
	return 0;
}

/**
 * unit_pages_in() - pages of a unit inside one lane
 * @pool: the pool
 * @u: the unit
 * @lane: lane number
 *
 * Return: the page count.
 */
uint64_t unit_pages_in(const struct hkv_pool *pool, const struct res_unit *u, unsigned lane)
{
	const struct lane *l = &pool->lanes[lane];
	uint64_t sum = 0;

	for (unsigned i = 0; i < u->n; i++) {
		uint64_t a = HKV_MAX(u->ext[i].start, l->first);
		uint64_t b = HKV_MIN(u->ext[i].start + u->ext[i].len, l->first + l->npages);

		sum += b > a ? b - a : 0;
	}
	return sum;
}

/* extents inside the pool, none empty; their page total into *npages */
static int check_extents(const struct hkv_pool *pool, const struct hkv_extent *ext,
			 unsigned n, uint64_t *npages)
{
	*npages = 0;
	for (unsigned i = 0; i < n; i++) {
		if (!ext[i].len || ext[i].start >= pool->npages ||
		    ext[i].len > pool->npages - ext[i].start)
			return -EINVAL;
		*npages += ext[i].len;
	}
	return 0;
}

/*
 * Unit records of a private pool come from malloc, and an engine's process
 * has threads: glibc's malloc then locks its arena on every call that its
 * per-thread cache cannot answer, which an LRU churn of units does nearly
 * always (a unit added per allocation, another evicted). So the records of
 * up to UNIT_SPARE_EXTENTS extents are sized to a power of two and the freed
 * ones kept, UNIT_SPARE_MAX a size, for the next units: a pop under the
 * residency lock the call holds anyway. A named pool's records live in its
 * file's heap, which has no such lock.
 *
 * A record's class is read from its extent count when it is put back: a
 * split only lowers the count, so the record holds at least the class's
 * extents then.
 */
#define UNIT_SPARE_CLASSES	HKV_ARRAY_SIZE(((struct unit_spares *)0)->head)
#define UNIT_SPARE_EXTENTS	(1u << (UNIT_SPARE_CLASSES - 1))
#define UNIT_SPARE_MAX		256

/* the class of a record of n extents: its room is 1 << class extents */
static unsigned spare_class(unsigned n)
{
	return n <= 1 ? 0 : 32 - (unsigned)__builtin_clz(n - 1);
}

/* a record for n extents (residency locked, or the pool private) */
static struct res_unit *unit_new(struct hkv_pool *pool, uint64_t id, unsigned n)
{
	unsigned c = spare_class(n), room = n;
	struct res_unit *u = NULL;

	if (!pool->named && n <= UNIT_SPARE_EXTENTS) {
		struct unit_spares *s = pool->unit_spare;

		u = s ? s->head[c] : NULL;
		if (u) {
			s->head[c] = u->hnext;
			s->count[c]--;
			memset(u, 0, sizeof(*u));
		}
		room = 1u << c;	/* a new one: room for the class */
	}
	/* room < 2^32: the size cannot overflow a 64-bit size_t */
	if (!u)
		u = meta_calloc(1, sizeof(*u) + (size_t)room * sizeof(u->ext[0]));
	if (u) {
		u->id = id;
		u->n = n;
	}
	return u;
}

/**
 * unit_put() - give a unit record back (a private pool keeps it for reuse)
 * @pool: the pool (residency locked; a named pool's heap routed to)
 * @u: the record, or NULL
 */
void unit_put(struct hkv_pool *pool, struct res_unit *u)
{
	struct unit_spares *s = pool->unit_spare;
	unsigned c;

	if (!u)
		return;
	c = spare_class(u->n);
	/* the first record kept makes the lists (none without units) */
	if (!s && !pool->named && u->n <= UNIT_SPARE_EXTENTS)
		s = pool->unit_spare = calloc(1, sizeof(*s));
	if (!s || pool->named || u->n > UNIT_SPARE_EXTENTS || s->count[c] >= UNIT_SPARE_MAX) {
		meta_release(u);
		return;
	}
	u->hnext = s->head[c];
	s->head[c] = u;
	s->count[c]++;
}

/**
 * unit_spares_free() - free the records a private pool kept
 * @pool: the pool, going away
 */
void unit_spares_free(struct hkv_pool *pool)
{
	struct unit_spares *s = pool->unit_spare;

	for (unsigned c = 0; s && c < UNIT_SPARE_CLASSES; c++) {
		for (struct res_unit *u = s->head[c], *next; u; u = next) {
			next = u->hnext;
			meta_release(u);
		}
	}
	free(s);
	pool->unit_spare = NULL;
}

HKV_API int hkv_unit_add(struct hkv_pool *pool, uint64_t unit,
			 const struct hkv_extent *ext, unsigned n)
{
	struct hkv_res *r;
	struct res_unit *u;
	unsigned lo, hi;
	uint64_t npages;
	int rc;

	if (!pool || !ext || !n || check_extents(pool, ext, n, &npages))
		return -EINVAL;
	r = pool->res;
	rc = res_lock(pool);
	if (rc)
		return rc;
	/* under the lock: a named pool's units live in its file's heap, a
	 * private pool's spares are the lock's */
	u = unit_new(pool, unit, n);
	if (!u) {
		rc = -ENOMEM;
		goto unlock;
	}
	memcpy(u->ext, ext, n * sizeof(*ext));
	u->npages = npages;
	if (unit_find(r, unit)) {
		rc = -EEXIST;
		goto unlock;
	}
	unit_lane_span(pool, ext, n, &lo, &hi);
	lanes_lock(pool, lo, hi);
	rc = mark_unit(pool, ext, n);
	lanes_unlock(pool, lo, hi);
	if (rc)
		goto unlock;
	u->home = lane_of(pool, ext[0].start);
	u->home_pages = unit_pages_in(pool, u, u->home);
	hash_insert(r, u);
	lru_make_hot(r, u);
	res_evictable(r, u, true);
	u = NULL;
unlock:
	unit_put(pool, u);
	res_unlock(pool);
	return rc;
}

/* look @unit up with the residency lock taken; unlocked again on failure */
static int lock_unit(struct hkv_pool *pool, uint64_t unit, struct res_unit **out)
{
	int rc;

	if (!pool)
		return -EINVAL;
	rc = res_lock(pool);
	if (rc)
		return rc;
	*out = unit_find(pool->res, unit);
	if (*out)
		return 0;
	res_unlock(pool);
	return -ENOENT;
}

HKV_API int hkv_unit_touch(struct hkv_pool *pool, uint64_t unit)
{
	struct res_unit *u;
	int rc = lock_unit(pool, unit, &u);

	if (rc)
		return rc;
	unit_lru_unlink(pool->res, u);
	lru_make_hot(pool->res, u);
	res_unlock(pool);
	return 0;
}

/**
 * unit_pin_link() - list a unit among the pinned ones
 * @r: residency state (locked)
 * @u: a unit whose pin count just left 0 (or a split half of a pinned one)
 * @after: the unit to follow, or NULL to be the newest
 */
void unit_pin_link(struct hkv_res *r, struct res_unit *u, struct res_unit *after)
{
	if (!after)
		after = r->pin_tail;
	u->pin_prev = after;
	u->pin_next = after ? after->pin_next : r->pin_head;
	if (u->pin_next)
		u->pin_next->pin_prev = u;
	else
		r->pin_tail = u;
	if (after)
		after->pin_next = u;
	else
		r->pin_head = u;
}

static void unit_pin_unlink(struct hkv_res *r, struct res_unit *u)
{
	if (!u->pin_prev && r->pin_head != u)
		return;		/* not listed: pinned before this process (named) */
	if (u->pin_prev)
		u->pin_prev->pin_next = u->pin_next;
	else
		r->pin_head = u->pin_next;
	if (u->pin_next)
		u->pin_next->pin_prev = u->pin_prev;
	else
		r->pin_tail = u->pin_prev;
	u->pin_prev = u->pin_next = NULL;
}

HKV_API int hkv_unit_pin(struct hkv_pool *pool, uint64_t unit)
{
	struct res_unit *u;
	int rc = lock_unit(pool, unit, &u);

	if (rc)
		return rc;
	if (u->pins == UINT32_MAX) {
		rc = -EOVERFLOW;
	} else if (pool->named && (rc = named_pin_note(pool, unit, true))) {
		/* a named pool's pin is recorded against its process first */
	} else if (u->pins++ == 0) {
		pool->res->pinned_units++;
		pool->res->pinned_pages += u->npages;
		res_evictable(pool->res, u, false);
		u->pinned_ns = res_now();
		unit_pin_link(pool->res, u, NULL);
	}
	res_unlock(pool);
	return rc;
}

HKV_API int hkv_unit_unpin(struct hkv_pool *pool, uint64_t unit)
{
	struct res_unit *u;
	int rc = lock_unit(pool, unit, &u);

	if (rc)
		return rc;
	if (!u->pins) {
		rc = -EINVAL;
	} else {
		if (pool->named)
			named_pin_note(pool, unit, false);
		if (--u->pins == 0) {
			pool->res->pinned_units--;
			pool->res->pinned_pages -= u->npages;
			res_evictable(pool->res, u, true);
			unit_pin_unlink(pool->res, u);
		}
	}
	res_unlock(pool);
	return rc;
}

/* move the pages past @at of @u into @nu (sized by split_count) */
static void split_move(struct res_unit *u, uint64_t at, struct res_unit *nu)
{
	uint64_t acc = 0;
	unsigned k = 0, j = 0;

	while (acc + u->ext[k].len < at)
		acc += u->ext[k++].len;
	if (at - acc < u->ext[k].len) {
		nu->ext[j].start = u->ext[k].start + (at - acc);
		nu->ext[j++].len = u->ext[k].len - (at - acc);
	}
	for (unsigned i = k + 1; i < u->n; i++)
		nu->ext[j++] = u->ext[i];
	u->ext[k].len = at - acc;
	u->n = k + 1;
	nu->npages = u->npages - at;
	u->npages = at;
}

/* extents of the part of @u past @at */
static unsigned split_count(const struct res_unit *u, uint64_t at)
{
	uint64_t acc = 0;
	unsigned k = 0;

	while (acc + u->ext[k].len < at)
		acc += u->ext[k++].len;
	return u->n - k - (at - acc == u->ext[k].len);
}

HKV_API int hkv_unit_split(struct hkv_pool *pool, uint64_t unit, uint64_t at_page,
			   uint64_t new_unit)
{
	struct res_unit *u, *nu;
	struct hkv_res *r;
	int rc = lock_unit(pool, unit, &u);

	if (rc)
		return rc;
	r = pool->res;
	if (!at_page || at_page >= u->npages) {
		rc = -EINVAL;
		goto unlock;
	}
	if (unit_find(r, new_unit)) {
		rc = -EEXIST;
		goto unlock;
	}
	nu = unit_new(pool, new_unit, split_count(u, at_page));
	if (!nu) {
		rc = -ENOMEM;
		goto unlock;
	}
	/* a named pool: the new half's pins recorded for their holders */
	if (pool->named && u->pins && (rc = named_pins_split(pool, unit, new_unit))) {
		unit_put(pool, nu);
		goto unlock;
	}
	if (!u->pins)
		res_evictable(r, u, false);
	r->unit_pages -= u->npages;	/* hash_insert adds the new half back */
	split_move(u, at_page, nu);
	r->unit_pages += u->npages;
	nu->pins = u->pins;
	u->sealed = 0;		/* the checksum was of the whole */
	nu->stamp = u->stamp;
	nu->used_ns = u->used_ns;
	nu->pinned_ns = u->pinned_ns;
	nu->home = u->home;
	u->home_pages = unit_pages_in(pool, u, u->home);
	nu->home_pages = unit_pages_in(pool, nu, nu->home);
	if (nu->pins) {
		r->pinned_units++;
		unit_pin_link(r, nu, u);	/* pinned as long as u */
	}
	hash_insert(r, nu);
	lru_insert_after(r, u, nu);
	if (!u->pins) {
		res_evictable(r, u, true);
		res_evictable(r, nu, true);
	}
unlock:
	res_unlock(pool);
	return rc;
}

HKV_API int hkv_unit_remove(struct hkv_pool *pool, uint64_t unit, unsigned flags)
{
	struct res_unit *u;
	int rc;

	if (flags & ~HKV_UNIT_FREE)
		return -EINVAL;
	rc = lock_unit(pool, unit, &u);
	if (rc)
		return rc;
	if (u->pins) {
		rc = -EBUSY;
		goto unlock;
	}
	if (flags & HKV_UNIT_FREE)
		rc = unit_free_pages(pool, u);
	else
		unmark_unit(pool, u);
	if (!rc) {
		res_evictable(pool->res, u, false);
		unit_drop(pool, u);
	}
unlock:
	res_unlock(pool);
	return rc;
}
