/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hugekv_trace.h - map layouts shared by bpf/hugekv.bpf.c and hkv-trace.
 *
 * Every value is a plain struct of __u64 so `bpftool map dump pinned` shows
 * it with field names (BTF). Counters are added atomically in the kernel:
 * the counts a tracer reads are exact, whichever CPUs the probes fired on.
 */
#ifndef HUGEKV_TRACE_H
#define HUGEKV_TRACE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* index of the "counts" map: hits per probe, then ring buffer drops */
enum hkv_probe_id {
	HKV_P_ALLOC,
	HKV_P_FREE,
	HKV_P_EVICT,
	HKV_P_EVICT_RUN,
	HKV_P_FRAG,
	HKV_P_ARENA_MAP,
	HKV_P_ARENA_FALLBACK,
	HKV_P_NR,
};
#define HKV_C_DROPPED	HKV_P_NR	/* events lost to a full ring buffer */
#define HKV_C_NR	(HKV_P_NR + 1)

/* index of the "hists" map */
enum hkv_hist_id {
	HKV_H_ALLOC_PAGES,	/* pages asked per allocation */
	HKV_H_ALLOC_EXTENTS,	/* extents returned per successful allocation */
	HKV_H_EVICT_PAGES,	/* pages per evicted unit */
	HKV_H_NR,
};

/* log2 buckets: slot 0 holds 0, slot s >= 1 holds [2^(s-1), 2^s) */
#define HKV_HIST_SLOTS	64

#define HKV_MAX_POOLS	4096	/* (process, pool) pairs tracked */
#define HKV_MAX_LANES	16384	/* (process, pool, lane) gauges tracked */
#define HKV_RINGBUF_BYTES (256 * 1024)

struct hkv_pool_key {
	__u32 tgid;
	__u32 pad;
	__u64 pool;
};

struct hkv_lane_key {
	__u32 tgid;
	__u32 lane;
	__u64 pool;
};

/* "pools" map: counters of one pool of one process */
struct hkv_pool_stats {
	__u64 allocs, alloc_failures, alloc_pages, alloc_extents;
	__u64 multi_extent_allocs;
	__u64 frees, free_failures, freed_pages;
	__u64 evictions, evicted_pages, evict_runs, evict_run_freed;
	__u64 frags;
	__u64 arena_maps, mapped_bytes, fallbacks;
};

/* "lanes" map: fragmentation gauges of one lane, from the last frag hit */
struct hkv_lane_frag {
	__u64 free_pages, free_extents, largest_free_extent;
	__u64 unusable_permille;
	__u64 updated_ns;		/* bpf_ktime_get_ns() of the hit */
};

struct hkv_hist {
	__u64 slot[HKV_HIST_SLOTS];
};

/* "events" ring buffer: rare events (type is an enum hkv_probe_id) */
struct hkv_event {
	__u64 ts_ns;
	__u32 tgid;
	__u32 type;	/* HKV_P_ALLOC (failures only), _EVICT_RUN, _ARENA_* */
	__u64 pool;
	__s64 arg[5];	/* the probe's arguments after the pool id */
};

#endif /* HUGEKV_TRACE_H */
