// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * churn.c - `hkv-bench churn`: steady-state churn near full occupancy,
 * hugekv and the baselines on the same operation sequence.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "churn.h"

const char *evict_name(int evict)
{
	static const char *const names[] = { "random", "lru", "lru-coalesce" };

	return names[evict];
}

/* hugekv's own counts must match the shadow bitmap's: one lane, no chunks */
static int churn_check_pool(struct churn *c, struct hkv_pool *pool, const struct result *r)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	int err = hkv_stats(pool, &st);

	if (err)
		return err;
	if (st.free_pages != r->end.free_pages || st.free_extents != r->end.free_extents ||
	    st.largest_free_extent != r->end.largest) {
		fprintf(stderr, "hkv-bench: hugekv stats disagree with the shadow bitmap: "
			"free %llu/%llu, extents %llu/%llu, largest %llu/%llu\n",
			(unsigned long long)st.free_pages, (unsigned long long)r->end.free_pages,
			(unsigned long long)st.free_extents,
			(unsigned long long)r->end.free_extents,
			(unsigned long long)st.largest_free_extent,
			(unsigned long long)r->end.largest);
		return -EUCLEAN;
	}
	if (!c->have_st) {
		c->st = st;
		c->have_st = true;
	}
	return 0;
}

static int churn_hugekv(struct churn *c, const struct balloc_ops *hk, unsigned i)
{
	struct result *r = &c->hkv[i];
	int err;

	r->name = "hugekv";
	hkv_adapter_last_pool = NULL;
	if (c->w.evict == EVICT_RANDOM)
		err = replay(hk, &c->w, &c->t, 0, r);
	else
		err = run_lru(hk, &c->w, i ? NULL : &c->t, r);
	if (!err && hkv_adapter_last_pool)
		err = churn_check_pool(c, hkv_adapter_last_pool, r);
	if (hkv_adapter_last_pool && (err || !c->stats || i + 1 < c->repeat)) {
		hkv_pool_destroy(hkv_adapter_last_pool);
		hkv_adapter_last_pool = NULL;
	}
	if (!err && !c->quiet)
		fprintf(stderr, "hkv-bench: hugekv run %u/%u: %.2f s, alloc p50 %.0f ns\n",
			i + 1, c->repeat, r->seconds, r->alloc_ns.p50);
	return err;
}

/**
 * churn_run() - run the benchmark a struct churn describes
 * @c: options in, results out
 *
 * Random victims: the trace is generated first and replayed on everyone.
 * LRU modes: hugekv's first run picks the victims and records the trace.
 *
 * Return: 0 or -errno (message printed).
 */
int churn_run(struct churn *c)
{
	struct lat a[CHURN_MAX_REPEAT], f[CHURN_MAX_REPEAT];
	struct balloc_ops hk;
	int err = 0;

	bench_pin_cpu();
	timer_init();
	hkv_adapter_ops(&c->w, &hk);
	hkv_adapter_keep_pool = true;
	if (c->w.evict == EVICT_RANDOM) {
		err = trace_generate(&c->w, &c->t);
		if (err) {
			fprintf(stderr, "hkv-bench: trace: %s\n", strerror(-err));
			return err;
		}
	}
	for (unsigned i = 0; i < c->repeat && !err; i++) {
		err = churn_hugekv(c, &hk, i);
		a[i] = c->hkv[i].alloc_ns;
		f[i] = c->hkv[i].free_ns;
	}
	if (err)
		return err;
	lat_median(a, c->repeat, &c->alloc_med);
	lat_median(f, c->repeat, &c->free_med);
	if (c->family && c->w.evict == EVICT_RANDOM) {
		err = family_run(c);
		if (err)
			return err;
	}
	for (unsigned b = 0; b < c->nbl && !err; b++) {
		uint64_t cap = c->baseline_ops ? c->baseline_ops : c->bl[b]->default_ops;

		c->blr[b].name = c->bl[b]->name;
		err = replay(c->bl[b], &c->w, &c->t, cap, &c->blr[b]);
		if (!err && !c->quiet)
			fprintf(stderr, "hkv-bench: %s: %llu ops, %.2f s\n", c->bl[b]->name,
				(unsigned long long)c->blr[b].ops, c->blr[b].seconds);
	}
	return err;
}

