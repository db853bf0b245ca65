// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kvreplay.c - `hkv-bench replay --trace FILE`: a request trace through
 * the engine model (kvmodel.c) with hugekv at both tiers and, side by
 * side on the same trace and capacities, with the engines' own designs.
 * The designs advance together, request by request, in rotating order
 * (drift hits all alike); --repeat runs the whole trace again and takes
 * each request's median time. The model's state and figures do not
 * depend on timing: repeats must agree exactly, or the run fails.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "kvmodel.h"

#define RP_MAX_REPEAT	15
#define GIB		(1024.0 * 1024 * 1024)

struct rp_res {
	bool on;
	struct kvstats s;		/* first repeat's, moved out of its run */
	uint64_t *ticks[RP_MAX_REPEAT];
	struct lat alloc;		/* per request, medians over repeats */
	struct lat desc_load, desc_backup;	/* per transfer */
	uint64_t hist[9];		/* transfers by descriptors: 1, 2, 3-4, ... 129+ */
	uint64_t op_ticks[KV_NOPS], op_calls[KV_NOPS];	/* all passes */
	int backing;
	double seconds;
};

struct rp {
	const char *path;
	uint64_t requests, page_tokens, block_tokens, page_bytes, stamp_bytes, repeat;
	uint64_t interval;
	double l1_gb, l2_gb, low, high;
	int backing;
	bool quiet, designs_set;
	bool want[KV_NDESIGNS];
	int inject;
	const char *inject_design;
	struct kvtrace t;
	struct kvcfg c;
	struct rp_res res[KV_NDESIGNS];
	double seconds;
};

static const char rp_usage[] =
"usage: hkv-bench replay --trace FILE.jsonl [options]\n"
"  request traces (JSON lines: timestamp, input_length, output_length,\n"
"  hash_ids of 512-token prompt blocks) through an engine-shaped two-tier\n"
"  KV cache: L1 the GPU page index, L2 host memory on hugepages. hugekv at\n"
"  both tiers (planned watermark eviction) beside the engines' designs:\n"
"  sglang (paged allocator with lazy merge-and-sort; HiCache host pool\n"
"  free_slots), vllm (block pool FIFO free queue; CPU offload backend),\n"
"  lmcache (vLLM's block pool; first-fit local CPU), each with its LRU,\n"
"  exact-deficit eviction. Reports hit ratios, bytes moved, descriptors per\n"
"  transfer, allocator + eviction CPU time per request, eviction runs and\n"
"  fragmentation over time. Kbuild-docs/dev-tools/hkv-bench-replay.rst.\n\n"
"  --trace FILE      the request trace (required)\n"
"  --requests N      the first N requests (default all)\n"
"  --page-tokens N   tokens per KV page (default 64)\n"
"  --block-tokens N  tokens per trace block (default 512)\n"
"  --page-bytes SIZE bytes per KV page (default: 8B-class GQA model,\n"
"                    tokens x 32 layers x 2 (K,V) x 8 heads x 128 x 2 bytes)\n"
"  --l1-gb G         L1 capacity, GiB of modelled KV (default 64)\n"
"  --l2-gb G         L2 capacity, GiB of modelled KV (default 512)\n"
"  --stamp-bytes SIZE bytes of each L2 page really held and checked\n"
"                    (default 4K; the rest of a page is modelled only)\n"
"  --backing B       L2 memory: auto, 2m, 1g, thp, 4k (default auto)\n"
"  --room-low PCT    hugekv's low watermark, % of a tier (default 0.5)\n"
"  --room-high PCT   hugekv's high watermark (default 1)\n"
"  --designs LIST    comma-separated: hugekv,sglang,vllm,lmcache (default all)\n"
"  --repeat R        runs of the trace; per-request medians (default 3)\n"
"  --interval N      timeline sample every N requests (default 1 % of them)\n"
"  --inject WHAT     tests: double-free (the design frees an L2 page twice)\n"
"                    or misplace (its backups write the wrong L2 page); the\n"
"                    replay must then fail\n"
"  --inject-design D the design to break (default sglang)\n"
"  --quiet           no progress on stderr\n";

