/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * churn.h - the churn workload: an operation trace (allocations of sizes
 * drawn from a distribution, whole and partial frees of live allocations)
 * that is replayed, op for op, on hugekv and on the baselines it replaces.
 */
#ifndef HKV_BENCH_CHURN_H
#define HKV_BENCH_CHURN_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "hugekv.h"
#include "common.h"

/* ---- allocators under test (hugekv and baselines.c) ---------------------- */
struct balloc_ops {
	const char *name;
	/* slow: measured ops are capped by default (see --baseline-ops) */
	uint64_t default_ops;
	int (*create)(uint64_t npages, void **st);
	void (*destroy)(void *st);
	/* timed: n pages; extents into ext, or kept for collect(); returns the
	 * extent count (0 when collect() counts), -ENOMEM, -ENOSPC */
	int (*alloc)(void *st, uint32_t n, struct hkv_extent *ext, unsigned max);
	/* untimed, optional: extents of the last alloc (token lists) */
	int (*collect)(void *st, struct hkv_extent *ext, unsigned max);
	/* timed */
	int (*free)(void *st, const struct hkv_extent *ext, unsigned n);
	/* optional, untimed: burn-in is over, switch to the measured design */
	int (*measure)(void *st);
};

extern const struct balloc_ops bl_sorted_scan, bl_token_freelist, bl_bitmap_firstfit,
	bl_tlsf;
extern const struct balloc_ops *const baselines[];	/* NULL-terminated */
const struct balloc_ops *baseline_find(const char *name);

/* ---- tlsf.c: the TLSF / OffsetAllocator family, handles kept by the caller */
#define TL_NIL		UINT32_MAX
#define likely_tl(x)	__builtin_expect(!!(x), 1)
#define unlikely_tl(x)	__builtin_expect(!!(x), 0)

struct tl_node {		/* one block, used or free; 32 bytes */
	uint32_t off, size;
	uint32_t bprev, bnext;	/* bin list (free blocks) */
	uint32_t nprev, nnext;	/* address neighbours */
	uint32_t bin, used;
};

struct tlsf {
	uint32_t npages, free_pages;
	uint32_t top;			/* non-empty top bins */
	uint8_t leaf[32];		/* non-empty bins of each top bin */
	uint32_t head[256];
	struct tl_node *node;
	uint32_t *stack, nfree_ids, used_ids, peak_ids, cap;
	uint32_t *map;			/* bl_tlsf only: page -> block */
	/* lowest region first (tlsf_create_regions()): per bin, one list per
	 * region of 2^rshift pages and a bitmap of the non-empty ones */
	uint32_t rshift;
	uint64_t rmask[256];
	uint32_t *rhead;		/* [bin * 64 + region], or NULL */
};

int tlsf_create(uint64_t npages, void **st);
/* the same, each bin's blocks taken from its lowest-addressed region */
int tlsf_create_regions(uint64_t npages, void **st);
void tlsf_destroy(void *st);
/* extents (one per block) and their handles, or -ENOMEM/-ENOSPC/-EINVAL */
int tlsf_alloc(void *st, uint32_t n, struct hkv_extent *ext, unsigned max, uint32_t *h);
void tlsf_free_one(struct tlsf *t, uint32_t id);
void tlsf_shrink(void *st, uint32_t id, uint32_t keep);
void tlsf_insert(struct tlsf *t, uint32_t id);
size_t tlsf_metadata_bytes(const struct tlsf *t);

/* ---- the operation trace ------------------------------------------------ */
enum { OP_ALLOC, OP_FREE, OP_PARTIAL };

struct op {
	uint32_t kind;		/* OP_* */
	uint32_t pages;		/* ALLOC: size; PARTIAL: pages kept */
	uint32_t id;		/* allocation id (ALLOC ids count up from 0) */
	uint32_t pad;
};

struct trace {
	struct op *op;
	uint64_t n, cap;
	uint64_t measure_from;	/* ops before this are burn-in */
	uint32_t nallocs;	/* ids used */
	uint32_t max_size;
};

#define UFI_N	4
extern const uint32_t ufi_r[UFI_N];	/* request sizes UFI is computed for */

struct workload {
	uint64_t npages;
	double occupancy;	/* target live share */
	double burnin;		/* burn-in churn, in multiples of npages */
	uint64_t ops;		/* measured ops (allocs + frees) */
	double split_share;	/* share of frees that release only a tail */
	double touch_share;	/* LRU modes: a live unit touched per step */
	int evict;		/* EVICT_* */
	/* LRU modes under the pool's free-room watermarks (churn --watermarks):
	 * every step allocates with HKV_ALLOC_EVICT, the pool evicts to keep
	 * room_low free; 0 = off (a request that does not fit calls hkv_evict) */
	double room_low, room_high;
	double remove_share;	/* watermarks: a random live unit removed per step */
	uint64_t seed;
	struct sizes sizes;
	uint64_t page_bytes;	/* hugekv pool: 0 = index-only */
	int backing;
	uint64_t interval;	/* timeline sample every N measured ops */
};

