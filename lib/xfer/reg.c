// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * reg.c - the pool's ranges: each region, split at reg_chunk_bytes (whole
 * KV pages); an operation never crosses one. None is registered with UCX:
 * a registration would give UCX an rkey to hand out (rendezvous packs the
 * memh a send names), and on tcp and shared memory UCX does not check a
 * peer's rkey at all, so nothing of the pool is offered for remote access;
 * UCX copies or registers each operation's own pages itself. HELLO carries
 * the page counts of the ranges (never an address), a fresh nonce and the
 * sender's name.
 */
#include <stddef.h>

#include "internal.h"

struct xf_wire_hello {
	struct xf_wire_hdr h;
	uint32_t nregs, pad;
	uint64_t page_bytes, npages;
	unsigned char nonce[XF_NONCE];
	char name[XF_NAME];
};

struct xf_wire_reg {
	uint64_t first_page, npages;
};

static int region_cmp(const void *a, const void *b)
{
	const struct hkv_region *x = a, *y = b;

	return x->first_page < y->first_page ? -1 : x->first_page > y->first_page;
}

/* how many ranges the regions make */
static uint64_t reg_count(const struct hkv_region *rg, unsigned n, uint64_t ppc)
{
	uint64_t total = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		total += ppc ? (rg[i].npages + ppc - 1) / ppc : 1;
	return total;
}

/**
 * xf_reg_create() - the ranges of the pool
 * @x: the endpoint (pool, context, page size and chunk set)
 *
 * Return: 0, or -errno.
 */
int xf_reg_create(struct hkv_xfer *x)
{
	uint64_t ppc = x->reg_chunk_bytes / x->page_bytes, p;
	unsigned i, k = 0;
	struct hkv_region *rg;
	int n, err = -ENOMEM;

	n = hkv_regions(x->pool, NULL, 0);
	if (n <= 0)
		return -EINVAL;
	rg = calloc((size_t)n, sizeof(*rg));
	if (!rg)
		return -ENOMEM;
	hkv_regions(x->pool, rg, (unsigned)n);
	qsort(rg, (size_t)n, sizeof(*rg), region_cmp);	/* lookups binary-search pages */
	if (reg_count(rg, (unsigned)n, ppc) > XF_MAX_RANGES) {
		xf_log(0, "reg_chunk_bytes %llu makes over %u ranges: refused",
		       (unsigned long long)x->reg_chunk_bytes, XF_MAX_RANGES);
		err = -EINVAL;
		goto out_free_rg;
	}
	x->regs = calloc(reg_count(rg, (unsigned)n, ppc), sizeof(*x->regs));
	if (!x->regs)
		goto out_free_rg;
	for (i = 0; i < (unsigned)n; i++) {
		for (p = 0; p < rg[i].npages; p += ppc ? ppc : rg[i].npages) {
			struct xf_reg *r = &x->regs[k];

			r->first_page = rg[i].first_page + p;
			r->npages = XF_MIN(rg[i].npages - p, ppc ? ppc : rg[i].npages);
			r->base = hkv_page_ptr(x->pool, r->first_page);
			if (!r->base) {
				err = -EINVAL;
				goto out_unreg;
			}
			x->nregs = ++k;
		}
	}
	free(rg);
	return 0;

out_unreg:
	xf_reg_destroy(x);
out_free_rg:
	free(rg);
	return err;
}

void xf_reg_destroy(struct hkv_xfer *x)
{
	free(x->regs);
	x->regs = NULL;
	x->nregs = 0;
}

/* both tables start each entry with its page range, in page order */
_Static_assert(offsetof(struct xf_reg, first_page) == 0 &&
	       offsetof(struct xf_reg, npages) == sizeof(uint64_t) &&
	       offsetof(struct xf_rreg, first_page) == 0 &&
	       offsetof(struct xf_rreg, npages) == sizeof(uint64_t),
	       "registration entries start with first_page, npages");