static const struct option rp_opts[] = {
	{ "trace", 1, NULL, 't' }, { "requests", 1, NULL, 'n' },
	{ "page-tokens", 1, NULL, 'p' }, { "block-tokens", 1, NULL, 'b' },
	{ "page-bytes", 1, NULL, 'B' }, { "l1-gb", 1, NULL, '1' }, { "l2-gb", 1, NULL, '2' },
	{ "stamp-bytes", 1, NULL, 's' }, { "backing", 1, NULL, 'k' },
	{ "room-low", 1, NULL, 'l' }, { "room-high", 1, NULL, 'H' },
	{ "designs", 1, NULL, 'd' }, { "repeat", 1, NULL, 'r' }, { "interval", 1, NULL, 'i' },
	{ "inject", 1, NULL, 'I' }, { "inject-design", 1, NULL, 'D' },
	{ "quiet", 0, NULL, 'q' }, { 0 }
};

static void rp_init(void *st)
{
	struct rp *o = st;

	o->page_tokens = 64;
	o->block_tokens = 512;
	o->stamp_bytes = 4096;
	o->l1_gb = 64;
	o->l2_gb = 512;
	o->low = 0.5;
	o->high = 1;
	o->repeat = 3;
	o->backing = HKV_BACKING_AUTO;
	o->inject_design = "sglang";
	for (int i = 0; i < KV_NDESIGNS; i++)
		o->want[i] = true;
}

static int rp_designs(struct rp *o, const char *s)
{
	char buf[128], *save = NULL, *tok;
	bool any = false;

	snprintf(buf, sizeof(buf), "%s", s);
	memset(o->want, 0, sizeof(o->want));
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int i;

		for (i = 0; i < KV_NDESIGNS && strcmp(tok, kv_designs[i].name); i++)
			;
		if (i == KV_NDESIGNS)
			return -EINVAL;
		o->want[i] = any = true;
	}
	return any ? 0 : -EINVAL;
}

static int rp_parse(void *st, int ch, const char *arg)
{
	struct rp *o = st;

	switch (ch) {
	case 't': o->path = arg; return *arg ? 0 : -EINVAL;
	case 'n': return parse_count(arg, false, &o->requests);
	case 'p': return parse_count(arg, false, &o->page_tokens) || !o->page_tokens ? -EINVAL : 0;
	case 'b': return parse_count(arg, false, &o->block_tokens) || !o->block_tokens ?
			 -EINVAL : 0;
	case 'B': return parse_count(arg, true, &o->page_bytes) || !o->page_bytes ? -EINVAL : 0;
	case '1': return parse_double(arg, 0.001, 1 << 20, &o->l1_gb);
	case '2': return parse_double(arg, 0.001, 1 << 20, &o->l2_gb);
	case 's': return parse_count(arg, true, &o->stamp_bytes) || o->stamp_bytes < 8 ||
			 o->stamp_bytes % 8 ? -EINVAL : 0;
	case 'k': return hkv_backing_parse(arg, &o->backing) || o->backing == HKV_BACKING_NONE ?
			 -EINVAL : 0;
	case 'l': return parse_double(arg, 0, 50, &o->low);
	case 'H': return parse_double(arg, 0, 50, &o->high);
	case 'd': return rp_designs(o, arg);
	case 'r': return parse_count(arg, false, &o->repeat) || !o->repeat ||
			 o->repeat > RP_MAX_REPEAT ? -EINVAL : 0;
	case 'i': return parse_count(arg, false, &o->interval) || !o->interval ? -EINVAL : 0;
	case 'I':
		o->inject = !strcmp(arg, "double-free") ? KV_INJECT_DOUBLE_FREE :
			    !strcmp(arg, "misplace") ? KV_INJECT_MISPLACE : -1;
		return o->inject < 0 ? -EINVAL : 0;
	case 'D': {
		for (int i = 0; i < KV_NDESIGNS; i++)
			if (!strcmp(arg, kv_designs[i].name)) {
				o->inject_design = kv_designs[i].name;
				return 0;
			}
		return -EINVAL;
	}
	case 'q': o->quiet = true; return 0;
	}
	return -EINVAL;
}

