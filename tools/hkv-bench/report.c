// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * report.c - the churn results as a table and as one JSON object (shape in
 * Kbuild-docs/dev-tools/hkv-bench.rst; keep it stable: scripts/bench-check
 * and scripts/plot-bench read it).
 */
#include "churn.h"

static double ratio(double base, double ours)
{
	return ours > 0 ? base / ours : 0;
}

/* one allocator's row: the text table and its JSON members */
#define R_COL(m, key, type, head, fmt)	COL(struct result, m, key, type, head, fmt)
static const struct col result_cols[] = {
	R_COL(name, NULL, COL_STR, "allocator", "%-16s"),
	R_COL(ops, "ops", COL_U64, "ops", "%8llu"),
	R_COL(allocs, "allocs", COL_U64, NULL, NULL),
	R_COL(frees, "frees", COL_U64, NULL, NULL),
	COL_LAT_TEXT(struct result, alloc_ns, "alloc p50"),
	R_COL(alloc_ns.max, NULL, COL_DBL, "max ns", "%10.0f"),
	R_COL(free_ns.p50, NULL, COL_DBL, "free p50", "%8.0f"),
	R_COL(free_ns.p99, NULL, COL_DBL, "p99", "%8.0f"),
	R_COL(alloc_ns, "alloc_ns", COL_LAT, NULL, NULL),
	R_COL(free_ns, "free_ns", COL_LAT, NULL, NULL),
	R_COL(epa_mean, "extents_per_alloc", COL_DBL, "ext/al", "%7.3f"),
	R_COL(epa_p99, "extents_per_alloc_p99", COL_DBL, "p99", "%5.0f"),
	R_COL(ext_max, "extents_per_alloc_max", COL_U64, NULL, NULL),
	COL_PCT(struct result, multi_share, "multi_extent_share", "multi", "%6.1f%%"),
	R_COL(end.free_pages, "free_pages", COL_U64, NULL, NULL),
	R_COL(end.free_extents, "free_extents", COL_U64, "free ext", "%8llu"),
	R_COL(end.largest, "largest_free_run", COL_U64, "largest", "%8llu"),
	R_COL(end.ufi[1], NULL, COL_DBL, "UFI64", "%6.3f"),
};

/* hugekv's result with the medians of its runs */
static struct result hugekv_row(const struct churn *c)
{
	struct result h = c->hkv[0];

	h.alloc_ns = c->alloc_med;
	h.free_ns = c->free_med;
	return h;
}

/* planned eviction (churn --watermarks): the pool's eviction runs */
static double wm_runs_per_k(const struct result *h)
{
	return h->allocs ? 1000.0 * h->evict_runs / h->allocs : 0;
}

static double wm_units_per_run(const struct result *h)
{
	return h->evict_runs ? (double)h->evictions / h->evict_runs : 0;
}

/**
 * report_text() - the summary table and hugekv's ratios
 * @c: a finished run
 * @f: where to print
 */
