// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * trace.c - `hkv-bench trace`: what the USDT probes cost.
 *
 * The same alloc/free loop runs in one process against two copies of the
 * library: noprobes/libhugekv.so (built with -DHKV_NO_PROBES, dlopen'ed
 * RTLD_LOCAL, its own globals) and the libhugekv.so this tool links, rounds
 * interleaved so drift hits both alike. Then hkv-trace is started on this
 * pid, in its default mode and with --ops, to price an attached hit.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hugekv.h"
#include "../../bpf/hugekv_probes.h"
#include "../lib/json_reader.h"
#include "bench.h"
#include "common.h"

#define HELD		4096		/* allocations held: the pool stays ~half full */
#define NSIZES		65536
#define MAXROUNDS	101

struct api {
	const char *name;
	char path[PATH_MAX];
	int (*create)(const struct hkv_pool_opts *, struct hkv_pool **);
	void (*destroy)(struct hkv_pool *);
	int (*alloc)(struct hkv_pool *, uint64_t, unsigned, unsigned, struct hkv_extent *,
		     unsigned);
	int (*free)(struct hkv_pool *, const struct hkv_extent *, unsigned);
};


static uint32_t sizes[NSIZES];

/* heavy-tailed request sizes, the same sequence for every run */
static void sizes_fill(void)
{
	struct rng r;

	rng_seed(&r, 42);
	for (unsigned i = 0; i < NSIZES; i++) {
		unsigned u = (unsigned)rng_below(&r, 100);

		sizes[i] = u < 70 ? 1 + rng_below(&r, 8) : u < 95 ? 8 + rng_below(&r, 56) :
			   64 + rng_below(&r, 448);
	}
}

static int api_load(struct api *a, const char *name, const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	a->name = name;
	if (!h) {
		fprintf(stderr, "hkv-bench trace: %s\n", dlerror());
		return -ENOENT;
	}
	if (!realpath(path, a->path))
		snprintf(a->path, sizeof(a->path), "%s", path);
	a->create = (int (*)(const struct hkv_pool_opts *, struct hkv_pool **))dlsym(h, "hkv_pool_create");
	a->destroy = (void (*)(struct hkv_pool *))dlsym(h, "hkv_pool_destroy");
	a->alloc = (int (*)(struct hkv_pool *, uint64_t, unsigned, unsigned,
			    struct hkv_extent *, unsigned))dlsym(h, "hkv_alloc");
	a->free = (int (*)(struct hkv_pool *, const struct hkv_extent *, unsigned))dlsym(h, "hkv_free");
	return a->create && a->destroy && a->alloc && a->free ? 0 : -ENOENT;
}

/**
 * round_ns() - one round of the loop: free the oldest held allocation,
 * allocate the next size into its slot
 * @a: library copy
 * @pairs: alloc+free pairs
 * @out: receives ns per pair
 *
 * Return: 0, or -errno.
 */
static int round_ns(const struct api *a, uint64_t pairs, double *out)
{
	static struct hkv_extent ext[HELD][8];
	static int n[HELD];
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 1u << 20,
				   .backing = HKV_BACKING_NONE, .numa_node = -1 };
	struct hkv_pool *p;
	uint64_t t0, i;
	int err = a->create(&o, &p);

	if (err)
		return err;
	memset(n, 0, sizeof(n));
	for (i = 0; i < HELD; i++)
		n[i] = a->alloc(p, sizes[i % NSIZES], HKV_LANE_ANY, 0, ext[i], 8);
	t0 = now_ns();
	for (i = 0; i < pairs && !err; i++) {
		unsigned s = i % HELD;

		if (n[s] > 0)
			err = a->free(p, ext[s], n[s]);
		n[s] = a->alloc(p, sizes[(i + HELD) % NSIZES], HKV_LANE_ANY, 0, ext[s], 8);
		err = err ? err : n[s] < 0 ? n[s] : 0;
	}
	*out = (double)(now_ns() - t0) / pairs;
	a->destroy(p);
	return err;
}

struct tracer {
	pid_t pid;
	FILE *out, *err;	/* err stays open: a closed pipe would SIGPIPE it */
	uint64_t hits;		/* probe hits hkv-trace counted */
};

