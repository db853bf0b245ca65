// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * access.c - `hkv-bench access`: random 4 KiB reads over a pool's arena,
 * the TLB effect of its backing.
 *
 * Two measures per backing, on a pool bound to --mem-node and a thread
 * running on --cpu-node: latency, a dependent chase through every 4 KiB
 * block of the arena in random order (one load per block, each address
 * known only after the previous load: ns per access); and bandwidth,
 * independent reads of whole random 4 KiB blocks (GB/s). Medians of
 * --repeat runs; with both 4k and 2m, the 4k/2m ratios.
 */
#include <errno.h>
#include <numa.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include "bench.h"
#include "common.h"
#include "hugekv.h"

#define AC_BLOCK	4096ull
#define AC_PAGE		(64 * 1024ull)
#define AC_MAX_REPEAT	32

struct ac_result;

struct ac_opts {
	uint64_t size, reads;
	int mem_node, cpu_node;
	int backing[4];
	unsigned nbacking, repeat;
	struct ac_result *res;		/* one per backing */
};

struct ac_result {
	const char *name;		/* of the backing */
	int backing, err;
	uint64_t hugepage_bytes;
	double node;			/* where the arena landed (JSON: a number) */
	double lat_ns, gbps;
};

#define AC_COL(m, key, type, head, fmt)	COL(struct ac_result, m, key, type, head, fmt)
static const struct col ac_cols[] = {	/* the first names a failed run too */
	AC_COL(name, "backing", COL_STR, "back", "%-4s"),
	AC_COL(hugepage_bytes, "hugepage_bytes", COL_U64, NULL, NULL),
	AC_COL(node, "node", COL_DBL, "node", "%4.0f"),
	AC_COL(lat_ns, "latency_ns", COL_DBL, "latency ns", "%10.1f"),
	AC_COL(gbps, "bandwidth_gbps", COL_DBL, "GB/s", "%7.2f"),
};