static int rp_validate(void *st, int json)
{
	struct rp *o = st;
	struct kvcfg *c = &o->c;

	(void)json;
	if (!o->path) {
		fprintf(stderr, "hkv-bench replay: --trace FILE is required\n");
		return -EINVAL;
	}
	if (o->block_tokens % o->page_tokens || o->block_tokens / o->page_tokens > KV_MAX_PPB) {
		fprintf(stderr, "hkv-bench replay: --block-tokens must be a multiple of "
			"--page-tokens, at most %u pages\n", KV_MAX_PPB);
		return -EINVAL;
	}
	if (o->low > o->high) {
		fprintf(stderr, "hkv-bench replay: --room-low above --room-high\n");
		return -EINVAL;
	}
	if (o->requests > UINT32_MAX)
		return -EINVAL;
	/* an 8B-class GQA model (Llama-3-8B shape): per token 32 layers x K,V x
	 * 8 KV heads x 128 dims x 2 bytes = 128 KiB */
	if (!o->page_bytes)
		o->page_bytes = o->page_tokens * 32 * 2 * 8 * 128 * 2;
	*c = (struct kvcfg){
		.page_tokens = (unsigned)o->page_tokens, .block_tokens = (unsigned)o->block_tokens,
		.ppb = (unsigned)(o->block_tokens / o->page_tokens), .page_bytes = o->page_bytes,
		.l1_pages = (uint64_t)(o->l1_gb * GIB / (double)o->page_bytes),
		.l2_pages = (uint64_t)(o->l2_gb * GIB / (double)o->page_bytes),
		.stamp_bytes = o->stamp_bytes, .room_low = o->low / 100,
		.room_high = o->high / 100, .backing = o->backing, .inject = o->inject,
		.inject_design = o->inject_design,
	};
	if (c->l1_pages < 4 * c->ppb || c->l2_pages < 4 * c->ppb || c->l1_pages > UINT32_MAX ||
	    c->l2_pages > UINT32_MAX) {
		fprintf(stderr, "hkv-bench replay: --l1-gb/--l2-gb give %llu/%llu pages of %llu "
			"bytes: need 4 blocks to 2^32 pages\n", (unsigned long long)c->l1_pages,
			(unsigned long long)c->l2_pages, (unsigned long long)o->page_bytes);
		return -EINVAL;
	}
	return 0;
}

/* ---- the runs ------------------------------------------------------------- */
static int same_figures(const struct kvstats *a, const struct kvstats *b)
{
	return a->hit_l1 == b->hit_l1 && a->hit_l2 == b->hit_l2 && a->loads == b->loads &&
	       a->load_desc == b->load_desc && a->backup_desc == b->backup_desc &&
	       a->evictions[0] == b->evictions[0] && a->evictions[1] == b->evictions[1];
}

