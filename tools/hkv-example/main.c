// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hkv-example - a two-tier KV cache the way a serving engine uses hugekv.
 *
 * L1 is an index-only pool: the library keeps the bookkeeping of "GPU"
 * pages (here a plain buffer stands in for device memory). L2 is a pool on
 * hugepages in host memory. Every new radix node is written through:
 *
 *   scheduler thread                      backup worker thread
 *   hkv_alloc(L1, HKV_ALLOC_EVICT)
 *   write the KV pages on the "GPU"
 *   hkv_unit_add(L1) + hkv_unit_pin(L1)   (GPU pages must not be reused)
 *   hkv_alloc(L2, HKV_ALLOC_EVICT)
 *   hkv_unit_add(L2) + hkv_unit_pin(L2)   (host pages are being written)
 *   queue the copy ------------------->   copy GPU -> host
 *                                         mark the backup done
 *                                         hkv_unit_unpin(L1), (L2)
 *
 * A prefix hit touches the L1 unit; a hit only in L2 loads it back: pin
 * L2 (so it cannot be evicted while read), copy host -> GPU, add an L1 unit,
 * unpin L2. The L1 evict callback checks that every unit it drops has its
 * backup done: eviction never takes a unit whose backup is still pending.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hugekv.h"
#include "../lib/parse.h"
#include "../lib/tool.h"

#define MAX_EXT	32
#define QUEUE	256
#define HKV_EX_MIN(a, b) ((a) < (b) ? (a) : (b))

struct job {
	uint64_t id;
	unsigned n1, n2;
	struct hkv_extent e1[MAX_EXT], e2[MAX_EXT];
};

struct tier {
	struct hkv_pool *l1, *l2;
	unsigned char *gpu;		/* stands in for device memory */
	uint64_t page_bytes;
	uint8_t *backed;		/* [id]: backup done (atomic) */
	struct {			/* [id]: the L2 unit's extents (the radix node) */
		unsigned n;
		struct hkv_extent e[MAX_EXT];
	} *l2ext;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job q[QUEUE];
	unsigned head, tail;
	int done;
	/* counters */
	uint64_t l1_evicted, l2_evicted, pending_evicted, backups, hits, loads, misses, bad;
	uint64_t skipped, waits, enqueued;
};

static void l1_evicted(void *ctx, uint64_t unit, const struct hkv_extent *ext, unsigned n)
{
	struct tier *t = ctx;

	(void)ext;
	(void)n;
	t->l1_evicted++;
	if (!__atomic_load_n(&t->backed[unit], __ATOMIC_ACQUIRE))
		t->pending_evicted++;	/* never happens: pending units are pinned */
}

static void l2_evicted(void *ctx, uint64_t unit, const struct hkv_extent *ext, unsigned n)
{
	struct tier *t = ctx;

	(void)unit;
	(void)ext;
	(void)n;
	t->l2_evicted++;
}

/* copy a unit page by page between the "GPU" and host pages */
static void copy_unit(struct tier *t, const struct job *j, bool to_host)
{
	unsigned i1 = 0, i2 = 0;
	uint64_t o1 = 0, o2 = 0;

	while (i1 < j->n1 && i2 < j->n2) {
		unsigned char *g = t->gpu + (j->e1[i1].start + o1) * t->page_bytes;
		unsigned char *h = hkv_page_ptr(t->l2, j->e2[i2].start + o2);

		if (to_host)
			memcpy(h, g, t->page_bytes);
		else
			memcpy(g, h, t->page_bytes);
		if (++o1 == j->e1[i1].len)
			i1++, o1 = 0;
		if (++o2 == j->e2[i2].len)
			i2++, o2 = 0;
	}
}

static void fill(struct tier *t, const struct job *j)
{
	for (unsigned i = 0; i < j->n1; i++)
		memset(t->gpu + j->e1[i].start * t->page_bytes, (int)(j->id & 0xff),
		       j->e1[i].len * t->page_bytes);
}

static bool check(const struct tier *t, const struct job *j)
{
	for (unsigned i = 0; i < j->n1; i++)
		for (uint64_t b = 0; b < j->e1[i].len * t->page_bytes; b++)
			if (t->gpu[j->e1[i].start * t->page_bytes + b] != (j->id & 0xff))
				return false;
	return true;
}

static void *backup_worker(void *arg)
{
	struct tier *t = arg;
	struct job j;

	for (;;) {
		pthread_mutex_lock(&t->lock);
		while (t->head == t->tail && !t->done)
			pthread_cond_wait(&t->cond, &t->lock);
		if (t->head == t->tail) {
			pthread_mutex_unlock(&t->lock);
			return NULL;
		}
		j = t->q[t->head++ % QUEUE];
		pthread_cond_broadcast(&t->cond);
		pthread_mutex_unlock(&t->lock);
		copy_unit(t, &j, true);
		__atomic_store_n(&t->backed[j.id], 1, __ATOMIC_RELEASE);
		if (hkv_unit_unpin(t->l1, j.id) || hkv_unit_unpin(t->l2, j.id))
			__atomic_add_fetch(&t->bad, 1, __ATOMIC_RELAXED);
		pthread_mutex_lock(&t->lock);
		t->backups++;
		pthread_cond_broadcast(&t->cond);
		pthread_mutex_unlock(&t->lock);
	}
}

