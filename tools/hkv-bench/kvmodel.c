// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kvmodel.c - the engine model: one request at a time, in arrival order.
 *
 *   match     the longest prefix of the request's blocks cached in L1 or
 *             L2 (L1 first, block by block); the rest are misses. The
 *             hits' L2 copies are touched (an engine's match marks its
 *             radix nodes used, for both tiers)
 *   pin       the L1 hits (so nothing this request uses is evicted)
 *   load      L2 hits: pin in L2, one L1 allocation for all of them, copy
 *             L2 -> L1 (bytes checked), L1 units, unpin L2
 *   compute   misses: one L1 allocation, one unit per block
 *   backup    write-through: one L2 allocation for the new blocks, copy
 *             L1 -> L2 (bytes stamped), L2 units
 *   decode    output tokens past the prompt's last page: one page at a
 *             time, private to the request
 *   release   free the private pages, unpin the units (last block first),
 *             touch them in both tiers (last block first, so a prefix is
 *             always more recent than what follows it: eviction takes
 *             tails first, as a radix tree's leaf-first eviction does)
 *
 * Every tier call is timed: the sum per request is the allocator +
 * eviction (+ LRU bookkeeping) CPU time. Around them the model checks
 * invariants: a shadow bitmap per tier (no page handed out twice, every
 * freed or evicted page was handed out, no pinned unit evicted), the L1
 * "device memory" (one key per page, written when a page gets KV) and the
 * L2 bytes (a per-page pattern of stamp_bytes written on backup and
 * verified on load).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kvmodel.h"
#include "workload.h"		/* frag_scan */

const struct kvdesign kv_designs[KV_NDESIGNS] = {
	{ "hugekv", &kv_hugekv_l1, &kv_hugekv_l2 },
	{ "sglang", &kv_sglang_dev, &kv_sglang_host },
	{ "vllm", &kv_vllm_pool, &kv_vllm_cpu },
	{ "lmcache", &kv_vllm_pool, &kv_lmcache_ff },
};

void kvtier_victim(struct kvtier *t, uint32_t unit)
{
	if (t->nvict < t->vcap)
		t->victims[t->nvict] = unit;
	t->nvict++;
}

const char *const kv_op_names[KV_NOPS] = {
	"alloc_l1", "alloc_l2", "add_l1", "add_l2", "pin_l1", "pin_l2", "unpin_l1", "unpin_l2",
	"touch_l1", "touch_l2", "free_l1", "free_l2",
};

/* ---- timing ------------------------------------------------------------- */
static uint64_t req_ticks;

/* one tier call (@op: KV_OP()), its ticks less the timer's own */
#define TIMED(r, op, call) ({						\
	uint64_t _t0 = tick();						\
	int _rc = (call);						\
	uint64_t _d = tick() - _t0;					\
									\
	_d = _d > (r)->overhead ? _d - (r)->overhead : 0;		\
	req_ticks += _d;						\
	(r)->s.op_ticks[op] += _d;					\
	(r)->s.op_calls[op]++;						\
	_rc;								\
})

static int fail(const struct kvrun *r, uint32_t req, const char *what, long long a)
{
	fprintf(stderr, "hkv-bench replay: %s: request %u: %s (%lld)\n", r->d->name, req, what, a);
	return -EUCLEAN;
}

/* ---- page bytes --------------------------------------------------------- */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* what page @i of block @node holds */
static uint64_t page_key(const struct kvrun *r, uint32_t node, unsigned i)
{
	return mix(r->c->trace->id[node] * 0x9e3779b97f4a7c15ull + i + 1);
}

#define STAMP_STEP	0x9e3779b97f4a7c15ull

static void stamp_write(struct kvrun *r, uint64_t page, uint64_t key)
{
	uint64_t *w = hkv_page_ptr(r->mem, page);

	for (uint64_t k = 0; k < r->c->stamp_bytes / 8; k++)
		w[k] = key + k * STAMP_STEP;
}

