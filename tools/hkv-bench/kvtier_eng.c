// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kvtier_eng.c - the engines' own page allocators and eviction rules, in
 * the engine model's place of hugekv, each the best version its design
 * allows (the figures then measure the design, not the code):
 *
 * sglang-dev: SGLang's paged device allocator. free_pages (sorted) taken
 *	from the front; freed pages go to release_pages; when free_pages runs
 *	short the two are merged and sorted (here: radix-sort the release
 *	pages, then one linear merge).
 * sglang-host: the HiCache host pool. free_slots: taken from the front,
 *	freed slots appended (a FIFO ring, no sort).
 * vllm-pool: vLLM's block pool. One FIFO free queue (doubly linked) that
 *	also holds cached blocks nobody uses: allocation pops from the head
 *	and evicts a cached block when it pops one (the unit it belongs to);
 *	a hit takes the unit's blocks out of the queue; a request frees its
 *	blocks to the tail in reverse order (its tail evicted first).
 * vllm-cpu: vLLM's CPU offload backend. Blocks of one trace block (ppb
 *	pages, contiguous), fresh blocks first, then a free-list stack; LRU
 *	manager evicting exactly the missing blocks.
 * lmcache-ff: LMCache's local CPU allocator. First fit over an
 *	address-ordered free list (sorted array, bisect and coalesce on free),
 *	one allocation per chunk (a trace block); on failure the LRU chunk is
 *	evicted and the allocation retried.
 *
 * SGLang, vLLM-CPU and LMCache keep an LRU list of unpinned units (O(1)
 * touch and victim; SGLang's own eviction collects the radix tree's leaves
 * into a heap at every call, which only costs more) and evict exactly the
 * deficit: just enough for the request at hand.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kvmodel.h"

/* ---- page lists <-> extents --------------------------------------------- */
/* append page @p to the extents (ascending runs) */
static int ext_push(struct hkv_extent *ext, unsigned *k, unsigned max, uint32_t p)
{
	if (*k && ext[*k - 1].start + ext[*k - 1].len == p) {
		ext[*k - 1].len++;
		return 0;
	}
	if (*k == max)
		return -ENOSPC;
	ext[(*k)++] = (struct hkv_extent){ p, 1 };
	return 0;
}

/* ---- the LRU of unpinned units and the unit records ---------------------- */
struct eunit {
	uint32_t prev, next;	/* LRU links; KV_NONE at the ends */
	uint32_t pin;
	uint16_t n;		/* pages; 0: no such unit */
	uint16_t lru;		/* on the LRU list */
};

struct alloc_ops;

struct eng {
	struct kvtier *t;
	const struct alloc_ops *a;
	struct eunit *u;
	uint32_t *pg;		/* unit -> pages, ppb each */
	uint32_t head, tail;	/* coldest, hottest */
	/* sglang-dev */
	uint32_t *fp, *rel, *tmp;
	uint64_t nfp, fp_off, nrel;
	/* sglang-host: ring */
	uint32_t *ring;
	uint64_t rcap, rhead, rn;
	/* vllm-cpu */
	uint32_t *stack;
	uint64_t nstack, nfresh, nblocks;
	/* lmcache-ff: free blocks by address */
	struct hkv_extent *fb;
	uint64_t nfb;
	bool injected;
};

/* the allocator under the LRU: pages free now and pages a request of
 * n pages takes (whole blocks for block allocators) */
struct alloc_ops {
	uint64_t (*avail)(struct eng *e);
	uint64_t (*need)(struct eng *e, uint32_t n);
	int (*alloc)(struct eng *e, uint32_t n, struct hkv_extent *ext, unsigned max);
	void (*free)(struct eng *e, const uint32_t *pages, unsigned n);
};

static void lru_del(struct eng *e, uint32_t i)
{
	struct eunit *x = &e->u[i];

	if (!x->lru)
		return;
	if (x->prev != KV_NONE)
		e->u[x->prev].next = x->next;
	else
		e->head = x->next;
	if (x->next != KV_NONE)
		e->u[x->next].prev = x->prev;
	else
		e->tail = x->prev;
	x->lru = 0;
}

static void lru_add_tail(struct eng *e, uint32_t i)
{
	struct eunit *x = &e->u[i];

	x->prev = e->tail;
	x->next = KV_NONE;
	if (e->tail != KV_NONE)
		e->u[e->tail].next = i;
	else
		e->head = i;
	e->tail = i;
	x->lru = 1;
}

