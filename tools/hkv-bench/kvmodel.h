/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * kvmodel.h - `hkv-bench replay --trace`: request traces through an
 * engine-shaped two-tier KV cache.
 *
 *   kvtrace.c    the request trace (JSON lines: timestamp, input_length,
 *                output_length, hash_ids), block ids made dense
 *   kvtier_hkv.c hugekv at both tiers: L1 an index-only pool, L2 a pool on
 *                hugepages, planned (watermark) eviction inside hkv_alloc
 *   kvtier_eng.c the engines' designs: SGLang's device allocator (free
 *                pages + release pages, lazy merge-and-sort) and HiCache
 *                host pool (free_slots FIFO), vLLM's block pool (FIFO free
 *                queue, cached blocks evicted when popped) and CPU offload
 *                backend (fresh blocks, then a free-list stack), LMCache's
 *                first-fit over an address-ordered free list; LRU with
 *                exact-deficit eviction
 *   kvmodel.c    the engine model: per request prefix match in L1 then L2,
 *                load L2 -> L1, allocate, write-through backup, decode,
 *                release; invariant checks (shadow bitmaps, page bytes)
 *   kvreplay.c   the subcommand: options, interleaved runs, report
 */
#ifndef HKV_BENCH_KVMODEL_H
#define HKV_BENCH_KVMODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "hugekv.h"
#include "churn.h"		/* struct frag */
#include "common.h"

#define KV_NONE		UINT32_MAX
#define KV_MAX_PPB	64		/* pages per block at most */

/* ---- the trace (kvtrace.c) ---------------------------------------------- */
struct kvreq {
	uint64_t ts;			/* ms from the start */
	uint32_t in_len, out_len;	/* tokens */
	uint32_t first, nblocks;	/* blocks: trace->blk[first..first+nblocks) */
};

struct kvtrace {
	struct kvreq *req;
	uint32_t nreq;
	uint32_t *blk;			/* dense block (node) numbers */
	uint64_t nblk;
	uint64_t *id;			/* node -> the trace's hash id */
	uint32_t nnodes;
};

/* read @path; at most @max requests (0 = all). Return: 0 or -errno, the
 * line and the reason printed */
int kvtrace_load(const char *path, uint32_t max, struct kvtrace *t);
void kvtrace_free(struct kvtrace *t);

/* ---- a tier: one allocator design with its eviction rule --------------- */
struct kvtier;

/**
 * struct kvtier_ops - one tier's design
 * @name: what it is, for the report
 * @create: set up t->st for t->npages pages, t->nunits unit ids
 * @destroy: free it
 * @alloc: @npages pages for consecutive units of t->ppb pages (the last
 *	may be shorter), evicting as the design does (victims pushed with
 *	kvtier_victim()); extents into @ext; count, or -ENOMEM (nothing taken)
 * @add: make allocated pages unit @unit, unpinned, the most recently used
 * @pin: one more pin on each unit (a pinned unit is never evicted)
 * @unpin: one pin less on each
 * @touch: mark the units used, in order (the last one most recently)
 * @free: free pages that are in no unit
 */
struct kvtier_ops {
	const char *name;
	int (*create)(struct kvtier *t);
	void (*destroy)(struct kvtier *t);
	int (*alloc)(struct kvtier *t, uint32_t npages, struct hkv_extent *ext, unsigned max);
	int (*add)(struct kvtier *t, uint32_t unit, const struct hkv_extent *ext, unsigned n);
	int (*pin)(struct kvtier *t, const uint32_t *u, unsigned n);
	int (*unpin)(struct kvtier *t, const uint32_t *u, unsigned n);
	int (*touch)(struct kvtier *t, const uint32_t *u, unsigned n);
	int (*free)(struct kvtier *t, const struct hkv_extent *ext, unsigned n);
};

struct kvtier {
	const struct kvtier_ops *ops;
	int level;			/* 1 or 2 */
	uint64_t npages;
	unsigned ppb;			/* pages per block */
	uint32_t nunits;
	double room_low, room_high;	/* hugekv's watermarks */
	struct hkv_pool *mem;		/* L2: the pool that holds the bytes */
	void *st;
	uint32_t *victims;		/* units evicted by the last call */
	uint32_t nvict, vcap;
	uint64_t evict_runs, evictions;	/* engines count here; hugekv: its stats */
	int inject;			/* KV_INJECT_* aimed at this tier */
};

