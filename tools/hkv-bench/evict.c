// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * evict.c - hkv-bench evict: planned eviction in a full cache.
 *
 * Every allocation (HKV_ALLOC_EVICT, heavy-tailed sizes) becomes a cache
 * unit; live units are touched at random (radix hits); the free-room
 * watermarks hold occupancy at the target. Per occupancy it runs four
 * configurations in the same process: victim window 1 (plain LRU) vs 8
 * (prefer cold units that border free extents), each without (low == high)
 * and with a watermark gap, and reports extents per allocation, the share
 * of multi-extent allocations, eviction runs, units per run and the latency
 * of hkv_alloc (eviction included), medians over --repeat seeds. The runs
 * are churn's LRU runs (lru.c) under the watermarks: one eviction code
 * path, with the shadow bitmap checking every answer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "churn.h"

struct ev_cfg {
	uint64_t npages, ops, warm, seed;
	double occ, gap, touch, remove;
	unsigned window;
	const struct sizes *sizes;
};

struct ev_res {
	double occ, gap;		/* the configuration */
	unsigned window;
	double epa, multi;		/* extents per allocation, multi-extent share */
	double runs_per_kalloc, units_per_run;
	uint64_t allocs, failures;
	struct lat lat;
};

#define EV_COL(m, key, type, head, fmt)	COL(struct ev_res, m, key, type, head, fmt)
static const struct col ev_cols[] = {
	{ "occupancy", offsetof(struct ev_res, occ), COL_DBL, "occ%", "%5.1f", 100 },
	{ "gap", offsetof(struct ev_res, gap), COL_DBL, "gap%", "%5.2f", 100 },
	EV_COL(window, "window", COL_UINT, "window", "%6u"),
	EV_COL(epa, "extents_per_alloc", COL_DBL, "ext/alloc", "%9.3f"),
	COL_PCT(struct ev_res, multi, "multi_extent_share", "multi", "%6.1f%%"),
	EV_COL(runs_per_kalloc, "eviction_runs_per_1k_allocs", COL_DBL, "runs/1k", "%8.2f"),
	EV_COL(units_per_run, "units_per_run", COL_DBL, "units/run", "%9.1f"),
	EV_COL(lat.p50, NULL, COL_DBL, "p50ns", "%7.0f"),
	EV_COL(lat.p99, NULL, COL_DBL, "p99ns", "%7.0f"),
	EV_COL(lat.p999, NULL, COL_DBL, "p999ns", "%8.0f"),
	EV_COL(failures, "alloc_failures", COL_U64, "fails", "%6llu"),
	EV_COL(lat, "alloc_ns", COL_LAT, NULL, NULL),
};

/* one seed of one configuration: an LRU churn under the watermarks */
static int ev_run(const struct ev_cfg *c, struct ev_res *res)
{
	struct workload w = {
		.npages = c->npages, .occupancy = c->occ, .ops = c->ops,
		.touch_share = c->touch, .remove_share = c->remove, .seed = c->seed,
		.evict = c->window == 1 ? EVICT_LRU : EVICT_LRU_COALESCE,
		.sizes = *c->sizes, .backing = HKV_BACKING_NONE,
		.room_low = 1.0 - c->occ,
	};
	struct balloc_ops hk;
	struct result r = { .name = "hugekv" };
	int err;

	/* --warm allocations before measuring: about warm * mean pages, the
	 * first occ * npages of them fill the space */
	w.burnin = (double)c->warm * c->sizes->mean / (double)c->npages - c->occ;
	w.burnin = w.burnin > 0 ? w.burnin : 0;
	w.room_high = w.room_low + c->gap > 1 ? 1 : w.room_low + c->gap;
	hkv_adapter_ops(&w, &hk);
	memset(res, 0, sizeof(*res));
	err = run_lru(&hk, &w, NULL, &r);
	if (!err) {
		res->epa = r.epa_mean;
		res->multi = r.multi_share;
		res->allocs = r.allocs;
		res->failures = r.failures;
		res->lat = r.alloc_ns;
		res->runs_per_kalloc = r.allocs ? 1000.0 * r.evict_runs / r.allocs : 0;
		res->units_per_run = r.evict_runs ? (double)r.evictions / r.evict_runs : 0;
	}
	result_free(&r);
	return err;
}