static bool stamp_ok(const struct kvrun *r, uint64_t page, uint64_t key)
{
	const uint64_t *w = hkv_page_ptr(r->mem, page);
	uint64_t bad = 0;

	for (uint64_t k = 0; k < r->c->stamp_bytes / 8; k++)
		bad |= w[k] ^ (key + k * STAMP_STEP);
	return !bad;
}

/* ---- shadow bitmaps ------------------------------------------------------ */
/* the pages of @k extents were handed out for @npages: check and mark, list
 * them in @pages */
static int taken(struct kvrun *r, int L, uint32_t req, const struct hkv_extent *ext, int k,
		 uint32_t npages, uint32_t *pages)
{
	uint64_t sum = 0;

	if (k <= 0)
		return fail(r, req, L ? "L2 allocation failed" : "L1 allocation failed", k);
	for (int i = 0; i < k; i++) {
		const struct hkv_extent *e = &ext[i];

		if (!e->len || e->start + e->len > r->tier[L].npages ||
		    sum + e->len > npages ||
		    !bits_all(r->shadow[L], e->start, e->len, false))
			return fail(r, req, L ? "L2 page handed out twice or out of range" :
					"L1 page handed out twice or out of range", (long long)e->start);
		bits_fill(r->shadow[L], e->start, e->len, true);
		for (uint64_t p = e->start; p < e->start + e->len; p++)
			pages[sum++] = (uint32_t)p;
	}
	if (sum != npages)
		return fail(r, req, "allocation short of what was asked", (long long)sum);
	r->s.allocs++;
	r->s.alloc_extents += k;
	return 0;
}

static int released(struct kvrun *r, int L, uint32_t req, const uint32_t *pages, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (!bits_all(r->shadow[L], pages[i], 1, true))
			return fail(r, req, "freed a page that was not handed out", pages[i]);
		bits_fill(r->shadow[L], pages[i], 1, false);
	}
	return 0;
}

/* the units the last call of tier L evicted */
static int reap(struct kvrun *r, int L, uint32_t req, const uint8_t *pinned)
{
	struct kvtier *t = &r->tier[L];
	int err = 0;

	if (t->nvict > t->vcap)
		return fail(r, req, "more victims than units", t->nvict);
	for (uint32_t i = 0; i < t->nvict && !err; i++) {
		uint32_t u = t->victims[i];

		if (u >= r->c->trace->nnodes || !r->cnt[L][u])
			return fail(r, req, "evicted a unit the model does not hold", u);
		if (pinned[u])
			return fail(r, req, "evicted a pinned unit", u);
		err = released(r, L, req, &r->pg[L][(uint64_t)u * r->c->ppb], r->cnt[L][u]);
		r->cnt[L][u] = 0;
	}
	t->nvict = 0;
	return err;
}

/* ---- the request ---------------------------------------------------------- */
static unsigned pages_of(const struct kvrun *r, const struct kvreq *q, uint32_t j)
{
	const struct kvcfg *c = r->c;
	uint64_t before = (uint64_t)j * c->block_tokens, rem;

	if (j + 1 < q->nblocks)
		return c->ppb;
	rem = q->in_len > before ? q->in_len - before : c->block_tokens;
	if (rem > c->block_tokens)
		rem = c->block_tokens;
	return (unsigned)((rem + c->page_tokens - 1) / c->page_tokens);
}

/* extents of a page list */
static unsigned to_ext(const uint32_t *pg, unsigned n, struct hkv_extent *ext)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		if (k && ext[k - 1].start + ext[k - 1].len == pg[i])
			ext[k - 1].len++;
		else
			ext[k++] = (struct hkv_extent){ pg[i], 1 };
	}
	return k;
}

/* descriptors of a transfer: runs contiguous on both sides */
static uint32_t runs(const uint32_t *a, const uint32_t *b, uint32_t n)
{
	uint32_t d = n ? 1 : 0;

	for (uint32_t i = 1; i < n; i++)
		d += a[i] != a[i - 1] + 1 || b[i] != b[i - 1] + 1;
	return d;
}