void churn_free(struct churn *c)
{
	for (unsigned i = 0; i < CHURN_MAX_REPEAT; i++)
		result_free(&c->hkv[i]);
	for (unsigned i = 0; i < CHURN_MAX_BASELINES; i++)
		result_free(&c->blr[i]);
	trace_free(&c->t);
	sizes_free(&c->w.sizes);
	if (hkv_adapter_last_pool)
		hkv_pool_destroy(hkv_adapter_last_pool);
	hkv_adapter_last_pool = NULL;
}

static const char churn_usage[] =
"usage: hkv-bench churn [options]\n"
"Steady-state churn near full occupancy on one index space, after a burn-in;\n"
"hugekv and the designs it replaces run the same operation sequence.\n"
"\n"
"  --pages N            pages in the space (default 3.5M; K/M/G = 10^3..)\n"
"  --capacity BYTES     with --page-bytes: pages = capacity / page size\n"
"  --page-bytes BYTES   KV page size (default 64K; K/M/G = 2^10..)\n"
"  --memory             back hugekv's pool with memory (page_bytes > 0)\n"
"  --backing B          auto|1g|2m|thp|4k for --memory (default auto)\n"
"  --occupancy F        live share of the space (default 0.95)\n"
"  --burnin X           churn X times the space before measuring (default 10)\n"
"  --ops N              measured ops, allocs + frees (default 1M)\n"
"  --sizes default|FILE request sizes: built-in heavy tail P(n)~n^-1.6,\n"
"                       n = 1..4096 pages, or \"pages count\" lines\n"
"  --split F            share of frees that release only a tail (default 0.25)\n"
"  --evict MODE         random|lru|lru-coalesce victims (default random)\n"
"  --touch F            lru modes: chance per op to touch a live unit (0.5)\n"
"  --watermarks GAP     lru modes: planned eviction; the pool keeps 1 - occupancy\n"
"                       free (free_room_low) and evicts up to low + GAP inside\n"
"                       hkv_alloc(HKV_ALLOC_EVICT); reports eviction runs and\n"
"                       units per run; no baselines (they have no watermarks)\n"
"  --remove F           with --watermarks: chance per op to remove a live unit\n"
"  --baselines LIST     all|none|sorted-scan,token-freelist,bitmap-firstfit,\n"
"                       tlsf (default all: the first three); the TLSF family\n"
"                       also runs side by side with hugekv (see --no-family)\n"
"  --baseline-ops N     measured ops per baseline (default: all of them,\n"
"                       sorted-scan 2000)\n"
"  --repeat R           hugekv runs; figures are medians (default 3)\n"
"  --no-family          skip the side by side with the TLSF family, as written\n"
"                       and taking each bin's lowest-addressed region first:\n"
"                       whole-run ns/op (no per-call timer) and drained-free\n"
"                       timing (mfence before the closing rdtsc), R\n"
"                       interleaved runs\n"
"  --interval N         timeline sample every N measured ops (default ops/50)\n"
"  --seed S             workload seed (default 1)\n"
"  --quick              CI size: 64K pages, 100K ops, burn-in 1, 1 run\n"
"  --stats              print hugekv's hkv_stats_print table at the end\n"
"                       (with --json: as \"pool_stats\")\n"
"Environment: HKV_BENCH_CPU=N pins the run to CPU N.\n";

enum {
	O_PAGES = 256, O_CAPACITY, O_PAGE_BYTES, O_MEMORY, O_BACKING, O_OCC,
	O_BURNIN, O_OPS, O_SIZES, O_SPLIT, O_EVICT, O_TOUCH, O_BASELINES,
	O_BOPS, O_REPEAT, O_INTERVAL, O_SEED, O_QUICK, O_STATS, O_NOFAMILY,
	O_WATERMARKS, O_REMOVE,
};