/* medians over @rep seeds */
static int ev_median(struct ev_cfg c, unsigned rep, struct ev_res *out)
{
	struct ev_res *runs = calloc(rep, sizeof(*runs));
	struct lat *lats = calloc(rep, sizeof(*lats));
	double v[5][64];
	uint64_t o_seed = c.seed;
	int err = runs && lats ? 0 : -ENOMEM;

	for (unsigned i = 0; i < rep && !err; i++) {
		c.seed = o_seed + i;
		err = ev_run(&c, &runs[i]);
		lats[i] = runs[i].lat;
		v[0][i] = runs[i].epa;
		v[1][i] = runs[i].multi;
		v[2][i] = runs[i].runs_per_kalloc;
		v[3][i] = runs[i].units_per_run;
		v[4][i] = (double)runs[i].failures;
	}
	if (!err) {
		*out = runs[0];
		out->epa = median_d(v[0], rep);
		out->multi = median_d(v[1], rep);
		out->runs_per_kalloc = median_d(v[2], rep);
		out->units_per_run = median_d(v[3], rep);
		out->failures = (uint64_t)median_d(v[4], rep);
		lat_median(lats, rep, &out->lat);
	}
	free(lats);
	free(runs);
	return err;
}

static const char ev_usage[] =
"usage: hkv-bench evict [options]\n"
"  planned eviction in a full cache: extents per allocation and eviction\n"
"  runs, victim window 1 (plain LRU) vs 8 (prefer units bordering free\n"
"  extents), without and with a watermark gap, at each occupancy.\n\n"
"  --npages N       index-only pool size (default 1M)\n"
"  --occupancy LIST comma-separated percentages (default 95,98)\n"
"  --gap PCT        high - low watermark in % of the pool (default 1)\n"
"  --ops N          measured allocations per run (default 200K)\n"
"  --warm N         allocations before measuring (default 3 x fill)\n"
"  --touch P        probability of touching a live unit per step (default 0.5)\n"
"  --remove P       probability of removing a random live unit (default 0)\n"
"  --sizes SPEC     request sizes: default (n^-1.6, 1..4096) or a file\n"
"  --repeat R       seeds per configuration, medians reported (default 3)\n"
"  --seed S         first seed (default 1)\n";

#define EV_MAX_OCC	8

struct ev_opts {
	struct ev_cfg c;
	double occ[EV_MAX_OCC];
	unsigned nocc, rep;
	const char *sizes_spec;
	struct sizes sz;
	bool have_sz;
	struct ev_res res[EV_MAX_OCC][4];
};

static int ev_parse_occ(const char *s, struct ev_opts *o)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", s);
	o->nocc = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nocc == HKV_BENCH_ARRAY(o->occ) ||
		    parse_double(tok, 1, 99.9, &o->occ[o->nocc]))
			return -EINVAL;
		o->occ[o->nocc++] /= 100;
	}
	return o->nocc ? 0 : -EINVAL;
}

static const struct option ev_opts_tab[] = {
	{ "npages", 1, NULL, 'n' }, { "occupancy", 1, NULL, 'o' },
	{ "gap", 1, NULL, 'g' }, { "ops", 1, NULL, 'p' }, { "warm", 1, NULL, 'w' },
	{ "touch", 1, NULL, 't' }, { "remove", 1, NULL, 'x' }, { "sizes", 1, NULL, 's' },
	{ "repeat", 1, NULL, 'r' }, { "seed", 1, NULL, 'S' }, { 0 }
};

static void ev_init(void *st)
{
	struct ev_opts *o = st;

	o->c = (struct ev_cfg){ .npages = 1000000, .ops = 200000, .seed = 1, .gap = 0.01,
				.touch = 0.5 };
	o->occ[0] = 0.95;
	o->occ[1] = 0.98;
	o->nocc = 2;
	o->rep = 3;
	o->sizes_spec = "default";
}

static int ev_parse(void *st, int ch, const char *arg)
{
	struct ev_opts *o = st;
	uint64_t v;
	int err = -EINVAL;

	switch (ch) {
	case 'n': return parse_count(arg, false, &o->c.npages) || !o->c.npages ? -EINVAL : 0;
	case 'o': return ev_parse_occ(arg, o);
	case 'g': err = parse_double(arg, 0, 50, &o->c.gap); o->c.gap /= 100; break;
	case 'p': return parse_count(arg, false, &o->c.ops) || !o->c.ops ? -EINVAL : 0;
	case 'w': return parse_count(arg, false, &o->c.warm);
	case 't': return parse_double(arg, 0, 1, &o->c.touch);
	case 'x': return parse_double(arg, 0, 1, &o->c.remove);
	case 's': o->sizes_spec = arg; return 0;
	case 'r': err = parse_count(arg, false, &v);
		  err = err || !v || v > 64 ? -EINVAL : 0; o->rep = (unsigned)v; break;
	case 'S': return parse_count(arg, false, &o->c.seed);
	}
	return err;
}

