/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * internal.h - libhugekv-xfer's table of contents, in layer order:
 *
 *   util.c      UCX status -> errno, clocks, "HOST:PORT", logging, the
 *               fork() generation
 *   msg.c       active messages: wire format, send, the inbox, peer lookup,
 *               noting a broken connection (xf_peer_error())
 *   auth.c      keys, nonces, HMAC-SHA256 proofs (OpenSSL's libcrypto)
 *   cma.c       the single-copy path's identity: a same-host peer's pid
 *               proved by the kernel, pinned by a pidfd, probed once; the
 *               copies (process_vm_readv/writev)
 *   reg.c       the pool's ranges (regions split at reg_chunk_bytes), HELLO
 *   plan.c      checks of a transfer and its plan: fewest UCX operations
 *   stats.c     counters, latency histogram, slowest recent, JSON
 *   metrics.c   the figures into the pool's stats page (hkv_page_set_xfer())
 *   grant.c     the target side: GRANT_REQ checks, grants, RELEASE, DONE
 *   datapath.c  the data path: DATA, GET_REQ/GET_REP
 *   transfer.c  the initiator side: submit, issue, complete
 *   conn.c      listen, HELLO and AUTH, failing a peer, reaping
 *   progress.c  one step: dispatch of control messages, timeouts; wait/test
 *   session.c   accept, connect, close
 *   endpoint.c  create and destroy
 *
 * Each file calls only files above it in this list: a lower layer that
 * finds a connection broken notes it (xf_peer_error()), and conn.c fails
 * the peer in the next progress step.
 *
 * An endpoint and everything hanging off it is used by one thread at a
 * time, so nothing here takes a lock (but cma.c's hand-off to its copy
 * helpers, which touch only the iovecs of one copy). UCX callbacks only record what
 * happened (counters, the inbox); all decisions and every user callback run
 * from hkv_xfer_progress() after ucp_worker_progress() returns.
 */
#ifndef HKV_XFER_INTERNAL_H
#define HKV_XFER_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <ucp/api/ucp.h>

#include "hugekv.h"
#include "hugekv-xfer.h"
#ifndef unlikely
#define unlikely(x)	__builtin_expect(!!(x), 0)	/* as the core's */
#endif
#include "../trace.h"	/* the probes, from bpf/hugekv_probes.h */

#define XF_MIN(a, b)	((a) < (b) ? (a) : (b))
#define XF_MAX(a, b)	((a) > (b) ? (a) : (b))

#define XF_DEF_INFLIGHT		64
#define XF_DEF_TIMEOUT_MS	10000
#define XF_DEF_GRANTS		1024
#define XF_MAX_EXTENTS		(1u << 20)	/* extents of one request */
#define XF_DEF_GRANT_MEM	(1u << 20)	/* grant state per peer (bytes) */
#define XF_DEF_GRANT_MEM_ALL	(16u << 20)	/* grant state of all peers */
#define XF_DEF_PEERS		256
#define XF_NONCE		32
#define XF_MAC			32		/* HMAC-SHA256 */
#define XF_NAME			64		/* a peer's name, with its NUL */
#define XF_KEY_MIN		16
#define XF_KEY_MAX		4096
#define XF_MAX_KEYS		64
#define XF_MAX_RANGES		65536u		/* ranges of a pool (in HELLO) */
#define XF_PREAUTH_MSG		(XF_MAX_RANGES * 16u + 256u)	/* before AUTH, at most */

/* ---- stats.c ---------------------------------------------------------- */

#define XF_HIST_SUB_BITS	5
#define XF_HIST_BUCKETS		((64 - XF_HIST_SUB_BITS) << XF_HIST_SUB_BITS)

struct xf_hist {
	uint64_t n, max;
	uint32_t count[XF_HIST_BUCKETS];
};

struct xf_stats {
	uint64_t peers, transfers, failures, timeouts, refused, puts, gets;
	uint64_t submitted, ops, pages, bytes, extents_in, max_ops_inflight;
	uint64_t grants, grants_refused, grants_active, peer_failures;
	uint64_t auth_failures, grants_expired, grants_over_limit, grant_mem, grant_mem_peak;
	uint64_t grants_busy, grant_pages, grant_bytes, peers_rejected;
	uint64_t cma_refused, cma_calls, cma_runs, cma_bytes, cma_faults;
	struct xf_hist lat, grant;
	unsigned recent_head, nrecent;
	struct hkv_xfer_slow recent[HKV_XFER_RECENT];
};

struct xf_tx;
void xf_stats_submit(struct xf_stats *s, const struct xf_tx *tx);
void xf_stats_done(struct xf_stats *s, const struct xf_tx *tx, uint64_t ns);
void xf_hist_add(struct xf_hist *h, uint64_t v);
void xf_cma_paths(const struct hkv_xfer *x, const struct hkv_xfer_peer *peer, uint64_t *out,
		  uint64_t *in);
uint64_t xf_hist_pct(const struct xf_hist *h, double pct);
/* metrics.c: the figures into the pool's stats page (rate-limited; a
 * change of x->metrics_dirty left by the limit goes with a later step) */
void xf_metrics_publish(struct hkv_xfer *x, bool force);

/* ---- reg.c -------------------------------------------------------------- */

/* a range of the pool: whole KV pages of one region, contiguous in memory;
 * an operation never crosses one. Nothing is registered with UCX. */
struct xf_reg {
	uint64_t first_page, npages;
	char *base;
};

/* the peer's range: pages only (no address leaves a process) */
struct xf_rreg {
	uint64_t first_page, npages;
};

/* a key of the keyring: for the peer called @name, or any peer ("") */
struct xf_key {
	char name[XF_NAME];
	unsigned char *key;
	size_t len;
};

/* ---- the objects ------------------------------------------------------ */

struct xf_grant {
	struct xf_grant *next;
	struct hkv_xfer_peer *peer;
	uint64_t id;
	unsigned op, n;
	struct hkv_extent *ext;
	/* two-sided data path: receives/sends still using the pages */
	unsigned pending;
	uint64_t bytes_done, bytes_expected, deadline, mem, pages;
	bool released, ended, answer;	/* answer: a two-sided put, send DONE */
	bool cma;			/* served by single copy: no DONE */
	int result;			/* RELEASE's result, or the failure */
};

struct xf_msg {
	struct xf_msg *next;
	ucp_ep_h ep;
	unsigned am_id;
	size_t len;
	unsigned char data[];
};

enum { XF_PEER_CONNECTING, XF_PEER_READY, XF_PEER_FAILED };

struct hkv_xfer_peer {
	struct hkv_xfer *x;
	struct hkv_xfer_peer *next;
	uint64_t id;
	ucp_ep_h ep;
	void *close_req;		/* forced close in progress */
	int state, error;
	bool incoming, handed_out, hello_in, closing, authed, gentle, by_uid;
	bool ep_broken;			/* UCX reported the connection broken */
	uint64_t npages, page_bytes, auth_deadline;
	/* a refused peer's connection stays open until it closes it or this
	 * time passes (0: none), so that the refusal reaches it first */
	uint64_t linger;
	unsigned char nonce[XF_NONCE], peer_nonce[XF_NONCE];
	char name[XF_NAME];		/* the name it authenticated as */
	uint64_t grant_mem;		/* bytes of grant state it holds */
	struct xf_rreg *rregs;
	unsigned nrregs;
	struct xf_grant *grants;	/* grants this peer holds on our pool */
	unsigned ngrants;
	unsigned ntx;			/* our transfers to it, not yet ended */
	/* single copy (cma.c): cma_out, the peer copies for our transfers;
	 * cma_in, we copy for its, into or out of the process cma_pid,
	 * pinned by cma_pidfd */
	bool cma_out, cma_in, cma_offered, cma_answered;
	bool cma_heard;		/* the peer made its one offer (either answer) */
	int cma_pid, cma_pidfd;
	unsigned char cma_token[XF_NONCE];	/* read by the peer's probe */
	struct xf_stats st;
};

/* the header of a two-sided data message (DATA, GET_REQ, GET_REP) */
struct xf_wire_data {
	uint32_t magic;
	uint16_t version, kind;
	uint64_t id;			/* grant = transfer id */
	uint64_t page, npages;		/* the target's pages */
	uint32_t op;			/* index in the transfer */
	int32_t result;
};

/* one UCX operation of a transfer */
struct xf_op {
	char *laddr;
	uint64_t bytes, rpage;
	struct xf_wire_data hdr;	/* lives until the transfer is freed */
	bool landed;			/* a get's data arrived */
};

enum { XF_TX_GRANT, XF_TX_DATA, XF_TX_DONE_WAIT, XF_TX_ENDED };

struct xf_tx {
	struct xf_tx *next;		/* endpoint's list of transfers */
	struct hkv_xfer_peer *peer;
	uint64_t id, peer_id;
	unsigned op, state;
	int result;
	struct xf_op *ops;
	unsigned nops, next_op, inflight;
	struct hkv_extent *rext;	/* remote extents, merged, for GRANT_REQ */
	unsigned nrext, nlocal;
	uint64_t *units;
	unsigned nunits;
	uint64_t pages, bytes;
	uint64_t t_submit, t_grant, deadline;
	bool granted, collect, wait_done, released;
	bool cma;			/* the target copies (single-copy path) */
	hkv_xfer_done_fn done;
	void *ctx;
};

struct xf_conn_req {
	struct xf_conn_req *next;
	ucp_conn_request_h req;
};

struct hkv_xfer {
	struct hkv_pool *pool;
	uint64_t pool_id, page_bytes, npages;
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_listener_h listener;
	struct xf_reg *regs;
	unsigned nregs;
	struct hkv_xfer_peer *peers;
	unsigned npeers, max_peers;
	struct xf_key keys[XF_MAX_KEYS];
	unsigned nkeys;
	char name[XF_NAME];		/* ours, sent in HELLO */
	uint64_t next_peer_id, next_tx_id;
	struct xf_conn_req *conn_reqs;
	struct xf_msg *inbox, **inbox_tail;
	struct xf_tx *txs;		/* all transfers not yet collected */
	unsigned inflight, max_inflight, max_grants, flags, pending_sends;
	unsigned cma_inflight;		/* of inflight: the peers copy them */
	unsigned grants_closing;	/* released or failed, not yet ended */
	int timeout_ms, grant_timeout_ms;
	uint64_t reg_chunk_bytes, max_grant_mem, max_grant_mem_all;
	hkv_xfer_access_fn access;
	void *access_ctx;
	unsigned completed;		/* transfers ended by this progress call */
	bool metrics_dirty;		/* page figures changed since the last publication */
	int cma_mode;			/* XF_CMA_*: single copy on, off, failing (tests) */
	int cma_claim_pid;		/* tests: the pid offered (0 = ours) */
	struct xf_cma_workers *cma_workers;	/* copy helpers (cma.c), or NULL */
	bool cma_no_workers;		/* none wanted, or none could start */
	struct xf_stats st;
	uint64_t fork_gen;		/* the fork() generation it was created in */
};

/* ---- util.c ------------------------------------------------------------- */

int xf_errno(ucs_status_t st);
uint64_t xf_now_ns(void);
uint64_t xf_coarse_ns(void);	/* deadline checks: never early, a tick late */
int xf_parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *len);
void xf_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t xf_deadline(int timeout_ms);
int xf_fork_generation(uint64_t *gen);
extern uint64_t xf_fork_gen;