/* the design evicted @unit (not callable into the design) */
void kvtier_victim(struct kvtier *t, uint32_t unit);

extern const struct kvtier_ops kv_hugekv_l1, kv_hugekv_l2;
extern const struct kvtier_ops kv_sglang_dev, kv_sglang_host;
extern const struct kvtier_ops kv_vllm_pool, kv_vllm_cpu, kv_lmcache_ff;

/* ---- one design at both tiers, and what a run measures ------------------ */
struct kvdesign {
	const char *name;
	const struct kvtier_ops *l1, *l2;
};

#define KV_NDESIGNS	4
extern const struct kvdesign kv_designs[KV_NDESIGNS];

enum { KV_INJECT_NONE, KV_INJECT_DOUBLE_FREE, KV_INJECT_MISPLACE };

struct kvcfg {
	const struct kvtrace *trace;
	unsigned page_tokens, block_tokens, ppb;
	uint64_t page_bytes;		/* modelled bytes per page */
	uint64_t l1_pages, l2_pages;
	uint64_t stamp_bytes;		/* bytes of each L2 page really held */
	double room_low, room_high;	/* hugekv, fractions */
	int backing;			/* of the L2 memory */
	uint32_t interval;		/* timeline sample every N requests */
	int inject;
	const char *inject_design;
};

struct kvpoint {			/* one timeline sample (window since the last) */
	uint32_t req;
	double hit_l1, hit_l2;		/* cumulative */
	double desc_per_transfer;	/* window */
	double pages_per_desc;		/* window */
	uint64_t l1_free_ext, l1_largest, l2_free_ext, l2_largest, l1_free, l2_free;
};

/* the tier calls timed, by kind and tier: KV_OP(KV_ALLOC, 1) */
enum { KV_ALLOC, KV_ADD, KV_PIN, KV_UNPIN, KV_TOUCH, KV_FREE, KV_NKINDS };
#define KV_OP(kind, L)	((kind) * 2 + (L))
#define KV_NOPS		(2 * KV_NKINDS)
extern const char *const kv_op_names[KV_NOPS];

struct kvstats {
	uint64_t blocks, hit_l1, hit_l2, miss, dup, too_big;
	uint64_t loads, load_pages, load_desc;
	uint64_t backups, backup_pages, backup_desc;
	uint64_t evict_runs[2], evictions[2];
	uint64_t allocs, alloc_extents;
	uint64_t op_ticks[KV_NOPS], op_calls[KV_NOPS];	/* overhead subtracted */
	uint32_t *desc_load, *desc_backup;	/* per transfer */
	struct kvpoint *tl;
	uint32_t ntl;
	struct frag end[2];
};

struct kvrun {
	const struct kvdesign *d;
	const struct kvcfg *c;
	struct kvtier tier[2];
	struct hkv_pool *mem;		/* L2 bytes (the hugekv L2 pool itself) */
	uint8_t *cnt[2];		/* node -> pages in the tier (0: absent) */
	uint32_t *pg[2];		/* node -> its pages, ppb each */
	uint64_t *shadow[2];		/* 1 = handed out */
	uint64_t *tag;			/* L1 "device memory": one key per page */
	uint64_t *ticks;		/* per request: allocator + eviction */
	struct kvstats s;
	uint64_t win_desc, win_pages, win_transfers;
	uint64_t overhead;
	uint8_t *pin1, *pin2;		/* node -> pins this request holds */
	uint32_t *seen, gen;		/* node -> gen: listed once */
	/* scratch, one request */
	struct hkv_extent *ext;
	unsigned maxext;
	uint32_t *u1, *u2, *unew, *ut, *priv_pg, *scratch;
	uint8_t *np2;
	uint32_t npriv, nnew, nut;
};

int kvrun_init(struct kvrun *r, const struct kvdesign *d, const struct kvcfg *c);
void kvrun_fini(struct kvrun *r);
/* replay request @i; -EUCLEAN when an invariant broke (said why) */
int kvrun_request(struct kvrun *r, uint32_t i);
/* after the last request: end-of-run fragmentation, hugekv's counters */
int kvrun_finish(struct kvrun *r);

#endif /* HKV_BENCH_KVMODEL_H */
