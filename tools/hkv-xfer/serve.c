// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * serve.c - hkv-xfer serve: a pool churned like a live cache with its
 * requests allocated, an endpoint that listens, and an access callback
 * that checks the pattern of every page of every put it granted (all
 * bytes, or the headers and every byte of the transfers the sender marks).
 * Tenants stay apart: a page belongs to the (authenticated) name that
 * first wrote it; another name may neither write nor read it.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hkv-xfer.h"
#include "../lib/json_writer.h"

#define TENANTS	64

struct serve {
	struct hkv_pool *pool;
	uint64_t page_bytes, transfers, pages_checked, bytes_checked, bad_pages, ended_bad;
	uint64_t tenant_refused;
	bool verify_all;
	unsigned char *owner;		/* per page: 0 = nobody, else tenant index + 1 */
	char tenant[TENANTS][64];
	unsigned ntenants;
};

static unsigned tenant_of(struct serve *sv, const char *name)
{
	unsigned i;

	for (i = 0; i < sv->ntenants; i++)
		if (!strcmp(sv->tenant[i], name))
			return i + 1;
	if (sv->ntenants == TENANTS)
		return 0;
	snprintf(sv->tenant[sv->ntenants], sizeof(sv->tenant[0]), "%s", name);
	return ++sv->ntenants;
}

/* BEGIN: a put may write pages nobody else owns (they become its own), a
 * get may read only its own pages */
static int tenant_check(struct serve *sv, struct hkv_xfer_peer *peer, unsigned op,
			const struct hkv_extent *ext, unsigned n)
{
	unsigned t = tenant_of(sv, hkv_xfer_peer_name(peer)), i;
	uint64_t p;

	if (!t)
		return -EACCES;
	for (i = 0; i < n; i++)
		for (p = ext[i].start; p < ext[i].start + ext[i].len; p++)
			if (op == HKV_XFER_OP_GET ? sv->owner[p] != t : sv->owner[p] && sv->owner[p] != t) {
				sv->tenant_refused++;
				return -EACCES;
			}
	if (op == HKV_XFER_OP_PUT)
		for (i = 0; i < n; i++)
			memset(sv->owner + ext[i].start, (int)t, ext[i].len);
	return 0;
}

static int on_access(void *ctx, struct hkv_xfer_peer *peer, unsigned event, unsigned op,
		     const struct hkv_extent *ext, unsigned n, int result)
{
	struct serve *sv = ctx;
	uint64_t k = 0, salt0 = 0, salt, pk, bad;
	unsigned i;
	bool full;

	if (event == HKV_XFER_ACCESS_BEGIN)
		return tenant_check(sv, peer, op, ext, n);
	if (op != HKV_XFER_OP_PUT)
		return 0;
	if (result) {
		sv->ended_bad++;
		return 0;
	}
	sv->transfers++;
	for (i = 0; i < n; i++) {
		uint64_t p;

		for (p = ext[i].start; p < ext[i].start + ext[i].len; p++, k++) {
			const uint64_t *w = hkv_page_ptr(sv->pool, p);

			if (k == 0)
				salt0 = w[0];
			full = sv->verify_all || (salt0 & SALT_FULL) || k == 0;
			if (full) {
				bad = pattern_check(w, sv->page_bytes, &salt, &pk);
				sv->bytes_checked += sv->page_bytes;
			} else {
				bad = 0, salt = w[0], pk = w[1];
				sv->bytes_checked += 16;
			}
			if (bad || salt != salt0 || pk != k) {
				if (sv->bad_pages++ < 5)
					fprintf(stderr, "hkv-xfer serve: page %" PRIu64 " (page %" PRIu64
						" of the transfer): bad at byte %" PRIu64 "\n", p, k,
						bad ? bad - 1 : 0);
			}
			sv->pages_checked++;
		}
	}
	return 0;
}

int do_serve(const struct args *a)
{
	struct serve sv = { .page_bytes = a->pool.page_bytes, .verify_all = a->verify_all };
	struct hkv_xfer_stats st = { .sz = sizeof(st) };
	struct hkv_xfer *x;
	struct page_set set;
	unsigned port, i, spins;
	int err, rc = 0;

	if (make_pool(&a->pool, false, &sv.pool, &set))
		return EXIT_FAIL;
	sv.owner = calloc(a->pool.pages, 1);
	if (!sv.owner || make_xfer(sv.pool, a, &x)) {
		rc = EXIT_FAIL;
		goto out_pool;
	}
	hkv_xfer_set_access_fn(x, on_access, &sv);
	err = hkv_xfer_listen(x, a->addr, &port);
	if (err) {
		fprintf(stderr, "hkv-xfer serve: listen on %s: %s\n", a->addr, strerror(-err));
		rc = EXIT_FAIL;
		goto out_x;
	}
	fprintf(a->json ? stderr : stdout, "listening on port %u, %u requests of %" PRIu64
		" pages in %u extents\n", port, set.nreq, a->pool.req_pages, set.n);
	fflush(NULL);
	for (i = 0; i < a->count; i++) {
		struct hkv_xfer_peer *p;

		err = hkv_xfer_accept(x, -1, &p);
		if (err) {
			fprintf(stderr, "hkv-xfer serve: accept: %s\n", strerror(-err));
			rc = EXIT_FAIL;
			break;
		}
		/* the target's CPU answers grants (and drives tcp's RMA) */
		for (spins = 0; !hkv_xfer_peer_error(p); spins++) {
			hkv_xfer_progress(x);
			if (spins % 1024 == 1023)
				sched_yield();
		}
		hkv_xfer_peer_close(p);
	}
	hkv_xfer_stats(x, NULL, &st);
	if (hkv_check(sv.pool)) {
		fprintf(stderr, "hkv-xfer serve: pool check failed\n");
		rc = EXIT_FAIL;
	}
	if (sv.bad_pages)
		rc = EXIT_FAIL;
	if (a->json) {
		struct json j;

		json_begin(&j, stdout);
		json_str(&j, "role", "serve");
		json_u64(&j, "transfers", sv.transfers);
		json_u64(&j, "pages_checked", sv.pages_checked);
		json_u64(&j, "bytes_checked", sv.bytes_checked);
		json_u64(&j, "bad_pages", sv.bad_pages);
		json_u64(&j, "failed_transfers", sv.ended_bad);
		json_u64(&j, "grants", st.grants);
		json_u64(&j, "grants_refused", st.grants_refused);
		json_u64(&j, "tenant_refused", sv.tenant_refused);
		json_u64(&j, "auth_failures", st.auth_failures);
		json_bool(&j, "verified", !sv.bad_pages && sv.transfers);
		json_end(&j);
	}
	else
		printf("served %" PRIu64 " transfers, %" PRIu64 " pages checked (%" PRIu64
		       " bytes), %" PRIu64 " bad: %s\n", sv.transfers, sv.pages_checked,
		       sv.bytes_checked, sv.bad_pages, sv.bad_pages ? "FAILED" : "verified");
out_x:
	hkv_xfer_destroy(x);
out_pool:
	free(sv.owner);
	hkv_pool_destroy(sv.pool);
	page_set_free(&set);
	return rc;
}

