// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * stats.c - transfer stats per endpoint and per peer: counters, a
 * log-linear latency histogram (32 sub-buckets per power of two: a
 * percentile is within 1/32 of the truth), the last HKV_XFER_RECENT
 * transfers for "slowest recent", and the text/JSON dump.
 */
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
}

HKV_API int hkv_xfer_stats(const struct hkv_xfer *x, const struct hkv_xfer_peer *peer,
			   struct hkv_xfer_stats *st)
{
	size_t sz;

	if (!x || !st || st->sz < sizeof(*st) || (peer && peer->x != x))
		return -EINVAL;
	sz = st->sz;
	memset(st, 0, sizeof(*st));
	st->sz = sz;
	fill(peer ? &peer->st : &x->st, st);
	st->peers = peer ? peer->state == XF_PEER_READY : x->st.peers;
	return 0;
}

static void print_json(FILE *f, const struct hkv_xfer_stats *st)
{
	unsigned i;

	fprintf(f, "{\"transfers\":%llu,\"failures\":%llu,\"timeouts\":%llu,\"refused\":%llu,"
		"\"puts\":%llu,\"gets\":%llu,\"ops\":%llu,\"pages\":%llu,\"bytes\":%llu,"
		"\"extents_in\":%llu,\"ops_per_transfer\":%.3f,\"max_ops_inflight\":%llu,"
		"\"grants\":%llu,\"grants_refused\":%llu,\"grants_active\":%llu,"
		"\"peer_failures\":%llu,\"latency_ns\":{\"p50\":%llu,\"p99\":%llu,\"max\":%llu},"
		"\"grant_p50_ns\":%llu,\"slowest\":[",
		(unsigned long long)st->transfers, (unsigned long long)st->failures,
		(unsigned long long)st->timeouts, (unsigned long long)st->refused,
		(unsigned long long)st->puts, (unsigned long long)st->gets,
		(unsigned long long)st->ops, (unsigned long long)st->pages,
		(unsigned long long)st->bytes, (unsigned long long)st->extents_in,
		st->ops_per_transfer, (unsigned long long)st->max_ops_inflight,
		(unsigned long long)st->grants, (unsigned long long)st->grants_refused,
		(unsigned long long)st->grants_active, (unsigned long long)st->peer_failures,
		(unsigned long long)st->lat_p50_ns, (unsigned long long)st->lat_p99_ns,
		(unsigned long long)st->lat_max_ns, (unsigned long long)st->grant_p50_ns);
	for (i = 0; i < st->nslow; i++)
		fprintf(f, "%s{\"id\":%llu,\"peer\":%llu,\"ns\":%llu,\"grant_ns\":%llu,"
			"\"pages\":%llu,\"ops\":%llu,\"result\":%d}", i ? "," : "",
			(unsigned long long)st->slow[i].id, (unsigned long long)st->slow[i].peer,
			(unsigned long long)st->slow[i].ns, (unsigned long long)st->slow[i].grant_ns,
			(unsigned long long)st->slow[i].pages, (unsigned long long)st->slow[i].ops,
			st->slow[i].result);
	fputc(']', f);
}

static void print_text(FILE *f, const char *who, const struct hkv_xfer_stats *st)
{
	fprintf(f, "%s: %llu transfers (%llu failed, %llu timed out, %llu refused), "
		"%llu ops (%.2f per transfer), %llu bytes\n"
		"  latency p50 %.1f us, p99 %.1f us, max %.1f us; grant p50 %.1f us; "
		"grants given %llu (refused %llu, active %llu); peer failures %llu\n",
		who, (unsigned long long)st->transfers, (unsigned long long)st->failures,
		(unsigned long long)st->timeouts, (unsigned long long)st->refused,
		(unsigned long long)st->ops, st->ops_per_transfer,
		(unsigned long long)st->bytes, st->lat_p50_ns / 1e3, st->lat_p99_ns / 1e3,
		st->lat_max_ns / 1e3, st->grant_p50_ns / 1e3, (unsigned long long)st->grants,
		(unsigned long long)st->grants_refused, (unsigned long long)st->grants_active,
		(unsigned long long)st->peer_failures);
}

HKV_API int hkv_xfer_stats_print(const struct hkv_xfer *x, FILE *f, unsigned flags)
{
	struct hkv_xfer_stats st = { .sz = sizeof(st) };
	const struct hkv_xfer_peer *p;
	char who[64];

	if (!x || !f || flags & ~HKV_PRINT_JSON)
		return -EINVAL;
	hkv_xfer_stats(x, NULL, &st);
	if (flags & HKV_PRINT_JSON) {
		fprintf(f, "{\"pool\":%llu,\"registrations\":%u,\"peers\":%llu,\"endpoint\":",
			(unsigned long long)x->pool_id, x->nregs, (unsigned long long)st.peers);
		print_json(f, &st);
		fprintf(f, ",\"per_peer\":[");
		for (p = x->peers; p; p = p->next) {
			hkv_xfer_stats(x, p, &st);
			fprintf(f, "%s{\"peer\":%llu,\"error\":%d,\"stats\":", p == x->peers ? "" : ",",
				(unsigned long long)p->id, hkv_xfer_peer_error(p));
			print_json(f, &st);
			fputc('}', f);
		}
		fprintf(f, "]}\n");
	} else {
		print_text(f, "endpoint", &st);
		for (p = x->peers; p; p = p->next) {
			hkv_xfer_stats(x, p, &st);
			snprintf(who, sizeof(who), "peer %llu", (unsigned long long)p->id);
			print_text(f, who, &st);
		}
	}
	return ferror(f) ? -EIO : 0;
}
