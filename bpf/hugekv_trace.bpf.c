// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * hugekv.bpf.c - CO-RE programs on the "hugekv" USDT probes of libhugekv.so.
 *
 * They aggregate in the kernel: per-pool counters, per-lane fragmentation
 * gauges, log2 histograms; rare events (eviction runs, arena mappings and
 * fallbacks, allocation failures) go to a ring buffer. hkv-trace attaches
 * them (bpf_program__attach_usdt) and reads or pins the maps.
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

SEC("usdt")
int BPF_USDT(hkv_alloc, __u64 pool, long lane, __u64 asked, long ret,
	     __u64 first, __u64 largest)
{
	struct hkv_pool_stats *st = pool_stats(pool);

	count(HKV_P_ALLOC);
	hist_add(HKV_H_ALLOC_PAGES, asked);
	if (!st)
		return 0;
	ADD(&st->allocs, 1);
	if (ret < 0) {
		ADD(&st->alloc_failures, 1);
		emit(HKV_P_ALLOC, pool, lane, asked, ret, first, largest);
		return 0;
	}
	hist_add(HKV_H_ALLOC_EXTENTS, ret);
	ADD(&st->alloc_pages, asked);
	ADD(&st->alloc_extents, ret);
	if (ret > 1)
		ADD(&st->multi_extent_allocs, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(hkv_free, __u64 pool, long lane, __u64 pages, __u64 next, long ret)
{
	struct hkv_pool_stats *st = pool_stats(pool);

	count(HKV_P_FREE);
	if (!st)
		return 0;
	if (ret < 0) {
		ADD(&st->free_failures, 1);
		return 0;
	}
	ADD(&st->frees, 1);
	ADD(&st->freed_pages, pages);
	return 0;
}

SEC("usdt")
int BPF_USDT(hkv_evict, __u64 pool, long lane, __u64 unit, __u64 pages, long reason)
{
	struct hkv_pool_stats *st = pool_stats(pool);

	count(HKV_P_EVICT);
	hist_add(HKV_H_EVICT_PAGES, pages);
	if (!st)
		return 0;
	ADD(&st->evictions, 1);
	ADD(&st->evicted_pages, pages);
	return 0;
}

SEC("usdt")
int BPF_USDT(hkv_evict_run, __u64 pool, __u64 before, __u64 target, __u64 freed,
	     __u64 units)
{
	struct hkv_pool_stats *st = pool_stats(pool);

	count(HKV_P_EVICT_RUN);
	if (st) {
		ADD(&st->evict_runs, 1);
		ADD(&st->evict_run_freed, freed);
	}
	emit(HKV_P_EVICT_RUN, pool, before, target, freed, units, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(hkv_frag, __u64 pool, __u64 lane, __u64 fpages, __u64 fext,
	     __u64 largest, __u64 ufi)
{
	struct hkv_lane_key k = { .tgid = tgid(), .lane = lane, .pool = pool };
	struct hkv_lane_frag g = {
		.free_pages = fpages, .free_extents = fext,
		.largest_free_extent = largest, .unusable_permille = ufi,
		.updated_ns = bpf_ktime_get_ns(),
	};
	struct hkv_pool_stats *st = pool_stats(pool);

	count(HKV_P_FRAG);
	if (st)
		ADD(&st->frags, 1);
	bpf_map_update_elem(&lanes, &k, &g, BPF_ANY);
	return 0;
}

SEC("usdt")
int BPF_USDT(hkv_arena_map, __u64 pool, long node, __u64 bytes, __u64 pgsz, __u64 ns)
{
	struct hkv_pool_stats *st = pool_stats(pool);

	count(HKV_P_ARENA_MAP);
	if (st) {
		ADD(&st->arena_maps, 1);
		ADD(&st->mapped_bytes, bytes);
	}
	emit(HKV_P_ARENA_MAP, pool, node, bytes, pgsz, ns, 0);
	return 0;
}

SEC("usdt")
int BPF_USDT(hkv_arena_fallback, __u64 pool, long node, __u64 bytes, __u64 wanted,
	     long err, __u64 ns)
{
	struct hkv_pool_stats *st = pool_stats(pool);

	count(HKV_P_ARENA_FALLBACK);
	if (st)
		ADD(&st->fallbacks, 1);
	emit(HKV_P_ARENA_FALLBACK, pool, node, bytes, wanted, err, ns);
	return 0;
}
