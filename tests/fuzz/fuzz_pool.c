// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fuzz_pool.c - libFuzzer target: the input is a pool shape and a program
 * of calls (alloc, alloc_lanes, free of live, partial, overlapping or
 * garbage extents, units with pins, splits, removal and eviction, free_slots,
 * stats). A byte-per-page shadow checks every answer; after every call the
 * full invariant check must hold and a failed call must have changed
 * nothing. Any violation aborts, which libFuzzer reports with the input.
 *
 *   make fuzz && build/fuzz/fuzz_pool -max_total_time=60 build/fuzz/corpus
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define MAXP	2048
#define MAXE	16

struct fz {
	const uint8_t *d;
	size_t n, i;
	struct hkv_pool *pool;
	uint64_t npages;
	unsigned nlanes;
	uint8_t shadow[MAXP];		/* 0 free, 1 allocated, 2 in a unit */
	struct hkv_extent live[256];
	unsigned nlive;
	uint64_t units[64];
	unsigned nunits;
};

static unsigned byte(struct fz *f)
{
	return f->i < f->n ? f->d[f->i++] : 0;
}

static unsigned word(struct fz *f)
{
	return byte(f) | byte(f) << 8;
}

#define MUST(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "fuzz_pool: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();					\
		}							\
	} while (0)

static uint64_t shadow_free(const struct fz *f)
{
	uint64_t p, n = 0;

	for (p = 0; p < f->npages; p++)
		n += !f->shadow[p];
	return n;
}

/* the full check walks every bin: every 64th call and at the end */
static void check(struct fz *f, bool full)
{
	MUST(hkv_available(f->pool) == shadow_free(f));
	if (full)
		MUST(hkv_check(f->pool) == 0);
}

/* unit pages evicted behind the shadow's back are free now: a one-page
 * free tells (-EINVAL: free; -EBUSY: still in a unit) and changes nothing */
static void reconcile_units(struct fz *f)
{
	for (uint64_t p = 0; p < f->npages; p++) {
		if (f->shadow[p] == 2) {
			struct hkv_extent one = { p, 1 };
			int r = hkv_free(f->pool, &one, 1);

			MUST(r == -EINVAL || r == -EBUSY);
			if (r == -EINVAL)
				f->shadow[p] = 0;
		}
	}
}

static void op_alloc(struct fz *f)
{
	struct hkv_extent e[MAXE];
	unsigned lane = byte(f) % (f->nlanes + 1), flags = byte(f) & 3, max = byte(f) % MAXE;
	uint64_t n = 1 + word(f) % (f->npages + 8), sum = 0, before = hkv_available(f->pool);
	int k, j;

	k = hkv_alloc(f->pool, n, lane == f->nlanes ? HKV_LANE_ANY : lane, flags, e, max);
	if (k < 0) {
		MUST(k == -ENOMEM || k == -ENOSPC);
		/* HKV_LANE_ANY fails for want of pages only when the pool lacks them */
		if (k == -ENOMEM && lane == f->nlanes && !flags)
			MUST(before < n);
		if (!(flags & HKV_ALLOC_EVICT))
			MUST(hkv_available(f->pool) == before);
		reconcile_units(f);
		return;
	}
	MUST(k >= 1 && (unsigned)k <= max);
	for (j = 0; j < k; j++) {
		for (uint64_t p = e[j].start; p < e[j].start + e[j].len; p++) {
			/* a unit page only if HKV_ALLOC_EVICT evicted its unit */
			MUST(p < f->npages && (f->shadow[p] == 0 ||
					       (f->shadow[p] == 2 && (flags & HKV_ALLOC_EVICT))));
			f->shadow[p] = 1;
		}
		sum += e[j].len;
		if (f->nlive < HKV_ARRAY_SIZE(f->live)) {
			f->live[f->nlive++] = e[j];
		} else {
			MUST(hkv_free(f->pool, &e[j], 1) == 0);
			memset(f->shadow + e[j].start, 0, e[j].len);
		}
	}
	MUST(sum == n);
	reconcile_units(f);
}

