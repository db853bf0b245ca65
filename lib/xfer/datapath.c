// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * datapath.c - the two-sided data path (the default): one active message
 * per planned operation, the target's own handler moving the bytes.
 *
 *   put: DATA (header: transfer id, target pages) + the payload; the
 *        target checks the pages against the grant and receives the
 *        payload into them (eager copy, or ucp_am_recv_data_nbx for
 *        rendezvous, zero-copy where the transport can).
 *   get: GET_REQ (header only); the target checks it and answers GET_REP
 *        with the payload straight from its registered pages.
 *
 * Why never ucp_put_nbx/ucp_get_nbx: one-sided access needs the target's
 * rkeys in the peer's hands, and where UCX 1.13 emulates RMA in software
 * (tcp; shared memory for memory it did not allocate) its handler on the
 * target reads or writes whatever address the peer names, without checking
 * any rkey: any peer could read, write or fault the whole process. So the
 * endpoint's UCX context has no RMA feature (UCX installs no RMA handler),
 * and only this file's handlers touch the pool, each checking the grant.
 */
#include "internal.h"

/* this library's probe semaphores (bpf/hugekv_probes.h, rows XFER), in
 * the highest file with a probe site (xfer_copy here; transfer.c, below,
 * fires xfer_submit and xfer_done) */
HKV_PROBE_SEMAPHORES(XFER)

struct xf_get_send {
	struct xf_grant *g;
	struct xf_wire_data hdr;
};

static bool data_hdr_ok(const void *h, size_t len, unsigned kind)
{
	const struct xf_wire_data *d = h;

	return len == sizeof(*d) && d->magic == XF_MAGIC && d->version == XF_VERSION &&
	       d->kind == kind;
}

static void reject(struct hkv_xfer *x, struct hkv_xfer_peer *p, void *data,
		   const ucp_am_recv_param_t *param)
{
	if (p && !p->error)
		p->error = -EPROTO;	/* failed in progress, after this callback */
	if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)
		ucp_am_data_release(x->worker, data);
}

/* the address of pages [page, +npages) of this process's pool if grant g
 * (live) covers them and one registration holds them all, else NULL: the
 * one check before any byte of a grant moves, on every path */
static char *granted(const struct hkv_xfer *x, const struct xf_grant *g, uint64_t page,
		     uint64_t npages)
{
	const struct xf_reg *reg;

	if (!g || g->released || g->ended || !xf_grant_covers(g, page, npages) ||
	    !(reg = xf_reg_find(x, page)) || page + npages > reg->first_page + reg->npages)
		return NULL;
	return reg->base + (page - reg->first_page) * x->page_bytes;
}

/* ---- target: DATA (a put's payload) ------------------------------------ */

/* receive a rendezvous payload into dst; cb(user) ends it */
static ucs_status_ptr_t recv_rndv(struct hkv_xfer *x, void *data, void *dst, size_t length,
				  ucp_am_recv_data_nbx_callback_t cb, void *user)
{
	ucp_request_param_t rp = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.recv_am = cb,
		.user_data = user,
	};

	return ucp_am_recv_data_nbx(x->worker, data, dst, length, &rp);
}

static void put_recv_done(void *req, ucs_status_t st, size_t length, void *user)
{
	struct xf_grant *g = user;

	g->pending--;
	if (st == UCS_OK)
		g->bytes_done += length;
	else if (!g->result)
		g->result = xf_errno(st);
	ucp_request_free(req);
}

static ucs_status_t data_recv(void *arg, const void *header, size_t hlen, void *data,
			      size_t length, const ucp_am_recv_param_t *param)
{
	struct hkv_xfer *x = arg;
	struct xf_wire_data hb, *h = &hb;
	struct hkv_xfer_peer *p = NULL;
	struct xf_grant *g = NULL;
	ucs_status_ptr_t r;
	char *dst;

	if (hlen == sizeof(hb))		/* UCX's buffer need not be aligned */
		memcpy(&hb, header, sizeof(hb));
	if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)
		p = xf_peer_by_ep(x, param->reply_ep);
	if (p && hlen == sizeof(hb) && data_hdr_ok(&hb, hlen, XF_AM_DATA))
		g = xf_grant_find(p, h->id, HKV_XFER_OP_PUT);
	if (!g || length != h->npages * x->page_bytes ||
	    !(dst = granted(x, g, h->page, h->npages))) {
		reject(x, p, data, param);
		return UCS_OK;
	}
	if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
		memcpy(dst, data, length);
		g->bytes_done += length;
		return UCS_OK;
	}
	g->pending++;
	r = recv_rndv(x, data, dst, length, put_recv_done, g);
	if (r == NULL) {
		g->pending--;
		g->bytes_done += length;
	} else if (UCS_PTR_IS_ERR(r)) {
		g->pending--;
		if (!g->result)
			g->result = xf_errno(UCS_PTR_STATUS(r));
	}
	return UCS_OK;
}

