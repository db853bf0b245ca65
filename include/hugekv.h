/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * hugekv - a host KV-cache allocator on NUMA-local hugepage arenas.
 *
 * Conventions: actions return 0 (or a count) on success and a negative errno
 * on failure, and change nothing when they fail; predicates return bool;
 * option structs start with "size_t sz" (set it to sizeof) so the ABI can
 * grow.
 *
 * Thread safety: every call may come from any thread. Calls on different
 * lanes of one pool do not contend; calls on one lane serialize on that
 * lane's lock. hkv_pool_destroy() must not race with any other call on the
 * same pool. Pins, unpins, touches and eviction may run concurrently from
 * different threads; a pinned unit is never evicted, removed or freed.
 *
 * fork(): a pool belongs to the process that created it. Its memory is
 * mapped MADV_DONTFORK, so a child has none of it, and locks other threads
 * held at the fork stay held in the child. In a child, every call on a pool
 * created before the fork returns -ECHILD (hkv_page_ptr() NULL,
 * hkv_available() 0, hkv_set_evict_fn() nothing) and changes nothing;
 * hkv_pool_id() works, and hkv_pool_destroy() frees the child's copy of the
 * bookkeeping without touching the old arena's address range. A child may
 * create pools of its own.
 */
#ifndef HUGEKV_H
#define HUGEKV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef HKV_API
#define HKV_API __attribute__((visibility("default")))
#endif

/* backing: what memory a pool sits on */
#define HKV_BACKING_AUTO	0	/* 1G -> 2M -> THP -> 4K, best first */
#define HKV_BACKING_HUGE_1G	1	/* hugetlb 1 GiB pages */
#define HKV_BACKING_HUGE_2M	2	/* hugetlb 2 MiB pages */
#define HKV_BACKING_THP		3	/* anonymous memory with MADV_HUGEPAGE */
#define HKV_BACKING_SMALL	4	/* anonymous 4 KiB pages */
#define HKV_BACKING_NONE	5	/* index-only: no memory (page_bytes == 0) */

/* hkv_pool_opts.flags */
#define HKV_POOL_STRICT		(1u << 0)	/* fail instead of falling back */
#define HKV_POOL_NO_PREFAULT	(1u << 1)	/* do not prefault the arena */

/* lane argument of hkv_alloc() */
#define HKV_LANE_ANY		(~0u)

/* most lanes a pool may have (more is -E2BIG): an HKV_LANE_ANY allocation
 * and eviction look at every lane, so the count bounds their cost */
#define HKV_POOL_MAX_LANES	65536

/* hkv_alloc() flags */
#define HKV_ALLOC_CONTIG	(1u << 0)	/* exactly one extent or -ENOMEM */
#define HKV_ALLOC_EVICT		(1u << 1)	/* run planned eviction first */

/* hkv_unit_remove() flags */
#define HKV_UNIT_FREE		(1u << 0)	/* also free the unit's pages */

/* hkv_stats_print() flags */
#define HKV_PRINT_JSON		(1u << 0)

/* hkv_region.flags */
#define HKV_REGION_THP		(1u << 0)	/* THP-backed (4 KiB + khugepaged) */
#define HKV_REGION_FALLBACK	(1u << 1)	/* backing below what was asked */
#define HKV_REGION_MISPLACED	(1u << 2)	/* some pages not on the node */
#define HKV_REGION_ROUND_UP	(1u << 3)	/* AUTO skipped a larger page size:
						 * rounding up to it would waste
						 * more than 1/8 of the segment */

struct hkv_pool;

/**
 * struct hkv_extent - a run of contiguous pages
 * @start: first page number
 * @len: number of pages; never 0 in a valid extent
 */
struct hkv_extent {
	uint64_t start, len;
};

/**
 * struct hkv_pool_opts - how to build a pool
 * @sz: sizeof(struct hkv_pool_opts)
 * @npages: pages in the pool (> 0)
 * @page_bytes: bytes per KV page; 0 = index-only pool
 * @nlanes: owner lanes, 1 to HKV_POOL_MAX_LANES (0 means 1)
 * @backing: HKV_BACKING_*; ignored (NONE) for index-only pools
 * @numa_node: node to bind, or -1 = local/any
 * @flags: HKV_POOL_STRICT, HKV_POOL_NO_PREFAULT
 * @prefault_threads: 0 = one per CPU of the node
 * @free_room_low: low watermark, fraction of npages; 0 = off
 * @free_room_high: high watermark, fraction of npages (>= low)
 * @chunk_bytes: cap of one registration chunk in bytes (0 = none); extents
 *	never cross a chunk boundary. Rounded down to whole pages.
 * @evict_window: victim window among the coldest unpinned units; within
 *	it the unit whose extents border the most free pages is evicted
 *	(0 = default 1 = plain LRU; hkv-bench churn --watermarks measured
 *	no gain in extents per allocation from a window of 8, only slower
 *	runs)
 * @name: NULL for a pool private to this process, or the name of a named
 *	pool: its memory and bookkeeping live in files that other processes
 *	attach with hkv_pool_attach() (see "Named pools" in the docs)
 * @label: NULL, or a short human label (for example "L2 host tier") shown
 *	by the stats, the metrics and the tools beside the pool's id: at most
 *	HKV_LABEL_MAX - 1 bytes, no control characters, copied at create
 */
struct hkv_pool_opts {
	size_t sz;
	uint64_t npages;
	uint64_t page_bytes;
	unsigned nlanes;
	int backing;
	int numa_node;
	unsigned flags;
	unsigned prefault_threads;
	double free_room_low, free_room_high;
	/* first released layout ends here */
	uint64_t chunk_bytes;
	unsigned evict_window;
	const char *name;
	const char *label;
};

/**
 * struct hkv_region - one contiguous mapping with one page size on one node
 * @base: first byte
 * @bytes: length in bytes
 * @first_page: first KV page in the region
 * @npages: KV pages in the region
 * @node: NUMA node verified after prefault, -1 if mixed or unknown
 * @hugepage_bytes: backing page size obtained (1G, 2M or 4K; THP: 4K + flag)
 * @flags: HKV_REGION_*
 */
struct hkv_region {
	void *base;
	uint64_t bytes;
	uint64_t first_page, npages;
	int node;
	uint64_t hugepage_bytes;
	unsigned flags;
};

#define HKV_STATS_LANES		64	/* lanes reported inline in hkv_stats */
#define HKV_STATS_REGIONS	16	/* regions reported inline in hkv_stats */
#define HKV_UFI_SIZES		4	/* request sizes UFI is reported for */
#define HKV_EXTENTS_HIST	6	/* extents per allocation ranges (hkv_stats) */
#define HKV_AGE_HIST		8	/* evicted-unit age ranges (hkv_stats) */
#define HKV_LABEL_MAX		64	/* bytes of a pool label, NUL included */