/* free: a live extent, part of it, or garbage; the result must match */
static void op_free(struct fz *f)
{
	struct hkv_extent e[4];
	unsigned cnt = 1 + byte(f) % 4, j;
	uint64_t before = hkv_available(f->pool);
	bool ok = true;
	int ret;

	for (j = 0; j < cnt; j++) {
		if (f->nlive && byte(f) % 4) {
			struct hkv_extent l = f->live[byte(f) % f->nlive];
			uint64_t cut = word(f) % l.len;

			e[j] = (struct hkv_extent){ l.start + cut, l.len - cut };
		} else {
			e[j] = (struct hkv_extent){ word(f), byte(f) };
		}
	}
	/* the expected verdict from the shadow: all allocated, none twice */
	for (j = 0; j < cnt && ok; j++) {
		ok = e[j].len && e[j].start < f->npages && e[j].len <= f->npages - e[j].start;
		for (uint64_t p = e[j].start; ok && p < e[j].start + e[j].len; p++) {
			ok = f->shadow[p] == 1;
			f->shadow[p] = ok ? 3 : f->shadow[p];	/* 3: freed in this call */
		}
	}
	for (uint64_t p = 0; p < f->npages; p++)
		if (f->shadow[p] == 3)
			f->shadow[p] = ok ? 0 : 1;
	ret = hkv_free(f->pool, e, cnt);
	MUST(ok ? ret == 0 : (ret == -EINVAL || ret == -EBUSY));
	if (!ok)
		MUST(hkv_available(f->pool) == before);
	if (ok) {	/* drop freed live extents (they may be partly freed: forget them) */
		unsigned w = 0;

		for (j = 0; j < f->nlive; j++) {
			bool any = false;

			for (uint64_t p = f->live[j].start; p < f->live[j].start + f->live[j].len; p++)
				any |= f->shadow[p] == 0;
			if (!any)
				f->live[w++] = f->live[j];
		}
		f->nlive = w;
	}
}

static void op_unit(struct fz *f)
{
	unsigned what = byte(f) % 6;
	uint64_t id = byte(f) % 8;
	int ret;

	switch (what) {
	case 0:	/* a live extent becomes a unit, if it is wholly allocated */
		if (!f->nlive)
			return;
		{
			unsigned j = byte(f) % f->nlive;
			struct hkv_extent e = f->live[j];
			bool all = true;

			for (uint64_t p = e.start; p < e.start + e.len; p++)
				all &= f->shadow[p] == 1;
			ret = hkv_unit_add(f->pool, id, &e, 1);
			MUST(ret == 0 || ret == -EEXIST || (!all && ret == -EINVAL));
			if (ret == 0) {
				MUST(all);
				for (uint64_t p = e.start; p < e.start + e.len; p++)
					f->shadow[p] = 2;
				f->live[j] = f->live[--f->nlive];
			}
		}
		break;
	case 1:
		ret = hkv_unit_pin(f->pool, id);
		MUST(ret == 0 || ret == -ENOENT);
		break;
	case 2:
		ret = hkv_unit_unpin(f->pool, id);
		MUST(ret == 0 || ret == -ENOENT || ret == -EINVAL);
		break;
	case 3:
		ret = hkv_unit_split(f->pool, id, byte(f) % 4, 8 + byte(f) % 8);
		MUST(ret == 0 || ret == -ENOENT || ret == -EINVAL || ret == -EEXIST);
		break;
	case 4:	/* remove and free; the shadow learns from available() */
	case 5: {
		uint64_t before = hkv_available(f->pool);
		int64_t got;

		if (what == 4) {
			ret = hkv_unit_remove(f->pool, id + (byte(f) & 8), HKV_UNIT_FREE);
			MUST(ret == 0 || ret == -ENOENT || ret == -EBUSY);
		} else {
			got = hkv_evict(f->pool, before + word(f) % 64);
			MUST(got >= 0 && hkv_available(f->pool) == before + (uint64_t)got);
		}
		reconcile_units(f);
		break;
	}
	}
}

static void op_views(struct fz *f)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	const uint64_t *slots;
	uint64_t n, p, j = 0;

	MUST(hkv_stats(f->pool, &st) == 0 && st.free_pages == shadow_free(f));
	MUST(hkv_free_slots(f->pool, &slots, &n) == 0 && n == st.free_pages);
	for (p = 0; p < f->npages; p++)
		if (!f->shadow[p])
			MUST(slots[j++] == p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz *f = calloc(1, sizeof(*f));
	struct hkv_pool_opts o = { .sz = sizeof(o) };

	f->d = data;
	f->n = size;
	o.npages = f->npages = 1 + word(f) % MAXP;
	o.nlanes = f->nlanes = 1 + byte(f) % 4;
	if (o.nlanes > o.npages)
		o.nlanes = f->nlanes = 1;
	o.evict_window = byte(f) % 10;
	if (byte(f) & 1) {
		o.free_room_low = 0.05;
		o.free_room_high = 0.15;
	}
	MUST(hkv_pool_create(&o, &f->pool) == 0);
	for (unsigned ops = 0; f->i < f->n; ops++) {
		switch (byte(f) % 8) {
		case 0: case 1: case 2: op_alloc(f); break;
		case 3: case 4: op_free(f); break;
		case 5: case 6: op_unit(f); break;
		case 7: op_views(f); break;
		}
		check(f, ops % 64 == 0);
	}
	check(f, true);
	hkv_pool_destroy(f->pool);
	free(f);
	return 0;
}