/* ---- target: GET_REQ (through the inbox: it sends) ---------------------- */

static void get_sent(void *req, ucs_status_t st, void *user)
{
	struct xf_get_send *gs = user;

	(void)st;
	gs->g->pending--;
	free(gs);
	ucp_request_free(req);
}

/**
 * xf_on_get_req() - a peer asks for granted pages: send them
 * @p: the peer
 * @buf: the GET_REQ header
 * @len: its length
 */
void xf_on_get_req(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	const struct xf_wire_data *h = buf;
	struct hkv_xfer *x = p->x;
	struct xf_get_send *gs;
	char *src;
	struct xf_grant *g = NULL;
	ucs_status_ptr_t r;

	if (data_hdr_ok(buf, len, XF_AM_GET_REQ))
		g = xf_grant_find(p, h->id, HKV_XFER_OP_GET);
	if (!(src = granted(x, g, h->page, h->npages))) {
		xf_peer_error(p, -EPROTO);
		return;
	}
	gs = malloc(sizeof(*gs));
	if (!gs) {
		xf_peer_error(p, -ENOMEM);
		return;
	}
	gs->g = g;
	gs->hdr = *h;
	gs->hdr.kind = XF_AM_GET_REP;
	{
		ucp_request_param_t rp = {
			.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
					UCP_OP_ATTR_FIELD_FLAGS,
			.flags = UCP_AM_SEND_FLAG_REPLY,
			.cb.send = get_sent,
			.user_data = gs,
		};

		g->pending++;
		r = ucp_am_send_nbx(p->ep, XF_AM_GET_REP, &gs->hdr, sizeof(gs->hdr),
				    src, h->npages * x->page_bytes, &rp);
	}
	if (UCS_PTR_IS_PTR(r))
		return;
	g->pending--;
	free(gs);
	if (UCS_PTR_IS_ERR(r))
		xf_peer_error(p, xf_errno(UCS_PTR_STATUS(r)));
}

/* ---- initiator: operations and GET_REP ---------------------------------- */

static void op_landed(struct hkv_xfer *x, struct xf_tx *tx, int err)
{
	tx->inflight--;
	x->inflight--;
	if (err && !tx->result)
		tx->result = err;
}

static void get_recv_done(void *req, ucs_status_t st, size_t length, void *user)
{
	struct xf_tx *tx = user;

	(void)length;
	op_landed(tx->peer->x, tx, xf_errno(st));
	ucp_request_free(req);
}

/**
 * xf_tx_find() - the transfer with an id
 * @x: the endpoint
 * @id: the id
 *
 * Return: the transfer, or NULL (ended meanwhile, or never ours).
 */
struct xf_tx *xf_tx_find(struct hkv_xfer *x, uint64_t id)
{
	struct xf_tx *tx;

	for (tx = x->txs; tx; tx = tx->next)
		if (tx->id == id)
			return tx;
	return NULL;
}