/* evict the coldest unpinned unit; false when there is none. Pinned units
 * keep their place (a pin does not make a unit recent): the walk skips the
 * few the requests in flight hold */
static bool evict_one(struct eng *e)
{
	uint32_t v = e->head;
	struct eunit *x;

	while (v != KV_NONE && e->u[v].pin)
		v = e->u[v].next;
	if (v == KV_NONE)
		return false;
	x = &e->u[v];
	lru_del(e, v);
	e->a->free(e, &e->pg[(uint64_t)v * e->t->ppb], x->n);
	x->n = 0;
	e->t->evictions++;
	kvtier_victim(e->t, v);
	return true;
}

static int eng_create(struct kvtier *t, const struct alloc_ops *a)
{
	struct eng *e = calloc(1, sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->t = t;
	e->a = a;
	e->head = e->tail = KV_NONE;
	e->u = calloc(t->nunits, sizeof(*e->u));
	e->pg = malloc((uint64_t)t->nunits * t->ppb * sizeof(*e->pg));
	t->st = e;
	return e->u && e->pg ? 0 : -ENOMEM;
}

static void eng_destroy(struct kvtier *t)
{
	struct eng *e = t->st;

	if (!e)
		return;
	free(e->u);
	free(e->pg);
	free(e->fp);
	free(e->rel);
	free(e->tmp);
	free(e->ring);
	free(e->stack);
	free(e->fb);
	free(e);
	t->st = NULL;
}

/* exact deficit: evict the coldest units until the request fits, then ask
 * the allocator */
static int eng_alloc(struct kvtier *t, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	struct eng *e = t->st;
	uint64_t need = e->a->need(e, n);
	bool ran = false;

	while (e->a->avail(e) < need) {
		if (!evict_one(e))
			return -ENOMEM;
		ran = true;
	}
	t->evict_runs += ran;
	return e->a->alloc(e, n, ext, max);
}

static int eng_add(struct kvtier *t, uint32_t unit, const struct hkv_extent *ext, unsigned n)
{
	struct eng *e = t->st;
	struct eunit *x = &e->u[unit];
	uint32_t *pg = &e->pg[(uint64_t)unit * t->ppb];
	unsigned k = 0;

	if (x->n)
		return -EEXIST;
	for (unsigned i = 0; i < n; i++)
		for (uint64_t p = ext[i].start; p < ext[i].start + ext[i].len; p++) {
			if (k == t->ppb)
				return -EINVAL;
			pg[k++] = (uint32_t)p;
		}
	x->n = (uint16_t)k;
	x->pin = 0;
	lru_add_tail(e, unit);
	return 0;
}

static int eng_pin(struct kvtier *t, const uint32_t *u, unsigned n)
{
	struct eng *e = t->st;

	for (unsigned i = 0; i < n; i++) {
		if (!e->u[u[i]].n)
			return -ENOENT;
		e->u[u[i]].pin++;
	}
	return 0;
}

static int eng_unpin(struct kvtier *t, const uint32_t *u, unsigned n)
{
	struct eng *e = t->st;

	for (unsigned i = 0; i < n; i++) {
		struct eunit *x = &e->u[u[i]];

		if (!x->n || !x->pin)
			return -EINVAL;
		x->pin--;
	}
	return 0;
}

static int eng_touch(struct kvtier *t, const uint32_t *u, unsigned n)
{
	struct eng *e = t->st;

	for (unsigned i = 0; i < n; i++) {
		if (!e->u[u[i]].n)
			return -ENOENT;
		lru_del(e, u[i]);
		lru_add_tail(e, u[i]);
	}
	return 0;
}

static int eng_free(struct kvtier *t, const struct hkv_extent *ext, unsigned n)
{
	struct eng *e = t->st;
	uint32_t pg[KV_MAX_PPB];
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		for (uint64_t p = ext[i].start; p < ext[i].start + ext[i].len; p++) {
			pg[k++] = (uint32_t)p;
			if (k == KV_MAX_PPB) {
				e->a->free(e, pg, k);
				k = 0;
			}
		}
	if (k)
		e->a->free(e, pg, k);
	return 0;
}

/* ---- sglang-dev: free_pages + release_pages, lazy merge-and-sort --------- */
static void radix_sort(uint32_t *v, uint32_t *tmp, uint64_t n)
{
	for (int shift = 0; n && shift < 32; shift += 8) {
		uint64_t cnt[257] = { 0 };

		for (uint64_t i = 0; i < n; i++)
			cnt[((v[i] >> shift) & 0xff) + 1]++;
		if (cnt[((v[0] >> shift) & 0xff) + 1] == n)
			continue;	/* one digit value: nothing to move */
		for (int b = 0; b < 256; b++)
			cnt[b + 1] += cnt[b];
		for (uint64_t i = 0; i < n; i++)
			tmp[cnt[(v[i] >> shift) & 0xff]++] = v[i];
		memcpy(v, tmp, n * sizeof(*v));
	}
}

static void sgd_merge(struct eng *e)
{
	uint32_t *a = e->fp + e->fp_off, *b = e->rel, *out = e->tmp;
	uint64_t na = e->nfp, nb = e->nrel, i = 0, j = 0, k = 0;

	radix_sort(b, e->tmp, nb);
	while (i < na && j < nb)
		out[k++] = a[i] < b[j] ? a[i++] : b[j++];
	while (i < na)
		out[k++] = a[i++];
	while (j < nb)
		out[k++] = b[j++];
	e->tmp = e->fp;
	e->fp = out;
	e->fp_off = 0;
	e->nfp = k;
	e->nrel = 0;
}

static uint64_t sgd_avail(struct eng *e)
{
	return e->nfp + e->nrel;
}

static uint64_t pages_need(struct eng *e, uint32_t n)
{
	(void)e;
	return n;
}

static int sgd_alloc(struct eng *e, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	unsigned k = 0;

	if (n > e->nfp)
		sgd_merge(e);
	if (n > e->nfp)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		if (ext_push(ext, &k, max, e->fp[e->fp_off + i]))
			return -ENOSPC;
	e->fp_off += n;
	e->nfp -= n;
	return (int)k;
}

static void sgd_free(struct eng *e, const uint32_t *pages, unsigned n)
{
	memcpy(e->rel + e->nrel, pages, n * sizeof(*pages));
	e->nrel += n;
}

static const struct alloc_ops sgd_ops = { sgd_avail, pages_need, sgd_alloc, sgd_free };

static int sgd_create(struct kvtier *t)
{
	int err = eng_create(t, &sgd_ops);
	struct eng *e = t->st;

	if (err)
		return err;
	e->fp = malloc(t->npages * sizeof(*e->fp));
	e->rel = malloc(t->npages * sizeof(*e->rel));
	e->tmp = malloc(t->npages * sizeof(*e->tmp));
	if (!e->fp || !e->rel || !e->tmp)
		return -ENOMEM;
	for (uint64_t i = 0; i < t->npages; i++)
		e->fp[i] = (uint32_t)i;
	e->nfp = t->npages;
	return 0;
}

/* ---- sglang-host: free_slots, a FIFO ---------------------------------- */
static uint64_t sgh_avail(struct eng *e)
{
	return e->rn;
}

static int sgh_alloc(struct eng *e, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	unsigned k = 0;

	if (n > e->rn)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		if (ext_push(ext, &k, max, e->ring[(e->rhead + i) % e->rcap]))
			return -ENOSPC;
	e->rhead = (e->rhead + n) % e->rcap;
	e->rn -= n;
	return (int)k;
}

static void sgh_free(struct eng *e, const uint32_t *pages, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		e->ring[(e->rhead + e->rn++) % e->rcap] = pages[i];
	if (e->t->inject == KV_INJECT_DOUBLE_FREE && !e->injected && n) {
		/* a freeing bug the model must catch: one slot freed twice */
		e->ring[(e->rhead + e->rn++) % e->rcap] = pages[0];
		e->injected = true;
	}
}

static const struct alloc_ops sgh_ops = { sgh_avail, pages_need, sgh_alloc, sgh_free };

static int sgh_create(struct kvtier *t)
{
	int err = eng_create(t, &sgh_ops);
	struct eng *e = t->st;

	if (err)
		return err;
	e->rcap = t->npages + 1;
	e->ring = malloc(e->rcap * sizeof(*e->ring));
	if (!e->ring)
		return -ENOMEM;
	for (uint64_t i = 0; i < t->npages; i++)
		e->ring[i] = (uint32_t)i;
	e->rn = t->npages;
	return 0;
}

/* ---- vllm-cpu: block-sized slots, fresh first, then a free-list stack --- */
static uint64_t vc_avail(struct eng *e)
{
	return (e->nstack + e->nblocks - e->nfresh) * e->t->ppb;
}

static uint64_t vc_need(struct eng *e, uint32_t n)
{
	return (uint64_t)(n + e->t->ppb - 1) / e->t->ppb * e->t->ppb;
}

static int vc_alloc(struct eng *e, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	unsigned ppb = e->t->ppb, k = 0;

	if (vc_need(e, n) > vc_avail(e))
		return -ENOMEM;
	if ((n + ppb - 1) / ppb > max)
		return -ENOSPC;
	for (uint32_t done = 0; done < n;) {
		uint64_t b = e->nfresh < e->nblocks ? e->nfresh++ : e->stack[--e->nstack];
		uint32_t len = n - done < ppb ? n - done : ppb;

		if (k && ext[k - 1].start + ext[k - 1].len == b * ppb)
			ext[k - 1].len += len;
		else
			ext[k++] = (struct hkv_extent){ b * ppb, len };
		done += len;
	}
	return (int)k;
}

/* a unit's pages lie in one block */
static void vc_free(struct eng *e, const uint32_t *pages, unsigned n)
{
	if (n)
		e->stack[e->nstack++] = pages[0] / e->t->ppb;
}

static const struct alloc_ops vc_ops = { vc_avail, vc_need, vc_alloc, vc_free };

static int vc_create(struct kvtier *t)
{
	int err = eng_create(t, &vc_ops);
	struct eng *e = t->st;

	if (err)
		return err;
	e->nblocks = t->npages / t->ppb;
	e->stack = malloc((e->nblocks + 1) * sizeof(*e->stack));
	return e->stack ? 0 : -ENOMEM;
}

/* ---- lmcache-ff: first fit over an address-ordered free list ------------ */
/* index of the first free block that starts after @p */
static uint64_t ff_bisect(const struct eng *e, uint64_t p)
{
	uint64_t lo = 0, hi = e->nfb;

	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;

		if (e->fb[mid].start <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void ff_free_run(struct eng *e, uint64_t s, uint64_t len)
{
	uint64_t i = ff_bisect(e, s);
	bool left = i > 0 && e->fb[i - 1].start + e->fb[i - 1].len == s;
	bool right = i < e->nfb && s + len == e->fb[i].start;

	if (left && right) {
		e->fb[i - 1].len += len + e->fb[i].len;
		memmove(&e->fb[i], &e->fb[i + 1], (e->nfb - i - 1) * sizeof(*e->fb));
		e->nfb--;
	} else if (left) {
		e->fb[i - 1].len += len;
	} else if (right) {
		e->fb[i].start = s;
		e->fb[i].len += len;
	} else {
		memmove(&e->fb[i + 1], &e->fb[i], (e->nfb - i) * sizeof(*e->fb));
		e->fb[i] = (struct hkv_extent){ s, len };
		e->nfb++;
	}
}

static void ff_free(struct eng *e, const uint32_t *pages, unsigned n)
{
	unsigned i = 0;

	while (i < n) {
		unsigned j = i + 1;

		while (j < n && pages[j] == pages[j - 1] + 1)
			j++;
		ff_free_run(e, pages[i], j - i);
		i = j;
	}
}

/* one chunk of @len pages: the first free block that holds it */
static bool ff_take(struct eng *e, uint32_t len, uint64_t *start)
{
	for (uint64_t i = 0; i < e->nfb; i++) {
		if (e->fb[i].len < len)
			continue;
		*start = e->fb[i].start;
		e->fb[i].start += len;
		e->fb[i].len -= len;
		if (!e->fb[i].len) {
			memmove(&e->fb[i], &e->fb[i + 1], (e->nfb - i - 1) * sizeof(*e->fb));
			e->nfb--;
		}
		return true;
	}
	return false;
}

/* chunk by chunk: on failure evict the LRU chunk and retry; if nothing is
 * left to evict, give back the chunks taken */
static int ff_alloc_tier(struct kvtier *t, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	struct eng *e = t->st;
	unsigned ppb = t->ppb, k = 0;
	bool ran = false;

	if ((n + ppb - 1) / ppb > max)
		return -ENOSPC;
	for (uint32_t done = 0; done < n;) {
		uint32_t len = n - done < ppb ? n - done : ppb;
		uint64_t s;

		while (!ff_take(e, len, &s)) {
			if (!evict_one(e)) {
				for (unsigned i = 0; i < k; i++)
					ff_free_run(e, ext[i].start, ext[i].len);
				t->evict_runs += ran;
				return -ENOMEM;
			}
			ran = true;
		}
		if (k && ext[k - 1].start + ext[k - 1].len == s)
			ext[k - 1].len += len;
		else
			ext[k++] = (struct hkv_extent){ s, len };
		done += len;
	}
	t->evict_runs += ran;
	return (int)k;
}

static uint64_t ff_avail(struct eng *e)
{
	(void)e;
	return 0;		/* not used: ff_alloc_tier evicts on failure */
}

static const struct alloc_ops ff_ops = { ff_avail, pages_need, NULL, ff_free };

static int ff_create(struct kvtier *t)
{
	int err = eng_create(t, &ff_ops);
	struct eng *e = t->st;

	if (err)
		return err;
	e->fb = malloc((t->npages / 2 + 2) * sizeof(*e->fb));
	if (!e->fb)
		return -ENOMEM;
	e->fb[0] = (struct hkv_extent){ 0, t->npages };
	e->nfb = 1;
	return 0;
}

#define ENG_UNITS .add = eng_add, .pin = eng_pin, .unpin = eng_unpin, .touch = eng_touch, \
	.free = eng_free, .destroy = eng_destroy

const struct kvtier_ops kv_sglang_dev = {
	.name = "sglang paged allocator: free_pages + release_pages, lazy merge-and-sort; LRU, "
		"exact deficit",
	.create = sgd_create, .alloc = eng_alloc, ENG_UNITS,
};

const struct kvtier_ops kv_sglang_host = {
	.name = "sglang hicache host pool: free_slots FIFO; LRU, exact deficit",
	.create = sgh_create, .alloc = eng_alloc, ENG_UNITS,
};

const struct kvtier_ops kv_vllm_cpu = {
	.name = "vllm cpu offload backend: fresh blocks, then free-list stack; LRU, exact deficit",
	.create = vc_create, .alloc = eng_alloc, ENG_UNITS,
};

const struct kvtier_ops kv_lmcache_ff = {
	.name = "lmcache local cpu: first fit, address-ordered free list, per chunk; LRU, "
		"evict on failure",
	.create = ff_create, .alloc = ff_alloc_tier, ENG_UNITS,
};

/* ---- vllm-pool: one FIFO free queue that holds the cached blocks too ----- */
struct vpool {
	uint32_t *prev, *next;	/* per page, the queue */
	uint32_t *owner;	/* page -> cached unit, or KV_NONE */
	uint8_t *inq;
	uint32_t head, tail;
	uint64_t nq;
	uint32_t *upin, *upg;	/* per unit: pins, pages */
	uint8_t *un;
};

static void vq_del(struct vpool *v, uint32_t p)
{
	if (v->prev[p] != KV_NONE)
		v->next[v->prev[p]] = v->next[p];
	else
		v->head = v->next[p];
	if (v->next[p] != KV_NONE)
		v->prev[v->next[p]] = v->prev[p];
	else
		v->tail = v->prev[p];
	v->inq[p] = 0;
	v->nq--;
}

static void vq_append(struct vpool *v, uint32_t p)
{
	v->prev[p] = v->tail;
	v->next[p] = KV_NONE;
	if (v->tail != KV_NONE)
		v->next[v->tail] = p;
	else
		v->head = p;
	v->tail = p;
	v->inq[p] = 1;
	v->nq++;
}

static int vp_create(struct kvtier *t)
{
	struct vpool *v = calloc(1, sizeof(*v));
	uint64_t n = t->npages;

	if (!v)
		return -ENOMEM;
	t->st = v;
	v->prev = malloc(n * sizeof(*v->prev));
	v->next = malloc(n * sizeof(*v->next));
	v->owner = malloc(n * sizeof(*v->owner));
	v->inq = calloc(n, 1);
	v->upin = calloc(t->nunits, sizeof(*v->upin));
	v->un = calloc(t->nunits, 1);
	v->upg = malloc((uint64_t)t->nunits * t->ppb * sizeof(*v->upg));
	if (!v->prev || !v->next || !v->owner || !v->inq || !v->upin || !v->un || !v->upg)
		return -ENOMEM;
	v->head = v->tail = KV_NONE;
	for (uint64_t p = 0; p < n; p++) {
		v->owner[p] = KV_NONE;
		vq_append(v, (uint32_t)p);
	}
	return 0;
}

static void vp_destroy(struct kvtier *t)
{
	struct vpool *v = t->st;

	if (!v)
		return;
	free(v->prev);
	free(v->next);
	free(v->owner);
	free(v->inq);
	free(v->upin);
	free(v->un);
	free(v->upg);
	free(v);
	t->st = NULL;
}

/* a popped page belonged to a cached unit: the unit leaves the cache, its
 * other pages stay in the queue as plain free pages */
static void vp_evict(struct kvtier *t, struct vpool *v, uint32_t u)
{
	uint32_t *pg = &v->upg[(uint64_t)u * t->ppb];

	for (unsigned i = 0; i < v->un[u]; i++)
		v->owner[pg[i]] = KV_NONE;
	v->un[u] = 0;
	t->evictions++;
	kvtier_victim(t, u);
}

static int vp_alloc(struct kvtier *t, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	struct vpool *v = t->st;
	unsigned k = 0;
	bool ran = false;

	if (v->nq < n)
		return -ENOMEM;
	if (n > max)		/* worst case: one extent per page */
		return -ENOSPC;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t p = v->head;

		vq_del(v, p);
		if (v->owner[p] != KV_NONE) {
			vp_evict(t, v, v->owner[p]);
			ran = true;
		}
		ext_push(ext, &k, max, p);
	}
	t->evict_runs += ran;
	return (int)k;
}

static int vp_add(struct kvtier *t, uint32_t unit, const struct hkv_extent *ext, unsigned n)
{
	struct vpool *v = t->st;
	uint32_t *pg = &v->upg[(uint64_t)unit * t->ppb];
	unsigned k = 0;

	if (v->un[unit])
		return -EEXIST;
	for (unsigned i = 0; i < n; i++)
		for (uint64_t p = ext[i].start; p < ext[i].start + ext[i].len; p++) {
			if (k == t->ppb || v->inq[p])
				return -EINVAL;
			pg[k++] = (uint32_t)p;
			v->owner[p] = unit;
		}
	v->un[unit] = (uint8_t)k;
	v->upin[unit] = 0;
	for (unsigned j = k; j-- > 0;)	/* cached, free: to the tail, last first */
		vq_append(v, pg[j]);
	return 0;
}

static int vp_pin(struct kvtier *t, const uint32_t *u, unsigned n)
{
	struct vpool *v = t->st;

	for (unsigned i = 0; i < n; i++) {
		uint32_t *pg = &v->upg[(uint64_t)u[i] * t->ppb];

		if (!v->un[u[i]])
			return -ENOENT;
		if (!v->upin[u[i]]++)
			for (unsigned j = 0; j < v->un[u[i]]; j++)
				vq_del(v, pg[j]);
	}
	return 0;
}

/* the last pin gone: the unit's blocks go to the tail, last block first */
static int vp_unpin(struct kvtier *t, const uint32_t *u, unsigned n)
{
	struct vpool *v = t->st;

	for (unsigned i = 0; i < n; i++) {
		uint32_t *pg = &v->upg[(uint64_t)u[i] * t->ppb];

		if (!v->un[u[i]] || !v->upin[u[i]])
			return -EINVAL;
		if (!--v->upin[u[i]])
			for (unsigned j = v->un[u[i]]; j-- > 0;)
				vq_append(v, pg[j]);
	}
	return 0;
}

/* recency is the order blocks were freed in: nothing to do */
static int vp_touch(struct kvtier *t, const uint32_t *u, unsigned n)
{
	struct vpool *v = t->st;

	for (unsigned i = 0; i < n; i++)
		if (!v->un[u[i]])
			return -ENOENT;
	return 0;
}

static int vp_free(struct kvtier *t, const struct hkv_extent *ext, unsigned n)
{
	struct vpool *v = t->st;

	for (unsigned i = n; i-- > 0;)
		for (uint64_t p = ext[i].start + ext[i].len; p-- > ext[i].start;) {
			if (v->inq[p] || v->owner[p] != KV_NONE)
				return -EINVAL;
			vq_append(v, (uint32_t)p);
		}
	return 0;
}

const struct kvtier_ops kv_vllm_pool = {
	.name = "vllm block pool: FIFO free queue, cached blocks evicted when popped",
	.create = vp_create, .destroy = vp_destroy, .alloc = vp_alloc, .add = vp_add,
	.pin = vp_pin, .unpin = vp_unpin, .touch = vp_touch, .free = vp_free,
};
