// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cma.c - single copy between two processes of this host, for the metrics
 * tests: this process serves a pool (label "cma target") on 127.0.0.1; a
 * child of it, the initiator (pool "cma initiator"), puts ROUNDS
 * transfers of XP pages into it and gets each back, compared byte for
 * byte, on the single-copy path (the default between processes of one
 * host: the target copies). A second endpoint of the child, on a pool of
 * its own ("cma liar"), offers another process's pid and is refused, so
 * the target counts a refused offer. Last, one put of a 2 MiB hugepage
 * the initiator made unreadable: the target's copy faults (one fault
 * counted there), the put fails with -EFAULT and the connection lives.
 *
 * Then the initiator stops moving, publishes its page and writes its
 * hkv_xfer_stats_print() JSON as one line on stdout; the target, told
 * through a pipe, does the same and waits for a line on stdin before both
 * end. It exits 0 when the child did and the target's pool checks clean.
 *
 *   metrics-cma    (stdin/stdout: the checkpoint)
 */
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "xfer-side.h"

#define ALLOCATED	128		/* the target's pages [0, ALLOCATED) */
#define XP		16		/* pages per transfer */
#define ROUNDS		6
#define HP_PAGES	32		/* pages of a 2 MiB hugepage */

static const char key[] = "metrics-cma: the key of both sides";

static void endpoint(struct hkv_pool *pool, struct hkv_xfer **x)
{
	struct hkv_xfer_opts o = { .sz = sizeof(o), .timeout_ms = 10000, .key = key,
				   .key_len = strlen(key) };
	int err = hkv_xfer_create(pool, &o, x);

	if (err)
		die("create", err);
}

static void connect_to(struct hkv_xfer *x, const char *addr, unsigned cma_out,
		       struct hkv_xfer_peer **peer)
{
	struct hkv_xfer_stats st = { .sz = sizeof(st) };
	int err = hkv_xfer_connect(x, addr, 0, peer);

	if (err)
		die("connect", err);
	/* connect returns once the target answered the offer */
	hkv_xfer_stats(x, *peer, &st);
	if (st.cma_out != cma_out)
		die(cma_out ? "no single copy to the target" : "the liar was not refused",
		    -EPROTO);
}

/* a put or get of l onto r; its result */
static int xfer(struct hkv_xfer *x, struct hkv_xfer_peer *peer, bool get,
		struct hkv_extent *l, const struct hkv_extent *r)
{
	struct hkv_xfer_req rq = { .sz = sizeof(rq), .local = l, .nlocal = 1, .remote = r,
				   .nremote = 1, .timeout_ms = 10000 };
	uint64_t id;
	int err = get ? hkv_xfer_get(peer, &rq, &id) : hkv_xfer_put(peer, &rq, &id);

	return err ? err : hkv_xfer_wait(x, id, 0);
}

static void move(struct hkv_xfer *x, struct hkv_xfer_peer *peer, bool get,
		 struct hkv_extent *l, const struct hkv_extent *r)
{
	int err = xfer(x, peer, get, l, r);

	if (err)
		die(get ? "get" : "put", err);
}

/* a put from a hugepage of the pool this process cannot read: -EFAULT
 * from the target's copy, and the connection lives */
static void put_unreadable(struct hkv_xfer *x, struct hkv_xfer_peer *peer,
			   struct hkv_pool *pool)
{
	struct hkv_extent all, h, r = { ALLOCATED - HP_PAGES, HP_PAGES };
	void *p;
	int err;

