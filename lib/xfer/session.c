// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * session.c - the calls that wait for a connection: accept (a peer that
 * proved its key), connect (both proofs held), close (this side's
 * transfers ended, then a flushed close). They progress the endpoint
 * meanwhile (progress.c), the layer below them.
 */
#include "internal.h"

HKV_API int hkv_xfer_accept(struct hkv_xfer *x, int timeout_ms, struct hkv_xfer_peer **out)
{
	uint64_t deadline;
	struct hkv_xfer_peer *p;

	if (!x || !out)
		return -EINVAL;
	if (xf_forked(x))
		return -ECHILD;
	if (!x->listener)
		return -EINVAL;
	deadline = xf_deadline(timeout_ms ? timeout_ms : x->timeout_ms);
	for (;;) {
		xf_progress_once(x);
		for (p = x->peers; p; p = p->next)
			/* also one that failed right after it proved its key: the
			 * caller sees its error (its grants' ENDs have run) */
			if (p->incoming && !p->handed_out && p->authed) {
				p->handed_out = true;
				*out = p;
				return 0;
			}
		if (xf_coarse_ns() >= deadline)
			return -ETIMEDOUT;
	}
}

/* a connect that failed before the peer said hello: nobody listens */
static int connect_error(int err)
{
	switch (err) {
	case -ECONNRESET:
	case -ENOTCONN:
	case -EHOSTUNREACH:
	case -EIO:
		return -ECONNREFUSED;
	default:
		return err;
	}
}

HKV_API int hkv_xfer_connect(struct hkv_xfer *x, const char *addr, int timeout_ms,
			     struct hkv_xfer_peer **out)
{
	struct sockaddr_storage ss;
	struct hkv_xfer_peer *p;
	ucp_ep_params_t ep = {
		.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR,
		.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
	};
	uint64_t deadline;
	socklen_t len;
	int err;

	if (!x || !out || timeout_ms < 0)
		return -EINVAL;
	if (xf_forked(x))
		return -ECHILD;
	err = xf_parse_addr(addr, &ss, &len);
	if (err)
		return err;
	deadline = xf_deadline(timeout_ms ? timeout_ms : x->timeout_ms);
	ep.sockaddr.addr = (const struct sockaddr *)&ss;
	ep.sockaddr.addrlen = len;
	p = xf_peer_new(x, false);
	if (!p)
		return -ENOMEM;
	p->handed_out = true;		/* ours until it fails or is returned */
	err = xf_peer_ep_create(p, &ep);
	while (!err) {
		xf_progress_once(x);
		/* ready: the listener checked our proof, then proved itself,
		 * and answered our single-copy offer (if we made one) */
		if (p->state == XF_PEER_READY && (!p->cma_offered || p->cma_answered)) {
			*out = p;
			return 0;
		}
		if (p->error)
			err = connect_error(p->error);
		else if (xf_coarse_ns() >= deadline)
			err = -ETIMEDOUT;
	}
	xf_peer_fail(p, err);
	p->closing = true;
	while (p->close_req && !xf_peer_closed(p))
		ucp_worker_progress(x->worker);
	xf_peers_reap(x);
	return err;
}

HKV_API void hkv_xfer_peer_close(struct hkv_xfer_peer *p)
{
	struct hkv_xfer *x;
	uint64_t deadline;

	if (!p || xf_forked(p->x))	/* a fork() child's: the parent's to close */
		return;
	x = p->x;
	deadline = xf_deadline(x->timeout_ms);
	while (p->ntx && p->state != XF_PEER_FAILED && xf_coarse_ns() < deadline)
		xf_progress_once(x);
	if (p->state != XF_PEER_FAILED && !p->error && !p->ntx && p->ep) {
		ucp_request_param_t rp = { .op_attr_mask = 0 };
		void *r;

		/* graceful: nothing in flight, flush and close */
		xf_grants_end(p, -ECANCELED);
		xf_rregs_destroy(p);
		r = ucp_ep_close_nbx(p->ep, &rp);
		p->ep = NULL;
		if (UCS_PTR_IS_PTR(r))
			p->close_req = r;
		if (p->state == XF_PEER_READY)
			x->st.peers--;
		p->state = XF_PEER_FAILED;
		p->error = -ECANCELED;
	} else {	/* keeps the reason of a connection already broken */
		xf_peer_fail(p, p->error ? p->error : -ECANCELED);
	}
	p->closing = true;
	while ((p->ntx || p->close_req) && xf_coarse_ns() < deadline) {
		ucp_worker_progress(x->worker);
		xf_peer_closed(p);
		xf_tx_advance(x);
	}
	/* a close still flushing is finished and freed by later progress */
	xf_peers_reap(x);
}
