// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * plan.c - the checks a transfer passes before anything moves, and its
 * plan: the fewest UCX operations. Both extent lists are walked in step;
 * a run of pages contiguous on both sides is one operation, cut only where
 * an extent pair stops being contiguous or a range (a region, or a
 * reg_chunk_bytes piece of one) ends on either side.
 */
#include "internal.h"

/**
 * xf_check_extents() - extents well formed and inside a pool
 * @e: extents
 * @n: how many (> 0)
 * @npages: pages in the pool they name
 * @pages: receives the total
 *
 * Return: 0, -EINVAL (none, empty extent, too many), -ERANGE (a page at or
 * beyond @npages).
 */
int xf_check_extents(const struct hkv_extent *e, unsigned n, uint64_t npages,
		     uint64_t *pages)
{
	uint64_t total = 0;
	unsigned i;

	if (!e || !n || n > XF_MAX_EXTENTS)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!e[i].len)
			return -EINVAL;
		if (e[i].start >= npages || e[i].len > npages - e[i].start)
			return -ERANGE;
		total += e[i].len;	/* n <= 2^20 extents of < 2^64: checked below */
		if (total < e[i].len)
			return -ERANGE;
	}
	*pages = total;
	return 0;
}

static int ext_cmp(const void *a, const void *b)
{
	const struct hkv_extent *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/**
 * xf_check_disjoint() - no page named twice (a destination must not be)
 * @e: extents
 * @n: how many
 *
 * Return: 0, -EINVAL (overlap), -ENOMEM.
 */
int xf_check_disjoint(const struct hkv_extent *e, unsigned n)
{
	struct hkv_extent *s;
	unsigned i;
	int err = 0;

	for (i = 1; i < n && e[i].start >= e[i - 1].start + e[i - 1].len; i++)
		;
	if (i >= n)
		return 0;		/* ascending and disjoint: the common case */
	s = malloc(n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memcpy(s, e, n * sizeof(*s));
	qsort(s, n, sizeof(*s), ext_cmp);
	for (i = 1; i < n && !err; i++)
		if (s[i].start < s[i - 1].start + s[i - 1].len)
			err = -EINVAL;
	free(s);
	return err;
}

/**
 * xf_check_allocated() - every page of the extents is allocated in the pool
 * @pool: the pool
 * @e: extents, in range
 * @n: how many
 *
 * The core's bitmap check (hkv_extents_allocated(): O(pages / 64) under the
 * lanes' locks). A snapshot: the caller keeps the pages allocated for the
 * transfer.
 *
 * Return: 0, -EINVAL (a page is free or out of range).
 */
int xf_check_allocated(struct hkv_pool *pool, const struct hkv_extent *e, unsigned n)
{
	return n ? hkv_extents_allocated(pool, e, n) : 0;
}

/**
 * xf_merge_extents() - merge neighbours that continue each other, in order
 * @in: extents
 * @n: how many
 * @out: receives the merged list (room for @n; may be @in)
 *
 * Return: the number written.
 */
unsigned xf_merge_extents(const struct hkv_extent *in, unsigned n, struct hkv_extent *out)
{
	unsigned i, k = 0;

	for (i = 0; i < n; i++) {
		if (k && out[k - 1].start + out[k - 1].len == in[i].start)
			out[k - 1].len += in[i].len;
		else
			out[k++] = in[i];
	}
	return k;
}

static int ops_push(struct xf_op **ops, unsigned *n, unsigned *cap, const struct xf_op *op)
{
	if (*n == *cap) {
		unsigned ncap = *cap ? *cap * 2 : 16;
		struct xf_op *o = realloc(*ops, ncap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		*ops = o;
		*cap = ncap;
	}
	(*ops)[(*n)++] = *op;
	return 0;
}

/**
 * xf_plan() - the UCX operations of a transfer
 * @x: the endpoint
 * @p: the peer (its registrations unpacked)
 * @le: local extents, checked
 * @nl: how many
 * @re: remote extents, checked, same total pages
 * @nr: how many
 * @per_page: one operation per page, nothing merged
 * @ops: receives the operations (malloc'd)
 * @nops: receives their number
 *
 * Return: 0, -ERANGE (a page outside every range of its side),
 * -ENOMEM.
 */
int xf_plan(const struct hkv_xfer *x, const struct hkv_xfer_peer *p,
	    const struct hkv_extent *le, unsigned nl, const struct hkv_extent *re,
	    unsigned nr, bool per_page, struct xf_op **ops, unsigned *nops)
{
	uint64_t pb = x->page_bytes, loff = 0, roff = 0;
	unsigned li = 0, ri = 0, n = 0, cap = 0;
	const struct xf_reg *plr = NULL;
	const struct xf_rreg *prr = NULL;
	struct xf_op *o = NULL;
	int err = 0;

	while (li < nl && ri < nr) {
		uint64_t lp = le[li].start + loff, rp = re[ri].start + roff, run;
		const struct xf_reg *lr = xf_reg_find(x, lp);
		const struct xf_rreg *rr = xf_rreg_find(p, rp);
		struct xf_op op;

		if (!lr || !rr) {
			err = -ERANGE;
			goto fail;
		}
		run = XF_MIN(le[li].len - loff, re[ri].len - roff);
		run = XF_MIN(run, lr->first_page + lr->npages - lp);
		run = XF_MIN(run, rr->first_page + rr->npages - rp);
		if (per_page)
			run = 1;
		op.laddr = lr->base + (lp - lr->first_page) * pb;
		op.bytes = run * pb;
		op.rpage = rp;
		op.landed = false;
		if (!per_page && n && plr == lr && prr == rr &&
		    o[n - 1].laddr + o[n - 1].bytes == op.laddr &&
		    o[n - 1].rpage + o[n - 1].bytes / pb == op.rpage)
			o[n - 1].bytes += op.bytes;
		else if ((err = ops_push(&o, &n, &cap, &op)))
			goto fail;
		plr = lr;
		prr = rr;
		loff += run;
		roff += run;
		if (loff == le[li].len)
			li++, loff = 0;
		if (roff == re[ri].len)
			ri++, roff = 0;
	}
	*ops = o;
	*nops = n;
	return 0;
fail:
	free(o);
	return err;
}
