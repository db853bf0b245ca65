// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * progress.c - one progress step (UCX, new connections, control messages
 * to their handlers, failed peers, timeouts, issuing, completions), and the
 * waits built on it.
 * A transfer past its deadline fails with -ETIMEDOUT and takes its
 * connection down with it: operations already handed to UCX cannot be
 * recalled one by one, and a connection that stalls this long is broken.
 */
#include <sched.h>
#include <time.h>

#include "internal.h"

#define XF_IDLE_SPINS	4096	/* empty progress calls before a wait backs off */
#define XF_CMA_SPINS	64	/* the same, while only peers' copies are in flight */

/* a control message to its handler, the top of every layer below */
static void dispatch(struct hkv_xfer *x, struct xf_msg *m)
{
	struct hkv_xfer_peer *p = xf_peer_by_ep(x, m->ep);

	if (!p || p->state == XF_PEER_FAILED || p->error)
		return;		/* a peer we already gave up on */
	if (!p->authed && m->am_id != XF_AM_HELLO && m->am_id != XF_AM_AUTH) {
		xf_log(1, "peer %llu: message %#x before authentication: connection closed",
		       (unsigned long long)p->id, m->am_id);
		x->st.auth_failures++;
		xf_peer_fail(p, -EACCES);	/* marks the figures changed */
		return;
	}
	switch (m->am_id) {
	case XF_AM_HELLO:
		xf_on_hello(p, m->data, m->len);
		break;
	case XF_AM_AUTH:
		xf_on_auth(p, m->data, m->len);
		break;
	case XF_AM_GRANT_REQ:
		xf_on_grant_req(p, m->data, m->len);
		break;
	case XF_AM_GRANT_REP:
		xf_on_grant_rep(p, m->data, m->len);
		break;
	case XF_AM_RELEASE:
		xf_on_release(p, m->data, m->len);
		break;
	case XF_AM_GET_REQ:
		xf_on_get_req(p, m->data, m->len);
		break;
	case XF_AM_DONE:
		xf_on_done(p, m->data, m->len);
		break;
	case XF_AM_CMA_OFFER:
		xf_on_cma_offer(p, m->data, m->len);
		break;
	case XF_AM_CMA_ACK:
		xf_on_cma_ack(p, m->data, m->len);
		break;
	case XF_AM_CMA_REQ:
		xf_on_cma_req(p, m->data, m->len);
		break;
	case XF_AM_CMA_REP:
		xf_on_cma_rep(p, m->data, m->len);
		break;
	default:
		xf_log(0, "peer %llu: malformed control message: connection closed",
		       (unsigned long long)p->id);
		xf_peer_error(p, -EPROTO);
	}
}

/* every received control message, in order */
static void inbox_drain(struct hkv_xfer *x)
{
	struct xf_msg *m;

	while ((m = x->inbox)) {
		x->inbox = m->next;
		if (!x->inbox)
			x->inbox_tail = &x->inbox;
		dispatch(x, m);
		free(m);
	}
}

static void timeouts(struct hkv_xfer *x, uint64_t now)
{
	struct xf_tx *tx;

	for (tx = x->txs; tx; tx = tx->next)
		if (tx->state != XF_TX_ENDED && now >= tx->deadline && !tx->result) {
			xf_log(1, "transfer %llu to peer %llu timed out: connection closed",
			       (unsigned long long)tx->id, (unsigned long long)tx->peer_id);
			tx->result = -ETIMEDOUT;
			x->st.timeouts++;
			tx->peer->st.timeouts++;
			xf_peer_fail(tx->peer, -ETIMEDOUT);
		}
}