static ucs_status_t get_rep_recv(void *arg, const void *header, size_t hlen, void *data,
				 size_t length, const ucp_am_recv_param_t *param)
{
	struct hkv_xfer *x = arg;
	struct xf_wire_data hb, *h = &hb;
	struct hkv_xfer_peer *p = NULL;
	struct xf_tx *tx = NULL;
	struct xf_op *op;
	ucs_status_ptr_t r;

	if (hlen == sizeof(hb))
		memcpy(&hb, header, sizeof(hb));
	if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)
		p = xf_peer_by_ep(x, param->reply_ep);
	if (p && hlen == sizeof(hb) && data_hdr_ok(&hb, hlen, XF_AM_GET_REP))
		tx = xf_tx_find(x, h->id);
	if (!tx || tx->peer != p || tx->op != HKV_XFER_OP_GET || tx->state != XF_TX_DATA ||
	    h->op >= tx->next_op || tx->ops[h->op].landed ||
	    length != tx->ops[h->op].bytes) {
		reject(x, p, data, param);
		return UCS_OK;
	}
	op = &tx->ops[h->op];
	op->landed = true;
	if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
		memcpy(op->laddr, data, length);
		op_landed(x, tx, 0);
		return UCS_OK;
	}
	r = recv_rndv(x, data, op->laddr, length, get_recv_done, tx);
	if (r == NULL)
		op_landed(x, tx, 0);
	else if (UCS_PTR_IS_ERR(r))
		op_landed(x, tx, xf_errno(UCS_PTR_STATUS(r)));
	return UCS_OK;
}

static void op_sent(void *req, ucs_status_t st, void *user)
{
	struct xf_tx *tx = user;

	op_landed(tx->peer->x, tx, xf_errno(st));
	ucp_request_free(req);
}

static void ctl_sent(void *req, ucs_status_t st, void *user)
{
	(void)st;
	(void)user;
	ucp_request_free(req);
}

/**
 * xf_op_post_am() - issue the next operation of a transfer, two-sided
 * @x: the endpoint
 * @tx: the transfer (granted, in XF_TX_DATA)
 *
 * A put's operation completes when UCX is done with the local pages; a
 * get's when its GET_REP payload has landed.
 */
void xf_op_post_am(struct hkv_xfer *x, struct xf_tx *tx)
{
	unsigned idx = tx->next_op++;
	struct xf_op *op = &tx->ops[idx];
	bool put = tx->op == HKV_XFER_OP_PUT;
	ucp_request_param_t rp = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
				UCP_OP_ATTR_FIELD_FLAGS,
		.flags = UCP_AM_SEND_FLAG_REPLY,
		.cb.send = put ? op_sent : ctl_sent,
		.user_data = tx,
	};
	ucs_status_ptr_t r;

	op->hdr = (struct xf_wire_data){
		.magic = XF_MAGIC, .version = XF_VERSION,
		.kind = put ? XF_AM_DATA : XF_AM_GET_REQ,
		.id = tx->id, .page = op->rpage, .npages = op->bytes / x->page_bytes, .op = idx,
	};
	tx->inflight++;
	x->inflight++;
	if (x->inflight > x->st.max_ops_inflight)
		x->st.max_ops_inflight = x->inflight;
	if (x->inflight > tx->peer->st.max_ops_inflight)
		tx->peer->st.max_ops_inflight = x->inflight;
	if (put) {
		r = ucp_am_send_nbx(tx->peer->ep, XF_AM_DATA, &op->hdr, sizeof(op->hdr),
				    op->laddr, op->bytes, &rp);
	} else {
		rp.flags |= UCP_AM_SEND_FLAG_EAGER;
		r = ucp_am_send_nbx(tx->peer->ep, XF_AM_GET_REQ, NULL, 0, &op->hdr,
				    sizeof(op->hdr), &rp);
	}
	if (UCS_PTR_IS_ERR(r)) {
		op->landed = true;	/* no answer will come: nothing to wait for */
		op_landed(x, tx, xf_errno(UCS_PTR_STATUS(r)));
	} else if (!r && put) {
		op_landed(x, tx, 0);
	}
}

/* ---- single copy (the target copies: cma.c) ----------------------------- */

static void cma_answer(struct hkv_xfer_peer *p, const struct xf_wire_cma *rq, int result)
{
	struct xf_wire_cma rep = { .op = rq->op, .n = rq->n, .id = rq->id, .first = rq->first,
				   .result = result };
	int err;

	xf_wire_hdr_set(&rep.h, XF_AM_CMA_REP);
	err = xf_am_send(p, XF_AM_CMA_REP, &rep, sizeof(rep));
	if (err)
		xf_peer_error(p, err);
}

/* the runs of a request against the grant: the local iovecs, or false */
static bool cma_runs(struct hkv_xfer *x, const struct xf_grant *g, const struct xf_wire_cma *rq,
		     struct iovec *lv, struct iovec *rv, uint64_t *bytes)
{
	unsigned i;

