// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lanes.c - `hkv-bench lanes`: allocation throughput of 1 thread, of 2
 * threads on their own lanes, and of 2 threads sharing one lane. Each
 * thread churns its own allocations (random victims) at the target
 * occupancy of its share with the churn workload's state machine
 * (workload.c: fill, one space of burn-in churn, the measured ops); the
 * figure is ops per second over the slowest thread's wall time, median of
 * the repeats.
 *
 * Handoff (the engine pattern: a scheduler allocates, a backup thread frees):
 * one thread allocates and picks the victims, and hands each victim through
 * a single-producer ring to the other thread, which frees it. Ops are the
 * allocations plus the frees; time runs until the last handed victim is
 * freed. handoff64 hands victims over 64 at a time (a finished backup's
 * frees), freed one hkv_free() call each; handoff64_call frees each batch
 * in one call (its extents in one array, as an engine can free a finished
 * backup's pages: one call for the lane's holder to run, not 64 queued
 * frees); harness64 runs the same threads, ring and batches with stand-ins
 * for hkv_alloc() and hkv_free() that do nothing: the hand-over's own cost,
 * the ceiling handoff64 is measured against.
 *
 * harness_one runs one thread's churn with the same stand-ins: with the
 * 1-thread figure it prices the pool's calls alone (per op, 1 thread's time
 * less harness_one's). A handoff on one lane runs every allocation and
 * every free under the lane's lock, one after the other: at best the
 * harness's time plus that price per op, the "serial ceiling" reported as a
 * share of harness64 beside the handoffs' shares.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "workload.h"

#define LANES_MAX_REPEAT	15
#define LANES_MAX_SIZE		4096	/* request sizes are capped here */

#define RING_SIZE	4096	/* victims in flight, handoff mode */

struct ring {			/* single producer, single consumer */
	struct rec slot[RING_SIZE];
	uint64_t head __attribute__((aligned(64)));	/* written by the consumer */
	uint64_t tail __attribute__((aligned(64)));	/* written by the producer */
	uint64_t fill;		/* the producer's next slot (>= tail: not published) */
	unsigned batch;		/* victims published at once */
	int done;		/* producer finished */
};

struct lthread {
	struct hkv_pool *pool;
	struct ring *ring;	/* handoff: producer (allocates) or consumer */
	unsigned lane, cpu;
	uint64_t ops;		/* measured: the workload's, 0 for a consumer */
	struct workload w;	/* this thread's share of the space */
	bool harness;		/* stand-ins for hkv_alloc() and hkv_free() */
	bool one_call;		/* handoff consumer: a batch in one hkv_free() */
	pthread_barrier_t *bar;
	struct hkv_stats *st0;	/* the pool's counters when measuring starts */
	uint64_t ns;		/* measured loop */
	int err;
	uint64_t seed;
};

struct lcfg {
	const char *name;
	const char *key;	/* --only's name and the JSON keys' stem */
	unsigned threads, nlanes;
	bool shared;		/* all threads on lane 0 */
	bool handoff;		/* thread 0 allocates, thread 1 frees */
	unsigned batch;		/* handoff: victims handed over at once */
	bool harness;		/* handoff without the pool's calls */
	bool one_call;		/* a handed batch freed in one call */
};

#define NCFG	8
#define CFG_HANDOFF64	4
#define CFG_CALL64	5
#define CFG_HARNESS64	6
#define CFG_HARNESS1	7
/* the configurations reported as a share of harness64 */
#define CFG_SHARES(c)	((c) == CFG_HANDOFF64 || (c) == CFG_CALL64)
static const struct lcfg lcfgs[NCFG] = {
	{ "1 thread", "one_thread", 1, 1, false, false, 0, false, false },
	{ "2 threads, own lanes", "two_lanes", 2, 2, false, false, 0, false, false },
	{ "2 threads, one lane", "one_lane", 2, 1, true, false, 0, false, false },
	{ "2 threads, handoff", "handoff", 2, 1, true, true, 1, false, false },
	{ "2 threads, handoff 64", "handoff64", 2, 1, true, true, 64, false, false },
	{ "handoff 64, one call", "handoff64_call", 2, 1, true, true, 64, false, true },
	{ "harness alone, 64", "harness64", 2, 1, true, true, 64, true, false },
	{ "harness alone, 1 thread", "harness_one", 1, 1, false, false, 0, true, false },
};