static void transfer(struct kvrun *r, bool load, uint32_t pages, uint32_t desc)
{
	struct kvstats *s = &r->s;

	if (load) {
		s->desc_load[s->loads++] = desc;
		s->load_pages += pages;
		s->load_desc += desc;
	} else {
		s->desc_backup[s->backups++] = desc;
		s->backup_pages += pages;
		s->backup_desc += desc;
	}
	r->win_desc += desc;
	r->win_pages += pages;
	r->win_transfers++;
}

/* make @n pages from @pages unit @u of tier L */
static int unit_add(struct kvrun *r, int L, uint32_t req, uint32_t u, const uint32_t *pages,
		    unsigned n)
{
	unsigned k = to_ext(pages, n, r->ext);
	int err = TIMED(r, KV_OP(KV_ADD, L), r->tier[L].ops->add(&r->tier[L], u, r->ext, k));

	if (err)
		return fail(r, req, "unit add failed", err);
	memmove(&r->pg[L][(uint64_t)u * r->c->ppb], pages, n * sizeof(*pages));
	r->cnt[L][u] = (uint8_t)n;
	return 0;
}

/* pages the request computed or loaded for block @u: its own until the
 * release makes them a unit (as an engine inserts into its radix tree when
 * a request finishes), so no eviction can take them meanwhile */
static void pending(struct kvrun *r, uint32_t u, const uint32_t *pages, unsigned n)
{
	memcpy(&r->pg[0][(uint64_t)u * r->c->ppb], pages, n * sizeof(*pages));
	r->cnt[0][u] = (uint8_t)n;
	r->pin1[u]++;
	r->unew[r->nnew++] = u;
}

static int tier_call(struct kvrun *r, int L, uint32_t req, int which, const uint32_t *u,
		     unsigned n)
{
	struct kvtier *t = &r->tier[L];
	int err;

	if (!n)
		return 0;
	switch (which) {
	case 0: err = TIMED(r, KV_OP(KV_PIN, L), t->ops->pin(t, u, n)); break;
	case 1: err = TIMED(r, KV_OP(KV_UNPIN, L), t->ops->unpin(t, u, n)); break;
	default: err = TIMED(r, KV_OP(KV_TOUCH, L), t->ops->touch(t, u, n)); break;
	}
	return err ? fail(r, req, "pin, unpin or touch failed", err) : 0;
}

/* allocate @npages in tier L into r->ext and @pages, victims reaped */
static int tier_alloc(struct kvrun *r, int L, uint32_t req, uint32_t npages, uint32_t *pages,
		      const uint8_t *pinned)
{
	struct kvtier *t = &r->tier[L];
	int k = TIMED(r, KV_OP(KV_ALLOC, L), t->ops->alloc(t, npages, r->ext, r->maxext));
	int err = reap(r, L, req, pinned);

	return err ? err : taken(r, L, req, r->ext, k, npages, pages);
}

/* L2 hits: into L1, checking their bytes */
static int load(struct kvrun *r, const struct kvreq *q, uint32_t req, const uint32_t *b,
		uint32_t to)
{
	uint32_t *src = r->scratch, *dst, n = 0, off = 0, nu2 = 0;
	int err;

	r->gen++;
	for (uint32_t j = 0; j < to; j++)
		if (!r->cnt[0][b[j]] && r->seen[b[j]] != r->gen) {
			r->seen[b[j]] = r->gen;
			r->np2[nu2] = (uint8_t)pages_of(r, q, j);
			r->u2[nu2++] = b[j];
			r->pin2[b[j]]++;
			memcpy(src + n, &r->pg[1][(uint64_t)b[j] * r->c->ppb],
			       r->np2[nu2 - 1] * sizeof(*src));
			n += r->np2[nu2 - 1];
		}
	if (!nu2)
		return 0;
	dst = src + n;
	err = tier_call(r, 1, req, 0, r->u2, nu2);
	if (!err)
		err = tier_alloc(r, 0, req, n, dst, r->pin1);
	for (uint32_t j = 0; j < nu2 && !err; j++) {
		uint32_t u = r->u2[j], p = r->np2[j];

		for (unsigned i = 0; i < p; i++) {
			uint64_t key = page_key(r, u, i);

			if (!stamp_ok(r, src[off + i], key))
				return fail(r, req, "L2 bytes are not where the model says",
					    src[off + i]);
			r->tag[dst[off + i]] = key;
		}
		pending(r, u, dst + off, p);
		off += p;
	}
	if (!err)
		err = tier_call(r, 1, req, 1, r->u2, nu2);
	for (uint32_t i = 0; i < nu2; i++)
		r->pin2[r->u2[i]]--;
	if (!err)
		transfer(r, true, n, runs(src, dst, n));
	return err;
}