	*bytes = 0;
	for (i = 0; i < rq->n; i++) {
		const struct xf_wire_cma_run *r = &rq->run[i];

		if (!(lv[i].iov_base = granted(x, g, r->page, r->npages)))
			return false;
		lv[i].iov_len = r->npages * x->page_bytes;
		rv[i].iov_base = (void *)(uintptr_t)r->addr;
		rv[i].iov_len = lv[i].iov_len;
		*bytes += lv[i].iov_len;
	}
	return true;
}

/**
 * xf_on_cma_req() - a peer proved on this host asks the target to copy runs
 *	of a granted transfer between its buffers and the granted pages
 * @p: the peer
 * @buf: the CMA_REQ
 * @len: its length
 *
 * Pages outside the grant close the connection before a byte moves, as on
 * the two-sided path. A copy that fails (a buffer of the peer's not
 * mapped: -EFAULT; the peer gone: -ESRCH; past the transfer's deadline:
 * -ETIMEDOUT) fails the transfer, not the connection.
 */
void xf_on_cma_req(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	const struct xf_wire_cma *rq = buf;
	struct hkv_xfer *x = p->x;
	struct iovec lv[64], rv[64], *l = lv, *r = rv;
	struct xf_grant *g = NULL;
	uint64_t bytes;
	int err;

	if (xf_wire_hdr_ok(buf, len, sizeof(*rq), XF_AM_CMA_REQ) && p->cma_in && rq->n &&
	    rq->n <= XF_CMA_MAX_RUNS && len == sizeof(*rq) + rq->n * sizeof(rq->run[0]))
		g = xf_grant_find(p, rq->id, rq->op);
	if (!g || g->released || g->ended) {
		xf_peer_error(p, -EPROTO);
		return;
	}
	if (rq->n > 64) {
		l = malloc(2 * rq->n * sizeof(*l));
		if (!l) {
			cma_answer(p, rq, -ENOMEM);
			return;
		}
		r = l + rq->n;
	}
	if (!cma_runs(x, g, rq, l, r, &bytes)) {
		xf_peer_error(p, -EPROTO);
		goto out;
	}
	g->cma = true;
	/* the initiator gives its buffers back at its deadline: no copy starts
	 * near it (one clock: offer_check() required the same time namespace) */
	if (xf_now_ns() + XF_CMA_MARGIN_NS >= rq->deadline_ns)
		err = -ETIMEDOUT;
	else
		err = xf_cma_copy(p, g->op == HKV_XFER_OP_PUT, l, r, rq->n, bytes);
	hkv_probe_xfer_copy(x->pool_id, p->id, (uint64_t)g->op, (uint64_t)rq->n, bytes,
			    (int64_t)err);
	if (err) {
		x->st.cma_faults++;
		p->st.cma_faults++;
		xf_log(2, "peer %llu: single copy of transfer %llu: %s", (unsigned long long)p->id,
		       (unsigned long long)rq->id, strerror(-err));
		if (!g->result)
			g->result = err;
	} else {
		x->st.cma_runs += rq->n;
		p->st.cma_runs += rq->n;
		x->st.cma_bytes += bytes;
		p->st.cma_bytes += bytes;
		g->bytes_done += bytes;
	}
	x->metrics_dirty = true;	/* the page carries the single copy's figures */
	cma_answer(p, rq, err);
out:
	if (l != lv)
		free(l);
}

/**
 * xf_op_post_cma() - ask the target to copy the next runs of a transfer
 * @x: the endpoint
 * @tx: the transfer (granted, in XF_TX_DATA, tx->cma)
 *
 * One CMA_REQ carries up to a quarter of the endpoint's bound on
 * operations in flight (so several stay queued at the target while it
 * copies one), each run this process's own buffer; the target answers with
 * CMA_REP once they moved.
 */