/**
 * struct hkv_region_stats - backing obtained for one region
 * @node: node verified (-1 mixed/unknown)
 * @hugepage_bytes: page size obtained
 * @wanted_bytes: page size asked for
 * @bytes: bytes mapped
 * @prefault_ns: time spent prefaulting
 * @misplaced_pages: hugepages found on another node
 * @flags: HKV_REGION_*
 * @fallback_errno: why the wanted page size was not obtained (0 = it was)
 */
struct hkv_region_stats {
	int node;
	uint64_t hugepage_bytes, wanted_bytes, bytes;
	uint64_t prefault_ns, misplaced_pages;
	unsigned flags;
	int fallback_errno;
};

/**
 * struct hkv_stats - a snapshot of a pool
 * @sz: set by the caller to sizeof(struct hkv_stats); fields past a
 *	smaller @sz are not written
 * @npages: pages in the pool
 * @free_pages: free pages now
 * @free_extents: free extents, counted per lane (extents never merge across
 *	a lane or chunk boundary)
 * @largest_free_extent: pages in the largest free extent of any lane
 * @nlanes: lanes of the pool
 * @page_bytes: bytes per KV page (0: index-only)
 * @units: cache units
 * @unit_pages: pages held by units
 * @pinned_units: units with a pin count above zero
 * @pinned_pages: pages of pinned units
 * @allocs: successful hkv_alloc()/hkv_alloc_lanes() calls
 * @alloc_failures: failed ones
 * @frees: successful hkv_free() calls
 * @extents_returned: extents handed out by all allocations
 * @multi_extent_allocs: allocations answered with more than one extent
 * @pages_allocated: pages handed out
 * @pages_freed: pages given back (frees and evictions)
 * @evictions: units evicted
 * @evicted_pages: pages they held
 * @eviction_runs: planned eviction runs
 * @evict_failures: runs that could not reach their target
 * @extents_per_alloc: running mean of extents per allocation
 * @multi_extent_share: @multi_extent_allocs / @allocs
 * @ufi_size: the request sizes r that @ufi is reported for
 * @ufi: unusable free index UFI(r) for each of @ufi_size
 * @lane_free_pages: free pages of each of the first HKV_STATS_LANES lanes
 * @lane_free_extents: their free extents
 * @lane_largest_free_extent: their largest free extent
 * @backing: backing obtained, the worst over the regions (HKV_BACKING_*)
 * @backing_wanted: backing asked for, after HUGEKV_BACKING
 * @numa_node: node asked for, after HUGEKV_NODE
 * @prefault_threads: prefault threads used (per segment, the most)
 * @flags: pool flags, after HUGEKV_STRICT
 * @arena_bytes: bytes mapped
 * @arena_round_up_bytes: bytes mapped beyond npages * page_bytes
 * @prefault_ns: time spent prefaulting
 * @prefault_gbps: @arena_bytes / @prefault_ns
 * @misplaced_pages: hugepages found on another node than asked
 * @fallbacks: steps below the wanted backing, over all regions
 * @metadata_bytes: the allocator's own bookkeeping
 * @nregions: regions of the arena (hkv_regions())
 * @region: backing obtained per region, the first HKV_STATS_REGIONS
 * @served_calls: allocations and frees that found their lane locked and were
 *	run by the thread holding it, for the caller (which waits for the
 *	result): a measure of contention on lanes
 * @bias_revocations: times a lane that one thread had used alone (and so
 *	ran its calls without atomic operations) was taken by another thread;
 *	each costs a membarrier(2), a few microseconds
 * @deferred_frees: frees of a lane another thread held, answered at once
 *	and run by that thread at its next call (hkv_free())
 * @deferred_free_errors: deferred frees found invalid when run, because
 *	another thread freed the same pages, or made a unit of them, at the
 *	same time (a caller's bug; each is logged)
 * @alloc_failures_nospc: of @alloc_failures, those refused with -ENOSPC
 *	(the answer needed more extents than the caller had room for); the
 *	rest found too few free pages (-ENOMEM)
 * @extents_hist: successful allocations by extents returned: 1, 2, 3-4,
 *	5-8, 9-16, more (one count per range, not cumulative)
 * @evict_age_hist: evicted units by the time since their last add or
 *	touch: up to 10 ms, 100 ms, 1 s, 10 s, 1 min, 10 min, 1 h, more
 * @evict_age_ns: the sum of those ages
 * @oldest_pin_ns: how long the oldest pin still held has been held (the
 *	time since its unit's pin count left 0); 0 if nothing is pinned
 */
struct hkv_stats {
	size_t sz;
	uint64_t npages, free_pages, free_extents, largest_free_extent;
	/* first released layout ends here */
	unsigned nlanes;
	uint64_t page_bytes;
	/* residency */
	uint64_t units, unit_pages, pinned_units, pinned_pages;
	/* counters */
	uint64_t allocs, alloc_failures, frees, extents_returned;
	uint64_t multi_extent_allocs, pages_allocated, pages_freed;
	uint64_t evictions, evicted_pages, eviction_runs, evict_failures;
	/* fragmentation */
	double extents_per_alloc;	/* running mean */
	double multi_extent_share;	/* multi-extent allocs / allocs */
	uint64_t ufi_size[HKV_UFI_SIZES];	/* request sizes r */
	double ufi[HKV_UFI_SIZES];	/* unusable free index UFI(r) */
	/* per lane (first HKV_STATS_LANES lanes) */
	uint64_t lane_free_pages[HKV_STATS_LANES];
	uint64_t lane_free_extents[HKV_STATS_LANES];
	uint64_t lane_largest_free_extent[HKV_STATS_LANES];
	/* memory */
	int backing;			/* obtained (worst over regions) */
	int backing_wanted;		/* asked for, after HUGEKV_BACKING */
	int numa_node;			/* asked for, after HUGEKV_NODE */
	unsigned prefault_threads;	/* used */
	unsigned flags;			/* pool flags, after HUGEKV_STRICT */
	uint64_t arena_bytes;		/* mapped */
	uint64_t arena_round_up_bytes;	/* mapped beyond npages*page_bytes */
	uint64_t prefault_ns;
	double prefault_gbps;
	uint64_t misplaced_pages;
	unsigned fallbacks;
	uint64_t metadata_bytes;	/* allocator bookkeeping */
	unsigned nregions;
	struct hkv_region_stats region[HKV_STATS_REGIONS];
	uint64_t served_calls;
	uint64_t bias_revocations;
	uint64_t deferred_frees;
	uint64_t deferred_free_errors;
	/* metrics (Kbuild-docs/admin-guide/metrics.rst) */
	uint64_t alloc_failures_nospc;
	uint64_t extents_hist[HKV_EXTENTS_HIST];
	uint64_t evict_age_hist[HKV_AGE_HIST];
	uint64_t evict_age_ns;
	uint64_t oldest_pin_ns;
};