static int ev_validate(void *st, int json)
{
	struct ev_opts *o = st;

	(void)json;
	if (sizes_load(&o->sz, o->sizes_spec, o->c.npages / 64))
		return -EINVAL;
	o->have_sz = true;
	o->c.sizes = &o->sz;
	if (!o->c.warm)
		o->c.warm = (uint64_t)(3 * o->c.npages / o->sz.mean);
	return 0;
}

/* configuration k of occupancy i: window 1 or 8, without or with the gap */
static struct ev_cfg ev_config(const struct ev_opts *o, unsigned i, unsigned k)
{
	struct ev_cfg c = o->c;

	c.occ = o->occ[i];
	c.gap = k & 2 ? o->c.gap : 0;
	c.window = k & 1 ? 8 : 1;
	return c;
}

static int ev_measure(void *st)
{
	struct ev_opts *o = st;
	int err = 0;

	for (unsigned i = 0; i < o->nocc && !err; i++)
		for (unsigned k = 0; k < 4 && !err; k++) {
			struct ev_cfg c = ev_config(o, i, k);
			struct ev_res *r = &o->res[i][k];

			err = ev_median(c, o->rep, r);
			r->occ = c.occ;
			r->gap = c.gap;
			r->window = c.window;
		}
	if (err)
		fprintf(stderr, "hkv-bench evict: %s\n", hkv_strerror(err));
	return err;
}

static void ev_report(void *st, struct json *j)
{
	struct ev_opts *o = st;

	if (j) {
		json_u64(j, "npages", o->c.npages);
		json_str(j, "sizes", o->sz.name);
		json_u64(j, "ops", o->c.ops);
		json_dbl(j, "touch", o->c.touch);
		json_dbl(j, "remove", o->c.remove);
		json_u64(j, "repeat", o->rep);
		json_arr(j, "results");
		for (unsigned i = 0; i < o->nocc; i++)
			for (unsigned k = 0; k < 4; k++) {
				json_obj(j, NULL);
				cols_json(j, &o->res[i][k], ev_cols, NCOLS(ev_cols));
				json_obj_end(j);
			}
		json_arr_end(j);
		return;
	}
	printf("hkv-bench evict: %llu pages, sizes %s (mean %.1f), %llu+%llu allocs, "
	       "touch %.2f, remove %.2f, median of %u seeds\n",
	       (unsigned long long)o->c.npages, o->sz.name, o->sz.mean,
	       (unsigned long long)o->c.warm, (unsigned long long)o->c.ops, o->c.touch,
	       o->c.remove, o->rep);
	cols_head(stdout, ev_cols, NCOLS(ev_cols));
	for (unsigned i = 0; i < o->nocc; i++)
		for (unsigned k = 0; k < 4; k++)
			cols_text(stdout, &o->res[i][k], ev_cols, NCOLS(ev_cols));
	for (unsigned i = 0; i < o->nocc; i++) {
		const struct ev_res *r = o->res[i];

		printf("occupancy %.1f%%: ext/alloc window 8 / window 1 = %.3f (no gap), "
		       "%.3f (gap); eviction runs gap / no gap = %.3f (window 1)\n",
		       100 * o->occ[i], r[1].epa / r[0].epa, r[3].epa / r[2].epa,
		       r[2].runs_per_kalloc / r[0].runs_per_kalloc);
	}
}

static void ev_fini(void *st)
{
	struct ev_opts *o = st;

	if (o->have_sz)
		sizes_free(&o->sz);
}

const struct bench bench_evict = {
	.name = "evict",
	.what = "planned eviction: victim choice and coalescing",
	.usage = ev_usage,
	.opts = ev_opts_tab,
	.size = sizeof(struct ev_opts),
	.init = ev_init,
	.parse = ev_parse,
	.validate = ev_validate,
	.measure = ev_measure,
	.report = ev_report,
	.fini = ev_fini,
};