#define CFG_KEYS	"two_lanes, one_lane, handoff, handoff64, handoff64_call, harness64, harness_one"

struct lanes_opts {
	uint64_t pages, ops;
	double occupancy;
	unsigned repeat;
	const char *sizes_spec;
	struct sizes sizes;
	double mops[NCFG][LANES_MAX_REPEAT], med[NCFG];
	double served[NCFG][LANES_MAX_REPEAT], served_med[NCFG];	/* share of calls */
	double deferred[NCFG][LANES_MAX_REPEAT], deferred_med[NCFG];	/* share of frees */
	struct spread ratio[NCFG];	/* per round, over one thread */
	/* handoff64 and handoff64_call (CFG_SHARES) over harness64, per round */
	struct spread share[NCFG];
	struct spread ceiling;		/* the serial ceiling over harness64, per round */
	bool run[NCFG];		/* --only: the configurations run (one thread always) */
};

static void lt_pin(const struct lthread *t)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);	/* best effort */
}

static int lt_alloc(struct lthread *t, struct rec *r, uint32_t n, struct hkv_extent *ext)
{
	int k;

	if (t->harness) {	/* what a one-extent answer costs the harness */
		r->n = 1;
		r->many = NULL;
		r->one = (struct hkv_extent){ 0, n };
		return 0;
	}
	k = hkv_alloc(t->pool, n, t->lane, 0, ext, n);

	if (k <= 0)
		return k ? k : -EUCLEAN;
	r->n = (uint32_t)k;
	r->many = NULL;
	if (k == 1) {
		r->one = ext[0];
		return 0;
	}
	r->many = malloc((size_t)k * sizeof(*ext));
	if (!r->many)
		return -ENOMEM;
	memcpy(r->many, ext, (size_t)k * sizeof(*ext));
	return 0;
}

static int lt_free(struct lthread *t, struct rec *r)
{
	int err = t->harness ? 0 : hkv_free(t->pool, r->n == 1 ? &r->one : r->many, r->n);

	free(r->many);
	r->many = NULL;
	return err;
}

/* hand the victims pushed so far to the consumer */
static void ring_publish(struct ring *r)
{
	if (r->fill != r->tail)
		__atomic_store_n(&r->tail, r->fill, __ATOMIC_RELEASE);
}

/* queue a victim; every batch-th is published with those before it */
static void ring_push(struct ring *r, const struct rec *x)
{
	uint64_t t = r->fill;

	if (t - __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == RING_SIZE) {
		ring_publish(r);	/* the consumer waits for these */
		while (t - __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == RING_SIZE)
			sched_yield();	/* the consumer is behind */
	}
	r->slot[t % RING_SIZE] = *x;
	r->fill = t + 1;
	if (r->fill % r->batch == 0)
		ring_publish(r);
}

/* one op of the churn: alloc when the next request fits the share, else
 * release a random live allocation (free it, or hand it to the consumer
 * once measuring). -ENOMEM on a shared lane releases instead; a handoff
 * producer waits for the consumer then (1: the op did not happen). */
static int lt_op(struct lthread *t, struct gen *g, struct rec *rec,
		 struct hkv_extent *ext, bool measuring)
{
	uint32_t id, p, pages;

	if (gen_fits(g)) {
		int err = lt_alloc(t, &rec[g->nlive], g->pending, ext);

		if (!err)
			return gen_alloc(g, &pages) < 0 ? -ENOMEM : 0;
		if (err != -ENOMEM || !g->nlive || (t->ring && !measuring))
			return err;
		if (t->ring) {
			ring_publish(t->ring);	/* their pages are what it waits for */
			sched_yield();	/* handed pages not freed yet */
			return 1;
		}
	}
	if (!g->nlive)
		return -EINVAL;
	id = gen_pick(g);
	p = g->pos[id];
	if (t->ring && measuring)
		ring_push(t->ring, &rec[p]);
	else if (lt_free(t, &rec[p]))
		return -EUCLEAN;
	rec[p] = rec[g->nlive - 1];
	gen_remove(g, id);
	return 0;
}