/**
 * hkv_pool_create() - create a pool
 * @opts: options; @opts->sz must be set
 * @out: receives the pool
 *
 * An index-only pool (page_bytes 0) holds no memory. A memory pool maps,
 * binds, prefaults and verifies its arena; once this returns 0, touching any
 * page never raises SIGBUS. With HKV_POOL_NO_PREFAULT, hugepages are
 * reserved at create and faulted on first touch; a hugetlb cgroup fault
 * limit is checked against the pool at create (refused or fallen back as a
 * shortfall), but pages that other processes of the same cgroup fault in
 * later still count against it: only prefault (the default) keeps the
 * promise whatever they do. HUGEKV_* environment variables override options.
 *
 * Return: 0, or -EINVAL (bad options), -ENOMEM (hugepage shortfall, memory),
 * -EPERM/-EAGAIN (memlock, cgroup), -E2BIG (a lane over 2^32-2 pages, or
 * more than HKV_POOL_MAX_LANES lanes). A failed create gives back
 * everything it took.
 */
HKV_API int hkv_pool_create(const struct hkv_pool_opts *opts, struct hkv_pool **out);

/**
 * hkv_pool_destroy() - destroy a pool and unmap its arena
 * @pool: the pool, or NULL (no-op)
 *
 * Must not race with any other call on @pool, nor run inside a callback
 * of a call on @pool (from @pool's evict callback it is refused: logged,
 * nothing done). In a fork() child of the creating process, frees only the
 * bookkeeping (the arena is not there).
 */
HKV_API void hkv_pool_destroy(struct hkv_pool *pool);

/**
 * hkv_pool_id() - the pool's id, as carried by trace probes
 * @pool: the pool
 *
 * Return: a process-unique id, starting at 1.
 */
HKV_API uint64_t hkv_pool_id(const struct hkv_pool *pool);

#define HKV_PLAN_NODES		16	/* node segments reported in hkv_plan */

/**
 * struct hkv_plan_node - what one node's segment of a planned arena gets
 * @node: NUMA node the segment is bound to
 * @ncpus: CPUs of the node (prefault threads are pinned to them)
 * @first_page: first KV page that starts in the segment
 * @npages: KV pages that start in the segment
 * @bytes: bytes the segment maps (a multiple of the page size it gets)
 * @backing: HKV_BACKING_* the segment would get
 * @hugepage_bytes: page size it would get (4096 for THP and 4 KiB)
 * @hugepages_needed: pages of @hugepage_bytes it needs (hugetlb; else 0)
 * @wanted_backing: HKV_BACKING_* the policy tries first
 * @wanted_bytes: page size of @wanted_backing
 * @wanted_needed: hugepages of @wanted_bytes the segment would need
 * @wanted_free: free hugepages of @wanted_bytes on the node now
 * @wanted_total: hugepages of @wanted_bytes in the node's pool now
 * @shortfall: hugepages of @wanted_bytes missing on the node (0 = none)
 * @reserve_total: the node's nr_hugepages for @wanted_bytes that would
 *	cover the segment (write it to
 *	/sys/devices/system/node/nodeN/hugepages/hugepages-<kB>kB/nr_hugepages)
 * @fallback_errno: why @wanted_backing would not be used (0 = it would):
 *	-EOPNOTSUPP page size or THP unavailable, -ENOMEM shortfall
 */
struct hkv_plan_node {
	int node;
	unsigned ncpus;
	uint64_t first_page, npages, bytes;
	int backing;
	uint64_t hugepage_bytes, hugepages_needed;
	int wanted_backing;
	uint64_t wanted_bytes, wanted_needed, wanted_free, wanted_total;
	uint64_t shortfall, reserve_total;
	int fallback_errno;
};

#define HKV_PLAN_PARTS		64	/* parts reported in hkv_plan */

/**
 * struct hkv_plan_part - one run of one page size inside a node segment
 * @node: NUMA node of the segment the part belongs to
 * @backing: HKV_BACKING_* of the part
 * @hugepage_bytes: its page size (4096 for THP and 4 KiB pages)
 * @bytes: bytes it maps, a multiple of its page size (of 2 MiB for THP)
 * @first_page: first KV page that starts in it
 * @npages: KV pages that start in it (a KV page may span two parts: the
 *	virtual range is contiguous)
 * @hugepages: hugetlb pages of @hugepage_bytes it takes (0 for THP, 4 KiB)
 * @node_free: free hugepages of @hugepage_bytes on the node now (0 for THP,
 *	4 KiB)
 * @shortfall: hugepages of a larger size that were missing for bytes now
 *	in this part (reserve that many more of @wanted_bytes to get them)
 * @wanted_bytes: page size these bytes would get with every size plentiful
 * @flags: HKV_REGION_FALLBACK (bytes here wanted a larger page size that is
 *	short or not offered), HKV_REGION_ROUND_UP (AUTO's size rule chose
 *	smaller pages)
 * @fallback_errno: why the larger size was not used: -ENOMEM (too few
 *	free), -EOPNOTSUPP (not offered); 0 when not a fallback
 *
 * Parts of a segment come in address order, largest page size first, so
 * each part starts aligned to its page size.
 */
struct hkv_plan_part {
	int node, backing;
	uint64_t hugepage_bytes, bytes, first_page, npages;
	uint64_t hugepages, node_free, shortfall, wanted_bytes;
	unsigned flags;
	int fallback_errno;
};

/**
 * struct hkv_plan - dry run of a pool's arena (hkv_pool_plan())
 * @sz: sizeof(struct hkv_plan), set by the caller
 * @backing_wanted: backing asked for, after HUGEKV_BACKING
 * @backing: worst backing any segment would get
 * @numa_node: node asked for, after HUGEKV_NODE (-1: one segment per node)
 * @flags: pool flags, after HUGEKV_STRICT
 * @prefault_threads: threads per segment asked for (0 = node's CPUs)
 * @kv_bytes: npages * page_bytes
 * @arena_bytes: bytes the arena would map
 * @round_up_bytes: @arena_bytes - @kv_bytes
 * @memlock_limit: RLIMIT_MEMLOCK soft limit in bytes (UINT64_MAX: none);
 *	hugetlb mappings are not charged to it, informational
 * @thp_mode: /sys/kernel/mm/transparent_hugepage/enabled choice ("always",
 *	"madvise", "never"; "" when the kernel has no THP)
 * @fallbacks: segments that would not get @backing_wanted
 * @nnodes: segments (entries of @node written, at most HKV_PLAN_NODES)
 * @node: one entry per node segment; its backing fields describe the
 *	smallest page size the segment uses, @part has each run
 * @nparts: entries of @part written
 * @part: every run of one page size, in address order (hkv_regions() of
 *	the created pool has one region per part)
 *
 * Page sizes (AUTO): each segment takes as many 1 GiB pages as are free,
 * then 2 MiB pages, then THP, then 4 KiB pages, in that address order. A
 * page size is used for the rest of a segment only if rounding that rest up
 * to it wastes at most 1/8 of the segment; otherwise it takes only the
 * whole pages that fit and the rest goes to the next size (a 16 MiB pool
 * maps 2 MiB pages, not a 1 GiB page). An explicit backing is used for the
 * whole segment as asked; without HKV_POOL_STRICT what its pool lacks
 * continues on the next sizes, with STRICT it is -ENOMEM.
 */