enum { EVICT_RANDOM, EVICT_LRU, EVICT_LRU_COALESCE };

/* generate the trace of a random-victim workload (allocator independent) */
int trace_generate(const struct workload *w, struct trace *t);
void trace_free(struct trace *t);
int trace_push(struct trace *t, uint32_t kind, uint32_t pages, uint32_t id);

/* ---- results of one run ------------------------------------------------- */
struct frag {
	uint64_t free_pages, free_extents, largest;
	double ufi[UFI_N];
};

struct tpoint {			/* one timeline sample */
	uint64_t op;		/* measured ops done */
	struct frag f;
	double epa;		/* extents per alloc since the last sample */
	double alloc_p50;	/* ns, since the last sample */
};

struct result {
	const char *name;
	uint64_t ops, allocs, frees;	/* measured */
	struct samples alloc, free;	/* ticks, sorted after summarize */
	struct lat alloc_ns, free_ns;
	double epa_mean, epa_p99, multi_share;
	uint64_t ext_max;
	struct frag end;
	struct tpoint *tl;
	uint64_t ntl;
	double seconds;		/* wall time of the whole run, burn-in included */
	/* LRU modes, measured: hkv_stats' eviction_runs and evictions, and
	 * requests that failed even after eviction (watermarks) */
	uint64_t evict_runs, evictions, failures;
};

/* hugekv as an allocator: one lane, index-only or a memory pool */
int hkv_adapter_ops(const struct workload *w, struct balloc_ops *out);
extern struct hkv_pool *hkv_adapter_last_pool;	/* for hkv_stats_print */
extern bool hkv_adapter_keep_pool;		/* do not destroy (demo) */

/* replay t on an allocator; measured ops capped at max_ops (0 = all) */
int replay(const struct balloc_ops *a, const struct workload *w,
	   const struct trace *t, uint64_t max_ops, struct result *r);
/* the LRU modes: hugekv chooses the victims; t (if not NULL) records them */
int run_lru(const struct balloc_ops *hk, const struct workload *w,
	    struct trace *t, struct result *r);
void result_free(struct result *r);


/* ---- one churn benchmark: hugekv repeated, then each baseline ------------ */
#define CHURN_MAX_REPEAT	15
#define CHURN_MAX_BASELINES	4

struct fam_fig {			/* family.c: one allocator's figures */
	double ns_per_op;		/* whole run, no per-call timer */
	struct lat alloc, free;		/* per call; free drained */
	double epa, meta_bpp;
};

struct churn {
	struct workload w;
	unsigned repeat;		/* hugekv runs; figures are their medians */
	uint64_t baseline_ops;		/* 0 = each baseline's default */
	const struct balloc_ops *bl[CHURN_MAX_BASELINES];
	unsigned nbl;
	bool stats;			/* print the last pool's hkv_stats */
	bool quiet;			/* no progress lines on stderr */
	bool json;			/* output */
	uint64_t page_size;		/* bytes per page, for display */
	uint64_t capacity;		/* --capacity: pages = capacity / page_size */
	bool memory;			/* --memory */
	const char *sizes_spec;		/* --sizes */
	double wm_gap;			/* --watermarks: high - low; < 0 = off */
	/* results */
	struct trace t;
	struct result hkv[CHURN_MAX_REPEAT];
	struct lat alloc_med, free_med;	/* medians over the hugekv runs */
	struct result blr[CHURN_MAX_BASELINES];
	struct hkv_stats st;		/* hugekv pool after the first run */
	bool have_st;
	bool family;			/* run family.c's side-by-side */
	struct fam_fig fam[3];		/* hugekv, tlsf, tlsf lowest region first */
	/* hugekv's whole run over the family's, per round */
	struct spread fam_ratio;
	struct spread fam_ratio_reg;	/* over the third */
	bool have_fam;
};

/* the churn benchmark's steps (bench.h); scale uses them for each point */
extern const struct option churn_opts[];
void churn_defaults(void *st);
int churn_parse_opt(void *st, int o, const char *arg);
int churn_validate(void *st, int json);
int churn_run(struct churn *c);
void churn_free(struct churn *c);
const char *evict_name(int evict);

/* family.c: hugekv vs tlsf.c, whole-run and drained per-call timing */
int family_run(struct churn *c);
void family_text(const struct churn *c, FILE *f);
void family_json(const struct churn *c, struct json *j);

/* report.c */
void report_text(const struct churn *c, FILE *f);
void report_json_body(const struct churn *c, struct json *j);

#endif /* HKV_BENCH_CHURN_H */
