// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * replay.c - replay a trace on one allocator, timing each alloc and free
 * call; keep a shadow bitmap that checks every answer (no page handed out
 * twice, every page asked for) and yields the same fragmentation figures
 * for every allocator; sample them over time.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "workload.h"

const uint32_t ufi_r[UFI_N] = { 16, 64, 256, 1024 };

int rc_init(struct runctx *rc, const struct workload *w, struct result *r,
	    uint32_t nrec, uint32_t max_size)
{
	size_t est = w->ops + 16;

	memset(rc, 0, sizeof(*rc));
	rc->w = w;
	rc->r = r;
	rc->nrec = nrec;
	rc->maxext = max_size + 1;
	rc->shadow = calloc((w->npages + 63) / 64, sizeof(*rc->shadow));
	rc->rec = calloc(nrec ? nrec : 1, sizeof(*rc->rec));
	rc->ext = malloc(rc->maxext * sizeof(*rc->ext));
	rc->tail = malloc(rc->maxext * sizeof(*rc->tail));
	rc->hist = calloc(rc->maxext + 1, sizeof(*rc->hist));
	rc->tl_cap = w->interval ? w->ops / w->interval + 2 : 0;
	r->tl = calloc(rc->tl_cap + 1, sizeof(*r->tl));
	if (!rc->shadow || !rc->rec || !rc->ext || !rc->tail || !rc->hist || !r->tl ||
	    samples_init(&r->alloc, est) || samples_init(&r->free, est)) {
		rc_fini(rc);
		return -ENOMEM;
	}
	return 0;
}

/* the record table grows when the run decides the allocations (LRU) */
int rc_grow(struct runctx *rc, uint32_t id)
{
	uint32_t n = rc->nrec;
	struct rec *x;

	if (id < n)
		return 0;
	while (n <= id)
		n = n ? 2 * n : 1024;
	x = realloc(rc->rec, (size_t)n * sizeof(*x));
	if (!x)
		return -ENOMEM;
	memset(x + rc->nrec, 0, (size_t)(n - rc->nrec) * sizeof(*x));
	rc->rec = x;
	rc->nrec = n;
	return 0;
}

void rc_fini(struct runctx *rc)
{
	if (rc->rec)
		for (uint32_t i = 0; i < rc->nrec; i++)
			if (rc->rec[i].n > 1)
				free(rc->rec[i].many);
	free(rc->rec);
	free(rc->shadow);
	free(rc->ext);
	free(rc->tail);
	free(rc->hist);
	memset(rc, 0, sizeof(*rc));
}

void result_free(struct result *r)
{
	samples_free(&r->alloc);
	samples_free(&r->free);
	free(r->tl);
	r->tl = NULL;
}

static int rec_set(struct rec *x, const struct hkv_extent *ext, unsigned n)
{
	if (x->n > 1)
		free(x->many);
	x->many = NULL;
	x->n = n;
	if (n == 1) {
		x->one = ext[0];
		return 0;
	}
	x->many = malloc(n * sizeof(*ext));
	if (!x->many)
		return -ENOMEM;
	memcpy(x->many, ext, n * sizeof(*ext));
	return 0;
}

int rc_alloc_done(struct runctx *rc, uint32_t id, int k, uint32_t pages,
		  bool measuring)
{
	uint64_t sum = 0;

	if (k <= 0 || (unsigned)k > pages || id >= rc->nrec) {
		fprintf(stderr, "hkv-bench: %s: alloc of %u pages returned %d\n",
			rc->r->name, pages, k);
		return k < 0 ? k : -EUCLEAN;
	}
	for (int i = 0; i < k; i++) {
		const struct hkv_extent *e = &rc->ext[i];

		if (!e->len || e->start + e->len > rc->w->npages ||
		    !bits_all(rc->shadow, e->start, e->len, false)) {
			fprintf(stderr, "hkv-bench: %s: bad extent [%llu, +%llu) for %u pages\n",
				rc->r->name, (unsigned long long)e->start,
				(unsigned long long)e->len, pages);
			return -EUCLEAN;
		}
		bits_fill(rc->shadow, e->start, e->len, true);
		sum += e->len;
	}
	if (sum != pages) {
		fprintf(stderr, "hkv-bench: %s: got %llu pages for %u\n", rc->r->name,
			(unsigned long long)sum, pages);
		return -EUCLEAN;
	}
	if (measuring) {
		rc->hist[k]++;
		rc->ext_sum += k;
		rc->multi += k > 1;
		rc->tl_allocs++;
		rc->tl_ext += k;
		rc->r->allocs++;
	}
	return rec_set(&rc->rec[id], rc->ext, k);
}

unsigned rc_tail(struct runctx *rc, uint32_t id, uint32_t keep)
{
	const struct rec *x = &rc->rec[id];
	const struct hkv_extent *e = rec_ext(x);
	uint64_t cum = 0;
	unsigned j = 0, n = 0;

	while (j < x->n && cum + e[j].len <= keep)
		cum += e[j++].len;
	if (j == x->n)
		return 0;
	rc->tail[n++] = (struct hkv_extent){ e[j].start + (keep - cum),
					     e[j].len - (keep - cum) };
	for (j++; j < x->n; j++)
		rc->tail[n++] = e[j];
	return n;
}