/* created before a fork() of this process (its child's calls: -ECHILD) */
static inline bool xf_forked(const struct hkv_xfer *x)
{
	return unlikely(x->fork_gen != __atomic_load_n(&xf_fork_gen, __ATOMIC_RELAXED));
}

/* ---- reg.c -------------------------------------------------------------- */

int xf_reg_create(struct hkv_xfer *x);
void xf_reg_destroy(struct hkv_xfer *x);
const struct xf_reg *xf_reg_find(const struct hkv_xfer *x, uint64_t page);
const struct xf_rreg *xf_rreg_find(const struct hkv_xfer_peer *p, uint64_t page);
int xf_hello_send(struct hkv_xfer_peer *p);
int xf_hello_parse(struct hkv_xfer_peer *p, const void *buf, size_t len);
void xf_rregs_destroy(struct hkv_xfer_peer *p);

/* ---- auth.c ------------------------------------------------------------- */

int xf_keys_load(struct hkv_xfer *x, const struct hkv_xfer_opts *o);
void xf_keys_free(struct hkv_xfer *x);
int xf_nonce(unsigned char *buf, size_t len);
int xf_auth_send(struct hkv_xfer_peer *p);
void xf_auth_refuse(struct hkv_xfer_peer *p);
/* 0 when the AUTH proves the peer knows its key (p->authed set), -EACCES,
 * -EPROTO */
