// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * named.c - `hkv-bench named`: what a named pool costs against a pool
 * private to one process, each figure from real processes:
 *
 * - attach: hkv_pool_attach() in a fresh process, for an index-only pool
 *   of --index-pages pages and for a memory pool of --mem-pages pages of
 *   --page-bytes (hugetlbfs if a mount of that page size exists, else tmpfs);
 *   median of --repeat attaches.
 * - restart to first hit: a process creates the pool, fills --units units
 *   (bytes written) and exits; a new process attaches, lists the units,
 *   reads the first unit's extents and its first byte: that time.
 * - alloc+free: one page allocated and freed, in batches alternated in one
 *   process between a private pool and a named pool (the same options), the
 *   ratio of the medians (per batch, ns per pair); the goal is <= 1.2.
 * - processes: --procs processes each allocating and freeing on its own
 *   lane of one named pool, against one process alone; and the same on
 *   private pools (no sharing) for the scale a shared lock allows.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hugekv.h>

#include "bench.h"
#include "common.h"

#define NAMED_MAX_REPEAT	31
#define NAMED_MAX_PROCS		64
#define PAIR_BATCH		4096

struct named_opts {
	uint64_t index_pages, mem_pages, page_bytes, units;
	unsigned repeat, procs;
	uint64_t pairs;			/* alloc+free pairs per process run */
	char name[48];
	/* results (ns, or pairs per second) */
	double attach_index_ns, attach_mem_ns, restart_hit_ns, restart_list_ns;
	double pair_private_ns, pair_named_ns, pair_ratio;
	double one_named, n_named, one_private, n_private;	/* pairs/s */
	int mem_backing;
	uint64_t mem_hugepage;
	int mem_err;
};

enum { O_INDEX = 1, O_MEM, O_PAGE, O_UNITS, O_REPEAT, O_PROCS, O_PAIRS };

static const struct option named_opts_tab[] = {
	{ "index-pages", 1, NULL, O_INDEX },
	{ "mem-pages", 1, NULL, O_MEM },
	{ "page-bytes", 1, NULL, O_PAGE },
	{ "units", 1, NULL, O_UNITS },
	{ "repeat", 1, NULL, O_REPEAT },
	{ "procs", 1, NULL, O_PROCS },
	{ "pairs", 1, NULL, O_PAIRS },
	{ NULL, 0, NULL, 0 },
};

static const char named_usage[] =
"usage: hkv-bench named [options]\n"
"\n"
"Named pools (one pool for many processes, across restarts) against private\n"
"ones: attach time, restart to first hit, alloc+free cost, processes on own\n"
"lanes. Pools are made in $HUGEKV_NAMED_DIR (default /dev/shm) and removed.\n"
"\n"
"  --index-pages N      index-only pool for the attach time (3.5M)\n"
"  --mem-pages N        memory pool for attach and restart (1024)\n"
"  --page-bytes B       its page size (2M: hugetlbfs if mounted, else tmpfs)\n"
"  --units N            units filled before the restart (1000)\n"
"  --repeat N           attaches and batches measured (9, at most 31)\n"
"  --procs N            processes on their own lanes (4)\n"
"  --pairs N            alloc+free pairs per process (200000)\n";

static void named_init(void *p)
{
	struct named_opts *o = p;

	o->index_pages = 3500000;
	o->mem_pages = 1024;
	o->page_bytes = 2 << 20;
	o->units = 1000;
	o->repeat = 9;
	o->procs = 4;
	o->pairs = 200000;
	snprintf(o->name, sizeof(o->name), "hkv-bench-%d", (int)getpid());
}

static int named_parse(void *p, int opt, const char *arg)
{
	struct named_opts *o = p;
	uint64_t v;

	if (parse_count(arg, opt == O_PAGE, &v) || !v)
		return -EINVAL;
	switch (opt) {
	case O_INDEX: o->index_pages = v; break;
	case O_MEM: o->mem_pages = v; break;
	case O_PAGE: o->page_bytes = v; break;
	case O_UNITS: o->units = v; break;
	case O_REPEAT:
		if (v > NAMED_MAX_REPEAT)
			return -EINVAL;
		o->repeat = (unsigned)v;
		break;
	case O_PROCS:
		if (v > NAMED_MAX_PROCS)
			return -EINVAL;
		o->procs = (unsigned)v;
		break;
	case O_PAIRS: o->pairs = v; break;
	default: return -EINVAL;
	}
	return 0;
}

