// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stats.c - transfer stats per endpoint and per peer: counters, a
 * log-linear latency histogram (32 sub-buckets per power of two: a
 * percentile is within 1/32 of the truth), the last HKV_XFER_RECENT
 * transfers for "slowest recent", and the text/JSON dump.
 */
#include <stddef.h>
#include <stdio.h>

#include "internal.h"

static unsigned hist_idx(uint64_t v)
{
	unsigned e;

	if (v < (1u << XF_HIST_SUB_BITS))
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);
	return ((e - XF_HIST_SUB_BITS) << XF_HIST_SUB_BITS) +
	       (unsigned)(v >> (e - XF_HIST_SUB_BITS));
}

/* the highest value bucket i holds */
static uint64_t hist_val(unsigned i)
{
	unsigned e;
	uint64_t m;

	if (i < (2u << XF_HIST_SUB_BITS))
		return i;
	e = (i >> XF_HIST_SUB_BITS) + XF_HIST_SUB_BITS - 1;
	m = (i & ((1u << XF_HIST_SUB_BITS) - 1)) | (1u << XF_HIST_SUB_BITS);
	return ((m + 1) << (e - XF_HIST_SUB_BITS)) - 1;
}

void xf_hist_add(struct xf_hist *h, uint64_t v)
{
	unsigned i = hist_idx(v);

	if (i >= XF_HIST_BUCKETS)
		i = XF_HIST_BUCKETS - 1;
	h->count[i]++;
	h->n++;
	if (v > h->max)
		h->max = v;
}

/**
 * xf_hist_pct() - a percentile of the histogram
 * @h: the histogram
 * @pct: 0..100
 *
 * Return: the value (bucket's upper bound, capped at the maximum), 0 if empty.
 */
uint64_t xf_hist_pct(const struct xf_hist *h, double pct)
{
	uint64_t want, seen = 0;
	unsigned i;

	if (!h->n)
		return 0;
	want = (uint64_t)(pct / 100.0 * (double)h->n + 0.5);
	if (want < 1)
		want = 1;
	for (i = 0; i < XF_HIST_BUCKETS; i++) {
		seen += h->count[i];
		if (seen >= want)
			return XF_MIN(hist_val(i), h->max);
	}
	return h->max;
}

void xf_stats_submit(struct xf_stats *s, const struct xf_tx *tx)
{
	s->submitted++;
	s->ops += tx->nops;
	s->extents_in += tx->nlocal;
}

void xf_stats_done(struct xf_stats *s, const struct xf_tx *tx, uint64_t ns)
{
	struct hkv_xfer_slow *r;

	s->transfers++;
	if (tx->result) {
		s->failures++;
		if (!tx->granted && tx->result != -ETIMEDOUT)
			s->refused++;
	} else {
		s->pages += tx->pages;
		s->bytes += tx->bytes;
		if (tx->op == HKV_XFER_OP_PUT)
			s->puts++;
		else
			s->gets++;
		xf_hist_add(&s->lat, ns);
		xf_hist_add(&s->grant, tx->t_grant - tx->t_submit);
	}
	r = &s->recent[s->recent_head];
	s->recent_head = (s->recent_head + 1) % HKV_XFER_RECENT;
	if (s->nrecent < HKV_XFER_RECENT)
		s->nrecent++;
	r->id = tx->id;
	r->peer = tx->peer_id;
	r->ns = ns;
	r->grant_ns = tx->granted ? tx->t_grant - tx->t_submit : 0;
	r->pages = tx->pages;
	r->ops = tx->nops;
	r->result = tx->result;
}

static void slowest(const struct xf_stats *s, struct hkv_xfer_stats *st)
{
	unsigned i, j, n = 0;

	for (i = 0; i < s->nrecent; i++) {
		const struct hkv_xfer_slow *r = &s->recent[i];

		/* insertion into the sorted top HKV_XFER_SLOWEST */
		for (j = n; j > 0 && st->slow[j - 1].ns < r->ns; j--)
			if (j < HKV_XFER_SLOWEST)
				st->slow[j] = st->slow[j - 1];
		if (j < HKV_XFER_SLOWEST) {
			st->slow[j] = *r;
			if (n < HKV_XFER_SLOWEST)
				n++;
		}
	}
	st->nslow = n;
}

