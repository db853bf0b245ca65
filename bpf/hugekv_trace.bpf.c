// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hugekv_trace.bpf.c - CO-RE programs on the "hugekv" USDT probes of
 * libhugekv.so and libhugekv-xfer.so.
 *
 * They aggregate in the kernel: per-pool counters, per-lane fragmentation
 * gauges, per-peer transfer counters, log2 histograms; rare events
 * (eviction runs, arena mappings and fallbacks, allocation failures,
 * failed and straggling transfers) go to a ring buffer. hkv-trace attaches
 * them (bpf_program__attach_usdt) and reads or pins the maps.
 *
 * One program per row of hugekv_probes.h, generated below: hkv_<name>
 * reads the probe's arguments into a struct hkv_args_<name> and calls
 * on_<name>(), the part written here by hand.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "hugekv_trace.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HKV_C_NR);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HKV_MAX_POOLS);
	__type(key, struct hkv_pool_key);
	__type(value, struct hkv_pool_stats);
} pools SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HKV_MAX_LANES);
	__type(key, struct hkv_lane_key);
	__type(value, struct hkv_lane_frag);
} lanes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HKV_MAX_PEERS);
	__type(key, struct hkv_peer_key);
	__type(value, struct hkv_xfer_stats);
} xfers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HKV_H_NR);
	__type(key, __u32);
	__type(value, struct hkv_hist);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, HKV_RINGBUF_BYTES);
} events SEC(".maps");

#define ADD(p, v)	__sync_fetch_and_add((p), (v))

static __always_inline __u32 tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

static __always_inline void count(__u32 id)
{
	__u64 *c = bpf_map_lookup_elem(&counts, &id);

	if (c)
		ADD(c, 1);
}

static __always_inline __u32 hist_slot(__u64 v)
{
	__u32 r = 0;

	if (!v)
		return 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r + 1 < HKV_HIST_SLOTS ? r + 1 : HKV_HIST_SLOTS - 1;
}

static __always_inline void hist_add(__u32 id, __u64 v)
{
	struct hkv_hist *h = bpf_map_lookup_elem(&hists, &id);
	__u32 s = hist_slot(v);

	if (h && s < HKV_HIST_SLOTS)
		ADD(&h->slot[s], 1);
}

/* the pool's counters, created zeroed on first use */
static __always_inline struct hkv_pool_stats *pool_stats(__u64 pool)
{
	struct hkv_pool_key k = { .tgid = tgid(), .pool = pool };
	static const struct hkv_pool_stats zero;
	struct hkv_pool_stats *st;

	st = bpf_map_lookup_elem(&pools, &k);
	if (st)
		return st;
	bpf_map_update_elem(&pools, &k, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&pools, &k);
}

static __always_inline void emit(__u32 type, __u64 pool, __s64 a0, __s64 a1,
				 __s64 a2, __s64 a3, __s64 a4)
{
	struct hkv_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(HKV_C_DROPPED);
		return;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->tgid = tgid();
	e->type = type;
	e->pool = pool;
	e->arg[0] = a0;
	e->arg[1] = a1;
	e->arg[2] = a2;
	e->arg[3] = a3;
	e->arg[4] = a4;
	bpf_ringbuf_submit(e, 0);
}

/* on_<name>(): the aggregation of one probe's hit */
#define HKV_ON(name)	static __always_inline int on_##name(const struct hkv_args_##name *a)

HKV_ON(alloc)
{
	struct hkv_pool_stats *st = pool_stats(a->pool);

	count(HKV_P_ALLOC);
	hist_add(HKV_H_ALLOC_PAGES, a->asked);
	if (!st)
		return 0;
	ADD(&st->allocs, 1);
	if (a->ret < 0) {
		ADD(&st->alloc_failures, 1);
		emit(HKV_P_ALLOC, a->pool, a->lane, a->asked, a->ret, a->first, a->largest);
		return 0;
	}
	hist_add(HKV_H_ALLOC_EXTENTS, a->ret);
	ADD(&st->alloc_pages, a->asked);
	ADD(&st->alloc_extents, a->ret);
	if (a->ret > 1)
		ADD(&st->multi_extent_allocs, 1);
	return 0;
}

HKV_ON(free)
{
	struct hkv_pool_stats *st = pool_stats(a->pool);

	count(HKV_P_FREE);
	if (!st)
		return 0;
	if (a->ret < 0) {
		ADD(&st->free_failures, 1);
		return 0;
	}
	ADD(&st->frees, 1);
	ADD(&st->freed_pages, a->pages);
	return 0;
}

HKV_ON(evict)
{
	struct hkv_pool_stats *st = pool_stats(a->pool);

	count(HKV_P_EVICT);
	hist_add(HKV_H_EVICT_PAGES, a->pages);
	if (!st)
		return 0;
	ADD(&st->evictions, 1);
	ADD(&st->evicted_pages, a->pages);
	return 0;
}

