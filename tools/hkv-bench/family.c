// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * family.c - hugekv against the fast good-fit family (tlsf.c) on the churn
 * trace, the way each is really called: hugekv with HKV_LANE_ANY and frees
 * by extent (validated), the family by handle kept beside the allocation.
 *
 * The family runs twice: as written (each bin's most recently filed block)
 * and taking each bin's block from its lowest-addressed region
 * (tlsf_create_regions()), the order hugekv's contract asks for at region
 * granularity: what that order costs the family itself.
 *
 * Two kinds of runs, interleaved (who goes first turns each round) and
 * reported as medians; each whole-run ratio is the median of each round's
 * ratio (the machine's drift cancels inside a round):
 *
 * whole run: the measured ops with no timer inside the loop; ns/op is the
 *	loop's wall time over its ops (a lean record table is the only
 *	harness work, the same for both).
 * per call: alloc timed with lfence;rdtsc;lfence around the call; free
 *	timed *drained*: after the call an MFENCE, which completes only when
 *	every earlier store is globally visible (the store buffer drained,
 *	its cache misses served), then lfence;rdtsc. A free that only queues
 *	stores to cold lines cannot look fast. The cost of an empty
 *	tick-mfence-tick is measured and subtracted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "churn.h"

struct frec {			/* one live allocation */
	uint32_t k, h1;
	struct hkv_extent e1;
	struct hkv_extent *ext;	/* k > 1 */
	uint32_t *h;
};

struct fam {
	const struct trace *t;
	struct frec *rec;
	struct hkv_extent *scratch;
	uint32_t *hs;
	unsigned maxext;
	bool tlsf;
	void *st;		/* pool or struct tlsf */
	bool timed;
	uint64_t ovh, ovh_d;	/* ticks: plain, drained */
	struct samples a, f;
	uint64_t allocs, ext_sum;
};

static inline uint64_t tick_drained(void)
{
#if defined(__x86_64__) || defined(__i386__)
	_mm_mfence();
#endif
	return tick();
}

static int rec_keep(struct frec *r, const struct hkv_extent *e, const uint32_t *h, unsigned k)
{
	r->k = k;
	if (k == 1) {
		r->e1 = e[0];
		r->h1 = h ? h[0] : 0;
		return 0;
	}
	r->ext = malloc(k * sizeof(*e));
	r->h = malloc(k * sizeof(*h));
	if (!r->ext || !r->h)
		return -ENOMEM;
	memcpy(r->ext, e, k * sizeof(*e));
	if (h)
		memcpy(r->h, h, k * sizeof(*h));
	return 0;
}

static void rec_drop(struct frec *r)
{
	if (r->k > 1) {
		free(r->ext);
		free(r->h);
	}
	memset(r, 0, sizeof(*r));
}

static int fam_alloc(struct fam *m, const struct op *op)
{
	uint64_t t0 = 0, t1;
	int k;

	if (m->timed)
		t0 = tick();
	if (m->tlsf)
		k = tlsf_alloc(m->st, op->pages, m->scratch, m->maxext, m->hs);
	else
		k = hkv_alloc(m->st, op->pages, HKV_LANE_ANY, 0, m->scratch, m->maxext);
	if (m->timed) {
		t1 = tick();
		samples_add(&m->a, t0, t1, m->ovh);
	}
	if (k <= 0)
		return k ? k : -EUCLEAN;
	m->allocs++;
	m->ext_sum += (uint64_t)k;
	return rec_keep(&m->rec[op->id], m->scratch, m->tlsf ? m->hs : NULL, (unsigned)k);
}

/* family: free the blocks past keep pages (keep 0 = all), shrink the one
 * that holds the boundary */
static void fam_tlsf_release(struct fam *m, struct frec *r, uint32_t keep)
{
	const struct hkv_extent *e = r->k == 1 ? &r->e1 : r->ext;
	const uint32_t *h = r->k == 1 ? &r->h1 : r->h;
	uint64_t cum = 0;
	unsigned j = 0;

	while (keep && cum + e[j].len <= keep)
		cum += e[j++].len;
	if (keep && keep > cum) {
		tlsf_shrink(m->st, h[j], (uint32_t)(keep - cum));
		j++;
	}
	for (; j < r->k; j++)
		tlsf_free_one(m->st, h[j]);
}

/* hugekv: the extents past keep pages, one hkv_free call */
static int fam_hkv_release(struct fam *m, struct frec *r, uint32_t keep)
{
	const struct hkv_extent *e = r->k == 1 ? &r->e1 : r->ext;
	uint64_t cum = 0;
	unsigned j = 0, n = 0;

	if (!keep)
		return hkv_free(m->st, e, r->k);
	while (cum + e[j].len <= keep)
		cum += e[j++].len;
	m->scratch[n++] = (struct hkv_extent){ e[j].start + (keep - cum),
					       e[j].len - (keep - cum) };
	for (j++; j < r->k; j++)
		m->scratch[n++] = e[j];
	return hkv_free(m->st, m->scratch, n);
}

/* what stays of a record after a partial free */
static void rec_truncate(struct frec *r, uint32_t keep)
{
	struct hkv_extent *e = r->k == 1 ? &r->e1 : r->ext;
	uint64_t cum = 0;
	unsigned j = 0;

	while (cum + e[j].len < keep)
		cum += e[j++].len;
	e[j].len = keep - cum;
	if (r->k > 1 && j == 0) {
		struct hkv_extent one = e[0];
		uint32_t h = r->h[0];

		free(r->ext);
		free(r->h);
		r->e1 = one;
		r->h1 = h;
	}
	r->k = j + 1;
}

static int fam_free(struct fam *m, const struct op *op)
{
	struct frec *r = &m->rec[op->id];
	uint32_t keep = op->kind == OP_PARTIAL ? op->pages : 0;
	uint64_t t0 = 0, t1;
	int err = 0;

	if (m->timed)
		t0 = tick();
	if (m->tlsf)
		fam_tlsf_release(m, r, keep);
	else
		err = fam_hkv_release(m, r, keep);
	if (m->timed) {
		t1 = tick_drained();
		samples_add(&m->f, t0, t1, m->ovh_d);
	}
	if (err)
		return err;
	if (keep)
		rec_truncate(r, keep);
	else
		rec_drop(r);
	return 0;
}

static int fam_ops(struct fam *m, uint64_t from, uint64_t to)
{
	int err = 0;

	for (uint64_t i = from; i < to && !err; i++) {
		const struct op *op = &m->t->op[i];

		err = op->kind == OP_ALLOC ? fam_alloc(m, op) : fam_free(m, op);
	}
	return err;
}

static uint64_t median_ticks(bool drained)
{
	static uint64_t v[2001];

	for (size_t i = 0; i < HKV_BENCH_ARRAY(v); i++) {
		uint64_t a = tick(), b = drained ? tick_drained() : tick();

		v[i] = b - a;
	}
	for (size_t i = 1; i < HKV_BENCH_ARRAY(v); i++)	/* insertion sort: small */
		for (size_t j = i; j && v[j - 1] > v[j]; j--) {
			uint64_t x = v[j];

			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	return v[HKV_BENCH_ARRAY(v) / 2];
}

enum { FAM_HKV, FAM_TLSF, FAM_REGIONS, FAM_N };
/* each allocator's name in the JSON and in messages */
static const char *const fam_key[FAM_N] = { "hugekv", "tlsf", "tlsf_regions" };

/* one run of one allocator (FAM_*); fills its figures */
static int fam_run(struct churn *c, int kind, bool timed, struct fam_fig *fig)
{
	bool tlsf = kind != FAM_HKV;
	struct hkv_pool_opts po = { .sz = sizeof(po), .npages = c->w.npages, .nlanes = 1,
				    .backing = HKV_BACKING_NONE, .numa_node = -1 };
	struct hkv_stats st = { .sz = sizeof(st) };
	struct fam m = { .t = &c->t, .tlsf = tlsf, .maxext = c->t.max_size + 1 };
	uint64_t n = c->t.n - c->t.measure_from, t0, t1;
	struct hkv_pool *pool = NULL;
	int err;

	m.rec = calloc(c->t.nallocs ? c->t.nallocs : 1, sizeof(*m.rec));
	m.scratch = malloc(m.maxext * sizeof(*m.scratch));
	m.hs = malloc(m.maxext * sizeof(*m.hs));
	err = !m.rec || !m.scratch || !m.hs ? -ENOMEM : 0;
	if (!err && timed)
		err = samples_init(&m.a, n) ? -ENOMEM : samples_init(&m.f, n) ? -ENOMEM : 0;
	if (!err)
		err = kind == FAM_REGIONS ? tlsf_create_regions(c->w.npages, &m.st) :
		      tlsf ? tlsf_create(c->w.npages, &m.st) : hkv_pool_create(&po, &pool);
	if (err)
		goto out;
	if (!tlsf)
		m.st = pool;
	m.ovh = median_ticks(false);
	m.ovh_d = median_ticks(true);
	err = fam_ops(&m, 0, c->t.measure_from);
	m.allocs = m.ext_sum = 0;
	m.timed = timed;
	t0 = now_ns();
	if (!err)
		err = fam_ops(&m, c->t.measure_from, c->t.n);
	t1 = now_ns();
	if (err) {
		fprintf(stderr, "hkv-bench: family run (%s): %s\n", fam_key[kind],
			hkv_strerror(err));
		goto out;
	}
	fig->epa = m.allocs ? (double)m.ext_sum / (double)m.allocs : 0;
	if (timed) {
		samples_summarize(&m.a, &fig->alloc);
		samples_summarize(&m.f, &fig->free);
	} else {
		fig->ns_per_op = n ? (double)(t1 - t0) / (double)n : 0;
	}
	if (tlsf) {
		fig->meta_bpp = (double)tlsf_metadata_bytes(m.st) / (double)c->w.npages;
	} else if (!hkv_stats(pool, &st)) {
		fig->meta_bpp = (double)st.metadata_bytes / (double)c->w.npages;
	}
out:
	for (uint32_t i = 0; m.rec && i < c->t.nallocs; i++)
		rec_drop(&m.rec[i]);
	free(m.rec);
	free(m.scratch);
	free(m.hs);
	samples_free(&m.a);
	samples_free(&m.f);
	if (tlsf)
		tlsf_destroy(m.st);
	else
		hkv_pool_destroy(pool);
	return err;
}

/* hugekv's whole-run ns/op over allocator a's, per round */
static struct spread fam_ratios(const struct churn *c,
				const struct fam_fig runs[][CHURN_MAX_REPEAT], int a)
{
	double h[CHURN_MAX_REPEAT], x[CHURN_MAX_REPEAT];

	for (unsigned r = 0; r < c->repeat; r++) {
		h[r] = runs[FAM_HKV][r].ns_per_op;
		x[r] = runs[a][r].ns_per_op;
	}
	return ratio_spread(h, x, c->repeat);
}

/**
 * family_run() - hugekv and the family, interleaved, c->repeat times each
 * @c: a churn whose trace is generated (random victims)
 *
 * Return: 0 or -errno (message printed).
 */
int family_run(struct churn *c)
{
	struct fam_fig runs[FAM_N][CHURN_MAX_REPEAT] = { 0 };
	double v[CHURN_MAX_REPEAT];
	int err = 0;

	for (unsigned r = 0; r < c->repeat && !err; r++) {
		for (int i = 0; i < FAM_N && !err; i++) {
			int a = (int)((r + (unsigned)i) % FAM_N);	/* who goes first turns */

			err = fam_run(c, a, false, &runs[a][r]);
		}
		for (int i = 0; i < FAM_N && !err; i++) {
			int a = (int)((r + (unsigned)i) % FAM_N);
			struct fam_fig tmp;

			err = fam_run(c, a, true, &tmp);
			runs[a][r].alloc = tmp.alloc;
			runs[a][r].free = tmp.free;
		}
		if (!err && !c->quiet)
			fprintf(stderr, "hkv-bench: family run %u/%u: %.1f / %.1f / %.1f ns/op\n",
				r + 1, c->repeat, runs[FAM_HKV][r].ns_per_op,
				runs[FAM_TLSF][r].ns_per_op, runs[FAM_REGIONS][r].ns_per_op);
	}
	if (err)
		return err;
	for (int a = 0; a < FAM_N; a++) {
		struct fam_fig *f = &c->fam[a];
		struct lat al[CHURN_MAX_REPEAT], fl[CHURN_MAX_REPEAT];

		for (unsigned r = 0; r < c->repeat; r++) {
			v[r] = runs[a][r].ns_per_op;
			al[r] = runs[a][r].alloc;
			fl[r] = runs[a][r].free;
		}
		f->ns_per_op = median_d(v, c->repeat);
		lat_median(al, c->repeat, &f->alloc);
		lat_median(fl, c->repeat, &f->free);
		f->epa = runs[a][0].epa;
		f->meta_bpp = runs[a][0].meta_bpp;
	}
	c->fam_ratio = fam_ratios(c, runs, FAM_TLSF);
	c->fam_ratio_reg = fam_ratios(c, runs, FAM_REGIONS);
	c->have_fam = true;
	return 0;
}

void family_text(const struct churn *c, FILE *f)
{
	static const char *const name[FAM_N] = { "hugekv (ANY)", "tlsf family",
						  "tlsf, regions" };

	if (!c->have_fam)
		return;
	fprintf(f, "\nside by side with the TLSF/OffsetAllocator family (same ops, medians of %u "
		"interleaved runs;\nfree timed drained: mfence before the closing rdtsc)\n",
		c->repeat);
	fprintf(f, "%-14s %10s %9s %9s %9s %9s %9s %8s\n", "allocator", "ns/op run",
		"alloc p50", "p99", "free-d p50", "p99", "ext/alloc", "B/page");
	for (int a = 0; a < FAM_N; a++) {
		const struct fam_fig *x = &c->fam[a];

		fprintf(f, "%-14s %10.1f %9.0f %9.0f %10.0f %9.0f %9.3f %8.2f\n", name[a],
			x->ns_per_op, x->alloc.p50, x->alloc.p99, x->free.p50, x->free.p99,
			x->epa, x->meta_bpp);
	}
	if (c->fam[FAM_TLSF].ns_per_op > 0)
		fprintf(f, "hugekv / family whole-run ns/op: %.2fx (median of the rounds' ratios; "
			"%.2f-%.2f)\n", c->fam_ratio.med, c->fam_ratio.lo, c->fam_ratio.hi);
	if (c->fam[FAM_REGIONS].ns_per_op > 0)
		fprintf(f, "hugekv / family taking each bin's lowest region first: %.2fx "
			"(%.2f-%.2f)\n", c->fam_ratio_reg.med, c->fam_ratio_reg.lo,
			c->fam_ratio_reg.hi);
}

void family_json(const struct churn *c, struct json *j)
{
	if (!c->have_fam)
		return;
	json_obj(j, "family");
	json_u64(j, "runs", c->repeat);
	json_str(j, "free_timing", "drained (mfence before the closing rdtsc)");
	for (int a = 0; a < FAM_N; a++) {
		json_obj(j, fam_key[a]);
		json_dbl(j, "ns_per_op", c->fam[a].ns_per_op);
		json_lat(j, "alloc_ns", &c->fam[a].alloc);
		json_lat(j, "free_drained_ns", &c->fam[a].free);
		json_dbl(j, "extents_per_alloc", c->fam[a].epa);
		json_dbl(j, "metadata_bytes_per_page", c->fam[a].meta_bpp);
		json_obj_end(j);
	}
	json_spread(j, "ns_per_op_ratio", &c->fam_ratio);	/* median of the rounds' */
	json_spread(j, "ns_per_op_ratio_regions", &c->fam_ratio_reg);
	json_obj_end(j);
}
