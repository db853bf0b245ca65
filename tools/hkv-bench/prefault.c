// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * prefault.c - `hkv-bench prefault`: how fast a pool gets its memory.
 *
 * For each backing (4 KiB, THP, 2 MiB, 1 GiB) and thread count, creates a
 * pool of --size bytes (strict backing, prefault on), records create time
 * and the library's own prefault time, and sets beside them a plain
 * single-thread memset of the same, already resident, memory: the
 * machine's write bandwidth. The first run of a backing is reported apart
 * ("cold"): a VM backs guest memory lazily, so memory the guest never
 * touched costs far more the first time. Warm figures are medians of
 * --repeat later runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "common.h"
#include "hugekv.h"

#define PF_MAX_REPEAT	32
#define PF_PAGE		(64 * 1024ull)

struct pf_result;

struct pf_opts {
	uint64_t size;
	int backing[4];
	unsigned nbacking, threads[2], nthreads, repeat;
	struct pf_result *res;		/* one per backing and thread count */
	unsigned nres;
};

struct pf_result {
	const char *name;		/* of the backing */
	int backing;
	unsigned threads;
	int err;			/* create failed: -errno */
	double cold_create_ms, cold_gbps;	/* first run */
	double create_ms, prefault_gbps;	/* warm medians */
	double memset_gbps;		/* plain memset over the resident arena */
	double ratio;			/* prefault / memset */
	uint64_t hugepage_bytes;
};

#define PF_COL(m, key, type, head, fmt)	COL(struct pf_result, m, key, type, head, fmt)
static const struct col pf_cols[] = {	/* the first two name a failed run too */
	PF_COL(name, "backing", COL_STR, "back", "%-4s"),
	PF_COL(threads, "threads", COL_UINT, "thr", "%3u"),
	PF_COL(hugepage_bytes, "hugepage_bytes", COL_U64, NULL, NULL),
	PF_COL(cold_create_ms, "cold_create_ms", COL_DBL, "cold ms", "%10.1f"),
	PF_COL(cold_gbps, "cold_prefault_gbps", COL_DBL, "cold GB/s", "%10.2f"),
	PF_COL(create_ms, "create_ms", COL_DBL, "warm ms", "%10.1f"),
	PF_COL(prefault_gbps, "prefault_gbps", COL_DBL, "warm GB/s", "%10.2f"),
	PF_COL(memset_gbps, "memset_gbps", COL_DBL, "memset", "%10.2f"),
	COL_PCT(struct pf_result, ratio, "prefault_vs_memset", "ratio", "%7.0f%%"),
};

/* one create: its wall time, the library's prefault GB/s, and a memset */
static int pf_once(const struct pf_opts *o, int backing, unsigned threads, double *create_ms,
		   double *gbps, double *memset_gbps, uint64_t *hp)
{
	struct hkv_pool_opts po = { .sz = sizeof(po), .npages = o->size / PF_PAGE,
				    .page_bytes = PF_PAGE, .backing = backing,
				    .numa_node = -1, .flags = HKV_POOL_STRICT,
				    .prefault_threads = threads };
	struct hkv_stats st = { .sz = sizeof(st) };
	struct hkv_region r;
	struct hkv_pool *p;
	uint64_t t0, t1;
	int err;

	t0 = now_ns();
	err = hkv_pool_create(&po, &p);
	t1 = now_ns();
	if (err)
		return err;
	hkv_stats(p, &st);
	hkv_regions(p, &r, 1);
	*create_ms = (t1 - t0) / 1e6;
	*gbps = st.prefault_gbps;
	*hp = r.hugepage_bytes;
	t0 = now_ns();
	memset(r.base, 0x5a, r.bytes);
	__asm__ volatile("" : : "r"(r.base) : "memory");
	t1 = now_ns();
	*memset_gbps = (double)r.bytes / (double)(t1 - t0);
	hkv_pool_destroy(p);
	return 0;
}

static void pf_run(const struct pf_opts *o, int backing, unsigned threads, struct pf_result *res)
{
	double ms[PF_MAX_REPEAT], gb[PF_MAX_REPEAT], ms_gb[PF_MAX_REPEAT], ms_gb0;
	unsigned i;

	memset(res, 0, sizeof(*res));
	res->backing = backing;
	res->threads = threads;
	res->err = pf_once(o, backing, threads, &res->cold_create_ms, &res->cold_gbps, &ms_gb0,
			   &res->hugepage_bytes);
	for (i = 0; !res->err && i < o->repeat; i++)
		res->err = pf_once(o, backing, threads, &ms[i], &gb[i], &ms_gb[i],
				   &res->hugepage_bytes);
	if (res->err)
		return;
	res->create_ms = median_d(ms, o->repeat);
	res->prefault_gbps = median_d(gb, o->repeat);
	res->memset_gbps = median_d(ms_gb, o->repeat);
}