	if (hkv_alloc(pool, 2 * HP_PAGES, HKV_LANE_ANY, HKV_ALLOC_CONTIG, &all, 1) != 1)
		die("alloc", -ENOMEM);
	h.start = (all.start + HP_PAGES - 1) / HP_PAGES * HP_PAGES;	/* the hugepage */
	h.len = HP_PAGES;
	p = hkv_page_ptr(pool, h.start);
	if ((uintptr_t)p % (HP_PAGES * PB))
		die("a pool page not on a 2 MiB boundary", -EINVAL);
	if (mprotect(p, HP_PAGES * PB, PROT_NONE))
		die("mprotect", -errno);
	err = xfer(x, peer, false, &h, &r);
	if (mprotect(p, HP_PAGES * PB, PROT_READ | PROT_WRITE))
		die("mprotect", -errno);
	if (err != -EFAULT || hkv_xfer_peer_error(peer))
		die("the unreadable put", err ? err : -EPROTO);
	if (hkv_free(pool, &all, 1))
		die("free", -EINVAL);
}

/* ---- the initiator (child) --------------------------------------------- */

static void initiator(int rfd, int wfd)
{
	struct hkv_xfer_peer *peer, *lpeer;
	struct hkv_extent l, back, r;
	struct hkv_pool *pool, *lpool;
	struct hkv_xfer *x, *liar;
	char c, addr[64];
	unsigned i;

	target_addr(rfd, addr, sizeof(addr));
	pool = pool_with("cma initiator", XP, &l);
	if (hkv_alloc(pool, XP, HKV_LANE_ANY, HKV_ALLOC_CONTIG, &back, 1) != 1)
		die("alloc", -ENOMEM);
	endpoint(pool, &x);
	connect_to(x, addr, 1, &peer);
	/* pid 1 holds no socket of this connection: the target refuses it */
	setenv("HUGEKV_XFER_CMA_PID", "1", 1);
	lpool = pool_new("cma liar");
	endpoint(lpool, &liar);
	unsetenv("HUGEKV_XFER_CMA_PID");
	connect_to(liar, addr, 0, &lpeer);
	for (i = 0; i < ROUNDS; i++) {
		r = (struct hkv_extent){ i * XP, XP };
		memset(hkv_page_ptr(pool, l.start), 0x30 + (int)i, XP * PB);
		memset(hkv_page_ptr(pool, back.start), 0, XP * PB);
		move(x, peer, false, &l, &r);
		move(x, peer, true, &back, &r);
		if (memcmp(hkv_page_ptr(pool, l.start), hkv_page_ptr(pool, back.start), XP * PB))
			die("the pages read back differ", -EIO);
	}
	put_unreadable(x, peer, pool);
	side_report(x, pool);
	if (write(wfd, "", 1) != 1)
		die("write", -errno);
	if (read(rfd, &c, 1) < 0)		/* silent until the target is done */
		die("read", -errno);
	hkv_xfer_destroy(liar);
	hkv_pool_destroy(lpool);
	hkv_xfer_destroy(x);
	if (hkv_free(pool, &l, 1) || hkv_free(pool, &back, 1) || hkv_check(pool))
		exit(1);
	hkv_pool_destroy(pool);
	exit(0);
}

/* ---- the target --------------------------------------------------------- */

/* serve until the initiator says it is done (or the child is gone) */
static void serve_until(struct hkv_xfer *x, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint64_t t = now_ms();
	char c;

	while (!poll(&pfd, 1, 0)) {
		hkv_xfer_progress(x);
		if (now_ms() - t > 60000)
			die("the initiator did not finish", -ETIMEDOUT);
	}
	if (read(fd, &c, 1) != 1)
		die("the initiator ended before its checkpoint", -EPIPE);
}

int main(void)
{
	struct target t;
	int st, rc = 0;
	uint64_t t0;

	target_start(&t, "cma target", ALLOCATED, initiator);
	endpoint(t.pool, &t.x);
	target_listen(&t);
	serve_until(t.x, t.from);
	checkpoint(t.x, t.pool);
	close(t.to);				/* the initiator goes */
	/* progress while it closes its connections */
	for (t0 = now_ms(); waitpid(t.child, &st, WNOHANG) == 0; hkv_xfer_progress(t.x))
		if (now_ms() - t0 > 60000) {
			kill(t.child, SIGKILL);
			waitpid(t.child, &st, 0);
			rc = 1;
			break;
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		rc = 1;
	return target_end(&t) ? 1 : rc;
}
