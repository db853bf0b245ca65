// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * grant.c - the target side of a transfer. Before a peer may write into
 * or read from this pool by RMA it asks for a grant (GRANT_REQ): the pages
 * must be in range and allocated here, a put's destination must not name a
 * page twice, the peer must hold fewer than max_grants grants, and the
 * application's access callback must agree (that is where it pins the
 * units it owns). RELEASE, or the connection's failure, ends the grant and
 * tells the application how the transfer ended.
 */
#include "internal.h"

static int grant_check(struct hkv_xfer_peer *p, const struct xf_wire_grant_req *rq)
{
	struct hkv_xfer *x = p->x;
	uint64_t pages;
	int err;

	if (p->ngrants >= x->max_grants)
		return -EBUSY;
	if (rq->op != HKV_XFER_OP_PUT && rq->op != HKV_XFER_OP_GET)
		return -EINVAL;
	err = xf_check_extents(rq->ext, rq->n, x->npages, &pages);
	if (!err && rq->op == HKV_XFER_OP_PUT)
		err = xf_check_disjoint(rq->ext, rq->n);
	if (!err)
		err = xf_check_allocated(x->pool, rq->ext, rq->n);
	if (!err && x->access)
		err = x->access(x->access_ctx, p, HKV_XFER_ACCESS_BEGIN, rq->op, rq->ext,
				rq->n, 0);
	return err > 0 ? -EINVAL : err;
}

static int grant_add(struct hkv_xfer_peer *p, const struct xf_wire_grant_req *rq)
{
	struct xf_grant *g = malloc(sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->ext = malloc(rq->n * sizeof(*g->ext));
	if (!g->ext) {
		free(g);
		return -ENOMEM;
	}
	memcpy(g->ext, rq->ext, rq->n * sizeof(*g->ext));
	g->id = rq->id;
	g->op = rq->op;
	g->n = rq->n;
	g->next = p->grants;
	p->grants = g;
	p->ngrants++;
	return 0;
}

static void grant_end(struct hkv_xfer_peer *p, struct xf_grant *g, int result)
{
	struct hkv_xfer *x = p->x;

	if (x->access)
		x->access(x->access_ctx, p, HKV_XFER_ACCESS_END, g->op, g->ext, g->n, result);
	x->st.grants_active--;
	p->st.grants_active--;
	p->ngrants--;
	free(g->ext);
	free(g);
}

/**
 * xf_on_grant_req() - a peer asks for pages of this pool
 * @p: the peer
 * @buf: the GRANT_REQ
 * @len: its length
 */
void xf_on_grant_req(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	const struct xf_wire_grant_req *rq = buf;
	struct xf_wire_result rep = { 0 };
	struct hkv_xfer *x = p->x;
	int err;

	if (!xf_wire_hdr_ok(buf, len, sizeof(*rq), XF_AM_GRANT_REQ) ||
	    rq->n > (len - sizeof(*rq)) / sizeof(rq->ext[0]) ||
	    len != sizeof(*rq) + rq->n * sizeof(rq->ext[0])) {
		xf_peer_fail(p, -EPROTO);
		return;
	}
	err = grant_check(p, rq);
	if (!err) {
		err = grant_add(p, rq);
		if (err && x->access)	/* BEGIN said yes: it gets its END */
			x->access(x->access_ctx, p, HKV_XFER_ACCESS_END, rq->op, rq->ext,
				  rq->n, err);
	}
	if (err) {
		x->st.grants_refused++;
		p->st.grants_refused++;
	} else {
		x->st.grants++;
		p->st.grants++;
		x->st.grants_active++;
		p->st.grants_active++;
	}
	xf_wire_hdr_set(&rep.h, XF_AM_GRANT_REP);
	rep.id = rq->id;
	rep.result = err;
	err = xf_am_send(p, XF_AM_GRANT_REP, &rep, sizeof(rep));
	if (err)
		xf_peer_fail(p, err);
}

/**
 * xf_on_release() - the initiator is done with a grant
 * @p: the peer
 * @buf: the RELEASE
 * @len: its length
 */
void xf_on_release(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	const struct xf_wire_result *rl = buf;
	struct xf_grant **gp, *g;

	if (!xf_wire_hdr_ok(buf, len, sizeof(*rl), XF_AM_RELEASE) || len != sizeof(*rl)) {
		xf_peer_fail(p, -EPROTO);
		return;
	}
	for (gp = &p->grants; (g = *gp); gp = &g->next)
		if (g->id == rl->id) {
			*gp = g->next;
			grant_end(p, g, rl->result > 0 ? -EIO : rl->result);
			return;
		}
	xf_log(3, "peer %llu: release of unknown grant %llu", (unsigned long long)p->id,
	       (unsigned long long)rl->id);
}

/**
 * xf_grants_end() - end every grant a peer holds (its connection ended)
 * @p: the peer
 * @err: the result the application sees
 */
void xf_grants_end(struct hkv_xfer_peer *p, int err)
{
	struct xf_grant *g;

	while ((g = p->grants)) {
		p->grants = g->next;
		grant_end(p, g, err);
	}
}