/* one pass over the trace, every design in step */
static int rp_pass(struct rp *o, unsigned rep)
{
	struct kvrun *run = calloc(KV_NDESIGNS, sizeof(*run));
	uint32_t n = o->t.nreq, next = n / 10 ? n / 10 : n;
	int err = run ? 0 : -ENOMEM;

	for (int d = 0; d < KV_NDESIGNS && !err; d++)
		if (o->want[d])
			err = kvrun_init(&run[d], &kv_designs[d], &o->c);
	for (uint32_t i = 0; i < n && !err; i++) {
		for (int k = 0; k < KV_NDESIGNS && !err; k++) {
			int d = (int)((i + k) % KV_NDESIGNS);
			uint64_t t0;

			if (!o->want[d])
				continue;
			t0 = now_ns();
			err = kvrun_request(&run[d], i);
			o->res[d].seconds += (now_ns() - t0) / 1e9;
		}
		if (!o->quiet && i + 1 >= next) {
			fprintf(stderr, "hkv-bench replay: pass %u/%llu: %u of %u requests\n",
				rep + 1, (unsigned long long)o->repeat, i + 1, n);
			next += n / 10 ? n / 10 : n;
		}
	}
	for (int d = 0; d < KV_NDESIGNS && !err; d++) {
		struct rp_res *r = &o->res[d];

		if (!o->want[d])
			continue;
		err = kvrun_finish(&run[d]);
		if (err)
			break;
		r->ticks[rep] = run[d].ticks;
		run[d].ticks = NULL;
		for (int k = 0; k < KV_NOPS; k++) {
			r->op_ticks[k] += run[d].s.op_ticks[k];
			r->op_calls[k] += run[d].s.op_calls[k];
		}
		if (!rep) {
			struct hkv_stats st = { .sz = sizeof(st) };

			r->s = run[d].s;
			memset(&run[d].s, 0, sizeof(run[d].s));
			r->backing = hkv_stats(run[d].mem, &st) ? -1 : st.backing;
			r->on = true;
		} else if (!same_figures(&r->s, &run[d].s)) {
			fprintf(stderr, "hkv-bench replay: %s: pass %u differs from the first\n",
				kv_designs[d].name, rep + 1);
			err = -EUCLEAN;
		}
	}
	for (int d = 0; run && d < KV_NDESIGNS; d++)
		kvrun_fini(&run[d]);
	free(run);
	return err;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void desc_lat(const uint32_t *v, uint64_t n, struct lat *out, uint64_t *hist)
{
	uint64_t *s = malloc((n ? n : 1) * sizeof(*s));
	double sum = 0;

	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	for (uint64_t i = 0; i < n; i++) {
		unsigned b = 0;

		s[i] = v[i];
		sum += v[i];
		while (b < 8 && v[i] > (1u << b))
			b++;
		hist[b]++;
	}
	qsort(s, n, sizeof(*s), cmp_u64);
	if (n) {
		out->n = n;
		out->mean = sum / (double)n;
		out->p50 = (double)s[(n - 1) / 2];
		out->p90 = (double)s[(uint64_t)(0.90 * (double)(n - 1))];
		out->p99 = (double)s[(uint64_t)(0.99 * (double)(n - 1))];
		out->p999 = (double)s[(uint64_t)(0.999 * (double)(n - 1))];
		out->max = (double)s[n - 1];
	}
	free(s);
}

/* per request: the median over the repeats; then percentiles */
static int rp_summarize(struct rp *o, struct rp_res *r)
{
	struct samples sm;
	uint64_t v[RP_MAX_REPEAT];

	if (samples_init(&sm, o->t.nreq))
		return -ENOMEM;
	for (uint32_t i = 0; i < o->t.nreq; i++) {
		for (unsigned k = 0; k < o->repeat; k++)
			v[k] = r->ticks[k][i];
		qsort(v, o->repeat, sizeof(*v), cmp_u64);
		samples_add(&sm, 0, v[(o->repeat - 1) / 2], 0);
	}
	samples_summarize(&sm, &r->alloc);
	samples_free(&sm);
	desc_lat(r->s.desc_load, r->s.loads, &r->desc_load, r->hist);
	desc_lat(r->s.desc_backup, r->s.backups, &r->desc_backup, r->hist);
	return 0;
}

static int rp_measure(void *st)
{
	struct rp *o = st;
	uint64_t t0 = now_ns();
	int err = kvtrace_load(o->path, (uint32_t)o->requests, &o->t);

	if (err)
		return err;
	o->c.trace = &o->t;
	o->c.interval = (uint32_t)(o->interval ? o->interval :
				   (o->t.nreq / 100 ? o->t.nreq / 100 : 1));
	for (unsigned rep = 0; rep < o->repeat && !err; rep++)
		err = rp_pass(o, rep);
	for (int d = 0; d < KV_NDESIGNS && !err; d++)
		if (o->res[d].on)
			err = rp_summarize(o, &o->res[d]);
	o->seconds = (now_ns() - t0) / 1e9;
	if (err && err != -EUCLEAN)
		fprintf(stderr, "hkv-bench replay: %s\n", hkv_strerror(err));
	return err;
}

/* ---- report --------------------------------------------------------------- */
static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0;
}

static double dpt(const struct kvstats *s)
{
	return ratio(s->load_desc + s->backup_desc, s->loads + s->backups);
}

static void json_desc(struct json *j, const char *key, const struct lat *l)
{
	json_obj(j, key);
	json_u64(j, "n", l->n);
	json_dbl(j, "mean", l->mean);
	json_dbl(j, "p50", l->p50);
	json_dbl(j, "p90", l->p90);
	json_dbl(j, "p99", l->p99);
	json_dbl(j, "max", l->max);
	json_obj_end(j);
}

#define TL_ARR(key, expr) do {					\
	json_arr(j, key);					\
	for (uint32_t i = 0; i < s->ntl; i++) {			\
		const struct kvpoint *p = &s->tl[i];		\
								\
		json_dbl(j, NULL, (double)(expr));		\
	}							\
	json_arr_end(j);					\
} while (0)

