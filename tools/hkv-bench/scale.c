// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * scale.c - `hkv-bench scale`: the churn figures of hugekv from 16 K to
 * 16 M pages (powers of 4), one request-size distribution for all (capped
 * at the smallest space / 16), to show that cost does not grow with
 * capacity.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "churn.h"

#define SCALE_MAX_POINTS	16

static const char scale_usage[] =
"usage: hkv-bench scale [--from N] [--to N] [churn options]\n"
"hugekv's churn figures for spaces of --from (16K) to --to (16M) pages in\n"
"powers of 4; one size distribution for all (capped at --from / 16 pages).\n"
"Takes the churn options (hkv-bench churn --help); defaults here: --burnin 4,\n"
"--ops 1M, --repeat 3, no baselines. The figure that matters: alloc p50 and\n"
"p99 at the largest space over the smallest (target <= 1.5x). Each point also\n"
"runs the whole-run (no per-call timer) and drained-free figures of hugekv\n"
"and the TLSF family side by side (see hkv-bench churn).\n";

struct spoint {
	uint64_t pages;
	struct lat a, f;
	double epa, multi, seconds;
	struct fam_fig fam[2];		/* hugekv, tlsf: whole run, drained free */
	uint64_t free_extents, largest, metadata;
	double meta_bpp, fam_ratio;	/* metadata bytes per page; hugekv / family */
};

#define S_COL(m, key, type, head, fmt)	COL(struct spoint, m, key, type, head, fmt)
static const struct col point_cols[] = {	/* the first table and the JSON */
	S_COL(pages, "pages", COL_U64, "pages", "%-8llu"),
	COL_LAT_TEXT(struct spoint, a, "alloc p50"),
	S_COL(f.p50, NULL, COL_DBL, "free p50", "%8.0f"),
	S_COL(f.p99, NULL, COL_DBL, "p99", "%8.0f"),
	S_COL(a, "alloc_ns", COL_LAT, NULL, NULL),
	S_COL(f, "free_ns", COL_LAT, NULL, NULL),
	S_COL(epa, "extents_per_alloc", COL_DBL, "ext/al", "%8.3f"),
	COL_PCT(struct spoint, multi, "multi_extent_share", "multi", "%6.1f%%"),
	S_COL(free_extents, "free_extents", COL_U64, "free ext", "%9llu"),
	S_COL(largest, "largest_free_run", COL_U64, NULL, NULL),
	S_COL(metadata, "metadata_bytes", COL_U64, NULL, NULL),
	S_COL(meta_bpp, NULL, COL_DBL, "meta B/pg", "%9.2f"),
	S_COL(fam[0].ns_per_op, "run_ns_per_op", COL_DBL, NULL, NULL),
	S_COL(fam[0].free, "free_drained_ns", COL_LAT, NULL, NULL),
	S_COL(fam[1].ns_per_op, "family_run_ns_per_op", COL_DBL, NULL, NULL),
	S_COL(fam[1].free, "family_free_drained_ns", COL_LAT, NULL, NULL),
};

static const struct col family_cols[] = {	/* the second table */
	S_COL(pages, NULL, COL_U64, "pages", "%-8llu"),
	S_COL(fam[0].ns_per_op, NULL, COL_DBL, "hugekv ns/op", "%14.1f"),
	S_COL(fam[0].free.p50, NULL, COL_DBL, "free-d p50", "%12.0f"),
	S_COL(fam[1].ns_per_op, NULL, COL_DBL, "family ns/op", "%14.1f"),
	S_COL(fam[1].free.p50, NULL, COL_DBL, "free-d p50", "%14.0f"),
	S_COL(fam_ratio, NULL, COL_DBL, "hkv/family", "%11.2fx"),
};

struct scale {
	struct spoint p[SCALE_MAX_POINTS];
	unsigned n;
	uint64_t from, to;
};

struct scale_st {
	struct churn tmpl;		/* the churn options, one copy per point */
	struct scale s;
};

enum { O_FROM = 512, O_TO };

static const struct option scale_opts[] = {
	{ "from", 1, NULL, O_FROM }, { "to", 1, NULL, O_TO }, { NULL, 0, NULL, 0 },
};

static void scale_init(void *st)
{
	struct scale_st *x = st;

	churn_defaults(&x->tmpl);
	x->tmpl.w.burnin = 4;
	x->tmpl.nbl = 0;
	x->s.from = 16384;
	x->s.to = 16777216;
}

/* --from/--to are ours; the rest are churn's */
static int scale_parse(void *st, int o, const char *arg)
{
	struct scale_st *x = st;
	uint64_t *dst = o == O_FROM ? &x->s.from : o == O_TO ? &x->s.to : NULL;

	if (!dst)
		return churn_parse_opt(&x->tmpl, o, arg);
	if (parse_count(arg, false, dst) || *dst < 1024 || *dst > (1ull << 31)) {
		fprintf(stderr, "hkv-bench scale: --%s wants 1024 .. 2^31 pages\n",
			o == O_FROM ? "from" : "to");
		return -EINVAL;
	}
	return 0;
}

