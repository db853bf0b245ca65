// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * conn.c - connections: UCX's client-server establishment on a socket
 * address (ucp_listener_create / ucp_ep_create), the HELLO and AUTH
 * exchange (a peer is ready only once it proved its key, within the
 * endpoint's timeout), and what happens when a connection fails: every transfer on it fails, every
 * grant the peer holds ends, the UCX endpoint is closed by force (which
 * completes its outstanding operations with an error), and the peer is
 * freed once nothing refers to it.
 */
#include "internal.h"

/* UCX found the connection broken: record it, act in progress */
static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
	struct hkv_xfer_peer *p = arg;

	(void)ep;
	p->ep_broken = true;
	if (!p->error)
		p->error = xf_errno(status) == -EINPROGRESS ? -EIO : xf_errno(status);
}

struct hkv_xfer_peer *xf_peer_new(struct hkv_xfer *x, bool incoming)
{
	struct hkv_xfer_peer *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->x = x;
	p->id = ++x->next_peer_id;
	p->incoming = incoming;
	p->state = XF_PEER_CONNECTING;
	p->auth_deadline = xf_deadline(x->timeout_ms);
	p->next = x->peers;
	x->peers = p;
	x->npeers++;
	return p;
}

static void peer_unlink(struct hkv_xfer_peer *p)
{
	struct hkv_xfer_peer **pp;

	for (pp = &p->x->peers; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			p->x->npeers--;
			p->x->metrics_dirty = true;	/* the page lists peers */
			return;
		}
}

void xf_peer_free(struct hkv_xfer_peer *p)
{
	peer_unlink(p);
	free(p);
}

int xf_peer_ep_create(struct hkv_xfer_peer *p, ucp_ep_params_t *ep)
{
	ucs_status_t st;
	int err;

	ep->field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
	ep->err_mode = UCP_ERR_HANDLING_MODE_PEER;
	ep->err_handler.cb = ep_error;
	ep->err_handler.arg = p;
	st = ucp_ep_create(p->x->worker, ep, &p->ep);
	if (st != UCS_OK) {
		p->ep = NULL;
		return xf_errno(st);
	}
	/* the connecting side speaks first; the listener answers its HELLO
	 * (xf_on_hello()): a listener's endpoint may not be wired up before
	 * the client's first message arrives (UCX 1.13 on shared memory with
	 * peer error handling loses what it sends earlier) */
	if (p->incoming)
		return 0;
	err = xf_hello_send(p);
	if (err)
		xf_peer_fail(p, err);
	return err;
}

static void conn_cb(ucp_conn_request_h req, void *arg)
{
	struct hkv_xfer *x = arg;
	struct xf_conn_req *c = malloc(sizeof(*c));

	if (!c) {
		ucp_listener_reject(x->listener, req);
		return;
	}
	c->req = req;
	c->next = x->conn_reqs;
	x->conn_reqs = c;
}

/**
 * xf_conn_reqs_accept() - make a peer of every pending connection request
 * @x: the endpoint
 */
void xf_conn_reqs_accept(struct hkv_xfer *x)
{
	struct xf_conn_req *c;

	while ((c = x->conn_reqs)) {
		struct hkv_xfer_peer *p;
		ucp_ep_params_t ep = {
			.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST,
			.conn_request = c->req,
		};

		x->conn_reqs = c->next;
		p = x->npeers < x->max_peers ? xf_peer_new(x, true) : NULL;
		if (!p) {
			ucp_listener_reject(x->listener, c->req);
			x->st.peers_rejected++;
			x->metrics_dirty = true;
		}
		else if (xf_peer_ep_create(p, &ep) && !p->ep)
			xf_peer_free(p);
		free(c);
	}
}

HKV_API int hkv_xfer_listen(struct hkv_xfer *x, const char *addr, unsigned *port)
{
	struct sockaddr_storage ss;
	ucp_listener_attr_t la = { .field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR };
	ucp_listener_params_t lp = {
		.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
			      UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
		.conn_handler = { .cb = conn_cb, .arg = x },
	};
	socklen_t len;
	ucs_status_t st;
	int err;

	if (!x || !addr)
		return -EINVAL;
	if (xf_forked(x))
		return -ECHILD;
	if (x->listener)
		return -EALREADY;
	err = xf_parse_addr(addr, &ss, &len);
	if (err)
		return err;
	lp.sockaddr.addr = (const struct sockaddr *)&ss;
	lp.sockaddr.addrlen = len;
	st = ucp_listener_create(x->worker, &lp, &x->listener);
	if (st != UCS_OK) {
		x->listener = NULL;
		xf_log(0, "listen on %s: %s", addr, ucs_status_string(st));
		return st == UCS_ERR_BUSY ? -EADDRINUSE : xf_errno(st);
	}
	if (port) {
		if (ucp_listener_query(x->listener, &la) == UCS_OK)
			*port = ntohs(((struct sockaddr_in *)&la.sockaddr)->sin_port);
		else
			*port = 0;
	}
	return 0;
}

static void auth_failed(struct hkv_xfer_peer *p, int err)
{
	p->gentle = true;	/* a refusal we sent should reach the peer */
	/* and before our close: UCX may report the close to the peer on its
	 * connection manager's socket ahead of the refusal on the data one,
	 * and the peer would take the refusal for nobody listening */
	if (p->incoming && err == -EACCES)
		p->linger = xf_coarse_ns() + XF_REFUSED_LINGER_NS;
	if (err == -EACCES) {
		p->x->st.auth_failures++;
		p->x->metrics_dirty = true;
		xf_log(1, "peer %llu (\"%s\"): authentication failed: connection closed",
		       (unsigned long long)p->id, p->name);
	}
	xf_peer_fail(p, err);
}