static int named_validate(void *p, int json)
{
	struct named_opts *o = p;

	(void)json;
	if (o->units > o->mem_pages) {
		fprintf(stderr, "hkv-bench named: --units over --mem-pages\n");
		return -EINVAL;
	}
	return 0;
}

static int mk(const struct named_opts *o, const char *suffix, uint64_t npages, uint64_t pb,
	      unsigned nlanes, bool named, struct hkv_pool **p)
{
	char name[64];
	struct hkv_pool_opts po = { .sz = sizeof(po), .npages = npages, .page_bytes = pb,
				    .nlanes = nlanes, .name = named ? name : NULL };

	snprintf(name, sizeof(name), "%s-%s", o->name, suffix);
	return hkv_pool_create(&po, p);
}

static void rm(const struct named_opts *o, const char *suffix)
{
	char name[64];

	snprintf(name, sizeof(name), "%s-%s", o->name, suffix);
	hkv_pool_unlink_flags(name, HKV_UNLINK_FORCE);
}

/* a child's figure comes back through a pipe */
static int child_report(int fd, double v)
{
	return write(fd, &v, sizeof(v)) == sizeof(v) ? 0 : 1;
}

static double child_read(int fd, pid_t pid)
{
	double v = -1;
	int st;

	if (read(fd, &v, sizeof(v)) != sizeof(v))
		v = -1;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && !WEXITSTATUS(st) ? v : -1;
}

/* attach in a fresh process: ns */
static double attach_once(const struct named_opts *o, const char *suffix)
{
	char name[64];
	int fds[2];
	pid_t pid;

	snprintf(name, sizeof(name), "%s-%s", o->name, suffix);
	if (pipe(fds))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct hkv_pool *p = NULL;
		uint64_t t0 = now_ns();
		int err = hkv_pool_attach(name, 0, &p);
		double ns = (double)(now_ns() - t0);

		if (!err)
			hkv_pool_destroy(p);
		_exit(err ? 1 : child_report(fds[1], ns));
	}
	close(fds[1]);
	{
		double v = child_read(fds[0], pid);

		close(fds[0]);
		return v;
	}
}

static double attach_median(const struct named_opts *o, const char *suffix)
{
	double v[NAMED_MAX_REPEAT];

	for (unsigned i = 0; i < o->repeat; i++)
		if ((v[i] = attach_once(o, suffix)) < 0)
			return -1;
	return median_d(v, o->repeat);
}

static int fill_units(struct hkv_pool *p, uint64_t units, uint64_t pb)
{
	struct hkv_extent e;

	for (uint64_t u = 0; u < units; u++) {
		if (hkv_alloc(p, 1, HKV_LANE_ANY, 0, &e, 1) != 1)
			return -ENOMEM;
		memset(hkv_page_ptr(p, e.start), (int)(u & 0xff), pb < 4096 ? pb : 4096);
		if (hkv_unit_add(p, 0x5000000000ull + u, &e, 1))
			return -EIO;
	}
	return 0;
}

