// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * transfer.c - the initiator side: a transfer is checked and planned at
 * submission, asks the target for a grant, then issues its operations
 * (at most max_inflight across the endpoint), releases the grant and ends;
 * a put ends when the target says every byte is in place (DONE). A transfer whose
 * operations failed, or whose connection failed, ends only once UCX has
 * completed every operation it issued, so no buffer is still in use when
 * its units are unpinned.
 */
#include "internal.h"

static const struct hkv_xfer_req *req_ok(const struct hkv_xfer_req *req)
{
	return req && req->sz >= sizeof(*req) ? req : NULL;
}

static int pin_units(struct hkv_pool *pool, const uint64_t *u, unsigned n)
{
	unsigned i;
	int err;

	for (i = 0; i < n; i++) {
		err = hkv_unit_pin(pool, u[i]);
		if (err) {
			while (i--)
				hkv_unit_unpin(pool, u[i]);
			return err;
		}
	}
	return 0;
}

static void unpin_units(struct hkv_pool *pool, const uint64_t *u, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		hkv_unit_unpin(pool, u[i]);
}

void xf_tx_free(struct xf_tx *tx)
{
	free(tx->ops);
	free(tx->rext);
	free(tx->units);
	free(tx);
}

/* the checks that need no message: both sides' ranges, totals, local pages */
static int tx_check(struct hkv_xfer_peer *p, const struct hkv_xfer_req *req, unsigned op,
		    uint64_t *pages)
{
	struct hkv_xfer *x = p->x;
	uint64_t lp, rp;
	int err;

	err = xf_check_extents(req->local, req->nlocal, x->npages, &lp);
	if (err)
		return -EINVAL;
	err = xf_check_extents(req->remote, req->nremote, p->npages, &rp);
	if (err)
		return err;
	if (lp != rp || (req->npin_units && !req->pin_units))
		return -EINVAL;
	if (op == HKV_XFER_OP_GET && (err = xf_check_disjoint(req->local, req->nlocal)))
		return err;
	err = xf_check_allocated(x->pool, req->local, req->nlocal);
	if (err)
		return err;
	*pages = lp;
	return 0;
}

static struct xf_tx *tx_new(struct hkv_xfer_peer *p, const struct hkv_xfer_req *req,
			    unsigned op, uint64_t pages)
{
	struct xf_tx *tx = calloc(1, sizeof(*tx));

	if (!tx)
		return NULL;
	tx->rext = malloc(req->nremote * sizeof(*tx->rext));
	tx->units = malloc(XF_MAX(req->npin_units, 1) * sizeof(*tx->units));
	if (!tx->rext || !tx->units ||
	    xf_plan(p->x, p, req->local, req->nlocal, req->remote, req->nremote,
		    req->flags & HKV_XFER_PER_PAGE, &tx->ops, &tx->nops)) {
		xf_tx_free(tx);
		return NULL;
	}
	tx->nrext = xf_merge_extents(req->remote, req->nremote, tx->rext);
	if (req->npin_units)
		memcpy(tx->units, req->pin_units, req->npin_units * sizeof(*tx->units));
	tx->nunits = req->npin_units;
	tx->peer = p;
	tx->peer_id = p->id;
	tx->op = op;
	tx->pages = pages;
	tx->bytes = pages * p->x->page_bytes;
	tx->nlocal = req->nlocal;
	tx->done = req->done;
	tx->ctx = req->ctx;
	tx->collect = !req->done;
	return tx;
}

static int grant_request(struct xf_tx *tx)
{
	size_t len = sizeof(struct xf_wire_grant_req) + tx->nrext * sizeof(struct hkv_extent);
	struct xf_wire_grant_req *rq = malloc(len);
	int err;

	if (!rq)
		return -ENOMEM;
	xf_wire_hdr_set(&rq->h, XF_AM_GRANT_REQ);
	rq->id = tx->id;
	rq->op = tx->op;
	rq->n = tx->nrext;
	memcpy(rq->ext, tx->rext, tx->nrext * sizeof(rq->ext[0]));
	err = xf_am_send(tx->peer, XF_AM_GRANT_REQ, rq, len);
	free(rq);
	return err;
}