static int scale_validate(void *st, int json)
{
	struct scale_st *x = st;
	int err = churn_validate(&x->tmpl, json);

	sizes_free(&x->tmpl.w.sizes);	/* reloaded per point, one cap for all */
	if (!err && x->s.from > x->s.to) {
		fprintf(stderr, "hkv-bench scale: --from is above --to\n");
		err = -EINVAL;
	}
	return err;
}

static int scale_point(const struct churn *tmpl, struct scale *s, uint64_t pages)
{
	struct churn *c = malloc(sizeof(*c));
	struct spoint *p = &s->p[s->n];
	int err;

	if (!c)
		return -ENOMEM;
	*c = *tmpl;
	c->w.npages = pages;
	c->quiet = true;
	c->family = true;
	err = sizes_load(&c->w.sizes, tmpl->sizes_spec, s->from / 16);
	if (!err)
		err = churn_run(c);
	if (!err) {
		p->pages = pages;
		p->a = c->alloc_med;
		p->f = c->free_med;
		p->epa = c->hkv[0].epa_mean;
		p->multi = c->hkv[0].multi_share;
		p->free_extents = c->hkv[0].end.free_extents;
		p->largest = c->hkv[0].end.largest;
		p->metadata = c->st.metadata_bytes;
		p->seconds = c->hkv[0].seconds;
		p->fam[0] = c->fam[0];
		p->fam[1] = c->fam[1];
		p->meta_bpp = (double)p->metadata / p->pages;
		p->fam_ratio = p->fam[1].ns_per_op > 0 ? p->fam[0].ns_per_op / p->fam[1].ns_per_op : 0;
		s->n++;
		fprintf(stderr, "hkv-bench: scale %llu pages: alloc p50 %.0f ns, p99 %.0f ns\n",
			(unsigned long long)pages, p->a.p50, p->a.p99);
	}
	churn_free(c);
	free(c);
	return err;
}

static void scale_text(const struct scale *s, FILE *f)
{
	const struct spoint *lo = &s->p[0], *hi = &s->p[s->n - 1];

	cols_head(f, point_cols, NCOLS(point_cols));
	for (unsigned i = 0; i < s->n; i++)
		cols_text(f, &s->p[i], point_cols, NCOLS(point_cols));
	fprintf(f, "\nlargest / smallest space: alloc p50 %.2fx, p99 %.2fx; free p50 %.2fx, p99 %.2fx\n\n",
		hi->a.p50 / lo->a.p50, hi->a.p99 / lo->a.p99, hi->f.p50 / lo->f.p50,
		hi->f.p99 / lo->f.p99);
	cols_head(f, family_cols, NCOLS(family_cols));
	for (unsigned i = 0; i < s->n; i++)
		cols_text(f, &s->p[i], family_cols, NCOLS(family_cols));
	fprintf(f, "largest / smallest space, whole run: hugekv %.2fx, family %.2fx; "
		"drained free p50: hugekv %.2fx\n",
		hi->fam[0].ns_per_op / lo->fam[0].ns_per_op,
		hi->fam[1].ns_per_op / lo->fam[1].ns_per_op,
		hi->fam[0].free.p50 / lo->fam[0].free.p50);
}

static void scale_json(const struct scale *s, const struct churn *tmpl, struct json *j)
{
	const struct spoint *lo = &s->p[0], *hi = &s->p[s->n - 1];

	json_dbl(j, "occupancy", tmpl->w.occupancy);
	json_u64(j, "ops", tmpl->w.ops);
	json_u64(j, "repeat", tmpl->repeat);
	json_arr(j, "points");
	for (unsigned i = 0; i < s->n; i++) {
		json_obj(j, NULL);
		cols_json(j, &s->p[i], point_cols, NCOLS(point_cols));
		json_obj_end(j);
	}
	json_arr_end(j);
	json_obj(j, "ratio");		/* largest space / smallest */
	json_dbl(j, "alloc_p50", hi->a.p50 / lo->a.p50);
	json_dbl(j, "alloc_p99", hi->a.p99 / lo->a.p99);
	json_dbl(j, "free_p50", hi->f.p50 / lo->f.p50);
	json_dbl(j, "free_p99", hi->f.p99 / lo->f.p99);
	json_dbl(j, "run_ns_per_op", hi->fam[0].ns_per_op / lo->fam[0].ns_per_op);
	json_dbl(j, "free_drained_p50", hi->fam[0].free.p50 / lo->fam[0].free.p50);
	json_obj_end(j);
}

static int scale_measure(void *st)
{
	struct scale_st *x = st;
	int err = 0;

	for (uint64_t pages = x->s.from; pages <= x->s.to && !err &&
	     x->s.n < SCALE_MAX_POINTS; pages *= 4)
		err = scale_point(&x->tmpl, &x->s, pages);
	return err;
}

static void scale_report(void *st, struct json *j)
{
	struct scale_st *x = st;

	if (j)
		scale_json(&x->s, &x->tmpl, j);
	else
		scale_text(&x->s, stdout);
}

const struct bench bench_scale = {
	.name = "scale",
	.what = "churn cost from 16K to 16M pages",
	.usage = scale_usage,
	.opts = scale_opts,
	.more_opts = churn_opts,
	.size = sizeof(struct scale_st),
	.init = scale_init,
	.parse = scale_parse,
	.validate = scale_validate,
	.measure = scale_measure,
	.report = scale_report,
};
