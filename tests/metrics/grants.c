// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * grants.c - a transfer target under a grant flood, for the metrics tests:
 * this process serves a pool (label "grant target") on 127.0.0.1 with
 * tight limits, and a child of it, the initiator, drives every kind of
 * refusal the target counts:
 *
 *   - a connection with the wrong key (an authentication failure);
 *   - a second connection while one is open (max_peers 1: rejected);
 *   - BIG gets of 150 single pages: grant state past max_grant_mem
 *     (16 KiB) is refused with -ENOBUFS;
 *   - a get of pages the target has not allocated (denied);
 *   - small gets past max_grants (8): -EBUSY;
 *   - then it falls silent holding 8 grants: their deadline (grant_timeout_ms)
 *     closes its connection.
 *
 * The initiator submits without progressing, so no grant is released and
 * the figures are exact. At two checkpoints (grants held; then revoked)
 * the target stops progressing, publishes its page and writes its
 * hkv_xfer_stats_print() JSON as one line on stdout, then waits for a line
 * on stdin before it goes on. It exits 0 when its pool checks clean with
 * every grant ended.
 *
 *   metrics-grants    (stdin/stdout: the checkpoints)
 */
#include <string.h>
#include <sys/wait.h>

#include "xfer-side.h"

#define ALLOCATED	384		/* the target's pages [0, ALLOCATED) */
#define BIG		8		/* gets of BIG_EXT single pages */
#define BIG_EXT		150
#define SMALL		4
#define MAX_GRANTS	8
#define GRANT_MEM	(16u << 10)
#define DEADLINE_MS	2000

static const char key[] = "metrics-grants: the key of both sides";
static const char bad_key[] = "metrics-grants: not the target's key";

static int endpoint(struct hkv_pool *pool, const char *k, struct hkv_xfer **x)
{
	struct hkv_xfer_opts o = { .sz = sizeof(o), .timeout_ms = 5000, .key = k,
				   .key_len = strlen(k), .max_grants = MAX_GRANTS,
				   .max_grant_mem = GRANT_MEM, .grant_timeout_ms = DEADLINE_MS,
				   .max_peers = 1 };

	return hkv_xfer_create(pool, &o, x);
}

/* ---- the initiator (child) --------------------------------------------- */

static int get(struct hkv_xfer_peer *peer, struct hkv_extent *l, const struct hkv_extent *r,
	       unsigned nr)
{
	struct hkv_xfer_req rq = { .sz = sizeof(rq), .local = l, .nlocal = 1, .remote = r,
				   .nremote = nr, .timeout_ms = 60000 };
	uint64_t id;

	return hkv_xfer_get(peer, &rq, &id);
}

static void initiator(int rfd, int wfd)
{
	static struct hkv_extent big[BIG_EXT];
	struct hkv_extent lbig, lsmall, r;
	struct hkv_xfer *bad, *x, *third;
	struct hkv_xfer_peer *peer;
	struct hkv_pool *pool;
	char c, addr[64];
	int err, i;

	(void)wfd;
	target_addr(rfd, addr, sizeof(addr));
	pool = pool_with("grant initiator", BIG_EXT, &lbig);
	if (hkv_alloc(pool, 1, HKV_LANE_ANY, 0, &lsmall, 1) != 1)
		die("alloc", -ENOMEM);
	/* the wrong key: refused */
	if ((err = endpoint(pool, bad_key, &bad)))
		die("create", err);
	err = hkv_xfer_connect(bad, addr, 0, &peer);
	if (err != -EACCES)
		die("connect with the wrong key did not fail with -EACCES", err ? err : -EINVAL);
	hkv_xfer_destroy(bad);
	/* the target frees the refused peer as its close completes; until
	 * then it has no room for us (counted as rejected too) */
	if ((err = endpoint(pool, key, &x)))
		die("create", err);
	for (i = 0; (err = hkv_xfer_connect(x, addr, 0, &peer)) == -ECONNREFUSED && i < 200; i++)
		usleep(20000);
	if (err)
		die("connect", err);
	/* one connection at most: a second is rejected */
	if ((err = endpoint(pool, key, &third)))
		die("create", err);
	err = hkv_xfer_connect(third, addr, 0, &peer);
	if (err != -ECONNREFUSED)
		die("a connection past max_peers was not refused", err ? err : -EINVAL);
	hkv_xfer_destroy(third);
	/* GRANT_REQs leave at submission; without progress nothing is released */
	for (i = 0; i < BIG_EXT; i++)
		big[i] = (struct hkv_extent){ 2 * i, 1 };
	for (i = 0; i < BIG; i++)
		if ((err = get(peer, &lbig, big, BIG_EXT)))
			die("big get", err);
	r = (struct hkv_extent){ NPAGES - 1, 1 };	/* not allocated there */
	if ((err = get(peer, &lsmall, &r, 1)))
		die("denied get", err);
	for (i = 0; i < SMALL; i++) {
		r = (struct hkv_extent){ 300 + i, 1 };
		if ((err = get(peer, &lsmall, &r, 1)))
			die("small get", err);
	}
	/* silent until the target is done with us */
	if (read(rfd, &c, 1) < 0)
		die("read", -errno);
	hkv_xfer_destroy(x);
	hkv_pool_destroy(pool);
	exit(0);
}

/* ---- the target --------------------------------------------------------- */

static void progress_until(struct hkv_xfer *x, int (*cond)(const struct hkv_xfer_stats *),
			   const char *what)
{
	struct hkv_xfer_stats st = { .sz = sizeof(st) };
	uint64_t t = now_ms();

	for (;;) {
		hkv_xfer_progress(x);
		hkv_xfer_stats(x, NULL, &st);
		if (cond(&st))
			return;
		if (now_ms() - t > 60000) {
			fprintf(stderr, "metrics-grants: no %s: grants %llu refused %llu auth %llu "
				"rejected %llu expired %llu\n", what, (unsigned long long)st.grants,
				(unsigned long long)st.grants_refused,
				(unsigned long long)st.auth_failures,
				(unsigned long long)st.peers_rejected,
				(unsigned long long)st.grants_expired);
			exit(1);
		}
	}
}

static int flooded(const struct hkv_xfer_stats *st)
{
	return st->grants + st->grants_refused == BIG + 1 + SMALL && st->auth_failures == 1 &&
	       st->peers_rejected >= 1;
}

static int revoked(const struct hkv_xfer_stats *st)
{
	return st->grants_expired == 1 && !st->grants_active;
}

int main(void)
{
	struct target t;
	int st, rc = 0;

	target_start(&t, "grant target", ALLOCATED, initiator);
	close(t.from);			/* this initiator answers nothing */
	if ((st = endpoint(t.pool, key, &t.x)))
		die("create", st);
	target_listen(&t);
	progress_until(t.x, flooded, "flood");
	checkpoint(t.x, t.pool);		/* 1: grants held, refusals counted */
	progress_until(t.x, revoked, "deadline revocation");
	checkpoint(t.x, t.pool);		/* 2: the silent peer revoked */
	close(t.to);				/* the initiator goes */
	if (waitpid(t.child, &st, 0) != t.child || !WIFEXITED(st) || WEXITSTATUS(st))
		rc = 1;
	return target_end(&t) ? 1 : rc;
}