HKV_ON(evict_run)
{
	struct hkv_pool_stats *st = pool_stats(a->pool);

	count(HKV_P_EVICT_RUN);
	if (st) {
		ADD(&st->evict_runs, 1);
		ADD(&st->evict_run_freed, a->freed);
	}
	emit(HKV_P_EVICT_RUN, a->pool, a->before, a->target, a->freed, a->units, 0);
	return 0;
}

HKV_ON(frag)
{
	struct hkv_lane_key k = { .tgid = tgid(), .lane = a->lane, .pool = a->pool };
	struct hkv_lane_frag g = {
		.free_pages = a->fpages, .free_extents = a->fext,
		.largest_free_extent = a->largest, .unusable_permille = a->ufi,
		.updated_ns = bpf_ktime_get_ns(),
	};
	struct hkv_pool_stats *st = pool_stats(a->pool);

	count(HKV_P_FRAG);
	if (st)
		ADD(&st->frags, 1);
	bpf_map_update_elem(&lanes, &k, &g, BPF_ANY);
	return 0;
}

HKV_ON(arena_map)
{
	struct hkv_pool_stats *st = pool_stats(a->pool);

	count(HKV_P_ARENA_MAP);
	if (st) {
		ADD(&st->arena_maps, 1);
		ADD(&st->mapped_bytes, a->bytes);
	}
	emit(HKV_P_ARENA_MAP, a->pool, a->node, a->bytes, a->pgsz, a->ns, 0);
	return 0;
}

HKV_ON(arena_fallback)
{
	struct hkv_pool_stats *st = pool_stats(a->pool);

	count(HKV_P_ARENA_FALLBACK);
	if (st)
		ADD(&st->fallbacks, 1);
	emit(HKV_P_ARENA_FALLBACK, a->pool, a->node, a->bytes, a->wanted, a->err, a->ns);
	return 0;
}

HKV_ON(named_recover)
{
	count(HKV_P_NAMED_RECOVER);
	emit(HKV_P_NAMED_RECOVER, a->pool, a->reclaimed, a->units, a->dropped, 0, 0);
	return 0;
}

/* the peer's transfer counters, created zeroed on first use */
static __always_inline struct hkv_xfer_stats *peer_stats(__u64 pool, __u64 peer)
{
	struct hkv_peer_key k = { .tgid = tgid(), .pool = pool, .peer = peer };
	static const struct hkv_xfer_stats zero;
	struct hkv_xfer_stats *st;

	st = bpf_map_lookup_elem(&xfers, &k);
	if (st)
		return st;
	bpf_map_update_elem(&xfers, &k, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&xfers, &k);
}

HKV_ON(xfer_submit)
{
	struct hkv_xfer_stats *st = peer_stats(a->pool, a->peer);

	count(HKV_P_XFER_SUBMIT);
	if (!st)
		return 0;
	ADD(&st->submits, 1);
	ADD(&st->submit_pages, a->pages);
	ADD(&st->submit_ops, a->ops);
	ADD(&st->submit_bytes, a->bytes);
	return 0;
}

HKV_ON(xfer_done)
{
	struct hkv_xfer_stats *st = peer_stats(a->pool, a->peer);
	__u64 n, mean;

	count(HKV_P_XFER_DONE);
	hist_add(HKV_H_XFER_NS, a->ns);
	if (!st)
		return 0;
	if (a->result < 0) {
		ADD(&st->failures, 1);
		emit(HKV_P_XFER_DONE, a->pool, a->peer, a->ops, a->bytes, a->result, a->ns);
		return 0;
	}
	/* the mean of the transfers before this one: a straggler is judged
	 * against its peer's own history, not a global threshold */
	n = st->dones;
	mean = n ? st->ns_sum / n : 0;
	ADD(&st->dones, 1);
	ADD(&st->done_ops, a->ops);
	ADD(&st->done_bytes, a->bytes);
	ADD(&st->ns_sum, a->ns);
	if (a->ns > st->ns_max)
		st->ns_max = a->ns;	/* a racing larger value may be lost: a gauge */
	if (n >= HKV_STRAGGLER_MIN && a->ns > HKV_STRAGGLER_FACTOR * mean) {
		ADD(&st->stragglers, 1);
		emit(HKV_P_XFER_DONE, a->pool, a->peer, a->ops, a->bytes, a->result, a->ns);
	}
	return 0;
}

HKV_ON(xfer_copy)
{
	count(HKV_P_XFER_COPY);
	return 0;
}

/* hkv_<name>: read the probe's arguments (bpf_usdt_arg) into its struct */
#define HKV_READ_ARG_(i, arg) \
	if (bpf_usdt_arg(ctx, i, &v) == 0) \
		a.HKV_ARG_NAME(arg) = v;
#define HKV_PROGRAM_(lib, name, ID, ...) \
SEC("usdt") \
int hkv_##name(struct pt_regs *ctx) \
{ \
	struct hkv_args_##name a = {}; \
	long v; \
	HKV_PP_EACH(HKV_READ_ARG_, __VA_ARGS__) \
	return on_##name(&a); \
}
HKV_PROBE_LIST(HKV_PROGRAM_)
