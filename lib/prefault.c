// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * prefault.c - fault segments in, in parallel, each from its own node's CPUs.
 *
 * MADV_POPULATE_WRITE (Linux 5.14) faults a range writable and returns an
 * error instead of raising SIGBUS when a hugetlb page cannot be had. Each
 * thread takes one slice of whole pages of one segment, pinned to that
 * segment's node's CPUs so that page clearing runs local to the memory; the
 * threads of all segments run together. Kernels without it get a touch of
 * every page; a thread that cannot be started leaves its slice to the
 * calling thread. Both are reported.
 */
#include <sys/mman.h>

#include "internal.h"

#define PREFAULT_MAX_THREADS	256

struct slice {
	const struct arena_seg *s;
	char *p;
	uint64_t len, step;
	uint64_t end_ns;	/* when it finished */
	int err;		/* -errno of the populate */
	bool pin;		/* on a thread of its own: pin it to the node */
	bool ran_inline;	/* its thread could not start */
	bool affinity_failed, touched;
};

static void touch(char *p, uint64_t len, uint64_t step)
{
	uint64_t off;

	for (off = 0; off < len; off += step)
		*(volatile char *)(p + off) = 0;
}

static void *prefault_slice(void *arg)
{
	struct slice *sl = arg;
	const struct topo_node *tn = sl->s->tn;
	int err;

	if (sl->pin && tn && tn->ncpus && os->set_affinity(&tn->cpus))
		sl->affinity_failed = true;
	err = os->madvise(sl->p, sl->len, MADV_POPULATE_WRITE);
	if (!err)
		goto done;
	if (err != -EINVAL) {
		sl->err = err;
		goto done;
	}
	/* kernel before 5.14: touch every page instead */
	touch(sl->p, sl->len, sl->step);
	sl->touched = true;
done:
	sl->end_ns = os->now_ns();
	return NULL;
}

static unsigned thread_count(const struct hkv_arena *a, const struct arena_seg *s,
			     uint64_t units)
{
	uint64_t n = a->opts.prefault_threads;

	if (!n)
		n = s->tn && s->tn->ncpus ? s->tn->ncpus : 1;
	return (unsigned)HKV_MIN(HKV_MIN(n, units), PREFAULT_MAX_THREADS);
}

/*
 * Run the slices on threads of their own (pinned); a slice whose thread
 * cannot start runs here, unpinned, so the caller's affinity never changes.
 */
static void run_slices(struct slice *sl, pthread_t *tid, bool *started, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		sl[i].pin = true;
		started[i] = !os->thread_create(&tid[i], prefault_slice, &sl[i]);
	}
	for (i = 0; i < n; i++) {
		if (started[i]) {
			os->thread_join(tid[i]);
			continue;
		}
		sl[i].pin = false;
		sl[i].ran_inline = true;
		prefault_slice(&sl[i]);
	}
}

/* one segment's slices: its result, its time, and what to report */
static int collect(struct hkv_arena *a, struct arena_seg *s, const struct slice *sl,
		   unsigned n, uint64_t t0)
{
	bool aff = false, touched = false;
	unsigned i, inline_runs = 0;
	uint64_t end = t0;
	int err = 0;

	for (i = 0; i < n; i++) {
		aff |= sl[i].affinity_failed;
		touched |= sl[i].touched;
		inline_runs += sl[i].ran_inline;
		end = HKV_MAX(end, sl[i].end_ns);
		if (!err)
			err = sl[i].err;
	}
	s->prefault_ns = end - t0;
	if (inline_runs)
		hkv_log(HKV_LOG_WARN, "pool %llu node %d: %u of %u prefault threads could not "
			"start; their slices ran on the creating thread",
			(unsigned long long)a->pool_id, s->node, inline_runs, n);
	if (aff)
		hkv_log(HKV_LOG_WARN, "pool %llu node %d: prefault threads could not be pinned "
			"to the node's CPUs", (unsigned long long)a->pool_id, s->node);
	if (touched)
		hkv_log(HKV_LOG_WARN, "pool %llu node %d: no MADV_POPULATE_WRITE; touched pages",
			(unsigned long long)a->pool_id, s->node);
	s->threads = n - inline_runs ? n - inline_runs : 1;	/* 1: the creating thread */
	if (err)
		hkv_log(HKV_LOG_WARN, "pool %llu node %d: prefault failed: %s",
			(unsigned long long)a->pool_id, s->node, strerror(-err));
	/* EFAULT: a fault that would have raised SIGBUS (no page to be had,
	 * e.g. a cgroup hugetlb limit or an empty node): a shortfall */
	return err == -EFAULT ? -ENOMEM : err;
}

/* cut segment s into n slices of whole 2 MiB-or-larger units */
static void cut(struct arena_seg *s, struct slice *sl, unsigned n)
{
	uint64_t unit = HKV_MAX(s->pgsz, HKV_PGSZ_2M), units = (s->bytes + unit - 1) / unit;
	unsigned i;

	for (i = 0; i < n; i++) {
		uint64_t b0 = units * i / n * unit, b1 = HKV_MIN(units * (i + 1) / n * unit, s->bytes);

		sl[i] = (struct slice){ .s = s, .p = s->base + b0, .len = b1 - b0,
					.step = s->pgsz };
	}
}

/**
 * prefault_segments() - fault mapped segments in, all at once
 * @a: the arena
 * @segs: the segments, mapped and bound
 * @n: how many
 * @errs: errs[i] receives segment i's result: 0, -ENOMEM when its pages are
 *	not there to be had (populate's -ENOMEM, or -EFAULT where a touch
 *	would have raised SIGBUS), or another -errno of MADV_POPULATE_WRITE
 *
 * Each segment gets its own threads (prefault_threads, default the node's
 * CPUs), pinned to its node's CPUs; all run together.
 *
 * Return: 0, or -ENOMEM when the thread bookkeeping cannot be allocated.
 */
int prefault_segments(struct hkv_arena *a, struct arena_seg **segs, unsigned n, int *errs)
{
	unsigned nt[HKV_ARENA_SEGS], total = 0, i, at;
	uint64_t t0 = os->now_ns();
	struct slice *sl;
	pthread_t *tid;
	bool *started;
	int err = -ENOMEM;

	for (i = 0; i < n; i++) {
		uint64_t unit = HKV_MAX(segs[i]->pgsz, HKV_PGSZ_2M);

		nt[i] = thread_count(a, segs[i], (segs[i]->bytes + unit - 1) / unit);
		total += nt[i];
	}
	sl = calloc(total, sizeof(*sl));
	tid = calloc(total, sizeof(*tid));
	started = calloc(total, sizeof(*started));
	if (!sl || !tid || !started)
		goto free_bufs;
	for (i = 0, at = 0; i < n; at += nt[i++])
		cut(segs[i], sl + at, nt[i]);
	run_slices(sl, tid, started, total);
	for (i = 0, at = 0; i < n; at += nt[i++])
		errs[i] = collect(a, segs[i], sl + at, nt[i], t0);
	err = 0;
free_bufs:
	free(started);
	free(tid);
	free(sl);
	return err;
}
