// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * baselines.c - the allocator designs hugekv replaces, written as well as
 * their design allows, so the ratios measure the design and not the code:
 *
 * bitmap-firstfit: a free-page bitmap scanned word by word (with a hint at
 *	the lowest non-empty word) for the first free run that fits; the
 *	lowest free pages when no run fits.
 * sorted-scan: an unsorted free-slot array (frees appended) that is sorted
 *	(3-pass radix sort) and scanned for a contiguous run on every
 *	allocation; the lowest slots when none is found. It places pages
 *	exactly as bitmap-firstfit does, so its burn-in runs on the bitmap and
 *	only the measured ops pay for the sort.
 * token-freelist: a flat free list sliced from the front (O(1)), frees
 *	appended; no contiguity at all.
 * tlsf: the fast good-fit family hugekv must beat (tlsf.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"

#define NONE	UINT64_MAX

/* ---- bitmap first-fit (1 bit = free page) ------------------------------- */
struct ff {
	uint64_t *bits;
	uint64_t npages, nwords, lo, free;
};

static int ff_init(struct ff *f, uint64_t npages)
{
	f->npages = npages;
	f->nwords = (npages + 63) / 64;
	f->bits = calloc(f->nwords, sizeof(*f->bits));
	if (!f->bits)
		return -ENOMEM;
	bits_fill(f->bits, 0, npages, true);
	f->lo = 0;
	f->free = npages;
	return 0;
}

/* start of the first free run of at least n pages, or NONE */
static uint64_t ff_find(const struct ff *f, uint64_t n)
{
	uint64_t run = 0, start = 0;

	for (uint64_t w = f->lo; w < f->nwords; w++) {
		uint64_t x = f->bits[w];
		unsigned p = 0;

		if (!x) {
			run = 0;
			continue;
		}
		if (x == ~0ull) {
			if (!run)
				start = w * 64;
			run += 64;
			if (run >= n)
				return start;
			continue;
		}
		while (p < 64) {
			uint64_t y = x >> p;
			unsigned o;

			if (!y) {
				run = 0;
				break;
			}
			if (!(y & 1)) {
				run = 0;
				p += __builtin_ctzll(y);
				continue;
			}
			o = __builtin_ctzll(~y);	/* ~y has its top p bits set */
			if (!run)
				start = w * 64 + p;
			run += o;
			if (run >= n)
				return start;
			p += o;
		}
	}
	return NONE;
}

/* the lowest n free pages as extents (at most n of them); the caller
 * checked f->free >= n and that ext has room for n */
static int ff_take_lowest(struct ff *f, uint64_t n, struct hkv_extent *ext)
{
	unsigned k = 0;

	for (uint64_t w = f->lo; n && w < f->nwords; w++) {
		while (n && f->bits[w]) {
			uint64_t y = f->bits[w];
			unsigned p = __builtin_ctzll(y);
			uint64_t o = (~y >> p) ? (unsigned)__builtin_ctzll(~y >> p) : 64 - p;
			uint64_t s = w * 64 + p;

			if (o > n)
				o = n;
			if (k && ext[k - 1].start + ext[k - 1].len == s) {
				ext[k - 1].len += o;
			} else {
				ext[k++] = (struct hkv_extent){ s, o };
			}
			bits_fill(f->bits, s, o, false);
			n -= o;
		}
	}
	return (int)k;
}

static void ff_advance(struct ff *f)
{
	while (f->lo < f->nwords && !f->bits[f->lo])
		f->lo++;
}

static int ff_alloc(struct ff *f, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	uint64_t s;
	int k;

	if (!n || f->free < n)
		return n ? -ENOMEM : -EINVAL;
	if (!max)
		return -ENOSPC;
	s = ff_find(f, n);
	if (s != NONE) {
		bits_fill(f->bits, s, n, false);
		ext[0] = (struct hkv_extent){ s, n };
		k = 1;
	} else if (max < n) {
		return -ENOSPC;		/* worst case: n single pages */
	} else {
		k = ff_take_lowest(f, n, ext);
	}
	f->free -= n;
	ff_advance(f);
	return k;
}

static int ff_free(struct ff *f, const struct hkv_extent *ext, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		bits_fill(f->bits, ext[i].start, ext[i].len, true);
		f->free += ext[i].len;
		if (ext[i].start / 64 < f->lo)
			f->lo = ext[i].start / 64;
	}
	return 0;
}

