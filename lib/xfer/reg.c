// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * reg.c - memory registration: one ucp_mem_map per region of the pool,
 * split at reg_chunk_bytes (whole KV pages), each with its packed rkey; the
 * HELLO message that carries the table to a peer, and its parser.
 */
#include <stddef.h>

#include "internal.h"

struct xf_wire_hello {
	struct xf_wire_hdr h;
	uint32_t nregs, pad;
	uint64_t page_bytes, npages;
};

struct xf_wire_reg {
	uint64_t first_page, npages, addr;
	uint32_t rkey_len, pad;
};

/*
 * HUGEKV_XFER_FAIL_REG=N makes the N-th registration of each create fail
 * as if ucp_mem_map had run out of memory: the test hook for the unwinding
 * of a partial registration (a real failure needs a transport that pins
 * memory, which the test machine lacks).
 */
static unsigned fail_reg_at(void)
{
	const char *s = getenv("HUGEKV_XFER_FAIL_REG");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return 0;
	v = strtoul(s, &end, 10);
	if (*end || v > 1u << 30) {
		xf_log(1, "HUGEKV_XFER_FAIL_REG=%s: not a count, ignored", s);
		return 0;
	}
	return (unsigned)v;
}

static int reg_one(struct hkv_xfer *x, struct xf_reg *r, unsigned nth, unsigned fail_at)
{
	ucp_mem_map_params_t mp = {
		.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
		.address = r->base,
		.length = r->npages * x->page_bytes,
	};
	ucs_status_t st;

	st = nth == fail_at ? UCS_ERR_NO_MEMORY : ucp_mem_map(x->ctx, &mp, &r->memh);
	if (st != UCS_OK) {
		xf_log(0, "ucp_mem_map of %p + %llu bytes failed: %s%s", r->base,
		       (unsigned long long)mp.length, ucs_status_string(st),
		       nth == fail_at ? " (injected)" : "");
		r->memh = NULL;
		return xf_errno(st);
	}
	st = ucp_rkey_pack(x->ctx, r->memh, &r->rkey_buf, &r->rkey_len);
	if (st != UCS_OK) {
		xf_log(0, "ucp_rkey_pack failed: %s", ucs_status_string(st));
		ucp_mem_unmap(x->ctx, r->memh);
		r->memh = NULL;
		return xf_errno(st);
	}
	return 0;
}

static int region_cmp(const void *a, const void *b)
{
	const struct hkv_region *x = a, *y = b;

	return x->first_page < y->first_page ? -1 : x->first_page > y->first_page;
}

/* how many registrations the regions make */
static unsigned reg_count(const struct hkv_region *rg, unsigned n, uint64_t ppc)
{
	unsigned i, total = 0;

	for (i = 0; i < n; i++)
		total += ppc ? (unsigned)((rg[i].npages + ppc - 1) / ppc) : 1;
	return total;
}

/**
 * xf_reg_create() - register every region of the pool
 * @x: the endpoint (pool, context, page size and chunk set)
 *
 * Return: 0, or -errno with nothing registered.
 */
