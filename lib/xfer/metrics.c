// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * metrics.c - an endpoint's transfer figures into its pool's stats page
 * (hkv_page_set_xfer(), published with the page's next publication): the
 * endpoint's counters, its latency histogram folded into the page's fixed
 * buckets, and the first HKV_PAGE_XFER_PEERS peers; as a target, the
 * grants its peers hold and the ones it refused; the single copy's figures
 * (the peers on it either way, what this endpoint copied for them). Called
 * as a transfer ends, from a progress step after the figures that change
 * without a transfer of ours changed (grants, single copy; at most every
 * XF_METRICS_NS: a clock read otherwise) and when the endpoint is
 * destroyed.
 */
#include "internal.h"

#define XF_METRICS_NS	100000000ull	/* 100 ms */

/* bucket upper bounds of the page, ns */
static const uint64_t lat_le[HKV_PAGE_XFER_LAT] = {
	10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000,
	10000000, 100000000, 1000000000,
};

/* the highest value bucket i of an xf_hist holds (stats.c's layout) */
static uint64_t bucket_top(unsigned i)
{
	unsigned e;
	uint64_t m;

	if (i < (2u << XF_HIST_SUB_BITS))
		return i;
	e = (i >> XF_HIST_SUB_BITS) + XF_HIST_SUB_BITS - 1;
	m = (i & ((1u << XF_HIST_SUB_BITS) - 1)) | (1u << XF_HIST_SUB_BITS);
	return ((m + 1) << (e - XF_HIST_SUB_BITS)) - 1;
}

static void fold(const struct xf_hist *h, struct hkv_page_xfer *p)
{
	for (unsigned i = 0; i < XF_HIST_BUCKETS; i++) {
		uint64_t c = h->count[i], top;

		if (!c)
			continue;
		top = XF_MIN(bucket_top(i), h->max);
		p->lat_sum_ns += c * top;
		for (unsigned k = 0; k < HKV_PAGE_XFER_LAT; k++)
			if (top <= lat_le[k])
				p->lat_count[k] += c;
	}
	p->lat_n = h->n;
}

/* the figures onto the page: a zeroed page-sized struct, so only when due
 * (xf_metrics_publish() runs every progress step while they changed) */
static void publish(struct hkv_xfer *x)
{
	struct hkv_page_xfer p = { .sz = sizeof(p), .endpoints = 1 };
	const struct hkv_xfer_peer *q;

	p.transfers = x->st.transfers;
	p.failures = x->st.failures;
	p.timeouts = x->st.timeouts;
	p.refused = x->st.refused;
	p.ops = x->st.ops;
	p.bytes = x->st.bytes;
	p.pages = x->st.pages;
	p.peer_failures = x->st.peer_failures;
	p.grants = x->st.grants;
	p.grants_active = x->st.grants_active;
	p.grant_pages = x->st.grant_pages;
	p.grant_bytes = x->st.grant_bytes;
	p.grant_mem = x->st.grant_mem;
	p.grants_refused = x->st.grants_refused;
	p.grants_refused_limit = x->st.grants_over_limit;
	p.grants_refused_busy = x->st.grants_busy;
	p.grants_expired = x->st.grants_expired;
	p.auth_failures = x->st.auth_failures;
	p.peers_rejected = x->st.peers_rejected;
	p.cma_refused = x->st.cma_refused;
	p.cma_calls = x->st.cma_calls;
	p.cma_runs = x->st.cma_runs;
	p.cma_bytes = x->st.cma_bytes;
	p.cma_faults = x->st.cma_faults;
	memcpy(p.lat_le_ns, lat_le, sizeof(lat_le));
	fold(&x->st.lat, &p);
	xf_cma_paths(x, NULL, &p.cma_out, &p.cma_in);
	for (q = x->peers; q && p.npeers < HKV_PAGE_XFER_PEERS; q = q->next) {
		struct hkv_page_grants *pg = &p.peer_grants[p.npeers];
		struct hkv_page_peer *pp = &p.peer[p.npeers++];

		pp->peer = q->id;
		pp->transfers = q->st.transfers;
		pp->failures = q->st.failures;
		pp->bytes = q->st.bytes;
		pg->peer = q->id;
		pg->grants = q->st.grants;
		pg->active = q->st.grants_active;
		pg->pages = q->st.grant_pages;
		pg->bytes = q->st.grant_bytes;
		pg->refused = q->st.grants_refused;
		pg->refused_limit = q->st.grants_over_limit;
		pg->refused_busy = q->st.grants_busy;
		pg->expired = q->st.grants_expired;
	}
	x->metrics_dirty = false;
	hkv_page_set_xfer(x->pool, &p);	/* -ENOENT: the pool has no page */
}

/**
 * xf_metrics_publish() - hand the pool's stats page this endpoint's figures
 * @x: the endpoint
 * @force: now, whatever the time since the last one
 */
void xf_metrics_publish(struct hkv_xfer *x, bool force)
{
	/* an endpoint progresses on one thread: the last one this thread
	 * published, and when (another endpoint publishes at once) */
	static __thread const struct hkv_xfer *last_x;
	static __thread uint64_t last;
	uint64_t now = xf_coarse_ns();

	if (!force && x == last_x && now - last < XF_METRICS_NS) {
		/* due later: a progress step publishes them then, so the last
		 * transfers of a burst reach the page too */
		x->metrics_dirty = true;
		return;
	}
	last_x = x;
	last = now;
	publish(x);
}