static void tx_link(struct hkv_xfer *x, struct xf_tx *tx)
{
	struct xf_tx **pp = &x->txs;

	while (*pp)
		pp = &(*pp)->next;
	*pp = tx;
}

static int submit(struct hkv_xfer_peer *p, const struct hkv_xfer_req *req, uint64_t *id,
		  unsigned op)
{
	struct hkv_xfer *x;
	struct xf_tx *tx;
	uint64_t pages;
	int timeout, err;

	if (!p || !(req = req_ok(req)) || (!id && !req->done) || req->timeout_ms < 0)
		return -EINVAL;
	x = p->x;
	if (xf_forked(x))
		return -ECHILD;
	if (p->state != XF_PEER_READY || p->error)
		return p->error ? p->error : -ENOTCONN;
	err = tx_check(p, req, op, &pages);
	if (err)
		goto refused;
	tx = tx_new(p, req, op, pages);
	if (!tx) {
		err = -ENOMEM;
		goto refused;
	}
	err = pin_units(x->pool, tx->units, tx->nunits);
	if (err)
		goto free_tx;
	tx->id = ++x->next_tx_id;
	err = grant_request(tx);
	if (err)
		goto unpin;
	timeout = req->timeout_ms ? req->timeout_ms : x->timeout_ms;
	tx->t_submit = xf_now_ns();
	tx->deadline = tx->t_submit + (uint64_t)(timeout > 0 ? timeout : XF_DEF_TIMEOUT_MS) * 1000000ull;
	tx->state = XF_TX_GRANT;
	tx_link(x, tx);
	p->ntx++;
	xf_stats_submit(&x->st, tx);
	xf_stats_submit(&p->st, tx);
	hkv_probe_xfer_submit(x->pool_id, p->id, tx->pages, (uint64_t)tx->nops, tx->bytes);
	if (id)
		*id = tx->id;
	return 0;

unpin:
	unpin_units(x->pool, tx->units, tx->nunits);
free_tx:
	xf_tx_free(tx);
refused:
	x->st.refused++;
	p->st.refused++;
	return err;
}

HKV_API int hkv_xfer_put(struct hkv_xfer_peer *peer, const struct hkv_xfer_req *req, uint64_t *id)
{
	return submit(peer, req, id, HKV_XFER_OP_PUT);
}

HKV_API int hkv_xfer_get(struct hkv_xfer_peer *peer, const struct hkv_xfer_req *req, uint64_t *id)
{
	return submit(peer, req, id, HKV_XFER_OP_GET);
}

/**
 * xf_on_grant_rep() - the target answered a grant request
 * @p: the peer
 * @buf: the GRANT_REP
 * @len: its length
 */
void xf_on_grant_rep(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	const struct xf_wire_result *rep = xf_result_msg(p, buf, len, XF_AM_GRANT_REP);
	struct xf_tx *tx;

	if (!rep)
		return;
	tx = xf_tx_find(p->x, rep->id);
	if (!tx || tx->peer != p || tx->state != XF_TX_GRANT)
		return;			/* ended meanwhile (timeout) */
	if (rep->result) {
		/* refused: nothing was issued; it ends in xf_tx_advance() */
		tx->result = rep->result > 0 ? -EIO : rep->result;
		return;
	}
	tx->granted = true;
	/* the path of every operation of the transfer, fixed here */
	tx->cma = p->cma_out;
	tx->t_grant = xf_now_ns();
	tx->state = XF_TX_DATA;
}

/**
 * xf_tx_issue() - issue operations, oldest transfer first, up to the bound
 * @x: the endpoint
 */
void xf_tx_issue(struct hkv_xfer *x)
{
	struct xf_tx *tx;

	for (tx = x->txs; tx && x->inflight < x->max_inflight; tx = tx->next)
		while (tx->state == XF_TX_DATA && !tx->result && tx->next_op < tx->nops &&
		       tx->peer->state == XF_PEER_READY && x->inflight < x->max_inflight) {
			if (tx->cma)
				xf_op_post_cma(x, tx);
			else
				xf_op_post_am(x, tx);
		}
}

