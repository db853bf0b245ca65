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
	const struct xf_reg *reg;
	struct xf_grant *g = NULL;
	ucs_status_ptr_t r;
	char *dst;

	if (hlen == sizeof(hb))		/* UCX's buffer need not be aligned */
		memcpy(&hb, header, sizeof(hb));
	if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)
		p = xf_peer_by_ep(x, param->reply_ep);
	if (p && hlen == sizeof(hb) && data_hdr_ok(&hb, hlen, XF_AM_DATA))
		g = xf_grant_find(p, h->id, HKV_XFER_OP_PUT);
	if (!g || g->released || g->ended || !xf_grant_covers(g, h->page, h->npages) ||
	    length != h->npages * x->page_bytes || !(reg = xf_reg_find(x, h->page)) ||
	    h->page + h->npages > reg->first_page + reg->npages) {
		reject(x, p, data, param);
		return UCS_OK;
	}
	dst = reg->base + (h->page - reg->first_page) * x->page_bytes;
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
	const struct xf_reg *reg = NULL;
	struct xf_get_send *gs;
	struct xf_grant *g = NULL;
	ucs_status_ptr_t r;

	if (data_hdr_ok(buf, len, XF_AM_GET_REQ))
		g = xf_grant_find(p, h->id, HKV_XFER_OP_GET);
	if (!g || g->released || g->ended || !xf_grant_covers(g, h->page, h->npages) ||
	    !(reg = xf_reg_find(x, h->page)) ||
	    h->page + h->npages > reg->first_page + reg->npages) {
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
				    reg->base + (h->page - reg->first_page) * x->page_bytes,
				    h->npages * x->page_bytes, &rp);
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