/* all threads start measuring together; one of them notes the counters */
static void lt_start(struct lthread *t)
{
	if (pthread_barrier_wait(t->bar) == PTHREAD_BARRIER_SERIAL_THREAD &&
	    hkv_stats(t->pool, t->st0))
		t->st0->sz = 0;
}

/* a churning thread (or a handoff producer) */
static void *lt_main(void *arg)
{
	struct lthread *t = arg;
	uint64_t cap = (uint64_t)(t->w.occupancy * t->w.npages) + 1, t0 = 0;
	struct rec *rec = calloc(cap, sizeof(*rec));
	struct hkv_extent *ext = malloc(LANES_MAX_SIZE * sizeof(*ext));
	bool started = false;
	struct gen g;
	int ph;

	lt_pin(t);
	gen_init(&g, &t->w);
	t->err = rec && ext ? 0 : -ENOMEM;
	while (!t->err && (ph = gen_phase(&g)) != PH_DONE) {
		int r;

		if (ph == PH_MEASURE && !started) {
			lt_start(t);
			started = true;
			t0 = now_ns();
		}
		r = lt_op(t, &g, rec, ext, ph == PH_MEASURE);
		if (r < 0)
			t->err = r;
		else if (!r)
			gen_count(&g, ph);
	}
	if (!started)		/* failed before measuring: do not strand the others */
		pthread_barrier_wait(t->bar);
	if (t->ring) {
		ring_publish(t->ring);
		__atomic_store_n(&t->ring->done, 1, __ATOMIC_RELEASE);
	}
	t->ns = now_ns() - t0;
	while (rec && g.nlive)
		lt_free(t, &rec[--g.nlive]);
	gen_fini(&g);
	free(rec);
	free(ext);
	return NULL;
}

/* handoff64_call: free the victims from h up to tail (a published batch)
 * in one hkv_free() call of all their extents; returns where it stopped
 * (tail, or where a victim did not fit the array: freed one by one) */
static uint64_t free_batch(struct lthread *t, struct ring *r, uint64_t h, uint64_t tail,
			   struct hkv_extent **batch, size_t *cap)
{
	uint64_t h0 = h;
	size_t n = 0;

	for (; h < tail; h++) {
		const struct rec *x = &r->slot[h % RING_SIZE];

		if (n + x->n > *cap) {
			size_t c = 2 * *cap > n + x->n ? 2 * *cap : n + x->n + 256;
			struct hkv_extent *b = realloc(*batch, c * sizeof(*b));

			if (!b)
				break;
			*batch = b;
			*cap = c;
		}
		memcpy(*batch + n, x->n == 1 ? &x->one : x->many, x->n * sizeof(**batch));
		n += x->n;
	}
	if (n && !t->err)
		t->err = hkv_free(t->pool, *batch, (unsigned)n);
	for (; h0 < h; h0++) {
		struct rec *x = &r->slot[h0 % RING_SIZE];

		free(x->many);
		x->many = NULL;
	}
	return h;
}

/* handoff consumer: free what the producer hands over until it is done;
 * its frees are counted in the producer's ops (one per victim handed) */
static void *lt_consumer(void *arg)
{
	struct lthread *t = arg;
	struct ring *r = t->ring;
	struct hkv_extent *batch = NULL;
	size_t cap = 0;
	uint64_t h = 0, t0;

	lt_pin(t);
	lt_start(t);
	t0 = now_ns();
	for (;;) {
		uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);

		if (h == tail) {
			if (__atomic_load_n(&r->done, __ATOMIC_ACQUIRE) &&
			    h == __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE))
				break;
			sched_yield();
			continue;
		}
		if (t->one_call)
			h = free_batch(t, r, h, tail, &batch, &cap);
		for (; h < tail; h++) {
			struct rec *x = &r->slot[h % RING_SIZE];

			if (!t->err)
				t->err = lt_free(t, x);
			else
				free(x->many);
		}
		__atomic_store_n(&r->head, h, __ATOMIC_RELEASE);
	}
	t->ns = now_ns() - t0;
	t->ops = 0;
	free(batch);
	return NULL;
}