struct hkv_plan {
	size_t sz;
	int backing_wanted, backing, numa_node;
	unsigned flags, prefault_threads;
	uint64_t kv_bytes, arena_bytes, round_up_bytes, memlock_limit;
	char thp_mode[16];
	unsigned fallbacks, nnodes;
	struct hkv_plan_node node[HKV_PLAN_NODES];
	/* added in 0.2 */
	unsigned nparts;
	struct hkv_plan_part part[HKV_PLAN_PARTS];
};

/**
 * hkv_pool_plan() - dry run: what hkv_pool_create() would map, and where
 * @opts: pool options, as for hkv_pool_create() (HUGEKV_* applied)
 * @plan: receives the plan; the caller sets @plan->sz
 *
 * Reads the topology, the per-node hugepage pools, THP mode and memlock
 * limit, and chooses each node segment's backing with the same code that
 * hkv_pool_create() uses. Maps nothing and changes nothing. The answer is a
 * snapshot: hugepage reservations are global and other processes may take
 * free pages before a create runs.
 *
 * Return: 0 if the pool would be created on current free pages, -ENOMEM if
 * a strict pool would not (the plan says which node falls short and by how
 * much), -EINVAL for bad options or @plan->sz; -errno of a topology read.
 */
HKV_API int hkv_pool_plan(const struct hkv_pool_opts *opts, struct hkv_plan *plan);

/**
 * hkv_alloc() - allocate pages as extents
 * @pool: the pool
 * @npages: pages wanted (> 0)
 * @lane: lane to take them from, or HKV_LANE_ANY: one lane that has a free
 *	extent of @npages, else the lane with the most free pages if it has
 *	@npages free; else, when the pool as a whole has @npages free, several
 *	lanes at once (all or nothing, the fewest extents over all lanes' free
 *	extents, listed lane by lane; each extent stays inside its lane). Use
 *	hkv_alloc_lanes() to choose the count per lane.
 * @flags: 0 = contiguous-preferred; HKV_ALLOC_CONTIG = one extent or
 *	-ENOMEM; HKV_ALLOC_EVICT = run planned eviction first if needed
 *	(see hkv_unit_add()); nothing is evicted for a request that eviction
 *	cannot make fit: more pages than the lane (contiguous: than the lane
 *	and a chunk) or the pool, or than its free pages plus the pages of
 *	unpinned units eviction would take, or @max_ext 0. A contiguous
 *	request (or @max_ext 1) evicts until one free extent holds it.
 *	Eviction for a named lane takes the units homed there (whose first
 *	page, at hkv_unit_add(), lay in it); for HKV_LANE_ANY the pool's
 *	coldest units until the pool has room (the answer may spread over
 *	lanes), or, contiguous, those homed in the lane with the most free
 *	pages that eviction can give the extent
 * @ext: receives up to @max_ext extents, largest first
 * @max_ext: room in @ext
 *
 * Takes one best-fit extent when a free extent of at least @npages exists
 * (ties go exactly to the lowest address, not only to the lowest region);
 * otherwise whole extents largest-first and a best-fit remainder: the
 * fewest extents possible. Pages are carved from the low end of the chosen
 * extent.
 *
 * Return: number of extents, or -ENOMEM (not enough free pages, or, rarely,
 * the index could not grow its bookkeeping), -ENOSPC
 * (@max_ext too small for the best answer), -EINVAL, -EDEADLK
 * (HKV_ALLOC_EVICT from inside this pool's evict callback), -ECHILD (a pool
 * of the parent process, see fork() above); nothing is taken then.
 */
HKV_API int hkv_alloc(struct hkv_pool *pool, uint64_t npages, unsigned lane,
		      unsigned flags, struct hkv_extent *ext, unsigned max_ext);

/**
 * hkv_alloc_lanes() - allocate from several lanes at once, all or nothing
 * @pool: the pool
 * @count: count[i] pages from lane i, for every lane of the pool
 * @flags: as for hkv_alloc(); with HKV_ALLOC_EVICT, nothing is evicted
 *	unless eviction can make every lane's count fit (and @max_ext has
 *	room for one extent per lane; exactly that is contiguous per lane)
 * @ext: receives the extents, lane by lane
 * @max_ext: room in @ext
 *
 * Return: total number of extents, or -ENOMEM, -ENOSPC, -EINVAL, -EDEADLK,
 * -ECHILD (as for hkv_alloc()); nothing is taken then.
 */
HKV_API int hkv_alloc_lanes(struct hkv_pool *pool, const uint64_t *count,
			    unsigned flags, struct hkv_extent *ext, unsigned max_ext);

/**
 * hkv_free() - free every page of some extents
 * @pool: the pool
 * @ext: extents; sub-ranges of what was allocated are fine
 * @n: number of extents
 *
 * One extent of a lane that another thread is using may be answered at
 * once and freed by that thread, before the lane's next call of any thread
 * (so every later call, and hkv_available(), sees its pages free): the
 * freeing thread then does not wait for the other (HUGEKV_LANE_DEFER=0
 * turns this off; hkv_stats counts such frees). If the index cannot grow
 * then, the free waits in the lane's queue until it can.
 *
 * Return: 0, or -EINVAL if any page is out of range, not allocated or named
 * twice, or an extent is empty; -EBUSY if any page belongs to a unit (units
 * are released with hkv_unit_remove()); -ENOMEM if the free-extent index
 * cannot grow; -ECHILD (fork() above). Nothing is freed then.
 */
HKV_API int hkv_free(struct hkv_pool *pool, const struct hkv_extent *ext, unsigned n);

/**
 * hkv_extents_allocated() - are all pages of some extents allocated?
 * @pool: the pool
 * @ext: extents
 * @n: number of extents (> 0)
 *
 * For a caller that must not trust page numbers it is handed (a transfer
 * peer, an engine's free list): checks the allocation bitmap under the
 * lanes' locks, O(pages / 64), changing nothing. Pages in units count as
 * allocated. A snapshot: another thread may free the pages right after.
 *
 * Return: 0 if every page is allocated; -EINVAL if any page is free or out
 * of range, an extent is empty or wraps, or @n is 0; -ECHILD (fork()).
 */
HKV_API int hkv_extents_allocated(const struct hkv_pool *pool, const struct hkv_extent *ext,
				  unsigned n);

/**
 * hkv_lane_range() - the contiguous block of pages a lane owns
 * @pool: the pool
 * @lane: lane number
 * @out: receives the block
 *
 * Return: 0, or -EINVAL for a bad lane, -ECHILD (fork() above).
 */
HKV_API int hkv_lane_range(const struct hkv_pool *pool, unsigned lane,
			   struct hkv_extent *out);

/**
 * hkv_available() - free pages in the pool, O(1)
 * @pool: the pool
 *
 * Return: free pages (a snapshot under concurrency); 0 in a fork() child.
 */