/* a process fills the pool and exits; the next one attaches and hits */
static int restart(struct named_opts *o)
{
	char name[64];
	int fds[2], st;
	pid_t pid;

	snprintf(name, sizeof(name), "%s-restart", o->name);
	pid = fork();
	if (pid == 0) {
		struct hkv_pool *p = NULL;

		if (mk(o, "restart", o->mem_pages, o->page_bytes, 1, true, &p) ||
		    fill_units(p, o->units, o->page_bytes))
			_exit(1);
		_exit(0);	/* the serving process ends, the cache stays */
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		rm(o, "restart");
		return -EIO;
	}
	if (pipe(fds))
		return -errno;
	pid = fork();
	if (pid == 0) {
		struct hkv_pool *p = NULL;
		uint64_t *ids = malloc(o->units * sizeof(*ids)), t0 = now_ns(), t1;
		struct hkv_extent e;
		int64_t n;
		volatile char c;

		if (!ids || hkv_pool_attach(name, 0, &p))
			_exit(1);
		n = hkv_unit_list(p, ids, o->units);
		if (n != (int64_t)o->units || hkv_unit_extents(p, ids[0], &e, 1) != 1)
			_exit(2);
		c = *(volatile char *)hkv_page_ptr(p, e.start);
		(void)c;
		t1 = now_ns();
		if (child_report(fds[1], (double)(t1 - t0)))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	o->restart_hit_ns = child_read(fds[0], pid);
	close(fds[0]);
	rm(o, "restart");
	return o->restart_hit_ns < 0 ? -EIO : 0;
}

/* ns per alloc+free pair over a batch */
static double pairs_ns(struct hkv_pool *p, unsigned lane, uint64_t n)
{
	struct hkv_extent e;
	uint64_t t0 = now_ns();

	for (uint64_t i = 0; i < n; i++) {
		if (hkv_alloc(p, 1, lane, 0, &e, 1) != 1 || hkv_free(p, &e, 1))
			return -1;
	}
	return (double)(now_ns() - t0) / (double)n;
}

static int pair_cost(struct named_opts *o)
{
	struct hkv_pool *priv = NULL, *nam = NULL;
	double a[NAMED_MAX_REPEAT], b[NAMED_MAX_REPEAT];
	int err = mk(o, "pair", 65536, 0, 1, false, &priv);

	if (!err)
		err = mk(o, "pair", 65536, 0, 1, true, &nam);
	if (err)
		goto out;
	pairs_ns(priv, 0, PAIR_BATCH);	/* warm both */
	pairs_ns(nam, 0, PAIR_BATCH);
	for (unsigned i = 0; i < o->repeat; i++) {	/* interleaved */
		a[i] = pairs_ns(priv, 0, 16 * PAIR_BATCH);
		b[i] = pairs_ns(nam, 0, 16 * PAIR_BATCH);
		if (a[i] < 0 || b[i] < 0) {
			err = -EIO;
			goto out;
		}
	}
	o->pair_private_ns = median_d(a, o->repeat);
	o->pair_named_ns = median_d(b, o->repeat);
	o->pair_ratio = o->pair_named_ns / o->pair_private_ns;
out:
	hkv_pool_destroy(priv);
	hkv_pool_destroy(nam);
	rm(o, "pair");
	return err;
}

/* nproc processes, each on its own lane (named) or its own pool: pairs/s */
static double procs_rate(struct named_opts *o, unsigned nproc, bool named)
{
	char name[64];
	pid_t pid[NAMED_MAX_PROCS];
	int fds[2];
	double worst = 0;
	struct hkv_pool *p = NULL;

	snprintf(name, sizeof(name), "%s-procs", o->name);
	if (named && mk(o, "procs", 65536ull * nproc, 0, nproc, true, &p))
		return -1;
	if (pipe(fds))
		return -1;
	for (unsigned i = 0; i < nproc; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			struct hkv_pool *q = NULL;
			int err = named ? hkv_pool_attach(name, 0, &q)
					: mk(o, "x", 65536, 0, 1, false, &q);
			double ns = err ? -1 : pairs_ns(q, named ? i : 0, o->pairs);

			_exit(ns < 0 ? 1 : child_report(fds[1], ns));
		}
	}
	close(fds[1]);
	for (unsigned i = 0; i < nproc; i++) {
		double v = child_read(fds[0], pid[i]);

		if (v < 0)
			worst = -1;
		else if (worst >= 0 && v > worst)
			worst = v;
	}
	close(fds[0]);
	hkv_pool_destroy(p);
	if (named)
		rm(o, "procs");
	/* every process's pairs over the slowest one's time */
	return worst > 0 ? (double)nproc * 1e9 / worst : -1;
}

