// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lanes.c - `hkv-bench lanes`: allocation throughput of 1 thread, of 2
 * threads on their own lanes, and of 2 threads sharing one lane. Each
 * thread churns its own allocations (random victims) at the target
 * occupancy of its share, after a burn-in; the figure is ops per second
 * over the slowest thread's wall time, median of the repeats.
 *
 * Handoff (the engine pattern: a scheduler allocates, a backup thread frees):
 * one thread allocates and picks the victims, and hands each victim through
 * a single-producer ring to the other thread, which frees it. Ops are the
 * allocations plus the frees; time runs until the last handed victim is
 * freed.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "common.h"
#include "hugekv.h"

#define LANES_MAX_REPEAT	15
#define LANES_MAX_SIZE		4096	/* request sizes are capped here */

struct lrec {
	uint32_t n;
	struct hkv_extent one;
	struct hkv_extent *many;
};

#define RING_SIZE	4096	/* victims in flight, handoff mode */

struct ring {			/* single producer, single consumer */
	struct lrec slot[RING_SIZE];
	uint64_t head __attribute__((aligned(64)));	/* written by the consumer */
	uint64_t tail __attribute__((aligned(64)));	/* written by the producer */
	int done;		/* producer finished */
};

struct lthread {
	struct hkv_pool *pool;
	struct ring *ring;	/* handoff: producer (allocates) or consumer */
	bool consumer;
	unsigned lane, cpu;
	uint64_t target, ops, burnin_ops;
	const struct sizes *sizes;
	pthread_barrier_t *bar;
	uint64_t ns;		/* measured loop */
	int err;
	uint64_t seed;
};

struct lcfg {
	const char *name;
	unsigned threads, nlanes;
	bool shared;		/* all threads on lane 0 */
	bool handoff;		/* thread 0 allocates, thread 1 frees */
};

#define NCFG	4
static const struct lcfg lcfgs[NCFG] = {
	{ "1 thread", 1, 1, false, false },
	{ "2 threads, own lanes", 2, 2, false, false },
	{ "2 threads, one lane", 2, 1, true, false },
	{ "2 threads, handoff", 2, 1, true, true },
};

struct lanes_opts {
	uint64_t pages, ops;
	double occupancy;
	unsigned repeat;
	bool json;
	const char *csv;
	struct sizes sizes;
	double mops[NCFG][LANES_MAX_REPEAT], med[NCFG];
};

static void lt_pin(const struct lthread *t)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);	/* best effort */
}

static int lt_alloc(struct lthread *t, struct lrec *r, uint32_t n, struct hkv_extent *ext)
{
	int k = hkv_alloc(t->pool, n, t->lane, 0, ext, n);

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

static int lt_free(struct lthread *t, struct lrec *r)
{
	int err = hkv_free(t->pool, r->n == 1 ? &r->one : r->many, r->n);

	free(r->many);
	r->many = NULL;
	return err;
}

/* one thread's churn: alloc when the next request fits its share, else
 * free a random live allocation; -ENOMEM on a shared lane frees instead */
static void *lt_main(void *arg)
{
	struct lthread *t = arg;
	uint64_t cap = t->target + 1, live_pages = 0, nlive = 0, t0 = 0;
	struct lrec *live = calloc(cap, sizeof(*live));
	uint32_t *lsize = calloc(cap, sizeof(*lsize));
	struct hkv_extent *ext = malloc(LANES_MAX_SIZE * sizeof(*ext));
	struct rng rng;
	uint32_t next;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);	/* best effort */
	rng_seed(&rng, t->seed);
	next = sizes_draw(t->sizes, &rng);
	if (!live || !lsize || !ext)
		t->err = -ENOMEM;
	for (uint64_t i = 0; i < t->burnin_ops + t->ops; i++) {
		if (i == t->burnin_ops) {
			pthread_barrier_wait(t->bar);	/* measure together */
			t0 = now_ns();
		}
		if (t->err)
			continue;
		if (live_pages + next <= t->target) {
			int err = lt_alloc(t, &live[nlive], next, ext);

			if (!err) {
				lsize[nlive++] = next;
				live_pages += next;
				next = sizes_draw(t->sizes, &rng);
				continue;
			}
			if (err != -ENOMEM || !nlive) {
				t->err = err;
				continue;
			}
		}
		if (nlive) {
			uint64_t v = rng_below(&rng, nlive);

			t->err = lt_free(t, &live[v]);
			live_pages -= lsize[v];
			live[v] = live[--nlive];
			lsize[v] = lsize[nlive];
		}
	}
	t->ns = now_ns() - t0;
	while (nlive)
		lt_free(t, &live[--nlive]);
	free(live);
	free(lsize);
	free(ext);
	return NULL;
}