int xf_auth_check(struct hkv_xfer_peer *p, const void *buf, size_t len);
/* the uid and socket inode of the peer's end of p's TCP connection */
int xf_peer_sock(const struct hkv_xfer_peer *p, unsigned long *uid, unsigned long *inode);


/* ---- msg.c -------------------------------------------------------------- */

enum { XF_AM_HELLO = 0x4b31, XF_AM_GRANT_REQ, XF_AM_GRANT_REP, XF_AM_RELEASE,
       XF_AM_DATA, XF_AM_GET_REQ, XF_AM_GET_REP, XF_AM_DONE, XF_AM_AUTH,
       XF_AM_CMA_OFFER, XF_AM_CMA_ACK, XF_AM_CMA_REQ, XF_AM_CMA_REP };
#define XF_MAGIC	0x564b4858u	/* "XHKV" */
#define XF_VERSION	4	/* the shared-memory segment size of endpoint.c; single copy */

struct xf_wire_hdr {
	uint32_t magic;
	uint16_t version, kind;
};

struct xf_wire_grant_req {
	struct xf_wire_hdr h;
	uint64_t id;
	uint32_t op, n;
	struct hkv_extent ext[];
};

struct xf_wire_result {		/* GRANT_REP, RELEASE, DONE */
	struct xf_wire_hdr h;
	uint64_t id;
	int32_t result;
	uint32_t nops;			/* RELEASE: operations sent */
};