/* a random cycle through all blocks; each link at a random cache line */
static void build_chase(char *base, uint64_t nblocks, struct rng *r)
{
	uint64_t *perm = malloc(nblocks * sizeof(*perm)), i, j, t;
	uint8_t *line = malloc(nblocks);

	if (!perm || !line)
		abort();
	for (i = 0; i < nblocks; i++) {
		perm[i] = i;
		line[i] = (uint8_t)rng_below(r, AC_BLOCK / 64);
	}
	for (i = nblocks - 1; i > 0; i--) {
		j = rng_below(r, i + 1);
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (i = 0; i < nblocks; i++) {
		uint64_t from = perm[i], to = perm[(i + 1) % nblocks];

		*(char **)(base + from * AC_BLOCK + line[from] * 64) =
			base + to * AC_BLOCK + line[to] * 64;
	}
	free(line);
	free(perm);
}

/*
 * Thread CPU time, not wall time: on a shared VM the measuring thread is
 * descheduled now and then, and latency per access must not include that.
 */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double chase_ns(char *start, uint64_t steps)
{
	char *p = start;
	uint64_t t0, t1, i;

	t0 = cpu_ns();
	for (i = 0; i < steps; i++)
		p = *(char **)p;
	t1 = cpu_ns();
	__asm__ volatile("" : : "r"(p));
	return (double)(t1 - t0) / (double)steps;
}

static double read_gbps(const char *base, uint64_t nblocks, uint64_t reads, struct rng *r)
{
	uint64_t t0, t1, i, k, sum = 0;

	t0 = cpu_ns();
	for (i = 0; i < reads; i++) {
		const uint64_t *b = (const uint64_t *)(base + rng_below(r, nblocks) * AC_BLOCK);

		for (k = 0; k < AC_BLOCK / 8; k += 4)
			sum += b[k] ^ b[k + 1] ^ b[k + 2] ^ b[k + 3];
	}
	t1 = cpu_ns();
	__asm__ volatile("" : : "r"(sum));
	return (double)(reads * AC_BLOCK) / (double)(t1 - t0);
}

/* any link of the cycle is a valid start: take block 0's */
static char *chase_start(char *base)
{
	for (uint64_t off = 0; off < AC_BLOCK; off += 64)
		if (*(char **)(base + off))
			return base + off;
	return NULL;
}

static void ac_run(const struct ac_opts *o, int backing, struct ac_result *res)
{
	struct hkv_pool_opts po = { .sz = sizeof(po), .npages = o->size / AC_PAGE,
				    .page_bytes = AC_PAGE, .backing = backing,
				    .numa_node = o->mem_node, .flags = HKV_POOL_STRICT };
	double lat[AC_MAX_REPEAT], bw[AC_MAX_REPEAT];
	struct hkv_region reg;
	struct hkv_pool *p;
	struct rng r;
	uint64_t nblocks;
	char *start;

	memset(res, 0, sizeof(*res));
	res->backing = backing;
	res->err = hkv_pool_create(&po, &p);
	if (res->err)
		return;
	hkv_regions(p, &reg, 1);
	res->hugepage_bytes = reg.hugepage_bytes;
	res->node = reg.node;
	nblocks = reg.bytes / AC_BLOCK;
	rng_seed(&r, 42);
	memset(reg.base, 0, reg.bytes);
	build_chase(reg.base, nblocks, &r);
	start = chase_start(reg.base);
	for (unsigned i = 0; i < o->repeat; i++) {
		lat[i] = chase_ns(start, o->reads);
		bw[i] = read_gbps(reg.base, nblocks, o->reads / 4, &r);
	}
	res->lat_ns = median_d(lat, o->repeat);
	res->gbps = median_d(bw, o->repeat);
	hkv_pool_destroy(p);
}

static const char ac_usage[] =
"usage: hkv-bench access [options]\n"
"Random 4 KiB accesses over a pool's arena: latency of a dependent chase\n"
"through all 4 KiB blocks in random order (ns per access) and bandwidth of\n"
"independent random 4 KiB block reads (GB/s), per backing; with 4k and 2m\n"
"both, their ratios (the TLB effect). Timed in the thread's CPU time, so a\n"
"busy machine's descheduling does not count. Strict pools: 2m needs free\n"
"hugepages.\n"
"\n"
"  --size BYTES     arena size, binary suffixes (default 1G)\n"
"  --backing B      4k|2m|thp|1g, repeatable (default: 4k, 2m, and 1g\n"
"                   where the kernel offers 1 GiB pages)\n"
"  --mem-node N     node the pool is bound to (default: -1, every node)\n"
"  --cpu-node M     node the measuring thread runs on (default: any)\n"
"  --reads N        chase steps per run (default 4M; bandwidth reads N/4)\n"
"  --repeat R       runs; medians reported (default 3)\n";

static const struct option ac_opts_tab[] = {
	{ "size", 1, NULL, 's' }, { "backing", 1, NULL, 'b' },
	{ "mem-node", 1, NULL, 'm' }, { "cpu-node", 1, NULL, 'c' },
	{ "reads", 1, NULL, 'n' }, { "repeat", 1, NULL, 'r' }, { NULL, 0, NULL, 0 },
};

static void ac_init(void *st)
{
	struct ac_opts *o = st;

	o->size = 1ull << 30;
	o->reads = 4 << 20;
	o->repeat = 3;
	o->mem_node = o->cpu_node = -1;
}

static int ac_parse(void *st, int c, const char *arg)
{
	struct ac_opts *o = st;
	uint64_t v;
	int err = 0;

	switch (c) {
	case 's': err = parse_count(arg, true, &o->size); break;
	case 'b': err = backing_add(arg, o->backing, &o->nbacking, 4); break;
	case 'm': err = parse_count(arg, false, &v);
		o->mem_node = err || v > 1023 ? -1 : (int)v;
		err = err ? err : (v > 1023 ? -EINVAL : 0);
		break;
	case 'c': err = parse_count(arg, false, &v);
		o->cpu_node = err || v > 1023 ? -1 : (int)v;
		err = err ? err : (v > 1023 ? -EINVAL : 0);
		break;
	case 'n': err = parse_count(arg, false, &o->reads); break;
	case 'r': err = parse_count(arg, false, &v);
		err = err ? err : (v >= 1 && v <= AC_MAX_REPEAT ? 0 : -EINVAL);
		o->repeat = (unsigned)v;
		break;
	default: err = -EINVAL;
	}
	return err;
}

static int ac_validate(void *st, int json)
{
	struct ac_opts *o = st;

	(void)json;
	if (o->size < 16 * AC_PAGE || o->reads < 16) {
		fprintf(stderr, "hkv-bench access: --size wants 1M or more, --reads 16 or more\n");
		return -EINVAL;
	}
	backing_defaults(o->backing, &o->nbacking, false);
	return 0;
}

static const struct ac_result *find(const struct ac_result *res, unsigned n, int b)
{
	for (unsigned i = 0; i < n; i++)
		if (res[i].backing == b && !res[i].err)
			return &res[i];
	return NULL;
}

static void ac_report(void *st, struct json *j)
{
	const struct ac_opts *o = st;
	const struct ac_result *res = o->res;
	unsigned n = o->nbacking;
	const struct ac_result *s = find(res, n, HKV_BACKING_SMALL);
	const struct ac_result *h = find(res, n, HKV_BACKING_HUGE_2M);
	const struct ac_result *g = find(res, n, HKV_BACKING_HUGE_1G);

	if (!j) {
		printf("access: %llu MiB arena, mem node %d, cpu node %d, median of %u\n",
		       (unsigned long long)(o->size >> 20), o->mem_node, o->cpu_node, o->repeat);
		cols_head(stdout, ac_cols, NCOLS(ac_cols));
		for (unsigned i = 0; i < n; i++) {
			if (res[i].err)
				printf("%-4s failed: %s\n", res[i].name, hkv_strerror(res[i].err));
			else
				cols_text(stdout, &res[i], ac_cols, NCOLS(ac_cols));
		}
		if (s && h)
			printf("4k/2m: latency %.2fx, 2m/4k bandwidth %.2fx\n",
			       s->lat_ns / h->lat_ns, h->gbps / s->gbps);
		if (h && g)
			printf("2m/1g: latency %.2fx, 1g/2m bandwidth %.2fx\n",
			       h->lat_ns / g->lat_ns, g->gbps / h->gbps);
		return;
	}
	json_u64(j, "size", o->size);
	json_dbl(j, "mem_node", o->mem_node);
	json_dbl(j, "cpu_node", o->cpu_node);
	json_u64(j, "reads", o->reads);
	json_u64(j, "repeat", o->repeat);
	json_arr(j, "runs");
	for (unsigned i = 0; i < n; i++) {
		json_obj(j, NULL);
		cols_json(j, &res[i], ac_cols, res[i].err ? 1 : NCOLS(ac_cols));
		if (res[i].err)
			json_str(j, "error", hkv_strerror(res[i].err));
		json_obj_end(j);
	}
	json_arr_end(j);
	if (s && h) {
		json_dbl(j, "latency_4k_over_2m", s->lat_ns / h->lat_ns);
		json_dbl(j, "bandwidth_2m_over_4k", h->gbps / s->gbps);
	}
}

static int ac_measure(void *st)
{
	struct ac_opts *o = st;
	int bad = 0;

	if (o->cpu_node >= 0 && numa_run_on_node(o->cpu_node)) {
		fprintf(stderr, "hkv-bench access: cannot run on node %d\n", o->cpu_node);
		return -EINVAL;
	}
	o->res = calloc(o->nbacking, sizeof(*o->res));
	if (!o->res)
		return -ENOMEM;
	for (unsigned i = 0; i < o->nbacking; i++) {
		ac_run(o, o->backing[i], &o->res[i]);
		o->res[i].name = hkv_backing_name(o->backing[i]);
		bad |= o->res[i].err != 0;
	}
	return bad;
}

static void ac_fini(void *st)
{
	free(((struct ac_opts *)st)->res);
}

const struct bench bench_access = {
	.name = "access",
	.what = "touching KV pages: hugepage vs 4K backing",
	.usage = ac_usage,
	.opts = ac_opts_tab,
	.size = sizeof(struct ac_opts),
	.init = ac_init,
	.parse = ac_parse,
	.validate = ac_validate,
	.measure = ac_measure,
	.report = ac_report,
	.fini = ac_fini,
};
