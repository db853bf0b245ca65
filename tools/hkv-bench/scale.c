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
	char b[32];

	fprintf(f, "%-8s %9s %8s %8s %8s %8s %8s %8s %7s %9s %8s\n", "pages", "alloc p50",
		"p90", "p99", "p999", "free p50", "p99", "ext/al", "multi", "free ext",
		"meta B/pg");
	for (unsigned i = 0; i < s->n; i++) {
		const struct spoint *p = &s->p[i];

		fprintf(f, "%-8s %9.0f %8.0f %8.0f %8.0f %8.0f %8.0f %8.3f %6.1f%% %9llu %8.2f\n",
			fmt_count(p->pages, b, sizeof(b)), p->a.p50, p->a.p90, p->a.p99,
			p->a.p999, p->f.p50, p->f.p99, p->epa, 100 * p->multi,
			(unsigned long long)p->free_extents, (double)p->metadata / p->pages);
	}
	fprintf(f, "\nlargest / smallest space: alloc p50 %.2fx, p99 %.2fx; free p50 %.2fx, p99 %.2fx\n",
		hi->a.p50 / lo->a.p50, hi->a.p99 / lo->a.p99, hi->f.p50 / lo->f.p50,
		hi->f.p99 / lo->f.p99);
	fprintf(f, "\n%-8s %14s %12s %14s %14s %12s\n", "pages", "hugekv ns/op", "free-d p50",
		"family ns/op", "free-d p50", "hkv/family");
	for (unsigned i = 0; i < s->n; i++) {
		const struct spoint *p = &s->p[i];

		fprintf(f, "%-8s %14.1f %12.0f %14.1f %14.0f %11.2fx\n",
			fmt_count(p->pages, b, sizeof(b)), p->fam[0].ns_per_op,
			p->fam[0].free.p50, p->fam[1].ns_per_op, p->fam[1].free.p50,
			p->fam[1].ns_per_op > 0 ? p->fam[0].ns_per_op / p->fam[1].ns_per_op : 0);
	}
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
		json_u64(j, "pages", s->p[i].pages);
		json_lat(j, "alloc_ns", &s->p[i].a);
		json_lat(j, "free_ns", &s->p[i].f);
		json_dbl(j, "extents_per_alloc", s->p[i].epa);
		json_dbl(j, "multi_extent_share", s->p[i].multi);
		json_u64(j, "free_extents", s->p[i].free_extents);
		json_u64(j, "largest_free_run", s->p[i].largest);
		json_u64(j, "metadata_bytes", s->p[i].metadata);
		json_dbl(j, "run_ns_per_op", s->p[i].fam[0].ns_per_op);
		json_lat(j, "free_drained_ns", &s->p[i].fam[0].free);
		json_dbl(j, "family_run_ns_per_op", s->p[i].fam[1].ns_per_op);
		json_lat(j, "family_free_drained_ns", &s->p[i].fam[1].free);
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
