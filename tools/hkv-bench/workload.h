/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * workload.h - the churn state machine (workload.c), shared by the trace
 * generator and the LRU-mode live run (lru.c).
 */
#ifndef HKV_BENCH_WORKLOAD_H
#define HKV_BENCH_WORKLOAD_H

#include "churn.h"

enum { PH_BURNIN, PH_MEASURE, PH_DONE };

struct gen {
	const struct workload *w;
	struct rng rng;
	uint32_t *live;		/* live allocation ids */
	uint32_t *pos;		/* id -> index in live */
	uint32_t *size;		/* id -> pages it holds now */
	uint32_t nlive, cap, next_id;
	uint32_t pending;	/* size of the next request */
	uint64_t live_pages, target, burnin_pages, churn_pages, measured;
	bool filled;
};

int gen_init(struct gen *g, const struct workload *w);
void gen_fini(struct gen *g);
int gen_phase(const struct gen *g);
void gen_count(struct gen *g, int phase);
bool gen_fits(struct gen *g);
int64_t gen_alloc(struct gen *g, uint32_t *pages);
uint32_t gen_pick(struct gen *g);
void gen_remove(struct gen *g, uint32_t id);
void gen_shrink(struct gen *g, uint32_t id, uint32_t keep);
uint32_t gen_split(struct gen *g, uint32_t id);


/* ---- run context (replay.c): what every run keeps besides the allocator */
struct rec {			/* one live allocation */
	uint32_t n;		/* extents */
	struct hkv_extent one;	/* n == 1 */
	struct hkv_extent *many;	/* n > 1 */
};

struct runctx {
	const struct workload *w;
	struct result *r;
	uint64_t *shadow;	/* 1 = allocated: checks every allocator */
	struct rec *rec;
	uint32_t nrec;
	struct hkv_extent *ext, *tail;	/* scratch, maxext each */
	unsigned maxext;
	uint64_t *hist;		/* extents per measured alloc */
	uint64_t ext_sum, multi;
	uint64_t tl_cap, tl_allocs, tl_ext, tl_from;
};

int rc_init(struct runctx *rc, const struct workload *w, struct result *r,
	    uint32_t nrec, uint32_t max_size);
void rc_fini(struct runctx *rc);
int rc_grow(struct runctx *rc, uint32_t id);
static inline const struct hkv_extent *rec_ext(const struct rec *x)
{
	return x->n == 1 ? &x->one : x->many;
}
/* check and record the k extents in rc->ext that allocation id received */
int rc_alloc_done(struct runctx *rc, uint32_t id, int k, uint32_t pages,
		  bool measuring);
/* the extents past keep pages of id, in rc->tail; returns their count */
unsigned rc_tail(struct runctx *rc, uint32_t id, uint32_t keep);
/* pages of ext went free: shadow check and update */
int rc_freed(struct runctx *rc, const struct hkv_extent *ext, unsigned n);
void rc_truncate(struct runctx *rc, uint32_t id, uint32_t keep);
void rc_release(struct runctx *rc, uint32_t id);
/* after each measured op: timeline */
int rc_after_op(struct runctx *rc);
void rc_finish(struct runctx *rc);
void frag_scan(const uint64_t *shadow, uint64_t npages, struct frag *f);

#endif /* HKV_BENCH_WORKLOAD_H */
