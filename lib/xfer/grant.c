// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * grant.c - the target side of a transfer. Before a peer may write into
 * or read from this pool by RMA it asks for a grant (GRANT_REQ): the pages
 * must be in range and allocated here, a put's destination must not name a
 * page twice, the peer must hold fewer than max_grants grants, and the
 * application's access callback must agree (that is where it pins the
 * units it owns). RELEASE, or the connection's failure, ends the grant and
 * tells the application how the transfer ended.
 *
 * Grants are bounded: the state of one peer's grants (the grant and its
 * extents) and of all peers' stays under max_grant_mem and
 * max_grant_mem_all (-ENOBUFS past them), and a grant not released by its
 * deadline (grant_timeout_ms) closes the peer's connection: every grant it
 * holds ends with -ETIMEDOUT, and its pins go back, once UCX has cancelled
 * what still used its pages.
 */
#include <stddef.h>

#include "internal.h"

static uint64_t grant_mem(unsigned n)
{
	return sizeof(struct xf_grant) + (uint64_t)n * sizeof(struct hkv_extent);
}

static int grant_check(struct hkv_xfer_peer *p, const struct xf_wire_grant_req *rq)
{
	struct hkv_xfer *x = p->x;
	uint64_t pages, mem = grant_mem(rq->n);
	int err;

	if (p->ngrants >= x->max_grants) {
		x->st.grants_busy++;
		p->st.grants_busy++;
		return -EBUSY;
	}
	if (p->grant_mem + mem > x->max_grant_mem || x->st.grant_mem + mem > x->max_grant_mem_all) {
		x->st.grants_over_limit++;
		p->st.grants_over_limit++;
		return -ENOBUFS;
	}
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
	memset(&g->pending, 0, sizeof(*g) - offsetof(struct xf_grant, pending));
	g->peer = p;
	g->id = rq->id;
	g->op = rq->op;
	g->n = rq->n;
	g->mem = grant_mem(rq->n);
	g->deadline = xf_deadline(p->x->grant_timeout_ms);
	p->grant_mem += g->mem;
	p->x->st.grant_mem += g->mem;
	if (p->x->st.grant_mem > p->x->st.grant_mem_peak)
		p->x->st.grant_mem_peak = p->x->st.grant_mem;
	if (p->grant_mem > p->st.grant_mem_peak)
		p->st.grant_mem_peak = p->grant_mem;
	for (unsigned i = 0; i < rq->n; i++)
		g->pages += rq->ext[i].len;
	g->bytes_expected = g->pages * p->x->page_bytes;
	p->x->st.grant_pages += g->pages;
	p->st.grant_pages += g->pages;
	p->x->st.grant_bytes += g->bytes_expected;
	p->st.grant_bytes += g->bytes_expected;
	g->next = p->grants;
	p->grants = g;
	p->ngrants++;
	return 0;
}

static void grant_finish(struct hkv_xfer_peer *p, struct xf_grant *g);

static void grant_end(struct hkv_xfer_peer *p, struct xf_grant *g, int result)
{
	struct hkv_xfer *x = p->x;

	if (x->access)
		x->access(x->access_ctx, p, HKV_XFER_ACCESS_END, g->op, g->ext, g->n, result);
	x->st.grants_active--;
	p->st.grants_active--;
	p->ngrants--;
	p->grant_mem -= g->mem;
	x->st.grant_mem -= g->mem;
	x->st.grant_pages -= g->pages;
	p->st.grant_pages -= g->pages;
	x->st.grant_bytes -= g->bytes_expected;
	p->st.grant_bytes -= g->bytes_expected;
	x->metrics_dirty = true;
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
		xf_peer_error(p, -EPROTO);
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
	x->metrics_dirty = true;
	xf_wire_hdr_set(&rep.h, XF_AM_GRANT_REP);
	rep.id = rq->id;
	rep.result = err;
	err = xf_am_send(p, XF_AM_GRANT_REP, &rep, sizeof(rep));
	if (err)
		xf_peer_error(p, err);
}

/**
 * xf_on_release() - the initiator is done with a grant
 * @p: the peer
 * @buf: the RELEASE
 * @len: its length
 */
