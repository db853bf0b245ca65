// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * trace.c - `hkv-bench trace`: what tracing costs the allocator.
 *
 * The same alloc/free loop runs on the library this tool links, first with
 * its probes unattached (each a nop, the alloc/free sites behind a
 * semaphore test), then with hkv-trace attached to this process in its
 * default view and with --ops (every probe hit runs a BPF program), then
 * unattached again; the attached rounds are priced against the unattached
 * rounds on both sides of them.
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

/**
 * round_ns() - one round of the loop: free the oldest held allocation,
 * allocate the next size into its slot
 * @pairs: alloc+free pairs
 * @out: receives ns per pair
 *
 * Return: 0, or -errno.
 */
static int round_ns(uint64_t pairs, double *out)
{
	static struct hkv_extent ext[HELD][8];
	static int n[HELD];
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = 1u << 20,
				   .backing = HKV_BACKING_NONE, .numa_node = -1 };
	struct hkv_pool *p;
	uint64_t t0, i;
	int err = hkv_pool_create(&o, &p);

	if (err)
		return err;
	memset(n, 0, sizeof(n));
	for (i = 0; i < HELD; i++)
		n[i] = hkv_alloc(p, sizes[i % NSIZES], HKV_LANE_ANY, 0, ext[i], 8);
	t0 = now_ns();
	for (i = 0; i < pairs && !err; i++) {
		unsigned s = i % HELD;

		if (n[s] > 0)
			err = hkv_free(p, ext[s], n[s]);
		n[s] = hkv_alloc(p, sizes[(i + HELD) % NSIZES], HKV_LANE_ANY, 0, ext[s], 8);
		err = err ? err : n[s] < 0 ? n[s] : 0;
	}
	*out = (double)(now_ns() - t0) / pairs;
	hkv_pool_destroy(p);
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
		out[0] = 0;	/* too long: the exec then fails and says so */
}

/**
 * tracer_start() - run hkv-trace on this process and wait until attached
 * @lib: the library to attach to
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

enum { T_UNATTACHED, T_DEFAULT, T_OPS, T_N };

struct topts {
	uint64_t pairs;		/* alloc+free pairs per round */
	unsigned rounds;
	char lib[PATH_MAX];	/* the library hkv-trace attaches to */
	struct res r[T_N];
	bool have[T_N];
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

/* @rounds more unattached rounds into @ru */
static int measure_unattached(const struct topts *o, unsigned rounds, struct res *ru)
{
	int err = 0;

	for (unsigned r = 0; !err && r < rounds; r++)
		err = round_ns(o->pairs, &ru->v[ru->n++]);
	return err;
}