void report_text(const struct churn *c, FILE *f)
{
	const struct timer_info *ti = timer_init();
	const struct result *h = &c->hkv[0];
	struct result h_row;
	char pages[32];

	fprintf(f, "churn: %s pages of %llu KiB (%.1f GiB), occupancy %.3f, %s victims, "
		"split %.2f, burn-in %.1fx, sizes %s (mean %.1f pages)%s\n",
		fmt_count(c->w.npages, pages, sizeof(pages)),
		(unsigned long long)(c->page_size >> 10),
		c->w.npages * (double)c->page_size / (1 << 30), c->w.occupancy,
		evict_name(c->w.evict), c->w.split_share, c->w.burnin, c->w.sizes.name,
		c->w.sizes.mean, c->w.page_bytes ? ", memory pool" : ", index-only pool");
	fprintf(f, "measured: %llu ops (%llu allocs, %llu frees) after %llu burn-in ops; "
		"hugekv: median of %u runs\ntimer: %s, %.3f ns/tick, resolution %.1f ns, "
		"%.1f ns overhead subtracted from each call\n\n",
		(unsigned long long)h->ops, (unsigned long long)h->allocs,
		(unsigned long long)h->frees, (unsigned long long)c->t.measure_from,
		c->repeat, ti->source, ti->ns_per_tick, ti->resolution_ticks * ti->ns_per_tick,
		ti->overhead_ticks * ti->ns_per_tick);
	if (c->w.evict != EVICT_RANDOM && c->w.room_low > 0)
		fprintf(f, "planned eviction: the pool keeps %.1f-%.1f %% free (evict_window %d) "
			"inside hkv_alloc; %.2f eviction runs per 1000 allocs, %.1f units per "
			"run, %llu allocs failed\n\n", 100 * c->w.room_low, 100 * c->w.room_high,
			c->w.evict == EVICT_LRU ? 1 : 8, wm_runs_per_k(h), wm_units_per_run(h),
			(unsigned long long)h->failures);
	else if (c->w.evict != EVICT_RANDOM)
		fprintf(f, "hugekv's frees are hkv_evict() calls (evict_window %d) or unit split + "
			"remove; the baselines replay the victims it chose\n\n",
			c->w.evict == EVICT_LRU ? 1 : 8);
	cols_head(f, result_cols, NCOLS(result_cols));
	h_row = hugekv_row(c);
	cols_text(f, &h_row, result_cols, NCOLS(result_cols));
	for (unsigned b = 0; b < c->nbl; b++)
		cols_text(f, &c->blr[b], result_cols, NCOLS(result_cols));
	if (c->nbl)
		fprintf(f, "\nhugekv vs baseline (baseline / hugekv; > 1 = hugekv better):\n");
	for (unsigned b = 0; b < c->nbl; b++) {
		const struct result *r = &c->blr[b];

		fprintf(f, "  %-16s alloc p50 %9.1fx  p99 %9.1fx  free p50 %7.1fx  "
			"extents/alloc %6.1fx  (%llu ops)\n", r->name,
			ratio(r->alloc_ns.p50, c->alloc_med.p50),
			ratio(r->alloc_ns.p99, c->alloc_med.p99),
			ratio(r->free_ns.p50, c->free_med.p50),
			ratio(r->epa_mean, h->epa_mean), (unsigned long long)r->ops);
	}
}

static void json_ufi(struct json *j, const struct frag *fr)
{
	char key[16];

	json_obj(j, "ufi");
	for (int i = 0; i < UFI_N; i++) {
		snprintf(key, sizeof(key), "%u", ufi_r[i]);
		json_dbl(j, key, fr->ufi[i]);
	}
	json_obj_end(j);
}

/* latency quantiles for the CDF plots (scripts/plot-bench) */
static const double cdf_q[] = {
	0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95,
	0.97, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999, 1.0,
};

static void json_cdf(struct json *j, const struct result *r)
{
	json_obj(j, "cdf");
	json_arr(j, "q");
	for (size_t i = 0; i < HKV_BENCH_ARRAY(cdf_q); i++)
		json_dbl(j, NULL, cdf_q[i]);
	json_arr_end(j);
	for (int op = 0; op < 2; op++) {
		const struct samples *s = op ? &r->free : &r->alloc;

		json_arr(j, op ? "free_ns" : "alloc_ns");
		for (size_t i = 0; i < HKV_BENCH_ARRAY(cdf_q) && s->n; i++)
			json_dbl(j, NULL, samples_quantile_ns(s, cdf_q[i]));
		json_arr_end(j);
	}
	json_obj_end(j);
}

static void json_result(struct json *j, const struct result *r)
{
	cols_json(j, r, result_cols, NCOLS(result_cols));
	json_ufi(j, &r->end);
	json_dbl(j, "seconds", r->seconds);
	json_cdf(j, r);
}

static void json_timeline(struct json *j, const struct result *r)
{
	json_arr(j, "timeline");
	for (uint64_t i = 0; i < r->ntl; i++) {
		const struct tpoint *p = &r->tl[i];

		json_obj(j, NULL);
		json_u64(j, "op", p->op);
		json_u64(j, "free_extents", p->f.free_extents);
		json_u64(j, "largest_free_run", p->f.largest);
		json_dbl(j, "ufi64", p->f.ufi[1]);
		json_dbl(j, "extents_per_alloc", p->epa);
		json_dbl(j, "alloc_p50_ns", p->alloc_p50);
		json_obj_end(j);
	}
	json_arr_end(j);
}