/* the share of the measured allocations and frees (and the few frees of
 * the threads' last live allocations) that the lane's holder ran for a
 * waiting thread (hkv_stats' served_calls), and the share of the frees
 * answered at once and run by the holder later (deferred_frees) */
static void call_shares(const struct hkv_pool *pool, const struct hkv_stats *st0,
			double *served, double *deferred)
{
	struct hkv_stats st = { .sz = sizeof(st) };
	uint64_t calls, frees;

	*served = *deferred = 0;
	if (!st0->sz || hkv_stats(pool, &st))
		return;
	frees = st.frees - st0->frees;
	calls = st.allocs - st0->allocs + frees;
	if (calls)
		*served = (double)(st.served_calls - st0->served_calls) / (double)calls;
	if (frees)
		*deferred = (double)(st.deferred_frees - st0->deferred_frees) / (double)frees;
}

static int lanes_once(struct lanes_opts *o, const struct lcfg *cfg, unsigned rep,
		      double *mops, double *served, double *deferred)
{
	struct hkv_pool_opts po = { .sz = sizeof(po), .npages = o->pages,
				    .nlanes = cfg->nlanes, .backing = HKV_BACKING_NONE,
				    .numa_node = -1 };
	struct lthread t[2];
	pthread_t tid[2];
	pthread_barrier_t bar;
	struct hkv_pool *pool;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t ns = 0, ops = 0;
	struct ring *ring = NULL;
	struct hkv_stats st0 = { .sz = sizeof(st0) };
	int err;

	if (cfg->handoff && !(ring = calloc(1, sizeof(*ring))))
		return -ENOMEM;
	if (ring)
		ring->batch = cfg->batch;
	err = hkv_pool_create(&po, &pool);
	if (err) {
		free(ring);
		return err;
	}
	pthread_barrier_init(&bar, NULL, cfg->threads);
	for (unsigned i = 0; i < cfg->threads; i++) {
		t[i] = (struct lthread){
			.pool = pool, .lane = cfg->shared ? 0 : i,
			.cpu = (unsigned)(ncpu > 1 ? i % ncpu : 0),
			.ops = o->ops, .bar = &bar, .st0 = &st0, .harness = cfg->harness,
			.one_call = cfg->one_call,
			.w = { .npages = o->pages / cfg->threads, .occupancy = o->occupancy,
			       .burnin = 1, .ops = o->ops, .sizes = o->sizes,
			       .seed = 1000 * rep + i + 1 },
		};
		if (cfg->handoff) {	/* one producer over the whole lane */
			t[i].ring = ring;
			t[i].w.npages = o->pages;
			t[i].w.ops = t[i].ops = 2 * o->ops;
		}
		if (pthread_create(&tid[i], NULL, cfg->handoff && i ? lt_consumer : lt_main,
				   &t[i])) {
			fprintf(stderr, "hkv-bench: cannot start a thread\n");
			err = -EAGAIN;
			t[i].ns = t[i].ops = 0;
			if (i)		/* stand in at the barrier for it */
				pthread_barrier_wait(&bar);
			tid[i] = 0;
		}
	}
	for (unsigned i = 0; i < cfg->threads; i++) {
		if (tid[i])
			pthread_join(tid[i], NULL);
		err = err ? err : t[i].err;
		ns = t[i].ns > ns ? t[i].ns : ns;
		ops += t[i].ops;
	}
	pthread_barrier_destroy(&bar);
	call_shares(pool, &st0, served, deferred);
	hkv_pool_destroy(pool);
	free(ring);
	*mops = ns ? ops * 1e3 / ns : 0;
	return err;
}