static void enqueue(struct tier *t, const struct job *j)
{
	pthread_mutex_lock(&t->lock);
	while (t->tail - t->head == QUEUE)
		pthread_cond_wait(&t->cond, &t->lock);
	t->q[t->tail++ % QUEUE] = *j;
	t->enqueued++;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

/* a new radix node: compute on the GPU, write it through to host memory */
static int new_node(struct tier *t, uint64_t id, uint64_t pages)
{
	struct job j = { .id = id };
	int n;

	n = hkv_alloc(t->l1, pages, HKV_LANE_ANY, HKV_ALLOC_EVICT, j.e1, MAX_EXT);
	if (n < 0)
		return n;	/* all of L1 pinned by pending backups */
	j.n1 = (unsigned)n;
	fill(t, &j);
	if (hkv_unit_add(t->l1, id, j.e1, j.n1) || hkv_unit_pin(t->l1, id))
		return -EUCLEAN;
	n = hkv_alloc(t->l2, pages, HKV_LANE_ANY, HKV_ALLOC_EVICT, j.e2, MAX_EXT);
	if (n < 0) {	/* no host room: keep it GPU-only */
		__atomic_store_n(&t->backed[id], 1, __ATOMIC_RELEASE);
		return hkv_unit_unpin(t->l1, id);
	}
	j.n2 = (unsigned)n;
	t->l2ext[id].n = j.n2;
	memcpy(t->l2ext[id].e, j.e2, j.n2 * sizeof(j.e2[0]));
	if (hkv_unit_add(t->l2, id, j.e2, j.n2) || hkv_unit_pin(t->l2, id))
		return -EUCLEAN;
	enqueue(t, &j);
	return 0;
}

/* a prefix hit on an older node: in L1, or loaded back from L2 */
static int hit(struct tier *t, uint64_t id)
{
	struct job j = { .id = id };
	uint64_t pages = 0;
	int n, err;

	if (!hkv_unit_touch(t->l1, id)) {
		t->hits++;
		return 0;
	}
	/* the pin keeps L2 from evicting the unit while we read it */
	if (hkv_unit_pin(t->l2, id)) {
		t->misses++;	/* evicted from both tiers: recompute */
		return 0;
	}
	j.n2 = t->l2ext[id].n;
	memcpy(j.e2, t->l2ext[id].e, j.n2 * sizeof(j.e2[0]));
	for (unsigned i = 0; i < j.n2; i++)
		pages += j.e2[i].len;
	n = hkv_alloc(t->l1, pages, HKV_LANE_ANY, HKV_ALLOC_EVICT, j.e1, MAX_EXT);
	if (n > 0) {
		j.n1 = (unsigned)n;
		copy_unit(t, &j, false);
		if (!check(t, &j))
			__atomic_add_fetch(&t->bad, 1, __ATOMIC_RELAXED);
		err = hkv_unit_add(t->l1, id, j.e1, j.n1);
		if (err)
			return err;
		t->loads++;
	}
	return hkv_unit_unpin(t->l2, id);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hkv-example [options]\n"
		"  a two-tier KV cache: L1 index-only (GPU pages), L2 on hugepages,\n"
		"  write-through backups on a worker thread, prefix hits and loads.\n\n"
		"  --l1-pages N     L1 (GPU) pages (default 2048)\n"
		"  --l2-pages N     L2 (host) pages (default 8192)\n"
		"  --page-bytes B   bytes per KV page (default 16384)\n"
		"  --requests N     radix nodes to create (default 20000)\n"
		"  --hit P          probability of a prefix hit per request (default 0.5)\n"
		"  -h, --help       this text\n"
		"      --version    the version\n");
}

struct args {
	uint64_t l1_pages, l2_pages, page_bytes, requests;
	double hit;
};

static int parse(int argc, char **argv, struct args *a)
{
	static const struct option lo[] = {
		{ "l1-pages", 1, NULL, '1' }, { "l2-pages", 1, NULL, '2' },
		{ "page-bytes", 1, NULL, 'b' }, { "requests", 1, NULL, 'r' },
		{ "hit", 1, NULL, 'p' }, { "help", 0, NULL, 'h' },
		{ "version", 0, NULL, 'V' }, { 0 }
	};
	int ch, err;

	/* the tools' parser: no hex, no sign, no wrap near 2^64 */
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case '1': err = tool_parse_count(optarg, &a->l1_pages); break;
		case '2': err = tool_parse_count(optarg, &a->l2_pages); break;
		case 'b': err = tool_parse_size(optarg, &a->page_bytes); break;
		case 'r': err = tool_parse_count(optarg, &a->requests); break;
		case 'p': err = tool_parse_double(optarg, 0, 1, &a->hit); break;
		case 'h': usage(stdout); exit(0);
		case 'V': exit(tool_version("hkv-example"));
		default: return -EINVAL;
		}
		if (err)
			return -EINVAL;
	}
	if (optind < argc || a->l1_pages < 64 || a->l2_pages < 64 || !a->page_bytes ||
	    a->page_bytes > (1u << 24) || !a->requests || !(a->hit >= 0 && a->hit <= 1))
		return -EINVAL;
	return 0;
}