/* misses: computed into new L1 pages; blocks L1 already holds (after a gap
 * in the prefix, or twice in one request) are computed into private pages */
static int compute(struct kvrun *r, const struct kvreq *q, uint32_t req, const uint32_t *b,
		   uint32_t from)
{
	uint32_t *pg = r->scratch, n = 0, off = 0;
	int err;

	for (uint32_t j = from; j < q->nblocks; j++)
		n += pages_of(r, q, j);
	if (!n)
		return 0;
	err = tier_alloc(r, 0, req, n, pg, r->pin1);
	for (uint32_t j = from; j < q->nblocks && !err; j++) {
		uint32_t u = b[j], p = pages_of(r, q, j);

		for (unsigned i = 0; i < p; i++)
			r->tag[pg[off + i]] = page_key(r, u, i);
		if (r->cnt[0][u]) {
			r->s.dup++;
			memcpy(r->priv_pg + r->npriv, pg + off, p * sizeof(*pg));
			r->npriv += p;
		} else {
			pending(r, u, pg + off, p);
		}
		off += p;
	}
	return err;
}

/* write-through: the new blocks into L2 */
static int backup(struct kvrun *r, uint32_t req)
{
	uint32_t *src = r->scratch, *dst, n = 0, nb = 0, off = 0;
	bool misplace = r->tier[1].inject == KV_INJECT_MISPLACE;
	int err;

	for (uint32_t i = 0; i < r->nnew; i++) {
		uint32_t u = r->unew[i];

		if (r->cnt[1][u])
			continue;
		memcpy(src + n, &r->pg[0][(uint64_t)u * r->c->ppb], r->cnt[0][u] * sizeof(*src));
		n += r->cnt[0][u];
		r->u2[nb++] = u;
	}
	if (!nb)
		return 0;
	dst = src + n;
	err = tier_alloc(r, 1, req, n, dst, r->pin2);
	for (uint32_t i = 0; i < nb && !err; i++) {
		uint32_t u = r->u2[i], p = r->cnt[0][u];

		for (unsigned k = 0; k < p; k++) {
			uint64_t key = page_key(r, u, k);

			if (r->tag[src[off + k]] != key)
				return fail(r, req, "L1 bytes are not where the model says",
					    src[off + k]);
			stamp_write(r, misplace ? (dst[off + k] + 1) % r->tier[1].npages :
				    dst[off + k], key);
		}
		err = unit_add(r, 1, req, u, dst + off, p);	/* copy done */
		off += p;
	}
	if (!err)
		transfer(r, false, n, runs(src, dst, n));
	return err;
}

static int decode(struct kvrun *r, const struct kvreq *q, uint32_t req)
{
	uint64_t pt = r->c->page_tokens;
	uint64_t dec = (q->in_len + (uint64_t)q->out_len + pt - 1) / pt - (q->in_len + pt - 1) / pt;
	int err = 0;

	for (uint64_t i = 0; i < dec && !err; i++) {
		uint32_t *pg = r->priv_pg + r->npriv;

		err = tier_alloc(r, 0, req, 1, pg, r->pin1);
		if (!err) {
			r->tag[*pg] = mix(~(uint64_t)req - i);
			r->npriv++;
		}
	}
	return err;
}