/**
 * xf_on_hello() - a peer's HELLO arrived: the listener answers with its
 *	own; the connecting side (the listener's HELLO in) proves itself. The
 *	listener proves itself only to a peer that did, in xf_on_auth().
 * @p: the peer
 * @buf: the message
 * @len: its length
 */
void xf_on_hello(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	int err;

	if (p->hello_in) {
		xf_peer_fail(p, -EPROTO);
		return;
	}
	err = xf_hello_parse(p, buf, len);
	if (!err) {
		p->hello_in = true;
		err = p->incoming ? xf_hello_send(p) : xf_auth_send(p);
	}
	if (err)
		auth_failed(p, err);
}

/**
 * xf_on_auth() - a peer's proof arrived: it is ready, or refused
 * @p: the peer
 * @buf: the message
 * @len: its length
 */
void xf_on_auth(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	int err = p->hello_in && !p->authed ? xf_auth_check(p, buf, len) : -EPROTO;

	if (p->incoming && err == -EACCES)
		xf_auth_refuse(p);
	else if (p->incoming && !err)
		err = xf_auth_send(p);		/* our proof, and the peer's admission */
	if (err) {
		auth_failed(p, err);
		return;
	}
	p->state = XF_PEER_READY;
	p->x->st.peers++;
	xf_cma_offer(p);	/* both sides: each may initiate */
}

/**
 * xf_peer_fail() - the connection is broken: fail everything on it
 * @p: the peer
 * @err: why (-ECONNRESET, -ETIMEDOUT, -EPROTO, -ECANCELED ...)
 */
/**
 * xf_peer_ep_close() - close the peer's UCX endpoint (if open)
 * @p: the peer, failed
 */
void xf_peer_ep_close(struct hkv_xfer_peer *p)
{
	ucp_request_param_t rp = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
		/* force: completes every outstanding operation with an error; a
		 * peer that never authenticated has none, and its close flushes */
		.flags = p->gentle && !p->authed ? 0 : UCP_EP_CLOSE_FLAG_FORCE,
	};
	void *r;

	if (!p->ep)
		return;
	r = ucp_ep_close_nbx(p->ep, &rp);
	if (UCS_PTR_IS_PTR(r))
		p->close_req = r;
	p->ep = NULL;
}

void xf_peer_fail(struct hkv_xfer_peer *p, int err)
{
	if (p->state == XF_PEER_FAILED)
		return;
	if (p->state == XF_PEER_READY)
		p->x->st.peers--;
	p->state = XF_PEER_FAILED;
	p->error = err;
	if (err != -ECANCELED) {
		p->x->st.peer_failures++;
		p->st.peer_failures++;
	}
	p->x->metrics_dirty = true;
	xf_tx_fail_peer(p, err);
	xf_grants_end(p, err);
	xf_cma_close(p);
	if (!p->linger)
		xf_peer_ep_close(p);	/* else xf_peers_reap() closes it */
	xf_rregs_destroy(p);
}

/* true when the forced close (if any) has finished */
bool xf_peer_closed(struct hkv_xfer_peer *p)
{
	if (p->close_req && ucp_request_check_status(p->close_req) != UCS_INPROGRESS) {
		ucp_request_free(p->close_req);
		p->close_req = NULL;
	}
	return !p->close_req;
}

/**
 * xf_peers_reap() - act on UCX-reported failures, free dead peers nobody holds
 * @x: the endpoint
 */
void xf_peers_reap(struct hkv_xfer *x)
{
	struct hkv_xfer_peer *p, *next;

	for (p = x->peers; p; p = next) {
		next = p->next;
		if (p->state == XF_PEER_CONNECTING && !p->error && xf_coarse_ns() >= p->auth_deadline) {
			p->x->st.auth_failures++;
			p->x->metrics_dirty = true;
			xf_log(1, "peer %llu: did not authenticate in time: connection closed",
			       (unsigned long long)p->id);
			xf_peer_fail(p, -ETIMEDOUT);
		}
		if (p->error && p->state != XF_PEER_FAILED) {
			xf_log(2, "peer %llu: connection failed: %s", (unsigned long long)p->id,
			       strerror(-p->error));
			xf_peer_fail(p, p->error);
		}
		/* a refused peer's connection: closed once it closed it or
		 * the linger passed */
		if (p->state == XF_PEER_FAILED && p->ep &&
		    (p->ep_broken || xf_coarse_ns() >= p->linger))
			xf_peer_ep_close(p);
		/* an authenticated peer waits for hkv_xfer_accept() to hand it out */
		if (p->state == XF_PEER_FAILED && !p->ep && xf_peer_closed(p) && !p->ntx &&
		    (p->handed_out ? p->closing : !(p->incoming && p->authed)) && !p->ngrants)
			xf_peer_free(p);
	}
}

HKV_API uint64_t hkv_xfer_peer_id(const struct hkv_xfer_peer *p)
{
	return p ? p->id : 0;
}

HKV_API uint64_t hkv_xfer_peer_npages(const struct hkv_xfer_peer *p)
{
	return p ? p->npages : 0;
}

HKV_API int hkv_xfer_peer_error(const struct hkv_xfer_peer *p)
{
	if (!p)
		return -EINVAL;
	if (xf_forked(p->x))
		return -ECHILD;
	return p->error;	/* noted broken counts, before the next step acts on it */
}

HKV_API const char *hkv_xfer_peer_name(const struct hkv_xfer_peer *p)
{
	return p && p->authed ? p->name : NULL;
}