int xf_reg_create(struct hkv_xfer *x)
{
	uint64_t ppc = x->reg_chunk_bytes / x->page_bytes, p;
	unsigned fail_at = fail_reg_at(), i, k = 0;
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
			err = reg_one(x, r, k + 1, fail_at);
			if (err)
				goto out_unreg;
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

/**
 * xf_reg_destroy() - deregister everything xf_reg_create() registered
 * @x: the endpoint
 */
void xf_reg_destroy(struct hkv_xfer *x)
{
	unsigned i;

	for (i = 0; i < x->nregs; i++) {
		ucp_rkey_buffer_release(x->regs[i].rkey_buf);
		ucp_mem_unmap(x->ctx, x->regs[i].memh);
	}
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
 * xf_hello_build() - our HELLO: page size, page count, registration table
 * @x: the endpoint, registered
 *
 * Return: 0, or -ENOMEM.
 */
int xf_hello_build(struct hkv_xfer *x)
{
	size_t len = sizeof(struct xf_wire_hello) + x->nregs * sizeof(struct xf_wire_reg);
	struct xf_wire_hello *h;
	struct xf_wire_reg *w;
	unsigned char *rk;
	unsigned i;

	for (i = 0; i < x->nregs; i++)
		len += x->regs[i].rkey_len;
	h = calloc(1, len);
	if (!h)
		return -ENOMEM;
	xf_wire_hdr_set(&h->h, XF_AM_HELLO);
	h->nregs = x->nregs;
	h->page_bytes = x->page_bytes;
	h->npages = x->npages;
	w = (struct xf_wire_reg *)(h + 1);
	rk = (unsigned char *)(w + x->nregs);
	for (i = 0; i < x->nregs; i++) {
		w[i].first_page = x->regs[i].first_page;
		w[i].npages = x->regs[i].npages;
		w[i].addr = (uint64_t)(uintptr_t)x->regs[i].base;
		w[i].rkey_len = (uint32_t)x->regs[i].rkey_len;
		memcpy(rk, x->regs[i].rkey_buf, x->regs[i].rkey_len);
		rk += x->regs[i].rkey_len;
	}
	x->hello = h;
	x->hello_len = len;
	return 0;
}

void xf_rregs_destroy(struct hkv_xfer_peer *p)
{
	unsigned i;

	for (i = 0; i < p->nrregs; i++)
		ucp_rkey_destroy(p->rregs[i].rkey);
	free(p->rregs);
	p->rregs = NULL;
	p->nrregs = 0;
}

/* registrations must be sorted, disjoint, inside the pool and non-empty */
static bool wire_reg_ok(const struct xf_wire_reg *w, unsigned i, uint64_t npages)
{
	if (!w[i].npages || w[i].first_page >= npages || w[i].npages > npages - w[i].first_page)
		return false;
	return i == 0 || w[i].first_page >= w[i - 1].first_page + w[i - 1].npages;
}

/**
 * xf_hello_parse() - take a peer's HELLO: check it, unpack its rkeys
 * @p: the peer (its ep is up)
 * @buf: the message
 * @len: its length
 *
 * Return: 0, or -EPROTO (malformed, other version, page size differs),
 * -ENOMEM, or the error of ucp_ep_rkey_unpack.
 */
int xf_hello_parse(struct hkv_xfer_peer *p, const void *buf, size_t len)
{
	const struct xf_wire_hello *h = buf;
	const struct xf_wire_reg *w;
	const unsigned char *rk;
	size_t need;
	unsigned i;
	int err;

	if (!xf_wire_hdr_ok(buf, len, sizeof(*h), XF_AM_HELLO))
		return -EPROTO;
	if (h->page_bytes != p->x->page_bytes) {
		xf_log(0, "peer %llu: page size %llu, ours %llu: refused",
		       (unsigned long long)p->id, (unsigned long long)h->page_bytes,
		       (unsigned long long)p->x->page_bytes);
		return -EPROTO;
	}
	if (!h->nregs || h->nregs > (len - sizeof(*h)) / sizeof(*w))
		return -EPROTO;
	w = (const struct xf_wire_reg *)(h + 1);
	need = sizeof(*h) + h->nregs * sizeof(*w);
	for (i = 0; i < h->nregs; i++) {
		if (!wire_reg_ok(w, i, h->npages) || w[i].rkey_len > len)
			return -EPROTO;
		need += w[i].rkey_len;
	}
	if (need != len)
		return -EPROTO;
	p->rregs = calloc(h->nregs, sizeof(*p->rregs));
	if (!p->rregs)
		return -ENOMEM;
	rk = (const unsigned char *)(w + h->nregs);
	for (i = 0; i < h->nregs; i++) {
		ucs_status_t st = ucp_ep_rkey_unpack(p->ep, rk, &p->rregs[i].rkey);

		if (st != UCS_OK) {
			err = xf_errno(st);
			xf_rregs_destroy(p);
			return err;
		}
		p->rregs[i].first_page = w[i].first_page;
		p->rregs[i].npages = w[i].npages;
		p->rregs[i].addr = w[i].addr;
		p->nrregs = i + 1;
		rk += w[i].rkey_len;
	}
	p->npages = h->npages;
	p->page_bytes = h->page_bytes;
	return 0;
}