/* reverse a list: the last block first */
static void reverse(uint32_t *u, uint32_t n)
{
	for (uint32_t i = 0; i < n / 2; i++) {
		uint32_t x = u[i];

		u[i] = u[n - 1 - i];
		u[n - 1 - i] = x;
	}
}

/* private pages freed; the request's new blocks become units, then its L1
 * hits are unpinned and touched, then their L2 copies touched: all last
 * block first, so the prefix ends most recent */
static int release(struct kvrun *r, uint32_t req, uint32_t nu1)
{
	struct kvtier *t = &r->tier[0];
	uint32_t n2 = 0;
	int err = 0;

	if (r->npriv) {
		unsigned k = to_ext(r->priv_pg, r->npriv, r->ext);

		err = TIMED(r, KV_OP(KV_FREE, 0), t->ops->free(t, r->ext, k));
		if (err)
			return fail(r, req, "free failed", err);
		err = released(r, 0, req, r->priv_pg, r->npriv);
	}
	for (uint32_t i = r->nnew; i-- > 0 && !err;) {
		uint32_t u = r->unew[i];

		err = unit_add(r, 0, req, u, &r->pg[0][(uint64_t)u * r->c->ppb], r->cnt[0][u]);
		r->pin1[u]--;
	}
	reverse(r->u1, nu1);
	if (!err)
		err = tier_call(r, 0, req, 1, r->u1, nu1);
	for (uint32_t i = 0; i < nu1; i++)
		r->pin1[r->u1[i]]--;
	if (!err)
		err = tier_call(r, 0, req, 2, r->u1, nu1);
	for (uint32_t i = 0; i < r->nut; i++)	/* unless the backup evicted it */
		if (r->cnt[1][r->ut[i]])
			r->u2[n2++] = r->ut[i];
	return err ? err : tier_call(r, 1, req, 2, r->u2, n2);
}

static void sample(struct kvrun *r, uint32_t req)
{
	struct kvstats *s = &r->s;
	struct kvpoint *p = &s->tl[s->ntl++];
	struct frag f[2];

	frag_scan(r->shadow[0], r->tier[0].npages, &f[0]);
	frag_scan(r->shadow[1], r->tier[1].npages, &f[1]);
	*p = (struct kvpoint){
		.req = req + 1,
		.hit_l1 = s->blocks ? (double)s->hit_l1 / (double)s->blocks : 0,
		.hit_l2 = s->blocks ? (double)s->hit_l2 / (double)s->blocks : 0,
		.desc_per_transfer = r->win_transfers ?
			(double)r->win_desc / (double)r->win_transfers : 0,
		.pages_per_desc = r->win_desc ? (double)r->win_pages / (double)r->win_desc : 0,
		.l1_free = f[0].free_pages, .l1_free_ext = f[0].free_extents,
		.l1_largest = f[0].largest, .l2_free = f[1].free_pages,
		.l2_free_ext = f[1].free_extents, .l2_largest = f[1].largest,
	};
	r->win_desc = r->win_pages = r->win_transfers = 0;
}

