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
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "common.h"
#include "hugekv.h"

#define PF_MAX_REPEAT	32
#define PF_PAGE		(64 * 1024ull)

struct pf_opts {
	uint64_t size;
	int backing[4];
	unsigned nbacking, threads[2], nthreads, repeat;
	bool json;
	const char *csv;
};

struct pf_result {
	int backing;
	unsigned threads;
	int err;			/* create failed: -errno */
	double cold_create_ms, cold_gbps;	/* first run */
	double create_ms, prefault_gbps;	/* warm medians */
	double memset_gbps;		/* plain memset over the resident arena */
	uint64_t hugepage_bytes;
};

static int parse_backing(const char *s, int *b)
{
	int err = hkv_backing_parse(s, b);

	return err || *b == HKV_BACKING_AUTO || *b == HKV_BACKING_NONE ? -EINVAL : 0;
}

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
"  --repeat R       warm runs per configuration (default 3)\n"
"  --json           one JSON object on stdout\n"
"  --csv DIR        write DIR/prefault.csv\n"
"  -h, --help       this text\n";

static int pf_parse(struct pf_opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", 1, NULL, 's' }, { "backing", 1, NULL, 'b' },
		{ "threads", 1, NULL, 't' }, { "repeat", 1, NULL, 'r' },
		{ "json", 0, NULL, 'j' }, { "csv", 1, NULL, 'C' },
		{ "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	uint64_t v, ncpu = (uint64_t)sysconf(_SC_NPROCESSORS_ONLN);
	int c, b, err = 0;

	o->size = 1ull << 30;
	o->repeat = 3;
	optind = 1;
	while (!err && (c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 's': err = parse_count(optarg, true, &o->size); break;
		case 'b': err = parse_backing(optarg, &b);
			err = err ? err : (o->nbacking < 4 ? 0 : -EINVAL);
			if (!err)
				o->backing[o->nbacking++] = b;
			break;
		case 't': err = parse_count(optarg, false, &v);
			err = err ? err : (v >= 1 && v <= 1024 ? 0 : -EINVAL);
			o->threads[0] = (unsigned)v;
			o->nthreads = 1;
			break;
		case 'r': err = parse_count(optarg, false, &v);
			err = err ? err : (v >= 1 && v <= PF_MAX_REPEAT ? 0 : -EINVAL);
			o->repeat = (unsigned)v;
			break;
		case 'j': o->json = true; break;
		case 'C': o->csv = optarg; break;
		case 'h': fputs(pf_usage, stdout); return 1;
		default: err = -EINVAL;
		}
	}
	if (!err && (o->size < PF_PAGE || optind < argc))
		err = -EINVAL;
	if (err) {
		fprintf(stderr, "hkv-bench prefault: bad arguments; try --help\n");
		return -EINVAL;
	}
	if (!o->nbacking) {
		o->backing[0] = HKV_BACKING_SMALL;
		o->backing[1] = HKV_BACKING_THP;
		o->backing[2] = HKV_BACKING_HUGE_2M;
		o->nbacking = 3;
		/* 1 GiB pages where the kernel offers them */
		if (!access("/sys/kernel/mm/hugepages/hugepages-1048576kB", F_OK))
			o->backing[o->nbacking++] = HKV_BACKING_HUGE_1G;
	}
	if (!o->nthreads) {
		o->threads[0] = 1;
		o->threads[1] = (unsigned)ncpu;
		o->nthreads = ncpu > 1 ? 2 : 1;
	}
	return 0;
}

static void pf_report(const struct pf_opts *o, const struct pf_result *res, unsigned n)
{
	struct json j;
	unsigned i;

	if (!o->json) {
		printf("prefault: %llu MiB pools, warm = median of %u runs\n",
		       (unsigned long long)(o->size >> 20), o->repeat);
		printf("  %-4s %3s %10s %10s %10s %10s %10s %8s\n", "back", "thr", "cold ms",
		       "cold GB/s", "warm ms", "warm GB/s", "memset", "ratio");
		for (i = 0; i < n; i++) {
			const struct pf_result *r = &res[i];

			if (r->err) {
				printf("  %-4s %3u  failed: %s\n", hkv_backing_name(r->backing), r->threads,
				       hkv_strerror(r->err));
				continue;
			}
			printf("  %-4s %3u %10.1f %10.2f %10.1f %10.2f %10.2f %7.0f%%\n",
			       hkv_backing_name(r->backing), r->threads, r->cold_create_ms, r->cold_gbps,
			       r->create_ms, r->prefault_gbps, r->memset_gbps,
			       100 * r->prefault_gbps / r->memset_gbps);
		}
		return;
	}
	json_begin(&j, stdout);
	json_str(&j, "bench", "prefault");
	json_u64(&j, "version", 1);
	json_u64(&j, "size", o->size);
	json_u64(&j, "repeat", o->repeat);
	json_arr(&j, "runs");
	for (i = 0; i < n; i++) {
		const struct pf_result *r = &res[i];

		json_obj(&j, NULL);
		json_str(&j, "backing", hkv_backing_name(r->backing));
		json_u64(&j, "threads", r->threads);
		if (r->err) {
			json_str(&j, "error", hkv_strerror(r->err));
			json_obj_end(&j);
			continue;
		}
		json_u64(&j, "hugepage_bytes", r->hugepage_bytes);
		json_dbl(&j, "cold_create_ms", r->cold_create_ms);
		json_dbl(&j, "cold_prefault_gbps", r->cold_gbps);
		json_dbl(&j, "create_ms", r->create_ms);
		json_dbl(&j, "prefault_gbps", r->prefault_gbps);
		json_dbl(&j, "memset_gbps", r->memset_gbps);
		json_dbl(&j, "prefault_vs_memset", r->prefault_gbps / r->memset_gbps);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	json_end(&j);
}

static int pf_csv(const struct pf_opts *o, const struct pf_result *res, unsigned n)
{
	FILE *f = csv_open(o->csv, "prefault.csv",
			   "backing,threads,cold_create_ms,cold_gbps,create_ms,prefault_gbps,"
			   "memset_gbps");
	unsigned i;

	for (i = 0; f && i < n; i++)
		if (!res[i].err)
			fprintf(f, "%s,%u,%.2f,%.3f,%.2f,%.3f,%.3f\n", hkv_backing_name(res[i].backing),
				res[i].threads, res[i].cold_create_ms, res[i].cold_gbps,
				res[i].create_ms, res[i].prefault_gbps, res[i].memset_gbps);
	return !f || fclose(f) ? -EIO : 0;
}

/**
 * bench_prefault() - `hkv-bench prefault`
 * @argc: argument count
 * @argv: arguments, argv[0] = "prefault"
 *
 * Return: exit status: 0, 1 when a run failed, 2 for bad arguments.
 */
int bench_prefault(int argc, char **argv)
{
	struct pf_opts o = { 0 };
	struct pf_result res[8];
	unsigned n = 0, b, t;
	int err = pf_parse(&o, argc, argv), bad = 0;

	if (err)
		return err > 0 ? 0 : 2;
	timer_init();
	for (b = 0; b < o.nbacking; b++)
		for (t = 0; t < o.nthreads; t++) {
			pf_run(&o, o.backing[b], o.threads[t], &res[n]);
			bad |= res[n++].err != 0;
		}
	if (o.csv && pf_csv(&o, res, n))
		bad = 1;
	pf_report(&o, res, n);
	return bad;
}