static void rp_json_design(const struct rp *o, int d, struct json *j)
{
	const struct rp_res *r = &o->res[d];
	const struct kvstats *s = &r->s;
	static const char *const hb[] = { "1", "2", "3-4", "5-8", "9-16", "17-32", "33-64",
					  "65-128", "129+" };

	json_obj(j, kv_designs[d].name);
	json_str(j, "l1_design", kv_designs[d].l1->name);
	json_str(j, "l2_design", kv_designs[d].l2->name);
	json_dbl(j, "hit_ratio_l1", ratio(s->hit_l1, s->blocks));
	json_dbl(j, "hit_ratio_l2", ratio(s->hit_l2, s->blocks));
	json_dbl(j, "hit_ratio", ratio(s->hit_l1 + s->hit_l2, s->blocks));
	json_dbl(j, "descriptors_per_transfer", dpt(s));
	json_dbl(j, "descriptors_per_load", ratio(s->load_desc, s->loads));
	json_dbl(j, "descriptors_per_backup", ratio(s->backup_desc, s->backups));
	json_dbl(j, "pages_per_descriptor",
		 ratio(s->load_pages + s->backup_pages, s->load_desc + s->backup_desc));
	json_dbl(j, "alloc_ns_p50", r->alloc.p50);
	json_dbl(j, "alloc_ns_p99", r->alloc.p99);
	json_dbl(j, "alloc_ns_p999", r->alloc.p999);
	json_lat(j, "alloc_ns", &r->alloc);
	json_u64(j, "blocks", s->blocks);
	json_u64(j, "hits_l1", s->hit_l1);
	json_u64(j, "hits_l2", s->hit_l2);
	json_u64(j, "misses", s->miss);
	json_u64(j, "recomputed_cached", s->dup);
	json_u64(j, "too_big", s->too_big);
	json_u64(j, "loads", s->loads);
	json_u64(j, "backups", s->backups);
	json_u64(j, "bytes_loaded", s->load_pages * o->c.page_bytes);
	json_u64(j, "bytes_backed_up", s->backup_pages * o->c.page_bytes);
	json_desc(j, "descriptors_load", &r->desc_load);
	json_desc(j, "descriptors_backup", &r->desc_backup);
	json_obj(j, "descriptors_hist");
	for (int b = 0; b < 9; b++)
		json_u64(j, hb[b], r->hist[b]);
	json_obj_end(j);
	json_obj(j, "time_by_call");	/* where the allocator + eviction time goes */
	{
		double ns = timer_init()->ns_per_tick, all = 0;

		for (int k = 0; k < KV_NOPS; k++)
			all += (double)r->op_ticks[k];
		for (int k = 0; k < KV_NOPS; k++) {
			if (!r->op_calls[k])
				continue;
			json_obj(j, kv_op_names[k]);
			json_u64(j, "calls", r->op_calls[k] / o->repeat);
			json_dbl(j, "ns_per_call", ns * (double)r->op_ticks[k] /
						   (double)r->op_calls[k]);
			json_dbl(j, "share", all > 0 ? (double)r->op_ticks[k] / all : 0);
			json_obj_end(j);
		}
	}
	json_obj_end(j);
	json_dbl(j, "units_per_eviction_run_l1", ratio(s->evictions[0], s->evict_runs[0]));
	json_dbl(j, "units_per_eviction_run_l2", ratio(s->evictions[1], s->evict_runs[1]));
	json_u64(j, "eviction_runs_l1", s->evict_runs[0]);
	json_u64(j, "evictions_l1", s->evictions[0]);
	json_u64(j, "eviction_runs_l2", s->evict_runs[1]);
	json_u64(j, "evictions_l2", s->evictions[1]);
	json_dbl(j, "extents_per_alloc", ratio(s->alloc_extents, s->allocs));
	json_u64(j, "allocs", s->allocs);
	for (int L = 0; L < 2; L++) {
		json_obj(j, L ? "l2_end" : "l1_end");
		json_u64(j, "free_pages", s->end[L].free_pages);
		json_u64(j, "free_extents", s->end[L].free_extents);
		json_u64(j, "largest_free_run", s->end[L].largest);
		json_obj_end(j);
	}
	json_str(j, "l2_backing", hkv_backing_name(r->backing));
	json_dbl(j, "seconds", r->seconds);
	json_obj(j, "timeline");
	TL_ARR("request", p->req);
	TL_ARR("hit_ratio_l1", p->hit_l1);
	TL_ARR("hit_ratio_l2", p->hit_l2);
	TL_ARR("descriptors_per_transfer", p->desc_per_transfer);
	TL_ARR("pages_per_descriptor", p->pages_per_desc);
	TL_ARR("l1_free_pages", p->l1_free);
	TL_ARR("l1_free_extents", p->l1_free_ext);
	TL_ARR("l1_largest_free_run", p->l1_largest);
	TL_ARR("l2_free_pages", p->l2_free);
	TL_ARR("l2_free_extents", p->l2_free_ext);
	TL_ARR("l2_largest_free_run", p->l2_largest);
	json_obj_end(j);
	json_obj_end(j);
}