HKV_API uint64_t hkv_available(const struct hkv_pool *pool);

/**
 * hkv_stats() - take a snapshot of counters, gauges and fragmentation
 * @pool: the pool
 * @st: receives the snapshot; the caller sets @st->sz
 *
 * Return: 0, or -EINVAL if @st->sz is smaller than the first layout,
 * -EDEADLK from inside this pool's evict callback, -ECHILD (fork() above).
 */
HKV_API int hkv_stats(const struct hkv_pool *pool, struct hkv_stats *st);

/**
 * hkv_stats_print() - print a pool's stats
 * @pool: the pool
 * @f: where to print
 * @flags: 0 = text table, HKV_PRINT_JSON = one JSON object
 *
 * Return: 0, or -EINVAL, or -EIO on a write error; what hkv_stats() returns.
 */
HKV_API int hkv_stats_print(const struct hkv_pool *pool, FILE *f, unsigned flags);

/**
 * hkv_check() - full invariant check (tests, fuzzing; scans everything)
 * @pool: the pool
 *
 * Checks that free extents are disjoint, maximal, inside their lane and
 * chunk, indexed and counted right, and that the page bitmaps agree; that
 * every page marked as a unit's belongs to exactly one unit (or to an
 * eviction whose free is still pending) and every unit's pages are
 * allocated and marked; and that the unit, pin and LRU counts agree. Holds
 * every lock of the pool while it runs.
 *
 * Return: 0, or -EUCLEAN on the first broken invariant (logged), -EINVAL,
 * -EDEADLK from inside this pool's evict callback, -ECHILD (fork() above).
 */
HKV_API int hkv_check(const struct hkv_pool *pool);

/**
 * hkv_page_ptr() - address of a KV page
 * @pool: the pool
 * @page: page number
 *
 * Return: the address, or NULL for index-only pools, bad pages, and in a
 * fork() child (the memory is not there).
 */
HKV_API void *hkv_page_ptr(const struct hkv_pool *pool, uint64_t page);

/**
 * hkv_regions() - the pool's memory regions, for memory registration
 * @pool: the pool
 * @r: receives up to @max regions (may be NULL when @max is 0)
 * @max: room in @r
 *
 * Return: the number of regions the pool has (0 for index-only pools); only
 * the first @max are written. -EINVAL, -ECHILD (fork() above).
 */
HKV_API int hkv_regions(const struct hkv_pool *pool, struct hkv_region *r, unsigned max);

/**
 * typedef hkv_evict_fn - called once per evicted unit
 * @ctx: the context given to hkv_set_evict_fn()
 * @unit: the unit's id
 * @ext: its extents, in the unit's page order
 * @n: number of extents
 *
 * Runs after the unit left the LRU and before its pages are freed. It runs
 * on the thread that evicts (hkv_evict() or an HKV_ALLOC_EVICT allocation),
 * under the pool's residency lock and with no lane lock held: residency
 * calls from other threads wait for it, plain allocations and frees do not.
 * Keep it short. It must not call into the residency part of the same pool:
 * hkv_unit_*(), hkv_evict(), hkv_stats(), hkv_check(), hkv_alloc() and
 * hkv_alloc_lanes() with HKV_ALLOC_EVICT return -EDEADLK from inside it,
 * and hkv_set_evict_fn() changes nothing; plain allocations and frees
 * work. Calls on other pools work (lock order between pools whose
 * callbacks call each other is the caller's).
 */
typedef void (*hkv_evict_fn)(void *ctx, uint64_t unit,
			     const struct hkv_extent *ext, unsigned n);

/**
 * hkv_unit_add() - make allocated pages a cache unit
 * @pool: the pool
 * @unit: caller-chosen id
 * @ext: the unit's pages, in unit page order
 * @n: number of extents
 *
 * The new unit is the most recently used.
 *
 * Concurrency: all hkv_unit_*() calls, hkv_evict() and HKV_ALLOC_EVICT
 * allocations may run at the same time from any threads (for example a
 * scheduler thread adds, touches and pins; transfer threads unpin on
 * completion); they serialize on one residency lock per pool. A unit that
 * is pinned when an eviction looks at it is never chosen, and a pin that
 * returns 0 protects the unit until the matching unpin.
 *
 * Every hkv_unit_*() call returns -EDEADLK from inside this pool's evict
 * callback and -ECHILD on a pool of the parent process (fork() above).
 *
 * Return: 0, or -EEXIST (id taken), -EINVAL (a page not allocated, already
 * in a unit, or named twice), -ENOMEM, -EDEADLK, -ECHILD.
 */
HKV_API int hkv_unit_add(struct hkv_pool *pool, uint64_t unit,
			 const struct hkv_extent *ext, unsigned n);

/**
 * hkv_unit_touch() - mark a unit most recently used
 * @pool: the pool
 * @unit: the unit's id
 *
 * Return: 0, or -EINVAL (NULL pool), -ENOENT, -EDEADLK, -ECHILD.
 */
HKV_API int hkv_unit_touch(struct hkv_pool *pool, uint64_t unit);

/**
 * hkv_unit_pin() - take a pin (in use, or a transfer in flight)
 * @pool: the pool
 * @unit: the unit's id
 *
 * Return: 0, or -EINVAL (NULL pool), -ENOENT, -EOVERFLOW, -EDEADLK, -ECHILD.
 */
HKV_API int hkv_unit_pin(struct hkv_pool *pool, uint64_t unit);

/**
 * hkv_unit_unpin() - drop a pin
 * @pool: the pool
 * @unit: the unit's id
 *
 * Return: 0, or -ENOENT, -EINVAL (not pinned), -EDEADLK, -ECHILD.
 */
HKV_API int hkv_unit_unpin(struct hkv_pool *pool, uint64_t unit);

/**
 * hkv_unit_split() - split a unit at a page boundary
 * @pool: the pool
 * @unit: the unit's id
 * @at_page: pages (in unit page order) that stay in @unit, 0 < at < size
 * @new_unit: id of the unit that takes the rest
 *
 * Both halves keep the pin count and the LRU position, so a split while a
 * transfer is in flight leaves both halves protected; each half then needs
 * its own unpins.
 *
 * Return: 0, or -ENOENT, -EEXIST (@new_unit taken), -EINVAL (@at_page),
 * -ENOMEM, -EDEADLK, -ECHILD.
 */
HKV_API int hkv_unit_split(struct hkv_pool *pool, uint64_t unit, uint64_t at_page,
			   uint64_t new_unit);

/**
 * hkv_unit_remove() - release a unit
 * @pool: the pool
 * @unit: the unit's id
 * @flags: HKV_UNIT_FREE frees its pages too, else they stay allocated
 *
 * Return: 0, or -ENOENT, -EBUSY (pinned), -EINVAL (unknown @flags), -ENOMEM
 * (HKV_UNIT_FREE: the free-extent index could not grow; nothing changed),
 * -EDEADLK, -ECHILD.
 */