int kvrun_request(struct kvrun *r, uint32_t req)
{
	const struct kvtrace *tr = r->c->trace;
	const struct kvreq *q = &tr->req[req];
	const uint32_t *b = &tr->blk[q->first];
	uint32_t h = 0, nu1 = 0, l1h = 0, foot = 0;
	int err;

	req_ticks = 0;
	r->npriv = r->nnew = 0;
	for (uint32_t j = 0; j < q->nblocks; j++)
		foot += pages_of(r, q, j);
	foot += (uint32_t)((q->in_len + (uint64_t)q->out_len + r->c->page_tokens - 1) /
			   r->c->page_tokens) - (q->in_len + r->c->page_tokens - 1) / r->c->page_tokens;
	r->s.blocks += q->nblocks;
	if (foot > r->tier[0].npages / 2) {	/* never fits next to others */
		r->s.too_big++;
		r->s.miss += q->nblocks;
		goto out;
	}
	/* match: L1 first, block by block, then L2; stop at the first miss */
	for (; h < q->nblocks; h++) {
		uint32_t u = b[h], p = pages_of(r, q, h);

		if (r->cnt[0][u] >= p) {
			r->u1[nu1++] = u;
			r->pin1[u]++;
			l1h++;
			for (unsigned i = 0; i < p; i++)
				if (r->tag[r->pg[0][(uint64_t)u * r->c->ppb + i]] != page_key(r, u, i))
					return fail(r, req, "L1 bytes are not where the model says",
						    u);
		} else if (!(r->cnt[1][u] >= p && !r->cnt[0][u])) {
			break;
		}
	}
	r->gen++;		/* the hits' L2 copies, touched at the release */
	r->nut = 0;
	for (uint32_t j = h; j-- > 0;)
		if (r->cnt[1][b[j]] && r->seen[b[j]] != r->gen) {
			r->seen[b[j]] = r->gen;
			r->ut[r->nut++] = b[j];
		}
	err = tier_call(r, 1, req, 2, r->ut, r->nut);	/* matched: recent in both */
	if (err)
		return err;
	r->s.hit_l1 += l1h;
	r->s.hit_l2 += h - l1h;
	r->s.miss += q->nblocks - h;
	if (!err)
		err = tier_call(r, 0, req, 0, r->u1, nu1);
	if (!err)
		err = load(r, q, req, b, h);
	if (!err)
		err = compute(r, q, req, b, h);
	if (!err)
		err = backup(r, req);
	if (!err)
		err = decode(r, q, req);
	if (!err)
		err = release(r, req, nu1);
	if (err)
		return err;
out:
	r->ticks[req] = req_ticks;
	if ((req + 1) % r->c->interval == 0 || req + 1 == tr->nreq)
		sample(r, req);
	return 0;
}

/* ---- setup ---------------------------------------------------------------- */
static int tier_init(struct kvrun *r, int L, const struct kvtier_ops *ops)
{
	const struct kvcfg *c = r->c;
	struct kvtier *t = &r->tier[L];

	*t = (struct kvtier){
		.ops = ops, .level = L + 1, .npages = L ? c->l2_pages : c->l1_pages,
		.ppb = c->ppb, .nunits = c->trace->nnodes, .mem = L ? r->mem : NULL,
		.room_low = c->room_low, .room_high = c->room_high,
		.vcap = c->trace->nnodes,
	};
	if (c->inject && c->inject_design && !strcmp(c->inject_design, r->d->name))
		t->inject = c->inject;
	t->victims = malloc(t->vcap * sizeof(*t->victims));
	if (!t->victims)
		return -ENOMEM;
	return ops->create(t);
}