/* the goals, measured: hugekv against the best engine design */
struct rp_goals {
	bool have;
	double desc_ratio, hit_gap_pp, hit_gap_l1_pp, hit_gap_l2_pp, p999_ratio;
	const char *best_desc, *best_p999;
};

static struct rp_goals rp_goals(const struct rp *o)
{
	struct rp_goals g = { 0 };
	const struct rp_res *h = &o->res[0];
	double bd = 0, bh = -1, b1 = -1, b2 = -1, bp = 0;

	if (!h->on)
		return g;
	for (int d = 1; d < KV_NDESIGNS; d++) {
		const struct rp_res *r = &o->res[d];
		const struct kvstats *s = &r->s;

		if (!r->on)
			continue;
		if (!g.have || dpt(s) < bd) {
			bd = dpt(s);
			g.best_desc = kv_designs[d].name;
		}
		if (!g.have || r->alloc.p999 < bp) {
			bp = r->alloc.p999;
			g.best_p999 = kv_designs[d].name;
		}
		bh = ratio(s->hit_l1 + s->hit_l2, s->blocks) > bh ?
		     ratio(s->hit_l1 + s->hit_l2, s->blocks) : bh;
		b1 = ratio(s->hit_l1, s->blocks) > b1 ? ratio(s->hit_l1, s->blocks) : b1;
		b2 = ratio(s->hit_l2, s->blocks) > b2 ? ratio(s->hit_l2, s->blocks) : b2;
		g.have = true;
	}
	if (!g.have)
		return g;
	g.desc_ratio = bd > 0 ? dpt(&h->s) / bd : 0;
	g.hit_gap_pp = 100 * (bh - ratio(h->s.hit_l1 + h->s.hit_l2, h->s.blocks));
	g.hit_gap_l1_pp = 100 * (b1 - ratio(h->s.hit_l1, h->s.blocks));
	g.hit_gap_l2_pp = 100 * (b2 - ratio(h->s.hit_l2, h->s.blocks));
	g.p999_ratio = bp > 0 ? h->alloc.p999 / bp : 0;
	return g;
}