HKV_API int hkv_unit_remove(struct hkv_pool *pool, uint64_t unit, unsigned flags);

/**
 * hkv_set_evict_fn() - set the eviction callback
 * @pool: the pool
 * @fn: callback, or NULL
 * @ctx: passed to @fn
 *
 * Waits for an eviction running on another thread, so the old @ctx may be
 * freed once this returns. From inside the evict callback, and in a fork()
 * child, nothing changes.
 */
HKV_API void hkv_set_evict_fn(struct hkv_pool *pool, hkv_evict_fn fn, void *ctx);

/**
 * hkv_evict() - evict cold unpinned units until enough pages are free
 * @pool: the pool
 * @target_free: absolute free-page count to reach
 *
 * Coldest unpinned units first; each is passed to the evict callback. May
 * run concurrently with pins and unpins (see hkv_unit_add()). An eviction
 * changes all or nothing: when the free-extent index cannot grow for its
 * free, the unit stays (the run stops there). Should the index fail to grow
 * only after the callback ran, the unit is gone but its pages stay marked
 * until the next eviction run frees them (hkv_check() counts them; they are
 * never lost).
 *
 * Return: pages freed (>= 0; short when nothing more is evictable, or on
 * -ENOMEM from the index), or -EINVAL for a NULL @pool, -EDEADLK from
 * inside this pool's evict callback, -ECHILD (fork() above).
 */
HKV_API int64_t hkv_evict(struct hkv_pool *pool, uint64_t target_free);

/**
 * hkv_free_slots() - legacy flat view of the free pages
 * @pool: the pool
 * @slots: receives the sorted free page ids
 * @n: receives their number
 *
 * Materialized lazily and cached until the next mutation; the array is
 * valid until then.
 *
 * Return: 0, or -EINVAL, -ENOMEM, -ECHILD (fork() above).
 */
HKV_API int hkv_free_slots(struct hkv_pool *pool, const uint64_t **slots, uint64_t *n);

/**
 * hkv_strerror() - describe an error code of this library
 * @err: a negative (or positive) errno; any int
 *
 * The codes the library returns itself get text that says what they mean
 * here; any other errno (passed through from a system call, such as -EACCES
 * from a sysfs read) gets the system's description, and a value that is no
 * errno "unknown error".
 *
 * Return: a static string.
 */
HKV_API const char *hkv_strerror(int err);

/**
 * hkv_backing_name() - the name of a backing, as HUGEKV_BACKING spells it
 * @backing: HKV_BACKING_*
 *
 * Return: "auto", "1g", "2m", "thp", "4k" or "none"; "?" for any other
 * value. A static string.
 */
HKV_API const char *hkv_backing_name(int backing);

/**
 * hkv_backing_parse() - the backing a name spells
 * @name: "auto", "1g", "2m", "thp", "4k" or "none", any case
 * @backing: receives the HKV_BACKING_* value; unchanged on failure
 *
 * Return: 0, or -EINVAL for NULL or an unknown name.
 */
HKV_API int hkv_backing_parse(const char *name, int *backing);

/**
 * typedef hkv_log_fn - receives the library's messages
 * @ctx: the context given to hkv_set_log_fn()
 * @level: 0 error, 1 warning, 2 info, 3 debug
 * @msg: one line, no newline
 *
 * Runs with no lock of the library held, on the thread that logs, and so
 * possibly on several threads at once: it may call any hugekv function, on
 * any pool. A message logged while a call
 * holds a pool's locks is delivered when that call releases them, before it
 * returns. Messages logged on this thread while the callback runs (by the
 * calls it makes) go to stderr (filtered by HUGEKV_LOG), not to the
 * callback again.
 */
typedef void (*hkv_log_fn)(void *ctx, int level, const char *msg);

/**
 * hkv_set_log_fn() - route the library's messages (fallbacks, bad options)
 * @fn: callback, or NULL for the default (stderr, level from HUGEKV_LOG)
 * @ctx: passed to @fn
 *
 * Waits for the old callback to return on other threads, so the old @ctx
 * may be freed afterwards. Called from inside the callback, it takes effect
 * when the callback returns.
 */
HKV_API void hkv_set_log_fn(hkv_log_fn fn, void *ctx);

/**
 * hkv_pool_label() - the label a pool was created with
 * @pool: the pool
 *
 * Return: the pool's own copy of &hkv_pool_opts.label, "" if it has none
 * (or @pool is NULL); valid until hkv_pool_destroy().
 */
HKV_API const char *hkv_pool_label(const struct hkv_pool *pool);

#define HKV_PAGE_NAME_MAX	128	/* bytes of a named pool's name in a page */
#define HKV_PAGE_XFER_PEERS	8	/* peers a stats page reports */
#define HKV_PAGE_XFER_LAT	12	/* transfer latency buckets */
#define HKV_PAGE_STALE		(1u << 0)	/* hkv_page.flags: writer is gone */

/**
 * struct hkv_page_peer - one peer's transfers in a stats page
 * @peer: the peer's id (hkv_xfer_peer_id())
 * @transfers: transfers completed with it (either result)
 * @failures: those that ended with an error
 * @bytes: bytes moved by the successful ones
 */
struct hkv_page_peer {
	uint64_t peer, transfers, failures, bytes;
};

/**
 * struct hkv_page_grants - the grants one peer holds on the pool
 * @peer: the peer's id (as its struct hkv_page_peer)
 * @grants: grants given to it
 * @active: grants it holds now
 * @pages: pages those name
 * @bytes: their bytes
 * @refused: its grant requests refused, for any reason
 * @refused_limit: of those, for the grant state limits (-ENOBUFS)
 * @refused_busy: because it held max_grants already (-EBUSY)
 * @expired: its grants that passed their deadline
 */
struct hkv_page_grants {
	uint64_t peer, grants, active, pages, bytes;
	uint64_t refused, refused_limit, refused_busy, expired;
};