static int bf_create(uint64_t npages, void **st)
{
	struct ff *f = calloc(1, sizeof(*f));
	int err;

	if (!f)
		return -ENOMEM;
	err = ff_init(f, npages);
	if (err) {
		free(f);
		return err;
	}
	*st = f;
	return 0;
}

static void bf_destroy(void *st)
{
	struct ff *f = st;

	if (f)
		free(f->bits);
	free(f);
}

static int bf_alloc(void *st, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	return ff_alloc(st, n, ext, max);
}

static int bf_free(void *st, const struct hkv_extent *ext, unsigned n)
{
	return ff_free(st, ext, n);
}

const struct balloc_ops bl_bitmap_firstfit = {
	.name = "bitmap-firstfit",
	.create = bf_create,
	.destroy = bf_destroy,
	.alloc = bf_alloc,
	.free = bf_free,
};

/* ---- sorted scan -------------------------------------------------------- */
struct ss {
	struct ff ff;		/* burn-in: same placement, bitmap speed */
	bool measuring;
	uint32_t *slot, *tmp;	/* free slots; radix scratch */
	uint64_t n;
};

static int ss_create(uint64_t npages, void **st)
{
	struct ss *s = calloc(1, sizeof(*s));

	if (!s || npages > UINT32_MAX)
		goto err_free;
	if (ff_init(&s->ff, npages))
		goto err_free;
	s->slot = malloc(npages * sizeof(*s->slot));
	s->tmp = malloc(npages * sizeof(*s->tmp));
	if (!s->slot || !s->tmp)
		goto err_arrays;
	*st = s;
	return 0;
err_arrays:
	free(s->slot);
	free(s->tmp);
	free(s->ff.bits);
err_free:
	free(s);
	return -ENOMEM;
}

static void ss_destroy(void *st)
{
	struct ss *s = st;

	if (!s)
		return;
	free(s->slot);
	free(s->tmp);
	free(s->ff.bits);
	free(s);
}

/* the free-slot array the engines keep: in address order after burn-in */
static int ss_measure(void *st)
{
	struct ss *s = st;

	s->n = 0;
	for (uint64_t p = 0; p < s->ff.npages; p++)
		if (s->ff.bits[p / 64] >> (p % 64) & 1)
			s->slot[s->n++] = (uint32_t)p;
	s->measuring = true;
	return 0;
}