static const char lanes_usage[] =
"usage: hkv-bench lanes [options]\n"
"Allocation throughput (allocs + frees per second) of 1 thread, 2 threads on\n"
"their own lanes, and 2 threads on one lane, each churning its share of an\n"
"index-only pool at the target occupancy (random victims, default sizes);\n"
"and handoff: one thread allocates and hands each victim to a second\n"
"thread that frees it (both on one lane); handoff64: the victims handed over\n"
"64 at a time; handoff64_call: each batch freed in one hkv_free() call;\n"
"harness64: the same hand-over with calls that do nothing (its own cost:\n"
"the handoffs' ceiling, reported as their share of it); harness_one: one\n"
"thread's churn with calls that do nothing, which prices the calls alone\n"
"and so the serial ceiling: harness64 plus every call run one after the\n"
"other, as one lane's lock runs them (a share of harness64 too).\n"
"\n"
"  --pages N            pages in the pool (default 1M)\n"
"  --ops N              measured ops per thread (default 1M)\n"
"  --occupancy F        live share (default 0.95)\n"
"  --sizes S            default|FILE, as for churn (capped at 4096 pages)\n"
"  --repeat R           rounds (each runs every configuration once, order\n"
"                       alternating); medians reported (default 3)\n"
"  --only LIST          run only these of two_lanes, one_lane, handoff,\n"
"                       handoff64, handoff64_call, harness64, harness_one\n"
"                       (comma-separated); one thread, the reference of\n"
"                       every ratio, always runs\n";

static const struct option lanes_opts[] = {
	{ "pages", 1, NULL, 'p' }, { "ops", 1, NULL, 'o' },
	{ "occupancy", 1, NULL, 'c' }, { "sizes", 1, NULL, 's' },
	{ "repeat", 1, NULL, 'r' }, { "only", 1, NULL, 'n' }, { NULL, 0, NULL, 0 },
};

static void lanes_init(void *st)
{
	struct lanes_opts *o = st;

	o->pages = 1 << 20;
	o->ops = 1000000;
	o->occupancy = 0.95;
	o->repeat = 3;
	o->sizes_spec = "default";
	for (int c = 0; c < NCFG; c++)
		o->run[c] = true;
}

/* --only: a comma-separated list of configuration keys */
static int lanes_only(struct lanes_opts *o, const char *arg)
{
	bool run[NCFG] = { true };

	if (!*arg)
		return -EINVAL;
	for (const char *p = arg; *p; p += *p == ',') {
		size_t n = strcspn(p, ",");
		int c;

		for (c = 1; c < NCFG; c++)
			if (strlen(lcfgs[c].key) == n && !strncmp(p, lcfgs[c].key, n))
				break;
		if (c == NCFG) {
			fprintf(stderr, "hkv-bench lanes: --only: '%.*s' is none of "
				CFG_KEYS "\n", (int)n, p);
			return -EINVAL;
		}
		run[c] = true;
		p += n;
	}
	memcpy(o->run, run, sizeof(run));
	return 0;
}

static int lanes_parse(void *st, int c, const char *arg)
{
	struct lanes_opts *o = st;
	uint64_t v;

	switch (c) {
	case 'p': return parse_count(arg, false, &o->pages);
	case 'o': return parse_count(arg, false, &o->ops) || !o->ops ? -EINVAL : 0;
	case 'c': return parse_double(arg, 0.05, 0.995, &o->occupancy);
	case 's': o->sizes_spec = arg; return 0;
	case 'n': return lanes_only(o, arg);
	case 'r':
		if (parse_count(arg, false, &v) || v < 1 || v > LANES_MAX_REPEAT)
			return -EINVAL;
		o->repeat = (unsigned)v;
		return 0;
	}
	return -EINVAL;
}

static int lanes_validate(void *st, int json)
{
	struct lanes_opts *o = st;

	(void)json;
	if (o->pages < 4096 || o->pages > UINT32_MAX - 1) {
		fprintf(stderr, "hkv-bench lanes: --pages wants 4096 .. 2^32-2\n");
		return -EINVAL;
	}
	return sizes_load(&o->sizes, o->sizes_spec,
			  HKV_BENCH_MIN(o->pages / 32, LANES_MAX_SIZE));
}