static void rp_report(void *st, struct json *j)
{
	struct rp *o = st;
	const struct kvcfg *c = &o->c;
	struct rp_goals g = rp_goals(o);
	uint64_t blocks = o->t.nblk;

	if (j) {
		json_str(j, "trace", o->path);
		json_u64(j, "requests", o->t.nreq);
		json_u64(j, "blocks", blocks);
		json_u64(j, "distinct_blocks", o->t.nnodes);
		json_u64(j, "page_tokens", c->page_tokens);
		json_u64(j, "block_tokens", c->block_tokens);
		json_u64(j, "page_bytes", c->page_bytes);
		json_u64(j, "l1_pages", c->l1_pages);
		json_u64(j, "l2_pages", c->l2_pages);
		json_u64(j, "l1_bytes", c->l1_pages * c->page_bytes);
		json_u64(j, "l2_bytes", c->l2_pages * c->page_bytes);
		json_u64(j, "stamp_bytes", c->stamp_bytes);
		json_dbl(j, "room_low", c->room_low);
		json_dbl(j, "room_high", c->room_high);
		json_u64(j, "repeat", o->repeat);
		json_u64(j, "interval", c->interval);
		json_dbl(j, "seconds", o->seconds);
		json_obj(j, "designs");
		for (int d = 0; d < KV_NDESIGNS; d++)
			if (o->res[d].on)
				rp_json_design(o, d, j);
		json_obj_end(j);
		if (g.have) {
			json_obj(j, "goals");
			json_dbl(j, "descriptor_ratio", g.desc_ratio);
			json_str(j, "best_descriptors", g.best_desc);
			json_dbl(j, "hit_gap_pp", g.hit_gap_pp);
			json_dbl(j, "hit_gap_l1_pp", g.hit_gap_l1_pp);
			json_dbl(j, "hit_gap_l2_pp", g.hit_gap_l2_pp);
			json_dbl(j, "p999_ratio", g.p999_ratio);
			json_str(j, "best_p999", g.best_p999);
			json_obj_end(j);
		}
		return;
	}
	printf("hkv-bench replay: %s: %u requests, %llu blocks (%u distinct); pages of %u tokens, "
	       "%llu bytes; L1 %llu pages (%.0f GiB), L2 %llu pages (%.0f GiB, %llu bytes "
	       "each held); median of %llu passes, %.1f s\n", o->path, o->t.nreq,
	       (unsigned long long)blocks, o->t.nnodes, c->page_tokens,
	       (unsigned long long)c->page_bytes, (unsigned long long)c->l1_pages,
	       (double)c->l1_pages * (double)c->page_bytes / GIB,
	       (unsigned long long)c->l2_pages, (double)c->l2_pages * (double)c->page_bytes / GIB,
	       (unsigned long long)c->stamp_bytes, (unsigned long long)o->repeat, o->seconds);
	printf("%-8s %6s %6s %6s %8s %8s %8s %7s %8s %8s %8s %7s %7s\n", "design", "hitL1%",
	       "hitL2%", "hit%", "desc/xfer", "desc/ld", "desc/bk", "pg/desc", "p50 ns",
	       "p99 ns", "p999 ns", "runsL1", "runsL2");
	for (int d = 0; d < KV_NDESIGNS; d++) {
		const struct rp_res *r = &o->res[d];
		const struct kvstats *s = &r->s;

		if (!r->on)
			continue;
		printf("%-8s %6.2f %6.2f %6.2f %8.2f %8.2f %8.2f %7.1f %8.0f %8.0f %8.0f %7llu "
		       "%7llu\n", kv_designs[d].name, 100 * ratio(s->hit_l1, s->blocks),
		       100 * ratio(s->hit_l2, s->blocks),
		       100 * ratio(s->hit_l1 + s->hit_l2, s->blocks), dpt(s),
		       ratio(s->load_desc, s->loads), ratio(s->backup_desc, s->backups),
		       ratio(s->load_pages + s->backup_pages, s->load_desc + s->backup_desc),
		       r->alloc.p50, r->alloc.p99, r->alloc.p999,
		       (unsigned long long)s->evict_runs[0], (unsigned long long)s->evict_runs[1]);
	}
	if (g.have)
		printf("hugekv vs the best engine design: descriptors per transfer %.2fx (%s), "
		       "hit ratio %+.2f pp (L1 %+.2f, L2 %+.2f), alloc+evict p99.9 %.2fx (%s)\n",
		       g.desc_ratio, g.best_desc, -g.hit_gap_pp, -g.hit_gap_l1_pp,
		       -g.hit_gap_l2_pp, g.p999_ratio, g.best_p999);
}

static void rp_fini(void *st)
{
	struct rp *o = st;

	for (int d = 0; d < KV_NDESIGNS; d++) {
		struct rp_res *r = &o->res[d];

		for (unsigned k = 0; k < RP_MAX_REPEAT; k++)
			free(r->ticks[k]);
		free(r->s.desc_load);
		free(r->s.desc_backup);
		free(r->s.tl);
	}
	kvtrace_free(&o->t);
}

const struct bench bench_replay = {
	.name = "replay",
	.what = "request traces through a two-tier KV cache, beside engine designs",
	.usage = rp_usage,
	.opts = rp_opts,
	.size = sizeof(struct rp),
	.init = rp_init,
	.parse = rp_parse,
	.validate = rp_validate,
	.measure = rp_measure,
	.report = rp_report,
	.fini = rp_fini,
};