int xf_am_init(struct hkv_xfer *x);
int xf_am_send(struct hkv_xfer_peer *p, unsigned am_id, const void *buf, size_t len);
void xf_inbox_free(struct hkv_xfer *x);
struct hkv_xfer_peer *xf_peer_by_ep(struct hkv_xfer *x, ucp_ep_h ep);
void xf_peer_error(struct hkv_xfer_peer *p, int err);
/* a GRANT_REP, RELEASE or DONE of @kind from @p, or NULL: malformed (the
 * peer's connection is noted broken, -EPROTO) */
const struct xf_wire_result *xf_result_msg(struct hkv_xfer_peer *p, const void *buf,
					   size_t len, unsigned kind);
void xf_wire_hdr_set(struct xf_wire_hdr *h, unsigned kind);
bool xf_wire_hdr_ok(const void *buf, size_t len, size_t min, unsigned kind);

/* ---- cma.c -------------------------------------------------------------- */

enum { XF_CMA_ON, XF_CMA_OFF, XF_CMA_FAIL };
#define XF_CMA_MAX_RUNS		1024u	/* runs of one request: IOV_MAX */
#define XF_CMA_MARGIN_NS	100000000ull	/* no copy this close to the deadline */
#define XF_REFUSED_LINGER_NS	200000000ull	/* a refused peer: see auth_failed() */

/* one run of a single-copy request: the target's pages, the peer's bytes */
struct xf_wire_cma_run {
	uint64_t page, npages;
	uint64_t addr;			/* in the peer's address space */
};

/* CMA_REQ (initiator -> target), CMA_REP (target -> initiator) */
struct xf_wire_cma {
	struct xf_wire_hdr h;
	uint32_t op, n;			/* put/get; runs (REQ), operations (REP) */
	uint64_t id;			/* the transfer = grant */
	uint32_t first;			/* the first operation's index */
	int32_t result;			/* REP: 0 or -errno */
	uint64_t deadline_ns;		/* REQ: the transfer's, CLOCK_MONOTONIC */
	struct xf_wire_cma_run run[];
};

