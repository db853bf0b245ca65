// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * send.c - hkv-xfer send: replay the receiver's churn on an index-only
 * copy (where are its requests), then put request i of this pool onto
 * request i of the receiver, --depth transfers in flight, for the timed
 * rounds and one checked round; read everything back and compare.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hkv-xfer.h"
#include "../lib/json_writer.h"

struct slice {
	struct hkv_extent *l, *r;
	unsigned nl, nr;
	uint64_t pages, id;
};

static int plan_slices(const struct page_set *loc, const struct page_set *rem,
		       struct slice **out, unsigned *nout)
{
	unsigned n = XMIN(loc->nreq, rem->nreq), i;
	struct slice *s = calloc(n ? n : 1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		s[i].l = loc->ext + loc->first[i];
		s[i].nl = loc->first[i + 1] - loc->first[i];
		s[i].r = rem->ext + rem->first[i];
		s[i].nr = rem->first[i + 1] - rem->first[i];
		s[i].pages = loc->pages / loc->nreq;
	}
	*out = s;
	*nout = n;
	return 0;
}

static void fill_slice(struct hkv_pool *pool, const struct slice *s, uint64_t pb, uint64_t salt)
{
	uint64_t k = 0, p;
	unsigned i;

	for (i = 0; i < s->nl; i++)
		for (p = s->l[i].start; p < s->l[i].start + s->l[i].len; p++)
			pattern_fill(hkv_page_ptr(pool, p), pb, salt, k++);
}

static uint64_t check_slice(struct hkv_pool *pool, const struct slice *s, uint64_t pb, uint64_t salt)
{
	uint64_t k = 0, p, bad = 0, gs, gk;
	unsigned i;

	for (i = 0; i < s->nl; i++)
		for (p = s->l[i].start; p < s->l[i].start + s->l[i].len; p++, k++)
			if (pattern_check(hkv_page_ptr(pool, p), pb, &gs, &gk) || gs != salt || gk != k)
				bad++;
	return bad;
}

/* one round: every slice once, depth transfers in flight */
static int run_round(struct hkv_xfer *x, struct hkv_xfer_peer *peer, struct slice *s, unsigned n,
		     const struct args *a, bool get)
{
	unsigned next = 0, done = 0, i;
	int err;

	while (done < n) {
		while (next < n && next - done < a->depth) {
			struct hkv_xfer_req rq = {
				.sz = sizeof(rq), .local = s[next].l, .nlocal = s[next].nl,
				.remote = s[next].r, .nremote = s[next].nr,
				.flags = a->per_page && !get ? HKV_XFER_PER_PAGE : 0,
			};

			err = get ? hkv_xfer_get(peer, &rq, &s[next].id)
				  : hkv_xfer_put(peer, &rq, &s[next].id);
			if (err) {
				fprintf(stderr, "hkv-xfer send: submit: %s\n", strerror(-err));
				return err;
			}
			next++;
		}
		i = done;
		err = hkv_xfer_wait(x, s[i].id, 0);
		if (err) {
			fprintf(stderr, "hkv-xfer send: transfer %u: %s\n", i, strerror(-err));
			for (i++; i < next; i++)
				hkv_xfer_wait(x, s[i].id, 0);
			return err;
		}
		done++;
	}
	return 0;
}