static void release(struct xf_tx *tx)
{
	struct xf_wire_result rl = { .id = tx->id, .result = tx->result,
				     .nops = tx->next_op };
	int err;

	if (!tx->granted || tx->released || tx->peer->state != XF_PEER_READY)
		return;			/* a failed connection ends the grant itself */
	tx->released = true;
	xf_wire_hdr_set(&rl.h, XF_AM_RELEASE);
	err = xf_am_send(tx->peer, XF_AM_RELEASE, &rl, sizeof(rl));
	if (err)
		xf_peer_error(tx->peer, err);
}

static void tx_end(struct hkv_xfer *x, struct xf_tx *tx)
{
	uint64_t ns = xf_now_ns() - tx->t_submit;

	/* operations UCX cancelled because the connection failed: say why */
	if (tx->result == -ECANCELED && tx->peer->error)
		tx->result = tx->peer->error;
	release(tx);
	tx->state = XF_TX_ENDED;
	tx->peer->ntx--;
	unpin_units(x->pool, tx->units, tx->nunits);
	xf_stats_done(&x->st, tx, ns);
	xf_stats_done(&tx->peer->st, tx, ns);
	hkv_probe_xfer_done(x->pool_id, tx->peer_id, (uint64_t)tx->nops, tx->bytes, (int64_t)tx->result, ns);
	x->completed++;
	xf_metrics_publish(x, false);
}

/* the next state of one transfer; true when it ended */
static bool tx_step(struct hkv_xfer *x, struct xf_tx *tx)
{
	if (tx->state == XF_TX_GRANT)
		return tx->result ? (tx_end(x, tx), true) : false;
	if (tx->state == XF_TX_DATA && tx->inflight == 0 &&
	    (tx->result || tx->next_op == tx->nops)) {
		if (!tx->result && tx->op == HKV_XFER_OP_PUT && !tx->cma) {
			/* a put is done when the target says it has every byte
			 * (single copy: each CMA_REP said so for its runs) */
			release(tx);
			tx->wait_done = tx->released;
			tx->state = XF_TX_DONE_WAIT;
			return tx->wait_done ? false : (tx_end(x, tx), true);
		}
		tx_end(x, tx);
		return true;
	}
	if (tx->state == XF_TX_DONE_WAIT && tx->inflight == 0 && (!tx->wait_done || tx->result)) {
		tx_end(x, tx);
		return true;
	}
	return false;
}

/**
 * xf_tx_advance() - move transfers on; end those that are done and run
 *	their callbacks (after the list walk: a callback may submit)
 * @x: the endpoint
 */
void xf_tx_advance(struct hkv_xfer *x)
{
	struct xf_tx **pp = &x->txs, *tx, *done = NULL;

	while ((tx = *pp)) {
		if (tx->state != XF_TX_ENDED && tx_step(x, tx) && !tx->collect) {
			*pp = tx->next;
			tx->next = done;
			done = tx;
			continue;
		}
		pp = &tx->next;
	}
	while ((tx = done)) {
		done = tx->next;
		tx->done(tx->ctx, tx->id, tx->result);
		xf_tx_free(tx);
	}
}

/**
 * xf_tx_fail_peer() - the connection failed: so do its transfers
 * @p: the peer
 * @err: the result they get (unless they already have one)
 */
void xf_tx_fail_peer(struct hkv_xfer_peer *p, int err)
{
	struct xf_tx *tx;
	unsigned i;

	for (tx = p->x->txs; tx; tx = tx->next) {
		if (tx->peer != p || tx->state == XF_TX_ENDED)
			continue;
		if (!tx->result)
			tx->result = err;
		/* gets, and single-copy operations, whose answer never came:
		 * nothing of UCX holds them (the target starts no copy past
		 * the transfer's deadline, and none for a peer it saw fail) */
		if ((tx->op == HKV_XFER_OP_GET || tx->cma) && tx->state == XF_TX_DATA)
			for (i = 0; i < tx->next_op; i++)
				if (!tx->ops[i].landed) {
					tx->ops[i].landed = true;
					tx->inflight--;
					p->x->inflight--;
					p->x->cma_inflight -= tx->cma;
				}
	}
}
