/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hugekv-xfer - move KV pages between hugekv pools over UCX
 * (libhugekv-xfer.so; libhugekv.so itself never links UCX).
 *
 * An endpoint (struct hkv_xfer) serves one pool: a UCX context (active
 * messages only) and worker. Endpoints connect with UCX's own client-server
 * establishment (ucp_listener_create / ucp_ep_create on a socket address);
 * a connection is a struct hkv_xfer_peer. A transfer puts or gets a list of
 * local extents onto a list of remote extents of the same total length; it
 * becomes the fewest UCX operations: pages that are contiguous on both
 * sides go in one operation, split only where a range (a region of the
 * pool, or a @reg_chunk_bytes piece of one) ends on either side.
 *
 * WHO MAY TOUCH WHAT (deny by default). A peer reaches a byte of this
 * pool only through a grant: the pages it named, in the direction named,
 * until the grant ends. This endpoint moves every byte itself, two-sided:
 * a put's data arrives in an active message that its handler checks
 * against the grant before it lands; a get is a request its handler checks
 * before it sends the granted pages. What that guarantees, on every UCX
 * transport this library uses (tcp, shared memory, RDMA verbs):
 *   - no address, registration or rkey of the pool leaves the process
 *     (HELLO carries page counts only), and the pool is not registered
 *     with UCX for remote access (ucp_mem_map is never called);
 *   - the UCX context has no RMA feature, so UCX installs no handler that
 *     serves a peer's ucp_put_nbx / ucp_get_nbx: a one-sided operation at
 *     any address, with a forged or stale rkey, reads nothing, writes
 *     nothing and cannot fault the process (it never completes at the
 *     peer);
 *   - a DATA or GET request outside a live grant of that peer closes its
 *     connection (-EPROTO) before a byte moves.
 * One-sided access (HKV_XFER_RMA) is not offered: UCX 1.13 emulates RMA on
 * tcp and on shared memory it did not allocate without checking the rkey
 * (its handler reads or writes any address a peer names), and unmapping a
 * registration revokes nothing there, so a grant could not be enforced or
 * revoked; hkv_xfer_create() refuses the flag with -EOPNOTSUPP.
 * What this library cannot close from above UCX, stated exactly: (1) a
 * peer that does not use libucp but writes UCX's tcp wire protocol by hand
 * can send a transport-level PUT (uct tcp's PUT_REQ), which UCX's tcp
 * transport executes at any address before any hugekv code runs;
 * (2) a process of the same uid on the same host can read and write this
 * process through the kernel (ptrace, process_vm_writev, which UCX's cma
 * transport uses). Expose a tcp listener only where the peers that can
 * reach it run libucp, and treat same-uid local processes as trusted.
 *
 * PEERS ON THE SAME HOST. Every connection asks UCX for peer error
 * handling (UCP_ERR_HANDLING_MODE_PEER), so a dead peer fails its
 * transfers instead of hanging them. UCX 1.13 selects only transports
 * that report peer failure for such endpoints; its shared-memory
 * transports posix and sysv do so only with MM_ERROR_HANDLING, which
 * hkv_xfer_create() turns on in its own UCX configuration, so a same-host
 * peer is served over shared memory (UCX's choice, e.g. sysv), not tcp
 * loopback. The user's UCX_MM_ERROR_HANDLING (or UCX_POSIX_ or
 * UCX_SYSV_ERROR_HANDLING) in the environment wins: =n keeps same-host
 * peers on tcp. Shared memory joins processes of one uid only: a
 * same-host peer of another uid is refused at connect (-ECONNREFUSED)
 * unless both sides set UCX_MM_ERROR_HANDLING=n (or UCX_TLS without sm).
 * Large messages (UCX's rendezvous) still go over tcp loopback, though:
 * UCX 1.13 moves them on a transport that can put zero-copy, which on a
 * same-host connection is tcp, not posix or sysv. HKV_XFER_SAME_HOST
 * in @flags turns tcp's PUT off in the endpoint's UCX configuration
 * (UCX_TCP_PUT_ENABLE=n; the user's UCX_TCP_PUT_ENABLE wins), so they
 * go as fragments over shared memory: 2 to 3x the bandwidth on one
 * host, but slower towards peers reached over tcp, which then lose tcp's
 * zero-copy PUT (0.8x on tcp loopback); set it on endpoints whose peers
 * are on this host.
 * On posix and sysv every message and every rendezvous fragment is copied
 * through one of the receiver's shared-memory segments, 8 KiB in UCX's
 * default configuration. hkv_xfer_create() makes them 64 KiB less a cache
 * line, 128 to a chunk (UCX_MM_SEG_SIZE=65472 and UCX_MM_RX_BUFS_GROW=128
 * in its UCX configuration, where UCX_TLS takes shared memory): 1.4 to 1.6x
 * the bandwidth of fragments over shared memory here, for about 8 MiB of
 * receive segments per endpoint (UCX's default: 4 MiB). The sender fills
 * the receiver's segment up to its own segment size, so both sides must
 * use the same: every endpoint of this wire version does, one of another
 * version is refused at HELLO, and a user's UCX_MM_SEG_SIZE (or
 * UCX_POSIX_ or UCX_SYSV_SEG_SIZE), which wins, must be the same on both
 * sides and at most 65535 (UCX 1.13 keeps a segment's length in 16 bits).
 * The connecting side sends the first message (HELLO) and the listener
 * answers it: a listener's endpoint on shared memory may not carry a
 * message before the client's first one has arrived.
 *
 * SINGLE COPY ON ONE HOST. Between two processes of one host the target
 * moves the bytes itself with the kernel's cross-memory attach: a put is
 * process_vm_readv from the initiator's buffers into the granted pages, a
 * get process_vm_writev from the granted pages into the initiator's
 * buffers; one copy per byte where shared memory through UCX makes two
 * (into the receiver's segment and out of it), and the copying is the
 * target's. Who trusts whom, exactly:
 *   - the target exposes nothing more: no address of its pool leaves it,
 *     the initiator names only its own buffers, and every run is checked
 *     against a live grant of that peer before a byte moves (outside it:
 *     the connection closes, -EPROTO, as for DATA); grants, deadlines,
 *     limits and pins are those of the two-sided path;
 *   - the initiator lets the target read and write the buffers it named
 *     in its requests (its pool pages of the transfer) until the transfer
 *     ends: the target copies into a get's buffers and out of a put's.
 *     The kernel allows this only where the target could ptrace the
 *     initiator anyway (same uid, no Yama restriction, dumpable; this
 *     library never calls PR_SET_PTRACER or changes those settings), so
 *     it grants the target nothing it did not have;
 *   - the target copies only into a process the kernel proved: the pid an
 *     initiator offers must hold this connection's socket (its inode in
 *     /proc/net/tcp, found in /proc/PID/fd), be pinned by a pidfd found
 *     alive right before every copy (a pid reused after the initiator
 *     exited is refused; what remains is the instant between that check
 *     and the syscall, in which the initiator would have to exit, be
 *     reaped and its pid be taken by a process the target may write), share
 *     the target's time namespace, and let the target read a random token
 *     at the address it named; a peer that claims another process's pid
 *     is refused and stays two-sided. Only peers that authenticated (key
 *     or uid, below) offer;
 *   - a copy that fails (an initiator buffer not mapped or not writable,
 *     the initiator gone) fails that transfer with -EFAULT or -ESRCH, never
 *     the target: granted pages may hold part of a failed put, no other
 *     page is touched. The target starts no copy within 100 ms of the
 *     transfer's deadline (the initiator's CLOCK_MONOTONIC, one host), so a
 *     timed-out initiator's buffers are not written after it gave them
 *     back.
 * A peer in another network, pid or time namespace, on another host, or
 * that the kernel will not let the target copy to (EPERM, ENOSYS) is
 * refused at the offer (counted in @cma_refused) and its transfers use
 * DATA and GET_REQ as before, transparently. HKV_XFER_NO_CMA on either
 * side, or HUGEKV_XFER_CMA=off in its environment, turns the path off
 * (HUGEKV_XFER_CMA=fail makes the probe fail as if the kernel refused, and
 * HUGEKV_XFER_CMA_PID=N offers pid N: for tests). hkv_xfer_connect()
 * returns once the listener answered this side's offer; a copy of 4 MiB
 * or more is split across helper threads of the target (one per online
 * CPU but one, at most 7; HUGEKV_XFER_CMA_THREADS=N sets N, 0 none),
 * started at the first such copy and joined by hkv_xfer_destroy(); @cma_out and
 * @cma_in of struct hkv_xfer_stats say which path each peer takes.
 *
 * WHO IS A PEER. Every endpoint has a keyring, given by the operator
 * (@key or @key_file of struct hkv_xfer_opts, else the file named by
 * $HUGEKV_XFER_KEY_FILE, else $HUGEKV_XFER_KEY; never on a command line):
 * lines "NAME SECRET" (the key of the peer called NAME) or one line
 * "SECRET" (the key of every peer), secrets of 16 to 4096 bytes, a file
 * of this user with mode 0600 or 0400. Without a key, hkv_xfer_create()
 * fails with -ENOKEY. Each side sends a fresh 32-byte nonce and its name
 * (@name, $HUGEKV_XFER_NAME, or "hugekv") in HELLO. The connecting side
 * then proves in AUTH that it holds the key of its name:
 * HMAC-SHA256(key, side label, the other's nonce, its own nonce, both
 * names) (OpenSSL's libcrypto); the listener checks it (constant time)
 * and only then proves itself the same way, which is also the admission.
 * The proof is mutual, cannot be replayed (nonces) or reflected (label),
 * and never reveals the key; there is no channel binding (a party on the
 * path can relay the exchange, not forge it). hkv_xfer_connect() returns
 * only after both proofs held, hkv_xfer_accept() only peers that proved
 * theirs; any other message before that, or no proof within @timeout_ms,
 * closes the connection (-EACCES, -ETIMEDOUT). hkv_xfer_peer_name() is the name the peer proved; with
 * per-name keys it tells tenants apart, with one shared key it is only a
 * claim of a key holder. Same-host admission by uid (HKV_XFER_SAME_UID,
 * on both sides): a side with no key for the name claims "same uid"
 * instead, and the other side admits it only if the kernel's table of
 * this network namespace's TCP sockets (/proc/net/tcp; TCP carries no
 * credentials, SO_PEERCRED is for unix sockets) says the connection's
 * other end belongs to its own effective uid; the listener then answers
 * the same way. IPv4 only; a peer in another namespace or host needs a
 * key. The name of a peer admitted so is only its claim. With the flag, an
 * endpoint may have no key at all (peers of its uid only).
 *
 * FORK. An endpoint belongs to the process that created it: a fork()
 * child shares its UCX sockets and shared memory with the parent, so the
 * child must neither read from them nor close them. In a child, every
 * call on an endpoint or peer created before the fork returns -ECHILD and
 * does nothing (hkv_xfer_create() on a pool created before it too);
 * hkv_xfer_peer_close() does nothing, and hkv_xfer_destroy() only wipes
 * the child's copy of the keys: what UCX holds stays allocated in the
 * child until it exits or execs, and the parent's connections and copy
 * helpers carry on untouched.
 *
 * BOUNDED GRANTS. A grant not released by its deadline (@grant_timeout_ms)
 * closes the peer's connection: each grant it holds ends with -ETIMEDOUT
 * (the access callback sees the END, pins go back) once UCX has cancelled
 * what still used its pages. A peer holds at most @max_grants grants and
 * @max_grant_mem bytes of grant state, all peers @max_grant_mem_all
 * (beyond: the grant is refused, -EBUSY / -ENOBUFS, and counted); at most
 * @max_peers connections are accepted at once.
 *
 * Protocol (UCX active messages on the connection, little-endian, each
 * header starts with a magic and a version):
 *
 *   HELLO      both sides, once: the connecting side right after its
 *              endpoint is created, the listener in answer to it: page
 *              size, page count, the ranges' page counts, nonce, name. A
 *              peer whose page size differs is refused (-EPROTO).
 *   AUTH       the connecting side after the listener's HELLO, then the
 *              listener once that proof held: the proofs (above).
 *   GRANT_REQ  initiator -> target, before any byte moves: id, put/get,
 *              the remote extents. The target checks that each extent is in
 *              range, every page is allocated in its pool and the peer's
 *              limits hold, then asks its access callback
 *              (hkv_xfer_set_access_fn(), where the target application
 *              pins the units it owns or refuses); it records the grant.
 *   GRANT_REP  target -> initiator: id, 0 or -errno. On -errno the transfer
 *              fails and nothing moved.
 *   (data)     one UCX operation per planned run, at most @max_inflight
 *              per endpoint: a put is a DATA active message (header: id,
 *              target pages; payload: the pages) that the target checks
 *              against the grant and receives straight into its pages
 *              (rendezvous where the transport has it); a get is a GET_REQ
 *              the target checks and answers with GET_REP from its pages.
 *   CMA_OFFER  both sides, once, after AUTH (single copy, below): pid,
 *              the address and value of a random token.
 *   CMA_ACK    the answer: 0 (the sender of the offer may send CMA_REQ)
 *              or -errno (it stays on DATA and GET_REQ).
 *   CMA_REQ    instead of DATA / GET_REQ, from a peer whose offer was
 *              answered 0: id, put/get, the transfer's deadline, up to
 *              @max_inflight / 4 runs (target pages, the initiator's own
 *              address); the target checks them against the grant as
 *              DATA, copies, and answers CMA_REP (id, runs, 0 or -errno).
 *              A put completes on its last CMA_REP (every byte is in
 *              place: the target copied before answering; no DONE); its
 *              RELEASE ends the grant (END) before the peer's next request.
 *   RELEASE    initiator -> target: id, result, operations sent. The target
 *              ends the grant once no receive or send uses its pages any
 *              more and calls its access callback with HKV_XFER_ACCESS_END
 *              and the result: after a put with result 0 every byte is in
 *              place.
 *   DONE       target -> initiator, puts: id, result (-EIO if bytes are
 *              missing); the put completes on it.
 *
 * The target must call hkv_xfer_progress() regularly (a serving loop, or
 * alongside its own work): it answers grant requests, moves the data and
 * enforces the deadlines. If a connection fails (the peer died, a transfer timed out),
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
 * changed on failure, option structs start with "size_t sz" (fields past a
 * caller's smaller @sz are not read, or not written). Thread
 * safety: an endpoint, its peers and its transfers belong to one thread at
 * a time (the UCX worker is single-threaded); different endpoints are
 * independent. The pool may be used from other threads meanwhile.
 *
 * USDT probes (provider "hugekv"): xfer_submit(pool id, peer id, pages,
 * operations, bytes) after a transfer is accepted for submission, and
 * xfer_done(pool id, peer id, operations, bytes, result, ns) when it ends;
 * xfer_copy(pool id, peer id, op, runs, bytes, result) after each
 * single-copy request the target served.
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
#define HKV_XFER_RMA		(1u << 1)	/* one-sided: not offered (-EOPNOTSUPP) */
#define HKV_XFER_SAME_UID	(1u << 2)	/* admit local peers of this uid (below) */
#define HKV_XFER_SAME_HOST	(1u << 3)	/* large messages over shared memory (below) */
#define HKV_XFER_NO_CMA		(1u << 4)	/* no single-copy path (below) */

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
 * @reg_chunk_bytes: split each region into ranges of at most this many
 *	bytes, rounded down to whole KV pages (0 = one per region); at most
 *	65536 ranges
 * @flags: HKV_XFER_NO_WAIT_IDLE, HKV_XFER_SAME_UID, HKV_XFER_SAME_HOST,
 *	HKV_XFER_NO_CMA (HKV_XFER_RMA is refused, see above)
 * @max_grants: grants one peer may hold on this endpoint at once (0 = 1024)
 * @name: this endpoint's name, proved to peers (NULL = $HUGEKV_XFER_NAME,
 *	or "hugekv"); at most 63 bytes, no blanks
 * @key_file: the keyring file (NULL = $HUGEKV_XFER_KEY_FILE, then the
 *	secret in $HUGEKV_XFER_KEY)
 * @key: one key for every peer, instead of a keyring (NULL = none)
 * @key_len: bytes of @key (16 to 4096)
 * @grant_timeout_ms: a grant's deadline (0 = @timeout_ms, or 10000)
 * @max_grant_mem: bytes of grant state one peer may hold (0 = 1 MiB)
 * @max_grant_mem_all: bytes of grant state of all peers (0 = 16 MiB)
 * @max_peers: connections at once; more are rejected (0 = 256)
 */
struct hkv_xfer_opts {
	size_t sz;
	unsigned max_inflight;
	int timeout_ms;
	uint64_t reg_chunk_bytes;
	unsigned flags;
	unsigned max_grants;
	const char *name;
	const char *key_file;
	const void *key;
	size_t key_len;
	int grant_timeout_ms;
	uint64_t max_grant_mem, max_grant_mem_all;
	unsigned max_peers;
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
 * @auth_failures: peers that failed to authenticate (wrong or no proof, a
 *	message before it, too late)
 * @grants_expired: grants that passed their deadline (their peer closed)
 * @grants_over_limit: grants refused for the grant memory limits
 * @grant_mem: bytes of grant state held now
 * @grant_mem_peak: the most bytes of grant state held at once
 * @grants_busy: grants refused because the peer held @max_grants already
 * @grant_pages: pages the grants held now name
 * @grant_bytes: their bytes
 * @peers_rejected: connections rejected because @max_peers were open
 *	(endpoint only)
 * @cma_out: peers that copy for this endpoint's transfers (single copy;
 *	for one peer: 1 or 0, the path its transfers take)
 * @cma_in: peers this endpoint copies for (for one peer: 1 or 0)
 * @cma_refused: single-copy offers this endpoint refused (pid not proved,
 *	kernel refused the probe, turned off): those peers stay two-sided
 * @cma_calls: process_vm_readv/writev calls this endpoint made as target
 * @cma_runs: runs (operations) it copied
 * @cma_bytes: bytes it copied
 * @cma_faults: single-copy requests that failed (the peer's buffer not
 *	mapped: -EFAULT; peer gone; past the deadline)
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
	uint64_t auth_failures, grants_expired, grants_over_limit;
	uint64_t grant_mem, grant_mem_peak;
	uint64_t grants_busy, grant_pages, grant_bytes, peers_rejected;
	uint64_t cma_out, cma_in, cma_refused, cma_calls, cma_runs, cma_bytes, cma_faults;
};

/**
 * typedef hkv_xfer_access_fn - the target application's say on a grant
 * @ctx: the context given to hkv_xfer_set_access_fn()
 * @peer: the peer that asks, authenticated: hkv_xfer_peer_name() is who
 *	it proved to be
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
 * Loads the keyring, creates a UCX context (active messages only; UCX_*
 * environment variables apply, e.g. UCX_TLS=tcp) and worker, and finds
 * the pool's ranges. Nothing of the pool is registered with UCX.
 *
 * Return: 0, or -EINVAL (bad options, a bad key or keyring line,
 * index-only pool), -EOPNOTSUPP (HKV_XFER_RMA), -ENOKEY (no key given,
 * and not HKV_XFER_SAME_UID),
 * -EPERM (a keyring file of another user, or readable by others), -ENOENT
 * and other -errno of opening the keyring file, -ENOMEM, -EIO (UCX
 * failed; the log says how), -ECHILD (@pool was created before a fork()
 * of this process).
 */
HKV_API int hkv_xfer_create(struct hkv_pool *pool, const struct hkv_xfer_opts *opts,
			    struct hkv_xfer **out);

/**
 * hkv_xfer_destroy() - close every connection and destroy the endpoint
 * @x: the endpoint, or NULL (no-op)
 *
 * Transfers still in flight fail with -ECANCELED (their callbacks run and
 * their pins are released) before the memory is deregistered. In a fork()
 * child of the creating process it only wipes the keys (FORK above).
 */
HKV_API void hkv_xfer_destroy(struct hkv_xfer *x);

/**
 * hkv_xfer_listen() - accept connections on a socket address
 * @x: the endpoint
 * @addr: "HOST:PORT" (IPv4 address or name; port 0 picks a free one)
 * @port: receives the port listened on (may be NULL)
 *
 * Return: 0, or -EINVAL (bad address), -EALREADY (already listening),
 * -EADDRINUSE, -EIO, -ECHILD (FORK above).
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
 * Only a peer that proved its key is returned; others are closed.
 *
 * Return: 0, or -EINVAL (not listening), -ETIMEDOUT, -ECHILD (FORK above).
 */
HKV_API int hkv_xfer_accept(struct hkv_xfer *x, int timeout_ms, struct hkv_xfer_peer **out);

/**
 * hkv_xfer_connect() - connect to a listening endpoint
 * @x: the endpoint
 * @addr: "HOST:PORT" of the listener
 * @timeout_ms: limit (0 = the endpoint's)
 * @out: receives the peer once both sides proved their keys
 *
 * Return: 0, or -EINVAL (bad address), -ECONNREFUSED (nobody listens, or
 * the connection was rejected), -EACCES (the keys do not match, or the
 * listener has none for our name), -EPROTO (not a hugekv-xfer peer of
 * this version, or a different page size), -ETIMEDOUT, -ENOMEM, -EIO,
 * -ECHILD (FORK above).
 */
HKV_API int hkv_xfer_connect(struct hkv_xfer *x, const char *addr, int timeout_ms,
			     struct hkv_xfer_peer **out);

/**
 * hkv_xfer_peer_close() - close a connection
 * @peer: the peer, or NULL (no-op)
 *
 * Waits (bounded by the endpoint's timeout) for this side's transfers to
 * the peer to end; the rest fail with -ECANCELED, and grants the peer
 * holds end with -ECANCELED. The peer handle is invalid afterwards. In a
 * fork() child of the creating process it does nothing (FORK above).
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
 * hkv_xfer_peer_name() - the name the peer authenticated as
 * @peer: the peer
 *
 * Return: its name (valid while the peer handle is), or NULL before it
 * proved its key.
 */
HKV_API const char *hkv_xfer_peer_name(const struct hkv_xfer_peer *peer);

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
 * -ECANCELED: closed here); -ECHILD in a fork() child (FORK above).
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
 * @pin_units), -ECONNRESET/-ETIMEDOUT (the connection failed), -ENOMEM,
 * -ECHILD (FORK above).
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
 * Return: the number of transfers this call completed (>= 0), or -ECHILD
 * (FORK above).
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
 * runs, -ENOENT for an unknown (or already collected) id, -ECHILD (FORK
 * above).
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
 * or 0), -ENOENT (unknown id), -EAGAIN (@timeout_ms passed, still running),
 * -ECHILD (FORK above).
 */