/* one step; returns the UCX progress count (0 = nothing happened there) */
static unsigned step(struct hkv_xfer *x)
{
	unsigned n = 0, k;

	while ((k = ucp_worker_progress(x->worker)) && n < 64)
		n += k;
	if (x->conn_reqs)
		xf_conn_reqs_accept(x);
	if (x->inbox)
		inbox_drain(x);
	if (x->grants_closing)
		xf_grants_poll(x);
	if (x->st.grants_active)
		xf_grants_expire(x, xf_coarse_ns());
	xf_peers_reap(x);
	if (x->txs) {
		timeouts(x, xf_coarse_ns());
		xf_tx_issue(x);
		xf_tx_advance(x);
		xf_tx_issue(x);
	}
	if (x->metrics_dirty)
		xf_metrics_publish(x, false);
	return n;
}

void xf_progress_once(struct hkv_xfer *x)
{
	step(x);
}

HKV_API int hkv_xfer_progress(struct hkv_xfer *x)
{
	if (!x)
		return 0;
	if (xf_forked(x))
		return -ECHILD;
	x->completed = 0;
	step(x);
	return (int)x->completed;
}

static struct xf_tx *tx_find(struct hkv_xfer *x, uint64_t id, struct xf_tx ***link)
{
	struct xf_tx **pp, *tx;

	for (pp = &x->txs; (tx = *pp); pp = &tx->next)
		if (tx->id == id) {
			*link = pp;
			return tx;
		}
	return NULL;
}

HKV_API int hkv_xfer_test(struct hkv_xfer *x, uint64_t id)
{
	struct xf_tx *tx, **pp;
	int r;

	if (!x)
		return -EINVAL;
	if (xf_forked(x))
		return -ECHILD;
	tx = tx_find(x, id, &pp);
	if (!tx)
		return -ENOENT;
	if (tx->state != XF_TX_ENDED)
		return -EINPROGRESS;
	r = tx->result;
	*pp = tx->next;
	xf_tx_free(tx);
	return r;
}

/* for id 0: collect every ended transfer; -EINPROGRESS while any runs */
static int test_all(struct hkv_xfer *x, int *first_err)
{
	struct xf_tx **pp = &x->txs, *tx;
	bool running = false;

	while ((tx = *pp)) {
		if (tx->state != XF_TX_ENDED) {
			running = true;
		} else if (tx->collect) {
			if (tx->result && !*first_err)
				*first_err = tx->result;
			*pp = tx->next;
			xf_tx_free(tx);
			continue;
		}
		pp = &tx->next;
	}
	return running ? -EINPROGRESS : *first_err;
}

static void idle(struct hkv_xfer *x, unsigned *spins)
{
	if (x->flags & HKV_XFER_NO_WAIT_IDLE)
		return;
	/* every operation in flight is a peer's copy (single copy): nothing
	 * to do here but leave the CPUs to the peer's copying threads (a
	 * copy of a run takes milliseconds; a yield would keep competing) */
	if (x->cma_inflight && x->cma_inflight == x->inflight && ++*spins >= XF_CMA_SPINS) {
		struct timespec ts = { 0, 20000 };

		nanosleep(&ts, NULL);
		return;
	}
	if (++*spins < XF_IDLE_SPINS)
		return;
	if (*spins < 4 * XF_IDLE_SPINS) {
		sched_yield();
	} else {
		struct timespec ts = { 0, 50000 };

		nanosleep(&ts, NULL);
	}
}

HKV_API int hkv_xfer_wait(struct hkv_xfer *x, uint64_t id, int timeout_ms)
{
	uint64_t deadline;
	unsigned spins = 0;
	int first_err = 0, r;

	if (!x || timeout_ms < 0)
		return -EINVAL;
	if (xf_forked(x))
		return -ECHILD;
	deadline = timeout_ms ? xf_deadline(timeout_ms) : UINT64_MAX;
	for (;;) {
		r = id ? hkv_xfer_test(x, id) : test_all(x, &first_err);
		if (r != -EINPROGRESS)
			return r;
		if (xf_coarse_ns() >= deadline)
			return -EAGAIN;
		if (step(x))
			spins = 0;
		else
			idle(x, &spins);
	}
}