const struct option churn_opts[] = {
	{ "pages", 1, NULL, O_PAGES }, { "capacity", 1, NULL, O_CAPACITY },
	{ "page-bytes", 1, NULL, O_PAGE_BYTES }, { "memory", 0, NULL, O_MEMORY },
	{ "backing", 1, NULL, O_BACKING }, { "occupancy", 1, NULL, O_OCC },
	{ "burnin", 1, NULL, O_BURNIN }, { "ops", 1, NULL, O_OPS },
	{ "sizes", 1, NULL, O_SIZES }, { "split", 1, NULL, O_SPLIT },
	{ "evict", 1, NULL, O_EVICT }, { "touch", 1, NULL, O_TOUCH },
	{ "baselines", 1, NULL, O_BASELINES }, { "baseline-ops", 1, NULL, O_BOPS },
	{ "repeat", 1, NULL, O_REPEAT }, { "interval", 1, NULL, O_INTERVAL },
	{ "seed", 1, NULL, O_SEED }, { "quick", 0, NULL, O_QUICK },
	{ "stats", 0, NULL, O_STATS }, { "no-family", 0, NULL, O_NOFAMILY },
	{ "watermarks", 1, NULL, O_WATERMARKS }, { "remove", 1, NULL, O_REMOVE },
	{ NULL, 0, NULL, 0 },
};

static int parse_baselines(struct churn *c, const char *s)
{
	char buf[256], *tok, *save;

	c->nbl = 0;
	if (!strcmp(s, "none"))
		return 0;
	if (!strcmp(s, "all"))
		s = "sorted-scan,token-freelist,bitmap-firstfit";
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		const struct balloc_ops *b = baseline_find(tok);


		if (!b || c->nbl == CHURN_MAX_BASELINES) {
			fprintf(stderr, "hkv-bench: --baselines: unknown or repeated '%s'\n", tok);
			return -EINVAL;
		}
		c->bl[c->nbl++] = b;
	}
	return 0;
}

/* the library's names; "none" is not a memory pool */
static int parse_backing(const char *s, int *out)
{
	return hkv_backing_parse(s, out) || *out == HKV_BACKING_NONE ? -EINVAL : 0;
}

static int parse_evict(const char *s, int *out)
{
	for (int i = EVICT_RANDOM; i <= EVICT_LRU_COALESCE; i++)
		if (!strcmp(s, evict_name(i))) {
			*out = i;
			return 0;
		}
	return -EINVAL;
}

void churn_defaults(void *st)
{
	struct churn *c = st;

	memset(c, 0, sizeof(*c));
	c->w.npages = 3500000;
	c->w.occupancy = 0.95;
	c->w.burnin = 10;
	c->w.ops = 1000000;
	c->w.split_share = 0.25;
	c->w.touch_share = 0.5;
	c->w.seed = 1;
	c->w.backing = HKV_BACKING_AUTO;
	c->page_size = 64 << 10;
	c->repeat = 3;
	c->family = true;
	c->sizes_spec = "default";
	c->wm_gap = -1;
	parse_baselines(c, "all");
}

/**
 * churn_parse_opt() - one churn option (scale takes them too)
 * @st: a struct churn
 * @o: the option's value in churn_opts
 * @arg: its argument
 *
 * Return: 0 or -EINVAL.
 */