HKV_API int hkv_xfer_wait(struct hkv_xfer *x, uint64_t id, int timeout_ms);

/**
 * hkv_xfer_set_access_fn() - set the target-side access callback
 * @x: the endpoint
 * @fn: callback, or NULL (grant every checked request of an authenticated
 *	peer: all allocated pages of the pool)
 * @ctx: passed to @fn
 */
HKV_API void hkv_xfer_set_access_fn(struct hkv_xfer *x, hkv_xfer_access_fn fn, void *ctx);

/**
 * hkv_xfer_nregs() - ranges of the endpoint (operations never cross one)
 * @x: the endpoint
 *
 * Return: the number of ranges (regions split at @reg_chunk_bytes); none
 * is registered with UCX.
 */
HKV_API unsigned hkv_xfer_nregs(const struct hkv_xfer *x);

/**
 * hkv_xfer_stats() - a snapshot of an endpoint's (or one peer's) stats
 * @x: the endpoint
 * @peer: a peer of @x for its own figures, or NULL for the endpoint's
 * @st: receives them; the caller sets @st->sz
 *
 * Return: 0, or -EINVAL (@st->sz below the first layout, up to @slow;
 * @peer of another endpoint), -ECHILD (FORK above).
 */
HKV_API int hkv_xfer_stats(const struct hkv_xfer *x, const struct hkv_xfer_peer *peer,
			   struct hkv_xfer_stats *st);

/**
 * hkv_xfer_stats_print() - print an endpoint's stats
 * @x: the endpoint
 * @f: where to print
 * @flags: 0 = text, HKV_PRINT_JSON = one JSON object (with one per peer),
 *	one line
 *
 * Return: 0, or -EINVAL, -EIO (write error), -ECHILD (FORK above).
 */
HKV_API int hkv_xfer_stats_print(const struct hkv_xfer *x, FILE *f, unsigned flags);

#ifdef __cplusplus
}
#endif

#endif /* HUGEKV_XFER_H */