void rc_truncate(struct runctx *rc, uint32_t id, uint32_t keep)
{
	struct rec *x = &rc->rec[id];
	const struct hkv_extent *e = rec_ext(x);
	uint64_t cum = 0;
	unsigned j = 0;

	while (cum + e[j].len < keep)
		cum += e[j++].len;
	/* extent j ends the kept pages */
	memcpy(rc->ext, e, (j + 1) * sizeof(*e));
	rc->ext[j].len = keep - cum;
	rec_set(x, rc->ext, j + 1);	/* shrinking: n == 1 needs no memory */
}

void rc_release(struct runctx *rc, uint32_t id)
{
	struct rec *x = &rc->rec[id];

	if (x->n > 1)
		free(x->many);
	memset(x, 0, sizeof(*x));
}

int rc_freed(struct runctx *rc, const struct hkv_extent *ext, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (!bits_all(rc->shadow, ext[i].start, ext[i].len, true)) {
			fprintf(stderr, "hkv-bench: %s: freed pages that were not allocated\n",
				rc->r->name);
			return -EUCLEAN;
		}
		bits_fill(rc->shadow, ext[i].start, ext[i].len, false);
	}
	return 0;
}

static void frag_run(struct frag *f, uint64_t *usable, uint64_t run)
{
	if (!run)
		return;
	f->free_pages += run;
	f->free_extents++;
	if (run > f->largest)
		f->largest = run;
	for (int i = 0; i < UFI_N; i++)
		usable[i] += run / ufi_r[i] * ufi_r[i];
}

/**
 * frag_scan() - fragmentation of a shadow bitmap (1 = allocated)
 * @shadow: the bitmap
 * @npages: pages it covers
 * @f: receives free pages, free extents, largest, UFI(r)
 *
 * Scans every page: outside the timed calls only.
 */
