// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * msg.c - the control messages: UCX active messages, forced eager (so a
 * message always arrives whole, inside the receive callback), sent with a
 * reply endpoint (so the receiver knows which peer sent it). The receive
 * callback only copies the message into the endpoint's inbox; the inbox is
 * handled after ucp_worker_progress() returns (progress.c), where sending
 * and calling the application are safe. A broken connection is only noted
 * here and below (xf_peer_error()); conn.c acts on it.
 */
#include "internal.h"

struct xf_send {
	struct hkv_xfer *x;
	unsigned char data[];
};

void xf_wire_hdr_set(struct xf_wire_hdr *h, unsigned kind)
{
	h->magic = XF_MAGIC;
	h->version = XF_VERSION;
	h->kind = (uint16_t)kind;
}

bool xf_wire_hdr_ok(const void *buf, size_t len, size_t min, unsigned kind)
{
	const struct xf_wire_hdr *h = buf;

	return len >= min && h->magic == XF_MAGIC && h->version == XF_VERSION &&
	       h->kind == kind;
}

static ucs_status_t am_recv(void *arg, const void *header, size_t header_length,
			    void *data, size_t length, const ucp_am_recv_param_t *param)
{
	struct hkv_xfer *x = arg;
	struct hkv_xfer_peer *p;
	struct xf_msg *m;
	unsigned am_id;

	(void)header;
	(void)header_length;
	if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP))
		return UCS_OK;			/* not one of ours: no sender */
	p = xf_peer_by_ep(x, param->reply_ep);
	if (!p || (!p->authed && length > XF_PREAUTH_MSG)) {
		if (p)			/* a stranger's big message is not kept */
			xf_peer_error(p, -EPROTO);
		return UCS_OK;
	}
	/* the id is not passed to the callback: it is the first wire field */
	if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV || length < sizeof(struct xf_wire_hdr))
		length = 0;			/* a protocol error, reported below */
	m = malloc(sizeof(*m) + length);
	if (!m)
		return UCS_OK;			/* dropped: the sender times out */
	am_id = 0;
	if (length) {		/* UCX's buffer need not be aligned */
		struct xf_wire_hdr h;

		memcpy(&h, data, sizeof(h));
		am_id = h.kind;
	}
	m->next = NULL;
	m->ep = param->reply_ep;
	m->am_id = am_id;
	m->len = length;
	if (length)
		memcpy(m->data, data, length);
	*x->inbox_tail = m;
	x->inbox_tail = &m->next;
	return UCS_OK;
}

/**
 * xf_am_init() - install the receive handler of every control message
 * @x: the endpoint
 *
 * Return: 0, or -errno.
 */
int xf_am_init(struct hkv_xfer *x)
{
	static const unsigned ids[] = { XF_AM_HELLO, XF_AM_GRANT_REQ, XF_AM_GRANT_REP,
					XF_AM_RELEASE, XF_AM_GET_REQ, XF_AM_DONE, XF_AM_AUTH,
					XF_AM_CMA_OFFER, XF_AM_CMA_ACK, XF_AM_CMA_REQ,
					XF_AM_CMA_REP };
	unsigned i;

	x->inbox = NULL;
	x->inbox_tail = &x->inbox;
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		ucp_am_handler_param_t hp = {
			.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
				      UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS,
			.id = ids[i],
			.flags = UCP_AM_FLAG_WHOLE_MSG,
			.cb = am_recv,
			.arg = x,
		};
		ucs_status_t st = ucp_worker_set_am_recv_handler(x->worker, &hp);

		if (st != UCS_OK)
			return xf_errno(st);
	}
	return 0;
}

static void send_done(void *req, ucs_status_t st, void *user)
{
	struct xf_send *s = user;

	(void)st;
	s->x->pending_sends--;
	free(s);
	ucp_request_free(req);
}

/**
 * xf_am_send() - send a control message to a peer (copied; fire and forget)
 * @p: the peer
 * @am_id: XF_AM_*
 * @buf: the message
 * @len: its length
 *
 * A message that cannot be delivered fails the connection, which is how
 * the sender learns of it.
 *
 * Return: 0, or -ENOMEM, -ENOTCONN, or the send's error.
 */
int xf_am_send(struct hkv_xfer_peer *p, unsigned am_id, const void *buf, size_t len)
{
	struct xf_send *s;
	ucp_request_param_t rp = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
				UCP_OP_ATTR_FIELD_FLAGS,
		.flags = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER,
		.cb.send = send_done,
	};
	ucs_status_ptr_t r;

	if (!p->ep || p->state == XF_PEER_FAILED)
		return p->error ? p->error : -ENOTCONN;
	s = malloc(sizeof(*s) + len);
	if (!s)
		return -ENOMEM;
	s->x = p->x;
	memcpy(s->data, buf, len);
	rp.user_data = s;
	r = ucp_am_send_nbx(p->ep, am_id, NULL, 0, s->data, len, &rp);
	if (r == NULL) {
		free(s);
		return 0;
	}
	if (UCS_PTR_IS_ERR(r)) {
		free(s);
		return xf_errno(UCS_PTR_STATUS(r));
	}
	p->x->pending_sends++;
	return 0;
}

void xf_inbox_free(struct hkv_xfer *x)
{
	struct xf_msg *m;

	while ((m = x->inbox)) {
		x->inbox = m->next;
		free(m);
	}
	x->inbox_tail = &x->inbox;
}

struct hkv_xfer_peer *xf_peer_by_ep(struct hkv_xfer *x, ucp_ep_h ep)
{
	struct hkv_xfer_peer *p;

	for (p = x->peers; p; p = p->next)
		if (p->ep == ep)
			return p;
	return NULL;
}

/**
 * xf_peer_error() - a connection is broken: note why; the next progress
 *	step fails everything on it (xf_peers_reap()), once
 * @p: the peer
 * @err: why (-EPROTO, -EACCES, -ETIMEDOUT, a send's error ...)
 */
void xf_peer_error(struct hkv_xfer_peer *p, int err)
{
	if (!p->error)
		p->error = err;
}

const struct xf_wire_result *xf_result_msg(struct hkv_xfer_peer *p, const void *buf,
					   size_t len, unsigned kind)
{
	if (len == sizeof(struct xf_wire_result) && xf_wire_hdr_ok(buf, len, len, kind))
		return buf;
	xf_peer_error(p, -EPROTO);
	return NULL;
}