/**
 * struct hkv_page_xfer - the transfer figures a stats page carries
 * @sz: sizeof(struct hkv_page_xfer)
 * @endpoints: transfer endpoints that publish into the page (0: none)
 * @transfers: transfers completed (either result)
 * @failures: transfers that ended with an error
 * @timeouts: of those, timed out
 * @refused: of those, refused before anything moved
 * @ops: transfer operations issued
 * @bytes: bytes moved by successful transfers
 * @pages: pages moved by successful transfers
 * @peer_failures: connections that failed
 * @lat_le_ns: upper bounds of the latency buckets, ascending
 * @lat_count: per bound of @lat_le_ns, the successful transfers with a
 *	latency up to it (cumulative, as Prometheus buckets are)
 * @lat_n: successful transfers timed
 * @lat_sum_ns: their latencies summed (each to within 1/32, as recorded)
 * @npeers: entries of @peer (and of @peer_grants) written
 * @peer: per peer, the first HKV_PAGE_XFER_PEERS
 *
 * The pool as a transfer target (the grants its endpoint gives peers),
 * past HKV_PAGE_XFER_SZ0 (a reader checks @sz):
 * @grants: grants given
 * @grants_active: grants held by peers now
 * @grant_pages: pages those name
 * @grant_bytes: their bytes
 * @grant_mem: bytes of grant state held now
 * @grants_refused: grant requests refused, for any reason
 * @grants_refused_limit: of those, for the grant state limits (-ENOBUFS)
 * @grants_refused_busy: for the grants one peer may hold (-EBUSY)
 * @grants_expired: grants that passed their deadline (the peer was closed)
 * @auth_failures: connections that failed to authenticate
 * @peers_rejected: connections rejected at the peer limit
 * @peer_grants: per peer, at the index of its @peer entry
 *
 * The endpoint's single copy (cross-memory attach between processes of one
 * host, as struct hkv_xfer_stats counts it), past HKV_PAGE_XFER_SZ1 (a
 * reader checks @sz):
 * @cma_out: peers that copy for this endpoint's transfers now
 * @cma_in: peers this endpoint copies for now
 * @cma_refused: single-copy offers it refused (those peers stay two-sided)
 * @cma_calls: process_vm_readv/writev calls it made as a target
 * @cma_runs: runs (operations) it copied
 * @cma_bytes: bytes it copied
 * @cma_faults: single-copy requests that failed (a buffer not mapped, the
 *	peer gone, past the deadline)
 */
struct hkv_page_xfer {
	size_t sz;
	uint64_t endpoints, transfers, failures, timeouts, refused;
	uint64_t ops, bytes, pages, peer_failures;
	uint64_t lat_le_ns[HKV_PAGE_XFER_LAT];
	uint64_t lat_count[HKV_PAGE_XFER_LAT];
	uint64_t lat_n, lat_sum_ns;
	unsigned npeers;
	struct hkv_page_peer peer[HKV_PAGE_XFER_PEERS];
	uint64_t grants, grants_active, grant_pages, grant_bytes, grant_mem;
	uint64_t grants_refused, grants_refused_limit, grants_refused_busy;
	uint64_t grants_expired, auth_failures, peers_rejected;
	struct hkv_page_grants peer_grants[HKV_PAGE_XFER_PEERS];
	uint64_t cma_out, cma_in, cma_refused, cma_calls, cma_runs, cma_bytes, cma_faults;
};

/* the first layout of struct hkv_page_xfer: up to @peer */
#define HKV_PAGE_XFER_SZ0	offsetof(struct hkv_page_xfer, grants)
/* the second: up to @peer_grants */
#define HKV_PAGE_XFER_SZ1	offsetof(struct hkv_page_xfer, cma_out)

/**
 * struct hkv_page - a pool's stats page as another process reads it
 * @sz: sizeof(struct hkv_page), set by the caller
 * @name: the named pool's name, "" for a pool private to its process
 * @label: the pool's label, "" if none
 * @pid: the process that publishes the page
 * @flags: HKV_PAGE_STALE when that process is gone (or its pid now names
 *	another process): the figures are its last
 * @pool_id: the pool's id in that process (hkv_pool_id())
 * @pid_start: the process's start time (clock ticks after boot, as
 *	/proc/PID/stat gives it): a pid and this name one process
 * @created_ns: when the pool was created (CLOCK_REALTIME)
 * @published_ns: when the figures were published (CLOCK_REALTIME)
 * @interval_ns: the publishing interval
 * @publishes: times the page was published
 * @free_room_low: the pool's low watermark, a fraction of its pages
 * @free_room_high: its high watermark
 * @stats: the pool's hkv_stats() at @published_ns
 * @xfer: its transfer figures
 */
struct hkv_page {
	size_t sz;
	char name[HKV_PAGE_NAME_MAX];
	char label[HKV_LABEL_MAX];
	int pid;
	unsigned flags;
	uint64_t pool_id, pid_start;
	uint64_t created_ns, published_ns, interval_ns, publishes;
	double free_room_low, free_room_high;
	struct hkv_stats stats;
	struct hkv_page_xfer xfer;
};

/**
 * hkv_page_dir() - the directory where pools publish their stats pages
 * @buf: receives the path
 * @len: room in @buf
 *
 * HUGEKV_RUNTIME_DIR if set; else /run/hugekv for root, else
 * $XDG_RUNTIME_DIR/hugekv, else /tmp/hugekv-UID. Each pool publishes one
 * file there, mode 0600, removed by hkv_pool_destroy().
 *
 * Return: 0, -EINVAL (NULL), or -ENAMETOOLONG.
 */
HKV_API int hkv_page_dir(char *buf, size_t len);

/**
 * hkv_page_read() - read a consistent snapshot of a stats page
 * @path: the page's file (in hkv_page_dir())
 * @out: receives it; the caller sets @out->sz (a smaller, older layout,
 *	down to the one whose transfer figures end at their peers, receives
 *	the fields it has); a page written by an older library, or whose
 *	transfer figures came from an older caller of hkv_page_set_xfer(),
 *	gives @out->xfer.sz of that layout and 0 in the fields past it
 *
 * Needs read access to the file only: the publishing process is never
 * entered. The figures are those of one publication (a sequence count
 * around each). A page whose process is gone is read with HKV_PAGE_STALE.
 *
 * Return: 0, or -EINVAL (@out->sz too small), -ENOENT, -EACCES,
 * -EPROTO (not a stats page, or of another layout), -EAGAIN (the
 * writer kept rewriting it while it was read).
 */
HKV_API int hkv_page_read(const char *path, struct hkv_page *out);

/**
 * hkv_stats_publish() - publish a pool's stats page now
 * @pool: the pool
 *
 * Pools publish every HUGEKV_STATS_INTERVAL_MS milliseconds (default 1000;
 * 0: no page) from a thread of their own, and at create; this publishes at
 * once (at a quiescent point, say). Never call it from the evict callback.
 *
 * Return: 0, -EINVAL, -ENOENT (the pool has no page), -ECHILD, -EDEADLK.
 */
HKV_API int hkv_stats_publish(struct hkv_pool *pool);

/**
 * hkv_page_set_xfer() - hand a pool's stats page its transfer figures
 * @pool: the pool
 * @x: the figures (@x->sz set, at least HKV_PAGE_XFER_SZ0: fields past an
 *	older caller's @x->sz read 0, and a reader's xfer.sz says where they
 *	end); published with the next publication
 *
 * Called by the transfer library for the pool its endpoint serves.
 *
 * Return: 0, -EINVAL, or -ENOENT (the pool has no page).
 */
HKV_API int hkv_page_set_xfer(struct hkv_pool *pool, const struct hkv_page_xfer *x);

/**
 * hkv_log_message() - log a message of a library built on this one
 * @level: 0 error, 1 warning, 2 info, 3 debug
 * @msg: one line, no newline (it goes out as it is)
 *
 * Delivered as the library's own messages are: to the hkv_set_log_fn()
 * callback, else to stderr filtered by HUGEKV_LOG. libhugekv-xfer logs
 * through it.
 */