static void ring_push(struct ring *r, const struct lrec *x)
{
	uint64_t t = r->tail;

	while (t - __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) == RING_SIZE)
		sched_yield();	/* the consumer is behind */
	r->slot[t % RING_SIZE] = *x;
	__atomic_store_n(&r->tail, t + 1, __ATOMIC_RELEASE);
}

/* handoff consumer: free what the producer hands over until it is done;
 * its frees are counted in the producer's ops (one per victim handed) */
static void *lt_consumer(void *arg)
{
	struct lthread *t = arg;
	struct ring *r = t->ring;
	uint64_t h = 0, t0;

	lt_pin(t);
	pthread_barrier_wait(t->bar);
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
		for (; h < tail; h++) {
			struct lrec *x = &r->slot[h % RING_SIZE];

			if (!t->err)
				t->err = lt_free(t, x);
			else
				free(x->many);
		}
		__atomic_store_n(&r->head, h, __ATOMIC_RELEASE);
	}
	t->ns = now_ns() - t0;
	t->ops = 0;
	return NULL;
}

/* handoff producer: allocate; when full, hand a random victim over (after
 * a burn-in where it frees them itself) */
static void *lt_producer(void *arg)
{
	struct lthread *t = arg;
	uint64_t cap = t->target + 1, live_pages = 0, nlive = 0, t0 = 0;
	struct lrec *live = calloc(cap, sizeof(*live));
	uint32_t *lsize = calloc(cap, sizeof(*lsize));
	struct hkv_extent *ext = malloc(LANES_MAX_SIZE * sizeof(*ext));
	struct rng rng;
	uint32_t next;

	lt_pin(t);
	rng_seed(&rng, t->seed);
	next = sizes_draw(t->sizes, &rng);
	if (!live || !lsize || !ext)
		t->err = -ENOMEM;
	for (uint64_t i = 0; i < t->burnin_ops + t->ops; i++) {
		if (i == t->burnin_ops) {
			pthread_barrier_wait(t->bar);	/* the consumer starts */
			t0 = now_ns();
		}
		if (t->err)
			continue;
		if (live_pages + next <= t->target) {
			int err = lt_alloc(t, &live[nlive], next, ext);

			if (!err) {
				lsize[nlive++] = next;
				live_pages += next;
				next = sizes_draw(t->sizes, &rng);
				continue;
			}
			if (err != -ENOMEM || i < t->burnin_ops) {
				t->err = err;
				continue;
			}
			sched_yield();	/* handed pages not freed yet */
			i--;
			continue;
		}
		if (nlive) {
			uint64_t v = rng_below(&rng, nlive);

			if (i < t->burnin_ops)
				t->err = lt_free(t, &live[v]);
			else
				ring_push(t->ring, &live[v]);
			live_pages -= lsize[v];
			live[v] = live[--nlive];
			lsize[v] = lsize[nlive];
		}
	}
	__atomic_store_n(&t->ring->done, 1, __ATOMIC_RELEASE);
	t->ns = now_ns() - t0;
	while (nlive)
		lt_free(t, &live[--nlive]);
	free(live);
	free(lsize);
	free(ext);
	return NULL;
}