/* DIR/name next to this executable */
static void beside_exe(const char *name, char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	exe[n > 0 ? n : 0] = 0;
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	if (snprintf(out, len, "%s/%s", slash ? exe : ".", name) >= (int)len)
		out[0] = 0;	/* too long: the dlopen/exec then fails and says so */
}

/**
 * tracer_start() - run hkv-trace on this process and wait until attached
 * @lib: the library copy to attach to
 * @ops: add --ops
 * @t: receives the child
 *
 * Return: 0, or -errno (not root, no hkv-trace, attach failed: said).
 */
static int tracer_start(const char *lib, bool ops, struct tracer *t)
{
	char exe[PATH_MAX], pid[16], line[512] = "";
	int out[2], err[2];
	bool attached = false;
	FILE *ef;

	beside_exe("hkv-trace", exe, sizeof(exe));
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (pipe(out) || pipe(err))
		return -errno;
	t->pid = fork();
	if (t->pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		execl(exe, exe, "-p", pid, "--lib", lib, "--json", "-d", "3600",
		      ops ? "--ops" : NULL, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	t->out = fdopen(out[0], "r");
	t->err = ef = fdopen(err[0], "r");
	while (!attached && ef && fgets(line, sizeof(line), ef))
		attached = !strncmp(line, "hkv-trace: attached", 19);
	if (attached)
		return 0;
	if (ef)
		fclose(ef);
	fprintf(stderr, "hkv-bench trace: hkv-trace did not attach%s%s", line[0] ? ": " : "\n",
		line);
	kill(t->pid, SIGKILL);
	waitpid(t->pid, NULL, 0);
	if (t->out)
		fclose(t->out);
	return -EPERM;
}

/* the probes of libhugekv: their hit counts are members of hkv-trace's JSON */
#define CORE_NAME_IF_CORE(name)	#name,
#define CORE_NAME_IF_XFER(name)
#define CORE_NAME_(lib, name, ID, ...) CORE_NAME_IF_##lib(name)

/* all of a stream, NUL-terminated (NULL without memory) */
static char *read_all(FILE *f)
{
	size_t n = 0, cap = 0;
	char *buf = NULL;

	for (;;) {
		if (cap - n < 4096) {
			char *b = realloc(buf, cap = cap ? 2 * cap : 16384);

			if (!b) {
				free(buf);
				return NULL;
			}
			buf = b;
		}
		size_t got = f ? fread(buf + n, 1, cap - n - 1, f) : 0;

		n += got;
		if (!got)
			break;
	}
	buf[n] = 0;
	return buf;
}

/* stop hkv-trace; the counts of its JSON give the hits (a probe left
 * unattached is null there: no hits) */
static void tracer_stop(struct tracer *t)
{
	static const char *const names[] = { HKV_PROBE_LIST(CORE_NAME_) };
	uint64_t v;
	char *buf;

	kill(t->pid, SIGINT);
	buf = read_all(t->out);
	if (t->out)
		fclose(t->out);
	waitpid(t->pid, NULL, 0);
	if (t->err)
		fclose(t->err);
	t->hits = 0;
	for (unsigned k = 0; buf && k < HKV_BENCH_ARRAY(names); k++)
		if (!json_get_u64(buf, names[k], &v))
			t->hits += v;
	free(buf);
}

struct res {
	double v[MAXROUNDS];	/* ns per pair, per round */
	unsigned n;
	double min, p10, p50, p90;
	uint64_t hits, pairs;	/* attached runs: probe hits over pairs run */
};

struct topts {
	uint64_t pairs;		/* alloc+free pairs per round */
	unsigned rounds;
	bool attach;
	const char *noprobes;	/* path of the -DHKV_NO_PROBES copy */
	struct res r[4];	/* compiled out, unattached, attached, --ops */
	bool have[4];
	double paired;
};

static void res_sum(struct res *r)
{
	double s[MAXROUNDS];

	memcpy(s, r->v, sizeof(s));
	r->p50 = median_d(s, r->n);	/* sorts s */
	r->min = s[0];
	r->p10 = s[r->n / 10];
	r->p90 = s[r->n - 1 - r->n / 10];
}

/* rounds of both copies, interleaved, order alternating; paired ratios */
static int measure_untraced(const struct api *np, const struct api *pr, const struct topts *o,
			    struct res *rn, struct res *rp, double *paired)
{
	double ratio[MAXROUNDS], warm;
	int err = round_ns(np, o->pairs / 4, &warm) ?: round_ns(pr, o->pairs / 4, &warm);

	for (unsigned r = 0; !err && r < o->rounds; r++) {
		const struct api *first = r & 1 ? pr : np, *second = r & 1 ? np : pr;
		double a, b;

		err = round_ns(first, o->pairs, &a) ?: round_ns(second, o->pairs, &b);
		rn->v[r] = r & 1 ? b : a;
		rp->v[r] = r & 1 ? a : b;
		ratio[r] = rp->v[r] / rn->v[r];
	}
	rn->n = rp->n = o->rounds;
	res_sum(rn);
	res_sum(rp);
	*paired = median_d(ratio, o->rounds);
	return err;
}

/* rounds of the probed copy while hkv-trace is attached to this process */
static int measure_attached(const struct api *pr, bool ops, const struct topts *o, struct res *ra)
{
	uint64_t pairs = ops ? o->pairs / 20 : o->pairs;
	unsigned rounds = o->rounds < 7 ? o->rounds : 7;
	struct tracer t = { 0 };
	int err = tracer_start(pr->path, ops, &t);

	if (err)
		return err;
	for (unsigned r = 0; !err && r < rounds; r++)
		err = round_ns(pr, pairs, &ra->v[r]);
	tracer_stop(&t);
	ra->n = rounds;
	ra->hits = t.hits;
	/* each round's fill (HELD allocations, untimed) hit alloc too */
	if (ops)
		ra->hits -= ra->hits > (uint64_t)HELD * rounds ? (uint64_t)HELD * rounds : ra->hits;
	ra->pairs = pairs * rounds;
	res_sum(ra);
	return err;
}

static void print_text(const struct topts *o)
{
	const struct res *r = o->r;
	static const char *const what[] = { "probes compiled out", "probes in, unattached",
					    "attached, default view", "attached, --ops" };

	printf("hkv-bench trace: alloc+free pairs on an index-only pool of 1M pages (%d held),\n"
	       "  %llu pairs x %u rounds, both copies interleaved in one process\n", HELD,
	       (unsigned long long)o->pairs, o->rounds);
	printf("  %-24s %10s %10s %10s %9s\n", "", "p50 ns", "p10", "p90", "vs out");
	for (unsigned i = 0; i < 4; i++) {
		if (!o->have[i])
			continue;
		printf("  %-24s %10.1f %10.1f %10.1f %9.4f", what[i], r[i].p50, r[i].p10,
		       r[i].p90, r[i].p50 / r[0].p50);
		if (i == 1)
			printf("  paired-round median %.4f, best-round %.4f (target <= 1.01)",
			       o->paired, r[1].min / r[0].min);
		if (i >= 2)
			printf("  %.3f hits/pair", (double)r[i].hits / r[i].pairs);
		if (i == 3 && r[i].hits)
			printf(", %.0f ns per hit",
			       (r[3].p50 - r[1].p50) * r[3].pairs / r[3].hits);
		printf("\n");
	}
}

static void trace_report(void *st, struct json *j)
{
	const struct topts *o = st;
	const struct res *r = o->r;
	static const char *const key[] = { "compiled_out", "unattached", "attached_default",
					   "attached_ops" };

	if (!j) {
		print_text(o);
		return;
	}
	json_u64(j, "pairs_per_round", o->pairs);
	json_u64(j, "rounds", o->rounds);
	for (unsigned i = 0; i < 4; i++) {
		if (!o->have[i])
			continue;
		json_obj(j, key[i]);
		json_dbl(j, "ns_per_pair_p50", r[i].p50);
		json_dbl(j, "ns_per_pair_p10", r[i].p10);
		json_dbl(j, "ns_per_pair_p90", r[i].p90);
		json_dbl(j, "ratio_vs_compiled_out", r[i].p50 / r[0].p50);
		json_dbl(j, "ns_per_pair_min", r[i].min);
		if (i == 1) {
			json_dbl(j, "paired_round_ratio", o->paired);
			json_dbl(j, "best_round_ratio", r[1].min / r[0].min);
		}
		if (i >= 2) {
			json_u64(j, "probe_hits", r[i].hits);
			json_dbl(j, "hits_per_pair", (double)r[i].hits / r[i].pairs);
		}
		if (i == 3 && r[i].hits)
			json_dbl(j, "ns_per_hit", (r[3].p50 - r[1].p50) * r[3].pairs / r[3].hits);
		json_obj_end(j);
	}
}

static const char trace_usage[] =
"usage: hkv-bench trace [--pairs N] [--rounds N] [--no-attach] [--json]\n"
"                       [--noprobes-lib PATH]\n"
"\n"
"Probe overhead on an alloc/free loop (index-only pool, heavy-tailed sizes):\n"
"the library built with -DHKV_NO_PROBES (noprobes/libhugekv.so beside this\n"
"tool, dlopen'ed RTLD_LOCAL) against the linked libhugekv.so with its probes\n"
"unattached, rounds interleaved; then, as root, with hkv-trace attached to\n"
"this process in its default view and with --ops (ns per attached hit).\n"
"Reports medians and p10/p90 over rounds, ratios against the compiled-out\n"
"copy. Default: 50000 pairs x 61 rounds (short rounds, so a burst of noise\n"
"from other processes lands in few pairs). HKV_BENCH_CPU=N pins to a CPU.\n";

static const struct option trace_opts[] = {
	{ "pairs", 1, NULL, 'n' }, { "rounds", 1, NULL, 'r' },
	{ "no-attach", 0, NULL, 'A' }, { "noprobes-lib", 1, NULL, 'L' }, { 0 },
};

static void trace_init(void *st)
{
	struct topts *o = st;

	o->pairs = 50000;
	o->rounds = 61;
	o->attach = true;
	o->have[0] = o->have[1] = true;
}

static int trace_parse(void *st, int c, const char *arg)
{
	struct topts *o = st;
	uint64_t v;

	switch (c) {
	case 'n':
		if (parse_count(arg, false, &v) || v < 1000)
			return fprintf(stderr, "hkv-bench trace: --pairs >= 1000\n"), -EINVAL;
		o->pairs = v;
		return 0;
	case 'r':
		if (parse_count(arg, false, &v) || v < 3 || v > MAXROUNDS)
			return fprintf(stderr, "hkv-bench trace: --rounds 3..%d\n", MAXROUNDS), -EINVAL;
		o->rounds = (unsigned)v;
		return 0;
	case 'A': o->attach = false; return 0;
	case 'L': o->noprobes = arg; return 0;
	}
	return -EINVAL;
}

static int trace_measure(void *st)
{
	struct topts *o = st;
	char nppath[PATH_MAX];
	struct api np, pr;
	Dl_info info;
	int err;

	bench_pin_cpu();
	sizes_fill();
	if (!o->noprobes)
		beside_exe("noprobes/libhugekv.so", nppath, sizeof(nppath));
	if (api_load(&np, "compiled out", o->noprobes ? o->noprobes : nppath) ||
	    !dladdr((void *)hkv_pool_create, &info) ||
	    api_load(&pr, "probes in", info.dli_fname))
		return -ENOENT;
	err = measure_untraced(&np, &pr, o, &o->r[0], &o->r[1], &o->paired);
	if (!err && o->attach && geteuid() != 0)
		fprintf(stderr, "hkv-bench trace: not root: attached runs skipped\n");
	else if (!err && o->attach)
		for (int i = 2; i < 4; i++)
			o->have[i] = !measure_attached(&pr, i == 3, o, &o->r[i]);
	if (err)
		fprintf(stderr, "hkv-bench trace: %s\n", hkv_strerror(err));
	return err;
}

const struct bench bench_trace = {
	.name = "trace",
	.what = "probe overhead, untraced and traced",
	.usage = trace_usage,
	.opts = trace_opts,
	.size = sizeof(struct topts),
	.init = trace_init,
	.parse = trace_parse,
	.measure = trace_measure,
	.report = trace_report,
};