int kvrun_init(struct kvrun *r, const struct kvdesign *d, const struct kvcfg *c)
{
	const struct kvtrace *tr = c->trace;
	bool hk = d->l2 == &kv_hugekv_l2;
	struct hkv_pool_opts o = {
		.sz = sizeof(o), .npages = c->l2_pages, .page_bytes = c->stamp_bytes,
		.backing = c->backing, .numa_node = -1, .nlanes = 1,
		.free_room_low = hk ? c->room_low : 0, .free_room_high = hk ? c->room_high : 0,
		.label = "L2 host tier",
	};
	uint64_t maxp = 0, nn = tr->nnodes;
	int err;

	memset(r, 0, sizeof(*r));
	r->d = d;
	r->c = c;
	r->overhead = timer_init()->overhead_ticks;
	for (uint32_t i = 0; i < tr->nreq; i++) {
		const struct kvreq *q = &tr->req[i];
		uint64_t p = (uint64_t)q->nblocks * c->ppb +
			     ((uint64_t)q->in_len + q->out_len) / c->page_tokens + 2;

		maxp = p > maxp ? p : maxp;
	}
	r->maxext = (unsigned)maxp + 8;
	for (int L = 0; L < 2; L++) {
		uint64_t np = L ? c->l2_pages : c->l1_pages;

		r->cnt[L] = calloc(nn, 1);
		r->pg[L] = malloc(nn * c->ppb * sizeof(*r->pg[L]));
		r->shadow[L] = calloc((np + 63) / 64, sizeof(uint64_t));
		if (!r->cnt[L] || !r->pg[L] || !r->shadow[L])
			return -ENOMEM;
	}
	r->pin1 = calloc(nn, 1);
	r->pin2 = calloc(nn, 1);
	r->seen = calloc(nn, sizeof(*r->seen));
	r->tag = calloc(c->l1_pages, sizeof(*r->tag));
	r->ticks = calloc(tr->nreq, sizeof(*r->ticks));
	r->s.desc_load = calloc(tr->nreq, sizeof(uint32_t));
	r->s.desc_backup = calloc(tr->nreq, sizeof(uint32_t));
	r->s.tl = calloc(tr->nreq / c->interval + 2, sizeof(*r->s.tl));
	r->ext = malloc(r->maxext * sizeof(*r->ext));
	r->u1 = malloc(maxp * sizeof(*r->u1));
	r->u2 = malloc(maxp * sizeof(*r->u2));
	r->unew = malloc(maxp * sizeof(*r->unew));
	r->ut = malloc(maxp * sizeof(*r->ut));
	r->priv_pg = malloc(maxp * sizeof(*r->priv_pg));
	r->scratch = malloc(2 * maxp * sizeof(*r->scratch));
	r->np2 = malloc(maxp);
	if (!r->scratch || !r->np2 || !r->ut ||
	    !r->pin1 || !r->pin2 || !r->seen || !r->tag || !r->ticks || !r->s.desc_load ||
	    !r->s.desc_backup || !r->s.tl || !r->ext || !r->u1 || !r->u2 || !r->unew ||
	    !r->priv_pg)
		return -ENOMEM;
	err = hkv_pool_create(&o, &r->mem);
	if (err) {
		fprintf(stderr, "hkv-bench replay: %s: L2 memory (%llu pages of %llu bytes): %s\n",
			d->name, (unsigned long long)c->l2_pages,
			(unsigned long long)c->stamp_bytes, hkv_strerror(err));
		r->mem = NULL;
		return err;
	}
	err = tier_init(r, 0, d->l1);
	if (!err)
		err = tier_init(r, 1, d->l2);
	if (err)
		fprintf(stderr, "hkv-bench replay: %s: tier: %s\n", d->name, hkv_strerror(err));
	return err;
}

int kvrun_finish(struct kvrun *r)
{
	for (int L = 0; L < 2; L++) {
		struct kvtier *t = &r->tier[L];

		frag_scan(r->shadow[L], t->npages, &r->s.end[L]);
		if (t->ops == &kv_hugekv_l1 || t->ops == &kv_hugekv_l2) {
			struct hkv_stats st = { .sz = sizeof(st) };
			int err = hkv_stats(t->st, &st);

			if (err)
				return err;
			if (hkv_check(t->st))
				return fail(r, r->c->trace->nreq, "hkv_check failed", L + 1);
			r->s.evict_runs[L] = st.eviction_runs;
			r->s.evictions[L] = st.evictions;
		} else {
			r->s.evict_runs[L] = t->evict_runs;
			r->s.evictions[L] = t->evictions;
		}
	}
	return 0;
}

void kvrun_fini(struct kvrun *r)
{
	for (int L = 1; L >= 0; L--) {
		if (r->tier[L].ops && r->tier[L].st)
			r->tier[L].ops->destroy(&r->tier[L]);
		free(r->tier[L].victims);
		free(r->cnt[L]);
		free(r->pg[L]);
		free(r->shadow[L]);
	}
	hkv_pool_destroy(r->mem);
	free(r->pin1);
	free(r->pin2);
	free(r->seen);
	free(r->tag);
	free(r->ticks);
	free(r->s.desc_load);
	free(r->s.desc_backup);
	free(r->s.tl);
	free(r->ext);
	free(r->u1);
	free(r->u2);
	free(r->unew);
	free(r->ut);
	free(r->priv_pg);
	free(r->scratch);
	free(r->np2);
	memset(r, 0, sizeof(*r));
}
