// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stats_print.c - hkv_stats_print(): a text table for people, one JSON
 * object for programs. Both come from the same list of fields.
 */
#include "internal.h"
#include <stdio.h>

enum kind { U64, UINT, INT, DBL };

struct field {
	const char *name;
	enum kind kind;
	size_t off;
};

#define F(kind, name) { #name, kind, offsetof(struct hkv_stats, name) }

static const struct field fields[] = {
	F(U64, npages), F(U64, page_bytes), F(UINT, nlanes),
	F(U64, free_pages), F(U64, free_extents), F(U64, largest_free_extent),
	F(U64, units), F(U64, unit_pages), F(U64, pinned_units), F(U64, pinned_pages),
	F(U64, allocs), F(U64, alloc_failures), F(U64, frees), F(U64, extents_returned),
	F(U64, multi_extent_allocs), F(U64, pages_allocated), F(U64, pages_freed),
	F(U64, evictions), F(U64, evicted_pages), F(U64, eviction_runs),
	F(U64, evict_failures), F(DBL, extents_per_alloc), F(DBL, multi_extent_share),
	F(INT, backing), F(INT, backing_wanted), F(INT, numa_node),
	F(UINT, prefault_threads), F(UINT, flags), F(U64, arena_bytes),
	F(U64, arena_round_up_bytes), F(U64, prefault_ns), F(DBL, prefault_gbps),
	F(U64, misplaced_pages), F(UINT, fallbacks), F(U64, metadata_bytes),
	F(UINT, nregions), F(U64, served_calls), F(U64, bias_revocations),
	F(U64, deferred_frees), F(U64, deferred_free_errors), F(U64, alloc_failures_nospc),
	F(U64, evict_age_ns), F(U64, oldest_pin_ns),
};

/* a label as a JSON string (no control characters: hkv_pool_create()) */
static void print_label(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void print_hist(FILE *f, const char *name, const uint64_t *v, unsigned n)
{
	fprintf(f, ", \"%s\": [", name);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
	fputc(']', f);
}

static void print_value(FILE *f, const struct hkv_stats *st, const struct field *fd)
{
	const char *p = (const char *)st + fd->off;

	switch (fd->kind) {
	case U64: fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p); break;
	case UINT: fprintf(f, "%u", *(const unsigned *)p); break;
	case INT: fprintf(f, "%d", *(const int *)p); break;
	case DBL: fprintf(f, "%.4f", *(const double *)p); break;
	}
}

static void print_json(FILE *f, const struct hkv_stats *st, uint64_t id, const char *label)
{
	unsigned i, nl = HKV_MIN(st->nlanes, (unsigned)HKV_STATS_LANES);

	fprintf(f, "{\"pool\": %llu, \"label\": ", (unsigned long long)id);
	print_label(f, label);
	print_hist(f, "extents_hist", st->extents_hist, HKV_EXTENTS_HIST);
	print_hist(f, "evict_age_hist", st->evict_age_hist, HKV_AGE_HIST);
	for (i = 0; i < HKV_ARRAY_SIZE(fields); i++) {
		fprintf(f, ", \"%s\": ", fields[i].name);
		print_value(f, st, &fields[i]);
	}
	fprintf(f, ", \"backing_name\": \"%s\", \"backing_wanted_name\": \"%s\"",
		hkv_backing_name(st->backing), hkv_backing_name(st->backing_wanted));
	fprintf(f, ", \"ufi\": {");
	for (i = 0; i < HKV_UFI_SIZES; i++)
		fprintf(f, "%s\"%llu\": %.4f", i ? ", " : "", (unsigned long long)st->ufi_size[i],
			st->ufi[i]);
	fprintf(f, "}, \"lanes\": [");
	for (i = 0; i < nl; i++)
		fprintf(f, "%s{\"free_pages\": %llu, \"free_extents\": %llu, \"largest_free_extent\": %llu}",
			i ? ", " : "", (unsigned long long)st->lane_free_pages[i],
			(unsigned long long)st->lane_free_extents[i],
			(unsigned long long)st->lane_largest_free_extent[i]);
	fprintf(f, "], \"regions\": [");
	for (i = 0; i < HKV_MIN(st->nregions, (unsigned)HKV_STATS_REGIONS); i++) {
		const struct hkv_region_stats *r = &st->region[i];

		fprintf(f, "%s{\"node\": %d, \"hugepage_bytes\": %llu, \"wanted_bytes\": %llu, "
			"\"bytes\": %llu, \"prefault_ns\": %llu, \"misplaced_pages\": %llu, "
			"\"flags\": %u, \"fallback_errno\": %d}", i ? ", " : "", r->node,
			(unsigned long long)r->hugepage_bytes, (unsigned long long)r->wanted_bytes,
			(unsigned long long)r->bytes, (unsigned long long)r->prefault_ns,
			(unsigned long long)r->misplaced_pages, r->flags, r->fallback_errno);
	}
	fprintf(f, "]}\n");
}