void xf_op_post_cma(struct hkv_xfer *x, struct xf_tx *tx)
{
	unsigned room = x->max_inflight - x->inflight, batch = XF_MAX(x->max_inflight / 4, 1);
	unsigned n = XF_MIN(XF_MIN(tx->nops - tx->next_op, room), XF_MIN(batch, XF_CMA_MAX_RUNS));
	size_t len = sizeof(struct xf_wire_cma) + n * sizeof(struct xf_wire_cma_run);
	struct xf_wire_cma *rq = malloc(len);
	unsigned i;
	int err;

	if (!rq) {
		tx->result = -ENOMEM;
		return;
	}
	xf_wire_hdr_set(&rq->h, XF_AM_CMA_REQ);
	rq->op = tx->op;
	rq->n = n;
	rq->id = tx->id;
	rq->first = tx->next_op;
	rq->result = 0;
	rq->deadline_ns = tx->deadline;
	for (i = 0; i < n; i++) {
		const struct xf_op *op = &tx->ops[tx->next_op + i];

		rq->run[i] = (struct xf_wire_cma_run){ .page = op->rpage,
						       .npages = op->bytes / x->page_bytes,
						       .addr = (uint64_t)(uintptr_t)op->laddr };
	}
	err = xf_am_send(tx->peer, XF_AM_CMA_REQ, rq, len);
	free(rq);
	if (err) {
		tx->result = err;
		xf_peer_error(tx->peer, err);
		return;
	}
	tx->next_op += n;
	tx->inflight += n;
	x->inflight += n;
	x->cma_inflight += n;
	if (x->inflight > x->st.max_ops_inflight)
		x->st.max_ops_inflight = x->inflight;
	if (x->inflight > tx->peer->st.max_ops_inflight)
		tx->peer->st.max_ops_inflight = x->inflight;
}

/**
 * xf_on_cma_rep() - the target copied runs of our transfer (or failed to)
 * @p: the peer
 * @buf: the CMA_REP
 * @len: its length
 */
void xf_on_cma_rep(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	const struct xf_wire_cma *rep = buf;
	struct xf_tx *tx;
	unsigned i;

	if (len != sizeof(*rep) || !xf_wire_hdr_ok(buf, len, len, XF_AM_CMA_REP)) {
		xf_peer_error(p, -EPROTO);
		return;
	}
	tx = xf_tx_find(p->x, rep->id);
	if (!tx || tx->peer != p || !tx->cma || tx->state != XF_TX_DATA || !rep->n ||
	    rep->first > tx->next_op || rep->n > tx->next_op - rep->first)
		return;			/* ended meanwhile (failed connection) */
	for (i = rep->first; i < rep->first + rep->n; i++)
		if (tx->ops[i].landed)
			return;		/* answered twice: ignored */
	for (i = rep->first; i < rep->first + rep->n; i++) {
		tx->ops[i].landed = true;
		op_landed(p->x, tx, 0);
	}
	p->x->cma_inflight -= rep->n;
	if (rep->result && !tx->result)
		tx->result = rep->result > 0 ? -EIO : rep->result;
}

/**
 * xf_on_done() - the target has every byte of a two-sided put (or not)
 * @p: the peer
 * @buf: the DONE
 * @len: its length
 */
void xf_on_done(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	const struct xf_wire_result *d = xf_result_msg(p, buf, len, XF_AM_DONE);
	struct xf_tx *tx;

	if (!d)
		return;
	tx = xf_tx_find(p->x, d->id);
	if (!tx || tx->peer != p || !tx->wait_done)
		return;
	tx->wait_done = false;
	if (d->result && !tx->result)
		tx->result = d->result > 0 ? -EIO : d->result;
}

/**
 * xf_datapath_init() - install the handlers of the data-bearing messages
 * @x: the endpoint
 *
 * Return: 0, or -errno.
 */
int xf_datapath_init(struct hkv_xfer *x)
{
	static const struct {
		unsigned id;
		ucp_am_recv_callback_t cb;
	} h[] = { { XF_AM_DATA, data_recv }, { XF_AM_GET_REP, get_rep_recv } };
	unsigned i;

	for (i = 0; i < 2; i++) {
		ucp_am_handler_param_t hp = {
			.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
				      UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS,
			.id = h[i].id,
			.flags = UCP_AM_FLAG_WHOLE_MSG,
			.cb = h[i].cb,
			.arg = x,
		};
		ucs_status_t st = ucp_worker_set_am_recv_handler(x->worker, &hp);

		if (st != UCS_OK)
			return xf_errno(st);
	}
	return 0;
}