int churn_parse_opt(void *st, int o, const char *arg)
{
	struct churn *c = st;
	uint64_t v = 0;
	int err = 0;

	switch (o) {
	case O_PAGES: err = parse_count(arg, false, &c->w.npages); c->capacity = 0; break;
	case O_CAPACITY: err = parse_count(arg, true, &c->capacity); break;
	case O_PAGE_BYTES: err = parse_count(arg, true, &c->page_size);
		err = err ? err : (c->page_size ? 0 : -EINVAL); break;
	case O_MEMORY: c->memory = true; break;
	case O_BACKING: err = parse_backing(arg, &c->w.backing); break;
	case O_OCC: err = parse_double(arg, 0.05, 0.995, &c->w.occupancy); break;
	case O_BURNIN: err = parse_double(arg, 0, 100, &c->w.burnin); break;
	case O_OPS: err = parse_count(arg, false, &c->w.ops);
		err = err ? err : (c->w.ops && c->w.ops <= 1000000000 ? 0 : -EINVAL); break;
	case O_SIZES: c->sizes_spec = arg; break;
	case O_SPLIT: err = parse_double(arg, 0, 1, &c->w.split_share); break;
	case O_EVICT: err = parse_evict(arg, &c->w.evict); break;
	case O_TOUCH: err = parse_double(arg, 0, 1, &c->w.touch_share); break;
	case O_BASELINES: return parse_baselines(c, arg);
	case O_BOPS: err = parse_count(arg, false, &c->baseline_ops); break;
	case O_REPEAT: err = parse_count(arg, false, &v);
		err = err ? err : (v >= 1 && v <= CHURN_MAX_REPEAT ? 0 : -EINVAL);
		c->repeat = (unsigned)v; break;
	case O_INTERVAL: err = parse_count(arg, false, &c->w.interval); break;
	case O_SEED: err = parse_count(arg, false, &c->w.seed); break;
	case O_QUICK: c->w.npages = 65536; c->w.ops = 100000; c->w.burnin = 1;
		c->repeat = 1; c->capacity = 0; break;
	case O_STATS: c->stats = true; break;
	case O_NOFAMILY: c->family = false; break;
	case O_WATERMARKS: err = parse_double(arg, 0, 0.5, &c->wm_gap); break;
	case O_REMOVE: err = parse_double(arg, 0, 1, &c->w.remove_share); break;
	default: return -EINVAL;
	}
	return err;
}

/**
 * churn_validate() - after the options: the space and the size distribution
 * @st: a struct churn
 * @json: --json was given (no progress lines then)
 *
 * Return: 0 or -EINVAL (message printed).
 */
int churn_validate(void *st, int json)
{
	struct churn *c = st;

	c->json = json;
	c->quiet = json;
	if (c->capacity)
		c->w.npages = c->capacity / c->page_size;
	if (c->w.npages < 1024 || c->w.npages > UINT32_MAX - 1) {
		fprintf(stderr, "hkv-bench: the space must hold 1024 .. 2^32-2 pages\n");
		return -EINVAL;
	}
	c->w.page_bytes = c->memory ? c->page_size : 0;
	if ((c->wm_gap >= 0 || c->w.remove_share > 0) &&
	    (c->w.evict == EVICT_RANDOM || c->wm_gap < 0)) {
		fprintf(stderr, "hkv-bench: --watermarks needs --evict lru|lru-coalesce; "
			"--remove needs --watermarks\n");
		return -EINVAL;
	}
	if (c->wm_gap >= 0) {	/* the pool evicts; the baselines could not */
		c->w.room_low = 1 - c->w.occupancy;
		c->w.room_high = c->w.room_low + c->wm_gap > 1 ? 1 : c->w.room_low + c->wm_gap;
		c->nbl = 0;
	}
	if (!c->w.interval)
		c->w.interval = c->w.ops / 50 ? c->w.ops / 50 : 1;
	/* a request must fit well inside the space */
	return sizes_load(&c->w.sizes, c->sizes_spec, c->w.npages / 16);
}

static int churn_measure(void *st)
{
	return churn_run(st);
}

static void churn_report(void *st, struct json *j)
{
	struct churn *c = st;

	if (j) {
		report_json_body(c, j);
		family_json(c, j);
		return;
	}
	report_text(c, stdout);
	family_text(c, stdout);
	if (c->stats && hkv_adapter_last_pool)
		hkv_stats_print(hkv_adapter_last_pool, stdout, 0);
}

const struct bench bench_churn = {
	.name = "churn",
	.what = "steady-state churn near full occupancy, with baselines",
	.usage = churn_usage,
	.opts = churn_opts,
	.size = sizeof(struct churn),
	.init = churn_defaults,
	.parse = churn_parse_opt,
	.validate = churn_validate,
	.measure = churn_measure,
	.report = churn_report,
	.fini = (void (*)(void *))churn_free,
};
