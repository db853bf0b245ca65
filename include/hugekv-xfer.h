/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hugekv-xfer - move KV pages between hugekv pools over UCX
 * (libhugekv-xfer.so; libhugekv.so itself never links UCX).
 *
 * An endpoint (struct hkv_xfer) serves one pool: a UCX context and worker,
 * and the pool's regions registered with ucp_mem_map (one registration per
 * region, split at @reg_chunk_bytes). Endpoints connect with UCX's own
 * client-server establishment (ucp_listener_create / ucp_ep_create on a
 * socket address); a connection is a struct hkv_xfer_peer. A transfer puts
 * or gets a list of local extents onto a list of remote extents of the same
 * total length; it becomes the fewest UCX operations: pages that are
 * contiguous on both sides go in one operation, split only where a region
 * or a registration chunk ends on either side.
 *
 * Protocol (UCX active messages on the connection, little-endian, each
 * header starts with a magic and a version):
 *
 *   HELLO      both sides, once, right after the endpoint is created: page
 *              size, page count and the registration table (first page,
 *              pages, remote address, packed rkey per chunk). A peer whose
 *              page size differs is refused (-EPROTO).
 *   GRANT_REQ  initiator -> target, before any byte moves: id, put/get,
 *              the remote extents. The target checks that each extent is in
 *              range and every page is allocated in its pool, then asks its
 *              access callback (hkv_xfer_set_access_fn(), where the target
 *              application pins the units it owns or refuses); it records
 *              the grant.
 *   GRANT_REP  target -> initiator: id, 0 or -errno. On -errno the transfer
 *              fails and nothing moved.
 *   (data)     one UCX operation per planned run, at most @max_inflight
 *              per endpoint. Default, two-sided: a put is a DATA active
 *              message (header: id, target pages; payload: the pages) that
 *              the target checks against the grant and receives straight
 *              into its pages (zero-copy rendezvous where the transport
 *              can); a get is a GET_REQ the target answers with GET_REP
 *              from its registered pages. With HKV_XFER_RMA, one-sided:
 *              ucp_put_nbx / ucp_get_nbx against the rkeys, and a put
 *              flushes the connection (remote completion) before RELEASE.
 *   RELEASE    initiator -> target: id, result, operations sent. The target
 *              ends the grant once no receive or send uses its pages any
 *              more and calls its access callback with HKV_XFER_ACCESS_END
 *              and the result: after a put with result 0 every byte is in
 *              place.
 *   DONE       target -> initiator, two-sided puts only: id, result (-EIO
 *              if bytes are missing); the put completes on it.
 *
 * Why two-sided by default: where UCX 1.13 emulates RMA in software (tcp;
 * shared memory for memory UCX did not allocate itself), its handler on
 * the passive side aborts the process when the initiator dies mid-put.
 * Two-sided, every failure is an error status on both sides, and a write
 * outside the grant is refused (the connection is closed, -EPROTO). Use
 * HKV_XFER_RMA on transports with native RMA (RDMA), where the target's CPU
 * stays out of the data path; the operation count is the same. One-sided,
 * a peer holds rkeys to the whole registered pool: the grant is then the
 * protocol's agreement, which the hardware does not enforce.
 *
 * The target must call hkv_xfer_progress() regularly (a serving loop, or
 * alongside its own work): it answers grant requests and, two-sided, moves
 * the data. If a connection fails (the peer died, a transfer timed out),
 * both sides fail every transfer on it: the initiator after UCX has
 * completed or cancelled each operation, so no buffer is still in use when
 * its pins are released; the target ends each of the peer's grants with
 * the connection's error once no receive or send uses its pages. A timeout
 * is an error (-ETIMEDOUT) that closes the connection, never a hang.
 *
 * Allocation checks are a snapshot: the application must keep the pages of
 * a transfer allocated until it completes (pin their units, locally with
 * @pin_units and on the target in the access callback). They binary-search
 * the core's sorted free-page view (hkv_free_slots()), which is rebuilt in
 * O(free pages) when the pool changed since the previous check.
 *
 * Conventions are those of hugekv.h: 0 (or a count) or -errno, nothing
 * changed on failure, option structs start with "size_t sz". Thread
 * safety: an endpoint, its peers and its transfers belong to one thread at
 * a time (the UCX worker is single-threaded); different endpoints are
 * independent. The pool may be used from other threads meanwhile.
 *
 * USDT probes (provider "hugekv"): xfer_submit(pool id, peer id, pages,
 * operations, bytes) after a transfer is accepted for submission, and
 * xfer_done(pool id, peer id, operations, bytes, result, ns) when it ends.
 */