/* rounds of the loop while hkv-trace is attached to this process */
static int measure_attached(bool ops, const struct topts *o, struct res *ra)
{
	uint64_t pairs = ops ? o->pairs / 20 : o->pairs;
	unsigned rounds = o->rounds < 7 ? o->rounds : 7;
	struct tracer t = { 0 };
	int err = tracer_start(o->lib, ops, &t);

	if (err)
		return err;
	for (unsigned r = 0; !err && r < rounds; r++)
		err = round_ns(pairs, &ra->v[r]);
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

/* what one attached probe hit costs: the --ops rounds' extra time per hit */
static double ns_per_hit(const struct res *r)
{
	return r[T_OPS].hits ? (r[T_OPS].p50 - r[T_UNATTACHED].p50) * r[T_OPS].pairs /
			       r[T_OPS].hits : 0;
}

static const char *const t_what[T_N] = { "unattached", "attached, default view",
					 "attached, --ops" };
static const char *const t_key[T_N] = { "unattached", "attached_default", "attached_ops" };

static void print_text(const struct topts *o)
{
	const struct res *r = o->r;

	printf("hkv-bench trace: alloc+free pairs on an index-only pool of 1M pages (%d held),\n"
	       "  %llu pairs x %u rounds unattached, around the attached rounds\n", HELD,
	       (unsigned long long)o->pairs, o->rounds);
	printf("  %-24s %10s %10s %10s %9s\n", "", "p50 ns", "p10", "p90", "ratio");
	for (unsigned i = 0; i < T_N; i++) {
		if (!o->have[i])
			continue;
		printf("  %-24s %10.1f %10.1f %10.1f %9.3f", t_what[i], r[i].p50, r[i].p10,
		       r[i].p90, r[i].p50 / r[T_UNATTACHED].p50);
		if (i != T_UNATTACHED)
			printf("  %.3f hits/pair", (double)r[i].hits / r[i].pairs);
		if (i == T_OPS && r[i].hits)
			printf(", %.0f ns per hit", ns_per_hit(r));
		printf("\n");
	}
}

static void trace_report(void *st, struct json *j)
{
	const struct topts *o = st;
	const struct res *r = o->r;

	if (!j) {
		print_text(o);
		return;
	}
	json_u64(j, "pairs_per_round", o->pairs);
	json_u64(j, "rounds", o->rounds);
	for (unsigned i = 0; i < T_N; i++) {
		if (!o->have[i])
			continue;
		json_obj(j, t_key[i]);
		json_dbl(j, "ns_per_pair_p50", r[i].p50);
		json_dbl(j, "ns_per_pair_p10", r[i].p10);
		json_dbl(j, "ns_per_pair_p90", r[i].p90);
		json_dbl(j, "ns_per_pair_min", r[i].min);
		json_dbl(j, "ratio_vs_unattached", r[i].p50 / r[T_UNATTACHED].p50);
		if (i != T_UNATTACHED) {
			json_u64(j, "probe_hits", r[i].hits);
			json_dbl(j, "hits_per_pair", (double)r[i].hits / r[i].pairs);
		}
		if (i == T_OPS && r[i].hits)
			json_dbl(j, "ns_per_hit", ns_per_hit(r));
		json_obj_end(j);
	}
}

static const char trace_usage[] =
"usage: hkv-bench trace [--pairs N] [--rounds N] [--json]\n"
"\n"
"What tracing costs the allocator (root: hkv-trace attaches BPF): an\n"
"alloc/free loop (index-only pool, heavy-tailed sizes) on the linked\n"
"libhugekv.so with its probes unattached, then with hkv-trace attached to\n"
"this process in its default view and with --ops (ns per attached hit),\n"
"then unattached again. Reports medians and p10/p90 over rounds and ratios\n"
"against the unattached rounds. Default: 50000 pairs x 61 rounds (short\n"
"rounds, so a burst of noise from other processes lands in few pairs).\n"
"HKV_BENCH_CPU=N pins to a CPU.\n";

static const struct option trace_opts[] = {
	{ "pairs", 1, NULL, 'n' }, { "rounds", 1, NULL, 'r' }, { 0 },
};

static void trace_init(void *st)
{
	struct topts *o = st;

	o->pairs = 50000;
	o->rounds = 61;
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
	}
	return -EINVAL;
}

static int trace_measure(void *st)
{
	struct topts *o = st;
	struct res *ru = &o->r[T_UNATTACHED];
	Dl_info info;
	double warm;
	int err;

	if (geteuid() != 0) {
		fprintf(stderr, "hkv-bench trace: needs root (hkv-trace attaches BPF programs)\n");
		return -EPERM;
	}
	bench_pin_cpu();
	sizes_fill();
	if (!dladdr((void *)hkv_pool_create, &info) || !realpath(info.dli_fname, o->lib)) {
		fprintf(stderr, "hkv-bench trace: cannot find the linked libhugekv.so\n");
		return -ENOENT;
	}
	err = round_ns(o->pairs / 4, &warm) ?: measure_unattached(o, o->rounds / 2, ru);
	for (int i = T_DEFAULT; !err && i < T_N; i++)
		o->have[i] = !measure_attached(i == T_OPS, o, &o->r[i]);
	err = err ?: measure_unattached(o, o->rounds - o->rounds / 2, ru);
	if (err) {
		fprintf(stderr, "hkv-bench trace: %s\n", hkv_strerror(err));
		return err;
	}
	res_sum(ru);
	o->have[T_UNATTACHED] = true;
	return o->have[T_DEFAULT] && o->have[T_OPS] ? 0 : -EPERM;
}

const struct bench bench_trace = {
	.name = "trace",
	.what = "what tracing costs: unattached against attached probes",
	.usage = trace_usage,
	.opts = trace_opts,
	.size = sizeof(struct topts),
	.init = trace_init,
	.parse = trace_parse,
	.measure = trace_measure,
	.report = trace_report,
};