/* the median of per-round figures v, left in round order: median_d() sorts,
 * and the ratios below pair each round's figures */
static double median_rounds(const double *v, unsigned n)
{
	double tmp[LANES_MAX_REPEAT];

	memcpy(tmp, v, n * sizeof(*v));
	return median_d(tmp, n);
}

/*
 * The serial ceiling's share of harness64, per round: the pool's calls cost
 * a = 1/one_thread - 1/harness_one per op (one thread, no hand-over), and a
 * handoff whose lock runs them one after the other takes at least
 * 1/harness64 + a per op, so its share is at most 1 / (1 + a * harness64).
 */
static struct spread serial_ceiling(const struct lanes_opts *o)
{
	double share[LANES_MAX_REPEAT];

	for (unsigned r = 0; r < o->repeat; r++) {
		double one = o->mops[0][r], h1 = o->mops[CFG_HARNESS1][r];
		double h64 = o->mops[CFG_HARNESS64][r];
		/* a noisy round may time the calls at nothing: ceiling 1 */
		double a = one > 0 && h1 > 0 ? HKV_BENCH_MAX(1 / one - 1 / h1, 0.0) : 0;

		share[r] = h64 > 0 ? 1 / (1 + a * h64) : 0;
	}
	return spread_d(share, o->repeat);
}

/* did the configurations the serial ceiling needs run? */
static bool has_ceiling(const struct lanes_opts *o)
{
	return o->run[CFG_HARNESS64] && o->run[CFG_HARNESS1];
}

/* is configuration c reported as a share of harness64 (both ran)? */
static bool has_share(const struct lanes_opts *o, int c)
{
	return CFG_SHARES(c) && o->run[c] && o->run[CFG_HARNESS64];
}

static int lanes_measure(void *st)
{
	struct lanes_opts *o = st;
	int err = 0;

	for (unsigned r = 0; r < o->repeat && !err; r++)
		for (int i = 0; i < NCFG && !err; i++) {
			int c = r % 2 ? NCFG - 1 - i : i;	/* drift hits both ends */

			if (o->run[c])
				err = lanes_once(o, &lcfgs[c], r, &o->mops[c][r], &o->served[c][r],
						 &o->deferred[c][r]);
		}
	if (err) {
		fprintf(stderr, "hkv-bench lanes: %s\n", hkv_strerror(err));
		return err;
	}
	for (int c = 0; c < NCFG; c++) {
		o->med[c] = median_rounds(o->mops[c], o->repeat);
		o->served_med[c] = median_rounds(o->served[c], o->repeat);
		o->deferred_med[c] = median_rounds(o->deferred[c], o->repeat);
		o->ratio[c] = ratio_spread(o->mops[c], o->mops[0], o->repeat);
		if (has_share(o, c))
			o->share[c] = ratio_spread(o->mops[c], o->mops[CFG_HARNESS64], o->repeat);
	}
	if (has_ceiling(o))
		o->ceiling = serial_ceiling(o);
	return 0;
}

/* STEM_harness_share and STEM_harness_share_range */
static void json_share(struct json *j, const char *stem, const struct spread *s)
{
	char key[48];

	snprintf(key, sizeof(key), "%s_harness_share", stem);
	json_spread(j, key, s);
}