/* 3 passes of 11 bits: the fastest honest sort of 32-bit slot ids */
static void ss_sort(struct ss *s)
{
	uint32_t *a = s->slot, *b = s->tmp, *t;
	static uint32_t cnt[2048];

	for (int shift = 0; shift < 33; shift += 11) {
		uint32_t sum = 0;

		memset(cnt, 0, sizeof(cnt));
		for (uint64_t i = 0; i < s->n; i++)
			cnt[(a[i] >> shift) & 2047]++;
		for (int k = 0; k < 2048; k++) {
			uint32_t c = cnt[k];

			cnt[k] = sum;
			sum += c;
		}
		for (uint64_t i = 0; i < s->n; i++)
			b[cnt[(a[i] >> shift) & 2047]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	/* odd pass count: the result sits in the scratch array */
	s->tmp = s->slot;
	s->slot = a;
}

static int ss_alloc(void *st, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	struct ss *s = st;
	uint64_t i, run = 1, at = UINT64_MAX;
	unsigned k = 0;

	if (!s->measuring)
		return ff_alloc(&s->ff, n, ext, max);
	if (!n || s->n < n)
		return n ? -ENOMEM : -EINVAL;
	if (max < n)
		return -ENOSPC;
	ss_sort(s);
	for (i = 1; i < s->n && run < n; i++)
		run = s->slot[i] == s->slot[i - 1] + 1 ? run + 1 : 1;
	if (run >= n)
		at = i - n;
	if (at != UINT64_MAX) {
		ext[k++] = (struct hkv_extent){ s->slot[at], n };
	} else {
		at = 0;
		for (i = 0; i < n; i++) {
			if (k && ext[k - 1].start + ext[k - 1].len == s->slot[i])
				ext[k - 1].len++;
			else
				ext[k++] = (struct hkv_extent){ s->slot[i], 1 };
		}
	}
	memmove(s->slot + at, s->slot + at + n, (s->n - at - n) * sizeof(*s->slot));
	s->n -= n;
	return (int)k;
}

static int ss_free(void *st, const struct hkv_extent *ext, unsigned n)
{
	struct ss *s = st;

	if (!s->measuring)
		return ff_free(&s->ff, ext, n);
	for (unsigned i = 0; i < n; i++)
		for (uint64_t p = ext[i].start; p < ext[i].start + ext[i].len; p++)
			s->slot[s->n++] = (uint32_t)p;
	return 0;
}

const struct balloc_ops bl_sorted_scan = {
	.name = "sorted-scan",
	.default_ops = 2000,
	.create = ss_create,
	.destroy = ss_destroy,
	.alloc = ss_alloc,
	.free = ss_free,
	.measure = ss_measure,
};

/* ---- token free list ---------------------------------------------------- */
struct tf {
	uint32_t *id;
	uint64_t cap, head, tail;
	const uint32_t *last;	/* the last slice handed out */
	uint32_t nlast;
};

static int tf_create(uint64_t npages, void **st)
{
	struct tf *t = calloc(1, sizeof(*t));

	if (!t || npages > UINT32_MAX)
		goto err_free;
	t->cap = 2 * npages;
	t->id = malloc(t->cap * sizeof(*t->id));
	if (!t->id)
		goto err_free;
	for (uint64_t p = 0; p < npages; p++)
		t->id[p] = (uint32_t)p;
	t->tail = npages;
	*st = t;
	return 0;
err_free:
	free(t);
	return -ENOMEM;
}

static void tf_destroy(void *st)
{
	struct tf *t = st;

	if (t)
		free(t->id);
	free(t);
}

/* the slice is the allocation; extents are counted by collect() */
static int tf_alloc(void *st, uint32_t n, struct hkv_extent *ext, unsigned max)
{
	struct tf *t = st;

	(void)ext;
	(void)max;
	if (!n || t->tail - t->head < n)
		return n ? -ENOMEM : -EINVAL;
	t->last = t->id + t->head;
	t->nlast = n;
	t->head += n;
	return 0;
}

static int tf_collect(void *st, struct hkv_extent *ext, unsigned max)
{
	struct tf *t = st;
	unsigned k = 0;

	for (uint32_t i = 0; i < t->nlast; i++) {
		if (k && ext[k - 1].start + ext[k - 1].len == t->last[i]) {
			ext[k - 1].len++;
		} else {
			if (k == max)
				return -ENOSPC;
			ext[k++] = (struct hkv_extent){ t->last[i], 1 };
		}
	}
	return (int)k;
}

static int tf_free(void *st, const struct hkv_extent *ext, unsigned n)
{
	struct tf *t = st;
	uint64_t pages = 0;

	for (unsigned i = 0; i < n; i++)
		pages += ext[i].len;
	if (t->tail + pages > t->cap) {		/* amortized compaction */
		memmove(t->id, t->id + t->head, (t->tail - t->head) * sizeof(*t->id));
		t->tail -= t->head;
		t->head = 0;
	}
	for (unsigned i = 0; i < n; i++)
		for (uint64_t p = ext[i].start; p < ext[i].start + ext[i].len; p++)
			t->id[t->tail++] = (uint32_t)p;
	return 0;
}

const struct balloc_ops bl_token_freelist = {
	.name = "token-freelist",
	.create = tf_create,
	.destroy = tf_destroy,
	.alloc = tf_alloc,
	.collect = tf_collect,
	.free = tf_free,
};

const struct balloc_ops *const baselines[] = {
	&bl_sorted_scan, &bl_token_freelist, &bl_bitmap_firstfit, &bl_tlsf, NULL,
};

const struct balloc_ops *baseline_find(const char *name)
{
	for (unsigned i = 0; baselines[i]; i++)
		if (!strcmp(baselines[i]->name, name))
			return baselines[i];
	return NULL;
}