static const char pf_usage[] =
"usage: hkv-bench prefault [options]\n"
"Pool creation: create time and prefault GB/s per backing and thread count,\n"
"beside a plain single-thread memset of the same resident memory (the\n"
"machine's write bandwidth). The first run of each configuration is shown\n"
"apart as \"cold\" (a VM backs guest memory lazily); warm figures are medians.\n"
"2 MiB and 1 GiB runs need that many free hugepages (strict pools).\n"
"\n"
"  --size BYTES     pool size, binary suffixes (default 1G)\n"
"  --backing B      4k|thp|2m|1g, repeatable (default: 4k, thp, 2m, and 1g\n"
"                   where the kernel offers 1 GiB pages)\n"
"  --threads N      prefault threads per pool (default: 1 and every CPU)\n"
"  --repeat R       warm runs per configuration (default 3)\n";

static const struct option pf_opts_tab[] = {
	{ "size", 1, NULL, 's' }, { "backing", 1, NULL, 'b' },
	{ "threads", 1, NULL, 't' }, { "repeat", 1, NULL, 'r' }, { NULL, 0, NULL, 0 },
};

static void pf_init(void *st)
{
	struct pf_opts *o = st;

	o->size = 1ull << 30;
	o->repeat = 3;
}

static int pf_parse(void *st, int c, const char *arg)
{
	struct pf_opts *o = st;
	uint64_t v;
	int err = 0;

	switch (c) {
	case 's': err = parse_count(arg, true, &o->size); break;
	case 'b': err = backing_add(arg, o->backing, &o->nbacking, 4); break;
	case 't': err = parse_count(arg, false, &v);
		err = err ? err : (v >= 1 && v <= 1024 ? 0 : -EINVAL);
		o->threads[0] = (unsigned)v;
		o->nthreads = 1;
		break;
	case 'r': err = parse_count(arg, false, &v);
		err = err ? err : (v >= 1 && v <= PF_MAX_REPEAT ? 0 : -EINVAL);
		o->repeat = (unsigned)v;
		break;
	default: err = -EINVAL;
	}
	return err;
}

static int pf_validate(void *st, int json)
{
	struct pf_opts *o = st;
	uint64_t ncpu = (uint64_t)sysconf(_SC_NPROCESSORS_ONLN);

	(void)json;
	if (o->size < PF_PAGE) {
		fprintf(stderr, "hkv-bench prefault: --size wants 64K or more\n");
		return -EINVAL;
	}
	backing_defaults(o->backing, &o->nbacking, true);
	if (!o->nthreads) {
		o->threads[0] = 1;
		o->threads[1] = (unsigned)ncpu;
		o->nthreads = ncpu > 1 ? 2 : 1;
	}
	return 0;
}

static void pf_report(void *st, struct json *j)
{
	const struct pf_opts *o = st;

	if (!j) {
		printf("prefault: %llu MiB pools, warm = median of %u runs\n",
		       (unsigned long long)(o->size >> 20), o->repeat);
		cols_head(stdout, pf_cols, NCOLS(pf_cols));
	} else {
		json_u64(j, "size", o->size);
		json_u64(j, "repeat", o->repeat);
		json_arr(j, "runs");
	}
	for (unsigned i = 0; i < o->nres; i++) {
		const struct pf_result *r = &o->res[i];

		if (!j && r->err)
			printf("%-4s %3u  failed: %s\n", r->name, r->threads, hkv_strerror(r->err));
		else if (!j)
			cols_text(stdout, r, pf_cols, NCOLS(pf_cols));
		if (!j)
			continue;
		json_obj(j, NULL);
		cols_json(j, r, pf_cols, r->err ? 2 : NCOLS(pf_cols));
		if (r->err)
			json_str(j, "error", hkv_strerror(r->err));
		json_obj_end(j);
	}
	if (j)
		json_arr_end(j);
}

static int pf_measure(void *st)
{
	struct pf_opts *o = st;
	int bad = 0;

	o->res = calloc(o->nbacking * o->nthreads, sizeof(*o->res));
	if (!o->res)
		return -ENOMEM;
	for (unsigned b = 0; b < o->nbacking; b++)
		for (unsigned t = 0; t < o->nthreads; t++) {
			struct pf_result *r = &o->res[o->nres++];

			pf_run(o, o->backing[b], o->threads[t], r);
			r->name = hkv_backing_name(r->backing);
			r->ratio = r->memset_gbps ? r->prefault_gbps / r->memset_gbps : 0;
			bad |= r->err != 0;
		}
	return bad;
}

static void pf_fini(void *st)
{
	free(((struct pf_opts *)st)->res);
}

const struct bench bench_prefault = {
	.name = "prefault",
	.what = "pool creation: prefault bandwidth vs memset",
	.usage = pf_usage,
	.opts = pf_opts_tab,
	.size = sizeof(struct pf_opts),
	.init = pf_init,
	.parse = pf_parse,
	.validate = pf_validate,
	.measure = pf_measure,
	.report = pf_report,
	.fini = pf_fini,
};