/* binary search of n entries of size bytes for the one holding page */
static const void *range_find(const void *table, unsigned n, size_t size, uint64_t page)
{
	unsigned lo = 0, hi = n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		const uint64_t *r = (const uint64_t *)((const char *)table + mid * size);

		if (page < r[0])
			hi = mid;
		else if (page >= r[0] + r[1])
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

const struct xf_reg *xf_reg_find(const struct hkv_xfer *x, uint64_t page)
{
	return range_find(x->regs, x->nregs, sizeof(*x->regs), page);
}

const struct xf_rreg *xf_rreg_find(const struct hkv_xfer_peer *p, uint64_t page)
{
	return range_find(p->rregs, p->nrregs, sizeof(*p->rregs), page);
}

/**
 * xf_hello_send() - our HELLO: page size and count, ranges, nonce, name
 * @p: the peer (its ep is up); its nonce is drawn here
 *
 * Return: 0, or -ENOMEM, -EIO (no randomness), or the send's error.
 */
int xf_hello_send(struct hkv_xfer_peer *p)
{
	struct hkv_xfer *x = p->x;
	size_t len = sizeof(struct xf_wire_hello) + x->nregs * sizeof(struct xf_wire_reg);
	struct xf_wire_hello *h;
	struct xf_wire_reg *w;
	unsigned i;
	int err;

	if (xf_nonce(p->nonce, sizeof(p->nonce)))
		return -EIO;
	h = calloc(1, len);
	if (!h)
		return -ENOMEM;
	xf_wire_hdr_set(&h->h, XF_AM_HELLO);
	h->nregs = x->nregs;
	h->page_bytes = x->page_bytes;
	h->npages = x->npages;
	memcpy(h->nonce, p->nonce, sizeof(h->nonce));
	strcpy(h->name, x->name);
	w = (struct xf_wire_reg *)(h + 1);
	for (i = 0; i < x->nregs; i++) {
		w[i].first_page = x->regs[i].first_page;
		w[i].npages = x->regs[i].npages;
	}
	err = xf_am_send(p, XF_AM_HELLO, h, len);
	free(h);
	return err;
}

void xf_rregs_destroy(struct hkv_xfer_peer *p)
{
	free(p->rregs);
	p->rregs = NULL;
	p->nrregs = 0;
}

/* ranges must be sorted, disjoint, inside the pool and non-empty */
static bool wire_reg_ok(const struct xf_wire_reg *w, unsigned i, uint64_t npages)
{
	if (!w[i].npages || w[i].first_page >= npages || w[i].npages > npages - w[i].first_page)
		return false;
	return i == 0 || w[i].first_page >= w[i - 1].first_page + w[i - 1].npages;
}

/**
 * xf_hello_parse() - take a peer's HELLO: check it, keep its ranges
 * @p: the peer
 * @buf: the message
 * @len: its length
 *
 * Return: 0, or -EPROTO (malformed, other version, page size differs),
 * -ENOMEM.
 */
int xf_hello_parse(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	const struct xf_wire_hello *h = buf;
	const struct xf_wire_reg *w;
	unsigned i;

	if (!xf_wire_hdr_ok(buf, len, sizeof(*h), XF_AM_HELLO))
		return -EPROTO;
	if (h->page_bytes != p->x->page_bytes) {
		xf_log(0, "peer %llu: page size %llu, ours %llu: refused",
		       (unsigned long long)p->id, (unsigned long long)h->page_bytes,
		       (unsigned long long)p->x->page_bytes);
		return -EPROTO;
	}
	if (!h->nregs || h->nregs > (len - sizeof(*h)) / sizeof(*w) ||
	    len != sizeof(*h) + h->nregs * sizeof(*w) || !memchr(h->name, 0, XF_NAME))
		return -EPROTO;
	w = (const struct xf_wire_reg *)(h + 1);
	for (i = 0; i < h->nregs; i++)
		if (!wire_reg_ok(w, i, h->npages))
			return -EPROTO;
	p->rregs = calloc(h->nregs, sizeof(*p->rregs));
	if (!p->rregs)
		return -ENOMEM;
	for (i = 0; i < h->nregs; i++) {
		p->rregs[i].first_page = w[i].first_page;
		p->rregs[i].npages = w[i].npages;
	}
	p->nrregs = h->nregs;
	p->npages = h->npages;
	p->page_bytes = h->page_bytes;
	memcpy(p->peer_nonce, h->nonce, XF_NONCE);
	strcpy(p->name, h->name);
	return 0;
}