void xf_cma_init(struct hkv_xfer *x);
void xf_cma_offer(struct hkv_xfer_peer *p);
void xf_on_cma_offer(struct hkv_xfer_peer *p, const void *buf, size_t len);
void xf_on_cma_ack(struct hkv_xfer_peer *p, const void *buf, size_t len);
int xf_cma_copy(struct hkv_xfer_peer *p, bool put, const struct iovec *local,
		const struct iovec *remote, unsigned n, uint64_t bytes);
void xf_cma_close(struct hkv_xfer_peer *p);
void xf_cma_workers_stop(struct hkv_xfer *x);

/* ---- conn.c ------------------------------------------------------------- */

void xf_peer_fail(struct hkv_xfer_peer *p, int err);
void xf_peer_ep_close(struct hkv_xfer_peer *p);
struct hkv_xfer_peer *xf_peer_new(struct hkv_xfer *x, bool incoming);
int xf_peer_ep_create(struct hkv_xfer_peer *p, ucp_ep_params_t *ep);
bool xf_peer_closed(struct hkv_xfer_peer *p);
void xf_conn_reqs_accept(struct hkv_xfer *x);
void xf_on_hello(struct hkv_xfer_peer *p, const void *buf, size_t len);
void xf_on_auth(struct hkv_xfer_peer *p, const void *buf, size_t len);
void xf_peers_reap(struct hkv_xfer *x);
void xf_peer_free(struct hkv_xfer_peer *p);

/* ---- plan.c ------------------------------------------------------------- */

int xf_check_extents(const struct hkv_extent *e, unsigned n, uint64_t npages,
		     uint64_t *pages);
int xf_check_allocated(struct hkv_pool *pool, const struct hkv_extent *e, unsigned n);
int xf_check_disjoint(const struct hkv_extent *e, unsigned n);
unsigned xf_merge_extents(const struct hkv_extent *in, unsigned n, struct hkv_extent *out);
int xf_plan(const struct hkv_xfer *x, const struct hkv_xfer_peer *p,
	    const struct hkv_extent *le, unsigned nl, const struct hkv_extent *re,
	    unsigned nr, bool per_page, struct xf_op **ops, unsigned *nops);

/* ---- grant.c ------------------------------------------------------------ */

void xf_on_grant_req(struct hkv_xfer_peer *p, const void *buf, size_t len);
void xf_grants_expire(struct hkv_xfer *x, uint64_t now);
void xf_on_release(struct hkv_xfer_peer *p, const void *buf, size_t len);
void xf_grants_end(struct hkv_xfer_peer *p, int err);
struct xf_grant *xf_grant_find(struct hkv_xfer_peer *p, uint64_t id, unsigned op);
bool xf_grant_covers(const struct xf_grant *g, uint64_t page, uint64_t npages);
void xf_grants_poll(struct hkv_xfer *x);

/* ---- datapath.c ----------------------------------------------------------- */

int xf_datapath_init(struct hkv_xfer *x);
void xf_op_post_am(struct hkv_xfer *x, struct xf_tx *tx);
void xf_op_post_cma(struct hkv_xfer *x, struct xf_tx *tx);
void xf_on_cma_req(struct hkv_xfer_peer *p, const void *buf, size_t len);
void xf_on_cma_rep(struct hkv_xfer_peer *p, const void *buf, size_t len);
void xf_on_get_req(struct hkv_xfer_peer *p, const void *buf, size_t len);
void xf_on_done(struct hkv_xfer_peer *p, const void *buf, size_t len);
struct xf_tx *xf_tx_find(struct hkv_xfer *x, uint64_t id);

/* ---- transfer.c --------------------------------------------------------- */

void xf_on_grant_rep(struct hkv_xfer_peer *p, const void *buf, size_t len);
void xf_tx_issue(struct hkv_xfer *x);
void xf_tx_advance(struct hkv_xfer *x);
void xf_tx_fail_peer(struct hkv_xfer_peer *p, int err);
void xf_tx_free(struct xf_tx *tx);

/* ---- progress.c --------------------------------------------------------- */

void xf_progress_once(struct hkv_xfer *x);

#endif /* HKV_XFER_INTERNAL_H */