static int make_pools(struct tier *t, const struct args *a)
{
	struct hkv_pool_opts o1 = { .sz = sizeof(o1), .npages = a->l1_pages,
				    .free_room_low = 0.05, .free_room_high = 0.10 };
	struct hkv_pool_opts o2 = { .sz = sizeof(o2), .npages = a->l2_pages,
				    .page_bytes = a->page_bytes, .backing = HKV_BACKING_AUTO,
				    .free_room_low = 0.02, .free_room_high = 0.05 };
	int err = hkv_pool_create(&o1, &t->l1);

	if (err)
		return err;
	err = hkv_pool_create(&o2, &t->l2);
	if (err) {
		hkv_pool_destroy(t->l1);
		return err;
	}
	hkv_set_evict_fn(t->l1, l1_evicted, t);
	hkv_set_evict_fn(t->l2, l2_evicted, t);
	return 0;
}

/* backpressure: L1 is all pinned by pending backups, wait for them */
static void wait_backups(struct tier *t)
{
	pthread_mutex_lock(&t->lock);
	while (t->backups != t->enqueued)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
	t->waits++;
}

/* the scheduler loop: new nodes and prefix hits */
static int schedule(struct tier *t, const struct args *a)
{
	uint64_t seed = 88172645463325252ull;
	int err = 0;

	for (uint64_t id = 0; id < a->requests && !err; id++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		if (id && (double)(seed % 1000) < a->hit * 1000)
			err = hit(t, id - 1 - (seed >> 20) % HKV_EX_MIN(id, 512));
		if (!err)
			err = new_node(t, id, 1 + (seed >> 40) % 32);
		if (err == -ENOMEM) {
			wait_backups(t);
			err = new_node(t, id, 1 + (seed >> 40) % 32);
		}
		if (err == -ENOMEM) {
			t->skipped++;	/* L1 full of pending backups: skip */
			err = 0;
		}
	}
	return err;
}

int main(int argc, char **argv)
{
	struct args a = { .l1_pages = 2048, .l2_pages = 8192, .page_bytes = 16384,
			  .requests = 20000, .hit = 0.5 };
	struct tier t = { 0 };
	pthread_t worker;
	int err;

	if (parse(argc, argv, &a)) {
		usage(stderr);
		return 2;
	}
	t.page_bytes = a.page_bytes;
	t.gpu = calloc(a.l1_pages, a.page_bytes);
	t.backed = calloc(a.requests, 1);
	t.l2ext = calloc(a.requests, sizeof(*t.l2ext));
	err = t.gpu && t.backed && t.l2ext ? make_pools(&t, &a) : -ENOMEM;
	if (err) {
		fprintf(stderr, "hkv-example: %s\n", hkv_strerror(err));
		goto free_bufs;
	}
	pthread_mutex_init(&t.lock, NULL);
	pthread_cond_init(&t.cond, NULL);
	pthread_create(&worker, NULL, backup_worker, &t);
	err = schedule(&t, &a);
	pthread_mutex_lock(&t.lock);
	t.done = 1;
	pthread_cond_broadcast(&t.cond);
	pthread_mutex_unlock(&t.lock);
	pthread_join(worker, NULL);
	printf("hkv-example: %llu requests (%llu waits for backups, %llu skipped): %llu backups, "
	       "%llu L1 hits, %llu loads from L2, %llu misses; evicted %llu from L1 (%llu with a pending backup), %llu from L2; "
	       "%llu bad\n",
	       (unsigned long long)a.requests, (unsigned long long)t.waits,
	       (unsigned long long)t.skipped,
	       (unsigned long long)t.backups,
	       (unsigned long long)t.hits, (unsigned long long)t.loads,
	       (unsigned long long)t.misses, (unsigned long long)t.l1_evicted,
	       (unsigned long long)t.pending_evicted, (unsigned long long)t.l2_evicted,
	       (unsigned long long)t.bad);
	if (err)
		fprintf(stderr, "hkv-example: %s\n", hkv_strerror(err));
	hkv_pool_destroy(t.l2);
	hkv_pool_destroy(t.l1);
	pthread_cond_destroy(&t.cond);
	pthread_mutex_destroy(&t.lock);
free_bufs:
	free(t.l2ext);
	free(t.backed);
	free(t.gpu);
	return err || t.bad || t.pending_evicted ? 1 : 0;
}