static int lanes_once(struct lanes_opts *o, const struct lcfg *cfg, unsigned rep,
		      double *mops)
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
	int err;

	if (cfg->handoff && !(ring = calloc(1, sizeof(*ring))))
		return -ENOMEM;
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
			.target = (uint64_t)(o->occupancy * o->pages / cfg->threads),
			.ops = o->ops, .sizes = &o->sizes, .bar = &bar,
			.seed = 1000 * rep + i + 1,
		};
		t[i].burnin_ops = t[i].target / (uint64_t)(o->sizes.mean + 1) * 4;
		if (cfg->handoff) {	/* one producer over the whole lane */
			t[i].ring = ring;
			t[i].consumer = i == 1;
			t[i].target = (uint64_t)(o->occupancy * o->pages);
			t[i].burnin_ops = t[i].target / (uint64_t)(o->sizes.mean + 1) * 4;
			t[i].ops = 2 * o->ops;
		}
		if (pthread_create(&tid[i], NULL, !cfg->handoff ? lt_main :
				   i ? lt_consumer : lt_producer, &t[i])) {
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
"thread that frees it (both on one lane).\n"
"\n"
"  --pages N        pages in the pool (default 1M)\n"
"  --ops N          measured ops per thread (default 1M)\n"
"  --occupancy F    live share (default 0.95)\n"
"  --sizes S        default|FILE, as for churn (capped at 4096 pages)\n"
"  --repeat R       runs per configuration; medians reported (default 3)\n"
"  --json           one JSON object on stdout\n"
"  --csv DIR        write DIR/lanes.csv\n"
"  -h, --help       this text\n";

static int lanes_parse(struct lanes_opts *o, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "pages", 1, NULL, 'p' }, { "ops", 1, NULL, 'o' },
		{ "occupancy", 1, NULL, 'c' }, { "sizes", 1, NULL, 's' },
		{ "repeat", 1, NULL, 'r' }, { "json", 0, NULL, 'j' },
		{ "csv", 1, NULL, 'C' }, { "help", 0, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *sizes = "default";
	uint64_t rep = 3;
	int c, err = 0;

	o->pages = 1 << 20;
	o->ops = 1000000;
	o->occupancy = 0.95;
	optind = 1;
	while (!err && (c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (c) {
		case 'p': err = parse_count(optarg, false, &o->pages); break;
		case 'o': err = parse_count(optarg, false, &o->ops); break;
		case 'c': err = parse_double(optarg, 0.05, 0.995, &o->occupancy); break;
		case 's': sizes = optarg; break;
		case 'r': err = parse_count(optarg, false, &rep);
			err = err ? err : (rep >= 1 && rep <= LANES_MAX_REPEAT ? 0 : -EINVAL);
			break;
		case 'j': o->json = true; break;
		case 'C': o->csv = optarg; break;
		case 'h': fputs(lanes_usage, stdout); return 1;
		default: err = -EINVAL;
		}
	}
	if (!err && (o->pages < 4096 || o->pages > UINT32_MAX - 1 || !o->ops || optind < argc))
		err = -EINVAL;
	if (err) {
		fprintf(stderr, "hkv-bench lanes: bad arguments; try --help\n");
		return -EINVAL;
	}
	o->repeat = (unsigned)rep;
	return sizes_load(&o->sizes, sizes, HKV_BENCH_MIN(o->pages / 32, LANES_MAX_SIZE));
}

static void lanes_report(const struct lanes_opts *o)
{
	struct json j;

	if (!o->json) {
		printf("lanes: %llu pages, occupancy %.2f, %llu ops per thread, median of %u\n",
		       (unsigned long long)o->pages, o->occupancy,
		       (unsigned long long)o->ops, o->repeat);
		for (int c = 0; c < NCFG; c++)
			printf("  %-22s %8.2f Mops/s  (%.2fx 1 thread)\n", lcfgs[c].name,
			       o->med[c], o->med[c] / o->med[0]);
		return;
	}
	json_begin(&j, stdout);
	json_str(&j, "bench", "lanes");
	json_u64(&j, "version", 1);
	json_u64(&j, "pages", o->pages);
	json_u64(&j, "ops_per_thread", o->ops);
	json_dbl(&j, "occupancy", o->occupancy);
	json_u64(&j, "repeat", o->repeat);
	json_dbl(&j, "one_thread_mops", o->med[0]);
	json_dbl(&j, "two_lanes_mops", o->med[1]);
	json_dbl(&j, "one_lane_two_threads_mops", o->med[2]);
	json_dbl(&j, "two_lanes_speedup", o->med[1] / o->med[0]);
	json_dbl(&j, "one_lane_speedup", o->med[2] / o->med[0]);
	json_dbl(&j, "handoff_mops", o->med[3]);
	json_dbl(&j, "handoff_speedup", o->med[3] / o->med[0]);
	json_end(&j);
}

/**
 * bench_lanes() - `hkv-bench lanes`
 * @argc: argument count
 * @argv: arguments, argv[0] = "lanes"
 *
 * Return: exit status.
 */
int bench_lanes(int argc, char **argv)
{
	struct lanes_opts o = { 0 };
	int err = lanes_parse(&o, argc, argv);

	if (err)
		return err > 0 ? 0 : 2;
	timer_init();
	for (unsigned r = 0; r < o.repeat && !err; r++)
		for (int c = 0; c < NCFG && !err; c++)
			err = lanes_once(&o, &lcfgs[c], r, &o.mops[c][r]);
	if (err) {
		fprintf(stderr, "hkv-bench lanes: %s\n", hkv_strerror(err));
		sizes_free(&o.sizes);
		return 1;
	}
	for (int c = 0; c < NCFG; c++)
		o.med[c] = median_d(o.mops[c], o.repeat);
	if (o.csv) {
		FILE *f = csv_open(o.csv, "lanes.csv", "config,threads,lanes,mops");

		for (int c = 0; f && c < NCFG; c++)
			fprintf(f, "%s,%u,%u,%.3f\n", lcfgs[c].name, lcfgs[c].threads,
				lcfgs[c].nlanes, o.med[c]);
		if (!f || fclose(f))
			err = -EIO;
	}
	lanes_report(&o);
	sizes_free(&o.sizes);
	return err ? 1 : 0;
}
