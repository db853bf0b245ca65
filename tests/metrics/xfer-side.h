/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * xfer-side.h - what the metrics tests' transfer programs (grants.c,
 * cma.c) share: a target that forks its initiator and tells it the port
 * over a pipe, a pool with a label, the monotonic clock, and the
 * checkpoint at which a side stops moving, publishes its page and writes
 * its hkv_xfer_stats_print() JSON as one line on stdout, so that the test
 * compares the exported figures with the library's own.
 */
#ifndef METRICS_XFER_SIDE_H
#define METRICS_XFER_SIDE_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <hugekv.h>
#include <hugekv-xfer.h>

#include "../hkv_test_clock.h"

#define NPAGES		512
#define PB		65536ull

static void die(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what, hkv_strerror(err));
	exit(1);
}

static struct hkv_pool *pool_new(const char *label)
{
	struct hkv_pool_opts o = { .sz = sizeof(o), .npages = NPAGES, .page_bytes = PB,
				   .numa_node = -1, .label = label };
	struct hkv_pool *p;
	int err = hkv_pool_create(&o, &p);

	if (err)
		die("pool", err);
	return p;
}

/* the serving side: its pool with @e allocated, its endpoint, the pipes
 * to and from its initiator, a child of it */
struct target {
	struct hkv_pool *pool;
	struct hkv_extent e;
	struct hkv_xfer *x;
	int to, from;
	pid_t child;
};

/* a pool with @n pages allocated in one extent, *e */
static struct hkv_pool *pool_with(const char *label, uint64_t n, struct hkv_extent *e)
{
	struct hkv_pool *p = pool_new(label);

	if (hkv_alloc(p, n, HKV_LANE_ANY, HKV_ALLOC_CONTIG, e, 1) != 1)
		die("alloc", -ENOMEM);
	return p;
}

/*
 * The target's start: the initiator forked before UCX starts here, running
 * @initiator with the read end of a pipe from the target (the port, then
 * its end) and the write end of one back; then the target's pool (label
 * @label, @n pages allocated). The caller makes t->x, then target_listen().
 */
static void target_start(struct target *t, const char *label, uint64_t n,
			 void (*initiator)(int rfd, int wfd))
{
	int down[2], up[2];

	signal(SIGPIPE, SIG_IGN);
	setenv("HUGEKV_LOG", "error", 0);
	if (pipe(down) || pipe(up))
		die("pipe", -errno);
	fflush(NULL);
	t->child = fork();
	if (t->child < 0)
		die("fork", -errno);
	if (t->child == 0) {
		close(down[1]);
		close(up[0]);
		initiator(down[0], up[1]);
		exit(1);
	}
	close(down[0]);
	close(up[1]);
	t->to = down[1];
	t->from = up[0];
	t->pool = pool_with(label, n, &t->e);
}

/* listen on 127.0.0.1 and tell the initiator the port */
static void target_listen(struct target *t)
{
	unsigned port;
	int err = hkv_xfer_listen(t->x, "127.0.0.1:0", &port);

	if (err)
		die("listen", err);
	if (write(t->to, &port, sizeof(port)) != sizeof(port))
		die("write", -errno);
}

/* the initiator's side of it: the target's address */
static void target_addr(int rfd, char *addr, size_t len)
{
	unsigned port;

	if (read(rfd, &port, sizeof(port)) != sizeof(port))
		exit(1);
	snprintf(addr, len, "127.0.0.1:%u", port);
}

/* the target's end: its endpoint gone, its pages given back; 0 when its
 * pool then checks clean with every page free */
static int target_end(struct target *t)
{
	int bad;

	hkv_xfer_destroy(t->x);
	bad = hkv_free(t->pool, &t->e, 1) || hkv_check(t->pool) ||
	      hkv_available(t->pool) != NPAGES;
	hkv_pool_destroy(t->pool);
	return bad;
}

/* progress a while (the endpoint publishes changed figures at most every
 * 100 ms), publish the page, write the stats; nothing moves after it */
static void side_report(struct hkv_xfer *x, struct hkv_pool *pool)
{
	uint64_t t = now_ms();

	while (now_ms() - t < 300)
		hkv_xfer_progress(x);
	if (hkv_stats_publish(pool))
		die("publish", -EIO);
	hkv_xfer_stats_print(x, stdout, HKV_PRINT_JSON);
	fflush(stdout);
}

/* side_report(), then a line on stdin before the side goes on */
static void checkpoint(struct hkv_xfer *x, struct hkv_pool *pool)
{
	char line[16];

	side_report(x, pool);
	if (!fgets(line, sizeof(line), stdin))
		exit(1);
}

#endif /* METRICS_XFER_SIDE_H */