static void lanes_report(void *st, struct json *j)
{
	const struct lanes_opts *o = st;

	if (!j) {
		printf("lanes: %llu pages, occupancy %.2f, %llu ops per thread, median of %u "
		       "rounds\n", (unsigned long long)o->pages, o->occupancy,
		       (unsigned long long)o->ops, o->repeat);
		printf("  %-22s %8s  %-20s %-8s %s\n", "", "Mops/s", "x 1 thread [range]",
		       "served", "frees deferred");
		for (int c = 0; c < NCFG; c++)
			if (o->run[c])
				printf("  %-22s %8.2f  %.2fx [%.2f-%.2f]    %5.1f%%   %5.1f%%\n",
				       lcfgs[c].name, o->med[c], o->ratio[c].med,
				       o->ratio[c].lo, o->ratio[c].hi, 100 * o->served_med[c],
				       100 * o->deferred_med[c]);
		for (int c = 0; c < NCFG; c++)
			if (has_share(o, c))
				printf("  %s / harness alone: %.2f [%.2f-%.2f]\n", lcfgs[c].name,
				       o->share[c].med, o->share[c].lo, o->share[c].hi);
		if (has_ceiling(o))
			printf("  serial ceiling / harness alone: %.2f [%.2f-%.2f]\n",
			       o->ceiling.med, o->ceiling.lo, o->ceiling.hi);
		printf("  (ratios: the median over rounds of each round's figure over the same\n"
		       "   round's 1-thread figure; served: calls the lane's holder ran for a\n"
		       "   waiting thread; deferred: frees answered at once, run by the holder)\n");
		return;
	}
	json_u64(j, "pages", o->pages);
	json_u64(j, "ops_per_thread", o->ops);
	json_dbl(j, "occupancy", o->occupancy);
	json_u64(j, "repeat", o->repeat);
	json_dbl(j, "one_thread_mops", o->med[0]);
	if (o->run[1])
		json_dbl(j, "two_lanes_mops", o->med[1]);
	if (o->run[2])
		json_dbl(j, "one_lane_two_threads_mops", o->med[2]);
	if (o->run[3])
		json_dbl(j, "handoff_mops", o->med[3]);
	if (o->run[CFG_HANDOFF64])
		json_dbl(j, "handoff64_mops", o->med[CFG_HANDOFF64]);
	if (o->run[CFG_CALL64])
		json_dbl(j, "handoff64_call_mops", o->med[CFG_CALL64]);
	if (o->run[CFG_HARNESS64])
		json_dbl(j, "harness64_mops", o->med[CFG_HARNESS64]);
	if (o->run[CFG_HARNESS1])
		json_dbl(j, "harness_one_mops", o->med[CFG_HARNESS1]);
	if (has_ceiling(o))
		json_share(j, "serial_ceiling", &o->ceiling);
	for (int c = 0; c < NCFG; c++)
		if (has_share(o, c))
			json_share(j, lcfgs[c].key, &o->share[c]);
	for (int c = 1; c < NCFG; c++) {
		char key[32];

		if (!o->run[c])
			continue;
		snprintf(key, sizeof(key), "%s_speedup", lcfgs[c].key);
		json_dbl(j, key, o->ratio[c].med);
	}
	json_obj(j, "speedup_range");	/* lowest and highest per-round ratio */
	for (int c = 1; c < NCFG; c++) {
		if (!o->run[c])
			continue;
		json_arr(j, lcfgs[c].key);
		json_dbl(j, NULL, o->ratio[c].lo);
		json_dbl(j, NULL, o->ratio[c].hi);
		json_arr_end(j);
	}
	json_obj_end(j);
	if (o->run[2]) {
		json_dbl(j, "one_lane_served_share", o->served_med[2]);
		json_dbl(j, "one_lane_deferred_share", o->deferred_med[2]);
	}
	if (o->run[3]) {
		json_dbl(j, "handoff_served_share", o->served_med[3]);
		json_dbl(j, "handoff_deferred_share", o->deferred_med[3]);
	}
	if (o->run[CFG_HANDOFF64]) {
		json_dbl(j, "handoff64_served_share", o->served_med[CFG_HANDOFF64]);
		json_dbl(j, "handoff64_deferred_share", o->deferred_med[CFG_HANDOFF64]);
	}
	if (o->run[CFG_CALL64])
		json_dbl(j, "handoff64_call_served_share", o->served_med[CFG_CALL64]);
}

static void lanes_fini(void *st)
{
	sizes_free(&((struct lanes_opts *)st)->sizes);
}

const struct bench bench_lanes = {
	.name = "lanes",
	.what = "alloc throughput, 1 and 2 threads, own lanes or one",
	.usage = lanes_usage,
	.opts = lanes_opts,
	.size = sizeof(struct lanes_opts),
	.init = lanes_init,
	.parse = lanes_parse,
	.validate = lanes_validate,
	.measure = lanes_measure,
	.report = lanes_report,
	.fini = lanes_fini,
};