static int named_measure(void *p)
{
	struct named_opts *o = p;
	struct hkv_named_info info = { .sz = sizeof(info) };
	struct hkv_pool *pool = NULL;
	int err;

	err = mk(o, "index", o->index_pages, 0, 1, true, &pool);
	if (err)
		return err;
	hkv_pool_destroy(pool);
	o->attach_index_ns = attach_median(o, "index");
	rm(o, "index");
	o->mem_err = mk(o, "mem", o->mem_pages, o->page_bytes, 1, true, &pool);
	if (!o->mem_err) {
		if (!hkv_pool_info(pool, &info)) {
			o->mem_backing = info.backing;
			o->mem_hugepage = info.hugepage_bytes;
		}
		hkv_pool_destroy(pool);
		o->attach_mem_ns = attach_median(o, "mem");
		rm(o, "mem");
		err = restart(o);
		if (err)
			return err;
	}
	err = pair_cost(o);
	if (err)
		return err;
	o->one_named = procs_rate(o, 1, true);
	o->n_named = procs_rate(o, o->procs, true);
	o->one_private = procs_rate(o, 1, false);
	o->n_private = procs_rate(o, o->procs, false);
	return 0;
}

static void named_report(void *p, struct json *j)
{
	struct named_opts *o = p;

	if (j) {
		json_u64(j, "index_pages", o->index_pages);
		json_dbl(j, "attach_index_ns", o->attach_index_ns);
		json_u64(j, "mem_pages", o->mem_pages);
		json_u64(j, "page_bytes", o->page_bytes);
		json_i64(j, "mem_errno", -o->mem_err);
		json_str(j, "mem_backing", hkv_backing_name(o->mem_backing));
		json_u64(j, "mem_hugepage_bytes", o->mem_hugepage);
		json_dbl(j, "attach_mem_ns", o->attach_mem_ns);
		json_u64(j, "units", o->units);
		json_dbl(j, "restart_to_first_hit_ns", o->restart_hit_ns);
		json_dbl(j, "alloc_free_private_ns", o->pair_private_ns);
		json_dbl(j, "alloc_free_named_ns", o->pair_named_ns);
		json_dbl(j, "alloc_free_ratio", o->pair_ratio);
		json_u64(j, "procs", o->procs);
		json_dbl(j, "named_one_proc_pairs_per_s", o->one_named);
		json_dbl(j, "named_n_procs_pairs_per_s", o->n_named);
		json_dbl(j, "private_one_proc_pairs_per_s", o->one_private);
		json_dbl(j, "private_n_procs_pairs_per_s", o->n_private);
		return;
	}
	printf("attach, index-only %llu pages:      %10.3f ms (median of %u)\n",
	       (unsigned long long)o->index_pages, o->attach_index_ns / 1e6, o->repeat);
	if (o->mem_err)
		printf("memory pool: %s\n", hkv_strerror(o->mem_err));
	else
		printf("attach, %llu pages of %llu B (%s, %llu B pages): %10.3f ms\n"
		       "restart to first hit (%llu units):  %10.3f ms\n",
		       (unsigned long long)o->mem_pages, (unsigned long long)o->page_bytes,
		       hkv_backing_name(o->mem_backing), (unsigned long long)o->mem_hugepage,
		       o->attach_mem_ns / 1e6, (unsigned long long)o->units,
		       o->restart_hit_ns / 1e6);
	printf("alloc+free, private pool:           %10.1f ns\n"
	       "alloc+free, named pool:             %10.1f ns  (%.2fx; goal <= 1.2x)\n",
	       o->pair_private_ns, o->pair_named_ns, o->pair_ratio);
	printf("named pool, 1 process:              %10.2f M pairs/s\n"
	       "named pool, %2u processes, own lanes: %9.2f M pairs/s (%.2fx)\n"
	       "private pools, 1 process:           %10.2f M pairs/s\n"
	       "private pools, %2u processes:        %10.2f M pairs/s (%.2fx)\n",
	       o->one_named / 1e6, o->procs, o->n_named / 1e6, o->n_named / o->one_named,
	       o->one_private / 1e6, o->procs, o->n_private / 1e6,
	       o->n_private / o->one_private);
}

const struct bench bench_named = {
	.name = "named",
	.what = "named pools: attach, restart to first hit, alloc+free, processes",
	.usage = named_usage,
	.opts = named_opts_tab,
	.size = sizeof(struct named_opts),
	.init = named_init,
	.parse = named_parse,
	.validate = named_validate,
	.measure = named_measure,
	.report = named_report,
};