static void fill(const struct xf_stats *s, struct hkv_xfer_stats *st)
{
	st->transfers = s->transfers;
	st->failures = s->failures;
	st->timeouts = s->timeouts;
	st->refused = s->refused;
	st->puts = s->puts;
	st->gets = s->gets;
	st->ops = s->ops;
	st->pages = s->pages;
	st->bytes = s->bytes;
	st->extents_in = s->extents_in;
	st->ops_per_transfer = s->submitted ? (double)s->ops / (double)s->submitted : 0;
	st->max_ops_inflight = s->max_ops_inflight;
	st->grants = s->grants;
	st->grants_refused = s->grants_refused;
	st->grants_active = s->grants_active;
	st->peer_failures = s->peer_failures;
	st->lat_p50_ns = xf_hist_pct(&s->lat, 50);
	st->lat_p99_ns = xf_hist_pct(&s->lat, 99);
	st->lat_max_ns = s->lat.max;
	st->grant_p50_ns = xf_hist_pct(&s->grant, 50);
	slowest(s, st);
	st->auth_failures = s->auth_failures;
	st->grants_expired = s->grants_expired;
	st->grants_over_limit = s->grants_over_limit;
	st->grant_mem = s->grant_mem;
	st->grant_mem_peak = s->grant_mem_peak;
	st->grants_busy = s->grants_busy;
	st->grant_pages = s->grant_pages;
	st->grant_bytes = s->grant_bytes;
	st->peers_rejected = s->peers_rejected;
	st->cma_refused = s->cma_refused;
	st->cma_calls = s->cma_calls;
	st->cma_runs = s->cma_runs;
	st->cma_bytes = s->cma_bytes;
	st->cma_faults = s->cma_faults;
}

/**
 * xf_cma_paths() - the peers on the single copy now, each way
 * @x: the endpoint
 * @peer: one of its peers, or NULL for all of them
 * @out: receives the peers that copy for our transfers (cma_out)
 * @in: receives the peers we copy for (cma_in)
 */
void xf_cma_paths(const struct hkv_xfer *x, const struct hkv_xfer_peer *peer, uint64_t *out,
		  uint64_t *in)
{
	const struct hkv_xfer_peer *p;

	*out = *in = 0;
	for (p = x->peers; p; p = p->next)
		if (!peer || p == peer) {
			*out += p->cma_out;
			*in += p->cma_in;
		}
}

/* the first layout of struct hkv_xfer_stats: up to @slow */
#define XF_STATS_V1	offsetof(struct hkv_xfer_stats, auth_failures)

HKV_API int hkv_xfer_stats(const struct hkv_xfer *x, const struct hkv_xfer_peer *peer,
			   struct hkv_xfer_stats *st)
{
	struct hkv_xfer_stats full;
	size_t sz;

	if (!x || !st || st->sz < XF_STATS_V1 || (peer && peer->x != x))
		return -EINVAL;
	if (xf_forked(x))
		return -ECHILD;
	sz = XF_MIN(st->sz, sizeof(full));
	memset(&full, 0, sizeof(full));
	fill(peer ? &peer->st : &x->st, &full);
	full.peers = peer ? peer->state == XF_PEER_READY : x->st.peers;
	if (peer)
		full.grant_mem = peer->grant_mem;
	xf_cma_paths(x, peer, &full.cma_out, &full.cma_in);
	full.sz = st->sz;
	memcpy(st, &full, sz);
	return 0;
}