#ifndef HUGEKV_XFER_H
#define HUGEKV_XFER_H

#include <stdint.h>
#include <stdio.h>

#include "hugekv.h"

#ifdef __cplusplus
extern "C" {
#endif

struct hkv_xfer;
struct hkv_xfer_peer;

/* hkv_xfer_opts.flags */
#define HKV_XFER_NO_WAIT_IDLE	(1u << 0)	/* never sleep while waiting: spin */
#define HKV_XFER_RMA		(1u << 1)	/* one-sided data path (see above) */

/* hkv_xfer_req.flags */
#define HKV_XFER_PER_PAGE	(1u << 0)	/* one operation per page (comparison) */

/* hkv_xfer_set_access_fn() events */
#define HKV_XFER_ACCESS_BEGIN	1	/* a peer asks for pages: 0 grants */
#define HKV_XFER_ACCESS_END	2	/* the transfer ended with @result */

/* operations of a transfer, as the access callback sees them */
#define HKV_XFER_OP_PUT		1	/* the peer writes into this pool */
#define HKV_XFER_OP_GET		2	/* the peer reads from this pool */

#define HKV_XFER_SLOWEST	8	/* slowest recent transfers reported */
#define HKV_XFER_RECENT		256	/* transfers the "recent" window holds */

/**
 * struct hkv_xfer_opts - how to build an endpoint
 * @sz: sizeof(struct hkv_xfer_opts)
 * @max_inflight: UCX operations in flight per endpoint at most (0 = 64)
 * @timeout_ms: default time limit of a transfer, a connect, an accept
 *	(0 = 10000; -1 = none for accept only, transfers are always bounded)
 * @reg_chunk_bytes: split each region into registrations of at most this
 *	many bytes, rounded down to whole KV pages (0 = one per region)
 * @flags: HKV_XFER_NO_WAIT_IDLE, HKV_XFER_RMA (this endpoint's transfers use
 *	ucp_put_nbx/ucp_get_nbx; default: two-sided active messages)
 * @max_grants: grants one peer may hold on this endpoint at once (0 = 1024)
 */
struct hkv_xfer_opts {
	size_t sz;
	unsigned max_inflight;
	int timeout_ms;
	uint64_t reg_chunk_bytes;
	unsigned flags;
	unsigned max_grants;
};

/**
 * typedef hkv_xfer_done_fn - called once when a transfer ends
 * @ctx: the @ctx of struct hkv_xfer_req
 * @id: the transfer's id
 * @result: 0, or -errno
 *
 * Runs inside hkv_xfer_progress() or hkv_xfer_wait() on the endpoint's
 * thread; local pins are already released. It may submit new transfers.
 */
typedef void (*hkv_xfer_done_fn)(void *ctx, uint64_t id, int result);

/**
 * struct hkv_xfer_req - one transfer
 * @sz: sizeof(struct hkv_xfer_req)
 * @local: extents of this endpoint's pool, in transfer order
 * @nlocal: number of @local extents
 * @remote: extents of the peer's pool, in transfer order
 * @nremote: number of @remote extents (same total pages as @local)
 * @pin_units: local units to pin for the transfer's duration (may be NULL)
 * @npin_units: number of @pin_units
 * @flags: HKV_XFER_PER_PAGE
 * @timeout_ms: time limit (0 = the endpoint's)
 * @done: completion callback, or NULL to collect the result with
 *	hkv_xfer_wait() or hkv_xfer_test()
 * @ctx: passed to @done
 */
struct hkv_xfer_req {
	size_t sz;
	const struct hkv_extent *local;
	unsigned nlocal;
	const struct hkv_extent *remote;
	unsigned nremote;
	const uint64_t *pin_units;
	unsigned npin_units;
	unsigned flags;
	int timeout_ms;
	hkv_xfer_done_fn done;
	void *ctx;
};

/**
 * struct hkv_xfer_slow - one of the slowest recent transfers
 * @id: transfer id
 * @peer: peer id
 * @ns: submit to completion
 * @grant_ns: submit to the target's grant
 * @pages: pages moved
 * @ops: UCX operations
 * @result: 0 or -errno
 */
struct hkv_xfer_slow {
	uint64_t id, peer, ns, grant_ns, pages, ops;
	int result;
};

/**
 * struct hkv_xfer_stats - transfer counters and latency of an endpoint
 * @sz: sizeof(struct hkv_xfer_stats), set by the caller
 * @peers: connected peers now
 * @transfers: transfers completed (either result)
 * @failures: transfers that ended with an error
 * @timeouts: transfers that timed out
 * @refused: transfers refused before anything moved (checks, grant)
 * @puts: completed put transfers
 * @gets: completed get transfers
 * @ops: UCX operations issued
 * @pages: pages moved by successful transfers
 * @bytes: bytes moved by successful transfers
 * @extents_in: local extents named by submitted transfers
 * @ops_per_transfer: @ops / transfers submitted
 * @max_ops_inflight: most operations in flight at once
 * @grants: grants this endpoint gave its peers
 * @grants_refused: grant requests it refused
 * @grants_active: grants held by peers now
 * @peer_failures: connections that failed (peer died, timeout)
 * @lat_p50_ns: transfer latency, median (log-linear histogram, <= 3 %)
 * @lat_p99_ns: 99th percentile
 * @lat_max_ns: maximum
 * @grant_p50_ns: median time to the target's grant
 * @nslow: entries of @slow written
 * @slow: the slowest of the last HKV_XFER_RECENT transfers, slowest first
 */
struct hkv_xfer_stats {
	size_t sz;
	uint64_t peers, transfers, failures, timeouts, refused, puts, gets;
	uint64_t ops, pages, bytes, extents_in;
	double ops_per_transfer;
	uint64_t max_ops_inflight;
	uint64_t grants, grants_refused, grants_active, peer_failures;
	uint64_t lat_p50_ns, lat_p99_ns, lat_max_ns, grant_p50_ns;
	unsigned nslow;
	struct hkv_xfer_slow slow[HKV_XFER_SLOWEST];
};

/**
 * typedef hkv_xfer_access_fn - the target application's say on a grant
 * @ctx: the context given to hkv_xfer_set_access_fn()
 * @peer: the peer that asks
 * @event: HKV_XFER_ACCESS_BEGIN (before any byte moves) or
 *	HKV_XFER_ACCESS_END (the grant is dropped)
 * @op: HKV_XFER_OP_PUT or HKV_XFER_OP_GET
 * @ext: the pages of this pool the transfer names (allocated, checked)
 * @n: number of extents
 * @result: for HKV_XFER_ACCESS_END, the transfer's result (0 = done, every
 *	byte of a put in place); 0 for HKV_XFER_ACCESS_BEGIN
 *
 * Runs inside hkv_xfer_progress() on the endpoint's thread. Typical use:
 * pin the units that hold @ext at BEGIN, unpin them at END. Every BEGIN
 * that returned 0 gets exactly one END, also when the peer dies.
 *
 * Return: for BEGIN, 0 to grant or -errno to refuse (the initiator gets it
 * back); ignored for END.
 */
typedef int (*hkv_xfer_access_fn)(void *ctx, struct hkv_xfer_peer *peer,
				  unsigned event, unsigned op,
				  const struct hkv_extent *ext, unsigned n, int result);

/**
 * hkv_xfer_create() - create a transfer endpoint for a pool
 * @pool: a memory pool (not index-only); must outlive the endpoint
 * @opts: options, or NULL for the defaults
 * @out: receives the endpoint
 *
 * Creates a UCX context (RMA and active messages; UCX_* environment
 * variables apply, e.g. UCX_TLS=tcp) and worker, and registers the pool's
 * regions.
 *
 * Return: 0, or -EINVAL (bad options, index-only pool), -ENOMEM, -EIO
 * (UCX failed; the log says how), or the mapped error of a failed
 * registration. Nothing is left registered then.
 */
HKV_API int hkv_xfer_create(struct hkv_pool *pool, const struct hkv_xfer_opts *opts,
			    struct hkv_xfer **out);

/**
 * hkv_xfer_destroy() - close every connection and destroy the endpoint
 * @x: the endpoint, or NULL (no-op)
 *
 * Transfers still in flight fail with -ECANCELED (their callbacks run and
 * their pins are released) before the memory is deregistered.
 */
HKV_API void hkv_xfer_destroy(struct hkv_xfer *x);

/**
 * hkv_xfer_listen() - accept connections on a socket address
 * @x: the endpoint
 * @addr: "HOST:PORT" (IPv4 address or name; port 0 picks a free one)
 * @port: receives the port listened on (may be NULL)
 *
 * Return: 0, or -EINVAL (bad address), -EALREADY (already listening),
 * -EADDRINUSE, -EIO.
 */
HKV_API int hkv_xfer_listen(struct hkv_xfer *x, const char *addr, unsigned *port);

/**
 * hkv_xfer_accept() - wait for the next peer to connect and say hello
 * @x: a listening endpoint
 * @timeout_ms: limit (0 = the endpoint's, -1 = none)
 * @out: receives the peer
 *
 * Progresses the endpoint (transfers and grants continue meanwhile).
 *
 * Return: 0, or -EINVAL (not listening), -ETIMEDOUT.
 */
HKV_API int hkv_xfer_accept(struct hkv_xfer *x, int timeout_ms, struct hkv_xfer_peer **out);

/**
 * hkv_xfer_connect() - connect to a listening endpoint
 * @x: the endpoint
 * @addr: "HOST:PORT" of the listener
 * @timeout_ms: limit (0 = the endpoint's)
 * @out: receives the peer once both sides exchanged their tables
 *
 * Return: 0, or -EINVAL (bad address), -ECONNREFUSED (nobody listens, or
 * the connection was rejected), -EPROTO (not a hugekv-xfer peer, or a
 * different page size), -ETIMEDOUT, -ENOMEM, -EIO.
 */
HKV_API int hkv_xfer_connect(struct hkv_xfer *x, const char *addr, int timeout_ms,
			     struct hkv_xfer_peer **out);

/**
 * hkv_xfer_peer_close() - close a connection
 * @peer: the peer, or NULL (no-op)
 *
 * Waits (bounded by the endpoint's timeout) for this side's transfers to
 * the peer to end; the rest fail with -ECANCELED, and grants the peer
 * holds end with -ECANCELED. The peer handle is invalid afterwards.
 */
HKV_API void hkv_xfer_peer_close(struct hkv_xfer_peer *peer);

/**
 * hkv_xfer_peer_id() - the peer's id, as carried by the probes and stats
 * @peer: the peer
 *
 * Return: an id unique within the endpoint, starting at 1.
 */
HKV_API uint64_t hkv_xfer_peer_id(const struct hkv_xfer_peer *peer);

/**
 * hkv_xfer_peer_npages() - pages in the peer's pool
 * @peer: the peer
 *
 * Return: the page count the peer announced.
 */
HKV_API uint64_t hkv_xfer_peer_npages(const struct hkv_xfer_peer *peer);

/**
 * hkv_xfer_peer_error() - why a connection failed
 * @peer: the peer
 *
 * Return: 0 while the connection is up, else the -errno it failed with
 * (-ECONNRESET: the peer died or closed; -ETIMEDOUT: a transfer timed out
 * or UCX found the peer unreachable; -EPROTO: the peer broke the protocol;
 * -ECANCELED: closed here).
 */
HKV_API int hkv_xfer_peer_error(const struct hkv_xfer_peer *peer);

/**
 * hkv_xfer_put() - write local pages into the peer's pool
 * @peer: the peer
 * @req: the transfer
 * @id: receives the transfer's id (may be NULL when @req->done is set)
 *
 * Checked before anything moves: equal page totals, every local page
 * allocated and every remote page in range, the units of @pin_units
 * pinned (all or none). The target then checks its side (GRANT_REQ).
 *
 * Return: 0 (submitted; the result comes later), or -EINVAL (bad extents,
 * free or out-of-range local pages, mismatched totals, empty), -ERANGE (a
 * remote page beyond the peer's pool), -ENOENT/-EOVERFLOW (a unit of
 * @pin_units), -ECONNRESET/-ETIMEDOUT (the connection failed), -ENOMEM.
 * Errors found by the target (-EINVAL for pages it has not allocated,
 * -EBUSY, or its access callback's answer) come as the transfer's result.
 */
HKV_API int hkv_xfer_put(struct hkv_xfer_peer *peer, const struct hkv_xfer_req *req,
			 uint64_t *id);

/**
 * hkv_xfer_get() - read pages of the peer's pool into local pages
 * @peer: the peer
 * @req: the transfer (@local are the destination pages)
 * @id: receives the transfer's id (may be NULL when @req->done is set)
 *
 * Return: as hkv_xfer_put().
 */
HKV_API int hkv_xfer_get(struct hkv_xfer_peer *peer, const struct hkv_xfer_req *req,
			 uint64_t *id);

/**
 * hkv_xfer_progress() - make progress: UCX, grants, timeouts, completions
 * @x: the endpoint
 *
 * Never blocks.
 *
 * Return: the number of transfers this call completed (>= 0).
 */
HKV_API int hkv_xfer_progress(struct hkv_xfer *x);

/**
 * hkv_xfer_test() - the result of a transfer submitted without a callback
 * @x: the endpoint
 * @id: the transfer's id
 *
 * Does not progress. A result, once returned, is forgotten.
 *
 * Return: 0 or the transfer's -errno when it ended, -EINPROGRESS while it
 * runs, -ENOENT for an unknown (or already collected) id.
 */
HKV_API int hkv_xfer_test(struct hkv_xfer *x, uint64_t id);

/**
 * hkv_xfer_wait() - progress until a transfer ends
 * @x: the endpoint
 * @id: the transfer's id, or 0 for "every transfer of this endpoint"
 * @timeout_ms: limit on the wait (0 = none beyond the transfers' own
 *	limits, which always apply)
 *
 * Return: the transfer's result (0 or -errno; for @id 0, the first error
 * or 0), -ENOENT (unknown id), -EAGAIN (@timeout_ms passed, still running).
 */
HKV_API int hkv_xfer_wait(struct hkv_xfer *x, uint64_t id, int timeout_ms);

/**
 * hkv_xfer_set_access_fn() - set the target-side access callback
 * @x: the endpoint
 * @fn: callback, or NULL (grant every checked request)
 * @ctx: passed to @fn
 */
HKV_API void hkv_xfer_set_access_fn(struct hkv_xfer *x, hkv_xfer_access_fn fn, void *ctx);

/**
 * hkv_xfer_nregs() - registrations of the endpoint
 * @x: the endpoint
 *
 * Return: the number of ucp_mem_map registrations (regions split at
 * @reg_chunk_bytes).
 */
HKV_API unsigned hkv_xfer_nregs(const struct hkv_xfer *x);

/**
 * hkv_xfer_stats() - a snapshot of an endpoint's (or one peer's) stats
 * @x: the endpoint
 * @peer: a peer of @x for its own figures, or NULL for the endpoint's
 * @st: receives them; the caller sets @st->sz
 *
 * Return: 0, or -EINVAL (@st->sz too small, @peer of another endpoint).
 */
HKV_API int hkv_xfer_stats(const struct hkv_xfer *x, const struct hkv_xfer_peer *peer,
			   struct hkv_xfer_stats *st);

/**
 * hkv_xfer_stats_print() - print an endpoint's stats
 * @x: the endpoint
 * @f: where to print
 * @flags: 0 = text, HKV_PRINT_JSON = one JSON object (with one per peer)
 *
 * Return: 0, or -EINVAL, -EIO (write error).
 */
HKV_API int hkv_xfer_stats_print(const struct hkv_xfer *x, FILE *f, unsigned flags);

#ifdef __cplusplus
}
#endif

#endif /* HUGEKV_XFER_H */