static void print_text(FILE *f, const struct hkv_stats *st, uint64_t id, const char *label)
{
	unsigned i;

	fprintf(f, "hugekv pool %llu%s%s%s\n", (unsigned long long)id, *label ? " (" : "", label,
		*label ? ")" : "");
	for (i = 0; i < HKV_ARRAY_SIZE(fields); i++) {
		fprintf(f, "  %-24s ", fields[i].name);
		print_value(f, st, &fields[i]);
		if (fields[i].off == offsetof(struct hkv_stats, backing) ||
		    fields[i].off == offsetof(struct hkv_stats, backing_wanted))
			fprintf(f, " (%s)", hkv_backing_name(*(const int *)((const char *)st +
								       fields[i].off)));
		fputc('\n', f);
	}
	for (i = 0; i < HKV_UFI_SIZES; i++)
		fprintf(f, "  ufi(%-3llu)%-15s %.4f\n", (unsigned long long)st->ufi_size[i], "",
			st->ufi[i]);
	fprintf(f, "  %-24s", "extents_hist");
	for (i = 0; i < HKV_EXTENTS_HIST; i++)
		fprintf(f, " %llu", (unsigned long long)st->extents_hist[i]);
	fprintf(f, "  (1, 2, 3-4, 5-8, 9-16, more)\n  %-24s", "evict_age_hist");
	for (i = 0; i < HKV_AGE_HIST; i++)
		fprintf(f, " %llu", (unsigned long long)st->evict_age_hist[i]);
	fprintf(f, "  (10ms, 100ms, 1s, 10s, 1m, 10m, 1h, more)\n");
	for (i = 0; i < HKV_MIN(st->nlanes, (unsigned)HKV_STATS_LANES); i++)
		fprintf(f, "  lane %-3u free %llu pages in %llu extents, largest %llu\n", i,
			(unsigned long long)st->lane_free_pages[i],
			(unsigned long long)st->lane_free_extents[i],
			(unsigned long long)st->lane_largest_free_extent[i]);
	for (i = 0; i < HKV_MIN(st->nregions, (unsigned)HKV_STATS_REGIONS); i++)
		fprintf(f, "  region %-2u node %d, %llu bytes on %llu-byte pages (wanted %llu)%s\n",
			i, st->region[i].node, (unsigned long long)st->region[i].bytes,
			(unsigned long long)st->region[i].hugepage_bytes,
			(unsigned long long)st->region[i].wanted_bytes,
			st->region[i].flags & HKV_REGION_FALLBACK ? ", FALLBACK" : "");
}

HKV_API int hkv_stats_print(const struct hkv_pool *pool, FILE *f, unsigned flags)
{
	struct hkv_stats *st;
	int err;

	if (!pool || !f || (flags & ~HKV_PRINT_JSON))
		return -EINVAL;
	st = calloc(1, sizeof(*st));	/* large: keep it off small stacks */
	if (!st)
		return -ENOMEM;
	st->sz = sizeof(*st);
	err = hkv_stats(pool, st);
	if (!err) {
		if (flags & HKV_PRINT_JSON)
			print_json(f, st, pool->id, hkv_pool_label(pool));
		else
			print_text(f, st, pool->id, hkv_pool_label(pool));
		err = ferror(f) ? -EIO : 0;
	}
	free(st);
	return err;
}