/* every field of the stats, once: the JSON and the text are made from it */
enum { F_U64, F_DBL };
#define F(name, type)	{ #name, offsetof(struct hkv_xfer_stats, name), type }
static const struct xf_field {
	const char *name;
	size_t off;
	int type;
} fields[] = {
	F(peers, F_U64), F(transfers, F_U64), F(failures, F_U64), F(timeouts, F_U64),
	F(refused, F_U64), F(puts, F_U64), F(gets, F_U64), F(ops, F_U64), F(pages, F_U64),
	F(bytes, F_U64), F(extents_in, F_U64), F(ops_per_transfer, F_DBL),
	F(max_ops_inflight, F_U64), F(grants, F_U64), F(grants_refused, F_U64),
	F(grants_active, F_U64), F(peer_failures, F_U64), F(lat_p50_ns, F_U64),
	F(lat_p99_ns, F_U64), F(lat_max_ns, F_U64), F(grant_p50_ns, F_U64),
	F(auth_failures, F_U64), F(grants_expired, F_U64), F(grants_over_limit, F_U64),
	F(grant_mem, F_U64), F(grant_mem_peak, F_U64), F(grants_busy, F_U64),
	F(grant_pages, F_U64), F(grant_bytes, F_U64), F(peers_rejected, F_U64),
	F(cma_out, F_U64), F(cma_in, F_U64), F(cma_refused, F_U64), F(cma_calls, F_U64),
	F(cma_runs, F_U64), F(cma_bytes, F_U64), F(cma_faults, F_U64),
};
#undef F
#define S(name)	{ #name, offsetof(struct hkv_xfer_slow, name), F_U64 }
static const struct xf_field slow_fields[] = {
	S(id), S(peer), S(ns), S(grant_ns), S(pages), S(ops),
};
#undef S

static void put_fields(FILE *f, const void *base, const struct xf_field *fl, unsigned n,
		       bool json)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		const char *p = (const char *)base + fl[i].off;

		if (json)
			fprintf(f, "%s\"%s\":", i ? "," : "", fl[i].name);
		else
			fprintf(f, "%s%s ", i % 6 ? ", " : i ? "\n  " : "  ", fl[i].name);
		if (fl[i].type == F_DBL)
			fprintf(f, "%.3f", *(const double *)p);
		else
			fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p);
	}
}

static void print_one(FILE *f, const struct hkv_xfer_stats *st, bool json)
{
	unsigned i;

	if (json)
		fputc('{', f);
	put_fields(f, st, fields, sizeof(fields) / sizeof(fields[0]), json);
	fputs(json ? ",\"slowest\":[" : "\n", f);
	for (i = 0; i < st->nslow; i++) {
		if (json)
			fprintf(f, "%s{", i ? "," : "");
		else
			fprintf(f, "  slow %u:", i);
		put_fields(f, &st->slow[i], slow_fields,
			   sizeof(slow_fields) / sizeof(slow_fields[0]), json);
		fprintf(f, json ? ",\"result\":%d}" : ", result %d\n", st->slow[i].result);
	}
	fputs(json ? "]}" : "", f);
}

static int peer_error(const struct hkv_xfer_peer *p)
{
	return p->error;
}

HKV_API int hkv_xfer_stats_print(const struct hkv_xfer *x, FILE *f, unsigned flags)
{
	struct hkv_xfer_stats st = { .sz = sizeof(st) };
	const struct hkv_xfer_peer *p;
	bool json = flags & HKV_PRINT_JSON;

	if (!x || !f || flags & ~HKV_PRINT_JSON)
		return -EINVAL;
	if (xf_forked(x))
		return -ECHILD;
	hkv_xfer_stats(x, NULL, &st);
	if (json)
		fprintf(f, "{\"pool\":%llu,\"ranges\":%u,\"endpoint\":",
			(unsigned long long)x->pool_id, x->nregs);
	else
		fprintf(f, "endpoint (pool %llu, %u ranges):\n", (unsigned long long)x->pool_id,
			x->nregs);
	print_one(f, &st, json);
	if (json)
		fputs(",\"per_peer\":[", f);
	for (p = x->peers; p; p = p->next) {
		hkv_xfer_stats(x, p, &st);
		if (json)
			fprintf(f, "%s{\"peer\":%llu,\"error\":%d,\"stats\":", p == x->peers ? "" : ",",
				(unsigned long long)p->id, peer_error(p));
		else
			fprintf(f, "peer %llu (error %d):\n", (unsigned long long)p->id,
				peer_error(p));
		print_one(f, &st, json);
		if (json)
			fputc('}', f);
	}
	fputs(json ? "]}\n" : "", f);
	return ferror(f) ? -EIO : 0;
}
