/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hugekv_trace.h - what bpf/hugekv_trace.bpf.c and its loader (hkv-trace,
 * tools/hkv-trace/hugekv_trace.c) share: probe ids and arguments (from
 * hugekv_probes.h) and map layouts.
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

#include "hugekv_probes.h"

/* index of the "counts" map: hits per probe (HKV_P_ALLOC, ...: the rows of
 * hugekv_probes.h in order), then ring buffer drops */
#define HKV_P_ENUM_(lib, name, ID, ...) HKV_P_##ID,
enum hkv_probe_id {
	HKV_PROBE_LIST(HKV_P_ENUM_)
	HKV_P_NR,
};
#define HKV_C_DROPPED	HKV_P_NR	/* events lost to a full ring buffer */
#define HKV_C_NR	(HKV_P_NR + 1)

/* struct hkv_args_<name>: one probe's arguments, as the BPF program reads
 * them (U: __u64, S: __s64) */
#define HKV_ARG_T_U	__u64
#define HKV_ARG_T_S	__s64
#define HKV_ARG_FIELD_(i, arg) HKV_PP_CAT(HKV_ARG_T_, HKV_ARG_TYPE(arg)) HKV_ARG_NAME(arg);
#define HKV_ARGS_STRUCT_(lib, name, ID, ...) \
	struct hkv_args_##name { HKV_PP_EACH(HKV_ARG_FIELD_, __VA_ARGS__) };
HKV_PROBE_LIST(HKV_ARGS_STRUCT_)

/* index of the "hists" map */
enum hkv_hist_id {
	HKV_H_ALLOC_PAGES,	/* pages asked per allocation */
	HKV_H_ALLOC_EXTENTS,	/* extents returned per successful allocation */
	HKV_H_EVICT_PAGES,	/* pages per evicted unit */
	HKV_H_XFER_NS,		/* ns per transfer (xfer_done) */
	HKV_H_NR,
};

/* log2 buckets: slot 0 holds 0, slot s >= 1 holds [2^(s-1), 2^s) */
#define HKV_HIST_SLOTS	64

#define HKV_MAX_POOLS	4096	/* (process, pool) pairs tracked */
#define HKV_MAX_LANES	16384	/* (process, pool, lane) gauges tracked */
#define HKV_MAX_PEERS	4096	/* (process, pool, peer) transfer rows */
#define HKV_RINGBUF_BYTES (256 * 1024)
/* a transfer that took more than this many times its peer's mean so far
 * (after HKV_STRAGGLER_MIN transfers) is a straggler: counted, and sent
 * as an event */
#define HKV_STRAGGLER_FACTOR	4
#define HKV_STRAGGLER_MIN	8

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

struct hkv_peer_key {
	__u32 tgid;
	__u32 pad;
	__u64 pool;
	__u64 peer;
};

/* "xfers" map: transfers of one pool to or from one peer */
struct hkv_xfer_stats {
	__u64 submits, submit_pages, submit_ops, submit_bytes;
	__u64 dones, done_ops, done_bytes, failures;
	__u64 ns_sum, ns_max, stragglers;
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
	__u32 type;	/* HKV_P_ALLOC (failures only), _EVICT_RUN, _ARENA_*,
			 * _XFER_DONE (failures and stragglers) */
	__u64 pool;
	__s64 arg[5];	/* the probe's arguments after the pool id */
};

#endif /* HUGEKV_TRACE_H */