void frag_scan(const uint64_t *shadow, uint64_t npages, struct frag *f)
{
	uint64_t usable[UFI_N] = { 0 }, run = 0;

	memset(f, 0, sizeof(*f));
	for (uint64_t w = 0; w < (npages + 63) / 64; w++) {
		uint64_t valid = npages - w * 64 >= 64 ? ~0ull : (1ull << (npages % 64)) - 1;
		uint64_t x = ~shadow[w] & valid;	/* 1 = free */
		unsigned p = 0;

		if (x == ~0ull) {
			run += 64;
			continue;
		}
		while (p < 64) {
			uint64_t y = x >> p;

			if (!y)
				break;
			if (!(y & 1)) {
				frag_run(f, usable, run);
				run = 0;
				p += __builtin_ctzll(y);
				continue;
			}
			unsigned o = __builtin_ctzll(~y);

			run += o;
			p += o;
		}
		if (p < 64 || !(x >> 63)) {	/* word ends allocated */
			frag_run(f, usable, run);
			run = 0;
		}
	}
	frag_run(f, usable, run);
	for (int i = 0; i < UFI_N; i++)
		f->ufi[i] = f->free_pages ?
			(double)(f->free_pages - usable[i]) / (double)f->free_pages : 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int rc_after_op(struct runctx *rc)
{
	struct result *r = rc->r;
	struct tpoint *p;
	size_t n;

	r->ops++;
	if (!rc->w->interval || r->ops % rc->w->interval || r->ntl >= rc->tl_cap)
		return 0;
	p = &r->tl[r->ntl++];
	p->op = r->ops;
	frag_scan(rc->shadow, rc->w->npages, &p->f);
	p->epa = rc->tl_allocs ? (double)rc->tl_ext / (double)rc->tl_allocs : 0;
	n = r->alloc.n - rc->tl_from;
	if (n) {
		uint32_t *tmp = malloc(n * sizeof(*tmp));

		if (!tmp)
			return -ENOMEM;
		memcpy(tmp, r->alloc.v + rc->tl_from, n * sizeof(*tmp));
		qsort(tmp, n, sizeof(*tmp), cmp_u32);
		p->alloc_p50 = tmp[n / 2] * timer_init()->ns_per_tick;
		free(tmp);
	}
	rc->tl_from = r->alloc.n;
	rc->tl_allocs = rc->tl_ext = 0;
	return 0;
}

void rc_finish(struct runctx *rc)
{
	struct result *r = rc->r;
	uint64_t want, cum = 0;

	frag_scan(rc->shadow, rc->w->npages, &r->end);
	samples_summarize(&r->alloc, &r->alloc_ns);
	samples_summarize(&r->free, &r->free_ns);
	r->epa_mean = r->allocs ? (double)rc->ext_sum / (double)r->allocs : 0;
	r->multi_share = r->allocs ? (double)rc->multi / (double)r->allocs : 0;
	want = (r->allocs * 99 + 99) / 100;
	for (unsigned k = 0; k <= rc->maxext; k++) {
		if (rc->hist[k])
			r->ext_max = k;
		if (cum < want && (cum += rc->hist[k]) >= want)
			r->epa_p99 = k;
	}
}

static int replay_op(const struct balloc_ops *a, void *st, struct runctx *rc,
		     const struct op *op, bool measuring, uint64_t overhead)
{
	const struct hkv_extent *e;
	unsigned n;
	uint64_t t0, t1;
	int k;

	if (op->kind == OP_ALLOC) {
		t0 = tick();
		k = a->alloc(st, op->pages, rc->ext, rc->maxext);
		t1 = tick();
		if (k == 0 && a->collect)
			k = a->collect(st, rc->ext, rc->maxext);
		if (measuring)
			samples_add(&rc->r->alloc, t0, t1, overhead);
		return rc_alloc_done(rc, op->id, k, op->pages, measuring);
	}
	if (op->kind == OP_PARTIAL) {
		n = rc_tail(rc, op->id, op->pages);
		e = rc->tail;
	} else {
		n = rc->rec[op->id].n;
		e = rec_ext(&rc->rec[op->id]);
	}
	t0 = tick();
	k = a->free(st, e, n);
	t1 = tick();
	if (k) {
		fprintf(stderr, "hkv-bench: %s: free returned %d\n", rc->r->name, k);
		return k;
	}
	if (measuring) {
		samples_add(&rc->r->free, t0, t1, overhead);
		rc->r->frees++;
	}
	k = rc_freed(rc, e, n);
	if (op->kind == OP_PARTIAL)
		rc_truncate(rc, op->id, op->pages);
	else
		rc_release(rc, op->id);
	return k;
}

/**
 * replay() - run a trace on one allocator
 * @a: the allocator
 * @w: the workload the trace came from
 * @t: the trace
 * @max_ops: measured ops to run (0 = all of them)
 * @r: receives the figures (r->name set by the caller)
 *
 * Return: 0, or -errno (allocator failure, a wrong answer: -EUCLEAN).
 */
int replay(const struct balloc_ops *a, const struct workload *w,
	   const struct trace *t, uint64_t max_ops, struct result *r)
{
	uint64_t overhead = timer_init()->overhead_ticks, t0 = now_ns();
	struct runctx rc;
	void *st = NULL;
	bool measuring = false;
	int err;

	err = rc_init(&rc, w, r, t->nallocs, t->max_size);
	if (err)
		return err;
	err = a->create(w->npages, &st);
	if (err) {
		fprintf(stderr, "hkv-bench: %s: create: %s\n", a->name, hkv_strerror(err));
		goto out_rc;
	}
	for (uint64_t i = 0; i < t->n && !err; i++) {
		if (!measuring && i >= t->measure_from) {
			measuring = true;
			if (a->measure)
				err = a->measure(st);
		}
		if (measuring && max_ops && r->ops >= max_ops)
			break;
		if (!err)
			err = replay_op(a, st, &rc, &t->op[i], measuring, overhead);
		if (!err && measuring)
			err = rc_after_op(&rc);
	}
	rc_finish(&rc);
	r->seconds = (now_ns() - t0) / 1e9;
	a->destroy(st);
out_rc:
	rc_fini(&rc);
	return err;
}

/* ---- hugekv as an allocator -------------------------------------------- */
struct hkv_pool *hkv_adapter_last_pool;
bool hkv_adapter_keep_pool;
static struct hkv_pool_opts adapter_opts;

static int ha_create(uint64_t npages, void **st)
{
	struct hkv_pool *pool;
	int err;

	adapter_opts.npages = npages;
	err = hkv_pool_create(&adapter_opts, &pool);
	if (err)
		return err;
	hkv_adapter_last_pool = pool;
	*st = pool;
	return 0;
}

static void ha_destroy(void *st)
{
	if (!hkv_adapter_keep_pool)
		hkv_pool_destroy(st);
}

static int ha_alloc(void *st, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	return hkv_alloc(st, n, 0, 0, ext, max);
}

static int ha_free(void *st, const struct hkv_extent *ext, unsigned n)
{
	return hkv_free(st, ext, n);
}

/**
 * hkv_adapter_ops() - hugekv behind the baselines' interface
 * @w: the workload (page size, backing, eviction window, watermarks)
 * @out: receives the ops
 *
 * One lane, no chunk cap: free-extent counts match the shadow bitmap's.
 *
 * Return: 0.
 */
int hkv_adapter_ops(const struct workload *w, struct balloc_ops *out)
{
	memset(&adapter_opts, 0, sizeof(adapter_opts));
	adapter_opts.sz = sizeof(adapter_opts);
	adapter_opts.page_bytes = w->page_bytes;
	adapter_opts.backing = w->page_bytes ? w->backing : HKV_BACKING_NONE;
	adapter_opts.numa_node = -1;
	adapter_opts.nlanes = 1;
	adapter_opts.evict_window = w->evict == EVICT_LRU ? 1 : 8;
	adapter_opts.free_room_low = w->room_low;
	adapter_opts.free_room_high = w->room_high;
	*out = (struct balloc_ops){
		.name = "hugekv",
		.create = ha_create,
		.destroy = ha_destroy,
		.alloc = ha_alloc,
		.free = ha_free,
	};
	return 0;
}