int do_send(const struct args *a)
{
	struct hkv_xfer_stats st = { .sz = sizeof(st) };
	bool cma = false;
	struct hkv_pool *pool, *shadow;
	struct page_set loc, rem;
	struct hkv_xfer_peer *peer;
	struct slice *s = NULL;
	struct hkv_xfer *x;
	unsigned n = 0, r, i;
	uint64_t bad = 0, salt = 0, timed_bytes = 0;
	double t_total = 0, t0;
	int err, rc = EXIT_FAIL;

	if (make_pool(&a->pool, false, &pool, &loc))
		return EXIT_FAIL;
	if (make_pool(&a->remote, true, &shadow, &rem))
		goto out_pool;
	if (plan_slices(&loc, &rem, &s, &n))
		goto out_shadow;
	if (make_xfer(pool, a, &x))
		goto out_shadow;
	err = hkv_xfer_connect(x, a->addr, 0, &peer);
	if (err) {
		fprintf(stderr, "hkv-xfer send: connect to %s: %s\n", a->addr, strerror(-err));
		goto out_x;
	}
	if (a->read_only) {	/* the receiver decides: another sender's pages are refused */
		err = run_round(x, peer, s, n, a, true);
		if (a->json) {
			struct json j;

			json_begin(&j, stdout);
			json_str(&j, "role", "send");
			json_bool(&j, "read_only", true);
			json_i64(&j, "result", err);
			json_end(&j);
		} else {
			printf("read-only: %s\n", err ? strerror(-err) : "every get granted");
		}
		rc = err ? EXIT_FAIL : 0;
		goto out_peer;
	}
	/* the timed rounds, then one more that the receiver checks in full */
	for (r = 0; r <= a->rounds; r++) {
		bool check = r == a->rounds;

		if (check) {
			hkv_xfer_stats(x, peer, &st);
			cma = st.cma_out;
		}
		for (i = 0; i < n; i++)
			fill_slice(pool, &s[i], a->pool.page_bytes,
				   ((uint64_t)r * n + i + 1) | (check ? SALT_FULL : 0));
		t0 = now_s();
		if (run_round(x, peer, s, n, a, false))
			goto out_peer;
		if (!check) {
			t_total += now_s() - t0;
			for (i = 0; i < n; i++)
				timed_bytes += s[i].pages * a->pool.page_bytes;
		}
		if (!a->quiet && !a->json)
			fprintf(stderr, "round %u/%u%s: %.3f s\n", r + 1, a->rounds + 1,
				check ? " (checked in full)" : "", now_s() - t0);
	}
	if (a->readback) {
		struct args ga = *a;

		ga.per_page = false;
		for (i = 0; i < n; i++)
			fill_slice(pool, &s[i], a->pool.page_bytes, 0);	/* overwrite */
		if (run_round(x, peer, s, n, &ga, true))
			goto out_peer;
		for (i = 0; i < n; i++) {
			salt = ((uint64_t)a->rounds * n + i + 1) | SALT_FULL;
			bad += check_slice(pool, &s[i], a->pool.page_bytes, salt);
		}
		if (bad)
			fprintf(stderr, "hkv-xfer send: %" PRIu64 " pages read back wrong\n", bad);
	}
	rc = bad || hkv_check(pool) ? EXIT_FAIL : 0;
	if (a->json) {
		struct json j;

		json_begin(&j, stdout);
		json_str(&j, "role", "send");
		json_bool(&j, "per_page", a->per_page);
		/* the path the transfers took: the target copied (single copy) */
		json_bool(&j, "cma", cma);
		json_u64(&j, "transfers", st.transfers);
		json_u64(&j, "pages", st.pages);
		json_u64(&j, "bytes", st.bytes);
		json_u64(&j, "ops", st.ops);
		json_dbl(&j, "ops_per_transfer", st.ops_per_transfer);
		json_dbl(&j, "extents_per_transfer",
			 st.transfers ? (double)st.extents_in / st.transfers : 0);
		json_dbl(&j, "seconds", t_total);
		json_dbl(&j, "gbps", t_total > 0 ? timed_bytes / t_total / 1e9 : 0);
		json_dbl(&j, "lat_p50_us", st.lat_p50_ns / 1e3);
		json_dbl(&j, "lat_p99_us", st.lat_p99_ns / 1e3);
		json_dbl(&j, "lat_max_us", st.lat_max_ns / 1e3);
		json_dbl(&j, "grant_p50_us", st.grant_p50_ns / 1e3);
		json_u64(&j, "max_ops_inflight", st.max_ops_inflight);
		json_bool(&j, "verified", a->readback && !rc);
		json_end(&j);
	}
	else
		printf("sent %" PRIu64 " transfers, %" PRIu64 " bytes: %.3f GB/s, %.2f ops per "
		       "transfer, latency p50 %.1f us p99 %.1f us; read back: %s\n", st.transfers,
		       st.bytes, t_total > 0 ? timed_bytes / t_total / 1e9 : 0, st.ops_per_transfer,
		       st.lat_p50_ns / 1e3, st.lat_p99_ns / 1e3,
		       !a->readback ? "skipped" : rc ? "FAILED" : "verified");
out_peer:
	hkv_xfer_peer_close(peer);
out_x:
	hkv_xfer_destroy(x);
out_shadow:
	free(s);
	hkv_pool_destroy(shadow);
	page_set_free(&rem);
out_pool:
	hkv_pool_destroy(pool);
	page_set_free(&loc);
	return rc;
}