static void json_baselines(struct json *j, const struct churn *c)
{
	const struct result *h = &c->hkv[0];

	json_obj(j, "baselines");
	for (unsigned b = 0; b < c->nbl; b++) {
		const struct result *r = &c->blr[b];

		json_obj(j, r->name);
		json_result(j, r);
		json_obj(j, "ratio");	/* baseline / hugekv */
		json_dbl(j, "alloc_p50", ratio(r->alloc_ns.p50, c->alloc_med.p50));
		json_dbl(j, "alloc_p99", ratio(r->alloc_ns.p99, c->alloc_med.p99));
		json_dbl(j, "free_p50", ratio(r->free_ns.p50, c->free_med.p50));
		json_dbl(j, "extents_per_alloc", ratio(r->epa_mean, h->epa_mean));
		json_obj_end(j);
		json_timeline(j, r);
		json_obj_end(j);
	}
	json_obj_end(j);
}

/**
 * report_json_body() - the churn fields, into an open JSON object
 * @c: a finished run
 * @j: the writer
 */
void report_json_body(const struct churn *c, struct json *j)
{
	const struct timer_info *ti = timer_init();
	const struct result *h = &c->hkv[0];
	struct result h_row;

	json_u64(j, "pages", c->w.npages);
	json_u64(j, "page_bytes", c->page_size);
	json_bool(j, "memory", c->w.page_bytes != 0);
	json_dbl(j, "occupancy", c->w.occupancy);
	json_str(j, "evict", evict_name(c->w.evict));
	json_str(j, "sizes", c->w.sizes.name);
	json_dbl(j, "mean_size", c->w.sizes.mean);
	json_dbl(j, "split_share", c->w.split_share);
	json_dbl(j, "burnin", c->w.burnin);
	json_u64(j, "burnin_ops", c->t.measure_from);
	json_u64(j, "seed", c->w.seed);
	json_u64(j, "repeat", c->repeat);
	json_obj(j, "timer");
	json_str(j, "source", ti->source);
	json_dbl(j, "ns_per_tick", ti->ns_per_tick);
	json_dbl(j, "overhead_ns", ti->overhead_ticks * ti->ns_per_tick);
	json_dbl(j, "resolution_ns", ti->resolution_ticks * ti->ns_per_tick);
	json_obj_end(j);
	h_row = hugekv_row(c);
	json_result(j, &h_row);
	json_arr(j, "runs");
	for (unsigned i = 0; i < c->repeat; i++) {
		json_obj(j, NULL);
		json_dbl(j, "alloc_p50", c->hkv[i].alloc_ns.p50);
		json_dbl(j, "alloc_p99", c->hkv[i].alloc_ns.p99);
		json_dbl(j, "free_p50", c->hkv[i].free_ns.p50);
		json_dbl(j, "free_p99", c->hkv[i].free_ns.p99);
		json_dbl(j, "seconds", c->hkv[i].seconds);
		json_obj_end(j);
	}
	json_arr_end(j);
	if (c->have_st) {
		json_obj(j, "hkv_stats");
		json_u64(j, "metadata_bytes", c->st.metadata_bytes);
		json_u64(j, "free_extents", c->st.free_extents);
		json_u64(j, "largest_free_extent", c->st.largest_free_extent);
		json_dbl(j, "extents_per_alloc", c->st.extents_per_alloc);
		json_obj_end(j);
	}
	if (c->w.room_low > 0) {
		json_obj(j, "watermarks");
		json_dbl(j, "free_room_low", c->w.room_low);
		json_dbl(j, "free_room_high", c->w.room_high);
		json_dbl(j, "remove_share", c->w.remove_share);
		json_dbl(j, "eviction_runs_per_1k_allocs", wm_runs_per_k(h));
		json_dbl(j, "units_per_run", wm_units_per_run(h));
		json_u64(j, "alloc_failures", h->failures);
		json_obj_end(j);
	}
	json_timeline(j, h);
	json_baselines(j, c);
	if (c->stats && hkv_adapter_last_pool) {	/* --stats: the pool's own dump */
		json_key(j, "pool_stats");
		hkv_stats_print(hkv_adapter_last_pool, j->f, HKV_PRINT_JSON);
	}
}