HKV_API void hkv_log_message(int level, const char *msg);

/* ---- named pools: one pool for many processes, across restarts ------- */

/* hkv_pool_unlink_flags(): remove the files even while processes are attached */
#define HKV_UNLINK_FORCE	(1u << 0)
/* the longest name of a named pool (letters, digits, '.', '_', '-'; not
 * starting with '.') */
#define HKV_NAME_MAX		63
/* processes that may be attached to one named pool at a time */
#define HKV_NAMED_SLOTS		64

/**
 * hkv_pool_attach() - attach a named pool another process (or this one
 * before a restart) created
 * @name: the pool's name (hkv_pool_opts.name at create)
 * @flags: 0 (no flags are defined yet)
 * @out: receives the pool
 *
 * Maps the pool's bookkeeping file and memory file at the addresses the
 * creator recorded, so every pointer inside them is valid here too, and
 * takes one of HKV_NAMED_SLOTS process slots. Every call works on the
 * result; hkv_pool_destroy() detaches (the pool, its units and their bytes
 * stay). A slot of a process that died is freed, and whatever it held
 * outside units given back, by the next caller that finds it.
 *
 * Return: 0, or -EINVAL (bad @name or @flags), -ENOENT (no such pool),
 * -EPERM (file of another owner, group- or world-writable, or not a
 * regular file: a symlink is refused), -EPROTO (a layout this library
 * does not read: another version of hugekv made it), -EAGAIN (its creation
 * has not finished), -EADDRINUSE (this process already uses the pool's
 * address range: attached already, or another mapping), -EUSERS (every
 * slot taken), -ENOMEM.
 */
HKV_API int hkv_pool_attach(const char *name, unsigned flags, struct hkv_pool **out);

/**
 * hkv_pool_unlink() - remove a named pool's files
 * @name: the pool's name
 *
 * The pool and its units are gone once every attached process detached.
 *
 * Return: 0, or -EINVAL (bad @name), -ENOENT, -EPERM (another owner),
 * -EBUSY (a live process is attached: see hkv_pool_unlink_flags()).
 */
HKV_API int hkv_pool_unlink(const char *name);

/**
 * hkv_pool_unlink_flags() - hkv_pool_unlink() with flags
 * @name: the pool's name
 * @flags: 0, or HKV_UNLINK_FORCE to remove the files while processes are
 *	attached (they keep their mappings until they detach)
 *
 * Return: as hkv_pool_unlink(), or -EINVAL for unknown @flags.
 */
HKV_API int hkv_pool_unlink_flags(const char *name, unsigned flags);

/**
 * struct hkv_named_info - a named pool as hkv_pool_info() sees it
 * @sz: sizeof(struct hkv_named_info), set by the caller
 * @name: the pool's name, NUL-terminated
 * @npages: pages
 * @page_bytes: bytes per page (0: index-only)
 * @nlanes: lanes
 * @backing: HKV_BACKING_* of the memory file (HKV_BACKING_NONE: index-only)
 * @hugepage_bytes: page size of the memory file (0: index-only)
 * @meta_bytes: size of the bookkeeping file (sparse: only what is used
 *	takes memory)
 * @layout_version: layout of the files
 * @nattached: processes attached now (live ones: a dead process's slot is
 *	counted out)
 * @pids: their process ids, the first @nattached entries
 * @recoveries: times a caller found the pool's lock held by a dead process
 *	and restored the pool
 * @reclaimed_pages: pages that dead processes held outside units, given back
 * @dropped_pins: pins of dead processes dropped
 * @dead_slots: slots of dead processes freed
 * @created_ns: CLOCK_REALTIME of the creation
 */
struct hkv_named_info {
	size_t sz;
	char name[HKV_NAME_MAX + 1];
	uint64_t npages, page_bytes;
	unsigned nlanes;
	int backing;
	uint64_t hugepage_bytes, meta_bytes;
	unsigned layout_version;
	unsigned nattached;
	int pids[HKV_NAMED_SLOTS];
	uint64_t recoveries, reclaimed_pages, dropped_pins, dead_slots;
	uint64_t created_ns;
};

/**
 * hkv_pool_info() - what a named pool is and who is attached
 * @pool: a named pool (created or attached)
 * @info: receives the information; @info->sz set by the caller
 *
 * Return: 0, or -EINVAL (NULL, too small @info->sz), -EOPNOTSUPP (a pool
 * without a name), -ECHILD (fork() above).
 */
HKV_API int hkv_pool_info(const struct hkv_pool *pool, struct hkv_named_info *info);

/**
 * hkv_unit_list() - the ids of the pool's units
 * @pool: the pool
 * @ids: receives up to @max ids, in no particular order (may be NULL when
 *	@max is 0)
 * @max: room in @ids
 *
 * After a restart, the engine attaches, lists its units (the ids it chose:
 * block hashes) and serves hits at once.
 *
 * Return: the number of units the pool holds (only the first @max are
 * written), or -EINVAL, -EDEADLK (inside the evict callback), -ECHILD.
 */
HKV_API int64_t hkv_unit_list(const struct hkv_pool *pool, uint64_t *ids, uint64_t max);

/**
 * hkv_unit_extents() - the extents of one unit
 * @pool: the pool
 * @unit: the unit's id
 * @ext: receives up to @max extents, in the unit's page order (may be NULL
 *	when @max is 0)
 * @max: room in @ext
 *
 * Return: the number of extents of the unit (only the first @max are
 * written), or -EINVAL, -ENOENT (no such unit), -EDEADLK, -ECHILD.
 */
HKV_API int hkv_unit_extents(const struct hkv_pool *pool, uint64_t unit,
			     struct hkv_extent *ext, unsigned max);

/**
 * hkv_unit_seal() - record a checksum of a unit's bytes
 * @pool: a pool with memory
 * @unit: the unit's id
 *
 * XXH3 (64 bits) of the unit's pages in its page order, kept with the unit
 * (in a named pool's file: it survives restarts). Write the bytes first;
 * a split clears the checksum of both halves. Runs under the pool's
 * residency lock for the time of the hash.
 *
 * Return: 0, or -EINVAL (NULL, an index-only pool), -ENOENT, -EDEADLK,
 * -ECHILD.
 */
HKV_API int hkv_unit_seal(struct hkv_pool *pool, uint64_t unit);

/**
 * hkv_unit_verify() - compare a unit's bytes with its recorded checksum
 * @pool: a pool with memory
 * @unit: the unit's id
 *
 * What an engine calls before it serves a unit it found after a restart.
 *
 * Return: 0 (the bytes are the ones sealed), -EBADMSG (they differ; logged),
 * -ENODATA (no checksum recorded), -EINVAL, -ENOENT, -EDEADLK, -ECHILD.
 */
HKV_API int hkv_unit_verify(struct hkv_pool *pool, uint64_t unit);

#ifdef __cplusplus
}
#endif

#endif /* HUGEKV_H */