void xf_on_release(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	const struct xf_wire_result *rl = xf_result_msg(p, buf, len, XF_AM_RELEASE);
	struct xf_grant **gp, *g;

	if (!rl)
		return;
	for (gp = &p->grants; (g = *gp); gp = &g->next)
		if (g->id == rl->id && !g->released && !g->ended) {
			g->released = true;
			if (!g->result)
				g->result = rl->result > 0 ? -EIO : rl->result;
			/* two-sided put: every byte must have come before RELEASE;
			 * a single-copy put knew it at each CMA_REP (no DONE) */
			if (!g->result && rl->nops && g->op == HKV_XFER_OP_PUT && !g->cma)
				g->answer = true;	/* the initiator waits for DONE */
			if (g->pending) {	/* ends once UCX is done with its pages */
				p->x->grants_closing++;
				return;
			}
			/* nothing uses its pages: it ends before the peer's next
			 * request (a single-copy put completed before this) */
			*gp = g->next;
			grant_finish(p, g);
			return;
		}
	xf_log(3, "peer %llu: release of unknown grant %llu", (unsigned long long)p->id,
	       (unsigned long long)rl->id);
}

struct xf_grant *xf_grant_find(struct hkv_xfer_peer *p, uint64_t id, unsigned op)
{
	struct xf_grant *g;

	for (g = p->grants; g; g = g->next)
		if (g->id == id)
			return g->op == op ? g : NULL;
	return NULL;
}

/* [page, page + npages) inside one extent of the grant */
bool xf_grant_covers(const struct xf_grant *g, uint64_t page, uint64_t npages)
{
	unsigned i;

	if (!npages)
		return false;
	for (i = 0; i < g->n; i++)
		if (page >= g->ext[i].start && page - g->ext[i].start < g->ext[i].len &&
		    npages <= g->ext[i].len - (page - g->ext[i].start))
			return true;
	return false;
}

/* a released or failed grant whose pages nothing uses any more: end it */
static void grant_finish(struct hkv_xfer_peer *p, struct xf_grant *g)
{
	bool answer = g->answer;
	int result = g->result;

	if ((answer || (g->cma && g->op == HKV_XFER_OP_PUT)) && !result &&
	    g->bytes_done != g->bytes_expected)
		result = -EIO;		/* a put that lost bytes (or skipped runs) */
	if (answer && p->state == XF_PEER_READY) {
		struct xf_wire_result d = { .id = g->id, .result = result };
		int err;

		xf_wire_hdr_set(&d.h, XF_AM_DONE);
		err = xf_am_send(p, XF_AM_DONE, &d, sizeof(d));
		if (err)
			result = err;
	}
	grant_end(p, g, result);
}

/**
 * xf_grants_poll() - end grants that are released (or failed) and idle
 * @x: the endpoint (called while x->grants_closing, the number of grants
 *	released or failed and not yet ended, is not 0)
 */
void xf_grants_poll(struct hkv_xfer *x)
{
	struct hkv_xfer_peer *p;
	struct xf_grant **gp, *g;

	for (p = x->peers; p; p = p->next)
		for (gp = &p->grants; (g = *gp);) {
			if ((g->released || g->ended) && !g->pending) {
				*gp = g->next;
				x->grants_closing--;
				grant_finish(p, g);
				continue;
			}
			gp = &g->next;
		}
}

/**
 * xf_grants_end() - end every grant a peer holds (its connection ended);
 *	grants whose pages a receive or send still uses end once it completes
 * @p: the peer
 * @err: the result the application sees
 */
void xf_grants_end(struct hkv_xfer_peer *p, int err)
{
	struct xf_grant **gp, *g;

	for (gp = &p->grants; (g = *gp);) {
		if (!g->released && !g->ended)
			p->x->grants_closing++;
		g->ended = true;
		g->result = err;
		g->answer = false;
		if (!g->pending) {
			*gp = g->next;
			p->x->grants_closing--;
			grant_end(p, g, err);
			continue;
		}
		gp = &g->next;
	}
}

/**
 * xf_grants_expire() - a peer that let a grant pass its deadline is
 *	closed: its grants end with -ETIMEDOUT and their pins go back
 * @x: the endpoint
 * @now: xf_coarse_ns()
 */
void xf_grants_expire(struct hkv_xfer *x, uint64_t now)
{
	struct hkv_xfer_peer *p;
	struct xf_grant *g;

	for (p = x->peers; p; p = p->next) {
		if (p->state != XF_PEER_READY || p->error)
			continue;
		for (g = p->grants; g; g = g->next)
			if (!g->ended && now >= g->deadline)
				break;
		if (!g)
			continue;
		xf_log(1, "peer %llu (\"%s\"): grant %llu passed its deadline: connection closed",
		       (unsigned long long)p->id, p->name, (unsigned long long)g->id);
		x->st.grants_expired++;
		p->st.grants_expired++;
		x->metrics_dirty = true;
		xf_peer_error(p, -ETIMEDOUT);
	}
}
